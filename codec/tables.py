"""The output tables of the main job, their schemas, and the Parquet dataset sink.

One Parquet dataset per table, the same layout whichever engine writes it::

    OUTDIR/mq_messages/part-00000.parquet       IBM MQ messages and MQ framing errors
    OUTDIR/msmq_packets/part-00000.parquet      MSMQ packets (pings included) and MSMQ framing errors
    OUTDIR/pcf_parameters/part-00000.parquet    PCF parameters of MQ messages with a PCF body
    OUTDIR/mq_calls/part-00000.parquet          IBM MQ protocol units (every segment type), paired
    (with partitioning by date: OUTDIR/<table>/date=YYYY-MM-DD/part-*.parquet)

Each table is self-contained: the common columns (:data:`COMMON`) then only
its own protocol's columns, all snake_case.  The types are the ones every
reader takes as they are (pyarrow, pandas, Polars, DuckDB, Spark):

* ``ts`` is ``TIMESTAMP(MICROS, UTC)``; ``ts_nanos`` keeps the nanoseconds
  within that microsecond (0 for captures with microsecond resolution);
* unsigned integers are widened to the next signed type (Spark has none);
* low-cardinality strings are dictionary-encoded (:data:`DICTIONARY`).

Everything here is derived from :mod:`mqcodec.batch.schema`, the one Arrow
definition of the decoded columns; nothing is spelt twice.
"""
from __future__ import annotations

import os
from typing import Callable, Iterable, Optional

import pyarrow as pa

from .batch import schema as _schema
from .errors import KeyOverflow

__all__ = [
    "TABLES", "MQ_MESSAGES", "MSMQ_PACKETS", "PCF_PARAMETERS", "MQ_CALLS", "COMMON", "MQ_LINK", "DICTIONARY",
    "table_schema", "widen_unsigned", "DatasetSink", "BackgroundSink", "TableCollector", "Sink", "NAMED",
    "name_column", "KeyOverflow", "key_base", "check_job_size", "make_key", "make_keys", "key_capture",
    "key_frame", "key_rank",
    "MessageKeys",
]

MQ_MESSAGES = "mq_messages"
MSMQ_PACKETS = "msmq_packets"
PCF_PARAMETERS = "pcf_parameters"
MQ_CALLS = "mq_calls"
#: every table of the main job, in the order they are listed to users
TABLES = (MQ_MESSAGES, MSMQ_PACKETS, PCF_PARAMETERS, MQ_CALLS)

#: message_key and call_key: ``capture << KEY_CAPTURE_SHIFT | frame << KEY_FRAME_SHIFT | rank``,
#: from the input only (docs/tables.md "Keys"): the capture's index in the job, the frame
#: holding the row's first byte, the row's rank among the rows of that frame (in stream order)
KEY_CAPTURE_SHIFT = 49
KEY_FRAME_SHIFT = 16
#: the largest capture index, frame number and rank a key holds (int64, never negative)
KEY_MAX_CAPTURE = (1 << (63 - KEY_CAPTURE_SHIFT)) - 1
KEY_MAX_FRAME = (1 << (KEY_CAPTURE_SHIFT - KEY_FRAME_SHIFT)) - 1
KEY_MAX_RANK = (1 << KEY_FRAME_SHIFT) - 1
#: message_key ranks from here up are the rows keyed by their connection's first frame
#: (a row whose first byte was not captured, before any captured byte of its direction:
#: :class:`MessageKeys`); bit 14 of the rank is the direction
KEY_FALLBACK_RANK = 1 << 15
#: frames per TCP direction whose rank counts are remembered (rows of one frame are
#: consecutive in their direction's stream order: a frame is one TCP segment)
KEY_RANK_FRAMES = 16
#: call_key's (the same layout as message_key)
CALL_CAPTURE_SHIFT = KEY_CAPTURE_SHIFT
CALL_FRAME_SHIFT = KEY_FRAME_SHIFT

#: a sink takes (table name, rows of that table's schema)
Sink = Callable[[str, pa.Table], None]


# ---------------------------------------------------------------------------
# keys: message_key and call_key, from the input only
# ---------------------------------------------------------------------------
def key_base(capture_index: int) -> int:
    """The high bits of every key of the capture at ``capture_index`` in the job."""
    capture_index = int(capture_index)
    if not 0 <= capture_index <= KEY_MAX_CAPTURE:
        raise KeyOverflow("capture index %d does not fit in message_key/call_key: a job takes at most %d "
                          "captures (indices 0..%d)" % (capture_index, KEY_MAX_CAPTURE + 1, KEY_MAX_CAPTURE))
    return capture_index << KEY_CAPTURE_SHIFT


