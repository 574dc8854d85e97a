"""The compiled engine of :class:`mqcodec.convert.Converter`.

The compiled capture core (``mqcodec._ext.capture_core``, docs/capture-core.md)
walks the capture, reassembles each TCP direction in order and frames IBM MQ
and MSMQ messages in C; its messages arrive here a batch at a time as arrays
(one bytes buffer and offsets, no Python object per message) and become a
block of pending rows for the batch decoders.  The core follows every TCP
connection itself, with the pure pipeline's rules; the tables are the pure
engine's.  Frames it defers (not IP, UDP such as the MSMQ ping, malformed or
unsupported headers) go through a pure :class:`CaptureProcessor` as they
come, for the pings and for the skipped/malformed counts.  The byte budget
(``buffer_budget``) cuts directions in the core as the pure pipeline cuts
them.  A capture the core declines (a file header it does not take) goes to
the pure pipeline before anything is produced; no capture is read twice.

Rows keep the pure engine's values, ``message_key`` included: it comes from the
input only (:class:`mqcodec.convert.keys.MessageKeys`: capture, frame, rank in the
frame), not from the order rows are produced.
"""
from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from .. import arrow_kernels as _k
from ..capture.tcp import SHARED_STATS
from .options import reassembly_options
from .sources import frames_until_error, reopen
from .tables import BLOCK_SCHEMA, MAX_CONFLICT_RANGES, where_seen, words

__all__ = ["add_capture"]

CHUNK = 4 << 20
#: the core's output is taken once this many bytes were fed since it was last taken (or
#: at the end): each take costs ~10 ms of Arrow work whatever its size, and a pipe's or a
#: socket's reads may be a few KiB each (read whole from a file, every piece is a take)
TAKE_BYTES = 1 << 20
#: the addresses of this many connections (``CaptureCore.connection``, about 360 bytes
#: each) are kept between takes, then forgotten: a capture's connections are not all
#: held (measured: 25 MiB for 80,000 short connections when every one was kept)
CONNECTIONS_CACHED = 4096


def _chunks(source, errors=None, where=None):
    """The decompressed bytes of a capture, a piece at a time (at most CHUNK
    bytes each, whatever the compression ratio).  Damaged gzip (corrupt data,
    a bad trailer, input cut short, trailing garbage) ends the pieces: every
    byte decompressed before it has been yielded, and the ``DecodeError`` is
    appended to ``errors`` (raised when ``errors`` is None).  ``where``, a
    one-item list, gets the input bytes read so far (of the file: compressed
    bytes for gzip) after each piece, for the progress bar."""
    from ..errors import DecodeError

    try:
        yield from _pieces(source, where)
    except DecodeError as exc:
        if errors is None:
            raise
        errors.append(exc)


def _pieces(source, where=None):
    from ..capture.gunzip import file_bytes

    yield from file_bytes(reopen(source), CHUNK, where)


