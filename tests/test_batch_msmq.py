"""The MSMQ packet batch decoder (``decode_msmq_batch``), on both
implementations (``impl`` fixture: "c" and "py").

Three kinds of evidence:

* facts from outside this repository: the [MS-MQQB] 4.1 example frames and
  their annotations, the malformed vectors' documented defects
  (vectors/README.md), and the values a test packet was *built* from;
* the reference codec: each row equals what ``mqcodec.msmq.decode_packet``
  (strict) says of the record, read through ``Packet.to_dict()`` -- a
  different path from the batch code -- errors (structure, field, offset,
  reason) included;
* equivalence: the compiled and the pure tables are equal, column for
  column, for every vector, every truncation, mutated lengths and
  hypothesis-generated packets with random optional headers.
"""
from __future__ import annotations

import os
import pathlib
import struct
import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcodec.batch import decode_msmq_batch
from mqcodec.batch.schema import MSMQ_PACKETS
from mqcodec.errors import DecodeError
from mqcodec.msmq import (BaseHeader, DebugHeader, DirectQueueFormatName, MessagePropertiesHeader,
                          MultiQueueFormatHeader, Packet, PrivateQueueFormatName, PrivateQueueFormatNameId,
                          PublicQueueFormatName, SecurityHeader, SessionHeader, SoapHeader,
                          SRMPEnvelopeHeader, CompoundMessageHeader, TransactionHeader, UserFlags,
                          UserHeader, decode_packet, encode_packet)
from mqcodec.msmq.optional_headers import TxSequenceID

SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

QM_CLIENT = "557358d1-9150-9595-4997-b6e611ea26c6"   # [MS-MQQB] 4.1.1 QMGuid {C626EA11-...} in packet form
LIOR = 0x524F494C


@pytest.fixture
def mimpl(impl):
    """``impl``, skipping "c" when this module's compiled half is not built."""
    if impl == "c":
        try:
            import mqcodec._ext.msmq_batch  # noqa: F401
        except ImportError:
            if os.environ.get("CI"):
                pytest.fail("mqcodec._ext.msmq_batch is required in CI")
            pytest.skip("mqcodec._ext.msmq_batch not built")
    return impl


def _vector_files(vectors: pathlib.Path):
    return sorted((vectors / "msmq").glob("*.bin")) + sorted((vectors / "msmq" / "malformed").glob("*.bin"))


def _rows(batch: pa.RecordBatch) -> list[dict]:
    assert batch.schema.equals(MSMQ_PACKETS)
    return batch.to_pylist()


def _both(records) -> pa.RecordBatch:
    """Both implementations' tables (when the compiled one is built), which
    must be equal; returns the pure one."""
    py = decode_msmq_batch(records, impl="py")
    try:
        import mqcodec._ext.msmq_batch  # noqa: F401
    except ImportError:
        return py
    c = decode_msmq_batch(records, impl="c")
    if not c.equals(py):
        for name in MSMQ_PACKETS.names:
            a, b = c.column(name).to_pylist(), py.column(name).to_pylist()
            bad = [i for i in range(len(a)) if a[i] != b[i]]
            assert not bad, (name, [(i, a[i], b[i]) for i in bad[:3]])
    assert c.equals(py)
    return py


# ---------------------------------------------------------------------------
# the reference: decode_packet record by record, read through to_dict()
# ---------------------------------------------------------------------------

