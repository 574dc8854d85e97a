# distutils: language = c++
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled batch decoder for IBM MQ PCF bodies (MQCFH or MQEPH first).

Many records in (one buffer + int64 offsets), two Arrow record batches out
(schemas in ``mqcodec.batch.schema``): one row per record and one row per
PCF parameter, in long form.  The walk runs without the GIL and creates no
Python object per record or per parameter.  It runs once: each record is
checked and written in the same walk, into column buffers (malloc/realloc)
first sized at what the previous call produced per input byte and grown by
doubling; a record that fails is rolled back (its rows, list items, bytes and
validity bits), so it produces no parameter rows.  At the end every buffer is
handed to Arrow without a copy (shrunk to its length where a quarter of it is
unused; ``pa.foreign_buffer``, one import of the batch: arrow_export.pxi); when
Arrow lets go of it, it is kept (up to 8 MiB, blocks of at most 4 MiB) for the next call's
buffers, so that a stream of calls does not fault its memory in again.

This is the compiled twin of ``mqcodec.batch.pcf_pure`` (which runs
``mqcodec.ibmmq.pcf.decode_pcf`` record by record): every check below is
made in the same order as pcf.py makes it, with the same structure, field,
offset and reason, so that both implementations give identical tables
(tests/test_batch_equivalence.py).  Change the two together.

Strings are decoded through 256-entry byte -> UTF-8 tables built once from
the same codecs the pure path uses (``mqcodec.ccsid``), so both paths give
the same text, U+FFFD replacements included.  Strings in a CCSID with no
single-byte table (UTF-8 with non-ASCII bytes, UTF-16, DBCS, unknown
CCSIDs) are decoded by ``mqcodec.ccsid.decode_text`` under the GIL,
straight into the output buffer.

Errors are recorded per record as codes (structure, field, reason, up to
three integer arguments) and an offset, and turned into the ``error_*``
columns after the walk (tables in ``mqcodec.batch.errors``); a failing
record keeps its raw bytes and produces no parameter rows (what it wrote
is rolled back).  Output that outgrows Arrow's
32-bit offsets raises ValueError (see docs/batch.md, "Known differences").
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from cpython.pythread cimport PyThread_type_lock, PyThread_allocate_lock, PyThread_acquire_lock, \
    PyThread_release_lock, WAIT_LOCK
from libc.string cimport memcpy, memset

import numpy as np
cimport numpy as cnp
import pyarrow as pa

from mqcodec import ccsid as _ccsid
from mqcodec.batch import errors as _errors

cnp.import_array()

include "batch_common.pxi"
include "arrow_export.pxi"

# ---------------------------------------------------------------- constants
DEF MAX_DEPTH = 64          # pcf.MAX_GROUP_DEPTH
DEF MIN_PARAM = 12          # pcf.MIN_PARAMETER_LENGTH
DEF DEFAULT_CCSID = 1208    # pcf.DEFAULT_CCSID
DEF EBCDIC_EPH_CCSID = 500  # CCSID inherited when the MQEPH StrucId is EBCDIC

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
_CFH_NAMES = ["Type", "StrucLength", "Version", "Command", "MsgSeqNumber", "Control", "CompCode", "Reason",
              "ParameterCount"]
for _k in range(9):
    _CFH_OFF[_k] = 4 * _k
    _CFH_CODE[_k] = 1 + _k

# ------------------------------------------------------------ string tables
_build_tables()      # batch_common.pxi


# ---------------------------------------------------------- column builders
# One pass over the records: every check, and the values of the records that
# pass written by row as the walk goes.  A record's rows, list items and bytes
# are written before the record is known to pass; a failing record is rolled
# back (_rollback) to the counters it started from.  The variable-size
# columns get their offsets written as they go (``*_off[row + 1]``).

cdef struct Buf:              # growable byte buffer for decoded UTF-8
    char* data
    int64_t len
    int64_t cap


cdef inline int _reserve(Buf* b, int64_t extra) except -1 nogil:
    if b.len + extra <= b.cap:
        return 0
    return _grow(b, extra)


cdef int _grow(Buf* b, int64_t extra) except -1 nogil:
    cdef int64_t want = b.len + extra, cap
    cap = b.cap * 2 if b.cap * 2 > want else want
    if cap < 64:
        cap = 64
    _resize(<void**>&b.data, cap)
    b.cap = cap
    return 0


# ------------------------------------------------------- kept output blocks
# The column buffers Arrow lets go of (_Owned) are kept here, up to KEEP_BLOCKS of at most
# KEEP_BLOCK bytes and KEEP_TOTAL in all, and the next call's first allocations take them
# (_resize of a NULL buffer): like calls ask for like sizes (_first_size), so a stream of
# calls reuses the same memory instead of handing it back to the C heap, which trims it or
# unmaps it and faults it in again on the next call (glibc's thresholds, measured: 800 page
# faults per call of 1,000 trace-route records in one piece).  Larger blocks are freed.
# 8 MiB: a piece of 2 MiB of trace-route messages writes about 7 MB of columns, and what is
# kept here is held from every other use of the process's memory (16 MiB, once the keep no
# longer filled up with small blocks, raised the conversion job's peak by 12 MB).
DEF KEEP_BLOCKS = 64
DEF KEEP_BLOCK = 4 << 20
DEF KEEP_TOTAL = 8 << 20
cdef void* _kept_p[KEEP_BLOCKS]
cdef int64_t _kept_n[KEEP_BLOCKS]
cdef int _nkept = 0
cdef int64_t _kept_bytes = 0
# _Owned's release runs in whichever thread drops the last reference to an array, while a
# call on another thread may be taking blocks without the GIL
cdef PyThread_type_lock _kept_lock = PyThread_allocate_lock()


cdef void* _take_block(int64_t want) noexcept nogil:
    """The smallest kept block of at least ``want`` bytes and at most twice that
    (+ 4 KiB), or NULL."""
    global _nkept, _kept_bytes
    cdef int i, best = -1
    cdef void* p = NULL
    if want > KEEP_BLOCK:
        return NULL
    PyThread_acquire_lock(_kept_lock, WAIT_LOCK)
    for i in range(_nkept):
        if want <= _kept_n[i] <= 2 * want + 4096 and (best < 0 or _kept_n[i] < _kept_n[best]):
            best = i
    if best >= 0:
        p = _kept_p[best]
        _kept_bytes -= _kept_n[best]
        _nkept -= 1
        _kept_p[best] = _kept_p[_nkept]
        _kept_n[best] = _kept_n[_nkept]
    PyThread_release_lock(_kept_lock)
    return p


