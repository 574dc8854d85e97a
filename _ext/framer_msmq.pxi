# Compiled MSMQ stream framer: the fast path of
# mqcodec.msmq.framing.MSMQStreamFramer for one synchronised direction of a
# protocol session (TCP port 1801).  Included by capture_core.pyx after
# capture_types.pxi; see docs/framer-msmq-compiled.md.
#
# The pure framer's rules, reproduced exactly for the streams accepted here:
#   * a packet starts with the 16-byte BaseHeader (VersionNumber 0x10,
#     Signature "LIOR", PacketSize 16..0x00400000, >= 20 when Flags.IN);
#     check_base_header() checks the bytes present as far as they go: a bad
#     VersionNumber as soon as 1 byte is there, a bad Signature prefix as soon
#     as 5 are, PacketSize once 16 are;
#   * the packet occupies framed_length(Flags, PacketSize) bytes: PacketSize,
#     plus the 16-byte SessionHeader when Flags.SH is set and either Flags.IN
#     is clear (UserMessage) or PacketSize is 20 (SessionAck read literally);
#   * it is reported as soon as its last byte is present (no look-ahead);
#   * kind: Flags.IN -> InternalHeader.Flags.PT (1 SessionAck, 2
#     EstablishConnection, 3 ConnectionParameters, else Internal); otherwise
#     UserMessage, except that a packet whose BaseHeader.Flags are 0 and whose
#     DestinationQueue may be order_queue$ (framing._may_be_order_ack) is
#     classified by a full lenient decode (OrderAck / FinalAck): reproduced
#     here for the layout those packets have (UserHeader with only the
#     destination queue and a MessagePropertiesHeader, every size inside
#     PacketSize, the queue name's tail ASCII); any other candidate is
#     emitted as MSMQ_CLASSIFY_KIND and classified by the caller with the pure
#     framing.packet_kind (rare: never seen outside crafted streams).
# The pure framer's other modes are reproduced too: SCAN (bytes that are no
# packet: the search for the next BaseHeader, reported in SCAN_CHUNK pieces,
# then a Resynchronised), TAIL (the rest of a packet a gap broke), gaps
# (msmq_framer_gap) and the end of the stream (msmq_framer_close); each
# FramingError leaves through error_fn as a code and numbers
# (mqcodec.msmq.framing_errors, which the pure framer's texts come from),
# its raw bytes all of the bytes it covers, by pointer into the caller's
# buffer.  A packet is always contiguous in the caller's buffer: it is passed
# by pointer, never copied, and the framer keeps no bytes of its own (the
# caller keeps the unconsumed ones: a partial packet, the garbage not yet
# reported, the tail of a broken packet until its end).

#: Packet.kind strings of the pure framer, indexed by the emitted kind
MSMQ_KIND_NAMES = ["UserMessage", "SessionAck", "EstablishConnection", "ConnectionParameters",
                   "Internal", "OrderAck", "FinalAck"]

cdef enum:
    MSMQ_KIND_USER_MESSAGE = 0
    MSMQ_KIND_SESSION_ACK = 1
    MSMQ_KIND_ESTABLISH_CONNECTION = 2
    MSMQ_KIND_CONNECTION_PARAMETERS = 3
    MSMQ_KIND_INTERNAL = 4
    MSMQ_KIND_ORDER_ACK = 5
    MSMQ_KIND_FINAL_ACK = 6

cdef enum:
    _MSMQ_VERSION = 0x10
    _MSMQ_HDR = 16                  # BaseHeader
    _MSMQ_INTERNAL_MIN = 20         # BaseHeader + InternalHeader
    _MSMQ_SESSION_HEADER = 16
    _MSMQ_MAX_PACKET = 0x00400000
    _MSMQ_FLAG_IN = 0x0008          # BaseHeader.Flags bit 3
    _MSMQ_FLAG_SH = 0x0010          # BaseHeader.Flags bit 4
    _MSMQ_ORDER_QUEUE_ID = 4        # PrivateQueueIdentifier of order_queue$
    # UserHeader.Flags ([MS-MQMQ] 2.2.19.2): MP, and the bits that announce
    # anything but the DestinationQueue and the MessagePropertiesHeader
    # (AQ, RQ, SH, TH, CQ, MQ, AH, HH): the OrderAck layout has none of them
    _MSMQ_UF_MP = 1 << 21
    _MSMQ_UF_OTHER = 0xE000 | 0x70000 | (1 << 19) | (1 << 20) | (1 << 22) | (1 << 23) | (1 << 25) | (1 << 28)
    _MSMQ_MP_FIXED = 56             # MessagePropertiesHeader fixed part
    _MSMQ_MAX_LABEL = 250           # WCHARs
    _MSMQ_CLASS_ORDER_ACK = 0x00FF  # MQMSG_CLASS_ORDER_ACK; >= 0x4000: FinalAck

