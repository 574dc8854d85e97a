"""The peak memory of one cluster-engine convert task, outside Spark.

A split job's convert task (``mqcodec.spark.split._write_groups``) gets its
frames grouped by connection, converts them on one thread and writes its own
Parquet files.  This script does the same in a child process per run: the
capture's frames, ordered by (connection group, frame number) as Spark's
``repartition`` + ``sortWithinPartitions`` order them, go through
``Converter.add_frames`` into a ``DatasetSink`` (or no sink), and the child
reports its peak RSS.  Whether that peak grows with the capture's length is
issue 17's question (BENCHMARKS.md, "One capture over a Spark standalone
cluster").

    .venv/bin/python benchmarks/task_memory.py CAPTURE [CAPTURE ...] \\
        [--sinks parquet,none] [--row-group-mib 16] [--rounds 2] [--part 0.0625,0.25,0.5-1] [--repeat 1] [--where]

``parquet``: the task's sink (``DatasetSink``, its rows waiting for their row
group until ``--row-group-mib`` of them); ``none``: rows dropped (the
conversion alone).  ``--part F`` or ``--part A-B``: only the first
fraction F of the ordered frames' batches, or those from fraction A to B (several,
comma-separated; a connection a cut falls in starts or ends there):
whether a task's peak rises as it goes on through one capture, or is reached early
and stays.  ``--repeat N``: the frames N times, as N captures of one task into
the same sink (a task N times as long).  The ordered frames are cached beside each capture
(``CAPTURE.by-connection.arrow``; making it holds the capture's frames in
memory: about 3x its size).  ``--where``: the child samples its resident
memory every 2 ms on a thread of its own and prints, after the table row, the
peak's moment (seconds into the run, MiB, the converter's functions the main
thread was in) and the highest sample of each tenth of the run.  Arrow's pool is jemalloc, as the ``mqcodec``
command and the cluster engine's executors have it, unless
``ARROW_DEFAULT_MEMORY_POOL`` says otherwise.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time


def order_by_connection(capture: str, ordered: str) -> None:
    import pyarrow as pa

    from mqcodec.capture import open_capture
    from mqcodec.capture.connections import group_key, keys_of
    from mqcodec.convert.spool import FRAME_BATCH_SCHEMA, as_batches

    with open(capture, "rb") as f:
        frames = list(open_capture(f))
    keys = [keys_of(fr) for fr in frames]
    fragmented = {pair for _, pair, is_fragment in keys if is_fragment}
    groups = [group_key(conn, pair, fragmented) for conn, pair, _ in keys]
    order = sorted(range(len(frames)), key=lambda i: (groups[i], frames[i].number))
    with pa.OSFile(ordered + ".tmp", "wb") as out, pa.ipc.new_file(out, FRAME_BATCH_SCHEMA) as w:
        for batch in as_batches(frames[i] for i in order):
            w.write_batch(batch)
    os.rename(ordered + ".tmp", ordered)


class _Sampler:
    """Resident memory every 2 ms, with the mqcodec functions the main thread is in."""

    def __init__(self) -> None:
        import threading

        self.samples: list = []
        self._main = threading.get_ident()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = time.monotonic()
        self._thread.start()

    def _run(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        with open("/proc/self/statm") as f:
            while not self._stop.wait(0.002):
                f.seek(0)
                rss = int(f.read().split()[1]) * page >> 20
                frame, names = sys._current_frames().get(self._main), []
                while frame is not None and len(names) < 4:
                    if "mqcodec" in frame.f_code.co_filename:
                        names.append(frame.f_code.co_name)
                    frame = frame.f_back
                self.samples.append((time.monotonic() - self.t0, rss, " < ".join(names)))

    def report(self) -> dict:
        self._stop.set()
        self._thread.join()
        s = self.samples
        t, rss, where = max(s, key=lambda x: x[1])
        tenths = [max((x[1] for x in s[i * len(s) // 10:(i + 1) * len(s) // 10]), default=0) for i in range(10)]
        return {"peak_at_s": round(t, 2), "peak_sample_mib": rss, "peak_in": where, "tenths_mib": tenths}


def child(ordered: str, sink_kind: str, row_group_mib: int, part: str = "1", repeat: int = 1,
          where: bool = False) -> None:
    import resource

    import pyarrow as pa

    from mqcodec.convert import ConvertOptions, Converter, sinks

    sinks.ROW_GROUP_BYTES = row_group_mib << 20
    opts = ConvertOptions(threads=1)
    with tempfile.TemporaryDirectory() as out:
        if sink_kind == "none":
            sink = None
            conv = Converter(lambda name, rows: None, opts)
        else:
            sink = sinks.DatasetSink.of(out, opts)
            conv = Converter(sink, opts)

        def batches():
            with pa.OSFile(ordered, "rb") as f:
                r = pa.ipc.open_file(f)
                lo, hi = _fractions(part)
                for i in range(round(r.num_record_batches * lo), max(1, round(r.num_record_batches * hi))):
                    yield r.get_batch(i)

        t = time.monotonic()
        sampler = _Sampler() if where else None
        for index in range(repeat):   # (--repeat: the same frames again as the next capture, into the same sink)
            conv.add_frames(batches(), os.path.basename(ordered), index=index)
        conv.drain()
        if sink is not None:
            sink.close()
        print(json.dumps({"peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10,
                          "s": round(time.monotonic() - t, 2), "pool": pa.default_memory_pool().backend_name,
                          **(sampler.report() if sampler else {})}))


def _fractions(part: str) -> tuple:
    """``F`` (the first fraction F) or ``A-B`` (from fraction A to B) -> (A, B)."""
    lo, _, hi = part.rpartition("-")
    return float(lo or 0), float(hi)


def main(argv: list[str]) -> None:
    if argv[1:2] == ["--child"]:
        child(argv[2], argv[3], int(argv[4]), argv[5], int(argv[6]), argv[7:8] == ["--where"])
        return
    args = argv[1:]
    where = "--where" in args
    if where:
        args.remove("--where")
    opt = {"--sinks": "parquet,none", "--row-group-mib": "16", "--rounds": "2", "--part": "1", "--repeat": "1"}
    for name in list(opt):
        if name in args:
            i = args.index(name)
            opt[name] = args[i + 1]
            del args[i:i + 2]
    env = dict(os.environ)
    env.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    print("| capture | sink | row group MiB | peak MiB (each round) | s |")
    print("|---|---|---:|---|---|")
    for capture in args:
        ordered = capture + ".by-connection.arrow"
        if not os.path.exists(ordered):
            order_by_connection(capture, ordered)
        for part in opt["--part"].split(","):
            for kind in opt["--sinks"].split(","):
                runs = []
                for _ in range(int(opt["--rounds"])):
                    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", ordered, kind,
                                        opt["--row-group-mib"], part, opt["--repeat"]] + ["--where"] * where,
                                       capture_output=True,
                                       text=True, env=env,
                                       check=True)
                    runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
                print("| %s (%d MiB)%s | %s | %s | %s | %s |" % (
                    os.path.basename(capture), os.path.getsize(capture) >> 20,
                    ("" if _fractions(part) == (0, 1) else ", %s of its ordered frames" % part)
                    + ("" if opt["--repeat"] == "1" else ", %s times" % opt["--repeat"]), kind,
                    opt["--row-group-mib"], ", ".join(str(r["peak_mib"]) for r in runs),
                    ", ".join(str(r["s"]) for r in runs)), flush=True)
                for r in runs if where else ():
                    print("    peak %d MiB at %.2f s in %s; highest of each tenth: %s"
                          % (r["peak_sample_mib"], r["peak_at_s"], r["peak_in"] or "-", r["tenths_mib"]), flush=True)


if __name__ == "__main__":
    main(sys.argv)
