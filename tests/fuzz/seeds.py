"""Valid seed inputs per fuzz target, built from the shared vectors and the
project's own encoders (so mutation starts from deep, well-formed inputs)."""
from __future__ import annotations

import struct
from pathlib import Path

VECTORS = Path("/work/shared/vectors")
CAPTURES = Path("/work/shared/captures")


def pcf_messages():
    from mqcodec.ibmmq.pcf import PcfMessage, PcfParameter as P

    params = [
        P.integer(1, 7), P.integer64(2, -5), P.integer_list(3, [1, 2, 3]), P.integer64_list(4, [1 << 40]),
        P.string(2016, "QUEUE.ONE"), P.string_list(2015, ["A", "BB", "CCC"]), P.byte_string(7001, b"\x01\x02\x03"),
        P.integer_filter(5, 1, 9), P.string_filter(2016, 2, "Q*"), P.byte_string_filter(7002, 3, b"\xff"),
        P.group(8001, [P.integer(1, 1), P.group(8002, [P.string(3, "x")])]),
    ]
    out = []
    for enc in (273, 546):
        out.append(PcfMessage.new(1, 13, params, encoding=enc))
        out.append(PcfMessage.new(2, 13, params[:3], encoding=enc, eph={"Format": "MQADMIN "}))
    return out


def pcf_seeds():
    from mqcodec.ibmmq import encode_pcf

    out = [encode_pcf(m) for m in pcf_messages()]
    for p in sorted((VECTORS / "ibmmq").glob("*.dat")):
        out.append(p.read_bytes())
    return out


def mq_seeds():
    from mqcodec.ibmmq import MQMD, MQRFH2, MQMessage, MQXQH, encode_pcf

    pcf = encode_pcf(pcf_messages()[0])
    out = [
        MQMessage(MQMD(Format="MQSTR", CodedCharSetId=819), [], b"hello").encode(),
        MQMessage(MQMD(Format="MQHRF2", Encoding=273, CodedCharSetId=819),
                  [MQRFH2(folders=["<usr><k>v</k></usr>"], Encoding=273, CodedCharSetId=1208, Format="MQSTR")],
                  b"body").encode(),
        MQMessage(MQMD(Format="MQADMIN", Encoding=273, CodedCharSetId=819), [], pcf).encode(),
        MQMessage(MQMD(Format="MQXMIT", Encoding=273, CodedCharSetId=819),
                  [MQXQH(RemoteQName="R", MsgDesc=MQMD(PutApplName="app", Format="MQSTR"))], b"x").encode(),
        MQMessage(MQMD(Version=2, Format="MQSTR", Encoding=546, CodedCharSetId=1208), [], b"v2",
                  md_encoding=546).encode(),
    ]
    return out


def msmq_seeds():
    from mqcodec.msmq.builders import simulate_session

    out = []
    for p in sorted((VECTORS / "msmq").rglob("*.bin")):
        if "ping" not in p.name:
            out.append(p.read_bytes())
    s = simulate_session(1, messages=3)
    out += [p for _k, p in s.initiator_packets + s.acceptor_packets]
    return out + msmq_queue_type_seeds()


def msmq_queue_type_seeds():
    """UserMessages whose destination, admin and response queues use every
    queue format type ([MS-MQMQ] 2.2.18.1.3: private by identifier, private
    with a queue-manager GUID, public, direct): the simulator sends direct
    format names only, and the instrumented campaigns never reached the
    compiled decoder's PRIVATE=/PUBLIC= rendering from them."""
    import uuid

    from mqcodec.msmq.base import BaseFlags, BaseHeader
    from mqcodec.msmq.packet import Packet, encode_packet
    from mqcodec.msmq.properties import MessagePropertiesHeader
    from mqcodec.msmq.user import (DirectQueueFormatName, PrivateQueueFormatName, PrivateQueueFormatNameId,
                                   PublicQueueFormatName, UserFlags, UserHeader)

    g1, g2, g3 = uuid.UUID(int=0x1234), uuid.UUID(int=0xABCDEF << 64), uuid.UUID(int=7 << 100)
    cases = [
        (dict(DQ=3), dict(DestinationQueue=PrivateQueueFormatNameId(5))),
        (dict(DQ=5, AQ=6, RQ=2), dict(DestinationQueue=PublicQueueFormatName(g3),
                                      AdminQueue=PrivateQueueFormatName(g3, 7),
                                      ResponseQueue=PrivateQueueFormatNameId(8))),
        (dict(DQ=3, AQ=3, RQ=5), dict(DestinationQueue=PrivateQueueFormatNameId(1),
                                      AdminQueue=PrivateQueueFormatNameId(2), ResponseQueue=PublicQueueFormatName(g1))),
        (dict(DQ=7, AQ=5, RQ=6), dict(DestinationQueue=DirectQueueFormatName("OS:h\\PRIVATE$\\q"),
                                      AdminQueue=PublicQueueFormatName(g2),
                                      ResponseQueue=PrivateQueueFormatName(g1, 3))),
    ]
    out = []
    for flags, queues in cases:
        uh = UserHeader(SourceQueueManager=g1, QueueManagerAddress=g2, SentTime=5, MessageID=9,
                        Flags=UserFlags(MP=1, **flags), **queues)
        out.append(encode_packet(Packet("UserMessage", BaseHeader(Flags=BaseFlags(), TimeToReachQueue=3600),
                                        UserHeader=uh, MessagePropertiesHeader=MessagePropertiesHeader(
                                            Label="l", BodyType=0x11, MessageBody=b"b"))))
    return out