cdef void _give_block(void* p, int64_t size) noexcept nogil:
    """Keep block ``p`` of (at least) ``size`` bytes, or free it.  When the keep
    is full, smaller kept blocks make room for it (they are freed): the blocks a
    call asks for first are its largest, and small ones would otherwise fill the
    keep for good."""
    global _nkept, _kept_bytes
    cdef void* evicted[KEEP_BLOCKS]
    cdef int i, smallest, nev = 0
    if p == NULL:
        return
    if size <= KEEP_BLOCK:
        PyThread_acquire_lock(_kept_lock, WAIT_LOCK)
        while _nkept and (_nkept == KEEP_BLOCKS or _kept_bytes + size > KEEP_TOTAL):
            smallest = 0
            for i in range(1, _nkept):
                if _kept_n[i] < _kept_n[smallest]:
                    smallest = i
            if _kept_n[smallest] >= size:
                break
            evicted[nev] = _kept_p[smallest]
            nev += 1
            _kept_bytes -= _kept_n[smallest]
            _nkept -= 1
            _kept_p[smallest] = _kept_p[_nkept]
            _kept_n[smallest] = _kept_n[_nkept]
        if _nkept < KEEP_BLOCKS and _kept_bytes + size <= KEEP_TOTAL:
            _kept_p[_nkept] = p
            _kept_n[_nkept] = size
            _nkept += 1
            _kept_bytes += size
            p = NULL
        PyThread_release_lock(_kept_lock)
        for i in range(nev):
            free(evicted[i])
    free(p)


def _kept_blocks(bint release=False):
    """(blocks, bytes) kept for the next calls; ``release``: free them first (tests)."""
    global _nkept, _kept_bytes
    cdef int i
    if release:
        PyThread_acquire_lock(_kept_lock, WAIT_LOCK)
        for i in range(_nkept):
            free(_kept_p[i])
        _nkept = 0
        _kept_bytes = 0
        PyThread_release_lock(_kept_lock)
    return _nkept, _kept_bytes


def _give_blocks(sizes):
    """Give the keep new blocks of these sizes, as Arrow gives a call's buffers
    back (tests of its policy); returns :func:`_kept_blocks`."""
    cdef int64_t size
    cdef void* p
    for size in sizes:
        p = malloc(size)
        if p == NULL:
            raise MemoryError()
        _give_block(p, size)
    return _kept_blocks()


# nullable parameter columns, index into Cols.bm / Cols.nvalid
DEF V_INT = 0
DEF V_COUNT = 1
DEF V_OP = 2
DEF V_CCSID = 3
DEF V_SV = 4
DEF V_B = 5
DEF V_IL = 6
DEF V_SL = 7
DEF MAX_STR_DATA = 2147483646   # 2**31 - 2: largest string data with int32 offsets


cdef struct Cols:
    bint write            # False: check only (parameters=False), nothing is allocated
    const uint8_t* base
    int64_t first         # record number of the call's first record
    # counters: rows / items / bytes so far
    int64_t np
    int64_t ni            # int-list items
    int64_t nsl           # string-list items
    int64_t nb            # byte-string bytes
    # capacities (grown by _grow_*): rows, int-list items, string-list items, bytes
    int64_t cap
    int64_t cap_i
    int64_t cap_s
    int64_t cap_b
    # parameter columns, cap rows (+ 1 for the offsets)
    int64_t* p_record
    int32_t* p_index
    int32_t* p_parent
    int32_t* p_depth
    int32_t* p_param
    int32_t* p_type
    int64_t* p_int
    int32_t* p_count
    int32_t* p_op
    int32_t* p_ccsid
    int32_t* sv_off       # np + 1 offsets into sv
    int32_t* b_off        # np + 1 offsets into b_data
    int32_t* il_off       # np + 1 offsets into il_val
    int32_t* sl_off       # np + 1 offsets into the string-list items
    uint8_t* bm[8]        # validity bitmaps of the nullable columns (V_*), cap / 8 + 1 bytes
    int64_t nvalid[8]     # set bits in each
    int32_t* slc_off      # nsl + 1 offsets into sl (cap_s + 1)
    uint8_t* b_data       # cap_b
    int64_t* il_val       # cap_i
    Buf sv
    Buf sl
    int32_t last_cs
    int last_t


DEF NROWCOLS = 14


cdef inline void** _row_col(Cols* c, int k) noexcept nogil:
    # the row columns in schema order (PCF_PARAMETERS), then the four offsets
    if k == 0: return <void**>&c.p_record
    if k == 1: return <void**>&c.p_index
    if k == 2: return <void**>&c.p_parent
    if k == 3: return <void**>&c.p_depth
    if k == 4: return <void**>&c.p_param
    if k == 5: return <void**>&c.p_type
    if k == 6: return <void**>&c.p_int
    if k == 7: return <void**>&c.p_count
    if k == 8: return <void**>&c.p_op
    if k == 9: return <void**>&c.p_ccsid
    if k == 10: return <void**>&c.sv_off
    if k == 11: return <void**>&c.b_off
    if k == 12: return <void**>&c.il_off
    return <void**>&c.sl_off


cdef inline int64_t _row_width(int k) noexcept nogil:
    return 8 if k == 0 or k == 6 else 4


cdef int _resize(void** p, int64_t nbytes) except -1 nogil:
    """``p[0]`` grown or shrunk to ``nbytes`` (a new buffer: a kept block, else malloc'd)."""
    cdef void* q
    if nbytes <= 0:
        nbytes = 1
    if p[0] == NULL:
        q = _take_block(nbytes)
        if q == NULL:
            q = malloc(<size_t>nbytes)
    else:
        q = realloc(p[0], <size_t>nbytes)
    if q == NULL:
        with gil:
            raise MemoryError()
    p[0] = q
    return 0


cdef int _grow_rows(Cols* c, int64_t need) except -1 nogil:
    """Room for rows 0..need-1 (and their offsets 0..need) in every row column and bitmap."""
    cdef int64_t cap = c.cap * 2, old_bytes = (c.cap >> 3) + 1 if c.cap else 0, new_bytes
    cdef int k
    if cap < need:
        cap = need
    if cap < 256:
        cap = 256
    for k in range(NROWCOLS):
        _resize(_row_col(c, k), (cap + 1) * _row_width(k))
    new_bytes = (cap >> 3) + 1
    for k in range(8):
        _resize(<void**>&c.bm[k], new_bytes)
        memset(c.bm[k] + old_bytes, 0, <size_t>(new_bytes - old_bytes))
    c.cap = cap
    return 0


