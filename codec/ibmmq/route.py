"""The route a trace-route message took, shown as IBM's dspmqrte shows it,
or as a Graphviz picture.

Input: decoded messages (MQMD first) or bare PCF bodies holding a
trace-route message, a trace-route reply, or activity reports (one per
activity) -- typically everything a reply queue holds for one or more
trace-route messages.

Merging (the rule, also in docs/ibmmq-traceroute.md)
----------------------------------------------------

1. **Which route.**  Inputs are grouped by the trace-route message they
   describe, as ``dspmqrte -i CorrelId`` collects them: the MQMD CorrelId of
   a reply or activity report (IBM: set to the trace-route message's MsgId),
   the MQMD MsgId of a trace-route message itself; for a bare PCF body, the
   MsgId in an operation's Message/MQMD group when one is recorded.  Inputs
   with no such identifier join the one identified route when there is
   exactly one, else they form a route of their own.  :func:`build_routes`
   returns one :class:`Route` per group.
2. **Same activity.**  A trace-route reply's data "is a duplicate of the
   trace-route message data", and each activity report repeats one of those
   Activity groups (with the TraceRoute group added).  Two Activity groups
   are the same activity when they agree on the application (ApplName,
   ApplType, ActivityDescription) and, operation by operation, on
   OperationType, QMgrName, OperationDate, OperationTime, QName,
   ChannelName and the MsgId/CorrelId of the operation's Message group --
   the queue manager, operation, message identifiers and timestamps that
   dspmqrte shows.  The TraceRoute group an activity report adds is not part
   of the identity.  An activity appears in the route as many times as the
   one input recording it most often (a multiset union), so a reply together
   with its own reports lists each activity once, while one input never
   loses an activity it records twice.
3. **Order.**  The first trace-route message or reply gives the order of
   the activities it holds (the order they were accumulated in).  Every other
   activity (from reports, or a second accumulated message) is placed after
   the last listed activity whose first operation's date and time is not
   later than its own; reports alone are thus in date/time order.
4. **Counters.**  The header shows the TraceRoute group of the trace-route
   message when one is given, else the activity reports' snapshot with the
   most activities counted (the last one); the number of activities listed
   is shown beside it, never taken from it.

The picture: queue managers are nodes listing the operations performed
there (a Discard is shown, and marked, on the queue manager that discarded
the message); an edge is drawn only where consecutive operations of the
route are on different queue managers, labelled with the Send/Receive
operations of that hop.  Graphviz runs with a time limit and only on graphs
within a size cap (:func:`render_image`, :func:`check_graph_size`).
"""
from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from . import constants as C
from .pcf import PcfMessage
from .traceroute import Activity, Operation, TraceRoute, TraceRouteView, trace_route_view

__all__ = ["Route", "RouteGraph", "GraphTooLarge", "RenderTimeout", "build_route", "build_routes",
           "activity_key", "load_route_inputs", "render_text", "render_dot", "route_graph", "check_graph_size",
           "render_image", "DOT_TIMEOUT", "MAX_GRAPH_NODES", "MAX_GRAPH_EDGES"]

#: seconds Graphviz may take before the render is abandoned (``mqcodec route --dot-timeout``)
DOT_TIMEOUT = 20.0
#: the largest graph handed to Graphviz (``--max-nodes`` / ``--max-edges``): dot's layout time grows
#: faster than linearly with labelled edges (issue 16: 200 activities took 10.6 s, 300 more than 5
#: minutes); 100 hops among up to 100 queue managers lay out in well under a second here
MAX_GRAPH_NODES = 100
MAX_GRAPH_EDGES = 100

_KIND_ORDER = {"trace-route message": 0, "trace-route reply": 1, "activity report": 2}


class GraphTooLarge(RuntimeError):
    """The route's graph exceeds the size cap given to :func:`check_graph_size`."""


class RenderTimeout(RuntimeError):
    """Graphviz did not finish within the time limit (the process was killed)."""


@dataclass
class Route:
    kind: str
    trace_route: Optional[TraceRoute]
    activities: list[Activity] = field(default_factory=list)
    #: per activity: the inputs recording it, e.g. ["trace-route reply", "activity report 2"]
    origins: list[list[str]] = field(default_factory=list)
    #: where ``trace_route`` comes from ("the trace-route message", "activity report 3", None)
    trace_route_source: Optional[str] = None
    #: the trace-route message's MsgId the inputs were grouped by (None: not known)
    route_id: Optional[bytes] = None
    #: how many inputs of each kind were merged
    inputs: dict[str, int] = field(default_factory=dict)

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


@dataclass
class _Input:
    n: int                 # position among the inputs
    view: TraceRouteView
    md: Any                # the MQMD when the input was a whole message
    label: str = ""


def _when(op: Operation) -> tuple:
    return (op.OperationDate or "", op.OperationTime or "")


