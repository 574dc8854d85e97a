"""The Spark paths side by side on the same rows (PCF trace-route bodies), each
against the identity of its mechanism, and the capture conversion through
--engine spark vs --engine local.

Rows (records = PCF messages; every Spark row is a job over the same cached
DataFrame, ``local[2]``, two partitions, written to the ``noop`` sink so every
output value is converted by the JVM):
  spark-arrow:identity      - ``mapInArrow`` handing every batch back unchanged
  spark-arrow:decode_column - mqcodec.spark.decode_column (same rows + the decoded struct)
  spark-arrow:explode       - mqcodec.spark.explode_pcf_parameters (one row per parameter,
                              49 per trace-route message; no identity of its own)
  spark-pandas:identity     - a ``pandas_udf`` returning its Series of bytes unchanged
  spark-pandas:pandas_decoder - mqcodec.spark.pandas_decoder
  spark-direct:batch direct - mqcodec.batch.decode_pcf_batch in this process, 4,096 records
                              a call (Spark's maxRecordsPerBatch)
The summary's "x identity" column is each row's rate over its group's identity row.
Rows (group "engine"; records = frames): pcap2parquet local, pcap2parquet spark.

Run:  .venv/bin/python -m pytest -q benchmarks/bench_spark.py --benchmark-only -k "not engine"
or, the Spark rows interleaved round by round (what BENCHMARKS.md records: on a shared
machine the load changes between rows run one after the other):
      .venv/bin/python benchmarks/bench_spark.py
(MQCODEC_BENCH_SPARK_N records, default 200,000; MQCODEC_BENCH_SPARK_ROUNDS, default 3).
The Spark engine against the local engine (:func:`engine_main`):
      .venv/bin/python benchmarks/bench_spark.py engine
MSMQ packets through decode_column, every field against a dozen (``fields=``), each against
the identity ``mapInArrow`` on the same rows (:func:`msmq_main`):
      .venv/bin/python benchmarks/bench_spark.py msmq
"""
import os
import shutil
import sys

import pytest

import datasets
from conftest import record

N = int(os.environ.get("MQCODEC_BENCH_SPARK_N", "200000"))
ROUNDS = int(os.environ.get("MQCODEC_BENCH_SPARK_ROUNDS", "3"))
BATCH = 4096
WARMUP = int(os.environ.get("MQCODEC_BENCH_SPARK_WARMUP", "1"))


def make_session():
    from mqcodec.spark.session import get_session

    os.environ["PYSPARK_PYTHON"] = sys.executable
    s = get_session("local[2]", app_name="mqcodec-bench", conf={"spark.driver.memory": "2g"})
    s.sparkContext.setLogLevel("ERROR")
    return s


def make_data(spark, n: int = N, tiled=None):
    """(Arrow array, cached DataFrame (id long, payload binary) in two partitions, bytes);
    ``tiled``: (buffer, offsets) of the records (default: the trace-route PCF bodies)."""
    import pyarrow as pa

    buf, offs = tiled or datasets.tiled(n)
    arr = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offs), pa.py_buffer(buf)])
    table = pa.table({"id": pa.array(range(n), pa.int64()), "payload": arr})
    df = spark.createDataFrame(table).repartition(2).cache()
    df.count()
    return arr, df, buf.nbytes


def _identity_batches(batches):
    yield from batches


def jobs(df) -> dict:
    """row name -> the DataFrame its job writes (to the noop sink)."""
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    from mqcodec.spark import decode_column, explode_pcf_parameters, pandas_decoder

    def same(s: pd.Series) -> pd.Series:
        return s

    same_udf = pandas_udf(same, "binary")  # type: ignore[call-overload]
    return {
        "spark-arrow:identity": df.mapInArrow(_identity_batches, df.schema),
        "spark-arrow:decode_column": decode_column(df, "payload", "pcf"),
        "spark-arrow:explode": explode_pcf_parameters(df, "payload", keep=["id"]),
        "spark-pandas:identity": df.select("id", same_udf("payload").alias("p")),
        "spark-pandas:pandas_decoder": df.select("id", pandas_decoder("pcf")("payload").alias("p")),
    }


