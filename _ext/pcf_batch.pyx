# distutils: language = c++
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled batch decoder for IBM MQ PCF bodies (MQCFH or MQEPH first).

Many records in (one buffer + int64 offsets), two Arrow record batches out
(schemas in ``mqcodec.batch.schema``): one row per record and one row per
PCF parameter, in long form.  The walk runs without the GIL and creates no
Python object per record or per parameter; columns grow in C++ vectors and
are wrapped once with ``pa.Array.from_buffers``.

This is the compiled twin of ``mqcodec.batch.pcf_pure`` (which runs
``mqcodec.ibmmq.pcf.decode_pcf`` record by record): every check below is
made in the same order as pcf.py makes it, with the same structure, field,
offset and reason, so that both implementations give identical tables
(tests/test_batch_equivalence.py).  Change the two together.

Strings are decoded through 256-entry byte -> UTF-8 tables built once from
the same codecs the pure path uses (``mqcodec.ccsid``), so both paths give
the same text, U+FFFD replacements included.  Strings in a CCSID with no
single-byte table (UTF-8 with non-ASCII bytes, UTF-16, DBCS, unknown
CCSIDs) are decoded by ``mqcodec.ccsid.decode_text`` under the GIL.

Errors are recorded per record as codes (structure, field, reason, up to
three integer arguments) and an offset, and turned into the ``error_*``
columns after the walk (tables in ``mqcodec.batch.errors``); a failing
record keeps its raw bytes and its parameters decoded so far are withdrawn.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libcpp.vector cimport vector

import numpy as np
cimport numpy as cnp
import pyarrow as pa

from mqcodec import ccsid as _ccsid
from mqcodec.batch import errors as _errors

cnp.import_array()

# ---------------------------------------------------------------- constants
DEF MAX_DEPTH = 64          # pcf.MAX_GROUP_DEPTH
DEF MIN_PARAM = 12          # pcf.MIN_PARAMETER_LENGTH
DEF DEFAULT_CCSID = 1208    # pcf.DEFAULT_CCSID
DEF EBCDIC_EPH_CCSID = 500  # CCSID inherited when the MQEPH StrucId is EBCDIC
DEF MAX_TABLES = 96

cdef enum:
    T_INTEGER = 3
    T_STRING = 4
    T_INTEGER_LIST = 5
    T_STRING_LIST = 6
    T_USER = 8
    T_BYTE_STRING = 9
    T_INTEGER_FILTER = 13
    T_STRING_FILTER = 14
    T_BYTE_STRING_FILTER = 15
    T_GROUP = 20
    T_INTEGER64 = 23
    T_INTEGER64_LIST = 25

# structure codes (batch/errors.py STRUCTURES)
DEF S_MQCFH = 0
DEF S_MQEPH = 1
DEF S_PARAM = 2
DEF S_MQCFGR = 12
DEF S_RECORD = 15
# field codes (batch/errors.py FIELDS)
DEF F_NONE = 0
DEF F_TYPE = 1
DEF F_STRUCLENGTH = 2
DEF F_VERSION = 3
DEF F_PARAMETERCOUNT = 9
DEF F_COUNT = 24
DEF F_STRINGLENGTH = 25
DEF F_FILTERVALUELENGTH = 26
# reason codes (batch/errors.py REASONS)
DEF R_DETECT_TRUNC = 0
DEF R_DETECT_NONE = 1
DEF R_FIXED_TRUNC = 2
DEF R_EPH_VERSION = 3
DEF R_EPH_SMALL = 4
DEF R_PAST_END = 5
DEF R_CFH_LEN = 6
DEF R_CFH_VERSION = 7
DEF R_NEG_PCOUNT = 8
DEF R_PCOUNT_ROOM = 9
DEF R_EPH_SLACK = 10
DEF R_PARAM_TRUNC = 11
DEF R_SLEN_TRUNC = 12
DEF R_UNKNOWN_TYPE = 13
DEF R_TOO_SMALL = 14
DEF R_NEG_COUNT = 15
DEF R_IL_COUNT = 16
DEF R_NEG_STRINGLENGTH = 17
DEF R_NEG_FVL = 18
DEF R_FIT_STRINGLENGTH = 19
DEF R_FIT_FVL = 20
DEF R_SL_FIT = 21
DEF R_SL_EMPTY = 22
DEF R_TOO_DEEP = 23
DEF R_NULL = 24

cdef struct Err:
    int structure
    int field
    int reason
    int64_t offset
    int64_t a0
    int64_t a1
    int64_t a2

# MQEPH field offsets and codes (errors.FIELDS), in declaration order
cdef int _EPH_OFF[16]
cdef int _EPH_CODE[16]
_eph_names = ["StrucId", "Version", "StrucLength", "Encoding", "CodedCharSetId", "Format", "Flags"]
_eph_offs = [0, 4, 8, 12, 16, 20, 28]
for _k in range(7):
    _EPH_OFF[_k] = _eph_offs[_k]
    _EPH_CODE[_k] = _errors.FIELDS.index(_eph_names[_k])
for _k in range(9):
    _EPH_OFF[7 + _k] = 32 + 4 * _k
    _EPH_CODE[7 + _k] = _errors.FIELDS.index("PCFHeader." + _errors.FIELDS[1 + _k])
# MQCFH field k is at 4*k, code 1+k
cdef int _CFH_OFF[9]
cdef int _CFH_CODE[9]
for _k in range(9):
    _CFH_OFF[_k] = 4 * _k
    _CFH_CODE[_k] = 1 + _k

