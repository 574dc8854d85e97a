"""Splittable captures: a capture file cut into byte ranges read independently.

A cluster reads one capture with many tasks by giving each a byte range
``[start, end)`` of the file (:func:`plan_ranges`, 128 MiB by default).  A
record (pcap) or block (pcapng) belongs to the range its first byte lies in:
the reader of a range finds the first record boundary at or after ``start``
and reads every record that starts before ``end`` -- the last one through
its end, past ``end``.  The ranges of a plan therefore read every record of
the file exactly once, in order, and each yields exactly the frames the
whole-file reader (:func:`~mqcodec.capture.reader.open_capture`) yields for
those records, with the same frame numbers when the range is given its first
frame number (:func:`frame_number_bases`: per-range counts, then a prefix
sum).

Finding a boundary in the middle of a file
------------------------------------------
* **pcap** has no sync marker, so a boundary is recognised as the start of a
  chain of plausible record headers (as RIPE-NCC's hadoop-pcap does): for
  every header of the chain ``incl_len <= snaplen`` (or 16 MiB when the file
  states none), ``incl_len <= orig_len`` (plus the excess the file's first
  records show: some writers store ``orig_len`` below ``incl_len``),
  ``orig_len <= 16 MiB``, the fraction below one second (10^6 or 10^9 ticks)
  and ``ts_sec`` within a window around the file's first records (1 day
  before, 400 days after); a chain is confirmed after :data:`CONFIRM_RECORDS`
  records or when it ends exactly at the end of the file (or in a record the
  file cut short).  A payload can hold bytes that look like such a chain --
  a pcap inside a packet, whose records may even end exactly where the outer
  record ends, so that the false chain rejoins the true one.  The finder is
  therefore not started at ``start`` but one longest record earlier
  (``16 + snaplen`` bytes): the first confirmed chain there is followed up to
  ``start``, so a false chain inside the record that crosses ``start`` is
  jumped over by the true chain of the record holding it.  What can still
  fool it: a crafted false chain that begins before that window and hops over
  the true record headers (its records spanning them), which needs control
  of the payloads of consecutive packets and knowledge of their exact
  layout, or a fake chain inside a record longer than the stated snap length
  (the window does not reach its header).  :func:`check_plan` detects a wrong
  start exactly (the range before ends elsewhere than the range after
  starts) and :func:`reconcile_plan` re-scans the range from there.
* **pcapng** blocks are walked by their lengths from the start of the file
  (the Block Total Length at both ends must agree, as the whole-file parser
  requires): the walk is exact, and it is needed anyway, because a range must
  know the Section Header Block and every Interface Description Block of the
  section it starts in (link types, timestamp resolution and offset).  It
  parses block headers only (SHB and IDBs are kept as compact copies) but
  reads the bytes before the range; :func:`scan_ranges` walks once for every
  range of a plan, where per-range walks from the start would cost too much.
* **gzip** and anything that is not a pcap/pcapng (the reader reports it) is
  one range.

Nothing is allocated from a length read in the file before it is checked
against the whole-file parsers' bounds (16 MiB records, 16 MiB + 64 blocks).
Damaged structure raises :class:`~mqcodec.errors.DecodeError` with structure,
field and absolute offset, as the whole-file parsers do.
"""
from __future__ import annotations

import io
import itertools
import struct
from typing import Any, NamedTuple

from ..errors import DecodeError
from .frame import Frame, Truncation
from .pcap import GLOBAL_HEADER_LEN, MAX_RECORD_LEN, RECORD_HEADER_LEN, PcapParser, is_pcap_magic
from .pcapng import (
    BYTE_ORDER_MAGIC,
    EPB_TYPE,
    IDB_TYPE,
    MAX_BLOCK_LEN,
    MAX_INTERFACES,
    NUMBERED_BLOCKS,
    PB_TYPE,
    SHB_TYPE,
    SPB_TYPE,
    PcapngParser,
    Interface,
    interface_block,
    is_pcapng_magic,
    section_block,
)
from .reader import CHUNK, GZIP_MAGIC, CaptureReader, open_binary

