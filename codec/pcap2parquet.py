"""Captured traffic in, Parquet tables out: the main job of mqcodec.

    frames ─ CaptureProcessor ─► TCP stream events ─► one framer per connection
    direction (IBM MQ TSH framing on 1414, MSMQ PacketSize framing on 1801,
    or detected by content) ─► protocol messages ─► batch decoders (compiled
    core when built) ─► ``messages.parquet`` + ``pcf_parameters.parquet``

Nothing is dropped silently: a message that spans a capture gap, a framing
error or a decode error becomes a row with ``error`` set (and its bytes in
``raw`` when ``--raw``, always for error rows); frames that are not decoded
are counted in the summary.  Memory is bounded: messages are decoded and
written in chunks (one Parquet row group per chunk), and the reassembly and
framing layers bound their own buffers.

``Converter`` is I/O-free apart from the Parquet writers it is given; the
CLI (``mqcodec pcap2parquet``) and the Spark data source drive it.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections import Counter
from typing import Any, Iterable, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from . import batch as _batch
from .batch import schema as _schema

__all__ = ["Converter", "ConvertOptions", "convert", "MESSAGES_COMMON", "messages_schema", "pcf_parameters_schema"]

KEY_SHIFT = 40
DEFAULT_MQ_PORTS = (1414,)
DEFAULT_MSMQ_PORTS = (1801,)
MSMQ_PING_PORT = 3527

#: columns every row of messages.parquet has, whatever its protocol
MESSAGES_COMMON = [
    # (capture index << 40) | message number within that capture: unique in
    # one conversion, and the same whichever engine converts (a Spark task
    # converts one capture and knows its index)
    pa.field("message_key", pa.int64(), nullable=False),
    pa.field("capture", pa.string(), nullable=False),
    pa.field("frame", pa.int64()),
    pa.field("ts", pa.timestamp("ns", tz="UTC")),
    pa.field("src_ip", pa.string()),
    pa.field("src_port", pa.int32()),
    pa.field("dst_ip", pa.string()),
    pa.field("dst_port", pa.int32()),
    pa.field("tcp_stream", pa.int64()),
    pa.field("stream_offset", pa.int64()),
    pa.field("protocol", pa.string(), nullable=False),
    pa.field("kind", pa.string()),
    pa.field("error", pa.string()),
    pa.field("error_structure", pa.string()),
    pa.field("error_field", pa.string()),
    pa.field("error_offset", pa.int64()),
    pa.field("length", pa.int64()),
    pa.field("raw", pa.binary()),
    # the MSMQ facts analysts ask for first, under short names (derived from
    # the msmq_* columns of the batch decoder, which follow the spec's names)
    pa.field("msmq_message_id", pa.string()),      # SourceQueueManager GUID \ MessageID (an OBJECTID)
    pa.field("msmq_source_qm", pa.string()),
    pa.field("msmq_label", pa.string()),
    pa.field("msmq_class", pa.int32()),
    pa.field("msmq_class_name", pa.string()),
    pa.field("msmq_priority", pa.int32()),
    pa.field("msmq_destination", pa.string()),
]

#: short MSMQ column <- batch column
_MSMQ_SHORT = {
    "msmq_source_qm": "msmq_user_source_queue_manager",
    "msmq_label": "msmq_props_label",
    "msmq_class": "msmq_props_message_class",
    "msmq_priority": "msmq_base_pr",
    "msmq_destination": "msmq_user_destination_queue",
}

_BATCH_ONLY = {"record", "error_structure", "error_field", "error_offset", "error_reason", "raw"}


def _protocol_fields(schema: Optional[pa.Schema], prefix: str) -> list[pa.Field]:
    if schema is None:
        return []
    out = []
    for f in schema:
        if f.name in _BATCH_ONLY:
            continue
        name = f.name if f.name.startswith(prefix) else prefix + f.name
        out.append(pa.field(name, f.type))
    return out


def _mq_schema():
    return getattr(_schema, "MQ_MESSAGES", None)


def _msmq_schema():
    return getattr(_schema, "MSMQ_PACKETS", None)


def messages_schema() -> pa.Schema:
    """messages.parquet: the common columns, then every column of the IBM MQ
    message batch schema (``md_*``, chain facts, ``pcf_*``) and of the MSMQ
    packet batch schema (prefixed ``msmq_``), nullable."""
    fields = list(MESSAGES_COMMON)
    seen = {f.name for f in fields}
    for f in _protocol_fields(_mq_schema(), "") + _protocol_fields(_msmq_schema(), "msmq_"):
        if f.name not in seen:
            fields.append(f)
            seen.add(f.name)
    return pa.schema(fields)


def pcf_parameters_schema() -> pa.Schema:
    """pcf_parameters.parquet: the long-form PCF parameter schema with
    ``message_key`` (the join key to messages) in place of ``record``."""
    fields = [pa.field("message_key", pa.int64(), nullable=False)]
    fields += [f for f in _schema.PCF_PARAMETERS if f.name != "record"]
    return pa.schema(fields)


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


# ---------------------------------------------------------------------------
# per-direction state
# ---------------------------------------------------------------------------
class _Direction:
    __slots__ = ("protocol", "framer", "marks", "src", "sport", "dst", "dport", "stream", "undetected", "skip")

    def __init__(self, conn, direction):
        from .capture import CLIENT_TO_SERVER

        self.protocol: Optional[str] = None
        self.framer = None
        self.marks: list = []          # (stream offset, frame number, ts_ns), ascending
        if direction == CLIENT_TO_SERVER:
            self.src, self.sport, self.dst, self.dport = conn.client, conn.client_port, conn.server, conn.server_port
        else:
            self.src, self.sport, self.dst, self.dport = conn.server, conn.server_port, conn.client, conn.client_port
        self.stream = conn.stream
        self.undetected = 0
        self.skip = 0  # messages to pass over (a connection replayed after the compiled core)

    def mark(self, offset: int, frame: int, ts: int) -> None:
        self.marks.append((offset, frame, ts))

    def locate(self, offset: int) -> tuple[Optional[int], Optional[int]]:
        """(frame, ts) of the frame holding stream byte ``offset``; forgets
        marks before it (the framers never look back)."""
        marks = self.marks
        lo, hi = 0, len(marks)
        while lo < hi:
            mid = (lo + hi) // 2
            if marks[mid][0] <= offset:
                lo = mid + 1
            else:
                hi = mid
        i = lo - 1
        if i < 0:
            return None, None
        _, frame, ts = marks[i]
        if i > 64:
            del marks[: i - 1]
        return frame, ts


def _detect(data: bytes) -> Optional[str]:
    if data[:3] == b"TSH" and len(data) >= 4 and data[3:4] in (b" ", b"M", b"C"):
        return "mq"
    if len(data) >= 8 and data[0] == 0x10 and data[4:8] == b"LIOR":
        return "msmq"
    return None


#: "mq", "msmq" or None for the first bytes of a TCP direction no port named
#: (``mqcodec show`` frames captures as this module does)
detect_protocol = _detect


def port_protocol(conn, mq_ports, msmq_ports) -> Optional[str]:
    """"mq" or "msmq" when either port of the connection ``conn`` (a
    ``capture.ConnKey``) is one of the given ports, else None."""
    if conn.server_port in mq_ports or conn.client_port in mq_ports:
        return "mq"
    if conn.server_port in msmq_ports or conn.client_port in msmq_ports:
        return "msmq"
    return None


def new_framer(protocol: str, offset: int = 0):
    """The stream framer of ``protocol`` for a direction whose byte ``offset``
    comes first (0 when known by its port; the first recognised byte when
    detected by content: the framers report stream offsets from there)."""
    if protocol == "mq":
        from .ibmmq.framing import MQStreamFramer

        return MQStreamFramer(offset)
    from .msmq.framing import MSMQStreamFramer

    return MSMQStreamFramer(offset=offset)


class Converter:
    """Feed captures, get Parquet.  ``messages_writer``/``pcf_writer`` are
    callables taking a ``pa.Table`` (e.g. a ``pq.ParquetWriter.write_table``);
    :func:`convert` wires them to files."""

    def __init__(self, write_messages, write_pcf, options: ConvertOptions | None = None):
        self.options = options or ConvertOptions()
        self.write_messages = write_messages
        self.write_pcf = write_pcf
        self.messages_schema = messages_schema()
        self.pcf_schema = pcf_parameters_schema()
        self.summary: Counter = Counter()
        self.by_kind: Counter = Counter()
        self.capture_reports: list[dict] = []
        self._key = 0
        self._pending: list[dict] = []    # rows of the pure pipeline, one dict each
        self._blocks: list[pa.Table] = []  # rows of the compiled core, a table per batch (BLOCK_SCHEMA)
        self._block_rows = 0
        self._flushes = 0
        self._pending_bytes = 0
        self._mq_ports = frozenset(self.options.mq_ports)
        self._replay = None  # pcap2parquet_compiled.Replay while replaying connections
        self._msmq_ports = frozenset(self.options.msmq_ports)

    # -------------------------------------------------------------- input
    def add_capture(self, source, name: Optional[str] = None, progress=None, *, index: Optional[int] = None) -> None:
        """Convert one capture. ``index``: its position in the job's input
        list (the high bits of ``message_key``); default: the next one.

        The compiled capture core converts it when it is built and
        ``options.impl`` is not ``"py"`` (and the source can be read twice:
        a path, bytes or a seekable file); otherwise the pure pipeline."""
        name = name or (os.path.basename(source) if isinstance(source, (str, os.PathLike)) else "capture")
        self._capture_index = len(self.capture_reports) if index is None else int(index)
        self._key = self._capture_index << KEY_SHIFT
        core = _core_module(self.options.capture_impl or self.options.impl)
        if core is not None and _rereadable(source):
            from . import pcap2parquet_compiled

            if pcap2parquet_compiled.add_capture(self, core, source, name, progress):
                return
        self._add_capture_pure(source, name, progress)

    def _add_capture_pure(self, source, name: str, progress=None) -> None:
        from .capture import open_capture

        reader = open_capture(_reopen(source))
        if progress is not None and hasattr(progress, "attach"):
            progress.attach(reader)  # the bar reads the file position from the reader
        file_error = []
        proc = self._pure_pipeline(_frames_until_error(reader, file_error), name, progress)
        report = proc.report()
        report["capture"] = name
        self._end_capture(report, reader, file_error)

    def _pure_pipeline(self, frames, name: str, progress=None):
        """Frames -> CaptureProcessor -> framers -> pending rows, under the
        global byte budget, flushing by rows and bytes; returns the processor
        (its report).  The pure capture and the compiled engine's replay both
        run it."""
        from .capture import CaptureProcessor, StreamClosed
        from .capture.budget import DEFAULT_LIMIT, ByteBudget

        proc = CaptureProcessor(max_connections=self.options.max_connections)
        if self._replay is not None and hasattr(self._replay, "processor"):
            proc = self._replay.processor(proc)  # a replay: drops the connections it does not replay
        dirs: dict = {}
        budget = ByteBudget(self.options.buffer_budget or DEFAULT_LIMIT)
        limit_rows, limit_bytes = self.options.chunk_messages, self.options.chunk_bytes
        for frame in frames:
            if progress is not None:
                progress(frame)
            self._on_events(proc.feed(frame), name, dirs)
            if budget.charge(len(frame.data)):   # once per budget.slack bytes of input
                for d in budget.enforce(proc.tcp, dirs, lambda evs: self._on_events(evs, name, dirs),
                                        frame_number=frame.number, ts_ns=frame.ts_ns):
                    self._drain(name, d)
            if len(self._pending) + self._block_rows >= limit_rows or self._pending_bytes >= limit_bytes:
                self.flush()
        for ev in proc.close():
            self._on_events((ev,), name, dirs, gaps_only=type(ev) is not StreamClosed)
            if self._pending_bytes >= limit_bytes:
                self.flush()
        for d in dirs.values():
            if d.undetected:
                self.summary["bytes in streams of no known protocol"] += d.undetected
        for k in ("budget cuts", "bytes cut by the budget"):
            if budget.stats[k]:
                self.summary[k] += budget.stats[k]
        return proc

    def _end_capture(self, report: dict, reader, file_error: list) -> None:
        # damage in the file structure after the first frame ends the capture, not the job
        # (docs/ROBUSTNESS-captures.md): the frames before it are converted and it is counted
        if file_error:
            self.summary["captures ended by a file error"] += 1
            report["file_error"] = str(file_error[0])
        if reader.truncation is not None:
            self.summary["captures cut short"] += 1
            report["truncation"] = reader.truncation._asdict()
        inner = getattr(reader.parser, "inner", None)
        skipped_blocks = getattr(inner, "skipped_blocks", None)
        if skipped_blocks:
            self.summary["pcapng blocks skipped"] += sum(skipped_blocks.values())
        self.capture_reports.append(report)
        self.summary["frames"] += report["stats"].get("frames", 0)
        self.summary["frames skipped"] += report["stats"].get("skipped", 0)
        self.summary["frames malformed"] += report["stats"].get("malformed", 0)
        self.flush()

    def _on_events(self, events, name: str, dirs: dict, *, gaps_only: bool = False) -> None:
        """The pure pipeline's transport events -> framers -> pending rows."""
        from .capture import Gap, StreamClosed, StreamData, UDPDatagram

        mq_ports = self._mq_ports
        msmq_ports = self._msmq_ports
        for ev in events:
            t = type(ev)
            if gaps_only:
                if t is Gap:
                    self.summary["gaps"] += 1
                    self.summary["gap bytes"] += ev.length
                continue
            if t is StreamData:
                d = self._direction(dirs, ev.conn, ev.direction, mq_ports, msmq_ports)
                if d.protocol is None:
                    if not self.options.detect_by_content or self._detect(d, ev.data, ev.offset) is None:
                        d.undetected += len(ev.data)
                        continue  # no mark: nothing will ask where these bytes were
                d.mark(ev.offset, ev.frame_number, ev.ts_ns)
                d.framer.feed(ev.data)
                self._drain(name, d)
            elif t is Gap:
                d = self._direction(dirs, ev.conn, ev.direction, mq_ports, msmq_ports)
                self.summary["gaps"] += 1
                self.summary["gap bytes"] += ev.length
                if d.framer is not None:
                    d.mark(ev.offset, ev.frame_number, ev.ts_ns)
                    d.framer.gap(ev.length)
                    self._drain(name, d)
            elif t is StreamClosed:
                # a closed direction gets no more events: forget it (memory bounded by
                # open connections, not by every connection of the capture)
                d = dirs.pop((ev.conn, ev.direction), None)
                if d is not None and d.undetected:
                    self.summary["bytes in streams of no known protocol"] += d.undetected
                if d is not None and d.framer is not None:
                    close = getattr(d.framer, "close", None)
                    if close is not None:
                        close()
                    self._drain(name, d)
            elif t is UDPDatagram:
                if MSMQ_PING_PORT in (ev.sport, ev.dport):
                    self._ping(name, ev)

    def _direction(self, dirs, conn, direction, mq_ports, msmq_ports) -> _Direction:
        key = (conn, direction)
        d = dirs.get(key)
        if d is None:
            d = dirs[key] = _Direction(conn, direction)
            if self._replay is not None:  # a connection the compiled core handed back
                self._replay.assign(d, conn, direction)
            proto = port_protocol(conn, mq_ports, msmq_ports)
            if proto is not None:
                self._start(d, proto)
        return d

    def _detect(self, d: _Direction, data: bytes, offset: int) -> Optional[str]:
        proto = _detect(data)
        if proto is not None:
            self._start(d, proto, offset)
        return proto

    @staticmethod
    def _start(d: _Direction, protocol: str, offset: int = 0) -> None:
        """Frame ``d`` as ``protocol`` from stream ``offset`` on (0 for a
        direction known by its port; the first recognised byte when detected
        by content: the framers report stream offsets from there)."""
        d.protocol = protocol
        d.framer = new_framer(protocol, offset)

    # ---------------------------------------------------------- framing
    def _drain(self, capture: str, d: _Direction) -> None:
        for ev in d.framer:  # both framers iterate their ready events, stopping at NEED_DATA/CLOSED
            kind = type(ev).__name__
            if d.skip and kind in ("Message", "Packet"):
                d.skip -= 1  # a replayed direction: the compiled core already wrote this message
                continue
            if kind in ("Message", "Packet"):
                start = _attr(ev, "stream_offset_start", "offset")
                data = _attr(ev, "message_bytes", "data")
                row = self._add(capture, d, start, d.protocol, _attr(ev, "kind"), data)
                md_length = _attr(ev, "md_length")
                if md_length is not None and len(data) == md_length:
                    # the unit carries the MQMD but no data (an MQPUT_REPLY repeats the
                    # MQMD, not the data): decode the MQMD alone, follow no chain
                    row["_md_only"] = True
            elif kind == "FramingError":
                self.summary["framing errors"] += 1
                row = self._add(capture, d, _attr(ev, "offset"), d.protocol, "framing error",
                                _attr(ev, "raw") or b"")
                row["error"] = str(_attr(ev, "reason") or "framing error")
                extent = _attr(ev, "length")
                if isinstance(extent, int) and extent > row["length"]:
                    # the unit's extent in the stream; its raw bytes were kept only in part
                    # (an IBM MQ framer keeps at most max_raw; a budget cut keeps none)
                    row["length"] = extent
                row["error_structure"] = _attr(ev, "structure")
                row["error_field"] = _attr(ev, "field")
            elif kind == "Resynchronised":
                self.summary["resynchronisations"] += 1
                self.summary["bytes skipped by resynchronisation"] += int(_attr(ev, "skipped", "skipped_bytes") or 0)
            # segments and other events are not messages

    def _add(self, capture, d, offset, protocol, kind, data) -> dict:
        frame, ts = d.locate(offset if offset is not None else 0)
        self._key += 1
        row = {
            "message_key": self._key, "capture": capture, "frame": frame, "ts": ts,
            "src_ip": d.src, "src_port": d.sport, "dst_ip": d.dst, "dst_port": d.dport,
            "tcp_stream": d.stream, "stream_offset": offset, "protocol": protocol,
            "kind": str(kind) if kind is not None else None, "error": None, "error_structure": None,
            "error_field": None, "error_offset": None, "length": len(data), "_data": bytes(data),
        }
        self._pending.append(row)
        self._pending_bytes += len(data)
        return row

    def _ping(self, capture, ev) -> None:
        if self._replay is not None and self._replay.skip_ping():
            return  # resuming after the compiled core, which produced this one
        self._key += 1
        self._pending.append({
            "message_key": self._key, "capture": capture, "frame": ev.frame_number, "ts": ev.ts_ns,
            "src_ip": ev.src, "src_port": ev.sport, "dst_ip": ev.dst, "dst_port": ev.dport,
            "tcp_stream": None, "stream_offset": None, "protocol": "msmq", "kind": "Ping",
            "error": None, "error_structure": None, "error_field": None, "error_offset": None,
            "length": len(ev.payload), "_data": bytes(ev.payload), "_ping": True,
        })

    # ---------------------------------------------------------- decoding
    def flush(self) -> None:
        """Decode the pending messages and write them (one row group).

        Rows are assembled column by column: the common columns of every
        pending row, then, for each protocol, the batch decoder's Arrow
        columns for its rows (nulls for the other protocol's), concatenated
        and put back in ``message_key`` order."""
        rows, self._pending = self._pending, []
        blocks, self._blocks = self._blocks, []
        self._flushes += 1
        self._block_rows = 0
        self._pending_bytes = 0
        if rows:
            blocks.append(_rows_block(rows))
        if not blocks:
            return
        block = blocks[0] if len(blocks) == 1 else pa.concat_tables(blocks)
        self._write_block(block)
        del block, blocks, rows
        _release_memory()

    def _write_block(self, block: pa.Table) -> None:
        import pyarrow.compute as pc

        schema = self.messages_schema
        n = block.num_rows
        protocol = block.column("protocol")
        undecoded = pc.is_valid(block.column("error"))
        ping = block.column("_ping")
        mq_mask = pc.and_(pc.equal(protocol, "mq"), pc.invert(undecoded))
        ms_mask = pc.and_(pc.and_(pc.equal(protocol, "msmq"), pc.invert(undecoded)), pc.invert(ping))
        rest_mask = pc.invert(pc.or_(mq_mask, ms_mask))
        parts = []
        if pc.any(mq_mask).as_py():
            parts.append(self._mq_part(block.filter(mq_mask)))
        if pc.any(ms_mask).as_py():
            parts.append(self._msmq_part(block.filter(ms_mask)))
        if pc.any(rest_mask).as_py():
            parts.append(self._rest_part(block.filter(rest_mask)))
        table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        if len(parts) > 1:
            table = table.take(pc.sort_indices(table.column("message_key")))
        assert table.num_rows == n
        # summary: messages by protocol and kind, errors
        self.summary["messages"] += n
        errors = pc.sum(pc.is_valid(table.column("error")).cast(pa.int64())).as_py() or 0
        if errors:
            self.summary["errors"] += errors
        counts = pa.table({"p": table.column("protocol"),
                           "k": pc.fill_null(table.column("kind"), "-")}).group_by(["p", "k"]).aggregate([([], "count_all")])
        for p_, k_, c_ in zip(counts.column("p").to_pylist(), counts.column("k").to_pylist(),
                              counts.column("count_all").to_pylist()):
            self.by_kind[(p_, k_)] += c_
        self.write_messages(table)

    def _common(self, part: pa.Table, decoded: dict) -> pa.Table:
        """``part`` (a block's rows) as a table of the messages schema:
        common columns from the block, protocol columns from ``decoded``
        (name -> array), nulls elsewhere."""
        import pyarrow.compute as pc

        n = part.num_rows
        raw_all = self.options.raw
        arrays = []
        for f in self.messages_schema:
            name = f.name
            if name in decoded:
                a = decoded[name]
            elif name == "raw":
                data = part.column("_data")
                if raw_all:
                    a = data
                else:
                    error = decoded.get("error", part.column("error"))
                    a = pc.if_else(pc.is_valid(error), data, pa.scalar(None, data.type))
            elif name in part.column_names:
                a = part.column(name)
            else:
                a = pa.nulls(n, f.type)
            if a.type != f.type:
                a = a.cast(f.type)
            arrays.append(a)
        return pa.Table.from_arrays(arrays, schema=self.messages_schema)

    def _mq_part(self, part: pa.Table) -> pa.Table:
        import pyarrow.compute as pc

        data = part.column("_data")
        if not hasattr(_batch, "decode_mq_batch"):  # pragma: no cover - the batch package always has it
            raise RuntimeError("mqcodec.batch.decode_mq_batch is missing")
        table = _batch.decode_mq_batch(data.combine_chunks(), impl=self.options.impl,
                                       md_only=part.column("_md_only").to_pylist())
        decoded = {name: table.column(name) for name in table.schema.names if name not in _BATCH_ONLY}
        failed = pc.is_valid(table.column("error_structure"))
        decoded["error"] = pc.if_else(failed, pc.fill_null(table.column("error_reason"), "decode error"),
                                      pa.scalar(None, pa.string()))
        for name in ("error_structure", "error_field", "error_offset"):
            decoded[name] = table.column(name)
        out = self._common(part, decoded)
        self._pcf(part, table, failed)
        return out

    def _pcf(self, part: pa.Table, table, failed) -> None:
        """PCF bodies -> long-form parameters, grouped by the CCSID strings inherit."""
        import pyarrow.compute as pc

        if "body_offset" not in table.schema.names:
            return
        has = pc.and_(pc.and_(pc.invert(failed), pc.is_valid(table.column("pcf_type"))),
                      pc.is_valid(table.column("body_offset")))
        idx = pc.indices_nonzero(has).to_pylist()
        if not idx:
            return
        keys = part.column("message_key").to_pylist()
        data = part.column("_data")
        body_offset = table.column("body_offset").to_pylist()
        body_ccsid = table.column("body_ccsid").to_pylist()
        groups: dict = {}
        for i in idx:
            groups.setdefault(body_ccsid[i], []).append(i)
        for ccsid, members in groups.items():
            bodies = [data[i].as_py()[body_offset[i]:] for i in members]
            kw = {"impl": self.options.impl}
            if ccsid:
                kw["ccsid"] = ccsid
            res = _batch.decode_pcf_batch(bodies, **kw)
            params = res.parameters
            key_col = pa.array([keys[i] for i in members], pa.int64()).take(params.column("record"))
            arrays = [key_col] + [params.column(f.name) for f in self.pcf_schema if f.name != "message_key"]
            self.write_pcf(pa.Table.from_arrays(arrays, schema=self.pcf_schema))

    def _msmq_part(self, part: pa.Table) -> pa.Table:
        import pyarrow.compute as pc

        from .msmq.constants import MQMSG_CLASS_NAMES

        table = _batch.decode_msmq_batch(part.column("_data").combine_chunks(), impl=self.options.impl)
        decoded = {}
        for name in table.schema.names:
            if name not in _BATCH_ONLY:
                decoded[name if name.startswith("msmq_") else "msmq_" + name] = table.column(name)
        failed = pc.is_valid(table.column("error_structure"))
        decoded["error"] = pc.if_else(failed, pc.fill_null(table.column("error_reason"), "decode error"),
                                      pa.scalar(None, pa.string()))
        for name in ("error_structure", "error_field", "error_offset"):
            decoded[name] = table.column(name)
        for short, long_name in _MSMQ_SHORT.items():
            decoded[short] = decoded.get(long_name)
        qm, mid = decoded.get("msmq_source_qm"), decoded.get("msmq_user_message_id")
        if qm is not None and mid is not None:
            decoded["msmq_message_id"] = pc.binary_join_element_wise(qm, mid.cast(pa.string()), "\\")
        cls = decoded.get("msmq_class")
        if cls is not None:
            codes = sorted(MQMSG_CLASS_NAMES)
            where = pc.index_in(cls.cast(pa.int64()), value_set=pa.array(codes, pa.int64()))
            decoded["msmq_class_name"] = pa.array([MQMSG_CLASS_NAMES[c] for c in codes], pa.string()).take(where)
        return self._common(part, {k: v for k, v in decoded.items() if v is not None})

    def _rest_part(self, part: pa.Table) -> pa.Table:
        """Rows no batch decoder sees: framing errors (already carrying their
        error) and MSMQ pings (decoded one by one: they are few)."""
        import pyarrow.compute as pc

        ping = part.column("_ping").to_pylist()
        if not any(ping):
            return self._common(part, {})
        from .msmq import decode_ping

        cols = {name: part.column(name).to_pylist() for name in ("error", "error_structure", "error_field", "error_offset")}
        data = part.column("_data")
        for i, is_ping in enumerate(ping):
            if is_ping:
                try:
                    decode_ping(data[i].as_py())
                except Exception as exc:  # DecodeError
                    cols["error"][i] = str(exc)
                    cols["error_structure"][i] = getattr(exc, "structure", None)
                    cols["error_field"][i] = getattr(exc, "field", None)
                    cols["error_offset"][i] = getattr(exc, "offset", None)
        decoded = {"error": pa.array(cols["error"], pa.string()),
                   "error_structure": pa.array(cols["error_structure"], pa.string()),
                   "error_field": pa.array(cols["error_field"], pa.string()),
                   "error_offset": pa.array(cols["error_offset"], pa.int64())}
        return self._common(part, decoded)

    # ---------------------------------------------------------- summary
    def report(self) -> dict:
        return {
            "summary": dict(self.summary),
            "messages_by_protocol_and_kind": {"%s/%s" % k: v for k, v in sorted(self.by_kind.items())},
            "captures": self.capture_reports,
        }


