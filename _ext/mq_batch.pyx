# distutils: language = c++
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled batch decoder for IBM MQ messages (MQMD first, then the header
chain its Format starts, then the body).

Many records in (one buffer + int64 offsets), one Arrow record batch out
(schema ``mqcodec.batch.schema.MQ_MESSAGES``): the MQMD's fields, the
header-chain facts and the PCF header of a PCF body.  The walk runs without
the GIL and creates no Python object per record; columns are written into
preallocated arrays and C++ vectors (strings row by row, while the record
is in cache) and wrapped once.

This is the compiled twin of ``mqcodec.batch.mq_pure`` (which runs
``mqcodec.ibmmq.message.decode_message`` record by record): every check
below is made in the order ``headers.py`` / ``message.py`` / ``pcf.py``
make it, with the same structure, field, offset and reason, so that both
implementations give identical tables (tests/test_batch_mq.py).  Change
them together.  Layout facts (field offsets, StrucIds, versions, fixed
lengths, format names) are read from the pure modules' declarations when
this module is imported, so they have one source.

Strings go through 256-entry byte -> UTF-8 tables built once from the
converters of ``mqcodec.ccsid`` (``single_byte_table``).  A string in a
CCSID without a converter is null (the pure path keeps its bytes and warns),
and a Format in such a CCSID names nothing.
A string in a known CCSID without a table (UTF-16, DBCS through ICU, UTF-8
with a non-ASCII byte) is decoded by ``mqcodec.ccsid.decode_text`` under the GIL;
so is a Format whose decoded text is not plain ASCII (Python's
``str.upper`` decides whether it names a header then).
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.string cimport memcpy
from libcpp.vector cimport vector

import numpy as np
cimport numpy as cnp
import pyarrow as pa

from mqcodec import arrow_kernels as _ak
from mqcodec import ccsid as _ccsid
# the layouts as data, generated from the declarations (tests/test_batch_mq.py checks they are current):
# the declarations themselves (and construct) are not loaded by this module
from mqcodec.batch import mq_layout as _L
from mqcodec.batch import mq_pure as _pure
from mqcodec.batch import errors as _errors
from mqcodec.batch.errors import NULL_RECORD as _NULL_RECORD
from mqcodec.batch.schema import MQ_MESSAGES

cnp.import_array()

include "batch_common.pxi"
include "arrow_export.pxi"

DEF NKIND = 13            # 0 MQMD, 1..10 headers, 11 MQCFH, 12 MQEPH
DEF MAXF = 48             # fields of one cut table

# ------------------------------------------------------------ structures
# structure codes: 0 = MQMD, 1..10 = the headers a Format can announce,
# then the PCF header structures and the null record
DEF S_MQMD = 0
DEF S_MQXQH = 1
DEF S_MQRFH2 = 4
DEF S_MQCFH = 11
DEF S_MQEPH = 12
DEF S_RECORD = 13

# the Format names announcing headers, kinds 1..10 in order (mq_pure.KIND_FORMATS, through
# the generated layout); the walk names two kinds by code (S_MQXQH, S_MQRFH2), checked below
_KIND_FORMATS = tuple(_L.KIND_FORMATS)
if len(_KIND_FORMATS) != 10 or len(_L.KINDS) != 11:
    raise ImportError("mqcodec._ext.mq_batch does not know the headers %s: rebuild it" % (_L.KIND_FORMATS,))
# (NAME, STRUC_ID, (first, last version), HAS_STRUC_LENGTH, FIXED_LENGTH, Encoding, CodedCharSetId, Format)
_KINDS = list(_L.KINDS)
if _KINDS[S_MQXQH][0] != "MQXQH" or _KINDS[S_MQRFH2][0] != "MQRFH2":
    raise ImportError("mqcodec._ext.mq_batch: unexpected header kinds")
STRUCTURES = [k[0] for k in _KINDS] + ["MQCFH", "MQEPH", _NULL_RECORD[0]]

cdef int _MAX_HEADERS = _L.MAX_HEADERS
cdef int64_t _MIN_PARAM = _L.MIN_PARAMETER_LENGTH

# format code: 0 = no header (opaque/string body), 1..10 header kind,
# 20 = PCF with MQCFH first, 21 = MQEPH first
DEF FMT_PCF = 20
DEF FMT_EPH = 21
_FORMAT_CODE = {f: k + 1 for k, f in enumerate(_KIND_FORMATS)}
for _f in _L.PCF_FORMATS:
    _FORMAT_CODE[_f] = FMT_PCF
_FORMAT_CODE[_L.EMBEDDED_PCF_FORMAT] = FMT_EPH

# ------------------------------------------------------------ fields
FIELDS = ["", "StrucId", "Version", "StrucLength", "Format", "MsgDesc", "NameValueLength",
          "ParameterCount"]
DEF F_NONE = 0
DEF F_STRUCID = 1
DEF F_VERSION = 2
DEF F_STRUCLENGTH = 3
DEF F_FORMAT = 4
DEF F_MSGDESC = 5
DEF F_NVL = 6
DEF F_PARAMETERCOUNT = 7


def _field_code(name):
    if name not in FIELDS:
        FIELDS.append(name)
    return FIELDS.index(name)


# ------------------------------------------------------------ reasons
DEF R_TRUNC = 0
DEF R_STRUCID = 1
DEF R_NEITHER = 2
DEF R_VERSION = 3
DEF R_SL_SMALL = 4
DEF R_SL_PAST = 5
DEF R_XQH_MDID = 6
DEF R_XQH_MDVER = 7
DEF R_NVL_ROOM = 8
DEF R_NVL_BAD = 9
DEF R_CHAIN = 10
DEF R_EPH_VERSION = 11
DEF R_EPH_SMALL = 12
DEF R_PAST_END = 13
DEF R_CFH_LEN = 14
DEF R_CFH_VERSION = 15
DEF R_NEG_PCOUNT = 16
DEF R_PCOUNT_ROOM = 17
DEF R_NULL = 18