__all__ = [
    "DEFAULT_SPLIT_SIZE", "CONFIRM_RECORDS", "ByteRange", "RangeScan", "plan_ranges", "frame_number_bases",
    "find_boundary", "RangeReader", "read_range", "scan_range", "scan_ranges", "check_plan", "reconcile_plan",
    "capture_kind",
]

#: Default range size (bytes).
DEFAULT_SPLIT_SIZE = 128 * 1024 * 1024
#: Plausible pcap record headers that confirm a chain.
CONFIRM_RECORDS = 12
#: Records read at the start of a pcap file to learn its profile (time window, length excess).
PROFILE_RECORDS = 64
#: The time window around the profile's records, seconds.
TS_BEFORE = 86400
TS_AFTER = 400 * 86400

_PACKET_BLOCKS = frozenset((EPB_TYPE, SPB_TYPE, PB_TYPE)) | NUMBERED_BLOCKS


class ByteRange(NamedTuple):
    """Bytes ``[start, end)`` of a capture; ``part`` is the range's position in its plan (from 0)."""

    part: int
    start: int
    end: int


class RangeScan(NamedTuple):
    """What a range holds: its first record boundary ``first`` (>= ``start``), the
    boundary ``stop`` after its last record (>= ``end`` unless the file ends first;
    ``stop == first`` when no record starts in the range), ``numbers`` the frame numbers
    its records consume, and for pcapng ``state``: the raw SHB and IDBs in effect at
    ``first`` (empty for pcap)."""

    part: int
    first: int
    stop: int
    numbers: int
    state: tuple = ()


# -- sources ------------------------------------------------------------------------

class _Source:
    """Random access to a seekable binary file with one cached window."""

    def __init__(self, source):
        if isinstance(source, (bytes, bytearray, memoryview)):
            source = io.BytesIO(bytes(source))
        self.f, self.own = open_binary(source)
        self.f.seek(0, io.SEEK_END)
        self.size = self.f.tell()
        self._off = 0
        self._buf = b""

    def read(self, off: int, n: int) -> bytes:
        """Up to ``n`` bytes at ``off`` (fewer at the end of the file)."""
        b = self._buf
        rel = off - self._off
        if 0 <= rel and rel + n <= len(b):
            return b[rel:rel + n]
        if n > CHUNK:
            self.f.seek(off)
            return self.f.read(n)
        self.f.seek(off)
        self._buf = self.f.read(CHUNK)
        self._off = off
        return self._buf[:n]

    def close(self) -> None:
        if self.own:
            self.f.close()


def capture_kind(source) -> str:
    """"pcap", "pcapng", "gzip" or "other": what a capture (path, seekable binary
    file or bytes) is, by its first bytes."""
    src = _Source(source)
    try:
        return _kind(src.read(0, 4))
    finally:
        src.close()


def _kind(head: bytes) -> str:
    if head[:2] == GZIP_MAGIC:
        return "gzip"
    if is_pcapng_magic(head):
        return "pcapng"
    if is_pcap_magic(head):
        return "pcap"
    return "other"


# -- planning -------------------------------------------------------------------------

def plan_ranges(source, split_size: int = DEFAULT_SPLIT_SIZE) -> list[ByteRange]:
    """Cut a capture (path, seekable binary file or bytes) into ranges of ``split_size``
    bytes (the last one shorter).  gzip input and anything that is neither pcap nor
    pcapng is one range (the reader then reports what it is)."""
    if split_size < 1:
        raise ValueError("split_size must be at least 1 byte, not %r" % (split_size,))
    src = _Source(source)
    try:
        size = src.size
        kind = _kind(src.read(0, 4))
    finally:
        src.close()
    if kind in ("gzip", "other") or size <= split_size:
        return [ByteRange(0, 0, size)]
    return [ByteRange(i, start, min(size, start + split_size))
            for i, start in enumerate(range(0, size, split_size))]


def frame_number_bases(counts, first: int = 1) -> list[int]:
    """The first frame number of each range from the frame numbers each consumes (its
    :attr:`RangeScan.numbers`, or a :class:`RangeReader`'s ``numbers``): a prefix sum, so
    frame numbers stay global (tshark's) whichever task reads a range."""
    return list(itertools.accumulate(counts[:-1], initial=first)) if len(counts) else []


