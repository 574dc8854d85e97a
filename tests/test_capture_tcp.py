"""TCP reassembly checked against tshark and against the bytes a simulated
conversation sent, in both implementations of stage (b) where a test takes
``impl``: the pure CaptureProcessor and the compiled capture core's
reassembly (mqcodec.capture.iter_stream_events).  The compiled core keeps no
reason for a Gap or a close (None), nor the pure processor's counters: those
are checked on the pure implementation."""
from __future__ import annotations

import io
import os
import random
import re
import subprocess
from collections import defaultdict

import pytest
from hypothesis import given, settings, strategies as st

from mqcodec.capture.stream import CaptureProcessor, iter_capture_events, iter_stream_events
from mqcodec.capture.packet import UDPDatagram
from mqcodec.capture.tcp import (
    ACK, PSH, FrameMap, Gap, StreamClosed, StreamData, StreamOpened, TCPReassembler,
)
from mqcodec.capture.writer import (
    TcpConversation, ethernet, ipv4, ipv6, tcp, udp, write_pcap,
)

from conftest import CAPTURES

REAL = CAPTURES / "ibmmq_jms_client_1414.pcap"
MISSING = re.compile(r"\[(\d+) bytes missing in capture file\]\x00")


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def tshark_follow_many(tshark, path, streams):
    """{stream: {(ip, port): [bytes or int(gap length), ...]}} from one run
    of tshark with one ``-z follow,tcp,raw,N`` per stream."""
    cmd = [tshark, "-r", str(path), "-q"]
    for n in streams:
        cmd += ["-z", "follow,tcp,raw,%d" % n]
    return _parse_follow(run(cmd).splitlines())


def _parse_follow(lines):
    result, current = {}, None
    for line in lines:
        if line.startswith("Filter: tcp.stream eq "):
            current = int(line.rsplit(" ", 1)[1])
            result[current] = ({}, {0: bytearray(), 1: bytearray()})
        elif current is None or line.startswith(("Follow", "===")) or not line.strip():
            continue
        elif line.startswith("Node "):
            ip, port = line[8:].rsplit(":", 1)
            result[current][0][int(line[5])] = (ip.strip("[]"), int(port))
        else:
            result[current][1][1 if line.startswith("\t") else 0] += bytes.fromhex(line.strip())
    return {n: {nodes[i]: _split_missing(bytes(data[i])) for i in nodes} for n, (nodes, data) in result.items()}


def tshark_follow(tshark, path, n):
    """{(ip, port): [bytes or int(gap length), ...]} from ``follow,tcp,raw``."""
    return tshark_follow_many(tshark, path, [n])[n]


def _split_missing(raw: bytes):
    """tshark writes '[N bytes missing in capture file]\\0' where a gap is."""
    parts, pos = [], 0
    for m in MISSING.finditer(raw.decode("latin-1")):
        if m.start() > pos:
            parts.append(raw[pos:m.start()])
        parts.append(int(m.group(1)))
        pos = m.end()
    if pos < len(raw):
        parts.append(raw[pos:])
    return parts


def collect(events):
    """Per (stream, direction endpoint): [bytes or gap length], merged."""
    out = defaultdict(list)
    for e in events:
        if isinstance(e, (StreamData, Gap)):
            k = e.conn
            ep = [(k.client, k.client_port), (k.server, k.server_port)][e.direction]
            parts = out[(k.stream, ep)]
            if isinstance(e, Gap):
                parts.append(e.length)
            elif parts and isinstance(parts[-1], bytes):
                parts[-1] += e.data
            else:
                parts.append(bytes(e.data))
    return out


def stream_bytes(events, direction=0, stream=None):
    return b"".join(e.data for e in events if isinstance(e, StreamData) and e.direction == direction
                    and (stream is None or e.conn.stream == stream))


def gaps(events):
    return [(e.direction, e.offset, e.length, e.reason) for e in events if isinstance(e, Gap)]


def reasons(expected: list, impl: str) -> list:
    """``expected`` (tuples whose last item is a reason) as ``impl`` reports
    them: the compiled reassembly keeps no reason (None)."""
    return expected if impl == "py" else [t[:-1] + (None,) for t in expected]


def check_offsets(events):
    """StreamData/Gap of each direction tile the stream without holes."""
    nxt = defaultdict(int)
    for e in events:
        if isinstance(e, (StreamData, Gap)):
            k = (e.conn.stream, e.direction)
            assert e.offset == nxt[k], (e, nxt[k])
            nxt[k] += len(e.data) if isinstance(e, StreamData) else e.length


