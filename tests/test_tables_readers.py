"""The output tables read as they are by every analysis tool people use.

Both engines (local, Spark) write the shared real capture and a simulator
capture; pyarrow, pandas, Polars, DuckDB and Spark each read every table of
both outputs, and all ten readings hold the same rows.  Both outputs are
written in small chunks with part files rolled every 2 row groups (each table
several files, as a large capture's), and hold the rows of a one-file output.
The layout (``OUTDIR/<table>/part-*.parquet``, nothing else readers would pick up), the
Parquet timestamp type (INT64 TIMESTAMP(MICROS, UTC), which all of them read
as UTC) and date partitioning are checked on the files themselves.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mqcodec import synth
from mqcodec.convert import ConvertOptions, NoCaptureRead, convert
from mqcodec.convert.tables import STATISTICS, TABLES, table_schema
from mqcodec.convert.sinks import read_table

from conftest import CAPTURES

pytestmark = pytest.mark.spark
#: the Spark engine's tests run twice: in local[2] and on the standalone cluster of
#: tests/spark_cluster.py (a master and two workers; the ``spark`` fixture, tests/conftest.py)
ON_BOTH = pytest.mark.parametrize("spark", ["local", "cluster"], indirect=True)

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
#: columns holding timestamps, compared as microseconds since the epoch
TIMESTAMPS = {"ts", "md_put_timestamp"}


def _norm(name, v):
    """One reader's value in a form every reader's can be compared with."""
    if v is None or (type(v).__name__ == "NaTType"):  # pandas' null timestamp
        return None
    if name in TIMESTAMPS:
        if isinstance(v, (int,)):
            return v
        if hasattr(v, "to_pydatetime"):  # pandas Timestamp
            v = v.to_pydatetime()
        if isinstance(v, dt.datetime):
            assert v.tzinfo is not None, "%s read without a time zone" % name
            return (v - EPOCH) // dt.timedelta(microseconds=1)
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if v.is_integer():
            return int(v)  # pandas reads nullable integer columns as float64
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):  # numpy scalars and arrays
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return [_norm(None, x) for x in v]
    if isinstance(v, dict):
        return {k: _norm(k, x) for k, x in v.items()}
    return v


def _canon(rows, names):
    out = [tuple(_norm(n, r[n]) for n in names) for r in rows]
    return sorted(out, key=repr)


def _pyarrow(folder, table, names):
    return read_table(folder, table).select(names).to_pylist()


def _pandas(folder, table, names):
    import pandas as pd

    df = pd.read_parquet(os.path.join(folder, table))
    return [dict(zip(names, row)) for row in df[names].itertuples(index=False, name=None)]


def _polars(folder, table, names):
    import polars as pl

    df = pl.read_parquet(os.path.join(folder, table, "**", "*.parquet"), hive_partitioning=True)
    return df.select(names).to_dicts()


def _duckdb(folder, table, names):
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    cols = ", ".join('"%s"' % n if n not in TIMESTAMPS else 'epoch_us("%s") AS "%s"' % (n, n) for n in names)
    glob = os.path.join(folder, table, "**", "*.parquet")
    cur = con.execute("SELECT %s FROM read_parquet('%s', hive_partitioning = true)" % (cols, glob))
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _spark_reader(spark):
    def read(folder, table, names):
        from pyspark.sql import functions as F

        df = spark.read.parquet(os.path.join(folder, table))
        cols = [F.unix_micros(F.col(n)).alias(n) if n in TIMESTAMPS else F.col(n) for n in names]
        return [r.asDict(recursive=True) for r in df.select(cols).collect()]
    return read


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, spark):
    from mqcodec.spark.pipeline import convert as spark_convert

    tmp = tmp_path_factory.mktemp("tables")
    sim = tmp / "sim.pcap"
    synth.write_capture(str(sim), seed=8, messages=25)
    inputs = [str(CAPTURES / "ibmmq_jms_client_1414.pcap"), str(sim)]
    # small chunks and at most ROW_GROUPS row groups per part file: each table of both
    # engines is several files, as a large capture's is (sinks.DatasetSink)
    local = convert(inputs, str(tmp / "local"), ConvertOptions(raw=True, **ROLLED))
    remote = spark_convert(inputs, str(tmp / "spark"), raw=True, spark=spark, **ROLLED)
    convert(inputs, str(tmp / "whole"), ConvertOptions(raw=True, row_groups_per_file=0))
    return tmp, local, remote


#: the outputs' chunking: part files of at most 2 row groups of 5 rows or more (the pure
#: capture pipeline flushes every chunk_messages rows; the compiled core also waits for
#: the end of its 4 MiB input pieces, one piece for these captures); "whole" is the
#: compiled core's, one file per table
ROLLED = {"chunk_messages": 20, "row_group_rows": 5, "row_groups_per_file": 2, "capture_impl": "py"}


@ON_BOTH
def test_layout_is_one_dataset_per_table_in_both_engines(outputs):
    tmp, local, remote = outputs
    for engine in ("local", "spark"):
        root = tmp / engine
        assert sorted(os.listdir(root)) == sorted(TABLES)
        for table in TABLES:
            files = [p for p in (root / table).rglob("*") if p.is_file() and not p.name.startswith(".")]
            assert files and all(p.name.startswith("part-") and p.suffix == ".parquet" for p in files), files
            # rolled: a task's files are -c000, -c001, ... of at most 2 row groups each
            assert len(files) > 1, (engine, table)
            for p in files:
                assert pq.ParquetFile(p).metadata.num_row_groups <= ROLLED["row_groups_per_file"], p
                task, _, n = p.stem.rpartition("-c")
                assert n.isdigit() and all((p.parent / ("%s-c%03d.parquet" % (task, i))).is_file()
                                           for i in range(int(n))), p
                schema = pq.ParquetFile(p).schema_arrow
                assert [f.name for f in schema] == table_schema(table).names
                if "ts" in schema.names:
                    ts = pq.ParquetFile(p).schema.column(schema.get_field_index("ts"))
                    assert ts.physical_type == "INT64"
                    logical = json.loads(ts.logical_type.to_json())
                    assert (logical["Type"], logical["isAdjustedToUTC"], logical["timeUnit"]) == \
                           ("Timestamp", True, "microseconds"), logical
    # the summaries agree, counters included
    s_local, s_spark = dict(local["summary"]), dict(remote["summary"])
    assert s_spark.pop("engine") == "spark"
    assert s_spark.pop("threads_per_task") == 1   # two captures on two task slots
    assert s_local == s_spark
    assert local["messages_by_protocol_and_kind"] == remote["messages_by_protocol_and_kind"]


@pytest.mark.parametrize("spark", ["local"], indirect=True)
@pytest.mark.parametrize("table", TABLES)
def test_row_group_statistics_prune_in_order_columns(outputs, table):
    """The local engine's files carry min/max statistics for the columns that follow the
    capture's order and no others; pyarrow's dataset reader then skips the row groups a
    filter on them excludes."""
    import pyarrow.dataset as ds

    tmp, _, _ = outputs
    files = sorted(p for p in (tmp / "local" / table).rglob("*.parquet"))
    key = [c for c in ("frame", "message_key") if c in table_schema(table).names][0]
    groups, bounds = 0, []
    for p in files:
        f = pq.ParquetFile(p)
        meta, at = f.metadata, f.schema_arrow.get_field_index(key)
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            with_stats = {rg.column(k).path_in_schema for k in range(rg.num_columns)
                          if rg.column(k).is_stats_set}
            assert with_stats == STATISTICS & set(table_schema(table).names), (p, with_stats)
            st = rg.column(at).statistics
            if st.has_min_max:
                bounds.append((st.min, st.max))
            groups += 1
    assert groups > 2 and len(bounds) > 2
    # a filter on the first row group's values keeps fewer row groups than there are
    lo, hi = sorted(bounds)[0]
    kept = sum(len(f.split_by_row_group(filter=(ds.field(key) >= lo) & (ds.field(key) <= hi)))
               for f in ds.dataset([str(p) for p in files], format="parquet").get_fragments())
    assert 1 <= kept < groups, (kept, groups)


@ON_BOTH
@pytest.mark.parametrize("table", TABLES)
def test_every_reader_reads_the_same_rows_from_both_engines(outputs, spark, table):
    tmp, _, _ = outputs
    names = table_schema(table).names
    readers = {"pyarrow": _pyarrow, "pandas": _pandas, "polars": _polars, "duckdb": _duckdb,
               "spark": _spark_reader(spark)}
    reference = _canon(_pyarrow(str(tmp / "local"), table, names), names)
    assert len(reference) > 10
    # part files rolled every 2 row groups hold the rows of one file per table
    assert reference == _canon(_pyarrow(str(tmp / "whole"), table, names), names)
    assert [p.name for p in (tmp / "whole" / table).iterdir()] == ["part-00000-c000.parquet"]
    for engine in ("local", "spark"):
        for reader, read in readers.items():
            got = _canon(read(str(tmp / engine), table, names), names)
            assert len(got) == len(reference), (engine, reader)
            for a, b in zip(got, reference):
                assert a == b, "%s reading the %s engine's %s differs:\n%r\n%r" % (reader, engine, table, a, b)


@ON_BOTH
def test_ping_rows_carry_their_decoded_fields(outputs):
    tmp, _, _ = outputs
    from mqcodec.batch import decode_msmq_batch

    for engine in ("local", "spark"):
        rows = [r for r in read_table(str(tmp / engine), "msmq_packets").to_pylist() if r["kind"] == "Ping"]
        assert len(rows) == 6  # the simulator's pings (docs/pipeline.md)
        ref = decode_msmq_batch([r["raw"] for r in rows]).to_pylist()
        for r, b in zip(rows, ref):
            assert r["error"] is None and r["tcp_stream"] is None and 3527 in (r["src_port"], r["dst_port"])
            assert (r["ping_flags"], r["ping_cookie"], r["ping_qm_guid"]) == \
                   (b["ping_flags"], b["ping_cookie"], b["ping_qm_guid"])
            assert r["ping_qm_guid"] is not None


def test_put_timestamp_is_put_date_and_time_in_utc(outputs):
    tmp, _, _ = outputs
    rows = [r for r in read_table(str(tmp / "local"), "mq_messages").to_pylist() if r["md_put_date"]]
    assert rows
    for r in rows:
        d, t = r["md_put_date"], r["md_put_time"]
        if len(d) == 8 and len(t) == 8 and (d + t).isdigit():
            want = dt.datetime(int(d[:4]), int(d[4:6]), int(d[6:]), int(t[:2]), int(t[2:4]), int(t[4:6]),
                               int(t[6:]) * 10000, tzinfo=dt.timezone.utc)
            assert r["md_put_timestamp"] == want
        else:
            assert r["md_put_timestamp"] is None


def test_ts_keeps_the_nanoseconds(tmp_path):
    from mqcodec.capture.reader import open_capture
    from mqcodec.capture.writer import PcapWriter

    sim = tmp_path / "ns.pcap"
    with open(sim, "wb") as f:  # the simulator's traffic, frame i at +7*i ns past its microsecond
        w = PcapWriter(f, nanosecond=True)
        for i, p in enumerate(synth.generate(3, 5)):
            w.write(p.ts_ns + (7 * i) % 1000, p.frame)
    frames = {f.number: f.ts_ns for f in open_capture(str(sim))}
    assert any(ns % 1000 for ns in frames.values())
    convert([str(sim)], str(tmp_path / "o"))
    rows = read_table(str(tmp_path / "o"), "mq_messages").to_pylist()
    for r in rows:
        us = (r["ts"] - EPOCH) // dt.timedelta(microseconds=1)
        assert us * 1000 + r["ts_nanos"] == frames[r["frame"]]


@pytest.mark.parametrize("engine", ["local", "spark"])
@ON_BOTH
def test_partition_by_date_in_utc(tmp_path, spark, engine):
    sim = tmp_path / "sim.pcap"
    synth.write_capture(str(sim), seed=4, messages=5)
    out = tmp_path / engine
    if engine == "local":
        convert([str(sim)], str(out), partition_by="date")
    else:
        from mqcodec.spark.pipeline import convert as spark_convert

        old = spark.conf.get("spark.sql.session.timeZone")
        spark.conf.set("spark.sql.session.timeZone", "Pacific/Kiritimati")  # UTC+14: another date
        try:
            spark_convert([str(sim)], str(out), spark=spark, partition_by="date")
        finally:
            spark.conf.set("spark.sql.session.timeZone", old)
    dates = {f.name for f in (out / "mq_messages").iterdir() if f.is_dir()}
    utc = {r["ts"].strftime("date=%Y-%m-%d") for r in read_table(str(tmp_path / engine), "mq_messages").to_pylist()}
    assert dates == utc and dates
    assert not any(p.is_dir() for p in (out / "pcf_parameters").iterdir())


def test_nothing_is_written_when_no_input_can_be_read(tmp_path):
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"this is not a capture at all" * 4)
    out = tmp_path / "o"
    with pytest.raises(NoCaptureRead, match="junk.pcap"):
        convert([str(junk), str(tmp_path / "missing.pcap")], str(out))
    assert not out.exists()
    # one readable input among bad ones: its tables are written, the others reported
    sim = tmp_path / "sim.pcap"
    synth.write_capture(str(sim), seed=5, messages=3)
    report = convert([str(junk), str(sim)], str(out))
    assert report["summary"]["captures not read"] == 1
    assert [c["capture"] for c in report["captures"] if "error" in c] == ["junk.pcap"]
    assert sorted(os.listdir(out)) == sorted(TABLES)
    assert read_table(str(out), "mq_messages").num_rows > 0
    assert Path(out, "msmq_packets").is_dir()