# -- pcap: profile and boundary finder -------------------------------------------------

class _PcapProfile:
    def __init__(self, src: _Source):
        head = src.read(0, GLOBAL_HEADER_LEN)
        parser = PcapParser()
        parser.feed(head)          # raises on a bad magic or version
        if parser.header is None:
            parser.close()         # raises: the file header is cut short
        self.header = head
        self.size = src.size
        order = parser.byte_order
        if order is None:
            raise RuntimeError("pcap profile: the file header parsed without a byte order")
        self.rec = struct.Struct(order + "IIII")
        self.frac_limit = 1_000_000 if parser.ts_scale == 1000 else 1_000_000_000
        snap = parser.snaplen or 0
        self.max_caplen = snap if 0 < snap <= MAX_RECORD_LEN else MAX_RECORD_LEN
        # learn from the first records (a true chain by construction)
        excess, lo, hi = 0, None, None
        pos = GLOBAL_HEADER_LEN
        for _ in range(PROFILE_RECORDS):
            h = src.read(pos, RECORD_HEADER_LEN)
            if len(h) < RECORD_HEADER_LEN:
                break
            ts, _frac, incl, orig = self.rec.unpack(h)
            if incl > MAX_RECORD_LEN:
                break
            excess = max(excess, incl - orig)
            lo = ts if lo is None else min(lo, ts)
            hi = ts if hi is None else max(hi, ts)
            pos += RECORD_HEADER_LEN + incl
        self.excess = excess
        self.ts_lo = None if lo is None else lo - TS_BEFORE
        self.ts_hi = None if hi is None else hi + TS_AFTER

    def plausible(self, h: bytes) -> int:
        """The record length (header included) when ``h`` is a plausible header, else -1."""
        ts, frac, incl, orig = self.rec.unpack(h)
        if (frac >= self.frac_limit or incl > self.max_caplen or incl > orig + self.excess
                or orig > MAX_RECORD_LEN):
            return -1
        if self.ts_lo is not None and not (self.ts_lo <= ts <= self.ts_hi):
            return -1
        return RECORD_HEADER_LEN + incl

    def confirmed(self, src: _Source, pos: int) -> bool:
        """A chain of CONFIRM_RECORDS plausible headers starts at ``pos`` (or one that
        ends at the end of the file, exactly or in a record cut short)."""
        size = self.size
        for _ in range(CONFIRM_RECORDS):
            if pos >= size:
                return True
            h = src.read(pos, RECORD_HEADER_LEN)
            if len(h) < RECORD_HEADER_LEN:
                return True        # a header cut by the end of the file
            n = self.plausible(h)
            if n < 0:
                return False
            pos += n
        return True


def _pcap_boundary(src: _Source, prof: _PcapProfile, start: int) -> int:
    """The first record boundary at or after ``start`` (may be >= the file size)."""
    if start <= GLOBAL_HEADER_LEN:
        return GLOBAL_HEADER_LEN
    size = src.size
    longest = RECORD_HEADER_LEN + prof.max_caplen
    c = max(GLOBAL_HEADER_LEN, start - longest)
    # records are at most ``longest`` bytes apart: without a confirmed chain before
    # start + longest the bytes there are not a capture's records (damage)
    limit = min(size, start + longest)
    while c < size:
        # the first offset >= c that starts a confirmed chain
        while c < size:
            if c > limit:
                raise DecodeError("pcap record header", "", start,
                                  "no chain of plausible record headers within %d bytes of offset %d"
                                  % (longest, start))
            h = src.read(c, RECORD_HEADER_LEN)
            if len(h) < RECORD_HEADER_LEN or (prof.plausible(h) >= 0 and prof.confirmed(src, c)):
                break
            c += 1
        # follow its chain up to start
        p = c
        while p < start:
            h = src.read(p, RECORD_HEADER_LEN)
            if len(h) < RECORD_HEADER_LEN:
                return size       # a header cut by the end of the file: no record starts >= start
            n = prof.plausible(h)
            if n < 0:
                break
            p += n
        else:
            return min(p, size)   # a record cut short that crosses start belongs to the range before
        c += 1                    # a chain that broke before start: not the true one
    return size


