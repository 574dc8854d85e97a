"""MSMQ optional headers ([MS-MQMQ] 2.2.20, [MS-MQRR] 2.2.5, [MS-MQQB] 2.2.4.1/2.2.5.1).

Every header is built here field by field from the specification's tables
(struct.pack with the values the spec defines), decoded, compared with the
values put in, and re-encoded to the identical bytes.  Errors: truncation at
every byte, lengths past the end, inconsistent sizes, and the CVE-2023-21554
packets of ../shared/vectors/msmq/malformed.
"""
from __future__ import annotations

import re
import struct
import uuid

import pytest
from hypothesis import given, settings, strategies as st

from mqcodec.errors import DecodeError, DecodeWarning
from mqcodec.msmq.optional_headers import (
    FLAG_BITS, IMPLEMENTATION_HEADER_ORDER, OPTIONAL_HEADER_ORDER, CompoundMessageHeader, DeadLetterHeader,
    DebugHeader, EodAckHeader, EodHeader, ExtendedAddressHeader, ExtensionHeader, FinalAckBody,
    MQFAddressHeader, MQFFormatNameElement, MultiQueueFormatHeader, OrderAckBody, RemoteReadExtensions,
    SecurityHeader, SoapHeader, SRMPEnvelopeHeader, SubqueueHeader, TransactionHeader,
)
from mqcodec.msmq.mqf import MQFSignatureHeader
from mqcodec.msmq.formatname import FormatName

SETTINGS = settings(max_examples=150, deadline=None)

G1 = uuid.UUID("c626ea11-e6b6-9749-9595-9150557358d1")   # SourceQueueManager of [MS-MQQB] 4.1.7
G2 = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
G3 = uuid.UUID("6f57e4c2-0a8d-4b2c-9c4d-7e4a1b2c3d4e")

ALL_HEADERS = (TransactionHeader, SecurityHeader, DebugHeader, SoapHeader, SRMPEnvelopeHeader,
               CompoundMessageHeader, MultiQueueFormatHeader, ExtensionHeader, SubqueueHeader,
               DeadLetterHeader, ExtendedAddressHeader, OrderAckBody, FinalAckBody, EodHeader, EodAckHeader,
               MQFAddressHeader, MQFSignatureHeader, RemoteReadExtensions)


def w(text: str) -> bytes:
    """A null-terminated WCHAR string."""
    return (text + "\x00").encode("utf-16-le")


def pad4(b: bytes, fill: bytes = b"\x00") -> bytes:
    return b + fill * (-len(b) % 4)


def roundtrip(cls, raw: bytes, prefix: bytes = b"\xEE" * 8, **kw):
    """Decode ``raw`` placed after a prefix (offsets must be absolute), check
    the next offset and the re-encoding."""
    data = prefix + raw
    h, nxt = cls.decode(data, len(prefix), len(data), **kw)
    assert nxt == len(data)
    assert h.encode() == raw
    return h


def assert_truncations(cls, raw: bytes, structures=None, **kw):
    """Every strict prefix of ``raw`` gives a DecodeError inside the header."""
    structures = structures or {cls.STRUCTURE}
    for k in range(len(raw)):
        data = b"\xEE" * 4 + raw[:k]
        with pytest.raises(DecodeError) as ei:
            cls.decode(data, 4, len(data), **kw)
        e = ei.value
        assert e.structure in structures, (k, e)
        assert 4 <= e.offset <= 4 + max(k, 0) + 16, (k, e)


# ---------------------------------------------------------------- which flag, which order

def test_flag_bits_match_the_spec_example_4_1_7(vectors):
    # [MS-MQQB] 4.1.7: UserHeader.Flags 0x281C00 = "SecurityHeader included",
    # "MessagePropertyHdr included", no TransactionHeader / MQF / SOAP header;
    # BaseHeader.Flags 0x0003: no SessionHeader, no DebugHeader.
    data = (vectors / "msmq" / "4.1.7_user_message_first_222_bytes.bin").read_bytes()
    user_flags = struct.unpack_from("<I", data, 0x3C)[0]
    base_flags = struct.unpack_from("<H", data, 2)[0]
    assert user_flags == 0x281C00 and base_flags == 0x0003
    assert user_flags & FLAG_BITS[("UserHeader", "SH")]
    assert user_flags & FLAG_BITS[("UserHeader", "MP")]
    for name in ("TH", "MQ", "HH", "AH"):
        assert not user_flags & FLAG_BITS[("UserHeader", name)]
    for name in ("SH", "DH"):
        assert not base_flags & FLAG_BITS[("BaseHeader", name)]


def test_optional_header_order_is_the_specs(vectors):
    # [MS-MQRR] 2.2.5.1: the UserMessage diagram lists every header in order.
    spec = (vectors.parent / "specs" / "MS-MQRR.md").read_text(encoding="utf-8")
    section = spec[spec.index("#### 2.2.5.1 UserMessage"):]
    diagram = section[section.index("packet-beta"): section.index("```", section.index("packet-beta"))]
    names = re.findall(r'"(\w+) \(', diagram)
    assert names[:2] == ["BaseHeader", "UserHeader"]
    assert [row[1] for row in OPTIONAL_HEADER_ORDER] == names[2:]
    # the announcing flags, as [MS-MQMQ] 2.2.20 words them
    flags = {row[1]: row[2] for row in OPTIONAL_HEADER_ORDER}
    assert flags["TransactionHeader"] == ("UserHeader", "TH")
    assert flags["SecurityHeader"] == ("UserHeader", "SH")
    assert flags["DebugHeader"] == ("BaseHeader", "DH")
    assert flags["SoapHeader"] == ("UserHeader", "HH")
    assert flags["MultiQueueFormatHeader"] == ("UserHeader", "MQ")
    assert flags["SessionHeader"] == ("BaseHeader", "SH")
    assert flags["SRMPEnvelopeHeader"] == flags["CompoundMessageHeader"] == ("UserHeader", "AH")
    # same headers in the implementation order, plus the two EOD sections
    assert {r[1] for r in IMPLEMENTATION_HEADER_ORDER} == set(names[2:]) | {"EodHeader", "EodAckHeader"}


