"""Transactional dead-letter confirmation: the extended time interval table and the MSMQ 1.0
rule of seed 002_c472f1625ee6bee3.txt ("Transaction Confirmation Process")."""
from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings, strategies as st

from mqcodec.msmq.xact import (
    INFINITE, MQMSG_DEADLETTER, MQMSG_JOURNAL, MQMSG_JOURNAL_NONE, XactError, confirmation_enabled,
    dead_letter_deadline, extended_interval,
)

SETTINGS = settings(max_examples=150, deadline=None)
HOUR, DAY = 3600, 86400


# --- one test per row of the table ----------------------------------------------------------

@pytest.mark.parametrize("ttbr", [None, INFINITE, 0xFFFFFFFF])
@pytest.mark.parametrize("ttrq,delay", [(None, None), (HOUR, None), (None, 30), (HOUR, 30)])
def test_row1_ttbr_not_set_is_infinite(ttbr, ttrq, delay):
    """seed 002, row "Not set. (INFINITE) | NA | NA | INFINITE": "if you do not set the
    time-to-be-received timer (TTBR), the timer's default value of INFINITE is used. In that
    case, any additional time is irrelevant."  (0xFFFFFFFF is the ADM's infinity.)"""
    assert extended_interval(ttbr, ttrq, delay) is INFINITE


@pytest.mark.parametrize("ttrq", [None, 10, 10 * DAY])
def test_row2_ttbr_set_delay_set(ttrq):
    """seed 002, row "Set | NA | Set | TTBR + XactDelayReceiveNack": TTRQ does not matter."""
    assert extended_interval(HOUR, ttrq, 45) == HOUR + 45


def test_row3_ttbr_set_ttrq_not_set_delay_not_set():
    """seed 002, row "Set | Not Set | Not set | TTBR + TTBR" """
    assert extended_interval(HOUR, None, None) == 2 * HOUR


@pytest.mark.parametrize("row", ["row 4", "row 5 (printed twice in the seed)"])
@pytest.mark.parametrize("ttbr,ttrq,expected", [
    (HOUR, 600, HOUR + 600),  # TTRQ smaller
    (600, HOUR, 600 + 600),  # TTBR smaller
    (600, 600, 1200),
])
def test_rows4_5_ttbr_set_ttrq_set_delay_not_set(row, ttbr, ttrq, expected):
    """seed 002, row "Set | Set | Not set | TTBR + min(TTBR, TTRQ)" (the table has this row
    twice).  Prose: "If ... the XactDelayReceiveNack entry does not exist, the additional time
    is the value of either the time-to-be-received setting or the time-to-reach-queue
    setting, whichever is smaller." """
    assert extended_interval(ttbr, ttrq, None) == expected


def test_delay_zero_is_set():
    """An XactDelayReceiveNack of 0 is a value that exists ("there is no default"), not absence."""
    assert extended_interval(HOUR, 600, 0) == HOUR


# --- MSMQ 1.0 -----------------------------------------------------------------------------

@pytest.mark.parametrize("ttrq,delay", [(None, None), (600, None), (None, 45), (600, 45)])
def test_msmq10_interval_is_ttbr(ttrq, delay):
    """seed 002: "For MSMQ 1.0 applications, the time interval for placing the unconfirmed
    message in the transactional dead-letter queue is the time-to-be-received setting of the
    message." """
    assert extended_interval(HOUR, ttrq, delay, msmq10=True) == HOUR
    assert extended_interval(None, ttrq, delay, msmq10=True) is INFINITE


def test_msmq10_regardless_of_journal_level():
    """seed 002: "For MSMQ 1.0 applications, the confirmation process ... is applied regardless
    of what the journaling level is set to." """
    assert confirmation_enabled(msmq10=True, journal=MQMSG_JOURNAL_NONE)
    assert dead_letter_deadline(1000, 60, msmq10=True, journal=MQMSG_JOURNAL_NONE) == 1060


def test_msmq20_needs_deadletter_journal_level():
    """seed 002: "For MSMQ 2.0 and MSMQ 3.0 applications, the journaling level of the message
    must be set to MQMSG_DEADLETTER to enable the confirmation process. By default, ... set
    the journaling level of transactional messages to MQMSG_JOURNAL_NONE."
    MQMSGJOURNAL ([MS-MCMQAC] 2.2.2.12): NONE = 0, DEADLETTER = 1, JOURNAL = 2."""
    assert (MQMSG_JOURNAL_NONE, MQMSG_DEADLETTER, MQMSG_JOURNAL) == (0, 1, 2)
    assert dead_letter_deadline(1000, 60, journal=MQMSG_JOURNAL_NONE) is None
    assert dead_letter_deadline(1000, 60, journal=MQMSG_JOURNAL) is None
    assert dead_letter_deadline(1000, 60, journal=MQMSG_DEADLETTER | MQMSG_JOURNAL) == 1120


def test_xact_dead_letter_always_forces():
    """seed 002: "you can force the computer to always set the journaling property to
    MQMSG_DEADLETTER by setting the XactDeadLetterAlways registry entry to 1." """
    assert dead_letter_deadline(1000, 60, journal=MQMSG_JOURNAL_NONE, xact_dead_letter_always=True) == 1120


# --- deadlines ----------------------------------------------------------------------------

def test_deadline_datetime():
    """The dead-letter copy is due at send time + extended interval: TTBR 1 h, TTRQ 10 min,
    no XactDelayReceiveNack -> 1 h 10 min."""
    sent = dt.datetime(2023, 4, 11, 10, 0, 0, tzinfo=dt.timezone.utc)
    assert dead_letter_deadline(sent, HOUR, 600) == dt.datetime(2023, 4, 11, 11, 10, 0, tzinfo=dt.timezone.utc)
    assert dead_letter_deadline(sent, dt.timedelta(hours=1), None, 30) == sent + dt.timedelta(seconds=3630)
    assert dead_letter_deadline(sent, None) is INFINITE


def test_deadline_epoch_seconds():
    assert dead_letter_deadline(1_681_207_200, 60) == 1_681_207_320
    assert dead_letter_deadline(1_681_207_200, 0xFFFFFFFF, 60, 5) is INFINITE


@pytest.mark.parametrize("args", [(-1,), (10, -5), (10, None, -1), ("10",), (float("nan"),)])
def test_bad_values_are_typed_errors(args):
    with pytest.raises(XactError):
        extended_interval(*args)


def test_bad_sent_time():
    with pytest.raises(XactError):
        dead_letter_deadline(-5, 10)


def test_infinite_is_a_singleton():
    import pickle

    assert repr(INFINITE) == "INFINITE"
    assert pickle.loads(pickle.dumps(INFINITE)) is INFINITE


# --- properties ---------------------------------------------------------------------------

secs = st.integers(0, 0xFFFFFFFE)


@SETTINGS
@given(secs, st.none() | secs, st.none() | secs)
def test_interval_properties(ttbr, ttrq, delay):
    """The extension only ever adds time; MSMQ 2.0/3.0 never confirm sooner than MSMQ 1.0; without
    XactDelayReceiveNack the extension is at most TTBR (TTBR + min(TTBR, TTRQ))."""
    ext = extended_interval(ttbr, ttrq, delay)
    assert ext >= ttbr == extended_interval(ttbr, ttrq, delay, msmq10=True)
    if delay is None:
        assert ttbr <= ext <= 2 * ttbr
    else:
        assert ext == ttbr + delay
