"""The MSMQ stream framers' FramingErrors: each kind as a code and its numbers.

Both framers report a damaged or incomplete MSMQ session stream with the
same errors: the pure :class:`mqcodec.msmq.framing.MSMQStreamFramer` and the
compiled framer of the capture core (``_ext/framer_msmq.pxi``), which hands
over a code and up to four numbers in place of a text.  :func:`describe`
turns them into the error's structure, field and reason; the pure framer
makes its texts with it too, so the two cannot drift.

Bytes that are no packet (garbage) are reported with the *problem* of their
first byte and, when the report is cut short, a *suffix*: such a code is
``problem + 16 * suffix``, with the problem's numbers in ``a``, ``b`` and
the suffix's in ``c``, ``d``.  The other errors have codes of 100 and more.
No construct here: the conversion path imports this module without the
declarations.
"""
from __future__ import annotations

from ..capture.budget import budget_reason

__all__ = ["BAD_VERSION", "BAD_SIGNATURE", "BAD_SIZE", "BAD_INTERNAL_SIZE", "AFTER_GAP", "NO_SIGNATURE",
           "STILL_NO_PACKET", "NONE_BEFORE_GAP", "ENDED_BEFORE_PACKET", "HEADER_THEN_GAP", "GAP_IN_PACKET",
           "TAIL_BEFORE_GAP", "TAIL", "TAIL_AT_CLOSE", "HEADER_AT_CLOSE", "TRUNCATED_AT_CLOSE", "AFTER_CUT",
           "BUDGET_CUT", "KINDS",
           "describe", "problem_text", "suffix_text"]

MAX_PACKET_SIZE = 0x00400000    # [MS-MQQB] BaseHeader.PacketSize (msmq.constants.MAX_PACKET_SIZE; a test compares)

# problems: what the first byte of garbage is
BAD_VERSION = 1         # a: the VersionNumber byte
BAD_SIGNATURE = 2       # a: the Signature bytes present (big-endian), b: how many (1..4)
BAD_SIZE = 3            # a: PacketSize
BAD_INTERNAL_SIZE = 4   # a: PacketSize
AFTER_GAP = 5           # a: bytes missing, b: at stream offset
NO_SIGNATURE = 6
AFTER_CUT = 7           # a: where a byte budget cut the stream, b: the budget's limit
# suffixes: why the garbage is reported now
STILL_NO_PACKET = 1     # (a chunk of SCAN_CHUNK bytes)
NONE_BEFORE_GAP = 2     # c: bytes missing, d: at stream offset
ENDED_BEFORE_PACKET = 3
# the other errors
HEADER_THEN_GAP = 100   # a: bytes of the BaseHeader, b: bytes missing
GAP_IN_PACKET = 101     # a: bytes missing, b: at, c: the packet's length * 8 + its kind (KINDS), d: bytes present
TAIL_BEFORE_GAP = 102   # a: the packet's offset, b: bytes missing, c: at
TAIL = 103              # a: the packet's offset
TAIL_AT_CLOSE = 104     # a: the packet's offset, b: bytes missing at its end
HEADER_AT_CLOSE = 105   # a: bytes of the BaseHeader
TRUNCATED_AT_CLOSE = 106  # a: the packet's framed length, b: its PacketSize, c: bytes present
BUDGET_CUT = 107        # a: the byte budget's limit (every byte the framer held)

#: the kinds of a packet known by its prefix (framing._prefix_kind), by index
KINDS = ("UserMessage", "SessionAck", "EstablishConnection", "ConnectionParameters", "Internal")


def problem_text(code: int, a: int = 0, b: int = 0) -> tuple[str, str, str]:
    """(structure, field, reason) of a problem (the first byte of garbage)."""
    if code == BAD_VERSION:
        return "BaseHeader", "VersionNumber", "VersionNumber 0x%02X, MUST be 0x10" % a
    if code == BAD_SIGNATURE:
        return "BaseHeader", "Signature", "Signature %r, MUST be 0x524F494C ('LIOR')" % int(a).to_bytes(b, "big")
    if code == BAD_SIZE:
        return "BaseHeader", "PacketSize", "PacketSize %d outside the valid range 16..%d" % (a, MAX_PACKET_SIZE)
    if code == BAD_INTERNAL_SIZE:
        return ("BaseHeader", "PacketSize", "PacketSize %d: an internal packet (Flags.IN) holds at least the "
                "16-byte BaseHeader and the 4-byte InternalHeader" % a)
    if code == AFTER_GAP:
        return "BaseHeader", "", "bytes after a gap of %d bytes at %d" % (a, b)
    if code == NO_SIGNATURE:
        return "BaseHeader", "", "no packet signature"
    if code == AFTER_CUT:
        return "BaseHeader", "", "bytes after a cut at %d (%s)" % (a, budget_reason(b))
    raise ValueError("unknown MSMQ framing problem %r" % code)


def suffix_text(suffix: int, c: int = 0, d: int = 0) -> str:
    """What a suffix adds to the problem's reason ("" for none)."""
    if suffix == 0:
        return ""
    if suffix == STILL_NO_PACKET:
        return "; still no packet"
    if suffix == NONE_BEFORE_GAP:
        return "; no packet found before a gap of %d bytes at %d" % (c, d)
    if suffix == ENDED_BEFORE_PACKET:
        return "; the stream ended before another packet"
    raise ValueError("unknown MSMQ framing error suffix %r" % suffix)


def describe(code: int, a: int = 0, b: int = 0, c: int = 0, d: int = 0) -> tuple[str, str, str]:
    """(structure, field, reason) of a FramingError given by its code and numbers."""
    if code < 100:
        structure, fld, reason = problem_text(code & 15, a, b)
        return structure, fld, reason + suffix_text(code >> 4, c, d)
    if code == HEADER_THEN_GAP:
        return "BaseHeader", "", "%d bytes of a BaseHeader, then a gap of %d bytes" % (a, b)
    if code == GAP_IN_PACKET:
        return ("BaseHeader", "PacketSize", "gap of %d bytes at %d inside this %d-byte %s packet (%d bytes present "
                "before it)" % (a, b, c >> 3, KINDS[c & 7], d))
    if code == TAIL_BEFORE_GAP:
        return ("BaseHeader", "PacketSize", "rest of the packet at %d, before another gap of %d bytes at %d"
                % (a, b, c))
    if code == TAIL:
        return "BaseHeader", "PacketSize", "rest of the packet at %d that a gap broke" % a
    if code == TAIL_AT_CLOSE:
        return ("BaseHeader", "PacketSize", "rest of the packet at %d that a gap broke; the stream ended %d bytes "
                "before its end" % (a, b))
    if code == HEADER_AT_CLOSE:
        return "BaseHeader", "", "the stream ended after %d bytes of a 16-byte BaseHeader" % a
    if code == BUDGET_CUT:
        return "capture", "budget", budget_reason(a)
    if code == TRUNCATED_AT_CLOSE:
        extra = " (PacketSize %d + the 16-byte SessionHeader)" % b if a != b else ""
        return ("BaseHeader", "PacketSize", "truncated packet: %d bytes%s, the stream ended after %d"
                % (a, extra, c))
    raise ValueError("unknown MSMQ framing error code %r" % code)
