"""Trace-route messages, trace-route replies and activity reports: a typed
VIEW over a decoded :class:`~mqcodec.ibmmq.pcf.PcfMessage`.

IBM MQ "Trace-route message reference" and "Activity report reference":

* trace-route message: MQCFH Type MQCFT_TRACE_ROUTE, Command
  MQCMD_TRACE_ROUTE (after an MQMD of Format MQFMT_ADMIN, or inside an
  MQEPH when user data follows); data = the TraceRoute group, then zero or
  more Activity groups;
* trace-route reply: the same MQCFH (IBM: "the same as for a trace-route
  message"); data = one or more Activity groups (no TraceRoute group);
* activity report: MQEPH, MQCFH Type MQCFT_REPORT, Command
  MQCMD_ACTIVITY_MSG; data = one Activity group, which holds the
  TraceRoute group when the report was made for a trace-route message.

Groups and their parameters::

    TraceRoute  MQGACF_TRACE_ROUTE: Detail, RecordedActivities,
                UnrecordedActivities, DiscontinuityCount, MaxActivities,
                Accumulate, Forward, Deliver (all MQCFIN)
    Activity    MQGACF_ACTIVITY: ActivityApplName, ActivityApplType,
                ActivityDescription, Operation groups [, TraceRoute]
    Operation   MQGACF_OPERATION: OperationType, OperationDate,
                OperationTime, Message, QMgrName, QSGName, and
                operation-specific parameters
    Message     MQGACF_MESSAGE: MsgLength, MQMD group (MQGACF_MQMD),
                EmbeddedMQMD group (MQGACF_EMBEDDED_MQMD)

This module only reads: it never changes the message and never raises on
odd content (a parameter of an unexpected type stays in ``extra``).  The
trace-route processing rules are a separate concern.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..render import json_ready
from . import constants as _c
from .pcf import PcfMessage, PcfParameter, T_GROUP, T_INTEGER, T_INTEGER64, T_STRING, T_BYTE_STRING

__all__ = ["TraceRoute", "Activity", "Operation", "Message", "TraceRouteView", "trace_route_view", "IDS"]


def _id(name: str, value: int) -> int:
    """A constant from the constants tables, else its cmqcfc.h value."""
    v = getattr(_c, name, None)
    return v if isinstance(v, int) else value


# cmqcfc.h / cmqc.h values (fallbacks; the constants tables win when present)
IDS: dict[str, int] = {name: _id(name, value) for name, value in {
    "MQCFT_TRACE_ROUTE": 10, "MQCFT_REPORT": 12,
    "MQCMD_TRACE_ROUTE": 75, "MQCMD_ACTIVITY_MSG": 69,
    "MQGACF_TRACE_ROUTE": 8003, "MQGACF_OPERATION": 8004, "MQGACF_ACTIVITY": 8005,
    "MQGACF_EMBEDDED_MQMD": 8006, "MQGACF_MESSAGE": 8007, "MQGACF_MQMD": 8008,
    "MQIACF_ROUTE_DETAIL": 1234, "MQIACF_RECORDED_ACTIVITIES": 1235, "MQIACF_MAX_ACTIVITIES": 1236,
    "MQIACF_DISCONTINUITY_COUNT": 1237, "MQIACF_ROUTE_ACCUMULATION": 1238, "MQIACF_ROUTE_DELIVERY": 1239,
    "MQIACF_UNRECORDED_ACTIVITIES": 1257, "MQIACF_ROUTE_FORWARDING": 1259,
    "MQCACF_APPL_NAME": 3024, "MQIA_APPL_TYPE": 1, "MQCACF_ACTIVITY_DESCRIPTION": 3134,
    "MQIACF_OPERATION_TYPE": 1240, "MQCACF_OPERATION_DATE": 3132, "MQCACF_OPERATION_TIME": 3133,
    "MQCA_Q_MGR_NAME": 2015, "MQCA_QSG_NAME": 2040, "MQIACF_MSG_LENGTH": 1248,
    "MQCA_Q_NAME": 2016, "MQCACF_RESOLVED_Q_NAME": 3141, "MQCA_REMOTE_Q_NAME": 2018,
    "MQCA_REMOTE_Q_MGR_NAME": 2017, "MQCACH_CHANNEL_NAME": 3501, "MQIACH_CHANNEL_TYPE": 1511,
    "MQCACH_XMIT_Q_NAME": 3505, "MQIACF_FEEDBACK": 1245,
    # MQMD fields as PCF parameters (activity report "MQMD" group)
    "MQCACF_STRUC_ID": 3142, "MQIACF_VERSION": 1256, "MQIACF_REPORT": 1255, "MQIACF_MSG_TYPE": 1249,
    "MQIACF_EXPIRY": 1244, "MQIACF_ENCODING": 1243, "MQIA_CODED_CHAR_SET_ID": 2,
    "MQCACH_FORMAT_NAME": 3533, "MQIACF_PRIORITY": 1253, "MQIACF_PERSISTENCE": 1252,
    "MQBACF_MSG_ID": 7013, "MQBACF_CORREL_ID": 7011, "MQIACF_BACKOUT_COUNT": 1241,
    "MQCACF_REPLY_TO_Q": 3139, "MQCACF_REPLY_TO_Q_MGR": 3140, "MQCACF_USER_IDENTIFIER": 3025,
    "MQBACF_ACCOUNTING_TOKEN": 7010, "MQCACF_APPL_IDENTITY_DATA": 3135, "MQCACF_PUT_DATE": 3137,
    "MQCACF_PUT_TIME": 3138, "MQCACF_APPL_ORIGIN_DATA": 3136, "MQBACF_GROUP_ID": 7012,
    "MQIACH_MSG_SEQUENCE_NUMBER": 1514, "MQIACF_OFFSET": 1250, "MQIACF_MSG_FLAGS": 1247,
    "MQIACF_ORIGINAL_LENGTH": 1251,
}.items()}

_INT = (T_INTEGER, T_INTEGER64)
_STR = (T_STRING,)
_BYTES = (T_BYTE_STRING,)

# field name -> (parameter constant, accepted PCF types)
_TRACE_ROUTE_FIELDS = {
    "Detail": ("MQIACF_ROUTE_DETAIL", _INT),
    "RecordedActivities": ("MQIACF_RECORDED_ACTIVITIES", _INT),
    "UnrecordedActivities": ("MQIACF_UNRECORDED_ACTIVITIES", _INT),
    "DiscontinuityCount": ("MQIACF_DISCONTINUITY_COUNT", _INT),
    "MaxActivities": ("MQIACF_MAX_ACTIVITIES", _INT),
    "Accumulate": ("MQIACF_ROUTE_ACCUMULATION", _INT),
    "Forward": ("MQIACF_ROUTE_FORWARDING", _INT),
    "Deliver": ("MQIACF_ROUTE_DELIVERY", _INT),
}
_ACTIVITY_FIELDS = {
    "ApplName": ("MQCACF_APPL_NAME", _STR),
    "ApplType": ("MQIA_APPL_TYPE", _INT),
    "Description": ("MQCACF_ACTIVITY_DESCRIPTION", _STR),
}
_OPERATION_FIELDS = {
    "OperationType": ("MQIACF_OPERATION_TYPE", _INT),
    "OperationDate": ("MQCACF_OPERATION_DATE", _STR),
    "OperationTime": ("MQCACF_OPERATION_TIME", _STR),
    "QMgrName": ("MQCA_Q_MGR_NAME", _STR),
    "QSGName": ("MQCA_QSG_NAME", _STR),
    # operation-specific (IBM: "Operation-specific activity report message data")
    "QName": ("MQCA_Q_NAME", _STR),
    "ResolvedQName": ("MQCACF_RESOLVED_Q_NAME", _STR),
    "RemoteQName": ("MQCA_REMOTE_Q_NAME", _STR),
    "RemoteQMgrName": ("MQCA_REMOTE_Q_MGR_NAME", _STR),
    "ChannelName": ("MQCACH_CHANNEL_NAME", _STR),
    "ChannelType": ("MQIACH_CHANNEL_TYPE", _INT),
    "XmitQName": ("MQCACH_XMIT_Q_NAME", _STR),
    "Feedback": ("MQIACF_FEEDBACK", _INT),
}
_MQMD_FIELDS = {
    "StrucId": ("MQCACF_STRUC_ID", _STR), "Version": ("MQIACF_VERSION", _INT),
    "Report": ("MQIACF_REPORT", _INT), "MsgType": ("MQIACF_MSG_TYPE", _INT),
    "Expiry": ("MQIACF_EXPIRY", _INT), "Feedback": ("MQIACF_FEEDBACK", _INT),
    "Encoding": ("MQIACF_ENCODING", _INT), "CodedCharSetId": ("MQIA_CODED_CHAR_SET_ID", _INT),
    "Format": ("MQCACH_FORMAT_NAME", _STR), "Priority": ("MQIACF_PRIORITY", _INT),
    "Persistence": ("MQIACF_PERSISTENCE", _INT), "MsgId": ("MQBACF_MSG_ID", _BYTES),
    "CorrelId": ("MQBACF_CORREL_ID", _BYTES), "BackoutCount": ("MQIACF_BACKOUT_COUNT", _INT),
    "ReplyToQ": ("MQCACF_REPLY_TO_Q", _STR), "ReplyToQMgr": ("MQCACF_REPLY_TO_Q_MGR", _STR),
    "UserIdentifier": ("MQCACF_USER_IDENTIFIER", _STR),
    "AccountingToken": ("MQBACF_ACCOUNTING_TOKEN", _BYTES),
    "ApplIdentityData": ("MQCACF_APPL_IDENTITY_DATA", _STR), "PutApplType": ("MQIA_APPL_TYPE", _INT),
    "PutApplName": ("MQCACF_APPL_NAME", _STR), "PutDate": ("MQCACF_PUT_DATE", _STR),
    "PutTime": ("MQCACF_PUT_TIME", _STR), "ApplOriginData": ("MQCACF_APPL_ORIGIN_DATA", _STR),
    "GroupId": ("MQBACF_GROUP_ID", _BYTES), "MsgSeqNumber": ("MQIACH_MSG_SEQUENCE_NUMBER", _INT),
    "Offset": ("MQIACF_OFFSET", _INT), "MsgFlags": ("MQIACF_MSG_FLAGS", _INT),
    "OriginalLength": ("MQIACF_ORIGINAL_LENGTH", _INT),
}


def _fill(obj: Any, group: PcfParameter, fields: dict, groups: dict[int, str] | None = None) -> list[PcfParameter]:
    """Set ``obj.<field>`` from the group's children; return the children
    that are neither a known field nor one of ``groups`` (id -> role)."""
    by_id = {IDS[const]: (name, types) for name, (const, types) in fields.items()}
    extra = []
    for child in group.children:
        hit = by_id.get(child.Parameter) if child.Parameter is not None else None
        # a string kept as bytes (its CCSID has no converter, mqcodec.ccsid) is not
        # a field's text: it stays in ``extra``
        if (hit is not None and child.Type in hit[1] and getattr(obj, hit[0]) is None
                and not (hit[1] is _STR and not isinstance(child.Value, str))):
            setattr(obj, hit[0], child.Value)
        elif groups is not None and child.Type == T_GROUP and child.Parameter in groups:
            continue
        else:
            extra.append(child)
    return extra


def _value_name(const: str, value: Any) -> str | None:
    if not isinstance(value, int):
        return None
    try:
        return _c.value_name(IDS[const], value)
    except Exception:
        return None


def _plain(obj: Any, names) -> dict:
    return {n: getattr(obj, n) for n in names if getattr(obj, n) is not None}


class TraceRoute:
    """The TraceRoute PCF group (MQGACF_TRACE_ROUTE)."""

    if TYPE_CHECKING:  # the FIELDS attributes are set in __init__ from the table above
        def __getattr__(self, name: str) -> Any: ...

    FIELDS = tuple(_TRACE_ROUTE_FIELDS)

    def __init__(self, group: PcfParameter):
        self.group = group
        for n in self.FIELDS:
            setattr(self, n, None)
        #: parameters the view does not name (user-added ones included)
        self.extra = _fill(self, group, _TRACE_ROUTE_FIELDS)

    @property
    def total_activities(self) -> int | None:
        """RecordedActivities + UnrecordedActivities + DiscontinuityCount
        (IBM: must not exceed MaxActivities)."""
        parts = (self.RecordedActivities, self.UnrecordedActivities, self.DiscontinuityCount)
        return None if any(p is None for p in parts) else sum(parts)

    @json_ready
    def to_dict(self) -> dict:
        d = _plain(self, self.FIELDS)
        for n in ("Detail", "Accumulate", "Forward", "Deliver", "MaxActivities"):
            name = _value_name(_TRACE_ROUTE_FIELDS[n][0], getattr(self, n))
            if name is not None:
                d[n + "Name"] = name
        if self.extra:
            d["Extra"] = [p.to_dict() for p in self.extra]
        return d

    def __repr__(self) -> str:
        return "TraceRoute(%s)" % ", ".join("%s=%r" % kv for kv in _plain(self, self.FIELDS).items())


class Message:
    """The Message PCF group (MQGACF_MESSAGE): MsgLength, the MQMD group
    as a dict of MQMD field names (``MsgMD``), and the EmbeddedMQMD group
    (``EmbeddedMD``) when the operation saw one (e.g. in an MQXQH)."""

    def __init__(self, group: PcfParameter):
        self.group = group
        self.MsgLength = None
        self.MsgMD: dict | None = None
        self.EmbeddedMD: dict | None = None
        mqmd, emb = IDS["MQGACF_MQMD"], IDS["MQGACF_EMBEDDED_MQMD"]
        self.extra = _fill(self, group, {"MsgLength": ("MQIACF_MSG_LENGTH", _INT)},
                           {mqmd: "MsgMD", emb: "EmbeddedMD"})
        for child in group.children:
            if child.Type == T_GROUP and child.Parameter == mqmd and self.MsgMD is None:
                self.MsgMD = _md_dict(child)
            elif child.Type == T_GROUP and child.Parameter == emb and self.EmbeddedMD is None:
                self.EmbeddedMD = _md_dict(child)

    @json_ready
    def to_dict(self) -> dict:
        d = _plain(self, ("MsgLength", "MsgMD", "EmbeddedMD"))
        if self.extra:
            d["Extra"] = [p.to_dict() for p in self.extra]
        return d


class _MD:
    pass


def _md_dict(group: PcfParameter) -> dict:
    holder = _MD()
    for n in _MQMD_FIELDS:
        setattr(holder, n, None)
    extra = _fill(holder, group, _MQMD_FIELDS)
    d = {n: getattr(holder, n) for n in _MQMD_FIELDS if getattr(holder, n) is not None}
    if extra:
        d["Extra"] = [p.to_dict() for p in extra]
    return d


class Operation:
    """An Operation PCF group (MQGACF_OPERATION)."""

    if TYPE_CHECKING:  # the FIELDS attributes are set in __init__ from the table above
        def __getattr__(self, name: str) -> Any: ...

    FIELDS = tuple(_OPERATION_FIELDS)

    def __init__(self, group: PcfParameter):
        self.group = group
        for n in self.FIELDS:
            setattr(self, n, None)
        msg_id = IDS["MQGACF_MESSAGE"]
        self.extra = _fill(self, group, _OPERATION_FIELDS, {msg_id: "Message"})
        self.Message: Message | None = None
        for child in group.children:
            if child.Type == T_GROUP and child.Parameter == msg_id:
                self.Message = Message(child)
                break

    @property
    def OperationTypeName(self) -> str | None:
        return _value_name("MQIACF_OPERATION_TYPE", self.OperationType)

    @json_ready
    def to_dict(self) -> dict:
        d = _plain(self, self.FIELDS)
        if self.OperationTypeName is not None:
            d["OperationTypeName"] = self.OperationTypeName
        if self.Message is not None:
            d["Message"] = self.Message.to_dict()
        if self.extra:
            d["Extra"] = [p.to_dict() for p in self.extra]
        return d

    def __repr__(self) -> str:
        return "Operation(%r, %r %r)" % (self.OperationTypeName or self.OperationType, self.OperationDate,
                                         self.OperationTime)


class Activity:
    """An Activity PCF group (MQGACF_ACTIVITY): who did it and the
    operations it performed (``Operations``, in message order)."""

    if TYPE_CHECKING:  # the FIELDS attributes are set in __init__ from the table above
        def __getattr__(self, name: str) -> Any: ...

    FIELDS = tuple(_ACTIVITY_FIELDS)

    def __init__(self, group: PcfParameter):
        self.group = group
        for n in self.FIELDS:
            setattr(self, n, None)
        op_id, tr_id = IDS["MQGACF_OPERATION"], IDS["MQGACF_TRACE_ROUTE"]
        self.extra = _fill(self, group, _ACTIVITY_FIELDS, {op_id: "Operation", tr_id: "TraceRoute"})
        self.Operations = [Operation(c) for c in group.children if c.Type == T_GROUP and c.Parameter == op_id]
        tr = [c for c in group.children if c.Type == T_GROUP and c.Parameter == tr_id]
        #: the TraceRoute group inside the Activity (activity reports)
        self.TraceRoute: TraceRoute | None = TraceRoute(tr[0]) if tr else None

    @property
    def ApplTypeName(self) -> str | None:
        return _value_name("MQIA_APPL_TYPE", self.ApplType)

    @json_ready
    def to_dict(self) -> dict:
        d = _plain(self, self.FIELDS)
        if self.ApplTypeName is not None:
            d["ApplTypeName"] = self.ApplTypeName
        d["Operations"] = [op.to_dict() for op in self.Operations]
        if self.TraceRoute is not None:
            d["TraceRoute"] = self.TraceRoute.to_dict()
        if self.extra:
            d["Extra"] = [p.to_dict() for p in self.extra]
        return d

    def __repr__(self) -> str:
        return "Activity(%r, %d operations)" % (self.ApplName, len(self.Operations))


class TraceRouteView:
    """``kind``: "trace-route message", "trace-route reply" or "activity
    report"; ``trace_route``: the TraceRoute group (top level, or inside the
    Activity of an activity report) or None; ``activities``: the Activity
    groups in message order; ``extra``: other top-level parameters."""

    def __init__(self, message: PcfMessage, kind: str, trace_route: TraceRoute | None,
                 activities: list[Activity], extra: list[PcfParameter]):
        self.message = message
        self.kind = kind
        self.trace_route = trace_route
        self.activities = activities
        self.extra = extra

    @property
    def operations(self) -> list[Operation]:
        """Every operation of every activity, in route order."""
        return [op for act in self.activities for op in act.Operations]

    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = {"Kind": self.kind}
        if self.trace_route is not None:
            d["TraceRoute"] = self.trace_route.to_dict()
        d["Activities"] = [a.to_dict() for a in self.activities]
        if self.extra:
            d["Extra"] = [p.to_dict() for p in self.extra]
        return d

    def __repr__(self) -> str:
        return "TraceRouteView(%s, %d activities)" % (self.kind, len(self.activities))


def trace_route_view(message: PcfMessage) -> TraceRouteView | None:
    """The typed view of a trace-route message, trace-route reply or
    activity report; None for any other PCF message (told apart by the
    MQCFH Type and Command)."""
    t, cmd = message.cfh.get("Type"), message.cfh.get("Command")
    tr_id, act_id = IDS["MQGACF_TRACE_ROUTE"], IDS["MQGACF_ACTIVITY"]
    top_tr = [p for p in message.parameters if p.Type == T_GROUP and p.Parameter == tr_id]
    acts = [Activity(p) for p in message.parameters if p.Type == T_GROUP and p.Parameter == act_id]
    extra = [p for p in message.parameters
             if not (p.Type == T_GROUP and p.Parameter in (tr_id, act_id))]
    if t == IDS["MQCFT_TRACE_ROUTE"] and cmd == IDS["MQCMD_TRACE_ROUTE"]:
        kind = "trace-route message" if top_tr else "trace-route reply"
    elif t == IDS["MQCFT_REPORT"] and cmd == IDS["MQCMD_ACTIVITY_MSG"]:
        kind = "activity report"
    else:
        return None
    tr: TraceRoute | None
    if top_tr:
        tr = TraceRoute(top_tr[0])
        extra.extend(top_tr[1:])
    else:
        tr = next((a.TraceRoute for a in acts if a.TraceRoute is not None), None)
    return TraceRouteView(message, kind, tr, acts, extra)


# The processing rules (seed 004) live in traceroute_rules; they are
# re-exported here so that ``mqcodec.ibmmq.traceroute.forwarding_decision``
# and friends sit beside the view they act on.
from .traceroute_rules import (  # noqa: E402,F401
    ActivityOutcome, Disposition, ForwardingDecision, PerformedActivity, QueueManagerProfile,
    TraceRouteState, activity_report, apply_activity, forwarding_decision, new_trace_route_message,
    record_discontinuity, trace_route_reply,
)
