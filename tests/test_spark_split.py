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
@pytest.mark.parametrize("writer", ["tasks", "spark"])
def test_ranges_of_64_kib_give_the_local_engines_rows(spark, spark_cluster, inputs, tmp_path, writer):
    """Both writers: the conversion tasks writing their Parquet files themselves (a
    local output; their tcp_stream from a stage that finds the connections first),
    and Spark's writer (any other output; tcp_stream by a join)."""
    from mqcodec.spark import pipeline

    report = pipeline.convert(inputs, str(tmp_path / "split"), spark=spark, split_size=64 * 1024,
                              write_in_tasks=writer == "tasks")
    local = convert(inputs, str(tmp_path / "local"), ConvertOptions())
    for table in TABLES:
        ours, theirs = _rows(tmp_path / "split", table), _rows(tmp_path / "local", table)
        assert len(ours) == len(theirs), table
        assert ours == theirs, table
    summary = report["summary"]
    # every capture but the real one (60 KiB) is cut: more ranges than captures, a task each
    assert summary["ranges"] > len(inputs) + 3 and summary["tasks"]["frames"] == summary["ranges"]
    # the ranges of a pcap are scanned by a task each; a pcapng and a capture of one range by one
    from mqcodec.capture.ranges import plan_ranges

    cut = {p: len(plan_ranges(p, 64 * 1024)) for p in inputs}
    assert summary["tasks"]["scan"] == sum(n if p.endswith(".pcap") else 1 for p, n in cut.items()) > len(inputs)
    assert summary["shuffled_bytes"] >= sum(Path(p).stat().st_size for p in inputs) // 2
    # a Python worker with pyarrow loaded holds tens of MiB; the test cluster's executors are small
    assert 40 <= summary["python_peak_rss_mib"] < 2048 and "python_peak_rss_mib" not in local["summary"]
    for k in ("frames", "messages", "calls", "gaps"):
        assert summary.get(k, 0) == local["summary"].get(k, 0), k
    assert summary["calls"] > 100 and summary["gaps"] > 0


@pytest.mark.parametrize("writer", ["tasks", "spark"])
def test_a_column_selection_gives_the_local_engines_columns(spark, inputs, tmp_path, writer):
    """``columns``: the split job writes the chosen columns, tcp_stream
    numbered capture-wide as the local engine numbers it (it needs the key
    column, which a selection always keeps), the other tables whole."""
    from mqcodec.spark import pipeline

    opts = ConvertOptions(columns=("mq_messages.tcp_stream", "mq_messages.body_text", "mq_calls.tcp_stream",
                                   "mq_calls.reason_name", "msmq_packets.label", "msmq_packets.tcp_stream"))
    pipeline.convert(inputs, str(tmp_path / "split"), opts, spark=spark, split_size=64 * 1024,
                     write_in_tasks=writer == "tasks")
    convert(inputs, str(tmp_path / "local"), opts)
    for table in TABLES:
        ours = read_table(str(tmp_path / "split"), table)
        assert ours.schema.names == opts.schema(table).names, table
        assert _rows(tmp_path / "split", table) == _rows(tmp_path / "local", table), table
        if "tcp_stream" in ours.column_names:
            assert ours.column("tcp_stream").null_count < ours.num_rows, table


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


def _damaged_pcap(data: bytes, at: float) -> tuple[bytes, int]:
    """``data`` (a pcap) with the record at about ``at`` of the file given an
    impossible incl_len; returns the bytes and the damaged record's frame number."""
    import struct

    pos, n = 24, 0
    while pos < len(data) * at:
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
        n += 1
    return data[:pos + 8] + struct.pack("<I", 0x7FFFFFFF) + data[pos + 12:], n + 1


def _damaged_pcapng(data: bytes, at: float) -> tuple[bytes, int]:
    """``data`` (a pcapng with one interface) with the Enhanced Packet Block at
    about ``at`` of the file naming an interface that does not exist (the block
    walk does not look; the parser does)."""
    import struct

    pos, n = 0, 0
    while True:
        btype, blen = struct.unpack_from("<II", data, pos)
        if btype == 6:
            n += 1
            if pos >= len(data) * at:
                return data[:pos + 8] + struct.pack("<I", 7) + data[pos + 12:], n
        pos += blen


