"""Client-conversation units (mqcodec.ibmmq.builders).

Outside facts: the real capture ibmmq_jms_client_1414.pcap (a JMS client's
INITIAL_DATA, USERID, MQCONN, MQOPEN, MQINQ, MQCLOSE, MQDISC and replies):
our declarations parse each of its units and build the same bytes again, and
the values they read are those tshark shows.  tshark also reads the
encoders' output as intended.
"""
from __future__ import annotations

import collections
import re
import struct
import subprocess

import pytest

from mqcodec.capture.writer import PcapWriter, TcpConversation
from mqcodec.errors import EncodeError
from mqcodec.ibmmq import ENCODING_BIG, ENCODING_LITTLE, MQMD
from mqcodec.ibmmq import builders as B
from mqcodec.ibmmq.framing import CLOSED, NEED_DATA, Message, MQStreamFramer, Segment
from mqcodec.ibmmq.tsh import API_HEADER_DECL, API_HEADER_LENGTH, TSH_LENGTH, TSHM_LENGTH
from mqcodec.layout import parse_at

from conftest import CAPTURES

CAPTURE = CAPTURES / "ibmmq_jms_client_1414.pcap"
_MISSING = re.compile(rb"^\[(\d+) bytes missing in capture file\]\x00?$")


# ---------------------------------------------------------------------------
# helpers (shared with tests/test_synth.py)
# ---------------------------------------------------------------------------

def follow(tshark: str, pcap, stream: int) -> dict:
    """{direction: stream bytes} of one TCP stream as tshark reassembles it
    (direction 0 = the client); gaps become NULs."""
    out = subprocess.run([tshark, "-r", str(pcap), "-q", "-z", "follow,tcp,raw,%d" % stream],
                         capture_output=True, text=True, check=True).stdout
    parts = {0: bytearray(), 1: bytearray()}
    started = False
    for line in out.splitlines():
        if line.startswith("Node 1:"):
            started = True
            continue
        if not started or not line.strip() or line.startswith("==="):
            continue
        raw = bytes.fromhex(line.strip())
        m = _MISSING.match(raw)
        parts[1 if line.startswith("\t") else 0] += b"\0" * int(m.group(1)) if m else raw
    return {d: bytes(v) for d, v in parts.items()}


def framer_events(data: bytes) -> list:
    f = MQStreamFramer()
    f.feed(data)
    f.close()
    out = []
    while (ev := f.next_event()) is not CLOSED:
        assert ev is not NEED_DATA, "a closed framer waits for nothing"
        out.append(ev)
    return out


def units(data: bytes) -> list[tuple[Segment, bytes]]:
    """(segment, its bytes) for every whole single-segment unit (types below
    0x80 never span, whatever their flags: the capture's queue manager
    answers INITIAL_DATA with CtlFlag1 0x02 and 0x00)."""
    return [(e, data[e.offset:e.offset + e.length]) for e in framer_events(data)
            if isinstance(e, Segment) and (e.segment_type < 0x80 or (e.first and e.last))
            and e.offset + e.length <= len(data)]


