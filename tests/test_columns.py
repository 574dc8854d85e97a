"""Column selection (``ConvertOptions.columns``, ``pcap2parquet --columns``):
a table is written with the chosen columns and its key column, each column
with the values of a run that makes every column; what only the other
columns need is not computed (checked by making those computations fail);
a table not named keeps every column."""
import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from mqcodec import synth
from mqcodec.convert import ConvertOptions, convert
from mqcodec.convert import converter as converter_module
from mqcodec.convert.sinks import read_table
from mqcodec.convert.tables import TABLES, output_schema, table_schema

from conftest import CAPTURES

REAL = CAPTURES / "ibmmq_jms_client_1414.pcap"

#: selections: IBM MQ columns without the content ones, the content ones alone, a few
#: MSMQ columns (short ones, the ones made of others), a PCF and a calls pair
SELECTIONS = [
    ("mq_messages.queue_name", "mq_messages.md_msg_id", "mq_messages.error", "msmq_packets.label",
     "msmq_packets.message_id", "msmq_packets.class_name", "msmq_packets.ts"),
    ("mq_messages.body_text", "mq_messages.rfh2_folders", "mq_messages.md_put_timestamp",
     "msmq_packets.body_text", "msmq_packets.error", "msmq_packets.raw", "msmq_packets.class",
     "pcf_parameters.parameter_name", "pcf_parameters.int_value",
     "mq_calls.reason_name", "mq_calls.latency_us"),
    ("mq_messages.header_formats", "mq_messages.md_msg_type_name", "mq_calls.queue_name",
     "msmq_packets.user_message_id", "msmq_packets.base_pr"),
]


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    path = tmp_path_factory.mktemp("columns") / "sim.pcap"
    synth.write_capture(str(path), seed=7, messages=150)
    return path


def _full(tmp_path, capture, impl):
    out = tmp_path / "all"
    convert([str(capture)], str(out), ConvertOptions(capture_impl=impl, impl=impl, chunk_messages=40))
    return {t: read_table(str(out), t) for t in TABLES}


@pytest.mark.parametrize("selection", range(len(SELECTIONS)))
def test_chosen_columns_have_the_full_runs_values(tmp_path, sim, impl, selection):
    """Each table named: the chosen columns and its key, in the table's
    order, equal to the full run's; a table not named: every column."""
    columns = SELECTIONS[selection]
    want = _full(tmp_path, sim, impl)
    assert all(want[t].num_rows for t in TABLES)
    out = tmp_path / "some"
    report = convert([str(sim)], str(out), ConvertOptions(capture_impl=impl, impl=impl, chunk_messages=40,
                                                          columns=columns))
    for table in TABLES:
        got = read_table(str(out), table)
        named = [c.split(".", 1)[1] for c in columns if c.startswith(table + ".")]
        if not named:
            assert got.schema == want[table].schema, table
            assert got.to_pylist() == want[table].to_pylist(), table
            continue
        key = "call_key" if table == "mq_calls" else "message_key"
        order = [n for n in table_schema(table).names if n in set(named) | {key}]
        assert got.column_names == order, table
        assert got.schema == want[table].select(order).schema, table
        assert got.to_pylist() == want[table].select(order).to_pylist(), table
        # not all null: the selection carries values
        assert any(got.column(n).null_count < got.num_rows for n in named if n not in ("error", "raw")), table
    # the summary counts what a full run counts (kind and error are read whether chosen or not)
    full = convert([str(sim)], str(tmp_path / "again"), ConvertOptions(capture_impl=impl, impl=impl,
                                                                       chunk_messages=40))
    assert report["summary"] == full["summary"]
    assert report["messages_by_protocol_and_kind"] == full["messages_by_protocol_and_kind"]
    assert report.get("calls_by_type") == full.get("calls_by_type")


def test_real_capture_bodies_alone(tmp_path, impl):
    """The real JMS capture: only the bodies' text and the JMS folders, as
    the full run gives them."""
    want = _full(tmp_path, REAL, impl)["mq_messages"]
    out = tmp_path / "bodies"
    convert([str(REAL)], str(out), ConvertOptions(impl=impl, capture_impl=impl,
                                                  columns=("mq_messages.body_text", "mq_messages.rfh2_folders")))
    got = read_table(str(out), "mq_messages")
    assert got.column_names == ["message_key", "rfh2_folders", "body_text"]   # the table's order
    assert got.to_pylist() == want.select(got.column_names).to_pylist()
    assert got.column("body_text").null_count < got.num_rows


def test_what_no_chosen_column_needs_is_not_computed(tmp_path, sim, monkeypatch):
    """Without body_text, rfh2_folders, md_put_timestamp and the names, their
    functions are not called (they raise here); the MSMQ decoder is asked for
    the columns the chosen ones come from only."""
    from mqcodec import batch

    def boom(*args, **kwargs):
        raise AssertionError("computed although not chosen")

    for name in ("_body_text", "_rfh2_folders", "_put_timestamp", "_msmq_body_text"):
        monkeypatch.setattr(converter_module, name, boom)
    asked = []
    decode = batch.decode_msmq_batch

    def spy(records, **kwargs):
        asked.append(kwargs.get("columns"))
        return decode(records, **kwargs)

    monkeypatch.setattr(converter_module._batch, "decode_msmq_batch", spy)
    named = []
    name_column = converter_module._tables.name_column
    monkeypatch.setattr(converter_module._tables, "name_column",
                        lambda how, *a: named.append(how) or name_column(how, *a))
    columns = ("mq_messages.queue_name", "mq_messages.md_format", "msmq_packets.label", "msmq_packets.priority",
               "pcf_parameters.int_value", "mq_calls.reason_code")
    convert([str(sim)], str(tmp_path / "out"), ConvertOptions(columns=columns))
    assert asked and all(sorted(a) == sorted(["props_label", "base_pr", "error_structure", "error_field",
                                              "error_offset", "error_reason"]) for a in asked), asked
    # names: only mq_calls' reason names, which the summary counts (failed calls by reason)
    assert set(named) == {"reason"}, named
    got = read_table(str(tmp_path / "out"), "msmq_packets")
    assert got.column_names == ["message_key", "label", "priority"]
    # with them chosen, the same run fails: the check above can fail
    with pytest.raises(Exception, match="computed although not chosen"):
        convert([str(sim)], str(tmp_path / "out2"), ConvertOptions(columns=("mq_messages.body_text",)))


