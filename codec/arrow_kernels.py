"""Arrow compute kernels and numpy conversions for the conversion path,
without the imports that cost a small capture's process most of its time.

``pyarrow.compute`` builds a Python wrapper with a docstring for every
kernel when it is imported (23-37 ms on this machine, more than the whole
conversion of a small capture), and every ``Table.filter``/``take``/``cast``,
``Array.dictionary_encode`` and ``pc.*`` call imports it.  The kernels
themselves live in ``pyarrow._compute``: :func:`call` runs one by name.
``pa.array(ndarray)`` imports ``numpy.ma`` the first time (it looks for masked
arrays): :func:`from_numpy` wraps a numpy buffer instead.

``tests/test_pcap2parquet_threads.py`` checks that converting the shared real
capture imports neither.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyarrow._compute import CastOptions, call_function as call

__all__ = ["call", "take", "filter", "cast", "dictionary_encode", "if_else", "equal", "is_null", "is_valid",
           "fill_null", "cast_table", "sort_by", "invert", "and_", "or_", "from_numpy", "bools", "int64s", "true_rows",
           "gather_slices", "nulls", "pc"]


#: zeros that the arrays of :func:`nulls` share (never written to; grown by replacing)
_ZEROS = pa.py_buffer(bytearray(0))


def _zeros(size: int) -> pa.Buffer:
    global _ZEROS
    zeros = _ZEROS
    if zeros.size < size:
        zeros = _ZEROS = pa.py_buffer(bytearray(max(size, 2 * zeros.size)))
    return zeros.slice(0, size)


def nulls(n: int, t: pa.DataType) -> pa.Array:
    """``pa.nulls(n, t)`` whose buffers are zeros every such array shares, for the
    types of the output tables (integers, floats, times, booleans, fixed-size
    binary, strings, binaries, lists, dictionaries of them); ``pa.nulls`` for any
    other: a column without a value in a chunk costs no memory of its own."""
    validity = _zeros((n + 7) // 8)
    if pa.types.is_dictionary(t):
        return pa.DictionaryArray.from_arrays(nulls(n, t.index_type), pa.array([], t.value_type))
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return pa.Array.from_buffers(t, n, [validity, _zeros(4 * (n + 1)), _zeros(0)], null_count=n)
    if pa.types.is_list(t):
        return pa.Array.from_buffers(t, n, [validity, _zeros(4 * (n + 1))], null_count=n,
                                     children=[pa.array([], t.value_type)])
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t) \
            or pa.types.is_temporal(t) or pa.types.is_fixed_size_binary(t):
        return pa.Array.from_buffers(t, n, [validity, _zeros((n * t.bit_width + 7) // 8)], null_count=n)
    return pa.nulls(n, t)


def take(data, indices):
    """``data.take(indices)`` (array, chunked array, record batch or table)."""
    return call("take", [data, indices])


def filter(data, mask):   # noqa: A001 (the kernel's name)
    """``data.filter(mask)`` (nulls in ``mask`` drop the row)."""
    return call("filter", [data, mask])


def cast(data, target_type, safe: bool = True):
    """``data.cast(target_type)``."""
    return call("cast", [data], CastOptions(target_type) if safe else CastOptions.unsafe(target_type))


def cast_table(table, schema):
    """``table.cast(schema)``: each column cast to its field's type."""
    return pa.Table.from_arrays([col if col.type == f.type else cast(col, f.type)
                                 for col, f in zip(table.columns, schema)], schema=schema)


def sort_by(table, column: str):
    """``table.sort_by(column)`` (ascending, stable)."""
    from pyarrow._compute import SortOptions

    return take(table, call("sort_indices", [table], SortOptions([(column, "ascending")])))


def dictionary_encode(data):
    return call("dictionary_encode", [data])


def if_else(cond, left, right):
    return call("if_else", [cond, left, right])


def equal(left, right):
    return call("equal", [left, right])


def is_null(data):
    return call("is_null", [data])


def is_valid(data):
    return call("is_valid", [data])


def fill_null(data, value):
    """Nulls of ``data`` replaced by ``value`` (a Python scalar of its type)."""
    if not isinstance(value, pa.Scalar):
        value = pa.scalar(value, data.type)
    return call("coalesce", [data, value])


def invert(data):
    return call("invert", [data])


def and_(left, right):
    return call("and", [left, right])


def or_(left, right):
    return call("or", [left, right])


#: numpy dtype kinds + item sizes -> Arrow types that share their memory layout
_NUMERIC = {("i", 1): pa.int8(), ("i", 2): pa.int16(), ("i", 4): pa.int32(), ("i", 8): pa.int64(),
            ("u", 1): pa.uint8(), ("u", 2): pa.uint16(), ("u", 4): pa.uint32(), ("u", 8): pa.uint64(),
            ("f", 4): pa.float32(), ("f", 8): pa.float64()}


