"""Writing captures: a classic-pcap writer, packet builders with correct
checksums, and a TCP conversation simulator.

* :class:`PcapWriter` writes the file header and records to a binary file
  object (microsecond or nanosecond magic, either byte order, a snap length
  that cuts records as a capturing host would); :class:`PcapngWriter`
  writes a pcapng section with any number of interfaces (link types).
* :func:`ethernet`, :func:`sll`, :func:`sll2`, :func:`null_loopback` wrap a
  network packet in a link layer; :func:`ipv4`, :func:`ipv6` build IP
  packets (IPv4 header checksum computed; IPv6 extension headers optional);
  :func:`tcp` and :func:`udp` build transport headers with the RFC 1071
  checksum over the pseudo-header.
* :class:`TcpConversation` produces the frames of a realistic TCP
  connection -- SYN, SYN+ACK, ACK, data segmented by MSS in both directions
  with ACKs, FIN/ACK close or RST -- as :class:`SimPacket` records that tests
  may reorder, duplicate or drop before writing.
"""
from __future__ import annotations

import socket
import struct
from typing import NamedTuple

from .linklayer import (
    LINKTYPE_ETHERNET,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_NULL,
    LINKTYPE_RAW,
)
from .frame import NS_PER_S
from .tcp import ACK, FIN, PSH, RST, SYN

__all__ = [
    "PcapWriter", "PcapngWriter", "ethernet", "sll", "sll2", "null_loopback", "ipv4", "ipv6", "tcp", "udp",
    "checksum", "TcpConversation", "SimPacket", "write_pcap", "fragment_ipv4",
]


def checksum(data: bytes) -> int:
    """RFC 1071 Internet checksum."""
    if len(data) % 2:
        data = data + b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _addr(ip: str) -> bytes:
    return socket.inet_pton(socket.AF_INET6 if ":" in ip else socket.AF_INET, ip)


def _pseudo(src: str, dst: str, proto: int, length: int) -> bytes:
    s, d = _addr(src), _addr(dst)
    if len(s) == 4:
        return s + d + struct.pack("!BBH", 0, proto, length)
    return s + d + struct.pack("!IxxxB", length, proto)


def tcp(src: str, dst: str, sport: int, dport: int, seq: int, ack: int, flags: int,
        payload: bytes = b"", window: int = 65535, options: bytes = b"") -> bytes:
    if len(options) % 4:
        options += b"\0" * (4 - len(options) % 4)
    doff = (20 + len(options)) // 4
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                      doff << 4, flags & 0xFF, window, 0, 0) + options
    seg = hdr + payload
    c = checksum(_pseudo(src, dst, 6, len(seg)) + seg)
    return seg[:16] + struct.pack("!H", c) + seg[18:]


def udp(src: str, dst: str, sport: int, dport: int, payload: bytes) -> bytes:
    length = 8 + len(payload)
    dgram = struct.pack("!HHHH", sport, dport, length, 0) + payload
    c = checksum(_pseudo(src, dst, 17, length) + dgram) or 0xFFFF
    return dgram[:6] + struct.pack("!H", c) + dgram[8:]


def ipv4(src: str, dst: str, proto: int, payload: bytes, *, ident: int = 0, ttl: int = 64,
         flags_frag: int = 0x4000, options: bytes = b"") -> bytes:
    if len(options) % 4:
        options += b"\0" * (4 - len(options) % 4)
    ihl = (20 + len(options)) // 4
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(payload), ident & 0xFFFF,
                      flags_frag, ttl, proto, 0, _addr(src), _addr(dst)) + options
    c = checksum(hdr)
    return hdr[:10] + struct.pack("!H", c) + hdr[12:] + payload


