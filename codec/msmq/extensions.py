"""[MS-MQRR] 2.2.5.2-2.2.5.5: the headers that follow a UserMessage in the
RemoteRead Message Packet Structure (2.2.5): ExtensionHeader, then
SubqueueHeader, DeadLetterHeader (when ExtensionHeader.Flags.DL) and
ExtendedAddressHeader.  No BaseHeader/UserHeader flag announces them: they
come after BaseHeader.PacketSize bytes, in buffers returned by R_StartReceive
/ R_StartTransactionalReceive, never on the [MS-MQQB] wire.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

import construct as cs

from ..render import json_ready
from ..errors import DecodeError
from ._optcommon import Cursor, OptionalHeader, split_bits, utf16_text

__all__ = [
    "ExtensionHeader",
    "SubqueueHeader",
    "DeadLetterHeader",
    "ExtendedAddressHeader",
    "RemoteReadExtensions",
    "EXTENSION_FLAGS",
]

#: ExtensionHeader.Flags, name -> (shift, width).
EXTENSION_FLAGS = {"DL": (0, 1), "SQ": (1, 1), "X2": (2, 1), "DI": (3, 1), "EA": (4, 1),
                   "X5": (5, 1), "X6": (6, 1), "X7": (7, 1)}

ExtensionHeaderStruct = cs.Struct(
    "HeaderSize" / cs.Int32ul,
    "RemainingHeadersSize" / cs.Int32ul,
    "Flags" / cs.Int8ul,
    "Reserved" / cs.Bytes(3),
)


@dataclass
class ExtensionHeader(OptionalHeader):
    """[MS-MQRR] 2.2.5.2: 12 bytes."""

    STRUCTURE = "ExtensionHeader"
    SIZE = 12

    HeaderSize: int = 12
    RemainingHeadersSize: int = 0
    Flags: int = 0x12  # SQ and EA "MUST be set to 1"
    Reserved: bytes = b"\x00\x00\x00"

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(ExtensionHeaderStruct, at)
        if v.HeaderSize != cls.SIZE:
            cur.violation("HeaderSize", at, "the ExtensionHeader is 12 bytes, HeaderSize says %d" % v.HeaderSize)
        if at + 12 + v.RemainingHeadersSize > cur.end:
            raise DecodeError(cls.STRUCTURE, "RemainingHeadersSize", at + 4,
                              "%d bytes of following headers run past the end (%d)"
                              % (v.RemainingHeadersSize, cur.end))
        bits = split_bits(v.Flags, EXTENSION_FLAGS)
        if not bits["SQ"]:
            cur.violation("Flags", at + 8, "SQ must be set to 1")
        if not bits["EA"]:
            cur.violation("Flags", at + 8, "EA must be set to 1")
        return cls(v.HeaderSize, v.RemainingHeadersSize, v.Flags, bytes(v.Reserved)), at + 12

    def encode(self) -> bytes:
        return ExtensionHeaderStruct.build(dict(HeaderSize=self.HeaderSize,
                                                RemainingHeadersSize=self.RemainingHeadersSize,
                                                Flags=self.Flags, Reserved=self.Reserved))

    @json_ready
    def to_dict(self) -> dict:
        return {"HeaderSize": self.HeaderSize, "RemainingHeadersSize": self.RemainingHeadersSize,
                "Flags": self.Flags, "FlagFields": split_bits(self.Flags, EXTENSION_FLAGS),
                "Reserved": self.Reserved}


SubqueueHeaderStruct = cs.Struct(
    "HeaderSize" / cs.Int32ul,
    "Flags" / cs.Int32ul,        # TM (bit 0), AcknowledgementClass (bits 1-16), Reserved (bits 17-31)
    "AbortCounter" / cs.Int32ul,
    "MoveCounter" / cs.Int32ul,
    "LastMoveTime" / cs.Int32ul,
    "SubqueueName" / cs.Bytes(64),
    "TargetSubqueueName" / cs.Bytes(64),
)
SUBQUEUE_FLAGS = {"TM": (0, 1), "AcknowledgementClass": (1, 16), "Reserved": (17, 15)}


def _fixed_name_ok(raw: bytes) -> bool:
    """A 64-byte name field: a null-terminated Unicode string, then zeros."""
    for i in range(0, len(raw), 2):
        if raw[i] == 0 and raw[i + 1] == 0:
            return not any(raw[i:])
    return False


@dataclass
class SubqueueHeader(OptionalHeader):
    """[MS-MQRR] 2.2.5.3: 148 bytes.  The second 32-bit word holds TM (bit 0),
    AcknowledgementClass (16 bits from bit 1) and 15 reserved bits; it is
    kept whole as ``Flags`` so that reserved bits survive re-encoding."""

    STRUCTURE = "SubqueueHeader"
    SIZE = 148

    HeaderSize: int = 148
    Flags: int = 0
    AbortCounter: int = 0
    MoveCounter: int = 0
    LastMoveTime: int = 0
    SubqueueName: bytes = b"\x00" * 64
    TargetSubqueueName: bytes = b"\x00" * 64

    @property
    def AcknowledgementClass(self) -> int:
        return (self.Flags >> 1) & 0xFFFF

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(SubqueueHeaderStruct, at)
        if v.HeaderSize != cls.SIZE:
            cur.violation("HeaderSize", at, "the SubqueueHeader is 148 bytes, HeaderSize says %d" % v.HeaderSize)
        if v.Flags & 1:
            cur.violation("Flags", at + 4, "TM must be set to 0")
        for name, rel in (("SubqueueName", 20), ("TargetSubqueueName", 84)):
            if not _fixed_name_ok(getattr(v, name)):
                cur.violation(name, at + rel, "not a null-terminated Unicode string followed by zero bytes")
        return cls(v.HeaderSize, v.Flags, v.AbortCounter, v.MoveCounter, v.LastMoveTime,
                   bytes(v.SubqueueName), bytes(v.TargetSubqueueName)), at + 148

    def encode(self) -> bytes:
        return SubqueueHeaderStruct.build(dict(
            HeaderSize=self.HeaderSize, Flags=self.Flags, AbortCounter=self.AbortCounter,
            MoveCounter=self.MoveCounter, LastMoveTime=self.LastMoveTime,
            SubqueueName=self.SubqueueName, TargetSubqueueName=self.TargetSubqueueName))

    @json_ready
    def to_dict(self) -> dict:
        bits = split_bits(self.Flags, SUBQUEUE_FLAGS)
        return {"HeaderSize": self.HeaderSize, "TM": bits["TM"],
                "AcknowledgementClass": bits["AcknowledgementClass"], "Reserved": bits["Reserved"],
                "AbortCounter": self.AbortCounter, "MoveCounter": self.MoveCounter,
                "LastMoveTime": self.LastMoveTime, "SubqueueName": utf16_text(self.SubqueueName),
                "TargetSubqueueName": utf16_text(self.TargetSubqueueName)}


@dataclass
class DeadLetterHeader(OptionalHeader):
    """[MS-MQRR] 2.2.5.4: HeaderSize (the total size) then a null-terminated
    Unicode DeadLetterPathName padded with zeros to a 4-byte boundary."""

    STRUCTURE = "DeadLetterHeader"

    HeaderSize: int = 4
    DeadLetterPathName: bytes = b""
    padding: bytes = b""

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        size = cur.u32(at, "HeaderSize")
        if size < 6:
            raise DecodeError(cls.STRUCTURE, "HeaderSize", at,
                              "%d bytes cannot hold HeaderSize and a null-terminated path" % size)
        if at + size > cur.end:
            raise DecodeError(cls.STRUCTURE, "HeaderSize", at,
                              "%d bytes run past the end (%d)" % (size, cur.end))
        name = cur.wstring(at + 4, "DeadLetterPathName", limit=at + size)
        rest = cur.take(at + 4 + len(name), size - 4 - len(name), "padding")
        pad2, nxt = cur.padding(at + size, at)
        pad = rest + pad2
        if size % 4:
            cur.violation("HeaderSize", at, "%d is not a multiple of 4" % size)
        if any(pad):
            cur.violation("DeadLetterPathName", at + 4 + len(name), "padding must be zeros")
        return cls(size, name, pad), nxt

    @classmethod
    def create(cls, path: str) -> "DeadLetterHeader":
        name = (path + "\x00").encode("utf-16-le", errors="surrogatepass")
        total = (4 + len(name) + 3) & ~3
        return cls(total, name, b"\x00" * (total - 4 - len(name)))

    def encode(self) -> bytes:
        return self.HeaderSize.to_bytes(4, "little") + self.DeadLetterPathName + self.padding

    @json_ready
    def to_dict(self) -> dict:
        return {"HeaderSize": self.HeaderSize, "DeadLetterPathName": utf16_text(self.DeadLetterPathName)}


ExtendedAddressHeaderStruct = cs.Struct(
    "HeaderSize" / cs.Int32ul,
    "AddressLength" / cs.Int16ul,
    "AddressType" / cs.Int16ul,
    "AddressScope" / cs.Int32ul,
    "Address" / cs.Bytes(16),
)
IP_ADDRESS_TYPE = 0x0001
IPV6_ADDRESS_TYPE = 0x0006


@dataclass
class ExtendedAddressHeader(OptionalHeader):
    """[MS-MQRR] 2.2.5.5: 28 bytes; ignored when AddressType is 0."""

    STRUCTURE = "ExtendedAddressHeader"
    SIZE = 28

    HeaderSize: int = 28
    AddressLength: int = 0
    AddressType: int = 0
    AddressScope: int = 0
    Address: bytes = b"\x00" * 16

    @property
    def address(self) -> str | None:
        if self.AddressType == IP_ADDRESS_TYPE:
            return str(ipaddress.IPv4Address(self.Address[:4]))
        if self.AddressType == IPV6_ADDRESS_TYPE:
            return str(ipaddress.IPv6Address(self.Address))
        return None

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(ExtendedAddressHeaderStruct, at)
        if v.HeaderSize != cls.SIZE:
            cur.violation("HeaderSize", at, "the ExtendedAddressHeader is 28 bytes, HeaderSize says %d"
                          % v.HeaderSize)
        if v.AddressType not in (0, IP_ADDRESS_TYPE, IPV6_ADDRESS_TYPE):
            cur.violation("AddressType", at + 6, "must be 0x0000, 0x0001 or 0x0006, got 0x%04X" % v.AddressType)
        if v.AddressLength > 16:
            cur.violation("AddressLength", at + 4, "the Address field holds 16 bytes, AddressLength is %d"
                          % v.AddressLength)
        if v.AddressType != IPV6_ADDRESS_TYPE and v.AddressScope:
            cur.violation("AddressScope", at + 8, "must be 0 unless AddressType is IPV6_ADDRESS_TYPE")
        return cls(v.HeaderSize, v.AddressLength, v.AddressType, v.AddressScope, bytes(v.Address)), at + 28

    def encode(self) -> bytes:
        return ExtendedAddressHeaderStruct.build(dict(
            HeaderSize=self.HeaderSize, AddressLength=self.AddressLength, AddressType=self.AddressType,
            AddressScope=self.AddressScope, Address=self.Address))

    @json_ready
    def to_dict(self) -> dict:
        d = {"HeaderSize": self.HeaderSize, "AddressLength": self.AddressLength,
             "AddressType": self.AddressType, "AddressScope": self.AddressScope, "Address": self.Address}
        if self.address is not None:
            d["AddressText"] = self.address
        return d


@dataclass
class RemoteReadExtensions(OptionalHeader):
    """The chain after a UserMessage in an [MS-MQRR] 2.2.5 Message Packet
    Structure: ExtensionHeader, SubqueueHeader (Flags.SQ), DeadLetterHeader
    (Flags.DL), ExtendedAddressHeader (Flags.EA).  ``end`` is the end of the
    reassembled packet buffer; RemainingHeadersSize must equal the sum of the
    sizes of the headers that follow."""

    STRUCTURE = "ExtensionHeader"

    ExtensionHeader: ExtensionHeader = field(default_factory=ExtensionHeader)
    SubqueueHeader: SubqueueHeader | None = None
    DeadLetterHeader: DeadLetterHeader | None = None
    ExtendedAddressHeader: ExtendedAddressHeader | None = None

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        kw = dict(lenient=cur.lenient, warnings=cur.warnings)
        ext, pos = ExtensionHeader.decode(cur.data, at, cur.end, **kw)
        out = cls(ext)
        flags = ext.Flags
        chain_end = min(cur.end, pos + ext.RemainingHeadersSize)
        if flags & 0x02:
            out.SubqueueHeader, pos = SubqueueHeader.decode(cur.data, pos, chain_end, **kw)
        if flags & 0x01:
            out.DeadLetterHeader, pos = DeadLetterHeader.decode(cur.data, pos, chain_end, **kw)
        if flags & 0x10:
            out.ExtendedAddressHeader, pos = ExtendedAddressHeader.decode(cur.data, pos, chain_end, **kw)
        if pos - (at + 12) != ext.RemainingHeadersSize:
            cur.violation("RemainingHeadersSize", at + 4, "says %d bytes follow but the headers take %d"
                          % (ext.RemainingHeadersSize, pos - (at + 12)))
        return out, pos

    def encode(self) -> bytes:
        return b"".join(h.encode() for h in (self.ExtensionHeader, self.SubqueueHeader,
                                             self.DeadLetterHeader, self.ExtendedAddressHeader)
                        if h is not None)

    @json_ready
    def to_dict(self) -> dict:
        d = {"ExtensionHeader": self.ExtensionHeader.to_dict()}
        for name in ("SubqueueHeader", "DeadLetterHeader", "ExtendedAddressHeader"):
            h = getattr(self, name)
            if h is not None:
                d[name] = h.to_dict()
        return d