cdef enum:
    # the pure framer's modes
    MS_SYNC = 0
    MS_TAIL = 1
    MS_SCAN = 2
    # framing_errors codes (tests/test_framer_msmq_compiled.py compares them)
    MSE_BAD_VERSION = 1
    MSE_BAD_SIGNATURE = 2
    MSE_BAD_SIZE = 3
    MSE_BAD_INTERNAL_SIZE = 4
    MSE_AFTER_GAP = 5
    MSE_NO_SIGNATURE = 6
    MSE_AFTER_CUT = 7
    MSE_STILL_NO_PACKET = 1
    MSE_NONE_BEFORE_GAP = 2
    MSE_ENDED_BEFORE_PACKET = 3
    MSE_HEADER_THEN_GAP = 100
    MSE_GAP_IN_PACKET = 101
    MSE_TAIL_BEFORE_GAP = 102
    MSE_TAIL = 103
    MSE_TAIL_AT_CLOSE = 104
    MSE_HEADER_AT_CLOSE = 105
    MSE_TRUNCATED_AT_CLOSE = 106
    MSE_BUDGET_CUT = 107
    # the ``kind`` of a packet that may be an OrderAck / FinalAck outside the layout
    # _msmq_order_ack_kind reads: classified by the caller with framing.packet_kind
    _MSMQ_CLASSIFY_KIND = 7
    # the ``kind`` of FramingError records in the capture core's output
    _MSMQ_ERROR_KIND = 8
MSMQ_CLASSIFY_KIND = _MSMQ_CLASSIFY_KIND
MSMQ_ERROR_KIND = _MSMQ_ERROR_KIND
assert MSMQ_CLASSIFY_KIND == len(MSMQ_KIND_NAMES)
MSMQ_ERROR_CODES = {"BAD_VERSION": MSE_BAD_VERSION, "BAD_SIGNATURE": MSE_BAD_SIGNATURE,
                    "BAD_SIZE": MSE_BAD_SIZE, "BAD_INTERNAL_SIZE": MSE_BAD_INTERNAL_SIZE,
                    "AFTER_GAP": MSE_AFTER_GAP, "NO_SIGNATURE": MSE_NO_SIGNATURE,
                    "STILL_NO_PACKET": MSE_STILL_NO_PACKET, "NONE_BEFORE_GAP": MSE_NONE_BEFORE_GAP,
                    "ENDED_BEFORE_PACKET": MSE_ENDED_BEFORE_PACKET, "HEADER_THEN_GAP": MSE_HEADER_THEN_GAP,
                    "GAP_IN_PACKET": MSE_GAP_IN_PACKET, "TAIL_BEFORE_GAP": MSE_TAIL_BEFORE_GAP,
                    "TAIL": MSE_TAIL, "TAIL_AT_CLOSE": MSE_TAIL_AT_CLOSE, "HEADER_AT_CLOSE": MSE_HEADER_AT_CLOSE,
                    "TRUNCATED_AT_CLOSE": MSE_TRUNCATED_AT_CLOSE, "AFTER_CUT": MSE_AFTER_CUT,
                    "BUDGET_CUT": MSE_BUDGET_CUT}
cdef enum:
    # framing.SCAN_CHUNK: scanned garbage is reported in pieces of this many bytes (the last one shorter)
    _MSMQ_SCAN_CHUNK = 1 << 20
MSMQ_SCAN_CHUNK = _MSMQ_SCAN_CHUNK