#: reason sentences (index = code), the texts headers.py / message.py /
#: pcf.py raise; R_STRUCID and R_VERSION are completed per structure
REASONS = [
    "truncated: %d bytes needed, %d present",                              # headers._check_strucid, parse_at, pcf._truncated
    None,                                                                  # "expected %r, found %s"
    "reads %d big-endian and %d little-endian; neither is 1 or 2",          # headers.detect_md
    None,                                                                  # "version %d is not ..."
    "%d is less than the fixed part (%d bytes)",
    "%d bytes claimed but only %d remain",
    "the embedded MQMD's StrucId is not 'MD  '",
    "the embedded MQMD's Version is %d, not 1",
    "%d bytes left before StrucLength ends; a NameValueLength needs 4",
    "%d bytes claimed but only %d remain within StrucLength",
    "the header chain exceeds %d headers",                                 # message._decode
    "Version %d is not MQEPH_VERSION_1",                                   # pcf._decode_pcf_at
    "StrucLength %d is smaller than the 68-byte MQEPH",
    "StrucLength %d runs past the end (%d bytes remain)",
    "StrucLength %d is not MQCFH_STRUC_LENGTH (36)",
    "Version %d is not 1, 2 or 3",
    "negative ParameterCount %d",                                          # pcf._check_count
    "%d parameters need at least %d bytes but only %d remain",
    _NULL_RECORD[3],
]


def _reason(int structure, int code, args):
    if code == R_STRUCID:
        return "expected %r, found %s" % (_KINDS[structure][1], "%08x" % (int(args[0]) & 0xFFFFFFFF))
    if code == R_VERSION:
        first, last = _KINDS[structure][2]
        return "version %d is not %s" % (int(args[0]), " or ".join(map(str, range(first, last + 1))))
    fmt = REASONS[code]
    n = fmt.count("%d")
    return fmt % tuple(int(a) for a in args[:n]) if n else fmt


# ------------------------------------------------------------ layout tables
cdef uint8_t _id_ascii[NKIND][4]
cdef uint8_t _id_ebcdic[NKIND][4]
cdef int32_t _vmin[NKIND]
cdef int32_t _vmax[NKIND]
cdef bint _has_sl[NKIND]
cdef int64_t _fixed[NKIND]
cdef int64_t _enc_off[NKIND]
cdef int64_t _cc_off[NKIND]
cdef int64_t _fmt_off[NKIND]

for _k in range(11):
    _name, _sid, (_first, _last), _sl, _fx, _enc, _cc, _fmt = _KINDS[_k]
    _a = _sid.encode("ascii")
    _e = _sid.encode("cp500")
    for _i in range(4):
        _id_ascii[_k][_i] = _a[_i]
        _id_ebcdic[_k][_i] = _e[_i]
    _vmin[_k] = _first
    _vmax[_k] = _last
    _has_sl[_k] = _sl
    _fixed[_k] = _fx
    _enc_off[_k] = _enc
    _cc_off[_k] = _cc
    _fmt_off[_k] = _fmt

# MQEPH StrucId (pcf.py: ASCII "EPH " or EBCDIC C5 D7 C8 40)
for _i in range(4):
    _id_ascii[S_MQEPH][_i] = _L.EPH_STRUC_IDS[0][_i]
    _id_ebcdic[S_MQEPH][_i] = _L.EPH_STRUC_IDS[1][_i]

# "cut" tables: the fields parse_at / pcf._truncated name when the fixed part
# is cut short (the last field starting at or before the cut)
DEF CUT_MD1 = 0
DEF CUT_MD2 = 1
DEF CUT_XQH = 2
DEF CUT_DLH = 3
DEF CUT_CFH = 4
DEF CUT_EPH = 5
cdef int _cut_off[6][MAXF]
cdef int _cut_code[6][MAXF]
cdef int _cut_n[6]
cdef int64_t _cut_size[6]


def _set_cut(int t, items, int64_t size):
    cdef int i = 0
    for name, off in items:
        _cut_off[t][i] = off
        _cut_code[t][i] = _field_code(name)
        i += 1
    _cut_n[t] = i
    _cut_size[t] = size


for _t, _name in ((CUT_MD1, "MD1"), (CUT_MD2, "MD2"), (CUT_XQH, "XQH"), (CUT_DLH, "DLH"), (CUT_CFH, "CFH"),
                  (CUT_EPH, "EPH")):
    _set_cut(_t, _L.CUTS[_name][0], _L.CUTS[_name][1])
if _cut_size[CUT_MD1] != _L.MQMD_LENGTHS[1] or _cut_size[CUT_MD2] != _L.MQMD_LENGTHS[2] \
        or _cut_size[CUT_XQH] != _L.MQXQH_FIXED_LENGTH or _cut_size[CUT_DLH] != _L.MQDLH_FIXED_LENGTH \
        or _cut_size[CUT_CFH] != 36 or _cut_size[CUT_EPH] != 68:
    raise ImportError("mqcodec._ext.mq_batch: fixed sizes disagree with the declarations")
# MQEPH: Version, StrucLength at +4/+8; embedded MQCFH at +32 (pcf.py)
if _L.MQEPH_PCF_HEADER_OFFSET != 32:
    raise ImportError("mqcodec._ext.mq_batch: MQEPH.PCFHeader moved")