# ------------------------------------------------------------ string tables
cdef int32_t _tab_ccsid[MAX_TABLES]
cdef uint8_t _tab_utf8[MAX_TABLES][256][4]
cdef uint8_t _tab_len[MAX_TABLES][256]
cdef uint8_t _tab_trim[MAX_TABLES][256]      # 1 where the byte decodes to ' ' or NUL
cdef int _ntab = 0


def _build_tables():
    global _ntab
    _ntab = 0
    for cs, name in sorted(_ccsid.CCSID_CODECS.items()):
        if not _ccsid.is_single_byte(cs) or _ntab >= MAX_TABLES:
            continue
        _tab_ccsid[_ntab] = cs
        for b in range(256):
            ch = bytes([b]).decode(name, "replace")
            enc = ch.encode("utf-8")
            _tab_len[_ntab][b] = len(enc)
            for i in range(len(enc)):
                _tab_utf8[_ntab][b][i] = enc[i]
            _tab_trim[_ntab][b] = 1 if ch in (" ", "\x00") else 0
        _ntab += 1


_build_tables()


cdef inline int _table_for(int32_t cs) noexcept nogil:
    cdef int i
    for i in range(_ntab):
        if _tab_ccsid[i] == cs:
            return i
    return -1


# ------------------------------------------------------------------ reading
cdef inline int32_t rd32(const uint8_t* p, bint le) noexcept nogil:
    cdef uint32_t v
    if le:
        v = (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)
    else:
        v = (<uint32_t>p[3]) | (<uint32_t>p[2] << 8) | (<uint32_t>p[1] << 16) | (<uint32_t>p[0] << 24)
    return <int32_t>v


cdef inline int64_t rd64(const uint8_t* p, bint le) noexcept nogil:
    cdef uint64_t lo, hi
    if le:
        lo = <uint32_t>rd32(p, 1)
        hi = <uint32_t>rd32(p + 4, 1)
    else:
        hi = <uint32_t>rd32(p, 0)
        lo = <uint32_t>rd32(p + 4, 0)
    return <int64_t>((hi << 32) | lo)


# ---------------------------------------------------------- column builders
cdef struct StrRef:
    int64_t src          # absolute offset of the string in the input buffer
    int32_t length       # bytes
    int32_t ccsid


cdef class _Out:
    # per-record (headers) columns
    cdef vector[int64_t] h_record
    cdef vector[int32_t] h_encoding
    cdef vector[uint8_t] h_eph
    cdef vector[int32_t] h_fields        # 9 MQCFH ints per record
    cdef vector[uint8_t] h_ok            # 1 = decoded (header columns set)
    cdef vector[uint8_t] h_raw           # 1 = failed and not null (raw bytes kept)
    cdef vector[int64_t] h_end
    cdef vector[int32_t] e_struct        # -1 = no error
    cdef vector[int32_t] e_field
    cdef vector[int32_t] e_reason
    cdef vector[int64_t] e_offset
    cdef vector[int64_t] e_args          # 3 per record

    cdef void push_err(self, Err e) noexcept nogil:
        self.e_struct.push_back(e.structure); self.e_field.push_back(e.field)
        self.e_reason.push_back(e.reason); self.e_offset.push_back(e.offset)
        self.e_args.push_back(e.a0); self.e_args.push_back(e.a1); self.e_args.push_back(e.a2)
    # per-parameter columns
    cdef vector[int64_t] p_record
    cdef vector[int32_t] p_index
    cdef vector[int32_t] p_parent
    cdef vector[int32_t] p_depth
    cdef vector[int32_t] p_param
    cdef vector[int32_t] p_type
    cdef vector[int64_t] p_int
    cdef vector[uint8_t] p_int_ok
    cdef vector[int32_t] p_count
    cdef vector[uint8_t] p_count_ok
    cdef vector[int32_t] p_op
    cdef vector[uint8_t] p_op_ok
    cdef vector[int32_t] p_ccsid
    cdef vector[uint8_t] p_ccsid_ok
    cdef vector[int64_t] p_str_ref       # index into strs, -1 = null
    cdef vector[int64_t] p_bytes_src     # absolute offset, -1 = null
    cdef vector[int32_t] p_bytes_len
    cdef vector[int64_t] p_ilist_start   # into ilist, -1 = null
    cdef vector[int32_t] p_ilist_len
    cdef vector[int64_t] p_slist_start   # into strs, -1 = null
    cdef vector[int32_t] p_slist_len
    cdef vector[int64_t] ilist
    cdef vector[StrRef] strs

    cdef void truncate_params(self, size_t n, size_t nstr, size_t nilist) noexcept nogil:
        self.p_record.resize(n); self.p_index.resize(n); self.p_parent.resize(n)
        self.p_depth.resize(n); self.p_param.resize(n); self.p_type.resize(n)
        self.p_int.resize(n); self.p_int_ok.resize(n); self.p_count.resize(n)
        self.p_count_ok.resize(n); self.p_op.resize(n); self.p_op_ok.resize(n)
        self.p_ccsid.resize(n); self.p_ccsid_ok.resize(n); self.p_str_ref.resize(n)
        self.p_bytes_src.resize(n); self.p_bytes_len.resize(n); self.p_ilist_start.resize(n)
        self.p_ilist_len.resize(n); self.p_slist_start.resize(n); self.p_slist_len.resize(n)
        self.strs.resize(nstr); self.ilist.resize(nilist)

    cdef size_t new_param(self, int64_t rec, int32_t idx, int32_t parent, int32_t depth,
                          int32_t param, int32_t typ) noexcept nogil:
        self.p_record.push_back(rec); self.p_index.push_back(idx); self.p_parent.push_back(parent)
        self.p_depth.push_back(depth); self.p_param.push_back(param); self.p_type.push_back(typ)
        self.p_int.push_back(0); self.p_int_ok.push_back(0)
        self.p_count.push_back(0); self.p_count_ok.push_back(0)
        self.p_op.push_back(0); self.p_op_ok.push_back(0)
        self.p_ccsid.push_back(0); self.p_ccsid_ok.push_back(0)
        self.p_str_ref.push_back(-1)
        self.p_bytes_src.push_back(-1); self.p_bytes_len.push_back(0)
        self.p_ilist_start.push_back(-1); self.p_ilist_len.push_back(0)
        self.p_slist_start.push_back(-1); self.p_slist_len.push_back(0)
        return self.p_record.size() - 1


