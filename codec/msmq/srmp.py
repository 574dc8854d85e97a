"""Headers of messages that came over HTTP: [MS-MQRR] 2.2.5.1.2.1
SRMPEnvelopeHeader, 2.2.5.1.2.2 CompoundMessageHeader, [MS-MQMQ] 2.2.20.7
SoapHeader, and the EOD / EOD-ACK sections that no provided specification
defines (decoded opaque-by-size, see docs/msmq-headers.md).

Every one of them ends on a 4-byte boundary relative to its start; the
padding bytes are kept.  Lengths counted in WCHARs (SRMPEnvelopeHeader
.DataLength, SoapHeader .HeaderDataLength/.BodyDataLength) are checked as
``2 * count`` bytes against the packet end before anything is read.
"""
from __future__ import annotations

from dataclasses import dataclass

import construct as cs

from ..render import json_ready
from ..errors import DecodeError
from ._optcommon import Cursor, OptionalHeader, align4, utf16_text

__all__ = [
    "SRMPEnvelopeHeader",
    "CompoundMessageHeader",
    "SoapHeader",
    "EodHeader",
    "EodAckHeader",
    "SOAP_HEADER_SECTION_ID",
    "SOAP_BODY_SECTION_ID",
]

SOAP_HEADER_SECTION_ID = 0x0320
SOAP_BODY_SECTION_ID = 0x0384


def _too_long(structure: str, field: str, at: int, what: str, nbytes: int, data_at: int, end: int):
    return DecodeError(structure, field, at, "%s of %d bytes at offset %d runs past the packet end (%d)"
                       % (what, nbytes, data_at, end))


# ---------------------------------------------------------------------------
# [MS-MQRR] 2.2.5.1.2.1 SRMPEnvelopeHeader
# ---------------------------------------------------------------------------

SRMPEnvelopeHeaderStruct = cs.Struct(
    "HeaderId" / cs.Int16ul,
    "Reserved" / cs.Int16ul,
    "DataLength" / cs.Int32ul,   # in WCHARs, NULL terminator included
)


