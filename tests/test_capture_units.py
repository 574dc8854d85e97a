"""Capture to stream units, both implementations (``impl``): the pcap and
pcapng walk, link layers, IPv4/IPv6, TCP reassembly (out-of-order segments,
overlaps and retransmissions, holes, snap-length cuts, connection reuse,
eviction) and the framers behind it, read through the conversion's public
entry point (``tests/capture_units.py``: ``Converter`` with
``capture_impl``), the reassembler's limits through stage (b) alone
(``iter_stream_events``).

Each test builds a capture and states facts of it: the units the simulator
sent, where a unit starts after the bytes in front of it, the gaps a cut or a
dropped segment makes, the reassembler's counts of the damage done, every
row's frame and time (each row's ``ts`` is its frame's record time:
``capture_units.units`` checks it).  Read in pieces of any size, a capture
gives the same units.  For the compiled implementation ``units`` also checks
every table, the summary and the capture's report against the pure
implementation's for the same bytes.
"""
from __future__ import annotations

import inspect
import io
import os
import random
import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcodec import synth
from mqcodec.capture import iter_stream_events
from mqcodec.capture.writer import PcapngWriter, PcapWriter, TcpConversation, ethernet, null_loopback, sll, sll2
from mqcodec.errors import DecodeError
from mqcodec.ibmmq.builders import build_tsh
from mqcodec.ibmmq.framing import MQStreamFramer

from capture_inputs import UnseekableFile
from capture_units import record_times, tcp_stats, units

CAPTURE = "/work/shared/captures/ibmmq_jms_client_1414.pcap"
if not os.path.exists(CAPTURE):
    CAPTURE = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "captures", "ibmmq_jms_client_1414.pcap")

#: the units the IBM MQ framer keeps open at once (a unit past them is dropped with a FramingError)
MQ_MAX_OPEN_UNITS = inspect.signature(MQStreamFramer).parameters["max_pending_messages"].default


def _synth(seed: int, messages: int) -> bytes:
    f = io.BytesIO()
    synth.write_capture(f, seed=seed, messages=messages)
    return f.getvalue()


@pytest.fixture(scope="module")
def real():
    with open(CAPTURE, "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def sim():
    return _synth(1, 60)


def _payload_streams(frames) -> dict:
    """{(src_ip, src_port): bytes}: each TCP direction's payload in capture order
    (Ethernet/IPv4 frames, one connection per 4-tuple, nothing lost or reordered)."""
    out: dict = {}
    for frame in frames:
        if frame[12:14] != b"\x08\x00" or frame[23] != 6:
            continue
        ihl = (frame[14] & 15) * 4
        total = struct.unpack_from("!H", frame, 16)[0]
        t = 14 + ihl
        src = socket.inet_ntoa(frame[26:30])
        out.setdefault((src, struct.unpack_from("!H", frame, t)[0]), []).append(
            frame[t + (frame[t + 12] >> 4) * 4:14 + total])
    return {k: b"".join(v) for k, v in out.items()}


def check_tiles(u, frames) -> None:
    """Clean capture: in every direction the units follow each other from
    offset 0 and end within the direction's payload, none an error; an MSMQ
    packet starts where the one before it ended and the last ends with the
    payload (an IBM MQ unit of several segments is one row whose length
    leaves out the headers of the segments after its first)."""
    streams = _payload_streams(frames)
    assert u.rows
    for key, rows in u.rows.items():
        assert all(r.error is None for r in rows), key
        msmq = rows[0].kind == "EstablishConnection"
        at = 0
        for r in rows:
            assert r.offset == at if msmq else r.offset >= at, (key, r)
            at = r.offset + r.length
        assert at == len(streams[key[1:]]) if msmq else at <= len(streams[key[1:]]), key


# --------------------------------------------------------------------------- clean captures
def test_real_capture(real, impl):
    u = units(real, impl)
    assert u.count() > 0 and u.errors() == 0
    assert u.report["stats"]["frames"] == len(record_times(real))


@pytest.mark.parametrize("seed", [1, 2, 3, 7])
def test_simulator_units_tile_every_stream(seed, impl):
    pk = synth.generate(seed, 40)
    u = units(_pcap([(p.ts_ns, p.frame) for p in pk], nanosecond=True), impl)
    check_tiles(u, [p.frame for p in pk])
    assert u.report["stats"]["frames"] == len(pk)
    assert sum(tcp_stats(u).values()) == tcp_stats(u)["segments after close"]   # no damage to count


# --------------------------------------------------------------------------- pieces
def test_one_byte_reads(real, impl):
    part = real[:60000]
    assert units(part, impl, sizes=[1]) == units(part, impl)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(1, 5000), min_size=1, max_size=8))
def test_random_reads(sim, impl, sizes):
    if impl not in _WHOLE_SIM:
        _WHOLE_SIM[impl] = units(sim, impl)
    assert units(sim, impl, sizes=sizes) == _WHOLE_SIM[impl]


_WHOLE_SIM: dict = {}   # the simulator capture read whole, by implementation (test_random_reads)


# --------------------------------------------------------------------------- file formats and link layers
def _pcap(frames, **opts) -> bytes:
    """frames: (ts_ns, frame bytes[, origlen]); PcapWriter options (linktype, byte_order, nanosecond, snaplen)."""
    f = io.BytesIO()
    linktype = opts.pop("linktype", 1)
    w = PcapWriter(f, linktype, **opts)
    for t in frames:
        w.write(*t)
    return f.getvalue()


def _ip_of(frame: bytes) -> bytes:
    assert frame[12:14] == b"\x08\x00"          # the simulator writes untagged Ethernet/IPv4
    return frame[14:]


def _to_v6(ip4: bytes) -> bytes:
    """The same TCP/UDP segment in an IPv6 packet (RFC 8200 header; checksums are not checked by readers)."""
    ihl = (ip4[0] & 15) * 4
    total = struct.unpack_from("!H", ip4, 2)[0]
    seg = ip4[ihl:total]
    src = b"\x20\x01\x0d\xb8" + b"\0" * 8 + ip4[12:16]
    dst = b"\x20\x01\x0d\xb8" + b"\0" * 8 + ip4[16:20]
    return struct.pack("!IHBB", 0x60000000, len(seg), ip4[9], 64) + src + dst + seg


def _sim_packets(seed=2, messages=20):
    return synth.generate(seed, messages)


LINKS = {
    "vlan": (1, lambda ip: ethernet(ip, vlans=(10,))),
    "qinq": (1, lambda ip: ethernet(ip, vlans=(100, 20))),
    "sll": (113, sll),
    "sll2": (276, sll2),
    "null-le": (0, lambda ip: null_loopback(ip, byte_order="<")),
    "null-be": (0, lambda ip: null_loopback(ip, byte_order=">")),
    "loop": (108, lambda ip: null_loopback(ip, byte_order=">")),
    "raw": (101, lambda ip: ip),
    "ipv4": (228, lambda ip: ip),
}


