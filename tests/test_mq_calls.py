"""mq_calls: every IBM MQ unit a row, requests paired with replies, queues
named through object handles.

Oracles: tshark on the shared real capture (every unit tshark shows has a row
with tshark's values; every MQPUT/MQGET names the object tshark shows in the
MQOPEN -- or the SPI OPEN reply -- that gave its Hobj, followed here from
tshark's own fields), a conversation built unit by unit with the framing
encoders (known queues, failures, latencies), both capture engines, and
DuckDB answering the analysts' questions in one plain query each.
"""
from __future__ import annotations

import shutil
import struct
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from mqcodec.capture.writer import TcpConversation, write_pcap
from mqcodec.ibmmq import calls as C
from mqcodec.ibmmq.builders import (api_header, default_gmo, default_od, encode_get_reply, encode_put,
                                    encode_put_reply, encode_segments)
from mqcodec.ibmmq.framing import MQStreamFramer, Unit
from mqcodec.ibmmq.headers import MQMD
from mqcodec.ibmmq.message import MQMessage, encode_message
from mqcodec.convert import ConvertOptions, Converter, convert
from mqcodec.convert.sinks import TableCollector
from mqcodec.convert.tables import table_schema

REAL = Path(__file__).resolve().parents[2] / "shared" / "captures" / "ibmmq_jms_client_1414.pcap"
TSHARK = shutil.which("tshark")
FIELDS = ["frame.number", "tcp.stream", "tcp.srcport", "mq.tsh.type", "mq.tsh.convid", "mq.tsh.requestid", "mq.api.reasoncode",
          "mq.api.hobj", "mq.od.objname", "mq.conn.appname", "mq.id.channelname", "mq.uid.userid",
          "mq.api.completioncode", "mq.spi.verb", "mq.tsh.cflags1", "mq.tsh.seglength",
          "mq.id.faplevel", "mq.id.hbint", "mq.id.maxmsgsize", "mq.id.maxtrsize", "mq.id.qm", "mq.conn.qm",
          "mq.uid.longuserid", "mq.inq.sel"]


def _engines():
    out = ["py"]
    try:
        from mqcodec._ext import capture_core  # noqa: F401
        out.append("c")
    except ImportError:
        out.append(pytest.param("c", marks=pytest.mark.skip(reason="the compiled capture core is not built")))
    return out


ENGINES = _engines()


@pytest.fixture
def Tracker(impl):
    """CallTracker of each implementation: the pure one and its compiled twin
    (mqcodec._ext.conversation, the same source compiled)."""
    from mqcodec import _impl
    from mqcodec.ibmmq import conversation

    return (_impl.pick("conversation", impl) or conversation).CallTracker


def _convert(source, engine, name="c", **options):
    tables = TableCollector()
    conv = Converter(tables, ConvertOptions(capture_impl=engine, **options))
    conv.add_capture(source, name=name)
    return tables, conv.report()


def _tshark_units(path):
    out = subprocess.run([TSHARK, "-r", str(path), "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"]
                         + [a for f in FIELDS for a in ("-e", f)], capture_output=True, text=True, check=True).stdout
    units = []
    for line in out.splitlines():
        cols = line.split("\t")
        u = dict(zip(FIELDS, cols))
        if len(cols) == len(FIELDS) and u["mq.tsh.type"]:
            # tshark shows every TSH of a frame, those of a reassembled unit too (its
            # segments, then its first TSH again): a unit of a type that may span
            # (API types, ASYNC_MESSAGE) is its segment with CtlFlag1 LAST
            types = []
            for t, f in zip(u["mq.tsh.type"].split("|"), u["mq.tsh.cflags1"].split("|")):
                t, f = int(t, 16), int(f, 16)
                if (t > 0x80 or t == 0x0D) and not f & 0x20:
                    continue
                types.append(t)
            u["types"] = types
            units.append(u)
    return units


def _s(v):
    return (v or "").strip()


def _matched(units, rows):
    """tshark's units and our rows, paired: tshark shows a unit in the frame
    that completes it, our ``frame`` is the frame of its first byte, so both
    are taken in stream order per TCP direction (tshark's: frame order; ours:
    stream offset order; frames holding several units: in their order)."""
    theirs = defaultdict(list)
    for u in sorted(units, key=lambda u: int(u["frame.number"])):
        for i, t in enumerate(u["types"]):
            theirs[(int(u["tcp.stream"]), int(u["tcp.srcport"]))].append((u, i, t))
    ours = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r["tcp_stream"], r["src_port"], r["stream_offset"])):
        ours[(r["tcp_stream"], r["src_port"])].append(r)
    assert sorted(theirs) == sorted(ours)
    pairs = []
    for key, seq in theirs.items():
        assert [t for _, _, t in seq] == [r["segment_type"] for r in ours[key]], key
        pairs += [(u, i, r) for (u, i, _), r in zip(seq, ours[key])]
    return pairs


# ---------------------------------------------------------------------------
# tshark, on the real capture
# ---------------------------------------------------------------------------
@pytest.mark.skipif(TSHARK is None or not REAL.exists(), reason="tshark or the shared capture is missing")
@pytest.mark.parametrize("engine", ENGINES)
def test_every_unit_tshark_shows_has_a_row_with_its_values(engine):
    tables, report = _convert(REAL, engine)
    rows = tables.table("mq_calls").to_pylist()
    units = _tshark_units(REAL)
    assert len(units) == len(rows) == 252
    checked = _differential(units, rows)
    assert checked["api"] > 150 and checked["mq.id.channelname"] == 20 and checked["mq.uid.userid"] == 5
    assert checked["mq.od.objname"] > 10 and checked["frame"] > 240
    assert checked["mq.id.hbint"] == checked["mq.id.qm"] == 20 and checked["mq.inq.sel"] == 24
    assert checked["mq.uid.longuserid"] == 5
    # the reasons of failed calls: tshark's
    failed = Counter(int(u["mq.api.reasoncode"]) for u in units
                     if u["mq.api.completioncode"] and int(u["mq.api.completioncode"]) == 2)
    assert failed == Counter({2035: 3})
    assert report["failed_calls_by_reason"] == {"MQRC_NOT_AUTHORIZED": 3}
    assert sum(report["calls_by_type"].values()) == 252
    assert report["calls_by_type"]["SPI_REPLY"] == 16


def _differential(units, rows) -> Counter:
    """Every unit tshark shows has its row, with tshark's values."""
    checked = Counter()
    for u, i, r in _matched(units, rows):
        frame = int(u["frame.number"])
        types = u["types"]
        assert r["frame"] <= frame
        if len(types) != 1:
            continue
        checked["frame"] += r["frame"] == frame
        assert r["conversation_id"] == (int(u["mq.tsh.convid"]) if u["mq.tsh.convid"] else None), frame
        assert r["request_id"] == (int(u["mq.tsh.requestid"]) if u["mq.tsh.requestid"] else None), frame
        if u["mq.api.reasoncode"]:
            assert r["reason_code"] == int(u["mq.api.reasoncode"]), frame
            assert r["completion_code"] == int(u["mq.api.completioncode"]), frame
            assert r["hobj"] & 0xFFFFFFFF == int(u["mq.api.hobj"], 16), frame
            checked["api"] += 1
        else:
            assert r["reason_code"] is None and r["hobj"] is None or r["segment_type"] in (0x0D, 0x0E, 0x0F)
        for field, column in (("mq.od.objname", "od_object_name"), ("mq.conn.appname", "conn_appl_name"),
                              ("mq.id.channelname", "id_channel_name"), ("mq.uid.userid", "uid_user_id")):
            if u[field]:
                assert _s(r[column]) == _s(u[field]), (frame, field)
                checked[field] += 1
        for field, column in (("mq.id.faplevel", "id_fap_level"), ("mq.id.hbint", "id_hb_interval"),
                              ("mq.id.maxmsgsize", "id_max_msg_size"), ("mq.id.maxtrsize", "id_max_tr_size")):
            if u[field]:
                assert r[column] == int(u[field]), (frame, field)
                checked[field] += 1
        for field, column in (("mq.id.qm", "id_q_mgr_name"), ("mq.conn.qm", "conn_q_mgr_name"),
                              ("mq.uid.longuserid", "uid_long_user_id")):
            if u[field]:
                assert _s(r[column]) == _s(u[field]), (frame, field)
                checked[field] += 1
        if u["mq.inq.sel"]:
            assert r["inq_selectors"] == [int(x) for x in u["mq.inq.sel"].split("|")], frame
            checked["mq.inq.sel"] += 1
        if u["mq.spi.verb"]:
            assert r["spi_verb"] == int(u["mq.spi.verb"])
            assert r["spi_verb_name"] == C.SPI_VERBS[r["spi_verb"]]
        assert r["segment_type_name"] == C.segment_type_name(types[0])
    return checked


