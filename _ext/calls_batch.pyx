# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of :func:`mqcodec.ibmmq.calls_batch.decode_units`.

One C pass over the units, with the GIL released, reads every structure the
pure reader reads over arrays but the MQINQ / MQSET lists and the SPI: the
TSH, the API header, MQCONN, MQOPEN and MQPUT1 (MQOD), MQPUT / MQGET / MQPUT1
(MQMD, MQPMO / MQGMO, DataLength), MQCLOSE, INITIAL_DATA, USERID_DATA,
CONAUTH_INFO, STATUS_DATA, PING_DATA, RESET_DATA, SOCKET_ACTION,
NOTIFICATION, REQUEST_MSGS, ASYNC_MESSAGE, MESSAGE_DATA (MSH, MQXQH) and the
XA calls.  Units of MQINQ, MQSET and SPI, and any unit the pure reader hands
on to decode_unit (a structure cut short, an EBCDIC StrucId, a version it
does not know, put-message or object records...), are the pure reader's,
which gives decode_unit's row.  The character fields are keyed in C as the
pure reader keys them (``_Reader.texts``: the field's bytes and its CCSID,
numbered in order of first appearance) and each distinct key decoded once by
the pure module's ``text_dictionary``; the other columns are assembled by the
pure module's functions.

Offsets, lengths, StrucIds and segment types are the pure module's
(``LAYOUT``, ``LENGTHS``, :mod:`mqcodec.ibmmq.wire`), read when this module
is imported: nothing is typed again here.  tests/test_calls_batch.py runs
against both implementations.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

import numpy as np
cimport numpy as cnp

from mqcodec.ibmmq import calls_batch as _pure
from mqcodec.ibmmq import wire as _wire

cnp.import_array()

__all__ = ["decode_units", "DECODED_SCHEMA", "LAYOUT"]

DECODED_SCHEMA = _pure.DECODED_SCHEMA
LAYOUT = _pure.LAYOUT

# ---------------------------------------------------------------- the pure module's tables
_off, _width, _LEN = _pure._off, _pure._width, _pure.LENGTHS
cdef uint32_t TSH = _pure._TSH, TSHM = _pure._TSHM, TSHC = _pure._TSHC
cdef uint32_t MD_A = _pure._ASCII["MD"], PMO_A = _pure._ASCII["PMO"], GMO_A = _pure._ASCII["GMO"]
cdef uint32_t MD_E = _pure._EBCDIC["MD"], PMO_E = _pure._EBCDIC["PMO"], GMO_E = _pure._EBCDIC["GMO"]
cdef uint32_t MSH_A = _pure._ASCII["MSH"], MSH_E = _pure._EBCDIC["MSH"]
cdef uint32_t XQH_A = _pure._ASCII["XQH"], XQH_E = _pure._EBCDIC["XQH"]
cdef uint32_t OD_A = _pure._ASCII["OD"], OD_E = _pure._EBCDIC["OD"]
cdef uint32_t ID_A = _pure._ASCII["ID"], ID_E = _pure._EBCDIC["ID"]
cdef uint32_t UID_A = _pure._ASCII["UID"], UID_E = _pure._EBCDIC["UID"]
cdef uint32_t CAUT_A = _pure._ASCII["CAUT"], CAUT_E = _pure._EBCDIC["CAUT"]
cdef int REPLY_BIT = _wire.REPLY_BIT
cdef int MQCONN = _wire.MQCONN, MQOPEN = _wire.MQOPEN, MQPUT1 = _wire.MQPUT1, MQPUT = _wire.MQPUT
cdef int MQGET = _wire.MQGET, MQCLOSE = _wire.MQCLOSE, MQINQ = _wire.MQINQ, MQSET = _wire.MQSET, SPI = _wire.SPI
cdef int MESSAGE_DATA = _wire.MESSAGE_DATA, INITIAL_DATA = _wire.INITIAL_DATA, USERID_DATA = _wire.USERID_DATA
cdef int CONAUTH_INFO = _wire.CONAUTH_INFO, STATUS_DATA = _wire.STATUS_DATA, PING_DATA = _wire.PING_DATA
cdef int RESET_DATA = _wire.RESET_DATA, SOCKET_ACTION = _wire.SOCKET_ACTION, NOTIFICATION = _wire.NOTIFICATION
cdef int REQUEST_MSGS = _wire.REQUEST_MSGS, ASYNC_MESSAGE = _wire.ASYNC_MESSAGE
cdef int MAX_TEXT = _pure.MAX_TEXT, SPI_OD_SCAN = _pure.SPI_OD_SCAN

DEF NVERSIONS = 8
DEF MD = 0
DEF PMO = 1
DEF GMO = 2
DEF OD = 3
#: the structure length of each version (0: a version the pure reader does not know)
cdef int64_t STRUCTURE_LENGTHS[4][NVERSIONS]
for _s, _lengths in ((MD, _wire.MQMD_LENGTHS), (PMO, _wire.MQPMO_LENGTHS), (GMO, _wire.MQGMO_LENGTHS),
                     (OD, _wire.MQOD_LENGTHS)):
    if max(_lengths) >= NVERSIONS or min(_lengths) < 0:
        raise ImportError("mqcodec._ext.calls_batch: a structure version outside 0-%d (rebuild it)" % NVERSIONS)
    for _v in range(NVERSIONS):
        STRUCTURE_LENGTHS[_s][_v] = _lengths.get(_v, 0)