def events_of(packets, linktype=1, impl="py", **kw):
    """The events of ``packets`` written as a pcap: every event and the pure
    processor (``impl`` "py"), or the compiled reassembly's stream events and
    None ("c")."""
    buf = io.BytesIO()
    write_pcap(buf, packets, linktype, **{k: v for k, v in kw.items() if k in ("snaplen",)})
    if impl == "py":
        proc = CaptureProcessor()
        evs = list(iter_capture_events(buf.getvalue(), processor=proc))
    else:
        proc, evs = None, list(iter_stream_events(buf.getvalue(), impl=impl))
    check_offsets(evs)
    return evs, proc


PI_ERROR = "8388608"  # Wireshark's expert severity "error" (0x00800000)


def tshark_ok(tshark, path, follow=()):
    """tshark reads the file with checksum checks on: no error-level expert
    info (malformed, bad checksum), every checksum "Good" (status 1).  The
    same run follows the TCP streams in ``follow`` (returned as by
    :func:`tshark_follow_many`)."""
    cmd = [tshark, "-r", str(path), "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
           "-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=|",
           "-e", "_ws.expert.severity", "-e", "_ws.malformed", "-e", "tcp.checksum.status",
           "-e", "udp.checksum.status", "-e", "ip.checksum.status"]
    for n in follow:
        cmd += ["-z", "follow,tcp,raw,%d" % n]
    lines = run(cmd).splitlines()
    end = next((i for i, line in enumerate(lines) if line.startswith("===")), len(lines))
    rows = [line for line in lines[:end] if line]
    assert rows
    for row in rows:
        severity, malformed, *status = row.split("|")
        assert PI_ERROR not in severity.split(",") and not malformed, row
        status = [v for v in status if v]
        assert status and set(status) == {"1"}, row
    return _parse_follow(lines[end:])


# --- the real capture --------------------------------------------------------------

@pytest.mark.tshark
def test_real_capture_streams_equal_tshark_follow(tshark, impl):
    events = list(iter_stream_events(REAL, impl=impl))
    check_offsets(events)
    ours = collect(events)
    opened = [e.conn for e in events if isinstance(e, StreamOpened)]
    assert [k.stream for k in opened] == [0, 1, 2, 3, 4]
    follow = tshark_follow_many(tshark, REAL, [k.stream for k in opened])
    for key in opened:
        theirs = follow[key.stream]
        assert set(theirs) == {(key.client, key.client_port), (key.server, key.server_port)}
        for ep, parts in theirs.items():
            assert ours[(key.stream, ep)] == parts
    # tshark's expert info reports two "previous segment not captured"
    assert len([e for e in events if isinstance(e, Gap)]) == 2
    if impl == "py":
        proc = CaptureProcessor()
        list(iter_capture_events(REAL, processor=proc))
        assert proc.report()["malformed"] == {}


@pytest.mark.tshark
def test_real_capture_stream_index_and_frames(tshark, impl):
    rows = run([tshark, "-r", str(REAL), "-T", "fields", "-E", "separator=|", "-e", "frame.number",
                "-e", "tcp.stream", "-e", "tcp.len", "-e", "tcp.analysis.retransmission",
                "-e", "tcp.analysis.keep_alive"]).splitlines()
    stream_of = {}
    first_copy = {}
    for r in rows:
        num, stream, tlen, retr, keepalive = r.split("|")
        stream_of[int(num)] = int(stream)
        if int(tlen) and not retr and not keepalive:
            first_copy[int(num)] = int(tlen)
    events = list(iter_stream_events(REAL, impl=impl))
    data = [e for e in events if isinstance(e, StreamData)]
    for e in data:
        assert stream_of[e.frame_number] == e.conn.stream
    # every frame tshark calls new data (not a retransmission or keep-alive)
    # delivers its bytes, and no other frame does
    delivered = defaultdict(int)
    for e in data:
        delivered[e.frame_number] += len(e.data)
    assert delivered == first_copy


# --- synthetic captures --------------------------------------------------------------

LINKS = [
    ("ethernet", {}),
    ("ethernet-vlan", {"vlans": (100,)}),
    ("ethernet-qinq", {"vlans": (100, 200)}),
    ("sll", {}),
    ("sll2", {}),
    ("null", {}),
    ("raw", {}),
    ("ipv6-ext", {"client": ("2001:db8::1", 40001), "server": ("2001:db8::2", 1801),
                  "ext_headers": ((0, b"\x01\x04\0\0\0\0"), (43, b"\0\0\0\0\0\0"), (60, b"\x01\x02\0\0"))}),
]


