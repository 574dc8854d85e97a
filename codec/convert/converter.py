"""Captured traffic in, Parquet tables out: the main job of mqcodec.

    frames ─ CaptureProcessor ─► TCP stream events ─► one framer per connection
    direction (IBM MQ TSH framing on 1414, MSMQ PacketSize framing on 1801,
    or detected by content) ─► protocol messages ─► batch decoders (compiled
    core when built) ─► the tables of mqcodec.convert.tables (mq_messages, msmq_packets, pcf_parameters);
    every IBM MQ unit ─► mqcodec.ibmmq.calls (decode) ─► mqcodec.ibmmq.conversation
    (pairing, queues) ─► mq_calls

Nothing is dropped silently: a message that spans a capture gap, a framing
error or a decode error becomes a row with ``error`` set (and its bytes in
``raw`` when ``--raw``, always for error rows); frames that are not decoded
are counted in the summary.  Memory is bounded: messages are decoded and
written in chunks (the sink makes row groups of them), and the reassembly and
framing layers bound their own buffers.

``Converter`` is I/O-free apart from the sink it is given; the local engine
(:func:`mqcodec.convert.convert`) and the Spark engine's tasks drive it.
"""
from __future__ import annotations

import bisect
import functools
import os
import time
from collections import Counter
from typing import Any, Optional

import pyarrow as pa

from .. import _impl
from .. import batch as _batch
from .. import arrow_kernels as _k
from . import heap as _heap
from . import keys as _keys
from . import tables as _tables
from .options import MSMQ_PING_PORT, ConvertOptions, reassembly_options
from .protocols import detect_protocol, new_framer, port_protocol
from .sources import frames_until_error, reopen
from .tables import BLOCK_SCHEMA, MAX_CONFLICT_RANGES

__all__ = ["Converter", "report_file_structure"]

# ---------------------------------------------------------------------------
# per-direction state
# ---------------------------------------------------------------------------
class _Direction:
    __slots__ = ("protocol", "framer", "marks", "src", "sport", "dst", "dport", "stream", "undetected",
                 "end", "held", "conflicts", "direction", "last_unit", "opened")

    def __init__(self, conn, direction):
        from ..capture import CLIENT_TO_SERVER

        self.protocol: Optional[str] = None
        self.framer: Any = None  # the direction's stream framer, once its protocol is known
        self.marks: list = []          # (stream offset, frame number, ts_ns, bytes captured), ascending
        if direction == CLIENT_TO_SERVER:
            self.src, self.sport, self.dst, self.dport = conn.client, conn.client_port, conn.server, conn.server_port
        else:
            self.src, self.sport, self.dst, self.dport = conn.server, conn.server_port, conn.client, conn.client_port
        self.stream = conn.stream
        self.direction = int(direction)
        self.undetected = 0
        # overlap conflicts (docs/ROBUSTNESS.md): rows ending within the reassembler's
        # OVERLAP_WINDOW of the stream end are held, so a differing copy of their bytes
        # that arrives later still flags them; conflict ranges not yet framed
        self.end = 0                   # stream offset after the last delivered byte or gap
        self.held: list = []           # rows not yet pending, in stream order
        self.conflicts: list = []      # [start, end) ranges with a differing copy
        self.last_unit = None  # (stream offset, call_key, attribution) of the last MQ unit: its Message's
        self.opened: Optional[int] = None  # the frame that opened the connection (message_key, see MessageKeys)

    def mark(self, offset: int, frame: int, ts: int, captured: bool = True) -> None:
        """Stream bytes from ``offset`` on came in ``frame`` (``captured`` False:
        a gap, whose missing bytes ``frame`` revealed).  A mark also counts
        the rows and the units located in it (their ranks in message_key and
        call_key)."""
        self.marks.append([offset, frame, ts, captured, 0, 0])

    def locate(self, offset: int) -> Optional[list]:
        """The mark of stream byte ``offset``: ``[offset, frame, ts, captured,
        rows, units]`` (``captured`` False: the byte is in a gap, ``frame``
        revealed it), None before the first mark; forgets the marks no row
        can start in any more (:func:`mqcodec.convert.keys.marks_to_drop`:
        the framers never look back, except to their open units)."""
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
            return None
        mark = marks[i]
        if i > _keys.KEY_MARKS_KEPT:
            oldest = getattr(self.framer, "oldest_open", None)
            j = i
            if oldest is not None and oldest < offset:
                j = bisect.bisect_right(marks, oldest, key=_mark_offset) - 1
            drop = _keys.marks_to_drop(i, j)
            if drop:
                del marks[:drop]
        return mark

    def rank(self, mark: Optional[list], unit: bool = False) -> Optional[int]:
        """The next rank of a row (``unit``: of an IBM MQ unit, call_key) in
        ``mark`` (:meth:`locate`); None when its first byte was not captured."""
        if mark is None or not mark[3]:
            return None
        k = 5 if unit else 4
        r = mark[k]
        mark[k] = r + 1
        return _keys.check_rank(mark[1], r)


def _mark_offset(mark: list) -> int:
    return mark[0]


#: the mq_messages link columns of a unit when no table needs units read
_NO_LINK = dict.fromkeys(f.name for f in _tables.MQ_LINK)


