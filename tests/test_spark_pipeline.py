"""The ``mqcodec`` data source's options and errors.  (``--engine spark``
against ``--engine local``, table by table and reader by reader, is
tests/test_tables_readers.py.)"""
import pytest

from mqcodec import synth
from mqcodec.tables import TABLES, read_table, table_schema

pytestmark = pytest.mark.spark


def test_data_source_options_and_errors(tmp_path, spark):
    from mqcodec.spark.datasource import register

    register(spark)
    with pytest.raises(Exception, match="table"):
        spark.read.format("mqcodec").option("table", "nope").load(str(tmp_path)).schema
    with pytest.raises(Exception, match="no capture file"):
        spark.read.format("mqcodec").load(str(tmp_path / "*.pcap")).count()


def test_data_source_reads_every_table(tmp_path, spark):
    from mqcodec.pcap2parquet import convert
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
