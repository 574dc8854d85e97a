"""The compiled capture core follows IPv4-fragmented TCP itself (issue #8).

Reference, from outside the code under test: the pure pipeline
(``CaptureProcessor`` with its ``FragmentReassembler`` + the pure framers, as
``tests/test_capture_core.py::pure_rows`` drives them; whole tables through
``Converter``).  Captures are the simulator's (MQ TSH and MSMQ sessions, UDP
pings) with IPv4 packets -- SYNs, data, FINs, pings -- cut into fragments with
the project's writer: in order, reversed, shuffled, duplicated, overlapping
with different bytes, with a fragment dropped, late (the 30 s timeout),
cut by the snap length, delayed past later packets, behind more than 1024
incomplete datagrams, with more than 128 pieces.  Whatever the mix, the
core's messages equal the pure pipeline's (per connection), the core never
gives the capture up for fragments (``supported`` stays True) and any
chunking gives the same output.

Last section: the core's global byte budget (``max_total_buffer``): many
connections each holding the start of a 4 MiB MSMQ packet; past the budget
the core gives the capture up and the converter's tables equal the pure
engine's under the same budget.
"""
from __future__ import annotations

import io
import random
import struct

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mqcodec import synth
from mqcodec.capture import CaptureProcessor, open_capture
from mqcodec.capture.writer import TcpConversation, ethernet, ipv4, udp

from test_capture_core import (MANY_OPEN_UNITS, CaptureCore, _canon, _mq_stream, _pcap, core_mod,  # noqa: E402
                               check_against_pure, pure_rows, run_core)

NS = 1_000_000_000


# --------------------------------------------------------------------------- building fragments
def _ip(frame: bytes) -> bytes:
    assert frame[12:14] == b"\x08\x00"
    total = struct.unpack_from("!H", frame, 16)[0]
    return frame[14:14 + total]


