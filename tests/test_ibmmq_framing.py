"""IBM MQ TCP stream framing, both implementations (``impl``: the pure
mqcodec.ibmmq.framing.MQStreamFramer and the capture core's compiled framer,
through mqcodec.framers.framer).

Outside facts: the real capture /work/shared/captures/ibmmq_jms_client_1414.pcap
as tshark reassembles (``-z follow,tcp,raw``) and dissects it; tshark's
dissection of segments our encoders build; byte-exact round trips.  Tests
that take ``impl`` hold both framers to the facts both report (messages as
offset, data and kind; FramingErrors; Resynchronised events); what only the
pure framer reports (Segment events, the rest of Message, a FramingError's
error_offset and ids) is checked on the pure framer.
"""
from __future__ import annotations

import collections
import re
import struct
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcodec.errors import DecodeError, EncodeError
from mqcodec.framers import framer
from mqcodec.ibmmq import ENCODING_BIG, ENCODING_LITTLE, MQMD
from mqcodec.ibmmq.builders import (
    build_tsh, default_gmo, default_pmo, encode_async_message, encode_get_reply, encode_message_data, encode_put,
    encode_put1, encode_put_reply, encode_segments,
)
from mqcodec.ibmmq.framing import (
    NEED_DATA, FramerStateError, FramingError, Message, MQStreamFramer, Resynchronised, Segment,
    decode_segment_header,
)
from mqcodec.ibmmq.headers import decode_md
from mqcodec.ibmmq.tsh import MQMD_LENGTHS, SEGMENT_TYPES
from mqcodec.stream_events import CLOSED, StreamUnit

from conftest import CAPTURES

CAPTURE = CAPTURES / "ibmmq_jms_client_1414.pcap"
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def run_all(f) -> list:
    out = []
    while (ev := f.next_event()) is not NEED_DATA and ev is not CLOSED:
        out.append(ev)
    return out


def frame_all(data: bytes, *, chunks=None, impl: str = "py", **kw) -> list:
    assert impl == "py" or not kw, "the limits are options of the pure framer"
    f = MQStreamFramer(**kw) if kw else framer("mq", impl)
    if chunks is None:
        f.feed(data)
    else:
        pos = 0
        for n in chunks:
            f.feed(data[pos:pos + n])
            pos += n
        f.feed(data[pos:])
    f.close()
    return run_all(f)


def of(events, cls):
    return [e for e in events if isinstance(e, cls)]


#: the unit events: the pure framer's Message, the compiled framer's StreamUnit
UNITS = (Message, StreamUnit)


def units(events) -> list:
    """(offset, data, kind) of every message, whichever framer reported it."""
    return [(e.offset, e.data, e.kind) for e in events if isinstance(e, UNITS)]


def shared(events) -> list:
    """The events both implementations report, in order: messages as
    (offset, data, kind), FramingErrors by extent, bytes and text,
    Resynchronised as they are (the pure framer's Segments left out)."""
    out = []
    for e in events:
        if isinstance(e, UNITS):
            out.append(("unit", e.offset, e.data, e.kind))
        elif isinstance(e, FramingError):
            out.append(("error", e.offset, e.end, e.raw, e.structure, e.field, e.reason))
        elif isinstance(e, Resynchronised):
            out.append(e)
    return out


def type_code(kind: str) -> int:
    return next(code for code, name in SEGMENT_TYPES.items() if name == kind)


def md_length(data: bytes) -> int:
    """The size of the MQMD at the start of ``data`` (its Version, in its byte order)."""
    return MQMD_LENGTHS[struct.unpack_from("<i" if md_encoding(data) == ENCODING_LITTLE else ">i", data, 4)[0]]


def md_encoding(data: bytes) -> int:
    """The MQMD's encoding, from its Version field (1 or 2) as the segment's byte order wrote it."""
    return ENCODING_LITTLE if struct.unpack_from("<i", data, 4)[0] in (1, 2) else ENCODING_BIG


def md_bytes(order="little", version=1, **fields) -> bytes:
    return MQMD(Version=version, **fields).encode(ENCODING_LITTLE if order == "little" else ENCODING_BIG, 819)


_MISSING = re.compile(rb"^\[(\d+) bytes missing in capture file\]\x00?$")


def tshark_follow(tshark: str, stream: int) -> dict:
    """Each direction of a TCP stream as tshark reassembles it: a list of
    ("data", bytes) / ("gap", n) items.  Direction 0 is node 0 (the client)."""
    out = subprocess.run([tshark, "-r", str(CAPTURE), "-q", "-z", "follow,tcp,raw,%d" % stream],
                         capture_output=True, text=True, check=True).stdout
    parts = {0: [], 1: []}
    started = False
    for line in out.splitlines():
        if line.startswith("Node 1:"):
            started = True
            continue
        if not started or not line.strip() or line.startswith("==="):
            continue
        direction = 1 if line.startswith("\t") else 0
        raw = bytes.fromhex(line.strip())
        m = _MISSING.match(raw)
        parts[direction].append(("gap", int(m.group(1))) if m else ("data", raw))
    return parts


