"""mqcodec.arrow_kernels: the conversion path's Arrow kernels, called by name,
give what pyarrow.compute and pa.array give (the reference here)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc_ref
import pytest

from mqcodec import arrow_kernels as k

INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


@pytest.mark.parametrize("dtype", ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8", "?"])
@pytest.mark.parametrize("masked", [False, True])
def test_from_numpy_equals_pa_array(dtype, masked):
    rnd = np.random.default_rng(7)
    values = (rnd.integers(0, 100, 37) if dtype != "?" else rnd.integers(0, 2, 37)).astype(dtype)
    mask = rnd.integers(0, 2, 37).astype(bool) if masked else None
    got = k.from_numpy(values, mask=mask)
    want = pa.array(values, mask=mask)
    assert got.type == want.type and got.equals(want)
    assert got.null_count == (int(mask.sum()) if masked else 0)


@pytest.mark.parametrize("target", INT_TYPES + [pa.float64(), pa.timestamp("ns", tz="UTC"), pa.bool_()])
def test_from_numpy_with_a_type_equals_pa_array(target):
    values = np.array([0, 1, 5, 100, 3], dtype=np.int64) if target != pa.bool_() else np.array([1, 0, 1, 1, 0], bool)
    mask = np.array([False, True, False, False, True])
    assert k.from_numpy(values, target, mask).equals(pa.array(values, target, mask=mask))


def test_from_numpy_of_other_arrays_goes_to_pa_array():
    strings = np.array(["a", "bc"], dtype=object)
    assert k.from_numpy(strings, pa.string()).equals(pa.array(strings, pa.string()))
    assert k.from_numpy(np.arange(6).reshape(2, 3)[:, 1]).equals(pa.array([1, 4]))   # strided: copied
    assert k.int64s([3, 1]).equals(pa.array([3, 1], pa.int64()))
    assert k.bools([1, 0]).equals(pa.array([True, False]))


def test_kernels_equal_pyarrow_compute():
    a = pa.array([3, None, 1, 7], pa.int32())
    t = pa.table({"x": a, "y": pa.array(["p", "q", None, "s"])})
    mask = pa.array([True, False, None, True])
    idx = pa.array([3, 0, None], pa.int64())
    assert k.take(a, idx).equals(pc_ref.take(a, idx))
    assert k.take(t, idx).equals(t.take(idx))
    assert k.filter(t, mask).equals(t.filter(mask))
    assert k.cast(a, pa.int64()).equals(a.cast(pa.int64()))
    with pytest.raises(pa.ArrowInvalid):
        k.cast(pa.array([300]), pa.int8())
    assert k.cast(pa.array([300]), pa.int8(), safe=False).equals(pa.array([300]).cast(pa.int8(), safe=False))
    assert k.cast_table(t, pa.schema([("x", pa.int64()), ("y", pa.large_string())])).equals(
        t.cast(pa.schema([("x", pa.int64()), ("y", pa.large_string())])))
    assert k.dictionary_encode(t.column("y")).equals(t.column("y").dictionary_encode())
    assert k.fill_null(a, -1).equals(pc_ref.fill_null(a, -1))
    assert k.sort_by(t, "x").equals(t.sort_by("x"))
    # the pc stand-in: kernels by name, keyword options through pyarrow.compute itself
    assert k.pc.and_(mask, mask).equals(pc_ref.and_(mask, mask))
    assert k.pc.equal(t.column("y"), "q").equals(pc_ref.equal(t.column("y"), "q"))
    assert k.pc.sum(a).equals(pc_ref.sum(a))
    assert k.pc.indices_nonzero(pa.array([False, True, True])).equals(pc_ref.indices_nonzero([False, True, True]))
    assert k.pc.utf8_slice_codeunits(pa.array(["abcdef"]), 1, 3).equals(pa.array(["bc"]))
    assert k.pc.sum(a, min_count=5).equals(pc_ref.sum(a, min_count=5))


def test_importing_and_calling_loads_neither_pyarrow_compute_nor_numpy_ma():
    code = ("import sys, numpy as np\n"
            "from mqcodec import arrow_kernels as k\n"
            "a = k.from_numpy(np.arange(5), mask=np.arange(5) > 2)\n"
            "t = k.take(k.cast(a, k.pa.int32()), k.int64s([4, 0]))\n"
            "k.sort_by(k.pa.table({'x': a}), 'x'); k.pc.and_(k.bools([1]), k.bools([0]))\n"
            "print(sorted(m for m in ('pyarrow.compute', 'numpy.ma') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