def _arrow(text):
    if text is None:
        return None
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def check_against_reference(row: dict, data: bytes | None) -> None:
    if data is None:
        assert (row["error_structure"], row["error_field"], row["error_offset"], row["error_reason"]) == \
            ("record", "", 0, "null record")
        assert row["raw"] is None and row["kind"] is None
        return
    try:
        pkt = decode_packet(data)
    except DecodeError as exc:
        assert (row["error_structure"], row["error_field"], row["error_offset"], row["error_reason"]) == \
            (exc.structure, exc.field, exc.offset, exc.reason)
        assert row["raw"] == data
        assert all(v is None for k, v in row.items()
                   if k not in ("record", "error_structure", "error_field", "error_offset", "error_reason",
                                "raw")), row
        return
    assert row["error_structure"] is None and row["raw"] is None
    d = pkt.to_dict()
    assert row["kind"] == d["packet"]
    assert row["packet_end"] == len(data) - len(d.get("trailing", b""))
    if d["packet"] == "Ping":
        pp = d["PingPacket"]
        assert (row["ping_flags"], row["ping_cookie"], row["ping_qm_guid"]) == \
            (pp["Flags"]["value"], pp["Cookie"], pp["QMGuid"])
        assert row["base_flags"] is None
        return
    b = d["BaseHeader"]
    assert (row["base_version_number"], row["base_reserved"], row["base_flags"], row["base_signature"],
            row["base_packet_size"], row["base_time_to_reach_queue"]) == \
        (b["VersionNumber"], b["Reserved"], b["Flags"]["value"], b["Signature"], b["PacketSize"],
         b["TimeToReachQueue"])
    assert (row["base_pr"], row["base_in"], row["base_sh"], row["base_dh"], row["base_tr"]) == \
        (b["Flags"]["PR"], bool(b["Flags"]["IN"]), bool(b["Flags"]["SH"]), bool(b["Flags"]["DH"]),
         bool(b["Flags"]["TR"]))
    s = d.get("SessionHeader")
    assert (row["session_ack_sequence_number"] is None) == (s is None)
    if s is not None:
        assert (row["session_ack_sequence_number"], row["session_recoverable_msg_ack_flags"],
                row["session_window_size"]) == (s["AckSequenceNumber"], s["RecoverableMsgAckFlags"],
                                                s["WindowSize"])
    if "InternalHeader" in d:
        assert row["internal_pt"] == d["InternalHeader"]["Flags"]["PT"]
        ec, cp = d.get("EstablishConnectionHeader"), d.get("ConnectionParametersHeader")
        assert (row["ec_client_guid"], row["ec_time_stamp"]) == \
            ((ec["ClientGuid"], ec["TimeStamp"]) if ec else (None, None))
        assert (row["cp_ack_timeout"], row["cp_window_size"]) == \
            ((cp["AckTimeout"], cp["WindowSize"]) if cp else (None, None))
        assert row["user_flags"] is None
        return
    u = d["UserHeader"]
    assert (row["user_source_queue_manager"], row["user_queue_manager_address"], row["user_message_id"],
            row["user_flags"], row["user_sent_time"], row["user_time_to_be_received"]) == \
        (u["SourceQueueManager"], u["QueueManagerAddress"], u["MessageID"], u["Flags"]["value"],
         u["SentTime"], u["TimeToBeReceived"])
    for col, field in (("user_destination_queue", "DestinationQueue"), ("user_admin_queue", "AdminQueue"),
                       ("user_response_queue", "ResponseQueue")):
        assert row[col] == _arrow(u.get(field, {}).get("FormatName")), (col, u.get(field))
    assert row["user_connector_type"] == u.get("ConnectorType")
    m = d["MessagePropertiesHeader"]
    assert (row["props_label_length"], row["props_label"], row["props_message_class"],
            row["props_correlation_id"], row["props_message_size"], row["props_extension_size"]) == \
        (m["LabelLength"], _arrow(m.get("Label")), m["MessageClass"], m["CorrelationID"], m["MessageSize"],
         m["ExtensionSize"])
    at = row["props_body_offset"]
    assert data[at:at + row["props_message_size"]] == m["MessageBody"]
    at = row["props_extension_offset"]
    assert data[at:at + row["props_extension_size"]] == m.get("ExtensionData", b"")
    t = d.get("TransactionHeader")
    assert (row["xact_tx_sequence_number"], row["xact_previous_tx_sequence_number"]) == \
        ((t["TxSequenceNumber"], t["PreviousTxSequenceNumber"]) if t else (None, None))
    assert row["xact_connector_qm_guid"] == (t or {}).get("ConnectorQMGuid")
    g = d.get("DebugHeader")
    assert (row["debug_flags"], row["debug_queue_identifier"]) == \
        ((g["Flags"], g.get("QueueIdentifier")) if g else (None, None))
    sec = d.get("SecurityHeader")
    assert row["sec_sender_id_size"] == (sec["SenderIdSize"] if sec else None)
    assert (row["srmp_data_length"] is None) == ("SRMPEnvelopeHeader" not in d)
    assert (row["soap_body_data_length"] is None) == ("SoapHeader" not in d)
    assert (row["mqf_signature_size"] is None) == ("MultiQueueFormatHeader" not in d)


def check_all(records) -> pa.RecordBatch:
    batch = _both(records)
    rows = _rows(batch)
    assert len(rows) == len(records)
    for k, (row, data) in enumerate(zip(rows, records)):
        assert row["record"] == k
        check_against_reference(row, data)
    return batch


# ---------------------------------------------------------------------------
# the [MS-MQQB] 4.1 example frames and the malformed vectors
# ---------------------------------------------------------------------------

