"""The compiled capture core (_ext/capture_core.pyx) against the pure pipeline.

Reference, from outside the code under test: the pure converter itself
(``mqcodec.convert.Converter`` over ``mqcodec.capture`` and the pure
framers), whose pending rows are captured before decoding.  For every
connection the core's messages per direction must equal the pure rows (start
offset, bytes, kind, md-only, frame, ts), whatever the damage (dropped,
duplicated, reordered segments, differing copies, cut files: the core follows
every connection itself, or stops at the record the pure parser stops at).
Frame numbering and timestamps of deferred frames are checked against the
pure reader; any chunking gives the same output.
"""
from __future__ import annotations

import bisect
import io
import os
import random
import socket
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcodec import synth
from mqcodec.capture import CaptureProcessor, open_capture
from mqcodec.capture.reader import CaptureParser
from mqcodec.capture.writer import PcapngWriter, PcapWriter, TcpConversation, ethernet, null_loopback, sll, sll2
from mqcodec.capture.tcp import Gap, StreamClosed, StreamData
from mqcodec.convert.keys import marks_to_drop
from mqcodec.ibmmq.builders import build_tsh
from mqcodec.ibmmq.framing import MQStreamFramer
from mqcodec.msmq.framing import MSMQStreamFramer

core_mod = pytest.importorskip("mqcodec._ext.capture_core")
CaptureCore = core_mod.CaptureCore
MQ_KIND_NAMES = core_mod.MQ_KIND_NAMES
assert core_mod.MQ_ERROR_KIND == len(MQ_KIND_NAMES) + 1
MSMQ_KIND_NAMES = core_mod.MSMQ_KIND_NAMES
assert core_mod.MSMQ_CLASSIFY_KIND == len(MSMQ_KIND_NAMES) and core_mod.MSMQ_ERROR_KIND == len(MSMQ_KIND_NAMES) + 1

CAPTURE = "/work/shared/captures/ibmmq_jms_client_1414.pcap"
if not os.path.exists(CAPTURE):
    CAPTURE = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "captures", "ibmmq_jms_client_1414.pcap")


# --------------------------------------------------------------------------- reference
from mqcodec.convert.protocols import detect_protocol as _detect  # the converter's content detection


class _Dir:
    """One direction as the pure converter drives it: framer, marks (offset, frame, ts)."""

    def __init__(self, conn, d, mq_ports, msmq_ports):
        self.src, self.sport = (conn.client, conn.client_port) if d == 0 else (conn.server, conn.server_port)
        self.stream = conn.stream
        self.protocol = self.framer = None
        self.marks = []
        if conn.server_port in mq_ports or conn.client_port in mq_ports:
            self.start("mq")
        elif conn.server_port in msmq_ports or conn.client_port in msmq_ports:
            self.start("msmq")

    def start(self, protocol, offset=0):
        self.protocol = protocol
        self.framer = MQStreamFramer(offset) if protocol == "mq" else MSMQStreamFramer(offset=offset)

    def locate(self, offset):
        marks = self.marks
        i = bisect.bisect_right([m[0] for m in marks], offset) - 1
        if i < 0:
            return None, None
        _, frame, ts = marks[i]
        oldest = getattr(self.framer, "oldest_open", None)   # keys.marks_to_drop
        j = i if oldest is None or oldest >= offset else bisect.bisect_right([m[0] for m in marks], oldest) - 1
        drop = marks_to_drop(i, j)
        if drop:
            del marks[:drop]
        return frame, ts


def pure_rows(data, mq_ports=(1414,), msmq_ports=(1801,), detect_by_content=True, frames=None, stats=None, tcp_options=None,
              proc=None, eof_data=True) -> list:
    """The pure pipeline's TCP message rows, in emission order:
    (tcp_stream, src_ip, src_port, start, bytes, kind, md_only, frame, ts, error).
    ``proc``: the processor to use (default a new ``CaptureProcessor``).
    ``eof_data=False``: as the converter, at the end of the capture only the
    framers' close is run (the data and gaps a reorder buffer flushes then make
    no rows: pcap2parquet ``gaps_only``)."""
    if proc is None:
        proc = CaptureProcessor(**(tcp_options or {}))
    dirs = {}
    rows = []

    def drain(d):
        for ev in d.framer:
            name = type(ev).__name__
            if name in ("Message", "Packet"):
                start = getattr(ev, "offset", None)
                if start is None:
                    start = ev.offset
                body = ev.data
                md = getattr(ev, "md_length", None)
                frame, ts = d.locate(start)
                rows.append((d.stream, d.src, d.sport, start, bytes(body), str(ev.kind),
                             md is not None and len(body) == md, frame, ts, None))
            elif name == "FramingError":
                frame, ts = d.locate(ev.offset if ev.offset is not None else 0)
                rows.append((d.stream, d.src, d.sport, ev.offset, bytes(ev.raw or b""), "framing error", False,
                             frame, ts, "error"))

    def get(conn, direction):
        d = dirs.get((conn, direction))
        if d is None:
            d = dirs[(conn, direction)] = _Dir(conn, direction, mq_ports, msmq_ports)
        return d

    def handle(ev):
        t = type(ev)
        if t is StreamData:
            d = get(ev.conn, ev.direction)
            if d.protocol is None:
                p = _detect(ev.data) if detect_by_content else None
                if p is None:
                    if stats is not None:
                        stats["undetected"] = stats.get("undetected", 0) + len(ev.data)
                    return
                d.start(p, ev.offset)   # Converter._start: from the first recognised byte
            d.marks.append((ev.offset, ev.frame_number, ev.ts_ns))
            d.framer.feed(ev.data)
            drain(d)
        elif t is Gap:
            d = get(ev.conn, ev.direction)
            if d.framer is not None:
                d.marks.append((ev.offset, ev.frame_number, ev.ts_ns))
                d.framer.gap(ev.length)
                drain(d)
        elif t is StreamClosed:
            d = dirs.pop((ev.conn, ev.direction), None)
            if d is not None and d.framer is not None:
                d.framer.close()
                drain(d)

    for frame in (open_capture(io.BytesIO(data)) if frames is None else frames):
        for ev in proc.feed(frame):
            handle(ev)
    for ev in proc.close():
        if eof_data or type(ev) is StreamClosed:
            handle(ev)
    return rows


