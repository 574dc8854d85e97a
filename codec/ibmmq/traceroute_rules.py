"""IBM MQ trace-route messaging rules, as pure functions (no I/O, no clock).

What a queue manager or a trace-route-enabled application does with a
trace-route message, from the seed document "Generating and configuring a
trace-route message" / "The TraceRoute PCF group" (shared/seeds/004) and
IBM's message-format reference:

* :func:`forwarding_decision` — the five-step algorithm a queue manager uses
  to decide whether a trace-route message may go to a remote queue manager;
* :func:`apply_activity` — one activity performed on behalf of a decoded
  trace-route message: the detail level and recording circumstances, the
  counters, MaxActivities, accumulation, activity reports, replies and what
  finally happens to the message;
* :func:`trace_route_reply` and :func:`activity_report` — the messages the
  rules say are generated, built per IBM's documented formats.

Two sentences of the seed contradict the definitions around them; the
reading taken is documented in ``docs/ibmmq-traceroute.md`` and selectable:

1. Step 1 sends a message bound for a remote queue manager that *supports*
   trace-route messaging to step 4 and then step 5, where
   ``MQROUTE_FORWARD_IF_SUPPORTED`` rejects it with ``MQFB_NOT_FORWARDED`` —
   which contradicts the definition of that very option ("only forwarded to
   queue managers that will honor the value of the Deliver parameter"; a
   capable queue manager honours it).  Default reading: a capable remote
   passes the step-4 check and is forwarded; ``literal=True`` follows the
   text word for word.
2. "The detail level of the performed activity is less than the level of
   detail specified by the parameter Detail" would leave MCA activities
   (MEDIUM) unrecorded at Detail HIGH, which the definition of HIGH
   ("activities specified in LOW and MEDIUM should be recorded") forbids.
   Reading: an activity is recorded only when ``Detail`` covers its level,
   i.e. it is unrecorded when ``Detail`` is less than the activity's level.
"""
from __future__ import annotations

import copy
import enum
from dataclasses import dataclass, field
from typing import Optional

from . import constants as C
from .pcf import PcfMessage, PcfParameter

__all__ = [
    "trace_route_group",
    "ForwardingDecision",
    "forwarding_decision",
    "QueueManagerProfile",
    "PerformedActivity",
    "Disposition",
    "ActivityOutcome",
    "TraceRouteState",
    "apply_activity",
    "record_discontinuity",
    "trace_route_reply",
    "activity_report",
    "new_trace_route_message",
]

_U32 = 0xFFFFFFFF
_FORWARD_REJ_UNSUP_MASK = C.MQROUTE_FORWARDING_REJ_UNSUP_MASK & _U32
_DELIVER_REJ_UNSUP_MASK = C.MQROUTE_DELIVER_REJ_UNSUP_MASK & _U32


# ---------------------------------------------------------------------------
# Forwarding (seed 004: "Queue managers use the following algorithm when
# determining whether to forward a trace-route message to a remote queue
# manager")
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ForwardingDecision:
    """``forward``: may the message go to the remote queue manager;
    ``feedback``: the MQFB_* value it is rejected with (None when
    forwarded); ``step``: the step of the algorithm that decided."""

    forward: bool
    feedback: Optional[int]
    step: int
    reason: str

    @property
    def feedback_name(self) -> Optional[str]:
        return None if self.feedback is None else C.MQFB.name_of(self.feedback)


def forwarding_decision(forward: int, deliver: int, remote_supports_trace_route: bool,
                        *, literal: bool = False) -> ForwardingDecision:
    """Decide whether a trace-route message may be forwarded.

    ``forward`` and ``deliver`` are the TraceRoute group's Forward and
    Deliver values; bits inside the REJ_UNSUP masks (0xFFFF0000) are
    options this implementation does not recognise, as no option is
    defined there.  A Forward value with neither option bit set is read as
    MQROUTE_FORWARD_IF_SUPPORTED (the conservative choice); a Deliver value
    without MQROUTE_DELIVER_YES as MQROUTE_DELIVER_NO.
    """
    forward &= _U32
    deliver &= _U32
    step = 1
    if not remote_supports_trace_route:
        # step 2: unrecognised delivery options
        if deliver & _DELIVER_REJ_UNSUP_MASK:
            return ForwardingDecision(False, C.MQFB_UNSUPPORTED_DELIVERY, 2,
                                      "Deliver holds options in MQROUTE_DELIVER_REJ_UNSUP_MASK")
        # step 3: Deliver YES -> forwarded; NO -> step 4
        if deliver & C.MQROUTE_DELIVER_YES:
            return ForwardingDecision(True, None, 3,
                                      "remote does not support trace-route; Deliver is MQROUTE_DELIVER_YES")
        step = 3
    # step 4: unrecognised forwarding options
    if forward & _FORWARD_REJ_UNSUP_MASK:
        return ForwardingDecision(False, C.MQFB_UNSUPPORTED_FORWARDING, 4,
                                  "Forward holds options in MQROUTE_FORWARDING_REJ_UNSUP_MASK")
    if remote_supports_trace_route and not literal:
        return ForwardingDecision(True, None, 4,
                                  "remote supports trace-route messaging and will honour Deliver")
    # step 5
    if forward & C.MQROUTE_FORWARD_ALL:
        return ForwardingDecision(True, None, 5, "Forward is MQROUTE_FORWARD_ALL")
    return ForwardingDecision(False, C.MQFB_NOT_FORWARDED, 5,
                              "Forward is MQROUTE_FORWARD_IF_SUPPORTED and %s" % (
                                  "the text's step 5 applies" if remote_supports_trace_route
                                  else "the remote will not honour Deliver"))


