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

from ..capture.budget import budget_reason
from .wire import MQGMO_LENGTHS, MQMD_LENGTHS, MQOD_LENGTHS, MQPMO_LENGTHS, segment_type_name

__all__ = ["NOT_A_SEGMENT", "SEGMENT_LENGTH", "AFTER_GAP", "NO_HEADER", "GAP_IN_SEGMENT", "GAP_IN_UNIT",
           "ENDS_IN_SEGMENT", "ENDS_IN_UNIT", "CONTINUATION_WITHOUT_FIRST", "NEW_FIRST_BEFORE_LAST", "UNIT",
           "SHORT_CONTINUATION", "JOINED_TOO_LONG", "DROPPED_UNFINISHED", "CUT_PENDING", "CUT_SEGMENT",
           "CUT_SKIPPED", "CUT_REST", "CUT_GARBAGE",
           "HEADER_NAMES", "UNIT_STRUCTURES", "UNIT_FIELDS", "VERSIONS", "describe", "stream_end_suffix", "unit_code", "unit_error"]

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
UNIT = 11   # a unit whose structures do not parse: a = unit_code(...), b, c, d: the reason's numbers
SHORT_CONTINUATION = 12  # a: segment type, b: the continuation's length, c: its headers' length
JOINED_TOO_LONG = 13     # a: segment type, b: the limit (max_message_length)
DROPPED_UNFINISHED = 14  # a: the dropped unit's segment type, b, c: the limits (messages, bytes)
# a byte budget's cut (framing.MQStreamFramer.cut; b: the budget's limit)
CUT_PENDING = 15    # a: segments of the unit waiting for more
CUT_SEGMENT = 16    # a: bytes of the partial segment
CUT_SKIPPED = 17    # a: where the cut is (the part of a damaged segment seen before it)
CUT_REST = 18       # a: where the cut was (the rest of the segment), c: stream end at close (or -1)
CUT_GARBAGE = 19    # a: where the cut was (the bytes after it, before the next segment header)

# UNIT errors: where (a structure and a field, by index) and why (a reason and its numbers)
#: the structures, by index; None: the unit's segment type (its DataLength)
UNIT_STRUCTURES = ("API", "MQOD", "ASYNC_MESSAGE", "MSH", "MQXQH", "MQMD", "MQPMO", "MQGMO", None)
UNIT_FIELDS = ("", "ReplyLength", "StrucId", "Version", "RecsPresent", "ReasonCode", "ResolQName", "DataLength")
#: the versions of a versioned structure (wire's lengths)
VERSIONS = {"MQOD": sorted(MQOD_LENGTHS), "MQMD": sorted(MQMD_LENGTHS), "MQPMO": sorted(MQPMO_LENGTHS),
            "MQGMO": sorted(MQGMO_LENGTHS)}
# the reasons and their numbers
TRUNCATED = 0           # b: bytes needed, c: bytes present
UNKNOWN_VERSION = 1     # b: the version
NEGATIVE_COUNT = 2      # b: the record count
RECORDS_PAST_END = 3    # b: the record count, c: bytes they need, d: bytes present
NO_MQOD = 4
NO_MQMD = 5
NO_OPTIONS = 6
NEGATIVE_LENGTH = 7     # b: DataLength
DECLARED_PAST_END = 8   # b: DataLength, c: bytes present

#: the segment headers by their index in SEGMENT_LENGTH errors
HEADER_NAMES = ("TSH", "TSHM", "TSHC")


def stream_end_suffix(end: int) -> str:
    """What a skipped segment's reason gains when the stream ends inside it."""
    return "; stream ends at offset %d" % end


def unit_code(segment_type: int, structure: str | None, fld: str, reason: int) -> int:
    """The ``a`` of a UNIT error: the unit's segment type, the structure and
    field (names; the structure None for the segment type's own) and the reason."""
    return (segment_type << 16) | (UNIT_STRUCTURES.index(structure) << 8) | (UNIT_FIELDS.index(fld) << 4) | reason


def unit_error(a: int, b: int = 0, c: int = 0, d: int = 0) -> tuple[str, str, str]:
    """(structure, field, reason) of a UNIT error."""
    t, si, fi, reason = a >> 16, (a >> 8) & 0xFF, (a >> 4) & 0xF, a & 0xF
    name = UNIT_STRUCTURES[si]
    structure = name if name is not None else segment_type_name(t)
    if reason == TRUNCATED:
        text = "truncated: %d bytes needed, %d present" % (b, c)
    elif reason == UNKNOWN_VERSION:
        text = "version %d is not one of %s" % (b, ", ".join(str(v) for v in VERSIONS[structure]))
    elif reason == NEGATIVE_COUNT:
        text = "negative record count %d" % b
    elif reason == RECORDS_PAST_END:
        text = "%d records need %d bytes, %d present" % (b, c, d)
    elif reason == NO_MQOD:
        text = "no MQOD where MQPUT1 carries it"
    elif reason == NO_MQMD:
        text = "no MQMD where %s carries it" % segment_type_name(t)
    elif reason == NO_OPTIONS:
        text = "no %s after the MQMD" % structure
    elif reason == NEGATIVE_LENGTH:
        text = "negative length %d" % b
    elif reason == DECLARED_PAST_END:
        text = "%d bytes declared, %d present" % (b, c)
    else:
        raise ValueError("unknown IBM MQ unit error reason %r" % reason)
    return structure, UNIT_FIELDS[fi], text


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
            reason += stream_end_suffix(c)
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
    if code == UNIT:
        return unit_error(a, b, c, d)
    if code == SHORT_CONTINUATION:
        return (segment_type_name(a), "MQSegmLen", "continuation segment of %d bytes is shorter than its headers (%d)"
                % (b, c))
    if code == JOINED_TOO_LONG:
        return segment_type_name(a), "MQSegmLen", "the joined message exceeds %d bytes" % b
    if code == CUT_PENDING:
        return "capture", "budget", "%s: a %d-segment message waiting for more segments" % (budget_reason(b), a)
    if code == CUT_SEGMENT:
        return "capture", "budget", "%s: %d bytes of a segment" % (budget_reason(b), a)
    if code == CUT_SKIPPED:
        return ("TSH", "", "the part of a damaged segment before a cut at %d (%s); the rest of the segment "
                "follows as its own error" % (a, budget_reason(b)))
    if code == CUT_REST:
        reason = "rest of a segment cut at %d (%s), counted, not kept" % (a, budget_reason(b))
        if c >= 0:
            reason += stream_end_suffix(c)
        return "TSH", "", reason
    if code == CUT_GARBAGE:
        return ("TSH", "StructID", "bytes after a segment cut at %d (%s), before the next segment header"
                % (a, budget_reason(b)))
    if code == DROPPED_UNFINISHED:
        return (segment_type_name(a), "", "dropped unfinished: open multi-segment messages exceed %d messages or "
                "%d bytes" % (b, c))
    raise ValueError("unknown IBM MQ framing error code %r" % code)
