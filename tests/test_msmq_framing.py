"""MSMQ stream framing, both implementations (``impl``: the pure
mqcodec.msmq.framing.MSMQStreamFramer and the capture core's compiled framer,
through mqcodec.framers.framer).

Expected values come from outside this repo: the [MS-MQQB] 4.1 example frames
(their PacketSize and direction as the spec text annotates them), the
vectors' README (V11 carries bytes beyond PacketSize, V12 is the first 240
bytes of a 2404-byte packet), [MS-MQMQ] 2.2.19.1 (PacketSize maximum
0x00400000, SessionHeader not counted), plus byte-exact round trips and
hypothesis properties (every packet found at its offset, garbage reported
with its exact offsets and bytes, every stream byte accounted for once).
Tests that take ``impl`` hold both framers to what both report (packets as
offset, data and kind; FramingErrors; Resynchronised events); what only the
pure framer reports (session states and notes, ``incomplete``, a mid-stream
start) is checked on the pure framer.
"""
from __future__ import annotations

import re
import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcodec.errors import DecodeError, EncodeError
from mqcodec.framers import framer
from mqcodec.msmq import (BaseFlags, BaseHeader, DirectQueueFormatName, InternalHeader, MessagePropertiesHeader,
                          PrivateQueueFormatNameId, SessionHeader, UserFlags, UserHeader, decode_packet,
                          encode_packet)
from mqcodec.msmq import Packet as DecodedPacket
from mqcodec.msmq import constants as C
from mqcodec.msmq import builders as MB
from mqcodec.msmq import framing as F
from mqcodec.msmq.capture_framer import CaptureFramer
from mqcodec.msmq.framing import (CLOSED, NEED_DATA, FramingError, Incomplete, MSMQStreamFramer, Packet,
                                  Resynchronised)
from mqcodec.stream_events import FramerStateError, StreamUnit

from conftest import ACK, CP_REQ, CP_RSP, EC_REQ, EC_RSP, UM_222

#: the unit events: the pure framer's Packet, the compiled framer's StreamUnit
UNITS = (Packet, StreamUnit)



def _read(vectors, name):
    return (vectors / "msmq" / name).read_bytes()


