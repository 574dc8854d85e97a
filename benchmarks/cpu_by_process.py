"""CPU time of a command, by the kind of process that spent it: the Spark
driver's, executors' and standalone daemons' JVMs (each by thread name, with
``--threads``), the Python workers, the command's own Python. It shows where
a cluster job's CPU goes on this machine, where everything shares 2 cores.

    .venv/bin/python benchmarks/cpu_by_process.py [--threads] -- COMMAND [ARG...]

e.g. with the split benchmark (one worker, 512 MiB):

    MQCODEC_SPLIT_BENCH_MB=512 MQCODEC_SPLIT_BENCH_WRITERS=tasks .venv/bin/python benchmarks/cpu_by_process.py \\
        -- .venv/bin/python -m pytest -q benchmarks/bench_spark_split.py --benchmark-only -k 1-

Every process and thread of the machine is read from /proc every 0.2 s while
the command runs (what a process spent before the first reading is not
counted; a thread's last 0.2 s before it ends may be missed). The kinds are
told apart by command line, so processes that are not the command's (if any
run) are counted under "other"."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import Counter

TICK = os.sysconf("SC_CLK_TCK")


def kind(cmdline: str) -> str:
    if "java" in cmdline.split(" ", 1)[0]:
        for mark, name in (("CoarseGrainedExecutorBackend", "executor JVM"), ("deploy.master", "master JVM"),
                           ("deploy.worker", "worker JVM"), ("SparkSubmit", "driver JVM")):
            if mark in cmdline:
                return name
        return "other JVM"
    if "pyspark.daemon" in cmdline or "pyspark.worker" in cmdline:
        return "Python workers"
    return "other"


def sample(seen: dict, first: bool, threads: bool) -> None:
    """seen: (pid, tid) -> [kind, thread name, cpu s now, cpu s at the first reading]."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            tids = os.listdir("/proc/%s/task" % pid) if threads else [None]
        except OSError:
            continue
        for tid in tids:
            # a thread's time, or the whole process's (all its threads, ended ones too)
            path = "/proc/%s/stat" % pid if tid is None else "/proc/%s/task/%s/stat" % (pid, tid)
            try:
                with open(path) as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            cpu = (int(fields[11]) + int(fields[12])) / TICK   # utime + stime
            key = (pid, tid)
            if key in seen:
                seen[key][2] = cpu
            else:
                name = re.sub(r"\d+", "N", stat[stat.index("(") + 1:stat.rindex(")")])
                seen[key] = [kind(cmd), name, cpu, cpu if first else 0.0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", action="store_true", help="also by thread name")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        ap.error("no command")
    seen: dict = {}
    sample(seen, True, a.threads)
    own = os.getpid()
    start = time.perf_counter()
    child = subprocess.Popen(command)
    while child.poll() is None:
        sample(seen, False, a.threads)
        time.sleep(0.2)
    wall = time.perf_counter() - start
    by_kind: Counter = Counter()
    by_thread: Counter = Counter()
    for (pid, _), (k, name, cpu, base) in seen.items():
        if int(pid) == own:
            continue
        if int(pid) == child.pid:
            k = "the command"
        by_kind[k] += cpu - base
        by_thread[(k, name)] += cpu - base
    total = sum(by_kind.values())
    print("\n%.1f s of wall time, %.1f CPU s (%.2f cores busy on average)" % (wall, total, total / wall))
    print("| process | CPU s | share |\n|---|---:|---:|")
    for k, v in by_kind.most_common():
        if v >= 0.05:
            print("| %s | %.1f | %.0f %% |" % (k, v, 100 * v / total))
    if a.threads:
        print("\n| process, thread | CPU s |\n|---|---:|")
        for (k, name), v in by_thread.most_common(20):
            if v >= 0.5:
                print("| %s, %s | %.1f |" % (k, name, v))
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
