"""``decode_msmq_batch(columns=...)`` and the shared byte -> UTF-8 tables of
the compiled batch decoders (``_ext/batch_common.pxi``).

* A column selection is checked against the full-width batch of the same
  records (and of the other implementation): the selected columns, in the
  requested order, hold exactly the full batch's values -- errors, null
  records, records the compiled core hands to the pure codec, ChunkedArray
  inputs included.
* Strings in single-byte CCSIDs are checked against
  ``mqcodec.ccsid.decode_text`` -- the pure path's decoder, outside the
  compiled code -- for random bytes (the compiled copy loop copies ASCII runs
  8 bytes at a time and writes table entries otherwise).
"""
from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcodec import ccsid as _ccsid
from mqcodec.batch import decode_mq_batch, decode_msmq_batch, decode_pcf_batch
from mqcodec.batch.schema import MSMQ_PACKETS
from mqcodec.msmq import SoapHeader, decode_packet, encode_packet
from mqcodec.msmq.builders import simulate_session

from test_batch_msmq import _message, internal_packets, pings, user_messages

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

#: a documented "dozen columns" selection (the one benchmarks/bench_msmq.py times)
DOZEN = ["record", "kind", "base_flags", "base_packet_size", "user_sent_time", "user_message_id",
         "user_destination_queue", "props_label", "props_message_class", "props_body_offset",
         "props_message_size", "error_reason"]


def _records():
    out = []
    for seed in range(3):
        s = simulate_session(seed, messages=4)
        out += [p for _, p in s.initiator_packets] + [p for _, p in s.acceptor_packets]
    # errors: every third packet cut in half; a null record; garbage
    out += [p[: len(p) // 2] for p in out[::3]] + [None, b"\x10\x00\x00\x00LIOR", b""]
    # a packet the compiled core hands to the pure codec (SoapHeader)
    p = decode_packet(_message("label", "OS:h\\q"))
    p.UserHeader.Flags.set("HH", 1)
    p.SoapHeader = SoapHeader.create("h", "b")
    p.BaseHeader.PacketSize = None
    out.append(encode_packet(p))
    return out


@pytest.mark.parametrize("columns", [DOZEN, ["props_label", "kind"], ["error_structure", "raw", "record"],
                                     ["ec_client_guid", "user_admin_queue", "user_response_queue"],
                                     list(reversed(MSMQ_PACKETS.names))])
def test_selection_equals_the_full_batch(impl, columns):
    records = _records()
    full = decode_msmq_batch(records, impl="py")
    got = decode_msmq_batch(records, impl=impl, columns=columns)
    assert got.schema.names == columns
    assert got.equals(full.select(columns))
    assert decode_msmq_batch(records, impl=impl).equals(full)


@SETTINGS
@given(st.lists(user_messages().map(lambda built: built[0]) | internal_packets() | pings, min_size=1, max_size=8),
       st.lists(st.sampled_from(MSMQ_PACKETS.names), min_size=1, max_size=12, unique=True))
def test_generated_selection_equals_the_full_batch(impl, records, columns):
    """Any selection, on packets with every optional header (the compiled walk
    writes only the headers a selected column belongs to), cut ones included."""
    records = records + [r[: len(r) // 2] for r in records]
    full = decode_msmq_batch(records, impl="py")
    assert decode_msmq_batch(records, impl=impl, columns=columns).equals(full.select(columns))


def test_selection_of_a_chunked_array_renumbers_records(impl):
    records = _records()
    arr = pa.chunked_array([pa.array(records[:7], pa.binary()), pa.array(records[7:], pa.binary())])
    full = decode_msmq_batch(records, impl="py")
    got = decode_msmq_batch(arr, impl=impl, columns=["kind", "base_packet_size"])
    assert got.equals(full.select(["kind", "base_packet_size"]))
    got = decode_msmq_batch(arr, impl=impl, columns=["kind", "record"])
    assert got.column("record").to_pylist() == list(range(len(records)))


@pytest.mark.parametrize("bad, exc", [(["nope"], ValueError), (["kind", "kind"], ValueError), ("kind", TypeError)])
def test_bad_selections(impl, bad, exc):
    with pytest.raises(exc):
        decode_msmq_batch([b""], impl=impl, columns=bad)


# ------------------------------------------------------------------ strings
_SINGLE = sorted(c for c in _ccsid.CCSID_CODECS if _ccsid.is_single_byte(c))


def _pcf_string(ccsid: int, raw: bytes) -> bytes:
    """An MQCFH (little-endian, one parameter) and one MQCFST of ``raw``."""
    pad = (-len(raw)) % 4
    cfst = struct.pack("<5i", 4, 20 + len(raw) + pad, 3001, ccsid, len(raw)) + raw + b"\0" * pad
    return struct.pack("<9i", 1, 36, 1, 1, 1, 1, 0, 0, 1) + cfst


@SETTINGS
@given(st.sampled_from(_SINGLE), st.lists(st.binary(max_size=40) | st.text("AB z09", max_size=30).map(str.encode)
                                          .map(lambda b: b + bytes([0xE9]) + b), min_size=1, max_size=6))
def test_single_byte_strings_match_decode_text(impl, ccsid, raws):
    b = decode_pcf_batch([_pcf_string(ccsid, r) for r in raws], impl=impl)
    p = b.parameters
    assert p.column("string_value").to_pylist() == [_ccsid.decode_text(r, ccsid) for r in raws]
    # only MQCFST parameters were built: these columns are all set / all null
    assert p.column("string_value").null_count == 0 and p.column("ccsid").null_count == 0
    assert p.column("int_value").null_count == len(raws) and p.column("string_list").null_count == len(raws)


@SETTINGS
@given(st.sampled_from(_SINGLE + [1208, 4321]), st.binary(min_size=8, max_size=8))
def test_mqmd_strings_match_decode_text(impl, ccsid, raw):
    from mqcodec.ibmmq import constants as C
    from mqcodec.ibmmq.headers import MQMD
    from mqcodec.ibmmq.message import MQMessage

    md = MQMD(Version=1, MsgType=C.MQMT_DATAGRAM, Format="MQSTR", PutApplName="x").encode(546) \
        if hasattr(MQMD, "encode") else None
    if md is None:
        pytest.skip("no MQMD encoder")
    from mqcodec.ibmmq import headers as h
    from mqcodec.layout import field_offsets

    # the MQMD's UserIdentifier (12 bytes) becomes raw + 4 blanks, read in the given CCSID
    at = field_offsets(h.MQMD1_DECL[h.LITTLE])["UserIdentifier"]
    md = md[:at] + raw + b"    " + md[at + 12:]
    row = decode_mq_batch([md], ccsid=ccsid, impl=impl).to_pylist()[0]
    if not _ccsid.is_known(ccsid):
        # no converter: never guessed (the pure decoder keeps the bytes and warns)
        assert row["md_user_identifier"] is None and row["md_format"] is None and row["body_format"] is None
        return
    assert row["md_user_identifier"] == _ccsid.decode_text(raw + b"    ", ccsid)
