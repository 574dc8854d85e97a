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
#     PacketSize, the queue name's tail ASCII); any other candidate BAILs.
# Everything else the pure framer does (FramingError, Resynchronised, scan
# mode, gaps, the truncated packet reported at close) BAILs.  A packet is
# always contiguous in the caller's buffer: it is passed by pointer, never
# copied, and the framer keeps no bytes of its own.

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

cdef struct MSMQFramer:
    int64_t offset                  # stream offset of buf[0] at the next msmq_framer_run
    int64_t packets                 # packets emitted so far


cdef inline uint32_t _msmq_u32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline bint _msmq_header_bad(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """framing.check_base_header(p[:n]) is not None (n >= 1)."""
    cdef Py_ssize_t i, m
    cdef uint32_t size
    if p[0] != _MSMQ_VERSION:
        return True
    if n > 4:
        m = 8 if n > 8 else n
        # b"LIOR"
        if p[4] != 0x4C:
            return True
        if m > 5 and p[5] != 0x49:
            return True
        if m > 6 and p[6] != 0x4F:
            return True
        if m > 7 and p[7] != 0x52:
            return True
    if n >= _MSMQ_HDR:
        size = _msmq_u32(p + 8)
        if size < _MSMQ_HDR or size > _MSMQ_MAX_PACKET:
            return True
        if (p[2] & _MSMQ_FLAG_IN) and size < _MSMQ_INTERNAL_MIN:
            return True
    return False


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
    decode_packet(lenient=True) and packet._classify, or -1 (BAIL) when the
    layout is not the strict one reproduced here.  The decode's rules:
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


cdef void msmq_framer_free(MSMQFramer* f) noexcept nogil:
    pass                            # nothing allocated


cdef Py_ssize_t msmq_framer_run(MSMQFramer* f, const uint8_t* buf, Py_ssize_t n,
                                emit_fn emit, void* ctx) noexcept nogil:
    """Emit every whole packet at the start of buf[0:n]; return the bytes
    consumed (the whole packets), or FRAMER_BAIL."""
    cdef Py_ssize_t pos = 0, avail, total
    cdef const uint8_t* p
    cdef uint32_t size
    cdef uint16_t flags
    cdef int kind, pt
    while True:
        avail = n - pos
        if avail <= 0:
            break
        p = buf + pos
        if _msmq_header_bad(p, avail):
            return FRAMER_BAIL      # the pure framer scans: FramingError, Resynchronised
        if avail < _MSMQ_HDR:
            break
        flags = <uint16_t>(p[2] | (p[3] << 8))
        size = _msmq_u32(p + 8)
        total = size
        if flags & _MSMQ_FLAG_SH:
            if not (flags & _MSMQ_FLAG_IN) or size == _MSMQ_INTERNAL_MIN:
                total += _MSMQ_SESSION_HEADER
        if avail < total:
            break                   # waiting for the rest of the packet
        if flags & _MSMQ_FLAG_IN:
            pt = p[18] & 0xF
            if pt == 1:
                kind = MSMQ_KIND_SESSION_ACK
            elif pt == 2:
                kind = MSMQ_KIND_ESTABLISH_CONNECTION
            elif pt == 3:
                kind = MSMQ_KIND_CONNECTION_PARAMETERS
            else:
                kind = MSMQ_KIND_INTERNAL
        elif flags == 0 and _msmq_may_be_order_ack(p, total):
            kind = _msmq_order_ack_kind(p, total)
            if kind < 0:
                return FRAMER_BAIL  # a candidate outside the layout reproduced here
        else:
            kind = MSMQ_KIND_USER_MESSAGE
        if emit(ctx, f.offset + pos, p, total, kind, 0) != 0:
            return FRAMER_BAIL
        f.packets += 1
        pos += total
    f.offset += pos
    return pos


cdef int msmq_framer_close(MSMQFramer* f, Py_ssize_t remaining) noexcept nogil:
    """0 when the pure framer's close() reports nothing more: no byte is left
    (any byte left is a partial BaseHeader or a truncated packet: FramingError)."""
    return 0 if remaining == 0 else FRAMER_BAIL


# ---------------------------------------------------------------------- test wrapper

cdef int _msmq_list_emit(void* ctx, int64_t start, const uint8_t* data, Py_ssize_t length,
                         int kind, int md_only) noexcept nogil:
    with gil:
        try:
            (<list>ctx).append((start, (<const char*>data)[:length], MSMQ_KIND_NAMES[kind], md_only))
        except BaseException:
            return -1
    return 0


cdef class FastMSMQFramer:
    """Python face of the compiled framer, for tests: keeps the unconsumed
    bytes itself, as the capture core does.  feed() returns a list of
    (start, bytes, kind, md_only), with "BAIL" appended when the framer bails
    (feeding after that raises RuntimeError); close() returns False on BAIL."""
    cdef MSMQFramer _f
    cdef bytes _pending
    cdef bint _bailed
    cdef bint _closed

    def __init__(self, offset=0):
        msmq_framer_init(&self._f, offset)
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

    def close(self):
        if self._bailed:
            return False
        self._closed = True
        if msmq_framer_close(&self._f, len(self._pending)) == FRAMER_BAIL:
            self._bailed = True
            return False
        return True
