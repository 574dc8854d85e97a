"""Reading a capture source (a path, bytes or a file object): from its start,
and its frames up to a damaged record."""
from __future__ import annotations

import os

__all__ = ["reopen", "frames_until_error"]


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
