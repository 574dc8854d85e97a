"""TCP (RFC 9293) segment header and per-connection stream reassembly.

I/O-free: :meth:`TCPReassembler.segment` takes one decoded segment and
returns the events it completes; :meth:`TCPReassembler.close` flushes what
is left at the end of the capture.

Events
------
:class:`StreamOpened`  a connection is first seen (``syn_seen`` tells
                       whether its start was captured).
:class:`StreamData`    new, in-order bytes of one direction.  Every event
                       carries the bytes of exactly one captured frame, its
                       ``frame_number`` and ``ts_ns``, so the framer above
                       knows which frame holds each stream byte range (see
                       also :class:`FrameMap`).
:class:`Gap`           bytes of one direction that were not captured:
                       ``offset`` and ``length`` in stream coordinates; the
                       stream continues after them.
:class:`StreamClosed`  one direction ended ("fin", "rst", "eof" at the end of
                       the capture, "reused" when a new SYN reused the
                       4-tuple, "evicted" past ``max_connections``).

Reassembly rules
----------------
* Connections are keyed by the 4-tuple; :class:`ConnKey` orders it client
  first.  The client is the sender of a SYN (or receiver of a SYN+ACK);
  without either, the sender of the first segment seen, unless its source
  port is one of ``server_ports`` (then it is the server).
* Stream offsets are unbounded ints: offset 0 is the byte after the SYN, or the
  first byte seen when the SYN was not captured (bytes older than it are
  dropped).  Sequence numbers are unwrapped modulo 2**32 against the next
  expected offset, so a stream may cross the 32-bit wrap and exceed 4 GiB.
* Bytes already delivered are never delivered again nor replaced:
  retransmissions and overlaps keep the copy delivered first (Wireshark's
  default); if buffered out-of-order copies overlap, the copy starting at
  the lower offset wins (equal offsets: the first seen).  A copy that
  differs from the copy received first -- compared with the direction's last
  ``OVERLAP_WINDOW`` delivered bytes, or with the waiting copy at the same
  offset -- is an :class:`OverlapConflict` event (``conflicting overlaps``);
  older bytes are not compared (``overlapping bytes not compared``), nor is
  a keep-alive (at most one byte at next - 1).
* Out-of-order segments wait in a per-direction buffer bounded by
  ``max_reassembly_bytes`` (default 4 MiB) and ``max_reassembly_segments`` (default
  4096).  When a bound is exceeded the hole before the oldest waiting byte is
  declared a :class:`Gap` and delivery goes on.
* A hole is also declared a Gap as soon as the peer acknowledges data beyond
  it while later data waits in the buffer, or acknowledges the direction's
  FIN (those bytes were sent and received but not captured) -- unless
  ``ack_gaps=False``, for captures whose frames are out of time order (an
  ACK captured before the data it acknowledges would otherwise turn that
  data into a Gap).  Holes left are declared on RST and at the end of the
  capture (up to the FIN, or the highest acknowledged byte).
* A segment cut by the snap length contributes the bytes captured and a
  Gap (reason "snaplen") for the bytes missing.
* A segment with neither SYN nor payload for an unknown connection does not
  create one (stray ACKs/FINs/RSTs are counted in ``stats``).  Closed
  connections are remembered (at most ``max_closed``) so that late
  retransmissions are ignored, not taken for new connections; a new SYN
  with another ISN opens a new connection on the same 4-tuple.
* At most ``max_connections`` (default 1,000,000) are open at once; past it
  the least recently active tenth is closed with reason "evicted" (their
  holes declared as Gaps first).
"""
from __future__ import annotations

import bisect
import heapq
import struct
from collections import Counter, OrderedDict
from typing import NamedTuple

from .ip import IPError

__all__ = [
    "parse_tcp",
    "ConnKey",
    "StreamOpened",
    "StreamData",
    "Gap",
    "StreamClosed",
    "OverlapConflict",
    "TCPReassembler",
    "OVERLAP_WINDOW",
    "FrameMap",
    "CLIENT_TO_SERVER",
    "SERVER_TO_CLIENT",
    "FIN", "SYN", "RST", "PSH", "ACK", "URG",
]

