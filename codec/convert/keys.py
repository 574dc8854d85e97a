"""message_key and call_key: a key for every row, from the input only.

``capture << KEY_CAPTURE_SHIFT | frame << KEY_FRAME_SHIFT | rank``
(docs/tables.md "Keys"): whichever implementation or engine produced a row,
and in whatever order, its key is the same.

The rank of a row is counted where the row's frame is found: each TCP
direction's marks (the frames its bytes came in, one entry per frame) count
the rows and the units located in them, and a mark is kept while any row may
still start in it (the framer's oldest open unit, :func:`marks_to_drop`).
This module gives the layout, its checks, and the ranks of the rows that have
no frame of their own.
"""
from __future__ import annotations

from typing import Optional

from ..errors import KeyOverflow

__all__ = ["KeyOverflow", "key_base", "check_job_size", "make_key", "make_keys", "key_capture", "key_frame",
           "key_rank", "check_rank", "marks_to_drop", "MessageKeys",
           "KEY_CAPTURE_SHIFT", "KEY_FRAME_SHIFT", "KEY_MAX_CAPTURE", "KEY_MAX_FRAME", "KEY_MAX_RANK",
           "KEY_FALLBACK_RANK", "KEY_MARKS_KEPT", "CALL_CAPTURE_SHIFT", "CALL_FRAME_SHIFT"]


#: message_key and call_key: ``capture << KEY_CAPTURE_SHIFT | frame << KEY_FRAME_SHIFT | rank``,
#: from the input only (docs/tables.md "Keys"): the capture's index in the job, the frame
#: holding the row's first byte, the row's rank among the rows of its direction located in
#: that frame
KEY_CAPTURE_SHIFT = 49
KEY_FRAME_SHIFT = 17
#: the largest capture index, frame number (tshark's frame.number is 32 bits) and rank a
#: key holds (int64, never negative)
KEY_MAX_CAPTURE = (1 << (63 - KEY_CAPTURE_SHIFT)) - 1
KEY_MAX_FRAME = (1 << (KEY_CAPTURE_SHIFT - KEY_FRAME_SHIFT)) - 1
KEY_MAX_RANK = (1 << KEY_FRAME_SHIFT) - 1
#: ranks from here up are the rows keyed by their connection's first frame (a row whose
#: first byte was not captured: :class:`MessageKeys`); bit 15 of the rank is the direction
KEY_FALLBACK_RANK = 1 << 16
#: marks a direction keeps before the row being located, at least, when it drops older
#: ones (both engines: ``_Direction.locate``, the capture core's ``core_out``)
KEY_MARKS_KEPT = 64
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


def check_rank(frame, rank: int) -> int:
    """``rank`` of a row located in ``frame``: below :data:`KEY_FALLBACK_RANK`."""
    if rank >= KEY_FALLBACK_RANK:
        raise KeyOverflow("more than %d rows start in frame %d of one TCP direction: their rank does "
                          "not fit in message_key/call_key" % (KEY_FALLBACK_RANK, frame))
    return rank


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
    if len(frames) and (int(frames.max()) > KEY_MAX_FRAME or int(ranks.max()) > KEY_MAX_RANK
                        or int(ranks.min()) < 0):
        bad = int(np.flatnonzero((frames > KEY_MAX_FRAME) | (ranks > KEY_MAX_RANK) | (ranks < 0))[0])
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


def marks_to_drop(found: int, oldest: int) -> int:
    """How many of a direction's marks to drop after locating a row in mark
    ``found`` (an index): none until ``found`` passes :data:`KEY_MARKS_KEPT`;
    then those before ``found - 1``, but never the mark at index ``oldest``
    (the one holding the framer's oldest open unit, whose rows come later;
    ``oldest`` >= ``found`` when the framer holds none)."""
    if found <= KEY_MARKS_KEPT:
        return 0
    return max(0, min(found - 1, oldest))


