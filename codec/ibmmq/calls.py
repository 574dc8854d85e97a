"""IBM MQ protocol units as call records: one dict of ``mq_calls`` columns
per unit (a segment, or segments joined FIRST..LAST), whatever its type.

:func:`decode_unit` reads a unit's bytes (the first segment's TSH, then the
unit's body; at most :data:`UNIT_PREFIX` bytes are needed, ``length`` is the
unit's full joined length) and returns the columns of :data:`CALL_COLUMNS`:
the TSH fields, the API header of API calls and replies, and per segment type
what Wireshark's MQ dissector (``epan/dissectors/packet-mq.c``) decodes for
it.  The structures are declared below with Wireshark's (and IBM's) field
names; offsets are from the structure's start.  A structure that is present
but cut short raises :class:`mqcodec.DecodeError` (structure, field, offset
in the unit); the caller turns it into the row's error columns.

Nothing here does I/O or keeps state between units: pairing requests with
replies and following object handles is :mod:`mqcodec.ibmmq.conversation`.

Passwords (UID ``Password``, CAUT password) are never read into a column.
"""
from __future__ import annotations

import struct as _struct
from typing import Any

import construct as cs

from ..ccsid import decode_text, is_known
from ..errors import DecodeError
from ..layout import parse_at
from .call_columns import CALL_COLUMNS   # the columns as data, re-exported
from .tsh import (
    API_HEADER_DECL, API_HEADER_LENGTH, ASYNC_HEADER_DECL, ASYNC_HEADER_FIXED_LENGTH,
    ASYNC_HEADER_SHORT_LENGTH, MSH_LENGTH, XQH_PREFIX_LENGTH,
)
# the values (segment types and their classes, value names, eye-catchers, lengths): .wire, re-exported
from .wire import (  # noqa: F401
    ASYNC_MESSAGE, BIG, CAUT_IDS, CONAUTH_INFO, GMO_IDS, ID_IDS, INITIAL_DATA, LITTLE, MD_IDS, MESSAGE_DATA,
    MQCLOSE, MQCONN, MQGET, MQGMO_LENGTHS, MQINQ, MQMD_LENGTHS, MQOD_LENGTHS, MQOPEN, MQPMO_LENGTHS, MQPUT,
    MQPUT1, MQSET, MSH_IDS, NOTIFICATION, NOTIFICATION_CODES, OD_IDS, PING_DATA, PMO_IDS, REPLY_BIT,
    REQUEST_MSGS, RESET_DATA, SEGMENT_TYPES, SOCKET_ACTION, SOCKET_ACTION_TYPES, SPI, SPI_VERBS, STATUS_CODES,
    STATUS_DATA, TSH_IDS, TSH_IDS_EBCDIC, TSH_LENGTH, TSHM_LENGTH, UID_IDS, USERID_DATA, XQH_IDS, is_api,
    is_reply, is_request, name_text, order_of, reply_type_of, request_type_of, segment_type_name,
)

from .builders import (  # noqa: E402  (one declaration each, shared with the simulator's encoders)
    CONN_DECL, ID_DECL, ID_LENGTH, INQ_DECL, INQ_REPLY_DECL, MQOD_DECL, UID_DECL,
    UID_LENGTH as UID_FULL_LENGTH,
)

__all__ = [
    "decode_unit", "CALL_COLUMNS", "UNIT_PREFIX", "SPI_VERBS", "STATUS_CODES", "NOTIFICATION_CODES",
    "SOCKET_ACTION_TYPES", "is_api", "is_request", "is_reply", "reply_type_of", "request_type_of",
    "CAUT_DECL", "SPI_DECL", "STATUS_DECL",
    "SOCKET_DECL", "NOTIF_DECL", "MSGREQ_DECL", "XA_DECL", "PING_DECL", "RESET_DECL",
]