class _Held:
    """The core's messages not yet written: those ending within the pure
    reassembler's OVERLAP_WINDOW of their direction's stream end, as the pure
    converter holds its rows (``_Direction.held``).  A copy of delivered bytes
    that differs (the core's conflict records, the pure OverlapConflict) flags
    the held rows holding those bytes and the rows made later that do, until a
    row starts past them (``Converter._conflict``, ``_add``): :meth:`conflicts`.
    Messages written are final: the pure pipeline would have released their
    rows before any later copy could flag them."""

    def __init__(self):
        self.table = None                 # held rows (BLOCK_SCHEMA + _conn, _dir, _end, _rank, _seq), no keys yet
        self.ranges: dict = {}            # (conn, direction) -> [[start, end], ...] not passed by a row yet
        self.conflicts_by_stream: Counter = Counter()   # tcp_stream -> differing copies (counted at the end)

    def conflicts(self, b: dict, new) -> Any:
        """The batch's conflict records (``b["conflicts"]``) and the ranges
        still open: flag the held rows and ``new``'s rows (the batch's, with
        ``_seq``) as the pure converter flags its rows; returns ``new``."""
        from ..capture.tcp import OVERLAP_WINDOW

        x = b.get("conflicts")
        if x is None and not self.ranges:
            return new
        events: dict = defaultdict(list)   # (conn, direction) -> [(seq, 0 row | 1 conflict, ...)]
        if x is not None:
            for seq, c, d, s, e, dend, stream in zip(
                    x["seq"].tolist(), x["conn"].tolist(), x["direction"].tolist(), x["start"].tolist(),
                    x["end"].tolist(), x["stream_end"].tolist(), x["tcp_stream"]):
                events[(c, d)].append((seq, 1, s, e, dend))
                self.conflicts_by_stream[stream] += 1
        tables = [t for t in (self.table, new) if t is not None and t.num_rows]
        flags = []
        wanted = [c * 2 + d for c, d in set(events) | set(self.ranges)]
        for t in tables:
            conn, dirs = t.column("_conn").to_numpy(), t.column("_dir").to_numpy().astype(np.int64)
            start, end = t.column("stream_offset").to_numpy(), t.column("_end").to_numpy()
            seq = t.column("_seq").to_numpy()
            flag = t.column("overlap_conflict").to_numpy(zero_copy_only=False).copy()
            flags.append(flag)
            for i in np.flatnonzero(np.isin(conn * 2 + dirs, wanted)).tolist():
                events[(int(conn[i]), int(dirs[i]))].append((int(seq[i]), 0, len(flags) - 1, i,
                                                            int(start[i]), int(end[i])))
        for key, evs in events.items():
            # in emission order; a conflict's seq is that of the record emitted after it
            evs.sort(key=lambda ev: (ev[0], -ev[1]))
            ranges = self.ranges.get(key, [])
            made: list = []   # (table, row, start, end) of the rows made before the event
            for ev in evs:
                if ev[1] == 1:
                    _, _, s, e, dend = ev
                    for ti, i, rs, re_ in made:   # the rows held then (not released: the pure _release)
                        if re_ > dend - OVERLAP_WINDOW and rs < e and re_ > s:
                            flags[ti][i] = True
                    ranges.append([s, e])
                    if len(ranges) > MAX_CONFLICT_RANGES:   # Converter._conflict's merge
                        last = ranges.pop()
                        ranges[-1] = [min(ranges[-1][0], last[0]), max(ranges[-1][1], last[1])]
                else:
                    _, _, ti, i, rs, re_ = ev
                    ranges = [r for r in ranges if r[1] > rs]
                    if any(r[0] < re_ and r[1] > rs for r in ranges):
                        flags[ti][i] = True
                    made.append((ti, i, rs, re_))
            if ranges:
                self.ranges[key] = ranges
            else:
                self.ranges.pop(key, None)
        out = []
        for t, flag in zip(tables, flags):
            out.append(t.set_column(t.schema.get_field_index("overlap_conflict"), "overlap_conflict",
                                    _k.bools(flag)))
        if self.table is not None and self.table.num_rows:
            self.table = out.pop(0)
        return out[0] if out else new

    def count_conflicts(self, conv) -> None:
        """The end of the capture: the differing copies per connection."""
        for stream, n in sorted(self.conflicts_by_stream.items()):
            conv.count_conflicts(stream, n)
        self.conflicts_by_stream.clear()

    def settle(self, conv, core, new, *, final: bool = False) -> int:
        """Add ``new`` rows; write those that are final (all of them with
        ``final``); returns the number written."""
        for key in [k for k in self.ranges if core.stream_end(*k) == -1]:
            del self.ranges[key]   # a closed direction makes no more rows to flag
        parts = [t for t in (self.table, new) if t is not None and t.num_rows]
        if not parts:
            return 0   # (before the imports: a capture with no message pays for neither)
        from ..capture.tcp import OVERLAP_WINDOW

        t = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        conn = t.column("_conn").to_numpy()
        dirs = t.column("_dir").to_numpy().astype(np.int64)
        end = t.column("_end").to_numpy()
        keyv = conn * 2 + dirs
        uniq, first, inverse = np.unique(keyv, return_index=True, return_inverse=True)
        state = np.array([core.stream_end(int(k) >> 1, int(k) & 1) for k in uniq.tolist()], dtype=np.int64)
        se = state[inverse]
        write = (se == -1) | (end <= se - OVERLAP_WINDOW) | final
        keep = ~write
        self.table = _k.filter(t, _k.bools(keep)) if keep.any() else None
        n = int(write.sum())
        if n == 0:
            return 0
        # the rows written go to the chunk as ``t`` and ``write`` (a table and the mask of its
        # rows written): the render thread's filter by protocol takes them (one copy of them,
        # not two; Converter._write_block)
        mask = None if self.table is None else write
        picked = (lambda a: a) if mask is None else (lambda a: a[mask])   # noqa: E731
        # keys from the input (keys.MessageKeys): each direction's rows come in stream order
        rank = picked(t.column("_rank").to_numpy())
        opened = None
        if (rank < 0).any():   # rows whose first byte was not captured: keyed by the connection's opening frame
            opened = [core.opened_frame(c) for c in picked(conn).tolist()]
        streams = t.column("tcp_stream").to_numpy()
        keys = conv.keys.tcp_batch(picked(streams), picked(dirs), picked(
            _k.fill_null(t.column("frame"), -1).to_numpy()), rank, opened)
        conv.made += n
        errors = n - t.column("error").null_count if mask is None else \
            int(_k.is_valid(t.column("error")).to_numpy(zero_copy_only=False)[mask].sum())
        if errors:   # the framers' FramingError rows
            conv.summary["framing errors"] += errors
        for k, i in zip(uniq[state == -1].tolist(), first[state == -1].tolist()):
            conv.keys.forget(int(streams[i]), int(k) & 1)   # closed directions make no more rows
        if mask is not None:   # (the rows held keep no key: they get theirs when written)
            keys_all = np.zeros(len(write), dtype=np.int64)
            keys_all[write] = keys
            keys = keys_all
        out = t.set_column(t.schema.get_field_index("message_key"), "message_key",
                           _k.from_numpy(keys, mask=None if mask is None else keep))
        out = _k.cast_table(out.select([f.name for f in BLOCK_SCHEMA]), BLOCK_SCHEMA)
        # rows of more bytes than a chunk has room for (a direction the byte budget closes, the
        # open units of streams that end together: error rows with their bytes) go to the
        # writers a chunk at a time, so that the rendering's copies of them stay within
        # --chunk-bytes (one msmq-4mib x16 capture of bench_resources: 684 MiB peak without)
        size = _k.fill_null(out.column("length"), 0).to_numpy()
        if mask is not None:
            size = np.where(mask, size, 0)
        cum = np.cumsum(size)
        written = np.cumsum(write)   # (rows written up to each row: the chunk's count)
        m = len(write)
        start = 0
        while start < m:   # (one piece, all of it, unless the rows hold more than the chunk has room for)
            before = int(cum[start - 1]) if start else 0
            stop = int(np.searchsorted(cum, before + max(conv.options.chunk_bytes - conv.pending_bytes, 1),
                                       side="left")) + 1
            stop = min(max(stop, start + 1), m)
            piece = out if stop - start == m else out.slice(start, stop - start)
            conv.blocks.append(piece if mask is None else (piece, mask[start:stop]))
            conv.block_rows += int(written[stop - 1]) - (int(written[start - 1]) if start else 0)
            conv.pending_bytes += int(cum[stop - 1]) - before
            if stop < m:
                conv.flush()
            start = stop
        return n