def test_vectors_spec_values(vectors, mimpl):
    files = {p.name: p.read_bytes() for p in _vector_files(vectors)}
    names = sorted(files)
    rows = {n: r for n, r in zip(names, _rows(decode_msmq_batch([files[n] for n in names], impl=mimpl)))}
    ping = rows["4.1.1_ping_request.bin"]
    assert (ping["kind"], ping["ping_cookie"], ping["ping_signature"], ping["ping_qm_guid"]) == \
        ("Ping", 4, 0x5548, QM_CLIENT)
    assert ping["ping_rc"] is True and ping["base_flags"] is None
    rsp = rows["4.1.2_ping_response.bin"]
    assert rsp["ping_cookie"] == 4                        # the acceptor echoes the Cookie
    ec = rows["4.1.3_establish_connection_request.bin"]
    assert (ec["kind"], ec["base_packet_size"], ec["internal_pt"], ec["ec_client_guid"], ec["ec_time_stamp"]) == \
        ("EstablishConnection", 572, 2, QM_CLIENT, 501140046)
    assert (ec["ec_re"], ec["ec_se"], ec["ec_os"]) == (0x10, True, True)   # OperatingSystem 0x0310
    assert ec["base_time_to_reach_queue"] == 0xFFFFFFFF and ec["base_signature"] == LIOR
    ecr = rows["4.1.4_establish_connection_response.bin"]
    assert ecr["ec_padding_is_server_fill"] is True       # a response's padding is 0x5A bytes
    assert ecr["ec_time_stamp"] == 501140046               # echoes the request's TimeStamp
    for name in ("4.1.5_connection_parameters_request.bin", "4.1.6_connection_parameters_response.bin"):
        cp = rows[name]
        assert (cp["kind"], cp["base_packet_size"], cp["cp_recoverable_ack_timeout"], cp["cp_ack_timeout"],
                cp["cp_window_size"]) == ("ConnectionParameters", 32, 0x5D8, 120000, 64)
        assert cp["ec_client_guid"] is None and cp["session_window_size"] is None
    sa = rows["4.1.8_session_ack.bin"]
    assert (sa["kind"], sa["base_packet_size"], sa["internal_pt"], sa["session_ack_sequence_number"],
            sa["session_header_counted"], sa["base_sh"]) == ("SessionAck", 36, 1, 1, True, True)
    um = rows["4.1.7_user_message_first_222_bytes.bin"]    # 222 of the 2224 bytes
    assert (um["error_structure"], um["error_field"], um["error_offset"]) == ("BaseHeader", "PacketSize", 8)
    assert "2224" in um["error_reason"] and "222" in um["error_reason"]
    assert um["raw"] == files["4.1.7_user_message_first_222_bytes.bin"] and um["kind"] is None
    v12 = rows["V12_msf_queuejumper_prefix240.bin"]        # the first 240 of 2404 bytes
    assert (v12["error_structure"], v12["error_field"], v12["error_offset"]) == ("BaseHeader", "PacketSize", 8)
    assert "2404" in v12["error_reason"]
    for name in ("V9_queuejumper_poc.bin", "V11_noisefest_fullsignature.bin"):
        assert rows[name]["error_structure"] is not None and rows[name]["raw"] == files[name]


def _completed_user_message(vectors):
    """[MS-MQQB] 4.1.7 completed: its dump's body of "a" x 1000 (UTF-16) + 2 padding bytes."""
    data = (vectors / "msmq" / "4.1.7_user_message_first_222_bytes.bin").read_bytes()
    return data + b"a\x00" * 1000 + b"\x00\x00"


def _without_security_header(full: bytes) -> bytes:
    """The same message without its 44-byte SecurityHeader (16 + SenderIdSize 0x1C,
    at 92): UserHeader.Flags.SH cleared, PacketSize reduced."""
    out = bytearray(full[:92] + full[92 + 44:])
    struct.pack_into("<I", out, 8, len(out))
    flags = struct.unpack_from("<I", out, 60)[0] & ~(1 << 19)
    struct.pack_into("<I", out, 60, flags)
    return bytes(out)


def test_user_message_example(vectors, mimpl):
    full = _completed_user_message(vectors)
    plain = _without_security_header(full)
    r_full, r_plain = _rows(decode_msmq_batch([full, plain], impl=mimpl))
    for r, size in ((r_full, 2224), (r_plain, 2180)):
        assert (r["kind"], r["base_packet_size"], r["base_pr"], r["base_time_to_reach_queue"]) == \
            ("UserMessage", size, 3, 345600)
        assert (r["user_message_id"], r["user_sent_time"], r["user_dq"], r["user_aq"], r["user_rq"]) == \
            (2286, LIOR, 7, 0, 0)
        assert r["user_source_queue_manager"] == QM_CLIENT
        assert r["user_queue_manager_address"] == "00000000-0000-0000-0000-000000000000"
        assert r["user_destination_queue"] == "DIRECT=OS:a04bm02\\q"
        assert r["user_admin_queue"] is None and r["user_response_queue"] is None
        assert (r["props_label"], r["props_label_length"], r["props_body_type"], r["props_message_size"],
                r["props_allocation_body_size"], r["props_hash_algorithm"], r["props_encryption_algorithm"]) == \
            ("mqsender label", 15, 8, 2000, 2000, 0x8004, 0x6801)
        assert (r["props_pa"], r["props_pr"], r["props_na"], r["props_nr"]) == (True, True, True, True)
        assert r["props_correlation_id"] == bytes(20)
        data = full if r is r_full else plain
        assert data[r["props_body_offset"]:r["props_body_offset"] + 2000] == ("a" * 1000).encode("utf-16-le")
        assert r["packet_end"] == size and r["error_structure"] is None
    assert r_full["user_sh"] is True and r_full["sec_sender_id_size"] == 0x1C and r_full["sec_st"] == 1
    assert r_plain["user_sh"] is False and r_plain["sec_flags"] is None
    assert r_full["props_body_offset"] == 222 and r_plain["props_body_offset"] == 222 - 44