#: Every structure this module decodes lies in a unit's first 64 KiB (the
#: largest, an MQINQ with its selectors, is bounded by that too): both
#: capture engines hand at most this many bytes of a unit to the decoder.
UNIT_PREFIX = 64 * 1024

_I32 = {BIG: cs.Int32sb, LITTLE: cs.Int32sl}
_U32 = {BIG: cs.Int32ub, LITTLE: cs.Int32ul}
_I16 = {BIG: cs.Int16sb, LITTLE: cs.Int16sl}
_U16 = {BIG: cs.Int16ub, LITTLE: cs.Int16ul}


def _both(fn):
    return {BIG: fn(BIG), LITTLE: fn(LITTLE)}


# --------------------------------------------------------------------------
# Structures (packet-mq.c; names as Wireshark's hf names / IBM's)
# --------------------------------------------------------------------------
#: ID, INITIAL_DATA (channel negotiation): builders.ID_DECL (240 bytes).
#: FAP levels below 4 send its first 44 bytes only (up to ChannelName);
#: CapFlag2 .. HBInterval follow from FAP 4 on (104 bytes), the rest (up to
#: ProdId, 160 bytes) from later levels: fields beyond the bytes present are
#: not read (packet-mq.c decodes by the same lengths).
ID_SHORT_LENGTH = 44
ID_V4_LENGTH = 104
ID_EXT_LENGTH = 160

#: UID, USERID_DATA: builders.UID_DECL (132 bytes: UserId, Password,
#: LongUserId, SecurityId); 28 bytes (UserId and Password) at low FAP levels.
UID_LENGTH = 28
UID_LONG_LENGTH = 92                 # LongUserId (64 bytes) after the short form

#: CAUT, CONAUTH_INFO: then UsrLength bytes of user id and PwdLength of password.
CAUT_DECL = _both(lambda o: cs.Struct(
    "StructID" / cs.Bytes(4),
    "AuthType" / _U32[o],
    "UsrMaxLen" / _U32[o],
    "PwdMaxLen" / _U32[o],
    "UsrLength" / _U32[o],
    "PwdLength" / _U32[o],
))
CAUT_LENGTH = 24

#: MQCONN / MQCONN_REPLY (after the API header): builders.CONN_DECL, the
#: simulator's declaration (QMgrName, ApplName, ApplType, AccountingToken,
#: Options, XOptions, then the FCNO); Wireshark also decodes the 112-byte
#: form without Options and XOptions.
CONN_SHORT_LENGTH = 112
CONN_LENGTH = 120

#: MQINQ / MQINQ_REPLY / MQSET: builders.INQ_DECL / INQ_REPLY_DECL (no
#: StructID; SelectorCount, IntAttrCount, CharAttrLength, the selectors,
#: then in MQINQ_REPLY and MQSET the integers and the characters).
INQ_LENGTH = 12

#: SPI / SPI_REPLY: the verb header, then SPxU and SPxI/SPxO structures.
SPI_DECL = _both(lambda o: cs.Struct(
    "Verb" / _U32[o],
    "Version" / _U32[o],
    "MaxReplySize" / _U32[o],
))
SPI_LENGTH = 12

#: STATUS_DATA: Length, Code, and Value when Length is 12 or more.
STATUS_DECL = _both(lambda o: cs.Struct(
    "Length" / _U32[o],
    "Code" / _U32[o],
))
STATUS_LENGTH = 8

#: PING_DATA: Length, then the buffer echoed back.
PING_DECL = _both(lambda o: cs.Struct(
    "Length" / _U32[o],
))
#: RESET_DATA
RESET_DECL = _both(lambda o: cs.Struct(
    "Length" / _U32[o],
    "SeqNum" / _U32[o],
))
RESET_LENGTH = 8

#: SOCKET_ACTION
SOCKET_DECL = _both(lambda o: cs.Struct(
    "ConversId" / _U32[o],
    "RequestId" / _U32[o],
    "Type" / _U32[o],
    "Parm1" / _U32[o],
    "Parm2" / _U32[o],
))
SOCKET_LENGTH = 20

