"""The Enqueue Message event ([MS-MQDMPR] 3.1.7.1.9, seed 001_ee1691c1fd299b3a.txt)
on the in-memory queue manager model."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from mqcodec.errors import DecodeError
from mqcodec.msmq.queue_manager import (
    ENQUEUE_OK, ENQUEUE_QUEUE_MANAGER_QUOTA_EXCEEDED, ENQUEUE_QUEUE_QUOTA_EXCEEDED, LookupIdentifierParts,
    Message, ModelError, QueueManager, Transaction, decode_lookup_identifier, MessagePositionAvailable,
)

SETTINGS = settings(max_examples=120, deadline=None)
SEQ = (1, 1000)  # any transactional sequence identifier (Ordinal, TimeStamp)


def setup(**qm_attrs):
    qm = QueueManager(**qm_attrs)
    return qm, qm.add_queue()


# --- quota checks, in their stated order ----------------------------------------------------

def test_throttled_gives_2():
    """seed 001: "If iQueue.QueueManager.Throttled is TRUE, ...: Set rStatus to 2. Take no
    further action." """
    qm, q = setup(Throttled=True)
    r = qm.enqueue_message(q, Message(Body=b"x"), current_time=0)
    assert r.rStatus == 2 == ENQUEUE_QUEUE_MANAGER_QUOTA_EXCEEDED
    assert q.MessagePositionList == [] and qm.SequentialID == 0


def test_queue_manager_quota_checked_before_queue_quota():
    """seed 001: the QueueManagerQuota test (rStatus 2) comes before the iQueue.Quota test
    (rStatus 1): a message exceeding both gets 2."""
    qm, q = setup(QueueManagerQuota=100)
    q.Quota = 0
    assert qm.enqueue_message(q, Message(size=101), current_time=0).rStatus == 2
    assert qm.enqueue_message(q, Message(size=1), current_time=0).rStatus == 1 == ENQUEUE_QUEUE_QUOTA_EXCEEDED


def test_queue_quota_is_kilobytes():
    """seed 001: "would cause the quota for that Queue ADM element instance (iQueue.Quota) to be
    exceeded: Set rStatus to 1."  Units ([MS-MQDMPR] 3.1.1.2): "Quota: The physical disk
    quota, in kilobytes"; "exceeded" = strictly more than the quota."""
    qm, q = setup(QueueManagerQuota=None)
    q.Quota = 2  # 2048 bytes
    assert qm.enqueue_message(q, Message(size=1024), current_time=0).rStatus == 0
    assert qm.enqueue_message(q, Message(size=1024), current_time=0).rStatus == 0  # exactly 2048
    assert qm.enqueue_message(q, Message(size=1), current_time=0).rStatus == 1
    assert q.TotalBytes == 2048 and qm.SequentialID == 2


def test_queue_manager_quota_is_bytes_default_0x00100000():
    """seed 001: "would cause iQueue.QueueManager.QueueManagerQuota to be exceeded: Set rStatus
    to 2."  [MS-MQDMPR] 3.1.1.1: "QueueManagerQuota: The storage space, in bytes, allocated to
    all queues hosted by the queue manager. The default value ... SHOULD be 0x00100000." """
    qm = QueueManager()
    assert qm.QueueManagerQuota == 0x00100000
    q1, q2 = qm.add_queue(), qm.add_queue()
    assert qm.enqueue_message(q1, Message(size=0x80000), current_time=0).rStatus == 0
    assert qm.enqueue_message(q2, Message(size=0x80000), current_time=0).rStatus == 0  # 1 MiB exactly
    assert qm.enqueue_message(q2, Message(size=1), current_time=0).rStatus == 2  # all queues count


def test_size_defaults_to_body_plus_extension():
    qm, q = setup(QueueManagerQuota=10)
    assert qm.enqueue_message(q, Message(Body=b"12345", Extension=b"67890"), current_time=0).rStatus == 0
    assert qm.enqueue_message(q, Message(Body=b"1"), current_time=0).rStatus == 2


def test_timed_out_in_transit_is_never_produced():
    """seed 001 lists "The message timed out in transit (3)" but no step sets it; the reading
    taken: the model never returns 3, even for a message whose TimeToReachQueue is over."""
    qm, q = setup()
    r = qm.enqueue_message(q, Message(SentTime=0, TimeToReachQueue=10), current_time=10_000)
    assert r.rStatus == ENQUEUE_OK == 0


# --- SequentialID and LookupIdentifier ------------------------------------------------------

def test_sequential_id_increments_once_per_enqueue():
    """seed 001: "Increment LocalQueueManager.SequentialID." """
    qm, q = setup()
    for n in range(1, 4):
        qm.enqueue_message(q, Message(), current_time=0)
        assert qm.SequentialID == n