def pure_messages(data: bytes, **options) -> dict:
    """{(tcp_stream, src_ip, src_port): [(start, bytes, kind, md_only, frame, ts, error)]}"""
    out: dict = {}
    for r in pure_rows(data, **options):
        out.setdefault(r[:3], []).append(r[3:])
    return out


def run_core(data: bytes, chunks=None, **options):
    """Feed ``data`` (in the given chunk sizes, else at once); (core, messages, deferred)."""
    core = CaptureCore(**options)
    batches = []
    pos = 0
    sizes = chunks or [len(data)]
    i = 0
    while pos < len(data):
        n = sizes[i % len(sizes)]
        core.feed(data[pos:pos + n])
        pos += n
        i += 1
        batches.append(core.take())
    core.finish()
    batches.append(core.take())
    msgs: dict = {}
    deferred = []
    for b in batches:
        deferred += b["deferred"]
        offs = b["offsets"]
        for j in range(len(b["seq"])):
            cip, cport, sip, sport, stream = core.connection(int(b["conn"][j]))
            assert stream == b["tcp_stream"][j]
            src, sport_ = (cip, cport) if b["direction"][j] == 0 else (sip, sport)
            # IBM MQ record kinds: the messages', then MQ_UNIT_KIND and MQ_ERROR_KIND (a FramingError)
            # (MSMQ: the packet kinds, MSMQ_CLASSIFY_KIND, MSMQ_ERROR_KIND)
            names = (MQ_KIND_NAMES + ["unit", "framing error"] if b["protocol"][j] == 0
                     else MSMQ_KIND_NAMES + ["classify", "framing error"])
            frame = int(b["frame"][j])
            ts = int(b["ts_ns"][j])
            kind = names[b["kind"][j]]
            raw = b["data"][offs[j]:offs[j + 1]]
            if kind == "classify":   # as the compiled driver does: the pure classification
                kind = core_mod.msmq_classify(raw)
            msgs.setdefault((int(stream), src, sport_), []).append(
                (int(b["stream_offset"][j]), raw, kind,
                 bool(b["md_only"][j]), None if frame < 0 else frame, None if frame < 0 else ts,
                 "error" if kind == "framing error" else None, int(b["seq"][j])))
    return core, msgs, deferred


#: TCPReassembler.stats the core counts as the pure reassembler does
TCP_STATS = ("retransmitted segments", "overlapping segments", "out-of-order segments",
             "overlapping bytes not compared", "conflicting overlaps")


def check_against_pure(data: bytes, chunks=None, **options):
    """The core's contract on one capture; returns (core, pure, msgs) for more checks.
    The reference is the converter's: what a reorder buffer flushes at the end
    of the capture makes no rows (``eof_data=False``)."""
    proc = CaptureProcessor()
    pure = pure_messages(data, eof_data=False, proc=proc)
    core, msgs, deferred = run_core(data, chunks, **options)
    assert core.supported, core.unsupported_reason
    if not options:
        # the reassembler's counts
        for k in TCP_STATS:
            assert core.stats[k] == proc.tcp.stats[k], k
    # global emission order is strictly increasing
    seqs = sorted(m[-1] for v in msgs.values() for m in v)
    assert seqs == list(range(len(seqs)))
    for key, got in msgs.items():
        assert [m[:-1] for m in got] == pure.get(key, []), key
    for key, ref in pure.items():
        assert [m[:-1] for m in msgs.get(key, [])] == ref, key
    # emission order across directions follows the pure converter's row order
    return core, pure, msgs, deferred


def _frames_pure(data: bytes):
    return list(open_capture(io.BytesIO(data)))


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


# --------------------------------------------------------------------------- clean captures
def test_real_capture_matches_pure(real):
    core, pure, msgs, deferred = check_against_pure(real)
    n = sum(len(v) for v in msgs.values())
    assert n > 0
    # deferred frames are the pure reader's frames that are not TCP, same numbers and times
    frames = {f.number: f for f in _frames_pure(real)}
    for f in deferred:
        assert frames[f.number] == f


@pytest.mark.parametrize("seed", [1, 2, 3, 7])
def test_simulator_matches_pure(seed):
    data = _synth(seed, 40)
    core, pure, msgs, deferred = check_against_pure(data)
    # on clean simulator captures the fast path carries the messages
    assert sum(len(v) for v in msgs.values()) > 0