cdef inline int64_t _more(int64_t cap, int64_t need) noexcept nogil:
    cap *= 2
    if cap < need:
        cap = need
    return cap if cap >= 256 else 256


cdef inline int _need_items(Cols* c, int64_t need) except -1 nogil:
    if need > c.cap_i:
        c.cap_i = _more(c.cap_i, need)
        _resize(<void**>&c.il_val, c.cap_i * 8)
    return 0


cdef inline int _need_strings(Cols* c, int64_t need) except -1 nogil:
    if need > c.cap_s:
        c.cap_s = _more(c.cap_s, need)
        _resize(<void**>&c.slc_off, (c.cap_s + 1) * 4)
    return 0


cdef inline int _need_bytes(Cols* c, int64_t need) except -1 nogil:
    if need > c.cap_b:
        c.cap_b = _more(c.cap_b, need)
        _resize(<void**>&c.b_data, c.cap_b)
    return 0


cdef void _free_cols(Cols* c) noexcept nogil:
    cdef int k
    for k in range(NROWCOLS):
        free(_row_col(c, k)[0])
        _row_col(c, k)[0] = NULL
    for k in range(8):
        free(c.bm[k])
        c.bm[k] = NULL
    free(c.slc_off); c.slc_off = NULL
    free(c.b_data); c.b_data = NULL
    free(c.il_val); c.il_val = NULL
    free(c.sv.data); c.sv.data = NULL
    free(c.sl.data); c.sl.data = NULL


cdef void _rollback(Cols* c, int64_t np0, int64_t ni0, int64_t nsl0, int64_t nb0,
                    int64_t sv0, int64_t sl0) noexcept nogil:
    """Undo a failing record's rows (with their validity bits), items and bytes."""
    cdef int64_t row
    cdef int v
    cdef uint8_t bit
    if c.write:
        for row in range(np0, c.np):
            bit = <uint8_t>(1 << (row & 7))
            for v in range(8):
                if c.bm[v][row >> 3] & bit:
                    c.bm[v][row >> 3] &= <uint8_t>~bit
                    c.nvalid[v] -= 1
    c.np = np0; c.ni = ni0; c.nsl = nsl0; c.nb = nb0
    c.sv.len = sv0; c.sl.len = sl0


# per input byte, what the last call with parameters produced: rows, string-list items,
# int-list items, bytes_value bytes, string_value bytes, string-list bytes (first guesses:
# a trace-route body's)
cdef double _per_byte[6]
_per_byte[0] = 1.0 / 24; _per_byte[1] = 0.0; _per_byte[2] = 0.0
_per_byte[3] = 1.0 / 16; _per_byte[4] = 1.0 / 4; _per_byte[5] = 0.0


cdef inline int64_t _first_size(int k, int64_t inbytes) noexcept:
    return <int64_t>(_per_byte[k] * 1.05 * inbytes) + 64


cdef void _learn(int64_t inbytes, int64_t rows, int64_t nsl, int64_t ni, int64_t nb, int64_t sv,
                 int64_t sl) noexcept:
    _per_byte[0] = <double>rows / inbytes
    _per_byte[1] = <double>nsl / inbytes
    _per_byte[2] = <double>ni / inbytes
    _per_byte[3] = <double>nb / inbytes
    _per_byte[4] = <double>sv / inbytes
    _per_byte[5] = <double>sl / inbytes


cdef class _Owned:
    """Gives a column buffer back (_give_block) when Arrow lets go of it."""
    cdef void* p
    cdef int64_t size

    def __dealloc__(self):
        _give_block(self.p, self.size)


cdef object _hand_over(void** p, int64_t nbytes, int64_t size):
    """A pa.Buffer of the first ``nbytes`` of ``p[0]`` (a buffer of ``size``
    bytes, shrunk to ``nbytes`` when that leaves a quarter of it unused), which
    owns the memory from now on (``p[0]`` is set to NULL)."""
    cdef _Owned owner
    if nbytes <= 0:
        return pa.py_buffer(b"")
    if nbytes < size - size // 4:
        _resize(p, nbytes)
        size = nbytes
    owner = _Owned.__new__(_Owned)
    owner.p = p[0]
    owner.size = size
    p[0] = NULL
    return pa.foreign_buffer(<size_t>owner.p, nbytes, base=owner)


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
    _set_err(&w.err, structure, field, reason, off, a0, a1, a2)
    return False


# per Type (0..31): structure code and fixed length, filled from the two
# functions below at import (the walk reads the tables)
DEF NTYPES = 32
cdef int _SC[NTYPES]
cdef int32_t _FL[NTYPES]


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


for _k in range(NTYPES):
    _SC[_k] = _struct_code(_k)
    _FL[_k] = _fixed_len(_k)


cdef inline bint _is_header_type(int32_t t) noexcept nogil:
    # MQCFH.Type values of a PCF message (cmqcfc.h MQCFT_*; pcf.HEADER_TYPES)
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
    cdef int64_t at = 0
    cdef int field = _last_field_at(offs, codes, nf, avail, &at)
    return _fail(w, structure, field, R_FIXED_TRUNC, at, size, _nonneg(avail))



# ----------------------------------------------------------------- strings
cdef inline int _lookup(Cols* c, int32_t cs) noexcept nogil:
    """_table_or_py(cs), cached for the last CCSID seen."""
    if cs != c.last_cs:
        c.last_cs = cs
        c.last_t = _table_or_py(cs)
    return c.last_t


cdef int _put_str(Cols* c, Buf* out, int64_t src, int32_t length, int32_t cs) except -1 nogil:
    """Append the UTF-8 of one string (trimmed) to ``out``: through the
    CCSID's byte table, as plain ASCII for UTF-8, or else by the pure path's
    own ``ccsid.decode_text`` under the GIL (same text, U+FFFD included)."""
    cdef const uint8_t* s = c.base + src
    cdef int64_t last
    cdef int t
    t = _lookup(c, cs)
    if t >= 0:
        last = _trimmed(t, s, length)
        _reserve(out, 4 * last)
        out.len = _tab_copy(t, s, last, out.data + out.len) - out.data
        return 0
    if cs == 1208 and _ascii_run(s, length) == length:
        # UTF-8, ASCII only: copied (trailing blanks and NULs trimmed)
        last = length
        while last > 0 and (s[last - 1] == 0x20 or s[last - 1] == 0):
            last -= 1
        _reserve(out, last)
        if last:
            memcpy(out.data + out.len, s, <size_t>last)
        out.len += last
        return 0
    return _py_str(out, s, length, cs)