# ------------------------------------------------------------------ walking
cdef struct Walk:
    const uint8_t* b         # the record's first byte (offsets below are relative to it)
    int64_t abs              # absolute offset of the record in the input buffer
    int64_t n                # record length
    int64_t rec
    bint le
    int32_t ccsid            # inherited CCSID for strings with CodedCharSetId <= 0
    int32_t next_index
    Err err


cdef inline bint _fail(Walk* w, int structure, int field, int reason, int64_t off,
                       int64_t a0=0, int64_t a1=0, int64_t a2=0) noexcept nogil:
    w.err.structure = structure
    w.err.field = field
    w.err.reason = reason
    w.err.offset = off
    w.err.a0 = a0
    w.err.a1 = a1
    w.err.a2 = a2
    return False


cdef inline int64_t _nonneg(int64_t v) noexcept nogil:
    return v if v > 0 else 0


cdef inline int _struct_code(int32_t typ) noexcept nogil:
    # structure-name index for a parameter of this Type (see batch/errors.py STRUCTURES)
    if typ == T_INTEGER: return 3
    if typ == T_STRING: return 4
    if typ == T_INTEGER_LIST: return 5
    if typ == T_STRING_LIST: return 6
    if typ == T_USER: return 7
    if typ == T_BYTE_STRING: return 8
    if typ == T_INTEGER_FILTER: return 9
    if typ == T_STRING_FILTER: return 10
    if typ == T_BYTE_STRING_FILTER: return 11
    if typ == T_GROUP: return 12
    if typ == T_INTEGER64: return 13
    if typ == T_INTEGER64_LIST: return 14
    return S_PARAM


cdef inline int32_t _fixed_len(int32_t typ) noexcept nogil:
    # size of the fixed part of each declaration in pcf.py (MQCFT_USER: Type,
    # StrucLength, Parameter = 12)
    if typ == T_INTEGER: return 16
    if typ == T_STRING: return 20
    if typ == T_INTEGER_LIST: return 16
    if typ == T_STRING_LIST: return 24
    if typ == T_USER: return 12
    if typ == T_BYTE_STRING: return 16
    if typ == T_INTEGER_FILTER: return 20
    if typ == T_STRING_FILTER: return 24
    if typ == T_BYTE_STRING_FILTER: return 20
    if typ == T_GROUP: return 16
    if typ == T_INTEGER64: return 24
    if typ == T_INTEGER64_LIST: return 16
    return -1


cdef inline bint _is_header_type(int32_t t) noexcept nogil:
    # MQCFH.Type values of a PCF message (cmqcfc.h MQCFT_*; pcf._HEADER_TYPES)
    return (t == 1 or t == 2 or t == 7 or t == 8 or t == 10 or t == 12 or t == 16 or t == 17
            or t == 18 or t == 19 or t == 21 or t == 22 or t == 26 or t == 27)


cdef inline int _score(const uint8_t* p, bint le) noexcept nogil:
    # plausibility of an MQCFH in this byte order (pcf._looks_like_cfh)
    cdef int32_t t = rd32(p, le), sl = rd32(p + 4, le), ver = rd32(p + 8, le)
    cdef int s = 0
    if sl == 36:
        s += 4
    if 1 <= ver <= 3:
        s += 2
    if _is_header_type(t):
        s += 1
    return s


cdef inline int32_t _eff_ccsid(int32_t field, int32_t inherited) noexcept nogil:
    # 0 = MQCCSI_DEFAULT and negative values inherit (pcf._eff_ccsid)
    return field if field > 0 else inherited


cdef bint _check_count(Walk* w, int32_t count, int64_t pos, int64_t end, int structure,
                       int64_t field_off) noexcept nogil:
    # pcf._check_count
    cdef int64_t room = end - pos
    if count < 0:
        return _fail(w, structure, F_PARAMETERCOUNT, R_NEG_PCOUNT, field_off, count)
    if <int64_t>count * MIN_PARAM > room:
        return _fail(w, structure, F_PARAMETERCOUNT, R_PCOUNT_ROOM, field_off,
                     count, <int64_t>count * MIN_PARAM, _nonneg(room))
    return True


cdef bint _truncated(Walk* w, int structure, const int* offs, const int* codes, int nf,
                     int64_t size, int64_t avail) noexcept nogil:
    # pcf._truncated: name the last field that starts at or before the cut
    cdef int k, field = codes[0]
    cdef int64_t at = 0
    for k in range(nf):
        if offs[k] <= avail:
            field = codes[k]
            at = offs[k]
    return _fail(w, structure, field, R_FIXED_TRUNC, at, size, _nonneg(avail))


