# IBM MQ stream framer: the compiled fast path of
# mqcodec.ibmmq.framing.MQStreamFramer (issue #6).  Included by
# capture_core.pyx after capture_types.pxi; see docs/framer-mq-compiled.md.
#
# It reproduces the pure framer's three states and emits exactly the pure
# framer's Message and FramingError events, in the same order and at the
# same moment, and counts its Resynchronised events:
#   SYNC  segment after segment, units joined across segments, messages found
#         in units;
#   LOST  after garbage at a segment boundary (an unknown eye-catcher, MQSegmLen
#         out of range) or a gap: the search for the next plausible segment
#         header, at most max_raw bytes of the garbage kept for its error;
#   SKIP  the rest of a segment a gap cut, up to the end its header gave.
# Gaps (mq_framer_gap) and the end of the stream (mq_framer_close) report the
# partial segment and every unit waiting for more segments, as the pure
# framer does.  Its errors leave through error_fn as a code and numbers
# (mqcodec.ibmmq.framing_errors, which the pure framer's texts come from).
# Where a segment or unit itself is wrong (a continuation without a first
# segment, a new first segment before the last, a unit whose structures do
# not parse, a joined unit above the size limits, more open units than the
# pure framer's max_pending_messages (_MQ_MAX_PEND) or holding more than its
# max_pending_bytes) it reports the pure framer's FramingError.  FRAMER_BAIL
# is left for running out of memory, and for framers made without an error
# callback (every FramingError a BAIL).
#
# The rules below follow codec/ibmmq/framing.py (MQStreamFramer.gap, close,
# _process, _scan, _plausible, _flush_garbage, _flush_skip, _fail_pending,
# _segment, _check_size, _unit, _parse_message_unit) line by line; the
# differential tests (tests/test_framer_mq_compiled.py) hold them together.
from libc.stdlib cimport malloc, free, realloc
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE

#: Message.kind strings; the framer's ``kind`` is an index into this list.
MQ_KIND_NAMES = ["MQGET", "MQPUT", "MQPUT1", "MQGET_REPLY", "MQPUT_REPLY", "MQPUT1_REPLY",
                 "ASYNC_MESSAGE", "MESSAGE_DATA"]
cdef enum:
    # the ``kind`` of unit records in the capture core's output (not a message kind)
    _MQ_UNIT_KIND = 8
    # the ``kind`` of FramingError records in the capture core's output
    _MQ_ERROR_KIND = 9
    # bytes of a unit handed to the unit callback (framing.UNIT_PREFIX)
    _MQ_UNIT_PREFIX = 65536
MQ_UNIT_KIND = _MQ_UNIT_KIND
MQ_ERROR_KIND = _MQ_ERROR_KIND
MQ_UNIT_PREFIX = _MQ_UNIT_PREFIX
assert MQ_UNIT_KIND == len(MQ_KIND_NAMES)

cdef enum:
    # segment types (tsh.SEGMENT_TYPES)
    _MQT_MESSAGE_DATA = 0x04
    _MQT_ASYNC_MESSAGE = 0x0D
    _MQT_MQGET = 0x85
    _MQT_MQPUT = 0x86
    _MQT_MQPUT1 = 0x87
    _MQT_MQGET_REPLY = 0x95
    _MQT_MQPUT_REPLY = 0x96
    _MQT_MQPUT1_REPLY = 0x97
    # CtlFlag1
    _MQ_TCF_FIRST = 0x10
    _MQ_TCF_LAST = 0x20
    # header and structure sizes (tsh.py)
    _MQ_TSH_LEN = 28
    _MQ_TSHM_LEN = 36
    _MQ_API_LEN = 16
    _MQ_ASYNC_SHORT = 24
    _MQ_ASYNC_FIXED = 55
    _MQ_MSH_LEN = 20
    _MQ_XQH_PREFIX = 104
    # open multi-segment units kept at once: the pure framer's max_pending_messages
    # (it drops the oldest beyond them; here: BAIL); the array grows as they open
    _MQ_MAX_PEND = 1024

# limits of the pure framer (framing.DEFAULT_MAX_SEGMENT_LENGTH,
# DEFAULT_MAX_MESSAGE_LENGTH, max_pending_bytes: MQ_MAXMSGL_CEILING + 64 KiB)
# and the eye-catchers read as big-endian uint32 (ASCII, EBCDIC)
cdef extern from *:
    """
    #define MQF_MAX_SEG (100 * 1024 * 1024 + 64 * 1024)
    #define MQF_MAX_MSG (100 * 1024 * 1024 + 64 * 1024)
    #define MQF_MAX_PENDING_BYTES (100 * 1024 * 1024 + 64 * 1024)
    #define MQF_MAX_RAW (1 << 20)
    #define MQF_ID_TSH 0x54534820u  /* "TSH " */
    #define MQF_ID_TSHM 0x5453484Du  /* "TSHM" */
    #define MQF_ID_TSHC 0x54534843u  /* "TSHC" */
    #define MQF_ID_TSH_E 0xE3E2C840u
    #define MQF_ID_TSHM_E 0xE3E2C8D4u
    #define MQF_ID_TSHC_E 0xE3E2C8C3u
    #define MQF_ID_MD 0x4D442020u  /* "MD  " */
    #define MQF_ID_MD_E 0xD4C44040u
    #define MQF_ID_PMO 0x504D4F20u  /* "PMO " */
    #define MQF_ID_PMO_E 0xD7D4D640u
    #define MQF_ID_GMO 0x474D4F20u  /* "GMO " */
    #define MQF_ID_GMO_E 0xC7D4D640u
    #define MQF_ID_OD 0x4F442020u  /* "OD  " */
    #define MQF_ID_OD_E 0xD6C44040u
    #define MQF_ID_XQH 0x58514820u  /* "XQH " */
    #define MQF_ID_XQH_E 0xE7D8C840u
    #define MQF_ID_MSH 0x4D534820u  /* "MSH " */
    #define MQF_ID_MSH_E 0xD4E2C840u
    """
    const int64_t MQF_MAX_SEG
    const int64_t MQF_MAX_MSG
    const int64_t MQF_MAX_PENDING_BYTES
    const Py_ssize_t MQF_MAX_RAW
    const uint32_t MQF_ID_TSH
    const uint32_t MQF_ID_TSHM
    const uint32_t MQF_ID_TSHC
    const uint32_t MQF_ID_TSH_E
    const uint32_t MQF_ID_TSHM_E
    const uint32_t MQF_ID_TSHC_E
    const uint32_t MQF_ID_MD
    const uint32_t MQF_ID_MD_E
    const uint32_t MQF_ID_PMO
    const uint32_t MQF_ID_PMO_E
    const uint32_t MQF_ID_GMO
    const uint32_t MQF_ID_GMO_E
    const uint32_t MQF_ID_OD
    const uint32_t MQF_ID_OD_E
    const uint32_t MQF_ID_XQH
    const uint32_t MQF_ID_XQH_E
    const uint32_t MQF_ID_MSH
    const uint32_t MQF_ID_MSH_E


# the framer's states (framing._SYNC, _LOST, _SKIP) and its error codes
# (mqcodec.ibmmq.framing_errors; tests/test_framer_mq_compiled.py compares them)
cdef enum:
    MQS_SYNC = 0
    MQS_LOST = 1
    MQS_SKIP = 2
    MQE_NOT_A_SEGMENT = 1
    MQE_SEGMENT_LENGTH = 2
    MQE_AFTER_GAP = 3
    MQE_NO_HEADER = 4
    MQE_GAP_IN_SEGMENT = 5
    MQE_GAP_IN_UNIT = 6
    MQE_ENDS_IN_SEGMENT = 7
    MQE_ENDS_IN_UNIT = 8
    MQE_CONTINUATION_WITHOUT_FIRST = 9
    MQE_NEW_FIRST_BEFORE_LAST = 10
    MQE_UNIT = 11
    MQE_SHORT_CONTINUATION = 12
    MQE_JOINED_TOO_LONG = 13
    MQE_DROPPED_UNFINISHED = 14
    MQE_CUT_PENDING = 15
    MQE_CUT_SEGMENT = 16
    MQE_CUT_SKIPPED = 17
    MQE_CUT_REST = 18
    MQE_CUT_GARBAGE = 19
