# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled capture core: pcap/pcapng walk, link/IP/TCP decode, IPv4
fragment reassembly (the pure FragmentReassembler's rules), TCP reassembly
(in order, plus the pure reassembler's reorder buffer) and stream framing,
for the common case (docs/capture-core.md).

The pure pipeline (``mqcodec.capture`` + the pure framers, driven by
``mqcodec.convert.Converter``) is the reference: for every connection the
messages the core emits are exactly the pure pipeline's messages for it,
whatever happens on the connection (out-of-order segments, overlaps and
retransmissions, holes, snap-length cuts, damaged units, resynchronisation).
No connection is handed back: the core follows each one itself.  Frames it
does not decode (not IP, UDP, malformed headers) are deferred to the caller's
pure processor (``deferred`` below).

API::

    core = CaptureCore(mq_ports=(1414,), msmq_ports=(1801,), detect_by_content=True,
                       # keyword options: the pure pipeline's defaults, and the core's own caps
                       server_ports=DEFAULT_SERVER_PORTS, max_closed=65536, max_connections=1_000_000,
                       max_reassembly_bytes=4 << 20, max_reassembly_segments=4096,
                       max_total_buffer=None,   # the global byte budget: past it, supported -> False
                       units=False,             # also IBM MQ unit records (kind MQ_UNIT_KIND)
                       streams_by_frame=False)  # tcp_stream: the frame that opened the connection
    core.number_frames(numbers)  # optional, before each feed: the frame numbers of the records from the
                                 # next walked on (a window: core.records_walked, core.records_fed(n))
    core.feed(chunk)      # bytes-like, any size; partial records are kept
    core.finish()         # end of input: close every open connection (framers' close)
    core.finish(max_bytes)  # the same in steps: False once the output holds max_bytes; take(), call again
    b = core.take()       # dict of what was produced since the last take():
        seq int64, conn int64, direction int8 (0 c->s, 1 s->c), tcp_stream int64,
        stream_offset int64, frame int64, ts_ns int64 (frame/ts_ns = -1 where the
        pure converter has None), protocol int8 (0 mq, 1 msmq), kind int16
        (MQ_KIND_NAMES / MSMQ_KIND_NAMES), md_only bool, data bytes,
        offsets int64 (n+1), full_length int64 (unit records: the unit's whole
        length), deferred list[Frame] (capture order)
    core.connection(conn) -> (client_ip, client_port, server_ip, server_port, tcp_stream)
        (a connection of the last take()'s output or since: the core frees the
        record of a connection it forgot a take later)
    core.opened_frames() -> [the frame that opened each connection, in order]
        (streams_by_frame=True)
    core.stats -> dict
    core.format ('pcap' / 'pcapng' / None), core.linktype (pcapng: the first interface's)
    core.supported -> False when the fast path cannot reproduce the pure
        pipeline for this capture (a bad file header, a TCP connection whose
        creation the core cannot predict, ...): the caller must convert the
        whole capture with the pure pipeline (core.unsupported_reason says why).
    core.stop -> None, or (file offset, frame number) of the record/block where
        the pure parser stops (pcap: incl_len above 16 MiB; pcapng: any block
        the pure parser rejects; both: the file ends inside it)
    core.file_state, core.unread(), core.fed -> what the pure parser is fed to read
        the file on from there (capture.reader.capture_from)
    core.buffered_bytes -> bytes held for open fast-path connections and pending IPv4 fragments

"""
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdlib cimport malloc, free, realloc, calloc, qsort
from libc.string cimport memcpy, memmove, memset, memcmp
from libc.stdint cimport uint8_t, uint16_t, uint32_t, int8_t, int16_t, int32_t, int64_t, uint64_t, INT64_MAX

import socket

import numpy as np

include "capture_types.pxi"
include "framer_mq.pxi"
include "framer_msmq.pxi"

# ---------------------------------------------------------------------------
# constants
# ---------------------------------------------------------------------------
cdef enum:
    F_FIN = 0x01
    F_SYN = 0x02
    F_RST = 0x04
    F_ACK = 0x10

cdef enum:
    P_NONE = -1
    P_MQ = 0
    P_MSMQ = 1

cdef enum:
    C_FAST = 0
    C_FAILED = 1      # out of memory while following it: the feed raises MemoryError

# slot states
cdef enum:
    S_EMPTY = 0
    S_OPEN = 1
    S_CLOSED = 2
    S_TOMB = 3

# decode results
cdef enum:
    D_TCP = 0
    D_DEFER = 1
    D_FRAG = 2          # an IPv4 fragment (any protocol): deferred, and reassembled by the core

cdef int64_t MAX_RECORD_LEN = 16 * 1024 * 1024
cdef int64_t NS = 1000000000
cdef int64_t HALF32 = 1 << 31

# ---------------------------------------------------------------------------
# small growable C arrays
# ---------------------------------------------------------------------------
cdef struct Buf:
    uint8_t* p
    Py_ssize_t n
    Py_ssize_t cap

cdef int buf_reserve(Buf* b, Py_ssize_t extra) noexcept nogil:
    cdef Py_ssize_t need = b.n + extra, cap
    cdef uint8_t* q
    if need <= b.cap:
        return 0
    cap = b.cap * 2 if b.cap else 4096
    while cap < need:
        cap *= 2
    q = <uint8_t*>realloc(b.p, cap)
    if q == NULL:
        return -1
    b.p = q
    b.cap = cap
    return 0

cdef inline void buf_consume(Buf* b, Py_ssize_t r) noexcept nogil:
    """Drop the first r bytes (those a framer consumed)."""
    if r:
        memmove(b.p, b.p + r, b.n - r)
        b.n -= r

cdef int buf_append(Buf* b, const uint8_t* data, Py_ssize_t n) noexcept nogil:
    if buf_reserve(b, n) < 0:
        return -1
    memcpy(b.p + b.n, data, n)
    b.n += n
    return 0

cdef void buf_free(Buf* b) noexcept nogil:
    free(b.p)
    b.p = NULL
    b.n = 0
    b.cap = 0

cdef int grow(void** p, Py_ssize_t* cap, Py_ssize_t first, size_t elem) noexcept nogil:
    """Double the capacity ``cap`` of the array ``*p`` of ``elem``-byte elements
    (``first`` when it has none); -1 when memory runs out (``*p`` and ``cap`` unchanged)."""
    cdef Py_ssize_t n = cap[0] * 2 if cap[0] else first
    cdef void* q = realloc(p[0], n * elem)
    if q == NULL:
        return -1
    p[0] = q
    cap[0] = n
    return 0

cdef struct I64:
    int64_t* p
    Py_ssize_t n
    Py_ssize_t cap

cdef int i64_reserve(I64* a, Py_ssize_t need) noexcept nogil:
    """Capacity for at least ``need`` elements (with room to spare)."""
    cdef Py_ssize_t cap
    cdef int64_t* q
    if need <= a.cap:
        return 0
    cap = a.cap * 2 if a.cap else 256
    while cap < need + 1:
        cap *= 2
    q = <int64_t*>realloc(a.p, cap * sizeof(int64_t))
    if q == NULL:
        return -1
    a.p = q
    a.cap = cap
    return 0

cdef inline int i64_push(I64* a, int64_t v) noexcept nogil:
    if a.n == a.cap and i64_reserve(a, a.n + 1) < 0:
        return -1
    a.p[a.n] = v
    a.n += 1
    return 0

cdef void i64_free(I64* a) noexcept nogil:
    free(a.p)
    a.p = NULL
    a.n = 0
    a.cap = 0

# ---------------------------------------------------------------------------
# 4-tuple hash table (open addressing, linear probing)
# ---------------------------------------------------------------------------
cdef struct TKey:
    uint8_t src[16]
    uint8_t dst[16]
    uint16_t sport
    uint16_t dport
    uint8_t v6
    uint8_t pad[3]

cdef struct Slot:
    # the key is its connection's (Conn.key, reversed when dir is 1): a slot holds
    # no copy of it (24 bytes instead of 72; the connection's record is read anyway)
    uint64_t hash
    int64_t conn
    uint8_t state
    uint8_t dir           # the key is the connection's client -> server (0) or its reverse (1)

cdef struct Table:
    Slot* s
    Py_ssize_t cap        # power of two
    Py_ssize_t used       # S_OPEN + S_CLOSED
    Py_ssize_t tombs

cdef inline uint64_t key_hash(const TKey* k) noexcept nogil:
    cdef uint64_t w[5]
    memcpy(w, k, 40)
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL
    cdef int i
    for i in range(5):
        h ^= w[i]
        h *= 0xBF58476D1CE4E5B9ULL
        h ^= h >> 31
    return h

cdef int table_init(Table* t, Py_ssize_t cap) noexcept nogil:
    t.s = <Slot*>calloc(cap, sizeof(Slot))
    if t.s == NULL:
        return -1
    t.cap = cap
    t.used = 0
    t.tombs = 0
    return 0

cdef int table_grow(Table* t) noexcept nogil:
    cdef Table n
    cdef Py_ssize_t i, j, mask
    cdef Py_ssize_t cap = t.cap
    if (t.used + 1) * 2 > cap:
        cap *= 2
    if table_init(&n, cap) < 0:
        return -1
    mask = cap - 1
    for i in range(t.cap):
        if t.s[i].state == S_OPEN or t.s[i].state == S_CLOSED:
            j = <Py_ssize_t>(t.s[i].hash & mask)
            while n.s[j].state != S_EMPTY:
                j = (j + 1) & mask
            n.s[j] = t.s[i]
            n.used += 1
    free(t.s)
    t[0] = n
    return 0

cdef inline void table_delete(Table* t, Slot* s) noexcept nogil:
    s.state = S_TOMB
    t.used -= 1
    t.tombs += 1

cdef inline void key_reverse(const TKey* k, TKey* r) noexcept nogil:
    memcpy(r.src, k.dst, 16)
    memcpy(r.dst, k.src, 16)
    r.sport = k.dport
    r.dport = k.sport
    r.v6 = k.v6
    r.pad[0] = 0
    r.pad[1] = 0
    r.pad[2] = 0

# ---------------------------------------------------------------------------
# connections
# ---------------------------------------------------------------------------
cdef struct Pend:
    int64_t off
    int64_t length
    int64_t frame
    int64_t ts
    uint8_t* data         # NULL: a hole (bytes a snap length cut from an out-of-order segment)

cdef struct Half:
    # out-of-order segments waiting (TCPReassembler's pending/heap), sorted by offset
    Pend* pend
    Py_ssize_t npend
    Py_ssize_t pcap
    int64_t pbytes        # bytes of the waiting entries, holes included (TCPReassembler.pbytes)
    int64_t hbytes        # ... of them in holes (a budget counts captured bytes only)
    int64_t next          # next expected stream offset
    int64_t fin           # stream offset of the FIN
    int64_t max_ack
    bint has_fin
    bint has_max_ack
    bint closed
    int proto             # P_NONE (no framer yet), P_MQ, P_MSMQ
    bint framer_on
    MQFramer mq
    MSMQFramer ms
    Buf buf               # unconsumed bytes (stream offset buf_off)
    int64_t buf_off
    Buf tail              # the last delivered bytes, ending at next (TCPReassembler's tail)
    # the pure converter's marks list: (offset, frame, ts, rows, units), logical start mstart
    # (rows, units: those located in the mark so far, their ranks in message_key, call_key)
    int64_t* m
    Py_ssize_t mstart
    Py_ssize_t mn
    Py_ssize_t mcap
    # the order of its first event (StreamData, Gap, OverlapConflict) among the
    # capture's directions: the converter's dirs order, which the budget's ties follow
    int64_t dseq

cdef struct Live:
    Half h[2]

cdef struct Conn:
    # a record is freed once its connection is retired, out of the closed map and
    # past one take (release_records): memory for the connections the core follows
    # or remembers, not for every connection a capture ever had
    TKey key              # client -> server
    int64_t id            # the connection's number (take()'s conn: in order of opening); -1: free record
                          # (its tcp_stream, or with streams_by_frame its first frame: conn_stream)
    int64_t first_frame
    int64_t last_frame    # -1: not retired
    int64_t last_seen     # frame of its latest segment (the pure _Conn.last: eviction order)
    uint32_t base[2]
    uint8_t has_base[2]
    uint8_t syn[2]
    uint8_t fin_seen[2]
    uint8_t state         # C_FAST / C_FAILED
    uint8_t first_dir     # the direction of the segment that opened it (TCPReassembler.conns order)
    uint8_t retired
    uint8_t proto         # port-detected protocol + 1 (0: none)
    uint8_t fifo_refs     # the closed map's FIFO entries naming this record (0-2)
    int32_t id_at         # its entry in Core.ids (in the record's padding)
    Py_ssize_t open_pos   # its place in Core.open_idx while open; a free record: the next free one + 1
    Live* live

cdef enum:
    ID_EMPTY = -1
    ID_GONE = -2          # a deleted entry

cdef struct IdMap:
    # connection id -> record: open addressing from ``id & mask``, linear probing,
    # deleted entries marked.  An entry holds the record alone (4 bytes; the id is
    # the record's).  The ids held are mostly a window of consecutive ones, and the
    # driver asks about them in order: each sits at or next to its home, and lookups
    # walk the map in order
    int32_t* r            # a record, ID_EMPTY or ID_GONE
    Py_ssize_t cap        # power of two (0: not allocated)
    Py_ssize_t n          # ids held
    Py_ssize_t gone       # deleted entries (reused by later ids, dropped when rebuilt)

cdef int idmap_put(IdMap* m, Conn* conns, int64_t id, Py_ssize_t rec) noexcept nogil:
    """Add ``id``, the id of record ``rec`` (never held before: ids are given once)."""
    cdef IdMap n
    cdef Py_ssize_t i, j
    if (m.n + m.gone + 1) * 4 > m.cap * 3:   # (a quarter of the entries stay empty: lookups end)
        # rebuilt without the deleted entries, twice as large when more than half is held
        n.cap = m.cap if m.cap and (m.n + 1) * 2 <= m.cap else (m.cap * 2 if m.cap else 1024)
        n.n = m.n
        n.gone = 0
        n.r = <int32_t*>malloc(n.cap * sizeof(int32_t))
        if n.r == NULL:
            return -1
        memset(n.r, 0xFF, n.cap * sizeof(int32_t))
        for i in range(m.cap):
            if m.r[i] >= 0:
                j = <Py_ssize_t>(conns[m.r[i]].id & (n.cap - 1))
                while n.r[j] != ID_EMPTY:
                    j = (j + 1) & (n.cap - 1)
                n.r[j] = m.r[i]
                conns[m.r[i]].id_at = <int32_t>j
        free(m.r)
        m[0] = n
    i = <Py_ssize_t>(id & (m.cap - 1))
    while m.r[i] >= 0:
        i = (i + 1) & (m.cap - 1)
    if m.r[i] == ID_GONE:
        m.gone -= 1
    m.r[i] = <int32_t>rec
    conns[rec].id_at = <int32_t>i
    m.n += 1
    return 0

cdef Py_ssize_t idmap_find(const IdMap* m, const Conn* conns, int64_t id) noexcept nogil:
    """The map's place of ``id``, or -1."""
    cdef Py_ssize_t i
    if m.cap == 0 or id < 0:
        return -1
    i = <Py_ssize_t>(id & (m.cap - 1))
    while m.r[i] != ID_EMPTY:
        if m.r[i] >= 0 and conns[m.r[i]].id == id:
            return i
        i = (i + 1) & (m.cap - 1)
    return -1

cdef inline void idmap_delete(IdMap* m, Py_ssize_t i) noexcept nogil:
    m.r[i] = ID_GONE
    m.n -= 1
    m.gone += 1

cdef inline bint slot_holds(const Slot* s, const Conn* conns, const TKey* k) noexcept nogil:
    """Whether the slot's key (its connection's, or the reverse) is k."""
    cdef const TKey* ck = &conns[s.conn].key
    if s.dir == 0:
        return memcmp(ck, k, 40) == 0
    return (memcmp(ck.src, k.dst, 16) == 0 and memcmp(ck.dst, k.src, 16) == 0 and ck.sport == k.dport
            and ck.dport == k.sport and ck.v6 == k.v6)

cdef Slot* table_find(Table* t, const Conn* conns, const TKey* k, uint64_t h) noexcept nogil:
    """The live slot (S_OPEN/S_CLOSED) holding k, or NULL."""
    cdef Py_ssize_t mask = t.cap - 1
    cdef Py_ssize_t i = <Py_ssize_t>(h & mask)
    cdef Slot* s
    while True:
        s = &t.s[i]
        if s.state == S_EMPTY:
            return NULL
        if s.state != S_TOMB and s.hash == h and slot_holds(s, conns, k):
            return s
        i = (i + 1) & mask

cdef Slot* table_insert(Table* t, const Conn* conns, const TKey* k, uint64_t h) noexcept nogil:
    """A slot for k (existing live one, or a new one in state S_EMPTY: the caller
    sets its state, conn and dir before the table is searched again)."""
    cdef Slot* s = table_find(t, conns, k, h)
    cdef Py_ssize_t mask, i
    if s != NULL:
        return s
    if (t.used + t.tombs + 1) * 10 > t.cap * 6:
        if table_grow(t) < 0:
            return NULL
    mask = t.cap - 1
    i = <Py_ssize_t>(h & mask)
    while t.s[i].state == S_OPEN or t.s[i].state == S_CLOSED:
        i = (i + 1) & mask
    s = &t.s[i]
    if s.state == S_TOMB:
        t.tombs -= 1
    s.hash = h
    s.state = S_EMPTY   # caller sets the state
    t.used += 1
    return s

# ---------------------------------------------------------------------------
# the core's state (plain C so the walk runs without the GIL)
# ---------------------------------------------------------------------------
cdef struct Stats:
    int64_t frames
    int64_t deferred
    int64_t tcp_segments
    int64_t connections
    int64_t undetected
    int64_t messages
    int64_t retransmitted
    int64_t overlapping
    int64_t not_compared  # overlapping bytes not compared (before the tail)
    int64_t after_close
    int64_t unknown_conn
    int64_t tcp_fragments
    int64_t reassembled       # TCP segments of reassembled IPv4 datagrams
    int64_t out_of_order
    int64_t bad_ts            # frames whose time does not fit in int64 ns (ts = TS_UNKNOWN)
    int64_t evicted           # connections closed past max_connections
    # the pure converter's summary counters of the connections the core follows
    int64_t gaps
    int64_t gap_bytes
    int64_t resyncs
    int64_t resync_bytes
    int64_t framing_errors    # IBM MQ FramingError records
    int64_t conflicts         # differing copies recorded (x_*)

# IPv4 fragment reassembly: mqcodec.capture.ipfrag.FragmentReassembler (defaults
# of CaptureProcessor) in C.  Datagrams are kept in insertion order (the
# OrderedDict), at most FR_MAX_DATAGRAMS of them.
cdef enum:
    FR_MAX_DATAGRAMS = 1024
    FR_MAX_PIECES = 128
    FR_MAX_DATAGRAM = 65535
    FR_BUCKETS = 4096

cdef struct FPiece:
    int32_t off
    int32_t length
    int32_t at            # where its bytes are in the datagram's data

cdef struct FDgram:
    uint8_t src[4]
    uint8_t dst[4]
    uint16_t ident
    uint8_t proto
    int32_t end           # -1 until a fragment with MF clear is seen
    int32_t stored        # bytes of all pieces (copies included)
    int32_t npieces
    int64_t first_ts
    int32_t prev          # insertion order
    int32_t next
    int32_t hnext         # hash chain; free list
    int32_t dcap
    uint8_t* data
    FPiece pieces[FR_MAX_PIECES]   # by offset; equal offsets in arrival order

cdef struct FragTable:
    FDgram* d             # FR_MAX_DATAGRAMS slots (allocated at the first fragment)
    int32_t* buckets
    uint8_t* out          # the last reassembled payload
    int32_t free_head
    int32_t fresh         # slots never used yet: fresh .. FR_MAX_DATAGRAMS-1
    int32_t head          # oldest
    int32_t tail
    int32_t count
    int64_t bytes         # bytes held (pieces' copies)

cdef struct Core:
    # file
    int fmt               # 0 unknown, 1 pcap, 2 pcapng, 3 bad
    int big               # byte order of the records
    int64_t scale
    int linktype
    int64_t number        # next frame number
    int64_t now_frame     # the frame being processed, and its time (gaps it reveals)
    int64_t now_ts
    const int64_t* numbers  # number_frames(): the frame numbers of pcap records numbers_base.., or NULL
    int64_t n_numbers
    int64_t numbers_base  # the record numbers[0] numbers
    int64_t rec           # pcap records walked
    bint streams_by_frame # tcp_stream: the number of the frame that opened the connection
    int64_t base          # absolute offset of the first byte not consumed
    bint stopped
    int64_t stop_off
    int64_t stop_num
    bint unsupported
    const char* why
    # options
    uint16_t mq_ports[16]
    int n_mq
    uint16_t msmq_ports[16]
    int n_msmq
    uint16_t server_ports[16]
    int n_server
    bint detect
    bint units            # IBM MQ unit records (kind MQ_UNIT_KIND) besides messages
    bint all_frames       # CaptureCore(all_frames=True): stage (a) alone, every frame deferred, none decoded
    void* slog            # CaptureCore(stream_events=True): the list the TCP stream events go to
                          # (stage b's compiled face, log_stream), no framing; else NULL
    int64_t max_closed
    int64_t max_connections
    int64_t pure_max_bytes        # TCPReassembler max_reassembly_bytes
    int64_t pure_max_segments     # TCPReassembler max_reassembly_segments
    # connections
    Table tab
    Conn* conns           # the records (a connection's index in them is its record, not its id)
    Py_ssize_t nconns     # records ever made (free ones among them)
    Py_ssize_t conns_cap
    Py_ssize_t free_head  # the first free record + 1 (0: none)
    int64_t next_id       # connections opened so far
    IdMap ids             # connection id -> record, for the records held
    I64 retired_new       # records to free: those forgotten since the last take, and
    I64 retired_old       # those forgotten before it (freed at the next take)
    I64 opened            # streams_by_frame: the frame that opened each connection, by id
    int64_t open_conns
    Py_ssize_t* open_idx  # the open (not retired) connections' indices, open_conns of them, in no
    Py_ssize_t open_cap   # order (Conn.open_pos: where each is): what the budget and eviction walk
    int64_t live_closed
    int64_t* fifo         # the closed map's order: connection * 2 + which of its keys
    Py_ssize_t fifo_head
    Py_ssize_t fifo_n
    Py_ssize_t fifo_cap
    # output arena
    Buf data
    I64 offs              # message end offsets (start at 0 implied)
    I64 o_seq
    I64 o_conn
    I64 o_dir
    I64 o_stream
    I64 o_off
    I64 o_frame
    I64 o_ts
    I64 o_proto
    I64 o_kind
    I64 o_md
    I64 o_rank            # the record's rank in its mark (its frame): message_key, call_key (-1: no mark)
    I64 o_full            # MQ unit records: the unit's whole length (messages: their length;
                          # error records: their extent in the stream)
    # IBM MQ framing error records (kind MQ_ERROR_KIND): the record's index in the
    # arena, the error's code and numbers (framing_errors.describe), raw cut short
    I64 e_idx
    I64 e_code
    I64 e_a
    I64 e_b
    I64 e_c
    I64 e_d
    I64 e_trunc
    # differing copies of delivered bytes (the pure OverlapConflict), in emission order:
    # the seq of the next record then, the connection and direction, the bytes compared
    # that differ [start, end), and the direction's stream end then (the pure _Direction.end)
    I64 x_seq
    I64 x_conn
    I64 x_dir
    I64 x_start
    I64 x_end
    I64 x_dend
    int64_t seq
    # deferred frames of the current feed: (position in walk buffer, number, ts)
    I64 d_pos             # position of the frame's data in the walk buffer
    I64 d_num
    I64 d_ts
    I64 d_cap
    I64 d_orig
    I64 d_if
    I64 d_lt
    # pcapng
    Iface* ifaces
    Py_ssize_t n_if
    Py_ssize_t if_cap
    int64_t sections
    int64_t skipped_blocks
    # emit context
    Py_ssize_t cur_conn
    int cur_dir
    bint oom
    Stats st
    # IPv4 fragment reassembly (the pure FragmentReassembler's twin)
    FragTable frags
    # global byte budget (the pure converter's ByteBudget check points)
    int64_t budget_limit  # 0: none
    int64_t budget_slack
    int64_t budget_since
    int64_t budget_peak
    int64_t budget_checks
    int64_t budget_cuts           # ByteBudget.stats "budget cuts", "bytes cut by the budget"
    int64_t budget_cut_bytes
    int64_t dseq_next

cdef struct Iface:
    int linktype
    uint32_t snaplen
    int pow2
    int exp
    int64_t offset_s

cdef struct Pkt:
    TKey key
    uint32_t seq
    uint32_t ack
    uint8_t flags
    const uint8_t* payload
    Py_ssize_t plen
    int64_t missing
    # IPv4 fragments
    uint32_t frag_off
    uint16_t ident
    uint8_t proto
    uint8_t more

# ---------------------------------------------------------------------------
# link / IP / TCP decode: mirrors mqcodec.capture.packet.decode_frame for
# the frames it turns into TCP segments; anything else is D_DEFER.
# ---------------------------------------------------------------------------
cdef inline uint16_t be16(const uint8_t* p) noexcept nogil:
    return (<uint16_t>p[0] << 8) | p[1]

cdef inline uint32_t be32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]

cdef inline uint32_t le32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[3] << 24) | (<uint32_t>p[2] << 16) | (<uint32_t>p[1] << 8) | p[0]

cdef inline uint32_t rd32(const uint8_t* p, int big) noexcept nogil:
    return be32(p) if big else le32(p)

cdef inline int af_family(uint32_t af) noexcept nogil:
    if af > 0xFFFF:
        af = ((af & 0xFF) << 24) | ((af & 0xFF00) << 8) | ((af >> 8) & 0xFF00) | (af >> 24)
    if af == 2:
        return 4
    if af == 10 or af == 23 or af == 24 or af == 28 or af == 30:
        return 6
    return 0

cdef int decode(const uint8_t* d, Py_ssize_t n, int linktype, int64_t caplen, int64_t origlen,
                Pkt* pk) noexcept nogil:
    cdef Py_ssize_t off = 0, ihl, total, end, pos, hlen, start, doff
    cdef int ver = 0, ntags, count
    cdef uint16_t etype
    cdef uint32_t frag
    cdef int64_t missing, cut
    cdef uint8_t nh, proto
    # ---- link
    if linktype == 1:
        if n < 14:
            return D_DEFER
        etype = be16(d + 12)
        off = 14
        ntags = 0
        while etype == 0x8100 or etype == 0x88A8 or etype == 0x9100:
            if ntags >= 8:
                return D_DEFER
            if off + 4 > n:
                return D_DEFER
            ntags += 1
            etype = be16(d + off + 2)
            off += 4
        if etype < 0x0600:
            return D_DEFER
        if etype == 0x0800:
            ver = 4
        elif etype == 0x86DD:
            ver = 6
        else:
            return D_DEFER
    elif linktype == 113:
        if n < 16:
            return D_DEFER
        etype = be16(d + 14)
        off = 16
        if etype == 0x0800:
            ver = 4
        elif etype == 0x86DD:
            ver = 6
        else:
            return D_DEFER
    elif linktype == 276:
        if n < 20:
            return D_DEFER
        etype = be16(d)
        off = 20
        if etype == 0x0800:
            ver = 4
        elif etype == 0x86DD:
            ver = 6
        else:
            return D_DEFER
    elif linktype == 101 or linktype == 12 or linktype == 14:
        if n < 1:
            return D_DEFER
        ver = d[0] >> 4
        if ver != 4 and ver != 6:
            return D_DEFER
    elif linktype == 228:
        ver = 4
    elif linktype == 229:
        ver = 6
    elif linktype == 0:
        if n < 4:
            return D_DEFER
        ver = af_family(le32(d))
        off = 4
        if ver == 0:
            return D_DEFER
    elif linktype == 108:
        if n < 4:
            return D_DEFER
        ver = af_family(be32(d))
        off = 4
        if ver == 0:
            return D_DEFER
    else:
        return D_DEFER
    memset(&pk.key, 0, sizeof(TKey))
    # ---- IP
    if ver == 4:
        if n - off < 20:
            return D_DEFER
        if d[off] >> 4 != 4:
            return D_DEFER
        ihl = (d[off] & 0x0F) * 4
        if ihl < 20 or n - off < ihl:
            return D_DEFER
        total = be16(d + off + 2)
        if total == 0:
            total = n - off
        elif total < ihl:
            return D_DEFER
        end = off + total
        missing = 0
        if end > n:
            missing = end - n
            end = n
        proto = d[off + 9]
        memcpy(pk.key.src, d + off + 12, 4)
        memcpy(pk.key.dst, d + off + 16, 4)
        pk.key.v6 = 0
        start = off + ihl
        frag = be16(d + off + 6)
        cut = origlen - caplen
        if cut < 0:
            cut = 0
        if missing > cut:
            missing = cut
        if frag & 0x3FFF:
            # packet.decode_frame's IPv4Fragment (whatever the protocol: the pure
            # FragmentReassembler's bounds and timeouts are shared by all of them)
            if missing:
                return D_DEFER      # skipped by the pure pipeline ("cut by the snap length")
            if (frag & 0x1FFF) * 8 + (end - start) > 65535:
                return D_DEFER      # malformed
            pk.frag_off = (frag & 0x1FFF) * 8
            pk.more = 1 if frag & 0x2000 else 0
            pk.ident = be16(d + off + 4)
            pk.proto = proto
            pk.plen = end - start
            pk.payload = d + start
            return D_FRAG
    else:
        if n - off < 40:
            return D_DEFER
        if d[off] >> 4 != 6:
            return D_DEFER
        total = be16(d + off + 4)
        nh = d[off + 6]
        memcpy(pk.key.src, d + off + 8, 16)
        memcpy(pk.key.dst, d + off + 24, 16)
        pk.key.v6 = 1
        pos = off + 40
        end = pos + total if total else n
        count = 0
        while nh == 0 or nh == 43 or nh == 60 or nh == 135 or nh == 139 or nh == 140 or nh == 44 or nh == 51:
            count += 1
            if count > 16:
                return D_DEFER
            if pos + 8 > end or pos + 8 > n:
                return D_DEFER
            if nh == 44:
                hlen = 8
                if be16(d + pos + 2) & 0xFFF9:
                    return D_DEFER  # IPv6 fragment: skipped by the pure pipeline
            elif nh == 51:
                hlen = (d[pos + 1] + 2) * 4
            else:
                hlen = (d[pos + 1] + 1) * 8
            if pos + hlen > end or pos + hlen > n:
                return D_DEFER
            nh = d[pos]
            pos += hlen
        proto = nh
        missing = 0
        if end > n:
            missing = end - n
            end = n
        cut = origlen - caplen
        if cut < 0:
            cut = 0
        if missing > cut:
            missing = cut
        start = pos
    if proto != 6:
        return D_DEFER
    # ---- TCP
    if end - start < 20:
        return D_DEFER
    doff = (d[start + 12] >> 4) * 4
    if doff < 20 or start + doff > end:
        return D_DEFER
    pk.key.sport = be16(d + start)
    pk.key.dport = be16(d + start + 2)
    pk.seq = be32(d + start + 4)
    pk.ack = be32(d + start + 8)
    pk.flags = d[start + 13]
    pk.payload = d + start + doff
    pk.plen = end - start - doff
    pk.missing = missing
    return D_TCP

# ---------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------
#: the converter's marks (_Direction.mark): per entry (offset, frame, ts, rows, units,
#: captured: 0 for a gap's mark, whose frame revealed it), and keys.KEY_MARKS_KEPT
cdef enum:
    MARK_W = 6
cdef Py_ssize_t KEY_MARKS_KEPT = 64
MARKS_KEPT = KEY_MARKS_KEPT


cdef inline Py_ssize_t mark_index(Half* h, int64_t start) noexcept nogil:
    """The index (from mstart) of the last mark at or before stream offset ``start`` (-1: none)."""
    cdef Py_ssize_t lo = 0, hi = h.mn - h.mstart, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if h.m[(h.mstart + mid) * MARK_W] <= start:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


cdef enum:
    # the kinds of log_stream's events (mqcodec.capture.stream's StreamOpened, StreamData, Gap, StreamClosed)
    SL_OPEN = 0
    SL_DATA = 1
    SL_GAP = 2
    SL_CLOSE = 3


cdef int log_stream(Core* c, int kind, Py_ssize_t ci, int d, int64_t off, const uint8_t* p, int64_t n,
                    int64_t frame, int64_t ts) noexcept nogil:
    """One TCP stream event onto c.slog: (kind, conn, direction, offset, data
    (SL_DATA) or length (SL_GAP; SL_OPEN: the SYN was seen), frame, ts).  0 or -1."""
    with gil:
        try:
            (<list>c.slog).append((kind, c.conns[ci].id, d, off, PyBytes_FromStringAndSize(<const char*>p, n)
                                   if kind == SL_DATA else n, frame, ts))
        except BaseException:
            return -1
    return 0


cdef int core_out(Core* c, int64_t start, const uint8_t* data, Py_ssize_t length,
                  int kind, int md_only, int64_t full) noexcept nogil:
    cdef Conn* cn = &c.conns[c.cur_conn]
    cdef Half* h = &cn.live.h[c.cur_dir]
    cdef int64_t frame = -1, ts = -1, rank = -1, oldest
    cdef int64_t* mk
    cdef Py_ssize_t i, j, cnt
    # the pure converter's _Direction.locate(start) and rank(), marks list and all
    i = mark_index(h, start)
    if i >= 0:
        mk = h.m + (h.mstart + i) * MARK_W
        frame = mk[1]
        ts = mk[2]
        if mk[5]:       # _Direction.rank: none for a row whose first byte was not captured
            cnt = 4 if kind == _MQ_UNIT_KIND else 3
            rank = mk[cnt]
            mk[cnt] = rank + 1
        if i > KEY_MARKS_KEPT:
            # keys.marks_to_drop: never the mark of the framer's oldest open unit
            j = i
            oldest = mq_framer_oldest(&h.mq) if h.proto == P_MQ else -1
            if 0 <= oldest < start:
                j = mark_index(h, oldest)
            j = min(i - 1, j)
            if j > 0:
                h.mstart += j
    if buf_append(&c.data, data, length) < 0:
        c.oom = True
        return -1
    cdef Py_ssize_t k = c.o_seq.n
    if k + 1 >= c.o_seq.cap:
        if (i64_reserve(&c.offs, k + 2) < 0 or i64_reserve(&c.o_seq, k + 1) < 0 or i64_reserve(&c.o_conn, k + 1) < 0
                or i64_reserve(&c.o_dir, k + 1) < 0 or i64_reserve(&c.o_stream, k + 1) < 0
                or i64_reserve(&c.o_off, k + 1) < 0 or i64_reserve(&c.o_frame, k + 1) < 0
                or i64_reserve(&c.o_ts, k + 1) < 0 or i64_reserve(&c.o_proto, k + 1) < 0
                or i64_reserve(&c.o_kind, k + 1) < 0 or i64_reserve(&c.o_md, k + 1) < 0
                or i64_reserve(&c.o_full, k + 1) < 0 or i64_reserve(&c.o_rank, k + 1) < 0):
            c.oom = True
            return -1
    c.offs.p[k + 1] = c.data.n
    c.o_seq.p[k] = c.seq
    c.o_conn.p[k] = c.conns[c.cur_conn].id
    c.o_dir.p[k] = c.cur_dir
    c.o_stream.p[k] = conn_stream(c, cn)
    c.o_off.p[k] = start
    c.o_frame.p[k] = frame
    c.o_ts.p[k] = ts
    c.o_proto.p[k] = h.proto
    c.o_kind.p[k] = kind
    c.o_md.p[k] = md_only
    c.o_full.p[k] = full
    c.o_rank.p[k] = rank
    c.offs.n = k + 2
    c.o_seq.n = c.o_conn.n = c.o_dir.n = c.o_stream.n = c.o_off.n = c.o_frame.n = c.o_ts.n = k + 1
    c.o_proto.n = c.o_kind.n = c.o_md.n = c.o_full.n = c.o_rank.n = k + 1
    c.seq += 1
    return 0


cdef int core_emit(void* ctx, int64_t start, const uint8_t* data, Py_ssize_t length,
                   int kind, int md_only) noexcept nogil:
    cdef Core* c = <Core*>ctx
    if core_out(c, start, data, length, kind, md_only, length) < 0:
        return -1
    c.st.messages += 1
    return 0


cdef int core_emit_unit(void* ctx, int64_t start, const uint8_t* data, Py_ssize_t length,
                        int64_t full) noexcept nogil:
    """An IBM MQ unit record (kind MQ_UNIT_KIND): its first bytes and its full
    length; not a message."""
    return core_out(<Core*>ctx, start, data, length, _MQ_UNIT_KIND, 0, full)


cdef int core_emit_error(void* ctx, int64_t start, const uint8_t* raw, Py_ssize_t rawlen, int64_t length,
                         int truncated, int code, int64_t a, int64_t b, int64_t cc, int64_t d) noexcept nogil:
    """An IBM MQ FramingError record (kind MQ_ERROR_KIND): the raw bytes kept,
    the extent (full), the code and numbers on the side (e_*).  A row of the
    direction like a message."""
    cdef Core* c = <Core*>ctx
    cdef Py_ssize_t k = c.o_seq.n
    cdef Py_ssize_t j = c.e_idx.n
    if (i64_reserve(&c.e_idx, j + 1) < 0 or i64_reserve(&c.e_code, j + 1) < 0 or i64_reserve(&c.e_a, j + 1) < 0
            or i64_reserve(&c.e_b, j + 1) < 0 or i64_reserve(&c.e_c, j + 1) < 0 or i64_reserve(&c.e_d, j + 1) < 0
            or i64_reserve(&c.e_trunc, j + 1) < 0):
        c.oom = True
        return -1
    if core_out(c, start, raw, rawlen,
                _MQ_ERROR_KIND if c.conns[c.cur_conn].live.h[c.cur_dir].proto == P_MQ else _MSMQ_ERROR_KIND,
                0, length) < 0:
        return -1
    c.e_idx.p[j] = k
    c.e_code.p[j] = code
    c.e_a.p[j] = a
    c.e_b.p[j] = b
    c.e_c.p[j] = cc
    c.e_d.p[j] = d
    c.e_trunc.p[j] = truncated
    c.e_idx.n = c.e_code.n = c.e_a.n = c.e_b.n = c.e_c.n = c.e_d.n = c.e_trunc.n = j + 1
    c.st.framing_errors += 1
    return 0

# ---------------------------------------------------------------------------
# connection bookkeeping
# ---------------------------------------------------------------------------
cdef void half_free(Half* h) noexcept nogil:
    cdef Py_ssize_t i
    buf_free(&h.tail)
    for i in range(h.npend):
        free(h.pend[i].data)
    free(h.pend)
    h.pend = NULL
    h.npend = h.pcap = 0
    h.pbytes = 0
    h.hbytes = 0
    if h.framer_on:
        if h.proto == P_MQ:
            mq_framer_free(&h.mq)
        else:
            msmq_framer_free(&h.ms)
        h.framer_on = False
    buf_free(&h.buf)
    free(h.m)
    h.m = NULL
    h.mn = h.mstart = h.mcap = 0

cdef void live_free(Conn* cn) noexcept nogil:
    if cn.live != NULL:
        half_free(&cn.live.h[0])
        half_free(&cn.live.h[1])
        free(cn.live)
        cn.live = NULL

cdef void fail_conn(Core* c, Py_ssize_t ci) noexcept nogil:
    """Out of memory while following connection ci: its live state is freed,
    its later frames are ignored, and the feed raises MemoryError."""
    cdef Conn* cn = &c.conns[ci]
    c.oom = True
    if cn.state == C_FAILED:
        return
    cn.state = C_FAILED
    live_free(cn)

cdef inline int64_t conn_stream(const Core* c, const Conn* cn) noexcept nogil:
    """The connection's tcp_stream: its number, or (streams_by_frame) the frame that opened it."""
    return cn.first_frame if c.streams_by_frame else cn.id

cdef inline void conn_key(const Conn* cn, int j, TKey* k) noexcept nogil:
    """The connection's key (j 0: client -> server) or its reverse (j 1)."""
    if j == 0:
        k[0] = cn.key
    else:
        key_reverse(&cn.key, k)

cdef Slot* closed_slot(Core* c, int64_t entry) noexcept nogil:
    """The closed map's slot of a fifo entry (connection * 2 + j: the key j of
    that connection), or NULL when the key was closed again since by another
    connection, opened again or forgotten (the entry is stale)."""
    cdef TKey k
    cdef Py_ssize_t ci = <Py_ssize_t>(entry >> 1)
    conn_key(&c.conns[ci], <int>(entry & 1), &k)
    cdef Slot* s = table_find(&c.tab, c.conns, &k, key_hash(&k))
    if s != NULL and s.state == S_CLOSED and s.conn == ci:
        return s
    return NULL

cdef void fifo_unref(Core* c, int64_t entry) noexcept nogil:
    """A FIFO entry gone: a retired connection that no entry names any more is
    forgotten, and its record is freed after the next take (release_records)."""
    cdef Py_ssize_t ci = <Py_ssize_t>(entry >> 1)
    cdef Conn* cn = &c.conns[ci]
    cn.fifo_refs -= 1
    if cn.fifo_refs == 0 and cn.retired and i64_push(&c.retired_new, ci) < 0:
        c.oom = True

cdef void release_records(Core* c) noexcept nogil:
    """At a take: free the records forgotten before the previous take (the
    caller may ask about the connections of what it took until the next take),
    and keep those forgotten since for the next one."""
    cdef Py_ssize_t k, ci
    cdef Conn* cn
    cdef I64 t
    for k in range(c.retired_old.n):
        ci = <Py_ssize_t>c.retired_old.p[k]
        cn = &c.conns[ci]
        idmap_delete(&c.ids, cn.id_at)
        cn.id = -1   # (retired: its live state is gone; new_conn clears the rest)
        cn.open_pos = c.free_head
        c.free_head = ci + 1
    c.retired_old.n = 0
    t = c.retired_old
    c.retired_old = c.retired_new
    c.retired_new = t

cdef int fifo_push(Core* c, int64_t entry) noexcept nogil:
    cdef Py_ssize_t cap, i
    cdef int64_t* nf
    cdef Py_ssize_t j, keep
    if c.fifo_n == c.fifo_cap and c.fifo_n >= 4096 and c.fifo_n >= 4 * c.live_closed:
        # compact: drop stale entries (memory bounded by the closed map, not by
        # every connection ever closed)
        keep = 0
        for j in range(c.fifo_n):
            i = (c.fifo_head + j) % c.fifo_cap
            if closed_slot(c, c.fifo[i]) != NULL:
                c.fifo[(c.fifo_head + keep) % c.fifo_cap] = c.fifo[i]
                keep += 1
            else:
                fifo_unref(c, c.fifo[i])
        c.fifo_n = keep
    if c.fifo_n == c.fifo_cap:
        cap = c.fifo_cap * 2 if c.fifo_cap else 1024
        nf = <int64_t*>malloc(cap * sizeof(int64_t))
        if nf == NULL:
            return -1
        for i in range(c.fifo_n):
            nf[i] = c.fifo[(c.fifo_head + i) % c.fifo_cap]
        free(c.fifo)
        c.fifo = nf
        c.fifo_head = 0
        c.fifo_cap = cap
    c.fifo[(c.fifo_head + c.fifo_n) % c.fifo_cap] = entry
    c.fifo_n += 1
    c.conns[entry >> 1].fifo_refs += 1
    return 0

cdef void retire(Core* c, Py_ssize_t ci, int64_t frame) noexcept nogil:
    """TCPReassembler._retire: forget the connection, remember its 4-tuple."""
    cdef Conn* cn = &c.conns[ci]
    cdef TKey k
    cdef Slot* s
    cdef int j
    cdef int64_t entry
    if cn.retired:
        return
    cn.retired = 1
    cn.last_frame = frame
    c.open_conns -= 1
    # out of the open index: the last entry takes its place
    c.open_idx[cn.open_pos] = c.open_idx[c.open_conns]
    c.conns[c.open_idx[cn.open_pos]].open_pos = cn.open_pos
    live_free(cn)
    for j in range(2):
        conn_key(cn, j, &k)
        s = table_insert(&c.tab, c.conns, &k, key_hash(&k))
        if s == NULL:
            c.oom = True
            return
        if s.state == S_OPEN and s.conn != ci:
            # the pure reassembler only deletes entries of this connection; the
            # closed map gets the key anyway (it is never open for another one here)
            pass
        if s.state != S_CLOSED:
            c.live_closed += 1
        s.state = S_CLOSED
        s.conn = ci
        s.dir = j
        if fifo_push(c, 2 * ci + j) < 0:
            c.oom = True
            return
    while c.live_closed > 2 * c.max_closed and c.fifo_n:
        # the oldest closed key first (the pure closed map's order): a key closed
        # again later has that entry, its older one is stale
        entry = c.fifo[c.fifo_head]
        s = closed_slot(c, entry)
        c.fifo_head = (c.fifo_head + 1) % c.fifo_cap
        c.fifo_n -= 1
        if s != NULL:
            table_delete(&c.tab, s)
            c.live_closed -= 1
        fifo_unref(c, entry)


cdef void set_unsupported(Core* c, const char* why) noexcept nogil:
    if not c.unsupported:
        c.unsupported = True
        c.why = why

cdef inline bint in_ports(const uint16_t* ports, int n, uint16_t p) noexcept nogil:
    cdef int i
    for i in range(n):
        if ports[i] == p:
            return True
    return False

cdef inline int64_t unwrap(int64_t nxt, uint32_t base, uint32_t seq) noexcept nogil:
    cdef uint32_t t = <uint32_t>(seq - base - <uint32_t>nxt + <uint32_t>HALF32)
    return nxt + <int64_t>t - HALF32

cdef inline int detect(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    if n >= 4 and p[0] == 0x54 and p[1] == 0x53 and p[2] == 0x48 and (p[3] == 0x20 or p[3] == 0x4D or p[3] == 0x43):
        return P_MQ
    if n >= 8 and p[0] == 0x10 and p[4] == 0x4C and p[5] == 0x49 and p[6] == 0x4F and p[7] == 0x52:
        return P_MSMQ
    return P_NONE

cdef Py_ssize_t new_conn(Core* c, const TKey* tk, uint8_t flags, int64_t frame, int* dir_out) noexcept nogil:
    cdef bint client_a
    cdef Py_ssize_t ci
    cdef Conn* cn
    cdef TKey rk
    cdef Slot* s
    cdef int d, j
    if flags & F_SYN:
        client_a = not (flags & F_ACK)
    elif in_ports(c.server_ports, c.n_server, tk.sport) and not in_ports(c.server_ports, c.n_server, tk.dport):
        client_a = False
    else:
        client_a = True
    if tk.sport == tk.dport and memcmp(tk.src, tk.dst, 16) == 0:
        client_a = True      # client == a compares equal tuples
    if c.free_head:
        ci = c.free_head - 1
        c.free_head = c.conns[ci].open_pos
    else:
        if c.nconns == 1 << 29 or (c.nconns == c.conns_cap
                                       and grow(<void**>&c.conns, &c.conns_cap, 1024, sizeof(Conn)) < 0):
            c.oom = True   # (the id map holds records and places as int32)
            return -1
        ci = c.nconns
        c.nconns += 1
    cn = &c.conns[ci]
    memset(cn, 0, sizeof(Conn))
    cn.id = c.next_id
    if (c.streams_by_frame and i64_push(&c.opened, frame) < 0) or idmap_put(&c.ids, c.conns, cn.id, ci) < 0:
        if c.opened.n > cn.id:
            c.opened.n = cn.id
        cn.id = -1   # (back on the free list)
        cn.open_pos = c.free_head
        c.free_head = ci + 1
        c.oom = True
        return -1
    c.next_id += 1
    key_reverse(tk, &rk)
    cn.key = tk[0] if client_a else rk
    cn.first_frame = frame
    cn.last_frame = -1
    cn.live = <Live*>calloc(1, sizeof(Live))
    if cn.live == NULL:
        c.oom = True
        return -1
    if in_ports(c.mq_ports, c.n_mq, cn.key.dport) or in_ports(c.mq_ports, c.n_mq, cn.key.sport):
        cn.proto = 1 + P_MQ
    elif in_ports(c.msmq_ports, c.n_msmq, cn.key.dport) or in_ports(c.msmq_ports, c.n_msmq, cn.key.sport):
        cn.proto = 1 + P_MSMQ
    for j in range(2):
        cn.live.h[j].proto = <int>cn.proto - 1
    d = 0 if client_a else 1
    s = table_insert(&c.tab, c.conns, tk, key_hash(tk))
    if s == NULL:
        c.oom = True
        return -1
    s.state = S_OPEN
    s.conn = ci
    s.dir = d
    s = table_insert(&c.tab, c.conns, &rk, key_hash(&rk))
    if s == NULL:
        c.oom = True
        return -1
    if s.state == S_CLOSED:
        c.live_closed -= 1
    s.state = S_OPEN
    s.conn = ci
    s.dir = 1 - d
    if c.open_conns == c.open_cap and grow(<void**>&c.open_idx, &c.open_cap, 1024, sizeof(Py_ssize_t)) < 0:
        c.oom = True
        return -1
    c.open_idx[c.open_conns] = ci
    c.conns[ci].open_pos = c.open_conns
    c.open_conns += 1
    c.st.connections += 1
    c.conns[ci].first_dir = d
    dir_out[0] = d
    if c.slog != NULL and log_stream(c, SL_OPEN, ci, d, 0, NULL, (flags & F_SYN) != 0, frame, c.now_ts) < 0:
        c.oom = True
        return -1
    if c.open_conns > c.max_connections:
        evict(c, ci, frame)
    return ci


cdef int _victim_cmp(const void* a, const void* b) noexcept nogil:
    """(last_seen, id) pairs in ascending order: Python's stable sort by
    _Conn.last over connections in creation order."""
    cdef const int64_t* x = <const int64_t*>a
    cdef const int64_t* y = <const int64_t*>b
    if x[0] != y[0]:
        return -1 if x[0] < y[0] else 1
    return -1 if x[1] < y[1] else (1 if x[1] > y[1] else 0)


cdef void evict(Core* c, Py_ssize_t keep, int64_t frame) noexcept nogil:
    """TCPReassembler._evict: more open connections than max_connections: the
    least recently active tenth (at least one; never ``keep``, the one just
    opened) is closed as a RST closes it (_finish: holes and unacknowledged
    ends declared lost, the framers closed)."""
    cdef Py_ssize_t i, j, n = 0, k
    # (last_seen, id) pairs: 16-byte elements sort faster than with the record too (24),
    # which the id map gives for the victims alone
    cdef int64_t* v = <int64_t*>malloc((2 * c.open_conns + 2) * sizeof(int64_t))
    if v == NULL:
        c.oom = True
        return
    for j in range(c.open_conns):
        i = c.open_idx[j]
        if i != keep:
            v[2 * n] = c.conns[i].last_seen
            v[2 * n + 1] = c.conns[i].id
            n += 1
    qsort(v, n, 2 * sizeof(int64_t), _victim_cmp)
    k = c.max_connections // 10
    if k < 1:
        k = 1
    if k > n:
        k = n
    c.st.evicted += k
    for i in range(k):
        finish_conn(c, c.ids.r[idmap_find(&c.ids, c.conns, v[2 * i + 1])], frame)
    free(v)

cdef Py_ssize_t run_framer(Core* c, Half* h, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """Bytes the framer consumed, or -1 (bail, or a nonsensical answer)."""
    cdef Py_ssize_t r
    if h.proto == P_MQ:
        r = mq_framer_run(&h.mq, p, n, core_emit, <void*>c)
    else:
        r = msmq_framer_run(&h.ms, p, n, core_emit, <void*>c)
    if r < 0 or r > n:
        return -1
    return r

cdef int push_mark(Core* c, Half* h, int64_t off, int64_t frame, int64_t ts, int captured) noexcept nogil:
    cdef Py_ssize_t live
    if h.mstart and h.mstart * 2 >= h.mn:
        live = h.mn - h.mstart
        memmove(h.m, h.m + h.mstart * MARK_W, live * MARK_W * sizeof(int64_t))
        h.mn = live
        h.mstart = 0
    if h.mn == h.mcap and grow(<void**>&h.m, &h.mcap, 16, MARK_W * sizeof(int64_t)) < 0:
        return -1
    h.m[h.mn * MARK_W] = off
    h.m[h.mn * MARK_W + 1] = frame
    h.m[h.mn * MARK_W + 2] = ts
    h.m[h.mn * MARK_W + 3] = 0
    h.m[h.mn * MARK_W + 4] = 0
    h.m[h.mn * MARK_W + 5] = captured
    h.mn += 1
    return 0

#: mqcodec.capture.tcp.OVERLAP_WINDOW
cdef Py_ssize_t OVERLAP_WINDOW = 16 << 10


cdef int compare_delivered(Core* c, Py_ssize_t ci, int d, Half* h, int64_t off, const uint8_t* p,
                           int64_t n) noexcept nogil:
    """TCPReassembler._compare of the copy p[0:n] of stream bytes [off, off + n)
    with the delivered bytes still in the tail: the bytes before the tail (or the
    whole copy when none of it is there) are counted as not compared, as the
    pure reassembler counts them; bytes that differ are recorded (x_*: the pure
    OverlapConflict, which flags the rows holding them).  -1: out of memory."""
    cdef int64_t start = off, end = off + n
    if start < h.next - h.tail.n:
        start = h.next - h.tail.n
    if end > h.next:
        end = h.next
    if end <= start:
        if end > off:
            c.st.not_compared += end - off
        return 0
    if start > off:
        c.st.not_compared += start - off
    if memcmp(h.tail.p + h.tail.n - (h.next - start), p + (start - off), end - start) == 0:
        return 0
    return record_conflict(c, ci, d, h, start, end)


cdef int record_conflict(Core* c, Py_ssize_t ci, int d, Half* h, int64_t start, int64_t end) noexcept nogil:
    """A differing copy of stream bytes [start, end) (the pure OverlapConflict):
    recorded (x_*, taken by take() with the records); -1: out of memory."""
    cdef Py_ssize_t k = c.x_seq.n
    if h.dseq == 0:
        c.dseq_next += 1
        h.dseq = c.dseq_next
    if (i64_reserve(&c.x_seq, k + 1) < 0 or i64_reserve(&c.x_conn, k + 1) < 0 or i64_reserve(&c.x_dir, k + 1) < 0
            or i64_reserve(&c.x_start, k + 1) < 0 or i64_reserve(&c.x_end, k + 1) < 0
            or i64_reserve(&c.x_dend, k + 1) < 0):
        return -1
    c.x_seq.p[k] = c.seq
    c.x_conn.p[k] = c.conns[ci].id
    c.x_dir.p[k] = d
    c.x_start.p[k] = start
    c.x_end.p[k] = end
    c.x_dend.p[k] = h.next
    c.x_seq.n = c.x_conn.n = c.x_dir.n = c.x_start.n = c.x_end.n = c.x_dend.n = k + 1
    c.st.conflicts += 1
    return 0

cdef int store(Core* c, Py_ssize_t ci, int d, Half* h, int64_t off, const uint8_t* p, Py_ssize_t n,
               int64_t frame, int64_t ts) noexcept nogil:
    """TCPReassembler._store of an out-of-order payload (p NULL: a hole of n
    bytes a snap length cut): a new offset is inserted, whatever waiting
    entries it overlaps (the drain compares them with what it delivered
    before); at an existing offset the common bytes of two payloads are
    compared (a conflict recorded when they differ) and a longer copy extends
    the first one (its frame/ts kept); a hole there changes nothing; a payload
    where a hole waits fills it when at least as long (then its length is the
    payload's), else changes nothing.  0, or -1 (out of memory)."""
    cdef Py_ssize_t lo = 0, hi = h.npend, mid, m
    cdef Pend* e
    cdef uint8_t* nd
    while lo < hi:
        mid = (lo + hi) // 2
        if h.pend[mid].off < off:
            lo = mid + 1
        else:
            hi = mid
    if lo < h.npend and h.pend[lo].off == off:
        e = &h.pend[lo]
        if p == NULL:
            return 0
        if e.data == NULL:
            if n < e.length:
                return 0
            nd = <uint8_t*>malloc(n)
            if nd == NULL:
                return -1
            memcpy(nd, p, n)
            h.hbytes -= e.length
            h.pbytes += n - e.length
            e.data = nd
            e.length = n
            return 0
        m = n if n < e.length else e.length
        if memcmp(e.data, p, m) != 0 and record_conflict(c, ci, d, h, off, off + m) < 0:
            return -1
        if n > e.length:
            nd = <uint8_t*>realloc(e.data, n)
            if nd == NULL:
                return -1
            memcpy(nd + e.length, p + e.length, n - e.length)
            e.data = nd
            h.pbytes += n - e.length
            e.length = n
        return 0
    if h.npend == h.pcap and grow(<void**>&h.pend, &h.pcap, 8, sizeof(Pend)) < 0:
        return -1
    if p == NULL:
        nd = NULL
        h.hbytes += n
    else:
        nd = <uint8_t*>malloc(n if n else 1)
        if nd == NULL:
            return -1
        memcpy(nd, p, n)
    memmove(&h.pend[lo + 1], &h.pend[lo], (h.npend - lo) * sizeof(Pend))
    e = &h.pend[lo]
    e.off = off
    e.length = n
    e.frame = frame
    e.ts = ts
    e.data = nd
    h.npend += 1
    h.pbytes += n
    return 0

cdef void drain(Core* c, Py_ssize_t ci, int d) noexcept nogil:
    """TCPReassembler._drain: deliver waiting segments that became in order."""
    cdef Conn* cn = &c.conns[ci]
    cdef Half* h = &cn.live.h[d]
    cdef Py_ssize_t k = 0
    cdef int64_t nxt, end
    cdef Pend e
    while k < h.npend and h.pend[k].off <= h.next:
        e = h.pend[k]
        h.pend[k].data = NULL
        k += 1
        h.pbytes -= e.length
        if e.data == NULL:
            h.hbytes -= e.length
        end = e.off + e.length
        nxt = h.next
        if end <= nxt:
            c.st.retransmitted += 1
            free(e.data)
            continue
        if e.data == NULL:
            # a hole: the "snaplen" Gap of its bytes not delivered yet
            h.next = end
            h.tail.n = 0
            deliver_gap(c, ci, d, end - nxt, e.frame, e.ts)
            if cn.state == C_FAILED:
                return
            continue
        if e.off < nxt:
            c.st.overlapping += 1
            if compare_delivered(c, ci, d, h, e.off, e.data, nxt - e.off) < 0:
                free(e.data)
                fail_conn(c, ci)
                return
        h.next = end
        deliver(c, ci, d, nxt, e.data + (nxt - e.off), end - nxt, e.frame, e.ts)
        free(e.data)
        if cn.state == C_FAILED:
            return        # the live state is gone (entries freed with it)
    if k:
        memmove(&h.pend[0], &h.pend[k], (h.npend - k) * sizeof(Pend))
        h.npend -= k

cdef int keep_tail(Half* h, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """TCPReassembler._keep: delivered bytes join the tail (trimmed to
    OVERLAP_WINDOW when twice that); -1: out of memory."""
    if buf_append(&h.tail, p, n) < 0:
        return -1
    if h.tail.n > 2 * OVERLAP_WINDOW:
        memmove(h.tail.p, h.tail.p + h.tail.n - OVERLAP_WINDOW, OVERLAP_WINDOW)
        h.tail.n = OVERLAP_WINDOW
    return 0

cdef void deliver(Core* c, Py_ssize_t ci, int d, int64_t off, const uint8_t* p, Py_ssize_t n,
                  int64_t frame, int64_t ts) noexcept nogil:
    """In-order new bytes of one direction (the pure StreamData event)."""
    cdef Conn* cn = &c.conns[ci]
    cdef Half* h = &cn.live.h[d]
    cdef int proto
    cdef Py_ssize_t r, tail
    if h.dseq == 0:
        c.dseq_next += 1
        h.dseq = c.dseq_next
    # the tail the pure reassembler compares retransmitted copies with (_keep)
    if keep_tail(h, p, n) < 0:
        fail_conn(c, ci)
        return
    if c.slog != NULL:
        if log_stream(c, SL_DATA, ci, d, off, p, n, frame, ts) < 0:
            fail_conn(c, ci)
        return
    if not h.framer_on:
        if h.proto == P_NONE:
            proto = detect(p, n) if c.detect else P_NONE
            if proto == P_NONE:
                c.st.undetected += n
                return
            # detected by content (at the stream start or later): framed from here, as
            # Converter._start frames it from the first recognised byte
            h.proto = proto
        if h.proto == P_MQ:
            mq_framer_init(&h.mq, off)
            h.mq.err_emit = core_emit_error
            if c.units:
                h.mq.unit_emit = core_emit_unit
        else:
            msmq_framer_init(&h.ms, off)
            h.ms.err_emit = core_emit_error
        h.framer_on = True
    if push_mark(c, h, off, frame, ts, 1) < 0:
        fail_conn(c, ci)
        return
    c.cur_conn = ci
    c.cur_dir = d
    if h.buf.n == 0:
        r = run_framer(c, h, p, n)
        if r < 0:
            fail_conn(c, ci)
            return
        tail = n - r
        if tail:
            if buf_append(&h.buf, p + r, tail) < 0:
                fail_conn(c, ci)
                return
    else:
        if buf_append(&h.buf, p, n) < 0:
            fail_conn(c, ci)
            return
        r = run_framer(c, h, h.buf.p, h.buf.n)
        if r < 0:
            fail_conn(c, ci)
            return
        buf_consume(&h.buf, r)

cdef bint close_half(Core* c, Py_ssize_t ci, int d) noexcept nogil:
    """The pure StreamClosed: the framer's close.  False: out of memory (fail_conn)."""
    cdef Conn* cn = &c.conns[ci]
    cdef Half* h = &cn.live.h[d]
    cdef int r
    h.closed = True
    if c.slog != NULL and log_stream(c, SL_CLOSE, ci, d, h.next, NULL, 0, c.now_frame, c.now_ts) < 0:
        fail_conn(c, ci)
        return False
    if h.framer_on:
        c.cur_conn = ci
        c.cur_dir = d
        if h.proto == P_MQ:
            r = mq_framer_close(&h.mq, h.buf.p, h.buf.n, <void*>c)
        else:
            r = msmq_framer_close(&h.ms, h.buf.p, h.buf.n, core_emit, <void*>c)
        h.buf.n = 0
        if r != 0:
            fail_conn(c, ci)
            return False
        if h.proto == P_MQ and h.mq.resyncs:
            c.st.resyncs += h.mq.resyncs
            c.st.resync_bytes += h.mq.resync_bytes
        elif h.proto == P_MSMQ and h.ms.resyncs:
            c.st.resyncs += h.ms.resyncs
            c.st.resync_bytes += h.ms.resync_bytes
    half_free(h)
    return True


cdef void deliver_gap(Core* c, Py_ssize_t ci, int d, int64_t n, int64_t frame, int64_t ts) noexcept nogil:
    """The pure converter's Gap event for one direction (n > 0 bytes at the
    direction's next offset, already advanced past them by the caller; ``frame``
    revealed them): counted, marked (a mark of no captured byte, as
    _Direction.mark(captured=False)), and followed by the direction's framer
    (framing.MQStreamFramer.gap, MSMQStreamFramer.gap), which reports what it
    held as FramingErrors."""
    cdef Conn* cn = &c.conns[ci]
    cdef Half* h = &cn.live.h[d]
    cdef int r
    if h.dseq == 0:
        c.dseq_next += 1
        h.dseq = c.dseq_next
    c.st.gaps += 1
    c.st.gap_bytes += n
    if c.slog != NULL:
        if log_stream(c, SL_GAP, ci, d, h.next - n, NULL, n, frame, ts) < 0:
            fail_conn(c, ci)
        return
    if not h.framer_on:
        if h.proto == P_NONE:
            return        # no framer (yet): the pure converter only counts the gap
        # known by its port: the pure converter's framer exists from stream offset 0,
        # and a direction's first bytes or gap start there
        if h.proto == P_MQ:
            mq_framer_init(&h.mq, 0)
            h.mq.err_emit = core_emit_error
            if c.units:
                h.mq.unit_emit = core_emit_unit
        else:
            msmq_framer_init(&h.ms, 0)
            h.ms.err_emit = core_emit_error
        h.framer_on = True
    if push_mark(c, h, h.next - n, frame, ts, 0) < 0:
        fail_conn(c, ci)
        return
    c.cur_conn = ci
    c.cur_dir = d
    if h.proto == P_MQ:
        r = mq_framer_gap(&h.mq, n, h.buf.p, h.buf.n, <void*>c)
    else:
        r = msmq_framer_gap(&h.ms, n, h.buf.p, h.buf.n, <void*>c)
    if r != 0:
        fail_conn(c, ci)
        return
    h.buf.n = 0     # the framer reported them (the pure framers' gap clears their buffers)


cdef void skip_to(Core* c, Py_ssize_t ci, int d, int64_t limit) noexcept nogil:
    """TCPReassembler._skip_to: [next, limit) declared lost (a Gap), then the
    waiting segments that became in order delivered."""
    cdef Conn* cn = &c.conns[ci]
    cdef Half* h = &cn.live.h[d]
    cdef int64_t n
    if limit > h.next:
        n = limit - h.next
        h.next = limit
        h.tail.n = 0
        deliver_gap(c, ci, d, n, c.now_frame, c.now_ts)
        if cn.state == C_FAILED:
            return
    if h.npend:
        drain(c, ci, d)

cdef void count_eof_gaps(Core* c, Py_ssize_t ci, int d) noexcept nogil:
    """TCPReassembler._flush_half at the end of the capture, as the pure
    converter takes its events there (``gaps_only``): the Gaps are counted,
    and the waiting segments drained as _drain drains them (retransmissions
    counted, overlapping parts compared with the tail, conflicts recorded),
    but neither they nor the bytes reach the framer."""
    cdef Conn* cn = &c.conns[ci]
    cdef Half* h = &cn.live.h[d]
    cdef int64_t nxt = h.next, end
    cdef Py_ssize_t k
    cdef Pend* e
    for k in range(h.npend):       # _skip_to(heap[0]) then _drain, entry after entry
        e = &h.pend[k]
        if e.off > nxt:
            c.st.gaps += 1
            c.st.gap_bytes += e.off - nxt
            nxt = e.off
            h.tail.n = 0
        end = e.off + e.length
        if end <= nxt:
            c.st.retransmitted += 1
            continue
        if e.data == NULL:    # a hole: _drain's "snaplen" Gap
            c.st.gaps += 1
            c.st.gap_bytes += end - nxt
            h.tail.n = 0
        else:
            if e.off < nxt:
                c.st.overlapping += 1
                h.next = nxt
                if compare_delivered(c, ci, d, h, e.off, e.data, nxt - e.off) < 0:
                    fail_conn(c, ci)
                    return
            if keep_tail(h, e.data + (nxt - e.off), end - nxt) < 0:
                fail_conn(c, ci)
                return
        nxt = end
        h.next = nxt
    end = h.fin if h.has_fin else h.max_ack
    if (h.has_fin or h.has_max_ack) and end > nxt:
        c.st.gaps += 1
        c.st.gap_bytes += end - nxt


cdef void finish_conn(Core* c, Py_ssize_t ci, int64_t last_frame, bint eof=False) noexcept nogil:
    """TCPReassembler._finish for a fast-path connection, then _retire
    (``eof``: at the end of the capture, see count_eof_gaps; the stream-event
    log, c.slog, takes the stream events there as TCPReassembler gives them)."""
    cdef Conn* cn = &c.conns[ci]
    cdef Half* h
    cdef int d
    cdef int64_t end
    cdef bint has_end
    if cn.state == C_FAST:
        for d in range(2):
            h = &cn.live.h[d]
            if h.closed:
                continue
            if cn.has_base[d] and eof and c.slog == NULL:
                count_eof_gaps(c, ci, d)
                if cn.state == C_FAILED:
                    break
            elif cn.has_base[d]:
                # TCPReassembler._flush_half: each hole before a waiting segment, then
                # what the FIN or the highest ACK says was sent, declared lost
                while h.npend:
                    skip_to(c, ci, d, h.pend[0].off)
                    if cn.state == C_FAILED:
                        break
                if cn.state == C_FAILED:
                    break
                has_end = h.has_fin or h.has_max_ack
                end = h.fin if h.has_fin else h.max_ack
                if has_end and end > h.next:
                    skip_to(c, ci, d, end)
                    if cn.state == C_FAILED:
                        break
            if not close_half(c, ci, d):
                break
    retire(c, ci, last_frame)

cdef void segment(Core* c, Pkt* pk, int64_t frame, int64_t ts) noexcept nogil:
    """TCPReassembler.segment for one decoded TCP segment."""
    cdef uint64_t hh = key_hash(&pk.key)
    cdef Slot* s = table_find(&c.tab, c.conns, &pk.key, hh)
    cdef uint8_t flags = pk.flags
    cdef bint synonly = (flags & F_SYN) and not (flags & F_ACK)
    cdef Py_ssize_t ci = -1
    cdef int d = 0, r
    cdef Conn* cn
    cdef Half* h
    cdef Half* peer
    cdef uint32_t seq = pk.seq
    cdef int64_t off, aoff, length, nxt
    cdef TKey rk
    cdef const uint8_t* p
    cdef Py_ssize_t n
    c.st.tcp_segments += 1
    if s != NULL and s.state == S_OPEN:
        ci = s.conn
        d = s.dir
        cn = &c.conns[ci]
        if synonly:
            if cn.has_base[d] and cn.syn[d] and <uint32_t>(seq + 1 - cn.base[d]) != 0:
                # a new connection on the same 4-tuple ("reused"): the pure
                # reassembler closes the old one there (flushing its reorder buffer)
                if cn.state == C_FAST:
                    finish_conn(c, ci, frame)
                else:
                    retire(c, ci, frame)
                ci = -1
                s = table_find(&c.tab, c.conns, &pk.key, hh)
    if ci < 0:
        if s != NULL and s.state == S_CLOSED and not synonly:
            c.st.after_close += 1
            return
        if not ((flags & F_SYN) or pk.plen or pk.missing):
            c.st.unknown_conn += 1
            return
        if s != NULL and s.state == S_CLOSED:
            table_delete(&c.tab, s)
            c.live_closed -= 1
            key_reverse(&pk.key, &rk)
            s = table_find(&c.tab, c.conns, &rk, key_hash(&rk))
            if s != NULL and s.state == S_CLOSED:
                table_delete(&c.tab, s)
                c.live_closed -= 1
        ci = new_conn(c, &pk.key, flags, frame, &d)
        if ci < 0:
            return
    cn = &c.conns[ci]
    cn.last_seen = frame
    if flags & F_SYN:
        if not cn.has_base[d]:
            cn.base[d] = seq + 1
            cn.has_base[d] = 1
            cn.syn[d] = 1
        seq = seq + 1
    elif not cn.has_base[d] and (pk.plen or pk.missing or (flags & F_FIN)):
        cn.base[d] = seq
        cn.has_base[d] = 1
    if flags & F_FIN:
        cn.fin_seen[d] = 1
    if cn.state == C_FAILED:
        return
    if flags & F_RST:
        finish_conn(c, ci, frame)
        return
    h = &cn.live.h[d]
    peer = &cn.live.h[1 - d]
    length = pk.plen + pk.missing
    if cn.has_base[d] and not h.closed:
        off = unwrap(h.next, cn.base[d], seq)
        if length:
            nxt = h.next
            if off + length <= nxt:
                c.st.retransmitted += 1
                if (pk.plen and not (pk.plen == 1 and off == nxt - 1)
                        and compare_delivered(c, ci, d, h, off, pk.payload, pk.plen) < 0):
                    # a copy of delivered bytes (not a keep-alive) compared
                    fail_conn(c, ci)
                    return
            elif off <= nxt:
                # TCPReassembler._data, in order: the new part (its head compared with the
                # tail) or a longer copy cut by the snap length (compared), then the
                # "snaplen" Gap, then the waiting segments it reaches or covers (drained,
                # the parts they share compared there)
                p = pk.payload
                n = pk.plen
                if off + n > nxt:
                    if off < nxt:
                        c.st.overlapping += 1
                        if compare_delivered(c, ci, d, h, off, p, nxt - off) < 0:
                            fail_conn(c, ci)
                            return
                        p += nxt - off
                        n -= nxt - off
                    h.next = off + pk.plen
                    deliver(c, ci, d, nxt, p, n, frame, ts)
                    if cn.state == C_FAILED:
                        return
                elif off < nxt and n:
                    if compare_delivered(c, ci, d, h, off, p, n) < 0:
                        fail_conn(c, ci)
                        return
                if pk.missing:
                    nxt = h.next if h.next > off + pk.plen else off + pk.plen
                    h.next = off + length
                    h.tail.n = 0
                    deliver_gap(c, ci, d, off + length - nxt, frame, ts)
                    if cn.state == C_FAILED:
                        return
                if h.npend:
                    drain(c, ci, d)
                    if cn.state == C_FAILED:
                        return
            else:
                # out of order: TCPReassembler._store of the payload, and of a hole entry
                # for the bytes a snap length cut (drained as a "snaplen" Gap)
                c.st.out_of_order += 1
                r = store(c, ci, d, h, off, pk.payload, pk.plen, frame, ts) if pk.plen else 0
                if r == 0 and pk.missing:
                    r = store(c, ci, d, h, off + pk.plen, NULL, pk.missing, frame, ts)
                if r < 0:
                    fail_conn(c, ci)
                    return
                if h.pbytes > c.pure_max_bytes or h.npend > c.pure_max_segments:
                    # the pure reassembler's "buffer" Gap before the oldest waiting byte
                    skip_to(c, ci, d, h.pend[0].off)
                    if cn.state == C_FAILED:
                        return
        if (flags & F_FIN) and not h.has_fin:
            h.fin = off + length
            h.has_fin = True
        if h.has_fin and h.next >= h.fin and not h.closed:
            if not close_half(c, ci, d):
                return
    if (flags & F_ACK) and cn.has_base[1 - d] and not peer.closed:
        aoff = unwrap(peer.next, cn.base[1 - d], pk.ack)
        if not peer.has_max_ack or aoff > peer.max_ack:
            peer.max_ack = aoff
            peer.has_max_ack = True
        if aoff > peer.next and (peer.npend or (peer.has_fin and aoff > peer.fin)):
            # acknowledged bytes never captured: the pure reassembler declares them lost
            while peer.npend and aoff > peer.next:
                skip_to(c, ci, 1 - d, min(aoff, peer.pend[0].off))
                if cn.state == C_FAILED:
                    return
            if peer.has_fin and aoff > peer.fin:
                skip_to(c, ci, 1 - d, peer.fin)
                if cn.state == C_FAILED:
                    return
            if peer.has_fin and peer.next >= peer.fin:
                if not close_half(c, ci, 1 - d):
                    return
    if cn.live.h[0].closed and cn.live.h[1].closed:
        retire(c, ci, frame)

cdef extern from *:
    ctypedef long long i128 "__int128"

# ---------------------------------------------------------------------------
# IPv4 fragments (FragTable, declared with Core)
# ---------------------------------------------------------------------------
cdef int64_t FR_TIMEOUT_NS = 30 * 1000000000

cdef int fr_init(FragTable* t) noexcept nogil:
    cdef int i
    t.head = t.tail = -1
    t.d = <FDgram*>malloc(FR_MAX_DATAGRAMS * sizeof(FDgram))
    t.buckets = <int32_t*>malloc(FR_BUCKETS * sizeof(int32_t))
    t.out = <uint8_t*>malloc(FR_MAX_DATAGRAM + 1)
    if t.d == NULL or t.buckets == NULL or t.out == NULL:
        fr_free(t)          # frees what was allocated (no datagram yet: head is -1)
        return -1
    for i in range(FR_BUCKETS):
        t.buckets[i] = -1
    t.free_head = -1
    t.fresh = 0
    t.head = t.tail = -1
    t.count = 0
    t.bytes = 0
    return 0

cdef void fr_free(FragTable* t) noexcept nogil:
    cdef int32_t i
    if t.d != NULL:
        i = t.head
        while i >= 0:
            free(t.d[i].data)
            i = t.d[i].next
    free(t.d)
    free(t.buckets)
    free(t.out)
    t.d = NULL
    t.buckets = NULL
    t.out = NULL
    t.count = 0
    t.bytes = 0

cdef inline uint32_t fr_bucket(const uint8_t* src, const uint8_t* dst, uint8_t proto, uint16_t ident) noexcept nogil:
    cdef uint64_t h
    cdef uint32_t a, b
    memcpy(&a, src, 4)
    memcpy(&b, dst, 4)
    h = ((<uint64_t>a << 32) | b) ^ (<uint64_t>ident << 8 | proto) * 0x9E3779B97F4A7C15ULL
    h *= 0xBF58476D1CE4E5B9ULL
    h ^= h >> 29
    return <uint32_t>(h & (FR_BUCKETS - 1))

cdef void fr_remove(FragTable* t, int32_t i) noexcept nogil:
    """Forget datagram i (completed, abandoned or evicted)."""
    cdef FDgram* g = &t.d[i]
    cdef uint32_t bk = fr_bucket(g.src, g.dst, g.proto, g.ident)
    cdef int32_t* link = &t.buckets[bk]
    while link[0] != i:
        link = &t.d[link[0]].hnext
    link[0] = g.hnext
    if g.prev >= 0:
        t.d[g.prev].next = g.next
    else:
        t.head = g.next
    if g.next >= 0:
        t.d[g.next].prev = g.prev
    else:
        t.tail = g.prev
    t.bytes -= g.stored
    free(g.data)
    g.data = NULL
    g.dcap = 0
    g.hnext = t.free_head
    t.free_head = i
    t.count -= 1

cdef Py_ssize_t fr_add(FragTable* t, Pkt* pk, int64_t ts) noexcept nogil:
    """FragmentReassembler.add: the reassembled IP payload's length (its bytes
    in t.out) when this fragment completes its datagram, -1 when not, -2 when
    out of memory.  Abandoned datagrams only make the pure processor report
    their frames as skipped: nothing to do here."""
    cdef int32_t i, k, lo, hi, mid, cap
    cdef uint32_t bk
    cdef FDgram* g
    cdef FPiece* pc
    cdef uint8_t* nd
    cdef int64_t pos, e, lim, end
    if t.d == NULL and fr_init(t) < 0:
        return -2
    # time out the oldest datagrams (insertion order; capture time)
    while t.count:
        if <i128>ts - <i128>t.d[t.head].first_ts <= <i128>FR_TIMEOUT_NS:
            break
        fr_remove(t, t.head)
    bk = fr_bucket(pk.key.src, pk.key.dst, pk.proto, pk.ident)
    i = t.buckets[bk]
    while i >= 0:
        g = &t.d[i]
        if (g.ident == pk.ident and g.proto == pk.proto and memcmp(g.src, pk.key.src, 4) == 0
                and memcmp(g.dst, pk.key.dst, 4) == 0):
            break
        i = g.hnext
    if i < 0:
        if t.count >= FR_MAX_DATAGRAMS:
            fr_remove(t, t.head)
        if t.free_head >= 0:
            i = t.free_head
            t.free_head = t.d[i].hnext
        else:
            i = t.fresh
            t.fresh += 1
        g = &t.d[i]
        memcpy(g.src, pk.key.src, 4)
        memcpy(g.dst, pk.key.dst, 4)
        g.ident = pk.ident
        g.proto = pk.proto
        g.end = -1
        g.stored = 0
        g.npieces = 0
        g.first_ts = ts
        g.data = NULL
        g.dcap = 0
        g.hnext = t.buckets[bk]
        t.buckets[bk] = i
        g.next = -1
        g.prev = t.tail
        if t.tail >= 0:
            t.d[t.tail].next = i
        else:
            t.head = i
        t.tail = i
        t.count += 1
    g = &t.d[i]
    if g.npieces + 1 > FR_MAX_PIECES or g.stored + pk.plen > 2 * FR_MAX_DATAGRAM:
        fr_remove(t, i)           # duplicates without end: the datagram is given up
        return -1
    if g.stored + pk.plen > g.dcap:
        cap = g.dcap * 2 if g.dcap else 2048
        while cap < g.stored + pk.plen:
            cap *= 2
        nd = <uint8_t*>realloc(g.data, cap)
        if nd == NULL:
            return -2
        g.data = nd
        g.dcap = cap
    # the piece goes after every piece at an offset <= its own (a stable sort)
    lo = 0
    hi = g.npieces
    while lo < hi:
        mid = (lo + hi) // 2
        if g.pieces[mid].off <= <int32_t>pk.frag_off:
            lo = mid + 1
        else:
            hi = mid
    memmove(&g.pieces[lo + 1], &g.pieces[lo], (g.npieces - lo) * sizeof(FPiece))
    pc = &g.pieces[lo]
    pc.off = pk.frag_off
    pc.length = <int32_t>pk.plen
    pc.at = g.stored
    if pk.plen:
        memcpy(g.data + g.stored, pk.payload, pk.plen)
    g.npieces += 1
    g.stored += <int32_t>pk.plen
    t.bytes += pk.plen
    if not pk.more:
        g.end = <int32_t>(pk.frag_off + pk.plen)
    if g.end < 0:
        return -1
    end = g.end
    pos = 0
    for k in range(g.npieces):
        pc = &g.pieces[k]
        if pc.off > pos:
            return -1             # a hole
        e = pc.off + pc.length
        if e > pos:
            lim = e if e < end else end
            if lim > pos:
                memcpy(t.out + pos, g.data + pc.at + (pos - pc.off), lim - pos)
            pos = e
        if pos >= end:
            break
    if pos < end:
        return -1
    fr_remove(t, i)
    return <Py_ssize_t>end

cdef void fragment(Core* c, Pkt* pk, int64_t ts) noexcept nogil:
    """An IPv4 fragment, fed to the reassembler as CaptureProcessor does; a
    completed TCP datagram is the pure decode_reassembled's TCPSegment,
    attributed to this frame (number and time)."""
    cdef Py_ssize_t n, doff
    cdef const uint8_t* t
    cdef Pkt sg
    if pk.proto == 6:
        c.st.tcp_fragments += 1
    n = fr_add(&c.frags, pk, ts)
    if n == -2:
        c.oom = True
        return
    if n < 0 or pk.proto != 6:
        return                    # incomplete, or not TCP (the deferred frame's side processor has it)
    t = c.frags.out
    if n < 20:
        return                    # Malformed "reassembled TCP" (counted by the side processor)
    doff = (t[12] >> 4) * 4
    if doff < 20 or doff > n:
        return
    sg.key = pk.key
    sg.key.sport = be16(t)
    sg.key.dport = be16(t + 2)
    sg.seq = be32(t + 4)
    sg.ack = be32(t + 8)
    sg.flags = t[13]
    sg.payload = t + doff
    sg.plen = n - doff
    sg.missing = 0
    c.st.reassembled += 1
    segment(c, &sg, c.number, ts)

cdef inline int push_deferred(Core* c, Py_ssize_t datapos, int64_t caplen, int64_t orig, int64_t ts,
                              int ifid, int linktype) noexcept nogil:
    if (i64_push(&c.d_pos, datapos) < 0 or i64_push(&c.d_num, c.number) < 0 or i64_push(&c.d_ts, ts) < 0
            or i64_push(&c.d_cap, caplen) < 0 or i64_push(&c.d_orig, orig) < 0 or i64_push(&c.d_if, ifid) < 0
            or i64_push(&c.d_lt, linktype) < 0):
        c.oom = True
        return -1
    return 0

cdef inline int64_t half_reorder(Half* h) noexcept nogil:
    """TCPReassembler.buffered for one direction: the captured bytes waiting
    in its reorder buffer (snap-length holes cost nothing)."""
    return h.pbytes - h.hbytes

cdef int64_t half_framer(Half* h) noexcept nogil:
    """The direction's framer's buffered_bytes, as the pure framer counts it:
    the unconsumed input, the IBM MQ units waiting for more segments (as
    len(_Pending.buf)), the garbage and the skipped segment's bytes kept for
    their errors."""
    cdef int64_t n
    cdef int i
    if not h.framer_on:
        return 0
    n = h.buf.n
    if h.proto == P_MQ:
        for i in range(h.mq.npend):
            n += _mq_pend_held(&h.mq.pend[i])
        n += h.mq.g_n + h.mq.sk_n
    return n

cdef inline int64_t half_buffered(Half* h) noexcept nogil:
    """ByteBudget.usage of one direction: reorder buffer plus framer."""
    return half_reorder(h) + half_framer(h)

cdef int64_t budget_total(Core* c) noexcept nogil:
    """ByteBudget.total: what the open directions hold."""
    cdef int64_t total = 0
    cdef Py_ssize_t j
    cdef Conn* cn
    for j in range(c.open_conns):
        cn = &c.conns[c.open_idx[j]]
        if cn.live != NULL:
            total += half_buffered(&cn.live.h[0]) + half_buffered(&cn.live.h[1])
    return total

cdef int64_t core_buffered(Core* c) noexcept nogil:
    """Everything the core buffers for the capture: the open directions (what
    the budget counts) and the IPv4 fragment table."""
    return budget_total(c) + c.frags.bytes

cdef int _cut_cmp(const void* a, const void* b) noexcept nogil:
    """ByteBudget.enforce's order: most bytes first; ties in the order of
    usage()'s dict (directions with reorder bytes in TCPReassembler.conns
    order, then the others in the converter's dirs order)."""
    cdef const int64_t* x = <const int64_t*>a
    cdef const int64_t* y = <const int64_t*>b
    cdef int k
    if x[0] != y[0]:
        return -1 if x[0] > y[0] else 1
    for k in range(1, 3):
        if x[k] != y[k]:
            return -1 if x[k] < y[k] else 1
    return 0

cdef void budget_enforce(Core* c, int64_t total) noexcept nogil:
    """ByteBudget.enforce past the limit: the directions holding the most are
    cut, one after the other, until the total is at most 3/4 of the limit: the
    reorder buffer flushed (its holes declared lost: Gaps, its segments
    delivered), then the framer cut (mq_framer_cut, msmq_framer_cut: what it
    held becomes FramingErrors); what the direction no longer holds is counted."""
    cdef Py_ssize_t i, j, n = 0, k, r
    cdef int d
    cdef int64_t held, left, released, low = 3 * c.budget_limit // 4
    cdef int64_t* v = <int64_t*>malloc((8 * c.open_conns + 8) * sizeof(int64_t))
    cdef Conn* cn
    cdef Half* h
    if v == NULL:
        c.oom = True
        return
    for j in range(c.open_conns):
        i = c.open_idx[j]
        cn = &c.conns[i]
        if cn.live == NULL or cn.state != C_FAST:
            continue
        for d in range(2):
            h = &cn.live.h[d]
            if h.closed:
                continue
            held = half_buffered(h)
            if held == 0:
                continue
            v[4 * n] = held
            if half_reorder(h) > 0:
                v[4 * n + 1] = 0
                v[4 * n + 2] = 2 * cn.id + (0 if d == cn.first_dir else 1)   # (ids: opening order)
            else:
                v[4 * n + 1] = 1
                v[4 * n + 2] = h.dseq
            v[4 * n + 3] = 2 * i + d
            n += 1
    qsort(v, n, 4 * sizeof(int64_t), _cut_cmp)
    for k in range(n):
        if total <= low:
            break
        i = v[4 * k + 3] >> 1
        d = v[4 * k + 3] & 1
        cn = &c.conns[i]
        if cn.live == NULL or cn.state != C_FAST or cn.live.h[d].closed:
            continue
        h = &cn.live.h[d]
        while h.npend:
            skip_to(c, i, d, h.pend[0].off)
            if cn.state != C_FAST:
                break
        if cn.state != C_FAST:
            break
        if h.framer_on:
            c.cur_conn = i
            c.cur_dir = d
            if h.proto == P_MQ:
                r = mq_framer_cut(&h.mq, h.buf.p, h.buf.n, c.budget_limit, <void*>c)
            else:
                r = msmq_framer_cut(&h.ms, h.buf.p, h.buf.n, c.budget_limit, <void*>c)
            if r < 0:
                fail_conn(c, i)
                break
            buf_consume(&h.buf, r)
        left = half_framer(h)
        released = v[4 * k] - left
        if released > 0:
            c.budget_cuts += 1
            c.budget_cut_bytes += released
            total -= released
    free(v)

cdef void process(Core* c, const uint8_t* data, Py_ssize_t datapos, int64_t caplen, int64_t orig, int64_t ts,
                  int ifid, int linktype) noexcept nogil:
    """One frame (number c.number): decode, then the TCP path or deferral."""
    cdef Pkt pk
    cdef int64_t total
    cdef int r
    c.st.frames += 1
    c.now_frame = c.number
    c.now_ts = ts
    if c.all_frames:
        c.st.deferred += 1
        push_deferred(c, datapos, caplen, orig, ts, ifid, linktype)
        return
    r = decode(data, <Py_ssize_t>caplen, linktype, caplen, orig, &pk)
    if r == D_TCP:
        segment(c, &pk, c.number, ts)
    else:
        c.st.deferred += 1
        if c.slog == NULL:     # (the stream-event log wants TCP only: nothing is handed over)
            push_deferred(c, datapos, caplen, orig, ts, ifid, linktype)
        if r == D_FRAG:
            fragment(c, &pk, ts)
    if c.budget_limit:
        # ByteBudget.charge(len(frame.data)) after the frame: the same check points
        c.budget_since += caplen
        if c.budget_since >= c.budget_slack:
            c.budget_since = 0
            c.budget_checks += 1
            total = budget_total(c)
            if total > c.budget_peak:
                c.budget_peak = total
            if total > c.budget_limit:
                budget_enforce(c, total)

cdef Py_ssize_t walk(Core* c, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """Complete pcap records of p[0:n] (file header already consumed); returns bytes consumed."""
    cdef Py_ssize_t pos = 0
    cdef int64_t incl, orig, ts
    cdef uint32_t sec, frac
    cdef int big = c.big
    while n - pos >= 16:
        if c.unsupported or c.oom:
            break
        incl = rd32(p + pos + 8, big)
        if incl > MAX_RECORD_LEN:
            c.stopped = True
            c.stop_off = c.base + pos
            c.stop_num = c.number
            break
        if pos + 16 + incl > n:
            break
        orig = rd32(p + pos + 12, big)
        sec = rd32(p + pos, big)
        frac = rd32(p + pos + 4, big)
        ts = <int64_t>sec * NS + <int64_t>frac * c.scale
        if c.numbers != NULL and c.rec - c.numbers_base < c.n_numbers:
            c.number = c.numbers[c.rec - c.numbers_base]
        c.rec += 1
        process(c, p + pos + 16, pos + 16, incl, orig, ts, 0, c.linktype)
        c.number += 1
        pos += 16 + incl
    return pos

cdef int64_t MAX_BLOCK_LEN = 16 * 1024 * 1024 + 64

cdef inline bint ng_stop(Core* c, Py_ssize_t pos) noexcept nogil:
    c.stopped = True
    c.stop_off = c.base + pos
    c.stop_num = c.number
    return False

#: mqcodec.capture.frame.TS_UNKNOWN: the time of a frame whose timestamp does not fit
#: in int64 nanoseconds (the row's ts is null)
cdef int64_t TS_UNKNOWN = -INT64_MAX - 1

cdef bint ng_ts(Core* c, Iface* f, uint64_t ticks, int64_t* out) noexcept nogil:
    """Interface.ts_ns; False when the result does not fit in int64 (out = TS_UNKNOWN)."""
    cdef i128 v, div
    cdef int e = f.exp, i
    if f.pow2:
        v = (<i128>ticks * <i128>NS) >> e
    elif e <= 9:
        v = <i128>ticks
        for i in range(9 - e):
            v = v * 10
    else:
        if e - 9 >= 20:
            v = 0
        else:
            div = 1
            for i in range(e - 9):
                div = div * 10
            v = <i128>ticks / div
    v = v + <i128>f.offset_s * <i128>NS
    if v > <i128>INT64_MAX or v < -<i128>INT64_MAX:
        out[0] = TS_UNKNOWN
        return False
    out[0] = <int64_t>v
    return True

cdef void ng_idb_options(Core* c, Iface* f, const uint8_t* b, Py_ssize_t pos, Py_ssize_t end) noexcept nogil:
    cdef uint32_t code, length
    cdef Py_ssize_t vpos
    cdef uint64_t u
    cdef int big = c.big
    while pos + 4 <= end:
        if big:
            code = be16(b + pos)
            length = be16(b + pos + 2)
        else:
            code = b[pos] | (b[pos + 1] << 8)
            length = b[pos + 2] | (b[pos + 3] << 8)
        if code == 0:
            break
        vpos = pos + 4
        if vpos + length > end:
            break
        if code == 9 and length >= 1:
            f.pow2 = (b[vpos] & 0x80) != 0
            f.exp = b[vpos] & 0x7F
        elif code == 14 and length >= 8:
            if big:
                u = (<uint64_t>be32(b + vpos) << 32) | be32(b + vpos + 4)
            else:
                u = (<uint64_t>le32(b + vpos + 4) << 32) | le32(b + vpos)
            f.offset_s = <int64_t>u
        pos = vpos + ((length + 3) & ~3)

cdef Py_ssize_t walk_ng(Core* c, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """Complete pcapng blocks of p[0:n]; returns bytes consumed.  Where the pure
    PcapngParser raises a DecodeError the walk stops (core.stop)."""
    cdef Py_ssize_t pos = 0, avail
    cdef const uint8_t* b
    cdef int64_t blen, caplen, origlen, ts
    cdef uint32_t btype, if_id
    cdef uint32_t big2 = 0
    cdef uint64_t ticks
    cdef Iface* f
    while True:
        if c.unsupported or c.oom or c.stopped:
            break
        avail = n - pos
        if avail < 8:
            break
        b = p + pos
        if be32(b) == 0x0A0D0D0A:
            if avail < 12:
                break
            if b[8] == 0x4D and b[9] == 0x3C and b[10] == 0x2B and b[11] == 0x1A:
                big2 = 0
            elif b[8] == 0x1A and b[9] == 0x2B and b[10] == 0x3C and b[11] == 0x4D:
                big2 = 1
            else:
                ng_stop(c, pos)
                break
            blen = rd32(b + 4, big2)
            if blen < 28:
                ng_stop(c, pos)
                break
        else:
            if c.sections == 0:
                ng_stop(c, pos)
                break
            blen = rd32(b + 4, c.big)
            if blen < 12:
                ng_stop(c, pos)
                break
        if blen % 4 or blen > MAX_BLOCK_LEN:
            ng_stop(c, pos)
            break
        if avail < blen:
            break
        if be32(b) == 0x0A0D0D0A:
            if rd32(b + blen - 4, big2) != blen:
                ng_stop(c, pos)
                break
            if (be16(b + 12) if big2 else (b[12] | (b[13] << 8))) != 1:
                ng_stop(c, pos)
                break
            c.big = big2
            c.n_if = 0
            c.sections += 1
            pos += blen
            continue
        btype = rd32(b, c.big)
        if rd32(b + blen - 4, c.big) != blen:
            ng_stop(c, pos)
            break
        if btype == 6 or btype == 2:
            if blen < 32:
                ng_stop(c, pos)
                break
            if btype == 6:
                if_id = rd32(b + 8, c.big)
            else:
                if_id = be16(b + 8) if c.big else (b[8] | (b[9] << 8))
            ticks = (<uint64_t>rd32(b + 12, c.big) << 32) | rd32(b + 16, c.big)
            caplen = rd32(b + 20, c.big)
            origlen = rd32(b + 24, c.big)
            if caplen > blen - 32:
                ng_stop(c, pos)
                break
            if if_id >= c.n_if:
                ng_stop(c, pos)
                break
            f = &c.ifaces[if_id]
            if not ng_ts(c, f, ticks, &ts):
                c.st.bad_ts += 1      # the frame is kept; its time is unknown
            process(c, b + 28, pos + 28, caplen, origlen, ts, if_id, f.linktype)
            c.number += 1
        elif btype == 3:
            if blen < 16 or c.n_if == 0:
                ng_stop(c, pos)
                break
            f = &c.ifaces[0]
            origlen = rd32(b + 8, c.big)
            caplen = origlen if origlen < blen - 16 else blen - 16
            if f.snaplen and caplen > f.snaplen:
                caplen = f.snaplen
            process(c, b + 12, pos + 12, caplen, origlen, 0, 0, f.linktype)
            c.number += 1
        elif btype == 1:
            if blen < 20 or c.n_if >= 65536:
                ng_stop(c, pos)
                break
            if c.n_if == c.if_cap and grow(<void**>&c.ifaces, &c.if_cap, 8, sizeof(Iface)) < 0:
                c.oom = True
                break
            f = &c.ifaces[c.n_if]
            f.linktype = be16(b + 8) if c.big else (b[8] | (b[9] << 8))
            f.snaplen = rd32(b + 12, c.big)
            f.pow2 = 0
            f.exp = 6
            f.offset_s = 0
            ng_idb_options(c, f, b, 16, blen - 4)
            c.n_if += 1
        else:
            c.skipped_blocks += 1
            if btype == 0xBAD or btype == 0x40000BAD or btype == 9:
                c.number += 1
        pos += blen
    return pos

# ---------------------------------------------------------------------------
# Python side
# ---------------------------------------------------------------------------
cdef object _tcp_keys(const TKey* k):
    """mqcodec.capture.connections.keys_of's (conn, pair, False) of a TCP segment's key."""
    cdef int alen = 16 if k.v6 else 4
    cdef int c = memcmp(k.src, k.dst, alen)
    cdef bytes ver = b"\x06" if k.v6 else b"\x04"
    src = PyBytes_FromStringAndSize(<const char*>k.src, alen)
    dst = PyBytes_FromStringAndSize(<const char*>k.dst, alen)
    sport = bytes(((k.sport >> 8) & 0xFF, k.sport & 0xFF))
    dport = bytes(((k.dport >> 8) & 0xFF, k.dport & 0xFF))
    if c < 0 or (c == 0 and k.sport <= k.dport):
        conn = ver + src + sport + dst + dport
    else:
        conn = ver + dst + dport + src + sport
    pair = ver + src + dst if c <= 0 else ver + dst + src
    return (conn, pair, False)


def frame_keys(data, linktypes, caplens, origlens):
    """For each frame (its bytes, link type, captured and original lengths):
    ``(connection key, address-pair key, False)`` -- what
    :func:`mqcodec.capture.connections.keys_of` gives -- when the core takes
    the frame as a TCP segment, else None (the caller asks ``keys_of``)."""
    cdef Pkt pk
    cdef bytes b
    cdef Py_ssize_t i
    out = []
    for i in range(len(data)):
        b = data[i]
        if decode(<const uint8_t*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), linktypes[i], caplens[i], origlens[i],
                  &pk) == D_TCP:
            out.append(_tcp_keys(&pk.key))
        else:
            out.append(None)
    return out


def pcap_count(const uint8_t[::1] buf, Py_ssize_t limit, bint big, uint32_t max_len):
    """pcap record headers walked from the start of ``buf`` (bytes of a capture
    from a record boundary), each record whole in ``buf``, while the next one
    starts before ``limit``: ``(bytes walked, records, status)``, status 0
    (``limit`` reached), 1 (the next record's header or bytes go past ``buf``)
    or 2 (the next record's ``incl_len`` exceeds ``max_len``: damage at the
    returned offset).  What :func:`mqcodec.capture.ranges.scan_ranges`
    counts of a range, header by header in Python otherwise."""
    cdef Py_ssize_t pos = 0, n = 0, size = buf.shape[0]
    cdef uint32_t incl
    cdef int status = 0
    with nogil:
        while pos < limit:
            if size - pos < 16:
                status = 1
                break
            incl = rd32(&buf[pos] + 8, big)
            if incl > max_len:
                status = 2
                break
            if <Py_ssize_t>incl > size - pos - 16:
                status = 1
                break
            pos += 16 + <Py_ssize_t>incl
            n += 1
    return pos, n, status


from mqcodec.capture.frame import Frame as _Frame

DEFAULT_SERVER_PORTS = (1414, 1801, 3527, 2101, 2103, 2105)


cdef int fill_ports(uint16_t* arr, object ports) except -1:
    ports = tuple(sorted(set(int(p) for p in ports)))
    if len(ports) > 16:
        raise ValueError("at most 16 ports per protocol")
    for i, p in enumerate(ports):
        arr[i] = p
    return len(ports)


cdef str _ip(const uint8_t* raw, int v6):
    return socket.inet_ntop(socket.AF_INET6 if v6 else socket.AF_INET,
                            PyBytes_FromStringAndSize(<const char*>raw, 16 if v6 else 4))


cdef class _Walker:
    """Record walking (pcap, pcapng) for CaptureCore."""
    cdef Core c
    cdef Buf left
    cdef bytes _pcap_header
    cdef readonly int64_t fed           # bytes fed so far (the file offset of the next chunk)
    cdef list _out
    cdef object _numbers

    def __cinit__(self, *args, **kwargs):
        memset(&self.c, 0, sizeof(Core))
        self.c.number = 1
        self._out = []
        if table_init(&self.c.tab, 1024) < 0:
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(self.c.nconns):
            live_free(&self.c.conns[i])
        free(self.c.conns)
        free(self.c.open_idx)
        free(self.c.tab.s)
        free(self.c.fifo)
        free(self.c.ids.r)
        i64_free(&self.c.retired_new); i64_free(&self.c.retired_old); i64_free(&self.c.opened)
        buf_free(&self.left)
        buf_free(&self.c.data)
        i64_free(&self.c.offs); i64_free(&self.c.o_seq); i64_free(&self.c.o_conn); i64_free(&self.c.o_dir)
        i64_free(&self.c.o_stream); i64_free(&self.c.o_off); i64_free(&self.c.o_frame); i64_free(&self.c.o_ts)
        i64_free(&self.c.o_proto); i64_free(&self.c.o_kind); i64_free(&self.c.o_md)
        i64_free(&self.c.o_full); i64_free(&self.c.o_rank)
        i64_free(&self.c.e_idx)
        i64_free(&self.c.e_code)
        i64_free(&self.c.e_a)
        i64_free(&self.c.e_b)
        i64_free(&self.c.e_c)
        i64_free(&self.c.e_d)
        i64_free(&self.c.e_trunc)
        i64_free(&self.c.x_seq); i64_free(&self.c.x_conn); i64_free(&self.c.x_dir)
        i64_free(&self.c.x_start); i64_free(&self.c.x_end); i64_free(&self.c.x_dend)
        i64_free(&self.c.d_pos); i64_free(&self.c.d_num); i64_free(&self.c.d_ts)
        i64_free(&self.c.d_cap); i64_free(&self.c.d_orig); i64_free(&self.c.d_if); i64_free(&self.c.d_lt)
        free(self.c.ifaces)
        fr_free(&self.c.frags)

    cdef int _header(self) except -1:
        cdef const uint8_t* p = self.left.p
        cdef uint32_t m
        if self.left.n < 4:
            return 0
        m = be32(p)
        if m == 0x0A0D0D0A:
            self.c.fmt = 2        # blocks are walked from the first (the SHB)
            return 0
        if m == 0xD4C3B2A1:
            self.c.big, self.c.scale = 0, 1000
        elif m == 0xA1B2C3D4:
            self.c.big, self.c.scale = 1, 1000
        elif m == 0x4D3CB2A1:
            self.c.big, self.c.scale = 0, 1
        elif m == 0xA1B23C4D:
            self.c.big, self.c.scale = 1, 1
        else:
            self.c.fmt = 3
            set_unsupported(&self.c, "not a pcap file header")
            return 0
        if self.left.n < 24:
            return 0
        if ((be16(p + 4) if self.c.big else (p[4] | (p[5] << 8)))) != 2:
            self.c.fmt = 3
            set_unsupported(&self.c, "unsupported pcap version")
            return 0
        self.c.fmt = 1
        self.c.linktype = rd32(p + 20, self.c.big) & 0xFFFF
        self._pcap_header = PyBytes_FromStringAndSize(<const char*>p, 24)
        memmove(self.left.p, self.left.p + 24, self.left.n - 24)
        self.left.n -= 24
        self.c.base = 24
        return 0

    cdef int _walk(self, const uint8_t* p, Py_ssize_t n, bint from_left) except -1:
        cdef Py_ssize_t used, i, pos
        cdef int64_t incl, orig
        cdef Core* c = &self.c
        with nogil:
            if c.fmt == 2:
                used = walk_ng(c, p, n)
            else:
                used = walk(c, p, n)
        if c.oom:
            raise MemoryError("capture core")
        if c.d_pos.n:
            out = self._out
            for i in range(c.d_pos.n):
                pos = c.d_pos.p[i]
                incl = c.d_cap.p[i]
                raw = PyBytes_FromStringAndSize(<const char*>(p + pos), incl)
                out.append(_Frame(c.d_num.p[i], c.d_ts.p[i], c.d_lt.p[i], incl, c.d_orig.p[i], raw, c.d_if.p[i]))
            c.d_pos.n = c.d_num.n = c.d_ts.n = c.d_cap.n = c.d_orig.n = c.d_if.n = c.d_lt.n = 0
        c.base += used
        if from_left:
            if used:
                memmove(self.left.p, self.left.p + used, self.left.n - used)
                self.left.n -= used
        elif n - used:
            if buf_append(&self.left, p + used, n - used) < 0:
                raise MemoryError()
        return 0

    def feed(self, chunk):
        """The next piece of the capture file (any size)."""
        cdef const uint8_t[::1] v
        cdef Py_ssize_t n
        if self.c.unsupported or self.c.stopped:
            return self._take_out()
        if not isinstance(chunk, (bytes, bytearray)):
            chunk = bytes(chunk)
        v = chunk
        n = v.shape[0]
        if n == 0:
            return self._take_out()
        self.fed += n
        cdef Py_ssize_t at = 0, need, more
        cdef int64_t incl
        if self.c.fmt == 0:
            if buf_append(&self.left, &v[0], n) < 0:
                raise MemoryError()
            self._header()
            if self.c.fmt != 1 and self.c.fmt != 2:
                return self._take_out()
            self._walk(self.left.p, self.left.n, True)
            return self._take_out()
        if self.c.fmt == 2:
            # pcapng: complete the pending block (its length is checked by the walk)
            if self.left.n:
                if buf_append(&self.left, &v[0], n) < 0:
                    raise MemoryError()
                self._walk(self.left.p, self.left.n, True)
            else:
                self._walk(&v[0], n, False)
            return self._take_out()
        # complete the record left over from the previous chunk with just the bytes it needs
        while self.left.n and at < n:
            if self.left.n < 16:
                more = min(16 - self.left.n, n - at)
            else:
                incl = rd32(self.left.p + 8, self.c.big)
                if incl > MAX_RECORD_LEN:
                    break
                more = min(16 + incl - self.left.n, n - at)
            if buf_append(&self.left, &v[at], more) < 0:
                raise MemoryError()
            at += more
            if self.left.n >= 16 and self.left.n == 16 + <Py_ssize_t>rd32(self.left.p + 8, self.c.big):
                self._walk(self.left.p, self.left.n, True)
                if self.c.unsupported or self.c.stopped:
                    return self._take_out()
        if self.left.n and self.left.n >= 16 and rd32(self.left.p + 8, self.c.big) > MAX_RECORD_LEN:
            if buf_append(&self.left, &v[at], n - at) < 0:
                raise MemoryError()
            self._walk(self.left.p, self.left.n, True)
        elif at < n:
            self._walk(&v[at], n - at, False)
        return self._take_out()

    def _take_out(self):
        return None

    @property
    def format(self):
        return {0: None, 1: "pcap", 2: "pcapng", 3: None}[self.c.fmt]

    @property
    def linktype(self):
        if self.c.fmt == 2:
            return self.c.ifaces[0].linktype if self.c.n_if else None
        return self.c.linktype if self.c.fmt == 1 else None

    @property
    def supported(self):
        return not self.c.unsupported

    @property
    def unsupported_reason(self):
        return None if not self.c.unsupported else (<bytes>self.c.why).decode()

    @property
    def stop(self):
        return (self.c.stop_off, self.c.stop_num) if self.c.stopped else None

    @property
    def file_state(self):
        """What a parser must have been fed to read this file on from a record or
        block boundary: ``("pcap", the 24-byte file header)``, ``("pcapng",
        big_endian, [(linktype, snaplen, pow2, exp, offset_s), ...])`` (the section
        and interfaces in effect), or None before the file header was read."""
        cdef Py_ssize_t i
        if self.c.fmt == 1:
            return ("pcap", self._pcap_header)
        if self.c.fmt == 2 and self.c.sections:
            return ("pcapng", bool(self.c.big),
                    [(self.c.ifaces[i].linktype, self.c.ifaces[i].snaplen, bool(self.c.ifaces[i].pow2),
                      self.c.ifaces[i].exp, self.c.ifaces[i].offset_s) for i in range(self.c.n_if)])
        return None

    def unread(self):
        """After :attr:`stop`: the bytes from the stop offset on that the core was fed
        and holds (those of the caller's last chunk past them it did not take)."""
        if not self.c.stopped:
            return b""
        return PyBytes_FromStringAndSize(<const char*>self.left.p, self.left.n)

    @property
    def next_frame(self):
        return self.c.number

    def number_frames(self, numbers):
        """The frame numbers of the pcap records from the next one walked
        (:attr:`records_walked`) on, in file order (int64; the frames of a
        capture that are not the whole capture: one connection's, see
        ``Converter.add_frames``).  Called before ``feed``, and again between
        feeds with the numbers from the next record on: the caller holds a
        window of them, never a number per frame of the capture
        (:func:`mqcodec.convert.compiled.add_capture`, at most
        :meth:`records_fed` past :attr:`records_walked`)."""
        cdef const int64_t[::1] v
        a = np.ascontiguousarray(numbers, dtype=np.int64)
        self._numbers = a
        v = a
        self.c.numbers_base = self.c.rec
        self.c.n_numbers = a.shape[0]
        self.c.numbers = &v[0] if a.shape[0] else NULL

    @property
    def records_walked(self):
        """The pcap records walked so far."""
        return self.c.rec

    def records_fed(self, int64_t more):
        """At most how many records the bytes fed and not yet walked, and ``more``
        bytes fed next, complete (a record is at least its 16-byte header)."""
        return (self.fed + more - self.c.base) // 16 + 1


cdef class CaptureCore(_Walker):
    """See the module docstring."""
    cdef list _slog
    cdef Py_ssize_t _finish_next   # finish(max_bytes): the next connection to finish
    cdef bint _finishing
    cdef I64 _finish_order         # (id, record) of the connections open when finish() began, by id

    def __dealloc__(self):
        i64_free(&self._finish_order)

    def __init__(self, mq_ports=(1414,), msmq_ports=(1801,), detect_by_content=True, *,
                 server_ports=DEFAULT_SERVER_PORTS, max_closed=65536, max_connections=1_000_000, max_reassembly_bytes=4 << 20,
                 max_reassembly_segments=4096, max_total_buffer=None, units=False, streams_by_frame=False,
                 stream_events=False, all_frames=False):
        self.c.streams_by_frame = bool(streams_by_frame)
        self.c.all_frames = bool(all_frames)   # stage (a) alone: every frame to take_frames()
        if stream_events:
            # stage (b) alone: every TCP stream event to a list (take_stream_events), nothing framed
            self._slog = []
            self.c.slog = <void*>self._slog
        self.c.n_mq = fill_ports(self.c.mq_ports, mq_ports)
        self.c.units = bool(units)
        self.c.n_msmq = fill_ports(self.c.msmq_ports, msmq_ports)
        self.c.n_server = fill_ports(self.c.server_ports, server_ports)
        self.c.detect = bool(detect_by_content)
        self.c.max_closed = max_closed
        self.c.max_connections = max_connections
        self.c.pure_max_bytes = max_reassembly_bytes
        self.c.pure_max_segments = max_reassembly_segments
        if max_total_buffer is not None:
            if max_total_buffer <= 0:
                raise ValueError("max_total_buffer must be positive")
            self.c.budget_limit = max_total_buffer
            self.c.budget_slack = max(1, max_total_buffer // 16)   # ByteBudget's default slack
        if i64_push(&self.c.offs, 0) < 0:
            raise MemoryError()

    def finish(self, Py_ssize_t max_bytes=0):
        """End of input: close every open fast-path connection (stream order).
        ``max_bytes`` > 0: stop once the output not yet taken holds that many
        bytes (their open units become rows with their bytes, all at the end of
        the capture) and return False; take() them and call again to go on.
        True when every connection is closed."""
        cdef Py_ssize_t ci, k, j
        cdef Core* c = &self.c
        cdef I64* order = &self._finish_order
        if not self._finishing:
            if i64_reserve(order, 2 * c.open_conns + 2) < 0:
                raise MemoryError("capture core")
            self._finishing = True
            self._finish_next = 0
            for j in range(c.open_conns):
                order.p[2 * j] = c.conns[c.open_idx[j]].id
                order.p[2 * j + 1] = c.open_idx[j]
            order.n = 2 * c.open_conns
            qsort(order.p, c.open_conns, 2 * sizeof(int64_t), _victim_cmp)
            if c.fmt == 0 or (c.fmt == 2 and c.sections == 0):
                set_unsupported(c, "the input ends inside the file header")
            if (c.fmt == 1 or c.fmt == 2) and not c.stopped and self.left.n:
                c.stopped = True
                c.stop_off = c.base
                c.stop_num = c.number
        if c.unsupported:
            return True
        k = self._finish_next
        with nogil:
            while 2 * k < order.n:
                ci = <Py_ssize_t>order.p[2 * k + 1]
                if c.conns[ci].id == order.p[2 * k] and c.conns[ci].state == C_FAST and not c.conns[ci].retired:
                    finish_conn(c, ci, c.number - 1, True)
                k += 1
                if max_bytes > 0 and c.data.n >= max_bytes:
                    break
        self._finish_next = k
        if c.oom:
            raise MemoryError("capture core")
        return 2 * k >= order.n

    def take(self):
        """Everything produced since the last take()."""
        cdef Core* c = &self.c
        cdef Py_ssize_t n = c.o_seq.n
        cdef int64_t base = c.offs.p[0]
        out = {}
        out["seq"] = _arr(&c.o_seq, n).copy()
        out["conn"] = _arr(&c.o_conn, n).copy()
        out["direction"] = _arr(&c.o_dir, n).astype(np.int8)
        out["tcp_stream"] = _arr(&c.o_stream, n).copy()
        out["stream_offset"] = _arr(&c.o_off, n).copy()
        out["frame"] = _arr(&c.o_frame, n).copy()
        out["ts_ns"] = _arr(&c.o_ts, n).copy()
        out["protocol"] = _arr(&c.o_proto, n).astype(np.int8)
        out["kind"] = _arr(&c.o_kind, n).astype(np.int16)
        out["md_only"] = _arr(&c.o_md, n).astype(np.bool_)
        out["full_length"] = _arr(&c.o_full, n).copy()
        out["rank"] = _arr(&c.o_rank, n).copy()
        out["offsets"] = _arr(&c.offs, n + 1).copy()
        out["data"] = PyBytes_FromStringAndSize(<const char*>c.data.p, c.data.n) if c.data.n else b""
        out["deferred"] = self._out
        self._out = []
        cdef Py_ssize_t ne = c.e_idx.n
        if ne:
            out["errors"] = {"index": _arr(&c.e_idx, ne).copy(), "code": _arr(&c.e_code, ne).copy(),
                             "a": _arr(&c.e_a, ne).copy(), "b": _arr(&c.e_b, ne).copy(),
                             "c": _arr(&c.e_c, ne).copy(), "d": _arr(&c.e_d, ne).copy(),
                             "truncated": _arr(&c.e_trunc, ne).astype(np.bool_)}
            c.e_idx.n = c.e_code.n = c.e_a.n = c.e_b.n = c.e_c.n = c.e_d.n = c.e_trunc.n = 0
        cdef Py_ssize_t nx = c.x_seq.n
        if nx:
            out["conflicts"] = {"seq": _arr(&c.x_seq, nx).copy(), "conn": _arr(&c.x_conn, nx).copy(),
                                "direction": _arr(&c.x_dir, nx).copy(), "start": _arr(&c.x_start, nx).copy(),
                                "end": _arr(&c.x_end, nx).copy(), "stream_end": _arr(&c.x_dend, nx).copy()}
            c.x_seq.n = c.x_conn.n = c.x_dir.n = c.x_start.n = c.x_end.n = c.x_dend.n = 0
        c.o_seq.n = c.o_conn.n = c.o_dir.n = c.o_stream.n = c.o_off.n = 0
        c.o_frame.n = c.o_ts.n = c.o_proto.n = c.o_kind.n = c.o_md.n = c.o_full.n = c.o_rank.n = 0
        c.offs.p[0] = 0
        c.offs.n = 1
        c.data.n = 0
        release_records(c)   # (after the copies: a take that raises frees nothing)
        return out

    def take_frames(self):
        """The frames deferred since the last call (with ``all_frames=True``:
        every frame walked), as ``mqcodec.capture.Frame``, in capture order."""
        out = self._out
        self._out = []
        return out

    def take_stream_events(self):
        """With ``stream_events=True``: the TCP stream events since the last
        call, in order, as ``(kind, conn, direction, offset, data or length,
        frame, ts_ns)``; kind 0 opened (length: 1 when the SYN was seen), 1
        data, 2 gap, 3 closed (offset: the stream's length)."""
        if self._slog is None:
            raise ValueError("CaptureCore(stream_events=True) logs the stream events")
        out = list(self._slog)
        del self._slog[:]
        release_records(&self.c)
        return out

    cdef Conn* _record(self, int64_t conn):
        """The record of connection ``conn`` (take()'s conn), or NULL when it is
        not held: unknown, or forgotten before the previous take."""
        cdef Py_ssize_t at = idmap_find(&self.c.ids, self.c.conns, conn)
        return NULL if at < 0 else &self.c.conns[self.c.ids.r[at]]

    def connection(self, int64_t conn):
        """(client_ip, client_port, server_ip, server_port, tcp_stream) of a
        connection in the output of the last take() or since (IndexError for
        one forgotten before it)."""
        cdef Conn* cn = self._record(conn)
        if cn == NULL:
            raise IndexError(conn)
        return (_ip(cn.key.src, cn.key.v6), cn.key.sport, _ip(cn.key.dst, cn.key.v6), cn.key.dport, conn_stream(&self.c, cn))

    def stream_end(self, Py_ssize_t conn, int direction):
        """Where the direction's stream is: its next expected offset while the
        core follows it; -1 when it is closed (no more bytes will come).  The
        driver holds messages ending within the pure reassembler's
        OVERLAP_WINDOW of it (a differing copy may still flag them)."""
        if not 0 <= direction <= 1 or not 0 <= conn < self.c.next_id:
            raise IndexError(conn)
        cdef Conn* cn = self._record(conn)
        if cn == NULL or cn.live == NULL or cn.live.h[direction].closed:
            return -1
        return cn.live.h[direction].next

    def opened_frame(self, Py_ssize_t conn):
        """The frame that opened connection ``conn`` (keys of its rows whose first
        byte was not captured), as :meth:`connection` finds it."""
        cdef Conn* cn = self._record(conn)
        if cn == NULL:
            raise IndexError(conn)
        return cn.first_frame

    def opened_frames(self):
        """With ``streams_by_frame``: the frame that opened each connection, in
        order of opening."""
        if not self.c.streams_by_frame:
            raise ValueError("CaptureCore(streams_by_frame=True) keeps the opening frames")
        return _arr(&self.c.opened, self.c.opened.n).tolist()

    @property
    def buffered_bytes(self):
        """Bytes the core holds for the capture: open fast-path directions
        (unconsumed framer input, out-of-order segments, the compiled MQ
        framer's pending units and scratch) and the IPv4 fragment table --
        what ``max_total_buffer`` bounds."""
        return core_buffered(&self.c)

    @property
    def stats(self):
        cdef Stats* s = &self.c.st
        return {"frames": s.frames, "frames deferred": s.deferred, "tcp segments": s.tcp_segments,
                "connections": s.connections,
                "bytes in streams of no known protocol": s.undetected, "messages": s.messages,
                "framing error records": s.framing_errors,
                "retransmitted segments": s.retransmitted, "overlapping segments": s.overlapping,
                "overlapping bytes not compared": s.not_compared, "conflicting overlaps": s.conflicts,
                "segments after close": s.after_close, "segments of unknown connections": s.unknown_conn,
                "tcp fragments": s.tcp_fragments, "reassembled tcp segments": s.reassembled,
                "pending ip datagrams": self.c.frags.count, "out-of-order segments": s.out_of_order,
                "budget checks": self.c.budget_checks, "buffered bytes at the largest check": self.c.budget_peak,
                "budget cuts": self.c.budget_cuts, "bytes cut by the budget": self.c.budget_cut_bytes,
                "pcapng blocks skipped": self.c.skipped_blocks, "open connections": self.c.open_conns,
                "connection records": self.c.ids.n,
                "frames with impossible timestamps": s.bad_ts, "evicted connections": s.evicted,
                "gaps": s.gaps, "gap bytes": s.gap_bytes, "resynchronisations": s.resyncs,
                "bytes skipped by resynchronisation": s.resync_bytes}


cdef object _arr(I64* a, Py_ssize_t n):
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(<int64_t[:n]>a.p)