def test_vectors_and_every_truncation_equal_reference(vectors):
    records = []
    for p in _vector_files(vectors):
        data = p.read_bytes()
        records += [data[:k] for k in range(len(data) + 1)]
    full = _completed_user_message(vectors)
    plain = _without_security_header(full)
    for data in (full, plain):
        records += [data[:k] for k in range(0, len(data) + 1, 7)] + [data, data + b"\x01\x02\x03"]
    records += [None, b"", b"\x10", b"\x00\x00HU", b"\x00\x00HULIO"]
    check_all(records)


def test_mutated_lengths_equal_reference(vectors):
    """Every byte of the size/count/flag fields of the examples set to
    boundary values: the same errors (or rows) from both implementations."""
    full = _completed_user_message(vectors)
    bases = [full, _without_security_header(full)] + [p.read_bytes() for p in _vector_files(vectors)]
    records = []
    for data in bases:
        # every byte of the first 200 set to 0x00 / 0xFF; the size and flag fields (BaseHeader,
        # InternalHeader, UserHeader flags, the direct name's Count, the SecurityHeader and
        # MessagePropertiesHeader sizes with and without the SecurityHeader) also to 0x01 / 0x7F
        spots = {*range(0, 24), *range(60, 68), *range(92, 108), *range(120, 130), *range(136, 142),
                 *range(164, 176), *range(188, 192)}
        for at in range(min(len(data), 200)):
            for v in ((0x00, 0x01, 0x7F, 0xFF) if at in spots else (0x00, 0xFF)):
                if data[at] != v:
                    m = bytearray(data)
                    m[at] = v
                    records.append(bytes(m))
    check_all(records)


def test_flag_combinations_equal_reference(vectors):
    """The checks that depend on flags, in every order they can meet: all
    combinations of UserHeader DM, TH, MP, DQ, AQ and CQ on the example
    UserMessage; of BaseHeader IN, SH, DH, TR on it and the internal
    packets; of InternalHeader PT and CS."""
    plain = _without_security_header(_completed_user_message(vectors))
    base_uflags = struct.unpack_from("<I", plain, 60)[0]
    records = []
    for bits in range(1 << 10):
        dm, th, mp, dq, aq = bits & 3, bits >> 2 & 1, bits >> 3 & 1, bits >> 4 & 7, bits >> 7 & 7
        f = base_uflags & ~((3 << 5) | (1 << 20) | (1 << 21) | (7 << 10) | (7 << 13))
        f |= dm << 5 | th << 20 | mp << 21 | dq << 10 | aq << 13
        m = bytearray(plain)
        struct.pack_into("<I", m, 60, f)
        records.append(bytes(m))
        struct.pack_into("<I", m, 60, f | 1 << 22)          # CQ: a ConnectorType would follow
        records.append(bytes(m))
    internals = [(vectors / "msmq" / n).read_bytes() for n in
                 ("4.1.3_establish_connection_request.bin", "4.1.5_connection_parameters_request.bin",
                  "4.1.8_session_ack.bin")]
    for data in [plain] + internals:
        flags = struct.unpack_from("<H", data, 2)[0]
        for bits in range(16):
            f = flags & ~0x138 | (bits & 1) << 3 | (bits >> 1 & 1) << 4 | (bits >> 2 & 1) << 5 | (bits >> 3) << 8
            m = bytearray(data)
            struct.pack_into("<H", m, 2, f)
            records.append(bytes(m))
            for size in (16, 20, 32, 36, 572):
                struct.pack_into("<I", m, 8, size)
                records.append(bytes(m))
    for data in internals:
        for pt in range(32):
            m = bytearray(data)
            struct.pack_into("<H", m, 18, pt)
            records.append(bytes(m))
    check_all(records)


TEXTS = ["mqsender label", "", "\x00inside", "caf\u00e9 \u20ac", "\U0001F600 pair", "lone high \ud800",
         "\ud800x lone high then text", "lone low \udc00", "\udc00\ud800 reversed", "\ud83d\ude00 pair written out",
         "x" * 249]


def _message(label, dq_name, rq=0):
    uf = UserFlags(DM=1, MP=1, DQ=7, AQ=7, RQ=rq)
    uh = UserHeader(Flags=uf, MessageID=7, DestinationQueue=DirectQueueFormatName(dq_name),
                    AdminQueue=DirectQueueFormatName("OS:admin\\q"),
                    ResponseQueue=PrivateQueueFormatNameId(9) if rq == 4 else None)
    mp = MessagePropertiesHeader(Flags=1, Label=label, MessageBody=b"body")
    return encode_packet(Packet("UserMessage", BaseHeader(), UserHeader=uh, MessagePropertiesHeader=mp))