@dataclass
class SRMPEnvelopeHeader(OptionalHeader):
    """[MS-MQRR] 2.2.5.1.2.1.  DataLength counts WCHARs (the Data is "in
    WCHAR format, including the NULL terminator"; Metasploit's QueueJumper
    packet has an odd DataLength, 539, so it cannot count bytes)."""

    STRUCTURE = "SRMPEnvelopeHeader"

    HeaderId: int = 0
    Reserved: int = 0
    DataLength: int = 0
    Data: bytes = b""
    padding: bytes = b""

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(SRMPEnvelopeHeaderStruct, at)
        nbytes = 2 * v.DataLength
        if at + 8 + nbytes > cur.end:
            raise _too_long(cls.STRUCTURE, "DataLength", at + 4, "Data (%d WCHARs)" % v.DataLength,
                            nbytes, at + 8, cur.end)
        data = cur.take(at + 8, nbytes, "Data")
        if nbytes and data[-2:] != b"\x00\x00":
            cur.violation("Data", at + 8 + nbytes - 2, "Data must end with a NULL terminator")
        pad, nxt = cur.padding(at + 8 + nbytes, at)
        return cls(v.HeaderId, v.Reserved, v.DataLength, data, pad), nxt

    @classmethod
    def create(cls, text: str, HeaderId: int = 0) -> "SRMPEnvelopeHeader":
        data = (text + "\x00").encode("utf-16-le", errors="surrogatepass")
        return cls(HeaderId, 0, len(data) // 2, data, b"\x00" * (align4(8 + len(data)) - 8 - len(data)))

    @property
    def text(self) -> str:
        return utf16_text(self.Data)

    def encode(self) -> bytes:
        return SRMPEnvelopeHeaderStruct.build(dict(
            HeaderId=self.HeaderId, Reserved=self.Reserved, DataLength=self.DataLength)) + self.Data + self.padding

    @json_ready
    def to_dict(self) -> dict:
        return {"HeaderId": self.HeaderId, "Reserved": self.Reserved,
                "DataLength": self.DataLength, "Data": self.text}


# ---------------------------------------------------------------------------
# [MS-MQRR] 2.2.5.1.2.2 CompoundMessageHeader
# ---------------------------------------------------------------------------

CompoundMessageHeaderStruct = cs.Struct(
    "HeaderId" / cs.Int16ul,
    "Reserved" / cs.Int16ul,
    "HTTPBodySize" / cs.Int32ul,
    "MsgBodySize" / cs.Int32ul,
    "MsgBodyOffset" / cs.Int32ul,
)


@dataclass
class CompoundMessageHeader(OptionalHeader):
    """[MS-MQRR] 2.2.5.1.2.2: HTTPBodySize bytes of Data (the HTTP POST that
    carried the SRMP message) holding MsgBodySize bytes of message body at
    MsgBodyOffset.  MsgBodyOffset + MsgBodySize must not exceed HTTPBodySize
    (checked with unbounded integers: the CVE-2023-21554 class of overflow)."""

    STRUCTURE = "CompoundMessageHeader"

    HeaderId: int = 0
    Reserved: int = 0
    HTTPBodySize: int = 0
    MsgBodySize: int = 0
    MsgBodyOffset: int = 0
    Data: bytes = b""
    padding: bytes = b""

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(CompoundMessageHeaderStruct, at)
        if at + 16 + v.HTTPBodySize > cur.end:
            raise _too_long(cls.STRUCTURE, "HTTPBodySize", at + 4, "Data", v.HTTPBodySize, at + 16, cur.end)
        if v.MsgBodyOffset + v.MsgBodySize > v.HTTPBodySize:
            field = "MsgBodyOffset" if v.MsgBodyOffset > v.HTTPBodySize else "MsgBodySize"
            cur.violation(field, at + (12 if field == "MsgBodyOffset" else 8),
                          "message body [%d, +%d) lies outside the %d bytes of Data"
                          % (v.MsgBodyOffset, v.MsgBodySize, v.HTTPBodySize))
        data = cur.take(at + 16, v.HTTPBodySize, "Data")
        pad, nxt = cur.padding(at + 16 + v.HTTPBodySize, at)
        return cls(v.HeaderId, v.Reserved, v.HTTPBodySize, v.MsgBodySize, v.MsgBodyOffset, data, pad), nxt

    @classmethod
    def create(cls, data: bytes, MsgBodyOffset: int, MsgBodySize: int, HeaderId: int = 0):
        return cls(HeaderId, 0, len(data), MsgBodySize, MsgBodyOffset, bytes(data),
                   b"\x00" * (align4(16 + len(data)) - 16 - len(data)))

    @property
    def message_body(self) -> bytes:
        """The message body slice of Data (clipped to Data)."""
        return self.Data[self.MsgBodyOffset: self.MsgBodyOffset + self.MsgBodySize]

    def encode(self) -> bytes:
        return CompoundMessageHeaderStruct.build(dict(
            HeaderId=self.HeaderId, Reserved=self.Reserved, HTTPBodySize=self.HTTPBodySize,
            MsgBodySize=self.MsgBodySize, MsgBodyOffset=self.MsgBodyOffset)) + self.Data + self.padding

    @json_ready
    def to_dict(self) -> dict:
        return {"HeaderId": self.HeaderId, "Reserved": self.Reserved, "HTTPBodySize": self.HTTPBodySize,
                "MsgBodySize": self.MsgBodySize, "MsgBodyOffset": self.MsgBodyOffset, "Data": self.Data}


# ---------------------------------------------------------------------------
# [MS-MQMQ] 2.2.20.7 SoapHeader
# ---------------------------------------------------------------------------

SoapSectionStruct = cs.Struct(
    "SectionID" / cs.Int16ul,
    "Reserved" / cs.Int16ul,
    "DataLength" / cs.Int32ul,   # WCHARs, terminating null included
)


@dataclass
class SoapHeader(OptionalHeader):
    """[MS-MQMQ] 2.2.20.7: a Header section (HeaderSectionID 0x0320) and a
    Body section (BodySectionID 0x0384), each a null-terminated Unicode string
    whose length field counts WCHARs.  Each section is padded to a 4-byte
    boundary (the spec is silent between the two; Microsoft's implementation
    aligns each section, see docs/msmq-headers.md): ``padding1`` after
    Header, ``padding`` after Body."""

    STRUCTURE = "SoapHeader"

    HeaderSectionID: int = SOAP_HEADER_SECTION_ID
    Reserved: int = 0
    HeaderDataLength: int = 0
    Header: bytes = b""
    padding1: bytes = b""
    BodySectionID: int = SOAP_BODY_SECTION_ID
    Reserved1: int = 0
    BodyDataLength: int = 0
    Body: bytes = b""
    padding: bytes = b""

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        h = cls()
        pos = at
        for sec, id_field, res_field, len_field, data_field, pad_field, want in (
            ("Header", "HeaderSectionID", "Reserved", "HeaderDataLength", "Header", "padding1",
             SOAP_HEADER_SECTION_ID),
            ("Body", "BodySectionID", "Reserved1", "BodyDataLength", "Body", "padding",
             SOAP_BODY_SECTION_ID),
        ):
            try:
                v = cur.parse(SoapSectionStruct, pos)
            except DecodeError as exc:
                names = {"SectionID": id_field, "Reserved": res_field, "DataLength": len_field}
                raise DecodeError(cls.STRUCTURE, names.get(exc.field, exc.field), exc.offset, exc.reason) from None
            if v.SectionID != want:
                cur.violation(id_field, pos, "must be 0x%04X, got 0x%04X" % (want, v.SectionID))
            nbytes = 2 * v.DataLength
            if pos + 8 + nbytes > cur.end:
                raise _too_long(cls.STRUCTURE, len_field, pos + 4, "%s (%d WCHARs)" % (sec, v.DataLength),
                                nbytes, pos + 8, cur.end)
            data = cur.take(pos + 8, nbytes, data_field)
            if nbytes and data[-2:] != b"\x00\x00":
                cur.violation(data_field, pos + 8 + nbytes - 2, "must end with a null character")
            pad, nxt = cur.padding(pos + 8 + nbytes, at, pad_field)
            setattr(h, id_field, v.SectionID)
            setattr(h, res_field, v.Reserved)
            setattr(h, len_field, v.DataLength)
            setattr(h, data_field, data)
            setattr(h, pad_field, pad)
            pos = nxt
        return h, pos

    @classmethod
    def create(cls, header: str, body: str) -> "SoapHeader":
        hd = (header + "\x00").encode("utf-16-le", errors="surrogatepass")
        bd = (body + "\x00").encode("utf-16-le", errors="surrogatepass")
        return cls(SOAP_HEADER_SECTION_ID, 0, len(hd) // 2, hd, b"\x00" * (align4(len(hd)) - len(hd)),
                   SOAP_BODY_SECTION_ID, 0, len(bd) // 2, bd, b"\x00" * (align4(len(bd)) - len(bd)))

    def encode(self) -> bytes:
        return (SoapSectionStruct.build(dict(SectionID=self.HeaderSectionID, Reserved=self.Reserved,
                                             DataLength=self.HeaderDataLength))
                + self.Header + self.padding1
                + SoapSectionStruct.build(dict(SectionID=self.BodySectionID, Reserved=self.Reserved1,
                                               DataLength=self.BodyDataLength))
                + self.Body + self.padding)

    @json_ready
    def to_dict(self) -> dict:
        return {"HeaderSectionID": self.HeaderSectionID, "Reserved": self.Reserved,
                "HeaderDataLength": self.HeaderDataLength, "Header": utf16_text(self.Header),
                "BodySectionID": self.BodySectionID, "Reserved1": self.Reserved1,
                "BodyDataLength": self.BodyDataLength, "Body": utf16_text(self.Body)}


# ---------------------------------------------------------------------------
# EOD and EOD-ACK sections: defined by NO provided specification.  Their
# flags are UserHeader bits 26 and 27, which [MS-MQMQ] 2.2.19.2 calls reserved
# (X3).  Sizes as Microsoft's public shared-source MSMQ (pheod.h,
# pheodack.h) lays them out; the content is kept opaque.
# ---------------------------------------------------------------------------

EodHeaderStruct = cs.Struct(
    "HeaderId" / cs.Int16ul,
    "Reserved" / cs.Int16ul,
    "StreamIdSize" / cs.Int32ul,
    "OrderQueueSize" / cs.Int32ul,
)

EodAckHeaderStruct = cs.Struct(
    "HeaderId" / cs.Int16ul,
    "Reserved" / cs.Int16ul,
    "SeqId" / cs.Bytes(8),
    "SeqNum" / cs.Bytes(8),
    "StreamIdSize" / cs.Int32ul,
)


@dataclass
class EodHeader(OptionalHeader):
    """Opaque EOD section: 12 bytes, then StreamIdSize + OrderQueueSize bytes
    (kept as ``Buffer``), padded to 4."""

    STRUCTURE = "EodHeader"

    HeaderId: int = 0
    Reserved: int = 0
    StreamIdSize: int = 0
    OrderQueueSize: int = 0
    Buffer: bytes = b""
    padding: bytes = b""

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(EodHeaderStruct, at)
        if at + 12 + v.StreamIdSize > cur.end:
            raise _too_long(cls.STRUCTURE, "StreamIdSize", at + 4, "stream ID", v.StreamIdSize, at + 12, cur.end)
        total = v.StreamIdSize + v.OrderQueueSize
        if at + 12 + total > cur.end:
            raise _too_long(cls.STRUCTURE, "OrderQueueSize", at + 8, "order queue", v.OrderQueueSize,
                            at + 12 + v.StreamIdSize, cur.end)
        buf = cur.take(at + 12, total, "StreamIdSize")
        pad, nxt = cur.padding(at + 12 + total, at)
        return cls(v.HeaderId, v.Reserved, v.StreamIdSize, v.OrderQueueSize, buf, pad), nxt

    def encode(self) -> bytes:
        return EodHeaderStruct.build(dict(HeaderId=self.HeaderId, Reserved=self.Reserved,
                                          StreamIdSize=self.StreamIdSize,
                                          OrderQueueSize=self.OrderQueueSize)) + self.Buffer + self.padding

    @json_ready
    def to_dict(self) -> dict:
        return {"HeaderId": self.HeaderId, "Reserved": self.Reserved, "StreamIdSize": self.StreamIdSize,
                "OrderQueueSize": self.OrderQueueSize, "Buffer": self.Buffer}


@dataclass
class EodAckHeader(OptionalHeader):
    """Opaque EOD-ACK section: 24 bytes, then StreamIdSize bytes, padded to 4."""

    STRUCTURE = "EodAckHeader"

    HeaderId: int = 0
    Reserved: int = 0
    SeqId: bytes = b"\x00" * 8
    SeqNum: bytes = b"\x00" * 8
    StreamIdSize: int = 0
    Buffer: bytes = b""
    padding: bytes = b""

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(EodAckHeaderStruct, at)
        if at + 24 + v.StreamIdSize > cur.end:
            raise _too_long(cls.STRUCTURE, "StreamIdSize", at + 20, "stream ID", v.StreamIdSize, at + 24, cur.end)
        buf = cur.take(at + 24, v.StreamIdSize, "StreamIdSize")
        pad, nxt = cur.padding(at + 24 + v.StreamIdSize, at)
        return cls(v.HeaderId, v.Reserved, bytes(v.SeqId), bytes(v.SeqNum), v.StreamIdSize, buf, pad), nxt

    def encode(self) -> bytes:
        return EodAckHeaderStruct.build(dict(HeaderId=self.HeaderId, Reserved=self.Reserved, SeqId=self.SeqId,
                                             SeqNum=self.SeqNum, StreamIdSize=self.StreamIdSize)) \
            + self.Buffer + self.padding

    @json_ready
    def to_dict(self) -> dict:
        return {"HeaderId": self.HeaderId, "Reserved": self.Reserved, "SeqId": self.SeqId,
                "SeqNum": self.SeqNum, "StreamIdSize": self.StreamIdSize, "Buffer": self.Buffer}
