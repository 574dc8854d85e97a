"""mqcodec.batch.decode_mq_batch: IBM MQ messages (MQMD + header chain) to
one Arrow row each.  Every test runs on both implementations (``impl``
fixture of conftest.py: "c" = mqcodec._ext.mq_batch, "py" =
mqcodec.batch.mq_pure).

Outside facts used:
* IBM's layouts (MQMD v1/v2, MQMDE, MQDLH, MQRFH2 fixed part) as
  transcribed from IBM's C declarations in tests/test_ibmmq_headers.py,
  packed by hand there (``pack``); IBM's MQEPH/MQCFH/MQCFIN layouts packed
  by hand below (MQEPH: StrucId, Version, StrucLength, Encoding,
  CodedCharSetId, Format(8), Flags, PCFHeader = 68 bytes; MQCFH 36;
  MQCFIN Type 3, StrucLength 16, Parameter, Value);
* the shared PCF vectors (shared/vectors/README.md): little-endian bodies,
  statistics_q.dat = MQCFT_STATISTICS (21) / MQCMD_STATISTICS_Q (165),
  pcf_with_cfif.dat = MQCFT_EVENT (7) / MQCMD_COMMAND_EVENT (99);
* Wireshark's dissection of the shared capture (tshark PDML): the MQMD
  fields, the MQRFH2's StrucLength/Encoding/CCSID/Format of the 8 MQPUTs;
* EBCDIC: "MD  " is D4 C4 40 40 in CCSID 500/1047; 0xFD is U+0131 in
  Windows-1254, whose upper case is "I".

Equivalence: the compiled and the pure implementation must give equal
tables (values, nulls, errors with structure/field/offset/reason, raw) for
a corpus built with the mqcodec.ibmmq constructors, every truncation of it,
mutated length/version/StrucId/Format fields and hypothesis-generated
chains.
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mqcodec import ibmmq
from mqcodec.batch import decode_mq_batch
from mqcodec.batch import mq_pure
from mqcodec.batch.schema import MQ_MESSAGES
from mqcodec.errors import EncodeError
from mqcodec.ibmmq.headers import MQCIH, MQDLH, MQIIH, MQMD, MQMDE, MQRFH, MQRFH2, MQXQH
from mqcodec.ibmmq import pcf as _pcf
from mqcodec.ibmmq.message import MQMessage

from test_ibmmq_headers import MQMD1_LAYOUT, MQMD2_LAYOUT, md_values, offsets, pack

ENC_BIG, ENC_LITTLE = 273, 546          # MQENC_* (cmqc.h): normal / reversed integers
MQCFT_EVENT, MQCFT_STATISTICS, MQCFT_COMMAND = 7, 21, 1
MQCMD_COMMAND_EVENT, MQCMD_STATISTICS_Q, MQCMD_INQUIRE_Q = 99, 165, 13


@pytest.fixture(autouse=True)
def _compiled(request):
    if "impl" in request.fixturenames and request.getfixturevalue("impl") == "c":
        try:
            import mqcodec._ext.mq_batch  # noqa: F401
        except ImportError:
            if os.environ.get("CI"):
                pytest.fail("the compiled MQ batch decoder is required in CI")
            pytest.skip("mqcodec._ext.mq_batch not built")


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def assert_same(got: pa.RecordBatch, want: pa.RecordBatch) -> None:
    assert got.schema == MQ_MESSAGES and want.schema == MQ_MESSAGES
    assert got.num_rows == want.num_rows
    if got.equals(want):
        return
    g, w = got.to_pylist(), want.to_pylist()
    for a, b in zip(g, w):
        diff = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
        assert not diff, "record %d differs (got, want): %r" % (a["record"], diff)
    assert got.equals(want)  # e.g. a null bitmap without a visible difference


_REFERENCE: dict = {}


def check(records, impl, **kw) -> pa.RecordBatch:
    """Decode with ``impl`` (through the front door) and compare with the
    pure reference (``mq_pure.decode_records`` on a list; computed once per
    input and shared by the two implementations' runs)."""
    got = decode_mq_batch(records, impl=impl, **kw)
    recs = [None if r is None else bytes(r) for r in records]
    key = (hash(tuple(recs)), len(recs), tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                                                       for k, v in kw.items())))
    if key not in _REFERENCE:
        _REFERENCE[key] = mq_pure.decode_records(recs, **kw)
    assert_same(got, _REFERENCE[key])
    return got


def rows(table: pa.RecordBatch) -> list[dict]:
    return table.to_pylist()


def eph(body_cfh: bytes, *, order="<", encoding=ENC_LITTLE, ccsid=1208, fmt=b"MQSTR   ",
        strucid=b"EPH ", version=1, extra=0) -> bytes:
    """MQEPH (IBM layout, 68 bytes with its MQCFH) + parameters; StrucLength
    covers the MQEPH and its parameters (+ extra)."""
    params = body_cfh[36:]
    head = strucid + struct.pack(order + "iiii", version, 68 + len(params) + extra, encoding, ccsid) + fmt \
        + struct.pack(order + "i", 0)
    return head + body_cfh[:36] + params


def cfh(ptype=MQCFT_COMMAND, command=MQCMD_INQUIRE_Q, params=(), order="<", struc_length=36, version=1,
        count=None) -> bytes:
    """MQCFH + MQCFIN parameters, IBM layouts."""
    body = b"".join(struct.pack(order + "iiii", 3, 16, p, v) for p, v in params)
    n = len(params) if count is None else count
    return struct.pack(order + "9i", ptype, struc_length, version, command, 1, 1, 0, 0, n) + body