def test_text_columns_equal_reference():
    """UTF-16 text with nulls, non-ASCII, surrogate pairs and lone surrogates
    (which Arrow cannot hold: U+FFFD) in the Label and in direct format names."""
    records = []
    for k, text in enumerate(TEXTS):
        records.append(_message(text, "OS:host\\q" + text, rq=1 if k % 2 else 4))
        records.append(_message(None, "TCP:10.0.0.1\\" + text))
    batch = check_all(records)
    rows = _rows(batch)
    assert rows[0]["props_label"] == "mqsender label"
    assert rows[0]["user_destination_queue"] == "DIRECT=OS:host\\qmqsender label"
    assert rows[0]["user_response_queue"] is None                   # RQ 4: the admin queue is direct
    assert rows[2]["user_response_queue"] == rows[2]["user_admin_queue"] == "DIRECT=OS:admin\\q"  # RQ 1
    assert rows[1]["props_label"] is None and rows[1]["props_label_length"] == 0
    by_text = {t: r["props_label"] for t, r in zip(TEXTS, rows[::2])}
    assert by_text["lone high \ud800"] == "lone high \ufffd"
    assert by_text["\ud800x lone high then text"] == "\ufffdx lone high then text"
    assert by_text["\udc00\ud800 reversed"] == "\ufffd\ufffd reversed"
    assert by_text["\ud83d\ude00 pair written out"] == "\U0001F600 pair written out"
    assert by_text["\x00inside"] == "\x00inside"


# ---------------------------------------------------------------------------
# input forms
# ---------------------------------------------------------------------------

def test_input_forms(vectors, mimpl):
    recs = [p.read_bytes() for p in _vector_files(vectors)]
    ref = decode_msmq_batch(recs, impl="py")
    assert decode_msmq_batch(recs, impl=mimpl).equals(ref)
    assert decode_msmq_batch(pa.array(recs, pa.binary()), impl=mimpl).equals(ref)
    big = pa.array([b"junk"] + recs, pa.large_binary()).slice(1)
    assert decode_msmq_batch(big, impl=mimpl).equals(ref)
    chunked = pa.chunked_array([pa.array(recs[:3], pa.binary()), pa.array(recs[3:], pa.binary())])
    assert decode_msmq_batch(chunked, impl=mimpl).equals(ref)
    buf = b"".join(recs)
    offs = np.cumsum([0] + [len(r) for r in recs])
    assert decode_msmq_batch((buf, offs), impl=mimpl).equals(ref)
    with_null = decode_msmq_batch([recs[0], None, memoryview(recs[1])], impl=mimpl).to_pylist()
    assert with_null[1]["error_reason"] == "null record" and with_null[1]["record"] == 1
    assert with_null[2]["kind"] == "Ping" and with_null[2]["record"] == 2
    empty = decode_msmq_batch([], impl=mimpl)
    assert empty.num_rows == 0 and empty.schema.equals(MSMQ_PACKETS)
    with pytest.raises(ValueError):
        decode_msmq_batch((buf, np.array([0, len(buf) + 1])), impl=mimpl)
    with pytest.raises(ValueError):
        decode_msmq_batch(recs, impl="fortran")


# ---------------------------------------------------------------------------
# hypothesis: packets built with the mqcodec.msmq encoders
# ---------------------------------------------------------------------------
u8, u16, u32 = st.integers(0, 0xFF), st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF)
guids = st.builds(lambda b: uuid.UUID(bytes_le=b), st.binary(min_size=16, max_size=16))
names = st.one_of(
    st.sampled_from(["OS:a04bm02\\q", "TCP:10.0.0.1\\private$\\orders", "os:host\\PRIVATE$\\order_queue$",
                     "DIRECT=OS:host\\q", "direct=TCP:1.2.3.4\\q", "HTTP://h/msmq/q", "OS:h\\q;journal",
                     "dırect=OS:h\\q", "OS:Ünicode\\q", "OS:h\\q\ud800x", "OS:h\\\udc00\\q", "OS:h\\\U0001F600"]),
    st.text(max_size=40))


#: UTF-16 code units, biased to the surrogate ranges and NUL
units = st.lists(st.sampled_from([0, 0x41, 0x5C, 0xE9, 0x20AC, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xD83D, 0xDE00])
                 | st.integers(1, 0xFFFF), max_size=30)


def _raw_text(draw, prefix: str = "") -> bytes:
    """UTF-16LE bytes with their terminating null, any code units after ``prefix``."""
    return prefix.encode("utf-16-le") + b"".join(
        struct.pack("<H", u) for u in draw(units)) + b"\x00\x00"


def _queue(draw, kind):
    if kind == "id":
        return PrivateQueueFormatNameId(draw(st.sampled_from([4, 1, 0xFFFFFFFF]) | u32))
    if kind == "public":
        return PublicQueueFormatName(draw(guids))
    if kind == "private":
        return PrivateQueueFormatName(draw(guids), draw(u32))
    if draw(st.integers(0, 3)) == 0:     # arbitrary code units after an ASCII start
        raw = _raw_text(draw, "OS:host\\")
        return DirectQueueFormatName(raw[:-2].decode("utf-16-le", "surrogatepass"), raw=raw)
    return DirectQueueFormatName(draw(names))


_DQ = {0: None, 3: "id", 5: "public", 7: "direct"}
_AQ = {0: None, 2: "id", 3: "id", 5: "public", 6: "private", 7: "direct"}
_RQ = {0: None, 1: None, 2: "id", 3: "id", 4: "id", 5: "public", 6: "private", 7: "direct"}


