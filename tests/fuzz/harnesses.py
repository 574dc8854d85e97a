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
        msg.to_dict()
        _stable(decode_pcf, encode_pcf, msg, "PCF")
        _expect(encode_pcf(msg) == data, "PCF: strict decode does not re-encode byte for byte")
    lmsg, _ = _only_decode_error(decode_pcf, data, lenient=True)
    if lmsg is not None:
        lmsg.to_dict()
        _lenient_exact(encode_pcf, lmsg, data, "PCF")
    for enc in (273, 546):
        _only_decode_error(decode_pcf, data, encoding=enc)


def fuzz_mq(data: bytes) -> None:
    from mqcodec.ibmmq import decode_message, encode_message

    msg, err = _only_decode_error(decode_message, data)
    if msg is not None:
        msg.to_dict()
        _stable(decode_message, encode_message, msg, "MQ message")
        _expect(encode_message(msg) == data, "MQ message: strict decode does not re-encode byte for byte")
    lmsg, _ = _only_decode_error(decode_message, data, lenient=True)
    if lmsg is not None:
        lmsg.to_dict()
        _lenient_exact(encode_message, lmsg, data, "MQ message")


# ----------------------------------------------------------------- MSMQ
def fuzz_msmq(data: bytes) -> None:
    from mqcodec.msmq import decode_packet, encode_packet

    pkt, err = _only_decode_error(decode_packet, data)
    if pkt is not None:
        pkt.to_dict()
        if not getattr(pkt, "trailing", b""):
            _stable(decode_packet, encode_packet, pkt, "MSMQ packet")
    for kw in ({"lenient": True}, {"order": "implementation"}, {"remote_read": True}):
        p, _ = _only_decode_error(decode_packet, data, **kw)
        if p is not None:
            p.to_dict()
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


def fuzz_batch_pcf(data: bytes) -> None:
    from mqcodec.batch import decode_pcf_batch

    records = split_records(data)
    for enc in (None, 273, 546):
        r = _both(decode_pcf_batch, records, encoding=enc)
        _expect(r["c"][0] == r["py"][0] == "ok", "PCF batch raised: %r" % (r,))
        _batch_equal(r["c"][1].headers, r["py"][1].headers, "PCF batch headers")
        _batch_equal(r["c"][1].parameters, r["py"][1].parameters, "PCF batch parameters")


def fuzz_batch_mq(data: bytes) -> None:
    from mqcodec.batch import decode_mq_batch

    records = split_records(data)
    md_only = [bool(i & 1) for i in range(len(records))]
    for kw in ({}, {"encoding": 546}, {"md_only": md_only}):
        r = _both(decode_mq_batch, records, **kw)
        _expect(r["c"][0] == r["py"][0] == "ok", "MQ batch raised: %r" % (r,))
        _batch_equal(r["c"][1], r["py"][1], "MQ batch")


def fuzz_batch_msmq(data: bytes) -> None:
    from mqcodec.batch import decode_msmq_batch

    records = split_records(data)
    r = _both(decode_msmq_batch, records)
    _expect(r["c"][0] == r["py"][0] == "ok", "MSMQ batch raised: %r" % (r,))
    _batch_equal(r["c"][1], r["py"][1], "MSMQ batch")


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
def _drain_capture(data: bytes, strict: bool = False) -> list:
    from mqcodec.capture import Malformed, Skipped, iter_capture_events
    from mqcodec.capture.packet import UDPDatagram
    from mqcodec.capture.tcp import Gap, StreamClosed, StreamData, StreamOpened

    events = list(iter_capture_events(io.BytesIO(data), strict=strict))
    _expect(all(isinstance(e, (Malformed, Skipped, UDPDatagram, Gap, StreamClosed, StreamData, StreamOpened))
                for e in events), "capture: unexpected event type")
    return events


def fuzz_capture(data: bytes) -> None:
    """A whole capture file: file-level errors may raise DecodeError."""
    _only_decode_error(_drain_capture, data)


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
    from mqcodec.msmq.framing import CaptureFramer, CapturedEvent
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


# ----------------------------------------------------------------- compiled capture core
_CORE_REF = []


