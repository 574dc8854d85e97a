"""MSMQ stream framing: reassembled TCP (port 1801) bytes in, packets out.

I/O-free, in the style of h11: :meth:`MSMQStreamFramer.feed` takes the bytes
of one direction of a protocol session, :meth:`~MSMQStreamFramer.gap` says
that bytes were not captured, :meth:`~MSMQStreamFramer.close` that the
direction ended; :meth:`~MSMQStreamFramer.next_event` (or iteration) returns
typed events:

* :class:`Packet` -- one whole packet (``data``), with its stream ``offset``
  and a ``kind`` decided from the BaseHeader / InternalHeader without a full
  decode (the full decode is the caller's: ``mqcodec.msmq.decode_packet``);
* :class:`FramingError` -- stream bytes that are not (all of) a packet, kept in
  ``raw``: nothing is dropped silently;
* :class:`Resynchronised` -- framing found a packet again after garbage or a
  gap;
* the sentinels :data:`NEED_DATA` (feed more) and :data:`CLOSED` (nothing
  more will come).

Every byte of the stream ends up in exactly one ``Packet.data`` or
``FramingError.raw``, or in a gap.

Framing rules ([MS-MQMQ] 2.2.19.1, [MS-MQQB] 2.1.1, 3.1.5.1.2)
---------------------------------------------------------------
A packet starts with the 16-byte BaseHeader::

    offset 0  VersionNumber     1 byte   MUST be 0x10
    offset 1  Reserved          1 byte
    offset 2  Flags             2 bytes  PR(3) IN SH DH ...
    offset 4  Signature         4 bytes  0x524F494C, "LIOR" on the wire
    offset 8  PacketSize        4 bytes  16 .. 0x00400000
    offset 12 TimeToReachQueue  4 bytes

* A bad VersionNumber or Signature, or a PacketSize outside 16..0x00400000, is
  an error; it is detected from the 16 header bytes alone, before anything is
  buffered for the claimed size.
* PacketSize "MUST NOT include the SessionHeader size": a UserMessage (IN
  clear) with Flags.SH set is followed by a 16-byte SessionHeader outside
  PacketSize.  An internal packet with SH set and PacketSize 20 (a SessionAck
  Packet read literally) is followed by its SessionHeader too; with PacketSize
  36 (what the 4.1.8 example and Windows send) the SessionHeader is counted.
  See :func:`framed_length`.
* Resynchronisation (after garbage or a gap) scans for the next position where
  VersionNumber is 0x10, Signature is "LIOR", PacketSize is in range and, when
  Flags.IN is set, PacketSize is at least 20 (BaseHeader + InternalHeader).
* A gap inside a packet whose BaseHeader was read makes that packet a
  FramingError (the bytes before the gap, then the bytes after it up to the
  packet's end); framing continues at the packet's end, which PacketSize gives.

Session state (per direction)
-----------------------------
The rules, as a table (``_TRANSITIONS``)::

    Initial                   --EstablishConnection-->  EstablishConnectionSeen
    EstablishConnectionSeen   --ConnectionParameters-->  ConnectionParametersSeen
    ConnectionParametersSeen  --any other packet----->  Established
    any state                 --EstablishConnection / ConnectionParameters
                                with InternalHeader.Flags.CS (refused)--> Refused

A packet outside this order is still framed; its ``note`` says why it is
unexpected (e.g. a UserMessage before the session is established).  A framer
that starts in the middle of a connection (``state="Unknown"``) makes no
notes until it sees an EstablishConnection Packet.
"""
from __future__ import annotations

import struct
from collections import deque
from typing import Iterator, NamedTuple, Union

from ..errors import DecodeError
from ..stream_events import CLOSED, NEED_DATA, FramerStateError, FramingError, Resynchronised
from . import framing_errors as _E
from . import constants as C

__all__ = [
    "MSMQStreamFramer", "Packet", "FramingError", "Resynchronised", "FramerStateError", "Incomplete",
    "NEED_DATA", "CLOSED", "framed_length", "packet_kind", "check_base_header",
    "decode_ping", "STATES", "frame_datagram",
]


# ====================================================================== events


