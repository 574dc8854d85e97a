"""The compiled capture engine against the pure one (the reference).

``pcap2parquet`` converts a capture with the compiled capture core
(``mqcodec._ext.capture_core``: pcap walk, link/IP/TCP, in-order reassembly
and both framers in C) when it is built, and hands whatever the core does not
follow (out-of-order segments, gaps, damaged units, frames it does not decode)
to the pure pipeline.  Whatever the mix, the tables must be the pure
engine's: every row equal *with* its ``message_key`` (derived from the
input -- capture, frame, rank in the frame -- not from production order),
every PCF parameter equal and joined to the same message, every IBM MQ unit
of ``mq_calls`` equal with its ``call_key`` and its pairing and queue, the summary counters equal.  Captures: the real IBM MQ capture, the
simulator's, and the simulator's damaged (dropped, duplicated, reordered,
retransmitted-with-overlap segments, cut files, snap length, corrupted
headers), plain, gzip and pcapng.
"""
from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from mqcodec.convert import ConvertOptions, Converter
from mqcodec.convert.sinks import TableCollector
from mqcodec.convert.keys import key_capture, key_frame

from capture_inputs import UnseekableFile, fragmented, reordered
from capture_inputs import pcap_bytes as _pcap
from capture_inputs import simulator_packets as _packets

capture_core = pytest.importorskip("mqcodec._ext.capture_core", reason="the compiled capture core is not built")

REAL = Path(__file__).resolve().parents[2] / "shared" / "captures" / "ibmmq_jms_client_1414.pcap"
IDENTITY = ("capture", "tcp_stream", "stream_offset", "protocol", "frame", "src_ip", "src_port", "kind")


def _convert(data, capture_impl, **opts):
    tables = TableCollector()
    conv = Converter(tables, ConvertOptions(capture_impl=capture_impl, **opts))
    conv.add_capture(data, name="c")
    report = conv.report()
    messages = tables.rows()
    params = tables.table("pcf_parameters").to_pylist()
    by_key = {r["message_key"]: tuple(r[k] for k in IDENTITY) for r in messages}
    assert len(by_key) == len(messages), "message_key is not unique"
    check_keys(messages, 0)
    rows = sorted(repr(sorted(r.items())) for r in messages)
    prow = sorted(repr((by_key[p["message_key"]], sorted(p.items()))) for p in params)
    summary = dict(report["summary"])
    calls = tables.table("mq_calls").to_pylist()
    assert len({c["call_key"] for c in calls}) == len(calls), "call_key is not unique"
    crow = sorted(repr(sorted(c.items())) for c in calls)
    return rows, prow, summary, report, crow


def check_keys(messages, index):
    """Every message_key holds the capture index, and the row's frame where
    the row's first byte was captured (every decoded row: an error row may
    start in a gap, docs/tables.md "Keys")."""
    for r in messages:
        assert key_capture(r["message_key"]) == index, r
        if r["error"] is None:
            assert r["frame"] is not None, r
            assert key_frame(r["message_key"]) == r["frame"], r


def _same(data, **opts):
    """Both engines on ``data``; returns the compiled engine's report."""
    ours = _convert(data, None, **opts)
    ref = _convert(data, "py", **opts)
    assert ours[2] == ref[2], "summary differs"
    assert len(ours[0]) == len(ref[0])
    assert ours[0] == ref[0], "messages differ"
    assert ours[1] == ref[1], "PCF parameters differ"
    assert len(ours[4]) == len(ref[4]), "mq_calls row counts differ"
    assert ours[4] == ref[4], "mq_calls rows differ"
    assert ours[3]["calls_by_type"] == ref[3]["calls_by_type"]
    assert ours[3]["failed_calls_by_reason"] == ref[3]["failed_calls_by_reason"]
    assert ours[3]["captures"][-1].get("engine") == "compiled"
    return ours[3]


