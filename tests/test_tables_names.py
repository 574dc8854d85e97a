"""Named values in the tables: every enumerated column has a name companion
(mqcodec.convert.tables.NAMED), and the names are Wireshark's where Wireshark has
them (``tshark -G values``).  A trace-route reply's hops come out of
``pcf_parameters`` by name in one plain DuckDB query."""
from __future__ import annotations

import subprocess
from collections import defaultdict

import pytest

from mqcodec import synth
from mqcodec.ibmmq import constants as C
from mqcodec.convert import ConvertOptions, convert
from mqcodec.convert.tables import NAMED, table_schema
from mqcodec.convert.sinks import read_table

from conftest import CAPTURES

#: our column -> the tshark field whose value strings name the same values
TSHARK = {
    "md_msg_type": "mq.md.msgtype",
    "md_persistence": "mq.md.persistence",
    "md_put_appl_type": "mq.md.appltype",
    "pcf_command": "mqpcf.cfh.command",
    "pcf_type": "mqpcf.cfh.type",
    "pcf_reason": "mqpcf.cfh.reasoncode",
    "parameter": "mqpcf.parm.id",
}


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("names")
    sim = tmp / "sim.pcap"
    synth.write_capture(str(sim), seed=9, messages=30)
    convert([str(CAPTURES / "ibmmq_jms_client_1414.pcap"), str(sim)], str(tmp / "o"), ConvertOptions(raw=True))
    return str(tmp / "o")


@pytest.fixture(scope="module")
def tshark_values(tshark):
    text = subprocess.run([tshark, "-G", "values"], capture_output=True, text=True, check=True).stdout
    values: dict = defaultdict(dict)
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 4 and parts[0] == "V" and parts[1] in TSHARK.values():
            values[parts[1]][int(parts[2], 0) & 0xFFFFFFFF] = parts[3]
    return values


def test_every_named_column_has_its_companion():
    for table in ("mq_messages", "pcf_parameters"):
        names = table_schema(table).names
        for column, (name, _) in NAMED.items():
            if column in names:
                assert names.index(name) == names.index(column) + 1, (table, column)


def test_names_agree_with_wireshark(out, tshark_values):
    mq = read_table(out, "mq_messages").to_pylist()
    params = read_table(out, "pcf_parameters").to_pylist()
    compared = defaultdict(int)
    for rows in (mq, params):
        for r in rows:
            for column, field in TSHARK.items():
                if column not in r or r[column] is None:
                    continue
                ours = r[NAMED[column][0]]
                theirs = tshark_values[field].get(r[column] & 0xFFFFFFFF)
                if theirs is None or ours is None:
                    continue
                # where IBM gives one value several names, tshark may show another alias
                fam = C.FAMILIES[ours.split("_")[0]] if ours.split("_")[0] in C.FAMILIES else None
                aliases = set(fam.names_of(r[column])) if fam is not None else {ours}
                assert ours == theirs or theirs in aliases, (column, r[column], ours, theirs)
                compared[column] += 1
    assert all(compared[c] for c in ("md_msg_type", "md_persistence", "md_put_appl_type", "pcf_command",
                                      "pcf_type", "parameter")), dict(compared)


def test_names_of_values_outside_wireshark(out):
    """The columns tshark has no value strings for, against IBM's documented values."""
    mq = read_table(out, "mq_messages").to_pylist()
    feedback = {r["md_feedback"]: r["md_feedback_name"] for r in mq if r["md_feedback"] is not None}
    assert feedback[0] == "MQFB_NONE" and feedback.get(0x0000001A, "MQFB_ACTIVITY") == "MQFB_ACTIVITY"
    enc = {r["md_encoding"]: r["md_encoding_name"] for r in mq if r["md_encoding"] is not None}
    assert enc[273] == "MQENC_NORMAL" and enc[546] == "MQENC_REVERSED"
    reports = [r for r in mq if r["md_report"]]
    assert reports, "the simulator's trace-route messages ask for activity reports"
    for r in reports:
        assert "MQRO_ACTIVITY" in r["md_report_names"]  # MQRO_ACTIVITY = 0x00000004
        assert r["md_report"] & 4
    params = read_table(out, "pcf_parameters").to_pylist()
    ops = {r["int_value"]: r["value_name"] for r in params if r["parameter_name"] == "MQIACF_OPERATION_TYPE"}
    assert ops and all(name.startswith("MQOPER_") for name in ops.values())
    assert ops.get(4, "MQOPER_PUT") == "MQOPER_PUT" and ops.get(1, "MQOPER_GET") == "MQOPER_GET"
    # names only where a parameter's values are an enumeration, and only for integers
    assert all(r["value_name"] is None for r in params if r["type"] != 3 and r["type"] != 13)
    assert all(r["value_name"] is None for r in params if r["parameter_name"] == "MQIACF_RECORDED_ACTIVITIES")


def test_trace_route_hops_by_name_in_one_duckdb_query(out):
    import duckdb

    from mqcodec.ibmmq import decode_message

    glob = out + "/pcf_parameters/*.parquet"
    hops = duckdb.sql("""
        SELECT op.message_key, op.param_index, op.value_name AS operation, qm.string_value AS queue_manager
        FROM read_parquet('{g}') op
        JOIN read_parquet('{g}') qm
          ON qm.message_key = op.message_key AND qm.parent = op.parent AND qm.parameter_name = 'MQCA_Q_MGR_NAME'
        WHERE op.parameter_name = 'MQIACF_OPERATION_TYPE'
        ORDER BY op.message_key, op.param_index""".format(g=glob)).fetchall()
    assert hops
    # the same hops from the message itself, walked by the object decoder
    mq = {r["message_key"]: r for r in read_table(out, "mq_messages").to_pylist()}
    expected = []
    for key in sorted({h[0] for h in hops}):
        r = mq[key]
        msg = decode_message(r["raw"])
        for _, p in msg.body.walk():
            if getattr(p, "Name", None) == "MQGACF_OPERATION":
                kids = {c.Name: c.Value for c in p.Value}  # a group's value: its parameters
                expected.append((key, C.value_name(C.MQIACF_OPERATION_TYPE, kids["MQIACF_OPERATION_TYPE"]),
                                 kids["MQCA_Q_MGR_NAME"]))
    assert [(k, o, q) for k, _, o, q in hops] == expected