cdef bint _params(_Out o, Walk* w, int64_t pos, int64_t end, int32_t count, int32_t parent,
                  int32_t depth, int64_t* out_pos) noexcept nogil:
    """Decode ``count`` parameters from ``pos`` (pcf._decode_list /
    _decode_parameter, check for check); groups recurse, depth-bounded."""
    cdef const uint8_t* b = w.b
    cdef int32_t i, typ, slen, fixed, n, k, cs, strlen_, param, nchild, idx
    cdef int64_t p = pos, q, avail
    cdef size_t row
    cdef StrRef ref
    cdef int sc
    for i in range(count):
        avail = end - p
        if avail < 4:
            return _fail(w, S_PARAM, F_TYPE, R_PARAM_TRUNC, p, MIN_PARAM, _nonneg(avail))
        typ = rd32(b + p, w.le)
        sc = _struct_code(typ)
        if avail < 8:
            return _fail(w, sc, F_STRUCLENGTH, R_SLEN_TRUNC, p + 4, avail - 4)
        slen = rd32(b + p + 4, w.le)
        fixed = _fixed_len(typ)
        if fixed < 0:
            return _fail(w, S_PARAM, F_TYPE, R_UNKNOWN_TYPE, p, typ)
        if slen < fixed:
            return _fail(w, sc, F_STRUCLENGTH, R_TOO_SMALL, p + 4, slen, fixed)
        if slen > avail:
            return _fail(w, sc, F_STRUCLENGTH, R_PAST_END, p + 4, slen, avail)
        param = rd32(b + p + 8, w.le)
        idx = w.next_index
        row = o.new_param(w.rec, idx, parent, depth, param, typ)
        w.next_index += 1
        if typ == T_INTEGER:
            o.p_int[row] = rd32(b + p + 12, w.le); o.p_int_ok[row] = 1
        elif typ == T_INTEGER64:
            o.p_int[row] = rd64(b + p + 16, w.le); o.p_int_ok[row] = 1
        elif typ == T_INTEGER_LIST or typ == T_INTEGER64_LIST:
            n = rd32(b + p + 12, w.le)
            k = 4 if typ == T_INTEGER_LIST else 8
            if n < 0:
                return _fail(w, sc, F_COUNT, R_NEG_COUNT, p + 12, n)
            if <int64_t>n * k > slen - 16:
                return _fail(w, sc, F_COUNT, R_IL_COUNT, p + 12, n, <int64_t>n * k, slen - 16)
            o.p_count[row] = n; o.p_count_ok[row] = 1
            o.p_ilist_start[row] = o.ilist.size(); o.p_ilist_len[row] = n
            for q in range(n):
                if k == 4:
                    o.ilist.push_back(rd32(b + p + 16 + 4 * q, w.le))
                else:
                    o.ilist.push_back(rd64(b + p + 16 + 8 * q, w.le))
        elif typ == T_STRING or typ == T_STRING_FILTER:
            if typ == T_STRING:
                cs = rd32(b + p + 12, w.le)
                strlen_ = rd32(b + p + 16, w.le)
                q = p + 20
                if strlen_ < 0:
                    return _fail(w, sc, F_STRINGLENGTH, R_NEG_STRINGLENGTH, p + 16, strlen_)
                if strlen_ > slen - 20:
                    return _fail(w, sc, F_STRINGLENGTH, R_FIT_STRINGLENGTH, p + 16, strlen_, slen)
            else:
                strlen_ = rd32(b + p + 20, w.le)
                if strlen_ < 0:
                    return _fail(w, sc, F_FILTERVALUELENGTH, R_NEG_FVL, p + 20, strlen_)
                if strlen_ > slen - 24:
                    return _fail(w, sc, F_FILTERVALUELENGTH, R_FIT_FVL, p + 20, strlen_, slen)
                o.p_op[row] = rd32(b + p + 12, w.le); o.p_op_ok[row] = 1
                cs = rd32(b + p + 16, w.le)
                q = p + 24
            o.p_ccsid[row] = cs; o.p_ccsid_ok[row] = 1
            ref.src = w.abs + q; ref.length = strlen_; ref.ccsid = _eff_ccsid(cs, w.ccsid)
            o.p_str_ref[row] = o.strs.size()
            o.strs.push_back(ref)
        elif typ == T_STRING_LIST:
            cs = rd32(b + p + 12, w.le)
            n = rd32(b + p + 16, w.le)
            strlen_ = rd32(b + p + 20, w.le)
            if n < 0:
                return _fail(w, sc, F_COUNT, R_NEG_COUNT, p + 16, n)
            if strlen_ < 0:
                return _fail(w, sc, F_STRINGLENGTH, R_NEG_STRINGLENGTH, p + 20, strlen_)
            if <int64_t>n * strlen_ > slen - 24:
                return _fail(w, sc, F_STRINGLENGTH, R_SL_FIT, p + 20, n, strlen_, slen)
            if strlen_ == 0 and n > w.n:
                return _fail(w, sc, F_COUNT, R_SL_EMPTY, p + 16, n)
            o.p_ccsid[row] = cs; o.p_ccsid_ok[row] = 1
            o.p_count[row] = n; o.p_count_ok[row] = 1
            o.p_slist_start[row] = o.strs.size(); o.p_slist_len[row] = n
            ref.length = strlen_; ref.ccsid = _eff_ccsid(cs, w.ccsid)
            for q in range(n):
                ref.src = w.abs + p + 24 + q * strlen_
                o.strs.push_back(ref)
        elif typ == T_BYTE_STRING:
            strlen_ = rd32(b + p + 12, w.le)
            if strlen_ < 0:
                return _fail(w, sc, F_STRINGLENGTH, R_NEG_STRINGLENGTH, p + 12, strlen_)
            if strlen_ > slen - 16:
                return _fail(w, sc, F_STRINGLENGTH, R_FIT_STRINGLENGTH, p + 12, strlen_, slen)
            o.p_bytes_src[row] = w.abs + p + 16; o.p_bytes_len[row] = strlen_
        elif typ == T_BYTE_STRING_FILTER:
            strlen_ = rd32(b + p + 16, w.le)
            if strlen_ < 0:
                return _fail(w, sc, F_FILTERVALUELENGTH, R_NEG_FVL, p + 16, strlen_)
            if strlen_ > slen - 20:
                return _fail(w, sc, F_FILTERVALUELENGTH, R_FIT_FVL, p + 16, strlen_, slen)
            o.p_op[row] = rd32(b + p + 12, w.le); o.p_op_ok[row] = 1
            o.p_bytes_src[row] = w.abs + p + 20; o.p_bytes_len[row] = strlen_
        elif typ == T_INTEGER_FILTER:
            o.p_op[row] = rd32(b + p + 12, w.le); o.p_op_ok[row] = 1
            o.p_int[row] = rd32(b + p + 16, w.le); o.p_int_ok[row] = 1
        elif typ == T_USER:
            # opaque: the bytes after Parameter, up to StrucLength
            o.p_bytes_src[row] = w.abs + p + 12; o.p_bytes_len[row] = slen - 12
        elif typ == T_GROUP:
            if depth >= MAX_DEPTH:
                return _fail(w, S_MQCFGR, F_NONE, R_TOO_DEEP, p, MAX_DEPTH)
            nchild = rd32(b + p + 12, w.le)
            if not _check_count(w, nchild, p + slen, end, S_MQCFGR, p + 12):
                return False
            o.p_count[row] = nchild; o.p_count_ok[row] = 1
            # never skip a group by its StrucLength: its children follow it
            if not _params(o, w, p + slen, end, nchild, idx, depth + 1, &q):
                return False
            p = q
            continue
        p += slen
    out_pos[0] = p
    return True