# ---------------------------------------------------------------------------
# a corpus built with the mqcodec.ibmmq constructors
# ---------------------------------------------------------------------------
def _msg(md, headers, body, md_encoding=ENC_LITTLE, md_ccsid=819) -> bytes:
    return MQMessage(md, headers, body, md_encoding=md_encoding, md_ccsid=md_ccsid).encode()


def corpus(vectors) -> dict[str, tuple[bytes, dict]]:
    """name -> (message bytes, decode keywords)"""
    cfif = (vectors / "ibmmq" / "pcf_with_cfif.dat").read_bytes()
    out: dict[str, tuple[bytes, dict]] = {}
    out["v1_str_le"] = (_msg(MQMD(Format="MQSTR", CodedCharSetId=819, ReplyToQ="R.Q"), [], "hello"), {})
    out["v2_str_be_ebcdic"] = (_msg(MQMD(Version=2, Format="MQSTR", Encoding=ENC_BIG, CodedCharSetId=500,
                                         PutApplName="CICS/APP", GroupId=b"G" * 24),
                                    [], "EBCDIC text", ENC_BIG, 500), {})
    out["rfh2_jms"] = (_msg(MQMD(Version=2, Format="MQHRF2", CodedCharSetId=1208),
                            [MQRFH2(folders=["<mcd><Msd>jms_text</Msd></mcd>",
                                             "<jms><Dst>queue:///Q1</Dst><Tms>1</Tms></jms>"],
                                    Format="MQSTR", CodedCharSetId=1208)], "{\"a\": 1}"), {})
    out["xmitq"] = (_msg(MQMD(Format="MQXMIT", CodedCharSetId=819),
                         [MQXQH(RemoteQName="TARGET.Q", RemoteQMgrName="QM2",
                                MsgDesc=MQMD(Format="MQHMDE", Encoding=ENC_BIG, CodedCharSetId=1208)),
                          MQMDE(Format="MQSTR", Encoding=ENC_BIG, CodedCharSetId=37, MsgSeqNumber=3)],
                         "payload"), {})
    out["dlq_pcf"] = (_msg(MQMD(Format="MQDEAD", CodedCharSetId=819),
                           [MQDLH(Reason=2053, DestQName="FULL.Q", Format="MQADMIN", Encoding=ENC_LITTLE,
                                  CodedCharSetId=1208)], cfif), {})
    out["admin_cfif"] = (_msg(MQMD(Format="MQADMIN", Encoding=ENC_LITTLE), [], cfif), {})
    out["hepcf"] = (_msg(MQMD(Format="MQHEPCF", Encoding=ENC_BIG, CodedCharSetId=500),
                         [], eph(cfh(params=[(20, 5), (21, 6)], order=">"), order=">", encoding=ENC_BIG,
                                 ccsid=500, fmt="MQSTR   ".encode("cp500"), strucid=b"\xc5\xd7\xc8\x40")
                         + "after".encode("cp500"), ENC_BIG, 500), {})
    P = _pcf.PcfParameter
    params = [P.string(2016, "APP.*"), P.integer(20, 1),
              P.group(8002, [P.integer(3, 5), P.string_list(2016, ["A", "B"])])]
    out["pcf_constructed"] = (_msg(MQMD(Format="MQADMIN", Encoding=ENC_BIG), [],
                                   _pcf.PcfMessage.new(MQCFT_COMMAND, MQCMD_INQUIRE_Q, params, encoding=ENC_BIG)),
                              {})
    out["eph_constructed"] = (_msg(MQMD(Format="MQHEPCF", Encoding=ENC_LITTLE), [],
                                   _pcf.PcfMessage.new(MQCFT_EVENT, MQCMD_COMMAND_EVENT, params[:2],
                                                       encoding=ENC_LITTLE, trailing=b"user data",
                                                       eph={"Format": "MQSTR", "Encoding": ENC_LITTLE,
                                                            "CodedCharSetId": 1208})), {})
    out["mixed_orders"] = (_msg(MQMD(Version=2, Format="MQHRF2", Encoding=ENC_BIG, CodedCharSetId=1208),
                                [MQRFH2(folders=["<usr><k>v</k></usr>"], Format="MQHMDE", Encoding=ENC_LITTLE,
                                        CodedCharSetId=-2),
                                 MQMDE(Format="MQHRF", Encoding=ENC_BIG, CodedCharSetId=1047),
                                 MQRFH(NameValueString="name value", Format="MQCICS", Encoding=ENC_LITTLE,
                                       CodedCharSetId=0),
                                 MQCIH(Data=b"\x00" * 52, Format="MQSTR", Encoding=ENC_BIG, CodedCharSetId=850)],
                                "end"), {})
    out["ebcdic_1047"] = (_msg(MQMD(Format="MQHRF2", CodedCharSetId=1047, ReplyToQ="[Q]", Encoding=ENC_BIG),
                               [MQRFH2(folders=["<usr><a>[b]</a></usr>"], Format="MQSTR", Encoding=ENC_BIG,
                                       CodedCharSetId=-2, NameValueCCSID=1047)],
                               "[text]", ENC_BIG, 1047), {"ccsid": 1047})
    out["pcf_bad_param"] = (_msg(MQMD(Format="MQADMIN", Encoding=ENC_LITTLE), [],
                                 cfh(params=[(1, 2)])[:36 + 4] + struct.pack("<i", 99) + b"\x00" * 8), {})
    # CCSIDs without a single-byte table: Python decodes (DBCS 943, UTF-8 non-ASCII, UTF-16)
    out["dbcs_943"] = (_msg(MQMD(Format="MQHRF2", CodedCharSetId=943),
                            [MQRFH2(folders=["<usr/>"], Format="MQSTR", CodedCharSetId=1200)],
                            "utf16 body"), {})
    out["utf8_md"] = (_msg(MQMD(Format="MQSTR", ReplyToQ="QUEUE.\u00c9T\u00c9"), [], "x", ENC_LITTLE, 1208),
                      {"ccsid": 1208})
    out["utf16_md"] = (_msg(MQMD(Format="MQSTR", ReplyToQ="Q1"), [], b"raw"), {"ccsid": 1200})
    # a Format whose text is not ASCII: "MQ\u0131MS".upper() == "MQIMS" (MQIIH)
    out["turkish_format"] = (_msg(MQMD(Format="MQHRF2", CodedCharSetId=1254),
                                  [MQRFH2(Format=b"MQ\xfdMS   ", CodedCharSetId=819),
                                   MQIIH(Data=b"ims", Format="MQSTR")], "t"), {})
    return out


