"""MSMQ report (trace) messages: building the TraceMessage of [MS-MQQB]
3.1.5.8.9 and parsing report labels and bodies.

Pure logic, no I/O, no clock: the time a trace message is stamped with is an
argument.  Nothing here encodes packets; :meth:`TraceMessage.label_bytes` and
:meth:`TraceMessage.body_bytes` give the UTF-16LE text the packet codec puts in
MessagePropertiesHeader.Label / MessageBody.

The grammar, quoted from [MS-MQQB] 3.1.5.8.9 (seed 000) and the report
message documentation (seed 003)::

    label = qm-id %x3A message-id %x3A hops SP "received by" SP computer
            SP "at" SP time-date %x0000
    qm-id = 4HEXDIG        ; first four hexadecimal digits of the source queue identifier
    message-id = 8HEXDIG   ; hexadecimal form of the UserHeader.MessageID field
    hops = 2HEXDIG         ; MUST be set to the UserHeader.Flags.RC field
    computer = GUID        ; MUST be set to UserHeader.SourceQueueManager field
    time-date = hour SP ("AM" / "PM") SP date
    hour = 2DIGIT ":" 2DIGIT [":" 2DIGIT]   ; ANSI and Military
    date = day "," month SP 2DIGIT SP year  ; day, month day year
    month = "Jan" / "Feb" / ... / "Dec"
    day = "Mon" / "Tue" / "Wed" / "Thu" / "Fri" / "Sat" / "Sun"
    year = 2DIGIT
    GUID = 8HEXDIG "-" 4HEXDIG "-" 4HEXDIG "-" 4HEXDIG "-" 12HEXDIG

    Report = "<MESSAGE ID>" id "</MESSAGE ID>" CR LF
             "<TARGET QUEUE>" queue "</TARGET QUEUE>" CR LF

    seed 003 label forms:  gggg:dddd:hh sent from <computer> to <address> at <time>
                           gggg:dddd:hh received by <computer> at <time>
                           Report Message Conflict
    seed 003 body forms:   <MESSAGE ID>..</MESSAGE ID> <TARGET QUEUE>..</TARGET QUEUE>
                           <NEXT HOP>..</NEXT HOP> <HOP COUNT>..</HOP COUNT>
                           (conflict) <ORIGINAL QUEUE>..</ORIGINAL QUEUE> <MESSAGE ID>..
                           <TARGET QUEUE>.. <NEXT HOP>..

Readings taken where the text is unclear are listed in docs/msmq-semantics.md.
"""
from __future__ import annotations

import datetime as _dt
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Union

from ..errors import DecodeError, EncodeError

__all__ = [
    "MQMSG_CLASS_REPORT",
    "MQ_OK",
    "REPORT_MESSAGE_CONFLICT",
    "ReportParseError",
    "TracedUserMessage",
    "TraceMessage",
    "OpenQueueRequest",
    "TraceDiscarded",
    "TraceEnqueue",
    "ReportTime",
    "ReceivedByLabel",
    "SentFromLabel",
    "ConflictLabel",
    "ReportBody",
    "ConflictReportBody",
    "public_format_name",
    "format_guid",
    "trace_message_for",
    "after_open_queue",
    "send_trace_message",
    "parse_report_label",
    "parse_report_body",
]

# [MS-MQMQ] 2.2.18.1.6 Message Class Identifiers: MQMSG_CLASS_REPORT = 0x0001
MQMSG_CLASS_REPORT = 0x0001
# [MS-MQDMPR] 3.1.7.1.5 Open Queue: MQ_OK (0x00000000)
MQ_OK = 0x00000000

REPORT_MESSAGE_CONFLICT = "Report Message Conflict"
# [MS-MQDMPR] 3.1.1.12: "Label: A text string that MUST NOT exceed 249 characters in length"
# (the terminating %x0000 makes the 250 WCHARs of MessagePropertiesHeader.LabelLength)
MAX_LABEL_CHARACTERS = 249

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun",
          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # datetime.weekday() order

_HEX = frozenset("0123456789abcdefABCDEF")
_DIGIT = frozenset("0123456789")
CRLF = "\r\n"
LF = "\n"
#: the line ends a body may use between its elements: CR LF per the ABNF, LF
#: as written by tools that normalise line ends (the form read is kept)
LINE_ENDS = (CRLF, LF)


class ReportParseError(DecodeError):
    """A report label or body that does not follow its grammar.

    ``structure`` is ``"ReportLabel"`` or ``"ReportBody"``; ``offset`` is the
    character position in the text when the caller passed ``str``, the byte
    position when the caller passed UTF-16LE ``bytes``.
    """


# ---------------------------------------------------------------------------
# GUIDs and format names

GuidLike = Union[uuid.UUID, str, bytes, bytearray]