cdef bint _walk_record(_Out o, Walk* w, int forced_le, bint has_ccsid, int32_t ccsid,
                       int32_t* cfh, bint* eph_out, int64_t* end_out) noexcept nogil:
    """One record (pcf._decode_pcf_at in strict mode, check for check)."""
    cdef const uint8_t* b = w.b
    cdef int64_t n = w.n, off = 0, avail = n, pcf_end, cfh_at, pos, q
    cdef int le = forced_le, sb, sl_
    cdef bint is_eph = False, ebcdic = False
    cdef int32_t vb, vl, v, sl
    cdef int i
    if n >= 4:
        if b[0] == 0x45 and b[1] == 0x50 and b[2] == 0x48 and b[3] == 0x20:      # "EPH "
            is_eph = True
        elif b[0] == 0xC5 and b[1] == 0xD7 and b[2] == 0xC8 and b[3] == 0x40:    # "EPH " in EBCDIC
            is_eph = True
            ebcdic = True
    # ---- byte order (pcf._detect) unless the caller gave the Encoding
    if le < 0:
        if avail >= 8 and is_eph:
            vb = rd32(b + 4, 0)
            vl = rd32(b + 4, 1)
            if vb == 1 and vl != 1:
                le = 0
            elif vl == 1 and vb != 1:
                le = 1
            elif avail >= 32 + 12:
                off = 32
                avail -= 32
        if le < 0:
            if avail < 12:
                return _fail(w, S_MQCFH, F_TYPE, R_DETECT_TRUNC, off, _nonneg(avail))
            sb = _score(b + off, 0)
            sl_ = _score(b + off, 1)
            if sb == sl_:
                return _fail(w, S_MQCFH, F_STRUCLENGTH, R_DETECT_NONE, off + 4)
            le = 0 if sb > sl_ else 1
    w.le = le
    if has_ccsid:
        w.ccsid = ccsid
    elif ebcdic:
        w.ccsid = EBCDIC_EPH_CCSID
    else:
        w.ccsid = DEFAULT_CCSID
    # ---- MQEPH
    pcf_end = n
    if is_eph:
        if n < 68:
            return _truncated(w, S_MQEPH, _EPH_OFF, _EPH_CODE, 16, 68, n)
        v = rd32(b + 4, le)
        if v != 1:
            return _fail(w, S_MQEPH, F_VERSION, R_EPH_VERSION, 4, v)
        sl = rd32(b + 8, le)
        if sl < 68:
            return _fail(w, S_MQEPH, F_STRUCLENGTH, R_EPH_SMALL, 8, sl)
        if sl > n:
            return _fail(w, S_MQEPH, F_STRUCLENGTH, R_PAST_END, 8, sl, n)
        pcf_end = sl
        cfh_at = 32
    else:
        if n < 36:
            return _truncated(w, S_MQCFH, _CFH_OFF, _CFH_CODE, 9, 36, n)
        cfh_at = 0
    # ---- MQCFH
    for i in range(9):
        cfh[i] = rd32(b + cfh_at + 4 * i, le)
    if cfh[1] != 36:
        return _fail(w, S_MQCFH, F_STRUCLENGTH, R_CFH_LEN, cfh_at + 4, cfh[1])
    if cfh[2] < 1 or cfh[2] > 3:
        return _fail(w, S_MQCFH, F_VERSION, R_CFH_VERSION, cfh_at + 8, cfh[2])
    pos = cfh_at + 36
    if not _check_count(w, cfh[8], pos, pcf_end, S_MQCFH, cfh_at + 32):
        return False
    if not _params(o, w, pos, pcf_end, cfh[8], -1, 0, &q):
        return False
    if is_eph and q != pcf_end:
        return _fail(w, S_MQEPH, F_STRUCLENGTH, R_EPH_SLACK, 8, pcf_end - q)
    eph_out[0] = is_eph
    end_out[0] = q
    return True


