"""One capture spread over a Spark cluster (``--split-size``, mqcodec.spark.split):
ranges of 64 KiB, so that nearly every connection crosses a range boundary,
read by separate tasks, the frames shuffled by connection, each connection
converted where its frames land -- the same rows in every table as the local
engine, on the test cluster (tests/spark_cluster.py: a master and two
workers).  Inputs in one job: the real IBM MQ capture, a simulator capture
with dropped, duplicated and reordered segments, one with IPv4 fragments
(some swapped), and a pcapng one."""
from __future__ import annotations

from pathlib import Path

import pytest

from mqcodec.convert import ConvertOptions, convert
from mqcodec.convert.tables import TABLES
from mqcodec.convert.sinks import read_table

from capture_inputs import fragmented, pcap_bytes, reordered, simulator_packets

pytestmark = pytest.mark.spark
ON_CLUSTER = pytest.mark.parametrize("spark", ["cluster"], indirect=True)
REAL = Path(__file__).resolve().parents[2] / "shared" / "captures" / "ibmmq_jms_client_1414.pcap"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("split")
    captures = {"damaged.pcap": pcap_bytes(reordered(simulator_packets(4, 60), 7, swaps=20)),
                "fragments.pcap": pcap_bytes(fragmented(simulator_packets(10, 40), 300, 7)),
                "ng.pcapng": pcap_bytes(simulator_packets(6, 40), ng=True)}
    for name, data in captures.items():
        (root / name).write_bytes(data)
    return [str(REAL)] + [str(root / name) for name in captures]


def _rows(folder, table):
    # whole rows, message_key included: it derives from the input only (docs/tables.md "Keys")
    return sorted(repr(sorted(r.items())) for r in read_table(str(folder), table).to_pylist())


@ON_CLUSTER
def test_ranges_of_64_kib_give_the_local_engines_rows(spark, spark_cluster, inputs, tmp_path):
    from mqcodec.spark import pipeline

    report = pipeline.convert(inputs, str(tmp_path / "split"), spark=spark, split_size=64 * 1024)
    local = convert(inputs, str(tmp_path / "local"), ConvertOptions())
    for table in TABLES:
        ours, theirs = _rows(tmp_path / "split", table), _rows(tmp_path / "local", table)
        assert len(ours) == len(theirs), table
        assert ours == theirs, table
    summary = report["summary"]
    # every capture but the real one (60 KiB) is cut: more ranges than captures, a task each
    assert summary["ranges"] > len(inputs) + 3 and summary["tasks"]["frames"] == summary["ranges"]
    assert summary["shuffled_bytes"] >= sum(Path(p).stat().st_size for p in inputs) // 2
    for k in ("frames", "messages", "calls", "gaps"):
        assert summary.get(k, 0) == local["summary"].get(k, 0), k
    assert summary["calls"] > 100 and summary["gaps"] > 0


def test_inputs_that_are_not_captures_are_reported_as_the_local_engine_does(spark, inputs, tmp_path):
    """In local mode: a file that is not a capture and a missing one are
    reported as not read, the job goes on with the others; all unreadable is
    NoCaptureRead, as in the local engine."""
    from mqcodec.convert import NoCaptureRead
    from mqcodec.spark import pipeline

    bad = tmp_path / "notes.txt"
    bad.write_text("not a capture at all, just words\n" * 10)
    missing = tmp_path / "gone.pcap"
    good = inputs[3]
    mixed = [str(bad), good, str(missing)]
    report = pipeline.convert(mixed, str(tmp_path / "split"), spark=spark, split_size=16 * 1024)
    local = convert(mixed, str(tmp_path / "local"), ConvertOptions())
    assert report["summary"]["captures not read"] == local["summary"]["captures not read"] == 2
    errors = {c["capture"]: c.get("error") for c in report["captures"]}
    assert "magic" in errors["notes.txt"] and errors["gone.pcap"]
    for table in TABLES:
        assert _rows(tmp_path / "split", table) == _rows(tmp_path / "local", table), table
    with pytest.raises(NoCaptureRead):
        pipeline.convert([str(bad)], str(tmp_path / "none"), spark=spark, split_size=16 * 1024)
