"""The MSMQ stream framers, both implementations (``impl``: the pure
:class:`mqcodec.msmq.framing.MSMQStreamFramer` and the capture core's compiled
framer, ``_ext/framer_msmq.pxi``).

Streams: simulated sessions (msmq.builders.simulate_session, whose packet
lists are the expected units), the [MS-MQQB] 4.1 example frames and the
malformed vectors of ../shared/vectors, hypothesis sequences of encoded
UserMessages (optional headers, piggy-backed SessionHeaders, order_queue$
destinations) and internal packets, mutated, truncated and gapped streams,
and the MSMQ directions of mqcodec.synth captures.  Every stream is driven
through tests/framer_steps.py: whatever the chunking, a framer reports the
rows the pure framer reports for the stream fed whole, at the step the pure
framer reports them.  OrderAck / FinalAck candidates (BaseHeader.Flags 0 and
a DestinationQueue that may be order_queue$) are classified in C for the
strict layout such packets have, any other by the pure ``framing.packet_kind``
(docs/framer-msmq-compiled.md).
"""
from __future__ import annotations

import io
import random
import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcodec.msmq import (BaseFlags, BaseHeader, DebugHeader, DirectQueueFormatName, InternalHeader,
                          MessagePropertiesHeader, PrivateQueueFormatNameId, SecurityHeader, SessionHeader,
                          TransactionHeader, UserFlags, UserHeader, encode_packet)
from mqcodec.msmq import Packet as DecodedPacket
from mqcodec.msmq import constants as C
from mqcodec.msmq import builders as MB
from mqcodec.msmq import framing as F
from mqcodec.msmq import framing_errors as E
from mqcodec.msmq.optional_headers import TxSequenceID

from conftest import ACK, CP_REQ, CP_RSP, EC_REQ, EC_RSP, UM_222
from framer_steps import check, errors, units

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MALFORMED = ["V9_queuejumper_poc.bin", "V11_noisefest_fullsignature.bin", "V12_msf_queuejumper_prefix240.bin"]


def run(impl: str, steps, *, offset: int = 0) -> list:
    """The rows of ``framer("msmq", impl)`` for ``steps`` (bytes fed, ``("gap", n)``
    lost), checked against the pure framer's (framer_steps.check)."""
    return check("msmq", impl, steps, offset)


def chunkings(stream: bytes, rnd: random.Random, *, bytewise=True):
    """Whole, one byte at a time, and a few random cuttings (empty chunks included)."""
    out = [[stream]]
    if bytewise:
        out.append([stream[i:i + 1] for i in range(len(stream))])
    for _ in range(3):
        cuts = sorted(rnd.randrange(len(stream) + 1) for _ in range(rnd.randrange(1, 12)))
        out.append([stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)])])
    return out


def _header(flags=0, size=16, version=0x10, sig=b"LIOR"):
    return bytes([version, 0]) + struct.pack("<H", flags) + sig + struct.pack("<II", size, 0xFFFFFFFF)


# ====================================================================== simulated sessions


@pytest.mark.parametrize("seed", range(0, 40))
def test_simulated_sessions(impl, seed):
    rnd = random.Random(seed)
    sess = MB.simulate_session(seed, messages=rnd.randrange(1, 7))
    for stream, packets in ((sess.initiator, sess.initiator_packets), (sess.acceptor, sess.acceptor_packets)):
        for chunks in chunkings(stream, rnd, bytewise=seed % 4 == 0):
            rows = run(impl, chunks)
            # independent of both framers: the simulator's own packet list
            assert [r[2:4] for r in rows] == [(p, k) for k, p in packets]


def test_stream_offset_is_carried(impl):
    sess = MB.simulate_session(11, messages=5)
    for off in (1, 0x1234, (1 << 40) + 7):
        rows = run(impl, [sess.initiator[:100], sess.initiator[100:]], offset=off)
        starts, pos = [], off
        for _k, p in sess.initiator_packets:
            starts.append(pos)
            pos += len(p)
        assert [r[1] for r in rows] == starts


def test_the_bytes_of_a_packet_not_yet_complete_are_kept_to_the_close(impl):
    sess = MB.simulate_session(5, messages=3)
    stream = sess.acceptor
    first = len(sess.acceptor_packets[0][1])
    unit, err = run(impl, [stream[:first + 6], stream[first + 6:first + 10]])
    assert unit[2] == sess.acceptor_packets[0][1]
    # 10 bytes of a BaseHeader at the close: a FramingError with them
    assert err[:4] == ("error", first, first + 10, stream[first:first + 10])
    assert err[5:] == E.describe(E.HEADER_AT_CLOSE, 10, 0, 0, 0)