class Converter:
    """Feed captures, get tables.  ``sink`` is called with ``(table name,
    pa.Table)`` for every chunk of rows of one of the output tables
    (:data:`mqcodec.convert.tables.TABLES`, schemas :func:`mqcodec.convert.tables.table_schema`):
    a :class:`mqcodec.convert.sinks.DatasetSink` writes them as Parquet datasets
    (what :func:`mqcodec.convert.convert` does), a :class:`mqcodec.convert.sinks.TableCollector`
    keeps them in memory.

    The compiled engine's driver (:mod:`mqcodec.convert.compiled`) works on a
    converter through its public members only (tests/test_layers.py): the
    rows waiting for their chunk (``pending``, ``pending_bytes``, ``blocks``,
    ``block_rows``, ``call_rows``), the capture's ``keys`` and ``made``, the
    pure pipeline's entry points (``pure_pipeline``, ``on_events``,
    ``add_capture_pure``, ``unit_batch``, ``end_capture``), ``opening_frames``
    and ``opening_frames``."""

    def __init__(self, sink: _tables.Sink, options: ConvertOptions | None = None, *, render_thread: bool = False):
        self.options = options or ConvertOptions()
        self.sink = sink
        _heap.tune()   # this process converts: freed buffers stay in the heap for the next chunk
        # render_thread: each chunk is decoded, assembled and given to the sink by a thread of
        # its own (one chunk at a time, in order; at most one more waits), while this thread
        # reads the next; :meth:`drain` waits for it
        self._renderer: Any = None
        self._render_failure: Optional[BaseException] = None
        if render_thread:
            from .sinks import Worker

            self._renderer = Worker("mqcodec-render", max_pending=1)
        self.summary: Counter = Counter()
        self.by_kind: Counter = Counter()
        self.capture_reports: list[dict] = []
        self.keys: Any = None  # the capture's keys.MessageKeys
        self.made = 0          # message rows made (keyed), all captures
        self._conn_opened: dict = {}  # ConnKey -> the frame that opened it, while a direction is open
        self._closes: Counter = Counter()  # ConnKey -> its directions closed
        self.pending: list[dict] = []    # rows of the pure pipeline, one dict each
        # rows of the compiled core, a table per batch (BLOCK_SCHEMA), or (table, the numpy mask
        # of its rows written) where it holds rows held back too (compiled._Held.settle)
        self.blocks: list = []
        self.block_rows = 0
        self._flushes = 0
        self.pending_bytes = 0
        self._mq_ports = frozenset(self.options.mq_ports)
        self._conflict_streams: Counter = Counter()  # tcp_stream -> conflicting overlaps (this capture)
        self._msmq_ports = frozenset(self.options.msmq_ports)
        # the IBM MQ units are read (decode_unit) and paired (CallTracker) for mq_calls and for
        # the link columns of mq_messages; with neither table they are framed only
        self._units_wanted = self.options.wants(_tables.MQ_CALLS) or self.options.wants(_tables.MQ_MESSAGES)
        # the column selection: each table's schema as written, and the columns built for it
        # (those and the ones the summary counts, dropped after counting)
        self._schemas = {t: self.options.schema(t) for t in _tables.TABLES}
        self._built = {t: self._schemas[t] if _tables.chosen_columns(t, self.options.columns) is None
                       else _tables.output_schema(t, self.options.columns + tuple(t + "." + c for c in counted))
                       for t, counted in ((_tables.MQ_MESSAGES, ("kind", "error")),
                                          (_tables.MSMQ_PACKETS, ("kind", "error")),
                                          (_tables.MQ_CALLS, ("segment_type_name", "completion_code",
                                                              "reason_name")))}
        self._msmq_columns = _msmq_batch_columns(self._built[_tables.MSMQ_PACKETS].names)
        # mq_calls: rows ready to write, requests held until their reply (or the end of
        # the capture), the conversation state machine, and call_key ranks per direction
        # (_calls: rows of _unit, dicts, or of _unit_batch: (batch table, row indices,
        # replied, reply_call_key); _held: call_key -> a dict or (batch table, row index))
        self._calls: list = []
        self.call_rows = 0   # rows in _calls (an entry of a unit batch holds many)
        self._held: dict[int, Any] = {}
        self._tracker: Any = None  # the capture's ibmmq.conversation.CallTracker
        self._capture_index = -1
        self.opening_frames: Optional[list] = None  # add_frames: the frames that opened connections
        self.calls_by_type: Counter = Counter()
        self.failed_by_reason: Counter = Counter()

    # -------------------------------------------------------------- input
    def add_capture(self, source, name: Optional[str] = None, progress=None, *, index: Optional[int] = None) -> None:
        """Convert one capture. ``index``: its position in the job's input
        list (the high bits of ``message_key`` and ``call_key``); default: the next one.

        The compiled capture core converts it when it is built and
        ``options.impl`` is not ``"py"``; otherwise, or where the core
        declines its file header, the pure pipeline.  Either way the
        source is read once."""
        name = name or (os.path.basename(source) if isinstance(source, (str, os.PathLike)) else "capture")
        self._start_capture(len(self.capture_reports) if index is None else int(index))
        core = _core_module(self.options.capture_impl or self.options.impl)
        if core is not None:
            from . import compiled

            source = compiled.add_capture(self, core, source, name, progress)
            if source is None:
                return
        self.add_capture_pure(source, name, progress)

    def not_read(self, source, exc: BaseException, *, index: Optional[int] = None) -> None:
        """Record that ``source`` could not be read as a capture (missing,
        unreadable, or its file header is not a capture's)."""
        name = os.path.basename(source) if isinstance(source, (str, os.PathLike)) else "capture"
        self.summary["captures not read"] += 1
        report: dict[str, Any] = {"capture": name, "error": str(exc), "stats": {}}
        if index is not None:
            report["index"] = index
        self.capture_reports.append(report)

    def _start_capture(self, index: int, *, same_keys: bool = False) -> None:
        """The per-capture state, for capture ``index`` (``same_keys``: keep
        the message_key rank state of the last call for this index)."""
        if not (same_keys and self._capture_index == index):
            self.keys = _keys.MessageKeys(index)
        self._capture_index = index
        self._tracker = None   # made by the capture's first IBM MQ unit (_calls_tracker)

    def _calls_tracker(self):
        """The capture's conversation state machine, made when its first IBM MQ
        unit comes (a capture without one does not import the IBM MQ call
        declarations): the tracker compiled (mqcodec._ext.conversation, the same
        source) with the compiled core, else the pure one."""
        if self._tracker is None:
            from ..ibmmq import conversation

            tracker = _impl.pick("conversation", self.options.capture_impl or self.options.impl,
                                 what="conversation tracker") or conversation
            self._tracker = tracker.CallTracker(max_connections=self.options.max_connections)
        return self._tracker

    def add_frames(self, frames, name: str, *, index: int = 0) -> list[int]:
        """Convert frames of a capture that are not the whole capture -- one
        connection's, or the frames of several connections (:func:`mqcodec.
        capture.connections.split_by_connection`) -- as part of capture ``index`` named ``name``: the rows are those the
        whole capture gives for these connections, except that ``tcp_stream``
        is the number of the frame that opened the connection.  Returns those
        frame numbers (one per connection opened), from which
        :func:`mqcodec.capture.connections.stream_indices` makes the
        capture-wide ``tcp_stream``.  No global byte budget applies across
        calls.  ``frames``: ``Frame`` objects, or Arrow record batches of
        frames (:func:`mqcodec.convert.spool.spool`).

        The compiled capture core converts them when it is built and
        ``options.impl`` is not ``"py"``: they are spooled as a pcap (in
        memory, or a temporary file past 8 MiB) with their numbers beside."""
        self._start_capture(index, same_keys=True)
        opened: list[int] = []
        self.opening_frames = opened
        spooled = numbers = None
        try:
            core = _core_module(self.options.capture_impl or self.options.impl)
            if core is not None:
                import itertools

                from . import compiled, spool

                spooled, numbers, rest = spool.spool(frames)
                if rest is None:
                    if compiled.add_capture(self, core, spooled, name, numbers=numbers) is None:
                        self.capture_reports[-1]["index"] = index
                        return opened
                    rest = iter(())   # declined before producing anything: the pure pipeline
                frames = itertools.chain(spool.spooled_frames(spooled, numbers) if len(numbers) else (), rest)
            else:
                from .spool import as_frames

                frames = as_frames(frames)
            proc = self.pure_pipeline(frames, name, streams_by_frame=True)
        finally:
            self.opening_frames = None
            if spooled is not None:
                spooled.close()
            if numbers is not None:
                numbers.close()
        report = proc.report()
        report["capture"] = name
        report["index"] = index
        self._report_conflicts(report)
        self._capture_done(report)
        return opened

    def add_capture_pure(self, source, name: str, progress=None) -> None:
        """Convert the capture ``source`` with the pure pipeline."""
        from ..capture import open_capture

        reader = open_capture(reopen(source))
        if progress is not None and hasattr(progress, "attach"):
            progress.attach(reader)  # the bar reads the file position from the reader
        file_error: list = []
        frames = frames_until_error(reader, file_error)
        proc = self.pure_pipeline(frames, name, progress)
        report = proc.report()
        report["capture"] = name
        self.end_capture(report, reader, file_error)

    def pure_pipeline(self, frames, name: str, progress=None, *, streams_by_frame: bool = False):
        """Frames -> CaptureProcessor -> framers -> pending rows, under the
        global byte budget, flushing by rows and bytes; returns the processor
        (its report)."""
        from ..capture import CaptureProcessor, StreamClosed
        from ..capture.budget import DEFAULT_LIMIT, ByteBudget

        proc = CaptureProcessor(**reassembly_options(self.options), streams_by_frame=streams_by_frame)
        dirs: dict = {}
        self._conn_opened, self._closes = {}, Counter()
        budget = ByteBudget(self.options.buffer_budget or DEFAULT_LIMIT)
        limit_rows, limit_bytes = self.options.chunk_messages, self.options.chunk_bytes
        for frame in frames:
            if progress is not None:
                progress(frame)
            self.on_events(proc.feed(frame), name, dirs)
            if budget.charge(len(frame.data)):   # once per budget.slack bytes of input
                for d in budget.enforce(proc.tcp, dirs, lambda evs: self.on_events(evs, name, dirs),
                                        frame_number=frame.number, ts_ns=frame.ts_ns):
                    self._drain(name, d)
            if len(self.pending) + self.block_rows + self.call_rows >= limit_rows \
                    or self.pending_bytes >= limit_bytes:
                self.flush()
        for ev in proc.close():
            self.on_events((ev,), name, dirs, gaps_only=type(ev) is not StreamClosed)
            if self.pending_bytes >= limit_bytes:
                self.flush()
        for d in dirs.values():
            self._release(d, everything=True)
            if d.undetected:
                self.summary["bytes in streams of no known protocol"] += d.undetected
        for k in ("budget cuts", "bytes cut by the budget"):
            if budget.stats[k]:
                self.summary[k] += budget.stats[k]
        return proc

    def end_capture(self, report: dict, reader, file_error: list) -> None:
        inner = getattr(reader.parser, "inner", None)
        report_file_structure(report, self.summary, file_error=str(file_error[0]) if file_error else None,
                              truncation=None if reader.truncation is None else reader.truncation._asdict(),
                              skipped_blocks=sum((getattr(inner, "skipped_blocks", None) or {}).values()),
                              impossible_timestamps=getattr(inner, "impossible_timestamps", 0))
        self._report_conflicts(report)
        self._capture_done(report)

    def _capture_done(self, report: dict) -> None:
        """A capture (or add_frames' part of one) ends: its report and frame
        counters kept, its waiting requests written, its rows flushed."""
        self.capture_reports.append(report)
        self.summary["frames"] += report["stats"].get("frames", 0)
        self.summary["frames skipped"] += report["stats"].get("skipped", 0)
        self.summary["frames malformed"] += report["stats"].get("malformed", 0)
        self._end_calls()
        self.flush()

    def _report_conflicts(self, report: dict) -> None:
        if self._conflict_streams:
            report["conflicting overlaps by tcp_stream"] = dict(sorted(self._conflict_streams.items(),
                                                                      key=lambda kv: (kv[0] is None, kv[0] or 0)))
            self.summary["connections with conflicting overlaps"] += len(self._conflict_streams)
            self._conflict_streams = Counter()

    def on_events(self, events, name: str, dirs: dict, *, gaps_only: bool = False) -> None:
        """The pure pipeline's transport events -> framers -> pending rows."""
        from ..capture import Gap, StreamClosed, StreamData, UDPDatagram
        from ..capture.tcp import OverlapConflict, StreamOpened

        mq_ports = self._mq_ports
        msmq_ports = self._msmq_ports
        for ev in events:
            t = type(ev)
            if gaps_only:
                if t is Gap:
                    self.summary["gaps"] += 1
                    self.summary["gap bytes"] += ev.length
                elif t is OverlapConflict:
                    self._conflict(dirs.get((ev.conn, ev.direction)), ev)
                continue
            if t is StreamOpened:
                self._conn_opened[ev.conn] = ev.frame_number   # message_key of rows before any captured byte
                if self.opening_frames is not None:
                    self.opening_frames.append(ev.frame_number)
            elif t is StreamData:
                d = self._direction(dirs, ev.conn, ev.direction, mq_ports, msmq_ports)
                d.end = ev.offset + len(ev.data)
                if d.protocol is None:
                    if not self.options.detect_by_content or self._detect(d, ev.data, ev.offset) is None:
                        d.undetected += len(ev.data)
                        continue  # no mark: nothing will ask where these bytes were
                d.mark(ev.offset, ev.frame_number, ev.ts_ns)
                d.framer.feed(ev.data)
                self._drain(name, d)
            elif t is Gap:
                d = self._direction(dirs, ev.conn, ev.direction, mq_ports, msmq_ports)
                d.end = ev.offset + ev.length
                self.summary["gaps"] += 1
                self.summary["gap bytes"] += ev.length
                if d.framer is not None:
                    d.mark(ev.offset, ev.frame_number, ev.ts_ns, False)
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
                if d is not None:
                    self._release(d, everything=True)
                    self.keys.forget(d.stream, d.direction)
                self._closes[ev.conn] += 1
                if self._closes[ev.conn] == 2:   # both directions closed
                    del self._closes[ev.conn]
                    self._conn_opened.pop(ev.conn, None)
            elif t is OverlapConflict:
                self._conflict(self._direction(dirs, ev.conn, ev.direction, mq_ports, msmq_ports), ev)
            elif t is UDPDatagram:
                if MSMQ_PING_PORT in (ev.sport, ev.dport):
                    self._ping(name, ev)

    def count_conflicts(self, stream, n: int = 1) -> None:
        """``n`` differing copies of stream bytes in TCP stream ``stream`` (the
        summary's ``conflicting overlaps``, the capture report's by stream)."""
        self.summary["conflicting overlaps"] += n
        if stream is not None:
            self._conflict_streams[stream] += n

    def _conflict(self, d: Optional[_Direction], ev) -> None:
        """A differing copy of stream bytes [ev.offset, +ev.length): counted per
        connection; the rows holding those bytes (held or still to come) are flagged."""
        if d is None:
            self.summary["conflicting overlaps"] += 1
            return
        self.count_conflicts(d.stream)
        start, end = ev.offset, ev.offset + ev.length
        for row in d.held:
            if _row_start(row) < end and _row_end(row) > start:
                row["overlap_conflict"] = True
        c = d.conflicts
        c.append([start, end])
        if len(c) > MAX_CONFLICT_RANGES:  # bounded: merge the two latest (flags a little more, never less)
            last = c.pop()
            c[-1] = [min(c[-1][0], last[0]), max(c[-1][1], last[1])]

    def _release(self, d: _Direction, everything: bool = False) -> None:
        """Held rows whose bytes end before the overlap window (or all of them) become
        pending rows."""
        held = d.held
        if not held:
            return
        from ..capture.tcp import OVERLAP_WINDOW

        limit = d.end - OVERLAP_WINDOW
        i = 0
        while i < len(held) and (everything or _row_end(held[i]) <= limit):
            row = held[i]
            self.pending.append(row)
            self.pending_bytes += len(row["_data"])
            i += 1
        if i:
            del held[:i]

    def _direction(self, dirs, conn, direction, mq_ports, msmq_ports) -> _Direction:
        key = (conn, direction)
        d = dirs.get(key)
        if d is None:
            d = dirs[key] = _Direction(conn, direction)
            d.opened = self._conn_opened.get(conn)
            proto = port_protocol(conn, mq_ports, msmq_ports)
            if proto is not None:
                self._start(d, proto)
        return d

    def _detect(self, d: _Direction, data: bytes, offset: int) -> Optional[str]:
        proto = detect_protocol(data)
        if proto is not None:
            self._start(d, proto, offset)
        return proto

    @staticmethod
    def _start(d: _Direction, protocol: str, offset: int = 0) -> None:
        """Frame ``d`` as ``protocol`` from stream ``offset`` on (0 for a
        direction known by its port; the first recognised byte when detected
        by content: the framers report stream offsets from there)."""
        d.protocol = protocol
        d.framer = new_framer(protocol, offset, units=True)

    # ---------------------------------------------------------- framing
    def _drain(self, capture: str, d: _Direction) -> None:
        for ev in d.framer:  # both framers iterate their ready events, stopping at NEED_DATA/CLOSED
            kind = type(ev).__name__
            if kind == "Unit":
                mark = d.locate(ev.offset)
                frame, ts = (mark[1], mark[2]) if mark is not None else (None, None)
                d.last_unit = (ev.offset,) + self._unit(capture, d.stream, d.direction, d.src, d.sport, d.dst,
                                                        d.dport, ev.offset, frame, ts, d.rank(mark, unit=True),
                                                        ev.data, ev.length)
                continue
            if kind in ("Message", "Packet"):   # the unit events (mqcodec.stream_events)
                row = self._add(capture, d, ev.offset, d.protocol, ev.kind, ev.data)
                if d.last_unit is not None and d.last_unit[0] == ev.offset:
                    row.update(d.last_unit[2])
                if kind == "Message" and ev.md_only:
                    # the unit carries the MQMD but no data (an MQPUT_REPLY repeats the
                    # MQMD, not the data): decode the MQMD alone, follow no chain
                    row["_md_only"] = True
            elif kind == "FramingError":
                self.summary["framing errors"] += 1
                # the row's length: the unit's extent in the stream; its raw bytes may have been
                # kept only in part (an IBM MQ framer keeps at most max_raw; a budget cut keeps none)
                row = self._add(capture, d, ev.offset, d.protocol, "framing error", ev.raw, ev.end)
                row["error"] = ev.reason or "framing error"
                row["error_structure"] = ev.structure
                row["error_field"] = ev.field
            elif kind == "Resynchronised":
                self.summary["resynchronisations"] += 1
                self.summary["bytes skipped by resynchronisation"] += ev.skipped
            # segments and other events are not messages
        self._release(d)

    def _add(self, capture, d, offset, protocol, kind, data, end: Optional[int] = None) -> dict:
        """A row for the direction's next message, with its key (rows come in
        the direction's stream order); held until the overlap window has
        passed its bytes (_release).  ``end``: where the row's extent in the
        stream ends when it passes its bytes (a FramingError's)."""
        mark = d.locate(offset if offset is not None else 0)
        frame, ts = (mark[1], mark[2]) if mark is not None else (None, None)
        self.made += 1
        row = {
            "message_key": self.keys.tcp(d.stream, d.direction, frame, d.rank(mark), d.opened),
            "capture": capture, "frame": frame, "ts": ts,
            "src_ip": d.src, "src_port": d.sport, "dst_ip": d.dst, "dst_port": d.dport,
            "tcp_stream": d.stream, "stream_offset": offset, "protocol": protocol,
            "kind": str(kind) if kind is not None else None, "error": None, "error_structure": None,
            "error_field": None, "error_offset": None, "length": len(data), "_data": bytes(data),
            "overlap_conflict": False,
        }
        if end is not None and offset is not None:
            row["length"] = max(len(data), end - offset)
        if d.conflicts:
            start = offset if offset is not None else 0
            # ranges before this row's start belong to rows made already
            d.conflicts = [c for c in d.conflicts if c[1] > start]
            stop = start + row["length"]   # the row's extent (an error row's may pass its raw bytes)
            if any(c[0] < stop and c[1] > start for c in d.conflicts):
                row["overlap_conflict"] = True
        d.held.append(row)
        return row

    # ---------------------------------------------------------- mq_calls
    def _unit(self, capture, stream, direction, src, sport, dst, dport, offset, frame, ts, rank, data, length):
        """One IBM MQ unit -> a mq_calls row (written now, or held until its
        reply); returns (call_key, the mq_messages link columns)."""
        if not self._units_wanted:   # no table made of units: neither read nor paired
            return None, _NO_LINK
        from ..ibmmq.calls import decode_unit

        call_key = self.keys.tcp(stream, direction, frame, rank)
        cols = decode_unit(data, length)
        att = self._calls_tracker().unit(call_key, stream, ts, cols)
        row = cols
        row.update(call_key=call_key, capture=capture, frame=frame, src_ip=src, src_port=sport,
                   dst_ip=dst, dst_port=dport, tcp_stream=stream, stream_offset=offset, length=length,
                   queue_name=att.queue_name, queue_manager=att.queue_manager,
                   channel_name=att.channel_name, user_id=att.user_id, appl_name=att.appl_name,
                   request_call_key=att.request_call_key,
                   latency_us=None if att.latency_ns is None else att.latency_ns // 1000)
        if ts is not None and ts != _TS_UNKNOWN:  # as _split_ns: microseconds towards the past, the nanoseconds left
            row["ts"], row["ts_nanos"] = divmod(ts, 1000)
        if row.get("error") is not None or self.options.raw:
            row["raw"] = bytes(data)
            self.pending_bytes += len(data)
        if att.request_call_key is not None:
            req = self._held.pop(att.request_call_key, None)
            if req is not None:
                self._calls.append(_replied(req, True, call_key))
                self.call_rows += 1
        for gone in att.given_up:
            req = self._held.pop(gone, None)
            if req is not None:
                self._calls.append(_replied(req, False, None))
                self.call_rows += 1
        if att.waiting:
            self._held[call_key] = row
        else:
            self._calls.append(row)
            self.call_rows += 1
        link = {"call_key": call_key, "queue_name": att.queue_name, "queue_manager": att.queue_manager,
                "remote_q_name": cols.get("remote_q_name"), "remote_q_mgr_name": cols.get("remote_q_mgr_name"),
                "channel_name": att.channel_name, "user_id": att.user_id, "appl_name": att.appl_name}
        return call_key, link

    def unit_batch(self, capture, data, starts, lens, full, conn, direction, conns, stream, offset, frame,
                    rank, ts) -> pa.Table:
        """Many IBM MQ units (the compiled core's unit records of one batch,
        in event order) -> mq_calls rows, as :meth:`_unit` makes them one at a
        time: decoded at once (:func:`mqcodec.ibmmq.calls_batch.decode_units`, compiled
        as mqcodec._ext.calls_batch with the compiled core),
        paired and attributed at once (:meth:`CallTracker.units`), their
        columns kept as one table; the rows written or held are indices into
        it.  ``frame`` and ``ts`` are -1 where unknown (``ts``: any negative);
        ``rank``: each unit's rank in its frame (call_key).
        Returns each unit's mq_messages link columns
        (:data:`mqcodec.convert.tables.MQ_LINK`) as a table."""
        import numpy as np

        n = len(starts)
        if not self._units_wanted:   # no table made of units: neither read nor paired
            return pa.table({f.name: pa.nulls(n, f.type) for f in _tables.MQ_LINK})
        from ..ibmmq import calls_batch
        from ..ibmmq.conversation import TRACKED

        reader = _impl.pick("calls_batch", self.options.capture_impl or self.options.impl,
                            what="IBM MQ units reader") or calls_batch
        decoded = reader.decode_units(data, starts, lens, full)
        stream_l = stream.tolist()
        # call_key: the capture, the unit's first frame and its rank among the units of its
        # direction located there (counted by the core's marks, as _unit's by _Direction.rank)
        keys_a = self.keys.tcp_batch(stream, direction, frame, rank)
        keys = keys_a.tolist()
        known_ts = ts >= 0
        ts_l = ts.tolist() if known_ts.all() else [t if t >= 0 else None for t in ts.tolist()]
        att = self._calls_tracker().units(keys, stream_l, ts_l, {k: _pylist(decoded.column(k)) for k in TRACKED})
        qn, qm, rck = att.queue_name, att.queue_manager, att.request_call_key
        lat = [None if x is None else x // 1000 for x in att.latency_ns]
        # where each unit was seen, as columns
        seen, at = np.unique(conn, return_inverse=True)
        where_seen = _tables.where_seen([conns[c] for c in seen.tolist()], at, direction)
        error = decoded.column("error")
        raw_rows = np.ones(n, dtype=bool) if self.options.raw else _k.is_valid(error).to_numpy(zero_copy_only=False)
        if raw_rows.any():
            self.pending_bytes += int(lens[raw_rows].sum())
        pick = np.flatnonzero(raw_rows)
        raw_bytes, raw_offsets = _k.gather_slices(np.frombuffer(data, dtype=np.uint8), starts[pick], lens[pick])
        raw_part = _k.cast(pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(pick), [
            None, pa.py_buffer(raw_offsets), pa.py_buffer(raw_bytes)]), pa.binary())
        where = np.full(n, -1, dtype=np.int64)
        where[pick] = np.arange(len(pick))
        extra = {
            "call_key": _k.from_numpy(keys_a, pa.int64()),
            "capture": _tables.words(np.zeros(n, dtype=np.int32), [capture]),
            "frame": _k.from_numpy(frame, mask=frame < 0),
            "ts": _k.cast(_k.from_numpy(ts // 1000, mask=~known_ts), pa.timestamp("us", tz="UTC")),
            "ts_nanos": _k.from_numpy(ts % 1000, pa.int16(), mask=~known_ts),
            **where_seen,
            "tcp_stream": _k.from_numpy(stream), "stream_offset": _k.from_numpy(offset),
            "length": _k.from_numpy(full),
            "queue_name": pa.array(qn, pa.string()), "queue_manager": pa.array(qm, pa.string()),
            "channel_name": pa.array(att.channel_name, pa.string()), "user_id": pa.array(att.user_id, pa.string()),
            "appl_name": pa.array(att.appl_name, pa.string()),
            "request_call_key": pa.array(rck, pa.int64()), "latency_us": pa.array(lat, pa.int64()),
            "raw": _k.take(raw_part, _k.from_numpy(where, mask=where < 0)),
        }
        batch_schema = _calls_batch_schema()
        decoded_names = set(decoded.schema.names)
        arrays = []
        for f in batch_schema:
            a = extra.get(f.name)
            if a is None:
                a = decoded.column(f.name) if f.name in decoded_names else pa.nulls(n, f.type)
            arrays.append(a if a.type == f.type else _k.cast(a, f.type))
        table = pa.Table.from_arrays(arrays, schema=batch_schema)
        # rows complete now are written at the next flush, requests replied in this batch
        # with their reply's key; the others wait for their reply (held, one by one)
        waits = np.array(att.waiting, dtype=bool)
        rck_a = _k.fill_null(extra["request_call_key"], -1).to_numpy()
        replied = np.zeros(n, dtype=np.int8)            # 0: not a request; 1: replied; 2: waiting; 3: given up
        reply_key = np.full(n, -1, dtype=np.int64)
        replied[waits] = 2
        by_key = np.argsort(keys_a, kind="stable")
        replies = np.flatnonzero(rck_a >= 0)
        at = by_key[np.minimum(np.searchsorted(keys_a, rck_a[replies], sorter=by_key), max(n - 1, 0))]
        here = keys_a[at] == rck_a[replies]             # the request is a row of this batch
        replied[at[here]] = 1
        reply_key[at[here]] = keys_a[replies[here]]
        gone_here = np.isin(keys_a, np.asarray(att.given_up, dtype=np.int64)) & waits if att.given_up else None
        if gone_here is not None:
            replied[gone_here] = 3
        held, calls = self._held, self._calls
        done = np.flatnonzero(replied != 2)
        if len(done):
            calls.append((table, done, _k.from_numpy(replied[done] == 1, mask=replied[done] == 0),
                          _k.from_numpy(reply_key[done], mask=reply_key[done] < 0)))
            self.call_rows += len(done)
        for i in np.flatnonzero(replied == 2).tolist():
            held[keys[i]] = (table, i)
        for i in replies[~here].tolist():               # requests of earlier batches
            req = held.pop(rck[i], None)
            if req is not None:
                calls.append(_replied(req, True, keys[i]))
                self.call_rows += 1
        for gone in att.given_up:
            req = held.pop(gone, None)
            if req is not None:
                calls.append(_replied(req, False, None))
                self.call_rows += 1
        return _k.cast_table(table.select([f.name for f in _tables.MQ_LINK]), pa.schema(_tables.MQ_LINK))

    def _end_calls(self) -> None:
        """End of a capture: requests still waiting were never replied."""
        if self._tracker is not None:
            self._tracker.close()
        self._calls.extend(_replied(req, False, None) for req in self._held.values())
        self.call_rows += len(self._held)
        self._held.clear()

    def _calls_rows(self, rows: list) -> Optional[pa.Table]:
        """A chunk's mq_calls rows as a table (None: none, or the table not made)."""
        if not rows or not self.options.wants(_tables.MQ_CALLS):
            return None
        return _calls_table(rows, self._built[_tables.MQ_CALLS])

    def _write_calls(self, table: Optional[pa.Table]) -> None:
        """A chunk's mq_calls rows (:meth:`_calls_rows`) counted and given to the sink."""
        if table is None:
            return
        names = _k.call("value_counts", [_k.cast(table.column("segment_type_name"), pa.string())])
        for k_, c_ in zip(names.field("values").to_pylist(), names.field("counts").to_pylist()):
            self.calls_by_type[k_] += c_
        failed = _k.fill_null(_k.equal(table.column("completion_code"), pa.scalar(2, pa.int32())), False)
        if _k.call("any", [failed]).as_py():
            reasons = _k.call("value_counts", [_k.fill_null(
                _k.cast(_k.filter(table, failed).column("reason_name"), pa.string()), "-")])
            for k_, c_ in zip(reasons.field("values").to_pylist(), reasons.field("counts").to_pylist()):
                self.failed_by_reason[k_] += c_
        self.summary["calls"] += table.num_rows
        self.sink(_tables.MQ_CALLS, self._chosen(_tables.MQ_CALLS, table))

    def _ping(self, capture, ev) -> None:
        self.made += 1
        self.pending.append({
            "message_key": self.keys.udp(ev.frame_number),
            "capture": capture, "frame": ev.frame_number, "ts": ev.ts_ns,
            "src_ip": ev.src, "src_port": ev.sport, "dst_ip": ev.dst, "dst_port": ev.dport,
            "tcp_stream": None, "stream_offset": None, "protocol": "msmq", "kind": "Ping",
            "error": None, "error_structure": None, "error_field": None, "error_offset": None,
            "length": len(ev.payload), "_data": bytes(ev.payload),
        })

    # ---------------------------------------------------------- decoding
    def flush(self) -> None:
        """Decode the pending messages and hand their rows to the sink.

        Rows are assembled column by column: the common columns of every
        pending row, then, for each protocol, the batch decoder's Arrow
        columns for its rows (nulls for the other protocol's), concatenated
        and put back in the order the rows were made."""
        size = len(self.pending) + self.block_rows + self.call_rows
        rows, self.pending = self.pending, []
        blocks, self.blocks = self.blocks, []
        calls, self._calls = self._calls, []
        self._flushes += 1
        self.block_rows = 0
        self.pending_bytes = 0
        self.call_rows = 0
        # the render thread starts with the first chunk of at least a quarter of chunk_messages
        # rows (before it nothing is queued, so the order holds): a small capture has nothing
        # to overlap
        # the mq_calls rows are put in one table here, on the reading thread, which waits for
        # the render thread otherwise (it bounds the job: --threads 2 on the simulator's
        # 100,000 messages, BENCHMARKS.md); a failure is the rendering's, as in _render
        try:
            calls_table = self._calls_rows(calls)
        except BaseException as exc:
            self._render_failure = exc
            raise
        del calls
        r = self._renderer
        if r is not None and (r.started or size >= self.options.chunk_messages // 4):
            r.submit(self._render, calls_table, rows, blocks)   # waits while one chunk waits already
        else:
            self._render(calls_table, rows, blocks)

    def _render(self, calls: Optional[pa.Table], rows: list, blocks: list) -> None:
        """A chunk's rows decoded, assembled and given to the sink (by the
        render thread, if any: nothing here touches the state the reading
        thread works on; its counters are its own keys).  ``calls``: the
        chunk's mq_calls rows as a table (:meth:`_calls_rows`)."""
        try:
            self._write_calls(calls)
            if rows:
                blocks.append(_rows_block(rows))
            if not blocks:
                return
            written = None   # the mask of the rows written, where a block holds rows held back too
            if any(type(b) is tuple for b in blocks):
                import numpy as np

                written = np.concatenate([np.ones(b.num_rows, dtype=bool) if type(b) is not tuple else b[1]
                                          for b in blocks])
                blocks = [b if type(b) is not tuple else b[0] for b in blocks]
            block = blocks[0] if len(blocks) == 1 else pa.concat_tables(blocks)
            del rows, blocks[:]
            self._write_block(block, written)
            del block
        except BaseException as exc:
            self._render_failure = exc
            raise
        _heap.release()

    def rendering_failed(self, exc: BaseException) -> bool:
        """``exc`` was raised while rendering a chunk (decoding, assembling or
        writing its rows): the job's failure, whichever capture was being read
        when it surfaced, never a capture that could not be read."""
        return exc is self._render_failure

    def drain(self) -> None:
        """Wait until every chunk flushed so far is in the sink (with a render
        thread: raise what rendering raised, unless a flush raised it already)."""
        if self._renderer is not None:
            error = self._renderer.join()
            if error is not None and not self._renderer.reported:
                self._renderer.raise_error()

    def drain_quietly(self) -> None:
        """:meth:`drain` without raising (while another exception is on its way)."""
        if self._renderer is not None:
            self._renderer.join()

    def _write_block(self, block: pa.Table, written=None) -> None:
        """Decode a block of pending rows and hand each protocol's rows to the
        sink as its own table (in the block's order).  ``written``: a numpy
        mask of the rows to write (the others are held back by the compiled
        driver until their stream settles), or None: all of them."""
        from ..arrow_kernels import pc

        is_mq = pc.equal(block.column("protocol"), "mq")
        is_msmq = pc.invert(is_mq)
        if written is None:
            n = block.num_rows
        else:
            n = int(written.sum())
            w = _k.bools(written)
            is_mq, is_msmq = pc.and_(is_mq, w), pc.and_(is_msmq, w)
        undecoded = pc.is_valid(block.column("error"))
        decodable = pc.invert(undecoded)
        for protocol, table_name, in_protocol in (("mq", _tables.MQ_MESSAGES, is_mq),
                                                  ("msmq", _tables.MSMQ_PACKETS, is_msmq)):
            if not pc.any(in_protocol).as_py():
                continue
            if not self.options.wants(table_name):
                # not made: the PCF bodies of the good IBM MQ messages may still be wanted
                good = pc.and_(in_protocol, decodable)
                if protocol == "mq" and self.options.wants(_tables.PCF_PARAMETERS) and pc.any(good).as_py():
                    self._mq_pcf_only(pc.filter(block, good))
                self._count(protocol, pc.filter(block, in_protocol))
                continue
            parts, where = [], []
            good = pc.and_(in_protocol, decodable)
            if pc.any(good).as_py():
                part = pc.filter(block, good)
                parts.append(self._mq_part(part) if protocol == "mq" else self._msmq_part(part))
                where.append(pc.indices_nonzero(good))
            bad = pc.and_(in_protocol, undecoded)
            if pc.any(bad).as_py():
                parts.append(self._output(table_name, pc.filter(block, bad), {}))
                where.append(pc.indices_nonzero(bad))
            table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
            if len(parts) > 1:   # back in the block's order
                table = pc.take(table, pc.sort_indices(pa.concat_arrays(where)))
            self._count(protocol, table)
            self.sink(table_name, self._chosen(table_name, table))
        self.summary["messages"] += n

    def _chosen(self, table_name: str, table: pa.Table) -> pa.Table:
        """A table as built (:attr:`_built`) with the chosen columns only."""
        schema = self._schemas[table_name]
        return table if table.num_columns == len(schema) else table.select(schema.names)

    def _count(self, protocol: str, table: pa.Table) -> None:
        """The summary's errors and messages by protocol and kind."""
        from ..arrow_kernels import pc

        errors = pc.sum(pc.cast(pc.is_valid(table.column("error")), pa.int64())).as_py() or 0
        if errors:
            self.summary["errors"] += errors
        kinds = pc.value_counts(pc.fill_null(pc.cast(table.column("kind"), pa.string()), "-"))
        for k_, c_ in zip(kinds.field("values").to_pylist(), kinds.field("counts").to_pylist()):
            self.by_kind[(protocol, k_)] += c_

    def _output(self, table_name: str, part: pa.Table, decoded: dict) -> pa.Table:
        """``part`` (a block's rows) as a table of output table ``table_name``:
        common columns from the block, protocol columns from ``decoded``
        (name -> array), nulls elsewhere."""
        from ..arrow_kernels import pc

        schema = self._built[table_name]
        n = part.num_rows
        arrays = []
        ts_us = ts_nanos = None
        if "ts" in schema.names:
            ts_us, ts_nanos = _split_ns(part.column("ts"))
        in_part = set(part.column_names)
        for f in schema:
            name = f.name
            if name in decoded:
                a = decoded[name]
            elif name == "ts":
                a = ts_us
            elif name == "ts_nanos":
                a = ts_nanos
            elif name == "raw":
                data = part.column("_data")
                if self.options.raw:
                    a = data
                else:
                    error = decoded.get("error", part.column("error"))
                    # the bytes of the rows that failed only: none failed, nothing copied
                    a = pa.nulls(n, f.type) if error.null_count == len(error) else \
                        pc.if_else(pc.is_valid(error), data, pa.scalar(None, data.type))
            elif name in in_part:
                a = part.column(name)
            else:
                a = pa.nulls(n, f.type)
            if a.type != f.type:
                a = pc.cast(a, f.type)
            arrays.append(a)
        return pa.Table.from_arrays(arrays, schema=schema)

    @staticmethod
    def _decoded(table, prefix: str = "") -> dict:
        """A batch decoder's output as output columns: its own columns and the
        row's error columns (``error`` from the decoder's reason)."""
        from ..arrow_kernels import pc

        decoded = {prefix + name: table.column(name) for name in table.schema.names
                   if name not in _tables.BATCH_ONLY}
        failed = pc.is_valid(table.column("error_structure"))
        decoded["error"] = pc.if_else(failed, pc.fill_null(table.column("error_reason"), "decode error"),
                                      pa.scalar(None, pa.string()))
        for name in ("error_structure", "error_field", "error_offset"):
            decoded[name] = table.column(name)
        return decoded

    def _mq_decode(self, part: pa.Table) -> pa.Table:
        return _batch.decode_mq_batch(_one_array(part.column("_data")), impl=self.options.impl,
                                      md_only=part.column("_md_only").to_numpy(zero_copy_only=False))

    def _mq_pcf_only(self, part: pa.Table) -> None:
        """The PCF bodies of IBM MQ messages whose own rows are not made."""
        from ..arrow_kernels import pc

        part = _one_data(part)
        table = self._mq_decode(part)
        self._pcf(part, table, pc.is_valid(table.column("error_structure")))

    def _mq_part(self, part: pa.Table) -> pa.Table:
        """IBM MQ messages through the MQ batch decoder (their mq_messages
        rows), and their PCF bodies through the PCF one."""
        from ..arrow_kernels import pc

        part = _one_data(part)
        table = self._mq_decode(part)
        decoded = self._decoded(table)
        want = self._built[_tables.MQ_MESSAGES].names
        if "md_put_timestamp" in want:
            decoded["md_put_timestamp"] = _put_timestamp(table.column("md_put_date"), table.column("md_put_time"))
        if "body_text" in want:
            decoded["body_text"] = _body_text(part.column("_data"), table, part.column("_md_only"))
        if "rfh2_folders" in want:
            decoded["rfh2_folders"] = _rfh2_folders(part.column("_data"), table, part.column("_md_only"))
        if "rfh_name_values" in want:
            decoded["rfh_name_values"] = _rfh_name_values(part.column("_data"), table, part.column("_md_only"))
        # channel MESSAGE_DATA: the message came in an MQXQH (Format MQXMIT) the framer took off
        xmit = pc.fill_null(pc.equal(part.column("kind"), "MESSAGE_DATA"), False)
        if "header_formats" in want and pc.any(xmit).as_py():
            decoded["header_formats"] = _with_first(decoded["header_formats"], _k.true_rows(xmit), "MQXMIT")
        for column, (name, how) in _tables.NAMED.items():
            if column in decoded and name in want:
                decoded[name] = _tables.name_column(how, decoded[column])
        out = self._output(_tables.MQ_MESSAGES, part, decoded)
        self._pcf(part, table, pc.is_valid(table.column("error_structure")))
        return out

    def _pcf(self, part: pa.Table, table, failed) -> None:
        """PCF bodies -> long-form parameters, grouped by the CCSID strings inherit."""
        import numpy as np

        from ..arrow_kernels import pc

        if "body_offset" not in table.schema.names or not self.options.wants(_tables.PCF_PARAMETERS):
            return
        has = pc.and_(pc.and_(pc.invert(failed), pc.is_valid(table.column("pcf_type"))),
                      pc.is_valid(table.column("body_offset")))
        idx = pc.indices_nonzero(has).to_numpy()
        if not len(idx):
            return
        schema = self._schemas[_tables.PCF_PARAMETERS]
        offsets, values, _ = _record_buffers(part.column("_data"))
        # each body: its record from body_offset on, gathered per CCSID its strings inherit
        # (in the order the CCSIDs first come; null and 0: the decoder's default)
        ends = offsets[idx + 1].astype(np.int64)
        starts = np.minimum(offsets[idx] + _k.fill_null(table.column("body_offset"), 0).to_numpy()[idx], ends)
        ccsids = _k.fill_null(_k.cast(table.column("body_ccsid"), pa.int64()), _NO_CCSID).to_numpy()[idx]
        for ccsid in dict.fromkeys(ccsids.tolist()):
            every = np.flatnonzero(ccsids == ccsid)
            # a megabyte of bodies at a time: a body of N bytes gives up to N / 16 rows, so
            # that a chunk full of PCF (statistics, trace-route) would make rows several times
            # its --chunk-bytes at once (64 MiB of statistics_q.dat messages, one thread: 300
            # MiB peak made at once, 213 MiB in pieces)
            for piece in _pieces(ends[every] - starts[every]):
                sel = every[piece]
                bodies = _k.gather_slices(values, starts[sel], ends[sel] - starts[sel])
                params = _batch.decode_pcf_batch(bodies, impl=self.options.impl,
                                                 ccsid=None if ccsid == _NO_CCSID else ccsid or None).parameters
                key_col = pc.take(_k.take(part.column("message_key"), _k.int64s(idx[sel])), params.column("record"))
                self.sink(_tables.PCF_PARAMETERS, _pcf_rows(schema, key_col, params))

    def _msmq_part(self, part: pa.Table) -> pa.Table:
        """MSMQ packets and pings through the MSMQ batch decoder."""
        from pyarrow._compute import SetLookupOptions

        from ..arrow_kernels import call, pc

        from ..msmq.constants import MQMSG_CLASS_NAMES

        part = _one_data(part)
        table = _batch.decode_msmq_batch(_one_array(part.column("_data")), impl=self.options.impl,
                                         columns=self._msmq_columns)
        decoded = self._decoded(table)
        decoded.pop("kind", None)  # the row's kind (the framer's, or Ping) stays
        want = self._built[_tables.MSMQ_PACKETS].names
        for short, _, long_name in _tables.MSMQ_SHORT:
            if long_name is not None and long_name in decoded:
                decoded[short] = decoded[long_name]
        if "message_id" in want:
            qm, mid = decoded["user_source_queue_manager"], decoded["user_message_id"]
            decoded["message_id"] = pc.binary_join_element_wise(qm, pc.cast(mid, pa.string()), "\\")
        if "class_name" in want:
            codes = sorted(MQMSG_CLASS_NAMES)
            where = call("index_in", [pc.cast(decoded["props_message_class"], pa.int64())],
                         SetLookupOptions(pa.array(codes, pa.int64())))
            decoded["class_name"] = pc.take(pa.array([MQMSG_CLASS_NAMES[c] for c in codes], pa.string()), where)
        if "body_text" in want:
            decoded["body_text"] = _msmq_body_text(part.column("_data"), table)
        return self._output(_tables.MSMQ_PACKETS, part, decoded)

    # ---------------------------------------------------------- summary
    def report(self, top: Optional[int] = 10) -> dict:
        """The job's summary: counters, messages by protocol and kind, IBM MQ
        calls by segment type, failed calls (CompCode MQCC_FAILED) by reason
        name -- the ``top`` most frequent (None: all, for merging)."""
        self.drain()
        return {
            "summary": dict(self.summary),
            "messages_by_protocol_and_kind": {"%s/%s" % k: v for k, v in sorted(self.by_kind.items())},
            "calls_by_type": dict(sorted(self.calls_by_type.items())),
            "failed_calls_by_reason": dict(self.failed_by_reason.most_common(top)),
            "captures": self.capture_reports,
        }


def _pylist(a) -> list:
    """``a.to_pylist()`` (an integer or dictionary-of-strings column), built
    over arrays: all-null columns, the integers and the dictionary's indices
    converted at once."""
    import numpy as np

    a = _one_array(a)
    n = len(a)
    if a.null_count == n:
        return [None] * n
    if pa.types.is_dictionary(a.type):
        words = np.array(a.dictionary.to_pylist() + [None], dtype=object)
        return words[_k.fill_null(a.indices, -1).to_numpy()].tolist()
    if not pa.types.is_integer(a.type):
        return a.to_pylist()
    if a.null_count == 0:
        return a.to_numpy().tolist()
    values = np.array(_k.fill_null(a, 0).to_numpy(), dtype=object)
    values[~_k.is_valid(a).to_numpy(zero_copy_only=False)] = None
    return values.tolist()


@functools.cache
def _calls_plain_schema() -> pa.Schema:
    """The mq_calls schema without its name columns (_calls_table adds them)."""
    schema = _tables.table_schema(_tables.MQ_CALLS)
    named = {name for name, _ in _tables.NAMED.values()}
    return pa.schema([f for f in schema if f.name not in named])


@functools.cache
def _calls_batch_schema() -> pa.Schema:
    """The table of a unit batch (Converter.unit_batch): the plain mq_calls
    columns but ``replied`` and ``reply_call_key`` (known as rows are written)."""
    return pa.schema([f for f in _calls_plain_schema() if f.name not in ("replied", "reply_call_key")])


def _replied(req, replied: bool, reply_call_key: Optional[int]):
    """A held request (a row dict, or (batch table, row index)) as a row
    ready to write, with its ``replied`` and ``reply_call_key``."""
    if type(req) is dict:
        req.update(replied=replied, reply_call_key=reply_call_key)
        return req
    return (req[0], req[1], replied, reply_call_key)


def _calls_table(rows: list, schema: pa.Schema) -> pa.Table:
    """mq_calls rows as a table of the mq_calls schema, in call_key order.
    Each row is a dict (:meth:`Converter._unit`: decode_unit columns plus
    where, pairing, queue; ``ts`` in nanoseconds, split as in the other
    tables) or rows of a unit batch (:meth:`Converter._unit_batch`): (its
    table, a row index, replied, reply_call_key), see :func:`_replied`, or
    (its table, row indices, replied and reply_call_key as Arrow arrays,
    one value per row, or None: all null).  ``schema``: the mq_calls columns to
    make (Converter._built)."""
    import numpy as np

    names = set(schema.names)
    named = {name: (column, how) for column, (name, how) in _tables.NAMED.items() if name in names}
    plain = _calls_plain_schema()
    dicts = [r for r in rows if type(r) is dict]
    parts = [pa.Table.from_pylist(dicts, schema=plain)] if dicts else []
    # the rows of unit batches: each batch's table once, the rows picked by one take
    # over all of them in call_key order
    tables: dict = {}
    single_table, single_index, single_replied, single_reply = [], [], [], []
    runs = []
    for r in rows:
        if type(r) is dict:
            continue
        table, index, replied, reply = r
        if id(table) not in tables:
            tables[id(table)] = (len(tables), table)
        if type(index) is int:
            single_table.append(tables[id(table)][0])
            single_index.append(index)
            single_replied.append(replied)
            single_reply.append(reply)
        else:
            runs.append((tables[id(table)][0], index, replied, reply))
    if tables:
        batch_tables = [t for _, t in tables.values()]
        base = np.zeros(len(batch_tables) + 1, dtype=np.int64)
        np.cumsum([t.num_rows for t in batch_tables], out=base[1:])
        index = [base[np.array(single_table, dtype=np.int64)] + np.array(single_index, dtype=np.int64)]
        replied = [pa.array(single_replied, pa.bool_())]
        reply = [pa.array(single_reply, pa.int64())]
        for t, idx, rep, key in runs:   # replied, reply_call_key: None (null), or an array per row
            index.append(base[t] + idx)
            replied.append(pa.nulls(len(idx), pa.bool_()) if rep is None else rep)
            reply.append(pa.nulls(len(idx), pa.int64()) if key is None else key)
        all_rows = pa.concat_tables(batch_tables)
        where = np.concatenate(index)
        keys = _k.take(all_rows.column("call_key"), _k.int64s(where)).to_numpy()
        order = np.argsort(keys, kind="stable")
        part = _k.take(all_rows, _k.int64s(where[order]))
        order_a = _k.int64s(order)
        extra = {"replied": _k.take(pa.concat_arrays(replied), order_a),
                 "reply_call_key": _k.take(pa.concat_arrays(reply), order_a)}
        parts.append(pa.Table.from_arrays([extra[f.name] if f.name in extra else part.column(f.name)
                                           for f in plain], schema=plain))
    table = parts[-1] if len(parts) == 1 and not dicts else _k.sort_by(pa.concat_tables(parts), "call_key")
    arrays = []
    for f in schema:
        if f.name in named:
            column, how = named[f.name]
            a = _tables.name_column(how, table.column(column))
            arrays.append(a if a.type == f.type else _k.cast(a, f.type))
        else:
            arrays.append(table.column(f.name))
    return pa.Table.from_arrays(arrays, schema=schema)


#: a null body_ccsid among the int64 CCSIDs of Converter._pcf (outside MQLONG's range)
_NO_CCSID = -(1 << 40)

#: PCF types whose int_value a parameter's value names apply to (MQCFT_INTEGER, MQCFT_INTEGER_FILTER)
_NAMED_VALUE_TYPES = pa.array([3, 13], pa.int32())


def _pcf_rows(schema: pa.Schema, key_col, params) -> pa.Table:
    """The PCF batch decoder's long form as pcf_parameters rows: its columns
    after ``record`` under their snake_case names, and the name columns."""
    from pyarrow._compute import SetLookupOptions

    from ..arrow_kernels import call, pc

    columns = {"message_key": key_col}
    for i, f in enumerate(params.schema):
        if f.name != "record":
            columns[_tables.snake_case(f.name)] = params.column(i)
    if "parameter_name" in schema.names:
        columns["parameter_name"] = _tables.name_column("parameter", columns["parameter"], columns["type"])
    if "type_name" in schema.names:
        columns["type_name"] = _tables.name_column("MQCFT", columns["type"])
    if "value_name" in schema.names:
        integer = call("is_in", [columns["type"]], SetLookupOptions(_NAMED_VALUE_TYPES))
        ints = pc.if_else(integer, columns["int_value"], pa.scalar(None, pa.int64()))
        columns["value_name"] = _tables.name_column("value", ints, columns["parameter"])
    return pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)


def _msmq_batch_columns(names) -> Optional[list]:
    """The MSMQ batch decoder's columns that the msmq_packets columns ``names``
    come from (None: all of them, when all are built): each its own, the short
    columns' long ones (:data:`~mqcodec.convert.tables.MSMQ_SHORT`), what
    message_id, class_name and body_text are made of, and the error columns."""
    from ..batch.schema import MSMQ_PACKETS as BATCH

    if len(names) == len(_tables.table_schema(_tables.MSMQ_PACKETS)):
        return None
    # the batch's kind is not the row's (the framer's, or Ping: _msmq_part)
    need = {"error_structure", "error_field", "error_offset", "error_reason"} | set(names) - {"kind"}
    need |= {long_name for short, _, long_name in _tables.MSMQ_SHORT if long_name and short in names}
    if "message_id" in names:
        need |= {"user_source_queue_manager", "user_message_id"}
    if "class_name" in names:
        need.add("props_message_class")
    if "body_text" in names:
        need |= _MSMQ_BODY_COLUMNS
    return [f.name for f in BATCH if f.name in need]


def _with_first(lists, where, value: str) -> pa.Array:
    """``lists`` (a list array) with ``value`` first in the lists of the rows
    ``where`` (numpy bool; a null list there becomes ``[value]``), built over
    the offsets: one take of the values, no Python list per row."""
    import numpy as np

    lists = _one_array(lists)
    n = len(lists)
    lengths = _k.fill_null(_k.call("list_value_length", [lists]), 0).to_numpy().astype(np.int64)
    flat = _k.call("list_flatten", [lists])   # the values of the lists that are not null, in order
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths + where, out=offsets[1:])
    index = np.empty(int(offsets[-1]), np.int64)
    put = offsets[:-1][where]
    rest = np.ones(len(index), bool)
    rest[put] = False
    index[put] = len(flat)   # the value, after the lists' values
    index[rest] = np.arange(len(flat), dtype=np.int64)
    values = _k.take(pa.concat_arrays([flat, pa.array([value], flat.type)]), _k.int64s(index))
    valid = _k.true_rows(_k.is_valid(lists)) | where
    nulls = int(n - valid.sum())
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    offsets = offsets if pa.types.is_large_list(lists.type) else offsets.astype(np.int32)
    return pa.Array.from_buffers(lists.type, n, [validity, pa.py_buffer(offsets)], null_count=nulls,
                                 children=[values])


def _split_ns(ts) -> tuple:
    """Nanosecond timestamps -> (microsecond timestamps, nanoseconds within
    the microsecond as int16), rounding towards the past."""
    from ..arrow_kernels import pc

    ns = pc.cast(ts, pa.int64())
    us = pc.divide(ns, 1000)  # truncates towards zero
    rem = pc.subtract(ns, pc.multiply(us, 1000))
    neg = pc.less(rem, 0)
    us = pc.if_else(neg, pc.subtract(us, 1), us)
    rem = pc.if_else(neg, pc.add(rem, 1000), rem)
    return pc.cast(us, pa.timestamp("us", tz="UTC")), pc.cast(rem, pa.int16())


#: the body formats whose bytes are text in the body's CCSID (MQFMT_STRING)
TEXT_FORMATS = ("MQSTR",)


def _body_text(data, table, md_only) -> pa.Array:
    """What a text message carried: the body (``record[body_offset:][:body_length]``)
    of each row that decoded, carries its body (not ``md_only``: a reply's MQMD
    alone) and whose ``body_format`` is a text format, decoded in its
    ``body_ccsid`` as :func:`mqcodec.ccsid.decode_text` decodes (untrimmed; bytes
    the CCSID cannot map become its replacement character); null for other rows
    and for a CCSID without a converter.  Vectorized: the bodies' bytes are
    gathered out of the records' buffer, a single-byte CCSID's through its
    256-entry table (:func:`_translated`), UTF-8 checked by Arrow; the rest (and
    UTF-8 that is not valid) body by body through :func:`mqcodec.ccsid.text_decoder`."""
    from ..arrow_kernels import pc

    n = len(table)
    text = pc.and_(_is_any(table.column("body_format"), TEXT_FORMATS), _with_body(table, md_only))
    rows = pc.indices_nonzero(pc.fill_null(text, False))
    if not len(rows):
        return pa.nulls(n, pa.string())

    def picked(name: str):
        return pc.fill_null(pc.take(table.column(name), rows), 0).to_numpy()
    return _texts(data, rows.to_numpy(), picked("body_offset"), picked("body_length"), picked("body_ccsid"))


#: MQRFH2: its fixed part, where StrucLength and NameValueCCSID are (mqcodec.ibmmq.headers)
_RFH2_FIXED, _RFH2_STRUC_LENGTH, _RFH2_NV_CCSID = 36, 8, 32
#: NameValueCCSIDs of UTF-16, whose byte order is the MQRFH2's (mqcodec.ibmmq.headers)
_UTF16_NV = (1200, 13488, 17584)


def _rfh2_folders(data, table, md_only) -> pa.Array:
    """What a JMS message carried besides its body: the NameValueData folders of
    its MQRFH2 headers (``<mcd>``, ``<jms>``, ``<usr>``...), decoded by
    NameValueCCSID (UTF-16 in the header's byte order), trailing blanks and NULs
    trimmed, as :class:`mqcodec.ibmmq.headers.MQRFH2` gives them (``folders``); null
    for rows without an MQRFH2, that failed or are an MQMD alone.  Vectorized for
    the common chain, MQMD then one MQRFH2 (the folders walked for all such rows
    at once); other chains holding an MQRFH2 through
    :func:`mqcodec.ibmmq.message.decode_message`."""
    import numpy as np

    from ..arrow_kernels import call, from_numpy, pc
    from ..ibmmq.wire import MQMD_LENGTHS

    n = len(table)
    has, formats, is_rfh2 = _with_header(table, md_only, "MQHRF2")
    if not has.any():
        return pa.nulls(n, pa.list_(pa.string()))
    lengths = pc.fill_null(call("list_value_length", [formats]), 0).to_numpy().astype(np.int64)
    first = np.zeros(n, bool)
    starts_at = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=starts_at[1:])
    only = has & (lengths == 1)
    first[only] = is_rfh2[starts_at[:-1][only]]
    version = pc.fill_null(table.column("md_version"), 0).to_numpy()
    encoding = pc.fill_null(table.column("md_encoding"), 0).to_numpy()
    little = (encoding & 0x0F) == 2
    fast = first & ((version == 1) | (version == 2)) & (((encoding & 0x0F) == 1) | little)
    offsets, values, values_buf = _record_buffers(data)
    rows = np.flatnonzero(fast)
    folder_rows, folder_k, a_list, z_list, nv_list = [], [], [], [], []
    if len(rows):
        rec_end = offsets[rows + 1].astype(np.int64)
        base = offsets[rows].astype(np.int64) + np.where(version[rows] == 1, MQMD_LENGTHS[1], MQMD_LENGTHS[2])
        lit = little[rows]
        end = np.minimum(base + _u32(values, base + _RFH2_STRUC_LENGTH, lit, rec_end), rec_end)
        nv = _u32(values, base + _RFH2_NV_CCSID, lit, rec_end).astype(np.int32).astype(np.int64)
        utf16 = np.zeros(len(nv), bool)
        for c in _UTF16_NV:   # (np.isin would import numpy.ma)
            utf16 |= nv == c
        nv = np.where(utf16, np.where(lit, 1202, 1200), nv)
        pos = base + _RFH2_FIXED
        live = np.arange(len(rows))
        k = 0
        while len(live):
            live = live[pos[live] + 4 <= end[live]]
            if not len(live):
                break
            size = _u32(values, pos[live], lit[live], end[live])
            a = pos[live] + 4
            z = a + size
            fits = z <= end[live]
            live, a, z = live[fits], a[fits], z[fits]
            folder_rows.append(rows[live])
            folder_k.append(np.full(len(live), k))
            a_list.append(a)
            z_list.append(z)
            nv_list.append(nv[live])
            pos[live] = z
            k += 1
    parts_rows, parts_lists = [], []
    if len(rows):
        f_rows = np.concatenate(folder_rows) if folder_rows else np.empty(0, np.int64)
        order = np.lexsort((np.concatenate(folder_k), f_rows)) if folder_rows else np.empty(0, np.int64)
        where, texts = _decoded_slices(values, values_buf, np.concatenate(a_list)[order] if folder_rows else order,
                                       np.concatenate(z_list)[order] if folder_rows else order,
                                       np.concatenate(nv_list)[order] if folder_rows else order)
        from pyarrow._compute import TrimOptions

        texts = call("utf8_rtrim", [_spread(texts, where, len(order))], TrimOptions(" \x00"))
        f_rows = f_rows[order]
        if texts.null_count:   # a NameValueCCSID without a converter: the folder is not text
            kept = pc.indices_nonzero(pc.is_valid(texts))
            texts = _k.take(texts, kept)
            f_rows = f_rows[kept.to_numpy()]
        counts = np.bincount(np.searchsorted(rows, f_rows), minlength=len(rows))
        list_offsets = np.zeros(len(rows) + 1, np.int32)
        np.cumsum(counts, out=list_offsets[1:])
        parts_rows.append(rows)
        parts_lists.append(pa.ListArray.from_arrays(from_numpy(list_offsets), texts))
    slow = np.flatnonzero(has & ~fast)
    if len(slow):   # other chains: the pure decoder's MQRFH2 folders
        lists: list = []
        for headers in _pure_headers(offsets, values_buf, slow):
            rfh2 = [h for h in headers or () if h.NAME == "MQRFH2"]
            lists.append([f for h in rfh2 for f in h.folders if isinstance(f, str)] if rfh2 else None)
        parts_rows.append(slow)
        parts_lists.append(pa.array(lists, pa.list_(pa.string())))
    return _spread(pa.concat_arrays(parts_lists), np.concatenate(parts_rows), n)


def _rfh_name_values(data, table, md_only) -> pa.Array:
    """What a message with MQRFH version 1 headers (Format MQHRF: the rules and
    formatting header of MQSeries Integrator and the early publish/subscribe broker)
    carried besides its body: each MQRFH's NameValueString, decoded in the header's
    CodedCharSetId, trailing blanks and NULs trimmed, as
    :class:`mqcodec.ibmmq.headers.MQRFH` gives it; null for rows without one, that
    failed or are an MQMD alone, and for a NameValueString in a CCSID without a
    converter.  Such messages are rare: the pure message decoder reads them."""
    import numpy as np

    n = len(table)
    rows = np.flatnonzero(_with_header(table, md_only, "MQHRF")[0])
    if not len(rows):
        return pa.nulls(n, pa.list_(pa.string()))
    offsets, _, values_buf = _record_buffers(data)
    lists: list = []
    for headers in _pure_headers(offsets, values_buf, rows):
        texts = [h.NameValueString.rstrip(" \x00") for h in headers or ()
                 if h.NAME == "MQRFH" and isinstance(h.NameValueString, str)]
        lists.append(texts or None)
    return _spread(pa.array(lists, pa.list_(pa.string())), rows, n)


def _with_header(table, md_only, fmt: str) -> tuple:
    """The MQ rows that decoded with their body and hold a header of Format
    ``fmt`` (``MQHRF2``...): (their mask, the ``header_formats`` column, which of its
    flattened entries are ``fmt``).  The body check runs only where some row holds one."""
    import numpy as np

    from ..arrow_kernels import call, pc

    formats = table.column("header_formats")
    formats = _one_array(formats)
    flat = call("list_flatten", [formats])
    # (boolean arrays go to numpy as the indices of their true values: a bool array's
    # to_numpy would import numpy.ma)
    is_fmt = np.zeros(len(flat), bool)
    is_fmt[pc.indices_nonzero(pc.fill_null(pc.equal(flat, pa.scalar(fmt, pa.string())), False)).to_numpy()] = True
    has = np.zeros(len(table), bool)
    if is_fmt.any():
        has[call("list_parent_indices", [formats]).to_numpy()[is_fmt]] = True
        has[pc.indices_nonzero(pc.invert(pc.fill_null(_with_body(table, md_only), False))).to_numpy()] = False
    return has, formats, is_fmt


def _pure_headers(offsets, values_buf, rows):
    """The headers of records ``rows`` as the pure message decoder gives them
    (:func:`mqcodec.ibmmq.message.decode_message`; None where it refuses what the
    batch decoder read): for the rare chains the vectorized walks leave to it."""
    from ..errors import MQCodecError
    from ..ibmmq.message import decode_message

    view = memoryview(values_buf) if values_buf is not None else memoryview(b"")
    for i in rows.tolist():
        try:
            yield decode_message(bytes(view[offsets[i]:offsets[i + 1]])).headers
        except MQCodecError:
            yield None


def _u32(values, at, little, limit):
    """The unsigned 32-bit integers at ``values[at:at + 4]`` (little-endian where
    ``little``); 0 where the four bytes pass ``limit``."""
    import numpy as np

    inside = at + 4 <= limit
    at = np.where(inside, at, 0)
    b = [values[at + i].astype(np.uint32) if len(values) else np.zeros(len(at), np.uint32) for i in range(4)]
    le = b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24)
    be = b[3] | (b[2] << 8) | (b[1] << 16) | (b[0] << 24)
    return np.where(inside, np.where(little, le, be), 0).astype(np.int64)