cdef int _py_str(Buf* out, const uint8_t* s, int32_t length, int32_t cs) except -1 with gil:
    # the pure path's own function: same text, U+FFFD included
    cdef bytes py = _ccsid.decode_text((<const char*>s)[:length], cs).encode("utf-8")
    cdef Py_ssize_t k = len(py)
    _reserve(out, k)
    if k:
        memcpy(out.data + out.len, <const char*>py, <size_t>k)
    out.len += k
    return 0


# ------------------------------------------------------------------ walking
cdef inline void _valid(Cols* c, int v, int64_t row) noexcept nogil:
    c.bm[v][row >> 3] |= <uint8_t>(1 << (row & 7))
    c.nvalid[v] += 1


cdef inline int _new_param(Cols* c, int64_t rec, int32_t idx, int32_t parent, int32_t depth,
                           int32_t param, int32_t typ) except -1 nogil:
    cdef int64_t row = c.np
    if row >= c.cap:
        _grow_rows(c, row + 1)
    c.p_record[row] = rec + c.first; c.p_index[row] = idx; c.p_parent[row] = parent
    c.p_depth[row] = depth; c.p_param[row] = param; c.p_type[row] = typ
    c.p_int[row] = 0; c.p_count[row] = 0; c.p_op[row] = 0; c.p_ccsid[row] = 0
    c.sv_off[row + 1] = <int32_t>c.sv.len
    c.b_off[row + 1] = <int32_t>c.nb
    c.il_off[row + 1] = <int32_t>c.ni
    c.sl_off[row + 1] = <int32_t>c.nsl
    return 0