@pytest.mark.skipif(TSHARK is None or not REAL.exists(), reason="tshark or the shared capture is missing")
@pytest.mark.parametrize("engine", ENGINES)
def test_puts_and_gets_name_the_object_their_handle_was_opened_on(engine):
    tables, _ = _convert(REAL, engine)
    rows = tables.table("mq_calls").to_pylist()
    assert _queues_against_tshark(REAL, rows) == ["UNIFORM.QUEUE"] * 8
    by_key = {r["call_key"]: r for r in rows}
    messages = tables.table("mq_messages").to_pylist()
    puts = [m for m in messages if m["kind"] == "MQPUT"]
    assert len(puts) == 8 and all(m["queue_name"] == by_key[m["call_key"]]["queue_name"] == "UNIFORM.QUEUE"
                                  for m in puts)
    assert all(by_key[m["call_key"]]["stream_offset"] == m["stream_offset"] for m in messages)


@pytest.mark.skipif(TSHARK is None or not REAL.exists(), reason="tshark or the shared capture is missing")
@pytest.mark.parametrize("engine", ENGINES)
def test_every_call_names_the_queue_manager_of_its_connection(engine):
    """Who talked to which queue manager, from tshark's fields alone: in each
    TCP stream, the queue manager named by the last INITIAL_DATA (``mq.id.qm``,
    not blank or "*": a client asks for "*", its server answers with its name)
    at or before a unit's frame.  Every row that names no object of its own
    (MQCONN, MQINQ on the queue manager object, MQDISC, SPI, SOCKET_ACTION...)
    carries it; rows before it carry none."""
    tables, _ = _convert(REAL, engine)
    rows = tables.table("mq_calls").to_pylist()
    named = defaultdict(list)   # tcp.stream -> [(frame, queue manager)]
    for u in sorted(_tshark_units(REAL), key=lambda u: int(u["frame.number"])):
        for t, qm in zip(u["types"], u["mq.id.qm"].split("|") if u["mq.id.qm"] else []):
            if t == 0x01 and _s(qm) not in ("", "*"):
                named[int(u["tcp.stream"])].append((int(u["frame.number"]), _s(qm)))
    checked = Counter()
    for r in rows:
        if r["queue_name"] is not None:
            continue
        known = [qm for frame, qm in named[r["tcp_stream"]] if frame <= r["frame"]]
        assert r["queue_manager"] == (known[-1] if known else None), (r["frame"], r["segment_type_name"])
        checked[r["segment_type_name"], r["queue_manager"]] += 1
    # a uniform cluster: the client connects to QM1, QM2 and QM3; every MQCONN, MQOPEN of the
    # queue manager object and MQINQ on it says which; the clients' first INITIAL_DATA asks for "*"
    assert {qm for (t, qm) in checked if t == "MQCONN"} == {"QM1", "QM2", "QM3"}
    assert not any(qm is None for (t, qm) in checked if t in ("MQCONN", "MQOPEN", "MQINQ", "MQDISC"))
    assert checked["INITIAL_DATA", None] >= 1
    assert sum(n for (_, qm), n in checked.items() if qm is not None) > 200


@pytest.mark.skipif(TSHARK is None or not REAL.exists(), reason="tshark or the shared capture is missing")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("capture", ["real", "simulated"])
def test_every_unit_says_who_from_tsharks_fields(tmp_path, engine, capture):
    """Who, from tshark's fields alone, on every row: in each TCP stream the
    channel of the last INITIAL_DATA (``mq.id.channelname``) and the user of
    the last USERID_DATA (``mq.uid.longuserid``, else ``mq.uid.userid``) at or
    before the unit's frame; in each conversation (``mq.tsh.convid``) the
    application of its last MQCONN (``mq.conn.appname``; tshark does not
    decode the real capture's JMS MQCONNs, so there the simulator's alone)."""
    from mqcodec import synth

    path = REAL
    if capture == "simulated":
        path = tmp_path / "synth.pcap"
        with open(path, "wb") as f:
            write_pcap(f, [(p.ts_ns, p.frame) for p in synth.generate(4, 40)])
    tables = _convert(path, engine)[0]
    rows = tables.table("mq_calls").to_pylist()
    # a message row says who as its unit's mq_calls row does
    by_key = {r["call_key"]: r for r in rows}
    messages = tables.table("mq_messages").to_pylist()
    who = ("channel_name", "user_id", "appl_name")
    assert messages and all([m[k] for k in who] == [by_key[m["call_key"]][k] for k in who] for m in messages)
    assert any(m["appl_name"] for m in messages) and any(m["channel_name"] for m in messages)
    channels, users, appls = defaultdict(list), defaultdict(list), defaultdict(list)
    for u in sorted(_tshark_units(path), key=lambda u: int(u["frame.number"])):
        frame, stream = int(u["frame.number"]), int(u["tcp.stream"])
        values = lambda field: [_s(v) for v in u[field].split("|") if _s(v)]  # noqa: E731
        if 0x01 in u["types"] and values("mq.id.channelname"):
            channels[stream].append((frame, values("mq.id.channelname")[-1]))
        if 0x08 in u["types"] and (values("mq.uid.longuserid") or values("mq.uid.userid")):
            users[stream].append((frame, (values("mq.uid.longuserid") or values("mq.uid.userid"))[-1]))
        if 0x81 in u["types"] and values("mq.conn.appname"):
            appls[stream, int(u["mq.tsh.convid"].split("|")[-1] or -1)].append((frame, values("mq.conn.appname")[-1]))

    def last(seen, frame):
        known = [v for f, v in seen if f <= frame]
        return known[-1] if known else None

    checked = Counter()
    for r in rows:
        stream, frame = r["tcp_stream"], r["frame"]
        assert r["channel_name"] == last(channels[stream], frame), (frame, r["segment_type_name"])
        assert r["user_id"] == last(users[stream], frame), (frame, r["segment_type_name"])
        conv = r["conversation_id"] if r["conversation_id"] is not None else -1
        if capture == "simulated":
            assert r["appl_name"] == last(appls[stream, conv], frame), (frame, r["segment_type_name"])
        checked.update(k for k in ("channel_name", "user_id", "appl_name") if r[k] is not None)
    assert checked["channel_name"] > 0.8 * len(rows) and checked["user_id"] > 0.5 * len(rows)
    assert checked["appl_name"] > 0.5 * len(rows)
    if capture == "real":   # a Spring JMS client: its two applications, user root, channel APP.SVRCONN
        assert {r["appl_name"] for r in rows} >= {"SPRING-1757761891077-C1", "UNIFORM-1757761925905-C1"}
        assert {r["user_id"] for r in rows} == {None, "root"} and {r["channel_name"] for r in rows} == {"APP.SVRCONN"}