def _as_uuid(value: GuidLike, field_name: str, structure: str = "TraceMessage") -> uuid.UUID:
    """A GUID from a uuid.UUID, its text form, or its 16 wire bytes (the
    [MS-DTYP] 2.3.4 GUID layout: Data1..Data3 little-endian)."""
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, (bytes, bytearray)):
        if len(value) != 16:
            raise EncodeError(structure, field_name, "a GUID is 16 bytes, got %d" % len(value))
        return uuid.UUID(bytes_le=bytes(value))
    if isinstance(value, str):
        try:
            return uuid.UUID(value.strip("{}"))
        except ValueError:
            raise EncodeError(structure, field_name, "not a GUID: %r" % value) from None
    raise EncodeError(structure, field_name, "not a GUID: %r" % (value,))


def format_guid(value: GuidLike) -> str:
    """The ABNF form XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX, upper-case hex
    digits as [MS-MQMQ] 2.1.3 spells HexDig (parsers accept either case)."""
    return str(_as_uuid(value, "GUID")).upper()


def public_format_name(queue_identifier: GuidLike) -> str:
    """[MS-MQMQ] 2.1.3: PublicName = "PUBLIC=" QueueGuid."""
    return "PUBLIC=" + format_guid(queue_identifier)


# ---------------------------------------------------------------------------
# time-date

@dataclass(frozen=True)
class ReportTime:
    """``time-date = hour SP ("AM" / "PM") SP date`` with every grammar field kept.

    ``second`` is None when the optional ``":" 2DIGIT`` is absent; ``year``
    is the two-digit year (0..99) exactly as written.
    """

    hour: int
    minute: int
    second: Optional[int]
    meridiem: str  # "AM" / "PM"
    day: str  # "Mon" .. "Sun"
    month: str  # "Jan" .. "Dec"
    day_of_month: int
    year: int  # 2DIGIT

    def __post_init__(self) -> None:
        for name in ("hour", "minute", "day_of_month", "year"):
            v = getattr(self, name)
            if not isinstance(v, int) or not 0 <= v <= 99:
                raise EncodeError("ReportTime", name, "2DIGIT needs 0..99, got %r" % (v,))
        if self.second is not None and (not isinstance(self.second, int) or not 0 <= self.second <= 99):
            raise EncodeError("ReportTime", "second", "2DIGIT needs 0..99, got %r" % (self.second,))
        if self.meridiem not in ("AM", "PM"):
            raise EncodeError("ReportTime", "meridiem", "must be AM or PM, got %r" % (self.meridiem,))
        if self.day not in DAYS:
            raise EncodeError("ReportTime", "day", "not a day name: %r" % (self.day,))
        if self.month not in MONTHS:
            raise EncodeError("ReportTime", "month", "not a month name: %r" % (self.month,))

    @classmethod
    def from_datetime(cls, when: _dt.datetime, *, seconds: bool = True) -> "ReportTime":
        """12-hour clock (01..12) with AM/PM, as the mandatory AM/PM of the
        grammar implies; midnight is 12 AM, noon 12 PM."""
        if not isinstance(when, _dt.datetime):
            raise EncodeError("ReportTime", "", "needs a datetime, got %r" % (when,))
        h12 = when.hour % 12 or 12
        return cls(
            hour=h12,
            minute=when.minute,
            second=when.second if seconds else None,
            meridiem="AM" if when.hour < 12 else "PM",
            day=DAYS[when.weekday()],
            month=MONTHS[when.month - 1],
            day_of_month=when.day,
            year=when.year % 100,
        )

    def to_text(self) -> str:
        hour = "%02d:%02d" % (self.hour, self.minute)
        if self.second is not None:
            hour += ":%02d" % self.second
        return "%s %s %s,%s %02d %02d" % (hour, self.meridiem, self.day, self.month,
                                          self.day_of_month, self.year)

    def to_datetime(self, *, century_pivot: int = 69) -> _dt.datetime:
        """A naive datetime (the label carries no time zone).

        Hours 01..12 are read on the 12-hour clock with AM/PM; 00 and 13..23
        (the "Military" of the grammar's comment) as 24-hour values.  Two-digit
        years below ``century_pivot`` are 20xx, the others 19xx (POSIX %y).
        Raises ReportParseError (offset 0) for impossible dates or a day name
        that does not match the date.
        """
        hour = self.hour
        if 1 <= hour <= 12:
            hour = hour % 12 + (12 if self.meridiem == "PM" else 0)
        year = self.year + (2000 if self.year < century_pivot else 1900)
        try:
            when = _dt.datetime(year, MONTHS.index(self.month) + 1, self.day_of_month,
                                hour, self.minute, self.second or 0)
        except ValueError as exc:
            raise ReportParseError("ReportLabel", "time-date", 0, str(exc)) from None
        if DAYS[when.weekday()] != self.day:
            raise ReportParseError("ReportLabel", "day", 0,
                                   "%s is a %s, not a %s" % (when.date(), DAYS[when.weekday()], self.day))
        return when


