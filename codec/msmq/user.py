"""UserHeader ([MS-MQMQ] 2.2.19.2) and the queue format types its Flags.DQ,
Flags.AQ and Flags.RQ select ([MS-MQMQ] 2.2.18.1.5, 2.2.18.1.7).

Layout: 48 fixed bytes (SourceQueueManager, QueueManagerAddress,
TimeToBeReceived, SentTime, MessageID, Flags), then DestinationQueue,
AdminQueue, ResponseQueue (each absent, 4, 16, 20 bytes or a counted UTF-16
direct name padded to a 4-byte boundary relative to the UserHeader's start),
then ConnectorType (16 bytes) when Flags.CQ is set.
"""
from __future__ import annotations

import struct
import uuid
from typing import Any, ClassVar

import construct as cs

from ..render import json_ready
from ..errors import DecodeError, EncodeError, Problems
from ..layout import field_offsets
from .base import GUID_ZERO, BitFlags, FixedHeader, FlagsField, Guid, guid_from_bytes, guid_to_bytes
from . import constants as C

__all__ = [
    "UserFlags", "UserHeader", "PrivateQueueFormatNameId", "PublicQueueFormatName",
    "PrivateQueueFormatName", "DirectQueueFormatName",
]


class UserFlags(BitFlags):
    """UserHeader.Flags: RC, DM, JN, JP, DQ, AQ, RQ, SH, TH, MP, CQ, MQ, AH, HH
    and the reserved X1..X4 fields."""

    FIELDS = C.USER_FLAGS
    WIDTH = 32


# --------------------------------------------------------------------------- queue format types


class _FixedQueueFormat(FixedHeader):
    """A queue format type of fixed size, read and written as its ``LAYOUT``
    declares it; positional arguments give the fields in order."""

    NAME: ClassVar[str] = ""

    def __init__(self, *args: Any, **values: Any) -> None:
        super().__init__(**dict(zip(self.FIELDS, args)), **values)

    def encode(self, rel: int = 0) -> bytes:   # (rel: as DirectQueueFormatName's)
        return self.encode_fixed()


class PrivateQueueFormatNameId(_FixedQueueFormat):
    """[MS-MQMQ] 2.2.18.1.5.1: a private queue number on a host the flag implies."""

    STRUCTURE = NAME = "PrivateQueueFormatNameId"
    PrivateQueueIdentifier: int
    LAYOUT = cs.Struct("PrivateQueueIdentifier" / cs.Int32ul)


class PublicQueueFormatName(_FixedQueueFormat):
    """[MS-MQMQ] 2.2.18.1.7.1: a public queue GUID."""

    STRUCTURE = NAME = "PublicQueueFormatName"
    PublicQueueIdentifier: uuid.UUID
    LAYOUT = cs.Struct("PublicQueueIdentifier" / Guid())


class PrivateQueueFormatName(_FixedQueueFormat):
    """[MS-MQMQ] 2.2.18.1.7.2: host queue manager GUID + private queue number."""

    STRUCTURE = NAME = "PrivateQueueFormatName"
    SourceQueueManager: uuid.UUID
    PrivateQueueIdentifier: int
    LAYOUT = cs.Struct("SourceQueueManager" / Guid(), "PrivateQueueIdentifier" / cs.Int32ul)


