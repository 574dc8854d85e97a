"""The options of a conversion: one object, used unchanged by the CLI, the
local engine and the Spark engine (which hands it to its tasks as text)."""
from __future__ import annotations

import dataclasses
import os
from typing import Optional

from .tables import PCF_PARAMETERS, TABLES, check_columns, output_schema

__all__ = ["ConvertOptions", "reassembly_options", "available_cores", "writer_threads", "DEFAULT_MQ_PORTS",
           "DEFAULT_MSMQ_PORTS", "MSMQ_PING_PORT", "COMPRESSIONS"]

DEFAULT_MQ_PORTS = (1414,)
DEFAULT_MSMQ_PORTS = (1801,)
MSMQ_PING_PORT = 3527

#: the Parquet compression codecs a conversion writes with (:attr:`ConvertOptions.compression`):
#: zstd, the smallest files; snappy, what every Parquet reader reads, older Hive, Impala and
#: Presto among them, and faster to write; uncompressed.  (gzip is not offered: on the
#: simulator's 100,000 messages it made the job 5x slower for files larger than zstd's.)
COMPRESSIONS = ("zstd", "snappy", "uncompressed")


@dataclasses.dataclass
class ConvertOptions:
    mq_ports: tuple = DEFAULT_MQ_PORTS
    msmq_ports: tuple = DEFAULT_MSMQ_PORTS
    detect_by_content: bool = True
    raw: bool = False
    chunk_messages: int = 20000
    #: also decode and write once the pending messages hold this many bytes: error rows
    #: keep their bytes (an MSMQ packet may be 4 MiB, an MQ message 100 MiB), so a
    #: chunk counted in messages alone is not a memory bound
    chunk_bytes: int = 16 << 20
    #: a Parquet part file holds at most this many row groups (chunks); past it the table goes
    #: on in the next part file (sinks.DatasetSink): an open file keeps every row group's
    #: metadata until it is closed, so this bounds the writer's memory whatever the capture's
    #: size (0: one file per table and task, however large)
    row_groups_per_file: int = 64
    #: a table's rows are written as a Parquet row group once this many are waiting (or
    #: sinks.ROW_GROUP_BYTES of them; the last row group of a file holds the rest), not a row
    #: group per chunk: larger row groups make both the writing and the reading faster
    row_group_rows: int = 1 << 17
    #: the Parquet compression codec of every table's files, one of :data:`COMPRESSIONS`
    compression: str = "zstd"
    impl: Optional[str] = None
    #: the capture pipeline: None = the compiled capture core when built (docs/capture-core.md),
    #: "py" = the pure pipeline (the reference); ``impl="py"`` implies it
    capture_impl: Optional[str] = None
    #: the pure pipeline's global byte budget over reorder buffers and framer buffers
    #: (mqcodec.capture.budget): past it the largest buffered direction is cut (an error row)
    buffer_budget: int = 256 << 20
    #: TCP connections open at once before the least recently active tenth is evicted (each
    #: costs a few KiB; captures of random bytes open one per frame): both pipelines use it
    max_connections: int = 65536
    #: closed connections remembered (the last ones), so that their late retransmissions
    #: are ignored rather than taken for new connections
    max_closed: int = 65536
    #: a direction's out-of-order segments wait in a buffer of at most this many bytes and
    #: segments; past either the hole before them is declared a gap (docs/capture.md)
    max_reassembly_bytes: int = 4 << 20
    max_reassembly_segments: int = 4096
    #: threads of :func:`convert`: 1 decodes and writes in this thread; N > 1 also writes
    #: Parquet on N - 1 background threads (at most one per table: sinks.BackgroundSink)
    #: while this one decodes the next chunk; None = the cores this process may use.
    #: The files are the same whatever N.
    threads: Optional[int] = None
    #: the output tables to make (a subset of :data:`mqcodec.convert.tables.TABLES`); the
    #: others are not decoded at all: ``("mq_calls",)`` alone frames and reads the IBM MQ
    #: units but decodes no message, no PCF body and no MSMQ packet. The rows of a table are
    #: the same whatever else is chosen.
    tables: tuple = TABLES
    #: a column selection: ``"table.column"`` entries; a table any of them names is written
    #: with those columns only (in the table's order) and its key column (message_key,
    #: call_key), and what only its other columns need is not computed (the text of the
    #: bodies, the RFH2 folders, the names of codes, the MSMQ columns the batch decoder
    #: fills); a table none of them names keeps every column. The values of a column are the
    #: same whatever else is chosen.
    columns: tuple = ()

    def __post_init__(self) -> None:
        for name, least in _LEAST.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError("%s must be an integer >= %d, not %r" % (name, least, value))
        unknown = [t for t in self.tables if t not in TABLES]
        if unknown or not self.tables:
            raise ValueError("tables: %s (the tables are %s)" % (
                "no table chosen" if not self.tables else "no table %s" % ", ".join(map(repr, unknown)),
                ", ".join(TABLES)))
        # one order whatever the caller's: TABLES'
        object.__setattr__(self, "tables", tuple(t for t in TABLES if t in self.tables))
        columns = check_columns(self.columns)
        unmade = sorted({c.partition(".")[0] for c in columns} - set(self.tables))
        if unmade:
            raise ValueError("columns: %s %s not among the tables made (%s)" % (
                ", ".join(unmade), "is" if len(unmade) == 1 else "are", ", ".join(self.tables)))
        object.__setattr__(self, "columns", columns)
        compression = self.compression.lower() if isinstance(self.compression, str) else self.compression
        compression = "uncompressed" if compression == "none" else compression   # (Spark's and pyarrow's name)
        if compression not in COMPRESSIONS:
            raise ValueError("compression: %r is not one of %s" % (self.compression, ", ".join(COMPRESSIONS)))
        object.__setattr__(self, "compression", compression)

    def wants(self, table: str) -> bool:
        """``table`` is one of the tables to make."""
        return table in self.tables

    def schema(self, table: str):
        """The schema ``table`` is written in (:attr:`columns` applied)."""
        return output_schema(table, self.columns)

    def check_partitioning(self, partition_by) -> None:
        """Partitioning by date reads ``ts``: a ValueError if a selection leaves it out
        of a table so partitioned (every table but pcf_parameters)."""
        if partition_by != "date":
            return
        without = [t for t in self.tables if t != PCF_PARAMETERS and "ts" not in self.schema(t).names]
        if without:
            raise ValueError("partitioning by date needs the ts column of %s: add %s to the columns" % (
                ", ".join(without), ", ".join(t + ".ts" for t in without)))

    def to_text(self) -> str:
        """The options as one JSON string (how the Spark engine hands them to its
        tasks, the data source's ``options`` option): :meth:`from_text` gives them back."""
        import json

        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_text(cls, text: str) -> "ConvertOptions":
        import json

        return cls.from_strings(json.loads(text))

    @classmethod
    def from_strings(cls, values: dict, base: "Optional[ConvertOptions]" = None) -> "ConvertOptions":
        """``base`` (default: the defaults) with the fields named in ``values``
        replaced, each given as its value or as a string (the Spark data
        source's options): ports as ``"1414,1415"``, booleans as
        ``true``/``false``, numbers in decimal, ``""``/``"none"`` for None.
        An unknown name is a ValueError."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        changes: dict = {}
        for name, value in values.items():
            if name not in fields:
                raise ValueError("unknown conversion option %r (known: %s)" % (name, ", ".join(sorted(fields))))
            changes[name] = _option_value(name, fields[name].default, value)
        return dataclasses.replace(base or cls(), **changes)


#: the least value of each limit among the options
_LEAST = {"chunk_messages": 1, "chunk_bytes": 1, "row_groups_per_file": 0, "row_group_rows": 1, "buffer_budget": 1,
          "max_connections": 1, "max_closed": 0, "max_reassembly_bytes": 1, "max_reassembly_segments": 1}


def _option_value(name: str, default, value):
    """A ConvertOptions field's value from ``value`` (itself, or a string)."""
    if not isinstance(value, str):
        return tuple(value) if isinstance(default, tuple) else value
    text = value.strip()
    if isinstance(default, tuple):
        parts = [p.strip() for p in text.split(",") if p.strip()]
        return tuple(parts) if name in ("tables", "columns") else tuple(int(p) for p in parts)
    if isinstance(default, bool):
        if text.lower() not in ("true", "false"):
            raise ValueError("option %s: %r is not true or false" % (name, value))
        return text.lower() == "true"
    if name == "compression":   # a name, "none" among them
        return text
    if text.lower() in ("", "none"):
        return None
    if isinstance(default, int) or name == "threads":
        return int(text)
    return text


def reassembly_options(options: ConvertOptions) -> dict:
    """The options of TCP reassembly in ``options``, as both capture pipelines
    (CaptureProcessor / TCPReassembler and the capture core) take them."""
    return {"max_connections": options.max_connections, "max_closed": options.max_closed,
            "max_reassembly_bytes": options.max_reassembly_bytes,
            "max_reassembly_segments": options.max_reassembly_segments}


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def writer_threads(threads: Optional[int]) -> int:
    """Background Parquet writers for ``threads`` (:attr:`ConvertOptions.threads`):
    ``threads - 1``, at most one per table; 0 = write in the calling thread."""
    n = available_cores() if threads is None else int(threads)
    if n < 1:
        raise ValueError("threads must be >= 1, not %r" % (threads,))
    return min(n - 1, len(TABLES))
