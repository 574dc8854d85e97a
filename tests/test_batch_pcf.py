"""mqcodec.batch.decode_pcf_batch: values from outside this repository, the
input kinds it accepts and the dispatch between implementations.  Every
test that decodes runs on both implementations (``impl``: "c", "py").

Outside facts used:
* the vectors are little-endian PCF bodies (shared/vectors/README.md);
* ibm-messaging/mq-mqi-python code/tests/test_pcf.py asserts, for the same
  files: statistics_q.dat is MQCFT_STATISTICS (21) / MQCMD_STATISTICS_Q
  (165), MQCA_Q_MGR_NAME "mq_mgr1", MQCAMO_START_DATE "2020-06-15", 16
  MQGACF_Q_STATISTICS_DATA groups, the first for queue
  "SYSTEM.ADMIN.COMMAND.QUEUE" with MQIAMO_PUTS [14, 0]; pcf_with_cfif.dat
  holds in MQGACF_COMMAND_DATA an MQCFIF on MQIA_CURRENT_Q_DEPTH with
  MQCFOP_GREATER and 0;
* constant values from IBM's cmqc.h / cmqcfc.h: MQCA_Q_MGR_NAME 2015,
  MQCA_Q_NAME 2016, MQCAMO_START_DATE 2711, MQIAMO_PUTS 735,
  MQGACF_Q_STATISTICS_DATA 8011, MQGACF_COMMAND_DATA 8002,
  MQIA_CURRENT_Q_DEPTH 3, MQCFOP_GREATER 4, MQCFT_INTEGER_FILTER 13,
  MQENC_NATIVE (x86) 546;
* EBCDIC: 0xC8 0xC5 0xD3 0xD3 0xD6 is "HELLO" and 0x40 the blank in CCSID
  37/500; IBM's MQCFH/MQCFIN64/MQCFST/MQCFSL/MQEPH layouts.
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import mqcodec.batch as batch_api
from mqcodec.batch import PCF_HEADERS, PCF_PARAMETERS, decode_pcf_batch

MQCA_Q_MGR_NAME, MQCA_Q_NAME, MQCAMO_START_DATE, MQIAMO_PUTS = 2015, 2016, 2711, 735
MQGACF_Q_STATISTICS_DATA, MQGACF_COMMAND_DATA = 8011, 8002
MQIA_CURRENT_Q_DEPTH, MQCFOP_GREATER = 3, 4


def _rows(batch, record=0):
    return [r for r in batch.parameters.to_pylist() if r["record"] == record]


def test_statistics_q_values(impl, vectors):
    data = (vectors / "ibmmq" / "statistics_q.dat").read_bytes()
    b = decode_pcf_batch([data], impl=impl)
    assert b.headers.schema == PCF_HEADERS and b.parameters.schema == PCF_PARAMETERS
    h = b.headers.to_pylist()[0]
    assert (h["Type"], h["Command"], h["encoding"], h["has_eph"]) == (21, 165, 546, False)
    assert h["parameters_end"] == len(data) and h["error_structure"] is None
    rows = _rows(b)
    top = [r for r in rows if r["depth"] == 0]
    assert len(top) == h["ParameterCount"]
    by_id = {r["Parameter"]: r for r in top}
    assert by_id[MQCA_Q_MGR_NAME]["string_value"] == "mq_mgr1"
    assert by_id[MQCAMO_START_DATE]["string_value"] == "2020-06-15"
    groups = [r for r in top if r["Parameter"] == MQGACF_Q_STATISTICS_DATA]
    assert len(groups) == 16 and all(g["Type"] == 20 for g in groups)
    first = [r for r in rows if r["parent"] == groups[0]["param_index"]]
    assert len(first) == groups[0]["count"]
    kids = {r["Parameter"]: r for r in first}
    assert kids[MQCA_Q_NAME]["string_value"] == "SYSTEM.ADMIN.COMMAND.QUEUE"
    assert kids[MQIAMO_PUTS]["int_list"] == [14, 0] and kids[MQIAMO_PUTS]["count"] == 2


def test_cfif_vector_values(impl, vectors):
    data = (vectors / "ibmmq" / "pcf_with_cfif.dat").read_bytes()
    b = decode_pcf_batch(pa.array([data]), impl=impl)
    h = b.headers.to_pylist()[0]
    assert (h["Type"], h["Command"], h["encoding"]) == (7, 99, 546)
    rows = _rows(b)
    cmd = [r for r in rows if r["Parameter"] == MQGACF_COMMAND_DATA and r["Type"] == 20]
    assert len(cmd) == 1
    filt = [r for r in rows if r["parent"] == cmd[0]["param_index"] and r["Parameter"] == MQIA_CURRENT_Q_DEPTH]
    assert len(filt) == 1
    f = filt[0]
    assert (f["Type"], f["operator"], f["int_value"], f["depth"]) == (13, MQCFOP_GREATER, 0, 1)
    assert f["string_value"] is None and f["bytes_value"] is None


def _cfh(order, count, type_=1, command=1):
    return struct.pack(order + "9i", type_, 36, 3, command, 1, 1, 0, 0, count)


def test_hand_built_big_endian_values(impl):
    """Layouts from IBM's tables, packed by hand: MQCFIN64 is signed, MQCFST
    in CCSID 500 decodes EBCDIC with its blanks trimmed, MQCFSL with CCSID 0
    inherits the caller's CCSID (37), MQCFBS keeps its bytes."""
    ebc = b"\xc8\xc5\xd3\xd3\xd6\x40\x40\x40"           # "HELLO   " in EBCDIC
    body = (struct.pack(">4iq", 23, 24, 10, 0, -2)
            + struct.pack(">5i", 4, 20 + 8, 11, 500, 8) + ebc
            + struct.pack(">6i", 6, 24 + 16, 12, 0, 2, 8) + ebc + b"\xc1" + b"\x40" * 7
            + struct.pack(">4i", 9, 16 + 4, 13, 3) + b"\x00\xff\x40\x00")
    data = _cfh(">", 4) + body
    b = decode_pcf_batch([data], ccsid=37, impl=impl)
    h = b.headers.to_pylist()[0]
    assert h["error_structure"] is None, h
    assert h["encoding"] == 273
    r = _rows(b)
    assert [x["Type"] for x in r] == [23, 4, 6, 9]
    assert r[0]["int_value"] == -2
    assert (r[1]["ccsid"], r[1]["string_value"]) == (500, "HELLO")
    assert (r[2]["ccsid"], r[2]["count"], r[2]["string_list"]) == (0, 2, ["HELLO", "A"])
    assert r[3]["bytes_value"] == b"\x00\xff\x40"   # StringLength 3; the 4th byte is padding