def fragment_ipv4(packet: bytes, mtu: int) -> list:
    """Split an IPv4 packet into fragments of at most ``mtu`` bytes (RFC 791
    section 3.2): payload pieces of a multiple of 8 bytes, MF on all but the
    last, DF cleared, Total Length and Header Checksum recomputed.  The
    whole header (options included) is repeated in every fragment."""
    ihl = (packet[0] & 0x0F) * 4
    header, payload = bytearray(packet[:ihl]), packet[ihl:]
    step = (mtu - ihl) // 8 * 8
    if step <= 0:
        raise ValueError("MTU %d leaves no room for data" % mtu)
    out = []
    for pos in range(0, len(payload), step):
        piece = payload[pos:pos + step]
        last = pos + step >= len(payload)
        h = bytearray(header)
        struct.pack_into("!H", h, 2, ihl + len(piece))
        struct.pack_into("!H", h, 6, (0 if last else 0x2000) | (pos // 8))
        struct.pack_into("!H", h, 10, 0)
        struct.pack_into("!H", h, 10, checksum(bytes(h)))
        out.append(bytes(h) + piece)
    return out


def ipv6(src: str, dst: str, proto: int, payload: bytes, *, hop_limit: int = 64,
         ext_headers=()) -> bytes:
    """``ext_headers``: sequence of (type, body) with type 0/43/60 (body
    padded to a multiple of 8 minus 2) or 44 (fragment: body of 6 bytes)."""
    chain = b""
    types = [t for t, _ in ext_headers] + [proto]
    for i, (t, body) in enumerate(ext_headers):
        nxt = types[i + 1]
        if t == 44:
            chain += struct.pack("!BB", nxt, 0) + body[:6].ljust(6, b"\0")
        elif t == 51:
            body = body.ljust(((len(body) + 2 + 3) // 4) * 4 - 2, b"\0")
            chain += struct.pack("!BB", nxt, (len(body) + 2) // 4 - 2) + body
        else:
            body = body.ljust(((len(body) + 2 + 7) // 8) * 8 - 2, b"\0")
            chain += struct.pack("!BB", nxt, (len(body) + 2) // 8 - 1) + body
    first = types[0]
    return struct.pack("!IHBB16s16s", 0x60000000, len(chain) + len(payload), first, hop_limit,
                       _addr(src), _addr(dst)) + chain + payload


def ethernet(packet: bytes, *, ethertype: int | None = None, src: bytes = b"\x02\0\0\0\0\x01",
             dst: bytes = b"\x02\0\0\0\0\x02", vlans=(), tpids=None) -> bytes:
    """``vlans``: VLAN IDs outermost first; ``tpids`` their TPIDs (default
    0x88A8 for outer tags of QinQ and 0x8100 for the innermost)."""
    if ethertype is None:
        ethertype = 0x86DD if packet[:1] and packet[0] >> 4 == 6 else 0x0800
    tags = b""
    vlans = list(vlans)
    if tpids is None:
        tpids = [0x88A8] * (len(vlans) - 1) + [0x8100] if vlans else []
    for i, vid in enumerate(vlans):
        nxt = tpids[i + 1] if i + 1 < len(vlans) else ethertype
        tags += struct.pack("!HH", vid & 0x0FFF, nxt)
    first = tpids[0] if vlans else ethertype
    return dst + src + struct.pack("!H", first) + tags + packet


def sll(packet: bytes, *, pkttype: int = 0, addr: bytes = b"\x02\0\0\0\0\x01") -> bytes:
    proto = 0x86DD if packet[0] >> 4 == 6 else 0x0800
    return struct.pack("!HHH8sH", pkttype, 1, len(addr), addr.ljust(8, b"\0"), proto) + packet


def sll2(packet: bytes, *, pkttype: int = 0, ifindex: int = 2, addr: bytes = b"\x02\0\0\0\0\x01") -> bytes:
    proto = 0x86DD if packet[0] >> 4 == 6 else 0x0800
    return struct.pack("!HHIHBB8s", proto, 0, ifindex, 1, pkttype, len(addr), addr.ljust(8, b"\0")) + packet


def null_loopback(packet: bytes, *, byte_order: str = "<", af6: int = 30) -> bytes:
    af = af6 if packet[0] >> 4 == 6 else 2
    return struct.pack(byte_order + "I", af) + packet


class PcapWriter:
    """Classic pcap writer on a binary file object (no other I/O)."""

    def __init__(self, f, linktype: int = LINKTYPE_ETHERNET, *, snaplen: int = 262144,
                 nanosecond: bool = False, byte_order: str = "<"):
        self.f = f
        self.linktype = linktype
        self.snaplen = snaplen
        self.nanosecond = nanosecond
        self.order = byte_order
        magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
        f.write(struct.pack(byte_order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
        self._rec = struct.Struct(byte_order + "IIII")

    def write(self, ts_ns: int, data: bytes, origlen: int | None = None) -> None:
        orig = len(data) if origlen is None else origlen
        cap = data[: self.snaplen]
        sec, frac = divmod(ts_ns, NS_PER_S)
        if not self.nanosecond:
            frac //= 1000
        self.f.write(self._rec.pack(sec, frac, len(cap), orig) + cap)


class PcapngWriter:
    """Minimal pcapng writer: one Section Header Block, Interface Description
    Blocks with ``if_tsresol`` = 9 (nanoseconds), Enhanced Packet Blocks."""

    def __init__(self, f, *, byte_order: str = "<"):
        self.f = f
        self.order = byte_order
        self.interfaces = 0
        self._block(0x0A0D0D0A, struct.pack(byte_order + "IHHq", 0x1A2B3C4D, 1, 0, -1))

    def _block(self, btype: int, body: bytes) -> None:
        body += b"\0" * (-len(body) % 4)
        n = 12 + len(body)
        self.f.write(struct.pack(self.order + "II", btype, n) + body + struct.pack(self.order + "I", n))

    def add_interface(self, linktype: int, snaplen: int = 0, *, tsresol: int = 9, tsoffset: int | None = None) -> int:
        """An IDB; ``tsresol`` is the raw ``if_tsresol`` byte (9: nanoseconds; top bit
        set: 2^-n), ``tsoffset`` the ``if_tsoffset`` seconds (signed 64 bits) when given."""
        o = self.order
        opts = struct.pack(o + "HHB3x", 9, 1, tsresol)                      # if_tsresol
        if tsoffset is not None:
            opts += struct.pack(o + "HHq", 14, 8, tsoffset)                 # if_tsoffset
        opts += struct.pack(o + "HH", 0, 0)                                 # opt_endofopt
        self._block(1, struct.pack(o + "HHI", linktype, 0, snaplen) + opts)
        self.interfaces += 1
        return self.interfaces - 1

    def write(self, interface_id: int, ts_ns: int, data: bytes, origlen: int | None = None) -> None:
        """An EPB; ``ts_ns`` is written as the 64-bit timestamp, in units of the
        interface's ``if_tsresol`` (nanoseconds by default)."""
        orig = len(data) if origlen is None else origlen
        ts = ts_ns & 0xFFFFFFFFFFFFFFFF
        self._block(6, struct.pack(self.order + "IIIII", interface_id, ts >> 32, ts & 0xFFFFFFFF,
                                   len(data), orig) + data)


class SimPacket(NamedTuple):
    ts_ns: int
    frame: bytes          # link-layer frame
    direction: int        # 0 client->server, 1 server->client
    seq: int
    length: int           # payload bytes
    flags: int


_LINK = {
    "ethernet": LINKTYPE_ETHERNET, "sll": LINKTYPE_LINUX_SLL, "sll2": LINKTYPE_LINUX_SLL2,
    "null": LINKTYPE_NULL, "raw": LINKTYPE_RAW,
}


class TcpConversation:
    """Simulate one TCP connection, frame by frame.

    ``link``: "ethernet" (with ``vlans``), "sll", "sll2", "null", "raw".
    Client and server addresses may be IPv4 or IPv6 (``ext_headers`` are
    then put in every IPv6 packet)."""

    def __init__(self, client=("10.0.0.1", 40000), server=("10.0.0.2", 1414), *, isn_client: int = 1000,
                 isn_server: int = 5000, mss: int = 1460, link: str = "ethernet", vlans=(),
                 ext_headers=(), start_ns: int = 1_700_000_000 * NS_PER_S, step_ns: int = 1000):
        self.ends = (client, server)
        self.next_seq = [isn_client & 0xFFFFFFFF, isn_server & 0xFFFFFFFF]
        self.mss = mss
        self.link = link
        self.linktype = _LINK[link]
        self.vlans = tuple(vlans)
        self.ext_headers = tuple(ext_headers)
        self.ts = start_ns
        self.step = step_ns
        self.packets: list = []
        self.ident = [1, 1]

    def _frame(self, d: int, seq: int, ack: int, flags: int, payload: bytes = b"") -> SimPacket:
        (sip, sport), (dip, dport) = self.ends[d], self.ends[1 - d]
        seg = tcp(sip, dip, sport, dport, seq, ack, flags, payload)
        if ":" in sip:
            pkt = ipv6(sip, dip, 6, seg, ext_headers=self.ext_headers)
        else:
            pkt = ipv4(sip, dip, 6, seg, ident=self.ident[d])
            self.ident[d] += 1
        if self.link == "ethernet":
            frame = ethernet(pkt, vlans=self.vlans,
                             src=b"\x02\0\0\0\0" + bytes([d + 1]), dst=b"\x02\0\0\0\0" + bytes([2 - d]))
        elif self.link == "sll":
            frame = sll(pkt, pkttype=4 if d == 0 else 0)
        elif self.link == "sll2":
            frame = sll2(pkt, pkttype=4 if d == 0 else 0)
        elif self.link == "null":
            frame = null_loopback(pkt)
        else:
            frame = pkt
        self.ts += self.step
        p = SimPacket(self.ts, frame, d, seq & 0xFFFFFFFF, len(payload), flags)
        self.packets.append(p)
        return p

    def handshake(self) -> list:
        c, s = self.next_seq
        out = [self._frame(0, c, 0, SYN), self._frame(1, s, c + 1, SYN | ACK), self._frame(0, c + 1, s + 1, ACK)]
        self.next_seq = [(c + 1) & 0xFFFFFFFF, (s + 1) & 0xFFFFFFFF]
        return out

    def send(self, direction: int, data: bytes, *, ack_each: bool = True) -> list:
        """Segments of at most MSS bytes from ``direction``; each segment is
        acknowledged by the peer when ``ack_each``."""
        out = []
        d = direction
        for i in range(0, len(data), self.mss):
            chunk = data[i:i + self.mss]
            seq = self.next_seq[d]
            out.append(self._frame(d, seq, self.next_seq[1 - d], ACK | PSH, chunk))
            self.next_seq[d] = (seq + len(chunk)) & 0xFFFFFFFF
            if ack_each:
                out.append(self._frame(1 - d, self.next_seq[1 - d], self.next_seq[d], ACK))
        return out

    def close(self, initiator: int = 0) -> list:
        d = initiator
        out = [self._frame(d, self.next_seq[d], self.next_seq[1 - d], FIN | ACK)]
        self.next_seq[d] = (self.next_seq[d] + 1) & 0xFFFFFFFF
        out.append(self._frame(1 - d, self.next_seq[1 - d], self.next_seq[d], FIN | ACK))
        self.next_seq[1 - d] = (self.next_seq[1 - d] + 1) & 0xFFFFFFFF
        out.append(self._frame(d, self.next_seq[d], self.next_seq[1 - d], ACK))
        return out

    def reset(self, direction: int = 0) -> list:
        d = direction
        return [self._frame(d, self.next_seq[d], self.next_seq[1 - d], RST | ACK)]


def write_pcap(f, packets, linktype: int = LINKTYPE_ETHERNET, **options) -> None:
    """Write ``packets`` (SimPacket or (ts_ns, frame) pairs) as one pcap."""
    w = PcapWriter(f, linktype, **options)
    for p in packets:
        w.write(p[0], p[1])
