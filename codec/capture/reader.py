"""Format detection and the file-reading convenience wrapper.

:class:`CaptureParser` is I/O-free: bytes in through :meth:`~CaptureParser.feed`
(any chunking), :class:`~mqcodec.capture.frame.Frame` objects out.  It
detects, from the first bytes, classic pcap (either byte order, us or ns),
pcapng, and gzip-compressed forms of both (decompressed incrementally with a
bounded output per step; concatenated gzip members are followed).

:func:`open_capture` reads a path or a binary file object in chunks (never
the whole file) and yields frames.

:func:`iter_frames` is stage (a), capture file to frames, in either
implementation: this module's parsers, or the compiled capture core's
record walk (``mqcodec._ext.capture_core``) with nothing decoded.
"""
from __future__ import annotations

import io
import os
from typing import Any, Iterator

from ..errors import DecodeError
from .frame import Frame, Truncation
from .gunzip import CHUNK, GZIP_MAGIC, Gunzip, file_bytes
from .pcap import MAX_RECORD_LEN, PcapParser, is_pcap_magic
from .pcapng import MAX_BLOCK_LEN, PcapngParser, is_pcapng_magic

__all__ = ["CaptureParser", "CaptureReader", "open_capture", "capture_from", "iter_frames", "file_bytes", "Frame",
           "Truncation", "Gunzip", "GZIP_MAGIC"]


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


def iter_frames(source, *, impl: str | None = None) -> Iterator[Frame]:
    """The frames of a capture file (path, bytes or binary file object;
    pcap, pcapng, gzip), in order.  ``impl``: ``"py"`` :func:`open_capture`;
    ``"c"`` the compiled capture core's walk (``CaptureCore(all_frames=True)``);
    None: the default (:mod:`mqcodec._impl`).  Both give the same frames;
    where the core stops at a damaged or cut record, the pure reader takes
    the rest of the file over, so the error raised is the pure reader's."""
    from .. import _impl

    core_mod = _impl.pick("capture_core", impl, what="capture core")
    if core_mod is None:
        yield from open_capture(source)
        return
    core = core_mod.CaptureCore((), (), False, all_frames=True)
    done = 0
    for chunk in file_bytes(source):
        core.feed(chunk)
        frames = core.take_frames()
        done += len(frames)
        yield from frames
        if core.stop is not None or not core.supported:
            break
    else:
        core.finish()
        frames = core.take_frames()
        done += len(frames)
        yield from frames
        if core.stop is None and core.supported:
            return
    # the core stopped (a damaged record, a file it does not read): the pure reader's account,
    # from where the core stopped in a plain pcap, else from the start
    stop = core.stop
    reader = capture_from(source, stop[0], done) if stop is not None else None
    if reader is not None:
        yield from reader
        return
    if hasattr(source, "seek"):
        source.seek(0)
    for i, frame in enumerate(open_capture(source)):
        if i >= done:
            yield frame


class _Spliced(io.RawIOBase):
    """A classic pcap's file header, then its bytes from ``offset`` on; the
    pure parser is moved to ``offset`` between the two (``PcapParser.start_at``)."""

    def __init__(self, head: bytes, rest, offset: int, own: bool):
        super().__init__()
        self._head: bytes | None = head
        self._offset: int | None = offset
        self._rest, self._own = rest, own
        self.reader: Any = None     # the CaptureReader reading this

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._head is not None:
            head, self._head = self._head, None
            return head
        if self._offset is not None:
            inner = self.reader.parser.inner
            inner.start_at(self._offset)
            inner.next_number = self.reader.frames + 1    # the frames before, not read again
            self._offset = None
        piece = self._rest.read(size)
        if not piece and self._own:     # the file this opened: closed at its end
            self._rest.close()
        return piece


def capture_from(source, offset: int, frames_before: int) -> CaptureReader | None:
    """A reader of a plain (uncompressed) classic pcap from record boundary
    ``offset`` on (where the compiled core stopped: a damaged record header,
    or a record cut short), which does not read the records before it: the
    file header is fed, then the bytes from ``offset``; error and truncation
    offsets are the file's, and its frame count starts at ``frames_before``.
    None for anything else (pcapng, gzip, a file that cannot seek): read it
    from the start."""
    src = source
    own = isinstance(src, (str, os.PathLike))
    rest: Any
    if isinstance(src, (bytes, bytearray, memoryview)):
        data = memoryview(src)
        head, rest = bytes(data[:24]), io.BytesIO(data[offset:])
    else:
        rest = open(src, "rb") if own else src
        try:
            if not rest.seekable():
                return None
            rest.seek(0)
            head = rest.read(24)
            rest.seek(offset)
        except (AttributeError, ValueError, OSError):
            if own:
                rest.close()
            return None
    if len(head) < 24 or not is_pcap_magic(head) or offset < 24:
        if own:
            rest.close()
        return None
    spliced = _Spliced(head, rest, offset, own)
    reader = CaptureReader(spliced)
    reader.frames = frames_before
    spliced.reader = reader
    return reader