#: the pending rows of one chunk, before decoding: the common columns and the
#: message bytes (the compiled core produces these columns directly)
BLOCK_SCHEMA = pa.schema(
    [f for f in MESSAGES_COMMON if f.name in (
        "message_key", "capture", "frame", "ts", "src_ip", "src_port", "dst_ip", "dst_port", "tcp_stream",
        "stream_offset", "protocol", "kind", "error", "error_structure", "error_field", "error_offset", "length")]
    + [pa.field("_data", pa.large_binary()), pa.field("_md_only", pa.bool_()), pa.field("_ping", pa.bool_())]
)


def _rows_block(rows: list) -> pa.Table:
    """Row dicts (the pure pipeline's pending rows) as a BLOCK_SCHEMA table."""
    arrays = []
    for f in BLOCK_SCHEMA:
        name = f.name
        if name in ("_md_only", "_ping"):
            arrays.append(pa.array([bool(r.get(name)) for r in rows], pa.bool_()))
        else:
            arrays.append(pa.array([r[name] for r in rows], f.type))
    return pa.Table.from_arrays(arrays, schema=BLOCK_SCHEMA)


def _trimmer():
    """glibc's ``malloc_trim``, or None elsewhere."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _trimmer() if sys.platform.startswith("linux") else None


def _release_memory() -> None:
    """Give the heap's free pages back after a row group: a chunk's copies
    (rows, Arrow columns, Parquet pages) are freed by then, and on captures of
    many damaged connections glibc otherwise keeps the fragmented heap
    (docs/ROBUSTNESS-captures.md: 890 -> 615 MiB peak on 200 MB of garbage,
    with 16 MiB chunks)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _core_module(impl: Optional[str]):
    """The compiled capture core, or None (pure pipeline): not built,
    ``impl="py"``, or ``MQCODEC_PURE=1``."""
    if impl == "py" or os.environ.get("MQCODEC_PURE") == "1":
        return None
    try:
        from ._ext import capture_core
    except ImportError:
        if impl == "c":
            raise
        return None
    return capture_core


