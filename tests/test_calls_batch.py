"""ibmmq.calls_batch.decode_units (the compiled engine's batch reader of
IBM MQ units) against ibmmq.calls.decode_unit, one unit at a time: the same
row for every unit of the simulator's captures, for hostile and damaged
units (every cut, flipped bytes, other structure versions, EBCDIC
identifiers), and the same mq_calls rows from both capture engines on a
capture holding damaged units (error columns and raw bytes)."""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest

from mqcodec import synth
from mqcodec.capture.writer import TcpConversation, write_pcap
from mqcodec.ibmmq.calls import decode_unit
from mqcodec.ibmmq.calls_batch import DECODED_SCHEMA, decode_units
from mqcodec.ibmmq.builders import (
    api_header, default_gmo, default_pmo, encode_get_reply, encode_message_data, encode_put, encode_put_reply,
    encode_segments,
)
from mqcodec.ibmmq.headers import MQMD
from mqcodec.ibmmq.message import MQMessage, encode_message
from mqcodec.convert import ConvertOptions, Converter
from mqcodec.convert.sinks import TableCollector

from test_mq_calls import ENGINES


def _one_by_one(units) -> list:
    """decode_unit's rows, as DECODED_SCHEMA values."""
    rows = [decode_unit(u, full) for u, full in units]
    return pa.Table.from_pylist(rows, schema=DECODED_SCHEMA).to_pylist()


def _batch(units, gap: bytes = b"") -> list:
    """decode_units' rows for ``units`` packed in one buffer (``gap`` between them)."""
    parts, starts, lens, full, at = [], [], [], [], 0
    for u, f in units:
        parts += [gap, u]
        starts.append(at + len(gap))
        lens.append(len(u))
        full.append(f)
        at += len(gap) + len(u)
    data = b"".join(parts)
    table = decode_units(data, np.array(starts, dtype=np.int64), np.array(lens, dtype=np.int64),
                         np.array(full, dtype=np.int64))
    assert table.schema == DECODED_SCHEMA and table.num_rows == len(units)
    return table.to_pylist()


def _same(units, gap: bytes = b"") -> None:
    ours, theirs = _batch(units, gap), _one_by_one(units)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, (i, units[i][0][:64], {k: (a[k], b[k]) for k in a if a[k] != b[k]})