#: [MS-MQMQ] 2.2.12 VARTYPEs of a string MessageBody (UTF-16LE), by their names in
#: mqcodec.msmq.constants.VARTYPES
STRING_BODY_TYPES = ("VT_BSTR", "VT_LPWSTR")
#: the CCSID of UTF-16LE, the Unicode of MSMQ's strings
_UTF16LE = 1202


def _msmq_body_text(data, table) -> pa.Array:
    """What an MSMQ message carried as text: the MessageBody
    (``record[props_body_offset:]``, MessageSize bytes but no more than
    AllocationBodySize) of each packet that decoded, is not encrypted
    (PrivacyLevel 0) and holds a string -- BodyType VT_BSTR or VT_LPWSTR, or a
    report message, whose body [MS-MQQB] makes a Unicode string -- decoded as
    UTF-16LE, trailing NULs (a string's terminator) left out; null for other packets."""
    from pyarrow._compute import TrimOptions

    from ..arrow_kernels import call, pc
    from ..msmq.constants import MQMSG_CLASS, VARTYPES

    n = len(table)
    # a report's MessageBody is a Unicode string ([MS-MQQB] 3.1.7.1.7)
    text = pc.or_(_is_any(table.column("props_message_class"), [MQMSG_CLASS["MQMSG_CLASS_REPORT"]]),
                  _is_any(table.column("props_body_type"),
                          [vt for vt, name in VARTYPES.items() if name in STRING_BODY_TYPES]))
    text = pc.and_(pc.and_(text, pc.is_null(table.column("error_structure"))),
                   pc.and_(pc.is_valid(table.column("props_body_offset")),
                           pc.equal(pc.fill_null(table.column("props_privacy_level"), 1),
                                    pa.scalar(0, table.column("props_privacy_level").type))))
    rows = pc.indices_nonzero(pc.fill_null(text, False))
    if not len(rows):
        return pa.nulls(n, pa.string())
    import numpy as np

    def picked(name: str):
        return pc.fill_null(pc.take(table.column(name), rows), 0).to_numpy().astype(np.int64)
    length = np.minimum(picked("props_message_size"), picked("props_allocation_body_size"))
    texts = _texts(data, rows.to_numpy(), picked("props_body_offset"), length,
                   np.full(len(rows), _UTF16LE, np.int64))
    return call("utf8_rtrim", [texts], TrimOptions("\x00"))