def frame_parts(parts, impl: str = "py") -> tuple[list, bytes]:
    """Feed follow parts; return (events, stream bytes with gaps as NULs)."""
    f = framer("mq", impl)
    stream = bytearray()
    for kind, v in parts:
        if kind == "gap":
            f.gap(v)
            stream += b"\x00" * v
        else:
            f.feed(v)
            stream += v
    f.close()
    return run_all(f), bytes(stream)


def tshark_fields(tshark: str, pcap, fields, display_filter=None) -> list[list[str]]:
    cmd = [tshark, "-r", str(pcap), "-T", "fields", "-E", "occurrence=a", "-E", "separator=|"]
    if display_filter:
        cmd += ["-Y", display_filter]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [line.split("|") for line in out.splitlines()]


# ---------------------------------------------------------------------------
# the real capture against tshark
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def capture_follow(tshark):
    return {(stream, direction): parts for stream in range(5)
            for direction, parts in tshark_follow(tshark, stream).items()}


@pytest.fixture(scope="module")
def pure_frames(capture_follow):
    """Per (stream, direction): the pure framer's events and the stream bytes."""
    return {key: frame_parts(parts) for key, parts in capture_follow.items()}


@pytest.fixture(scope="module")
def capture_frames(capture_follow, impl):
    """Per (stream, direction): ``impl``'s events and the stream bytes."""
    return {key: frame_parts(parts, impl) for key, parts in capture_follow.items()}


@pytest.fixture(scope="module")
def capture_tshark(tshark):
    rows = tshark_fields(tshark, CAPTURE, ["tcp.stream", "tcp.srcport", "mq.tsh.type", "mq.tsh.seglength",
                                           "mq.tsh.convid", "mq.tsh.requestid", "mq.tsh.cflags1"],
                         display_filter="mq.tsh.structid")
    segs = collections.defaultdict(list)
    ids = collections.defaultdict(list)
    for stream, sport, types, lens, convs, reqs, flags in rows:
        key = (int(stream), 1 if sport == "1414" else 0)
        flags = flags.split(",")
        for i, (t, n) in enumerate(zip(types.split(","), lens.split(","))):
            segs[key].append((int(t, 16), int(n), int(flags[i], 16)))
        if convs:
            ids[key] += list(zip(map(int, convs.split(",")), map(int, reqs.split(","))))
    return segs, ids


@pytest.mark.tshark
def test_capture_every_segment_tshark_sees(pure_frames, capture_tshark):
    segs, ids = capture_tshark
    total = 0
    for key, (events, _) in pure_frames.items():
        ours = [(e.segment_type, e.length, e.ctl_flags1) for e in of(events, Segment)]
        assert ours == segs[key], key
        assert [(e.conversation_id, e.request_id) for e in of(events, Segment) if e.structid == "TSHM"] == ids[key]
        total += len(ours)
    # counts observed in this capture (tshark: 252 MQ segments in 5 connections)
    assert total == sum(len(v) for v in segs.values()) == 252
    by_type = collections.Counter(e.type_name for evs, _ in pure_frames.values() for e in of(evs, Segment))
    assert by_type["MQPUT"] == 8 and by_type["MQPUT_REPLY"] == 8
    assert by_type["SOCKET_ACTION"] == 28 and by_type["INITIAL_DATA"] == 20


@pytest.mark.tshark
def test_capture_segment_header_fields(pure_frames):
    # TSHM header of the first MQPUT of stream 3 (frame 217), bytes read by
    # hand from tshark -x: ConversID 3, RequestID 0, ByteOrder 2 (little),
    # CtlFlag1 0x30, Encoding 273, CCSID 819.
    events, stream = pure_frames[(3, 0)]
    put = next(e for e in of(events, Segment) if e.type_name == "MQPUT")
    assert (put.structid, put.length, put.conversation_id, put.request_id) == ("TSHM", 976, 3, 0)
    assert (put.byte_order, put.ctl_flags1, put.encoding, put.ccsid) == (2, 0x30, 273, 819)
    assert put.first and put.last
    assert stream[put.offset:put.offset + 4] == b"TSHM"
    # the client's first INITIAL_DATA is a plain TSH in big-endian order
    init = of(events, Segment)[0]
    assert (init.structid, init.type_name, init.byte_order, init.length) == ("TSH", "INITIAL_DATA", 1, 268)


@pytest.mark.tshark
def test_capture_messages_match_tshark(capture_frames, tshark, impl):
    rows = tshark_fields(tshark, CAPTURE, ["tcp.stream", "tcp.srcport", "mq.tsh.type", "mq.md.msgid",
                                           "mq.md.format", "mq.md.applname", "mq.put.length"],
                         display_filter="mq.md.structid")
    expected = collections.defaultdict(list)
    for stream, sport, t, msgid, fmt, appl, plen in rows:
        expected[(int(stream), 1 if sport == "1414" else 0)].append(
            (int(t, 16), bytes.fromhex(msgid), fmt.rstrip(), appl.rstrip(), int(plen)))
    assert sum(len(v) for v in expected.values()) == 16
    n = 0
    for key, (events, stream) in capture_frames.items():
        got = []
        for offset, data, kind in units(events):
            md = decode_md(data, encoding=md_encoding(data), ccsid=819)
            size = MQMD_LENGTHS[md.Version]
            body = data[size:]
            if kind == "MQPUT":
                assert body[:4] == b"RFH " and len(body) == 444
            else:
                assert body == b""                  # the reply repeats only the length
            got.append((type_code(kind), md.MsgId, md.Format, md.PutApplName, 444))
            assert stream.find(data[:size], offset) > offset   # the MQMD follows the unit's headers
            n += 1
        assert got == expected.get(key, []), key
        if impl == "py":                            # what only the pure framer's Message reports
            for m in of(events, Message):
                if m.kind == "MQPUT":
                    decoded = m.decode()             # MQMD + MQRFH2 + body
                    assert decoded.headers[0].NAME == "MQRFH2"
                assert m.data_length == 444
                assert m.data[:m.md_length] == stream[m.md_offset:m.md_offset + m.md_length]
    assert n == 16


