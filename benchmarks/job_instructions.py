"""Instructions of a whole ``mqcodec pcap2parquet`` process (one thread),
counted by valgrind (callgrind): a count, not a time, so the load of a shared
machine does not move it (CPU time here moved tens of per cent between runs
of the same code).  It does not see page faults (valgrind replaces the C
heap) nor the overlap of threads: ``bench_capture.py`` times the job.

    .venv/bin/python -m mqcodec synth -o /tmp/s5k.pcap --seed 1 --messages 5000
    .venv/bin/python benchmarks/job_instructions.py /tmp/s5k.pcap
    .venv/bin/python benchmarks/job_instructions.py /tmp/s5k.pcap --baseline /tmp/base   # a baseline tree

A baseline tree is another commit's package laid out by ``baseline_tree.sh``
and put first on ``PYTHONPATH``.  The job runs once without valgrind first, so
that both trees run from cached bytecode (as a pip install leaves them)."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _env(baseline):
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if baseline:
        env["PYTHONPATH"] = os.path.abspath(baseline) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def count(capture: str, baseline=None, valgrind: str = "valgrind") -> int:
    """The instructions of one conversion of ``capture``, all its threads."""
    env = _env(baseline)
    with tempfile.TemporaryDirectory() as tmp:
        job = [sys.executable, "-m", "mqcodec", "pcap2parquet", capture, "-o", os.path.join(tmp, "warm"),
               "--threads", "1"]
        subprocess.run(job, env=env, check=True, stdout=subprocess.DEVNULL)
        job[job.index("-o") + 1] = os.path.join(tmp, "out")
        out = os.path.join(tmp, "callgrind.out")
        r = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=" + out] + job, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    got = re.findall(r"Collected : (\d+)", r.stderr.decode())
    if len(got) != 1:
        raise RuntimeError("callgrind's count not found:\n" + r.stderr.decode()[-2000:])
    return int(got[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture")
    ap.add_argument("--baseline", help="a baseline tree (baseline_tree.sh) to count as well")
    args = ap.parse_args()
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    this = count(args.capture, valgrind=valgrind)
    print("| tree | instructions | baseline / tree |")
    print("|---|---:|---:|")
    if args.baseline:
        base = count(args.capture, args.baseline, valgrind)
        print("| baseline %s | %s | 1.00 |" % (args.baseline, format(base, ",")))
        print("| this tree | %s | %.2f |" % (format(this, ","), base / this))
    else:
        print("| this tree | %s | - |" % format(this, ","))


if __name__ == "__main__":
    main()
