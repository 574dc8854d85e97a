"""mq_messages.rfh_name_values: the NameValueStrings of a message's MQRFH
version 1 headers (Format MQHRF: the rules and formatting header of MQSeries
Integrator and the early publish/subscribe broker).

Outside facts: messages built with the header constructors (the strings put
in), in both byte orders and in ISO 8859-1, EBCDIC (500) and UTF-8, carried in
MQPUTs through a capture and both capture pipelines; tshark finds each MQRFH
where the row says (``mq.head.structid`` "RFH ", ``mq.head.version`` 1,
``mq.head.length`` the fixed 32 bytes and the string padded to 4 bytes in its
CCSID, ``mq.head.ccsid``; it shows no MQRFH of 32 bytes, one whose
NameValueString is empty).
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from mqcodec.capture.writer import TcpConversation, write_pcap
from mqcodec.convert import ConvertOptions, Converter
from mqcodec.convert.sinks import TableCollector
from mqcodec.ccsid import encode_text
from mqcodec.ibmmq.builders import encode_put
from mqcodec.ibmmq.headers import MQMD, MQRFH, MQRFH2
from mqcodec.ibmmq.message import MQMessage

TSHARK = shutil.which("tshark")
ENC_BIG, ENC_LITTLE = 273, 546          # MQENC_* (cmqc.h): normal / reversed integers

#: (Encoding, CCSID of the MQMD and of the MQRFH, NameValueStrings of its MQRFH headers)
CASES = [
    (ENC_LITTLE, 819, ["OPT_APP_GRP grp0 OPT_MSG_TYPE pub"]),
    (ENC_BIG, 500, ["MQPSCommand Publish MQPSTopic Stock/IBM"]),
    (ENC_LITTLE, 1208, ["Name caf\u00e9 Value \u00fcber", "Second header"]),
    (ENC_BIG, 819, [""]),
]


def _message(enc: int, ccsid: int, strings: list) -> MQMessage:
    headers = [MQRFH(NameValueString=s, Format="MQHRF" if i + 1 < len(strings) else "MQSTR", Encoding=enc,
                     CodedCharSetId=ccsid) for i, s in enumerate(strings)]
    md = MQMD(Version=1, Encoding=enc, CodedCharSetId=ccsid, Format="MQHRF", PutApplName="broker")
    return MQMessage(md, headers, "body", md_encoding=enc, md_ccsid=ccsid)


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """An MQPUT per case, then one with an MQRFH2 and one with no header."""
    c = TcpConversation(("10.1.0.1", 41000), ("10.1.0.2", 1414), mss=1400, start_ns=1_700_000_000 * 10**9)
    pk = c.handshake()
    for i, (enc, ccsid, strings) in enumerate(CASES):
        pk += c.send(0, encode_put(_message(enc, ccsid, strings), hobj=5, conversation_id=1, request_id=3 + i,
                                   byte_order="little" if enc == ENC_LITTLE else "big"))
    rfh2 = MQMessage(MQMD(Version=1, Encoding=ENC_LITTLE, CodedCharSetId=1208, Format="MQHRF2"),
                     [MQRFH2(folders=["<usr><a>1</a></usr>"], Format="MQSTR")], "b", md_encoding=ENC_LITTLE,
                     md_ccsid=1208)
    plain = MQMessage(MQMD(Version=1, Encoding=ENC_LITTLE, CodedCharSetId=819, Format="MQSTR"), [], "p",
                      md_encoding=ENC_LITTLE, md_ccsid=819)
    for j, msg in enumerate((rfh2, plain)):
        pk += c.send(0, encode_put(msg, hobj=5, conversation_id=1, request_id=20 + j, byte_order="little"))
    path = tmp_path_factory.mktemp("rfh") / "rfh1.pcap"
    with open(path, "wb") as f:
        write_pcap(f, pk)
    return path


def _rows(path, engine: str) -> list:
    if engine == "c":
        pytest.importorskip("mqcodec._ext.capture_core")
    tables = TableCollector()
    conv = Converter(tables, ConvertOptions(capture_impl=engine))
    conv.add_capture(str(path), name="rfh1")
    conv.drain()
    return sorted(tables.table("mq_messages").to_pylist(), key=lambda r: r["frame"])


@pytest.mark.parametrize("engine", ["py", "c"])
def test_name_value_strings_come_back_from_the_capture(capture, engine):
    rows = _rows(capture, engine)
    assert [r["kind"] for r in rows] == ["MQPUT"] * (len(CASES) + 2)
    for r, (_, _, strings) in zip(rows, CASES):
        assert r["error"] is None and r["header_formats"] == ["MQHRF"] * len(strings)
        assert r["rfh_name_values"] == strings and r["body_text"] == "body", r["frame"]
    assert rows[-2]["rfh_name_values"] is None and rows[-2]["rfh2_folders"] == ["<usr><a>1</a></usr>"]
    assert rows[-1]["rfh_name_values"] is None and rows[-1]["body_text"] == "p"


@pytest.mark.skipif(TSHARK is None, reason="tshark is missing")
def test_tshark_finds_each_mqrfh_where_the_row_says(capture):
    out = subprocess.run([TSHARK, "-r", str(capture), "-Y", "mq.head.structid", "-T", "fields", "-E",
                          "occurrence=a", "-E", "aggregator=|", "-e", "frame.number", "-e", "mq.head.structid",
                          "-e", "mq.head.version", "-e", "mq.head.length", "-e", "mq.head.ccsid"],
                         capture_output=True, text=True, check=True).stdout
    theirs = {}
    for line in out.splitlines():
        frame, ids, versions, lengths, ccsids = line.split("\t")
        theirs[int(frame)] = list(zip(ids.split("|"), versions.split("|"), lengths.split("|"), ccsids.split("|")))
    rows = _rows(capture, "py")
    ours = {}
    for r, (_, ccsid, _strings) in zip(rows, CASES):
        lengths = [32 + len(encode_text(s, ccsid)) + -len(encode_text(s, ccsid)) % 4 for s in r["rfh_name_values"]]
        ours[r["frame"]] = [("RFH ", "1", str(n), str(ccsid)) for n in lengths]
    # tshark walks the first header of a chain (it stops at a second MQRFH version 1), and
    # shows no MQRFH of 32 bytes (an empty NameValueString: the last case)
    assert {f: h[:1] for f, h in theirs.items() if f in ours} == {f: h[:1] for f, h in ours.items() if f in theirs}
    assert set(theirs) & set(ours) == set(sorted(ours)[:-1]) and len(ours) == len(CASES)


def test_md_only_and_failed_rows_have_none():
    from mqcodec.batch import decode_mq_batch
    from mqcodec.convert.converter import _rfh_name_values

    import pyarrow as pa

    records = [_message(enc, ccsid, s).encode() for enc, ccsid, s in CASES]
    cut = records[0][:330]                    # the MQRFH cut short: the batch decoder reports an error
    data = records + [cut]
    table = decode_mq_batch(data)
    got = _rfh_name_values(pa.array(data, pa.binary()), table,
                           pa.array([True] + [False] * (len(data) - 1))).to_pylist()
    assert got[0] is None and got[-1] is None
    assert got[1:len(CASES)] == [s for _, _, s in CASES[1:]]