MQ_ERROR_CODES = {"NOT_A_SEGMENT": MQE_NOT_A_SEGMENT, "SEGMENT_LENGTH": MQE_SEGMENT_LENGTH,
                  "AFTER_GAP": MQE_AFTER_GAP, "NO_HEADER": MQE_NO_HEADER, "GAP_IN_SEGMENT": MQE_GAP_IN_SEGMENT,
                  "GAP_IN_UNIT": MQE_GAP_IN_UNIT, "ENDS_IN_SEGMENT": MQE_ENDS_IN_SEGMENT,
                  "ENDS_IN_UNIT": MQE_ENDS_IN_UNIT, "CONTINUATION_WITHOUT_FIRST": MQE_CONTINUATION_WITHOUT_FIRST,
                  "NEW_FIRST_BEFORE_LAST": MQE_NEW_FIRST_BEFORE_LAST, "UNIT": MQE_UNIT,
                  "SHORT_CONTINUATION": MQE_SHORT_CONTINUATION, "JOINED_TOO_LONG": MQE_JOINED_TOO_LONG,
                  "DROPPED_UNFINISHED": MQE_DROPPED_UNFINISHED, "CUT_PENDING": MQE_CUT_PENDING,
                  "CUT_SEGMENT": MQE_CUT_SEGMENT, "CUT_SKIPPED": MQE_CUT_SKIPPED, "CUT_REST": MQE_CUT_REST,
                  "CUT_GARBAGE": MQE_CUT_GARBAGE}
MQ_MAX_RAW = MQF_MAX_RAW
#: open units kept at once (framing.MQStreamFramer's max_pending_messages default)
MQ_MAX_OPEN_UNITS = _MQ_MAX_PEND
#: the size limits (framing.MQStreamFramer's max_message_length, max_pending_bytes defaults)
MQ_MAX_MESSAGE_LENGTH = MQF_MAX_MSG
MQ_MAX_PENDING_BYTES = MQF_MAX_PENDING_BYTES


cdef struct MQPend:
    int64_t key            # TSHM ConversID, -1 for TSH/TSHC
    int seg_type
    int store              # 1: the whole unit kept in buf (a message-bearing type, or
                           # units wanted); 0: its first MQF_MAX_RAW bytes, for an error
    int64_t start          # stream offset of the first segment
    int64_t end            # stream offset after its last segment so far
    int nsegs              # segments so far
    Py_ssize_t size        # bytes of the unit so far (pure _Pending.size)
    Py_ssize_t kept        # bytes of it in buf (== size when store and not overflow)
    int overflow           # the unit passed MQF_MAX_MSG: its first MQF_MAX_RAW bytes kept, for its error
    uint8_t* buf
    Py_ssize_t cap
    Py_ssize_t hlen        # header length of the first segment
    int little             # its ByteOrder says little-endian


cdef struct MQFramer:
    int64_t offset         # stream offset of buf[0] at the next run
    int bailed
    int state              # MQS_SYNC, MQS_LOST, MQS_SKIP
    int64_t lost_since     # stream offset where sync was lost
    int64_t resyncs        # Resynchronised events so far, and their skipped bytes
    int64_t resync_bytes
    resync_fn resync_emit  # NULL: counted only
    # LOST: the garbage collected (framing._garbage*): its start (-1: none), its
    # length, its first MQF_MAX_RAW bytes, and why it is garbage (an error code
    # and its numbers; why_set 0: framing_errors.NO_HEADER)
    int64_t g_start
    int64_t g_len
    uint8_t* g_buf
    Py_ssize_t g_n
    Py_ssize_t g_cap
    int why_set
    int why_code
    int64_t why_a
    int64_t why_b
    int64_t why_c
    int64_t why_d
    # SKIP: a segment a gap or a budget cut cut (framing._skip): its start and
    # end, where sync was lost, why (GAP_IN_SEGMENT: the gap's bytes and offset;
    # CUT_REST: the cut's offset and the budget), the stream's end if it ended
    # inside (-1), its first sk_keep bytes (MQF_MAX_RAW, or 0 after a cut)
    int64_t sk_start
    int64_t sk_end
    int64_t sk_lost_since
    int sk_code
    int64_t sk_a
    int64_t sk_b
    int64_t sk_close
    Py_ssize_t sk_keep
    uint8_t* sk_buf
    Py_ssize_t sk_n
    Py_ssize_t sk_cap
    int sk_dropped
    int npend
    int pcap
    MQPend* pend           # npend open units (pcap allocated), in the pure framer's dict order
    uint8_t* scratch       # MQMD + data of a message whose bytes are not contiguous
    Py_ssize_t scap
    unit_fn unit_emit      # NULL: no unit records (the pure framer's units=False)
    error_fn err_emit      # NULL: every FramingError is a BAIL


# ----------------------------------------------------------------------
# little helpers
# ----------------------------------------------------------------------
cdef inline uint32_t _mq_be32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3]


cdef inline int32_t _mq_i32(const uint8_t* p, int little) noexcept nogil:
    if little:
        return <int32_t>((<uint32_t>p[3] << 24) | (<uint32_t>p[2] << 16) | (<uint32_t>p[1] << 8) | <uint32_t>p[0])
    return <int32_t>_mq_be32(p)


cdef inline uint32_t _mq_u16(const uint8_t* p, int little) noexcept nogil:
    if little:
        return (<uint32_t>p[1] << 8) | <uint32_t>p[0]
    return (<uint32_t>p[0] << 8) | <uint32_t>p[1]


cdef inline bint _mq_is(const uint8_t* u, Py_ssize_t ulen, Py_ssize_t pos, uint32_t a, uint32_t b) noexcept nogil:
    """``bytes(unit[pos:pos+4]) in (a, b)``"""
    cdef uint32_t v
    if pos < 0 or pos + 4 > ulen:
        return False
    v = _mq_be32(u + pos)
    return v == a or v == b


cdef inline int _mq_kind(int t) noexcept nogil:
    """Index in MQ_KIND_NAMES of a message-bearing segment type, -1 for the others."""
    if t == _MQT_MQGET:
        return 0
    if t == _MQT_MQPUT:
        return 1
    if t == _MQT_MQPUT1:
        return 2
    if t == _MQT_MQGET_REPLY:
        return 3
    if t == _MQT_MQPUT_REPLY:
        return 4
    if t == _MQT_MQPUT1_REPLY:
        return 5
    if t == _MQT_ASYNC_MESSAGE:
        return 6
    if t == _MQT_MESSAGE_DATA:
        return 7
    return -1


# UNIT errors (framing_errors.UNIT): where and why a unit does not parse, as the
# pure framer's DecodeErrors say it (framing_errors.unit_code and its numbers)
cdef enum:
    _MQU_API = 0
    _MQU_MQOD = 1
    _MQU_ASYNC = 2
    _MQU_MSH = 3
    _MQU_MQXQH = 4
    _MQU_MQMD = 5
    _MQU_MQPMO = 6
    _MQU_MQGMO = 7
    _MQU_SEGMENT = 8           # the segment type's own (DataLength)
    _MQUF_NONE = 0
    _MQUF_REPLY_LENGTH = 1
    _MQUF_STRUC_ID = 2
    _MQUF_VERSION = 3
    _MQUF_RECS_PRESENT = 4
    _MQUF_REASON_CODE = 5
    _MQUF_RESOL_Q_NAME = 6
    _MQUF_DATA_LENGTH = 7
    _MQUR_TRUNCATED = 0
    _MQUR_UNKNOWN_VERSION = 1
    _MQUR_NEGATIVE_COUNT = 2
    _MQUR_RECORDS_PAST_END = 3
    _MQUR_NO_MQOD = 4
    _MQUR_NO_MQMD = 5
    _MQUR_NO_OPTIONS = 6
    _MQUR_NEGATIVE_LENGTH = 7
    _MQUR_DECLARED_PAST_END = 8


