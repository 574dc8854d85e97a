"""MSMQ optional headers of the UserMessage Packet ([MS-MQMQ] 2.2.20, [MS-MQRR] 2.2.5).

INTERFACE (stable; implementation follows in this module and its siblings
``security.py``, ``srmp.py``, ``extensions.py``)::

    H.decode(data, offset, end, *, lenient=False, warnings=None) -> (H, next_offset)
        data:   the caller's whole input (bytes / bytearray / memoryview)
        offset: absolute offset of the header's first byte in ``data``
        end:    absolute end of the packet (BaseHeader.PacketSize bound); no
                byte at or after ``end`` is read
        returns the header and the absolute offset of the next header, i.e.
        the header's end rounded up to a 4-byte boundary *relative to the
        header's own start* (headers start 4-aligned in a packet, so this is
        the packet's alignment); the padding bytes are kept in ``.padding``.
        Raises DecodeError(structure, field, absolute offset, reason) and
        nothing else.  With ``lenient=True`` violations of a value rule
        (a wrong constant, a reserved bit, an out-of-range number) are
        appended to ``warnings`` (a list) as DecodeWarning instead of raising;
        anything that makes the layout unknowable (a length past ``end``)
        still raises.
    h.encode() -> bytes     identical bytes for any decoded header (padding included)
    h.to_dict() -> dict     keys are the specification's field names; GUIDs as
                            canonical strings; UTF-16 text decoded

    H for: TransactionHeader, SecurityHeader, DebugHeader, SoapHeader,
    SRMPEnvelopeHeader, CompoundMessageHeader, MultiQueueFormatHeader,
    ExtensionHeader, SubqueueHeader, DeadLetterHeader, ExtendedAddressHeader,
    OrderAckBody, FinalAckBody (the last two are MessageBody layouts of
    [MS-MQQB] 2.2.4.1 / 2.2.5.1, decoded the same way).

``OPTIONAL_HEADER_ORDER`` lists, in the order the specifications place them
after the UserHeader, ``(header class or None, header name, (flag owner,
flag name))``: the owner is ``"BaseHeader"`` or ``"UserHeader"`` and the
flag name is the specification's bit-field name (``"TH"``, ``"SH"``, ...;
``FLAG_BITS`` gives the masks).  A ``None`` class marks a header that is not
this module's (MessagePropertiesHeader, SessionHeader) so that the table
shows the complete order.  ``IMPLEMENTATION_HEADER_ORDER`` is the order
Microsoft's implementation parses, with the EOD sections.  See
docs/msmq-headers.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import construct as cs

from ..render import json_ready
from ..errors import DecodeError
from ._optcommon import GUID, Cursor, OptionalHeader, guid_bytes, guid_str, split_bits
from .security import SecurityHeader, SID
from .srmp import SRMPEnvelopeHeader, CompoundMessageHeader, SoapHeader, EodHeader, EodAckHeader
from .mqf import MultiQueueFormatHeader, MQFAddressHeader, MQFSignatureHeader, MQFFormatNameElement
from .extensions import (
    ExtensionHeader,
    SubqueueHeader,
    DeadLetterHeader,
    ExtendedAddressHeader,
    RemoteReadExtensions,
)

__all__ = [
    "OptionalHeader",
    "TransactionHeader",
    "SecurityHeader",
    "SID",
    "DebugHeader",
    "SoapHeader",
    "SRMPEnvelopeHeader",
    "CompoundMessageHeader",
    "MultiQueueFormatHeader",
    "MQFAddressHeader",
    "MQFSignatureHeader",
    "ExtensionHeader",
    "SubqueueHeader",
    "DeadLetterHeader",
    "ExtendedAddressHeader",
    "RemoteReadExtensions",
    "OrderAckBody",
    "FinalAckBody",
    "TxSequenceID",
    "EodHeader",
    "EodAckHeader",
    "MQFFormatNameElement",
    "IMPLEMENTATION_HEADER_ORDER",
    "OPTIONAL_HEADER_ORDER",
    "FLAG_BITS",
]


# ---------------------------------------------------------------------------
# [MS-MQMQ] 2.2.18.1.2 TxSequenceID
# ---------------------------------------------------------------------------

TxSequenceIDStruct = cs.Struct(
    "Ordinal" / cs.Int32ul,
    "TimeStamp" / cs.Int32ul,
)


@dataclass
class TxSequenceID:
    """[MS-MQMQ] 2.2.18.1.2: compared as a 64-bit integer, Ordinal low."""

    Ordinal: int = 0
    TimeStamp: int = 0

    @property
    def value(self) -> int:
        return (self.TimeStamp << 32) | self.Ordinal

    @json_ready
    def to_dict(self) -> dict:
        return {"Ordinal": self.Ordinal, "TimeStamp": self.TimeStamp}


# ---------------------------------------------------------------------------
# [MS-MQMQ] 2.2.20.5 TransactionHeader
# ---------------------------------------------------------------------------

#: TransactionHeader.Flags sub-fields, name -> (shift, width).
TRANSACTION_FLAGS = {
    "CG": (0, 1), "FA": (1, 1), "FM": (2, 1), "LM": (3, 1), "ID": (4, 20),
    "X1": (24, 1), "X2": (25, 1), "X3": (26, 1), "X4": (27, 1),
    "X5": (28, 1), "X6": (29, 1), "X7": (30, 1), "X8": (31, 1),
}

TransactionHeaderStruct = cs.Struct(
    "Flags" / cs.Int32ul,
    "TxSequenceID" / TxSequenceIDStruct,
    "TxSequenceNumber" / cs.Int32ul,
    "PreviousTxSequenceNumber" / cs.Int32ul,
)
_CG = 1 << 0


@dataclass
class TransactionHeader(OptionalHeader):
    """[MS-MQMQ] 2.2.20.5: 20 bytes, or 36 with ConnectorQMGuid (Flags.CG)."""

    STRUCTURE = "TransactionHeader"

    Flags: int = 0
    TxSequenceID: TxSequenceID = field(default_factory=TxSequenceID)
    TxSequenceNumber: int = 1
    PreviousTxSequenceNumber: int = 0
    ConnectorQMGuid: bytes | None = None

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(TransactionHeaderStruct, at)
        h = cls(v.Flags, TxSequenceID(v.TxSequenceID.Ordinal, v.TxSequenceID.TimeStamp),
                v.TxSequenceNumber, v.PreviousTxSequenceNumber)
        if v.TxSequenceNumber == 0:
            cur.violation("TxSequenceNumber", at + 12, "valid range is 0x00000001..0xFFFFFFFF, got 0")
        if v.PreviousTxSequenceNumber == 0xFFFFFFFF:
            cur.violation("PreviousTxSequenceNumber", at + 16,
                          "valid range is 0x00000000..0xFFFFFFFE, got 0xFFFFFFFF")
        pos = at + 20
        if v.Flags & _CG:
            h.ConnectorQMGuid = cur.take(pos, 16, "ConnectorQMGuid", "Flags.CG announces a ConnectorQMGuid")
            pos += 16
        return h, pos

    def encode(self) -> bytes:
        out = TransactionHeaderStruct.build(dict(
            Flags=self.Flags,
            TxSequenceID=dict(Ordinal=self.TxSequenceID.Ordinal, TimeStamp=self.TxSequenceID.TimeStamp),
            TxSequenceNumber=self.TxSequenceNumber,
            PreviousTxSequenceNumber=self.PreviousTxSequenceNumber))
        if self.Flags & _CG:
            out += guid_bytes(self.ConnectorQMGuid, self.STRUCTURE, "ConnectorQMGuid")
        return out

    @json_ready
    def to_dict(self) -> dict:
        d = {
            "Flags": self.Flags,
            "FlagFields": split_bits(self.Flags, TRANSACTION_FLAGS),
            "TxSequenceID": self.TxSequenceID.to_dict(),
            "TxSequenceNumber": self.TxSequenceNumber,
            "PreviousTxSequenceNumber": self.PreviousTxSequenceNumber,
        }
        if self.ConnectorQMGuid is not None:
            d["ConnectorQMGuid"] = guid_str(self.ConnectorQMGuid)
        return d


# ---------------------------------------------------------------------------
# [MS-MQMQ] 2.2.20.8 DebugHeader
# ---------------------------------------------------------------------------

DEBUG_FLAGS = {"QT": (0, 2), **{"X%d" % i: (i, 1) for i in range(2, 16)}}

DebugHeaderStruct = cs.Struct(
    "Flags" / cs.Int16ul,
    "Reserved" / cs.Int16ul,
)


@dataclass
class DebugHeader(OptionalHeader):
    """[MS-MQMQ] 2.2.20.8: 4 bytes, or 20 with a QueueIdentifier (Flags.QT = 1)."""

    STRUCTURE = "DebugHeader"

    Flags: int = 0
    Reserved: int = 0
    QueueIdentifier: bytes | None = None

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(DebugHeaderStruct, at)
        h = cls(v.Flags, v.Reserved)
        qt = v.Flags & 3
        if qt not in (0, 1):
            # the layout of any other queue type is not defined: not recoverable
            raise DecodeError(cls.STRUCTURE, "Flags", at, "QT must be 0x0 or 0x1, got 0x%x" % qt)
        pos = at + 4
        if qt == 1:
            h.QueueIdentifier = cur.take(pos, 16, "QueueIdentifier", "Flags.QT = 1 announces a queue GUID")
            pos += 16
        return h, pos

    def encode(self) -> bytes:
        out = DebugHeaderStruct.build(dict(Flags=self.Flags, Reserved=self.Reserved))
        if self.Flags & 3 == 1:
            out += guid_bytes(self.QueueIdentifier, self.STRUCTURE, "QueueIdentifier")
        return out

    @json_ready
    def to_dict(self) -> dict:
        d = {"Flags": self.Flags, "FlagFields": split_bits(self.Flags, DEBUG_FLAGS), "Reserved": self.Reserved}
        if self.QueueIdentifier is not None:
            d["QueueIdentifier"] = guid_str(self.QueueIdentifier)
        return d


# ---------------------------------------------------------------------------
# [MS-MQQB] 2.2.4.1 OrderAck Body and 2.2.5.1 FinalAck Body
# (MessagePropertiesHeader.MessageBody layouts, MessageSize 0x24)
# ---------------------------------------------------------------------------

OrderAckBodyStruct = cs.Struct(
    "TxSequenceID" / TxSequenceIDStruct,
    "TxSequenceNumber" / cs.Int32ul,
    "TxPreviousSequenceNumber" / cs.Int32ul,
    "Reserved" / cs.Bytes(20),
)

FinalAckBodyStruct = cs.Struct(
    "TxSequenceID" / TxSequenceIDStruct,
    "TxSequenceNumber" / cs.Int32ul,
    "TxPreviousSequenceNumber" / cs.Int32ul,
    "SourceGUID" / GUID,
    "MessageID" / cs.Int32ul,
)


def _check_seq(cur: Cursor, at: int, seq: int, prev: int) -> None:
    if seq == 0:
        cur.violation("TxSequenceNumber", at + 8, "valid range is 0x00000001..0xFFFFFFFF, got 0")
    if prev == 0xFFFFFFFF:
        cur.violation("TxPreviousSequenceNumber", at + 12, "valid range is 0x00000000..0xFFFFFFFE")


@dataclass
class OrderAckBody(OptionalHeader):
    """[MS-MQQB] 2.2.4.1: 36 bytes."""

    STRUCTURE = "OrderAckBody"

    TxSequenceID: TxSequenceID = field(default_factory=TxSequenceID)
    TxSequenceNumber: int = 1
    TxPreviousSequenceNumber: int = 0
    Reserved: bytes = b"\x00" * 20

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(OrderAckBodyStruct, at)
        _check_seq(cur, at, v.TxSequenceNumber, v.TxPreviousSequenceNumber)
        if v.TxSequenceNumber != 0 and v.TxPreviousSequenceNumber != v.TxSequenceNumber - 1:
            cur.violation("TxPreviousSequenceNumber", at + 12,
                          "MUST be TxSequenceNumber - 1 (%d), got %d"
                          % (v.TxSequenceNumber - 1, v.TxPreviousSequenceNumber))
        return cls(TxSequenceID(v.TxSequenceID.Ordinal, v.TxSequenceID.TimeStamp),
                   v.TxSequenceNumber, v.TxPreviousSequenceNumber, bytes(v.Reserved)), at + 36

    def encode(self) -> bytes:
        return OrderAckBodyStruct.build(dict(
            TxSequenceID=self.TxSequenceID.to_dict(), TxSequenceNumber=self.TxSequenceNumber,
            TxPreviousSequenceNumber=self.TxPreviousSequenceNumber, Reserved=self.Reserved))

    @json_ready
    def to_dict(self) -> dict:
        return {"TxSequenceID": self.TxSequenceID.to_dict(), "TxSequenceNumber": self.TxSequenceNumber,
                "TxPreviousSequenceNumber": self.TxPreviousSequenceNumber, "Reserved": self.Reserved}


@dataclass
class FinalAckBody(OptionalHeader):
    """[MS-MQQB] 2.2.5.1: 36 bytes."""

    STRUCTURE = "FinalAckBody"

    TxSequenceID: TxSequenceID = field(default_factory=TxSequenceID)
    TxSequenceNumber: int = 1
    TxPreviousSequenceNumber: int = 0
    SourceGUID: bytes = b"\x00" * 16
    MessageID: int = 0

    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(FinalAckBodyStruct, at)
        _check_seq(cur, at, v.TxSequenceNumber, v.TxPreviousSequenceNumber)
        return cls(TxSequenceID(v.TxSequenceID.Ordinal, v.TxSequenceID.TimeStamp),
                   v.TxSequenceNumber, v.TxPreviousSequenceNumber, bytes(v.SourceGUID), v.MessageID), at + 36

    def encode(self) -> bytes:
        return FinalAckBodyStruct.build(dict(
            TxSequenceID=self.TxSequenceID.to_dict(), TxSequenceNumber=self.TxSequenceNumber,
            TxPreviousSequenceNumber=self.TxPreviousSequenceNumber,
            SourceGUID=guid_bytes(self.SourceGUID, self.STRUCTURE, "SourceGUID"), MessageID=self.MessageID))

    @json_ready
    def to_dict(self) -> dict:
        return {"TxSequenceID": self.TxSequenceID.to_dict(), "TxSequenceNumber": self.TxSequenceNumber,
                "TxPreviousSequenceNumber": self.TxPreviousSequenceNumber,
                "SourceGUID": guid_str(self.SourceGUID), "MessageID": self.MessageID}


# ---------------------------------------------------------------------------
# Which flag announces which header, and in which order they come
# ---------------------------------------------------------------------------

#: Where each announcing flag sits: (owner, name) -> bit mask of that
#: header's Flags integer ([MS-MQMQ] 2.2.19.1 / 2.2.19.2; bit 0 of the
#: specification's diagrams is the least significant bit, as [MS-MQQB] 4.1.7
#: shows: BaseHeader.Flags 0x0003 is priority 3).  EOD and EA are UserHeader
#: bits 26 and 27, which [MS-MQMQ] calls reserved (X3); see docs/msmq-headers.md.
FLAG_BITS: dict[tuple[str, str], int] = {
    ("BaseHeader", "SH"): 1 << 4,
    ("BaseHeader", "DH"): 1 << 5,
    ("UserHeader", "SH"): 1 << 19,
    ("UserHeader", "TH"): 1 << 20,
    ("UserHeader", "MP"): 1 << 21,
    ("UserHeader", "MQ"): 1 << 23,
    ("UserHeader", "AH"): 1 << 25,
    ("UserHeader", "EOD"): 1 << 26,
    ("UserHeader", "EODACK"): 1 << 27,
    ("UserHeader", "HH"): 1 << 28,
}

#: The headers after the UserHeader in the order the SPECIFICATIONS give
#: ([MS-MQMQ] 2.2.20; [MS-MQRR] 2.2.5.1 adds the two SRMP headers between
#: DebugHeader and SoapHeader).  Rows: (class or None, name, (owner, flag)).
#: ``None``: not this module's header (MessagePropertiesHeader is always
#: present, UserHeader.Flags.MP "MUST always be set"; SessionHeader is
#: session.py's).  The [MS-MQRR] ExtensionHeader chain is announced by no
#: flag: it follows the whole UserMessage (after BaseHeader.PacketSize bytes)
#: in a RemoteRead Message Packet Structure only; see RemoteReadExtensions.
OPTIONAL_HEADER_ORDER: tuple = (
    (TransactionHeader, "TransactionHeader", ("UserHeader", "TH")),
    (SecurityHeader, "SecurityHeader", ("UserHeader", "SH")),
    (None, "MessagePropertiesHeader", ("UserHeader", "MP")),
    (DebugHeader, "DebugHeader", ("BaseHeader", "DH")),
    (SRMPEnvelopeHeader, "SRMPEnvelopeHeader", ("UserHeader", "AH")),
    (CompoundMessageHeader, "CompoundMessageHeader", ("UserHeader", "AH")),
    (SoapHeader, "SoapHeader", ("UserHeader", "HH")),
    (MultiQueueFormatHeader, "MultiQueueFormatHeader", ("UserHeader", "MQ")),
    (None, "SessionHeader", ("BaseHeader", "SH")),
)

#: The order Microsoft's implementation parses (CQmPacket in the Windows CE
#: shared-source MSMQ, public): MultiQueueFormatHeader right after the
#: DebugHeader, then SRMP, EOD, EOD-ACK and SOAP.  It differs from the
#: specifications' order where MQ and AH/HH are set together; packet.py
#: chooses (see docs/msmq-headers.md).  EodHeader / EodAckHeader are defined
#: by no provided specification and are decoded opaque-by-size.
IMPLEMENTATION_HEADER_ORDER: tuple = (
    (TransactionHeader, "TransactionHeader", ("UserHeader", "TH")),
    (SecurityHeader, "SecurityHeader", ("UserHeader", "SH")),
    (None, "MessagePropertiesHeader", ("UserHeader", "MP")),
    (DebugHeader, "DebugHeader", ("BaseHeader", "DH")),
    (MultiQueueFormatHeader, "MultiQueueFormatHeader", ("UserHeader", "MQ")),
    (SRMPEnvelopeHeader, "SRMPEnvelopeHeader", ("UserHeader", "AH")),
    (CompoundMessageHeader, "CompoundMessageHeader", ("UserHeader", "AH")),
    (EodHeader, "EodHeader", ("UserHeader", "EOD")),
    (EodAckHeader, "EodAckHeader", ("UserHeader", "EODACK")),
    (SoapHeader, "SoapHeader", ("UserHeader", "HH")),
    (None, "SessionHeader", ("BaseHeader", "SH")),
)