class _Recorder(Converter):
    """The pure engine, keeping every unit it decodes (bytes, full length)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.units: list = []

    def _unit(self, capture, stream, direction, src, sport, dst, dport, offset, frame, ts, data, length):
        self.units.append((bytes(data), length))
        return super()._unit(capture, stream, direction, src, sport, dst, dport, offset, frame, ts, data, length)


@pytest.fixture(scope="module")
def simulator_units(tmp_path_factory):
    path = tmp_path_factory.mktemp("sim") / "sim.pcap"
    synth.write_capture(str(path), seed=3, messages=300)
    conv = _Recorder(TableCollector(), ConvertOptions(capture_impl="py"))
    conv.add_capture(str(path), name="sim")
    return conv.units


_LE = "little"


def _message(text: bytes, order=_LE) -> MQMessage:
    enc = 546 if order == _LE else 273
    md = MQMD(Version=1, Encoding=enc, CodedCharSetId=1208, Format="MQSTR", PutApplName="t")
    return MQMessage(md, [], text, md_encoding=enc, md_ccsid=819)


def _samples() -> list:
    """Units of the types decode_units reads over arrays, in both byte orders
    and structure versions, plus a few it hands to decode_unit."""
    out = []
    for order in ("little", "big"):
        msg = _message(b"hello", order)
        for v in (1, 2, 3):
            pmo = default_pmo(order, version=v, ResolvedQName=b"RESOLVED.Q".ljust(48), Options=0x44)
            out.append(encode_put(msg, pmo=pmo, hobj=5, conversation_id=1, request_id=3, byte_order=order))
            out.append(encode_put_reply(msg, pmo=pmo, hobj=5, conversation_id=1, request_id=3, byte_order=order))
        for v in (1, 2, 3, 4):
            gmo = default_gmo(order, version=v, WaitInterval=500, ResolvedQName=b"GOT.Q".ljust(48))
            out.append(encode_get_reply(msg, gmo=gmo, hobj=7, conversation_id=2, request_id=4, byte_order=order))
        f = "<" if order == _LE else ">"
        md = encode_message(_message(b"", order))
        gmo = default_gmo(order, version=2)
        out.append(encode_segments(0x85, api_header(order, 0, 0, 0, 7) + md + gmo + struct.pack(f + "i", 4096),
                                   byte_order=order, conversation_id=1, request_id=9))
        out.append(encode_segments(0x85, api_header(order, 0, 0, 0, 7) + md, byte_order=order))   # no MQGMO
        out.append(encode_segments(0x86, api_header(order, 0, 0, 0, 7) + b"junk" * 20, byte_order=order))  # no MQMD
        out.append(encode_message_data(msg, remote_q_name="REMOTE.Q", remote_qmgr_name="QM2", byte_order=order))
        out.append(encode_message_data(msg, remote_q_name="REMOTE.Q", msh=False, byte_order=order))
        out.append(encode_segments(0x09, b"", byte_order=order, conversation_id=3))         # HEARTBEAT
        out.append(encode_segments(0x09, b"", byte_order=order, structid="TSH"))
        out.append(encode_segments(0x0B, b"", byte_order=order, structid="TSHC"))
        out.append(encode_segments(0x09, b"", byte_order=order, ebcdic=True))           # EBCDIC TSHM: slow
        out.append(encode_segments(0x05, struct.pack(f + "III", 12, 29, 77), byte_order=order))  # STATUS: slow
        out.append(encode_segments(0xA1, struct.pack(">I", 16) + struct.pack(f + "iII", 0, 0, 7),
                                   byte_order=order))                                     # XA: slow
    return out


def test_simulator_units_decode_as_one_by_one(simulator_units):
    assert len(simulator_units) > 1000
    _same(simulator_units)
    _same(simulator_units[:50], gap=b"\xff" * 7)


def test_samples_decode_as_one_by_one():
    _same([(u, len(u)) for u in _samples()])


def test_empty_batch_and_tiny_units():
    assert decode_units(b"", np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).num_rows == 0
    _same([(b"", 0), (b"T", 1), (b"TSHM", 4), (b"TSHM" + b"\x00" * 20, 24), (b"XXXX" * 10, 40)])


def test_every_cut_decodes_as_one_by_one():
    """Each sample cut at every length: as a unit of that length and as the
    prefix of a longer unit (past what the engines keep: not an error)."""
    units = []
    for u in _samples():
        for cut in range(len(u) + 1):
            units.append((u[:cut], cut))
            units.append((u[:cut], len(u)))
    _same(units)


def test_damaged_bytes_decode_as_one_by_one():
    """Bytes set to hostile values at every position of the headers (ids,
    byte order, versions, counts, CCSID), and EBCDIC identifiers."""
    units = []
    for u in _samples():
        for pos in range(min(len(u), 640)):
            for value in (0x00, 0x02, 0xFF):
                b = bytearray(u)
                b[pos] = value
                units.append((bytes(b), len(b)))
        for ascii_id, ebcdic in ((b"TSHM", b"\xe3\xe2\xc8\xd4"), (b"MD  ", b"\xd4\xc4\x40\x40"),
                                 (b"PMO ", b"\xd7\xd4\xd6\x40"), (b"GMO ", b"\xc7\xd4\xd6\x40"),
                                 (b"MSH ", b"\xd4\xe2\xc8\x40"), (b"XQH ", b"\xe7\xd8\xc8\x40")):
            if ascii_id in u:
                units.append((u.replace(ascii_id, ebcdic, 1), len(u)))
    _same(units)


def test_put_message_records_and_other_ccsids():
    """An MQPMO version 2 with put message records (decode_unit's sizes),
    and names in a TSH CCSID that is not ASCII (each decoded by its CCSID)."""
    msg = _message(b"x")
    pmo = default_pmo(_LE, version=2, RecsPresent=2, PutMsgRecFields=1, PutMsgRecOffset=152)
    units = [encode_put(msg, pmo=pmo + b"\x00" * 64, hobj=1, byte_order=_LE)]
    for ccsid in (500, 1208, 37, 850, 0, -5, 4321):
        pmo = default_pmo(_LE, version=1, ResolvedQName="Q.\u00e9".encode("cp500").ljust(48, b"\x40"))
        units.append(encode_put(msg, pmo=pmo, hobj=1, byte_order=_LE, ccsid=ccsid))
    _same([(u, len(u)) for u in units])


def _damaged_pcap(path) -> None:
    c = TcpConversation(("10.5.0.1", 45000), ("10.5.0.2", 1414), mss=1400, start_ns=1_700_000_000 * 10**9)
    pk = c.handshake()
    msg = _message(b"hello")
    md = encode_message(_message(b""))
    pk += c.send(0, encode_put(msg, hobj=5, conversation_id=1, request_id=1, byte_order=_LE))
    pk += c.send(1, encode_put_reply(msg, hobj=5, conversation_id=1, request_id=1, byte_order=_LE))
    pk += c.send(0, encode_segments(0x86, api_header(_LE, 0, 0, 0, 5) + md[:100], byte_order=_LE,
                                    conversation_id=1, request_id=2))        # an MQMD cut short
    pk += c.send(1, encode_segments(0x96, api_header(_LE, 0, 0, 0, 5) + md[:4] + struct.pack("<i", 9) + md[8:],
                                    byte_order=_LE, conversation_id=1, request_id=2))   # MQMD version 9
    pk += c.send(0, encode_segments(0x85, api_header(_LE, 0, 0, 0, 5) + md + b"GMO " + struct.pack("<i", 1),
                                    byte_order=_LE, conversation_id=1, request_id=3))   # an MQGMO cut short
    with open(path, "wb") as f:
        write_pcap(f, pk)


@pytest.mark.parametrize("engine", ENGINES)
def test_damaged_units_keep_error_columns_and_bytes(tmp_path, engine):
    path = tmp_path / "damaged.pcap"
    _damaged_pcap(path)
    tables = TableCollector()
    Converter(tables, ConvertOptions(capture_impl=engine)).add_capture(str(path), name="d")
    rows = tables.table("mq_calls").to_pylist()
    assert [r["segment_type_name"] for r in rows] == ["MQPUT", "MQPUT_REPLY", "MQPUT", "MQPUT_REPLY", "MQGET"]
    bad = [r for r in rows if r["error"] is not None]
    assert [(r["error_structure"], r["error_field"]) for r in bad] == [("MQMD", ""), ("MQMD", "Version"),
                                                                       ("MQGMO", "")]
    assert bad[0]["error"].startswith("truncated") and bad[1]["error_offset"] == 56
    for r in bad:
        assert r["raw"] is not None and len(r["raw"]) == r["length"] and r["raw"][:4] == b"TSHM"
        assert decode_unit(r["raw"])["error"] == r["error"]
    assert all(r["raw"] is None for r in rows if r["error"] is None)
    assert rows[1]["request_call_key"] == rows[0]["call_key"] and rows[3]["request_call_key"] == rows[2]["call_key"]
    assert rows[4]["replied"] is False and rows[0]["replied"] is True


def test_both_engines_write_the_same_calls_on_damaged_units(tmp_path):
    if "c" not in ENGINES:
        pytest.skip("the compiled capture core is not built")
    path = tmp_path / "damaged.pcap"
    _damaged_pcap(path)
    out = []
    for engine in ("py", "c"):
        tables = TableCollector()
        Converter(tables, ConvertOptions(capture_impl=engine, raw=True)).add_capture(str(path), name="d")
        out.append(tables.table("mq_calls").to_pylist())
    assert out[0] == out[1] and all(r["raw"] is not None for r in out[1])