cdef struct MSMQFramer:
    int64_t offset                  # stream offset of buf[0] at the next msmq_framer_run
    int64_t packets                 # packets emitted so far
    int bailed
    int mode                        # MS_SYNC, MS_TAIL, MS_SCAN
    int64_t tail_end                # TAIL: the broken packet's end and start
    int64_t tail_of
    int64_t scan_off                # SCAN: candidates before this stream offset are decided
    int64_t lost_at                 # where synchronisation was lost
    int prob                        # the garbage's problem (framing_errors code) and numbers
    int64_t prob_a
    int64_t prob_b
    int64_t resyncs                 # Resynchronised events so far, and their skipped bytes
    int64_t resync_bytes
    error_fn err_emit               # NULL: every FramingError is a BAIL
    resync_fn resync_emit           # NULL: Resynchronised events counted only


cdef inline uint32_t _msmq_u32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline int _msmq_header_problem(const uint8_t* p, Py_ssize_t n, int64_t* a, int64_t* b) noexcept nogil:
    """framing.base_header_problem(p[:n]): 0, or the problem's code (its numbers in a, b)."""
    cdef Py_ssize_t i, m
    cdef uint32_t size
    cdef const char* sig = b"LIOR"
    if n < 1:
        return 0
    if p[0] != _MSMQ_VERSION:
        a[0] = p[0]
        b[0] = 0
        return MSE_BAD_VERSION
    if n > 4:
        m = 8 if n > 8 else n
        for i in range(4, m):
            if p[i] != <uint8_t>sig[i - 4]:
                a[0] = 0
                for i in range(4, m):
                    a[0] = (a[0] << 8) | p[i]
                b[0] = m - 4
                return MSE_BAD_SIGNATURE
    if n >= _MSMQ_HDR:
        size = _msmq_u32(p + 8)
        a[0] = size
        b[0] = 0
        if size < _MSMQ_HDR or size > _MSMQ_MAX_PACKET:
            return MSE_BAD_SIZE
        if (p[2] & _MSMQ_FLAG_IN) and size < _MSMQ_INTERNAL_MIN:
            return MSE_BAD_INTERNAL_SIZE
    return 0


cdef inline bint _msmq_may_be_order_ack(const uint8_t* d, Py_ssize_t n) noexcept nogil:
    """framing._may_be_order_ack(d[:n]): UserHeader.Flags.DQ selects a private
    queue id 4, or a direct format name whose bytes, ASCII-lowercased, hold
    "order_queue$" in UTF-16LE."""
    # "order_queue$" as UTF-16LE: the ASCII letters, each followed by a 0 byte
    cdef const char* pat = b"order_queue$"
    cdef uint32_t dq
    cdef Py_ssize_t count, end, i, k
    cdef uint8_t c
    if n < 68:
        return False
    dq = (_msmq_u32(d + 60) >> 10) & 0x7
    if dq == 3:
        return _msmq_u32(d + 64) == _MSMQ_ORDER_QUEUE_ID
    if dq == 7:
        count = d[64] | (<Py_ssize_t>d[65] << 8)
        end = 66 + count
        if end > n:
            end = n
        i = 66
        while i + 24 <= end:
            k = 0
            while k < 12:
                c = d[i + 2 * k]
                if c >= 0x41 and c <= 0x5A:       # bytes.lower(): ASCII A-Z only
                    c = c | 0x20
                if c != <uint8_t>pat[k] or d[i + 2 * k + 1] != 0:
                    break
                k += 1
            if k == 12:
                return True
            i += 1
    return False