def ping_seeds():
    return [p.read_bytes() for p in sorted((VECTORS / "msmq").glob("*ping*.bin"))]


def mq_stream_seeds():
    from mqcodec.ibmmq import MQMD, MQMessage
    from mqcodec.ibmmq.builders import encode_async_message, encode_put

    out = []
    msg = MQMessage(MQMD(Format="MQSTR", CodedCharSetId=819), [], b"hello world" * 20).encode()
    out.append(encode_put(msg))
    out.append(encode_async_message(msg, max_segment_length=120))
    return [b"".join(out)] + out


def msmq_stream_seeds():
    from mqcodec.msmq.builders import simulate_session

    s = simulate_session(2, messages=4)
    return [s.initiator, s.acceptor]


def capture_seeds():
    out = []
    cap = CAPTURES / "ibmmq_jms_client_1414.pcap"
    if cap.exists():
        out.append(cap.read_bytes()[:65536])
    return out


def capture_core_seeds():
    """Small whole captures: simulator traffic (IBM MQ client and channel
    sessions, MSMQ sessions, pings) and the start of the real capture."""
    import io

    from mqcodec import synth

    out = []
    for seed, n in ((1, 2), (2, 3), (3, 4)):
        f = io.BytesIO()
        synth.write_capture(f, seed, n)
        out.append(f.getvalue())
    cap = CAPTURES / "ibmmq_jms_client_1414.pcap"
    if cap.exists():
        out.append(cap.read_bytes()[:40000])
    # simulator traffic with a share of its IPv4 packets fragmented (in order, reversed,
    # shuffled, duplicated, overlapping, dropped, late, snap-cut): the core's reassembly
    import os
    import sys

    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from test_capture_fragments import fragmented_capture
    for seed in (1, 2, 3):
        out.append(fragmented_capture(seed, messages=3, rate=0.6))
    return out