@st.composite
def user_messages(draw):
    """(bytes, facts) of a UserMessage with random optional headers."""
    th, sh = draw(st.booleans()), draw(st.booleans())
    dh, ses = draw(st.booleans()), draw(st.booleans())
    ah, hh, mq = (draw(st.integers(0, 9)) == 0 for _ in range(3))   # rare headers: fallback path
    order_ack = draw(st.integers(0, 5)) == 0
    dq = draw(st.sampled_from(sorted(_DQ)))
    aq = draw(st.sampled_from(sorted(_AQ)))
    rq = draw(st.sampled_from(sorted(_RQ)))
    if order_ack:
        dq, aq = draw(st.sampled_from([3, 7])), 0
    uf = UserFlags(0)
    for name, width in (("X1", 1), ("X2", 1), ("X3", 2), ("X4", 3)):   # reserved bits, kept as they are
        uf.set(name, draw(st.integers(0, (1 << width) - 1)) if draw(st.integers(0, 3)) == 0 else 0)
    uf.set("RC", draw(st.integers(0, 31)))
    uf.set("DM", 1 if th else draw(st.integers(0, 3)))
    uf.set("JN", draw(st.integers(0, 1)))
    uf.set("JP", draw(st.integers(0, 1)))
    cq = draw(st.booleans())
    for name, v in (("DQ", dq), ("AQ", aq), ("RQ", rq), ("SH", sh), ("TH", th), ("MP", 1), ("CQ", cq),
                    ("MQ", mq), ("AH", ah), ("HH", hh)):
        uf.set(name, int(v))
    queues = {f: (_queue(draw, k) if k else None)
              for f, k in (("DestinationQueue", _DQ[dq]), ("AdminQueue", _AQ[aq]), ("ResponseQueue", _RQ[rq]))}
    if order_ack and dq == 3:
        queues["DestinationQueue"] = PrivateQueueFormatNameId(4)
    if order_ack and dq == 7:
        queues["DestinationQueue"] = DirectQueueFormatName(draw(st.sampled_from(
            ["OS:h\\PRIVATE$\\order_queue$", "OS:h\\private$\\ORDER_QUEUE$", "OS:h\\private$\\q",
             "OS:h\\prıvate$\\order_queue$"])))
    uh = UserHeader(SourceQueueManager=draw(guids), QueueManagerAddress=draw(guids),
                    TimeToBeReceived=draw(u32), SentTime=draw(u32), MessageID=draw(u32), Flags=uf,
                    ConnectorType=draw(guids) if cq else None, **queues)
    base_flags = draw(st.integers(0, 7)) | (0x10 if ses else 0) | (0x20 if dh else 0) \
        | (0x100 if dh and draw(st.booleans()) else 0) | (draw(u16) & 0xFE00 if draw(st.booleans()) else 0)
    if order_ack:
        base_flags = 0
        dh = ses = False
    label = "QM Ordering Ack" if order_ack else draw(st.none() | names.filter(lambda s: len(s) < 120))
    body = draw(st.binary(max_size=48))
    ext = draw(st.binary(max_size=12))
    mclass = draw(st.sampled_from([0xFF, 0x4000, 0x8001, 0x10])) if order_ack else draw(u16)
    mp = MessagePropertiesHeader(Flags=draw(u8), MessageClass=mclass, CorrelationID=draw(st.binary(min_size=20,
                                 max_size=20)), BodyType=draw(u32), ApplicationTag=draw(u32),
                                 AllocationBodySize=len(body) + draw(st.integers(0, 100)),
                                 PrivacyLevel=draw(u32), HashAlgorithm=draw(u32), EncryptionAlgorithm=draw(u32),
                                 Label=label, ExtensionData=ext, MessageBody=body)
    if not order_ack and draw(st.integers(0, 3)) == 0:    # a Label of arbitrary code units
        mp.label_raw = _raw_text(draw)
        mp.Label = label = mp.label_raw[:-2].decode("utf-16-le", "surrogatepass")
    headers = {"UserHeader": uh, "MessagePropertiesHeader": mp}
    if th:
        cg = draw(st.booleans())
        headers["TransactionHeader"] = TransactionHeader(
            (draw(u32) & ~1) | int(cg), TxSequenceID(draw(u32), draw(u32)), draw(st.integers(1, 0xFFFFFFFF)),
            draw(st.integers(0, 0xFFFFFFFE)), draw(st.binary(min_size=16, max_size=16)) if cg else None)
    if sh:
        st_kind = draw(st.sampled_from([0, 1, 2]))
        if st_kind == 1:     # an [MS-DTYP] 2.4.2.2 SID
            n = draw(st.integers(0, 5))
            sid = bytes([1, n]) + draw(st.binary(min_size=6 + 4 * n, max_size=6 + 4 * n))
        else:
            sid = draw(st.binary(min_size=16, max_size=16)) if st_kind == 2 else b""
        items = {"EncryptionKey": draw(st.binary(max_size=9)), "Signature": draw(st.binary(max_size=9))}
        if not (sid or items["EncryptionKey"] or items["Signature"]) or draw(st.integers(0, 5)) == 0:
            items["SenderCert"] = draw(st.binary(min_size=1, max_size=9))     # the pure codec's part
        if draw(st.integers(0, 7)) == 0:
            items["ProviderInfo"] = b"\x01\x00\x00\x00" + "Microsoft Base\x00".encode("utf-16-le")
        flags = st_kind | (draw(st.sampled_from([0, 0x20, 0x80])))
        headers["SecurityHeader"] = SecurityHeader.create(Flags=flags, SecurityID=sid, **items)
    if dh:
        qt = draw(st.integers(0, 1))
        headers["DebugHeader"] = DebugHeader((draw(u16) & ~3) | qt, draw(u16),
                                             draw(st.binary(min_size=16, max_size=16)) if qt else None)
    if ah:
        headers["SRMPEnvelopeHeader"] = SRMPEnvelopeHeader.create(draw(st.text(max_size=10)))
        headers["CompoundMessageHeader"] = CompoundMessageHeader.create(b"<x/>body", 4, 4)
    if hh:
        headers["SoapHeader"] = SoapHeader.create(draw(st.text(max_size=6)), draw(st.text(max_size=6)))
    if mq:
        headers["MultiQueueFormatHeader"] = MultiQueueFormatHeader.create()
    if ses:
        headers["SessionHeader"] = SessionHeader(AckSequenceNumber=draw(u16), RecoverableMsgAckSeqNumber=draw(u16),
                                                 RecoverableMsgAckFlags=draw(u32), UserMsgSequenceNumber=draw(u16),
                                                 RecoverableMsgSeqNumber=draw(u16), WindowSize=draw(u16),
                                                 Reserved=draw(u16))
    pkt = Packet("UserMessage", BaseHeader(Flags=base_flags, Reserved=draw(u8), TimeToReachQueue=draw(u32)),
                 **headers)
    data = encode_packet(pkt) + draw(st.sampled_from([b"", b"\x00", b"trailing bytes"]))
    facts = {"message_id": uh.MessageID, "label": label, "body": body, "ext": ext, "session": ses,
             "xact": headers.get("TransactionHeader"), "debug": headers.get("DebugHeader"),
             "uflags": int(uf), "base_flags": base_flags}
    return data, facts


