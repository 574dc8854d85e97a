"""mqcodec route: a route built by the trace-route rules, shown as text and
as a Graphviz picture (rendered by the real `dot` when installed)."""
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from mqcodec.ibmmq import constants as C
from mqcodec.ibmmq.pcf import PcfParameter as P, encode_pcf
from mqcodec.ibmmq.route import build_route, render_dot, render_text
from mqcodec.ibmmq.traceroute_rules import (PerformedActivity, QueueManagerProfile, TraceRouteState,
                                            activity_report, apply_activity, new_trace_route_message)


def _op(optype, qmgr, date, time, **kw):
    params = [P.integer(C.MQIACF_OPERATION_TYPE, optype), P.string(C.MQCACF_OPERATION_DATE, date),
              P.string(C.MQCACF_OPERATION_TIME, time), P.string(C.MQCA_Q_MGR_NAME, qmgr)]
    if "q" in kw:
        params.append(P.string(C.MQCA_Q_NAME, kw["q"]))
    if "channel" in kw:
        params.append(P.string(C.MQCACH_CHANNEL_NAME, kw["channel"]))
    return P.group(C.MQGACF_OPERATION, params)


def _act(appl, *ops):
    return P.group(C.MQGACF_ACTIVITY, [P.string(C.MQCACF_APPL_NAME, appl), P.integer(C.MQIA_APPL_TYPE, 7), *ops])


HOPS = [
    _act("dspmqrte", _op(C.MQOPER_PUT, "QM1", "2026-11-21", "10.00.00", q="QM2.REMOTE")),
    _act("amqrmppa", _op(C.MQOPER_GET, "QM1", "2026-11-21", "10.00.01", q="QM2.XMITQ"),
         _op(C.MQOPER_SEND, "QM1", "2026-11-21", "10.00.01", channel="QM1.TO.QM2")),
    _act("amqrmppa", _op(C.MQOPER_RECEIVE, "QM2", "2026-11-21", "10.00.02", channel="QM1.TO.QM2"),
         _op(C.MQOPER_PUT, "QM2", "2026-11-21", "10.00.02", q="TARGET.Q")),
]


def _accumulated():
    msg = new_trace_route_message(TraceRouteState(Accumulate=C.MQROUTE_ACCUMULATE_IN_MSG, Detail=C.MQROUTE_DETAIL_MEDIUM))
    for level, g in zip([C.MQROUTE_DETAIL_LOW, C.MQROUTE_DETAIL_MEDIUM, C.MQROUTE_DETAIL_MEDIUM], HOPS):
        msg = apply_activity(msg, PerformedActivity(level, g), QueueManagerProfile()).message
    return msg


def test_text_route_lists_activities_in_order():
    text = render_text(build_route([_accumulated()]))
    assert "3 recorded, 0 unrecorded" in text
    assert text.index("'dspmqrte'") < text.index("QMgrName: 'QM2'")
    assert text.count("Operation:") == 5
    assert "ChannelName: 'QM1.TO.QM2'" in text
    assert "OperationType: Put" in text and "OperationType: Receive" in text


def test_activity_reports_are_merged_in_time_order():
    reports = [activity_report(g, TraceRouteState(RecordedActivities=i + 1)).body for i, g in enumerate(HOPS)]
    route = build_route(list(reversed(reports)))
    assert route.kind == "activity report"
    assert [a.ApplName for a in route.activities] == ["dspmqrte", "amqrmppa", "amqrmppa"]
    assert route.queue_managers == ["QM1", "QM2"]


def test_dot_has_queue_managers_and_an_edge():
    dot = render_dot(build_route([_accumulated()]))
    assert '"QM1" [label="QM1' in dot and '"QM2" [label="QM2' in dot
    assert dot.count("->") == 1 and '"QM1" -> "QM2"' in dot
    if shutil.which("dot") is None:
        pytest.skip("graphviz not installed")
    svg = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True, check=True).stdout
    root = ET.fromstring(svg)
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert "QM1" in titles and "QM2" in titles and "QM1->QM2" in titles


def test_cli_route(tmp_path):
    f = tmp_path / "tr.pcf"
    f.write_bytes(encode_pcf(_accumulated()))
    r = subprocess.run([sys.executable, "-m", "mqcodec", "route", str(f)], capture_output=True)
    assert r.returncode == 0, r.stderr
    assert b"Activity 3:" in r.stdout
    r = subprocess.run([sys.executable, "-m", "mqcodec", "route", "--format", "dot", str(f)], capture_output=True)
    assert r.stdout.startswith(b"digraph route")
    bad = tmp_path / "not.pcf"
    bad.write_bytes(encode_pcf(__import__("mqcodec").ibmmq.PcfMessage.new(C.MQCFT_COMMAND, 1, [])))
    r = subprocess.run([sys.executable, "-m", "mqcodec", "route", str(bad)], capture_output=True)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and b"Traceback" not in r.stderr
