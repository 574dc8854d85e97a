"""Where the tables go: a Parquet dataset per table (:class:`DatasetSink`),
written on background threads (:class:`BackgroundSink`), or kept in memory
(:class:`TableCollector`); :func:`read_table` reads one back."""
from __future__ import annotations

import os
from collections import Counter
from typing import Any, Iterable, Optional, Sequence

import pyarrow as pa

from .options import COMPRESSIONS
from .tables import (MQ_MESSAGES, MSMQ_PACKETS, PCF_PARAMETERS, TABLES, dictionary_columns, output_schema,
                     statistics_columns)

__all__ = ["TableCollector", "DatasetSink", "ParquetFile", "BackgroundSink", "Worker", "read_table"]


# ---------------------------------------------------------------------------
# sinks
# ---------------------------------------------------------------------------
class TableCollector:
    """A sink that keeps what it is given, by table (tests, the Spark data
    source, notebooks). ``columns``: the job's column selection
    (:attr:`ConvertOptions.columns`), which the empty tables follow."""

    def __init__(self, columns: Sequence[str] = ()) -> None:
        self.parts: dict[str, list[pa.Table]] = {t: [] for t in TABLES}
        self.columns = tuple(columns)

    def __call__(self, table: str, rows: pa.Table) -> None:
        self.parts.setdefault(table, []).append(rows)

    def table(self, name: str) -> pa.Table:
        parts = self.parts.get(name) or []
        return pa.concat_tables(parts) if parts else output_schema(name, self.columns).empty_table()

    def rows(self, *names: str) -> list[dict]:
        """Rows of the message tables (default: mq_messages and msmq_packets)
        as dicts in ``message_key`` order, each with ``protocol``
        ("mq"/"msmq") added."""
        out: list[dict] = []
        for name in names or (MQ_MESSAGES, MSMQ_PACKETS):
            protocol = {MQ_MESSAGES: "mq", MSMQ_PACKETS: "msmq"}.get(name)
            for r in self.table(name).to_pylist():
                if protocol is not None:
                    r["protocol"] = protocol
                out.append(r)
        out.sort(key=lambda r: r["message_key"])
        return out


#: a table's waiting rows are written as a row group once they hold this many bytes (Arrow
#: buffers), whatever ``row_group_rows``: the bound of a sink's memory per table
ROW_GROUP_BYTES = 16 << 20

#: the buffer a Parquet file is written through (:class:`ParquetFile`; 0: none)
WRITE_BUFFER = 64 << 10