@pytest.mark.tshark
def test_capture_round_trip_and_real_gaps(capture_frames, capture_follow, impl):
    holes = {}
    for key, (events, stream) in capture_frames.items():
        for m in of(events, Message):
            assert m.encode() == stream[m.offset:m.end]
        # tshark marks "[N bytes missing in capture file]"; each such hole
        # falls between segments here: one Resynchronised right after it
        expected, pos = [], 0
        for kind, v in capture_follow[key]:
            pos += v if kind == "gap" else len(v)
            if kind == "gap":
                expected.append(Resynchronised(pos, v))
                holes[key] = holes.get(key, 0) + 1
        assert of(events, FramingError) == []
        assert of(events, Resynchronised) == expected
        if impl != "py":
            continue
        # segments tile the stream except over the holes
        pos = 0
        gaps = {r.offset - r.skipped: r.offset for r in expected}
        for s in of(events, Segment):
            if s.offset != pos:
                assert gaps.get(pos) == s.offset
            assert stream[s.offset:s.offset + len(s.header)] == s.header
            pos = s.offset + s.length
        assert pos == len(stream)
    # the capture lost 152 client bytes and 52 server bytes of connection 3
    assert holes == {(3, 0): 1, (3, 1): 1}
    assert of(capture_frames[(3, 0)][0], Resynchronised) == [Resynchronised(15676, 152)]
    assert of(capture_frames[(3, 1)][0], Resynchronised) == [Resynchronised(15520, 52)]


@pytest.mark.tshark
def test_capture_byte_at_a_time_equals_whole(capture_frames, impl):
    events, stream = capture_frames[(4, 0)]
    again = frame_all(stream, chunks=[1] * len(stream), impl=impl)
    assert again == events and units(events)       # (its MQPUTs: test_capture_messages_match_tshark)


@pytest.mark.tshark
def test_capture_through_mqcodec_capture_equals_tshark_follow(capture_frames, impl):
    """The same framing from mqcodec.capture's own TCP reassembly."""
    capture = pytest.importorskip("mqcodec.capture")
    framers = {}
    for ev in capture.iter_capture_events(CAPTURE):
        if isinstance(ev, (capture.StreamData, capture.Gap)):
            key = (ev.conn.stream, 0 if ev.direction == capture.CLIENT_TO_SERVER else 1)
            f = framers.setdefault(key, framer("mq", impl, ev.offset))
            assert ev.offset == f.end
            if isinstance(ev, capture.StreamData):
                f.feed(ev.data)
            else:
                f.gap(ev.length)
    assert sorted(framers) == sorted(capture_frames)
    for key, f in framers.items():
        f.close()
        assert run_all(f) == capture_frames[key][0], key


# ---------------------------------------------------------------------------
# encoders: round trips
# ---------------------------------------------------------------------------
orders = st.sampled_from(["little", "big"])
messages = st.builds(
    lambda order, version, appl, msgid, data: (order, md_bytes(order, version, Format="MQSTR", PutApplName=appl,
                                                               MsgId=msgid) + data),
    orders, st.sampled_from([1, 2]), st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.", max_size=28),
    st.binary(min_size=24, max_size=24), st.binary(max_size=3000))


def split_points(draw, total):
    return draw(st.lists(st.integers(1, max(1, total - 1)), max_size=6))


