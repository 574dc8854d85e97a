"""Reading a capture source (a path, bytes or a file object): whether it can
be read again, from its start, and its frames up to a damaged record."""
from __future__ import annotations

import io
import os
from typing import Any

__all__ = ["rereadable", "reopen", "frames_until_error", "resumed_reader"]


def rereadable(source) -> bool:
    """Can ``source`` be read again from its start?  The compiled path needs it:
    a file header the core declines goes to the pure pipeline, and a file
    error the core stops at is reported by the pure reader (from where the
    core stopped in a plain pcap, :func:`resumed_reader`; else it reads the
    file's structure up to it; no frame is converted twice).  Paths, bytes
    and seekable files can be."""
    if isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview)):
        return True
    try:
        return bool(source.seekable())
    except (AttributeError, ValueError, OSError):
        return False


def reopen(source):
    """``source`` ready to be read from its start (a seekable file is rewound)."""
    if isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview)):
        return source
    seek = getattr(source, "seek", None)
    if seek is not None:
        try:
            if source.seekable() and source.tell() != 0:
                seek(0)
        except (ValueError, OSError):
            pass
    return source


def frames_until_error(reader, file_error: list):
    """The reader's frames; a DecodeError in the file structure after the first
    frame is appended to ``file_error`` and ends the iteration (one in the file
    header, before any frame, propagates: the input is not a readable capture)."""
    from ..errors import DecodeError

    it = iter(reader)
    while True:
        try:
            frame = next(it)
        except StopIteration:
            return
        except DecodeError as exc:
            if reader.frames == 0:
                raise
            file_error.append(exc)
            return
        yield frame


class _Resumed(io.RawIOBase):
    """A classic pcap's file header, then its bytes from ``offset`` on; the
    pure parser is moved to ``offset`` between the two (``PcapParser.resume_at``)."""

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
            self.reader.parser.inner.resume_at(self._offset)
            self._offset = None
        piece = self._rest.read(size)
        if not piece and self._own:     # the file this opened: closed at its end
            self._rest.close()
        return piece


def resumed_reader(source, offset: int, frames_before: int):
    """The pure reader's account of a plain (uncompressed) classic pcap from
    record boundary ``offset`` on (where the compiled core stopped: a damaged
    record header, or a record cut short), without reading the records before
    it again: its file header is fed, then the bytes from ``offset``; error and
    truncation offsets are the file's, and its frame count starts at
    ``frames_before``.  None for anything else (pcapng, gzip, a file that
    cannot seek): the caller reads it from the start."""
    from ..capture.pcap import is_pcap_magic
    from ..capture.reader import CaptureReader

    src = reopen(source)
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
    spliced = _Resumed(head, rest, offset, own)
    reader = CaptureReader(spliced)
    reader.frames = frames_before
    spliced.reader = reader
    return reader