def test_selection_is_checked():
    with pytest.raises(ValueError, match=r"'mq_messages.no_such'"):
        ConvertOptions(columns=("mq_messages.no_such", "mq_messages.ts"))
    with pytest.raises(ValueError, match=r"'queue_name'"):
        ConvertOptions(columns=("queue_name",))
    with pytest.raises(TypeError, match="not one string"):
        ConvertOptions(columns="mq_messages.ts")
    with pytest.raises(ValueError, match="mq_calls is not among the tables made"):
        ConvertOptions(tables=("mq_messages",), columns=("mq_calls.reason_code",))
    with pytest.raises(ValueError, match="needs the ts column of mq_messages: add mq_messages.ts"):
        ConvertOptions(columns=("mq_messages.queue_name",)).check_partitioning("date")
    ConvertOptions(columns=("mq_messages.ts", "pcf_parameters.int_value")).check_partitioning("date")
    opts = ConvertOptions(columns=("mq_calls.latency_us", "mq_messages.ts"))
    assert ConvertOptions.from_text(opts.to_text()) == opts
    assert ConvertOptions.from_strings({"columns": "mq_calls.latency_us, mq_messages.ts"}) == opts
    assert output_schema("mq_calls", opts.columns).names == ["call_key", "latency_us"]
    assert output_schema("msmq_packets", opts.columns) == table_schema("msmq_packets")


def test_cli_columns_and_readers(tmp_path):
    """``--columns TABLE=COL,...`` (repeatable) writes those columns, which
    pandas, Polars and DuckDB read; a wrong name or a partitioning without
    ``ts`` is one line and exit status 2, before anything is written."""
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "mqcodec", "pcap2parquet", str(REAL), "-o", str(out),
                          "--columns", "mq_messages=queue_name,body_text", "--columns", "mq_calls=reason_name",
                          "--columns", "mq_messages=queue_manager"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["summary"]["messages"] == 16
    path = str(out / "mq_messages" / "part-00000-c000.parquet")
    assert pq.read_schema(path).names == ["message_key", "queue_name", "queue_manager", "body_text"]
    assert pq.read_schema(str(out / "mq_calls" / "part-00000-c000.parquet")).names == ["call_key", "reason_name"]
    assert len(pq.read_schema(str(out / "msmq_packets" / "part-00000-c000.parquet"))) == len(table_schema("msmq_packets"))
    import duckdb
    import pandas as pd
    import polars as pl

    texts = duckdb.sql("select body_text from read_parquet('%s') where body_text is not null order by 1"
                       % path).fetchall()
    assert len(texts) == 8 and texts[0][0].startswith("Connection")
    assert pd.read_parquet(path)["queue_name"].dropna().unique().tolist() == ["UNIFORM.QUEUE"]
    assert pl.read_parquet(path).columns == ["message_key", "queue_name", "queue_manager", "body_text"]
    for args, message in ((["--columns", "mq_messages=bodytext"], "'mq_messages.bodytext'"),
                          (["--columns", "mq_messages"], "give TABLE=COLUMN"),
                          (["--columns", "mq_calls=reason_name", "--tables", "mq_messages"],
                           "mq_calls is not among the tables made"),
                          (["--columns", "mq_messages=queue_name", "--partition-by", "date"],
                           "add mq_messages.ts")):
        bad = tmp_path / "bad"
        run = subprocess.run([sys.executable, "-m", "mqcodec", "pcap2parquet", str(REAL), "-o", str(bad)] + args,
                             capture_output=True, text=True)
        assert run.returncode == 2 and message in run.stderr, (args, run.stderr)
        assert not bad.exists()


def test_columns_command_lists_what_columns_takes(tmp_path):
    """``mqcodec columns [TABLE...]``: one line per column, ``table.column``
    and its Arrow type, in the table's order; every name it prints is one
    ``--columns`` accepts, and a job given all of them writes every column."""
    run = subprocess.run([sys.executable, "-m", "mqcodec", "columns"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = [line.split("\t") for line in run.stdout.splitlines()]
    assert [name for name, _ in lines] == ["%s.%s" % (t, f.name) for t in TABLES for f in table_schema(t)]
    assert [kind for _, kind in lines] == [str(f.type) for t in TABLES for f in table_schema(t)]
    one = subprocess.run([sys.executable, "-m", "mqcodec", "columns", "mq_calls"], capture_output=True, text=True)
    assert one.stdout.splitlines() == ["\t".join(x) for x in lines if x[0].startswith("mq_calls.")]
    every = tuple(name for name, _ in lines)
    assert ConvertOptions(columns=every).schema("msmq_packets") == table_schema("msmq_packets")
    bad = subprocess.run([sys.executable, "-m", "mqcodec", "columns", "calls"], capture_output=True, text=True)
    assert bad.returncode == 2 and "calls" in bad.stderr
