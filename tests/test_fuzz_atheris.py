"""The CI's coverage-guided fuzz pass: atheris (libFuzzer) over every target
for a fixed number of inputs, seeded from ``tests/fuzz/seeds.py`` and the
committed corpus, with a fixed seed so that a run is repeatable.

One process runs all targets (``run_atheris.py all``: the first byte of an
input picks the target), so the Python code is instrumented once.  Any
invariant violation, exception, timeout or RSS blow-up is a crash for
libFuzzer: a non-zero exit and a ``crash-*`` file, which this test reports.
The inputs are the same on every run (CI must be repeatable); long
campaigns explore: docs/ROBUSTNESS.md.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import atheris  # noqa: F401
except ImportError:
    if os.environ.get("CI"):
        raise   # in CI the test extra installs atheris: its absence is an error, not a skip
    pytest.skip("atheris is not installed (pip install atheris)", allow_module_level=True)

pytestmark = pytest.mark.fuzz

RUNNER = Path(__file__).parent / "fuzz" / "run_atheris.py"
RUNS = 5000


def _peak_rss_mib() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024   # (Linux: KiB)


def test_atheris_short_pass_over_every_target(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    # libFuzzer's -rss_limit_mb reads the process's peak RSS, and a child starts with its
    # parent's (fork copies the high-water mark, exec keeps it): the pass may use 3 GiB more
    # than this pytest process's peak so far, whatever earlier tests took
    limit = 3072 + _peak_rss_mib()
    cmd = [sys.executable, str(RUNNER), "all", "-runs=%d" % RUNS, "-seed=1", "-timeout=30",
           "-rss_limit_mb=%d" % limit, "-max_len=16384", "-print_final_stats=1",
           "-artifact_prefix=%s/" % tmp_path, str(corpus)]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    log = proc.stderr + proc.stdout
    crashes = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-")))
    assert proc.returncode == 0 and not crashes, "atheris found %s:\n%s" % (crashes, log[-6000:])
    # it really fuzzed: the seeds were loaded and RUNS inputs executed, with coverage feedback
    executed = re.search(r"stat::number_of_executed_units:\s+(\d+)", log)
    assert executed and int(executed.group(1)) >= RUNS, log[-3000:]
    inited = re.search(r"INITED cov: (\d+)", log)
    assert inited and int(inited.group(1)) > 1000, log[-3000:]
    assert len(list(corpus.iterdir())) > 100
