"""The global byte budget (mqcodec.capture.budget) and the buffered-bytes
accessors and cuts it relies on (TCP reorder buffers, both framers).

Expected values come from what the tests build (bytes written per connection,
packet boundaries), from runs without a budget, or from framers fed the same
bytes without a cut -- never from the budget's own figures."""
from __future__ import annotations

import struct

import pytest

from mqcodec.capture.budget import ByteBudget
from mqcodec.framers import drive
from mqcodec.capture.frame import Frame
from mqcodec.capture.tcp import TCPReassembler
from mqcodec.ibmmq import builders as mqb
from mqcodec.ibmmq import framing as mqf
from mqcodec.msmq import framing as msf

KiB = 1024


# ------------------------------------------------------------------ builders
def _ip(s):
    return bytes(int(x) for x in s.split("."))


def tcp_frame(src, dst, sport, dport, seq, ack, flags, payload=b""):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, _ip(src), _ip(dst))
    return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + ip + tcp + payload


def frames_of(raw_frames):
    return [Frame(i + 1, 1_700_000_000_000_000_000 + i * 1000, 1, len(f), len(f), f)
            for i, f in enumerate(raw_frames)]


def handshakes(conns, port, net, base_port, isn0, isn_step, server_isn):
    """SYN and SYN-ACK of ``conns`` client connections from ``net``.x.y to
    10.8.0.1:``port``: (frames, [[client ip, client port, next seq]])."""
    raw, seqs = [], []
    for c in range(conns):
        cli = "%s.%d.%d" % (net, c // 250, 1 + c % 250)
        isn = isn0 + c * isn_step
        raw += [tcp_frame(cli, "10.8.0.1", base_port + c, port, isn, 0, 0x02),
                tcp_frame("10.8.0.1", cli, port, base_port + c, server_isn, isn + 1, 0x12)]
        seqs.append([cli, base_port + c, isn + 1])
    return raw, seqs


def msmq_claims(conns, segments, body=1400, port=1801, hole_first=False):
    """``conns`` connections to ``port``; every client segment starts with an MSMQ
    BaseHeader claiming PacketSize 0x00400000 (4 MiB) and carries ``body`` bytes.
    With ``hole_first`` the first segment of every connection is never sent, so
    everything after it waits in the reorder buffer.  Returns (frames, bytes sent
    per connection index, bytes left out per connection index)."""
    hdr = struct.pack("<BBH4sII", 0x10, 0, 0, b"LIOR", 0x00400000, 0xFFFFFFFF)
    payload = hdr + bytes(body - len(hdr))
    raw, seqs = handshakes(conns, port, "10.9", 30000, 5000, 11, 7000)
    sent = [0] * conns
    missing = [0] * conns
    for i in range(segments):
        for c in range(conns):
            cli, cport, seq = seqs[c]
            if hole_first and i == 0:
                missing[c] += len(payload)
            else:
                # ack 7001: the server's direction is empty, its ACKs acknowledge nothing lost
                raw.append(tcp_frame(cli, "10.8.0.1", cport, port, seq, 7001, 0x10, payload))
                sent[c] += len(payload)
            seqs[c][2] = seq + len(payload)
    return frames_of(raw), sent, missing


def msmq_accounting(events, conns_sent):
    """Invariant: per client direction, Packet.data + FramingError.raw + nothing
    else covers exactly the bytes sent, in order (no gaps in these captures)."""
    per = {}
    for key, d, ev in events:
        if d != 0:
            continue
        if isinstance(ev, msf.Packet):
            raw = ev.data
        elif isinstance(ev, msf.FramingError):
            raw = ev.raw
        else:
            continue
        pos = per.setdefault(key.stream, 0)
        assert ev.offset == pos, (key, ev.offset, pos)
        per[key.stream] = pos + len(raw)
    return per


# ------------------------------------------------------------------ ByteBudget
def test_budget_arguments():
    with pytest.raises(ValueError):
        ByteBudget(0)
    with pytest.raises(ValueError):
        ByteBudget(100, low_water=200)
    b = ByteBudget(1 << 20, slack=1000)
    assert "1 MiB" in b.reason
    assert [b.charge(400) for _ in range(5)] == [False, False, True, False, False]


def test_msmq_claims_without_budget_buffer_everything():
    """The adversarial case the budget exists for: without it every byte sent
    waits in a framer (nothing completes), so the peak is all the input."""
    frames, sent, _ = msmq_claims(8, 40)
    res = drive(frames, None)
    assert res["peak"] == sum(sent)
    assert sum(sent) > 400 * KiB


@pytest.mark.parametrize("limit", [64 * KiB, 200 * KiB])
def test_msmq_claims_with_budget_stay_bounded_and_lose_no_byte(limit):
    frames, sent, _ = msmq_claims(8, 40)
    budget = ByteBudget(limit, slack=8 * KiB)
    res = drive(frames, budget)
    # at every frame boundary: at most limit + slack + one frame's payload
    assert res["peak"] <= limit + 8 * KiB + 1500
    cuts = [ev for _, d, ev in res["events"] if isinstance(ev, msf.FramingError) and ev.field == "budget"]
    assert cuts and all(ev.structure == "capture" for ev in cuts)
    assert all(("%d KiB" % (limit // KiB)) in ev.reason or str(limit) in ev.reason for ev in cuts)
    # every byte sent is in exactly one Packet/FramingError, in stream order
    per = msmq_accounting(res["events"], sent)
    assert sorted(per.values()) == sorted(sent)


def test_budget_not_exceeded_changes_nothing():
    """Clean simulator traffic under a budget it never reaches: the same events
    as without a budget."""
    from mqcodec import synth

    packets = synth.generate(3, 60)
    frames = frames_of([p.frame for p in packets])
    plain = drive(frames, None)
    budgeted = drive(frames, ByteBudget(1 << 20, slack=1))
    assert budgeted["budget"]["budget checks"] > 100 and not budgeted["budget"].get("budget cuts")
    assert [(k, d, repr(e)) for k, d, e in budgeted["events"]] == [(k, d, repr(e)) for k, d, e in plain["events"]]
    assert any(isinstance(e, mqf.Message) for _, _, e in plain["events"])
    assert any(isinstance(e, msf.Packet) for _, _, e in plain["events"])


def test_reorder_buffers_are_flushed_as_gaps():
    """Every connection's first segment is missing, so all later data waits in
    the TCP reorder buffers (below their per-direction bound): the budget
    flushes them -- a Gap of exactly the missing bytes, then the data."""
    frames, sent, missing = msmq_claims(6, 30, hole_first=True)
    plain = drive(frames, None)
    assert plain["peak"] == sum(sent)
    gaps = []
    budget = ByteBudget(48 * KiB, slack=4 * KiB)

    res = drive(frames, budget, on_event=lambda key, ev: None)
    assert res["peak"] <= 48 * KiB + 4 * KiB + 1500
    assert budget.stats["budget cuts"] >= 6
    # the framers saw each connection's hole as a gap: their first event starts after it
    firsts = {}
    for key, d, ev in res["events"]:
        if d == 0 and isinstance(ev, (msf.Packet, msf.FramingError)):
            firsts.setdefault(key.stream, ev.offset)
            gaps.append(ev)
    assert sorted(set(firsts.values())) == sorted(set(missing))
    # and after the hole, every byte sent is accounted for once
    covered = {}
    for key, d, ev in res["events"]:
        if d == 0 and isinstance(ev, (msf.Packet, msf.FramingError)):
            covered[key.stream] = covered.get(key.stream, 0) + len(ev.data if isinstance(ev, msf.Packet) else ev.raw)
    assert sorted(covered.values()) == sorted(sent)


# ------------------------------------------------------------------ accessors and cuts
def test_reassembler_buffered_and_flush():
    r = TCPReassembler()
    a, b = ("10.0.0.1", 40000), ("10.0.0.2", 1801)
    r.segment(*a, *b, 100, 0, 0x02, b"", 0, 1, 0)
    r.segment(*b, *a, 900, 101, 0x12, b"", 0, 2, 0)
    # offset 0..99 missing; 100..299 and 400..449 buffered
    r.segment(*a, *b, 201, 901, 0x10, bytes(200), 0, 3, 0)
    r.segment(*a, *b, 501, 901, 0x10, b"x" * 50, 0, 4, 0)
    (key, d, n), = list(r.buffered())
    assert (d, n) == (0, 250)
    ev = r.flush_buffer(key, 0, 9, 0)
    kinds = [(type(e).__name__, e.offset, getattr(e, "length", None) or len(getattr(e, "data", b""))) for e in ev]
    assert kinds == [("Gap", 0, 100), ("StreamData", 100, 200), ("Gap", 300, 100), ("StreamData", 400, 50)]
    assert all(e.reason == "budget" for e in ev if type(e).__name__ == "Gap")
    assert list(r.buffered()) == []


def _msmq_packet():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
    import seeds
    from mqcodec.msmq import decode_packet

    for s in seeds.seeds("msmq"):
        try:
            p = decode_packet(s)
        except Exception:
            continue
        if len(s) > 64 and not getattr(p, "trailing", b""):
            return s
    raise AssertionError("no MSMQ seed packet")


def test_msmq_framer_cut_then_next_packet():
    pkt = _msmq_packet()
    half = pkt[: len(pkt) // 2]
    f = msf.MSMQStreamFramer()
    f.feed(half)
    assert list(f) == [] and f.buffered_bytes == len(half)
    assert f.cut(4 << 20) == len(half)
    assert f.buffered_bytes == 0
    ev = list(f)
    assert len(ev) == 1 and ev[0].raw == half and (ev[0].structure, ev[0].field) == ("capture", "budget")
    assert ev[0].offset == 0 and ev[0].reason == "buffered bytes of the capture above the byte budget of 4 MiB"
    # the rest of the cut packet is garbage; the next whole packet is found again
    f.feed(pkt[len(half):] + pkt)
    ev = list(f)
    packets = [e for e in ev if isinstance(e, msf.Packet)]
    assert [p.data for p in packets] == [pkt] and packets[0].offset == len(pkt)
    assert any(isinstance(e, msf.Resynchronised) for e in ev)


def _mq_put(n):
    from mqcodec.ibmmq.message import MQMessage

    return mqb.encode_put(MQMessage(body=bytes(range(256)) * (n // 256) + bytes(n % 256)))


def test_mq_framer_cut_skips_to_the_segment_end():
    big, nxt = _mq_put(200_000), _mq_put(300)
    clean = mqf.MQStreamFramer()
    clean.feed(nxt)
    expected = [e for e in clean.events() if isinstance(e, mqf.Message)]
    assert len(expected) == 1

    f = mqf.MQStreamFramer(max_raw=1000)
    f.feed(big[:150_000])
    f.events()
    assert f.buffered_bytes == 150_000
    assert f.cut(1 << 20) == 150_000
    assert f.buffered_bytes == 0
    ev = f.events()
    assert len(ev) == 1 and (ev[0].structure, ev[0].field) == ("capture", "budget")
    assert ev[0].offset == 0 and ev[0].length == 150_000 and len(ev[0].raw) == 1000 and ev[0].raw_truncated
    assert ev[0].raw == big[:1000]
    f.feed(big[150_000:])
    assert f.buffered_bytes <= 1000        # the rest is skipped, not buffered
    f.feed(nxt)
    ev = f.events()
    msgs = [e for e in ev if isinstance(e, mqf.Message)]
    assert [m.data for m in msgs] == [m.data for m in expected]
    assert msgs[0].offset == len(big)
    rs = [e for e in ev if isinstance(e, mqf.Resynchronised)]
    assert rs and rs[0].offset == len(big)


def test_mq_framer_cut_pending_multisegment_message():
    from mqcodec.ibmmq.message import MQMessage

    segs = mqb.encode_put(MQMessage(body=bytes(range(256)) * 40), max_segment_length=2048)
    assert segs.count(b"TSHM") > 3
    f = mqf.MQStreamFramer()
    f.feed(segs[: len(segs) - 100])           # all but the end of the last segment
    f.events()
    held = f.buffered_bytes
    assert held > len(segs) // 2
    assert f.cut(1 << 20) == held and f.buffered_bytes == 0
    errs = f.events()
    assert errs and all((e.structure, e.field) == ("capture", "budget") for e in errs)
    assert min(e.offset for e in errs) == 0


def test_mq_framer_cut_reports_collected_garbage():
    """Bytes that are no segment are collected (up to max_raw) until the next
    header: a cut reports them at once, and framing goes on unchanged."""
    garbage = bytes(range(7, 250)) * 40
    nxt = _mq_put(300)
    ref = mqf.MQStreamFramer()
    ref.feed(garbage + nxt)
    ref_ev = ref.events()
    f = mqf.MQStreamFramer()
    f.feed(garbage)
    assert f.events() == []
    held = f.buffered_bytes
    assert held >= len(garbage) - 3
    assert f.cut(1 << 20) == held - (f.buffered_bytes) and f.buffered_bytes <= 3
    ev = f.events()
    assert len(ev) == 1 and ev[0].offset == 0 and ev[0].raw == garbage[:len(ev[0].raw)]
    f.feed(nxt)
    ev += f.events()
    # the same bytes reported, the same message found at the same offset
    assert b"".join(e.raw for e in ev if isinstance(e, mqf.FramingError)) == \
        b"".join(e.raw for e in ref_ev if isinstance(e, mqf.FramingError))
    assert [(m.offset, m.data) for m in ev if isinstance(m, mqf.Message)] == \
        [(m.offset, m.data) for m in ref_ev if isinstance(m, mqf.Message)]


def test_many_garbage_directions_are_bounded():
    """Random payloads on 64 MQ and 64 MSMQ connections that never close: each
    framer collects garbage until a header appears; without a budget all of it
    is held, with one the total stays bounded and every byte is still reported."""
    import random

    rnd = random.Random(5)
    raw, conns = [], []
    for c in range(128):
        port = 1414 if c % 2 else 1801
        cli = "10.5.%d.%d" % (c // 250, 1 + c % 250)
        raw += [tcp_frame(cli, "10.6.0.1", 40000 + c, port, 100, 0, 0x02),
                tcp_frame("10.6.0.1", cli, port, 40000 + c, 900, 101, 0x12)]
        conns.append([cli, 40000 + c, port, 101])
    sent = 0
    for i in range(30):
        for c in conns:
            pl = bytes(b ^ 0x5A for b in rnd.randbytes(1000)).replace(b"TSH", b"XXX").replace(b"LIOR", b"XXXX")
            raw.append(tcp_frame(c[0], "10.6.0.1", c[1], c[2], c[3], 901, 0x10, pl))
            c[3] += len(pl)
            sent += len(pl)
    frames = frames_of(raw)
    plain = drive(frames, None)
    assert plain["peak"] >= sent - 128 * 8
    budget = ByteBudget(256 * KiB, slack=16 * KiB)
    res = drive(frames, budget)
    assert res["peak"] <= 256 * KiB + 16 * KiB + 1100
    assert budget.stats["budget cuts"] > 0

    def reported(events):
        return sum(len(e.raw) for _, d, e in events if isinstance(e, (mqf.FramingError, msf.FramingError)))
    # MSMQ keeps every byte; MQ keeps at most max_raw (1 MiB) per error: all bytes here
    assert reported(res["events"]) == reported(plain["events"]) == sent


# ------------------------------------------------------------------ converter integration
def _pcap(frames) -> bytes:
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    for f in frames:
        out += struct.pack("<IIII", f.ts_ns // 10 ** 9, (f.ts_ns % 10 ** 9) // 1000, len(f.data), len(f.data)) + f.data
    return bytes(out)


def _convert(data, budget):
    import pyarrow as pa

    from mqcodec.convert import ConvertOptions, Converter
    from mqcodec.convert.sinks import TableCollector

    opts = ConvertOptions(capture_impl="py", impl="py")
    if budget is not None:
        opts.buffer_budget = budget
    tables = TableCollector()
    conv = Converter(tables, opts)
    conv.add_capture(data, name="c")
    rows = tables.rows()
    return rows, conv.report()["summary"]


def test_converter_applies_the_budget():
    """The converter consults the budget after every frame (pure pipeline):
    budget cuts become error rows (structure "capture", field "budget") and
    every byte sent is still in a row's raw bytes."""
    frames, sent, _ = msmq_claims(8, 40)
    data = _pcap(frames)
    plain, s0 = _convert(data, None)
    cut, s1 = _convert(data, 64 * KiB)
    assert not any(r["error_field"] == "budget" for r in plain)
    budget_rows = [r for r in cut if r["error_field"] == "budget"]
    assert budget_rows and all(r["error_structure"] == "capture" for r in budget_rows)
    assert all("65536 bytes" in r["error"] for r in budget_rows)
    assert s1.get("budget cuts", 0) >= len({(r["src_ip"], r["src_port"]) for r in budget_rows})
    for rows in (plain, cut):
        assert sum(len(r["raw"]) for r in rows if r["src_port"] != 1801) == sum(sent)


# ------------------------------------------------------------------ audit F2: cuts while skipping, honest counters
def _max_claim_header(framing_mod) -> bytes:
    """A real TSHM (an MQPUT's first segment header) whose MQSegmLen claims the
    framer's maximum: the framer waits for (or, after a cut, skips) ~100 MiB."""
    seg = bytearray(mqb.encode_segments("MQPUT", bytes(64))[:36])
    assert seg[:4] == b"TSHM"
    struct.pack_into("!I", seg, 4, framing_mod.DEFAULT_MAX_SEGMENT_LENGTH)
    return bytes(seg)


def _msmq_max_claim_header() -> bytes:
    return struct.pack("<BBH4sII", 0x10, 0, 0, b"LIOR", 0x00400000, 0xFFFFFFFF)


def _tiles(spans, end):
    """(offset, length) spans sorted by offset cover 0..end exactly once."""
    pos = 0
    for off, n in sorted(spans):
        assert off == pos, (off, pos)
        pos += n
    assert pos == end, (pos, end)


def _pattern(n, seed):
    import random

    return random.Random(seed).randbytes(n)


@pytest.mark.parametrize("proto", ["mq", "msmq"])
def test_second_cut_releases_what_was_fed_since(proto):
    """The audit's case (F2): a header claiming the maximum length, a cut, more
    bytes, a second cut.  Each cut releases every byte then held (the second
    one included: bytes fed after the first cut), the framer then holds
    nothing (MQ) or at most a few bytes of a possible header (MSMQ scanning),
    and after close every byte fed is in exactly one FramingError (MQ: its
    ``length``, MSMQ: its ``raw``), the kept raw bytes being the stream's."""
    if proto == "mq":
        f, hdr = mqf.MQStreamFramer(max_raw=64 * KiB), _max_claim_header(mqf)
    else:
        f, hdr = msf.MSMQStreamFramer(), _msmq_max_claim_header()
    stream = hdr + _pattern(100_000, 1)
    more = _pattern(300_000, 2).replace(b"TSH", b"XYZ").replace(b"LIOR", b"XXXX")
    f.feed(stream)
    assert f.buffered_bytes == len(stream)
    assert f.cut(1 << 20) == len(stream)
    events = list(f)
    for i in range(0, len(more), 30_000):
        f.feed(more[i:i + 30_000])
    stream += more
    held = f.buffered_bytes
    assert held <= (0 if proto == "mq" else 300_000)
    assert f.cut(1 << 20) == held
    assert f.buffered_bytes <= 3
    assert f.cut(1 << 20) == 0 and f.buffered_bytes <= 3
    f.close()
    events += list(f)
    errs = [e for e in events if isinstance(e, (mqf.FramingError, msf.FramingError))]
    assert len(errs) == len(events)
    if proto == "mq":
        _tiles([(e.offset, e.length) for e in errs], len(stream))
        assert all(len(e.raw) <= e.length and (e.raw_truncated or len(e.raw) == e.length) for e in errs)
    else:
        _tiles([(e.offset, len(e.raw)) for e in errs], len(stream))
    for e in errs:
        assert e.raw == stream[e.offset:e.offset + len(e.raw)]


def test_mq_skip_after_a_cut_holds_no_memory():
    """After a cut the rest of a segment claiming ~100 MiB is skipped: the
    bytes fed during the skip are neither kept nor buffered (traced memory
    stays far below what was fed)."""
    import tracemalloc

    f = mqf.MQStreamFramer()
    f.feed(_max_claim_header(mqf) + bytes(10_000))
    f.cut(1 << 20)
    f.events()
    chunk = bytes(64 * KiB)
    tracemalloc.start()
    try:
        for _ in range(64):                       # 4 MiB
            f.feed(chunk)
        current, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f.buffered_bytes == 0 and f.events() == []
    assert current < 256 * KiB, current


def test_mq_cut_while_skipping_after_a_gap():
    """A gap inside a segment leaves the framer skipping to its end, keeping
    what it receives (up to max_raw): a cut reports that part at once (offset,
    length up to the cut, raw = the bytes received), the rest of the segment
    becomes its own error when it ends (counted, not kept), and the next
    message is found as by a framer fed it alone."""
    big, nxt = _mq_put(200_000), _mq_put(300)
    clean = mqf.MQStreamFramer()
    clean.feed(nxt)
    expected = [m.data for m in clean.events() if isinstance(m, mqf.Message)]

    f = mqf.MQStreamFramer()
    f.feed(big[:50_000])
    f.gap(10_000)
    f.feed(big[60_000:100_000])
    assert f.events() == []
    assert f.buffered_bytes == 90_000
    assert f.cut(1 << 20) == 90_000 and f.buffered_bytes == 0
    (first,) = f.events()
    assert (first.offset, first.length) == (0, 100_000)
    assert first.raw == big[:50_000] + big[60_000:100_000]
    f.feed(big[100_000:150_000])
    assert f.buffered_bytes == 0 and f.cut(1 << 20) == 0 and f.events() == []
    f.feed(big[150_000:] + nxt)
    ev = f.events()
    errs = [e for e in ev if isinstance(e, mqf.FramingError)]
    assert [(e.offset, e.length, e.raw, e.raw_truncated) for e in errs] == \
        [(100_000, len(big) - 100_000, b"", True)]
    rs = [e for e in ev if isinstance(e, mqf.Resynchronised)]
    assert [r.offset for r in rs] == [len(big)]
    msgs = [e for e in ev if isinstance(e, mqf.Message)]
    assert [m.data for m in msgs] == expected and msgs[0].offset == len(big)


class _StubFramer:
    """Holds ``held`` bytes; a cut releases ``releases`` of them."""

    def __init__(self, held, releases):
        self.buffered_bytes = held
        self.releases = releases

    def cut(self, limit):
        r = min(self.releases, self.buffered_bytes)
        self.buffered_bytes -= r
        return r


class _StubDir:
    def __init__(self, framer):
        self.framer = framer


def test_enforce_counts_only_released_bytes():
    """A direction whose cut releases nothing is not a cut, is not counted
    again at every check, and does not lower the running total: the budget
    goes on to the next direction."""
    stuck = _StubDir(_StubFramer(900, 0))
    half = _StubDir(_StubFramer(600, 300))
    full = _StubDir(_StubFramer(500, 500))
    dirs = {("a", 0): stuck, ("b", 0): half, ("c", 0): full}
    b = ByteBudget(1000, low_water=700)
    for _ in range(5):
        b.enforce(None, dirs)
    # check 1: 2000 held > 1000; stuck releases 0, half 300 (1700 left), full 500 (1200 left)
    # check 2: 1200 held > 1000; stuck 0, half its last 300 (900 left, below low water)
    # checks 3-5: 900 held, under the limit: nothing
    assert b.stats["bytes cut by the budget"] == 300 + 500 + 300
    assert b.stats["budget cuts"] == 3
    assert b.stats["budget checks"] == 5
    assert (stuck.framer.buffered_bytes, half.framer.buffered_bytes, full.framer.buffered_bytes) == (900, 0, 0)


def mq_max_claims(conns, segments, body=1424, port=1414):
    """The audit's capture, scaled: ``conns`` connections to ``port``, every
    client segment a TSHM claiming the maximum MQSegmLen + ``body`` bytes,
    round robin, no FIN.  Returns (frames, stream bytes per connection)."""
    hdr = _max_claim_header(mqf)
    raw, seqs = handshakes(conns, port, "10.7", 20000, 1000, 7, 9000)
    streams = [bytearray() for _ in range(conns)]
    for i in range(segments):
        for c in range(conns):
            cli, cport, seq = seqs[c]
            payload = hdr + _pattern(body, i * conns + c)
            raw.append(tcp_frame(cli, "10.8.0.1", cport, port, seq, 9001, 0x18, payload))
            streams[c] += payload
            seqs[c][2] = seq + len(payload)
    return frames_of(raw), [bytes(s) for s in streams]


def test_mq_max_claims_under_budget_honest_and_lossless():
    """The audit's capture through the reference loop: the buffered total
    stays bounded, the budget's counters stay below the bytes sent, and every
    byte sent is in exactly one FramingError of its connection (its length),
    whose raw bytes are the stream's."""
    frames, streams = mq_max_claims(48, 40)
    sent = sum(len(s) for s in streams)
    budget = ByteBudget(256 * KiB, slack=16 * KiB)
    res = drive(frames, budget)
    assert res["peak"] <= 256 * KiB + 16 * KiB + 1500
    st = budget.stats
    assert 0 < st["bytes cut by the budget"] <= sent
    per = {}
    for key, d, ev in res["events"]:
        assert d == 0 and isinstance(ev, mqf.FramingError), ev
        per.setdefault(key.client_port - 20000, []).append(ev)
    assert sorted(per) == list(range(48))
    for c, errs in per.items():
        _tiles([(e.offset, e.length) for e in errs], len(streams[c]))
        for e in errs:
            assert e.raw == streams[c][e.offset:e.offset + len(e.raw)]
    # each cut turned a partial segment into one budget error: the counters are those errors
    cut_errs = [e for _, _, e in res["events"] if e.field == "budget"]
    assert len(cut_errs) == st["budget cuts"]
    assert sum(e.length for e in cut_errs) == st["bytes cut by the budget"]


@pytest.mark.parametrize("capture_impl", ["py", None])
def test_converter_mq_max_claims_counts_honestly(capture_impl):
    """The audit's measurement, scaled (48 connections, ~2.8 MiB, a 256 KiB
    budget), through the converter with the pure pipeline and with the
    default engine: counters at most the input's bytes, rows equal between
    the engines, and every row's raw is its stream's bytes at its offset,
    rows of a connection in order without overlap, starting at offset 0."""
    import pyarrow as pa

    from mqcodec.convert import ConvertOptions, Converter
    from mqcodec.convert.sinks import TableCollector

    frames, streams = mq_max_claims(48, 40)
    data = _pcap(frames)

    def convert(impl):
        tables = TableCollector()
        conv = Converter(tables,
                         ConvertOptions(capture_impl=impl, buffer_budget=256 * KiB, chunk_bytes=256 * KiB))
        conv.add_capture(data, name="c")
        return tables.rows(), conv.report()["summary"]

    rows, summary = convert(capture_impl)
    assert 0 < summary["budget cuts"] <= len(data)
    assert 0 < summary["bytes cut by the budget"] <= sum(len(s) for s in streams) < len(data)
    per = {}
    for r in rows:
        assert r["dst_port"] == 1414 and r["error"] is not None
        per.setdefault(r["src_port"] - 20000, []).append(r)
    assert sorted(per) == list(range(48))
    assert any(r["error_field"] == "budget" for r in rows)
    for c, rs in per.items():
        rs.sort(key=lambda r: r["stream_offset"])
        assert rs[0]["stream_offset"] == 0
        for a, b in zip(rs, rs[1:]):
            # the rows' extents (``length``, not only the raw bytes kept) tile the stream
            assert a["stream_offset"] + a["length"] == b["stream_offset"]
        assert rs[-1]["stream_offset"] + rs[-1]["length"] == len(streams[c])
        for r in rs:
            assert len(r["raw"]) <= r["length"]
            assert r["raw"] == streams[c][r["stream_offset"]:r["stream_offset"] + len(r["raw"])]
    if capture_impl is None:
        ref_rows, ref_summary = convert("py")
        assert summary == ref_summary
        key = lambda r: repr(sorted((k, v) for k, v in r.items() if k != "message_key"))
        assert sorted(map(key, rows)) == sorted(map(key, ref_rows))


def _mq_run_with_cuts(stream, rnd, cuts):
    """Feed ``stream`` in random pieces with random gaps (and random cuts);
    check that each cut releases what the framer held and leaves at most a few
    bytes of a possible header; returns (events, gap ranges, stream end)."""
    f = mqf.MQStreamFramer(max_raw=rnd.choice([16, 1000, 1 << 20]))
    ev, gaps, pos, off = [], [], 0, 0
    while pos < len(stream):
        r = rnd.random()
        if r < 0.05:
            n = rnd.randrange(1, 300)
            gaps.append((off, off + n))
            f.gap(n)
            off += n
            continue
        if cuts and r < 0.25:
            held = f.buffered_bytes
            assert f.cut(1 << 20) == held - f.buffered_bytes
            assert f.buffered_bytes <= 64
        piece = stream[pos:pos + rnd.randrange(1, 2000)]
        f.feed(piece)
        pos += len(piece)
        off += len(piece)
        ev += f.events()
    f.close()
    return ev + f.events(), gaps, off


def test_mq_framer_random_cuts_account_for_every_byte():
    """Seed streams (some with flipped bytes) fed in random pieces with random
    gaps, with and without random cuts: segments and segment-level errors (all
    but the errors of whole pending messages, which repeat their segments)
    never overlap, and together with the gaps they cover every stream byte."""
    import random

    from fuzz import seeds

    streams = seeds.mq_stream_seeds()
    streams.append(b"".join(streams))
    for i in range(400):
        rnd = random.Random(i)
        s = bytearray(rnd.choice(streams))
        for _ in range(rnd.randrange(0, 4)):
            s[rnd.randrange(len(s))] = rnd.randrange(256)
        ev, gaps, end = _mq_run_with_cuts(bytes(s), rnd, cuts=bool(i % 2))
        spans = sorted((e.offset, e.offset + e.length) for e in ev
                       if isinstance(e, mqf.Segment) or (isinstance(e, mqf.FramingError) and e.conversation_id is None))
        for a, b in zip(spans, spans[1:]):
            assert a[1] <= b[0], (i, a, b)
        covered = 0
        for a, b in sorted(spans + gaps):
            assert a <= covered, (i, "bytes %d..%d in no unit" % (covered, a))
            covered = max(covered, b)
        assert covered >= end, (i, covered, end)
