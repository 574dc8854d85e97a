"""The IBM MQ header chain: decode_message / encode_message / MQMessage.

Outside facts: Wireshark's dissection of the real capture (tshark
differential), IBM's layouts (messages packed by hand here with the layouts
of test_ibmmq_headers, transcribed from IBM's C declarations), the PCF test
vectors of IBM's Python bindings, round trips and properties.
"""
from __future__ import annotations

import json
import struct
import subprocess
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings, strategies as st

from mqcodec import ibmmq
from mqcodec.errors import DecodeError, DecodeWarning
from mqcodec.ibmmq import ENCODING_BIG, ENCODING_LITTLE, decode_message, encode_message
from mqcodec.ibmmq.headers import MQCIH, MQDLH, MQMD, MQMDE, MQRFH, MQRFH2, MQXQH
from mqcodec.ibmmq.message import MAX_HEADERS, MQMessage, decode_message_at

from test_ibmmq_headers import (MQDLH_LAYOUT, MQMD1_LAYOUT, MQMD2_LAYOUT, MQMDE_LAYOUT, md_values, pack,
                                rfh2_bytes)

CAPTURE = "ibmmq_jms_client_1414.pcap"


# ---------------------------------------------------------------------------
# tshark differential on the real capture
# ---------------------------------------------------------------------------
def _frames_raw(tshark, pcap) -> dict[int, bytes]:
    out = subprocess.run([tshark, "-r", str(pcap), "-Y", "mq.md.structid", "-T", "json", "-x"],
                         capture_output=True, check=True).stdout
    frames = {}
    for pkt in json.loads(out):
        layers = pkt["_source"]["layers"]
        raw = layers["frame_raw"]
        frames[int(layers["frame"]["frame.number"])] = bytes.fromhex(raw[0] if isinstance(raw, list) else raw)
    return frames


def _walk(el):
    yield el
    for ch in el:
        yield from _walk(ch)


def _mq_packets(tshark, pcap):
    """(frame number, list of the mq proto's fields in order) per packet."""
    out = subprocess.run([tshark, "-r", str(pcap), "-Y", "mq.md.structid", "-T", "pdml"],
                         capture_output=True, check=True).stdout
    root = ET.fromstring(out)
    for pkt in root.iter("packet"):
        num = None
        for f in _walk(pkt):
            if f.get("name") == "frame.number":
                num = int(f.get("show"))
        mq = [p for p in pkt.iter("proto") if p.get("name") == "mq"]
        assert len(mq) == 1
        yield num, list(_walk(mq[0]))[1:]


def _one(fields, name):
    found = [f for f in fields if f.get("name") == name]
    assert len(found) == 1, name
    return found[0]


def _all(fields, name):
    return [f for f in fields if f.get("name") == name]


def _trim(s: str) -> str:
    return s.rstrip(" \x00")