def _queues_against_tshark(path, rows) -> list:
    """Followed from tshark's fields alone: MQOPEN's object name (by request
    id) -> MQOPEN_REPLY's Hobj; SPI_REPLY's object name -> its Hobj; the
    MQPUT/MQGET that use the Hobj in the same conversation (MQCLOSE ends it).
    Frames where tshark shows one unit only; each is our row of its TCP
    direction and type that starts last at or before that frame.  Returns the
    queue names checked (one per MQPUT/MQGET)."""
    units = sorted(_tshark_units(path), key=lambda u: int(u["frame.number"]))
    opening, handles, expected = {}, {}, []

    def first(u, field):
        return u[field].split("|")[0]
    for u in units:
        if len(u["types"]) != 1:
            continue
        t = u["types"][0]
        key = (u["tcp.stream"], first(u, "mq.tsh.convid"))
        hobj = int(first(u, "mq.api.hobj"), 16) if u["mq.api.hobj"] else None
        failed = u["mq.api.completioncode"] and int(first(u, "mq.api.completioncode")) == 2
        if t == 0x83:
            opening[key + (first(u, "mq.tsh.requestid"),)] = _s(first(u, "mq.od.objname")) or None
        elif t == 0x93:
            name = opening.pop(key + (first(u, "mq.tsh.requestid"),), None)
            if not failed:
                handles[key + (hobj,)] = name
        elif t == 0x9C and u["mq.od.objname"] and not failed:
            handles[key + (hobj,)] = _s(first(u, "mq.od.objname"))
        elif t in (0x85, 0x86):
            expected.append((u, t, handles.get(key + (hobj,))))
        elif t == 0x84 and not failed:
            handles.pop(key + (hobj,), None)
    by_direction = defaultdict(list)
    for r in rows:
        by_direction[(r["tcp_stream"], r["src_port"])].append(r)
    seen = []
    for u, t, name in expected:
        frame = int(u["frame.number"])
        ours = [r for r in by_direction[(int(u["tcp.stream"]), int(u["tcp.srcport"]))]
                if r["segment_type"] == t and r["frame"] <= frame]
        r = max(ours, key=lambda r: (r["frame"], r["stream_offset"]))
        assert r["queue_name"] == name, frame
        seen.append(name)
    return seen


@pytest.mark.skipif(not REAL.exists(), reason="the shared capture is missing")
def test_replies_point_at_their_requests():
    tables, _ = _convert(REAL, "py")
    rows = tables.table("mq_calls").to_pylist()
    by_key = {r["call_key"]: r for r in rows}
    replies = [r for r in rows if C.is_reply(r["segment_type"])]
    paired = [r for r in replies if r["request_call_key"] is not None]
    assert len(paired) >= len(replies) - 1       # one MQDISC_REPLY answers no MQDISC of the capture
    for r in paired:
        q = by_key[r["request_call_key"]]
        assert q["segment_type"] == C.request_type_of(r["segment_type"])
        assert (q["tcp_stream"], q["conversation_id"], q["request_id"]) == \
            (r["tcp_stream"], r["conversation_id"], r["request_id"])
        assert (q["src_ip"], q["src_port"]) == (r["dst_ip"], r["dst_port"])
        delta = r["ts"] - q["ts"]
        us = delta.days * 86400_000_000 + delta.seconds * 1_000_000 + delta.microseconds
        assert r["latency_us"] == us >= 0
        assert q["replied"] is True and q["reply_call_key"] == r["call_key"]
    requests = [r for r in rows if C.is_request(r["segment_type"])]
    assert all(r["replied"] is not None for r in requests)
    assert all(r["replied"] is None for r in rows if not C.is_request(r["segment_type"]))


# ---------------------------------------------------------------------------
# a conversation built unit by unit
# ---------------------------------------------------------------------------
_LE = "little"


def _api_unit(t, body=b"", *, req, cc=0, rc=0, hobj=0, conv=1):
    return encode_segments(t, api_header(_LE, 36 + 16 + len(body), cc, rc, hobj) + body, byte_order=_LE,
                           conversation_id=conv, request_id=req)


def _message(text: bytes) -> MQMessage:
    md = MQMD(Version=1, Encoding=546, CodedCharSetId=1208, Format="MQSTR", PutApplName="t")
    return MQMessage(md, [], text, md_encoding=546, md_ccsid=819)


def _conversation(step_ns=1_000_000):
    """MQOPEN APP.Q1 (Hobj 5), MQOPEN NO.SUCH.Q (2085), MQPUT, MQGET with a
    message, MQGET 2033, MQINQ, MQCLOSE, an MQGET that never gets a reply."""
    c = TcpConversation(("10.1.0.1", 41000), ("10.1.0.2", 1414), mss=1400, start_ns=1_700_000_000 * 10**9,
                        step_ns=step_ns)
    pk = c.handshake()
    msg = _message(b"hello")
    md_bytes = encode_message(_message(b""))
    gmo = default_gmo(_LE, version=2, WaitInterval=500)
    od1 = default_od(_LE, object_name="APP.Q1", object_qmgr_name="QM9")
    od2 = default_od(_LE, object_name="NO.SUCH.Q")
    opts = struct.pack("<i", 0x2010)
    pk += c.send(0, _api_unit(0x83, od1 + opts, req=1))
    pk += c.send(1, _api_unit(0x93, od1 + opts, req=1, hobj=5))
    pk += c.send(0, _api_unit(0x83, od2 + opts, req=2))
    pk += c.send(1, _api_unit(0x93, od2 + opts, req=2, cc=2, rc=2085, hobj=-1))
    pk += c.send(0, encode_put(msg, hobj=5, conversation_id=1, request_id=3, byte_order=_LE))
    pk += c.send(1, encode_put_reply(msg, hobj=5, conversation_id=1, request_id=3, byte_order=_LE))
    pk += c.send(0, _api_unit(0x85, md_bytes + gmo + struct.pack("<i", 4096), req=4, hobj=5))
    pk += c.send(1, encode_get_reply(msg, hobj=5, conversation_id=1, request_id=4, byte_order=_LE, gmo=gmo))
    pk += c.send(0, _api_unit(0x85, md_bytes + gmo + struct.pack("<i", 4096), req=5, hobj=5))
    pk += c.send(1, _api_unit(0x95, md_bytes + gmo + struct.pack("<i", 0), req=5, hobj=5, cc=2, rc=2033))
    pk += c.send(0, _api_unit(0x89, struct.pack("<iii", 2, 0, 0) + struct.pack("<ii", 3, 20), req=6, hobj=5))
    pk += c.send(1, _api_unit(0x99, struct.pack("<iii", 2, 2, 0) + struct.pack("<iiii", 3, 20, 1, 5000),
                              req=6, hobj=5))
    pk += c.send(0, _api_unit(0x84, struct.pack("<i", 0), req=7, hobj=5))
    pk += c.send(1, _api_unit(0x94, req=7, hobj=-1))
    pk += c.send(0, _api_unit(0x85, md_bytes + gmo + struct.pack("<i", 4096), req=8, hobj=5))
    return pk


@pytest.fixture(scope="module")
def conversation_pcap(tmp_path_factory):
    path = tmp_path_factory.mktemp("conv") / "conversation.pcap"
    with open(path, "wb") as f:
        write_pcap(f, _conversation())
    return path