cdef int _msmq_order_ack_kind(const uint8_t* d, Py_ssize_t end) noexcept nogil:
    """The kind framing.packet_kind gives the whole packet d[:end] (BaseHeader.Flags
    0, no SessionHeader, _msmq_may_be_order_ack true) through
    decode_packet(lenient=True) and packet._classify, or -1 when the layout is
    not the strict one reproduced here (then the caller classifies the packet).  The decode's rules:
    UserHeader (48 fixed bytes at 16, the DestinationQueue at 64, padded to 4),
    then the MessagePropertiesHeader; kind OrderAck / FinalAck when the queue
    is order_queue$ (PrivateQueueFormatNameId 4, or a DirectFormatName whose
    str.upper() ends with \\PRIVATE$\\ORDER_QUEUE$), the Label is
    "QM Ordering Ack" and MessageClass is 0x00FF / >= 0x4000."""
    cdef const char* tail = b"\\PRIVATE$\\ORDER_QUEUE$"     # 22 characters
    cdef const char* label = b"QM Ordering Ack"                  # 15 characters
    cdef uint32_t uf = _msmq_u32(d + 60)
    cdef uint32_t dq = (uf >> 10) & 0x7
    cdef Py_ssize_t pos, count, stop, need, units, k, q, n, size
    cdef uint8_t c
    cdef bint is_oq, lab
    cdef int cls
    if (uf & _MSMQ_UF_OTHER) or not (uf & _MSMQ_UF_MP):
        return -1
    if dq == 3:
        if end < 68:
            return -1
        is_oq = _msmq_u32(d + 64) == _MSMQ_ORDER_QUEUE_ID
        pos = 68
    elif dq == 7:
        if end < 66:
            return -1
        count = d[64] | (<Py_ssize_t>d[65] << 8)
        if count > end - 66 or count < 2 or count & 1:
            return -1                               # DecodeError in UserHeader.decode
        stop = 66 + count
        need = (-(stop - 16)) & 3
        if need > end - stop:
            return -1
        units = count >> 1
        if d[stop - 2] == 0 and d[stop - 1] == 0:
            units -= 1                              # the terminating null is not part of the text
        # the last min(units, 22) code units decide endswith() when they are ASCII
        # (str.upper() of a non-ASCII character may give ASCII letters: BAIL)
        k = units if units < 22 else 22
        while k > 0:
            if d[66 + 2 * (units - k) + 1] != 0 or d[66 + 2 * (units - k)] >= 0x80:
                return -1
            k -= 1
        is_oq = units >= 22
        k = 0
        while is_oq and k < 22:
            c = d[66 + 2 * (units - 22 + k)]
            if c >= 0x61 and c <= 0x7A:
                c = c - 0x20
            if c != <uint8_t>tail[k]:
                is_oq = False
            k += 1
        pos = stop + need
    else:
        return -1
    if not is_oq:
        return MSMQ_KIND_USER_MESSAGE
    # MessagePropertiesHeader at pos
    if end - pos < _MSMQ_MP_FIXED:
        return -1
    n = d[pos + 1]                                  # LabelLength, WCHARs
    if n > _MSMQ_MAX_LABEL:
        return -1
    q = pos + _MSMQ_MP_FIXED
    if 2 * n > end - q:
        return -1
    lab = n == 15 or n == 16
    if lab and n == 16:
        lab = d[q + 30] == 0 and d[q + 31] == 0
    k = 0
    while lab and k < 15:
        if d[q + 2 * k] != <uint8_t>label[k] or d[q + 2 * k + 1] != 0:
            lab = False
        k += 1
    q += 2 * n
    size = _msmq_u32(d + pos + 52)                  # ExtensionSize
    if size > end - q:
        return -1
    q += size
    size = _msmq_u32(d + pos + 32)                  # MessageSize
    if size > end - q:
        return -1
    q += size
    if ((-(q - pos)) & 3) > end - q:
        return -1
    if not lab:
        return MSMQ_KIND_USER_MESSAGE
    cls = d[pos + 2] | (d[pos + 3] << 8)
    if cls == _MSMQ_CLASS_ORDER_ACK:
        return MSMQ_KIND_ORDER_ACK
    if cls >= 0x4000:
        return MSMQ_KIND_FINAL_ACK
    return MSMQ_KIND_USER_MESSAGE


cdef void msmq_framer_init(MSMQFramer* f, int64_t offset) noexcept nogil:
    f.offset = offset
    f.packets = 0
    f.bailed = 0
    f.mode = MS_SYNC
    f.tail_end = f.tail_of = 0
    f.scan_off = f.lost_at = offset
    f.prob = 0
    f.prob_a = f.prob_b = 0
    f.resyncs = f.resync_bytes = 0
    f.err_emit = NULL
    f.resync_emit = NULL


cdef void msmq_framer_free(MSMQFramer* f) noexcept nogil:
    pass                            # nothing allocated


cdef inline int _msmq_error(MSMQFramer* f, void* ctx, int64_t start, const uint8_t* raw, Py_ssize_t n,
                            int code, int64_t a, int64_t b, int64_t c, int64_t d) noexcept nogil:
    """framing._error: raw[0:n] (all of it) at stream offset start.  0 or -1."""
    if f.err_emit == NULL:
        return -1
    return f.err_emit(ctx, start, raw, n, n, 0, code, a, b, c, d)


