"""The trace-route view over decoded PCF: trace-route messages, replies and
activity reports, built byte by byte from IBM's "Trace-route message
reference" / "Activity report reference" and cmqcfc.h values."""
from __future__ import annotations

import struct

from mqcodec.ibmmq.pcf import decode_pcf
from mqcodec.ibmmq.traceroute import IDS, Activity, TraceRoute, trace_route_view

# cmqcfc.h / cmqc.h
MQCFT_TRACE_ROUTE, MQCFT_REPORT, MQCFT_STATISTICS = 10, 12, 21
MQCMD_TRACE_ROUTE, MQCMD_ACTIVITY_MSG = 75, 69
MQGACF_TRACE_ROUTE, MQGACF_OPERATION, MQGACF_ACTIVITY = 8003, 8004, 8005
MQGACF_EMBEDDED_MQMD, MQGACF_MESSAGE, MQGACF_MQMD = 8006, 8007, 8008
MQIACF_ROUTE_DETAIL, MQIACF_RECORDED_ACTIVITIES, MQIACF_MAX_ACTIVITIES = 1234, 1235, 1236
MQIACF_DISCONTINUITY_COUNT, MQIACF_ROUTE_ACCUMULATION, MQIACF_ROUTE_DELIVERY = 1237, 1238, 1239
MQIACF_UNRECORDED_ACTIVITIES, MQIACF_ROUTE_FORWARDING = 1257, 1259
MQCACF_APPL_NAME, MQIA_APPL_TYPE, MQCACF_ACTIVITY_DESC = 3024, 1, 3134
MQIACF_OPERATION_TYPE, MQCACF_OPERATION_DATE, MQCACF_OPERATION_TIME = 1240, 3132, 3133
MQCA_Q_MGR_NAME, MQCA_Q_NAME, MQIACF_MSG_LENGTH = 2015, 2016, 1248
MQCACH_CHANNEL_NAME, MQCACH_XMIT_Q_NAME, MQCA_REMOTE_Q_MGR_NAME = 3501, 3505, 2017
MQCACF_STRUC_ID, MQIACF_VERSION, MQIACF_MSG_TYPE, MQBACF_MSG_ID = 3142, 1256, 1249, 7013
MQCACH_FORMAT_NAME, MQIACF_PERSISTENCE, MQIACH_MSG_SEQUENCE_NUMBER = 3533, 1252, 1514
# MQROUTE_* ("Trace-route" constants page)
MQROUTE_DETAIL_MEDIUM, MQROUTE_UNLIMITED_ACTIVITIES = 8, 0
MQROUTE_ACCUMULATE_IN_MSG, MQROUTE_FORWARD_ALL, MQROUTE_DELIVER_NO = 65540, 256, 8192
MQOPER_PUT, MQOPER_GET, MQOPER_SEND = 4, 3, 12  # MQOPER_*
MQAT_UNIX, MQAT_QMGR = 6, 7
MQMT_DATAGRAM = 8


# --- a tiny independent PCF writer (big-endian), from the structure layouts
def cfin(pid, v):
    return struct.pack(">4l", 3, 16, pid, v)


def cfst(pid, s, ccsid=819):
    raw = s.encode("latin-1")
    pad = b"\0" * (-len(raw) % 4)
    return struct.pack(">5l", 4, 20 + len(raw) + len(pad), pid, ccsid, len(raw)) + raw + pad


def cfbs(pid, b):
    pad = b"\0" * (-len(b) % 4)
    return struct.pack(">4l", 9, 16 + len(b) + len(pad), pid, len(b)) + b + pad


def group(pid, *children):
    return struct.pack(">4l", 20, 16, pid, len(children)) + b"".join(children)


def pcf(type_, command, *params):
    return struct.pack(">9l", type_, 36, 3, command, 1, 1, 0, 0, len(params)) + b"".join(params)


TRACE_ROUTE_GROUP = group(
    MQGACF_TRACE_ROUTE,
    cfin(MQIACF_ROUTE_DETAIL, MQROUTE_DETAIL_MEDIUM),
    cfin(MQIACF_RECORDED_ACTIVITIES, 2),
    cfin(MQIACF_UNRECORDED_ACTIVITIES, 1),
    cfin(MQIACF_DISCONTINUITY_COUNT, 0),
    cfin(MQIACF_MAX_ACTIVITIES, MQROUTE_UNLIMITED_ACTIVITIES),
    cfin(MQIACF_ROUTE_ACCUMULATION, MQROUTE_ACCUMULATE_IN_MSG),
    cfin(MQIACF_ROUTE_FORWARDING, MQROUTE_FORWARD_ALL),
    cfin(MQIACF_ROUTE_DELIVERY, MQROUTE_DELIVER_NO),
)

