"""IBM MQ headers (MQMD v1/v2, MQMDE, MQXQH, MQDLH, MQRFH2, MQRFH, opaque
prefix headers).

Expected bytes are packed here, independently of mqcodec, from the C
declarations in IBM's MQ reference (field order and sizes) and IBM's
documented initial values (MQMD_DEFAULT etc.).  Field offsets quoted in
comments were cross-checked against Wireshark's dissection of the shared
capture (e.g. MQMD.MsgId at +48, PutApplName at +276, ApplOriginData +320).
"""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from mqcodec.errors import DecodeError
from mqcodec.ibmmq import headers as H
from mqcodec.ibmmq.headers import (ENCODING_BIG, ENCODING_LITTLE, MQCIH, MQDLH, MQMD, MQMDE, MQRFH,
                                   MQRFH2, MQXQH, decode_md, parse_folder)

# ---------------------------------------------------------------------------
# Layouts transcribed from IBM's C declarations: (field, kind, size)
#   l = MQLONG, c = MQCHARn, b = MQBYTEn
# ---------------------------------------------------------------------------
MQMD1_LAYOUT = [
    ("StrucId", "c", 4), ("Version", "l", 4), ("Report", "l", 4), ("MsgType", "l", 4),
    ("Expiry", "l", 4), ("Feedback", "l", 4), ("Encoding", "l", 4), ("CodedCharSetId", "l", 4),
    ("Format", "c", 8), ("Priority", "l", 4), ("Persistence", "l", 4), ("MsgId", "b", 24),
    ("CorrelId", "b", 24), ("BackoutCount", "l", 4), ("ReplyToQ", "c", 48), ("ReplyToQMgr", "c", 48),
    ("UserIdentifier", "c", 12), ("AccountingToken", "b", 32), ("ApplIdentityData", "c", 32),
    ("PutApplType", "l", 4), ("PutApplName", "c", 28), ("PutDate", "c", 8), ("PutTime", "c", 8),
    ("ApplOriginData", "c", 4),
]
MQMD2_LAYOUT = MQMD1_LAYOUT + [
    ("GroupId", "b", 24), ("MsgSeqNumber", "l", 4), ("Offset", "l", 4), ("MsgFlags", "l", 4),
    ("OriginalLength", "l", 4),
]
MQMDE_LAYOUT = [
    ("StrucId", "c", 4), ("Version", "l", 4), ("StrucLength", "l", 4), ("Encoding", "l", 4),
    ("CodedCharSetId", "l", 4), ("Format", "c", 8), ("Flags", "l", 4), ("GroupId", "b", 24),
    ("MsgSeqNumber", "l", 4), ("Offset", "l", 4), ("MsgFlags", "l", 4), ("OriginalLength", "l", 4),
]
MQDLH_LAYOUT = [
    ("StrucId", "c", 4), ("Version", "l", 4), ("Reason", "l", 4), ("DestQName", "c", 48),
    ("DestQMgrName", "c", 48), ("Encoding", "l", 4), ("CodedCharSetId", "l", 4), ("Format", "c", 8),
    ("PutApplType", "l", 4), ("PutApplName", "c", 28), ("PutDate", "c", 8), ("PutTime", "c", 8),
]
MQRFH2_FIXED_LAYOUT = [
    ("StrucId", "c", 4), ("Version", "l", 4), ("StrucLength", "l", 4), ("Encoding", "l", 4),
    ("CodedCharSetId", "l", 4), ("Format", "c", 8), ("Flags", "l", 4), ("NameValueCCSID", "l", 4),
]

CODEC = {819: "latin-1", 1208: "utf-8", 500: "cp500", 1047: "cp1047", 37: "cp037", 437: "cp437"}


def pack(layout, values: dict, order: str, ccsid: int = 819) -> bytes:
    """Pack ``values`` per ``layout``: MQLONG in ``order``, CHAR blank-padded
    in ``ccsid``, BYTE NUL-padded."""
    import ebcdic  # noqa: F401  (cp1047)

    codec = CODEC[ccsid]
    out = bytearray()
    for name, kind, size in layout:
        v = values[name]
        if kind == "l":
            out += struct.pack(">i" if order == "big" else "<i", v)
        elif kind == "c":
            raw = v.encode(codec) if isinstance(v, str) else v
            out += raw + " ".encode(codec) * (size - len(raw))
        else:
            out += v + b"\x00" * (size - len(v))
    return bytes(out)


