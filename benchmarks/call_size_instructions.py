"""Instructions per record of a batch decoder (``--decoder``: pcf, the default;
mq; msmq) at one call size, counted by
valgrind (callgrind): the process run once with one pass over the records and
once with three, the difference over two passes' records.  A count, not a
time: it does not move with the load of a shared machine (CPU time there
moved 30-60 % between runs of the same code), but it does not see page faults
either (valgrind replaces the C heap), which ``call_size_cpu.py`` counts.

    .venv/bin/python benchmarks/call_size_instructions.py 1000            # calls of 1,000 records
    .venv/bin/python benchmarks/call_size_instructions.py 1000 --decoder msmq   # (bench_msmq's packets)
    .venv/bin/python benchmarks/call_size_instructions.py 1000 --decoder msmq --dozen   # (its dozen columns)
    PYTHONPATH=/tmp/base .venv/bin/python benchmarks/call_size_instructions.py 1000   # a baseline tree

(``--passes P``: the child, run by valgrind: P passes over ``--records``.)"""
import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))


def _passes(decoder: str, records: int, call: int, passes: int, dozen: bool = False) -> None:
    from mqcodec import batch

    if decoder == "pcf":
        import datasets

        buf, offs = datasets.tiled(records)
    else:   # the benchmarks' own records (bench_mq.py, bench_msmq.py)
        import importlib

        buf, offs = importlib.import_module("bench_" + decoder)._tiled(records)
    decode = getattr(batch, "decode_%s_batch" % decoder)
    kw = {"impl": "c"}
    if dozen:   # bench_msmq.py's dozen columns
        import bench_msmq

        kw["columns"] = bench_msmq.DOZEN
    for _ in range(passes):
        for s in range(0, records, call):
            r = decode((buf, offs[s:min(records, s + call) + 1]), **kw)
            del r


def _count(decoder: str, records: int, call: int, passes: int, dozen: bool) -> int:
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                          __file__, str(call), "--decoder", decoder, "--records", str(records),
                          "--passes", str(passes)] + (["--dozen"] if dozen else []),
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))   # (its idle threads spin)
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("call", type=int, help="records per call")
    ap.add_argument("--decoder", choices=("pcf", "mq", "msmq"), default="pcf")
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--passes", type=int, default=None)
    ap.add_argument("--dozen", action="store_true", help="msmq: bench_msmq.py's dozen columns only")
    a = ap.parse_args()
    if a.dozen and a.decoder != "msmq":
        ap.error("--dozen is for --decoder msmq")
    if a.passes is not None:
        _passes(a.decoder, a.records, a.call, a.passes, a.dozen)
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    one, three = (_count(a.decoder, a.records, a.call, p, a.dozen) for p in (1, 3))
    print("%s%s, calls of %d records: %.0f instructions per record, %.0f per call (%d records, 2 passes)"
          % (a.decoder, " (a dozen columns)" if a.dozen else "", a.call, (three - one) / (2 * a.records),
             (three - one) / (2 * a.records) * a.call, a.records))


if __name__ == "__main__":
    main()
