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
    from mqcodec.msmq.framing import simulate_session

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
    from mqcodec.ibmmq.framing import encode_async_message, encode_put

    out = []
    msg = MQMessage(MQMD(Format="MQSTR", CodedCharSetId=819), [], b"hello world" * 20).encode()
    out.append(encode_put(msg))
    out.append(encode_async_message(msg, max_segment_length=120))
    return [b"".join(out)] + out


def msmq_stream_seeds():
    from mqcodec.msmq.framing import simulate_session

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


def seeds(target: str) -> list:
    base = target
    if target == "batch_pcf":
        return [split_seed(pcf_seeds()[i:i + 2]) for i in range(0, 6, 2)]
    if target == "batch_mq":
        return [split_seed(mq_seeds()[i:i + 2]) for i in range(0, 5, 2)]
    if target == "batch_msmq":
        m = msmq_seeds()
        return [split_seed(m[i:i + 3]) for i in range(0, len(m), 3)]
    return {"pcf": pcf_seeds, "mq": mq_seeds, "msmq": msmq_seeds, "ping": ping_seeds,
            "mq_framer": mq_stream_seeds, "msmq_framer": msmq_stream_seeds,
            "capture": capture_seeds, "frames": frames_seeds, "capture_core": capture_core_seeds}[base]()