MQMD_GROUP = group(
    MQGACF_MQMD,
    cfst(MQCACF_STRUC_ID, "MD  "),
    cfin(MQIACF_VERSION, 2),
    cfin(MQIACF_MSG_TYPE, MQMT_DATAGRAM),
    cfst(MQCACH_FORMAT_NAME, "MQADMIN "),
    cfin(MQIACF_PERSISTENCE, 0),
    cfbs(MQBACF_MSG_ID, bytes(range(24))),
    cfin(MQIACH_MSG_SEQUENCE_NUMBER, 1),
)

ACTIVITY_PUT = group(
    MQGACF_ACTIVITY,
    cfst(MQCACF_APPL_NAME, "dspmqrte"),
    cfin(MQIA_APPL_TYPE, MQAT_UNIX),
    cfst(MQCACF_ACTIVITY_DESC, "Display Route Application"),
    group(MQGACF_OPERATION,
          cfin(MQIACF_OPERATION_TYPE, MQOPER_PUT),
          cfst(MQCACF_OPERATION_DATE, "2024-03-01"),
          cfst(MQCACF_OPERATION_TIME, "12.00.01"),
          group(MQGACF_MESSAGE, cfin(MQIACF_MSG_LENGTH, 0), MQMD_GROUP),
          cfst(MQCA_Q_MGR_NAME, "QM1"),
          cfst(MQCA_Q_NAME, "TARGET.Q")),
)

ACTIVITY_SEND = group(
    MQGACF_ACTIVITY,
    cfst(MQCACF_APPL_NAME, "amqrmppa"),
    cfin(MQIA_APPL_TYPE, MQAT_QMGR),
    cfst(MQCACF_ACTIVITY_DESC, "Sending Message Channel Agent"),
    group(MQGACF_OPERATION,
          cfin(MQIACF_OPERATION_TYPE, MQOPER_GET),
          cfst(MQCACF_OPERATION_DATE, "2024-03-01"),
          cfst(MQCACF_OPERATION_TIME, "12.00.02"),
          cfst(MQCA_Q_MGR_NAME, "QM1"),
          cfst(MQCA_Q_NAME, "QM2.XMITQ")),
    group(MQGACF_OPERATION,
          cfin(MQIACF_OPERATION_TYPE, MQOPER_SEND),
          cfst(MQCACF_OPERATION_DATE, "2024-03-01"),
          cfst(MQCACF_OPERATION_TIME, "12.00.03"),
          cfst(MQCA_Q_MGR_NAME, "QM1"),
          cfst(MQCACH_CHANNEL_NAME, "QM1.TO.QM2"),
          cfst(MQCACH_XMIT_Q_NAME, "QM2.XMITQ"),
          cfst(MQCA_REMOTE_Q_MGR_NAME, "QM2"),
          cfin(9999, 5)),  # an operation-specific parameter the view does not name
)


def test_ids_are_cmqcfc_values():
    expect = {"MQGACF_TRACE_ROUTE": 8003, "MQGACF_OPERATION": 8004, "MQGACF_ACTIVITY": 8005,
              "MQGACF_MESSAGE": 8007, "MQGACF_MQMD": 8008, "MQGACF_EMBEDDED_MQMD": 8006,
              "MQIACF_ROUTE_DETAIL": 1234, "MQIACF_UNRECORDED_ACTIVITIES": 1257,
              "MQIACF_ROUTE_FORWARDING": 1259, "MQIACF_OPERATION_TYPE": 1240,
              "MQCACF_OPERATION_DATE": 3132, "MQCACF_ACTIVITY_DESCRIPTION": 3134,
              "MQCMD_TRACE_ROUTE": 75, "MQCMD_ACTIVITY_MSG": 69, "MQCFT_REPORT": 12}
    assert {k: IDS[k] for k in expect} == expect