# ---------------------------------------------------------------------------
# The TraceRoute group as state
# ---------------------------------------------------------------------------
_TR_FIELDS = {
    "Detail": "MQIACF_ROUTE_DETAIL",
    "RecordedActivities": "MQIACF_RECORDED_ACTIVITIES",
    "UnrecordedActivities": "MQIACF_UNRECORDED_ACTIVITIES",
    "DiscontinuityCount": "MQIACF_DISCONTINUITY_COUNT",
    "MaxActivities": "MQIACF_MAX_ACTIVITIES",
    "Accumulate": "MQIACF_ROUTE_ACCUMULATION",
    "Forward": "MQIACF_ROUTE_FORWARDING",
    "Deliver": "MQIACF_ROUTE_DELIVERY",
}


@dataclass
class TraceRouteState:
    """The parameters of the TraceRoute PCF group (Table 16 of the seed)."""

    Detail: int = C.MQROUTE_DETAIL_MEDIUM
    RecordedActivities: int = 0
    UnrecordedActivities: int = 0
    DiscontinuityCount: int = 0
    MaxActivities: int = C.MQROUTE_UNLIMITED_ACTIVITIES
    Accumulate: int = C.MQROUTE_ACCUMULATE_NONE
    Forward: int = C.MQROUTE_FORWARD_IF_SUPPORTED
    Deliver: int = C.MQROUTE_DELIVER_NO

    @property
    def total_activities(self) -> int:
        """"The total number of activities is the sum of RecordedActivities,
        UnrecordedActivities, and DiscontinuityCount." """
        return self.RecordedActivities + self.UnrecordedActivities + self.DiscontinuityCount

    def to_group(self) -> PcfParameter:
        return PcfParameter.group(C.MQGACF_TRACE_ROUTE, [
            PcfParameter.integer(getattr(C, pid), getattr(self, name)) for name, pid in _TR_FIELDS.items()
        ])

    @classmethod
    def from_group(cls, group: PcfParameter) -> "TraceRouteState":
        values = {}
        for name, pid in _TR_FIELDS.items():
            p = group.find(getattr(C, pid))
            if p is not None:
                values[name] = p.Value
        return cls(**values)

    def write_into(self, group: PcfParameter) -> None:
        """Update the group's parameters in place (adding missing ones)."""
        for name, pid in _TR_FIELDS.items():
            p = group.find(getattr(C, pid))
            value = getattr(self, name)
            if p is None:
                group.Value.append(PcfParameter.integer(getattr(C, pid), value))
            else:
                p.Value = value


def trace_route_group(msg: PcfMessage) -> PcfParameter:
    """The TraceRoute group (MQGACF_TRACE_ROUTE) of a trace-route message;
    ValueError when it has none."""
    g = msg.find(C.MQGACF_TRACE_ROUTE)
    if g is None:
        raise ValueError("not a trace-route message: no TraceRoute group (MQGACF_TRACE_ROUTE)")
    return g


# ---------------------------------------------------------------------------
# Activities
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class QueueManagerProfile:
    """What the rules need to know of the queue manager performing an
    activity. ``supports_trace_route``: a WebSphere MQ V6 or later queue
    manager (earlier ones ignore trace-route messages entirely: passing
    through one is a discontinuity, see :func:`record_discontinuity`).
    ``activity_recording``: ACTIVREC is not
    DISABLED; ``trace_route_recording``: ROUTEREC is not DISABLED."""

    name: str = "QM1"
    supports_trace_route: bool = True
    activity_recording: bool = True
    trace_route_recording: bool = True


class Disposition(enum.Enum):
    CONTINUED = "continued"          # the activity did not end the message's journey here
    FORWARDED = "forwarded"          # sent on to a remote queue manager
    DELIVERED = "delivered"          # put on its target queue (Deliver YES)
    NOT_DELIVERED = "not delivered"  # reached its target, Deliver NO: processed per report options
    REJECTED = "rejected"            # rejected with a feedback code
    DISCARDED = "discarded"          # discarded at this queue manager