@SETTINGS
@given(messages, st.data(), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_put_round_trip(impl, msg, data, conv, req):
    order, raw = msg
    body_len = 16 + len(raw) + 152 + 4
    points = split_points(data.draw, body_len)
    stream = encode_put(raw, conversation_id=conv, request_id=req, split_points=points, hobj=7)
    chunks = data.draw(st.lists(st.integers(1, 500), max_size=20))
    events = frame_all(stream, chunks=chunks, impl=impl)
    assert shared(events) == [("unit", 0, raw, "MQPUT")]
    if impl != "py":
        return
    (m,) = of(events, Message)
    assert m.kind == "MQPUT" and m.data == raw
    assert (m.conversation_id, m.request_id) == (conv, req)
    assert m.encoding == (ENCODING_LITTLE if order == "little" else ENCODING_BIG)
    assert m.api["Hobj"] == 7 and m.data_length == len(raw) - m.md_length
    assert len(of(events, Segment)) == len(set(points)) + 1 == m.segment_count
    assert m.encode() == stream
    assert (m.offset, m.end) == (0, len(stream))
    assert stream[m.md_offset:m.md_offset + 4] == b"MD  " or m.segment_count > 1


@SETTINGS
@given(messages, st.data())
def test_get_reply_and_put_reply_round_trip(impl, msg, data):
    order, raw = msg
    points = split_points(data.draw, len(raw) + 120)
    get = encode_get_reply(raw, split_points=points, conversation_id=9, comp_code=0, reason=0)
    put_reply = encode_put_reply(raw, conversation_id=9)
    events = frame_all(get + put_reply, chunks=data.draw(st.lists(st.integers(1, 700), max_size=10)), impl=impl)
    assert shared(events) == [("unit", 0, raw, "MQGET_REPLY"),
                              ("unit", len(get), raw[:md_length(raw)], "MQPUT_REPLY")]
    if impl != "py":
        return
    g, r = of(events, Message)
    assert (g.kind, r.kind) == ("MQGET_REPLY", "MQPUT_REPLY")
    assert g.data == raw and g.options["StrucId"] == b"GMO "
    assert r.data == raw[:r.md_length] and r.data_length == len(raw) - r.md_length
    assert g.encode() + r.encode() == get + put_reply


@SETTINGS
@given(orders, st.binary(max_size=3000), st.booleans(), st.data())
def test_message_data_round_trip(impl, order, payload, with_msh, data):
    raw = md_bytes(order, 1, Format="MQSTR", PutApplName="chl") + payload
    points = split_points(data.draw, len(raw) + 124)
    stream = encode_message_data(raw, remote_q_name="REMOTE.Q", remote_qmgr_name="QM2", msh=with_msh,
                                 split_points=points)
    events = frame_all(stream, chunks=data.draw(st.lists(st.integers(1, 900), max_size=10)), impl=impl)
    assert shared(events) == [("unit", 0, raw, "MESSAGE_DATA")]
    if impl != "py":
        return
    (m,) = of(events, Message)
    assert m.kind == "MESSAGE_DATA" and m.data == raw
    assert m.transmission_header["RemoteQName"].rstrip() == b"REMOTE.Q"
    assert ("MSH" in m.transmission_header) == with_msh
    assert m.conversation_id is None and m.encode() == stream


@SETTINGS
@given(messages, st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ.", max_size=48), st.data())
def test_async_message_round_trip(impl, msg, qname, data):
    order, raw = msg
    points = split_points(data.draw, len(raw) + 60)
    stream = encode_async_message(raw, resolved_q_name=qname, hobj=4, glb_msg_idx=11, split_points=points,
                                  conversation_id=6)
    events = frame_all(stream, chunks=data.draw(st.lists(st.integers(1, 600), max_size=10)), impl=impl)
    assert shared(events) == [("unit", 0, raw, "ASYNC_MESSAGE")]
    if impl != "py":
        return
    (m,) = of(events, Message)
    assert m.kind == "ASYNC_MESSAGE" and m.data == raw and m.encode() == stream
    ah = m.async_header
    assert (ah["Hobj"], ah["GlbMsgIdx"], ah["SegmIndex"], ah["ResolQName"]) == (4, 11, 0, qname.encode())
    assert (ah["TotMsgLen"], ah["ActMsgLen"]) == (len(raw), len(raw))
    # the async header of the first segment is a multiple of 4 bytes long
    assert (len(m.prefix)) % 4 == 0
    assert [len(p) for p in m.continuation_prefixes] == [24] * (m.segment_count - 1)


def test_put1_with_distribution_list_records(impl):
    # MQOD v2 (200 bytes) with RecsPresent 2: 2 object records (96 bytes:
    # ObjectName, ObjectQMgrName) and 2 response records (8 bytes), then the
    # MQMD (packet-mq.c dissect_mq_od / dissect_mq_or / dissect_mq_rr)
    v1 = bytearray(encode_put1(md_bytes() + b"x", object_name="DL")[36 + 16:36 + 16 + 168])
    v1[4:8] = struct.pack("<i", 2)
    recs = struct.pack("<iiiiiiii", 2, 2, 0, 0, 200, 392, 0, 0)
    records = (b"Q1".ljust(48) + b"QM1".ljust(48)) + (b"Q2".ljust(48) + b"QM2".ljust(48)) + b"\0" * 16
    od = bytes(v1) + recs + records
    raw = md_bytes("little", 1, Format="MQSTR", PutApplName="DIST") + b"to two queues"
    stream = encode_put1(raw, od=od, split_points=[100, 300, 700])
    assert shared(frame_all(stream, impl=impl)) == [("unit", 0, raw, "MQPUT1")]
    # a record count larger than the bytes present is an error, not a loop
    bad = od[:168] + struct.pack("<i", 10**6) + od[172:]
    bad_stream = encode_put1(raw, od=bad)
    (err,) = shared(frame_all(bad_stream, impl=impl))
    assert err[:6] == ("error", 0, len(bad_stream), bad_stream, "MQOD", "RecsPresent")
    (m,) = of(frame_all(stream), Message)           # what only the pure framer's Message reports
    assert m.object_descriptor["RecsPresent"] == 2 and m.object_descriptor["Length"] == 200 + 2 * 96 + 2 * 8
    assert m.object_descriptor["ObjectName"].rstrip() == b"DL" and m.encode() == stream


def test_encoder_rejects_bad_input():
    with pytest.raises(EncodeError):
        encode_put(b"XX  " + b"\0" * 400)
    with pytest.raises(EncodeError):
        encode_put(md_bytes("little"), byte_order="big")
    with pytest.raises(EncodeError):
        encode_message_data(md_bytes("little", 2))       # MQXQH embeds an MQMD version 1
    with pytest.raises(EncodeError):
        build_tsh("NO_SUCH_TYPE", 28)
    with pytest.raises(EncodeError):
        encode_segments(0x86, b"x" * 100, max_segment_length=36)


def test_build_tsh_layout_from_packet_mq():
    # packet-mq.c: StructID, MQSegmLen (BE), [ConversID, RequestID (BE)],
    # ByteOrder, SegmType, CtlFlag1, CtlFlag2, LUWIdent[8], Encoding, CCSID,
    # Reserved.  Compare with the TSHM of capture frame 217 (tshark -x).
    hdr = build_tsh("MQPUT", 976, conversation_id=3, request_id=0, byte_order="little", encoding=273, ccsid=819)
    assert hdr == bytes.fromhex("5453484d000003d0000000030000000002863000" "0000000000000000" "11010000" "3303" "0000")
    plain = build_tsh("SOCKET_ACTION", 48, structid="TSHC", byte_order="little", ctl_flags1=0x38,
                      encoding=273, ccsid=819)
    assert plain == bytes.fromhex("5453484300000030020c3800000000000000000011010000330300 00".replace(" ", ""))
    seg = decode_segment_header(hdr)
    assert (seg.structid, seg.length, seg.type_name, seg.conversation_id) == ("TSHM", 976, "MQPUT", 3)


def test_default_options_sizes():
    # MQPMO v1/v2/v3 and MQGMO v1..v4 wire sizes (packet-mq.c)
    assert [len(default_pmo(version=v)) for v in (1, 2, 3)] == [128, 152, 176]
    assert [len(default_gmo("big", version=v)) for v in (1, 2, 3, 4)] == [72, 80, 100, 112]


# ---------------------------------------------------------------------------
# encoded segments as tshark sees them
# ---------------------------------------------------------------------------
def _csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def _packet(src, dst, sport, dport, seq, ack, flags, payload=b"") -> bytes:
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    pseudo = struct.pack("!4s4sBBH", src, dst, 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", _csum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00" + ip + tcp


def write_pcap(path, units) -> None:
    """A tiny pcap: one TCP connection to port 1414, the client sending each
    of ``units`` (bytes) in its own packets of at most 1400 bytes."""
    c, s = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    frames = [_packet(c, s, 40000, 1414, 999, 0, 0x02), _packet(s, c, 1414, 40000, 4999, 1000, 0x12),
              _packet(c, s, 40000, 1414, 1000, 5000, 0x10)]
    seq = 1000
    for unit in units:
        for i in range(0, len(unit), 1400):
            chunk = unit[i:i + 1400]
            frames.append(_packet(c, s, 40000, 1414, seq, 5000, 0x18, chunk))
            seq += len(chunk)
            frames.append(_packet(s, c, 1414, 40000, 5000, seq, 0x10))
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1_700_000_000 + i, 0, len(fr), len(fr)) + fr)


@pytest.mark.tshark
def test_tshark_reads_our_single_segments(tmp_path, tshark):
    units = []
    expect = []
    for i, order in enumerate(["little", "big"] * 2):
        msgid = bytes([65 + i]) * 24
        raw = md_bytes(order, 1 + i % 2, Format="MQSTR", PutApplName="SIM%d" % i, MsgId=msgid) + b"payload %d" % i
        for kind, enc in (("MQPUT", encode_put), ("MQGET_REPLY", encode_get_reply),
                          ("MQPUT_REPLY", encode_put_reply), ("MQPUT1", encode_put1),
                          ("MESSAGE_DATA", encode_message_data)):
            if kind == "MESSAGE_DATA" and i % 2:
                continue    # MQXQH embeds an MQMD version 1
            if kind == "MESSAGE_DATA":
                seg = enc(raw, remote_q_name="RQ")
            elif kind == "MQPUT1":
                seg = enc(raw, conversation_id=i + 1, object_name="SIM.Q%d" % i, hobj=0)
            else:
                seg = enc(raw, conversation_id=i + 1, hobj=i + 2)
            units.append(seg)
            api = (0 if kind == "MQPUT1" else i + 2) if kind != "MESSAGE_DATA" else None
            expect.append((kind, len(seg), msgid, "MQSTR", "SIM%d" % i, api,
                           "SIM.Q%d" % i if kind == "MQPUT1" else ""))
    stream = b"".join(units)
    path = tmp_path / "sim.pcap"
    write_pcap(path, units)
    rows = tshark_fields(tshark, path, ["_ws.col.Info", "mq.tsh.seglength", "mq.md.msgid", "mq.md.format",
                                        "mq.md.applname", "mq.api.hobj", "mq.od.objname"],
                         display_filter="mq.tsh.structid")
    seen = [(info.split()[0], int(n), bytes.fromhex(mid), fmt.rstrip(), appl.rstrip(),
             int(hobj, 16) if hobj else None, obj.rstrip())
            for info, n, mid, fmt, appl, hobj, obj in rows]
    assert seen == expect
    ours = frame_all(stream)
    assert [(m.kind, m.end - m.offset) for m in of(ours, Message)] == \
        [(k, n) for k, n, *_ in expect]


@pytest.mark.tshark
def test_tshark_reassembles_our_split_put(tmp_path, tshark):
    raw = md_bytes("little", 2, Format="MQSTR", PutApplName="SPLITTER", MsgId=b"Z" * 24) + b"0123456789" * 500
    # every MQ segment fits one TCP packet: tshark 4.0 does not join MQ
    # segments when the first one itself spans TCP packets
    stream = encode_put(raw, conversation_id=5, request_id=3, max_segment_length=1300)
    segs = of(frame_all(stream), Segment)
    assert [s.length for s in segs] == [1300] * 4 + [36 + 16 + 364 + 152 + 4 + 5000 - 4 * 1264]
    assert [(s.first, s.last) for s in segs] == [(True, False)] + [(False, False)] * 3 + [(False, True)]
    path = tmp_path / "split.pcap"
    bounds = [0]
    for seg in segs:
        bounds.append(bounds[-1] + seg.length)
    write_pcap(path, [stream[a:b] for a, b in zip(bounds, bounds[1:])])
    rows = tshark_fields(tshark, path, ["_ws.col.Info", "mq.md.applname", "mq.md.msgid"],
                         display_filter="mq.md.structid")
    # the last frame carries the reassembled MQPUT, with our MQMD and all data
    info, appl, msgid = rows[-1]
    assert appl.rstrip() == "SPLITTER" and bytes.fromhex(msgid) == b"Z" * 24
    assert "(Data 5000 bytes)" in info and "C.R=5.3" in info


@pytest.mark.tshark
def test_tshark_reads_our_async_messages(tmp_path, tshark):
    small = md_bytes("little", 2, Format="MQSTR", PutApplName="ASYNCAPP", MsgId=b"Q" * 24) + b"abc" * 100
    big = md_bytes("big", 1, Format="MQSTR", PutApplName="ASYNC2", MsgId=b"R" * 24) + b"xyz" * 1000
    one = encode_async_message(small, conversation_id=3, resolved_q_name="DEV.QUEUE.1", hobj=4, glb_msg_idx=9)
    split = encode_async_message(big, conversation_id=3, resolved_q_name="Q", max_segment_length=1200)
    segs = of(frame_all(split), Segment)
    bounds = [0]
    for seg in segs:
        bounds.append(bounds[-1] + seg.length)
    assert len(segs) == 3
    write_pcap(tmp_path / "async.pcap", [one] + [split[a:b] for a, b in zip(bounds, bounds[1:])])
    rows = tshark_fields(tshark, tmp_path / "async.pcap", ["mq.msgasy.resolqnme", "mq.md.applname", "_ws.col.Info"],
                         display_filter="mq.md.structid")
    first, last = rows[0], rows[-1]
    assert first[0] == "DEV.QUEUE.1" and first[1].rstrip() == "ASYNCAPP"
    assert "Hdl=0x0004 GlbMsgIdx=9" in first[2] and "(Data %d bytes)" % len(small) in first[2]
    assert last[1].rstrip() == "ASYNC2" and "(Data %d bytes)" % len(big) in last[2]
    ours = of(frame_all(one + split), Message)
    assert [m.data for m in ours] == [small, big]


# ---------------------------------------------------------------------------
# faults
# ---------------------------------------------------------------------------
def _sample_stream():
    raw = md_bytes("little", 1, Format="MQSTR", PutApplName="A") + b"x" * 400
    multi = encode_put(raw, conversation_id=2, split_points=[300, 600])          # 3 segments
    single = encode_put(md_bytes("big", 1, Format="MQSTR") + b"tail", conversation_id=3, byte_order="big")
    hb = build_tsh("HEARTBEAT", 28, structid="TSH")
    return multi, single, hb, raw


def segment_bounds(stream: bytes) -> list:
    """Where each segment of an encoded stream starts, and its end, by the MQSegmLen of each header."""
    bounds = [0]
    while bounds[-1] < len(stream):
        bounds.append(bounds[-1] + struct.unpack_from(">I", stream, bounds[-1] + 4)[0])
    return bounds


def test_truncation_at_every_byte(impl):
    multi, single, hb, raw = _sample_stream()
    stream = multi + single + hb
    bounds = segment_bounds(stream)
    assert len(bounds) == 6                     # the 3-segment MQPUT, the MQPUT, the heartbeat
    for k in range(len(stream) + 1):
        events = frame_all(stream[:k], impl=impl)
        whole = [b for b in bounds[1:] if b <= k]
        if impl == "py":
            assert [s.offset + s.length for s in of(events, Segment)] == whole
        errors = of(events, FramingError)
        partial = k not in bounds
        pending = 1 <= len(whole) <= 2          # the 3-segment MQPUT was opened, not closed
        assert len(errors) == int(partial) + int(pending), k
        for e in errors:
            if e.structure == "TSH":
                assert e.raw == stream[e.offset:k] and e.offset == max(b for b in bounds if b < k)
                assert impl != "py" or e.error_offset == k
            else:
                assert e.structure == "MQPUT" and e.raw.startswith(stream[:bounds[1]]) and e.offset == 0
        assert [u[0] for u in units(events)] == [0] * (k >= bounds[3]) + [bounds[3]] * (k >= bounds[4])


def test_gap_between_segments_of_a_multi_segment_message(impl):
    multi, single, hb, raw = _sample_stream()
    b = segment_bounds(multi)
    a1, a2, a3 = multi[:b[1]], multi[b[1]:b[2]], multi[b[2]:]
    f = framer("mq", impl)
    f.feed(a1)
    f.gap(len(a2))
    f.feed(a3 + single)
    f.close()
    ev = run_all(f)
    if impl == "py":
        kinds = [type(e).__name__ for e in ev]
        assert kinds == ["Segment", "FramingError", "Resynchronised", "Segment", "FramingError", "Segment", "Message"]
        # a continuation without its first segment; CtlFlag1 is byte 18 of a TSHM
        assert ev[4].error_offset == len(a1) + len(a2) + 18
    ev = [e for e in ev if not isinstance(e, Segment)]
    assert [type(e) for e in ev] == [FramingError, Resynchronised, FramingError, UNITS[impl != "py"]]
    lost = ev[0]
    assert lost.structure == "MQPUT" and lost.raw == a1 and "gap of %d bytes" % len(a2) in lost.reason
    assert ev[1] == Resynchronised(len(a1) + len(a2), len(a2))
    assert ev[2].field == "CtlFlag1" and ev[2].raw == a3 and ev[2].offset == len(a1) + len(a2)
    assert ev[3].data[-4:] == b"tail" and ev[3].offset == len(multi)


def test_gap_inside_a_segment_resyncs_at_its_end(impl):
    multi, single, hb, raw = _sample_stream()
    b = segment_bounds(multi)
    n0, n1 = b[1], b[2] - b[1]
    f = framer("mq", impl)
    f.feed(multi[:n0 + 40])
    f.gap(100)
    f.feed(multi[n0 + 140:] + single)
    f.close()
    ev = run_all(f)
    errors = of(ev, FramingError)
    assert [e.structure for e in errors] == ["MQPUT", "TSH", "TSHM"]
    # the damaged segment: its bytes before and after the hole, its full extent
    assert errors[1].offset == n0 and errors[1].length == n1
    assert impl != "py" or errors[1].error_offset == n0 + 40
    assert errors[1].raw == multi[n0:n0 + 40] + multi[n0 + 140:n0 + n1]
    assert of(ev, Resynchronised) == [Resynchronised(n0 + n1, n1)]
    assert errors[2].field == "CtlFlag1" and errors[2].offset == n0 + n1
    assert [u[0] for u in units(ev)] == [len(multi)]


def test_garbage_between_segments(impl):
    multi, single, hb, raw = _sample_stream()
    junk = b"garbage TSH \xff\xff\xff\xff more TSHM\x00\x00\x00\x05 junk"
    ev = frame_all(single + junk + single, impl=impl)
    if impl == "py":
        assert [type(e).__name__ for e in ev] == ["Segment", "Message", "FramingError", "Resynchronised",
                                                  "Segment", "Message"]
        assert ev[2].error_offset == len(single)
    ev = [e for e in ev if not isinstance(e, Segment)]
    assert [type(e) for e in ev] == [UNITS[impl != "py"], FramingError, Resynchronised, UNITS[impl != "py"]]
    err = ev[1]
    assert err.offset == len(single) and err.raw == junk and err.length == len(junk)
    assert err.field == "StructID"
    assert ev[2] == Resynchronised(len(single) + len(junk), len(junk))


def test_absurd_lengths_are_errors_not_allocations(impl):
    multi, single, hb, raw = _sample_stream()
    huge = bytearray(single)
    huge[4:8] = b"\xff\xff\xff\xff"
    f = framer("mq", impl)
    f.feed(bytes(huge) + single)
    ev = run_all(f)
    assert isinstance(ev[0], FramingError) and ev[0].field == "MQSegmLen" and ev[0].offset == 0
    assert impl != "py" or ev[0].error_offset == 4
    assert isinstance(ev[1], Resynchronised) and ev[1].offset == len(single)
    assert isinstance(ev[-1], UNITS) and ev[-1].offset == len(single)
    # a bound lower than the segment: same treatment
    ev = frame_all(single, max_segment_length=100)
    assert of(ev, Segment) == [] and of(ev, FramingError)[0].field == "MQSegmLen"
    # a length below the header size
    tiny = bytearray(hb)
    tiny[4:8] = struct.pack(">I", 27)
    ev = frame_all(bytes(tiny), impl=impl)
    assert [(e.field, e.raw) for e in of(ev, FramingError)] == [("MQSegmLen", bytes(tiny))]


def test_bad_inner_structures_are_framing_errors(impl):
    raw = md_bytes("little", 1, Format="MQSTR") + b"data"
    put = bytearray(encode_put(raw))
    put[36 + 16 + 4] = 9                                   # MQMD.Version 9
    (err,) = of(frame_all(bytes(put), impl=impl), FramingError)
    assert (err.structure, err.field, err.offset, err.raw) == ("MQMD", "Version", 0, bytes(put))
    assert impl != "py" or err.error_offset == 36 + 16 + 4
    put = bytearray(encode_put(raw))
    dl = 36 + 16 + 324 + 152
    put[dl:dl + 4] = struct.pack("<i", 10**6)              # DataLength beyond the segment
    (err,) = of(frame_all(bytes(put), impl=impl), FramingError)
    assert (err.structure, err.field) == ("MQPUT", "DataLength")
    assert impl != "py" or err.error_offset == dl
    assert err.raw == bytes(put)


def test_joined_message_bound():
    raw = md_bytes("little", 1, Format="MQSTR") + b"q" * 5000
    stream = encode_put(raw, max_segment_length=1000)
    ev = frame_all(stream, max_message_length=2000)
    (err,) = of(ev, FramingError)
    assert err.structure == "MQPUT" and err.length == len(stream) and len(err.raw) <= 2000 + 1000
    assert of(ev, Message) == []


def test_open_messages_are_bounded_across_conversations():
    raw = md_bytes("little", 1, Format="MQSTR") + b"w" * 900
    firsts = []
    for conv in range(1, 6):                       # five conversations open a message each
        seg = encode_put(raw, conversation_id=conv, split_points=[600])
        firsts.append(seg[:of(frame_all(seg), Segment)[0].length])
    f = MQStreamFramer(max_pending_messages=3)
    f.feed(b"".join(firsts))
    errors = of(run_all(f), FramingError)
    assert [e.conversation_id for e in errors] == [1, 2]
    assert all("exceed 3 messages" in e.reason for e in errors) and f.pending_messages == 3
    g = MQStreamFramer(max_pending_bytes=1500)
    g.feed(b"".join(firsts))
    assert [e.conversation_id for e in of(run_all(g), FramingError)] == [1, 2, 3]


def test_framer_state_errors(impl):
    f = framer("mq", impl)
    assert f.next_event() is NEED_DATA
    f.close()
    assert f.next_event() is CLOSED
    with pytest.raises(FramerStateError):
        f.feed(b"x")
    with pytest.raises(FramerStateError):
        f.gap(1)
    with pytest.raises(ValueError):
        framer("mq", impl).gap(-1)


def test_decode_segment_header_errors_are_typed():
    with pytest.raises(DecodeError) as e:
        decode_segment_header(b"TSHM\0\0\0\x24\0\0", stream_offset=100)
    assert e.value.structure == "TSHM" and e.value.offset >= 100
    with pytest.raises(DecodeError) as e:
        decode_segment_header(b"HTTP/1.1 200")
    assert e.value.field == "StructID"


@SETTINGS
@given(st.data())
def test_fuzz_never_raises_and_accounts_for_bytes(impl, data):
    multi, single, hb, raw = _sample_stream()
    pieces = data.draw(st.lists(st.sampled_from([multi, single, hb, b"TSH ", b"TSHM\x00\x00\x00\x30", b"\x00" * 7]),
                                max_size=6))
    stream = bytearray(b"".join(pieces))
    for _ in range(data.draw(st.integers(0, 4))):
        if stream:
            i = data.draw(st.integers(0, len(stream) - 1))
            stream[i] = data.draw(st.integers(0, 255))
    stream = bytes(stream)
    f = framer("mq", impl)
    pos = 0
    fed = 0
    while pos < len(stream):
        n = data.draw(st.integers(1, 400))
        if data.draw(st.integers(0, 9)) == 0:
            f.gap(n)
            pos += n
        else:
            f.feed(stream[pos:pos + n])
            fed += len(stream[pos:pos + n])
            pos += n
    f.close()
    events = run_all(f)
    assert all(isinstance(e, (Segment, Message, StreamUnit, FramingError, Resynchronised)) for e in events)
    # whole segments and the stretches that were no segment never overlap
    spans = [(e.offset, e.offset + e.length) for e in events if isinstance(e, Segment)]
    spans += [(e.offset, e.offset + e.length) for e in events if isinstance(e, FramingError)
              and e.structure in ("TSH", "TSHM", "TSHC") and e.field != "CtlFlag1"]
    spans.sort()
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        assert a1 <= b0
    assert not spans or spans[-1][1] <= pos          # pos: bytes fed plus gaps
    for e in of(events, FramingError):
        assert len(e.raw) <= e.length
    for r in of(events, Resynchronised):
        assert 0 < r.skipped <= r.offset


@SETTINGS
@given(st.data())
def test_chunking_never_changes_the_events(impl, data):
    multi, single, hb, raw = _sample_stream()
    pieces = data.draw(st.lists(st.sampled_from([multi, single, hb, b"TSH ", b"\xe3\xe2\xc8\xd4", b"junk"]),
                                max_size=6))
    stream = bytearray(b"".join(pieces))
    for _ in range(data.draw(st.integers(0, 3))):
        if stream:
            stream[data.draw(st.integers(0, len(stream) - 1))] = data.draw(st.integers(0, 255))
    stream = bytes(stream)
    whole = frame_all(stream, impl=impl)
    chunks = data.draw(st.lists(st.integers(1, 64), max_size=60))
    assert frame_all(stream, chunks=chunks, impl=impl) == whole