class MessageKeys:
    """The message_key of each row of one capture, from the input only
    (docs/tables.md "Keys"): ``capture << 49 | frame << 17 | rank``.

    * TCP rows whose first byte was captured: ``frame`` holds it; ``rank``
      is the row's rank among the rows of its direction located in that
      frame (counted by the direction's marks: a frame is one TCP segment of
      one direction), given by the engine (:meth:`tcp`, :meth:`tcp_batch`).
    * A TCP row whose first byte was not captured (it starts in a gap, or
      before any captured byte of its direction): the frame that opened its
      connection, rank from :data:`KEY_FALLBACK_RANK` up (bit 15: the
      direction, then the direction's count of such rows).  Without that
      frame (not expected: a connection always opens at a frame), frame 0
      and a rank from :data:`KEY_FALLBACK_RANK` counted per capture.
    * UDP rows (the MSMQ ping): the datagram's frame, rank 0 (a frame is
      one datagram).

    Every part is checked (:class:`KeyOverflow`)."""

    def __init__(self, capture_index: int):
        self.base = key_base(capture_index)
        self._fallback: dict = {}   # (stream, direction) -> rows keyed by the connection's first frame
        self._orphans = 0
        self._udp_frame: Optional[int] = None
        self._udp_rank = 0

    def tcp(self, stream, direction: int, frame: Optional[int], rank: Optional[int],
            opened: Optional[int] = None) -> int:
        """The key of the next row of TCP direction (``stream``, ``direction``):
        ``frame`` holds its first byte and ``rank`` is its rank there (None:
        its first byte was not captured); ``opened``: the frame that opened its
        connection."""
        if frame is not None and rank is not None:
            return make_key(self.base, frame, check_rank(frame, rank))
        if opened is None:
            n = self._orphans
            self._orphans += 1
            if n >= KEY_FALLBACK_RANK:
                raise KeyOverflow("more than %d rows with no captured frame: their rank does not fit in "
                                  "message_key" % KEY_FALLBACK_RANK)
            return make_key(self.base, 0, KEY_FALLBACK_RANK | n)
        n = self._fallback.get((stream, direction), 0)
        self._fallback[(stream, direction)] = n + 1
        if n >= 1 << 15:
            raise KeyOverflow("more than %d rows of one TCP direction whose first byte was not captured: their "
                              "rank does not fit in message_key" % (1 << 15))
        return make_key(self.base, opened, KEY_FALLBACK_RANK | (int(direction) & 1) << 15 | n)

    def tcp_batch(self, stream, direction, frame, rank, opened=None):
        """:meth:`tcp` of many rows (the compiled core's), numpy arrays in
        each direction's stream order (directions may interleave); ``frame``
        -1: none; ``rank`` -1: the row's first byte was not captured;
        ``opened`` (only needed where ``rank`` is -1): the frame that opened
        each row's connection.  Returns the keys (int64 array)."""
        import numpy as np

        frame = np.asarray(frame, dtype=np.int64)
        rank = np.asarray(rank, dtype=np.int64)
        located = (frame >= 0) & (rank >= 0)
        if located.all():
            over = np.flatnonzero(rank >= KEY_FALLBACK_RANK)
            if len(over):
                check_rank(int(frame[over[0]]), int(rank[over[0]]))
            return make_keys(self.base, frame, rank)
        stream_l, direction_l, frame_l, rank_l = stream.tolist(), direction.tolist(), frame.tolist(), rank.tolist()
        opened_l = [None] * len(rank_l) if opened is None else opened
        return np.array([self.tcp(s, d, f if f >= 0 else None, r if f >= 0 and r >= 0 else None, o)
                         for s, d, f, r, o in zip(stream_l, direction_l, frame_l, rank_l, opened_l)], dtype=np.int64)

    def udp(self, frame: int) -> int:
        """The key of a UDP row (the datagram of ``frame``)."""
        if frame == self._udp_frame:
            self._udp_rank += 1
        else:
            self._udp_frame, self._udp_rank = frame, 0
        return make_key(self.base, frame, self._udp_rank)

    def forget(self, stream, direction: int) -> None:
        """A direction that makes no more rows (closed)."""
        self._fallback.pop((stream, direction), None)