@dataclass
class PerformedActivity:
    """One activity performed on behalf of a trace-route message.

    ``level``: MQROUTE_DETAIL_LOW for user applications, MEDIUM for MCAs,
    HIGH for extra information recorded by user applications.
    ``group``: the Activity PCF group describing it (MQGACF_ACTIVITY).
    ``action``: "continue", "forward" (to ``remote``), "arrive" (at the
    target queue), "discard" or "dead-letter".
    """

    level: int
    group: PcfParameter
    action: str = "continue"
    remote_supports_trace_route: bool = True


@dataclass
class ActivityOutcome:
    message: PcfMessage
    recorded: bool
    accumulated: bool
    activity_report: bool
    reply: bool
    disposition: Disposition
    feedback: Optional[int] = None
    reasons: list[str] = field(default_factory=list)


def _recording(state: TraceRouteState, level: int, report_requested: bool,
               qm: QueueManagerProfile) -> tuple[bool, str]:
    """(recorded, why) per the seed's list of unrecorded circumstances."""
    if state.Detail < level:
        return False, "the activity's detail level is not covered by Detail"
    accumulate = state.Accumulate in (C.MQROUTE_ACCUMULATE_IN_MSG, C.MQROUTE_ACCUMULATE_AND_REPLY)
    if report_requested and not accumulate and not qm.activity_recording:
        return False, "activity report requested, no accumulation, activity recording disabled"
    if accumulate and not report_requested and not qm.trace_route_recording:
        return False, "accumulation requested, no activity report, trace-route recording disabled"
    if accumulate and report_requested and not qm.activity_recording and not qm.trace_route_recording:
        return False, "both requested, activity and trace-route recording both disabled"
    if not accumulate and not report_requested:
        return False, "neither accumulation nor an activity report requested"
    return True, "recorded"


def apply_activity(message: PcfMessage, activity: PerformedActivity, qm: QueueManagerProfile, *,
                   report_options: int = 0, literal: bool = False) -> ActivityOutcome:
    """Apply one activity to a decoded trace-route message.

    Returns the updated message (a copy; re-encodable with ``encode()``) and
    what happens: whether the activity was recorded, accumulated, reported
    (MQRO_ACTIVITY in ``report_options``, the MQMD's Report field), whether
    a trace-route reply is generated, and the message's disposition with
    its feedback code.
    """
    msg = copy.deepcopy(message)
    group = trace_route_group(msg)
    state = TraceRouteState.from_group(group)
    reasons: list[str] = []
    and_reply = state.Accumulate == C.MQROUTE_ACCUMULATE_AND_REPLY

    if not qm.supports_trace_route:
        # a queue manager that is not enabled for trace-route messaging does
        # nothing to the message; the next one that is counts the discontinuity
        return ActivityOutcome(msg, False, False, False, False,
                               Disposition.FORWARDED if activity.action == "forward" else Disposition.CONTINUED,
                               None, ["queue manager does not support trace-route messaging"])

    # MaxActivities: "The total number of activities must not exceed the value of MaxActivities."
    if state.MaxActivities != C.MQROUTE_UNLIMITED_ACTIVITIES and state.total_activities + 1 > state.MaxActivities:
        reasons.append("MaxActivities %d would be exceeded" % state.MaxActivities)
        return ActivityOutcome(msg, False, False, False, and_reply, Disposition.REJECTED,
                               C.MQFB_MAX_ACTIVITIES, reasons)

    report_requested = bool(report_options & C.MQRO_ACTIVITY)
    recorded, why = _recording(state, activity.level, report_requested, qm)
    reasons.append(why)
    accumulated = reported = False
    if recorded:
        state.RecordedActivities += 1
        accumulate = state.Accumulate in (C.MQROUTE_ACCUMULATE_IN_MSG, C.MQROUTE_ACCUMULATE_AND_REPLY)
        accumulated = accumulate and qm.trace_route_recording
        reported = report_requested and qm.activity_recording
    else:
        state.UnrecordedActivities += 1
    state.write_into(group)
    if accumulated:
        msg.parameters.append(copy.deepcopy(activity.group))
        msg.cfh["ParameterCount"] = len(msg.parameters)

    disposition, feedback, reply = Disposition.CONTINUED, None, False
    if activity.action == "forward":
        d = forwarding_decision(state.Forward, state.Deliver, activity.remote_supports_trace_route,
                                literal=literal)
        reasons.append("step %d: %s" % (d.step, d.reason))
        disposition = Disposition.FORWARDED if d.forward else Disposition.REJECTED
        feedback = d.feedback
    elif activity.action == "arrive":
        if (state.Deliver & _U32) & C.MQROUTE_DELIVER_YES:
            disposition = Disposition.DELIVERED
        else:
            disposition, feedback = Disposition.NOT_DELIVERED, C.MQFB_NOT_DELIVERED
            reasons.append("Deliver is MQROUTE_DELIVER_NO: processed according to its report options (%s)" % (
                "discarded: MQRO_DISCARD_MSG" if report_options & C.MQRO_DISCARD_MSG else "dead-letter queue"))
        # "put to a local queue (target queue or dead-letter queue)"
        reply = and_reply
    elif activity.action == "dead-letter":
        disposition, reply = Disposition.NOT_DELIVERED, and_reply
    elif activity.action == "discard":
        disposition, reply = Disposition.DISCARDED, and_reply
    return ActivityOutcome(msg, recorded, accumulated, reported, reply, disposition, feedback, reasons)