#: the MSMQ batch columns _msmq_body_text reads
_MSMQ_BODY_COLUMNS = frozenset({"error_structure", "props_message_class", "props_body_type", "props_body_offset",
                                "props_privacy_level", "props_message_size", "props_allocation_body_size"})


def _texts(data, at, body_offsets, body_lengths, ccsids) -> pa.Array:
    """A string array as long as ``data`` (the records): for the records ``at``,
    ``record[body_offset:][:body_length]`` (cut at the record's end) decoded in its
    CCSID as :func:`mqcodec.ccsid.decode_text` decodes, untrimmed; null elsewhere
    and for a CCSID without a converter (see :func:`_body_text`)."""
    import numpy as np

    offsets, values, values_buf = _record_buffers(data)
    starts = offsets[at].astype(np.int64) + body_offsets
    ends = np.maximum(np.minimum(starts + body_lengths, offsets[at + 1]), starts)
    where, texts = _decoded_slices(values, values_buf, starts, ends, ccsids)
    return _spread(texts, at[where], len(data))


def _spread(values: pa.Array, rows, n: int) -> pa.Array:
    """An array of ``n`` rows: ``values[i]`` at row ``rows[i]``, null elsewhere (one take)."""
    import numpy as np

    from ..arrow_kernels import from_numpy

    slot = np.full(n, -1, np.int64)
    slot[rows] = np.arange(len(rows))
    return _k.take(values, from_numpy(slot, mask=slot < 0))