cdef inline int _mq_uerr(int64_t* err, int t, int structure, int fld, int reason, int64_t b, int64_t c,
                         int64_t d) noexcept nogil:
    """Fill err[0..3] (framing_errors.unit_code, then the numbers); returns -1."""
    err[0] = (<int64_t>t << 16) | (structure << 8) | (fld << 4) | reason
    err[1] = b
    err[2] = c
    err[3] = d
    return -1


cdef inline int _mq_need(int64_t* err, Py_ssize_t ulen, Py_ssize_t pos, Py_ssize_t n, int t, int structure,
                         int fld) noexcept nogil:
    """framing._need: 0, or -1 with the error filled in."""
    if n < 0 or pos + n > ulen:
        return _mq_uerr(err, t, structure, fld, _MQUR_TRUNCATED, n, ulen - pos if ulen > pos else 0, 0)
    return 0


cdef inline Py_ssize_t _mq_versioned(const uint8_t* u, Py_ssize_t ulen, Py_ssize_t pos, int little,
                                     int which, int t, int64_t* err) noexcept nogil:
    """framing._versioned: the structure's size by its Version, -1 where the
    pure framer raises DecodeError (err filled in).  which: 0 MQMD, 1 MQPMO,
    2 MQGMO, 3 MQOD."""
    cdef int32_t v
    cdef Py_ssize_t size = -1
    cdef int structure = _MQU_MQMD if which == 0 else (_MQU_MQPMO if which == 1 else
                                                       (_MQU_MQGMO if which == 2 else _MQU_MQOD))
    if _mq_need(err, ulen, pos, 8, t, structure, _MQUF_VERSION) < 0:
        return -1
    v = _mq_i32(u + pos + 4, little)
    if which == 0:
        if v == 1:
            size = 324
        elif v == 2:
            size = 364
    elif which == 1:
        if v == 1:
            size = 128
        elif v == 2:
            size = 152
        elif v == 3:
            size = 176
    elif which == 2:
        if v == 1:
            size = 72
        elif v == 2:
            size = 80
        elif v == 3:
            size = 100
        elif v == 4:
            size = 112
    else:
        if v == 1:
            size = 168
        elif v == 2:
            size = 200
        elif v == 3:
            size = 336
        elif v == 4:
            size = 400
    if size < 0:
        return _mq_uerr(err, t, structure, _MQUF_VERSION, _MQUR_UNKNOWN_VERSION, v, 0, 0)
    if _mq_need(err, ulen, pos, size, t, structure, _MQUF_NONE) < 0:
        return -1
    return size


cdef inline int64_t _mq_records(Py_ssize_t ulen, Py_ssize_t pos, int64_t count, int64_t per, int t,
                                int structure, int64_t* err) noexcept nogil:
    """framing._records: the records' length, -1 where it raises (err filled in)."""
    cdef int64_t total
    if count < 0:
        return _mq_uerr(err, t, structure, _MQUF_RECS_PRESENT, _MQUR_NEGATIVE_COUNT, count, 0, 0)
    total = count * per
    if total > <int64_t>(ulen - pos):
        return _mq_uerr(err, t, structure, _MQUF_RECS_PRESENT, _MQUR_RECORDS_PAST_END, count, total,
                        ulen - pos if ulen > pos else 0)
    return total


cdef int _mq_parse_unit(const uint8_t* u, Py_ssize_t ulen, Py_ssize_t hlen, int t, int little,
                        Py_ssize_t* md_pos, Py_ssize_t* md_len, Py_ssize_t* d0, Py_ssize_t* d1,
                        int64_t* err) noexcept nogil:
    """framing._parse_message_unit on a whole unit (first TSH + body) of a
    message-bearing type: 1 a message (MQMD at md_pos, data u[d0:d1]), 0 no
    message, -1 where the pure framer raises DecodeError (a FramingError:
    err[0..3] its framing_errors.UNIT numbers)."""
    cdef Py_ssize_t pos = hlen
    cdef Py_ssize_t size, hl, between_start
    cdef int must = (t == _MQT_MQPUT or t == _MQT_MQPUT1)
    cdef int version, opts = 0, has_dl = 0
    cdef int32_t recs, orec, rrec, fl, dl = 0
    cdef uint32_t seg_index, qlen
    cdef int64_t extra, pmr
    if t > 0x80 and t <= 0x9F:
        if _mq_need(err, ulen, pos, _MQ_API_LEN, t, _MQU_API, _MQUF_REPLY_LENGTH) < 0:
            return -1
        pos += _MQ_API_LEN
        if t == _MQT_MQPUT1 or t == _MQT_MQPUT1_REPLY:
            if not _mq_is(u, ulen, pos, MQF_ID_OD, MQF_ID_OD_E):
                if must:
                    return _mq_uerr(err, t, _MQU_MQOD, _MQUF_STRUC_ID, _MQUR_NO_MQOD, 0, 0, 0)
                return 0
            size = _mq_versioned(u, ulen, pos, little, 3, t, err)
            if size < 0:
                return -1
            if size >= 200:     # version >= 2
                recs = _mq_i32(u + pos + 168, little)
                orec = _mq_i32(u + pos + 184, little)
                rrec = _mq_i32(u + pos + 188, little)
                if recs != 0:
                    extra = _mq_records(ulen, pos + size, recs, (96 if orec != 0 else 0) + (8 if rrec != 0 else 0),
                                        t, _MQU_MQOD, err)
                    if extra < 0:
                        return -1
                    size += extra
            pos += size
    elif t == _MQT_ASYNC_MESSAGE:
        if _mq_need(err, ulen, pos, _MQ_ASYNC_SHORT, t, _MQU_ASYNC, _MQUF_VERSION) < 0:
            return -1
        seg_index = _mq_u16(u + pos + 20, little)
        if seg_index == 0:
            if _mq_need(err, ulen, pos, _MQ_ASYNC_FIXED, t, _MQU_ASYNC, _MQUF_REASON_CODE) < 0:
                return -1
            qlen = u[pos + 54]
            hl = _MQ_ASYNC_FIXED + qlen + (4 - (3 + qlen) % 4) % 4
            if _mq_need(err, ulen, pos, hl, t, _MQU_ASYNC, _MQUF_RESOL_Q_NAME) < 0:
                return -1
        else:
            hl = _MQ_ASYNC_SHORT
        pos += hl
        if not _mq_is(u, ulen, pos, MQF_ID_MD, MQF_ID_MD_E):
            return 0
    elif t == _MQT_MESSAGE_DATA:
        if _mq_is(u, ulen, pos, MQF_ID_MSH, MQF_ID_MSH_E):
            if _mq_need(err, ulen, pos, _MQ_MSH_LEN, t, _MQU_MSH, _MQUF_NONE) < 0:
                return -1
            pos += _MQ_MSH_LEN
        if not _mq_is(u, ulen, pos, MQF_ID_XQH, MQF_ID_XQH_E):
            return 0
        if _mq_need(err, ulen, pos, _MQ_XQH_PREFIX, t, _MQU_MQXQH, _MQUF_NONE) < 0:
            return -1
        pos += _MQ_XQH_PREFIX
    md_pos[0] = pos
    if not _mq_is(u, ulen, pos, MQF_ID_MD, MQF_ID_MD_E):
        if must or t == _MQT_MESSAGE_DATA:
            return _mq_uerr(err, t, _MQU_MQMD, _MQUF_STRUC_ID, _MQUR_NO_MQMD, 0, 0, 0)
        return 0
    size = _mq_versioned(u, ulen, pos, little, 0, t, err)
    if size < 0:
        return -1
    md_len[0] = size
    pos += size
    between_start = pos
    if t == _MQT_MQPUT or t == _MQT_MQPUT_REPLY or t == _MQT_MQPUT1 or t == _MQT_MQPUT1_REPLY:
        opts = 1
    elif t == _MQT_MQGET or t == _MQT_MQGET_REPLY:
        opts = 2
    if opts:
        if not (_mq_is(u, ulen, pos, MQF_ID_PMO, MQF_ID_PMO_E) if opts == 1 else _mq_is(u, ulen, pos, MQF_ID_GMO, MQF_ID_GMO_E)):
            if must:
                return _mq_uerr(err, t, _MQU_MQPMO, _MQUF_STRUC_ID, _MQUR_NO_OPTIONS, 0, 0, 0)
        else:
            size = _mq_versioned(u, ulen, pos, little, opts, t, err)
            if size < 0:
                return -1
            if opts == 1 and size >= 152:        # MQPMO version >= 2
                recs = _mq_i32(u + pos + 128, little)
                if recs != 0:
                    fl = _mq_i32(u + pos + 132, little)
                    pmr = ((24 if fl & 1 else 0) + (24 if fl & 2 else 0) + (24 if fl & 4 else 0)
                           + (4 if fl & 8 else 0) + (32 if fl & 16 else 0))
                    extra = _mq_records(ulen, pos + size, recs,
                                        (pmr if _mq_i32(u + pos + 136, little) != 0 else 0)
                                        + (8 if _mq_i32(u + pos + 140, little) != 0 else 0), t, _MQU_MQPMO, err)
                    if extra < 0:
                        return -1
                    size += extra
            pos += size
            if ulen - pos >= 4:
                dl = _mq_i32(u + pos, little)
                has_dl = 1
                pos += 4
            elif must:
                return _mq_uerr(err, t, _MQU_SEGMENT, _MQUF_DATA_LENGTH, _MQUR_TRUNCATED, 4, ulen - pos, 0)
    d0[0] = pos
    d1[0] = ulen
    if has_dl and (t == _MQT_MQPUT or t == _MQT_MQPUT1 or t == _MQT_MQGET_REPLY):
        if dl < 0:
            return _mq_uerr(err, t, _MQU_SEGMENT, _MQUF_DATA_LENGTH, _MQUR_NEGATIVE_LENGTH, dl, 0, 0)
        if dl > ulen - pos:
            if t != _MQT_MQGET_REPLY:
                return _mq_uerr(err, t, _MQU_SEGMENT, _MQUF_DATA_LENGTH, _MQUR_DECLARED_PAST_END, dl, ulen - pos, 0)
        else:
            d1[0] = pos + dl
    return 1


