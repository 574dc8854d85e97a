"""Running construct declarations on untrusted bytes.

construct's own exceptions name neither the byte offset nor always the field;
:func:`parse_at` runs a declaration at an offset of a larger buffer, checks
first that the fixed part is present, and turns any failure into a
:class:`~mqcodec.errors.DecodeError` naming the structure, the field and the
absolute offset of that field.

Declarations stay plain ``construct.Struct`` objects so they read like the
specification's tables; these helpers add the error model around them.
"""
from __future__ import annotations

import re
from typing import Any

import construct as cs

from .errors import DecodeError

__all__ = ["parse_at", "build", "field_offsets", "fixed_size"]

_size_cache: dict[int, int | None] = {}
_offset_cache: dict[int, dict[str, int]] = {}


def fixed_size(struct: cs.Construct) -> int | None:
    """sizeof() of a declaration, or None when it depends on the data."""
    key = id(struct)
    if key not in _size_cache:
        try:
            _size_cache[key] = struct.sizeof()
        except (cs.SizeofError, Exception):
            _size_cache[key] = None
    return _size_cache[key]


def field_offsets(struct: cs.Struct) -> dict[str, int]:
    """Offsets of the named fields of ``struct`` up to the first field whose
    size depends on the data (fields after it are absent from the result)."""
    key = id(struct)
    if key in _offset_cache:
        return _offset_cache[key]
    offsets: dict[str, int] = {}
    pos = 0
    for sc in getattr(struct, "subcons", []):
        if sc.name:
            offsets[sc.name] = pos
        try:
            pos += sc.sizeof()
        except Exception:
            break
    _offset_cache[key] = offsets
    return offsets


_PATH_FIELD = re.compile(r"->\s*([A-Za-z_][A-Za-z0-9_]*)")


def _field_from(exc: Exception) -> str:
    path = getattr(exc, "path", None) or ""
    names = _PATH_FIELD.findall(path)
    return names[0] if names else ""


def parse_at(struct: cs.Construct, data: bytes | memoryview, offset: int, structure: str, **context: Any) -> Any:
    """Parse ``struct`` at ``data[offset:]``.

    Raises :class:`DecodeError` (structure, field, absolute offset) when the
    fixed part is not all present or construct rejects a value.
    """
    size = fixed_size(struct)
    avail = len(data) - offset
    if size is not None and avail < size:
        # name the first field that is cut off
        cut_field, cut_at = "", offset
        for name, rel in field_offsets(struct).items():
            if rel <= avail:
                cut_field, cut_at = name, offset + rel
        raise DecodeError(structure, cut_field, cut_at,
                          "truncated: %d bytes needed, %d present" % (size, max(avail, 0)))
    view = memoryview(data)[offset:] if offset else data
    try:
        return struct.parse(view if isinstance(view, (bytes, bytearray)) else bytes(view[: size] if size else view), **context)
    except DecodeError:
        raise
    except (cs.ConstructError, ValueError, IndexError, OverflowError, UnicodeError) as exc:
        field = _field_from(exc)
        rel = field_offsets(struct).get(field, 0) if isinstance(struct, cs.Struct) else 0
        raise DecodeError(structure, field, offset + rel, _reason(exc)) from None


def build(struct: cs.Construct, value: Any, structure: str, **context: Any) -> bytes:
    from .errors import EncodeError

    try:
        return struct.build(value, **context)
    except (cs.ConstructError, ValueError, OverflowError, UnicodeError) as exc:
        raise EncodeError(structure, _field_from(exc), _reason(exc)) from None


def _reason(exc: Exception) -> str:
    text = str(exc).strip()
    # construct prefixes messages with "Error in path (parsing) -> a -> b\n"
    return text.splitlines()[-1] if text else exc.__class__.__name__
