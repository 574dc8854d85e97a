"""IBM MQ call units to ``mq_calls`` columns side by side.

Rows (group "calls", the shared real capture's units: a JMS client's
INITIAL_DATA, USERID_DATA, CONAUTH_INFO, MQCONN, SPI, MQOPEN, MQINQ, MQPUT,
MQCLOSE, SOCKET_ACTION, STATUS_DATA, MQDISC ... and their replies; group
"calls-sim", the simulator's units, mostly MQPUT/MQGET and replies):
  memory copy          - copying the same unit bytes once
  batch                - mqcodec.ibmmq.calls_batch.decode_units (pure: numpy over arrays)
  compiled             - mqcodec._ext.calls_batch.decode_units, its compiled twin (one C pass),
                         what the compiled engine runs
  construct            - mqcodec.ibmmq.calls.decode_unit one unit at a time (the declarations,
                         interpreted: the reference, and what calls_batch sent every unit of a
                         type other than MQPUT/MQGET/MESSAGE_DATA to before 2026-11-26)

Run:  .venv/bin/python -m pytest benchmarks/bench_calls.py --benchmark-only
Data: the units tiled to MQCODEC_BENCH_N units (default 200000); the
construct rows use MQCODEC_BENCH_SMALL (default 2000).
"""
import os

import numpy as np
import pytest

import datasets
from conftest import memory_copy_row, record

N = int(os.environ.get("MQCODEC_BENCH_N", "200000"))
SMALL = int(os.environ.get("MQCODEC_BENCH_SMALL", "2000"))
REAL = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "captures", "ibmmq_jms_client_1414.pcap")


def _units(path):
    """Every IBM MQ unit the pure engine decodes in ``path`` (bytes, full length)."""
    from mqcodec.convert import ConvertOptions, Converter
    from mqcodec.convert.sinks import TableCollector

    class Recorder(Converter):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.units = []

        def _unit(self, *args):   # (..., data, length): the unit's bytes and its full length last
            self.units.append((bytes(args[-2]), args[-1]))
            return super()._unit(*args)

    conv = Recorder(TableCollector(), ConvertOptions(capture_impl="py"))
    conv.add_capture(path, name="bench")
    return [u for u, full in conv.units if len(u) == full]


@pytest.fixture(scope="module", params=["calls", "calls-sim"])
def data(request, tmp_path_factory):
    if request.param == "calls":
        units = _units(REAL)
    else:
        from mqcodec import synth

        path = tmp_path_factory.mktemp("sim") / "sim.pcap"
        synth.write_capture(str(path), seed=1, messages=2000)
        units = _units(str(path))
    buf, offs = datasets.tile(units, N)
    small = [bytes(buf[offs[i]:offs[i + 1]]) for i in range(SMALL)]
    return request.param, buf, offs, small


def test_memory_copy(benchmark, data):
    group, buf, _, _ = data
    memory_copy_row(benchmark, group, buf, N)


@pytest.mark.parametrize("row", ["batch", "compiled"])
def test_reader(benchmark, data, row):
    from mqcodec._ext import calls_batch as compiled
    from mqcodec.ibmmq import calls_batch as pure

    group, buf, offs, _ = data
    starts, lens = offs[:-1], np.diff(offs)
    decode_units = (pure if row == "batch" else compiled).decode_units
    t = benchmark.pedantic(decode_units, args=(buf, starts, lens), rounds=3)
    assert t.num_rows == N and t.column("error").null_count == N
    record(benchmark, group + ":" + row, N, buf.nbytes)


def test_construct(benchmark, data):
    from mqcodec.ibmmq.calls import decode_unit

    group, buf, offs, small = data

    def run():
        for u in small:
            decode_unit(u)

    benchmark.pedantic(run, rounds=2)
    record(benchmark, group + ":construct", SMALL, int(offs[SMALL]))
