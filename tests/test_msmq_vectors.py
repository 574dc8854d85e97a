"""The [MS-MQQB] 4.1 example frames, field by field.

Expected values come from the specification TEXT (/work/shared/specs) and the
bytes of the vectors (/work/shared/vectors/msmq), never from our decoder.
Where an example annotation contradicts its own bytes (vectors/README.md,
"Known defects", and docs/msmq.md) the test follows the text and the bytes.
"""
from __future__ import annotations

import re
import uuid

import pytest

from mqcodec import DecodeError
from mqcodec.msmq import (DirectQueueFormatName, MessagePropertiesHeader, PingPacket, UserHeader,
                          decode_packet, encode_packet)
from mqcodec.msmq.packet import _optional_class

HAVE_SECURITY = _optional_class("SecurityHeader") is not None
needs_security = pytest.mark.skipif(not HAVE_SECURITY, reason="optional_headers.SecurityHeader not importable yet")


def vec(vectors, name):
    return (vectors / "msmq" / name).read_bytes()


def spec_hexdump(vectors, section):
    """The "Hex Dump:" bytes of an [MS-MQQB] 4.1.x section, read from the spec."""
    text = (vectors.parent / "specs" / "MS-MQQB.md").read_text(encoding="utf-8")
    part = text.split("### %s " % section, 1)[1].split("<a id", 1)[0]
    dump = part.split("Hex Dump:", 1)[1]
    return bytes(int(x, 16) for x in re.findall(r"\b[0-9A-F]{2}\b", dump))


def annotation_guid(text):
    """The 4.1 annotations print a GUID as the 16 wire bytes reversed
    ({C626EA11-...} for wire bytes D1 58 73 55 ... C6): return those wire bytes."""
    return uuid.UUID(text.strip("{} ")).bytes[::-1]


QM_CLIENT_WIRE = bytes.fromhex("D158735550919595" "4997B6E611EA26C6")
QM_SERVER_WIRE = bytes.fromhex("0789CD434C39118F" "44459078909EA0FC")

ALL = ["4.1.1_ping_request.bin", "4.1.2_ping_response.bin", "4.1.3_establish_connection_request.bin",
       "4.1.4_establish_connection_response.bin", "4.1.5_connection_parameters_request.bin",
       "4.1.6_connection_parameters_response.bin", "4.1.8_session_ack.bin"]


@pytest.mark.parametrize("name,section", [
    ("4.1.1_ping_request.bin", "4.1.1"), ("4.1.2_ping_response.bin", "4.1.2"),
    ("4.1.3_establish_connection_request.bin", "4.1.3"),
    ("4.1.4_establish_connection_response.bin", "4.1.4"),
    ("4.1.5_connection_parameters_request.bin", "4.1.5"),
    ("4.1.6_connection_parameters_response.bin", "4.1.6"),
    ("4.1.8_session_ack.bin", "4.1.8")])
def test_vector_is_the_spec_hexdump(vectors, name, section):
    assert vec(vectors, name) == spec_hexdump(vectors, section)


def test_user_message_vector_is_the_start_of_the_spec_hexdump(vectors):
    assert spec_hexdump(vectors, "4.1.7")[:222] == vec(vectors, "4.1.7_user_message_first_222_bytes.bin")


@pytest.mark.parametrize("name", ALL)
def test_round_trip_strict(vectors, name):
    data = vec(vectors, name)
    pkt = decode_packet(data)
    assert encode_packet(pkt) == data
    assert pkt.trailing == b""
    assert pkt.warnings == []


def test_annotation_guids_are_byte_reversed_wire_guids(vectors):
    # the decoder follows [MS-DTYP] 2.3.4.2 (Data1..3 little-endian)
    assert annotation_guid("{C626EA11-E6B6-9749-9595-9150557358D1}") == QM_CLIENT_WIRE
    assert annotation_guid("{FCA09E90-7890-4544-8F11-394C43CD8907}") == QM_SERVER_WIRE
    p = decode_packet(vec(vectors, "4.1.1_ping_request.bin"))
    assert p.QMGuid.bytes_le == QM_CLIENT_WIRE
    assert str(p.QMGuid) == "557358d1-9150-9595-4997-b6e611ea26c6"


# ---------------------------------------------------------------------------- 4.1.1 / 4.1.2 Ping