def _with_body(table, md_only) -> pa.Array:
    """The MQ rows that decoded and carry their body (not a reply's MQMD alone)."""
    from ..arrow_kernels import pc

    return pc.and_(pc.is_null(table.column("error_structure")),
                   pc.invert(pc.fill_null(_k.cast(md_only, pa.bool_()), False)))


def _is_any(column, values) -> pa.Array:
    """``column`` equals one of ``values`` (at least one; null where it is null)."""
    from ..arrow_kernels import pc

    first, *rest = [pc.equal(column, pa.scalar(v, column.type)) for v in values]
    for eq in rest:
        first = pc.or_(first, eq)
    return first


def _one_data(part: pa.Table) -> pa.Table:
    """``part`` with its records (``_data``) in one chunk: the decoders and the
    body, folder and PCF readers each take them as one array."""
    data = part.column("_data")
    if data.num_chunks == 1:
        return part
    return part.set_column(part.schema.get_field_index("_data"), "_data", data.combine_chunks())


def _one_array(a):
    """An array, or a ChunkedArray as one array (its only chunk as it is: combining
    one chunk copies it too)."""
    if not isinstance(a, pa.ChunkedArray):
        return a
    return a.chunk(0) if a.num_chunks == 1 else a.combine_chunks()


def _record_buffers(data) -> tuple:
    """A binary array's (value offsets as numpy, values as numpy uint8, values buffer)."""
    import numpy as np

    data = _one_array(data)
    _, offsets_buf, values_buf = data.buffers()
    wide = pa.types.is_large_binary(data.type)
    offsets = np.frombuffer(offsets_buf, np.int64 if wide else np.int32)[data.offset:data.offset + len(data) + 1]
    values = np.frombuffer(values_buf, np.uint8) if values_buf is not None else np.empty(0, np.uint8)
    return offsets, values, values_buf