def offsets(layout) -> dict:
    pos, res = 0, {}
    for name, _k, size in layout:
        res[name] = pos
        pos += size
    return res


def md_values(**over):
    v = {
        "StrucId": "MD  ", "Version": 1, "Report": 0, "MsgType": 8, "Expiry": -1, "Feedback": 0,
        "Encoding": 273, "CodedCharSetId": 1208, "Format": "MQSTR", "Priority": 4, "Persistence": 1,
        "MsgId": bytes(range(1, 25)), "CorrelId": b"CORR" + b"\xff" * 20, "BackoutCount": 3,
        "ReplyToQ": "REPLY.Q", "ReplyToQMgr": "QM1", "UserIdentifier": "mqm", "AccountingToken": b"\x16\x01",
        "ApplIdentityData": "id", "PutApplType": 28, "PutApplName": "amqsput", "PutDate": "20250913",
        "PutTime": "11121117", "ApplOriginData": "orig",
        "GroupId": b"G" * 24, "MsgSeqNumber": 7, "Offset": 100, "MsgFlags": 0x10, "OriginalLength": 1000,
    }
    v.update(over)
    return v


# ---------------------------------------------------------------------------
def test_layout_sizes_match_ibm():
    assert sum(s for _n, _k, s in MQMD1_LAYOUT) == 324
    assert sum(s for _n, _k, s in MQMD2_LAYOUT) == 364
    assert sum(s for _n, _k, s in MQMDE_LAYOUT) == 72       # MQMDE_LENGTH_2
    assert sum(s for _n, _k, s in MQDLH_LAYOUT) == 172
    assert sum(s for _n, _k, s in MQRFH2_FIXED_LAYOUT) == 36  # MQRFH_STRUC_LENGTH_FIXED_2
    # offsets shown by Wireshark for the MQMD in the shared capture (pos - 120)
    o = offsets(MQMD1_LAYOUT)
    assert (o["MsgId"], o["CorrelId"], o["UserIdentifier"], o["PutApplName"], o["ApplOriginData"]) == (
        48, 72, 196, 276, 320)
    # the declarations agree with those layouts
    assert H.MQMD1_DECL["big"].sizeof() == 324 and H.MQMD2_DECL["little"].sizeof() == 364
    assert H.MQMDE_DECL["big"].sizeof() == 72 and H.MQDLH_DECL["big"].sizeof() == 172
    assert H.MQXQH_DECL["little"].sizeof() == 428 and H.MQRFH2_DECL["big"].sizeof() == 36
    assert H.MQRFH_DECL["big"].sizeof() == 32


@pytest.mark.parametrize("order,enc", [("big", ENCODING_BIG), ("little", ENCODING_LITTLE)])
def test_mqmd_v1_both_orders(order, enc):
    vals = md_values()
    data = pack(MQMD1_LAYOUT, vals, order)
    md = decode_md(data)
    assert md.int_encoding == enc and md.ccsid == 819 and md.length == 324
    assert md.Version == 1 and md.Expiry == -1 and md.Priority == 4 and md.BackoutCount == 3
    assert md.MsgId == bytes(range(1, 25)) and md.CorrelId == b"CORR" + b"\xff" * 20
    assert md.AccountingToken == b"\x16\x01" + b"\x00" * 30
    assert md.Format == "MQSTR" and md.ReplyToQ == "REPLY.Q" and md.PutApplName == "amqsput"
    assert md.PutDate == "20250913" and md.PutTime == "11121117" and md.ApplOriginData == "orig"
    assert "GroupId" not in md.fields
    assert md.encode() == data
    # explicit encoding agrees with detection
    assert decode_md(data, encoding=enc).fields == md.fields


def test_mqmd_v2_little():
    vals = md_values(Version=2)
    data = pack(MQMD2_LAYOUT, vals, "little")
    md = decode_md(data + b"trailing")
    assert md.length == 364
    assert (md.GroupId, md.MsgSeqNumber, md.Offset, md.MsgFlags, md.OriginalLength) == (b"G" * 24, 7, 100, 0x10, 1000)
    assert md.encode() == data


