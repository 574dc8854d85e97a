"""A capture's stream units through either capture implementation, by the
public entry point both share: ``Converter(ConvertOptions(capture_impl=...))``,
over a file of short reads (``capture_inputs.UnseekableFile``) when the bytes
are to come in pieces.

:func:`units` gives, per connection direction ``(tcp_stream, src_ip,
src_port)``, the units the tables hold in stream order (:class:`Row`: every
MSMQ packet, every IBM MQ unit of ``mq_calls``, every IBM MQ framing error);
the job's summary counters; the capture's report; every table's rows whole.
With ``impl="c"`` it also checks that every one of them equals the pure
implementation's (``impl="py"``) for the same bytes read whole: the suites
that use it state facts of the captures they build, checked on both
implementations, and the compiled one must besides be the pure one's twin.
"""
from __future__ import annotations

import copy
import hashlib
import struct
from collections import Counter, OrderedDict
from typing import NamedTuple, Optional

import pyarrow as pa
import pyarrow.compute as pc

from mqcodec.capture.tcp import SHARED_STATS
from mqcodec.convert import ConvertOptions, Converter
from mqcodec.convert.sinks import TableCollector
from mqcodec.convert.tables import MQ_CALLS, MQ_MESSAGES, MSMQ_PACKETS

from capture_inputs import UnseekableFile


class Row(NamedTuple):
    """One unit of a connection direction as the tables hold it: an MSMQ
    packet (``msmq_packets``), an IBM MQ unit (``mq_calls``: ``kind`` is its
    segment type) or an IBM MQ framing error (``mq_messages``)."""
    offset: Optional[int]
    kind: str
    frame: Optional[int]
    ts: Optional[int]          # nanoseconds since the epoch
    error: Optional[str]
    length: Optional[int]      # the unit's bytes in the stream
    raw: Optional[bytes]       # an error row's bytes


class Units(NamedTuple):
    #: {(tcp_stream, src_ip, src_port): [Row, ...]} in stream order
    rows: dict
    #: the job's summary counters
    stats: dict
    #: the capture's report (stats, tcp, truncation, file_error, ...)
    report: dict
    #: every table whole (:class:`Tables`), for comparing implementations
    tables: "Tables"

    def count(self) -> int:
        return sum(len(v) for v in self.rows.values())

    def shared(self) -> tuple:
        """What any implementation gives for the same capture (its own counters left out)."""
        return self.rows, self.stats, _comparable(self.report), self.tables

    def errors(self) -> int:
        return sum(r.error is not None for v in self.rows.values() for r in v)


class Tables:
    """The tables of a conversion (msmq_packets, mq_calls, mq_messages), equal
    to another's when each holds the same rows, in any order (the order rows
    are written in is each implementation's own)."""
    __hash__ = None   # type: ignore[assignment]

    def __init__(self, tables: tuple):
        self.tables = tables

    def __eq__(self, other) -> bool:
        if not isinstance(other, Tables):
            return NotImplemented
        return len(self.tables) == len(other.tables) and all(
            _same_rows(a, b) for a, b in zip(self.tables, other.tables))

    def __repr__(self) -> str:
        return "Tables(%s)" % ", ".join("%d rows" % t.num_rows for t in self.tables)

    def difference(self, other: "Tables") -> list:
        """Up to 5 rows per table that one of the two holds more often than the other."""
        out = []
        for a, b in zip(self.tables, other.tables):
            mine, theirs = Counter(_row_reprs(a)), Counter(_row_reprs(b))
            out += [("only here", r) for r in list(mine - theirs)[:5]]
            out += [("only there", r) for r in list(theirs - mine)[:5]]
        return out

    def rows(self, i: int) -> list:
        """Table ``i``'s rows as dicts."""
        return self.tables[i].to_pylist()


_KEYS = ("message_key", "param_index", "tcp_stream", "src_port", "stream_offset", "frame", "error")


def _decoded(column):
    return pc.cast(column, column.type.value_type) if pa.types.is_dictionary(column.type) else column


def _same_rows(a: pa.Table, b: pa.Table) -> bool:
    if a.num_rows != b.num_rows or a.schema != b.schema:
        return False
    if not a.num_rows:
        return True
    names = set(a.column_names)
    keys = [k for k in _KEYS if k in names]
    a, b = (t.take(pc.sort_indices(pa.table([_decoded(t.column(k)) for k in keys], names=keys),
                                   [(k, "ascending") for k in keys])) for t in (a, b))
    for x, y in zip(a.columns, b.columns):
        if not x.equals(y) and not (pa.types.is_dictionary(x.type) and   # (dictionaries of their own)
                                    _decoded(x).equals(_decoded(y))):
            break
    else:
        return True
    # rows the sort keys do not tell apart may be in a different order: rows as a multiset
    return sorted(_row_reprs(a)) == sorted(_row_reprs(b))


def _row_reprs(t: pa.Table) -> list:
    """Each row of ``t`` as one comparable string."""
    return [repr(sorted(r.items())) for r in t.to_pylist()]