def test_emission_order_is_pure_row_order(sim):
    rows = pure_rows(sim)
    core, msgs, _ = run_core(sim)
    ref = [r[:4] for r in rows]
    got = sorted(((k[0], k[1], k[2], m[0], m[-1]) for k, v in msgs.items() for m in v), key=lambda t: t[4])
    assert [g[:4] for g in got] == ref


def test_deferred_frames_equal_pure_reader(sim):
    core, msgs, deferred = run_core(sim)
    frames = _frames_pure(sim)
    by_number = {f.number: f for f in frames}
    assert deferred and all(by_number[f.number] == f for f in deferred)
    # every frame is either deferred or a TCP segment the core handled
    st_ = core.stats
    assert st_["frames"] == len(frames)
    assert st_["frames deferred"] == len(deferred)
    assert st_["frames deferred"] + st_["tcp segments"] == len(frames)


# --------------------------------------------------------------------------- chunking
def _canon(data, chunks):
    core, msgs, deferred = run_core(data, chunks)
    return ({k: [m[:-1] for m in v] for k, v in msgs.items()}, [tuple(f) for f in deferred], core.stats,
            core.stop)


def test_one_byte_chunks(real):
    part = real[:60000]
    assert _canon(part, [1]) == _canon(part, None)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(1, 5000), min_size=1, max_size=8))
def test_random_chunkings(sim, sizes):
    assert _canon(sim, sizes) == _canon(sim, None)


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
def test_link_layers_and_ipv6(link, v6):
    linktype, wrap = LINKS[link]
    if link == "ipv4" and v6:
        linktype = 229
    pk = _sim_packets()
    frames = []
    for p in pk:
        ip = _ip_of(p.frame)
        frames.append((p.ts_ns, wrap(_to_v6(ip) if v6 else ip)))
    data = _pcap(frames, linktype=linktype, nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)
    assert sum(len(v) for v in msgs.values()) > 0
    assert core.linktype == linktype


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("ns", [False, True])
def test_byte_orders_and_resolutions(order, ns):
    pk = _sim_packets(3, 10)
    data = _pcap([(p.ts_ns + 123, p.frame) for p in pk], byte_order=order, nanosecond=ns)
    core, pure, msgs, deferred = check_against_pure(data)
    frames = _frames_pure(data)
    assert core.stats["frames"] == len(frames)
    by_number = {f.number: f for f in frames}
    assert all(by_number[f.number] == f for f in deferred)
    # the timestamps the core gives messages are the reader's
    ts = {f.number: f.ts_ns for f in frames}
    assert all(m[5] == ts[m[4]] for v in msgs.values() for m in v)


