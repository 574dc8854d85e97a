"""Regenerate the example files of the README's tours (this folder).

    python examples/make_examples.py [--shared ../shared]

* ``statistics_q.dat``, ``4.1.3_establish_connection_request.bin``,
  ``4.1.7_user_message_first_222_bytes.bin``: copies of the shared test
  vectors (a PCF statistics message from IBM's mq-mqi-python tests; two
  frames of [MS-MQQB] section 4.1, see ../shared/vectors/README.md);
* ``message.bin``: an IBM MQ message (big-endian MQMD in CCSID 500, an
  MQRFH2, a text body), built with mqcodec's encoders;
* ``trace-route-reply.bin``: the reply of a trace-route message that went
  QM1 -> QM2, every step decided by mqcodec's trace-route rules.

(The CLI tour makes its capture itself: ``mqcodec synth -o sample.pcap ...``.)

The output is deterministic: running this again rewrites the same bytes
(tests/test_readme.py checks that the files match).
"""
from __future__ import annotations

import argparse
import pathlib
import shutil

from mqcodec.ibmmq import constants as C
from mqcodec.ibmmq import encode_message
from mqcodec.ibmmq.headers import MQMD, MQRFH2
from mqcodec.ibmmq.message import MQMessage
from mqcodec.ibmmq.pcf import PcfParameter as P
from mqcodec.synth import activity
from mqcodec.ibmmq.traceroute_rules import (PerformedActivity, QueueManagerProfile, TraceRouteState,
                                            apply_activity, new_trace_route_message, trace_route_reply)

HERE = pathlib.Path(__file__).resolve().parent
VECTORS = ("ibmmq/statistics_q.dat", "msmq/4.1.3_establish_connection_request.bin",
           "msmq/4.1.7_user_message_first_222_bytes.bin")


def message() -> bytes:
    """An application message as a JMS client puts it, on a big-endian z/OS-style MQMD."""
    md = MQMD(Version=1, MsgType=C.MQMT_DATAGRAM, Encoding=C.ENCODING_BIG, CodedCharSetId=1208,
              Format="MQHRF2", Priority=4, Persistence=1, MsgId=bytes(range(1, 25)),
              PutApplType=C.MQAT_JAVA, PutApplName="payments-app", PutDate="20260105", PutTime="12000000",
              ReplyToQ="PAYMENTS.REPLY", ReplyToQMgr="QM1", UserIdentifier="app")
    rfh2 = MQRFH2(Encoding=C.ENCODING_BIG, CodedCharSetId=1208, Format="MQSTR", NameValueCCSID=1208,
                  folders=["<mcd><Msd>jms_text</Msd></mcd>",
                           "<jms><Dst>queue:///PAYMENTS</Dst><Pri>4</Pri></jms>"])
    msg = MQMessage(md, [rfh2], "payment 000001 amount=120.50 currency=EUR",
                    md_encoding=C.ENCODING_BIG, md_ccsid=500)
    return encode_message(msg)


def _operation(optype: int, qmgr: str, **names: str) -> P:
    params = [P.integer(C.MQIACF_OPERATION_TYPE, optype), P.string(C.MQCACF_OPERATION_DATE, "2026-01-05"),
              P.string(C.MQCACF_OPERATION_TIME, "12.00.00"), P.string(C.MQCA_Q_MGR_NAME, qmgr)]
    for key, pid in (("q", C.MQCA_Q_NAME), ("channel", C.MQCACH_CHANNEL_NAME), ("xmitq", C.MQCACH_XMIT_Q_NAME)):
        if key in names:
            params.append(P.string(pid, names[key]))
    return P.group(C.MQGACF_OPERATION, params)


def trace_route() -> bytes:
    """dspmqrte on QM1 -> sender MCA on QM1 -> receiver MCA on QM2 (the target): the reply."""
    state = TraceRouteState(Detail=C.MQROUTE_DETAIL_MEDIUM, Accumulate=C.MQROUTE_ACCUMULATE_AND_REPLY,
                            Forward=C.MQROUTE_FORWARD_IF_SUPPORTED, Deliver=C.MQROUTE_DELIVER_NO, MaxActivities=10)
    msg = new_trace_route_message(state)
    qm1, qm2 = QueueManagerProfile("QM1"), QueueManagerProfile("QM2")
    put = activity("dspmqrte", C.MQAT_UNIX, "Display Route Application",
                    _operation(C.MQOPER_PUT, "QM1", q="TARGET.Q", xmitq="QM2"))
    msg = apply_activity(msg, PerformedActivity(C.MQROUTE_DETAIL_LOW, put), qm1).message
    send = activity("amqrmppa", C.MQAT_QMGR, "Sending Message Channel Agent",
                     _operation(C.MQOPER_GET, "QM1", q="QM2"),
                     _operation(C.MQOPER_SEND, "QM1", channel="QM1.TO.QM2", xmitq="QM2"))
    msg = apply_activity(msg, PerformedActivity(C.MQROUTE_DETAIL_MEDIUM, send, action="forward"), qm1).message
    receive = activity("amqrmppa", C.MQAT_QMGR, "Receiving Message Channel Agent",
                        _operation(C.MQOPER_RECEIVE, "QM2", channel="QM1.TO.QM2"),
                        _operation(C.MQOPER_DISCARD, "QM2", q="TARGET.Q"))
    outcome = apply_activity(msg, PerformedActivity(C.MQROUTE_DETAIL_MEDIUM, receive, action="arrive"), qm2)
    if not outcome.reply:  # pragma: no cover - the rules changed
        raise SystemExit("the trace-route rules did not produce a reply")
    reply = trace_route_reply(outcome.message)
    reply.md.MsgId = bytes(range(101, 125))
    return encode_message(reply)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(HERE.parent.parent / "shared"), help="folder holding vectors/")
    ap.add_argument("-o", "--output", default=str(HERE), help="where to write (default: this folder)")
    args = ap.parse_args(argv)
    out = pathlib.Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    for rel in VECTORS:
        shutil.copyfile(pathlib.Path(args.shared) / "vectors" / rel, out / pathlib.Path(rel).name)
    (out / "message.bin").write_bytes(message())
    (out / "trace-route-reply.bin").write_bytes(trace_route())
    for p in sorted(out.iterdir()):
        if p.suffix in (".dat", ".bin"):
            print("%-45s %7d bytes" % (p.name, p.stat().st_size))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