@pytest.fixture(scope="module")
def mqqb(vectors):
    return (vectors.parent / "specs" / "MS-MQQB.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def spec_frames(mqqb):
    """PacketSize and direction of each 4.1 frame, as the spec's annotations state them."""
    out = {}
    for num in range(3, 9):
        sect = mqqb.split("### 4.1.%d FRAME" % num, 1)[1].split("<a id=", 1)[0]
        size = int(re.search(r"PacketSize: (\d+) \(0x", sect).group(1))
        to_server = bool(re.search(r"From client TCP port \d+ to (server )?TCP port 1801", sect))
        out[num] = (size, to_server)
    return out


def run(framer, data=b"", *, close=False):
    if data:
        framer.feed(data)
    if close:
        framer.close()
    out = []
    while True:
        ev = framer.next_event()
        if ev is NEED_DATA or ev is CLOSED:
            return out, ev
        out.append(ev)


def frame_all(chunks, *, close=True, impl="py", **kw):
    """Events of a framer fed ``chunks`` (bytes, or ("gap", n)) one by one."""
    assert impl == "py" or not kw, "synchronised= is an option of the pure framer"
    f = MSMQStreamFramer(**kw) if kw else framer("msmq", impl)
    events = []
    for c in chunks:
        if isinstance(c, tuple):
            f.gap(c[1])
        else:
            f.feed(c)
        events += list(f)
    if close:
        f.close()
        events += list(f)
        assert f.next_event() is CLOSED
    return events


def accounted(events):
    """(offset, bytes) of every reported byte range, in order."""
    return [(e.offset, e.data if isinstance(e, UNITS) else e.raw)
            for e in events if isinstance(e, UNITS) or (isinstance(e, FramingError) and e.raw)]


def assert_covers(events, stream, gaps=()):
    """Every stream byte is in exactly one Packet.data / FramingError.raw, or in a gap.
    ``stream``: the bytes (gap bytes included) or the stream length."""
    pos, gi = 0, sorted(gaps)
    for off, raw in accounted(events):
        while gi and gi[0][0] == pos:
            pos += gi.pop(0)[1]
        assert off == pos, (off, pos)
        pos += len(raw)
    while gi and gi[0][0] == pos:
        pos += gi.pop(0)[1]
    assert pos == (stream if isinstance(stream, int) else len(stream))


# ====================================================================== the [MS-MQQB] 4.1 session


def test_spec_frames_directions_and_sizes(vectors, spec_frames):
    files = {3: EC_REQ, 4: EC_RSP, 5: CP_REQ, 6: CP_RSP, 7: UM_222, 8: ACK}
    for num, (size, to_server) in spec_frames.items():
        data = _read(vectors, files[num])
        assert to_server == (num in (3, 5, 7))
        assert struct.unpack_from("<I", data, 8)[0] == size
        if num != 7:
            assert len(data) == size
    assert spec_frames[7][0] == 2224 and len(_read(vectors, UM_222)) == 222


def test_initiator_stream(vectors, spec_frames, impl):
    ec, cp, um = (_read(vectors, n) for n in (EC_REQ, CP_REQ, UM_222))
    events = frame_all([ec + cp + um], impl=impl)
    assert [type(e) for e in events] == [UNITS[impl != "py"]] * 2 + [FramingError]
    assert [(e.offset, e.data, e.kind) for e in events[:2]] == [
        (0, ec, "EstablishConnection"), (spec_frames[3][0], cp, "ConnectionParameters")]
    # the 4.1.7 UserMessage is 2224 bytes: incomplete at the end of the stream
    err = events[2]
    assert (err.offset, err.structure, err.field, err.raw) == (604, "BaseHeader", "PacketSize", um)
    assert "2224" in err.reason and "222" in err.reason
    # what only the pure framer reports: session states, the packet it waits for
    f = MSMQStreamFramer()
    events, end = run(f, ec + cp + um)
    assert end is NEED_DATA
    assert [(e.offset, e.length, e.kind, e.state, e.note) for e in events] == [
        (0, spec_frames[3][0], "EstablishConnection", "EstablishConnectionSeen", ""),
        (572, spec_frames[5][0], "ConnectionParameters", "ConnectionParametersSeen", "")]
    assert events[0].data == ec and events[1].data == cp
    # the 4.1.7 UserMessage is 2224 bytes: incomplete while the stream is open, not an error
    assert f.incomplete == Incomplete(604, "UserMessage", spec_frames[7][0], 222)
    assert run(f) == ([], NEED_DATA)
    events, end = run(f, close=True)
    assert end is CLOSED and len(events) == 1
    err = events[0]
    assert isinstance(err, FramingError)
    assert (err.offset, err.structure, err.field, err.raw) == (604, "BaseHeader", "PacketSize", um)
    assert "2224" in err.reason and "222" in err.reason
    assert err.to_decode_error().offset == 604
    assert f.incomplete is None


def test_acceptor_stream(vectors, spec_frames, impl):
    ec, cp, ack = (_read(vectors, n) for n in (EC_RSP, CP_RSP, ACK))
    events = frame_all([ec + cp + ack], impl=impl)
    assert [(e.offset, len(e.data), e.kind) for e in events] == [
        (0, 572, "EstablishConnection"), (572, 32, "ConnectionParameters"), (604, spec_frames[8][0], "SessionAck")]
    if impl == "py":
        assert [e.state for e in events] == ["EstablishConnectionSeen", "ConnectionParametersSeen", "Established"]
    for e in events:
        pkt = decode_packet(e.data)
        assert pkt.kind == e.kind and encode_packet(pkt) == e.data


@pytest.mark.parametrize("side", ["initiator", "acceptor"])
def test_every_split_point_gives_the_same_events(vectors, side, impl):
    names = (EC_REQ, CP_REQ, UM_222) if side == "initiator" else (EC_RSP, CP_RSP, ACK)
    stream = b"".join(_read(vectors, n) for n in names)
    whole = frame_all([stream], impl=impl)
    assert_covers(whole, stream)
    for i in range(len(stream) + 1):
        assert frame_all([stream[:i], stream[i:]], impl=impl) == whole, i


def test_byte_at_a_time(vectors, impl):
    stream = _read(vectors, EC_RSP) + _read(vectors, CP_RSP) + _read(vectors, ACK)
    whole = frame_all([stream], impl=impl)
    assert frame_all([stream[i:i + 1] for i in range(len(stream))], impl=impl) == whole and len(whole) == 3


# ====================================================================== ping (UDP 3527)


@pytest.mark.parametrize("name,flags,guid", [
    ("4.1.1_ping_request.bin", 0x7D01, "C626EA11-E6B6-9749-9595-9150557358D1"),
    ("4.1.2_ping_response.bin", 0xB295, "FCA09E90-7890-4544-8F11-394C43CD8907")])
def test_decode_ping(vectors, name, flags, guid):
    data = _read(vectors, name)
    p = F.decode_ping(data)
    # values annotated in [MS-MQQB] 4.1.1 / 4.1.2 (the GUIDs printed as the wire bytes reversed)
    assert p.Cookie == 4 and p.Signature == 0x5548 and int(p.Flags) == flags
    assert p.Flags.RC == 1 and p.Flags.RF == 0
    assert p.QMGuid.bytes_le[::-1] == bytes.fromhex(guid.replace("-", ""))
    assert p.encode() == data


@pytest.mark.parametrize("data", [b"", b"\x01\x7d\x48", b"\x01\x7dHX" + bytes(20), bytes(24), None, "text"])
def test_decode_ping_errors(data):
    with pytest.raises(DecodeError):
        F.decode_ping(data)


# ====================================================================== framing rules


def _header(flags=0, size=16, version=0x10, sig=b"LIOR"):
    return bytes([version, 0]) + struct.pack("<H", flags) + sig + struct.pack("<II", size, 0xFFFFFFFF)


def test_session_header_outside_packet_size():
    # [MS-MQMQ] 2.2.19.1: PacketSize MUST NOT include the SessionHeader; a UserMessage with SH is
    # followed by 16 more bytes.  Internal with SH: 20 -> +16; 36 counted.
    assert F.framed_length(0x0010, 100) == 116
    assert F.framed_length(0x0000, 100) == 100
    assert F.framed_length(0x0018, 20) == 36
    assert F.framed_length(0x0018, 36) == 36
    assert F.framed_length(0x0008, 32) == 32


def test_user_message_with_piggy_backed_session_header(impl):
    uh = UserHeader(Flags=UserFlags(DQ=3, MP=1), DestinationQueue=PrivateQueueFormatNameId(7))
    mp = MessagePropertiesHeader(Label="x", MessageBody=b"abc")
    sh = SessionHeader(AckSequenceNumber=2, WindowSize=64)
    um = encode_packet(DecodedPacket("UserMessage", BaseHeader(Flags=BaseFlags(PR=3, SH=1)),
                                     UserHeader=uh, MessagePropertiesHeader=mp, SessionHeader=sh))
    size = struct.unpack_from("<I", um, 8)[0]
    assert len(um) == size + 16
    ack20 = DecodedPacket("SessionAck", BaseHeader(Flags=BaseFlags(PR=3, IN=1, SH=1)),
                          InternalHeader=InternalHeader(Flags=1), SessionHeader=sh)
    ack20.session_header_counted = False
    ack20 = encode_packet(ack20)
    assert struct.unpack_from("<I", ack20, 8)[0] == 20 and len(ack20) == 36
    stream = MB.frame_packets([um, ack20, um])
    events = frame_all([stream], impl=impl)
    assert [(e.offset, len(e.data), e.kind) for e in events] == [
        (0, len(um), "UserMessage"), (len(um), 36, "SessionAck"), (len(um) + 36, len(um), "UserMessage")]
    assert decode_packet(events[0].data).SessionHeader == sh


@pytest.mark.parametrize("size,ok", [(15, False), (16, True), (0x00400000, True), (0x00400001, False),
                                     (0xFFFFFFFF, False), (0, False)])
def test_packet_size_range(size, ok, impl):
    # both framers: a bare BaseHeader is a packet; else, at the end of the stream, an error
    events = frame_all([_header(size=size)], impl=impl)
    if size == 16:
        assert [(e.offset, e.data) for e in events] == [(0, _header(size=16))]
    else:
        assert [(e.offset, e.field, e.raw) for e in events] == [(0, "PacketSize", _header(size=size))]
    f = MSMQStreamFramer()
    events, end = run(f, _header(size=size))
    if size == 16:                     # a bare BaseHeader is a whole (if useless) packet
        assert [(e.offset, e.length) for e in events] == [(0, 16)]
    elif ok:
        assert events == [] and end is NEED_DATA
        assert f.incomplete == Incomplete(0, "UserMessage", size, 16)
    else:
        assert f.incomplete is None
        events, end = run(f, close=True)
        assert [(e.offset, e.field) for e in events] == [(0, "PacketSize")] and events[0].raw == _header(size=size)


def test_internal_packet_below_internal_header_is_rejected():
    assert F.check_base_header(_header(flags=0x0008, size=16))[0] == "PacketSize"
    assert F.check_base_header(_header(flags=0x0008, size=20)) is None


def test_bad_version_and_signature():
    assert F.check_base_header(_header(version=0x11))[:1] == ("VersionNumber",)
    assert F.check_base_header(_header(sig=b"LIOS"))[:1] == ("Signature",)
    assert F.check_base_header(b"\x10\x00\x00\x00LI") is None       # a prefix is checked as far as it goes
    assert F.check_base_header(b"\x10\x00\x00\x00LX")[0] == "Signature"


def test_huge_packet_size_allocates_nothing(vectors, impl):
    ack = _read(vectors, ACK)
    bad = _header(size=0xFFFFFFFF)
    tracemalloc.start()   # (the compiled framer allocates nothing of its own for a packet)
    try:
        f = framer("msmq", impl)
        events, _ = run(f, bad)
        events += run(f, ack, close=True)[0]
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024, peak
    assert [type(e) for e in events] == [FramingError, Resynchronised, UNITS[impl != "py"]]
    assert (events[0].offset, events[0].field, events[0].raw) == (0, "PacketSize", bad)
    assert events[1] == Resynchronised(16, 16)
    assert (events[2].offset, events[2].data, events[2].kind) == (16, ack, "SessionAck")


def test_max_size_packet_waits_without_copying_more_than_fed():
    f = MSMQStreamFramer()
    f.feed(_header(size=C.MAX_PACKET_SIZE))
    tracemalloc.start()
    try:
        for _ in range(4):
            assert f.next_event() is NEED_DATA
            assert f.incomplete.length == 0x00400000
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


# ====================================================================== malformed vectors


@pytest.mark.parametrize("name", ["V9_queuejumper_poc.bin", "V11_noisefest_fullsignature.bin",
                                  "V12_msf_queuejumper_prefix240.bin"])
def test_malformed_vectors_frame_cleanly(vectors, name, impl):
    data = (vectors / "msmq" / "malformed" / name).read_bytes()
    whole = frame_all([data], impl=impl)
    assert all(isinstance(e, (UNITS, FramingError, Resynchronised)) for e in whole)
    assert_covers(whole, data)
    assert frame_all([data[i:i + 1] for i in range(len(data))], impl=impl) == whole
    for e in whole:
        if isinstance(e, UNITS):
            try:                               # the caller's decode: clean error or packet
                decode_packet(e.data)
            except DecodeError:
                pass
    size = struct.unpack_from("<I", data, 8)[0]
    if name.startswith("V9"):          # PacketSize 256, the whole file
        assert [(e.offset, len(e.data), e.kind) for e in whole] == [(0, 256, "UserMessage")] and size == 256
    elif name.startswith("V11"):       # bytes beyond PacketSize (README)
        assert size < len(data)
        assert [type(e) for e in whole] == [UNITS[impl != "py"], FramingError]
        assert whole[0].data == data[:size] and whole[1].offset == size and whole[1].raw == data[size:]
    else:                              # the first 240 bytes of a 2404-byte packet (README)
        assert size == 2404
        assert len(whole) == 1 and whole[0].field == "PacketSize" and whole[0].raw == data


# ====================================================================== gaps


def _packets(seed=7, n=5):
    s = MB.simulate_session(seed, messages=n)
    return [p for _k, p in s.initiator_packets]


def _starts(pk):
    return [sum(map(len, pk[:i])) for i in range(len(pk) + 1)]


def test_gap_inside_a_packet_breaks_only_that_packet(impl):
    pk = _packets()
    stream = MB.frame_packets(pk)
    starts = _starts(pk)
    k = 2
    cut = starts[k] + 100
    n = 50
    events = frame_all([stream[:cut], ("gap", n), stream[cut + n:]], impl=impl)
    kinds = [type(e) for e in events]
    unit = UNITS[impl != "py"]
    assert kinds == [unit, unit, FramingError, FramingError] + [unit] * (len(pk) - 3)
    e1, e2 = events[2], events[3]
    assert (e1.offset, e1.raw) == (starts[k], stream[starts[k]:cut])
    assert (e2.offset, e2.raw) == (cut + n, stream[cut + n:starts[k + 1]])
    assert [(e.offset, e.data) for e in events[4:]] == [(starts[i], pk[i]) for i in range(k + 1, len(pk))]
    assert_covers(events, stream, [(cut, n)])


def test_gap_at_a_packet_boundary(impl):
    pk = _packets()
    stream = MB.frame_packets(pk)
    b = len(pk[0])
    # a gap exactly at a packet boundary: the next packet is found again (skipped = the gap)
    events = frame_all([stream[:b], ("gap", len(pk[1])), stream[b + len(pk[1]):]], impl=impl)
    unit = UNITS[impl != "py"]
    assert [type(e) for e in events] == [unit, Resynchronised] + [unit] * (len(pk) - 2)
    assert events[1] == Resynchronised(b + len(pk[1]), len(pk[1]))


def test_gap_inside_the_base_header_and_across_packet_end(impl):
    pk = _packets()
    stream = MB.frame_packets(pk)
    st_ = _starts(pk)
    s2, s4 = st_[2], st_[4]
    # 10 header bytes of packet 2, then a gap that also swallows the start of packet 3
    n = len(pk[2]) - 10 + 5
    events = frame_all([stream[:s2 + 10], ("gap", n), stream[s2 + 10 + n:]], impl=impl)
    assert isinstance(events[2], FramingError) and events[2].raw == stream[s2:s2 + 10]
    assert [e for e in events if isinstance(e, Resynchronised)] == [Resynchronised(s4, s4 - s2)]
    assert [e.offset for e in events if isinstance(e, UNITS)] == st_[:2] + st_[4:-1]
    assert_covers(events, stream, [(s2 + 10, n)])
    # gap after a whole header, running past the packet's end: the broken packet is reported,
    # the skipped count starts at its end
    n = len(pk[2]) - 20 + 8
    events = frame_all([stream[:s2 + 20], ("gap", n), stream[s2 + 20 + n:]], impl=impl)
    assert events[2].offset == s2 and events[2].raw == stream[s2:s2 + 20]
    assert [e for e in events if isinstance(e, Resynchronised)] == [Resynchronised(s4, s4 - st_[3])]
    assert [e.offset for e in events if isinstance(e, UNITS)] == st_[:2] + st_[4:-1]
    assert_covers(events, stream, [(s2 + 20, n)])


def test_mid_stream_start():
    pk = _packets()
    stream = MB.frame_packets(pk)
    st_ = _starts(pk)
    cut = st_[2] + 37
    events = frame_all([stream[cut:]], synchronised=False, offset=cut)
    assert isinstance(events[0], FramingError) and events[0].offset == cut
    assert events[0].raw == stream[cut:st_[3]]
    assert events[1] == Resynchronised(st_[3], st_[3] - cut)
    pkts = [e for e in events if isinstance(e, Packet)]
    assert [e.offset for e in pkts] == st_[3:-1]
    assert all(e.note == "" and e.state == "Unknown" for e in pkts)
    # a capture that starts exactly on a packet
    events = frame_all([stream[st_[3]:]], synchronised=False, offset=st_[3])
    assert events[0] == Resynchronised(st_[3], 0) and isinstance(events[1], Packet)


# ====================================================================== hypothesis


def _garbage():
    # no 0x10 byte: no packet can start inside it, and a packet boundary followed by it fails at once;
    # or a decoy: VersionNumber + "LIOR" with an implausible PacketSize
    plain = st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\x10", b"\x11"))
    decoy = st.sampled_from([0xFFFFFFFF, 0x00400001, 3, 0]).map(lambda s: _header(size=s))
    return st.one_of(plain, decoy, st.tuples(plain, decoy).map(lambda t: t[0] + t[1]))


def _extra_packets():
    """Packets whose stream length is not plain PacketSize, or whose kind needs a look inside."""
    sh = SessionHeader(AckSequenceNumber=1, WindowSize=64)
    ack20 = DecodedPacket("SessionAck", BaseHeader(Flags=BaseFlags(PR=3, IN=1, SH=1)),
                          InternalHeader=InternalHeader(Flags=1), SessionHeader=sh)
    ack20.session_header_counted = False
    uh = UserHeader(Flags=UserFlags(DQ=3, MP=1), DestinationQueue=PrivateQueueFormatNameId(9))
    um_sh = DecodedPacket("UserMessage", BaseHeader(Flags=BaseFlags(PR=1, SH=1)), UserHeader=uh,
                          MessagePropertiesHeader=MessagePropertiesHeader(Label="s", MessageBody=b"\x10LIOR"),
                          SessionHeader=sh)
    return [encode_packet(ack20), encode_packet(um_sh), _ack_packet(0x00FF, bytes(36), False)]


@st.composite
def streams(draw):
    seed = draw(st.integers(0, 10_000))
    sess = MB.simulate_session(seed, messages=draw(st.integers(1, 4)))
    pk = [p for _k, p in (sess.initiator_packets if draw(st.booleans()) else sess.acceptor_packets)]
    pk = pk[:draw(st.integers(1, len(pk)))]
    for extra in draw(st.lists(st.sampled_from(_EXTRA), max_size=3)):
        pk.insert(draw(st.integers(0, len(pk))), extra)
    pieces, expected_pk, expected_garbage = [], [], []
    pos = 0
    for p in pk + [None]:
        if draw(st.integers(0, 3)) == 0:
            g = draw(_garbage())
            pieces.append(g)
            expected_garbage.append((pos, g))
            pos += len(g)
        if p is not None:
            pieces.append(p)
            expected_pk.append((pos, p))
            pos += len(p)
    stream = b"".join(pieces)
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    chunks = [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)])]
    return stream, chunks, expected_pk, expected_garbage