@pytest.mark.parametrize("engine", ENGINES)
def test_a_conversation(conversation_pcap, engine):
    tables, report = _convert(conversation_pcap, engine)
    rows = tables.table("mq_calls").to_pylist()
    if TSHARK is not None:
        units = _tshark_units(conversation_pcap)
        assert len(units) == len(rows)
        checked = _differential(units, rows)
        assert checked["api"] == 15 and checked["mq.od.objname"] == 4
        # tshark's own fields say which queue each MQPUT/MQGET uses (the last MQGET: none, closed)
        assert _queues_against_tshark(conversation_pcap, rows) == ["APP.Q1"] * 3 + [None]
    names = [r["segment_type_name"] for r in rows]
    assert names == ["MQOPEN", "MQOPEN_REPLY", "MQOPEN", "MQOPEN_REPLY", "MQPUT", "MQPUT_REPLY", "MQGET",
                     "MQGET_REPLY", "MQGET", "MQGET_REPLY", "MQINQ", "MQINQ_REPLY", "MQCLOSE", "MQCLOSE_REPLY",
                     "MQGET"]
    q = [r["queue_name"] for r in rows]
    assert q[:2] == ["APP.Q1", "APP.Q1"] and q[2:4] == ["NO.SUCH.Q", "NO.SUCH.Q"]
    assert all(name == "APP.Q1" for name in q[4:14])
    assert rows[0]["queue_manager"] == "QM9" and rows[4]["queue_manager"] == "QM9"
    assert q[14] is None                       # the handle was closed before this MQGET
    assert rows[3]["reason_name"] == "MQRC_UNKNOWN_OBJECT_NAME" and rows[3]["completion_code_name"] == "MQCC_FAILED"
    assert rows[9]["reason_name"] == "MQRC_NO_MSG_AVAILABLE"
    assert rows[6]["gmo_wait_interval"] == 500 and rows[7]["data_length"] == 5
    assert rows[10]["inq_selectors"] == [3, 20] and rows[11]["inq_int_values"] == [1, 5000]
    assert rows[0]["od_object_type_name"] == "MQOT_Q" and rows[0]["open_options"] == 0x2010
    for i in range(0, 14, 2):
        assert rows[i + 1]["request_call_key"] == rows[i]["call_key"]
        assert rows[i]["replied"] is True and rows[i]["reply_call_key"] == rows[i + 1]["call_key"]
        assert rows[i + 1]["latency_us"] > 0
    assert rows[14]["replied"] is False and rows[14]["reply_call_key"] is None
    assert report["failed_calls_by_reason"] == {"MQRC_UNKNOWN_OBJECT_NAME": 1, "MQRC_NO_MSG_AVAILABLE": 1}
    # in capture order (by frame, then stream offset)
    msgs = sorted(tables.table("mq_messages").to_pylist(), key=lambda m: (m["frame"], m["stream_offset"]))
    assert [(m["kind"], m["queue_name"]) for m in msgs] == [
        ("MQPUT", "APP.Q1"), ("MQPUT_REPLY", "APP.Q1"), ("MQGET", "APP.Q1"), ("MQGET_REPLY", "APP.Q1"),
        ("MQGET", "APP.Q1"), ("MQGET_REPLY", "APP.Q1"), ("MQGET", None)]
    assert all(m["call_key"] == rows[i]["call_key"] for m, i in zip(msgs, (4, 5, 6, 7, 8, 9, 14)))


