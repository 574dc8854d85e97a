"""PCF decoding throughput, side by side in one run, at several call sizes.

Rows (group "pcf@<call size>", e.g. "pcf@100k"; ratios within a group):
  memory copy          - copying the same input bytes once (the physical limit)
  batch compiled       - mqcodec.batch.decode_pcf_batch(impl="c") to Arrow, one call
                         over all the group's records
Rows measured once (group "pcf"; their per-record rate does not depend on a call size,
and the summary compares every "pcf@..." group with them):
  batch pure           - the same API, pure Python (impl="py")
  construct compiled   - a plain construct declaration, .compile()d
  construct            - the same declaration, interpreted
  tshark fields        - `tshark -r F -T fields -e mq.md.msgid -e mqpcf.parm.id ...` on a
                         pcap of the same trace-route messages sent as MQPUTs (one TCP
                         conversation to port 1414); whole process, per message

Run:  .venv/bin/python -m pytest benchmarks/bench_pcf.py --benchmark-only
Sizes: MQCODEC_BENCH_SIZES (default "1000,10000,100000,1000000") records per call
for the compiled path and memory copy (one data set of the largest size; smaller
calls decode its first records); the pure and construct rows decode
MQCODEC_BENCH_SMALL (default 2000) records of the same data set; the tshark row
MQCODEC_BENCH_TSHARK (default 50000; 0 skips it) messages (tshark takes 10-30 s on
them).  Every row's MB/s counts the PCF bytes of its messages (for tshark: not the
MQMD, TSH and TCP/IP framing around them).
"""
import os
import shutil
import subprocess

import pytest

import construct_baseline
import datasets
from conftest import batch_row, call_sizes, memory_copy_row, record, size_label

SIZES = [int(x) for x in os.environ.get("MQCODEC_BENCH_SIZES", "1000,10000,100000,1000000").split(",")]
SMALL = int(os.environ.get("MQCODEC_BENCH_SMALL", "2000"))
TSHARK_N = int(os.environ.get("MQCODEC_BENCH_TSHARK", "50000"))
#: fields that make tshark dissect every PCF parameter of every message
TSHARK_FIELDS = ["mq.md.msgid", "mqpcf.cfh.ParmCount", "mqpcf.parm.id", "mqpcf.parm.int",
                 "mqpcf.parm.string", "mqpcf.parm.bytestring"]


@pytest.fixture(scope="module")
def big():
    return datasets.tiled(max(SIZES))


@pytest.fixture(scope="module")
def small():
    buf, offs = datasets.tiled(SMALL)
    return buf, offs, [bytes(buf[offs[i]:offs[i + 1]]) for i in range(SMALL)]


@pytest.mark.parametrize("n", SIZES, ids=size_label)
def test_memory_copy(benchmark, big, n):
    buf, offs = call_sizes(big, n)
    memory_copy_row(benchmark, "pcf@" + size_label(n), buf, n)


@pytest.mark.parametrize("n", SIZES, ids=size_label)
def test_batch_compiled(benchmark, big, n):
    from mqcodec import batch

    buf, offs = call_sizes(big, n)
    try:
        batch.decode_pcf_batch((buf, offs[:2]), impl="c")
    except ImportError:
        pytest.skip("compiled core not built")
    res = batch_row(benchmark, "pcf@" + size_label(n), batch.decode_pcf_batch, buf, offs, n, "c",
                    rounds=max(3, min(200, 200_000 // n)))
    assert res.headers.column("error_structure").null_count == n


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


def _pcf_capture(path, n):
    """A pcap of n MQPUTs (one TCP conversation client -> port 1414), each an
    MQMD (Format MQADMIN, the PCF body's byte order) and one of the data set's
    trace-route PCF messages, in the data set's order; returns the PCF bytes."""
    from mqcodec.capture.writer import TcpConversation, write_pcap
    from mqcodec.ibmmq import constants as C
    from mqcodec.ibmmq.builders import encode_put
    from mqcodec.ibmmq.headers import MQMD
    from mqcodec.ibmmq.message import MQMessage

    bodies = datasets.distinct_messages(min(datasets.DISTINCT, n))
    segments = []
    for i, body in enumerate(bodies):
        enc = 273 if i % 2 else 546          # datasets: odd records big-endian
        md = MQMD(Version=1, MsgType=C.MQMT_DATAGRAM, Encoding=enc, CodedCharSetId=1208, Format="MQADMIN",
                  MsgId=i.to_bytes(24, "big"), PutApplName="dspmqrte")
        segments.append(encode_put(MQMessage(md, [], body, md_encoding=enc, md_ccsid=819),
                                   conversation_id=1, request_id=i + 1))
    conv = TcpConversation(("10.0.0.1", 40000), ("10.0.0.2", 1414))
    frames = conv.handshake()
    nbytes = 0
    for i in range(n):
        frames += conv.send(0, segments[i % len(segments)], ack_each=False)
        nbytes += len(bodies[i % len(bodies)])
    with open(path, "wb") as f:
        write_pcap(f, frames)
    return nbytes


def test_tshark(benchmark, tmp_path):
    exe = shutil.which("tshark")
    if exe is None:
        pytest.skip("tshark not installed")
    if TSHARK_N <= 0:
        pytest.skip("MQCODEC_BENCH_TSHARK=0")
    path = str(tmp_path / "pcf.pcap")
    nbytes = _pcf_capture(path, TSHARK_N)
    cmd = [exe, "-r", path, "-T", "fields"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]

    def run():
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout

    out = benchmark.pedantic(run, rounds=1)
    # tshark saw every message and dissected its PCF parameters
    rows = [line.split("\t") for line in out.decode().splitlines()]
    rows = [r for r in rows if r[0]]
    assert len(rows) == TSHARK_N
    assert all(r[2] for r in rows)
    record(benchmark, "pcf:tshark fields", TSHARK_N, nbytes)