def _with_unknown_blocks(data: bytes) -> bytes:
    """``data`` (a pcapng) with three blocks of an unknown type between packet blocks."""
    import struct

    block = struct.pack("<II", 0x0BADF00D, 20) + b"\x00" * 8 + struct.pack("<I", 20)
    out, pos, packets = bytearray(), 0, 0
    while pos < len(data):
        btype, blen = struct.unpack_from("<II", data, pos)
        out += data[pos:pos + blen]
        pos += blen
        packets += btype == 6
        if btype == 6 and packets % 97 == 0 and packets < 300:
            out += block
    return bytes(out)


def test_captures_damaged_after_their_first_frame_end_there_as_in_the_local_engine(spark, tmp_path):
    """A capture whose structure breaks mid-file is converted up to the
    damage and reported with its ``file_error``, as the local engine does,
    whatever range the damage falls in: one pcap whose damage the range
    scanner meets, one pcapng whose damage only the frame reader meets (the
    ranges after it are read, then dropped), and an intact capture in the
    same job.  A capture cut short and blocks the parser skips are reported
    as the local engine reports them too."""
    from mqcodec.spark import pipeline

    pcap, cut_pcap = _damaged_pcap(pcap_bytes(simulator_packets(4, 60)), 0.6)
    ng, cut_ng = _damaged_pcapng(pcap_bytes(simulator_packets(6, 40), ng=True), 0.45)
    whole = pcap_bytes(simulator_packets(5, 30))
    files = {"broken.pcap": pcap, "broken.pcapng": ng, "intact.pcap": whole,
             "cut.pcap": whole[:-100], "blocks.pcapng": _with_unknown_blocks(pcap_bytes(simulator_packets(7, 30), ng=True))}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    inputs = [str(tmp_path / name) for name in files]
    report = pipeline.convert(inputs, str(tmp_path / "split"), spark=spark, split_size=16 * 1024)
    local = convert(inputs, str(tmp_path / "local"), ConvertOptions())
    assert local["summary"]["captures ended by a file error"] == 2
    assert report["summary"]["captures ended by a file error"] == 2
    assert report["summary"]["frames"] == local["summary"]["frames"]
    ours = {c["capture"]: c for c in report["captures"]}
    theirs = {c["capture"]: c for c in local["captures"]}
    for name in ("broken.pcap", "broken.pcapng"):
        assert ours[name]["file_error"] == theirs[name]["file_error"], name
        assert ours[name]["stats"]["frames"] == theirs[name]["stats"]["frames"], name
    assert ours["broken.pcap"]["stats"]["frames"] == cut_pcap - 1
    assert ours["broken.pcapng"]["stats"]["frames"] == cut_ng - 1
    assert "file_error" not in ours["intact.pcap"]
    # the other file-structure details of the local report
    assert ours["cut.pcap"]["truncation"] == theirs["cut.pcap"]["truncation"]
    assert "truncation" not in ours["intact.pcap"] and "truncation" not in ours["broken.pcap"]
    for key in ("captures cut short", "pcapng blocks skipped"):
        assert report["summary"][key] == local["summary"][key], key
    assert report["summary"]["captures cut short"] == 1 and report["summary"]["pcapng blocks skipped"] == 3
    assert report["summary"]["ranges"] > len(inputs) + 4   # the damage is inside a plan of many ranges
    for table in TABLES:
        assert _rows(tmp_path / "split", table) == _rows(tmp_path / "local", table), table


def test_the_numbering_stage_and_the_conversion_must_agree():
    """With tasks writing their files, each connection's tcp_stream comes from a
    numbering stage run before the conversion: the job fails, rather than write
    shifted numbers, where the conversion opened another count of connections."""
    import json

    from mqcodec.spark.split import check_numbering

    def row(opened):
        return {"index": -1, "capture": "(split)", "report": json.dumps({"connections opened": opened})}

    check_numbering([row({"0": 3, "2": 1}), row({"0": 2}), row({})], {0: 5, 2: 1})
    with pytest.raises(RuntimeError, match="capture 0: the numbering stage found 6 connections, the conversion opened 5"):
        check_numbering([row({"0": 3, "2": 1}), row({"0": 2})], {0: 6, 2: 1})
    with pytest.raises(RuntimeError, match="capture 1: the numbering stage found 0"):
        check_numbering([row({"1": 1})], {})