def _decoded_slices(values, values_buf, starts, ends, ccsids) -> tuple:
    """``values[starts[i]:ends[i]]`` decoded in ``ccsids[i]``: (the indices ``i``
    decoded, their strings), grouped by CCSID (:func:`_spread` puts them in place;
    a CCSID without a converter gives none): single-byte CCSIDs through their
    256-entry table, UTF-8 checked by Arrow, in pieces of :data:`_GATHER_BYTES`;
    the rest slice by slice through :func:`mqcodec.ccsid.text_decoder`."""
    import numpy as np

    from .. import ccsid as _ccsid

    view = memoryview(values_buf) if values_buf is not None else memoryview(b"")
    parts: list = []   # (indices of slices, their texts as a string array)
    for ccsid in sorted(set(ccsids.tolist())):   # (np.unique would import numpy.ma)
        sel = np.flatnonzero(ccsids == ccsid)
        try:
            decode = _ccsid.text_decoder(ccsid)
        except _ccsid.UnknownCCSID:
            continue
        utf8 = _utf8_table(ccsid) if ccsid != 1208 and _ccsid.is_single_byte(ccsid) else None
        for piece in _pieces(ends[sel] - starts[sel]):
            here = sel[piece]
            a, z = starts[here], ends[here]
            texts = None
            if (ccsid == 1208 or utf8 is not None) and int((z - a).sum()) <= _GATHER_BYTES:
                body, body_offsets = _k.gather_slices(values, a, z - a)
                if utf8 is not None:
                    texts = _translated(body, body_offsets, utf8)
                else:
                    try:   # Arrow checks the UTF-8; slices that are not valid UTF-8 go the way below
                        texts = _k.cast(pa.Array.from_buffers(pa.binary(), len(here), [
                            None, pa.py_buffer(body_offsets.astype(np.int32)), pa.py_buffer(body)]), pa.string())
                    except pa.ArrowInvalid:
                        texts = None
            if texts is None:   # other CCSIDs, UTF-8 that is not, a slice larger than a piece
                texts = pa.array([decode(view[x:y]) for x, y in zip(a.tolist(), z.tolist())], pa.string())
            parts.append((here, texts))
    if not parts:
        return np.empty(0, np.int64), pa.array([], pa.string())
    return np.concatenate([p[0] for p in parts]), pa.concat_arrays([p[1] for p in parts])