def test_duckdb_answers_in_one_plain_query(conversation_pcap, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    out = tmp_path / "out"
    inputs = [str(conversation_pcap)] + ([str(REAL)] if REAL.exists() else [])
    convert(inputs, str(out))
    calls = "read_parquet('%s/mq_calls/**/*.parquet')" % out
    messages = "read_parquet('%s/mq_messages/**/*.parquet')" % out
    per_queue = dict(duckdb.sql(
        "SELECT queue_name, count(*) FROM %s WHERE kind IN ('MQPUT', 'MQPUT1', 'MESSAGE_DATA') "
        "GROUP BY queue_name" % messages).fetchall())
    expected = {"APP.Q1": 1}
    if REAL.exists():
        expected["UNIFORM.QUEUE"] = 8
    assert per_queue == expected
    failed = dict(duckdb.sql("SELECT reason_name, count(*) FROM %s WHERE completion_code_name = 'MQCC_FAILED' "
                             "GROUP BY reason_name" % calls).fetchall())
    assert failed == dict({"MQRC_UNKNOWN_OBJECT_NAME": 1, "MQRC_NO_MSG_AVAILABLE": 1},
                          **({"MQRC_NOT_AUTHORIZED": 3} if REAL.exists() else {}))
    latency = dict(duckdb.sql("SELECT queue_name, median(latency_us) FROM %s WHERE segment_type_name = "
                              "'MQGET_REPLY' GROUP BY queue_name" % calls).fetchall())
    assert latency == {"APP.Q1": 2000}        # 1 ms per frame: the request, its ACK, the reply
    unreplied = duckdb.sql("SELECT count(*) FROM %s WHERE replied = false" % calls).fetchall()[0][0]
    assert unreplied >= 1
    # who connected to which queue manager (the real capture: a client of a uniform cluster;
    # test_every_call_names_the_queue_manager_of_its_connection checks the names against tshark)
    connected = duckdb.sql("SELECT queue_manager, count(*) FROM %s WHERE segment_type_name = 'MQCONN' "
                           "GROUP BY ALL" % calls).fetchall()
    assert dict(connected) == ({"QM1": 5, "QM2": 7, "QM3": 1} if REAL.exists() else {})
    # which calls failed, why, and whose (test_every_unit_says_who_from_tsharks_fields checks the
    # users and applications against tshark): the real capture's Spring client was refused by all three
    whose = duckdb.sql("SELECT user_id, appl_name, segment_type_name, reason_name, count(*) FROM %s "
                       "WHERE completion_code_name = 'MQCC_FAILED' AND user_id IS NOT NULL GROUP BY ALL" % calls)
    assert whose.fetchall() == ([("root", "SPRING-1757761891077-C1", "MQCONN_REPLY", "MQRC_NOT_AUTHORIZED", 3)]
                                if REAL.exists() else [])


@pytest.mark.skipif(TSHARK is None or not REAL.exists(), reason="tshark or the shared capture is missing")
@pytest.mark.parametrize("engine", ENGINES)
def test_text_bodies_are_the_bytes_tshark_shows(engine):
    """What each message carried: ``body_text`` of the real capture's JMS text
    messages (MQRFH2 then MQSTR, CCSID 1208) is the message data tshark shows
    (``data.data``, the bytes after the headers), as UTF-8; rows without a text
    body (the md-only MQPUT_REPLYs) have none."""
    out = subprocess.run([TSHARK, "-r", str(REAL), "-Y", "mq.tsh.type == 0x86", "-T", "fields", "-e", "frame.number",
                          "-e", "data.data"], capture_output=True, text=True, check=True).stdout
    theirs = {int(f): bytes.fromhex(d).decode("utf-8") for f, d in (line.split("\t") for line in out.splitlines())}
    tables, _ = _convert(REAL, engine)
    rows = tables.table("mq_messages").to_pylist()
    ours = {r["frame"]: r["body_text"] for r in rows if r["kind"] == "MQPUT"}
    assert ours == theirs and len(ours) == 8 and all(t.startswith("Connection") for t in ours.values())
    assert all(r["body_text"] is None for r in rows if r["kind"] == "MQPUT_REPLY")


@pytest.mark.parametrize("engine", ENGINES)
def test_text_bodies_in_their_ccsid(tmp_path, engine):
    """EBCDIC and other CCSIDs: each body is text the encoder made with Python's
    own codec (cp500, cp1140 with the euro sign, cp1252, UTF-8); a CCSID without a
    converter and a body that is not MQSTR give null."""
    texts = [(500, "cp500", "Gr\u00fc\u00dfe aus Z\u00fcrich, [1] {2}"), (1140, "cp1140", "Preis: 12\u20ac"),
             (1252, "cp1252", "caf\u00e9 \u2013 na\u00efve"), (1208, "utf-8", "\u65e5\u672c\u8a9e \u2713"),
             (943, "cp932", "\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8"), (1200, "utf-16-be", "\u00e9t\u00e9 \u2600"),
             (1208, "surrogateescape", "bad \udcff\udcfe UTF-8"),
             (4242, None, "unknown CCSID"), (1208, "utf-8", "not text")]
    c = TcpConversation(("10.1.0.1", 41001), ("10.1.0.2", 1414), mss=1400)
    pk = c.handshake()
    for i, (ccsid, codec, text) in enumerate(texts):
        fmt = "MQSTR" if text != "not text" else "MYFMT"   # an application's own format
        md = MQMD(Version=1, Encoding=546, CodedCharSetId=ccsid, Format=fmt, PutApplName="t")
        body = text.encode("utf-8", "surrogateescape") if codec == "surrogateescape" else text.encode(codec or "ascii")
        pk += c.send(0, encode_put(MQMessage(md, [], body, md_encoding=546, md_ccsid=819), hobj=5,
                                   conversation_id=1, request_id=i + 1, byte_order=_LE))
    # the reply to an MQPUT carries its MQMD alone (Format MQSTR, no body): no text
    pk += c.send(1, encode_put_reply(_message(b"hello"), hobj=5, conversation_id=1, request_id=1, byte_order=_LE))
    path = tmp_path / "texts.pcap"
    with open(path, "wb") as f:
        write_pcap(f, pk)
    tables, _ = _convert(path, engine)
    rows = tables.table("mq_messages").to_pylist()
    assert [r["kind"] for r in rows] == ["MQPUT"] * len(texts) + ["MQPUT_REPLY"]
    assert [r["body_ccsid"] for r in rows] == [t[0] for t in texts] + [1208]
    assert rows[-1]["body_format"] == "MQSTR" and rows[-1]["body_length"] == 0
    # bytes that are not UTF-8 become U+FFFD, as Python's decoder replaces them
    bad = texts[6][2].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    assert bad == "bad \ufffd\ufffd UTF-8"
    assert [r["body_text"] for r in rows] == [t[2] for t in texts[:6]] + [bad, None, None, None]


@pytest.mark.parametrize("gather", [None, 700, 1])
def test_body_text_equals_decode_text_body_by_body(gather, monkeypatch):
    """The vectorized body_text (bodies gathered from one buffer, single-byte CCSIDs
    through their tables, UTF-8 through Arrow's check) against ``decode_text`` of
    each body on its own: random bodies of every single-byte CCSID and some others,
    empty bodies, bodies cut by their record's end, a sliced input, rows that are
    not text, failed or MQMD-only; gathered in pieces of at most ``gather`` bytes
    (a larger body decoded alone)."""
    import random

    import pyarrow as pa

    from mqcodec.ccsid import CCSID_CODECS, ICU_CONVERTERS, decode_text, is_single_byte
    from mqcodec.convert import converter
    from mqcodec.convert.converter import _body_text

    if gather is not None:
        monkeypatch.setattr(converter, "_GATHER_BYTES", gather)

    rnd = random.Random(11)
    pool = sorted(c for c in set(CCSID_CODECS) | set(ICU_CONVERTERS) if is_single_byte(c)) + [1208, 943, 1200, 4242]
    records, fmts, errs, offs, lens, ccsids, md_only, expected = [], [], [], [], [], [], [], []
    for i in range(3000):
        body = bytes(rnd.randrange(256) for _ in range(rnd.choice([0, 1, 5, 40, 300])))
        if i % 7 == 0:
            body = "h\u00e9llo \u2713 w\u00f6rld".encode("utf-8")
        head = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 50)))
        ccsid = rnd.choice(pool)
        length = len(body) + (rnd.choice([0, 0, 9]))          # some declare more than the record holds
        kind = rnd.choice(["MQSTR"] * 6 + ["MQHRF2", "MQADMIN"])
        err = "MQMD" if i % 29 == 0 else None
        only = i % 31 == 0
        records.append(head + body)
        fmts.append(kind)
        errs.append(err)
        offs.append(len(head))
        lens.append(length)
        ccsids.append(ccsid)
        md_only.append(only)
        text = None
        if kind == "MQSTR" and err is None and not only and ccsid != 4242:
            text = decode_text(body, ccsid, trim=False)
        expected.append(text)
    data = pa.array([b"x" * 10] + records, pa.binary()).slice(1)   # an offset into its buffers
    table = pa.table({"body_format": fmts, "error_structure": pa.array(errs, pa.string()),
                      "body_offset": pa.array(offs, pa.int64()), "body_length": pa.array(lens, pa.int64()),
                      "body_ccsid": pa.array(ccsids, pa.int32())})
    got = _body_text(data, table, pa.array(md_only)).to_pylist()
    assert got == expected
    assert sum(t is not None for t in expected) > 2000


# ---------------------------------------------------------------------------
# the pieces
# ---------------------------------------------------------------------------
def test_a_damaged_unit_keeps_its_header_and_bytes():
    od = default_od(_LE, object_name="Q")[:100]           # an MQOD cut short
    unit = _api_unit(0x83, od, req=1)
    cols = C.decode_unit(unit)
    assert cols["segment_type_name"] == "MQOPEN" and cols["conversation_id"] == 1
    assert (cols["error_structure"], cols["error"].startswith("truncated")) == ("MQOD", True)
    assert cols["error_offset"] == 52
    # past the prefix both engines keep, a cut structure is not an error
    assert "error" not in C.decode_unit(unit, len(unit) + 100_000)
    bad = C.decode_unit(b"XXXX" + unit[4:])
    assert bad["error_structure"] == "TSH" and bad["error_field"] == "StructID"


def test_units_are_every_segment_type_joined_first_to_last():
    body = default_od(_LE, object_name="SPLIT.Q") + struct.pack("<i", 16)
    stream = encode_segments(0x83, api_header(_LE, 0, 0, 0, 0) + body, byte_order=_LE, max_segment_length=100,
                             conversation_id=3, request_id=9)
    stream += encode_segments(0x09, b"", byte_order=_LE, conversation_id=3)   # a heartbeat
    framer = MQStreamFramer(units=True)
    framer.feed(stream)
    units = [e for e in framer if isinstance(e, Unit)]
    assert [(u.type_name, u.segments, u.offset) for u in units] == [("MQOPEN", 3, 0), ("HEARTBEAT", 1, 296)]
    assert units[0].length == 36 + 16 + len(body) and units[0].end == 296 == 3 * 36 + 16 + len(body)
    assert C.decode_unit(units[0].data, units[0].length)["od_object_name"] == "SPLIT.Q"


def test_the_compiled_framer_reports_the_same_units():
    core = pytest.importorskip("mqcodec._ext.capture_core", reason="the compiled capture core is not built")
    stream = b"".join(bytes(encode_segments(t, api_header(_LE, 0, 0, 0, 0) + bytes(range(256)) * 3, byte_order=_LE,
                                            max_segment_length=300, conversation_id=t, request_id=1))
                      for t in (0x83, 0x89, 0x8C, 0x93)) + encode_put(_message(b"x" * 700), byte_order=_LE,
                                                                       max_segment_length=256)
    pure = MQStreamFramer(units=True)
    pure.feed(stream)
    expected = []
    for e in pure:
        if isinstance(e, Unit):
            expected.append(("UNIT", e.offset, e.data, e.length))
        elif type(e).__name__ == "Message":
            expected.append(e.kind)
    fast = core.FastMQFramer(units=True)
    got = []
    for i in range(0, len(stream), 97):
        got += [g if g[0] == "UNIT" else g[2] for g in fast.feed(stream[i:i + 97])]
    assert got == expected and len(got) == 6


