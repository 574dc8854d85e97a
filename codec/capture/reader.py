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
import zlib

from ..errors import DecodeError
from .frame import Frame, Truncation
from .pcap import MAX_RECORD_LEN, PcapParser, is_pcap_magic
from .pcapng import MAX_BLOCK_LEN, PcapngParser, is_pcapng_magic

__all__ = ["CaptureParser", "CaptureReader", "open_capture", "Frame", "Truncation"]

CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


class _Gunzip:
    """Streaming gzip decoder (concatenated members allowed)."""

    def __init__(self, max_out: int = CHUNK):
        self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._max = max_out
        self._in_member = False
        self.offset = 0  # compressed bytes fed so far

    def feed(self, data):
        """Yield decompressed pieces of at most ``max_out`` bytes each."""
        pending = bytes(data)
        self.offset += len(pending)
        while pending:
            self._in_member = True
            try:
                out = self._d.decompress(pending, self._max)
            except zlib.error as exc:
                raise DecodeError("gzip stream", "", self.offset, "corrupt gzip data: %s" % exc) from None
            if out:
                yield out
            if self._d.eof:
                pending = self._d.unused_data
                self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self._in_member = False
                if pending and not pending.strip(b"\0"):
                    return  # zero padding after the last member
            else:
                pending = self._d.unconsumed_tail

    def close(self) -> None:
        if self._in_member:
            raise DecodeError("gzip stream", "", self.offset, "gzip stream cut short")


class CaptureParser:
    """Auto-detecting, I/O-free capture parser.

    ``feed(data) -> list[Frame]``; ``close() -> Truncation | None``.
    Attributes after detection: ``format`` ("pcap" / "pcapng"),
    ``compressed`` (gzip or not), ``inner`` (the format parser).
    """

    def __init__(self, *, max_record_len: int = MAX_RECORD_LEN, max_block_len: int = MAX_BLOCK_LEN):
        self._head = b""
        self._gz = None
        self.inner = None
        self.format = None
        self.compressed = False
        self._max_record = max_record_len
        self._max_block = max_block_len

    def _detect(self, head: bytes):
        if is_pcapng_magic(head):
            self.format = "pcapng"
            return PcapngParser(max_block_len=self._max_block)
        if is_pcap_magic(head):
            self.format = "pcap"
            return PcapParser(max_record_len=self._max_record)
        raise DecodeError("pcap global header", "magic_number", 0,
                          "neither pcap, pcapng nor gzip: magic %s" % head[:4].hex())

    def feed(self, data) -> list:
        if self.inner is None and self._gz is None:
            self._head += bytes(data)
            if len(self._head) < 4:
                return []
            data, self._head = self._head, b""
            if data[:2] == GZIP_MAGIC:
                self.compressed = True
                self._gz = _Gunzip()
            else:
                self.inner = self._detect(data)
        if self._gz is not None:
            out = []
            try:
                for piece in self._gz.feed(data):
                    out.extend(self._feed_plain(piece))
            except DecodeError as exc:
                exc.frames_before = out + list(getattr(exc, "frames_before", ()))
                raise
            return out
        return self.inner.feed(data)

    def _feed_plain(self, piece) -> list:
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


class CaptureReader:
    """Iterate the frames of a capture file, reading it in chunks.

    After iteration ``truncation`` holds a :class:`Truncation` when the file
    ended inside a record (a capture cut short); with ``strict=True`` that
    raises :class:`DecodeError` instead.  ``frames`` counts frames read.
    """

    def __init__(self, source, *, chunk_size: int = CHUNK, strict: bool = False, **limits):
        if isinstance(source, (str, os.PathLike)):
            self._f = open(source, "rb")
            self._own = True
        else:
            self._f = source
            self._own = False
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
                    frames = parser.feed(chunk)
                except DecodeError as exc:
                    # the complete frames before damaged file structure are still yielded
                    for frame in getattr(exc, "frames_before", ()):
                        self.frames += 1
                        yield frame
                    raise
                for frame in frames:
                    self.frames += 1
                    yield frame
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