@settings(max_examples=150, deadline=None)
@given(streams())
def test_random_streams_garbage_and_chunking(impl, case):
    stream, chunks, expected_pk, expected_garbage = case
    events = frame_all(chunks, impl=impl)
    assert events == frame_all([stream], impl=impl)
    assert [(e.offset, e.data) for e in events if isinstance(e, UNITS)] == expected_pk
    errors = [e for e in events if isinstance(e, FramingError)]
    assert [(e.offset, e.raw) for e in errors] == expected_garbage
    # a Resynchronised event follows each garbage run that a packet follows
    resync = [e for e in events if isinstance(e, Resynchronised)]
    want = [(g_off + len(g), len(g)) for g_off, g in expected_garbage if g_off + len(g) < len(stream)]
    assert [(r.offset, r.skipped) for r in resync] == want
    assert_covers(events, stream)
    for e in events:
        if isinstance(e, UNITS):
            assert decode_packet(e.data).kind == e.kind


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 10_000), st.data())
def test_random_gap_breaks_one_packet(impl, seed, data):
    pk = [p for _k, p in MB.simulate_session(seed, messages=3).initiator_packets]
    stream = MB.frame_packets(pk)
    starts = [sum(map(len, pk[:i])) for i in range(len(pk) + 1)]
    k = data.draw(st.integers(0, len(pk) - 2))
    cut = data.draw(st.integers(starts[k] + 16, starts[k + 1] - 1))
    n = data.draw(st.integers(1, starts[k + 1] - cut))
    events = frame_all([stream[:cut], ("gap", n), stream[cut + n:]], impl=impl)
    assert_covers(events, stream, [(cut, n)])
    got = [(e.offset, e.data) for e in events if isinstance(e, UNITS)]
    assert got == [(starts[i], pk[i]) for i in range(len(pk)) if i != k]
    errs = [e for e in events if isinstance(e, FramingError)]
    assert errs[0].offset == starts[k] and errs[0].raw == stream[starts[k]:cut]
    assert not any(isinstance(e, Resynchronised) for e in events)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=5),
       st.lists(st.tuples(st.integers(0, 300), st.integers(1, 100)), max_size=3))