def _core_reference():
    """tests/test_capture_core.py: its pure reference (``pure_messages``) and
    its driver of the core (``run_core``); None when the core is not built."""
    if not _CORE_REF:
        import importlib
        import os
        import sys

        try:
            importlib.import_module("mqcodec._ext.capture_core")
        except ImportError:
            _CORE_REF.append(None)
            return None
        tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if tests not in sys.path:
            sys.path.insert(0, tests)
        _CORE_REF.append(importlib.import_module("test_capture_core"))
    return _CORE_REF[0]


def _core_chunks(data: bytes) -> list:
    """Chunk sizes (cycled) derived from the input, so that every record
    boundary case is reached: 1..64 bytes, then 1..4 KiB, then 24 + n."""
    if not data:
        return [1]
    h = data[-1] ^ (len(data) * 131)
    return [1 + h % 64, 1 + (h * 7919) % 4096, 24 + (h >> 3) % 40]


def fuzz_capture_core(data: bytes) -> None:
    """The compiled capture core (``mqcodec._ext.capture_core.CaptureCore``) on a
    whole capture file fed in input-driven chunks.  Invariants: nothing raises
    (a capture it cannot handle sets ``supported = False``); the output does not
    depend on the chunking; and when the core supports the capture and the pure
    pipeline reads it without a file error, every connection's messages equal
    the pure pipeline's (a prefix, of the announced length, for the connections
    it sends to replay).  ReplayFilter runs too (no crash)."""
    ref = _core_reference()
    if ref is None:
        return
    core, msgs, deferred = ref.run_core(data, _core_chunks(data))
    core2, msgs2, deferred2 = ref.run_core(data, None)
    _expect(core.supported == core2.supported, "capture core: supported depends on the chunking")

    def canon(m):
        return {k: [x[:-1] for x in v] for k, v in m.items()}

    _expect(canon(msgs) == canon(msgs2), "capture core: messages depend on the chunking")
    _expect([tuple(f) for f in deferred] == [tuple(f) for f in deferred2],
            "capture core: deferred frames depend on the chunking")
    _expect(core.replay() == core2.replay(), "capture core: replay set depends on the chunking")
    if core.supported:
        from mqcodec._ext.capture_core import ReplayFilter
        rf = ReplayFilter(core)
        for i in range(0, len(data), 4096):
            rf.feed(data[i:i + 4096])
    if not core.supported:
        return
    try:
        pure = ref.pure_messages(data)
    except DecodeError:
        return          # a file error mid-capture: the core stops there (core.stop), not compared
    seqs = sorted(m[-1] for v in msgs.values() for m in v)
    _expect(seqs == list(range(len(seqs))), "capture core: emission sequence numbers not 0..n-1")
    replay = {}
    for _, (cip, cport, sip, sport), stream, e0, e1 in core.replay():
        replay[(stream, cip, cport)] = e0
        replay[(stream, sip, sport)] = e1
    replay_streams = {k[0] for k in replay}
    got_all = canon(msgs)
    for key in set(got_all) | set(pure):
        got, want = got_all.get(key, []), pure.get(key, [])
        if key[0] in replay_streams:
            _expect(got == want[:len(got)], "capture core: replay connection %r: not a prefix of the pure rows"
                    % (key,))
            _expect(replay.get(key, 0) == len(got), "capture core: %r: emitted count %r, replay says %r"
                    % (key, len(got), replay.get(key)))
        else:
            _expect(got == want, "capture core: connection %r: %d messages, pure %d (or different)"
                    % (key, len(got), len(want)))


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
    _expect(peak <= ALLOC_PER_BYTE * n + ALLOC_BASE,
            "%s: %d bytes of input allocated a peak of %d bytes (bound %d x + %d)"
            % (target, n, peak, ALLOC_PER_BYTE, ALLOC_BASE))
    _expect(cpu <= TIME_BASE + TIME_PER_BYTE * n,
            "%s: %d bytes of input took %.2f s of CPU (bound %.1f s + %g s/byte)"
            % (target, n, cpu, TIME_BASE, TIME_PER_BYTE))


TARGETS = {
    "pcf": fuzz_pcf,
    "mq": fuzz_mq,
    "msmq": fuzz_msmq,
    "ping": fuzz_ping,
    "batch_pcf": fuzz_batch_pcf,
    "batch_mq": fuzz_batch_mq,
    "batch_msmq": fuzz_batch_msmq,
    "mq_framer": fuzz_mq_framer,
    "msmq_framer": fuzz_msmq_framer,
    "capture": fuzz_capture,
    "frames": fuzz_frames,
    "capture_core": fuzz_capture_core,
}


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