#: body bytes gathered at once (their index array is 8 times as large, a single-byte
#: CCSID's UTF-8 up to 3 times): a larger body is decoded on its own
_GATHER_BYTES = 1 << 20


def _pieces(lengths):
    """Slices of consecutive bodies (``lengths``) of at most :data:`_GATHER_BYTES`
    together, or one body that is larger alone (text bodies, PCF bodies)."""
    import numpy as np

    end = np.cumsum(lengths)
    i, n = 0, len(lengths)
    while i < n:
        before = int(end[i - 1]) if i else 0
        j = max(i + 1, int(np.searchsorted(end, before + _GATHER_BYTES, side="right")))
        yield slice(i, j)
        i = j


_UTF8_TABLES: dict = {}


def _utf8_table(ccsid: int) -> tuple:
    """(the UTF-8 bytes of the 256 characters of single-byte ``ccsid``, one after
    another; where each starts, 257 offsets; their lengths), built once per CCSID."""
    import numpy as np

    got = _UTF8_TABLES.get(ccsid)
    if got is None:
        from ..ccsid import single_byte_table

        encoded = [ch.encode("utf-8") for ch in single_byte_table(ccsid) or ()]
        enc_len = np.array([len(e) for e in encoded], np.int64)
        enc_start = np.zeros(257, np.int64)
        np.cumsum(enc_len, out=enc_start[1:])
        got = _UTF8_TABLES[ccsid] = (np.frombuffer(b"".join(encoded), np.uint8), enc_start, enc_len)
    return got


