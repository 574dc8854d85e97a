"""``spark.read.format("mqcodec")``: captures in, the same rows as the local
pipeline out.

    from mqcodec.spark.datasource import register
    register(spark)
    mq = spark.read.format("mqcodec").load("captures/*.pcap")              # mq_messages
    msmq = spark.read.format("mqcodec").option("table", "msmq_packets").load("captures/*.pcap")
    params = spark.read.format("mqcodec").option("table", "pcf_parameters").load("captures/*.pcap")

A partition per capture file, converted by :class:`mqcodec.pcap2parquet.Converter`
on an executor (the compiled batch decoders when built there). A capture is
not split further: pcap and pcapng records cannot be found from an arbitrary
byte offset without reading from the start, and TCP streams cross any split
point, so a large capture is one task; split it beforehand
(``editcap -c 1000000``) to spread it over more tasks.

Options: ``table`` (one of :data:`mqcodec.tables.TABLES`, default
``mq_messages``; or ``captures``: one row per capture with its report as
JSON, for the job summary),
``mq_ports`` / ``msmq_ports`` (comma-separated), ``raw`` (``true`` keeps every
message's bytes), ``chunk`` (messages per Arrow batch). ``message_key`` is
``(file index << 40) | n`` with files in the order given (each glob sorted), exactly as the
local engine numbers the same inputs.
"""
from __future__ import annotations

import glob
import json
import os

import pyarrow as pa

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

__all__ = ["MQCodecDataSource", "register", "expand_paths"]

from mqcodec.tables import TABLES as _DATA_TABLES

#: the tables of the main job, and the per-capture reports
TABLES = _DATA_TABLES + ("captures",)
DEFAULT_TABLE = "mq_messages"


def expand_paths(spec) -> list[str]:
    """Comma-separated paths or globs -> sorted existing files."""
    items = spec if isinstance(spec, (list, tuple)) else str(spec).split(",")
    out: list[str] = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        hits = sorted(glob.glob(item)) if any(c in item for c in "*?[") else [item]
        out.extend(h for h in hits if os.path.isfile(h))
    return out


#: the ``captures`` table: the report of each capture (mqcodec.pcap2parquet.Converter.report)
CAPTURES_SCHEMA = pa.schema([pa.field("index", pa.int64(), nullable=False),
                             pa.field("capture", pa.string(), nullable=False),
                             pa.field("report", pa.string(), nullable=False)])


def _table_schema(table: str) -> pa.Schema:
    from mqcodec.tables import table_schema

    return CAPTURES_SCHEMA if table == "captures" else table_schema(table)


class _CaptureReader(DataSourceReader):
    def __init__(self, files: list[str], options: dict, schema):
        from .schema import spark_arrow_schema

        self.files = files
        self.options = options
        # what Spark expects back: unsigned integers widened, timestamps in
        # microseconds (Spark's precision: ``ts`` loses its nanoseconds here)
        self.target = spark_arrow_schema(schema)

    def partitions(self):
        return [InputPartition((i, path)) for i, path in enumerate(self.files)]

    def read(self, partition):
        from mqcodec.pcap2parquet import ConvertOptions, Converter
        from mqcodec.tables import TableCollector

        index, path = partition.value
        opts = self.options
        table = opts.get("table", DEFAULT_TABLE)
        ports = lambda key, default: tuple(int(p) for p in str(opts.get(key, default)).split(",") if p)  # noqa: E731
        options = ConvertOptions(mq_ports=ports("mq_ports", "1414"), msmq_ports=ports("msmq_ports", "1801"),
                                 raw=str(opts.get("raw", "false")).lower() == "true",
                                 chunk_messages=int(opts.get("chunk", "20000")))
        out = TableCollector()
        conv = Converter(lambda name, t: out(name, t) if name == table else None, options)
        from mqcodec.errors import DecodeError

        try:
            conv.add_capture(path, index=index)
        except (DecodeError, OSError) as exc:  # as the local engine: reported, the job goes on
            conv.not_read(path, exc, index=index)
        if table == "captures":
            report = conv.report(top=None)  # all failure reasons: the driver keeps the top ten
            batch = pa.RecordBatch.from_pylist(
                [{"index": index, "capture": os.path.basename(path),
                  "report": json.dumps(report, sort_keys=True, default=str)}], schema=CAPTURES_SCHEMA)
            yield batch
            return
        target = self.target
        for t in out.parts.get(table, []):
            for b in t.cast(target, safe=False).to_batches():
                yield b


class MQCodecDataSource(DataSource):
    """Python Data Source "mqcodec" (PySpark 4)."""

    @classmethod
    def name(cls) -> str:
        return "mqcodec"

    def schema(self):
        from .schema import to_spark_schema

        table = self.options.get("table", DEFAULT_TABLE)
        if table not in TABLES:
            raise ValueError("option table must be one of %s, not %r" % (", ".join(TABLES), table))
        return to_spark_schema(_table_schema(table))

    def reader(self, schema):
        spec = self.options.get("path") or self.options.get("paths")
        if not spec:
            raise ValueError("mqcodec data source: give the captures with load(path) (globs and commas allowed)")
        files = expand_paths(spec)
        if not files:
            raise FileNotFoundError("mqcodec data source: no capture file matches %r" % (spec,))
        return _CaptureReader(files, dict(self.options), schema)


def register(spark) -> None:
    spark.dataSource.register(MQCodecDataSource)