def test_real_capture():
    report = _same(REAL.read_bytes())
    assert report["summary"]["messages"] > 0
    # its two lost segments (a peer acknowledges past each) fall on segment boundaries: the
    # core follows the gaps and the resynchronisations itself, as the pure pipeline counts them
    core = report["captures"][-1]["core"]
    assert (core["gaps"], core["resynchronisations"]) == (2, 2)
    assert report["summary"]["gaps"] == 2 and report["summary"]["bytes skipped by resynchronisation"] == 204


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_simulator_captures_stay_on_the_fast_path(seed):
    report = _same(_pcap(_packets(seed, 40)))
    # clean simulator traffic: no connection needs the pure pipeline
    assert report["summary"]["messages"] > 40


def test_small_row_groups():
    _same(_pcap(_packets(5, 40)), chunk_messages=7)


def test_gzip_and_pcapng():
    pk = _packets(6, 20)
    _same(gzip.compress(_pcap(pk)))
    _same(_pcap(pk, ng=True))


@pytest.mark.parametrize("seed", range(6))
def test_dropped_duplicated_reordered_segments(seed):
    report = _same(_pcap(reordered(_packets(4, 30), seed)))
    # the core follows every gap itself, counted as the pure pipeline counts them
    # (_same compares the summaries)
    assert report["captures"][-1]["core"]["gaps"] == report["summary"].get("gaps", 0)


def _with_differing_copies(packets, seed: int, copies: int, partial: bool):
    """``packets`` with ``copies`` data segments sent again a few frames later
    with other bytes (all of them, or, ``partial``, the second half only)."""
    import struct

    rnd = random.Random(seed)
    out = list(packets)
    data = []
    for i, (ts, frame) in enumerate(out):
        if frame[12:14] != b"\x08\x00" or frame[23] != 6:
            continue
        ihl = (frame[14] & 15) * 4
        start = 14 + ihl + (frame[14 + ihl + 12] >> 4) * 4
        end = 14 + struct.unpack_from("!H", frame, 16)[0]
        if end - start > 8:
            data.append((i, start, end))
    assert len(data) > copies
    for i, start, end in sorted(rnd.sample(data, copies), reverse=True):
        ts, frame = out[i]
        b = bytearray(frame)
        if partial:   # the copy: the second half of the segment (a TCP header moved on is not
            # needed: the same header with the first half cut would change its sequence
            # number; flipping only the second half's bytes makes the same overlap)
            start = (start + end) // 2
        for k in range(start, end):
            b[k] ^= 0xFF
        out.insert(min(len(out), i + rnd.randint(1, 5)), (ts, bytes(b)))
    return out


@pytest.mark.parametrize("partial", [False, True], ids=["whole", "half"])
@pytest.mark.parametrize("seed", [1, 2])
def test_differing_copies_are_followed_and_flag_the_same_rows(seed, partial):
    """Retransmitted segments whose bytes differ from the delivered ones (the
    pure reassembler's OverlapConflict): the core records them and flags the
    rows holding those bytes as the pure converter does (held rows, rows made
    later), counted per connection."""
    report = _same(_pcap(_with_differing_copies(_packets(seed, 30), seed, 6, partial)))
    s = report["summary"]
    assert s["conflicting overlaps"] == 6
    assert report["captures"][-1]["core"]["conflicting overlaps"] == 6


@pytest.mark.parametrize("seed", range(8))
def test_mixed_damage_every_table_equal(seed):
    """Several simulator connections with differing copies (whole segments or
    their second halves), swapped, duplicated and lost frames, corrupted
    copies and snap lengths: every table equal between the engines
    (``overlap_conflict`` included)."""
    rnd = random.Random(seed)
    out = _with_differing_copies(_packets(seed % 5 + 1, 20), seed, rnd.randint(1, 4), rnd.random() < 0.5)
    for _ in range(rnd.randint(2, 8)):
        i = rnd.randrange(len(out))
        op = rnd.random()
        ts, frame = out[i]
        if op < 0.3:
            j = min(len(out) - 1, i + rnd.randint(1, 6))
            out[i], out[j] = out[j], out[i]
        elif op < 0.55:
            out.insert(min(len(out), i + rnd.randint(0, 6)), out[i])
        elif op < 0.7:
            del out[i]
        elif len(frame) > 80:   # a copy with one payload byte changed, a few frames later
            b = bytearray(frame)
            b[rnd.randrange(54, len(b))] ^= 0x5A
            out.insert(min(len(out), i + rnd.randint(1, 4)), (ts, bytes(b)))
    _same(_pcap(out, snaplen=rnd.choice([262144, 120, 300])))