def _take(conv, core, mod, side, name: str, conns: dict, kinds, held: "Optional[_Held]" = None,
          final: bool = False) -> int:
    """Move the core's latest messages into a pending block (through ``held``:
    see :class:`_Held`); run deferred frames through the pure processor.
    Returns the number of messages taken from the core."""
    if len(conns) > CONNECTIONS_CACHED:
        conns.clear()   # a cache of addresses, not a record of every connection seen
    b = core.take()
    for frame in b["deferred"]:
        _side_events(conv, side.feed(frame), name)
    n = len(b["seq"])
    conflicts = b.pop("conflicts", None)
    if conflicts is not None:   # (the core forgets a connection's addresses a take after it is forgotten)
        conflicts["tcp_stream"] = [_connection(core, conns, c)[4] for c in conflicts["conn"].tolist()]
    if n == 0:
        if held is not None:
            held.conflicts({"conflicts": conflicts}, None)
            held.settle(conv, core, None, final=final)
        return 0
    errors = b.pop("errors", None)
    if errors is not None:
        # the framers' FramingError records: their code and numbers per record
        # (so that they follow the records through _units)
        code = np.zeros(n, dtype=np.int64)
        code[errors["index"]] = errors["code"]
        b["error_code"] = code
        for k in ("a", "b", "c", "d"):
            v = np.zeros(n, dtype=np.int64)
            v[errors["index"]] = errors[k]
            b["error_" + k] = v
    unit_kind = getattr(mod, "MQ_UNIT_KIND", None)
    if unit_kind is not None:
        is_unit = (np.asarray(b["kind"]) == unit_kind) & (np.asarray(b["protocol"]) == 0)
        if is_unit.any():
            b = _units(conv, core, b, is_unit, name, conns)
            n = len(b["seq"])
            if n == 0:
                if held is not None:
                    held.conflicts({"conflicts": conflicts}, None)
                    held.settle(conv, core, None, final=final)
                return 0
    offsets = np.ascontiguousarray(b["offsets"], dtype=np.int64)
    data = pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets),
                                                                   pa.py_buffer(b["data"])])
    conn = np.asarray(b["conn"], dtype=np.int64)
    direction = np.asarray(b["direction"], dtype=np.int8)
    uniq, inverse = np.unique(conn, return_inverse=True)
    seen = where_seen([_connection(core, conns, c) for c in uniq.tolist()], inverse, direction)
    protocol = np.asarray(b["protocol"], dtype=np.int64)
    # MQ record kinds: the message kinds, then MQ_UNIT_KIND (gone: _units) and MQ_ERROR_KIND;
    # MSMQ's: the packet kinds, then MSMQ_ERROR_KIND
    mq_kinds = kinds[0] + ["unit", "framing error"]
    kind_index = np.asarray(b["kind"], dtype=np.int64) + protocol * len(mq_kinds)
    # MSMQ_CLASSIFY_KIND: OrderAck candidates outside the layout the core reads,
    # classified as the pure framer classifies them
    classify = np.flatnonzero(kind_index == len(mq_kinds) + mod.MSMQ_CLASSIFY_KIND)
    if len(classify):
        from ..msmq.framing import packet_kind

        base = int(offsets[0])
        raw = memoryview(b["data"])
        for i in classify.tolist():
            kind_index[i] = len(mq_kinds) + kinds[1].index(
                packet_kind(raw[offsets[i] - base:offsets[i + 1] - base]))
    length = np.diff(offsets)
    # FramingError records: their error columns; their length becomes their extent in the stream
    errors = _error_columns(b, length) if "error_code" in b else {}
    columns = {
        "message_key": _k.from_numpy(np.zeros(n, dtype=np.int64)),   # given when written (_Held)
        "capture": words(np.zeros(n, dtype=np.int32), [name]),
        "frame": _nonneg(b["frame"]),
        "ts": _ts(b["ts_ns"], b["frame"]),
        **seen,
        "tcp_stream": _k.from_numpy(np.asarray(b["tcp_stream"], dtype=np.int64)),
        "stream_offset": _k.from_numpy(np.asarray(b["stream_offset"], dtype=np.int64)),
        "protocol": words(protocol, ["mq", "msmq"]),
        "kind": words(kind_index, mq_kinds + kinds[1] + ["(classified)", "framing error"]),
        "length": _k.from_numpy(length),
        "_data": data,
        "_md_only": _k.bools(b["md_only"]),
        # set by _Held.conflicts from the core's conflict records
        "overlap_conflict": _k.bools(np.zeros(n, dtype=bool)),
    }
    columns.update(errors)
    links = b.get("links")   # the link columns of each message (_units)
    if links is not None:
        for col in links.column_names:
            columns[col] = links.column(col)
    arrays = [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in BLOCK_SCHEMA]
    names = [f.name for f in BLOCK_SCHEMA]
    arrays += [_k.from_numpy(conn), _k.from_numpy(direction),
               _k.from_numpy(np.asarray(b["stream_offset"], dtype=np.int64) + length),
               _k.from_numpy(np.asarray(b["rank"], dtype=np.int64)),
               _k.from_numpy(np.asarray(b["seq"], dtype=np.int64))]
    names += ["_conn", "_dir", "_end", "_rank", "_seq"]
    if held is None:
        raise RuntimeError("mqcodec.convert.compiled._take: messages taken with no _Held to hold them")
    held.settle(conv, core, held.conflicts({"conflicts": conflicts}, pa.Table.from_arrays(arrays, names=names)),
                final=final)
    return n


