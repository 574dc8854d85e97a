"""``mqcodec show``: the decoded units of chosen frames of a capture, the way
``tshark -V -Y frame.number==N`` shows a frame's dissection.

A *unit* is what the framers find in the traffic:

* ``segment`` -- one IBM MQ TSH/TSHM/TSHC segment (its header, the API
  header of API calls and replies, the MQOD of MQOPEN/MQPUT1 and replies);
* ``message`` -- one IBM MQ message (MQMD and data, joined across segments),
  decoded by :func:`mqcodec.ibmmq.decode_message`;
* ``packet`` -- one MSMQ packet on a TCP session, by
  :func:`mqcodec.msmq.decode_packet`;
* ``ping`` -- one MSMQ ping datagram (UDP 3527), by :func:`mqcodec.msmq.decode_ping`;
* ``error`` -- stream bytes the framers could not frame (a FramingError).

A unit *belongs to every frame that carried any of its bytes*: ``--frame N``
shows it when frame N carried at least one of them; its header names the
frame holding its first byte (``frame``) and the one holding its last
(``last_frame``).

The module is I/O-free apart from :func:`iter_units` opening the capture:
:class:`UnitFinder` takes frames (``mqcodec.capture.Frame``) and returns
units, over the pure capture pipeline (``CaptureProcessor`` ->
``MQStreamFramer`` / ``MSMQStreamFramer``) with the port and content
detection of :mod:`mqcodec.convert`.  :func:`compile_filter` parses the
``--filter`` language (grammar below) into a predicate over
:meth:`Unit.fields`; nothing is ever ``eval``-ed.

Filter language::

    expr       := or_expr
    or_expr    := and_expr (("or" | "||") and_expr)*
    and_expr   := not_expr (("and" | "&&") not_expr)*
    not_expr   := ("not" | "!") not_expr | "(" expr ")" | comparison
    comparison := FIELD [OP VALUE]          OP: == != < > <= >=
    VALUE      := "string" | 'string' | integer (decimal or 0x hex) | true | false

A FIELD alone is true when the unit has a value for it (``error`` selects the
units that failed to decode).  A comparison with a field the unit does not
have is false, whatever the operator.  ``port``, ``addr`` and ``frames`` hold
several values (both ports, both addresses, every frame carrying the unit):
a comparison is true when one of them satisfies it.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from typing import Any, Callable, Iterable, Iterator, Optional

from .ibmmq.framing import MESSAGE_SEGMENT_TYPES as _MESSAGE_TYPES

__all__ = ["Unit", "UnitFinder", "iter_units", "compile_filter", "FilterError", "FIELDS", "render_units"]

# ---------------------------------------------------------------------------
# units
# ---------------------------------------------------------------------------
#: header fields a filter may name: name -> (type, description)
FIELDS: dict[str, tuple[type, str]] = {
    "frame": (int, "frame holding the unit's first byte"),
    "last_frame": (int, "frame holding the unit's last byte"),
    "frames": (int, "every frame carrying bytes of the unit (several values)"),
    "time": (str, "UTC time of the first frame, ISO 8601 (2025-11-21T08:00:00.000020000Z)"),
    "src": (str, "source address"),
    "dst": (str, "destination address"),
    "addr": (str, "source or destination address (several values)"),
    "src_port": (int, "source port"),
    "dst_port": (int, "destination port"),
    "port": (int, "source or destination port (several values)"),
    "tcp_stream": (int, "TCP connection index, as tshark's tcp.stream (none for UDP)"),
    "protocol": (str, '"mq" or "msmq"'),
    "unit": (str, '"segment", "message", "packet", "ping" or "error"'),
    "kind": (str, 'segment type (MQPUT, MQCONN_REPLY, ...), MSMQ packet kind (UserMessage, ...), "Ping"'),
    "offset": (int, "stream offset of the unit's first byte"),
    "length": (int, "bytes of the unit"),
    "conversation_id": (int, "IBM MQ TSHM ConversID"),
    "request_id": (int, "IBM MQ TSHM RequestID"),
    "segment_type": (int, "IBM MQ segment type (SegmType)"),
    "comp_code": (int, "IBM MQ API header CompCode"),
    "reason": (int, "IBM MQ API header Reason (reason code)"),
    "error": (str, "why the unit could not be framed or decoded"),
}

_MQ_API_FIRST, _MQ_API_LAST = 0x81, 0x9F
_MQOD_TYPES = frozenset({0x83, 0x93, 0x87, 0x97})  # MQOPEN, MQOPEN_REPLY, MQPUT1, MQPUT1_REPLY
_BODY_KEEP = 16 + 400  # bytes after a TSH read for the API header and an MQOD (version 4)


@dataclasses.dataclass
class Unit:
    """One unit of a capture (see the module docstring)."""

    frames: tuple            # frames that carried its bytes, ascending
    ts_ns: Optional[int]     # capture time of frames[0]
    src: str
    src_port: int
    dst: str
    dst_port: int
    tcp_stream: Optional[int]
    protocol: str            # "mq" | "msmq"
    unit: str                # "segment" | "message" | "packet" | "ping" | "error"
    kind: Optional[str]
    offset: Optional[int]    # stream offset (None for a datagram)
    length: int
    data: bytes = dataclasses.field(repr=False, default=b"")
    event: Any = dataclasses.field(repr=False, default=None)
    extra: dict = dataclasses.field(default_factory=dict)   # conversation_id, reason, ...
    _tree: Any = dataclasses.field(repr=False, default=None)

    @property
    def frame(self) -> Optional[int]:
        return self.frames[0] if self.frames else None

    def fields(self) -> dict:
        """The header fields (:data:`FIELDS`) that this unit has."""
        out = {
            "frame": self.frame, "last_frame": self.frames[-1] if self.frames else None,
            "frames": tuple(self.frames), "time": format_time(self.ts_ns),
            "src": self.src, "dst": self.dst, "addr": (self.src, self.dst),
            "src_port": self.src_port, "dst_port": self.dst_port, "port": (self.src_port, self.dst_port),
            "tcp_stream": self.tcp_stream, "protocol": self.protocol, "unit": self.unit, "kind": self.kind,
            "offset": self.offset, "length": self.length,
        }
        out.update(self.extra)
        if "error" not in out and self._tree is not None and isinstance(self._tree, dict) and "Error" in self._tree:
            err = self._tree["Error"]
            out["error"] = err.get("reason") or err.get("Reason")
        return {k: v for k, v in out.items() if v is not None}

    def header(self) -> dict:
        """The fields as printed in JSON (several-valued helpers left out)."""
        f = self.fields()
        for k in ("addr", "port"):
            f.pop(k, None)
        f["frames"] = list(f.get("frames", ()))
        return f

    def header_line(self) -> str:
        f = self.fields()
        frames = self.frames
        where = "Frame %s" % self.frame if len(frames) <= 1 else "Frame %s (frames %s)" % (
            self.frame, ", ".join(str(n) for n in frames))
        parts = [where, f.get("time", "-"), "%s:%s -> %s:%s" % (self.src, self.src_port, self.dst, self.dst_port)]
        parts.append("tcp.stream %s" % self.tcp_stream if self.tcp_stream is not None else "udp")
        label = {"mq": "IBM MQ", "msmq": "MSMQ"}[self.protocol]
        parts.append("%s %s %s" % (label, self.unit, self.kind or "-"))
        if self.offset is not None:
            parts.append("offset %d" % self.offset)
        parts.append("%d bytes" % self.length)
        for k in ("conversation_id", "request_id", "reason"):
            if k in f:
                parts.append("%s %s" % (k, f[k]))
        if "error" in f:
            parts.append("ERROR: %s" % f["error"])
        return ", ".join(parts)

    def decode(self) -> dict:
        """The decoded tree (a dict for :mod:`mqcodec.render`); a unit that
        does not decode gives ``{"Error": {...}}`` beside what is known."""
        if self._tree is None:
            self._tree = _decode(self)
        return self._tree


def format_time(ts_ns: Optional[int]) -> Optional[str]:
    if ts_ns is None:
        return None
    sec, ns = divmod(int(ts_ns), 1_000_000_000)
    t = _dt.datetime.fromtimestamp(sec, tz=_dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%09dZ" % ns


def _error_tree(exc) -> dict:
    return {"reason": getattr(exc, "reason", None) or str(exc), "structure": getattr(exc, "structure", None),
            "field": getattr(exc, "field", None), "offset": getattr(exc, "offset", None), "message": str(exc)}


def _decode(u: Unit) -> dict:
    from .errors import DecodeError

    ev = u.event
    try:
        if u.unit == "segment":
            return _segment_tree(ev, u.data)
        if u.unit == "message":
            tree = {"Message": ev.to_dict()}
            if ev.md_only:
                # the MQMD and no data (an MQPUT_REPLY repeats the MQMD, not the data):
                # the MQMD alone, no header chain to follow (as pcap2parquet decodes it)
                from .ibmmq.headers import decode_md

                tree["MQ message"] = decode_md(ev.data, encoding=ev.encoding, ccsid=ev.ccsid).to_dict()
            else:
                tree["MQ message"] = ev.decode().to_dict()
            return tree
        if u.unit == "packet":
            from .msmq import decode_packet

            tree = {"Framing": {"Offset": ev.offset, "Length": ev.length, "Kind": ev.kind, "State": ev.state,
                                "Note": ev.note}}
            tree["MSMQ packet"] = decode_packet(u.data).to_dict()
            return tree
        if u.unit == "ping":
            from .msmq import decode_ping

            return {"MSMQ ping": decode_ping(u.data).to_dict()}
        return {"Error": dict(ev.to_dict())}
    except DecodeError as exc:
        tree = {"Message": ev.to_dict()} if u.unit == "message" else {}
        tree["Error"] = _error_tree(exc)
        return tree


def _text(raw: bytes, ccsid: int, ebcdic: bool) -> str:
    from .ccsid import decode_text, is_known

    if not is_known(ccsid):
        ccsid = 500 if ebcdic else 819
    return decode_text(raw, ccsid)


def _segment_tree(seg, body: bytes) -> dict:
    """TSH fields, then the API header and MQOD read from the segment's first
    bytes after the TSH (``body``)."""
    from .ibmmq.tsh import API_HEADER_DECL, API_HEADER_LENGTH, MQOD_PREFIX_DECL
    from .layout import parse_at

    tree: dict = {"TSH": seg.to_dict()}
    api = _api_header(seg, body)
    if api is not None:
        tree["API"] = api
        od = body[API_HEADER_LENGTH:]
        if seg.segment_type in _MQOD_TYPES and od[:4] in (b"OD  ", b"\xd6\xc4\x40\x40"):
            c = parse_at(MQOD_PREFIX_DECL[seg.order], od, 0, "MQOD")
            tree["MQOD"] = {
                "StrucId": bytes(c.StrucId), "Version": c.Version, "ObjectType": c.ObjectType,
                "ObjectName": _text(bytes(c.ObjectName), seg.ccsid, seg.ebcdic),
                "ObjectQMgrName": _text(bytes(c.ObjectQMgrName), seg.ccsid, seg.ebcdic),
                "DynamicQName": _text(bytes(c.DynamicQName), seg.ccsid, seg.ebcdic),
                "AlternateUserId": _text(bytes(c.AlternateUserId), seg.ccsid, seg.ebcdic),
            }
    return tree


def _api_header(seg, body: bytes) -> Optional[dict]:
    """The API header after the TSH of the first segment of an API call or reply."""
    from .ibmmq.tsh import API_HEADER_DECL, API_HEADER_LENGTH
    from .layout import parse_at

    if not (_MQ_API_FIRST <= seg.segment_type <= _MQ_API_LAST and seg.first) or len(body) < API_HEADER_LENGTH:
        return None
    c = parse_at(API_HEADER_DECL[seg.order], body, 0, "API header")
    return {"ReplyLength": c.ReplyLength, "CompCode": c.CompCode, "Reason": c.Reason, "Hobj": c.Hobj}


# ---------------------------------------------------------------------------
# the capture pipeline
# ---------------------------------------------------------------------------
class _Dir:
    """One TCP direction: its framer, where its bytes came from, and (IBM MQ)
    a copy of the stream bytes not yet framed, for segment bodies."""

    __slots__ = ("protocol", "framer", "marks", "src", "sport", "dst", "dport", "stream", "buf", "base",
                 "seg_frames")

    def __init__(self, conn, direction):
        from .capture import CLIENT_TO_SERVER

        self.protocol: Optional[str] = None
        self.framer: Any = None  # the stream framer, once the protocol is known
        self.marks: list = []       # [stream offset, end, frame, ts], ascending
        if direction == CLIENT_TO_SERVER:
            self.src, self.sport, self.dst, self.dport = conn.client, conn.client_port, conn.server, conn.server_port
        else:
            self.src, self.sport, self.dst, self.dport = conn.server, conn.server_port, conn.client, conn.client_port
        self.stream = conn.stream
        self.buf = bytearray()
        self.base = 0
        self.seg_frames: dict = {}  # segment offset -> (frames, ts): segments of messages still open

    def span(self, start: int, end: int) -> tuple[tuple, Optional[int]]:
        """(frames carrying stream bytes [start, end), ts of the first)."""
        frames: list = []
        ts = None
        for m_start, m_end, frame, m_ts in self.marks:
            if m_start >= end:
                break
            if m_end > start:
                if ts is None:
                    ts = m_ts
                if not frames or frames[-1] != frame:
                    frames.append(frame)
        return tuple(sorted(set(frames))), ts

    def forget_before(self, offset: int) -> None:
        """Nothing before stream ``offset`` will be asked for again."""
        marks = self.marks
        i = 0
        while i < len(marks) and marks[i][1] <= offset:
            i += 1
        if i:
            del marks[:i]
        if offset > self.base:
            cut = min(offset - self.base, len(self.buf))
            del self.buf[:cut]
            self.base += cut


#: at most this many segment frame lists are kept for messages still open
_MAX_SEG_FRAMES = 4096
#: a copy of unframed IBM MQ bytes longer than this keeps only its tail
_MAX_BUF = 1 << 27


class UnitFinder:
    """Frames in, units out (see the module docstring).

    ``want`` (a set of frame numbers, or None for all) limits the units
    returned to those carrying bytes of one of these frames; ``done`` turns
    True once no later unit can (the caller may stop reading)."""

    def __init__(self, *, mq_ports=(1414,), msmq_ports=(1801,), detect_by_content: bool = True,
                 want: Optional[Iterable[int]] = None):
        from .capture import CaptureProcessor

        self.mq_ports = frozenset(mq_ports)
        self.msmq_ports = frozenset(msmq_ports)
        self.detect_by_content = detect_by_content
        self.want = None if want is None else frozenset(want)
        self._last_wanted = max(self.want) if self.want else None
        self.proc = CaptureProcessor()
        self.dirs: dict = {}
        self._frame = 0

    # -- public -------------------------------------------------------------
    def feed(self, frame) -> list:
        self._frame = frame.number
        out: list = []
        self._events(self.proc.feed(frame), out)
        return self._wanted(out)

    def close(self) -> list:
        out: list = []
        self._events(self.proc.close(), out)
        for d in list(self.dirs.values()):
            if d.framer is not None:
                d.framer.close()
                self._drain(d, out)
        self.dirs.clear()
        return self._wanted(out)

    @property
    def done(self) -> bool:
        """True when every wanted frame is behind and nothing buffered can
        still become a unit carrying one of them."""
        if self.want is None:
            return False
        if not self.want or (self._last_wanted is not None and self._frame <= self._last_wanted):
            return not self.want
        if any(n for _, _, n in self.proc.tcp.buffered()):
            return False
        if getattr(getattr(self.proc, "frags", None), "_pending", None):  # IPv4 fragments waiting
            return False
        for d in self.dirs.values():
            if d.framer is not None and d.framer.buffered_bytes:
                return False
        return True

    # -- events ---------------------------------------------------------------
    def _wanted(self, units: list) -> list:
        if self.want is None:
            return units
        return [u for u in units if not self.want.isdisjoint(u.frames)]

    def _direction(self, conn, direction) -> _Dir:
        from .convert.protocols import new_framer, port_protocol

        key = (conn, direction)
        d = self.dirs.get(key)
        if d is None:
            d = self.dirs[key] = _Dir(conn, direction)
            proto = port_protocol(conn, self.mq_ports, self.msmq_ports)
            if proto is not None:
                d.protocol, d.framer = proto, new_framer(proto, 0)
        return d

    def _events(self, events, out: list) -> None:
        from .capture import Gap, StreamClosed, StreamData, UDPDatagram
        from .convert.options import MSMQ_PING_PORT
        from .convert.protocols import detect_protocol, new_framer

        for ev in events:
            t = type(ev)
            if t is StreamData:
                d = self._direction(ev.conn, ev.direction)
                if d.protocol is None:
                    proto = detect_protocol(ev.data) if self.detect_by_content else None
                    if proto is None:
                        continue
                    d.protocol, d.framer = proto, new_framer(proto, ev.offset)
                    d.base = ev.offset
                d.marks.append([ev.offset, ev.offset + len(ev.data), ev.frame_number, ev.ts_ns])
                if d.protocol == "mq":
                    if ev.offset != d.base + len(d.buf):  # not contiguous (cannot happen after a gap): restart
                        d.buf = bytearray()
                        d.base = ev.offset
                    d.buf += ev.data
                    if len(d.buf) > _MAX_BUF:
                        d.forget_before(d.base + len(d.buf) - _MAX_BUF)
                d.framer.feed(ev.data)
                self._drain(d, out)
            elif t is Gap:
                d = self._direction(ev.conn, ev.direction)
                if d.framer is not None:
                    d.framer.gap(ev.length)
                    self._drain(d, out)
                    d.buf = bytearray()
                    d.base = ev.offset + ev.length
            elif t is StreamClosed:
                d = self.dirs.pop((ev.conn, ev.direction), None)
                if d is not None and d.framer is not None:
                    d.framer.close()
                    self._drain(d, out)
            elif t is UDPDatagram:
                if MSMQ_PING_PORT in (ev.sport, ev.dport):
                    out.append(Unit(frames=(ev.frame_number,), ts_ns=ev.ts_ns, src=ev.src, src_port=ev.sport,
                                    dst=ev.dst, dst_port=ev.dport, tcp_stream=None, protocol="msmq", unit="ping",
                                    kind="Ping", offset=None, length=len(ev.payload), data=bytes(ev.payload),
                                    event=ev))

    def _unit(self, d: _Dir, start: int, end: int, unit: str, kind, data: bytes, ev, extra=None,
              span=None) -> Unit:
        frames, ts = span if span is not None else d.span(start, end)
        return Unit(frames=frames, ts_ns=ts, src=d.src, src_port=d.sport, dst=d.dst, dst_port=d.dport,
                    tcp_stream=d.stream, protocol=d.protocol or "", unit=unit, kind=kind, offset=start,
                    length=end - start, data=data, event=ev, extra=extra or {})

    def _drain(self, d: _Dir, out: list) -> None:
        if d.protocol == "mq":
            self._drain_mq(d, out)
        else:
            self._drain_msmq(d, out)

    def _drain_mq(self, d: _Dir, out: list) -> None:
        from .ibmmq.framing import FramingError, Message, Resynchronised, Segment

        keep = None  # forget stream bytes before this offset afterwards
        for ev in d.framer:
            t = type(ev)
            if t is Segment:
                end = ev.offset + ev.length
                span = d.span(ev.offset, end)
                lo = ev.offset + ev.header_length - d.base
                body = bytes(d.buf[max(lo, 0):max(lo, 0) + min(_BODY_KEEP, ev.length - ev.header_length)]) \
                    if lo >= 0 else b""
                extra = {"conversation_id": ev.conversation_id, "request_id": ev.request_id,
                         "segment_type": ev.segment_type}
                try:
                    api = _api_header(ev, body)
                except Exception:  # noqa: BLE001 - a short or odd body: the tree reports it
                    api = None
                if api is not None:
                    extra["comp_code"], extra["reason"] = api["CompCode"], api["Reason"]
                out.append(self._unit(d, ev.offset, end, "segment", ev.type_name, body, ev, extra, span))
                if not (ev.first and ev.last) or ev.segment_type in _MESSAGE_TYPES:
                    d.seg_frames[ev.offset] = span
                    while len(d.seg_frames) > _MAX_SEG_FRAMES:
                        d.seg_frames.pop(next(iter(d.seg_frames)))
                keep = end
            elif t is Message:
                frames: set = set()
                ts = None
                for seg in ev.segments:
                    f, s_ts = d.seg_frames.pop(seg.offset, None) or d.span(seg.offset, seg.offset + seg.length)
                    frames.update(f)
                    if ts is None:
                        ts = s_ts
                extra = {"conversation_id": ev.conversation_id, "request_id": ev.request_id,
                         "segment_type": ev.segment_type}
                out.append(self._unit(d, ev.offset, ev.end, "message", ev.kind,
                                      ev.data, ev, extra, (tuple(sorted(frames)), ts)))
            elif t is FramingError:
                end = ev.end
                err_frames, ts = d.span(ev.offset, max(end, ev.offset + 1))
                # the segments of a message that failed, framed earlier (their marks are gone)
                for off in [o for o in d.seg_frames if ev.offset <= o < end]:
                    f, s_ts = d.seg_frames.pop(off)
                    err_frames = tuple(sorted(set(err_frames) | set(f)))
                    ts = s_ts if off == ev.offset or ts is None else ts
                out.append(self._unit(d, ev.offset, end, "error", "framing error", ev.raw, ev,
                                      {"error": ev.reason, "conversation_id": ev.conversation_id},
                                      (err_frames, ts)))
                keep = max(keep or 0, end)
            elif t is Resynchronised:
                keep = max(keep or 0, ev.offset)
        if keep is not None:
            d.forget_before(keep)

    def _drain_msmq(self, d: _Dir, out: list) -> None:
        from .msmq.framing import FramingError, Packet, Resynchronised

        keep = None
        for ev in d.framer:
            t = type(ev)
            if t is Packet:
                end = ev.offset + ev.length
                out.append(self._unit(d, ev.offset, end, "packet", ev.kind, ev.data, ev))
                keep = end
            elif t is FramingError:
                end = ev.end
                out.append(self._unit(d, ev.offset, end, "error", "framing error", ev.raw, ev, {"error": ev.reason},
                                      d.span(ev.offset, max(end, ev.offset + 1))))
                keep = max(keep or 0, end)
            elif t is Resynchronised:
                keep = max(keep or 0, ev.offset)
        if keep is not None:
            d.forget_before(keep)


def iter_units(source, *, frames: Optional[Iterable[int]] = None, mq_ports=(1414,), msmq_ports=(1801,),
               detect_by_content: bool = True) -> Iterator[Unit]:
    """The units of a capture (path, ``"-"`` for standard input, bytes or
    binary file; pcap, pcapng, gzip), in the order they complete; with ``frames``, only those carrying
    bytes of one of these frames (reading stops once none can follow).
    Damaged file structure raises :class:`mqcodec.DecodeError`."""
    from .capture import open_capture

    if source == "-":
        import sys

        source = sys.stdin.buffer
    finder = UnitFinder(mq_ports=mq_ports, msmq_ports=msmq_ports, detect_by_content=detect_by_content,
                        want=None if frames is None else set(frames))
    for frame in open_capture(source):
        yield from finder.feed(frame)
        if finder.done:
            break
    yield from finder.close()


# ---------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------
def render_units(units: Iterable[Unit], fmt: str = "text") -> Iterator[str]:
    """Text (a header line, then the decoded tree indented, a blank line
    between units) or one JSON array of ``{"header": ..., "decoded": ...}``,
    a piece at a time."""
    from .render import to_json, to_text

    if fmt == "json":
        first = True
        yield "["
        for u in units:
            decoded = u.decode()  # first: a decode error shows in the header's "error"
            item = to_json({"header": u.header(), "decoded": decoded})
            item = "\n".join("  " + line for line in item.splitlines())
            yield ("\n" if first else ",\n") + item
            first = False
        yield "\n]\n" if not first else "]\n"
        return
    first = True
    for u in units:
        tree = u.decode()
        yield ("" if first else "\n") + u.header_line() + "\n" + to_text(tree, 1) + "\n"
        first = False


# ---------------------------------------------------------------------------
# the filter language
# ---------------------------------------------------------------------------
class FilterError(ValueError):
    """A filter expression that does not parse; ``position`` is the 0-based
    character where the problem is."""

    def __init__(self, message: str, position: int):
        super().__init__("%s (at character %d)" % (message, position + 1))
        self.position = position


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<op>==|!=|<=|>=|<|>|&&|\|\||!|\(|\))
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<num>0[xX][0-9a-fA-F]+|-?[0-9]+)
  | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
""", re.VERBOSE)