@pytest.mark.tshark
def test_links_tshark_and_reassembly(tmp_path, tshark, impl):
    """One pcapng, one interface and one connection per link layer: tshark
    validates every checksum and follows every stream; we must agree."""
    from mqcodec.capture.writer import PcapngWriter
    path = tmp_path / "links.pcapng"
    sent = []
    with open(path, "wb") as f:
        w = PcapngWriter(f)
        for i, (name, kw) in enumerate(LINKS):
            link = "ethernet" if name.startswith("ipv6") else name.split("-")[0]
            kw = dict(kw)
            client, server = kw.pop("client", ("10.0.0.1", 40000)), kw.pop("server", ("10.0.0.2", 1414))
            client = (client[0], client[1] + 100 * i)  # distinct connections
            c = TcpConversation(client=client, server=server, link=link, start_ns=10**18 + i * 10**9, **kw)
            msg_c, msg_s = os.urandom(4000), os.urandom(2500)
            c.handshake()
            c.send(0, msg_c)
            c.send(1, msg_s)
            c.close()
            if_id = w.add_interface(c.linktype)
            for p in c.packets:
                w.write(if_id, p.ts_ns, p.frame)
            sent.append((name, c.ends, msg_c, msg_s))
    theirs = tshark_ok(tshark, path, follow=range(len(LINKS)))
    events = list(iter_stream_events(path, impl=impl))
    check_offsets(events)
    if impl == "py":
        proc = CaptureProcessor()
        list(iter_capture_events(path, processor=proc))
        assert proc.report()["skipped"] == {} and proc.report()["malformed"] == {}
    for n, (name, (client, server), msg_c, msg_s) in enumerate(sent):
        assert theirs[n] == {client: [msg_c], server: [msg_s]}, name
        assert stream_bytes(events, 0, n) == msg_c and stream_bytes(events, 1, n) == msg_s, name
        closed = [(e.direction, e.offset, e.reason) for e in events
                  if isinstance(e, StreamClosed) and e.conn.stream == n]
        assert closed == reasons([(0, 4000, "fin"), (1, 2500, "fin")], impl), name


def test_null_loopback_big_endian_family(impl):
    c = TcpConversation(link="raw")
    c.handshake()
    c.send(0, b"x" * 100)
    # DLT_NULL written by a big-endian host: the family field is big-endian
    packets = [(p.ts_ns, (2).to_bytes(4, "big") + p.frame) for p in c.packets]
    events, _ = events_of(packets, 0, impl=impl)
    assert stream_bytes(events) == b"x" * 100


def _conv(**kw):
    c = TcpConversation(mss=100, **kw)
    c.handshake()
    return c


@pytest.mark.tshark
def test_reordered_duplicated_overlapping(tmp_path, tshark, impl):
    c = _conv()
    msg = bytes(random.Random(1).randrange(256) for _ in range(1000))
    data = c.send(0, msg, ack_each=False)
    # an overlapping retransmission covering segments 3..4 with the same bytes
    base = data[3].seq
    client, server = c.ends
    over = ethernet(ipv4(client[0], server[0], 6, tcp(client[0], server[0], client[1], server[1], base + 50,
                                                      c.next_seq[1], ACK | PSH, msg[350:480])))
    pkts = c.packets[:3] + [data[1], data[0], data[0], data[2], (data[3].ts_ns, over), data[4], data[3]] + data[5:]
    pkts += c.close()
    path = tmp_path / "x.pcap"
    with open(path, "wb") as f:
        write_pcap(f, pkts, 1)
    assert tshark_ok(tshark, path, follow=[0])[0][client] == [msg]
    events, proc = events_of(pkts, impl=impl)
    assert stream_bytes(events) == msg
    assert gaps(events) == []
    if impl == "py":
        assert proc.tcp.stats["retransmitted segments"] >= 1 and proc.tcp.stats["out-of-order segments"] >= 1