# ====================================================================== [MS-MQQB] 4.1 examples, malformed vectors


def _vec(vectors, name):
    return (vectors / "msmq" / name).read_bytes()


def test_spec_example_sessions_every_split(impl, vectors):
    ini = _vec(vectors, EC_REQ) + _vec(vectors, CP_REQ) + _vec(vectors, UM_222)
    acc = _vec(vectors, EC_RSP) + _vec(vectors, CP_RSP) + _vec(vectors, ACK)
    for stream in (ini, acc):
        for cut in range(0, len(stream) + 1, 3):
            run(impl, [stream[:cut], stream[cut:]])
    # 4.1.7 holds the first 222 bytes of a 2224-byte UserMessage: the framer waits, then
    # reports the truncated packet at close
    rows = run(impl, [ini])
    assert [r[3] for r in rows[:2]] == ["EstablishConnection", "ConnectionParameters"]
    assert rows[2][0] == "error" and rows[2][7].startswith("truncated packet: 2224 bytes")
    rows = run(impl, [acc])
    assert [r[3] for r in rows] == ["EstablishConnection", "ConnectionParameters", "SessionAck"]
    assert [r[1] for r in rows] == [0, 572, 604]


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_vectors(impl, vectors, name):
    bad = _vec(vectors, "malformed/" + name)
    good = _vec(vectors, EC_REQ) + _vec(vectors, CP_REQ)
    ack = _vec(vectors, ACK)
    rnd = random.Random(name)
    for stream in (bad, good + bad, good + bad + ack, bad + good):
        for chunks in chunkings(stream, rnd):
            rows = run(impl, chunks)
            if stream.startswith(good):
                assert [r[2] for r in rows[:2]] == [_vec(vectors, EC_REQ), _vec(vectors, CP_REQ)]


# ====================================================================== hand-made layouts


def _ack20(sh=None):
    sh = sh or SessionHeader(AckSequenceNumber=1, WindowSize=64)
    p = DecodedPacket("SessionAck", BaseHeader(Flags=BaseFlags(PR=3, IN=1, SH=1)),
                      InternalHeader=InternalHeader(Flags=1), SessionHeader=sh)
    p.session_header_counted = False
    return encode_packet(p)


def _order_ack(cls_value, direct, name="TCP:10.1.2.3\\PRIVATE$\\order_queue$"):
    dq = DirectQueueFormatName(name) if direct else PrivateQueueFormatNameId(C.ORDER_QUEUE_ID)
    uh = UserHeader(Flags=UserFlags(MP=1, DQ=7 if direct else 3), DestinationQueue=dq)
    mp = MessagePropertiesHeader(Label="QM Ordering Ack", MessageClass=cls_value, MessageBody=bytes(36))
    return encode_packet(DecodedPacket("UserMessage", BaseHeader(Flags=0), UserHeader=uh,
                                       MessagePropertiesHeader=mp))


def test_session_header_outside_packet_size(impl):
    # [MS-MQMQ] 2.2.19.1: a SessionAck of PacketSize 20 is followed by its 16-byte SessionHeader
    ack20 = _ack20()
    assert struct.unpack_from("<I", ack20, 8)[0] == 20 and len(ack20) == 36
    sess = MB.simulate_session(3, messages=2)
    stream = MB.frame_packets([p for _k, p in sess.acceptor_packets] + [ack20, ack20])
    rows = run(impl, [stream[i:i + 7] for i in range(0, len(stream), 7)])
    assert [r[2] for r in rows[-2:]] == [ack20, ack20]


def test_unknown_packet_type_is_internal(impl):
    pkt = _header(flags=0x0008, size=24) + struct.pack("<HH", 0, 0x0007) + bytes(4)
    assert run(impl, [pkt]) == [("unit", 0, pkt, "Internal", False)]


@pytest.mark.parametrize("direct,name", [(False, None), (True, "TCP:10.1.2.3\\PRIVATE$\\order_queue$"),
                                         (True, "OS:h\\private$\\ORDER_QUEUE$"),
                                         (True, "OS:hé\\pRiVaTe$\\Order_Queue$")])