# MQMD columns: offsets of the fields in an MQMD version 2
_MD_OFFS = {name: off for name, off, size in _L.MQMD2_FIELDS}
_MD_SIZES = {name: size for name, off, size in _L.MQMD2_FIELDS}
_INT_COLS = list(_pure.MD_INT_FIELDS)
_CHAR_COLS = list(_pure.MD_CHAR_FIELDS)
_BYTE_COLS = list(_pure.MD_BYTE_FIELDS)
DEF NINT = 15
DEF NCHAR = 9
DEF NBYTE = 4
if len(_INT_COLS) != NINT or len(_CHAR_COLS) != NCHAR or len(_BYTE_COLS) != NBYTE:
    raise ImportError("mqcodec._ext.mq_batch: MQMD columns changed")
cdef int64_t _md_int_off[NINT]
cdef bint _md_int_v2[NINT]
cdef int64_t _md_char_off[NCHAR]
cdef int32_t _md_char_len[NCHAR]
for _i, _c in enumerate(_INT_COLS):
    _md_int_off[_i] = _MD_OFFS[_pure.MD_INT_FIELDS[_c]]
    _md_int_v2[_i] = _pure.MD_INT_FIELDS[_c] in _pure.MD_V2_FIELDS
for _i, _c in enumerate(_CHAR_COLS):
    _md_char_off[_i] = _MD_OFFS[_pure.MD_CHAR_FIELDS[_c]]
    _md_char_len[_i] = _MD_SIZES[_pure.MD_CHAR_FIELDS[_c]]
_PCF_COLS = list(_pure.PCF_COLUMNS)
_CFH_FIELDS = list(_L.MQCFH_FIELDS)
_PCF_INDEX = [_CFH_FIELDS.index(_pure.PCF_COLUMNS[c]) for c in _PCF_COLS]

# the Format names the C walk compares (ASCII, upper case)
DEF NFMT = 24
cdef uint8_t _fmt_name[NFMT][8]
cdef int _fmt_len[NFMT]
cdef int _fmt_code[NFMT]
cdef int _nfmt = 0
for _name, _code in _FORMAT_CODE.items():
    _b = _name.encode("ascii")
    if len(_b) > 8 or _nfmt >= NFMT:
        raise ImportError("mqcodec._ext.mq_batch: format table overflow")
    for _i in range(len(_b)):
        _fmt_name[_nfmt][_i] = _b[_i]
    _fmt_len[_nfmt] = len(_b)
    _fmt_code[_nfmt] = _code
    _nfmt += 1

# ------------------------------------------------------------ string tables
_build_tables()      # batch_common.pxi
if _ccsid.is_known(-12345) or _table_or_py(-12345) != UNKNOWN_CCSID:
    raise ImportError("mqcodec._ext.mq_batch: an unknown CCSID must have no converter (mqcodec.ccsid)")


# ------------------------------------------------------------ reading
cdef inline bint _little(int32_t encoding) noexcept nogil:
    # headers.byte_order / pcf.byte_order: integer nibble 2 = reversed
    return (encoding & 0xF) == 2


cdef inline bint _is_id(const uint8_t* p, int kind) noexcept nogil:
    # headers._id_matches: the ASCII or the EBCDIC (cp500) spelling
    cdef int i
    cdef bint a = True, e = True
    for i in range(4):
        if p[i] != _id_ascii[kind][i]:
            a = False
        if p[i] != _id_ebcdic[kind][i]:
            e = False
    return a or e


# ------------------------------------------------------------ results

cdef struct StrRef:
    int64_t src          # absolute offset in the input buffer; -1 = null
    int32_t length
    int32_t ccsid


cdef struct Res:
    Err err
    bint md_le
    int32_t own_enc
    int32_t own_cc
    int32_t version
    int32_t body_enc
    int32_t body_cc
    int64_t body_off
    bint is_pcf
    bint has_eph
    int32_t cfh[9]
    int nfmt
    StrRef fmt[40]       # Format of the MQMD and of each header, in order


cdef inline bint _fail(Res* r, int structure, int field, int reason, int64_t off,
                       int64_t a0=0, int64_t a1=0, int64_t a2=0) noexcept nogil:
    _set_err(&r.err, structure, field, reason, off, a0, a1, a2)
    return False


cdef inline bint _cut(Res* r, int structure, int t, int64_t base, int64_t avail) noexcept nogil:
    # layout.parse_at / pcf._truncated: the last field starting at or before the cut
    cdef int64_t at = 0
    cdef int field = _last_field_at(_cut_off[t], _cut_code[t], _cut_n[t], avail, &at)
    return _fail(r, structure, field, R_TRUNC, base + at, _cut_size[t], _nonneg(avail))


cdef int _py_format_code(const uint8_t* p, int32_t cs) noexcept with gil:
    raw = (<const char*>p)[:8]
    name = _ccsid.decode_text(raw, cs).rstrip(" \x00").upper()
    return _FORMAT_CODE.get(name, 0)