# The columns this pass writes: integers (a value and a valid flag a unit) and
# characters (where each field lies and how many of its bytes count).
_INTS = ["segment_type", "ctl_flags1", "ctl_flags2", "byte_order", "encoding", "ccsid", "(kind)", "conversation_id",
         "request_id", "reply_length", "completion_code", "reason_code", "hobj", "close_options", "pmo_options",
         "gmo_options", "gmo_wait_interval", "data_length", "conn_appl_type", "conn_options", "conn_x_options",
         "od_object_type", "open_options", "id_fap_level", "id_cap_flags1", "id_ini_err_flags1", "id_max_msg_batch",
         "id_max_tr_size", "id_max_msg_size", "id_seq_wrap_value", "id_cap_flags2", "id_ccsid", "id_hb_interval",
         "id_cap_flags3", "id_conv_by_socket", "caut_auth_type", "status_code", "status_value", "ping_length",
         "reset_seq_num", "socket_conversation_id", "socket_request_id", "socket_type", "socket_parm1",
         "socket_parm2", "notification_code", "notification_value", "msgreq_rqst_bytes", "msgreq_wait_interval",
         "xa_return_value", "xa_tm_flags", "xa_rmid", "spi_verb", "spi_version",
         "(selectors at)", "(selector count)", "(int values at)", "(int value count)", "(chars at)", "(char count)"]
_TEXTS = ["resolved_q_name", "resolved_q_mgr_name", "remote_q_name", "remote_q_mgr_name", "conn_q_mgr_name",
          "conn_appl_name", "od_object_name", "od_object_q_mgr_name", "od_dynamic_q_name", "od_resolved_q_name",
          "od_resolved_q_mgr_name", "id_channel_name", "id_q_mgr_name", "id_prod_id", "uid_user_id",
          "uid_long_user_id", "caut_user_id"]
#: the columns of value names, from an integer column
_NAMED = {"spi_verb_name": ("spi_verb", _wire.SPI_VERBS), "status_code_name": ("status_code", _wire.STATUS_CODES),
          "notification_code_name": ("notification_code", _wire.NOTIFICATION_CODES)}
_i, _x = _INTS.index, _TEXTS.index
cdef int NINTS = len(_INTS), NTEXTS = len(_TEXTS)
cdef int C_T = _i("segment_type"), C_F1 = _i("ctl_flags1"), C_F2 = _i("ctl_flags2"), C_BO = _i("byte_order")
cdef int C_ENC = _i("encoding"), C_CCSID = _i("ccsid"), C_KIND = _i("(kind)"), C_CONV = _i("conversation_id")
cdef int C_REQ = _i("request_id"), C_REPLY = _i("reply_length"), C_CC = _i("completion_code")
cdef int C_REASON = _i("reason_code"), C_HOBJ = _i("hobj"), C_CLOSE = _i("close_options"), C_PMO = _i("pmo_options")
cdef int C_GMO = _i("gmo_options"), C_WAIT = _i("gmo_wait_interval"), C_DLEN = _i("data_length")
cdef int C_APPL_TYPE = _i("conn_appl_type"), C_CONN_OPT = _i("conn_options"), C_CONN_XOPT = _i("conn_x_options")
cdef int C_OD_TYPE = _i("od_object_type"), C_OPEN = _i("open_options"), C_ID = _i("id_fap_level")
cdef int C_CAUT = _i("caut_auth_type"), C_STATUS = _i("status_code"), C_STATUS_VALUE = _i("status_value")
cdef int C_PING = _i("ping_length"), C_RESET = _i("reset_seq_num"), C_SOCKET = _i("socket_conversation_id")
cdef int C_NOTIF = _i("notification_code"), C_NOTIF_VALUE = _i("notification_value")
cdef int C_MSGREQ_BYTES = _i("msgreq_rqst_bytes"), C_MSGREQ_WAIT = _i("msgreq_wait_interval")
cdef int C_XA = _i("xa_return_value"), C_SPI_VERB = _i("spi_verb"), C_SPI_VERSION = _i("spi_version")
cdef int C_SEL_AT = _i("(selectors at)"), C_SEL_N = _i("(selector count)"), C_INT_AT = _i("(int values at)")
cdef int C_INT_N = _i("(int value count)"), C_CHAR_AT = _i("(chars at)"), C_CHAR_N = _i("(char count)")
if C_SEL_AT != NINTS - 6:
    raise ImportError("mqcodec._ext.calls_batch: the list positions must be the last integer columns")
cdef int X_RQ = _x("resolved_q_name"), X_RQM = _x("resolved_q_mgr_name"), X_REMOTE_Q = _x("remote_q_name")
cdef int X_REMOTE_QM = _x("remote_q_mgr_name"), X_CONN = _x("conn_q_mgr_name"), X_OD = _x("od_object_name")
cdef int X_ID_CHANNEL = _x("id_channel_name"), X_ID_QM = _x("id_q_mgr_name"), X_ID_PROD = _x("id_prod_id")
cdef int X_UID = _x("uid_user_id"), X_UID_LONG = _x("uid_long_user_id"), X_CAUT = _x("caut_user_id")

# (field code, offset, size, signed) of the structures read field by field
DEF U = 0
DEF S = 1
cdef struct Field:
    int column
    int offset
    int size
    int kind


