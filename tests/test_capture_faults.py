"""Capture fault injection for pcap -> Parquet (docs/ROBUSTNESS.md).

Every damaged capture is built from the packets of a simulator capture whose
clean conversion is the reference.  For each damaged conversion:

* it never raises once the file header is read (a damaged file header is one
  ``DecodeError`` naming the pcap global header; the CLI prints one line);
* every message decoded without error is identical, column by column (all
  protocol columns: kind, MQMD, chain, PCF, MSMQ, length), to a message of the
  clean run -- nothing is invented;
* every clean message whose frames avoid the damaged frames is present and
  identical -- nothing is lost.  A message's frames are taken as the frames
  from its first frame (the ``frame`` column) to the first frame of the next
  message in the same TCP direction (a conservative over-approximation), so
  "avoids the damage" is computed from the packets we damaged, not from our
  decoder;
* the summary is consistent (messages == rows, errors == error rows) and
  counts the damage (gap bytes computed from the frame lengths, skipped and
  malformed frames, pcapng blocks, file errors).
"""
import io
import random
import struct
import subprocess
import sys
from collections import Counter

import pyarrow as pa
import pytest

from mqcodec import synth
from mqcodec.capture.writer import PcapngWriter, PcapWriter, checksum, ethernet, ipv4, tcp
from mqcodec.errors import DecodeError
from mqcodec.convert import ConvertOptions, Converter, convert
from mqcodec.convert.sinks import TableCollector, read_table

LOCATION = {"message_key", "capture", "frame", "ts", "src_ip", "src_port", "dst_ip", "dst_port", "tcp_stream",
            "stream_offset", "raw", "overlap_conflict", "call_key",   # call_key: from the capture index and frame (docs/tables.md)
            # context, not content: the queue of a message follows its conversation's MQOPEN, and who
            # its connection's INITIAL_DATA, USERID_DATA and MQCONN, which the damage may have cost
            # (mq_calls, docs/tables.md "Queues")
            "queue_name", "queue_manager", "channel_name", "user_id", "appl_name"}
INF = float("inf")


# --------------------------------------------------------------------------- helpers
def _pcap(frames, snaplen=262144) -> bytes:
    """frames: iterable of (ts_ns, frame bytes)."""
    f = io.BytesIO()
    w = PcapWriter(f, nanosecond=True, snaplen=snaplen)
    for ts, data in frames:
        w.write(ts, data)
    return f.getvalue()


def _run(data, *, captures=None, **options):
    """Convert capture bytes (or several) in memory; (rows, summary, report).
    The default capture pipeline (the compiled core when built); the pure
    one with ``capture_impl="py"``."""
    tables = TableCollector()
    conv = Converter(tables, ConvertOptions(**options))
    for i, c in enumerate(captures or [data]):
        conv.add_capture(c, name="c%d" % i)
    rows = tables.rows()
    report = conv.report()
    s = report["summary"]
    # the summary's counters agree with the rows
    assert s.get("messages", 0) == len(rows)
    assert s.get("errors", 0) == sum(r["error"] is not None for r in rows)
    assert all(r["error"] is None or r["raw"] is not None for r in rows)
    return rows, s, report


def _key(r):
    return repr(tuple((k, r[k]) for k in sorted(r) if k not in LOCATION))


def _direction(r):
    return (r["src_ip"], r["src_port"], r["dst_ip"], r["dst_port"])