def _first_when(act: Activity) -> Optional[tuple]:
    for op in act.Operations:
        if op.OperationDate or op.OperationTime:
            return _when(op)
    return None


def _msg_ids(op: Operation) -> tuple:
    md = op.Message.MsgMD if op.Message is not None and op.Message.MsgMD else {}
    return (md.get("MsgId"), md.get("CorrelId"))


def activity_key(act: Activity) -> tuple:
    """The identity of an activity across a reply and its activity reports
    (rule 2 of the module docstring)."""
    ops = tuple((op.OperationType, op.QMgrName, op.OperationDate, op.OperationTime, op.QName, op.ChannelName)
                + _msg_ids(op) for op in act.Operations)
    return (act.ApplName, act.ApplType, act.Description, ops)


def _nonzero(b: Any) -> Optional[bytes]:
    if isinstance(b, (bytes, bytearray)) and bytes(b).strip(b"\x00"):
        return bytes(b)
    return None


def _route_id(inp: _Input) -> Optional[bytes]:
    md = inp.md
    if md is not None:
        rid = _nonzero(getattr(md, "MsgId" if inp.view.kind == "trace-route message" else "CorrelId", None))
        if rid is not None:
            return rid
    for op in inp.view.operations:
        rid = _nonzero(_msg_ids(op)[0])
        if rid is not None:
            return rid
    return None


def _split(messages: Iterable[Any]) -> list[_Input]:
    out = []
    for n, msg in enumerate(messages):
        md = None
        if not isinstance(msg, PcfMessage) and hasattr(msg, "md") and isinstance(getattr(msg, "body", None),
                                                                                  PcfMessage):
            md, msg = msg.md, msg.body
        if not isinstance(msg, PcfMessage):
            raise ValueError("input %d is not a PCF message" % (n + 1))
        view = trace_route_view(msg)
        if view is None:
            raise ValueError("not a trace-route message, reply or activity report (MQCFH Type %s, Command %s)"
                             % (msg.cfh.get("Type"), msg.cfh.get("Command")))
        out.append(_Input(n, view, md))
    return out


def _merge(inputs: list[_Input], route_id: Optional[bytes]) -> Route:
    counts = Counter(i.view.kind for i in inputs)
    seq: Counter[str] = Counter()
    for inp in sorted(inputs, key=lambda i: i.n):
        seq[inp.view.kind] += 1
        inp.label = inp.view.kind + (" %d" % seq[inp.view.kind] if counts[inp.view.kind] > 1 else "")
    # accumulated inputs first (the first gives the order), then reports in date/time order
    ordered = sorted(inputs, key=lambda i: (_KIND_ORDER[i.view.kind], min(
        (w for w in (_first_when(a) for a in i.view.activities) if w is not None), default=("", "")), i.n))
    acts: list[Activity] = []
    origins: list[list[str]] = []
    keys: list[tuple] = []
    have: Counter = Counter()
    first_accumulated = True
    for inp in ordered:
        local: Counter = Counter()
        in_order = first_accumulated and inp.view.kind != "activity report"
        if inp.view.kind != "activity report":
            first_accumulated = False
        for act in inp.view.activities:
            k = activity_key(act)
            local[k] += 1
            if local[k] <= have[k]:
                # already listed: the local[k]-th listed activity with this key
                nth = [i for i, kk in enumerate(keys) if kk == k][local[k] - 1]
                if inp.label not in origins[nth]:
                    origins[nth].append(inp.label)
                continue
            have[k] += 1
            pos = len(acts)
            when = _first_when(act)
            if not in_order and when is not None:
                pos = 0
                for i, other in enumerate(acts):
                    w = _first_when(other)
                    if w is None or w <= when:
                        pos = i + 1
            acts.insert(pos, act)
            origins.insert(pos, [inp.label])
            keys.insert(pos, k)
    # the counters: the trace-route message's group, else the fullest report snapshot
    tr, tr_src = None, None
    for inp in ordered:
        if inp.view.kind == "trace-route message" and inp.view.trace_route is not None:
            cand, src = inp.view.trace_route, "the trace-route message" if counts[inp.view.kind] == 1 else inp.label
        elif inp.view.kind == "activity report" and inp.view.trace_route is not None:
            cand, src = inp.view.trace_route, inp.label
        else:
            continue
        if tr is None or (tr_src is not None and not tr_src.startswith("the trace-route")
                          and (cand.total_activities or 0) > (tr.total_activities or 0)):
            tr, tr_src = cand, src
    kinds = [k for k in _KIND_ORDER if counts[k]]
    kind = kinds[0] if len(kinds) == 1 else "mixed"
    return Route(kind, tr, acts, origins, tr_src, route_id, {k: counts[k] for k in kinds})


