"""IBM MQ client-conversation units: declarations and encoders.

The units a client connection carries around its messages: channel start
(INITIAL_DATA both ways, USERID_DATA), MQCONN/MQCONNX, MQOPEN, MQGET (the
request), MQINQ, MQCLOSE, MQDISC, their replies, and HEARTBEAT.  The
message-bearing units (MQPUT, MQGET_REPLY, MESSAGE_DATA...) stay in
:mod:`mqcodec.ibmmq.framing`; this module only builds units, it never frames.

IBM does not publish the FAP.  The layouts are those tshark 4.0 shows for the
real capture ``captures/ibmmq_jms_client_1414.pcap`` (``tshark -T pdml``
gives each field's offset and size) and Wireshark's ``packet-mq.c``; field
names are Wireshark's (ID, UID, CONN, INQ) or IBM's (MQOD, MQCNO).  Every
integer after the TSH follows the TSH ``ByteOrder`` except the API header's
ReplyLength (big-endian), as in :mod:`mqcodec.ibmmq.tsh`.

Declarations are plain ``construct`` structs indexed ``DECL[order]``
("big"/"little"); ``tests/test_ibmmq_builders.py`` parses the capture's
units with them and builds the same bytes again, and checks that tshark
reads the encoders' output as intended.

=================  ======================================================
unit (after TSH)   layout
=================  ======================================================
INITIAL_DATA 0x01  ID (240 bytes at FAP level 10 and later)
USERID_DATA 0x08   UID (132 bytes)
MQCONN 0x81/0x91   API header, CONN (120 bytes), [FCNO...]
MQDISC 0x82/0x92   API header
MQOPEN 0x83/0x93   API header, MQOD (v1..v4), Options, [FOPA]
MQCLOSE 0x84       API header, Options;  MQCLOSE_REPLY 0x94: API header
MQGET 0x85         API header, MQMD, MQGMO, BufferLength
MQGET_REPLY 0x95   API header only when the get failed (2033...)
MQINQ 0x89         API header, SelectorCount, IntAttrCount, CharAttrLength,
                   Selectors;  MQINQ_REPLY 0x99: then IntAttrs, CharAttrs
HEARTBEAT 0x09     the TSH alone
=================  ======================================================
"""
from __future__ import annotations

import struct as _struct
from typing import Any, Sequence

import construct as cs

from ..ccsid import encode_text
from ..errors import EncodeError
from ..layout import build
from .framing import _order_arg, build_tsh, default_gmo, encode_segments
from .tsh import MQOD_DECL  # noqa: F401 - re-exported: one declaration of the MQOD, in tsh
from .tsh import (API_HEADER_DECL, API_HEADER_LENGTH, BIG, LITTLE, TCF_CONFIRM_REQUEST, TCF_FIRST, TCF_LAST,
                  TSH_LENGTH, TSHM_LENGTH)

__all__ = [
    "ID_DECL", "ID_LENGTH", "UID_DECL", "UID_LENGTH", "CONN_DECL", "CONN_LENGTH", "FCNO_DECL", "FCNO_LENGTH",
    "MQOD_DECL", "FOPA_DECL",
    "OPEN_DECL", "CLOSE_DECL", "INQ_DECL", "INQ_REPLY_DECL", "OPTIONS",
    "encode_initial_data", "encode_userid_data", "encode_fcno", "encode_conn", "encode_conn_reply", "encode_disc",
    "encode_disc_reply", "encode_open", "encode_open_reply", "encode_close", "encode_close_reply",
    "encode_get", "encode_get_failed", "encode_inq", "encode_inq_reply", "encode_heartbeat",
    "encode_api_unit",
]

#: MQI option bits and special values the builders use (cmqc.h names and
#: values; the generated constants module has no MQOO/MQGMO/MQCNO families).
OPTIONS = {
    "MQOO_INPUT_AS_Q_DEF": 0x00000001, "MQOO_INPUT_SHARED": 0x00000002, "MQOO_BROWSE": 0x00000008,
    "MQOO_OUTPUT": 0x00000010, "MQOO_INQUIRE": 0x00000020, "MQOO_FAIL_IF_QUIESCING": 0x00002000,
    "MQGMO_WAIT": 0x00000001, "MQGMO_NO_SYNCPOINT": 0x00000004, "MQGMO_FAIL_IF_QUIESCING": 0x00002000,
    "MQGMO_CONVERT": 0x00004000,
    "MQCNO_HANDLE_SHARE_BLOCK": 0x00000040, "MQCO_NONE": 0,
    "MQHO_NONE": 0, "MQHO_UNUSABLE_HOBJ": -1,
}

