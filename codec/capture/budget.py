"""A global byte budget over everything a capture conversion buffers.

The reassembly and framing layers bound their buffers per connection
direction: a TCP reorder buffer holds at most ``max_reassembly_bytes`` (4 MiB),
an MSMQ framer one packet (PacketSize <= 4 MiB), an IBM MQ framer one segment
(``max_segment_length``) plus ``max_pending_bytes`` of messages waiting for
their last segment.  A capture with many open connections could still sum
those bounds past any memory: 1,000 MSMQ connections each claiming a 4 MiB
packet hold 4 GiB.  :class:`ByteBudget` bounds the sum.

I/O-free.  The converter calls :meth:`ByteBudget.charge` after every frame
with the frame's length (O(1)); when it returns True (once per ``slack``
bytes of input) it calls :meth:`ByteBudget.enforce`, which adds up what the
reassembler's reorder buffers and every direction's framer hold and, while
the sum is above ``limit``, cuts the direction holding the most until the
sum is at most ``low_water``.  Buffered bytes only grow by the bytes of the
frames fed, so the sum never exceeds ``limit + slack`` at any frame boundary.

Cutting one direction (nothing is dropped silently):

1. its reorder buffer is flushed: the holes before the buffered segments
   become :class:`~mqcodec.capture.tcp.Gap` events (reason ``"budget"``)
   and the data is delivered as ``StreamData`` -- the converter handles
   these events exactly like those of a frame (``handle(events)``);
2. its framer's ``cut(reason)`` turns every buffered byte into a
   ``FramingError`` with structure ``"capture"``, field ``"budget"`` and a
   reason naming the limit (MSMQ: all cut bytes in ``raw``; IBM MQ: at most
   the framer's ``max_raw`` bytes, with the cut's length), and the framer
   resynchronises after them as after a gap (IBM MQ: the rest of a cut
   segment is skipped and counted in its error's length, not kept; a framer
   skipping a damaged segment reports the part seen so far).  The converter
   drains the direction as after any feed: the error becomes an error row.

Counters (``stats``): "budget cuts" counts the directions that released
bytes, "bytes cut by the budget" the bytes they released (what the direction
held before minus what its framer still holds after the cut: at most every
byte once, so never more than the input); a direction that releases nothing
is neither counted nor subtracted from the running total.

Integration in ``Converter.add_capture`` (per frame, after its events)::

    budget = ByteBudget(self.options.buffer_budget)      # once per capture
    ...
    if budget.charge(len(frame.data)):
        for d in budget.enforce(proc.tcp, dirs, handle=lambda evs: self._on_events(name, evs, dirs),
                                frame_number=frame.number, ts_ns=frame.ts_ns):
            self._drain(name, d)
    ...
    self.summary.update(budget.stats)                    # at the end of the capture

``dirs`` maps ``(ConnKey, direction)`` to an object with a ``framer``
attribute (None for streams of no known protocol), as the converter's
``_Direction``; ``handle`` processes a list of capture events the way the
per-frame loop does.

The budget knows framers only by that interface (``buffered_bytes``,
``cut(reason)``): the capture layer imports no protocol module.
:func:`mqcodec.framers.drive` is a minimal converter loop under a budget,
for tests and benchmarks of the budget alone.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Mapping, Optional

__all__ = ["ByteBudget", "DEFAULT_LIMIT", "budget_reason"]

#: default total of buffered bytes (reorder buffers + framers) across a capture
DEFAULT_LIMIT = 256 << 20


def _mib(n: int) -> str:
    return "%d MiB" % (n >> 20) if n >= 1 << 20 and not n & ((1 << 20) - 1) else "%d bytes" % n


def budget_reason(limit: int) -> str:
    """Why a budget cut reports bytes: the framers' cut errors say it (their
    texts, in mqcodec.ibmmq.framing_errors and mqcodec.msmq.framing_errors, are
    made from the limit, so that the compiled framers give the same)."""
    return "buffered bytes of the capture above the byte budget of %s" % _mib(limit)


class ByteBudget:
    """At most ``limit`` bytes buffered across all directions of a capture
    (checked every ``slack`` bytes of input, default ``limit // 16``); a cut
    brings the total down to ``low_water`` (default ``3 * limit // 4``)."""

    def __init__(self, limit: int = DEFAULT_LIMIT, *, slack: Optional[int] = None,
                 low_water: Optional[int] = None):
        limit = int(limit)
        if limit <= 0:
            raise ValueError("the byte budget must be positive, not %d" % limit)
        self.limit = limit
        self.slack = max(1, int(slack) if slack is not None else limit // 16)
        self.low_water = int(low_water) if low_water is not None else 3 * limit // 4
        if not 0 <= self.low_water <= limit:
            raise ValueError("low_water must be between 0 and the limit")
        self._since = 0
        #: counters for the converter's summary
        self.stats: Counter = Counter()
        #: the largest total seen at a check (for reports and tests)
        self.peak = 0

    @property
    def reason(self) -> str:
        return budget_reason(self.limit)

    def charge(self, nbytes: int) -> bool:
        """Count ``nbytes`` of input (a frame); True when :meth:`enforce` is due."""
        self._since += nbytes
        if self._since >= self.slack:
            self._since = 0
            return True
        return False

    def usage(self, tcp, directions: Mapping) -> dict:
        """Bytes buffered per direction key ``(ConnKey, direction)``: reorder
        buffer plus framer."""
        per: dict = {}
        if tcp is not None:
            for key, d, n in tcp.buffered():
                if n:
                    per[(key, d)] = n
        for k, d in directions.items():
            framer = getattr(d, "framer", None)
            if framer is not None:
                n = framer.buffered_bytes
                if n:
                    per[k] = per.get(k, 0) + n
        return per

    def enforce(self, tcp, directions: Mapping, handle: Optional[Callable[[list], None]] = None, *,
                frame_number: int = 0, ts_ns: int = 0) -> list:
        """Cut the largest directions while the total is above the limit (down to
        ``low_water``).  Reorder-buffer events go to ``handle`` (required when a
        reorder buffer holds data); returns the ``directions`` values whose framer
        was cut, for the caller to drain."""
        self.stats["budget checks"] += 1
        per = self.usage(tcp, directions)
        total = sum(per.values())
        self.peak = max(self.peak, total)
        if total <= self.limit:
            return []
        cut_dirs: list = []
        for k, n in sorted(per.items(), key=lambda kv: -kv[1]):
            if total <= self.low_water:
                break
            key, direction = k
            if tcp is not None:
                events = tcp.flush_buffer(key, direction, frame_number, ts_ns)
                if events:
                    if handle is None:
                        raise ValueError("a reorder buffer must be flushed: enforce() needs handle")
                    handle(events)
            # the flush fed the reorder buffer's bytes to the framer (which handle() may
            # have created): what the direction holds after the cut is its framer's bytes
            d = directions.get(k)
            framer = getattr(d, "framer", None) if d is not None else None
            left = 0
            if framer is not None:
                if framer.cut(self.limit):
                    cut_dirs.append(d)
                left = framer.buffered_bytes
            # honest counters: the bytes this direction no longer holds (flushed, framed
            # or cut), never more than it held; a direction that released nothing is not
            # a cut and does not lower the total
            released = max(0, n - left)
            if released:
                self.stats["budget cuts"] += 1
                self.stats["bytes cut by the budget"] += released
                total -= released
        return cut_dirs

    def total(self, tcp, directions: Mapping) -> int:
        """Bytes buffered now (reorder buffers + framers)."""
        return sum(self.usage(tcp, directions).values())
