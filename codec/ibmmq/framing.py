"""IBM MQ TCP stream framing: find every TSH/TSHM/TSHC segment and every MQ
message in one direction of a reassembled TCP connection (the encoders that
build such segments are in :mod:`mqcodec.ibmmq.builders`).

:class:`MQStreamFramer` is I/O-free, in the style of h11: bytes go in with
:meth:`~MQStreamFramer.feed`, missing bytes are announced with
:meth:`~MQStreamFramer.gap`, the end with :meth:`~MQStreamFramer.close`;
typed events come out of :meth:`~MQStreamFramer.next_event` (or iteration):

=====================  ==================================================
:class:`Segment`       one whole TSH/TSHM/TSHC segment (header fields)
:class:`Unit`          a whole protocol unit (one segment, or segments joined
                      FIRST..LAST), any type (only with ``units=True``)
:class:`Message`       an MQ message (MQMD + data), joined across segments
:class:`FramingError`  a damaged unit, kept with its raw bytes
:class:`Resynchronised` back on a segment boundary after a gap or garbage
:data:`NEED_DATA`      nothing more until more bytes (or a gap/close) come
:data:`CLOSED`         closed, and every event returned
=====================  ==================================================

The rules (facts from Wireshark's ``packet-mq.c``; decisions in
``docs/ibmmq-framing.md``):

* A segment starts with the eye-catcher "TSH ", "TSHM" or "TSHC" (ASCII or
  EBCDIC); ``MQSegmLen`` (big-endian, bytes 4-7) is the length of the whole
  segment, header included.  A length below the header's own size or above
  ``max_segment_length`` is an error, never an allocation.
* Segment types above 0x80 (API calls and replies, XA) and ASYNC_MESSAGE
  may span several segments: ``CtlFlag1`` FIRST (0x10) opens a message,
  LAST (0x20) closes it, segments with neither continue it.  Continuation
  segments carry the TSH, then (ASYNC_MESSAGE only) a 24-byte short async
  header, then the next bytes of the message.  Other types never span
  (MESSAGE_DATA is joined only when a FIRST-without-LAST segment opened
  it).  Pending messages are keyed by TSHM ConversID.
* A message-bearing unit is: MQPUT/MQPUT_REPLY: API header, MQMD, MQPMO,
  DataLength, data; MQPUT1/MQPUT1_REPLY: API header, MQOD, MQMD, MQPMO,
  DataLength, data; MQGET/MQGET_REPLY: API header, MQMD, MQGMO, DataLength,
  data; ASYNC_MESSAGE: async header, MQMD, data; MESSAGE_DATA: [MSH], MQXQH
  (whose embedded MQMD is the message's), data.  Structure sizes follow
  their Version fields.
* Every integer after ``MQSegmLen`` follows the TSH ``ByteOrder`` byte
  (2 little-endian, else big-endian) except the TSHM ids and the API
  ReplyLength, which are big-endian.

``Message.data`` is the MQMD followed directly by the message data, so
:func:`mqcodec.ibmmq.decode_message` reads it (``encoding``/``ccsid`` of the
Message describe the MQMD).
"""
from __future__ import annotations

import struct as _struct
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..render import json_ready
from ..errors import DecodeError
from ..stream_events import CLOSED, NEED_DATA, FramerStateError, FramingError, ReadyEvents, Resynchronised
from ..layout import parse_at
from .constants import ENCODING_BIG, ENCODING_LITTLE
from .tsh import (
    API_HEADER_DECL, API_HEADER_LENGTH, ASYNC_HEADER_DECL, ASYNC_HEADER_FIXED_LENGTH,
    ASYNC_HEADER_SHORT_LENGTH, BIG, BYTE_ORDER_BIG, BYTE_ORDER_LITTLE, GMO_IDS, LITTLE, MD_IDS,
    MQ_MAXMSGL_CEILING, MQGMO_DECL, MQGMO_LENGTHS, MQMD_LENGTHS, MQOD_LENGTHS, MQOD_PREFIX_DECL, MQPMO_DECL,
    MQPMO_LENGTHS, MSH_DECL, MSH_IDS, MSH_LENGTH, OD_IDS, PMO_IDS, SEGMENT_TYPES, TCF_FIRST, TCF_LAST,
    TSH_DECL, TSH_IDS, TSH_IDS_EBCDIC, TSH_LENGTH, TSHM_DECL, TSHM_LENGTH, XQH_IDS, XQH_PREFIX_DECL,
    XQH_PREFIX_LENGTH, order_of, segment_type_name,
)
from . import framing_errors as _errors
from .framing_errors import describe as _describe

__all__ = [
    "MQStreamFramer", "Segment", "Unit", "UNIT_PREFIX", "Message", "FramingError", "Resynchronised", "NEED_DATA", "CLOSED",
    "FramerStateError", "decode_segment_header", "MESSAGE_SEGMENT_TYPES",
    "DEFAULT_MAX_SEGMENT_LENGTH", "DEFAULT_MAX_MESSAGE_LENGTH",
]

#: Segments longer than this are errors (MQ's 100 MiB MAXMSGL ceiling plus
#: room for the headers around the message).
DEFAULT_MAX_SEGMENT_LENGTH = MQ_MAXMSGL_CEILING + 64 * 1024
#: Reassembled multi-segment units longer than this are errors.
DEFAULT_MAX_MESSAGE_LENGTH = MQ_MAXMSGL_CEILING + 64 * 1024
#: At most this many raw bytes are kept in one FramingError.
DEFAULT_MAX_RAW = 1 << 20

MQPUT, MQPUT1, MQGET = 0x86, 0x87, 0x85
MQPUT_REPLY, MQPUT1_REPLY, MQGET_REPLY = 0x96, 0x97, 0x95
ASYNC_MESSAGE, MESSAGE_DATA = 0x0D, 0x04

#: Segment types whose units carry an MQMD (a message).
MESSAGE_SEGMENT_TYPES = frozenset({MQPUT, MQPUT_REPLY, MQPUT1, MQPUT1_REPLY, MQGET, MQGET_REPLY,
                                   ASYNC_MESSAGE, MESSAGE_DATA})