def _frame_dir(frame: bytes):
    """(src, sport, dst, dport) of an Ethernet/IPv4 TCP or UDP frame, read with
    struct from the bytes we wrote (RFC 791 / RFC 793 offsets)."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 15) * 4
    src = ".".join(map(str, frame[26:30]))
    dst = ".".join(map(str, frame[30:34]))
    sport, dport = struct.unpack_from("!HH", frame, 14 + ihl)
    return (src, sport, dst, dport)


class Clean:
    def __init__(self, seed, messages):
        self.packets = synth.generate(seed, messages)
        self.data = _pcap((p.ts_ns, p.frame) for p in self.packets)
        self.rows, self.summary, _ = _run(self.data)
        assert self.summary.get("errors", 0) == 0 and not self.summary.get("gaps")
        self.dirs = [_frame_dir(p.frame) for p in self.packets]  # index i = frame i + 1
        # span of each clean message: [its first frame, first frame of the next one in its direction]
        by_dir = {}
        for r in self.rows:
            by_dir.setdefault(_direction(r), []).append(r)
        self.spans = []
        for d, rs in by_dir.items():
            if rs[0]["tcp_stream"] is None:  # UDP pings: one frame each
                self.spans += [(r, d, r["frame"], r["frame"]) for r in rs]
                continue
            rs.sort(key=lambda r: r["stream_offset"])
            for i, r in enumerate(rs):
                end = rs[i + 1]["frame"] if i + 1 < len(rs) else INF
                self.spans.append((r, d, r["frame"], end))

    def exposed(self, damaged, *, connection=False, after=False):
        """Clean messages whose frames may include a damaged frame (1-based clean
        frame numbers).  ``connection``: damage to a frame harms both
        directions of its connection; ``after``: everything after it too
        (for flags that may end the connection)."""
        out = []
        for r, d, start, end in self.spans:
            for f in damaged:
                fd = self.dirs[f - 1]
                same = fd == d or (connection and fd is not None and fd == (d[2], d[3], d[0], d[1]))
                if fd is None and r["tcp_stream"] is not None:
                    same = False
                if same and (end >= f if after else start <= f <= end):
                    out.append(r)
                    break
        return out


_CLEAN = {}


def clean(seed=4, messages=30) -> Clean:
    if (seed, messages) not in _CLEAN:
        _CLEAN[(seed, messages)] = Clean(seed, messages)
    return _CLEAN[(seed, messages)]


def check(c: Clean, rows, damaged, **kw):
    """The two invariants; returns the number of clean messages allowed to be missing."""
    clean_good = {_key(r) for r in c.rows if r["error"] is None}
    for r in rows:
        if r["error"] is None:
            assert _key(r) in clean_good, "a message decoded in the damaged run is not in the clean run: %r" % (
                {k: r[k] for k in ("protocol", "kind", "frame", "stream_offset", "length")},)
    exposed = {id(r) for r in c.exposed(damaged, **kw)}
    required = Counter(_key(r) for r in c.rows if id(r) not in exposed)
    got = Counter(_key(r) for r in rows if r["error"] is None)
    missing = required - got
    assert not missing, "%d clean messages away from the damage are missing or changed" % sum(missing.values())
    return len(exposed)


def _data_frames(c: Clean):
    return [i for i, p in enumerate(c.packets) if p.length > 0 and c.dirs[i] is not None and c.dirs[i][1] != 3527]


# --------------------------------------------------------------------------- file cut
@pytest.mark.parametrize("cut", [0, 1, 3, 4, 10, 20, 23])
def test_cut_inside_the_file_header_is_one_decode_error(cut):
    data = clean().data[:cut]
    with pytest.raises(DecodeError) as ei:
        _run(data)
    assert ei.value.structure == "pcap global header"
    assert 0 <= ei.value.offset < 24      # the classic pcap global header is 24 bytes


def test_cut_right_after_the_file_header_converts_zero_frames():
    rows, s, report = _run(clean().data[:24])
    assert rows == [] and s["frames"] == 0 and s.get("captures cut short", 0) == 0


def test_cli_file_header_damage_is_one_line_and_non_zero(tmp_path):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(clean().data[:13])
    p = subprocess.run([sys.executable, "-m", "mqcodec", "pcap2parquet", str(bad), "-o", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr
    assert "pcap global header" in lines[0]


@pytest.mark.parametrize("seed", range(20))
def test_cut_at_random_positions(seed):
    c = clean(6, 15)
    rnd = random.Random(seed)
    n = rnd.randrange(25, len(c.data))
    rows, s, report = _run(c.data[:n])
    # frames wholly inside the cut, computed from the record sizes we wrote
    end, whole = 24, 0                     # end of the last whole record
    while end + 16 + len(c.packets[whole].frame) <= n:
        end += 16 + len(c.packets[whole].frame)
        whole += 1
    assert s["frames"] == whole
    assert s.get("captures cut short", 0) == (0 if end == n else 1)
    check(c, rows, set(range(whole + 1, len(c.packets) + 1)), after=True)


# --------------------------------------------------------------------------- TCP damage
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_drop_duplicate_reorder(seed):
    c = clean()
    rnd = random.Random(seed)
    dropped = set(rnd.sample(_data_frames(c), 3))
    order = []
    for i in range(len(c.packets)):
        if i not in dropped:
            order.append(i)
            if rnd.random() < 0.05:
                order.append(i)
    moved = set()
    for _ in range(12):
        j = rnd.randrange(len(order) - 3)
        k = j + rnd.randrange(1, 3)
        order[j], order[k] = order[k], order[j]
        moved |= {order[j], order[k]}
    rows, s, _ = _run(_pcap((c.packets[i].ts_ns, c.packets[i].frame) for i in order))
    assert s["gaps"] >= 1 and s["gap bytes"] >= min(c.packets[i].length for i in dropped)
    # reordering (within 2 places) and duplication lose nothing: only the dropped
    # segments' messages may be missing
    n = check(c, rows, {i + 1 for i in dropped})
    assert n <= 3 * 2


def _retransmit(dirs, offset, length, rnd, seq_base):
    """A TCP segment of the same connection covering [offset, offset+length) of
    the payload stream with DIFFERENT (random) bytes."""
    src, sport, dst, dport = dirs
    payload = bytes(rnd.randrange(256) for _ in range(length))
    seg = tcp(src, dst, sport, dport, seq_base + offset, 0, 0x18, payload)
    return ethernet(ipv4(src, dst, 6, seg, ident=60000))


@pytest.mark.parametrize("when", ["late", "early"])
def test_overlapping_retransmissions_with_different_bytes(when):
    """A retransmission overlapping the second half of one segment and the first
    half of the next, with other bytes: delivered bytes are never replaced, so
    a late one changes nothing; an early one (before the originals) wins for
    the bytes it covers (docs/capture.md rule 4) and only the messages there
    may be lost."""
    c = clean()
    rnd = random.Random(7)
    # pairs of consecutive data segments of one direction
    pairs = []
    for i in _data_frames(c):
        j = next((k for k in range(i + 1, len(c.packets)) if c.dirs[k] == c.dirs[i] and c.packets[k].length), None)
        if j is not None and c.packets[j].seq == (c.packets[i].seq + c.packets[i].length) & 0xFFFFFFFF:
            pairs.append((i, j))
    chosen = rnd.sample(pairs, 4)
    extra = {}
    for i, j in chosen:
        a, b = c.packets[i], c.packets[j]
        half = a.length // 2
        frame = _retransmit(c.dirs[i], half, (a.length - half) + b.length // 2, rnd, a.seq)
        extra.setdefault(j if when == "late" else i, []).append(frame)
    out = []
    for k, p in enumerate(c.packets):
        if when == "early":
            out += [(p.ts_ns, f) for f in extra.get(k, [])]
        out.append((p.ts_ns, p.frame))
        if when == "late":
            out += [(p.ts_ns, f) for f in extra.get(k, [])]
    rows, s, report = _run(_pcap(out))
    # the differing copies are counted per connection and flag the rows built from those bytes
    if when == "late":
        assert s["conflicting overlaps"] == 4
    else:  # the early copy is compared with the originals' overlapping parts when they arrive
        assert 4 <= s["conflicting overlaps"] <= 8
    per_stream = report["captures"][0]["conflicting overlaps by tcp_stream"]
    assert sum(per_stream.values()) == s["conflicting overlaps"]
    assert s["connections with conflicting overlaps"] == len(per_stream)
    assert any(r["overlap_conflict"] for r in rows)
    if when == "late":
        assert sorted(_key(r) for r in rows) == sorted(_key(r) for r in c.rows)
        # flagged: exactly the rows whose bytes meet a retransmitted range (first copy kept)
        ranges = {}
        for i, j in chosen:
            a, b = c.packets[i], c.packets[j]
            ranges.setdefault(c.dirs[i], []).append((a.seq + a.length // 2, (a.length - a.length // 2) + b.length // 2))
        seq0 = {}
        for p, d in zip(c.packets, c.dirs):
            if d is not None and p.flags & 0x02 and d not in seq0:
                seq0[d] = (p.seq + 1) & 0xFFFFFFFF
        for r in rows:
            d = _direction(r)
            hit = any(r["stream_offset"] < ((seq - seq0[d]) & 0xFFFFFFFF) + n
                      and ((seq - seq0[d]) & 0xFFFFFFFF) < r["stream_offset"] + r["length"]
                      for seq, n in ranges.get(d, ()))
            assert r["overlap_conflict"] == hit, r
    else:
        damaged = {i + 1 for pair in chosen for i in pair}
        n = check(c, rows, damaged)
        assert n <= 4 * 2 * 2


@pytest.mark.parametrize("snaplen", [96, 200])
def test_snap_length(snaplen):
    c = clean()
    rows, s, _ = _run(_pcap(((p.ts_ns, p.frame) for p in c.packets), snaplen=snaplen))
    cut = [i for i, p in enumerate(c.packets) if len(p.frame) > snaplen]
    tcp_cut = [i for i in cut if c.dirs[i] and c.dirs[i][1] != 3527 and c.dirs[i][3] != 3527]
    # every byte a frame lost to the snap length is a gap byte (the headers are 54 bytes)
    assert s["gap bytes"] == sum(len(c.packets[i].frame) - snaplen for i in tcp_cut)
    assert s["errors"] >= 1 and s["frames"] == len(c.packets)
    n = check(c, rows, {i + 1 for i in cut})
    # messages that fit in frames under the snap length survive (MSMQ acks, MQ replies)
    assert len(rows) - s["errors"] >= len(c.rows) - n


# --------------------------------------------------------------------------- header damage
def _damage(c, rnd, count, fn):
    idx = sorted(rnd.sample(_data_frames(c), count))
    frames = [p.frame for p in c.packets]
    for i in idx:
        frames[i] = fn(bytearray(frames[i]), rnd)
    return idx, _pcap((p.ts_ns, f) for p, f in zip(c.packets, frames))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_flips_in_link_and_ip_headers(seed):
    c = clean()
    rnd = random.Random(seed)

    def flip(f, rnd):
        for _ in range(rnd.randrange(1, 4)):
            f[rnd.randrange(34)] ^= 1 << rnd.randrange(8)
        return bytes(f)

    idx, data = _damage(c, rnd, 8, flip)
    rows, s, _ = _run(data)
    check(c, rows, {i + 1 for i in idx})


def test_wrong_ipv4_checksum_is_not_validated():
    """Like tshark's default, the IPv4 Header Checksum is not verified: every
    frame with a wrong one converts as before."""
    c = clean()
    frames = []
    for p in c.packets:
        f = bytearray(p.frame)
        f[24] ^= 0x5A
        frames.append((p.ts_ns, bytes(f)))
    rows, s, _ = _run(_pcap(frames))
    assert sorted(_key(r) for r in rows) == sorted(_key(r) for r in c.rows)


def _ihl_small(f, rnd):
    f[14] = 0x40 | rnd.randrange(5)
    return bytes(f)


def _total_short(f, rnd):
    tl = struct.unpack_from("!H", f, 16)[0]
    struct.pack_into("!H", f, 16, 40 + (tl - 40) // 2)
    struct.pack_into("!H", f, 24, 0)
    struct.pack_into("!H", f, 24, checksum(bytes(f[14:34])))
    return bytes(f)


def _total_below_header(f, rnd):
    struct.pack_into("!H", f, 16, rnd.randrange(20))
    return bytes(f)


def _ethertype(f, rnd):
    f[12:14] = rnd.choice((b"\x88\xcc", b"\x08\x06", b"\x12\x34"))
    return bytes(f)


def _ethernet_cut(f, rnd):
    return bytes(f[:rnd.randrange(14)])


def _tcp_offset(f, rnd):
    f[46] = (rnd.randrange(5) << 4) | (f[46] & 15)
    return bytes(f)


@pytest.mark.parametrize("name,fn,counter", [
    ("IHL < 5", _ihl_small, "frames malformed"),
    ("Total Length below the header", _total_below_header, "frames malformed"),
    ("Total Length short", _total_short, None),
    ("wrong ethertype", _ethertype, "frames skipped"),
    ("truncated Ethernet", _ethernet_cut, None),
    ("TCP Data Offset < 5", _tcp_offset, "frames malformed"),
])
def test_specific_header_damage(name, fn, counter):
    c = clean()
    rnd = random.Random(name)
    idx, data = _damage(c, rnd, 6, fn)
    rows, s, _ = _run(data)
    assert s["frames"] == len(c.packets)
    if counter:
        assert s.get(counter, 0) == 6, s
    elif fn is _ethernet_cut:
        assert s.get("frames skipped", 0) + s.get("frames malformed", 0) == 6, s
    else:  # payload cut by the IP length: lost bytes become gaps
        assert s.get("gaps", 0) >= 1
    assert s.get("gaps", 0) >= 1
    n = check(c, rows, {i + 1 for i in idx})
    assert n <= 6 * 3


def test_ipv4_total_length_beyond_an_uncut_frame_swallows_nothing():
    """Regression (capture/packet.py): a Total Length claiming 2,048 bytes more
    than a frame the capture did not cut (caplen == origlen) used to turn the
    claim into a snap-length Gap that swallowed the next segments of the
    stream; bytes that were never on the wire are not missing."""
    c = clean()

    def longer(f, rnd):
        struct.pack_into("!H", f, 16, struct.unpack_from("!H", f, 16)[0] + 2048)
        return bytes(f)

    idx, data = _damage(c, random.Random(3), 6, longer)
    rows, s, _ = _run(data)
    assert not s.get("gaps") and not s.get("errors")
    assert sorted(_key(r) for r in rows) == sorted(_key(r) for r in c.rows)


def test_reader_yields_the_frames_before_damaged_file_structure():
    """Regression (capture/pcap.py, pcapng.py, reader.py): the complete frames
    read from the same 1 MiB chunk before a damaged record header used to be
    lost with the exception."""
    from mqcodec.capture import open_capture

    c = clean()
    at = 17
    buf = bytearray(c.data)
    pos = 24 + sum(16 + len(p.frame) for p in c.packets[:at])
    struct.pack_into("<I", buf, pos + 8, 0x7FFFFFFF)
    got = []
    with pytest.raises(DecodeError) as ei:
        for fr in open_capture(bytes(buf)):
            got.append(fr)
    assert ei.value.structure == "pcap record header" and ei.value.offset == pos + 8
    assert [fr.data for fr in got] == [p.frame for p in c.packets[:at]]


@pytest.mark.parametrize("seed", [1, 2])
def test_tcp_flags_garbage(seed):
    """Random flags (SYN, FIN, RST included) on data and ACK segments: a
    garbage RST or FIN may end the connection, so only messages of the damaged
    connections after the damage may be lost."""
    c = clean()
    rnd = random.Random(seed)
    idx = sorted(rnd.sample([i for i in range(len(c.packets)) if c.dirs[i] and c.packets[i].flags], 5))
    frames = [p.frame for p in c.packets]
    for i in idx:
        f = bytearray(frames[i])
        f[47] = rnd.randrange(256)
        frames[i] = bytes(f)
    rows, s, _ = _run(_pcap((p.ts_ns, f) for p, f in zip(c.packets, frames)))
    check(c, rows, {i + 1 for i in idx}, connection=True, after=True)


# --------------------------------------------------------------------------- pcapng
def _pcapng(c, *, unknown_every=0, damage_at=None, damage=None):
    f = io.BytesIO()
    w = PcapngWriter(f)
    w.add_interface(1)
    for i, p in enumerate(c.packets):
        if unknown_every and i % unknown_every == 0:
            w._block(0x00000BAD + 0x1000 * (i % 3), b"vendor block %d" % i)
        if i == damage_at:
            pos = f.tell()
            w.write(0, p.ts_ns, p.frame)
            buf = bytearray(f.getvalue())
            damage(buf, pos)
            f = io.BytesIO(bytes(buf))
            f.seek(0, 2)
            w.f = f
            continue
        w.write(0, p.ts_ns, p.frame)
    return f.getvalue()


def test_pcapng_unknown_blocks_are_skipped_and_counted():
    c = clean()
    rows, s, _ = _run(_pcapng(c, unknown_every=10))
    assert s["pcapng blocks skipped"] == len(range(0, len(c.packets), 10))
    assert sorted(_key(r) for r in rows) == sorted(_key(r) for r in c.rows)


@pytest.mark.parametrize("how", ["huge", "not a multiple of 4", "trailing differs", "below minimum"])
def test_pcapng_damaged_block_length_mid_file(how):
    """Damaged file structure after the first frame ends that capture, not the
    job: the frames before it are converted, the error is counted, and the
    next capture of the job is converted in full."""
    c = clean()
    at = len(c.packets) // 2

    def damage(buf, pos):
        if how == "huge":
            struct.pack_into("<I", buf, pos + 4, 0x7FFFFFF0)
        elif how == "not a multiple of 4":
            struct.pack_into("<I", buf, pos + 4, struct.unpack_from("<I", buf, pos + 4)[0] + 2)
        elif how == "trailing differs":
            struct.pack_into("<I", buf, len(buf) - 4, 12)
        else:
            struct.pack_into("<I", buf, pos + 4, 8)

    data = _pcapng(c, damage_at=at, damage=damage)
    rows, s, report = _run(None, captures=[data, c.data])
    assert s["captures ended by a file error"] == 1
    assert report["captures"][0]["stats"]["frames"] == at
    assert "pcapng block" in report["captures"][0]["file_error"]
    first = [r for r in rows if r["capture"] == "c0"]
    second = [r for r in rows if r["capture"] == "c1"]
    assert sorted(_key(r) for r in second) == sorted(_key(r) for r in c.rows)
    check(c, first, set(range(at + 1, len(c.packets) + 1)), after=True)


def test_pcap_record_length_damage_mid_file(tmp_path):
    """The same for a classic pcap record claiming 2 GB (through convert() and files)."""
    c = clean()
    at = len(c.packets) // 3
    buf = bytearray(c.data)
    pos = 24 + sum(16 + len(p.frame) for p in c.packets[:at])
    struct.pack_into("<I", buf, pos + 8, 0x7FFFFFFF)
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(bytes(buf))
    report = convert([str(bad)], str(tmp_path / "o"))
    s = report["summary"]
    assert s["frames"] == at and s["captures ended by a file error"] == 1
    assert "incl_len" in report["captures"][0]["file_error"]
    import pyarrow.parquet as pq

    rows = [dict(r, protocol="mq") for r in read_table(str(tmp_path / "o"), "mq_messages").to_pylist()]
    rows += [dict(r, protocol="msmq") for r in read_table(str(tmp_path / "o"), "msmq_packets").to_pylist()]
    assert s["messages"] == len(rows)
    check(c, rows, set(range(at + 1, len(c.packets) + 1)), after=True)


# --------------------------------------------------------------------------- garbage
def test_mostly_garbage_capture():
    c = clean(8, 15)
    rnd = random.Random(5)
    garbage = []
    for k in range(600):
        kind = k % 3
        if kind == 0:    # random bytes behind a random (or IP) ethertype
            et = rnd.choice((0x0800, 0x86DD, 0x0806, rnd.randrange(0x600, 0x10000)))
            frame = bytes(12) + struct.pack("!H", et) + bytes(rnd.randrange(256) for _ in range(rnd.randrange(60)))
        else:            # well-formed TCP to 1414/1801 with random payload, from other hosts
            src = "192.168.%d.%d" % (rnd.randrange(4), rnd.randrange(1, 250))
            dst = "10.9.0.1"
            port = rnd.choice((1414, 1801))
            payload = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 400)))
            if rnd.random() < 0.2:  # with an eye-catcher to tempt the framers
                payload = rnd.choice((b"TSH ", b"\x10\x00\x00\x00LIOR")) + payload
            seg = tcp(src, dst, 30000 + rnd.randrange(50), port, rnd.getrandbits(32), 0, 0x18, payload)
            frame = ethernet(ipv4(src, dst, 6, seg))
        garbage.append(frame)
    # interleave: real frames keep their order, garbage goes in between
    real = [(p.ts_ns, p.frame) for p in c.packets]
    out, g = [], iter(garbage)
    for ts, frame in real:
        for _ in range(rnd.randrange(5)):
            f = next(g, None)
            if f is not None:
                out.append((ts, f))
        out.append((ts, frame))
    out += [(real[-1][0], f) for f in g]
    rows, s, _ = _run(_pcap(out))
    assert s["frames"] == len(out)
    # the real sessions' messages are all there, identical, on their own connections
    real_rows = [r for r in rows if not (r["src_ip"] or "").startswith("192.168.") and r["dst_ip"] != "10.9.0.1"]
    assert sorted(_key(r) + repr(_direction(r)) for r in real_rows) == \
        sorted(_key(r) + repr(_direction(r)) for r in c.rows)
    check(c, rows, set())
    # garbage is counted, not dropped silently
    assert s.get("frames skipped", 0) + s.get("frames malformed", 0) >= 100
    assert s.get("framing errors", 0) + s.get("resynchronisations", 0) >= 10


# --------------------------------------------------------------------------- memory bound
def test_pending_messages_are_bounded_in_bytes():
    """Regression (pcap2parquet.py): the pending chunk was bounded in messages
    only; error rows keep their bytes, so a capture whose MSMQ packets all
    claim PacketSize 0x00400000 held every 4 MiB unit until the end (891 MiB
    peak RSS for 200 MB, docs/ROBUSTNESS.md).  Now a chunk is also
    written once it holds ``chunk_bytes``."""
    # [MS-MQMQ] 2.2.19.1 BaseHeader: VersionNumber 0x10, Reserved, Flags, "LIOR", PacketSize, TimeToReachQueue
    hdr = struct.pack("<BBH4sII", 0x10, 0, 0, b"LIOR", 0x00400000, 0xFFFFFFFF)
    frames, ts = [], 1_700_000_000 * 10 ** 9
    conns = 6
    seqs = {}
    for c in range(conns):
        cli = "10.7.0.%d" % (c + 1)
        frames.append((ts, ethernet(ipv4(cli, "10.8.0.1", 6, tcp(cli, "10.8.0.1", 20000 + c, 1801, 100, 0, 0x02)))))
        seqs[c] = 101
    body = hdr + bytes(1444)
    for i in range(conns * 700):           # about 1 MB per connection, no unit completes
        c = i % conns
        cli = "10.7.0.%d" % (c + 1)
        seg = tcp(cli, "10.8.0.1", 20000 + c, 1801, seqs[c], 0, 0x18, body)
        frames.append((ts + i, ethernet(ipv4(cli, "10.8.0.1", 6, seg))))
        seqs[c] += len(body)
    got = {}
    for impl in ("py", None):
        tables = TableCollector()
        conv = Converter(tables, ConvertOptions(chunk_bytes=2 << 20, capture_impl=impl))
        conv.add_capture(_pcap(frames))
        s = conv.report()["summary"]
        assert s["messages"] == s["errors"] == conns     # each stream ends inside its 4 MiB unit
        got[impl] = pa.concat_tables(tables.parts["msmq_packets"]).drop_columns(["capture"]).to_pylist()
        if impl == "py":
            # the pure pipeline's rows come one at a time: written as each chunk fills up
            assert len(tables.parts["msmq_packets"]) >= 2
            for t in tables.parts["msmq_packets"]:
                assert sum(len(r) for r in t.column("raw").to_pylist() if r) <= (2 << 20) + 0x00400000
    # the capture core reports the six cut packets at the end of the capture, all at once:
    # the same rows (their bytes were held by the core's buffers until then)
    assert got[None] == got["py"]


def test_streams_of_no_known_protocol_keep_no_frame_marks(monkeypatch):
    """Regression (pcap2parquet.py): every segment of every TCP direction left a
    (offset, frame, ts) mark, trimmed only when a message was located, so a
    long stream of another protocol (here port 80) grew a list for ever."""
    import mqcodec.convert.converter as p2p

    made = []
    orig = p2p.Converter._direction

    def spy(self, *a):
        d = orig(self, *a)
        made.append(d)
        return d

    monkeypatch.setattr(p2p.Converter, "_direction", spy)
    frames, seq = [], 1000
    for i in range(3000):
        payload = b"GET /%06d HTTP/1.1\r\n\r\n" % i
        frames.append((i, ethernet(ipv4("10.0.0.1", "10.0.0.2", 6,
                                        tcp("10.0.0.1", "10.0.0.2", 40000, 80, seq, 1, 0x18, payload)))))
        seq += len(payload)
    rows, s, _ = _run(_pcap(frames), capture_impl="py")  # the pure pipeline's directions
    assert rows == [] and s["bytes in streams of no known protocol"] == seq - 1000
    assert made and max(len(d.marks) for d in made) == 0


def test_closed_connections_are_forgotten():
    """Regression (pcap2parquet.py): the converter kept every TCP direction of
    the capture (framer + frame marks) until its end, so memory grew with the
    number of connections (~+30 MiB per 100 MiB of simulator traffic).  After
    200 sequential MQ connections, each closed by FIN, at most the open
    one's directions remain."""
    import gc

    from mqcodec.capture.writer import TcpConversation
    from mqcodec.ibmmq.builders import encode_put
    from mqcodec.convert.converter import _Direction

    msg = synth._app_message(random.Random(1), 1, synth.START_NS, little=True)
    unit = encode_put(msg, conversation_id=1, request_id=1)
    frames = []
    for k in range(200):
        conv = TcpConversation(("10.3.%d.%d" % (k // 200, 1 + k % 200), 40000 + k), ("10.3.9.1", 1414),
                               start_ns=synth.START_NS + k * 10 ** 7)
        for p in conv.handshake() + conv.send(0, unit) + conv.close():
            frames.append((p.ts_ns, p.frame))
    alive = []

    def progress(frame):
        if frame.number == len(frames):
            gc.collect()
            alive.append(sum(isinstance(o, _Direction) for o in gc.get_objects()))

    conv = Converter(TableCollector(), ConvertOptions(capture_impl="py"))  # the pure pipeline's objects
    conv.add_capture(_pcap(frames), progress=progress)
    s = conv.report()["summary"]
    assert s["messages"] == 200 and not s.get("errors")
    assert alive and alive[0] <= 2


def test_content_detected_stream_reports_stream_offsets_and_frames():
    """Regression (pcap2parquet.py): a direction recognised by its content
    after other bytes (here 6 bytes of a greeting on port 5000, then an MQ
    TSHM unit) got a framer counting from 0 instead of the stream offset of
    the first recognised byte, so ``stream_offset`` was 6 too small and
    ``frame`` pointed at the greeting's frame."""
    from mqcodec.capture.writer import TcpConversation
    from mqcodec.ibmmq.builders import encode_put

    msg = synth._app_message(random.Random(3), 1, synth.START_NS, little=True)
    unit = encode_put(msg, conversation_id=1, request_id=1)
    conv = TcpConversation(("10.4.0.1", 40001), ("10.4.0.2", 5000), start_ns=synth.START_NS)
    packets = conv.handshake() + conv.send(0, b"HELLO\n") + conv.send(0, unit) + conv.close()
    frames = [(p.ts_ns, p.frame) for p in packets]
    rows, s, _ = _run(_pcap(frames))
    assert len(rows) == 1 and rows[0]["error"] is None and rows[0]["protocol"] == "mq"
    assert rows[0]["stream_offset"] == 6
    # the frame holding the unit's first byte: 3 handshake frames, the greeting and its ACK, then the unit
    assert [len(p.frame) > 54 for p in packets][:6] == [False, False, False, True, False, True]
    assert rows[0]["frame"] == 6
    assert s["bytes in streams of no known protocol"] == 6
