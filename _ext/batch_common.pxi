# Shared by the three batch decoders (pcf_batch.pyx, mq_batch.pyx,
# msmq_batch.pyx), included textually: the per-record error record, the
# byte readers, the "last field at or before the cut" rule of a truncated
# fixed part, and the CCSID byte -> UTF-8 tables with their copy loop.
#
# The tables are built from ``mqcodec.ccsid.single_byte_table`` (the same
# converters, Python codecs or ICU, the pure implementations decode with),
# so the compiled and the pure paths give the same text, substitution
# characters included.  A module that decodes text calls ``_build_tables()``
# once at import.  CCSIDs: a table (single-byte), or -1 (known, no table:
# Python decodes, ICU included), or -2 (no converter at all: the pure path
# keeps the bytes, mqcodec.ccsid.UnknownCCSID; never a guessed latin-1).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from mqcodec import ccsid as _ccsid

DEF MAX_TABLES = 192


# ------------------------------------------------------------------ input
cdef tuple _checked_input(buf, offsets, valid):
    """A decoder's ``(buf, offsets, valid)`` checked as the pure decoders check
    them (``mqcodec.batch._front.check_offsets``: the same errors), as
    ``(bytes view, its length, int64 offsets, valid as uint8 0/1 or None)``;
    the bytes view holds one byte when ``buf`` is empty (a typed memoryview
    wants one)."""
    mv = memoryview(buf).cast("B") if len(buf) else memoryview(b"")
    cdef Py_ssize_t buflen = mv.nbytes, n, i, bad = -1
    offs_np = np.ascontiguousarray(offsets, dtype=np.int64)
    if offs_np.ndim != 1 or offs_np.shape[0] < 1:
        raise ValueError("offsets must hold at least one value")
    cdef const int64_t[::1] offs = offs_np
    n = offs.shape[0] - 1
    if n and (offs[0] < 0 or offs[n] > buflen):
        raise ValueError("offsets run outside the buffer")
    with nogil:
        for i in range(n):
            if offs[i + 1] < offs[i]:
                bad = i
                break
    if bad >= 0:
        raise ValueError("offsets must not decrease (record %d)" % bad)
    return (mv if buflen else memoryview(b"\x00")), buflen, offs_np, _per_record(valid, n, "valid")


cdef object _per_record(values, Py_ssize_t n, str name):
    """``values`` (None, or one truth value per record) as ``n`` contiguous uint8
    0/1; the pure check's error otherwise (``_front._per_record``)."""
    if values is None:
        return None
    values = np.ascontiguousarray(np.asarray(values).astype(bool)).view(np.uint8)
    if values.ndim != 1 or values.shape[0] != n:
        raise ValueError("%s must hold one value per record" % name)
    return values


# ------------------------------------------------------------------ errors
cdef struct Err:
    int structure
    int field
    int reason
    int64_t offset
    int64_t a0
    int64_t a1
    int64_t a2


cdef inline void _set_err(Err* e, int structure, int field, int reason, int64_t off,
                          int64_t a0, int64_t a1, int64_t a2) noexcept nogil:
    e.structure = structure
    e.field = field
    e.reason = reason
    e.offset = off
    e.a0 = a0
    e.a1 = a1
    e.a2 = a2


cdef inline int64_t _nonneg(int64_t v) noexcept nogil:
    return v if v > 0 else 0


cdef inline int _last_field_at(const int* rel, const int* codes, int nf, int64_t avail,
                               int64_t* at) noexcept nogil:
    """A fixed part cut after ``avail`` bytes names the last field starting at
    or before the cut (layout.parse_at, pcf._truncated): its code; its
    relative offset in ``at`` (unchanged when no field starts that early)."""
    cdef int k, field = codes[0]
    for k in range(nf):
        if rel[k] <= avail:
            field = codes[k]
            at[0] = rel[k]
    return field


# ------------------------------------------------------------------ reading
cdef extern from *:
    """
    #if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    #error "the mqcodec batch decoders assume a little-endian host (rd32 in batch_common.pxi)"
    #endif
    """
    uint32_t __builtin_bswap32(uint32_t) nogil
    void __builtin_prefetch(const void*) nogil


cdef inline int32_t rd32(const uint8_t* p, bint le) noexcept nogil:
    # one unaligned load (+ a byte swap for big-endian data)
    cdef uint32_t v
    memcpy(&v, p, 4)
    if not le:
        v = __builtin_bswap32(v)
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


cdef inline uint32_t rd16le(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8)


cdef inline uint32_t rd32le(const uint8_t* p) noexcept nogil:
    return <uint32_t>rd32(p, 1)


