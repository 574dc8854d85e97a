"""IBM MQ conversations: request/reply pairing and object-handle (queue)
attribution, as an I/O-free state machine in the style of h11.

Feed :meth:`CallTracker.unit` the decoded units (:func:`mqcodec.ibmmq.calls.
decode_unit` dicts plus where they were seen) in capture order; each call
returns a :class:`Attribution` for that unit.  :meth:`CallTracker.units`
takes many units as columns (:func:`mqcodec.ibmmq.calls_batch.decode_units`)
and returns :class:`Attributions`, one list per field: the same rules in one
loop, with no object per unit.  :meth:`CallTracker.close` ends the capture
and names the requests that never got a reply.

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
                       queue manager (the last one sent: a client's server
                       answers last, with its own name)
every unit             ``queue_manager``: its object's (MQOD ObjectQMgrName,
                       MQXQH RemoteQMgrName), else the connection's once an
                       INITIAL_DATA named it (MQCONN, MQINQ on the queue
                       manager object, MQDISC... included); ``queue_name``
                       only where a queue is named
every unit             who: ``channel_name``, the connection's (the last
                       INITIAL_DATA ChannelName not blank); ``user_id``, the
                       conversation's (its CONAUTH_INFO user, else the
                       connection's last USERID_DATA LongUserId, else its
                       UserId); ``appl_name``, the conversation's (its last
                       MQCONN ApplName) -- each once its unit has been seen,
                       that unit included, in both directions
=====================  =====================================================

Memory is bounded: at most ``max_waiting`` requests wait at once (past it
the oldest is given up, reported by :meth:`unit` in ``given_up``), at
most ``max_handles`` handles are kept per conversation, and the state of at
most ``max_connections`` connections and as many conversations (their queue
manager, who, handles): past it the state of the one that got it first is
forgotten (its later units then carry none), so that a capture of millions
of short connections keeps a flat memory.
"""

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Optional, Sequence

from mqcodec.ibmmq.wire import (  # absolute: _ext compiles this file too
    ASYNC_MESSAGE, CONAUTH_INFO, INITIAL_DATA, MESSAGE_DATA, MQCLOSE, MQCONN, MQDISC, MQGET, MQINQ, MQOPEN, MQPUT,
    MQPUT1, MQSET, NOTIFICATION, REPLY_BIT, REQUEST_MSGS, SPI, USERID_DATA, is_reply, is_request)

__all__ = ["CallTracker", "Attribution", "Attributions", "MQCC_FAILED", "TRACKED"]

MQCC_FAILED = 2
#: the types that say who: the connection's channel and user, the conversation's user and application
_WHO = frozenset({INITIAL_DATA, USERID_DATA, CONAUTH_INFO, MQCONN})
_REPLY = REPLY_BIT
_SPI_OPEN = 12
#: types whose Hobj names an object opened before
_USES_HANDLE = frozenset({MQCLOSE, MQGET, MQPUT, MQSET, MQINQ, ASYNC_MESSAGE, REQUEST_MSGS, NOTIFICATION})
_REQUESTS = frozenset(t for t in range(256) if is_request(t))
_REPLIES = frozenset(t for t in range(256) if is_reply(t))

#: the decode_unit columns the rules read
TRACKED = ("segment_type", "conversation_id", "request_id", "hobj", "completion_code", "id_q_mgr_name",
           "remote_q_name", "remote_q_mgr_name", "od_object_name", "od_object_q_mgr_name",
           "od_resolved_q_name", "od_resolved_q_mgr_name", "resolved_q_name", "spi_verb",
           "id_channel_name", "uid_user_id", "uid_long_user_id", "caut_user_id", "conn_appl_name")


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
    #: who: the connection's channel, the conversation's user and application
    channel_name: Optional[str] = None
    user_id: Optional[str] = None
    appl_name: Optional[str] = None


class Attributions(NamedTuple):
    """What the conversation says about many units (:meth:`CallTracker.units`):
    one list per :class:`Attribution` field, one value per unit, and the
    requests given up while they were fed (call_keys, oldest first)."""

    queue_name: list
    queue_manager: list
    request_call_key: list
    latency_ns: list
    waiting: list
    given_up: list
    channel_name: list
    user_id: list
    appl_name: list