def test_no_provided_spec_defines_eod_headers(vectors):
    for name in ("MS-MQMQ.md", "MS-MQQB.md", "MS-MQRR.md", "MS-MQDMPR.md"):
        text = (vectors.parent / "specs" / name).read_text(encoding="utf-8")
        assert "EodHeader" not in text and "EodAck" not in text


# ---------------------------------------------------------------- TransactionHeader 2.2.20.5

def transaction_bytes(cg=True, seq=3, prev=2, ident=0xABCDE):
    flags = (1 if cg else 0) | 0x2 | 0x4 | 0x8 | (ident << 4)        # CG FA FM LM, ID bits 4-23
    raw = struct.pack("<I", flags) + struct.pack("<II", 7, 0x5F000000) + struct.pack("<II", seq, prev)
    return raw + (G2.bytes_le if cg else b""), flags


def test_transaction_header_from_spec_table():
    raw, flags = transaction_bytes()
    h = roundtrip(TransactionHeader, raw)
    assert len(raw) == 36
    assert h.Flags == flags
    d = h.to_dict()
    assert d["FlagFields"]["CG"] == d["FlagFields"]["FA"] == d["FlagFields"]["FM"] == d["FlagFields"]["LM"] == 1
    assert d["FlagFields"]["ID"] == 0xABCDE
    assert d["TxSequenceID"] == {"Ordinal": 7, "TimeStamp": 0x5F000000}
    assert h.TxSequenceID.value == (0x5F000000 << 32) | 7       # 2.2.18.1.2: Ordinal is the low part
    assert d["TxSequenceNumber"] == 3 and d["PreviousTxSequenceNumber"] == 2
    assert d["ConnectorQMGuid"] == str(G2)


def test_transaction_header_without_connector_guid():
    raw, _ = transaction_bytes(cg=False)
    h = roundtrip(TransactionHeader, raw)
    assert len(raw) == 20 and h.ConnectorQMGuid is None and "ConnectorQMGuid" not in h.to_dict()


def test_transaction_header_errors():
    raw, _ = transaction_bytes()
    assert_truncations(TransactionHeader, raw)
    with pytest.raises(DecodeError) as ei:        # CG set, GUID cut
        TransactionHeader.decode(b"\0" * 4 + raw[:30], 4, 34)
    assert (ei.value.field, ei.value.offset) == ("ConnectorQMGuid", 24)
    bad, _ = transaction_bytes(cg=False, seq=0)  # TxSequenceNumber range 1..0xFFFFFFFF
    with pytest.raises(DecodeError) as ei:
        TransactionHeader.decode(bad, 0, len(bad))
    assert (ei.value.structure, ei.value.field, ei.value.offset) == ("TransactionHeader", "TxSequenceNumber", 12)
    warnings: list = []
    h, n = TransactionHeader.decode(bad, 0, len(bad), lenient=True, warnings=warnings)
    assert n == 20 and h.TxSequenceNumber == 0
    assert [(x.field, x.offset) for x in warnings] == [("TxSequenceNumber", 12)]
    assert isinstance(warnings[0], DecodeWarning)
    bad, _ = transaction_bytes(cg=False, prev=0xFFFFFFFF)
    with pytest.raises(DecodeError) as ei:
        TransactionHeader.decode(bad, 0, len(bad))
    assert ei.value.field == "PreviousTxSequenceNumber"


# ---------------------------------------------------------------- SecurityHeader 2.2.20.6

def test_security_header_of_the_spec_example_4_1_7(vectors):
    data = (vectors / "msmq" / "4.1.7_user_message_first_222_bytes.bin").read_bytes()
    # BaseHeader 16 + UserHeader 48 fixed + Count(2) + 26 bytes "OS:a04bm02\q" -> 0x5C
    assert data[0x42:0x5C].decode("utf-16-le") == "OS:a04bm02\\q\x00"
    h, nxt = SecurityHeader.decode(data, 0x5C, 2224)
    # annotation: Flags 1 (SenderIDType SID), SenderIdSize 28, the other sizes 0
    assert h.Flags == 1 and h.ST == 1
    assert (h.SenderIdSize, h.EncryptionKeySize, h.SignatureSize, h.SenderCertSize, h.ProviderInfoSize) \
        == (28, 0, 0, 0, 0)
    # the MessagePropertiesHeader follows: its LabelLength is 15 (annotation)
    assert nxt == 0x5C + 16 + 28 and data[nxt + 1] == 15
    assert h.encode() == data[0x5C:nxt]
    # [MS-DTYP] 2.4.2.2 read by hand from the spec's hex dump:
    # 01 05 000000000005 15000000 AD4A9EBD 36D9FA3D 63A656DA E8030000
    subs = [int.from_bytes(bytes.fromhex(x), "little") for x in ("15000000", "AD4A9EBD", "36D9FA3D", "63A656DA",
                                                                  "E8030000")]
    assert str(h.sender_id) == "S-1-5-" + "-".join(map(str, subs))
    assert h.to_dict()["SecurityData"]["SecurityID"].endswith("-1000")