cdef int _params(Cols* c, Walk* w, int64_t pos, int64_t end, int32_t count, int32_t parent,
                 int32_t depth, int64_t* out_pos) except -1 nogil:
    """Decode ``count`` parameters from ``pos`` (pcf._decode_list /
    _decode_parameter, check for check); groups recurse, depth-bounded.
    1 = decoded, 0 = failed (w.err set)."""
    cdef const uint8_t* b = w.b
    cdef bint le = w.le, wr = c.write
    cdef int32_t i, typ, slen = 0, fixed, n, k, cs, strlen_, param, nchild, idx
    cdef int64_t p = pos, q, avail, row, src
    cdef bint known
    cdef int sc
    for i in range(count):
        avail = end - p
        if avail < 4:
            return _fail(w, S_PARAM, F_TYPE, R_PARAM_TRUNC, p, MIN_PARAM, _nonneg(avail))
        typ = rd32(b + p, le)
        if <uint32_t>typ < NTYPES:
            sc = _SC[typ]
            fixed = _FL[typ]
        else:
            sc = S_PARAM
            fixed = -1
        if avail < 8:
            return _fail(w, sc, F_STRUCLENGTH, R_SLEN_TRUNC, p + 4, avail - 4)
        slen = rd32(b + p + 4, le)
        if fixed < 0:
            return _fail(w, S_PARAM, F_TYPE, R_UNKNOWN_TYPE, p, typ)
        if slen < fixed:
            return _fail(w, sc, F_STRUCLENGTH, R_TOO_SMALL, p + 4, slen, fixed)
        if slen > avail:
            return _fail(w, sc, F_STRUCLENGTH, R_PAST_END, p + 4, slen, avail)
        param = rd32(b + p + 8, le)
        idx = w.next_index
        row = c.np
        if wr:
            _new_param(c, w.rec, idx, parent, depth, param, typ)
        c.np += 1
        w.next_index += 1
        if typ == T_INTEGER:
            if wr:
                c.p_int[row] = rd32(b + p + 12, le); _valid(c, V_INT, row)
        elif typ == T_INTEGER64:
            if wr:
                c.p_int[row] = rd64(b + p + 16, le); _valid(c, V_INT, row)
        elif typ == T_INTEGER_LIST or typ == T_INTEGER64_LIST:
            n = rd32(b + p + 12, le)
            k = 4 if typ == T_INTEGER_LIST else 8
            if n < 0:
                return _fail(w, sc, F_COUNT, R_NEG_COUNT, p + 12, n)
            if <int64_t>n * k > slen - 16:
                return _fail(w, sc, F_COUNT, R_IL_COUNT, p + 12, n, <int64_t>n * k, slen - 16)
            if wr:
                c.p_count[row] = n; _valid(c, V_COUNT, row)
                _need_items(c, c.ni + n)
                if k == 4:
                    for q in range(n):
                        c.il_val[c.ni + q] = rd32(b + p + 16 + 4 * q, le)
                else:
                    for q in range(n):
                        c.il_val[c.ni + q] = rd64(b + p + 16 + 8 * q, le)
                c.il_off[row + 1] = <int32_t>(c.ni + n)
                _valid(c, V_IL, row)
            c.ni += n
        elif typ == T_STRING or typ == T_STRING_FILTER:
            if typ == T_STRING:
                cs = rd32(b + p + 12, le)
                strlen_ = rd32(b + p + 16, le)
                q = p + 20
                if strlen_ < 0:
                    return _fail(w, sc, F_STRINGLENGTH, R_NEG_STRINGLENGTH, p + 16, strlen_)
                if strlen_ > slen - 20:
                    return _fail(w, sc, F_STRINGLENGTH, R_FIT_STRINGLENGTH, p + 16, strlen_, slen)
            else:
                strlen_ = rd32(b + p + 20, le)
                if strlen_ < 0:
                    return _fail(w, sc, F_FILTERVALUELENGTH, R_NEG_FVL, p + 20, strlen_)
                if strlen_ > slen - 24:
                    return _fail(w, sc, F_FILTERVALUELENGTH, R_FIT_FVL, p + 20, strlen_, slen)
                if wr:
                    c.p_op[row] = rd32(b + p + 12, le); _valid(c, V_OP, row)
                cs = rd32(b + p + 16, le)
                q = p + 24
            if _lookup(c, _eff_ccsid(cs, w.ccsid)) == UNKNOWN_CCSID:
                # no converter (pcf: the Value stays bytes): string_value null, the bytes in bytes_value
                if wr:
                    c.p_ccsid[row] = cs; _valid(c, V_CCSID, row)
                    if strlen_:
                        _need_bytes(c, c.nb + strlen_)
                        memcpy(c.b_data + c.nb, b + q, <size_t>strlen_)
                    c.b_off[row + 1] = <int32_t>(c.nb + strlen_)
                    _valid(c, V_B, row)
                c.nb += strlen_
            else:
                if wr:
                    c.p_ccsid[row] = cs; _valid(c, V_CCSID, row)
                    _put_str(c, &c.sv, w.abs + q, strlen_, _eff_ccsid(cs, w.ccsid))
                    c.sv_off[row + 1] = <int32_t>c.sv.len
                    _valid(c, V_SV, row)
        elif typ == T_STRING_LIST:
            cs = rd32(b + p + 12, le)
            n = rd32(b + p + 16, le)
            strlen_ = rd32(b + p + 20, le)
            if n < 0:
                return _fail(w, sc, F_COUNT, R_NEG_COUNT, p + 16, n)
            if strlen_ < 0:
                return _fail(w, sc, F_STRINGLENGTH, R_NEG_STRINGLENGTH, p + 20, strlen_)
            if <int64_t>n * strlen_ > slen - 24:
                return _fail(w, sc, F_STRINGLENGTH, R_SL_FIT, p + 20, n, strlen_, slen)
            if strlen_ == 0 and n > w.n:
                return _fail(w, sc, F_COUNT, R_SL_EMPTY, p + 16, n)
            known = _lookup(c, _eff_ccsid(cs, w.ccsid)) != UNKNOWN_CCSID
            if not known:
                # no converter: string_list null, the items' bytes (Count x StringLength) in bytes_value
                if wr:
                    c.p_ccsid[row] = cs; _valid(c, V_CCSID, row)
                    c.p_count[row] = n; _valid(c, V_COUNT, row)
                    if <int64_t>n * strlen_:
                        _need_bytes(c, c.nb + <int64_t>n * strlen_)
                        memcpy(c.b_data + c.nb, b + p + 24, <size_t>(<int64_t>n * strlen_))
                    c.b_off[row + 1] = <int32_t>(c.nb + <int64_t>n * strlen_)
                    _valid(c, V_B, row)
                c.nb += <int64_t>n * strlen_
            elif wr:
                c.p_ccsid[row] = cs; _valid(c, V_CCSID, row)
                c.p_count[row] = n; _valid(c, V_COUNT, row)
                cs = _eff_ccsid(cs, w.ccsid)
                _need_strings(c, c.nsl + n)
                for q in range(n):
                    _put_str(c, &c.sl, w.abs + p + 24 + q * strlen_, strlen_, cs)
                    c.slc_off[c.nsl + q + 1] = <int32_t>c.sl.len
                c.sl_off[row + 1] = <int32_t>(c.nsl + n)
                _valid(c, V_SL, row)
            if known:
                c.nsl += n
        elif typ == T_BYTE_STRING or typ == T_BYTE_STRING_FILTER or typ == T_USER:
            if typ == T_BYTE_STRING:
                strlen_ = rd32(b + p + 12, le)
                if strlen_ < 0:
                    return _fail(w, sc, F_STRINGLENGTH, R_NEG_STRINGLENGTH, p + 12, strlen_)
                if strlen_ > slen - 16:
                    return _fail(w, sc, F_STRINGLENGTH, R_FIT_STRINGLENGTH, p + 12, strlen_, slen)
                src = p + 16
            elif typ == T_BYTE_STRING_FILTER:
                strlen_ = rd32(b + p + 16, le)
                if strlen_ < 0:
                    return _fail(w, sc, F_FILTERVALUELENGTH, R_NEG_FVL, p + 16, strlen_)
                if strlen_ > slen - 20:
                    return _fail(w, sc, F_FILTERVALUELENGTH, R_FIT_FVL, p + 16, strlen_, slen)
                if wr:
                    c.p_op[row] = rd32(b + p + 12, le); _valid(c, V_OP, row)
                src = p + 20
            else:
                # MQCFT_USER, opaque: the bytes after Parameter, up to StrucLength
                strlen_ = slen - 12
                src = p + 12
            if wr:
                if strlen_:
                    _need_bytes(c, c.nb + strlen_)
                    memcpy(c.b_data + c.nb, b + src, <size_t>strlen_)
                c.b_off[row + 1] = <int32_t>(c.nb + strlen_)
                _valid(c, V_B, row)
            c.nb += strlen_
        elif typ == T_INTEGER_FILTER:
            if wr:
                c.p_op[row] = rd32(b + p + 12, le); _valid(c, V_OP, row)
                c.p_int[row] = rd32(b + p + 16, le); _valid(c, V_INT, row)
        elif typ == T_GROUP:
            if depth >= MAX_DEPTH:
                return _fail(w, S_MQCFGR, F_NONE, R_TOO_DEEP, p, MAX_DEPTH)
            nchild = rd32(b + p + 12, le)
            if not _check_count(w, nchild, p + slen, end, S_MQCFGR, p + 12):
                return 0
            if wr:
                c.p_count[row] = nchild; _valid(c, V_COUNT, row)
            # never skip a group by its StrucLength: its children follow it
            if not _params(c, w, p + slen, end, nchild, idx, depth + 1, &q):
                return 0
            p = q
            continue
        p += slen
    out_pos[0] = p
    return 1


cdef int _walk_record(Cols* c, Walk* w, int forced_le, bint has_ccsid, int32_t ccsid,
                      int32_t* cfh, bint* eph_out, int64_t* end_out) except -1 nogil:
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
    if not _params(c, w, pos, pcf_end, cfh[8], -1, 0, &q):
        return False
    if is_eph and q != pcf_end:
        return _fail(w, S_MQEPH, F_STRUCLENGTH, R_EPH_SLACK, 8, pcf_end - q)
    eph_out[0] = is_eph
    end_out[0] = q
    return True


cdef struct Hdr:
    int32_t* h_encoding
    uint8_t* h_eph
    int32_t* h_fields        # the 9 MQCFH ints, a column after another (each of nrec)
    int64_t nrec
    uint8_t* h_ok            # 1 = decoded (header columns set)
    uint8_t* h_raw           # 1 = failed and not null (raw bytes kept)
    int64_t* h_end
    int32_t* e_struct        # -1 = no error
    int32_t* e_field
    int32_t* e_reason
    int64_t* e_offset
    int64_t* e_args          # 3 per record


