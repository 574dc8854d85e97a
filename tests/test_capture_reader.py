"""Capture reading checked against tshark (the outside reference).

The real capture is a Linux cooked v1 (SLL) pcap.  Every frame's number,
timestamp, lengths, addresses and ports must equal what tshark reports; the
same capture converted by editcap to pcapng and nanosecond pcap, written
big-endian from the pcap specification, gzip-compressed, or fed in arbitrary
chunks must give the same frames.

Tests that take ``impl`` hold both implementations of stage (a) to the
facts (mqcodec.capture.iter_frames: the pure parsers, and the compiled
capture core's record walk); the pure reader's own attributes (format,
parser counters, chunk sizes) are checked on it.
"""
from __future__ import annotations

import gzip
import io
import shutil
import struct
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from mqcodec.capture.frame import Frame
from mqcodec.capture.packet import TCPSegment, decode_frame
from mqcodec.capture.reader import CaptureParser, iter_frames, open_capture
from mqcodec.capture.writer import PcapWriter, TcpConversation, write_pcap

from capture_inputs import UnseekableFile
from conftest import CAPTURES

REAL = CAPTURES / "ibmmq_jms_client_1414.pcap"

FIELDS = ["frame.number", "frame.time_epoch", "frame.len", "frame.cap_len", "ip.src", "ip.dst",
          "tcp.srcport", "tcp.dstport", "tcp.seq_raw", "tcp.len"]


def tshark_fields(tshark, path, fields=FIELDS, extra=()):
    cmd = [tshark, "-r", str(path), "-T", "fields", "-E", "separator=|"]
    for f in fields:
        cmd += ["-e", f]
    cmd += list(extra)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [line.split("|") for line in out.splitlines()]


def epoch_to_ns(text: str) -> int:
    sec, _, frac = text.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def frames_of(path_or_bytes, impl="py", **kw):
    if impl == "py":
        return list(open_capture(path_or_bytes, **kw))
    assert not kw, "options of the pure reader"
    return list(iter_frames(path_or_bytes, impl=impl))


@pytest.fixture(scope="module")
def real_frames(impl):
    return frames_of(REAL, impl)


@pytest.fixture(scope="module")
def real_rows(tshark):
    return tshark_fields(tshark, REAL)


@pytest.mark.tshark
def test_real_capture_equals_tshark(real_frames, real_rows):
    assert len(real_frames) == len(real_rows) == 695
    for fr, row in zip(real_frames, real_rows):
        number, epoch, flen, caplen, src, dst, sport, dport, seq, tlen = row
        assert fr.number == int(number)
        assert fr.ts_ns == epoch_to_ns(epoch)
        assert fr.origlen == int(flen)
        assert fr.caplen == int(caplen) == len(fr.data)
        assert fr.linktype == 113
        seg = decode_frame(fr)
        assert isinstance(seg, TCPSegment)
        assert (seg.src, seg.dst, seg.sport, seg.dport) == (src, dst, int(sport), int(dport))
        assert seg.seq == int(seq)
        assert len(seg.payload) == int(tlen) and seg.missing == 0


def test_real_capture_known_values(real_frames):
    # capinfos: 695 packets, first 2025-09-13 11:11:34.591961 UTC, SLL (113)
    assert real_frames[0].ts_ns == 1757761894591961000
    assert real_frames[0].caplen == 92 and real_frames[0].origlen == 76


@pytest.mark.tshark
@pytest.mark.parametrize("fmt", ["pcapng", "nsecpcap"])
def test_editcap_conversions_same_frames(tmp_path, tshark, real_frames, fmt, impl):
    editcap = shutil.which("editcap")
    if editcap is None:
        pytest.skip("editcap not installed")
    out = tmp_path / ("x." + fmt)
    subprocess.run([editcap, "-F", fmt, str(REAL), str(out)], check=True, capture_output=True)
    frames = frames_of(out, impl)
    assert [f[:6] for f in frames] == [f[:6] for f in real_frames]
    if impl == "py":
        reader = open_capture(out)
        list(reader)
        assert reader.format == ("pcapng" if fmt == "pcapng" else "pcap")
    # gzip of the converted file as well
    gz = gzip.compress(out.read_bytes())
    assert [f[:6] for f in frames_of(gz, impl)] == [f[:6] for f in real_frames]