def _translated(body, body_offsets, utf8_table) -> pa.Array:
    """Single-byte text ``body`` (with ``body_offsets``) as a string array: each
    byte replaced by the UTF-8 of its character (``utf8_table``: :func:`_utf8_table`).
    Text whose every character is one byte of UTF-8 (ASCII, the letters of EBCDIC)
    through a 256-byte table, the same length out as in."""
    import numpy as np

    enc, enc_start, enc_len = utf8_table
    one_byte = enc_len == 1
    if bool(one_byte[body].all()):
        lut = np.zeros(256, np.uint8)
        lut[one_byte] = enc[enc_start[:256][one_byte]]
        out = lut[body]
        offsets = body_offsets.astype(np.int32)
    else:
        out, out_pos = _k.gather_slices(enc, enc_start[body], enc_len[body])   # each byte's character, one after another
        offsets = out_pos[body_offsets].astype(np.int32)
    return pa.Array.from_buffers(pa.string(), len(body_offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(out)])


def _put_timestamp(date, time):
    """MQMD PutDate (YYYYMMDD) and PutTime (HHMMSSTH), GMT, as one UTC
    timestamp; null where either is absent or not a valid date and time."""
    from pyarrow._compute import MatchSubstringOptions, SliceOptions, StrptimeOptions

    from ..arrow_kernels import call, pc

    digits = MatchSubstringOptions(r"^[0-9]{8}$")
    ok = pc.and_(call("match_substring_regex", [date], digits), call("match_substring_regex", [time], digits))
    ok = pc.fill_null(ok, False)
    blank = pa.scalar("", pa.string())
    d = pc.if_else(ok, date, blank)
    t = pc.if_else(ok, time, blank)
    seconds = call("strptime", [pc.binary_join_element_wise(d, call("utf8_slice_codeunits", [t], SliceOptions(0, 6)),
                                                            pa.scalar("", pa.string()))],
                   StrptimeOptions("%Y%m%d%H%M%S", "us", error_is_null=True))
    hundredths = pc.cast(pc.if_else(ok, call("utf8_slice_codeunits", [t], SliceOptions(6, 8)), pa.scalar("0")),
                         pa.int64())
    micros = pc.add(pc.cast(seconds, pa.int64()), pc.multiply(hundredths, 10000))
    return pc.cast(pc.if_else(ok, micros, pa.scalar(None, pa.int64())), pa.timestamp("us", tz="UTC"))


_TS_UNKNOWN = -(1 << 63)  # mqcodec.capture.frame.TS_UNKNOWN


def _rows_block(rows: list) -> pa.Table:
    """Row dicts (the pure pipeline's pending rows) as a BLOCK_SCHEMA table."""
    arrays = []
    for f in BLOCK_SCHEMA:
        name = f.name
        if name in ("_md_only", "overlap_conflict"):
            arrays.append(pa.array([bool(r.get(name)) for r in rows], pa.bool_()))
        elif name == "ts":  # a time that does not fit in int64 ns is null (capture.TS_UNKNOWN)
            arrays.append(pa.array([None if r[name] == _TS_UNKNOWN else r[name] for r in rows], f.type))
        elif name not in ("message_key", "capture", "frame", "ts", "src_ip", "src_port", "dst_ip", "dst_port",
                          "tcp_stream", "stream_offset", "protocol", "kind", "error", "error_structure",
                          "error_field", "error_offset", "length", "_data"):
            arrays.append(pa.array([r.get(name) for r in rows], f.type))
        else:
            arrays.append(pa.array([r[name] for r in rows], f.type))
    return pa.Table.from_arrays(arrays, schema=BLOCK_SCHEMA)


def report_file_structure(report: dict, summary: Counter, *, file_error: Optional[str], truncation: Optional[dict],
                          skipped_blocks: int, impossible_timestamps: int) -> None:
    """What a capture's report and the job's summary say of its file structure
    (both engines: the cluster engine merges it from its ranges).  Damage after
    the first frame ends the capture, not the job (docs/ROBUSTNESS.md): the
    frames before it are converted and it is counted."""
    if file_error is not None:
        summary["captures ended by a file error"] += 1
        report["file_error"] = file_error
    if truncation is not None:
        summary["captures cut short"] += 1
        report["truncation"] = truncation
    if skipped_blocks:
        summary["pcapng blocks skipped"] += skipped_blocks
    if impossible_timestamps:
        summary["frames with impossible timestamps"] += impossible_timestamps


def _core_module(impl: Optional[str]):
    """The compiled capture core, or None (pure pipeline): mqcodec._impl decides."""
    return _impl.pick("capture_core", impl, what="capture core")


def _row_start(row) -> int:
    return row["stream_offset"] or 0


def _row_end(row) -> int:
    """End of the row's bytes in the stream (an error row's extent may pass its raw bytes)."""
    return (row["stream_offset"] or 0) + max(row["length"] or 0, len(row["_data"]))


