"""Simple, bounded IPv4 fragment reassembly (RFC 791 section 3.2).

Fragments are grouped by (source, destination, protocol, Identification).
A datagram is complete when the fragment with MF clear has been seen and the
fragments cover ``[0, end)`` without a hole; overlapping bytes keep the copy
seen first.  Bounds:

* a datagram may not exceed 65535 bytes of IP payload
  (Fragment Offset × 8 + length); a fragment reaching past it is malformed;
* at most ``max_datagrams`` (default 1024) incomplete datagrams are kept,
  and one is abandoned ``timeout_ns`` (default 30 s, Linux's
  ``ipfrag_time``) of capture time after its first fragment;
* one datagram keeps at most 128 fragments and 2 x 65535 bytes (copies
  included), else it is abandoned; worst-case memory is therefore about
  1024 x 128 KiB;
* fragments cut by the snap length cannot be reassembled (reported).

Abandoned datagrams are returned as lists of the frame numbers that held
their fragments, so that every frame is still reported (as skipped).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

__all__ = ["IPv4Fragment", "FragmentReassembler", "MAX_DATAGRAM"]

MAX_DATAGRAM = 65535
#: Most fragments (copies included) kept for one datagram.
MAX_PIECES = 128


class IPv4Fragment(NamedTuple):
    frame_number: int
    ts_ns: int
    src: str
    dst: str
    proto: int
    ident: int
    offset: int       # bytes (Fragment Offset × 8)
    more: bool        # MF flag
    data: bytes       # the fragment's payload
    missing: int      # bytes cut by the snap length
    vlans: tuple


class _Datagram:
    __slots__ = ("pieces", "end", "first_ts", "frames", "stored")

    def __init__(self, ts_ns: int):
        self.pieces: list = []   # (offset, bytes), in arrival order
        self.end = None          # total payload length once the last fragment is seen
        self.first_ts = ts_ns
        self.frames: list = []
        self.stored = 0


class FragmentReassembler:
    def __init__(self, *, max_datagrams: int = 1024, timeout_ns: int = 30 * 1_000_000_000):
        self.max_datagrams = max_datagrams
        self.timeout_ns = timeout_ns
        self._pending: OrderedDict = OrderedDict()

    def add(self, frag: IPv4Fragment):
        """Returns ``(payload or None, abandoned)``: the reassembled IP
        payload when ``frag`` completes its datagram, and the frame-number
        lists of datagrams abandoned meanwhile (timeout or bound)."""
        abandoned = []
        pending = self._pending
        # time out the oldest datagrams (capture time)
        while pending:
            key0, dg0 = next(iter(pending.items()))
            if frag.ts_ns - dg0.first_ts <= self.timeout_ns:
                break
            del pending[key0]
            abandoned.append(dg0.frames)
        key = (frag.src, frag.dst, frag.proto, frag.ident)
        dg = pending.get(key)
        if dg is None:
            if len(pending) >= self.max_datagrams:
                abandoned.append(pending.popitem(last=False)[1].frames)
            dg = pending[key] = _Datagram(frag.ts_ns)
        dg.frames.append(frag.frame_number)
        dg.pieces.append((frag.offset, frag.data))
        dg.stored += len(frag.data)
        if len(dg.pieces) > MAX_PIECES or dg.stored > 2 * MAX_DATAGRAM:
            del pending[key]  # duplicates without end: give the datagram up
            abandoned.append(dg.frames)
            return None, abandoned
        if not frag.more:
            dg.end = frag.offset + len(frag.data)
        if dg.end is None:
            return None, abandoned
        pieces = sorted(dg.pieces, key=lambda p: p[0])  # stable: first copy first at equal offsets
        out = []
        pos = 0
        for off, data in pieces:
            if off > pos:
                return None, abandoned  # a hole
            if off + len(data) > pos:
                out.append(data[pos - off:])
                pos = off + len(data)
            if pos >= dg.end:
                break
        if pos < dg.end:
            return None, abandoned
        del pending[key]
        return b"".join(out)[:dg.end], abandoned

    def close(self) -> list:
        """End of capture: frame-number lists of the incomplete datagrams."""
        out = [dg.frames for dg in self._pending.values()]
        self._pending.clear()
        return out
