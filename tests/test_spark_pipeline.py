"""The ``mqcodec`` data source's options and errors.  (``--engine spark``
against ``--engine local``, table by table and reader by reader, is
tests/test_tables_readers.py.)"""
import pytest

from mqcodec import synth

from conftest import CAPTURES
from mqcodec.convert.tables import TABLES, table_schema
from mqcodec.convert.sinks import read_table

pytestmark = pytest.mark.spark


def test_data_source_options_and_errors(tmp_path, spark):
    from mqcodec.spark.datasource import register

    register(spark)
    with pytest.raises(Exception, match="table"):
        spark.read.format("mqcodec").option("table", "nope").load(str(tmp_path)).schema
    with pytest.raises(Exception, match="no capture file"):
        spark.read.format("mqcodec").load(str(tmp_path / "*.pcap")).count()


def test_data_source_reads_every_table(tmp_path, spark):
    from mqcodec.convert import convert
    from mqcodec.spark.datasource import register

    register(spark)
    sim = tmp_path / "sim.pcap"
    synth.write_capture(str(sim), seed=12, messages=10)
    convert([str(sim)], str(tmp_path / "local"))
    for table in TABLES:
        df = spark.read.format("mqcodec").option("table", table).load(str(sim))
        assert df.columns == table_schema(table).names
        assert df.count() == read_table(str(tmp_path / "local"), table).num_rows > 0
    # one row per capture with its report; an unreadable input is reported, not fatal
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"\0" * 64)
    rows = spark.read.format("mqcodec").option("table", "captures").load("%s,%s" % (sim, junk)).collect()
    assert sorted(r["capture"] for r in rows) == ["junk.pcap", "sim.pcap"]
    assert '"captures not read": 1' in [r for r in rows if r["capture"] == "junk.pcap"][0]["report"]


def test_every_conversion_option_reaches_the_tasks(tmp_path, spark):
    """The engine's tasks convert with the options given, all of them (the
    report of each capture says which capture pipeline ran; ``raw`` keeps
    every message's bytes; another MQ port without detection by content finds
    no IBM MQ message on 1414), as the
    local engine with the same options object."""
    import dataclasses
    import json

    from mqcodec.convert import ConvertOptions, convert
    from mqcodec.spark import pipeline
    from mqcodec.spark.datasource import register

    from capture_inputs import pcap_bytes, reordered, simulator_packets

    sim = tmp_path / "sim.pcap"    # (segments swapped, some dropped and duplicated)
    sim.write_bytes(pcap_bytes(reordered(simulator_packets(12, 10), 5, swaps=60)))
    gaps = []
    for n, opts in enumerate((ConvertOptions(capture_impl="py", raw=True, chunk_messages=3, chunk_bytes=1024),
                              ConvertOptions(mq_ports=(1415,), detect_by_content=False, max_connections=5,
                                             buffer_budget=1 << 20),
                              ConvertOptions(tables=("pcf_parameters", "mq_calls"), max_closed=0,
                                             max_reassembly_bytes=1, max_reassembly_segments=1),
                              ConvertOptions(columns=("mq_messages.queue_name", "mq_messages.body_text",
                                                      "mq_calls.reason_name", "msmq_packets.label")))):
        local = convert([str(sim)], str(tmp_path / ("local%d" % n)), opts)
        remote = pipeline.convert([str(sim)], str(tmp_path / ("spark%d" % n)), opts, spark=spark)
        for table in TABLES:
            if table not in opts.tables:   # not made by either engine
                assert not (tmp_path / ("local%d" % n) / table).exists(), table
                assert not (tmp_path / ("spark%d" % n) / table).exists(), table
                continue
            ours = read_table(str(tmp_path / ("spark%d" % n)), table)
            theirs = read_table(str(tmp_path / ("local%d" % n)), table)
            assert ours.schema.names == theirs.schema.names == opts.schema(table).names, table
            got = ours.num_rows
            assert got == theirs.num_rows, table
            assert got > 0 or n == 1, table
        assert remote["summary"]["messages"] == local["summary"]["messages"]
        assert remote["summary"].get("gaps", 0) == local["summary"].get("gaps", 0)
        gaps.append(remote["summary"].get("gaps", 0))
        if opts.raw:
            raw = read_table(str(tmp_path / "spark0"), "mq_messages").column("raw")
            assert raw.null_count == 0 and len(raw) > 0
        elif n == 1:   # the IBM MQ traffic is on 1414, not recognised by its content: MSMQ rows only
            assert read_table(str(tmp_path / "spark1"), "mq_messages").num_rows == 0
            assert read_table(str(tmp_path / "spark1"), "msmq_packets").num_rows > 0
    # no room for a segment out of order (n = 2): the swapped segments' holes are gaps
    assert gaps[2] > gaps[3] > 0
    # the data source alone: one option per field, or all at once
    register(spark)
    # a selection naming other tables' columns too: the table read takes its own
    narrow = spark.read.format("mqcodec").option("columns", "mq_messages.queue_name, mq_messages.ts, "
                                                            "mq_calls.reason_name").load(str(sim))
    assert narrow.columns == ["message_key", "ts", "queue_name"]
    assert narrow.count() == read_table(str(tmp_path / "local0"), "mq_messages").num_rows
    calls = spark.read.format("mqcodec").option("table", "mq_calls").option(
        "columns", "mq_messages.queue_name,mq_calls.reason_name").load(str(sim))
    assert calls.columns == ["call_key", "reason_name"] and calls.count() > 0
    for reader in (spark.read.format("mqcodec").option("capture_impl", "py"),
                   spark.read.format("mqcodec").option("options", ConvertOptions(capture_impl="py").to_text())):
        report = json.loads(reader.option("table", "captures").load(str(sim)).collect()[0]["report"])
        assert "engine" not in report["captures"][0]        # the pure pipeline's report
    report = json.loads(spark.read.format("mqcodec").option("table", "captures").load(str(sim))
                        .collect()[0]["report"])
    if report["captures"][0].get("engine") is None:
        pytest.skip("compiled core not built")
    assert report["captures"][0]["engine"] == "compiled"
    with pytest.raises(Exception, match="raw: 'maybe' is not true or false"):
        spark.read.format("mqcodec").option("raw", "maybe").load(str(sim)).count()