cdef int _format_code(const uint8_t* p, int32_t cs) noexcept nogil:
    """What the 8-byte Format at p names (headers.header_class_for_format,
    message.PCF_FORMATS): 0 nothing, 1..10 a header kind, FMT_PCF, FMT_EPH."""
    cdef uint8_t up[8]
    cdef int n = 8, i, k, t = _table_or_py(cs)
    cdef uint8_t c
    if t == UNKNOWN_CCSID:
        return 0      # kept as bytes by headers.Header._load: names nothing
    if t >= 0:
        n = <int>_trimmed(t, p, n)
        for i in range(n):
            if _tab_len[t][p[i]] != 1:
                return _py_format_code(p, cs)
            up[i] = _tab_utf8[t][p[i]][0]
    elif cs == 1208:
        while n > 0 and (p[n - 1] == 0x20 or p[n - 1] == 0):
            n -= 1
        for i in range(n):
            if p[i] >= 0x80:
                return _py_format_code(p, cs)
            up[i] = p[i]
    else:
        return _py_format_code(p, cs)
    for i in range(n):
        c = up[i]
        if c >= 0x80:
            return _py_format_code(p, cs)
        if 0x61 <= c <= 0x7A:
            up[i] = c - 0x20
    for k in range(_nfmt):
        if _fmt_len[k] != n:
            continue
        for i in range(n):
            if up[i] != _fmt_name[k][i]:
                break
        else:
            return _fmt_code[k]
    return 0


# ------------------------------------------------------------ the walk
cdef bint _walk(const uint8_t* b, int64_t n, int64_t src, int forced, int32_t enc_given,
                bint has_cc, int32_t cc_given, Res* r, bint md_only) noexcept nogil:
    """One record: message._decode (strict) up to the PCF header; with
    ``md_only`` the MQMD alone (mq_pure.decode_row(md_only=True))."""
    cdef bint le, hle
    cdef int32_t enc, cc, md_cc, ver, big, little, hv, c, nvl
    cdef int64_t size, pos, length, avail, p, stop, fat, pcf_end, cfh_at, room
    cdef int code, kind, cur = S_MQMD, nh = 0, i
    cdef int64_t cur_at = 0
    r.nfmt = 0
    r.is_pcf = False
    r.has_eph = False
    # ---- headers.detect_md
    if n < 4:
        return _fail(r, S_MQMD, F_STRUCID, R_TRUNC, 0, 4, n)
    if not _is_id(b, S_MQMD):
        return _fail(r, S_MQMD, F_STRUCID, R_STRUCID, 0, rd32(b, False))
    if has_cc:
        md_cc = cc_given
    elif b[0] == _id_ebcdic[S_MQMD][0] and b[1] == _id_ebcdic[S_MQMD][1] \
            and b[2] == _id_ebcdic[S_MQMD][2] and b[3] == _id_ebcdic[S_MQMD][3]:
        md_cc = 500
    else:
        md_cc = 819
    if forced < 0:
        if n < 8:
            return _fail(r, S_MQMD, F_VERSION, R_TRUNC, 4, 4, _nonneg(n - 4))
        big = rd32(b + 4, False)
        little = rd32(b + 4, True)
        if _vmin[S_MQMD] <= big <= _vmax[S_MQMD]:
            le = False
            enc = 0x111
        elif _vmin[S_MQMD] <= little <= _vmax[S_MQMD]:
            le = True
            enc = 0x222
        else:
            return _fail(r, S_MQMD, F_VERSION, R_NEITHER, 4, big, little)
    else:
        le = forced == 1
        enc = enc_given
    r.own_enc = enc
    r.own_cc = md_cc
    r.md_le = le
    # ---- MQMD.decode
    if n < 8:
        return _fail(r, S_MQMD, F_VERSION, R_TRUNC, 4, 4, _nonneg(n - 4))
    ver = rd32(b + 4, le)
    if ver < _vmin[S_MQMD] or ver > _vmax[S_MQMD]:
        return _fail(r, S_MQMD, F_VERSION, R_VERSION, 4, ver)
    size = _cut_size[CUT_MD2] if ver == 2 else _cut_size[CUT_MD1]
    if n < size:
        return _cut(r, S_MQMD, CUT_MD2 if ver == 2 else CUT_MD1, 0, n)
    r.version = ver
    r.fmt[0].src = src + _fmt_off[S_MQMD]
    r.fmt[0].length = 8
    r.fmt[0].ccsid = md_cc
    r.nfmt = 1
    code = _format_code(b + _fmt_off[S_MQMD], md_cc)
    enc = rd32(b + _enc_off[S_MQMD], le)
    c = rd32(b + _cc_off[S_MQMD], le)
    cc = c if c > 0 else md_cc
    pos = size
    if md_only:  # a unit that carries the MQMD but, by protocol, not the data
        r.body_enc = enc
        r.body_cc = cc
        r.body_off = pos
        return True
    # ---- the chain (message._decode)
    while 1 <= code <= 10:
        if nh >= _MAX_HEADERS:
            return _fail(r, cur, F_FORMAT, R_CHAIN, cur_at + _fmt_off[cur], _MAX_HEADERS)
        kind = code
        hle = _little(enc)
        avail = n - pos
        # Header.decode
        if avail < 4:
            return _fail(r, kind, F_STRUCID, R_TRUNC, pos, 4, _nonneg(avail))
        if not _is_id(b + pos, kind):
            return _fail(r, kind, F_STRUCID, R_STRUCID, pos, rd32(b + pos, False))
        if avail < 8:
            return _fail(r, kind, F_VERSION, R_TRUNC, pos + 4, 4, _nonneg(avail - 4))
        hv = rd32(b + pos + 4, hle)
        if hv < _vmin[kind] or hv > _vmax[kind]:
            return _fail(r, kind, F_VERSION, R_VERSION, pos + 4, hv)
        length = _fixed[kind]
        if _has_sl[kind]:
            if avail < 12:
                return _fail(r, kind, F_STRUCLENGTH, R_TRUNC, pos + 8, 4, _nonneg(avail - 8))
            hv = rd32(b + pos + 8, hle)
            if hv < _fixed[kind]:
                return _fail(r, kind, F_STRUCLENGTH, R_SL_SMALL, pos + 8, hv, _fixed[kind])
            if hv > avail:
                return _fail(r, kind, F_STRUCLENGTH, R_SL_PAST, pos + 8, hv, avail)
            length = hv
        elif avail < length:
            return _cut(r, kind, CUT_XQH if kind == S_MQXQH else CUT_DLH, pos, avail)
        # _decode_rest
        if kind == S_MQXQH:
            if not _is_id(b + pos + 104, S_MQMD):
                return _fail(r, kind, F_MSGDESC, R_XQH_MDID, pos + 104)
            hv = rd32(b + pos + 108, hle)
            if hv != 1:
                return _fail(r, kind, F_MSGDESC, R_XQH_MDVER, pos + 108, hv)
        elif kind == S_MQRFH2:
            p = pos + 36
            stop = pos + length
            while p < stop:
                if stop - p < 4:
                    return _fail(r, kind, F_NVL, R_NVL_ROOM, p, stop - p)
                nvl = rd32(b + p, hle)
                if nvl < 0 or nvl > stop - p - 4:
                    return _fail(r, kind, F_NVL, R_NVL_BAD, p, nvl, stop - p - 4)
                p += 4 + nvl
        # next_governing / format_name
        fat = pos + _fmt_off[kind]
        r.fmt[r.nfmt].src = src + fat
        r.fmt[r.nfmt].length = 8
        r.fmt[r.nfmt].ccsid = cc
        r.nfmt += 1
        code = _format_code(b + fat, cc)
        enc = rd32(b + pos + _enc_off[kind], hle)
        c = rd32(b + pos + _cc_off[kind], hle)
        if c > 0:
            cc = c
        cur = kind
        cur_at = pos
        pos += length
        nh += 1
    r.body_enc = enc
    r.body_cc = cc
    r.body_off = pos
    if code != FMT_PCF and code != FMT_EPH:
        return True
    # ---- the PCF header (pcf._decode_pcf_at, strict, encoding given)
    le = _little(enc)
    avail = n - pos
    pcf_end = n
    if avail >= 4 and _is_id(b + pos, S_MQEPH):
        if avail < 68:
            return _cut(r, S_MQEPH, CUT_EPH, pos, avail)
        hv = rd32(b + pos + 4, le)
        if hv != 1:
            return _fail(r, S_MQEPH, F_VERSION, R_EPH_VERSION, pos + 4, hv)
        hv = rd32(b + pos + 8, le)
        if hv < 68:
            return _fail(r, S_MQEPH, F_STRUCLENGTH, R_EPH_SMALL, pos + 8, hv)
        if hv > avail:
            return _fail(r, S_MQEPH, F_STRUCLENGTH, R_PAST_END, pos + 8, hv, avail)
        pcf_end = pos + hv
        cfh_at = pos + 32
        r.has_eph = True
    else:
        if avail < 36:
            return _cut(r, S_MQCFH, CUT_CFH, pos, avail)
        cfh_at = pos
    for i in range(9):
        r.cfh[i] = rd32(b + cfh_at + 4 * i, le)
    if r.cfh[1] != 36:
        return _fail(r, S_MQCFH, F_STRUCLENGTH, R_CFH_LEN, cfh_at + 4, r.cfh[1])
    if r.cfh[2] < 1 or r.cfh[2] > 3:
        return _fail(r, S_MQCFH, F_VERSION, R_CFH_VERSION, cfh_at + 8, r.cfh[2])
    if r.cfh[8] < 0:
        return _fail(r, S_MQCFH, F_PARAMETERCOUNT, R_NEG_PCOUNT, cfh_at + 32, r.cfh[8])
    room = pcf_end - (cfh_at + 36)
    if <int64_t>r.cfh[8] * _MIN_PARAM > room:
        return _fail(r, S_MQCFH, F_PARAMETERCOUNT, R_PCOUNT_ROOM, cfh_at + 32, r.cfh[8],
                     <int64_t>r.cfh[8] * _MIN_PARAM, _nonneg(room))
    r.is_pcf = True
    return True