#: NOTIFICATION
NOTIF_DECL = _both(lambda o: cs.Struct(
    "Version" / _U32[o],
    "Handle" / _I32[o],
    "Code" / _U32[o],
    "Value" / _U32[o],
))
NOTIF_LENGTH = 16

#: REQUEST_MSGS (MSGREQ)
MSGREQ_DECL = _both(lambda o: cs.Struct(
    "Version" / _U32[o],
    "Handle" / _I32[o],
    "RecvBytes" / _U32[o],
    "RqstBytes" / _U32[o],
    "MaxMsgLen" / _U32[o],
    "GetMsgOptions" / _U32[o],
    "WaitIntrv" / _I32[o],
    "QueStatus" / _U32[o],
    "RqstFlags" / _U32[o],
))
MSGREQ_LENGTH = 36

#: XA_* (no API header): Length is big-endian as the API ReplyLength.
XA_DECL = _both(lambda o: cs.Struct(
    "Length" / cs.Int32ub,
    "ReturnValue" / _I32[o],
    "TMFlags" / _U32[o],
    "RMId" / _U32[o],
))
XA_LENGTH = 16

_IDS = dict(TSH_IDS)
_IDS.update(TSH_IDS_EBCDIC)


_API_BE = _struct.Struct(">Iiii")
_API_LE_TAIL = _struct.Struct("<iii")


def _api_header(unit, pos: int, order: str) -> tuple:
    """API_HEADER_DECL (ReplyLength always big-endian) read with struct:
    every API unit passes here."""
    if order == BIG:
        return _API_BE.unpack_from(unit, pos)
    return (_struct.unpack_from(">I", unit, pos)[0],) + _API_LE_TAIL.unpack_from(unit, pos + 4)


def _need(unit, pos: int, n: int, structure: str, fld: str = "") -> None:
    if pos + n > len(unit):
        raise DecodeError(structure, fld, pos, "truncated: %d bytes needed, %d present"
                          % (n, max(0, len(unit) - pos)))


def _i32(unit, pos: int, order: str) -> int:
    return _struct.unpack_from(">i" if order == BIG else "<i", unit, pos)[0]


def decode_unit(unit: bytes, length: int | None = None) -> dict[str, Any]:
    """The ``mq_calls`` columns of one unit (see the module docstring).
    ``unit``: the unit's bytes from its first TSH (at least the structures
    decoded: :data:`UNIT_PREFIX` bytes suffice), ``length``: its full length
    (default ``len(unit)``).  Never raises: a structure that does not
    decode sets ``error``, ``error_structure``, ``error_field`` and
    ``error_offset`` (offset in the unit) next to the columns decoded before
    it."""
    unit = bytes(unit)
    if length is None:
        length = len(unit)
    ident = unit[:4]
    name = _IDS.get(ident)
    if name is None:
        return _error({}, DecodeError("TSH", "StructID", 0, "%r is not TSH, TSHM or TSHC" % ident))
    hlen = TSHM_LENGTH if name == "TSHM" else TSH_LENGTH
    if len(unit) < hlen:
        return _error({}, DecodeError(name, "", 0, "truncated: %d bytes needed, %d present" % (hlen, len(unit))))
    ebcdic = ident in TSH_IDS_EBCDIC
    bo = unit[hlen - 20]
    order = order_of(bo)
    fmt = ">" if order == BIG else "<"
    t = unit[hlen - 19]
    out: dict[str, Any] = {
        "structid": name, "segment_type": t, "segment_type_name": segment_type_name(t),
        "ctl_flags1": unit[hlen - 18], "ctl_flags2": unit[hlen - 17], "byte_order": bo,
        "encoding": _struct.unpack_from(fmt + "i", unit, hlen - 8)[0],
        "ccsid": _struct.unpack_from(fmt + "h", unit, hlen - 4)[0],
    }
    if name == "TSHM":
        out["conversation_id"], out["request_id"] = _struct.unpack_from(">II", unit, 8)
    ccsid = out["ccsid"] if out["ccsid"] > 0 and is_known(out["ccsid"]) else (500 if ebcdic else 819)
    pos = hlen
    try:
        if is_api(t):
            _need(unit, pos, API_HEADER_LENGTH, "API", "ReplyLength")
            (out["reply_length"], out["completion_code"], out["reason_code"],
             out["hobj"]) = _api_header(unit, pos, order)
            pos += API_HEADER_LENGTH
            _decode_api(unit, pos, t, order, ccsid, out)
        elif 0xA1 <= t <= 0xBA:
            if len(unit) - pos >= XA_LENGTH:
                xa = parse_at(XA_DECL[order], unit, pos, "XA")
                out.update(xa_return_value=xa.ReturnValue, xa_tm_flags=xa.TMFlags, xa_rmid=xa.RMId)
        else:
            _decode_other(unit, pos, t, order, ccsid, out)
    except DecodeError as exc:
        if length > len(unit) and exc.reason.startswith("truncated"):
            # beyond the prefix both engines keep: not decoded, not an error
            return out
        return _error(out, exc)
    except (_struct.error, IndexError, ValueError, OverflowError) as exc:  # defensive: rows, never raises
        return _error(out, DecodeError(segment_type_name(t), "", pos, "%s: %s" % (exc.__class__.__name__, exc)))
    return out


