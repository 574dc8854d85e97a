"""The global byte budget (mqcodec.capture.budget) and the buffered-bytes
accessors and cuts it relies on (TCP reorder buffers, both framers).

Expected values come from what the tests build (bytes written per connection,
packet boundaries), from runs without a budget, or from framers fed the same
bytes without a cut -- never from the budget's own figures."""
from __future__ import annotations

import struct

import pytest

from mqcodec.capture.budget import ByteBudget, drive
from mqcodec.capture.frame import Frame
from mqcodec.capture.tcp import TCPReassembler
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


def msmq_claims(conns, segments, body=1400, port=1801, hole_first=False):
    """``conns`` connections to ``port``; every client segment starts with an MSMQ
    BaseHeader claiming PacketSize 0x00400000 (4 MiB) and carries ``body`` bytes.
    With ``hole_first`` the first segment of every connection is never sent, so
    everything after it waits in the reorder buffer.  Returns (frames, bytes sent
    per connection index, bytes left out per connection index)."""
    hdr = struct.pack("<BBH4sII", 0x10, 0, 0, b"LIOR", 0x00400000, 0xFFFFFFFF)
    payload = hdr + bytes(body - len(hdr))
    raw, seqs = [], []
    for c in range(conns):
        cli = "10.9.%d.%d" % (c // 250, 1 + c % 250)
        isn = 5000 + c * 11
        raw += [tcp_frame(cli, "10.8.0.1", 30000 + c, port, isn, 0, 0x02),
                tcp_frame("10.8.0.1", cli, port, 30000 + c, 7000, isn + 1, 0x12)]
        seqs.append([cli, 30000 + c, isn + 1])
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
    assert f.cut("test reason") == len(half)
    assert f.buffered_bytes == 0
    ev = list(f)
    assert len(ev) == 1 and ev[0].raw == half and (ev[0].structure, ev[0].field) == ("capture", "budget")
    assert ev[0].offset == 0 and "test reason" in ev[0].reason
    # the rest of the cut packet is garbage; the next whole packet is found again
    f.feed(pkt[len(half):] + pkt)
    ev = list(f)
    packets = [e for e in ev if isinstance(e, msf.Packet)]
    assert [p.data for p in packets] == [pkt] and packets[0].offset == len(pkt)
    assert any(isinstance(e, msf.Resynchronised) for e in ev)


def _mq_put(n):
    from mqcodec.ibmmq.message import MQMessage

    return mqf.encode_put(MQMessage(body=bytes(range(256)) * (n // 256) + bytes(n % 256)))


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
    assert f.cut("budget test") == 150_000
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
    assert [m.message_bytes for m in msgs] == [m.message_bytes for m in expected]
    assert msgs[0].stream_offset_start == len(big)
    rs = [e for e in ev if isinstance(e, mqf.Resynchronised)]
    assert rs and rs[0].offset == len(big)


def test_mq_framer_cut_pending_multisegment_message():
    from mqcodec.ibmmq.message import MQMessage

    segs = mqf.encode_put(MQMessage(body=bytes(range(256)) * 40), max_segment_length=2048)
    assert segs.count(b"TSHM") > 3
    f = mqf.MQStreamFramer()
    f.feed(segs[: len(segs) - 100])           # all but the end of the last segment
    f.events()
    held = f.buffered_bytes
    assert held > len(segs) // 2
    assert f.cut("r") == held and f.buffered_bytes == 0
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
    assert f.cut("r") == held - (f.buffered_bytes) and f.buffered_bytes <= 3
    ev = f.events()
    assert len(ev) == 1 and ev[0].offset == 0 and ev[0].raw == garbage[:len(ev[0].raw)]
    f.feed(nxt)
    ev += f.events()
    # the same bytes reported, the same message found at the same offset
    assert b"".join(e.raw for e in ev if isinstance(e, mqf.FramingError)) == \
        b"".join(e.raw for e in ref_ev if isinstance(e, mqf.FramingError))
    assert [(m.stream_offset_start, m.message_bytes) for m in ev if isinstance(m, mqf.Message)] == \
        [(m.stream_offset_start, m.message_bytes) for m in ref_ev if isinstance(m, mqf.Message)]


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

    from mqcodec.pcap2parquet import Converter, ConvertOptions

    opts = ConvertOptions(capture_impl="py", impl="py")
    if budget is not None:
        opts.buffer_budget = budget
    tables = []
    conv = Converter(tables.append, lambda t: None, opts)
    conv.add_capture(data, name="c")
    rows = pa.concat_tables(tables).to_pylist() if tables else []
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