def _run(df):
    df.write.format("noop").mode("overwrite").save()


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    s = make_session()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def data(spark):
    return make_data(spark)


@pytest.fixture(scope="module")
def spark_jobs(data):
    return jobs(data[1])


def test_direct(benchmark, data):
    from mqcodec import batch

    arr, _, nbytes = data

    def run():
        for i in range(0, len(arr), BATCH):
            batch.decode_pcf_batch(arr.slice(i, BATCH))

    benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=WARMUP)
    record(benchmark, "spark-direct:batch direct", N, nbytes)


@pytest.mark.parametrize("row", ["spark-arrow:identity", "spark-arrow:decode_column", "spark-arrow:explode",
                                 "spark-pandas:identity", "spark-pandas:pandas_decoder"])
def test_spark_row(benchmark, data, spark_jobs, row):
    benchmark.pedantic(_run, args=(spark_jobs[row],), rounds=ROUNDS, warmup_rounds=WARMUP)
    record(benchmark, row, N, data[2])


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    from mqcodec import synth

    path = tmp_path_factory.mktemp("cap") / "synth.pcap"
    frames = synth.write_capture(str(path), seed=1, messages=int(os.environ.get("MQCODEC_BENCH_CAPTURE_MESSAGES",
                                                                                  "3000")))
    return str(path), frames, os.path.getsize(path)


def test_engine_local(benchmark, capture, tmp_path):
    from mqcodec.convert import convert

    path, frames, size = capture
    benchmark.pedantic(convert, args=([path], str(tmp_path / "l")), rounds=2)
    record(benchmark, "engine:pcap2parquet local", frames, size)


def test_engine_spark(benchmark, capture, tmp_path, spark):
    from mqcodec.spark.pipeline import convert

    path, frames, size = capture

    def run():
        shutil.rmtree(tmp_path / "s", ignore_errors=True)
        return convert([path], str(tmp_path / "s"), spark=spark)

    benchmark.pedantic(run, rounds=2)
    record(benchmark, "engine:pcap2parquet spark", frames, size)


def msmq_jobs(df) -> dict:
    """row name -> job, MSMQ packets: the identity, every field, the dozen of bench_msmq."""
    from bench_msmq import DOZEN

    from mqcodec.spark import decode_column

    return {
        "spark-arrow:identity": df.mapInArrow(_identity_batches, df.schema),
        "spark-arrow:decode_column msmq, every field": decode_column(df, "payload", "msmq"),
        "spark-arrow:decode_column msmq, fields= a dozen": decode_column(df, "payload", "msmq",
                                                                         fields=[f for f in DOZEN if f != "record"]),
    }


def msmq_main() -> None:
    """:func:`main` over MSMQ packets (bench_msmq's simulated sessions, tiled to N)."""
    from bench_msmq import _tiled

    main(data=lambda spark: make_data(spark, N, _tiled(N)), make_jobs=msmq_jobs)


def main(data=None, make_jobs=None) -> None:
    """The Spark rows interleaved (one round of every row, then the next round),
    so a change in the machine's load hits every row alike; prints the table of
    BENCHMARKS.md.  ``python benchmarks/bench_spark.py`` (N and ROUNDS as above)."""
    import statistics
    import time

    spark = make_session()
    _, df, nbytes = (data or make_data)(spark)
    todo = (make_jobs or jobs)(df)
    times: dict = {name: [] for name in todo}
    for name, job in todo.items():          # warm-up: worker start, imports
        _run(job)
    for _ in range(ROUNDS):
        for name, job in todo.items():
            t = time.perf_counter()
            _run(job)
            times[name].append(time.perf_counter() - t)
    spark.stop()
    print("%d records, %.1f MB, %d interleaved rounds (seconds per round: %s)" % (
        N, nbytes / 1e6, ROUNDS, "; ".join("%s %s" % (k, " ".join("%.2f" % x for x in v)) for k, v in times.items())))
    print("| row | median s | records/s | x identity (medians) | x identity (best rounds) |")
    print("|---|---:|---:|---:|---:|")
    for name, ts in times.items():
        base = times[name.split(":")[0] + ":identity"]
        med = statistics.median(ts)
        print("| %s | %.2f | %.0f | %.2f | %.2f |" % (name, med, N / med, statistics.median(base) / med,
                                                       min(base) / min(ts)))