def test_lookup_identifier_non_transactional_high_byte_zero():
    """seed 001: "Otherwise, set the high-order byte of iMessage.LookupIdentifier to 0x00." and
    "Copy the seven low-order bytes of LocalQueueManager.SequentialID" """
    qm, q = setup(SequentialID=0x1122334455667787)
    m = Message(Priority=5)
    qm.enqueue_message(q, m, current_time=0)
    assert qm.SequentialID == 0x1122334455667788
    assert m.LookupIdentifier == 0x0022334455667788


@pytest.mark.parametrize("priority,high", [(0, 0x07), (3, 0x04), (5, 0x02), (7, 0x00)])
def test_lookup_identifier_transactional_high_byte(priority, high):
    """seed 001: "If iMessage.TransactionalMessageSequenceIdentifier is not empty, set the
    high-order byte of iMessage.LookupIdentifier to 0x07-iMessage.Priority." """
    qm, q = setup(SequentialID=0x1122334455667787)
    m = Message(Priority=priority, TransactionalMessageSequenceIdentifier=SEQ)
    qm.enqueue_message(q, m, current_time=0)
    assert m.LookupIdentifier == (high << 56) | 0x22334455667788


def test_empty_sequence_identifier_counts_as_non_transactional():
    qm, q = setup()
    m = Message(Priority=0, TransactionalMessageSequenceIdentifier=b"")
    qm.enqueue_message(q, m, current_time=0)
    assert m.LookupIdentifier >> 56 == 0


def test_sequential_id_is_64_bit_unsigned_and_wraps():
    """[MS-MQDMPR] 3.1.1.1: "SequentialID: A 64-bit unsigned integer value." """
    qm, q = setup(SequentialID=(1 << 64) - 1)
    m = Message()
    qm.enqueue_message(q, m, current_time=0)
    assert qm.SequentialID == 0 and m.LookupIdentifier == 0


def test_decode_lookup_identifier():
    parts = decode_lookup_identifier(0x0222334455667788)
    assert parts == LookupIdentifierParts(high_order_byte=0x02, sequential_id_low=0x22334455667788)
    assert parts.priority_if_transactional == 5 and parts.certainly_transactional
    # 8 little-endian bytes
    assert decode_lookup_identifier(bytes.fromhex("8877665544332202")) == parts
    # high byte 0: non-transactional, or transactional with priority 7 -- undecidable
    zero = decode_lookup_identifier(0x0000000000000001)
    assert zero.priority_if_transactional == 7 and not zero.certainly_transactional


@pytest.mark.parametrize("bad", [-1, 1 << 64, b"\x00" * 7, b"\x00" * 9, True])
def test_decode_lookup_identifier_errors(bad):
    with pytest.raises(DecodeError) as info:
        decode_lookup_identifier(bad)
    assert info.value.structure == "LookupIdentifier"


def test_priority_out_of_range_is_a_typed_error():
    """[MS-MQDMPR] 3.1.1.12: "Priority: A numeric value from zero (0) to seven (7)" """
    qm, q = setup()
    with pytest.raises(ModelError):
        qm.enqueue_message(q, Message(Priority=8, TransactionalMessageSequenceIdentifier=SEQ), current_time=0)
    assert qm.SequentialID == 0


# --- MessagePositionList ------------------------------------------------------------------

def test_message_position_list_ascending_arrival_within_priority():
    """seed 001: "Insert newMessagePos into iQueue.MessagePositionList according to the rules
    defined for the MessagePositionList attribute"; [MS-MQDMPR] 3.1.1.2: "The entries in the
    list MUST be arranged in ascending order by arrival time within priority", and 3.1.1.12:
    "Zero (0) is the lowest priority, and seven (7) is the highest." """
    qm, q = setup()
    msgs = [Message(Priority=p, Label=name) for p, name in
            [(3, "a"), (5, "b"), (3, "c"), (7, "d"), (0, "e"), (5, "f")]]
    for t, m in enumerate(msgs):
        qm.enqueue_message(q, m, current_time=100 + t)
    assert [m.Label for m in q.messages()] == ["d", "b", "f", "a", "c", "e"]
    assert msgs[2].ArrivalTime == 102


# --- Time To Be Received Timer ------------------------------------------------------------

def test_ttbr_timer_started_with_the_message():
    """seed 001: "Start a Time To Be Received Timer (section 3.1.2.4), supplying the iMessage
    argument to the timer at initialization."  [MS-MQDMPR] 3.1.1.12: TimeToBeReceived is
    "relative to the SentTime"."""
    qm, q = setup()
    m = Message(SentTime=1000, TimeToBeReceived=60)
    r = qm.enqueue_message(q, m, current_time=1005)
    assert r.timer.iMessage is m and r.timer.enabled and r.timer.expires_at == 1060
    assert qm.expired_timers(1059) == []
    [ev] = qm.expired_timers(1060)
    assert ev.iMessage is m


