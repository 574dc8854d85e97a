"""Trace-route rules, each test citing the sentence of the seed
(shared/seeds/004_7d03779449488ef7.txt) it checks.  Expected outcomes are
worked out by hand from the seed's steps, not taken from the code."""
import itertools

import pytest

from mqcodec.ibmmq import constants as C
from mqcodec.ibmmq.pcf import PcfParameter as P, decode_pcf, encode_pcf
from mqcodec.ibmmq.traceroute_rules import (
    PerformedActivity,
    Disposition,
    QueueManagerProfile,
    TraceRouteState,
    activity_report,
    apply_activity,
    forwarding_decision,
    new_trace_route_message,
    record_discontinuity,
    trace_route_reply,
)
from mqcodec.ibmmq import decode_message

ALL, IF_SUP = C.MQROUTE_FORWARD_ALL, C.MQROUTE_FORWARD_IF_SUPPORTED
YES, NO = C.MQROUTE_DELIVER_YES, C.MQROUTE_DELIVER_NO
UNSUP = 0x00010000  # a bit inside the REJ_UNSUP masks (X'FFFF0000')


def test_constant_values_match_ibm_table():
    # IBM "MQROUTE_* (Trace-route)" constants page
    assert (C.MQROUTE_DETAIL_LOW, C.MQROUTE_DETAIL_MEDIUM, C.MQROUTE_DETAIL_HIGH) == (2, 8, 32)
    assert (ALL, IF_SUP, YES, NO) == (0x100, 0x200, 0x1000, 0x2000)
    assert (C.MQROUTE_ACCUMULATE_NONE, C.MQROUTE_ACCUMULATE_IN_MSG, C.MQROUTE_ACCUMULATE_AND_REPLY) == (
        0x10003, 0x10004, 0x10005)
    assert C.MQROUTE_UNLIMITED_ACTIVITIES == 0


# --- the five-step forwarding algorithm --------------------------------------
# Worked by hand from the seed:
#  not capable -> step 2 (deliver unsup? reject UNSUPPORTED_DELIVERY)
#              -> step 3 (YES: forwarded; NO: step 4)
#  step 4 (forward unsup? reject UNSUPPORTED_FORWARDING) -> step 5
#  step 5: IF_SUPPORTED -> rejected NOT_FORWARDED; ALL -> forwarded
#  capable -> step 4 -> (reading) forwarded; (literal text) step 5.
EXPECTED = {
    # (forward, deliver, capable): (forward?, feedback)
    (ALL, YES, False): (True, None),
    (ALL, NO, False): (True, None),
    (IF_SUP, YES, False): (True, None),
    (IF_SUP, NO, False): (False, C.MQFB_NOT_FORWARDED),
    (ALL, YES, True): (True, None),
    (ALL, NO, True): (True, None),
    (IF_SUP, YES, True): (True, None),
    (IF_SUP, NO, True): (True, None),
    (ALL | UNSUP, YES, False): (True, None),             # step 3 forwards before step 4 looks
    (ALL | UNSUP, NO, False): (False, C.MQFB_UNSUPPORTED_FORWARDING),
    (IF_SUP | UNSUP, YES, True): (False, C.MQFB_UNSUPPORTED_FORWARDING),
    (ALL, YES | UNSUP, False): (False, C.MQFB_UNSUPPORTED_DELIVERY),
    (ALL, NO | UNSUP, False): (False, C.MQFB_UNSUPPORTED_DELIVERY),
    (ALL, YES | UNSUP, True): (True, None),               # step 2 is skipped for a capable remote
    (IF_SUP | UNSUP, NO | UNSUP, False): (False, C.MQFB_UNSUPPORTED_DELIVERY),  # step 2 before step 4
}


@pytest.mark.parametrize("forward,deliver,capable", list(EXPECTED), ids=lambda v: hex(v) if isinstance(v, int) and not isinstance(v, bool) else str(v))
def test_forwarding_algorithm(forward, deliver, capable):
    d = forwarding_decision(forward, deliver, capable)
    assert (d.forward, d.feedback) == EXPECTED[(forward, deliver, capable)]
    assert (d.feedback is None) == d.forward


