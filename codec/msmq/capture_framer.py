"""MSMQ framing driven by ``mqcodec.capture`` events (tests and the fuzz
harnesses): :class:`CaptureFramer` runs one
:class:`~mqcodec.msmq.framing.MSMQStreamFramer` per direction of each TCP
connection and frames UDP ping datagrams, and tags every event with the
capture frames that hold its first and last bytes.

It sits above both layers it joins: it imports the capture's
:class:`~mqcodec.capture.tcp.FrameMap` and the MSMQ framer; neither of
those imports it.
"""
from __future__ import annotations

from typing import NamedTuple

from ..capture.tcp import FrameMap
from . import constants as C
from .framing import MSMQStreamFramer, Packet, Resynchronised, frame_datagram

__all__ = ["CaptureFramer", "CapturedEvent"]


class CapturedEvent(NamedTuple):
    """A framing event of one TCP connection direction (or one UDP datagram)."""

    conn: object              # mqcodec.capture ConnKey (the UDPDatagram for a ping)
    direction: int            # CLIENT_TO_SERVER (0) / SERVER_TO_CLIENT (1)
    event: object             # Packet, FramingError or Resynchronised
    first_frame: int | None   # capture frame holding the event's first byte (None: in a gap)
    last_frame: int | None    # frame holding its last byte
    ts_ns: int                # time of the frame whose arrival completed the event




class CaptureFramer:
    """Drives one :class:`MSMQStreamFramer` per direction of each TCP
    connection from the events of ``mqcodec.capture`` (StreamOpened,
    StreamData, Gap, StreamClosed) and frames UDP datagrams to or from
    ``udp_ports``.  ``on_event(ev)`` returns a list of :class:`CapturedEvent`.
    Connections whose server port is not in ``tcp_ports`` are ignored.  A
    direction whose start (SYN) was not captured is framed unsynchronised."""

    def __init__(self, *, tcp_ports=(C.TCP_PORT,), udp_ports=(C.PING_PORT,)):
        self.tcp_ports = None if tcp_ports is None else frozenset(tcp_ports)
        self.udp_ports = None if udp_ports is None else frozenset(udp_ports)
        self._framers: dict = {}          # (conn, direction) -> (framer, FrameMap)
        self._synced: dict = {}           # conn -> syn_seen

    def _wanted(self, conn) -> bool:
        return self.tcp_ports is None or conn.server_port in self.tcp_ports

    def _get(self, conn, d, offset):
        key = (conn, d)
        entry = self._framers.get(key)
        if entry is None:
            synced = self._synced.get(conn, False) and offset == 0
            entry = (MSMQStreamFramer(offset=offset, synchronised=synced), FrameMap())
            self._framers[key] = entry
        return entry

    def _drain(self, conn, d, framer, fmap, ts_ns, out) -> None:
        for ev in framer:
            if isinstance(ev, Resynchronised):
                first = last = fmap.frame_at(ev.offset)
            else:
                n = ev.length if isinstance(ev, Packet) else len(ev.raw)
                first, last = fmap.frame_at(ev.offset), fmap.frame_at(ev.offset + max(n, 1) - 1)
            out.append(CapturedEvent(conn, d, ev, first, last, ts_ns))
        fmap.discard_before(framer.offset)

    def on_event(self, ev) -> list:
        name = type(ev).__name__
        out: list = []
        if name == "UDPDatagram":
            ports = self.udp_ports
            if ports is None or ev.dport in ports or ev.sport in ports:
                d = 0 if ports is None or ev.dport in ports else 1
                out.append(CapturedEvent(ev, d, frame_datagram(ev.payload), ev.frame_number,
                                         ev.frame_number, ev.ts_ns))
            return out
        conn = getattr(ev, "conn", None)
        if conn is None or not self._wanted(conn):
            return out
        if name == "StreamOpened":
            self._synced[conn] = bool(ev.syn_seen)
        elif name == "StreamData":
            framer, fmap = self._get(conn, ev.direction, ev.offset)
            end = framer.end
            data = ev.data
            if ev.offset > end:                       # defensive: bytes the reassembler skipped
                framer.gap(ev.offset - end)
                fmap.add(end, None)
            elif ev.offset < end:                     # defensive: bytes already fed
                data = data[end - ev.offset:]
            if data:
                fmap.add(max(ev.offset, end), ev.frame_number)
                framer.feed(data)
            self._drain(conn, ev.direction, framer, fmap, ev.ts_ns, out)
        elif name == "Gap":
            framer, fmap = self._get(conn, ev.direction, ev.offset)
            fmap.add(ev.offset, None)
            framer.gap(ev.length)
            self._drain(conn, ev.direction, framer, fmap, ev.ts_ns, out)
        elif name == "StreamClosed":
            entry = self._framers.pop((conn, ev.direction), None)
            if entry is not None:
                framer, fmap = entry
                framer.close()
                self._drain(conn, ev.direction, framer, fmap, ev.ts_ns, out)
            if not any(k[0] == conn for k in self._framers):
                self._synced.pop(conn, None)
        return out

    def close(self) -> list:
        """End of the capture: close every direction still open."""
        out: list = []
        for (conn, d), (framer, fmap) in list(self._framers.items()):
            framer.close()
            self._drain(conn, d, framer, fmap, 0, out)
        self._framers.clear()
        self._synced.clear()
        return out