class DirectQueueFormatName:
    """[MS-MQMQ] 2.2.18.1.5.2: Count (bytes, including the terminating null)
    and a null-terminated UTF-16LE direct format name, padded to a 4-byte
    boundary relative to the start of the containing header.  The raw name
    bytes and the padding bytes are kept for exact re-encoding."""

    NAME = "DirectQueueFormatName"

    def __init__(self, DirectFormatName: str, *, Count: int | None = None, raw: bytes | None = None,
                 Padding: bytes | None = None):
        self.DirectFormatName = DirectFormatName
        self.raw = raw                  # Count bytes as received (None: encode DirectFormatName)
        self.Count = Count              # None: computed
        self.Padding = Padding          # None: zero bytes as needed

    def name_bytes(self) -> bytes:
        if self.raw is not None:
            return self.raw
        return self.DirectFormatName.encode("utf-16-le", "surrogatepass") + b"\0\0"

    def encode(self, rel: int = 0) -> bytes:
        """``rel``: offset of this field from the start of its header."""
        name = self.name_bytes()
        count = len(name) if self.Count is None else self.Count
        if count != len(name):
            raise EncodeError(self.NAME, "Count", "Count %d but the name has %d bytes" % (count, len(name)))
        if count > 0xFFFF:
            raise EncodeError(self.NAME, "Count", "name of %d bytes does not fit in 16 bits" % count)
        body = struct.pack("<H", count) + name
        need = (-(rel + len(body))) % 4
        pad = b"\0" * need if self.Padding is None else self.Padding
        if len(pad) != need:
            raise EncodeError(self.NAME, "Padding", "%d padding bytes needed, %d given" % (need, len(pad)))
        return body + pad

    @json_ready
    def to_dict(self) -> dict:
        return {"Count": len(self.name_bytes()) if self.Count is None else self.Count,
                "DirectFormatName": self.DirectFormatName,
                "Padding": self.Padding if self.Padding is not None else b""}

    def __eq__(self, o):
        return (type(o) is type(self) and o.DirectFormatName == self.DirectFormatName
                and o.name_bytes() == self.name_bytes())


#: the queue format types of a fixed size, by name
_FIXED_QUEUES: dict[str, type[_FixedQueueFormat]] = {
    c.NAME: c for c in (PrivateQueueFormatNameId, PublicQueueFormatName, PrivateQueueFormatName)}


def _decode_queue(kind: str, data, pos: int, hdr_start: int, end: int, structure: str, field: str,
                  p: Problems):
    """Decode one queue format type of the given kind at ``pos``."""
    avail = end - pos
    fixed = _FIXED_QUEUES.get(kind)
    if fixed is not None:
        if avail < fixed.SIZE:
            raise DecodeError(structure, field, pos, "%s needs %d bytes, %d remain"
                              % (kind, fixed.SIZE, max(avail, 0)))
        return fixed.read_fixed(data, pos), pos + fixed.SIZE
    # DirectQueueFormatName
    if avail < 2:
        raise DecodeError(structure, field, pos, "DirectQueueFormatName.Count needs 2 bytes, %d remain"
                          % max(avail, 0))
    count = struct.unpack_from("<H", data, pos)[0]
    name_at = pos + 2
    if count > end - name_at:
        raise DecodeError(structure, field, pos, "DirectQueueFormatName.Count %d runs past the packet "
                          "(%d bytes remain)" % (count, end - name_at))
    if count < 2 or count % 2:
        raise DecodeError(structure, field, pos, "DirectQueueFormatName.Count %d is not a whole "
                          "null-terminated WCHAR string" % count)
    raw = bytes(data[name_at:name_at + count])
    if raw[-2:] != b"\0\0":
        p.error(structure, field, name_at + count - 2, "DirectFormatName is not null-terminated")
        text = raw.decode("utf-16-le", "surrogatepass")
    else:
        text = raw[:-2].decode("utf-16-le", "surrogatepass")
    stop = name_at + count
    need = (-(stop - hdr_start)) % 4
    if need > end - stop:
        raise DecodeError(structure, field, stop, "padding of %d bytes runs past the packet" % need)
    pad = bytes(data[stop:stop + need])
    return DirectQueueFormatName(text, Count=count, raw=raw, Padding=pad), stop + need