def _error(out: dict, exc: DecodeError) -> dict:
    """``out`` (the columns decoded so far) with the error columns set."""
    out.update(error=exc.reason, error_structure=exc.structure, error_field=exc.field, error_offset=exc.offset)
    return out


def _od(unit, pos: int, order: str, ccsid: int, out: dict) -> int:
    """An MQOD at ``pos``: its columns; returns its size (object and
    response records included)."""
    _need(unit, pos, 8, "MQOD", "Version")
    version = _i32(unit, pos + 4, order)
    if version not in MQOD_LENGTHS:
        raise DecodeError("MQOD", "Version", pos + 4, "version %d is not one of 1, 2, 3, 4" % version)
    size = MQOD_LENGTHS[version]
    _need(unit, pos, size, "MQOD")
    od = parse_at(MQOD_DECL[order], unit, pos, "MQOD")
    out["od_object_type"] = od.ObjectType
    out["od_object_name"] = name_text(od.ObjectName, ccsid)
    out["od_object_q_mgr_name"] = name_text(od.ObjectQMgrName, ccsid)
    out["od_dynamic_q_name"] = name_text(od.DynamicQName, ccsid)
    if version >= 3:
        out["od_resolved_q_name"] = name_text(od.ResolvedQName, ccsid)
        out["od_resolved_q_mgr_name"] = name_text(od.ResolvedQMgrName, ccsid)
    if version >= 2:
        recs = od.RecsPresent
        if recs > 0:
            per = (96 if od.ObjectRecOffset else 0) + (8 if od.ResponseRecOffset else 0)
            if recs * per > len(unit) - pos - size:
                raise DecodeError("MQOD", "RecsPresent", pos + 168, "%d records need %d bytes, %d present"
                                  % (recs, recs * per, len(unit) - pos - size))
            size += recs * per
    return size


def _md(unit, pos: int, order: str) -> int:
    _need(unit, pos, 8, "MQMD", "Version")
    version = _i32(unit, pos + 4, order)
    if version not in MQMD_LENGTHS:
        raise DecodeError("MQMD", "Version", pos + 4, "version %d is not 1 or 2" % version)
    _need(unit, pos, MQMD_LENGTHS[version], "MQMD")
    return MQMD_LENGTHS[version]