def build_routes(messages: Iterable[Any]) -> list[Route]:
    """The routes of the given inputs (PcfMessage, or MQMessage whose body
    is PCF), one per trace-route message, merged by the rules of the module
    docstring; in the order their first input appears."""
    inputs = _split(messages)
    groups: dict[Optional[bytes], list[_Input]] = {}
    for inp in inputs:
        groups.setdefault(_route_id(inp), []).append(inp)
    known = [k for k in groups if k is not None]
    if None in groups and len(known) == 1:
        groups[known[0]].extend(groups.pop(None))
    return [_merge(g, rid) for rid, g in sorted(groups.items(), key=lambda kv: min(i.n for i in kv[1]))]


def build_route(messages: Iterable[Any]) -> Route:
    """The one route of the inputs; ValueError when they describe several
    trace-route messages (use :func:`build_routes`) or none."""
    routes = build_routes(messages)
    if not routes:
        raise ValueError("no trace-route message, reply or activity report given")
    if len(routes) > 1:
        raise ValueError("the inputs describe %d different trace-route messages (CorrelIds %s)"
                         % (len(routes), ", ".join(r.route_id.hex() if r.route_id else "unknown" for r in routes)))
    return routes[0]


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


_PLURAL = {"trace-route message": "trace-route messages", "trace-route reply": "trace-route replies",
           "activity report": "activity reports"}


def _inputs_text(route: Route) -> str:
    parts = []
    for k, n in route.inputs.items():
        parts.append(k if n == 1 else "%d %s" % (n, _PLURAL[k]))
    if not parts:
        return route.kind
    return (", ".join(parts[:-1]) + " and " + parts[-1]) if len(parts) > 1 else parts[0]


def render_text(route: Route) -> str:
    """Activities in order with their operations, queue managers, queues and
    channels, in the manner of ``dspmqrte -v outline``."""
    out = []
    head = _inputs_text(route)
    out.append("%s: %d activities listed" % (head[0].upper() + head[1:], len(route.activities)))
    if route.route_id:
        out.append("  Trace-route message MsgId: %s" % route.route_id.hex())
    tr = route.trace_route
    if tr is not None:
        out.append("  TraceRoute (%s): %s recorded, %s unrecorded activities, %s discontinuities" % (
            route.trace_route_source, tr.RecordedActivities, tr.UnrecordedActivities, tr.DiscontinuityCount))
        out.append("  Detail %s, MaxActivities %s, Accumulate %s, Forward %s, Deliver %s" % (
            _name(("MQROUTE", tr.Detail)),
            "unlimited" if tr.MaxActivities == C.MQROUTE_UNLIMITED_ACTIVITIES else tr.MaxActivities,
            _name(("MQROUTE", tr.Accumulate)), _name(("MQROUTE", tr.Forward)), _name(("MQROUTE", tr.Deliver))))
    out.append("-" * 80)
    multi = sum(route.inputs.values()) > 1
    for i, act in enumerate(route.activities, 1):
        origin = route.origins[i - 1] if i - 1 < len(route.origins) else []
        out.append("Activity %d:%s" % (i, " (in %s)" % ", ".join(origin) if multi and origin else ""))
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


# ---------------------------------------------------------------------------
# the picture

_TRANSFER = (C.MQOPER_SEND, C.MQOPER_RECEIVE)
_DISCARDS = tuple(v for v in (getattr(C, "MQOPER_DISCARD", 2), getattr(C, "MQOPER_DISCARDED_PUBLISH", 12)))


@dataclass
class RouteGraph:
    """``nodes``: queue manager -> the numbered operations performed there
    (transfers excluded); ``edges``: (from, to, the numbered Send/Receive
    operations of that hop), one per change of queue manager along the route;
    ``discards``: queue managers where the message was discarded."""

    nodes: dict[str, list[str]] = field(default_factory=dict)
    edges: list[tuple[str, str, list[str]]] = field(default_factory=list)
    discards: set[str] = field(default_factory=set)


def _describe(n: int, op: Operation) -> str:
    desc = "%d. %s" % (n, _op_type(op))
    what = op.ChannelName or op.QName or ""
    if what:
        desc += " " + what
    when = " ".join(x for x in (op.OperationDate, op.OperationTime) if x)
    if when:
        desc += " (" + when + ")"
    if op.Feedback:
        desc += " [%s]" % (C.MQFB.name_of(op.Feedback) or op.Feedback)
    return desc