def test_ebcdic_eph_inherits_ccsid_500(impl):
    """An MQEPH whose StrucId is EBCDIC 'EPH ' makes CCSID-0 strings decode
    as EBCDIC (500) unless the caller names a CCSID."""
    ebc = b"\xc8\xc5\xd3\xd3\xd6"
    param = struct.pack("<5i", 4, 28, 2015, 0, 5) + ebc + b"\x40\x40\x40"
    pcf = _cfh("<", 1) + param
    eph = b"\xc5\xd7\xc8\x40" + struct.pack("<4i", 1, 32 + len(pcf), 546, 1208) + b"MQSTR   " + struct.pack("<i", 0)
    b = decode_pcf_batch([eph + pcf], impl=impl)
    h = b.headers.to_pylist()[0]
    assert (h["has_eph"], h["encoding"], h["error_structure"]) == (True, 546, None)
    assert _rows(b)[0]["string_value"] == "HELLO"
    b = decode_pcf_batch([eph + pcf], ccsid=819, impl=impl)
    assert _rows(b)[0]["string_value"] == ebc.decode("latin-1")


def test_error_rows_keep_raw_bytes_and_drop_parameters(impl):
    good = _cfh("<", 1) + struct.pack("<4i", 3, 16, 1, 7)
    bad = _cfh("<", 2) + struct.pack("<4i", 3, 16, 1, 7) + struct.pack("<4i", 3, 99, 2, 8)
    b = decode_pcf_batch([good, bad, None], impl=impl)
    h = b.headers.to_pylist()
    assert h[0]["error_structure"] is None and h[0]["raw"] is None
    # the second MQCFIN's StrucLength (99) runs past the end: offset 36 + 16 + 4
    assert (h[1]["error_structure"], h[1]["error_field"], h[1]["error_offset"]) == ("MQCFIN", "StrucLength", 56)
    assert h[1]["raw"] == bad
    assert all(h[1][c] is None for c in ("Type", "Command", "encoding", "parameters_end"))
    assert (h[2]["error_structure"], h[2]["error_reason"], h[2]["raw"]) == ("record", "null record", None)
    assert b.parameters.column("record").to_pylist() == [0]