@pytest.mark.parametrize("ccsid", [500, 1047])
def test_mqmd_ebcdic(ccsid):
    vals = md_values(PutApplName="CICS[PROD]!", ReplyToQ="R.Q|1")
    data = pack(MQMD1_LAYOUT, vals, "big", ccsid)
    # 'MD  ' in EBCDIC: M = 0xD4, D = 0xC4, blank = 0x40 (code page 500/1047 tables)
    assert data[:4] == bytes.fromhex("D4C44040")
    md = decode_md(data, ccsid=ccsid)
    assert md.ccsid == ccsid
    assert md.PutApplName == "CICS[PROD]!" and md.ReplyToQ == "R.Q|1" and md.Format == "MQSTR"
    assert md.encode() == data
    # without ccsid=, EBCDIC is detected (CCSID 500); letters read the same
    md2 = decode_md(data)
    assert md2.ccsid == 500 and md2.Format == "MQSTR" and md2.UserIdentifier == "mqm"


def test_mqmd_default_is_ibm_mqmd_default():
    # IBM's initial values (MQMD_DEFAULT), MQENC_NATIVE on x86 = 546
    expected = pack(MQMD1_LAYOUT, {
        "StrucId": "MD  ", "Version": 1, "Report": 0, "MsgType": 8, "Expiry": -1, "Feedback": 0,
        "Encoding": 546, "CodedCharSetId": 0, "Format": "", "Priority": -1, "Persistence": 2,
        "MsgId": b"", "CorrelId": b"", "BackoutCount": 0, "ReplyToQ": "", "ReplyToQMgr": "",
        "UserIdentifier": "", "AccountingToken": b"", "ApplIdentityData": "", "PutApplType": 0,
        "PutApplName": "", "PutDate": "", "PutTime": "", "ApplOriginData": ""}, "little")
    assert MQMD().encode(ENCODING_LITTLE, 819) == expected
    v2 = MQMD(Version=2)
    assert (v2.MsgSeqNumber, v2.Offset, v2.MsgFlags, v2.OriginalLength) == (1, 0, 0, -1)
    assert len(v2.encode(ENCODING_BIG, 819)) == 364


def test_mqmd_errors():
    data = pack(MQMD1_LAYOUT, md_values(), "big")
    with pytest.raises(DecodeError) as e:
        decode_md(b"XD  " + data[4:])
    assert (e.value.structure, e.value.field, e.value.offset) == ("MQMD", "StrucId", 0)
    bad = data[:4] + struct.pack(">i", 3) + data[8:]
    with pytest.raises(DecodeError) as e:
        decode_md(bad)
    assert (e.value.structure, e.value.field, e.value.offset) == ("MQMD", "Version", 4)
    # forcing the wrong byte order makes Version invalid
    with pytest.raises(DecodeError) as e:
        decode_md(data, encoding=ENCODING_LITTLE)
    assert (e.value.field, e.value.offset) == ("Version", 4)
    # offsets are absolute when the MQMD is not at the start
    with pytest.raises(DecodeError) as e:
        decode_md(b"\x00" * 10 + data[:200], 10)
    assert e.value.structure == "MQMD" and e.value.offset == 10 + 196  # UserIdentifier is cut


def test_mqmd_truncated_at_every_byte():
    data = pack(MQMD2_LAYOUT, md_values(Version=2), "little")
    o = offsets(MQMD2_LAYOUT)
    for n in range(len(data)):
        with pytest.raises(DecodeError) as e:
            decode_md(data[:n])
        assert e.value.structure == "MQMD"
        assert e.value.offset <= n
        if n >= 8:
            # the field named is the one the cut falls in
            assert o[e.value.field] <= n


