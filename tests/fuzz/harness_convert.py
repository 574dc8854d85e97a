"""Fuzz target ``convert``: the whole converter (``mqcodec.convert.Converter``)
on a capture file, under a tiny global byte budget.

The input is a capture file (pcap, pcapng, gzip: whatever ``open_capture``
reads).  Its last byte picks the options (so mutating the capture also moves
them): ``buffer_budget`` 4 KiB .. 1 MiB (``4 KiB << (b % 9)``),
``chunk_bytes`` 1 KiB .. 128 KiB, ``chunk_messages`` 5 .. 20,000; ``raw=True``
so every row carries its bytes.  The capture is converted in memory (no
files) twice: with the pure pipeline (``capture_impl="py"``, the reference)
and with the default engine (the compiled capture core when it is built,
which gives a capture up to the pure pipeline past the byte budget).

Invariants (a violation raises ``InvariantViolation``; any other exception
propagates and is the finding):

1. nothing but a file-level :class:`mqcodec.DecodeError` escapes, and then
   both engines raise it alike (same type and text);
2. both engines give equal tables: every message row equal but for
   ``message_key``, every PCF parameter equal and joined to the same message,
   the summary counters equal -- as ``tests/test_capture_engines.py``
   compares them;
3. the budget's counters ("budget cuts", "bytes cut by the budget") are at
   most the input's size: a byte is released at most once;
4. every row's raw bytes come from the input: each row at most the input's
   size, all rows together too (no stream byte is in two rows, none is
   invented), and ``message_key`` is unique.

``SEEDS()``: the ``capture_core`` target's seeds (simulator captures, the start
of the real capture) and two small captures that exceed a 4 KiB budget at
once (IBM MQ segments and MSMQ packets claiming their maximum length on
several connections that never complete them).
"""
from __future__ import annotations

import struct

from mqcodec.errors import DecodeError

try:        # as tests/fuzz/harness_convert.py on sys.path (run_atheris.py) or as fuzz.harness_convert (pytest)
    from .harnesses import InvariantViolation, _expect
except ImportError:
    from harnesses import InvariantViolation, _expect

__all__ = ["fuzz_convert", "SEEDS", "options_for", "convert_once"]

KiB = 1024
#: summary counters that say which engine did the work, not what the capture holds
ENGINE_COUNTERS: tuple = ()
IDENTITY = ("capture", "tcp_stream", "stream_offset", "protocol", "frame", "src_ip", "src_port", "kind")


