"""The front door every batch decoder shares (msgpack style): which
implementation runs, and the input forms it accepts.

* :class:`Implementations` holds the compiled module (``mqcodec._ext.X``)
  and its pure twin; :mod:`mqcodec._impl` decides which runs (the compiled
  one unless it is missing or ``MQCODEC_PURE=1``; ``impl="c"``/``"py"``
  forces one).
* :func:`dispatch` accepts a ``pyarrow`` Binary/LargeBinary (or
  String) array -- its buffers are used directly, ``array.offset`` and nulls
  honoured --, a ChunkedArray of those (decoded chunk by chunk, record numbers
  continuing across chunks), ``(buffer, offsets)``, or any iterable of
  bytes-like records (None = a null record), and hands each piece to the
  implementation as ``(data, int offsets, valid or None, first record number)``.
* :func:`check_offsets` validates ``(buffer, offsets, valid)`` for the pure
  implementations the same way the compiled ones do.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from .. import _impl

__all__ = ["Implementations", "mqlong", "dispatch", "check_offsets"]


class Implementations:
    """The compiled module ``mqcodec._ext.<name>`` and its pure twin; which
    one runs is :mod:`mqcodec._impl`'s decision."""

    def __init__(self, name: str, pure, what: str):
        self.name = name
        self.pure = pure
        self.what = what
        self.compiled = _impl.pick(name, None)

    @property
    def default(self) -> str:
        """"c" when ``impl=None`` runs the compiled implementation, else "py"."""
        return "c" if self.compiled is not None else "py"

    def pick(self, impl: str | None):
        if impl is None:
            return self.compiled if self.compiled is not None else self.pure
        mod = _impl.pick(self.name, impl, what="%s batch decoder" % self.what)
        return self.pure if mod is None else mod


def mqlong(name: str, value: Any) -> int | None:
    """encoding and ccsid are MQLONGs: anything else is refused up front, the
    same way for both implementations."""
    if value is None:
        return None
    value = operator.index(value)
    if not -2 ** 31 <= value < 2 ** 31:
        raise ValueError("%s %d is not an MQLONG (32-bit signed)" % (name, value))
    return value


def _is_buffer_and_offsets(records: Any) -> bool:
    """``(buffer, offsets)`` -- not a pair of records, whose second item is
    bytes-like or None."""
    return (isinstance(records, tuple) and len(records) == 2
            and records[1] is not None and not isinstance(records[1], (bytes, bytearray, memoryview)))


def _array_parts(arr: pa.Array):
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        arr = arr.view(pa.large_binary() if pa.types.is_large_string(arr.type) else pa.binary())
    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        raise TypeError("records must be a binary or large_binary array, not %s" % arr.type)
    n = len(arr)
    bufs = arr.buffers()
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    if n == 0 or bufs[1] is None:
        return b"", np.zeros(n + 1, np.int64), valid
    width = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offsets = np.frombuffer(bufs[1], dtype=width)[arr.offset:arr.offset + n + 1]
    return (bufs[2] if bufs[2] is not None else b""), offsets, valid


def _shift(batch: pa.RecordBatch, base: int) -> pa.RecordBatch:
    if base == 0:
        return batch
    i = batch.schema.get_field_index("record")
    return batch.set_column(i, batch.schema.field(i), pa.array(batch.column(i).to_numpy() + base, pa.int64()))


def dispatch(records: Any, call: Callable[..., Any]):
    """Run ``call(data, offsets, valid, first)`` over ``records`` in any of
    the accepted forms. ``call`` returns a RecordBatch or a tuple of them,
    each with a ``record`` column counted from 0 within the piece; pieces of
    a ChunkedArray are renumbered and concatenated."""
    if isinstance(records, pa.ChunkedArray):
        parts, base = [], 0
        for chunk in records.chunks:
            res = call(*_array_parts(chunk), base)
            parts.append(tuple(_shift(b, base) for b in res) if isinstance(res, tuple) else _shift(res, base))
            base += len(chunk)
        if not parts:
            return call(b"", np.zeros(1, np.int64), None, 0)
        if isinstance(parts[0], tuple):
            return tuple(pa.concat_batches(list(col)) for col in zip(*parts))
        return pa.concat_batches(parts)
    if isinstance(records, pa.Array):
        return call(*_array_parts(records), 0)
    if _is_buffer_and_offsets(records):
        buf, offsets = records
        return call(buf, offsets, None, 0)
    if isinstance(records, (bytes, bytearray, memoryview, str)):
        raise TypeError("records must be a collection of records, not one %s" % type(records).__name__)
    items = [x if x is None or isinstance(x, bytes) else bytes(x) for x in records]
    return call(*_array_parts(pa.array(items, type=pa.large_binary())), 0)


def check_offsets(buf, offsets, valid, *, extra: dict | None = None):
    """Validate ``(buffer, offsets, valid)`` as the compiled decoders do;
    returns ``(memoryview, int64 offsets, valid as bool or None)``.
    ``extra``: other per-record arrays (name -> array) whose length must
    match; they are returned converted to bool in the same dict."""
    offs = np.ascontiguousarray(offsets, dtype=np.int64)
    if offs.ndim != 1 or len(offs) < 1:
        raise ValueError("offsets must hold at least one value")
    n = len(offs) - 1
    mv = memoryview(buf).cast("B") if len(buf) else memoryview(b"")
    if n and (offs[0] < 0 or offs[n] > len(mv)):
        raise ValueError("offsets run outside the buffer")
    if n and (np.diff(offs) < 0).any():
        raise ValueError("offsets must not decrease (record %d)" % int(np.flatnonzero(np.diff(offs) < 0)[0]))
    if valid is not None:
        valid = np.asarray(valid).astype(bool)
        if len(valid) != n:
            raise ValueError("valid must hold one value per record")
    for name, arr in (extra or {}).items():
        if arr is not None and extra is not None:
            arr = np.asarray(arr).astype(bool)
            if len(arr) != n:
                raise ValueError("%s must hold one value per record" % name)
            extra[name] = arr
    return mv, offs, valid