_I32 = {BIG: cs.Int32sb, LITTLE: cs.Int32sl}
_U32 = {BIG: cs.Int32ub, LITTLE: cs.Int32ul}
_U16 = {BIG: cs.Int16ub, LITTLE: cs.Int16ul}
_U8 = cs.Int8ub


def _both(fn):
    return {BIG: fn(BIG), LITTLE: fn(LITTLE)}


#: ID, the INITIAL_DATA structure (Wireshark "Initial Data"; offsets from
#: tshark's pdml of the capture's frame 7).
ID_DECL = _both(lambda o: cs.Struct(
    "StructID" / cs.Bytes(4),         # "ID  "
    "FapLevel" / _U8,                 # FAP level
    "CapFlag1" / _U8,                 # capability flags 1 (MQ request 0x20, split msgs 0x04, conversion 0x02)
    "ECapFlag1" / _U8,                # error capability flags 1
    "IniErrFlg1" / _U8,               # initial-data error flags 1
    "Reserved" / _U16[o],
    "MaxMsgBtch" / _U16[o],           # max message batch
    "MaxTrSize" / _U32[o],            # max transmission size
    "MaxMsgSize" / _U32[o],           # max message size
    "SeqWrapVal" / _U32[o],           # sequence number wrap value
    "ChannelName" / cs.Bytes(20),
    "CapFlag2" / _U8,
    "ECapFlag2" / _U8,
    "CCSID" / _U16[o],
    "QMgrName" / cs.Bytes(48),
    "HBInterval" / _U32[o],           # heartbeat interval, seconds
    "EFLLength" / _U16[o],
    "IniErrFlg2" / _U8,
    "Reserved1" / _U8,
    "HdrCprsLst" / cs.Bytes(2),       # header compression list
    "MsgCprsLst" / cs.Bytes(16),      # message compression list
    "Reserved2" / _U16[o],
    "SSLKeyRst" / _U32[o],            # SSL key reset count
    "ConvBySkt" / _U32[o],            # conversations per socket (SHARECNV)
    "CapFlag3" / _U8,
    "ECapFlag3" / _U8,
    "Reserved3" / _U16[o],
    "ProcessId" / _U32[o],
    "ThreadId" / _U32[o],
    "TraceId" / _U32[o],
    "ProdId" / cs.Bytes(12),          # product identifier, "MQJM09030500"
    "MQMID" / cs.Bytes(48),           # queue manager identifier
    "PAL" / cs.Bytes(20),
    "R" / cs.Bytes(12),
))
ID_LENGTH = 240

#: UID, the USERID_DATA structure.
UID_DECL = _both(lambda o: cs.Struct(
    "StructID" / cs.Bytes(4),         # "UID "
    "UserId" / cs.Bytes(12),
    "Password" / cs.Bytes(12),
    "LongUserId" / cs.Bytes(64),
    "SecurityId" / cs.Bytes(40),      # MQBYTE40: first byte its length, second its type
))
UID_LENGTH = 132

#: CONN, after the API header of MQCONN and MQCONN_REPLY; the MQCNO-derived
#: FCNO structure (and whatever follows) is kept as bytes.
CONN_DECL = _both(lambda o: cs.Struct(
    "QMgrName" / cs.Bytes(48),
    "ApplName" / cs.Bytes(28),
    "ApplType" / _I32[o],             # MQAT_*
    "AccountingToken" / cs.Bytes(32),
    "Options" / _I32[o],              # MQCNO options
    "XOptions" / _I32[o],
    "FCNO" / cs.GreedyBytes,          # "FCNO" structure of MQCONNX, empty for a plain MQCONN
))
CONN_LENGTH = 120

#: FCNO, the connect options of MQCONNX after CONN: the 212-byte form
#: tshark 4.0 decodes (it decodes no other length but 140, the same
#: without ProdId and MqmId; the capture's JMS client sends 352 bytes,
#: which tshark leaves undecoded).
FCNO_DECL = _both(lambda o: cs.Struct(
    "StructId" / cs.Const(b"FCNO"),
    "Version" / _I32[o],
    "CapFlag" / _I32[o],
    "ConnTag" / cs.Bytes(128),
    "ProdId" / cs.Bytes(24),
    "MqmId" / cs.Bytes(48),
))
FCNO_LENGTH = 212

