"""``spark.read.format("mqcodec")``: captures in, the same rows as the local
pipeline out.

    from mqcodec.spark.datasource import register
    register(spark)
    mq = spark.read.format("mqcodec").load("captures/*.pcap")              # mq_messages
    msmq = spark.read.format("mqcodec").option("table", "msmq_packets").load("file:///data/caps")
    params = spark.read.format("mqcodec").option("table", "pcf_parameters").load(["a.pcap", "hdfs://nn/b.pcap"])
    every = spark.read.format("mqcodec").option("table", "all").load("captures/*.pcap")

A partition per capture file, converted by :class:`mqcodec.convert.Converter`
on an executor (the compiled batch decoders when built there).  The rows are
yielded while the capture is converted: the converter runs in a thread of the
Python worker and hands each chunk of rows over a queue of :data:`QUEUE_CHUNKS`
chunks, so a task holds a few chunks, never a capture's output.

Inputs (:mod:`mqcodec.spark.storage`): paths, ``file://`` and other URIs
(``hdfs://``, ``s3a://``, ``gs://``... read with pyarrow.fs), folders and globs
expanded on the filesystem they name, as a list or one comma-separated string;
relative paths are resolved on the driver.

Options: ``table`` -- one of :data:`mqcodec.convert.tables.TABLES` (default
``mq_messages``), ``captures`` (one row per capture with its report as JSON,
for the job summary), or ``all``: every table and the reports from one
conversion of each capture, one row per source row, a ``table`` column
naming its table and one struct column per table (``mq_messages``,
``msmq_packets``, ..., ``captures``), null but the row's own (the Spark engine
writes each table from it: ``df.where(df.table == t).select(t + ".*")``);
and every field of :class:`mqcodec.convert.ConvertOptions` by its name, as
a string: ``mq_ports`` / ``msmq_ports`` (comma-separated), ``raw`` (``true``
keeps every message's bytes), ``chunk_messages`` (or ``chunk``: messages per
Arrow batch), ``chunk_bytes``, ``capture_impl``, ``buffer_budget``,
``max_connections``, ``max_closed``, ``max_reassembly_bytes``,
``max_reassembly_segments``, ``detect_by_content``, ``tables``, ``columns``
(``"table.column"`` names, comma-separated: the schema has the chosen columns of the table
read); or all of them at once as
``options`` (``ConvertOptions.to_text()``: what the Spark engine passes, the
options the local engine takes, unchanged). ``message_key`` is
``file index << 49 | frame << 17 | rank`` (docs/tables.md "Keys") with files in the order
given (each glob sorted), exactly as the local engine keys the same inputs.
"""
from __future__ import annotations

import json
import queue
import threading
from typing import Any, Iterator

import pyarrow as pa

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from mqcodec.convert.tables import TABLES as _DATA_TABLES

from .storage import display_name, expand, input_source

__all__ = ["MQCodecDataSource", "register", "expand_paths", "TABLES", "ALL", "wide_schema", "wide_batches",
           "convert_capture", "produced_in_thread"]

#: the tables of the main job, and the per-capture reports
TABLES = _DATA_TABLES + ("captures",)
DEFAULT_TABLE = "mq_messages"
#: option ``table`` for every table at once (:func:`wide_schema`)
ALL = "all"
#: the name of the column naming a row's table in the ``all`` rows
TAG = "table"
#: chunks of rows converted ahead of the consumer (bounds a task's memory)
QUEUE_CHUNKS = 2


def expand_paths(spec) -> list[str]:
    """Paths, URIs, folders, globs (a list or comma-separated) -> capture files
    (:func:`mqcodec.spark.storage.expand`)."""
    return expand(spec)


#: the ``captures`` table: the report of each capture (mqcodec.convert.Converter.report)
CAPTURES_SCHEMA = pa.schema([pa.field("index", pa.int64(), nullable=False),
                             pa.field("capture", pa.string(), nullable=False),
                             pa.field("report", pa.string(), nullable=False)])


def _table_schema(table: str, columns=()) -> pa.Schema:
    """The schema of option ``table`` with the column selection ``columns``
    (:attr:`mqcodec.convert.ConvertOptions.columns`)."""
    from mqcodec.convert.tables import output_schema

    if table == ALL:
        return wide_schema(columns)
    return CAPTURES_SCHEMA if table == "captures" else output_schema(table, columns)


def wide_schema(columns=()) -> pa.Schema:
    """The ``all`` rows: ``table`` (which table the row is of), then one
    nullable struct column per table of :data:`TABLES` holding that table's
    row (its fields as in the table's schema, with the column selection ``columns``)."""
    fields = [pa.field(TAG, pa.string(), nullable=False)]
    fields += [pa.field(t, pa.struct(list(_table_schema(t, columns)))) for t in TABLES]
    return pa.schema(fields)


def _convert_options(opts: dict):
    """The conversion options of a read: ``options`` (``ConvertOptions.to_text``,
    what ``mqcodec.spark.pipeline`` passes), then any field of
    :class:`~mqcodec.convert.ConvertOptions` given as an option of its
    own (``mq_ports``, ``chunk_bytes``, ...; ``chunk`` is ``chunk_messages``)."""
    import dataclasses

    from mqcodec.convert import ConvertOptions

    base = ConvertOptions.from_text(opts["options"]) if opts.get("options") else None
    names = {f.name for f in dataclasses.fields(ConvertOptions)}
    named = {k: v for k, v in opts.items() if k in names}
    if "chunk" in opts:
        named.setdefault("chunk_messages", opts["chunk"])
    return ConvertOptions.from_strings(named, base)