def test_headers_alone_are_the_same_headers(impl, vectors):
    """parameters=False: the same headers (errors of bad parameters included:
    every record is still walked whole), an empty parameters table of the
    same schema."""
    good = _cfh("<", 1) + struct.pack("<4i", 3, 16, 1, 7)
    bad = _cfh("<", 2) + struct.pack("<4i", 3, 16, 1, 7) + struct.pack("<4i", 3, 99, 2, 8)
    recs = [good, bad, None, b"\x00" * 3, (vectors / "ibmmq" / "statistics_q.dat").read_bytes(),
            (vectors / "ibmmq" / "pcf_with_cfif.dat").read_bytes()]
    whole = decode_pcf_batch(recs, impl=impl)
    alone = decode_pcf_batch(recs, impl=impl, parameters=False)
    assert alone.headers.equals(whole.headers)
    assert alone.parameters.num_rows == 0 and alone.parameters.schema.equals(whole.parameters.schema)
    assert whole.parameters.num_rows > 375   # (the whole decode has them: statistics_q alone holds 375)
    assert alone.headers.column("error_field").to_pylist()[1] == "StrucLength"


def test_input_kinds_give_the_same_tables(impl):
    recs = [_cfh("<", 1) + struct.pack("<4i", 3, 16, i, -i) + b"tail" for i in range(5)]
    recs[2] = b"\x00" * 3
    base = decode_pcf_batch(recs, impl=impl)
    assert base.headers.column("parameters_end").to_pylist() == [52, 52, None, 52, 52]
    assert base.parameters.column("int_value").to_pylist() == [0, -1, -3, -4]
    buf = b"".join(recs)
    offsets = np.cumsum([0] + [len(r) for r in recs])
    kinds = [
        pa.array(recs, pa.binary()),
        pa.array(recs, pa.large_binary()),
        pa.chunked_array([pa.array(recs[:2], pa.binary()), pa.array(recs[2:], pa.binary())]),
        (buf, offsets),
        (np.frombuffer(buf, np.uint8), offsets.astype(np.int32)),
        [bytearray(r) for r in recs],
        [memoryview(r) for r in recs],
        iter(recs),
        tuple(recs),
    ]
    for k in kinds:
        got = decode_pcf_batch(k, impl=impl)
        assert got.headers.equals(base.headers), type(k)
        assert got.parameters.equals(base.parameters), type(k)


def test_a_pair_of_records_is_not_buffer_and_offsets(impl):
    recs = (_cfh("<", 0), None)
    b = decode_pcf_batch(recs, impl=impl)
    assert b.headers.column("error_structure").to_pylist() == [None, "record"]
    with pytest.raises(TypeError):
        decode_pcf_batch(_cfh("<", 0), impl=impl)          # one record, not a collection


def test_sliced_array_honours_its_offset(impl):
    recs = [_cfh(">", 1) + struct.pack(">4i", 3, 16, i, i * 10) for i in range(6)]
    arr = pa.array(recs, pa.binary()).slice(2, 3)
    b = decode_pcf_batch(arr, impl=impl)
    assert b.headers.column("record").to_pylist() == [0, 1, 2]
    assert b.parameters.column("Parameter").to_pylist() == [2, 3, 4]
    assert b.parameters.column("int_value").to_pylist() == [20, 30, 40]


def test_chunked_array_numbers_records_globally(impl):
    recs = [_cfh("<", 1) + struct.pack("<4i", 3, 16, i, i) for i in range(4)]
    ch = pa.chunked_array([pa.array(recs[:1]), pa.array([], pa.binary()), pa.array(recs[1:])])
    b = decode_pcf_batch(ch, impl=impl)
    assert b.headers.column("record").to_pylist() == [0, 1, 2, 3]
    assert b.parameters.column("record").to_pylist() == [0, 1, 2, 3]
    assert b.parameters.column("Parameter").to_pylist() == [0, 1, 2, 3]