def test_every_forward_deliver_capability_combination_is_covered():
    combos = set(itertools.product([ALL, IF_SUP], [YES, NO], [False, True]))
    assert combos <= set(EXPECTED)


@pytest.mark.parametrize("forward,deliver", list(itertools.product([ALL, IF_SUP], [YES, NO])))
def test_literal_reading_of_step_one(forward, deliver):
    """'If the remote queue manager is capable of supporting trace-route
    messaging, then the algorithm continues to step 4' ... step 5: 'If Forward
    is specified as MQROUTE_FORWARD_IF_SUPPORTED, then the trace-route message
    is rejected with feedback MQFB_NOT_FORWARDED.'  Word for word, a capable
    remote with IF_SUPPORTED is rejected; the default reading forwards it."""
    d = forwarding_decision(forward, deliver, True, literal=True)
    if forward == IF_SUP:
        assert (d.forward, d.feedback, d.step) == (False, C.MQFB_NOT_FORWARDED, 5)
    else:
        assert (d.forward, d.feedback) == (True, None)
    assert forwarding_decision(forward, deliver, True).forward


def test_masks_are_unsigned_safe():
    # the masks are stored signed (-65536); a negative Forward value has mask bits set
    assert forwarding_decision(ALL, -1, False).feedback == C.MQFB_UNSUPPORTED_DELIVERY
    assert forwarding_decision(-1, NO, False).feedback == C.MQFB_UNSUPPORTED_FORWARDING
    assert forwarding_decision(-1, YES, True).feedback == C.MQFB_UNSUPPORTED_FORWARDING


# --- activities --------------------------------------------------------------
def _activity_group(name="amqrmppa"):
    return P.group(C.MQGACF_ACTIVITY, [P.string(C.MQCACF_APPL_NAME, name), P.integer(C.MQIA_APPL_TYPE, 7)])


def _msg(**state):
    return new_trace_route_message(TraceRouteState(**state))


def _counts(msg):
    s = TraceRouteState.from_group(msg.find(C.MQGACF_TRACE_ROUTE))
    return s.RecordedActivities, s.UnrecordedActivities, s.DiscontinuityCount


MCA = C.MQROUTE_DETAIL_MEDIUM
APP = C.MQROUTE_DETAIL_LOW
ACC = C.MQROUTE_ACCUMULATE_IN_MSG


@pytest.mark.parametrize("detail,level,recorded", [
    (C.MQROUTE_DETAIL_LOW, APP, True),     # "Only activities performed by user application are recorded."
    (C.MQROUTE_DETAIL_LOW, MCA, False),
    (C.MQROUTE_DETAIL_MEDIUM, APP, True),  # "Additionally, activities performed by MCAs are recorded."
    (C.MQROUTE_DETAIL_MEDIUM, MCA, True),
    (C.MQROUTE_DETAIL_HIGH, MCA, True),    # "Activities specified in ... LOW, and ... MEDIUM should be recorded."
    (C.MQROUTE_DETAIL_HIGH, C.MQROUTE_DETAIL_HIGH, True),
    (C.MQROUTE_DETAIL_MEDIUM, C.MQROUTE_DETAIL_HIGH, False),
])
def test_detail_levels(detail, level, recorded):
    out = apply_activity(_msg(Detail=detail, Accumulate=ACC), PerformedActivity(level, _activity_group()),
                         QueueManagerProfile())
    assert out.recorded is recorded
    assert _counts(out.message)[:2] == ((1, 0) if recorded else (0, 1))
    # "For every recorded activity, RecordedActivities increments by one."
    # "For every unrecorded activity the parameter, UnrecordedActivities, increments by one."