class _Stopped(Exception):
    """The consumer went away: the producing thread ends."""


_DONE = object()


def produced_in_thread(produce, name: str) -> Iterator[Any]:
    """Run ``produce(put)`` in a thread and yield what it puts, in order; at
    most :data:`QUEUE_CHUNKS` items wait for the consumer (so memory holds a
    few chunks, never a capture's output).  An error of ``produce`` is raised
    here; closing the generator stops the thread (its next ``put`` raises)."""
    q: queue.Queue = queue.Queue(maxsize=QUEUE_CHUNKS)
    stop = threading.Event()

    def put(item) -> None:
        while True:
            if stop.is_set():
                raise _Stopped()
            try:
                q.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def run() -> None:
        try:
            produce(put)
            put(_DONE)
        except _Stopped:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            try:
                put(exc)
            except _Stopped:
                pass

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


def convert_capture(index: int, uri: str, options, tables) -> Iterator[tuple[str, Any]]:
    """Convert one capture, yielding ``(table, pa.Table)`` for every chunk of
    rows of a table in ``tables`` as the converter produces it, then
    ``("captures", report)`` (the capture's report, all failure reasons).

    The converter runs in a thread (:func:`produced_in_thread`).  An error of
    the converter (other than the capture not being readable, which is
    reported as the local engine reports it) is raised here; closing the
    generator stops the thread."""
    from mqcodec.errors import DecodeError
    from mqcodec.convert import Converter

    wanted = frozenset(tables)

    def produce(put) -> None:
        # options.threads > 1: chunks rendered on a thread of their own while this one reads
        # (Spark's writer writes: no writer threads here)
        conv = Converter(lambda name, table: put((name, table)) if name in wanted else None, options,
                         render_thread=(options.threads or 1) > 1)
        name = display_name(uri)
        try:
            try:
                with input_source(uri) as source:
                    conv.add_capture(source, name=name, index=index)
                conv.drain()
            except (DecodeError, OSError) as exc:  # as the local engine: reported, the job goes on
                if conv.rendering_failed(exc):
                    raise
                conv.not_read(name, exc, index=index)
        finally:
            conv.drain_quietly()
        put(("captures", conv.report(top=None)))

    return produced_in_thread(produce, "mqcodec-convert-%d" % index)


class _CaptureReader(DataSourceReader):
    def __init__(self, files: list[str], options: dict, schema):
        from .schema import spark_arrow_schema

        self.files = files
        self.options = options
        _convert_options(options)   # a value that is not its field's type fails here, on the driver
        self.table = options.get("table", DEFAULT_TABLE)
        # what Spark expects back: unsigned integers widened, timestamps in
        # microseconds (Spark's precision: ``ts`` loses its nanoseconds here)
        self.target = spark_arrow_schema(schema)

    def partitions(self):
        return [InputPartition((i, uri)) for i, uri in enumerate(self.files)]

    def read(self, partition):
        index, uri = partition.value
        table = self.table
        wanted = TABLES if table == ALL else (table,)
        target = self.target
        options = _convert_options(self.options)
        if table in options.tables:   # one table read: only it is made (its rows are the same), with its columns
            import dataclasses

            options = dataclasses.replace(options, tables=(table,),
                                          columns=tuple(c for c in options.columns if c.startswith(table + ".")))
        for name, part in convert_capture(index, uri, options, wanted):
            if name == "captures":
                if name not in wanted:
                    continue
                part = pa.Table.from_pylist(
                    [{"index": index, "capture": display_name(uri),
                      "report": json.dumps(part, sort_keys=True, default=str)}], schema=CAPTURES_SCHEMA)
            if table == ALL:
                for b in wide_batches(name, part, target):
                    yield b
            else:
                for b in part.cast(target, safe=False).to_batches():
                    yield b


def wide_batches(name: str, part: pa.Table, target: pa.Schema):
    """``part`` (rows of table ``name``) as record batches of the ``all`` rows."""
    own = target.field(name).type
    part = part.cast(pa.schema(list(own)), safe=False)
    for b in part.to_batches():
        n = b.num_rows
        if not n:
            continue
        columns = []
        for f in target:
            if f.name == TAG:
                columns.append(pa.array([name] * n, f.type))
            elif f.name == name:
                columns.append(pa.StructArray.from_arrays(b.columns, fields=list(own)))
            else:
                columns.append(pa.nulls(n, f.type))
        yield pa.RecordBatch.from_arrays(columns, schema=target)


class MQCodecDataSource(DataSource):
    """Python Data Source "mqcodec" (PySpark 4)."""

    @classmethod
    def name(cls) -> str:
        return "mqcodec"

    def schema(self):
        from .schema import to_spark_schema

        table = self.options.get("table", DEFAULT_TABLE)
        if table not in TABLES and table != ALL:
            raise ValueError("option table must be one of %s, not %r" % (", ".join(TABLES + (ALL,)), table))
        return to_spark_schema(_table_schema(table, _convert_options(dict(self.options)).columns))

    def reader(self, schema):
        spec = self.options.get("path") or self.options.get("paths")
        if not spec:
            raise ValueError("mqcodec data source: give the captures with load(path) (paths, URIs, folders, "
                             "globs; a list or commas)")
        if isinstance(spec, str) and spec.lstrip().startswith("["):  # load([a, b]): Spark passes a JSON list
            spec = json.loads(spec)
        files = expand_paths(spec)
        if not files:
            raise FileNotFoundError("mqcodec data source: no capture file matches %r" % (spec,))
        return _CaptureReader(files, dict(self.options), schema)


def register(spark) -> None:
    spark.dataSource.register(MQCodecDataSource)
