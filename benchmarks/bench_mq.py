"""IBM MQ message batch decoding (MQMD + header chain) side by side.

Rows (group "mq"):
  memory copy          - copying the same input bytes once
  batch compiled       - mqcodec.batch.decode_mq_batch(impl="c")
  batch pure           - the same API, pure Python (impl="py")
  construct compiled   - a plain construct MQMD v1 declaration, .compile()d, parsing each record's MQMD
  construct            - the same declaration, interpreted

Run:  .venv/bin/python -m pytest benchmarks/bench_mq.py --benchmark-only
Data: the simulator's application messages (MQSTR and MQRFH2 chains, both
byte orders, several CCSIDs), tiled to MQCODEC_BENCH_N records (default 200000);
the pure and construct rows use MQCODEC_BENCH_SMALL (default 2000).
"""
import os
import random

import construct as cs
import pytest

import datasets
from conftest import batch_row, memory_copy_row, record

N = int(os.environ.get("MQCODEC_BENCH_N", "200000"))
SMALL = int(os.environ.get("MQCODEC_BENCH_SMALL", "2000"))


def _messages(k=256):
    from mqcodec.synth import _app_message

    rnd = random.Random(1)
    return [_app_message(rnd, i, 1_763_712_000 * 10 ** 9, little=i % 2 == 0).encode() for i in range(k)]


def _tiled(n):
    return datasets.tile(_messages(), n)


def _mqmd1(little):
    L = cs.Int32sl if little else cs.Int32sb
    return cs.Struct(
        "StrucId" / cs.Bytes(4), "Version" / L, "Report" / L, "MsgType" / L, "Expiry" / L, "Feedback" / L,
        "Encoding" / L, "CodedCharSetId" / L, "Format" / cs.Bytes(8), "Priority" / L, "Persistence" / L,
        "MsgId" / cs.Bytes(24), "CorrelId" / cs.Bytes(24), "BackoutCount" / L, "ReplyToQ" / cs.Bytes(48),
        "ReplyToQMgr" / cs.Bytes(48), "UserIdentifier" / cs.Bytes(12), "AccountingToken" / cs.Bytes(32),
        "ApplIdentityData" / cs.Bytes(32), "PutApplType" / L, "PutApplName" / cs.Bytes(28),
        "PutDate" / cs.Bytes(8), "PutTime" / cs.Bytes(8), "ApplOriginData" / cs.Bytes(4))


@pytest.fixture(scope="module")
def big():
    return _tiled(N)


@pytest.fixture(scope="module")
def small():
    buf, offs = _tiled(SMALL)
    return buf, offs, [bytes(buf[offs[i]:offs[i + 1]]) for i in range(SMALL)]


def test_memory_copy(benchmark, big):
    buf, _ = big
    memory_copy_row(benchmark, "mq", buf, N)


def test_batch_compiled(benchmark, big):
    from mqcodec import batch

    buf, offs = big
    t = batch_row(benchmark, "mq", batch.decode_mq_batch, buf, offs, N, "c", rounds=3)
    assert t.column("error_structure").null_count == N


def test_batch_pure(benchmark, small):
    from mqcodec import batch

    buf, offs, _ = small
    batch_row(benchmark, "mq", batch.decode_mq_batch, buf, offs, SMALL, "py", rounds=2)


@pytest.mark.parametrize("compiled", [False, True], ids=["construct", "construct compiled"])
def test_construct(benchmark, small, compiled):
    buf, offs, recs = small
    le, be = _mqmd1(True), _mqmd1(False)
    if compiled:
        le, be = le.compile(), be.compile()
    pairs = [(le if i % 2 == 0 else be, r) for i, r in enumerate(recs)]

    def run():
        for parser, r in pairs:
            parser.parse(r)

    benchmark.pedantic(run, rounds=2)
    record(benchmark, "mq:" + ("construct compiled" if compiled else "construct"), SMALL, buf.nbytes)
