"""From a :class:`~mqcodec.capture.frame.Frame` to a TCP segment or a UDP
datagram -- or to a typed reason why not.

:func:`decode_frame` never raises for the frame's contents: it returns one of

* :class:`TCPSegment` / :class:`UDPDatagram`;
* :class:`~mqcodec.capture.ipfrag.IPv4Fragment` -- one fragment of an IPv4
  datagram, for :class:`~mqcodec.capture.ipfrag.FragmentReassembler`;
* :class:`Skipped` -- a frame this package does not decode by design
  (unknown link type, non-IP EtherType, another IP protocol, an IPv6
  fragment, headers cut by the snap length); ``reason`` is a short stable string that
  the converter counts;
* :class:`Malformed` -- headers that contradict themselves (IHL below 5, TCP
  Data Offset below 5, a length that does not fit ...), naming the
  structure, the field and the offset *within the frame's data*.

This function is the per-packet hot path a compiled core replaces.
"""
from __future__ import annotations

from typing import NamedTuple

from .frame import Frame
from .ipfrag import MAX_DATAGRAM, IPv4Fragment
from .ip import PROTO_TCP, PROTO_UDP, parse_ipv4, parse_ipv6, parse_udp
from .linklayer import ETHERTYPE_IPV4, ETHERTYPE_IPV6, LinkError, UnsupportedLink, link_payload
from .tcp import parse_tcp

__all__ = ["TCPSegment", "UDPDatagram", "IPv4Fragment", "Skipped", "Malformed", "decode_frame",
           "decode_transport", "decode_reassembled"]


class TCPSegment(NamedTuple):
    frame_number: int
    ts_ns: int
    ip_version: int
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    window: int
    payload: bytes
    missing: int          # payload bytes the IP length promises but the capture lacks
    vlans: tuple


class UDPDatagram(NamedTuple):
    frame_number: int
    ts_ns: int
    ip_version: int
    src: str
    dst: str
    sport: int
    dport: int
    payload: bytes
    missing: int
    vlans: tuple


class Skipped(NamedTuple):
    frame_number: int
    reason: str


class Malformed(NamedTuple):
    frame_number: int
    structure: str
    field: str
    offset: int           # within the frame's captured data
    reason: str


def decode_frame(frame: Frame):
    data = frame.data
    number = frame.number
    try:
        etype, off, vlans = link_payload(frame.linktype, data)
        if etype == ETHERTYPE_IPV4:
            ip = parse_ipv4(data, off)
        elif etype == ETHERTYPE_IPV6:
            ip = parse_ipv6(data, off)
        else:
            return Skipped(number, "ethertype 0x%04x" % etype)
        # bytes the IP length promises beyond the capture are missing only when the snap
        # length cut the record; beyond what it cut they never existed (a damaged or lying
        # length field must not swallow the stream's next segments as a gap)
        missing = min(ip.missing, max(0, frame.origlen - frame.caplen))
        if ip.fragment:
            if ip.version != 4:
                return Skipped(number, "IP fragment")
            if missing:
                return Skipped(number, "IP fragment cut by the snap length")
            if (ip.frag & 0x1FFF) * 8 + (ip.end - ip.start) > MAX_DATAGRAM:
                return Malformed(number, "IPv4", "Fragment Offset", off + 6,
                                 "fragment reaches past 65535 bytes")
            return IPv4Fragment(number, frame.ts_ns, ip.src, ip.dst, ip.proto, ip.ident,
                                (ip.frag & 0x1FFF) * 8, bool(ip.frag & 0x2000), data[ip.start:ip.end], 0, vlans)
        return decode_transport(number, frame.ts_ns, ip.version, ip.src, ip.dst, ip.proto, data,
                                ip.start, ip.end, missing, vlans)
    except UnsupportedLink as exc:
        return Skipped(number, str(exc))
    except LinkError as exc:  # includes IPError
        if exc.cut and frame.caplen < frame.origlen:
            # headers cut by the snap length are not malformed
            return Skipped(number, "headers cut by the snap length")
        return Malformed(number, exc.structure, exc.field, exc.offset, exc.reason)


def decode_transport(number: int, ts_ns: int, version: int, src: str, dst: str, proto: int, data,
                     start: int, end: int, missing: int, vlans: tuple):
    """TCP/UDP in ``data[start:end]``; raises IPError (a LinkError) on a bad
    header -- :func:`decode_frame` and the fragment path turn it into a
    Malformed/Skipped result."""
    if proto == PROTO_TCP:
        sport, dport, seq, ack, flags, window, pstart = parse_tcp(data, start, end)
        return TCPSegment(number, ts_ns, version, src, dst, sport, dport, seq, ack,
                          flags, window, data[pstart:end], missing, vlans)
    if proto == PROTO_UDP:
        sport, dport, pstart, pend, length = parse_udp(data, start, end)
        umissing = max(0, start + length - pend) if missing else 0
        return UDPDatagram(number, ts_ns, version, src, dst, sport, dport, data[pstart:pend], umissing, vlans)
    return Skipped(number, "IP protocol %d" % proto)


def decode_reassembled(frag: IPv4Fragment, payload: bytes):
    """The transport result of a reassembled IPv4 datagram, attributed to
    the frame that completed it; a bad transport header is Malformed with
    its offset within the reassembled IP payload."""
    try:
        return decode_transport(frag.frame_number, frag.ts_ns, 4, frag.src, frag.dst, frag.proto, payload,
                                0, len(payload), 0, frag.vlans)
    except LinkError as exc:
        return Malformed(frag.frame_number, "reassembled " + exc.structure, exc.field, exc.offset, exc.reason)