@pytest.mark.tshark
def test_tshark_differential_capture(tshark, vectors):
    pcap = vectors.parent / "captures" / CAPTURE
    frames = _frames_raw(tshark, pcap)
    full_messages = md_only = rfh2_checked = 0
    for num, fields in _mq_packets(tshark, pcap):
        frame = frames[num]
        group = [f for f in fields if f.get("show") == "Message Descriptor"]
        assert len(group) == 1
        md_pos, md_size = int(group[0].get("pos")), int(group[0].get("size"))
        md_bytes = frame[md_pos:md_pos + md_size]
        put_len = _all(fields, "mq.put.length")
        data_start = None
        if put_len:
            f = put_len[0]
            data_start = int(f.get("pos")) + int(f.get("size"))
            data_len = int(f.get("show"))
        if data_start is not None and len(frame) >= data_start + data_len and data_len > 0 \
                and data_start < len(frame) and _all(fields, "mq.head.structid"):
            message = md_bytes + frame[data_start:data_start + data_len]
            msg = decode_message(message)
            md = msg.md
            full_messages += 1
            assert encode_message(msg) == message
        else:
            md = ibmmq.decode_md(md_bytes)
            msg = None
            md_only += 1
        assert md.length == md_size
        # the MQMD against tshark's fields
        assert md.MsgId == bytes.fromhex(_one(fields, "mq.md.msgid").get("value"))
        assert md.CorrelId == bytes.fromhex(_one(fields, "mq.md.correlid").get("value"))
        assert md.AccountingToken == bytes.fromhex(_one(fields, "mq.md.acttoken").get("value"))
        assert md.Format == _trim(_one(fields, "mq.md.format").get("show"))
        assert md.PutApplName == _trim(_one(fields, "mq.md.applname").get("show"))
        assert md.UserIdentifier == _trim(_one(fields, "mq.md.userid").get("show"))
        assert md.ReplyToQ == _trim(_one(fields, "mq.md.replytoq").get("show"))
        assert md.ReplyToQMgr == _trim(_one(fields, "mq.md.replytoqmgr").get("show"))
        assert md.PutDate == _trim(_one(fields, "mq.md.date").get("show"))
        assert md.PutTime == _trim(_one(fields, "mq.md.time").get("show"))
        for ours, theirs in (("Version", "version"), ("MsgType", "msgtype"), ("Encoding", "encoding"),
                             ("CodedCharSetId", "ccsid"), ("Persistence", "persistence"),
                             ("Priority", "priority"), ("Expiry", "expiry"), ("Report", "report"),
                             ("Feedback", "feedback"), ("BackoutCount", "backount"),
                             ("PutApplType", "appltype")):
            assert md[ours] == int(_one(fields, "mq.md." + theirs).get("show"), 0), ours
        if msg is None:
            continue
        # the MQRFH2(s) against mq.head.* / mq.rfh.*
        rfh = [h for h in msg.headers if isinstance(h, MQRFH2)]
        assert len(rfh) == len(_all(fields, "mq.head.structid")) >= 1
        h = rfh[0]
        assert h.StrucId == _trim(_one(fields, "mq.head.structid").get("show"))
        assert h.Version == int(_one(fields, "mq.head.version").get("show"))
        assert h.StrucLength == int(_one(fields, "mq.head.length").get("show"))
        assert h.Encoding == int(_one(fields, "mq.head.encoding").get("show"))
        assert h.CodedCharSetId == int(_one(fields, "mq.head.ccsid").get("show"))
        assert h.Format == _trim(_one(fields, "mq.head.format").get("show"))
        assert h.Flags == int(_one(fields, "mq.head.flags").get("show"), 0)
        assert h.NameValueCCSID == int(_one(fields, "mq.rfh.ccsid").get("show"))
        assert h.folder_lengths == [int(f.get("show")) for f in _all(fields, "mq.rfh.length")]
        assert h.folder_raw == [bytes.fromhex(f.get("value")) for f in _all(fields, "mq.rfh.string")]
        assert h.folders == [_trim(f.get("show")) for f in _all(fields, "mq.rfh.string")]
        assert h.offset == md_size  # the RFH2 follows the MQMD
        # the application data tshark shows after the headers
        data = _all(fields, "data.data")
        assert len(data) == 1
        assert msg.body_format == h.Format == "MQSTR"
        assert msg.body == bytes.fromhex(data[0].get("value")).decode("utf-8")
        assert msg.body_offset == md_size + h.StrucLength
        rfh2_checked += 1
    # what this capture holds: 8 MQPUT (MQMD + MQRFH2 + MQSTR data) and 8
    # MQPUT_REPLY (MQMD without data)
    assert (full_messages, md_only, rfh2_checked) == (8, 8, 8)


