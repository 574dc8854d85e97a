"""IBM MQ conversations: request/reply pairing and object-handle (queue)
attribution, as an I/O-free state machine in the style of h11.

Feed :meth:`CallTracker.unit` the decoded units (:func:`mqcodec.ibmmq.calls.
decode_unit` dicts plus where they were seen) in capture order; each call
returns a :class:`Attribution` for that unit.  :meth:`CallTracker.close`
ends the capture and names the requests that never got a reply.

The rules, all per TCP connection (``stream``) and TSHM ConversID (``conv``;
-1 for TSH/TSHC units), which together name one MQ conversation:

=====================  =====================================================
unit                   effect
=====================  =====================================================
API call, XA request   waits for its reply under (stream, conv, RequestID,
                       type); several with the same key wait in order
API reply, XA reply    pairs with the oldest waiting request of its type and
                       key: ``request_call_key``, ``latency_ns``; the reply
                       names the request's queue
MQOPEN_REPLY           CompCode not MQCC_FAILED: Hobj -> the MQOPEN's MQOD
                       ObjectName / ObjectQMgrName (the reply's MQOD when the
                       request's is absent)
SPI_REPLY (OPEN verb)  the same from the reply's MQOD (JMS clients open queues
                       through SPI)
MQCLOSE_REPLY          Hobj forgotten once closed (CompCode not FAILED)
MQDISC_REPLY           every Hobj of the conversation forgotten
MQPUT, MQGET, MQINQ,   name the queue their Hobj was opened on (their
MQSET, MQCLOSE,        replies: their request's; with no request, their Hobj)
ASYNC_MESSAGE,
REQUEST_MSGS,
NOTIFICATION
MQPUT1                 names its own MQOD's object
MESSAGE_DATA           names the MQXQH RemoteQName / RemoteQMgrName
INITIAL_DATA           its QMgrName (not blank, not "*") is the connection's
                       queue manager: the default ``queue_manager``
=====================  =====================================================

Memory is bounded: at most ``max_waiting`` requests wait at once (past it
the oldest is given up, reported by :meth:`unit` in ``given_up``) and at
most ``max_handles`` handles are kept per conversation.
"""
from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Optional

from .calls import MQCLOSE, MQOPEN, MQPUT1, SPI, is_reply, is_request, request_type_of

__all__ = ["CallTracker", "Attribution", "MQCC_FAILED"]

MQCC_FAILED = 2
MESSAGE_DATA = 0x04
INITIAL_DATA = 0x01
MQDISC = 0x82
_REPLY = 0x10
_SPI_OPEN = 12
#: types whose Hobj names an object opened before
_USES_HANDLE = frozenset({0x84, 0x85, 0x86, 0x88, 0x89, 0x0D, 0x0E, 0x0F})


@dataclass
class Attribution:
    """What the conversation says about one unit."""

    queue_name: Optional[str] = None
    queue_manager: Optional[str] = None
    #: on a reply: the call_key of its request and the time between them
    request_call_key: Optional[int] = None
    latency_ns: Optional[int] = None
    #: on a request: it waits for a reply (False: not a request)
    waiting: bool = False
    #: requests given up to keep memory bounded (call_keys), never replied
    given_up: list = field(default_factory=list)


@dataclass
class _Waiting:
    call_key: int
    ts_ns: Optional[int]
    queue_name: Optional[str]
    queue_manager: Optional[str]
    od_name: Optional[str]
    od_qmgr: Optional[str]
    hobj: Optional[int] = None