def test_ipv6_extension_headers_and_fragments_follow_pure():
    pk = _sim_packets(2, 10)
    frames = []
    for i, p in enumerate(pk):
        ip6 = _to_v6(_ip_of(p.frame))
        nh = ip6[6]
        if i % 3 == 0:   # a Destination Options header (8 bytes) before the transport header
            ext = bytes([nh, 0]) + b"\x01\x04\0\0\0\0"
            ip6 = ip6[:4] + struct.pack("!H", len(ip6) - 40 + 8) + bytes([60]) + ip6[7:40] + ext + ip6[40:]
        frames.append((p.ts_ns, ethernet(ip6)))
    data = _pcap(frames, nanosecond=True)
    check_against_pure(data)


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
def test_pcapng_matches_pure(order):
    """Two sections, interfaces of several link types and timestamp resolutions, SPB,
    custom and unknown blocks: messages as the pure pipeline, frames as the pure reader."""
    pk = _sim_packets(2, 12)
    out = [_ng_shb(order), _ng_idb(order, 1, tsresol=9), _ng_idb(order, 113, tsresol=6, tsoffset=3),
           _ng_idb(order, 1, tsresol=0x80 | 30)]
    half = len(pk) // 2
    for i, p in enumerate(pk[:half]):
        if i % 3 == 1:
            out.append(_ng_epb(order, 1, p.ts_ns // 1000, sll(_ip_of(p.frame))))
        elif i % 7 == 5:
            out.append(_ng_epb(order, 2, (p.ts_ns << 30) // 10**9, p.frame))
        else:
            out.append(_ng_epb(order, 0, p.ts_ns, p.frame))
        if i == 3:
            out.append(_ng_block(order, 0xBAD, b"\0\0\0\0custom"))   # numbered as a frame by tshark
            out.append(_ng_block(order, 0x1234, b"unknown"))
            out.append(_ng_block(order, 3, struct.pack(order + "I", 60) + b"\xff" * 60))   # SPB (broadcast junk)
    other = ">" if order == "<" else "<"
    out += [_ng_shb(other), _ng_idb(other, 1, tsresol=9)]
    out += [_ng_epb(other, 0, p.ts_ns, p.frame) for p in pk[half:]]
    data = b"".join(out)
    core, pure, msgs, deferred = check_against_pure(data)
    assert core.format == "pcapng"
    assert sum(len(v) for v in msgs.values()) > 0
    frames = _frames_pure(data)
    by_number = {f.number: f for f in frames}
    assert deferred and all(by_number[f.number] == f for f in deferred)
    assert core.stats["frames"] == len(frames)
    ts = {f.number: f.ts_ns for f in frames}
    assert all(m[5] == ts[m[4]] for v in msgs.values() for m in v)
    assert _canon(data, [1]) == _canon(data, None)


def test_pcapng_cut_and_damaged():
    f = io.BytesIO()
    w = PcapngWriter(f)
    w.add_interface(1)
    pk = _sim_packets(2, 4)
    for p in pk:
        w.write(0, p.ts_ns, p.frame)
    data = f.getvalue()
    rnd = random.Random(5)
    for n in sorted(rnd.sample(range(30, len(data)), 15)) + [len(data)]:
        part = data[:n]
        core, pure, msgs, deferred = check_against_pure(part)
        reader = open_capture(io.BytesIO(part))
        frames = list(reader)
        assert core.stats["frames"] == len(frames)
        if reader.truncation is None:
            assert core.stop is None
        else:
            assert core.stop[1] == len(frames) + 1
            assert core.stop[0] <= reader.truncation.offset <= core.stop[0] + 8
    # a block length that is not a multiple of 4, in the middle: stop where the pure parser raises
    blocks, pos = [], 0
    while pos < len(data):
        blen = struct.unpack_from("<I", data, pos + 4)[0]
        blocks.append(pos)
        pos += blen
    bad = bytearray(data)
    at = blocks[len(blocks) // 2]
    struct.pack_into("<I", bad, at + 4, 0x1001)
    core, msgs, _ = run_core(bytes(bad))
    assert core.stop is not None and core.stop[0] == at
    with pytest.raises(Exception) as ei:
        list(open_capture(io.BytesIO(bytes(bad))))
    assert ei.value.offset == at + 4


@pytest.mark.parametrize("head", [b"\x00\x01\x02\x03", b"\xd4\xc3\xb2\xa1\x03\x00" + b"\0" * 18])
def test_bad_file_header_is_unsupported(head):
    core = CaptureCore()
    core.feed(head)
    core.finish()
    assert core.supported is False


# --------------------------------------------------------------------------- cut and damaged files
def _records(pk):
    """(offset, number) of each record of _pcap(pk), from the sizes we wrote."""
    out, off = [], 24
    for i, p in enumerate(pk):
        out.append((off, i + 1))
        off += 16 + len(p.frame)
    return out, off


@pytest.mark.parametrize("seed", range(12))
def test_cut_file_stops_where_the_pure_reader_stops(seed):
    pk = _sim_packets(4, 8)
    data = _pcap([(p.ts_ns, p.frame) for p in pk], nanosecond=True)
    recs, total = _records(pk)
    n = random.Random(seed).randrange(24, len(data))
    part = data[:n]
    core, pure, msgs, deferred = check_against_pure(part)
    whole = [r for r in recs if r[0] + 16 + len(pk[r[1] - 1].frame) <= n]
    ends_clean = n == 24 or (whole and whole[-1][0] + 16 + len(pk[whole[-1][1] - 1].frame) == n)
    assert core.stats["frames"] == len(whole)
    if ends_clean:
        assert core.stop is None
    else:
        assert core.stop == recs[len(whole)]
        # the pure reader reports the truncation at that record
        reader = open_capture(io.BytesIO(part))
        assert len(list(reader)) == len(whole) and reader.truncation is not None
        assert reader.truncation.offset in (core.stop[0] + (n - core.stop[0]) // 4 * 4, core.stop[0] + 16)


def test_absurd_incl_len_stops_at_that_record():
    pk = _sim_packets(4, 8)
    data = bytearray(_pcap([(p.ts_ns, p.frame) for p in pk], nanosecond=True))
    recs, _ = _records(pk)
    off, number = recs[len(recs) // 2]
    struct.pack_into("<I", data, off + 8, (16 << 20) + 1)
    core, msgs, deferred = run_core(bytes(data))
    assert core.stop == (off, number)
    assert core.stats["frames"] == number - 1
    with pytest.raises(Exception) as ei:
        list(CaptureParser().feed(bytes(data)))
    assert ei.value.offset == off + 8     # the pure parser's DecodeError names that record's incl_len


def _tuple(frame: bytes):
    ihl = (frame[14] & 15) * 4
    if frame[23] != 6:
        return None
    sport, dport = struct.unpack_from("!HH", frame, 14 + ihl)
    return frozenset([(bytes(frame[26:30]), sport), (bytes(frame[30:34]), dport)])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("damage", ["drop", "duplicate", "reorder"])
def test_damage_keeps_every_connection_equal_to_pure(seed, damage):
    pk = _sim_packets(5, 25)
    rnd = random.Random(seed)
    data_idx = [i for i, p in enumerate(pk) if p.length > 0 and _tuple(p.frame) is not None]
    frames = [(p.ts_ns, p.frame) for p in pk]
    for _ in range(2):
        i = rnd.choice(data_idx)
        t = _tuple(pk[i].frame)
        if damage == "drop":
            frames[i] = None
        elif damage == "duplicate":
            frames[i] = [frames[i], frames[i]]        # a retransmission: the pure side ignores it
        else:
            # the next data frame of the same direction goes first
            same = [j for j in data_idx if j > i and pk[j].frame[26:34] == pk[i].frame[26:34]
                    and _tuple(pk[j].frame) == t and frames[j] is not None and not isinstance(frames[j], list)]
            if not same or isinstance(frames[i], list) or frames[i] is None:
                continue
            j = same[0]
            frames[i], frames[j] = frames[j], frames[i]
    flat = []
    for f in frames:
        if f is None:
            continue
        flat += f if isinstance(f, list) else [f]
    data = _pcap(flat, nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)
    if damage == "drop":
        assert core.stats["gaps"] > 0


# --------------------------------------------------------------------------- connection reuse
#: IBM MQ traffic with more multi-segment units open at once than the pure framer
#: keeps (MQ_MAX_OPEN_UNITS + 1 first segments of as many conversations): the oldest
#: is dropped with a FramingError, by both framers (it used to send the connection
#: to the pure pipeline's replay)
MANY_OPEN_UNITS = b"".join(build_tsh(0x86, 36 + 100, conversation_id=1000 + k, ctl_flags1=0x10) + bytes(100)
                      for k in range(core_mod.MQ_MAX_OPEN_UNITS + 1))


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
def test_syn_reusing_the_tuple_opens_a_new_stream(close_first):
    payload = _mq_stream()
    pkts = []
    for isn in (1000, 900000):
        c = TcpConversation(("10.1.0.1", 40001), ("10.1.0.2", 1414), isn_client=isn, isn_server=isn * 3,
                            start_ns=1_700_000_000_000_000_000 + isn * 10_000)
        pkts += c.handshake() + c.send(0, payload)
        if close_first:
            pkts += c.close()
    data = _pcap([(p.ts_ns, p.frame) for p in pkts], nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)
    assert core.stats["connections"] == 2
    assert {k[0] for k in pure} <= {0, 1}


def _conflicting_copy(frames: list, i: int) -> list:
    """``frames`` with frame ``i`` (a data segment) sent again right after it with
    its last payload byte changed, 300 times (more conflict ranges than a
    direction keeps: tables.MAX_CONFLICT_RANGES)."""
    ts, frame = frames[i]
    other = bytearray(frame)
    other[-1] ^= 0xFF
    return frames[:i + 1] + [(ts + 1, bytes(other))] * 300 + frames[i + 1:]


def test_many_differing_copies_are_followed():
    pk = _sim_packets(5, 25)
    frames = [(p.ts_ns, p.frame) for p in pk]
    data_idx = [i for i, p in enumerate(pk) if p.length > 0 and _tuple(p.frame) is not None]
    frames = _conflicting_copy(frames, data_idx[len(data_idx) // 2])
    data = _pcap(frames, nanosecond=True)
    core, pure, msgs, _ = check_against_pure(data)
    assert core.stats["conflicting overlaps"] == 300


# --------------------------------------------------------------------------- ports and content detection
def _conv(port, chunks, *, cport=40000, isn=1000, start=0):
    c = TcpConversation(("10.2.0.1", cport), ("10.2.0.2", port), isn_client=isn, start_ns=1_700_000_000_000_000_000 + start)
    pk = c.handshake()
    for ch in chunks:
        pk += c.send(0, ch)
    return pk + c.close()


def test_content_detection_and_undetected_bytes():
    mq = _mq_stream(4)
    pkts = (_conv(5000, [mq], cport=40001)                            # detected at offset 0: fast path
            + _conv(5001, [b"junk" * 10, mq], cport=40002, start=10**9)  # detected mid-stream
            + _conv(9999, [b"hello" * 100, b"x" * 7], cport=40003, start=2 * 10**9))  # never detected
    data = _pcap([(p.ts_ns, p.frame) for p in pkts], nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)
    ref = {}
    pure_rows(data, stats=ref)
    # detected after the stream start: framed from the first recognised byte (stream
    # offsets from there, as Converter._start frames it)
    assert core.stats["bytes in streams of no known protocol"] == ref["undetected"]
    assert any(k[0] == 0 for k in msgs)
    mid = msgs[(1, "10.2.0.1", 40002)]
    assert mid and mid[0][0] == 40   # its first unit: stream offset 40, after the junk


def test_no_content_detection_and_port_options():
    mq = _mq_stream(4)
    pkts = _conv(5000, [mq], cport=40001) + _conv(1414, [mq], cport=40002, start=10**9)
    data = _pcap([(p.ts_ns, p.frame) for p in pkts], nanosecond=True)
    for opts in ({"detect_by_content": False}, {"mq_ports": (5000,)}, {"mq_ports": (), "msmq_ports": ()}):
        pure = pure_messages(data, **opts)
        core, msgs, _ = run_core(data, **opts)
        assert {k: [m[:-1] for m in v] for k, v in msgs.items()} == pure


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 40000), bad=st.booleans(), sizes=st.lists(st.integers(1, 3000), min_size=1, max_size=6))
def test_random_chunkings_of_cut_and_damaged_files(sim, cut, bad, sizes):
    data = bytearray(sim[:24 + cut])
    if bad:
        # an absurd incl_len in the record header that starts at byte 24 + the first record's size
        first = 16 + struct.unpack_from("<I", data, 24 + 8)[0] if len(data) >= 40 else None
        if first is not None and len(data) >= 24 + first + 16:
            struct.pack_into("<I", data, 24 + first + 8, 0xFFFFFFF0)
    data = bytes(data)
    ref = _canon(data, None)
    assert _canon(data, sizes) == ref
    assert ref[-1] is None or ref[-1][0] >= 24


@pytest.mark.parametrize("max_closed", [1, 2, 100])
def test_closed_connection_memory_and_late_retransmissions(max_closed):
    """Late retransmissions after close are ignored while the 4-tuple is remembered, and open a
    new connection (a new tcp_stream) once the pure reassembler's closed map forgot it."""
    mq = _mq_stream(3)
    pkts, late = [], []
    for k in range(4):
        conv = _conv(1414, [mq], cport=41000 + k, start=k * 10**9)
        pkts += conv
        late.append([p for p in conv if p.length][0])
    t = 5 * 10**9 + 1_700_000_000_000_000_000
    frames = [(p.ts_ns, p.frame) for p in pkts] + [(t + i, p.frame) for i, p in enumerate(late)]
    data = _pcap(frames, nanosecond=True)
    rows = pure_rows(data, tcp_options={"max_closed": max_closed})
    core, msgs, _ = run_core(data, max_closed=max_closed)
    proc = CaptureProcessor(max_closed=max_closed)
    for f in open_capture(io.BytesIO(data)):
        proc.feed(f)
    assert core.stats["connections"] == proc.tcp.next_stream
    ref = {}
    for r in rows:
        ref.setdefault(r[:3], []).append(r[3:])
    assert {key: [m[:-1] for m in got] for key, got in msgs.items()} == ref


@pytest.mark.parametrize("pattern", ["swap", "reverse3", "overlap", "dup-ahead"])
def test_out_of_order_segments_without_gap_stay_on_the_fast_path(pattern):
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
    data = _pcap(allf, nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)
    assert core.stats["out-of-order segments"] >= 1
    assert sum(len(v) for v in msgs.values()) > 0


@pytest.mark.parametrize("cover", [1, 2, 3])
@pytest.mark.parametrize("differ", [False, True], ids=["same", "differs"])
def test_retransmission_filling_a_hole_over_waiting_segments(cover, differ):
    """A lost segment retransmitted repacketised: one segment holding it and
    (part of) the ``cover`` segments that arrived after it and wait.  The
    waiting copies are drained after it, the parts they share compared: equal
    bytes are followed, and a copy that differs is recorded as a conflict
    (both used to replay the connection)."""
    from mqcodec.capture.writer import ACK, PSH

    mq = _mq_stream(6)
    c = TcpConversation(("10.3.0.1", 40103), ("10.3.0.2", 1414), mss=200)
    hs = c.handshake()
    segs = [p for p in c.send(0, mq, ack_each=False) if p.length]
    assert len(segs) > 6
    # segment 1 lost; 2..4 arrive and wait; then bytes of 1..cover (the last half of
    # segment `cover` + 1 too) again in one segment
    start = 200
    end = 200 * (cover + 1) + 100
    again = bytearray(mq[start:end])
    if differ:
        again[-50] ^= 0xFF           # a byte a waiting copy holds too
    retrans = c._frame(0, segs[1].seq, 0, ACK | PSH, bytes(again))
    order = [segs[0]] + segs[2:5] + [retrans] + segs[5:]
    data = _pcap([(p.ts_ns, p.frame) for p in hs + order + c.close()], nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)
    assert core.stats["overlapping segments"] >= 1
    # a waiting copy that differs from the bytes delivered before it: recorded (the
    # rows' overlap_conflict flags: tests/test_capture_engines.py)
    assert core.stats["conflicting overlaps"] == (1 if differ else 0)
    if not differ:
        rows = msgs[(0, "10.3.0.1", 40103)]
        assert len(rows) > 3 and all(r[2] != "framing error" for r in rows)


@pytest.mark.parametrize("pattern", ["shifted", "shifted-differs", "same-offset-longer", "same-offset-differs",
                                     "eof", "eof-differs"])
def test_overlapping_waiting_copies_are_followed(pattern):
    """Out-of-order copies that overlap each other wait together, as the pure
    reassembler keeps them (one entry per offset: a longer copy at an offset
    extends the first, their common bytes compared); the drain delivers them in
    offset order, comparing each with what it delivered before.  Copies that
    differ are recorded as conflicts; at the end of the capture the waiting
    copies are drained the same way (only counted).  All used to replay."""
    from mqcodec.capture.writer import ACK, PSH

    mq = _mq_stream(6)
    c = TcpConversation(("10.3.0.1", 40104), ("10.3.0.2", 1414), mss=200)
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
    data = _pcap([(p.ts_ns, p.frame) for p in hs + order], nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)   # rows and the reassembler's counts
    assert core.stats["conflicting overlaps"] == (1 if differ else 0)
    assert core.stats["out-of-order segments"] >= 2


def test_out_of_order_hole_never_filled_is_followed():
    mq = _mq_stream(6)
    c = TcpConversation(("10.3.0.1", 40101), ("10.3.0.2", 1414), mss=200)
    pk = c.handshake() + [p for p in c.send(0, mq, ack_each=False) if p.length]
    del pk[5]
    data = _pcap([(p.ts_ns, p.frame) for p in pk], nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)
    # the hole is declared at the end of the capture, where the pure converter only counts
    # it; the framer, left with part of a segment, reports a FramingError at its close,
    # as the compiled framer does (it used to hand the connection to the replay)
    rows = msgs[(0, "10.3.0.1", 40101)]
    assert [m[2] for m in rows][-1] == "framing error" and core.stats["framing error records"] == 1


@pytest.mark.parametrize("order", ["in-order", "early", "early-twice"])
@pytest.mark.parametrize("cut", [0, 20, 150])
@pytest.mark.parametrize("port", [1414, 1801])
def test_snap_length_cut_segment_is_followed(cut, port, order):
    """A data segment captured in part (caplen < origlen): the captured bytes,
    then a "snaplen" gap, which the framers follow.  Out of order ("early": it
    arrives before the segment ahead of it; "early-twice": and again, cut the
    same way) the core keeps a hole entry after its captured part, as the pure
    reassembler does, drained as the gap (both used to replay)."""
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
    data = _pcap(frames, nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)
    assert core.stats["gaps"] == 1 and core.stats["gap bytes"] == 200 - cut
    assert core.stats["out-of-order segments"] == (0 if order == "in-order" else 1 if order == "early" else 2)
    assert core.stats["framing error records"] >= 1


@pytest.mark.parametrize("mtu", [60, 300])
def test_fragmented_tcp_segment_stays_on_the_fast_path(mtu):
    """The core reassembles IPv4 fragments as the pure FragmentReassembler does
    (issue #8; it used to send the connection to replay): more cases in
    tests/test_capture_core_fragments.py."""
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
    data = _pcap(frames, nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)
    assert core.stats["reassembled tcp segments"] == 1
    # the fragments are still deferred (the side processor counts them)
    nfrag = len(fragment_ipv4(_ip_of(pk[victim].frame), mtu))
    assert sum(1 for f in deferred if f.data[20] & 0x20 or f.data[21] or f.data[20] & 0x1F) == nfrag
    # the message the segment carried comes from the core, with the last fragment's frame
    victim_frame = victim + nfrag
    assert any(m[4] == victim_frame for v in msgs.values() for m in v) == any(
        r[4] == victim_frame for v in pure.values() for r in v)


@pytest.mark.parametrize("limit", [3, 12])
def test_eviction_past_max_connections_follows_the_pure_reassembler(limit):
    """More connections open at once than ``max_connections``: the least
    recently active tenth (at least one, never the one just opened) is closed
    as the pure reassembler closes it: holes and unacknowledged ends declared
    lost, the framers closed.  Activity
    order differs from creation order; the evicted connections' later
    segments are segments after close."""
    mq = _mq_stream(4)
    rnd = random.Random(limit)
    firsts, rests, pokes = [], [], []
    for k in range(25):
        c = TcpConversation(("10.8.%d.1" % k, 41000 + k), ("10.8.0.2", 1414), mss=200,
                            start_ns=1_700_000_000_000_000_000 + k * 1000)
        body = c.send(0, mq, ack_each=False)
        cut = rnd.randrange(1, len(body))
        firsts.append(c.handshake() + body[:cut])
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
    data = _pcap([(p.ts_ns, p.frame) for p in frames], nanosecond=True)
    proc = CaptureProcessor(max_connections=limit)
    pure = pure_messages(data, eof_data=False, proc=proc)
    core, msgs, _ = run_core(data, max_connections=limit)
    assert core.supported, core.unsupported_reason
    assert core.stats["evicted connections"] == proc.tcp.stats["evicted connections"] > 0
    assert core.stats["segments after close"] > 0
    for k in TCP_STATS:
        assert core.stats[k] == proc.tcp.stats[k], k
    assert {k: [m[:-1] for m in v] for k, v in msgs.items()} == pure


def test_many_connections_tables_grow_and_closed_map_compacts():
    """2,300 short connections (the 4-tuple table grows, the closed map's FIFO is
    compacted), then late retransmissions of the first ones: new streams exactly when
    the pure reassembler (max_closed=100) has forgotten their 4-tuples."""
    pkts, late = [], []
    for k in range(2300):
        c = TcpConversation(("10.4.%d.%d" % (k // 250, k % 250 + 1), 30000 + k % 7), ("10.5.0.1", 9999),
                            start_ns=1_700_000_000_000_000_000 + k * 100_000)
        conv = c.handshake() + c.send(0, b"x" * (k % 13 + 1)) + c.close()
        pkts += conv
        if k % 100 == 0:
            late.append([p for p in conv if p.length][0])
    t = 1_800_000_000_000_000_000
    frames = [(p.ts_ns, p.frame) for p in pkts] + [(t + i, p.frame) for i, p in enumerate(late)]
    data = _pcap(frames, nanosecond=True)
    proc = CaptureProcessor(max_closed=100)
    for f in open_capture(io.BytesIO(data)):
        proc.feed(f)
    proc.close()
    core, msgs, _ = run_core(data, max_closed=100)
    assert core.stats["connections"] == proc.tcp.next_stream > 2300
    ref = {}
    pure_rows(data, stats=ref, tcp_options={"max_closed": 100})
    assert core.stats["bytes in streams of no known protocol"] == ref["undetected"]
    # the connections the core numbered are the pure reassembler's
    proc2 = CaptureProcessor(max_closed=100)
    keys = []
    for f in open_capture(io.BytesIO(data)):
        for ev in proc2.feed(f):
            if type(ev).__name__ == "StreamOpened":
                keys.append(tuple(ev.conn)[1:] + (ev.conn.stream,))
    assert [core.connection(i) for i in range(core.stats["connections"])] == keys


@pytest.mark.parametrize("end", ["rst", "fin"])
def test_new_connection_after_a_damaged_connection_on_the_same_tuple(end):
    """A damaged connection (a lost segment, more open units than the framer
    keeps) ends with a RST or FINs; a new connection on its 4-tuple follows."""
    mq = _mq_stream(6)
    a = TcpConversation(("10.6.0.1", 40200), ("10.6.0.2", 1414), isn_client=1000, mss=300)
    pa = a.handshake() + a.send(0, mq + MANY_OPEN_UNITS)
    del pa[5]                                            # a lost data segment
    pa += a.reset(0) if end == "rst" else a.close()
    b = TcpConversation(("10.6.0.1", 40200), ("10.6.0.2", 1414), isn_client=7_000_000,
                        start_ns=1_700_000_100_000_000_000)
    pb = b.handshake() + b.send(0, mq) + b.close()
    data = _pcap([(p.ts_ns, p.frame) for p in pa + pb], nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)
    assert core.stats["connections"] == 2
    assert any(k[0] == 0 for k in msgs) and any(k[0] == 1 for k in msgs)
    assert any(m[6] == "error" for v in msgs.values() for m in v)    # the dropped units


def test_syn_with_the_same_isn_after_a_closed_damaged_connection_opens_a_new_stream():
    mq = _mq_stream(6)
    a = TcpConversation(("10.6.0.1", 40201), ("10.6.0.2", 1414), isn_client=1000, mss=300)
    hs = a.handshake()
    pa = hs + a.send(0, mq + MANY_OPEN_UNITS)
    del pa[5]
    pa += a.close()
    data = _pcap([(p.ts_ns, p.frame) for p in pa + [hs[0]]], nanosecond=True)
    core, pure, msgs, deferred = check_against_pure(data)
    # the pure reassembler opens a new stream for it (it retired the closed connection)
    proc = CaptureProcessor()
    for f in open_capture(io.BytesIO(data)):
        proc.feed(f)
    assert proc.tcp.next_stream == core.stats["connections"] == 2


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
def test_syn_reusing_a_damaged_connections_tuple_closes_it(variant, garbage_first):
    """Issue #8: the reusing SYN closes the old connection as the pure
    reassembler does (its reorder buffer flushed: a Gap, then the held messages)."""
    data, syn = reuse_capture(variant, garbage_first)
    core, pure, msgs, deferred = check_against_pure(data)
    assert core.stats["connections"] == (3 if variant == "third" else 2)
    assert len([m for m in pure[(0, "10.1.0.1", 40001)] if m[6] is None]) == 4   # the held messages, after the hole
    # as the converter: what a reorder buffer flushes at the end of the capture makes no rows
    assert {k: [m[:-1] for m in v] for k, v in msgs.items()} == pure_messages(data, eof_data=False)


def test_connection_after_a_reset_one_on_a_forgotten_tuple():
    """A damaged connection ends with a RST; the pure reassembler's closed map
    (max_closed=2) then forgets its 4-tuple, and a later connection on it
    starts without a SYN (data only), damaged too: opened as the pure
    reassembler opens it."""
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
    data = _pcap([(p.ts_ns, p.frame) for p in pa + fill + pc], nanosecond=True)
    core, msgs, _ = run_core(data, max_closed=2)
    assert core.supported
    ref = {}
    for r in pure_rows(data, tcp_options={"max_closed": 2}, eof_data=False):
        ref.setdefault(r[:3], []).append(r[3:])
    assert {k: [m[:-1] for m in v] for k, v in msgs.items()} == ref
    assert {k[0] for k in ref} == {0, 1, 2, 3, 4, 5}


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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(st.sampled_from(["drop", "dup", "swap", "move"]), st.integers(0, 10**6),
                              st.integers(1, 6)), max_size=4))
def test_random_damage_keeps_the_contract(ops):
    """Random drops, duplicates, swaps and moves of frames: every connection is
    exact (check_against_pure), whatever the damage."""
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
    check_against_pure(data)


def test_reorder_buffer_overflow_follows_the_pure_bounds():
    mq = _mq_stream(6)
    c = TcpConversation(("10.3.0.1", 40102), ("10.3.0.2", 1414), mss=200)
    hs = c.handshake()
    segs = [p for p in c.send(0, mq, ack_each=False) if p.length]
    order = [segs[0]] + segs[1:6][::-1] + segs[6:]
    data = _pcap([(p.ts_ns, p.frame) for p in hs + order + c.close()], nanosecond=True)
    for limit in (2, 4096):
        proc = CaptureProcessor(max_buffer_segments=limit)
        rows = pure_rows(data, proc=proc)
        core, msgs, _ = run_core(data, max_reassembly_segments=limit)
        ref = {}
        for r in rows:
            ref.setdefault(r[:3], []).append(r[3:])
        assert {key: [m[:-1] for m in got] for key, got in msgs.items()} == ref
        assert sum(len(v) for v in msgs.values()) == len(rows) > 0
        for k in TCP_STATS:
            assert core.stats[k] == proc.tcp.stats[k], k
        if limit == 2:
            # the "buffer" Gap falls inside a segment the framer holds part of; the segments
            # held behind the gap then overlap it, their bytes before the gap not compared
            # (they used to replay the connection)
            assert any(r[-1] for r in rows)          # damage declared (an error row)
            assert core.stats["overlapping bytes not compared"] > 0
