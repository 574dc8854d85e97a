"""Format detection and the file-reading convenience wrapper.

:class:`CaptureParser` is I/O-free: bytes in through :meth:`~CaptureParser.feed`
(any chunking), :class:`~mqcodec.capture.frame.Frame` objects out.  It
detects, from the first bytes, classic pcap (either byte order, us or ns),
pcapng, and gzip-compressed forms of both (decompressed incrementally with a
bounded output per step; concatenated gzip members are followed).

:func:`open_capture` reads a path or a binary file object in chunks (never
the whole file) and yields frames.
"""
from __future__ import annotations

import io
import os
import struct
import zlib

from ..errors import DecodeError
from .frame import Frame, Truncation
from .pcap import MAX_RECORD_LEN, PcapParser, is_pcap_magic
from .pcapng import MAX_BLOCK_LEN, PcapngParser, is_pcapng_magic

__all__ = ["CaptureParser", "CaptureReader", "open_capture", "Frame", "Truncation", "Gunzip", "GZIP_MAGIC"]

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
                try:
                    out = d.decompress(piece, self._max)
                except zlib.error as exc:
                    raise self._error("deflate data", self.offset, "corrupt gzip data: %s" % exc) from None
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


class CaptureParser:
    """Auto-detecting, I/O-free capture parser.

    ``feed(data) -> list[Frame]``; ``close() -> Truncation | None``.
    Attributes after detection: ``format`` ("pcap" / "pcapng"),
    ``compressed`` (gzip or not), ``inner`` (the format parser).
    """

    def __init__(self, *, max_record_len: int = MAX_RECORD_LEN, max_block_len: int = MAX_BLOCK_LEN):
        self._head = b""
        self._gz: Gunzip | None = None
        self.inner: PcapParser | PcapngParser | None = None
        self.format: str | None = None
        self.compressed = False
        self._max_record = max_record_len
        self._max_block = max_block_len

    def _detect(self, head: bytes) -> PcapParser | PcapngParser:
        if is_pcapng_magic(head):
            self.format = "pcapng"
            return PcapngParser(max_block_len=self._max_block)
        if is_pcap_magic(head):
            self.format = "pcap"
            return PcapParser(max_record_len=self._max_record)
        raise DecodeError("pcap global header", "magic_number", 0,
                          "neither pcap, pcapng nor gzip: magic %s" % head[:4].hex())

    def feed(self, data) -> list[Frame]:
        """The frames completed by ``data`` (all of them: see :meth:`iter_feed` for a
        bounded form)."""
        out: list[Frame] = []
        try:
            for frames in self.iter_feed(data):
                out.extend(frames)
        except DecodeError as exc:
            exc.frames_before = out + list(getattr(exc, "frames_before", ()))
            raise
        return out

    def iter_feed(self, data):
        """Yield the frames completed by ``data`` a list per decompressed piece (at
        most 1 MiB of decompressed bytes each), as soon as the piece is parsed: a
        gzip bomb never holds more than one piece's frames.  A ``DecodeError``
        carries ``frames_before``: the complete frames of the piece it was found
        in (the pieces before were yielded)."""
        if self.inner is None and self._gz is None:
            self._head += bytes(data)
            if len(self._head) < 4 and self._head[:2] != GZIP_MAGIC:
                return
            data, self._head = self._head, b""
            if data[:2] == GZIP_MAGIC:
                self.compressed = True
                self._gz = Gunzip()
            else:
                self.inner = self._detect(data)
        if self._gz is not None:
            for piece in self._gz.feed(data):
                yield self._feed_plain(piece)
            return
        if self.inner is None:
            raise RuntimeError("capture parser: no format parser after detection")
        yield self.inner.feed(data)

    def _feed_plain(self, piece) -> list[Frame]:
        if self.inner is None:
            self._head += piece
            if len(self._head) < 4:
                return []
            piece, self._head = self._head, b""
            self.inner = self._detect(piece)
        return self.inner.feed(piece)

    def close(self):
        if self._gz is not None:
            self._gz.close()
        if self.inner is None:
            if self._head:
                self._detect(self._head + b"\0" * 4)  # raises for a bad magic
                # a good magic but fewer than 4 bytes: cut inside magic_number
            raise DecodeError("pcap global header", "magic_number", 0,
                              "input ends after %d bytes" % len(self._head))
        return self.inner.close()

    @property
    def linktype(self):
        return None if self.inner is None else self.inner.linktype


def open_binary(source):
    """``(file, own)``: a path opened for binary reading (``own``: the caller
    closes it), or an already open binary file as it is."""
    if isinstance(source, (str, os.PathLike)):
        return open(source, "rb"), True
    return source, False


class CaptureReader:
    """Iterate the frames of a capture file, reading it in chunks.

    After iteration ``truncation`` holds a :class:`Truncation` when the file
    ended inside a record (a capture cut short); with ``strict=True`` that
    raises :class:`DecodeError` instead.  ``frames`` counts frames read.
    """

    def __init__(self, source, *, chunk_size: int = CHUNK, strict: bool = False, **limits):
        self._f, self._own = open_binary(source)
        self.chunk_size = chunk_size
        self.strict = strict
        self.parser = CaptureParser(**limits)
        self.truncation = None
        self.frames = 0

    def __iter__(self):
        parser = self.parser
        read = self._f.read
        size = self.chunk_size
        try:
            while True:
                chunk = read(size)
                if not chunk:
                    break
                try:
                    for frames in parser.iter_feed(chunk):   # one decompressed piece at a time
                        for frame in frames:
                            self.frames += 1
                            yield frame
                except DecodeError as exc:
                    # the complete frames before damaged file structure are still yielded
                    for frame in getattr(exc, "frames_before", ()):
                        self.frames += 1
                        yield frame
                    raise
            self.truncation = parser.close()
            if self.truncation is not None and self.strict:
                t = self.truncation
                raise DecodeError(t.structure, t.field, t.offset,
                                  "file cut short: %d bytes needed, %d present" % (t.needed, t.present))
        finally:
            self.close()

    def close(self) -> None:
        if self._own and not self._f.closed:
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def format(self):
        return self.parser.format


def open_capture(source, *, chunk_size: int = CHUNK, strict: bool = False, **limits) -> CaptureReader:
    """Open a pcap/pcapng file (optionally gzip-compressed) by path or binary
    file object; iterate the result for :class:`Frame` objects."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        source = io.BytesIO(bytes(source))
    return CaptureReader(source, chunk_size=chunk_size, strict=strict, **limits)
