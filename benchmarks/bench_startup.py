"""Start-up costs, whole process (what a user waits for before any work).

Rows (group "startup"; records = 1 process):
  import constants      - `python -c "import mqcodec.ibmmq.constants"`
  pcap2parquet, empty   - `python -m mqcodec pcap2parquet EMPTY.pcap -o OUT` on a capture of no frame
  python, nothing       - `python -c pass`: the interpreter's own start, the floor of both

Run:  .venv/bin/python -m pytest benchmarks/bench_startup.py --benchmark-only
"""
import subprocess
import sys

from conftest import record


def _run(*args):
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_python_nothing(benchmark):
    benchmark.pedantic(_run, args=("-c", "pass"), rounds=5)
    record(benchmark, "startup:python, nothing", 1, 0)


def test_import_constants(benchmark):
    benchmark.pedantic(_run, args=("-c", "import mqcodec.ibmmq.constants"), rounds=5)
    record(benchmark, "startup:import constants", 1, 0)


def test_pcap2parquet_empty(benchmark, tmp_path):
    from mqcodec.capture.writer import PcapWriter

    empty = tmp_path / "empty.pcap"
    with open(empty, "wb") as f:
        PcapWriter(f)
    benchmark.pedantic(_run, args=("-m", "mqcodec", "pcap2parquet", str(empty), "-o", str(tmp_path / "o")), rounds=5)
    record(benchmark, "startup:pcap2parquet, empty capture", 1, 0)