class Packet(NamedTuple):
    """One whole packet of the stream."""

    offset: int            # stream offset of the BaseHeader
    length: int            # len(data): PacketSize, plus the SessionHeader outside it
    data: bytes            # the packet's bytes, for decode_packet
    kind: str              # EstablishConnection, ConnectionParameters, SessionAck,
                           # OrderAck, FinalAck, UserMessage, Internal (unknown PT)
    state: str = "Initial"  # session state of this direction after the packet
    note: str = ""         # why the packet is unexpected in the session state ("" if not)

    @property
    def end(self) -> int:
        """The stream offset after the packet."""
        return self.offset + self.length


class Incomplete(NamedTuple):
    """:attr:`MSMQStreamFramer.incomplete`: the packet waiting for more bytes."""

    offset: int
    kind: str
    length: int            # bytes the packet needs (framed_length)
    have: int              # bytes present


Event = Union[Packet, FramingError, Resynchronised, type]

STATES = ("Unknown", "Initial", "EstablishConnectionSeen", "ConnectionParametersSeen", "Established", "Refused")
_SETUP = ("EstablishConnection", "ConnectionParameters")
_TRANSITIONS = {
    ("Initial", "EstablishConnection"): "EstablishConnectionSeen",
    ("Unknown", "EstablishConnection"): "EstablishConnectionSeen",
    ("EstablishConnectionSeen", "ConnectionParameters"): "ConnectionParametersSeen",
}

# ====================================================================== header rules

_BASE = struct.Struct("<BBHII")          # VersionNumber Reserved Flags Signature PacketSize
_IN = 1 << C.BASE_FLAGS["IN"][0]
_SH = 1 << C.BASE_FLAGS["SH"][0]
_SIG = C.BASE_SIGNATURE_BYTES
_HDR = C.BASE_HEADER_SIZE
_INTERNAL_MIN = _HDR + 4
_CS = 1 << C.INTERNAL_FLAGS["CS"][0]
_ORDER_QUEUE_UTF16 = "order_queue$".encode("utf-16-le")


def framed_length(flags: int, packet_size: int) -> int:
    """Bytes a packet occupies in the stream, from its BaseHeader Flags and
    PacketSize: PacketSize, plus the 16-byte SessionHeader when Flags.SH is
    set and PacketSize does not count it (any UserMessage; an internal packet
    of PacketSize 20)."""
    if flags & _SH:
        if not flags & _IN:
            return packet_size + C.SESSION_HEADER_SIZE
        if packet_size == _INTERNAL_MIN:
            return packet_size + C.SESSION_HEADER_SIZE
    return packet_size


def base_header_problem(data, offset: int = 0, end: int | None = None) -> tuple[int, int, int] | None:
    """Check the BaseHeader bytes present at ``data[offset:end]`` (fewer than 16
    are checked as far as they go).  Returns None when they can start a
    packet, else the problem as ``framing_errors`` codes it: (code, a, b)."""
    n = (len(data) if end is None else end) - offset
    if n >= 1 and data[offset] != C.BASE_VERSION:
        return _E.BAD_VERSION, data[offset], 0
    if n > 4:
        got = bytes(data[offset + 4:offset + min(n, 8)])
        if got != _SIG[:len(got)]:
            return _E.BAD_SIGNATURE, int.from_bytes(got, "big"), len(got)
    if n >= _HDR:
        _v, _r, flags, _s, size = _BASE.unpack_from(data, offset)
        if size < _HDR or size > C.MAX_PACKET_SIZE:
            return _E.BAD_SIZE, size, 0
        if flags & _IN and size < _INTERNAL_MIN:
            return _E.BAD_INTERNAL_SIZE, size, 0
    return None


_FIELD_OFFSETS = {"VersionNumber": 0, "Signature": 4, "PacketSize": 8}


def check_base_header(data, offset: int = 0) -> tuple[str, str, int] | None:
    """Check the BaseHeader bytes present at ``data[offset:]`` (fewer than 16
    are checked as far as they go).  Returns None when they can start a
    packet, else (field, reason, field offset relative to ``offset``)."""
    bad = base_header_problem(data, offset)
    if bad is None:
        return None
    _structure, fld, reason = _E.problem_text(*bad)
    return fld, reason, _FIELD_OFFSETS[fld]


