"""One MSMQ binary-protocol packet: ``decode_packet`` / ``encode_packet``.

Dispatch ([MS-MQQB] 3.1.5.1.1):

* no BaseHeader, Signature 0x5548 at offset 2, 24 bytes: Ping Packet (UDP 3527);
* BaseHeader.Flags.IN set: an internal packet; InternalHeader.Flags.PT selects
  SessionAck (1), EstablishConnection (2) or ConnectionParameters (3);
* BaseHeader.Flags.IN clear: a UserMessage Packet ([MS-MQMQ] 2.2.20); an
  OrderAck / FinalAck Packet ([MS-MQQB] 2.2.4 / 2.2.5) is a UserMessage whose
  BaseHeader.Flags are 0, whose DestinationQueue is order_queue$, whose Label is
  "QM Ordering Ack" and whose MessageClass is MQMSG_CLASS_ORDER_ACK (OrderAck)
  or >= 0x4000 (FinalAck); its MessageBody is decoded as the OrderAck / FinalAck
  Body.

UserMessage header order (each present iff its flag is set)::

    BaseHeader  UserHeader  [TransactionHeader TH]  [SecurityHeader SH]
    MessagePropertiesHeader (MP)  [DebugHeader base DH]
    [SRMPEnvelopeHeader AH] [CompoundMessageHeader AH] [SoapHeader HH]
    [MultiQueueFormatHeader MQ]          <- PacketSize ends here
    [SessionHeader base SH]              <- not counted in PacketSize

No I/O.  Errors: :class:`~mqcodec.errors.DecodeError` (structure, field,
absolute offset) and nothing else; ``lenient=True`` turns what can be stepped
over into :class:`~mqcodec.errors.DecodeWarning` s in ``packet.warnings`` and
keeps the bytes it could not decode in ``packet.unparsed``.  See docs/msmq.md.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from ..render import json_ready
from ..errors import DecodeError, DecodeWarning, EncodeError, Problems
from . import constants as C
from .base import (BaseHeader, ConnectionParametersHeader, EstablishConnectionHeader,
                   InternalHeader, PingPacket)
from .properties import MessagePropertiesHeader
from .session import SessionHeader
from .user import DirectQueueFormatName, PrivateQueueFormatNameId, UserHeader

from .optional_headers import FLAG_BITS, IMPLEMENTATION_HEADER_ORDER, OPTIONAL_HEADER_ORDER

if TYPE_CHECKING:  # the classes of Packet's attributes (module names: the attributes spell the class names)
    from . import base as _base, extensions as _ext, mqf as _mqf, optional_headers as _oh
    from . import properties as _props, security as _sec, session as _sess, srmp as _srmp, user as _user

__all__ = ["Packet", "decode_packet", "encode_packet", "decode_ping", "USER_MESSAGE_HEADERS"]

def _rows(order: tuple) -> tuple[tuple[str, str, str], ...]:
    """(attribute, flag owner, flag name) rows of an optional_headers order
    table, without the SessionHeader (which this module reads after
    PacketSize, see decode_packet)."""
    return tuple((name, owner, flag) for _cls, name, (owner, flag) in order if name != "SessionHeader")


#: The headers after the UserHeader in the order of [MS-MQMQ] 2.2.20, with the
#: two SRMP headers of [MS-MQRR] 2.2.5.1 between DebugHeader and SoapHeader
#: (one table: optional_headers.OPTIONAL_HEADER_ORDER).
USER_MESSAGE_HEADERS = _rows(OPTIONAL_HEADER_ORDER)
#: The order Microsoft's implementation parses (optional_headers.IMPLEMENTATION_HEADER_ORDER):
#: MultiQueueFormatHeader right after DebugHeader, and UserHeader bits 26/27
#: (reserved "X3" in [MS-MQMQ]) announcing EodHeader / EodAckHeader.
_IMPLEMENTATION_HEADERS = _rows(IMPLEMENTATION_HEADER_ORDER)
_EXTRA_USER_BITS = {flag: FLAG_BITS[("UserHeader", flag)] for flag in ("EOD", "EODACK")}

_ALL_HEADER_ATTRS = ("InternalHeader", "EstablishConnectionHeader", "ConnectionParametersHeader",
                     "UserHeader", "TransactionHeader", "SecurityHeader", "MessagePropertiesHeader",
                     "DebugHeader", "SRMPEnvelopeHeader", "CompoundMessageHeader", "EodHeader",
                     "EodAckHeader", "SoapHeader", "MultiQueueFormatHeader", "SessionHeader")

_STRAY = (struct.error, IndexError, KeyError, TypeError, ValueError, OverflowError, UnicodeError,
          RecursionError, MemoryError, AttributeError, NotImplementedError)


def _optional_class(name: str) -> Any:
    """The header class of optional_headers.py, or None when that module (or
    the class) is not available."""
    try:
        from . import optional_headers as oh  # noqa: WPS433 (lazy: written concurrently)
    except Exception:  # ImportError or a broken sibling: treat as absent
        return None
    return getattr(oh, name, None)


class Packet:
    """A decoded packet.  Attributes are the headers present (None when
    absent), named as the specifications name them."""

    BaseHeader: _base.BaseHeader | None
    InternalHeader: _base.InternalHeader | None
    EstablishConnectionHeader: _base.EstablishConnectionHeader | None
    ConnectionParametersHeader: _base.ConnectionParametersHeader | None
    UserHeader: _user.UserHeader | None
    TransactionHeader: _oh.TransactionHeader | None
    SecurityHeader: _sec.SecurityHeader | None
    MessagePropertiesHeader: _props.MessagePropertiesHeader | None
    DebugHeader: _oh.DebugHeader | None
    SRMPEnvelopeHeader: _srmp.SRMPEnvelopeHeader | None
    CompoundMessageHeader: _srmp.CompoundMessageHeader | None
    EodHeader: _srmp.EodHeader | None
    EodAckHeader: _srmp.EodAckHeader | None
    SoapHeader: _srmp.SoapHeader | None
    MultiQueueFormatHeader: _mqf.MultiQueueFormatHeader | None
    SessionHeader: _sess.SessionHeader | None
    OrderAckBody: _oh.OrderAckBody | None
    FinalAckBody: _oh.FinalAckBody | None
    RemoteReadExtensions: _ext.RemoteReadExtensions | None

    def __init__(self, kind: str = "UserMessage", BaseHeader: _base.BaseHeader | None = None,
                 **headers: Any) -> None:
        self.kind = kind
        self.BaseHeader = BaseHeader
        for name in _ALL_HEADER_ATTRS:
            setattr(self, name, headers.pop(name, None))
        #: OrderAck / FinalAck Body decoded from MessagePropertiesHeader.MessageBody
        self.OrderAckBody = headers.pop("OrderAckBody", None)
        self.FinalAckBody = headers.pop("FinalAckBody", None)
        #: [MS-MQRR] 2.2.5 ExtensionHeader chain after the UserMessage (remote_read=True)
        self.RemoteReadExtensions = headers.pop("RemoteReadExtensions", None)
        if headers:
            raise TypeError("unknown headers: %s" % ", ".join(headers))
        self.order = "spec"                 # header order used ("spec" or "implementation")
        self.unparsed = b""                 # lenient: bytes inside the packet not decoded
        self.trailing = b""                 # bytes after the packet (PacketSize [+ SessionHeader])
        self.truncated = False              # lenient: the input ended before PacketSize
        self.session_header_counted = True  # SessionAck: PacketSize includes the SessionHeader
        self.warnings: list[DecodeWarning] = []

    # ------------------------------------------------------------------
    def headers(self) -> list[tuple[str, Any]]:
        """(name, header) of every header present, in wire order."""
        out: list[tuple[str, Any]] = []
        if self.BaseHeader is not None:
            out.append(("BaseHeader", self.BaseHeader))
        if self.InternalHeader is not None:
            out.append(("InternalHeader", self.InternalHeader))
        for name in ("EstablishConnectionHeader", "ConnectionParametersHeader", "UserHeader"):
            if getattr(self, name) is not None:
                out.append((name, getattr(self, name)))
        for name, _o, _f in (_IMPLEMENTATION_HEADERS if self.order == "implementation" else USER_MESSAGE_HEADERS):
            if getattr(self, name, None) is not None:
                out.append((name, getattr(self, name)))
        if self.SessionHeader is not None:
            out.append(("SessionHeader", self.SessionHeader))
        if self.RemoteReadExtensions is not None:
            out.append(("RemoteReadExtensions", self.RemoteReadExtensions))
        return out

    @property
    def MessageBody(self) -> bytes | None:
        mp = self.MessagePropertiesHeader
        return None if mp is None else mp.MessageBody

    @property
    def Label(self) -> str | None:
        mp = self.MessagePropertiesHeader
        return None if mp is None else mp.Label

    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = {"packet": self.kind}
        for name, h in self.headers():
            d[name] = h.to_dict()
        if self.OrderAckBody is not None:
            d["OrderAckBody"] = self.OrderAckBody.to_dict()
        if self.FinalAckBody is not None:
            d["FinalAckBody"] = self.FinalAckBody.to_dict()
        if self.unparsed:
            d["unparsed"] = self.unparsed
        if self.truncated:
            d["truncated"] = True
        if self.trailing:
            d["trailing"] = self.trailing
        if self.warnings:
            d["warnings"] = [w.to_dict() for w in self.warnings]
        return d

    def encode(self) -> bytes:
        return encode_packet(self)

    def __repr__(self) -> str:
        return "<Packet %s: %s>" % (self.kind, " ".join(n for n, _ in self.headers()))


# ====================================================================== decode


def decode_ping(data: bytes, *, lenient: bool = False) -> PingPacket:
    """Decode a [MS-MQQB] 2.2.7 Ping Packet (24 bytes, no BaseHeader)."""
    data = _as_bytes(data)
    p, pos = PingPacket.decode(data, 0)
    if len(data) > pos:
        p.trailing = data[pos:]
        p.warnings.append(DecodeWarning("PingPacket", "", pos, "%d bytes after the 24-byte Ping Packet"
                                        % (len(data) - pos)))
    return p


def _as_bytes(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise DecodeError("BaseHeader", "", 0, "input is %s, not bytes" % type(data).__name__)


def _is_ping(data: bytes) -> bool:
    return (len(data) >= 4 and data[2:4] == b"\x48\x55"
            and not (len(data) >= 8 and data[4:8] == C.BASE_SIGNATURE_BYTES))


def decode_packet(data: bytes, *, lenient: bool = False, order: str = "spec",
                  remote_read: bool = False) -> Packet | PingPacket:
    """Decode exactly one packet from ``data`` (bytes from its first byte).

    Returns a :class:`Packet` (or a :class:`~mqcodec.msmq.base.PingPacket`).
    Bytes after the packet are kept in ``.trailing`` with a warning.
    ``order="implementation"`` parses the UserMessage headers in the order of
    Microsoft's implementation (MultiQueueFormatHeader after DebugHeader;
    UserHeader bits 26/27 announce EodHeader/EodAckHeader) instead of the
    specifications' order.  ``remote_read=True`` reads the input as an
    [MS-MQRR] 2.2.5 Message Packet Structure: when bytes follow the
    UserMessage (PacketSize bytes, plus the SessionHeader if any), they are
    decoded as the ExtensionHeader chain (``packet.RemoteReadExtensions``).
    """
    data = _as_bytes(data)
    if order not in ("spec", "implementation"):
        raise ValueError("order must be 'spec' or 'implementation'")
    if _is_ping(data):
        return decode_ping(data, lenient=lenient)
    try:
        return _decode(data, lenient, order, remote_read)
    except DecodeError:
        raise
    except _STRAY as exc:  # pragma: no cover - a bug, but never a crash for the caller
        raise DecodeError("Packet", "", 0, "undecodable: %s: %s" % (type(exc).__name__, exc)) from None


def _decode(data: bytes, lenient: bool, order: str, remote_read: bool = False) -> Packet:
    warnings: list[DecodeWarning] = []
    p = Problems(lenient, warnings)
    base, pos = BaseHeader.decode(data, 0)
    size = base.PacketSize
    assert size is not None  # a decoded BaseHeader has its PacketSize
    if size < C.BASE_HEADER_SIZE:
        raise DecodeError("BaseHeader", "PacketSize", 8, "PacketSize %d is below the 16-byte BaseHeader" % size)
    if size > C.MAX_PACKET_SIZE:
        raise DecodeError("BaseHeader", "PacketSize", 8, "PacketSize %d above the maximum 0x00400000 (%d)"
                          % (size, C.MAX_PACKET_SIZE))
    truncated = size > len(data)
    if truncated:
        p.error("BaseHeader", "PacketSize", 8, "PacketSize %d but the input holds %d bytes"
                % (size, len(data)))
    end = min(size, len(data))
    f = base.Flags
    if f.TR and not f.DH:
        p.error("BaseHeader", "Flags", 2, "TR (tracing) is set but DH is clear: TR requires a DebugHeader")
    if f.IN:
        pkt = _decode_internal(data, base, end, p)
    else:
        pkt = _decode_user_message(data, base, end, p, order, remote_read)
    pkt.truncated = truncated
    pkt.warnings = warnings
    return pkt


def _rest(pkt: Packet, data: bytes, pos: int, end: int, p: Problems, structure: str, reason: str) -> None:
    """Bytes between ``pos`` and ``end`` that no flag explains."""
    if pos < end:
        p.error(structure, "", pos, reason % (end - pos))
        pkt.unparsed = data[pos:end]


def _trailing(pkt: Packet, data: bytes, pos: int, p: Problems) -> None:
    if pos < len(data):
        pkt.trailing = data[pos:]
        p.note("Packet", "", pos, "%d bytes after the end of the packet" % (len(data) - pos))


def _decode_internal(data: bytes, base: BaseHeader, end: int, p: Problems) -> Packet:
    f = base.Flags
    pkt = Packet("Internal", base)
    if f.DH:
        p.error("BaseHeader", "Flags", 2, "DH is set in an internal packet: only a UserMessage Packet "
                "carries a DebugHeader")
    if base.TimeToReachQueue != C.INFINITE:
        p.note("BaseHeader", "TimeToReachQueue", 12, "0x%08X in an internal packet, MUST be 0xFFFFFFFF"
               % base.TimeToReachQueue)
    pos = C.BASE_HEADER_SIZE
    try:
        ih, pos = InternalHeader.decode(data, pos, end)
    except DecodeError as exc:
        if not p.lenient:
            raise
        p.stepped_over(exc)
        pkt.unparsed = data[pos:end]
        _trailing(pkt, data, end, p)
        return pkt
    pkt.InternalHeader = ih
    pt = ih.Flags.PT
    size = base.PacketSize
    assert size is not None  # a decoded BaseHeader has its PacketSize
    if pt not in C.PACKET_TYPES:
        # "Any value not specified ... MUST be treated as an error": the layout is unknown
        p.error("InternalHeader", "Flags", 18, "PT 0x%X is not a packet type (1, 2 or 3)" % pt)
        pkt.unparsed = data[pos:end]
        _trailing(pkt, data, end, p)
        return pkt
    pkt.kind = C.PACKET_TYPES[pt]
    if ih.Flags.CS and pt == C.PT_SESSION_ACK:
        p.note("InternalHeader", "Flags", 18, "CS (connection refused) is set in a SessionAck Packet")
    if pt == C.PT_SESSION_ACK:
        if not f.SH:
            p.error("BaseHeader", "Flags", 2, "SessionAck Packet without BaseHeader.Flags.SH")
        if size == C.SESSION_ACK_PACKET_SIZE:
            sh_end, counted = end, True
        elif size == C.BASE_HEADER_SIZE + InternalHeader.SIZE:
            sh_end, counted = len(data), False        # the SessionHeader follows PacketSize
        else:
            p.error("BaseHeader", "PacketSize", 8, "PacketSize %d: a SessionAck Packet is 36 bytes "
                    "(or 20 when the SessionHeader is not counted)" % size)
            sh_end, counted = end, True
        pkt.session_header_counted = counted
        try:
            pkt.SessionHeader, pos = SessionHeader.decode(data, pos, sh_end)
        except DecodeError as exc:
            if not p.lenient:
                raise
            p.stepped_over(exc)
            pkt.unparsed = data[pos:sh_end]
            _trailing(pkt, data, sh_end, p)
            return pkt
        if counted:
            _rest(pkt, data, pos, end, p, "SessionAck", "%d bytes after the SessionHeader inside PacketSize")
            _trailing(pkt, data, end, p)
        else:
            _trailing(pkt, data, pos, p)
        return pkt
    if f.SH:
        p.error("BaseHeader", "Flags", 2, "SH announces a SessionHeader, which a%s %s Packet does not have"
                % ("n" if pkt.kind[0] in "AEIOU" else "", pkt.kind))
    cls, want = ((EstablishConnectionHeader, C.ESTABLISH_CONNECTION_PACKET_SIZE) if pt == C.PT_ESTABLISH_CONNECTION
                 else (ConnectionParametersHeader, C.CONNECTION_PARAMETERS_PACKET_SIZE))
    if size != want:
        p.error("BaseHeader", "PacketSize", 8, "PacketSize %d: a%s %s Packet is %d bytes"
                % (size, "n" if pkt.kind[0] in "AEIOU" else "", pkt.kind, want))
    try:
        h, pos = cls.decode(data, pos, end, lenient=p.lenient, warnings=p.warnings)
    except DecodeError as exc:
        if not p.lenient:
            raise
        p.stepped_over(exc)
        pkt.unparsed = data[pos:end]
        _trailing(pkt, data, end, p)
        return pkt
    setattr(pkt, cls.STRUCTURE, h)
    _rest(pkt, data, pos, end, p, pkt.kind, "%d bytes inside PacketSize after the " + cls.STRUCTURE)
    _trailing(pkt, data, end, p)
    return pkt


def _flag(base: BaseHeader, uh: UserHeader, owner: str, name: str) -> int:
    if owner == "BaseHeader":
        return base.Flags.get(name)
    if name in _EXTRA_USER_BITS:
        return 1 if int(uh.Flags) & _EXTRA_USER_BITS[name] else 0
    return uh.Flags.get(name)


def _decode_user_message(data: bytes, base: BaseHeader, end: int, p: Problems, order: str,
                         remote_read: bool = False) -> Packet:
    pkt = Packet("UserMessage", base)
    pkt.order = order
    pos = C.BASE_HEADER_SIZE
    current = "UserHeader"
    try:
        uh, pos = UserHeader.decode(data, pos, end, lenient=p.lenient, warnings=p.warnings)
        pkt.UserHeader = uh
        table = _IMPLEMENTATION_HEADERS if order == "implementation" else USER_MESSAGE_HEADERS
        for name, owner, flag in table:
            if not _flag(base, uh, owner, flag):
                continue
            current = name
            if name == "MessagePropertiesHeader":
                cls = MessagePropertiesHeader
            else:
                cls = _optional_class(name)
                if cls is None:
                    raise DecodeError(name, "", pos, "%s.Flags.%s announces a %s, which this build cannot "
                                      "decode (optional_headers unavailable)" % (owner, flag, name))
            if pos >= end:
                raise DecodeError(name, "", pos, "%s.Flags.%s announces a %s but the packet ends at %d"
                                  % (owner, flag, name, end))
            h, nxt = cls.decode(data, pos, end, lenient=p.lenient, warnings=p.warnings)
            if not pos < nxt <= end:
                raise DecodeError(name, "", pos, "header decoder returned offset %d outside %d..%d"
                                  % (nxt, pos + 1, end))
            setattr(pkt, name, h)
            pos = nxt
            if getattr(h, "truncated", False):
                break
        current = "UserMessage"
        _rest(pkt, data, pos, end, p, "UserMessage",
              "%d bytes inside PacketSize follow the last header the flags announce")
    except DecodeError as exc:
        if not p.lenient:
            raise
        p.stepped_over(exc)
        pkt.unparsed = data[pos:end]
    except _STRAY as exc:
        err = DecodeError(current, "", pos, "undecodable: %s: %s" % (type(exc).__name__, exc))
        if not p.lenient:
            raise err from None
        p.stepped_over(err)
        pkt.unparsed = data[pos:end]
    if pkt.UserHeader is not None and pkt.MessagePropertiesHeader is not None:
        _cross_checks(pkt, p)
        _classify(pkt, p)
    stop = end
    if base.Flags.SH:
        if base.PacketSize is not None and end < base.PacketSize:  # truncated before the SessionHeader
            p.error("SessionHeader", "", end, "BaseHeader.Flags.SH announces a SessionHeader after "
                    "PacketSize, but the input ends first")
        else:
            try:
                pkt.SessionHeader, stop = SessionHeader.decode(data, end, len(data))
            except DecodeError as exc:
                if not p.lenient:
                    raise DecodeError("SessionHeader", exc.field, exc.offset,
                                      "BaseHeader.Flags.SH announces a SessionHeader after PacketSize: "
                                      + exc.reason) from None
                p.stepped_over(exc)
    if remote_read and stop < len(data):
        cls = _optional_class("RemoteReadExtensions")
        if cls is None:
            p.error("ExtensionHeader", "", stop, "the ExtensionHeader chain cannot be decoded "
                    "(optional_headers unavailable)")
        else:
            try:
                pkt.RemoteReadExtensions, stop = cls.decode(data, stop, len(data), lenient=p.lenient,
                                                            warnings=p.warnings)
            except DecodeError as exc:
                if not p.lenient:
                    raise
                p.stepped_over(exc)
    _trailing(pkt, data, stop, p)
    return pkt


def _cross_checks(pkt: Packet, p: Problems) -> None:
    base, uh, mp = pkt.BaseHeader, pkt.UserHeader, pkt.MessagePropertiesHeader
    assert base is not None and uh is not None and mp is not None  # a user message (the caller checks)
    ack = mp.Flags.value & 0x0F
    if ack and uh.Flags.AQ == 0:
        p.note("UserHeader", "Flags", 60, "MessagePropertiesHeader.Flags requests acknowledgments "
               "(0x%X) but no AdminQueue is given (AQ = 0)" % ack)
    if not ack and uh.Flags.AQ != 0:
        dq = uh.DestinationQueue
        at = 64 + (len(dq.encode(48)) if dq is not None else 0)
        p.note("UserHeader", "AdminQueue", at, "an AdminQueue is given but MessagePropertiesHeader.Flags "
               "requests no acknowledgment")
    if uh.Flags.TH and base.Flags.PR != 0:
        p.note("BaseHeader", "Flags", 2, "PR is %d in a transactional message, MUST be 0" % base.Flags.PR)
    if uh.Flags.AH and pkt.SRMPEnvelopeHeader is None and not pkt.unparsed and not mp.truncated:
        p.note("UserHeader", "Flags", 60, "AH is set but no SRMPEnvelopeHeader was decoded")


def _is_order_queue(uh: UserHeader) -> bool:
    q = uh.DestinationQueue
    if uh.Flags.DQ == 3 and isinstance(q, PrivateQueueFormatNameId):
        return q.PrivateQueueIdentifier == C.ORDER_QUEUE_ID
    if uh.Flags.DQ == 7 and isinstance(q, DirectQueueFormatName):
        return q.DirectFormatName.upper().endswith("\\PRIVATE$\\ORDER_QUEUE$")
    return False


def _classify(pkt: Packet, p: Problems) -> None:
    """OrderAck / FinalAck identification ([MS-MQQB] 3.1.5.1.1) and their bodies."""
    base, uh, mp = pkt.BaseHeader, pkt.UserHeader, pkt.MessagePropertiesHeader
    assert base is not None and uh is not None and mp is not None  # a user message (the caller checks)
    if int(base.Flags) != 0 or not _is_order_queue(uh) or mp.Label != C.ORDER_ACK_LABEL:
        return
    if mp.MessageClass == C.MQMSG_CLASS["MQMSG_CLASS_ORDER_ACK"]:
        pkt.kind, body_name = "OrderAck", "OrderAckBody"
    elif mp.MessageClass >= 0x4000:
        pkt.kind, body_name = "FinalAck", "FinalAckBody"
    else:
        return
    cls = _optional_class(body_name)
    body = mp.MessageBody
    if cls is None or mp.truncated:
        return
    try:
        h, n = cls.decode(body, 0, len(body), lenient=True, warnings=[])
    except DecodeError as exc:
        p.note(body_name, exc.field, exc.offset, "MessageBody does not decode as the %s: %s"
               % (body_name, exc.reason))
        return
    except _STRAY:  # pragma: no cover
        return
    if n != len(body):
        p.note(body_name, "", n, "MessageSize is %d, the %s is 36 bytes" % (len(body), body_name))
    setattr(pkt, body_name, h)


# ====================================================================== encode


def encode_packet(packet: Packet | PingPacket) -> bytes:
    """The bytes of ``packet``: identical to the decoded input for any packet
    ``decode_packet`` returned (padding and reserved values are kept), except
    ``packet.trailing``, which is not part of the packet.  A BaseHeader whose
    PacketSize is None gets the computed size."""
    if isinstance(packet, PingPacket):
        return packet.encode()
    if not isinstance(packet, Packet) or packet.BaseHeader is None:
        raise EncodeError("Packet", "BaseHeader", "a Packet with a BaseHeader is needed")
    base = packet.BaseHeader
    body = bytearray()
    session_after = b""
    for name, h in packet.headers():
        if name == "BaseHeader":
            continue
        if name == "RemoteReadExtensions":
            continue
        if name == "SessionHeader":
            enc = h.encode()
            if packet.InternalHeader is not None and packet.session_header_counted:
                body += enc
            else:
                session_after = enc
            continue
        enc = h.encode()
        if len(enc) % 4 and not getattr(h, "truncated", False) and name != "UserHeader":
            raise EncodeError(name, "", "encodes to %d bytes, not a multiple of 4" % len(enc))
        body += enc
    body += packet.unparsed
    if base.PacketSize is None:
        size = C.BASE_HEADER_SIZE + len(body)
        if size > C.MAX_PACKET_SIZE:
            raise EncodeError("BaseHeader", "PacketSize", "packet of %d bytes above 0x00400000" % size)
        header = BaseHeader(VersionNumber=base.VersionNumber, Reserved=base.Reserved, Flags=base.Flags,
                            Signature=base.Signature, PacketSize=size,
                            TimeToReachQueue=base.TimeToReachQueue).encode()
    else:
        header = base.encode()
    ext = packet.RemoteReadExtensions.encode() if packet.RemoteReadExtensions is not None else b""
    return header + bytes(body) + session_after + ext