cdef void _record(_Out o, const uint8_t* base, int64_t start, int64_t n, int64_t rec,
                  int forced_le, bint has_ccsid, int32_t ccsid, int32_t enc_given) noexcept nogil:
    cdef Walk w
    cdef int32_t cfh[9]
    cdef int i
    cdef bint ok, eph = False
    cdef int64_t pend = -1
    cdef size_t np0 = o.p_record.size(), ns0 = o.strs.size(), ni0 = o.ilist.size()
    cdef int32_t enc_value
    w.b = base + start; w.abs = start; w.n = n; w.rec = rec; w.le = 0
    w.ccsid = DEFAULT_CCSID; w.next_index = 0
    w.err.structure = -1; w.err.field = 0; w.err.reason = 0; w.err.offset = 0
    w.err.a0 = 0; w.err.a1 = 0; w.err.a2 = 0
    for i in range(9):
        cfh[i] = 0
    ok = _walk_record(o, &w, forced_le, has_ccsid, ccsid, cfh, &eph, &pend)
    # (typed locals: a conditional expression passed straight to push_back miscompiles)
    cdef uint8_t u_eph = 0, u_ok = 0, u_raw = 1
    if ok:
        u_ok = 1
        u_raw = 0
    if eph:
        u_eph = 1
    if not ok:
        pend = -1
        for i in range(9):
            cfh[i] = 0
    o.h_record.push_back(rec)
    for i in range(9):
        o.h_fields.push_back(cfh[i])
    if forced_le >= 0:
        enc_value = enc_given
    elif w.le:
        enc_value = 0x222
    else:
        enc_value = 0x111
    o.h_encoding.push_back(enc_value)
    o.h_eph.push_back(u_eph)
    o.h_ok.push_back(u_ok)
    o.h_raw.push_back(u_raw)
    o.h_end.push_back(pend)
    if not ok:
        o.truncate_params(np0, ns0, ni0)
    o.push_err(w.err)


# ----------------------------------------------------------------- strings
cdef bint _decode_str(const uint8_t* base, StrRef r, int t, vector[char]& out) noexcept nogil:
    """Append the UTF-8 of one string (trimmed) using table ``t`` (-1: none);
    False when Python must decode it."""
    cdef int64_t i, last
    cdef const uint8_t* s = base + r.src
    cdef uint8_t c
    cdef int j
    if t < 0:
        if r.ccsid != 1208:
            return False
        # UTF-8: ASCII-only strings are copied; anything else goes to Python
        last = r.length
        for i in range(r.length):
            if s[i] >= 0x80:
                return False
        while last > 0 and (s[last - 1] == 0x20 or s[last - 1] == 0):
            last -= 1
        for i in range(last):
            out.push_back(<char>s[i])
        return True
    last = r.length
    while last > 0 and _tab_trim[t][s[last - 1]]:
        last -= 1
    for i in range(last):
        c = s[i]
        for j in range(_tab_len[t][c]):
            out.push_back(<char>_tab_utf8[t][c][j])
    return True


cdef object _strings(const uint8_t* base, _Out o):
    """UTF-8 data + int64 offsets for every StrRef, in order."""
    cdef size_t n = o.strs.size(), i
    cdef vector[char] data
    cdef vector[int64_t] offs
    cdef bytes py
    cdef const char* pyp
    cdef Py_ssize_t k
    cdef StrRef r
    cdef int32_t last_cs = 1208
    cdef int t = _table_for(1208)
    offs.reserve(n + 1)
    offs.push_back(0)
    with nogil:
        for i in range(n):
            if o.strs[i].ccsid != last_cs:
                last_cs = o.strs[i].ccsid
                t = _table_for(last_cs)
            if not _decode_str(base, o.strs[i], t, data):
                r = o.strs[i]
                with gil:
                    # the pure path's own function: same text, U+FFFD included
                    py = _ccsid.decode_text((<const char*>base)[r.src:r.src + r.length], r.ccsid).encode("utf-8")
                    pyp = py
                    for k in range(len(py)):
                        data.push_back(pyp[k])
            offs.push_back(data.size())
    return _vec_char(data), _vec_i64(offs)


# ------------------------------------------------------------ numpy wrapping
cdef object _vec_i64(vector[int64_t]& v):
    a = np.empty(v.size(), dtype=np.int64)
    cdef int64_t[::1] m = a
    if v.size():
        memcpy(&m[0], v.data(), v.size() * sizeof(int64_t))
    return a


cdef object _vec_i32(vector[int32_t]& v):
    a = np.empty(v.size(), dtype=np.int32)
    cdef int32_t[::1] m = a
    if v.size():
        memcpy(&m[0], v.data(), v.size() * sizeof(int32_t))
    return a