@pytest.fixture(scope="module")
def messages(vectors):
    c = corpus(vectors)
    # the Turkish Format must have announced an MQIIH in the pure codec
    msg = ibmmq.decode_message(c["turkish_format"][0])
    assert [h.NAME for h in msg.headers] == ["MQRFH2", "MQIIH"]
    return c


def _groups(messages):
    """records grouped by decode keywords"""
    groups: dict[tuple, list[bytes]] = {}
    for data, kw in messages.values():
        groups.setdefault(tuple(sorted(kw.items())), []).append(data)
    return groups


# ---------------------------------------------------------------------------
# values from outside the repository
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("order,version", [("big", 2), ("little", 1), ("little", 2), ("big", 1)])
def test_mqmd_columns_from_ibm_layout(impl, order, version):
    vals = md_values(Version=version)
    layout = MQMD2_LAYOUT if version == 2 else MQMD1_LAYOUT
    data = pack(layout, vals, order) + b"hello"
    (row,) = rows(check([data], impl))
    assert row["error_structure"] is None and row["raw"] is None
    assert row["md_own_encoding"] == (ENC_BIG if order == "big" else ENC_LITTLE)
    assert row["md_own_ccsid"] == 819
    cols = {"md_version": "Version", "md_report": "Report", "md_msg_type": "MsgType", "md_expiry": "Expiry",
            "md_feedback": "Feedback", "md_encoding": "Encoding", "md_ccsid": "CodedCharSetId",
            "md_format": "Format", "md_priority": "Priority", "md_persistence": "Persistence",
            "md_backout_count": "BackoutCount", "md_reply_to_q": "ReplyToQ", "md_reply_to_q_mgr": "ReplyToQMgr",
            "md_user_identifier": "UserIdentifier", "md_appl_identity_data": "ApplIdentityData",
            "md_put_appl_type": "PutApplType", "md_put_appl_name": "PutApplName", "md_put_date": "PutDate",
            "md_put_time": "PutTime", "md_appl_origin_data": "ApplOriginData",
            "md_msg_seq_number": "MsgSeqNumber", "md_offset": "Offset", "md_msg_flags": "MsgFlags",
            "md_original_length": "OriginalLength"}
    v2 = {"md_msg_seq_number", "md_offset", "md_msg_flags", "md_original_length", "md_group_id"}
    for col, name in cols.items():
        want = vals[name] if (version == 2 or col not in v2) else None
        assert row[col] == want, col
    assert row["md_msg_id"] == vals["MsgId"]
    assert row["md_correl_id"] == vals["CorrelId"]
    assert row["md_accounting_token"] == vals["AccountingToken"] + b"\x00" * 30
    assert row["md_group_id"] == (vals["GroupId"] if version == 2 else None)
    size = 364 if version == 2 else 324
    assert (row["body_offset"], row["body_length"]) == (size, 5)
    assert row["header_formats"] == [] and row["body_format"] == "MQSTR"
    assert (row["body_encoding"], row["body_ccsid"]) == (273, 1208)
    assert row["pcf_type"] is None and row["pcf_has_eph"] is None


def test_ebcdic_mqmd_detected(impl):
    vals = md_values(Version=1, Encoding=785, CodedCharSetId=0, Format="MQSTR")
    data = pack(MQMD1_LAYOUT, vals, "big", 500)
    assert data[:4] == b"\xd4\xc4\x40\x40"
    (row,) = rows(check([data], impl))
    assert (row["md_own_ccsid"], row["md_own_encoding"]) == (500, 273)
    assert row["md_reply_to_q"] == "REPLY.Q" and row["md_put_appl_name"] == "amqsput"
    # CodedCharSetId 0 (MQCCSI_Q_MGR) inherits the MQMD's own CCSID
    assert (row["body_encoding"], row["body_ccsid"], row["body_length"]) == (785, 500, 0)
    (row,) = rows(check([data], impl, ccsid=1047, encoding=273))
    assert (row["md_own_ccsid"], row["md_own_encoding"], row["body_ccsid"]) == (1047, 273, 1047)