def check_job_size(captures: int) -> None:
    """Before a job starts: its ``captures`` inputs all fit in the keys' capture bits."""
    if captures > KEY_MAX_CAPTURE + 1:
        raise KeyOverflow("%d inputs: a job takes at most %d captures (the capture index of message_key/"
                          "call_key); convert them in several jobs" % (captures, KEY_MAX_CAPTURE + 1))


def make_key(base: int, frame: Optional[int], rank: int) -> int:
    """``base`` (:func:`key_base`) | frame << KEY_FRAME_SHIFT | rank; ``frame`` None is 0
    (frame numbers start at 1)."""
    frame = frame or 0
    if not 0 <= frame <= KEY_MAX_FRAME:
        raise KeyOverflow("frame number %d does not fit in message_key/call_key (at most %d)" % (frame, KEY_MAX_FRAME))
    if not 0 <= rank <= KEY_MAX_RANK:
        raise KeyOverflow("rank %d of a row in frame %d does not fit in message_key/call_key (at most %d rows "
                          "per frame)" % (rank, frame, KEY_MAX_RANK + 1))
    return base | (frame << KEY_FRAME_SHIFT) | rank


def make_keys(base: int, frames, ranks):
    """:func:`make_key` over numpy int64 arrays (``frames`` <= 0: no frame)."""
    import numpy as np

    frames = np.maximum(np.asarray(frames, dtype=np.int64), 0)
    ranks = np.asarray(ranks, dtype=np.int64)
    if len(frames) and (int(frames.max()) > KEY_MAX_FRAME or int(ranks.max()) > KEY_MAX_RANK):
        bad = int(np.flatnonzero((frames > KEY_MAX_FRAME) | (ranks > KEY_MAX_RANK))[0])
        make_key(base, int(frames[bad]), int(ranks[bad]))   # raises, naming the part
    return base | (frames << KEY_FRAME_SHIFT) | ranks


def key_capture(key: int) -> int:
    """The capture index a key holds."""
    return key >> KEY_CAPTURE_SHIFT


def key_frame(key: int) -> int:
    """The frame number a key holds (0: none)."""
    return (key >> KEY_FRAME_SHIFT) & KEY_MAX_FRAME


def key_rank(key: int) -> int:
    """The rank a key holds."""
    return key & KEY_MAX_RANK


def count_in_frame(counts: dict, frame, n: int = 1, limit: int = KEY_RANK_FRAMES) -> int:
    """The rank rule of the keys, one step: ``n`` more rows of one direction
    start in ``frame``; returns how many did before them.  ``counts`` (frame ->
    rows, oldest first) remembers the last ``limit`` frames."""
    k = counts.get(frame, 0)
    counts[frame] = k + n
    if len(counts) > limit:
        del counts[next(iter(counts))]
    return k


def direction_runs(stream, direction, frame):
    """Rows (numpy arrays, in each direction's stream order; directions may
    interleave) as runs of one direction and one frame: ``(order, starts,
    ends, groups, frames)``: ``order`` sorts the rows by direction, stably;
    each run is ``order[starts[j]:ends[j]]``, of direction ``groups[j]``
    (stream * 2 + direction) and frame ``frames[j]``."""
    import numpy as np

    group = np.asarray(stream, dtype=np.int64) * 2 + np.asarray(direction, dtype=np.int64)
    frame = np.asarray(frame, dtype=np.int64)
    n = len(group)
    order = np.argsort(group, kind="stable")
    g, f = group[order], frame[order]
    cut = np.flatnonzero((g[1:] != g[:-1]) | (f[1:] != f[:-1])) + 1
    starts = np.concatenate(([0], cut)).astype(np.int64)
    ends = np.concatenate((cut, [n])).astype(np.int64)
    return order, starts, ends, g[starts], f[starts]