def test_order_and_final_ack_kinds(impl, direct, name):
    # [MS-MQQB] 3.1.5.1.1: BaseHeader.Flags 0, order_queue$, Label "QM Ordering Ack",
    # MessageClass MQMSG_CLASS_ORDER_ACK (0x00FF) -> OrderAck, >= 0x4000 -> FinalAck, else UserMessage
    sess = MB.simulate_session(8, messages=2)
    lead = [p for _k, p in sess.initiator_packets]
    pks = [_order_ack(v, direct, *([name] if name else [])) for v in (0x00FF, 0x8009, 0x4000, 0x0000, 0x3FFF)]
    rows = run(impl, [MB.frame_packets(lead + pks + lead)])
    assert [r[3] for r in rows[len(lead):-len(lead)]] == ["OrderAck", "FinalAck", "FinalAck", "UserMessage",
                                                          "UserMessage"]


def test_order_queue_name_edge_cases(impl):
    # every direct name of the hypothesis table, with and without its terminating null, as an OrderAck
    # and a FinalAck: the kind packet_kind gives the packet alone
    kinds = set()
    for name in _DIRECT_NAMES:
        for raw in (None, name.encode("utf-16-le")):
            for cls_value in (0xFF, 0x8001):
                q = DirectQueueFormatName(name, raw=raw)
                uh = UserHeader(Flags=UserFlags(MP=1, DQ=7), DestinationQueue=q)
                mp = MessagePropertiesHeader(Label="QM Ordering Ack", MessageClass=cls_value, MessageBody=bytes(36))
                pk = encode_packet(DecodedPacket("UserMessage", BaseHeader(Flags=0), UserHeader=uh,
                                                 MessagePropertiesHeader=mp))
                ((_, _, _, kind, _),) = run(impl, [pk])
                assert kind == F.packet_kind(pk), name
                kinds.add(kind)
    assert {"OrderAck", "FinalAck", "UserMessage"} == kinds


def test_order_ack_outside_the_strict_layout(impl):
    # a non-ASCII character among the name's last 22 (str.upper("ı") is "I"), a TransactionHeader,
    # an AdminQueue: the fast path leaves these to the full decode (MSMQ_CLASSIFY_KIND)
    sess = MB.simulate_session(8, messages=1)
    lead = [p for _k, p in sess.initiator_packets]
    odd = [_order_ack(0xFF, True, "OS:h\\prıvate$\\order_queue$")]
    mp = MessagePropertiesHeader(Label="QM Ordering Ack", MessageClass=0xFF, MessageBody=bytes(36))
    for extra in ({"TH": 1, "DM": 1}, {"AQ": 3}):
        uh = UserHeader(Flags=UserFlags(MP=1, DQ=3, **extra), DestinationQueue=PrivateQueueFormatNameId(4),
                        AdminQueue=PrivateQueueFormatNameId(1) if "AQ" in extra else None)
        headers = {"TransactionHeader": TransactionHeader(0, TxSequenceID(1, 2), 1, 0, None)} if "TH" in extra else {}
        odd.append(encode_packet(DecodedPacket("UserMessage", BaseHeader(Flags=0), UserHeader=uh,
                                               MessagePropertiesHeader=mp, **headers)))
    for pk in odd:
        assert F.packet_kind(pk) == "OrderAck"
        rows = run(impl, [MB.frame_packets(lead + [pk])])
        assert len(rows) == len(lead) + 1 and rows[-1][3] == "OrderAck"


def test_near_order_queue_names_are_user_messages(impl):
    # the same layout to other queues (or with BaseHeader.Flags not 0) is an ordinary UserMessage
    sess = MB.simulate_session(8, messages=1)
    lead = [p for _k, p in sess.initiator_packets]
    pks = [_order_ack(0xFF, True, n) for n in ("OS:h\\private$\\order_queue", "OS:h\\private$\\q",
                                                 "OS:h\\prıvate$\\order_queu$", "OS:order_queue")]
    pk = bytearray(_order_ack(0xFF, False))
    pk[2] = 1                                  # PR 1: no longer a candidate
    pks.append(bytes(pk))
    rows = run(impl, [MB.frame_packets(lead + pks)])
    assert [r[3] for r in rows[-len(pks):]] == ["UserMessage"] * len(pks)


@pytest.mark.parametrize("size", [0x00400000, 0x00400001, 15, 0xFFFFFFFF, 0])
def test_giant_and_impossible_packet_size(impl, size):
    sess = MB.simulate_session(4, messages=2)
    stream = sess.initiator + _header(flags=0, size=size) + b"payload"
    rows = run(impl, [stream[:50], stream[50:]])
    good = [p for _k, p in sess.initiator_packets]
    assert [r[2] for r in rows[:len(good)]] == good
    assert rows[len(good):] and all(r[0] == "error" for r in rows[len(good):])