def packet_kind(data) -> str:
    """The packet type of a whole packet ([MS-MQQB] 3.1.5.1.1), decided from
    the BaseHeader and InternalHeader.  A UserMessage whose BaseHeader.Flags
    are all 0 and whose DestinationQueue may be order_queue$ is decoded
    (leniently) to tell an OrderAck or FinalAck Packet from a UserMessage."""
    if len(data) < _HDR:
        return "Unknown"
    flags = data[2] | data[3] << 8
    if flags & _IN:
        if len(data) < _INTERNAL_MIN:
            return "Internal"
        return C.PACKET_TYPES.get((data[18] | data[19] << 8) & 0xF, "Internal")
    if flags == 0 and _may_be_order_ack(data):
        try:
            from .packet import decode_packet
            kind = decode_packet(bytes(data), lenient=True).kind
        except Exception:  # noqa: BLE001 - classification only; the caller's decode reports errors
            return "UserMessage"
        if kind in ("OrderAck", "FinalAck"):
            return kind
    return "UserMessage"


def _prefix_kind(buf, pos: int) -> str:
    """The kind of a packet of which only a prefix is present (no decode)."""
    flags = buf[pos + 2] | buf[pos + 3] << 8
    if not flags & _IN:
        return "UserMessage"
    if len(buf) - pos < _INTERNAL_MIN:
        return "Internal"
    return C.PACKET_TYPES.get((buf[pos + 18] | buf[pos + 19] << 8) & 0xF, "Internal")


def _may_be_order_ack(data) -> bool:
    # UserHeader (offset 16): 48 fixed bytes, Flags at 16+44, DestinationQueue at 64
    if len(data) < 68:
        return False
    uflags = struct.unpack_from("<I", data, 60)[0]
    dq = (uflags >> C.USER_FLAGS["DQ"][0]) & 0x7
    if dq == 3:
        return struct.unpack_from("<I", data, 64)[0] == C.ORDER_QUEUE_ID
    if dq == 7:
        count = data[64] | data[65] << 8
        name = bytes(data[66:66 + count]).lower()
        return _ORDER_QUEUE_UTF16 in name
    return False


# ====================================================================== the framer

_SYNC, _TAIL, _SCAN = "sync", "tail", "scan"
#: garbage accumulated while scanning is reported in pieces of this size, counted from
#: its start (the last piece shorter)
SCAN_CHUNK = 1 << 20
_COMPACT_AT = 1 << 16


