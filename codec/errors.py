"""The error model shared by every codec in mqcodec.

Every failure to decode raises :class:`DecodeError`, a :class:`ValueError`
that names the structure (``"MQCFIN"``, ``"BaseHeader"``), the field
(``"StrucLength"``, ``"PacketSize"``) and the byte offset *from the start of
the input the caller passed* at which the problem was found.  Nothing else
escapes a decoder: ``struct.error``, ``IndexError``, construct's own
exceptions and ``RecursionError`` are all translated at the boundary.

Lenient decoding does not raise for recoverable problems; it records a
:class:`DecodeWarning` with the same three coordinates instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "MQCodecError",
    "DecodeError",
    "EncodeError",
    "DecodeWarning",
    "Problems",
    "NoCaptureRead",
    "KeyOverflow",
    "check_available",
    "check_length",
]


class MQCodecError(Exception):
    """Base class of every exception mqcodec raises on purpose."""


class _Located:
    """A problem at a field of a structure, at a byte offset: how it reads and its dict."""

    structure: str
    field: str
    offset: int
    reason: str

    def __str__(self) -> str:
        where = self.structure + ("." + self.field if self.field else "")
        return "%s at offset %d: %s" % (where, self.offset, self.reason)

    def to_dict(self) -> dict:
        return {"structure": self.structure, "field": self.field, "offset": self.offset, "reason": self.reason}


class DecodeError(_Located, MQCodecError, ValueError):
    """Bytes that do not decode as the structure they claim to be.

    Attributes
    ----------
    structure: name of the structure as its specification names it.
    field: name of the field, as the specification names it ("" when the
        problem is the structure as a whole, e.g. it is truncated before any
        field).
    offset: byte offset, from the start of the caller's input, of the field
        (or of the structure when ``field`` is empty).
    reason: a short human sentence.
    """

    #: set by the capture readers (pcap, pcapng) on an error inside a feed:
    #: the complete frames that feed read before the damage
    frames_before: list[Any]

    def __init__(self, structure: str, field: str, offset: int, reason: str):
        self.structure = structure
        self.field = field
        self.offset = int(offset)
        self.reason = reason
        super().__init__(structure, field, self.offset, reason)

    def shifted(self, delta: int) -> "DecodeError":
        """The same error with its offset moved by ``delta`` bytes (used
        when a decoder ran on a slice of a larger input)."""
        return DecodeError(self.structure, self.field, self.offset + delta, self.reason)


class EncodeError(MQCodecError, ValueError):
    """A value that cannot be encoded into the structure asked for."""

    def __init__(self, structure: str, field: str, reason: str):
        self.structure = structure
        self.field = field
        self.reason = reason
        super().__init__(structure, field, reason)

    def __str__(self) -> str:
        where = self.structure + ("." + self.field if self.field else "")
        return "%s: %s" % (where, self.reason)


class NoCaptureRead(MQCodecError, ValueError):
    """None of a conversion job's inputs could be read as a capture (missing,
    unreadable, or no capture file header); nothing was written.
    ``file_errors_only``: no input could even be opened or read (OSError)."""

    def __init__(self, message: str, *, file_errors_only: bool = False):
        super().__init__(message)
        self.file_errors_only = file_errors_only


class KeyOverflow(MQCodecError, ValueError):
    """A part of a ``message_key`` or ``call_key`` does not fit its bits
    (docs/tables.md "Keys"): too many captures in one job, a frame number or
    a rank within a frame too large."""


@dataclass(frozen=True)
class DecodeWarning(_Located):
    """A problem that lenient decoding stepped over instead of raising."""

    structure: str
    field: str
    offset: int
    reason: str


class Problems:
    """What decoding finds wrong, collected the same way by every decoder (the
    one lenient-mode collector: PCF, MSMQ packets and headers, MSMQ optional
    headers).

    ``error`` is a structural problem: it raises :class:`DecodeError` unless
    decoding is lenient, in which case it becomes a :class:`DecodeWarning`.
    ``note`` is a rule of the specification that does not change the layout
    (a value outside its documented range, a missing administration queue):
    it is always recorded as a warning, never raised.  ``warnings`` None: a
    list of the collector's own (what it records is then the caller's to
    ignore).
    """

    __slots__ = ("lenient", "warnings")

    def __init__(self, lenient: bool = False, warnings: list | None = None):
        self.lenient = lenient
        self.warnings = warnings if warnings is not None else []

    def error(self, structure: str, field: str, offset: int, reason: str) -> None:
        if not self.lenient:
            raise DecodeError(structure, field, offset, reason)
        self.warnings.append(DecodeWarning(structure, field, offset, reason))

    def note(self, structure: str, field: str, offset: int, reason: str) -> None:
        self.warnings.append(DecodeWarning(structure, field, offset, reason))

    def stepped_over(self, exc: DecodeError) -> None:
        """A DecodeError that lenient decoding steps over, as a warning."""
        self.warnings.append(DecodeWarning(exc.structure, exc.field, exc.offset, exc.reason))


def check_available(data_len: int, offset: int, need: int, structure: str, field: str) -> None:
    """Raise unless ``need`` bytes are present at ``offset``.

    Call this *before* slicing or allocating anything sized by an untrusted
    length field.
    """
    if need < 0:
        raise DecodeError(structure, field, offset, "negative length %d" % need)
    if offset + need > data_len:
        raise DecodeError(
            structure,
            field,
            offset,
            "needs %d bytes but only %d remain" % (need, max(0, data_len - offset)),
        )


def check_length(value: int, minimum: int, maximum: int, structure: str, field: str, offset: int) -> int:
    """Validate an untrusted length field against ``[minimum, maximum]``."""
    if value < minimum or value > maximum:
        raise DecodeError(
            structure,
            field,
            offset,
            "value %d outside the valid range %d..%d" % (value, minimum, maximum),
        )
    return value