cdef int _mq_emit_unit(MQFramer* f, const uint8_t* u, Py_ssize_t ulen, Py_ssize_t hlen, int t, int little,
                       int64_t start, int64_t end, emit_fn emit, void* ctx) noexcept nogil:
    """framing._unit: the Unit first (units wanted), then 0 (a message
    emitted, none in this unit, or the unit reported as a FramingError: it
    does not parse), -1 BAIL.  ``end``: the stream offset after its last segment."""
    cdef Py_ssize_t md_pos = 0, md_len = 0, d0 = 0, d1 = 0, total
    cdef int kind = _mq_kind(t)
    cdef int r
    cdef int64_t err[4]
    cdef uint8_t* nb
    if f.unit_emit != NULL:
        if f.unit_emit(ctx, start, u, ulen if ulen < _MQ_UNIT_PREFIX else _MQ_UNIT_PREFIX, ulen) < 0:
            return -1
    if kind < 0:
        return 0
    r = _mq_parse_unit(u, ulen, hlen, t, little, &md_pos, &md_len, &d0, &d1, err)
    if r < 0:
        return _mq_error(f, ctx, start, u, ulen, ulen, end - start, 0, MQE_UNIT, err[0], err[1], err[2], err[3])
    if r == 0:
        return 0
    if d0 == md_pos + md_len:
        # MQMD and data are contiguous: no copy
        return emit(ctx, start, u + md_pos, md_len + (d1 - d0), kind, d1 == d0)
    total = md_len + (d1 - d0)
    if total > f.scap:
        nb = <uint8_t*>realloc(f.scratch, total)
        if nb == NULL:
            return -1
        f.scratch = nb
        f.scap = total
    memcpy(f.scratch, u + md_pos, md_len)
    memcpy(f.scratch + md_len, u + d0, d1 - d0)
    return emit(ctx, start, f.scratch, total, kind, d1 == d0)


cdef int _mq_keep(uint8_t** buf, Py_ssize_t* n, Py_ssize_t* cap, const uint8_t* data,
                  Py_ssize_t k) noexcept nogil:
    """Append data[0:k] to a growing buffer: 0, or -1 (out of memory)."""
    cdef Py_ssize_t c
    cdef uint8_t* nb
    if k <= 0:
        return 0
    if n[0] + k > cap[0]:
        c = cap[0] * 2 if cap[0] else 65536
        while c < n[0] + k:
            c *= 2
        nb = <uint8_t*>realloc(buf[0], c)
        if nb == NULL:
            return -1
        buf[0] = nb
        cap[0] = c
    memcpy(buf[0] + n[0], data, k)
    n[0] += k
    return 0


cdef inline int _mq_pend_add(MQPend* p, const uint8_t* data, Py_ssize_t n) noexcept nogil:
    """Add n bytes to an open unit (pure: ``buf += chunk`` unless overflowing,
    then framing._check_size's ``del buf[max_raw:]``): 0, or -1 (out of memory)."""
    cdef Py_ssize_t k = n
    if not p.overflow and p.size + n > MQF_MAX_MSG:
        p.overflow = 1
        if p.kept > MQF_MAX_RAW:
            p.kept = MQF_MAX_RAW
    if not p.store or p.overflow:
        k = MQF_MAX_RAW - p.kept if n > MQF_MAX_RAW - p.kept else n
    if _mq_keep(&p.buf, &p.kept, &p.cap, data, k) < 0:
        return -1
    p.size += n
    return 0


cdef inline int64_t _mq_pend_held(MQPend* p) noexcept nogil:
    """len(_Pending.buf) of the pure framer: every byte until the unit overflows,
    then its first MQF_MAX_RAW."""
    return MQF_MAX_RAW if p.overflow else p.size


cdef int _mq_check_size(MQFramer* f, int i, void* ctx) noexcept nogil:
    """framing._check_size after unit i grew (its overflow is set by
    _mq_pend_add): while more units are open than _MQ_MAX_PEND, or they hold
    more than MQF_MAX_PENDING_BYTES together, the oldest other one is reported
    (DROPPED_UNFINISHED) and dropped.  0, or -1 (BAIL: no error callback, out of memory)."""
    cdef int j, r, old
    cdef int64_t total
    cdef MQPend q
    while f.npend > 1:
        if f.npend <= _MQ_MAX_PEND:
            total = 0
            for j in range(f.npend):
                total += _mq_pend_held(&f.pend[j])
            if total <= MQF_MAX_PENDING_BYTES:
                return 0
        old = 0 if i != 0 else 1
        q = f.pend[old]
        for j in range(old, f.npend - 1):
            f.pend[j] = f.pend[j + 1]
        f.npend -= 1
        if i > old:
            i -= 1
        r = _mq_error(f, ctx, q.start, q.buf, q.kept, _mq_pend_held(&q), q.end - q.start, 0,
                      MQE_DROPPED_UNFINISHED, q.seg_type, _MQ_MAX_PEND, MQF_MAX_PENDING_BYTES, 0)
        free(q.buf)
        if r < 0:
            return -1
    return 0