@pytest.mark.parametrize("partition_by", [None, "date"])
def test_both_ways_of_writing_give_the_local_engines_files(tmp_path, spark, monkeypatch, partition_by):
    """A local output is written by the tasks themselves (the local engine's
    Parquet files, a part file per capture); any other goes through the data
    source and Spark's writer.  Both give the local engine's rows, summary
    and layout (the Spark writer forced here by making the output look
    remote to the engine)."""
    from mqcodec.convert import convert
    from mqcodec.spark import pipeline

    sims = []
    for seed in (12, 13):
        sims.append(tmp_path / ("sim%d.pcap" % seed))
        synth.write_capture(str(sims[-1]), seed=seed, messages=8)
    # and a capture with IBM MQ traffic only: no msmq_packets or pcf_parameters rows of its own
    inputs = [str(p) for p in sims] + [str(CAPTURES / "ibmmq_jms_client_1414.pcap")]
    local = convert(inputs, str(tmp_path / "local"), partition_by=partition_by)
    tasks = pipeline.convert(inputs, str(tmp_path / "tasks"), spark=spark, partition_by=partition_by)
    # a table no capture has rows of: one empty part file, as the local engine's
    only_real = pipeline.convert(inputs[2:], str(tmp_path / "tasks_real"), spark=spark, partition_by=partition_by)
    assert only_real["summary"]["messages"] > 0
    for table in ("msmq_packets", "pcf_parameters"):
        files = list((tmp_path / "tasks_real" / table).rglob("*.parquet"))
        assert [f.name for f in files] == ["part-00000-c000.parquet"] and read_table(str(tmp_path / "tasks_real"),
                                                                                 table).num_rows == 0
    original = pipeline._Output.__init__

    def remote(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.local = None

    monkeypatch.setattr(pipeline._Output, "__init__", remote)
    jvm = pipeline.convert(inputs, str(tmp_path / "jvm"), spark=spark, partition_by=partition_by)
    # a table without rows is a readable empty table through Spark's writer too
    pipeline.convert(inputs[2:], str(tmp_path / "jvm_real"), spark=spark, partition_by=partition_by)
    for table in ("msmq_packets", "pcf_parameters"):
        assert read_table(str(tmp_path / "jvm_real"), table).num_rows == 0
        assert spark.read.parquet(str(tmp_path / "jvm_real" / table)).count() == 0
    # the Spark writer writes the tables chosen, and only those
    chosen = pipeline.convert(inputs, str(tmp_path / "jvm_calls"), spark=spark, partition_by=partition_by,
                              tables=("mq_calls",))
    assert sorted(p.name for p in (tmp_path / "jvm_calls").iterdir() if not p.name.startswith(".")) == ["mq_calls"]
    assert sorted(read_table(str(tmp_path / "jvm_calls"), "mq_calls").to_pylist(), key=repr) == sorted(
        read_table(str(tmp_path / "local"), "mq_calls").to_pylist(), key=repr)
    assert chosen["summary"]["messages"] == local["summary"]["messages"]
    for got in (tasks, jvm):
        summary = dict(got["summary"])
        assert summary.pop("engine") == "spark"
        assert summary.pop("threads_per_task") == 1   # three captures on two task slots
        assert summary == local["summary"]
    for table in TABLES:
        want = sorted(read_table(str(tmp_path / "local"), table).to_pylist(), key=repr)
        assert want, table
        for engine in ("tasks", "jvm"):
            assert sorted(read_table(str(tmp_path / engine), table).to_pylist(), key=repr) == want, (engine, table)
    # the tasks' files: one part file per capture (and date) with rows, named by the capture's
    # index; none for a capture without rows of the table
    names = {p.name for p in (tmp_path / "tasks" / "pcf_parameters").iterdir()}
    assert names == {"part-00000-c000.parquet", "part-00001-c000.parquet"}
    assert {p.name for p in (tmp_path / "tasks" / "msmq_packets").rglob("*.parquet")} == names
    assert "part-00002-c000.parquet" in {p.name for p in (tmp_path / "tasks" / "mq_calls").rglob("*.parquet")}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jvm", "jvm_calls", "jvm_real", "local", "sim12.pcap",
                                                          "sim13.pcap", "tasks", "tasks_real"]


