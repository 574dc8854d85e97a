"""BaseHeader, InternalHeader, the internal packets' headers and the UDP Ping
Packet of the MSMQ binary protocol.

[MS-MQMQ] 2.2.19.1 (BaseHeader); [MS-MQQB] 2.2.1 (InternalHeader), 2.2.2.1
(ConnectionParametersHeader), 2.2.3.1 (EstablishConnectionHeader), 2.2.7 (Ping
Packet).  All integers are little-endian ([MS-MQQB] 2.2).

Every header class has ``decode(data, offset, end, *, lenient=False,
warnings=None) -> (header, next_offset)``, ``encode() -> bytes`` and
``to_dict()`` keyed by the specification's field names.  ``offset`` and every
offset in a :class:`~mqcodec.errors.DecodeError` are absolute in ``data``;
``end`` is the first byte the header may not use (the end of the packet).
"""
from __future__ import annotations

import uuid
from typing import Any, ClassVar

import construct as cs

from ..render import json_ready
from ..errors import DecodeError, DecodeWarning, EncodeError, Problems
from ..layout import build, parse_at
from . import constants as C

__all__ = [
    "BitFlags", "BaseFlags", "InternalFlags", "OperatingSystemFlags", "PingFlags",
    "BaseHeader", "InternalHeader", "ConnectionParametersHeader", "EstablishConnectionHeader",
    "PingPacket", "guid_from_bytes", "guid_to_bytes", "GUID_ZERO",
]

GUID_ZERO = uuid.UUID(int=0)


def guid_from_bytes(raw: bytes) -> uuid.UUID:
    """A GUID in its [MS-DTYP] 2.3.4.2 packet representation (Data1, Data2,
    Data3 little-endian, Data4 as bytes)."""
    return uuid.UUID(bytes_le=bytes(raw))


def guid_to_bytes(value: uuid.UUID | str) -> bytes:
    if isinstance(value, str):
        value = uuid.UUID(value)
    return value.bytes_le


# --------------------------------------------------------------------------- bit fields


class BitFlags:
    """An integer flags field with the named bit fields of its specification
    table (``FIELDS``: name -> (shift, width), least significant bit first).

    ``flags.IN`` reads a bit field, ``flags.value`` is the whole integer, so the
    reserved bits are kept and re-encoded exactly.
    """

    FIELDS: ClassVar[dict[str, tuple[int, int]]] = {}
    WIDTH: ClassVar[int] = 16

    __slots__ = ("value",)

    def __init__(self, value: int = 0, **fields: int):
        self.value = int(value)
        for name, v in fields.items():
            self.set(name, v)

    def get(self, name: str) -> int:
        shift, width = self.FIELDS[name]
        return (self.value >> shift) & ((1 << width) - 1)

    def set(self, name: str, v: int) -> None:
        try:
            shift, width = self.FIELDS[name]
        except KeyError:
            raise EncodeError(type(self).__name__, name, "no such bit field") from None
        mask = ((1 << width) - 1)
        if not 0 <= int(v) <= mask:
            raise EncodeError(type(self).__name__, name, "%r does not fit in %d bits" % (v, width))
        self.value = (self.value & ~(mask << shift)) | (int(v) << shift)

    def __getattr__(self, name: str) -> int:
        if name in type(self).FIELDS:
            return self.get(name)
        raise AttributeError(name)

    def __int__(self) -> int:
        return self.value

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, BitFlags):
            return type(self) is type(other) and self.value == other.value
        if isinstance(other, int):
            return self.value == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.value))

    def __repr__(self) -> str:
        set_fields = ", ".join("%s=%d" % (n, self.get(n)) for n in self.FIELDS if self.get(n))
        return "%s(0x%0*X%s)" % (type(self).__name__, self.WIDTH // 4, self.value,
                                 ": " + set_fields if set_fields else "")

    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = {"value": self.value}
        for name in self.FIELDS:
            d[name] = self.get(name)
        return d


class BaseFlags(BitFlags):
    """BaseHeader.Flags ([MS-MQMQ] 2.2.19.1): PR, IN, SH, DH, TR and reserved X bits."""

    FIELDS = C.BASE_FLAGS


class InternalFlags(BitFlags):
    """InternalHeader.Flags ([MS-MQQB] 2.2.1): PT, CS and reserved X bits."""

    FIELDS = C.INTERNAL_FLAGS


class OperatingSystemFlags(BitFlags):
    """EstablishConnectionHeader.OperatingSystem ([MS-MQQB] 2.2.3.1): RE, SE, OS, QS."""

    FIELDS = C.OS_FLAGS


