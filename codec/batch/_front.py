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

Chunks (the PCF and MSMQ decoders): with ``chunk=Chunking(records, nbytes)``
:func:`dispatch` hands the implementation fixed-size pieces -- at most
``records`` records and, past the first record of a piece, at most ``nbytes``
input bytes -- and returns a ``pyarrow.Table`` whose record batches are the
pieces' outputs, in order (never concatenated).  The cost per record is then
the same for a call of a thousand records and one of a million: every output
buffer is a few MB at most, so memory freed by the previous piece or call is
reused instead of fresh pages being faulted in (numpy asks for transparent
huge pages above 4 MB, and the kernel's compaction for them cost seconds of
system time per 100 k-record call; BENCHMARKS.md).  Results do not depend on
the chunk size: record numbers continue across pieces (the ``first``
argument of the implementations) and every record is decoded on its own.
"""
from __future__ import annotations

import importlib
import operator
from typing import Any, Callable, NamedTuple

import numpy as np
import pyarrow as pa

from .. import _impl

__all__ = ["Implementations", "Chunking", "mqlong", "dispatch", "check_offsets", "chunk_bounds"]


class Chunking(NamedTuple):
    """The size of the pieces :func:`dispatch` decodes at a time."""
    #: at most this many records in a piece
    records: int
    #: and at most this many input bytes (a single longer record is a piece of its own)
    nbytes: int


#: piece sizes of the chunked decoders (BENCHMARKS.md, "PCF bodies"): a PCF piece of
#: 2 MiB (about 1,800 trace-route messages) keeps every output column under
#: 2 MB, which the compiled decoder keeps for the next pieces and calls when Arrow
#: lets go of it (a call of 1,000 such messages is one piece); the MSMQ decoder's
#: fixed cost per call (~130 Arrow columns) wants more records per piece, its rows
#: being a few hundred bytes
PCF_CHUNK = Chunking(records=4096, nbytes=2 << 20)
MSMQ_CHUNK = Chunking(records=65536, nbytes=32 << 20)


def chunk_bounds(offsets: np.ndarray, chunk: Chunking) -> list[int]:
    """Record indices ``[0, b1, ..., n]`` cutting ``n = len(offsets) - 1``
    records into pieces of at most ``chunk.records`` records and
    ``chunk.nbytes`` bytes (at least one record each).  ``offsets`` must be
    valid (non-decreasing)."""
    n = len(offsets) - 1
    if chunk.records < 1 or chunk.nbytes < 1:
        raise ValueError("chunk sizes must be positive")
    bounds = [0]
    s = 0
    while s < n:
        e = min(n, s + chunk.records)
        if int(offsets[e]) - int(offsets[s]) > chunk.nbytes:
            # the last record end within nbytes of the piece's start (searched in this piece only)
            lim = s + int(np.searchsorted(offsets[s:e + 1], int(offsets[s]) + chunk.nbytes, side="right")) - 1
            e = max(s + 1, lim)
        bounds.append(e)
        s = e
    if n <= 0:
        bounds.append(0)
    return bounds


_UNLOADED: Any = object()


class Implementations:
    """The compiled module ``mqcodec._ext.<name>`` and its pure twin; which
    one runs is :mod:`mqcodec._impl`'s decision."""

    def __init__(self, name: str, pure, what: str):
        self.name = name
        self._pure = pure  # the pure module, or its name (imported when first picked)
        self.what = what
        # the compiled module, imported when first picked (a command that decodes nothing
        # of this kind does not pay for it, nor for the modules whose tables it reads);
        # whether it runs is mqcodec._impl's decision
        self._compiled: Any = None if _impl.pure_forced() else _UNLOADED

    @property
    def compiled(self):
        if self._compiled is _UNLOADED:
            self._compiled = _impl.pick(self.name, None)
        return self._compiled

    @property
    def pure(self):
        if isinstance(self._pure, str):
            self._pure = importlib.import_module(self._pure)
        return self._pure

    @property
    def default(self) -> str:
        """"c" when ``impl=None`` runs the compiled implementation, else "py"
        (known without importing it: built is enough)."""
        if self._compiled is _UNLOADED:
            from importlib.util import find_spec

            try:
                return "c" if find_spec("mqcodec._ext." + self.name) is not None else "py"
            except ImportError:
                return "py"
        return "c" if self._compiled is not None else "py"

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


