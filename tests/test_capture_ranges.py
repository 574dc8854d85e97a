"""Splittable captures (issue 17, part 1 and stage 1 of part 2): byte ranges read
every record exactly once, with global frame numbers, and stage-1 rows of the
ranges concatenate to the whole file's.

Oracles: an independent record walk written here (struct loops over the file
formats), the whole-file reader ``open_capture`` and ``decode_frame``.
"""
from __future__ import annotations

import gzip
import io
import random
import struct
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pytest

from mqcodec import DecodeError, synth
from mqcodec.capture.segments import TCP_SEGMENTS
from mqcodec.capture import decode_frame, open_capture
from mqcodec.capture import ranges as R
from mqcodec.capture.ipfrag import IPv4Fragment
from mqcodec.capture.packet import TCPSegment, UDPDatagram
from mqcodec.capture.ranges import (
    ByteRange, check_plan, find_boundary, frame_number_bases, plan_ranges, read_range, scan_ranges,
)
from mqcodec.capture.segments import conn_key, segment_batches
from mqcodec.capture.writer import (
    PcapngWriter, PcapWriter, TcpConversation, ethernet, fragment_ipv4, ipv4, sll, tcp,
)

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "captures" / "ibmmq_jms_client_1414.pcap"


# -- captures ---------------------------------------------------------------------------

def _synth(tmp: Path) -> Path:
    p = tmp / "synth.pcap"
    with open(p, "wb") as f:
        synth.write_capture(f, seed=3, messages=4)
    return p


def _sim_faults(tmp: Path) -> Path:
    """Retransmissions, reordering, a hole and IPv4 fragments, big-endian microsecond pcap."""
    conv = TcpConversation(("10.1.0.1", 40001), ("10.1.0.2", 1414), mss=200)
    pk = conv.handshake() + conv.send(0, bytes(range(256)) * 8) + conv.send(1, b"r" * 900)
    pk = pk[:6] + [pk[8], pk[6], pk[7]] + pk[9:] + [pk[5]]      # reorder, retransmit
    del pk[12]                                                  # a hole
    pk += conv.close()
    p = tmp / "faults.pcap"
    with open(p, "wb") as f:
        w = PcapWriter(f, byte_order=">", snaplen=65535)
        ts = 1_757_000_000_000_000_000
        for i, s in enumerate(pk):
            w.write(ts + i * 1000, s.frame)
        pkt = ipv4("10.1.0.1", "10.1.0.2", 6, tcp("10.1.0.1", "10.1.0.2", 40002, 1414, 5, 0, 0x18,
                                                   b"F" * 1200), ident=77)
        for j, frag in enumerate(fragment_ipv4(pkt, 400)):
            w.write(ts + 10**9 + j, ethernet(frag))
    return p