# ---------------------------------------------------------------------------
# hand-built chains
# ---------------------------------------------------------------------------
def test_mixed_byte_orders_and_ccsids():
    """MQMD big-endian/ASCII -> MQRFH2 little-endian -> MQDLH big-endian in
    EBCDIC 500 -> MQSTR text in 1208."""
    md = pack(MQMD1_LAYOUT, md_values(Format="MQHRF2", Encoding=546, CodedCharSetId=819), "big")
    rfh = rfh2_bytes([b"<usr><k>v</k></usr>\x20"], "little", fmt="MQDEAD", enc=273, ccsid=500)
    dlh = pack(MQDLH_LAYOUT, {"StrucId": "DLH ", "Version": 1, "Reason": 2085, "DestQName": "Q.X",
                              "DestQMgrName": "QM.X", "Encoding": 546, "CodedCharSetId": 1208,
                              "Format": "MQSTR", "PutApplType": 6, "PutApplName": "DLQ",
                              "PutDate": "20240229", "PutTime": "23595999"}, "big", 500)
    body = "h\u00e9llo \u20ac  ".encode("utf-8")
    data = md + rfh + dlh + body
    msg = decode_message(data)
    assert msg.md_encoding == ENCODING_BIG and msg.md_ccsid == 819
    assert [type(h) for h in msg.headers] == [MQRFH2, MQDLH]
    r, d = msg.headers
    assert (r.offset, r.int_encoding, r.ccsid, r.Format) == (324, ENCODING_LITTLE, 819, "MQDEAD")
    assert r.folders == ["<usr><k>v</k></usr>"]
    assert (d.offset, d.int_encoding, d.ccsid) == (324 + len(rfh), ENCODING_BIG, 500)
    assert (d.Reason, d.DestQName, d.DestQMgrName, d.PutApplName) == (2085, "Q.X", "QM.X", "DLQ")
    assert msg.body_format == "MQSTR" and msg.body == "h\u00e9llo \u20ac  "
    assert (msg.encoding, msg.ccsid, msg.body_offset) == (546, 1208, len(data) - len(body))
    assert encode_message(msg) == data
    assert msg.encode() == data
    # and the same message built from scratch gives the same bytes
    built = MQMessage(
        MQMD(**{k: v for k, v in md_values(Format="MQHRF2", Encoding=546, CodedCharSetId=819).items()
                if k in MQMD().fields}),
        [MQRFH2(folders=["<usr><k>v</k></usr>"], Encoding=273, CodedCharSetId=500, Format="MQDEAD"),
         MQDLH(Reason=2085, DestQName="Q.X", DestQMgrName="QM.X", Encoding=546, CodedCharSetId=1208,
               Format="MQSTR", PutApplType=6, PutApplName="DLQ", PutDate="20240229", PutTime="23595999")],
        "h\u00e9llo \u20ac  ", md_encoding=ENCODING_BIG, md_ccsid=819)
    assert built.encode() == data


def test_xmitq_message():
    """A message on a transmission queue: MQMD (Format MQXMIT) -> MQXQH whose
    MsgDesc names MQHMDE -> MQMDE -> MQSTR; EBCDIC 1047 from the MQXQH on."""
    outer = pack(MQMD1_LAYOUT, md_values(Format="MQXMIT", Encoding=273, CodedCharSetId=1047), "little")
    inner = pack(MQMD1_LAYOUT, md_values(Format="MQHMDE", Encoding=546, CodedCharSetId=1047,
                                         PutApplName="CICSAPP"), "big", 1047)
    xqh = pack([("StrucId", "c", 4), ("Version", "l", 4), ("RemoteQName", "c", 48), ("RemoteQMgrName", "c", 48)],
               {"StrucId": "XQH ", "Version": 1, "RemoteQName": "TARGET", "RemoteQMgrName": "QMZ"},
               "big", 1047) + inner
    mde = pack(MQMDE_LAYOUT, {"StrucId": "MDE ", "Version": 2, "StrucLength": 72, "Encoding": 546,
                              "CodedCharSetId": 37, "Format": "MQSTR", "Flags": 0, "GroupId": b"\x07" * 24,
                              "MsgSeqNumber": 3, "Offset": 0, "MsgFlags": 0x18, "OriginalLength": -1},
               "little", 1047)
    body = "PAYLOAD[1]".encode("cp037")
    data = outer + xqh + mde + body
    msg = decode_message(data)
    x, m = msg.headers
    assert isinstance(x, MQXQH) and isinstance(m, MQMDE)
    assert (x.RemoteQName, x.RemoteQMgrName, x.ccsid) == ("TARGET", "QMZ", 1047)
    assert x.MsgDesc.PutApplName == "CICSAPP" and x.MsgDesc.Format == "MQHMDE"
    assert (m.offset, m.int_encoding, m.MsgSeqNumber, m.MsgFlags) == (324 + 428, ENCODING_LITTLE, 3, 0x18)
    assert msg.body == "PAYLOAD[1]" and msg.ccsid == 37
    assert msg.encode() == data
    d = msg.to_dict()
    assert d["Format"] == "MQXMIT" and d["Headers"][0]["MsgDesc"]["PutApplName"] == "CICSAPP"
    assert d["Headers"][1]["StrucName"] == "MQMDE" and d["Body"] == "PAYLOAD[1]"