@pytest.mark.parametrize("report,accumulate,activrec,routerec,recorded", [
    # "requests an activity report but not accumulation, and the queue manager is not enabled for activity recording"
    (True, False, False, True, False),
    (True, False, True, True, True),
    # "requests accumulation but not an activity report, and the queue manager is not enabled for trace-route messaging"
    (False, True, True, False, False),
    (False, True, True, True, True),
    # "requests both ... and the queue manager is not enabled for activity recording and trace route messaging"
    (True, True, False, False, False),
    (True, True, True, False, True),
    (True, True, False, True, True),
    # "requests neither accumulation nor an activity report"
    (False, False, True, True, False),
])
def test_unrecorded_circumstances(report, accumulate, activrec, routerec, recorded):
    msg = _msg(Detail=C.MQROUTE_DETAIL_MEDIUM,
               Accumulate=C.MQROUTE_ACCUMULATE_IN_MSG if accumulate else C.MQROUTE_ACCUMULATE_NONE)
    out = apply_activity(msg, PerformedActivity(MCA, _activity_group()),
                         QueueManagerProfile(activity_recording=activrec, trace_route_recording=routerec),
                         report_options=C.MQRO_ACTIVITY if report else 0)
    assert out.recorded is recorded
    # "An activity is considered to be recorded if information about it has been
    #  written to the trace-route message, or if an activity report has been generated."
    assert out.recorded == (out.accumulated or out.activity_report)


def test_accumulation_appends_activity_group_and_reencodes():
    """MQROUTE_ACCUMULATE_IN_MSG: 'activity information is accumulated in the
    message data of the trace-route message' — TraceRoute group, then Activity groups."""
    out = apply_activity(_msg(Accumulate=ACC), PerformedActivity(MCA, _activity_group("hop1")), QueueManagerProfile())
    out = apply_activity(out.message, PerformedActivity(MCA, _activity_group("hop2")), QueueManagerProfile())
    data = encode_pcf(out.message)
    again = decode_pcf(data)
    assert [p.Parameter for p in again.parameters] == [C.MQGACF_TRACE_ROUTE, C.MQGACF_ACTIVITY, C.MQGACF_ACTIVITY]
    assert again.cfh["ParameterCount"] == 3
    assert again.parameters[2].find(C.MQCACF_APPL_NAME).Value == "hop2"
    assert _counts(again) == (2, 0, 0)


def test_accumulate_none_keeps_only_trace_route_group():
    out = apply_activity(_msg(Accumulate=C.MQROUTE_ACCUMULATE_NONE), PerformedActivity(MCA, _activity_group()),
                         QueueManagerProfile(), report_options=C.MQRO_ACTIVITY)
    assert [p.Parameter for p in out.message.parameters] == [C.MQGACF_TRACE_ROUTE]
    assert out.activity_report and not out.accumulated


def test_max_activities_rejects():
    """'The total number of activities is the sum of RecordedActivities,
    UnrecordedActivities, and DiscontinuityCount. ... If the maximum number of
    activities is exceeded, then the trace-route message is rejected with
    feedback MQFB_MAX_ACTIVITIES.'"""
    msg = _msg(MaxActivities=3, RecordedActivities=1, UnrecordedActivities=1, DiscontinuityCount=1,
               Accumulate=C.MQROUTE_ACCUMULATE_AND_REPLY)
    out = apply_activity(msg, PerformedActivity(MCA, _activity_group()), QueueManagerProfile())
    assert (out.disposition, out.feedback) == (Disposition.REJECTED, C.MQFB_MAX_ACTIVITIES)
    # AND_REPLY: 'The number of activities performed ... exceeds the value of MaxActivities' -> reply
    assert out.reply
    ok = apply_activity(_msg(MaxActivities=3, RecordedActivities=2), PerformedActivity(MCA, _activity_group()),
                        QueueManagerProfile())
    assert ok.disposition == Disposition.CONTINUED


def test_unlimited_activities():
    """'MQROUTE_UNLIMITED_ACTIVITIES - An unlimited number of activities can be performed'"""
    msg = _msg(MaxActivities=C.MQROUTE_UNLIMITED_ACTIVITIES, RecordedActivities=10 ** 6, Accumulate=ACC)
    out = apply_activity(msg, PerformedActivity(MCA, _activity_group()), QueueManagerProfile())
    assert out.disposition == Disposition.CONTINUED and out.recorded


