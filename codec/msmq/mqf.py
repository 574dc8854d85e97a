"""Multiple-queue format names on the wire: [MS-MQMQ] 2.2.18.1.4
MQFFormatNameElement, 2.2.20.2 MQFAddressHeader, 2.2.20.3 MQFSignatureHeader
and 2.2.20.1 MultiQueueFormatHeader.

Alignment: an element's FormatType is 2 bytes at any even position; the
GUID-bearing FormatName layouts (public, private, distribution list) start
"rounded up to the next 4-byte boundary", the direct name at the next 2-byte
boundary.  Boundaries are counted from the start of the MQFAddressHeader that
holds the element (``base``); the bytes skipped are kept in
``MQFFormatNameElement.Padding``.  Microsoft's implementation also aligns
the public GUID (the specification's 2.2.18.1.7.1 says nothing), see
docs/msmq-headers.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import construct as cs

from ..render import json_ready
from ..errors import DecodeError, EncodeError
from ._optcommon import Cursor, OptionalHeader, align4, guid_bytes, guid_str, utf16_text
from .formatname import FormatName, FormatNameError

__all__ = [
    "MQFFormatNameElement",
    "MQFAddressHeader",
    "MQFSignatureHeader",
    "MultiQueueFormatHeader",
    "FORMAT_TYPES",
    "MQF_HEADER_IDS",
]

#: MQFFormatNameElement.FormatType values (2.2.18.1.4).
FORMAT_TYPES = {0x0001: "Public", 0x0002: "Private", 0x0003: "Direct", 0x0006: "DistributionList"}

#: MQFAddressHeader.HeaderID values (2.2.20.2).
MQF_HEADER_IDS = {0x0064: "Destination", 0x00C8: "Admin", 0x012C: "Response", 0x015E: "Signature"}
DESTINATION_ID, ADMIN_ID, RESPONSE_ID, SIGNATURE_ID = 0x0064, 0x00C8, 0x012C, 0x015E


@dataclass
class MQFFormatNameElement:
    """[MS-MQMQ] 2.2.18.1.4.  Payload fields by FormatType:

    * 0x0001 PublicQueueIdentifier (GUID, 2.2.18.1.7.1)
    * 0x0002 SourceQueueManager (GUID) + PrivateQueueIdentifier (2.2.18.1.7.2)
    * 0x0003 DirectFormatName (null-terminated WCHARs, 2.2.18.1.4.1)
    * 0x0006 DistributionListIdentifier (GUID, 2.2.18.1.4.2)
    """

    STRUCTURE = "MQFFormatNameElement"

    FormatType: int
    Padding: bytes = b""
    PublicQueueIdentifier: bytes | None = None
    SourceQueueManager: bytes | None = None
    PrivateQueueIdentifier: int | None = None
    DirectFormatName: bytes | None = None   # raw UTF-16LE, terminator included
    DistributionListIdentifier: bytes | None = None

    @classmethod
    def decode(cls, data, offset: int, end: int, *, base: int | None = None,
               lenient: bool = False, warnings: list | None = None):
        """Decode one element at ``offset``; ``base`` is the absolute offset
        the alignment rules count from (the enclosing MQFAddressHeader;
        default: ``offset`` itself).  Returns (element, next offset), the
        next offset NOT rounded (elements follow each other directly)."""
        try:
            cur = Cursor(data, offset, end, cls.STRUCTURE, lenient, warnings)
            return cls._decode(cur, offset, offset if base is None else base)
        except DecodeError:
            raise
        except Exception as exc:  # pragma: no cover - last-resort translation
            raise DecodeError(cls.STRUCTURE, "", offset if isinstance(offset, int) else 0,
                              "undecodable: %s" % type(exc).__name__) from None

    @classmethod
    def _decode(cls, cur: Cursor, at: int, base: int):
        ftype = cur.u16(at, "FormatType")
        pos = at + 2
        if ftype in (1, 2, 6):
            aligned = base + align4(pos - base)
            pad = cur.take(pos, aligned - pos, "FormatName")
            pos = aligned
            if ftype == 1:
                g = cur.take(pos, 16, "PublicQueueIdentifier")
                return cls(ftype, pad, PublicQueueIdentifier=g), pos + 16
            if ftype == 2:
                g = cur.take(pos, 16, "SourceQueueManager")
                n = cur.u32(pos + 16, "PrivateQueueIdentifier")
                return cls(ftype, pad, SourceQueueManager=g, PrivateQueueIdentifier=n), pos + 20
            g = cur.take(pos, 16, "DistributionListIdentifier")
            return cls(ftype, pad, DistributionListIdentifier=g), pos + 16
        if ftype == 3:
            aligned = base + ((pos - base + 1) & ~1)
            pad = cur.take(pos, aligned - pos, "FormatName")
            raw = cur.wstring(aligned, "DirectFormatName")
            return cls(ftype, pad, DirectFormatName=raw), aligned + len(raw)
        # the layout of any other type is unknown: not recoverable
        raise DecodeError(cls.STRUCTURE, "FormatType", at,
                          "must be 0x0001, 0x0002, 0x0003 or 0x0006, got 0x%04X" % ftype)

    def encode(self) -> bytes:
        out = self.FormatType.to_bytes(2, "little") + self.Padding
        t = self.FormatType
        if t == 1:
            return out + guid_bytes(self.PublicQueueIdentifier, self.STRUCTURE, "PublicQueueIdentifier")
        if t == 2:
            return (out + guid_bytes(self.SourceQueueManager, self.STRUCTURE, "SourceQueueManager")
                    + int(self._needed("PrivateQueueIdentifier")).to_bytes(4, "little"))
        if t == 3:
            return out + bytes(self._needed("DirectFormatName"))
        if t == 6:
            return out + guid_bytes(self.DistributionListIdentifier, self.STRUCTURE, "DistributionListIdentifier")
        raise EncodeError(self.STRUCTURE, "FormatType", "unknown FormatType 0x%04X" % t)

    def _needed(self, name: str) -> Any:
        value = getattr(self, name)
        if value is None:
            raise EncodeError(self.STRUCTURE, name, "FormatType 0x%04X needs %s" % (self.FormatType, name))
        return value

    @classmethod
    def from_format_name(cls, fn: "FormatName | str", position: int = 0) -> "MQFFormatNameElement":
        """The element for a single format name, placed ``position`` bytes
        after a 4-byte boundary (to compute the alignment padding)."""
        if isinstance(fn, str):
            fn = FormatName.parse(fn)
        pad4 = b"\x00" * (align4(position + 2) - position - 2)
        if fn.kind == "PUBLIC" and fn.suffix is None and fn.guid is not None:
            return cls(1, pad4, PublicQueueIdentifier=fn.guid.bytes_le)
        if fn.kind == "PRIVATE" and fn.suffix is None and fn.guid is not None:
            return cls(2, pad4, SourceQueueManager=fn.guid.bytes_le, PrivateQueueIdentifier=fn.queue_id)
        if fn.kind == "DIRECT" and fn.direct_id is not None:
            if "\x00" in fn.direct_id:
                raise EncodeError(cls.STRUCTURE, "DirectFormatName",
                                  "a NUL inside the name cannot be written as a NUL-terminated string")
            # UTF-16 code units as they are, lone surrogates included (decoded with surrogatepass)
            return cls(3, b"\x00" * ((position + 2) % 2),
                       DirectFormatName=(fn.direct_id + "\x00").encode("utf-16-le", "surrogatepass"))
        if fn.kind == "DL" and fn.domain is None and fn.guid is not None:
            return cls(6, pad4, DistributionListIdentifier=fn.guid.bytes_le)
        raise EncodeError(cls.STRUCTURE, "FormatType", "%s has no MQFFormatNameElement form" % fn)

    @property
    def format_name(self) -> FormatName:
        """The element as a FormatName (raises FormatNameError when a direct
        name does not follow [MS-MQMQ] 2.1.2)."""
        t = self.FormatType
        if t == 1:
            return FormatName.public(self.PublicQueueIdentifier)
        if t == 2:
            # FormatName.private: the classmethod, which shares its name with a bool field
            return FormatName.private(self.SourceQueueManager, self.PrivateQueueIdentifier)  # type: ignore[operator]
        if t == 3:
            return FormatName.direct(utf16_text(self._needed("DirectFormatName")))
        if t == 6:
            return FormatName.distribution_list(self.DistributionListIdentifier)
        raise FormatNameError("FormatType", 0, "unknown FormatType 0x%04X" % t)

    @json_ready
    def to_dict(self) -> dict:
        d: dict = {"FormatType": self.FormatType, "FormatTypeName": FORMAT_TYPES.get(self.FormatType, "?")}
        if self.PublicQueueIdentifier is not None:
            d["PublicQueueIdentifier"] = guid_str(self.PublicQueueIdentifier)
        if self.SourceQueueManager is not None:
            d["SourceQueueManager"] = guid_str(self.SourceQueueManager)
            d["PrivateQueueIdentifier"] = self.PrivateQueueIdentifier
        if self.DirectFormatName is not None:
            d["DirectFormatName"] = utf16_text(self.DirectFormatName)
        if self.DistributionListIdentifier is not None:
            d["DistributionListIdentifier"] = guid_str(self.DistributionListIdentifier)
        try:
            d["FormatName"] = str(self.format_name)
        except FormatNameError:
            pass
        return d


MQFAddressHeaderStruct = cs.Struct(
    "HeaderSize" / cs.Int32ul,
    "HeaderID" / cs.Int16ul,
    "Reserved" / cs.Int16ul,
    "ElementCount" / cs.Int32ul,
)

#: smallest element: FormatType + an empty direct name (one null WCHAR)
_MIN_ELEMENT = 4


@dataclass
class MQFAddressHeader(OptionalHeader):
    """[MS-MQMQ] 2.2.20.2.  HeaderSize covers the whole header including the
    FormatNameList and its padding (kept in ``padding``)."""

    STRUCTURE = "MQFAddressHeader"

    HeaderSize: int = 12
    HeaderID: int = DESTINATION_ID
    Reserved: int = 0
    ElementCount: int = 0
    FormatNameList: list = field(default_factory=list)
    padding: bytes = b""

    @classmethod
    def decode(cls, data, offset: int, end: int, *, lenient: bool = False, warnings: list | None = None,
               expected_id: int | None = None):
        """As every header; ``expected_id`` (0x0064/0x00C8/0x012C) is the
        HeaderID the position in the MultiQueueFormatHeader requires."""
        h, nxt = super().decode(data, offset, end, lenient=lenient, warnings=warnings)
        if expected_id is not None and h.HeaderID != expected_id:
            Cursor(data, offset, end, cls.STRUCTURE, lenient, warnings).violation(
                "HeaderID", offset + 4, "expected 0x%04X (%s), got 0x%04X"
                % (expected_id, MQF_HEADER_IDS.get(expected_id, "?"), h.HeaderID))
        return h, nxt

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(MQFAddressHeaderStruct, at)
        if v.HeaderSize < 12:
            raise DecodeError(cls.STRUCTURE, "HeaderSize", at, "valid range starts at 0x0000000C, got %d"
                              % v.HeaderSize)
        if at + v.HeaderSize > cur.end:
            raise DecodeError(cls.STRUCTURE, "HeaderSize", at, "%d bytes run past the packet end (%d)"
                              % (v.HeaderSize, cur.end))
        if v.HeaderID not in MQF_HEADER_IDS or v.HeaderID == SIGNATURE_ID:
            cur.violation("HeaderID", at + 4, "must be 0x0064, 0x00C8 or 0x012C, got 0x%04X" % v.HeaderID)
        hdr_end = at + v.HeaderSize
        if v.ElementCount * _MIN_ELEMENT > v.HeaderSize - 12:
            raise DecodeError(cls.STRUCTURE, "ElementCount", at + 8,
                              "%d elements cannot fit in the %d bytes HeaderSize leaves"
                              % (v.ElementCount, v.HeaderSize - 12))
        pos, elements = at + 12, []
        ecur = Cursor(cur.data, pos, hdr_end, MQFFormatNameElement.STRUCTURE, cur.lenient, cur.warnings)
        for _ in range(v.ElementCount):
            el, pos = MQFFormatNameElement._decode(ecur, pos, at)
            elements.append(el)
        if align4(pos - at) > v.HeaderSize:
            cur.violation("HeaderSize", at, "the FormatNameList padded to 4 bytes takes %d bytes, HeaderSize %d"
                          % (align4(pos - at), v.HeaderSize))
        rest = cur.take(pos, hdr_end - pos, "FormatNameList")
        pad2, nxt = cur.padding(hdr_end, at)
        return cls(v.HeaderSize, v.HeaderID, v.Reserved, v.ElementCount, elements, rest + pad2), nxt

    @classmethod
    def create(cls, HeaderID: int, names) -> "MQFAddressHeader":
        elements, pos = [], 12
        for n in names:
            el = MQFFormatNameElement.from_format_name(n, pos)
            elements.append(el)
            pos += len(el.encode())
        size = align4(pos)
        return cls(size, HeaderID, 0, len(elements), elements, b"\x00" * (size - pos))

    @property
    def format_names(self) -> list:
        return [e.format_name for e in self.FormatNameList]

    def encode(self) -> bytes:
        return (MQFAddressHeaderStruct.build(dict(HeaderSize=self.HeaderSize, HeaderID=self.HeaderID,
                                                  Reserved=self.Reserved, ElementCount=self.ElementCount))
                + b"".join(e.encode() for e in self.FormatNameList) + self.padding)

    @json_ready
    def to_dict(self) -> dict:
        return {"HeaderSize": self.HeaderSize, "HeaderID": self.HeaderID,
                "HeaderIDName": MQF_HEADER_IDS.get(self.HeaderID, "?"), "Reserved": self.Reserved,
                "ElementCount": self.ElementCount, "FormatNameList": [e.to_dict() for e in self.FormatNameList]}


MQFSignatureHeaderStruct = cs.Struct(
    "ID" / cs.Int16ul,
    "Reserved" / cs.Int16ul,
    "Size" / cs.Int32ul,
)


@dataclass
class MQFSignatureHeader(OptionalHeader):
    """[MS-MQMQ] 2.2.20.3: ID 0x015E, Size bytes of Signature, padded to 4."""

    STRUCTURE = "MQFSignatureHeader"

    ID: int = SIGNATURE_ID
    Reserved: int = 0
    Size: int = 0
    Signature: bytes = b""
    padding: bytes = b""

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(MQFSignatureHeaderStruct, at)
        if v.ID != SIGNATURE_ID:
            cur.violation("ID", at, "must be 0x015E, got 0x%04X" % v.ID)
        if at + 8 + v.Size > cur.end:
            raise DecodeError(cls.STRUCTURE, "Size", at + 4, "Signature of %d bytes at offset %d runs past "
                              "the packet end (%d)" % (v.Size, at + 8, cur.end))
        sig = cur.take(at + 8, v.Size, "Signature")
        pad, nxt = cur.padding(at + 8 + v.Size, at)
        return cls(v.ID, v.Reserved, v.Size, sig, pad), nxt

    @classmethod
    def create(cls, signature: bytes = b"") -> "MQFSignatureHeader":
        return cls(SIGNATURE_ID, 0, len(signature), bytes(signature),
                   b"\x00" * (align4(len(signature)) - len(signature)))

    def encode(self) -> bytes:
        return MQFSignatureHeaderStruct.build(dict(ID=self.ID, Reserved=self.Reserved, Size=self.Size)) \
            + self.Signature + self.padding

    @json_ready
    def to_dict(self) -> dict:
        return {"ID": self.ID, "Reserved": self.Reserved, "Size": self.Size, "Signature": self.Signature}


@dataclass
class MultiQueueFormatHeader(OptionalHeader):
    """[MS-MQMQ] 2.2.20.1: Destination, Administration and Response
    MQFAddressHeaders (HeaderIDs 0x0064, 0x00C8, 0x012C), then an
    MQFSignatureHeader; all four are always present."""

    STRUCTURE = "MultiQueueFormatHeader"

    Destination: MQFAddressHeader = field(default_factory=lambda: MQFAddressHeader.create(DESTINATION_ID, []))
    Administration: MQFAddressHeader = field(default_factory=lambda: MQFAddressHeader.create(ADMIN_ID, []))
    Response: MQFAddressHeader = field(default_factory=lambda: MQFAddressHeader.create(RESPONSE_ID, []))
    Signature: MQFSignatureHeader = field(default_factory=MQFSignatureHeader.create)

    @classmethod
    def _decode(cls, cur: Cursor):
        kw = dict(lenient=cur.lenient, warnings=cur.warnings)
        pos = cur.start
        parts = []
        for want in (DESTINATION_ID, ADMIN_ID, RESPONSE_ID):
            h, pos = MQFAddressHeader.decode(cur.data, pos, cur.end, expected_id=want, **kw)
            parts.append(h)
        sig, pos = MQFSignatureHeader.decode(cur.data, pos, cur.end, **kw)
        return cls(parts[0], parts[1], parts[2], sig), pos

    @classmethod
    def create(cls, destinations=(), admin=(), response=(), signature: bytes = b""):
        return cls(MQFAddressHeader.create(DESTINATION_ID, destinations),
                   MQFAddressHeader.create(ADMIN_ID, admin),
                   MQFAddressHeader.create(RESPONSE_ID, response),
                   MQFSignatureHeader.create(signature))

    def encode(self) -> bytes:
        return (self.Destination.encode() + self.Administration.encode() + self.Response.encode()
                + self.Signature.encode())

    @json_ready
    def to_dict(self) -> dict:
        return {"Destination": self.Destination.to_dict(), "Administration": self.Administration.to_dict(),
                "Response": self.Response.to_dict(), "Signature": self.Signature.to_dict()}
