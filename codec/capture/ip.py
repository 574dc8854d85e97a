"""IPv4 (RFC 791) and IPv6 (RFC 8200) headers, and UDP (RFC 768).

:func:`parse_ip` returns an :class:`IPHeader`: addresses, the upper-layer
protocol, where its bytes start and end in the frame, how many bytes the
header's length fields promise beyond what was captured (``missing``: a
snap-length cut), and whether the packet is a fragment.

Decisions:

* IPv4 ``Total Length`` bounds the payload; bytes after it are link-layer
  padding/trailer and are ignored.  A ``Total Length`` of 0 (TCP
  segmentation offload on the capturing host) means "to the end of the
  captured bytes".
* ``fragment`` is True for any IPv4 packet with MF set or a non-zero
  Fragment Offset and for any IPv6 packet whose Fragment header has M set or
  an offset.  IPv4 fragments are reassembled by :mod:`.ipfrag` (bounded);
  IPv6 fragments are reported as skipped frames.
* IPv6 extension headers walked: Hop-by-Hop (0), Routing (43), Fragment (44),
  Authentication Header (51), Destination Options (60), Mobility (135),
  HIP (139), Shim6 (140); at most :data:`MAX_EXT_HEADERS` of them.  ESP (50)
  and No Next Header (59) end the walk (the payload is opaque).
"""
from __future__ import annotations

import socket
import struct
from typing import NamedTuple

from .linklayer import LinkError

__all__ = ["IPHeader", "parse_ipv4", "parse_ipv6", "parse_udp", "IPError", "MAX_EXT_HEADERS",
           "PROTO_TCP", "PROTO_UDP"]

PROTO_TCP = 6
PROTO_UDP = 17
PROTO_ESP = 50
PROTO_NONE = 59
MAX_EXT_HEADERS = 16
_EXT_GENERIC = frozenset((0, 43, 60, 135, 139, 140))

_ntop = socket.inet_ntop
_AF4 = socket.AF_INET
_AF6 = socket.AF_INET6


class IPError(LinkError):
    """An IP/UDP header that is cut short or inconsistent."""


class IPHeader(NamedTuple):
    version: int
    src: str
    dst: str
    proto: int        # upper-layer protocol after extension headers
    start: int        # offset of the upper-layer header in the frame
    end: int          # end of the captured upper-layer bytes in the frame
    missing: int      # bytes the length fields promise beyond the capture
    fragment: bool
    ttl: int
    ident: int = 0    # IPv4 Identification
    frag: int = 0     # IPv4 Flags + Fragment Offset field (16 bits)


_V4 = struct.Struct("!BxHHHBB2x4s4s").unpack_from
_addr_cache: dict = {}


def _addr(raw: bytes, family) -> str:
    """Text form of an address; a bounded cache saves inet_ntop per packet."""
    text = _addr_cache.get(raw)
    if text is None:
        if len(_addr_cache) >= 65536:
            _addr_cache.clear()
        text = _addr_cache[raw] = _ntop(family, raw)
    return text


def parse_ipv4(data, off: int) -> IPHeader:
    n = len(data)
    if n - off < 20:
        raise IPError("IPv4", "header", off, "%d bytes, 20 needed" % max(n - off, 0), True)
    b0, total, ident, frag, ttl, proto, src, dst = _V4(data, off)
    if b0 >> 4 != 4:
        raise IPError("IPv4", "Version", off, "version %d" % (b0 >> 4))
    ihl = (b0 & 0x0F) * 4
    if ihl < 20:
        raise IPError("IPv4", "IHL", off, "IHL %d below 5" % (b0 & 0x0F))
    if n - off < ihl:
        raise IPError("IPv4", "Options", off + 20, "header of %d bytes cut at %d" % (ihl, n - off), True)
    if total == 0:
        total = n - off
    elif total < ihl:
        raise IPError("IPv4", "Total Length", off + 2, "total length %d below the header length %d" % (total, ihl))
    end = off + total
    missing = 0
    if end > n:
        missing = end - n
        end = n
    # MF flag or a fragment offset makes it a fragment
    return IPHeader(4, _addr(src, _AF4), _addr(dst, _AF4), proto, off + ihl, end, missing,
                    bool(frag & 0x3FFF), ttl, ident, frag)


def parse_ipv6(data, off: int) -> IPHeader:
    n = len(data)
    if n - off < 40:
        raise IPError("IPv6", "header", off, "%d bytes, 40 needed" % max(n - off, 0), True)
    if data[off] >> 4 != 6:
        raise IPError("IPv6", "Version", off, "version %d" % (data[off] >> 4))
    plen = (data[off + 4] << 8) | data[off + 5]
    nh = data[off + 6]
    src = _addr(bytes(data[off + 8:off + 24]), _AF6)
    dst = _addr(bytes(data[off + 24:off + 40]), _AF6)
    pos = off + 40
    end = pos + plen if plen else n  # 0: jumbogram (RFC 2675) -> captured bytes
    fragment = False
    count = 0
    while True:
        if nh in _EXT_GENERIC or nh == 44 or nh == 51:
            count += 1
            if count > MAX_EXT_HEADERS:
                raise IPError("IPv6", "Next Header", pos, "more than %d extension headers" % MAX_EXT_HEADERS)
            if pos + 8 > end:
                raise IPError("IPv6 extension header", "Hdr Ext Len", pos, "extension header exceeds the payload")
            if pos + 8 > n:
                raise IPError("IPv6 extension header", "Hdr Ext Len", pos, "extension header cut short", True)
            if nh == 44:
                hlen = 8
                if ((data[pos + 2] << 8) | data[pos + 3]) & 0xFFF9:  # offset or M flag
                    fragment = True
            elif nh == 51:
                hlen = (data[pos + 1] + 2) * 4
            else:
                hlen = (data[pos + 1] + 1) * 8
            if pos + hlen > end:
                raise IPError("IPv6 extension header", "Hdr Ext Len", pos + 1,
                              "extension header of %d bytes exceeds the payload" % hlen)
            if pos + hlen > n:
                raise IPError("IPv6 extension header", "Hdr Ext Len", pos + 1, "extension header cut short", True)
            nh = data[pos]
            pos += hlen
            continue
        break
    missing = 0
    if end > n:
        missing = end - n
        end = n
    return IPHeader(6, src, dst, nh, pos, end, missing, fragment, data[off + 7])


def parse_udp(data, off: int, end: int):
    """``(sport, dport, payload_start, payload_end, length_field)``."""
    if end - off < 8:
        raise IPError("UDP", "header", off, "%d bytes, 8 needed" % max(end - off, 0), True)
    sport = (data[off] << 8) | data[off + 1]
    dport = (data[off + 2] << 8) | data[off + 3]
    length = (data[off + 4] << 8) | data[off + 5]
    if length < 8:
        raise IPError("UDP", "Length", off + 4, "length %d below 8" % length)
    pend = min(end, off + length)
    return sport, dport, off + 8, pend, length