def test_pcf_vectors_in_messages(impl, vectors):
    stats = (vectors / "ibmmq" / "statistics_q.dat").read_bytes()
    cfif = (vectors / "ibmmq" / "pcf_with_cfif.dat").read_bytes()
    md = pack(MQMD1_LAYOUT, md_values(Encoding=ENC_LITTLE, Format="MQADMIN", CodedCharSetId=0), "big")
    md_ev = pack(MQMD2_LAYOUT, md_values(Version=2, Encoding=ENC_LITTLE, Format="MQEVENT"), "little")
    t = check([md + stats, md_ev + cfif], impl)
    a, b = rows(t)
    assert (a["pcf_type"], a["pcf_command"], a["pcf_has_eph"]) == (MQCFT_STATISTICS, MQCMD_STATISTICS_Q, False)
    assert (b["pcf_type"], b["pcf_command"]) == (MQCFT_EVENT, MQCMD_COMMAND_EVENT)
    # the other MQCFH fields straight from the vector bytes (IBM's MQCFH layout, little-endian)
    for row, body in ((a, stats), (b, cfif)):
        _t, _sl, ver, _cmd, seq, control, cc, reason, count = struct.unpack_from("<9i", body, 0)
        assert (row["pcf_version"], row["pcf_msg_seq_number"], row["pcf_control"], row["pcf_comp_code"],
                row["pcf_reason"], row["pcf_parameter_count"]) == (ver, seq, control, cc, reason, count)
    assert (a["body_offset"], a["body_length"], a["body_format"]) == (324, len(stats), "MQADMIN")
    assert (b["body_offset"], b["body_length"], b["body_format"]) == (364, len(cfif), "MQEVENT")
    # the caller decodes the parameters from the body slices with decode_pcf_batch
    from mqcodec.batch import decode_pcf_batch
    recs = [md + stats, b"junk", md_ev + cfif]
    t = decode_mq_batch(recs, impl=impl)
    bodies = mq_pure.body_slices(recs, t)
    assert bodies.to_pylist() == [stats, None, cfif]
    assert mq_pure.body_slices(pa.array(recs, pa.binary()).slice(1), t.slice(1)).to_pylist() == [None, cfif]
    pcf = decode_pcf_batch(bodies, encoding=a["body_encoding"], impl=impl)
    assert pcf.headers.column("Command").to_pylist() == [MQCMD_STATISTICS_Q, None, MQCMD_COMMAND_EVENT]


def test_eph_body(impl):
    body = eph(cfh(params=[(20, 5)], order=">"), order=">", encoding=ENC_BIG)
    md = pack(MQMD1_LAYOUT, md_values(Encoding=ENC_BIG, Format="MQHEPCF"), "little")
    (row,) = rows(check([md + body], impl))
    assert row["pcf_has_eph"] is True
    assert (row["pcf_type"], row["pcf_command"], row["pcf_parameter_count"]) == (MQCFT_COMMAND, MQCMD_INQUIRE_Q, 1)
    assert (row["body_format"], row["body_offset"], row["body_encoding"]) == ("MQHEPCF", 324, ENC_BIG)


def test_parameter_errors_do_not_fail_the_row(impl):
    # a parameter whose StrucLength (99) runs past the end: the PCF batch's business
    body = cfh(params=[(1, 2)])[:40] + struct.pack("<i", 99) + b"\x00" * 8
    md = pack(MQMD1_LAYOUT, md_values(Encoding=ENC_LITTLE, Format="MQPCF"), "big")
    (row,) = rows(check([md + body], impl))
    assert row["error_structure"] is None
    assert (row["pcf_type"], row["pcf_parameter_count"], row["body_length"]) == (MQCFT_COMMAND, 1, len(body))
    with pytest.raises(ibmmq.DecodeError):
        ibmmq.decode_message(md + body)


def test_errors_name_ibm_fields(impl):
    md = pack(MQMD1_LAYOUT, md_values(Format="MQHRF2", Encoding=ENC_LITTLE), "little")
    o = offsets(MQMD1_LAYOUT)
    rfh2 = b"RFH " + struct.pack("<iiii", 2, 36 + 8, ENC_LITTLE, 1208) + b"MQSTR   " + struct.pack("<ii", 0, 1208)
    bad_nvl = rfh2 + struct.pack("<i", 5) + b"abcd"           # NameValueLength 5 > the 4 bytes left
    short = rfh2[:8] + struct.pack("<i", 36 + 2) + rfh2[12:] + b"ab"   # 2 bytes: no room for a NameValueLength
    admin = pack(MQMD1_LAYOUT, md_values(Format="MQADMIN", Encoding=ENC_LITTLE), "big")
    recs = [md[:o["ReplyToQ"]], md[:o["ReplyToQ"] - 1], b"XD  " + md[4:], md + bad_nvl, None,
            admin + cfh(struc_length=40), admin + cfh(count=2), b"MD", md[:6], md + short,
            md + rfh2[:10]]
    t = check(recs, impl)
    got = [(r["error_structure"], r["error_field"], r["error_offset"]) for r in rows(t)]
    assert got == [
        ("MQMD", "ReplyToQ", 100), ("MQMD", "BackoutCount", 96), ("MQMD", "StrucId", 0),
        ("MQRFH2", "NameValueLength", 324 + 36), ("record", "", 0),
        ("MQCFH", "StrucLength", 324 + 4), ("MQCFH", "ParameterCount", 324 + 32),
        ("MQMD", "StrucId", 0), ("MQMD", "Version", 4),
        ("MQRFH2", "NameValueLength", 324 + 36), ("MQRFH2", "StrucLength", 324 + 8),
    ]
    r = rows(t)
    assert r[0]["error_reason"] == "truncated: 324 bytes needed, 100 present"
    assert r[0]["raw"] == recs[0] and r[4]["raw"] is None and r[4]["error_reason"] == "null record"
    assert all(x["md_version"] is None and x["header_formats"] is None for x in r)


