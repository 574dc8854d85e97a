"""CPU time per call of the three compiled batch decoders at small call sizes
(1,000 and 10,000 records), this tree against a baseline tree, the two run
in turn, round after round, each round a fresh process: the median per row.

    benchmarks/baseline_tree.sh REV /tmp/base
    .venv/bin/python benchmarks/small_calls.py /tmp/base [--rounds 5]

Records: bench_msmq.py's packets (every column, and its dozen), bench_mq.py's
messages, datasets.py's trace-route PCF bodies.  CPU time (``time.process_time``)
of a loop of calls after a warm-up; on this shared host it still moves by tens
of per cent between rounds, hence the rounds in turn and the medians
(``call_size_instructions.py --decoder`` counts instructions, which it does not move)."""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _one_round() -> dict:
    import time

    sys.path.insert(0, HERE)
    import bench_mq
    import bench_msmq
    import datasets
    from mqcodec.batch import decode_mq_batch, decode_msmq_batch, decode_pcf_batch

    out = {}

    def bench(name, fn, reps):
        for _ in range(max(3, reps // 10)):
            fn()
        t0 = time.process_time()
        for _ in range(reps):
            fn()
        out[name] = (time.process_time() - t0) / reps * 1e6

    for n in (1000, 10000):
        buf, offs = bench_msmq._tiled(n)
        bench("msmq, every column @%d" % n, lambda: decode_msmq_batch((buf, offs), impl="c"), 400_000 // n)
        bench("msmq, a dozen columns @%d" % n,
              lambda: decode_msmq_batch((buf, offs), impl="c", columns=bench_msmq.DOZEN), 400_000 // n)
        mbuf, moffs = bench_mq._tiled(n)
        bench("mq @%d" % n, lambda: decode_mq_batch((mbuf, moffs), impl="c"), 200_000 // n)
        pbuf, poffs = datasets.tiled(n)
        bench("pcf @%d" % n, lambda: decode_pcf_batch((pbuf, poffs), impl="c"), 200_000 // n)
    return out


def main() -> None:
    if sys.argv[1:] == ["--child"]:
        print(json.dumps(_one_round()))
        return
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("baseline", help="a baseline tree (benchmarks/baseline_tree.sh)")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    runs: dict = {"this tree": [], "baseline": []}
    for _ in range(a.rounds):
        for tree, path in (("baseline", a.baseline), ("this tree", "")):
            env = dict(os.environ, PYTHONPATH=path, OPENBLAS_NUM_THREADS="1")
            out = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True,
                                 check=True).stdout
            runs[tree].append(json.loads(out))
    print("| row | records per call | baseline us/call | this tree us/call | baseline / this | "
          "this tree, records per CPU s |")
    print("|---|---:|---:|---:|---:|---:|")
    for key in runs["baseline"][0]:
        name, n = key.rsplit(" @", 1)
        b = statistics.median(r[key] for r in runs["baseline"])
        t = statistics.median(r[key] for r in runs["this tree"])
        print("| %s | %s | %.0f | %.0f | %.2f | %s |" % (name, format(int(n), ","), b, t, b / t,
                                                         format(round(int(n) / t * 1e6), ",")))


if __name__ == "__main__":
    main()