_PUT_TYPES = frozenset({MQPUT, MQPUT_REPLY, MQPUT1, MQPUT1_REPLY})
_GET_TYPES = frozenset({MQGET, MQGET_REPLY})

_ALL_IDS = dict(TSH_IDS)
_ALL_IDS.update(TSH_IDS_EBCDIC)
_HEADER_LENGTH = {"TSH": TSH_LENGTH, "TSHC": TSH_LENGTH, "TSHM": TSHM_LENGTH}


# ----------------------------------------------------------------------
# Events
# ----------------------------------------------------------------------
@dataclass(frozen=True)
class Segment:
    """One whole segment.  ``offset`` is its stream offset, ``length`` its
    MQSegmLen; the other fields are the TSH's (``conversation_id`` and
    ``request_id`` are None for TSH/TSHC); ``header`` is its raw header."""

    offset: int
    length: int
    structid: str                 # "TSH", "TSHM" or "TSHC"
    ebcdic: bool
    conversation_id: int | None
    request_id: int | None
    byte_order: int               # the ByteOrder byte: 1 big, 2 little
    segment_type: int
    ctl_flags1: int
    ctl_flags2: int
    luw_id: bytes
    encoding: int
    ccsid: int
    reserved: int
    header: bytes = field(repr=False)

    @property
    def type_name(self) -> str:
        return segment_type_name(self.segment_type)

    @property
    def header_length(self) -> int:
        return len(self.header)

    @property
    def first(self) -> bool:
        return bool(self.ctl_flags1 & TCF_FIRST)

    @property
    def last(self) -> bool:
        return bool(self.ctl_flags1 & TCF_LAST)

    @property
    def order(self) -> str:
        return order_of(self.byte_order)

    @json_ready
    def to_dict(self) -> dict:
        return {"Offset": self.offset, "MQSegmLen": self.length, "StructID": self.structid,
                "EBCDIC": self.ebcdic, "ConversID": self.conversation_id, "RequestID": self.request_id,
                "ByteOrder": self.byte_order, "SegmType": self.segment_type, "SegmTypeName": self.type_name,
                "CtlFlag1": self.ctl_flags1, "CtlFlag2": self.ctl_flags2, "LUWIdent": self.luw_id,
                "Encoding": self.encoding, "CCSID": self.ccsid, "Reserved": self.reserved}


#: At most this many bytes of a unit travel in a :class:`Unit` event: every
#: structure :mod:`mqcodec.ibmmq.calls` decodes lies within them.
UNIT_PREFIX = 64 * 1024


@dataclass(frozen=True)
class Unit:
    """One whole protocol unit of any segment type: a segment, or segments
    joined FIRST..LAST (continuations without their TSH and, for
    ASYNC_MESSAGE, their short async header), as the framer joins them for
    messages.  ``data`` is the unit's first :data:`UNIT_PREFIX` bytes (from
    the first segment's TSH), ``length`` its full joined length, ``offset``
    and ``end`` its extent in the stream.  Emitted (with ``units=True``)
    before anything else the framer reports about the unit (its Message, or
    the FramingError of a message unit that does not parse)."""

    offset: int
    end: int
    length: int
    data: bytes = field(repr=False)
    segment_type: int
    conversation_id: int | None
    segments: int

    @property
    def type_name(self) -> str:
        return segment_type_name(self.segment_type)


@dataclass(frozen=True)
class Message:
    """An MQ message found in the stream.

    ``data`` is the MQMD followed by the message data (joined across
    segments; ``body``: the data after the MQMD); ``offset``/``end`` its extent in the stream; ``md_offset`` is the stream offset of the MQMD, ``md_length``
    its size; ``encoding`` (MQENC: 273 big-endian, 546 little-endian) and
    ``ccsid`` describe the MQMD (from the TSH ByteOrder and CCSID).
    ``data_length`` is the DataLength field of MQPUT/MQPUT1/MQGET units
    (None where the layout has none); a reply may declare data it does not
    carry (an MQPUT_REPLY repeats the length, not the data).

    To re-encode the segments byte for byte the event keeps the segments'
    headers, ``prefix`` (the unit bytes between the first TSH and the MQMD:
    API header, MQOD, async header, MSH, MQXQH), ``between`` (MQPMO/MQGMO
    and DataLength), ``trailer`` (bytes after DataLength bytes of data) and
    ``continuation_prefixes`` (the short async header of each later
    segment): see :meth:`encode`.
    """

    kind: str
    segment_type: int
    conversation_id: int | None
    request_id: int | None
    offset: int
    end: int
    data: bytes = field(repr=False)
    md_offset: int
    md_length: int
    data_length: int | None
    encoding: int
    ccsid: int
    segments: tuple = field(repr=False)
    api: dict | None = field(default=None, repr=False)
    options: dict | None = field(default=None, repr=False)
    object_descriptor: dict | None = field(default=None, repr=False)
    async_header: dict | None = field(default=None, repr=False)
    transmission_header: dict | None = field(default=None, repr=False)
    prefix: bytes = field(default=b"", repr=False)
    between: bytes = field(default=b"", repr=False)
    trailer: bytes = field(default=b"", repr=False)
    continuation_prefixes: tuple = field(default=(), repr=False)

    @property
    def md(self) -> bytes:
        return self.data[: self.md_length]

    @property
    def body(self) -> bytes:
        """The message data after the MQMD."""
        return self.data[self.md_length:]

    @property
    def md_only(self) -> bool:
        """The unit carries an MQMD and no message data (a reply without data)."""
        return len(self.data) == self.md_length

    @property
    def segment_count(self) -> int:
        return len(self.segments)

    def decode(self, *, lenient: bool = False):
        """The message decoded by :func:`mqcodec.ibmmq.decode_message`
        (offsets in errors relative to ``data``)."""
        from .message import decode_message

        return decode_message(self.data, encoding=self.encoding, ccsid=self.ccsid, lenient=lenient)

    def encode(self) -> bytes:
        """The stream bytes of this message's segments, byte for byte."""
        body = self.prefix + self.data[: self.md_length] + self.between + self.body + self.trailer
        out = bytearray()
        pos = 0
        for i, seg in enumerate(self.segments):
            out += seg.header
            if i:
                out += self.continuation_prefixes[i - 1]
            take = seg.length - len(seg.header) - (len(self.continuation_prefixes[i - 1]) if i else 0)
            out += body[pos:pos + take]
            pos += take
        return bytes(out)

    @json_ready
    def to_dict(self) -> dict:
        return {"Kind": self.kind, "SegmType": self.segment_type, "ConversID": self.conversation_id,
                "RequestID": self.request_id, "StreamOffsetStart": self.offset,
                "StreamOffsetEnd": self.end, "MDOffset": self.md_offset,
                "MDLength": self.md_length, "DataLength": self.data_length,
                "Encoding": self.encoding, "CCSID": self.ccsid, "Segments": len(self.segments),
                "API": self.api, "Options": self.options}


