"""The README's Python tour: python examples/tour.py (the files are in examples/)."""
import itertools
import json
import pathlib

import mqcodec
from mqcodec import batch, ibmmq, msmq

EXAMPLES = pathlib.Path(__file__).resolve().parent

# A PCF body (MQCFH first): the byte order is detected, the round trip is byte-exact
raw = (EXAMPLES / "statistics_q.dat").read_bytes()
pcf = ibmmq.decode_pcf(raw)
for depth, p in itertools.islice(pcf.walk(), 12):  # every parameter, groups' children indented
    print("  " * depth, p.Name, "" if p.children else p.Value)
assert ibmmq.encode_pcf(pcf) == raw

# An IBM MQ message: MQMD first, then the chain its Format starts (MQXQH/MQMDE/MQDLH/MQRFH2/...)
msg = ibmmq.decode_message((EXAMPLES / "message.bin").read_bytes(), ccsid=500)
print(msg.md.PutApplName, msg.body_format, [h.format_name for h in msg.headers])
print(json.dumps(msg.to_dict(json_safe=True), indent=1)[:400])  # bytes as hex strings

# An MSMQ packet: BaseHeader first (a Ping Packet has none).  This example frame is cut
# after 222 bytes: lenient=True keeps what decodes and lists the problems as warnings.
frame = (EXAMPLES / "4.1.7_user_message_first_222_bytes.bin").read_bytes()
pkt = msmq.decode_packet(frame, lenient=True)
if isinstance(pkt, msmq.Packet) and pkt.UserHeader is not None:
    print(pkt.kind, pkt.UserHeader.MessageID, [str(w) for w in pkt.warnings])
print(mqcodec.to_json(pkt)[:300])  # = json.dumps(pkt.to_dict(json_safe=True), indent=2)

# Many records at once, into Arrow (the compiled core; MQCODEC_PURE=1 for the pure path)
tables = batch.decode_pcf_batch([raw, raw])
print(tables.headers.num_rows, tables.parameters.num_rows)

# Bad input: one exception type naming the structure, the field and the offset
try:
    ibmmq.decode_pcf(b"\x00" * 10)
except mqcodec.DecodeError as e:  # a ValueError
    print(e.structure, e.field, e.offset, e.reason)