cdef Field ID_FIELDS[7]
cdef Field ID_V4_FIELDS[3]
cdef Field ID_EXT_FIELDS[2]
cdef Field SOCKET_FIELDS[5]
cdef Field XA_FIELDS[3]


cdef void _fields(Field* out, list spec):
    for k, (name, structure, field, kind) in enumerate(spec):
        out[k].column = _INTS.index(name)
        out[k].offset, out[k].size = LAYOUT[structure][field]
        out[k].kind = kind


_fields(ID_FIELDS, [("id_fap_level", "ID", "FapLevel", U), ("id_cap_flags1", "ID", "CapFlag1", U),
                    ("id_ini_err_flags1", "ID", "IniErrFlg1", U), ("id_max_msg_batch", "ID", "MaxMsgBtch", U),
                    ("id_max_tr_size", "ID", "MaxTrSize", U), ("id_max_msg_size", "ID", "MaxMsgSize", U),
                    ("id_seq_wrap_value", "ID", "SeqWrapVal", U)])
_fields(ID_V4_FIELDS, [("id_cap_flags2", "ID", "CapFlag2", U), ("id_ccsid", "ID", "CCSID", U),
                       ("id_hb_interval", "ID", "HBInterval", U)])
_fields(ID_EXT_FIELDS, [("id_cap_flags3", "ID", "CapFlag3", U), ("id_conv_by_socket", "ID", "ConvBySkt", U)])
_fields(SOCKET_FIELDS, [("socket_conversation_id", "SOCKET", "ConversId", U),
                        ("socket_request_id", "SOCKET", "RequestId", U), ("socket_type", "SOCKET", "Type", U),
                        ("socket_parm1", "SOCKET", "Parm1", U), ("socket_parm2", "SOCKET", "Parm2", U)])
_fields(XA_FIELDS, [("xa_return_value", "XA", "ReturnValue", S), ("xa_tm_flags", "XA", "TMFlags", U),
                    ("xa_rmid", "XA", "RMId", U)])


cdef struct Text:
    int column
    int offset
    int width


cdef Text CONN_TEXTS[2]
cdef Text OD_TEXTS[3]
cdef Text OD_V3_TEXTS[2]
cdef Text PMO_TEXTS[2]
cdef Text GMO_TEXTS[1]
cdef Text XQH_TEXTS[2]
cdef Text ID_TEXTS[1]
cdef Text ID_V4_TEXTS[1]
cdef Text ID_EXT_TEXTS[1]
cdef Text UID_TEXTS[1]
cdef Text UID_LONG_TEXTS[1]


cdef void _texts(Text* out, list spec):
    for k, (name, structure, field) in enumerate(spec):
        out[k].column = _TEXTS.index(name)
        out[k].offset, out[k].width = LAYOUT[structure][field]


_texts(CONN_TEXTS, [("conn_q_mgr_name", "CONN", "QMgrName"), ("conn_appl_name", "CONN", "ApplName")])
_texts(OD_TEXTS, [("od_object_name", "MQOD", "ObjectName"), ("od_object_q_mgr_name", "MQOD", "ObjectQMgrName"),
                  ("od_dynamic_q_name", "MQOD", "DynamicQName")])
_texts(OD_V3_TEXTS, [("od_resolved_q_name", "MQOD", "ResolvedQName"),
                     ("od_resolved_q_mgr_name", "MQOD", "ResolvedQMgrName")])
_texts(PMO_TEXTS, [("resolved_q_mgr_name", "MQPMO", "ResolvedQMgrName"), ("resolved_q_name", "MQPMO", "ResolvedQName")])
_texts(GMO_TEXTS, [("resolved_q_name", "MQGMO", "ResolvedQName")])
_texts(XQH_TEXTS, [("remote_q_name", "XQH_PREFIX", "RemoteQName"), ("remote_q_mgr_name", "XQH_PREFIX", "RemoteQMgrName")])
_texts(ID_TEXTS, [("id_channel_name", "ID", "ChannelName")])
_texts(ID_V4_TEXTS, [("id_q_mgr_name", "ID", "QMgrName")])
_texts(ID_EXT_TEXTS, [("id_prod_id", "ID", "ProdId")])
_texts(UID_TEXTS, [("uid_user_id", "UID", "UserId")])
_texts(UID_LONG_TEXTS, [("uid_long_user_id", "UID", "LongUserId")])