#: FOPA, open attributes after the MQOPEN options (Wireshark's names).
FOPA_DECL = _both(lambda o: cs.Struct(
    "StructId" / cs.Const(b"FOPA"),
    "Version" / _I32[o],
    "Length" / _I32[o],
    "DefPersistence" / _I32[o],
    "DefPutResponseType" / _I32[o],
    "DefReadAhead" / _I32[o],
    "PropertyControl" / _I32[o],
    "Unknown" / cs.Bytes(cs.this.Length - 28),
))

#: MQOPEN and MQOPEN_REPLY after the API header.
OPEN_DECL = _both(lambda o: cs.Struct(
    "ObjDesc" / MQOD_DECL[o],
    "Options" / _I32[o],              # MQOO_*
    "FOPA" / cs.Optional(FOPA_DECL[o]),
))

#: MQCLOSE after the API header (MQCLOSE_REPLY has none).
CLOSE_DECL = _both(lambda o: cs.Struct(
    "Options" / _I32[o],              # MQCO_*
))

#: MQINQ (the request carries the selectors only).
INQ_DECL = _both(lambda o: cs.Struct(
    "SelectorCount" / _I32[o],
    "IntAttrCount" / _I32[o],
    "CharAttrLength" / _I32[o],
    "Selectors" / cs.Array(cs.this.SelectorCount, _I32[o]),
))

#: MQINQ_REPLY: the request's fields, then the integer and character values.
INQ_REPLY_DECL = _both(lambda o: cs.Struct(
    "SelectorCount" / _I32[o],
    "IntAttrCount" / _I32[o],
    "CharAttrLength" / _I32[o],
    "Selectors" / cs.Array(cs.this.SelectorCount, _I32[o]),
    "IntAttrs" / cs.Array(cs.this.IntAttrCount, _I32[o]),
    "CharAttrs" / cs.Bytes(cs.this.CharAttrLength),
))


# --------------------------------------------------------------------------
# encoders
# --------------------------------------------------------------------------

def _chars(text: str, n: int, structure: str, field: str, ccsid: int = 819) -> bytes:
    return encode_text(text, ccsid, n, structure=structure, field=field)


def _hlen(tsh: dict) -> int:
    return TSHM_LENGTH if tsh.get("structid", "TSHM") == "TSHM" else TSH_LENGTH


def encode_api_unit(segment_type: int | str, body: bytes = b"", *, byte_order="little", hobj: int = 0,
                    comp_code: int = 0, reason: int = 0, reply_length: int | None = None,
                    max_segment_length: int | None = None, **tsh: Any) -> bytes:
    """One API unit: TSH(M), API header (ReplyLength defaults to the unit's
    length), ``body``; split by ``max_segment_length`` when given."""
    order = _order_arg(byte_order)
    if reply_length is None:
        reply_length = _hlen(tsh) + API_HEADER_LENGTH + len(body)
    api = build(API_HEADER_DECL[order], {"ReplyLength": reply_length, "CompCode": comp_code, "Reason": reason,
                                         "Hobj": hobj}, "API")
    return encode_segments(segment_type, api + bytes(body), max_segment_length=max_segment_length,
                           byte_order=order, **tsh)