@pytest.mark.parametrize("head", [b"\x11", b"\x10\x00\x00\x00X", b"\x10\x00\x00\x00LIOX",
                                  _header(flags=0x0008, size=19)])
def test_bad_header_is_garbage_until_the_next_packet(impl, head):
    """A bad BaseHeader: the bytes up to the next packet are one FramingError
    (the problem of their first byte), then a Resynchronised, then the packets."""
    sess = MB.simulate_session(4, messages=1)
    stream = sess.acceptor + head + sess.acceptor
    rnd = random.Random(head)
    for chunks in chunkings(stream, rnd):
        rows = run(impl, chunks)
        n = len(sess.acceptor_packets)
        assert [r[0] for r in rows] == ["unit"] * n + ["error", "resync"] + ["unit"] * n
        assert rows[n][:4] == ("error", len(sess.acceptor), len(sess.acceptor) + len(head), head)


def test_error_codes_are_the_pure_ones():
    """The compiled framer's codes and limits are those of mqcodec.msmq.framing_errors."""
    capture_core = pytest.importorskip("mqcodec._ext.capture_core")

    for name, value in capture_core.MSMQ_ERROR_CODES.items():
        assert getattr(E, name) == value, name
    assert set(capture_core.MSMQ_ERROR_CODES) == {n for n in E.__all__ if n.isupper() and n != "KINDS"}
    assert capture_core.MSMQ_SCAN_CHUNK == F.SCAN_CHUNK
    assert E.MAX_PACKET_SIZE == C.MAX_PACKET_SIZE
    assert list(E.KINDS) == list(capture_core.MSMQ_KIND_NAMES[:len(E.KINDS)])


def gap_steps(stream: bytes, rnd: random.Random, gaps: int) -> list:
    """``stream`` in random chunks with ``gaps`` losses of 1..3000 bytes at random places."""
    steps: list = []
    pos = 0
    n = len(stream)
    for cut_at in sorted(rnd.sample(range(1, n), min(gaps, n - 1))) if n > 1 else []:
        if cut_at <= pos:
            continue
        steps.append(stream[pos:cut_at])
        k = min(rnd.randint(1, 3000), n - cut_at)
        steps.append(("gap", k))
        pos = cut_at + k
    steps.append(stream[pos:])
    return steps


@pytest.mark.parametrize("seed", range(16))
def test_gaps_anywhere(impl, seed):
    """Bytes lost anywhere (inside headers, packets, between them, in garbage):
    errors and resynchronisations, and no unit but the simulator's packets."""
    rnd = random.Random(seed)
    sess = MB.simulate_session(seed, messages=rnd.randrange(2, 8))
    stream = bytearray(sess.initiator if seed % 2 else sess.acceptor)
    if seed % 3 == 0:
        at = rnd.randrange(len(stream))
        stream[at:at] = b"garbage" * rnd.randrange(1, 40)
    rows = run(impl, gap_steps(bytes(stream), rnd, rnd.randint(1, 4)))
    packets = {p for _k, p in sess.initiator_packets + sess.acceptor_packets}
    assert all(r[2] in packets for r in units(rows))


def test_garbage_beyond_the_scan_chunk_is_reported_in_pieces(impl):
    """More than SCAN_CHUNK bytes of garbage: reported in pieces, "still no packet"."""
    sess = MB.simulate_session(3, messages=2)
    junk = bytes(range(0x20, 0x40)) * ((F.SCAN_CHUNK // 32) * 2 + 5)
    stream = sess.initiator + junk + sess.initiator
    rnd = random.Random(3)
    cuts = sorted(rnd.sample(range(len(stream)), 40))
    rows = run(impl, [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)])])
    bad = errors(rows)
    assert len(bad) >= 2 and bad[0][7].endswith("; still no packet")
    assert b"".join(r[3] for r in bad) == junk and len(units(rows)) == 2 * len(sess.initiator_packets)


# ====================================================================== hypothesis


u8, u16, u32 = st.integers(0, 0xFF), st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF)
guids = st.builds(lambda b: uuid.UUID(bytes=b), st.binary(min_size=16, max_size=16))
_DIRECT_NAMES = ["TCP:10.0.0.1\\PRIVATE$\\orders", "OS:h\\private$\\order_queue$", "OS:h\\PRIVATE$\\ORDER_QUEUE$",
                 "OS:h\\prıvate$\\order_queue$", "OS:h\\Order_Queue$x", "DIRECT=OS:q", "order_queue$",
                 "é\\private$\\order_queue$", "OS:\\private$\\order_queue$\x00x", "\\PRIVATE$\\ORDER_QUEUE$",
                 "PRIVATE$\\ORDER_QUEUE$", "OS:h\\private$\\order_queue$\u0131", "OS:h\\private$\\order_queue$ ",
                 "OS:h\\private$\\order_queue$\u0100"]