@pytest.mark.parametrize("link", sorted(LINKS))
@pytest.mark.parametrize("v6", [False, True])
def test_link_layers_and_ipv6_give_the_ethernet_units(link, v6, impl):
    """The same segments in another link layer or in IPv6: the units, frames and
    times of the plain Ethernet/IPv4 capture."""
    linktype, wrap = LINKS[link]
    if link == "ipv4" and v6:
        linktype = 229
    pk = _sim_packets()
    frames = []
    for p in pk:
        ip = _ip_of(p.frame)
        frames.append((p.ts_ns, wrap(_to_v6(ip) if v6 else ip)))
    u = units(_pcap(frames, linktype=linktype, nanosecond=True), impl)
    plain = units(_pcap([(p.ts_ns, p.frame) for p in pk], nanosecond=True), impl)
    assert u.count() > 0
    if not v6:
        assert u.rows == plain.rows
    else:   # the addresses differ: the rows by connection, in order
        assert [v for _, v in sorted(u.rows.items(), key=lambda kv: kv[0][0::2])] == [
            v for _, v in sorted(plain.rows.items(), key=lambda kv: kv[0][0::2])]


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("ns", [False, True])
def test_byte_orders_and_resolutions(order, ns, impl):
    pk = _sim_packets(3, 10)
    u = units(_pcap([(p.ts_ns + 123, p.frame) for p in pk], byte_order=order, nanosecond=ns), impl)
    plain = units(_pcap([(p.ts_ns + 123, p.frame) for p in pk], nanosecond=True), impl)
    assert u.report["stats"]["frames"] == len(pk)
    if ns:
        assert u.rows == plain.rows
    else:   # microseconds: the times cut to the microsecond, the rest the same
        assert {k: [r._replace(ts=r.ts // 1000 * 1000) for r in v] for k, v in plain.rows.items()} == u.rows


def test_ipv6_extension_headers(impl):
    pk = _sim_packets(2, 10)
    frames = []
    for i, p in enumerate(pk):
        ip6 = _to_v6(_ip_of(p.frame))
        nh = ip6[6]
        if i % 3 == 0:   # a Destination Options header (8 bytes) before the transport header
            ext = bytes([nh, 0]) + b"\x01\x04\0\0\0\0"
            ip6 = ip6[:4] + struct.pack("!H", len(ip6) - 40 + 8) + bytes([60]) + ip6[7:40] + ext + ip6[40:]
        frames.append((p.ts_ns, ethernet(ip6)))
    u = units(_pcap(frames, nanosecond=True), impl)
    plain = units(_pcap([(p.ts_ns, ethernet(_to_v6(_ip_of(p.frame)))) for p in pk], nanosecond=True), impl)
    assert u.count() > 0 and u.rows == plain.rows


def _ng_block(order, btype, body):
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(order + "II", btype, n) + body + struct.pack(order + "I", n)


def _ng_shb(order):
    return _ng_block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))


def _ng_idb(order, linktype, snaplen=0, tsresol=None, tsoffset=None):
    opts = b""
    if tsresol is not None:
        opts += struct.pack(order + "HHB3x", 9, 1, tsresol)
    if tsoffset is not None:
        opts += struct.pack(order + "HHq", 14, 8, tsoffset)
    if opts:
        opts += struct.pack(order + "HH", 0, 0)
    return _ng_block(order, 1, struct.pack(order + "HHI", linktype, 0, snaplen) + opts)


def _ng_epb(order, if_id, ticks, data, origlen=None):
    return _ng_block(order, 6, struct.pack(order + "IIIII", if_id, ticks >> 32, ticks & 0xFFFFFFFF, len(data),
                                           len(data) if origlen is None else origlen) + data)


@pytest.mark.parametrize("order", ["<", ">"])
def test_pcapng(order, impl):
    """Two sections, interfaces of several link types and timestamp resolutions, SPB,
    custom and unknown blocks: every direction's units tile its payload; frames are
    numbered as tshark numbers them (a custom block is a frame); the frames of the
    nanosecond interface keep their times."""
    pk = _sim_packets(2, 12)
    out = [_ng_shb(order), _ng_idb(order, 1, tsresol=9), _ng_idb(order, 113, tsresol=6, tsoffset=3),
           _ng_idb(order, 1, tsresol=0x80 | 30)]
    exact = {}      # frame number -> ts_ns, frames of interface 0
    number = 0
    half = len(pk) // 2
    for i, p in enumerate(pk[:half]):
        number += 1
        if i % 3 == 1:
            out.append(_ng_epb(order, 1, p.ts_ns // 1000, sll(_ip_of(p.frame))))
        elif i % 7 == 5:
            out.append(_ng_epb(order, 2, (p.ts_ns << 30) // 10**9, p.frame))
        else:
            out.append(_ng_epb(order, 0, p.ts_ns, p.frame))
            exact[number] = p.ts_ns
        if i == 3:
            out.append(_ng_block(order, 0xBAD, b"\0\0\0\0custom"))   # numbered as a frame by tshark
            out.append(_ng_block(order, 0x1234, b"unknown"))
            out.append(_ng_block(order, 3, struct.pack(order + "I", 60) + b"\xff" * 60))   # SPB (broadcast junk)
            number += 2
    other = ">" if order == "<" else "<"
    out += [_ng_shb(other), _ng_idb(other, 1, tsresol=9)]
    for p in pk[half:]:
        out.append(_ng_epb(other, 0, p.ts_ns, p.frame))
        number += 1
        exact[number] = p.ts_ns
    data = b"".join(out)
    u = units(data, impl)
    check_tiles(u, [p.frame for p in pk])
    assert number == len(pk) + 2      # tshark numbers the custom block and the SPB
    assert u.report["stats"]["frames"] == len(pk) + 1     # the SPB is a frame; the custom block holds none
    seen = [r for v in u.rows.values() for r in v if r.frame in exact]
    assert seen and all(r.ts == exact[r.frame] for r in seen)
    assert units(data, impl, sizes=[1]) == u


def test_pcapng_cut_and_damaged(impl):
    """Cut anywhere: the frames wholly present are read, the cut reported at the
    block it falls in. A block length that is not a multiple of 4 in the middle:
    the file ends there (a file error naming that block)."""
    f = io.BytesIO()
    w = PcapngWriter(f)
    w.add_interface(1)
    pk = _sim_packets(2, 4)
    for p in pk:
        w.write(0, p.ts_ns, p.frame)
    data = f.getvalue()
    blocks, pos = [], 0
    while pos < len(data):
        blocks.append(pos)
        pos += struct.unpack_from("<I", data, pos + 4)[0]
    blocks.append(len(data))
    epbs = blocks[2:-1]          # the SHB, the IDB, then one EPB per frame
    rnd = random.Random(5)
    for n in sorted(rnd.sample(range(30, len(data)), 15)) + [len(data)]:
        u = units(data[:n], impl)
        whole = sum(1 for k, b in enumerate(epbs) if blocks[k + 3] <= n)
        assert u.report["stats"]["frames"] == whole
        if n in blocks:
            assert "truncation" not in u.report
        else:
            at = max(b for b in blocks if b < n)
            assert at <= u.report["truncation"]["offset"] <= at + 8
    bad = bytearray(data)
    at = blocks[len(blocks) // 2]
    struct.pack_into("<I", bad, at + 4, 0x1001)
    u = units(bytes(bad), impl)
    assert "%d" % (at + 4) in u.report["file_error"]
    assert u.report["stats"]["frames"] == blocks.index(at) - 2


@pytest.mark.parametrize("head", [b"\x00\x01\x02\x03", b"\xd4\xc3\xb2\xa1\x03\x00" + b"\0" * 18])
def test_bad_file_header_is_not_a_capture(head, impl):
    with pytest.raises(DecodeError):
        units(head, impl)


# --------------------------------------------------------------------------- cut and damaged files
def _records(pk):
    """(offset, number) of each record of _pcap(pk), from the sizes we wrote."""
    out, off = [], 24
    for i, p in enumerate(pk):
        out.append((off, i + 1))
        off += 16 + len(p.frame)
    return out, off


@pytest.mark.parametrize("seed", range(12))
def test_cut_file_reads_the_whole_records(seed, impl):
    pk = _sim_packets(4, 8)
    data = _pcap([(p.ts_ns, p.frame) for p in pk], nanosecond=True)
    recs, total = _records(pk)
    n = random.Random(seed).randrange(24, len(data))
    u = units(data[:n], impl)
    whole = [r for r in recs if r[0] + 16 + len(pk[r[1] - 1].frame) <= n]
    ends_clean = n == 24 or (whole and whole[-1][0] + 16 + len(pk[whole[-1][1] - 1].frame) == n)
    assert u.report["stats"]["frames"] == len(whole)
    if ends_clean:
        assert "truncation" not in u.report
    else:
        stop = recs[len(whole)][0]
        assert u.report["truncation"]["offset"] in (stop + (n - stop) // 4 * 4, stop + 16)
    assert all(r.frame <= len(whole) for v in u.rows.values() for r in v)


def test_absurd_incl_len_ends_the_file_at_that_record(impl):
    pk = _sim_packets(4, 8)
    data = bytearray(_pcap([(p.ts_ns, p.frame) for p in pk], nanosecond=True))
    recs, _ = _records(pk)
    off, number = recs[len(recs) // 2]
    struct.pack_into("<I", data, off + 8, (16 << 20) + 1)
    u = units(bytes(data), impl)
    assert u.report["stats"]["frames"] == number - 1
    assert "%d" % (off + 8) in u.report["file_error"]


def _tuple(frame: bytes):
    ihl = (frame[14] & 15) * 4
    if frame[23] != 6:
        return None
    sport, dport = struct.unpack_from("!HH", frame, 14 + ihl)
    return frozenset([(bytes(frame[26:30]), sport), (bytes(frame[30:34]), dport)])


def _damaged(pk, seed: int, damage: str) -> list:
    """(ts, frame) of ``pk`` with two data segments dropped, duplicated, or each
    sent after the next frame of its connection when that is data of the same
    direction."""
    rnd = random.Random(seed)
    data_idx = [i for i, p in enumerate(pk) if p.length > 0 and _tuple(p.frame) is not None]
    frames = [(p.ts_ns, p.frame) for p in pk]
    for _ in range(2):
        i = rnd.choice(data_idx)
        t = _tuple(pk[i].frame)
        if damage == "drop":
            frames[i] = None
        elif damage == "duplicate":
            frames[i] = [frames[i], frames[i]]        # a retransmission
        else:
            # the connection's next frame, if it is data of the same direction (nothing of the other
            # direction between them: an ACK of the segment before the segment itself makes a gap)
            j = next((j for j in range(i + 1, len(pk)) if _tuple(pk[j].frame) == t), None)
            if (j is None or j not in data_idx or pk[j].frame[26:34] != pk[i].frame[26:34]
                    or not isinstance(frames[j], tuple) or not isinstance(frames[i], tuple)):
                continue
            frames[i], frames[j] = frames[j], frames[i]
    flat = []
    for f in frames:
        if f is None:
            continue
        flat += f if isinstance(f, list) else [f]
    return flat


def _by_connection(u) -> dict:
    """{(tcp_stream, src_ip, src_port): [(offset, kind, length, error)]}: the rows without frames and times."""
    return {k: [(r.offset, r.kind, r.length, r.error) for r in v] for k, v in u.rows.items()}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("damage", ["drop", "duplicate", "reorder"])
def test_damaged_segments(seed, damage, impl):
    """Duplicated or reordered segments: the clean capture's units (their frames
    may move); dropped ones: a gap each, and every direction they did not touch
    keeps its units."""
    pk = _sim_packets(5, 25)
    clean = units(_pcap([(p.ts_ns, p.frame) for p in pk], nanosecond=True), impl)
    u = units(_pcap(_damaged(pk, seed, damage), nanosecond=True), impl)
    stats = tcp_stats(u)
    if damage == "drop":
        assert u.stats["gaps"] > 0
        touched = {k for k in u.rows if _by_connection(u)[k] != _by_connection(clean).get(k)}
        assert len(touched) <= 2 and set(u.rows) - touched
    else:
        assert _by_connection(u) == _by_connection(clean)
        assert "gaps" not in u.stats
        if damage == "duplicate":
            assert stats["retransmitted segments"] >= 1


# --------------------------------------------------------------------------- connection reuse
#: IBM MQ traffic with more multi-segment units open at once than the pure framer
#: keeps (MQ_MAX_OPEN_UNITS + 1 first segments of as many conversations): the oldest
#: is dropped with a FramingError
MANY_OPEN_UNITS = b"".join(build_tsh(0x86, 36 + 100, conversation_id=1000 + k, ctl_flags1=0x10) + bytes(100)
                      for k in range(MQ_MAX_OPEN_UNITS + 1))


def _mq_stream(n=3):
    """Client->server bytes of a simulator MQ connection (a real TSH stream)."""
    pk = _sim_packets(2, 6)
    conns = {}
    for p in pk:
        t = _tuple(p.frame)
        if t is None or p.length == 0:
            continue
        ihl = (p.frame[14] & 15) * 4
        dport = struct.unpack_from("!H", p.frame, 16 + ihl)[0]
        if dport == 1414:
            doff = (p.frame[14 + ihl + 12] >> 4) * 4
            total = struct.unpack_from("!H", p.frame, 16)[0]
            conns.setdefault(t, []).append(p.frame[14 + ihl + doff:14 + total])
    first = max(conns.values(), key=len)
    # from the first MQPUT on (the conversation starts with INITIAL_DATA,
    # USERID, MQCONN and MQOPENs, which carry no message)
    k = next(i for i, b in enumerate(first) if b[:4] == b"TSHM" and b[17] == 0x86)
    return b"".join(first[k:k + n])


@pytest.mark.parametrize("close_first", [True, False])
def test_syn_reusing_the_tuple_opens_a_new_stream(close_first, impl):
    payload = _mq_stream()
    pkts = []
    for isn in (1000, 900000):
        c = TcpConversation(("10.1.0.1", 40001), ("10.1.0.2", 1414), isn_client=isn, isn_server=isn * 3,
                            start_ns=1_700_000_000_000_000_000 + isn * 10_000)
        pkts += c.handshake() + c.send(0, payload)
        if close_first:
            pkts += c.close()
    u = units(_pcap([(p.ts_ns, p.frame) for p in pkts], nanosecond=True), impl)
    assert set(u.rows) == {(0, "10.1.0.1", 40001), (1, "10.1.0.1", 40001)}
    assert _by_connection(u)[(0, "10.1.0.1", 40001)] == _by_connection(u)[(1, "10.1.0.1", 40001)]
    assert u.errors() == 0


def _conflicting_copy(frames: list, i: int) -> list:
    """``frames`` with frame ``i`` (a data segment) sent again right after it with
    its last payload byte changed, 300 times (more conflict ranges than a
    direction keeps: tables.MAX_CONFLICT_RANGES)."""
    ts, frame = frames[i]
    other = bytearray(frame)
    other[-1] ^= 0xFF
    return frames[:i + 1] + [(ts + 1, bytes(other))] * 300 + frames[i + 1:]


def test_many_differing_copies_are_counted(impl):
    pk = _sim_packets(5, 25)
    frames = [(p.ts_ns, p.frame) for p in pk]
    data_idx = [i for i, p in enumerate(pk) if p.length > 0 and _tuple(p.frame) is not None]
    u = units(_pcap(_conflicting_copy(frames, data_idx[len(data_idx) // 2]), nanosecond=True), impl)
    clean = units(_pcap(frames, nanosecond=True), impl)
    assert tcp_stats(u)["conflicting overlaps"] == 300
    assert _by_connection(u) == _by_connection(clean)     # the first copy's bytes are the stream's


# --------------------------------------------------------------------------- ports and content detection
def _conv(port, chunks, *, cport=40000, isn=1000, start=0):
    c = TcpConversation(("10.2.0.1", cport), ("10.2.0.2", port), isn_client=isn, start_ns=1_700_000_000_000_000_000 + start)
    pk = c.handshake()
    for ch in chunks:
        pk += c.send(0, ch)
    return pk + c.close()


def test_content_detection_and_undetected_bytes(impl):
    mq = _mq_stream(4)
    pkts = (_conv(5000, [mq], cport=40001)                            # detected at offset 0
            + _conv(5001, [b"junk" * 10, mq], cport=40002, start=10**9)  # detected mid-stream
            + _conv(9999, [b"hello" * 100, b"x" * 7], cport=40003, start=2 * 10**9))  # never detected
    u = units(_pcap([(p.ts_ns, p.frame) for p in pkts], nanosecond=True), impl)
    # detected after the stream start: framed from the first recognised byte
    assert u.stats["bytes in streams of no known protocol"] == 40 + 507
    first = _by_connection(u)[(0, "10.2.0.1", 40001)]
    mid = _by_connection(u)[(1, "10.2.0.1", 40002)]
    assert first and [r[0] - 40 for r in mid] == [r[0] for r in first] and u.errors() == 0
    assert not any(k[0] == 2 for k in u.rows)


def test_no_content_detection_and_port_options(impl):
    mq = _mq_stream(4)
    pkts = _conv(5000, [mq], cport=40001) + _conv(1414, [mq], cport=40002, start=10**9)
    data = _pcap([(p.ts_ns, p.frame) for p in pkts], nanosecond=True)
    framed = {}
    for opts in ({}, {"detect_by_content": False}, {"mq_ports": (5000,)}, {"mq_ports": (), "msmq_ports": ()}):
        framed[repr(opts)] = sorted(k[0] for k in units(data, impl, **opts).rows)
    assert framed == {"{}": [0, 1], "{'detect_by_content': False}": [1], "{'mq_ports': (5000,)}": [0, 1],
                      "{'mq_ports': (), 'msmq_ports': ()}": [0, 1]}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 40000), bad=st.booleans(), sizes=st.lists(st.integers(1, 3000), min_size=1, max_size=6))
def test_random_reads_of_cut_and_damaged_files(sim, impl, cut, bad, sizes):
    data = bytearray(sim[:24 + cut])
    if bad:
        # an absurd incl_len in the record header that starts at byte 24 + the first record's size
        first = 16 + struct.unpack_from("<I", data, 24 + 8)[0] if len(data) >= 40 else None
        if first is not None and len(data) >= 24 + first + 16:
            struct.pack_into("<I", data, 24 + first + 8, 0xFFFFFFF0)
    data = bytes(data)
    assert units(data, impl, sizes=sizes) == units(data, impl)


# --------------------------------------------------------------------------- the reassembler's limits (stage b)
def _events(data: bytes, impl: str, **limits) -> list:
    """The TCP stream events of ``data`` (``iter_stream_events``), as tuples
    without the ``reason`` the compiled core does not keep.  The compiled core
    reads it in short pieces, its events taken after each: it frees the records
    of the connections it forgot a take later, and reuses them."""
    out = []
    source = io.BytesIO(data) if impl == "py" else UnseekableFile(data, sizes=[700, 1500, 333])
    for ev in iter_stream_events(source, impl=impl, **limits):
        t = type(ev).__name__
        if t == "StreamOpened":
            out.append((t, tuple(ev.conn), ev.syn_seen, ev.frame_number))
        elif t == "StreamData":
            out.append((t, ev.conn.stream, ev.direction, ev.offset, bytes(ev.data), ev.frame_number))
        else:
            out.append((t, ev.conn.stream, ev.direction, ev.offset, ev[4] if t == "Gap" else None, ev.frame_number))
    if impl == "c":
        assert out == _events(data, "py", **limits)
    return out


def _opened(events) -> list:
    return [e[1] for e in events if e[0] == "StreamOpened"]


@pytest.mark.parametrize("max_closed", [1, 2, 100])
def test_closed_connection_memory_and_late_retransmissions(max_closed, impl):
    """Late retransmissions after close are ignored while the 4-tuple is
    remembered, and open a new connection once the closed map forgot it (it
    remembers the last ``max_closed``)."""
    mq = _mq_stream(3)
    pkts, late = [], []
    for k in range(4):
        conv = _conv(1414, [mq], cport=41000 + k, start=k * 10**9)
        pkts += conv
        late.append([p for p in conv if p.length][0])
    t = 5 * 10**9 + 1_700_000_000_000_000_000
    frames = [(p.ts_ns, p.frame) for p in pkts] + [(t + i, p.frame) for i, p in enumerate(late)]
    data = _pcap(frames, nanosecond=True)
    opened = _opened(_events(data, impl, max_closed=max_closed))
    assert [o[0] for o in opened] == list(range(len(opened)))
    assert [o[2] for o in opened[:4]] == [41000, 41001, 41002, 41003]
    assert len(opened) == 4 + max(0, 4 - max_closed)     # the conversations it no longer remembers
    # the conversion's option is the same limit: a forgotten connection's late segment is a
    # new tcp_stream (its unit, a TSH seen in mid-stream, is a row of its own)
    streams = {key[0] for key in units(data, impl, max_closed=max_closed).rows}
    assert streams == set(range(len(opened)))


_TUPLES = [(("10.3.0.1", 41000), ("10.3.0.2", 1414)), (("10.3.0.1", 41001), ("10.3.0.2", 1414)),
           (("10.3.0.5", 1414), ("10.3.0.5", 1414)), (("10.3.0.2", 1414), ("10.3.0.1", 41002))]


def _reused_tuples(rnd: random.Random, n: int, tuples=_TUPLES, t: int = 1_700_000_000_000_000_000) -> tuple:
    """The frames of ``n`` connections on ``tuples`` (the default: four, one of
    them a connection to itself), closed by FIN or RST, with late copies of
    earlier segments between them, from time ``t``; the (client, server) of
    each; the time after them."""
    frames, sent, conversations = [], [], []
    mq = _mq_stream(1)
    for _ in range(n):
        client, server = rnd.choice(tuples)
        conversations.append((client, server))
        c = TcpConversation(client, server, isn_client=rnd.randrange(1 << 32), start_ns=t, step_ns=1000)
        pk = c.handshake() + c.send(0, mq) + (c.close(rnd.randrange(2)) if rnd.random() < 0.7
                                              else c.reset(rnd.randrange(2)))
        frames += [(p.ts_ns, p.frame) for p in pk]
        sent += [p for p in pk if p.length]
        t = frames[-1][0] + 1000
        for p in rnd.sample(sent[-50:], min(len(sent), rnd.randrange(3))):   # late copies of earlier segments
            frames.append((t, p.frame))
            t += 1000
    return frames, conversations, t


@pytest.mark.parametrize("seed", range(12))
def test_the_closed_map_forgets_in_the_pure_order(seed, impl):
    """Connections on a few 4-tuples, reused, closed by FIN or RST, with late
    segments of earlier ones between, under a closed map of 1-4 connections:
    the compiled core opens, ignores and forgets exactly as the pure
    reassembler (``_events`` compares them), and keeps its closed map in order
    by connection rather than by key."""
    rnd = random.Random(seed)
    frames, conversations, _ = _reused_tuples(rnd, 40)
    opened = _opened(_events(_pcap(frames, nanosecond=True), impl, max_closed=rnd.randrange(1, 5)))
    assert [o[0] for o in opened] == list(range(len(opened)))
    # each conversation between two ends opens its connection (one to itself may be taken
    # for a reused tuple by its own SYN-ACK); late copies may open more
    assert len(opened) >= sum(1 for c in conversations if c[0] != c[1])


def test_the_closed_map_drops_stale_entries_of_reused_tuples(impl):
    """One connection, then thousands on three reused 4-tuples: each close
    leaves an entry in the closed map's order that the tuple's next connection
    makes stale, and the core compacts that order (past 4,096 entries, four
    times the keys closed), keeping the first connection's.  Connections on
    other tuples then make the closed map forget its oldest, the first
    connection first: a late copy of its segment opens a new connection, as
    in the pure reassembler."""
    rnd = random.Random(7)
    first, _, t = _reused_tuples(rnd, 1, [(("10.5.0.1", 43000), ("10.5.0.2", 1414))])
    reused, _, t = _reused_tuples(rnd, 2200, _TUPLES[:2] + _TUPLES[3:], t)
    others = [(("10.4.0.%d" % k, 42000 + k), ("10.4.1.1", 1414)) for k in range(12)]
    more, _, t = _reused_tuples(rnd, 60, others, t)
    late = [(t + i, frame) for i, (_, frame) in enumerate(first[3:4] + reused[-8:-7])]   # data segments
    opened = _opened(_events(_pcap(first + reused + more + late, nanosecond=True), impl, max_closed=4))
    assert [o[0] for o in opened] == list(range(len(opened)))
    # the first connection, forgotten, is opened again by its late copy
    assert [o[1:3] for o in opened].count(("10.5.0.1", 43000)) == 2


# --------------------------------------------------------------------------- reordering, overlaps, holes
def _in_order_units(mq: bytes, impl: str) -> dict:
    """The units of ``mq`` sent in order on the connection the tests below damage."""
    c = TcpConversation(("10.3.0.1", 40100), ("10.3.0.2", 1414), mss=200)
    pk = c.handshake() + c.send(0, mq, ack_each=False) + c.close()
    return _by_connection(units(_pcap([(p.ts_ns, p.frame) for p in pk], nanosecond=True), impl))[
        (0, "10.3.0.1", 40100)]


@pytest.mark.parametrize("pattern", ["swap", "reverse3", "overlap", "dup-ahead"])
def test_out_of_order_segments_without_gap(pattern, impl):
    mq = _mq_stream(6)
    c = TcpConversation(("10.3.0.1", 40100), ("10.3.0.2", 1414), mss=200)
    hs = c.handshake()
    data_pk = c.send(0, mq, ack_each=False)
    segs = [p for p in data_pk if p.length]
    rest = [p for p in data_pk if not p.length]
    assert len(segs) >= 6
    frames = [(p.ts_ns, p.frame) for p in segs]
    if pattern == "swap":
        frames[1], frames[2] = frames[2], frames[1]
    elif pattern == "reverse3":
        frames[1:4] = frames[1:4][::-1]
    elif pattern == "overlap":
        frames.insert(1, frames[2])           # segment 2 early, then again in order (retransmitted)
    else:
        frames = frames[:1] + [frames[3], frames[3]] + frames[1:]   # a duplicate of a waiting segment
    tail = c.close()
    allf = [(p.ts_ns, p.frame) for p in hs] + frames + [(p.ts_ns, p.frame) for p in rest + tail]
    u = units(_pcap(allf, nanosecond=True), impl)
    assert tcp_stats(u)["out-of-order segments"] == {"swap": 1, "reverse3": 2, "overlap": 1, "dup-ahead": 2}[pattern]
    assert _by_connection(u)[(0, "10.3.0.1", 40100)] == _in_order_units(mq, impl)


@pytest.mark.parametrize("cover", [1, 2, 3])
@pytest.mark.parametrize("differ", [False, True], ids=["same", "differs"])
def test_retransmission_filling_a_hole_over_waiting_segments(cover, differ, impl):
    """A lost segment retransmitted repacketised: one segment holding it and
    (part of) the ``cover`` segments that arrived after it and wait.  The
    waiting copies are drained after it, the parts they share compared: equal
    bytes give the units sent; a copy that differs is counted as a conflict."""
    from mqcodec.capture.writer import ACK, PSH

    mq = _mq_stream(6)
    c = TcpConversation(("10.3.0.1", 40100), ("10.3.0.2", 1414), mss=200)
    hs = c.handshake()
    segs = [p for p in c.send(0, mq, ack_each=False) if p.length]
    assert len(segs) > 6
    start = 200
    end = 200 * (cover + 1) + 100
    again = bytearray(mq[start:end])
    if differ:
        again[-50] ^= 0xFF           # a byte a waiting copy holds too
    retrans = c._frame(0, segs[1].seq, 0, ACK | PSH, bytes(again))
    order = [segs[0]] + segs[2:5] + [retrans] + segs[5:]
    u = units(_pcap([(p.ts_ns, p.frame) for p in hs + order + c.close()], nanosecond=True), impl)
    stats = tcp_stats(u)
    assert stats["overlapping segments"] >= 1
    assert stats["conflicting overlaps"] == (1 if differ else 0)
    rows = _by_connection(u)[(0, "10.3.0.1", 40100)]
    if not differ:
        assert rows == _in_order_units(mq, impl)
    else:       # the retransmission's bytes were delivered first: the stream is theirs
        assert [r[0] for r in rows] == [r[0] for r in _in_order_units(mq, impl)]


@pytest.mark.parametrize("pattern", ["shifted", "shifted-differs", "same-offset-longer", "same-offset-differs",
                                     "eof", "eof-differs"])
def test_overlapping_waiting_copies(pattern, impl):
    """Out-of-order copies that overlap each other wait together (one entry per
    offset: a longer copy at an offset extends the first, their common bytes
    compared); the drain delivers them in offset order, comparing each with
    what it delivered before.  Copies that differ are counted as conflicts; at
    the end of the capture the waiting copies are drained the same way."""
    from mqcodec.capture.writer import ACK, PSH

    mq = _mq_stream(6)
    c = TcpConversation(("10.3.0.1", 40100), ("10.3.0.2", 1414), mss=200)
    hs = c.handshake()
    segs = [p for p in c.send(0, mq, ack_each=False) if p.length]
    assert len(segs) > 8

    def copy(start, end, differ=False):
        data = bytearray(mq[start:end])
        if differ:
            data[-1] ^= 0xFF
        return c._frame(0, (segs[0].seq + start) & 0xFFFFFFFF, 0, ACK | PSH, bytes(data))

    differ = pattern.endswith("differs")
    if pattern.startswith("shifted"):       # 3 and half of 2 and 4 early, then 2
        early = [segs[3], copy(500, 900, differ)]
        order = segs[:2] + early + segs[2:3] + segs[4:]
    elif pattern.startswith("same-offset"):   # 3 early, then 3 again (longer, or other bytes)
        first = copy(600, 700) if pattern.endswith("longer") else segs[3]
        again = segs[3] if pattern.endswith("longer") else copy(600, 800, True)
        order = segs[:2] + [first, again] + segs[2:3] + segs[4:]
    else:                                   # 2 lost: 3, 4 and a copy across them wait to the end
        order = segs[:2] + [segs[3], segs[4], copy(700, 900, differ)] + segs[5:]
    u = units(_pcap([(p.ts_ns, p.frame) for p in hs + order], nanosecond=True), impl)
    stats = tcp_stats(u)
    assert stats["conflicting overlaps"] == (1 if differ else 0)
    assert stats["out-of-order segments"] >= 2
    rows = _by_connection(u)[(0, "10.3.0.1", 40100)]
    sent = _in_order_units(mq, impl)
    if pattern.startswith("eof"):     # segment 2 (bytes 400-600) never came: the units before it, then an error
        before = [r for r in sent if r[0] + r[2] <= 400]
        assert u.stats["gaps"] == 1 and rows[:len(before)] == before and rows[len(before)][3] is not None
    elif not differ:
        assert rows == sent


def test_out_of_order_hole_never_filled(impl):
    """The hole is declared at the end of the capture; the framer, left with
    part of a unit, reports a FramingError at its close."""
    mq = _mq_stream(6)
    c = TcpConversation(("10.3.0.1", 40100), ("10.3.0.2", 1414), mss=200)
    pk = c.handshake() + [p for p in c.send(0, mq, ack_each=False) if p.length]
    del pk[5]
    u = units(_pcap([(p.ts_ns, p.frame) for p in pk], nanosecond=True), impl)
    rows = u.rows[(0, "10.3.0.1", 40100)]
    assert rows[-1].kind == "framing error" and u.stats["framing errors"] == 1
    sent = _in_order_units(mq, impl)
    before = [r for r in sent if r[0] + r[2] <= 200 * 2]       # units wholly in the first two segments
    assert _by_connection(u)[(0, "10.3.0.1", 40100)][:len(before)] == before


@pytest.mark.parametrize("order", ["in-order", "early", "early-twice"])
@pytest.mark.parametrize("cut", [0, 20, 150])
@pytest.mark.parametrize("port", [1414, 1801])
def test_snap_length_cut_segment(cut, port, order, impl):
    """A data segment captured in part (caplen < origlen): the captured bytes,
    then a gap of the bytes cut, which the framers follow.  Out of order
    ("early": it arrives before the segment ahead of it; "early-twice": and
    again, cut the same way) the same."""
    from mqcodec.msmq import builders as MB

    payload = _mq_stream(6) if port == 1414 else MB.simulate_session(3, messages=6).initiator
    c = TcpConversation(("10.3.0.1", 40103), ("10.3.0.2", port), mss=200)
    pk = c.handshake() + [p for p in c.send(0, payload, ack_each=False) if p.length] + c.close()
    frames = [(p.ts_ns, p.frame) for p in pk]
    victim = 6
    ts, frame = frames[victim]
    frames[victim] = (ts, frame[:54 + cut], len(frame))   # Ethernet + IPv4 + TCP headers, then `cut` bytes
    if order != "in-order":
        frames[victim - 1], frames[victim] = frames[victim], frames[victim - 1]
        if order == "early-twice":
            frames.insert(victim, frames[victim - 1])     # the same cut copy, still early
    u = units(_pcap(frames, nanosecond=True), impl)
    assert u.stats["gaps"] == 1 and u.stats["gap bytes"] == 200 - cut
    assert tcp_stats(u)["out-of-order segments"] == (0 if order == "in-order" else 1 if order == "early" else 2)
    assert u.stats["framing errors"] >= 1
    hole = (victim - 3) * 200 + cut        # the stream offset where the bytes cut begin
    rows = u.rows[(0, "10.3.0.1", 40103)]
    assert all(r.error is None for r in rows if r.offset + (r.length or 0) <= hole - 200)


@pytest.mark.parametrize("mtu", [60, 300])
def test_fragmented_tcp_segment(mtu, impl):
    """A data segment cut into IPv4 fragments: reassembled, the units of the
    capture without fragments, the segment's units numbered with its last
    fragment's frame (more cases in tests/test_capture_fragments.py)."""
    from mqcodec.capture.writer import fragment_ipv4

    pk = _sim_packets(2, 10)
    data_idx = [i for i, p in enumerate(pk) if p.length > 40 and _tuple(p.frame) is not None]
    victim = data_idx[3]
    frames = []
    for i, p in enumerate(pk):
        if i == victim:
            frames += [(p.ts_ns + k, ethernet(f)) for k, f in enumerate(fragment_ipv4(_ip_of(p.frame), mtu))]
        else:
            frames.append((p.ts_ns, p.frame))
    u = units(_pcap(frames, nanosecond=True), impl)
    clean = units(_pcap([(p.ts_ns, p.frame) for p in pk], nanosecond=True), impl)
    assert _by_connection(u) == _by_connection(clean)
    nfrag = len(fragment_ipv4(_ip_of(pk[victim].frame), mtu))
    assert nfrag > 1
    moved = {victim + 1: victim + nfrag}      # the victim's units: its last fragment's frame
    shift = nfrag - 1
    assert {k: [(r.offset, r.frame) for r in v] for k, v in u.rows.items()} == {
        k: [(r.offset, moved.get(r.frame, r.frame + shift if r.frame > victim + 1 else r.frame)) for r in v]
        for k, v in clean.rows.items()}


@pytest.mark.parametrize("limit", [3, 12])
def test_eviction_past_max_connections(limit, impl):
    """More connections open at once than ``max_connections``: the least
    recently active tenth (at least one, never the one just opened) is closed:
    holes and unacknowledged ends declared lost, the framers closed; the
    evicted connections' later segments are segments after close."""
    mq = _mq_stream(4)
    rnd = random.Random(limit)
    firsts, rests = [], []
    for k in range(25):
        c = TcpConversation(("10.8.%d.1" % k, 41000 + k), ("10.8.0.2", 1414), mss=200,
                            start_ns=1_700_000_000_000_000_000 + k * 1000)
        hs = c.handshake()
        body = c.send(0, mq, ack_each=False)
        cut = rnd.randrange(1, len(body))
        firsts.append(hs + body[:cut])
        rests.append(body[cut:] + c.close())
    frames = []
    for k, f in enumerate(firsts):
        frames += f
        if k >= 2 and rnd.random() < 0.5:      # an older connection active again
            frames.append(rnd.choice(firsts[:k])[1])
    order = list(range(len(rests)))
    rnd.shuffle(order)
    for k in order:
        frames += rests[k]
    u = units(_pcap([(p.ts_ns, p.frame) for p in frames], nanosecond=True), impl, max_connections=limit)
    stats = tcp_stats(u)
    assert stats["evicted connections"] > 0 and stats["segments after close"] > 0
    assert u.errors() > 0          # a unit cut by the eviction
    assert sorted({k[0] for k in u.rows}) == list(range(25))


def test_many_connections_and_late_retransmissions(impl):
    """2,300 short connections, then late retransmissions of every hundredth:
    new streams exactly when the closed map (max_closed=100) has forgotten
    their 4-tuples, in the order they were opened."""
    pkts, late, tuples = [], [], []
    for k in range(2300):
        client = ("10.4.%d.%d" % (k // 250, k % 250 + 1), 30000 + k % 7)
        c = TcpConversation(client, ("10.5.0.1", 9999), start_ns=1_700_000_000_000_000_000 + k * 100_000)
        conv = c.handshake() + c.send(0, b"x" * (k % 13 + 1)) + c.close()
        pkts += conv
        tuples.append(client)
        if k % 100 == 0:
            late.append(([p for p in conv if p.length][0], client))
    t = 1_800_000_000_000_000_000
    frames = [(p.ts_ns, p.frame) for p in pkts] + [(t + i, p.frame) for i, (p, _) in enumerate(late)]
    data = _pcap(frames, nanosecond=True)
    opened = _opened(_events(data, impl, max_closed=100))
    # the last 100 connections are remembered (2200 and on): their late segments are ignored
    assert [(o[1], o[2]) for o in opened] == tuples + [client for _, client in late[:-1]]
    assert units(data, impl).stats["bytes in streams of no known protocol"] == sum(k % 13 + 1 for k in range(2300))


def test_stream_events_keep_nothing_of_connections_closed_and_forgotten(impl):
    """Stage (b) over 3,000 short connections, one after another, closed map of
    16: what iterating keeps (Python objects, traced) does not grow from the
    1,000th connection's events to the 2,999th's -- neither the pure reassembler
    nor the compiled core's events hold anything of a connection closed in both
    directions and forgotten."""
    import tracemalloc

    frames = []
    for k in range(3000):
        c = TcpConversation(("10.8.%d.%d" % (k // 250, k % 250 + 1), 31000 + k % 11), ("10.8.99.1", 9999),
                            start_ns=1_700_000_000_000_000_000 + k * 100_000)
        frames += [(p.ts_ns, p.frame) for p in c.handshake() + c.send(0, b"y" * 20) + c.send(1, b"z" * 9) + c.close()]
    data = _pcap(frames, nanosecond=True)
    source = io.BytesIO(data) if impl == "py" else UnseekableFile(data, sizes=[4096])
    traced = {}
    tracemalloc.start()
    try:
        for ev in iter_stream_events(source, impl=impl, max_closed=16):
            if type(ev).__name__ == "StreamOpened" and ev.conn.stream in (1000, 2999):
                traced[ev.conn.stream] = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert sorted(traced) == [1000, 2999]
    assert traced[2999] - traced[1000] < 64 << 10, traced   # (a ConnKey kept for each: 760 KiB)


# --------------------------------------------------------------------------- damaged connections and their 4-tuples
@pytest.mark.parametrize("end", ["rst", "fin"])
def test_new_connection_after_a_damaged_connection_on_the_same_tuple(end, impl):
    """A damaged connection (a lost segment, more open units than the framer
    keeps) ends with a RST or FINs; a new connection on its 4-tuple gives the
    units of the same bytes sent on a clean one."""
    mq = _mq_stream(6)
    a = TcpConversation(("10.6.0.1", 40200), ("10.6.0.2", 1414), isn_client=1000, mss=300)
    pa = a.handshake() + a.send(0, mq + MANY_OPEN_UNITS)
    del pa[5]                                            # a lost data segment
    pa += a.reset(0) if end == "rst" else a.close()
    b = TcpConversation(("10.6.0.1", 40200), ("10.6.0.2", 1414), isn_client=7_000_000,
                        start_ns=1_700_000_100_000_000_000)
    pb = b.handshake() + b.send(0, mq) + b.close()
    u = units(_pcap([(p.ts_ns, p.frame) for p in pa + pb], nanosecond=True), impl)
    alone = units(_pcap([(p.ts_ns, p.frame) for p in pb], nanosecond=True), impl)
    assert {k[0] for k in u.rows} == {0, 1}
    assert any(r.error for r in u.rows[(0, "10.6.0.1", 40200)])    # the hole, the dropped unit
    assert _by_connection(u)[(1, "10.6.0.1", 40200)] == _by_connection(alone)[(0, "10.6.0.1", 40200)]


def test_syn_with_the_same_isn_after_a_closed_damaged_connection_opens_a_new_stream(impl):
    mq = _mq_stream(6)
    a = TcpConversation(("10.6.0.1", 40201), ("10.6.0.2", 1414), isn_client=1000, mss=300)
    hs = a.handshake()
    pa = hs + a.send(0, mq + MANY_OPEN_UNITS)
    del pa[5]
    pa += a.close()
    opened = _opened(_events(_pcap([(p.ts_ns, p.frame) for p in pa + [hs[0]]], nanosecond=True), impl))
    assert [o[0] for o in opened] == [0, 1] and opened[0][1:] == opened[1][1:]


def reuse_capture(variant: str = "once", garbage_first: bool = True):
    """An MQ connection A holding out-of-order data (its second message lost;
    the server sends bytes that are not TSH, first or last) when a SYN with
    another ISN reuses its 4-tuple: the pure reassembler closes A at that SYN,
    flushing its reorder buffer (a Gap, then the held messages).  The new
    connection B is clean (``once``), or damaged itself (``damaged``: a lost
    segment, more open units than the framer keeps), or clean and closed, then
    a third one C on the same 4-tuple with B's ISN is damaged (``third``).
    Returns (capture, number of the reusing SYN's frame)."""
    parts = [_mq_stream(k) for k in range(1, 6)]
    msgs = [parts[0]] + [parts[k][len(parts[k - 1]):] for k in range(1, 5)]
    garbage = MANY_OPEN_UNITS
    a = TcpConversation(("10.1.0.1", 40001), ("10.1.0.2", 1414), isn_client=1000, isn_server=3000, mss=65000,
                        start_ns=1_700_000_000_000_000_000)
    pkts = a.handshake()
    if garbage_first:
        pkts += a.send(1, garbage, ack_each=False)
    segs = [a.send(0, m, ack_each=False) for m in msgs]
    del segs[1]                                  # lost: the rest waits in the reorder buffer
    pkts += [f for s in segs for f in s]
    if not garbage_first:
        pkts += a.send(1, garbage, ack_each=False)
    syn = len(pkts) + 1
    for k, isn in enumerate((900000, 900000) if variant == "third" else (900000,)):
        lossy = (variant == "damaged" and k == 0) or k == 1
        c = TcpConversation(("10.1.0.1", 40001), ("10.1.0.2", 1414), isn_client=isn, isn_server=3 * isn,
                            mss=300 if lossy else 1460, start_ns=1_700_000_001_000_000_000 + k * 10**9)
        hs, body = c.handshake(), c.send(0, b"".join(msgs) + (MANY_OPEN_UNITS if lossy else b""))
        if lossy:
            del body[4]                          # a lost data segment
        pkts += hs + body + c.close()
    data = _pcap([(p.ts_ns, p.frame) for p in pkts], nanosecond=True)
    return data, syn


@pytest.mark.parametrize("variant", ["once", "damaged", "third"])
@pytest.mark.parametrize("garbage_first", [True, False])
def test_syn_reusing_a_damaged_connections_tuple_closes_it(variant, garbage_first, impl):
    """The reusing SYN closes the old connection, its reorder buffer flushed: a
    gap, then the messages held behind it."""
    data, syn = reuse_capture(variant, garbage_first)
    u = units(data, impl)
    assert {k[0] for k in u.rows} == ({0, 1, 2} if variant == "third" else {0, 1})
    old = u.rows[(0, "10.1.0.1", 40001)]
    held = [r for r in old if r.error is None and r.kind == "MQPUT"]
    assert len(held) == 4 and all(r.frame < syn for r in old)     # the first, then the 3 held behind the hole


def test_connection_after_a_reset_one_on_a_forgotten_tuple(impl):
    """A damaged connection ends with a RST; the closed map (max_closed=2) then
    forgets its 4-tuple, and a later connection on it starts without a SYN
    (data only): opened as a new stream."""
    mq = _mq_stream(6)
    a = TcpConversation(("10.7.0.1", 40300), ("10.7.0.2", 1414), isn_client=1000, mss=300)
    pa = a.handshake() + a.send(0, mq + MANY_OPEN_UNITS)
    del pa[5]                                            # a lost data segment
    pa += a.reset(0)
    fill = []
    for k in range(4):
        f = TcpConversation(("10.7.1.%d" % (k + 1), 40400), ("10.7.0.2", 1414), start_ns=1_700_000_050_000_000_000 + k)
        fill += f.handshake() + f.send(0, mq) + f.close()
    c = TcpConversation(("10.7.0.1", 40300), ("10.7.0.2", 1414), isn_client=5_000_000, mss=300,
                        start_ns=1_700_000_100_000_000_000)
    pc = c.send(0, mq + MANY_OPEN_UNITS)                 # no handshake: the start was not captured
    del pc[4]                                            # a lost data segment
    events = _events(_pcap([(p.ts_ns, p.frame) for p in pa + fill + pc], nanosecond=True), impl, max_closed=2)
    opened = _opened(events)
    assert [o[0] for o in opened] == [0, 1, 2, 3, 4, 5]
    assert opened[5][1:] == opened[0][1:]
    assert [e[0] for e in events if e[1] == 5 and e[0] == "Gap"]     # its lost segment


_SMALL = {}


def _small_packets():
    if "p" not in _SMALL:
        mq = _mq_stream(6)
        pk = []
        for k, port in enumerate((1414, 5000)):
            c = TcpConversation(("10.7.0.1", 40300 + k), ("10.7.0.2", port), mss=150,
                                start_ns=1_700_000_000_000_000_000 + k * 10**6)
            pk += c.handshake() + c.send(0, mq, ack_each=k == 0) + c.send(1, mq, ack_each=False) + c.close()
        pk.sort(key=lambda p: p.ts_ns)
        _SMALL["p"] = pk
    return _SMALL["p"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(st.sampled_from(["drop", "dup", "swap", "move"]), st.integers(0, 10**6),
                              st.integers(1, 6)), max_size=4))
def test_random_damage(impl, ops):
    """Random drops, duplicates, swaps and moves of frames: read in pieces, the
    same units; with frames only duplicated, the units sent (a frame moved
    after the other side's ACK of it is a gap)."""
    frames = [(p.ts_ns, p.frame) for p in _small_packets()]
    for op, i, k in ops:
        i %= len(frames)
        j = min(i + k, len(frames) - 1)
        if op == "drop":
            del frames[i]
        elif op == "dup":
            frames.insert(j, frames[i])
        elif op == "swap":
            frames[i], frames[j] = frames[j], frames[i]
        else:
            frames.insert(j, frames.pop(i))
    data = _pcap(frames, nanosecond=True)
    u = units(data, impl)
    assert units(data, impl, sizes=[777]) == u
    if all(op == "dup" for op, _, _ in ops):
        if "units" not in _SMALL:
            _SMALL["units"] = _by_connection(units(_pcap([(p.ts_ns, p.frame) for p in _small_packets()],
                                                         nanosecond=True), "py"))
        assert _by_connection(u) == _SMALL["units"]


def test_reorder_buffer_overflow(impl):
    """More segments waiting than ``max_reassembly_segments``: the oldest waiting
    ones are given up, a gap declared where they were; with room for them, the
    stream comes whole."""
    mq = _mq_stream(6)
    c = TcpConversation(("10.3.0.1", 40102), ("10.3.0.2", 1414), mss=200)
    hs = c.handshake()
    segs = [p for p in c.send(0, mq, ack_each=False) if p.length]
    order = [segs[0]] + segs[1:6][::-1] + segs[6:]
    data = _pcap([(p.ts_ns, p.frame) for p in hs + order + c.close()], nanosecond=True)
    roomy = _events(data, impl, max_reassembly_segments=4096)
    assert b"".join(e[4] for e in roomy if e[0] == "StreamData" and e[2] == 0) == mq
    assert not [e for e in roomy if e[0] == "Gap"]
    tight = _events(data, impl, max_reassembly_segments=2)
    gaps = [e for e in tight if e[0] == "Gap"]
    assert gaps and all(e[2] == 0 for e in gaps)
    # through the conversion's options: the same limit, in bytes too (the five waiting segments
    # hold 1,000 bytes), turns the whole stream's units into ones cut by a gap
    whole = units(data, impl)
    assert not whole.stats.get("gaps") and not any(r.error for rows in whole.rows.values() for r in rows)
    for limit in ({"max_reassembly_segments": 2}, {"max_reassembly_bytes": 400}):
        cut = units(data, impl, **limit)
        assert cut.stats.get("gaps", 0) >= 1, limit
        assert cut.rows != whole.rows, limit


# --------------------------------------------------------------------------- gzip read in pieces
def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, mtime=0)


def test_gzip_read_in_short_pieces(sim, impl):
    """A gzip capture whose reads come a byte (then 3, then 700) at a time: the
    magic is found across reads, the units are the plain capture's."""
    gz = _gzip(sim[:60000])
    assert units(gz, impl, sizes=[1, 3, 700]).shared() == units(sim[:60000], impl).shared()


def _zlib_fails_at(gz: bytes):
    """(decompressed bytes before the failure, offset of the byte zlib fails on),
    zlib fed the deflate data a byte at a time; None if it does not fail."""
    import zlib

    d, plain = zlib.decompressobj(-zlib.MAX_WBITS), bytearray()
    for i in range(10, len(gz) - 8):
        try:
            plain += d.decompress(gz[i:i + 1])
        except zlib.error:
            return bytes(plain), i
    return None


@pytest.mark.parametrize("start", [0.2, 0.8])
def test_corrupt_deflate_data_ends_the_capture_where_zlib_fails(sim, impl, start):
    """A byte of the deflate data damaged (the first from ``start`` of the file on whose damage
    zlib detects): the frames wholly decompressed before the byte zlib fails
    on are converted (zlib itself, fed a byte at a time, says where), the file
    error names that byte, whatever the reads."""
    import zlib

    clean = _gzip(sim)
    for pos in range(int(len(clean) * start), len(clean) - 8):
        gz = clean[:pos] + bytes([clean[pos] ^ 0x80]) + clean[pos + 1:]
        try:
            zlib.decompressobj(-zlib.MAX_WBITS).decompress(gz[10:])
        except zlib.error:
            break
    plain, failed = _zlib_fails_at(gz)
    whole = len(record_times(plain))
    u = units(gz, impl)
    assert u.report["stats"]["frames"] == whole > 0
    assert "offset %d:" % failed in u.report["file_error"]
    for sizes in ([1], [4093], [65536 + 7]):
        assert units(gz, impl, sizes=sizes).shared() == u.shared()