def test_discontinuity_count():
    """'This value is incremented by the queue manager.'"""
    assert _counts(record_discontinuity(_msg(DiscontinuityCount=2))) == (0, 0, 3)


@pytest.mark.parametrize("deliver,disposition,feedback", [
    (YES, Disposition.DELIVERED, None),  # "On arrival, the trace-route message is put on the target queue."
    (NO, Disposition.NOT_DELIVERED, C.MQFB_NOT_DELIVERED),  # "...is not delivered to the target queue."
])
def test_deliver_at_destination(deliver, disposition, feedback):
    out = apply_activity(_msg(Deliver=deliver, Accumulate=C.MQROUTE_ACCUMULATE_AND_REPLY),
                         PerformedActivity(MCA, _activity_group(), action="arrive"), QueueManagerProfile())
    assert (out.disposition, out.feedback) == (disposition, feedback)
    # AND_REPLY: "put to a local queue (target queue or dead-letter queue)" -> reply
    assert out.reply


@pytest.mark.parametrize("action", ["discard", "dead-letter", "arrive"])
def test_reply_triggers_only_with_and_reply(action):
    out = apply_activity(_msg(Accumulate=ACC), PerformedActivity(MCA, _activity_group(), action=action),
                         QueueManagerProfile())
    assert not out.reply
    out = apply_activity(_msg(Accumulate=C.MQROUTE_ACCUMULATE_AND_REPLY),
                         PerformedActivity(MCA, _activity_group(), action=action), QueueManagerProfile())
    assert out.reply


def test_forward_activity_uses_algorithm():
    out = apply_activity(_msg(Forward=IF_SUP, Deliver=NO), PerformedActivity(MCA, _activity_group(), action="forward",
                                                                    remote_supports_trace_route=False),
                         QueueManagerProfile())
    assert (out.disposition, out.feedback) == (Disposition.REJECTED, C.MQFB_NOT_FORWARDED)


def test_reply_and_activity_report_formats():
    out = apply_activity(_msg(Accumulate=ACC), PerformedActivity(MCA, _activity_group("hop1")), QueueManagerProfile())
    reply = trace_route_reply(out.message)
    decoded = decode_message(reply.encode())
    # IBM: MsgType MQMT_REPLY, Feedback MQFB_NONE, Format MQFMT_ADMIN; MQCFH same as a trace-route message
    assert (decoded.md.MsgType, decoded.md.Feedback, decoded.md.Format) == (C.MQMT_REPLY, C.MQFB_NONE, "MQADMIN")
    assert (decoded.body.cfh["Type"], decoded.body.cfh["Command"]) == (C.MQCFT_TRACE_ROUTE, C.MQCMD_TRACE_ROUTE)
    assert [p.Parameter for p in decoded.body.parameters] == [C.MQGACF_ACTIVITY]

    rep = activity_report(_activity_group("amqrmppa"), TraceRouteState(RecordedActivities=1))
    d = decode_message(rep.encode())
    assert (d.md.MsgType, d.md.Feedback, d.md.Format) == (C.MQMT_REPORT, C.MQFB_ACTIVITY, "MQHEPCF")
    assert d.body.eph is not None
    assert (d.body.cfh["Type"], d.body.cfh["Command"]) == (C.MQCFT_REPORT, C.MQCMD_ACTIVITY_MSG)
    act = d.body.parameters[0]
    assert act.Parameter == C.MQGACF_ACTIVITY
    tr = act.find(C.MQGACF_TRACE_ROUTE)  # the TraceRoute group inside the Activity group
    assert tr is not None and tr.find(C.MQIACF_RECORDED_ACTIVITIES).Value == 1


def test_not_a_trace_route_message():
    from mqcodec.ibmmq.pcf import PcfMessage

    with pytest.raises(ValueError):
        apply_activity(PcfMessage.new(C.MQCFT_COMMAND, 1, []), PerformedActivity(MCA, _activity_group()),
                       QueueManagerProfile())