@st.composite
def user_messages(draw):
    # one in three: shaped like an OrderAck / FinalAck ([MS-MQQB] 2.2.4, 2.2.5), with a few deviations
    oa = draw(st.integers(0, 2)) == 0
    th, sec, dh, ses = (draw(st.integers(0, 5 if oa else 1)) == 1 for _ in range(4))
    dq = draw(st.sampled_from([3, 7] if oa else [0, 3, 7]))
    name = draw(st.sampled_from(_DIRECT_NAMES[1:] if oa else _DIRECT_NAMES))
    queue = {0: None, 3: PrivateQueueFormatNameId(draw(st.sampled_from([4, 4, 1] if oa else [4, 1, 0xFFFFFFFF]))),
             7: DirectQueueFormatName(name, raw=name.encode("utf-16-le") if draw(st.booleans()) else None)}[dq]
    uf = UserFlags(DQ=dq, MP=1, TH=int(th), SH=int(sec), DM=draw(st.integers(0, 3)), RC=draw(st.integers(0, 29)))
    uh = UserHeader(SourceQueueManager=draw(guids), QueueManagerAddress=draw(guids), SentTime=draw(u32),
                    MessageID=draw(u32), Flags=uf, DestinationQueue=queue)
    label = draw(st.sampled_from(["QM Ordering Ack"] * 4 + [None] if oa else
                                 [None, "QM Ordering Ack", "x", "QM Ordering Ac", "qm ordering ack",
                                  "QM Ordering Ack!"]))
    mp = MessagePropertiesHeader(Label=label, MessageClass=draw(st.sampled_from([0, 0xFF, 0x4000, 0x8001, 0x3FFF])),
                                 MessageBody=draw(st.binary(max_size=80)), ExtensionData=draw(st.binary(max_size=6)))
    if label and draw(st.integers(0, 3)) == 0:      # a Label without its terminating null
        mp.label_raw = label.encode("utf-16-le")
    headers = {"UserHeader": uh, "MessagePropertiesHeader": mp}
    if th:
        headers["TransactionHeader"] = TransactionHeader(0, TxSequenceID(draw(u32), draw(u32)), 1, 0, None)
    if sec:
        headers["SecurityHeader"] = SecurityHeader.create(Flags=0, SenderCert=draw(st.binary(min_size=1, max_size=9)))
    if dh:
        headers["DebugHeader"] = DebugHeader(0, draw(u16), None)
    if ses:
        headers["SessionHeader"] = SessionHeader(AckSequenceNumber=draw(u16), WindowSize=draw(u16))
    flags = draw(st.sampled_from([0, 0, 1, 3, 7]) | u16.map(lambda v: v & ~0x18)) & ~0x38
    flags |= (0x10 if ses else 0) | (0x20 if dh else 0)
    if oa and not (ses or dh) and draw(st.integers(0, 4)):
        flags = 0
    return encode_packet(DecodedPacket("UserMessage", BaseHeader(Flags=flags, TimeToReachQueue=draw(u32)),
                                       **headers))


@st.composite
def internal_packets(draw):
    pt = draw(st.sampled_from([1, 2, 3, 0, 4, 15]))
    flags = 0x08 | draw(st.integers(0, 7)) | (0x10 if draw(st.booleans()) else 0) | (draw(u16) & 0xFFC0)
    size = draw(st.sampled_from([20, 36, 32, 572]) | st.integers(20, 700))
    total = size + 16 if flags & 0x10 and size == 20 else size       # [MS-MQQB]: SessionHeader not counted
    body = struct.pack("<HH", draw(u16), pt | (draw(st.integers(0, 0xFFF)) << 4))
    body += draw(st.binary(min_size=total - 20, max_size=total - 20))
    return struct.pack("<BBHIII", 0x10, draw(u8), flags, 0x524F494C, size, draw(u32)) + body


def _simulated(draw):
    sess = MB.simulate_session(draw(st.integers(0, 5000)), messages=draw(st.integers(1, 3)))
    return [p for _k, p in (sess.initiator_packets if draw(st.booleans()) else sess.acceptor_packets)]