# ----------------------------------------------------------------------
# the framer
# ----------------------------------------------------------------------
#: tsh.SEGMENT_TYPES: the segment types a plausible header may carry (framing._plausible);
#: tests/test_framer_mq_compiled.py checks this list against the declaration
MQ_SEGMENT_TYPE_CODES = list(range(0x01, 0x10)) + list(range(0x81, 0x90)) + list(range(0x91, 0xA0)) \
    + list(range(0xA1, 0xAB)) + list(range(0xB1, 0xBB))
cdef uint8_t _MQ_TYPE_KNOWN[256]
for _t in MQ_SEGMENT_TYPE_CODES:
    _MQ_TYPE_KNOWN[_t] = 1


cdef void mq_framer_init(MQFramer* f, int64_t offset) noexcept nogil:
    f.offset = offset
    f.bailed = 0
    f.state = MQS_SYNC
    f.lost_since = 0
    f.resyncs = 0
    f.resync_bytes = 0
    f.g_start = -1
    f.g_len = 0
    f.g_buf = NULL
    f.g_n = 0
    f.g_cap = 0
    f.why_set = 0
    f.sk_buf = NULL
    f.sk_n = 0
    f.sk_cap = 0
    f.sk_keep = MQF_MAX_RAW
    f.npend = 0
    f.pcap = 0
    f.pend = NULL
    f.scratch = NULL
    f.scap = 0
    f.unit_emit = NULL
    f.err_emit = NULL
    f.resync_emit = NULL


cdef void mq_framer_free(MQFramer* f) noexcept nogil:
    cdef int i
    for i in range(f.npend):
        free(f.pend[i].buf)
        f.pend[i].buf = NULL
    f.npend = 0
    free(f.pend)
    f.pend = NULL
    f.pcap = 0
    free(f.scratch)
    f.scratch = NULL
    f.scap = 0
    free(f.g_buf)
    f.g_buf = NULL
    f.g_n = f.g_cap = 0
    free(f.sk_buf)
    f.sk_buf = NULL
    f.sk_n = f.sk_cap = 0


cdef int _mq_segment(MQFramer* f, const uint8_t* p, Py_ssize_t n, Py_ssize_t hlen, int hidx, int64_t start,
                     emit_fn emit, void* ctx) noexcept nogil:
    """framing._segment on one whole segment p[0:n] (hidx: its header, an index
    into framing_errors.HEADER_NAMES): 0 or -1 (BAIL)."""
    cdef int little = p[hlen - 20] == 2
    cdef int t = p[hlen - 19]
    cdef int fl = p[hlen - 18]
    cdef int first = (fl & _MQ_TCF_FIRST) != 0
    cdef int last = (fl & _MQ_TCF_LAST) != 0
    cdef int64_t key = <int64_t>_mq_be32(p + 8) if hidx == 1 else -1
    cdef int i, pi = -1, spans, r, cap
    cdef Py_ssize_t skip, full
    cdef MQPend* q
    cdef MQPend* grown
    cdef MQPend done
    for i in range(f.npend):
        if f.pend[i].key == key:
            pi = i
            break
    spans = t > 0x80 or t == _MQT_ASYNC_MESSAGE or (
        t == _MQT_MESSAGE_DATA and ((first and not last) or
                                    (not first and pi >= 0 and f.pend[pi].seg_type == _MQT_MESSAGE_DATA)))
    if not spans:
        return _mq_emit_unit(f, p, n, hlen, t, little, start, start + n, emit, ctx)
    if first:
        if pi >= 0:
            # the open unit of this key is reported and dropped; this segment starts the next
            q = &f.pend[pi]
            r = _mq_error(f, ctx, q.start, q.buf, q.kept, _mq_pend_held(q), q.end - q.start, 0,
                          MQE_NEW_FIRST_BEFORE_LAST,
                          q.seg_type, t, -1, 0)
            free(q.buf)
            for i in range(pi, f.npend - 1):
                f.pend[i] = f.pend[i + 1]
            f.npend -= 1
            if r < 0:
                return -1
        if last:
            return _mq_emit_unit(f, p, n, hlen, t, little, start, start + n, emit, ctx)
        if f.npend == f.pcap:
            cap = f.pcap * 2 if f.pcap else 4
            grown = <MQPend*>realloc(f.pend, cap * sizeof(MQPend))
            if grown == NULL:
                return -1
            f.pend = grown
            f.pcap = cap
        q = &f.pend[f.npend]
        q.key = key
        q.seg_type = t
        q.store = _mq_kind(t) >= 0 or f.unit_emit != NULL
        q.start = start
        q.end = start + n
        q.nsegs = 1
        q.size = 0
        q.kept = 0
        q.overflow = 0
        q.buf = NULL
        q.cap = 0
        q.hlen = hlen
        q.little = little
        f.npend += 1
        if _mq_pend_add(q, p, n) < 0:
            return -1
        return _mq_check_size(f, f.npend - 1, ctx)
    # continuation
    if pi < 0 or f.pend[pi].seg_type != t:
        return _mq_error(f, ctx, start, p, n, n, n, 0, MQE_CONTINUATION_WITHOUT_FIRST, hidx, t, -1, 0)
    skip = hlen + (_MQ_ASYNC_SHORT if t == _MQT_ASYNC_MESSAGE else 0)
    q = &f.pend[pi]
    if n < skip:
        # the open unit and this segment, reported and dropped
        full = _mq_pend_held(q) + n
        r = _mq_pend_add(q, p, n)
        if r == 0:
            r = _mq_error(f, ctx, q.start, q.buf, q.kept, full, start + n - q.start, 0, MQE_SHORT_CONTINUATION,
                          t, n, skip, 0)
        free(q.buf)
        for i in range(pi, f.npend - 1):
            f.pend[i] = f.pend[i + 1]
        f.npend -= 1
        return r
    if _mq_pend_add(q, p + skip, n - skip) < 0:
        return -1
    q.end = start + n
    q.nsegs += 1
    if _mq_check_size(f, pi, ctx) < 0:
        return -1
    if not last:
        return 0
    for i in range(f.npend):     # (the unit's index moved if older ones were dropped)
        if f.pend[i].key == key:
            pi = i
            break
    done = f.pend[pi]
    for i in range(pi, f.npend - 1):
        f.pend[i] = f.pend[i + 1]
    f.npend -= 1
    r = 0
    if done.overflow:
        r = _mq_error(f, ctx, done.start, done.buf, done.kept, _mq_pend_held(&done), done.end - done.start, 0,
                      MQE_JOINED_TOO_LONG, t, MQF_MAX_MSG, 0, 0)
    elif done.store:
        # the unit is parsed with the first segment's header (size, byte order)
        r = _mq_emit_unit(f, done.buf, done.size, done.hlen, t, done.little, done.start, done.end, emit, ctx)
    free(done.buf)
    return r


cdef inline int _mq_header_length(uint32_t ident) noexcept nogil:
    """The segment header's length by its eye-catcher, 0 for none."""
    if ident == MQF_ID_TSHM or ident == MQF_ID_TSHM_E:
        return _MQ_TSHM_LEN
    if ident == MQF_ID_TSH or ident == MQF_ID_TSHC or ident == MQF_ID_TSH_E or ident == MQF_ID_TSHC_E:
        return _MQ_TSH_LEN
    return 0



