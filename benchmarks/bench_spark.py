"""The Spark paths side by side on the same Arrow data (PCF bodies), and
the capture conversion through --engine spark vs --engine local.

Rows (group "spark"; records = PCF messages):
  batch direct         - mqcodec.batch.decode_pcf_batch on the same Arrow array, in this process
  mapInArrow           - mqcodec.spark.decode_column (the adapter's default fast path)
  arrow_udf            - mqcodec.spark.arrow_decoder
  pandas_udf           - mqcodec.spark.pandas_decoder
Rows (group "engine"; records = frames): pcap2parquet local, pcap2parquet spark.

Run:  .venv/bin/python -m pytest benchmarks/bench_spark.py --benchmark-only
Each Spark row runs a job that decodes every row and counts the results
(noop sink), so it includes the JVM<->Python Arrow transfer; the difference
to "batch direct" is the transfer and task overhead.
"""
import os
import shutil
import sys

import pytest

import datasets
from conftest import record

N = int(os.environ.get("MQCODEC_BENCH_SPARK_N", "100000"))


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    from mqcodec.spark.session import get_session

    os.environ["PYSPARK_PYTHON"] = sys.executable
    s = get_session("local[1]", app_name="mqcodec-bench")
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def data(spark):
    import pyarrow as pa

    buf, offs = datasets.tiled(N)
    arr = pa.Array.from_buffers(pa.large_binary(), N, [None, pa.py_buffer(offs), pa.py_buffer(buf)])
    df = spark.createDataFrame(pa.table({"payload": arr}).to_pandas()).repartition(1).cache()
    df.count()
    return arr, df, buf.nbytes


def _run(df):
    df.write.format("noop").mode("overwrite").save()


def test_direct(benchmark, data):
    from mqcodec import batch

    arr, _, nbytes = data
    benchmark.pedantic(batch.decode_pcf_batch, args=(arr,), rounds=3)
    record(benchmark, "spark:batch direct", N, nbytes)


def test_map_in_arrow(benchmark, data):
    from mqcodec.spark import decode_column

    _, df, nbytes = data
    benchmark.pedantic(_run, args=(decode_column(df, "payload", "pcf"),), rounds=2)
    record(benchmark, "spark:mapInArrow", N, nbytes)


def test_arrow_udf(benchmark, data):
    from mqcodec.spark import arrow_decoder

    _, df, nbytes = data
    benchmark.pedantic(_run, args=(df.select(arrow_decoder("pcf")("payload")),), rounds=2)
    record(benchmark, "spark:arrow_udf", N, nbytes)


def test_pandas_udf(benchmark, data):
    from mqcodec.spark import pandas_decoder

    _, df, nbytes = data
    benchmark.pedantic(_run, args=(df.select(pandas_decoder("pcf")("payload")),), rounds=2)
    record(benchmark, "spark:pandas_udf", N, nbytes)


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    from mqcodec import synth

    path = tmp_path_factory.mktemp("cap") / "synth.pcap"
    frames = synth.write_capture(str(path), seed=1, messages=int(os.environ.get("MQCODEC_BENCH_CAPTURE_MESSAGES",
                                                                                  "3000")))
    return str(path), frames, os.path.getsize(path)


def test_engine_local(benchmark, capture, tmp_path):
    from mqcodec.pcap2parquet import convert

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