# -- pcapng: the exact walk ---------------------------------------------------------

class _PcapngWalk:
    """Block headers from the start of the file, by their lengths; the SHB and IDBs
    of the current section are kept raw (each bounded by MAX_BLOCK_LEN)."""

    def __init__(self, src: _Source):
        self.src = src
        self.pos = 0
        self.order: str | None = None
        self.shb = b""
        self.idbs: list[bytes] = []

    def _error(self, structure, field, offset, reason):
        return DecodeError(structure, field, offset, reason)

    def next_block(self):
        """``(type, length)`` of the block at ``pos`` (SHB/IDB state updated), or None at
        the end of the file or in a block the file cuts short.  Raises on bad framing."""
        src, pos = self.src, self.pos
        h = src.read(pos, 12)
        if len(h) < 8:
            return None
        if h[:4] == b"\x0a\x0d\x0d\x0a":
            if len(h) < 12:
                return None
            bom = h[8:12]
            if bom == struct.pack("<I", BYTE_ORDER_MAGIC):
                order = "<"
            elif bom == struct.pack(">I", BYTE_ORDER_MAGIC):
                order = ">"
            else:
                raise self._error("pcapng SHB", "Byte-Order Magic", pos + 8, "bad byte-order magic %s" % bom.hex())
            btype = SHB_TYPE
            blen = struct.unpack_from(order + "I", h, 4)[0]
            if blen < 28:
                raise self._error("pcapng SHB", "Block Total Length", pos + 4,
                                  "SHB length %d below the minimum 28" % blen)
        else:
            if self.order is None:
                raise self._error("pcapng SHB", "Block Type", pos,
                                  "the file does not start with a Section Header Block")
            order = self.order
            btype, blen = struct.unpack_from(order + "II", h, 0)
            if blen < 12:
                raise self._error("pcapng block", "Block Total Length", pos + 4,
                                  "block length %d below the minimum 12" % blen)
        if blen % 4:
            raise self._error("pcapng block", "Block Total Length", pos + 4,
                              "block length %d is not a multiple of 4" % blen)
        if blen > MAX_BLOCK_LEN:
            raise self._error("pcapng block", "Block Total Length", pos + 4,
                              "block length %d exceeds the maximum %d" % (blen, MAX_BLOCK_LEN))
        if pos + blen > src.size:
            return None
        t = src.read(pos + blen - 4, 4)
        trailer = struct.unpack(order + "I", t)[0]
        if trailer != blen:
            raise self._error("pcapng SHB" if btype == SHB_TYPE else "pcapng block", "Block Total Length",
                              pos + blen - 4, "trailing length %d differs from the leading %d" % (trailer, blen))
        if btype == SHB_TYPE:
            major, minor = struct.unpack(order + "HH", src.read(pos + 12, 4))
            if major != 1:
                raise self._error("pcapng SHB", "Major Version", pos + 12, "unsupported pcapng version %d" % major)
            self.order = order
            # the state keeps a compact copy: a section's SHB and IDBs cost ~50 bytes each
            # whatever their options' length
            self.shb = section_block(order, minor)
            self.idbs = []
        elif btype == IDB_TYPE:
            if blen < 20:
                raise self._error("pcapng IDB", "Block Total Length", pos + 4, "length %d below the minimum 20" % blen)
            if len(self.idbs) >= MAX_INTERFACES:
                raise self._error("pcapng IDB", "Block Type", pos, "too many interfaces")
            self.idbs.append(_compact_idb(order, src.read(pos, blen)))
        return btype, blen

    def state(self) -> tuple:
        return (self.shb, *self.idbs) if self.shb else ()


def _compact_idb(order: str, raw: bytes) -> bytes:
    """An IDB with the same link type, snap length, ``if_tsresol`` and ``if_tsoffset``
    as ``raw`` (read by the whole-file parser's own option walk) and no other option."""
    linktype, _res, snaplen = struct.unpack_from(order + "HHI", raw, 8)
    iface = Interface(linktype, snaplen)
    PcapngParser.idb_options(iface, order, raw, 16, len(raw) - 4)
    return interface_block(order, iface)