def test_mqmde():
    vals = {"StrucId": "MDE ", "Version": 2, "StrucLength": 72, "Encoding": 546, "CodedCharSetId": 437,
            "Format": "MQSTR", "Flags": 0, "GroupId": b"\x01" * 24, "MsgSeqNumber": 2, "Offset": 4096,
            "MsgFlags": 0x8, "OriginalLength": 9000}
    data = pack(MQMDE_LAYOUT, vals, "big")
    h = MQMDE.decode(data, 0, len(data), ENCODING_BIG, 819)
    assert h.length == 72 and h.Format == "MQSTR" and h.Offset == 4096 and h.GroupId == b"\x01" * 24
    assert h.next_governing(ENCODING_BIG, 819) == (546, 437)
    assert h.encode(ENCODING_BIG, 819) == data
    # StrucLength below the fixed part / past the end
    for bad, why in ((71, "less than"), (80, "remain")):
        d = data[:8] + struct.pack(">i", bad) + data[12:]
        with pytest.raises(DecodeError) as e:
            MQMDE.decode(d, 0, len(d), ENCODING_BIG, 819)
        assert (e.value.structure, e.value.field, e.value.offset) == ("MQMDE", "StrucLength", 8)
        assert why in e.value.reason
    # a longer StrucLength is kept whole
    d = data[:8] + struct.pack(">i", 76) + data[12:] + b"XTRA"
    h = MQMDE.decode(d, 0, len(d), ENCODING_BIG, 819)
    assert h.length == 76 and h.extra == b"XTRA" and h.encode(ENCODING_BIG, 819) == d
    # version must be 2
    d = data[:4] + struct.pack(">i", 1) + data[8:]
    with pytest.raises(DecodeError) as e:
        MQMDE.decode(d, 0, len(d), ENCODING_BIG, 819)
    assert (e.value.field, e.value.offset) == ("Version", 4)


def test_mqdlh():
    vals = {"StrucId": "DLH ", "Version": 1, "Reason": 2053, "DestQName": "TARGET.Q", "DestQMgrName": "QM9",
            "Encoding": 546, "CodedCharSetId": 1208, "Format": "MQSTR", "PutApplType": 6,
            "PutApplName": "runmqchl", "PutDate": "20240101", "PutTime": "00000001"}
    data = pack(MQDLH_LAYOUT, vals, "little")
    h = MQDLH.decode(b"\x00" * 5 + data, 5, 5 + len(data), ENCODING_LITTLE, 819)
    assert h.offset == 5 and h.length == 172
    assert (h.Reason, h.DestQName, h.DestQMgrName, h.Format, h.PutApplName) == (
        2053, "TARGET.Q", "QM9", "MQSTR", "runmqchl")
    assert h.encode(ENCODING_LITTLE, 819) == data
    with pytest.raises(DecodeError) as e:
        MQDLH.decode(data[:100], 0, 100, ENCODING_LITTLE, 819)
    assert e.value.structure == "MQDLH" and e.value.field == "DestQMgrName" and e.value.offset == 60


def test_mqxqh_embedded_md():
    md = pack(MQMD1_LAYOUT, md_values(Format="MQHMDE", Encoding=546, CodedCharSetId=437), "big")
    data = pack([("StrucId", "c", 4), ("Version", "l", 4), ("RemoteQName", "c", 48), ("RemoteQMgrName", "c", 48)],
                {"StrucId": "XQH ", "Version": 1, "RemoteQName": "REMOTE.Q", "RemoteQMgrName": "QMB"}, "big") + md
    assert len(data) == 428
    h = MQXQH.decode(data, 0, len(data), ENCODING_BIG, 819)
    assert h.RemoteQName == "REMOTE.Q" and h.RemoteQMgrName == "QMB"
    assert h.MsgDesc.PutApplName == "amqsput" and h.MsgDesc.Format == "MQHMDE"
    assert h.format_name == "MQHMDE" and h.next_governing(ENCODING_BIG, 819) == (546, 437)
    assert h.encode(ENCODING_BIG, 819) == data
    # the embedded descriptor must be 'MD  ' version 1
    bad = data[:104] + b"XX  " + data[108:]
    with pytest.raises(DecodeError) as e:
        MQXQH.decode(bad, 0, len(bad), ENCODING_BIG, 819)
    assert (e.value.structure, e.value.field, e.value.offset) == ("MQXQH", "MsgDesc", 104)


def rfh2_bytes(folders: list[bytes], order="big", nv_ccsid=1208, fmt="MQSTR", enc=273, ccsid=1208) -> bytes:
    body = b"".join(struct.pack(">i" if order == "big" else "<i", len(f)) + f for f in folders)
    fixed = pack(MQRFH2_FIXED_LAYOUT, {"StrucId": "RFH ", "Version": 2, "StrucLength": 36 + len(body),
                                       "Encoding": enc, "CodedCharSetId": ccsid, "Format": fmt, "Flags": 0,
                                       "NameValueCCSID": nv_ccsid}, order)
    return fixed + body