class PingFlags(BitFlags):
    """Ping Packet Flags ([MS-MQQB] 2.2.7): RC, RF and unused X bits."""

    FIELDS = C.PING_FLAGS


def _guid_field(raw: bytes) -> str:
    return str(guid_from_bytes(raw))


# --------------------------------------------------------------------------- BaseHeader

BaseHeaderStruct = cs.Struct(
    "VersionNumber" / cs.Int8ul,
    "Reserved" / cs.Int8ul,
    "Flags" / cs.Int16ul,
    "Signature" / cs.Int32ul,
    "PacketSize" / cs.Int32ul,
    "TimeToReachQueue" / cs.Int32ul,
)


class BaseHeader:
    """[MS-MQMQ] 2.2.19.1: the first 16 bytes of every session packet."""

    STRUCTURE = "BaseHeader"
    SIZE = C.BASE_HEADER_SIZE

    def __init__(self, *, VersionNumber: int = C.BASE_VERSION, Reserved: int = 0,
                 Flags: BaseFlags | int = 0, Signature: int = C.BASE_SIGNATURE,
                 PacketSize: int | None = None, TimeToReachQueue: int = C.INFINITE):
        self.VersionNumber = VersionNumber
        self.Reserved = Reserved
        self.Flags = Flags if isinstance(Flags, BaseFlags) else BaseFlags(Flags)
        self.Signature = Signature
        self.PacketSize = PacketSize          # None: computed by encode_packet
        self.TimeToReachQueue = TimeToReachQueue

    @classmethod
    def decode(cls, data, offset: int = 0, end: int | None = None, *, lenient: bool = False,
               warnings: list | None = None) -> tuple["BaseHeader", int]:
        """Decode and check identity: VersionNumber 0x10 and Signature
        0x524F494C ([MS-MQQB] 3.1.5.1.2).  A bad version or signature is an
        error even in lenient mode: nothing after it can be trusted."""
        v = parse_at(BaseHeaderStruct, data, offset, cls.STRUCTURE)
        if v.VersionNumber != C.BASE_VERSION:
            raise DecodeError(cls.STRUCTURE, "VersionNumber", offset,
                              "version 0x%02X, MUST be 0x10" % v.VersionNumber)
        if v.Signature != C.BASE_SIGNATURE:
            raise DecodeError(cls.STRUCTURE, "Signature", offset + 4,
                              "signature %r, MUST be 0x524F494C ('LIOR')" % bytes(data[offset + 4:offset + 8]))
        h = cls(VersionNumber=v.VersionNumber, Reserved=v.Reserved, Flags=BaseFlags(v.Flags),
                Signature=v.Signature, PacketSize=v.PacketSize, TimeToReachQueue=v.TimeToReachQueue)
        return h, offset + cls.SIZE

    def encode(self) -> bytes:
        if self.PacketSize is None:
            raise EncodeError(self.STRUCTURE, "PacketSize", "not set (encode_packet computes it)")
        return build(BaseHeaderStruct, dict(VersionNumber=self.VersionNumber, Reserved=self.Reserved,
                                            Flags=int(self.Flags), Signature=self.Signature,
                                            PacketSize=self.PacketSize,
                                            TimeToReachQueue=self.TimeToReachQueue), self.STRUCTURE)

    @json_ready
    def to_dict(self) -> dict:
        return {
            "VersionNumber": self.VersionNumber,
            "Reserved": self.Reserved,
            "Flags": self.Flags.to_dict(),
            "Signature": self.Signature,
            "PacketSize": self.PacketSize,
            "TimeToReachQueue": self.TimeToReachQueue,
        }

    def __repr__(self) -> str:
        return "BaseHeader(%r, PacketSize=%r, TimeToReachQueue=0x%X)" % (
            self.Flags, self.PacketSize, self.TimeToReachQueue)


# --------------------------------------------------------------------------- InternalHeader

InternalHeaderStruct = cs.Struct(
    "Reserved" / cs.Int16ul,
    "Flags" / cs.Int16ul,
)


class InternalHeader:
    """[MS-MQQB] 2.2.1: packet type (PT) and connection state (CS)."""

    STRUCTURE = "InternalHeader"
    SIZE = 4

    def __init__(self, *, Reserved: int = 0, Flags: InternalFlags | int = 0):
        self.Reserved = Reserved
        self.Flags = Flags if isinstance(Flags, InternalFlags) else InternalFlags(Flags)

    @classmethod
    def decode(cls, data, offset, end=None, *, lenient=False, warnings=None):
        end = len(data) if end is None else end
        if end - offset < cls.SIZE:
            raise DecodeError(cls.STRUCTURE, "Reserved", offset,
                              "truncated: 4 bytes needed, %d inside the packet" % max(end - offset, 0))
        v = parse_at(InternalHeaderStruct, data, offset, cls.STRUCTURE)
        return cls(Reserved=v.Reserved, Flags=InternalFlags(v.Flags)), offset + cls.SIZE

    def encode(self) -> bytes:
        return build(InternalHeaderStruct, dict(Reserved=self.Reserved, Flags=int(self.Flags)),
                     self.STRUCTURE)

    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = {"Reserved": self.Reserved, "Flags": self.Flags.to_dict()}
        d["Flags"]["PacketType"] = C.PACKET_TYPES.get(self.Flags.PT, "unknown")
        return d


