"""Fuzz harnesses: one function per byte-taking entry point of mqcodec.

Each ``fuzz_<target>(data: bytes)`` runs one entry point on ``data`` and
checks the robustness invariants (docs/ROBUSTNESS.md):

1. only :class:`mqcodec.DecodeError` escapes a decoder;
2. decode -> encode -> decode is stable where an encoder exists;
3. the pure and compiled batch implementations give equal tables;
5. framers and the capture layer never raise on bad bytes, and account for
   every byte they were given.

A harness returns normally when the invariants hold and raises
:class:`InvariantViolation` (or lets the unexpected exception propagate)
when they do not.  The same functions serve atheris (tests/fuzz/run_atheris.py)
and pytest (tests/test_fuzz_regressions.py, tests/test_fuzz_short.py).
Invariant 4 (bounded time and memory) is checked per input by
:func:`bounded` (the replay of the corpus, and every Nth input of an atheris
campaign: ``run_atheris.py --bounded N``), and by dedicated tests on
adversarial inputs that claim huge sizes.
"""
from __future__ import annotations

import io
import struct
import time
import tracemalloc
import zlib

from mqcodec.errors import DecodeError, EncodeError

__all__ = ["TARGETS", "InvariantViolation", "bounded", "fuzz_all", "all_input", "split_records", "run_mq_framer", "run_msmq_framer"]


class InvariantViolation(AssertionError):
    """A robustness invariant does not hold for the input."""


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise InvariantViolation(what)


def _only_decode_error(fn, *args, **kw):
    """``fn(*args, **kw)``; returns (result, None) or (None, DecodeError).
    Any other exception propagates (it is the finding)."""
    try:
        return fn(*args, **kw), None
    except DecodeError as exc:
        _expect(type(exc) is DecodeError or isinstance(exc, DecodeError), "DecodeError subclass")
        _expect(isinstance(exc.offset, int) and exc.offset >= 0, "DecodeError.offset negative: %r" % (exc,))
        return None, exc


def _stable(decode, encode, first_obj, what: str) -> None:
    """Invariant 2: encode(decode(b)) decodes again and re-encodes to the
    same bytes."""
    try:
        b1 = encode(first_obj)
    except EncodeError as exc:
        raise InvariantViolation("%s decoded strictly but does not re-encode: %s" % (what, exc))
    obj2, err = _only_decode_error(decode, b1)
    _expect(err is None, "%s: re-encoded bytes do not decode: %s" % (what, err))
    b2 = encode(obj2)
    _expect(b1 == b2, "%s: decode->encode->decode->encode not stable" % what)


def _renders(obj, what: str) -> None:
    """Whatever decodes also renders through the output path of ``mqcodec
    decode`` (``mqcodec.cli.render``: JSON and text) into UTF-8 bytes without
    an exception; the JSON parses back."""
    import json

    from mqcodec.cli import render

    for fmt in ("json", "text"):
        out = render(obj, fmt)
        _expect(isinstance(out, bytes), "%s: render(%s) is not bytes" % (what, fmt))
        text = out.decode("utf-8")      # must be valid UTF-8 (UnicodeDecodeError is the finding)
        if fmt == "json":
            json.loads(text)


def _lenient_exact(encode, obj, data: bytes, what: str) -> None:
    """Lenient decoding keeps damaged parts as raw bytes, so what it returns
    re-encodes to the input (for MSMQ: plus the ``trailing`` bytes after the
    packet); an EncodeError is acceptable (a value that cannot be rebuilt)."""
    try:
        out = encode(obj)
    except EncodeError:
        return
    _expect(out == data, "%s: lenient decode does not re-encode byte for byte" % what)


# ----------------------------------------------------------------- IBM MQ
def fuzz_pcf(data: bytes) -> None:
    from mqcodec.ibmmq import decode_pcf, encode_pcf

    msg, err = _only_decode_error(decode_pcf, data)
    if msg is not None:
        _renders(msg, "PCF")
        _stable(decode_pcf, encode_pcf, msg, "PCF")
        _expect(encode_pcf(msg) == data, "PCF: strict decode does not re-encode byte for byte")
    lmsg, _ = _only_decode_error(decode_pcf, data, lenient=True)
    if lmsg is not None:
        _renders(lmsg, "PCF lenient")
        _lenient_exact(encode_pcf, lmsg, data, "PCF")
    for enc in (273, 546):
        _only_decode_error(decode_pcf, data, encoding=enc)


def fuzz_mq(data: bytes) -> None:
    from mqcodec.ibmmq import decode_message, encode_message

    msg, err = _only_decode_error(decode_message, data)
    if msg is not None:
        _renders(msg, "MQ message")
        _stable(decode_message, encode_message, msg, "MQ message")
        _expect(encode_message(msg) == data, "MQ message: strict decode does not re-encode byte for byte")
    lmsg, _ = _only_decode_error(decode_message, data, lenient=True)
    if lmsg is not None:
        _renders(lmsg, "MQ message lenient")
        _lenient_exact(encode_message, lmsg, data, "MQ message")


