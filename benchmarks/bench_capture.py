"""Capture conversion, like against like.

Whole process against whole process (tshark is a process: its start, its
dissectors and its output are in its time, so mqcodec's start, imports and
Parquet files are in mqcodec's), on the captures users have:

  real      - the shared real capture (../shared/captures/ibmmq_jms_client_1414.pcap, 695 frames)
  synth     - a simulator capture (MQCODEC_BENCH_CAPTURE_MESSAGES application messages, default
              20,000: about 180,000 frames; or an existing file MQCODEC_BENCH_CAPTURE)
  lossy     - the simulator capture with one TCP segment with payload in LOSS_EVERY lost
              (MQCODEC_BENCH_LOSS_EVERY, default 200): holes, cut segments, open multi-segment
              units, garbage before the next header (FramingErrors and resynchronisations)
  empty     - a capture of no frame: the fixed cost of a process

Rows of each (group "<capture> process"; records = frames):
  tshark fields               - `tshark -r F -T fields -e mq.tsh.type`
  mqcodec --threads 1 | 2     - `python -m mqcodec pcap2parquet F -o OUT --threads N`
  mqcodec, baseline --threads 1 - the same with another mqcodec tree first on PYTHONPATH
                                (MQCODEC_BENCH_BASELINE=DIR, e.g. made by benchmarks/baseline_tree.sh;
                                MQCODEC_BENCH_BASELINE_THREADS=default for a tree older than --threads,
                                =1,2 for a baseline row per thread count; default 1)
  mqcodec --threads N --columns - with the column selection MQCODEC_BENCH_COLUMNS
                                ("TABLE=COL,COL;TABLE=COL": one --columns per part), when set

Warm, in this process, against each other (group "synth in-process"; no tshark row: tshark has
no warm in-process form):
  capture core                - mqcodec._ext.capture_core: walk, reassembly, both framers
  read only / read+reassemble - the pure capture reader and TCP layer
  convert --threads 1 | 2     - mqcodec.convert.convert after a warm-up (imports paid)

Run:  .venv/bin/python -m pytest benchmarks/bench_capture.py --benchmark-only   (pytest-benchmark rows)
      .venv/bin/python benchmarks/bench_capture.py [--rounds 5] [--messages N]  (the whole-process
      table of BENCHMARKS.md: every command run in turn, round after round, in a rotating order,
      so that the load of this shared machine falls on all of them alike; medians, peak RSS and
      CPU of each process)
"""
from __future__ import annotations

import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from conftest import SHARED as _SHARED  # noqa: E402

SHARED = pathlib.Path(_SHARED)
REAL = SHARED / "captures" / "ibmmq_jms_client_1414.pcap"
MESSAGES = int(os.environ.get("MQCODEC_BENCH_CAPTURE_MESSAGES", "20000"))
TSHARK_FIELDS = ["-T", "fields", "-e", "mq.tsh.type"]
LOSS_EVERY = int(os.environ.get("MQCODEC_BENCH_LOSS_EVERY", "200"))


# ---------------------------------------------------------------------------
# the captures
# ---------------------------------------------------------------------------
def synth_capture(folder: pathlib.Path, messages: int = MESSAGES) -> pathlib.Path:
    """MQCODEC_BENCH_CAPTURE, or the simulator's capture of ``messages`` (made once per folder)."""
    given = os.environ.get("MQCODEC_BENCH_CAPTURE")
    if given:
        return pathlib.Path(given)
    from mqcodec import synth

    path = folder / ("synth-%d.pcap" % messages)
    if not path.exists():
        synth.write_capture(str(path), seed=1, messages=messages)
    return path


def lossy_capture(folder: pathlib.Path, messages: int = MESSAGES, every: int = LOSS_EVERY) -> pathlib.Path:
    """The simulator's capture of ``messages`` with every ``every``-th TCP segment
    that carries payload left out (made once per folder)."""
    from mqcodec import synth
    from mqcodec.capture.writer import PcapWriter

    path = folder / ("lossy-%d-%d.pcap" % (messages, every))
    if not path.exists():
        with open(path, "wb") as f:
            w = PcapWriter(f, nanosecond=True)
            k = 0
            for p in synth.generate(1, messages):
                if p.length:
                    k += 1
                    if k % every == 0:
                        continue
                w.write(p.ts_ns, p.frame)
    return path