cdef int _record(Cols* c, Hdr* h, const uint8_t* base, int64_t start, int64_t n, int64_t rec,
                 int forced_le, bint has_ccsid, int32_t ccsid, int32_t enc_given) except -1 nogil:
    cdef Walk w
    cdef int32_t cfh[9]
    cdef int i, ok
    cdef bint eph = False
    cdef int64_t pend = -1
    cdef int64_t np0 = c.np, ni0 = c.ni, nsl0 = c.nsl, nb0 = c.nb, sv0 = c.sv.len, sl0 = c.sl.len
    cdef int32_t enc_value
    w.b = base + start; w.abs = start; w.n = n; w.rec = rec; w.le = 0
    w.ccsid = DEFAULT_CCSID; w.next_index = 0
    w.err.structure = -1; w.err.field = 0; w.err.reason = 0; w.err.offset = 0
    w.err.a0 = 0; w.err.a1 = 0; w.err.a2 = 0
    for i in range(9):
        cfh[i] = 0
    ok = _walk_record(c, &w, forced_le, has_ccsid, ccsid, cfh, &eph, &pend)
    if not ok:
        # a failing record produces no parameter rows
        _rollback(c, np0, ni0, nsl0, nb0, sv0, sl0)
        pend = -1
        eph = False
        for i in range(9):
            cfh[i] = 0
    for i in range(9):
        h.h_fields[i * h.nrec + rec] = cfh[i]
    if forced_le >= 0:
        enc_value = enc_given
    elif w.le:
        enc_value = 0x222
    else:
        enc_value = 0x111
    h.h_encoding[rec] = enc_value
    h.h_eph[rec] = 1 if eph else 0
    h.h_ok[rec] = 1 if ok else 0
    h.h_raw[rec] = 0 if ok else 1
    h.h_end[rec] = pend
    h.e_struct[rec] = w.err.structure; h.e_field[rec] = w.err.field
    h.e_reason[rec] = w.err.reason; h.e_offset[rec] = w.err.offset
    h.e_args[3 * rec] = w.err.a0; h.e_args[3 * rec + 1] = w.err.a1; h.e_args[3 * rec + 2] = w.err.a2
    return 0


# ------------------------------------------------------------ numpy wrapping
cdef inline void* _ptr(object a):
    return cnp.PyArray_DATA(<cnp.ndarray>a)


# ------------------------------------------------- tables checked at import
# Every code and value above that the walk uses as a literal is the Python
# side's (mqcodec.batch.mq_layout: generated from mqcodec.ibmmq.pcf's
# declarations, and checked against them by tests/test_batch_mq.py;
# mqcodec.batch.errors): checked here when the module is imported, without
# construct; a table that disagrees fails the import (mqcodec._impl.check_codes).
from mqcodec._impl import check_codes as _check_codes
from mqcodec.batch import mq_layout as _L

_T_CODES = {"MQCFIN": T_INTEGER, "MQCFST": T_STRING, "MQCFIL": T_INTEGER_LIST, "MQCFSL": T_STRING_LIST,
            "MQCFT_USER": T_USER, "MQCFBS": T_BYTE_STRING, "MQCFIF": T_INTEGER_FILTER, "MQCFSF": T_STRING_FILTER,
            "MQCFBF": T_BYTE_STRING_FILTER, "MQCFGR": T_GROUP, "MQCFIN64": T_INTEGER64,
            "MQCFIL64": T_INTEGER64_LIST}
#: name -> code or value, as compiled (tests/test_layers.py checks a corrupted Python side is refused)
CODE_TABLES = {
    "MQCFT": _T_CODES,
    "parameter structure": {name: _SC[t] for name, t in _T_CODES.items()},
    "fixed length": {name: _FL[t] for name, t in _T_CODES.items()},
    "MQCFH.Type": {"%d" % t: 1 for t in range(NTYPES) if _is_header_type(t)},
    "structure": {"MQCFH": S_MQCFH, "MQEPH": S_MQEPH, "PCFParameter": S_PARAM, "MQCFGR": S_MQCFGR,
                  "record": S_RECORD},
    "field": {"": F_NONE, "Type": F_TYPE, "StrucLength": F_STRUCLENGTH, "Version": F_VERSION,
              "ParameterCount": F_PARAMETERCOUNT, "Count": F_COUNT, "StringLength": F_STRINGLENGTH,
              "FilterValueLength": F_FILTERVALUELENGTH},
    "MQCFH field": {_CFH_NAMES[k]: _CFH_CODE[k] for k in range(9)},
    "MQCFH offset": {_CFH_NAMES[k]: _CFH_OFF[k] for k in range(9)},
    "MQEPH offset": {_errors.FIELDS[_EPH_CODE[k]]: _EPH_OFF[k] for k in range(16)},
    "reason": {
        "DETECT_TRUNC": R_DETECT_TRUNC, "DETECT_NONE": R_DETECT_NONE, "FIXED_TRUNC": R_FIXED_TRUNC,
        "EPH_VERSION": R_EPH_VERSION, "EPH_SMALL": R_EPH_SMALL, "PAST_END": R_PAST_END, "CFH_LEN": R_CFH_LEN,
        "CFH_VERSION": R_CFH_VERSION, "NEG_PCOUNT": R_NEG_PCOUNT, "PCOUNT_ROOM": R_PCOUNT_ROOM,
        "EPH_SLACK": R_EPH_SLACK, "PARAM_TRUNC": R_PARAM_TRUNC, "SLEN_TRUNC": R_SLEN_TRUNC,
        "UNKNOWN_TYPE": R_UNKNOWN_TYPE, "TOO_SMALL": R_TOO_SMALL, "NEG_COUNT": R_NEG_COUNT,
        "IL_COUNT": R_IL_COUNT, "NEG_STRINGLENGTH": R_NEG_STRINGLENGTH, "NEG_FVL": R_NEG_FVL,
        "FIT_STRINGLENGTH": R_FIT_STRINGLENGTH, "FIT_FVL": R_FIT_FVL, "SL_FIT": R_SL_FIT,
        "SL_EMPTY": R_SL_EMPTY, "TOO_DEEP": R_TOO_DEEP, "NULL": R_NULL,
    },
    "limit": {"MAX_GROUP_DEPTH": MAX_DEPTH, "MIN_PARAMETER_LENGTH": MIN_PARAM, "DEFAULT_CCSID": DEFAULT_CCSID},
}