cdef int API_LEN = _LEN["API_HEADER"], MSH_LEN = _LEN["MSH"], XQH_LEN = _LEN["XQH_PREFIX"]
cdef int CONN_SHORT = _LEN["CONN_SHORT"], CONN_LEN = _LEN["CONN"], ID_SHORT = _LEN["ID_SHORT"]
cdef int ID_V4 = _LEN["ID_V4"], ID_EXT = _LEN["ID_EXT"], UID_LEN = _LEN["UID"], UID_LONG = _LEN["UID_LONG"]
cdef int CAUT_LEN = _LEN["CAUT"], STATUS_LEN = _LEN["STATUS"], RESET_LEN = _LEN["RESET"], SOCKET_LEN = _LEN["SOCKET"]
cdef int NOTIF_LEN = _LEN["NOTIF"], MSGREQ_LEN = _LEN["MSGREQ"], XA_LEN = _LEN["XA"], INQ_LEN = _LEN["INQ"]
cdef int SPI_LEN = _LEN["SPI"]
cdef int ASYNC_SHORT = _LEN["ASYNC_SHORT"], ASYNC_FIXED = _LEN["ASYNC_FIXED"]
cdef int API_REPLY = _off("API_HEADER", "ReplyLength"), API_CC = _off("API_HEADER", "CompCode")
cdef int API_REASON = _off("API_HEADER", "Reason"), API_HOBJ = _off("API_HEADER", "Hobj")
cdef int CONN_APPL_TYPE = _off("CONN", "ApplType"), CONN_OPTIONS = _off("CONN", "Options")
cdef int CONN_XOPTIONS = _off("CONN", "XOptions")
cdef int OD_VERSION = _off("MQOD", "Version"), OD_TYPE = _off("MQOD", "ObjectType"), OD_RECS = _off("MQOD", "RecsPresent")
cdef int PMO_VERSION = _off("MQPMO", "Version"), PMO_OPTIONS = _off("MQPMO", "Options")
cdef int PMO_RECS = _off("MQPMO", "RecsPresent")
cdef int GMO_VERSION = _off("MQGMO", "Version"), GMO_OPTIONS = _off("MQGMO", "Options")
cdef int GMO_WAIT = _off("MQGMO", "WaitInterval")
cdef int CAUT_TYPE = _off("CAUT", "AuthType"), CAUT_USR = _off("CAUT", "UsrLength")
cdef int INQ_NSEL = _off("INQ", "SelectorCount"), INQ_NINT = _off("INQ", "IntAttrCount")
cdef int INQ_NCHAR = _off("INQ", "CharAttrLength"), SPI_VERB_AT = _off("SPI", "Verb"), SPI_VERSION_AT = _off("SPI", "Version")
cdef int STATUS_LENGTH = _off("STATUS", "Length"), STATUS_CODE = _off("STATUS", "Code")
cdef int PING_LENGTH = _off("PING", "Length"), RESET_SEQ = _off("RESET", "SeqNum")
cdef int NOTIF_HANDLE = _off("NOTIF", "Handle"), NOTIF_CODE = _off("NOTIF", "Code"), NOTIF_VALUE = _off("NOTIF", "Value")
cdef int MSGREQ_HANDLE = _off("MSGREQ", "Handle"), MSGREQ_BYTES = _off("MSGREQ", "RqstBytes")
cdef int MSGREQ_WAIT = _off("MSGREQ", "WaitIntrv")
cdef int ASYNC_HOBJ = _off("ASYNC_HEADER", "Hobj"), ASYNC_SEGM = _off("ASYNC_HEADER", "SegmIndex")
cdef int ASYNC_REASON = _off("ASYNC_HEADER", "ReasonCode"), ASYNC_QLEN = _off("ASYNC_HEADER", "ResolQNLn")
if (_width("STATUS", "Code"), _width("NOTIF", "Code"), _width("ASYNC_HEADER", "ResolQNLn")) != (4, 4, 1):
    raise ImportError("mqcodec._ext.calls_batch: field sizes changed (rebuild it)")


# ---------------------------------------------------------------- the pass
cdef struct Out:
    int64_t* v       # [NINTS][n] values
    uint8_t* ok      # [NINTS][n] valid
    int64_t* at      # [NTEXTS][n] buffer position of a character field (-1: none)
    int64_t* ln      # [NTEXTS][n] its bytes that count
    Py_ssize_t n


cdef inline uint32_t _be32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline uint32_t _u32(const uint8_t* p, bint little) noexcept nogil:
    if little:
        return (<uint32_t>p[3] << 24) | (<uint32_t>p[2] << 16) | (<uint32_t>p[1] << 8) | p[0]
    return _be32(p)


cdef inline int64_t _i32(const uint8_t* p, bint little) noexcept nogil:
    return <int32_t>_u32(p, little)


cdef inline int64_t _u16(const uint8_t* p, bint little) noexcept nogil:
    return ((<int64_t>p[1] << 8) | p[0]) if little else ((<int64_t>p[0] << 8) | p[1])


cdef inline uint32_t _sid(const uint8_t* p, int64_t rest) noexcept nogil:
    """The StrucId at ``p`` (0 when fewer than 4 bytes are left: no StrucId is 0)."""
    return _be32(p) if rest >= 4 else 0


cdef inline int _header(const uint8_t* p, int64_t rest, uint32_t ascii, uint32_t ebcdic,
                        int64_t length) noexcept nogil:
    """A structure that may start at ``p``: 1 there (its ASCII StrucId, ``length``
    bytes whole), 0 not there, -1 the pure reader's (an EBCDIC StrucId, or cut short)."""
    cdef uint32_t sid = _sid(p, rest)
    if sid == ebcdic or (sid == ascii and rest < length):
        return -1
    return sid == ascii


cdef inline int64_t _length_of(int structure, int64_t version) noexcept nogil:
    if version < 0 or version >= NVERSIONS:
        return 0
    return STRUCTURE_LENGTHS[structure][version]


cdef inline void _put(Out* o, int c, Py_ssize_t i, int64_t value) noexcept nogil:
    o.v[c * o.n + i] = value
    o.ok[c * o.n + i] = 1


cdef inline void _text(Out* o, int x, Py_ssize_t i, int64_t at, int64_t length) noexcept nogil:
    o.at[x * o.n + i] = at
    o.ln[x * o.n + i] = length