cdef int _mq_plausible(const uint8_t* buf, Py_ssize_t n) noexcept nogil:
    """framing._plausible at buf[0]: 1 a plausible segment header starts
    there, 0 more bytes are needed to tell, -1 no."""
    cdef uint32_t seglen
    cdef Py_ssize_t hlen
    if n < 4:
        return 0                # the pure scan keeps the last 3 bytes and waits
    hlen = _mq_header_length(_mq_be32(buf))
    if hlen == 0:
        return -1
    if n < hlen:
        return 0
    seglen = _mq_be32(buf + 4)
    if seglen < <uint32_t>hlen or seglen > MQF_MAX_SEG:
        return -1
    if buf[hlen - 20] != 1 and buf[hlen - 20] != 2:
        return -1
    if not _MQ_TYPE_KNOWN[buf[hlen - 19]]:
        return -1
    return 1


cdef inline int _mq_header_index(uint32_t ident) noexcept nogil:
    """framing_errors.HEADER_NAMES index of an eye-catcher: TSH, TSHM, TSHC."""
    if ident == MQF_ID_TSHM or ident == MQF_ID_TSHM_E:
        return 1
    if ident == MQF_ID_TSHC or ident == MQF_ID_TSHC_E:
        return 2
    return 0


cdef Py_ssize_t _mq_find_candidate(const uint8_t* b, Py_ssize_t i, Py_ssize_t limit) noexcept nogil:
    """framing._find_candidate: the first position >= i holding a segment
    eye-catcher, or "TSH" (ASCII or EBCDIC) in the last 3 bytes; -1 if none."""
    cdef Py_ssize_t j = i
    while j + 3 <= limit:
        if (b[j] == 0x54 and b[j + 1] == 0x53 and b[j + 2] == 0x48) or \
                (b[j] == 0xE3 and b[j + 1] == 0xE2 and b[j + 2] == 0xC8):
            if j + 4 > limit or _mq_header_length(_mq_be32(b + j)) != 0:
                return j
        j += 1
    return -1


cdef int64_t _mq_known_end(MQFramer* f, const uint8_t* buf, Py_ssize_t avail) noexcept nogil:
    """framing._known_end at buf[0] (stream offset f.offset): the segment's end
    when its header says so plausibly, else -1."""
    cdef int hlen
    cdef uint32_t seglen
    if avail < 8:
        return -1
    hlen = _mq_header_length(_mq_be32(buf))
    if hlen == 0:
        return -1
    seglen = _mq_be32(buf + 4)
    if seglen < <uint32_t>hlen or seglen > MQF_MAX_SEG:
        return -1
    return f.offset + seglen


cdef int _mq_error(MQFramer* f, void* ctx, int64_t start, const uint8_t* raw, Py_ssize_t kept, Py_ssize_t full,
                   int64_t length, int truncated, int code, int64_t a, int64_t b, int64_t c,
                   int64_t d) noexcept nogil:
    """framing._error: raw is ``full`` bytes of which the first ``kept`` are at
    hand; at most MQF_MAX_RAW of them are reported.  0 or -1 (BAIL)."""
    if f.err_emit == NULL:
        return -1
    if full > MQF_MAX_RAW:
        truncated = 1
    if kept > MQF_MAX_RAW:
        kept = MQF_MAX_RAW
    if length < full:
        length = full
    return f.err_emit(ctx, start, raw, kept, length, truncated, code, a, b, c, d)


cdef inline void _mq_why(MQFramer* f, int code, int64_t a, int64_t b, int64_t c, int64_t d) noexcept nogil:
    f.why_set = 1
    f.why_code = code
    f.why_a = a
    f.why_b = b
    f.why_c = c
    f.why_d = d


cdef inline void _mq_lose(MQFramer* f, int64_t since, int code) noexcept nogil:
    """framing._lose: LOST from ``since``; ``code`` (0: none) says why, unless
    a reason is set already."""
    f.state = MQS_LOST
    f.lost_since = since
    if code and not f.why_set:
        _mq_why(f, code, 0, 0, -1, 0)