class CallTracker:
    """See the module docstring."""

    def __init__(self, *, max_waiting: int = 1 << 16, max_handles: int = 1 << 16):
        self._waiting: dict[tuple, deque] = {}
        self._order: OrderedDict = OrderedDict()   # call_key -> waiting key, oldest first
        self._handles: dict[tuple, OrderedDict] = {}
        self._qmgr: dict[Any, str] = {}
        self.max_waiting = int(max_waiting)
        self.max_handles = int(max_handles)

    @property
    def waiting(self) -> int:
        return len(self._order)

    def unit(self, call_key: int, stream: Any, ts_ns: Optional[int], cols: dict) -> Attribution:
        """One unit, in capture order: ``cols`` are its decode_unit columns."""
        t = cols.get("segment_type")
        conv = cols.get("conversation_id")
        conv = -1 if conv is None else conv
        ckey = (stream, conv)
        hobj = cols.get("hobj")
        out = Attribution()
        if t is None:
            return out
        default_qm = self._qmgr.get(stream)
        if t == INITIAL_DATA:
            qm = cols.get("id_q_mgr_name")
            if qm and qm != "*":
                self._qmgr[stream] = qm
            return out
        if t == MESSAGE_DATA:
            out.queue_name = cols.get("remote_q_name")
            out.queue_manager = cols.get("remote_q_mgr_name")
            return out
        base = request_type_of(t) if is_reply(t) else t
        # the object this unit names
        if base == MQPUT1 or (base == MQOPEN and not is_reply(t)):
            out.queue_name = cols.get("od_object_name")
            out.queue_manager = cols.get("od_object_q_mgr_name")
        elif t in _USES_HANDLE and hobj is not None:
            known = self._handles.get(ckey, {}).get(hobj)
            if known is not None:
                out.queue_name, out.queue_manager = known
        if t == 0x0D and out.queue_name is None:
            out.queue_name = cols.get("resolved_q_name")
        if is_request(t):
            self._wait(call_key, (stream, conv, cols.get("request_id"), t), ts_ns, out, cols)
            out.waiting = True
            self._bound(out)
        elif is_reply(t):
            req = self._pair((stream, conv, cols.get("request_id"), base))
            if req is not None:
                out.request_call_key = req.call_key
                if ts_ns is not None and req.ts_ns is not None:
                    out.latency_ns = ts_ns - req.ts_ns
                if out.queue_name is None:
                    out.queue_name, out.queue_manager = req.queue_name, req.queue_manager
            if out.queue_name is None and base in _USES_HANDLE and hobj is not None:
                # a reply whose request the capture does not hold: its own Hobj
                known = self._handles.get(ckey, {}).get(hobj)
                if known is not None:
                    out.queue_name, out.queue_manager = known
            failed = cols.get("completion_code") == MQCC_FAILED
            if base == MQOPEN or (base == SPI and cols.get("spi_verb") == _SPI_OPEN):
                name = qm = None
                if req is not None and base == MQOPEN:
                    name, qm = req.od_name, req.od_qmgr
                if name is None:
                    name, qm = cols.get("od_object_name"), cols.get("od_object_q_mgr_name")
                if name is None and base == MQOPEN:
                    name = cols.get("od_resolved_q_name")
                qm = qm or cols.get("od_resolved_q_mgr_name")
                out.queue_name, out.queue_manager = name, qm
                if not failed and hobj is not None and name is not None:
                    handles = self._handles.setdefault(ckey, OrderedDict())
                    handles[hobj] = (name, qm)
                    if len(handles) > self.max_handles:
                        handles.popitem(last=False)
            elif base == MQCLOSE and not failed and req is not None:
                open_handles = self._handles.get(ckey)
                if open_handles is not None:
                    open_handles.pop(req.hobj, None)
            elif base == MQDISC:
                self._handles.pop(ckey, None)
        if out.queue_manager is None and out.queue_name is not None:
            out.queue_manager = default_qm
        return out

    def _wait(self, call_key, key, ts_ns, out: Attribution, cols: dict) -> None:
        w = _Waiting(call_key, ts_ns, out.queue_name, out.queue_manager,
                     cols.get("od_object_name"), cols.get("od_object_q_mgr_name"), cols.get("hobj"))
        self._waiting.setdefault(key, deque()).append(w)
        self._order[call_key] = key

    def _pair(self, key) -> Optional[_Waiting]:
        q = self._waiting.get(key)
        if not q:
            return None
        w = q.popleft()
        if not q:
            del self._waiting[key]
        self._order.pop(w.call_key, None)
        return w

    def _bound(self, out: Attribution) -> None:
        while len(self._order) > self.max_waiting:
            call_key, key = self._order.popitem(last=False)
            q = self._waiting.get(key)
            if q:
                for i, w in enumerate(q):
                    if w.call_key == call_key:
                        del q[i]
                        break
                if not q:
                    del self._waiting[key]
            out.given_up.append(call_key)

    def close(self) -> list[int]:
        """End of the capture: the call_keys of the requests still waiting
        (never replied), oldest first; the tracker is empty afterwards."""
        keys = list(self._order)
        self._order.clear()
        self._waiting.clear()
        self._handles.clear()
        self._qmgr.clear()
        return keys