def _ns(t: pa.Table) -> list:
    micros = pc.cast(t.column("ts"), pa.int64())
    return pc.add(pc.multiply(micros, 1000), pc.cast(t.column("ts_nanos"), pa.int64())).to_pylist()


def convert_units(data: bytes, impl: str, sizes=None, **options) -> Units:
    """The units of ``data`` as ``impl`` gives them, unchecked (:func:`units` checks)."""
    tables = TableCollector()
    conv = Converter(tables, ConvertOptions(capture_impl=impl, **options))
    conv.add_capture(UnseekableFile(data, sizes) if sizes else data, name="c")
    report = conv.report(top=None)
    rows: dict = {}
    whole = []
    for name, kind in ((MSMQ_PACKETS, "kind"), (MQ_CALLS, "segment_type_name"), (MQ_MESSAGES, "kind")):
        t = tables.table(name)
        whole.append(t)
        if not t.num_rows:
            continue
        if name == MQ_MESSAGES:     # its units are mq_calls rows: here only the framing errors
            t = t.filter(pc.equal(t.column("kind"), "framing error"))
        cols = t.select(["tcp_stream", "src_ip", "src_port", "stream_offset", kind, "frame", "error", "length"]
                        + (["raw"] if "raw" in t.column_names else [])).to_pylist()
        for r, ts in zip(cols, _ns(t)):
            if r["tcp_stream"] is None:
                continue            # an MSMQ ping (UDP)
            rows.setdefault((r["tcp_stream"], r["src_ip"], r["src_port"]), []).append(
                Row(r["stream_offset"], r[kind], r["frame"], ts, r.get("error"), r["length"], r.get("raw")))
    for v in rows.values():
        v.sort(key=lambda r: (-1 if r.offset is None else r.offset, r.frame or 0))
    return Units(rows, dict(report["summary"]), report["captures"][0], Tables(tuple(whole)))


#: The pure implementation's units of the last captures it read whole, by
#: (digest, options): a ``c`` test's reference is its ``py`` twin's result (the
#: ``[c]`` case of a test runs just before its ``[py]`` case) and not computed twice.
_PURE: "OrderedDict[tuple, Units]" = OrderedDict()


def _pure_units(data: bytes, **options) -> Units:
    key = (hashlib.blake2b(data).digest(), repr(sorted(options.items())))
    if key not in _PURE:
        _PURE[key] = convert_units(data, "py", **options)
        while len(_PURE) > 16:
            _PURE.popitem(last=False)
    u = _PURE[key]
    return u._replace(rows=copy.deepcopy(u.rows), stats=dict(u.stats), report=copy.deepcopy(u.report))


def units(data: bytes, impl: str, sizes=None, **options) -> Units:
    """The units of capture ``data`` (read in pieces of ``sizes`` when given)
    as implementation ``impl`` gives them; ``options``: ConvertOptions'.
    Checked whatever the implementation: every row's ``ts`` is its frame's
    (the record's timestamp in a classic pcap).  With ``impl="c"``: every
    table, the summary and the capture's report equal the pure one's."""
    got = convert_units(data, impl, sizes, **options) if impl != "py" or sizes else _pure_units(data, **options)
    stamps = record_times(data)
    if stamps is not None:
        for key, rows in got.rows.items():
            for r in rows:
                assert r.frame is None or r.ts == stamps[r.frame - 1], (key, r)
    if impl == "c":
        ref = _pure_units(data, **options)
        assert got.stats == ref.stats
        assert got.tables == ref.tables, got.tables.difference(ref.tables)
        assert got.rows == ref.rows
        assert got.shared() == ref.shared()
    return got


def record_times(data: bytes) -> Optional[list]:
    """The timestamps (ns) of a classic pcap's records, walked from their
    headers (None: not a classic pcap)."""
    magic = data[:4]
    orders = {b"\xd4\xc3\xb2\xa1": ("<", 1000), b"\xa1\xb2\xc3\xd4": (">", 1000),
              b"\x4d\x3c\xb2\xa1": ("<", 1), b"\xa1\xb2\x3c\x4d": (">", 1)}
    if magic not in orders or len(data) < 24:
        return None
    order, scale = orders[magic]
    out, pos = [], 24
    while pos + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack_from(order + "IIII", data, pos)
        if pos + 16 + incl > len(data):
            break
        out.append(sec * 1_000_000_000 + frac * scale)
        pos += 16 + incl
    return out


def _comparable(report: dict) -> dict:
    """What a capture's report says whichever implementation read it: the
    frames read, skipped and malformed, the reassembler's counters, the file's
    damage (the compiled core's own counters, ``"core"``, are its alone)."""
    out = {k: v for k, v in report.items() if k not in ("engine", "core", "stats", "tcp")}
    out["stats"] = {k: report["stats"].get(k, 0) for k in ("frames", "skipped", "malformed")}
    out["tcp"] = {k: v for k, v in report.get("tcp", {}).items() if k in SHARED_STATS and v}
    return out


def tcp_stats(u: Units) -> Counter:
    """The reassembler's counters of the capture :func:`units` read."""
    return Counter(u.report.get("tcp", {}))