cdef inline int _mq_garbage_add(MQFramer* f, int64_t start, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """framing._garbage_add: 0, or -1 (out of memory)."""
    if n <= 0:
        return 0
    if f.g_start < 0:
        f.g_start = start
    f.g_len += n
    if f.g_n < MQF_MAX_RAW:
        return _mq_keep(&f.g_buf, &f.g_n, &f.g_cap, p, n if n < MQF_MAX_RAW - f.g_n else MQF_MAX_RAW - f.g_n)
    return 0


cdef int _mq_flush_garbage(MQFramer* f, void* ctx) noexcept nogil:
    """framing._flush_garbage: the garbage so far as one FramingError."""
    cdef int r = 0
    if f.g_start < 0:
        return 0
    if f.err_emit == NULL:
        r = -1
    elif f.why_set:
        r = f.err_emit(ctx, f.g_start, f.g_buf, f.g_n, f.g_len, f.g_len > f.g_n, f.why_code,
                       f.why_a, f.why_b, f.why_c, f.why_d)
    else:
        r = f.err_emit(ctx, f.g_start, f.g_buf, f.g_n, f.g_len, f.g_len > f.g_n, MQE_NO_HEADER, 0, 0, -1, 0)
    f.g_start = -1
    f.g_len = 0
    f.g_n = 0
    f.why_set = 0
    return r


cdef inline int _mq_resync(MQFramer* f, void* ctx, int64_t at, int64_t skipped) noexcept nogil:
    """Resynchronised(at, skipped): counted, and reported when resync_emit is set.  0 or -1."""
    f.resyncs += 1
    f.resync_bytes += skipped
    if f.resync_emit != NULL:
        return f.resync_emit(ctx, at, skipped)
    return 0


cdef int _mq_flush_skip(MQFramer* f, void* ctx, int resync) noexcept nogil:
    """framing._flush_skip: the cut segment as one FramingError, then SYNC."""
    cdef int r = _mq_error(f, ctx, f.sk_start, f.sk_buf, f.sk_n, f.sk_n, f.sk_end - f.sk_start, f.sk_dropped,
                           f.sk_code, f.sk_a, f.sk_b, f.sk_close, 0)
    f.sk_n = 0
    f.state = MQS_SYNC
    if resync and r == 0:
        r = _mq_resync(f, ctx, f.sk_end, f.sk_end - f.sk_lost_since)
    return r


cdef int _mq_fail_pending(MQFramer* f, void* ctx, int code, int64_t at, int64_t nbytes) noexcept nogil:
    """framing._fail_pending: every unit waiting for more segments becomes a
    FramingError (GAP_IN_UNIT, ENDS_IN_UNIT)."""
    cdef int i, r = 0
    cdef MQPend* q
    for i in range(f.npend):
        q = &f.pend[i]
        if r == 0:
            r = _mq_error(f, ctx, q.start, q.buf, q.kept, _mq_pend_held(q), q.end - q.start, 0, code, q.seg_type,
                          nbytes,
                          at, q.nsegs)
        free(q.buf)
        q.buf = NULL
    f.npend = 0
    return r


cdef int _mq_scan(MQFramer* f, const uint8_t* buf, Py_ssize_t n, Py_ssize_t* ppos, void* ctx) noexcept nogil:
    """framing._scan from buf[ppos]: 1 synced again (ppos at the header), 0 more
    bytes needed (ppos after the garbage), -1 BAIL."""
    cdef Py_ssize_t pos = ppos[0], i = ppos[0], j, keep_from
    cdef int ok
    while True:
        j = _mq_find_candidate(buf, i, n)
        if j < 0:
            # keep the last 3 bytes: an eye-catcher may straddle
            keep_from = n - 3 if n - 3 > pos else pos
            if _mq_garbage_add(f, f.offset + pos, buf + pos, keep_from - pos) < 0:
                return -1
            ppos[0] = keep_from
            return 0
        ok = _mq_plausible(buf + j, n - j)
        if ok >= 0:
            if _mq_garbage_add(f, f.offset + pos, buf + pos, j - pos) < 0:
                return -1
            ppos[0] = j
            if ok == 0:
                return 0
            if _mq_flush_garbage(f, ctx) < 0:
                return -1
            f.why_set = 0
            f.state = MQS_SYNC
            if _mq_resync(f, ctx, f.offset + j, f.offset + j - f.lost_since) < 0:
                return -1
            return 1
        i = j + 1


cdef int64_t mq_framer_oldest(MQFramer* f) noexcept nogil:
    """framing.MQStreamFramer.oldest_open: the stream offset of the oldest
    row the framer holds open (an open unit, garbage being collected, a cut
    segment being skipped), -1 when none."""
    cdef int64_t o = -1
    cdef int k
    for k in range(f.npend):
        if o < 0 or f.pend[k].start < o:
            o = f.pend[k].start
    if f.g_start >= 0 and (o < 0 or f.g_start < o):
        o = f.g_start
    if f.state == MQS_SKIP and (o < 0 or f.sk_start < o):
        o = f.sk_start
    return o


cdef int mq_framer_gap(MQFramer* f, int64_t nbytes, const uint8_t* buf, Py_ssize_t avail,
                       void* ctx) noexcept nogil:
    """framing.MQStreamFramer.gap(nbytes) with buf[0:avail] the bytes the
    framer left unconsumed (the caller drops them after the call): the open
    units and the partial segment become FramingErrors, the framer skips
    the rest of a segment the gap cut or looks for the next header.  0 or
    FRAMER_BAIL."""
    cdef int64_t at, end, seg_end, start
    cdef int resync
    if f.bailed:
        return FRAMER_BAIL
    if nbytes <= 0:
        return 0
    at = f.offset + avail
    end = at + nbytes
    if _mq_fail_pending(f, ctx, MQE_GAP_IN_UNIT, at, nbytes) < 0:
        f.bailed = 1
        return FRAMER_BAIL
    if f.state == MQS_SYNC:
        start = f.offset
        if avail:
            seg_end = _mq_known_end(f, buf, avail)
            if seg_end >= 0 and end < seg_end:
                f.sk_start = start
                f.sk_end = seg_end
                f.sk_n = 0
                if _mq_keep(&f.sk_buf, &f.sk_n, &f.sk_cap, buf, avail if avail < MQF_MAX_RAW else MQF_MAX_RAW) < 0:
                    f.bailed = 1
                    return FRAMER_BAIL
                f.sk_dropped = avail > MQF_MAX_RAW
                f.sk_keep = MQF_MAX_RAW
                f.sk_code = MQE_GAP_IN_SEGMENT
                f.sk_a = nbytes
                f.sk_b = at
                f.sk_close = -1
                f.sk_lost_since = start
                f.state = MQS_SKIP
            else:
                if _mq_error(f, ctx, start, buf, avail, avail, (seg_end if seg_end >= 0 else end) - start, 0,
                             MQE_GAP_IN_SEGMENT, nbytes, at, -1, 0) < 0:
                    f.bailed = 1
                    return FRAMER_BAIL
                if seg_end >= 0 and end == seg_end:
                    if _mq_resync(f, ctx, end, end - start) < 0:
                        f.bailed = 1
                        return FRAMER_BAIL
                else:
                    _mq_lose(f, start, MQE_AFTER_GAP)
        else:
            _mq_lose(f, start, MQE_AFTER_GAP)
    elif f.state == MQS_SKIP:
        if end >= f.sk_end:
            resync = end == f.sk_end
            if _mq_flush_skip(f, ctx, resync) < 0:
                f.bailed = 1
                return FRAMER_BAIL
            if not resync:
                _mq_lose(f, f.sk_start, MQE_AFTER_GAP)
    else:   # LOST: bytes held for a candidate header cannot complete across a gap
        if _mq_garbage_add(f, f.offset, buf, avail) < 0 or _mq_flush_garbage(f, ctx) < 0:
            f.bailed = 1
            return FRAMER_BAIL
    f.offset = end
    return 0


cdef Py_ssize_t mq_framer_cut(MQFramer* f, const uint8_t* buf, Py_ssize_t avail, int64_t limit,
                              void* ctx) noexcept nogil:
    """framing.MQStreamFramer.cut(limit) with buf[0:avail] the bytes the framer
    left unconsumed (it has run over them): the open units and the partial
    segment become FramingErrors (CUT_PENDING, CUT_SEGMENT), then the framer
    skips the rest of that segment, counted, not kept (CUT_REST), or looks for
    the next header (CUT_GARBAGE); a damaged segment being skipped reports the
    part seen so far (CUT_SKIPPED), garbage being collected is reported.  The
    bytes of buf consumed (all of them after a partial segment, else 0), or
    FRAMER_BAIL."""
    cdef int64_t at, seg_end, start
    cdef int i, r = 0
    cdef MQPend* q
    if f.bailed:
        return FRAMER_BAIL
    at = f.offset + avail
    for i in range(f.npend):
        q = &f.pend[i]
        if r == 0:
            r = _mq_error(f, ctx, q.start, q.buf, q.kept, _mq_pend_held(q), q.end - q.start, 0, MQE_CUT_PENDING,
                          q.nsegs, limit, 0, 0)
        free(q.buf)
        q.buf = NULL
    f.npend = 0
    if r < 0:
        f.bailed = 1
        return FRAMER_BAIL
    if f.state == MQS_SYNC and avail:
        start = f.offset
        seg_end = _mq_known_end(f, buf, avail)
        if _mq_error(f, ctx, start, buf, avail, avail, avail, 0, MQE_CUT_SEGMENT, avail, limit, 0, 0) < 0:
            f.bailed = 1
            return FRAMER_BAIL
        f.offset = at
        if seg_end >= 0 and seg_end > at:
            # the rest of the cut segment is counted (its error's length), not kept
            f.sk_start = at
            f.sk_end = seg_end
            f.sk_n = 0
            f.sk_keep = 0
            f.sk_dropped = 0
            f.sk_code = MQE_CUT_REST
            f.sk_a = at
            f.sk_b = limit
            f.sk_close = -1
            f.sk_lost_since = start
            f.state = MQS_SKIP
        else:
            if not f.why_set:
                _mq_why(f, MQE_CUT_GARBAGE, at, limit, -1, 0)
            _mq_lose(f, start, 0)
        return avail
    if f.state == MQS_SKIP and f.sk_n > 0:
        r = _mq_error(f, ctx, f.sk_start, f.sk_buf, f.sk_n, f.sk_n, at - f.sk_start, f.sk_dropped, MQE_CUT_SKIPPED,
                      at, limit, 0, 0)
        f.sk_n = 0
        f.sk_start = at
        f.sk_keep = 0
        f.sk_dropped = 0
        f.sk_code = MQE_CUT_REST
        f.sk_a = at
        f.sk_b = limit
        f.sk_close = -1
    elif f.state == MQS_LOST and f.g_start >= 0:
        r = _mq_flush_garbage(f, ctx)
    if r < 0:
        f.bailed = 1
        return FRAMER_BAIL
    return 0


cdef Py_ssize_t mq_framer_run(MQFramer* f, const uint8_t* buf, Py_ssize_t n, emit_fn emit,
                              void* ctx) noexcept nogil:
    """framing.MQStreamFramer._process over buf[0:n] (stream offset f.offset):
    the bytes consumed (the rest is fed again with the next bytes), or
    FRAMER_BAIL."""
    cdef Py_ssize_t pos = 0, take, room, hlen
    cdef uint32_t ident, seglen
    cdef int r
    cdef int64_t start
    if f.bailed:
        return FRAMER_BAIL
    while True:
        if f.state == MQS_SKIP:
            take = n - pos
            if take > f.sk_end - (f.offset + pos):
                take = <Py_ssize_t>(f.sk_end - (f.offset + pos))
            if take > 0:
                room = f.sk_keep - f.sk_n
                if room > 0 and _mq_keep(&f.sk_buf, &f.sk_n, &f.sk_cap, buf + pos,
                                         take if take < room else room) < 0:
                    f.bailed = 1
                    return FRAMER_BAIL
                if take > room:
                    f.sk_dropped = 1
                pos += take
            if f.offset + pos >= f.sk_end:
                if _mq_flush_skip(f, ctx, 1) < 0:
                    f.bailed = 1
                    return FRAMER_BAIL
                continue
            break
        if f.state == MQS_LOST:
            r = _mq_scan(f, buf, n, &pos, ctx)
            if r < 0:
                f.bailed = 1
                return FRAMER_BAIL
            if r == 0:
                break
            continue
        # SYNC
        if n - pos < 8:
            break
        start = f.offset + pos
        ident = _mq_be32(buf + pos)
        hlen = _mq_header_length(ident)
        if hlen == 0:
            _mq_why(f, MQE_NOT_A_SEGMENT, ident, 0, -1, 0)
            _mq_lose(f, start, 0)
            continue
        seglen = _mq_be32(buf + pos + 4)
        if seglen < <uint32_t>hlen or seglen > MQF_MAX_SEG:
            _mq_why(f, MQE_SEGMENT_LENGTH, _mq_header_index(ident), seglen, hlen, MQF_MAX_SEG)
            _mq_lose(f, start, 0)
            # the eye-catcher itself is garbage: scanning goes on after it
            if _mq_garbage_add(f, start, buf + pos, 4) < 0:
                f.bailed = 1
                return FRAMER_BAIL
            pos += 4
            continue
        if n - pos < <Py_ssize_t>seglen:
            break
        if _mq_segment(f, buf + pos, seglen, hlen, _mq_header_index(ident), start, emit, ctx) < 0:
            f.bailed = 1
            return FRAMER_BAIL
        pos += seglen
    f.offset += pos
    return pos


cdef int mq_framer_close(MQFramer* f, const uint8_t* buf, Py_ssize_t avail, void* ctx) noexcept nogil:
    """framing.MQStreamFramer.close with buf[0:avail] the bytes left
    unconsumed: whatever is incomplete becomes a FramingError.  0 or
    FRAMER_BAIL."""
    cdef int64_t end, seg_end
    cdef int r = 0
    if f.bailed:
        return FRAMER_BAIL
    end = f.offset + avail
    if f.state == MQS_SYNC and avail:
        seg_end = _mq_known_end(f, buf, avail)
        r = _mq_error(f, ctx, f.offset, buf, avail, avail, end - f.offset, 0, MQE_ENDS_IN_SEGMENT, avail,
                      seg_end - f.offset if seg_end >= 0 else -1, -1, 0)
    elif f.state == MQS_SKIP:
        f.sk_close = end
        f.sk_end = end
        r = _mq_flush_skip(f, ctx, 0)
    elif f.state == MQS_LOST:
        r = _mq_garbage_add(f, f.offset, buf, avail)
        if r == 0:
            r = _mq_flush_garbage(f, ctx)
    if _mq_fail_pending(f, ctx, MQE_ENDS_IN_UNIT, end, 0) < 0 or r < 0:
        f.bailed = 1
        return FRAMER_BAIL
    f.offset = end
    return 0


# ----------------------------------------------------------------------
# test wrapper
# ----------------------------------------------------------------------
cdef int _mq_collect(void* ctx, int64_t start, const uint8_t* data, Py_ssize_t length, int kind,
                     int md_only) noexcept nogil:
    with gil:
        try:
            (<list>ctx).append((start, PyBytes_FromStringAndSize(<const char*>data, length),
                                MQ_KIND_NAMES[kind], md_only != 0))
        except BaseException:
            return -1
    return 0


cdef int _mq_collect_unit(void* ctx, int64_t start, const uint8_t* data, Py_ssize_t length,
                          int64_t full) noexcept nogil:
    with gil:
        try:
            (<list>ctx).append(("UNIT", start, PyBytes_FromStringAndSize(<const char*>data, length), full))
        except BaseException:
            return -1
    return 0


cdef int _mq_collect_error(void* ctx, int64_t start, const uint8_t* raw, Py_ssize_t rawlen, int64_t length,
                           int truncated, int code, int64_t a, int64_t b, int64_t c, int64_t d) noexcept nogil:
    with gil:
        try:
            (<list>ctx).append(("ERROR", start, PyBytes_FromStringAndSize(<const char*>raw, rawlen), length,
                                truncated != 0, code, a, b, c, d))
        except BaseException:
            return -1
    return 0


cdef int _collect_resync(void* ctx, int64_t offset, int64_t skipped) noexcept nogil:
    with gil:
        try:
            (<list>ctx).append(("RESYNC", offset, skipped))
        except BaseException:
            return -1
    return 0


cdef class FastMQFramer:
    """The compiled framer driven as the capture core drives it (for tests).
    ``feed``, ``gap`` and ``close`` return the events in order: messages as
    ``(start, data, kind, md_only)`` (Message.offset, .data, .kind), errors
    as ``("ERROR", start, raw, length, raw_truncated, code, a, b, c, d)``
    (framing_errors.describe(code, a, b, c, d) gives the text),
    Resynchronised events as ``("RESYNC", offset, skipped)``, with
    "BAIL" appended when the framer bails (later calls return []).  With
    ``units=True`` every unit comes first as ``("UNIT", start,
    unit_prefix_bytes, full_length)``.  ``resyncs`` and ``resync_bytes``
    count the Resynchronised events and their skipped bytes."""
    cdef MQFramer f
    cdef bytes rest
    cdef readonly bint bailed
    cdef bint closed

    def __cinit__(self):
        mq_framer_init(&self.f, 0)

    def __init__(self, offset=0, units=False):
        mq_framer_free(&self.f)
        mq_framer_init(&self.f, offset)
        if units:
            self.f.unit_emit = _mq_collect_unit
        self.f.err_emit = _mq_collect_error
        self.f.resync_emit = _collect_resync
        self.rest = b""
        self.bailed = False
        self.closed = False

    def __dealloc__(self):
        mq_framer_free(&self.f)

    @property
    def offset(self):
        """Stream offset of the first unconsumed byte."""
        return self.f.offset

    @property
    def resyncs(self):
        return self.f.resyncs

    @property
    def resync_bytes(self):
        return self.f.resync_bytes

    def feed(self, bytes data):
        cdef list out = []
        cdef Py_ssize_t r, n
        cdef const uint8_t* p
        if self.closed:
            raise RuntimeError("feed() after close()")
        if self.bailed:
            return out
        self.rest = self.rest + data
        p = <const uint8_t*>PyBytes_AS_STRING(self.rest)
        n = PyBytes_GET_SIZE(self.rest)
        with nogil:
            r = mq_framer_run(&self.f, p, n, _mq_collect, <void*>out)
        if r == FRAMER_BAIL:
            self.bailed = True
            out.append("BAIL")
        elif r:
            self.rest = self.rest[r:]
        return out

    def gap(self, int64_t nbytes):
        cdef list out = []
        cdef int r
        if self.closed:
            raise RuntimeError("gap() after close()")
        if self.bailed:
            return out
        r = mq_framer_gap(&self.f, nbytes, <const uint8_t*>PyBytes_AS_STRING(self.rest), len(self.rest),
                          <void*>out)
        if r == FRAMER_BAIL:
            self.bailed = True
            out.append("BAIL")
        else:
            self.rest = b""
        return out

    def close(self):
        cdef list out = []
        if self.closed:
            return out
        self.closed = True
        if self.bailed:
            return out
        if mq_framer_close(&self.f, <const uint8_t*>PyBytes_AS_STRING(self.rest), len(self.rest),
                           <void*>out) == FRAMER_BAIL:
            self.bailed = True
            out.append("BAIL")
        self.rest = b""
        return out
