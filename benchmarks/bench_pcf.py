"""PCF decoding throughput, side by side in one run.

Rows (group "pcf"):
  memory copy          - copying the same input bytes once (the physical limit)
  batch compiled       - mqcodec.batch.decode_pcf_batch(impl="c") to Arrow
  batch pure           - the same API, pure Python (impl="py")
  construct compiled   - a plain construct declaration, .compile()d
  construct            - the same declaration, interpreted
  tshark               - see bench_tshark.py (whole process, per message)

Run:  .venv/bin/python -m pytest benchmarks/bench_pcf.py --benchmark-only
Sizes: MQCODEC_BENCH_N (default 200000) records for the compiled path and
memory copy; the pure and construct rows decode MQCODEC_BENCH_SMALL (default
2000) records of the same data set (their per-record rate is what is
compared).
"""
import os

import pytest

import construct_baseline
import datasets
from conftest import batch_row, memory_copy_row, record

N = int(os.environ.get("MQCODEC_BENCH_N", "200000"))
SMALL = int(os.environ.get("MQCODEC_BENCH_SMALL", "2000"))


@pytest.fixture(scope="module")
def big():
    return datasets.tiled(N)


@pytest.fixture(scope="module")
def small():
    buf, offs = datasets.tiled(SMALL)
    return buf, offs, [bytes(buf[offs[i]:offs[i + 1]]) for i in range(SMALL)]


def test_memory_copy(benchmark, big):
    buf, _ = big
    memory_copy_row(benchmark, "pcf", buf, N)


def test_batch_compiled(benchmark, big):
    from mqcodec import batch

    buf, offs = big
    try:
        batch.decode_pcf_batch((buf, offs), impl="c")
    except ImportError:
        pytest.skip("compiled core not built")
    res = batch_row(benchmark, "pcf", batch.decode_pcf_batch, buf, offs, N, "c", rounds=3)
    assert res.headers.column("error_structure").null_count == N


def test_batch_pure(benchmark, small):
    from mqcodec import batch

    buf, offs, _ = small
    batch_row(benchmark, "pcf", batch.decode_pcf_batch, buf, offs, SMALL, "py", rounds=2)


def _parse_all(parser, records_le, records_be):
    for r in records_le:
        parser[0].parse(r)
    for r in records_be:
        parser[1].parse(r)


@pytest.mark.parametrize("compiled", [False, True], ids=["construct", "construct compiled"])
def test_construct(benchmark, small, compiled):
    buf, offs, recs = small
    make = construct_baseline.compiled if compiled else construct_baseline.declarations
    parsers = (make(True), make(False))
    # datasets alternate byte order by record parity: odd = big-endian
    le = [r for i, r in enumerate(recs) if i % 2 == 0]
    be = [r for i, r in enumerate(recs) if i % 2 == 1]
    benchmark.pedantic(_parse_all, args=(parsers, le, be), rounds=2)
    record(benchmark, "pcf:" + ("construct compiled" if compiled else "construct"), SMALL, buf.nbytes)