def test_trace_route_message():
    data = pcf(MQCFT_TRACE_ROUTE, MQCMD_TRACE_ROUTE, TRACE_ROUTE_GROUP, ACTIVITY_PUT, ACTIVITY_SEND)
    msg = decode_pcf(data)
    assert msg.encode() == data
    view = trace_route_view(msg)
    assert view.kind == "trace-route message"
    tr = view.trace_route
    assert isinstance(tr, TraceRoute)
    assert (tr.Detail, tr.RecordedActivities, tr.UnrecordedActivities, tr.DiscontinuityCount,
            tr.MaxActivities, tr.Accumulate, tr.Forward, tr.Deliver) == (
        MQROUTE_DETAIL_MEDIUM, 2, 1, 0, MQROUTE_UNLIMITED_ACTIVITIES, MQROUTE_ACCUMULATE_IN_MSG,
        MQROUTE_FORWARD_ALL, MQROUTE_DELIVER_NO)
    assert tr.total_activities == 3 and tr.extra == []
    assert [a.ApplName for a in view.activities] == ["dspmqrte", "amqrmppa"]
    put, send = view.activities
    assert isinstance(put, Activity) and put.ApplType == MQAT_UNIX
    assert put.Description == "Display Route Application"
    op = put.Operations[0]
    assert (op.OperationType, op.OperationDate, op.OperationTime, op.QMgrName, op.QName) == (
        MQOPER_PUT, "2024-03-01", "12.00.01", "QM1", "TARGET.Q")
    assert op.Message.MsgLength == 0
    md = op.Message.MsgMD
    assert md["StrucId"] == "MD" and md["Version"] == 2 and md["MsgType"] == MQMT_DATAGRAM
    assert md["Format"] == "MQADMIN" and md["MsgId"] == bytes(range(24)) and md["MsgSeqNumber"] == 1
    assert op.Message.EmbeddedMD is None
    assert [o.OperationType for o in view.operations] == [MQOPER_PUT, MQOPER_GET, MQOPER_SEND]
    s = send.Operations[1]
    assert (s.ChannelName, s.XmitQName, s.RemoteQMgrName) == ("QM1.TO.QM2", "QM2.XMITQ", "QM2")
    assert [(p.Parameter, p.Value) for p in s.extra] == [(9999, 5)]
    d = view.to_dict()
    assert d["Kind"] == "trace-route message" and len(d["Activities"]) == 2
    if "OperationTypeName" in d["Activities"][0]["Operations"][0]:  # when the tables have MQOPER
        assert d["Activities"][0]["Operations"][0]["OperationTypeName"] == "MQOPER_PUT"
    if "DetailName" in d["TraceRoute"]:
        assert d["TraceRoute"]["DetailName"] == "MQROUTE_DETAIL_MEDIUM"


def test_trace_route_reply_has_no_trace_route_group():
    # IBM: reply MQCFH is that of a trace-route message; data = Activity groups
    msg = decode_pcf(pcf(MQCFT_TRACE_ROUTE, MQCMD_TRACE_ROUTE, ACTIVITY_PUT, ACTIVITY_SEND))
    view = trace_route_view(msg)
    assert view.kind == "trace-route reply" and view.trace_route is None
    assert len(view.activities) == 2


def test_activity_report_inside_mqeph_little_endian():
    # activity report: MQEPH, MQCFT_REPORT / MQCMD_ACTIVITY_MSG, one Activity
    # group holding the TraceRoute group; re-encode little-endian
    big = pcf(MQCFT_REPORT, MQCMD_ACTIVITY_MSG,
              ACTIVITY_SEND[:12] + struct.pack(">l", 6) + ACTIVITY_SEND[16:] + TRACE_ROUTE_GROUP)
    msg = decode_pcf(big)
    msg.encoding = 546
    msg.eph = {"StrucId": "EPH ", "Version": 1, "StrucLength": 0, "Encoding": 546, "CodedCharSetId": 1208,
               "Format": "MQSTR   ", "Flags": 0}
    msg.trailing = b"hello"
    data = msg.encode()
    assert data[:4] == b"EPH " and data[4:8] == b"\x01\0\0\0"
    view = trace_route_view(decode_pcf(data))
    assert view.kind == "activity report"
    assert view.trace_route is not None and view.trace_route.Deliver == MQROUTE_DELIVER_NO
    assert view.activities[0].TraceRoute is view.trace_route
    assert view.activities[0].ApplType == MQAT_QMGR
    assert view.message.trailing == b"hello"


def test_other_pcf_is_not_a_trace_route(vectors):
    msg = decode_pcf((vectors / "ibmmq" / "statistics_q.dat").read_bytes())
    assert msg.cfh["Type"] == MQCFT_STATISTICS
    assert trace_route_view(msg) is None


def test_odd_content_never_raises():
    # Detail as a string, a bare integer at top level, an empty Activity
    odd_tr = group(MQGACF_TRACE_ROUTE, cfst(MQIACF_ROUTE_DETAIL, "x"), cfin(MQIACF_MAX_ACTIVITIES, 10))
    data = pcf(MQCFT_TRACE_ROUTE, MQCMD_TRACE_ROUTE, odd_tr, cfin(1, 2), group(MQGACF_ACTIVITY),
               group(MQGACF_ACTIVITY, group(MQGACF_OPERATION, group(MQGACF_MESSAGE, group(MQGACF_EMBEDDED_MQMD)))))
    view = trace_route_view(decode_pcf(data))
    assert view.trace_route.Detail is None and view.trace_route.MaxActivities == 10
    assert [p.Value for p in view.trace_route.extra] == ["x"]
    assert view.trace_route.total_activities is None
    assert [p.Parameter for p in view.extra] == [1]
    assert view.activities[0].ApplName is None and view.activities[0].Operations == []
    assert view.activities[1].Operations[0].Message.EmbeddedMD == {}
    assert view.to_dict()["Kind"] == "trace-route message"