@st.composite
def internal_packets(draw):
    pt = draw(st.sampled_from([1, 2, 3, 0, 4, 15]))
    body = {1: 16, 2: 552, 3: 12}.get(pt, draw(st.integers(0, 20)))
    size = draw(st.sampled_from([20 + body, 20, 36, 32, 572]) | st.integers(0, 600))
    flags = 0x08 | draw(st.integers(0, 7)) | (0x10 if draw(st.booleans()) else 0) | \
        (0x20 if draw(st.integers(0, 9)) == 0 else 0)
    head = struct.pack("<BBHIII", 0x10, draw(u8), flags, LIOR, size, draw(st.sampled_from([0xFFFFFFFF]) | u32))
    rest = struct.pack("<HH", draw(u16), pt | (draw(st.integers(0, 0xFFF)) << 4))
    rest += draw(st.binary(min_size=body, max_size=body)) if pt != 2 else (
        draw(st.binary(min_size=40, max_size=40)) + draw(st.sampled_from([b"\x5a" * 512, b"\x00" * 512])))
    return head + rest + draw(st.sampled_from([b"", b"\x01\x02", bytes(16)]))


pings = st.builds(lambda f, c, g, t: struct.pack("<HHI", f, 0x5548, c) + g + t, u16, u32,
                  st.binary(min_size=16, max_size=16), st.sampled_from([b"", b"xy"]))


@SETTINGS
@given(user_messages())
def test_generated_user_messages(built):
    data, facts = built
    batch = check_all([data])
    row = _rows(batch)[0]
    assert row["error_structure"] is None, row
    assert row["user_message_id"] == facts["message_id"]
    assert row["user_flags"] == facts["uflags"] and row["base_flags"] == facts["base_flags"]
    assert row["props_label"] == _arrow(facts["label"])
    assert data[row["props_body_offset"]:row["props_body_offset"] + len(facts["body"])] == facts["body"]
    assert row["props_message_size"] == len(facts["body"])
    assert data[row["props_extension_offset"]:row["props_extension_offset"] + len(facts["ext"])] == facts["ext"]
    assert (row["session_window_size"] is not None) == facts["session"]
    x = facts["xact"]
    assert row["xact_tx_sequence_number"] == (x.TxSequenceNumber if x else None)
    g = facts["debug"]
    assert row["debug_qt"] == (g.Flags & 3 if g else None)
    # the packet re-encodes to its own bytes (round trip through the reference codec)
    assert encode_packet(decode_packet(data)) == data[:row["packet_end"]]


