"""The chunked batch decoders (PCF, MSMQ): a call of N records gives the
same rows as the concatenation of calls over its pieces, whatever the piece
size, on both implementations (``impl``), around the piece boundaries.

Outside facts: the records are the shared PCF vectors (shared/vectors/ibmmq,
IBM's byte layouts) and MSMQ sessions built by mqcodec.msmq.framing from
[MS-MQQB]; the reference for each piece is an independent unchunked call of
the implementation's own ``decode_*_buffers`` on that piece alone, with its
record numbers shifted by hand (numpy), so a piece boundary that dropped,
repeated or renumbered a record, or let one record's state leak into the
next piece, fails.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from mqcodec import batch
from mqcodec.batch import _front
from mqcodec.batch._front import Chunking, chunk_bounds


def _pcf_records(vectors):
    from mqcodec.ibmmq.pcf import PcfMessage, PcfParameter as P, encode_pcf

    base = [p.read_bytes() for p in sorted((vectors / "ibmmq").glob("*.dat"))]
    assert len(base) >= 2
    # a big-endian one too (MQCFT_COMMAND 1, MQCMD_INQUIRE_Q 13; MQCA_Q_NAME 2016, MQIA_Q_TYPE 20)
    base.append(encode_pcf(PcfMessage.new(1, 13, [P.string(2016, "APP.QUEUE"), P.integer(20, 1)], encoding=273)))
    recs = []
    for i in range(40):
        r = base[i % len(base)]
        if i % 7 == 3:
            r = r[: len(r) // 2]           # a truncated record: an error row, no parameter rows
        recs.append(None if i % 11 == 5 else r)
    return recs


def _msmq_records():
    from mqcodec.msmq.builders import simulate_session

    out = []
    for seed in range(3):
        s = simulate_session(seed, messages=4)
        out += [p for _, p in s.initiator_packets] + [p for _, p in s.acceptor_packets]
    out[4] = out[4][:10]                    # cut BaseHeader: an error row
    out.insert(7, None)                     # a null record
    return out[:40]


def _buffers(recs):
    arr = pa.array(recs, pa.large_binary())
    return _front._array_parts(arr)


def _shifted(b: pa.RecordBatch, first: int) -> pa.RecordBatch:
    i = b.schema.get_field_index("record")
    return b.set_column(i, b.schema.field(i), pa.array(b.column(i).to_numpy() + first, pa.int64()))


def _reference(decode, recs, bounds):
    """Each piece decoded alone (first record 0), renumbered by hand."""
    data, offs, valid = _buffers(recs)
    outs = []
    for s, e in zip(bounds, bounds[1:]):
        res = decode(data, offs[s:e + 1], valid=None if valid is None else valid[s:e])
        outs.append(tuple(_shifted(b, s) for b in res) if isinstance(res, tuple) else _shifted(res, s))
    return outs


def _same(table: pa.Table, batches: list[pa.RecordBatch]):
    want = pa.Table.from_batches(batches, schema=batches[0].schema)
    assert table.schema == want.schema
    assert table.num_rows == want.num_rows
    assert table.combine_chunks().equals(want.combine_chunks())


def test_chunk_bounds():
    offs = np.array([0, 10, 20, 30, 100, 101, 102], np.int64)
    assert chunk_bounds(offs, Chunking(2, 1000)) == [0, 2, 4, 6]
    assert chunk_bounds(offs, Chunking(100, 25)) == [0, 2, 3, 4, 6]   # record 3 (70 bytes) alone
    assert chunk_bounds(offs, Chunking(100, 1000)) == [0, 6]
    assert chunk_bounds(np.zeros(1, np.int64), Chunking(4, 4)) == [0, 0]
    with pytest.raises(ValueError):
        chunk_bounds(offs, Chunking(0, 10))


@pytest.mark.parametrize("records_per_chunk", [1, 2, 3, 7, 8, 9, 39, 40, 41])
def test_pcf_pieces_equal_whole(impl, vectors, monkeypatch, records_per_chunk):
    recs = _pcf_records(vectors)
    monkeypatch.setattr(_front, "PCF_CHUNK", Chunking(records_per_chunk, 1 << 30))
    got = batch.decode_pcf_batch(recs, impl=impl)
    assert isinstance(got.headers, pa.Table) and isinstance(got.parameters, pa.Table)
    bounds = list(range(0, len(recs), records_per_chunk)) + [len(recs)]
    assert got.headers.num_rows == len(recs) and len(got.headers.to_batches()) == len(bounds) - 1
    mod = batch._PCF.pick(impl)
    ref = _reference(mod.decode_pcf_buffers, recs, bounds)
    _same(got.headers, [h for h, _ in ref])
    _same(got.parameters, [p for _, p in ref])
    # and every piece size gives the rows of one unchunked call
    monkeypatch.setattr(_front, "PCF_CHUNK", Chunking(10 ** 9, 1 << 40))
    whole = batch.decode_pcf_batch(recs, impl=impl)
    assert len(whole.headers.to_batches()) == 1
    assert whole.headers.combine_chunks().equals(got.headers.combine_chunks())
    assert whole.parameters.combine_chunks().equals(got.parameters.combine_chunks())
    assert got.headers.column("error_structure").null_count < len(recs)     # errors were met


def test_pcf_byte_limit(impl, vectors, monkeypatch):
    recs = [r for r in _pcf_records(vectors) if r is not None]
    lens = [len(r) for r in recs]
    limit = max(lens) + 1                     # about one record a piece
    monkeypatch.setattr(_front, "PCF_CHUNK", Chunking(1000, limit))
    got = batch.decode_pcf_batch(recs, impl=impl)
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    bounds = chunk_bounds(offs, Chunking(1000, limit))
    assert len(got.headers.to_batches()) == len(bounds) - 1 > len(recs) // 3
    for b, (s, e) in zip(got.headers.to_batches(), zip(bounds, bounds[1:])):
        assert b.column("record").to_pylist() == list(range(s, e))
        assert offs[e] - offs[s] <= limit or e == s + 1
    monkeypatch.setattr(_front, "PCF_CHUNK", Chunking(10 ** 9, 1 << 40))
    whole = batch.decode_pcf_batch(recs, impl=impl)
    assert whole.parameters.combine_chunks().equals(got.parameters.combine_chunks())


def test_pcf_real_chunk_boundary(impl, vectors):
    """Around the shipped piece size: N-1, N, N+1 records of the smallest vector."""
    small = min((p.read_bytes() for p in (vectors / "ibmmq").glob("*.dat")), key=len)
    per = min(_front.PCF_CHUNK.records, _front.PCF_CHUNK.nbytes // len(small))
    for n in (per - 1, per, per + 1):
        recs = [small] * n
        got = batch.decode_pcf_batch(recs, impl=impl)
        assert len(got.headers.to_batches()) == (1 if n <= per else 2)
        assert got.headers.column("record").to_pylist() == list(range(n))
        one = batch.decode_pcf_batch([small], impl=impl).parameters
        k = one.num_rows
        assert got.parameters.num_rows == n * k
        # the last record's parameters are the single record's, renumbered
        last = got.parameters.slice((n - 1) * k).combine_chunks()
        assert last.drop_columns(["record"]).equals(one.combine_chunks().drop_columns(["record"]))
        assert set(last.column("record").to_pylist()) == {n - 1}


def test_pcf_chunked_array_and_offsets_errors(impl, vectors, monkeypatch):
    recs = [r for r in _pcf_records(vectors) if r is not None][:10]
    monkeypatch.setattr(_front, "PCF_CHUNK", Chunking(3, 1 << 30))
    arr = pa.chunked_array([pa.array(recs[:4], pa.binary()), pa.array(recs[4:], pa.binary())])
    got = batch.decode_pcf_batch(arr, impl=impl)
    flat = batch.decode_pcf_batch(recs, impl=impl)
    assert got.headers.column("record").to_pylist() == list(range(10))
    assert got.parameters.combine_chunks().equals(flat.parameters.combine_chunks())
    # bad offsets name the record of the whole call, not of a piece
    buf = b"".join(recs)
    offs = np.concatenate([[0], np.cumsum([len(r) for r in recs])]).astype(np.int64)
    offs[8] = offs[7] - 1
    with pytest.raises(ValueError, match="record 7"):
        batch.decode_pcf_batch((buf, offs), impl=impl)


@pytest.mark.parametrize("records_per_chunk", [1, 2, 5, 13, 39, 40, 41])
@pytest.mark.parametrize("columns", [None, ["kind", "base_packet_size", "error_reason", "user_destination_queue"]])
def test_msmq_pieces_equal_whole(impl, monkeypatch, records_per_chunk, columns):
    recs = _msmq_records()
    monkeypatch.setattr(_front, "MSMQ_CHUNK", Chunking(records_per_chunk, 1 << 30))
    got = batch.decode_msmq_batch(recs, impl=impl, columns=columns)
    assert isinstance(got, pa.Table) and got.num_rows == len(recs)
    bounds = list(range(0, len(recs), records_per_chunk)) + [len(recs)]
    assert len(got.to_batches()) == len(bounds) - 1
    from mqcodec.batch import msmq_pure

    mod = msmq_pure._IMPLS.pick(impl)
    full = _reference(mod.decode_msmq_buffers, recs, bounds)
    if columns is not None:
        full = [b.select(columns) for b in full]
    _same(got, full)
    monkeypatch.setattr(_front, "MSMQ_CHUNK", Chunking(10 ** 9, 1 << 40))
    whole = batch.decode_msmq_batch(recs, impl=impl, columns=columns)
    assert whole.combine_chunks().equals(got.combine_chunks())
    if columns is None:
        assert got.column("error_structure").null_count < len(recs)
        assert got.column("record").to_pylist() == list(range(len(recs)))


def test_msmq_real_chunk_boundary(impl):
    if impl == "py":
        pytest.skip("65,536 packets through the pure decoder take minutes; the piece logic is the same "
                    "(test_msmq_pieces_equal_whole runs it on both)")
    recs = [r for r in _msmq_records() if r is not None]
    per = _front.MSMQ_CHUNK.records
    n = per + 1
    data = [recs[i % len(recs)] for i in range(n)]
    got = batch.decode_msmq_batch(data, impl=impl)
    assert [b.num_rows for b in got.to_batches()] == [per, 1]
    assert got.column("record").to_pylist()[-3:] == [n - 3, n - 2, n - 1]
    last = batch.decode_msmq_batch(data[-1:], impl=impl)
    assert got.slice(n - 1).drop_columns(["record"]).combine_chunks().equals(
        last.drop_columns(["record"]).combine_chunks())


def _buffers_functions(impl):
    from mqcodec.batch import mq_pure, msmq_pure
    return [batch._PCF.pick(impl).decode_pcf_buffers, mq_pure._IMPLS.pick(impl).decode_mq_buffers,
            msmq_pure._IMPLS.pick(impl).decode_msmq_buffers]


@pytest.mark.parametrize("bad, message", [
    ((b"abcdef", np.zeros(0, np.int64), None), "offsets must hold at least one value"),
    ((b"abcdef", np.zeros((2, 2), np.int64), None), "offsets must hold at least one value"),
    ((b"abcdef", np.array([0, 7]), None), "offsets run outside the buffer"),
    ((b"abcdef", np.array([-1, 3]), None), "offsets run outside the buffer"),
    ((b"abcdef", np.array([0, 4, 2, 6]), None), r"offsets must not decrease \(record 1\)"),
    ((b"abcdef", np.array([0, 3, 6]), [1]), "valid must hold one value per record"),
    ((b"abcdef", np.array([0, 3, 6]), np.ones((2, 1))), "valid must hold one value per record"),
    ((b"abcdef", np.array([0, 3, 6]), True), "valid must hold one value per record"),
    # a buffer of 4-byte items is 8 bytes, not 2
    ((np.zeros(2, np.int32), np.array([0, 9]), None), "offsets run outside the buffer"),
])
def test_every_decoder_checks_its_input_as_the_pure_one(impl, bad, message):
    """The buffers-level entry points of the three decoders take their input
    through one check (the pure ``check_offsets``, the compiled ``_checked_input``):
    the same errors, whichever decoder and implementation."""
    buf, offs, valid = bad
    for decode in _buffers_functions(impl):
        with pytest.raises(ValueError, match=message):
            decode(buf, offs, valid=valid)


def test_every_decoder_reads_valid_as_truth_values(impl):
    """``valid`` is read as truth values by every decoder (2 and 0.5 are true)."""
    buf = bytes(64)
    offs = np.array([0, 16, 32, 48, 64])
    for decode in _buffers_functions(impl):
        out = decode(buf, offs, valid=np.array([0, 2, 0.5, 0.0]))
        reasons = (out[0] if isinstance(out, tuple) else out).column("error_reason").to_pylist()
        # records 0 and 3 are null records; 1 and 2 are sixteen zero bytes, another error
        assert reasons[0] is not None and reasons[0] == reasons[3], (decode, reasons)
        assert reasons[1] == reasons[2] != reasons[0], (decode, reasons)


def test_md_only_is_read_as_truth_values(impl):
    """``md_only`` of the IBM MQ decoder is read as truth values too (0.5 is true),
    and checked as ``valid`` is."""
    from mqcodec.batch import mq_pure
    decode = mq_pure._IMPLS.pick(impl).decode_mq_buffers
    buf = bytes(64)
    offs = np.array([0, 32, 64])
    half = decode(buf, offs, md_only=np.array([0.5, 0.0]))
    whole = decode(buf, offs, md_only=np.array([True, False]))
    assert half.equals(whole)
    with pytest.raises(ValueError, match="md_only must hold one value per record"):
        decode(buf, offs, md_only=np.ones((2, 1)))


def test_float_offsets_that_fit_one_piece_are_checked_as_before(impl):
    """Offsets that are not integers take the checked path (the one-piece shortcut
    takes integer offsets only): an infinite offset gets the check's error, not an
    OverflowError from sizing the piece."""
    with np.errstate(invalid="ignore"), pytest.raises(ValueError, match="offsets"):
        batch.decode_msmq_batch((b"abc", np.array([0.0, np.inf])), impl=impl)