class MSMQStreamFramer:
    """Frames one direction of an MSMQ protocol session.

    ``offset``: stream offset of the first byte that will be fed (0 for a
    stream whose start was captured).  ``synchronised=False``: the first byte
    fed is not known to start a packet (capture started mid-connection): scan
    for the first packet.  ``state``: initial session state ("Initial", or
    "Unknown" for a mid-stream start, the default when not synchronised).
    """

    def __init__(self, *, offset: int = 0, synchronised: bool = True, state: str | None = None):
        if state is None:
            state = "Initial" if synchronised else "Unknown"
        if state not in STATES:
            raise ValueError("state must be one of %s" % ", ".join(STATES))
        self.state = state
        self._buf = bytearray()
        self._buf_off = int(offset)     # stream offset of _buf[0]
        self._pos = 0                   # index in _buf of the first byte not yet reported
        self._events: deque = deque()
        self._closed = False
        self._mode = _SYNC
        # scan mode
        self._scan = 0                  # index in _buf from which candidates are still undecided
        self._lost_at = self._buf_off   # stream offset where synchronisation was lost
        # the garbage's first byte: a problem (framing_errors code, a, b), or (0, structure,
        # field, reason) for a text of its own (a budget cut)
        self._problem: tuple = (0, "", "", "")
        # tail mode: bytes up to _tail_end (stream offset) belong to a packet broken by a gap
        self._tail_end = 0
        self._tail_of = 0
        if not synchronised:
            self._enter_scan(0, self._buf_off, (0, "BaseHeader", "",
                                                "bytes before the first packet (mid-stream start)"))
        #: counts for a converter's summary
        self.stats = {"packets": 0, "errors": 0, "resynchronised": 0, "gap_bytes": 0, "bytes": 0}

    # ------------------------------------------------------------------ input
    def feed(self, data) -> None:
        """Append in-order stream bytes."""
        if self._closed:
            raise FramerStateError("feed() after close()")
        if data:
            self._buf += data
            self.stats["bytes"] += len(data)

    def gap(self, nbytes: int) -> None:
        """``nbytes`` stream bytes after everything fed so far were not captured."""
        if self._closed:
            raise FramerStateError("gap() after close()")
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError("gap of %d bytes" % nbytes)
        if nbytes == 0:
            return
        self.stats["gap_bytes"] += nbytes
        self._run()                     # frame what is already here
        here = self._buf_off + len(self._buf)   # stream offset of the first missing byte
        after = here + nbytes
        mode = self._mode
        if mode == _SYNC:
            avail = len(self._buf) - self._pos
            start = self._off(self._pos)
            if avail == 0:
                self._reset(after)
                self._enter_scan(0, start, (_E.AFTER_GAP, nbytes, here))
            elif avail < _HDR:
                self._error(self._pos, len(self._buf), *_E.describe(_E.HEADER_THEN_GAP, avail, nbytes))
                self._reset(after)
                self._enter_scan(0, start, (_E.AFTER_GAP, nbytes, here))
            else:
                _v, _r, flags, _s, size = _BASE.unpack_from(self._buf, self._pos)
                total = framed_length(flags, size)
                kind = _E.KINDS.index(_prefix_kind(self._buf, self._pos))
                self._error(self._pos, len(self._buf), *_E.describe(_E.GAP_IN_PACKET, nbytes, here,
                                                                     total * 8 + kind, avail))
                self._after_broken_packet(start + total, start, here, after)
        elif mode == _TAIL:
            if self._pos < len(self._buf):
                self._error(self._pos, len(self._buf), *_E.describe(_E.TAIL_BEFORE_GAP, self._tail_of, nbytes,
                                                                     here))
            self._after_broken_packet(self._tail_end, self._tail_of, here, after)
        else:  # scanning
            self._report_garbage(len(self._buf), _E.NONE_BEFORE_GAP, nbytes, here)
            self._problem = (_E.AFTER_GAP, nbytes, here)
            self._reset(after)
            self._scan = 0

    def _after_broken_packet(self, end: int, start: int, here: int, after: int) -> None:
        """A gap [here, after) hit the packet [start, end)."""
        self._reset(after)
        if after < end:
            self._mode, self._tail_end, self._tail_of = _TAIL, end, start
        elif after == end:
            self._mode = _SYNC
        else:
            self._enter_scan(0, end, (_E.AFTER_GAP, after - here, here))

    def close(self) -> None:
        """The direction ended: what is left is reported by next_event()."""
        self._closed = True

    # ------------------------------------------------------------------ output
    def next_event(self) -> Event:
        """The next :class:`Packet`, :class:`FramingError` or
        :class:`Resynchronised`, else :data:`NEED_DATA` or :data:`CLOSED`."""
        if not self._events:
            self._run()
        if self._events:
            return self._events.popleft()
        return CLOSED if self._closed else NEED_DATA

    def __iter__(self) -> Iterator:
        """Events until NEED_DATA or CLOSED."""
        while True:
            ev = self.next_event()
            if ev is NEED_DATA or ev is CLOSED:
                return
            yield ev

    @property
    def incomplete(self) -> Incomplete | None:
        """The packet waiting for more bytes (its BaseHeader was read), if any."""
        self._run()
        if self._mode != _SYNC or self._closed:
            return None
        avail = len(self._buf) - self._pos
        if avail < _HDR:
            return None
        _v, _r, flags, _s, size = _BASE.unpack_from(self._buf, self._pos)
        total = framed_length(flags, size)
        return Incomplete(self._off(self._pos), _prefix_kind(self._buf, self._pos), total, avail)

    @property
    def offset(self) -> int:
        """Stream offset of the first byte not yet reported in an event."""
        return self._off(self._pos)

    @property
    def end(self) -> int:
        """Stream offset after the last byte fed (or gap declared)."""
        return self._buf_off + len(self._buf)

    @property
    def buffered_bytes(self) -> int:
        """Bytes fed and not yet reported in an event: what this framer holds
        (a global byte budget, ``mqcodec.capture.budget``, counts it)."""
        return len(self._buf) - self._pos

    def cut(self, limit: int) -> int:
        """Report every buffered byte as one :class:`FramingError`
        (framing_errors.BUDGET_CUT: a byte budget of ``limit`` bytes was
        passed; all its bytes in ``raw``), then scan for the next packet after
        them, as after a gap (framing_errors.AFTER_CUT).  Returns the number of
        bytes cut.  For a global byte budget: the framer's memory goes back to
        nothing."""
        if self._closed:
            return 0
        self._run()
        n = len(self._buf) - self._pos
        if n == 0:
            return 0
        end = self._off(len(self._buf))
        self._error(self._pos, len(self._buf), *_E.describe(_E.BUDGET_CUT, limit))
        self._reset(end)
        self._enter_scan(0, end, (_E.AFTER_CUT, end, limit))
        return n

    # ------------------------------------------------------------------ machinery
    def _off(self, index: int) -> int:
        return self._buf_off + index

    def _reset(self, stream_offset: int) -> None:
        self._buf = bytearray()
        self._buf_off = stream_offset
        self._pos = 0

    def _garbage(self, suffix: int = 0, c: int = 0, d: int = 0) -> tuple[str, str, str]:
        """(structure, field, reason) of the garbage being reported: its problem,
        and why it is reported now (framing_errors: a suffix and its numbers)."""
        p = self._problem
        if p[0] == 0:
            return p[1], p[2], p[3] + _E.suffix_text(suffix, c, d)
        return _E.describe(p[0] + 16 * suffix, p[1], p[2], c, d)

    def _enter_scan(self, index: int, lost_at: int, problem: tuple) -> None:
        self._mode = _SCAN
        self._scan = index
        self._lost_at = lost_at
        self._problem = problem

    def _error(self, i: int, j: int, structure: str, field: str, reason: str) -> None:
        self._events.append(FramingError(self._off(i), structure, field, reason, bytes(self._buf[i:j])))
        self.stats["errors"] += 1
        self._pos = j

    def _compact(self) -> None:
        if self._pos >= _COMPACT_AT and self._pos * 2 >= len(self._buf):
            del self._buf[:self._pos]
            self._buf_off += self._pos
            self._scan = max(0, self._scan - self._pos)
            self._pos = 0

    def _run(self) -> None:
        """Turn buffered bytes into events until more input is needed."""
        while True:
            self._compact()
            if self._mode == _SYNC:
                if not self._step_sync():
                    return
            elif self._mode == _TAIL:
                if not self._step_tail():
                    return
            elif not self._step_scan():
                return

    def _step_tail(self) -> bool:
        need = self._tail_end - self._off(self._pos)
        avail = len(self._buf) - self._pos
        if avail >= need:
            self._error(self._pos, self._pos + need, *_E.describe(_E.TAIL, self._tail_of))
            self._mode = _SYNC
            return True
        if self._closed:
            if avail:
                self._error(self._pos, len(self._buf), *_E.describe(_E.TAIL_AT_CLOSE, self._tail_of, need - avail))
            return False
        return False

    def _step_sync(self) -> bool:
        buf, pos = self._buf, self._pos
        avail = len(buf) - pos
        if avail == 0:
            return False
        # the Signature is judged whole, or at the close, so that the problem
        # quoted does not depend on how the stream was cut
        bad = base_header_problem(buf, pos, pos + (avail if avail >= 8 or self._closed else min(avail, 4)))
        if bad is not None:
            self._enter_scan(pos + 1, self._off(pos), bad)
            return True
        if avail < _HDR:
            if self._closed:
                self._error(pos, len(buf), *_E.describe(_E.HEADER_AT_CLOSE, avail))
            return False
        _v, _r, flags, _s, size = _BASE.unpack_from(buf, pos)
        total = framed_length(flags, size)
        if avail < total:
            if self._closed:
                self._error(pos, len(buf), *_E.describe(_E.TRUNCATED_AT_CLOSE, total, size, avail))
            return False
        data = bytes(buf[pos:pos + total])
        kind = packet_kind(data)
        self._events.append(self._packet(self._off(pos), data, kind))
        self._pos = pos + total
        return True

    def _step_scan(self) -> bool:
        buf = self._buf
        start = max(self._scan, self._pos)
        while True:
            j = buf.find(_SIG, start + 4)
            if j < 0:
                break
            c = j - 4
            if buf[c] == C.BASE_VERSION:
                if len(buf) - c < _HDR:
                    # cannot decide yet: wait for the rest of this header
                    self._scan = c
                    if self._closed:
                        break
                    return self._flush_garbage(c)
                if check_base_header(buf, c) is None:
                    self._found(c)
                    return True
            start = c + 1
        # no candidate in [start, len - 8]; positions after that are undecided
        self._scan = max(start, len(buf) - 7) if not self._closed else len(buf)
        if self._closed:
            self._report_garbage(len(buf), _E.ENDED_BEFORE_PACKET)
            self._mode = _SYNC
            return False
        return self._flush_garbage(self._scan)

    def _flush_garbage(self, upto: int) -> bool:
        """Report scanned garbage in pieces of SCAN_CHUNK bytes (counted from its
        start, whatever the chunks it came in) so that it is not all buffered."""
        while upto - self._pos >= SCAN_CHUNK:
            self._error(self._pos, self._pos + SCAN_CHUNK, *self._garbage(_E.STILL_NO_PACKET))
            self._problem = (_E.NO_SIGNATURE, 0, 0)
        return False

    def _report_garbage(self, upto: int, suffix: int = 0, c: int = 0, d: int = 0) -> None:
        """Report the garbage up to ``upto``: its pieces of SCAN_CHUNK, then the
        rest with ``suffix`` (framing_errors) and its numbers."""
        self._flush_garbage(upto)
        if upto > self._pos:
            self._error(self._pos, upto, *self._garbage(suffix, c, d))

    def _found(self, c: int) -> None:
        self._report_garbage(c)
        found = self._off(c)
        self._events.append(Resynchronised(found, found - self._lost_at))
        self.stats["resynchronised"] += 1
        self._pos = c
        self._mode = _SYNC

    def _packet(self, offset: int, data: bytes, kind: str) -> Packet:
        self.stats["packets"] += 1
        state, note = self.state, ""
        new = _TRANSITIONS.get((state, kind))
        refused = kind in _SETUP and len(data) >= _INTERNAL_MIN and (data[18] | data[19] << 8) & _CS
        if refused:
            new = "Refused"
        if new is None:
            if state == "ConnectionParametersSeen" and kind not in _SETUP:
                new = "Established"
            else:
                new = state
                if state != "Unknown":
                    if kind in _SETUP:
                        note = "%s Packet in session state %s" % (kind, state)
                    elif state != "Established":
                        note = "%s before the session is established (state %s)" % (kind, state)
        if refused:
            note = "%s Packet refuses the connection (InternalHeader.Flags.CS)" % kind
        self.state = new
        return Packet(offset, len(data), data, kind, new, note)