def test_delivered_bytes_are_never_replaced(impl):
    c = _conv()
    data = c.send(0, b"A" * 300, ack_each=False)
    client, server = c.ends
    # a later, conflicting copy of bytes 50..149 (already delivered) is ignored
    bad = ethernet(ipv4(client[0], server[0], 6, tcp(client[0], server[0], client[1], server[1], data[0].seq + 50,
                                                     c.next_seq[1], ACK, b"B" * 100)))
    events, proc = events_of(c.packets[:3] + [data[0], data[1], (data[0].ts_ns, bad), data[2]], impl=impl)
    assert stream_bytes(events) == b"A" * 300
    assert impl != "py" or proc.tcp.stats["retransmitted segments"] == 1
    # a copy reaching past what was delivered contributes only its new bytes
    bad2 = ethernet(ipv4(client[0], server[0], 6, tcp(client[0], server[0], client[1], server[1], data[0].seq + 50,
                                                      c.next_seq[1], ACK, b"B" * 100)))
    events, proc = events_of(c.packets[:3] + [data[0], (data[0].ts_ns, bad2), data[1], data[2]], impl=impl)
    assert stream_bytes(events) == b"A" * 100 + b"B" * 50 + b"A" * 150
    assert impl != "py" or proc.tcp.stats["overlapping segments"] == 2


@pytest.mark.tshark
def test_dropped_segments_reported_as_gaps(tmp_path, tshark, impl):
    c = _conv()
    msg = os.urandom(1000)
    data = c.send(0, msg)  # data segment, ACK, data segment, ACK, ...
    segs = [p for p in data if p.length]
    drop = {segs[2], segs[3], segs[7]}
    pkts = c.packets[:3] + [p for p in data if p not in drop] + c.close()
    path = tmp_path / "x.pcap"
    with open(path, "wb") as f:
        write_pcap(f, pkts, 1)
    client = c.ends[0]
    # tshark's own account of the holes: 200 bytes, then 100 bytes
    assert tshark_follow(tshark, path, 0)[client] == [msg[:200], 200, msg[400:700], 100, msg[800:]]
    events, _ = events_of(pkts, impl=impl)
    assert gaps(events) == reasons([(0, 200, 200, "lost"), (0, 700, 100, "lost")], impl)
    assert collect(events)[(0, client)] == [msg[:200], 200, msg[400:700], 100, msg[800:]]


def test_dropped_last_segment_before_fin(impl):
    c = _conv()
    msg = os.urandom(350)
    data = c.send(0, msg, ack_each=False)
    pkts = c.packets[:3] + data[:-1] + c.close()
    events, _ = events_of(pkts, impl=impl)
    assert gaps(events) == reasons([(0, 300, 50, "lost")], impl)
    closed = [e for e in events if isinstance(e, StreamClosed) and e.direction == 0]
    assert (closed[0].offset, closed[0].reason) == reasons([(350, "fin")], impl)[0]


@pytest.mark.tshark
def test_sequence_wraparound(tmp_path, tshark, impl):
    c = _conv(isn_client=0xFFFFFF80, isn_server=0xFFFFFFF0)
    msg_c, msg_s = os.urandom(1000), os.urandom(700)
    c.send(0, msg_c)
    c.send(1, msg_s)
    c.close()
    assert any(p.seq < 0x1000 for p in c.packets if p.direction == 0 and p.length)
    path = tmp_path / "w.pcap"
    with open(path, "wb") as f:
        write_pcap(f, c.packets, 1)
    assert tshark_follow(tshark, path, 0) == {c.ends[0]: [msg_c], c.ends[1]: [msg_s]}
    events, _ = events_of(c.packets, impl=impl)
    assert stream_bytes(events, 0) == msg_c and stream_bytes(events, 1) == msg_s
    assert gaps(events) == []


@pytest.mark.tshark
def test_mid_stream_start(tmp_path, tshark, impl):
    c = _conv()
    msg = os.urandom(1000)
    data = c.send(0, msg)
    segs_from = 4  # capture starts in the middle: skip handshake and 2 segments + ACKs
    pkts = data[segs_from:] + c.close()
    path = tmp_path / "m.pcap"
    with open(path, "wb") as f:
        write_pcap(f, pkts, 1)
    assert tshark_follow(tshark, path, 0)[c.ends[0]] == [msg[200:]]
    events, _ = events_of(pkts, impl=impl)
    opened = [e for e in events if isinstance(e, StreamOpened)]
    assert len(opened) == 1 and not opened[0].syn_seen
    assert opened[0].conn.server_port == 1414  # server recognised by its port
    assert stream_bytes(events, 0) == msg[200:]
    assert [e.offset for e in events if isinstance(e, StreamData)][0] == 0


@pytest.mark.tshark
def test_snaplen_truncation_is_a_gap(tmp_path, tshark, impl):
    c = _conv()
    c.mss = 400
    msg = os.urandom(1000)
    c.send(0, msg)
    c.close()
    path = tmp_path / "x.pcap"
    with open(path, "wb") as f:
        write_pcap(f, c.packets, 1, snaplen=254)  # 54 bytes of headers + 200 payload bytes
    assert run([tshark, "-r", str(path), "-T", "fields", "-e", "frame.cap_len"]).split()[3] == "254"
    events, _ = events_of(c.packets, snaplen=254, impl=impl)
    g = gaps(events)
    assert g == reasons([(0, 200, 200, "snaplen"), (0, 600, 200, "snaplen")], impl)
    assert stream_bytes(events) == msg[:200] + msg[400:600] + msg[800:]