def route_graph(route: Route) -> RouteGraph:
    g = RouteGraph()
    prev: Optional[str] = None
    sends: list[str] = []
    for n, (_, op) in enumerate(route.operations, 1):
        qm = op.QMgrName or prev
        desc = _describe(n, op)
        if qm is None:
            continue
        g.nodes.setdefault(qm, [])
        if op.OperationType in _DISCARDS:
            g.discards.add(qm)
        if prev is not None and qm != prev:
            receive = op.OperationType == C.MQOPER_RECEIVE
            g.edges.append((prev, qm, sends + ([desc] if receive else [])))
            sends = []
            if not receive:
                g.nodes[qm].append(desc)
        elif op.OperationType == C.MQOPER_SEND:
            sends.append(desc)
        else:
            g.nodes[qm].append(desc)
        prev = qm
    if sends and prev is not None:
        g.nodes[prev].extend(sends)   # sent, but no later operation recorded elsewhere
    return g


def _dot_str(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def _q(text: str) -> str:
    return '"' + _dot_str(text) + '"'


def _lines(lines: list[str], end: str = "\\n") -> str:
    """A DOT label of several lines (each escaped; ``end`` is DOT's line break)."""
    return '"' + end.join(_dot_str(x) for x in lines) + (end if end != "\\n" else "") + '"'


def _dot_body(route: Route, prefix: str, indent: str) -> list[str]:
    g = route_graph(route)
    lines = []
    for qm, ops in g.nodes.items():
        attrs = ["label=%s" % _lines([qm] + ops, "\\l")]
        if qm in g.discards:
            attrs.append('color=red, xlabel="discarded here"')
        lines.append("%s%s [%s];" % (indent, _q(prefix + qm), ", ".join(attrs)))
    for src, dst, ops in g.edges:
        lines.append("%s%s -> %s [label=%s];" % (indent, _q(prefix + src), _q(prefix + dst), _lines(ops or ["(hop)"])))
    return lines


def render_dot(routes: "Route | list[Route]") -> str:
    """Queue managers as nodes listing the operations performed there; one
    edge per hop (a change of queue manager along the route) labelled with
    its Send/Receive operations; a discard marks the node it happened on.
    Several routes: one cluster each (node names prefixed "route N: ")."""
    if isinstance(routes, Route):
        routes = [routes]
    lines = ["digraph route {", "  rankdir=LR;", "  node [shape=box, style=rounded];"]
    if len(routes) == 1:
        lines += _dot_body(routes[0], "", "  ")
    else:
        for n, route in enumerate(routes, 1):
            title = "route %d: trace-route message %s" % (n, route.route_id.hex() if route.route_id else "(unknown)")
            lines.append("  subgraph cluster_%d {" % n)
            lines.append("    label=%s;" % _q(title))
            lines += _dot_body(route, "route %d: " % n, "    ")
            lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


def check_graph_size(routes: "Route | list[Route]", max_nodes: int = MAX_GRAPH_NODES,
                     max_edges: int = MAX_GRAPH_EDGES) -> tuple[int, int]:
    """(nodes, edges) of the routes' picture; GraphTooLarge when it has more
    nodes or more edges than the cap (a cap of 0 or less is no cap)."""
    if isinstance(routes, Route):
        routes = [routes]
    graphs = [route_graph(r) for r in routes]
    nodes, edges = sum(len(g.nodes) for g in graphs), sum(len(g.edges) for g in graphs)
    if max_nodes > 0 and nodes > max_nodes:
        raise GraphTooLarge("the route picture has %d queue-manager nodes, more than the cap of %d"
                            % (nodes, max_nodes))
    if max_edges > 0 and edges > max_edges:
        raise GraphTooLarge("the route picture has %d hops, more than the cap of %d" % (edges, max_edges))
    return nodes, edges


def render_image(dot_source: str, fmt: str = "svg", *, timeout: Optional[float] = DOT_TIMEOUT) -> bytes:
    """Render DOT with Graphviz's ``dot`` (installed by ``make``), killing it
    after ``timeout`` seconds (None: no limit) with :class:`RenderTimeout`."""
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError("Graphviz 'dot' is not installed (apt-get install graphviz)")
    try:
        res = subprocess.run([exe, "-T" + fmt], input=dot_source.encode(), capture_output=True, check=False,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RenderTimeout("Graphviz dot did not finish within %s s" % timeout) from None
    if res.returncode != 0:
        raise RuntimeError("dot failed: %s" % res.stderr.decode(errors="replace").strip())
    return res.stdout


def load_route_inputs(blobs: Iterable[bytes]) -> list[Any]:
    """Each blob: an IBM MQ message (MQMD first; returned as the decoded
    MQMessage, whose MQMD identifies the route) or a bare PCF body
    (returned as a PcfMessage)."""
    from . import decode_message, decode_pcf

    out: list[Any] = []
    for data in blobs:
        if data[:4] in (b"MD  ", b"\xd4\xc4\x40\x40"):
            msg = decode_message(data)
            if not isinstance(msg.body, PcfMessage):
                raise ValueError("message body is %r, not PCF" % (msg.body_format,))
            out.append(msg)
        else:
            out.append(decode_pcf(data))
    return out