def dispatch(records: Any, call: Callable[..., Any], chunk: Chunking | None = None):
    """Run ``call(data, offsets, valid, first)`` over ``records`` in any of
    the accepted forms. ``call`` returns a RecordBatch or a tuple of them,
    each with a ``record`` column counted from 0 within the piece; pieces of
    a ChunkedArray are renumbered and concatenated.

    With ``chunk``, ``call`` is run on pieces of that size and must number
    its records from ``first`` itself; the result is a Table (or a tuple of
    Tables) holding the pieces' batches in order, for every input form and
    size (see the module docstring)."""
    if chunk is not None:
        return _chunked(records, call, chunk)
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
    if n:
        down = offs[1:] < offs[:-1]
        if down.any():
            raise ValueError("offsets must not decrease (record %d)" % int(np.flatnonzero(down)[0]))
    valid = _per_record(valid, n, "valid")
    if extra is not None:
        for name, arr in extra.items():
            extra[name] = _per_record(arr, n, name)
    return mv, offs, valid


def _per_record(values, n: int, name: str):
    """``values`` (None, or one truth value per record) as a bool array of ``n``;
    ValueError naming it otherwise.  (The compiled decoders' twin:
    ``_per_record`` in _ext/batch_common.pxi.)"""
    if values is None:
        return None
    values = np.asarray(values).astype(bool)
    if values.ndim != 1 or len(values) != n:
        raise ValueError("%s must hold one value per record" % name)
    return values


def _pieces(records: Any):
    """The ``(data, offsets, valid)`` parts of ``records`` in any accepted form."""
    if isinstance(records, pa.ChunkedArray):
        for arr in records.chunks:
            yield _array_parts(arr)
    elif isinstance(records, pa.Array):
        yield _array_parts(records)
    elif _is_buffer_and_offsets(records):
        yield records[0], records[1], None
    elif isinstance(records, (bytes, bytearray, memoryview, str)):
        raise TypeError("records must be a collection of records, not one %s" % type(records).__name__)
    else:
        items = [x if x is None or isinstance(x, bytes) else bytes(x) for x in records]
        yield _array_parts(pa.array(items, type=pa.large_binary()))


def _one_piece(offsets: Any, chunk: Chunking) -> bool:
    """Whether ``offsets`` (not yet checked) fit in one piece of ``chunk``."""
    return (isinstance(offsets, np.ndarray) and offsets.ndim == 1 and offsets.dtype.kind in "iu"
            and 2 <= len(offsets) <= chunk.records + 1
            and int(offsets[-1]) - int(offsets[0]) <= chunk.nbytes)


def _chunked(records: Any, call: Callable[..., Any], chunk: Chunking):
    outs: list = []
    base = 0
    for data, offsets, valid in _pieces(records):
        if _one_piece(offsets, chunk):
            # the decoder checks its input itself, with the same errors
            outs.append(call(data, offsets, valid, base))
            base += len(offsets) - 1
            continue
        # checked once for the whole piece, so that errors name the record as an unchunked call does
        data, offs, valid = check_offsets(data, offsets, valid)
        bounds = chunk_bounds(offs, chunk)
        for s, e in zip(bounds, bounds[1:]):
            outs.append(call(data, offs[s:e + 1], None if valid is None else valid[s:e], base + s))
        base += len(offs) - 1
    if not outs:
        outs.append(call(b"", np.zeros(1, np.int64), None, 0))
    if isinstance(outs[0], tuple):
        return tuple(pa.Table.from_batches(list(col), schema=col[0].schema) for col in zip(*outs))
    return pa.Table.from_batches(outs, schema=outs[0].schema)