def count_new_frames(counts_of, groups, frames, lengths, limit: int = KEY_RANK_FRAMES):
    """The rank rule of :meth:`MessageKeys.tcp` (a frame's rows counted per
    direction, the last ``limit`` frames remembered) for whole runs at once
    (:func:`direction_runs`), where it needs no per-run step: a direction
    whose runs' frames are all >= 0 and increase, the first no lower than any
    frame it remembers (a capture in order).  ``counts_of(group)`` gives the
    direction's counts (frame -> rows, oldest first), updated here as the
    one-run-at-a-time rule leaves them.  Returns ``(first, done)``: each
    run's first rank, and which runs this counted (the others: per run)."""
    import numpy as np

    m = len(groups)
    first = np.zeros(m, dtype=np.int64)
    done = np.zeros(m, dtype=bool)
    if m == 0:
        return first, done
    gcut = np.flatnonzero(groups[1:] != groups[:-1]) + 1
    gstarts = np.concatenate(([0], gcut))
    gends = np.concatenate((gcut, [m]))
    bad = frames < 0
    bad[1:] |= frames[1:] <= frames[:-1]
    bad[gstarts] = frames[gstarts] < 0
    bad_group = np.add.reduceat(bad.astype(np.int64), gstarts) > 0
    for a, b, g, skip in zip(gstarts.tolist(), gends.tolist(), groups[gstarts].tolist(), bad_group.tolist()):
        if skip:
            continue
        counts = counts_of(g)
        f0 = int(frames[a])
        if counts and (None in counts or max(counts) > f0):
            continue
        k0 = counts.get(f0, 0)
        first[a] = k0
        counts[f0] = k0 + int(lengths[a])
        done[a:b] = True
        if b - a > limit:   # the later runs push out every frame remembered before them
            counts.clear()
            rest = b - limit
        else:
            rest = a + 1
        counts.update(zip(frames[rest:b].tolist(), lengths[rest:b].tolist()))
        while len(counts) > limit:
            del counts[next(iter(counts))]
    return first, done


class _DirectionKeys:
    __slots__ = ("counts", "last", "fallback")

    def __init__(self):
        self.counts: dict = {}     # frame -> rows of this direction seen in it (the last KEY_RANK_FRAMES frames)
        self.last: Optional[int] = None   # frame of the direction's latest row whose first byte was captured
        self.fallback = 0          # rows keyed by the connection's first frame