class DatasetSink:
    """Writes each table as a Parquet dataset ``outdir/<table>/``: part files
    of row groups of ``row_group_rows`` rows (the rows given wait until that many
    have come, or :data:`ROW_GROUP_BYTES` of them, or :meth:`close`), or with ``partition_by="date"`` part files
    per UTC date of ``ts`` in hive-style folders ``date=YYYY-MM-DD`` (rows
    with no ``ts``: ``date=__HIVE_DEFAULT_PARTITION__``, as Spark names
    them).  A part file holds at most ``row_groups_per_file`` row groups
    (0: no limit); the table goes on in the next one, ``part-00000-c000.parquet``,
    ``part-00000-c001.parquet``, ... (as Spark names the files of a task): an open
    Parquet file keeps every row group's metadata until it is closed (about
    1 KiB per column), so without the limit memory would grow with the
    capture.  Nothing is created before the first call; :meth:`close`
    writes the tables that got no rows as empty part files when
    ``complete`` is true."""

    NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"

    def __init__(self, outdir: str, *, partition_by: Optional[str] = None, compression: str = "zstd",
                 part: str = "part-00000", tables: Sequence[str] = TABLES, columns: Sequence[str] = (),
                 row_groups_per_file: int = 0, row_group_rows: int = 1 << 17) -> None:
        """``part``: the name of the part files (without ``.parquet``): each
        task of the Spark engine writes its capture's own.  ``tables``: the
        tables of the job (:attr:`ConvertOptions.tables`), which :meth:`close`
        completes; ``columns``: its column selection (:attr:`ConvertOptions.columns`),
        the schema of each file; ``row_groups_per_file``, ``row_group_rows``, ``compression``
        (one of :data:`~mqcodec.convert.options.COMPRESSIONS`): see the class and
        :class:`~mqcodec.convert.options.ConvertOptions`."""
        self.tables = tuple(tables)
        self.columns = tuple(columns)
        if partition_by not in (None, "date"):
            raise ValueError("partition_by must be None or 'date', not %r" % (partition_by,))
        if row_groups_per_file < 0:
            raise ValueError("row_groups_per_file must be >= 0, not %r" % (row_groups_per_file,))
        if row_group_rows < 1:
            raise ValueError("row_group_rows must be >= 1, not %r" % (row_group_rows,))
        if compression not in COMPRESSIONS:
            raise ValueError("compression must be one of %s, not %r" % (", ".join(COMPRESSIONS), compression))
        self.row_group_rows = row_group_rows
        # (table, date) -> the rows given and not written yet, their number and bytes
        self._waiting: dict[tuple[str, Optional[str]], tuple[list, int, int]] = {}
        self.outdir = outdir
        self.partition_by = partition_by
        self.compression = compression
        self._codec = "none" if compression == "uncompressed" else compression   # (pyarrow's name)
        self.part = part
        self.row_groups_per_file = row_groups_per_file
        self._writers: dict[tuple[str, Optional[str]], ParquetFile] = {}
        self._files: Counter = Counter()   # (table, date) -> part files begun
        self.paths: list[str] = []

    @classmethod
    def of(cls, outdir: str, options, *, partition_by: Optional[str] = None,
           part: str = "part-00000") -> "DatasetSink":
        """The sink of a conversion with ``options`` (a
        :class:`~mqcodec.convert.options.ConvertOptions`): its tables, columns,
        row groups and compression."""
        return cls(outdir, partition_by=partition_by, part=part, tables=options.tables, columns=options.columns,
                   row_groups_per_file=options.row_groups_per_file, row_group_rows=options.row_group_rows,
                   compression=options.compression)

    def __call__(self, table: str, rows: pa.Table) -> None:
        if self.partition_by is None or PCF_PARAMETERS == table or rows.num_rows == 0:
            self._write(table, None, rows)
            return
        from ..arrow_kernels import pc

        dates = pc.strftime(rows.column("ts"), format="%Y-%m-%d")  # UTC: ts carries tz UTC
        for value in pc.unique(dates).to_pylist():
            mask = pc.is_null(dates) if value is None else pc.fill_null(pc.equal(dates, value), False)
            self._write(table, value or self.NULL_PARTITION, pc.filter(rows, mask))

    def _write(self, table: str, date: Optional[str], rows: pa.Table) -> None:
        if not rows.num_rows:
            return              # no row group of no rows (close makes the files of empty tables)
        key = (table, date)
        parts, n, size = self._waiting.pop(key, ([], 0, 0))
        parts.append(rows)
        n += rows.num_rows
        size += rows.nbytes
        if n < self.row_group_rows and size < ROW_GROUP_BYTES:
            parts[-1] = _shared_nulls(rows)
            self._waiting[key] = (parts, n, size)
            return
        self._row_group(key, _one_table(parts))

    def _row_group(self, key: tuple[str, Optional[str]], rows: pa.Table) -> None:
        table, date = key
        w = self._writers.get(key)
        if w is None:
            folder = os.path.join(self.outdir, table)
            if date is not None:
                folder = os.path.join(folder, "date=" + date)
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, "%s-c%03d.parquet" % (self.part, self._files[key]))
            w = self._writers[key] = ParquetFile(path, output_schema(table, self.columns), self._codec,
                                                 sample=rows)
            self._files[key] += 1
            self.paths.append(path)
        w.write_table(rows)
        if self.row_groups_per_file and w.row_groups >= self.row_groups_per_file:
            del self._writers[key]   # the next rows begin the next part file
            w.close()

    def close(self, *, complete: bool = True) -> list[str]:
        """Write the rows still waiting and close every part file; with ``complete``,
        give each table that got no rows an empty part file, so that every table can
        be read.  Every part file is closed whatever fails (a full disk): the first
        error is raised once all are."""
        try:
            for key in list(self._waiting):
                parts, _, _ = self._waiting.pop(key)
                self._row_group(key, _one_table(parts))
            if complete:
                written = {t for t, _ in self._files}
                for table in self.tables:
                    if table not in written:
                        self._row_group((table, None), output_schema(table, self.columns).empty_table())
        except BaseException:
            self._close_files(quietly=True)
            raise
        self._close_files()
        return self.paths

    def _close_files(self, quietly: bool = False) -> None:
        writers = list(self._writers.values())
        self._writers.clear()
        first: Optional[BaseException] = None
        for w in writers:
            try:
                w.close()
            except Exception as exc:   # noqa: PERF203 - each file closed, the first error kept
                first = first or exc
        if first is not None and not quietly:
            raise first