def empty_capture(folder: pathlib.Path) -> pathlib.Path:
    from mqcodec.capture.writer import PcapWriter

    path = folder / "empty.pcap"
    with open(path, "wb") as f:
        PcapWriter(f)
    return path


def frames_of(path) -> int:
    from mqcodec._ext.capture_core import CaptureCore

    core = CaptureCore()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            core.feed(chunk)
            core.take()
    core.finish()
    return core.stats["frames"]


# ---------------------------------------------------------------------------
# the processes
# ---------------------------------------------------------------------------
def tshark_cmd(path) -> list:
    exe = shutil.which("tshark")
    return [exe, "-r", str(path), *TSHARK_FIELDS] if exe else []


def mqcodec_cmd(path, out, threads: int) -> list:
    return [sys.executable, "-m", "mqcodec", "pcap2parquet", str(path), "-o", str(out), "--threads", str(threads)]


def run_process(cmd: list, out=None, pythonpath=None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in KiB) of one run of ``cmd``."""
    env = dict(os.environ)
    # bytecode cached, as a pip install leaves it (pip compiles every module it installs): a
    # shell that sets PYTHONDONTWRITEBYTECODE would have every run compile mqcodec's sources
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    if out is not None:
        shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, cmd)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def process_rows(path, work: pathlib.Path) -> list:
    """(row name, command, output folder, PYTHONPATH) of the whole-process rows for ``path``."""
    rows = []
    if tshark_cmd(path):
        rows.append(("tshark fields", tshark_cmd(path), None, None))
    for n in (1, 2):
        rows.append(("mqcodec --threads %d" % n, mqcodec_cmd(path, work / "out", n), work / "out", None))
    # MQCODEC_BENCH_COLUMNS="TABLE=COL,COL;TABLE=COL": rows with that column selection as well
    selection = [spec for spec in os.environ.get("MQCODEC_BENCH_COLUMNS", "").split(";") if spec.strip()]
    if selection:
        for n in (1, 2):
            rows.append(("mqcodec --threads %d --columns (%d tables)" % (n, len(selection)),
                         mqcodec_cmd(path, work / "out", n) + [a for spec in selection for a in ("--columns", spec)],
                         work / "out", None))
    base = os.environ.get("MQCODEC_BENCH_BASELINE")
    if base:
        # MQCODEC_BENCH_BASELINE_THREADS=default: a tree of a commit before --threads (its default
        # was one thread); =N[,M...]: a baseline row for each of --threads N, M, ...; else --threads 1
        how = os.environ.get("MQCODEC_BENCH_BASELINE_THREADS", "1")
        if how == "default":
            rows.append(("mqcodec, baseline", mqcodec_cmd(path, work / "out", 1)[:-2], work / "out", base))
        else:
            for n in (int(x) for x in how.split(",")):
                rows.append(("mqcodec --threads %d, baseline" % n, mqcodec_cmd(path, work / "out", n),
                             work / "out", base))
    return rows


# ---------------------------------------------------------------------------
# pytest-benchmark rows
# ---------------------------------------------------------------------------
import pytest  # noqa: E402

from conftest import record  # noqa: E402


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cap")
    out = {"real": REAL, "synth": synth_capture(folder), "empty": empty_capture(folder)}
    return {k: (p, frames_of(p) if k != "empty" else 0, os.path.getsize(p)) for k, p in out.items()}


@pytest.mark.parametrize("which", ["real", "synth", "empty"])
@pytest.mark.parametrize("row", ["tshark fields", "mqcodec --threads 1", "mqcodec --threads 2",
                                 "mqcodec, baseline"])
def test_process(benchmark, captures, tmp_path, which, row):
    pytest.importorskip("mqcodec._ext.capture_core")
    path, frames, size = captures[which]
    rows = {name: (cmd, out, pp) for name, cmd, out, pp in process_rows(path, tmp_path)}
    if row not in rows:
        pytest.skip("tshark not installed" if row.startswith("tshark") else "MQCODEC_BENCH_BASELINE not set")
    cmd, out, pp = rows[row]
    benchmark.pedantic(run_process, args=(cmd, out, pp), rounds=3 if which == "synth" else 5)
    record(benchmark, "%s process:%s" % (which, row), max(frames, 1), size)


def _read(path):
    from mqcodec.capture import open_capture

    return sum(1 for _ in open_capture(str(path)))


def _reassemble(path):
    from mqcodec.capture import iter_capture_events

    return sum(1 for _ in iter_capture_events(str(path)))


def _core(path):
    return frames_of(path)


def test_read(benchmark, captures):
    path, frames, size = captures["synth"]
    assert benchmark.pedantic(_read, args=(path,), rounds=3) == frames
    record(benchmark, "synth in-process:read only, pure", frames, size)


def test_reassemble(benchmark, captures):
    path, frames, size = captures["synth"]
    benchmark.pedantic(_reassemble, args=(path,), rounds=1)
    record(benchmark, "synth in-process:read+reassemble, pure", frames, size)


def test_capture_core(benchmark, captures):
    pytest.importorskip("mqcodec._ext.capture_core")
    path, frames, size = captures["synth"]
    assert benchmark.pedantic(_core, args=(path,), rounds=5) == frames
    record(benchmark, "synth in-process:capture core (walk, reassembly, framing)", frames, size)


@pytest.mark.parametrize("threads", [1, 2])
def test_convert_warm(benchmark, captures, tmp_path, threads):
    from mqcodec.convert import ConvertOptions, convert

    path, frames, size = captures["synth"]
    report = benchmark.pedantic(convert, args=([str(path)], str(tmp_path / "out"), ConvertOptions(threads=threads)),
                                rounds=3, warmup_rounds=1)
    assert report["summary"]["frames"] == frames
    record(benchmark, "synth in-process:convert --threads %d" % threads, frames, size)


# ---------------------------------------------------------------------------
# the interleaved whole-process table (BENCHMARKS.md)
# ---------------------------------------------------------------------------
def main(argv=None) -> int:
    import argparse
    import tempfile

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--messages", type=int, default=MESSAGES, help="simulator capture size (application messages)")
    p.add_argument("--captures", default="real,synth,empty", help="which of real, synth, lossy, empty")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mqcodec-bench-") as tmp:
        work = pathlib.Path(tmp)
        t0 = time.perf_counter()
        paths = {"real": REAL, "empty": empty_capture(work)}
        if "synth" in args.captures:
            paths["synth"] = synth_capture(work, args.messages)
            if not os.environ.get("MQCODEC_BENCH_CAPTURE"):
                print("simulator capture: %d messages, built in %.1f s" % (args.messages, time.perf_counter() - t0),
                      file=sys.stderr)
        if "lossy" in args.captures:
            paths["lossy"] = lossy_capture(work, args.messages)
        for which in args.captures.split(","):
            path = paths[which]
            frames = frames_of(path) if which != "empty" else 0
            rows = process_rows(path, work)
            times: dict = {name: [] for name, *_ in rows}
            for r in range(args.rounds):
                # interleaved: one run of each per round, the order rotated round after round so
                # that no row always runs after the same one (after tshark's 250 MB, say)
                k = r % len(rows)
                for name, cmd, out, pp in rows[k:] + rows[:k]:
                    times[name].append(run_process(cmd, out, pp))
            tshark = statistics.median(w for w, _, _ in times.get("tshark fields", [(0, 0, 0)]))
            print("\n%s: %s, %d frames, %.1f MB; median of %d interleaved rounds"
                  % (which, path.name, frames, os.path.getsize(path) / 1e6, args.rounds))
            print("| row | median s | frames/s | x tshark | CPU s | peak RSS MiB |")
            print("|---|---:|---:|---:|---:|---:|")
            for name, runs in times.items():
                wall = statistics.median(w for w, _, _ in runs)
                cpu = statistics.median(c for _, c, _ in runs)
                rss = max(r for _, _, r in runs) / 1024
                print("| %s | %.3f | %s | %s | %.2f | %.0f |" % (
                    name, wall, "{:,.0f}".format(frames / wall) if frames else "-",
                    "%.2f" % (tshark / wall) if tshark else "-", cpu, rss))
    return 0


if __name__ == "__main__":
    sys.exit(main())