def encode_initial_data(*, channel_name: str, qmgr_name: str = "", byte_order="big", fap_level: int = 17,
                        cap_flag1: int = 0x26, cap_flag2: int = 0x51, cap_flag3: int = 0x28,
                        max_msg_batch: int = 0, max_tr_size: int = 32748, max_msg_size: int = 4194304,
                        seq_wrap_val: int = 0, ccsid: int = 819, hb_interval: int = 300,
                        conv_by_skt: int = 10, process_id: int = 1, thread_id: int = 1,
                        prod_id: str = "MQCC09030500", mqm_id: str = "", fields: dict | None = None,
                        ctl_flags1: int = TCF_CONFIRM_REQUEST | TCF_FIRST | TCF_LAST, **tsh: Any) -> bytes:
    """An INITIAL_DATA segment (TSH or TSHM, ``structid=``).  Defaults are
    the values of the capture's client; ``fields`` overrides any ID field by
    its declared name."""
    order = _order_arg(byte_order)
    value = {"StructID": b"ID  ", "FapLevel": fap_level, "CapFlag1": cap_flag1, "ECapFlag1": 0,
             "IniErrFlg1": 0, "Reserved": 0, "MaxMsgBtch": max_msg_batch, "MaxTrSize": max_tr_size,
             "MaxMsgSize": max_msg_size, "SeqWrapVal": seq_wrap_val,
             "ChannelName": _chars(channel_name, 20, "ID", "ChannelName"), "CapFlag2": cap_flag2,
             "ECapFlag2": 0, "CCSID": ccsid, "QMgrName": _chars(qmgr_name, 48, "ID", "QMgrName"),
             "HBInterval": hb_interval, "EFLLength": 0x8A, "IniErrFlg2": 0, "Reserved1": 0,
             "HdrCprsLst": b"\x00\xff", "MsgCprsLst": b"\x00" + b"\xff" * 15, "Reserved2": 0, "SSLKeyRst": 0,
             "ConvBySkt": conv_by_skt, "CapFlag3": cap_flag3, "ECapFlag3": 0, "Reserved3": 0,
             "ProcessId": process_id, "ThreadId": thread_id, "TraceId": 1,
             "ProdId": _chars(prod_id, 12, "ID", "ProdId"), "MQMID": _chars(mqm_id, 48, "ID", "MQMID"),
             "PAL": b"\x00\x01\x00\x00" + b"\xff" * 16, "R": b"\x00" * 12}
    value.update(fields or {})
    body = build(ID_DECL[order], value, "ID")
    tsh.setdefault("structid", "TSH")
    # one segment, CtlFlag1 exactly as given: the capture's client sends 0x31
    # (Confirm Req, First, Last), its queue manager answers 0x02, then 0x00
    return build_tsh("INITIAL_DATA", _hlen(tsh) + len(body), byte_order=order, ctl_flags1=ctl_flags1, **tsh) + body


def encode_userid_data(*, user_id: str, password: str = "", long_user_id: str | None = None,
                       security_id: bytes = b"", byte_order="little", **tsh: Any) -> bytes:
    """A USERID_DATA segment (UID)."""
    order = _order_arg(byte_order)
    if len(security_id) > 40:
        raise EncodeError("UID", "SecurityId", "%d bytes do not fit in 40" % len(security_id))
    body = build(UID_DECL[order], {
        "StructID": b"UID ", "UserId": _chars(user_id, 12, "UID", "UserId"),
        "Password": _chars(password, 12, "UID", "Password"),
        "LongUserId": _chars(user_id if long_user_id is None else long_user_id, 64, "UID", "LongUserId"),
        "SecurityId": bytes(security_id).ljust(40, b"\0")}, "UID")
    return encode_segments("USERID_DATA", body, byte_order=order, **tsh)


def _conn_body(order: str, qmgr_name: str, appl_name: str, appl_type: int, options: int, xoptions: int,
               fcno: bytes, accounting_token: bytes) -> bytes:
    return build(CONN_DECL[order], {
        "QMgrName": _chars(qmgr_name, 48, "CONN", "QMgrName"), "ApplName": _chars(appl_name, 28, "CONN", "ApplName"),
        "ApplType": appl_type, "AccountingToken": bytes(accounting_token).ljust(32, b"\0")[:32],
        "Options": options, "XOptions": xoptions, "FCNO": bytes(fcno)}, "CONN")


def encode_fcno(byte_order="little", *, version: int = 2, cap_flag: int = 0, conn_tag: bytes = b"",
                prod_id: str = "", mqm_id: str = "") -> bytes:
    """An FCNO (the connect options MQCONNX adds after CONN)."""
    order = _order_arg(byte_order)
    if len(conn_tag) > 128:
        raise EncodeError("FCNO", "ConnTag", "%d bytes do not fit in 128" % len(conn_tag))
    return build(FCNO_DECL[order], {"Version": version, "CapFlag": cap_flag,
                                    "ConnTag": bytes(conn_tag).ljust(128, b"\0"),
                                    "ProdId": _chars(prod_id, 24, "FCNO", "ProdId"),
                                    "MqmId": _chars(mqm_id, 48, "FCNO", "MqmId")}, "FCNO")


