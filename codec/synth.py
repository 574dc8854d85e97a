"""A traffic simulator: deterministic captures of a small message-queuing
network, built entirely with mqcodec's own encoders.

The network::

    app 10.1.1.10 ──client conn──► QM1 10.1.0.1:1414 ══channel QM1.TO.QM2══► QM2 10.1.0.2:1414
    dspmqrte 10.1.1.20 ──client conn──┘           ◄══channel QM2.TO.QM1══
    MSMQ hosts 10.2.0.x ──TCP 1801 sessions──► 10.2.0.1 ; UDP 3527 pings

* the application puts messages (MQSTR, some behind an MQRFH2, both byte
  orders, several CCSIDs) on QM1 and gets replies;
* a dspmqrte-like client puts trace-route messages; the trace-route rules
  (:mod:`mqcodec.ibmmq.traceroute_rules`) decide what each queue manager and
  MCA does: activities accumulate in the message, activity reports and the
  trace-route reply travel back over the channel and to the client;
* application messages for QM2 cross the channel as MESSAGE_DATA (MQXQH);
* MSMQ sessions (EstablishConnection, ConnectionParameters, UserMessages,
  SessionAcks) from :func:`mqcodec.msmq.builders.simulate_session`, and UDP
  pings.

Everything is a function of ``seed`` and ``messages``.  The traffic is
segmented by TCP MSS with ACKs, handshakes and FIN; :func:`write_capture`
writes it as a classic pcap.
"""
from __future__ import annotations

import random
from typing import Iterable, TypedDict

from .capture.writer import NS_PER_S, TcpConversation, ethernet, ipv4, udp, PcapWriter
from .ibmmq import builders as B
from .ibmmq import constants as C
from .ibmmq.builders import default_gmo, encode_get_reply, encode_message_data, encode_put, encode_put_reply
from .ibmmq.headers import MQMD, MQRFH2
from .ibmmq.message import MQMessage
from .ibmmq.pcf import PcfParameter as P
from .ibmmq.tsh import TCF_ERROR
from .ibmmq.traceroute_rules import (PerformedActivity, QueueManagerProfile, TraceRouteState, trace_route_group,
                                     activity_report, apply_activity, new_trace_route_message, trace_route_reply)

__all__ = ["generate", "write_capture", "NETWORK", "activity"]

NETWORK = {
    "QM1": ("10.1.0.1", 1414),
    "QM2": ("10.1.0.2", 1414),
    "app": "10.1.1.10",
    "dspmqrte": "10.1.1.20",
    "msmq_server": ("10.2.0.1", 1801),
}
START_NS = 1_763_712_000 * NS_PER_S  # 2025-11-21T08:00:00Z
_CCSIDS = (1208, 819, 437, 500, 1047, 1140)