def security_bytes(flags=0x0002 | 0x0020, key=b"KEY01", sig=b"SIGNATU", cert=b"0123456789",
                   provider=struct.pack("<I", 24) + w("Microsoft AES Cryptographic Provider"), sender=G1.bytes_le,
                   fill=b"\xAA"):
    # ST = 2 (queue manager GUID), EB = 1 (bit 5); DE = 0 so ProviderInfo present
    fixed = struct.pack("<HHHHII", flags, len(sender), len(key), len(sig), len(cert), len(provider))
    body = b"".join(pad4(x, fill) for x in (sender, key, sig, cert, provider))
    return fixed + body


def test_security_header_all_items_from_spec_table():
    raw = security_bytes()
    h = roundtrip(SecurityHeader, raw)
    assert h.sender_id == str(G1)
    assert (h.EncryptionKey, h.Signature, h.SenderCert) == (b"KEY01", b"SIGNATU", b"0123456789")
    d = h.to_dict()
    assert d["FlagFields"]["ST"] == 2 and d["FlagFields"]["EB"] == 1 and d["FlagFields"]["DE"] == 0
    assert d["SecurityData"]["ProviderInfo"] == {"ProviderType": 24,
                                                 "ProviderName": "Microsoft AES Cryptographic Provider"}
    # each item aligned to 4: padding bytes (0xAA here) kept
    assert h.paddings["EncryptionKey"] == b"\xAA\xAA\xAA"
    assert len(raw) == 16 + 16 + 8 + 8 + 12 + 80   # ProviderInfo: 4 + 37 WCHARs = 78, aligned 80


def test_security_header_errors():
    raw = security_bytes()
    assert_truncations(SecurityHeader, raw)
    # CVE-2023-21554 style: a size far beyond the packet
    bad = bytearray(raw)
    struct.pack_into("<I", bad, 8, 0x40000000)
    with pytest.raises(DecodeError) as ei:
        SecurityHeader.decode(bytes(b"\0" * 8 + bad), 8, 8 + len(bad), lenient=True, warnings=[])
    assert (ei.value.structure, ei.value.field, ei.value.offset) == ("SecurityHeader", "SenderCertSize", 16)
    # ST = 0 requires SenderIdSize 0
    bad = security_bytes(flags=0x0000)
    with pytest.raises(DecodeError) as ei:
        SecurityHeader.decode(bad, 0, len(bad))
    assert (ei.value.field, ei.value.offset) == ("SenderIdSize", 2)
    # ST = 2 requires a 16-byte GUID
    bad = security_bytes(sender=b"\1" * 12)
    with pytest.raises(DecodeError) as ei:
        SecurityHeader.decode(bad, 0, len(bad))
    assert ei.value.field == "SenderIdSize"
    # ST = 1 but not a SID
    bad = security_bytes(flags=0x0001, sender=b"\2" * 12)
    with pytest.raises(DecodeError) as ei:
        SecurityHeader.decode(bad, 0, len(bad))
    assert (ei.value.field, ei.value.offset) == ("SecurityID", 16)
    # all five sizes zero
    empty = struct.pack("<HHHHII", 0, 0, 0, 0, 0, 0)
    with pytest.raises(DecodeError):
        SecurityHeader.decode(empty, 0, 16)
    warnings: list = []
    h, n = SecurityHeader.decode(empty, 0, 16, lenient=True, warnings=warnings)
    assert n == 16 and len(warnings) == 1
    # AU and AS MUST be 0
    for flags in (0x0012, 0x0102):
        bad = security_bytes(flags=flags)
        with pytest.raises(DecodeError) as ei:
            SecurityHeader.decode(bad, 0, len(bad))
        assert ei.value.field == "Flags"
    # DE set: ProviderInfo must not be included
    bad = security_bytes(flags=0x0042)
    with pytest.raises(DecodeError) as ei:
        SecurityHeader.decode(bad, 0, len(bad))
    assert ei.value.field == "ProviderInfoSize"
    # SenderCertSize range 0..0xFFFF
    bad = bytearray(security_bytes(cert=b""))
    struct.pack_into("<I", bad, 8, 0x10000)
    with pytest.raises(DecodeError) as ei:
        SecurityHeader.decode(bytes(bad) + b"\0" * 0x10000, 0, len(bad) + 0x10000)
    assert ei.value.field == "SenderCertSize"


# ---------------------------------------------------------------- DebugHeader 2.2.20.8

def test_debug_header_from_spec_table():
    raw = struct.pack("<HH", 0x0001, 0) + G3.bytes_le           # QT = 1: public queue GUID
    h = roundtrip(DebugHeader, raw)
    assert h.to_dict()["QueueIdentifier"] == str(G3) and h.to_dict()["FlagFields"]["QT"] == 1
    h = roundtrip(DebugHeader, struct.pack("<HH", 0x0000, 0))   # QT = 0: no QueueIdentifier
    assert h.QueueIdentifier is None
    assert_truncations(DebugHeader, raw)
    for qt in (2, 3):
        with pytest.raises(DecodeError) as ei:
            DebugHeader.decode(struct.pack("<HH", qt, 0) + G3.bytes_le, 0, 20, lenient=True, warnings=[])
        assert (ei.value.field, ei.value.offset) == ("Flags", 0)