# ------------------------------------------------------------ strings
cdef bint _decode_str(const uint8_t* base, StrRef r, int t, vector[char]& out) noexcept nogil:
    """Append the UTF-8 of one string (trailing blanks/NULs trimmed, as
    ccsid.decode_text) using table ``t`` (= _table_or_py(r.ccsid), not
    UNKNOWN_CCSID); False when Python must decode it."""
    cdef int64_t last = r.length
    cdef const uint8_t* s = base + r.src
    cdef size_t at = out.size()
    if t < 0:
        if r.ccsid != 1208 or _ascii_run(s, r.length) != r.length:
            return False
        while last > 0 and (s[last - 1] == 0x20 or s[last - 1] == 0):
            last -= 1
        if last:
            out.resize(at + last)
            memcpy(out.data() + at, s, last)
        return True
    last = _trimmed(t, s, last)
    if not last:
        return True
    out.resize(at + 4 * last)
    out.resize(<size_t>(_tab_copy(t, s, last, out.data() + at) - out.data()))
    return True


cdef void _py_append(const uint8_t* base, StrRef r, vector[char]& out) noexcept with gil:
    """Rare path: a CCSID without a table (or non-ASCII UTF-8): Python decodes."""
    cdef bytes py = _ccsid.decode_text((<const char*>base)[r.src:r.src + r.length], r.ccsid).encode("utf-8")
    cdef const char* p = py
    cdef size_t at = out.size(), k = len(py)
    if k:
        out.resize(at + k)
        memcpy(out.data() + at, p, k)