def _options(unit, pos: int, t: int, order: str, ccsid: int, out: dict) -> None:
    """MQMD, then MQPMO/MQGMO and DataLength (MQPUT, MQPUT1, MQGET and replies)."""
    if unit[pos:pos + 4] not in MD_IDS:
        return
    pos += _md(unit, pos, order)
    base = t & ~REPLY_BIT
    if base in (MQPUT, MQPUT1) and unit[pos:pos + 4] in PMO_IDS:
        _need(unit, pos, 8, "MQPMO", "Version")
        version = _i32(unit, pos + 4, order)
        if version not in MQPMO_LENGTHS:
            raise DecodeError("MQPMO", "Version", pos + 4, "version %d is not 1, 2 or 3" % version)
        _need(unit, pos, MQPMO_LENGTHS[version], "MQPMO")
        out["pmo_options"] = _i32(unit, pos + 8, order) & 0xFFFFFFFF
        out["resolved_q_name"] = name_text(unit[pos + 32:pos + 80], ccsid)
        out["resolved_q_mgr_name"] = name_text(unit[pos + 80:pos + 128], ccsid)
        size = MQPMO_LENGTHS[version]
        if version >= 2:
            recs = _i32(unit, pos + 128, order)
            if recs > 0:
                fl = _i32(unit, pos + 132, order)
                pmr = ((24 if fl & 1 else 0) + (24 if fl & 2 else 0) + (24 if fl & 4 else 0)
                       + (4 if fl & 8 else 0) + (32 if fl & 16 else 0))
                per = (pmr if _i32(unit, pos + 136, order) else 0) + (8 if _i32(unit, pos + 140, order) else 0)
                size += recs * per
        pos += size
    elif base == MQGET and unit[pos:pos + 4] in GMO_IDS:
        _need(unit, pos, 8, "MQGMO", "Version")
        version = _i32(unit, pos + 4, order)
        if version not in MQGMO_LENGTHS:
            raise DecodeError("MQGMO", "Version", pos + 4, "version %d is not 1 to 4" % version)
        _need(unit, pos, MQGMO_LENGTHS[version], "MQGMO")
        out["gmo_options"] = _i32(unit, pos + 8, order) & 0xFFFFFFFF
        out["gmo_wait_interval"] = _i32(unit, pos + 12, order)
        out["resolved_q_name"] = name_text(unit[pos + 24:pos + 72], ccsid)
        pos += MQGMO_LENGTHS[version]
    else:
        return
    if len(unit) - pos >= 4:
        out["data_length"] = _i32(unit, pos, order)


