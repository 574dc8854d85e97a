"""The framers' interface and the events every stream framer yields,
whatever the protocol and the implementation.

A framer is fed one TCP direction's bytes (``feed``), told of bytes the
capture lost (``gap(nbytes)``) and of the end (``close``); ``end`` is the
stream offset after the last byte fed (or gap); ``next_event()``
returns what it found, in stream order, then :data:`NEED_DATA` (feed more)
or, after ``close``, :data:`CLOSED`; iterating a framer yields the events
ready now.  The events:

* its protocol's unit, with ``offset`` (the stream offset of its first
  byte), ``data`` (its bytes, what the protocol's decoder takes) and
  ``kind``: ``Message`` (IBM MQ; the pure framer also reports ``Segment``
  and, asked, ``Unit``), ``Packet`` (MSMQ), or :class:`StreamUnit` (the
  compiled framers, which report those three fields only);
* :class:`FramingError`: stream bytes that are not a whole unit, with their
  ``raw`` bytes and where the problem was found;
* :class:`Resynchronised`: the framer is on a unit boundary again.

The implementations: :class:`mqcodec.ibmmq.framing.MQStreamFramer` and
:class:`mqcodec.msmq.framing.MSMQStreamFramer` (pure), and the compiled
framers the capture core runs, behind :func:`mqcodec.framers.framer`.
Using a framer out of order raises :class:`FramerStateError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as _dc_field
from collections import deque
from typing import Any, Iterator, NamedTuple, Optional

from .errors import DecodeError, MQCodecError
from .render import json_ready

__all__ = ["FramingError", "Resynchronised", "StreamUnit", "FramerStateError", "NEED_DATA", "CLOSED",
           "ReadyEvents"]


class _Sentinel(type):
    def __repr__(cls) -> str:
        return cls.__name__

    def __bool__(cls) -> bool:
        return False


class NEED_DATA(metaclass=_Sentinel):
    """next_event(): nothing more can be framed until more bytes (or a gap, or the end) come."""


class CLOSED(metaclass=_Sentinel):
    """next_event(): the stream was closed and every event has been returned."""


class ReadyEvents:
    """The output half of the framers' interface, for a framer that queues its
    events as it frames (``_events``, a deque; ``_closed`` once closed)."""

    _events: deque
    _closed: bool

    def next_event(self) -> Any:
        if self._events:
            return self._events.popleft()
        return CLOSED if self._closed else NEED_DATA

    def events(self) -> list:
        """All events ready now."""
        out = list(self._events)
        self._events.clear()
        return out

    def __iter__(self) -> Iterator:
        while self._events:
            yield self._events.popleft()


class StreamUnit(NamedTuple):
    """A whole unit as the compiled framers report it: its stream ``offset``,
    its ``data`` (equal to the pure framer's ``Message.data`` /
    ``Packet.data``), its ``kind`` and, IBM MQ, whether it is ``md_only`` (an
    MQMD and no message data, as ``Message.md_only``)."""

    offset: int
    data: bytes
    kind: str
    md_only: bool = False


class FramerStateError(MQCodecError, RuntimeError):
    """The framer was used out of order (e.g. ``feed`` after ``close``)."""


@dataclass(frozen=True)
class FramingError:
    """Stream bytes that are not a (whole) unit: a damaged unit, or bytes that
    are none.  ``offset`` is the stream offset where they start and ``length``
    their extent in the stream when it is known to exceed ``raw`` (missing
    bytes included; 0: ``raw`` is all of it); ``structure``/``field``/
    ``reason`` as in :class:`~mqcodec.errors.DecodeError`, ``error_offset``
    where the problem was found (absolute in the stream; 0: at ``offset``);
    ``raw`` the bytes received (IBM MQ keeps at most ``max_raw``:
    ``raw_truncated``).  ``conversation_id``/``segment_type``: the IBM MQ
    unit's, when its header was read."""

    offset: int
    structure: str
    field: str
    reason: str
    raw: bytes = _dc_field(repr=False)  # (the attribute "field" above hides dataclasses.field)
    length: int = 0
    error_offset: int = 0
    raw_truncated: bool = False
    conversation_id: Optional[int] = None
    segment_type: Optional[int] = None

    @property
    def end(self) -> int:
        """The stream offset after the bytes this error covers."""
        return self.offset + max(self.length, len(self.raw))

    def to_decode_error(self) -> DecodeError:
        return DecodeError(self.structure, self.field, self.error_offset or self.offset, self.reason)

    @json_ready
    def to_dict(self) -> dict:
        return {"Offset": self.offset, "Length": self.end - self.offset, "Structure": self.structure,
                "Field": self.field, "ErrorOffset": self.error_offset, "Reason": self.reason,
                "RawLength": len(self.raw), "RawTruncated": self.raw_truncated,
                "ConversID": self.conversation_id, "SegmType": self.segment_type}


@dataclass(frozen=True)
class Resynchronised:
    """The framer is on a unit boundary again at stream ``offset``; ``skipped``
    stream bytes (missing, or reported in FramingErrors) lie between the end of
    the last whole unit and ``offset``."""

    offset: int
    skipped: int
