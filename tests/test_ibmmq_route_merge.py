"""mqcodec route over what a reply queue holds: a trace-route reply, its
activity reports, both, and the reports of two different trace-route
messages.  Every message is built by the project's trace-route rules and
builders (the simulator's journey QM1 -> QM2, discarded on arrival with
Deliver NO), encoded to bytes and read back as ``mqcodec route`` reads it;
tshark's PCF dissector is the outside reader of each message's kind and of
the identity fields of its first activity (it mis-walks groups nested
deeper than that, see test_ibmmq_pcf.test_tshark_nested_groups_defect)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from mqcodec.ibmmq import constants as C
from mqcodec.ibmmq.pcf import PcfMessage, PcfParameter as P
from mqcodec.ibmmq.route import (build_route, build_routes, load_route_inputs, render_dot, render_text,
                                 route_graph)
from mqcodec.ibmmq.traceroute_rules import (PerformedActivity, QueueManagerProfile, TraceRouteState,
                                            activity_report, apply_activity, new_trace_route_message,
                                            trace_route_reply)
from mqcodec.synth import activity, _op, _pcf_message, START_NS

from test_ibmmq_pcf import _tshark_params

SVG = "{http://www.w3.org/2000/svg}"


def journey(t0: int, little: bool = False):
    """The simulator's trace-route journey (codec/synth.py _trace_route) with
    one second between activities: dspmqrte puts on QM1, the sender MCA
    gets and sends over QM1.TO.QM2, the receiver MCA on QM2 receives it and
    discards it (Deliver NO).  Returns (trace-route message, reply, reports)
    as MQMessages whose MQMDs carry the identifiers IBM documents."""
    report = C.MQRO_ACTIVITY | C.MQRO_DISCARD_MSG
    state = TraceRouteState(Detail=C.MQROUTE_DETAIL_MEDIUM, Accumulate=C.MQROUTE_ACCUMULATE_AND_REPLY,
                            Forward=C.MQROUTE_FORWARD_IF_SUPPORTED, Deliver=C.MQROUTE_DELIVER_NO)
    s = 1_000_000_000
    put = activity("dspmqrte", C.MQAT_UNIX, "Display Route Application",
                    _op(C.MQOPER_PUT, "QM1", t0, q="TARGET.Q", xmitq="QM2"))
    mca1 = activity("amqrmppa", C.MQAT_QMGR, "Sending Message Channel Agent",
                     _op(C.MQOPER_GET, "QM1", t0 + s, q="QM2"),
                     _op(C.MQOPER_SEND, "QM1", t0 + s, channel="QM1.TO.QM2", xmitq="QM2"))
    mca2 = activity("amqrmppa", C.MQAT_QMGR, "Receiving Message Channel Agent",
                     _op(C.MQOPER_RECEIVE, "QM2", t0 + 2 * s, channel="QM1.TO.QM2"),
                     _op(C.MQOPER_DISCARD, "QM2", t0 + 2 * s, q="TARGET.Q"))
    msg = new_trace_route_message(state)
    steps = [(C.MQROUTE_DETAIL_LOW, put, "continue", QueueManagerProfile("QM1")),
             (C.MQROUTE_DETAIL_MEDIUM, mca1, "forward", QueueManagerProfile("QM1")),
             (C.MQROUTE_DETAIL_MEDIUM, mca2, "arrive", QueueManagerProfile("QM2"))]
    trm = _pcf_message(new_trace_route_message(state), msg_type=C.MQMT_DATAGRAM, fmt="MQADMIN", report=report,
                       little=little, ts=t0, appl="dspmqrte")
    reports, outcome = [], None
    for level, group, action, qm in steps:
        outcome = apply_activity(msg, PerformedActivity(level, group, action=action), qm, report_options=report)
        msg = outcome.message
        assert outcome.recorded and outcome.accumulated and outcome.activity_report
        rep = activity_report(group, TraceRouteState.from_group(msg.find(C.MQGACF_TRACE_ROUTE)))
        rep.md.CorrelId = trm.md.MsgId
        reports.append(rep)
    assert outcome.reply and outcome.disposition.value == "not delivered"
    reply = trace_route_reply(msg)
    reply.md.CorrelId = trm.md.MsgId
    trm.body = msg
    return trm, reply, reports


def on_queue(*messages) -> list:
    """The messages as bytes on a queue, read back the way the CLI reads files."""
    return load_route_inputs([m.encode() for m in messages])


T0 = START_NS + 3_600_000_000_000


@pytest.fixture(scope="module")
def route_a():
    return journey(T0)


@pytest.fixture(scope="module")
def route_b():
    return journey(T0 + 600_000_000_000, little=True)


EXPECTED = [("dspmqrte", ["Put"]), ("amqrmppa", ["Get", "Send"]), ("amqrmppa", ["Receive", "Discard"])]


def _shape(route):
    return [(a.ApplName, [op.OperationTypeName[len("MQOPER_"):].title() for op in a.Operations])
            for a in route.activities]


def _assert_one_hop(route):
    g = route_graph(route)
    assert [(s, d) for s, d, _ in g.edges] == [("QM1", "QM2")]
    assert g.discards == {"QM2"}
    assert any("Discard TARGET.Q" in line for line in g.nodes["QM2"])
    assert not any("Discard" in line for line in g.nodes["QM1"])


def test_reply_alone(route_a):
    _, reply, _ = route_a
    route = build_route(on_queue(reply))
    assert route.kind == "trace-route reply" and _shape(route) == EXPECTED
    assert route.trace_route is None                         # a reply carries no TraceRoute group
    text = render_text(route)
    assert text.splitlines()[0] == "Trace-route reply: 3 activities listed"
    assert text.count("Activity ") == 3
    _assert_one_hop(route)


def test_reports_alone_any_order(route_a):
    _, _, reports = route_a
    for order in (reports, reports[::-1], [reports[1], reports[2], reports[0]]):
        route = build_route(on_queue(*order))
        assert route.kind == "activity report" and _shape(route) == EXPECTED
        # the counters of the last report (3 recorded), not of the first one read
        assert route.trace_route.RecordedActivities == 3 and route.trace_route_source == "activity report %d" % (
            order.index(reports[2]) + 1)
        _assert_one_hop(route)


def test_reply_with_its_own_reports_lists_each_activity_once(route_a):
    trm, reply, reports = route_a
    for inputs in ([reply, *reports], [*reports, reply], [reports[2], reply, reports[0], reports[1]]):
        route = build_route(on_queue(*inputs))
        assert _shape(route) == EXPECTED, "activities counted twice or reordered"
        assert route.route_id == bytes(trm.md.MsgId)
        assert all(len(o) == 2 and "trace-route reply" in o for o in route.origins)
        text = render_text(route)
        assert text.splitlines()[0] == "Trace-route reply and 3 activity reports: 3 activities listed"
        assert "3 recorded, 0 unrecorded activities, 0 discontinuities" in text
        assert text.count("\nActivity ") == 3
        _assert_one_hop(route)
        dot = render_dot(route)
        assert dot.count("->") == 1 and '"QM2" -> "QM1"' not in dot
    # and with the trace-route message itself (its TraceRoute group gives the counters)
    route = build_route(on_queue(trm, reply, *reports))
    assert _shape(route) == EXPECTED and route.trace_route_source == "the trace-route message"


def test_reports_of_two_routes_are_two_routes(route_a, route_b):
    _, reply_a, reports_a = route_a
    _, reply_b, reports_b = route_b
    mixed = [reports_b[0], reports_a[2], reports_a[0], reports_b[2], reports_a[1], reports_b[1]]
    routes = build_routes(on_queue(*mixed))
    assert len(routes) == 2
    assert [r.route_id for r in routes] == [bytes(route_b[0].md.MsgId), bytes(route_a[0].md.MsgId)]
    for r in routes:
        assert _shape(r) == EXPECTED and r.inputs == {"activity report": 3}
        _assert_one_hop(r)
    with pytest.raises(ValueError, match="2 different trace-route messages"):
        build_route(on_queue(*mixed))
    routes = build_routes(on_queue(reply_a, reply_b, *mixed))
    assert [len(r.activities) for r in routes] == [3, 3]


def test_same_activity_twice_in_one_input_is_kept():
    """Multiset union: an input recording the same activity twice keeps both
    (only copies from different inputs are merged)."""
    act = activity("app", C.MQAT_UNIX, "x", _op(C.MQOPER_PUT, "QM1", T0, q="Q"))
    reply = PcfMessage.new(C.MQCFT_TRACE_ROUTE, C.MQCMD_TRACE_ROUTE, [act, act])
    assert len(build_route([reply]).activities) == 2
    assert len(build_route([reply, reply]).activities) == 2
    rep = activity_report(act, TraceRouteState(RecordedActivities=1)).body
    assert len(build_route([reply, rep]).activities) == 2


def test_svg_shows_one_hop_and_the_discard_on_qm2(route_a):
    if shutil.which("dot") is None:
        pytest.skip("graphviz not installed")
    _, reply, reports = route_a
    dot = render_dot(build_route(on_queue(*reports, reply)))
    svg = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True, check=True, timeout=60).stdout
    root = ET.fromstring(svg)
    edges = [g.find(SVG + "title").text for g in root.iter(SVG + "g") if g.get("class") == "edge"]
    assert edges == ["QM1->QM2"]
    nodes = {g.find(SVG + "title").text: " ".join(t.text or "" for t in g.iter(SVG + "text"))
             for g in root.iter(SVG + "g") if g.get("class") == "node"}
    assert set(nodes) == {"QM1", "QM2"}
    assert "Discard TARGET.Q" in nodes["QM2"] and "Discard" not in nodes["QM1"]
    assert "Put TARGET.Q" in nodes["QM1"]


def test_cli_reply_and_reports(tmp_path, route_a, route_b):
    files = []
    for i, m in enumerate([route_a[1], *route_a[2], *route_b[2]]):
        f = tmp_path / ("m%d.bin" % i)
        f.write_bytes(m.encode())
        files.append(str(f))
    r = subprocess.run([sys.executable, "-m", "mqcodec", "route", *files[:4]], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(b"\nActivity ") == 3 and b"3 activities listed" in r.stdout
    r = subprocess.run([sys.executable, "-m", "mqcodec", "route", *files], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(b"\nActivity ") == 6 and r.stdout.count(b"activities listed") == 2
    r = subprocess.run([sys.executable, "-m", "mqcodec", "route", "--format", "dot", *files],
                       capture_output=True, timeout=120)
    assert r.stdout.count(b"digraph") == 1 and r.stdout.count(b"subgraph cluster_") == 2
    assert r.stdout.count(b"->") == 2


@pytest.mark.tshark
def test_tshark_sees_the_kinds_and_first_activities(tshark, tmp_path, route_a):
    """tshark's mqpcf dissector reads each message's MQCFH and its first
    Activity group up to the end of its first Operation group; the distinct
    (ApplName, first operation type, QMgrName, date, time) it reads across
    the reply's first activity and the three reports are the activities the
    merged route lists."""
    _, reply, reports = route_a
    seen = []
    for m in [reply, *reports]:
        body = m.body
        bare = PcfMessage(dict(body.cfh), body.parameters, encoding=body.encoding, ccsid=body.ccsid)
        cfh, params = _tshark_params(tshark, tmp_path, bare.encode(), md_encoding=body.encoding)
        assert (cfh["mqpcf.cfh.type"], cfh["mqpcf.cfh.command"]) == (
            (C.MQCFT_TRACE_ROUTE, C.MQCMD_TRACE_ROUTE) if m is reply else (C.MQCFT_REPORT, C.MQCMD_ACTIVITY_MSG))
        assert cfh["mqpcf.cfh.ParmCount"] == len(body.parameters)
        vals = {}
        for depth, _, v in params:
            pid = int(v["mqpcf.parm.id"][0])
            if depth == 0 and pid != C.MQGACF_ACTIVITY:
                break
            if pid in (C.MQCACF_APPL_NAME, C.MQIACF_OPERATION_TYPE, C.MQCA_Q_MGR_NAME, C.MQCACF_OPERATION_DATE,
                       C.MQCACF_OPERATION_TIME) and pid not in vals:
                vals[pid] = (v.get("mqpcf.parm.string") or v.get("mqpcf.parm.int"))[0].rstrip()
        seen.append(vals)
    first_of_reply, from_reports = seen[0], seen[1:]
    assert first_of_reply in from_reports
    route = build_route(on_queue(reply, *reports))
    ours = [{C.MQCACF_APPL_NAME: a.ApplName, C.MQIACF_OPERATION_TYPE: str(a.Operations[0].OperationType),
             C.MQCA_Q_MGR_NAME: a.Operations[0].QMgrName, C.MQCACF_OPERATION_DATE: a.Operations[0].OperationDate,
             C.MQCACF_OPERATION_TIME: a.Operations[0].OperationTime} for a in route.activities]
    assert ours == from_reports


def test_strings_in_an_unknown_ccsid_do_not_name_fields():
    """A string kept as bytes (CCSID without a converter, mqcodec.ccsid) is
    no ApplName / QMgrName: it stays in ``extra`` and the route still renders."""
    from mqcodec.ibmmq.pcf import decode_pcf, encode_pcf

    act = P.group(C.MQGACF_ACTIVITY, [P.string(C.MQCACF_APPL_NAME, b"\xc1\xc2\xc3", ccsid=4242),
                                      _op(C.MQOPER_PUT, "QM1", T0, q="Q")])
    raw = encode_pcf(PcfMessage.new(C.MQCFT_TRACE_ROUTE, C.MQCMD_TRACE_ROUTE, [act], ccsid=819))
    msg = decode_pcf(raw)
    assert encode_pcf(msg) == raw
    assert msg.warnings and msg.warnings[0].field == "String"
    route = build_route([msg])
    a = route.activities[0]
    assert a.ApplName is None and a.extra[0].Value == b"\xc1\xc2\xc3"
    assert "ApplName: ''" in render_text(route) and '"QM1"' in render_dot(route)