def _connection(core, conns: dict, c: int) -> tuple:
    """``core.connection(c)`` through the cache ``conns``: asked within the take
    that gave ``c`` (the core frees what it forgets a take later)."""
    info = conns.get(c)
    if info is None:
        info = conns[c] = core.connection(c)
    return info


def _error_columns(b: dict, length) -> dict:
    """The error columns of the framers' FramingError records (code > 0), as
    the pure converter's rows of FramingError events have them; ``length``
    (modified in place) becomes their extent in the stream where it passes
    their raw bytes."""
    from ..ibmmq.framing_errors import describe as mq_describe
    from ..msmq.framing_errors import describe as msmq_describe

    code = b["error_code"]
    rows = np.flatnonzero(code > 0)
    n = len(code)
    error: list = [None] * n
    structure: list = [None] * n
    fld: list = [None] * n
    for i, p, c, a, b_, c_, d in zip(rows.tolist(), np.asarray(b["protocol"])[rows].tolist(), code[rows].tolist(),
                                     b["error_a"][rows].tolist(), b["error_b"][rows].tolist(),
                                     b["error_c"][rows].tolist(), b["error_d"][rows].tolist()):
        structure[i], fld[i], error[i] = (msmq_describe if p else mq_describe)(c, a, b_, c_, d)
    extent = np.asarray(b["full_length"], dtype=np.int64)[rows]
    length[rows] = np.maximum(length[rows], extent)
    return {name: _k.dictionary_encode(pa.array(values, pa.string()))
            for name, values in (("error", error), ("error_structure", structure), ("error_field", fld))}