@SETTINGS
@given(st.lists(user_messages(), min_size=1, max_size=4), st.data())
def test_generated_truncations_and_mutations(built, data):
    records = []
    for raw, _facts in built:
        cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=6))
        records += [raw[:k] for k in cuts]
        for _ in range(data.draw(st.integers(0, 4))):
            at = data.draw(st.integers(0, len(raw) - 1))
            m = bytearray(raw)
            m[at] = data.draw(st.sampled_from([0, 1, 2, 0x7F, 0x80, 0xFF]) | u8)
            records.append(bytes(m))
        for _ in range(data.draw(st.integers(0, 4))):
            # a whole flags word or a 32-bit field replaced: BaseHeader.Flags, UserHeader.Flags,
            # any aligned word (a size, a count, a header's flags)
            m = bytearray(raw)
            at, width = data.draw(st.sampled_from([(2, 2), (60, 4)])
                                  | st.builds(lambda k: (4 * k, 4), st.integers(0, len(raw) // 4 - 1)))
            m[at:at + width] = data.draw(st.integers(0, (1 << 8 * width) - 1)).to_bytes(width, "little")
            records.append(bytes(m))
        records.append(raw)
    check_all(records)


@SETTINGS
@given(st.lists(internal_packets() | pings | st.binary(max_size=64), min_size=1, max_size=12))
def test_generated_internal_ping_and_noise(records):
    check_all(records + [r[:len(r) // 2] for r in records])


def test_fallback_is_counted_and_identical(vectors):
    """Records carrying the rare headers go through the pure codec inside the
    compiled implementation; the counters say how many."""
    ext = pytest.importorskip("mqcodec._ext.msmq_batch")
    full = _completed_user_message(vectors)               # SecurityHeader with a SID: native
    plain = _without_security_header(full)
    with_cert = _message("label", "OS:h\\q")
    uh, mp = decode_packet(with_cert).UserHeader, decode_packet(with_cert).MessagePropertiesHeader
    uh.Flags.set("SH", 1)
    with_cert = encode_packet(Packet("UserMessage", BaseHeader(), UserHeader=uh, MessagePropertiesHeader=mp,
                                     SecurityHeader=SecurityHeader.create(Flags=0, SenderCert=b"cert")))
    with_soap = _message("label", "OS:h\\q")
    p = decode_packet(with_soap)
    p.UserHeader.Flags.set("HH", 1)
    p.SoapHeader = SoapHeader.create("h", "b")
    p.BaseHeader.PacketSize = None
    with_soap = encode_packet(p)
    order_ack_direct = _message("QM Ordering Ack", "OS:h\\PRIVATE$\\order_queue$")
    p = decode_packet(order_ack_direct)
    p.BaseHeader.Flags = type(p.BaseHeader.Flags)(0)
    p.MessagePropertiesHeader.MessageClass = 0xFF
    p.UserHeader.Flags.set("AQ", 0)
    p.UserHeader.AdminQueue = None
    p.MessagePropertiesHeader.Flags = type(p.MessagePropertiesHeader.Flags)(0)
    p.BaseHeader.PacketSize = None
    order_ack_direct = encode_packet(p)
    records = [full, plain, plain, with_cert, with_soap, order_ack_direct]
    ext.reset_stats()
    c = decode_msmq_batch(records, impl="c")
    assert ext.stats() == {"records": 6, "fallback_rare_header": 2, "fallback_text": 1}
    rows = _rows(check_all(records))
    assert rows[0]["sec_sender_id_size"] == 0x1C and rows[0]["sec_st"] == 1
    assert rows[3]["sec_sender_cert_size"] == 4 and rows[4]["soap_header_data_length"] == 2   # "h" + null
    assert rows[5]["kind"] == "OrderAck"                   # [MS-MQQB] 3.1.5.1.1, direct order_queue$
    assert c.equals(decode_msmq_batch(records, impl="py"))


def test_a_tuple_of_two_records_is_two_records(vectors, mimpl):
    """(record, record) is two packets, not (buffer, offsets): the shared
    front door (mqcodec.batch._front) tells them apart by the second item."""
    from mqcodec.batch import decode_msmq_batch

    a = (vectors / "msmq" / "4.1.8_session_ack.bin").read_bytes()
    b = (vectors / "msmq" / "4.1.5_connection_parameters_request.bin").read_bytes()
    t = decode_msmq_batch((a, b), impl=mimpl)
    assert t.column("kind").to_pylist() == ["SessionAck", "ConnectionParameters"]
    assert t.column("base_packet_size").to_pylist() == [len(a), len(b)]


def test_compiled_decoder_loads_without_the_declarations():
    """The compiled MSMQ decoder reads msmq_pure's tables only: importing it
    (as a conversion of an MSMQ capture does) loads neither the MSMQ header
    declarations nor construct."""
    import subprocess
    import sys

    try:
        import mqcodec._ext.msmq_batch  # noqa: F401
    except ImportError:
        pytest.skip("the compiled decoder is not built")
    code = ("import sys, mqcodec._ext.msmq_batch\n"
            "print(sorted(m for m in ('construct', 'mqcodec.msmq.base', 'mqcodec.msmq.packet') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