def test_ping_request(vectors):
    p = decode_packet(vec(vectors, "4.1.1_ping_request.bin"))
    assert isinstance(p, PingPacket) and p.kind == "Ping"
    assert p.Flags.value == 0x7D01                  # "StateFlag: 32001 (0x7D01)"
    assert p.Flags.RC == 1                          # "Client is independent"
    assert p.Flags.RF == 0                          # initiator MUST clear RF
    assert p.Signature == 0x5548                    # 2.2.7: MUST be 0x5548
    assert p.Cookie == 4
    assert p.QMGuid.bytes_le == QM_CLIENT_WIRE
    d = p.to_dict()["PingPacket"]
    assert d["Cookie"] == 4 and d["Signature"] == 21832 and d["Flags"]["RC"] == 1


def test_ping_response_echoes_the_request(vectors):
    req = decode_packet(vec(vectors, "4.1.1_ping_request.bin"))
    rsp = decode_packet(vec(vectors, "4.1.2_ping_response.bin"))
    assert rsp.Flags.value == 0xB295
    assert rsp.Flags.RC == req.Flags.RC == 1        # acceptor MUST echo RC
    assert rsp.Flags.RF == 0                        # "Server will accept new connection"
    assert rsp.Cookie == req.Cookie == 4            # acceptor MUST echo the Cookie
    assert rsp.QMGuid.bytes_le == QM_SERVER_WIRE


# ---------------------------------------------------------------------------- 4.1.3 / 4.1.4


def _check_internal_base(b, reserved, flags, size):
    assert b.VersionNumber == 0x10                  # MUST be 0x10
    assert b.Reserved == reserved
    assert b.Flags.value == flags
    assert b.Flags.PR == 3                          # "Message priority = 3"
    assert b.Flags.IN == 1                          # internal packets MUST set IN
    assert b.Flags.DH == 0 and b.Flags.TR == 0
    assert b.Signature == 0x524F494C
    assert b.PacketSize == size
    assert b.TimeToReachQueue == 0xFFFFFFFF         # not a UserMessage: MUST be 0xFFFFFFFF


def test_establish_connection_request(vectors):
    data = vec(vectors, "4.1.3_establish_connection_request.bin")
    pkt = decode_packet(data)
    assert pkt.kind == "EstablishConnection"
    _check_internal_base(pkt.BaseHeader, 0xC0, 0x0B, 572)
    assert pkt.BaseHeader.Flags.SH == 0
    assert pkt.BaseHeader.PacketSize == 16 + 4 + 552   # 2.2.3 layout
    ih = pkt.InternalHeader
    assert ih.Reserved == 0 and ih.Flags.PT == 0x2 and ih.Flags.CS == 0
    ec = pkt.EstablishConnectionHeader
    assert ec.ClientGuid.bytes_le == QM_CLIENT_WIRE
    assert ec.ServerGuid.bytes_le == QM_SERVER_WIRE     # the acceptor's GUID (from its ping response)
    assert ec.TimeStamp == 501140046
    # [MS-MQQB] 2.2.3.1: OperatingSystem then Reserved.  The annotation swaps
    # them ("Reserved: 784 (0x310)", "OperatingSystem: 0"); the bytes at the
    # OperatingSystem position are 10 03 = 0x0310: RE 0x10 (MUST), SE 1, OS 1.
    assert ec.OperatingSystem.value == 0x0310
    assert ec.OperatingSystem.RE == 0x10
    assert ec.OperatingSystem.SE == 1
    assert ec.OperatingSystem.OS == 1
    assert ec.OperatingSystem.QS == 0
    assert ec.Reserved == 0
    assert ec.Padding == b"\x5A" * 512
    d = pkt.to_dict()
    assert d["packet"] == "EstablishConnection"
    assert d["EstablishConnectionHeader"]["TimeStamp"] == 501140046
    assert d["BaseHeader"]["PacketSize"] == 572


def test_establish_connection_response(vectors):
    req = decode_packet(vec(vectors, "4.1.3_establish_connection_request.bin"))
    pkt = decode_packet(vec(vectors, "4.1.4_establish_connection_response.bin"))
    _check_internal_base(pkt.BaseHeader, 0x5A, 0x0B, 572)
    assert pkt.InternalHeader.Flags.PT == 2 and pkt.InternalHeader.Flags.CS == 0   # accepted
    ec = pkt.EstablishConnectionHeader
    # known defect: the response's GUIDs do not echo the request's; the bytes:
    assert ec.ClientGuid.bytes_le == bytes.fromhex("0523741F5EBE7741BC77C4DD7719E474")
    assert ec.ServerGuid.bytes_le == bytes.fromhex("EB6A3A3C67F5434187D385CF4D68CEB4")
    assert ec.ClientGuid != req.EstablishConnectionHeader.ClientGuid
    assert ec.TimeStamp == req.EstablishConnectionHeader.TimeStamp   # MUST echo the time stamp
    assert ec.padding_is_server_fill                                 # response: MUST be 0x5A
    assert ec.OperatingSystem.RE == 0x10


