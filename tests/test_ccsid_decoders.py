"""Every decoder that reads strings by CCSID: the CJK EBCDIC pages through
ICU, and a CCSID without a converter kept as bytes with a DecodeWarning
(structure, field, offset) -- never a guessed latin-1.  The batch decoders
run through the ``impl`` fixture: the compiled and the pure path must give
the same table."""
from __future__ import annotations

import struct

import pytest

from mqcodec import ccsid
from mqcodec.batch import decode_mq_batch, decode_pcf_batch
from mqcodec.errors import DecodeWarning
from mqcodec.ibmmq import constants as C, decode_message, decode_pcf, encode_pcf
from mqcodec.ibmmq.headers import MQMD, MQRFH2
from mqcodec.ibmmq.message import MQMessage
from mqcodec.ibmmq.pcf import PcfMessage, PcfParameter as P

JA = "日本語 ABC 123"            # 939: Kanji between shift-out / shift-in
ZH = "繁體中文 123"               # 937


def cfst(cs: int, raw: bytes) -> bytes:
    pad = b"\x00" * (-len(raw) % 4)
    return struct.pack(">5i", C.MQCFT_STRING, 20 + len(raw) + len(pad), 3001, cs, len(raw)) + raw + pad


def cfsl(cs: int, items: list[bytes]) -> bytes:
    slen = len(items[0])
    body = b"".join(items)
    pad = b"\x00" * (-len(body) % 4)
    return struct.pack(">6i", C.MQCFT_STRING_LIST, 24 + len(body) + len(pad), 3002, cs, len(items), slen) + body + pad


def pcf(*params: bytes) -> bytes:
    return struct.pack(">9i", C.MQCFT_RESPONSE, 36, 1, 1, 1, 1, 0, 0, len(params)) + b"".join(params)


def test_pcf_cjk_ebcdic_strings_round_trip():
    msg = PcfMessage.new(C.MQCFT_RESPONSE, 1, [P.string(3001, JA, ccsid=939), P.string(3002, ZH, ccsid=937),
                                               P.string_list(3003, [JA, "X"], ccsid=930)])
    data = encode_pcf(msg)
    assert ccsid.encode_text(JA, 939) in data and b"\x0e\x45\x41" not in data  # 一 is not in JA
    back = decode_pcf(data)
    assert [p.Value for p in back.parameters] == [JA, ZH, [JA, "X"]]
    assert back.warnings == [] and encode_pcf(back) == data


def test_pcf_unknown_ccsid_kept_as_bytes_with_a_warning():
    raw = b"\xc1\xc2\x0e\x45\x41\x0f"
    data = pcf(cfst(4242, raw), cfsl(4242, [b"AB", b"CD"]))
    msg = decode_pcf(data)
    s, sl = msg.parameters
    assert s.Value == raw and sl.Value == [b"AB", b"CD"]
    assert msg.warnings == [
        DecodeWarning("MQCFST", "String", 36 + 20, "CCSID 4242 has no converter: the 6 bytes are kept undecoded"),
        DecodeWarning("MQCFSL", "Strings", 36 + 28 + 24, "CCSID 4242 has no converter: the 2 bytes are kept undecoded"),
        DecodeWarning("MQCFSL", "Strings", 36 + 28 + 26, "CCSID 4242 has no converter: the 2 bytes are kept undecoded"),
    ]
    assert encode_pcf(msg) == data                       # the bytes kept are written back exactly
    assert "latin" not in repr(s.Value)


def unknown_after_md(md: MQMD, headers: list, body, cs: int = 4242) -> bytes:
    """The message with its MQMD's CodedCharSetId (little-endian, offset 28)
    set to ``cs`` afterwards (nothing can encode text in it)."""
    data = MQMessage(md, headers, body, md_encoding=546, md_ccsid=819).encode()
    return data[:28] + struct.pack("<i", cs) + data[32:]