def encode_conn(*, qmgr_name: str, appl_name: str, appl_type: int, options: int = 0, xoptions: int = 0,
                fcno: bytes = b"", accounting_token: bytes = b"", byte_order="little", **kw: Any) -> bytes:
    """MQCONN (MQCONNX when ``fcno`` carries the connect options)."""
    order = _order_arg(byte_order)
    body = _conn_body(order, qmgr_name, appl_name, appl_type, options, xoptions, fcno, accounting_token)
    return encode_api_unit("MQCONN", body, byte_order=order, **kw)


def encode_conn_reply(*, qmgr_name: str, appl_name: str, appl_type: int, options: int = 0, xoptions: int = 0,
                      fcno: bytes = b"", accounting_token: bytes = b"", byte_order="little", **kw: Any) -> bytes:
    """MQCONN_REPLY: the request's CONN echoed (``comp_code``/``reason``)."""
    order = _order_arg(byte_order)
    body = _conn_body(order, qmgr_name, appl_name, appl_type, options, xoptions, fcno, accounting_token)
    return encode_api_unit("MQCONN_REPLY", body, byte_order=order, **kw)


def encode_disc(**kw: Any) -> bytes:
    """MQDISC: the API header alone."""
    return encode_api_unit("MQDISC", b"", **kw)


def encode_disc_reply(**kw: Any) -> bytes:
    """MQDISC_REPLY: the API header alone."""
    return encode_api_unit("MQDISC_REPLY", b"", **kw)


def _od(order: str, object_name: str, object_qmgr_name: str, object_type: int, version: int,
        dynamic_q_name: str, known_dest_count: int = 0) -> dict:
    if version not in (1, 2, 3, 4):
        raise EncodeError("MQOD", "Version", "version %d is not 1 to 4" % version)
    blank48 = b" " * 48
    return {"StrucId": b"OD  ", "Version": version, "ObjectType": object_type,
            "ObjectName": _chars(object_name, 48, "MQOD", "ObjectName"),
            "ObjectQMgrName": _chars(object_qmgr_name, 48, "MQOD", "ObjectQMgrName"),
            "DynamicQName": _chars(dynamic_q_name, 48, "MQOD", "DynamicQName"), "AlternateUserId": b" " * 12,
            "RecsPresent": 0, "KnownDestCount": known_dest_count, "UnknownDestCount": 0, "InvalidDestCount": 0,
            "ObjectRecOffset": 0, "ResponseRecOffset": 0, "ObjectRecPtr": 0, "ResponseRecPtr": 0,
            "AlternateSecurityId": b"\0" * 40, "ResolvedQName": blank48, "ResolvedQMgrName": blank48,
            "ObjectString": b"\0" * 20, "SelectionString": b"\0" * 20, "ResObjectString": b"\0" * 20,
            "ResolvedType": 0}


def _open(seg: str, object_name: str, options: int, object_qmgr_name: str, object_type: int, od_version: int,
          dynamic_q_name: str, known_dest_count: int, byte_order, kw: dict) -> bytes:
    order = _order_arg(byte_order)
    body = build(OPEN_DECL[order], {"ObjDesc": _od(order, object_name, object_qmgr_name, object_type, od_version,
                                                   dynamic_q_name, known_dest_count),
                                    "Options": options, "FOPA": None}, "MQOPEN")
    return encode_api_unit(seg, body, byte_order=order, **kw)


def encode_open(*, object_name: str, options: int, object_qmgr_name: str = "", object_type: int = 1,
                od_version: int = 2, dynamic_q_name: str = "AMQ.*", byte_order="little", **kw: Any) -> bytes:
    """MQOPEN: API header (Hobj 0), MQOD, open options."""
    kw.setdefault("hobj", 0)
    return _open("MQOPEN", object_name, options, object_qmgr_name, object_type, od_version, dynamic_q_name, 0,
                 byte_order, kw)


def encode_open_reply(*, object_name: str, options: int, hobj: int, object_qmgr_name: str = "",
                      object_type: int = 1, od_version: int = 2, dynamic_q_name: str = "AMQ.*",
                      byte_order="little", **kw: Any) -> bytes:
    """MQOPEN_REPLY: the handle the queue manager gives in the API header
    (MQHO_UNUSABLE_HOBJ -1 when the open failed), the MQOD echoed."""
    failed = kw.get("comp_code", 0) == 2
    return _open("MQOPEN_REPLY", object_name, options, object_qmgr_name, object_type, od_version, dynamic_q_name,
                 0 if failed else 1, byte_order, dict(kw, hobj=hobj))