class MessageKeys:
    """The message_key of each row of one capture, from the input only
    (docs/tables.md "Keys"): ``capture << 49 | frame << 16 | rank``.

    * TCP rows: ``frame`` holds the row's first byte; ``rank`` counts the
      rows of its direction that start in that frame, in stream order (a
      frame is one TCP segment: one direction, rows in stream order whichever
      engine frames them).  Both engines call :meth:`tcp` in each
      direction's stream order (per direction, not across directions).
    * A TCP row whose first byte was not captured (it starts in a gap) takes
      the frame of its direction's previous row that had a captured first
      byte, and the next rank of that frame; before any such row of its
      direction, the frame that opened its connection and a rank from
      :data:`KEY_FALLBACK_RANK` up (bit 14: the direction).  Without that
      frame either (not expected: a connection always opens at a frame),
      frame 0 and a rank from :data:`KEY_FALLBACK_RANK` counted per capture.
    * UDP rows (the MSMQ ping): the datagram's frame, rank 0 (a frame is
      one datagram).

    Every part is checked (:class:`KeyOverflow`)."""

    def __init__(self, capture_index: int):
        self.base = key_base(capture_index)
        self._dirs: dict = {}
        self._orphans = 0
        self._udp_frame: Optional[int] = None
        self._udp_rank = 0

    def _state(self, stream, direction) -> _DirectionKeys:
        st = self._dirs.get((stream, direction))
        if st is None:
            st = self._dirs[(stream, direction)] = _DirectionKeys()
        return st

    @staticmethod
    def _count(st: _DirectionKeys, frame: int, n: int = 1) -> int:
        return count_in_frame(st.counts, frame, n)

    def tcp(self, stream, direction: int, frame: Optional[int], captured: bool, opened: Optional[int] = None) -> int:
        """The key of the next row of TCP direction (``stream``, ``direction``):
        ``frame`` holds its first byte when ``captured``; ``opened``: the
        frame that opened its connection."""
        st = self._state(stream, direction)
        if captured and frame is not None:
            st.last = frame
            rank = self._count(st, frame)
            if rank >= KEY_FALLBACK_RANK:
                raise KeyOverflow("more than %d rows start in frame %d of one TCP direction: their rank does "
                                  "not fit in message_key" % (KEY_FALLBACK_RANK, frame))
            return make_key(self.base, frame, rank)
        if st.last is not None:
            return make_key(self.base, st.last, self._count(st, st.last))
        n = st.fallback
        st.fallback += 1
        if opened is None:
            n = self._orphans
            self._orphans += 1
            if n >= KEY_FALLBACK_RANK:
                raise KeyOverflow("more than %d rows with no captured frame: their rank does not fit in "
                                  "message_key" % KEY_FALLBACK_RANK)
            return make_key(self.base, 0, KEY_FALLBACK_RANK | n)
        if n >= 1 << 14:
            raise KeyOverflow("more than %d rows of one TCP direction before its first captured byte: their rank "
                              "does not fit in message_key" % (1 << 14))
        return make_key(self.base, opened, KEY_FALLBACK_RANK | (int(direction) & 1) << 14 | n)

    def tcp_batch(self, stream, direction, frame):
        """:meth:`tcp` of rows whose first bytes were all captured (the
        compiled core's; ``frame`` -1: none, as :meth:`tcp` with ``captured``
        False and no ``opened``), numpy arrays in each direction's stream
        order (directions may interleave); returns the keys (int64 array)."""
        import numpy as np

        frame = np.asarray(frame, dtype=np.int64)
        n = len(frame)
        keys = np.zeros(n, dtype=np.int64)
        if n == 0:
            return keys
        order, starts, ends, groups, run_frames = direction_runs(stream, direction, frame)
        lengths = ends - starts
        frames = frame[order]
        dirs = self._dirs

        def state(gk: int) -> _DirectionKeys:
            st = dirs.get((gk >> 1, gk & 1))
            if st is None:
                st = dirs[(gk >> 1, gk & 1)] = _DirectionKeys()
            return st

        # directions in frame order at once; the others one run at a time
        first, done = count_new_frames(lambda gk: state(gk).counts, groups, run_frames, lengths)
        if done.any():
            last = np.flatnonzero(done & np.append(groups[1:] != groups[:-1], True))
            for gk, fr in zip(groups[last].tolist(), run_frames[last].tolist()):
                state(gk).last = fr
            over = np.flatnonzero(done & (first + lengths > KEY_FALLBACK_RANK))
            if len(over):
                raise KeyOverflow("more than %d rows start in frame %d of one TCP direction: their rank does "
                                  "not fit in message_key" % (KEY_FALLBACK_RANK, int(run_frames[over[0]])))
        unframed: list = []   # (row in sorted order, frame, rank) of rows without a frame
        st: Optional[_DirectionKeys] = None
        current = None
        for run in np.flatnonzero(~done).tolist():
            a, b, gk, fr = int(starts[run]), int(ends[run]), int(groups[run]), int(run_frames[run])
            if fr < 0:   # no frame: one at a time, as tcp() does (their ranks set after the loop)
                for i in range(a, b):
                    k = self.tcp(gk >> 1, gk & 1, None, False)
                    unframed.append((i, key_frame(k), key_rank(k)))
                continue
            if gk != current:
                current = gk
                st = state(gk)
            assert st is not None
            st.last = fr
            k0 = count_in_frame(st.counts, fr, b - a)
            if k0 + (b - a) > KEY_FALLBACK_RANK:
                raise KeyOverflow("more than %d rows start in frame %d of one TCP direction: their rank does "
                                  "not fit in message_key" % (KEY_FALLBACK_RANK, fr))
            first[run] = k0
        # rank = the run's first rank + the row's place in its run
        ranks = np.repeat(first - starts, lengths) + np.arange(n)
        for i, fr_, rank in unframed:
            frames[i], ranks[i] = fr_, rank
        keys[order] = make_keys(self.base, frames, ranks)
        return keys

    def udp(self, frame: int) -> int:
        """The key of a UDP row (the datagram of ``frame``)."""
        if frame == self._udp_frame:
            self._udp_rank += 1
        else:
            self._udp_frame, self._udp_rank = frame, 0
        return make_key(self.base, frame, self._udp_rank)

    def forget(self, stream, direction: int) -> None:
        """A direction that makes no more rows (closed)."""
        self._dirs.pop((stream, direction), None)

_DICT = pa.dictionary(pa.int32(), pa.string())

#: the last columns of every row table: what failed and where (null when the unit
#: decoded), the unit's length and bytes (error rows always; every row with --raw)
_ERROR_AND_BYTES = [
    pa.field("error", _DICT),
    pa.field("error_structure", _DICT),
    pa.field("error_field", _DICT),
    pa.field("error_offset", pa.int64()),
    pa.field("length", pa.int64()),
    pa.field("raw", pa.binary()),
]