@pytest.mark.parametrize("write_in_tasks", [None, False])
def test_the_tasks_threads(tmp_path, spark, write_in_tasks):
    """``threads`` is each converting task's, overlapped as the local engine's:
    by default the slots one task per capture leaves idle (``local[2]``: one
    capture 2 threads, two captures 1), at most an executor's cores; given, as
    given, split jobs too.  The rows are the local engine's whatever the threads,
    whether the tasks write the files or Spark's writer does."""
    import dataclasses

    from mqcodec.convert import ConvertOptions, convert
    from mqcodec.spark import pipeline

    sims = []
    for seed in (21, 22):
        sims.append(str(tmp_path / ("sim%d.pcap" % seed)))
        synth.write_capture(sims[-1], seed=seed, messages=40)
    # small chunks: the render thread and the writers start (a quarter of chunk_messages rows)
    small = ConvertOptions(chunk_messages=8)
    assert spark.sparkContext.defaultParallelism == 2
    # (the session the tests share may carry spark.executor.cores = 1 from another test's
    # settings: task_threads reads it, test_an_executors_cores_bound_the_tasks_threads)
    one = 1 if spark.sparkContext.getConf().get("spark.executor.cores", None) == "1" else 2
    assert pipeline.task_threads(spark, 1) == one and pipeline.task_threads(spark, 2) == 1
    assert pipeline.task_threads(spark, None) == 1          # a split job: a task per slot
    for inputs, threads, want, split in ((sims[:1], None, one, None), (sims, None, 1, None), (sims, 3, 3, None),
                                         (sims[:1], 2, 2, 1 << 16)):
        opts = dataclasses.replace(small, threads=threads)
        name = "%d-%s-%s" % (len(inputs), threads, split)
        local = convert(inputs, str(tmp_path / ("local" + name)), dataclasses.replace(small, threads=1))
        got = pipeline.convert(inputs, str(tmp_path / ("spark" + name)), opts, spark=spark, split_size=split,
                               write_in_tasks=write_in_tasks)
        assert got["summary"]["threads_per_task"] == want, name
        assert got["summary"]["messages"] == local["summary"]["messages"] > 100, name
        for table in TABLES:
            theirs = sorted(read_table(str(tmp_path / ("local" + name)), table).to_pylist(), key=repr)
            assert theirs, (name, table)
            assert sorted(read_table(str(tmp_path / ("spark" + name)), table).to_pylist(), key=repr) == theirs, \
                (name, table)


