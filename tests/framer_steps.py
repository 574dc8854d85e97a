"""Driving a stream framer step by step, for the framer suites run against both
implementations (tests/test_framer_mq_streams.py, tests/test_framer_msmq_streams.py).

A framer is made by :func:`mqcodec.framers.framer` (``impl`` ``"py"`` or
``"c"``) and driven through *steps*: a bytes chunk is fed, ``("gap", n)``
says n stream bytes are lost; then it is closed.  Its events are read in the
one vocabulary of :mod:`mqcodec.stream_events`, as rows::

    ("unit", offset, data, kind, md_only)
    ("error", offset, end, raw, raw_truncated, structure, field, reason)
    ("resync", offset, skipped)

:func:`check` holds the framer to two references, both the pure framer of the
protocol (whose own facts tests/test_ibmmq_framing.py and
tests/test_msmq_framing.py check against the encoders and the specification's
examples):

* the same steps: after every step the framer has reported exactly the rows the
  reference reported for that step (the moment matters: the capture core numbers
  rows as they come);
* the steps' bytes fed whole (consecutive chunks joined, the gaps where they
  were): the same rows in all, so the rows do not depend on how the stream was
  cut.  For ``impl="py"`` this is the check that can fail.
"""
from __future__ import annotations

import random
from typing import Any, Iterable, Union

from mqcodec.framers import framer
from mqcodec.stream_events import FramingError, Resynchronised

Step = Union[bytes, tuple]


def row(ev: Any):
    """The row of a framer event, or None for the events only the pure framers
    report (IBM MQ Segment and Unit, MSMQ session notes)."""
    if isinstance(ev, Resynchronised):
        return ("resync", ev.offset, ev.skipped)
    if isinstance(ev, FramingError):
        return ("error", ev.offset, ev.end, ev.raw, ev.raw_truncated, ev.structure, ev.field, ev.reason)
    if hasattr(ev, "kind") and hasattr(ev, "data") and type(ev).__name__ in ("Message", "Packet", "StreamUnit"):
        return ("unit", ev.offset, ev.data, ev.kind, bool(getattr(ev, "md_only", False)))
    return None


def drive(protocol: str, impl: str, steps: Iterable[Step], offset: int = 0) -> list:
    """The rows of each step, the close's last."""
    f = framer(protocol, impl, offset)
    out = []

    def take() -> None:
        out.append([r for r in (row(ev) for ev in f) if r is not None])

    for step in steps:
        if isinstance(step, tuple):
            assert step[0] == "gap"
            f.gap(step[1])
        else:
            f.feed(step)
        take()
    f.close()
    take()
    return out


def joined(steps: Iterable[Step]) -> list:
    """The steps with consecutive chunks joined into one."""
    out: list = []
    run: list = []
    for step in steps:
        if isinstance(step, tuple):
            if run:
                out.append(b"".join(run))
                run = []
            out.append(step)
        else:
            run.append(step)
    if run:
        out.append(b"".join(run))
    return out


def check(protocol: str, impl: str, steps: Iterable[Step], offset: int = 0) -> list:
    """The framer's rows for ``steps``, held to the pure framer's (module
    docstring); returns them."""
    steps = [s if isinstance(s, tuple) else bytes(s) for s in steps]
    got = drive(protocol, impl, steps, offset)
    same_steps = drive(protocol, "py", steps, offset) if impl != "py" else got
    for i, (g, want) in enumerate(zip(got, same_steps)):
        assert g == want, "step %d of %d: not the pure framer's rows" % (i, len(steps))
    rows = [r for step in got for r in step]
    whole_steps = joined(steps)
    if len(whole_steps) < len(steps):   # (steps that are whole already: the reference above)
        whole = [r for step in drive(protocol, "py", whole_steps, offset) for r in step]
        assert rows == whole, "the rows depend on how the stream was cut"
    else:
        assert rows == [r for step in same_steps for r in step]
    return rows


def units(rows: list) -> list:
    return [r for r in rows if r[0] == "unit"]


def errors(rows: list) -> list:
    return [r for r in rows if r[0] == "error"]


def resyncs(rows: list) -> list:
    return [r for r in rows if r[0] == "resync"]


def pieces(stream: bytes, sizes: Iterable) -> list:
    """``stream`` cut into steps: an int takes that many bytes, ``("gap", n)``
    loses n bytes (where the stream ends, the rest is not fed)."""
    out: list = []
    pos = 0
    for n in sizes:
        if isinstance(n, tuple):
            k = max(0, min(n[1], len(stream) - pos))
            if k:
                out.append(("gap", k))
            pos += k
            continue
        if stream[pos:pos + n]:
            out.append(stream[pos:pos + n])
        pos += n
    return out


def chunk_sizes(n: int, rnd: random.Random, mode: str) -> list:
    """Sizes cutting n bytes: ``whole``, one byte at a time (``bytes``), or ``random``."""
    if mode == "whole":
        return [n]
    if mode == "bytes":
        return [1] * n
    out: list = []
    while sum(out) < n:
        out.append(rnd.choice((1, 2, 3, 7, 8, 9, 27, 28, 36, 100, 365, 1000, 4096)))
    return out


def gap_sizes(n: int, rnd: random.Random, gaps: int) -> list:
    """Sizes cutting n bytes with ``gaps`` losses of 1..3000 bytes at random places."""
    sizes: list = []
    pos = 0
    cuts = sorted(rnd.sample(range(1, n), min(gaps, n - 1))) if n > 1 else []
    for cut in cuts:
        if cut <= pos:
            continue
        sizes += chunk_sizes(cut - pos, rnd, rnd.choice(("whole", "random")))
        pos = cut
        k = min(rnd.randint(1, 3000), n - pos)
        sizes.append(("gap", k))
        pos += k
    if pos < n:
        sizes += chunk_sizes(n - pos, rnd, "random")
    return sizes