def _pcapng_walk_to(src: _Source, start: int) -> _PcapngWalk:
    """Walk to the first block boundary >= ``start`` (or the end of the file)."""
    walk = _PcapngWalk(src)
    while walk.pos < start:
        b = walk.next_block()
        if b is None:
            # the end of the file, or a block it cuts short that starts before ``start``
            # (the range before reads it): no block starts at or after ``start``
            walk.pos = max(src.size, start)
            break
        walk.pos += b[1]
    return walk


# -- public: boundaries, scans, reading -----------------------------------------------

def find_boundary(source, start: int) -> int:
    """The first record (pcap) or block (pcapng) boundary at or after ``start``."""
    src = _Source(source)
    try:
        kind = _kind(src.read(0, 4))
        if kind == "pcap":
            return _pcap_boundary(src, _PcapProfile(src), start)
        if kind == "pcapng":
            return _pcapng_walk_to(src, start).pos
        return 0 if start <= 0 else src.size
    finally:
        src.close()


def _count_pcap(src: _Source, prof: _PcapProfile, first: int, end: int, core=None):
    """(where the range stops, how many records it holds): the records that start
    in [first, end), header by header; with the compiled ``core``, a chunk's whole
    records at a time (its ``pcap_count``), a record that crosses the chunk's end
    (or the file's) by the step below."""
    pos, n, size = first, 0, src.size
    big = prof.rec.format.startswith(">")
    while pos < end and pos < size:
        if core is not None:
            walked, k, status = core.pcap_count(src.read(pos, CHUNK), end - pos, big, MAX_RECORD_LEN)
            pos += walked
            n += k
            if status == 0 or (walked and status == 1):
                continue   # the limit, or a record past the chunk: read on from it
        h = src.read(pos, RECORD_HEADER_LEN)
        if len(h) < RECORD_HEADER_LEN:
            return size, n        # a header cut short: read (as a truncation) here
        incl = prof.rec.unpack(h)[2]
        if incl > MAX_RECORD_LEN:
            exc = DecodeError("pcap record header", "incl_len", pos + 8,
                              "incl_len %d exceeds the maximum %d" % (incl, MAX_RECORD_LEN))
            exc.damage = (pos, n)   # type: ignore[attr-defined]
            raise exc
        if pos + RECORD_HEADER_LEN + incl > size:
            return size, n        # a record cut short: no frame
        pos += RECORD_HEADER_LEN + incl
        n += 1
    return pos, n


def scan_range(source, rng: ByteRange) -> RangeScan:
    """Where range ``rng`` starts and stops and how many frame numbers it consumes,
    reading record headers only (pcapng: walking from the start of the file)."""
    return scan_ranges(source, [rng])[0]


