"""The IBM MQ stream framers' FramingErrors: each kind as a code and its numbers.

Both framers report a damaged or incomplete TCP stream of IBM MQ with the
same errors: the pure :class:`mqcodec.ibmmq.framing.MQStreamFramer` and the
compiled framer of the capture core (``_ext/framer_mq.pxi``), which hands
over a code and up to four numbers in place of a text.  :func:`describe`
turns them into the error's structure, field and reason; the pure framer
makes its texts with it too, so the two cannot drift.  No construct here:
the conversion path imports this module without the declarations.
"""
from __future__ import annotations

from .wire import segment_type_name

__all__ = ["NOT_A_SEGMENT", "SEGMENT_LENGTH", "AFTER_GAP", "NO_HEADER", "GAP_IN_SEGMENT", "GAP_IN_UNIT",
           "ENDS_IN_SEGMENT", "ENDS_IN_UNIT", "CONTINUATION_WITHOUT_FIRST", "NEW_FIRST_BEFORE_LAST", "HEADER_NAMES",
           "describe"]

# the codes (the compiled framer's MQE_* values: _ext/framer_mq.pxi; a test compares them)
NOT_A_SEGMENT = 1    # a: the 4 bytes read as a big-endian number
SEGMENT_LENGTH = 2   # a: index into HEADER_NAMES, b: MQSegmLen, c: the header's length, d: the limit
AFTER_GAP = 3
NO_HEADER = 4
GAP_IN_SEGMENT = 5   # a: bytes missing, b: at stream offset, c: stream end at close (or -1)
GAP_IN_UNIT = 6      # a: segment type, b: bytes missing, c: at stream offset, d: segments so far
ENDS_IN_SEGMENT = 7  # a: bytes of the segment, b: its MQSegmLen (or -1: not known)
ENDS_IN_UNIT = 8     # a: segment type, d: segments so far
CONTINUATION_WITHOUT_FIRST = 9   # a: index into HEADER_NAMES, b: segment type
NEW_FIRST_BEFORE_LAST = 10       # a: the open unit's segment type, b: the new segment's

#: the segment headers by their index in SEGMENT_LENGTH errors
HEADER_NAMES = ("TSH", "TSHM", "TSHC")


def describe(code: int, a: int = 0, b: int = 0, c: int = -1, d: int = 0) -> tuple[str, str, str]:
    """(structure, field, reason) of a FramingError given by its code and numbers."""
    if code == NOT_A_SEGMENT:
        return "TSH", "StructID", "%r at a segment boundary is not TSH, TSHM or TSHC" % int(a).to_bytes(4, "big")
    if code == SEGMENT_LENGTH:
        return HEADER_NAMES[a], "MQSegmLen", "MQSegmLen %d outside the valid range %d..%d" % (b, c, d)
    if code == AFTER_GAP:
        return "TSH", "StructID", "bytes after a gap, before the next segment header"
    if code == NO_HEADER:
        return "TSH", "StructID", "no segment header"
    if code == GAP_IN_SEGMENT:
        reason = "gap of %d bytes at stream offset %d inside the segment" % (a, b)
        if c >= 0:
            reason += "; stream ends at offset %d" % c
        return "TSH", "", reason
    if code == GAP_IN_UNIT:
        return (segment_type_name(a), "", "gap of %d bytes at stream offset %d inside a %d-segment message"
                % (b, c, d))
    if code == ENDS_IN_SEGMENT:
        return "TSH", "", "stream ends after %d bytes of the segment%s" % (
            a, "" if b < 0 else " (MQSegmLen %d)" % b)
    if code == ENDS_IN_UNIT:
        return segment_type_name(a), "", "stream ends before the last segment inside a %d-segment message" % d
    if code == CONTINUATION_WITHOUT_FIRST:
        return HEADER_NAMES[a], "CtlFlag1", "%s continuation segment without a first segment" % segment_type_name(b)
    if code == NEW_FIRST_BEFORE_LAST:
        return (segment_type_name(a), "", "a new first segment (%s) came before the last segment"
                % segment_type_name(b))
    raise ValueError("unknown IBM MQ framing error code %r" % code)
