"""Progress bars for the command line: tqdm on standard error, only when
standard error is a terminal (a redirected or piped stderr gets nothing, so
logs and test output stay clean; standard output never gets a bar).

    from mqcodec.progress import Bar, CaptureProgress, enabled

    if enabled():
        with Bar(total=messages, desc="synth", unit="msg") as bar:
            ...; bar.update_to(done)

:class:`CaptureProgress` is the callback ``mqcodec.convert`` hands to
both capture engines: the pure pipeline calls it once per frame and lets it
read the capture file's position (:meth:`CaptureProgress.attach`), the
compiled engine reports frames and the byte position once per chunk
(:meth:`CaptureProgress.advance`).  The bar counts input bytes (of the file
on disk: compressed bytes for a gzip capture), so its percentage and ETA
are those of the whole file.
"""
from __future__ import annotations

import os
import sys
from typing import IO, Optional

__all__ = ["Bar", "CaptureProgress", "enabled"]

#: frames between two reads of the file position by the pure pipeline's callback
_FRAME_STRIDE = 256


def enabled(stream: Optional[IO] = None) -> bool:
    """True when ``stream`` (default ``sys.stderr``) is a terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class Bar:
    """A tqdm bar to which one reports absolute positions (``update_to``).

    ``total`` None gives a counter without percentage.  Writes to ``stream``
    (default ``sys.stderr``)."""

    def __init__(self, total: Optional[int], desc: str, *, unit: str = "it", unit_scale: bool = False,
                 stream: Optional[IO] = None, mininterval: float = 0.25):
        from tqdm import tqdm

        self.total = total
        stream = sys.stderr if stream is None else stream
        # follow the terminal's width; a terminal that reports none (0 columns) gets 80
        dynamic = _columns(stream) > 0
        self._bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale,
                         unit_divisor=1024 if unit == "B" else 1000, file=stream, dynamic_ncols=dynamic,
                         ncols=None if dynamic else 80, nrows=None if dynamic else 24,
                         mininterval=mininterval, leave=True)

    @property
    def n(self) -> int:
        return int(self._bar.n)

    def update_to(self, n: int) -> None:
        """Move the bar to ``n`` (never backwards, never past ``total``)."""
        if self.total is not None:
            n = min(n, self.total)
        if n > self._bar.n:
            self._bar.update(n - self._bar.n)

    def set_total(self, total: int) -> None:
        """The total, once known (a bar created without one)."""
        if total != self.total:
            self.total = self._bar.total = total

    def postfix(self, text: str) -> None:
        self._bar.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> "Bar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _columns(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


def _size(path) -> Optional[int]:
    try:
        return os.path.getsize(path)
    except (OSError, TypeError, ValueError):
        return None


def file_position(reader) -> Optional[int]:
    """Bytes of the file a :class:`mqcodec.capture.CaptureReader` has read so far
    (it reads the file itself in chunks: compressed bytes for gzip)."""
    f = getattr(reader, "_f", None)
    try:
        return int(f.tell()) if f is not None and not f.closed else None
    except (AttributeError, ValueError, OSError):
        return None


class CaptureProgress:
    """Progress of one capture file: a bar over the file's size in bytes,
    with the frames read so far beside it."""

    def __init__(self, path, stream: Optional[IO] = None):
        self.path = str(path)
        self.frames = 0
        self._reader = None
        total = _size(path)
        self.bar = Bar(total, os.path.basename(self.path), unit="B", unit_scale=True, stream=stream)

    # -- the pure pipeline ------------------------------------------------
    def attach(self, reader) -> None:
        """Read positions from this capture reader (the pure pipeline)."""
        self._reader = reader

    def __call__(self, frame) -> None:
        self.frames += 1
        if self.frames % _FRAME_STRIDE == 0 and self._reader is not None:
            pos = file_position(self._reader)
            if pos is not None:
                self.bar.postfix("%d frames" % self.frames)
                self.bar.update_to(pos)

    # -- the compiled engine ----------------------------------------------
    def advance(self, frames: int, position: Optional[int] = None) -> None:
        """``frames`` more frames read; the file read up to byte ``position``."""
        self.frames += frames
        self.bar.postfix("%d frames" % self.frames)
        if position is not None:
            self.bar.update_to(position)

    def done(self) -> None:
        if self.bar.total is not None:
            self.bar.update_to(self.bar.total)
        self.bar.postfix("%d frames" % self.frames)
        self.bar.close()
