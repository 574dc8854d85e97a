"""The traffic simulator (mqcodec.synth): whole client conversations.

Oracle: tshark decodes every unit the simulator writes to the values the
simulator meant (segment types, conversation and request ids, reason codes,
object handles, MQOD ObjectName, MQCONN ApplName, INITIAL_DATA ChannelName,
USERID UserId); mqcodec's own framer reads the same streams without an error.
"""
from __future__ import annotations

import collections
import io

import pytest

from mqcodec import synth
from mqcodec.ibmmq.framing import FramingError, Message, Segment

from test_ibmmq_builders import follow, framer_events, tshark_rows

FIELDS = ["frame.number", "tcp.stream", "ip.src", "mq.tsh.type", "mq.tsh.convid", "mq.tsh.requestid",
          "mq.api.completioncode", "mq.api.reasoncode", "mq.api.hobj", "mq.od.objname", "mq.conn.appname",
          "mq.id.channelname", "mq.uid.userid", "mq.tsh.tcf.confirmreq", "mq.od.objqmgrname", "mq.tsh.cflags1",
          "mq.id.prodid"]
MESSAGES = 60


@pytest.fixture(scope="module")
def sim(tmp_path_factory, tshark):
    path = tmp_path_factory.mktemp("synth") / "sim.pcap"
    synth.write_capture(str(path), seed=7, messages=MESSAGES)
    rows = tshark_rows(tshark, path, FIELDS, "mq")
    units = []   # one dict per MQ unit tshark shows (a frame may hold several)
    for r in rows:
        cols = dict(zip(FIELDS, r))
        n = len(cols["mq.tsh.type"].split(","))
        for k in range(n):
            u = {}
            for f, v in cols.items():
                parts = v.split(",") if v else []
                u[f] = parts[k].rstrip() if f.startswith("mq.tsh") and len(parts) == n else v.rstrip()
            units.append(u)
    return path, units


def _streams(units, ip):
    return {u["tcp.stream"] for u in units if u["ip.src"] == ip}


def _t(u):
    return int(u["mq.tsh.type"], 16)


def _hobj(u):
    return int(u["mq.api.hobj"].split(",")[0], 16) if u["mq.api.hobj"] else None


def test_deterministic():
    a, b, c = io.BytesIO(), io.BytesIO(), io.BytesIO()
    assert synth.write_capture(a, seed=3, messages=20) == synth.write_capture(b, seed=3, messages=20)
    synth.write_capture(c, seed=4, messages=20)
    assert a.getvalue() == b.getvalue() != c.getvalue()
    ts = [p.ts_ns for p in synth.generate(3, 20)]
    assert ts == sorted(ts)


def test_application_conversation(sim):
    _, units = sim
    app = [u for u in units if u["tcp.stream"] in _streams(units, synth.NETWORK["app"])]
    types = [_t(u) for u in app]
    # channel start: INITIAL_DATA both ways (TSH, then TSHM), USERID, MQCONNX and its reply
    assert types[:7] == [0x01, 0x01, 0x01, 0x01, 0x08, 0x81, 0x91]
    assert [u["ip.src"] == synth.NETWORK["app"] for u in app[:4]] == [True, False, True, False]
    assert {u["mq.id.channelname"] for u in app[:4]} == {"APP.SVRCONN"}
    assert [u["mq.tsh.cflags1"] for u in app[:4]] == ["0x31", "0x02", "0x31", "0x00"]   # as the capture's
    assert [u["mq.id.prodid"] for u in app[:4]] == ["MQCC09030500", "MQMM09040300"] * 2
    assert app[4]["mq.uid.userid"] == "app"
    assert app[5]["mq.conn.appname"] == app[6]["mq.conn.appname"] == "payments-app"
    # every request of the conversation has its reply with the same RequestID, ids increasing
    api = [u for u in app if _t(u) >= 0x81]
    assert {u["mq.tsh.convid"] for u in api} == {"1"}
    pairs = collections.defaultdict(set)
    for u in api:
        pairs[int(u["mq.tsh.requestid"])].add(_t(u))
    for rid, ts in pairs.items():
        assert len(ts) == 2 and {t & ~0x10 for t in ts} == {min(ts)} and max(ts) == min(ts) | 0x10, (rid, ts)
    assert sorted(pairs) == list(range(1, len(pairs) + 1))
    # MQOPEN replies: handles for the queues, 2085 and 2035 for the two that fail
    opens = [u for u in api if _t(u) == 0x93]
    by_name = {(u["mq.od.objname"], u["mq.od.objqmgrname"]): u for u in opens}
    assert by_name[("PAYMENTS.ARCHIVE", "")]["mq.api.reasoncode"] == "2085"
    assert by_name[("SYSTEM.ADMIN.COMMAND.QUEUE", "")]["mq.api.reasoncode"] == "2035"
    for name in ("PAYMENTS.ARCHIVE", "SYSTEM.ADMIN.COMMAND.QUEUE"):
        assert by_name[(name, "")]["mq.api.completioncode"] == "2" and _hobj(by_name[(name, "")]) == 0xFFFFFFFF
    handles = {k: _hobj(u) for k, u in by_name.items() if u["mq.api.reasoncode"] == "0"}
    assert set(handles) == {("PAYMENTS", ""), ("PAYMENTS", "QM2"), ("PAYMENTS.REPLY", ""), ("", "")}
    assert len(set(handles.values())) == 4
    # puts on the two PAYMENTS handles, gets on PAYMENTS.REPLY, one MQINQ on the queue manager's
    puts = {_hobj(u) for u in api if _t(u) in (0x86, 0x96)}
    assert puts == {handles[("PAYMENTS", "")], handles[("PAYMENTS", "QM2")]}
    gets = [u for u in api if _t(u) in (0x85, 0x95)]
    assert {_hobj(u) for u in gets} == {handles[("PAYMENTS.REPLY", "")]}
    assert [u["mq.api.reasoncode"] for u in gets if _t(u) == 0x95].count("2033") == 1
    assert sum(_t(u) == 0x85 for u in gets) == MESSAGES // 5 + 1
    inq = [u for u in api if _t(u) in (0x89, 0x99)]
    assert len(inq) == 2 and {_hobj(u) for u in inq} == {handles[("", "")]}
    # heartbeats: the queue manager asks (Confirm Req), the client answers
    hb = [u for u in app if _t(u) == 0x09]
    assert len(hb) == 2 * len(range(10, MESSAGES, 20))
    assert [(u["ip.src"] == synth.NETWORK["app"], u["mq.tsh.tcf.confirmreq"]) for u in hb[:2]] == \
        [(False, "1"), (True, "0")]
    # the end: MQCLOSE of every handle still open, then MQDISC
    closes = [_hobj(u) for u in api if _t(u) == 0x84]
    assert sorted(closes) == sorted(handles.values())
    assert [_t(u) for u in api[-2:]] == [0x82, 0x92]


