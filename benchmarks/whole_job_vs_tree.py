"""The whole job as a process against an older package tree, interleaved:

    benchmarks/baseline_tree.sh eca704f /tmp/base-eca704f
    .venv/bin/python benchmarks/whole_job_vs_tree.py CAPTURE [ROUNDS] [TREE]

``python -m mqcodec pcap2parquet CAPTURE -o OUT`` with the tree on PYTHONPATH
(default /tmp/base-eca704f), and with this checkout with --threads 1 and 2;
each round runs the three once; CPU = user + system of the process (os.wait4).
Prints the median (and the least) CPU and the median wall time of each, and
their ratios to the tree's."""
import os, subprocess, sys, time, shutil, statistics, tempfile
CAP = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
TREE = sys.argv[3] if len(sys.argv) > 3 else "/tmp/base-eca704f"
PY = sys.executable
env0 = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
def run(tree, extra=()):
    env = dict(env0)
    if tree:
        env["PYTHONPATH"] = tree
    out = os.path.join(tempfile.gettempdir(), "whole-job-%s" % ("base" if tree else "now"))
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    p = subprocess.Popen([PY, "-m", "mqcodec", "pcap2parquet", CAP, "-o", out, *extra], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, st, ru = os.wait4(p.pid, 0)
    assert os.waitstatus_to_exitcode(st) == 0, tree
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime
rows = {"tree": [], "now --threads 1": [], "now --threads 2": []}
run(TREE); run(None, ("--threads", "1"))  # warm-up: writes bytecode caches
for _ in range(rounds):
    rows["tree"].append(run(TREE))
    rows["now --threads 1"].append(run(None, ("--threads", "1")))
    rows["now --threads 2"].append(run(None, ("--threads", "2")))
b = statistics.median(c for _, c in rows["tree"])
bw = statistics.median(w for w, _ in rows["tree"])
for k, v in rows.items():
    c = statistics.median(x for _, x in v); w = statistics.median(x for x, _ in v)
    mn = min(x for _, x in v); print("%-18s CPU %.3f s (x%.2f tree; least %.3f, x%.2f)  wall %.3f s (x%.2f tree)" % (k, c, c / b, mn, mn / min(x for _, x in rows["tree"]), w, w / bw))
print("load", os.getloadavg())
