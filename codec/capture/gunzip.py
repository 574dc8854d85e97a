"""Streaming gzip (RFC 1952) for capture files: :class:`Gunzip`, bounded in
memory whatever the compression ratio, and :func:`file_bytes`, a capture
file's decompressed bytes in pieces.  Its own module so that the compiled
capture core's driver reads gzip captures without importing the pure
readers (:mod:`.reader` re-exports both)."""
from __future__ import annotations

import os
import struct
import zlib
from typing import Iterator

from ..errors import DecodeError

__all__ = ["Gunzip", "GZIP_MAGIC", "CHUNK", "MAX_GZIP_HEADER", "file_bytes"]

CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


#: gzip member header (RFC 1952 section 2.3): FLG bits
_FTEXT, _FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 1, 2, 4, 8, 16
#: longest member header accepted (FEXTRA <= 65535 bytes, FNAME and FCOMMENT bounded here)
MAX_GZIP_HEADER = 1 << 20
#: compressed bytes handed to zlib per call (bounds the copies zlib makes of its input)
_GZ_IN = 1 << 16
_HEADER, _BODY, _TRAILER = range(3)


def _gzip_header_len(h: bytes):
    """Length of the member header at the start of ``h``; None when more bytes
    are needed; ``(field, reason)`` when it is not a gzip member header."""
    if len(h) >= 1 and h[0] != 0x1F or len(h) >= 2 and h[1] != 0x8B:
        return ("ID1/ID2", "not a gzip member: %s (trailing garbage?)" % h[:2].hex())
    if len(h) < 10:
        return None
    if h[2] != 8:
        return ("CM", "compression method %d is not deflate" % h[2])
    flg = h[3]
    if flg & 0xE0:
        return ("FLG", "reserved flag bits set: 0x%02x" % flg)
    p = 10
    if flg & _FEXTRA:
        if len(h) < p + 2:
            return None
        p += 2 + (h[p] | h[p + 1] << 8)
    for bit in (_FNAME, _FCOMMENT):
        if flg & bit:
            z = h.find(b"\0", p)
            if z < 0:
                return None
            p = z + 1
    if flg & _FHCRC:
        p += 2
    return p if len(h) >= p else None