cdef inline bint _append(const uint8_t* base, StrRef r, int32_t* last_cs, int* last_t,
                         vector[char]& out) noexcept nogil:
    """Append one string; False (nothing appended: the value is null) for a
    CCSID without a converter."""
    if r.ccsid != last_cs[0]:
        last_cs[0] = r.ccsid
        last_t[0] = _table_or_py(r.ccsid)
    if last_t[0] == UNKNOWN_CCSID:
        return False
    if not _decode_str(base, r, last_t[0], out):
        _py_append(base, r, out)
    return True


cdef object _utf8(vector[char]& data):
    """A string column's UTF-8 bytes, as a numpy array (Arrow's 32-bit offsets: at most 2 GiB)."""
    if data.size() >= 2 ** 31:
        raise OverflowError("more than 2 GiB of strings in one column: split the batch")
    text = np.empty(data.size(), dtype=np.uint8)
    if data.size():
        memcpy(cnp.PyArray_DATA(text), data.data(), data.size())
    return text


cdef object _wrap_strings(vector[char]& data, offsets, ok):
    """A pa.string() array: UTF-8 ``data``, int64 ``offsets`` (n+1), validity ``ok``."""
    buf = _utf8(data)
    n = len(offsets) - 1
    return pa.Array.from_buffers(pa.string(), n,
                                 [_bitmap(ok), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(buf)],
                                 null_count=int(n - ok.sum()))


def _bitmap(ok):
    return None if ok.all() else pa.py_buffer(np.packbits(ok, bitorder="little"))


# ------------------------------------------------------------ entry
DEF I_OWN_ENC = 0
DEF I_OWN_CC = 1
DEF I_MD = 2                # 15 MQMD integers
DEF I_BODY_ENC = 17
DEF I_BODY_CC = 18
DEF I_CFH = 19              # 9 MQCFH integers
DEF NI = 28
DEF NS = 10                 # 9 MQMD strings + body_format