def encode_close(*, hobj: int, options: int = 0, byte_order="little", **kw: Any) -> bytes:
    """MQCLOSE: API header with the handle, close options."""
    order = _order_arg(byte_order)
    return encode_api_unit("MQCLOSE", build(CLOSE_DECL[order], {"Options": options}, "MQCLOSE"),
                           byte_order=order, hobj=hobj, **kw)


def encode_close_reply(*, hobj: int = -1, **kw: Any) -> bytes:
    """MQCLOSE_REPLY: the API header alone; the handle is now unusable
    (the capture's replies carry 0xFFFFFFFF)."""
    return encode_api_unit("MQCLOSE_REPLY", b"", hobj=hobj, **kw)


def encode_get(md: bytes, *, hobj: int, buffer_length: int, gmo: bytes | None = None, **kw: Any) -> bytes:
    """MQGET (the request): API header, the MQMD the application passes (its
    MsgId/CorrelId select the message), MQGMO, the buffer length it offers.
    ``md`` is MQMD bytes (its StrucId/Version decide the byte order)."""
    md = bytes(md)
    if md[:4] != b"MD  " or len(md) < 8:
        raise EncodeError("MQMD", "StrucId", "encode_get needs the bytes of an MQMD")
    order = BIG if _struct.unpack_from(">i", md, 4)[0] in (1, 2) else LITTLE
    if kw.get("byte_order") not in (None, order):
        raise EncodeError("TSH", "ByteOrder", "the MQMD is %s-endian but byte_order is %s" % (order, kw["byte_order"]))
    kw.pop("byte_order", None)
    opts = default_gmo(order) if gmo is None else bytes(gmo)
    body = md + opts + _struct.pack(">i" if order == BIG else "<i", buffer_length)
    return encode_api_unit("MQGET", body, byte_order=order, hobj=hobj, **kw)


def encode_get_failed(*, hobj: int, reason: int = 2033, comp_code: int = 2, **kw: Any) -> bytes:
    """MQGET_REPLY for a get that found no message (default 2033
    MQRC_NO_MSG_AVAILABLE): the API header alone, no MQMD, so the framer
    yields no Message for it."""
    return encode_api_unit("MQGET_REPLY", b"", hobj=hobj, comp_code=comp_code, reason=reason, **kw)


def encode_inq(*, hobj: int, selectors: Sequence[int], int_attr_count: int, char_attr_length: int,
               byte_order="little", **kw: Any) -> bytes:
    """MQINQ: the handle, the counts and the selectors."""
    order = _order_arg(byte_order)
    body = build(INQ_DECL[order], {"SelectorCount": len(selectors), "IntAttrCount": int_attr_count,
                                   "CharAttrLength": char_attr_length, "Selectors": list(selectors)}, "MQINQ")
    return encode_api_unit("MQINQ", body, byte_order=order, hobj=hobj, **kw)


def encode_inq_reply(*, hobj: int, selectors: Sequence[int], int_attrs: Sequence[int], char_attrs: bytes,
                     byte_order="little", **kw: Any) -> bytes:
    """MQINQ_REPLY: the selectors, then the integer and character values."""
    order = _order_arg(byte_order)
    body = build(INQ_REPLY_DECL[order], {"SelectorCount": len(selectors), "IntAttrCount": len(int_attrs),
                                         "CharAttrLength": len(char_attrs), "Selectors": list(selectors),
                                         "IntAttrs": list(int_attrs), "CharAttrs": bytes(char_attrs)}, "MQINQ")
    return encode_api_unit("MQINQ_REPLY", body, byte_order=order, hobj=hobj, **kw)


def encode_heartbeat(*, request: bool, byte_order="little", **tsh: Any) -> bytes:
    """HEARTBEAT: the TSH(M) alone.  The side whose heartbeat interval
    expires sends it with CtlFlag1 CONFIRM_REQUEST (tshark: "Confirm Req");
    the peer answers with a HEARTBEAT without it."""
    return encode_segments("HEARTBEAT", b"", byte_order=byte_order,
                           ctl_flags1=TCF_CONFIRM_REQUEST if request else 0, **tsh)