def scan_ranges(source, ranges, *, impl: str | None = None) -> list[RangeScan]:
    """:func:`scan_range` of several ranges of one capture that do not overlap (a
    plan's; pcapng: one walk for all).  Damaged structure raises DecodeError with
    ``scans``: the scans up to the damaged range, that one stopping where the
    damaged record (block) starts (what a whole-file read converts; the
    ranges after it are left out).  ``impl``: who counts a pcap range's
    records (:mod:`mqcodec._impl`; the compiled core walks a chunk's headers in
    one call, the pure scan one header at a time; the same scans)."""
    from .. import _impl

    core = _impl.pick("capture_core", impl, what="capture core")
    src = _Source(source)
    try:
        kind = _kind(src.read(0, 4))
        out = []
        if kind == "pcap":
            prof = _PcapProfile(src)
            for r in ranges:
                first = _pcap_boundary(src, prof, r.start)
                if first >= r.end:
                    out.append(RangeScan(r.part, first, first, 0))
                    continue
                try:
                    stop, n = _count_pcap(src, prof, first, r.end, core)
                except DecodeError as exc:
                    stop, n = exc.damage   # type: ignore[attr-defined]
                    exc.scans = out + [RangeScan(r.part, first, stop, n)]   # type: ignore[attr-defined]
                    raise
                out.append(RangeScan(r.part, first, stop, n))
        elif kind == "pcapng":
            walk = _PcapngWalk(src)
            for r in sorted(ranges, key=lambda r: r.start):
                while walk.pos < r.start:
                    b = walk.next_block()
                    if b is None:
                        walk.pos = max(src.size, r.start)
                        break
                    walk.pos += b[1]
                first = walk.pos
                state = walk.state()
                n = 0
                while walk.pos < r.end:
                    try:
                        b = walk.next_block()
                    except DecodeError as exc:
                        exc.scans = sorted(out + [RangeScan(r.part, first, walk.pos, n, state)],   # type: ignore[attr-defined]
                                           key=lambda s: s.part)
                        raise
                    if b is None:
                        if walk.pos < src.size:
                            walk.pos = src.size   # a block cut short: read (as a truncation) here
                        break
                    n += b[0] in _PACKET_BLOCKS
                    walk.pos += b[1]
                stop = walk.pos
                out.append(RangeScan(r.part, first, stop, n, state))
            out.sort(key=lambda s: s.part)
        else:
            for r in ranges:
                # unsplittable: the range that starts at 0 holds everything; counts need a read
                if r.start == 0:
                    rr = RangeReader(src.f, r)
                    for _ in rr:
                        pass
                    out.append(RangeScan(r.part, 0, src.size, rr.numbers))
                else:
                    out.append(RangeScan(r.part, src.size, src.size, 0))
        return out
    finally:
        src.close()


def check_plan(scans) -> list[int]:
    """Parts (``part``) of the ranges whose first boundary is not where the range before stops (in
    plan order): empty when the ranges read every record exactly once.  A range listed
    here was started on a false chain (or after a record that breaks the rules) and
    must be re-read from the previous range's ``stop``."""
    bad = []
    prev = None
    for s in sorted(scans, key=lambda s: s.part):
        if prev is not None and s.first != prev.stop:
            bad.append(s.part)
        prev = s
    return bad


def reconcile_plan(source, ranges, scans, *, impl: str | None = None) -> list[RangeScan]:
    """``scans`` with every range :func:`check_plan` lists re-scanned from the ``stop``
    of the range before (a true boundary: the first range starts at the file's first
    record), in plan order, so that the result reads every record exactly once
    (``impl`` as :func:`scan_ranges`)."""
    from .. import _impl

    core = _impl.pick("capture_core", impl, what="capture core")
    by_part = {r.part: r for r in ranges}
    out = sorted(scans, key=lambda s: s.part)
    if not check_plan(out):
        return out
    src = _Source(source)
    try:
        prof = _PcapProfile(src) if _kind(src.read(0, 4)) == "pcap" else None
        for i in range(1, len(out)):
            prev, cur = out[i - 1], out[i]
            if cur.first == prev.stop:
                continue
            if prof is None:      # pcapng walks are exact; gzip is one range
                raise RuntimeError("reconcile_plan: range %d of a pcapng/gzip plan disagrees" % cur.part)
            r = by_part[cur.part]
            first = prev.stop
            if first >= r.end or first >= src.size:
                out[i] = RangeScan(cur.part, first, first, 0)
            else:
                try:
                    stop, n = _count_pcap(src, prof, first, r.end, core)
                except DecodeError as exc:
                    stop, n = exc.damage   # type: ignore[attr-defined]
                    exc.scans = out[:i] + [RangeScan(cur.part, first, stop, n)]   # type: ignore[attr-defined]
                    raise
                out[i] = RangeScan(cur.part, first, stop, n)
        return out
    finally:
        src.close()


