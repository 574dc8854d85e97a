"""CPU time (user and system, getrusage) per record of decode_pcf_batch at one
call size, steady state: the data set is decoded twice in calls of that size
and the second pass is reported (the first faults the process's memory in).
``--unchunked`` decodes each call in one piece (the decoder before the pieces
of issue 18), to show where the system time of large calls came from.

    .venv/bin/python benchmarks/call_size_cpu.py 200000 200000 [--unchunked]

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
    a = ap.parse_args()
    if a.unchunked:
        _front.PCF_CHUNK = _front.Chunking(1 << 62, 1 << 62)
    buf, offs = datasets.tiled(a.records)
    for rep in ("first", "second"):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        for s in range(0, a.records, a.call):
            e = min(a.records, s + a.call)
            res = batch.decode_pcf_batch((buf, offs[s:e + 1]), impl="c")
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