def test_mqmd_v2_ebcdic_and_unknown_format():
    md = pack(MQMD2_LAYOUT, md_values(Version=2, Format="MYFMT", Encoding=785), "big", 500)
    data = md + b"\x00\x01\x02opaque"
    msg = decode_message(data)
    assert msg.md_ccsid == 500 and msg.md.Version == 2 and msg.md.GroupId == b"G" * 24
    assert msg.headers == [] and msg.body_format == "MYFMT" and msg.body == b"\x00\x01\x02opaque"
    assert msg.body_offset == 364 and msg.encode() == data
    # MQFMT_NONE: bytes as well; CCSID given explicitly
    md = pack(MQMD1_LAYOUT, md_values(Format=""), "little", 1047)
    msg = decode_message(md + b"xyz", ccsid=1047, encoding=ENCODING_LITTLE)
    assert msg.body_format == "" and msg.body == b"xyz" and msg.encode() == md + b"xyz"


def test_to_dict_keys_and_json():
    from mqcodec.render import to_json

    data = pack(MQMD1_LAYOUT, md_values(Format="MQHRF2"), "little") + rfh2_bytes(
        [b"<jms><Dst>queue:///Q1</Dst></jms>  "], "big") + b"text"
    d = decode_message(data).to_dict()
    for key in ("StrucId", "MsgId", "CorrelId", "Format", "PutApplName", "Encoding", "Headers", "Body",
                "BodyFormat", "BodyOffset"):
        assert key in d
    assert d["MsgId"] == bytes(range(1, 25))
    assert d["Headers"][0]["NameValues"][0]["Folder"] == {"jms": {"Dst": "queue:///Q1"}}
    j = json.loads(to_json(d))
    assert j["MsgId"] == bytes(range(1, 25)).hex() and j["Body"] == "text"


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
def _rfh2_chain(n: int, last_fmt="MQSTR") -> bytes:
    md = pack(MQMD1_LAYOUT, md_values(Format="MQHRF2"), "big")
    out = md
    for i in range(n):
        out += rfh2_bytes([b"<a>%04d</a> " % i], "big", fmt="MQHRF2" if i < n - 1 else last_fmt)
    return out + b"end"


def test_chain_bound():
    ok = decode_message(_rfh2_chain(MAX_HEADERS))
    assert len(ok.headers) == MAX_HEADERS and ok.body == "end"
    data = _rfh2_chain(MAX_HEADERS + 1)
    with pytest.raises(DecodeError) as e:
        decode_message(data)
    # the 32nd MQRFH2's Format announces a 33rd header
    each = 36 + 4 + 12
    assert (e.value.structure, e.value.field, e.value.offset) == ("MQRFH2", "Format", 324 + 31 * each + 20)
    msg = decode_message(data, lenient=True)
    assert len(msg.headers) == MAX_HEADERS and len(msg.warnings) == 1
    assert msg.warnings[0].field == "Format" and isinstance(msg.body, bytes)
    assert msg.encode() == data


def test_damaged_header_strict_and_lenient():
    md = pack(MQMD1_LAYOUT, md_values(Format="MQHRF2"), "little")
    rfh = bytearray(rfh2_bytes([b"<a>1</a>", b"<b>22</b>   "], "big"))
    struct.pack_into(">i", rfh, 36 + 4 + 8, 9999)  # second NameValueLength
    data = md + bytes(rfh) + b"body"
    with pytest.raises(DecodeError) as e:
        decode_message(data)
    assert (e.value.structure, e.value.field, e.value.offset) == ("MQRFH2", "NameValueLength", 324 + 48)
    msg = decode_message(data, lenient=True)
    assert msg.headers == [] and msg.body == bytes(rfh) + b"body" and msg.body_offset == 324
    assert msg.warnings == [DecodeWarning("MQRFH2", "NameValueLength", 372, msg.warnings[0].reason)]
    assert msg.encode() == data
    # a wrong StrucId after the MQMD
    bad = md + b"XXXX" + bytes(rfh)[4:]
    with pytest.raises(DecodeError) as e:
        decode_message(bad)
    assert (e.value.structure, e.value.field, e.value.offset) == ("MQRFH2", "StrucId", 324)