# --------------------------------------------------------------------------- ConnectionParameters

ConnectionParametersHeaderStruct = cs.Struct(
    "RecoverableAckTimeout" / cs.Int32ul,
    "AckTimeout" / cs.Int32ul,
    "Reserved" / cs.Int16ul,
    "WindowSize" / cs.Int16ul,
)


class ConnectionParametersHeader:
    """[MS-MQQB] 2.2.2.1: acknowledgment timeouts and window size (12 bytes)."""

    STRUCTURE = "ConnectionParametersHeader"
    SIZE = 12

    def __init__(self, *, RecoverableAckTimeout: int = 0x5D8, AckTimeout: int = 0x1D4C0,
                 Reserved: int = 0, WindowSize: int = 0x40):
        self.RecoverableAckTimeout = RecoverableAckTimeout
        self.AckTimeout = AckTimeout
        self.Reserved = Reserved
        self.WindowSize = WindowSize

    @classmethod
    def decode(cls, data, offset, end=None, *, lenient=False, warnings=None):
        p = Problems(lenient, warnings)
        end = len(data) if end is None else end
        if end - offset < cls.SIZE:
            raise DecodeError(cls.STRUCTURE, "RecoverableAckTimeout", offset,
                              "truncated: 12 bytes needed, %d inside the packet" % max(end - offset, 0))
        v = parse_at(ConnectionParametersHeaderStruct, data, offset, cls.STRUCTURE)
        lo, hi = C.RECOVERABLE_ACK_TIMEOUT_RANGE
        if not lo <= v.RecoverableAckTimeout <= hi:
            p.note(cls.STRUCTURE, "RecoverableAckTimeout", offset,
                   "%d outside the valid range %d..%d" % (v.RecoverableAckTimeout, lo, hi))
        lo, hi = C.ACK_TIMEOUT_RANGE
        if not lo <= v.AckTimeout <= hi:
            p.note(cls.STRUCTURE, "AckTimeout", offset + 4,
                   "%d outside the valid range %d..%d" % (v.AckTimeout, lo, hi))
        h = cls(RecoverableAckTimeout=v.RecoverableAckTimeout, AckTimeout=v.AckTimeout,
                Reserved=v.Reserved, WindowSize=v.WindowSize)
        return h, offset + cls.SIZE

    def encode(self) -> bytes:
        return build(ConnectionParametersHeaderStruct, self.to_dict(), self.STRUCTURE)

    @json_ready
    def to_dict(self) -> dict:
        return {"RecoverableAckTimeout": self.RecoverableAckTimeout, "AckTimeout": self.AckTimeout,
                "Reserved": self.Reserved, "WindowSize": self.WindowSize}


# --------------------------------------------------------------------------- EstablishConnection

EstablishConnectionHeaderStruct = cs.Struct(
    "ClientGuid" / cs.Bytes(16),
    "ServerGuid" / cs.Bytes(16),
    "TimeStamp" / cs.Int32ul,
    "OperatingSystem" / cs.Int16ul,
    "Reserved" / cs.Int16ul,
    "Padding" / cs.Bytes(512),
)


