# Types shared by the compiled capture core (capture_core.pyx) and the stream
# framers it includes (framer_mq.pxi, framer_msmq.pxi).  Included, never
# compiled alone.
#
# The framers are the compiled twins of mqcodec.ibmmq.framing.MQStreamFramer
# and mqcodec.msmq.framing.MSMQStreamFramer: they emit exactly the
# Message/Packet events and the FramingErrors (error_fn: a code and numbers)
# the pure framers emit, in the same order, gaps, garbage, incomplete streams,
# size limits and byte-budget cuts included.  They BAIL (return -1) only when
# a callback fails (out of memory): the capture core then raises MemoryError.
from libc.stdint cimport uint8_t, uint16_t, uint32_t, int16_t, int32_t, int64_t, uint64_t

# Called by a framer for each complete message, in stream order.
#   start   stream offset of the message's first byte: what the pure framer
#           reports as the unit event's offset (Message / Packet, mqcodec.stream_events)
#   data, length
#           the message bytes, equal to the unit event's data (Message / Packet);
#           valid only during the call (the core copies them)
#   kind    index into the framer's kind-name table (MQ_KIND_NAMES, MSMQ_KIND_NAMES)
#   md_only 1 when the pure converter marks the row "_md_only" (MQ: the
#           Message's md_length is not None and len(data) == md_length);
#           always 0 for MSMQ
# Returns 0, or -1 when the core could not store the message (out of memory):
# the framer then returns FRAMER_BAIL.
ctypedef int (*emit_fn)(void* ctx, int64_t start, const uint8_t* data, Py_ssize_t length,
                        int kind, int md_only) noexcept nogil

# Called by the IBM MQ framer for each complete protocol unit of any segment
# type (a segment, or segments joined FIRST..LAST as for messages), before
# the unit's message if it has one: what the pure framer reports as a Unit
# event (units=True).  data/length: the unit's first bytes (at most
# MQ_UNIT_PREFIX), full: its whole joined length.  Returns 0 or -1 (BAIL).
ctypedef int (*unit_fn)(void* ctx, int64_t start, const uint8_t* data, Py_ssize_t length,
                        int64_t full) noexcept nogil

# Called by the IBM MQ framer for each FramingError, in the pure framer's
# event order (before the messages that follow it).  start: the error's
# stream offset; raw/rawlen: the bytes kept (at most the pure framer's
# max_raw; valid only during the call); length: its extent in the stream;
# truncated: raw holds only part of the bytes received; code and a..d: what
# mqcodec.ibmmq.framing_errors.describe turns into its structure, field and
# reason.  Returns 0 or -1 (BAIL).
ctypedef int (*error_fn)(void* ctx, int64_t start, const uint8_t* raw, Py_ssize_t rawlen, int64_t length,
                         int truncated, int code, int64_t a, int64_t b, int64_t c, int64_t d) noexcept nogil

# Called by a framer each time it is on a unit boundary again (the pure
# framer's Resynchronised(offset, skipped) event), in event order; NULL in
# the capture core, which only counts them (resyncs, resync_bytes).
# Returns 0 or -1 (BAIL).
ctypedef int (*resync_fn)(void* ctx, int64_t offset, int64_t skipped) noexcept nogil

cdef enum:
    FRAMER_BAIL = -1