def test_chain_bound(impl):
    md = MQMD(Format="MQHMDE")
    chain = [MQMDE(Format="MQHMDE") for _ in range(32)] + [MQMDE(Format="MQSTR")]
    data = _msg(md, chain, "x")
    ok = _msg(md, chain[1:], "x")
    a, b = rows(check([data, ok], impl))
    # the 32nd MQMDE (at 324 + 31*72) announces a 33rd: its Format (+20) is named
    assert (a["error_structure"], a["error_field"], a["error_offset"]) == ("MQMDE", "Format", 324 + 31 * 72 + 20)
    assert b["header_formats"] == ["MQHMDE"] * 32 and b["body_offset"] == 324 + 32 * 72


def test_corpus_chain_facts(impl, messages):
    t = {name: rows(check([data], impl, **kw))[0] for name, (data, kw) in messages.items()}
    assert t["xmitq"]["header_formats"] == ["MQXMIT", "MQHMDE"]
    assert (t["xmitq"]["body_offset"], t["xmitq"]["body_encoding"], t["xmitq"]["body_ccsid"]) == \
        (324 + 428 + 72, ENC_BIG, 37)
    assert t["dlq_pcf"]["header_formats"] == ["MQDEAD"] and t["dlq_pcf"]["pcf_command"] == MQCMD_COMMAND_EVENT
    assert t["dlq_pcf"]["body_offset"] == 324 + 172
    assert t["mixed_orders"]["header_formats"] == ["MQHRF2", "MQHMDE", "MQHRF", "MQCICS"]
    assert (t["mixed_orders"]["body_encoding"], t["mixed_orders"]["body_ccsid"]) == (ENC_BIG, 850)
    assert t["hepcf"]["pcf_has_eph"] is True and t["hepcf"]["md_own_ccsid"] == 500
    assert t["ebcdic_1047"]["md_reply_to_q"] == "[Q]" and t["ebcdic_1047"]["body_ccsid"] == 1047
    assert t["utf8_md"]["md_reply_to_q"] == "QUEUE.\u00c9T\u00c9"
    assert t["utf16_md"]["md_reply_to_q"] == "Q1".ljust(48).encode("latin-1").decode("utf-16-be")
    assert t["dbcs_943"]["header_formats"] == ["MQHRF2"] and t["dbcs_943"]["body_ccsid"] == 1200
    assert t["turkish_format"]["header_formats"] == ["MQHRF2", "MQ\u0131MS"]
    assert t["pcf_bad_param"]["error_structure"] is None and t["pcf_bad_param"]["pcf_parameter_count"] == 1
    assert (t["pcf_constructed"]["pcf_type"], t["pcf_constructed"]["pcf_command"],
            t["pcf_constructed"]["pcf_parameter_count"], t["pcf_constructed"]["pcf_version"]) == \
        (MQCFT_COMMAND, MQCMD_INQUIRE_Q, 3, 3)
    assert (t["eph_constructed"]["pcf_has_eph"], t["eph_constructed"]["pcf_command"],
            t["eph_constructed"]["pcf_parameter_count"]) == (True, MQCMD_COMMAND_EVENT, 2)
    for name, row in t.items():
        assert row["error_structure"] is None, (name, row["error_reason"])


# ---------------------------------------------------------------------------
# the real capture (tshark PDML)
# ---------------------------------------------------------------------------
def _capture_messages(tshark, pcap):
    """(message bytes, tshark fields) of every MQPUT carrying MQMD + data."""
    raw = subprocess.run([tshark, "-r", str(pcap), "-Y", "mq.md.structid", "-T", "json", "-x"],
                         capture_output=True, check=True).stdout
    frames = {}
    for pkt in json.loads(raw):
        layers = pkt["_source"]["layers"]
        fr = layers["frame_raw"]
        frames[int(layers["frame"]["frame.number"])] = bytes.fromhex(fr[0] if isinstance(fr, list) else fr)
    pdml = subprocess.run([tshark, "-r", str(pcap), "-Y", "mq.md.structid", "-T", "pdml"],
                          capture_output=True, check=True).stdout
    out = []
    for pkt in ET.fromstring(pdml).iter("packet"):
        fields = list(pkt.iter("field"))
        num = int(next(f.get("show") for f in fields if f.get("name") == "frame.number"))
        named = {}
        for f in fields:
            named.setdefault(f.get("name"), f)
        group = [f for f in fields if f.get("show") == "Message Descriptor"]
        put_len = named.get("mq.put.length")
        if not group or put_len is None or "mq.head.structid" not in named:
            continue
        frame = frames[num]
        md_pos, md_size = int(group[0].get("pos")), int(group[0].get("size"))
        start = int(put_len.get("pos")) + int(put_len.get("size"))
        length = int(put_len.get("show"))
        if len(frame) < start + length:
            continue
        out.append((frame[md_pos:md_pos + md_size] + frame[start:start + length], named, md_size))
    return out


