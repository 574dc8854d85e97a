"""Classic libpcap files, read incrementally (no I/O).

Layout (draft-ietf-opsawg-pcap, "File Header" and "Packet Record")::

    File Header (24 bytes)
      magic_number   4   0xA1B2C3D4 (us) / 0xA1B23C4D (ns), either byte order
      version_major  2
      version_minor  2
      thiszone       4   (reserved; always 0 in practice, ignored like tshark)
      sigfigs        4   (reserved)
      snaplen        4
      network        4   LinkType in the low 16 bits; the upper bits may carry
                         FCS-length information, ignored here

    Packet Record
      ts_sec         4
      ts_usec        4   microseconds, or nanoseconds with the ns magic
      incl_len       4   bytes captured, present after this header
      orig_len       4   length on the wire
      data           incl_len

:class:`PcapParser` takes bytes in any chunking through :meth:`feed` and
returns the complete :class:`~mqcodec.capture.frame.Frame` objects.  The
per-record loop in :meth:`PcapParser.feed` is one of the hot loops a compiled
core replaces.
"""
from __future__ import annotations

import struct

import construct as cs

from ..errors import DecodeError
from ..layout import parse_at
from .frame import NS_PER_S, Frame, Truncation

__all__ = [
    "PcapParser",
    "PCAP_MAGIC_US",
    "PCAP_MAGIC_NS",
    "PcapFileHeader",
    "MAX_RECORD_LEN",
    "is_pcap_magic",
]

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D

#: Largest incl_len accepted (bytes).  Wireshark's own ceiling is 262144 for
#: ordinary link types; we allow 16 MiB so that oversized loopback/TSO frames
#: pass, and reject anything larger BEFORE buffering for it.
MAX_RECORD_LEN = 16 * 1024 * 1024

GLOBAL_HEADER_LEN = 24
RECORD_HEADER_LEN = 16


def _header(order: str) -> cs.Struct:
    i16 = cs.Int16ub if order == ">" else cs.Int16ul
    i32 = cs.Int32ub if order == ">" else cs.Int32ul
    s32 = cs.Int32sb if order == ">" else cs.Int32sl
    return cs.Struct(
        "magic_number" / i32,
        "version_major" / i16,
        "version_minor" / i16,
        "thiszone" / s32,
        "sigfigs" / i32,
        "snaplen" / i32,
        "network" / i32,
    )


#: The file header as the specification's table, per byte order.
PcapFileHeader = {"<": _header("<"), ">": _header(">")}

_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1000),
    b"\xa1\xb2\xc3\xd4": (">", 1000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),
    b"\xa1\xb2\x3c\x4d": (">", 1),
}


def is_pcap_magic(head: bytes) -> bool:
    return bytes(head[:4]) in _MAGICS