def python_tables():
    """The Python side of every table of CODE_TABLES: (reference, complete, source)."""
    return {
        "MQCFT": ({name: t for t, name in _L.PCF_PARAMETER_TYPES.items()}, True,
                  "mqcodec.batch.mq_layout.PCF_PARAMETER_TYPES"),
        "parameter structure": (_errors.STRUCTURES, False, "mqcodec.batch.errors.STRUCTURES"),
        "fixed length": (dict(_L.PCF_FIXED_LENGTHS), True, "mqcodec.batch.mq_layout.PCF_FIXED_LENGTHS"),
        "MQCFH.Type": ({"%d" % t: 1 for t in _L.PCF_HEADER_TYPES}, True, "mqcodec.batch.mq_layout.PCF_HEADER_TYPES"),
        "structure": (_errors.STRUCTURES, False, "mqcodec.batch.errors.STRUCTURES"),
        "field": (_errors.FIELDS, False, "mqcodec.batch.errors.FIELDS"),
        "MQCFH field": (_errors.FIELDS, False, "mqcodec.batch.errors.FIELDS"),
        "MQCFH offset": (dict(_L.PCF_MQCFH_OFFSETS), True, "mqcodec.batch.mq_layout.PCF_MQCFH_OFFSETS"),
        "MQEPH offset": (dict(_L.PCF_MQEPH_OFFSETS), True, "mqcodec.batch.mq_layout.PCF_MQEPH_OFFSETS"),
        "reason": (_errors.REASON_CODES, True, "mqcodec.batch.errors.REASON_CODES"),
        "limit": ({"MAX_GROUP_DEPTH": _L.PCF_MAX_GROUP_DEPTH, "MIN_PARAMETER_LENGTH": _L.MIN_PARAMETER_LENGTH,
                   "DEFAULT_CCSID": _L.PCF_DEFAULT_CCSID}, True, "mqcodec.batch.mq_layout"),
    }


def check_tables(python=None):
    """Check CODE_TABLES against ``python`` (default: python_tables()); ImportError on a disagreement."""
    for _table, (_ref, _complete, _source) in (python_tables() if python is None else python).items():
        _check_codes("pcf_batch", _table, CODE_TABLES[_table], _ref, complete=_complete, source=_source)


check_tables()


cdef inline void* _addr(buf):
    """The address of a pa.Buffer (NULL for None: no validity)."""
    return NULL if buf is None else <void*><uintptr_t>buf.address


def _overflow(what):
    # the schema's string/binary/list columns have 32-bit offsets: never wrap silently
    return ValueError("the %s column of this batch exceeds 2 GiB / 2**31 items: "
                      "decode the input in smaller batches" % what)


