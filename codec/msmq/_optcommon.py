"""Shared machinery of the MSMQ optional headers (private module).

* :class:`Cursor` reads one header of untrusted bytes: every variable length
  is checked against the packet end *before* anything is sliced, and every
  failure is a :class:`~mqcodec.errors.DecodeError` naming the structure, the
  field and the absolute offset.
* :class:`OptionalHeader` is the base class giving every header the common
  ``decode(data, offset, end, *, lenient=False, warnings=None)`` entry point,
  with a last-resort translation of any stray exception into DecodeError.
* GUID, bit-field and UTF-16 helpers.
"""
from __future__ import annotations

import struct
import uuid
from typing import Any, ClassVar

import construct as cs

from ..render import json_ready
from ..errors import DecodeError, DecodeWarning, EncodeError, Problems
from ..layout import parse_at

__all__ = [
    "Cursor",
    "OptionalHeader",
    "align4",
    "guid_str",
    "guid_bytes",
    "split_bits",
    "utf16_text",
    "GUID",
]

#: A GUID as [MS-DTYP] 2.3.4 lays it out (Data1..Data3 little-endian): 16 bytes.
GUID = cs.Bytes(16)


def align4(n: int) -> int:
    return (n + 3) & ~3


def guid_str(raw: bytes) -> str:
    """Canonical (lower-case, hyphenated) string of a 16-byte [MS-DTYP] GUID."""
    return str(uuid.UUID(bytes_le=bytes(raw)))


def guid_bytes(value: Any, structure: str = "GUID", field: str = "") -> bytes:
    """16 wire bytes from a uuid.UUID, a GUID string or 16 raw bytes."""
    if isinstance(value, uuid.UUID):
        return value.bytes_le
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return bytes(value)
    if isinstance(value, str):
        try:
            return uuid.UUID(value.strip("{}")).bytes_le
        except ValueError:
            pass
    raise EncodeError(structure, field, "not a GUID: %r" % (value,))


def split_bits(value: int, table: dict) -> dict:
    """Sub-fields of a flags integer: ``table`` maps name -> (shift, width),
    bit 0 being the least significant bit (the specifications' diagrams, as
    [MS-MQQB] 4.1.7 shows)."""
    return {name: (value >> shift) & ((1 << width) - 1) for name, (shift, width) in table.items()}


def utf16_text(raw: bytes) -> str:
    """Display text of a UTF-16LE buffer: up to its first NUL; undecodable
    code units become U+FFFD (the raw bytes stay authoritative)."""
    text = bytes(raw).decode("utf-16-le", errors="replace")
    nul = text.find("\x00")
    return text if nul < 0 else text[:nul]


class Cursor:
    """Bounded reader of one header in ``data[start:end]`` (absolute offsets)."""

    __slots__ = ("data", "start", "end", "structure", "lenient", "warnings", "_view", "_buf")

    def __init__(self, data, start: int, end: int, structure: str, lenient: bool, warnings):
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise DecodeError(structure, "", 0, "input is %s, not bytes" % type(data).__name__)
        n = len(data)
        if not isinstance(start, int) or not isinstance(end, int) or start < 0:
            raise DecodeError(structure, "", start if isinstance(start, int) else 0, "bad offset/end")
        self.data = data
        self.start = start
        self.end = max(0, min(end, n))
        self.structure = structure
        self.lenient = lenient
        self.warnings = warnings   # handed on to nested headers as given (None: warnings dropped)
        self._view = memoryview(data)[: self.end]
        self._buf: bytes | bytearray | None = None  # bytes-like with .find(), made on first use

    def _findable(self):
        if self._buf is None:
            d = self.data
            self._buf = d if isinstance(d, (bytes, bytearray)) else bytes(d)
        return self._buf

    # -- bounds ---------------------------------------------------------
    def need(self, at: int, size: int, field: str, what: str = "") -> None:
        """Raise unless ``size`` bytes from absolute ``at`` lie before the end."""
        if size < 0:
            raise DecodeError(self.structure, field, at, "negative length %d" % size)
        if at + size > self.end:
            left = max(0, self.end - at)
            raise DecodeError(
                self.structure, field, at,
                "%s%d bytes needed but only %d remain before the packet end"
                % ((what + ": ") if what else "", size, left))

    def take(self, at: int, size: int, field: str, what: str = "") -> bytes:
        self.need(at, size, field, what)
        return bytes(self._view[at: at + size])

    def parse(self, decl: cs.Construct, at: int) -> Any:
        """Run a fixed-size construct declaration at ``at`` (bounded by end)."""
        return parse_at(decl, self._view, at, self.structure)

    def u16(self, at: int, field: str) -> int:
        self.need(at, 2, field)
        return struct.unpack_from("<H", self._view, at)[0]

    def u32(self, at: int, field: str) -> int:
        self.need(at, 4, field)
        return struct.unpack_from("<I", self._view, at)[0]

    def wstring(self, at: int, field: str, limit: int | None = None) -> bytes:
        """A NUL-terminated UTF-16LE string starting at ``at``: its bytes,
        terminator included.  Raises when no terminator precedes ``limit``."""
        stop = self.end if limit is None else min(limit, self.end)
        buf = self._findable()
        i = at
        while True:  # linear: each find starts after the previous (odd) hit; nothing is copied
            hit = buf.find(b"\x00\x00", i, stop) if stop - at >= 2 else -1
            if hit < 0:
                raise DecodeError(self.structure, field, at,
                                  "null-terminated WCHAR string has no terminator before byte %d" % stop)
            if (hit - at) % 2 == 0:
                return bytes(buf[at: hit + 2])
            i = hit + 1

    def padding(self, at: int, header_start: int, field: str = "padding") -> tuple[bytes, int]:
        """The padding from ``at`` up to the next 4-byte boundary relative to
        ``header_start``; returns (padding bytes, next offset)."""
        nxt = header_start + align4(at - header_start)
        if nxt > self.end:
            self.violation(field, at, "padding to a 4-byte boundary runs past the packet end")
            nxt = self.end
        return bytes(self._view[at:nxt]), nxt

    # -- rule violations -----------------------------------------------
    def violation(self, field: str, at: int, reason: str) -> None:
        """A broken value rule of this header: DecodeError, or a DecodeWarning when lenient."""
        Problems(self.lenient, self.warnings).error(self.structure, field, at, reason)


class OptionalHeader:
    """Base of every optional header: the common decode entry point."""

    STRUCTURE: ClassVar[str] = ""

    @classmethod
    def decode(cls, data, offset: int, end: int, *, lenient: bool = False, warnings: list | None = None):
        """Decode one header at ``data[offset:]`` bounded by ``end``.

        Returns ``(header, next_offset)``; raises DecodeError only."""
        try:
            cur = Cursor(data, offset, end, cls.STRUCTURE, lenient, warnings)
            return cls._decode(cur)
        except DecodeError:
            raise
        except (cs.ConstructError, struct.error, IndexError, KeyError, ValueError, TypeError,
                OverflowError, UnicodeError, RecursionError, MemoryError) as exc:  # pragma: no cover
            raise DecodeError(cls.STRUCTURE, "", offset if isinstance(offset, int) else 0,
                              "undecodable: %s: %s" % (type(exc).__name__, exc)) from None

    @classmethod
    def _decode(cls, cur: Cursor):  # pragma: no cover - abstract
        raise NotImplementedError

    def encode(self) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError

    @json_ready
    def to_dict(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def size(self) -> int:
        """Bytes the header occupies on the wire, padding included."""
        return len(self.encode())