@pytest.mark.tshark
def test_big_endian_pcap_written_from_spec(tmp_path, tshark, real_frames, impl):
    out = tmp_path / "be.pcap"
    with open(out, "wb") as f:
        w = PcapWriter(f, 113, byte_order=">", snaplen=262144)
        for fr in real_frames:
            w.write(fr.ts_ns, fr.data, fr.origlen)
    assert out.read_bytes()[:4] == b"\xa1\xb2\xc3\xd4"
    rows = tshark_fields(tshark, out, ["frame.number", "frame.time_epoch", "frame.len", "frame.cap_len", "ip.src"])
    assert [(int(r[0]), epoch_to_ns(r[1]), int(r[2]), int(r[3])) for r in rows] == \
        [(f.number, f.ts_ns, f.origlen, f.caplen) for f in real_frames]
    assert [f[:6] for f in frames_of(out, impl)] == [f[:6] for f in real_frames]


def test_gzip_same_frames(tmp_path, real_frames, impl):
    gz = tmp_path / "x.pcap.gz"
    gz.write_bytes(gzip.compress(REAL.read_bytes()))
    assert frames_of(gz, impl) == real_frames
    if impl == "py":
        reader = open_capture(gz, chunk_size=4096)
        assert list(reader) == real_frames
        assert reader.parser.compressed
    # two concatenated gzip members are one stream (gzip(1) semantics)
    raw = REAL.read_bytes()
    two = gzip.compress(raw[:1000]) + gzip.compress(raw[1000:])
    assert frames_of(two, impl) == real_frames


def test_file_object_and_small_chunks(real_frames, impl):
    with open(REAL, "rb") as f:
        if impl == "py":
            assert list(open_capture(f, chunk_size=7)) == real_frames
        else:
            assert list(iter_frames(f, impl=impl)) == real_frames


@pytest.mark.parametrize("compressed", [False, True], ids=["pcap", "gzip"])
def test_a_socket_read_unbuffered(real_frames, impl, compressed):
    """A capture arriving on a socket read without a buffer (``makefile("rb",
    buffering=0)``: a raw file whose reads return what has arrived) in pieces
    of 500 bytes: the same frames.  (RawIOBase.read asks for a zeroed buffer of
    the read size, 1-4 MiB, per read; measured, that costs ~1 us a read: the
    allocator's zeroed pages are not touched.)"""
    import socket
    import threading

    data = REAL.read_bytes()
    data = gzip.compress(data) if compressed else data
    a, b = socket.socketpair()

    def send():
        with a:
            for i in range(0, len(data), 500):
                a.sendall(data[i:i + 500])

    sender = threading.Thread(target=send)
    sender.start()
    f = b.makefile("rb", buffering=0)
    assert isinstance(f, io.RawIOBase)
    try:
        assert list(iter_frames(f, impl=impl)) == real_frames
    finally:
        sender.join()
        f.close()
        b.close()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=40))
def test_any_chunking_gives_the_same_frames(cuts):
    raw = REAL.read_bytes()[:20000]
    expected = []
    p = CaptureParser()
    expected = p.feed(raw)
    p2 = CaptureParser()
    got, pos, i = [], 0, 0
    while pos < len(raw):
        n = cuts[i % len(cuts)]
        got += p2.feed(raw[pos:pos + n])
        pos += n
        i += 1
    assert got == expected
    assert p.close() == p2.close()


# --- pcapng written independently from the specification ----------------------

def _block(order, btype, body):
    body = body + b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(order + "II", btype, n) + body + struct.pack(order + "I", n)