def tshark_rows(tshark: str, pcap, fields, display_filter) -> list[list[str]]:
    cmd = [tshark, "-r", str(pcap), "-Y", display_filter, "-T", "fields", "-E", "occurrence=a",
           "-E", "separator=|", "-E", "aggregator=,"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [line.split("|") for line in out.splitlines()]


def write_pcap(path, conversation: list[tuple[int, bytes]]) -> None:
    conv = TcpConversation(("10.9.0.1", 40001), ("10.9.0.2", 1414), start_ns=1_763_712_000 * 10 ** 9)
    pk = conv.handshake()
    for d, unit in conversation:
        pk += conv.send(d, unit)
    pk += conv.close()
    with open(path, "wb") as f:
        w = PcapWriter(f, nanosecond=True)
        for p in pk:
            w.write(p.ts_ns, p.frame)


def text(raw: bytes) -> str:
    return raw.decode("latin-1").rstrip(" \0")


# ---------------------------------------------------------------------------
# the real capture: parse, build, same bytes; values as tshark reads them
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def capture_units(tshark):
    """{segment type: [(order, body after TSH)]} over the capture's five
    connections, both directions."""
    out = collections.defaultdict(list)
    for stream in range(5):
        for data in follow(tshark, CAPTURE, stream).values():
            for seg, raw in units(data):
                out[seg.segment_type].append((seg.order, raw[seg.header_length:]))
    return out


def _api_and_body(order, body):
    api = parse_at(API_HEADER_DECL[order], body, 0, "API")
    return api, body[API_HEADER_LENGTH:]


def test_capture_initial_data_round_trip(capture_units, tshark):
    ids = capture_units[0x01]
    assert len(ids) == 20   # tshark counts 20 INITIAL_DATA segments in the capture
    ours = []
    for order, body in ids:
        assert len(body) == B.ID_LENGTH
        v = B.ID_DECL[order].parse(body)
        assert B.ID_DECL[order].build(v) == body
        ours.append((v.FapLevel, v.MaxTrSize, v.MaxMsgSize, text(v.ChannelName), v.CCSID, text(v.QMgrName),
                     v.HBInterval, v.ConvBySkt, text(v.ProdId)))
    rows = tshark_rows(tshark, CAPTURE, ["mq.id.faplevel", "mq.id.maxtrsize", "mq.id.maxmsgsize",
                                         "mq.id.channelname", "mq.id.ccsid", "mq.id.qm", "mq.id.hbint",
                                         "mq.id.convbyskt", "mq.id.prodid"], "mq.tsh.type == 0x01")
    theirs = [(int(a), int(b), int(c), d.rstrip(), int(e), f.rstrip(), int(g), int(h), i.rstrip())
              for a, b, c, d, e, f, g, h, i in rows]
    assert collections.Counter(ours) == collections.Counter(theirs)


def test_capture_userid_round_trip(capture_units, tshark):
    uids = capture_units[0x08]
    assert len(uids) == 5
    ours = []
    for order, body in uids:
        v = B.UID_DECL[order].parse(body)
        assert len(body) == B.UID_LENGTH and B.UID_DECL[order].build(v) == body
        ours.append((text(v.UserId), text(v.LongUserId)))
    rows = tshark_rows(tshark, CAPTURE, ["mq.uid.userid", "mq.uid.longuserid"], "mq.tsh.type == 0x08")
    assert collections.Counter(ours) == collections.Counter((u.rstrip(), lu.rstrip()) for u, lu in rows)


QMGRS_SEEN = {"*", "QM1", "QM2"}   # the JMS client connects with "*" and by name


def test_capture_conn_round_trip(capture_units):
    # tshark 4.0 does not decode the JMS client's CONN (its FCNO is 352
    # bytes); the layout is read from the bytes (tshark -x of frame 23):
    # QMgrName "*", ApplName "SPRING-...", ApplType 28 (MQAT_JAVA), FCNO.
    qmgrs = set()
    for t in (0x81, 0x91):
        for order, body in capture_units[t]:
            api, rest = _api_and_body(order, body)
            v = B.CONN_DECL[order].parse(rest)
            assert B.CONN_DECL[order].build(v) == rest
            qmgrs.add(text(v.QMgrName))
            assert re.fullmatch(r"[A-Z]+-\d+-C\d", text(v.ApplName))
            assert v.ApplType == 28
            assert v.FCNO[:4] == b"FCNO"
    assert qmgrs == QMGRS_SEEN


def test_capture_open_round_trip(capture_units, tshark):
    ours = []
    for t in (0x83, 0x93):
        assert len(capture_units[t]) == 12
        for order, body in capture_units[t]:
            api, rest = _api_and_body(order, body)
            v = B.OPEN_DECL[order].parse(rest)
            assert B.OPEN_DECL[order].build(v) == rest
            od = v.ObjDesc
            ours.append((t, api.Hobj, od.Version, od.ObjectType, text(od.ObjectName), v.Options,
                         v.FOPA.Version if v.FOPA else None, od.KnownDestCount))
    rows = tshark_rows(tshark, CAPTURE, ["mq.tsh.type", "mq.api.hobj", "mq.od.version", "mq.od.objtype",
                                         "mq.od.objname", "mq.open.options", "mq.fopa.version",
                                         "mq.od.kdestcount"], "mq.tsh.type == 0x83 || mq.tsh.type == 0x93")
    theirs = [(int(t, 16), struct.unpack("<i", struct.pack("<I", int(h, 16)))[0], int(ver), int(ot), n.rstrip(),
               int(o, 16), int(fv) if fv else None, int(k)) for t, h, ver, ot, n, o, fv, k in rows]
    assert collections.Counter(ours) == collections.Counter(theirs)


def _mask_platform(selectors, ints):
    """Integer values with MQIA_PLATFORM's blanked (integer selectors are
    those below 2000; their values come in the same order)."""
    return tuple(None if s == 32 else a for s, a in zip([s for s in selectors if s < 2000], ints))


def test_capture_inq_close_disc_round_trip(capture_units, tshark):
    ours, platforms = [], []
    for t, decl in ((0x89, B.INQ_DECL), (0x99, B.INQ_REPLY_DECL)):
        assert len(capture_units[t]) == 12
        for order, body in capture_units[t]:
            api, rest = _api_and_body(order, body)
            v = decl[order].parse(rest)
            assert decl[order].build(v) == rest
            ours.append((t, tuple(v.Selectors), _mask_platform(v.Selectors, v.get("IntAttrs") or ())))
            platforms += [a for s, a in zip([s for s in v.Selectors if s < 2000], v.get("IntAttrs") or ())
                          if s == 32]
    rows = tshark_rows(tshark, CAPTURE, ["mq.tsh.type", "mq.inq.sel", "mq.inq.intvalue"],
                       "mq.tsh.type == 0x89 || mq.tsh.type == 0x99")
    theirs = [(int(t, 16), tuple(int(x) for x in s.split(",")),
               _mask_platform([int(x) for x in s.split(",")], [int(x) for x in i.split(",")] if i else ()))
              for t, s, i in rows]
    assert collections.Counter(ours) == collections.Counter(theirs)
    # tshark's field reads 0 for MQIA_PLATFORM and shows the value in its text
    shown = subprocess.run([tshark, "-r", str(CAPTURE), "-V", "-O", "mq", "-Y", "mq.tsh.type == 0x99"],
                           capture_output=True, text=True, check=True).stdout
    assert platforms == [3, 3] and shown.count("Integer value...: UNIX/AIX (3)") == 2
    for order, body in capture_units[0x84]:
        api, rest = _api_and_body(order, body)
        assert B.CLOSE_DECL[order].build(B.CLOSE_DECL[order].parse(rest)) == rest
    for t in (0x94, 0x82, 0x92):   # the API header alone
        assert capture_units[t] and all(len(body) == API_HEADER_LENGTH for _, body in capture_units[t])


# ---------------------------------------------------------------------------
# the encoders, read by tshark
# ---------------------------------------------------------------------------

def _md(order):
    return MQMD(Version=1).encode(ENCODING_LITTLE if order == "little" else ENCODING_BIG, 819)


@pytest.mark.parametrize("order", ["little", "big"])
def test_encoders_read_by_tshark(tmp_path, tshark, order):
    ids = dict(channel_name="APP.SVRCONN", qmgr_name="QM1")
    api = dict(conversation_id=3, byte_order=order)
    conn = dict(qmgr_name="QM1", appl_name="payments-app", appl_type=6, **api)
    units_ = [
        (0, B.encode_initial_data(byte_order=order, hb_interval=60, **ids)),
        (1, B.encode_initial_data(byte_order=order, structid="TSHM", conversation_id=3, **ids)),
        (0, B.encode_userid_data(user_id="app", password="secret", **api)),
        (0, B.encode_conn(fcno=B.encode_fcno(order, prod_id="MQCC09030500"), request_id=1, **conn)),
        (1, B.encode_conn_reply(fcno=B.encode_fcno(order, mqm_id="QM1_X"), request_id=1, **conn)),
        (0, B.encode_open(object_name="PAYMENTS", options=0x2010, request_id=2, **api)),
        (1, B.encode_open_reply(object_name="PAYMENTS", options=0x2010, hobj=2, request_id=2, **api)),
        (0, B.encode_open(object_name="NOPE", options=0x2010, request_id=3, **api)),
        (1, B.encode_open_reply(object_name="NOPE", options=0x2010, hobj=-1, comp_code=2, reason=2085,
                                request_id=3, **api)),
        (0, B.encode_inq(hobj=2, selectors=[31, 2, 2015], int_attr_count=2, char_attr_length=48,
                         request_id=4, **api)),
        (1, B.encode_inq_reply(hobj=2, selectors=[31, 2, 2015], int_attrs=[930, 819], char_attrs=b"QM1".ljust(48),
                               request_id=4, **api)),
        (0, B.encode_get(_md(order), hobj=2, buffer_length=4096, gmo=B.default_gmo(order, Options=0x4005),
                         request_id=5, conversation_id=3)),
        (1, B.encode_get_failed(hobj=2, request_id=5, **api)),
        (1, B.encode_heartbeat(request=True, **api)),
        (0, B.encode_heartbeat(request=False, **api)),
        (0, B.encode_close(hobj=2, request_id=6, **api)),
        (1, B.encode_close_reply(request_id=6, **api)),
        (0, B.encode_disc(request_id=7, **api)),
        (1, B.encode_disc_reply(request_id=7, **api)),
    ]
    pcap = tmp_path / "units.pcap"
    write_pcap(pcap, units_)
    rows = tshark_rows(tshark, pcap, ["mq.tsh.type", "mq.tsh.requestid", "mq.tsh.byteorder", "mq.api.completioncode",
                                      "mq.api.reasoncode", "mq.api.hobj", "mq.od.objname", "mq.conn.appname",
                                      "mq.id.channelname", "mq.id.hbint", "mq.uid.userid", "mq.uid.password",
                                      "mq.inq.sel", "mq.inq.intvalue", "mq.gmo.getmsgopt", "mq.tsh.tcf.confirmreq",
                                      "mq.fcno.mqmid"], "mq")
    got = [[c.rstrip() for c in r] for r in rows]
    types = [int(r[0], 16) for r in got]
    assert types == [0x01, 0x01, 0x08, 0x81, 0x91, 0x83, 0x93, 0x83, 0x93, 0x89, 0x99, 0x85, 0x95, 0x09, 0x09,
                     0x84, 0x94, 0x82, 0x92]
    assert {r[2] for r in got} == {"0x01" if order == "big" else "0x02"}
    assert [r[8] for r in got[:2]] == ["APP.SVRCONN"] * 2 and got[0][9] == "60"
    assert got[2][10:12] == ["app", "secret"]
    assert got[3][7] == got[4][7] == "payments-app" and got[4][16] == "QM1_X"
    assert [r[6] for r in got[5:9]] == ["PAYMENTS", "PAYMENTS", "NOPE", "NOPE"]
    assert got[6][5] == "0x00000002" and got[8][3:6] == ["2", "2085", "0xffffffff"]
    assert got[9][12] == got[10][12] == "31,2,2015" and got[10][13] == "930,819"
    assert got[11][5] == "0x00000002" and int(got[11][14], 16) == 0x4005
    assert got[12][3:6] == ["2", "2033", "0x00000002"]
    assert [got[13][15], got[14][15]] == ["1", "0"]
    assert [r[1] for r in got[3:13]] == ["1", "1", "2", "2", "3", "3", "4", "4", "5", "5"]
    assert got[16][5] == "0xffffffff"


def test_failed_get_reply_yields_no_message():
    data = B.encode_get_failed(hobj=4, conversation_id=1, request_id=9)
    events = framer_events(data)
    assert [type(e) for e in events] == [Segment]
    assert events[0].type_name == "MQGET_REPLY"
    get = B.encode_get(_md("little"), hobj=4, buffer_length=100, conversation_id=1, request_id=9)
    msgs = [e for e in framer_events(get) if isinstance(e, Message)]
    assert len(msgs) == 1 and msgs[0].data_length == 100 and msgs[0].body == b""


def test_open_reply_round_trips_and_splits():
    unit = B.encode_open(object_name="Q", options=1, od_version=4, max_segment_length=100, request_id=1)
    segs = [e for e in framer_events(unit) if isinstance(e, Segment)]
    assert len(segs) > 1 and segs[0].first and segs[-1].last
    # the joined body parses with the version-4 MQOD (400 bytes) and builds again
    body = b"".join(unit[s.offset + s.header_length:s.offset + s.length] for s in segs)[API_HEADER_LENGTH:]
    v = B.OPEN_DECL["little"].parse(body)
    assert len(body) == 404 and v.ObjDesc.Version == 4 and text(v.ObjDesc.ObjectName) == "Q"
    assert B.OPEN_DECL["little"].build(v) == body


def test_encoder_errors_name_the_field():
    with pytest.raises(EncodeError) as e:
        B.encode_userid_data(user_id="x" * 13)
    assert e.value.structure == "UID" and e.value.field == "UserId"
    with pytest.raises(EncodeError) as e:
        B.encode_open(object_name="Q", options=0, od_version=5)
    assert e.value.field == "Version"
    with pytest.raises(EncodeError):
        B.encode_get(b"XX  " + bytes(320), hobj=1, buffer_length=1)
    with pytest.raises(EncodeError):
        B.encode_get(_md("big"), hobj=1, buffer_length=1, byte_order="little")
    assert len(B.encode_initial_data(channel_name="C")) == TSH_LENGTH + B.ID_LENGTH
    assert len(B.encode_heartbeat(request=True)) == TSHM_LENGTH
