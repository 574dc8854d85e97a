"""Stage 1 of a split capture: the TCP segments, UDP datagrams and IPv4 fragments of one
byte range.

:class:`SegmentBatches` reads one range (:mod:`mqcodec.capture.ranges`),
decodes link, IP and TCP headers with the pure capture decoding
(:func:`~mqcodec.capture.packet.decode_frame`) and yields Arrow record
batches of :data:`TCP_SEGMENTS`, at most ``batch_rows``
rows each, as they fill: memory is bounded by one batch (plus the range
reader's chunk), never by the range or the capture.

One row per TCP segment, UDP datagram (MSMQ uses UDP) and IPv4 fragment, in
frame order; frame
numbers are global when the range is given its first frame number
(:func:`~mqcodec.capture.ranges.frame_number_bases`).  The connection key is
direction-independent (:func:`conn_key`), so a shuffle by ``conn_key`` --
or by ``pair_key`` to keep a connection's fragments with it -- brings both
directions of a connection together whichever range each frame came from.
Damaged file structure: the rows before it come out, then the range reader's
DecodeError.  Every other frame is counted, not emitted: ``counts`` holds the frames, the
rows of each kind, ``skipped`` reasons and ``malformed`` structures, as the
local engine's report counts them.
"""
from __future__ import annotations

import socket
import struct
from collections import Counter

import pyarrow as pa

from ..errors import DecodeError
from .frame import TS_UNKNOWN
from .ipfrag import IPv4Fragment
from .packet import Malformed, Skipped, TCPSegment, UDPDatagram, decode_frame
from .ranges import ByteRange, RangeReader, RangeScan

__all__ = ["SegmentBatches", "segment_batches", "conn_key", "pair_key", "frag_key", "DEFAULT_BATCH_ROWS"]

#: Rows per record batch.
DEFAULT_BATCH_ROWS = 8192
#: Most packed addresses cached (the text form decode_frame gives, packed once).
_ADDR_CACHE_MAX = 65536
_addr_cache: dict = {}


def _packed(addr: str) -> bytes:
    b = _addr_cache.get(addr)
    if b is None:
        b = socket.inet_pton(socket.AF_INET6 if ":" in addr else socket.AF_INET, addr)
        if len(_addr_cache) >= _ADDR_CACHE_MAX:
            _addr_cache.clear()
        _addr_cache[addr] = b
    return b


def conn_key(version: int, src: str, sport: int, dst: str, dport: int) -> tuple[bytes, int]:
    """``(key, direction)``: the connection's direction-independent key (IP version,
    then the lower and the higher (packed address, port) endpoint) and 0 when the
    segment goes from the lower endpoint to the higher, else 1."""
    a = (_packed(src), sport)
    b = (_packed(dst), dport)
    if b < a:
        a, b, direction = b, a, 1
    else:
        direction = 0
    return bytes((version,)) + a[0] + struct.pack("!H", a[1]) + b[0] + struct.pack("!H", b[1]), direction


def pair_key(version: int, src: str, dst: str) -> tuple[bytes, int]:
    """``(key, direction)`` for the address pair alone."""
    a, b = _packed(src), _packed(dst)
    if b < a:
        return bytes((version,)) + b + a, 1
    return bytes((version,)) + a + b, 0


def frag_key(frag: IPv4Fragment) -> bytes:
    """The fragment's datagram: source, destination, protocol, Identification."""
    return _packed(frag.src) + _packed(frag.dst) + struct.pack("!BH", frag.proto, frag.ident)


# ---------------------------------------------------------------------------
# Stage 1 of a split capture: TCP segments, UDP datagrams and IPv4 fragments
# (capture/segments.py; docs/capture.md "Splittable captures")
# ---------------------------------------------------------------------------
#: One row per TCP segment (``kind`` "tcp"), UDP datagram ("udp": seq, ack,
#: flags and window null) or IPv4 fragment ("ipv4_fragment": ports and
#: conn_key null) of a byte range, in frame order.  ``conn_key`` is the
#: connection in a direction-independent form (IP version, then the lower and
#: the higher (address, port) endpoint, addresses packed); ``direction`` is 0
#: when the segment travels from the lower endpoint to the higher, 1 otherwise.
#: ``pair_key`` (IP version, lower address, higher address) is set on both
#: kinds: grouping by it brings a connection's fragments to its segments.
#: ``frag_key`` (source, destination, protocol, Identification) groups the
#: fragments of one datagram.  ``ts`` is null for a frame whose time does not
#: fit (TS_UNKNOWN).
TCP_SEGMENTS = pa.schema(
    [
        pa.field("frame_number", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("ns", tz="UTC")),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("ip_version", pa.int8(), nullable=False),
        pa.field("src", pa.string(), nullable=False),
        pa.field("dst", pa.string(), nullable=False),
        pa.field("pair_key", pa.binary(), nullable=False),
        pa.field("conn_key", pa.binary()),
        pa.field("direction", pa.int8(), nullable=False),
        pa.field("sport", pa.int32()),
        pa.field("dport", pa.int32()),
        pa.field("seq", pa.int64()),
        pa.field("ack", pa.int64()),
        pa.field("flags", pa.int16()),
        pa.field("window", pa.int32()),
        pa.field("missing", pa.int32(), nullable=False),
        pa.field("vlans", pa.list_(pa.int32())),
        pa.field("ip_proto", pa.int16()),
        pa.field("ip_id", pa.int32()),
        pa.field("frag_offset", pa.int32()),
        pa.field("more_fragments", pa.bool_()),
        pa.field("frag_key", pa.binary()),
        pa.field("payload", pa.binary(), nullable=False),
    ]
)