def decode_mq_buffers(buf, offsets, *, encoding=None, ccsid=None, valid=None, md_only=None):
    """Decode the IBM MQ messages ``buf[offsets[i]:offsets[i+1]]``.

    ``buf``: any contiguous bytes-like; ``offsets``: n+1 offsets (any
    integer dtype); ``valid``: optional array, 0/False = null record.
    ``encoding`` / ``ccsid``: the MQENC and CCSID the MQMD itself is in
    (None: detected per record, as headers.detect_md).  Returns a
    ``pyarrow.RecordBatch`` in schema ``MQ_MESSAGES``.
    """
    mv, buflen, offsets, valid = _checked_input(buf, offsets, valid)
    cdef const uint8_t[::1] data = mv
    cdef const int64_t[::1] offs = offsets
    cdef const uint8_t[::1] vmask
    cdef Py_ssize_t nrec = offs.shape[0] - 1, i
    cdef bint has_valid = valid is not None
    if has_valid:
        vmask = valid
    cdef const uint8_t[::1] mdonly
    cdef bint has_md_only = md_only is not None
    if has_md_only:
        mdonly = _per_record(md_only, nrec, "md_only")
    cdef int forced = -1 if encoding is None else (1 if (int(encoding) & 0xF) == 2 else 0)
    cdef int32_t enc_given = 0 if encoding is None else <int32_t>int(encoding)
    cdef bint has_cc = ccsid is not None
    cdef int32_t cs = <int32_t>int(ccsid) if has_cc else 0
    cdef const uint8_t* base = &data[0]
    cdef Py_ssize_t n = nrec

    a_ok = np.zeros(n, np.uint8)
    a_raw = np.zeros(n, np.uint8)
    a_v2 = np.zeros(n, np.uint8)
    a_pcf = np.zeros(n, np.uint8)
    a_eph = np.zeros(n, np.uint8)
    a_int = np.zeros((NI, n), np.int32)
    a_i64 = np.zeros((2, n), np.int64)
    a_msgid = np.zeros(n * 24, np.uint8)
    a_correl = np.zeros(n * 24, np.uint8)
    a_acct = np.zeros(n * 32, np.uint8)
    a_group = np.zeros(n * 24, np.uint8)
    a_hfn = np.zeros(n, np.int64)
    e_struct = np.full(n, -1, np.int32)
    e_field = np.zeros(n, np.int32)
    e_reason = np.zeros(n, np.int32)
    e_off = np.zeros(n, np.int64)
    e_args = np.zeros((n, 3), np.int64)
    cdef uint8_t[::1] ok = a_ok, rawok = a_raw, v2 = a_v2, pcf = a_pcf, eph = a_eph
    cdef int32_t[:, ::1] ints = a_int
    cdef int64_t[:, ::1] i64 = a_i64
    cdef uint8_t[::1] msgid = a_msgid, correl = a_correl, acct = a_acct, group = a_group
    cdef int64_t[::1] hfn = a_hfn
    cdef int32_t[::1] es = e_struct, ef = e_field, er = e_reason
    cdef int64_t[::1] eo = e_off
    cdef int64_t[:, ::1] ea = e_args
    # strings are decoded row by row, while the record is in cache: one
    # UTF-8 vector and one offsets row per string column, one for the
    # header_formats values
    cdef vector[vector[char]] sdat
    sdat.resize(NS)
    a_soff = np.zeros((NS, n + 1), np.int64)
    cdef int64_t[:, ::1] soff = a_soff
    cdef vector[char] hdat
    cdef vector[int64_t] hoff
    cdef vector[uint8_t] hval          # header_formats items: 0 = null (no converter)
    hoff.push_back(0)
    a_sok = np.ones((NS, n), np.uint8)  # string values: 0 = null (no converter)
    cdef uint8_t[:, ::1] sok = a_sok
    cdef int32_t last_cs = 0
    cdef int last_t = _table_or_py(0)
    cdef Res r
    cdef int64_t start, ln
    cdef const uint8_t* b
    cdef int k
    cdef bint le
    cdef StrRef ref
    cdef int64_t o_msgid = _MD_OFFS["MsgId"], o_correl = _MD_OFFS["CorrelId"]
    cdef int64_t o_acct = _MD_OFFS["AccountingToken"], o_group = _MD_OFFS["GroupId"]

    for k in range(NS):
        sdat[k].reserve(n * 8)
    with nogil:
        for i in range(n):
            for k in range(NS):
                soff[k, i + 1] = soff[k, i]
            if has_valid and not vmask[i]:
                es[i] = S_RECORD
                ef[i] = F_NONE
                er[i] = R_NULL
                continue
            start = offs[i]
            ln = offs[i + 1] - start
            b = base + start
            if not _walk(b, ln, start, forced, enc_given, has_cc, cs, &r,
                         has_md_only and mdonly[i] != 0):
                rawok[i] = 1
                es[i] = r.err.structure
                ef[i] = r.err.field
                er[i] = r.err.reason
                eo[i] = r.err.offset
                ea[i, 0] = r.err.a0
                ea[i, 1] = r.err.a1
                ea[i, 2] = r.err.a2
                continue
            ok[i] = 1
            le = r.md_le
            ints[I_OWN_ENC, i] = r.own_enc
            ints[I_OWN_CC, i] = r.own_cc
            if r.version == 2:
                v2[i] = 1
            for k in range(NINT):
                if r.version == 2 or not _md_int_v2[k]:
                    ints[I_MD + k, i] = rd32(b + _md_int_off[k], le)
            memcpy(&msgid[i * 24], b + o_msgid, 24)
            memcpy(&correl[i * 24], b + o_correl, 24)
            memcpy(&acct[i * 32], b + o_acct, 32)
            if r.version == 2:
                memcpy(&group[i * 24], b + o_group, 24)
            for k in range(NCHAR):
                ref.src = start + _md_char_off[k]
                ref.length = _md_char_len[k]
                ref.ccsid = r.own_cc
                sok[k, i] = _append(base, ref, &last_cs, &last_t, sdat[k])
                soff[k, i + 1] = sdat[k].size()
            sok[NCHAR, i] = _append(base, r.fmt[r.nfmt - 1], &last_cs, &last_t, sdat[NCHAR])
            soff[NCHAR, i + 1] = sdat[NCHAR].size()
            for k in range(r.nfmt - 1):
                hval.push_back(_append(base, r.fmt[k], &last_cs, &last_t, hdat))
                hoff.push_back(hdat.size())
            hfn[i] = r.nfmt - 1
            ints[I_BODY_ENC, i] = r.body_enc
            ints[I_BODY_CC, i] = r.body_cc
            i64[0, i] = r.body_off
            i64[1, i] = ln - r.body_off
            if r.is_pcf:
                pcf[i] = 1
                if r.has_eph:
                    eph[i] = 1
                for k in range(9):
                    ints[I_CFH + k, i] = r.cfh[k]

    # ---- columns, handed to Arrow in one import (arrow_export.pxi): three validity
    # bitmaps (decoded, MQMD version 2, PCF), values zero-copy
    cdef BatchExport ex = BatchExport(len(MQ_MESSAGES), n)
    cdef Py_ssize_t nbm = (n + 7) >> 3
    bits = np.zeros(4 * nbm + 1, np.uint8)   # decoded, version 2, PCF, pcf_has_eph's values
    ex.keep(bits)
    scratch = np.empty(n + 1, np.uint8)
    cdef uint8_t* sp = <uint8_t*>cnp.PyArray_DATA(scratch)
    cdef uint8_t* bp = <uint8_t*>cnp.PyArray_DATA(bits)
    cdef uint8_t* b_ok = bp
    cdef uint8_t* b_v2 = bp + nbm
    cdef uint8_t* b_pcf = bp + 2 * nbm
    cdef int64_t nok = 0, nv2 = 0, npcf = 0
    with nogil:
        for i in range(n):
            v2[i] = v2[i] & ok[i]
            nok += ok[i]
            nv2 += v2[i]
            npcf += pcf[i]
        if n:
            pack_bits(&ok[0], n, b_ok)
            pack_bits(&v2[0], n, b_v2)
            pack_bits(&pcf[0], n, b_pcf)
            pack_bits(&eph[0], n, bp + 3 * nbm)
    record = np.arange(n, dtype=np.int64)
    ex.column(_POS["record"], 0, 2, NULL, cnp.PyArray_DATA(record), NULL)
    ex.keep(record)
    cdef char* ip = <char*>cnp.PyArray_DATA(a_int)
    cdef char* lp = <char*>cnp.PyArray_DATA(a_i64)
    ex.keep(a_int)
    ex.keep(a_i64)
    ex.column(_POS["md_own_encoding"], n - nok, 2, b_ok, ip + I_OWN_ENC * n * 4, NULL)
    ex.column(_POS["md_own_ccsid"], n - nok, 2, b_ok, ip + I_OWN_CC * n * 4, NULL)
    for k, name in enumerate(_INT_COLS):
        if _md_int_v2[k]:
            ex.column(_POS[name], n - nv2, 2, b_v2, ip + (I_MD + k) * n * 4, NULL)
        else:
            ex.column(_POS[name], n - nok, 2, b_ok, ip + (I_MD + k) * n * 4, NULL)
    for name, arr in (("md_msg_id", a_msgid), ("md_correl_id", a_correl), ("md_accounting_token", a_acct)):
        ex.column(_POS[name], n - nok, 2, b_ok, cnp.PyArray_DATA(arr), NULL)
        ex.keep(arr)
    ex.column(_POS["md_group_id"], n - nv2, 2, b_v2, cnp.PyArray_DATA(a_group), NULL)
    ex.keep(a_group)
    for k, name in enumerate(_CHAR_COLS):
        _put_strings(ex, _POS[name], sdat[k], a_soff[k], &ok[0] if n else NULL, &sok[k, 0] if n else NULL, n, sp)
    _put_strings(ex, _POS["body_format"], sdat[NCHAR], a_soff[NCHAR], &ok[0] if n else NULL,
                 &sok[NCHAR, 0] if n else NULL, n, sp)
    nh = hoff.size() - 1
    h_offsets = np.empty(nh + 1, np.int64)
    cdef int64_t[::1] hview = h_offsets
    memcpy(&hview[0], hoff.data(), (nh + 1) * sizeof(int64_t))
    h_ok = np.ones(nh, np.uint8)
    cdef uint8_t[::1] hokv = h_ok
    if nh:
        memcpy(&hokv[0], hval.data(), nh)
    child = _wrap_strings(hdat, h_offsets, h_ok.astype(bool))
    loffs = np.zeros(n + 1, np.int64)
    np.cumsum(a_hfn, out=loffs[1:])
    ex.nested(_POS["header_formats"], pa.Array.from_buffers(
        pa.list_(pa.string()), n, [None if nok == n else pa.py_buffer(bits[:nbm]), pa.py_buffer(loffs.astype(np.int32))],
        null_count=n - nok, children=[child]))
    ex.column(_POS["body_encoding"], n - nok, 2, b_ok, ip + I_BODY_ENC * n * 4, NULL)
    ex.column(_POS["body_ccsid"], n - nok, 2, b_ok, ip + I_BODY_CC * n * 4, NULL)
    ex.column(_POS["body_offset"], n - nok, 2, b_ok, lp, NULL)
    ex.column(_POS["body_length"], n - nok, 2, b_ok, lp + n * 8, NULL)
    ex.column(_POS["pcf_has_eph"], n - npcf, 2, b_pcf, bp + 3 * nbm, NULL)
    for name, idx in zip(_PCF_COLS, _PCF_INDEX):
        k = idx
        ex.column(_POS[name], n - npcf, 2, b_pcf, ip + (I_CFH + k) * n * 4, NULL)
    errors = _error_columns(e_struct, e_field, e_reason, e_off, e_args, a_raw.astype(bool), buf, offsets)
    for name, arr in errors.items():
        ex.array(_POS[name], arr)
    return ex.batch(MQ_MESSAGES)