class EstablishConnectionHeader:
    """[MS-MQQB] 2.2.3.1: queue manager GUIDs, time stamp, OperatingSystem
    flags and 512 bytes of padding (kept as received)."""

    STRUCTURE = "EstablishConnectionHeader"
    SIZE = 552

    def __init__(self, *, ClientGuid: uuid.UUID = GUID_ZERO, ServerGuid: uuid.UUID = GUID_ZERO,
                 TimeStamp: int = 0, OperatingSystem: OperatingSystemFlags | int = C.ESTABLISH_CONNECTION_RE,
                 Reserved: int = 0, Padding: bytes = bytes([C.SERVER_PADDING_BYTE]) * 512):
        self.ClientGuid = ClientGuid
        self.ServerGuid = ServerGuid
        self.TimeStamp = TimeStamp
        self.OperatingSystem = (OperatingSystem if isinstance(OperatingSystem, OperatingSystemFlags)
                                else OperatingSystemFlags(OperatingSystem))
        self.Reserved = Reserved
        self.Padding = bytes(Padding)

    @classmethod
    def decode(cls, data, offset, end=None, *, lenient=False, warnings=None):
        p = Problems(lenient, warnings)
        end = len(data) if end is None else end
        if end - offset < cls.SIZE:
            raise DecodeError(cls.STRUCTURE, "ClientGuid", offset,
                              "truncated: 552 bytes needed, %d inside the packet" % max(end - offset, 0))
        v = parse_at(EstablishConnectionHeaderStruct, data, offset, cls.STRUCTURE)
        os_flags = OperatingSystemFlags(v.OperatingSystem)
        if os_flags.RE != C.ESTABLISH_CONNECTION_RE:
            p.note(cls.STRUCTURE, "OperatingSystem", offset + 36,
                   "RE is 0x%02X, MUST be 0x10" % os_flags.RE)
        h = cls(ClientGuid=guid_from_bytes(v.ClientGuid), ServerGuid=guid_from_bytes(v.ServerGuid),
                TimeStamp=v.TimeStamp, OperatingSystem=os_flags, Reserved=v.Reserved, Padding=v.Padding)
        return h, offset + cls.SIZE

    @property
    def padding_is_server_fill(self) -> bool:
        """True when every Padding byte is 0x5A (what a response MUST carry)."""
        return self.Padding == bytes([C.SERVER_PADDING_BYTE]) * 512

    def encode(self) -> bytes:
        if len(self.Padding) != 512:
            raise EncodeError(self.STRUCTURE, "Padding", "must be 512 bytes, not %d" % len(self.Padding))
        return build(EstablishConnectionHeaderStruct, dict(
            ClientGuid=guid_to_bytes(self.ClientGuid), ServerGuid=guid_to_bytes(self.ServerGuid),
            TimeStamp=self.TimeStamp, OperatingSystem=int(self.OperatingSystem),
            Reserved=self.Reserved, Padding=self.Padding), self.STRUCTURE)

    @json_ready
    def to_dict(self) -> dict:
        return {
            "ClientGuid": str(self.ClientGuid),
            "ServerGuid": str(self.ServerGuid),
            "TimeStamp": self.TimeStamp,
            "OperatingSystem": self.OperatingSystem.to_dict(),
            "Reserved": self.Reserved,
            "Padding": self.Padding,
        }


# --------------------------------------------------------------------------- Ping

PingPacketStruct = cs.Struct(
    "Flags" / cs.Int16ul,
    "Signature" / cs.Int16ul,
    "Cookie" / cs.Int32ul,
    "QMGuid" / cs.Bytes(16),
)


class PingPacket:
    """[MS-MQQB] 2.2.7: the 24-byte UDP (port 3527) Ping request/response; it
    has no BaseHeader."""

    STRUCTURE = "PingPacket"
    SIZE = C.PING_PACKET_SIZE
    kind = "Ping"

    def __init__(self, *, Flags: PingFlags | int = 0, Signature: int = C.PING_SIGNATURE,
                 Cookie: int = 0, QMGuid: uuid.UUID = GUID_ZERO):
        self.Flags = Flags if isinstance(Flags, PingFlags) else PingFlags(Flags)
        self.Signature = Signature
        self.Cookie = Cookie
        self.QMGuid = QMGuid
        self.trailing = b""
        self.warnings: list[DecodeWarning] = []

    @classmethod
    def decode(cls, data, offset=0, end=None, *, lenient=False, warnings=None):
        v = parse_at(PingPacketStruct, data, offset, cls.STRUCTURE)
        if v.Signature != C.PING_SIGNATURE:
            raise DecodeError(cls.STRUCTURE, "Signature", offset + 2,
                              "signature 0x%04X, MUST be 0x5548" % v.Signature)
        h = cls(Flags=PingFlags(v.Flags), Signature=v.Signature, Cookie=v.Cookie,
                QMGuid=guid_from_bytes(v.QMGuid))
        return h, offset + cls.SIZE

    def encode(self) -> bytes:
        return build(PingPacketStruct, dict(Flags=int(self.Flags), Signature=self.Signature,
                                            Cookie=self.Cookie, QMGuid=guid_to_bytes(self.QMGuid)),
                     self.STRUCTURE)

    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = {"packet": "Ping", "PingPacket": {
            "Flags": self.Flags.to_dict(), "Signature": self.Signature, "Cookie": self.Cookie,
            "QMGuid": str(self.QMGuid)}}
        if self.trailing:
            d["trailing"] = self.trailing
        if self.warnings:
            d["warnings"] = [w.to_dict() for w in self.warnings]
        return d