def test_truncated_message_at_every_byte():
    md = pack(MQMD2_LAYOUT, md_values(Version=2, Format="MQHMDE"), "big")
    mde = pack(MQMDE_LAYOUT, {"StrucId": "MDE ", "Version": 2, "StrucLength": 72, "Encoding": 546,
                              "CodedCharSetId": 1208, "Format": "MQDEAD", "Flags": 0, "GroupId": b"",
                              "MsgSeqNumber": 1, "Offset": 0, "MsgFlags": 0, "OriginalLength": -1}, "big")
    dlh = pack(MQDLH_LAYOUT, {"StrucId": "DLH ", "Version": 1, "Reason": 1, "DestQName": "Q",
                              "DestQMgrName": "M", "Encoding": 273, "CodedCharSetId": 1208,
                              "Format": "MQHRF2", "PutApplType": 0, "PutApplName": "", "PutDate": "",
                              "PutTime": ""}, "little")
    rfh = rfh2_bytes([b"<a>1</a>"], "big")
    data = md + mde + dlh + rfh
    for n in range(len(data)):
        with pytest.raises(DecodeError) as e:
            decode_message(data[:n])
        assert e.value.offset <= n
        assert e.value.structure in ("MQMD", "MQMDE", "MQDLH", "MQRFH2")
        lenient = None
        if n >= 364:
            lenient = decode_message(data[:n], lenient=True)
            assert lenient.warnings and lenient.encode() == data[:n]
    full = decode_message(data)
    assert [h.NAME for h in full.headers] == ["MQMDE", "MQDLH", "MQRFH2"] and full.body == ""


def test_decode_message_at_absolute_offsets():
    data = pack(MQMD1_LAYOUT, md_values(Format="MQHRF2"), "big") + rfh2_bytes([b"<a>1</a>"], "big")
    framed = b"\xee" * 100 + data[:-3]
    with pytest.raises(DecodeError) as e:
        decode_message_at(framed, 100)
    assert (e.value.structure, e.value.field, e.value.offset) == ("MQRFH2", "StrucLength", 100 + 324 + 8)
    msg = decode_message_at(b"\xee" * 100 + data + b"\xff" * 5, 100, 100 + len(data))
    assert msg.headers[0].offset == 424 and msg.body_offset == 100 + len(data) and msg.body == ""


# ---------------------------------------------------------------------------
# PCF bodies (mqcodec.ibmmq.pcf, IBM's test vectors)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name,fmt,command", [("statistics_q.dat", "MQADMIN", 165),
                                              ("pcf_with_cfif.dat", "MQEVENT", 99)])
def test_pcf_body(vectors, name, fmt, command):
    pytest.importorskip("mqcodec.ibmmq.pcf")
    body = (vectors / "ibmmq" / name).read_bytes()
    md = pack(MQMD1_LAYOUT, md_values(Format=fmt, Encoding=546, CodedCharSetId=1208), "big")
    rfh = rfh2_bytes([b"<a>1</a>"], "big", fmt=fmt, enc=546, ccsid=1208)
    md_rfh = pack(MQMD1_LAYOUT, md_values(Format="MQHRF2", Encoding=273, CodedCharSetId=1208), "little")
    for data, nheaders, off in ((md + body, 0, 324), (md_rfh + rfh + body, 1, 324 + len(rfh))):
        msg = decode_message(data)
        assert len(msg.headers) == nheaders and msg.body_offset == off
        assert msg.body.Command == command  # the vectors' README: MQCMD_STATISTICS_Q / COMMAND_EVENT
        assert msg.encode() == data
        assert msg.to_dict()["Body"]["MQCFH"]["Command"] == command
    # damaged PCF: strict error with an absolute offset; lenient keeps the bytes
    cut = md + body[:50]
    with pytest.raises(DecodeError) as e:
        decode_message(cut)
    assert 324 <= e.value.offset <= len(cut)
    msg = decode_message(cut, lenient=True)
    assert msg.encode() == cut and msg.warnings