def test_mqrfh2_folders():
    f1 = b"<mcd><Msd>jms_text</Msd></mcd>  "
    f2 = "<usr><Name>caf\u00e9</Name><a>1</a><a>2</a></usr>".encode("utf-8")
    f2 += b" " * (-len(f2) % 4)
    data = rfh2_bytes([f1, f2], "little")
    h = MQRFH2.decode(data, 0, len(data), ENCODING_LITTLE, 819)
    assert h.StrucLength == len(data) and h.NameValueCCSID == 1208
    assert h.folders == ["<mcd><Msd>jms_text</Msd></mcd>", "<usr><Name>caf\u00e9</Name><a>1</a><a>2</a></usr>"]
    assert h.folder_raw == [f1, f2]
    assert h.folder_dicts() == [{"mcd": {"Msd": "jms_text"}}, {"usr": {"Name": "caf\u00e9", "a": ["1", "2"]}}]
    assert h.encode(ENCODING_LITTLE, 819) == data
    # built from scratch: StrucLength computed, folders padded to 4
    h2 = MQRFH2(folders=["<mcd><Msd>jms_text</Msd></mcd>", "<usr><Name>caf\u00e9</Name><a>1</a><a>2</a></usr>"],
                Encoding=273, CodedCharSetId=1208, Format="MQSTR")
    assert h2.encode(ENCODING_LITTLE, 819) == data