cdef inline void _put_fields(Out* o, Py_ssize_t i, const Field* f, int count, const uint8_t* p,
                             bint little) noexcept nogil:
    cdef int k
    for k in range(count):
        if f[k].size == 1:
            _put(o, f[k].column, i, p[f[k].offset])
        elif f[k].size == 2:
            _put(o, f[k].column, i, _u16(p + f[k].offset, little))
        elif f[k].kind == S:
            _put(o, f[k].column, i, _i32(p + f[k].offset, little))
        else:
            _put(o, f[k].column, i, _u32(p + f[k].offset, little))


cdef inline void _put_texts(Out* o, Py_ssize_t i, const Text* t, int count, int64_t at) noexcept nogil:
    cdef int k
    for k in range(count):
        _text(o, t[k].column, i, at + t[k].offset, t[k].width)


cdef int _md_chain(Out* o, Py_ssize_t i, const uint8_t* p, int64_t at, int64_t rest, bint little,
                   bint get) noexcept nogil:
    """MQMD, MQPMO / MQGMO, DataLength (MQPUT, MQGET, MQPUT1 after its MQOD):
    1 read, 0 the pure reader's."""
    cdef uint32_t sid = _sid(p, rest)
    cdef int64_t size, version
    if sid == MD_E:
        return 0
    if sid != MD_A:                    # no MQMD (a reply without a message): nothing more
        return 1
    size = _length_of(MD, _i32(p + 4, little)) if rest >= 8 else 0
    if size == 0 or size > rest:
        return 0
    p += size
    at += size
    rest -= size
    sid = _sid(p, rest)
    if sid == (GMO_E if get else PMO_E):
        return 0
    if sid != (GMO_A if get else PMO_A):
        return 1
    version = _i32(p + (GMO_VERSION if get else PMO_VERSION), little) if rest >= 8 else -1
    size = _length_of(GMO if get else PMO, version)
    if size == 0 or size > rest:
        return 0
    if get:
        _put(o, C_GMO, i, _u32(p + GMO_OPTIONS, little))
        _put(o, C_WAIT, i, _i32(p + GMO_WAIT, little))
        _put_texts(o, i, GMO_TEXTS, 1, at)
    else:
        if version >= 2 and _i32(p + PMO_RECS, little) > 0:
            return 0                   # put-message records: decode_unit
        _put(o, C_PMO, i, _u32(p + PMO_OPTIONS, little))
        _put_texts(o, i, PMO_TEXTS, 2, at)
    if rest - size >= 4:
        _put(o, C_DLEN, i, _i32(p + size, little))
    return 1


cdef int64_t _mqod(Out* o, Py_ssize_t i, const uint8_t* p, int64_t at, int64_t rest, bint little) noexcept nogil:
    """The ASCII MQOD at ``p``: its columns; returns its size, or 0 when the
    pure reader reads it (cut short, a version not known, object records)."""
    cdef int64_t version = _i32(p + OD_VERSION, little) if rest >= 8 else -1
    cdef int64_t size = _length_of(OD, version)
    if size == 0 or size > rest or (version >= 2 and _i32(p + OD_RECS, little) > 0):
        return 0
    _put(o, C_OD_TYPE, i, _i32(p + OD_TYPE, little))
    _put_texts(o, i, OD_TEXTS, 3, at)
    if version >= 3:
        _put_texts(o, i, OD_V3_TEXTS, 2, at)
    return size


cdef int _api(Out* o, Py_ssize_t i, int t, const uint8_t* p, int64_t at, int64_t rest, bint little) noexcept nogil:
    """An API call or reply after its TSH: 1 read, 0 the pure reader's."""
    cdef int base = t & ~REPLY_BIT
    cdef uint32_t sid
    cdef int64_t size, nsel, nint, nchar, room, j, span
    if rest < API_LEN:
        return 0
    _put(o, C_REPLY, i, _be32(p + API_REPLY))
    _put(o, C_CC, i, _i32(p + API_CC, little))
    _put(o, C_REASON, i, _i32(p + API_REASON, little))
    _put(o, C_HOBJ, i, _i32(p + API_HOBJ, little))
    p += API_LEN
    at += API_LEN
    rest -= API_LEN
    if base == MQCONN:
        if rest >= CONN_SHORT:
            _put_texts(o, i, CONN_TEXTS, 2, at)
            _put(o, C_APPL_TYPE, i, _i32(p + CONN_APPL_TYPE, little))
            if rest >= CONN_LEN:
                _put(o, C_CONN_OPT, i, _u32(p + CONN_OPTIONS, little))
                _put(o, C_CONN_XOPT, i, _u32(p + CONN_XOPTIONS, little))
    elif base == MQOPEN or base == MQPUT1:   # an MQOD first (none: nothing more is read)
        sid = _sid(p, rest)
        if sid == OD_E:
            return 0
        if sid != OD_A:
            return 1
        size = _mqod(o, i, p, at, rest, little)
        if size == 0:
            return 0
        p += size
        at += size
        rest -= size
        if base == MQPUT1:
            return _md_chain(o, i, p, at, rest, little, False)
        if rest >= 4:
            _put(o, C_OPEN, i, _u32(p, little))
    elif base == MQCLOSE:
        if rest >= 4:
            _put(o, C_CLOSE, i, _u32(p, little))
    elif base == MQPUT or base == MQGET:
        return _md_chain(o, i, p, at, rest, little, base == MQGET)
    elif base == MQINQ or base == MQSET:     # the counts, then the lists
        if rest < INQ_LEN:
            return 1
        nsel = _i32(p + INQ_NSEL, little)
        nint = _i32(p + INQ_NINT, little)
        nchar = _i32(p + INQ_NCHAR, little)
        room = rest - INQ_LEN
        if nsel < 0 or nint < 0 or nchar < 0 or 4 * nsel > room:
            return 0                   # decode_unit's errors
        _put(o, C_SEL_AT, i, at + INQ_LEN)
        _put(o, C_SEL_N, i, nsel)
        if (t == (MQINQ | REPLY_BIT) or t == MQSET) and room >= 4 * (nsel + nint) + nchar:
            _put(o, C_INT_AT, i, at + INQ_LEN + 4 * nsel)
            _put(o, C_INT_N, i, nint)
            if nchar > 0:
                _put(o, C_CHAR_AT, i, at + INQ_LEN + 4 * (nsel + nint))
                _put(o, C_CHAR_N, i, nchar)
    elif base == SPI:                  # the verb header, then an MQOD within SPI_OD_SCAN bytes
        if rest < SPI_LEN:
            return 1
        _put(o, C_SPI_VERB, i, _u32(p + SPI_VERB_AT, little))
        _put(o, C_SPI_VERSION, i, _u32(p + SPI_VERSION_AT, little))
        span = (rest if rest < SPI_OD_SCAN else SPI_OD_SCAN) - SPI_LEN
        p += SPI_LEN
        at += SPI_LEN
        rest -= SPI_LEN
        j = 0
        while j + 8 <= span:           # the first 4-aligned StrucId of a known version
            sid = _be32(p + j)
            if (sid == OD_A or sid == OD_E) and _length_of(OD, _i32(p + j + 4, little)) > 0:
                if sid == OD_E:
                    return 0
                return 1 if _mqod(o, i, p + j, at + j, rest - j, little) > 0 else 0
            j += 4
    return 1