# ----------------------------------------------------------------------
# Segment header
# ----------------------------------------------------------------------
def _eye(data, pos: int) -> tuple[str, bool] | None:
    ident = bytes(data[pos:pos + 4])
    if ident in TSH_IDS:
        return TSH_IDS[ident], False
    if ident in TSH_IDS_EBCDIC:
        return TSH_IDS_EBCDIC[ident], True
    return None


def decode_segment_header(data, offset: int = 0, *, stream_offset: int | None = None) -> Segment:
    """Decode the TSH/TSHM/TSHC at ``data[offset:]`` (only the header: the
    segment's body need not be present).  ``stream_offset`` (default
    ``offset``) is the stream offset reported in the Segment and errors."""
    base = offset if stream_offset is None else stream_offset
    eye = _eye(data, offset)
    if eye is None:
        if len(data) - offset < 4:
            raise DecodeError("TSH", "StructID", base, "truncated: 4 bytes needed, %d present"
                              % max(0, len(data) - offset))
        raise DecodeError("TSH", "StructID", base, "%r is not TSH, TSHM or TSHC" % bytes(data[offset:offset + 4]))
    name, ebcdic = eye
    hlen = _HEADER_LENGTH[name]
    bo_pos = offset + hlen - 20
    if len(data) < bo_pos + 1:
        raise DecodeError(name, "ByteOrder", base + hlen - 20, "truncated: %d bytes needed, %d present"
                          % (hlen, max(0, len(data) - offset)))
    order = order_of(data[bo_pos])
    decl = (TSHM_DECL if name == "TSHM" else TSH_DECL)[order]
    try:
        c = parse_at(decl, data, offset, name)
    except DecodeError as exc:
        raise exc.shifted(base - offset) from None
    return Segment(offset=base, length=c.MQSegmLen, structid=name, ebcdic=ebcdic,
                   conversation_id=c.get("ConversID"), request_id=c.get("RequestID"),
                   byte_order=c.ByteOrder, segment_type=c.SegmType, ctl_flags1=c.CtlFlag1,
                   ctl_flags2=c.CtlFlag2, luw_id=bytes(c.LUWIdent), encoding=c.Encoding, ccsid=c.CCSID,
                   reserved=c.Reserved, header=bytes(data[offset:offset + hlen]))


def _spans(seg_type: int) -> bool:
    """Types that may span several segments (packet-mq.c reassemble_mq)."""
    return seg_type > 0x80 or seg_type == ASYNC_MESSAGE


# ----------------------------------------------------------------------
# Unit parsing (a whole, possibly reassembled, unit: first TSH + body)
# ----------------------------------------------------------------------
class _Pending:
    __slots__ = ("key", "seg_type", "segments", "buf", "segmap", "size", "overflow", "cont_prefixes",
                 "start")

    def __init__(self, key, seg: Segment, data: bytes):
        self.key = key
        self.seg_type = seg.segment_type
        self.segments = [seg]
        self.buf = bytearray(data)
        self.segmap = [(0, seg.offset, len(data))]
        self.size = len(data)
        self.overflow = False
        self.cont_prefixes: list[bytes] = []
        self.start = seg.offset


def _to_stream(segmap, unit_off: int) -> int:
    for u, s, n in segmap:
        if unit_off < u + n:
            return s + max(0, unit_off - u)
    if segmap:
        u, s, n = segmap[-1]
        return s + (unit_off - u)
    return unit_off


def _i32(data, pos: int, order: str) -> int:
    return _struct.unpack_from(">i" if order == BIG else "<i", data, pos)[0]


def _unit_error(t: int, structure: str | None, fld: str, pos: int, reason: int, b: int = 0, c: int = 0,
                d: int = 0) -> DecodeError:
    """The DecodeError of a unit that does not parse, its text from
    framing_errors (as the compiled framer's UNIT errors)."""
    s, f, text = _errors.unit_error(_errors.unit_code(t, structure, fld, reason), b, c, d)
    return DecodeError(s, f, pos, text)


def _need(unit, pos: int, n: int, structure: str | None, fld: str, t: int) -> None:
    if n < 0 or pos + n > len(unit):
        raise _unit_error(t, structure, fld, pos, _errors.TRUNCATED, n, max(0, len(unit) - pos))


def _fields(c) -> dict:
    return {k: (bytes(v) if isinstance(v, (bytes, bytearray)) else v)
            for k, v in c.items() if not k.startswith("_") and v is not None}


def _versioned(unit, pos: int, lengths: dict, structure: str, order: str, t: int) -> tuple[int, int]:
    _need(unit, pos, 8, structure, "Version", t)
    version = _i32(unit, pos + 4, order)
    if version not in lengths:
        raise _unit_error(t, structure, "Version", pos + 4, _errors.UNKNOWN_VERSION, version)
    size = lengths[version]
    _need(unit, pos, size, structure, "", t)
    return version, size


def _records(unit, pos: int, count: int, sizes: Sequence[int], structure: str, fld: str, t: int) -> int:
    """Length of ``count`` records of each size in ``sizes`` (0 = absent),
    checked against the bytes present before any use."""
    if count < 0:
        raise _unit_error(t, structure, fld, pos, _errors.NEGATIVE_COUNT, count)
    total = 0
    for s in sizes:
        total += count * s
    if total > len(unit) - pos:
        raise _unit_error(t, structure, fld, pos, _errors.RECORDS_PAST_END, count, total, max(0, len(unit) - pos))
    return total


