"""IBM MQ units built again: segments, the message-bearing units, and the
units of a client conversation (the traffic simulator and the tests build
with these; :mod:`mqcodec.ibmmq.framing` only reads).

* Segments: :func:`build_tsh` (one header), :func:`encode_segments` (a body
  wrapped in one or more segments, FIRST/LAST set as MQ sets them).
* The message-bearing units: :func:`encode_put`, :func:`encode_put1`,
  :func:`encode_put_reply`, :func:`encode_get_reply`,
  :func:`encode_message_data` (channel MESSAGE_DATA) and
  :func:`encode_async_message`, with the option structures
  :func:`default_pmo`, :func:`default_gmo`, :func:`default_od`.
* The units a client connection carries around its messages: channel start
  (INITIAL_DATA both ways, USERID_DATA), MQCONN/MQCONNX, MQOPEN, MQGET (the
  request), MQINQ, MQCLOSE, MQDISC, their replies, and HEARTBEAT (table
  below).

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
from typing import Any, Callable, Sequence

import construct as cs

from ..ccsid import encode_text
from ..errors import EncodeError
from ..layout import build
from .constants import ENCODING_BIG, ENCODING_LITTLE
from .tsh import MQOD_DECL  # noqa: F401 - re-exported: one declaration of the MQOD, in tsh
from .tsh import (
    API_HEADER_DECL, API_HEADER_LENGTH, ASYNC_HEADER_FIXED_LENGTH, ASYNC_HEADER_SHORT_LENGTH, BIG,
    BYTE_ORDER_BIG, BYTE_ORDER_LITTLE, LITTLE, MD_IDS, MQGMO_DECL, MQGMO_LENGTHS, MQMD_LENGTHS,
    MQOD_PREFIX_DECL, MQPMO_DECL, MQPMO_LENGTHS, MSH_DECL, SEGMENT_TYPE_VALUES, TCF_CONFIRM_REQUEST,
    TCF_FIRST, TCF_LAST, TSH_DECL, TSH_IDS, TSH_IDS_EBCDIC, TSH_LENGTH, TSHM_DECL, TSHM_LENGTH,
    XQH_PREFIX_DECL, XQH_PREFIX_LENGTH,
)

__all__ = [
    "build_tsh", "encode_segments", "encode_put", "encode_put_reply", "encode_get_reply",
    "encode_message_data", "encode_async_message", "encode_put1", "default_pmo", "default_gmo", "default_od",
    "api_header",
    "ID_DECL", "ID_LENGTH", "UID_DECL", "UID_LENGTH", "CONN_DECL", "CONN_LENGTH", "FCNO_DECL", "FCNO_LENGTH",
    "MQOD_DECL", "FOPA_DECL",
    "OPEN_DECL", "CLOSE_DECL", "INQ_DECL", "INQ_REPLY_DECL", "OPTIONS",
    "encode_initial_data", "encode_userid_data", "encode_fcno", "encode_conn", "encode_conn_reply", "encode_disc",
    "encode_disc_reply", "encode_open", "encode_open_reply", "encode_close", "encode_close_reply",
    "encode_get", "encode_get_failed", "encode_inq", "encode_inq_reply", "encode_heartbeat",
    "encode_api_unit",
]

MQPUT, MQPUT1, MQPUT_REPLY, MQGET_REPLY = (SEGMENT_TYPE_VALUES[n] for n in (
    "MQPUT", "MQPUT1", "MQPUT_REPLY", "MQGET_REPLY"))
ASYNC_MESSAGE, MESSAGE_DATA = SEGMENT_TYPE_VALUES["ASYNC_MESSAGE"], SEGMENT_TYPE_VALUES["MESSAGE_DATA"]


# ----------------------------------------------------------------------
# Segments and the message-bearing units
# ----------------------------------------------------------------------
def _order_arg(byte_order) -> str:
    if byte_order in (BIG, BYTE_ORDER_BIG, ENCODING_BIG):
        return BIG
    if byte_order in (LITTLE, BYTE_ORDER_LITTLE, ENCODING_LITTLE):
        return LITTLE
    raise EncodeError("TSH", "ByteOrder", "unknown byte order %r" % (byte_order,))


def build_tsh(segment_type: int | str, length: int, *, structid: str = "TSHM", conversation_id: int = 1,
              request_id: int = 0, byte_order="little", ctl_flags1: int = TCF_FIRST | TCF_LAST,
              ctl_flags2: int = 0, luw_id: bytes = b"\x00" * 8, encoding: int | None = None,
              ccsid: int = 819, reserved: int = 0, ebcdic: bool = False) -> bytes:
    """The header of one segment whose MQSegmLen is ``length``."""
    order = _order_arg(byte_order)
    if isinstance(segment_type, str):
        if segment_type not in SEGMENT_TYPE_VALUES:
            raise EncodeError("TSH", "SegmType", "unknown segment type %r" % segment_type)
        segment_type = SEGMENT_TYPE_VALUES[segment_type]
    ids = {v: k for k, v in (TSH_IDS_EBCDIC if ebcdic else TSH_IDS).items()}
    if structid not in ids:
        raise EncodeError("TSH", "StructID", "structid must be TSH, TSHM or TSHC, not %r" % structid)
    value = {"StructID": ids[structid], "MQSegmLen": length,
             "ByteOrder": BYTE_ORDER_LITTLE if order == LITTLE else BYTE_ORDER_BIG,
             "SegmType": segment_type, "CtlFlag1": ctl_flags1, "CtlFlag2": ctl_flags2,
             "LUWIdent": bytes(luw_id), "Encoding": (ENCODING_LITTLE if order == LITTLE else ENCODING_BIG)
             if encoding is None else encoding, "CCSID": ccsid, "Reserved": reserved}
    if structid == "TSHM":
        value.update(ConversID=conversation_id, RequestID=request_id)
        return build(TSHM_DECL[order], value, "TSHM")
    return build(TSH_DECL[order], value, structid)


def encode_segments(segment_type: int | str, body: bytes, *, max_segment_length: int | None = None,
                    split_points: Sequence[int] | None = None, continuation_prefix=None,
                    ctl_flags1: int = 0, **tsh: Any) -> bytes:
    """Wrap ``body`` (everything after the first TSH) in one or more
    segments.  ``split_points`` are offsets into ``body`` where a new
    segment starts; or ``max_segment_length`` bounds every segment.  Later
    segments start with ``continuation_prefix(i)`` bytes (ASYNC_MESSAGE's
    short header) when given.  FIRST/LAST flags are set as MQ sets them;
    ``ctl_flags1`` adds other flags to every segment."""
    structid = tsh.get("structid", "TSHM")
    hlen = TSHM_LENGTH if structid == "TSHM" else TSH_LENGTH
    body = bytes(body)
    if split_points is None:
        points: list[int] = []
        if max_segment_length is not None:
            room = max_segment_length - hlen
            if room <= 0:
                raise EncodeError("TSH", "MQSegmLen", "max_segment_length %d leaves no room for data"
                                  % max_segment_length)
            p = room
            while p < len(body):
                points.append(p)
                p += room
    else:
        points = sorted(set(int(p) for p in split_points if 0 < int(p) < len(body)))
    bounds = [0] + points + [len(body)]
    out = bytearray()
    nseg = len(bounds) - 1
    for i in range(nseg):
        chunk = body[bounds[i]:bounds[i + 1]]
        prefix = continuation_prefix(i) if (i and continuation_prefix is not None) else b""
        flags = ctl_flags1 & ~(TCF_FIRST | TCF_LAST)
        if i == 0:
            flags |= TCF_FIRST
        if i == nseg - 1:
            flags |= TCF_LAST
        length = hlen + len(prefix) + len(chunk)
        out += build_tsh(segment_type, length, ctl_flags1=flags, **tsh)
        out += prefix + chunk
    return bytes(out)


def _split_message(message, order: str | None) -> tuple[bytes, bytes, str]:
    raw = message.encode() if hasattr(message, "encode") and not isinstance(message, (bytes, bytearray)) \
        else bytes(message)
    if raw[:4] not in MD_IDS:
        raise EncodeError("MQMD", "StrucId", "the message does not start with an MQMD")
    if len(raw) < 8:
        raise EncodeError("MQMD", "Version", "the message is shorter than an MQMD")
    big, little = _struct.unpack_from(">i", raw, 4)[0], _struct.unpack_from("<i", raw, 4)[0]
    md_order = BIG if big in MQMD_LENGTHS else LITTLE if little in MQMD_LENGTHS else None
    if md_order is None:
        raise EncodeError("MQMD", "Version", "Version reads neither 1 nor 2")
    if order is not None and order != md_order:
        raise EncodeError("TSH", "ByteOrder", "the MQMD is %s-endian but byte_order is %s" % (md_order, order))
    md_len = MQMD_LENGTHS[big if md_order == BIG else little]
    if len(raw) < md_len:
        raise EncodeError("MQMD", "", "the message is shorter than its MQMD (%d bytes)" % md_len)
    return raw[:md_len], raw[md_len:], md_order


def _blank(n: int) -> bytes:
    return b" " * n


def default_pmo(byte_order="little", *, version: int = 2, **fields: Any) -> bytes:
    """An MQPMO (IBM's MQPMO_DEFAULT values, ``fields`` override)."""
    order = _order_arg(byte_order)
    value = {"StrucId": b"PMO ", "Version": version, "Options": 0, "Timeout": -1, "Context": 0,
             "KnownDestCount": 0, "UnknownDestCount": 0, "InvalidDestCount": 0,
             "ResolvedQName": _blank(48), "ResolvedQMgrName": _blank(48),
             "RecsPresent": 0, "PutMsgRecFields": 0, "PutMsgRecOffset": 0, "ResponseRecOffset": 0,
             "PutMsgRecPtr": 0, "ResponseRecPtr": 0,
             "OriginalMsgHandle": 0, "NewMsgHandle": 0, "Action": 1, "PubLevel": 9}
    value.update(fields)
    if version not in MQPMO_LENGTHS:
        raise EncodeError("MQPMO", "Version", "version %d is not 1, 2 or 3" % version)
    return build(MQPMO_DECL[order], value, "MQPMO")


def default_gmo(byte_order="little", *, version: int = 2, **fields: Any) -> bytes:
    """An MQGMO (IBM's MQGMO_DEFAULT values, ``fields`` override)."""
    order = _order_arg(byte_order)
    value = {"StrucId": b"GMO ", "Version": version, "Options": 0, "WaitInterval": 0, "Signal1": 0,
             "Signal2": 0, "ResolvedQName": _blank(48), "MatchOptions": 3, "GroupStatus": b" ",
             "SegmentStatus": b" ", "Segmentation": b" ", "Reserved1": b" ", "MsgToken": b"\x00" * 16,
             "ReturnedLength": -1, "Reserved2": 0, "MsgHandle": 0}
    value.update(fields)
    if version not in MQGMO_LENGTHS:
        raise EncodeError("MQGMO", "Version", "version %d is not 1 to 4" % version)
    return build(MQGMO_DECL[order], value, "MQGMO")


def api_header(order: str, reply_length: int, comp_code: int, reason: int, hobj: int) -> bytes:
    """The 16-byte API header (ReplyLength big-endian, the rest in ``order``)."""
    return build(API_HEADER_DECL[order], {"ReplyLength": reply_length, "CompCode": comp_code,
                                          "Reason": reason, "Hobj": hobj}, "API")


def _encode_api_message(seg_type: int, message, options: bytes | Callable[[Any], bytes], *,
                        include_data: bool = True, byte_order=None, hobj: int = 1, comp_code: int = 0,
                        reason: int = 0, reply_length: int | None = None, data_length: int | None = None,
                        object_descriptor: bytes = b"", max_segment_length: int | None = None,
                        split_points: Sequence[int] | None = None, **tsh: Any) -> bytes:
    order = _order_arg(byte_order) if byte_order is not None else None
    md, data, order = _split_message(message, order)
    opts = options(order) if callable(options) else options
    dl = len(data) if data_length is None else data_length
    rest = object_descriptor + md + opts + _struct.pack(">i" if order == BIG else "<i", dl) + \
        (data if include_data else b"")
    hlen = TSHM_LENGTH if tsh.get("structid", "TSHM") == "TSHM" else TSH_LENGTH
    if reply_length is None:
        reply_length = hlen + API_HEADER_LENGTH + len(rest)
    body = api_header(order, reply_length, comp_code, reason, hobj) + rest
    return encode_segments(seg_type, body, max_segment_length=max_segment_length, split_points=split_points,
                           byte_order=order, **tsh)


def encode_put(message, *, pmo: bytes | None = None, **kw: Any) -> bytes:
    """MQPUT segment(s) carrying ``message`` (MQMD + data bytes, or an
    MQMessage).  Keywords: ``byte_order`` (default: the MQMD's),
    ``hobj``, ``comp_code``, ``reason``, ``reply_length``, ``data_length``,
    ``max_segment_length`` / ``split_points``, and the TSH fields of
    :func:`build_tsh` (``structid``, ``conversation_id``, ``request_id``,
    ``encoding``, ``ccsid``...)."""
    return _encode_api_message(MQPUT, message, pmo if pmo is not None else (lambda o: default_pmo(o)), **kw)


def default_od(byte_order="little", *, object_name: str = "", object_qmgr_name: str = "", ccsid: int = 819,
               object_type: int = 1, dynamic_q_name: str = "AMQ.*", alternate_user_id: str = "") -> bytes:
    """An MQOD version 1 (168 bytes) naming a queue (MQOT_Q = 1)."""
    order = _order_arg(byte_order)

    def chars(text: str, n: int, name: str) -> bytes:
        return encode_text(text, ccsid, n, structure="MQOD", field=name)

    return build(MQOD_PREFIX_DECL[order], {
        "StrucId": b"OD  ", "Version": 1, "ObjectType": object_type,
        "ObjectName": chars(object_name, 48, "ObjectName"),
        "ObjectQMgrName": chars(object_qmgr_name, 48, "ObjectQMgrName"),
        "DynamicQName": chars(dynamic_q_name, 48, "DynamicQName"),
        "AlternateUserId": chars(alternate_user_id, 12, "AlternateUserId")}, "MQOD")


def encode_put1(message, *, od: bytes | None = None, object_name: str = "", object_qmgr_name: str = "",
                pmo: bytes | None = None, **kw: Any) -> bytes:
    """MQPUT1 segment(s): API header, MQOD (``od`` bytes, or a version-1
    MQOD naming ``object_name``), MQMD, MQPMO, DataLength, data."""
    order = _order_arg(kw["byte_order"]) if kw.get("byte_order") is not None else _split_message(message, None)[2]
    if od is None:
        od = default_od(order, object_name=object_name, object_qmgr_name=object_qmgr_name)
    return _encode_api_message(MQPUT1, message, pmo if pmo is not None else (lambda o: default_pmo(o)),
                               object_descriptor=bytes(od), **kw)


def encode_put_reply(message, *, pmo: bytes | None = None, include_data: bool = False, **kw: Any) -> bytes:
    """MQPUT_REPLY segment(s): the MQMD as the queue manager completed it,
    the MQPMO and DataLength; like IBM MQ, the data itself is not sent back
    unless ``include_data``."""
    return _encode_api_message(MQPUT_REPLY, message, pmo if pmo is not None else (lambda o: default_pmo(o)),
                               include_data=include_data, **kw)


def encode_get_reply(message, *, gmo: bytes | None = None, **kw: Any) -> bytes:
    """MQGET_REPLY segment(s): MQMD, MQGMO, DataLength and the data."""
    return _encode_api_message(MQGET_REPLY, message, gmo if gmo is not None else (lambda o: default_gmo(o)),
                               **kw)


def encode_message_data(message, *, remote_q_name: str = "", remote_qmgr_name: str = "",
                        qname_ccsid: int = 819, byte_order=None, msh: dict | bool = True,
                        max_segment_length: int | None = None, split_points: Sequence[int] | None = None,
                        **tsh: Any) -> bytes:
    """Channel MESSAGE_DATA segment(s): [MSH,] MQXQH (StrucId, Version 1,
    RemoteQName, RemoteQMgrName, then the message's MQMD, which must be
    version 1 as MQXQH.MsgDesc is an MQMD1) and the data.  ``msh``: True
    (default) puts a message segment header first (SeqNum 1, DataLength and
    MsgLength = MQXQH + MQMD + data), a dict overrides its fields, False
    omits it.  Default header: TSH (not TSHM), as channels send."""
    order = _order_arg(byte_order) if byte_order is not None else None
    md, data, order = _split_message(message, order)
    if len(md) != MQMD_LENGTHS[1]:
        raise EncodeError("MQXQH", "MsgDesc", "the MQMD embedded in an MQXQH is an MQMD version 1")
    xqh = build(XQH_PREFIX_DECL[order], {
        "StrucId": b"XQH ", "Version": 1,
        "RemoteQName": encode_text(remote_q_name, qname_ccsid, 48, structure="MQXQH", field="RemoteQName"),
        "RemoteQMgrName": encode_text(remote_qmgr_name, qname_ccsid, 48, structure="MQXQH",
                                      field="RemoteQMgrName")}, "MQXQH")
    body = xqh + md + data
    if msh is not False and msh is not None:
        msh = {} if msh is True else dict(msh)
        total = XQH_PREFIX_LENGTH + len(md) + len(data)
        body = build(MSH_DECL[order], {"StructID": b"MSH ", "SeqNum": msh.get("SeqNum", 1),
                                       "DataLength": msh.get("DataLength", total),
                                       "Unknown1": msh.get("Unknown1", 0),
                                       "MsgLength": msh.get("MsgLength", total)}, "MSH") + body
    tsh.setdefault("structid", "TSH")
    return encode_segments(MESSAGE_DATA, body, max_segment_length=max_segment_length, split_points=split_points,
                           byte_order=order, **tsh)


def encode_async_message(message, *, hobj: int = 1, msg_index: int = 0, glb_msg_idx: int = 1,
                         sele_index: int = 0, reason: int = 0, status: int = 0, msg_token: bytes = b"\x00" * 16,
                         resolved_q_name: str = "", qname_ccsid: int = 819, version: int = 1, byte_order=None,
                         max_segment_length: int | None = None, split_points: Sequence[int] | None = None,
                         **tsh: Any) -> bytes:
    """ASYNC_MESSAGE segment(s) (a message delivered to an MQCB consumer):
    the long async header (SegmIndex 0; ResolQName padded so the header is a
    multiple of 4 bytes), the MQMD and the data; every later segment starts
    with the 24-byte short header (SegmIndex 1, 2...).  TotMsgLen and
    ActMsgLen are the MQMD + data length; SegLength is each segment's
    MQSegmLen."""
    order = _order_arg(byte_order) if byte_order is not None else None
    md, data, order = _split_message(message, order)
    qname = encode_text(resolved_q_name, qname_ccsid, structure="ASYNC_MESSAGE", field="ResolQName")
    if len(qname) > 255:
        raise EncodeError("ASYNC_MESSAGE", "ResolQName", "longer than 255 bytes")
    pad = (4 - (3 + len(qname)) % 4) % 4
    msg_len = len(md) + len(data)
    hlen = TSHM_LENGTH if tsh.get("structid", "TSHM") == "TSHM" else TSH_LENGTH
    fmt = ">" if order == BIG else "<"

    def short(seg_len: int, index: int) -> bytes:
        return _struct.pack(fmt + "iiiiiHH", version, hobj, msg_index, glb_msg_idx, seg_len, index, sele_index)

    rest = md + data
    body_len = ASYNC_HEADER_FIXED_LENGTH + len(qname) + pad + len(rest)
    # the segment lengths are needed inside the headers: lay the segments out first
    if split_points is None:
        points: list[int] = []
        if max_segment_length is not None:
            room = max_segment_length - hlen
            if room <= ASYNC_HEADER_SHORT_LENGTH:
                raise EncodeError("TSH", "MQSegmLen", "max_segment_length %d leaves no room for data"
                                  % max_segment_length)
            p = room
            while p < body_len:
                points.append(p)
                p += room - ASYNC_HEADER_SHORT_LENGTH
    else:
        points = sorted(set(int(p) for p in split_points if 0 < int(p) < body_len))
    bounds = [0] + points + [body_len]
    first_len = hlen + bounds[1]
    head = short(first_len, 0) + _struct.pack(fmt + "iii", reason, msg_len, msg_len) + bytes(msg_token) + \
        _struct.pack(fmt + "H", status) + bytes([len(qname)]) + qname + b" " * pad
    body = head + rest
    lengths = [hlen + (b - a) + (ASYNC_HEADER_SHORT_LENGTH if i else 0)
               for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    return encode_segments(ASYNC_MESSAGE, body, split_points=points, byte_order=order,
                           continuation_prefix=lambda i: short(lengths[i], i), **tsh)


# ----------------------------------------------------------------------
# The units of a client conversation
# ----------------------------------------------------------------------
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