@pytest.mark.tshark
def test_capture_against_tshark(impl, tshark, vectors):
    pcap = vectors.parent / "captures" / "ibmmq_jms_client_1414.pcap"
    msgs = _capture_messages(tshark, pcap)
    assert len(msgs) == 8
    t = rows(check([m for m, _f, _s in msgs], impl))
    for row, (data, f, md_size) in zip(t, msgs):
        show = lambda name: f[name].get("show")  # noqa: E731
        assert row["error_structure"] is None
        assert row["md_msg_id"] == bytes.fromhex(f["mq.md.msgid"].get("value"))
        assert row["md_correl_id"] == bytes.fromhex(f["mq.md.correlid"].get("value"))
        assert row["md_format"] == show("mq.md.format").rstrip(" \x00")
        assert row["md_put_appl_name"] == show("mq.md.applname").rstrip(" \x00")
        assert row["md_user_identifier"] == show("mq.md.userid").rstrip(" \x00")
        assert row["md_reply_to_q"] == show("mq.md.replytoq").rstrip(" \x00")
        assert row["md_put_date"] == show("mq.md.date").rstrip(" \x00")
        assert row["md_put_time"] == show("mq.md.time").rstrip(" \x00")
        for col, name in (("md_version", "version"), ("md_msg_type", "msgtype"), ("md_encoding", "encoding"),
                          ("md_ccsid", "ccsid"), ("md_persistence", "persistence"), ("md_priority", "priority"),
                          ("md_expiry", "expiry"), ("md_put_appl_type", "appltype")):
            assert row[col] == int(show("mq.md." + name), 0), col
        # the chain: MQMD -> MQRFH2 -> its Format
        assert row["header_formats"] == [show("mq.md.format").rstrip(" \x00")]
        assert row["body_format"] == show("mq.head.format").rstrip(" \x00")
        assert row["body_offset"] == md_size + int(show("mq.head.length"))
        assert row["body_length"] == len(data) - row["body_offset"]
        assert row["body_encoding"] == int(show("mq.head.encoding"))
        head_ccsid = int(show("mq.head.ccsid"))
        assert row["body_ccsid"] == (head_ccsid if head_ccsid > 0 else row["md_ccsid"])


# ---------------------------------------------------------------------------
# equivalence: truncation, mutation, input forms
# ---------------------------------------------------------------------------
def test_truncation_at_every_byte(impl, messages):
    for kw, datas in _groups(messages).items():
        recs = [d[:k] for d in datas if len(d) < 2000 for k in range(len(d) + 1)]
        t = check(recs, impl, **dict(kw))
        failed = sum(1 for v in t.column("error_structure").to_pylist() if v is not None)
        assert 0 < failed < len(recs)


_LONGS = [0, 1, 2, -1, 36, 68, 72, 100, 0x7FFFFFFF, -0x80000000, 546]


def _field_positions(data: bytes, kw: dict) -> list[int]:
    """Offsets of the length/version/encoding/CCSID fields of every
    structure of a (well-formed) message: the MQMD's Version, Encoding and
    CodedCharSetId, each header's StrucId, Version, StrucLength, Encoding
    and CodedCharSetId (the MQXQH's MsgDesc fields), each MQRFH2
    NameValueLength, the MQCFH/MQEPH fields of a PCF body."""
    msg = ibmmq.decode_message(data, lenient=True, **kw)
    pos = [4, 24, 28]
    for h in msg.headers:
        o = h.offset
        pos += [o, o + 4, o + 8, o + 12, o + 16]
        if isinstance(h, MQXQH):
            pos += [o + 104, o + 108, o + 128, o + 132]
        if isinstance(h, MQRFH2):
            at = o + 36
            for n in h.folder_lengths:
                pos.append(at)
                at += 4 + n
    b = msg.body_offset
    pos += [b, b + 4, b + 8, b + 32, b + 36, b + 40, b + 64]
    return sorted({p for p in pos if p + 4 <= len(data)})


def _mutations(data: bytes, kw: dict):
    for off in _field_positions(data, kw):
        orig = data[off:off + 4]
        for v in _LONGS:
            for order in "<>":
                rep = struct.pack(order + "i", v)
                if rep != orig:
                    yield data[:off] + rep + data[off + 4:]
        yield data[:off] + orig[::-1] + data[off + 4:]


def test_mutated_lengths_and_versions(impl, messages):
    for kw, datas in _groups(messages).items():
        recs = [m for d in datas for m in _mutations(d, dict(kw))]
        t = check(recs, impl, **dict(kw))
        assert t.num_rows > 40


_FORMATS = [b"MQHRF2  ", b"MQHMDE  ", b"MQXMIT  ", b"MQDEAD  ", b"MQHRF   ", b"MQCICS  ", b"MQIMS   ",
            b"MQHWIH  ", b"MQHREF  ", b"MQHDIST ", b"MQADMIN ", b"MQEVENT ", b"MQPCF   ", b"MQHEPCF ",
            b"MQSTR   ", b"mqhrf2\x00\x00", b"\x00" * 8, b"MQ\xfdMS   "]


def test_mutated_formats(impl, messages):
    """Every Format field replaced by every format name (ASCII, EBCDIC,
    lower case): headers announced where there are none, PCF bodies where
    there is text."""
    for kw, datas in _groups(messages).items():
        recs = []
        for d in datas:
            for at in range(0, min(len(d), 1200) - 8):
                if d[at:at + 6] in (b"MQSTR ", b"MQHRF2", b"MQHMDE", b"MQXMIT", b"MQADMI", b"MQHRF ",
                                    b"MQCICS", b"MQDEAD", b"MQHEPC", "MQSTR ".encode("cp500"),
                                    "MQHRF2".encode("cp500"), "MQHMDE".encode("cp500")):
                    for f in _FORMATS + [x.decode("latin-1").encode("cp500") for x in _FORMATS[:8]]:
                        recs.append(d[:at] + f + d[at + 8:])
        check(recs, impl, **dict(kw))