def test_ttbr_infinite_and_zero():
    """[MS-MQDMPR] 3.1.2.4: "If the TimeToBeReceived ADM attribute value is infinity
    (0xFFFFFFFF), the timer is not enabled ... If ... equal to 0x00000000, the timer expires
    immediately." """
    qm, q = setup()
    r_inf = qm.enqueue_message(q, Message(SentTime=0), current_time=50)
    assert not r_inf.timer.enabled and r_inf.timer.expires_at is None
    r_zero = qm.enqueue_message(q, Message(SentTime=0, TimeToBeReceived=0), current_time=50)
    assert r_zero.timer.enabled and r_zero.timer.expires_at == 50
    assert [e.iMessage for e in qm.expired_timers(50)] == [r_zero.position.MessageReference]


def test_expired_timer_ignores_message_no_longer_in_queue():
    """[MS-MQDMPR] 3.1.2.4: "When the timer expires, if that message is still in the queue" """
    qm, q = setup()
    r = qm.enqueue_message(q, Message(SentTime=0, TimeToBeReceived=1), current_time=0)
    r.position.State = "Deleted"
    assert qm.expired_timers(10) == []


# --- transactional path -------------------------------------------------------------------

def test_transactional_enqueue_locks_and_records_operation():
    """seed 001: "If the iTransaction argument is supplied: Set newMessagePos.State to Locked.
    Create a new TransactionalOperation ... OperationType := Enqueue. MessagePositionReference
    := newMessagePos. Add this new TransactionalOperation ... to
    iTransaction.TransactionalOperationCollection." """
    qm, q = setup()
    txn = Transaction()
    r = qm.enqueue_message(q, Message(TransactionalMessageSequenceIdentifier=SEQ), txn, current_time=0)
    assert r.rStatus == 0 and r.position.State == "Locked"
    [op] = txn.TransactionalOperationCollection
    assert op.OperationType == "Enqueue" and op.MessagePositionReference is r.position
    assert r.events == ()


def test_non_transactional_enqueue_is_available():
    """[MS-MQDMPR] 3.1.7.1.9 "Else: Generate a Message Position Available (section 3.1.7.2.2)
    event" (the seed's "Else:" bullet is empty; the specification fills it), then "Set
    rStatus to zero." """
    qm, q = setup()
    r = qm.enqueue_message(q, Message(), current_time=0)
    assert r.rStatus == 0 and r.position.State == "Available"
    [ev] = r.events
    assert isinstance(ev, MessagePositionAvailable) and ev.iQueue is q and ev.MessagePositionReference is r.position


def test_quota_failure_leaves_transaction_untouched():
    qm, q = setup(Throttled=True)
    txn = Transaction()
    assert qm.enqueue_message(q, Message(), txn, current_time=0).rStatus == 2
    assert txn.TransactionalOperationCollection == []


# --- properties ---------------------------------------------------------------------------

ops = st.lists(st.tuples(st.integers(0, 7), st.booleans(), st.integers(0, 600), st.booleans()), max_size=30)


@SETTINGS
@given(ops, st.integers(0, 4), st.integers(0, 4000), st.integers(0, (1 << 64) - 1))
def test_enqueue_invariants(operations, quota_kb, qm_quota, start):
    qm = QueueManager(QueueManagerQuota=qm_quota, SequentialID=start)
    q = qm.add_queue(Quota=quota_kb)
    ok = 0
    for t, (prio, transactional, size, with_txn) in enumerate(operations):
        before = q.TotalBytes
        m = Message(Priority=prio, size=size, TransactionalMessageSequenceIdentifier=SEQ if transactional else None)
        r = qm.enqueue_message(q, m, Transaction() if with_txn else None, current_time=t)
        if before + size > qm_quota:
            assert r.rStatus == 2
        elif before + size > quota_kb * 1024:
            assert r.rStatus == 1
        else:
            assert r.rStatus == 0
            ok += 1
            parts = decode_lookup_identifier(m.LookupIdentifier)
            assert parts.sequential_id_low == (start + ok) & ((1 << 56) - 1)
            assert parts.high_order_byte == ((7 - prio) if transactional else 0)
    assert qm.SequentialID == (start + ok) % (1 << 64)
    assert q.TotalBytes <= min(qm_quota, quota_kb * 1024)
    keys = [(-m.Priority, m.ArrivalTime) for m in q.messages()]
    assert keys == sorted(keys)