def test_content_detected_after_the_stream_start():
    """A connection on no IBM MQ port whose client sends other bytes first: its
    direction is framed from the first TSH, in both engines; the rows' stream
    offsets count the bytes before."""
    from mqcodec.capture.writer import TcpConversation
    from test_capture_units import _mq_stream

    c = TcpConversation(("10.9.3.1", 40777), ("10.9.3.2", 5001), mss=300, start_ns=1_700_000_000 * 10 ** 9)
    pk = c.handshake() + c.send(0, b"junk" * 10) + c.send(0, _mq_stream(4)) + c.close()
    report = _same(_pcap([(p.ts_ns, p.frame) for p in pk]))
    assert report["summary"]["messages"] > 0
    assert report["summary"]["bytes in streams of no known protocol"] == 40


@pytest.mark.parametrize("seed", range(6))
def test_cut_files(seed):
    data = _pcap(_packets(6, 15))
    n = random.Random(seed).randrange(25, len(data))
    _same(data[:n])


@pytest.mark.parametrize("snaplen", [60, 200, 1000])
def test_snap_length(snaplen):
    """Frames cut by the snap length: the captured part, then a "snaplen" gap,
    which the core follows itself."""
    report = _same(_pcap(_packets(7, 15), snaplen=snaplen))
    core = report["captures"][-1]["core"]
    if snaplen < 1000:
        assert core["gaps"] > 0


