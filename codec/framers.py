"""The stream framers of both protocols: one interface, two implementations,
and the reference loop over the capture layer.

:func:`framer` makes the framer of a protocol (``"mq"``, ``"msmq"``) in an
implementation (``impl``: ``"py"`` the pure framers of
:mod:`mqcodec.ibmmq.framing` and :mod:`mqcodec.msmq.framing`; ``"c"`` the
compiled framers of the capture core, ``_ext/framer_mq.pxi`` and
``_ext/framer_msmq.pxi``, behind :class:`CompiledFramer`; None: the
compiled one unless it is not built or ``MQCODEC_PURE=1``).  Both follow
the interface of :mod:`mqcodec.stream_events` (``feed``, ``gap``,
``close``, ``next_event``, iteration, ``end``) and report the same units (offset,
data, kind), FramingErrors (offset, raw, length, structure, field, reason)
and Resynchronised events, in the same order.  What only the pure framers
report: IBM MQ ``Segment`` and ``Unit`` events and the rest of ``Message``
(its headers and segments), MSMQ session states and notes, and a
FramingError's ``error_offset``, ``conversation_id`` and ``segment_type``.

:func:`drive` is the reference loop of reassembly and framing under a global
:class:`~mqcodec.capture.budget.ByteBudget` (capture frames -> TCP
reassembly -> one IBM MQ or MSMQ framer per direction, chosen by server
port), for tests and benchmarks of the budget alone; the converter does the
same with everything else around it.

Layering: this module sits above :mod:`mqcodec.capture` and the protocol
framers (:mod:`mqcodec.ibmmq.framing`, :mod:`mqcodec.msmq.framing`); the
capture layer never imports a protocol module (tests/test_layers.py).
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Optional

from . import _impl
from .capture.budget import ByteBudget
from .capture.stream import CaptureProcessor
from .capture.tcp import Gap, StreamClosed, StreamData
from .ibmmq import framing_errors as _mq_errors
from .ibmmq.framing import MQStreamFramer
from .msmq import framing_errors as _msmq_errors
from .msmq.framing import MSMQStreamFramer
from .stream_events import FramerStateError, FramingError, ReadyEvents, Resynchronised, StreamUnit

__all__ = ["framer", "CompiledFramer", "PROTOCOLS", "drive"]

#: the protocols :func:`framer` frames
PROTOCOLS = ("mq", "msmq")


def framer(protocol: str, impl: Optional[str] = None, offset: int = 0) -> Any:
    """A new framer of one TCP direction of ``protocol`` ("mq" or "msmq") in
    ``impl`` ("c", "py", or None: the default, :mod:`mqcodec._impl`), whose
    first fed byte is at stream ``offset``."""
    if protocol not in PROTOCOLS:
        raise ValueError("protocol must be one of %s, not %r" % (", ".join(PROTOCOLS), protocol))
    if _impl.pick("capture_core", impl, what="capture core") is None:
        return MQStreamFramer(offset) if protocol == "mq" else MSMQStreamFramer(offset=offset)
    return CompiledFramer(protocol, offset)


class CompiledFramer(ReadyEvents):
    """The capture core's compiled framer of ``protocol`` behind the framers'
    interface: the events its test face (``FastMQFramer`` /
    ``FastMSMQFramer`` of :mod:`mqcodec._ext.capture_core`) returns as
    tuples, as :class:`~mqcodec.stream_events.StreamUnit`,
    :class:`~mqcodec.stream_events.FramingError` (text from the protocol's
    ``framing_errors.describe``) and
    :class:`~mqcodec.stream_events.Resynchronised`."""

    def __init__(self, protocol: str, offset: int = 0):
        core = _impl.pick("capture_core", "c", what="capture core")
        assert core is not None      # impl="c": the compiled module, or ImportError
        self.protocol = protocol
        self._mq = protocol == "mq"
        self._f = core.FastMQFramer(offset) if self._mq else core.FastMSMQFramer(offset)
        self._events: deque = deque()
        self._closed = False
        self._end = int(offset)

    @property
    def end(self) -> int:
        """Stream offset after the last byte fed (or gap)."""
        return self._end

    def feed(self, data: bytes) -> None:
        if self._closed:
            raise FramerStateError("feed() after close()")
        if data:
            self._end += len(data)
            self._take(self._f.feed(bytes(data)))

    def gap(self, nbytes: int) -> None:
        """``nbytes`` stream bytes are missing at the current offset."""
        if self._closed:
            raise FramerStateError("gap() after close()")
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError("negative gap")
        if nbytes:
            self._end += nbytes
            self._take(self._f.gap(nbytes))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._take(self._f.close())

    def _take(self, items: list) -> None:
        if "BAIL" in items:    # the compiled framers bail only when out of memory
            raise MemoryError("the compiled %s framer ran out of memory" % self.protocol)
        add = self._events.append
        for item in items:
            tag = item[0]
            if tag == "RESYNC":
                add(Resynchronised(item[1], item[2]))
            elif tag == "ERROR":
                if self._mq:
                    _, start, raw, length, truncated, code, a, b, c, d = item
                    structure, field, reason = _mq_errors.describe(code, a, b, c, d)
                else:
                    _, start, raw, code, a, b, c, d = item
                    length, truncated = 0, False      # an MSMQ FramingError is its raw bytes
                    structure, field, reason = _msmq_errors.describe(code, a, b, c, d)
                add(FramingError(start, structure, field, reason, raw, length, raw_truncated=truncated))
            else:
                add(StreamUnit(item[0], item[1], item[2], bool(item[3])))


def drive(frames: Iterable, budget: Optional[ByteBudget], *, mq_ports=(1414,), msmq_ports=(1801,),
          on_event: Optional[Callable] = None, measure_peak: bool = True, keep_events: bool = True) -> dict:
    """A minimal converter loop (capture frames -> reassembly -> framers, with the
    budget consulted after every frame), for tests and benchmarks of the budget
    alone: returns ``{"events": [(ConnKey, direction, framer event)], "peak": max
    buffered bytes at a frame boundary, "budget": budget stats}``."""
    class _D:
        __slots__ = ("framer", "key")

        def __init__(self, key, framer):
            self.key = key
            self.framer = framer

    proc = CaptureProcessor()
    dirs: dict = {}
    out: list = []
    peak = 0
    probe = ByteBudget()

    def drain(d):
        for ev in d.framer:
            if keep_events:
                out.append((d.key[0], d.key[1], ev))
            if on_event is not None:
                on_event(d.key, ev)

    def handle(events):
        for ev in events:
            t = type(ev)
            if t is StreamData or t is Gap:
                k = (ev.conn, ev.direction)
                d = dirs.get(k)
                if d is None:
                    c = ev.conn
                    if c.server_port in mq_ports:
                        d = dirs[k] = _D(k, MQStreamFramer())
                    elif c.server_port in msmq_ports:
                        d = dirs[k] = _D(k, MSMQStreamFramer())
                    else:
                        continue
                if t is StreamData:
                    d.framer.feed(ev.data)
                else:
                    d.framer.gap(ev.length)
                drain(d)
            elif t is StreamClosed:
                d = dirs.pop((ev.conn, ev.direction), None)
                if d is not None:
                    d.framer.close()
                    drain(d)

    for frame in frames:
        handle(proc.feed(frame))
        if budget is not None and budget.charge(len(frame.data)):
            for d in budget.enforce(proc.tcp, dirs, handle, frame_number=frame.number, ts_ns=frame.ts_ns):
                drain(d)
        if measure_peak:
            peak = max(peak, probe.total(proc.tcp, dirs))
    handle(proc.close())
    return {"events": out, "peak": peak, "budget": dict(budget.stats) if budget is not None else {}}