def from_numpy(values, type: Any = None, mask=None) -> pa.Array:   # noqa: A002 (pa.array's names)
    """``pa.array(values, type, mask=mask)`` for a 1-D numpy array of numbers
    or bools (``mask`` True: null), sharing the numpy buffer where the layouts
    agree (the array must then stay unchanged); other inputs go to ``pa.array``."""
    import numpy as np

    values = np.asarray(values)
    kind = values.dtype.kind
    validity = None
    nulls = 0
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        nulls = int(mask.sum())
        if nulls:
            validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
    if values.ndim == 1 and kind == "b" and (type is None or type == pa.bool_()):
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [validity, pa.py_buffer(bits)], null_count=nulls)
    natural = _NUMERIC.get((kind, values.dtype.itemsize)) if values.ndim == 1 else None
    if natural is None:
        return pa.array(values, type, mask=mask)
    if type is not None and type != natural:
        target = _numpy_type(type)
        if target is None:
            return cast(from_numpy(values, None, mask), type)
        values = values.astype(target)
        natural = type
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(natural, len(values), [validity, pa.py_buffer(values)], null_count=nulls)


def _numpy_type(arrow_type):
    """The numpy dtype of a numeric Arrow type of :data:`_NUMERIC` (None: not one)."""
    import numpy as np

    for (kind, size), t in _NUMERIC.items():
        if t == arrow_type:
            return np.dtype(kind + str(size))
    return None


def bools(values) -> pa.Array:
    """A bool array from a numpy bool array (or anything numpy reads as one)."""
    import numpy as np

    return from_numpy(np.asarray(values, dtype=bool))


def true_rows(data):
    """A bool array as a numpy bool array, null as False (``to_numpy`` of a bool
    array imports ``pyarrow.compute`` and ``numpy.ma``): its true values' indices set."""
    import numpy as np

    out = np.zeros(len(data), dtype=bool)
    out[call("indices_nonzero", [data]).to_numpy()] = True
    return out


def gather_slices(values, starts, lengths):
    """The bytes ``values[starts[i]:starts[i] + lengths[i]]`` (``values``: numpy
    uint8) of every i, one after another, as numpy uint8, and their n+1 int64
    offsets.  Slices in order that do not overlap (records, or the bodies of
    records, in record order) are copied by Arrow's ``take``, one copy of each
    slice: they are the even elements of a large binary array over ``values``
    whose odd elements are the bytes between them.  Others (a table's entries,
    looked up per byte) through an index per byte (numpy refuses slices out of
    bounds or of a negative length)."""
    import numpy as np

    lengths = np.asarray(lengths).astype(np.int64)
    n = len(lengths)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        return np.empty(0, np.uint8), offsets
    starts = np.asarray(starts, dtype=np.int64)
    ends = starts + lengths
    in_order = n == 1 or bool((starts[1:] >= ends[:-1]).all())
    if in_order and int(starts[0]) >= 0 and int(ends[-1]) <= len(values) and int(lengths.min()) >= 0:
        edges = np.empty(2 * n, np.int64)
        edges[0::2] = starts
        edges[1::2] = ends
        spans = pa.LargeBinaryArray.from_buffers(pa.large_binary(), 2 * n - 1,
                                                 [None, pa.py_buffer(edges), pa.py_buffer(values)])
        picked = take(spans, int64s(np.arange(0, 2 * n - 1, 2, dtype=np.int64)))
        return np.frombuffer(picked.buffers()[2], np.uint8, total), offsets
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(total, dtype=np.int64)
    return values[index], offsets


def int64s(values) -> pa.Array:
    """An int64 array from a numpy integer array (or a list of ints)."""
    import numpy as np

    return from_numpy(np.asarray(values, dtype=np.int64))


class _Kernels:
    """``pyarrow.compute`` by name for the kernels called without options
    (``pc.equal(a, b)``, ``pc.and_(a, b)``, ``pc.sum(a)`` ...: one
    ``call_function`` each); a call with keyword options, or of a kernel whose
    positional arguments are options, goes to ``pyarrow.compute`` itself."""

    #: kernels whose wrappers take options positionally
    _WITH_OPTIONS = frozenset({"strptime", "match_substring_regex", "utf8_slice_codeunits", "index_in", "is_in",
                               "round", "strftime", "split_pattern", "replace_substring", "count_substrings_regex",
                               "binary_slice", "pad", "utf8_lpad", "utf8_rpad", "list_slice", "struct_field"})

    def __getattr__(self, name: str):
        if name == "fill_null":
            return fill_null
        if name == "cast":
            return cast
        if name in self._WITH_OPTIONS:
            import pyarrow.compute

            return getattr(pyarrow.compute, name)
        kernel = name[:-1] if name.endswith("_") else name

        def kernel_call(*args, **options):
            if options:
                import pyarrow.compute

                return getattr(pyarrow.compute, name)(*args, **options)
            return call(kernel, list(args))
        kernel_call.__name__ = name
        return kernel_call


#: ``from mqcodec.arrow_kernels import pc`` in place of ``import pyarrow.compute as pc``
pc = _Kernels()