# ------------------------------------------------------------ string tables
cdef int32_t _tab_ccsid[MAX_TABLES]
cdef uint8_t _tab_utf8[MAX_TABLES][256][4]   # UTF-8 of each byte, zero-padded to 4
cdef uint8_t _tab_len[MAX_TABLES][256]
cdef uint8_t _tab_trim[MAX_TABLES][256]      # 1 where the byte decodes to ' ' or NUL
cdef bint _tab_ascii[MAX_TABLES]             # bytes 0x00..0x7F decode to themselves
cdef int _ntab = 0
cdef int32_t _multi_ccsid[MAX_TABLES]        # known CCSIDs without a table
cdef int _nmulti = 0

DEF NO_TABLE = -1                             # known CCSID: Python decodes it
DEF UNKNOWN_CCSID = -2                        # no converter: the bytes are kept


def _build_tables():
    global _ntab, _nmulti
    cdef int b, i
    _ntab = 0
    _nmulti = 0
    known = sorted(c for c in set(_ccsid.CCSID_CODECS) | set(_ccsid.ICU_CONVERTERS) if _ccsid.is_known(c))
    for cs in known:
        table = _ccsid.single_byte_table(cs)
        if table is None or _ntab >= MAX_TABLES:
            if _nmulti >= MAX_TABLES:
                raise ImportError("mqcodec batch decoders: more than %d CCSIDs without a table" % MAX_TABLES)
            _multi_ccsid[_nmulti] = cs
            _nmulti += 1
            continue
        _tab_ccsid[_ntab] = cs
        _tab_ascii[_ntab] = True
        for b in range(256):
            ch = table[b]
            enc = ch.encode("utf-8")
            if len(enc) > 4:
                raise ImportError("CCSID %d byte %d decodes to %d UTF-8 bytes" % (cs, b, len(enc)))
            _tab_len[_ntab][b] = len(enc)
            for i in range(4):
                _tab_utf8[_ntab][b][i] = enc[i] if i < len(enc) else 0
            _tab_trim[_ntab][b] = 1 if ch in (" ", "\x00") else 0
            if b < 0x80 and enc != bytes([b]):
                _tab_ascii[_ntab] = False
        _ntab += 1


cdef inline int _table_for(int32_t cs) noexcept nogil:
    """Table of ``cs``; -1 when it has none."""
    cdef int i
    for i in range(_ntab):
        if _tab_ccsid[i] == cs:
            return i
    return -1


cdef inline int _table_or_py(int32_t cs) noexcept nogil:
    """Table of ``cs``; NO_TABLE (-1) for a known CCSID without one (Python
    decodes); UNKNOWN_CCSID (-2) for a CCSID without a converter."""
    cdef int i = _table_for(cs)
    if i >= 0:
        return i
    for i in range(_nmulti):
        if _multi_ccsid[i] == cs:
            return NO_TABLE
    return UNKNOWN_CCSID


cdef inline int64_t _trimmed(int t, const uint8_t* s, int64_t n) noexcept nogil:
    """Length of ``s[:n]`` without the trailing bytes that decode to ' ' or
    NUL in table ``t`` (ccsid.decode_text strips them)."""
    while n > 0 and _tab_trim[t][s[n - 1]]:
        n -= 1
    return n


cdef inline int64_t _ascii_run(const uint8_t* s, int64_t n) noexcept nogil:
    """Length of the leading run of bytes < 0x80 in ``s[:n]`` (8 at a time)."""
    cdef int64_t i = 0
    cdef uint64_t w
    while i + 8 <= n:
        memcpy(&w, s + i, 8)
        if w & <uint64_t>0x8080808080808080ULL:
            break
        i += 8
    while i < n and s[i] < 0x80:
        i += 1
    return i


cdef inline char* _tab_copy(int t, const uint8_t* s, int64_t n, char* d) noexcept nogil:
    """Translate ``s[:n]`` through table ``t`` to ``d`` (room for 4*n bytes);
    returns the end.  ASCII runs are copied whole where the table maps
    ASCII to itself; other bytes write their 4 table bytes and advance by
    their UTF-8 length."""
    cdef int64_t i = 0, k
    cdef uint8_t ch
    if _tab_ascii[t]:
        while i < n:
            k = _ascii_run(s + i, n - i)
            if k:
                memcpy(d, s + i, <size_t>k)
                d += k
                i += k
                if i >= n:
                    break
            ch = s[i]
            memcpy(d, &_tab_utf8[t][ch][0], 4)
            d += _tab_len[t][ch]
            i += 1
        return d
    for i in range(n):
        ch = s[i]
        memcpy(d, &_tab_utf8[t][ch][0], 4)
        d += _tab_len[t][ch]
    return d