def test_tracker_bounds_the_waiting_requests(Tracker):
    t = Tracker(max_waiting=2)
    outs = [t.unit(k, 0, k, {"segment_type": 0x89, "conversation_id": 1, "request_id": k}) for k in range(4)]
    assert [o.given_up for o in outs] == [[], [], [0], [1]]
    assert t.close() == [2, 3]


def test_requests_waiting_under_one_key_are_replied_and_given_up_oldest_first(Tracker):
    """Requests of one conversation with the same RequestId and type wait in
    order: each reply takes the oldest, a give-up forgets the oldest of all,
    whether one request or several wait under a key."""
    t = Tracker(max_waiting=3)
    put = {"segment_type": 0x86, "conversation_id": 1}
    reply = {"segment_type": 0x96, "conversation_id": 1}
    assert [t.unit(k, 0, k * 10, dict(put, request_id=7)).waiting for k in (0, 1)] == [True, True]
    assert t.unit(2, 0, 20, dict(put, request_id=8)).waiting
    first = t.unit(3, 0, 35, dict(reply, request_id=7))
    assert (first.request_call_key, first.latency_ns) == (0, 35)
    assert t.unit(4, 0, 40, dict(put, request_id=7)).given_up == []
    assert t.unit(5, 0, 50, dict(put, request_id=9)).given_up == [1]   # the oldest of all
    second = t.unit(6, 0, 66, dict(reply, request_id=7))
    assert (second.request_call_key, second.latency_ns) == (4, 26)
    assert t.unit(7, 0, 70, dict(reply, request_id=7)).request_call_key is None
    assert t.waiting == 2 and t.close() == [2, 5]


def test_schema_has_the_brief_columns():
    names = set(table_schema("mq_calls").names)
    assert {"call_key", "capture", "frame", "ts", "ts_nanos", "tcp_stream", "src_ip", "src_port", "dst_ip",
            "dst_port", "conversation_id", "request_id", "segment_type", "segment_type_name", "ctl_flags1",
            "encoding", "ccsid", "length", "error", "raw", "hobj", "completion_code", "reason_code", "reason_name",
            "request_call_key", "latency_us", "replied", "queue_name", "queue_manager"} <= names
    assert {"queue_name", "queue_manager", "remote_q_name", "remote_q_mgr_name", "call_key"} <= \
        set(table_schema("mq_messages").names)


@pytest.mark.parametrize("engine", ENGINES)
def test_channel_message_data_and_async_messages_name_their_queue(tmp_path, engine):
    from mqcodec.ibmmq.builders import encode_async_message, encode_message_data

    c = TcpConversation(("10.2.0.1", 42000), ("10.2.0.2", 1414), mss=1400, start_ns=10**18, step_ns=1000)
    pk = c.handshake()
    pk += c.send(0, encode_message_data(_message(b"over the channel"), remote_q_name="REMOTE.Q",
                                        remote_qmgr_name="QMR", byte_order=_LE))
    d = TcpConversation(("10.2.0.3", 42001), ("10.2.0.2", 1414), mss=1400, start_ns=10**18 + 10**6, step_ns=1000)
    pk += d.handshake()
    od = default_od(_LE, object_name="ASYNC.Q")
    pk += d.send(0, _api_unit(0x83, od + struct.pack("<i", 1), req=1))
    pk += d.send(1, _api_unit(0x93, od + struct.pack("<i", 1), req=1, hobj=7))
    pk += d.send(1, encode_async_message(_message(b"pushed"), hobj=7, byte_order=_LE, max_segment_length=150))
    path = tmp_path / "chan.pcap"
    with open(path, "wb") as f:
        write_pcap(f, pk)
    tables, _ = _convert(path, engine)
    calls = {r["segment_type_name"]: r for r in tables.table("mq_calls").to_pylist()}
    assert (calls["MESSAGE_DATA"]["remote_q_name"], calls["MESSAGE_DATA"]["remote_q_mgr_name"]) == ("REMOTE.Q", "QMR")
    assert calls["MESSAGE_DATA"]["queue_name"] == "REMOTE.Q"
    assert calls["ASYNC_MESSAGE"]["hobj"] == 7 and calls["ASYNC_MESSAGE"]["queue_name"] == "ASYNC.Q"
    msgs = {m["kind"]: m for m in tables.table("mq_messages").to_pylist()}
    md = msgs["MESSAGE_DATA"]
    assert (md["queue_name"], md["queue_manager"], md["remote_q_name"], md["remote_q_mgr_name"]) == \
        ("REMOTE.Q", "QMR", "REMOTE.Q", "QMR")
    assert md["header_formats"][0] == "MQXMIT"
    assert msgs["ASYNC_MESSAGE"]["queue_name"] == "ASYNC.Q"


def _other_units(o):
    f = "<" if o == "little" else ">"

    def seg(t, body):
        return encode_segments(t, body, byte_order=o, conversation_id=1, request_id=2)
    return [
        (1, seg(0x05, struct.pack(f + "III", 12, 29, 77))),                                  # STATUS_DATA
        (1, seg(0x0F, struct.pack(f + "IiII", 1, 9, 5, 3))),                                 # NOTIFICATION
        (0, seg(0x0E, struct.pack(f + "IiIIIIiII", 1, 9, 0, 4096, 4194304, 0, 1500, 0, 0))),  # REQUEST_MSGS
        (0, seg(0x07, struct.pack(f + "I", 16) + b"pingpingping")),                         # PING_DATA
        (0, seg(0x03, struct.pack(f + "II", 8, 42))),                                        # RESET_DATA
        (0, seg(0x0A, b"CAUT" + struct.pack(f + "IIIII", 1, 3, 8, 3, 8) + b"bobsecret!")),   # CONAUTH_INFO
        (0, seg(0xA1, struct.pack(">I", 16) + struct.pack(f + "iII", 0, 0x200000, 7))),      # XA_START
        (1, seg(0xB1, struct.pack(">I", 16) + struct.pack(f + "iII", -4, 0, 7))),            # XA_START_REPLY
    ]


@pytest.mark.skipif(TSHARK is None, reason="tshark is missing")
@pytest.mark.parametrize("engine", ENGINES)
def test_other_unit_types_against_tshark(tmp_path, engine):
    """STATUS_DATA, NOTIFICATION, PING_DATA, RESET_DATA, CONAUTH_INFO, XA in
    both byte orders: our columns are tshark's fields."""
    pk = []
    for i, o in enumerate(("little", "big")):
        c = TcpConversation(("10.3.0.1", 43000 + i), ("10.3.0.2", 1414), mss=1400, start_ns=10**18 + i * 10**9)
        pk += c.handshake()
        for d, u in _other_units(o):
            pk += c.send(d, u)
    path = tmp_path / "other.pcap"
    with open(path, "wb") as fh:
        write_pcap(fh, pk)
    fields = {"mq.status.code": "status_code", "mq.status.value": "status_value", "mq.notif.handle": "hobj",
              "mq.notif.code": "notification_code", "mq.notif.value": "notification_value",
              "mq.ping.length": "ping_length", "mq.reset.seqnum": "reset_seq_num", "mq.caut.authtype": "caut_auth_type",
              "mq.msh.userid": "caut_user_id", "mq.xa.returnvalue": "xa_return_value", "mq.xa.rmid": "xa_rmid"}
    out = subprocess.run([TSHARK, "-r", str(path), "-T", "fields", "-e", "frame.number", "-e", "mq.tsh.type"]
                         + [a for f in fields for a in ("-e", f)], capture_output=True, text=True, check=True).stdout
    theirs = [line.split("\t") for line in out.splitlines() if line.split("\t")[1]]
    tables, _ = _convert(path, engine)
    rows = tables.table("mq_calls").to_pylist()
    assert [r["frame"] for r in rows] == [int(t[0]) for t in theirs] and len(rows) == 16
    compared = 0
    for t, r in zip(theirs, rows):
        assert r["segment_type"] == int(t[1], 16)
        for value, column in zip(t[2:], fields.values()):
            if value:
                ours = r[column]
                assert (str(ours) if isinstance(ours, str) else ours) == \
                    (value if column == "caut_user_id" else int(value, 0)), (t[0], column)
                compared += 1
    assert compared == 2 * 13
    assert rows[0]["status_code_name"] == "INVALID_HOBJ" and rows[1]["notification_code_name"] == "Q_STATE"
    assert rows[2]["hobj"] == 9 and rows[2]["msgreq_wait_interval"] == 1500      # tshark leaves it undecoded
    assert rows[6]["xa_tm_flags"] == 0x200000 and rows[7]["request_call_key"] == rows[6]["call_key"]
    assert "secret" not in repr(rows)