def test_input_forms_agree(impl, messages):
    datas = [d for d, kw in messages.values() if not kw] + [None, b"", b"MD  "]
    want = check(datas, impl)
    arr = pa.array(datas, type=pa.binary())
    assert_same(decode_mq_batch(arr, impl=impl), want)
    assert_same(decode_mq_batch(pa.array(datas, type=pa.large_binary()), impl=impl), want)
    chunked = pa.chunked_array([arr.slice(0, 3), arr.slice(3)])
    assert_same(decode_mq_batch(chunked, impl=impl), want)
    # a sliced array (non-zero offset) numbers its records from 0
    sub = decode_mq_batch(arr.slice(2), impl=impl)
    assert sub.column("record").to_pylist() == list(range(len(datas) - 2))
    assert sub.column("md_format").to_pylist() == want.column("md_format").to_pylist()[2:]
    # (buffer, offsets) with a leading gap
    blob = b"\xee" * 7 + b"".join(d or b"" for d in datas)
    offs = np.cumsum([7] + [len(d or b"") for d in datas])
    got = decode_mq_batch((blob, np.concatenate([[7], offs[1:]])), impl=impl)
    nonnull = [i for i, d in enumerate(datas) if d is not None]
    for col in ("md_format", "body_offset", "error_field", "header_formats"):
        g, w = got.column(col).to_pylist(), want.column(col).to_pylist()
        assert [g[i] for i in nonnull] == [w[i] for i in nonnull], col
    assert decode_mq_batch([], impl=impl).num_rows == 0
    assert decode_mq_batch(pa.chunked_array([], type=pa.binary()), impl=impl).num_rows == 0
    with pytest.raises(ValueError):
        decode_mq_batch((b"abc", [0, 5]), impl=impl)
    with pytest.raises(ValueError):
        decode_mq_batch((b"abc", [2, 1]), impl=impl)
    with pytest.raises(TypeError):
        decode_mq_batch(pa.array([1, 2]), impl=impl)
    with pytest.raises(ValueError):
        decode_mq_batch(datas, encoding=2 ** 31, impl=impl)
    with pytest.raises(TypeError):
        decode_mq_batch(datas, ccsid="500", impl=impl)
    # a tuple of two records is two records, not (buffer, offsets)
    pair = decode_mq_batch((datas[0], datas[1]), impl=impl)
    assert_same(pair, want.slice(0, 2))


# ---------------------------------------------------------------------------
# hypothesis: random chains, truncated and mutated
# ---------------------------------------------------------------------------
_CCSIDS = [819, 1208, 500, 1047, 37, 437, 850, 1252, 0, -2, 943, 1200, 65535]
_ENCS = [ENC_BIG, ENC_LITTLE, 785, 1, 0]


@st.composite
def chains(draw):
    kinds = draw(st.lists(st.sampled_from(["MDE", "RFH2", "RFH", "DLH", "CIH", "XQH"]), max_size=5))
    body_kind = draw(st.sampled_from(["MQSTR", "MQADMIN", "MQHEPCF", "", "MQTRIG"]))
    headers = []
    for k in kinds:
        enc = draw(st.sampled_from(_ENCS))
        cc = draw(st.sampled_from(_CCSIDS))
        if k == "MDE":
            h = MQMDE(Encoding=enc, CodedCharSetId=cc, MsgSeqNumber=draw(st.integers(-5, 5)))
        elif k == "RFH2":
            folders = draw(st.lists(st.sampled_from(["<usr><a>1</a></usr>", "<mcd/>", ""]), max_size=3))
            h = MQRFH2(folders=folders, Encoding=enc, CodedCharSetId=cc,
                       NameValueCCSID=draw(st.sampled_from([1208, 1200, 819, 500])))
        elif k == "RFH":
            h = MQRFH(NameValueString=draw(st.sampled_from(["", "a b", "x" * 9])), Encoding=enc, CodedCharSetId=cc)
        elif k == "DLH":
            h = MQDLH(Reason=draw(st.integers(0, 3000)), Encoding=enc, CodedCharSetId=cc)
        elif k == "CIH":
            h = MQCIH(Data=draw(st.binary(max_size=12)), Encoding=enc, CodedCharSetId=cc)
        else:
            h = MQXQH(MsgDesc=MQMD(Encoding=enc, CodedCharSetId=cc))
        headers.append(h)
    fmts = {"MDE": "MQHMDE", "RFH2": "MQHRF2", "RFH": "MQHRF", "DLH": "MQDEAD", "CIH": "MQCICS", "XQH": "MQXMIT"}
    md = MQMD(Version=draw(st.sampled_from([1, 2])), Encoding=draw(st.sampled_from(_ENCS)),
              CodedCharSetId=draw(st.sampled_from(_CCSIDS)), ReplyToQ=draw(st.sampled_from(["", "Q.1", "R"])))
    structs = [md] + headers
    for s, nxt in zip(structs, kinds):
        (s.fields["MsgDesc"] if isinstance(s, MQXQH) else s).fields["Format"] = fmts[nxt]
    last = structs[-1]
    (last.fields["MsgDesc"] if isinstance(last, MQXQH) else last).fields["Format"] = body_kind
    md_enc = draw(st.sampled_from([ENC_BIG, ENC_LITTLE]))
    md_cc = draw(st.sampled_from([819, 500, 1047]))
    msg = MQMessage(md, headers, b"", md_encoding=md_enc, md_ccsid=md_cc)
    enc, cc = msg.encoding, msg.ccsid
    order = "<" if (enc & 0xF) == 2 else ">"
    if body_kind == "MQADMIN":
        body = cfh(params=[(1, 2)] * draw(st.integers(0, 3)), order=order)
    elif body_kind == "MQHEPCF":
        body = eph(cfh(params=[(7, 8)], order=order), order=order, encoding=enc) + b"data"
    else:
        body = draw(st.binary(max_size=16))
    msg.body = body
    try:
        data = msg.encode()
    except EncodeError:
        data = MQMessage(MQMD(Format="MQSTR"), [], b"fallback").encode()
    given_cc = draw(st.sampled_from([None, None, md_cc, 1208, 1200, 0, 1254]))
    given_enc = draw(st.sampled_from([None, None, md_enc, 785, 0x7FFFFFFF, -1]))
    return data, given_cc, given_enc


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain=chains(), cut=st.integers(0, 2000), flips=st.lists(st.tuples(st.integers(0, 1999), st.integers(0, 255)),
                                                                max_size=3))