# ---------------------------------------------------------------------------- 4.1.5 / 4.1.6


@pytest.mark.parametrize("name", ["4.1.5_connection_parameters_request.bin",
                                  "4.1.6_connection_parameters_response.bin"])
def test_connection_parameters(vectors, name):
    pkt = decode_packet(vec(vectors, name))
    assert pkt.kind == "ConnectionParameters"
    _check_internal_base(pkt.BaseHeader, 0xC0, 0x0B, 32)
    assert pkt.InternalHeader.Flags.PT == 0x3
    cp = pkt.ConnectionParametersHeader
    assert cp.RecoverableAckTimeout == 1496            # 0x5D8
    assert 0x1F4 <= cp.RecoverableAckTimeout <= 0x1D4C0
    assert cp.AckTimeout == 120000                     # 0x1D4C0, the top of the valid range
    assert cp.Reserved == 0
    # 4.1.6's annotation says WindowSize 32; its bytes (00 00 40 00) hold 64
    assert cp.WindowSize == 64
    assert pkt.to_dict()["ConnectionParametersHeader"] == {
        "RecoverableAckTimeout": 1496, "AckTimeout": 120000, "Reserved": 0, "WindowSize": 64}


# ---------------------------------------------------------------------------- 4.1.8


def test_session_ack(vectors):
    data = vec(vectors, "4.1.8_session_ack.bin")
    pkt = decode_packet(data)
    assert pkt.kind == "SessionAck"
    _check_internal_base(pkt.BaseHeader, 0xCD, 0x1B, 36)
    assert pkt.BaseHeader.Flags.SH == 1                # SessionAck MUST set IN and SH
    assert pkt.InternalHeader.Flags.PT == 0x1
    s = pkt.SessionHeader
    assert s.AckSequenceNumber == 1                    # one UserMessage received (frame 7)
    assert s.RecoverableMsgAckSeqNumber == 0           # no recoverable message received
    assert s.RecoverableMsgAckFlags == 0
    assert s.UserMsgSequenceNumber == 0
    assert s.RecoverableMsgSeqNumber == 0
    assert s.WindowSize == 0x40                        # SHOULD be 0x0040
    assert s.Reserved == 0
    # the example counts the SessionHeader in PacketSize: 16 + 4 + 16
    assert pkt.session_header_counted is True


# ---------------------------------------------------------------------------- 4.1.7 UserMessage


UM = "4.1.7_user_message_first_222_bytes.bin"


def test_user_message_truncated_is_an_error_in_strict_mode(vectors):
    with pytest.raises(DecodeError) as ei:
        decode_packet(vec(vectors, UM))
    e = ei.value
    assert (e.structure, e.field, e.offset) == ("BaseHeader", "PacketSize", 8)


def test_user_message_base_header(vectors):
    pkt = decode_packet(vec(vectors, UM), lenient=True)
    b = pkt.BaseHeader
    assert b.VersionNumber == 0x10 and b.Reserved == 0
    assert b.Flags.value == 0x0003 and b.Flags.PR == 3
    assert b.Flags.IN == 0 and b.Flags.SH == 0 and b.Flags.DH == 0 and b.Flags.TR == 0
    assert b.PacketSize == 2224
    assert b.TimeToReachQueue == 345600                # "MessageLife: 345600 (0x54600)"
    assert pkt.truncated is True
    assert pkt.kind == "UserMessage"
    assert any(w.field == "PacketSize" for w in pkt.warnings)


def test_user_message_user_header(vectors):
    data = vec(vectors, UM)
    uh, nxt = UserHeader.decode(data, 16, len(data))
    assert uh.SourceQueueManager.bytes_le == QM_CLIENT_WIRE
    assert uh.QueueManagerAddress == uuid.UUID(int=0)     # direct format name: MUST be the NULL GUID
    assert uh.TimeToBeReceived == 0xFFFFFFFF
    assert uh.SentTime == 0x524F494C                      # known defect: the bytes "LIOR"
    assert data[52:56] == b"LIOR"
    assert uh.MessageID == 2286
    f = uh.Flags
    assert f.value == 0x00281C00
    assert (f.RC, f.DM, f.JN, f.JP) == (0, 0, 0, 0)       # no routing, express, no journaling
    assert (f.DQ, f.AQ, f.RQ) == (7, 0, 0)                # direct destination, no admin/response
    assert (f.SH, f.TH, f.MP, f.CQ, f.MQ, f.AH, f.HH) == (1, 0, 1, 0, 0, 0, 0)
    q = uh.DestinationQueue
    assert isinstance(q, DirectQueueFormatName)
    assert q.Count == 26                                  # "Length: 26 (0x1A)"
    assert q.DirectFormatName == "OS:a04bm02\\q"
    assert q.Padding == b""                               # "Padding: 0 Bytes"
    assert uh.format_name("DestinationQueue") == "DIRECT=OS:a04bm02\\q"
    assert nxt == 92                                      # SecurityHeader starts here (01 00 1C 00)
    assert uh.AdminQueue is None and uh.ResponseQueue is None and uh.ConnectorType is None
    assert uh.encode() == data[16:92]
    d = uh.to_dict()
    assert d["MessageID"] == 2286 and d["Flags"]["DQ"] == 7
    assert d["DestinationQueue"]["FormatName"] == "DIRECT=OS:a04bm02\\q"