def test_tracker_rules(Tracker):
    t = Tracker()
    u = lambda k, **cols: t.unit(k, 0, k * 1000, cols)  # noqa: E731
    # no queue manager before an INITIAL_DATA names one ("*" does not); from then on every unit
    # carries it, its object's where the unit names one
    assert u(1, segment_type=0x01, id_q_mgr_name="*").queue_manager is None
    assert u(2, segment_type=0x01, id_q_mgr_name="QMX").queue_manager == "QMX"
    assert t.unit(90, 1, 0, {"segment_type": 0x81}).queue_manager is None     # another connection
    r = u(91, segment_type=0x89, hobj=77)                                       # MQINQ, handle unknown
    assert (r.queue_name, r.queue_manager) == (None, "QMX")
    r = u(92, segment_type=0x93, hobj=78, od_object_name=None, od_object_q_mgr_name="QMR")
    assert (r.queue_name, r.queue_manager) == (None, "QMR")
    r = t.unit(93, 0, 0, {"segment_type": 0x04, "remote_q_name": "RQ", "remote_q_mgr_name": "QMZ"})
    assert (r.queue_name, r.queue_manager) == ("RQ", "QMZ")
    assert u(3, segment_type=0x83, od_object_name="Q.A").waiting
    r = u(4, segment_type=0x93, hobj=3, completion_code=0)
    assert (r.request_call_key, r.latency_ns, r.queue_name, r.queue_manager) == (3, 1000, "Q.A", "QMX")
    # a reply whose request the capture lacks names the queue by its own Hobj
    assert u(5, segment_type=0x95, hobj=3).queue_name == "Q.A"
    assert u(6, segment_type=0x95, hobj=3).request_call_key is None
    # other conversations do not see the handle; a failed MQOPEN gives none
    assert t.unit(7, 0, 0, {"segment_type": 0x86, "hobj": 3, "conversation_id": 2}).queue_name is None
    u(8, segment_type=0x83, od_object_name="Q.B")
    u(9, segment_type=0x93, hobj=4, completion_code=2, reason_code=2035)
    assert u(10, segment_type=0x86, hobj=4).queue_name is None
    # MQDISC forgets every handle of the conversation
    u(11, segment_type=0x82)
    u(12, segment_type=0x92)
    assert u(13, segment_type=0x86, hobj=3).queue_name is None
    assert t.close() == [90, 91, 7, 10, 13] and t.waiting == 0    # the MQCONN, MQINQ and MQPUTs got no reply


def test_tracker_says_who(Tracker):
    """channel_name per connection, user_id per conversation (CONAUTH_INFO)
    else per connection (USERID_DATA, LongUserId first), appl_name per
    conversation (MQCONN), from the unit that sends each on, both directions."""
    t = Tracker()
    u = lambda k, stream=0, **cols: t.unit(k, stream, k, cols)  # noqa: E731
    who = lambda a: (a.channel_name, a.user_id, a.appl_name)  # noqa: E731
    assert who(u(1, segment_type=0x01, id_channel_name="")) == (None, None, None)
    assert who(u(2, segment_type=0x01, id_channel_name="APP.SVRCONN")) == ("APP.SVRCONN", None, None)
    assert who(u(3, segment_type=0x08, uid_user_id="ROOT", uid_long_user_id="root")) == ("APP.SVRCONN", "root", None)
    assert who(u(4, segment_type=0x08, uid_user_id="BOB")) == ("APP.SVRCONN", "BOB", None)
    assert who(u(5, segment_type=0x81, conversation_id=1, conn_appl_name="app-1")) == ("APP.SVRCONN", "BOB", "app-1")
    assert who(u(6, segment_type=0x91, conversation_id=1)) == ("APP.SVRCONN", "BOB", "app-1")   # its reply
    # another conversation of the socket: its own application and CONAUTH user
    assert who(u(7, segment_type=0x0A, conversation_id=3, caut_user_id="alice")) == ("APP.SVRCONN", "alice", None)
    assert who(u(8, segment_type=0x81, conversation_id=3, conn_appl_name="app-3")) == ("APP.SVRCONN", "alice", "app-3")
    assert who(u(9, segment_type=0x86, conversation_id=1)) == ("APP.SVRCONN", "BOB", "app-1")
    assert who(u(10, segment_type=0x86, conversation_id=3)) == ("APP.SVRCONN", "alice", "app-3")
    # another connection knows none of it
    assert who(u(11, stream=1, segment_type=0x86, conversation_id=1)) == (None, None, None)
    t.close()   # the capture's end forgets everything
    assert who(u(12, segment_type=0x86, conversation_id=1)) == (None, None, None)


@pytest.mark.skipif(TSHARK is None, reason="tshark is missing")
@pytest.mark.parametrize("seed", [1, 2])
def test_simulator_captures_against_tshark(tmp_path, seed):
    """The simulator's captures (mqcodec.synth): tshark displays units joined
    from several segments inconsistently (the first TSH only, or every TSH
    and the first again), so the values are compared on the units tshark
    shows as one whole segment (FIRST and LAST, MQSegmLen = our length): the
    row starting in that frame with that type and length has tshark's values;
    the units of every type add up to tshark's units; MQPUT/MQGET name the
    queue tshark's MQOPEN named for their Hobj; the failed calls are tshark's."""
    from mqcodec import synth

    path = tmp_path / ("synth%d.pcap" % seed)
    with open(path, "wb") as f:
        write_pcap(f, [(p.ts_ns, p.frame) for p in synth.generate(seed, 40)])
    tables, report = _convert(path, "py")
    rows = tables.table("mq_calls").to_pylist()
    units = _tshark_units(path)
    by_direction = defaultdict(list)
    for r in rows:
        by_direction[(r["tcp_stream"], r["src_port"])].append(r)
    used: set = set()
    single = 0
    seen_fields: Counter = Counter()
    for u in sorted(units, key=lambda u: int(u["frame.number"])):
        flags, lengths = u["mq.tsh.cflags1"].split("|"), u["mq.tsh.seglength"].split("|")
        if len(flags) != 1 or int(flags[0], 16) & 0x30 != 0x30:
            continue
        t, n, frame = int(u["mq.tsh.type"], 16), int(lengths[0]), int(u["frame.number"])
        # tshark shows a unit in the frame completing it, our frame holds its first byte
        ours = [r for r in by_direction[(int(u["tcp.stream"]), int(u["tcp.srcport"]))]
                if r["segment_type"] == t and r["length"] == n and r["frame"] <= frame and r["call_key"] not in used]
        assert ours, frame
        r = max(ours, key=lambda r: r["frame"])
        used.add(r["call_key"])
        u["types"] = [t]
        seen_fields.update(_differential([u], [r]))
        for field, column in (("mq.tsh.convid", "conversation_id"), ("mq.tsh.requestid", "request_id"),
                              ("mq.api.reasoncode", "reason_code"), ("mq.api.completioncode", "completion_code")):
            if u[field]:
                assert r[column] == int(u[field]), (frame, field)
        if u["mq.api.hobj"]:
            assert r["hobj"] & 0xFFFFFFFF == int(u["mq.api.hobj"], 16), frame
        single += 1
    assert single > 50
    for field in ("mq.id.channelname", "mq.id.qm", "mq.uid.userid", "mq.conn.appname", "mq.conn.qm",
                  "mq.od.objname", "mq.inq.sel"):
        assert seen_fields[field] > 0, field
    # every MQPUT/MQGET names the queue tshark's MQOPEN (by the Hobj of its reply) names
    names = _queues_against_tshark(path, rows)
    assert len(names) > 40 and {"PAYMENTS", "PAYMENTS.REPLY"} <= set(names)
    # failed calls: tshark's reasons (MQOPEN 2085 and 2035, MQGET 2033 in the simulator's conversations)
    theirs = Counter(int(u["mq.api.reasoncode"].split("|")[0]) for u in units
                     if u["mq.api.completioncode"] and int(u["mq.api.completioncode"].split("|")[0]) == 2)
    ours = Counter(r["reason_code"] for r in rows if r["completion_code"] == 2)
    assert ours == theirs and {2085, 2035, 2033} <= set(ours)
    assert set(report["failed_calls_by_reason"]) >= {"MQRC_UNKNOWN_OBJECT_NAME", "MQRC_NOT_AUTHORIZED",
                                                     "MQRC_NO_MSG_AVAILABLE"}
    assert sum(report["calls_by_type"].values()) == len(rows) >= len(units)


