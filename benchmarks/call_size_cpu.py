"""CPU time (user and system, getrusage) per record of a batch decoder
(``--decoder``: pcf, the default, on datasets.py's trace-route bodies; msmq, on
bench_msmq.py's packets, every column) at one call size, steady state: the data
set is decoded twice in calls of that size and the second pass is reported (the
first faults the process's memory in).  ``--unchunked`` decodes each call in one
piece (the decoder before the pieces of issue 18), to show where the system
time of large calls came from.

    .venv/bin/python benchmarks/call_size_cpu.py 200000 200000 [--unchunked]
    .venv/bin/python benchmarks/call_size_cpu.py 1000000 100000 --decoder msmq

CPU time rather than wall time: on a shared machine it is what the decoder
itself costs (wall time there counts other people's jobs)."""
import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import datasets  # noqa: E402
from mqcodec import batch  # noqa: E402
from mqcodec.batch import _front  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("records", type=int)
    ap.add_argument("call", type=int, help="records per call")
    ap.add_argument("--unchunked", action="store_true")
    ap.add_argument("--decoder", choices=("pcf", "msmq"), default="pcf")
    a = ap.parse_args()
    if a.unchunked:
        setattr(_front, "%s_CHUNK" % a.decoder.upper(), _front.Chunking(1 << 62, 1 << 62))
    if a.decoder == "pcf":
        buf, offs = datasets.tiled(a.records)
    else:
        import bench_msmq

        buf, offs = bench_msmq._tiled(a.records)
    decode = getattr(batch, "decode_%s_batch" % a.decoder)
    for rep in ("first", "second"):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        for s in range(0, a.records, a.call):
            e = min(a.records, s + a.call)
            res = decode((buf, offs[s:e + 1]), impl="c")
            del res
        t1 = time.perf_counter()
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        user, sys_ = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
        print("%s pass: %d records in calls of %d%s: user %.2f s, system %.2f s, %.0f records per CPU second, "
              "%d minor faults, wall %.2f s" % (rep, a.records, a.call, " (unchunked)" if a.unchunked else "",
                                                user, sys_, a.records / (user + sys_),
                                                r1.ru_minflt - r0.ru_minflt, t1 - t0))


if __name__ == "__main__":
    main()