# ----------------------------------------------------------------- MSMQ
def fuzz_msmq(data: bytes) -> None:
    from mqcodec.msmq import decode_packet, encode_packet

    pkt, err = _only_decode_error(decode_packet, data)
    if pkt is not None:
        _renders(pkt, "MSMQ packet")
        if not getattr(pkt, "trailing", b""):
            _stable(decode_packet, encode_packet, pkt, "MSMQ packet")
    for kw in ({"lenient": True}, {"order": "implementation"}, {"remote_read": True}):
        p, _ = _only_decode_error(decode_packet, data, **kw)
        if p is not None:
            _renders(p, "MSMQ packet %s" % kw)
            if kw.get("lenient"):
                _lenient_exact(lambda q: encode_packet(q) + bytes(getattr(q, "trailing", b"") or b""), p, data,
                               "MSMQ packet")


def fuzz_ping(data: bytes) -> None:
    from mqcodec.msmq import decode_ping

    p, _ = _only_decode_error(decode_ping, data)
    if p is not None:
        p.to_dict() if hasattr(p, "to_dict") else None
    _only_decode_error(decode_ping, data, lenient=True)


# ----------------------------------------------------------------- batch
def split_records(data: bytes) -> list:
    """Records from one fuzz input: byte 0 gives the count (1..4) and bit 7
    a null record; bytes 1..count-1 place the cuts."""
    if not data:
        return [b""]
    n = (data[0] & 3) + 1
    cuts_raw = data[1:n]
    body = data[n:] if len(data) > n else b""
    cuts = sorted({(c * len(body)) // 256 for c in cuts_raw})
    out, prev = [], 0
    for c in cuts:
        out.append(body[prev:c])
        prev = c
    out.append(body[prev:])
    if data[0] & 0x80:
        out.insert(1, None)
    return out


def _batch_equal(a, b, what: str) -> None:
    _expect(a.schema.equals(b.schema), "%s: schemas differ" % what)
    if not a.equals(b):
        for name in a.schema.names:
            ca, cb = a.column(name), b.column(name)
            _expect(ca.equals(cb), "%s: column %r differs: c=%s py=%s" % (what, name, ca.to_pylist(),
                                                                        cb.to_pylist()))
        raise InvariantViolation("%s: tables differ" % what)


def _both(fn, records, **kw):
    out = {}
    for impl in ("c", "py"):
        try:
            out[impl] = ("ok", fn(records, impl=impl, **kw))
        except DecodeError as exc:   # only argument errors may raise; records fail as rows
            out[impl] = ("err", (exc.structure, exc.field, exc.offset))
    return out


#: ``ccsid=`` overrides the batch targets pick (bits 4-6 of the first byte).
BATCH_CCSIDS = (None, 500, 1208, 819, 37, 1047, 1200, 437)


def batch_options(data: bytes) -> int:
    """Bits 2-6 of the first byte (split_records uses bits 0, 1 and 7): bit 0
    of the result passes the records as a pyarrow array, bit 1 as a sliced one
    (after a leading record that is sliced off); bits 2-4 pick a ``ccsid=``
    (PCF, MQ) or a ``columns=`` subset (MSMQ)."""
    return (data[0] >> 2) & 0x1F if data else 0


def _as_input(records: list, opts: int):
    """``records`` as the batch functions get them: a list, a pyarrow Binary
    array, or a slice of a larger array (array.offset != 0)."""
    if not opts & 3:
        return records
    import pyarrow as pa

    if opts & 2:
        big = pa.array([b"\x00junk"] + records + [b"tail"], type=pa.binary() if opts & 1 else pa.large_binary())
        return big.slice(1, len(records))
    return pa.array(records, type=pa.binary())


def _list_equal(arrow_out, list_out, what: str) -> None:
    """The Arrow input gives the same table as the list of bytes."""
    _batch_equal(arrow_out, list_out, what + " (Arrow input vs list input)")


def fuzz_batch_pcf(data: bytes) -> None:
    from mqcodec.batch import decode_pcf_batch

    records = split_records(data)
    opts = batch_options(data)
    inp = _as_input(records, opts)
    ccsid = BATCH_CCSIDS[opts >> 2]
    for enc in (None, 273, 546):
        r = _both(decode_pcf_batch, inp, encoding=enc, ccsid=ccsid)
        _expect(r["c"][0] == r["py"][0] == "ok", "PCF batch raised: %r" % (r,))
        _batch_equal(r["c"][1].headers, r["py"][1].headers, "PCF batch headers")
        _batch_equal(r["c"][1].parameters, r["py"][1].parameters, "PCF batch parameters")
        if inp is not records:
            ref = decode_pcf_batch(records, encoding=enc, ccsid=ccsid, impl="py")
            _list_equal(r["c"][1].headers, ref.headers, "PCF batch headers")
            _list_equal(r["c"][1].parameters, ref.parameters, "PCF batch parameters")


def fuzz_batch_mq(data: bytes) -> None:
    from mqcodec.batch import decode_mq_batch

    records = split_records(data)
    opts = batch_options(data)
    inp = _as_input(records, opts)
    ccsid = BATCH_CCSIDS[opts >> 2]
    md_only = [bool(i & 1) for i in range(len(records))]
    for kw in ({}, {"encoding": 546}, {"md_only": md_only}, {"ccsid": ccsid}):
        r = _both(decode_mq_batch, inp, **kw)
        _expect(r["c"][0] == r["py"][0] == "ok", "MQ batch raised: %r" % (r,))
        _batch_equal(r["c"][1], r["py"][1], "MQ batch %s" % (kw,))
        if inp is not records and "md_only" not in kw:
            _list_equal(r["c"][1], decode_mq_batch(records, impl="py", **kw), "MQ batch %s" % (kw,))


def fuzz_batch_calls(data: bytes) -> None:
    """IBM MQ units (records of the input, packed in one buffer) through the
    units reader: the compiled twin's rows are the pure reader's, one row a
    unit; bit 2 of the first byte gives each unit a full length past its
    bytes (a unit cut short by the engines)."""
    import numpy as np

    from mqcodec import _impl
    from mqcodec.ibmmq import calls  # noqa: F401 (decode_unit's declarations, which a hostile unit
    from mqcodec.ibmmq import calls_batch  # loads lazily: loaded by bounded()'s first call, not charged to an input)

    units = [r or b"" for r in split_records(data)]
    lens = np.array([len(u) for u in units], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    full = lens + (7 if batch_options(data) & 1 else 0)
    buf = b"".join(units)
    py = calls_batch.decode_units(buf, starts, lens, full)
    _expect(py.num_rows == len(units), "calls batch: %d rows for %d units" % (py.num_rows, len(units)))
    compiled = _impl.pick("calls_batch", None)
    if compiled is not None:
        c = compiled.decode_units(buf, starts, lens, full)
        _expect(c.schema.equals(py.schema), "calls batch: schemas differ")
        for name in py.schema.names:   # values, row by row (tests/test_calls_batch.py holds the
            # two tables equal to the letter, dictionaries included, on the captures' units)
            _expect(c.column(name).to_pylist() == py.column(name).to_pylist(),
                    "calls batch: column %r differs: c=%s py=%s" % (name, c.column(name).to_pylist(),
                                                                    py.column(name).to_pylist()))


def _msmq_columns(k: int):
    """A deterministic subset of the MSMQ_PACKETS columns (None: all)."""
    from mqcodec.batch.schema import MSMQ_PACKETS

    names = MSMQ_PACKETS.names
    if k == 0:
        return None
    if k == 1:
        return names[:1]
    if k == 2:
        return list(reversed(names[::3]))
    return [n for i, n in enumerate(names) if (i * 7 + k) % 5 < 2] or names[-1:]


def fuzz_batch_msmq(data: bytes) -> None:
    from mqcodec.batch import decode_msmq_batch

    records = split_records(data)
    opts = batch_options(data)
    inp = _as_input(records, opts)
    r = _both(decode_msmq_batch, inp)
    _expect(r["c"][0] == r["py"][0] == "ok", "MSMQ batch raised: %r" % (r,))
    _batch_equal(r["c"][1], r["py"][1], "MSMQ batch")
    full = r["c"][1]
    if inp is not records:
        _list_equal(full, decode_msmq_batch(records, impl="py"), "MSMQ batch")
    cols = _msmq_columns(opts >> 2)
    if cols is not None:
        rc = _both(decode_msmq_batch, inp, columns=cols)
        _expect(rc["c"][0] == rc["py"][0] == "ok", "MSMQ batch columns=%r raised: %r" % (cols, rc))
        _batch_equal(rc["c"][1], rc["py"][1], "MSMQ batch columns=%r" % (cols,))
        _expect(rc["c"][1].schema.names == list(cols), "MSMQ batch: columns=%r gives %r" % (cols, rc["c"][1].schema.names))
        for name in cols:
            _expect(rc["c"][1].column(name).equals(full.column(name)),
                    "MSMQ batch: columns=%r: column %r differs from the full batch" % (cols, name))


# ----------------------------------------------------------------- framers
def _chunks(data: bytes, seed: int):
    """Deterministic chunking driven by the input: (kind, payload) steps,
    kind "feed" or "gap"."""
    pos, i = 0, seed
    while pos < len(data):
        i = (i * 1103515245 + 12345) & 0x7FFFFFFF
        n = 1 + (i >> 8) % 97
        if (i >> 4) % 23 == 0:
            yield "gap", n
        else:
            yield "feed", data[pos:pos + n]
        pos += n


def run_mq_framer(stream: bytes, seed: int = 0, decode: bool = True) -> list:
    from mqcodec.ibmmq.framing import FramingError, Message, MQStreamFramer, Resynchronised, Segment

    f = MQStreamFramer()
    events, end = [], 0
    for kind, x in _chunks(stream, seed):
        if kind == "gap":
            f.gap(x)
            end += x
        else:
            f.feed(x)
            end += len(x)
        events += f.events()
    f.close()
    events += f.events()
    _expect(all(isinstance(e, (Segment, Message, FramingError, Resynchronised)) for e in events),
            "MQ framer: unexpected event type")
    spans = sorted([(e.offset, e.offset + e.length) for e in events if isinstance(e, Segment)]
                   + [(e.offset, e.offset + e.length) for e in events if isinstance(e, FramingError)
                      and e.structure in ("TSH", "TSHM", "TSHC") and e.field != "CtlFlag1"])
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        _expect(a1 <= b0, "MQ framer: overlapping units %r %r" % ((a0, a1), (b0, b1)))
    _expect(not spans or (spans[0][0] >= 0 and spans[-1][1] <= end), "MQ framer: unit outside the stream")
    for e in events:
        if isinstance(e, FramingError):
            _expect(len(e.raw) <= e.length or e.length == 0, "MQ framer: raw longer than the unit")
        if isinstance(e, Message) and decode:
            m, _ = _only_decode_error(e.decode)
            if m is not None:
                m.to_dict()
            _only_decode_error(e.decode, lenient=True)
            enc = e.encode()
            _expect(isinstance(enc, bytes), "MQ framer: Message.encode")
    return events


def fuzz_mq_framer(data: bytes) -> None:
    seed = data[0] if data else 0
    run_mq_framer(data, seed)


def run_msmq_framer(stream: bytes, seed: int = 0, synchronised: bool = True, decode: bool = True) -> list:
    from mqcodec.msmq import decode_packet
    from mqcodec.msmq.framing import CLOSED, NEED_DATA, FramingError, MSMQStreamFramer, Packet, Resynchronised

    f = MSMQStreamFramer(synchronised=synchronised)
    events, gaps, end = [], [], 0

    def drain():
        while True:
            ev = f.next_event()
            if ev is NEED_DATA or ev is CLOSED:
                return
            events.append(ev)

    for kind, x in _chunks(stream, seed):
        if kind == "gap":
            gaps.append((end, x))
            f.gap(x)
            end += x
        else:
            f.feed(x)
            end += len(x)
        drain()
    f.close()
    drain()
    _expect(all(isinstance(e, (Packet, FramingError, Resynchronised)) for e in events),
            "MSMQ framer: unexpected event type")
    # every stream byte is in exactly one Packet.data / FramingError.raw, or in a gap
    pos = 0
    gi = list(gaps)
    for e in events:
        if isinstance(e, Packet):
            raw = e.data
        elif isinstance(e, FramingError) and e.raw:
            raw = e.raw
        else:
            continue
        while gi and gi[0][0] <= pos:
            g0, gn = gi.pop(0)
            pos = max(pos, g0 + gn)
        _expect(e.offset == pos, "MSMQ framer: byte accounting: event at %d, expected %d" % (e.offset, pos))
        pos += len(raw)
    while gi:
        g0, gn = gi.pop(0)
        pos = max(pos, g0 + gn)
    _expect(pos == end, "MSMQ framer: accounted %d of %d bytes" % (pos, end))
    if decode:
        for e in events:
            if isinstance(e, Packet):
                p, _ = _only_decode_error(decode_packet, e.data)
                if p is not None:
                    p.to_dict()
    return events


def fuzz_msmq_framer(data: bytes) -> None:
    seed = data[0] if data else 0
    run_msmq_framer(data, seed, synchronised=bool(seed & 1))


# ----------------------------------------------------------------- capture
def _drain_capture(data: bytes, strict: bool = False, keep: bool = True) -> list:
    """Every event of a whole capture, each checked as it comes; ``keep=False``
    keeps none of them, so that invariant 4 measures the capture layer's memory
    and not the harness's (a gzip input inflates up to ~1,000:1: its events may
    hold far more than 256 times the input, the layer itself may not)."""
    from mqcodec.capture import Malformed, Skipped, iter_capture_events
    from mqcodec.capture.packet import UDPDatagram
    from mqcodec.capture.tcp import Gap, OverlapConflict, StreamClosed, StreamData, StreamOpened

    kinds = (Malformed, Skipped, UDPDatagram, Gap, StreamClosed, StreamData, StreamOpened, OverlapConflict)
    events = []
    for e in iter_capture_events(io.BytesIO(data), strict=strict):
        _expect(isinstance(e, kinds), "capture: unexpected event type")
        # a conflict names bytes of its direction that were compared: a non-empty range
        _expect(type(e) is not OverlapConflict or e.length > 0, "capture: empty overlap conflict")
        if keep:
            events.append(e)
    return events


def fuzz_capture(data: bytes) -> None:
    """A whole capture file: file-level errors may raise DecodeError.  Stage (a)
    in both implementations (``mqcodec.capture.iter_frames``) gives the same
    frames and then the same error, if any (the compiled walk hands damage,
    and file headers it does not take, to the pure reader without reading
    anything twice)."""
    _only_decode_error(_drain_capture, data, keep=False)
    if not _core_built():
        return
    _expect(_frames_then_error(data, "c") == _frames_then_error(data, "py"),
            "capture: the compiled walk's frames or error differ from the pure reader's")


def _frames_then_error(data: bytes, impl: str):
    from mqcodec.capture import iter_frames

    frames = []
    try:
        for frame in iter_frames(data, impl=impl):
            frames.append(tuple(frame))
    except DecodeError as exc:
        return frames, (exc.structure, exc.field, exc.offset, str(exc))
    return frames, None


PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)   # Ethernet


def pcap_of(frames, linktype: int = 1) -> bytes:
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
    for i, fr in enumerate(frames):
        out += struct.pack("<IIII", 1000 + i, 0, len(fr), len(fr)) + fr
    return bytes(out)


def fuzz_frames(data: bytes) -> None:
    """Link/IP/TCP/UDP decoding: each input is cut into frames of a valid
    pcap file (linktype from byte 0), so nothing may raise at all."""
    if not data:
        return
    linktype = (1, 0, 101, 113, 276)[data[0] % 5]
    frames = [fr for fr in split_records(data[1:]) if fr is not None]
    events = _drain_capture(pcap_of(frames, linktype), strict=True)
    # feed the TCP payloads to both stream framers (they must cope with anything)
    from mqcodec.capture.tcp import StreamData
    from mqcodec.msmq.capture_framer import CaptureFramer, CapturedEvent
    for e in events:
        if isinstance(e, StreamData) and e.data:
            run_mq_framer(bytes(e.data), 0, decode=False)
            run_msmq_framer(bytes(e.data), 0, decode=False)
    # and the whole event sequence (gaps included) to the MSMQ capture framer, all ports
    cf = CaptureFramer(tcp_ports=None, udp_ports=None)
    out = []
    for e in events:
        out += cf.on_event(e)
    out += cf.close()
    _expect(all(isinstance(c, CapturedEvent) for c in out), "CaptureFramer: unexpected event type")


# ----------------------------------------------------------------- capture core, read in pieces
_UNITS = []


def _core_built() -> bool:
    import importlib.util

    return importlib.util.find_spec("mqcodec._ext.capture_core") is not None


def _capture_units():
    """tests/capture_units.py (both capture implementations through the
    converter); None when the compiled core is not built."""
    if not _UNITS:
        import importlib
        import os
        import sys

        if not _core_built():
            _UNITS.append(None)
            return None
        tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if tests not in sys.path:
            sys.path.insert(0, tests)
        _UNITS.append(importlib.import_module("capture_units"))
    return _UNITS[0]


def _core_chunks(data: bytes) -> list:
    """Read sizes (cycled) derived from the input, so that every record
    boundary case is reached: 1..64 bytes, then 1..4 KiB, then 24 + n."""
    if not data:
        return [1]
    h = data[-1] ^ (len(data) * 131)
    return [1 + h % 64, 1 + (h * 7919) % 4096, 24 + (h >> 3) % 40]


def fuzz_capture_core(data: bytes) -> None:
    """A whole capture file through the compiled capture core (the converter,
    ``capture_impl="c"``), read in input-driven pieces and whole, and through
    the pure pipeline.  Invariants: nothing but a DecodeError of the file
    header raises (and then from all three); the units, tables, summary and
    report do not depend on the pieces; the compiled implementation's equal
    the pure one's."""
    cu = _capture_units()
    if cu is None:
        return
    try:   # the converter's one-off imports and tables, not charged to the first input
        from .harness_convert import _warm_up
    except ImportError:
        from harness_convert import _warm_up
    _warm_up()

    def run(impl, sizes):
        try:
            return cu.convert_units(data, impl, sizes).shared()
        except DecodeError as exc:
            return ("DecodeError", str(exc))

    pieces, whole = run("c", _core_chunks(data)), run("c", None)
    _expect(pieces == whole, "capture core: the units depend on the pieces the file is read in")
    _expect(whole == run("py", None), "capture core: the compiled implementation's units differ from the pure one's")


def fuzz_stream_events(data: bytes) -> None:
    """Stage (b) in both implementations (``mqcodec.capture.iter_stream_events``):
    each input is cut into the frames of a valid pcap file (link type from
    byte 0, as :func:`fuzz_frames`); the compiled reassembly gives the pure
    one's TCP stream events, in order, field for field (but the reasons the
    core does not keep).  Byte 0 also picks the closed map's size, and the
    compiled core reads the capture in pieces of 64-4,096 bytes, its events
    taken after each: it frees and reuses the records of connections it forgot."""
    if not data or not _core_built():
        return
    from mqcodec.capture import iter_stream_events
    from mqcodec.capture.reader import PiecesFile

    linktype = (1, 0, 101, 113, 276)[data[0] % 5]
    max_closed = (65536, 0, 1, 3)[data[0] // 5 % 4]
    capture = pcap_of([fr for fr in split_records(data[1:]) if fr is not None], linktype)

    def view(impl):
        size = 64 << (data[0] // 20 % 7)   # (a read of a PiecesFile never joins two pieces)
        source = capture if impl == "py" else PiecesFile(capture[i:i + size] for i in range(0, len(capture), size))
        return [(type(e).__name__,) + tuple(None if f == "reason" else getattr(e, f) for f in e._fields)
                for e in iter_stream_events(source, impl=impl, max_closed=max_closed)]

    _expect(view("c") == view("py"), "stream events: the compiled reassembly differs from the pure one")


# ----------------------------------------------------------------- trace route
def fuzz_route(data: bytes) -> None:
    """``mqcodec route`` on one input (a PCF body, or an MQ message whose body
    is PCF): load_route_inputs / decode_pcf -> trace_route_view ->
    to_dict -> build_route of the message once and twice -> the text and DOT renderers,
    encoded as the CLI writes them.  A message that is not a trace-route
    message, reply or activity report gives ValueError from build_route (what
    the CLI reports); nothing else may escape."""
    from mqcodec.ibmmq import decode_pcf
    from mqcodec.ibmmq.route import build_route, load_route_inputs, render_dot, render_text
    from mqcodec.ibmmq.traceroute import trace_route_view
    from mqcodec.render import to_json

    try:
        loaded = load_route_inputs([data])[0]   # what ``mqcodec route FILE`` reads (MQMD first or bare PCF)
    except ValueError:                          # DecodeError is a ValueError; the CLI reports both
        if data[:4] not in (b"MD  ", b"\xd4\xc4\x40\x40"):
            m, err = _only_decode_error(decode_pcf, data)
            _expect(m is None, "route: load_route_inputs rejects what decode_pcf accepts")
        return
    msg = loaded.body if data[:4] in (b"MD  ", b"\xd4\xc4\x40\x40") else loaded   # an MQMessage keeps its MQMD
    if data[:4] not in (b"MD  ", b"\xd4\xc4\x40\x40"):
        from mqcodec.ibmmq import encode_pcf
        _expect(encode_pcf(msg) == encode_pcf(decode_pcf(data)), "route: load_route_inputs != decode_pcf")
    view = trace_route_view(msg)
    if view is None:
        try:
            build_route([msg])
        except ValueError:
            return
        raise InvariantViolation("route: build_route accepted a message trace_route_view does not")
    d = view.to_dict()
    to_json(d).encode("utf-8", "backslashreplace")
    for msgs in ([loaded, loaded], [loaded], [msg]):
        try:
            route = build_route(msgs)
        except ValueError as exc:
            raise InvariantViolation("route: build_route rejects a trace-route view: %s" % exc)
        # exactly what _cmd_route writes
        render_text(route).encode("utf-8", "backslashreplace")
        render_dot(route).encode()
    # the same message twice is one input read twice: merged, every activity once (route.py rule 2)
    _expect(len(build_route([loaded, loaded]).activities) == len(build_route([msg]).activities)
            == len(view.activities),
            "route: build_route of the message twice does not hold its activities once")


# ----------------------------------------------------------------- MSMQ reports and format names
def _utf16(data: bytes) -> str:
    """The input as text: UTF-16LE with surrogatepass (lone surrogates kept),
    an odd last byte dropped."""
    return bytes(data[:len(data) & ~1]).decode("utf-16-le", "surrogatepass")


def fuzz_report(data: bytes) -> None:
    """Report labels and bodies ([MS-MQQB] 3.1.5.8.9, seed 003) and format
    names ([MS-MQMQ] 2.1): the parsers raise only their documented
    DecodeError subclasses (ReportParseError, FormatNameError); the str and
    UTF-16LE-bytes forms of one input give the same result; what parses
    re-parses from its own rendering to an equal value (the unit tests'
    round trips: tests/test_msmq_report.py, tests/test_msmq_formatname.py)."""
    from mqcodec.msmq.formatname import FormatName, FormatNameError
    from mqcodec.msmq.mqf import MQFFormatNameElement
    from mqcodec.msmq.report import ReportParseError, parse_report_body, parse_report_label

    text = _utf16(data)
    try:
        strict = bytes(data).decode("utf-16-le")     # what the bytes form accepts
    except UnicodeDecodeError:
        strict = None
    for parse in (parse_report_label, parse_report_body):
        res = {}
        for form, arg in (("str", text), ("bytes", bytes(data))):
            try:
                res[form] = parse(arg)
            except ReportParseError as exc:
                _expect(isinstance(exc.offset, int) and 0 <= exc.offset <= len(arg),
                        "%s: error offset %r outside the input" % (parse.__name__, exc.offset))
                res[form] = None
        if strict is not None and strict == text:
            _expect((res["str"] is None) == (res["bytes"] is None) and res["str"] == res["bytes"],
                    "%s: str and UTF-16LE forms disagree: %r / %r" % (parse.__name__, res["str"], res["bytes"]))
        for r in res.values():
            if r is None:
                continue
            t = r.to_text()
            _expect(parse(t) == r, "%s: parse(to_text()) != the value" % parse.__name__)
            try:
                b = t.encode("utf-16-le")
            except UnicodeEncodeError:
                continue                           # a lone surrogate has no strict UTF-16LE form
            _expect(parse(b).to_text() == t, "%s: UTF-16LE round trip" % parse.__name__)
    for cand in {text, text.rstrip("\x00")}:
        try:
            fn = FormatName.parse(cand)
        except FormatNameError:
            continue
        _expect(str(fn) == cand, "FormatName: str(parse(t)) != t for %r" % (cand,))
        _expect(FormatName.parse(str(fn)) == fn, "FormatName: parse(str(fn)) != fn for %r" % (cand,))
        for el in ([fn] if fn.kind != "MULTIPLE" else list(fn.elements)):
            try:
                e = MQFFormatNameElement.from_format_name(el, len(data) % 4)
            except EncodeError:
                continue                           # a kind the MQF element cannot carry
            raw = b"\xee" * (len(data) % 4) + e.encode()
            e2, nxt = MQFFormatNameElement.decode(raw, len(data) % 4, len(raw), base=0)
            _expect(nxt == len(raw) and e2.format_name == el,
                    "MQFFormatNameElement: %r does not round-trip" % (str(el),))


# ----------------------------------------------------------------- decoders at an offset
def _err_key(exc, shift: int = 0):
    return None if exc is None else (exc.structure, exc.field, exc.offset - shift)


def fuzz_offsets(data: bytes) -> None:
    """The decoders that take an offset into a larger buffer: bytes 0-3 give
    the offset, 4-7 the end (0xFFFFFFFF: None), both little-endian and reduced
    modulo the buffer (data[8:]) length + 9.  Each is compared with the
    slice-based decode of the same bytes: same result, and errors at the same
    place (absolute offsets = slice offsets + offset)."""
    from mqcodec.ibmmq import decode_message, decode_pcf, encode_message, encode_pcf
    from mqcodec.ibmmq.framing import decode_segment_header
    from mqcodec.ibmmq.headers import decode_md
    from mqcodec.ibmmq.message import decode_message_at
    from mqcodec.ibmmq.pcf import decode_pcf_at
    from mqcodec.msmq.queue_manager import decode_lookup_identifier

    if len(data) < 8:
        return
    off_raw, end_raw = struct.unpack_from("<II", data, 0)
    buf = bytes(data[8:])
    n = len(buf)
    off = off_raw % (n + 9)
    end = None if end_raw == 0xFFFFFFFF else end_raw % (n + 9)
    eff_end = n if end is None else min(end, n)
    inside = off <= eff_end
    piece = buf[off:eff_end]
    for lenient in (False, True):
        at, e1 = _only_decode_error(decode_message_at, buf, off, end, lenient=lenient)
        if not inside:
            _expect(at is None, "decode_message_at: decoded with offset %d past end %d" % (off, eff_end))
            continue
        sl, e2 = _only_decode_error(decode_message, piece, lenient=lenient)
        _expect((at is None) == (sl is None), "decode_message_at(%d, %r) vs slice: %s / %s" % (off, end, e1, e2))
        if at is not None:
            _expect(encode_message(at) == encode_message(sl), "decode_message_at vs slice: different messages")
        elif not lenient:
            _expect(_err_key(e1, off) == _err_key(e2), "decode_message_at vs slice errors: %r / %r" % (e1, e2))
    if off <= n:
        md, e1 = _only_decode_error(decode_md, buf, off)
        md2, e2 = _only_decode_error(decode_md, buf[off:])
        _expect((md is None) == (md2 is None), "decode_md at %d vs slice: %s / %s" % (off, e1, e2))
        if md is not None:
            _expect(md == md2, "decode_md at an offset vs slice: different MQMDs")
        else:
            _expect(_err_key(e1, off) == _err_key(e2), "decode_md errors: %r / %r" % (e1, e2))
        seg, e1 = _only_decode_error(decode_segment_header, buf, off)
        seg2, e2 = _only_decode_error(decode_segment_header, buf[off:], 0, stream_offset=off)
        _expect(seg == seg2 and _err_key(e1) == _err_key(e2),
                "decode_segment_header at %d vs slice: %r %s / %r %s" % (off, seg, e1, seg2, e2))
        lid = buf[off:off + 8]
        parts, err = _only_decode_error(decode_lookup_identifier, lid)
        _expect((parts is None) == (len(lid) != 8), "decode_lookup_identifier: %d bytes: %r" % (len(lid), err))
        if parts is not None:
            x = int.from_bytes(lid, "little")
            _expect(decode_lookup_identifier(x) == parts and (parts.high_order_byte << 56 | parts.sequential_id_low) == x,
                    "decode_lookup_identifier: parts do not recompose the value")
    if inside:
        for enc in (None, 273, 546):
            r, e1 = _only_decode_error(decode_pcf_at, buf, off, encoding=enc, ccsid=None, end=end)
            whole, e2 = _only_decode_error(decode_pcf, piece, encoding=enc)
            if r is not None:
                m, nxt = r
                _expect(off <= nxt <= eff_end, "decode_pcf_at: next offset %d outside [%d, %d]" % (nxt, off, eff_end))
            if whole is not None and not whole.trailing and whole.eph is None:
                _expect(r is not None, "decode_pcf_at fails (%s) where decode_pcf of the slice succeeds" % e1)
                _expect(encode_pcf(r[0]) == encode_pcf(whole) and r[1] == eff_end,
                        "decode_pcf_at vs slice: different messages")
            if e1 is not None:
                _expect(e1.offset >= off, "decode_pcf_at: error offset %d before the offset %d" % (e1.offset, off))


#: Invariant 4 per input.  Python-heap peak (tracemalloc: Python objects, bytes,
#: numpy arrays; not C malloc of the Cython modules, which the ASan campaigns bound
#: with -malloc_limit_mb) at most ALLOC_PER_BYTE x the input + ALLOC_BASE; CPU time
#: at most TIME_BASE + TIME_PER_BYTE x the input.  The corpus peaks at 435x for a
#: 132-byte MSMQ packet (a fixed ~57 KB of objects) and at 41x for 8 KiB PCF bodies;
#: a quadratic walk over a 16 KiB input, or an allocation from a claimed length,
#: exceeds these by orders of magnitude.
ALLOC_PER_BYTE = 256
ALLOC_BASE = 4 << 20
TIME_BASE = 2.0
TIME_PER_BYTE = 200e-6


_warm: set = set()

#: targets whose input is a capture file, which may be gzip-compressed
CAPTURE_FILE_TARGETS = frozenset({"capture", "capture_core", "convert"})
#: a gzip capture is inflated and parsed a piece at a time (``capture.reader``:
#: at most 1 MiB of output per step); the frames of one piece -- up to 65,536
#: minimal records -- exist at once, whatever the compressed input's size
GZIP_PIECE_ALLOWANCE = 32 << 20


def _gzip_header_length(data: bytes) -> int:
    """Length of the gzip member header at the start of ``data`` (RFC 1952
    2.3: ID1 ID2 CM FLG MTIME XFL OS, then FEXTRA, FNAME, FCOMMENT, FHCRC as
    FLG says), or 0 when it is cut short."""
    if len(data) < 10:
        return 0
    flags, pos = data[3], 10
    if flags & 0x04:   # FEXTRA: XLEN, then XLEN bytes
        if len(data) < pos + 2:
            return 0
        pos += 2 + int.from_bytes(data[pos:pos + 2], "little")
    for bit in (0x08, 0x10):   # FNAME, FCOMMENT: zero-terminated
        if flags & bit:
            end = data.find(b"\0", pos)
            if end < 0:
                return 0
            pos = end + 1
    if flags & 0x02:   # FHCRC
        pos += 2
    return pos if pos <= len(data) else 0


def inflated_length(data: bytes, cap: int = 1 << 30) -> int:
    """How many bytes the gzip members at the start of ``data`` inflate to
    (counted in bounded steps, stopping at the first damage in the deflate
    data or at ``cap``): the work a capture reader has to do on a compressed
    input.  A member's trailer (CRC-32, ISIZE) is not checked: the readers
    hand its bytes on before they check it (docs/ROBUSTNESS.md), so a bad
    trailer does not make the work smaller."""
    total, rest = 0, data
    while rest[:2] == b"\x1f\x8b" and total < cap:
        start = _gzip_header_length(rest)
        if not start:
            break
        d = zlib.decompressobj(-15)   # the member's raw deflate data
        buf = rest[start:]
        try:
            while buf and total < cap and not d.eof:
                # small input steps: output made before damage is counted
                total += len(d.decompress(buf[:4096], 1 << 20))
                buf = d.unconsumed_tail + buf[4096:]
            while not d.eof and total < cap:
                out = d.decompress(b"", 1 << 20)
                if not out:
                    break
                total += len(out)
        except zlib.error:
            break
        if not d.eof:
            break
        rest = d.unused_data[8:]   # past the trailer
    return total


def bounded(target: str, data: bytes) -> None:
    """Run ``TARGETS[target](data)`` and check invariant 4 on this input: the
    peak of traced allocations and the CPU time stay within a linear bound of
    ``len(data)``.  The time bound is CPU time, so load does not trip it."""
    fn = TARGETS[target]
    if target not in _warm:
        # the first call imports and caches (pyarrow, codec tables): not the input's cost
        fn(data)
        _warm.add(target)
    outer = tracemalloc.is_tracing()
    if not outer:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        t0 = time.process_time()
        fn(data)
        cpu = time.process_time() - t0
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        if not outer:
            tracemalloc.stop()
    n = len(data)
    # a compressed capture: memory is bounded per inflated piece (a constant),
    # time is linear in what the reader inflates and parses
    work, base = n, ALLOC_BASE
    if target in CAPTURE_FILE_TARGETS and data[:2] == b"\x1f\x8b":
        work, base = max(n, inflated_length(data)), ALLOC_BASE + GZIP_PIECE_ALLOWANCE
    _expect(peak <= ALLOC_PER_BYTE * n + base,
            "%s: %d bytes of input allocated a peak of %d bytes (bound %d x + %d)"
            % (target, n, peak, ALLOC_PER_BYTE, base))
    _expect(cpu <= TIME_BASE + TIME_PER_BYTE * work,
            "%s: %d bytes of input (%d to parse) took %.2f s of CPU (bound %.1f s + %g s/byte)"
            % (target, n, work, cpu, TIME_BASE, TIME_PER_BYTE))


TARGETS = {
    "pcf": fuzz_pcf,
    "mq": fuzz_mq,
    "msmq": fuzz_msmq,
    "ping": fuzz_ping,
    "batch_pcf": fuzz_batch_pcf,
    "batch_mq": fuzz_batch_mq,
    "batch_msmq": fuzz_batch_msmq,
    "batch_calls": fuzz_batch_calls,
    "mq_framer": fuzz_mq_framer,
    "msmq_framer": fuzz_msmq_framer,
    "capture": fuzz_capture,
    "frames": fuzz_frames,
    "capture_core": fuzz_capture_core,
    "stream_events": fuzz_stream_events,
    "route": fuzz_route,
    "report": fuzz_report,
    "offsets": fuzz_offsets,
}


def fuzz_convert(data: bytes) -> None:
    """The whole converter, both engines, under a tiny byte budget
    (tests/fuzz/harness_convert.py)."""
    # imported late (it imports this module), as fuzz.harness_convert under pytest
    if __package__:
        from .harness_convert import fuzz_convert as run
    else:
        from harness_convert import fuzz_convert as run
    run(data)


TARGETS["convert"] = fuzz_convert

#: The targets whose every input runs whole conversions (the converter, both
#: capture implementations: ~100 ms an input, 30-100x the others).  The CI's
#: mixed pass (``run_atheris.py all``) seeds them with their seeds only and checks
#: invariant 4 on fewer of their inputs; tests/test_fuzz_regressions.py replays
#: their seeds and committed corpus whole, and long campaigns run them alone.
SLOW_TARGETS = ("capture_core", "convert")

#: The targets in the order ``fuzz_all`` selects them by the input's first byte.
ALL_ORDER = tuple(sorted(TARGETS))


def fuzz_all(data: bytes) -> None:
    """Every target in one process (the CI's short atheris pass): the first
    byte picks the target (modulo their number), the rest is its input."""
    if data:
        TARGETS[ALL_ORDER[data[0] % len(ALL_ORDER)]](data[1:])


def all_input(target: str, data: bytes) -> bytes:
    """``data`` for ``target`` as an input of :func:`fuzz_all`."""
    return bytes([ALL_ORDER.index(target)]) + data