cdef int _msmq_garbage(MSMQFramer* f, void* ctx, int64_t start, const uint8_t* raw, Py_ssize_t n,
                       int suffix, int64_t c, int64_t d) noexcept nogil:
    """framing._report_garbage: the scanned bytes raw[0:n], in pieces of SCAN_CHUNK
    ("still no packet"), then the rest with the problem and a suffix.  0 or -1."""
    while n >= _MSMQ_SCAN_CHUNK:
        if _msmq_error(f, ctx, start, raw, _MSMQ_SCAN_CHUNK, f.prob + 16 * MSE_STILL_NO_PACKET, f.prob_a, f.prob_b,
                       0, 0) < 0:
            return -1
        f.prob = MSE_NO_SIGNATURE
        f.prob_a = f.prob_b = 0
        start += _MSMQ_SCAN_CHUNK
        raw += _MSMQ_SCAN_CHUNK
        n -= _MSMQ_SCAN_CHUNK
    if n > 0:
        return _msmq_error(f, ctx, start, raw, n, f.prob + 16 * suffix, f.prob_a, f.prob_b, c, d)
    return 0


cdef inline void _msmq_enter_scan(MSMQFramer* f, int64_t scan_off, int64_t lost_at, int prob, int64_t a,
                                  int64_t b) noexcept nogil:
    f.mode = MS_SCAN
    f.scan_off = scan_off
    f.lost_at = lost_at
    f.prob = prob
    f.prob_a = a
    f.prob_b = b


cdef int _msmq_kind(const uint8_t* p, Py_ssize_t total) noexcept nogil:
    """framing.packet_kind of the whole packet p[0:total], or _MSMQ_CLASSIFY_KIND:
    an OrderAck candidate the caller classifies with framing.packet_kind."""
    cdef uint16_t flags = <uint16_t>(p[2] | (p[3] << 8))
    cdef int pt
    if flags & _MSMQ_FLAG_IN:
        pt = p[18] & 0xF
        if pt == 1:
            return MSMQ_KIND_SESSION_ACK
        if pt == 2:
            return MSMQ_KIND_ESTABLISH_CONNECTION
        if pt == 3:
            return MSMQ_KIND_CONNECTION_PARAMETERS
        return MSMQ_KIND_INTERNAL
    if flags == 0 and _msmq_may_be_order_ack(p, total):
        pt = _msmq_order_ack_kind(p, total)
        return pt if pt >= 0 else _MSMQ_CLASSIFY_KIND
    return MSMQ_KIND_USER_MESSAGE


cdef inline Py_ssize_t _msmq_framed(const uint8_t* p) noexcept nogil:
    """framing.framed_length of the (whole, valid) BaseHeader at p."""
    cdef uint16_t flags = <uint16_t>(p[2] | (p[3] << 8))
    cdef Py_ssize_t total = _msmq_u32(p + 8)
    if flags & _MSMQ_FLAG_SH:
        if not (flags & _MSMQ_FLAG_IN) or total == _MSMQ_INTERNAL_MIN:
            total += _MSMQ_SESSION_HEADER
    return total