def _pcapng_multi(tmp: Path) -> Path:
    """Two sections (little-, then big-endian), interfaces of three link types and
    resolutions, one IDB in the middle of the first section."""
    buf = io.BytesIO()
    w = PcapngWriter(buf)
    e = w.add_interface(1, tsresol=9)
    s = w.add_interface(113, tsresol=6)
    ts = 1_757_000_000_000_000_000
    conv = TcpConversation(("10.2.0.1", 40003), ("10.2.0.2", 1414), mss=300)
    for i, p in enumerate(conv.handshake() + conv.send(0, b"x" * 1000)):
        w.write(e, ts + i, p.frame)
    r = w.add_interface(101, tsresol=0x80 | 20)          # raw IP, 2^-20 s, added mid-section
    conv2 = TcpConversation(("10.2.0.3", 40004), ("10.2.0.4", 1414), mss=250, link="raw")
    for i, p in enumerate(conv2.handshake() + conv2.send(1, b"y" * 700)):
        w.write(r, (ts // 10**9 << 20) + i, p.frame)
        w.write(s, ts // 1000 + i, sll(p.frame))
    w2 = PcapngWriter(buf, byte_order=">")
    e2 = w2.add_interface(1, tsresol=9)
    for i, p in enumerate(conv.send(1, b"z" * 500) + conv.close()):
        w2.write(e2, ts + 10**6 + i, p.frame)
    path = tmp / "multi.pcapng"
    path.write_bytes(buf.getvalue())
    return path


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranges")
    return {"shared": SHARED, "synth": _synth(tmp), "faults": _sim_faults(tmp), "pcapng": _pcapng_multi(tmp)}


# -- an independent oracle: record start offsets ---------------------------------------

def _record_starts(data: bytes) -> list[int]:
    """Start offset of every packet record/numbered block, walked here with struct."""
    starts = []
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        pos, order = 0, "<"
        while pos + 12 <= len(data):
            if data[pos:pos + 4] == b"\x0a\x0d\x0d\x0a":
                order = "<" if data[pos + 8:pos + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            btype, blen = struct.unpack_from(order + "II", data, pos)
            if btype in (2, 3, 6):
                starts.append(pos)
            pos += blen
        return starts
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    pos = 24
    while pos + 16 <= len(data):
        starts.append(pos)
        pos += 16 + struct.unpack_from(order + "I", data, pos + 8)[0]
    return starts


def _block_starts(data: bytes) -> list[int]:
    """pcapng: every block's start (the boundaries a range may begin at)."""
    out, pos, order = [], 0, "<"
    while pos + 12 <= len(data):
        if data[pos:pos + 4] == b"\x0a\x0d\x0d\x0a":
            order = "<" if data[pos + 8:pos + 12] == b"\x4d\x3c\x2b\x1a" else ">"
        out.append(pos)
        pos += struct.unpack_from(order + "I", data, pos + 4)[0]
    return out


def _read_cut(path, cuts, impl=None):
    """Frames of the ranges cut at ``cuts``, numbered through scans (counted by
    ``impl``) + prefix sum."""
    size = Path(path).stat().st_size
    bounds = [0, *cuts, size]
    rs = [ByteRange(i, bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    scans = scan_ranges(path, rs, impl=impl)
    assert check_plan(scans) == [], (cuts, scans)
    frames = []
    for r, base, s in zip(rs, frame_number_bases([s.numbers for s in scans]), scans):
        rr = read_range(path, r, first_number=base)      # finds its own boundary
        got = list(rr)
        assert (rr.first, rr.stop, rr.numbers) == (s.first, s.stop, s.numbers), (cuts, r, s)
        frames += got
    return frames


def _windows(size: int, width: int):
    """Every offset in windows at the start, the middle and the end (and nothing twice)."""
    out = set(range(0, min(size, width)))
    out |= set(range(max(0, size // 2 - width // 2), min(size, size // 2 + width // 2)))
    out |= set(range(max(0, size - width), size + 1))
    return sorted(out)


# -- boundaries -----------------------------------------------------------------------------

@pytest.mark.parametrize("name,width", [("shared", 3000), ("synth", None), ("faults", None), ("pcapng", None)])
def test_first_boundary_at_every_offset(captures, name, width, impl):
    path = captures[name]
    data = path.read_bytes()
    size = len(data)
    packets = set(_record_starts(data))
    starts = _block_starts(data) if name == "pcapng" else sorted(packets)
    offsets = range(size + 1) if width is None else _windows(size, width)
    scans = scan_ranges(path, [ByteRange(i, c, c + 1) for i, c in enumerate(offsets)], impl=impl)
    it = iter(starts + [size])
    nxt = next(it)
    for c, s in zip(offsets, scans):
        while nxt < c:
            nxt = next(it)
        expected = R.GLOBAL_HEADER_LEN if name != "pcapng" and c <= 24 else nxt
        assert s.first == expected, (name, c, s)
        # a one-byte range holds the record starting at c, if one does
        assert s.numbers == (1 if c in packets else 0), (name, c, s)


@pytest.mark.parametrize("name", ["shared", "synth", "faults", "pcapng"])
def test_two_ranges_at_many_offsets_read_every_record_once(captures, name, impl):
    path = captures[name]
    whole = list(open_capture(path))
    size = path.stat().st_size
    step = 1 if size < 20000 else 7
    offsets = [c for c in _windows(size, 600 if size > 20000 else size + 1)][::step]
    for c in offsets:
        assert _read_cut(path, [c], impl) == whole, c


@pytest.mark.parametrize("name", ["shared", "synth", "faults", "pcapng"])
def test_three_ranges_read_every_record_once(captures, name):
    path = captures[name]
    whole = list(open_capture(path))
    size = path.stat().st_size
    rnd = random.Random(17)
    cuts = [sorted(rnd.sample(range(size), 2)) for _ in range(60)]
    starts = _record_starts(path.read_bytes())
    cuts += [[s, s + 1] for s in starts[1:12]] + [[starts[2], starts[3]], [0, size], [size - 1, size]]
    # every offset of a window for the first cut, the second 1, 61 and 700 bytes later
    mid, half = size // 2, (150 if size < 50000 else 25)
    cuts += [[a, min(size, a + d)] for a in range(mid - half, mid + half) for d in (1, 61, 700)]
    for a, b in cuts:
        assert _read_cut(path, [a, b]) == whole, (a, b)


@pytest.mark.parametrize("chunk", [61, 100, 1500, 4096])
@pytest.mark.parametrize("name", ["shared", "synth", "faults"])
def test_compiled_counts_across_chunk_ends(captures, name, chunk, monkeypatch):
    """The compiled count walks the whole records of a chunk and leaves a record
    that crosses the chunk's end (or the file's) to the step that reads it: with
    chunks smaller and larger than the records, the scans are the pure walk's
    (counted there header by header) and the oracle's record starts."""
    path = captures[name]
    data = path.read_bytes()
    starts = _record_starts(data)
    plan = plan_ranges(path, max(1, len(data) // 5))
    pure = scan_ranges(path, plan, impl="py")
    monkeypatch.setattr(R, "CHUNK", chunk)
    assert scan_ranges(path, plan, impl="c") == pure
    assert [s.numbers for s in pure] == [sum(s.first <= x < s.stop for x in starts) for s in pure]
    assert sum(s.numbers for s in pure) == len(starts)
    # cut short inside the last record and inside the last record header
    for cut in (len(data) - 5, starts[-1] + 7):
        short = io.BytesIO(data[:cut])
        assert scan_ranges(short, plan_ranges(short, max(1, cut // 3)), impl="c") == \
            scan_ranges(short, plan_ranges(short, max(1, cut // 3)), impl="py")


def test_plan_ranges_and_small_ranges(captures):
    path = captures["shared"]
    size = path.stat().st_size
    plan = plan_ranges(path, 64 * 1024)
    assert [(r.start, r.end) for r in plan] == [(0, 65536), (65536, 131072), (131072, size)]
    assert plan_ranges(path) == [ByteRange(0, 0, size)]
    with pytest.raises(ValueError):
        plan_ranges(path, 0)
    # ranges of 1 KiB: nearly every range starts inside a record
    plan = plan_ranges(path, 1024)
    scans = scan_ranges(path, plan)
    assert check_plan(scans) == []
    frames = []
    for r, base in zip(plan, frame_number_bases([s.numbers for s in scans])):
        frames += list(read_range(path, r, first_number=base))
    assert frames == list(open_capture(path))


def test_gzip_is_one_range(captures, tmp_path):
    gz = tmp_path / "c.pcap.gz"
    gz.write_bytes(gzip.compress(captures["synth"].read_bytes()))
    assert plan_ranges(gz, 1000) == [ByteRange(0, 0, gz.stat().st_size)]
    other = [ByteRange(0, 0, 1000), ByteRange(1, 1000, gz.stat().st_size)]   # a plan cut anyway
    scans = scan_ranges(gz, other)
    assert scans[1].numbers == 0 and check_plan(scans) == []
    frames = [f for r in other for f in read_range(gz, r)]
    assert frames == list(open_capture(gz))
    assert scans[0].numbers == len(frames)


def test_frame_number_bases():
    assert frame_number_bases([]) == []
    assert frame_number_bases([5]) == [1]
    assert frame_number_bases([3, 0, 4, 2]) == [1, 4, 4, 8]
    assert frame_number_bases([3, 0, 4], first=10) == [10, 13, 13]
    rnd = random.Random(5)
    counts = [rnd.randrange(50) for _ in range(100)]
    bases = frame_number_bases(counts)
    assert all(bases[i + 1] - bases[i] == counts[i] for i in range(99))


def test_frame_numbers_are_global_with_custom_blocks(tmp_path):
    """pcapng Custom Blocks consume a frame number (tshark numbers them): the counts see them."""
    buf = io.BytesIO()
    w = PcapngWriter(buf)
    i = w.add_interface(1)
    conv = TcpConversation()
    for k, p in enumerate(conv.handshake() + conv.send(0, b"q" * 3000)):
        w.write(i, k, p.frame)
        if k % 3 == 0:
            w._block(0x00000BAD, struct.pack("<I", 32473) + b"custom")
    path = tmp_path / "custom.pcapng"
    path.write_bytes(buf.getvalue())
    whole = list(open_capture(path))
    assert whole[-1].number > len(whole)        # numbers skipped by the custom blocks
    size = path.stat().st_size
    for c in range(0, size, 3):
        assert _read_cut(path, [c]) == whole


# -- pcapng section state -------------------------------------------------------------------

def test_pcapng_range_knows_its_interfaces(captures):
    """A range starting after the mid-section IDB, or in the second (big-endian) section,
    reads link types and time resolutions right: its frames equal the whole file's."""
    path = captures["pcapng"]
    whole = {f.number: f for f in open_capture(path)}
    data = path.read_bytes()
    size = len(data)
    for c in _block_starts(data)[3:]:
        rr = read_range(path, ByteRange(0, c, size), first_number=1)
        got = list(rr)
        assert got, c
        base = next(n for n, f in whole.items() if f == got[0]._replace(number=n))
        assert [f._replace(number=f.number + base - 1) for f in got] == [whole[n] for n in range(base, base + len(got))]
    assert {f.linktype for f in whole.values()} == {1, 113, 101}


# -- hostile inputs -------------------------------------------------------------------------

def _embedded(tmp: Path) -> tuple[Path, int, int]:
    """A capture whose one packet carries, as its TCP payload, a pcap of tiny plausible
    records that ends exactly where the outer record ends (so the false chain rejoins
    the true one); returns (path, start, end) of that outer record."""
    ts = 1_757_000_000
    inner = b"".join(struct.pack("<IIII", ts + k, k, 4, 4) + b"\xee" * 4 for k in range(60))
    conv = TcpConversation(("10.3.0.1", 40005), ("10.3.0.2", 1414), mss=1400)
    pk = conv.handshake() + conv.send(0, b"a" * 500)
    # the outer frame: Ethernet + IPv4 + TCP headers, then the fake records
    evil = conv.send(0, inner)[0]
    pk += [evil] + conv.send(1, b"b" * 800) + conv.send(0, b"c" * 300) + conv.close()
    path = tmp / "embedded.pcap"
    with open(path, "wb") as f:
        w = PcapWriter(f)
        for k, p in enumerate(pk):
            w.write(ts * 10**9 + k * 1000, p.frame)
    data = path.read_bytes()
    starts = _record_starts(data)
    k = next(i for i, s in enumerate(starts) if data[s + 16:].find(inner) == 54)
    return path, starts[k], starts[k + 1]


def test_embedded_pcap_does_not_fool_the_finder(tmp_path):
    path, rec_start, rec_end = _embedded(tmp_path)
    data = path.read_bytes()
    assert data[rec_start + 16 + 54:rec_end].startswith(struct.pack("<I", 1_757_000_000))
    src = R._Source(str(path))
    prof = R._PcapProfile(src)
    fooled = 0
    for c in range(rec_start + 1, rec_end + 1):
        assert find_boundary(path, c) == rec_end, c
        # the naive finder (first confirmed chain at or after c) is fooled: the hostile
        # input really is one
        p = c
        while not (prof.plausible(src.read(p, 16)) >= 0 and prof.confirmed(src, p)):
            p += 1
        fooled += p != rec_end
    assert fooled > 50
    whole = list(open_capture(path))
    for c in range(rec_start - 40, rec_end + 40):
        assert _read_cut(path, [c]) == whole, c


def test_check_plan_detects_a_wrong_start():
    scans = [R.RangeScan(0, 24, 1000, 10), R.RangeScan(1, 1000, 2000, 8), R.RangeScan(2, 1990, 3000, 9)]
    assert check_plan(scans) == [2]
    assert check_plan(scans[:2]) == []
    empty = [R.RangeScan(0, 24, 5000, 30), R.RangeScan(1, 5000, 5000, 0), R.RangeScan(2, 5000, 6000, 3)]
    assert check_plan(empty) == []


def test_damage_names_structure_field_offset(captures, tmp_path, impl):
    data = bytearray(captures["synth"].read_bytes())
    starts = _record_starts(bytes(data))
    bad = starts[len(starts) // 2]
    order = "<" if bytes(data[:4]) in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    struct.pack_into(order + "I", data, bad + 8, 0xFFFFFFF0)     # incl_len: 4 GiB claimed
    path = tmp_path / "damaged.pcap"
    path.write_bytes(bytes(data))
    rng = ByteRange(0, bad - 300, bad + 5)
    tracemalloc.start()
    with pytest.raises(DecodeError) as ei:
        frames = []
        rr = read_range(path, rng)
        for f in rr:
            frames.append(f)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    e = ei.value
    assert (e.structure, e.field, e.offset) == ("pcap record header", "incl_len", bad + 8)
    assert peak < 8 * 1024 * 1024                          # nothing allocated for the claimed length
    # the range's complete frames before the damage are still yielded
    whole = list(open_capture(captures["synth"]))
    before = [i for i, s in enumerate(starts) if rng.start <= s < bad]
    assert before and [f.data for f in frames] == [whole[i].data for i in before]
    with pytest.raises(DecodeError) as ei:
        scan_ranges(path, [rng], impl=impl)
    assert (ei.value.field, ei.value.offset) == ("incl_len", bad + 8)
    assert ei.value.scans == [R.RangeScan(0, rr.first, bad, len(frames))]


def test_pcapng_damage_before_a_range(captures, tmp_path):
    data = bytearray(captures["pcapng"].read_bytes())
    blocks = _block_starts(bytes(data))
    b = blocks[5]
    blen = struct.unpack_from("<I", data, b + 4)[0]
    struct.pack_into("<I", data, b + blen - 4, blen + 4)    # trailing length disagrees
    path = tmp_path / "damaged.pcapng"
    path.write_bytes(bytes(data))
    with pytest.raises(DecodeError) as ei:
        list(read_range(path, ByteRange(1, blocks[8], len(data))))
    assert (ei.value.structure, ei.value.field, ei.value.offset) == ("pcapng block", "Block Total Length",
                                                                     b + blen - 4)


# -- stage 1 ----------------------------------------------------------------------------------

def _stage1(path, cuts, batch_rows=37):
    size = Path(path).stat().st_size
    bounds = [0, *cuts, size]
    rs = [ByteRange(i, bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    scans = scan_ranges(path, rs)
    batches = []
    for r, base, s in zip(rs, frame_number_bases([s.numbers for s in scans]), scans):
        sb = segment_batches(path, r, first_number=base, scan=s, batch_rows=batch_rows)
        for b in sb:
            assert 0 < b.num_rows <= batch_rows
            batches.append(b)
    return pa.Table.from_batches(batches, schema=TCP_SEGMENTS)


@pytest.mark.parametrize("name", ["shared", "synth", "faults", "pcapng"])
def test_stage1_rows_of_ranges_equal_the_whole_file(captures, name):
    path = captures[name]
    whole = _stage1(path, [], batch_rows=10**6)
    # the oracle: decode_frame over the whole-file reader
    expected = [r for r in map(decode_frame, open_capture(path))
                if isinstance(r, (TCPSegment, UDPDatagram, IPv4Fragment))]
    assert whole.num_rows == len(expected) > 0
    assert whole.column("frame_number").to_pylist() == [r.frame_number for r in expected]
    assert whole.column("payload").to_pylist() == [r.data if isinstance(r, IPv4Fragment) else r.payload
                                                   for r in expected]
    assert whole.column("kind").to_pylist() == [{TCPSegment: "tcp", UDPDatagram: "udp"}.get(type(r), "ipv4_fragment")
                                                for r in expected]
    tcp_rows = [r for r in expected if isinstance(r, TCPSegment)]
    t = whole.filter(pa.compute.equal(whole.column("kind"), "tcp"))
    assert t.column("seq").to_pylist() == [r.seq for r in tcp_rows]
    size = path.stat().st_size
    rnd = random.Random(3)
    cutsets = [[c] for c in rnd.sample(range(size), 25)] + [sorted(rnd.sample(range(size), 2)) for _ in range(25)]
    for cuts in cutsets:
        assert _stage1(path, cuts).equals(whole), cuts


def test_stage1_keys_and_fragments(captures):
    t = _stage1(captures["faults"], [], batch_rows=1000).to_pylist()
    tcp_rows = [r for r in t if r["kind"] == "tcp"]
    # both directions of a connection share one key; direction tells them apart
    keys = {(r["conn_key"]) for r in tcp_rows if r["sport"] == 40001 or r["dport"] == 40001}
    assert len(keys) == 1
    dirs = {(r["src"], r["direction"]) for r in tcp_rows if r["conn_key"] in keys}
    assert dirs == {("10.1.0.1", 0), ("10.1.0.2", 1)}
    assert conn_key(4, "10.1.0.2", 1414, "10.1.0.1", 40001) == (next(iter(keys)), 1)
    frags = [r for r in t if r["kind"] == "ipv4_fragment"]
    assert len(frags) == 4 and len({r["frag_key"] for r in frags}) == 1
    assert [r["frag_offset"] for r in frags] == [0, 376, 752, 1128]
    assert [r["more_fragments"] for r in frags] == [True, True, True, False]
    assert all(r["pair_key"] == tcp_rows[0]["pair_key"] for r in frags)
    assert sum(len(r["payload"]) for r in frags) == 20 + 1200      # TCP header + data


def _clock_jump(tmp: Path) -> tuple[Path, list[int], int]:
    """140 records, the 100th stamped three years later (a true record the finder's
    rules refuse); returns (path, record starts, index of the odd record)."""
    conv = TcpConversation(("10.4.0.1", 40006), ("10.4.0.2", 1414), mss=100)
    pk = conv.handshake() + conv.send(0, b"j" * 7000)
    path = tmp / "jump.pcap"
    ts = 1_757_000_000 * 10**9
    with open(path, "wb") as f:
        w = PcapWriter(f, snaplen=2000)
        for k, p in enumerate(pk[:140]):
            w.write(ts + k * 1000 + (3 * 365 * 86400 * 10**9 if k == 99 else 0), p.frame)
    return path, _record_starts(path.read_bytes()), 99


def test_a_record_breaking_the_rules_costs_no_record(tmp_path, impl):
    path, starts, k = _clock_jump(tmp_path)
    whole = list(open_capture(path))
    assert len(whole) == 140
    for c in range(starts[k - 14], starts[k + 2] + 1):
        assert find_boundary(path, c) == min(s for s in starts + [path.stat().st_size] if s >= c), c
    for c in range(starts[k - 2], starts[k + 1] + 1, 3):
        assert _read_cut(path, [c], impl) == whole, c


def test_bytes_without_records_raise(tmp_path):
    path, starts, _ = _clock_jump(tmp_path)
    data = bytearray(path.read_bytes())
    a = starts[50]
    data[a:a + 3000] = b"\xff" * 3000                 # longer than the longest record (16 + 2000)
    bad = tmp_path / "garbage.pcap"
    bad.write_bytes(bytes(data))
    with pytest.raises(DecodeError) as ei:
        find_boundary(bad, a + 100)
    assert (ei.value.structure, ei.value.offset) == ("pcap record header", a + 100)
    # the whole-file reader stops at the same damage, naming the field
    with pytest.raises(DecodeError) as ei:
        list(open_capture(bad))
    assert (ei.value.field, ei.value.offset) == ("incl_len", a + 8)


@pytest.mark.parametrize("name", ["shared", "faults"])
def test_reconcile_plan_repairs_a_wrong_start(captures, name, impl):
    path = captures[name]
    plan = plan_ranges(path, path.stat().st_size // 4)
    good = scan_ranges(path, plan, impl=impl)
    assert R.reconcile_plan(path, plan, good, impl=impl) == good
    # range 2 started on a false boundary 30 bytes into its true first record
    wrong = list(good)
    wrong[2] = R.RangeScan(2, good[2].first + 30, good[2].stop, good[2].numbers - 1)
    assert check_plan(wrong) == [2]
    fixed = R.reconcile_plan(path, plan, wrong, impl=impl)
    assert fixed == good and check_plan(fixed) == []


def test_stage1_yields_batches_as_they_fill(captures):
    """Bounded memory: the first batch comes out before the range is read (the reader
    has read no more than the frames it needed, plus one chunk)."""
    path = captures["shared"]
    size = path.stat().st_size
    sb = segment_batches(path, ByteRange(0, 0, size), batch_rows=5, chunk_size=4096)
    it = iter(sb)
    first = next(it)
    assert first.num_rows == 5
    assert sb.reader.frames < 60                      # of 695
    rest = sum(b.num_rows for b in it)
    assert 5 + rest == sb.counts["tcp segments"] + sb.counts["udp datagrams"] + sb.counts["ip fragments"] == 695


def test_embedded_pcapng_does_not_fool_the_walk(tmp_path):
    """A pcapng section (SHB, IDB, EPBs with agreeing lengths) inside a packet's payload."""
    inner = io.BytesIO()
    wi = PcapngWriter(inner)
    ii = wi.add_interface(1)
    for k in range(20):
        wi.write(ii, k, b"\xee" * 8)
    buf = io.BytesIO()
    w = PcapngWriter(buf)
    e = w.add_interface(1)
    conv = TcpConversation(("10.5.0.1", 40007), ("10.5.0.2", 1414), mss=1400)
    pk = conv.handshake() + conv.send(0, inner.getvalue()) + conv.send(1, b"k" * 300) + conv.close()
    for k, p in enumerate(pk):
        w.write(e, 1_757_000_000 * 10**9 + k, p.frame)
    path = tmp_path / "embedded.pcapng"
    path.write_bytes(buf.getvalue())
    whole = list(open_capture(path))
    assert len(whole) == len(pk)
    for c in range(path.stat().st_size + 1):
        assert _read_cut(path, [c]) == whole, c


def test_stage1_rows_before_damage_come_out(captures, tmp_path):
    data = bytearray(captures["synth"].read_bytes())
    starts = _record_starts(bytes(data))
    bad = starts[150]
    struct.pack_into("<I", data, bad + 8, 0xFFFFFFF0)
    path = tmp_path / "damaged.pcap"
    path.write_bytes(bytes(data))
    batches = []
    with pytest.raises(DecodeError) as ei:
        for b in segment_batches(path, ByteRange(0, 0, len(data)), batch_rows=1000):
            batches.append(b)
    assert (ei.value.field, ei.value.offset) == ("incl_len", bad + 8)
    rows = pa.Table.from_batches(batches).column("frame_number").to_pylist()
    assert rows and max(rows) == 150 and len(rows) == sum(
        isinstance(decode_frame(f), (TCPSegment, UDPDatagram, IPv4Fragment))
        for f in list(open_capture(captures["synth"]))[:150])


@pytest.mark.parametrize("split", [2048, 16384, 1 << 20])
def test_scan_of_a_damaged_pcap_stops_where_the_whole_file_reader_stops(tmp_path, split, impl):
    """Damage in a record header mid-file: the DecodeError carries ``scans``,
    the plan's scans up to the damaged range, which stops where the damaged
    record starts; their frame counts add up to the frames the whole-file
    reader yields before its error, and reading those ranges gives exactly
    those frames (the cluster engine converts them, as the local engine does)."""
    data = bytearray(_synth(tmp_path).read_bytes())
    pos, n = 24, 0
    while pos < len(data) * 0.55:
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
        n += 1
    struct.pack_into("<I", data, pos + 8, 0x7FFFFFFF)
    data = bytes(data)
    whole = []
    with pytest.raises(DecodeError) as whole_error:
        for frame in open_capture(io.BytesIO(data)):
            whole.append(frame)
    assert len(whole) == n
    ranges = plan_ranges(io.BytesIO(data), split)
    with pytest.raises(DecodeError) as scan_error:
        scan_ranges(io.BytesIO(data), ranges, impl=impl)
    scans = scan_error.value.scans
    assert scans[-1].stop == pos and scans[-1].first <= pos < ranges[len(scans) - 1].end
    assert all(s.stop < ranges[len(scans) - 1].end for s in scans) and len(scans) <= len(ranges)
    assert sum(s.numbers for s in scans) == n
    got = []
    for rng, base in zip(ranges, frame_number_bases([s.numbers for s in scans])):
        try:
            for frame in read_range(io.BytesIO(data), rng, first_number=base):
                got.append(frame)
        except DecodeError as exc:
            assert str(exc) == str(whole_error.value)
            break
    assert got == whole