def _parse_message_unit(unit: bytes, seg0: Segment) -> dict | None:
    """Find the message in a unit.  Returns None when the unit carries no
    MQMD where a message would be; raises DecodeError (unit offsets)."""
    t = seg0.segment_type
    order = seg0.order
    pos = len(seg0.header)
    out: dict[str, Any] = {}
    must = t in (MQPUT, MQPUT1)
    if t > 0x80 and t <= 0x9F:
        _need(unit, pos, API_HEADER_LENGTH, "API", "ReplyLength", t)
        out["api"] = _fields(parse_at(API_HEADER_DECL[order], unit, pos, "API"))
        pos += API_HEADER_LENGTH
        if t in (MQPUT1, MQPUT1_REPLY):
            if bytes(unit[pos:pos + 4]) not in OD_IDS:
                if must:
                    raise _unit_error(t, "MQOD", "StrucId", pos, _errors.NO_MQOD)
                return None
            version, size = _versioned(unit, pos, MQOD_LENGTHS, "MQOD", order, t)
            od = _fields(parse_at(MQOD_PREFIX_DECL[order], unit, pos, "MQOD"))
            if version >= 2:
                recs = _i32(unit, pos + 168, order)
                orec = _i32(unit, pos + 184, order)
                rrec = _i32(unit, pos + 188, order)
                od["RecsPresent"] = recs
                if recs:
                    size += _records(unit, pos + size, recs, (96 if orec else 0, 8 if rrec else 0),
                                     "MQOD", "RecsPresent", t)
            od["Length"] = size
            out["object_descriptor"] = od
            pos += size
    elif t == ASYNC_MESSAGE:
        _need(unit, pos, ASYNC_HEADER_SHORT_LENGTH, "ASYNC_MESSAGE", "Version", t)
        seg_index = _struct.unpack_from(">H" if order == BIG else "<H", unit, pos + 20)[0]
        if seg_index == 0:
            _need(unit, pos, ASYNC_HEADER_FIXED_LENGTH, "ASYNC_MESSAGE", "ReasonCode", t)
            ah = _fields(parse_at(ASYNC_HEADER_DECL[order], unit, pos, "ASYNC_MESSAGE"))
            qlen = ah["ResolQNLn"]
            pad = (4 - (3 + qlen) % 4) % 4
            hl = ASYNC_HEADER_FIXED_LENGTH + qlen + pad
            _need(unit, pos, hl, "ASYNC_MESSAGE", "ResolQName", t)
            ah["ResolQName"] = bytes(unit[pos + ASYNC_HEADER_FIXED_LENGTH:pos + ASYNC_HEADER_FIXED_LENGTH + qlen])
        else:
            hl = ASYNC_HEADER_SHORT_LENGTH
            ah = {"SegmIndex": seg_index}
        out["async_header"] = ah
        pos += hl
        if bytes(unit[pos:pos + 4]) not in MD_IDS:
            return None
    elif t == MESSAGE_DATA:
        th: dict[str, Any] = {}
        if bytes(unit[pos:pos + 4]) in MSH_IDS:
            _need(unit, pos, MSH_LENGTH, "MSH", "", t)
            th["MSH"] = _fields(parse_at(MSH_DECL[order], unit, pos, "MSH"))
            pos += MSH_LENGTH
        if bytes(unit[pos:pos + 4]) not in XQH_IDS:
            return None
        _need(unit, pos, XQH_PREFIX_LENGTH, "MQXQH", "", t)
        th.update(_fields(parse_at(XQH_PREFIX_DECL[order], unit, pos, "MQXQH")))
        out["transmission_header"] = th
        pos += XQH_PREFIX_LENGTH
    md_pos = pos
    if bytes(unit[pos:pos + 4]) not in MD_IDS:
        if must or t == MESSAGE_DATA:
            raise _unit_error(t, "MQMD", "StrucId", pos, _errors.NO_MQMD)
        return None
    _, md_len = _versioned(unit, pos, MQMD_LENGTHS, "MQMD", order, t)
    pos += md_len
    between_start = pos
    options: tuple[tuple[bytes, ...], dict[int, int], Any, str] | None = None
    if t in _PUT_TYPES:
        options = PMO_IDS, MQPMO_LENGTHS, MQPMO_DECL, "MQPMO"
    elif t in _GET_TYPES:
        options = GMO_IDS, MQGMO_LENGTHS, MQGMO_DECL, "MQGMO"
    data_length = None
    if options is not None:
        options_ids, lengths, decl, oname = options
        if bytes(unit[pos:pos + 4]) not in options_ids:
            if must:
                raise _unit_error(t, oname, "StrucId", pos, _errors.NO_OPTIONS)
        else:
            version, size = _versioned(unit, pos, lengths, oname, order, t)
            opts = _fields(parse_at(decl[order], unit, pos, oname))
            if oname == "MQPMO" and version >= 2 and opts.get("RecsPresent"):
                fl = opts.get("PutMsgRecFields", 0)
                pmr = ((24 if fl & 1 else 0) + (24 if fl & 2 else 0) + (24 if fl & 4 else 0)
                       + (4 if fl & 8 else 0) + (32 if fl & 16 else 0))
                size += _records(unit, pos + size, opts["RecsPresent"],
                                 (pmr if opts.get("PutMsgRecOffset") else 0,
                                  8 if opts.get("ResponseRecOffset") else 0), oname, "RecsPresent", t)
            opts["Length"] = size
            out["options"] = opts
            pos += size
            if len(unit) - pos >= 4:
                data_length = _i32(unit, pos, order)
                pos += 4
            elif must:
                raise _unit_error(t, None, "DataLength", pos, _errors.TRUNCATED, 4, len(unit) - pos)
    data_end = len(unit)
    if data_length is not None and t in (MQPUT, MQPUT1, MQGET_REPLY):
        if data_length < 0:
            raise _unit_error(t, None, "DataLength", pos - 4, _errors.NEGATIVE_LENGTH, data_length)
        if data_length > len(unit) - pos:
            if t != MQGET_REPLY:
                raise _unit_error(t, None, "DataLength", pos - 4, _errors.DECLARED_PAST_END, data_length,
                                  len(unit) - pos)
        else:
            data_end = pos + data_length
    out.update(md_pos=md_pos, md_len=md_len, between=(between_start, pos), data=(pos, data_end),
               data_length=data_length)
    return out


