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

import struct
from collections import Counter
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
    #: every table's rows, whole (sorted reprs), for comparing implementations
    tables: tuple

    def count(self) -> int:
        return sum(len(v) for v in self.rows.values())

    def shared(self) -> tuple:
        """What any implementation gives for the same capture (its own counters left out)."""
        return self.rows, self.stats, _comparable(self.report), self.tables

    def errors(self) -> int:
        return sum(r.error is not None for v in self.rows.values() for r in v)


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
        whole.append(sorted(repr(sorted(r.items())) for r in t.to_pylist()))
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
    return Units(rows, dict(report["summary"]), report["captures"][0], tuple(whole))


def units(data: bytes, impl: str, sizes=None, **options) -> Units:
    """The units of capture ``data`` (read in pieces of ``sizes`` when given)
    as implementation ``impl`` gives them; ``options``: ConvertOptions'.
    Checked whatever the implementation: every row's ``ts`` is its frame's
    (the record's timestamp in a classic pcap).  With ``impl="c"``: every
    table, the summary and the capture's report equal the pure one's."""
    got = convert_units(data, impl, sizes, **options)
    stamps = record_times(data)
    if stamps is not None:
        for key, rows in got.rows.items():
            for r in rows:
                assert r.frame is None or r.ts == stamps[r.frame - 1], (key, r)
    if impl == "c":
        ref = convert_units(data, "py", **options)
        assert got.stats == ref.stats
        assert got.tables == ref.tables
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