def test_arbitrary_bytes_and_gaps_never_raise(impl, blob, cuts, gaps):
    # splice a real packet in so that some cases frame
    blob = blob[:len(blob) // 2] + _header(size=36, flags=0x001B) + b"\0\0\x01\0" + bytes(16) + blob[len(blob) // 2:]
    points = sorted(set([c for c in cuts if c <= len(blob)] + [g[0] for g in gaps if g[0] <= len(blob)]))
    gap_at = {g[0]: g[1] for g in gaps}
    f = framer("msmq", impl)
    events, prev, gap_list, shift = [], 0, [], 0
    for pnt in points + [len(blob)]:
        f.feed(blob[prev:pnt])
        events += list(f)
        if pnt in gap_at and pnt < len(blob):
            f.gap(gap_at[pnt])
            gap_list.append((pnt + shift, gap_at[pnt]))
            shift += gap_at[pnt]
            events += list(f)
        prev = pnt
    f.close()
    events += list(f)
    assert all(isinstance(e, (UNITS, FramingError, Resynchronised)) for e in events)
    assert_covers(events, len(blob) + shift, gap_list)      # stream coordinates include the gaps
    assert any(isinstance(e, UNITS) and e.kind == "SessionAck" for e in events) or gap_list


def test_long_garbage_is_reported_in_chunks(monkeypatch):
    monkeypatch.setattr(F, "SCAN_CHUNK", 4096)
    pk = _packets(n=1)
    junk = bytes(range(17, 256)) * 100          # no 0x10
    f = MSMQStreamFramer()
    events = []
    for i in range(0, len(junk), 1000):
        f.feed(junk[i:i + 1000])
        events += list(f)
        assert len(f._buf) - f._pos < 4096 + 1000   # garbage is not all buffered
    f.feed(MB.frame_packets(pk))
    f.close()
    events += list(f)
    errs = [e for e in events if isinstance(e, FramingError)]
    assert len(errs) > 2 and b"".join(e.raw for e in errs) == junk
    assert [e for e in events if isinstance(e, Resynchronised)] == [Resynchronised(len(junk), len(junk))]
    assert [e.data for e in events if isinstance(e, Packet)] == pk


# ====================================================================== session state


def test_user_message_before_establishment_is_framed_with_a_note(vectors):
    um = _packets()[2]
    ec = _read(vectors, EC_REQ)
    events = frame_all([um + ec + um])
    assert [(e.kind, e.state) for e in events] == [("UserMessage", "Initial"),
                                                    ("EstablishConnection", "EstablishConnectionSeen"),
                                                    ("UserMessage", "EstablishConnectionSeen")]
    assert "before the session is established" in events[0].note and events[1].note == ""
    assert "before the session is established" in events[2].note


def test_refused_connection(vectors):
    ec = bytearray(_read(vectors, EC_RSP))
    ec[18] |= 0x10                                 # InternalHeader.Flags.CS ([MS-MQQB] 2.2.1)
    events = frame_all([bytes(ec) + _read(vectors, CP_RSP)])
    assert [(e.kind, e.state) for e in events] == [("EstablishConnection", "Refused"),
                                                    ("ConnectionParameters", "Refused")]
    assert "CS" in events[0].note and "state Refused" in events[1].note


def test_setup_packet_out_of_order(vectors):
    events = frame_all([_read(vectors, CP_REQ)])
    assert events[0].state == "Initial" and "ConnectionParameters Packet in session state Initial" == events[0].note


def _ack_packet(cls_value, body, direct):
    dq = (DirectQueueFormatName("TCP:10.1.2.3\\PRIVATE$\\order_queue$") if direct
          else PrivateQueueFormatNameId(C.ORDER_QUEUE_ID))
    uh = UserHeader(Flags=UserFlags(MP=1, DQ=7 if direct else 3), DestinationQueue=dq)
    mp = MessagePropertiesHeader(Label="QM Ordering Ack", MessageClass=cls_value, MessageBody=body)
    return encode_packet(DecodedPacket("UserMessage", BaseHeader(Flags=0), UserHeader=uh, MessagePropertiesHeader=mp))


@pytest.mark.parametrize("direct", [False, True])
def test_order_and_final_ack_kinds(direct, impl):
    # [MS-MQQB] 3.1.5.1.1: Flags 0, order_queue$, "QM Ordering Ack", MQMSG_CLASS_ORDER_ACK (0x00FF) / >= 0x4000
    order = _ack_packet(0x00FF, bytes(36), direct)
    final = _ack_packet(0x8009, bytes(36), direct)
    other = _ack_packet(0x0000, bytes(36), direct)
    assert [F.packet_kind(p) for p in (order, final, other)] == ["OrderAck", "FinalAck", "UserMessage"]
    events = frame_all([MB.frame_packets([order, final, other])], impl=impl)
    assert [e.kind for e in events] == ["OrderAck", "FinalAck", "UserMessage"]


def test_unknown_packet_type_is_internal(impl):
    pkt = _header(flags=0x0008, size=24) + struct.pack("<HH", 0, 0x0007) + bytes(4)
    assert F.packet_kind(pkt) == "Internal"
    assert [(e.kind, e.data) for e in frame_all([pkt], impl=impl)] == [("Internal", pkt)]


# ====================================================================== encoders


def test_frame_packets_validates():
    pk = _packets()
    assert MB.frame_packets(pk) == b"".join(pk)
    with pytest.raises(EncodeError):
        MB.frame_packets([pk[0][:-1]])                # PacketSize says more
    with pytest.raises(EncodeError):
        MB.frame_packets([pk[0] + b"\0"])
    with pytest.raises(EncodeError):
        MB.frame_packets([b"\x10\x00"])
    with pytest.raises(EncodeError):
        MB.frame_packets([_header(sig=b"ROIL")])
    with pytest.raises(EncodeError):
        MB.frame_packets(["text"])


def test_simulated_session_is_deterministic_and_decodes(vectors):
    a, b = MB.simulate_session(3, messages=6), MB.simulate_session(3, messages=6)
    assert a == b and MB.simulate_session(4, messages=6) != a
    piggy = 0
    for seed in range(6):
        s = MB.simulate_session(seed, messages=5)
        for side, stream, packets in (("i", s.initiator, s.initiator_packets), ("a", s.acceptor, s.acceptor_packets)):
            assert stream == b"".join(p for _k, p in packets)
            for kind, p in packets:
                pkt = decode_packet(p)
                assert pkt.kind == kind and encode_packet(pkt) == p
                assert pkt.warnings == [], pkt.warnings
                piggy += kind == "UserMessage" and pkt.SessionHeader is not None
            events = frame_all([stream])
            assert [(e.kind, e.data) for e in events] == packets
            assert events[-1].state == "Established" and all(e.note == "" for e in events)
        assert [k for k, _p in s.initiator_packets[:2]] == ["EstablishConnection", "ConnectionParameters"]
        assert [k for k, _p in s.acceptor_packets[:2]] == ["EstablishConnection", "ConnectionParameters"]
        assert s.acceptor_packets[-1][0] == "SessionAck"
        # the response's padding is all 0x5A ([MS-MQQB] 2.2.3.1)
        assert decode_packet(s.acceptor_packets[0][1]).EstablishConnectionHeader.padding_is_server_fill
    assert piggy > 0
    # the spec's own examples have the same setup sizes
    assert len(MB.simulate_session(0).initiator_packets[0][1]) == len(_read(vectors, EC_REQ))
    assert len(MB.simulate_session(0).initiator_packets[1][1]) == len(_read(vectors, CP_REQ))


def test_feed_after_close_is_a_usage_error(impl):
    f = framer("msmq", impl)
    assert f.next_event() is NEED_DATA
    f.close()
    assert f.next_event() is CLOSED
    with pytest.raises(FramerStateError):
        f.feed(b"x")
    with pytest.raises(FramerStateError):
        f.gap(1)
    with pytest.raises(ValueError):
        framer("msmq", impl).gap(-1)


# ====================================================================== through a capture (tshark as the outside reference)


def _session_pcap(path, seed=5, *, mss=500, drop=None):
    """A simulated session in a pcap: setup packets alternate, then the initiator's
    UserMessages, then the acceptor's SessionAcks.  ``drop``: (direction, stream offset)
    of a data segment left out of the capture."""
    from mqcodec.capture import writer as W
    s = MB.simulate_session(seed, messages=4)
    conv = W.TcpConversation(client=("10.0.0.1", 49759), server=("10.0.0.2", 1801), mss=mss)
    frames = conv.handshake()
    ini, acc = s.initiator_packets, s.acceptor_packets
    for i in range(2):
        frames += conv.send(0, ini[i][1])
        frames += conv.send(1, acc[i][1])
    frames += conv.send(0, b"".join(p for _k, p in ini[2:]))
    frames += conv.send(1, b"".join(p for _k, p in acc[2:]))
    frames += conv.close()
    isn = (1001, 5001)
    if drop is not None:
        d, off = drop
        frames = [f for f in frames if not (f.direction == d and f.length and
                                            (f.seq - isn[d]) <= off < (f.seq - isn[d]) + f.length)]
    with open(path, "wb") as fh:
        W.write_pcap(fh, frames)
    return s


def _tshark_streams(tshark, path):
    out = __import__("subprocess").run([tshark, "-r", str(path), "-q", "-z", "follow,tcp,raw,0"],
                                       capture_output=True, text=True, check=True).stdout
    body = out.split("Node 1:", 1)[1].split("\n", 1)[1].split("=====", 1)[0]
    streams = [b"", b""]
    for line in body.splitlines():
        if line.strip():
            d = 1 if line.startswith("\t") else 0
            streams[d] += bytes.fromhex(line.strip())
    return streams


def _tshark_segments(tshark, path):
    out = __import__("subprocess").run(
        [tshark, "-r", str(path), "-T", "fields", "-E", "separator=,", "-e", "frame.number",
         "-e", "tcp.srcport", "-e", "tcp.seq", "-e", "tcp.len"], capture_output=True, text=True, check=True).stdout
    segs = []
    for line in out.splitlines():
        num, sport, seq, ln = line.split(",")
        if int(ln):
            segs.append((0 if int(sport) == 49759 else 1, int(seq) - 1, int(ln), int(num)))
    return segs


def _captured(path):
    from mqcodec.capture import iter_capture_events
    cf = CaptureFramer()
    events = []
    for ev in iter_capture_events(str(path)):
        events += cf.on_event(ev)
    return events + cf.close()


def test_capture_framing_matches_tshark_reassembly(tmp_path, tshark):
    path = tmp_path / "msmq.pcap"
    sess = _session_pcap(path)
    streams = _tshark_streams(tshark, path)
    assert streams == [sess.initiator, sess.acceptor]       # tshark agrees with the simulator
    for d, want in ((0, sess.initiator_packets), (1, sess.acceptor_packets)):
        events = frame_all([streams[d]])
        assert [(e.kind, e.data) for e in events] == want
    # the capture pipeline: same packets, and the frames holding their first and last bytes
    # as tshark numbers them
    segs = _tshark_segments(tshark, path)

    def frame_of(d, off):
        return [n for dd, start, ln, n in segs if dd == d and start <= off < start + ln][0]

    captured = _captured(path)
    for d, want in ((0, sess.initiator_packets), (1, sess.acceptor_packets)):
        mine = [c for c in captured if c.direction == d]
        assert [(c.event.kind, c.event.data) for c in mine] == want
        for c in mine:
            assert c.first_frame == frame_of(d, c.event.offset)
            assert c.last_frame == frame_of(d, c.event.offset + c.event.length - 1)
            assert c.conn.server_port == 1801


def test_capture_with_a_lost_segment(tmp_path, tshark):
    path = tmp_path / "lost.pcap"
    probe = MB.simulate_session(5, messages=4)
    ini = [p for _k, p in probe.initiator_packets]
    starts = _starts(ini)
    # lose the segment holding byte 300 of the first UserMessage (segments of 200 bytes)
    sess = _session_pcap(path, mss=200, drop=(0, starts[2] + 300))
    seg = [s for s in _tshark_segments(tshark, path) if s[0] == 0]
    lost = sorted(set(range(len(sess.initiator))) - {o for _d, a, n, _f in seg for o in range(a, a + n)})
    assert lost and starts[2] < lost[0] and lost[-1] < starts[3]       # tshark: the hole is inside packet 2
    captured = [c for c in _captured(path) if c.direction == 0]
    events = [c.event for c in captured]
    assert [(e.offset, e.data) for e in events if isinstance(e, Packet)] == \
        [(starts[i], ini[i]) for i in range(len(ini)) if i != 2]
    errs = [e for e in events if isinstance(e, FramingError)]
    assert errs[0].offset == starts[2] and errs[0].raw == sess.initiator[starts[2]:lost[0]]
    assert errs[1].offset == lost[-1] + 1 and errs[1].raw == sess.initiator[lost[-1] + 1:starts[3]]
    assert_covers(events, len(sess.initiator), [(lost[0], len(lost))])


def test_capture_ping_datagrams(tmp_path, vectors):
    from mqcodec.capture import writer as W
    path = tmp_path / "ping.pcap"
    req, rsp = _read(vectors, "4.1.1_ping_request.bin"), _read(vectors, "4.1.2_ping_response.bin")
    # [MS-MQQB] 4.1.1 / 4.1.2: client UDP port 4057 <-> server UDP port 3527
    frames = [(1, W.ethernet(W.ipv4("10.0.0.1", "10.0.0.2", 17, W.udp("10.0.0.1", "10.0.0.2", 4057, 3527, req)))),
              (2, W.ethernet(W.ipv4("10.0.0.2", "10.0.0.1", 17, W.udp("10.0.0.2", "10.0.0.1", 3527, 4057, rsp)))),
              (3, W.ethernet(W.ipv4("10.0.0.2", "10.0.0.1", 17, W.udp("10.0.0.2", "10.0.0.1", 3527, 4057, b"xyz"))))]
    with open(path, "wb") as fh:
        W.write_pcap(fh, frames)
    captured = _captured(path)
    assert [(c.direction, type(c.event).__name__, c.first_frame) for c in captured] == [
        (0, "Packet", 1), (1, "Packet", 2), (1, "FramingError", 3)]
    assert captured[0].event.kind == "Ping" and captured[0].event.data == req
    assert F.decode_ping(captured[1].event.data).Cookie == 4
    assert captured[2].event.raw == b"xyz"


_EXTRA = _extra_packets()
