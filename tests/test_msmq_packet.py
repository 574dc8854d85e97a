"""Packet framework: constants against the specification text, construction,
OrderAck/FinalAck identification, format names, and hypothesis round trips
(decode(encode(p)) gives p's values back, and re-encodes to identical bytes)."""
from __future__ import annotations

import re
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcodec.msmq import (BaseFlags, BaseHeader, ConnectionParametersHeader, DirectQueueFormatName,
                          EstablishConnectionHeader, InternalHeader, MessagePropertiesHeader, Packet,
                          PingPacket, PrivateQueueFormatName, PrivateQueueFormatNameId, PublicQueueFormatName,
                          SessionHeader, UserFlags, UserHeader, decode_packet, encode_packet)
from mqcodec.msmq import constants as C
from mqcodec.msmq.packet import _optional_class

@pytest.fixture(scope="module")
def mqmq(vectors):
    return (vectors.parent / "specs" / "MS-MQMQ.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------ constants vs the spec text


def test_message_classes_match_the_spec_enum(mqmq):
    enum = mqmq.split("typedef enum", 1)[1].split("} MESSAGE_CLASS_VALUES;", 1)[0]
    spec = {n: int(v, 16) for n, v in re.findall(r"(MQMSG_CLASS_\w+) = (0x[0-9a-fA-F]+)", enum)}
    assert len(spec) == 20
    assert spec == C.MQMSG_CLASS


def test_algorithm_tables_match_the_spec(mqmq):
    sect = mqmq.split("**HashAlgorithm (4 bytes):**", 1)[1].split("**ExtensionSize (4 bytes):**", 1)[0]
    hashes, encs = sect.split("**EncryptionAlgorithm (4 bytes):**")
    assert {int(v, 16) for v in re.findall(r"\| (0x0000[0-9A-F]{4}) \|", hashes)} == set(C.HASH_ALGORITHMS)
    assert {int(v, 16) for v in re.findall(r"\| (0x00006[0-9A-F]{3}) \|", encs)} == set(C.ENCRYPTION_ALGORITHMS)


def test_flag_bit_positions_match_the_spec_diagrams(mqmq):
    # the packet-beta diagrams of BaseHeader.Flags and UserHeader.Flags: "a-b: NAME"
    def diagram(after):
        part = mqmq.split(after, 1)[1]
        block = part.split("```mermaid", 1)[1].split("```", 1)[0]
        return [(int(a), int(b or a), n) for a, b, n in re.findall(r"(\d+)(?:-(\d+))?: \"(\w+)\"", block)]
    base = diagram("**Flags (2 bytes):** A 16-bit unsigned short integer containing a set of options")
    assert base[0] == (0, 2, "PR")
    assert C.BASE_FLAGS["PR"] == (0, 3)
    letters = {r[2]: r[0] for r in base}
    assert letters["A"] == C.BASE_FLAGS["IN"][0] == 3        # A - IN
    assert letters["B"] == C.BASE_FLAGS["SH"][0] == 4        # B - SH
    assert letters["C"] == C.BASE_FLAGS["DH"][0] == 5        # C - DH
    assert letters["F"] == C.BASE_FLAGS["TR"][0] == 8        # F - TR
    user = diagram("**Flags (4 bytes):** A 32-bit unsigned integer that contains a set of options that provide "
                   "additional information about the packet. Any combination of these values is acceptable unless "
                   "otherwise noted below.")
    u = {r[2]: (r[0], r[1] - r[0] + 1) for r in user}
    for name in ("RC", "DM", "DQ", "AQ", "RQ", "X3", "X4"):
        assert u[name] == C.USER_FLAGS[name], name
    for letter, name in zip("ABCDEFGHIJK", ("X1", "JN", "JP", "SH", "TH", "MP", "CQ", "MQ", "X2", "AH", "HH")):
        assert u[letter] == C.USER_FLAGS[name], name


def test_limits():
    assert C.MAX_PACKET_SIZE == 0x00400000
    assert C.BASE_SIGNATURE.to_bytes(4, "little") == b"LIOR"
    assert C.PING_PORT == 3527 and C.TCP_PORT == 1801


# ------------------------------------------------------------------ building packets


def _mp(**kw):
    kw.setdefault("Label", "hello")
    kw.setdefault("MessageBody", b"payload")
    return MessagePropertiesHeader(**kw)


def test_built_user_message_computes_sizes_and_decodes():
    g = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")
    uh = UserHeader(SourceQueueManager=g, QueueManagerAddress=uuid.UUID(int=1),
                    Flags=UserFlags(DQ=5, MP=1, AQ=2, RQ=1),
                    DestinationQueue=PublicQueueFormatName(g), AdminQueue=PrivateQueueFormatNameId(9),
                    MessageID=77)
    pkt = Packet("UserMessage", BaseHeader(Flags=BaseFlags(PR=3), TimeToReachQueue=60), UserHeader=uh,
                 MessagePropertiesHeader=_mp(Flags=1))
    data = encode_packet(pkt)
    # 16 + 48 + 16 (public GUID) + 4 (private id) + 56 + 12 (label) + 7 (body) + 1 pad
    assert len(data) == 16 + 48 + 16 + 4 + 56 + 12 + 7 + 1
    assert struct.unpack_from("<I", data, 8)[0] == len(data)
    back = decode_packet(data)
    assert back.UserHeader.MessageID == 77
    assert back.UserHeader.format_name("DestinationQueue").upper() == ("PUBLIC=" + str(g)).upper()
    fn = back.UserHeader.format_name("AdminQueue")
    assert re.fullmatch(r"PRIVATE=%s\\0*9" % str(g), fn, re.I)          # private on the source host
    assert back.UserHeader.format_name("ResponseQueue") == fn          # RQ 1: same as the admin queue
    assert back.MessagePropertiesHeader.Label == "hello"
    assert back.MessageBody == b"payload"
    assert back.warnings == []
    d = back.to_dict()
    assert d["packet"] == "UserMessage"
    assert d["BaseHeader"]["PacketSize"] == len(data) and d["BaseHeader"]["TimeToReachQueue"] == 60
    assert d["UserHeader"]["SourceQueueManager"] == str(g) and d["UserHeader"]["MessageID"] == 77
    assert d["MessagePropertiesHeader"]["Label"] == "hello"


def test_private_on_other_host_and_response_on_admin_host():
    qm = uuid.UUID(int=0xABCDEF)
    uh = UserHeader(Flags=UserFlags(DQ=7, MP=1, AQ=6, RQ=4),
                    DestinationQueue=DirectQueueFormatName("TCP:10.0.0.1\\PRIVATE$\\q1"),
                    AdminQueue=PrivateQueueFormatName(qm, 0x1F), ResponseQueue=PrivateQueueFormatNameId(0x20))
    pkt = Packet("UserMessage", BaseHeader(), UserHeader=uh, MessagePropertiesHeader=_mp(Flags=0x0F))
    back = decode_packet(encode_packet(pkt))
    assert back.UserHeader.format_name("DestinationQueue") == "DIRECT=TCP:10.0.0.1\\PRIVATE$\\q1"  # exact text
    assert re.fullmatch(r"PRIVATE=%s\\0*1f" % qm, back.UserHeader.format_name("AdminQueue"), re.I)
    assert re.fullmatch(r"PRIVATE=%s\\0*20" % qm, back.UserHeader.format_name("ResponseQueue"), re.I)
    # 48 + 2 + 54 bytes of name = 104: already 4-aligned
    assert back.UserHeader.DestinationQueue.Count == 2 * len("TCP:10.0.0.1\\PRIVATE$\\q1") + 2


def test_direct_name_padding_relative_to_user_header():
    for name in ("a", "ab", "abc", "abcd"):
        q = DirectQueueFormatName(name)
        uh = UserHeader(Flags=UserFlags(DQ=7, MP=1), DestinationQueue=q)
        enc = uh.encode()
        assert len(enc) % 4 == 0
        count = struct.unpack_from("<H", enc, 48)[0]
        assert count == 2 * len(name) + 2
        assert len(enc) == 48 + ((2 + count + 3) // 4) * 4


def test_internal_packets_build():
    for pkt, size in ((Packet("ConnectionParameters", BaseHeader(Flags=BaseFlags(PR=3, IN=1)),
                              InternalHeader=InternalHeader(Flags=3),
                              ConnectionParametersHeader=ConnectionParametersHeader()), 32),
                      (Packet("EstablishConnection", BaseHeader(Flags=BaseFlags(PR=3, IN=1)),
                              InternalHeader=InternalHeader(Flags=2),
                              EstablishConnectionHeader=EstablishConnectionHeader(TimeStamp=5)), 572),
                      (Packet("SessionAck", BaseHeader(Flags=BaseFlags(PR=3, IN=1, SH=1)),
                              InternalHeader=InternalHeader(Flags=1),
                              SessionHeader=SessionHeader(AckSequenceNumber=3)), 36)):
        data = encode_packet(pkt)
        assert len(data) == size
        back = decode_packet(data)
        assert back.kind == pkt.kind and back.warnings == []


def test_ping_round_trip():
    p = PingPacket(Flags=1, Cookie=0xDEADBEEF, QMGuid=uuid.UUID(int=7))
    data = encode_packet(p)
    assert len(data) == 24 and data[2:4] == b"\x48\x55"
    back = decode_packet(data)
    assert back.Cookie == 0xDEADBEEF and back.QMGuid == uuid.UUID(int=7) and back.Flags.RC == 1


def test_session_ack_acknowledged_recoverable():
    s = SessionHeader(RecoverableMsgAckSeqNumber=10, RecoverableMsgAckFlags=0b1011)
    assert s.acknowledged_recoverable() == [10, 11, 13]     # bit k -> RecoverableMsgAckSeqNumber + k


# ------------------------------------------------------------------ OrderAck / FinalAck ([MS-MQQB] 2.2.4/2.2.5)


def _ack_packet(cls_value, body, dm=0, direct=False):
    flags = UserFlags(MP=1, DM=dm, DQ=7 if direct else 3)
    dq = (DirectQueueFormatName("TCP:10.1.2.3\\PRIVATE$\\order_queue$") if direct
          else PrivateQueueFormatNameId(C.ORDER_QUEUE_ID))
    uh = UserHeader(Flags=flags, DestinationQueue=dq)
    mp = MessagePropertiesHeader(Label="QM Ordering Ack", MessageClass=cls_value, BodyType=0, MessageBody=body)
    return Packet("UserMessage", BaseHeader(Flags=0), UserHeader=uh, MessagePropertiesHeader=mp)


ORDER_BODY = struct.pack("<IIII", 0x11, 0x22, 5, 4) + bytes(20)
FINAL_BODY = struct.pack("<IIII", 0x11, 0x22, 5, 4) + uuid.UUID(int=3).bytes_le + struct.pack("<I", 99)


@pytest.mark.parametrize("direct", [False, True])
def test_order_ack_identified(direct):
    data = encode_packet(_ack_packet(0x00FF, ORDER_BODY, direct=direct))
    pkt = decode_packet(data)
    assert pkt.kind == "OrderAck"
    assert pkt.MessagePropertiesHeader.MessageSize == 0x24
    if _optional_class("OrderAckBody") is not None:
        assert pkt.OrderAckBody.TxSequenceNumber == 5
        assert pkt.OrderAckBody.TxPreviousSequenceNumber == 4
    assert encode_packet(pkt) == data


@pytest.mark.parametrize("cls_value", [0x4000, 0x8009, 0xC000, 0xC002])
def test_final_ack_identified(cls_value):
    data = encode_packet(_ack_packet(cls_value, FINAL_BODY, dm=1))
    pkt = decode_packet(data)
    assert pkt.kind == "FinalAck"
    if _optional_class("FinalAckBody") is not None:
        assert pkt.FinalAckBody.MessageID == 99
    assert encode_packet(pkt) == data


def test_normal_message_to_other_queue_is_a_user_message():
    pkt = _ack_packet(0x00FF, ORDER_BODY)
    pkt.UserHeader.DestinationQueue = PrivateQueueFormatNameId(5)
    assert decode_packet(encode_packet(pkt)).kind == "UserMessage"


# ------------------------------------------------------------------ hypothesis round trips

guids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
texts = st.text(st.characters(min_codepoint=1, max_codepoint=0xFFFF, blacklist_categories=("Cs",)), max_size=40)


@st.composite
def queues(draw, kind):
    if kind == "PrivateQueueFormatNameId":
        return PrivateQueueFormatNameId(draw(st.integers(0, 2**32 - 1)))
    if kind == "PublicQueueFormatName":
        return PublicQueueFormatName(draw(guids))
    if kind == "PrivateQueueFormatName":
        return PrivateQueueFormatName(draw(guids), draw(st.integers(0, 2**32 - 1)))
    return DirectQueueFormatName(draw(texts))


def _optional_headers(draw, uflags, bflags):
    """Headers of optional_headers.py this build can construct, with their flags."""
    out = {}
    TH = _optional_class("TransactionHeader")
    if TH is not None and draw(st.booleans()):
        h = TH(Flags=draw(st.integers(0, 0xFFFFFF)) & ~1, TxSequenceNumber=draw(st.integers(1, 2**32 - 1)),
               PreviousTxSequenceNumber=draw(st.integers(0, 2**32 - 2)))
        out["TransactionHeader"] = h
        uflags.set("TH", 1)
        uflags.set("DM", 1)
    DH = _optional_class("DebugHeader")
    if DH is not None and draw(st.booleans()):
        if draw(st.booleans()):
            h = DH(Flags=1, QueueIdentifier=draw(guids).bytes_le)
        else:
            h = DH(Flags=0)
        out["DebugHeader"] = h
        bflags.set("DH", 1)
        bflags.set("TR", draw(st.integers(0, 1)))
    SEC = _optional_class("SecurityHeader")
    if SEC is not None and hasattr(SEC, "create") and draw(st.booleans()):
        # ST = 2: SecurityID holds the queue manager GUID
        out["SecurityHeader"] = SEC.create(Flags=2, SecurityID=draw(guids).bytes_le)
        uflags.set("SH", 1)
    SOAP = _optional_class("SoapHeader")
    if SOAP is not None and hasattr(SOAP, "create") and draw(st.booleans()):
        out["SoapHeader"] = SOAP.create(draw(texts), draw(texts))
        uflags.set("HH", 1)
    ENV, CMP = _optional_class("SRMPEnvelopeHeader"), _optional_class("CompoundMessageHeader")
    if ENV is not None and CMP is not None and hasattr(ENV, "create") and draw(st.booleans()):
        out["SRMPEnvelopeHeader"] = ENV.create(draw(texts))
        blob = draw(st.binary(max_size=30))
        out["CompoundMessageHeader"] = CMP.create(blob, 0, len(blob))
        uflags.set("AH", 1)
    MQF = _optional_class("MultiQueueFormatHeader")
    if MQF is not None and hasattr(MQF, "create") and draw(st.booleans()):
        out["MultiQueueFormatHeader"] = MQF.create(
            destinations=["DIRECT=OS:host\\q%d" % draw(st.integers(0, 99)), "PUBLIC=%s" % draw(guids)])
        uflags.set("MQ", 1)
    return out


@st.composite
def user_messages(draw):
    uflags = UserFlags(MP=1, RC=draw(st.integers(0, 29)), DM=draw(st.integers(0, 1)),
                       JN=draw(st.integers(0, 1)), JP=draw(st.integers(0, 1)),
                       DQ=draw(st.sampled_from(sorted(C.DQ_TYPES))), AQ=draw(st.sampled_from(sorted(C.AQ_TYPES))),
                       RQ=draw(st.sampled_from(sorted(C.RQ_TYPES))), CQ=draw(st.integers(0, 1)))
    qs = {}
    for field, table, sel in (("DestinationQueue", C.DQ_TYPES, "DQ"), ("AdminQueue", C.AQ_TYPES, "AQ"),
                              ("ResponseQueue", C.RQ_TYPES, "RQ")):
        kind = table[uflags.get(sel)][1]
        qs[field] = draw(queues(kind)) if kind else None
    uh = UserHeader(SourceQueueManager=draw(guids), QueueManagerAddress=draw(guids),
                    TimeToBeReceived=draw(st.integers(0, 2**32 - 1)), SentTime=draw(st.integers(0, 2**32 - 1)),
                    MessageID=draw(st.integers(0, 2**32 - 1)), Flags=uflags,
                    ConnectorType=draw(guids) if uflags.CQ else None, **qs)
    bflags = BaseFlags(PR=draw(st.integers(0, 7)))
    opt = _optional_headers(draw, uflags, bflags)
    if "TransactionHeader" in opt:
        bflags.set("PR", 0)
    body = draw(st.binary(max_size=64))
    mp = MessagePropertiesHeader(
        Flags=draw(st.integers(0, 255)), MessageClass=draw(st.sampled_from(sorted(C.MQMSG_CLASS.values()))),
        CorrelationID=draw(st.binary(min_size=20, max_size=20)), BodyType=draw(st.sampled_from(sorted(C.VARTYPES))),
        ApplicationTag=draw(st.integers(0, 2**32 - 1)), MessageBody=body,
        AllocationBodySize=len(body) + draw(st.integers(0, 100)),
        PrivacyLevel=draw(st.sampled_from(sorted(C.PRIVACY_LEVELS))),
        HashAlgorithm=draw(st.sampled_from(sorted(C.HASH_ALGORITHMS))),
        EncryptionAlgorithm=draw(st.sampled_from(sorted(C.ENCRYPTION_ALGORITHMS))),
        ExtensionData=draw(st.binary(max_size=20)),
        Label=draw(st.one_of(st.none(), st.text(st.characters(min_codepoint=1, max_codepoint=0xFFFF,
                                                              blacklist_categories=("Cs",)), max_size=249))))
    session = None
    if draw(st.booleans()):
        bflags.set("SH", 1)
        session = SessionHeader(AckSequenceNumber=draw(st.integers(0, 0xFFFF)),
                                RecoverableMsgAckFlags=draw(st.integers(0, 2**32 - 1)),
                                WindowSize=draw(st.integers(1, 0xFFFF)))
    base = BaseHeader(Flags=bflags, Reserved=draw(st.integers(0, 255)),
                      TimeToReachQueue=draw(st.integers(0, 2**32 - 1)))
    return Packet("UserMessage", base, UserHeader=uh, MessagePropertiesHeader=mp, SessionHeader=session, **opt)


@settings(max_examples=150, deadline=None)
@given(user_messages())
def test_user_message_round_trip(pkt):
    data = encode_packet(pkt)
    back = decode_packet(data)
    assert encode_packet(back) == data
    size = back.BaseHeader.PacketSize
    assert size % 4 == 0
    assert len(data) == size + (16 if pkt.SessionHeader is not None else 0)
    u, v = pkt.UserHeader, back.UserHeader
    assert (v.SourceQueueManager, v.QueueManagerAddress, v.MessageID, v.SentTime, int(v.Flags), v.ConnectorType) == \
        (u.SourceQueueManager, u.QueueManagerAddress, u.MessageID, u.SentTime, int(u.Flags), u.ConnectorType)
    for f in ("DestinationQueue", "AdminQueue", "ResponseQueue"):
        assert getattr(v, f) == getattr(u, f)
    m, n = pkt.MessagePropertiesHeader, back.MessagePropertiesHeader
    assert n.Label == m.Label and n.MessageBody == m.MessageBody and n.ExtensionData == m.ExtensionData
    assert (n.MessageClass, n.CorrelationID, n.ApplicationTag, n.AllocationBodySize) == \
        (m.MessageClass, m.CorrelationID, m.ApplicationTag, m.AllocationBodySize)
    for name in ("TransactionHeader", "DebugHeader", "SecurityHeader", "SoapHeader", "SRMPEnvelopeHeader",
                 "CompoundMessageHeader", "MultiQueueFormatHeader", "SessionHeader"):
        a, b = getattr(pkt, name), getattr(back, name)
        assert (a is None) == (b is None)
        if a is not None:
            assert a.to_dict() == b.to_dict()
    assert all("AdminQueue" in w.reason or "PrivacyLevel" in w.field or w.field == "QueueManagerAddress"
               or "acknowledg" in w.reason for w in back.warnings), back.warnings
    back.to_dict()


@settings(max_examples=100, deadline=None)
@given(st.builds(SessionHeader, AckSequenceNumber=st.integers(0, 0xFFFF),
                 RecoverableMsgAckSeqNumber=st.integers(0, 0xFFFF), RecoverableMsgAckFlags=st.integers(0, 2**32 - 1),
                 UserMsgSequenceNumber=st.integers(0, 0xFFFF), RecoverableMsgSeqNumber=st.integers(0, 0xFFFF),
                 WindowSize=st.integers(1, 0xFFFF), Reserved=st.integers(0, 0xFFFF)),
       st.integers(0, 255), st.booleans())
def test_session_ack_round_trip(sh, reserved, counted):
    pkt = Packet("SessionAck", BaseHeader(Flags=BaseFlags(PR=3, IN=1, SH=1), Reserved=reserved),
                 InternalHeader=InternalHeader(Flags=1), SessionHeader=sh)
    pkt.session_header_counted = counted
    data = encode_packet(pkt)
    assert struct.unpack_from("<I", data, 8)[0] == (36 if counted else 20)
    back = decode_packet(data)
    assert back.SessionHeader == sh and back.session_header_counted is counted
    assert encode_packet(back) == data


@settings(max_examples=100, deadline=None)
@given(guids, guids, st.integers(0, 2**32 - 1), st.integers(0, 0xFF), st.binary(min_size=512, max_size=512))
def test_establish_connection_round_trip(client, server, ts, osbits, padding):
    ech = EstablishConnectionHeader(ClientGuid=client, ServerGuid=server, TimeStamp=ts,
                                    OperatingSystem=0x10 | (osbits << 8), Padding=padding)
    pkt = Packet("EstablishConnection", BaseHeader(Flags=BaseFlags(PR=3, IN=1)), InternalHeader=InternalHeader(Flags=2),
                 EstablishConnectionHeader=ech)
    data = encode_packet(pkt)
    back = decode_packet(data).EstablishConnectionHeader
    assert (back.ClientGuid, back.ServerGuid, back.TimeStamp, back.Padding) == (client, server, ts, padding)
    assert back.OperatingSystem.SE == osbits & 1 and back.OperatingSystem.OS == (osbits >> 1) & 1


def test_every_optional_header_in_spec_order():
    names = ("TransactionHeader", "SecurityHeader", "DebugHeader", "SRMPEnvelopeHeader",
             "CompoundMessageHeader", "SoapHeader", "MultiQueueFormatHeader")
    classes = {n: _optional_class(n) for n in names}
    if any(c is None or (n != "TransactionHeader" and n != "DebugHeader" and not hasattr(c, "create"))
           for n, c in classes.items()):
        pytest.skip("optional_headers.py incomplete")
    g = uuid.UUID(int=0x1234)
    hdrs = {
        "TransactionHeader": classes["TransactionHeader"](Flags=0x4, TxSequenceNumber=2, PreviousTxSequenceNumber=1),
        "SecurityHeader": classes["SecurityHeader"].create(Flags=2, SecurityID=g.bytes_le),
        "DebugHeader": classes["DebugHeader"](Flags=1, QueueIdentifier=g.bytes_le),
        "SRMPEnvelopeHeader": classes["SRMPEnvelopeHeader"].create("<se:Envelope/>"),
        "CompoundMessageHeader": classes["CompoundMessageHeader"].create(b"POST / HTTP/1.1\r\n\r\nbody", 19, 4),
        "SoapHeader": classes["SoapHeader"].create("<h/>", "<b/>"),
        "MultiQueueFormatHeader": classes["MultiQueueFormatHeader"].create(destinations=["DIRECT=OS:h\\q"]),
    }
    uf = UserFlags(MP=1, DM=1, TH=1, SH=1, AH=1, HH=1, MQ=1, DQ=7)
    pkt = Packet("UserMessage", BaseHeader(Flags=BaseFlags(DH=1, TR=1, SH=1)),
                 UserHeader=UserHeader(Flags=uf, QueueManagerAddress=g, DestinationQueue=DirectQueueFormatName("OS:h\\q")),
                 MessagePropertiesHeader=_mp(), SessionHeader=SessionHeader(AckSequenceNumber=9), **hdrs)
    data = encode_packet(pkt)
    back = decode_packet(data)
    order = [n for n, _ in back.headers()]
    assert order == ["BaseHeader", "UserHeader", "TransactionHeader", "SecurityHeader", "MessagePropertiesHeader",
                     "DebugHeader", "SRMPEnvelopeHeader", "CompoundMessageHeader", "SoapHeader",
                     "MultiQueueFormatHeader", "SessionHeader"]
    # wire offsets: each header where the previous one ends
    pos = 16
    for name, h in back.headers()[1:-1]:
        enc = h.encode()
        assert data[pos:pos + len(enc)] == enc, name
        assert pos % 4 == 0, name
        pos += len(enc)
    assert pos == back.BaseHeader.PacketSize == len(data) - 16
    assert back.SessionHeader.AckSequenceNumber == 9
    assert encode_packet(back) == data
    d = back.to_dict()
    assert set(order) <= set(d)
    # the implementation's order puts MultiQueueFormatHeader right after the DebugHeader:
    # the same bytes cannot be read that way
    from mqcodec import DecodeError
    with pytest.raises(DecodeError):
        decode_packet(data, order="implementation")


def test_remote_read_extension_chain():
    # [MS-MQRR] 2.2.5: ExtensionHeader (12) + SubqueueHeader (148) + ExtendedAddressHeader (28)
    # follow the UserMessage; RemainingHeadersSize = 148 + 28
    if _optional_class("RemoteReadExtensions") is None:
        pytest.skip("extensions.py not importable")
    uh = UserHeader(Flags=UserFlags(MP=1, DQ=7), DestinationQueue=DirectQueueFormatName("OS:h\\q"))
    um = encode_packet(Packet("UserMessage", BaseHeader(), UserHeader=uh, MessagePropertiesHeader=_mp()))
    ext = struct.pack("<II", 12, 148 + 28) + bytes([0x12]) + b"\0\0\0"
    name = "poison".encode("utf-16-le") + b"\0\0"
    sq = struct.pack("<IIIII", 148, 0, 2, 1, 0) + name.ljust(64, b"\0") + bytes(64)
    ea = struct.pack("<IHHI", 28, 4, 1, 0) + bytes([10, 0, 0, 7]) + bytes(12)
    data = um + ext + sq + ea
    # without remote_read the chain is only trailing bytes
    plain = decode_packet(data)
    assert plain.trailing == ext + sq + ea
    pkt = decode_packet(data, remote_read=True)
    rr = pkt.RemoteReadExtensions
    assert rr.ExtensionHeader.RemainingHeadersSize == 176
    assert rr.SubqueueHeader is not None and rr.ExtendedAddressHeader is not None
    assert rr.DeadLetterHeader is None
    assert pkt.trailing == b"" and encode_packet(pkt) == data
    assert "RemoteReadExtensions" in pkt.to_dict()
    from mqcodec import DecodeError
    bad = um + struct.pack("<II", 12, 0xFFFFFF00) + bytes([0x12]) + b"\0\0\0"
    with pytest.raises(DecodeError) as ei:
        decode_packet(bad, remote_read=True)
    assert ei.value.structure == "ExtensionHeader" and ei.value.offset == len(um) + 4