def engine_main() -> None:
    """``--engine spark`` against the local engine on the simulator capture
    (MQCODEC_BENCH_CAPTURE_MESSAGES, default 20,000 here), rounds interleaved:
    in one warm session (``local[2]``, workers started; the engine's default
    threads per task, and one thread a task) against ``convert(threads=1)`` in
    this process, on one capture and on two copies of it; then whole processes (``python -m mqcodec pcap2parquet``), Spark's
    start included.  ``python benchmarks/bench_spark.py engine``."""
    import statistics
    import subprocess
    import tempfile
    import time

    from mqcodec import synth
    from mqcodec.convert import ConvertOptions, convert
    from mqcodec.spark import pipeline

    messages = int(os.environ.get("MQCODEC_BENCH_CAPTURE_MESSAGES", "20000"))
    with tempfile.TemporaryDirectory(prefix="mqcodec-bench-") as tmp:
        one = os.path.join(tmp, "a.pcap")
        frames = synth.write_capture(one, seed=1, messages=messages)
        two = os.path.join(tmp, "b.pcap")
        shutil.copyfile(one, two)
        spark = make_session()
        spark.sparkContext.parallelize([1, 2], 2).map(lambda x: x).collect()   # the workers started
        # (the engine's default threads per task: 2 for one capture on local[2], 1 for two)
        rows = {"spark, 1 capture": lambda o: pipeline.convert([one], o, spark=spark),
                "spark threads=1, 1 capture": lambda o: pipeline.convert([one], o, spark=spark, threads=1),
                "local --threads 1, 1 capture": lambda o: convert([one], o, ConvertOptions(threads=1)),
                "spark, 2 captures": lambda o: pipeline.convert([one, two], o, spark=spark),
                "local --threads 1, 2 captures": lambda o: convert([one, two], o, ConvertOptions(threads=1))}
        times: dict = {k: [] for k in rows}
        for _ in range(ROUNDS + 1):
            for name, run in rows.items():
                out = os.path.join(tmp, "out")
                shutil.rmtree(out, ignore_errors=True)
                t = time.perf_counter()
                run(out)
                times[name].append(time.perf_counter() - t)
        spark.stop()
        print("%d frames a capture, warm session, %d rounds after a warm-up" % (frames, ROUNDS))
        print("| row | median s | x local, same captures |")
        print("|---|---:|---:|")
        for name, ts in times.items():
            local = times["local --threads 1, " + name.split(", ")[1]]
            print("| %s | %.2f | %.2f |" % (name, statistics.median(ts[1:]), statistics.median(local[1:])
                                            / statistics.median(ts[1:])))
        cmds = {"local --threads 1": ["--threads", "1"], "spark local[2]": ["--engine", "spark", "--master", "local[2]"]}
        procs: dict = {k: [] for k in cmds}
        for _ in range(ROUNDS):
            for name, extra in cmds.items():
                out = os.path.join(tmp, "out")
                shutil.rmtree(out, ignore_errors=True)
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "mqcodec", "pcap2parquet", one, "-o", out, *extra],
                               check=True, capture_output=True)
                procs[name].append(time.perf_counter() - t)
        print("whole process, 1 capture: " + "; ".join("%s %.2f s" % (k, statistics.median(v)) for k, v in procs.items()))


if __name__ == "__main__":
    {"engine": engine_main, "msmq": msmq_main}.get(" ".join(sys.argv[1:]), main)()