def render_format_name(q, *, host: uuid.UUID | None = None) -> str | None:
    """A [MS-MQMQ] 2.1 format name string for a queue field; ``host`` is the
    queue manager GUID a PrivateQueueFormatNameId is relative to."""
    from .formatname import FormatName

    try:
        if isinstance(q, PublicQueueFormatName):
            return str(FormatName.public(q.PublicQueueIdentifier))
        if isinstance(q, PrivateQueueFormatName):
            # (FormatName.private: a constructor and, on instances, a field)
            return str(FormatName.private(q.SourceQueueManager, q.PrivateQueueIdentifier))  # type: ignore[operator]
        if isinstance(q, PrivateQueueFormatNameId) and host is not None:
            return str(FormatName.private(host, q.PrivateQueueIdentifier))  # type: ignore[operator]
        if isinstance(q, DirectQueueFormatName):
            return str(FormatName.direct(q.DirectFormatName))
    except DecodeError:   # a name FormatName does not take: rendering never fails a decode
        pass
    if isinstance(q, DirectQueueFormatName):
        return "DIRECT=" + q.DirectFormatName
    return None


# --------------------------------------------------------------------------- UserHeader


class UserHeader(FixedHeader):
    """[MS-MQMQ] 2.2.19.2: 48 fixed bytes, then the queues the Flags announce
    (DQ, AQ, RQ) and a ConnectorType when Flags.CQ is set."""

    STRUCTURE = "UserHeader"
    SourceQueueManager: uuid.UUID
    QueueManagerAddress: uuid.UUID
    TimeToBeReceived: int
    SentTime: int
    MessageID: int
    Flags: UserFlags
    DestinationQueue: Any
    AdminQueue: Any
    ResponseQueue: Any
    ConnectorType: uuid.UUID | None
    LAYOUT = cs.Struct(
        "SourceQueueManager" / Guid(),
        "QueueManagerAddress" / Guid(),
        "TimeToBeReceived" / cs.Int32ul,
        "SentTime" / cs.Int32ul,
        "MessageID" / cs.Int32ul,
        "Flags" / FlagsField(UserFlags, cs.Int32ul),
    )
    DEFAULTS = {"TimeToBeReceived": C.INFINITE, "Flags": int(UserFlags(MP=1))}
    EXTRA = ("DestinationQueue", "AdminQueue", "ResponseQueue", "ConnectorType")

    # ------------------------------------------------------------------ decode
    @classmethod
    def decode(cls, data, offset: int = 0, end: int | None = None, *, lenient: bool = False,
               warnings: list | None = None):
        p = Problems(lenient, warnings)
        end = len(data) if end is None else end
        if end - offset < cls.SIZE:
            raise cls.cut_short(offset, end)
        h = cls.read_fixed(data, offset)
        flags = h.Flags
        flags_at = offset + field_offsets(cls.LAYOUT)["Flags"]
        # contradictions and ranges the layout does not depend on
        if flags.RC > C.MAX_ROUTING_COUNT:
            p.note(cls.STRUCTURE, "Flags", flags_at, "RC %d outside the valid range 0..29" % flags.RC)
        if flags.DM not in (0, 1):
            p.note(cls.STRUCTURE, "Flags", flags_at, "DM %d is neither express (0) nor recoverable (1)"
                   % flags.DM)
        if flags.TH and flags.DM == 0:
            p.error(cls.STRUCTURE, "Flags", flags_at,
                    "TH (TransactionHeader) is set but DM is 0: a transactional message MUST be recoverable")
        if not flags.MP:
            p.error(cls.STRUCTURE, "Flags", flags_at, "MP is clear: a MessagePropertiesHeader MUST "
                    "always be present")
        pos = offset + cls.SIZE
        for field, tables, sel in (("DestinationQueue", C.DQ_TYPES, "DQ"), ("AdminQueue", C.AQ_TYPES, "AQ"),
                                   ("ResponseQueue", C.RQ_TYPES, "RQ")):
            t = flags.get(sel)
            if t not in tables:
                raise DecodeError(cls.STRUCTURE, "Flags", flags_at,
                                  "%s 0x%X is not a valid queue format type for %s (valid: %s)"
                                  % (sel, t, field, ", ".join("0x%X" % k for k in tables)))
            kind = tables[t][1]
            if kind is None:
                continue
            q, pos = _decode_queue(kind, data, pos, offset, end, cls.STRUCTURE, field, p)
            setattr(h, field, q)
        if flags.CQ:
            if end - pos < 16:
                raise DecodeError(cls.STRUCTURE, "ConnectorType", pos,
                                  "Flags.CQ announces a 16-byte ConnectorType but %d bytes remain"
                                  % max(end - pos, 0))
            h.ConnectorType = guid_from_bytes(data[pos:pos + 16])
            pos += 16
        if flags.get("DQ") in (3, 5) and h.QueueManagerAddress == GUID_ZERO:
            p.note(cls.STRUCTURE, "QueueManagerAddress", offset + 16,
                   "DQ is 0x%X but QueueManagerAddress is the NULL GUID" % flags.get("DQ"))
        return h, pos

    # ------------------------------------------------------------------ encode
    def encode(self) -> bytes:
        f = self.Flags
        out = bytearray(self.encode_fixed())
        for field, tables, sel in (("DestinationQueue", C.DQ_TYPES, "DQ"), ("AdminQueue", C.AQ_TYPES, "AQ"),
                                   ("ResponseQueue", C.RQ_TYPES, "RQ")):
            t = f.get(sel)
            if t not in tables:
                raise EncodeError(self.STRUCTURE, "Flags", "%s 0x%X is not a valid queue format type" % (sel, t))
            kind = tables[t][1]
            q = getattr(self, field)
            if kind is None:
                if q is not None:
                    raise EncodeError(self.STRUCTURE, field, "Flags.%s 0x%X has no %s field" % (sel, t, field))
                continue
            if q is None or q.NAME != kind:
                raise EncodeError(self.STRUCTURE, field, "Flags.%s 0x%X needs a %s" % (sel, t, kind))
            out += q.encode(len(out))
        if f.CQ:
            if self.ConnectorType is None:
                raise EncodeError(self.STRUCTURE, "ConnectorType", "Flags.CQ is set but ConnectorType is None")
            out += guid_to_bytes(self.ConnectorType)
        elif self.ConnectorType is not None:
            raise EncodeError(self.STRUCTURE, "ConnectorType", "ConnectorType given but Flags.CQ is clear")
        return bytes(out)

    # ------------------------------------------------------------------ presentation
    def _host_for(self, field: str) -> uuid.UUID | None:
        sel = {"DestinationQueue": "DQ", "AdminQueue": "AQ", "ResponseQueue": "RQ"}[field]
        t = self.Flags.get(sel)
        if t == 2:
            return self.SourceQueueManager
        if t == 3:
            return self.QueueManagerAddress
        if t == 4:  # RQ: same host as the administration queue
            aq = self.AdminQueue
            if isinstance(aq, PrivateQueueFormatName):
                return aq.SourceQueueManager
            if isinstance(aq, PrivateQueueFormatNameId):
                return self._host_for("AdminQueue")
        return None

    def format_name(self, field: str) -> str | None:
        """The format name string of DestinationQueue, AdminQueue or ResponseQueue."""
        if field == "ResponseQueue" and self.Flags.RQ == 1:
            return self.format_name("AdminQueue")
        q = getattr(self, field)
        if q is None:
            return None
        return render_format_name(q, host=self._host_for(field))

    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = FixedHeader.to_dict(self)
        for field, tables, sel in (("DestinationQueue", C.DQ_TYPES, "DQ"), ("AdminQueue", C.AQ_TYPES, "AQ"),
                                   ("ResponseQueue", C.RQ_TYPES, "RQ")):
            t = self.Flags.get(sel)
            q = getattr(self, field)
            if q is None and t != 1:
                continue
            entry: dict[str, Any] = {"QueueType": tables.get(t, ("invalid", None))[0]}
            if q is not None:
                entry[q.NAME] = q.to_dict()
            fn = self.format_name(field)
            if fn is not None:
                entry["FormatName"] = fn
            d[field] = entry
        if self.ConnectorType is not None:
            d["ConnectorType"] = str(self.ConnectorType)
        return d