def _units(conv, core, b: dict, is_unit, name: str, conns: dict) -> dict:
    """The batch's IBM MQ unit records -> mq_calls rows (in arena order, which
    is the pure framer's event order; decoded at once by
    :func:`mqcodec.ibmmq.calls_batch.decode_units`, paired and attributed by
    :meth:`Converter._unit_batch`); returns the batch without them, each
    message with the link columns of its unit (the unit record just before it
    in its direction, same stream offset)."""
    offsets = np.asarray(b["offsets"], dtype=np.int64)
    data = b["data"]
    base = int(offsets[0])
    units = np.flatnonzero(is_unit)
    conn_u = np.asarray(b["conn"], dtype=np.int64)[units]
    dir_u = np.asarray(b["direction"], dtype=np.int64)[units]
    for c in set(conn_u.tolist()):   # (not np.unique: its first plain call imports numpy.ma)
        _connection(core, conns, c)
    starts = offsets[units] - base
    lens = offsets[units + 1] - offsets[units]
    full = np.asarray(b["full_length"], dtype=np.int64)[units] if "full_length" in b else lens
    link_table = conv.unit_batch(name, data, starts, lens, full, conn_u, dir_u, conns,
                                  np.asarray(b["tcp_stream"], dtype=np.int64)[units],
                                  np.asarray(b["stream_offset"], dtype=np.int64)[units],
                                  np.asarray(b["frame"], dtype=np.int64)[units],
                                  np.asarray(b["rank"], dtype=np.int64)[units],
                                  np.asarray(b["ts_ns"], dtype=np.int64)[units])
    # each message's link: the unit record just before it in its direction (same conn and
    # direction, nearest before it in the batch), when at the same stream offset
    m = len(is_unit)
    group = np.asarray(b["conn"], dtype=np.int64) * 2 + np.asarray(b["direction"], dtype=np.int64)
    order = np.lexsort((np.arange(m), group))
    pos = np.arange(m)
    change = np.ones(m, dtype=bool)
    change[1:] = group[order][1:] != group[order][:-1]
    group_start = np.maximum.accumulate(np.where(change, pos, 0))
    last_unit = np.maximum.accumulate(np.where(is_unit[order], pos, -1))
    off = np.asarray(b["stream_offset"], dtype=np.int64)
    prev = np.full(m, -1, dtype=np.int64)
    found = last_unit >= group_start
    prev[order[found]] = order[last_unit[found]]
    ordinal = np.cumsum(is_unit) - 1
    msg = np.flatnonzero(~is_unit)
    p_ = prev[msg]
    linked = (p_ >= 0) & (off[np.maximum(p_, 0)] == off[msg])
    if "error_code" in b:   # FramingError rows have no link (the pure converter's neither)
        linked &= np.asarray(b["error_code"])[msg] == 0
    which = np.where(linked, ordinal[np.maximum(p_, 0)], -1)
    keep = np.flatnonzero(~is_unit)
    out: dict[str, Any] = {}
    for key, value in b.items():
        if key in ("offsets", "data", "deferred"):
            continue
        out[key] = np.asarray(value)[keep]
    # the messages' bytes without the units' (one copy of each kept record)
    base_offsets = offsets - base
    out["data"], out["offsets"] = _k.gather_slices(np.frombuffer(data, np.uint8), base_offsets[keep],
                                                   base_offsets[keep + 1] - base_offsets[keep])
    out["deferred"] = []
    out["links"] = _k.take(link_table, _k.from_numpy(which, mask=which < 0))
    return out