def test_trace_route_client_conversation(sim):
    _, units = sim
    dsp = [u for u in units if u["tcp.stream"] in _streams(units, synth.NETWORK["dspmqrte"])]
    assert [_t(u) for u in dsp[:7]] == [0x01, 0x01, 0x01, 0x01, 0x08, 0x81, 0x91]
    assert dsp[5]["mq.conn.appname"] == "dspmqrte" and dsp[4]["mq.uid.userid"] == "mqm"
    opens = {u["mq.od.objname"]: _hobj(u) for u in dsp if _t(u) == 0x93}
    assert set(opens) == {"TARGET.Q", "DSPMQRTE.REPLY"}
    assert {_hobj(u) for u in dsp if _t(u) == 0x86} == {opens["TARGET.Q"]}
    assert {_hobj(u) for u in dsp if _t(u) in (0x85, 0x95)} == {opens["DSPMQRTE.REPLY"]}
    assert [_t(u) for u in dsp[-2:]] == [0x82, 0x92]


def test_framer_reads_every_stream_without_error(sim, tshark):
    """Every segment tshark shows, no FramingError, and one Message per
    message-bearing unit except the MQGET_REPLYs that failed with 2033 (no
    MQMD: no Message, no error)."""
    path, units = sim
    failed_gets = sum(_t(u) == 0x95 and u["mq.api.reasoncode"] == "2033" for u in units)
    assert failed_gets == 1
    segments, messages, firsts = set(), 0, 0
    for stream in sorted({int(u["tcp.stream"]) for u in units}):   # the IBM MQ connections
        for data in follow(tshark, path, stream).values():
            events = framer_events(data)
            assert not [e for e in events if isinstance(e, FramingError)]
            segs = [e for e in events if isinstance(e, Segment)]
            segments |= {(str(stream), "0x%02x" % e.segment_type, str(e.conversation_id or ""),
                          str(e.request_id if e.request_id is not None else "")) for e in segs}
            firsts += sum(e.segment_type in (0x85, 0x86, 0x95, 0x96, 0x04) and (e.first or e.segment_type == 0x04
                                                                              and not e.ctl_flags1 & 0x30)
                          for e in segs)
            messages += sum(isinstance(e, Message) for e in events)
    # tshark shows a segment in every frame that holds part of it: compare the kinds
    assert segments == {(u["tcp.stream"], u["mq.tsh.type"], u["mq.tsh.convid"], u["mq.tsh.requestid"]) for u in units}
    assert messages == firsts - failed_gets


def test_tables_rows_for_gets_and_no_error_row(sim, tmp_path):
    """pcap2parquet: one mq_messages row per MQGET (its MQMD) and per
    MQGET_REPLY that carries a message; the 2033 reply gives no row and no
    error row."""
    from mqcodec.convert import ConvertOptions, convert
    from mqcodec.convert.sinks import read_table

    path, units = sim
    out = tmp_path / "tables"
    convert([str(path)], str(out), ConvertOptions())
    rows = read_table(str(out), "mq_messages").to_pylist()
    assert rows and not [r for r in rows if r["error"] is not None]
    kinds = collections.Counter(r["kind"] for r in rows)

    def distinct(seg_type, reason):
        return len({(u["tcp.stream"], u["mq.tsh.requestid"]) for u in units
                    if _t(u) == seg_type and (reason is None or u["mq.api.reasoncode"] == reason)})

    assert kinds["MQGET"] == distinct(0x85, None)
    assert kinds["MQGET_REPLY"] == distinct(0x95, "0") == distinct(0x95, None) - 1
    assert kinds["MQPUT"] == distinct(0x86, None) == kinds["MQPUT_REPLY"]