@pytest.mark.skipif(TSHARK is None, reason="tshark is missing")
def test_value_names_are_tsharks():
    """SPI verbs, STATUS_DATA codes and NOTIFICATION codes: tshark -G values."""
    out = subprocess.run([TSHARK, "-G", "values"], capture_output=True, text=True, check=True).stdout
    theirs = defaultdict(dict)
    for line in out.splitlines():
        cols = line.split("\t")
        if len(cols) == 4 and cols[0] == "V" and cols[1] in ("mq.spi.verb", "mq.status.code", "mq.notif.code"):
            theirs[cols[1]][int(cols[2], 0)] = cols[3]
    assert C.SPI_VERBS == theirs["mq.spi.verb"]
    assert C.STATUS_CODES == theirs["mq.status.code"]
    assert C.NOTIFICATION_CODES == theirs["mq.notif.code"]


@pytest.mark.parametrize("size", [1, 7, 1000])
def test_tracker_units_in_batches_equal_one_at_a_time(tmp_path, size, Tracker):
    """CallTracker.units over batches of any size (its state carried from
    batch to batch) attributes the simulator's units as unit() does one at a
    time, and what it finds is not empty: pairs, latencies, queues, give-ups."""
    from mqcodec import synth
    from mqcodec.ibmmq.conversation import TRACKED

    path = tmp_path / "synth.pcap"
    with open(path, "wb") as f:
        write_pcap(f, [(p.ts_ns, p.frame) for p in synth.generate(3, 30)])
    rows = sorted(_convert(path, "py")[0].table("mq_calls").to_pylist(), key=lambda r: r["call_key"])
    ts = [r["ts"].timestamp() * 1_000_000_000 // 1 + r["ts_nanos"] if r["ts"] else None for r in rows]
    one = Tracker(max_waiting=1)
    expected = [one.unit(r["call_key"], r["tcp_stream"], t, r) for r, t in zip(rows, ts)]
    batched = Tracker(max_waiting=1)
    got: list = []
    given_up: list = []
    for i in range(0, len(rows), size):
        part = rows[i:i + size]
        att = batched.units([r["call_key"] for r in part], [r["tcp_stream"] for r in part], ts[i:i + size],
                            {k: [r.get(k) for r in part] for k in TRACKED})
        got += list(zip(att.queue_name, att.queue_manager, att.request_call_key, att.latency_ns, att.waiting,
                        att.channel_name, att.user_id, att.appl_name))
        given_up += att.given_up
    assert got == [(a.queue_name, a.queue_manager, a.request_call_key, a.latency_ns, a.waiting, a.channel_name,
                    a.user_id, a.appl_name) for a in expected]
    assert all(a.appl_name for a in expected[len(expected) // 2:])
    assert given_up == [k for a in expected for k in a.given_up]
    assert batched.close() == one.close()
    assert sum(g[2] is not None for g in got) > 20 and sum(g[0] is not None for g in got) > 20
    assert any(g[3] for g in got) and given_up


@pytest.mark.parametrize("chunk", [7, 20000])
def test_requests_given_up_are_written_alike_by_both_engines(tmp_path, monkeypatch, chunk):
    """With the tracker's memory bound forced low, requests are given up in the
    middle of the compiled core's unit batches and across them: both engines
    write the same mq_calls rows, given-up requests as not replied
    (``replied`` False, no ``reply_call_key``), the others paired."""
    import functools

    import mqcodec.ibmmq.conversation as conversation
    from mqcodec import _impl, synth

    for module in (conversation, _impl.load("conversation")):
        if module is not None:
            monkeypatch.setattr(module, "CallTracker", functools.partial(module.CallTracker, max_waiting=1))
    path = tmp_path / "synth.pcap"
    synth.write_capture(str(path), seed=5, messages=80)
    # (rows in call_key order within each flush, flushes where each engine makes them;
    # dictionaries may differ)
    c, py = (_convert(path, engine, chunk_messages=chunk)[0].table("mq_calls").sort_by("call_key")
             for engine in ("c", "py"))
    assert c.num_rows == py.num_rows > 200
    assert c.schema == py.schema and c.to_pylist() == py.to_pylist()
    replied = Counter(c.column("replied").to_pylist())
    assert replied[True] > 20 and replied[False] > 5 and replied[None] > 20
    given_up = [r for r in c.to_pylist() if r["replied"] is False]
    assert all(r["reply_call_key"] is None for r in given_up)
    paired = {r["reply_call_key"]: r["call_key"] for r in c.to_pylist() if r["replied"]}
    replies = {r["call_key"]: r["request_call_key"] for r in c.to_pylist() if r["request_call_key"] is not None}
    assert paired and all(replies[reply] == request for reply, request in paired.items())


def test_tracker_state_is_bounded_by_connections(Tracker):
    """At most max_connections connections' (and conversations') state is
    kept: past it the first one's queue manager, who and handles are
    forgotten, the later ones' kept (a capture of millions of short
    connections keeps a flat memory)."""
    t = Tracker(max_connections=3)
    for stream in range(4):
        t.unit(10 * stream, stream, 0, {"segment_type": 0x01, "id_q_mgr_name": "QM%d" % stream,
                                        "id_channel_name": "CH%d" % stream})
        t.unit(10 * stream + 1, stream, 0, {"segment_type": 0x81, "conversation_id": 1, "conn_appl_name": "A%d" % stream})
        t.unit(10 * stream + 2, stream, 0, {"segment_type": 0x83, "conversation_id": 1, "od_object_name": "Q%d" % stream})
        t.unit(10 * stream + 3, stream, 0, {"segment_type": 0x93, "conversation_id": 1, "hobj": 5, "completion_code": 0})
    seen = [t.unit(100 + stream, stream, 0, {"segment_type": 0x86, "conversation_id": 1, "hobj": 5})
            for stream in range(4)]
    assert [(a.queue_manager, a.channel_name, a.appl_name, a.queue_name) for a in seen] == \
        [(None, None, None, None)] + [("QM%d" % s, "CH%d" % s, "A%d" % s, "Q%d" % s) for s in (1, 2, 3)]