def test_message_body_and_header_fields_in_an_unknown_ccsid():
    md = MQMD(Format="MQHRF2", CodedCharSetId=819, Encoding=546)
    rfh = MQRFH2(Format="MQSTR", CodedCharSetId=939, Encoding=546, NameValueCCSID=1208, folders=["<usr><a>1</a></usr>"])
    # the MQRFH2's own strings are in CCSID 4242 (named by the MQMD): kept as bytes, the chain stops there
    data = unknown_after_md(md, [rfh], b"tail")
    msg = decode_message(data)
    assert msg.headers[0].fields["Format"] == b"MQSTR   " and msg.body_format is None
    assert msg.body == b"tail"
    fmt_warning = [w for w in msg.warnings if w.field == "Format"]
    assert fmt_warning == [DecodeWarning("MQRFH2", "Format", 324 + 20,
                                         "CCSID 4242 has no converter: the 8 bytes are kept undecoded")]
    assert msg.encode() == data
    # a known CCSID reads on: the MQSTR body in 939 through ICU
    md = MQMD(Format="MQSTR", CodedCharSetId=939, Encoding=546)
    data = MQMessage(md, [], JA, md_encoding=546, md_ccsid=819).encode()
    msg = decode_message(data)
    assert msg.body == JA and msg.warnings == [] and msg.encode() == data
    # an MQSTR body in an unknown CCSID stays bytes, with the warning at the body's offset
    data = unknown_after_md(MQMD(Format="MQSTR", CodedCharSetId=819, Encoding=546), [], b"\xc1\xc2")
    msg = decode_message(data)
    assert msg.body == b"\xc1\xc2" and msg.warnings == [
        DecodeWarning("MQMessage", "Body", 324, "CCSID 4242 has no converter: the 2 bytes are kept undecoded")]
    assert msg.encode() == data


def test_pcf_batch_icu_and_unknown_ccsids(impl):
    ja = ccsid.encode_text(JA, 939)
    records = [pcf(cfst(939, ja), cfst(420, b"\xc1\x40\x40"), cfst(4242, b"\xc1\xc2"), cfst(0, b"\xc1"),
                   cfsl(937, [ccsid.encode_text(ZH, 937)] * 2), cfsl(-7, [b"AB", b"CD"]))]
    b = decode_pcf_batch(records, impl=impl, ccsid=4243)
    rows = b.parameters.to_pylist()
    assert [r["string_value"] for r in rows] == [JA, "A", None, None, None, None]
    assert [r["bytes_value"] for r in rows] == [None, None, b"\xc1\xc2", b"\xc1", None, b"ABCD"]
    assert rows[4]["string_list"] == [ZH, ZH] and rows[5]["string_list"] is None and rows[5]["count"] == 2
    assert [r["ccsid"] for r in rows] == [939, 420, 4242, 0, 937, -7]
    # with a known inherited CCSID, CCSID 0 reads through it
    rows = decode_pcf_batch(records, impl=impl, ccsid=500).parameters.to_pylist()
    assert rows[3]["string_value"] == "A" and rows[3]["bytes_value"] is None


def test_mq_batch_icu_and_unknown_ccsids(impl):
    rfh = MQRFH2(Format="MQSTR", CodedCharSetId=939, Encoding=546, NameValueCCSID=1208, folders=["<usr/>"])
    known = MQMessage(MQMD(Format="MQHRF2", CodedCharSetId=939, Encoding=546, ReplyToQ="Q"), [rfh], JA,
                      md_encoding=546, md_ccsid=819).encode()
    unknown = unknown_after_md(MQMD(Format="MQHRF2", CodedCharSetId=819, Encoding=546), [rfh], b"x")
    t = decode_mq_batch([known, unknown], impl=impl).to_pylist()
    assert t[0]["header_formats"] == ["MQHRF2"] and t[0]["body_format"] == "MQSTR" and t[0]["body_ccsid"] == 939
    # the MQRFH2's Format is in CCSID 4242: null, and nothing follows it
    assert t[1]["header_formats"] == ["MQHRF2"] and t[1]["body_format"] is None and t[1]["error_structure"] is None
    assert t[1]["body_offset"] == len(unknown) - 1 and t[1]["body_length"] == 1   # after the MQRFH2
    md = MQMD(Format="MQSTR", Encoding=546, ReplyToQ="Q").encode(546, 819)
    t = decode_mq_batch([md], impl=impl, ccsid=4242).to_pylist()[0]
    assert t["md_reply_to_q"] is None and t["md_format"] is None and t["error_structure"] is None
    t = decode_mq_batch([md], impl=impl, ccsid=819).to_pylist()[0]
    assert t["md_reply_to_q"] == "Q" and t["md_format"] == "MQSTR"
