"""Captures the engine tests share: the simulator's packets written as pcap or
pcapng bytes, and the same packets damaged -- segments dropped, duplicated
and reordered, or IPv4-fragmented with some fragments swapped -- each
deterministic for its seed; and a file that cannot seek."""
from __future__ import annotations

import io
import random

from mqcodec import synth
from mqcodec.capture.writer import PcapngWriter, PcapWriter, ethernet, fragment_ipv4


def simulator_packets(seed: int, messages: int) -> list:
    """(ts_ns, Ethernet frame) of the simulator's capture."""
    return [(p.ts_ns, p.frame) for p in synth.generate(seed, messages)]


def pcap_bytes(packets, *, snaplen: int = 262144, ng: bool = False) -> bytes:
    """``packets`` as a classic pcap (nanoseconds) or a pcapng file, each frame cut at ``snaplen``."""
    f = io.BytesIO()
    if ng:
        w = PcapngWriter(f)
        iface = w.add_interface(1, snaplen)  # LINKTYPE_ETHERNET
        for ts, data in packets:
            w.write(iface, ts, data[:snaplen], len(data))
        return f.getvalue()
    w = PcapWriter(f, nanosecond=True, snaplen=snaplen)
    for ts, data in packets:
        w.write(ts, data[:snaplen])
    return f.getvalue()


def reordered(packets: list, seed: int, *, swaps: int = 10) -> list:
    """``packets`` with about 1 % dropped, 3 % duplicated and ``swaps`` nearby pairs swapped."""
    rnd = random.Random(seed)
    order = [i for i in range(len(packets)) if rnd.random() > 0.01]
    for i in range(len(order)):
        if rnd.random() < 0.03:
            order.insert(i, order[i])
    for _ in range(swaps):
        j = rnd.randrange(len(order) - 3)
        k = j + rnd.randrange(1, 3)
        order[j], order[k] = order[k], order[j]
    return [packets[i] for i in order]


def fragmented(packets: list, mtu: int, seed: int) -> list:
    """About half of ``packets`` cut into IPv4 fragments of ``mtu`` (a third of
    those with their fragments shuffled)."""
    rnd = random.Random(seed)
    out = []
    for ts, frame in packets:
        if rnd.random() < 0.5:
            frags = fragment_ipv4(frame[14:14 + int.from_bytes(frame[16:18], "big")], mtu)
            if rnd.random() < 0.3:
                rnd.shuffle(frags)
            out += [(ts + k, ethernet(f)) for k, f in enumerate(frags)]
        else:
            out.append((ts, frame))
    return out


class UnseekableFile(io.RawIOBase):
    """A capture file that cannot seek and counts the bytes read from it
    (``read_bytes``).  ``sizes``: its reads return at most ``sizes[i %
    len(sizes)]`` bytes, the i-th read (a pipe's or a socket's short reads)."""

    def __init__(self, data: bytes, sizes=None):
        super().__init__()
        self._data, self.read_bytes = data, 0
        self._sizes, self._reads = list(sizes or ()), 0

    def readable(self) -> bool:
        return True

    def _next(self, size: int) -> bytes:
        n = len(self._data) - self.read_bytes
        if size is not None and size >= 0:
            n = min(n, size)
        if self._sizes:
            n = min(n, self._sizes[self._reads % len(self._sizes)])
        self._reads += 1
        self.read_bytes += n
        return self._data[self.read_bytes - n:self.read_bytes]

    def read(self, size: int = -1) -> bytes:      # (RawIOBase.read would allocate ``size`` first)
        return self._next(size)

    def readinto(self, b) -> int:
        piece = self._next(len(b))
        b[:len(piece)] = piece
        return len(piece)