# ---------------------------------------------------------------- SoapHeader 2.2.20.7

def soap_bytes(header="<h:x/>", body="<b>hello</b>", header_id=0x0320, body_id=0x0384):
    h, b = w(header), w(body)
    return (struct.pack("<HHI", header_id, 0, len(h) // 2) + pad4(h, b"\x55")
            + struct.pack("<HHI", body_id, 0, len(b) // 2) + pad4(b, b"\x55"))


def test_soap_header_from_spec_table():
    raw = soap_bytes()
    h = roundtrip(SoapHeader, raw)
    d = h.to_dict()
    assert (d["HeaderSectionID"], d["BodySectionID"]) == (0x0320, 0x0384)
    assert (d["Header"], d["Body"]) == ("<h:x/>", "<b>hello</b>")
    assert (d["HeaderDataLength"], d["BodyDataLength"]) == (7, 13)    # WCHARs incl. the null
    assert h.padding1 == b"\x55\x55" and h.padding == b"\x55\x55"
    assert SoapHeader.create("<h:x/>", "<b>hello</b>").encode() == soap_bytes().replace(b"\x55", b"\0")


def test_soap_header_errors():
    raw = soap_bytes()
    assert_truncations(SoapHeader, raw)
    bad = soap_bytes(body_id=0x0385)
    with pytest.raises(DecodeError) as ei:
        SoapHeader.decode(bad, 0, len(bad))
    assert (ei.value.field, ei.value.offset) == ("BodySectionID", 8 + 16)
    h, _ = SoapHeader.decode(bad, 0, len(bad), lenient=True, warnings=[])
    assert h.encode() == bad
    bad = bytearray(raw)
    struct.pack_into("<I", bad, 4, 0x7FFFFFFF)
    with pytest.raises(DecodeError) as ei:
        SoapHeader.decode(bytes(bad), 0, len(bad))
    assert (ei.value.field, ei.value.offset) == ("HeaderDataLength", 4)
    # a string without its null character
    bad = struct.pack("<HHI", 0x0320, 0, 2) + "ab".encode("utf-16-le") + soap_bytes()[16:]
    with pytest.raises(DecodeError) as ei:
        SoapHeader.decode(bad, 0, len(bad))
    assert ei.value.field == "Header"


# ---------------------------------------------------------------- SRMP headers, MS-MQRR 2.2.5.1.2

def test_srmp_envelope_from_spec_table():
    env = w("<se:Envelope/>")
    raw = struct.pack("<HHI", 0, 0, len(env) // 2) + pad4(env)
    h = roundtrip(SRMPEnvelopeHeader, raw)
    assert h.to_dict()["Data"] == "<se:Envelope/>" and h.DataLength == 15
    assert SRMPEnvelopeHeader.create("<se:Envelope/>").encode() == raw
    assert_truncations(SRMPEnvelopeHeader, raw)


def test_compound_message_from_spec_table():
    data = b"POST /msmq/private$/q HTTP/1.1\r\nContent-Length: 4\r\n\r\nBODY!"
    off = data.index(b"BODY")
    raw = pad4(struct.pack("<HHIII", 0, 0, len(data), 4, off) + data)
    h = roundtrip(CompoundMessageHeader, raw)
    assert (h.HTTPBodySize, h.MsgBodySize, h.MsgBodyOffset) == (len(data), 4, off)
    assert h.message_body == b"BODY"
    assert_truncations(CompoundMessageHeader, raw)
    bad = pad4(struct.pack("<HHIII", 0, 0, len(data), 0xFFFFFFF0, 0x20) + data)
    with pytest.raises(DecodeError) as ei:
        CompoundMessageHeader.decode(bad, 0, len(bad))
    assert (ei.value.structure, ei.value.field, ei.value.offset) == ("CompoundMessageHeader", "MsgBodySize", 8)


def test_v9_queuejumper_trailing_header_is_rejected(vectors):
    data = (vectors / "msmq" / "malformed" / "V9_queuejumper_poc.bin").read_bytes()
    # 16 bytes after the MessagePropertiesHeader: 11111111 00000040 00000040 00000000
    assert data[0xF0:] == bytes.fromhex("11111111000000400000004000000000")
    with pytest.raises(DecodeError) as ei:
        EodHeader.decode(data, 0xF0, len(data), lenient=True, warnings=[])
    assert (ei.value.structure, ei.value.field, ei.value.offset) == ("EodHeader", "StreamIdSize", 0xF4)
    with pytest.raises(DecodeError) as ei:
        CompoundMessageHeader.decode(data, 0xF0, len(data), lenient=True, warnings=[])
    assert (ei.value.structure, ei.value.field, ei.value.offset) == ("CompoundMessageHeader", "HTTPBodySize", 0xF4)


def test_v12_srmp_envelope_runs_past_the_end(vectors):
    data = (vectors / "msmq" / "malformed" / "V12_msf_queuejumper_prefix240.bin").read_bytes()
    # UserHeader.Flags has AH (bit 25); the envelope follows the MessagePropertiesHeader at 0xE4
    assert struct.unpack_from("<I", data, 0x3C)[0] & FLAG_BITS[("UserHeader", "AH")]
    assert struct.unpack_from("<I", data, 0xE8)[0] == 539
    assert data[0xEC:0xF0].decode("utf-16-le") == "<s"
    with pytest.raises(DecodeError) as ei:
        SRMPEnvelopeHeader.decode(data, 0xE4, 2404, lenient=True, warnings=[])
    assert (ei.value.structure, ei.value.field, ei.value.offset) == ("SRMPEnvelopeHeader", "DataLength", 0xE8)


def test_eod_headers_opaque_by_size():
    raw = pad4(struct.pack("<HHII", 0x1F4, 0, 5, 3) + b"SIDxx" + b"ORD")
    h = roundtrip(EodHeader, raw)
    assert h.Buffer == b"SIDxxORD"
    raw = pad4(struct.pack("<HH", 0x258, 0) + b"\1" * 8 + b"\2" * 8 + struct.pack("<I", 3) + b"abc")
    h = roundtrip(EodAckHeader, raw)
    assert h.Buffer == b"abc"
    assert_truncations(EodAckHeader, raw)


# ---------------------------------------------------------------- MultiQueueFormatHeader 2.2.20.1-3

def mqf_destination_bytes(fill=b"\x77"):
    """An MQFAddressHeader (HeaderID 0x0064) of four elements, aligned as
    2.2.18.1.4 says: GUIDs at the next 4-byte boundary, the direct name at the
    next 2-byte boundary, the list end rounded up to 4 (padding 0x77)."""
    body = b""
    pos = 12
    # public: FormatType 1, 2 bytes to the 4-byte boundary, GUID
    e1 = struct.pack("<H", 1) + fill * 2 + G1.bytes_le
    # direct: FormatType 3 then the WCHARs straight away
    e2 = struct.pack("<H", 3) + w("TCP:10.1.2.3\\PRIVATE$\\orders")
    body = e1 + e2
    # private: FormatType 2 at an odd 2-byte position, then the boundary
    pos = 12 + len(body)
    e3 = struct.pack("<H", 2) + fill * (-(pos + 2) % 4) + G2.bytes_le + struct.pack("<I", 0x1A2B)
    body += e3
    pos = 12 + len(body)
    e4 = struct.pack("<H", 6) + fill * (-(pos + 2) % 4) + G3.bytes_le
    body += e4
    size = 12 + len(body) + (-(12 + len(body)) % 4)
    return struct.pack("<IHHI", size, 0x0064, 0, 4) + pad4(body, fill), size


def empty_mqf(hid):
    return struct.pack("<IHHI", 12, hid, 0, 0)


def test_mqf_address_header_from_spec_table():
    raw, size = mqf_destination_bytes()
    assert len(raw) == size
    h = roundtrip(MQFAddressHeader, raw)
    assert h.HeaderID == 0x0064 and h.ElementCount == 4
    names = [str(fn) for fn in h.format_names]
    assert names == ["PUBLIC=%s" % str(G1).upper(), "DIRECT=TCP:10.1.2.3\\PRIVATE$\\orders",
                     "PRIVATE=%s\\00001A2B" % str(G2).upper(), "DL=%s" % str(G3).upper()]
    assert h.FormatNameList[2].PrivateQueueIdentifier == 0x1A2B
    assert MQFAddressHeader.create(0x0064, names).encode() == mqf_destination_bytes(b"\x00")[0]


def test_multi_queue_format_header_from_spec_table():
    dest, _ = mqf_destination_bytes()
    sig = struct.pack("<HHI", 0x015E, 0, 3) + b"S\x01G" + b"\x00"
    raw = dest + empty_mqf(0x00C8) + empty_mqf(0x012C) + sig
    h = roundtrip(MultiQueueFormatHeader, raw)
    assert h.Administration.ElementCount == 0 and h.Response.HeaderID == 0x012C
    assert h.Signature.Signature == b"S\x01G"
    d = h.to_dict()
    assert d["Destination"]["FormatNameList"][1]["DirectFormatName"] == "TCP:10.1.2.3\\PRIVATE$\\orders"
    # all four parts are required
    assert_truncations(MultiQueueFormatHeader, raw, {"MultiQueueFormatHeader", "MQFAddressHeader",
                                                     "MQFFormatNameElement", "MQFSignatureHeader"})
    # wrong order of the address headers
    swapped = dest + empty_mqf(0x012C) + empty_mqf(0x00C8) + sig
    with pytest.raises(DecodeError) as ei:
        MultiQueueFormatHeader.decode(swapped, 0, len(swapped))
    assert (ei.value.structure, ei.value.field, ei.value.offset) == ("MQFAddressHeader", "HeaderID", len(dest) + 4)


def test_mqf_errors():
    raw, size = mqf_destination_bytes()
    bad = bytearray(raw)
    struct.pack_into("<I", bad, 8, 0x40000000)              # ElementCount
    with pytest.raises(DecodeError) as ei:
        MQFAddressHeader.decode(bytes(bad), 0, len(bad))
    assert (ei.value.field, ei.value.offset) == ("ElementCount", 8)
    bad = bytearray(raw)
    struct.pack_into("<I", bad, 0, 0xFFFFFFF0)              # HeaderSize
    with pytest.raises(DecodeError) as ei:
        MQFAddressHeader.decode(bytes(bad), 0, len(bad))
    assert (ei.value.field, ei.value.offset) == ("HeaderSize", 0)
    bad = bytearray(raw)
    struct.pack_into("<I", bad, 0, 8)                       # below the 0x0C minimum
    with pytest.raises(DecodeError) as ei:
        MQFAddressHeader.decode(bytes(bad), 0, len(bad))
    assert ei.value.field == "HeaderSize"
    bad = bytearray(raw)
    struct.pack_into("<H", bad, 12, 5)                      # FormatType 5 is not defined for elements
    with pytest.raises(DecodeError) as ei:
        MQFAddressHeader.decode(bytes(bad), 0, len(bad), lenient=True, warnings=[])
    assert (ei.value.structure, ei.value.field, ei.value.offset) == ("MQFFormatNameElement", "FormatType", 12)
    # a direct name without its terminator inside HeaderSize
    el = struct.pack("<H", 3) + "TCP:1.2.3.4\\q".encode("utf-16-le")
    hdr = struct.pack("<IHHI", 12 + len(el), 0x64, 0, 1) + el
    with pytest.raises(DecodeError) as ei:
        MQFAddressHeader.decode(hdr + b"\0\0\0\0", 0, len(hdr) + 4)
    assert (ei.value.structure, ei.value.field) == ("MQFFormatNameElement", "DirectFormatName")
    sig = struct.pack("<HHI", 0x015E, 0, 0x7FFFFFFF)
    with pytest.raises(DecodeError) as ei:
        MQFSignatureHeader.decode(sig, 0, 8)
    assert (ei.value.field, ei.value.offset) == ("Size", 4)
    sig = struct.pack("<HHI", 0x015F, 0, 0)
    with pytest.raises(DecodeError) as ei:
        MQFSignatureHeader.decode(sig, 0, 8)
    assert ei.value.field == "ID"


def test_mqf_element_alignment_counts_from_the_header():
    # the same public element at an offset that is 2 mod 4 from the header start: no padding
    el, n = MQFFormatNameElement.decode(b"\0\0" + struct.pack("<H", 1) + G1.bytes_le, 2, 20, base=0)
    assert el.Padding == b"" and n == 20 and el.format_name == FormatName.public(G1)
    el, n = MQFFormatNameElement.decode(struct.pack("<H", 1) + b"\0\0" + G1.bytes_le, 0, 20)
    assert el.Padding == b"\0\0" and n == 20


# ---------------------------------------------------------------- MS-MQRR 2.2.5.2-2.2.5.5

def remote_read_bytes():
    sub = (struct.pack("<I", 148) + struct.pack("<I", (0x8000 << 1))      # TM 0, AcknowledgementClass 0x8000
           + struct.pack("<III", 2, 1, 0x12345678)
           + w("poison").ljust(64, b"\0") + w("retry").ljust(64, b"\0"))
    dlq_path = w("DIRECT=OS:host\\private$\\dlq")
    dl = struct.pack("<I", 4 + len(pad4(dlq_path))) + pad4(dlq_path)
    ea = struct.pack("<IHHI", 28, 4, 0x0001, 0) + bytes([192, 0, 2, 1]) + b"\0" * 12
    ext = struct.pack("<IIB", 12, len(sub) + len(dl) + len(ea), 0x01 | 0x02 | 0x10) + b"\0\0\0"
    return ext, sub, dl, ea


def test_remote_read_extension_chain_from_spec_tables():
    ext, sub, dl, ea = remote_read_bytes()
    assert len(sub) == 148 and len(ea) == 28 and len(ext) == 12      # sizes the 2.2.5 diagram gives
    chain = roundtrip(RemoteReadExtensions, ext + sub + dl + ea)
    d = chain.to_dict()
    assert d["ExtensionHeader"]["FlagFields"]["DL"] == 1 and d["ExtensionHeader"]["FlagFields"]["EA"] == 1
    assert d["SubqueueHeader"]["SubqueueName"] == "poison"
    assert d["SubqueueHeader"]["TargetSubqueueName"] == "retry"
    assert d["SubqueueHeader"]["AcknowledgementClass"] == 0x8000
    assert d["SubqueueHeader"]["LastMoveTime"] == 0x12345678
    assert d["DeadLetterHeader"]["DeadLetterPathName"] == "DIRECT=OS:host\\private$\\dlq"
    assert chain.ExtendedAddressHeader.address == "192.0.2.1"
    for cls, raw in ((SubqueueHeader, sub), (DeadLetterHeader, dl), (ExtendedAddressHeader, ea)):
        roundtrip(cls, raw)
        assert_truncations(cls, raw)
    h, n = ExtensionHeader.decode(ext + sub + dl + ea, 0, len(ext + sub + dl + ea))
    assert n == 12 and h.encode() == ext and h.RemainingHeadersSize == len(sub + dl + ea)
    assert_truncations(ExtensionHeader, ext)
    v6 = struct.pack("<IHHI", 28, 16, 0x0006, 3) + bytes.fromhex("20010db8000000000000000000000001")
    assert roundtrip(ExtendedAddressHeader, v6).address == "2001:db8::1"


def test_remote_read_errors():
    ext, sub, dl, ea = remote_read_bytes()
    with pytest.raises(DecodeError) as ei:            # RemainingHeadersSize beyond the buffer
        RemoteReadExtensions.decode(ext + sub, 0, len(ext + sub))
    assert (ei.value.structure, ei.value.field, ei.value.offset) == ("ExtensionHeader", "RemainingHeadersSize", 4)
    bad = struct.pack("<IIB", 12, 0, 0x01) + b"\0\0\0"   # SQ and EA MUST be 1
    with pytest.raises(DecodeError) as ei:
        ExtensionHeader.decode(bad, 0, 12)
    assert ei.value.field == "Flags"
    bad = struct.pack("<I", 0x11111111) + dl[4:]
    with pytest.raises(DecodeError) as ei:
        DeadLetterHeader.decode(bad, 0, len(bad), lenient=True, warnings=[])
    assert (ei.value.field, ei.value.offset) == ("HeaderSize", 0)
    bad = struct.pack("<I", 12) + "abcdefgh".encode("utf-16-le")     # no terminator within HeaderSize
    with pytest.raises(DecodeError) as ei:
        DeadLetterHeader.decode(bad, 0, len(bad))
    assert ei.value.field == "DeadLetterPathName"
    bad = bytearray(sub)
    struct.pack_into("<I", bad, 4, 1)                 # TM MUST be 0
    with pytest.raises(DecodeError) as ei:
        SubqueueHeader.decode(bytes(bad), 0, 148)
    assert (ei.value.field, ei.value.offset) == ("Flags", 4)
    bad = bytearray(ea)
    struct.pack_into("<H", bad, 6, 2)                 # AddressType 2 undefined
    with pytest.raises(DecodeError) as ei:
        ExtendedAddressHeader.decode(bytes(bad), 0, 28)
    assert (ei.value.field, ei.value.offset) == ("AddressType", 6)


# ---------------------------------------------------------------- OrderAck / FinalAck bodies (MS-MQQB)

def test_order_ack_and_final_ack_bodies_from_spec_tables():
    raw = struct.pack("<II", 9, 0x60000000) + struct.pack("<II", 5, 4) + b"\0" * 20
    assert len(raw) == 0x24                              # "MessageSize MUST be set to 0x00000024"
    h = roundtrip(OrderAckBody, raw)
    assert h.to_dict()["TxSequenceNumber"] == 5 and h.TxSequenceID.Ordinal == 9
    bad = struct.pack("<II", 9, 0x60000000) + struct.pack("<II", 5, 3) + b"\0" * 20
    with pytest.raises(DecodeError) as ei:               # TxPreviousSequenceNumber MUST be TxSequenceNumber - 1
        OrderAckBody.decode(bad, 0, 36)
    assert (ei.value.field, ei.value.offset) == ("TxPreviousSequenceNumber", 12)
    raw = struct.pack("<II", 9, 0x60000000) + struct.pack("<II", 5, 4) + G1.bytes_le + struct.pack("<I", 2286)
    assert len(raw) == 0x24
    h = roundtrip(FinalAckBody, raw)
    assert h.to_dict()["SourceGUID"] == str(G1) and h.MessageID == 2286
    assert_truncations(FinalAckBody, raw)
    assert_truncations(OrderAckBody, raw)


# ---------------------------------------------------------------- hostile input: nothing but DecodeError

def _all_vectors(vectors):
    out = [p.read_bytes() for p in sorted((vectors / "msmq").glob("*.bin"))]
    out += [p.read_bytes() for p in sorted((vectors / "msmq" / "malformed").glob("*.bin"))]
    return out


def test_every_header_on_every_vector_offset(vectors):
    for data in _all_vectors(vectors):
        for off in range(0, len(data), 4):
            for cls in ALL_HEADERS:
                for lenient in (False, True):
                    try:
                        h, nxt = cls.decode(data, off, len(data), lenient=lenient, warnings=[])
                    except DecodeError as e:
                        assert e.structure and off <= e.offset <= len(data)
                        continue
                    assert off < nxt <= len(data)
                    assert h.encode() == data[off:nxt]
                    h.to_dict()


@SETTINGS
@given(st.binary(max_size=300), st.integers(0, 8), st.sampled_from(ALL_HEADERS), st.booleans())
def test_random_bytes_never_escape(data, off, cls, lenient):
    try:
        h, nxt = cls.decode(data, off, len(data), lenient=lenient, warnings=[])
    except DecodeError:
        return
    assert h.encode() == data[off:nxt]


# ---------------------------------------------------------------- hypothesis round trips

u32 = st.integers(0, 0xFFFFFFFF)
u16 = st.integers(0, 0xFFFF)
guids = st.binary(min_size=16, max_size=16)
texts = st.text(st.characters(min_codepoint=1, max_codepoint=0xD7FF), max_size=40)


@SETTINGS
@given(u32, u32, u32, st.integers(1, 0xFFFFFFFF), st.integers(0, 0xFFFFFFFE), guids)
def test_transaction_header_roundtrip(flags, ordinal, stamp, seq, prev, g):
    raw = struct.pack("<IIIII", flags, ordinal, stamp, seq, prev) + (g if flags & 1 else b"")
    h = roundtrip(TransactionHeader, raw)
    assert (h.TxSequenceID.Ordinal, h.TxSequenceID.TimeStamp) == (ordinal, stamp)


@SETTINGS
@given(st.integers(0, 2), st.booleans(), st.binary(max_size=40), st.binary(max_size=40), st.binary(max_size=40),
       st.binary(max_size=12), st.integers(1, 3), st.sampled_from([b"\0", b"\xAA"]))
def test_security_header_roundtrip(st_, eb, key, sig, cert, subs, count, fill):
    sender = b""
    if st_ == 1:
        sender = bytes([1, count]) + b"\0\0\0\0\0\x05" + struct.pack("<%dI" % count, *range(count))
    elif st_ == 2:
        sender = G2.bytes_le
    if not (sender or key or sig or cert):
        key = b"k"
    raw = security_bytes(flags=st_ | (eb << 5) | 0x40, key=key, sig=sig, cert=cert, provider=b"", sender=sender,
                         fill=fill)
    h = roundtrip(SecurityHeader, raw)
    assert (h.EncryptionKey, h.Signature, h.SenderCert) == (key, sig, cert)


@SETTINGS
@given(texts, texts)
def test_soap_header_roundtrip(header, body):
    h = SoapHeader.create(header, body)
    back = roundtrip(SoapHeader, h.encode())
    assert back.to_dict()["Header"] == header and back.to_dict()["Body"] == body


@SETTINGS
@given(texts, st.binary(max_size=64), st.data())
def test_srmp_roundtrip(env, body, data):
    h = roundtrip(SRMPEnvelopeHeader, SRMPEnvelopeHeader.create(env).encode())
    assert h.text == env
    off = data.draw(st.integers(0, len(body)))
    size = data.draw(st.integers(0, len(body) - off))
    c = roundtrip(CompoundMessageHeader, CompoundMessageHeader.create(body, off, size).encode())
    assert c.message_body == body[off: off + size]


@st.composite
def format_names(draw):
    kind = draw(st.sampled_from(["PUBLIC", "PRIVATE", "DIRECT", "DL"]))
    g = uuid.UUID(bytes=draw(guids))
    if kind == "PUBLIC":
        return FormatName.public(g)
    if kind == "PRIVATE":
        return FormatName.private(g, draw(u32))
    if kind == "DL":
        return FormatName.distribution_list(g)
    q = draw(st.text(st.sampled_from("abcxyz0129_-.$"), min_size=1, max_size=20))
    return FormatName.direct("OS:host%d\\%s" % (draw(st.integers(0, 99)), q))


@SETTINGS
@given(st.lists(format_names(), max_size=5), st.lists(format_names(), max_size=3),
       st.lists(format_names(), max_size=3), st.binary(max_size=20))
def test_multi_queue_format_roundtrip(dest, admin, resp, sig):
    h = MultiQueueFormatHeader.create(dest, admin, resp, sig)
    back = roundtrip(MultiQueueFormatHeader, h.encode())
    assert back.Destination.format_names == dest
    assert back.Administration.format_names == admin
    assert back.Response.format_names == resp


@SETTINGS
@given(st.booleans(), u16, u32, u32, u32, st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=31),
       st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=60),
       st.sampled_from([(1, 4), (6, 16), (0, 0)]))
def test_remote_read_roundtrip(with_dl, ack, abort, move, when, subq, path, addr):
    sub = SubqueueHeader(148, ack << 1, abort, move, when, w(subq).ljust(64, b"\0"), b"\0" * 64)
    dl = DeadLetterHeader.create(path) if with_dl else None
    ea = ExtendedAddressHeader(28, addr[1], addr[0], 0, bytes(range(16)))
    rest = sub.encode() + (dl.encode() if dl else b"") + ea.encode()
    ext = ExtensionHeader(12, len(rest), 0x12 | (1 if with_dl else 0))
    chain = roundtrip(RemoteReadExtensions, ext.encode() + rest)
    assert chain.SubqueueHeader.AcknowledgementClass == ack
    assert chain.to_dict()["SubqueueHeader"]["SubqueueName"] == subq
    if with_dl:
        assert chain.to_dict()["DeadLetterHeader"]["DeadLetterPathName"] == path


@SETTINGS
@given(u16, u16, guids, u32, u32, st.integers(1, 0xFFFFFFFF), guids, u32, st.binary(min_size=20, max_size=20))
def test_fixed_layout_headers_roundtrip(dflags, dres, g, ordinal, stamp, seq, src, msgid, reserved):
    dflags &= ~2                                       # QT is 0 or 1
    raw = struct.pack("<HH", dflags, dres) + (g if dflags & 3 == 1 else b"")
    h = roundtrip(DebugHeader, raw)
    assert (h.Flags, h.Reserved) == (dflags, dres)
    raw = struct.pack("<IIII", ordinal, stamp, seq, seq - 1) + reserved
    h = roundtrip(OrderAckBody, raw, prefix=b"")
    assert h.Reserved == reserved and h.TxPreviousSequenceNumber == seq - 1
    raw = struct.pack("<IIII", ordinal, stamp, seq, seq - 1) + src + struct.pack("<I", msgid)
    h = roundtrip(FinalAckBody, raw, prefix=b"")
    assert h.MessageID == msgid and h.to_dict()["SourceGUID"] == str(uuid.UUID(bytes_le=src))


@SETTINGS
@given(u16, st.binary(max_size=30), st.binary(max_size=30), st.binary(min_size=16, max_size=16))
def test_eod_headers_roundtrip(hid, stream, order, seq):
    raw = pad4(struct.pack("<HHII", hid, 0, len(stream), len(order)) + stream + order)
    assert roundtrip(EodHeader, raw).Buffer == stream + order
    raw = pad4(struct.pack("<HH", hid, 0) + seq + struct.pack("<I", len(stream)) + stream)
    assert roundtrip(EodAckHeader, raw).Buffer == stream


def test_wide_string_scan_is_linear():
    # odd-aligned double NULs everywhere and no terminator: must fail fast, not quadratically
    import time
    el = struct.pack("<H", 3) + b"a\x00\x00b" * 250_000
    hdr = struct.pack("<IHHI", 12 + len(el), 0x64, 0, 1) + el
    t = time.perf_counter()
    with pytest.raises(DecodeError) as ei:
        MQFAddressHeader.decode(hdr, 0, len(hdr))
    assert ei.value.field == "DirectFormatName" and ei.value.offset == 14
    assert time.perf_counter() - t < 2.0
