"""The route a trace-route message took, shown as IBM's dspmqrte shows it,
or as a Graphviz picture.

Input: decoded messages (MQMD first) or bare PCF bodies holding a
trace-route message, a trace-route reply, or activity reports (one per
activity; several are merged in operation date/time order).
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Iterable, Optional

from . import constants as C
from .pcf import PcfMessage
from .traceroute import Activity, Operation, TraceRoute, trace_route_view

__all__ = ["Route", "build_route", "load_route_inputs", "render_text", "render_dot", "render_image"]


@dataclass
class Route:
    kind: str
    trace_route: Optional[TraceRoute]
    activities: list[Activity] = field(default_factory=list)

    @property
    def operations(self) -> list[tuple[Activity, Operation]]:
        return [(a, op) for a in self.activities for op in a.Operations]

    @property
    def queue_managers(self) -> list[str]:
        seen: list[str] = []
        for _, op in self.operations:
            if op.QMgrName and op.QMgrName not in seen:
                seen.append(op.QMgrName)
        return seen


def _when(op: Operation) -> tuple:
    return (op.OperationDate or "", op.OperationTime or "")


def build_route(messages: Iterable[PcfMessage]) -> Route:
    """Merge the activities of trace-route messages / replies / activity
    reports into one route (activity reports sorted by their first
    operation's date and time; within a message, message order)."""
    kinds, activities, tr = [], [], None
    for msg in messages:
        view = trace_route_view(msg)
        if view is None:
            raise ValueError("not a trace-route message, reply or activity report (MQCFH Type %s, Command %s)"
                             % (msg.cfh.get("Type"), msg.cfh.get("Command")))
        kinds.append(view.kind)
        activities.extend(view.activities)
        if tr is None or (view.trace_route is not None and view.kind != "activity report"):
            tr = view.trace_route or tr
    if kinds and all(k == "activity report" for k in kinds):
        activities.sort(key=lambda a: min((_when(op) for op in a.Operations), default=("", "")))
    kind = kinds[0] if len(set(kinds)) == 1 else "mixed"
    return Route(kind, tr, activities)


def _name(family_value: tuple) -> str:
    fam, value = family_value
    if value is None:
        return "-"
    n = C.FAMILIES[fam].name_of(value) if fam in C.FAMILIES else None
    return n or str(value)


def _op_type(op: Operation) -> str:
    n = op.OperationTypeName
    if n and n.startswith("MQOPER_"):
        return n[len("MQOPER_"):].replace("_", " ").title()
    return str(op.OperationType)


def render_text(route: Route) -> str:
    """Activities in order with their operations, queue managers, queues and
    channels, in the manner of ``dspmqrte -v outline``."""
    out = []
    tr = route.trace_route
    if tr is not None:
        out.append("%s: %s recorded, %s unrecorded activities, %s discontinuities" % (
            route.kind.capitalize(), tr.RecordedActivities, tr.UnrecordedActivities, tr.DiscontinuityCount))
        out.append("  Detail %s, MaxActivities %s, Accumulate %s, Forward %s, Deliver %s" % (
            _name(("MQROUTE", tr.Detail)),
            "unlimited" if tr.MaxActivities == C.MQROUTE_UNLIMITED_ACTIVITIES else tr.MaxActivities,
            _name(("MQROUTE", tr.Accumulate)), _name(("MQROUTE", tr.Forward)), _name(("MQROUTE", tr.Deliver))))
    else:
        out.append("%s" % route.kind.capitalize())
    out.append("-" * 80)
    for i, act in enumerate(route.activities, 1):
        out.append("Activity %d:" % i)
        out.append(" ApplName: '%s'" % (act.ApplName or ""))
        if act.ApplType is not None:
            out.append(" ApplType: %s" % (act.ApplTypeName or act.ApplType))
        if act.Description:
            out.append(" ActivityDesc: '%s'" % act.Description)
        for op in act.Operations:
            out.append(" Operation:")
            out.append("  OperationType: %s" % _op_type(op))
            if op.OperationDate or op.OperationTime:
                out.append("  OperationDate/Time: %s %s" % (op.OperationDate or "", op.OperationTime or ""))
            for label, value in (("QMgrName", op.QMgrName), ("QName", op.QName), ("ResolvedQName", op.ResolvedQName),
                                 ("RemoteQName", op.RemoteQName), ("RemoteQMgrName", op.RemoteQMgrName),
                                 ("ChannelName", op.ChannelName), ("XmitQName", op.XmitQName)):
                if value:
                    out.append("  %s: '%s'" % (label, value))
            if op.Feedback:
                out.append("  Feedback: %s" % (C.MQFB.name_of(op.Feedback) or op.Feedback))
        out.append("-" * 80)
    return "\n".join(out)


def _q(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dot(route: Route) -> str:
    """Queue managers as nodes; each step from one queue manager's operation
    to the next queue manager's is an edge labelled with the operations
    (type, channel or queue, date and time) along it."""
    lines = ["digraph route {", "  rankdir=LR;", "  node [shape=box, style=rounded];"]
    for qm in route.queue_managers:
        lines.append("  %s;" % _q(qm))
    prev_qm, pending = None, []
    edge_no = 0
    for _, op in route.operations:
        desc = "%s %s" % (_op_type(op), op.ChannelName or op.QName or "")
        when = " ".join(x for x in (op.OperationDate, op.OperationTime) if x)
        if when:
            desc += " (" + when + ")"
        if op.QMgrName and prev_qm and op.QMgrName != prev_qm:
            edge_no += 1
            steps = pending + [desc]
            label = "\\n".join(["%d. %s" % (edge_no, steps[0])] + steps[1:])
            lines.append("  %s -> %s [label=%s];" % (_q(prev_qm), _q(op.QMgrName), _q(label).replace("\\\\n", "\\n")))
            pending = []
        else:
            pending.append(desc)
        prev_qm = op.QMgrName or prev_qm
    if pending and prev_qm:
        lines.append("  %s [xlabel=%s];" % (_q(prev_qm), _q("\\n".join(pending)).replace("\\\\n", "\\n")))
    lines.append("}")
    return "\n".join(lines)


def render_image(dot_source: str, fmt: str = "svg") -> bytes:
    """Render DOT with Graphviz's ``dot`` (installed by ``make``)."""
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError("Graphviz 'dot' is not installed (apt-get install graphviz)")
    res = subprocess.run([exe, "-T" + fmt], input=dot_source.encode(), capture_output=True, check=False)
    if res.returncode != 0:
        raise RuntimeError("dot failed: %s" % res.stderr.decode(errors="replace").strip())
    return res.stdout


def load_route_inputs(blobs: Iterable[bytes]) -> list[PcfMessage]:
    """Each blob: an IBM MQ message (MQMD first) or a bare PCF body."""
    from . import decode_message, decode_pcf

    out = []
    for data in blobs:
        if data[:4] in (b"MD  ", b"\xd4\xc4\x40\x40"):
            msg = decode_message(data)
            if not isinstance(msg.body, PcfMessage):
                raise ValueError("message body is %r, not PCF" % (msg.body_format,))
            out.append(msg.body)
        else:
            out.append(decode_pcf(data))
    return out