# ---------------------------------------------------------------------------
# properties: random chains in random byte orders round-trip
# ---------------------------------------------------------------------------
ENCS = st.sampled_from([ENCODING_BIG, ENCODING_LITTLE, 785, 0x111 | 0x20])
CCSIDS = st.sampled_from([819, 1208, 500, 1047, 37, 437, -2, 0])
name8 = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.", max_size=20)


@st.composite
def header(draw):
    kind = draw(st.sampled_from(["MQMDE", "MQDLH", "MQRFH2", "MQXQH", "MQRFH", "MQCIH"]))
    common = {"Encoding": draw(ENCS), "CodedCharSetId": draw(CCSIDS)}
    if kind == "MQMDE":
        return MQMDE(MsgSeqNumber=draw(st.integers(0, 2**31 - 1)), GroupId=draw(st.binary(max_size=24)), **common)
    if kind == "MQDLH":
        return MQDLH(Reason=draw(st.integers(-2**31, 2**31 - 1)), DestQName=draw(name8), **common)
    if kind == "MQRFH2":
        folders = draw(st.lists(st.text(alphabet="<>/abcxyz\u00e9\u4e2d 0123", max_size=30)
                                .map(lambda s: s.rstrip(" ")), max_size=3))
        return MQRFH2(folders=folders, NameValueCCSID=draw(st.sampled_from([1208, 1200])), **common)
    if kind == "MQXQH":
        return MQXQH(RemoteQName=draw(name8), MsgDesc=MQMD(PutApplName=draw(name8), **common))
    if kind == "MQRFH":
        return MQRFH(NameValueString=draw(name8), **common)
    return MQCIH(Data=draw(st.binary(max_size=40)), **common)


_FMT = {MQMDE: "MQHMDE", MQDLH: "MQDEAD", MQRFH2: "MQHRF2", MQXQH: "MQXMIT", MQRFH: "MQHRF", MQCIH: "MQCICS"}


@settings(max_examples=150, deadline=None)
@given(chain=st.lists(header(), max_size=6), md_enc=st.sampled_from([ENCODING_BIG, ENCODING_LITTLE]),
       md_ccsid=st.sampled_from([819, 500, 1047]), md_version=st.sampled_from([1, 2]),
       md_first=st.tuples(ENCS, CCSIDS), body=st.binary(max_size=30))
def test_random_chain_roundtrip(chain, md_enc, md_ccsid, md_version, md_first, body):
    md = MQMD(Version=md_version, Encoding=md_first[0], CodedCharSetId=md_first[1], MsgId=b"\x01" * 24)
    prev = md
    for h in chain:
        target = prev.fields["MsgDesc"] if isinstance(prev, MQXQH) else prev
        target.fields["Format"] = _FMT[type(h)]
        prev = h
        if isinstance(h, MQXQH):
            h.fields["MsgDesc"].fields["Format"] = ""
    (chain[-1].fields["MsgDesc"] if chain and isinstance(chain[-1], MQXQH) else prev).fields["Format"] = "RAWDATA"
    msg = MQMessage(md, chain, body, md_encoding=md_enc, md_ccsid=md_ccsid)
    data = msg.encode()
    back = decode_message(data, ccsid=md_ccsid)
    assert back.md_encoding == md_enc
    assert [type(h) for h in back.headers] == [type(h) for h in chain]
    assert back.headers == chain
    assert back.md.fields == md.fields
    assert back.body == body and back.body_format == "RAWDATA"
    assert back.encode() == data


@settings(max_examples=200, deadline=None)
@given(chain=st.lists(header(), min_size=1, max_size=4), data=st.data())
def test_mutated_chains_only_decode_error(chain, data):
    md = MQMD(Format=_FMT[type(chain[0])], Encoding=ENCODING_BIG, CodedCharSetId=819)
    for a, b in zip(chain, chain[1:]):
        (a.fields["MsgDesc"] if isinstance(a, MQXQH) else a).fields["Format"] = _FMT[type(b)]
    raw = bytearray(MQMessage(md, chain, b"tail", md_encoding=ENCODING_LITTLE).encode())
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(324, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    blob = bytes(raw[:cut])
    for lenient in (False, True):
        try:
            msg = decode_message(blob, lenient=lenient)
        except DecodeError as e:
            assert 0 <= e.offset <= len(blob)
            assert not (lenient and cut >= 324)
        else:
            assert msg.encode() == blob