def _date_time(ts_ns: int) -> tuple[str, str]:
    import datetime as _dt

    t = _dt.datetime.fromtimestamp(ts_ns / NS_PER_S, tz=_dt.timezone.utc)
    return t.strftime("%Y%m%d"), t.strftime("%H%M%S") + "%02d" % (t.microsecond // 10000)


def _app_message(rnd: random.Random, i: int, ts: int, *, little: bool) -> MQMessage:
    enc = C.ENCODING_LITTLE if little else C.ENCODING_BIG
    ccsid = rnd.choice(_CCSIDS)
    date, time = _date_time(ts)
    body = "payment %06d amount=%d.%02d currency=EUR" % (i, rnd.randrange(1, 10 ** 5), rnd.randrange(100))
    with_rfh2 = i % 3 == 0
    md = MQMD(Version=1, MsgType=C.MQMT_DATAGRAM, Encoding=enc, CodedCharSetId=ccsid if not with_rfh2 else 1208,
              Format="MQHRF2" if with_rfh2 else "MQSTR", Priority=rnd.randrange(10),
              Persistence=rnd.randrange(2), MsgId=rnd.getrandbits(192).to_bytes(24, "big"),
              PutApplType=C.MQAT_JAVA if with_rfh2 else C.MQAT_UNIX, PutApplName="payments-app",
              PutDate=date, PutTime=time, ReplyToQ="PAYMENTS.REPLY", ReplyToQMgr="QM1", UserIdentifier="app")
    headers = []
    if with_rfh2:
        headers.append(MQRFH2(Encoding=enc, CodedCharSetId=ccsid, Format="MQSTR", NameValueCCSID=1208,
                              folders=["<mcd><Msd>jms_text</Msd></mcd>",
                                       "<jms><Dst>queue:///PAYMENTS</Dst><Pri>4</Pri></jms>"]))
    return MQMessage(md, headers, body, md_encoding=enc, md_ccsid=819)


def _op(optype: int, qmgr: str, ts: int, **names) -> P:
    date, time = _date_time(ts)
    params = [P.integer(C.MQIACF_OPERATION_TYPE, optype),
              P.string(C.MQCACF_OPERATION_DATE, "%s-%s-%s" % (date[:4], date[4:6], date[6:])),
              P.string(C.MQCACF_OPERATION_TIME, "%s.%s.%s" % (time[:2], time[2:4], time[4:6])),
              P.string(C.MQCA_Q_MGR_NAME, qmgr)]
    for key, pid in (("q", C.MQCA_Q_NAME), ("channel", C.MQCACH_CHANNEL_NAME), ("xmitq", C.MQCACH_XMIT_Q_NAME)):
        if key in names:
            params.append(P.string(pid, names[key]))
    return P.group(C.MQGACF_OPERATION, params)


def activity(appl: str, appl_type: int, desc: str, *ops: P) -> P:
    """An MQGACF_ACTIVITY group: the application, its description and its operations."""
    return P.group(C.MQGACF_ACTIVITY, [P.string(C.MQCACF_APPL_NAME, appl), P.integer(C.MQIA_APPL_TYPE, appl_type),
                                       P.string(C.MQCACF_ACTIVITY_DESC, desc), *ops])


def _pcf_message(body, *, msg_type: int, fmt: str, feedback: int = 0, report: int = 0, correl: bytes = b"",
                 little: bool, ts: int, appl: str) -> MQMessage:
    enc = C.ENCODING_LITTLE if little else C.ENCODING_BIG
    date, time = _date_time(ts)
    body.encoding = enc
    md = MQMD(Version=1, MsgType=msg_type, Feedback=feedback, Report=report, Encoding=enc, CodedCharSetId=1208,
              Format=fmt, MsgId=(ts & ((1 << 192) - 1)).to_bytes(24, "big"),
              CorrelId=correl.ljust(24, b"\0")[:24], PutApplName=appl, PutApplType=C.MQAT_QMGR,
              PutDate=date, PutTime=time, ReplyToQ="DSPMQRTE.REPLY", ReplyToQMgr="QM1")
    return MQMessage(md, [], body, md_encoding=enc, md_ccsid=819)


class _Clock:
    def __init__(self, start: int):
        self.t = start

    def tick(self, ns: int = 1_000_000) -> int:
        self.t += ns
        return self.t


def generate(seed: int = 1, messages: int = 100, progress=None) -> list:
    """Every frame of the simulated network, in time order, as
    ``capture.writer.SimPacket`` records (ts_ns, Ethernet frame, ...).
    ``progress``, when given, is called as ``progress(done, total)``: the
    simulated messages (IBM MQ application messages, then MSMQ session
    messages) generated so far, of ``total`` (the CLI's progress bar)."""
    rnd = random.Random(seed)
    clock = _Clock(START_NS)
    qm1, qm2 = NETWORK["QM1"], NETWORK["QM2"]
    app = TcpConversation((NETWORK["app"], 40000 + rnd.randrange(1000)), qm1, isn_client=rnd.getrandbits(32),
                          isn_server=rnd.getrandbits(32), start_ns=clock.t, step_ns=20_000)
    dsp = TcpConversation((NETWORK["dspmqrte"], 41000 + rnd.randrange(1000)), qm1, isn_client=rnd.getrandbits(32),
                          isn_server=rnd.getrandbits(32), start_ns=clock.t + 7_000, step_ns=20_000)
    ch12 = TcpConversation((qm1[0], 50000 + rnd.randrange(1000)), qm2, isn_client=rnd.getrandbits(32),
                           isn_server=rnd.getrandbits(32), start_ns=clock.t + 13_000, step_ns=20_000)
    ch21 = TcpConversation((qm2[0], 51000 + rnd.randrange(1000)), qm1, isn_client=rnd.getrandbits(32),
                           isn_server=rnd.getrandbits(32), start_ns=clock.t + 17_000, step_ns=20_000)
    packets: list = []
    for conv in (app, dsp, ch12, ch21):
        packets += conv.handshake()

    n_trace = max(1, messages // 25)
    client = _Client(app, "payments-app", C.MQAT_UNIX, "app")
    packets += client.start()
    h_local = client.open("PAYMENTS", _OUTPUT)
    h_remote = client.open("PAYMENTS", _OUTPUT, qmgr="QM2")   # resolves to the transmission queue QM2
    h_reply = client.open("PAYMENTS.REPLY", _INPUT)
    client.open("PAYMENTS.ARCHIVE", _OUTPUT, reason=C.MQRC_UNKNOWN_OBJECT_NAME)
    client.open("SYSTEM.ADMIN.COMMAND.QUEUE", _OUTPUT, reason=C.MQRC_NOT_AUTHORIZED)
    packets += client.take() + client.inquire_qmgr()
    trace = _Client(dsp, "dspmqrte", C.MQAT_UNIX, "mqm")
    packets += trace.start()
    trace.open("TARGET.Q", _OUTPUT, qmgr="QM2")
    trace.open("DSPMQRTE.REPLY", _INPUT)
    packets += trace.take()
    n_sessions = max(1, messages // 50)
    per_session = max(2, messages // n_sessions // 2)
    total = messages + n_sessions * per_session
    for i in range(messages):
        little = rnd.random() < 0.6
        msg = _app_message(rnd, i, app.ts, little=little)
        split = rnd.choice((None, None, 2048, 512))
        hobj = h_remote if i % 2 == 0 else h_local
        request = client.next_request()
        packets += app.send(0, encode_put(msg, conversation_id=1, request_id=request, hobj=hobj,
                                          max_segment_length=split))
        packets += app.send(1, encode_put_reply(msg, conversation_id=1, request_id=request, hobj=hobj))
        if i % 2 == 0:  # destined to QM2: crosses the channel with an MQXQH
            packets += ch12.send(0, encode_message_data(msg, remote_q_name="PAYMENTS", remote_qmgr_name="QM2",
                                                        max_segment_length=rnd.choice((None, 1024))))
        if i % 5 == 4:  # the application gets a reply
            reply = _app_message(rnd, 10 ** 6 + i, app.ts, little=little)
            packets += client.get(h_reply, reply)
        if i % 20 == 10:  # the queue manager's heartbeat (HBINT) and the client's answer
            packets += client.heartbeat()
        if i % max(1, messages // n_trace) == 0:
            packets += _trace_route(rnd, i, dsp, ch12, ch21, trace)
        if progress is not None:
            progress(i + 1, total)
    packets += client.get(h_reply, None)  # drains the reply queue: 2033 MQRC_NO_MSG_AVAILABLE
    packets += client.stop() + trace.stop()

    for k in range(n_sessions):
        packets += _msmq_session(seed * 7919 + k, k, per_session, clock.t)
        if progress is not None:
            progress(messages + (k + 1) * per_session, total)
    packets += _pings(rnd, 3, clock.t)

    for conv in (app, dsp, ch12, ch21):
        packets += conv.close()
    packets.sort(key=lambda p: p.ts_ns)
    return packets


def _trace_route(rnd: random.Random, i: int, dsp: TcpConversation, ch12: TcpConversation,
                 ch21: TcpConversation, client: "_Client") -> list:
    """One trace-route message through QM1 -> QM2 with activity reports and a
    reply, every decision taken by the trace-route rules."""
    out: list = []
    h_target, h_reply = client.handles["TARGET.Q"], client.handles["DSPMQRTE.REPLY"]
    little = i % 2 == 1
    report = C.MQRO_ACTIVITY | C.MQRO_DISCARD_MSG
    qm = QueueManagerProfile("QM1")
    state = TraceRouteState(Detail=C.MQROUTE_DETAIL_MEDIUM, Accumulate=C.MQROUTE_ACCUMULATE_AND_REPLY,
                            Forward=C.MQROUTE_FORWARD_IF_SUPPORTED, Deliver=C.MQROUTE_DELIVER_NO, MaxActivities=10)
    msg = new_trace_route_message(state)
    # 1. dspmqrte puts it (a user-application activity: level LOW)
    put = activity("dspmqrte", C.MQAT_UNIX, "Display Route Application",
                    _op(C.MQOPER_PUT, "QM1", dsp.ts, q="TARGET.Q", xmitq="QM2"))
    o1 = apply_activity(msg, PerformedActivity(C.MQROUTE_DETAIL_LOW, put), qm, report_options=report)
    trm = _pcf_message(o1.message, msg_type=C.MQMT_DATAGRAM, fmt="MQADMIN", report=report, little=little,
                       ts=dsp.ts, appl="dspmqrte")
    request = client.next_request()
    out += dsp.send(0, encode_put(trm, conversation_id=1, request_id=request, hobj=h_target))
    out += dsp.send(1, encode_put_reply(trm, conversation_id=1, request_id=request, hobj=h_target))
    # 2. the sender MCA on QM1 gets it from the transmission queue and sends it (level MEDIUM)
    mca1 = activity("amqrmppa", C.MQAT_QMGR, "Sending Message Channel Agent",
                     _op(C.MQOPER_GET, "QM1", ch12.ts, q="QM2"),
                     _op(C.MQOPER_SEND, "QM1", ch12.ts, channel="QM1.TO.QM2", xmitq="QM2"))
    o2 = apply_activity(o1.message, PerformedActivity(C.MQROUTE_DETAIL_MEDIUM, mca1, action="forward",
                                                      remote_supports_trace_route=True), qm, report_options=report)
    reports = []
    if o1.activity_report:
        reports.append(activity_report(put, TraceRouteState.from_group(trace_route_group(o1.message))))
    if o2.activity_report:
        reports.append(activity_report(mca1, TraceRouteState.from_group(trace_route_group(o2.message))))
    if o2.disposition.value == "forwarded":
        fwd = _pcf_message(o2.message, msg_type=C.MQMT_DATAGRAM, fmt="MQADMIN", report=report, little=little,
                           ts=ch12.ts, appl="dspmqrte")
        out += ch12.send(0, encode_message_data(fwd, remote_q_name="TARGET.Q", remote_qmgr_name="QM2"))
        # 3. the receiver MCA on QM2 receives it and it arrives at its target (Deliver NO)
        mca2 = activity("amqrmppa", C.MQAT_QMGR, "Receiving Message Channel Agent",
                         _op(C.MQOPER_RECEIVE, "QM2", ch12.ts, channel="QM1.TO.QM2"),
                         _op(C.MQOPER_DISCARD, "QM2", ch12.ts, q="TARGET.Q"))
        o3 = apply_activity(o2.message, PerformedActivity(C.MQROUTE_DETAIL_MEDIUM, mca2, action="arrive"),
                            QueueManagerProfile("QM2"), report_options=report)
        if o3.activity_report:
            reports.append(activity_report(mca2, TraceRouteState.from_group(trace_route_group(o3.message))))
        if o3.reply:
            reply = trace_route_reply(o3.message)
            reply.md.CorrelId = trm.md.MsgId
            out += ch21.send(0, encode_message_data(reply, remote_q_name="DSPMQRTE.REPLY", remote_qmgr_name="QM1"))
            out += client.get(h_reply, reply)
    for rep in reports:
        rep.md.CorrelId = trm.md.MsgId
        rep.md.ReplyToQMgr = "QM1"
        out += client.get(h_reply, rep)
    return out


_OUTPUT = B.OPTIONS["MQOO_OUTPUT"] | B.OPTIONS["MQOO_FAIL_IF_QUIESCING"]
_INPUT = B.OPTIONS["MQOO_INPUT_AS_Q_DEF"] | B.OPTIONS["MQOO_FAIL_IF_QUIESCING"]
_QMGR_SELECTORS = (C.MQIA_COMMAND_LEVEL, C.MQIA_PLATFORM, C.MQIA_CODED_CHAR_SET_ID, C.MQCA_Q_MGR_NAME)


# the keyword arguments _Client passes to the builders, as typed dicts (each is
# a plain dict at run time) so that mypy checks them against the builders' parameters
class _ChannelArgs(TypedDict):
    channel_name: str
    ccsid: int


class _QmgrArgs(_ChannelArgs):
    qmgr_name: str
    mqm_id: str
    prod_id: str


class _TshmArgs(TypedDict):
    structid: str
    byte_order: str
    conversation_id: int
    request_id: int


class _ConnArgs(TypedDict):
    qmgr_name: str
    appl_name: str
    appl_type: int
    conversation_id: int


class _OpenArgs(TypedDict):
    object_name: str
    options: int
    object_qmgr_name: str
    object_type: int
    conversation_id: int
    request_id: int


class _Client:
    """One MQI client connection to QM1 (SVRCONN channel APP.SVRCONN,
    conversation 1): the channel start, MQCONNX, MQOPEN/MQINQ/MQGET/MQCLOSE
    and MQDISC, each request and its reply sharing a TSHM RequestID; the
    queue manager gives object handles from 2 up as it does."""

    def __init__(self, conv: TcpConversation, appl: str, appl_type: int, user: str):
        self.conv, self.appl, self.appl_type, self.user = conv, appl, appl_type, user
        self.request = 0
        self.next_hobj = 2
        self.handles: dict = {}   # object name -> handle (the last opened)
        self.open_handles: list = []
        self.out: list = []

    def take(self) -> list:
        """The packets :meth:`open` queued since the last call."""
        out, self.out = self.out, []
        return out

    def next_request(self) -> int:
        self.request += 1
        return self.request

    def _pair(self, request: bytes, reply: bytes) -> list:
        return self.conv.send(0, request) + self.conv.send(1, reply)

    def start(self) -> list:
        """INITIAL_DATA both ways (TSH, then TSHM once shared conversations
        are agreed), USERID_DATA, MQCONNX and its reply."""
        conv = self.conv
        ids = _ChannelArgs(channel_name="APP.SVRCONN", ccsid=819)
        qm = _QmgrArgs(qmgr_name="QM1", mqm_id="QM1_2025-11-21_08.00.00", prod_id="MQMM09040300", **ids)
        tshm = _TshmArgs(structid="TSHM", byte_order="little", conversation_id=1, request_id=0)
        # the queue manager's answers carry CtlFlag1 0x02 (tshark: "Error"), then 0x00, as in the capture
        out = conv.send(0, B.encode_initial_data(qmgr_name="QM1", **ids))
        out += conv.send(1, B.encode_initial_data(ctl_flags1=TCF_ERROR, **qm))
        out += conv.send(0, B.encode_initial_data(qmgr_name="QM1", **tshm, **ids))
        out += conv.send(1, B.encode_initial_data(ctl_flags1=0x00, **tshm, **qm))
        out += conv.send(0, B.encode_userid_data(user_id=self.user, conversation_id=1, request_id=0))
        conn = _ConnArgs(qmgr_name="QM1", appl_name=self.appl, appl_type=self.appl_type, conversation_id=1)
        request = self.next_request()
        out += self._pair(
            B.encode_conn(fcno=B.encode_fcno(prod_id="MQCC09030500"), request_id=request, **conn),
            B.encode_conn_reply(fcno=B.encode_fcno(prod_id="MQCC09030500", mqm_id="QM1_2025-11-21_08.00.00"),
                                request_id=request, **conn))
        return out

    def open(self, name: str, options: int, *, qmgr: str = "", object_type: int = 1, reason: int = 0) -> int:
        """MQOPEN and its reply (queued for :meth:`take`); the handle, or
        -1 (MQHO_UNUSABLE_HOBJ) with MQCC_FAILED and ``reason``."""
        hobj = B.OPTIONS["MQHO_UNUSABLE_HOBJ"]
        if not reason:
            hobj, self.next_hobj = self.next_hobj, self.next_hobj + 1
            self.handles[name] = hobj
            self.open_handles.append(hobj)
        od = _OpenArgs(object_name=name, options=options, object_qmgr_name=qmgr, object_type=object_type,
                       conversation_id=1, request_id=self.next_request())
        self.out += self._pair(B.encode_open(**od),
                               B.encode_open_reply(hobj=hobj, comp_code=C.MQCC_FAILED if reason else C.MQCC_OK,
                                                   reason=reason, **od))
        return hobj

    def inquire_qmgr(self) -> list:
        """MQOPEN of the queue manager object, MQINQ of four attributes, MQCLOSE."""
        hobj = self.open("", B.OPTIONS["MQOO_INQUIRE"] | B.OPTIONS["MQOO_FAIL_IF_QUIESCING"], object_type=5)
        request = self.next_request()
        out = self.take() + self._pair(
            B.encode_inq(hobj=hobj, selectors=_QMGR_SELECTORS, int_attr_count=3, char_attr_length=48,
                         conversation_id=1, request_id=request),
            B.encode_inq_reply(hobj=hobj, selectors=_QMGR_SELECTORS, int_attrs=(930, 3, 819),
                               char_attrs=b"QM1".ljust(48), conversation_id=1, request_id=request))
        request = self.next_request()
        out += self._pair(B.encode_close(hobj=hobj, conversation_id=1, request_id=request),
                          B.encode_close_reply(conversation_id=1, request_id=request))
        self.handles.pop("", None)
        self.open_handles.remove(hobj)
        return out

    def get(self, hobj: int, message) -> list:
        """MQGET (MQGMO_WAIT, a 4 MiB buffer) and its reply: the message, or
        2033 MQRC_NO_MSG_AVAILABLE when ``message`` is None."""
        request = self.next_request()
        little = message is None or message.md_encoding & 0x0F == 2
        order = "little" if little else "big"
        md = MQMessage(MQMD(Version=1), [], b"", md_encoding=C.ENCODING_LITTLE if little else C.ENCODING_BIG,
                       md_ccsid=819).encode()
        gmo = default_gmo(order, Options=B.OPTIONS["MQGMO_WAIT"] | B.OPTIONS["MQGMO_NO_SYNCPOINT"]
                            | B.OPTIONS["MQGMO_CONVERT"] | B.OPTIONS["MQGMO_FAIL_IF_QUIESCING"],
                            WaitInterval=5000)
        out = self.conv.send(0, B.encode_get(md, hobj=hobj, buffer_length=4 * 1024 * 1024, gmo=gmo,
                                             conversation_id=1, request_id=request))
        if message is None:
            return out + self.conv.send(1, B.encode_get_failed(hobj=hobj, byte_order=order, conversation_id=1,
                                                               request_id=request))
        return out + self.conv.send(1, encode_get_reply(message, conversation_id=1, request_id=request, hobj=hobj))

    def heartbeat(self) -> list:
        return self.conv.send(1, B.encode_heartbeat(request=True, conversation_id=1)) + \
            self.conv.send(0, B.encode_heartbeat(request=False, conversation_id=1))

    def stop(self) -> list:
        """MQCLOSE of every open handle, then MQDISC."""
        out: list = []
        for hobj in self.open_handles:
            request = self.next_request()
            out += self._pair(B.encode_close(hobj=hobj, conversation_id=1, request_id=request),
                              B.encode_close_reply(conversation_id=1, request_id=request))
        self.handles, self.open_handles = {}, []
        request = self.next_request()
        return out + self._pair(B.encode_disc(conversation_id=1, request_id=request),
                                B.encode_disc_reply(conversation_id=1, request_id=request))


def _msmq_session(seed: int, k: int, n: int, start: int) -> list:
    from .msmq.builders import simulate_session

    sess = simulate_session(seed, messages=n)
    conv = TcpConversation(("10.2.0.%d" % (10 + k % 200), 49152 + k), NETWORK["msmq_server"],
                           isn_client=seed & 0xFFFFFFFF, isn_server=(seed * 31) & 0xFFFFFFFF,
                           start_ns=start + 3_000 + k * 50_000_000, step_ns=30_000)
    out = conv.handshake()
    ini, acc = list(sess.initiator_packets), list(sess.acceptor_packets)
    while ini or acc:
        if ini:
            out += conv.send(0, ini.pop(0)[1])
        if acc:
            out += conv.send(1, acc.pop(0)[1])
    out += conv.close()
    return out


def _pings(rnd: random.Random, n: int, start: int) -> list:
    import uuid

    from .capture.writer import SimPacket
    from .msmq import PingFlags, PingPacket

    out = []
    for i in range(n):
        cookie = rnd.getrandbits(32)
        # [MS-MQQB] 2.2.7 / 3.1.7.7: the response echoes the request's Cookie and RC
        req = PingPacket(Flags=PingFlags(RC=1), Cookie=cookie, QMGuid=uuid.UUID(int=rnd.getrandbits(128))).encode()
        resp = PingPacket(Flags=PingFlags(RC=1), Cookie=cookie, QMGuid=uuid.UUID(int=rnd.getrandbits(128))).encode()
        for j, (src, dst, payload) in enumerate((("10.2.0.9", "10.2.0.1", req), ("10.2.0.1", "10.2.0.9", resp))):
            frame = ethernet(ipv4(src, dst, 17, udp(src, dst, 3527, 3527, payload), ident=i * 2 + j + 1))
            out.append(SimPacket(start + 5_000 + i * 1_000_000 + j * 200_000, frame, j, 0, len(payload), 0))
    return out


def write_capture(path_or_file, seed: int = 1, messages: int = 100, progress=None) -> int:
    """Write the simulated traffic as a pcap; returns the number of frames.
    ``progress``: see :func:`generate`."""
    packets = generate(seed, messages, progress)
    if hasattr(path_or_file, "write"):
        w = PcapWriter(path_or_file, nanosecond=True)
        for p in packets:
            w.write(p.ts_ns, p.frame)
    else:
        with open(path_or_file, "wb") as f:
            w = PcapWriter(f, nanosecond=True)
            for p in packets:
                w.write(p.ts_ns, p.frame)
    return len(packets)