class CallTracker:
    """See the module docstring."""

    def __init__(self, *, max_waiting: int = 1 << 16, max_handles: int = 1 << 16, max_connections: int = 1 << 16):
        # waiting key -> the request waiting under it, or a deque of them when several do
        # (a deque is ~700 bytes: 45 MiB for the 65,536 requests that may wait)
        self._waiting: dict[tuple, Any] = {}
        # the states forgotten oldest first are OrderedDicts: a dict's first entry is found by
        # walking past the entries deleted before it, so that forgetting the oldest of 65,536
        # one at a time cost ~10 us (a capture of 160,000 short connections: 5 of its 9 s)
        self._order: OrderedDict = OrderedDict()   # call_key -> waiting key, oldest first
        self._handles: OrderedDict = OrderedDict()   # conversation -> its handles
        self._qmgr: OrderedDict = OrderedDict()
        # who: stream -> [channel (INITIAL_DATA), user (USERID_DATA)]; conversation ->
        # [user (CONAUTH_INFO), application (MQCONN)] (two lookups a unit)
        self._connection: OrderedDict = OrderedDict()
        self._conversation: OrderedDict = OrderedDict()
        self.max_waiting = int(max_waiting)
        self.max_handles = int(max_handles)
        self.max_connections = int(max_connections)

    @property
    def waiting(self) -> int:
        return len(self._order)

    def unit(self, call_key: int, stream: Any, ts_ns: Optional[int], cols: dict) -> Attribution:
        """One unit, in capture order: ``cols`` are its decode_unit columns."""
        got = self.units([call_key], [stream], [ts_ns], {k: [cols.get(k)] for k in TRACKED})
        return Attribution(got.queue_name[0], got.queue_manager[0], got.request_call_key[0],
                           got.latency_ns[0], got.waiting[0], got.given_up, got.channel_name[0], got.user_id[0],
                           got.appl_name[0])

    def units(self, call_keys: Sequence[int], streams: Sequence, ts_ns: Sequence[Optional[int]],
              cols: Mapping[str, Sequence]) -> Attributions:
        """Many units, in capture order, as columns (the same rules as
        :meth:`unit`, without an object per unit): ``cols`` maps the names
        in :data:`TRACKED` to one value per unit (a missing name: all None)."""
        n = len(call_keys)
        nothing = [None] * n
        col = lambda name: cols.get(name) or nothing  # noqa: E731
        types, convs, request_ids, hobjs = col("segment_type"), col("conversation_id"), col("request_id"), col("hobj")
        ccs, qmgr_names, spi_verbs = col("completion_code"), col("id_q_mgr_name"), col("spi_verb")
        remote_q, remote_qm = col("remote_q_name"), col("remote_q_mgr_name")
        od_name, od_qm = col("od_object_name"), col("od_object_q_mgr_name")
        od_resolved, od_resolved_qm = col("od_resolved_q_name"), col("od_resolved_q_mgr_name")
        resolved_q = col("resolved_q_name")
        channels, users, long_users, auth_users, appls = (col("id_channel_name"), col("uid_user_id"),
                                                          col("uid_long_user_id"), col("caut_user_id"),
                                                          col("conn_appl_name"))
        ch: list[Optional[str]] = [None] * n
        us: list[Optional[str]] = [None] * n
        ap: list[Optional[str]] = [None] * n
        connections, conversations = self._connection, self._conversation
        qn: list[Optional[str]] = [None] * n
        qm: list[Optional[str]] = [None] * n
        rck: list[Optional[int]] = [None] * n
        lat: list[Optional[int]] = [None] * n
        waits = [False] * n
        given_up: list = []
        waiting, order, all_handles, qmgr = self._waiting, self._order, self._handles, self._qmgr
        max_waiting, max_handles, max_connections = self.max_waiting, self.max_handles, self.max_connections
        for i in range(n):
            t = types[i]
            if t is None:
                continue
            stream = streams[i]
            conv = convs[i]
            ckey = (stream, -1 if conv is None else conv)
            # who
            if t in _WHO:
                if t == INITIAL_DATA or t == USERID_DATA:   # the connection's [channel, user]
                    who = channels[i] if t == INITIAL_DATA else long_users[i] or users[i]
                    held, key, slot = connections, stream, 0 if t == INITIAL_DATA else 1
                else:                                         # the conversation's [user, application]
                    who = auth_users[i] if t == CONAUTH_INFO else appls[i]
                    held, key, slot = conversations, ckey, 0 if t == CONAUTH_INFO else 1
                if who:
                    state = held.get(key)
                    if state is None:
                        state = held[key] = [None, None]
                        _bound(held, max_connections)
                    state[slot] = who
            state = connections.get(stream)
            if state is not None:
                ch[i], us[i] = state
            state = conversations.get(ckey)
            if state is not None:
                if state[0] is not None:
                    us[i] = state[0]
                ap[i] = state[1]
            if t == INITIAL_DATA:
                name = qmgr_names[i]
                if name and name != "*":
                    qmgr[stream] = name
                    _bound(qmgr, max_connections)
                qm[i] = qmgr.get(stream)
                continue
            if t == MESSAGE_DATA:
                qn[i], qm[i] = remote_q[i], remote_qm[i]
                continue
            hobj = hobjs[i]
            reply = t in _REPLIES
            base = t & ~_REPLY if reply else t
            name = manager = None
            # the object this unit names
            if base == MQPUT1 or (base == MQOPEN and not reply):
                name, manager = od_name[i], od_qm[i]
            elif t in _USES_HANDLE and hobj is not None:
                handles = all_handles.get(ckey)
                if handles is not None:
                    known = handles.get(hobj)
                    if known is not None:
                        name, manager = known
            if t == ASYNC_MESSAGE and name is None:
                name = resolved_q[i]
            if t in _REQUESTS:
                key = (ckey[0], ckey[1], request_ids[i], t)
                ck = call_keys[i]
                # waits as (call_key, ts_ns, queue_name, queue_manager, MQOD ObjectName,
                # ObjectQMgrName, Hobj)
                w = (ck, ts_ns[i], name, manager, od_name[i], od_qm[i], hobj)
                q = waiting.get(key)
                if q is None:
                    waiting[key] = w   # the one request waiting under its key (the usual case)
                elif type(q) is tuple:
                    waiting[key] = deque((q, w))
                else:
                    q.append(w)
                order[ck] = key
                waits[i] = True
                while len(order) > max_waiting:
                    self._give_up(given_up)
            elif reply:
                paired = False
                key = (ckey[0], ckey[1], request_ids[i], base)
                q = waiting.get(key)
                if q is not None:
                    # the request (a plain tuple: no object per request, see above)
                    if type(q) is tuple:
                        del waiting[key]
                    else:
                        req = q
                        q = req.popleft()
                        if not req:
                            del waiting[key]
                    req_key, req_ts, req_name, req_manager, req_od, req_od_qm, req_hobj = q
                    paired = True
                    order.pop(req_key, None)
                    rck[i] = req_key
                    ts = ts_ns[i]
                    if ts is not None and req_ts is not None:
                        lat[i] = ts - req_ts
                    if name is None:
                        name, manager = req_name, req_manager
                if name is None and base in _USES_HANDLE and hobj is not None:
                    # a reply whose request the capture does not hold: its own Hobj
                    known = all_handles.get(ckey, {}).get(hobj)
                    if known is not None:
                        name, manager = known
                if base == MQOPEN or (base == SPI and spi_verbs[i] == _SPI_OPEN):
                    name = manager = None
                    if paired and base == MQOPEN:
                        name, manager = req_od, req_od_qm
                    if name is None:
                        name, manager = od_name[i], od_qm[i]
                    if name is None and base == MQOPEN:
                        name = od_resolved[i]
                    manager = manager or od_resolved_qm[i]
                    if ccs[i] != MQCC_FAILED and hobj is not None and name is not None:
                        handles = all_handles.get(ckey)
                        if handles is None:
                            handles = all_handles[ckey] = OrderedDict()
                            _bound(all_handles, max_connections)
                        handles[hobj] = (name, manager)
                        if len(handles) > max_handles:
                            handles.popitem(last=False)
                elif base == MQCLOSE and paired and ccs[i] != MQCC_FAILED:
                    handles = all_handles.get(ckey)
                    if handles is not None:
                        handles.pop(req_hobj, None)
                elif base == MQDISC:
                    all_handles.pop(ckey, None)
            qn[i] = name
            qm[i] = manager or qmgr.get(stream)
        return Attributions(qn, qm, rck, lat, waits, given_up, ch, us, ap)

    def _give_up(self, given_up: list) -> None:
        """Forget the oldest waiting request (memory bound)."""
        call_key, key = self._order.popitem(last=False)
        q = self._waiting.get(key)
        if type(q) is tuple:
            if q[0] == call_key:
                del self._waiting[key]
        elif q:
            for i, w in enumerate(q):
                if w[0] == call_key:
                    del q[i]
                    break
            if not q:
                del self._waiting[key]
        given_up.append(call_key)

    def close(self) -> list[int]:
        """End of the capture: the call_keys of the requests still waiting
        (never replied), oldest first; the tracker is empty afterwards."""
        keys = list(self._order)
        self._order.clear()
        self._waiting.clear()
        self._handles.clear()
        self._qmgr.clear()
        self._connection.clear()
        self._conversation.clear()
        return keys


def _bound(state: OrderedDict, limit: int) -> None:
    """Forget the oldest entries of ``state`` (insertion order) past ``limit``."""
    while len(state) > limit:
        state.popitem(last=False)