# ---------------------------------------------------------------------------
# labels

def _check_token(value: str, structure: str, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise EncodeError(structure, name, "must be a non-empty string")
    if any(c.isspace() or c == "\x00" for c in value):
        raise EncodeError(structure, name, "must not contain white space or NUL: %r" % value)
    return value


def _check_range(value: int, maximum: int, structure: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
        raise EncodeError(structure, name, "needs 0..0x%X, got %r" % (maximum, value))
    return value


@dataclass(frozen=True)
class ReceivedByLabel:
    """``qm-id:message-id:hops received by computer at time-date``.

    ``qm_id`` (4HEXDIG), ``message_id`` (8HEXDIG) and ``hops`` (2HEXDIG) are
    the numbers; ``computer`` the text (a GUID per [MS-MQQB], a computer
    name in labels other implementations write).  ``terminated``: the label
    ends with %x0000.
    """

    qm_id: int
    message_id: int
    hops: int
    computer: str
    time: ReportTime
    terminated: bool = True

    def __post_init__(self) -> None:
        _check_range(self.qm_id, 0xFFFF, "ReportLabel", "qm-id")
        _check_range(self.message_id, 0xFFFFFFFF, "ReportLabel", "message-id")
        _check_range(self.hops, 0xFF, "ReportLabel", "hops")
        _check_token(self.computer, "ReportLabel", "computer")

    @property
    def computer_guid(self) -> Optional[uuid.UUID]:
        try:
            return uuid.UUID(self.computer) if len(self.computer) == 36 else None
        except ValueError:
            return None

    def to_text(self) -> str:
        return "%04X:%08X:%02X received by %s at %s%s" % (
            self.qm_id, self.message_id, self.hops, self.computer, self.time.to_text(),
            "\x00" if self.terminated else "")

    def to_dict(self) -> dict:
        return {"form": "received by", "qm_id": self.qm_id, "message_id": self.message_id,
                "hops": self.hops, "computer": self.computer, "time": self.time.to_text(),
                "terminated": self.terminated}


@dataclass(frozen=True)
class SentFromLabel:
    """``gggg:dddd:hh sent from <computer> to <address> at <time>`` (seed 003).

    The seed gives no ABNF for this form; the prefix and time use the rules
    of the "received by" form, computer and address are white-space-free
    tokens.
    """

    qm_id: int
    message_id: int
    hops: int
    computer: str
    address: str
    time: ReportTime
    terminated: bool = True

    def __post_init__(self) -> None:
        _check_range(self.qm_id, 0xFFFF, "ReportLabel", "qm-id")
        _check_range(self.message_id, 0xFFFFFFFF, "ReportLabel", "message-id")
        _check_range(self.hops, 0xFF, "ReportLabel", "hops")
        _check_token(self.computer, "ReportLabel", "computer")
        _check_token(self.address, "ReportLabel", "address")

    def to_text(self) -> str:
        return "%04X:%08X:%02X sent from %s to %s at %s%s" % (
            self.qm_id, self.message_id, self.hops, self.computer, self.address,
            self.time.to_text(), "\x00" if self.terminated else "")

    def to_dict(self) -> dict:
        return {"form": "sent from", "qm_id": self.qm_id, "message_id": self.message_id,
                "hops": self.hops, "computer": self.computer, "address": self.address,
                "time": self.time.to_text(), "terminated": self.terminated}


@dataclass(frozen=True)
class ConflictLabel:
    """The label ``Report Message Conflict`` (seed 003)."""

    terminated: bool = True

    def to_text(self) -> str:
        return REPORT_MESSAGE_CONFLICT + ("\x00" if self.terminated else "")

    def to_dict(self) -> dict:
        return {"form": "conflict", "terminated": self.terminated}


ReportLabel = Union[ReceivedByLabel, SentFromLabel, ConflictLabel]


# ---------------------------------------------------------------------------
# bodies

def _check_element(value: Optional[str], structure: str, name: str, optional: bool = False) -> None:
    if value is None:
        if optional:
            return
        raise EncodeError(structure, name, "is required")
    if not isinstance(value, str):
        raise EncodeError(structure, name, "must be a string, got %r" % (value,))
    if "<" in value or "\r" in value or "\n" in value:
        raise EncodeError(structure, name, "must not contain '<', CR or LF: %r" % value)


def _element(tag: str, value: str) -> str:
    return "<%s>%s</%s>" % (tag, value, tag)


@dataclass(frozen=True)
class ReportBody:
    """``<MESSAGE ID>..</MESSAGE ID>`` CR LF ``<TARGET QUEUE>..</TARGET QUEUE>`` CR LF
    [``<NEXT HOP>..</NEXT HOP>`` CR LF [``<HOP COUNT>..</HOP COUNT>`` CR LF]].

    Element values are kept exactly as written between the tags (white
    space included) so that a parsed body re-encodes character for
    character; ``message_id_value`` and ``hop_count_value`` interpret them.
    ``trailer`` is what follows the last element (CR LF per the ABNF);
    ``line_end`` separates the elements: CR LF per the ABNF, or LF alone
    (the parser accepts both and keeps the one it read).
    """

    message_id: str
    target_queue: str
    next_hop: Optional[str] = None
    hop_count: Optional[str] = None
    trailer: str = CRLF
    line_end: str = CRLF

    def __post_init__(self) -> None:
        _check_element(self.message_id, "ReportBody", "MESSAGE ID")
        _check_element(self.target_queue, "ReportBody", "TARGET QUEUE")
        _check_element(self.next_hop, "ReportBody", "NEXT HOP", optional=True)
        _check_element(self.hop_count, "ReportBody", "HOP COUNT", optional=True)
        if self.hop_count is not None and self.next_hop is None:
            raise EncodeError("ReportBody", "HOP COUNT", "HOP COUNT follows NEXT HOP")
        _check_trailer(self.trailer, "ReportBody")
        _check_line_end(self.line_end, "ReportBody")

    @property
    def message_id_value(self) -> Optional[int]:
        return _hex_value(self.message_id)

    @property
    def hop_count_value(self) -> Optional[int]:
        return None if self.hop_count is None else _hex_value(self.hop_count)

    def to_text(self) -> str:
        parts = [_element("MESSAGE ID", self.message_id), _element("TARGET QUEUE", self.target_queue)]
        if self.next_hop is not None:
            parts.append(_element("NEXT HOP", self.next_hop))
        if self.hop_count is not None:
            parts.append(_element("HOP COUNT", self.hop_count))
        return self.line_end.join(parts) + self.trailer

    def to_dict(self) -> dict:
        return {"form": "report", "message_id": self.message_id, "target_queue": self.target_queue,
                "next_hop": self.next_hop, "hop_count": self.hop_count}


@dataclass(frozen=True)
class ConflictReportBody:
    """The conflict report body of seed 003: ORIGINAL QUEUE (the report
    queue that holds the report), MESSAGE ID, TARGET QUEUE, NEXT HOP."""

    original_queue: str
    message_id: str
    target_queue: str
    next_hop: Optional[str] = None
    trailer: str = CRLF
    line_end: str = CRLF

    def __post_init__(self) -> None:
        _check_element(self.original_queue, "ReportBody", "ORIGINAL QUEUE")
        _check_element(self.message_id, "ReportBody", "MESSAGE ID")
        _check_element(self.target_queue, "ReportBody", "TARGET QUEUE")
        _check_element(self.next_hop, "ReportBody", "NEXT HOP", optional=True)
        _check_trailer(self.trailer, "ReportBody")
        _check_line_end(self.line_end, "ReportBody")

    @property
    def message_id_value(self) -> Optional[int]:
        return _hex_value(self.message_id)

    def to_text(self) -> str:
        parts = [_element("ORIGINAL QUEUE", self.original_queue), _element("MESSAGE ID", self.message_id),
                 _element("TARGET QUEUE", self.target_queue)]
        if self.next_hop is not None:
            parts.append(_element("NEXT HOP", self.next_hop))
        return self.line_end.join(parts) + self.trailer

    def to_dict(self) -> dict:
        return {"form": "conflict", "original_queue": self.original_queue, "message_id": self.message_id,
                "target_queue": self.target_queue, "next_hop": self.next_hop}


def _check_trailer(trailer: str, structure: str) -> None:
    if not isinstance(trailer, str) or any(c not in "\r\n\x00" for c in trailer):
        raise EncodeError(structure, "trailer", "only CR, LF and NUL may follow the last element")


def _check_line_end(line_end: str, structure: str) -> None:
    if line_end not in LINE_ENDS:
        raise EncodeError(structure, "line_end", "is CR LF or LF, not %r" % (line_end,))


def _hex_value(text: str) -> Optional[int]:
    t = text.strip()
    if t and len(t) <= 16 and all(c in _HEX for c in t):
        return int(t, 16)
    return None


# ---------------------------------------------------------------------------
# the TraceMessage

@dataclass(frozen=True)
class TracedUserMessage:
    """The fields of a received UserMessage that a TraceMessage is built from
    (names as [MS-MQMQ] 2.2.19 / 2.2.20 give them)."""

    SourceQueueManager: GuidLike  # UserHeader.SourceQueueManager
    MessageID: int  # UserHeader.MessageID
    RC: int  # UserHeader.Flags.RC (hop count)
    QueueIdentifier: Optional[GuidLike]  # DebugHeader.QueueIdentifier (None when QT = 0)
    DestinationQueue: str  # UserHeader.DestinationQueue as format-name text
    TR: bool = True  # BaseHeader.Flags.TR
    # "the source queue identifier" whose first four hex digits make qm-id;
    # defaults to SourceQueueManager (see docs/msmq-semantics.md)
    SourceQueueIdentifier: Optional[GuidLike] = None

    @classmethod
    def from_mapping(cls, fields: Mapping[str, Any]) -> "TracedUserMessage":
        names = ("SourceQueueManager", "MessageID", "RC", "QueueIdentifier", "DestinationQueue",
                 "TR", "SourceQueueIdentifier")
        aliases = {"UserHeader.SourceQueueManager": "SourceQueueManager",
                   "UserHeader.MessageID": "MessageID", "UserHeader.Flags.RC": "RC",
                   "DebugHeader.QueueIdentifier": "QueueIdentifier",
                   "UserHeader.DestinationQueue": "DestinationQueue", "BaseHeader.Flags.TR": "TR"}
        kw = {}
        for key, value in fields.items():
            name = aliases.get(key, key)
            if name in names:
                kw[name] = value
        missing = [n for n in names[:5] if n not in kw]
        if missing:
            raise EncodeError("TraceMessage", missing[0], "field missing from the UserMessage fields")
        return cls(**kw)


@dataclass(frozen=True)
class TraceMessage:
    """The Message ADM element ([MS-MQDMPR] 3.1.1.12) named TraceMessage in
    [MS-MQQB] 3.1.5.8.9, with the attributes that section sets."""

    Class: int  # MQMSG_CLASS_REPORT ("Report")
    DestinationQueueFormatName: str
    DeliveryGuarantee: str  # "Express"
    Label: str  # includes the terminating %x0000
    Body: str
    label_fields: ReceivedByLabel = field(repr=False)
    body_fields: ReportBody = field(repr=False)

    ClassName = "Report"

    def label_bytes(self) -> bytes:
        """The Label as the Unicode (UTF-16LE) string carried on the wire."""
        return self.Label.encode("utf-16-le")

    def body_bytes(self) -> bytes:
        return self.Body.encode("utf-16-le")

    def to_dict(self) -> dict:
        return {"Class": self.Class, "ClassName": self.ClassName,
                "DestinationQueueFormatName": self.DestinationQueueFormatName,
                "DeliveryGuarantee": self.DeliveryGuarantee, "Label": self.Label, "Body": self.Body}

    @property
    def QueueIdentifier(self) -> uuid.UUID:
        """The GUID of the public DestinationQueueFormatName."""
        return uuid.UUID(self.DestinationQueueFormatName[len("PUBLIC="):])

    def to_packet_fields(self) -> dict:
        """The UserMessage Packet field values [MS-MQQB] 3.1.7.1.7 prescribes
        for a report message, keyed by their dotted spec names:
        MessagePropertiesHeader.MessageClass = MQMSG_CLASS_REPORT,
        UserHeader.DestinationQueue = DebugHeader.QueueIdentifier (a public
        queue, Flags.DQ 0x5), UserHeader.Flags.DM = 0x0 (express), the Label
        (text without its %x0000, as MessagePropertiesHeader.Label holds it;
        the header writes the terminator) and the MessageBody (UTF-16LE).

        UserHeader.DestinationQueue is a
        :class:`mqcodec.msmq.user.PublicQueueFormatName` when the packet
        codec is importable, else the GUID.  The other packet fields (the
        BaseHeader, SourceQueueManager, MessageID, ...) belong to whoever sends.
        """
        destination: Any = self.QueueIdentifier
        try:
            from .user import PublicQueueFormatName
        except ImportError:  # the packet codec is optional here
            pass
        else:
            destination = PublicQueueFormatName(destination)
        label = self.Label[:-1] if self.Label.endswith("\x00") else self.Label
        return {
            "UserHeader.DestinationQueue": destination,
            "UserHeader.Flags.DQ": 0x5,
            "UserHeader.Flags.DM": 0x0,
            "MessagePropertiesHeader.MessageClass": self.Class,
            "MessagePropertiesHeader.Label": label,
            "MessagePropertiesHeader.MessageBody": self.body_bytes(),
        }

    def to_message(self, **attributes: Any):
        """The TraceMessage as a :class:`mqcodec.msmq.queue_manager.Message`
        (the in-memory model), Body as UTF-16LE bytes."""
        from .queue_manager import Message

        return Message(Class=self.Class, DestinationQueueFormatName=self.DestinationQueueFormatName,
                       DeliveryGuarantee=self.DeliveryGuarantee, Label=self.Label,
                       Body=self.body_bytes(), **attributes)


def trace_message_for(user_message: Union[TracedUserMessage, Mapping[str, Any]], *,
                      computer: Optional[GuidLike] = None,
                      now: _dt.datetime,
                      seconds: bool = True) -> Optional[TraceMessage]:
    """Build the TraceMessage for a received UserMessage ([MS-MQQB] 3.1.5.8.9).

    Returns None when BaseHeader.Flags.TR is clear (no report is sent).
    ``computer`` overrides the "received by" computer, which the ABNF sets to
    UserHeader.SourceQueueManager; ``now`` is the time written after "at"
    (the caller's local time; no clock is read here).  Raises EncodeError for
    fields that cannot be written by the grammar.
    """
    if not isinstance(user_message, TracedUserMessage):
        user_message = TracedUserMessage.from_mapping(user_message)
    m = user_message
    if not m.TR:
        return None
    if m.QueueIdentifier is None:
        raise EncodeError("TraceMessage", "DebugHeader.QueueIdentifier",
                          "TR is set but the DebugHeader carries no QueueIdentifier")
    queue_id = _as_uuid(m.QueueIdentifier, "DebugHeader.QueueIdentifier")
    source_qm = _as_uuid(m.SourceQueueManager, "UserHeader.SourceQueueManager")
    source_id = source_qm if m.SourceQueueIdentifier is None else _as_uuid(
        m.SourceQueueIdentifier, "SourceQueueIdentifier")
    if computer is None:
        computer_text = format_guid(source_qm)
    elif isinstance(computer, str) and not _looks_like_guid(computer):
        computer_text = computer
    else:
        computer_text = format_guid(_as_uuid(computer, "computer"))
    if not isinstance(m.DestinationQueue, str):
        raise EncodeError("TraceMessage", "UserHeader.DestinationQueue", "needs format-name text")
    label = ReceivedByLabel(
        qm_id=int(format_guid(source_id)[:4], 16),
        message_id=_check_range(m.MessageID, 0xFFFFFFFF, "TraceMessage", "UserHeader.MessageID"),
        hops=_check_range(m.RC, 0xFF, "TraceMessage", "UserHeader.Flags.RC"),
        computer=computer_text,
        time=ReportTime.from_datetime(now, seconds=seconds),
        terminated=True,
    )
    if len(label.to_text()) - 1 > MAX_LABEL_CHARACTERS:
        raise EncodeError("TraceMessage", "Label", "%d characters: a Label MUST NOT exceed %d"
                          % (len(label.to_text()) - 1, MAX_LABEL_CHARACTERS))
    body = ReportBody(message_id="%08X" % m.MessageID, target_queue=m.DestinationQueue)
    return TraceMessage(
        Class=MQMSG_CLASS_REPORT,
        DestinationQueueFormatName=public_format_name(queue_id),
        DeliveryGuarantee="Express",
        Label=label.to_text(),
        Body=body.to_text(),
        label_fields=label,
        body_fields=body,
    )


def _looks_like_guid(text: str) -> bool:
    t = text.strip("{}")
    if len(t) != 36:
        return False
    try:
        uuid.UUID(t)
        return True
    except ValueError:
        return False


# --- Open Queue / Enqueue Message To An Open Queue outcome (h11 style) ------

@dataclass(frozen=True)
class OpenQueueRequest:
    """The Open Queue event ([MS-MQDMPR] 3.1.7.1.5) the protocol generates."""

    iFormatName: str
    iRequiredAccess: str = "SendAccess"  # QueueAccessType.SendAccess
    iSharedMode: str = "DenyNone"  # QueueShareMode.DenyNone

    @classmethod
    def for_trace(cls, trace: TraceMessage) -> "OpenQueueRequest":
        return cls(iFormatName=trace.DestinationQueueFormatName)


@dataclass(frozen=True)
class TraceDiscarded:
    """Open Queue returned rStatus != MQ_OK: the TraceMessage is discarded."""

    rStatus: int
    trace: TraceMessage


@dataclass(frozen=True)
class TraceEnqueue:
    """Generate Enqueue Message To An Open Queue ([MS-MQDMPR] 3.1.7.1.27)."""

    iOpenQueueDescriptor: Any
    iMessage: TraceMessage


def after_open_queue(trace: TraceMessage, rStatus: int,
                     rOpenQueueDescriptor: Any = None) -> Union[TraceDiscarded, TraceEnqueue]:
    """"If the rStatus returned by the Open Queue event is not MQ_OK
    (0x00000000), the protocol MUST discard TraceMessage; otherwise, the
    protocol MUST generate an Enqueue Message To An Open Queue event"."""
    if rStatus != MQ_OK:
        return TraceDiscarded(rStatus=rStatus, trace=trace)
    return TraceEnqueue(iOpenQueueDescriptor=rOpenQueueDescriptor, iMessage=trace)


def send_trace_message(trace: TraceMessage, queue_manager: Any, *, current_time: int,
                       **message_attributes: Any):
    """Run the Open Queue / Enqueue steps against an in-memory
    :class:`mqcodec.msmq.queue_manager.QueueManager`.

    Returns the TraceDiscarded outcome, or the EnqueueResult of the enqueue.
    """
    request = OpenQueueRequest.for_trace(trace)
    status, descriptor = queue_manager.open_queue(request.iFormatName, request.iRequiredAccess,
                                                  request.iSharedMode)
    outcome = after_open_queue(trace, status, descriptor)
    if isinstance(outcome, TraceDiscarded):
        return outcome
    return queue_manager.enqueue_message_to_open_queue(
        outcome.iOpenQueueDescriptor, trace.to_message(**message_attributes), current_time=current_time)


# ---------------------------------------------------------------------------
# parsing

class _Scanner:
    """Reads a text left to right; every failure names field and position."""

    def __init__(self, text: str, structure: str, unit: int):
        self.text = text
        self.pos = 0
        self.structure = structure
        self.unit = unit  # 1 for str input, 2 for UTF-16LE bytes input

    def fail(self, field_name: str, reason: str, at: Optional[int] = None) -> ReportParseError:
        return ReportParseError(self.structure, field_name, (self.pos if at is None else at) * self.unit, reason)

    def literal(self, lit: str, field_name: str) -> None:
        if not self.text.startswith(lit, self.pos):
            got = self.text[self.pos:self.pos + len(lit)]
            raise self.fail(field_name, "expected %r, found %r" % (lit, got))
        self.pos += len(lit)

    def chars(self, n: int, allowed: frozenset, field_name: str, what: str) -> str:
        chunk = self.text[self.pos:self.pos + n]
        for i, c in enumerate(chunk):
            if c not in allowed:
                raise self.fail(field_name, "expected %s, found %r" % (what, c), self.pos + i)
        if len(chunk) < n:
            raise self.fail(field_name, "expected %d %s, the text ends" % (n, what), self.pos + len(chunk))
        self.pos += n
        return chunk

    def hex(self, n: int, field_name: str) -> int:
        return int(self.chars(n, _HEX, field_name, "hexadecimal digit(s)"), 16)

    def digits(self, n: int, field_name: str) -> int:
        return int(self.chars(n, _DIGIT, field_name, "digit(s)"), 10)

    def token(self, field_name: str) -> str:
        start = self.pos
        while self.pos < len(self.text) and not (self.text[self.pos].isspace() or self.text[self.pos] == "\x00"):
            self.pos += 1
        if self.pos == start:
            raise self.fail(field_name, "expected a name, found %r" % self.text[start:start + 1])
        return self.text[start:self.pos]

    def choice(self, options, field_name: str) -> str:
        for opt in options:
            if self.text.startswith(opt, self.pos):
                self.pos += len(opt)
                return opt
        raise self.fail(field_name, "expected one of %s, found %r"
                        % ("/".join(options), self.text[self.pos:self.pos + 3]))

    def end(self, field_name: str) -> bool:
        """Optional %x0000 then end of text; returns whether the NUL was present."""
        terminated = False
        if self.text.startswith("\x00", self.pos):
            terminated = True
            self.pos += 1
        if self.pos != len(self.text):
            raise self.fail(field_name, "unexpected %r after the end of the label"
                            % self.text[self.pos:self.pos + 8])
        return terminated


def _as_text(data: Union[str, bytes, bytearray, memoryview], structure: str) -> tuple[str, int]:
    if isinstance(data, str):
        return data, 1
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        if len(raw) % 2:
            raise ReportParseError(structure, "", len(raw) - 1,
                                   "a UTF-16LE string has an even number of bytes, got %d" % len(raw))
        try:
            return raw.decode("utf-16-le"), 2
        except UnicodeDecodeError as exc:
            raise ReportParseError(structure, "", exc.start, "not UTF-16LE: %s" % exc.reason) from None
    raise TypeError("a report label or body is str or bytes, not %s" % type(data).__name__)


def _parse_time(s: _Scanner) -> ReportTime:
    hour = s.digits(2, "hour")
    s.literal(":", "hour")
    minute = s.digits(2, "hour")
    second = None
    if s.text.startswith(":", s.pos):
        s.pos += 1
        second = s.digits(2, "hour")
    s.literal(" ", "time-date")
    meridiem = s.choice(("AM", "PM"), "time-date")
    s.literal(" ", "time-date")
    day = s.choice(DAYS, "day")
    s.literal(",", "date")
    month = s.choice(MONTHS, "month")
    s.literal(" ", "date")
    dom = s.digits(2, "date")
    s.literal(" ", "date")
    year = s.digits(2, "year")
    return ReportTime(hour, minute, second, meridiem, day, month, dom, year)


def parse_report_label(data: Union[str, bytes, bytearray, memoryview]) -> ReportLabel:
    """Parse a report label in one of the three forms of seed 003.

    ``data`` is the label text, or its UTF-16LE bytes.  The terminating
    %x0000 is optional (``terminated`` records it).  Raises ReportParseError
    (structure "ReportLabel", the ABNF rule name as field, character or byte
    offset).
    """
    text, unit = _as_text(data, "ReportLabel")
    s = _Scanner(text, "ReportLabel", unit)
    if text.startswith(REPORT_MESSAGE_CONFLICT):
        s.pos = len(REPORT_MESSAGE_CONFLICT)
        return ConflictLabel(terminated=s.end("label"))
    qm_id = s.hex(4, "qm-id")
    s.literal(":", "label")
    message_id = s.hex(8, "message-id")
    s.literal(":", "label")
    hops = s.hex(2, "hops")
    s.literal(" ", "label")
    form = s.choice(("received by ", "sent from "), "label")
    computer = s.token("computer")
    address = None
    if form == "sent from ":
        s.literal(" to ", "label")
        address = s.token("address")
    s.literal(" at ", "label")
    time = _parse_time(s)
    terminated = s.end("label")
    if address is None:
        return ReceivedByLabel(qm_id, message_id, hops, computer, time, terminated)
    return SentFromLabel(qm_id, message_id, hops, computer, address, time, terminated)


_REPORT_TAGS = ("MESSAGE ID", "TARGET QUEUE", "NEXT HOP", "HOP COUNT")
_CONFLICT_TAGS = ("ORIGINAL QUEUE", "MESSAGE ID", "TARGET QUEUE", "NEXT HOP")
_REQUIRED = {"MESSAGE ID", "TARGET QUEUE", "ORIGINAL QUEUE"}


def parse_report_body(data: Union[str, bytes, bytearray, memoryview]) -> Union[ReportBody, ConflictReportBody]:
    """Parse a report body (``<MESSAGE ID>`` first) or a conflict report body
    (``<ORIGINAL QUEUE>`` first).  Elements appear in the documented order,
    each followed by a line end; the optional ones may be left off at the end.

    Line ends: CR LF per the ABNF, or LF alone (a body whose line ends were
    normalised); the first line end read decides, and every later one must be
    the same (``line_end`` keeps it, so ``to_text()`` gives back the text read).
    Raises ReportParseError (structure "ReportBody", the tag as field).
    """
    text, unit = _as_text(data, "ReportBody")
    s = _Scanner(text, "ReportBody", unit)
    tags = _CONFLICT_TAGS if text.startswith("<ORIGINAL QUEUE>") else _REPORT_TAGS
    values: dict[str, str] = {}
    trailer = ""
    line_end: Optional[str] = None
    for i, tag in enumerate(tags):
        if i > 0:
            # after an element: a line end and another element, or the trailer
            rest = text[s.pos:]
            if all(c in "\r\n\x00" for c in rest) and not any(rest.startswith(e + "<") for e in LINE_ENDS):
                if tag in _REQUIRED:
                    raise s.fail(tag, "the required <%s> element is missing" % tag)
                trailer = rest
                s.pos = len(text)
                break
            if line_end is None:
                line_end = CRLF if rest.startswith(CRLF) else LF
                if not rest.startswith(line_end):
                    raise s.fail(tags[i - 1], "expected a line end (CR LF or LF), found %r" % rest[:2])
            elif not rest.startswith(line_end):
                raise s.fail(tags[i - 1], "expected %r, the line end used before it (CR LF and LF are not mixed),"
                             " found %r" % (line_end, rest[:len(line_end)]))
            s.pos += len(line_end)
        s.literal("<%s>" % tag, tag)
        close = "</%s>" % tag
        end = text.find(close, s.pos)
        if end < 0:
            raise s.fail(tag, "no closing %s" % close)
        value = text[s.pos:end]
        for j, c in enumerate(value):
            if c in "<\r\n":
                raise s.fail(tag, "unexpected %r inside <%s>" % (c, tag), s.pos + j)
        values[tag] = value
        s.pos = end + len(close)
    else:
        trailer = text[s.pos:]
        for j, c in enumerate(trailer):
            if c not in "\r\n\x00":
                raise s.fail(tags[-1], "unexpected %r after the last element" % c, s.pos + j)
        s.pos = len(text)
    line_end = line_end or CRLF  # never None here: every form has two required elements
    if tags is _CONFLICT_TAGS:
        return ConflictReportBody(values["ORIGINAL QUEUE"], values["MESSAGE ID"], values["TARGET QUEUE"],
                                  values.get("NEXT HOP"), trailer, line_end)
    return ReportBody(values["MESSAGE ID"], values["TARGET QUEUE"], values.get("NEXT HOP"),
                      values.get("HOP COUNT"), trailer, line_end)