def split_seed(records) -> bytes:
    """The inverse of harnesses.split_records for up to 4 records."""
    records = list(records)[:4]
    n = len(records)
    body = b"".join(records)
    cuts, pos = [], 0
    for r in records[:-1]:
        pos += len(r)
        cuts.append(max(0, min(255, (pos * 256 + len(body) - 1) // max(1, len(body)))))
    return bytes([n - 1]) + bytes(cuts) + body


def frames_seeds():
    cap = CAPTURES / "ibmmq_jms_client_1414.pcap"
    if not cap.exists():
        return []
    data = cap.read_bytes()
    linktype = struct.unpack_from("<I", data, 20)[0]
    frames, pos = [], 24
    while pos + 16 <= len(data) and len(frames) < 40:
        incl = struct.unpack_from("<I", data, pos + 8)[0]
        frames.append(data[pos + 16:pos + 16 + incl])
        pos += 16 + incl
    lt_index = {1: 0, 0: 1, 101: 2, 113: 3, 276: 4}.get(linktype, 3)
    return [bytes([lt_index]) + split_seed(frames[i:i + 2]) for i in range(0, len(frames), 2)]





# ====================================================================== deep seeds (issue #8)
# The seeds above stop short of whole parts of the codec (the audit of issue #8:
# MultiQueueFormatHeader, the MS-MQRR extension chain, OrderAck/FinalAck bodies,
# SRMP/SOAP, the opaque IBM MQ headers, pcapng, gzip).  Everything below is
# built with the project's encoders, deterministic and small.

_G1 = "c626ea11-e6b6-9749-9595-9150557358d1"
_G2 = "00112233-4455-6677-8899-aabbccddeeff"
_G3 = "6f57e4c2-0a8d-4b2c-9c4d-7e4a1b2c3d4e"


def _user_packet(flags=None, base_flags=None, dest=None, mp=None, order="spec", **headers):
    """An encoded UserMessage: UserHeader flags ``flags``, BaseHeader flags
    ``base_flags``, optional headers ``headers`` (their flags are set here)."""
    import uuid

    from mqcodec.msmq.base import BaseFlags, BaseHeader
    from mqcodec.msmq.packet import Packet, encode_packet
    from mqcodec.msmq.properties import MessagePropertiesHeader
    from mqcodec.msmq.user import DirectQueueFormatName, UserFlags, UserHeader

    uflags = dict(MP=1, DQ=7)
    uflags.update(flags or {})
    bflags = dict(base_flags or {})
    bit = {"TransactionHeader": ("TH", "u"), "SecurityHeader": ("SH", "u"), "DebugHeader": ("DH", "b"),
           "SRMPEnvelopeHeader": ("AH", "u"), "SoapHeader": ("HH", "u"), "MultiQueueFormatHeader": ("MQ", "u"),
           "SessionHeader": ("SH", "b")}
    for name in headers:
        if name in bit:
            f, owner = bit[name]
            (uflags if owner == "u" else bflags)[f] = 1
    if "TransactionHeader" in headers:
        uflags["DM"] = 1
        bflags["PR"] = 0
    uh = UserHeader(SourceQueueManager=uuid.UUID(_G1), QueueManagerAddress=uuid.UUID(_G2), SentTime=1700000000,
                    MessageID=42, Flags=UserFlags(**uflags),
                    DestinationQueue=dest if dest is not None else DirectQueueFormatName("TCP:10.0.0.2\\PRIVATE$\\q"))
    if mp is None:
        mp = MessagePropertiesHeader(Label="seed", BodyType=0x11, MessageBody=b"<b/>")
    pkt = Packet("UserMessage", BaseHeader(Flags=BaseFlags(**bflags), TimeToReachQueue=60),
                 UserHeader=uh, MessagePropertiesHeader=mp, **headers)
    pkt.order = order
    return encode_packet(pkt)


def _every_format_name():
    """One format name of each element type MQFFormatNameElement encodes
    ([MS-MQMQ] 2.2.18.1.4: public, private, direct, distribution list)."""
    import uuid

    from mqcodec.msmq.formatname import FormatName

    g1, g2, g3 = uuid.UUID(_G1), uuid.UUID(_G2), uuid.UUID(_G3)
    return [FormatName.public(g1), FormatName.private(g2, 0x1A2B), FormatName.direct("TCP:10.1.2.3\\PRIVATE$\\orders"),
            FormatName.distribution_list(g3), FormatName.direct("OS:host\\q"), FormatName.public(g3)]


def msmq_deep_seeds():
    """UserMessages with every optional header: MultiQueueFormatHeader (every
    element type, odd alignments, a signature), Transaction (with and without
    ConnectorQMGuid), Security, Debug (with and without QueueIdentifier),
    SRMP envelope + Compound message, SOAP, Session; and OrderAck / FinalAck
    packets with their bodies."""
    import struct
    import uuid

    from mqcodec.msmq import constants as MC
    from mqcodec.msmq.optional_headers import (CompoundMessageHeader, DebugHeader, MultiQueueFormatHeader,
                                               SecurityHeader, SoapHeader, SRMPEnvelopeHeader, TransactionHeader)
    from mqcodec.msmq.properties import MessagePropertiesHeader
    from mqcodec.msmq.session import SessionHeader
    from mqcodec.msmq.user import PrivateQueueFormatNameId

    fns = _every_format_name()
    g3 = uuid.UUID(_G3)
    out = []
    mqf = MultiQueueFormatHeader.create(fns, fns[1:3], fns[3:], b"SIG\x01\x02")
    out.append(_user_packet(MultiQueueFormatHeader=mqf))
    out.append(_user_packet(MultiQueueFormatHeader=MultiQueueFormatHeader.create(fns[2:3], [], [fns[0]], b"")))
    out.append(_user_packet(
        TransactionHeader=TransactionHeader(Flags=0x2, TxSequenceNumber=3, PreviousTxSequenceNumber=2),
        SecurityHeader=SecurityHeader.create(Flags=2, SecurityID=g3.bytes_le),
        DebugHeader=DebugHeader(Flags=1, QueueIdentifier=g3.bytes_le),
        base_flags={"TR": 1}))
    out.append(_user_packet(
        SecurityHeader=SecurityHeader.create(Flags=0x0002 | 0x0020, SecurityID=g3.bytes_le, EncryptionKey=b"KEY01",
                                             Signature=b"SIGNATU", SenderCert=b"0123456789"),
        DebugHeader=DebugHeader(Flags=0),
        SessionHeader=SessionHeader(AckSequenceNumber=3, RecoverableMsgAckFlags=5, WindowSize=64)))
    env = SRMPEnvelopeHeader.create("<se:Envelope xmlns:se='http://schemas.xmlsoap.org/soap/envelope/'>"
                                    "<se:Header/></se:Envelope>")
    blob = b"--MSMQ\r\nContent-Type: text/xml\r\n\r\n<b>hello</b>\r\n--MSMQ--"
    cmp_ = CompoundMessageHeader.create(blob, 34, 12)
    out.append(_user_packet(SRMPEnvelopeHeader=env, CompoundMessageHeader=cmp_,
                            SoapHeader=SoapHeader.create("<h:x xmlns:h='urn:h'/>", "<b>hello</b>")))
    out.append(_user_packet(
        TransactionHeader=TransactionHeader(Flags=0x1, TxSequenceNumber=9, PreviousTxSequenceNumber=8,
                                            ConnectorQMGuid=uuid.UUID(_G2).bytes_le),
        SRMPEnvelopeHeader=env, CompoundMessageHeader=cmp_, SoapHeader=SoapHeader.create("", "x"),
        MultiQueueFormatHeader=mqf, DebugHeader=DebugHeader(Flags=0)))
    # OrderAck / FinalAck ([MS-MQQB] 2.2.4 / 2.2.5): to order_queue$, label "QM Ordering Ack", BaseHeader.Flags 0
    order_q = PrivateQueueFormatNameId(MC.ORDER_QUEUE_ID)
    order_body = struct.pack("<II", 9, 0x60000000) + struct.pack("<II", 5, 4) + b"\0" * 20
    final_body = struct.pack("<II", 9, 0x60000000) + struct.pack("<II", 5, 4) + g3.bytes_le + struct.pack("<I", 2286)
    for cls, body in ((MC.MQMSG_CLASS["MQMSG_CLASS_ORDER_ACK"], order_body), (0x4000, final_body),
                      (0x4001, final_body[:-4])):
        mp = MessagePropertiesHeader(Label=MC.ORDER_ACK_LABEL, BodyType=0x11, MessageClass=cls, MessageBody=body)
        out.append(_user_packet(flags={"DQ": 3}, dest=order_q, mp=mp))
    return out


def msmq_remote_read_seeds():
    """[MS-MQRR] 2.2.5 ExtensionHeader chains (Subqueue, DeadLetter,
    ExtendedAddress IPv4/IPv6) after a UserMessage (decode_packet remote_read=True)."""
    from mqcodec.msmq.optional_headers import (DeadLetterHeader, ExtendedAddressHeader, ExtensionHeader,
                                               SubqueueHeader)

    def w(text):
        return (text + "\x00").encode("utf-16-le")

    um = _user_packet()
    out = []
    for with_dl, addr in ((True, (4, bytes([192, 0, 2, 1]) + b"\0" * 12)),
                          (False, (16, bytes.fromhex("20010db8000000000000000000000001")))):
        sub = SubqueueHeader(148, 0x8000 << 1, 2, 1, 0x12345678, w("poison").ljust(64, b"\0"),
                             w("retry").ljust(64, b"\0"))
        dl = DeadLetterHeader.create("DIRECT=OS:host\\private$\\dlq") if with_dl else None
        ea = ExtendedAddressHeader(28, addr[0], 1 if addr[0] == 4 else 6, 0, addr[1])
        rest = sub.encode() + (dl.encode() if dl else b"") + ea.encode()
        ext = ExtensionHeader(12, len(rest), 0x12 | (1 if with_dl else 0))
        out.append(um + ext.encode() + rest)
    return out


def msmq_eod_seeds():
    """UserMessages in the implementation's header order with EodHeader and
    EodAckHeader (UserHeader bits 26/27, decode_packet order="implementation")."""
    from mqcodec.msmq.optional_headers import DebugHeader, MultiQueueFormatHeader
    from mqcodec.msmq.srmp import EodAckHeader, EodHeader

    sid, oq = "SID".encode("utf-16-le"), "ORDER_Q".encode("utf-16-le")
    eod = EodHeader(0, 0, len(sid), len(oq), sid + oq, b"\0" * (-(12 + len(sid + oq)) % 4))
    ack = EodAckHeader(0, 0, b"\1" * 8, b"\2" * 8, len(sid), sid, b"\0" * (-(24 + len(sid)) % 4))
    out = []
    for headers in ({"EodHeader": eod, "EodAckHeader": ack, "DebugHeader": DebugHeader(Flags=0),
                     "MultiQueueFormatHeader": MultiQueueFormatHeader.create(_every_format_name()[:2])},
                    {"EodHeader": eod}, {"EodAckHeader": ack}):
        raw = bytearray(_user_packet(order="implementation", **headers))
        flags = struct.unpack_from("<I", raw, 60)[0]            # UserHeader.Flags (after 16 + 44 bytes)
        flags |= (1 << 26 if "EodHeader" in headers else 0) | (1 << 27 if "EodAckHeader" in headers else 0)
        struct.pack_into("<I", raw, 60, flags)
        out.append(bytes(raw))
    return out


def msmq_seeds_deep():
    return msmq_deep_seeds() + msmq_remote_read_seeds() + msmq_eod_seeds()


def mq_deep_seeds():
    """Header chains with every header the codec decodes (MQMDE, MQRFH v1,
    MQRFH2 with several folders and NameValueCCSIDs, MQCIH, MQIIH, MQWIH,
    MQRMH, MQDH, MQXQH, MQDLH, MQEPH + PCF) in both encodings and several
    CCSIDs (EBCDIC 500/1047/37 included)."""
    from mqcodec.ibmmq import MQMD, MQMessage
    from mqcodec.ibmmq.headers import MQCIH, MQDH, MQDLH, MQIIH, MQMDE, MQRFH, MQRFH2, MQRMH, MQWIH, MQXQH
    from mqcodec.ibmmq.pcf import PcfMessage, PcfParameter as P, encode_pcf

    fmt = {MQMDE: "MQHMDE", MQDLH: "MQDEAD", MQRFH2: "MQHRF2", MQXQH: "MQXMIT", MQRFH: "MQHRF", MQCIH: "MQCICS",
           MQIIH: "MQIMS", MQWIH: "MQHWIH", MQRMH: "MQHREF", MQDH: "MQHDIST"}

    def chain(md, headers, body, body_format, md_enc, md_ccsid):
        prev = md
        for h in headers:
            (prev.fields["MsgDesc"] if isinstance(prev, MQXQH) else prev).fields["Format"] = fmt[type(h)]
            prev = h
        (prev.fields["MsgDesc"] if isinstance(prev, MQXQH) else prev).fields["Format"] = body_format
        return MQMessage(md, headers, body, md_encoding=md_enc, md_ccsid=md_ccsid).encode()

    out = []
    for md_enc, enc2, cc in ((273, 546, 819), (546, 273, 1208), (273, 273, 500), (546, 546, 1047), (273, 546, 37)):
        e = dict(Encoding=enc2, CodedCharSetId=cc)
        rfh2 = MQRFH2(folders=["<mcd><Msd>jms_text</Msd></mcd>", "<jms><Dst>queue:///Q1</Dst><Pri>4</Pri></jms>",
                               "<usr><k>v\u00e9</k><n dt='i4'>7</n></usr>"],
                      NameValueCCSID=1208 if cc != 37 else 1200, **e)
        out.append(chain(MQMD(Version=2, Encoding=enc2, CodedCharSetId=cc, MsgId=b"\x01" * 24),
                         [MQMDE(MsgSeqNumber=3, GroupId=b"G" * 24, **e), rfh2,
                          MQRFH(NameValueString="OPT1 v1 OPT2 'two words'", **e)],
                         b"text body", "MQSTR", md_enc, cc))
        out.append(chain(MQMD(Encoding=enc2, CodedCharSetId=cc),
                         [MQCIH(Data=bytes(range(40)), **e), MQIIH(Data=b"\x40" * 56, **e),
                          MQWIH(Data=b"SVC".ljust(92, b" "), **e), MQRMH(Data=b"\0" * 80, **e),
                          MQDH(Data=b"\0" * 20, **e)],
                         b"\x00\x01", "", md_enc, cc))
        out.append(chain(MQMD(Encoding=enc2, CodedCharSetId=cc),
                         [MQXQH(RemoteQName="RQ", RemoteQMgrName="QM2",
                                MsgDesc=MQMD(PutApplName="app", Encoding=enc2, CodedCharSetId=cc)),
                          MQDLH(Reason=2085, DestQName="Q.X", DestQMgrName="QM.X", **e)],
                         b"dead", "MQSTR", md_enc, cc))
    # PCF behind an MQEPH (MQHEPCF) and after an MQDLH
    for enc in (273, 546):
        pcf = encode_pcf(PcfMessage.new(2, 13, [P.integer(1, 7), P.string(2016, "Q.ONE")], encoding=enc,
                                        eph={"Format": "MQADMIN "}))
        out.append(chain(MQMD(Encoding=enc, CodedCharSetId=819), [], pcf, "MQHEPCF", enc, 819))
        pcf2 = encode_pcf(PcfMessage.new(1, 13, [P.integer(1, 1)], encoding=enc, ccsid=500))
        out.append(chain(MQMD(Encoding=enc, CodedCharSetId=500),
                         [MQDLH(Reason=2053, DestQName="SYSTEM.ADMIN", Encoding=enc, CodedCharSetId=500)],
                         pcf2, "MQADMIN", enc, 500))
    return out


def pcf_deep_messages():
    """PCF with every parameter type (MQCFSL, MQCFBS, MQCFIL64, the three
    filters), nested groups, EBCDIC strings, and the trace-route builders'
    messages, replies and activity reports."""
    from mqcodec.ibmmq.pcf import PcfMessage, PcfParameter as P

    out = []
    for enc, cc in ((273, 500), (546, 1047), (273, 37), (546, 1208), (273, 819)):
        params = [P.string_list(2015, ["Q.A", "QB", "QUEUE.C"], ccsid=cc), P.byte_string(7001, bytes(range(24))),
                  P.integer64_list(4, [1 << 40, -1, 0]), P.integer_filter(5, 4, 9),
                  P.string_filter(2016, 2, "SYSTEM.*"), P.byte_string_filter(7002, 3, b"\x01\xff"),
                  P.string(3008, "DISP\u00e9" if cc in (1208, 819) else "DISPLAY", ccsid=cc),
                  P.group(8001, [P.integer(1, 1), P.group(8002, [P.string(3, "x"), P.group(8003, [
                      P.integer_list(3, [1, 2]), P.string_list(2015, ["IN"])])])])]
        out.append(PcfMessage.new(1, 13, params, encoding=enc, ccsid=cc))
    return out + trace_route_messages()


def trace_route_messages():
    """A trace-route message accumulated over three hops, its reply, and the
    activity reports (mqcodec.ibmmq.traceroute_rules builders)."""
    from mqcodec.ibmmq import constants as C
    from mqcodec.ibmmq.pcf import PcfParameter as P
    from mqcodec.ibmmq.traceroute_rules import (PerformedActivity, QueueManagerProfile, TraceRouteState,
                                                activity_report, apply_activity, new_trace_route_message,
                                                trace_route_reply)

    def op(optype, qmgr, date, time, **kw):
        ps = [P.integer(C.MQIACF_OPERATION_TYPE, optype), P.string(C.MQCACF_OPERATION_DATE, date),
              P.string(C.MQCACF_OPERATION_TIME, time), P.string(C.MQCA_Q_MGR_NAME, qmgr)]
        if "q" in kw:
            ps.append(P.string(C.MQCA_Q_NAME, kw["q"]))
        if "channel" in kw:
            ps.append(P.string(C.MQCACH_CHANNEL_NAME, kw["channel"]))
        return P.group(C.MQGACF_OPERATION, ps)

    def act(appl, *ops):
        return P.group(C.MQGACF_ACTIVITY, [P.string(C.MQCACF_APPL_NAME, appl), P.integer(C.MQIA_APPL_TYPE, 7), *ops])

    hops = [act("dspmqrte", op(C.MQOPER_PUT, "QM1", "2026-11-21", "10.00.00", q="QM2.REMOTE")),
            act("amqrmppa", op(C.MQOPER_GET, "QM1", "2026-11-21", "10.00.01", q="QM2.XMITQ"),
                op(C.MQOPER_SEND, "QM1", "2026-11-21", "10.00.01", channel="QM1.TO.QM2")),
            act("amqrmppa", op(C.MQOPER_RECEIVE, "QM2", "2026-11-21", "10.00.02", channel="QM1.TO.QM2"),
                op(C.MQOPER_PUT, "QM2", "2026-11-21", "10.00.02", q="TARGET.Q"))]
    out = []
    for enc in (C.ENCODING_BIG, 546):
        msg = new_trace_route_message(TraceRouteState(Accumulate=C.MQROUTE_ACCUMULATE_IN_MSG,
                                                      Detail=C.MQROUTE_DETAIL_MEDIUM), encoding=enc)
        out.append(msg)
        for level, g in zip([C.MQROUTE_DETAIL_LOW, C.MQROUTE_DETAIL_MEDIUM, C.MQROUTE_DETAIL_MEDIUM], hops):
            msg = apply_activity(msg, PerformedActivity(level, g), QueueManagerProfile()).message
        out.append(msg)
        out.append(trace_route_reply(msg).body)
    out += [activity_report(g, TraceRouteState(RecordedActivities=i + 1)).body for i, g in enumerate(hops)]
    return out


def route_seeds():
    """Trace-route bodies, and whole MQ messages carrying them (MQMD first,
    as ``mqcodec route`` also reads)."""
    from mqcodec.ibmmq import MQMD, MQMessage, encode_pcf

    msgs = trace_route_messages()
    out = [encode_pcf(m) for m in msgs]
    for m in (msgs[1], msgs[-1]):
        out.append(MQMessage(MQMD(Format="MQADMIN", Encoding=m.encoding, CodedCharSetId=1208), [], m,
                             md_encoding=m.encoding).encode())
    return out


def report_seeds():
    """Report labels and bodies ([MS-MQQB] seed 003 forms), as UTF-16LE."""
    import datetime as dt
    import uuid

    from mqcodec.msmq.report import TracedUserMessage, trace_message_for

    out = []
    for i, when in enumerate((dt.datetime(2023, 4, 11, 23, 5, 9), dt.datetime(2000, 1, 1, 0, 0, 0))):
        t = trace_message_for(TracedUserMessage(SourceQueueManager=uuid.UUID(_G1), MessageID=0x2A + i, RC=3,
                                                QueueIdentifier=uuid.UUID(_G3), DestinationQueue="DIRECT=OS:h\\q",
                                                TR=True), now=when, seconds=bool(i == 0))
        out += [t.label_bytes(), t.body_bytes()]
    dest = "PUBLIC=" + _G3.upper()
    texts = [
        "476F:0000002A:03 sent from HOSTA to 10.0.0.2 at 11:05:09 PM Tue,Apr 11 23\x00",
        "Report message conflict\x00",
        "<MESSAGE ID>0000002A</MESSAGE ID>\r\n<TARGET QUEUE>" + dest + "</TARGET QUEUE>\r\n"
        "<NEXT HOP>10.0.0.2</NEXT HOP>\r\n<HOP COUNT>03 </HOP COUNT>\r\n",
        "<ORIGINAL QUEUE>PUBLIC=604DCFCD-72F5-46E5-85C1-F3CE69956700</ORIGINAL QUEUE>\r\n"
        "<MESSAGE ID>0000002A</MESSAGE ID>\r\n<TARGET QUEUE>" + dest + "</TARGET QUEUE>\r\n<NEXT HOP>10.0.0.2</NEXT HOP>",
    ]
    out += [t.encode("utf-16-le") for t in texts]
    # format names: every kind the parser knows, and a multiple-element name
    from mqcodec.msmq.formatname import FormatName
    g = uuid.UUID(_G1)
    fns = _every_format_name() + [FormatName.machine(g), FormatName.machine(g, "JOURNAL"),
                                  FormatName.connector(g, True), FormatName.multicast("234.1.1.1", 8001),
                                  FormatName.public(g, journal=True), FormatName.distribution_list(g, "dom.example")]
    fns.append(FormatName.multiple(*fns[:4]))
    out += [str(f).encode("utf-16-le") for f in fns]
    out.append("DIRECT=HTTP://host/msmq/private$/q;XACTONLY".encode("utf-16-le"))
    out.append("DIRECT=TCP:10.0.0.1\\PRIVATE$\\q;POISON".encode("utf-16-le"))
    return out


def offsets_seeds():
    """Inputs of harnesses.fuzz_offsets: 8 bytes (offset, end; little-endian
    u32 each) then a buffer holding an MQ message / PCF body / TSH segment
    at that offset."""
    from mqcodec.ibmmq import MQMD, MQMessage
    from mqcodec.ibmmq.builders import encode_put

    out = []
    pads = (0, 3, 17)
    bodies = mq_seeds()[:3] + [mq_deep_seeds()[0]] + pcf_seeds()[:2] + [encode_put(
        MQMessage(MQMD(Format="MQSTR", CodedCharSetId=819), [], b"hello").encode())]
    for i, b in enumerate(bodies):
        pad = pads[i % 3]
        buf = b"\xA5" * pad + b + b"\x5A" * (i % 2) * 5
        out.append(struct.pack("<II", pad, pad + len(b) if i % 2 else 0xFFFFFFFF) + buf)
    out.append(struct.pack("<II", 0, 8) + struct.pack("<Q", 0x0123456789ABCDEF))
    return out


def capture_deep_seeds():
    """pcapng (several interfaces and link types, both SHB byte orders, two
    sections, option blocks, SPB/PB/ISB/NRB/custom blocks) and gzip-compressed
    pcap and pcapng, carrying MQ and MSMQ conversations (capture.writer)."""
    import gzip
    import io

    from mqcodec.capture import writer as W
    from mqcodec.ibmmq import MQMD, MQMessage
    from mqcodec.ibmmq.builders import encode_put

    mq = encode_put(MQMessage(MQMD(Format="MQSTR", CodedCharSetId=819), [], b"hello").encode())
    ms = msmq_stream_seeds()[0][:600]

    def conv(link, port, payload, client=("10.0.0.1", 40000)):
        c = W.TcpConversation(client=client, server=("10.0.0.2" if ":" not in client[0] else "fd00::2", port),
                              link=link, mss=536)
        return c.handshake() + c.send(0, payload) + c.send(1, payload[:64]) + c.close()

    def opt(o, code, value):
        return struct.pack(o + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)

    out = []
    for order in ("<", ">"):
        f = io.BytesIO()
        w = W.PcapngWriter(f, byte_order=order)
        links = [("ethernet", 1), ("sll", 113), ("raw", 101), ("null", 0)]
        ids = [w.add_interface(lt, 65535) for _, lt in links]
        for k, (link, _lt) in enumerate(links):
            for p in conv(link, 1414 if k % 2 == 0 else 1801, mq if k % 2 == 0 else ms)[:8]:
                w.write(ids[k], p.ts_ns, p.frame)
        o = order
        # EPB with options (comment, flags), an SPB, an obsolete PB, NRB, ISB, a custom block
        p = conv("ethernet", 1414, mq, ("10.0.0.9", 40001))
        body = struct.pack(o + "IIIII", 0, p[0].ts_ns >> 32, p[0].ts_ns & 0xFFFFFFFF, len(p[0].frame),
                           len(p[0].frame)) + p[0].frame + b"\0" * (-len(p[0].frame) % 4)
        w._block(6, body + opt(o, 1, b"comment") + opt(o, 2, struct.pack(o + "I", 1)) + opt(o, 0, b""))
        w._block(3, struct.pack(o + "I", len(p[1].frame)) + p[1].frame)
        w._block(2, struct.pack(o + "HHIIII", 0, 0, p[2].ts_ns >> 32, p[2].ts_ns & 0xFFFFFFFF, len(p[2].frame),
                                len(p[2].frame)) + p[2].frame)
        w._block(4, struct.pack(o + "HH", 1, 12) + b"\x0a\0\0\x02host.ex\0" + struct.pack(o + "HH", 0, 0))
        w._block(5, struct.pack(o + "III", 0, 0, 0) + opt(o, 4, struct.pack(o + "Q", 7)) + opt(o, 0, b""))
        w._block(0x00000BAD, struct.pack(o + "I", 32473) + b"custom")
        # a second section, other byte order, one interface with if_tsresol 6 (default)
        w2 = W.PcapngWriter(f, byte_order=">" if order == "<" else "<")
        w2.add_interface(1, 0)
        for q in p[3:]:
            w2.write(0, q.ts_ns, q.frame)
        out.append(f.getvalue())
    # gzip: a classic pcap (nanosecond, big-endian, small snaplen) and a pcapng
    f = io.BytesIO()
    pw = W.PcapWriter(f, W.LINKTYPE_ETHERNET if hasattr(W, "LINKTYPE_ETHERNET") else 1, nanosecond=True,
                      byte_order=">", snaplen=1600)
    for p in conv("ethernet", 1414, mq) + conv("ethernet", 1801, ms, ("10.0.0.7", 40007)):
        pw.write(p.ts_ns, p.frame)
    out.append(gzip.compress(f.getvalue(), mtime=0))
    out.append(gzip.compress(out[0], mtime=0))
    # IPv6 + VLAN ethernet, microsecond pcap
    f = io.BytesIO()
    pw = W.PcapWriter(f, 1)
    c = W.TcpConversation(client=("fd00::1", 40000), server=("fd00::2", 1414), vlans=(5,))
    for p in c.handshake() + c.send(0, mq) + c.close():
        pw.write(p.ts_ns, p.frame)
    out.append(f.getvalue())
    return [b for b in out if len(b) <= 16384]


def hostile_seeds():
    """Issue 16's damaged and hostile captures, small: gzip cut short, with a bad
    CRC-32 / ISIZE, no trailer, trailing garbage; small gzip bombs (zeros, about
    1000:1); pcapng interfaces whose if_tsresol / if_tsoffset put frames outside
    the int64 nanosecond range (and before 1970); TCP copies that differ from the
    bytes received first (late retransmission, early out-of-order copy, two
    waiting copies at one offset)."""
    import gzip
    import io
    import zlib

    from mqcodec.capture import writer as W
    from mqcodec.ibmmq import MQMD, MQMessage
    from mqcodec.ibmmq.builders import encode_put

    mq = b"".join(encode_put(MQMessage(MQMD(Format="MQSTR", CodedCharSetId=819), [], m).encode())
                  for m in (b"hello" * 20, b"world" * 60))
    c = W.TcpConversation(("10.0.0.1", 40000), ("10.0.0.2", 1414), mss=180)
    pk = c.handshake() + c.send(0, mq) + c.send(1, mq[:200]) + c.close()

    def pcap(frames):
        f = io.BytesIO()
        w = W.PcapWriter(f, nanosecond=True)
        for ts, fr in frames:
            w.write(ts, fr)
        return f.getvalue()

    frames = [(p.ts_ns, p.frame) for p in pk]
    plain = pcap(frames)
    gz = gzip.compress(plain, mtime=0)
    out = [gz[:len(gz) // 2], gz[:-8], gz[:-8] + b"\0\0\0\0" + gz[-4:], gz[:-4] + b"\1\0\0\0",
           gz + b"trailing garbage", gz + gzip.compress(plain[:300], mtime=0)[:20]]
    # a small bomb: 256 KiB of zeros in 4 frames (about 1000:1; invariant 4 still holds)
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out.append(comp.compress(pcap([(i, bytes(1 << 16)) for i in range(4)])) + comp.flush())
    # pcapng time options
    for tsresol, tsoffset, ticks in ((0, None, 1 << 40), (0x80, None, 1 << 40), (0x81, None, 1 << 41),
                                     (9, 10 ** 10, None), (9, -10 ** 10, 0), (9, -(1 << 63), None),
                                     (9, (1 << 63) - 1, None), (9, -10 ** 9, None), (6, None, (1 << 64) - 1)):
        f = io.BytesIO()
        w = W.PcapngWriter(f)
        w.add_interface(1, 0, tsresol=tsresol, tsoffset=tsoffset)
        for p in pk[:12]:
            w.write(0, p.ts_ns if ticks is None else ticks, p.frame)
        out.append(f.getvalue())

    # conflicting overlaps
    def copy(p, payload):
        seg = W.tcp("10.0.0.1", "10.0.0.2", 40000, 1414, p.seq, 0, 0x18, payload)
        return W.ethernet(W.ipv4("10.0.0.1", "10.0.0.2", 6, seg, ident=999))

    data = [i for i, p in enumerate(pk) if p.length and p.direction == 0]
    a = pk[data[2]]
    other = bytes(b ^ 0x5A for b in a.frame[-a.length:])
    late = frames[:data[2] + 2] + [(a.ts_ns + 1, copy(a, other))] + frames[data[2] + 2:]
    early = frames[:data[1]] + [(a.ts_ns - 1, copy(a, other))] + frames[data[1]:]
    b = pk[data[3]]
    twice = (frames[:data[1]] + [(b.ts_ns, b.frame), (b.ts_ns, copy(b, bytes(b.frame[-b.length:])[::-1]))]
             + frames[data[1]:])
    out += [pcap(late), pcap(early), pcap(twice)]
    return [x for x in out if len(x) <= 16384]


def calls_seeds() -> list:
    """IBM MQ units of the types the units reader reads, both byte orders."""
    import struct

    from mqcodec.ibmmq.builders import (
        encode_async_message, encode_close, encode_conn, encode_get_reply, encode_initial_data, encode_inq_reply,
        encode_message_data, encode_open, encode_put, encode_put1, encode_put_reply, encode_segments,
        encode_userid_data,
    )
    from mqcodec.ibmmq.headers import MQMD
    from mqcodec.ibmmq.message import MQMessage

    out = []
    for order in ("little", "big"):
        f = "<" if order == "little" else ">"
        enc = 546 if order == "little" else 273
        md = MQMD(Version=1, Encoding=enc, CodedCharSetId=1208, Format="MQSTR", PutApplName="t")
        msg = MQMessage(md, [], b"hello", md_encoding=enc, md_ccsid=819)
        out += [encode_put(msg, hobj=5, conversation_id=1, request_id=3, byte_order=order),
                encode_put_reply(msg, hobj=5, byte_order=order), encode_get_reply(msg, hobj=7, byte_order=order),
                encode_put1(msg, object_name="PUT1.Q", byte_order=order),
                encode_open(object_name="Q", options=0x2010, od_version=3, byte_order=order),
                encode_close(hobj=3, options=2, byte_order=order),
                encode_conn(qmgr_name="QM1", appl_name="app", appl_type=28, byte_order=order),
                encode_inq_reply(hobj=4, selectors=[13, 20], int_attrs=[7, -1], char_attrs=b"Q".ljust(48),
                                 byte_order=order),
                encode_initial_data(channel_name="SYSTEM.DEF.SVRCONN", qmgr_name="QM1", byte_order=order),
                encode_userid_data(user_id="alice", long_user_id="alice@example", byte_order=order),
                encode_async_message(msg, hobj=9, resolved_q_name="ASYNC.Q", byte_order=order, reason=2079),
                encode_segments(0x05, struct.pack(f + "III", 12, 99, 5), byte_order=order),
                encode_segments(0x0F, struct.pack(f + "IiII", 1, 7, 3, 99), byte_order=order)]
    out.append(encode_message_data(msg, remote_q_name="R.Q", remote_qmgr_name="QM9"))
    return [u for u in out if len(u) <= 4096]


def _msmq_all():
    return msmq_seeds() + msmq_seeds_deep()


def _mq_all():
    return mq_seeds() + mq_deep_seeds()


def _pcf_all():
    from mqcodec.ibmmq import encode_pcf

    return pcf_seeds() + [encode_pcf(m) for m in pcf_deep_messages()]


def _batch(records, options=None, k=3):
    """Inputs of the batch targets: groups of ``k`` records (harnesses.split_records);
    ``options`` (0..31, harnesses.batch_options: ccsid / columns / Arrow input)
    goes into bits 2-6 of the first byte, varied per group."""
    out = []
    for i in range(0, len(records), k):
        s = bytearray(split_seed(records[i:i + k]))
        if options is not None:
            s[0] |= ((options + i) % 32) << 2
        out.append(bytes(s))
    return out


def seeds(target: str) -> list:
    if target == "batch_pcf":
        return _batch(_pcf_all()[:6], k=2) + _batch(_pcf_all()[6:], options=1)
    if target == "batch_mq":
        return _batch(mq_seeds()[:5], k=2) + _batch(mq_deep_seeds(), options=5)
    if target == "batch_calls":
        return _batch(calls_seeds(), k=2) + _batch(calls_seeds()[1::3], options=1)
    if target == "batch_msmq":
        return _batch(msmq_seeds()) + _batch(msmq_seeds_deep(), options=9)
    if target == "mq_framer":
        from mqcodec.ibmmq.builders import encode_put
        return mq_stream_seeds() + [b"".join(encode_put(m) for m in mq_deep_seeds()[i:i + 3]) for i in (0, 3, 15)]
    if target == "msmq_framer":
        deep = msmq_deep_seeds()
        return msmq_stream_seeds() + [bytes([1]) + b"".join(deep[:5]), bytes([3]) + b"".join(deep[5:])]
    if target == "capture":
        return capture_seeds() + capture_deep_seeds() + hostile_seeds()
    if target == "capture_core":
        return capture_core_seeds() + capture_deep_seeds() + hostile_seeds()
    if target == "convert":
        if __package__:
            from .harness_convert import SEEDS
        else:
            from harness_convert import SEEDS
        return SEEDS()
    return {"pcf": _pcf_all, "mq": _mq_all, "msmq": _msmq_all, "ping": ping_seeds,
            "frames": frames_seeds, "stream_events": frames_seeds, "route": route_seeds, "report": report_seeds,
            "offsets": offsets_seeds}[target]()