def _nonneg(values) -> pa.Array:
    """int64 array with -1 (the core's "none") as null."""
    v = np.asarray(values, dtype=np.int64)
    return _k.from_numpy(v, mask=v < 0)


def _ts(ts_ns, frame) -> pa.Array:
    """Message times: null where the core has no frame (-1) or the frame's time
    did not fit in int64 ns (TS_UNKNOWN); times before 1970 are negative and kept."""
    v = np.asarray(ts_ns, dtype=np.int64)
    mask = (np.asarray(frame, dtype=np.int64) < 0) | (v == np.iinfo(np.int64).min)
    return _k.cast(_k.from_numpy(v, mask=mask), pa.timestamp("ns", tz="UTC"))


def _side_events(conv, events, name: str) -> None:
    """Events of the deferred frames' pure processor: only UDP datagrams (the
    MSMQ ping) make rows; TCP belongs to the core."""
    from ..capture import UDPDatagram

    udp = [ev for ev in events if type(ev) is UDPDatagram]
    if udp:
        conv.on_events(udp, name, {})


def _advance(progress, core, frames_seen: int, where: list) -> int:
    """The progress bar moved to the frames the core has read; returns their count."""
    frames = core.stats.get("frames", 0)
    if progress is not None and hasattr(progress, "advance"):
        progress.advance(frames - frames_seen, where[0])
    return frames