#: columns every message table (mq_messages, msmq_packets) starts with
COMMON = [
    # capture index << 49 | frame << 16 | rank (KEY_*, MessageKeys): unique in one job
    # across the message tables, from the input only; the join key of pcf_parameters
    pa.field("message_key", pa.int64(), nullable=False),
    pa.field("capture", _DICT, nullable=False),
    pa.field("frame", pa.int64()),          # 1-based, as tshark's frame.number: the frame of the first byte
    pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("ts_nanos", pa.int16()),       # nanoseconds within ts's microsecond
    pa.field("src_ip", _DICT),
    pa.field("src_port", pa.int32()),
    pa.field("dst_ip", _DICT),
    pa.field("dst_port", pa.int32()),
    pa.field("tcp_stream", pa.int64()),     # tshark's tcp.stream; null for UDP (MSMQ ping)
    pa.field("stream_offset", pa.int64()),
    # True when a retransmitted or overlapping TCP copy of some of the unit's bytes
    # differed from the copy received first, which the row keeps (docs/ROBUSTNESS.md)
    pa.field("overlap_conflict", pa.bool_()),
    pa.field("kind", _DICT),
    *_ERROR_AND_BYTES,
]

#: mq_messages columns that link a message to its unit in mq_calls and name its queue
MQ_LINK = [
    pa.field("call_key", pa.int64()),        # the mq_calls row of the unit carrying the message
    pa.field("queue_name", _DICT),           # the queue (Hobj tracking, MQPUT1's MQOD, the MQXQH)
    pa.field("queue_manager", _DICT),
    pa.field("remote_q_name", _DICT),        # MQXQH RemoteQName (channel MESSAGE_DATA)
    pa.field("remote_q_mgr_name", _DICT),    # MQXQH RemoteQMgrName
]

#: the short MSMQ columns analysts ask for first (name, type, the batch column it comes from)
MSMQ_SHORT = [
    ("message_id", pa.string(), None),  # SourceQueueManager GUID \ MessageID (an OBJECTID)
    ("source_qm", _DICT, "user_source_queue_manager"),
    ("label", pa.string(), "props_label"),
    ("class", pa.int32(), "props_message_class"),
    ("class_name", _DICT, None),
    ("priority", pa.int16(), "base_pr"),
    ("destination", _DICT, "user_destination_queue"),
]

#: string columns with few distinct values, dictionary-encoded in every table
DICTIONARY = frozenset({
    "capture", "src_ip", "dst_ip", "kind", "error", "error_structure", "error_field",
    # IBM MQ
    "md_format", "md_reply_to_q", "md_reply_to_q_mgr", "md_user_identifier", "md_put_appl_name",
    "md_appl_identity_data", "md_appl_origin_data", "body_format",
    # MSMQ
    "source_qm", "destination", "class_name", "ping_qm_guid", "ec_client_guid", "ec_server_guid",
    "user_source_queue_manager", "user_queue_manager_address", "user_destination_queue",
    "user_admin_queue", "user_response_queue", "user_connector_type", "xact_connector_qm_guid",
    "debug_queue_identifier",
})

#: enumerated column -> (its name column, how values are named): every name
#: comes from mqcodec.ibmmq.constants (cross-checked against tshark there)
NAMED: dict[str, tuple[str, str]] = {
    "md_report": ("md_report_names", "MQRO flags"),
    "md_msg_type": ("md_msg_type_name", "MQMT"),
    "md_feedback": ("md_feedback_name", "feedback"),
    "md_encoding": ("md_encoding_name", "MQENC flags"),
    "md_persistence": ("md_persistence_name", "MQPER"),
    "md_put_appl_type": ("md_put_appl_type_name", "MQAT"),
    "pcf_type": ("pcf_type_name", "MQCFT"),
    "pcf_command": ("pcf_command_name", "MQCMD"),
    "pcf_comp_code": ("pcf_comp_code_name", "MQCC"),
    "pcf_reason": ("pcf_reason_name", "reason"),
    # mq_calls
    "completion_code": ("completion_code_name", "MQCC"),
    "reason_code": ("reason_name", "reason"),
    "conn_appl_type": ("conn_appl_type_name", "MQAT"),
    "od_object_type": ("od_object_type_name", "MQOT"),
    # pcf_parameters
    "parameter": ("parameter_name", "parameter"),
    "type": ("type_name", "MQCFT"),
    "int_value": ("value_name", "value"),
}
_NAME_TYPES = {how: (pa.list_(pa.string()) if how == "MQRO flags" else _DICT)
               for _, how in NAMED.values()}