cdef object _vec_u8(vector[uint8_t]& v):
    a = np.empty(v.size(), dtype=np.uint8)
    cdef uint8_t[::1] m = a
    if v.size():
        memcpy(&m[0], v.data(), v.size())
    return a


cdef object _vec_char(vector[char]& v):
    a = np.empty(v.size(), dtype=np.uint8)
    cdef uint8_t[::1] m = a
    if v.size():
        memcpy(&m[0], v.data(), v.size())
    return a


# ------------------------------------------------------------------- entry
def decode_pcf_buffers(buf, offsets, *, encoding=None, ccsid=None, valid=None):
    """Decode PCF records ``buf[offsets[i]:offsets[i+1]]``.

    ``buf``: any contiguous bytes-like; ``offsets``: n+1 offsets (any integer
    dtype); ``valid``: optional array, 0/False = null record.  ``encoding``:
    the governing MQENC (None: detect per record); ``ccsid``: the CCSID
    strings with CodedCharSetId <= 0 inherit (None: 1208, or 500 after an
    EBCDIC MQEPH StrucId).  Returns ``(headers, parameters)`` as
    ``pyarrow.RecordBatch`` in the schemas of ``mqcodec.batch.schema``.
    """
    from mqcodec.batch.schema import PCF_HEADERS, PCF_PARAMETERS

    mv = memoryview(buf).cast("B")
    cdef Py_ssize_t buflen = mv.nbytes       # bytes, whatever buf's item type
    cdef const uint8_t[::1] data = mv if buflen else b"\x00"
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef const int64_t[::1] offs = offsets
    cdef const uint8_t[::1] vmask
    cdef Py_ssize_t nrec = offs.shape[0] - 1, r
    cdef int forced = -1 if encoding is None else (1 if (int(encoding) & 0xF) == 2 else 0)
    cdef int32_t enc_given = 0 if encoding is None else <int32_t>int(encoding)
    cdef bint has_ccsid = ccsid is not None
    cdef int32_t cs = int(ccsid) if has_ccsid else DEFAULT_CCSID
    cdef _Out o = _Out()
    cdef const uint8_t* base = &data[0]
    cdef bint has_valid = valid is not None
    cdef Err nullerr
    cdef int j
    if nrec < 0:
        raise ValueError("offsets must hold at least one value")
    if nrec and (offs[0] < 0 or offs[nrec] > buflen):
        raise ValueError("offsets run outside the buffer")
    for r in range(nrec):
        if offs[r + 1] < offs[r]:
            raise ValueError("offsets must not decrease (record %d)" % r)
    if has_valid:
        vmask = np.ascontiguousarray(valid).astype(np.uint8, copy=False)
        if vmask.shape[0] != nrec:
            raise ValueError("valid must hold one value per record")
    nullerr.structure = S_RECORD; nullerr.field = F_NONE; nullerr.reason = R_NULL; nullerr.offset = 0
    nullerr.a0 = 0; nullerr.a1 = 0; nullerr.a2 = 0
    with nogil:
        for r in range(nrec):
            if has_valid and not vmask[r]:
                o.h_record.push_back(r); o.h_ok.push_back(0); o.h_raw.push_back(0)
                for j in range(9):
                    o.h_fields.push_back(0)
                o.h_end.push_back(-1); o.h_encoding.push_back(0); o.h_eph.push_back(0)
                o.push_err(nullerr)
                continue
            _record(o, base, offs[r], offs[r + 1] - offs[r], r, forced, has_ccsid, cs, enc_given)

    # ---- headers batch: the header columns are set only for decoded records
    nh = o.h_record.size()
    fields = _vec_i32(o.h_fields).reshape(nh, 9) if nh else np.zeros((0, 9), np.int32)
    failed = ~_vec_u8(o.h_ok).astype(bool)
    es, ef, eo, er, raw = _errors.error_columns(
        _vec_i32(o.e_struct), _vec_i32(o.e_field), _vec_i32(o.e_reason), _vec_i64(o.e_offset),
        _vec_i64(o.e_args).reshape(nh, 3), _vec_u8(o.h_raw).astype(bool), buf, offsets)
    hcols = [
        pa.array(_vec_i64(o.h_record)),
        pa.array(_vec_i32(o.h_encoding), mask=failed),
        pa.array(_vec_u8(o.h_eph).astype(bool), mask=failed),
    ]
    for i in range(9):
        hcols.append(pa.array(fields[:, i], mask=failed))
    hcols.append(pa.array(_vec_i64(o.h_end), mask=failed))
    hcols += [es, ef, eo, er, raw]
    headers = pa.RecordBatch.from_arrays(hcols, schema=PCF_HEADERS)

    # ---- parameters batch
    sdata, soffs = _strings(base, o)
    str_ref = _vec_i64(o.p_str_ref)
    np_ = len(str_ref)
    has_s = str_ref >= 0
    idx = np.where(has_s, str_ref, 0)
    s_start = soffs[idx] if len(soffs) > 1 else np.zeros(np_, np.int64)
    s_end = soffs[idx + 1] if len(soffs) > 1 else np.zeros(np_, np.int64)
    string_value = _string_array(sdata, s_start, s_end, has_s)

    bsrc = _vec_i64(o.p_bytes_src)
    blen = _vec_i32(o.p_bytes_len).astype(np.int64)
    has_b = bsrc >= 0
    bytes_value = _bytes_array(buf, bsrc, blen, has_b)

    il_start = _vec_i64(o.p_ilist_start)
    il_len = _vec_i32(o.p_ilist_len).astype(np.int64)
    ilist = _vec_i64(o.ilist)
    int_list = _list_array(pa.array(ilist, type=pa.int64()), il_start, il_len)

    sl_start = _vec_i64(o.p_slist_start)
    sl_len = _vec_i32(o.p_slist_len).astype(np.int64)
    nstr = len(soffs) - 1
    all_strings = _string_array(sdata, soffs[:-1], soffs[1:], np.ones(nstr, bool))
    string_list = _list_array(all_strings, sl_start, sl_len)

    pcols = [
        pa.array(_vec_i64(o.p_record)),
        pa.array(_vec_i32(o.p_index)),
        pa.array(_vec_i32(o.p_parent)),
        pa.array(_vec_i32(o.p_depth)),
        pa.array(_vec_i32(o.p_param)),
        pa.array(_vec_i32(o.p_type)),
        pa.array(_vec_i64(o.p_int), mask=~_vec_u8(o.p_int_ok).astype(bool)),
        pa.array(_vec_i32(o.p_count), mask=~_vec_u8(o.p_count_ok).astype(bool)),
        pa.array(_vec_i32(o.p_op), mask=~_vec_u8(o.p_op_ok).astype(bool)),
        pa.array(_vec_i32(o.p_ccsid), mask=~_vec_u8(o.p_ccsid_ok).astype(bool)),
        string_value,
        bytes_value,
        int_list,
        string_list,
    ]
    params = pa.RecordBatch.from_arrays(pcols, schema=PCF_PARAMETERS)
    return headers, params


