"""message_key and call_key: a key for every row, from the input only.

``capture << KEY_CAPTURE_SHIFT | frame << KEY_FRAME_SHIFT | rank``
(docs/tables.md "Keys"): whichever implementation or engine produced a row,
and in whatever order, its key is the same.
"""
from __future__ import annotations

from typing import Optional

from ..errors import KeyOverflow

__all__ = ["KeyOverflow", "key_base", "check_job_size", "make_key", "make_keys", "key_capture", "key_frame",
           "key_rank", "count_in_frame", "direction_runs", "count_new_frames", "MessageKeys",
           "KEY_CAPTURE_SHIFT", "KEY_FRAME_SHIFT", "KEY_MAX_CAPTURE", "KEY_MAX_FRAME", "KEY_MAX_RANK",
           "KEY_FALLBACK_RANK", "KEY_RANK_FRAMES", "CALL_CAPTURE_SHIFT", "CALL_FRAME_SHIFT"]


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