def _decode_api(unit, pos: int, t: int, order: str, ccsid: int, out: dict) -> None:
    base = t & ~REPLY_BIT
    if base == MQCONN:
        if len(unit) - pos >= CONN_SHORT_LENGTH:
            full = len(unit) - pos >= CONN_LENGTH
            c = parse_at(CONN_DECL[order], unit[:pos + CONN_SHORT_LENGTH] + b"\x00" * 8 if not full else unit,
                         pos, "MQCONN")
            out.update(conn_q_mgr_name=name_text(c.QMgrName, ccsid), conn_appl_name=name_text(c.ApplName, ccsid),
                       conn_appl_type=c.ApplType)
            if full:
                out.update(conn_options=c.Options & 0xFFFFFFFF, conn_x_options=c.XOptions & 0xFFFFFFFF)
    elif base in (MQOPEN, MQPUT1):
        if unit[pos:pos + 4] in OD_IDS:
            pos += _od(unit, pos, order, ccsid, out)
            if base == MQOPEN:
                if len(unit) - pos >= 4:
                    out["open_options"] = _i32(unit, pos, order) & 0xFFFFFFFF
            else:
                _options(unit, pos, t, order, ccsid, out)
    elif base == MQCLOSE:
        if len(unit) - pos >= 4:
            out["close_options"] = _i32(unit, pos, order) & 0xFFFFFFFF
    elif base in (MQPUT, MQGET):
        _options(unit, pos, t, order, ccsid, out)
    elif base in (MQINQ, MQSET):
        if len(unit) - pos >= INQ_LENGTH:
            nsel, nint, nchar = _struct.unpack_from((">" if order == BIG else "<") + "iii", unit, pos)
            for i, (fld, n) in enumerate((("SelectorCount", nsel), ("IntAttrCount", nint),
                                          ("CharAttrLength", nchar))):
                if n < 0:
                    raise DecodeError("MQINQ", fld, pos + 4 * i, "negative count %d" % n)
            # the counts are checked against the bytes present before construct reads them
            _need(unit, pos + INQ_LENGTH, 4 * nsel, "MQINQ", "Selectors")
            values = t in (MQINQ | REPLY_BIT, MQSET) and len(unit) - pos - INQ_LENGTH >= 4 * (nsel + nint) + nchar
            q = parse_at((INQ_REPLY_DECL if values else INQ_DECL)[order], unit, pos, "MQINQ")
            out["inq_selectors"] = list(q.Selectors)
            if values:
                out["inq_int_values"] = list(q.IntAttrs)
                if nchar:
                    out["inq_char_values"] = decode_text(q.CharAttrs, ccsid, trim=False)
    elif base == SPI:
        if len(unit) - pos >= SPI_LENGTH:
            s = parse_at(SPI_DECL[order], unit, pos, "SPI")
            out.update(spi_verb=s.Verb, spi_verb_name=SPI_VERBS.get(s.Verb), spi_version=s.Version)
            # SPI OPEN: SPOU, SPOI/SPOO, LPOO, then the MQOD (in the reply: the
            # object opened, whose handle is the API header's Hobj)
            p = pos + SPI_LENGTH
            end = min(len(unit), pos + 2048)
            while p + 8 <= end:
                if unit[p:p + 4] in OD_IDS and _i32(unit, p + 4, order) in MQOD_LENGTHS:
                    _od(unit, p, order, ccsid, out)
                    break
                p += 4