cdef int _other(Out* o, Py_ssize_t i, int t, const uint8_t* p, int64_t at, int64_t rest, bint little) noexcept nogil:
    """A segment without an API header, after its TSH: 1 read, 0 the pure reader's."""
    cdef int h
    cdef int64_t usr, qlen
    if t == MESSAGE_DATA:              # MSH, then MQXQH
        h = _header(p, rest, MSH_A, MSH_E, MSH_LEN)
        if h < 0:
            return 0
        if h:
            p += MSH_LEN
            at += MSH_LEN
            rest -= MSH_LEN
        h = _header(p, rest, XQH_A, XQH_E, XQH_LEN)
        if h < 0:
            return 0
        if h:
            _put_texts(o, i, XQH_TEXTS, 2, at)
    elif t == INITIAL_DATA:
        if rest < 5:
            return 1
        h = _header(p, rest, ID_A, ID_E, ID_SHORT)
        if h < 0:
            return 0
        if h:
            _put_fields(o, i, ID_FIELDS, 7, p, little)
            _put_texts(o, i, ID_TEXTS, 1, at)
            if rest >= ID_V4:
                _put_fields(o, i, ID_V4_FIELDS, 3, p, little)
                _put_texts(o, i, ID_V4_TEXTS, 1, at)
            if rest >= ID_EXT:
                _put_fields(o, i, ID_EXT_FIELDS, 2, p, little)
                _put_texts(o, i, ID_EXT_TEXTS, 1, at)
    elif t == USERID_DATA:
        h = _header(p, rest, UID_A, UID_E, UID_LEN)
        if h < 0:
            return 0
        if h:
            _put_texts(o, i, UID_TEXTS, 1, at)
            if rest >= UID_LONG:
                _put_texts(o, i, UID_LONG_TEXTS, 1, at)
    elif t == CONAUTH_INFO:
        h = _header(p, rest, CAUT_A, CAUT_E, CAUT_LEN)
        if h < 0:
            return 0
        if h:
            _put(o, C_CAUT, i, _u32(p + CAUT_TYPE, little))
            usr = _u32(p + CAUT_USR, little)
            if usr <= rest - CAUT_LEN:
                if usr > MAX_TEXT:
                    return 0
                _text(o, X_CAUT, i, at + CAUT_LEN, usr)
    elif t == STATUS_DATA:
        if rest >= STATUS_LEN:
            _put(o, C_STATUS, i, _u32(p + STATUS_CODE, little))
            if _u32(p + STATUS_LENGTH, little) >= 12 and rest >= 12:
                _put(o, C_STATUS_VALUE, i, _u32(p + 8, little))
    elif t == PING_DATA:
        if rest > 4:
            _put(o, C_PING, i, _u32(p + PING_LENGTH, little))
    elif t == RESET_DATA:
        if rest >= RESET_LEN:
            _put(o, C_RESET, i, _u32(p + RESET_SEQ, little))
    elif t == SOCKET_ACTION:
        if rest >= SOCKET_LEN:
            _put_fields(o, i, SOCKET_FIELDS, 5, p, little)
    elif t == NOTIFICATION:
        if rest >= NOTIF_LEN:
            _put(o, C_HOBJ, i, _i32(p + NOTIF_HANDLE, little))
            _put(o, C_NOTIF, i, _u32(p + NOTIF_CODE, little))
            _put(o, C_NOTIF_VALUE, i, _u32(p + NOTIF_VALUE, little))
    elif t == REQUEST_MSGS:
        if rest >= MSGREQ_LEN:
            _put(o, C_HOBJ, i, _i32(p + MSGREQ_HANDLE, little))
            _put(o, C_MSGREQ_BYTES, i, _u32(p + MSGREQ_BYTES, little))
            _put(o, C_MSGREQ_WAIT, i, _i32(p + MSGREQ_WAIT, little))
    elif t == ASYNC_MESSAGE:           # the handle; the first segment's long form: reason, queue name
        if rest >= ASYNC_SHORT:
            _put(o, C_HOBJ, i, _i32(p + ASYNC_HOBJ, little))
            if _u16(p + ASYNC_SEGM, little) == 0 and rest >= ASYNC_FIXED:
                _put(o, C_REASON, i, _i32(p + ASYNC_REASON, little))
                qlen = p[ASYNC_QLEN]
                if rest < ASYNC_FIXED + qlen:
                    return 0
                if qlen > 0:
                    _text(o, X_RQ, i, at + ASYNC_FIXED, qlen)
    elif 0xA1 <= t <= 0xBA:            # the XA calls
        if rest >= XA_LEN:
            _put_fields(o, i, XA_FIELDS, 3, p, little)
    return 1


