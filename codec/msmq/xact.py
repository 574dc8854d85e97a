"""Transactional dead-letter confirmation (seed 002, "Transaction
Confirmation Process"): when must the copy of an unconfirmed transactional
message appear in the source computer's transactional dead-letter queue?

The seed's table (TTBR = time-to-be-received, TTRQ = time-to-reach-queue,
XactDelayReceiveNack = the registry value, in seconds)::

    TTBR                TTRQ     XactDelayReceiveNack  Extended time interval
    Not set (INFINITE)  NA       NA                    INFINITE
    Set                 NA       Set                   TTBR + XactDelayReceiveNack
    Set                 Not set  Not set               TTBR + TTBR
    Set                 Set      Not set               TTBR + min(TTBR, TTRQ)

(the seed prints the last row twice, and the first row's result as
"INFINITE +"; both are read as written above.)  MSMQ 1.0: the interval is
the time-to-be-received setting itself, with no extension.

No clock: times are arguments.  Intervals are seconds; "not set" is None.
TTBR 0xFFFFFFFF is the ADM's infinity ([MS-MQDMPR] 3.1.1.12) and counts as
not set.  INFINITE is the :data:`INFINITE` singleton.
"""
from __future__ import annotations

import datetime as _dt
from typing import Optional, Union

from ..errors import MQCodecError

__all__ = [
    "INFINITE",
    "Infinite",
    "INFINITE_TTBR",
    "MQMSG_JOURNAL_NONE",
    "MQMSG_DEADLETTER",
    "MQMSG_JOURNAL",
    "XactError",
    "extended_interval",
    "confirmation_enabled",
    "dead_letter_deadline",
]

INFINITE_TTBR = 0xFFFFFFFF

# MQMSGJOURNAL ([MS-MCMQAC] 2.2.2.12), the PROPID_M_JOURNAL values: flags
MQMSG_JOURNAL_NONE = 0x0
MQMSG_DEADLETTER = 0x1
MQMSG_JOURNAL = 0x2


class XactError(MQCodecError, ValueError):
    """A time value that is not a non-negative number of seconds."""


class Infinite:
    """The INFINITE interval / deadline: no dead-letter copy is ever due."""

    _instance: Optional["Infinite"] = None

    def __new__(cls) -> "Infinite":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "INFINITE"

    def __reduce__(self):
        return (Infinite, ())


INFINITE = Infinite()

Seconds = Union[int, float]


def _seconds(value, name: str, *, allow_none: bool = True) -> Optional[Seconds]:
    if value is None:
        if allow_none:
            return None
        raise XactError("%s is required" % name)
    if isinstance(value, _dt.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise XactError("%s must be a non-negative number of seconds, got %r" % (name, value))
    return value


def _ttbr_set(ttbr) -> bool:
    return ttbr is not None and ttbr is not INFINITE and ttbr != INFINITE_TTBR


def extended_interval(ttbr, ttrq=None, xact_delay_receive_nack=None, *,
                      msmq10: bool = False) -> Union[Seconds, Infinite]:
    """The time after sending at which an unconfirmed transactional message
    is placed in the transactional dead-letter queue.

    ``ttbr``, ``ttrq``: seconds (int/float/timedelta) or None for "not set";
    ``ttbr`` may also be INFINITE or 0xFFFFFFFF.  ``xact_delay_receive_nack``:
    the registry value in seconds, None when the entry does not exist.
    ``msmq10``: the MSMQ 1.0 rule (interval = TTBR).
    """
    if not _ttbr_set(ttbr):
        # "if you do not set the time-to-be-received timer (TTBR), the timer's
        # default value of INFINITE is used. In that case, any additional time
        # is irrelevant."
        _seconds(ttrq, "ttrq")
        _seconds(xact_delay_receive_nack, "xact_delay_receive_nack")
        return INFINITE
    ttbr = _seconds(ttbr, "ttbr")
    ttrq = _seconds(ttrq, "ttrq")
    delay = _seconds(xact_delay_receive_nack, "xact_delay_receive_nack")
    if msmq10:
        return ttbr
    if delay is not None:
        return ttbr + delay
    if ttrq is None:
        return ttbr + ttbr
    return ttbr + min(ttbr, ttrq)


def confirmation_enabled(*, msmq10: bool = False, journal=MQMSG_DEADLETTER,
                         xact_dead_letter_always: bool = False) -> bool:
    """Whether the confirmation process applies to the message.

    MSMQ 1.0: "applied regardless of what the journaling level is set to".
    MSMQ 2.0/3.0: "the journaling level of the message must be set to
    MQMSG_DEADLETTER"; XactDeadLetterAlways = 1 forces MQMSG_DEADLETTER.
    ``journal`` is the PROPID_M_JOURNAL value (bit flags).
    """
    if msmq10 or xact_dead_letter_always:
        return True
    return bool(journal & MQMSG_DEADLETTER)


def dead_letter_deadline(sent_time, ttbr, ttrq=None, xact_delay_receive_nack=None, *,
                         msmq10: bool = False, journal=MQMSG_DEADLETTER,
                         xact_dead_letter_always: bool = False):
    """The time by which the dead-letter copy of an unconfirmed transactional
    message must be in the source computer's transactional dead-letter queue:
    ``sent_time`` + :func:`extended_interval`.

    ``sent_time``: a datetime, or seconds since 1970 UTC (int/float); the
    result has the same type.  Returns INFINITE when the interval is
    infinite, None when the confirmation process does not apply (MSMQ
    2.0/3.0 without MQMSG_DEADLETTER and without XactDeadLetterAlways).
    """
    if not confirmation_enabled(msmq10=msmq10, journal=journal,
                                xact_dead_letter_always=xact_dead_letter_always):
        return None
    interval = extended_interval(ttbr, ttrq, xact_delay_receive_nack, msmq10=msmq10)
    if isinstance(sent_time, _dt.datetime):
        if isinstance(interval, Infinite):  # (the INFINITE singleton)
            return INFINITE
        return sent_time + _dt.timedelta(seconds=interval)
    start = _seconds(sent_time, "sent_time", allow_none=False)
    assert start is not None  # allow_none=False
    if isinstance(interval, Infinite):
        return INFINITE
    return start + interval