@st.composite
def packet_streams(draw):
    pk = _simulated(draw) if draw(st.booleans()) else []
    for extra in draw(st.lists(st.one_of(user_messages(), internal_packets(), st.just(_ack20())), max_size=6)):
        pk.insert(draw(st.integers(0, len(pk))), extra)
    return MB.frame_packets(pk) if pk else b"", pk


@st.composite
def cut(draw, stream):
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    return [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)])]


@SETTINGS
@given(built=packet_streams(), data=st.data())
def test_generated_packet_sequences(impl, built, data):
    stream, packets = built
    assert [r[2] for r in run(impl, data.draw(cut(stream)))] == packets


@SETTINGS
@given(built=packet_streams(), data=st.data())
def test_generated_sequences_byte_at_a_time(impl, built, data):
    stream = built[0][:3000]
    rows = run(impl, [stream[i:i + 1] for i in range(len(stream))])
    assert b"".join(r[2] if r[0] == "unit" else r[3] for r in rows if r[0] != "resync") == stream


@SETTINGS
@given(built=packet_streams().filter(lambda b: len(b[0])), data=st.data())
def test_mutated_and_truncated_streams(impl, built, data):
    m = bytearray(built[0])
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.integers(0, 4))
        at = data.draw(st.integers(0, len(m) - 1))
        if kind == 0:                                   # one byte
            m[at] = data.draw(u8)
        elif kind == 1 and len(m) >= 4:                 # a 32-bit word (PacketSize, Signature, a size)
            at = min(at, len(m) - 4)
            m[at:at + 4] = struct.pack("<I", data.draw(st.sampled_from([0, 16, 19, 20, 36, 0x00400000, 0x00400001,
                                                                            0xFFFFFFFF]) | u32))
        elif kind == 2:                                 # flag bits: IN, SH, DH announcing absent headers
            at = min(at, len(m) - 1)
            m[at] ^= data.draw(st.sampled_from([0x08, 0x10, 0x20, 0x18]))
        elif kind == 3:                                 # truncated
            del m[at:]
            if not m:
                m = bytearray(b"\x10")
        else:                                           # garbage inserted
            m[at:at] = data.draw(st.binary(min_size=1, max_size=20))
    run(impl, data.draw(cut(bytes(m))))


@SETTINGS
@given(parts=st.lists(st.sampled_from([b"\x10", b"LIOR", b"\x00", b"\x08", b"\x10\x00\x18\x00LIOR\x14\x00\x00\x00",
                                 b"\x24\x00\x00\x00", b"\xff"]) | st.binary(max_size=8), max_size=40), data=st.data())
def test_arbitrary_bytes_never_crash(impl, parts, data):
    stream = b"".join(parts)
    run(impl, data.draw(cut(stream)))


# ====================================================================== synth captures


def _synth_directions(seed, messages):
    """The MSMQ (TCP 1801) directions of a mqcodec.synth capture: [(syn_seen, [StreamData, ...])]."""
    from mqcodec import synth
    from mqcodec.capture import iter_capture_events

    buf = io.BytesIO()
    synth.write_capture(buf, seed=seed, messages=messages)
    buf.seek(0)
    opened, dirs = {}, {}
    for ev in iter_capture_events(buf):
        name = type(ev).__name__
        conn = getattr(ev, "conn", None)
        if conn is None or conn.server_port != C.TCP_PORT:
            continue
        if name == "StreamOpened":
            opened[conn] = ev.syn_seen
        elif name == "StreamData":
            dirs.setdefault((conn, ev.direction), []).append(ev)
        elif name == "Gap":
            dirs.setdefault((conn, ev.direction), []).append(ev)
    return [(opened.get(k[0], False), evs) for k, evs in dirs.items()]


@pytest.mark.parametrize("seed", [1, 2])
def test_synth_capture_directions(impl, seed):
    directions = _synth_directions(seed, 200)     # 4 MSMQ sessions of 25 messages
    assert directions
    for syn_seen, evs in directions:
        assert syn_seen and all(type(e).__name__ == "StreamData" for e in evs)
        assert [e.offset for e in evs] == [sum(len(x.data) for x in evs[:i]) for i in range(len(evs))]
        rows = run(impl, [e.data for e in evs], offset=evs[0].offset)
        # clean simulator traffic: whole packets, one after another
        assert rows and all(r[0] == "unit" for r in rows)
        assert b"".join(r[2] for r in rows) == b"".join(e.data for e in evs)
