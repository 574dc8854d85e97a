"""The Spark engine on a real standalone cluster (tests/spark_cluster.py:
a master and two workers on 127.0.0.1, executors running this interpreter):
captures by path, ``file://`` URI, folder, glob and list; every table from one
conversion of each capture; failures on executors in one line with nothing
written.  (The rows of every table against the local engine, on this cluster
and in ``local[2]``: tests/test_tables_readers.py.)"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mqcodec import synth
from mqcodec.convert import ConvertOptions, convert
from mqcodec.convert.tables import TABLES
from mqcodec.convert.sinks import read_table

pytestmark = pytest.mark.spark
#: the session is an application on the cluster (the ``spark`` fixture, tests/conftest.py)
ON_CLUSTER = pytest.mark.parametrize("spark", ["cluster"], indirect=True)


def _rows(folder, table):
    return sorted(read_table(str(folder), table).to_pylist(), key=repr)


def _same_tables(a, b):
    for table in TABLES:
        ra, rb = _rows(a, table), _rows(b, table)
        assert len(ra) == len(rb), table
        assert ra == rb, table


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    root = tmp_path_factory.mktemp("caps")
    (root / "in").mkdir()
    for i, seed in enumerate((21, 22, 23)):
        synth.write_capture(str(root / "in" / ("c%d.pcap" % i)), seed=seed, messages=12)
    (root / "in" / "_SUCCESS").write_bytes(b"")  # hidden: folders and globs leave it out
    return root


@ON_CLUSTER
def test_the_cluster_runs_the_session_on_two_executors(spark, spark_cluster):
    state = spark_cluster.state()
    assert state["aliveworkers"] == 2
    apps = [a for a in state["activeapps"] if a["name"].startswith("mqcodec-tests")]
    assert len(apps) == 1 and apps[0]["cores"] == 2
    assert spark.sparkContext.master == spark_cluster.url
    executors = spark.sparkContext._jsc.sc().getExecutorIds()
    assert executors.size() == 2
    # each task in a Python worker of an executor, not of the driver
    pids = set(spark.sparkContext.parallelize(range(8), 8).map(lambda _: os.getppid()).collect())
    assert os.getpid() not in pids and len(pids) >= 1


@ON_CLUSTER
def test_uris_folders_globs_lists_and_relative_paths_give_the_local_rows(spark, captures, tmp_path, monkeypatch):
    from mqcodec.spark.pipeline import convert as spark_convert

    files = [str(captures / "in" / ("c%d.pcap" % i)) for i in range(3)]
    convert(files, str(tmp_path / "local"))
    monkeypatch.chdir(captures)  # relative paths are the driver's
    for name, inputs in [("folder-uri", ["file://%s/in" % captures]),
                         ("list", ["in/c0.pcap", "file://%s/in/c[1]*.pcap" % captures, "in/c2.p?ap"])]:
        out = tmp_path / name
        report = spark_convert(inputs, "file://%s" % out, spark=spark)
        assert [c["capture"] for c in report["captures"]] == ["c0.pcap", "c1.pcap", "c2.pcap"], name
        _same_tables(tmp_path / "local", out)
    # the data source: a list, a folder
    from mqcodec.spark.datasource import register

    register(spark)
    n = read_table(str(tmp_path / "local"), "mq_messages").num_rows
    assert spark.read.format("mqcodec").load([files[0], "file://" + files[1], files[2]]).count() == n
    assert spark.read.format("mqcodec").load(str(captures / "in")).count() == n
    with pytest.raises(Exception, match="no capture file"):
        spark.read.format("mqcodec").load("file://%s/in/*.pcapng" % captures).count()


@ON_CLUSTER
def test_all_rows_are_each_tables_rows(spark, captures):
    from mqcodec.spark.datasource import register

    register(spark)
    path = str(captures / "in" / "c1.pcap")
    every = spark.read.format("mqcodec").option("table", "all").load(path).cache()
    for table in TABLES + ("captures",):
        one = spark.read.format("mqcodec").option("table", table).load(path)
        mine = every.where(every["table"] == table).select(table + ".*")
        assert mine.columns == one.columns
        if table != "captures":
            a = sorted(map(repr, (r.asDict(recursive=True) for r in mine.collect())))
            b = sorted(map(repr, (r.asDict(recursive=True) for r in one.collect())))
            assert a == b and a, table
    every.unpersist()


# --------------------------------------------------------------------------- one conversion
class _Opens:
    """Counts the opens of files (Linux inotify, IN_OPEN) while it runs."""

    IN_OPEN = 0x20

    def __init__(self, paths):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK)
        if self.fd < 0:
            pytest.skip("no inotify")
        self.wd = {libc.inotify_add_watch(self.fd, str(p).encode(), self.IN_OPEN): Path(p).name for p in paths}
        self.counts = {name: 0 for name in self.wd.values()}

    def collect(self):
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return self.counts
            i = 0
            while i < len(data):
                wd, mask, _cookie, length = struct.unpack_from("iIII", data, i)
                if mask & self.IN_OPEN and wd in self.wd:
                    self.counts[self.wd[wd]] += 1
                i += 16 + length

    def close(self):
        os.close(self.fd)


@ON_CLUSTER
def test_every_table_comes_from_one_conversion_of_each_capture(spark, captures, tmp_path):
    from mqcodec.spark.pipeline import convert as spark_convert

    files = [captures / "in" / ("c%d.pcap" % i) for i in range(3)]
    opens = _Opens(files)
    try:
        opens.collect()
        convert([str(files[0])], str(tmp_path / "local"))
        once = opens.collect()["c0.pcap"]  # opens of one conversion (the local engine's)
        assert once >= 1
        opens.counts = dict.fromkeys(opens.counts, 0)
        spark_convert([str(f) for f in files], str(tmp_path / "spark"), spark=spark)
        got = opens.collect()
    finally:
        opens.close()
    # 4 tables + the reports, one conversion each before: 5x; now once
    assert got == {f.name: once for f in files}, got


# --------------------------------------------------------------------------- failures
@ON_CLUSTER
def test_partition_dates_are_utc_in_any_session_time_zone(spark, tmp_path):
    from mqcodec.spark.pipeline import convert as spark_convert

    sim = tmp_path / "sim.pcap"
    synth.write_capture(str(sim), seed=4, messages=5)
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Pacific/Kiritimati")  # UTC+14
    try:
        spark_convert([str(sim)], str(tmp_path / "o"), spark=spark, partition_by="date")
        assert spark.conf.get("spark.sql.session.timeZone") == "Pacific/Kiritimati"  # left as it was
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)
    for table in ("mq_messages", "msmq_packets", "mq_calls"):
        dates = {f.name for f in (tmp_path / "o" / table).iterdir() if f.is_dir()}
        utc = {r["ts"].strftime("date=%Y-%m-%d") for r in read_table(str(tmp_path / "o"), table).to_pylist()}
        assert dates == utc and dates, table


@ON_CLUSTER
def test_summary_has_the_local_engines_frame_gap_and_resync_counters(spark, tmp_path):
    from mqcodec.spark.pipeline import convert as spark_convert

    sim = tmp_path / "sim.pcap"
    synth.write_capture(str(sim), seed=31, messages=20)
    local = convert([str(sim)], str(tmp_path / "l"), ConvertOptions())["summary"]
    remote = spark_convert([str(sim)], str(tmp_path / "s"), spark=spark)["summary"]
    assert remote.pop("engine") == "spark"
    assert remote.pop("threads_per_task") == 1   # executors of one core
    assert remote == local
    for key in ("frames", "messages"):
        assert remote[key] > 0, key


def _cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "mqcodec", *map(str, args)], capture_output=True,
                          env=env, timeout=timeout)


def _cluster_args(cluster):
    out = ["--master", cluster.url]
    for k, v in cluster.app_conf.items():
        out += ["--conf", "%s=%s" % (k, v)]
    return out


@ON_CLUSTER
def test_cli_on_the_cluster_then_an_executor_failure_in_one_line_and_nothing_written(
        spark, spark_cluster, captures, tmp_path):
    inputs = [captures / "in" / "c0.pcap", captures / "in" / "c1.pcap"]
    good = tmp_path / "good"
    r = _cli("pcap2parquet", *inputs, "-o", "file://%s" % good, "--engine", "spark", *_cluster_args(spark_cluster))
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["summary"]["engine"] == "spark" and report["summary"]["frames"] > 0
    assert sorted(os.listdir(good)) == sorted(TABLES)
    local = convert([str(p) for p in inputs], str(tmp_path / "local"))
    assert report["summary"]["threads_per_task"] == 1   # two captures, executors of one core
    assert {k: v for k, v in report["summary"].items() if k not in ("engine", "threads_per_task")} == local["summary"]

    # executors whose Python cannot import mqcodec: a broken copy first on the path of the
    # executors' Python workers (their working folder is the worker's app-*/<executor id>/;
    # on the driver, where the data source is planned, the copy steps aside): the job fails
    # on the executors; the CLI says why in one line and writes nothing
    shadow = tmp_path / "shadow" / "mqcodec"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "import importlib, os, sys\n"
        "if os.sep + 'app-' in os.getcwd():\n"
        "    raise ImportError('mqcodec broken on purpose on this executor')\n"
        "sys.path.remove(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
        "del sys.modules['mqcodec']\n"
        "sys.modules['mqcodec'] = importlib.import_module('mqcodec')\n")
    out = tmp_path / "bad"
    # (one attempt per task: the failure is the same on every attempt, retries only cost time)
    r = _cli("pcap2parquet", *inputs, "-o", out, "--engine", "spark", *_cluster_args(spark_cluster),
             "--conf", "spark.executorEnv.PYTHONPATH=%s" % shadow.parent, "--conf", "spark.task.maxFailures=1")
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 5, err[-3000:]
    ours = [ln for ln in err.splitlines() if ln.startswith("mqcodec")]
    assert len(ours) == 1, err[-3000:]
    assert "the Spark job failed" in ours[0] and "mqcodec broken on purpose on this executor" in ours[0], ours
    assert "Traceback" not in err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".bad.")]  # no temporary folder left


@ON_CLUSTER
def test_a_failed_job_leaves_no_partial_output_and_keeps_the_old_tables(spark, captures, tmp_path):
    from mqcodec.spark import pipeline

    out = tmp_path / "o"
    pipeline.convert([str(captures / "in" / "c0.pcap")], str(out), spark=spark)
    before = _rows(out, "mq_messages")
    # an option the executors cannot parse (ports are read on the executors): the job fails there
    with pytest.raises(pipeline.SparkJobFailed, match="ValueError: invalid literal for int") as info:
        pipeline.convert([str(captures / "in" / "c1.pcap")], str(out), spark=spark, mq_ports=("x1414",))
    assert "\n" not in str(info.value)
    assert _rows(out, "mq_messages") == before
    assert os.listdir(tmp_path) == ["o"]  # no temporary folder left


def test_one_line_of_a_python_worker_traceback():
    from mqcodec.spark.pipeline import one_line

    text = ("An error occurred while calling o88.collectToPython.\n"
            ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 "
            "times, most recent failure: Lost task 0.0 in stage 3.0 (TID 3) (127.0.0.1 executor 1): "
            "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
            '  File "/x/worker.py", line 3, in main\n    raise ValueError("x")\n'
            "ModuleNotFoundError: No module named 'mqcodec'\n\n"
            "\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(x.scala:1)\n")
    assert one_line(Exception(text)) == "ModuleNotFoundError: No module named 'mqcodec'"
    assert one_line(Exception("An error occurred while calling o1.parquet.\n: "
                              "org.apache.spark.SparkException: Master removed our application: KILLED\n\tat x")) \
        == "Master removed our application: KILLED"