cdef Py_ssize_t _msmq_find_sig(const uint8_t* buf, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """buf.find(b"LIOR", i, n), or -1."""
    while i + 4 <= n:
        if buf[i] == 0x4C and buf[i + 1] == 0x49 and buf[i + 2] == 0x4F and buf[i + 3] == 0x52:
            return i
        i += 1
    return -1


cdef Py_ssize_t _msmq_run(MSMQFramer* f, const uint8_t* buf, Py_ssize_t n, emit_fn emit, void* ctx,
                          bint closed) noexcept nogil:
    """framing.MSMQStreamFramer._run over buf[0:n] (stream offset f.offset),
    ``closed``: the stream ended after them.  The bytes consumed, or
    FRAMER_BAIL."""
    cdef Py_ssize_t pos = 0, avail, total, need, start, j, c, wait, upto, m
    cdef const uint8_t* p
    cdef int kind, prob
    cdef int64_t a = 0, b = 0
    if f.bailed:
        return FRAMER_BAIL
    while True:
        if f.mode == MS_SYNC:
            avail = n - pos
            if avail <= 0:
                break
            p = buf + pos
            # framing._step_sync: the Signature judged whole, or at the close
            prob = _msmq_header_problem(p, avail if avail >= 8 or closed else (4 if avail > 4 else avail), &a, &b)
            if prob:
                _msmq_enter_scan(f, f.offset + pos + 1, f.offset + pos, prob, a, b)
                continue
            if avail < _MSMQ_HDR:
                if closed:
                    if _msmq_error(f, ctx, f.offset + pos, p, avail, MSE_HEADER_AT_CLOSE, avail, 0, 0, 0) < 0:
                        f.bailed = 1
                        return FRAMER_BAIL
                    pos = n
                break
            total = _msmq_framed(p)
            if avail < total:
                if closed:
                    if _msmq_error(f, ctx, f.offset + pos, p, avail, MSE_TRUNCATED_AT_CLOSE, total,
                                   _msmq_u32(p + 8), avail, 0) < 0:
                        f.bailed = 1
                        return FRAMER_BAIL
                    pos = n
                break               # waiting for the rest of the packet
            kind = _msmq_kind(p, total)
            if emit(ctx, f.offset + pos, p, total, kind, 0) != 0:
                f.bailed = 1        # out of memory
                return FRAMER_BAIL
            f.packets += 1
            pos += total
        elif f.mode == MS_TAIL:
            need = <Py_ssize_t>(f.tail_end - (f.offset + pos))
            avail = n - pos
            if avail >= need:
                if _msmq_error(f, ctx, f.offset + pos, buf + pos, need, MSE_TAIL, f.tail_of, 0, 0, 0) < 0:
                    f.bailed = 1
                    return FRAMER_BAIL
                pos += need
                f.mode = MS_SYNC
                continue
            if closed and avail:
                if _msmq_error(f, ctx, f.offset + pos, buf + pos, avail, MSE_TAIL_AT_CLOSE, f.tail_of, need - avail,
                               0, 0) < 0:
                    f.bailed = 1
                    return FRAMER_BAIL
                pos = n
            break
        else:   # SCAN: framing._step_scan
            start = <Py_ssize_t>(f.scan_off - f.offset)
            if start < pos:
                start = pos
            wait = -1
            while True:
                j = _msmq_find_sig(buf, start + 4, n)
                if j < 0:
                    break
                c = j - 4
                if buf[c] == _MSMQ_VERSION:
                    if n - c < _MSMQ_HDR:
                        wait = c        # cannot decide yet: wait for the rest of this header
                        break
                    if _msmq_header_problem(buf + c, _MSMQ_HDR, &a, &b) == 0:
                        # framing._found
                        if c > pos and _msmq_garbage(f, ctx, f.offset + pos, buf + pos, c - pos, 0, 0, 0) < 0:
                            f.bailed = 1
                            return FRAMER_BAIL
                        f.resyncs += 1
                        f.resync_bytes += f.offset + c - f.lost_at
                        if f.resync_emit != NULL and f.resync_emit(ctx, f.offset + c, f.offset + c - f.lost_at) < 0:
                            f.bailed = 1
                            return FRAMER_BAIL
                        pos = c
                        f.mode = MS_SYNC
                        break
                start = c + 1
            if f.mode == MS_SYNC:
                continue
            if wait >= 0 and not closed:
                f.scan_off = f.offset + wait
                upto = wait
            elif closed:
                if pos < n:
                    if _msmq_garbage(f, ctx, f.offset + pos, buf + pos, n - pos, MSE_ENDED_BEFORE_PACKET, 0, 0) < 0:
                        f.bailed = 1
                        return FRAMER_BAIL
                    pos = n
                f.mode = MS_SYNC
                break
            else:
                upto = start if start > n - 7 else n - 7
                f.scan_off = f.offset + upto
            # framing._flush_garbage: scanned garbage in pieces of SCAN_CHUNK from its start
            m = (upto - pos) - (upto - pos) % _MSMQ_SCAN_CHUNK
            if m > 0:
                if _msmq_garbage(f, ctx, f.offset + pos, buf + pos, m, MSE_STILL_NO_PACKET, 0, 0) < 0:
                    f.bailed = 1
                    return FRAMER_BAIL
                pos += m
            break
    f.offset += pos
    return pos


cdef Py_ssize_t msmq_framer_run(MSMQFramer* f, const uint8_t* buf, Py_ssize_t n,
                                emit_fn emit, void* ctx) noexcept nogil:
    """Emit the packets and FramingErrors of buf[0:n] (stream offset f.offset);
    return the bytes consumed, or FRAMER_BAIL."""
    return _msmq_run(f, buf, n, emit, ctx, False)


cdef void _msmq_after_broken(MSMQFramer* f, int64_t end, int64_t start, int64_t here, int64_t after) noexcept nogil:
    """framing._after_broken_packet: a gap [here, after) hit the packet [start, end)."""
    f.offset = after
    if after < end:
        f.mode = MS_TAIL
        f.tail_end = end
        f.tail_of = start
    elif after == end:
        f.mode = MS_SYNC
    else:
        _msmq_enter_scan(f, after, end, MSE_AFTER_GAP, after - here, here)


cdef int msmq_framer_gap(MSMQFramer* f, int64_t nbytes, const uint8_t* buf, Py_ssize_t avail,
                         void* ctx) noexcept nogil:
    """framing.MSMQStreamFramer.gap(nbytes), buf[0:avail] the bytes left
    unconsumed (the caller drops them after the call).  0 or FRAMER_BAIL."""
    cdef int64_t here, after, start
    cdef Py_ssize_t total
    cdef int r = 0, kind
    if f.bailed:
        return FRAMER_BAIL
    if nbytes <= 0:
        return 0
    here = f.offset + avail
    after = here + nbytes
    start = f.offset
    if f.mode == MS_SYNC:
        if avail == 0:
            f.offset = after
            _msmq_enter_scan(f, after, start, MSE_AFTER_GAP, nbytes, here)
        elif avail < _MSMQ_HDR:
            r = _msmq_error(f, ctx, start, buf, avail, MSE_HEADER_THEN_GAP, avail, nbytes, 0, 0)
            f.offset = after
            _msmq_enter_scan(f, after, start, MSE_AFTER_GAP, nbytes, here)
        else:
            total = _msmq_framed(buf)
            # framing._prefix_kind: no decode
            if not (buf[2] & _MSMQ_FLAG_IN):
                kind = MSMQ_KIND_USER_MESSAGE
            elif avail < _MSMQ_INTERNAL_MIN:
                kind = MSMQ_KIND_INTERNAL
            else:
                kind = buf[18] & 0xF
                if kind < 1 or kind > 3:
                    kind = MSMQ_KIND_INTERNAL
            r = _msmq_error(f, ctx, start, buf, avail, MSE_GAP_IN_PACKET, nbytes, here, total * 8 + kind, avail)
            _msmq_after_broken(f, start + total, start, here, after)
    elif f.mode == MS_TAIL:
        if avail:
            r = _msmq_error(f, ctx, start, buf, avail, MSE_TAIL_BEFORE_GAP, f.tail_of, nbytes, here, 0)
        _msmq_after_broken(f, f.tail_end, f.tail_of, here, after)
    else:
        if avail:
            r = _msmq_garbage(f, ctx, start, buf, avail, MSE_NONE_BEFORE_GAP, nbytes, here)
        f.prob = MSE_AFTER_GAP
        f.prob_a = nbytes
        f.prob_b = here
        f.offset = after
        f.scan_off = after
    if r < 0:
        f.bailed = 1
        return FRAMER_BAIL
    return 0


cdef int msmq_framer_close(MSMQFramer* f, const uint8_t* buf, Py_ssize_t avail, emit_fn emit,
                           void* ctx) noexcept nogil:
    """framing.MSMQStreamFramer.close: what is left (a partial header or
    packet, garbage, a broken packet's tail) as FramingErrors.  0 or
    FRAMER_BAIL."""
    cdef Py_ssize_t r = _msmq_run(f, buf, avail, emit, ctx, True)
    if r < 0:
        return FRAMER_BAIL
    return 0


cdef Py_ssize_t msmq_framer_cut(MSMQFramer* f, const uint8_t* buf, Py_ssize_t n, int64_t limit,
                                void* ctx) noexcept nogil:
    """framing.MSMQStreamFramer.cut(limit) with buf[0:n] the bytes the framer
    left unconsumed (it has run over them): all of them one FramingError
    (BUDGET_CUT), then a scan for the next packet after them (AFTER_CUT).  The
    bytes consumed (n), or FRAMER_BAIL."""
    cdef int64_t end
    if f.bailed:
        return FRAMER_BAIL
    if n == 0:
        return 0
    end = f.offset + n
    if _msmq_error(f, ctx, f.offset, buf, n, MSE_BUDGET_CUT, limit, 0, 0, 0) < 0:
        f.bailed = 1
        return FRAMER_BAIL
    f.offset = end
    _msmq_enter_scan(f, end, end, MSE_AFTER_CUT, end, limit)
    return n


# ---------------------------------------------------------------------- test wrapper

def msmq_classify(data):
    """The kind of a packet emitted as MSMQ_CLASSIFY_KIND: the pure framer's
    own classification (mqcodec.msmq.framing.packet_kind)."""
    from mqcodec.msmq.framing import packet_kind
    return packet_kind(data)


cdef int _msmq_list_emit(void* ctx, int64_t start, const uint8_t* data, Py_ssize_t length,
                         int kind, int md_only) noexcept nogil:
    with gil:
        try:
            raw = (<const char*>data)[:length]
            (<list>ctx).append((start, raw, MSMQ_KIND_NAMES[kind] if kind != _MSMQ_CLASSIFY_KIND
                                else msmq_classify(raw), md_only))
        except BaseException:
            return -1
    return 0


cdef int _msmq_list_error(void* ctx, int64_t start, const uint8_t* raw, Py_ssize_t rawlen, int64_t length,
                          int truncated, int code, int64_t a, int64_t b, int64_t c, int64_t d) noexcept nogil:
    with gil:
        try:
            (<list>ctx).append(("ERROR", start, (<const char*>raw)[:rawlen], code, a, b, c, d))
        except BaseException:
            return -1
    return 0


cdef class FastMSMQFramer:
    """Python face of the compiled framer, for tests: keeps the unconsumed
    bytes itself, as the capture core does.  feed(), gap(n) and close()
    return the events in order: (start, bytes, kind, md_only) for a packet,
    ("ERROR", start, raw, code, a, b, c, d) for a FramingError
    (framing_errors.describe(code, a, b, c, d) gives its text),
    ("RESYNC", offset, skipped) for a Resynchronised event, with "BAIL"
    appended when the framer bails (feeding after that raises RuntimeError).
    ``resyncs`` and ``resync_bytes`` count the Resynchronised events."""
    cdef MSMQFramer _f
    cdef bytes _pending
    cdef bint _bailed
    cdef bint _closed

    def __init__(self, offset=0):
        msmq_framer_init(&self._f, offset)
        self._f.err_emit = _msmq_list_error
        self._f.resync_emit = _collect_resync
        self._pending = b""
        self._bailed = False
        self._closed = False

    def __dealloc__(self):
        msmq_framer_free(&self._f)

    @property
    def offset(self):
        """Stream offset of the first unconsumed byte."""
        return self._f.offset

    @property
    def pending(self):
        """The bytes kept for the next feed."""
        return self._pending

    @property
    def resyncs(self):
        return self._f.resyncs

    @property
    def resync_bytes(self):
        return self._f.resync_bytes

    def feed(self, bytes data):
        if self._bailed or self._closed:
            raise RuntimeError("feed() after %s" % ("BAIL" if self._bailed else "close()"))
        cdef bytes buf = self._pending + data if self._pending else data
        cdef list out = []
        cdef const uint8_t* p = <const uint8_t*><const char*>buf
        cdef Py_ssize_t n = len(buf)
        cdef Py_ssize_t used
        with nogil:
            used = msmq_framer_run(&self._f, p, n, _msmq_list_emit, <void*>out)
        if used == FRAMER_BAIL:
            self._bailed = True
            self._pending = b""
            out.append("BAIL")
        else:
            self._pending = buf[used:]
        return out

    def gap(self, int64_t nbytes):
        if self._bailed or self._closed:
            raise RuntimeError("gap() after %s" % ("BAIL" if self._bailed else "close()"))
        cdef list out = []
        if msmq_framer_gap(&self._f, nbytes, <const uint8_t*><const char*>self._pending, len(self._pending),
                           <void*>out) == FRAMER_BAIL:
            self._bailed = True
            out.append("BAIL")
        self._pending = b""
        return out

    def close(self):
        cdef list out = []
        if self._bailed or self._closed:
            return out
        self._closed = True
        if msmq_framer_close(&self._f, <const uint8_t*><const char*>self._pending, len(self._pending),
                             _msmq_list_emit, <void*>out) == FRAMER_BAIL:
            self._bailed = True
            out.append("BAIL")
        self._pending = b""
        return out
