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
import itertools
import os
from typing import Any, Iterator

from ..errors import DecodeError
from .frame import Frame, Truncation
from .gunzip import CHUNK, GZIP_MAGIC, Gunzip, file_bytes
from .pcap import MAX_RECORD_LEN, PcapParser, is_pcap_magic
from .pcapng import MAX_BLOCK_LEN, PcapngParser, is_pcapng_magic

__all__ = ["CaptureParser", "CaptureReader", "open_capture", "capture_from", "PiecesFile", "iter_frames", "file_bytes", "Frame",
           "Truncation", "Gunzip", "GZIP_MAGIC"]


class CaptureParser:
    """Auto-detecting, I/O-free capture parser.

    ``feed(data) -> list[Frame]``; ``close() -> Truncation | None``.
    Attributes after detection: ``format`` ("pcap" / "pcapng"),
    ``compressed`` (gzip or not), ``inner`` (the format parser).
    """

    def __init__(self, *, max_record_len: int = MAX_RECORD_LEN, max_block_len: int = MAX_BLOCK_LEN,
                 gzip: bool = True):
        self._gzip = gzip   # False: the input is decompressed already (gzip magic is not a format here)
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
            if len(self._head) < 4 and (self._head[:2] != GZIP_MAGIC or not self._gzip):
                return
            data, self._head = self._head, b""
            if data[:2] == GZIP_MAGIC and self._gzip:
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
        # a PiecesFile of a file's decompressed bytes is not inflated again
        self.parser = CaptureParser(gzip=not getattr(self._f, "decompressed", False), **limits)
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
    chunk = b""
    before_header: list = []     # the pieces fed before the core took the file header
    pieces = file_bytes(source)
    for chunk in pieces:
        if core.file_state is None:
            before_header.append(chunk)
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
    if core.stop is None or core.file_state is None:
        # a file header the core does not take, or damage in it: the pure reader's account, of
        # the same bytes
        yield from open_capture(PiecesFile(itertools.chain(before_header, pieces), decompressed=True))
        return
    # the core stopped at a damaged or cut record: the pure reader's account, from there
    yield from capture_from(core.file_state, rest_of(core, chunk, pieces), core.stop[0], core.stop[1], done)


def rest_of(core, chunk: bytes, pieces: Iterator[bytes]) -> Iterator[bytes]:
    """The capture's bytes from where the compiled ``core`` stopped on: those it
    holds, then those of ``chunk`` (the last it was fed) past them, then ``pieces``
    (the file's bytes after ``chunk``)."""
    held = core.unread()
    yield held
    fed_end = core.stop[0] + len(held)          # the file offset just past what the core holds
    chunk_start = core.fed - len(chunk)
    if fed_end < core.fed:
        yield chunk[fed_end - chunk_start:]
    yield from pieces


class PiecesFile(io.RawIOBase):
    """An iterator of byte pieces read as a binary file; a read never joins two
    pieces.  ``decompressed``: the pieces are a capture file's bytes after gzip
    (:func:`file_bytes`), which :class:`CaptureReader` does not inflate again
    (a gzip file holding a gzip file is not a capture, as when read whole)."""

    def __init__(self, pieces: Iterator[bytes], *, decompressed: bool = False):
        super().__init__()
        self.decompressed = decompressed
        self._pieces = iter(pieces)
        self._piece = memoryview(b"")
        self.delivered = 0     # bytes read so far

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not len(self._piece):
            piece = next(self._pieces, None)
            if piece is None:
                return b""
            self._piece = memoryview(piece)
        n = len(self._piece) if size is None or size < 0 else min(size, len(self._piece))
        out, self._piece = bytes(self._piece[:n]), self._piece[n:]
        self.delivered += n
        return out


class _Spliced(PiecesFile):
    """``head`` (what a parser reads the file on with: a classic pcap's file
    header, or a pcapng section's blocks), then ``pieces``, the file's bytes from
    record or block boundary ``offset`` on; the pure parser is moved to ``offset``
    between the two (``start_at``)."""

    def __init__(self, head: bytes, pieces: Iterator[bytes], offset: int, next_number: int):
        super().__init__(itertools.chain((head,), pieces), decompressed=True)
        self._head_len = len(head)
        self._offset: int | None = offset
        self._next_number = next_number
        self.reader: Any = None     # the CaptureReader reading this

    def read(self, size: int = -1) -> bytes:
        if self._offset is not None and self.delivered >= self._head_len:
            inner = self.reader.parser.inner
            inner.start_at(self._offset)
            inner.next_number = self._next_number    # the frames before were not read again
            self._offset = None
        return super().read(size)


def file_head(state) -> bytes:
    """The bytes a parser must be fed first to read a file on from a record or
    block boundary, from the compiled core's ``file_state``: a classic pcap's file
    header, or a Section Header Block and the interfaces in effect (compact:
    what frames are read with)."""
    from .frame import NS_PER_S
    from .pcapng import Interface, interface_block, section_block

    if state[0] == "pcap":
        return state[1]
    order = ">" if state[1] else "<"
    blocks = [section_block(order)]
    for linktype, snaplen, pow2, exp, offset_s in state[2]:
        iface = Interface(linktype, snaplen)
        iface.pow2, iface.exp, iface.offset_ns = pow2, exp, offset_s * NS_PER_S
        blocks.append(interface_block(order, iface))
    return b"".join(blocks)


def capture_from(state, pieces: Iterator[bytes], offset: int, next_number: int,
                 frames_before: int) -> CaptureReader:
    """A reader of a capture (pcap or pcapng, decompressed) from the record or
    block boundary ``offset`` on, where the compiled core stopped, which reads
    nothing before it: ``state`` is the core's ``file_state`` (the file header, or
    the section and interfaces in effect there); ``pieces`` the file's bytes from
    ``offset`` on (a gzip stream's decompressed bytes, raising its damage as
    :func:`file_bytes` does).  Error and truncation offsets are the file's; frame
    numbers go on from ``next_number`` and the reader's frame count from
    ``frames_before``."""
    spliced = _Spliced(file_head(state), iter(pieces), offset, next_number)
    reader = CaptureReader(spliced)
    reader.frames = frames_before
    spliced.reader = reader
    return reader