# ----------------------------------------------------------------------
# The framer
# ----------------------------------------------------------------------
_SYNC, _LOST, _SKIP = "sync", "lost", "skip"


class MQStreamFramer(ReadyEvents):
    """Frames one direction of one TCP connection carrying IBM MQ.

    ``offset`` is the stream offset of the first byte that will be fed.
    ``max_segment_length`` and ``max_message_length`` bound every buffer;
    ``max_raw`` bounds the bytes kept in one FramingError.  With
    ``segments=False`` no Segment events are produced (messages and errors
    only).  With ``units=True`` every whole unit is also reported as a
    :class:`Unit` (for the ``mq_calls`` table).
    """

    def __init__(self, offset: int = 0, *, max_segment_length: int = DEFAULT_MAX_SEGMENT_LENGTH,
                 max_message_length: int = DEFAULT_MAX_MESSAGE_LENGTH, max_raw: int = DEFAULT_MAX_RAW,
                 max_pending_bytes: int = DEFAULT_MAX_MESSAGE_LENGTH, max_pending_messages: int = 1024,
                 segments: bool = True, units: bool = False):
        if max_segment_length < TSHM_LENGTH:
            raise ValueError("max_segment_length below the TSHM header size")
        self._buf = bytearray()
        self._pos = 0
        self._base = int(offset)          # stream offset of _buf[0]
        self._events: deque = deque()
        self._state = _SYNC
        self._max_seg = int(max_segment_length)
        self._max_msg = int(max_message_length)
        self._max_raw = int(max_raw)
        self._max_pending_bytes = int(max_pending_bytes)
        self._max_pending = int(max_pending_messages)
        self._emit_segments = segments
        self._emit_units = units
        self._closed = False
        self._pending: dict[Any, _Pending] = {}
        # LOST state: where sync was lost, garbage being collected
        self._lost_since = 0
        self._garbage_start: int | None = None
        self._garbage = bytearray()
        self._garbage_len = 0
        self._garbage_why: tuple[str, str, int, str] | None = None
        # SKIP state: a damaged segment of known end
        self._skip: Any = None  # the skip's facts (a dict) while _state is _SKIP, else None

    # ---- public API ---------------------------------------------------
    @property
    def offset(self) -> int:
        """Stream offset just after the last byte fed (or gap)."""
        return self._base + len(self._buf)

    #: the interface's name of it (mqcodec.stream_events)
    end = offset

    @property
    def pending_messages(self) -> int:
        return len(self._pending)

    @property
    def oldest_open(self) -> int | None:
        """The stream offset of the oldest event this framer still holds open
        (a unit waiting for its last segment, garbage being collected, a cut
        segment being skipped): its rows come after rows that start later, so
        the frames of its bytes must stay known (message_key).  The events not
        taken yet count too: at a gap or the end of the stream the open units
        are reported after the garbage or segment that follows them.  None: none."""
        starts = [p.start for p in self._pending.values()]
        starts += [e.offset for e in self._events if getattr(e, "offset", None) is not None]
        if self._garbage_start is not None:
            starts.append(self._garbage_start)
        if self._state == _SKIP and self._skip is not None:
            starts.append(self._skip["start"])
        return min(starts) if starts else None

    @property
    def buffered_bytes(self) -> int:
        """Bytes this framer holds: the unframed part of its buffer, the
        segments of messages waiting for their last segment, and the raw
        bytes kept for a FramingError in progress (a global byte budget,
        ``mqcodec.capture.budget``, counts them)."""
        n = len(self._buf) - self._pos + len(self._garbage)
        if self._pending:
            n += sum(len(p.buf) for p in self._pending.values())
        if self._skip is not None:
            n += len(self._skip["raw"])
        return n

    def cut(self, limit: int) -> int:
        """Drop what this framer buffers (a byte budget of ``limit`` bytes was
        passed): every message waiting for more segments and the partial
        segment become FramingErrors (framing_errors.CUT_PENDING, CUT_SEGMENT;
        raw at most ``max_raw`` bytes), and the framer resynchronises
        after them as after a gap -- at the end of the cut segment when its
        header gave its length, else at the next plausible segment header.
        While scanning for a header, the garbage collected so far is reported
        at once (its own FramingError, as at the next resynchronisation).
        While skipping a damaged segment, the part seen so far is reported at
        once (the skip's FramingError, up to the cut) and the rest of the
        segment becomes its own FramingError when it ends.  After a cut the
        rest of the cut segment is counted (the error's ``length``), not kept
        (``raw`` empty, ``raw_truncated``).  Returns the bytes released.  For
        a global byte budget."""
        if self._closed:
            return 0
        self._process()
        before = self.buffered_bytes
        at = self.offset
        for key in list(self._pending):
            p = self._pending.pop(key)
            end = p.segments[-1].offset + p.segments[-1].length
            structure, fld, reason = _describe(_errors.CUT_PENDING, len(p.segments), limit)
            self._error(p.start, structure, fld, at, reason, bytes(p.buf), end - p.start, key, p.seg_type)
        avail = len(self._buf) - self._pos
        if self._state == _SYNC and avail:
            start = self._base + self._pos
            seg_end = self._known_end(self._pos)
            structure, fld, reason = _describe(_errors.CUT_SEGMENT, avail, limit)
            self._error(start, structure, fld, at, reason, bytes(self._buf[self._pos:]), avail)
            self._buf = bytearray()
            self._pos = 0
            self._base = at
            if seg_end is not None and seg_end > at:
                # the rest of the cut segment is counted (its error's length), not kept
                self._skip = {"start": at, "end": seg_end, "raw": bytearray(), "keep": 0, "dropped": False,
                              "why": (_errors.CUT_REST, at, limit), "error_offset": at, "lost_since": start}
                self._state = _SKIP
            else:
                self._lose(start, _describe(_errors.CUT_GARBAGE, at, limit))
        elif self._state == _SKIP and self._skip["raw"]:
            # skipping a damaged segment: the part seen so far is reported now, as the skip
            # would report it at its end (its raw bytes released); the rest of the segment
            # becomes its own error when it ends, counted, not kept
            sk = self._skip
            structure, fld, reason = _describe(_errors.CUT_SKIPPED, at, limit)
            self._error(sk["start"], structure, fld, sk["error_offset"], reason, bytes(sk["raw"]),
                        at - sk["start"], truncated=sk["dropped"])
            self._skip = {"start": at, "end": sk["end"], "raw": bytearray(), "keep": 0, "dropped": False,
                          "why": (_errors.CUT_REST, at, limit), "error_offset": at, "lost_since": sk["lost_since"]}
        elif self._state == _LOST and self._garbage_start is not None:
            # garbage collected so far (at most max_raw bytes kept) is reported now, as it is
            self._flush_garbage()
        return before - self.buffered_bytes

    def feed(self, data: bytes) -> None:
        if self._closed:
            raise FramerStateError("feed() after close()")
        if data:
            self._buf += data
            self._process()

    def gap(self, nbytes: int) -> None:
        """``nbytes`` stream bytes are missing at the current offset."""
        if self._closed:
            raise FramerStateError("gap() after close()")
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError("negative gap")
        if nbytes == 0:
            return
        self._process()
        at = self.offset
        end = at + nbytes
        self._fail_pending(_errors.GAP_IN_UNIT, at, nbytes)
        avail = len(self._buf) - self._pos
        if self._state == _SYNC:
            start = self._base + self._pos
            if avail:
                seg_end = self._known_end(self._pos)
                partial = bytes(self._buf[self._pos:])
                structure, fld, reason = _describe(_errors.GAP_IN_SEGMENT, nbytes, at)
                if seg_end is not None and end < seg_end:
                    self._skip = {"start": start, "end": seg_end, "raw": bytearray(partial[:self._max_raw]),
                                  "keep": self._max_raw, "dropped": len(partial) > self._max_raw,
                                  "why": (_errors.GAP_IN_SEGMENT, nbytes, at), "error_offset": at,
                                  "lost_since": start}
                    self._state = _SKIP
                else:
                    extent = (seg_end if seg_end is not None else end) - start
                    self._error(start, structure, fld, at, reason, partial, extent)
                    if seg_end is not None and end == seg_end:
                        self._events.append(Resynchronised(end, end - start))
                    else:
                        self._lose(start, _describe(_errors.AFTER_GAP))
            else:
                self._lose(start, _describe(_errors.AFTER_GAP))
        elif self._state == _SKIP:
            sk = self._skip
            if end < sk["end"]:
                pass  # still inside the damaged segment
            else:
                self._flush_skip(resync=(end == sk["end"]))
                if end != sk["end"]:
                    self._lose(sk["start"], _describe(_errors.AFTER_GAP))
        else:  # LOST: bytes held for a candidate header cannot complete across a gap
            self._garbage_add(self._base + self._pos, bytes(self._buf[self._pos:]))
            self._flush_garbage()
        self._buf = bytearray()
        self._pos = 0
        self._base = end
        self._process()

    def close(self) -> None:
        """End of stream: whatever is incomplete becomes a FramingError."""
        if self._closed:
            return
        self._process()
        self._closed = True
        end = self.offset
        avail = len(self._buf) - self._pos
        if self._state == _SYNC and avail:
            start = self._base + self._pos
            seg_end = self._known_end(self._pos)
            structure, fld, reason = _describe(_errors.ENDS_IN_SEGMENT, avail,
                                               -1 if seg_end is None else seg_end - start)
            self._error(start, structure, fld, end, reason, bytes(self._buf[self._pos:]), end - start)
        elif self._state == _SKIP:
            self._skip["close"] = end
            self._skip["end"] = end
            self._flush_skip(resync=False)
        elif self._state == _LOST:
            self._garbage_add(self._base + self._pos, bytes(self._buf[self._pos:]))
            self._flush_garbage()
        self._fail_pending(_errors.ENDS_IN_UNIT, end)
        self._buf = bytearray()
        self._base = end
        self._pos = 0

    # ---- internals ----------------------------------------------------
    def _known_end(self, pos: int) -> int | None:
        """Stream end of the segment at buffer ``pos`` if its header says so
        plausibly."""
        if len(self._buf) - pos < 8:
            return None
        eye = _eye(self._buf, pos)
        if eye is None:
            return None
        n = _struct.unpack_from(">I", self._buf, pos + 4)[0]
        if n < _HEADER_LENGTH[eye[0]] or n > self._max_seg:
            return None
        return self._base + pos + n

    def _error(self, start: int, structure: str, fld: str, error_offset: int, reason: str, raw: bytes,
               length: int, conversation_id=None, segment_type=None, truncated: bool = False) -> None:
        trunc = truncated or len(raw) > self._max_raw
        self._events.append(FramingError(offset=start, structure=structure, field=fld, reason=reason,
                                         raw=bytes(raw[: self._max_raw]), length=max(length, len(raw)),
                                         error_offset=error_offset, raw_truncated=trunc,
                                         conversation_id=conversation_id, segment_type=segment_type))

    def _lose(self, since: int, why: tuple[str, str, str] | None = None) -> None:
        """Enter the LOST state; ``why`` (structure, field, reason) for the
        garbage to come, unless one is set already."""
        self._state = _LOST
        self._lost_since = since
        if why is not None and self._garbage_why is None:
            self._garbage_why = (why[0], why[1], since, why[2])

    def _fail_pending(self, code: int, at: int, nbytes: int = 0) -> None:
        """Every unit waiting for more segments becomes a FramingError
        (framing_errors.GAP_IN_UNIT or ENDS_IN_UNIT)."""
        for key in list(self._pending):
            p = self._pending.pop(key)
            end = p.segments[-1].offset + p.segments[-1].length
            structure, fld, reason = _describe(code, p.seg_type, nbytes, at, len(p.segments))
            self._error(p.start, structure, fld, at, reason, bytes(p.buf), end - p.start, key, p.seg_type)

    def _garbage_add(self, start: int, data: bytes) -> None:
        if not data:
            return
        if self._garbage_start is None:
            self._garbage_start = start
        room = self._max_raw - len(self._garbage)
        if room > 0:
            self._garbage += data[:room]
        self._garbage_len += len(data)

    def _flush_garbage(self) -> None:
        if self._garbage_start is None:
            return
        if self._garbage_why is not None:
            why = self._garbage_why
        else:
            structure, fld, reason = _describe(_errors.NO_HEADER)
            why = (structure, fld, self._garbage_start, reason)
        trunc = self._garbage_len > len(self._garbage)
        self._events.append(FramingError(offset=self._garbage_start, structure=why[0], field=why[1],
                                         reason=why[3], raw=bytes(self._garbage), length=self._garbage_len,
                                         error_offset=why[2], raw_truncated=trunc))
        self._garbage_start = None
        self._garbage = bytearray()
        self._garbage_len = 0
        self._garbage_why = None

    def _flush_skip(self, resync: bool) -> None:
        sk = self._skip
        self._skip = None
        # why the segment is skipped (GAP_IN_SEGMENT, CUT_REST), and where the stream ended inside it
        structure, fld, reason = _describe(sk["why"][0], sk["why"][1], sk["why"][2], sk.get("close", -1))
        self._error(sk["start"], structure, fld, sk["error_offset"], reason, bytes(sk["raw"]),
                    sk["end"] - sk["start"], truncated=sk["dropped"])
        self._state = _SYNC
        if resync:
            self._events.append(Resynchronised(sk["end"], sk["end"] - sk["lost_since"]))

    def _plausible(self, pos: int) -> bool | None:
        """Is there a plausible segment header at buffer ``pos``?  None when
        more bytes are needed to tell."""
        if len(self._buf) - pos < 4:
            return None
        eye = _eye(self._buf, pos)
        if eye is None:
            return False
        hlen = _HEADER_LENGTH[eye[0]]
        if len(self._buf) - pos < hlen:
            return None
        n = _struct.unpack_from(">I", self._buf, pos + 4)[0]
        if n < hlen or n > self._max_seg:
            return False
        bo = self._buf[pos + hlen - 20]
        if bo not in (BYTE_ORDER_BIG, BYTE_ORDER_LITTLE):
            return False
        if self._buf[pos + hlen - 19] not in SEGMENT_TYPES:
            return False
        return True

    def _compact(self) -> None:
        if self._pos > 65536 and self._pos * 2 > len(self._buf):
            del self._buf[: self._pos]
            self._base += self._pos
            self._pos = 0

    def _process(self) -> None:
        while True:
            avail = len(self._buf) - self._pos
            if self._state == _SKIP:
                sk = self._skip
                here = self._base + self._pos
                take = min(avail, sk["end"] - here)
                if take > 0:
                    room = sk["keep"] - len(sk["raw"])
                    if room > 0:
                        sk["raw"] += self._buf[self._pos:self._pos + min(take, room)]
                    if take > room:
                        sk["dropped"] = True
                    self._pos += take
                    if self._pos == len(self._buf):
                        # every byte fed is consumed: the skipped bytes are not held
                        self._base += self._pos
                        self._buf = bytearray()
                        self._pos = 0
                if self._base + self._pos >= sk["end"]:
                    self._flush_skip(resync=True)
                    continue
                break
            if self._state == _LOST:
                if not self._scan():
                    break
                continue
            # SYNC
            if avail < 8:
                break
            pos = self._pos
            start = self._base + pos
            eye = _eye(self._buf, pos)
            if eye is None:
                structure, fld, reason = _describe(_errors.NOT_A_SEGMENT,
                                                   int.from_bytes(self._buf[pos:pos + 4], "big"))
                self._garbage_why = (structure, fld, start, reason)
                self._lose(start)
                continue
            name, _ = eye
            hlen = _HEADER_LENGTH[name]
            n = _struct.unpack_from(">I", self._buf, pos + 4)[0]
            if n < hlen or n > self._max_seg:
                structure, fld, reason = _describe(_errors.SEGMENT_LENGTH, _errors.HEADER_NAMES.index(name), n,
                                                   hlen, self._max_seg)
                self._garbage_why = (structure, fld, start + 4, reason)
                self._lose(start)
                # the eye-catcher itself is garbage: scanning goes on after it
                self._garbage_add(start, bytes(self._buf[pos:pos + 4]))
                self._pos += 4
                continue
            if avail < n:
                break
            seg_bytes = bytes(self._buf[pos:pos + n])
            self._pos += n
            self._segment(seg_bytes, start)
            self._compact()

    def _scan(self) -> bool:
        """LOST state: look for a plausible header.  True when synced again."""
        buf = self._buf
        i = self._pos
        limit = len(buf)
        while True:
            j = _find_candidate(buf, i, limit)
            if j < 0:
                # keep the last 3 bytes: an eye-catcher may straddle
                keep_from = max(self._pos, limit - 3)
                self._garbage_add(self._base + self._pos, bytes(buf[self._pos:keep_from]))
                self._pos = keep_from
                self._compact()
                return False
            ok = self._plausible(j)
            if ok is None:
                self._garbage_add(self._base + self._pos, bytes(buf[self._pos:j]))
                self._pos = j
                self._compact()
                return False
            if ok:
                self._garbage_add(self._base + self._pos, bytes(buf[self._pos:j]))
                self._pos = j
                self._flush_garbage()
                self._garbage_why = None
                here = self._base + j
                self._events.append(Resynchronised(here, here - self._lost_since))
                self._state = _SYNC
                return True
            i = j + 1

    def _segment(self, seg_bytes: bytes, start: int) -> None:
        try:
            seg = decode_segment_header(seg_bytes, 0, stream_offset=start)
        except DecodeError as exc:  # pragma: no cover - header already checked
            self._error(start, exc.structure, exc.field, exc.offset, exc.reason, seg_bytes, len(seg_bytes))
            return
        if self._emit_segments:
            self._events.append(seg)
        t = seg.segment_type
        key = seg.conversation_id if seg.conversation_id is not None else -1
        pending = self._pending.get(key)
        spans = _spans(t) or (t == MESSAGE_DATA and (seg.first and not seg.last or
                                                     (not seg.first and pending is not None
                                                      and pending.seg_type == MESSAGE_DATA)))
        if not spans:
            self._unit(seg_bytes, [seg], [(0, start, len(seg_bytes))], [], False)
            return
        first, last = seg.first, seg.last
        if first:
            if pending is not None:
                self._pending.pop(key)
                end = pending.segments[-1].offset + pending.segments[-1].length
                structure, fld, reason = _describe(_errors.NEW_FIRST_BEFORE_LAST, pending.seg_type, t)
                self._error(pending.start, structure, fld, start, reason, bytes(pending.buf), end - pending.start,
                            key, pending.seg_type)
            if last:
                self._unit(seg_bytes, [seg], [(0, start, len(seg_bytes))], [], False)
            else:
                self._pending[key] = _Pending(key, seg, seg_bytes)
                self._check_size(key)
            return
        # continuation
        if pending is None or pending.seg_type != t:
            structure, fld, reason = _describe(_errors.CONTINUATION_WITHOUT_FIRST,
                                               _errors.HEADER_NAMES.index(seg.structid), t)
            self._error(start, structure, fld, start + len(seg.header) - 18, reason, seg_bytes, len(seg_bytes),
                        seg.conversation_id, t)
            return
        skip = len(seg.header) + (ASYNC_HEADER_SHORT_LENGTH if t == ASYNC_MESSAGE else 0)
        if len(seg_bytes) < skip:
            self._pending.pop(key)
            structure, fld, reason = _describe(_errors.SHORT_CONTINUATION, t, len(seg_bytes), skip)
            self._error(pending.start, structure, fld, start + 4, reason, bytes(pending.buf) + seg_bytes,
                        start + len(seg_bytes) - pending.start, key, t)
            return
        pending.segments.append(seg)
        pending.cont_prefixes.append(seg_bytes[len(seg.header):skip])
        chunk = seg_bytes[skip:]
        if not pending.overflow:
            pending.segmap.append((len(pending.buf), start + skip, len(chunk)))
            pending.buf += chunk
        pending.size += len(chunk)
        self._check_size(key)
        if last:
            self._pending.pop(key)
            if pending.overflow:
                structure, fld, reason = _describe(_errors.JOINED_TOO_LONG, t, self._max_msg)
                self._error(pending.start, structure, fld, pending.start, reason, bytes(pending.buf),
                            start + len(seg_bytes) - pending.start, key, t)
                return
            self._unit(bytes(pending.buf), pending.segments, pending.segmap, pending.cont_prefixes, True)

    def _check_size(self, key) -> None:
        p = self._pending[key]
        if p.size > self._max_msg and not p.overflow:
            p.overflow = True
            del p.buf[self._max_raw:]
        # all open messages together (one per conversation) are bounded too:
        # the oldest ones give way
        while len(self._pending) > 1 and (
                len(self._pending) > self._max_pending
                or sum(len(q.buf) for q in self._pending.values()) > self._max_pending_bytes):
            old_key = next(k for k in self._pending if k != key)
            q = self._pending.pop(old_key)
            end = q.segments[-1].offset + q.segments[-1].length
            structure, fld, reason = _describe(_errors.DROPPED_UNFINISHED, q.seg_type, self._max_pending,
                                               self._max_pending_bytes)
            self._error(q.start, structure, fld, end, reason, bytes(q.buf), end - q.start, old_key, q.seg_type)

    def _unit(self, unit: bytes, segments: list, segmap: list, cont_prefixes: list, joined: bool) -> None:
        seg0 = segments[0]
        t = seg0.segment_type
        start = seg0.offset
        end = segments[-1].offset + segments[-1].length
        if self._emit_units:
            self._events.append(Unit(offset=start, end=end, length=len(unit), data=bytes(unit[:UNIT_PREFIX]),
                                     segment_type=t, conversation_id=seg0.conversation_id,
                                     segments=len(segments)))
        if t not in MESSAGE_SEGMENT_TYPES:
            return
        try:
            found = _parse_message_unit(unit, seg0)
        except DecodeError as exc:
            self._error(start, exc.structure, exc.field, _to_stream(segmap, exc.offset), exc.reason, unit,
                        end - start, seg0.conversation_id, t)
            return
        except (_struct.error, IndexError, KeyError, ValueError, TypeError, OverflowError) as exc:
            # defensive: nothing but events may leave the framer
            self._error(start, seg0.type_name, "", start, "%s: %s" % (exc.__class__.__name__, exc), unit,
                        end - start, seg0.conversation_id, t)
            return
        if found is None:
            return
        md_pos, md_len = found["md_pos"], found["md_len"]
        b0, b1 = found["between"]
        d0, d1 = found["data"]
        ccsid = seg0.ccsid if seg0.ccsid > 0 else (500 if seg0.ebcdic else 819)
        self._events.append(Message(
            kind=seg0.type_name, segment_type=t, conversation_id=seg0.conversation_id,
            request_id=seg0.request_id, offset=start, end=end,
            data=unit[md_pos:md_pos + md_len] + unit[d0:d1],
            md_offset=_to_stream(segmap, md_pos), md_length=md_len, data_length=found["data_length"],
            encoding=ENCODING_LITTLE if seg0.order == LITTLE else ENCODING_BIG, ccsid=ccsid,
            segments=tuple(segments), api=found.get("api"), options=found.get("options"),
            object_descriptor=found.get("object_descriptor"), async_header=found.get("async_header"),
            transmission_header=found.get("transmission_header"),
            prefix=unit[len(seg0.header):md_pos], between=unit[b0:b1], trailer=unit[d1:],
            continuation_prefixes=tuple(cont_prefixes)))


_FIRST3 = (b"TSH", b"\xe3\xe2\xc8")


def _find_candidate(buf, start: int, limit: int) -> int:
    """First position >= start whose 4 bytes are a TSH eye-catcher, or one
    whose first 1-3 bytes at the very end could begin one; -1 if none."""
    best = -1
    for p in _FIRST3:
        i = buf.find(p, start, limit)
        while i >= 0:
            if i + 4 > limit or bytes(buf[i:i + 4]) in _ALL_IDS:
                break
            i = buf.find(p, i + 1, limit)
        if i >= 0 and (best < 0 or i < best):
            best = i
    return best