cdef int _read(Out* o, Py_ssize_t i, const uint8_t* p, int64_t n, int64_t at) noexcept nogil:
    """Unit ``i`` (``n`` bytes at ``p``, buffer position ``at``): 1 read, 0 the pure reader's."""
    cdef uint32_t ident
    cdef int64_t hlen
    cdef int t
    cdef bint little
    cdef const uint8_t* q
    if n < 4:
        return 0
    ident = _be32(p)
    if ident == TSHM:
        hlen = 36
    elif ident == TSH or ident == TSHC:
        hlen = 28
    else:
        return 0
    if hlen > n:
        return 0
    q = p + hlen - 20                  # ByteOrder, SegmType, CtlFlag1, CtlFlag2 ... Encoding, CCSID
    t = q[1]
    little = q[0] == 2
    _put(o, C_T, i, t)
    _put(o, C_F1, i, q[2])
    _put(o, C_F2, i, q[3])
    _put(o, C_BO, i, q[0])
    _put(o, C_ENC, i, _i32(q + 12, little))
    _put(o, C_CCSID, i, _u16(q + 16, little))
    if ident == TSHM:
        _put(o, C_KIND, i, 1)
        _put(o, C_CONV, i, _be32(p + 8))
        _put(o, C_REQ, i, _be32(p + 12))
    else:
        _put(o, C_KIND, i, 2 if ident == TSHC else 0)
    if 0x80 < t <= 0x9F:
        return _api(o, i, t, p + hlen, at + hlen, n - hlen, little)
    return _other(o, i, t, p + hlen, at + hlen, n - hlen, little)


cdef inline uint64_t _hash(const uint8_t* k, Py_ssize_t w) noexcept nogil:
    cdef uint64_t h = <uint64_t>0x9E3779B97F4A7C15 ^ <uint64_t>w, x
    cdef Py_ssize_t j = 0
    while j < w:
        x = 0
        memcpy(&x, k + j, 8 if w - j >= 8 else w - j)
        h = (h ^ x) * <uint64_t>0x100000001B3
        h ^= h >> 29
        j += 8
    return h ^ (h >> 32)


cdef Py_ssize_t _text_keys(const uint8_t* buf, int64_t size, const int64_t* at, const int64_t* ln,
                           const uint8_t* fast, const int64_t* ccsid, Py_ssize_t n, Py_ssize_t width,
                           uint8_t* keys, int32_t* slots, Py_ssize_t mask, int32_t* index) noexcept nogil:
    """The character fields of one column as ``_Reader.texts`` keys them: each
    unit's field (``ln`` bytes at ``at``; bytes past them or past the buffer 0)
    and its CCSID in two bytes, big endian, ``width`` + 2 bytes; the distinct
    keys in ``keys``, in order of first appearance, and each unit's key number
    in ``index`` (-1: no field). Returns the number of distinct keys."""
    cdef Py_ssize_t i, j, d = 0, w = width + 2
    cdef int64_t m
    cdef uint8_t* k
    cdef uint64_t h
    for i in range(n):
        index[i] = -1
        if at[i] < 0 or not fast[i]:
            continue
        k = keys + d * w                   # (the next key's place: kept if it is new)
        memset(k, 0, w)
        m = ln[i] if ln[i] < width else width
        if at[i] + m > size:
            m = size - at[i]
        if m > 0:
            memcpy(k, buf + at[i], m)
        k[width] = (ccsid[i] >> 8) & 0xFF
        k[width + 1] = ccsid[i] & 0xFF
        h = _hash(k, w)
        j = h & mask
        while slots[j] >= 0 and memcmp(keys + slots[j] * w, k, w) != 0:
            j = (j + 1) & mask
        if slots[j] < 0:
            slots[j] = d
            d += 1
        index[i] = slots[j]
    return d