def _rereadable(source) -> bool:
    """The compiled path reads a capture twice when connections need the
    pure pipeline's replay: paths, bytes and seekable files can be."""
    if isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview)):
        return True
    try:
        return bool(source.seekable())
    except (AttributeError, ValueError, OSError):
        return False


def _reopen(source):
    """``source`` ready to be read from its start (a seekable file is rewound)."""
    if isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview)):
        return source
    seek = getattr(source, "seek", None)
    if seek is not None:
        try:
            if source.seekable() and source.tell() != 0:
                seek(0)
        except (ValueError, OSError):
            pass
    return source


def _frames_until_error(reader, file_error: list):
    """The reader's frames; a DecodeError in the file structure after the first
    frame is appended to ``file_error`` and ends the iteration (one in the file
    header, before any frame, propagates: the input is not a readable capture)."""
    from .errors import DecodeError

    it = iter(reader)
    while True:
        try:
            frame = next(it)
        except StopIteration:
            return
        except DecodeError as exc:
            if reader.frames == 0:
                raise
            file_error.append(exc)
            return
        yield frame


def _attr(ev, *names):
    for n in names:
        if hasattr(ev, n):
            return getattr(ev, n)
    return None


def _set_error(row: dict, exc: Exception) -> None:
    row["error"] = str(exc)
    row["error_structure"] = getattr(exc, "structure", None)
    row["error_field"] = getattr(exc, "field", None)
    row["error_offset"] = getattr(exc, "offset", None)


def convert(inputs: Iterable, outdir: str, options: ConvertOptions | None = None, *, progress: bool = False) -> dict:
    """Convert captures to ``outdir/messages.parquet`` and
    ``outdir/pcf_parameters.parquet``; returns the summary report."""
    os.makedirs(outdir, exist_ok=True)
    mschema, pschema = messages_schema(), pcf_parameters_schema()
    mw = pq.ParquetWriter(os.path.join(outdir, "messages.parquet"), mschema, compression="zstd")
    pw = pq.ParquetWriter(os.path.join(outdir, "pcf_parameters.parquet"), pschema, compression="zstd")
    conv = Converter(mw.write_table, pw.write_table, options)
    try:
        for index, path in enumerate(inputs):
            bar = _Progress(path) if progress else None
            conv.add_capture(path, progress=bar, index=index)
            if bar is not None:
                bar.done()
    finally:
        mw.close()
        pw.close()
    return conv.report()


# the progress bar of one capture (only used when stderr is a terminal): a tqdm
# bar over the file's bytes, fed by both engines (codec/progress.py)
from .progress import CaptureProgress as _Progress  # noqa: E402