def _opt(order, code, value):
    return struct.pack(order + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def _pcapng(order, frames, *, tsresol=None, tsoffset=None, linktype=1, extra_blocks=True):
    shb = _block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    opts = b""
    if tsresol is not None:
        opts += _opt(order, 9, bytes([tsresol]))
    if tsoffset is not None:
        opts += _opt(order, 14, struct.pack(order + "q", tsoffset))
    if opts:
        opts += _opt(order, 0, b"")
    idb = _block(order, 1, struct.pack(order + "HHI", linktype, 0, 0) + opts)
    out = shb + idb
    if extra_blocks:
        # a Name Resolution Block and an unassigned block type, both skipped
        out += _block(order, 4, struct.pack(order + "HH", 0, 0))
        out += _block(order, 0x00000099, b"unknown block body")
    for ticks, data in frames:
        out += _block(order, 6, struct.pack(order + "IIIII", 0, ticks >> 32, ticks & 0xFFFFFFFF,
                                              len(data), len(data)) + data)
    return out


def _sample_frames():
    c = TcpConversation()
    c.handshake()
    c.send(0, b"hello world" * 20)
    c.close()
    return [p.frame for p in c.packets]


RESOLUTIONS = [(None, None), (9, None), (3, 1_600_000_000), (0x80 | 20, None)]


def _ticks(tsresol, n):
    if tsresol == 3:
        return [170_000_123 + i for i in range(n)]
    if tsresol == 0x80 | 20:
        return [(1_700_000_000 << 20) + 12345 * i for i in range(n)]
    return [1_700_000_000_123_456 + 977 * i for i in range(n)]


@pytest.mark.tshark
def test_pcapng_byte_orders_and_resolutions(tmp_path, tshark, impl):
    """One file of eight sections: both byte orders x four if_tsresol /
    if_tsoffset settings (us default, ns, ms + offset, 2^-20)."""
    datas = _sample_frames()
    raw, want_data, tolerance = b"", [], []
    for order in ("<", ">"):
        for tsresol, tsoffset in RESOLUTIONS:
            raw += _pcapng(order, list(zip(_ticks(tsresol, len(datas)), datas)), tsresol=tsresol, tsoffset=tsoffset)
            want_data += datas
            # tshark prints 9 decimals: binary fractions are rounded by it
            tolerance += [1 if tsresol == (0x80 | 20) else 0] * len(datas)
    path = tmp_path / "x.pcapng"
    path.write_bytes(raw)
    rows = tshark_fields(tshark, path, ["frame.number", "frame.time_epoch", "frame.len"])
    frames = frames_of(path, impl)
    assert [(int(r[0]), int(r[2])) for r in rows] == [(f.number, f.origlen) for f in frames]
    for r, f, tol in zip(rows, frames, tolerance):
        assert abs(epoch_to_ns(r[1]) - f.ts_ns) <= tol
    assert frames[2 * len(datas)].ts_ns == (1_600_000_000 + 170_000) * 10**9 + 123 * 10**6  # ms + offset
    assert [f.data for f in frames] == want_data
    if impl == "py":
        reader = open_capture(path)
        list(reader)
        assert reader.parser.inner.sections == 8
        assert reader.parser.inner.skipped_blocks == {4: 8, 0x99: 8}


@pytest.mark.tshark
def test_pcapng_numbered_non_packet_blocks(tmp_path, tshark, impl):
    """tshark gives Custom Blocks and systemd Journal Export Blocks a frame
    number; ours skip them but keep the numbering aligned."""
    datas = _sample_frames()
    raw = _pcapng("<", [(1_700_000_000_000_000, datas[0])], extra_blocks=False)
    raw += _block("<", 0x00000BAD, struct.pack("<I", 32473) + b"abcd")
    raw += _block("<", 0x00000005, struct.pack("<III", 0, 0, 0))  # statistics: not numbered
    raw += _block("<", 0x00000009, b"__REALTIME_TIMESTAMP=1\nMESSAGE=x\n")
    raw += _block("<", 0x00000006, struct.pack("<IIIII", 0, 0, 5, len(datas[1]), len(datas[1])) + datas[1])
    path = tmp_path / "n.pcapng"
    path.write_bytes(raw)
    rows = tshark_fields(tshark, path, ["frame.number", "frame.len"])
    assert [r[0] for r in rows] == ["1", "2", "3", "4"]
    assert [(f.number, f.origlen) for f in frames_of(path, impl)] == [(1, int(rows[0][1])), (4, int(rows[3][1]))]


@pytest.mark.tshark
def test_pcapng_multiple_sections_and_spb(tmp_path, tshark, impl):
    datas = _sample_frames()
    sec1 = _pcapng("<", [(1_700_000_000_000_000 + i, d) for i, d in enumerate(datas[:3])])
    # second section: big-endian, SLL2? no -- Ethernet again with ns resolution,
    # then a Simple Packet Block (no timestamp)
    sec2 = _pcapng(">", [(1_800_000_000_000_000_000 + i, d) for i, d in enumerate(datas[3:5])], tsresol=9,
                   extra_blocks=False)
    spb = _block(">", 3, struct.pack(">I", len(datas[5])) + datas[5])
    path = tmp_path / "multi.pcapng"
    path.write_bytes(sec1 + sec2 + spb)
    rows = tshark_fields(tshark, path, ["frame.number", "frame.len", "frame.time_epoch"])
    frames = frames_of(path, impl)
    assert len(rows) == len(frames) == 6
    assert [epoch_to_ns(r[2]) for r in rows[:5]] == [f.ts_ns for f in frames[:5]]
    assert rows[5][2] == ""  # a Simple Packet Block has no timestamp
    assert [(int(r[0]), int(r[1])) for r in rows] == [(f.number, f.origlen) for f in frames]
    assert [f.data for f in frames] == datas[:6]
    assert frames[3].ts_ns == 1_800_000_000_000_000_000
    assert frames[5].ts_ns == 0


def test_snaplen_cut_records(impl):
    c = TcpConversation()
    c.handshake()
    c.send(0, bytes(range(256)) * 8)
    buf = io.BytesIO()
    write_pcap(buf, c.packets, c.linktype, snaplen=100)
    frames = frames_of(buf.getvalue(), impl)
    big = [f for f in frames if f.origlen > 100]
    assert big and all(f.caplen == 100 == len(f.data) for f in big)
    seg = decode_frame(big[0])
    # 14 Ethernet + 20 IPv4 + 20 TCP = 54 bytes of headers, 46 payload bytes kept
    assert len(seg.payload) == 46 and seg.missing == big[0].origlen - 100


def test_nanosecond_writer_round_trip(impl):
    c = TcpConversation(start_ns=1_700_000_000_123_456_789, step_ns=1)
    c.handshake()
    for ns in (False, True):
        buf = io.BytesIO()
        write_pcap(buf, c.packets, c.linktype, nanosecond=ns)
        frames = frames_of(buf.getvalue(), impl)
        want = [p.ts_ns if ns else p.ts_ns // 1000 * 1000 for p in c.packets]
        assert [f.ts_ns for f in frames] == want
        assert all(isinstance(f, Frame) for f in frames)


@pytest.mark.tshark
def test_thiszone_is_ignored_like_tshark(tmp_path, tshark, real_frames, impl):
    raw = bytearray(REAL.read_bytes()[:24 + 16 + real_frames[0].caplen])
    struct.pack_into("<i", raw, 8, 3600)  # thiszone: one hour
    path = tmp_path / "tz.pcap"
    path.write_bytes(bytes(raw))
    (row,) = tshark_fields(tshark, path, ["frame.time_epoch"])
    assert frames_of(path, impl)[0].ts_ns == epoch_to_ns(row[0]) == real_frames[0].ts_ns


@pytest.mark.tshark
def test_pcapng_obsolete_packet_block(tmp_path, tshark, impl):
    datas = _sample_frames()
    raw = _pcapng("<", [], tsresol=6, extra_blocks=False)
    ticks = 1_700_000_000_654_321
    for i, d in enumerate(datas[:2]):
        # Packet Block (type 2): Interface ID (2), Drops Count (2), Timestamp (8), CapLen, Len, data
        raw += _block("<", 2, struct.pack("<HHIIII", 0, 0, (ticks + i) >> 32, (ticks + i) & 0xFFFFFFFF,
                                          len(d), len(d)) + d)
    path = tmp_path / "pb.pcapng"
    path.write_bytes(raw)
    rows = tshark_fields(tshark, path, ["frame.number", "frame.time_epoch", "frame.len", "tcp.srcport"])
    frames = frames_of(path, impl)
    assert [(int(r[0]), epoch_to_ns(r[1]), int(r[2])) for r in rows] == [(f.number, f.ts_ns, f.origlen) for f in frames]
    assert [f.data for f in frames] == datas[:2]


def _raw_packets(v6=False):
    kw = {"client": ("2001:db8::1", 40000), "server": ("2001:db8::2", 1414)} if v6 else {}
    c = TcpConversation(link="raw", **kw)
    c.handshake()
    c.send(0, b"raw link")
    return [p.frame for p in c.packets]


RAW_LINKS = [
    (12, lambda p: p, False),       # DLT_RAW on some BSDs
    (14, lambda p: p, False),       # DLT_RAW on OpenBSD
    (101, lambda p: p, True),       # LINKTYPE_RAW, IPv6 inside
    (228, lambda p: p, False),      # LINKTYPE_IPV4
    (229, lambda p: p, True),       # LINKTYPE_IPV6
    (0, lambda p: struct.pack("<I", 30 if p[0] >> 4 == 6 else 2) + p, True),   # NULL, little-endian host
    (0, lambda p: struct.pack(">I", 2) + p, False),                           # NULL, big-endian host
    (108, lambda p: struct.pack(">I", 24 if p[0] >> 4 == 6 else 2) + p, True),  # OpenBSD LOOP
]


@pytest.mark.tshark
def test_raw_and_loopback_link_types_equal_tshark(tmp_path, tshark, impl):
    """One pcapng, one interface per link type; tshark must see the same
    addresses, ports and payload lengths as we do."""
    o = "<"
    raw = _block(o, 0x0A0D0D0A, struct.pack(o + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    for linktype, _, _ in RAW_LINKS:
        raw += _block(o, 1, struct.pack(o + "HHI", linktype, 0, 0))
    expected_v6, expected_lt = [], []
    for if_id, (linktype, wrap, v6) in enumerate(RAW_LINKS):
        for i, p in enumerate(_raw_packets(v6)):
            fr = wrap(p)
            raw += _block(o, 6, struct.pack(o + "IIIII", if_id, 0, i, len(fr), len(fr)) + fr)
            expected_v6.append(v6)
            expected_lt.append(linktype)
    path = tmp_path / "links.pcapng"
    path.write_bytes(raw)
    rows = tshark_fields(tshark, path, ["ip.src", "ipv6.src", "tcp.srcport", "tcp.len", "frame.interface_id"])
    frames = frames_of(path, impl)
    ours = [decode_frame(f) for f in frames]
    assert [f.linktype for f in frames] == expected_lt
    assert len(rows) == len(ours) == len(expected_v6)
    for r, s_, v6 in zip(rows, ours, expected_v6):
        assert (s_.src, s_.sport, len(s_.payload)) == (r[1] if v6 else r[0], int(r[2]), int(r[3]))
    assert [s_.payload for s_ in ours if s_.payload] == [b"raw link"] * len(RAW_LINKS)


VLAN_STACKS = [[0x8100], [0x88A8, 0x8100], [0x9100, 0x8100], [0x8100, 0x8100, 0x8100]]


@pytest.mark.tshark
def test_vlan_tags_equal_tshark(tmp_path, tshark, impl):
    from mqcodec.capture.writer import ethernet, ipv4, tcp
    path = tmp_path / "v.pcap"
    stacks = []
    with open(path, "wb") as f:
        w = PcapWriter(f, 1)
        for i, tpids in enumerate(VLAN_STACKS):
            vids = [10 * (j + 1) + i for j in range(len(tpids))]
            seg = tcp("10.1.1.1", "10.2.2.2", 40000, 1414, 1, 0, 0x18, b"tagged")
            w.write(10**18 + i, ethernet(ipv4("10.1.1.1", "10.2.2.2", 6, seg), vlans=vids, tpids=tpids))
            stacks.append(vids)
    # tshark dissects 0x88A8 tags as ieee8021ad (outermost), others as vlan
    rows = tshark_fields(tshark, path, ["ieee8021ad.id", "vlan.id", "ip.src", "tcp.len"])
    for row, vids, frame in zip(rows, stacks, frames_of(path, impl)):
        theirs = [int(v) for field in row[:2] if field for v in field.split(",")]
        seg = decode_frame(frame)
        assert theirs == list(seg.vlans) == vids
        assert (seg.src, len(seg.payload)) == (row[2], int(row[3]))


@pytest.mark.parametrize("form", ["bytes", "stream", "gzip stream"])
def test_damaged_files_from_a_stream_end_alike(real_frames, impl, form):
    """The same damage read from a stream that cannot seek (plain or gzip): the same
    frames and error, and the stream is read once (the compiled walk hands the rest
    over to the pure reader from where it stopped)."""
    from mqcodec.errors import DecodeError

    def source(data):
        data = gzip.compress(data) if form == "gzip stream" else data
        return (data if form == "bytes" else UnseekableFile(data)), len(data)

    raw = REAL.read_bytes()
    src, n = source(raw[:-10])
    assert frames_of(src, impl) == real_frames[:-1]
    assert form == "bytes" or src.read_bytes == n
    bad = bytearray(raw)
    struct.pack_into("<I", bad, 24 + 16 + 92 + 8, 10**9)
    src, n = source(bytes(bad))
    with pytest.raises(DecodeError) as e:
        frames_of(src, impl)
    assert (e.value.structure, e.value.field, e.value.offset) == ("pcap record header", "incl_len", 140)
    assert form == "bytes" or src.read_bytes == n
    src, n = source(b"\xd4\xc3\xb2\xa1\x03\x00" + raw[6:])   # a version the core does not read
    with pytest.raises(DecodeError) as e:
        frames_of(src, impl)
    assert (e.value.structure, e.value.field) == ("pcap global header", "version_major")
    assert form == "bytes" or src.read_bytes == n


@pytest.mark.parametrize("damage", ["magic", "short length", "cut 20", "cut 6"])
def test_a_damaged_first_section_header_ends_alike(impl, damage):
    """Damage in a pcapng's first Section Header Block, before the core took any
    section: both implementations raise the pure reader's error."""
    from mqcodec.errors import DecodeError

    data = bytearray(_pcapng("<", [(1_700_000_000_123_456, f) for f in _sample_frames()]))
    if damage == "magic":
        data[8:12] = b"\x78\x56\x34\x12"
    elif damage == "short length":
        struct.pack_into("<I", data, 4, 20)
    data = bytes(data[:20] if damage == "cut 20" else data[:6] if damage == "cut 6" else data)
    with pytest.raises(DecodeError) as ref:
        frames_of(data, "py")
    with pytest.raises(DecodeError) as ours:
        frames_of(data, impl)
    assert (ours.value.structure, ours.value.field, ours.value.offset, str(ours.value)) == \
        (ref.value.structure, ref.value.field, ref.value.offset, str(ref.value))


def test_cut_and_damaged_files_end_alike(real_frames, impl):
    """A file cut inside its last record gives the records before it; a
    record header whose incl_len passes the limit is a DecodeError naming the
    structure, the field and its offset (the second record's header starts
    at 24 + 16 + the first record's 92 bytes; incl_len is its bytes 8-11).
    The compiled walk hands a damaged file over to the pure reader, so both
    end with the same frames and the same error."""
    from mqcodec.errors import DecodeError

    raw = REAL.read_bytes()
    assert frames_of(raw[:-10], impl) == real_frames[:-1]
    assert frames_of(raw[:30], impl) == []
    bad = bytearray(raw)
    struct.pack_into("<I", bad, 24 + 16 + 92 + 8, 10**9)
    with pytest.raises(DecodeError) as e:
        frames_of(bytes(bad), impl)
    assert (e.value.structure, e.value.field, e.value.offset) == ("pcap record header", "incl_len", 140)