_WORD_OPS = {"and": "&&", "or": "||", "not": "!", "eq": "==", "ne": "!=", "lt": "<", "gt": ">",
             "le": "<=", "ge": ">="}
_COMPARE = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
}
_MULTI = frozenset({"frames", "addr", "port"})


def _tokens(text: str) -> list:
    out = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise FilterError("unexpected character %r" % text[pos], pos)
        kind = m.lastgroup
        value: Any = m.group()
        if kind == "str":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        elif kind == "num":
            value = int(value, 0)
        elif kind == "word":
            low = value.lower()
            if low in _WORD_OPS:
                kind, value = "op", _WORD_OPS[low]
            elif low in ("true", "false"):
                kind, value = "bool", low == "true"
        if kind != "ws":
            out.append((kind, value, pos))
        pos = m.end()
    out.append(("end", None, len(text)))
    return out


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0
        self.names: set = set()   # fields the expression names

    def peek(self):
        return self.toks[self.i]

    def take(self):
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def parse(self):
        if self.peek()[0] == "end":
            raise FilterError("empty filter", 0)
        node = self.or_()
        kind, value, pos = self.peek()
        if kind != "end":
            raise FilterError("unexpected %r" % (value,), pos)
        return node

    def or_(self):
        node = self.and_()
        while self.peek()[:2] == ("op", "||"):
            self.take()
            left, right = node, self.and_()
            node = (lambda a, b: lambda f: a(f) or b(f))(left, right)
        return node

    def and_(self):
        node = self.not_()
        while self.peek()[:2] == ("op", "&&"):
            self.take()
            left, right = node, self.not_()
            node = (lambda a, b: lambda f: a(f) and b(f))(left, right)
        return node

    def not_(self):
        kind, value, pos = self.peek()
        if (kind, value) == ("op", "!"):
            self.take()
            inner = self.not_()
            return lambda f: not inner(f)
        if (kind, value) == ("op", "("):
            self.take()
            node = self.or_()
            kind, value, pos = self.take()
            if (kind, value) != ("op", ")"):
                raise FilterError("expected ')'", pos)
            return node
        return self.comparison()

    def comparison(self):
        kind, name, pos = self.take()
        if kind != "word":
            raise FilterError("expected a field name, found %r" % (name,), pos)
        if name not in FIELDS:
            hint = ' (a string value is quoted: "%s")' % name if name.isupper() else ""
            raise FilterError("unknown field %r%s; fields: %s" % (name, hint, ", ".join(FIELDS)), pos)
        ftype = FIELDS[name][0]
        self.names.add(name)
        kind, op, pos = self.peek()
        if kind != "op" or op not in _COMPARE:
            return lambda f: f.get(name) not in (None, "", ())
        self.take()
        kind, value, vpos = self.take()
        if kind == "word":
            raise FilterError('expected a value after %r, found %s (a string value is quoted: "%s")'
                              % (op, value, value), vpos)
        if kind not in ("str", "num", "bool"):
            raise FilterError("expected a value after %r, found %r" % (op, value) if kind != "end"
                              else "expected a value after %r" % op, vpos)
        if kind == "bool":
            raise FilterError("%s is a %s field, not a boolean" % (name, "number" if ftype is int else "text"), vpos)
        if (kind == "num") != (ftype is int):
            raise FilterError("%s is a %s field: compare it with %s" % (
                name, "number" if ftype is int else "text", "a number" if ftype is int else "a quoted string"),
                vpos)
        cmp = _COMPARE[op]
        if name in _MULTI:
            return lambda f: any(v is not None and cmp(v, value) for v in f.get(name, ()))
        return lambda f: (lambda v: v is not None and cmp(v, value))(f.get(name))


def compile_filter(text: str) -> Callable[[Unit], bool]:
    """A predicate over units for a filter expression (module docstring);
    raises :class:`FilterError` naming the position of a problem."""
    parser = _Parser(text)
    pred = parser.parse()
    if "error" in parser.names:  # decode errors are known once decoded
        def with_decode(unit: Unit) -> bool:
            unit.decode()
            return bool(pred(unit.fields()))

        return with_decode
    return lambda unit: bool(pred(unit.fields()))