# ------------------------------------------------------------------- entry
def decode_pcf_buffers(buf, offsets, *, encoding=None, ccsid=None, valid=None, first=0, parameters=True):
    """Decode PCF records ``buf[offsets[i]:offsets[i+1]]``.

    ``buf``: any contiguous bytes-like; ``offsets``: n+1 offsets (any integer
    dtype); ``valid``: optional array, 0/False = null record.  ``encoding``:
    the governing MQENC (None: detect per record); ``ccsid``: the CCSID
    strings with CodedCharSetId <= 0 inherit (None: 1208, or 500 after an
    EBCDIC MQEPH StrucId).  ``first``: the number of the first record
    (the ``record`` columns count from it).  Returns ``(headers,
    parameters)`` as ``pyarrow.RecordBatch`` in the schemas of
    ``mqcodec.batch.schema``.  ``parameters`` False: every check
    (so the headers and errors are the same) and no parameter written, the
    parameters batch empty.
    """
    from mqcodec.batch.schema import PCF_HEADERS, PCF_PARAMETERS

    mv, buflen, offsets, valid = _checked_input(buf, offsets, valid)
    cdef const uint8_t[::1] data = mv
    cdef const int64_t[::1] offs = offsets
    cdef const uint8_t[::1] vmask
    cdef Py_ssize_t nrec = offs.shape[0] - 1, r
    cdef int forced = -1 if encoding is None else (1 if (int(encoding) & 0xF) == 2 else 0)
    cdef int32_t enc_given = 0 if encoding is None else <int32_t>int(encoding)
    cdef bint has_ccsid = ccsid is not None
    cdef int32_t cs = int(ccsid) if has_ccsid else DEFAULT_CCSID
    cdef const uint8_t* base = &data[0]
    cdef bint has_valid = valid is not None
    cdef bint want_params = bool(parameters)
    cdef Cols c
    cdef Hdr h
    cdef int j
    cdef int64_t inbytes, npar = 0, ni = 0, nsl = 0, nb = 0
    if has_valid:
        vmask = valid

    # ---- one pass: header columns and errors per record, parameter rows as they come
    h_encoding = np.zeros(nrec + 1, np.int32); h.h_encoding = <int32_t*>_ptr(h_encoding)
    h_eph = np.zeros(nrec + 1, np.uint8); h.h_eph = <uint8_t*>_ptr(h_eph)
    h_fields = np.zeros(9 * nrec + 1, np.int32); h.h_fields = <int32_t*>_ptr(h_fields); h.nrec = nrec
    h_ok = np.zeros(nrec + 1, np.uint8); h.h_ok = <uint8_t*>_ptr(h_ok)
    h_raw = np.zeros(nrec + 1, np.uint8); h.h_raw = <uint8_t*>_ptr(h_raw)
    h_end = np.zeros(nrec + 1, np.int64); h.h_end = <int64_t*>_ptr(h_end)
    e_struct = np.zeros(nrec + 1, np.int32); h.e_struct = <int32_t*>_ptr(e_struct)
    e_field = np.zeros(nrec + 1, np.int32); h.e_field = <int32_t*>_ptr(e_field)
    e_reason = np.zeros(nrec + 1, np.int32); h.e_reason = <int32_t*>_ptr(e_reason)
    e_offset = np.zeros(nrec + 1, np.int64); h.e_offset = <int64_t*>_ptr(e_offset)
    e_args = np.zeros(3 * nrec + 1, np.int64); h.e_args = <int64_t*>_ptr(e_args)
    memset(&c, 0, sizeof(Cols))
    c.base = base
    c.first = first
    c.write = want_params
    c.last_cs = 1208
    c.last_t = _table_or_py(1208)
    # first sizes: what the last call's input gave per byte (5 % more), so that a stream of
    # like calls allocates the same sizes each time and the heap serves them from what the
    # previous call freed; a buffer that needs more grows by doubling
    inbytes = (offs[nrec] - offs[0]) if nrec else 0
    try:
        _grow_rows(&c, _first_size(0, inbytes) if want_params else 0)
        _need_strings(&c, _first_size(1, inbytes) + 1 if want_params else 1)
        c.sv_off[0] = 0; c.b_off[0] = 0; c.il_off[0] = 0; c.sl_off[0] = 0; c.slc_off[0] = 0
        if want_params:
            _need_items(&c, _first_size(2, inbytes))
            _need_bytes(&c, _first_size(3, inbytes))
            _reserve(&c.sv, _first_size(4, inbytes))
            _reserve(&c.sl, _first_size(5, inbytes))
        with nogil:
            for r in range(nrec):
                if has_valid and not vmask[r]:
                    h.h_end[r] = -1
                    h.e_struct[r] = S_RECORD; h.e_field[r] = F_NONE; h.e_reason[r] = R_NULL
                    continue
                _record(&c, &h, base, offs[r], offs[r + 1] - offs[r], r, forced, has_ccsid, cs, enc_given)
        if not want_params:   # the headers alone: no parameter row is kept
            c.np = c.ni = c.nsl = c.nb = 0
        elif inbytes > 0:
            _learn(inbytes, c.np, c.nsl, c.ni, c.nb, c.sv.len, c.sl.len)
        npar, ni, nsl, nb = c.np, c.ni, c.nsl, c.nb
        if npar >= 2 ** 31 - 1:
            raise _overflow("parameters")
        if nb >= 2 ** 31:
            raise _overflow("bytes_value")
        if ni >= 2 ** 31 or nsl >= 2 ** 31:
            raise _overflow("list")
        if c.sv.len > MAX_STR_DATA:
            raise _overflow("string_value")
        if c.sl.len > MAX_STR_DATA:
            raise _overflow("string_list")
        # every buffer goes to Arrow as it is (shrunk to its length)
        cols = []
        for j in range(NROWCOLS):
            cols.append(_hand_over(_row_col(&c, j), (npar + (1 if j >= 10 else 0)) * _row_width(j),
                                   (c.cap + 1) * _row_width(j)))
        vb = []
        for j in range(8):
            vb.append((None, 0) if c.nvalid[j] == npar
                      else (_hand_over(<void**>&c.bm[j], (npar + 7) // 8, (c.cap >> 3) + 1), npar - c.nvalid[j]))
        slc_buf = _hand_over(<void**>&c.slc_off, (nsl + 1) * 4, (c.cap_s + 1) * 4)
        b_buf = _hand_over(<void**>&c.b_data, nb, c.cap_b)
        il_buf = _hand_over(<void**>&c.il_val, ni * 8, c.cap_i * 8)
        sv_buf = _hand_over(<void**>&c.sv.data, c.sv.len, c.sv.cap)
        sl_buf = _hand_over(<void**>&c.sl.data, c.sl.len, c.sl.cap)
    finally:
        _free_cols(&c)

    # ---- headers batch: the header columns are set only for decoded records; both
    # batches handed to Arrow in one import each (arrow_export.pxi)
    cdef Py_ssize_t nh = nrec, k
    cdef Py_ssize_t nbm = (nh + 7) >> 3
    cdef int64_t nok = 0
    bits = np.empty(2 * nbm + 1, np.uint8)      # h_ok's bitmap, then h_eph's
    cdef uint8_t* bp = <uint8_t*>_ptr(bits)
    with nogil:
        for r in range(nh):
            nok += h.h_ok[r] != 0
        pack_bits(h.h_ok, nh, bp)
        pack_bits(h.h_eph, nh, bp + nbm)
    es, ef, eo, er, raw = _errors.error_columns(
        e_struct[:nh], e_field[:nh], e_reason[:nh], e_offset[:nh],
        e_args[:3 * nh].reshape(nh, 3), h_raw[:nh].astype(bool), buf, offsets)
    record = np.arange(first, first + nh, dtype=np.int64)
    cdef int64_t hnull = nh - nok
    cdef BatchExport ex = BatchExport(len(PCF_HEADERS), nh)
    ex.column(0, 0, 2, NULL, _ptr(record), NULL)
    ex.column(1, hnull, 2, bp, h.h_encoding, NULL)
    ex.column(2, hnull, 2, bp, bp + nbm, NULL)
    for k in range(9):
        ex.column(3 + k, hnull, 2, bp, h.h_fields + k * nh, NULL)
    ex.column(12, hnull, 2, bp, h.h_end, NULL)
    for k, arr in enumerate((es, ef, eo, er, raw)):
        ex.array(13 + k, arr)
    for owner in (record, h_encoding, bits, h_fields, h_end):
        ex.keep(owner)
    headers = ex.batch(PCF_HEADERS)

    # ---- parameters batch
    n_ = npar
    int_list = pa.Array.from_buffers(pa.list_(pa.int64()), n_, [vb[V_IL][0], cols[12]], null_count=vb[V_IL][1],
                                     children=[pa.Array.from_buffers(pa.int64(), ni, [None, il_buf])])
    all_strings = pa.Array.from_buffers(pa.string(), nsl, [None, slc_buf, sl_buf])
    string_list = pa.Array.from_buffers(pa.list_(pa.string()), n_, [vb[V_SL][0], cols[13]],
                                        null_count=vb[V_SL][1], children=[all_strings])
    ex = BatchExport(len(PCF_PARAMETERS), n_)
    for k in range(6):      # record, parameter, parent, depth, type and position: never null
        ex.column(k, 0, 2, NULL, _addr(cols[k]), NULL)
    for k, v in ((6, V_INT), (7, V_COUNT), (8, V_OP), (9, V_CCSID)):
        ex.column(k, vb[v][1], 2, _addr(vb[v][0]), _addr(cols[k]), NULL)
    ex.column(10, vb[V_SV][1], 3, _addr(vb[V_SV][0]), _addr(cols[10]), _addr(sv_buf))
    ex.column(11, vb[V_B][1], 3, _addr(vb[V_B][0]), _addr(cols[11]), _addr(b_buf))
    ex.nested(12, int_list)
    ex.nested(13, string_list)
    ex.keep(cols)
    ex.keep(vb)
    ex.keep((sv_buf, b_buf))
    params = ex.batch(PCF_PARAMETERS)
    return headers, params
