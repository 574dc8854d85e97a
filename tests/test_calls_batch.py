"""ibmmq.calls_batch.decode_units (the compiled engine's batch reader of
IBM MQ units), both implementations (the ``impl`` fixture: the pure reader
over arrays and its compiled twin, mqcodec._ext.calls_batch), against
ibmmq.calls.decode_unit, one unit at a time: the same row for every unit of
the simulator's captures, for hostile and damaged units (every cut, flipped
bytes, other structure versions, EBCDIC identifiers), and the same mq_calls
rows from both capture engines on a capture holding damaged units (error
columns and raw bytes)."""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest

from mqcodec import synth
from mqcodec.capture.writer import TcpConversation, write_pcap
from mqcodec.ibmmq.calls import decode_unit
from mqcodec import _impl
from mqcodec.ibmmq import calls_batch
from mqcodec.ibmmq.calls_batch import DECODED_SCHEMA
from mqcodec.ibmmq.builders import (
    api_header, default_gmo, default_od, default_pmo, encode_async_message, encode_close, encode_close_reply,
    encode_conn, encode_conn_reply, encode_disc, encode_disc_reply, encode_fcno, encode_get_reply, encode_initial_data, encode_inq,
    encode_inq_reply, encode_message_data, encode_open, encode_open_reply, encode_put, encode_put1,
    encode_put_reply, encode_segments, encode_userid_data,
)
from mqcodec.ibmmq.headers import MQMD
from mqcodec.ibmmq.wire import MQOD_LENGTHS
from mqcodec.ibmmq.message import MQMessage, encode_message
from mqcodec.convert import ConvertOptions, Converter
from mqcodec.convert.sinks import TableCollector

from conftest import CAPTURES
from test_mq_calls import ENGINES


def _one_by_one(units) -> list:
    """decode_unit's rows, as DECODED_SCHEMA values."""
    rows = [decode_unit(u, full) for u, full in units]
    return pa.Table.from_pylist(rows, schema=DECODED_SCHEMA).to_pylist()


def _decoder(impl: str):
    """decode_units of implementation ``impl``."""
    return (_impl.pick("calls_batch", impl, what="IBM MQ units reader") or calls_batch).decode_units


def _batch(units, gap: bytes = b"", impl: str = "py") -> list:
    """decode_units' rows for ``units`` packed in one buffer (``gap`` between them)."""
    parts, starts, lens, full, at = [], [], [], [], 0
    for u, f in units:
        parts += [gap, u]
        starts.append(at + len(gap))
        lens.append(len(u))
        full.append(f)
        at += len(gap) + len(u)
    data = b"".join(parts)
    table = _decoder(impl)(data, np.array(starts, dtype=np.int64), np.array(lens, dtype=np.int64),
                         np.array(full, dtype=np.int64))
    assert table.schema == DECODED_SCHEMA and table.num_rows == len(units)
    return table.to_pylist()


def _same(units, impl: str, gap: bytes = b"") -> None:
    ours, theirs = _batch(units, gap, impl), _one_by_one(units)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, (i, units[i][0][:64], {k: (a[k], b[k]) for k in a if a[k] != b[k]})