class PcapParser:
    """Incremental classic-pcap parser.

    ``feed(data)`` returns the frames completed by ``data``; ``close()``
    returns a :class:`Truncation` when the input ended inside a record (or
    raises :class:`DecodeError` when it ended inside the file header).
    A malformed file header or an absurd ``incl_len`` raises
    :class:`DecodeError` (the file cannot be re-synchronised after it).
    """

    STRUCTURE = "pcap global header"

    def __init__(self, *, max_record_len: int = MAX_RECORD_LEN, first_number: int = 1):
        self._buf = bytearray()
        self._base = 0  # absolute file offset of self._buf[0]
        self._max = max_record_len
        # all None until the file header is read (set together by _parse_header)
        self.header: cs.Container | None = None  # parsed construct Container once known
        self.byte_order: str | None = None
        self.linktype: int | None = None
        self.snaplen: int | None = None
        self.ts_scale: int | None = None  # ns per fractional tick
        self.next_number = first_number
        self._rec: struct.Struct | None = None

    # -- header -------------------------------------------------------------
    def _parse_header(self) -> None:
        buf = self._buf
        magic = bytes(buf[:4])
        if magic not in _MAGICS:
            raise DecodeError(self.STRUCTURE, "magic_number", self._base,
                              "not a pcap magic number: %s" % magic.hex())
        order, scale = _MAGICS[magic]
        hdr = parse_at(PcapFileHeader[order], bytes(buf[:GLOBAL_HEADER_LEN]), 0, self.STRUCTURE)
        if hdr.version_major != 2:
            raise DecodeError(self.STRUCTURE, "version_major", self._base + 4,
                              "unsupported pcap version %d.%d" % (hdr.version_major, hdr.version_minor))
        self.header = hdr
        self.byte_order = order
        self.ts_scale = scale
        self.snaplen = hdr.snaplen
        self.linktype = hdr.network & 0xFFFF
        self._rec = struct.Struct(order + "IIII")
        del buf[:GLOBAL_HEADER_LEN]
        self._base += GLOBAL_HEADER_LEN

    # -- records ------------------------------------------------------------
    def feed(self, data) -> list[Frame]:
        buf = self._buf
        buf += data
        if self.header is None:
            if len(buf) < GLOBAL_HEADER_LEN:
                if len(buf) >= 4 and bytes(buf[:4]) not in _MAGICS:
                    self._parse_header()  # raises on the magic
                return []
            self._parse_header()
        rec, scale, linktype = self._rec, self.ts_scale, self.linktype
        if rec is None or scale is None or linktype is None:
            raise RuntimeError("PcapParser: file header parsed but its fields are unset")
        out: list[Frame] = []
        append = out.append
        unpack = rec.unpack_from
        maxlen = self._max
        n = len(buf)
        pos = 0
        number = self.next_number
        while n - pos >= RECORD_HEADER_LEN:
            ts_sec, ts_frac, incl, orig = unpack(buf, pos)
            if incl > maxlen:
                self._consume(pos)
                self.next_number = number
                exc = DecodeError("pcap record header", "incl_len", self._base + 8,
                                  "incl_len %d exceeds the maximum %d" % (incl, maxlen))
                exc.frames_before = out  # the complete frames this feed read before the damage
                raise exc
            end = pos + RECORD_HEADER_LEN + incl
            if end > n:
                break
            append(Frame(number, ts_sec * NS_PER_S + ts_frac * scale, linktype, incl, orig,
                         bytes(buf[pos + RECORD_HEADER_LEN:end])))
            number += 1
            pos = end
        self.next_number = number
        self._consume(pos)
        return out

    def _consume(self, pos: int) -> None:
        if pos:
            del self._buf[:pos]
            self._base += pos

    @property
    def offset(self) -> int:
        """Absolute offset of the first byte not yet consumed."""
        return self._base

    def pending_need(self) -> int:
        """Bytes still to feed to complete the record begun at :attr:`offset` (0 when no
        record is begun).  Only called after a ``feed`` that did not raise, so a record
        header already buffered has passed the ``incl_len`` bound: the answer never exceeds
        ``RECORD_HEADER_LEN + max_record_len``.  Used by byte-range reading
        (:mod:`mqcodec.capture.ranges`) to read exactly through the record that crosses
        the range end."""
        n = len(self._buf)
        if self.header is None:
            return GLOBAL_HEADER_LEN - n
        if n == 0:
            return 0
        if n < RECORD_HEADER_LEN or self._rec is None:
            return RECORD_HEADER_LEN - n
        return RECORD_HEADER_LEN + self._rec.unpack_from(self._buf, 0)[2] - n

    def start_at(self, offset: int) -> None:
        """Continue at absolute ``offset``, a record boundary found by the caller (the
        file header must have been fed and nothing else buffered)."""
        if self.header is None or self._buf:
            raise RuntimeError("PcapParser.start_at: the file header only must have been fed")
        self._base = offset

    def close(self) -> Truncation | None:
        buf = self._buf
        if self.header is None:
            if not buf:
                raise DecodeError(self.STRUCTURE, "magic_number", 0, "empty input")
            self._parse_header()  # raises: truncated header, naming the field
        if not buf:
            return None
        if len(buf) < RECORD_HEADER_LEN:
            field = ("ts_sec", "ts_usec", "incl_len", "orig_len")[len(buf) // 4]
            return Truncation("pcap record header", field, self._base + (len(buf) // 4) * 4,
                              RECORD_HEADER_LEN, len(buf))
        rec = self._rec
        if rec is None:
            raise RuntimeError("PcapParser: file header parsed but its fields are unset")
        incl = rec.unpack_from(buf, 0)[2]
        return Truncation("pcap record", "data", self._base + RECORD_HEADER_LEN,
                          incl, len(buf) - RECORD_HEADER_LEN)