def add_capture(conv, mod, source, name: str, progress=None, *, numbers=None) -> Any:
    """Convert ``source`` (a path, bytes or a binary file, read once) with the
    compiled core; None.  Where the core declines it before producing anything
    (a file header it does not take), the capture for the caller's pure pipeline
    (which also raises on a damaged file header): see :func:`_give_up`.
    ``numbers``: the frame number of each record (a pcap of frames that are
    not a whole capture, :func:`mqcodec.convert.spool.spool`: a
    :class:`~mqcodec.convert.spool.FrameNumbers`, handed to the core a window
    before each piece of the pcap); ``tcp_stream`` is then the number of
    the frame that opened the connection and the opening frames go to
    ``conv.opening_frames`` (``Converter.add_frames``)."""
    from ..capture.stream import CaptureProcessor

    opts = conv.options
    from ..capture.budget import DEFAULT_LIMIT

    core = mod.CaptureCore(mq_ports=tuple(opts.mq_ports), msmq_ports=tuple(opts.msmq_ports),
                           detect_by_content=opts.detect_by_content, **reassembly_options(opts),
                           max_total_buffer=opts.buffer_budget or DEFAULT_LIMIT, units=True,
                           streams_by_frame=numbers is not None)
    numbered = 0   # numbers: the records the core was given numbers up to
    side = CaptureProcessor(**reassembly_options(opts))
    kinds = (list(mod.MQ_KIND_NAMES), list(mod.MSMQ_KIND_NAMES))
    conns: dict = {}
    made0 = conv.made
    frames_seen = 0
    held = _Held()
    gzip_error: list = []   # damaged gzip: the capture ends there, as in the pure reader
    where = [0]  # input bytes read so far, for the progress bar
    pieces = _chunks(source, gzip_error, where)
    chunk = b""
    untaken = 0   # bytes fed since the core's output was last taken
    before_header: list = []   # the pieces fed before the core took the file header
    for chunk in pieces:
        if core.file_state is None:
            before_header.append(chunk)
        if numbers is not None:   # the numbers of every record this piece may complete
            walked = core.records_walked
            bound = core.records_fed(len(chunk))   # (a record is at least 16 bytes: far more than come)
            if walked + bound > numbered:   # twice that, so that the next pieces need no new window
                numbered = walked + 2 * bound
                core.number_frames(numbers.window(walked, numbered))
        core.feed(chunk)
        if not core.supported:
            return _give_up(conv, core, made0, before_header, pieces, gzip_error)
        untaken += len(chunk)
        if untaken < TAKE_BYTES and core.stop is None:
            continue   # a short read (a pipe's): the core keeps its output until more has come
        untaken = 0
        _take(conv, core, mod, side, name, conns, kinds, held)
        frames_seen = _advance(progress, core, frames_seen, where)
        _flush_when_full(conv)
        if core.stop is not None:
            break
    if core.file_state is None:
        # empty, too short to hold a file header, or damaged gzip inside it: the pure reader says which
        return _give_up(conv, core, made0, before_header, pieces, gzip_error)
    if gzip_error and not core.stats["frames"] and core.stop is None:
        raise gzip_error[-1]   # damaged gzip before the first frame: not a readable capture (the pure reader's words)
    # the end: every open unit becomes a row with its bytes, a chunk's bytes at a time
    while not core.finish(opts.chunk_bytes):
        _take(conv, core, mod, side, name, conns, kinds, held)
        _flush_when_full(conv)
    _take(conv, core, mod, side, name, conns, kinds, held, final=True)
    _advance(progress, core, frames_seen, where)
    _side_events(conv, side.close(), name)
    stats = dict(core.stats)
    held.count_conflicts(conv)
    if numbers is not None and conv.opening_frames is not None:
        conv.opening_frames.extend(core.opened_frames())
    side_report = side.report()
    report = {
        "capture": name,
        "engine": "compiled",
        "stats": {
            "frames": stats.get("frames", 0),
            "skipped": side_report["stats"].get("skipped", 0),
            "malformed": side_report["stats"].get("malformed", 0),
        },
        "skipped": side_report["skipped"],
        "malformed": side_report["malformed"],
        "tcp": {k: stats[k] for k in SHARED_STATS if stats.get(k)},   # the pure report's counters
        "core": stats,
    }
    undetected = stats.get("bytes in streams of no known protocol", 0)
    if undetected:
        conv.summary["bytes in streams of no known protocol"] += undetected
    # the gaps, resynchronisations and budget cuts the core counted (a counter is there as
    # soon as its event happened once, as in the pure converter: a resynchronisation may
    # skip no byte)
    for key, event in (("gaps", "gaps"), ("gap bytes", "gaps"), ("resynchronisations", "resynchronisations"),
                       ("bytes skipped by resynchronisation", "resynchronisations"),
                       ("budget cuts", "budget cuts"), ("bytes cut by the budget", "budget cuts")):
        if stats.get(event):
            conv.summary[key] += stats[key]
    file_error: list = []
    reader: Any
    if core.stop is not None:
        # the pure reader's account of the damaged or cut file, from where the core stopped:
        # what it counts is the file from there on
        from ..capture.reader import capture_from, rest_of

        reader = capture_from(core.file_state, _raising(rest_of(core, chunk, pieces), gzip_error),
                              core.stop[0], core.stop[1], int(stats["frames"]))
        for _ in frames_until_error(reader, file_error):
            pass
    else:
        reader = _Intact()
        file_error = gzip_error   # the pure reader's file error: the gzip stream's damage
    # the blocks the core skipped and the impossible times it met, up to its stop if it stopped
    # (counted once the capture is known to be read: before its first frame, damage raises above)
    for key in ("pcapng blocks skipped", "frames with impossible timestamps"):
        if stats.get(key):
            conv.summary[key] += stats[key]
    conv.end_capture(report, reader, file_error)
    return None


def _flush_when_full(conv) -> None:
    """Flush the pending rows once they make a chunk (--chunk messages or --chunk-bytes)."""
    opts = conv.options
    if conv.block_rows + len(conv.pending) + conv.call_rows >= opts.chunk_messages \
            or conv.pending_bytes >= opts.chunk_bytes:
        conv.flush()


def _raising(pieces, errors: list):
    """``pieces``, then the gzip damage :func:`_chunks` put in ``errors``, raised
    where the pure reader meets it (after every byte before it)."""
    yield from pieces
    if errors:
        raise errors[-1]


class _Intact:
    """A reader with nothing to report (the core read the whole file)."""

    truncation = None
    parser = None


def _give_up(conv, core, made0: int, before_header: list, pieces, gzip_error: list):
    """The core declined the capture (a file header it does not take, or the input
    ends inside it), before walking any frame: the capture for the caller's pure
    pipeline, as a file of the bytes fed to the core and those after them (which
    also raises the exact error).  Nothing is read twice."""
    from ..capture.reader import PiecesFile

    if core.stats["frames"] or conv.made != made0:
        raise RuntimeError("mqcodec capture core: gave the capture up after producing rows (%s)"
                           % core.unsupported_reason)
    return PiecesFile(itertools.chain(before_header, _raising(pieces, gzip_error)), decompressed=True)