class _Recorder(Converter):
    """The pure engine, keeping every unit it decodes (bytes, full length)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.units: list = []

    def _unit(self, *args):   # (..., data, length)
        self.units.append((bytes(args[-2]), args[-1]))
        return super()._unit(*args)


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
                                   byte_order=order))                                     # XA
        out += _call_samples(order, f, msg)
    return out


def _od_bytes(order: str, version: int, name: str) -> bytes:
    """An MQOD of ``version`` naming queue ``name`` (version 3 on: resolved names too)."""
    f = "<" if order == _LE else ">"
    od = bytearray(default_od(order, object_name=name))
    od[4:8] = struct.pack(f + "i", version)
    od += bytes(MQOD_LENGTHS[version] - len(od))
    if version >= 3:
        od[240:336] = b"RESOLVED.Q".ljust(48) + b"QM.R".ljust(48)
    return bytes(od)


def _call_samples(order: str, f: str, msg) -> list:
    """A unit of every other type decode_unit reads a body of, in ``order``."""
    out = [encode_conn(qmgr_name="QM1", appl_name="app", appl_type=28, options=0x40, xoptions=1,
                       fcno=encode_fcno(order), byte_order=order),
           encode_conn_reply(qmgr_name="QM1", appl_name="app", appl_type=11, byte_order=order),
           encode_disc(byte_order=order), encode_disc_reply(byte_order=order),
           encode_close(hobj=3, options=2, byte_order=order), encode_close_reply(hobj=3, byte_order=order),
           encode_inq(hobj=4, selectors=[13, 20, 2016], int_attr_count=2, char_attr_length=48, byte_order=order),
           encode_inq_reply(hobj=4, selectors=[13, 20], int_attrs=[7, -1], char_attrs=b"QUEUE.NAME".ljust(48),
                            byte_order=order),
           encode_inq_reply(hobj=4, selectors=[], int_attrs=[], char_attrs=b"", byte_order=order),
           encode_inq_reply(hobj=4, selectors=[1], int_attrs=[9], char_attrs=b"X", byte_order=order)[:-3],
           encode_initial_data(channel_name="SYSTEM.DEF.SVRCONN", qmgr_name="QM1", byte_order=order),
           encode_userid_data(user_id="alice", password="secret", long_user_id="alice@example", byte_order=order),
           encode_userid_data(user_id="bob", byte_order=order),
           encode_async_message(msg, hobj=9, resolved_q_name="ASYNC.Q", byte_order=order, reason=2079),
           encode_async_message(msg, hobj=9, resolved_q_name="", byte_order=order),
           encode_put1(msg, object_name="PUT1.Q", object_qmgr_name="QM2", byte_order=order)]
    for v in (1, 2, 3, 4):
        out.append(encode_open(object_name="Q%d" % v, options=0x2010, od_version=v, byte_order=order))
        out.append(encode_open_reply(object_name="Q%d" % v, options=0x2010, hobj=v, od_version=v,
                                     byte_order=order))
        out.append(encode_put1(msg, od=_od_bytes(order, v, "P%d" % v), byte_order=order))
    od = _od_bytes(order, 3, "SPI.Q")
    for verb, pad in ((12, b"SPOU" + b"\x00" * 12), (1, b""), (12, b"\x00" * 2)):
        out.append(encode_segments(0x8C, api_header(order, 0, 0, 0, 6) + struct.pack(f + "III", verb, 1, 4096)
                                   + pad + od, byte_order=order))
        out.append(encode_segments(0x9C, api_header(order, 0, 0, 0, 6) + struct.pack(f + "III", verb, 2, 0)
                                   + pad + od.replace(b"OD  ", "OD  ".encode("cp500")), byte_order=order))
    user = b"alice"
    out.append(encode_segments(0x0A, b"CAUT" + struct.pack(f + "IIIII", 2, 1024, 256, len(user), 6) + user
                               + b"secret", byte_order=order))                          # CONAUTH_INFO
    out.append(encode_segments(0x0A, b"CAUT" + struct.pack(f + "IIIII", 1, 1024, 256, 0, 0), byte_order=order))
    out.append(encode_segments(0x05, struct.pack(f + "II", 8, 1), byte_order=order))  # STATUS, no value
    out.append(encode_segments(0x05, struct.pack(f + "III", 12, 99, 5), byte_order=order))
    out.append(encode_segments(0x07, struct.pack(f + "I", 12) + b"pingpong", byte_order=order))
    out.append(encode_segments(0x03, struct.pack(f + "II", 8, 4242), byte_order=order))
    out.append(encode_segments(0x0C, struct.pack(f + "IIIII", 5, 6, 2, 0, 1), byte_order=order))
    out.append(encode_segments(0x0F, struct.pack(f + "IiII", 1, 7, 3, 99), byte_order=order))
    out.append(encode_segments(0x0F, struct.pack(f + "IiII", 1, 7, 300, 0), byte_order=order))
    out.append(encode_segments(0x0E, struct.pack(f + "IiIIIIiII", 1, 8, 0, 65536, 4096, 0, -1, 0, 1),
                               byte_order=order))
    out.append(encode_segments(0xB6, struct.pack(">I", 16) + struct.pack(f + "iII", -3, 2, 1), byte_order=order))
    return out


def test_simulator_units_decode_as_one_by_one(simulator_units, impl):
    assert len(simulator_units) > 1000
    _same(simulator_units, impl)
    _same(simulator_units[:50], impl, gap=b"\xff" * 7)


def test_samples_decode_as_one_by_one(impl):
    _same([(u, len(u)) for u in _samples()], impl)


def test_real_capture_units_decode_as_one_by_one(impl):
    """Every unit of the shared real capture (a JMS client: INITIAL_DATA,
    USERID_DATA, CONAUTH_INFO, MQCONN, SPI, MQOPEN, MQINQ, MQPUT, MQCLOSE,
    SOCKET_ACTION, STATUS_DATA, MQDISC, ...), whole and damaged."""
    conv = _Recorder(TableCollector(), ConvertOptions(capture_impl="py"))
    conv.add_capture(str(CAPTURES / "ibmmq_jms_client_1414.pcap"), name="real")
    units = conv.units
    assert len(units) > 200
    _same(units, impl)
    damaged = []
    for u, full in units[::7]:
        for pos in range(min(len(u), 400)):
            b = bytearray(u)
            b[pos] ^= 0xFF
            damaged.append((bytes(b), full))
    _same(damaged, impl)


def test_well_formed_units_are_read_over_arrays(monkeypatch, impl):
    """No well-formed unit of the samples or of the real capture goes to
    decode_unit (one by one, with construct): only EBCDIC structures do."""
    from mqcodec.ibmmq import calls

    conv = _Recorder(TableCollector(), ConvertOptions(capture_impl="py"))
    conv.add_capture(str(CAPTURES / "ibmmq_jms_client_1414.pcap"), name="real")
    samples = [(u, len(u)) for order in ("little", "big")
               for u in _call_samples(order, "<" if order == _LE else ">", _message(b"m", order))]
    sent = []
    monkeypatch.setattr(calls, "decode_unit", lambda unit, length=None: sent.append(unit) or {})
    _batch(conv.units + samples, impl=impl)
    # the SPI replies whose MQOD is EBCDIC (4-aligned: the third spelling's is not, so no MQOD is read)
    assert len(sent) == 4
    assert all("OD  ".encode("cp500") in u and u[17 if u[:4] == b"TSHM" else 9] == 0x9C for u in sent)


def test_the_compiled_pass_reads_every_well_formed_unit_itself(simulator_units, monkeypatch, impl):
    """The compiled twin hands the pure reader only what the pure reader
    hands on to decode_unit: of the simulator's and the shared real
    capture's units (every type they hold) and the samples of every call,
    the SPI replies whose MQOD is EBCDIC."""
    if impl != "c":
        pytest.skip("the compiled twin's own pass")
    handed: list = []
    pure = calls_batch.decode_units

    def counted(data, starts, lengths, full=None):
        handed.extend(bytes(np.frombuffer(data, np.uint8)[a:a + n]) for a, n in zip(starts, lengths))
        return pure(data, starts, lengths, full)

    conv = _Recorder(TableCollector(), ConvertOptions(capture_impl="py"))
    conv.add_capture(str(CAPTURES / "ibmmq_jms_client_1414.pcap"), name="real")
    samples = [(u, len(u)) for order in ("little", "big")
               for u in _call_samples(order, "<" if order == _LE else ">", _message(b"m", order))]
    units = simulator_units + conv.units + samples
    monkeypatch.setattr(calls_batch, "decode_units", counted)
    _same(units, impl)

    def segment_type(u: bytes) -> int:
        return u[9 if u[:4] == b"TSH " else 17]

    assert {segment_type(u) for u, _ in units} >= {0x81, 0x83, 0x84, 0x85, 0x86, 0x89, 0x8C, 0x01, 0x08, 0x04, 0x09}
    assert len(handed) == 4
    assert all("OD  ".encode("cp500") in u and segment_type(u) == 0x9C for u in handed)


def test_both_implementations_give_the_same_table(simulator_units, impl):
    """The compiled twin's table equals the pure reader's to the letter
    (Table.equals: every dictionary column's values in the same order, which
    the rows alone do not show), over units in an order of their own (the
    simulator's, the shared real capture's and the samples, shuffled)."""
    if impl != "c":
        pytest.skip("the compiled twin against the pure reader")
    conv = _Recorder(TableCollector(), ConvertOptions(capture_impl="py"))
    conv.add_capture(str(CAPTURES / "ibmmq_jms_client_1414.pcap"), name="real")
    samples = [(u, len(u)) for order in ("little", "big")
               for u in _call_samples(order, "<" if order == _LE else ">", _message(b"m", order))]
    units = simulator_units + conv.units + samples
    units = [units[i] for i in np.random.default_rng(5).permutation(len(units))]
    data = b"".join(u for u, _ in units)
    lens = np.array([len(u) for u, _ in units], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    full = np.array([f for _, f in units], dtype=np.int64)
    pure, compiled = (_decoder(impl)(data, starts, lens, full) for impl in ("py", "c"))
    assert sum(isinstance(t, pa.DictionaryType) for t in pure.schema.types) >= 10
    assert compiled.equals(pure)


def test_layout_is_the_declarations():
    """calls_batch.LAYOUT's offsets and sizes are those of the construct
    declarations decode_unit parses (the reader keeps its own copy as data,
    so that it loads without construct)."""
    import construct as cs

    from mqcodec.ibmmq import builders, calls, tsh
    from mqcodec.ibmmq.calls_batch import LAYOUT, LENGTHS
    from mqcodec.layout import field_offsets

    decls = {"API_HEADER": tsh.API_HEADER_DECL, "MSH": tsh.MSH_DECL, "XQH_PREFIX": tsh.XQH_PREFIX_DECL,
             "MQPMO": tsh.MQPMO_DECL, "MQGMO": tsh.MQGMO_DECL, "MQOD": tsh.MQOD_DECL, "CONN": builders.CONN_DECL,
             "ID": builders.ID_DECL, "UID": builders.UID_DECL, "CAUT": calls.CAUT_DECL, "INQ": builders.INQ_DECL,
             "SPI": calls.SPI_DECL, "STATUS": calls.STATUS_DECL, "PING": calls.PING_DECL,
             "RESET": calls.RESET_DECL, "SOCKET": calls.SOCKET_DECL, "NOTIF": calls.NOTIF_DECL,
             "MSGREQ": calls.MSGREQ_DECL, "XA": calls.XA_DECL, "ASYNC_HEADER": tsh.ASYNC_HEADER_DECL}
    assert set(decls) == set(LAYOUT)
    def sized(sc):   # a field of the structure's latest version (cs.If: its then-part)
        sub = sc.subcon
        return sub.thensubcon if isinstance(sub, cs.IfThenElse) else sub

    for name, fields in LAYOUT.items():
        for order in ("big", "little"):
            decl = decls[name][order]
            offsets, at = {}, 0
            for sc in decl.subcons:   # up to the first field of variable size (GreedyBytes, Array)
                offsets[sc.name] = at
                try:
                    at += sized(sc).sizeof()
                except cs.SizeofError:
                    break
            assert all(offsets[f] == off for f, off in field_offsets(decl).items())
            subcons = {sc.name: sc for sc in decl.subcons}
            for field, (offset, size) in fields.items():
                assert offsets[field] == offset, (name, field)
                assert sized(subcons[field]).sizeof() == size, (name, field)
    assert LENGTHS["API_HEADER"] == tsh.API_HEADER_LENGTH and LENGTHS["MSH"] == tsh.MSH_LENGTH
    assert LENGTHS["XQH_PREFIX"] == tsh.XQH_PREFIX_LENGTH
    assert (LENGTHS["ASYNC_SHORT"], LENGTHS["ASYNC_FIXED"]) == (tsh.ASYNC_HEADER_SHORT_LENGTH,
                                                                 tsh.ASYNC_HEADER_FIXED_LENGTH)
    assert (LENGTHS["CONN_SHORT"], LENGTHS["CONN"]) == (calls.CONN_SHORT_LENGTH, calls.CONN_LENGTH)
    assert (LENGTHS["ID_SHORT"], LENGTHS["ID_V4"], LENGTHS["ID_EXT"]) == (
        calls.ID_SHORT_LENGTH, calls.ID_V4_LENGTH, calls.ID_EXT_LENGTH)
    assert (LENGTHS["UID"], LENGTHS["UID_LONG"], LENGTHS["CAUT"]) == (calls.UID_LENGTH, calls.UID_LONG_LENGTH,
                                                                      calls.CAUT_LENGTH)
    for key in ("INQ", "SPI", "STATUS", "RESET", "SOCKET", "NOTIF", "MSGREQ", "XA"):
        assert LENGTHS[key] == getattr(calls, key + "_LENGTH"), key


def test_empty_batch_and_tiny_units(impl):
    assert _decoder(impl)(b"", np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).num_rows == 0
    _same([(b"", 0), (b"T", 1), (b"TSHM", 4), (b"TSHM" + b"\x00" * 20, 24), (b"XXXX" * 10, 40)], impl)


def test_strided_and_listed_arguments(impl):
    """Starts and lengths as strided views and as lists, units in any order
    and overlapping in the buffer: the rows of the units they name."""
    units = [u for u in _samples()[:6]]
    data = b"".join(units)
    at = np.concatenate([[0], np.cumsum([len(u) for u in units])[:-1]]).astype(np.int64)
    lens = np.array([len(u) for u in units], dtype=np.int64)
    order = np.array([5, 0, 3, 3, 1], dtype=np.int64)
    want = _one_by_one([(units[i], len(units[i])) for i in order])
    decode = _decoder(impl)
    assert decode(data, np.repeat(at[order], 2)[::2], np.repeat(lens[order], 2)[::2]).to_pylist() == want
    assert decode(data, at[order].tolist(), lens[order].tolist()).to_pylist() == want


def test_every_cut_decodes_as_one_by_one(impl):
    """Each sample cut at every length: as a unit of that length and as the
    prefix of a longer unit (past what the engines keep: not an error)."""
    units = []
    for u in _samples():
        for cut in range(len(u) + 1):
            units.append((u[:cut], cut))
            units.append((u[:cut], len(u)))
    _same(units, impl)


def test_damaged_bytes_decode_as_one_by_one(impl):
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
    _same(units, impl)


def test_put_message_records_and_other_ccsids(impl):
    """An MQPMO version 2 with put message records (decode_unit's sizes),
    and names in a TSH CCSID that is not ASCII (each decoded by its CCSID)."""
    msg = _message(b"x")
    pmo = default_pmo(_LE, version=2, RecsPresent=2, PutMsgRecFields=1, PutMsgRecOffset=152)
    units = [encode_put(msg, pmo=pmo + b"\x00" * 64, hobj=1, byte_order=_LE)]
    for ccsid in (500, 1208, 37, 850, 0, -5, 4321):
        pmo = default_pmo(_LE, version=1, ResolvedQName="Q.\u00e9".encode("cp500").ljust(48, b"\x40"))
        units.append(encode_put(msg, pmo=pmo, hobj=1, byte_order=_LE, ccsid=ccsid))
    _same([(u, len(u)) for u in units], impl)


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