@pytest.mark.parametrize("seed", range(4))
def test_corrupted_bytes_in_headers_and_payloads(seed):
    rnd = random.Random(seed)
    pk = _packets(8, 20)
    out = []
    for ts, frame in pk:
        if rnd.random() < 0.05:
            b = bytearray(frame)
            for _ in range(rnd.randrange(1, 4)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
            frame = bytes(b)
        out.append((ts, frame))
    _same(_pcap(out))


@pytest.mark.parametrize("limit", [4, 30])
def test_connections_evicted_past_max_connections(monkeypatch, limit):
    """More connections open at once than ``max_connections``: the least
    recently active tenth is closed as the pure reassembler closes it (its
    holes declared, its framers closed), in both engines; the core follows
    it (it used to give the capture up to the pure pipeline, which converted
    it again from the start).  Their later segments are segments after close."""
    from mqcodec.convert import compiled
    from mqcodec.capture.writer import TcpConversation
    from test_capture_units import _mq_stream

    monkeypatch.setattr(compiled, "CHUNK", 8192)  # several chunks: rows are written before the crowd
    monkeypatch.setattr(compiled, "TAKE_BYTES", 8192)
    mq = _mq_stream(4)
    pk = _packets(9, 30)
    half = len(pk) // 2
    firsts, rests = [], []
    for k in range(40):
        a = TcpConversation(("10.9.1.%d" % (k + 1), 40000), ("10.9.0.2", 1414), mss=300,
                            start_ns=pk[half][0] + k, step_ns=1)
        firsts += a.handshake() + a.send(0, mq[:700])
        rests += a.send(0, mq[700:]) + a.close()
    rnd = random.Random(limit)
    rnd.shuffle(rests)
    data = _pcap(pk[:half] + [(p.ts_ns, p.frame) for p in firsts + rests] + pk[half:])
    report = _same(data, chunk_messages=5, max_connections=limit)
    assert report["captures"][-1]["core"]["evicted connections"] > 0


@pytest.mark.parametrize("max_closed", [0, 3])
def test_the_core_frees_the_records_of_connections_it_has_forgotten(monkeypatch, max_closed):
    """A connection the core has retired and forgotten (out of its closed map)
    takes no memory a take later: the core reuses its record, while the
    connection numbers (tcp_stream) go on, and the driver asks nothing of it
    after that take.  Hundreds of short connections, some with differing copies
    (conflicts counted per connection at the end), some whose first data segment
    was lost (rows keyed by the connection's opening frame), some reusing the
    4-tuple of a forgotten one: every table equals the pure engine's, and the
    core never holds more than a few records."""
    from mqcodec.convert import compiled
    from mqcodec.capture.writer import TcpConversation
    from test_capture_units import _mq_stream

    monkeypatch.setattr(compiled, "CHUNK", 4096)   # many takes
    monkeypatch.setattr(compiled, "TAKE_BYTES", 4096)
    held, take = [], compiled._take

    def watched(conv, core, *args, **kw):
        n = take(conv, core, *args, **kw)
        held.append(core.stats["connection records"])
        return n

    monkeypatch.setattr(compiled, "_take", watched)
    mq = _mq_stream(2)
    conns = 300
    packets = []
    for k in range(conns):
        a = TcpConversation(("10.7.%d.%d" % (k % 100 >> 4, k % 100 & 15 | 16), 41000 + k % 100),
                            ("10.7.0.2", 1414), mss=400, start_ns=10 ** 18 + k * 10 ** 6, step_ns=1)
        opening = a.handshake()
        sent = a.send(0, mq)
        if k % 37 == 5:
            sent = sent[1:]   # the first data segment lost: rows start in a gap
        packets += [(p.ts_ns, p.frame) for p in opening + sent + a.close()]
    packets = _with_differing_copies(packets, max_closed, 5, False)
    s = _same(_pcap(packets), max_closed=max_closed)["summary"]
    assert s["conflicting overlaps"] > 0 and s.get("gaps", 0) >= 8
    assert len(held) > 30
    assert max(held) < 40, held   # (a record for every connection: 300)


@pytest.mark.parametrize("reused", [False, True])
def test_the_budget_cuts_ties_in_the_order_connections_opened(monkeypatch, reused):
    """Two directions hold as many bytes when the byte budget is passed: the pure
    converter cuts the one whose connection opened first.  The compiled core
    reuses the records of connections it forgot, so a connection opened later
    may sit in an earlier record (``reused``: the first connection, reset and
    forgotten, frees its record before the third opens): ties go by the
    connections' numbers, not by their records."""
    from mqcodec.convert import compiled
    from mqcodec.capture.writer import TcpConversation
    from test_capture_units import _mq_stream

    monkeypatch.setattr(compiled, "CHUNK", 1024)   # many takes
    monkeypatch.setattr(compiled, "TAKE_BYTES", 1024)
    mq = _mq_stream(3)
    assert len(mq) > 1100

    def conversation(k):
        return TcpConversation(("10.7.1.%d" % k, 40000 + k), ("10.7.0.2", 1414), mss=1000,
                               start_ns=10 ** 18 + k * 10 ** 8, step_ns=1000)

    x, y, z, w = conversation(1), conversation(2), conversation(3), conversation(4)
    packets = x.handshake() + y.handshake() + x.reset()
    if reused:   # in-order bytes of another connection: takes between the reset and z's opening
        packets += w.handshake() + w.send(0, mq) + w.close()
    packets += z.handshake()
    # each loses its first 100 bytes: the next 1,000 wait in its reorder buffer (a tie)
    packets += y.send(0, mq[:100], ack_each=False)[1:] + z.send(0, mq[:100], ack_each=False)[1:]
    packets += y.send(0, mq[100:1100], ack_each=False) + z.send(0, mq[100:1100], ack_each=False)
    packets += y.close() + z.close()
    report = _same(_pcap([(p.ts_ns, p.frame) for p in packets]), buffer_budget=1500, max_closed=0)
    assert report["summary"]["budget cuts"] >= 1


@pytest.mark.parametrize("mtu", [68, 300])
def test_ipv4_fragments_stay_with_the_core(mtu):
    """TCP (SYNs, MQ and MSMQ data, FINs) and UDP pings in IPv4 fragments,
    some fragments swapped: the core reassembles them itself (no give-up) and
    the tables equal the pure engine's."""
    out = fragmented(_packets(10, 25), mtu, mtu)
    for data in (_pcap(out), _pcap(out, ng=True)):
        report = _same(data)
        assert report["captures"][-1]["core"]["reassembled tcp segments"] > 0


@pytest.mark.parametrize("variant", ["once", "damaged", "third"])
def test_syn_reusing_the_tuple_of_a_damaged_connection(variant):
    """Issue #8 (review script reuse.py --garbage-first): a connection holds
    out-of-order messages when a SYN reuses its 4-tuple; the pure engine closes
    it there and frames the held messages (after a resynchronisation).  The
    compiled engine does the same, and does not duplicate the new connection's
    rows."""
    from test_capture_units import reuse_capture

    data, _ = reuse_capture(variant, garbage_first=True)
    ref = _convert(data, "py")
    assert ref[2]["resynchronisations"] >= 1
    _same(data)


def _record_starts(data: bytes, ng: bool) -> list:
    """The offsets of a capture's records (pcap) or packet blocks (pcapng)."""
    import struct

    starts = []
    if not ng:
        pos = 24
        while pos + 16 <= len(data):
            starts.append(pos)
            pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
        return starts
    pos = 0
    while pos + 8 <= len(data):
        btype, blen = struct.unpack_from("<II", data, pos)
        if btype == 6:
            starts.append(pos)
        pos += blen
    return starts


@pytest.mark.parametrize("compressed,how", [(False, "record length"), (False, "cut"), (True, "record length"),
                                            (True, "cut"), (True, "gzip cut")],
                         ids=["record length", "cut", "gzip-record length", "gzip-cut", "gzip cut"])
@pytest.mark.parametrize("container", ["pcap", "pcapng"])
@pytest.mark.parametrize("form", ["bytes", "path", "stream"])
def test_a_damaged_capture_is_read_once(monkeypatch, tmp_path, how, container, compressed, form):
    """Where the core stops (a record header or block claiming 2 GB, a record or block
    cut short, a gzip stream cut short), the pure reader reports the damage from there:
    the records before it are not read a second time (the whole-file reader is never
    opened; a stream that cannot seek is read once), and both engines give the same
    rows, error and truncation."""
    import struct

    import mqcodec.capture.reader as reader_module

    ng = container == "pcapng"
    packets = _packets(9, 12)
    data = bytearray(_pcap(packets, ng=ng))
    starts = _record_starts(bytes(data), ng)
    pos = starts[len(starts) // 2]
    if how == "record length":
        if ng:
            struct.pack_into("<I", data, pos + 4, 0x7FFFFFF0)
        else:
            struct.pack_into("<I", data, pos + 8, 0x7FFFFFFF)
    elif how == "cut":
        del data[pos + 30:]
    data = bytes(data)
    if compressed:
        data = gzip.compress(data)
        if how == "gzip cut":
            data = data[:len(data) * 2 // 3]
    source = data
    if form == "path":
        source = tmp_path / "damaged"
        source.write_bytes(data)
    ref = _convert(data, "py")

    def whole_file(*args, **kwargs):
        raise AssertionError("the damaged capture was read again from its start")

    monkeypatch.setattr(reader_module, "open_capture", whole_file)
    if form == "stream":
        source = UnseekableFile(data)
    ours = _convert(source, None)
    if form == "stream":
        assert source.read_bytes == len(data)
    report = ours[3]["captures"][-1]
    assert report.get("engine") == "compiled"
    assert ours[:3] == ref[:3] and ours[4] == ref[4]
    ref_report = ref[3]["captures"][-1]
    assert (report.get("file_error"), report.get("truncation")) == (ref_report.get("file_error"),
                                                                     ref_report.get("truncation"))
    if how == "gzip cut":
        assert "gzip" in report["file_error"] and report.get("truncation") is None
        return
    assert ours[2]["frames"] == len(starts) // 2
    if how == "record length":
        assert "Block Total Length" in report["file_error"] if ng else "incl_len" in report["file_error"]
        assert str(pos + (4 if ng else 8)) in report["file_error"]
    else:
        assert report.get("file_error") is None
        assert report["truncation"]["offset"] == pos + (8 if ng else 16)


def _pcap_version_3() -> bytes:
    import struct

    return struct.pack("<IHHiIII", 0xA1B2C3D4, 3, 4, 0, 0, 65535, 1)


@pytest.mark.parametrize("head", [b"", b"\xd4\xc3\xb2", b"NOT A CAPTURE FILE AT ALL", "version 3", "pcapng cut",
                                  "gzip bad magic", "gzip cut", "gzip in gzip", "pcapng bad SHB"])
@pytest.mark.parametrize("form", ["bytes", "stream"])
def test_a_file_header_the_core_declines_is_read_once(monkeypatch, head, form):
    """A file header the compiled core does not take (empty, cut, not a capture's, an
    unsupported version; plain or gzip) goes to the pure pipeline with the bytes the
    core was fed and the rest: the same error as the pure engine's, and a stream that
    cannot seek is read once."""
    from mqcodec.errors import DecodeError

    if head == "version 3":
        data = _pcap_version_3() + _pcap(_packets(3, 2))[24:]
    elif head == "pcapng cut":
        data = _pcap(_packets(3, 2), ng=True)[:20]
    elif head == "gzip bad magic":
        data = gzip.compress(b"NOT A CAPTURE FILE AT ALL" * 100)
    elif head == "gzip cut":
        data = gzip.compress(_pcap(_packets(3, 2)))[:15]
    elif head == "gzip in gzip":   # not a capture read whole; nor when read once
        data = gzip.compress(gzip.compress(_pcap(_packets(3, 2))))
    elif head == "pcapng bad SHB":
        data = bytearray(_pcap(_packets(3, 2), ng=True))
        data[8:12] = b"\x78\x56\x34\x12"
        data = bytes(data)
    else:
        data = head
    with pytest.raises(DecodeError) as ref:
        _convert(data, "py")
    source = UnseekableFile(data) if form == "stream" else data
    with pytest.raises(DecodeError) as ours:
        _convert(source, None)
    assert (ours.value.structure, ours.value.field, ours.value.offset, str(ours.value)) == \
        (ref.value.structure, ref.value.field, ref.value.offset, str(ref.value))
    if form == "stream":
        assert source.read_bytes == len(data)


def test_blocks_before_damage_in_a_capture_not_read_are_not_counted(tmp_path):
    """A pcapng whose blocks before its first frame are skipped and whose next block is
    damaged is not read (no frame): neither engine counts its skipped blocks."""
    import struct

    from mqcodec.convert import convert

    good = _pcap(_packets(3, 2), ng=True)
    shb_idb = good[:good.index(struct.pack("<I", 6))]   # up to the first Enhanced Packet Block
    custom = struct.pack("<II", 0x00000BAC, 16) + b"\0" * 4 + struct.pack("<I", 16)
    bad = struct.pack("<II", 6, 13) + b"\0" * 5
    (tmp_path / "bad.pcapng").write_bytes(shb_idb + custom * 2 + bad)
    (tmp_path / "good.pcap").write_bytes(_pcap(_packets(4, 3)))
    inputs = [str(tmp_path / "bad.pcapng"), str(tmp_path / "good.pcap")]
    reports = {impl: convert(inputs, str(tmp_path / impl), ConvertOptions(capture_impl=impl)) for impl in ("py", "c")}
    assert reports["c"]["summary"] == reports["py"]["summary"]
    assert reports["c"]["summary"]["captures not read"] == 1
    assert "pcapng blocks skipped" not in reports["c"]["summary"]
