"""MSMQ packet batch decoding side by side.

Rows (group "msmq@<call size>", e.g. "msmq@100k"; records = packets):
  memory copy          - copying the same input bytes once
  batch compiled       - mqcodec.batch.decode_msmq_batch(impl="c"), all 126 columns
  batch compiled 12 cols - the same with columns=DOZEN (below): every packet is still
                         checked in full; only the selected columns are built
Rows measured once (group "msmq", compared with every "msmq@..." group):
  batch pure           - the same API, pure Python (impl="py")
  construct compiled   - a plain construct BaseHeader declaration (16 bytes), .compile()d
  construct            - the same declaration, interpreted

Data: the packets of simulated MSMQ sessions (mqcodec.msmq.builders.simulate_session:
EstablishConnection, ConnectionParameters, UserMessages with and without
SessionHeader, SessionAcks), tiled to the largest of MQCODEC_BENCH_SIZES (default "1000,10000,100000,1000000")
packets per call (smaller calls decode the first packets); the pure and construct rows
use MQCODEC_BENCH_SMALL (default 2000).

Run:  .venv/bin/python -m pytest benchmarks/bench_msmq.py --benchmark-only
"""
import os

import construct as cs
import pytest

import datasets
from conftest import batch_row, call_sizes, memory_copy_row, record, size_label

SIZES = [int(x) for x in os.environ.get("MQCODEC_BENCH_SIZES", "1000,10000,100000,1000000").split(",")]
SMALL = int(os.environ.get("MQCODEC_BENCH_SMALL", "2000"))

BASE_HEADER = cs.Struct("VersionNumber" / cs.Int8ul, "Reserved" / cs.Int8ul, "Flags" / cs.Int16ul,
                        "Signature" / cs.Const(b"LIOR"), "PacketSize" / cs.Int32ul,
                        "TimeToReachQueue" / cs.Int32ul)


def _packets():
    from mqcodec.msmq.builders import simulate_session

    out = []
    for seed in range(16):
        s = simulate_session(seed, messages=8)
        out += [p for _, p in s.initiator_packets] + [p for _, p in s.acceptor_packets]
    return out


def _tiled(n):
    return datasets.tile(_packets(), n)


@pytest.fixture(scope="module")
def big():
    return _tiled(max(SIZES))


@pytest.fixture(scope="module")
def small():
    buf, offs = _tiled(SMALL)
    return buf, offs, [bytes(buf[offs[i]:offs[i + 1]]) for i in range(SMALL)]


def _rounds(n):
    return max(3, min(200, 1_000_000 // n))


@pytest.mark.parametrize("n", SIZES, ids=size_label)
def test_memory_copy(benchmark, big, n):
    buf, _ = call_sizes(big, n)
    memory_copy_row(benchmark, "msmq@" + size_label(n), buf, n)


@pytest.mark.parametrize("n", SIZES, ids=size_label)
def test_batch_compiled(benchmark, big, n):
    from mqcodec import batch

    buf, offs = call_sizes(big, n)
    t = batch_row(benchmark, "msmq@" + size_label(n), batch.decode_msmq_batch, buf, offs, n, "c",
                  rounds=_rounds(n))
    assert t.column("error_structure").null_count == n


#: the documented dozen-column selection (docs/batch-msmq.md, "Column selection")
DOZEN = ["record", "kind", "base_flags", "base_packet_size", "user_sent_time", "user_message_id",
         "user_destination_queue", "props_label", "props_message_class", "props_body_offset",
         "props_message_size", "error_reason"]


@pytest.mark.parametrize("n", SIZES, ids=size_label)
def test_batch_compiled_dozen_columns(benchmark, big, n):
    from mqcodec import batch

    buf, offs = call_sizes(big, n)
    t = benchmark.pedantic(batch.decode_msmq_batch, args=((buf, offs),), kwargs={"impl": "c", "columns": DOZEN},
                           rounds=_rounds(n))
    record(benchmark, "msmq@%s:batch compiled 12 cols" % size_label(n), n, buf.nbytes)
    assert t.schema.names == DOZEN and t.column("error_reason").null_count == n


def test_batch_pure(benchmark, small):
    from mqcodec import batch

    buf, offs, _ = small
    batch_row(benchmark, "msmq", batch.decode_msmq_batch, buf, offs, SMALL, "py", rounds=2)


@pytest.mark.parametrize("compiled", [False, True], ids=["construct", "construct compiled"])
def test_construct(benchmark, small, compiled):
    buf, offs, recs = small
    parser = BASE_HEADER.compile() if compiled else BASE_HEADER

    def run():
        for r in recs:
            parser.parse(r)

    benchmark.pedantic(run, rounds=2)
    record(benchmark, "msmq:" + ("construct compiled" if compiled else "construct"), SMALL, buf.nbytes)
