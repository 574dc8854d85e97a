"""The compiled capture core alone, this tree against another, in-process.

Each round runs one process per tree, in turn (the other tree first on
``sys.path``); each process converts the capture with
``mqcodec._ext.capture_core.CaptureCore`` alone (1 MiB chunks, every batch
taken, nothing decoded further) and prints its best of ``--repeat`` passes.

Captures: ``--capture PATH``, or ``--many-connections N`` (N short TCP
connections to port 1414, 8 frames each, written once to /tmp), where a
small ``--budget`` makes the byte budget check often: what walks the open
connections.

Run:  .venv/bin/python benchmarks/core_vs_tree.py --baseline DIR [--capture F | --many-connections N]
          [--budget BYTES] [--rounds 5]
(DIR: a tree made by benchmarks/baseline_tree.sh)
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

_ONE = r"""
import sys, time
if sys.argv[1] != "-":
    sys.path.insert(0, sys.argv[1])
import mqcodec._ext.capture_core as cc
data = open(sys.argv[2], "rb").read()
budget = int(sys.argv[3]) or None
best = 1e9
for _ in range(int(sys.argv[4])):
    core = cc.CaptureCore(units=True, max_total_buffer=budget)
    t = time.perf_counter()
    for i in range(0, len(data), 1 << 20):
        core.feed(data[i:i + (1 << 20)])
        core.take()
    core.finish()
    core.take()
    best = min(best, time.perf_counter() - t)
print("%.4f %d" % (best, core.stats["budget checks"]))
"""


def many_connections(n: int) -> str:
    import many_connections as generator

    path = "/tmp/mqcodec-many-connections-%d.pcap" % n
    if not os.path.exists(path):
        generator.write(n, path, "junk")
    return path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--capture")
    ap.add_argument("--many-connections", type=int)
    ap.add_argument("--budget", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    capture = a.capture or many_connections(a.many_connections or 30000)
    rows: dict = {"tree": [], "baseline": []}
    for _ in range(a.rounds):
        for name, tree in (("baseline", a.baseline), ("tree", "-")):
            out = subprocess.run([sys.executable, "-c", _ONE, tree, capture, str(a.budget), str(a.repeat)],
                                 capture_output=True, text=True, check=True, cwd="/tmp").stdout.split()
            rows[name].append(float(out[0]))
            checks = out[1]
    print("%s, budget %s (%s checks): best of %d passes, %d rounds" % (capture, a.budget or "none", checks,
                                                                        a.repeat, a.rounds))
    for name, times in rows.items():
        times.sort()
        print("  %-8s median %.4f s  (%.4f-%.4f)" % (name, times[len(times) // 2], times[0], times[-1]))


if __name__ == "__main__":
    main()