def test_an_executors_cores_bound_the_tasks_threads():
    """(No JVM: a session's two figures, as pyspark gives them.)"""
    from mqcodec.spark.pipeline import task_threads

    class Session:
        def __init__(self, slots, conf):
            self.sparkContext = self
            self.defaultParallelism = slots
            self.conf = conf

        def getConf(self):
            return self

        def get(self, key, default=None):
            return self.conf.get(key, default)

    assert task_threads(Session(16, {}), 1) == 5            # a render thread and a writer per table
    assert task_threads(Session(16, {}), 4) == 4
    assert task_threads(Session(16, {"spark.executor.cores": "4"}), 1) == 4
    assert task_threads(Session(16, {"spark.executor.cores": "4", "spark.task.cpus": "2"}), 1) == 2
    assert task_threads(Session(16, {"spark.executor.cores": "1"}), 1) == 1
    assert task_threads(Session(3, {}), 2) == 1 and task_threads(Session(1, {}), 5) == 1


def test_a_task_that_cannot_write_fails_the_job(tmp_path, spark):
    """An output the tasks cannot write (here its folder's parent is a file)
    fails the job with the writing error, in one line, as it fails the local
    engine (not "no input could be read")."""
    from mqcodec.convert import convert
    from mqcodec.spark import pipeline

    sim = tmp_path / "sim.pcap"
    synth.write_capture(str(sim), seed=12, messages=4)
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    with pytest.raises(OSError, match="Not a directory"):
        convert([str(sim)], str(blocker / "out"))
    with pytest.raises(pipeline.SparkJobFailed, match="Not a directory") as info:
        pipeline.convert([str(sim)], str(blocker / "out"), spark=spark)
    assert "\n" not in str(info.value)
    assert blocker.read_text() == "not a folder"


@pytest.mark.parametrize("compression", ["snappy", "uncompressed"])
def test_every_writer_writes_the_compression_chosen(tmp_path, spark, compression):
    """``compression`` reaches every writer of a job: the local engine's, the
    tasks' files (a task per capture, and with ``split_size``) and Spark's
    writer; the rows are the same whichever."""
    import pyarrow.parquet as pq

    from mqcodec.convert import ConvertOptions, convert
    from mqcodec.spark import pipeline

    sim = tmp_path / "sim.pcap"
    synth.write_capture(str(sim), seed=12, messages=8)
    opts = ConvertOptions(compression=compression)
    convert([str(sim)], str(tmp_path / "local"), opts)
    pipeline.convert([str(sim)], str(tmp_path / "tasks"), opts, spark=spark)
    pipeline.convert([str(sim)], str(tmp_path / "split"), opts, spark=spark, split_size=64 << 10)
    pipeline.convert([str(sim)], str(tmp_path / "jvm"), opts, spark=spark, write_in_tasks=False)
    # a capture with no MSMQ and no PCF: those tables are the driver's empty part files
    pipeline.convert([str(CAPTURES / "ibmmq_jms_client_1414.pcap")], str(tmp_path / "empty"), opts, spark=spark)
    assert read_table(str(tmp_path / "empty"), "msmq_packets").num_rows == 0
    want = compression.upper()
    for engine in ("local", "tasks", "split", "jvm", "empty"):
        codecs = set()
        for f in (tmp_path / engine).rglob("*.parquet"):
            meta = pq.ParquetFile(f).metadata
            codecs |= {meta.row_group(i).column(j).compression
                       for i in range(meta.num_row_groups) for j in range(meta.num_columns)}
        assert codecs == {want}, engine
        for table in TABLES if engine != "empty" else ():
            assert sorted(read_table(str(tmp_path / engine), table).to_pylist(), key=repr) == sorted(
                read_table(str(tmp_path / "local"), table).to_pylist(), key=repr), (engine, table)