def _shared_nulls(rows: pa.Table) -> pa.Table:
    """``rows``, which wait for their row group, with their all-null columns
    (half the bytes of an mq_messages or mq_calls chunk: the columns of the call
    types and headers the chunk does not have) made of shared zeros instead of
    buffers of their own: the same values in a fraction of the memory."""
    from ..arrow_kernels import nulls

    n = rows.num_rows
    columns = rows.columns
    changed = False
    for i, column in enumerate(columns):
        if n and column.null_count == n and column.nbytes:
            columns[i] = nulls(n, column.type)
            changed = True
    return pa.Table.from_arrays(columns, schema=rows.schema) if changed else rows


def _one_table(parts: list) -> pa.Table:
    """The rows of one row group: the parts, their dictionaries made one (the writer
    writes a column chunk plain when its dictionary changes from one part to the next)."""
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts).unify_dictionaries()


class ParquetFile:
    """One Parquet file written a row group per :meth:`write_table`: what
    ``pyarrow.parquet.ParquetWriter`` writes with its defaults (format 2.6, the
    Arrow schema stored), statistics for the columns that follow the rows' order
    (:func:`~mqcodec.convert.tables.statistics_columns`) and dictionaries for the
    columns whose values repeat in the file's first rows, never for the free text and
    bytes of :data:`~mqcodec.convert.tables.NO_DICTIONARY`
    (:func:`~mqcodec.convert.tables.dictionary_columns`), through pyarrow's own
    writer class and file, without ``pyarrow.parquet``'s filesystem layer: its
    import (``pyarrow.fs``, 17-19 ms) is a tenth of a small capture's whole job.
    The file is written through a buffer of :data:`WRITE_BUFFER` bytes: the writer
    asks the file its position and writes each page's header and data apart, a
    system call each without it (6,026 ``lseek`` and ``write`` calls for the
    tables of the simulator's 20,000 messages, 611 with it).  Where that class does not take these
    arguments (another pyarrow), the public writer is used."""

    def __init__(self, path: str, schema: pa.Schema, compression: str, sample: Optional[pa.Table] = None) -> None:
        """``sample``: the file's first rows, which choose the columns written with
        a dictionary (:func:`~mqcodec.convert.tables.dictionary_columns`)."""
        self.schema = schema
        self.path = path
        self.row_groups = 0   # written so far: one per write_table (of at most 1 Mi rows)
        use_dictionary = dictionary_columns(schema, sample)
        write_statistics = statistics_columns(schema) or False
        self._file: Any = None
        try:
            from pyarrow._parquet import ParquetWriter as _Writer
        except ImportError:
            _Writer = None
        if _Writer is not None:
            raw = pa.OSFile(path, "wb")
            self._file = pa.BufferedOutputStream(raw, WRITE_BUFFER) if WRITE_BUFFER else raw
            try:
                self._writer = _Writer(self._file, schema, version="2.6", compression=compression,
                                       use_dictionary=use_dictionary, write_statistics=write_statistics,
                                       use_deprecated_int96_timestamps=False, writer_engine_version="V2",
                                       data_page_version="1.0", use_compliant_nested_type=True, store_schema=True)
                return
            except TypeError:
                self._file.close()
                self._file = None
        import pyarrow.parquet as pq

        self._writer = pq.ParquetWriter(path, schema, compression=compression, use_dictionary=use_dictionary,
                                        write_statistics=write_statistics)

    def write_table(self, rows: pa.Table) -> None:
        if not rows.schema.equals(self.schema, check_metadata=False):
            raise ValueError("Parquet file %s: the rows' schema is not the file's:\n%s\nvs.\n%s"
                             % (self.path, rows.schema, self.schema))
        self._writer.write_table(rows)
        self.row_groups += 1

    def close(self) -> None:
        """The footer written and the buffer flushed: a full disk raises here at
        the latest."""
        try:
            self._writer.close()
        finally:
            if self._file is not None:
                self._file.close()


class WriteFailures:
    """A sink wrapped so that what writing raises is recognised later: a
    converter reports an OSError of reading as a capture not read, but an
    OSError of writing (a full disk) must fail the job.  ``raised_by(exc)``:
    ``exc`` came from the sink."""

    def __init__(self, sink) -> None:
        self.sink = sink
        self.failed: list[BaseException] = []

    def __call__(self, table: str, rows: pa.Table) -> None:
        try:
            self.sink(table, rows)
        except BaseException as exc:
            self.failed.append(exc)
            raise

    def raised_by(self, exc: BaseException) -> bool:
        return bool(self.failed) and exc is self.failed[-1]


