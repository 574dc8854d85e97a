# distutils: language = c++
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled batch decoder for IBM MQ PCF bodies (MQCFH or MQEPH first).

Many records in (one buffer + int64 offsets), two Arrow record batches out
(schemas in ``mqcodec.batch.schema``): one row per record and one row per
PCF parameter, in long form.  The walk runs without the GIL and creates no
Python object per record or per parameter; columns grow in C++ vectors and
are wrapped once with ``pa.Array.from_buffers``.

Strings are decoded through 256-entry byte -> UTF-8 tables built once from
the same codecs the pure path uses (``mqcodec.ccsid``), so both paths give
the same text, U+FFFD replacements included.  Strings in a CCSID with no
single-byte table (UTF-8 with non-ASCII bytes, UTF-16, DBCS) are decoded by
Python under the GIL: correct, and rare in PCF.

Errors are recorded per record as codes (structure, field, offset) and
turned into the ``error_*`` columns after the walk; a failing record keeps
its raw bytes and its parameters decoded so far are withdrawn, so the
parameters table only holds rows of records that decoded.
"""
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
DEF MAX_DEPTH = 64          # documented bound on MQCFGR nesting (pure path: the same)
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

# error codes: structure and field are indices into the name tables of
# mqcodec.batch.errors (shared with the pure implementation)
cdef struct Err:
    int structure
    int field
    int reason
    int64_t offset

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
    cdef vector[uint8_t] h_has_cfh
    cdef vector[int64_t] h_end
    cdef vector[int32_t] e_struct        # -1 = no error
    cdef vector[int32_t] e_field
    cdef vector[int32_t] e_reason
    cdef vector[int64_t] e_offset

    cdef void push_err(self, Err e) noexcept nogil:
        self.e_struct.push_back(e.structure); self.e_field.push_back(e.field)
        self.e_reason.push_back(e.reason); self.e_offset.push_back(e.offset)
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
    const uint8_t* base      # the whole input buffer
    int64_t rec
    int64_t start            # absolute offset of the record's first byte
    bint le
    int32_t ccsid            # inherited CCSID for strings with CodedCharSetId 0
    int32_t next_index
    Err err


cdef inline bint _fail(Walk* w, int structure, int field, int reason, int64_t abs_off) noexcept nogil:
    w.err.structure = structure
    w.err.field = field
    w.err.reason = reason
    w.err.offset = abs_off - w.start
    return False


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
    return 2   # "PCF parameter"


cdef inline int32_t _fixed_len(int32_t typ) noexcept nogil:
    if typ == T_INTEGER: return 16
    if typ == T_STRING: return 20
    if typ == T_INTEGER_LIST: return 16
    if typ == T_STRING_LIST: return 24
    if typ == T_USER: return 8
    if typ == T_BYTE_STRING: return 16
    if typ == T_INTEGER_FILTER: return 20
    if typ == T_STRING_FILTER: return 24
    if typ == T_BYTE_STRING_FILTER: return 20
    if typ == T_GROUP: return 16
    if typ == T_INTEGER64: return 24
    if typ == T_INTEGER64_LIST: return 16
    return -1


# field codes (batch/errors.py FIELDS)
DEF F_NONE = 0
DEF F_TYPE = 1
DEF F_STRUCLENGTH = 2
DEF F_COUNT = 3
DEF F_STRINGLENGTH = 4
DEF F_FILTERVALUELENGTH = 5
DEF F_PARAMETERCOUNT = 6
DEF F_VERSION = 7
DEF F_STRUCID = 8
DEF F_CODEDCHARSETID = 9
# reason codes (batch/errors.py REASONS)
DEF R_TRUNCATED = 0
DEF R_TOO_SMALL = 1
DEF R_PAST_END = 2
DEF R_NEGATIVE = 3
DEF R_UNKNOWN_TYPE = 4
DEF R_TOO_DEEP = 5
DEF R_COUNT_TOO_BIG = 6
DEF R_BAD_VERSION = 7
DEF R_BAD_BYTE_ORDER = 8
DEF R_NULL = 9
DEF R_CHILDREN_PAST_END = 10


cdef bint _params(_Out o, Walk* w, int64_t pos, int64_t end, int32_t count, int32_t parent,
                  int32_t depth, int64_t* out_pos) noexcept nogil:
    """Decode ``count`` parameters from ``pos``; groups recurse (depth-bounded)."""
    cdef const uint8_t* b = w.base
    cdef int32_t i, typ, slen, fixed, n, k, cs, strlen_, param, nchild
    cdef int64_t p = pos, q
    cdef size_t row
    cdef StrRef ref
    cdef int sc
    for i in range(count):
        if end - p < 4:
            return _fail(w, 2, F_TYPE, R_TRUNCATED, p)
        typ = rd32(b + p, w.le)
        fixed = _fixed_len(typ)
        if fixed < 0:
            return _fail(w, 2, F_TYPE, R_UNKNOWN_TYPE, p)
        sc = _struct_code(typ)
        if end - p < 8:
            return _fail(w, sc, F_STRUCLENGTH, R_TRUNCATED, p + 4)
        slen = rd32(b + p + 4, w.le)
        if slen < fixed:
            return _fail(w, sc, F_STRUCLENGTH, R_TOO_SMALL, p + 4)
        if slen > end - p:
            return _fail(w, sc, F_STRUCLENGTH, R_PAST_END, p + 4)
        param = rd32(b + p + 8, w.le) if typ != T_USER else 0
        row = o.new_param(w.rec, w.next_index, parent, depth, param, typ)
        w.next_index += 1
        if typ == T_INTEGER:
            o.p_int[row] = rd32(b + p + 12, w.le); o.p_int_ok[row] = 1
        elif typ == T_INTEGER64:
            o.p_int[row] = rd64(b + p + 16, w.le); o.p_int_ok[row] = 1
        elif typ == T_INTEGER_LIST or typ == T_INTEGER64_LIST:
            n = rd32(b + p + 12, w.le)
            k = 4 if typ == T_INTEGER_LIST else 8
            if n < 0:
                return _fail(w, sc, F_COUNT, R_NEGATIVE, p + 12)
            if <int64_t>n * k > slen - 16:
                return _fail(w, sc, F_COUNT, R_COUNT_TOO_BIG, p + 12)
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
                    return _fail(w, sc, F_STRINGLENGTH, R_NEGATIVE, p + 16)
                if strlen_ > slen - 20:
                    return _fail(w, sc, F_STRINGLENGTH, R_PAST_END, p + 16)
            else:
                o.p_op[row] = rd32(b + p + 12, w.le); o.p_op_ok[row] = 1
                cs = rd32(b + p + 16, w.le)
                strlen_ = rd32(b + p + 20, w.le)
                q = p + 24
                if strlen_ < 0:
                    return _fail(w, sc, F_FILTERVALUELENGTH, R_NEGATIVE, p + 20)
                if strlen_ > slen - 24:
                    return _fail(w, sc, F_FILTERVALUELENGTH, R_PAST_END, p + 20)
            o.p_ccsid[row] = cs; o.p_ccsid_ok[row] = 1
            ref.src = q; ref.length = strlen_; ref.ccsid = cs if cs != 0 else w.ccsid
            o.p_str_ref[row] = o.strs.size()
            o.strs.push_back(ref)
        elif typ == T_STRING_LIST:
            cs = rd32(b + p + 12, w.le)
            n = rd32(b + p + 16, w.le)
            strlen_ = rd32(b + p + 20, w.le)
            if n < 0:
                return _fail(w, sc, F_COUNT, R_NEGATIVE, p + 16)
            if strlen_ < 0:
                return _fail(w, sc, F_STRINGLENGTH, R_NEGATIVE, p + 20)
            if <int64_t>n * strlen_ > slen - 24:
                return _fail(w, sc, F_COUNT, R_COUNT_TOO_BIG, p + 16)
            o.p_ccsid[row] = cs; o.p_ccsid_ok[row] = 1
            o.p_count[row] = n; o.p_count_ok[row] = 1
            o.p_slist_start[row] = o.strs.size(); o.p_slist_len[row] = n
            ref.length = strlen_; ref.ccsid = cs if cs != 0 else w.ccsid
            for q in range(n):
                ref.src = p + 24 + q * strlen_
                o.strs.push_back(ref)
        elif typ == T_BYTE_STRING:
            strlen_ = rd32(b + p + 12, w.le)
            if strlen_ < 0:
                return _fail(w, sc, F_STRINGLENGTH, R_NEGATIVE, p + 12)
            if strlen_ > slen - 16:
                return _fail(w, sc, F_STRINGLENGTH, R_PAST_END, p + 12)
            o.p_bytes_src[row] = p + 16; o.p_bytes_len[row] = strlen_
        elif typ == T_BYTE_STRING_FILTER:
            o.p_op[row] = rd32(b + p + 12, w.le); o.p_op_ok[row] = 1
            strlen_ = rd32(b + p + 16, w.le)
            if strlen_ < 0:
                return _fail(w, sc, F_FILTERVALUELENGTH, R_NEGATIVE, p + 16)
            if strlen_ > slen - 20:
                return _fail(w, sc, F_FILTERVALUELENGTH, R_PAST_END, p + 16)
            o.p_bytes_src[row] = p + 20; o.p_bytes_len[row] = strlen_
        elif typ == T_INTEGER_FILTER:
            o.p_op[row] = rd32(b + p + 12, w.le); o.p_op_ok[row] = 1
            o.p_int[row] = rd32(b + p + 16, w.le); o.p_int_ok[row] = 1
        elif typ == T_USER:
            o.p_bytes_src[row] = p; o.p_bytes_len[row] = slen
        elif typ == T_GROUP:
            nchild = rd32(b + p + 12, w.le)
            if nchild < 0:
                return _fail(w, sc, F_PARAMETERCOUNT, R_NEGATIVE, p + 12)
            if <int64_t>nchild * 8 > end - p - slen:
                return _fail(w, sc, F_PARAMETERCOUNT, R_CHILDREN_PAST_END, p + 12)
            if depth + 1 > MAX_DEPTH:
                return _fail(w, sc, F_PARAMETERCOUNT, R_TOO_DEEP, p)
            o.p_count[row] = nchild; o.p_count_ok[row] = 1
            # never skip a group by its StrucLength: children follow it
            if not _params(o, w, p + slen, end, nchild, o.p_index[row], depth + 1, &q):
                return False
            p = q
            continue
        p += slen
    out_pos[0] = p
    return True


cdef int _detect_le(const uint8_t* p, int64_t n, int forced) noexcept nogil:
    """0 big-endian, 1 little-endian, -1 undecidable (for MQCFH-first)."""
    if forced >= 0:
        return forced
    if n < 8:
        return -1
    if rd32(p + 4, 0) == 36:
        return 0
    if rd32(p + 4, 1) == 36:
        return 1
    return -1


cdef void _record(_Out o, const uint8_t* base, int64_t start, int64_t n, int64_t rec,
                  int forced_le, int32_t ccsid) noexcept nogil:
    cdef Walk w
    cdef int le
    cdef int64_t p = start, end = start + n, hend, q
    cdef int32_t slen, version, i
    cdef size_t np0 = o.p_record.size(), ns0 = o.strs.size(), ni0 = o.ilist.size()
    cdef bint eph = False, ok
    cdef bint detected = False
    w.base = base; w.rec = rec; w.start = start; w.ccsid = ccsid; w.next_index = 0; w.le = 0
    w.err.structure = -1; w.err.field = 0; w.err.reason = 0; w.err.offset = 0
    o.h_record.push_back(rec)
    o.h_has_cfh.push_back(0)
    for i in range(9):
        o.h_fields.push_back(0)
    o.h_end.push_back(-1)
    ok = True
    if n >= 4 and base[p] == 0x45 and base[p + 1] == 0x50 and base[p + 2] == 0x48 and base[p + 3] == 0x20:
        # MQEPH: StrucId "EPH ", Version, StrucLength, Encoding, CodedCharSetId, Format, Flags, MQCFH
        eph = True
        if n < 12:
            ok = _fail(&w, 1, F_VERSION if n < 8 else F_STRUCLENGTH, R_TRUNCATED, p + (4 if n < 8 else 8))
        else:
            le = forced_le
            if le < 0:
                le = 0 if rd32(base + p + 4, 0) == 1 else (1 if rd32(base + p + 4, 1) == 1 else -1)
            if le < 0:
                ok = _fail(&w, 1, F_VERSION, R_BAD_VERSION, p + 4)
            else:
                w.le = le
                detected = True
                version = rd32(base + p + 4, le)
                slen = rd32(base + p + 8, le)
                if version != 1:
                    ok = _fail(&w, 1, F_VERSION, R_BAD_VERSION, p + 4)
                elif n < 68:
                    ok = _fail(&w, 1, F_STRUCLENGTH if n >= 12 else F_NONE, R_TRUNCATED, p + 8)
                elif slen < 68:
                    ok = _fail(&w, 1, F_STRUCLENGTH, R_TOO_SMALL, p + 8)
                elif slen > n:
                    ok = _fail(&w, 1, F_STRUCLENGTH, R_PAST_END, p + 8)
                else:
                    hend = p + slen
                    p += 32
    else:
        le = _detect_le(base + p, n, forced_le)
        if le < 0:
            ok = _fail(&w, 0, F_STRUCLENGTH, R_TRUNCATED if n < 8 else R_BAD_BYTE_ORDER, p + 4 if n >= 4 else p)
        else:
            w.le = le
            detected = True
            hend = end
    if ok:
        if end - p < 36:
            ok = _fail(&w, 0, F_NONE, R_TRUNCATED, p)
        elif rd32(base + p + 4, w.le) != 36:
            ok = _fail(&w, 0, F_STRUCLENGTH, R_BAD_BYTE_ORDER, p + 4)
        else:
            for i in range(9):
                o.h_fields[o.h_fields.size() - 9 + i] = rd32(base + p + 4 * i, w.le)
            o.h_has_cfh[o.h_has_cfh.size() - 1] = 1
            version = rd32(base + p + 8, w.le)
            if version < 1 or version > 3:
                ok = _fail(&w, 0, F_VERSION, R_BAD_VERSION, p + 8)
            else:
                slen = rd32(base + p + 32, w.le)     # ParameterCount
                if slen < 0:
                    ok = _fail(&w, 0, F_PARAMETERCOUNT, R_NEGATIVE, p + 32)
                elif <int64_t>slen * 8 > hend - p - 36:
                    ok = _fail(&w, 0, F_PARAMETERCOUNT, R_CHILDREN_PAST_END, p + 32)
                else:
                    ok = _params(o, &w, p + 36, hend, slen, -1, 0, &q)
                    if ok:
                        o.h_end[o.h_end.size() - 1] = q - start
    cdef int32_t enc_value = 0x111
    cdef uint8_t eph_value = 0
    if not detected:
        enc_value = 0
    elif w.le:
        enc_value = 0x222
    if eph:
        eph_value = 1
    o.h_encoding.push_back(enc_value)
    o.h_eph.push_back(eph_value)
    if not ok:
        o.truncate_params(np0, ns0, ni0)
    o.push_err(w.err)


# ----------------------------------------------------------------- strings
cdef bint _decode_str(const uint8_t* base, StrRef r, vector[char]& out) noexcept nogil:
    """Append the UTF-8 of one string (trimmed); False when Python must decode it."""
    cdef int t = _table_for(r.ccsid)
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
    offs.reserve(n + 1)
    offs.push_back(0)
    with nogil:
        for i in range(n):
            if not _decode_str(base, o.strs[i], data):
                with gil:
                    r = o.strs[i]
                    py = _ccsid.decode_text((<const char*>base)[r.src:r.src + r.length], r.ccsid).encode("utf-8")
                    for ch in py:
                        data.push_back(<char>ch)
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


def _masked(values, ok, typ):
    mask = ok.astype(bool)
    arr = pa.array(values, type=typ)
    if mask.all():
        return arr
    return pa.Array.from_buffers(typ, len(values), [pa.array(mask).buffers()[1], arr.buffers()[1]],
                                 null_count=int((~mask).sum()))


# ------------------------------------------------------------------- entry
def decode_pcf_buffers(buf, offsets, *, encoding=None, ccsid=1208, valid=None):
    """Decode PCF records ``buf[offsets[i]:offsets[i+1]]``.

    ``buf``: any contiguous bytes-like; ``offsets``: int64 array of n+1
    offsets; ``valid``: optional uint8 array (0 = null record).  Returns
    ``(headers, parameters)`` as ``pyarrow.RecordBatch`` in the schemas of
    ``mqcodec.batch.schema``.
    """
    from mqcodec.batch.schema import PCF_HEADERS, PCF_PARAMETERS

    cdef const uint8_t[::1] data = memoryview(buf).cast("B") if len(buf) else b"\x00"
    cdef const int64_t[::1] offs = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef const uint8_t[::1] vmask
    cdef Py_ssize_t nrec = offs.shape[0] - 1, r
    cdef int forced = -1 if encoding is None else (1 if (int(encoding) & 0xF) == 2 else 0)
    cdef int32_t cs = int(ccsid)
    cdef _Out o = _Out()
    cdef const uint8_t* base = &data[0]
    cdef bint has_valid = valid is not None
    cdef Err nullerr
    cdef int j
    if nrec < 0:
        raise ValueError("offsets must hold at least one value")
    if nrec and (offs[0] < 0 or offs[nrec] > len(buf)):
        raise ValueError("offsets run outside the buffer")
    for r in range(nrec):
        if offs[r + 1] < offs[r]:
            raise ValueError("offsets must not decrease (record %d)" % r)
    if has_valid:
        vmask = np.ascontiguousarray(valid, dtype=np.uint8)
    nullerr.structure = 15; nullerr.field = F_NONE; nullerr.reason = R_NULL; nullerr.offset = 0
    with nogil:
        for r in range(nrec):
            if has_valid and not vmask[r]:
                o.h_record.push_back(r); o.h_has_cfh.push_back(0)
                for j in range(9):
                    o.h_fields.push_back(0)
                o.h_end.push_back(-1); o.h_encoding.push_back(0); o.h_eph.push_back(0)
                o.push_err(nullerr)
                continue
            _record(o, base, offs[r], offs[r + 1] - offs[r], r, forced, cs)

    # ---- headers batch
    nh = o.h_record.size()
    fields = _vec_i32(o.h_fields).reshape(nh, 9) if nh else np.zeros((0, 9), np.int32)
    has_cfh = _vec_u8(o.h_has_cfh).astype(bool)
    es, ef, eo, er, raw = _errors.error_columns(
        _vec_i32(o.e_struct), _vec_i32(o.e_field), _vec_i32(o.e_reason), _vec_i64(o.e_offset),
        buf, np.asarray(offs))
    enc = _vec_i32(o.h_encoding)
    hcols = [
        pa.array(_vec_i64(o.h_record)),
        pa.array(enc, mask=(enc == 0)),
        pa.array(_vec_u8(o.h_eph).astype(bool), mask=(enc == 0)),
    ]
    for i in range(9):
        hcols.append(pa.array(fields[:, i], mask=~has_cfh))
    hend = _vec_i64(o.h_end)
    hcols.append(pa.array(hend, mask=(hend < 0)))
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


def _bytes_array(buf, src, length, valid):
    src = np.where(valid, src, 0).astype(np.int64)
    length = np.where(valid, length, 0).astype(np.int64)
    offsets = np.zeros(len(src) + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    data = _gather(np.frombuffer(memoryview(buf).cast("B"), dtype=np.uint8) if len(buf) else np.zeros(0, np.uint8),
                   src, length, int(offsets[-1]))
    vb = None if valid.all() else pa.array(valid.astype(bool)).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), len(src),
                                 [vb, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
                                 null_count=int((~valid).sum()))


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
    return pa.Array.from_buffers(typ, len(start), [vb, pa.py_buffer(offsets.astype(np.int32))],
                                 null_count=int((~valid).sum()), children=[taken])


def _ranges(length):
    total = int(length.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(length)
    out = np.arange(total, dtype=np.int64)
    out -= np.repeat(ends - length, length)
    return out