cdef object _text_column(const uint8_t* buf, int64_t size, const int64_t* at, const int64_t* ln,
                         const uint8_t* fast, const int64_t* ccsid, Py_ssize_t n, Py_ssize_t width,
                         Py_ssize_t fields):
    """``_pure._scatter(n, rows, r.texts(...))`` of the ``fields`` units with
    a field, in one pass: the same dictionary array (keys numbered in order of
    first appearance, as Arrow's dictionary_encode numbers them)."""
    cdef Py_ssize_t slots_n = 16, d
    while slots_n < 2 * fields:
        slots_n *= 2
    keys_a = np.empty((fields, width + 2), dtype=np.uint8)
    slots_a = np.full(slots_n, -1, dtype=np.int32)
    index_a = np.empty(n, dtype=np.int32)
    cdef uint8_t* keys = <uint8_t*>cnp.PyArray_DATA(keys_a)
    cdef int32_t* slots = <int32_t*>cnp.PyArray_DATA(slots_a)
    cdef int32_t* index = <int32_t*>cnp.PyArray_DATA(index_a)
    with nogil:
        d = _text_keys(buf, size, at, ln, fast, ccsid, n, width, keys, slots, slots_n - 1, index)
    return _pure.text_dictionary([bytes(k) for k in keys_a[:d]], index_a, width)


def decode_units(data, starts, lengths, full_lengths=None):
    """:func:`mqcodec.ibmmq.calls_batch.decode_units`, compiled (the same rows)."""
    buf, starts, lens, full = _pure.inputs(data, starts, lengths, full_lengths)
    cdef Py_ssize_t n = len(starts), i
    if n == 0:
        return _pure.decode_units(buf, starts, lens, full)
    cdef const uint8_t[::1] b = np.ascontiguousarray(buf, dtype=np.uint8) if len(buf) else np.zeros(1, np.uint8)
    starts, lens = np.ascontiguousarray(starts), np.ascontiguousarray(lens)
    cdef const int64_t[::1] s = starts
    cdef const int64_t[::1] ln = lens
    cdef int64_t size = len(buf)
    values = np.zeros((NINTS, n), dtype=np.int64)
    valid = np.zeros((NINTS, n), dtype=np.uint8)
    text_at = np.full((NTEXTS, n), -1, dtype=np.int64)
    text_len = np.zeros((NTEXTS, n), dtype=np.int64)
    fast_a = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] fast = fast_a
    cdef Out o
    o.v = <int64_t*>cnp.PyArray_DATA(values)
    o.ok = <uint8_t*>cnp.PyArray_DATA(valid)
    o.at = <int64_t*>cnp.PyArray_DATA(text_at)
    o.ln = <int64_t*>cnp.PyArray_DATA(text_len)
    o.n = n
    with nogil:
        for i in range(n):   # (a unit not inside the buffer is the pure reader's, as it is)
            if 0 <= s[i] and 0 <= ln[i] and s[i] + ln[i] <= size:
                fast[i] = _read(&o, i, &b[0] + s[i], ln[i], s[i])
    f = fast_a.view(bool)
    ok = valid.view(bool)
    ok &= f   # (a unit handed on keeps none of what was read of it)
    ccsid, ccsid_eff = _pure.ccsids(values[C_CCSID], f)
    # (each column its own copy: an Arrow array over a row of ``values`` would keep all of
    # it alive as long as the column lives, and the rows of requests wait for their replies)
    arrays = _pure.tsh_columns(values[C_T], values[C_F1], values[C_F2], values[C_BO], values[C_ENC].copy(), ccsid,
                               values[C_KIND], values[C_CONV].copy(), values[C_REQ].copy(), f)
    for c in range(C_REPLY, C_SEL_AT):   # (the list positions after them are not columns)
        if ok[c].any():
            arrays[_INTS[c]] = _pure._array(values[c].copy(), ok[c], _pure._TYPES[_INTS[c]])
    r = _pure._Reader(buf, starts, lens)
    little = values[C_BO] == 2
    for name, at_c, count_c in (("inq_selectors", C_SEL_AT, C_SEL_N), ("inq_int_values", C_INT_AT, C_INT_N)):
        rows = np.flatnonzero(ok[at_c])
        if len(rows):
            arrays[name] = _pure._scatter(n, rows, _pure._int_lists(r, values[at_c][rows], values[count_c][rows],
                                                                    little[rows]))
    rows = np.flatnonzero(ok[C_CHAR_AT])
    if len(rows):
        arrays["inq_char_values"] = _pure._scatter(n, rows, _pure._char_values(
            r, values[C_CHAR_AT][rows], values[C_CHAR_N][rows], ccsid_eff[rows]))
    for name, (column, names) in _NAMED.items():
        rows = np.flatnonzero(ok[_INTS.index(column)])
        if len(rows):
            arrays[name] = _pure._scatter(n, rows, _pure._named(values[_INTS.index(column)][rows], names))
    ccsid_eff = np.ascontiguousarray(ccsid_eff, dtype=np.int64)
    cdef const int64_t* eff = <const int64_t*>cnp.PyArray_DATA(ccsid_eff)
    cdef const int64_t* tat = <const int64_t*>cnp.PyArray_DATA(text_at)
    cdef const int64_t* tln = <const int64_t*>cnp.PyArray_DATA(text_len)
    cdef Py_ssize_t width, x
    for x in range(NTEXTS):
        has = (text_at[x] >= 0) & f
        fields = int(has.sum())
        width = int(text_len[x][has].max()) if fields else 0
        if width > 0:
            arrays[_TEXTS[x]] = _text_column(&b[0], size, tat + x * n, tln + x * n, &fast[0], eff, n, width,
                                             fields)
    table = _pure.table_of(arrays, n)
    rest = np.flatnonzero(~f)
    if len(rest):   # the pure reader's units (it hands the others on to decode_unit)
        table = _pure.interleave(table, _pure.decode_units(buf, starts[rest], lens[rest], full[rest]), rest)
    return table