def test_rst_closes_both_directions(impl):
    c = _conv()
    c.send(0, b"abc")
    c.reset(1)
    events, _ = events_of(c.packets, impl=impl)
    closed = [(e.direction, e.offset, e.frame_number, e.reason) for e in events if isinstance(e, StreamClosed)]
    rst = len(c.packets)        # the RST is the last frame
    assert closed == reasons([(0, 3, rst, "rst"), (1, 0, rst, "rst")], impl)


def test_port_reuse_opens_new_connection(impl):
    c1 = _conv(isn_client=100)
    c1.send(0, b"first")
    c1.close()
    c2 = TcpConversation(mss=100, isn_client=900000, start_ns=c1.ts + 10**9)
    c2.handshake()
    c2.send(0, b"second")
    c2.close()
    events, _ = events_of(c1.packets + c2.packets, impl=impl)
    assert [e.conn.stream for e in events if isinstance(e, StreamOpened)] == [0, 1]
    assert stream_bytes(events, 0, 0) == b"first" and stream_bytes(events, 0, 1) == b"second"


def test_buffer_bound_forces_gap():
    r = TCPReassembler(max_reassembly_segments=3)
    ev = r.segment("1.1.1.1", 5000, "2.2.2.2", 1414, 0, 0, 0x02, b"", 0, 1, 0)
    for i in range(1, 5):  # offset 0..9 lost; 10-byte segments at 10, 20, 30, 40
        ev += r.segment("1.1.1.1", 5000, "2.2.2.2", 1414, 1 + 10 * i, 0, ACK, b"x" * 10, 0, 1 + i, 0)
    assert gaps(ev) == [(0, 0, 10, "buffer")]
    assert stream_bytes(ev) == b"x" * 40


def test_frame_map(impl):
    c = _conv()
    data = c.send(0, os.urandom(450), ack_each=False)
    events, _ = events_of(c.packets, impl=impl)
    fm = FrameMap()
    for e in events:
        if isinstance(e, StreamData):
            fm.add(e.offset, e.frame_number)
    assert fm.frame_at(0) == 4 and fm.frame_at(99) == 4 and fm.frame_at(100) == 5 and fm.frame_at(449) == 8
    assert fm.frames_between(150, 320) == [5, 6, 7]
    fm.discard_before(300)
    assert fm.frame_at(320) == 7


@pytest.mark.tshark
def test_udp_datagrams(tmp_path, tshark):
    payload = b"MSMQ multicast-ish" * 3
    frame = ethernet(ipv4("10.0.0.1", "10.0.0.2", 17, udp("10.0.0.1", "10.0.0.2", 3527, 3527, payload)))
    path = tmp_path / "u.pcap"
    with open(path, "wb") as f:
        write_pcap(f, [(10**18, frame)], 1)
    tshark_ok(tshark, path)
    assert run([tshark, "-r", str(path), "-T", "fields", "-e", "udp.length"]).strip() == str(8 + len(payload))
    events, _ = events_of([(10**18, frame)])
    (d,) = [e for e in events if isinstance(e, UDPDatagram)]
    assert (d.src, d.sport, d.dst, d.dport, d.payload, d.missing) == ("10.0.0.1", 3527, "10.0.0.2", 3527, payload, 0)


def test_port_filter():
    c = _conv()
    c.send(0, b"hello")
    buf = io.BytesIO()
    write_pcap(buf, c.packets, 1)
    proc = CaptureProcessor(tcp_ports={1801})
    events = list(iter_capture_events(buf.getvalue(), processor=proc))
    assert not [e for e in events if isinstance(e, StreamData)]
    assert proc.skipped["port filter"] == len(c.packets)


# --- property: any permutation / duplication of the data segments ----------------