def test_hypothesis_chains(impl, chain, cut, flips):
    data, ccsid, encoding = chain
    mutated = bytearray(data)
    for at, val in flips:
        if at < len(mutated):
            mutated[at] = val
    recs = [data, data[:cut], bytes(mutated)]
    t = check(recs, impl, ccsid=ccsid, encoding=encoding)
    row = rows(t)[0]
    if row["error_structure"] is None:
        # the body slice is exactly what the pure codec calls the body
        msg = ibmmq.decode_message(data, ccsid=ccsid, encoding=encoding, lenient=True)
        assert row["body_offset"] == msg.body_offset and row["body_format"] == msg.body_format
        formats = [msg.md.format_name] + [h.format_name for h in msg.headers]
        assert row["header_formats"] == formats[:-1]


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=600), prefix=st.sampled_from([b"", b"MD  ", b"\xd4\xc4\x40\x40"]))
def test_hypothesis_random_bytes(impl, data, prefix):
    check([prefix + data, prefix + b"\x00\x00\x00\x02" + data, prefix + b"\x01\x00\x00\x00" + data], impl)


def test_threads_share_nothing(impl, messages):
    """The compiled walk runs without the GIL: decode the same records from
    several threads at once and get the same table every time."""
    from concurrent.futures import ThreadPoolExecutor
    recs = [d[:k] for d, kw in messages.values() if not kw for k in range(0, len(d) + 1, 7)] * 3
    want = decode_mq_batch(recs, impl=impl)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: decode_mq_batch(recs, impl=impl), range(4)))
    for got in results:
        assert_same(got, want)


# ---------------------------------------------------------------------------
# dispatch
# ---------------------------------------------------------------------------
def test_dispatch_and_pure_switch():
    with pytest.raises(ValueError):
        decode_mq_batch([], impl="fortran")
    code = ("import mqcodec.batch.mq_pure as m, mqcodec.batch as b; "
            "print(m.MQ_IMPLEMENTATION, b.decode_mq_batch([b'MD'], impl=None).column('error_field')[0])")
    env = dict(os.environ, MQCODEC_PURE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["py", "StrucId"]


def test_md_only_records(impl):
    """An MQPUT_REPLY carries the MQMD as the queue manager completed it but
    not the data: with md_only the MQMD decodes and the chain is not
    followed; without it the missing MQRFH2 is (rightly) a truncation."""
    from mqcodec.ibmmq import MQMD, MQRFH2, MQMessage

    full = MQMessage(MQMD(Format="MQHRF2", PutApplName="replyapp", Version=2), [MQRFH2(Format="MQSTR", folders=["<a>1</a>"])],
                     "data").encode()
    md = full[:364]
    batch = check([full, md, md], impl, md_only=[False, True, False])
    got = rows(batch)
    assert got[0]["error_structure"] is None and got[0]["header_formats"] == ["MQHRF2"]
    assert got[1]["error_structure"] is None
    assert (got[1]["md_put_appl_name"], got[1]["md_version"], got[1]["body_format"]) == ("replyapp", 2, "MQHRF2")
    assert (got[1]["header_formats"], got[1]["body_offset"], got[1]["body_length"]) == ([], 364, 0)
    assert got[1]["pcf_type"] is None
    assert (got[2]["error_structure"], got[2]["error_offset"]) == ("MQRFH2", 364)
    with pytest.raises(ValueError):
        decode_mq_batch([md], impl=impl, md_only=[True, False])


def test_layout_tables_are_current():
    """mqcodec.batch.mq_layout (the compiled decoder's tables, as data) is what
    the declarations give now: ``python -m mqcodec.batch.mq_pure`` regenerates it."""
    import pathlib

    from mqcodec.batch import mq_layout

    assert pathlib.Path(mq_layout.__file__).read_text(encoding="utf-8") == mq_pure.layout_source()
    # and against the header classes themselves, field by field (the source is generated from them)
    kinds = {k[0]: k for k in mq_layout.KINDS}
    for cls in (MQMD, MQXQH, MQMDE, MQDLH, MQRFH2, MQRFH, MQCIH, MQIIH):
        name, struc_id, (first, last), _, fixed, *_ = kinds[cls.NAME]
        assert (struc_id, tuple(range(first, last + 1)), fixed) == (cls.STRUC_ID, tuple(cls.VERSIONS),
                                                                    cls.FIXED_LENGTH)
    assert dict((f, o) for f, o, _ in mq_layout.MQMD2_FIELDS) == dict(offsets(MQMD2_LAYOUT))


def test_compiled_decoder_loads_without_the_declarations():
    """The compiled decoder's import reads mq_layout, not the header
    declarations (construct): a capture's first MQ message costs no
    declaration loading."""
    code = ("import sys, mqcodec._ext.mq_batch\n"
            "print(sorted(m for m in ('construct', 'mqcodec.ibmmq.headers', 'mqcodec.ibmmq.pcf') if m in sys.modules))")
    try:
        import mqcodec._ext.mq_batch  # noqa: F401
    except ImportError:
        pytest.skip("the compiled decoder is not built")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