FIN, SYN, RST, PSH, ACK, URG = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20

CLIENT_TO_SERVER = 0
SERVER_TO_CLIENT = 1

_MOD = 1 << 32
_HALF = 1 << 31
_MASK = _MOD - 1

DEFAULT_SERVER_PORTS = frozenset((1414, 1801, 3527, 2101, 2103, 2105))

#: delivered bytes each direction keeps to compare retransmitted/overlapping copies with
#: (the last ones not yet acknowledged; at most twice this between trims)
OVERLAP_WINDOW = 16 << 10


_TCP = struct.Struct("!HHIIBBH").unpack_from


def parse_tcp(data, off: int, end: int):
    """``(sport, dport, seq, ack, flags, window, payload_start)``.

    Raises :class:`~mqcodec.capture.ip.IPError` when the header is cut short
    or its Data Offset is impossible."""
    if end - off < 20:
        raise IPError("TCP", "header", off, "%d bytes, 20 needed" % max(end - off, 0), True)
    sport, dport, seq, ack, doff, flags, window = _TCP(data, off)
    doff = (doff >> 4) * 4
    if doff < 20:
        raise IPError("TCP", "Data Offset", off + 12, "data offset %d below 5" % (doff // 4))
    if off + doff > end:
        raise IPError("TCP", "Options", off + 20, "header of %d bytes cut at %d" % (doff, end - off), True)
    return sport, dport, seq, ack, flags, window, off + doff


class ConnKey(NamedTuple):
    """One TCP connection: ``stream`` is its 0-based index in order of first
    appearance; addresses as text, client first."""

    stream: int
    client: str
    client_port: int
    server: str
    server_port: int


class StreamOpened(NamedTuple):
    conn: ConnKey
    syn_seen: bool
    frame_number: int
    ts_ns: int


class StreamData(NamedTuple):
    conn: ConnKey
    direction: int        # CLIENT_TO_SERVER or SERVER_TO_CLIENT
    offset: int           # stream offset of data[0]
    data: bytes
    frame_number: int     # the frame these bytes were captured in
    ts_ns: int


class Gap(NamedTuple):
    conn: ConnKey
    direction: int
    offset: int           # stream offset of the first missing byte
    length: int
    frame_number: int     # frame whose arrival revealed the gap (at end of capture: the last frame)
    ts_ns: int
    reason: str | None    # "lost", "snaplen", "buffer" (None: the compiled reassembly keeps none)


class OverlapConflict(NamedTuple):
    """A copy of bytes ``[offset, offset + length)`` of one direction differs from
    the copy received first (delivered, or waiting in the reorder buffer).  The
    first copy is kept (Wireshark's default); the event tells the layers above
    that the bytes are disputed (a retransmission with other content: tampering,
    or a broken middlebox)."""

    conn: ConnKey
    direction: int
    offset: int           # stream offset of the first compared byte
    length: int           # bytes compared (some of them differ)
    frame_number: int     # the frame carrying the differing copy
    ts_ns: int


class StreamClosed(NamedTuple):
    conn: ConnKey
    direction: int
    offset: int           # stream length delivered (data + gaps)
    reason: str | None    # "fin", "rst", "eof", "reused", "evicted" (None: the compiled reassembly)
    frame_number: int
    ts_ns: int


class _Half:
    __slots__ = ("base", "next", "pending", "heap", "pbytes", "fin", "closed", "max_ack", "syn", "tail")

    def __init__(self):
        self.base: int | None = None  # sequence number of stream offset 0
        self.next = 0         # next expected stream offset
        self.pending = {}     # offset -> [data or None (hole), length, frame, ts, reason]
        self.heap = []        # offsets in pending
        self.pbytes = 0
        self.fin = None       # stream offset of the FIN, when seen
        self.closed = False
        self.max_ack = None   # highest stream offset the peer acknowledged
        self.syn = False
        self.tail = bytearray()  # the last delivered bytes, ending at next (overlap checks)

    def unwrap(self, seq: int) -> int:
        """The stream offset of ``seq`` (callers first check that ``base`` is known)."""
        base = self.base
        if base is None:
            raise RuntimeError("TCP half: unwrap before the base sequence number is known")
        nxt = self.next
        return nxt + (((seq - base - nxt) + _HALF) & _MASK) - _HALF


class _Conn:
    __slots__ = ("key", "addr", "half", "closed", "last")

    def __init__(self, key: ConnKey, addr):
        self.key = key
        self.addr = addr      # (client ip, client port)
        self.half = (_Half(), _Half())
        self.closed = False
        self.last = 0         # frame number of the latest segment (for eviction)


#: the counters of :attr:`TCPReassembler.stats` the compiled capture core keeps too, under
#: these names (a capture's report holds them as ``"tcp"`` whichever implementation read it)
SHARED_STATS = ("retransmitted segments", "overlapping segments", "out-of-order segments",
                "overlapping bytes not compared", "conflicting overlaps", "segments after close",
                "segments of unknown connections", "evicted connections")


class TCPReassembler:
    """Per-connection, per-direction TCP reassembly (see the module doc)."""

    def __init__(self, *, max_reassembly_bytes: int = 4 << 20, max_reassembly_segments: int = 4096,
                 server_ports=DEFAULT_SERVER_PORTS, max_closed: int = 65536, ack_gaps: bool = True,
                 max_connections: int = 1_000_000, streams_by_frame: bool = False):
        """``streams_by_frame``: a connection's ``ConnKey.stream`` is the number
        of the frame that opened it instead of its index in order of opening
        (a frame opens at most one connection): what a reassembler fed one
        connection's frames at a time gives, for the caller to turn into the
        capture-wide index (:func:`mqcodec.capture.connections.stream_indices`)."""
        self.streams_by_frame = streams_by_frame
        self.ack_gaps = ack_gaps
        self.max_connections = max_connections
        self.open_connections = 0
        self.max_reassembly_bytes = max_reassembly_bytes
        self.max_reassembly_segments = max_reassembly_segments
        self.server_ports = frozenset(server_ports)
        self.max_closed = max_closed
        self.conns: dict = {}  # (src, sport, dst, dport) -> (_Conn, direction), both orientations
        self.closed_conns: OrderedDict = OrderedDict()
        self.next_stream = 0
        self.stats: Counter = Counter()

    # -- entry point ------------------------------------------------------------
    def segment(self, src: str, sport: int, dst: str, dport: int, seq: int, ack: int, flags: int,
                payload: bytes, missing: int, frame_number: int, ts_ns: int) -> list:
        out: list = []
        tkey = (src, sport, dst, dport)
        entry = self.conns.get(tkey)
        if entry is not None:
            conn, d = entry
            if flags & SYN and not flags & ACK:
                h = conn.half[d]
                if h.base is not None and h.syn and ((seq + 1 - h.base) & _MASK) != 0:
                    self._finish(conn, "reused", frame_number, ts_ns, out)
                    entry = None
                # a SYN after mid-stream data, or a retransmitted SYN: ignored
        if entry is None:
            closed = self.closed_conns.get(tkey)
            if closed is not None and not (flags & SYN and not flags & ACK):
                self.stats["segments after close"] += 1
                return out
            if not (flags & SYN or payload or missing):
                self.stats["segments of unknown connections"] += 1
                return out
            if closed is not None:
                del self.closed_conns[tkey]
                self.closed_conns.pop((dst, dport, src, sport), None)
            a, b = (src, sport), (dst, dport)
            if flags & SYN:
                client = b if flags & ACK else a
            elif sport in self.server_ports and dport not in self.server_ports:
                client = b
            else:
                client = a
            server = b if client == a else a
            key = ConnKey(frame_number if self.streams_by_frame else self.next_stream,
                          client[0], client[1], server[0], server[1])
            self.next_stream += 1
            conn = _Conn(key, client)
            d = 0 if client == a else 1
            self.conns[tkey] = (conn, d)
            self.conns[(dst, dport, src, sport)] = (conn, 1 - d)
            self.open_connections += 1
            out.append(StreamOpened(key, bool(flags & SYN), frame_number, ts_ns))
            if self.open_connections > self.max_connections:
                self._evict(conn, frame_number, ts_ns, out)
        conn.last = frame_number
        h = conn.half[d]
        peer = conn.half[1 - d]
        key = conn.key

        if flags & SYN:
            if h.base is None:
                h.base = (seq + 1) & _MASK
                h.syn = True
            seq = (seq + 1) & _MASK
        elif h.base is None and (payload or missing or flags & FIN):
            h.base = seq  # start not captured: the first byte seen is offset 0

        if flags & RST:
            self._finish(conn, "rst", frame_number, ts_ns, out)
            return out

        length = len(payload) + missing
        if h.base is not None and not h.closed:
            off = h.unwrap(seq)
            if length:
                self._data(key, d, h, off, payload, missing, frame_number, ts_ns, out)
            if flags & FIN and h.fin is None:
                h.fin = off + length
            if h.fin is not None and h.next >= h.fin and not h.closed:
                h.closed = True
                out.append(StreamClosed(key, d, h.next, "fin", frame_number, ts_ns))

        # acknowledgements tell what the peer's direction delivered
        if flags & ACK and peer.base is not None and not peer.closed:
            aoff = peer.unwrap(ack)
            if peer.max_ack is None or aoff > peer.max_ack:
                peer.max_ack = aoff
            if self.ack_gaps and aoff > peer.next and (peer.heap or (peer.fin is not None and aoff > peer.fin)):
                # the peer received bytes we never saw: declare them lost
                while peer.heap and aoff > peer.next:
                    self._skip_to(key, 1 - d, peer, min(aoff, peer.heap[0]), "lost", frame_number, ts_ns, out)
                if peer.fin is not None and aoff > peer.fin:
                    self._skip_to(key, 1 - d, peer, peer.fin, "lost", frame_number, ts_ns, out)
                if peer.fin is not None and peer.next >= peer.fin:
                    peer.closed = True
                    out.append(StreamClosed(key, 1 - d, peer.next, "fin", frame_number, ts_ns))
        if conn.half[0].closed and conn.half[1].closed:
            self._retire(conn)
        return out

    # -- data ---------------------------------------------------------------------
    def _compare(self, key, d, h, off, data, frame_number, ts_ns, out) -> None:
        """``data`` (stream offset ``off``) overlaps bytes already delivered: compare
        the part still in the direction's tail with it (an OverlapConflict when they
        differ; the delivered copy stays)."""
        nxt = h.next
        tail = h.tail
        start = max(off, nxt - len(tail))
        end = min(off + len(data), nxt)
        if end <= start:
            if min(off + len(data), nxt) > off:
                self.stats["overlapping bytes not compared"] += min(off + len(data), nxt) - off
            return
        if start > off:
            self.stats["overlapping bytes not compared"] += start - off
        t0 = len(tail) - (nxt - start)
        if tail[t0:t0 + end - start] != data[start - off:end - off]:
            self.stats["conflicting overlaps"] += 1
            out.append(OverlapConflict(key, d, start, end - start, frame_number, ts_ns))

    @staticmethod
    def _keep(h, data) -> None:
        """Delivered ``data`` joins the tail (trimmed to OVERLAP_WINDOW when twice that)."""
        tail = h.tail
        tail += data
        if len(tail) > 2 * OVERLAP_WINDOW:
            del tail[:len(tail) - OVERLAP_WINDOW]

    def _data(self, key, d, h, off, payload, missing, frame_number, ts_ns, out) -> None:
        nxt = h.next
        plen = len(payload)
        if off + plen + missing <= nxt:
            self.stats["retransmitted segments"] += 1
            # a keep-alive (at most one byte, one below the next expected) is not compared
            if plen and not (plen == 1 and off == nxt - 1):
                self._compare(key, d, h, off, payload, frame_number, ts_ns, out)
            return
        if off <= nxt:
            if off + plen > nxt:
                if off < nxt:
                    self.stats["overlapping segments"] += 1
                    self._compare(key, d, h, off, payload, frame_number, ts_ns, out)
                    payload = payload[nxt - off:]
                out.append(StreamData(key, d, nxt, bytes(payload), frame_number, ts_ns))
                self._keep(h, payload)
                h.next = nxt = off + plen
            elif off < nxt and plen:  # a longer copy of delivered bytes, cut by the snap length
                self._compare(key, d, h, off, payload, frame_number, ts_ns, out)
            if missing:
                start = max(nxt, off + plen)
                gap = off + plen + missing - start
                out.append(Gap(key, d, start, gap, frame_number, ts_ns, "snaplen"))
                h.next = start + gap
                h.tail.clear()
            if h.heap:
                self._drain(key, d, h, out)
            return
        # out of order: buffer (first copy wins at equal offsets)
        self.stats["out-of-order segments"] += 1
        pend = h.pending
        if plen:
            self._store(h, off, payload, plen, frame_number, ts_ns, "",
                        lambda o, n: out.append(OverlapConflict(key, d, o, n, frame_number, ts_ns)))
        if missing:
            self._store(h, off + plen, None, missing, frame_number, ts_ns, "snaplen")
        if h.pbytes > self.max_reassembly_bytes or len(pend) > self.max_reassembly_segments:
            self.stats["buffer overflows"] += 1
            self._skip_to(key, d, h, h.heap[0], "buffer", frame_number, ts_ns, out)

    def _store(self, h, off, data, length, frame_number, ts_ns, reason, conflict=None) -> None:
        old = h.pending.get(off)
        if old is not None and data is not None and old[0] is not None and conflict is not None:
            n = min(len(old[0]), len(data))
            if old[0][:n] != data[:n]:   # two waiting copies at one offset differ: the first stays
                self.stats["conflicting overlaps"] += 1
                conflict(off, n)
        if old is None:
            h.pending[off] = [data, length, frame_number, ts_ns, reason]
            heapq.heappush(h.heap, off)
            h.pbytes += length
        elif length > old[1]:
            if old[0] is None and data is not None:
                old[0] = bytes(data)
            elif data is not None:
                old[0] = old[0] + bytes(data[old[1]:])
            else:
                return  # a longer hole after a shorter real copy: keep the copy
            h.pbytes += length - old[1]
            old[1] = length
        elif old[0] is None and data is not None:
            old[0] = bytes(data[:old[1]]) if length >= old[1] else None
            if old[0] is None:
                return

    def _drain(self, key, d, h, out) -> None:
        heap, pend = h.heap, h.pending
        while heap and heap[0] <= h.next:
            off = heapq.heappop(heap)
            data, length, frame_number, ts_ns, reason = pend.pop(off)
            h.pbytes -= length
            end = off + length
            nxt = h.next
            if end <= nxt:
                self.stats["retransmitted segments"] += 1
                continue
            if data is None:
                out.append(Gap(key, d, nxt, end - nxt, frame_number, ts_ns, reason or "lost"))
                h.tail.clear()
            else:
                if off < nxt:
                    self.stats["overlapping segments"] += 1
                    self._compare(key, d, h, off, data, frame_number, ts_ns, out)
                new = bytes(data[nxt - off:]) if off < nxt else bytes(data)
                out.append(StreamData(key, d, nxt, new, frame_number, ts_ns))
                self._keep(h, new)
            h.next = end

    def _skip_to(self, key, d, h, limit, reason, frame_number, ts_ns, out) -> None:
        """Declare [next, limit) lost, then deliver what follows."""
        if limit > h.next:
            out.append(Gap(key, d, h.next, limit - h.next, frame_number, ts_ns, reason))
            h.next = limit
            h.tail.clear()
        self._drain(key, d, h, out)

    # -- closing --------------------------------------------------------------
    def _flush_half(self, key, d, h, frame_number, ts_ns, out) -> None:
        while h.heap:
            self._skip_to(key, d, h, h.heap[0], "lost", frame_number, ts_ns, out)
        end = h.fin
        if end is None and h.max_ack is not None:
            end = h.max_ack
        if end is not None and end > h.next:
            out.append(Gap(key, d, h.next, end - h.next, frame_number, ts_ns, "lost"))
            h.next = end
            h.tail.clear()

    def _finish(self, conn, reason, frame_number, ts_ns, out) -> None:
        for d in (0, 1):
            h = conn.half[d]
            if h.closed:
                continue
            if h.base is not None:
                self._flush_half(conn.key, d, h, frame_number, ts_ns, out)
            h.closed = True
            r = "fin" if h.fin is not None and h.next >= h.fin and reason != "reused" else reason
            out.append(StreamClosed(conn.key, d, h.next, r, frame_number, ts_ns))
        self._retire(conn)

    def _evict(self, keep, frame_number, ts_ns, out) -> None:
        """Too many open connections: close the least recently active tenth
        (reason "evicted"), never ``keep``."""
        conns = {id(c): c for c, _ in self.conns.values() if c is not keep}
        victims = sorted(conns.values(), key=lambda c: c.last)[:max(1, self.max_connections // 10)]
        self.stats["evicted connections"] += len(victims)
        for conn in victims:
            self._finish(conn, "evicted", frame_number, ts_ns, out)

    def _retire(self, conn) -> None:
        if not conn.closed:
            self.open_connections -= 1
        conn.closed = True
        k = conn.key
        closed = self.closed_conns
        for tkey in ((k.client, k.client_port, k.server, k.server_port),
                     (k.server, k.server_port, k.client, k.client_port)):
            entry = self.conns.get(tkey)
            if entry is not None and entry[0] is conn:
                del self.conns[tkey]
            closed[tkey] = k
            closed.move_to_end(tkey)
        while len(closed) > 2 * self.max_closed:
            closed.popitem(last=False)

    # -- for a global byte budget (mqcodec.capture.budget) ----------------------
    def buffered(self):
        """``(ConnKey, direction, bytes)`` for every open direction whose reorder
        buffer holds data (bytes of captured data; snap-length holes cost nothing)."""
        for conn, d in self.conns.values():
            h = conn.half[d]
            if h.pending:
                yield conn.key, d, sum(len(e[0]) for e in h.pending.values() if e[0] is not None)

    def flush_buffer(self, key: "ConnKey", direction: int, frame_number: int = 0, ts_ns: int = 0) -> list:
        """Empty one direction's reorder buffer: each hole before buffered data is
        declared a :class:`Gap` (reason "budget") and the data is delivered, as when
        ``max_reassembly_bytes`` is exceeded.  Returns the events."""
        out: list = []
        entry = self.conns.get((key.client, key.client_port, key.server, key.server_port))
        if entry is None or entry[0].key != key:
            return out
        h = entry[0].half[direction]
        if h.closed:
            return out
        while h.heap:
            self._skip_to(key, direction, h, h.heap[0], "budget", frame_number, ts_ns, out)
        return out

    def close(self, frame_number: int = 0, ts_ns: int = 0) -> list:
        """End of capture: flush every open connection ("eof")."""
        out: list = []
        conns = {id(c): c for c, _ in self.conns.values()}
        for conn in sorted(conns.values(), key=lambda c: c.key.stream):
            self._finish(conn, "eof", frame_number, ts_ns, out)
        return out


class FrameMap:
    """Which frame holds each byte of one stream direction.

    Feed it the StreamData/Gap events of one direction (``add``) and ask
    ``frame_at(offset)``; ``discard_before(offset)`` forgets ranges the
    framer no longer needs, so memory stays bounded."""

    __slots__ = ("_starts", "_frames")

    def __init__(self):
        self._starts: list = []
        self._frames: list = []

    def add(self, offset: int, frame_number: int) -> None:
        self._starts.append(offset)
        self._frames.append(frame_number)

    def frame_at(self, offset: int):
        i = bisect.bisect_right(self._starts, offset) - 1
        return self._frames[i] if i >= 0 else None

    def frames_between(self, start: int, end: int) -> list:
        i = max(bisect.bisect_right(self._starts, start) - 1, 0)
        j = bisect.bisect_left(self._starts, end)
        return self._frames[i:j]

    def discard_before(self, offset: int) -> None:
        i = bisect.bisect_right(self._starts, offset) - 1
        if i > 0:
            del self._starts[:i]
            del self._frames[:i]