def _decode_other(unit, pos: int, t: int, order: str, ccsid: int, out: dict) -> None:
    rest = len(unit) - pos
    if t == INITIAL_DATA:
        if rest >= 5 and unit[pos:pos + 4] in ID_IDS:
            _need(unit, pos, ID_SHORT_LENGTH, "ID")
            present = unit[pos:pos + ID_LENGTH]
            d = parse_at(ID_DECL[order], present.ljust(ID_LENGTH, b"\x00"), 0, "ID")
            out.update(id_fap_level=d.FapLevel, id_cap_flags1=d.CapFlag1, id_ini_err_flags1=d.IniErrFlg1,
                       id_max_msg_batch=d.MaxMsgBtch, id_max_tr_size=d.MaxTrSize, id_max_msg_size=d.MaxMsgSize,
                       id_seq_wrap_value=d.SeqWrapVal, id_channel_name=name_text(d.ChannelName, ccsid))
            if rest >= ID_V4_LENGTH:
                out.update(id_cap_flags2=d.CapFlag2, id_ccsid=d.CCSID, id_q_mgr_name=name_text(d.QMgrName, ccsid),
                           id_hb_interval=d.HBInterval)
            if rest >= ID_EXT_LENGTH:
                out.update(id_cap_flags3=d.CapFlag3, id_conv_by_socket=d.ConvBySkt,
                           id_prod_id=name_text(d.ProdId, ccsid))
    elif t == USERID_DATA:
        if rest >= 4 and unit[pos:pos + 4] in UID_IDS:
            _need(unit, pos, UID_LENGTH, "UID")
            d = parse_at(UID_DECL[order], unit[pos:pos + UID_FULL_LENGTH].ljust(UID_FULL_LENGTH, b"\x00"), 0, "UID")
            out["uid_user_id"] = name_text(d.UserId, ccsid)
            if rest >= UID_LONG_LENGTH:
                out["uid_long_user_id"] = name_text(d.LongUserId, ccsid)
    elif t == CONAUTH_INFO:
        if rest >= 4 and unit[pos:pos + 4] in CAUT_IDS:
            _need(unit, pos, CAUT_LENGTH, "CAUT")
            c = parse_at(CAUT_DECL[order], unit, pos, "CAUT")
            out["caut_auth_type"] = c.AuthType
            if c.UsrLength <= rest - CAUT_LENGTH:
                out["caut_user_id"] = name_text(unit[pos + CAUT_LENGTH:pos + CAUT_LENGTH + c.UsrLength], ccsid)
    elif t == STATUS_DATA:
        if rest >= STATUS_LENGTH:
            s = parse_at(STATUS_DECL[order], unit, pos, "STATUS")
            out.update(status_code=s.Code, status_code_name=STATUS_CODES.get(s.Code))
            if s.Length >= 12 and rest >= 12:
                out["status_value"] = _struct.unpack_from(">I" if order == BIG else "<I", unit, pos + 8)[0]
    elif t == PING_DATA:
        if rest > 4:
            out["ping_length"] = parse_at(PING_DECL[order], unit, pos, "PING").Length
    elif t == RESET_DATA:
        if rest >= RESET_LENGTH:
            r = parse_at(RESET_DECL[order], unit, pos, "RESET")
            out["reset_seq_num"] = r.SeqNum
    elif t == SOCKET_ACTION:
        if rest >= SOCKET_LENGTH:
            s = parse_at(SOCKET_DECL[order], unit, pos, "SOCKET_ACTION")
            out.update(socket_type=s.Type, socket_conversation_id=s.ConversId, socket_request_id=s.RequestId,
                       socket_parm1=s.Parm1, socket_parm2=s.Parm2)
    elif t == NOTIFICATION:
        if rest >= NOTIF_LENGTH:
            n = parse_at(NOTIF_DECL[order], unit, pos, "NOTIFICATION")
            out.update(hobj=n.Handle, notification_code=n.Code,
                       notification_code_name=NOTIFICATION_CODES.get(n.Code), notification_value=n.Value)
    elif t == REQUEST_MSGS:
        if rest >= MSGREQ_LENGTH:
            m = parse_at(MSGREQ_DECL[order], unit, pos, "REQUEST_MSGS")
            out.update(hobj=m.Handle, msgreq_rqst_bytes=m.RqstBytes, msgreq_wait_interval=m.WaitIntrv)
    elif t == ASYNC_MESSAGE:
        if rest >= ASYNC_HEADER_SHORT_LENGTH:
            seg_index = _struct.unpack_from(">H" if order == BIG else "<H", unit, pos + 20)[0]
            out["hobj"] = _i32(unit, pos + 4, order)
            if seg_index == 0 and rest >= ASYNC_HEADER_FIXED_LENGTH:
                ah = parse_at(ASYNC_HEADER_DECL[order], unit, pos, "ASYNC_MESSAGE")
                out["reason_code"] = ah.ReasonCode
                qlen = ah.ResolQNLn
                _need(unit, pos + ASYNC_HEADER_FIXED_LENGTH, qlen, "ASYNC_MESSAGE", "ResolQName")
                q = pos + ASYNC_HEADER_FIXED_LENGTH
                out["resolved_q_name"] = name_text(unit[q:q + qlen], ccsid)
    elif t == MESSAGE_DATA:
        if unit[pos:pos + 4] in MSH_IDS:
            _need(unit, pos, MSH_LENGTH, "MSH")
            pos += MSH_LENGTH
        if unit[pos:pos + 4] in XQH_IDS:
            _need(unit, pos, XQH_PREFIX_LENGTH, "MQXQH")
            out["remote_q_name"] = name_text(unit[pos + 8:pos + 56], ccsid)
            out["remote_q_mgr_name"] = name_text(unit[pos + 56:pos + 104], ccsid)
