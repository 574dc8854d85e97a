"""Capture conversion throughput, side by side with tshark on the same file.

Rows (group "capture"; records = frames):
  read only            - mqcodec.capture (pure): pcap records -> Frame objects
  read+reassemble      - frames -> link/IP/TCP decode -> TCP stream events (pure)
  capture core         - mqcodec._ext.capture_core: walk, link/IP/TCP, reassembly and both
                         framers, messages into its arena (reading, reassembling and framing)
  pcap2parquet local   - the whole job (compiled capture core, batch decoding, Parquet)
  pcap2parquet pure capture pipeline - the same job with capture_impl="py"
  tshark fields        - `tshark -r F -T fields -e mq.md.msgid` (dissects every frame), whole process
  pcap2parquet process - `python -m mqcodec pcap2parquet F -o OUT`, whole process (imports included),
                         the like-for-like row to compare with tshark's
  pcap2parquet process, baseline - the same command with another mqcodec tree first on
                         PYTHONPATH (MQCODEC_BENCH_BASELINE=DIR, DIR/mqcodec a package tree of
                         another commit, e.g. made by benchmarks/baseline_tree.sh): ratios of two
                         versions measured in one run

Run:  .venv/bin/python -m pytest benchmarks/bench_capture.py --benchmark-only
Size: MQCODEC_BENCH_CAPTURE_MESSAGES (default 3000) application messages of
the simulator (about 8 frames each).
"""
import os
import shutil
import subprocess

import pytest

from conftest import record
from mqcodec import synth

MESSAGES = int(os.environ.get("MQCODEC_BENCH_CAPTURE_MESSAGES", "3000"))


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    path = tmp_path_factory.mktemp("cap") / "synth.pcap"
    frames = synth.write_capture(str(path), seed=1, messages=MESSAGES)
    return str(path), frames, os.path.getsize(path)


def _read(path):
    from mqcodec.capture import open_capture

    n = 0
    for _ in open_capture(path):
        n += 1
    return n


def _reassemble(path):
    from mqcodec.capture import iter_capture_events

    n = 0
    for _ in iter_capture_events(path):
        n += 1
    return n


def test_read(benchmark, capture):
    path, frames, size = capture
    assert benchmark.pedantic(_read, args=(path,), rounds=3) == frames
    record(benchmark, "capture:read only", frames, size)


def test_reassemble(benchmark, capture):
    path, frames, size = capture
    benchmark.pedantic(_reassemble, args=(path,), rounds=3)
    record(benchmark, "capture:read+reassemble", frames, size)


def test_pcap2parquet_local(benchmark, capture, tmp_path):
    from mqcodec.pcap2parquet import convert

    path, frames, size = capture
    # one warm-up round: the first conversion in a process pays imports (pandas, pyarrow.compute)
    report = benchmark.pedantic(convert, args=([path], str(tmp_path / "out")), rounds=3, warmup_rounds=1)
    assert report["summary"]["frames"] == frames
    record(benchmark, "capture:pcap2parquet local", frames, size)


def test_pcap2parquet_pure_capture(benchmark, capture, tmp_path):
    from mqcodec.pcap2parquet import ConvertOptions, convert

    path, frames, size = capture
    report = benchmark.pedantic(convert, args=([path], str(tmp_path / "out"), ConvertOptions(capture_impl="py")),
                                rounds=1, warmup_rounds=1)
    assert report["summary"]["frames"] == frames
    record(benchmark, "capture:pcap2parquet, pure capture pipeline", frames, size)


def test_tshark(benchmark, capture):
    exe = shutil.which("tshark")
    if exe is None:
        pytest.skip("tshark not installed")
    path, frames, size = capture

    def run():
        return subprocess.run([exe, "-r", path, "-T", "fields", "-e", "mq.md.msgid"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=True)

    benchmark.pedantic(run, rounds=2)
    record(benchmark, "capture:tshark fields", frames, size)


def _cli_job(path, out, pythonpath=None):
    import sys

    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "mqcodec", "pcap2parquet", path, "-o", out], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_pcap2parquet_process(benchmark, capture, tmp_path):
    path, frames, size = capture
    benchmark.pedantic(_cli_job, args=(path, str(tmp_path / "out")), rounds=3)
    record(benchmark, "capture:pcap2parquet process", frames, size)


def test_pcap2parquet_process_baseline(benchmark, capture, tmp_path):
    base = os.environ.get("MQCODEC_BENCH_BASELINE")
    if not base:
        pytest.skip("MQCODEC_BENCH_BASELINE not set")
    path, frames, size = capture
    benchmark.pedantic(_cli_job, args=(path, str(tmp_path / "out"), base), rounds=3)
    record(benchmark, "capture:pcap2parquet process, baseline", frames, size)


def _core(path):
    from mqcodec._ext.capture_core import CaptureCore

    core = CaptureCore()
    n = 0
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            core.feed(chunk)
            n += len(core.take()["seq"])
    core.finish()
    n += len(core.take()["seq"])
    return core, n


def test_capture_core(benchmark, capture):
    pytest.importorskip("mqcodec._ext.capture_core")
    path, frames, size = capture
    core, n = benchmark.pedantic(_core, args=(path,), rounds=5)
    assert core.stats["frames"] == frames and core.supported
    record(benchmark, "capture:capture core (walk + reassembly + framing, messages into the arena)", frames, size)