# ====================================================================== UDP ping


def decode_ping(data, *, lenient: bool = False):
    """Decode one UDP (port 3527) datagram as a [MS-MQQB] 2.2.7 Ping Packet
    (:class:`~mqcodec.msmq.base.PingPacket`).  Raises only
    :class:`~mqcodec.errors.DecodeError`."""
    from .packet import decode_ping as _decode_ping
    try:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise DecodeError("PingPacket", "", 0, "input is %s, not bytes" % type(data).__name__)
        return _decode_ping(bytes(data), lenient=lenient)
    except DecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - the error model: nothing else escapes
        raise DecodeError("PingPacket", "", 0, "undecodable: %s: %s" % (type(exc).__name__, exc)) from None


# ====================================================================== UDP datagrams


def frame_datagram(payload) -> "Packet | FramingError":
    """A UDP (port 3527) datagram as a framing event: Packet(kind="Ping") when it
    is a 24-byte Ping Packet ([MS-MQQB] 2.2.7, Signature 0x5548 at offset 2),
    else a FramingError naming the field.  Decode it with :func:`decode_ping`."""
    data = bytes(payload)
    if len(data) < C.PING_PACKET_SIZE:
        return FramingError(0, "PingPacket", "Signature" if len(data) < 4 else "QMGuid",
                            "truncated: %d bytes, a Ping Packet is 24" % len(data), data)
    if data[2:4] != struct.pack("<H", C.PING_SIGNATURE):
        return FramingError(2, "PingPacket", "Signature", "Signature %r, MUST be 0x5548" % data[2:4], data)
    return Packet(0, len(data), data, "Ping", "Unknown",
                  "" if len(data) == C.PING_PACKET_SIZE else "%d bytes after the 24-byte Ping Packet"
                  % (len(data) - C.PING_PACKET_SIZE))