@cython.wraparound(True)
def _string_array(sdata, start, end, valid):
    """A pa.string() array of slices [start, end) of ``sdata`` (null where not valid)."""
    start = np.where(valid, start, 0).astype(np.int64)
    end = np.where(valid, end, 0).astype(np.int64)
    lengths = end - start
    offsets = np.zeros(len(start) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if len(start) and (start[1:] == end[:-1]).all() and start[0] == 0 and not (~valid).any():
        data = sdata[: offsets[-1]]
    else:
        data = _gather(sdata, start, lengths, int(offsets[-1]))
    n = len(start)
    if offsets[-1] < 2 ** 31 - 1:
        typ, offsets = pa.string(), offsets.astype(np.int32)
    else:  # pragma: no cover - batches that large are split by the callers
        typ = pa.large_string()
    vb = None if valid.all() else pa.array(valid.astype(bool)).buffers()[1]
    arr = pa.Array.from_buffers(typ, n, [vb, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data))],
                                null_count=int((~valid).sum()))
    return arr.cast(pa.string()) if typ != pa.string() else arr


@cython.wraparound(True)
def _bytes_array(buf, src, length, valid):
    src = np.where(valid, src, 0).astype(np.int64)
    length = np.where(valid, length, 0).astype(np.int64)
    offsets = np.zeros(len(src) + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    data = _gather(np.frombuffer(memoryview(buf).cast("B"), dtype=np.uint8) if len(buf) else np.zeros(0, np.uint8),
                   src, length, int(offsets[-1]))
    vb = None if valid.all() else pa.array(valid.astype(bool)).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), len(src),
                                 [vb, pa.py_buffer(_int32_offsets(offsets, "bytes_value")), pa.py_buffer(data)],
                                 null_count=int((~valid).sum()))


@cython.wraparound(True)
def _int32_offsets(offsets, what):
    # the schema's binary/list columns have 32-bit offsets: never wrap silently
    if len(offsets) and offsets[-1] >= 2 ** 31:
        raise ValueError("the %s column of this batch exceeds 2 GiB / 2**31 items: "
                         "decode the input in smaller batches" % what)
    return offsets.astype(np.int32)


def _gather(src, start, length, total):
    out = np.empty(total, dtype=np.uint8)
    cdef const uint8_t[::1] s = np.ascontiguousarray(src, dtype=np.uint8) if len(src) else np.zeros(1, np.uint8)
    cdef uint8_t[::1] d = out if total else np.zeros(1, np.uint8)
    cdef const int64_t[::1] st = np.ascontiguousarray(start, dtype=np.int64)
    cdef const int64_t[::1] ln = np.ascontiguousarray(length, dtype=np.int64)
    cdef Py_ssize_t i, n = st.shape[0]
    cdef int64_t pos = 0
    with nogil:
        for i in range(n):
            if ln[i]:
                memcpy(&d[pos], &s[st[i]], ln[i])
                pos += ln[i]
    return out


def _list_array(values, start, length, ):
    valid = start >= 0
    start = np.where(valid, start, 0)
    length = np.where(valid, length, 0)
    offsets = np.zeros(len(start) + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    # lists are emitted in order, so each list's values are contiguous and in row order
    taken = values.take(pa.array(np.repeat(start, length) + _ranges(length))) if len(values) else values
    vb = None if valid.all() else pa.array(valid.astype(bool)).buffers()[1]
    typ = pa.list_(values.type)
    return pa.Array.from_buffers(typ, len(start), [vb, pa.py_buffer(_int32_offsets(offsets, "list"))],
                                 null_count=int((~valid).sum()), children=[taken])


def _ranges(length):
    total = int(length.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(length)
    out = np.arange(total, dtype=np.int64)
    out -= np.repeat(ends - length, length)
    return out
