"""--engine spark equals --engine local, row for row (order-insensitive),
on the real JMS capture and a simulator capture; the data source options and
its errors."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mqcodec import synth
from mqcodec.pcap2parquet import convert as local_convert

from conftest import CAPTURES

pytestmark = pytest.mark.spark


def _rows(table):
    if "ts" in table.schema.names:  # Spark timestamps are microseconds
        i = table.schema.get_field_index("ts")
        table = table.set_column(i, "ts", table.column("ts").cast(pa.timestamp("us", tz="UTC"), safe=False))
    return sorted(tuple(sorted((k, repr(v)) for k, v in r.items())) for r in table.to_pylist())


def test_spark_engine_equals_local(tmp_path, spark):
    from mqcodec.spark.pipeline import convert as spark_convert

    sim = tmp_path / "sim.pcap"
    synth.write_capture(str(sim), seed=21, messages=20)
    inputs = [str(CAPTURES / "ibmmq_jms_client_1414.pcap"), str(sim)]
    report = spark_convert(inputs, str(tmp_path / "spark"), spark=spark)
    local = local_convert(inputs, str(tmp_path / "local"))
    assert report["summary"]["messages"] == local["summary"]["messages"] > 100
    s_msgs = pq.read_table(tmp_path / "spark" / "messages.parquet")
    l_msgs = pq.read_table(tmp_path / "local" / "messages.parquet")
    assert "date" in s_msgs.schema.names and "protocol" in s_msgs.schema.names  # hive partitions come back
    common = [n for n in l_msgs.schema.names if n in s_msgs.schema.names]
    assert len(common) == len(l_msgs.schema.names)
    assert _rows(s_msgs.select(common)) == _rows(l_msgs.select(common))
    s_p = pq.read_table(tmp_path / "spark" / "pcf_parameters.parquet")
    l_p = pq.read_table(tmp_path / "local" / "pcf_parameters.parquet")
    assert s_p.num_rows == l_p.num_rows > 0
    assert _rows(s_p.select(l_p.schema.names)) == _rows(l_p)


def test_data_source_options_and_errors(tmp_path, spark):
    from mqcodec.spark.datasource import register

    register(spark)
    with pytest.raises(Exception, match="table"):
        spark.read.format("mqcodec").option("table", "nope").load(str(tmp_path)).schema
    with pytest.raises(Exception, match="no capture file"):
        spark.read.format("mqcodec").load(str(tmp_path / "*.pcap")).count()
