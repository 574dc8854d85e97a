"""The converter's array helpers: byte gathering, single-byte text translation
and the MQXMIT prepended to header_formats (``mqcodec.arrow_kernels.gather_slices``,
``mqcodec.convert.converter._translated``, ``_with_first``), against plain Python: slices joined with
``bytes``, text decoded by Python's own codecs through
:func:`mqcodec.ccsid.text_decoder`, lists built row by row.

``gather_slices`` copies slices in order that do not overlap through Arrow's
``take`` and any others through an index per byte; ``_translated`` takes
text whose characters are all one byte of UTF-8 through a 256-byte table and
other text character by character: each way is checked here."""
from __future__ import annotations

import numpy as np
import pytest

from mqcodec.ccsid import is_single_byte, text_decoder
from mqcodec.arrow_kernels import gather_slices
from mqcodec.convert.converter import _translated, _utf8_table


def _plain(values: np.ndarray, starts, lengths) -> tuple[bytes, list[int]]:
    raw = values.tobytes()
    parts = [raw[s:s + n] for s, n in zip(starts, lengths)]
    return b"".join(parts), [0] + np.cumsum([len(p) for p in parts]).tolist()


def _check(values, starts, lengths) -> None:
    got, offsets = gather_slices(values, np.asarray(starts, np.int64), np.asarray(lengths, np.int64))
    want, want_offsets = _plain(values, starts, lengths)
    assert got.tobytes() == want
    assert offsets.tolist() == want_offsets


@pytest.mark.parametrize("seed", range(5))
def test_slices_in_order(seed):
    """Record bodies: in order, gaps between them, empty ones, one at the very end."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 256, 5000, dtype=np.uint8)
    cuts = np.sort(rng.choice(5001, 60, replace=False))
    starts, ends = cuts[0::2], cuts[1::2]
    lengths = ends - starts
    lengths[::7] = 0
    _check(values, starts, lengths)
    _check(values, [4990], [10])       # one slice, to the buffer's end
    _check(values, [0, 0, 5], [0, 5, 0])   # empty slices next to one that starts where they do


@pytest.mark.parametrize("seed", range(5))
def test_slices_out_of_order_or_overlapping(seed):
    """A table's entries looked up per byte: repeated, overlapping, any order."""
    rng = np.random.default_rng(100 + seed)
    values = rng.integers(0, 256, 300, dtype=np.uint8)
    starts = rng.integers(0, 290, 200)
    lengths = rng.integers(0, 10, 200)
    _check(values, starts, lengths)
    _check(values, [10, 5], [3, 3])       # backwards
    _check(values, [10, 11], [3, 3])      # overlapping


def test_no_slice_and_nothing_to_copy():
    values = np.arange(10, dtype=np.uint8)
    _check(values, [], [])
    _check(values, [3, 7], [0, 0])


def test_a_slice_past_the_buffer_is_refused():
    """Out of bounds is an error (numpy's), never a read past the buffer."""
    with pytest.raises(IndexError):
        gather_slices(np.arange(10, dtype=np.uint8), np.array([5], np.int64), np.array([10], np.int64))


@pytest.mark.parametrize("ccsid", [819, 1252, 37, 500, 1047, 912, 1051, 437])
@pytest.mark.parametrize("text", ["ascii", "any"])
def test_translated_is_the_ccsid_decoder(ccsid, text):
    """Bodies in a single-byte CCSID, as strings: what Python's codec gives,
    for text of ASCII letters only (one byte of UTF-8 each in an ASCII-based
    CCSID: the 256-byte table) and for any bytes (characters of 2 and 3 bytes
    of UTF-8: the general way)."""
    if not is_single_byte(ccsid):
        pytest.skip("not a single-byte CCSID here")
    rng = np.random.default_rng(ccsid)
    if text == "ascii":
        alphabet = np.frombuffer("Hello world 0123456789".encode(
            "cp500" if ccsid in (37, 500, 1047) else "latin-1"), np.uint8)
        body = alphabet[rng.integers(0, len(alphabet), 4000)]
    else:
        body = rng.integers(0, 256, 4000, dtype=np.uint8)
    offsets = np.concatenate([[0], np.sort(rng.integers(0, 4000, 30)), [4000]]).astype(np.int64)
    got = _translated(body, offsets, _utf8_table(ccsid))
    decode = text_decoder(ccsid)
    raw = body.tobytes()
    assert got.to_pylist() == [decode(raw[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
    got.validate(full=True)


@pytest.mark.parametrize("seed", range(4))
def test_with_first_is_a_prepend_row_by_row(seed):
    """``_with_first`` (MESSAGE_DATA rows: MQXMIT first in header_formats) over
    the offsets equals the lists built row by row in Python: null lists,
    empty lists, a sliced array and a chunked one."""
    import random

    import pyarrow as pa

    from mqcodec.convert.converter import _with_first

    rnd = random.Random(seed)
    for _ in range(50):
        n = rnd.randint(0, 30)
        rows = [None if rnd.random() < 0.2 else [rnd.choice(["MQRFH2", "MQSTR", "MQHRF2"])
                                                 for _ in range(rnd.randint(0, 3))] for _ in range(n)]
        arr = pa.array(rows, pa.list_(pa.string()))
        if n > 4:
            arr, rows = arr.slice(2, n - 3), rows[2:n - 1]
        where = np.array([rnd.random() < 0.4 for _ in rows], dtype=bool)
        want = pa.array([["MQXMIT"] + (f or []) if x else f for f, x in zip(rows, where.tolist())],
                        pa.list_(pa.string()))
        got = _with_first(arr, where, "MQXMIT")
        got.validate(full=True)
        assert got.equals(want)
        half = len(rows) // 2
        chunked = pa.chunked_array([arr.slice(0, half), arr.slice(half)], type=arr.type)
        assert _with_first(chunked, where, "MQXMIT").equals(want)


def test_true_rows_reads_nulls_as_false():
    import pyarrow as pa

    from mqcodec.arrow_kernels import true_rows

    a = pa.array([True, None, False, True, None] * 20)
    assert true_rows(a).tolist() == [bool(x) for x in a.to_pylist()]
    assert true_rows(a.slice(3, 50)).tolist() == [bool(x) for x in a.slice(3, 50).to_pylist()]
    assert true_rows(pa.array([], pa.bool_())).tolist() == []


def test_a_negative_length_is_refused():
    """A slice that ends before it starts is an error, never offsets going back."""
    with pytest.raises(ValueError):
        gather_slices(np.arange(10, dtype=np.uint8), np.array([2, 8], np.int64), np.array([5, -1], np.int64))