def test_user_message_properties_header(vectors):
    data = vec(vectors, UM)
    # the SecurityHeader is 16 bytes + SenderIdSize 0x1C = 44 bytes: 92 + 44
    assert data[94:96] == b"\x1c\x00"
    mp_at = 92 + 16 + 0x1C
    warnings = []
    mp, nxt = MessagePropertiesHeader.decode(data, mp_at, len(data), lenient=True, warnings=warnings)
    # Flags: the byte is 0x0F (the annotation prints every ack bit as 0)
    assert mp.Flags.value == 0x0F
    assert (mp.Flags.PA, mp.Flags.PR, mp.Flags.NA, mp.Flags.NR) == (1, 1, 1, 1)
    assert mp.LabelLength == 15                            # 14 characters + the terminating null
    assert mp.MessageClass == 0x0000                       # MQMSG_CLASS_NORMAL
    assert mp.to_dict()["MessageClassName"] == "MQMSG_CLASS_NORMAL"
    assert mp.CorrelationID == bytes(20)                   # "(20 bytes, all values zero)"
    assert mp.BodyType == 8                                # VT_BSTR
    assert mp.ApplicationTag == 0
    assert mp.MessageSize == 2000
    assert mp.AllocationBodySize == 2000                   # the annotation's "20" is not in the bytes
    assert mp.PrivacyLevel == 0                            # no encryption
    assert mp.HashAlgorithm == 0x8004                      # SHA-1
    assert mp.EncryptionAlgorithm == 0x6801                # RC4 per [MS-MQMQ] (annotation: 0x6601)
    assert mp.ExtensionSize == 0
    assert mp.Label == "mqsender label"
    assert mp.ExtensionData == b""
    # the vector ends right after the Label: the body is cut, kept partial
    assert mp_at + 56 + 30 == 222 == nxt
    assert mp.truncated and mp.MessageBody == b""
    # PacketSize = everything up to the Label + MessageSize, padded to 4
    assert (222 + mp.MessageSize + 3) // 4 * 4 == 2224
    assert mp.encode() == data[mp_at:]
    assert any(w.field == "MessageSize" for w in warnings)


def test_user_message_lenient_round_trip_is_exact(vectors):
    data = vec(vectors, UM)
    pkt = decode_packet(data, lenient=True)
    assert encode_packet(pkt) == data
    assert pkt.UserHeader.MessageID == 2286


@needs_security
def test_user_message_all_headers_lenient(vectors):
    data = vec(vectors, UM)
    pkt = decode_packet(data, lenient=True)
    assert pkt.SecurityHeader is not None
    mp = pkt.MessagePropertiesHeader
    assert mp is not None and mp.Label == "mqsender label" and mp.truncated
    assert pkt.unparsed == b""
    # MessagePropertiesHeader.Flags asks for acknowledgments but AQ is 0: a warning
    assert any(w.structure == "UserHeader" and "AdminQueue" in w.reason for w in pkt.warnings)
    assert encode_packet(pkt) == data


def _full_user_message(data):
    # the spec's dump shows a body of "a" characters (61 00 ...); complete the
    # 2000-byte body with them and two padding bytes to reach PacketSize 2224
    return data + b"a\x00" * 1000 + b"\x00\x00"


@needs_security
def test_completed_user_message_strict(vectors):
    data = vec(vectors, UM)
    full = _full_user_message(data)
    assert len(full) == 2224
    assert spec_hexdump(vectors, "4.1.7") == full[:1650]
    pkt = decode_packet(full)
    assert pkt.MessagePropertiesHeader.MessageBody == ("a" * 1000).encode("utf-16-le")
    assert pkt.MessagePropertiesHeader.Padding == b"\x00\x00"
    assert encode_packet(pkt) == full
    assert not pkt.truncated
