"""The stream framers of both protocols over the capture layer.

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

from typing import Callable, Iterable, Optional

from .capture.budget import ByteBudget
from .capture.stream import CaptureProcessor
from .capture.tcp import Gap, StreamClosed, StreamData
from .ibmmq.framing import MQStreamFramer
from .msmq.framing import MSMQStreamFramer

__all__ = ["drive"]


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