_NAMES = TCP_SEGMENTS.names


class SegmentBatches:
    """Iterate the stage-1 record batches of range ``rng`` of a capture.

    ``first_number``/``scan``: as :class:`~mqcodec.capture.ranges.RangeReader`.
    After iteration ``reader`` is the range reader (``first``, ``stop``,
    ``numbers``, ``truncation``) and ``counts`` the frame counts."""

    def __init__(self, source, rng: ByteRange, *, first_number: int = 1, scan: RangeScan | None = None,
                 batch_rows: int = DEFAULT_BATCH_ROWS, **options):
        if batch_rows < 1:
            raise ValueError("batch_rows must be at least 1")
        self.reader = RangeReader(source, rng, first_number=first_number, scan=scan, **options)
        self.batch_rows = batch_rows
        self.counts: Counter = Counter()

    def _new(self):
        return {name: [] for name in _NAMES}

    def _batch(self, cols) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays([pa.array(cols[f.name], type=f.type) for f in TCP_SEGMENTS],
                                          schema=TCP_SEGMENTS)

    def __iter__(self):
        counts = self.counts
        cols = self._new()
        rows = 0
        limit = self.batch_rows
        values: tuple
        frames = iter(self.reader)
        error: DecodeError | None = None
        while True:
            try:
                frame = next(frames)
            except StopIteration:
                break
            except DecodeError as exc:   # damaged structure: the rows before it, then the error
                error = exc
                break
            counts["frames"] += 1
            r = decode_frame(frame)
            if type(r) is TCPSegment:
                key, direction = conn_key(r.ip_version, r.src, r.sport, r.dst, r.dport)
                pkey = pair_key(r.ip_version, r.src, r.dst)[0]
                counts["tcp segments"] += 1
                values = ("tcp", r.ip_version, r.src, r.dst, pkey, key, direction, r.sport, r.dport,
                          r.seq, r.ack, r.flags, r.window, r.missing, list(r.vlans),
                          None, None, None, None, None, r.payload)
            elif type(r) is UDPDatagram:
                key, direction = conn_key(r.ip_version, r.src, r.sport, r.dst, r.dport)
                pkey = pair_key(r.ip_version, r.src, r.dst)[0]
                counts["udp datagrams"] += 1
                values = ("udp", r.ip_version, r.src, r.dst, pkey, key, direction, r.sport, r.dport,
                          None, None, None, None, r.missing, list(r.vlans),
                          None, None, None, None, None, r.payload)
            elif type(r) is IPv4Fragment:
                pkey, direction = pair_key(4, r.src, r.dst)
                counts["ip fragments"] += 1
                values = ("ipv4_fragment", 4, r.src, r.dst, pkey, None, direction, None, None,
                          None, None, None, None, r.missing, list(r.vlans),
                          r.proto, r.ident, r.offset, r.more, frag_key(r), r.data)
            else:
                if type(r) is Skipped:
                    counts["skipped: " + r.reason] += 1
                elif type(r) is Malformed:
                    counts["malformed: " + r.structure] += 1
                continue
            cols["frame_number"].append(r.frame_number)
            cols["ts"].append(None if r.ts_ns == TS_UNKNOWN else r.ts_ns)
            for name, v in zip(_NAMES[2:], values):
                cols[name].append(v)
            rows += 1
            if rows >= limit:
                yield self._batch(cols)
                cols = self._new()
                rows = 0
        if rows:
            yield self._batch(cols)
        if error is not None:
            raise error


def segment_batches(source, rng: ByteRange, **options) -> SegmentBatches:
    """The :class:`SegmentBatches` of ``rng``; iterate it for record batches."""
    return SegmentBatches(source, rng, **options)