#: batch-decoder columns that are not output columns (the row's own columns replace them)
BATCH_ONLY = frozenset({"record", "error_structure", "error_field", "error_offset", "error_reason", "raw"})

_WIDER = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(),
          pa.uint64(): pa.decimal128(20, 0)}


def widen_unsigned(t: pa.DataType) -> pa.DataType:
    """``t`` with every unsigned integer, at any depth, widened to the
    smallest signed type holding all its values (Spark has no unsigned
    types; values are unchanged)."""
    if t in _WIDER:
        return _WIDER[t]
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(widen_unsigned(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(widen_unsigned(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(widen_unsigned(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(widen_unsigned(t.value_type)), t.list_size)
    return t


def _output_field(name: str, t: pa.DataType) -> pa.Field:
    t = widen_unsigned(t)
    if name in DICTIONARY and t == pa.string():
        t = _DICT
    return pa.field(name, t)


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _with_names(fields: list) -> list:
    """``fields`` with each named column's companion (:data:`NAMED`) after it."""
    out = []
    for f in fields:
        out.append(f)
        named = NAMED.get(f.name)
        if named is not None:
            out.append(pa.field(named[0], _NAME_TYPES[named[1]]))
    return out


def _mq_messages() -> pa.Schema:
    fields = list(COMMON) + list(MQ_LINK)
    for f in _schema.MQ_MESSAGES:
        if f.name in BATCH_ONLY:
            continue
        fields.append(_output_field(f.name, f.type))
        if f.name == "md_put_time":
            # PutDate + PutTime (GMT, to the hundredth of a second) as one timestamp
            fields.append(pa.field("md_put_timestamp", pa.timestamp("us", tz="UTC")))
    return pa.schema(_with_names(fields))


def _msmq_packets() -> pa.Schema:
    fields = list(COMMON)
    fields += [pa.field(name, t) for name, t, _ in MSMQ_SHORT]
    seen = {f.name for f in fields}
    for f in _schema.MSMQ_PACKETS:
        if f.name in BATCH_ONLY or f.name in seen:  # the batch's "kind" is the row's kind
            continue
        fields.append(_output_field(f.name, f.type))
    return pa.schema(fields)


def _pcf_parameters() -> pa.Schema:
    fields = [pa.field("message_key", pa.int64(), nullable=False)]
    fields += [pa.field(_snake(f.name), widen_unsigned(f.type), f.nullable)
               for f in _schema.PCF_PARAMETERS if f.name != "record"]
    return pa.schema(_with_names(fields))


def _mq_calls() -> pa.Schema:
    from .ibmmq.calls import CALL_COLUMNS

    fields = [pa.field("call_key", pa.int64(), nullable=False)]
    fields += [f for f in COMMON if f.name not in ("message_key", "kind", "error", "error_structure",
                                                   "error_field", "error_offset", "length", "raw")]
    fields += [pa.field(name, t) for name, t in CALL_COLUMNS]
    fields += [
        # pairing: on replies the request's call_key and reply ts - request ts in microseconds;
        # on requests whether a reply came before the end of the capture, and which
        pa.field("request_call_key", pa.int64()),
        pa.field("latency_us", pa.int64()),
        pa.field("replied", pa.bool_()),
        pa.field("reply_call_key", pa.int64()),
        pa.field("queue_name", _DICT),
        pa.field("queue_manager", _DICT),
        *_ERROR_AND_BYTES,
    ]
    return pa.schema(_with_names(fields))


_SCHEMAS: dict[str, pa.Schema] = {}


def table_schema(table: str) -> pa.Schema:
    """The Arrow schema of output table ``table`` (one of :data:`TABLES`)."""
    s = _SCHEMAS.get(table)
    if s is None:
        builders = {MQ_MESSAGES: _mq_messages, MSMQ_PACKETS: _msmq_packets, PCF_PARAMETERS: _pcf_parameters,
                    MQ_CALLS: _mq_calls}
        if table not in builders:
            raise ValueError("no table %r: the tables are %s" % (table, ", ".join(TABLES)))
        s = _SCHEMAS[table] = builders[table]()
    return s


def _namer(how: str):
    """value(s) -> name for one way of naming (see :data:`NAMED`)."""
    from .ibmmq import constants as c

    if how == "MQRO flags":
        return lambda v: c.MQRO.flag_names(v)
    if how == "MQENC flags":
        return lambda v: "+".join(c.MQENC.flag_names(v)) or None
    if how == "feedback":  # an MQFB_* value, or a reason code (MQRC_*) reported as feedback
        return lambda v: c.MQFB.name_of(v) or c.reason_name(v)
    if how == "reason":
        return c.reason_name
    if how == "parameter":
        return lambda pair: c.parameter_name(pair[0], pair[1])
    if how == "value":
        return lambda pair: c.value_name(pair[0], pair[1])
    return c.FAMILIES[how].name_of


def name_column(how: str, values, context=None) -> pa.Array:
    """The name companion of an enumerated column (:data:`NAMED`): each
    distinct value named once.  ``context``: the column the names also depend
    on (a parameter's Type for ``parameter``; its id for ``value``, named only
    where the Type is an integer)."""
    import pyarrow.compute as pc

    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if context is not None:
        # one int64 key per (first, second) pair: first << 32 | second's 32 bits
        context = context.combine_chunks() if isinstance(context, pa.ChunkedArray) else context
        first, second = (context, values) if how == "value" else (values, context)
        keys = pc.add(pc.shift_left(first.cast(pa.int64()), 32),
                      pc.bit_wise_and(second.cast(pa.int64()), 0xFFFFFFFF))
    else:
        keys = values
    # each distinct key once (a null key: a null index, hence a null name)
    encoded = keys.dictionary_encode()
    where = encoded.indices
    fn = _namer(how)
    names: list = []
    for v in encoded.dictionary.to_pylist():
        names.append(fn((v >> 32, v & 0xFFFFFFFF) if context is not None else v))
    t = _NAME_TYPES[how]
    if pa.types.is_dictionary(t):
        named = [n for n in names if n is not None]
        if len(set(named)) == len(named):
            # the distinct names are the dictionary; a value without a name is null
            slot = {n: i for i, n in enumerate(named)}
            to_slot = pa.array([None if n is None else slot[n] for n in names], pa.int32())
            return pa.DictionaryArray.from_arrays(to_slot.take(where), pa.array(named, pa.string()))
        return pa.array(names, pa.string()).take(where).dictionary_encode()
    return pa.array(names, t).take(where)


# ---------------------------------------------------------------------------
# sinks
# ---------------------------------------------------------------------------
class TableCollector:
    """A sink that keeps what it is given, by table (tests, the Spark data
    source, notebooks)."""

    def __init__(self) -> None:
        self.parts: dict[str, list[pa.Table]] = {t: [] for t in TABLES}

    def __call__(self, table: str, rows: pa.Table) -> None:
        self.parts.setdefault(table, []).append(rows)

    def table(self, name: str) -> pa.Table:
        parts = self.parts.get(name) or []
        return pa.concat_tables(parts) if parts else table_schema(name).empty_table()

    def rows(self, *names: str) -> list[dict]:
        """Rows of the message tables (default: mq_messages and msmq_packets)
        as dicts in ``message_key`` order, each with ``protocol``
        ("mq"/"msmq") added."""
        out: list[dict] = []
        for name in names or (MQ_MESSAGES, MSMQ_PACKETS):
            protocol = {MQ_MESSAGES: "mq", MSMQ_PACKETS: "msmq"}.get(name)
            for r in self.table(name).to_pylist():
                if protocol is not None:
                    r["protocol"] = protocol
                out.append(r)
        out.sort(key=lambda r: r["message_key"])
        return out


class DatasetSink:
    """Writes each table as a Parquet dataset ``outdir/<table>/``: one part
    file (one row group per chunk), or with ``partition_by="date"`` one part
    file per UTC date of ``ts`` in hive-style folders ``date=YYYY-MM-DD``
    (rows with no ``ts``: ``date=__HIVE_DEFAULT_PARTITION__``, as Spark
    names them).  Nothing is created before the first call; :meth:`close`
    writes the tables that got no rows as empty part files when
    ``complete`` is true."""

    NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"

    def __init__(self, outdir: str, *, partition_by: Optional[str] = None, compression: str = "zstd") -> None:
        if partition_by not in (None, "date"):
            raise ValueError("partition_by must be None or 'date', not %r" % (partition_by,))
        self.outdir = outdir
        self.partition_by = partition_by
        self.compression = compression
        self._writers: dict[tuple[str, Optional[str]], object] = {}
        self.paths: list[str] = []

    def __call__(self, table: str, rows: pa.Table) -> None:
        if self.partition_by is None or PCF_PARAMETERS == table or rows.num_rows == 0:
            self._write(table, None, rows)
            return
        import pyarrow.compute as pc

        dates = pc.strftime(rows.column("ts"), format="%Y-%m-%d")  # UTC: ts carries tz UTC
        for value in pc.unique(dates).to_pylist():
            mask = pc.is_null(dates) if value is None else pc.fill_null(pc.equal(dates, value), False)
            self._write(table, value or self.NULL_PARTITION, rows.filter(mask))

    def _write(self, table: str, date: Optional[str], rows: pa.Table) -> None:
        import pyarrow.parquet as pq

        key = (table, date)
        w = self._writers.get(key)
        if w is None:
            folder = os.path.join(self.outdir, table)
            if date is not None:
                folder = os.path.join(folder, "date=" + date)
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, "part-00000.parquet")
            w = self._writers[key] = pq.ParquetWriter(path, table_schema(table), compression=self.compression)
            self.paths.append(path)
        w.write_table(rows)  # type: ignore[attr-defined]

    def close(self, *, complete: bool = True) -> list[str]:
        """Close every part file; with ``complete``, give each table that got
        no rows an empty part file, so that every table can be read."""
        if complete:
            written = {t for t, _ in self._writers}
            for table in TABLES:
                if table not in written:
                    self._write(table, None, table_schema(table).empty_table())
        for w in self._writers.values():
            w.close()  # type: ignore[attr-defined]
        self._writers.clear()
        return self.paths


class BackgroundSink:
    """Hands the tables it is given to ``sink`` (a :class:`DatasetSink`) on
    ``workers`` background threads, so that Parquet encoding and writing --
    which release the GIL -- overlap the decoding that produces the next
    chunk.  Each table goes to one worker (chosen by its name), so the row
    groups of every file are written in the order they were given: the files
    are those ``sink`` alone writes.  Each worker's queue holds at most
    ``max_pending`` tables; past that the caller waits, so memory stays a few
    chunks whatever the capture's size.  An exception of a worker (a full
    disk, say) is raised again in the caller, by its next call or by
    :meth:`close`; the tables given after it are dropped, not written."""

    def __init__(self, sink, *, workers: int = 1, max_pending: int = 2 * len(TABLES)) -> None:
        import queue
        import threading

        if workers < 1:
            raise ValueError("workers must be >= 1, not %r" % (workers,))
        self.sink = sink
        self._error: Optional[BaseException] = None
        self._reported = False  # the caller has seen self._error
        self._queues: list = [queue.Queue(maxsize=max(1, max_pending)) for _ in range(workers)]
        self._threads = [threading.Thread(target=self._run, args=(q,), name="mqcodec-writer-%d" % i, daemon=True)
                         for i, q in enumerate(self._queues)]
        for t in self._threads:
            t.start()

    def _queue(self, table: str):
        i = TABLES.index(table) if table in TABLES else sum(table.encode())
        return self._queues[i % len(self._queues)]

    def __call__(self, table: str, rows: pa.Table) -> None:
        self._raise()
        self._queue(table).put((table, rows))  # waits while the worker's queue is full

    def _run(self, q) -> None:
        while True:
            item = q.get()
            if item is None:
                return
            if self._error is not None:
                continue  # after a failure: drain, so that the caller never waits on a full queue
            try:
                self.sink(*item)
            except BaseException as exc:  # noqa: B036 - handed to the caller's thread
                self._error = exc

    def _raise(self) -> None:
        if self._error is not None:
            self._reported = True
            raise self._error

    def close(self, *, complete: bool = True) -> list[str]:
        """Wait for the workers to write what they were given, then close
        ``sink`` (see :meth:`DatasetSink.close`).  After a worker's exception
        ``sink`` is closed without completing the tables, and the exception
        is raised unless a call raised it already."""
        for q in self._queues:
            q.put(None)
        for t in self._threads:
            t.join()
        if self._error is not None:
            self.sink.close(complete=False)
            if not self._reported:
                self._raise()
            return []
        return self.sink.close(complete=complete)


def read_table(outdir: str, table: str, columns: Optional[Iterable[str]] = None) -> pa.Table:
    """One table of a job's output folder (either engine's, partitioned or
    not), with pyarrow."""
    import pyarrow.dataset as ds

    dataset = ds.dataset(os.path.join(outdir, table), format="parquet", partitioning="hive")
    return dataset.to_table(columns=list(columns) if columns is not None else None)


__all__.append("read_table")