def test_empty_inputs(impl):
    for empty in ([], pa.array([], pa.binary()), pa.array([], pa.large_binary()),
                  pa.chunked_array([], pa.binary()), (b"", [0])):
        b = decode_pcf_batch(empty, impl=impl)
        assert b.headers.num_rows == 0 and b.parameters.num_rows == 0
        assert b.headers.schema == PCF_HEADERS and b.parameters.schema == PCF_PARAMETERS


def test_bad_arguments(impl):
    with pytest.raises(TypeError):
        decode_pcf_batch(pa.array([1, 2]), impl=impl)
    with pytest.raises(ValueError):
        decode_pcf_batch((b"abc", [0, 5]), impl=impl)        # offsets past the buffer
    with pytest.raises(ValueError):
        decode_pcf_batch((b"abc", [2, 1]), impl=impl)        # decreasing offsets
    with pytest.raises(ValueError):
        decode_pcf_batch([b""], encoding=2 ** 32, impl=impl)  # not an MQLONG
    with pytest.raises(TypeError):
        decode_pcf_batch([b""], ccsid="utf-8", impl=impl)


def test_impl_selection():
    assert batch_api.IMPLEMENTATION in ("c", "py")
    with pytest.raises(ValueError):
        decode_pcf_batch([], impl="rust")
    assert decode_pcf_batch([], impl="py").headers.num_rows == 0


def test_mqcodec_pure_environment_selects_python():
    code = "import mqcodec.batch as b; print(b.IMPLEMENTATION)"
    env = dict(os.environ, MQCODEC_PURE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "py"


def test_a_full_keep_makes_room_for_a_larger_block():
    """The keep holds at most 64 blocks and 8 MiB; when it is full, a block
    given back replaces smaller kept ones (they are freed), never a larger one."""
    import gc

    pcf = pytest.importorskip("mqcodec._ext.pcf_batch")
    gc.collect()
    pcf._kept_blocks(release=True)
    try:
        assert pcf._give_blocks([64] * 64) == (64, 64 * 64)
        assert pcf._give_blocks([32]) == (64, 64 * 64)                  # smaller than any: freed
        assert pcf._give_blocks([1 << 20]) == (64, 63 * 64 + (1 << 20))  # the smallest made room
        assert pcf._give_blocks([4 << 20]) == (64, 62 * 64 + (5 << 20))
        # 8 MiB in all: the next 4 MiB block takes the place of what it needs
        assert pcf._give_blocks([4 << 20]) == (2, 8 << 20)
        assert pcf._give_blocks([(4 << 20) + 1]) == (2, 8 << 20)        # above the largest kept size: freed
    finally:
        pcf._kept_blocks(release=True)


def test_compiled_calls_reuse_their_output_memory_and_stay_exact_across_threads(vectors):
    """The compiled decoder keeps the column buffers Arrow lets go of for the
    next calls (bounded: 8 MiB) instead of handing them to the C heap, which
    faults them in again on every call.  The blocks move between calls and
    threads (a lock; Arrow may drop a table on any thread) and never change a
    value: many threads decoding at once give the pure decoder's tables."""
    import gc
    import threading

    pcf = pytest.importorskip("mqcodec._ext.pcf_batch")
    data = (vectors / "ibmmq" / "statistics_q.dat").read_bytes()
    records = [data, data[:-7], data] * 40          # a failing record among them: rolled back
    want = decode_pcf_batch(records, impl="py")
    gc.collect()
    assert pcf._kept_blocks(release=True) == (0, 0)   # (what earlier tests' calls left)
    first = decode_pcf_batch(records, impl="c")
    assert first.headers.equals(want.headers) and first.parameters.equals(want.parameters)
    del first
    gc.collect()
    kept, nbytes = pcf._kept_blocks()
    assert kept > 10 and 0 < nbytes <= 8 << 20         # the columns of that call, kept
    again = decode_pcf_batch(records, impl="c")        # served from them ...
    assert pcf._kept_blocks()[0] < kept
    assert again.parameters.equals(want.parameters)   # ... with every value rewritten
    del again
    failures: list = []

    def work():
        try:
            for _ in range(15):
                got = decode_pcf_batch(records, impl="c")
                if not (got.headers.equals(want.headers) and got.parameters.equals(want.parameters)):
                    failures.append("a table differs")
                del got
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert pcf._kept_blocks()[1] <= 8 << 20