def options_for(data: bytes) -> dict:
    """ConvertOptions keywords picked by the input's last byte."""
    b = data[-1] if data else 0
    return {
        "buffer_budget": (4 * KiB) << (b % 9),
        "chunk_bytes": KiB << ((b // 9) % 8),
        "chunk_messages": (5, 50, 500, 20000)[(b // 72) % 4],
        "raw": True,
    }


def convert_once(data: bytes, capture_impl, opts: dict):
    """One in-memory conversion: (rows, PCF rows, summary, report) with rows and
    PCF rows canonical (sorted reprs without ``message_key``), or the
    DecodeError it raised."""
    import pyarrow as pa

    from mqcodec.convert import ConvertOptions, Converter
    from mqcodec.convert.sinks import TableCollector

    tables = TableCollector()
    conv = Converter(tables, ConvertOptions(capture_impl=capture_impl, **opts))
    try:
        conv.add_capture(data, name="fuzz")
    except DecodeError as exc:
        return exc
    report = conv.report()
    messages = tables.rows()
    params = tables.table("pcf_parameters").to_pylist()
    by_key = {r["message_key"]: tuple(r[k] for k in IDENTITY) for r in messages}
    _expect(len(by_key) == len(messages), "convert (%s): message_key is not unique" % capture_impl)
    raw = [r["raw"] or b"" for r in messages]
    rows = sorted(repr(sorted((k, v) for k, v in r.items() if k != "message_key")) for r in messages)
    for p in params:
        _expect(p["message_key"] in by_key, "convert (%s): a PCF parameter of no message" % capture_impl)
    prow = sorted(repr((by_key[p["message_key"]], sorted((k, v) for k, v in p.items() if k != "message_key")))
                  for p in params)
    return rows, prow, dict(report["summary"]), raw


def _content_length(data: bytes) -> int:
    """Bytes of capture the converter reads from ``data``: a gzip-compressed
    capture is read decompressed (``open_capture``), so its rows may hold more
    than the compressed input's length, never more than what decompresses."""
    if data[:2] != b"\x1f\x8b":
        return len(data)
    from mqcodec.capture.reader import Gunzip

    g, n = Gunzip(), 0
    try:
        for piece in g.feed(data):
            n += len(piece)
    except DecodeError:
        pass        # corrupt from here on: the reader stops at the same place
    return max(n, len(data))


def _check_one(data: bytes, impl, out) -> None:
    _, _, summary, raw = out
    n = _content_length(data)
    for k in ("budget cuts", "bytes cut by the budget"):
        _expect(summary.get(k, 0) <= n, "convert (%s): %r = %d, above the input's %d bytes"
                % (impl, k, summary.get(k, 0), n))
    _expect(all(len(r) <= n for r in raw), "convert (%s): a row's raw longer than the input" % impl)
    total = sum(len(r) for r in raw)
    _expect(total <= n, "convert (%s): rows hold %d raw bytes, the input has %d" % (impl, total, n))


_WARM: list = []


def _warm_up() -> None:
    """Convert the seeds once (both engines): the converter imports modules and
    builds tables lazily the first time it meets a protocol (``mqcodec.msmq``,
    pandas through pyarrow: ~30 MB traced), a one-off cost that must not be
    charged to whichever input happens to come first (``harnesses.bounded``
    warms a target with one input only)."""
    if not _WARM:
        _WARM.append(True)
        for s in _seeds():
            for impl in ("py", None):
                convert_once(s, impl, options_for(s))


def fuzz_convert(data: bytes) -> None:
    _warm_up()
    opts = options_for(data)
    ref = convert_once(data, "py", opts)
    ours = convert_once(data, None, opts)
    if isinstance(ref, DecodeError) or isinstance(ours, DecodeError):
        _expect(type(ref) is type(ours) and str(ref) == str(ours),
                "convert: file-level errors differ: pure %r, default %r" % (ref, ours))
        return
    _check_one(data, "py", ref)
    _check_one(data, "default", ours)
    s_ref = {k: v for k, v in ref[2].items() if k not in ENGINE_COUNTERS}
    s_ours = {k: v for k, v in ours[2].items() if k not in ENGINE_COUNTERS}
    if s_ref != s_ours:
        diff = {k: (s_ref.get(k), s_ours.get(k)) for k in set(s_ref) | set(s_ours) if s_ref.get(k) != s_ours.get(k)}
        raise InvariantViolation("convert: summaries differ (pure, default): %r" % (diff,))
    _expect(len(ref[0]) == len(ours[0]), "convert: %d rows pure, %d default" % (len(ref[0]), len(ours[0])))
    _expect(ref[0] == ours[0], "convert: message rows differ between the engines")
    _expect(ref[1] == ours[1], "convert: PCF parameters differ between the engines")


# ------------------------------------------------------------------ seeds
def _claims_capture(port: int, header: bytes, conns: int = 6, segments: int = 5, body: int = 1400) -> bytes:
    """``conns`` connections to ``port`` whose every client segment starts with
    ``header`` (a unit claiming its maximum length) and never completes."""
    import io

    from mqcodec.capture.writer import TcpConversation, write_pcap

    packets = []
    convs = [TcpConversation(("10.3.0.%d" % (1 + c), 41000 + c), ("10.4.0.1", port), isn_client=100 + c * 7,
                             mss=1460, start_ns=1_700_000_000_000_000_000 + c * 1000, step_ns=1)
             for c in range(conns)]
    for t in convs:
        packets += t.handshake()
    for i in range(segments):
        for c, t in enumerate(convs):
            packets += t.send(0, header + bytes((i * 31 + c * 7 + k) & 0xFF for k in range(body)), ack_each=False)
    f = io.BytesIO()
    write_pcap(f, packets)
    return f.getvalue()


def budget_seeds() -> list:
    from mqcodec.ibmmq import builders, framing

    tshm = bytearray(builders.encode_segments("MQPUT", bytes(64))[:36])
    struct.pack_into("!I", tshm, 4, framing.DEFAULT_MAX_SEGMENT_LENGTH)
    lior = struct.pack("<BBH4sII", 0x10, 0, 0, b"LIOR", 0x00400000, 0xFFFFFFFF)
    return [_claims_capture(1414, bytes(tshm)), _claims_capture(1801, lior)]


def _seeds() -> list:
    try:
        from . import seeds
    except ImportError:
        import seeds

    return list(seeds.capture_core_seeds()) + budget_seeds() + seeds.hostile_seeds()


SEEDS = lambda: _seeds()  # noqa: E731  (the lead registers the target as ``convert``)
