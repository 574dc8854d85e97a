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
from ..layout import build, field_offsets, parse_at
from . import constants as C

__all__ = [
    "BitFlags", "BaseFlags", "InternalFlags", "OperatingSystemFlags", "PingFlags",
    "BaseHeader", "InternalHeader", "ConnectionParametersHeader", "EstablishConnectionHeader",
    "PingPacket", "FixedHeader", "Guid", "FlagsField", "guid_from_bytes", "guid_to_bytes", "GUID_ZERO",
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


# --------------------------------------------------------------------------- declared headers


class Guid(cs.Adapter):
    """A GUID field: 16 bytes in the [MS-DTYP] 2.3.4.2 packet representation
    as a :class:`uuid.UUID` (a string is taken when building)."""

    def __init__(self) -> None:
        super().__init__(cs.Bytes(16))

    def _decode(self, obj, context, path):
        return guid_from_bytes(obj)

    def _encode(self, obj, context, path):
        return guid_to_bytes(obj)


class FlagsField(cs.Adapter):
    """An integer field of named bit fields, as ``flags`` (a :class:`BitFlags`
    class); an int is taken when building."""

    def __init__(self, flags: type, subcon: cs.Construct) -> None:
        super().__init__(subcon)
        self.flags = flags

    def _decode(self, obj, context, path):
        return self.flags(obj)

    def _encode(self, obj, context, path):
        return int(obj)


class FixedHeader:
    """A header whose fields, defaults, decode, encode and ``to_dict`` come
    from its declaration: ``LAYOUT`` (a construct Struct whose field names are
    the specification's; :class:`Guid` and :class:`FlagsField` fields decode to
    their Python types) and ``DEFAULTS`` (every other field defaults to 0,
    or the null GUID).
    Each field is also annotated with its Python type in the class body, for
    type checkers (tests/test_msmq_declared.py keeps the two lists equal).
    A subclass adds its specification's checks in ``check`` (after the layout
    was read) and ``check_encode``.  A header with a variable part after the
    fixed one (UserHeader) names its fields in ``EXTRA`` (default None, or
    their ``DEFAULTS``) and decodes, encodes and presents them itself after the
    fixed part's."""

    STRUCTURE: ClassVar[str] = ""
    LAYOUT: ClassVar[cs.Struct]
    SIZE: ClassVar[int] = 0
    DEFAULTS: ClassVar[dict[str, Any]] = {}
    #: how a cut header is described: "<SIZE> bytes needed, <n> <CUT>"
    CUT: ClassVar[str] = "inside the packet"
    FIELDS: ClassVar[tuple[str, ...]] = ()
    EXTRA: ClassVar[tuple[str, ...]] = ()
    _KINDS: ClassVar[dict[str, cs.Construct]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "LAYOUT" in cls.__dict__:
            cls.FIELDS = tuple(sc.name for sc in cls.LAYOUT.subcons)
            cls._KINDS = {sc.name: sc.subcon if isinstance(sc, cs.Renamed) else sc for sc in cls.LAYOUT.subcons}
            cls.SIZE = cls.LAYOUT.sizeof()

    def __init__(self, **values: Any) -> None:
        unknown = set(values).difference(self.FIELDS, self.EXTRA)
        if unknown:
            raise TypeError("%s has no field %s" % (self.STRUCTURE, ", ".join(sorted(unknown))))
        for name in self.FIELDS:
            kind = self._KINDS[name]
            if name in values:
                v = values[name]
            else:
                v = self.DEFAULTS.get(name, GUID_ZERO if isinstance(kind, Guid) else 0)
            if isinstance(kind, FlagsField) and not isinstance(v, kind.flags):
                v = kind.flags(v)
            elif isinstance(kind, Guid) and isinstance(v, str):
                v = uuid.UUID(v)
            elif isinstance(v, (bytearray, memoryview)):
                v = bytes(v)
            setattr(self, name, v)
        for name in self.EXTRA:
            v = values.get(name, self.DEFAULTS.get(name))
            setattr(self, name, bytes(v) if isinstance(v, (bytearray, memoryview)) else v)

    @classmethod
    def decode(cls, data, offset: int = 0, end: int | None = None, *, lenient: bool = False,
               warnings: list | None = None):
        """``(header, next_offset)`` from ``data[offset:end]``."""
        end = len(data) if end is None else end
        if end - offset < cls.SIZE:
            raise DecodeError(cls.STRUCTURE, cls.FIELDS[0], offset, "truncated: %d bytes needed, %d %s"
                              % (cls.SIZE, max(end - offset, 0), cls.CUT))
        h = cls.read_fixed(data, offset)
        h.check(offset, Problems(lenient, warnings))
        return h, offset + cls.SIZE

    @classmethod
    def cut_short(cls, offset: int, end: int) -> DecodeError:
        """The error of a header whose fixed part ``end`` cuts short (fewer than
        SIZE bytes at ``offset``), naming the last field that starts before ``end``."""
        avail = max(end - offset, 0)
        name, rel = [(n, at) for n, at in field_offsets(cls.LAYOUT).items() if at <= avail][-1]
        return DecodeError(cls.STRUCTURE, name, offset + rel,
                           "truncated: %d fixed bytes needed, %d %s" % (cls.SIZE, avail, cls.CUT))

    @classmethod
    def read_fixed(cls, data, offset: int):
        """The header with the fields of ``LAYOUT`` read at ``data[offset:]``."""
        v = parse_at(cls.LAYOUT, data, offset, cls.STRUCTURE)
        return cls(**{name: v[name] for name in cls.FIELDS})

    def check(self, offset: int, p: Problems) -> None:
        """The specification's rules on the decoded values (none by default)."""

    def check_encode(self) -> None:
        """What must hold before encoding (nothing by default)."""

    def encode(self) -> bytes:
        self.check_encode()
        return self.encode_fixed()

    def encode_fixed(self) -> bytes:
        """The bytes of the ``LAYOUT`` fields."""
        return build(self.LAYOUT, {name: getattr(self, name) for name in self.FIELDS}, self.STRUCTURE)

    @json_ready
    def to_dict(self) -> dict:
        out: dict[str, Any] = {}
        for name in self.FIELDS:
            v = getattr(self, name)
            out[name] = v.to_dict() if isinstance(v, BitFlags) else str(v) if isinstance(v, uuid.UUID) else v
        return out

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and all(getattr(self, n) == getattr(other, n)
                                                 for n in self.FIELDS + self.EXTRA)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "%s(%s)" % (self.STRUCTURE, ", ".join("%s=%r" % (n, getattr(self, n)) for n in self.FIELDS
                                                     if not isinstance(getattr(self, n), bytes)))


# --------------------------------------------------------------------------- BaseHeader


class BaseHeader(FixedHeader):
    """[MS-MQMQ] 2.2.19.1: the first 16 bytes of every session packet.
    ``PacketSize`` None: computed by ``encode_packet``."""

    STRUCTURE = "BaseHeader"
    VersionNumber: int
    Reserved: int
    Flags: BaseFlags
    Signature: int
    PacketSize: int | None
    TimeToReachQueue: int
    LAYOUT = cs.Struct(
        "VersionNumber" / cs.Int8ul,
        "Reserved" / cs.Int8ul,
        "Flags" / FlagsField(BaseFlags, cs.Int16ul),
        "Signature" / cs.Int32ul,
        "PacketSize" / cs.Int32ul,
        "TimeToReachQueue" / cs.Int32ul,
    )
    DEFAULTS = {"VersionNumber": C.BASE_VERSION, "Signature": C.BASE_SIGNATURE, "PacketSize": None,
                "TimeToReachQueue": C.INFINITE}

    @classmethod
    def decode(cls, data, offset: int = 0, end: int | None = None, *, lenient: bool = False,
               warnings: list | None = None) -> tuple["BaseHeader", int]:
        """Decode and check identity: VersionNumber 0x10 and Signature
        0x524F494C ([MS-MQQB] 3.1.5.1.2).  A bad version or signature is an
        error even in lenient mode: nothing after it can be trusted.  (The
        framer bounds the packet; ``end`` is not checked here.)"""
        h = cls.read_fixed(data, offset)
        if h.VersionNumber != C.BASE_VERSION:
            raise DecodeError(cls.STRUCTURE, "VersionNumber", offset,
                              "version 0x%02X, MUST be 0x10" % h.VersionNumber)
        if h.Signature != C.BASE_SIGNATURE:
            raise DecodeError(cls.STRUCTURE, "Signature", offset + 4,
                              "signature %r, MUST be 0x524F494C ('LIOR')" % bytes(data[offset + 4:offset + 8]))
        return h, offset + cls.SIZE

    def check_encode(self) -> None:
        if self.PacketSize is None:
            raise EncodeError(self.STRUCTURE, "PacketSize", "not set (encode_packet computes it)")

    def __repr__(self) -> str:
        return "BaseHeader(%r, PacketSize=%r, TimeToReachQueue=0x%X)" % (
            self.Flags, self.PacketSize, self.TimeToReachQueue)


# --------------------------------------------------------------------------- InternalHeader


class InternalHeader(FixedHeader):
    """[MS-MQQB] 2.2.1: packet type (PT) and connection state (CS)."""

    STRUCTURE = "InternalHeader"
    Reserved: int
    Flags: InternalFlags
    LAYOUT = cs.Struct(
        "Reserved" / cs.Int16ul,
        "Flags" / FlagsField(InternalFlags, cs.Int16ul),
    )

    @json_ready
    def to_dict(self) -> dict:
        d = FixedHeader.to_dict(self)
        d["Flags"]["PacketType"] = C.PACKET_TYPES.get(self.Flags.PT, "unknown")
        return d


# --------------------------------------------------------------------------- ConnectionParameters


class ConnectionParametersHeader(FixedHeader):
    """[MS-MQQB] 2.2.2.1: acknowledgment timeouts and window size (12 bytes)."""

    STRUCTURE = "ConnectionParametersHeader"
    RecoverableAckTimeout: int
    AckTimeout: int
    Reserved: int
    WindowSize: int
    LAYOUT = cs.Struct(
        "RecoverableAckTimeout" / cs.Int32ul,
        "AckTimeout" / cs.Int32ul,
        "Reserved" / cs.Int16ul,
        "WindowSize" / cs.Int16ul,
    )
    DEFAULTS = {"RecoverableAckTimeout": 0x5D8, "AckTimeout": 0x1D4C0, "WindowSize": 0x40}

    def check(self, offset: int, p: Problems) -> None:
        lo, hi = C.RECOVERABLE_ACK_TIMEOUT_RANGE
        if not lo <= self.RecoverableAckTimeout <= hi:
            p.note(self.STRUCTURE, "RecoverableAckTimeout", offset,
                   "%d outside the valid range %d..%d" % (self.RecoverableAckTimeout, lo, hi))
        lo, hi = C.ACK_TIMEOUT_RANGE
        if not lo <= self.AckTimeout <= hi:
            p.note(self.STRUCTURE, "AckTimeout", offset + 4,
                   "%d outside the valid range %d..%d" % (self.AckTimeout, lo, hi))


# --------------------------------------------------------------------------- EstablishConnection


class EstablishConnectionHeader(FixedHeader):
    """[MS-MQQB] 2.2.3.1: queue manager GUIDs, time stamp, OperatingSystem
    flags and 512 bytes of padding (kept as received)."""

    STRUCTURE = "EstablishConnectionHeader"
    ClientGuid: uuid.UUID
    ServerGuid: uuid.UUID
    TimeStamp: int
    OperatingSystem: OperatingSystemFlags
    Reserved: int
    Padding: bytes
    LAYOUT = cs.Struct(
        "ClientGuid" / Guid(),
        "ServerGuid" / Guid(),
        "TimeStamp" / cs.Int32ul,
        "OperatingSystem" / FlagsField(OperatingSystemFlags, cs.Int16ul),
        "Reserved" / cs.Int16ul,
        "Padding" / cs.Bytes(512),
    )
    DEFAULTS = {"OperatingSystem": C.ESTABLISH_CONNECTION_RE,
                "Padding": bytes([C.SERVER_PADDING_BYTE]) * 512}

    def check(self, offset: int, p: Problems) -> None:
        if self.OperatingSystem.RE != C.ESTABLISH_CONNECTION_RE:
            p.note(self.STRUCTURE, "OperatingSystem", offset + 36, "RE is 0x%02X, MUST be 0x10" % self.OperatingSystem.RE)

    @property
    def padding_is_server_fill(self) -> bool:
        """True when every Padding byte is 0x5A (what a response MUST carry)."""
        return self.Padding == bytes([C.SERVER_PADDING_BYTE]) * 512

    def check_encode(self) -> None:
        if len(self.Padding) != 512:
            raise EncodeError(self.STRUCTURE, "Padding", "must be 512 bytes, not %d" % len(self.Padding))


# --------------------------------------------------------------------------- Ping


class PingPacket(FixedHeader):
    """[MS-MQQB] 2.2.7: the 24-byte UDP (port 3527) Ping request/response; it
    has no BaseHeader."""

    STRUCTURE = "PingPacket"
    Flags: PingFlags
    Signature: int
    Cookie: int
    QMGuid: uuid.UUID
    LAYOUT = cs.Struct(
        "Flags" / FlagsField(PingFlags, cs.Int16ul),
        "Signature" / cs.Int16ul,
        "Cookie" / cs.Int32ul,
        "QMGuid" / Guid(),
    )
    DEFAULTS = {"Signature": C.PING_SIGNATURE}
    kind = "Ping"

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        self.trailing = b""
        self.warnings: list[DecodeWarning] = []

    @classmethod
    def decode(cls, data, offset=0, end=None, *, lenient=False, warnings=None):
        h = cls.read_fixed(data, offset)
        if h.Signature != C.PING_SIGNATURE:
            raise DecodeError(cls.STRUCTURE, "Signature", offset + 2,
                              "signature 0x%04X, MUST be 0x5548" % h.Signature)
        return h, offset + cls.SIZE

    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = {"packet": "Ping", "PingPacket": FixedHeader.to_dict(self)}
        if self.trailing:
            d["trailing"] = self.trailing
        if self.warnings:
            d["warnings"] = [w.to_dict() for w in self.warnings]
        return d
