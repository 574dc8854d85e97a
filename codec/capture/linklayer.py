"""Link layers: from a frame's bytes to the network-layer packet inside.

Supported LINKTYPE values (tcpdump.org "LINK-LAYER HEADER TYPES"):

=====  ======================  ==============================================
value  name                    header
=====  ======================  ==============================================
0      NULL (BSD loopback)     4-byte AF_ value in the *capturing host's*
                               byte order: both orders are accepted (a value
                               above 0xFFFF is byte-swapped)
1      ETHERNET                dst(6) src(6) EtherType(2), then any number
                               of 802.1Q/802.1ad tags (TPID 0x8100, 0x88A8,
                               0x9100: TCI(2) EtherType(2)), bounded by 8
12/14  RAW (OpenBSD/BSD DLTs)  raw IP, version from the first nibble
101    RAW                     raw IP, version from the first nibble
108    LOOP (OpenBSD)          as NULL but the AF_ value is big-endian
113    LINUX_SLL               packet type(2) ARPHRD(2) addr len(2) addr(8)
                               protocol(2) = 16 bytes
228    IPV4                    raw IPv4
229    IPV6                    raw IPv6
276    LINUX_SLL2              protocol(2) reserved(2) ifindex(4) ARPHRD(2)
                               packet type(1) addr len(1) addr(8) = 20 bytes
=====  ======================  ==============================================

:func:`link_payload` returns ``(ethertype, offset, vlans)``: the EtherType
of the network packet (0x0800 IPv4, 0x86DD IPv6, or another value the
caller skips), where it starts in the frame, and the VLAN IDs crossed
(outermost first).  Problems raise :class:`LinkError`; a link type we do not
decode raises :class:`UnsupportedLink`.
"""
from __future__ import annotations

__all__ = [
    "link_payload",
    "LinkError",
    "UnsupportedLink",
    "SUPPORTED_LINKTYPES",
    "LINKTYPE_NULL",
    "LINKTYPE_ETHERNET",
    "LINKTYPE_RAW",
    "LINKTYPE_LOOP",
    "LINKTYPE_LINUX_SLL",
    "LINKTYPE_LINUX_SLL2",
    "LINKTYPE_IPV4",
    "LINKTYPE_IPV6",
    "ETHERTYPE_IPV4",
    "ETHERTYPE_IPV6",
    "VLAN_TPIDS",
]

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
DLT_RAW_12 = 12
DLT_RAW_14 = 14

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
VLAN_TPIDS = frozenset((0x8100, 0x88A8, 0x9100))
MAX_VLAN_TAGS = 8

# AF_INET is 2 everywhere; AF_INET6 is 10 (Linux), 24 (NetBSD/OpenBSD/...),
# 28 (FreeBSD/DragonFly), 30 (macOS/iOS), 23 (Windows) -- the values
# libpcap's documentation of DLT_NULL lists.
_AF_INET = 2
_AF_INET6 = frozenset((10, 23, 24, 28, 30))

SUPPORTED_LINKTYPES = frozenset((
    LINKTYPE_NULL, LINKTYPE_ETHERNET, DLT_RAW_12, DLT_RAW_14, LINKTYPE_RAW, LINKTYPE_LOOP,
    LINKTYPE_LINUX_SLL, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL2,
))


class LinkError(Exception):
    """A link-layer header that is cut short or inconsistent."""

    def __init__(self, structure: str, field: str, offset: int, reason: str, cut: bool = False):
        super().__init__(structure, field, offset, reason)
        self.structure, self.field, self.offset, self.reason = structure, field, offset, reason
        #: True when the problem is only that the bytes ran out (a snap-length
        #: cut if the frame's caplen < origlen)
        self.cut = cut


class UnsupportedLink(Exception):
    """A link type (or a link-layer payload) this package does not decode."""


def _raw(data) -> int:
    if not data:
        raise LinkError("raw IP", "version", 0, "empty frame", True)
    v = data[0] >> 4
    if v == 4:
        return ETHERTYPE_IPV4
    if v == 6:
        return ETHERTYPE_IPV6
    raise LinkError("raw IP", "version", 0, "IP version %d" % v)


def _family(af: int, structure: str) -> int:
    if af > 0xFFFF:  # written in the other byte order
        af = int.from_bytes(af.to_bytes(4, "little"), "big")
    if af == _AF_INET:
        return ETHERTYPE_IPV4
    if af in _AF_INET6:
        return ETHERTYPE_IPV6
    raise UnsupportedLink("%s address family %d" % (structure, af))


def link_payload(linktype: int, data) -> tuple:
    """``(ethertype, offset, vlans)`` of the network packet in ``data``."""
    n = len(data)
    if linktype == LINKTYPE_ETHERNET:
        if n < 14:
            raise LinkError("Ethernet", "EtherType" if n >= 12 else "Destination", min(n, 12), "frame of %d bytes" % n, True)
        etype = (data[12] << 8) | data[13]
        off = 14
        vlans: tuple[int, ...] = ()
        if etype in VLAN_TPIDS:
            tags: list[int] = []
            while etype in VLAN_TPIDS:
                if len(tags) >= MAX_VLAN_TAGS:
                    raise LinkError("802.1Q", "TPID", off - 2, "more than %d VLAN tags" % MAX_VLAN_TAGS)
                if off + 4 > n:
                    raise LinkError("802.1Q", "TCI", off, "VLAN tag cut short", True)
                tags.append(((data[off] << 8) | data[off + 1]) & 0x0FFF)
                etype = (data[off + 2] << 8) | data[off + 3]
                off += 4
            vlans = tuple(tags)
        if etype < 0x0600:
            raise UnsupportedLink("IEEE 802.3 length field (LLC) frame")
        return etype, off, vlans
    if linktype == LINKTYPE_LINUX_SLL:
        if n < 16:
            raise LinkError("Linux cooked (SLL)", "protocol" if n >= 14 else "packet type", min(n, 14), "frame of %d bytes" % n, True)
        return (data[14] << 8) | data[15], 16, ()
    if linktype == LINKTYPE_LINUX_SLL2:
        if n < 20:
            raise LinkError("Linux cooked v2 (SLL2)", "protocol type" if n < 2 else "link-layer address", 0 if n < 2 else 12,
                            "frame of %d bytes" % n, True)
        return (data[0] << 8) | data[1], 20, ()
    if linktype in (LINKTYPE_RAW, DLT_RAW_12, DLT_RAW_14):
        return _raw(data), 0, ()
    if linktype == LINKTYPE_IPV4:
        return ETHERTYPE_IPV4, 0, ()
    if linktype == LINKTYPE_IPV6:
        return ETHERTYPE_IPV6, 0, ()
    if linktype == LINKTYPE_NULL:
        if n < 4:
            raise LinkError("BSD loopback", "family", 0, "frame of %d bytes" % n, True)
        return _family(int.from_bytes(data[0:4], "little"), "BSD loopback"), 4, ()
    if linktype == LINKTYPE_LOOP:
        if n < 4:
            raise LinkError("OpenBSD loopback", "family", 0, "frame of %d bytes" % n, True)
        return _family(int.from_bytes(data[0:4], "big"), "OpenBSD loopback"), 4, ()
    raise UnsupportedLink("link type %d" % linktype)