def record_discontinuity(message: PcfMessage) -> PcfMessage:
    """"[DiscontinuityCount] specifies the number of times the trace-route
    message has been routed through a queue manager whose applications were
    not enabled for trace-route messaging. This value is incremented by the
    queue manager." Returns an updated copy."""
    msg = copy.deepcopy(message)
    group = trace_route_group(msg)
    state = TraceRouteState.from_group(group)
    state.DiscontinuityCount += 1
    state.write_into(group)
    return msg


# ---------------------------------------------------------------------------
# Builders (IBM's "Trace-route message format", "Trace-route reply message
# format", "Activity report message format")
# ---------------------------------------------------------------------------
def new_trace_route_message(state: TraceRouteState | None = None, *, encoding: int = C.ENCODING_BIG,
                            ccsid: int = 1208) -> PcfMessage:
    """A trace-route message body as generated manually: MQCFH (type
    MQCFT_TRACE_ROUTE, command MQCMD_TRACE_ROUTE) and the TraceRoute group;
    "an Activity PCF group is not required"."""
    state = state or TraceRouteState()
    return PcfMessage.new(C.MQCFT_TRACE_ROUTE, C.MQCMD_TRACE_ROUTE, [state.to_group()],
                          encoding=encoding, ccsid=ccsid)


def trace_route_reply(message: PcfMessage):
    """The trace-route reply for an accumulated trace-route message.

    IBM: the reply's MQCFH "is the same as for a trace-route message"; its
    data holds the Activity groups (copied from the trace-route message);
    its MQMD has MsgType MQMT_REPLY, Feedback MQFB_NONE, Format
    MQFMT_ADMIN, Encoding and CodedCharSetId copied from the trace-route
    message. Returns an :class:`~mqcodec.ibmmq.message.MQMessage`.
    """
    from .headers import MQMD
    from .message import MQMessage

    activities = [copy.deepcopy(p) for p in message.parameters if p.Parameter == C.MQGACF_ACTIVITY]
    body = PcfMessage.new(C.MQCFT_TRACE_ROUTE, C.MQCMD_TRACE_ROUTE, activities,
                          encoding=message.encoding, ccsid=message.ccsid)
    md = MQMD(MsgType=C.MQMT_REPLY, Feedback=C.MQFB_NONE, Format=C.MQFMT_ADMIN.strip(),
              Encoding=message.encoding, CodedCharSetId=message.ccsid)
    return MQMessage(md, [], body, md_encoding=message.encoding)


def activity_report(activity_group: PcfParameter, trace_route: TraceRouteState | None = None, *,
                    encoding: int = C.ENCODING_BIG, ccsid: int = 1208, appl_name: str = "",
                    appl_type: int = 0, activity_desc: str = ""):
    """An activity report: MQMD (MsgType MQMT_REPORT, Feedback MQFB_ACTIVITY,
    Format MQFMT_EMBEDDED_PCF), an MQEPH whose MQCFH has type MQCFT_REPORT
    and command MQCMD_ACTIVITY_MSG, and the Activity group — holding, for a
    trace-route message, the TraceRoute group."""
    from .headers import MQMD
    from .message import MQMessage

    group = copy.deepcopy(activity_group)
    if trace_route is not None and group.find(C.MQGACF_TRACE_ROUTE) is None:
        group.Value.append(trace_route.to_group())
    body = PcfMessage.new(C.MQCFT_REPORT, C.MQCMD_ACTIVITY_MSG, [group], encoding=encoding, ccsid=ccsid,
                          eph={"Encoding": encoding, "CodedCharSetId": ccsid, "Format": "        "})
    md = MQMD(MsgType=C.MQMT_REPORT, Feedback=C.MQFB_ACTIVITY, Format=C.MQFMT_EMBEDDED_PCF.strip(),
              Encoding=encoding, CodedCharSetId=ccsid)
    return MQMessage(md, [], body, md_encoding=encoding)