#: each column's place in MQ_MESSAGES
_POS = {f.name: i for i, f in enumerate(MQ_MESSAGES)}


cdef void _put_strings(BatchExport ex, Py_ssize_t i, vector[char]& data, offsets, const uint8_t* ok,
                       const uint8_t* ok2, Py_ssize_t n, uint8_t* scratch) except *:
    """Column ``i``: a pa.string() of UTF-8 ``data`` and int64 ``offsets`` (n+1),
    valid where ``ok`` and ``ok2`` are both set (``scratch``: n bytes)."""
    text = _utf8(data)
    offs32 = offsets.astype(np.int32)
    bitmap = np.empty(((n + 7) >> 3) + 1, np.uint8)
    cdef uint8_t* both = scratch
    cdef uint8_t* bm = <uint8_t*>cnp.PyArray_DATA(bitmap)
    cdef int64_t valid = 0
    cdef Py_ssize_t j
    with nogil:
        for j in range(n):
            both[j] = ok[j] & ok2[j]
            valid += both[j]
        if n:
            pack_bits(both, n, bm)
    ex.column(i, n - valid, 3, cnp.PyArray_DATA(bitmap), cnp.PyArray_DATA(offs32), cnp.PyArray_DATA(text))
    ex.keep(text)
    ex.keep(offs32)
    ex.keep(bitmap)


def _error_columns(e_struct, e_field, e_reason, e_off, e_args, raw_ok, buf, offsets):
    """error_structure/field/offset/reason and raw: only failing records
    become Python objects (scattered into place with a vectorised take)."""
    n = len(e_struct)
    failed = e_struct >= 0
    names = ("error_structure", "error_field", "error_offset", "error_reason", "raw")
    if not failed.any():
        return dict(zip(names, _errors.no_error_columns(n)))
    rows = np.flatnonzero(failed)
    s, f, rs, raw = [], [], [], []
    mv = memoryview(buf).cast("B") if len(buf) else b""
    for i in rows.tolist():
        st = int(e_struct[i])
        s.append(STRUCTURES[st])
        f.append(FIELDS[e_field[i]])
        rs.append(_reason(st, int(e_reason[i]), e_args[i].tolist()))
        raw.append(bytes(mv[int(offsets[i]):int(offsets[i + 1])]) if raw_ok[i] else None)
    where = _ak.from_numpy(np.cumsum(failed) - 1, pa.int64(), ~failed)
    return dict(zip(names, (_ak.take(pa.array(s, pa.string()), where), _ak.take(pa.array(f, pa.string()), where),
                            _ak.from_numpy(e_off, pa.int64(), ~failed),
                            _ak.take(pa.array(rs, pa.string()), where), _ak.take(pa.array(raw, pa.binary()), where))))