def _permuted(data, both_directions):
    n_c = data.draw(st.integers(min_value=1, max_value=2500), label="client bytes")
    n_s = data.draw(st.integers(min_value=0, max_value=1500), label="server bytes") if both_directions else 0
    isn = data.draw(st.sampled_from([0, 1000, 0xFFFFFF00, 0x7FFFFFF0]), label="isn")
    mss = data.draw(st.sampled_from([1, 7, 100, 536]), label="mss") if n_c + n_s < 300 else 536
    c = TcpConversation(mss=mss, isn_client=isn, isn_server=isn ^ 0x5A5A5A5A)
    rnd = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    msg_c, msg_s = rnd.randbytes(n_c), rnd.randbytes(n_s)
    hs = c.handshake()
    body = c.send(0, msg_c, ack_each=False) + c.send(1, msg_s, ack_each=False)
    fin = c.close()
    dup = data.draw(st.lists(st.sampled_from(body), max_size=10), label="duplicates")
    if both_directions:  # the closing FINs may come anywhere too
        return hs + list(data.draw(st.permutations(body + dup + fin), label="order")), msg_c, msg_s
    perm = data.draw(st.permutations(body + dup), label="order")
    return hs + list(perm) + fin, msg_c, msg_s


def _reassemble(packets, impl="py", **options):
    buf = io.BytesIO()
    write_pcap(buf, packets, 1)
    events = list(iter_stream_events(buf.getvalue(), impl=impl, **options))
    check_offsets(events)
    return events


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_any_order_and_duplication_reassembles(impl, data):
    """Default settings: the segments of a direction in any order, any copies."""
    packets, msg_c, _ = _permuted(data, False)
    events = _reassemble(packets, impl)
    assert stream_bytes(events, 0) == msg_c
    assert gaps(events) == []


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_interleaving_of_both_directions_without_ack_gaps(data):
    """Both directions and the FINs shuffled together (ACKs may precede the
    data they acknowledge): exact with ``ack_gaps=False``."""
    packets, msg_c, msg_s = _permuted(data, True)
    events = _reassemble(packets, ack_gaps=False)
    assert stream_bytes(events, 0) == msg_c and stream_bytes(events, 1) == msg_s
    assert gaps(events) == []
    closed = sorted((e.direction, e.offset, e.reason) for e in events if isinstance(e, StreamClosed))
    assert closed == [(0, len(msg_c), "fin"), (1, len(msg_s), "fin")]


# --- more network-layer cases ----------------------------------------------------

@pytest.mark.tshark
def test_ipv4_options_ipv6_ah_and_tso_length(tmp_path, tshark, impl):
    seg = tcp("10.0.0.1", "10.0.0.2", 40000, 1414, 7, 0, ACK | PSH, b"with options")
    opt = ethernet(ipv4("10.0.0.1", "10.0.0.2", 6, seg, options=b"\x94\x04\x00\x00"))  # Router Alert (RFC 2113)
    seg6 = tcp("2001:db8::1", "2001:db8::2", 40000, 1801, 7, 0, ACK | PSH, b"after AH")
    ah = ethernet(ipv6("2001:db8::1", "2001:db8::2", 6, seg6, ext_headers=((51, bytes(4) + b"\0\0\0\1" + bytes(12)),)))
    path = tmp_path / "o.pcap"
    with open(path, "wb") as f:
        write_pcap(f, [(10**18, opt), (10**18 + 1, ah)], 1)
    rows = run([tshark, "-r", str(path), "-T", "fields", "-E", "separator=|", "-e", "ip.hdr_len",
                "-e", "ah.next_header", "-e", "tcp.len", "-e", "tcp.srcport"]).splitlines()
    assert rows == ["24||12|40000", "|6|8|40000"]
    events, proc = events_of([(10**18, opt), (10**18 + 1, ah)], impl=impl)
    assert [bytes(e.data) for e in events if isinstance(e, StreamData)] == [b"with options", b"after AH"]
    # IPv4 Total Length 0 (segmentation offload): the captured bytes count
    tso = bytearray(opt)
    tso[16:18] = b"\0\0"
    from mqcodec.capture.frame import Frame
    from mqcodec.capture.packet import decode_frame
    r = decode_frame(Frame(1, 0, 1, len(tso), len(tso), bytes(tso)))
    assert r.payload == b"with options" and r.missing == 0


def test_ethernet_trailer_is_not_payload(impl):
    seg = tcp("10.0.0.1", "10.0.0.2", 40000, 1414, 7, 0, ACK | PSH, b"x")
    frame = ethernet(ipv4("10.0.0.1", "10.0.0.2", 6, seg)) + b"\xAA" * 5  # padding to 60 + trailer
    events, _ = events_of([(10**18, frame)], impl=impl)
    assert [e.data for e in events if isinstance(e, StreamData)] == [b"x"]


