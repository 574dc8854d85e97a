"""One big capture over a Spark standalone cluster (``--split-size``): 2 workers
of 1 core against 1 worker of 1 core, both runs in one sitting (issue 17's
target: >= 1.7x).

    MQCODEC_SPLIT_BENCH_MB=2048 .venv/bin/python -m pytest -q benchmarks/bench_spark_split.py --benchmark-only

The capture is the simulator's (``mqcodec.synth.write_capture``, seed 1) of about
``MQCODEC_SPLIT_BENCH_MB`` MiB (default 2048), written once under
``$MQCODEC_BENCH_DIR`` (default /tmp/mqcodec-bench); the cluster is
tests/spark_cluster.py's, started for each row with the row's workers (one core
each, 1 GiB), the application taking every core; ranges of 128 MiB
(``MQCODEC_SPLIT_BENCH_RANGE_MB``); ``MQCODEC_SPLIT_BENCH_CAPTURE=tiled`` takes instead
the simulator's 2,000-message capture tiled to the size, each copy on connections of its
own (bench_resources' growth capture: no connection dominates); the tasks write the Parquet files
(``MQCODEC_SPLIT_BENCH_WRITERS=tasks``, the default for a local output) or Spark's
writer does (``spark``; ``tasks,spark`` for both); ``MQCODEC_SPLIT_BENCH_CONF``
("key=value;key=value") adds Spark settings to the session's; ``MQCODEC_SPLIT_BENCH_COLUMNS``
("TABLE=COL,COL;TABLE=COL") gives the job a column selection. Each row is one round: the whole job, Parquet
written to a temporary folder. The summary prints each row's seconds and the
2-worker speed-up and each row's busy CPU seconds of the whole machine
(``extra_info["cpu_s"]``, from /proc/stat: a 1-worker row that keeps more than
one core busy bounds what a second worker can add on a 2-core machine); ``extra_info`` also
holds the job's summary (ranges, tasks, shuffled bytes, the Python workers' peak memory) and
the executors' peak memory (JVM heap, JVM and Python resident memory, from the driver's
REST API), which must not grow with the capture (issue 17).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

MB = int(os.environ.get("MQCODEC_SPLIT_BENCH_MB", "2048"))
RANGE_MB = int(os.environ.get("MQCODEC_SPLIT_BENCH_RANGE_MB", "128"))
#: simulator bytes per message (whole conversations, both protocols), measured on seed 1
BYTES_PER_MESSAGE = 2930
TIMES: dict = {}
CPU: dict = {}
PEAKS: dict = {}


@pytest.fixture(scope="module")
def capture():
    from mqcodec import synth

    root = Path(os.environ.get("MQCODEC_BENCH_DIR", "/tmp/mqcodec-bench"))
    root.mkdir(parents=True, exist_ok=True)
    path = root / ("split-%dmb%s.pcap" % (MB, "-tiled" if TILED else ""))
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        if TILED:   # bench_resources' growth capture: the 2,000-message capture, copies on their own connections
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from bench_resources import write_growth

            write_growth(str(tmp), MB)
        else:
            synth.write_capture(str(tmp), seed=1, messages=MB * 1024 * 1024 // BYTES_PER_MESSAGE)
        tmp.rename(path)
    return str(path)


#: MQCODEC_SPLIT_BENCH_CAPTURE=tiled: the simulator's 2,000-message capture tiled up to the size,
#: each copy on connections of its own (many connections of a few MiB, as many clients make);
#: default: one simulation of the size, 58.6 % of whose bytes are one connection
TILED = os.environ.get("MQCODEC_SPLIT_BENCH_CAPTURE", "") == "tiled"


WRITERS = os.environ.get("MQCODEC_SPLIT_BENCH_WRITERS", "tasks").split(",")
#: MQCODEC_SPLIT_BENCH_ROW_GROUPS=N: the job's row_groups_per_file (default: ConvertOptions')
OPTIONS = ({"row_groups_per_file": int(os.environ["MQCODEC_SPLIT_BENCH_ROW_GROUPS"])}
           if os.environ.get("MQCODEC_SPLIT_BENCH_ROW_GROUPS") else {})
#: "TABLE=COL,COL;TABLE=COL": the job's column selection (pcap2parquet --columns), default none
COLUMNS = tuple("%s.%s" % (spec.partition("=")[0].strip(), c.strip())
                for spec in os.environ.get("MQCODEC_SPLIT_BENCH_COLUMNS", "").split(";") if spec.strip()
                for c in spec.partition("=")[2].split(",") if c.strip())


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("workers", [1, 2])
def test_split_capture_on_the_cluster(benchmark, capture, workers, writer, tmp_path):
    from spark_cluster import StandaloneCluster

    from mqcodec.spark import pipeline
    from mqcodec.spark.session import get_session

    cpu0 = _cpu()
    with StandaloneCluster(tmp_path / "cluster", workers=workers, cores=1) as cluster:
        conf = dict(cluster.app_conf)
        conf.update({"spark.cores.max": str(workers), "spark.executor.memory": "768m",
                     "spark.sql.shuffle.partitions": str(4 * workers), "spark.default.parallelism": str(4 * workers),
                     "spark.task.maxFailures": "4",
                     # executors' peak memory, JVM and Python process trees (the REST API's peakMemoryMetrics)
                     "spark.executor.processTreeMetrics.enabled": "true", "spark.ui.enabled": "true",
                     "spark.ui.host": "127.0.0.1",
                     "spark.executor.metrics.pollingInterval": "1s"})
        # more settings for a run: MQCODEC_SPLIT_BENCH_CONF="key=value;key=value"
        conf.update(kv.split("=", 1) for kv in os.environ.get("MQCODEC_SPLIT_BENCH_CONF", "").split(";") if kv)
        spark = get_session(master=cluster.url, app_name="mqcodec-bench-split", conf=conf)
        spark.sparkContext.setLogLevel("ERROR")
        out = tempfile.mkdtemp(prefix="split-out-", dir=str(tmp_path))
        summary: dict = {}

        def job():
            shutil.rmtree(out, ignore_errors=True)
            t = time.perf_counter()
            report = pipeline.convert([capture], out, spark=spark, split_size=RANGE_MB << 20,
                                      write_in_tasks=writer == "tasks", columns=COLUMNS, **OPTIONS)
            TIMES[workers, writer] = time.perf_counter() - t
            summary.update(report["summary"])

        try:
            benchmark.pedantic(job, rounds=1, iterations=1)
            PEAKS[workers, writer] = _executor_peaks(spark)
        finally:
            spark.stop()
        benchmark.extra_info.update({k: summary.get(k) for k in ("ranges", "tasks", "shuffled_bytes", "frames",
                                                                 "messages", "calls", "python_peak_rss_mib")})
        benchmark.extra_info.update(PEAKS[workers, writer])
        PEAKS[workers, writer]["python_peak_rss_mib (job summary)"] = summary.get("python_peak_rss_mib")
        benchmark.extra_info["capture_bytes"] = os.path.getsize(capture)
    # the machine's busy CPU during the row (this process, the master, the workers, their executors
    # and Python workers; nothing else should run), cluster start and stop included
    CPU[workers, writer] = _cpu() - cpu0
    benchmark.extra_info["cpu_s"] = round(CPU[workers, writer], 1)


def _executor_peaks(spark) -> dict:
    """The largest of the executors' peak memory figures (MiB) from the driver's REST API:
    JVM heap, the JVM's and the Python workers' resident memory (process trees)."""
    import json
    import urllib.request

    sc = spark.sparkContext
    url = "%s/api/v1/applications/%s/allexecutors" % (sc.uiWebUrl, sc.applicationId)
    with urllib.request.urlopen(url, timeout=30) as r:
        executors = [e for e in json.load(r) if e["id"] != "driver"]
    out = {}
    for key in ("JVMHeapMemory", "ProcessTreeJVMRSSMemory", "ProcessTreePythonRSSMemory"):
        values = [(e.get("peakMemoryMetrics") or {}).get(key, 0) for e in executors]
        out["executor_peak_%s_mib" % key] = max(values, default=0) >> 20
    return out


def _cpu() -> float:
    """Busy CPU seconds of the whole machine since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def teardown_module(module):
    for writer in WRITERS:
        if (1, writer) in TIMES and (2, writer) in TIMES:
            print("\nsplit capture of %d MiB, %s writing: 1 worker %.1f s, 2 workers %.1f s: x%.2f"
                  % (MB, writer, TIMES[1, writer], TIMES[2, writer], TIMES[1, writer] / TIMES[2, writer]))
    for key in sorted(CPU):
        print("  %d worker(s), %s writing: %.0f CPU s for the row (cluster start and stop included)"
              % (key[0], key[1], CPU[key]))
    for key in sorted(PEAKS):
        print("  %d worker(s), %s writing, peak MiB: %s" % (key[0], key[1], PEAKS[key]))