def frag(ip: bytes, off: int, length: int, more: bool, *, body: bytes | None = None, ident: int | None = None) -> bytes:
    """One fragment of the IPv4 packet ``ip``: bytes [off, off+length) of its
    payload (or ``body`` instead), Fragment Offset off/8, MF = more."""
    ihl = (ip[0] & 15) * 4
    piece = ip[ihl:][off:off + length] if body is None else body
    h = bytearray(ip[:ihl])
    struct.pack_into("!HHH", h, 2, ihl + len(piece), struct.unpack_from("!H", h, 4)[0] if ident is None else ident,
                     (0x2000 if more else 0) | (off // 8))
    struct.pack_into("!H", h, 10, 0)
    return bytes(h) + piece


def pieces(ip: bytes, step: int) -> list:
    """(off, length, more) of an in-order fragmentation, ``step`` bytes (a multiple of 8) a piece."""
    n = len(ip) - (ip[0] & 15) * 4
    out = [(o, min(step, n - o), o + step < n) for o in range(0, n, step)]
    return out or [(0, 0, False)]


def fragment_packet(rnd: random.Random, ts: int, ip: bytes, op: str, steps=(8, 16, 24, 64, 200, 512)) -> list:
    """Frames (ts, frame[, origlen]) carrying ``ip`` in fragments, damaged by ``op``
    (8-byte pieces of a full segment are more than the 128 the pure side keeps)."""
    n = len(ip) - (ip[0] & 15) * 4
    step = rnd.choice(steps)
    if step >= n:
        step = max(8, (n // 2) // 8 * 8) if n > 8 else 8
    parts = pieces(ip, step)
    frames = [frag(ip, *p) for p in parts]
    if op == "reverse":
        frames.reverse()
    elif op == "shuffle":
        rnd.shuffle(frames)
    elif op == "duplicate":
        i = rnd.randrange(len(frames))
        frames.insert(rnd.randrange(i, len(frames)) + 1, frames[i])
    elif op == "overlap" and n >= 16:
        # a copy with other bytes over [a, b): at an equal offset the first copy wins,
        # over a longer range the lower offset wins (pure FragmentReassembler)
        a = rnd.randrange(0, n // 8) * 8
        b = rnd.randrange(a + 1, n + 1)
        bogus = frag(ip, a, b - a, b < n, body=bytes(rnd.randrange(256) for _ in range(b - a)))
        frames.insert(rnd.randrange(len(frames) + 1), bogus)
    elif op == "drop" and len(frames) > 1:
        del frames[rnd.randrange(len(frames))]
    out = [(ts + k, ethernet(f)) for k, f in enumerate(frames)]
    if op in ("late", "late31") and len(out) > 1:   # past the 30 s timeout (or at it, or back in time)
        i = rnd.randrange(1, len(out))
        shift = 31 * NS if op == "late31" else rnd.choice([31 * NS, -31 * NS, 30 * NS])
        out[i] = (out[i][0] + shift, out[i][1])
    elif op == "snapcut":                          # a fragment cut by the snap length: skipped by the pure side
        i = rnd.randrange(len(out))
        t, f = out[i]
        if len(f) > 14 + 24:
            out[i] = (t, f[:14 + 21], len(f))
    return out


OPS = ["order", "reverse", "shuffle", "duplicate", "overlap", "drop", "late", "snapcut"]


def fragmented_capture(seed: int, messages: int = 12, rate: float = 0.4, ops=OPS, delay: float = 0.1) -> bytes:
    """The simulator's capture with a share of its IPv4 packets fragmented
    (``ops`` chosen at random); some fragments delayed past later packets."""
    rnd = random.Random(seed)
    frames = []
    later = []   # (index in frames to insert before, frame)
    for p in synth.generate(seed % 5 + 1, messages):
        if rnd.random() < rate:
            fr = fragment_packet(rnd, p.ts_ns, _ip(p.frame), rnd.choice(ops))
            if delay and len(fr) > 1 and rnd.random() < delay:
                k = rnd.randrange(len(fr))
                later.append((len(frames) + len(fr) + rnd.randrange(1, 6), fr.pop(k)))
            frames += fr
        else:
            frames.append((p.ts_ns, p.frame))
    for at, f in sorted(later, key=lambda t: t[0], reverse=True):
        frames.insert(min(at, len(frames)), f)
    return _pcap(frames, nanosecond=True)


# --------------------------------------------------------------------------- checks
def pure_stats(data: bytes) -> CaptureProcessor:
    proc = CaptureProcessor()
    for f in open_capture(io.BytesIO(data)):
        proc.feed(f)
    proc.close()
    return proc


def check(data: bytes, chunks=None):
    core, pure, msgs, deferred = check_against_pure(data, chunks)
    assert core.supported, core.unsupported_reason
    # the core created the connections the pure reassembler created (fragmented SYNs included)
    assert core.stats["connections"] == pure_stats(data).tcp.next_stream
    return core, pure, msgs


# --------------------------------------------------------------------------- tests
@pytest.mark.parametrize("step", [16, 24, 64, 512])
def test_in_order_fragments_stay_on_the_fast_path(step):
    """Every TCP packet (SYNs, TSH and MSMQ data, FINs) in fragments, in order
    (step 16: the TCP header itself is split across two fragments)."""
    frames = []
    fragmented = 0
    pk = synth.generate(2, 10)
    for p in pk:
        ip = _ip(p.frame)
        if ip[9] == 6:
            parts = pieces(ip, step)
            fragmented += len(parts) > 1 or parts[0][2]
            frames += [(p.ts_ns + k, ethernet(frag(ip, *q))) for k, q in enumerate(parts)]
        else:
            frames.append((p.ts_ns, p.frame))
    data = _pcap(frames, nanosecond=True)
    core, pure, msgs = check(data)
    assert sum(len(v) for v in msgs.values()) == sum(len(v) for v in pure.values()) > 0
    # every TCP datagram was rebuilt by the core: as many as the pure reassembler rebuilt
    proc = pure_stats(data)
    assert core.stats["reassembled tcp segments"] == proc.stats["reassembled datagrams"] > 0
    assert core.stats["pending ip datagrams"] == 0


@pytest.mark.parametrize("op", ["reverse", "shuffle", "duplicate", "overlap"])
def test_reordered_duplicated_overlapping_fragments(op):
    rnd = random.Random(op)
    frames = []
    for p in synth.generate(3, 10):
        ip = _ip(p.frame)
        frames += (fragment_packet(rnd, p.ts_ns, ip, op, steps=(16, 24, 64, 200, 512)) if rnd.random() < 0.6
                   else [(p.ts_ns, p.frame)])
    data = _pcap(frames, nanosecond=True)
    core, pure, msgs = check(data)

@pytest.mark.parametrize("op", ["drop", "late31", "snapcut"])
def test_datagrams_that_never_complete(op):
    """A fragment lost, timed out or cut by the snap length: the segment never
    arrives (a TCP hole: a Gap, which the core follows)."""
    rnd = random.Random(op)
    pk = synth.generate(4, 10)
    data_idx = [i for i, p in enumerate(pk) if p.length > 100 and _ip(p.frame)[9] == 6]
    victims = set(data_idx[2::5])
    frames = []
    for i, p in enumerate(pk):
        frames += fragment_packet(rnd, p.ts_ns, _ip(p.frame), op) if i in victims else [(p.ts_ns, p.frame)]
    data = _pcap(frames, nanosecond=True)
    core, pure, msgs = check(data)
    assert core.stats["gaps"]
    assert pure_stats(data).skipped.get("incomplete IP datagram", 0) > 0 or op == "snapcut"


def _udp_fragment_flood(n: int, ts: int) -> list:
    """n incomplete UDP datagrams (first fragment only), distinct Identification."""
    out = []
    for k in range(n):
        ip = ipv4("10.77.%d.%d" % (k // 200, k % 200 + 1), "10.78.0.1", 17, udp("10.77.0.1", "10.78.0.1", 5000, 5001,
                                                                              b"u" * 40), ident=k, flags_frag=0)
        out.append((ts + k, ethernet(frag(ip, 0, 16, True))))
    return out


@pytest.mark.parametrize("flood", [1000, 1023, 1024, 1100])
def test_more_than_1024_pending_datagrams_evict_the_oldest(flood):
    """The 1024-datagram bound is shared with UDP: a TCP segment whose first
    fragment is followed by ``flood`` incomplete UDP datagrams is evicted
    before its last fragment arrives when the table overflows."""
    mq = TcpConversation(("10.3.0.1", 40001), ("10.3.0.2", 1414), mss=400)
    pk = mq.handshake() + mq.send(0, _mq_stream(6)) + mq.close()
    victim = [i for i, p in enumerate(pk) if p.length][1]
    frames = []
    for i, p in enumerate(pk):
        if i == victim:
            ip = _ip(p.frame)
            first, *rest = pieces(ip, 64)
            frames.append((p.ts_ns, ethernet(frag(ip, *first))))
            frames += _udp_fragment_flood(flood, p.ts_ns + 1)
            frames += [(p.ts_ns + flood + 1 + k, ethernet(frag(ip, *q))) for k, q in enumerate(rest)]
        else:
            frames.append((p.ts_ns + (flood + 100 if i > victim else 0), p.frame))
    data = _pcap(frames, nanosecond=True)
    core, pure, msgs = check(data)
    evicted = flood >= 1024
    # an evicted segment is a hole the core follows as the pure pipeline does (check)
    assert (core.stats["framing error records"] > 0) == evicted
    assert core.stats["pending ip datagrams"] == min(flood, 1024)
    # the fragment table's bytes count in what the core buffers (16 bytes a UDP piece here)
    assert core.buffered_bytes >= 16 * (min(flood, 1024) - 1)
    incomplete = pure_stats(data).skipped.get("incomplete IP datagram", 0)
    assert incomplete > flood if evicted else incomplete == flood


def test_too_many_pieces_abandon_the_datagram():
    """129 fragments (duplicates) of one datagram: the pure reassembler gives it up."""
    c = TcpConversation(("10.4.0.1", 40002), ("10.4.0.2", 1414), mss=900)
    pk = c.handshake() + c.send(0, _mq_stream(3)) + c.close()
    victim = [i for i, p in enumerate(pk) if p.length][0]
    for copies in (127, 128, 129):
        frames = []
        for i, p in enumerate(pk):
            if i == victim:
                ip = _ip(p.frame)
                parts = pieces(ip, 256)
                first = ethernet(frag(ip, *parts[0]))
                frames += [(p.ts_ns, first)] * (copies - len(parts) + 1)
                frames += [(p.ts_ns + 1 + k, ethernet(frag(ip, *q))) for k, q in enumerate(parts[1:])]
            else:
                frames.append((p.ts_ns, p.frame))
        data = _pcap(frames, nanosecond=True)
        core, pure, msgs = check(data)
        # an abandoned datagram is a hole the core follows as the pure pipeline does (check)
        assert (core.stats["framing error records"] > 0) == (copies > 128)


def test_fragmented_syn_opens_the_connection_and_fin_closes_it():
    """The handshake and the close in fragments of 8 bytes: the core opens,
    numbers and closes the connection as the pure reassembler does (it used
    to give the whole capture up at such a SYN)."""
    frames = []
    for k in range(3):
        c = TcpConversation(("10.5.0.%d" % (k + 1), 40000 + k), ("10.5.1.1", 1414), isn_client=7 + k, mss=500,
                            start_ns=1_700_000_000 * NS + k * 1000)
        pk = c.handshake() + c.send(0, _mq_stream(4)) + c.close()
        for p in pk:
            ip = _ip(p.frame)
            if p.flags & 0x03:       # SYN or FIN
                frames += [(p.ts_ns + j, ethernet(frag(ip, *q))) for j, q in enumerate(pieces(ip, 8))]
            else:
                frames.append((p.ts_ns, p.frame))
    data = _pcap(frames, nanosecond=True)
    core, pure, msgs = check(data)
    assert core.stats["connections"] == 3
    assert core.stats["open connections"] == 0
    assert sum(len(v) for v in msgs.values()) > 0


def test_differing_copies_among_fragmented_segments():
    """A connection with fragmented segments, one unfragmented segment sent
    again 300 times with other bytes: followed, the conflicts counted."""
    rnd = random.Random(5)
    pk = synth.generate(5, 12)
    tcp_data = [i for i, p in enumerate(pk) if p.length > 0 and _ip(p.frame)[9] == 6]
    copied = tcp_data[len(tcp_data) // 2]
    frames = []
    for i, p in enumerate(pk):
        if i == copied:
            other = bytearray(p.frame)
            other[-1] ^= 0xFF
            frames += [(p.ts_ns, p.frame)] + [(p.ts_ns + 1, bytes(other))] * 300
            continue
        if _ip(p.frame)[9] == 6 and rnd.random() < 0.5:
            frames += fragment_packet(rnd, p.ts_ns, _ip(p.frame), "shuffle")
        else:
            frames.append((p.ts_ns, p.frame))
    data = _pcap(frames, nanosecond=True)
    core, pure, msgs = check(data)
    assert core.stats["conflicting overlaps"] == 300 and core.stats["reassembled tcp segments"] > 0


def test_udp_fragments_are_left_to_the_side_processor():
    """Fragmented MSMQ pings (UDP) do not reach the core's TCP path; their
    frames are deferred exactly as before."""
    frames = []
    for p in synth.generate(6, 10):
        ip = _ip(p.frame)
        if ip[9] == 17:
            frames += [(p.ts_ns + k, ethernet(frag(ip, *q))) for k, q in enumerate(pieces(ip, 16))]
        else:
            frames.append((p.ts_ns, p.frame))
    data = _pcap(frames, nanosecond=True)
    core, msgs, deferred = run_core(data)
    # deferred: every frame but the unfragmented TCP segments
    ref = [f for f in open_capture(io.BytesIO(data))
           if f.data[23] != 6 or struct.unpack_from("!H", f.data, 20)[0] & 0x3FFF]
    assert [tuple(f) for f in deferred] == [tuple(f) for f in ref]
    assert core.stats["reassembled tcp segments"] == 0 and core.stats["tcp fragments"] == 0
    check(data)


@pytest.mark.parametrize("link", ["vlan", "qinq", "sll", "sll2", "null-le", "loop", "raw", "ipv4"])
def test_fragments_on_every_link_layer(link):
    from test_capture_core import LINKS

    linktype, wrap = LINKS[link]
    rnd = random.Random(link)
    frames = []
    for p in synth.generate(2, 8):
        ip = _ip(p.frame)
        parts = pieces(ip, rnd.choice([16, 64, 256]))
        if rnd.random() < 0.3:
            rnd.shuffle(parts)
        frames += [(p.ts_ns + k, wrap(frag(ip, *q))) for k, q in enumerate(parts)]
    data = _pcap(frames, linktype=linktype, nanosecond=True)
    core, pure, msgs = check(data)
    assert core.stats["reassembled tcp segments"] > 0


@pytest.mark.parametrize("seed", range(8))
def test_random_fragmentation(seed):
    check(fragmented_capture(seed))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), rate=st.sampled_from([0.2, 0.5, 1.0]),
       ops=st.lists(st.sampled_from(OPS), min_size=1, max_size=4, unique=True))
@example(seed=949, rate=1.0, ops=["shuffle", "order", "overlap", "snapcut"])   # issue #8: a SYN reusing a damaged tuple
def test_random_fragmentation_property(seed, rate, ops):
    check(fragmented_capture(seed, messages=6, rate=rate, ops=ops))


_FRAG = {}


def _frag_capture():
    if "d" not in _FRAG:
        _FRAG["d"] = fragmented_capture(11, messages=10, rate=0.6)
    return _FRAG["d"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(1, 3000), min_size=1, max_size=6))
def test_random_chunkings(sizes):
    data = _frag_capture()
    assert _canon(data, sizes) == _canon(data, None)


@pytest.mark.parametrize("seed", range(4))
def test_whole_tables_equal_the_pure_engine(seed):
    """Converter, both engines: every row, PCF parameter and summary counter
    equal, with fragments lost, late, cut, overlapping ..."""
    from test_capture_engines import _same

    data = fragmented_capture(100 + seed, messages=15, rate=0.5)
    report = _same(data)
    assert report["captures"][-1]["core"]["reassembled tcp segments"] > 0


def _one_segment_conversation(port=1414):
    c = TcpConversation(("10.6.0.1", 40003), ("10.6.0.2", port), mss=1400)
    pk = c.handshake() + c.send(0, _mq_stream(2)) + c.close()
    return pk, [i for i, p in enumerate(pk) if p.length][0]


@pytest.mark.parametrize("delta", [30 * NS - 1, 30 * NS, 30 * NS + 1])
def test_timeout_is_30_seconds_of_capture_time(delta):
    """The second fragment ``delta`` after the first: the datagram completes
    up to 30 s (inclusive), else it was timed out when that fragment came."""
    pk, victim = _one_segment_conversation()
    frames = []
    for i, p in enumerate(pk):
        if i == victim:
            ip = _ip(p.frame)
            parts = pieces(ip, 504)
            frames += [(p.ts_ns + (delta if k else 0), ethernet(frag(ip, *q))) for k, q in enumerate(parts)]
        else:
            frames.append((p.ts_ns + (delta if i > victim else 0), p.frame))
    data = _pcap(frames, nanosecond=True)
    core, pure, msgs = check(data)
    assert bool(core.stats["gaps"]) == (delta > 30 * NS)   # the hole: a Gap


def test_timeout_looks_at_the_oldest_inserted_datagram_only():
    """The pure reassembler times out from the head of its insertion order and
    stops at the first datagram still young: a datagram inserted later with an
    older timestamp survives (capture time may go backwards)."""
    pk, victim = _one_segment_conversation()
    t0 = pk[victim].ts_ns
    young = ipv4("10.7.0.1", "10.7.0.2", 17, udp("10.7.0.1", "10.7.0.2", 1, 2, b"y" * 40), ident=1, flags_frag=0)
    frames = []
    for i, p in enumerate(pk):
        if i == victim:
            ip = _ip(p.frame)
            first, *rest = pieces(ip, 504)
            frames.append((t0, ethernet(frag(young, 0, 16, True))))         # head: young
            frames.append((t0 - 100 * NS, ethernet(frag(ip, *first))))      # then a far older one
            frames += [(t0 + 1 + k, ethernet(frag(ip, *q))) for k, q in enumerate(rest)]
        else:
            frames.append((p.ts_ns, p.frame))
    data = _pcap(frames, nanosecond=True)
    core, pure, msgs = check(data)
    assert core.stats["pending ip datagrams"] == 1


# --------------------------------------------------------------------------- part 2: the global byte budget
def _claims_capture(conns, segments, clean_first=True):
    """Clean simulator traffic (rows the core writes first), then ``conns``
    MSMQ connections each sending the start of a packet claiming 4 MiB."""
    from test_budget import msmq_claims

    frames, sent, _ = msmq_claims(conns, segments)
    pk = [(p.ts_ns, p.frame) for p in synth.generate(9, 20)] if clean_first else []
    return pk + [(f.ts_ns, f.data) for f in frames], sum(sent)


@pytest.mark.parametrize("limit", [64 << 10, 256 << 10])
def test_buffered_bytes_stay_within_the_budget(limit):
    """40 MSMQ connections each sending the start of a packet claiming 4 MiB:
    the core cuts the directions holding the most at the budget's check
    points, as ByteBudget.enforce does, so what it holds stays within one
    check interval of the limit, whatever the chunking."""
    frames, sent = _claims_capture(40, 30, clean_first=False)
    assert sent > 4 * limit
    data = _pcap(frames, nanosecond=True)
    slack = limit // 16
    chunk = 4096
    core = CaptureCore(max_total_buffer=limit)
    for i in range(0, len(data), chunk):
        core.feed(data[i:i + chunk])
        core.take()
        # checked once per limit/16 bytes of frames: at most one check interval (and the
        # frame that ends it) past the limit
        assert core.buffered_bytes <= limit + slack + 1500
    assert core.supported
    assert core.stats["buffered bytes at the largest check"] > limit
    assert core.stats["budget cuts"] > 0 and 0 < core.stats["bytes cut by the budget"] <= sent
    # the same capture without a budget keeps everything buffered
    free = CaptureCore()
    free.feed(data)
    assert free.supported and free.buffered_bytes == sent and free.stats["budget cuts"] == 0


@pytest.mark.parametrize("limit", [64 << 10, 256 << 10])
def test_budget_cuts_tables_equal_the_pure_engine(monkeypatch, limit):
    """Past the budget the core cuts directions as the pure pipeline does
    (same check points, same order, same FramingErrors; it used to give the
    capture up to the pure pipeline, which converted it again from the
    start): the tables and the budget's counters equal the pure engine's."""
    from mqcodec.convert import compiled
    from test_capture_engines import _convert, _pcap as _pcap_e

    monkeypatch.setattr(compiled, "CHUNK", 16384)
    frames, _ = _claims_capture(40, 30)
    data = _pcap_e(frames)
    ours = _convert(data, None, buffer_budget=limit, chunk_messages=5)
    ref = _convert(data, "py", buffer_budget=limit, chunk_messages=5)
    assert ref[2].get("budget cuts", 0) > 0          # the pure budget did fire on this capture
    assert ours[3]["captures"][-1]["engine"] == "compiled"
    assert ours[2] == ref[2]
    assert ours[0] == ref[0] and ours[1] == ref[1]


def test_budget_not_reached_changes_nothing():
    from test_capture_engines import _same

    frames, _ = _claims_capture(4, 10)
    report = _same(_pcap(frames, nanosecond=True), buffer_budget=1 << 20)
    assert report["captures"][-1]["core"]["budget checks"] > 0


def test_budget_counts_the_open_units_the_compiled_framer_holds():
    """30 connections to 1414 sending more open units than a framer keeps,
    then random bytes: the compiled framers hold the units and the garbage as
    the pure ones do, so the budget (256 KiB) is exceeded at the same check
    point (it used to be a known limit: the connections went to the replay,
    and the core held nothing for them)."""
    budget_garbage(MANY_OPEN_UNITS)


def test_budget_counts_the_garbage_the_compiled_framer_holds():
    """30 connections to 1414 sending random bytes: the compiled framers keep
    the garbage for its FramingError (at most max_raw bytes each) as the pure
    ones do, so the budget is exceeded at the same check point and the
    capture is converted as the pure engine does."""
    budget_garbage(b"")


def budget_garbage(first: bytes):
    from mqcodec.capture.writer import TcpConversation
    from test_capture_engines import _convert, _pcap as _pcap_e

    rnd = random.Random(1)
    convs = [TcpConversation(("10.20.0.%d" % (k + 1), 40000 + k), ("10.21.0.1", 1414), mss=1400,
                             start_ns=1_800_000_000 * NS + k) for k in range(30)]
    frames = []
    for c in convs:
        frames += c.handshake()
    for k in range(20):
        for c in convs:
            frames += c.send(0, (first if k == 0 else b"") + bytes(rnd.randrange(256) for _ in range(1400)),
                             ack_each=False)
    pk = [(p.ts_ns, p.frame) for p in synth.generate(9, 10)]
    data = _pcap_e(pk + [(p.ts_ns, p.frame) for p in frames])
    ours = _convert(data, None, buffer_budget=256 << 10)
    ref = _convert(data, "py", buffer_budget=256 << 10)
    assert ref[2].get("budget cuts", 0) > 0
    assert ours[0] == ref[0]


def _mixed_budget_capture(seed: int) -> bytes:
    """Every kind of direction a budget cut meets, interleaved at random:
    simulator traffic; MSMQ connections claiming 4 MiB packets (some with
    their first segment lost: bytes waiting in the reorder buffer, flushed as
    a Gap); IBM MQ connections claiming the maximum MQSegmLen (partial
    segments: the rest of a cut segment skipped), some with a segment lost
    (a gap inside a segment: skipping a damaged segment when the cut comes);
    IBM MQ connections with more open units than a framer keeps, then
    garbage (open units, garbage being collected)."""
    from mqcodec.capture.writer import TcpConversation
    from test_budget import mq_max_claims, msmq_claims

    rnd = random.Random(seed)
    streams = [[(p.ts_ns, p.frame) for p in synth.generate(seed % 7 + 1, 15)]]
    frames, _, _ = msmq_claims(rnd.randint(3, 12), rnd.randint(4, 20), hole_first=False)
    streams.append([(f.ts_ns, f.data) for f in frames])
    frames, _, _ = msmq_claims(rnd.randint(2, 6), rnd.randint(4, 10), port=1802, hole_first=True)
    streams.append([(f.ts_ns, f.data) for f in frames])
    frames, _ = mq_max_claims(rnd.randint(3, 10), rnd.randint(4, 20))
    claims = [(f.ts_ns, f.data) for f in frames]
    for _ in range(rnd.randint(0, 4)):      # lost segments inside claimed segments
        if len(claims) > 40:
            del claims[rnd.randrange(20, len(claims))]
    streams.append(claims)
    crowd = []
    for k in range(rnd.randint(1, 4)):
        c = TcpConversation(("10.31.0.%d" % (k + 1), 42000 + k), ("10.32.0.1", 1414), mss=1400,
                            start_ns=1_800_000_000 * NS + k)
        crowd += c.handshake()
        crowd += c.send(0, MANY_OPEN_UNITS[:rnd.randrange(1000, len(MANY_OPEN_UNITS))]
                        + bytes(rnd.randrange(256) for _ in range(rnd.randrange(100, 6000))), ack_each=False)
    streams.append([(p.ts_ns, p.frame) for p in crowd])
    out = []
    while any(streams):
        s = rnd.choice([s for s in streams if s])
        k = rnd.randint(1, 6)
        out += s[:k]
        del s[:k]
    return _pcap(out, nanosecond=True)


@pytest.mark.parametrize("seed", range(8))
def test_budget_cuts_of_every_kind_of_direction_equal_the_pure_engine(seed):
    """Budgets of 8 to 64 KiB over the mixed capture: the core cuts the
    same directions at the same check points with the same FramingErrors as
    the pure pipeline (every table and counter equal)."""
    from test_capture_engines import _same

    data = _mixed_budget_capture(seed)
    limit = (8 << 10) << (seed % 4)
    report = _same(data, buffer_budget=limit, chunk_messages=7)
    assert report["summary"].get("budget cuts", 0) > 0
