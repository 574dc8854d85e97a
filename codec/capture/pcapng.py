"""pcapng files, read incrementally (no I/O).

Every block (draft-ietf-opsawg-pcapng, "General Block Structure")::

    Block Type          4
    Block Total Length  4   multiple of 4, >= 12, repeated at the end
    Block Body          variable
    Block Total Length  4

Blocks used here:

* Section Header Block (0x0A0D0D0A): Byte-Order Magic 0x1A2B3C4D (decides
  the byte order of the whole section), Major Version (1), Minor Version,
  Section Length (8, may be -1), options.  A new SHB starts a new section
  and forgets the interfaces of the previous one.
* Interface Description Block (1): LinkType (2), Reserved (2), SnapLen (4),
  options; ``if_tsresol`` (code 9, 1 byte: 10^-n, or 2^-n when the top bit
  is set; default 10^-6) and ``if_tsoffset`` (code 14, 8-byte signed
  seconds added to every timestamp).
* Enhanced Packet Block (6): Interface ID (4), Timestamp (Upper) (4),
  Timestamp (Lower) (4), Captured Packet Length (4), Original Packet
  Length (4), Packet Data padded to 4, options.
* Simple Packet Block (3): Original Packet Length (4), Packet Data; interface
  0; captured length = min(original length, SnapLen, bytes in the block);
  no timestamp (tshark shows none; ts_ns is 0).
* Packet Block (2, obsolete): Interface ID (2), Drops Count (2), then as EPB.

Every other block type is skipped by its length and counted in
:attr:`PcapngParser.skipped_blocks`; Custom Blocks (0xBAD, 0x40000BAD) and
the systemd Journal Export Block (9) also consume a frame number, because
tshark numbers them as frames.

Block lengths are checked against :data:`MAX_BLOCK_LEN` before any byte is
buffered for them; a block whose framing is wrong raises
:class:`~mqcodec.errors.DecodeError` (the file cannot be re-synchronised).
"""
from __future__ import annotations

import struct
from collections import Counter
from typing import Callable

import construct as cs

from ..errors import DecodeError
from ..layout import parse_at
from .frame import NS_PER_S, TS_UNKNOWN, Frame, Truncation, ts_or_unknown

__all__ = ["PcapngParser", "SHB_TYPE", "MAX_BLOCK_LEN", "is_pcapng_magic", "SectionHeaderBlock"]

SHB_TYPE = 0x0A0D0D0A
IDB_TYPE = 0x00000001
PB_TYPE = 0x00000002
SPB_TYPE = 0x00000003
EPB_TYPE = 0x00000006
BYTE_ORDER_MAGIC = 0x1A2B3C4D

OPT_ENDOFOPT = 0
OPT_IF_TSRESOL = 9
OPT_IF_TSOFFSET = 14

#: Blocks that are not packets but to which tshark gives a frame number
#: (Custom Blocks, systemd Journal Export Block): they yield no Frame but
#: consume a number, so frame numbers stay equal to tshark's.
NUMBERED_BLOCKS = frozenset((0x00000BAD, 0x40000BAD, 0x00000009))

#: Largest Block Total Length accepted (bytes), checked before buffering.
MAX_BLOCK_LEN = 16 * 1024 * 1024 + 64
#: Largest number of interfaces one section may describe.
MAX_INTERFACES = 65536


def _shb(order: str) -> cs.Struct:
    i16 = cs.Int16ub if order == ">" else cs.Int16ul
    i32 = cs.Int32ub if order == ">" else cs.Int32ul
    s64 = cs.Int64sb if order == ">" else cs.Int64sl
    return cs.Struct(
        "Block Type" / i32,
        "Block Total Length" / i32,
        "Byte-Order Magic" / i32,
        "Major Version" / i16,
        "Minor Version" / i16,
        "Section Length" / s64,
    )


#: The fixed part of the Section Header Block, per byte order.
SectionHeaderBlock = {"<": _shb("<"), ">": _shb(">")}

SHB_FIXED = 24


def is_pcapng_magic(head: bytes) -> bool:
    return bytes(head[:4]) == b"\x0a\x0d\x0d\x0a"