class BackgroundSink:
    """Hands the tables it is given to ``sink`` (a :class:`DatasetSink`) on
    ``workers`` background threads, so that Parquet encoding and writing --
    which release the GIL -- overlap the decoding that produces the next
    chunk.  Each table goes to one worker (chosen by its name), so the row
    groups of every file are written in the order they were given: the files
    are those ``sink`` alone writes.  Each worker's queue holds at most
    ``max_pending`` tables; past that the caller waits, so memory stays a few
    chunks whatever the capture's size.  An exception of a worker (a full
    disk, say) is raised again in the caller, by its next call or by
    :meth:`close`; the tables given after it are dropped, not written.

    ``start_rows``: the workers start with the first table of at least that
    many rows; the smaller tables given before it are written by the caller
    (nothing is queued yet, so the order holds).  A small job then never
    pays for handing the GIL back and forth between threads that have
    nothing to overlap (0: the workers start at once)."""

    def __init__(self, sink, *, workers: int = 1, max_pending: int = 2 * len(TABLES), start_rows: int = 0) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1, not %r" % (workers,))
        self.sink = sink
        self.workers = tuple(Worker("mqcodec-writer-%d" % i, max_pending) for i in range(workers))
        self._started = False
        self._start_rows = start_rows

    def _worker(self, table: str) -> "Worker":
        i = TABLES.index(table) if table in TABLES else sum(table.encode())
        return self.workers[i % len(self.workers)]

    def __call__(self, table: str, rows: pa.Table) -> None:
        for w in self.workers:
            w.raise_error()
        if not self._started:
            if rows.num_rows < self._start_rows:
                self.sink(table, rows)
                return
            self._started = True
        self._worker(table).submit(self.sink, table, rows)  # waits while the worker's queue is full

    def close(self, *, complete: bool = True) -> list[str]:
        """Wait for the workers to write what they were given, then close
        ``sink`` (see :meth:`DatasetSink.close`).  After a worker's exception
        ``sink`` is closed without completing the tables, and the exception
        is raised unless a call raised it already."""
        error = None
        for w in self.workers:
            e = w.join()
            error = error or e
        if error is not None:
            self.sink.close(complete=False)
            if not any(w.reported for w in self.workers):
                raise error
            return []
        return self.sink.close(complete=complete)


class Worker:
    """A thread that runs the calls it is given (:meth:`submit`) one after
    another, in order, started by the first.  Its queue holds at most
    ``max_pending`` calls; past that :meth:`submit` waits, so memory stays
    bounded.  The first exception of a call is kept: raised again in the
    caller by its next :meth:`submit` (or :meth:`raise_error`), returned by
    :meth:`join`; the calls given after it are dropped, not run."""

    def __init__(self, name: str, max_pending: int = 1) -> None:
        import queue

        self.name = name
        self.error: Optional[BaseException] = None
        self.reported = False   # the caller has seen self.error
        self._queue: "queue.Queue" = queue.Queue(maxsize=max(1, max_pending))
        self._thread: Any = None

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def pending(self) -> int:
        """Calls queued, not yet begun."""
        return self._queue.qsize()

    def submit(self, fn, *args) -> None:
        self.raise_error()
        if self._thread is None:
            import threading

            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
        self._queue.put((fn, args))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self.error is not None:
                continue  # after a failure: drain, so that the caller never waits on a full queue
            try:
                item[0](*item[1])
            except BaseException as exc:  # noqa: B036 - handed to the caller's thread
                self.error = exc

    def raise_error(self) -> None:
        if self.error is not None:
            self.reported = True
            raise self.error

    def join(self) -> Optional[BaseException]:
        """Wait for the calls given so far; the thread ends.  Returns the
        exception a call raised, if any (a later :meth:`submit` starts a new thread)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        return self.error


def read_table(outdir: str, table: str, columns: Optional[Iterable[str]] = None) -> pa.Table:
    """One table of a job's output folder (either engine's, partitioned or
    not), with pyarrow."""
    import pyarrow.dataset as ds

    dataset = ds.dataset(os.path.join(outdir, table), format="parquet", partitioning="hive")
    return dataset.to_table(columns=list(columns) if columns is not None else None)