class Gunzip:
    """Streaming gzip decoder (RFC 1952; concatenated members and zero padding
    after the last one allowed).

    The member header and trailer are parsed here and the deflate data is
    inflated raw, so every decompressed byte is handed on (``feed`` yields it)
    *before* the member's trailer (CRC-32, ISIZE) is checked: a bad trailer
    costs no data.  Output comes in pieces of at most ``max_out`` bytes and
    zlib sees at most 64 KiB of input per call, so memory is bounded whatever
    the compression ratio.  Damage raises ``DecodeError("gzip stream", field,
    offset, reason)``, ``offset`` in the compressed file; ``close()`` raises
    when the input ended inside a member ("gzip stream cut short")."""

    def __init__(self, max_out: int = CHUNK):
        self._max = max_out
        self._state = _HEADER
        self._hdr = b""           # header or trailer bytes collected so far
        # the current member's inflater, in _BODY (zlib._Decompress: typeshed's name for what
        # zlib.decompressobj returns; the annotation is never evaluated)
        self._d: zlib._Decompress | None = None
        self._crc = 0
        self._size = 0
        self._member = 0          # compressed offset of the current member
        self._padded = False      # zero padding seen after the last member
        self.members = 0          # complete members
        self.offset = 0           # compressed bytes consumed so far

    def _error(self, field: str, offset: int, reason: str):
        return DecodeError("gzip stream", field, offset, reason)

    def _to_damage(self, d, piece):
        """The call that failed again, a byte at a time from the inflater as it
        was before it (``d``): every byte decompressed before the damage is
        yielded and the error names the byte zlib failed on, whatever pieces
        the file was read in (a call of 64 KiB would lose the output it made
        before failing, and name where the call began).  ``out`` stays under
        ``max_out``: the failed call met the damage before its output reached it."""
        out = bytearray()
        for i in range(len(piece)):
            try:
                out += d.decompress(piece[i:i + 1])
            except zlib.error as exc:
                if out:
                    self._crc = zlib.crc32(out, self._crc)
                    self._size += len(out)
                    for k in range(0, len(out), self._max):
                        yield bytes(out[k:k + self._max])
                raise self._error("deflate data", self.offset + i, "corrupt gzip data: %s" % exc) from None

    def feed(self, data):
        """Yield decompressed pieces of at most ``max_out`` bytes each."""
        mv = memoryview(bytes(data) if not isinstance(data, bytes) else data)
        n = len(mv)
        pos = 0
        full = False              # the last inflate call was cut by max_out: zlib may hold more
        while pos < n or full:
            state = self._state
            if state == _BODY:
                piece = mv[pos:pos + _GZ_IN]
                d = self._d
                if d is None:
                    raise RuntimeError("gzip reader: in a member body without an inflater")
                before = d.copy()
                try:
                    out = d.decompress(piece, self._max)
                except zlib.error:
                    yield from self._to_damage(before, piece)
                    raise RuntimeError("gzip reader: zlib failed on data it takes a byte at a time") from None
                # at the end of the member the rest of the input is unused_data (unconsumed_tail
                # may still hold a stale copy of it); before, it is unconsumed_tail
                used = len(piece) - (len(d.unused_data) if d.eof else len(d.unconsumed_tail))
                pos += used
                self.offset += used
                full = len(out) == self._max
                if out:
                    self._crc = zlib.crc32(out, self._crc)
                    self._size += len(out)
                    yield out     # handed on before the trailer is checked
                if d.eof:
                    self._state = _TRAILER
                    self._d = None
                    full = False
                elif not used and not out and pos < n:
                    raise self._error("deflate data", self.offset, "gzip data makes no progress")
                elif not used and not out:
                    break
                continue
            full = False
            if state == _TRAILER:
                take = bytes(mv[pos:pos + 8 - len(self._hdr)])
                pos += len(take)
                self.offset += len(take)
                self._hdr += take
                if len(self._hdr) < 8:
                    continue
                crc, isize = struct.unpack("<II", self._hdr)
                self._hdr = b""
                self._state = _HEADER
                self.members += 1
                if crc != self._crc & 0xFFFFFFFF:
                    raise self._error("CRC32", self.offset - 8, "gzip member CRC-32 %08x, the data's is %08x"
                                      % (crc, self._crc & 0xFFFFFFFF))
                if isize != self._size & 0xFFFFFFFF:
                    raise self._error("ISIZE", self.offset - 4, "gzip member ISIZE %d, the data's is %d"
                                      % (isize, self._size & 0xFFFFFFFF))
                continue
            # _HEADER: a member starts (or zero padding after the last one)
            if not self._hdr and self.members:
                if mv[pos] == 0 or self._padded:
                    rest = bytes(mv[pos:pos + _GZ_IN])
                    z = len(rest) - len(rest.lstrip(b"\0"))
                    pos += z
                    self.offset += z
                    if z:
                        self._padded = True
                        continue
                    raise self._error("ID1/ID2", self.offset, "data after the zero padding that ends the gzip stream")
            take = bytes(mv[pos:pos + _GZ_IN])
            cand = self._hdr + take
            if not self._hdr:
                self._member = self.offset
            hlen = _gzip_header_len(cand)
            if type(hlen) is tuple:
                raise self._error(hlen[0], self._member, hlen[1])
            if hlen is None:
                if len(cand) > MAX_GZIP_HEADER:
                    raise self._error("FLG", self._member, "gzip member header longer than %d bytes" % MAX_GZIP_HEADER)
                self._hdr = cand
                pos += len(take)
                self.offset += len(take)
                continue
            used = hlen - len(self._hdr)
            pos += used
            self.offset += used
            self._hdr = b""
            self._state = _BODY
            self._d = zlib.decompressobj(-zlib.MAX_WBITS)
            self._crc = 0
            self._size = 0

    def close(self) -> None:
        """Raise when the input ended inside a member."""
        if self._state == _BODY:
            raise self._error("deflate data", self.offset, "gzip stream cut short")
        if self._state == _TRAILER or self._hdr or not self.members:
            raise self._error("CRC32" if self._state == _TRAILER else "ID1/ID2", self.offset,
                              "gzip stream cut short")


def file_bytes(source, chunk: int = CHUNK, where: list | None = None) -> Iterator[bytes]:
    """The decompressed bytes of a capture file (path, bytes or binary file
    object, read from where it is), a piece at a time: at most ``chunk``
    bytes each, gzip inflated on the way whatever its ratio.  Damaged gzip
    raises :class:`DecodeError` after every byte before the damage was
    yielded.  ``where``, a one-item list, gets the input bytes read so far
    (of the file: compressed bytes for gzip) before each piece is used."""
    f = None
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        pieces: Iterator[bytes] = (data[i:i + chunk] for i in range(0, len(data), chunk))
    else:
        f = open(source, "rb") if isinstance(source, (str, os.PathLike)) else source
        pieces = iter(lambda: f.read(chunk), b"")
    try:
        piece = next(pieces, b"")
        while 0 < len(piece) < 2:   # a short first read (a pipe's): the magic needs two bytes
            more = next(pieces, b"")
            if not more:
                break
            piece += more
        read = len(piece)
        g = Gunzip(chunk) if piece[:2] == GZIP_MAGIC else None
        while piece:
            if where is not None:
                where[0] = read
            if g is None:
                yield piece
            else:
                yield from g.feed(piece)
            piece = next(pieces, b"")
            read += len(piece)
        if g is not None:
            g.close()
    finally:
        if f is not None and f is not source:
            f.close()