def test_lost_tail_without_fin_declared_at_eof_from_ack(impl):
    c = _conv()
    msg = os.urandom(300)
    data = c.send(0, msg)  # seg, ack, seg, ack, seg, ack
    pkts = c.packets[:3] + data[:4] + data[5:]  # the last segment lost, its ACK captured
    events, _ = events_of(pkts, impl=impl)
    assert gaps(events) == reasons([(0, 200, 100, "lost")], impl)
    closed = [(e.direction, e.offset, e.reason) for e in events if isinstance(e, StreamClosed)]
    assert closed == reasons([(0, 300, "eof"), (1, 0, "eof")], impl)


def test_connection_bound_evicts_least_recent():
    r = TCPReassembler(max_connections=2)
    ev = []
    for i, port in enumerate((5001, 5002, 5001, 5003)):  # 5001 active again before 5003 opens
        ev += r.segment("1.1.1.1", port, "2.2.2.2", 1414, 100 + 10 * (i // 2), 0, ACK, b"y" * 10, 0, i + 1, i)
    closed = [(e.conn.client_port, e.direction, e.reason) for e in ev if isinstance(e, StreamClosed)]
    assert closed == [(5002, 0, "evicted"), (5002, 1, "evicted")]
    assert r.open_connections == 2 and r.stats["evicted connections"] == 1
    assert stream_bytes(ev, 0, 0) == b"y" * 20


# --- IPv4 fragments ---------------------------------------------------------------

def _fragmented_udp(size=4000, mtu=1500, ident=4242):
    from mqcodec.capture.writer import fragment_ipv4
    payload = bytes(random.Random(size).randrange(256) for _ in range(size))
    pkt = ipv4("10.0.0.1", "10.0.0.2", 17, udp("10.0.0.1", "10.0.0.2", 3527, 3527, payload),
               ident=ident, flags_frag=0)
    return payload, [ethernet(f) for f in fragment_ipv4(pkt, mtu)]


@pytest.mark.tshark
def test_ipv4_fragments_reassembled_like_tshark(tmp_path, tshark):
    payload, frags = _fragmented_udp()
    assert len(frags) == 3
    order = [frags[2], frags[0], frags[0], frags[1]]  # out of order, one duplicate
    packets = [(10**18 + i, f) for i, f in enumerate(order)]
    path = tmp_path / "f.pcap"
    with open(path, "wb") as f:
        write_pcap(f, packets, 1)
    rows = run([tshark, "-2", "-r", str(path), "-T", "fields", "-E", "separator=|", "-e", "frame.number",
                "-e", "ip.reassembled_in", "-e", "udp.length", "-e", "ip.checksum.status",
                "-o", "ip.check_checksum:TRUE"]).splitlines()
    reassembled_in = {r.split("|")[1] for r in rows if r.split("|")[1]}
    (done,) = [r.split("|") for r in rows if r.split("|")[2]]
    assert reassembled_in == {"4"} and done[0] == "4" and int(done[2]) == 8 + len(payload)
    assert {r.split("|")[3] for r in rows} == {"1"}
    events, proc = events_of(packets)
    (d,) = [e for e in events if isinstance(e, UDPDatagram)]
    assert d.payload == payload and d.frame_number == 4 and d.dport == 3527
    assert proc.stats["reassembled datagrams"] == 1 and proc.stats["ip fragments"] == 4


def test_ipv4_fragmented_tcp_segment_reaches_the_stream(impl):
    from mqcodec.capture.writer import fragment_ipv4
    c = _conv()
    msg = os.urandom(2000)
    c.mss = 2000
    (seg, ack) = c.send(0, msg)
    ip_start = 14
    pkt = bytearray(seg.frame[ip_start:])
    pkt[6:8] = b"\0\0"  # clear DF so that it may be fragmented
    pieces = [(seg.ts_ns, ethernet(f)) for f in fragment_ipv4(bytes(pkt), 576)]
    events, proc = events_of(c.packets[:3] + pieces[::-1] + [ack], impl=impl)
    assert stream_bytes(events) == msg
    assert impl != "py" or proc.stats["reassembled datagrams"] == 1


def test_incomplete_and_expired_datagrams_are_reported():
    payload, frags = _fragmented_udp(ident=1)
    _, frags2 = _fragmented_udp(ident=2)
    t = 10**18
    packets = [(t, frags[0]), (t + 1, frags[2]),                  # ident 1: middle lost
               (t + 2, frags2[0]), (t + 31 * 10**9, frags2[1]),  # ident 2: 31 s later, expired
               (t + 31 * 10**9 + 1, frags2[2])]
    events, proc = events_of(packets)
    assert not [e for e in events if isinstance(e, UDPDatagram)]
    skipped = sorted(e.frame_number for e in events if getattr(e, "reason", "") == "incomplete IP datagram")
    assert skipped == [1, 2, 3, 4, 5]


def test_endless_duplicate_fragments_are_bounded():
    from mqcodec.capture.ipfrag import MAX_PIECES
    _, frags = _fragmented_udp(ident=9)
    packets = [(10**18 + i, frags[0]) for i in range(MAX_PIECES + 1)]
    events, proc = events_of(packets)
    skipped = [e.frame_number for e in events if getattr(e, "reason", "") == "incomplete IP datagram"]
    assert skipped == list(range(1, MAX_PIECES + 2))


# --- both implementations, event for event ------------------------------------------

def _damaged(kind: str) -> bytes:
    from capture_inputs import fragmented, pcap_bytes, reordered, simulator_packets

    pk = simulator_packets(3, 60)
    rnd = random.Random(9)
    return {"clean": lambda: pcap_bytes(pk), "pcapng": lambda: pcap_bytes(pk, ng=True),
            "reordered": lambda: pcap_bytes(reordered(pk, 5, swaps=40)),
            "fragmented": lambda: pcap_bytes(fragmented(pk, 576, 7)),
            "snaplen": lambda: pcap_bytes(pk, snaplen=200),
            "lossy": lambda: pcap_bytes([p for p in pk if rnd.random() > 0.03])}[kind]()


@pytest.mark.parametrize("kind", ["clean", "pcapng", "reordered", "fragmented", "snaplen", "lossy"])
def test_both_implementations_give_the_same_stream_events(kind):
    """The simulator's capture, clean and damaged (its FINs lost, segments
    dropped, duplicated, swapped, fragmented, cut by the snap length): the
    compiled reassembly gives the pure one's events, in order, field for
    field (but the reasons it does not keep)."""
    pytest.importorskip("mqcodec._ext.capture_core")
    data = _damaged(kind)

    def view(impl):
        return [(type(e).__name__,) + tuple(None if f == "reason" else getattr(e, f) for f in e._fields)
                for e in iter_stream_events(data, impl=impl)]

    pure = view("py")
    assert len([e for e in pure if e[0] == "StreamData"]) > 200
    assert view("c") == pure


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_both_implementations_agree_on_any_damage(data):
    """Two connections sharing a capture, both directions, with segments
    dropped, copied and moved, the capture's end anywhere (with or without
    the FINs, a RST, or nothing), and a snap length: the compiled reassembly
    gives the pure one's events, in order, field for field (but the reasons
    it does not keep)."""
    pytest.importorskip("mqcodec._ext.capture_core")
    rnd = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    packets = []
    for k in range(2):
        c = TcpConversation(mss=rnd.choice([50, 100, 536]), client=("10.0.0.1", 40000 + k),
                            isn_client=rnd.choice([0, 0xFFFFFF00, 123456]), start_ns=10**18 + k)
        c.handshake()
        c.send(0, rnd.randbytes(rnd.randrange(1, 1500)), ack_each=rnd.random() < 0.5)
        c.send(1, rnd.randbytes(rnd.randrange(0, 800)), ack_each=rnd.random() < 0.5)
        ending = data.draw(st.sampled_from(["fin", "rst", "none"]), label="ending %d" % k)
        if ending == "fin":
            c.close(rnd.randrange(2))
        elif ending == "rst":
            c.packets.extend(c.reset(rnd.randrange(2)))
        packets += c.packets
    packets.sort(key=lambda p: p.ts_ns)
    frames = [(p.ts_ns, p.frame) for p in packets]
    for _ in range(data.draw(st.integers(0, 6), label="drops")):
        if len(frames) > 1:
            frames.pop(rnd.randrange(len(frames)))
    for _ in range(data.draw(st.integers(0, 4), label="copies")):
        frames.insert(rnd.randrange(len(frames) + 1), rnd.choice(frames))
    for _ in range(data.draw(st.integers(0, 6), label="moves")):
        frames.insert(rnd.randrange(len(frames) + 1), frames.pop(rnd.randrange(len(frames))))
    frames = frames[:data.draw(st.integers(max(1, len(frames) // 2), len(frames)), label="captured")]
    buf = io.BytesIO()
    write_pcap(buf, frames, 1, snaplen=data.draw(st.sampled_from([262144, 120, 80]), label="snaplen"))

    def view(impl):
        return [(type(e).__name__,) + tuple(None if f == "reason" else getattr(e, f) for f in e._fields)
                for e in iter_stream_events(buf.getvalue(), impl=impl)]

    assert view("c") == view("py")