def test_mqrfh2_utf16_folder_follows_byte_order():
    text = "<mcd><Msd>jms_bytes</Msd></mcd>"
    for order, codec, enc in (("big", "utf-16-be", ENCODING_BIG), ("little", "utf-16-le", ENCODING_LITTLE)):
        raw = text.encode(codec)
        raw += " ".encode(codec) * ((-len(raw) % 4) // 2)
        data = rfh2_bytes([raw], order, nv_ccsid=1200)
        h = MQRFH2.decode(data, 0, len(data), enc, 819)
        assert h.folders == [text]
        assert h.encode(enc, 819) == data


def test_mqrfh2_errors():
    f1 = b"<mcd></mcd>\x20"
    data = rfh2_bytes([f1], "big")
    # NameValueLength past StrucLength
    bad = data[:36] + struct.pack(">i", 100) + data[40:]
    with pytest.raises(DecodeError) as e:
        MQRFH2.decode(bad, 0, len(bad), ENCODING_BIG, 819)
    assert (e.value.structure, e.value.field, e.value.offset) == ("MQRFH2", "NameValueLength", 36)
    # negative NameValueLength
    bad = data[:36] + struct.pack(">i", -4) + data[40:]
    with pytest.raises(DecodeError) as e:
        MQRFH2.decode(bad, 0, len(bad), ENCODING_BIG, 819)
    assert (e.value.field, e.value.offset) == ("NameValueLength", 36)
    # StrucLength below 36 and beyond the input
    for sl in (35, 0, -1, len(data) + 4, 0x7FFFFFFF):
        bad = data[:8] + struct.pack(">i", sl) + data[12:]
        with pytest.raises(DecodeError) as e:
            MQRFH2.decode(bad, 0, len(bad), ENCODING_BIG, 819)
        assert (e.value.structure, e.value.field, e.value.offset) == ("MQRFH2", "StrucLength", 8)
    # a StrucLength leaving 2 bytes: no room for a NameValueLength
    bad = data[:8] + struct.pack(">i", 38) + data[12:]
    with pytest.raises(DecodeError) as e:
        MQRFH2.decode(bad, 0, len(bad), ENCODING_BIG, 819)
    assert (e.value.field, e.value.offset) == ("NameValueLength", 36)
    # wrong StrucId / version
    with pytest.raises(DecodeError) as e:
        MQRFH2.decode(b"RFX " + data[4:], 0, len(data), ENCODING_BIG, 819)
    assert (e.value.field, e.value.offset) == ("StrucId", 0)
    bad = data[:4] + struct.pack(">i", 1) + data[8:]
    with pytest.raises(DecodeError) as e:
        MQRFH2.decode(bad, 0, len(bad), ENCODING_BIG, 819)
    assert (e.value.field, e.value.offset) == ("Version", 4)


def test_mqrfh_v1_and_opaque():
    nvs = b"OPT_APP_GRP grp1  "
    fixed = pack(MQRFH2_FIXED_LAYOUT[:7], {"StrucId": "RFH ", "Version": 1, "StrucLength": 32 + len(nvs),
                                           "Encoding": 546, "CodedCharSetId": 819, "Format": "MQSTR",
                                           "Flags": 0}, "big")
    h = MQRFH.decode(fixed + nvs, 0, 32 + len(nvs), ENCODING_BIG, 819)
    assert h.NameValueString == "OPT_APP_GRP grp1" and h.Format == "MQSTR"
    assert h.encode(ENCODING_BIG, 819) == fixed + nvs
    cih_rest = b"\x01\x02" * 30
    prefix = pack(MQRFH2_FIXED_LAYOUT[:6], {"StrucId": "CIH ", "Version": 2, "StrucLength": 28 + len(cih_rest),
                                            "Encoding": 546, "CodedCharSetId": 819, "Format": "MQSTR"}, "little")
    h = MQCIH.decode(prefix + cih_rest, 0, len(prefix) + 60, ENCODING_LITTLE, 819)
    assert h.Data == cih_rest and h.format_name == "MQSTR"
    assert h.encode(ENCODING_LITTLE, 819) == prefix + cih_rest


def test_parse_folder_rejects_dtd_and_garbage():
    assert parse_folder('<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>') is None
    assert parse_folder("<a><b>") is None
    assert parse_folder("") is None
    assert parse_folder("<x>" * 5000 + "</x>" * 5000) is None  # nesting beyond 64 levels
    assert parse_folder("<x><y>1</y></x>") == {"x": {"y": "1"}}


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------
text48 = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/%", max_size=48)
mqlong = st.integers(-0x80000000, 0x7FFFFFFF)


@settings(max_examples=150, deadline=None)
@given(vals=st.fixed_dictionaries({
    "Report": mqlong, "MsgType": mqlong, "Expiry": mqlong, "Feedback": mqlong, "Encoding": mqlong,
    "CodedCharSetId": mqlong, "Priority": mqlong, "Persistence": mqlong, "BackoutCount": mqlong,
    "PutApplType": mqlong, "MsgId": st.binary(min_size=24, max_size=24),
    "CorrelId": st.binary(min_size=24, max_size=24), "ReplyToQ": text48,
    "PutApplName": text48.map(lambda s: s[:28]), "GroupId": st.binary(min_size=24, max_size=24),
    "MsgSeqNumber": mqlong, "OriginalLength": mqlong}),
    version=st.sampled_from([1, 2]), order=st.sampled_from(["big", "little"]),
    ccsid=st.sampled_from([819, 500, 1047, 37]))
def test_mqmd_property_roundtrip(vals, version, order, ccsid):
    v = md_values(Version=version, **vals)
    data = pack(MQMD2_LAYOUT if version == 2 else MQMD1_LAYOUT, v, order, ccsid)
    md = decode_md(data, ccsid=ccsid)
    assert md.encode() == data
    for name, kind, size in (MQMD2_LAYOUT if version == 2 else MQMD1_LAYOUT):
        exp = v[name]
        got = md[name]
        if kind == "c":
            exp = exp.rstrip(" ")
        elif kind == "b":
            exp = exp + b"\x00" * (size - len(exp))
        assert got == exp, name
    # constructed from the decoded values, the same bytes come out
    assert MQMD(**md.fields).encode(md.int_encoding, ccsid) == data


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.sampled_from([MQMD, MQMDE, MQXQH, MQDLH, MQRFH2, MQRFH, MQCIH]),
       st.sampled_from([ENCODING_BIG, ENCODING_LITTLE]))
def test_random_bytes_only_decode_error(data, cls, enc):
    prefix = cls.STRUC_ID.encode("ascii")
    for blob in (data, prefix + data):
        try:
            h = cls.decode(blob, 0, len(blob), enc, 819)
        except DecodeError as e:
            assert 0 <= e.offset <= len(blob)
        else:
            assert h.encode(enc, 819) == blob[:h.length]