class RangeReader:
    """Iterate the frames of the records that start in a byte range of a capture.

    ``first_number`` is the frame number of the range's first record (see
    :func:`frame_number_bases`).  ``first``/``stop`` (set once reading begins) are
    the boundaries the range read from and to, ``numbers`` the frame numbers it
    consumed, ``truncation`` the file's :class:`~mqcodec.capture.frame.Truncation`
    when the range reads the file's cut-short end.  ``scan`` (a :class:`RangeScan`
    of this range) skips the search: the range is read from ``scan.first`` with
    ``scan.state``.  gzip and unknown inputs are read whole by the range that starts
    at 0 (others yield nothing).  Damaged structure raises DecodeError after the
    range's complete frames before it.  ``skipped_blocks`` (pcapng blocks of
    types the parser skips, by type) and ``impossible_timestamps`` count what the
    range read, as the whole-file reader's parser counts them."""

    def __init__(self, source, rng: ByteRange, *, first_number: int = 1, scan: RangeScan | None = None,
                 chunk_size: int = CHUNK, strict: bool = False):
        self._source = source
        self.range = rng
        self.first_number = first_number
        self.scan = scan
        self.chunk_size = chunk_size
        self.strict = strict
        self.first: int | None = None
        self.stop: int | None = None
        self.numbers = 0
        self.frames = 0
        self.truncation: Truncation | None = None
        self.format: str | None = None
        self.skipped_blocks: dict = {}
        self.impossible_timestamps = 0
        self._parser: Any = None

    def __iter__(self):
        src = _Source(self._source)
        try:
            yield from self._read(src)
        finally:
            p = self._parser   # a format parser, or the whole-file reader holding one (gzip)
            if isinstance(p, CaptureReader):
                p = getattr(p.parser, "inner", None)
            self.skipped_blocks = dict(getattr(p, "skipped_blocks", None) or {})
            self.impossible_timestamps = getattr(p, "impossible_timestamps", 0)
            src.close()

    def _read(self, src: _Source):
        rng = self.range
        kind = _kind(src.read(0, 4))
        self.format = kind
        if kind in ("gzip", "other"):
            if rng.start != 0:
                self.first = self.stop = src.size
                return
            src.f.seek(0)
            reader = CaptureReader(src.f, chunk_size=self.chunk_size, strict=self.strict)
            number = self.first_number - 1
            self._parser = reader
            for frame in reader:
                self.frames += 1
                yield frame._replace(number=frame.number + number)
            self.numbers = reader.parser.inner.next_number - 1 if reader.parser.inner else 0
            self.truncation = reader.truncation
            self.first, self.stop = 0, src.size
            return
        parser: PcapParser | PcapngParser
        if kind == "pcap":
            prof = _PcapProfile(src)
            first = self.scan.first if self.scan else _pcap_boundary(src, prof, rng.start)
            parser = PcapParser(first_number=self.first_number)
            parser.feed(prof.header)
        else:
            if self.scan is not None:
                first, state = self.scan.first, self.scan.state
            else:
                walk = _pcapng_walk_to(src, rng.start)
                first, state = walk.pos, walk.state()
            parser = PcapngParser(first_number=self.first_number)
            for block in state:
                parser.feed(block)
        self._parser = parser
        self.first = first
        if first >= rng.end or first >= src.size:
            self.stop = first
            return
        parser.start_at(first)
        pos = first
        try:
            # the records that start before the range end: whole chunks up to it, then
            # exactly the rest of the record that crosses it
            while True:
                need = rng.end - pos if pos < rng.end else parser.pending_need()
                if need <= 0:
                    break
                data = src.read(pos, min(need, self.chunk_size))
                if not data:
                    break
                pos += len(data)
                for frame in parser.feed(data):
                    self.frames += 1
                    yield frame
        except DecodeError as exc:
            for frame in getattr(exc, "frames_before", ()):
                self.frames += 1
                yield frame
            self.numbers = parser.next_number - self.first_number
            self.stop = parser.offset
            raise
        self.numbers = parser.next_number - self.first_number
        self.stop = parser.offset
        if pos >= src.size:
            self.truncation = parser.close()
            if self.truncation is not None:
                self.stop = src.size
                if self.strict:
                    t = self.truncation
                    raise DecodeError(t.structure, t.field, t.offset,
                                      "file cut short: %d bytes needed, %d present" % (t.needed, t.present))


def read_range(source, rng: ByteRange, *, first_number: int = 1, scan: RangeScan | None = None,
               **options) -> RangeReader:
    """The :class:`RangeReader` of ``rng``; iterate it for :class:`Frame` objects."""
    return RangeReader(source, rng, first_number=first_number, scan=scan, **options)


__all__ += ["Frame"]