class Interface:
    __slots__ = ("linktype", "snaplen", "units_per_s", "pow2", "exp", "offset_ns")

    def __init__(self, linktype: int, snaplen: int):
        self.linktype = linktype
        self.snaplen = snaplen
        self.pow2 = False
        self.exp = 6
        self.offset_ns = 0

    def ts_ns(self, ticks: int) -> int:
        """The time in ns, or TS_UNKNOWN when it does not fit in int64 (checked here,
        where it is computed: Python ints do not overflow, Arrow's int64 would)."""
        if self.pow2:
            return ts_or_unknown(((ticks * NS_PER_S) >> self.exp) + self.offset_ns)
        e = self.exp
        if e <= 9:
            return ts_or_unknown(ticks * 10 ** (9 - e) + self.offset_ns)
        return ts_or_unknown(ticks // 10 ** (e - 9) + self.offset_ns)


def section_block(order: str, minor: int = 0) -> bytes:
    """A Section Header Block with no option and an unknown section length."""
    return struct.pack(order + "IIIHHqI", SHB_TYPE, 28, BYTE_ORDER_MAGIC, 1, minor, -1, 28)


def interface_block(order: str, iface: Interface) -> bytes:
    """An Interface Description Block with ``iface``'s link type, snap length,
    ``if_tsresol`` and ``if_tsoffset`` and no other option: what a parser reads
    frames with (a section's state kept compact, whatever its options' length)."""
    opts = struct.pack(order + "HHB3x", OPT_IF_TSRESOL, 1, (0x80 if iface.pow2 else 0) | iface.exp)
    if iface.offset_ns:
        opts += struct.pack(order + "HHq", OPT_IF_TSOFFSET, 8, iface.offset_ns // NS_PER_S)
    opts += struct.pack(order + "HH", OPT_ENDOFOPT, 0)
    n = 20 + len(opts)
    return struct.pack(order + "IIHHI", IDB_TYPE, n, iface.linktype, 0, iface.snaplen) + opts + struct.pack(order + "I", n)


class PcapngParser:
    """Incremental pcapng parser: ``feed(bytes) -> [Frame]``, ``close()``."""

    STRUCTURE = "pcapng SHB"

    def __init__(self, *, max_block_len: int = MAX_BLOCK_LEN, first_number: int = 1):
        self._buf = bytearray()
        self._base = 0
        self._max = max_block_len
        # None until the first Section Header Block (set together by _section)
        self.byte_order: str | None = None
        self.interfaces: list[Interface] = []
        self.sections = 0
        self.skipped_blocks: Counter = Counter()
        #: frames whose time does not fit in int64 ns (their ts_ns is TS_UNKNOWN)
        self.impossible_timestamps = 0
        self.next_number = first_number
        self._u32: Callable[[bytearray, int], tuple[int, ...]] | None = None  # Struct(order + "I").unpack_from

    @property
    def offset(self) -> int:
        return self._base

    def pending_need(self) -> int:
        """Bytes still to feed to complete the block begun at :attr:`offset` (0 when no
        block is begun); a buffered Block Total Length has passed :data:`MAX_BLOCK_LEN`
        (``feed`` raised otherwise).  Used by byte-range reading."""
        buf = self._buf
        n = len(buf)
        if n == 0:
            return 0
        need = 12 if bytes(buf[:4]) == b"\x0a\x0d\x0d\x0a" else 8
        if n < need:
            return need - n
        blen = self._block_len(buf, 0, n)
        return need - n if blen is None else blen - n

    def start_at(self, offset: int) -> None:
        """Continue at absolute ``offset``, a block boundary found by the caller, with the
        section state (byte order, interfaces) of the blocks fed so far (the Section
        Header Block and Interface Description Blocks in effect at ``offset``)."""
        if self._buf:
            raise RuntimeError("PcapngParser.start_at: bytes are still buffered")
        self._base = offset

    @property
    def linktype(self):
        return self.interfaces[0].linktype if self.interfaces else None

    # -- block framing -------------------------------------------------------
    def _block_len(self, buf, pos: int, avail: int):
        """Return the block length at ``pos`` or None when more bytes are
        needed to know it.  Raises on bad framing."""
        if avail < 8:
            return None
        if buf[pos:pos + 4] == b"\x0a\x0d\x0d\x0a":
            if avail < 12:
                return None
            bom = bytes(buf[pos + 8:pos + 12])
            if bom == b"\x4d\x3c\x2b\x1a":
                order = "<"
            elif bom == b"\x1a\x2b\x3c\x4d":
                order = ">"
            else:
                raise DecodeError(self.STRUCTURE, "Byte-Order Magic", self._base + pos + 8,
                                  "bad byte-order magic %s" % bom.hex())
            blen = struct.unpack_from(order + "I", buf, pos + 4)[0]
            if blen < 28:
                raise DecodeError(self.STRUCTURE, "Block Total Length", self._base + pos + 4,
                                  "SHB length %d below the minimum 28" % blen)
        else:
            u32 = self._u32
            if self.byte_order is None or u32 is None:
                raise DecodeError(self.STRUCTURE, "Block Type", self._base + pos,
                                  "the file does not start with a Section Header Block")
            blen = u32(buf, pos + 4)[0]
            if blen < 12:
                raise DecodeError("pcapng block", "Block Total Length", self._base + pos + 4,
                                  "block length %d below the minimum 12" % blen)
        if blen % 4:
            raise DecodeError("pcapng block", "Block Total Length", self._base + pos + 4,
                              "block length %d is not a multiple of 4" % blen)
        if blen > self._max:
            raise DecodeError("pcapng block", "Block Total Length", self._base + pos + 4,
                              "block length %d exceeds the maximum %d" % (blen, self._max))
        return blen

    def feed(self, data) -> list[Frame]:
        buf = self._buf
        buf += data
        out: list[Frame] = []
        n = len(buf)
        pos = 0
        try:
            while True:
                blen = self._block_len(buf, pos, n - pos)
                if blen is None or n - pos < blen:
                    break
                self._block(buf, pos, blen, out)
                pos += blen
        except DecodeError as exc:
            exc.frames_before = out  # the complete frames this feed read before the damage
            raise
        finally:
            if pos:
                del buf[:pos]
                self._base += pos
        return out

    def _block(self, buf, pos: int, blen: int, out: list[Frame]) -> None:
        abs_pos = self._base + pos
        if buf[pos:pos + 4] == b"\x0a\x0d\x0d\x0a":
            self._section(buf, pos, blen)
            return
        order, u32 = self.byte_order, self._u32
        if order is None or u32 is None:  # _block_len refuses such a block first
            raise DecodeError(self.STRUCTURE, "Block Type", abs_pos,
                              "the file does not start with a Section Header Block")
        btype = u32(buf, pos)[0]
        if u32(buf, pos + blen - 4)[0] != blen:
            raise DecodeError("pcapng block", "Block Total Length", abs_pos + blen - 4,
                              "trailing length %d differs from the leading %d"
                              % (u32(buf, pos + blen - 4)[0], blen))
        if btype == EPB_TYPE or btype == PB_TYPE:
            name = "pcapng EPB" if btype == EPB_TYPE else "pcapng PB"
            if blen < 32:
                raise DecodeError(name, "Block Total Length", abs_pos + 4,
                                  "length %d below the minimum 32" % blen)
            if btype == EPB_TYPE:
                if_id, ts_hi, ts_lo, caplen, origlen = struct.unpack_from(order + "5I", buf, pos + 8)
            else:
                if_id, _drops, ts_hi, ts_lo, caplen, origlen = struct.unpack_from(order + "HH4I", buf, pos + 8)
            if caplen > blen - 32:
                raise DecodeError(name, "Captured Packet Length", abs_pos + 20,
                                  "captured length %d exceeds the %d bytes in the block" % (caplen, blen - 32))
            if if_id >= len(self.interfaces):
                raise DecodeError(name, "Interface ID", abs_pos + 8,
                                  "interface %d not described by an IDB" % if_id)
            iface = self.interfaces[if_id]
            ts = iface.ts_ns((ts_hi << 32) | ts_lo)
            if ts == TS_UNKNOWN:
                self.impossible_timestamps += 1
            out.append(Frame(self.next_number, ts, iface.linktype,
                             caplen, origlen, bytes(buf[pos + 28:pos + 28 + caplen]), if_id))
            self.next_number += 1
        elif btype == SPB_TYPE:
            if blen < 16:
                raise DecodeError("pcapng SPB", "Block Total Length", abs_pos + 4,
                                  "length %d below the minimum 16" % blen)
            if not self.interfaces:
                raise DecodeError("pcapng SPB", "Block Type", abs_pos,
                                  "Simple Packet Block without an interface")
            iface = self.interfaces[0]
            origlen = u32(buf, pos + 8)[0]
            caplen = min(origlen, blen - 16)
            if iface.snaplen:
                caplen = min(caplen, iface.snaplen)
            out.append(Frame(self.next_number, 0, iface.linktype, caplen, origlen,
                             bytes(buf[pos + 12:pos + 12 + caplen]), 0))
            self.next_number += 1
        elif btype == IDB_TYPE:
            if blen < 20:
                raise DecodeError("pcapng IDB", "Block Total Length", abs_pos + 4,
                                  "length %d below the minimum 20" % blen)
            if len(self.interfaces) >= MAX_INTERFACES:
                raise DecodeError("pcapng IDB", "Block Type", abs_pos, "too many interfaces")
            linktype, _res, snaplen = struct.unpack_from(order + "HHI", buf, pos + 8)
            iface = Interface(linktype, snaplen)
            self.idb_options(iface, order, buf, pos + 16, pos + blen - 4)
            self.interfaces.append(iface)
        else:
            self.skipped_blocks[btype] += 1
            if btype in NUMBERED_BLOCKS:
                self.next_number += 1

    def _section(self, buf, pos: int, blen: int) -> None:
        bom = bytes(buf[pos + 8:pos + 12])
        order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
        hdr = parse_at(SectionHeaderBlock[order], bytes(buf[pos:pos + SHB_FIXED]), 0, self.STRUCTURE)
        trailer = struct.unpack_from(order + "I", buf, pos + blen - 4)[0]
        if trailer != blen:
            raise DecodeError(self.STRUCTURE, "Block Total Length", self._base + pos + blen - 4,
                              "trailing length %d differs from the leading %d" % (trailer, blen))
        if hdr["Major Version"] != 1:
            raise DecodeError(self.STRUCTURE, "Major Version", self._base + pos + 12,
                              "unsupported pcapng version %d" % hdr["Major Version"])
        self.byte_order = order
        self._u32 = struct.Struct(order + "I").unpack_from
        self.interfaces = []
        self.sections += 1

    @staticmethod
    def idb_options(iface: Interface, order: str, buf, pos: int, end: int) -> None:
        """Set ``iface``'s if_tsresol and if_tsoffset from the IDB options in ``buf[pos:end]``."""
        # options are best effort: a malformed option list ends the walk
        while pos + 4 <= end:
            code, length = struct.unpack_from(order + "HH", buf, pos)
            if code == OPT_ENDOFOPT:
                break
            vpos = pos + 4
            if vpos + length > end:
                break
            if code == OPT_IF_TSRESOL and length >= 1:
                v = buf[vpos]
                iface.pow2 = bool(v & 0x80)
                iface.exp = v & 0x7F
            elif code == OPT_IF_TSOFFSET and length >= 8:
                iface.offset_ns = struct.unpack_from(order + "q", buf, vpos)[0] * NS_PER_S
            pos = vpos + ((length + 3) & ~3)

    def close(self) -> Truncation | None:
        buf = self._buf
        if self.byte_order is None:
            if not buf:
                raise DecodeError(self.STRUCTURE, "Block Type", 0, "empty input")
            if bytes(buf[:4]) != b"\x0a\x0d\x0d\x0a"[:len(buf)]:
                raise DecodeError(self.STRUCTURE, "Block Type", self._base, "not a pcapng file")
            hdr_bytes = bytes(buf[:SHB_FIXED])
            if len(hdr_bytes) >= 12:
                order = "<" if hdr_bytes[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
            else:
                order = "<"
            parse_at(SectionHeaderBlock[order], hdr_bytes, 0, self.STRUCTURE)  # names the cut field
            raise DecodeError(self.STRUCTURE, "Options", self._base + SHB_FIXED,
                              "truncated Section Header Block")
        if not buf:
            return None
        if len(buf) < 8:
            return Truncation("pcapng block", "Block Total Length" if len(buf) >= 4 else "Block Type",
                              self._base + (4 if len(buf) >= 4 else 0), 8, len(buf))
        blen = self._block_len(buf, 0, len(buf)) or 12
        return Truncation("pcapng block", "Block Body", self._base + 8, blen, len(buf))
