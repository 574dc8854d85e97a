"""An in-memory model of the queue manager's Enqueue Message event
([MS-MQDMPR] 3.1.7.1.9, seed 001) and the few ADM elements it touches.

Pure logic: no clock (CURRENT_TIME is the ``current_time`` argument, seconds
since 1970-01-01 UTC), no timers that fire by themselves (a started Time To
Be Received Timer is a :class:`TimeToBeReceivedTimer` record; the caller asks
:meth:`QueueManager.expired_timers` what is due), no I/O.

The rules, in the order the seed states them::

    1. Throttled, or QueueManagerQuota would be exceeded      -> rStatus 2
    2. iQueue.Quota would be exceeded                          -> rStatus 1
    3. newMessagePos := MessagePosition(iMessage)
    4. LocalQueueManager.SequentialID += 1
    5. LookupIdentifier high-order byte := 0x07 - Priority if
       TransactionalMessageSequenceIdentifier is not empty, else 0x00
    6. LookupIdentifier seven low-order bytes := those of SequentialID
    7. insert newMessagePos in MessagePositionList (ascending arrival time
       within priority)
    8. start a Time To Be Received Timer for iMessage
    9. iTransaction supplied: State := Locked, TransactionalOperation
       (Enqueue, newMessagePos) added to TransactionalOperationCollection;
       else: Message Position Available event
   10. rStatus 0

Quota units (the seed does not say; [MS-MQDMPR] 3.1.1.1 and 3.1.1.2 do):
Queue.Quota is in kilobytes (x 1024 bytes), QueueManager.QueueManagerQuota in
bytes; None means no quota.  rStatus 3 ("timed out in transit") is listed by
the event but no step produces it, so this model never returns it.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, List, Optional, Union

from ..errors import DecodeError, MQCodecError

__all__ = [
    "ENQUEUE_OK",
    "ENQUEUE_QUEUE_QUOTA_EXCEEDED",
    "ENQUEUE_QUEUE_MANAGER_QUOTA_EXCEEDED",
    "ENQUEUE_TIMED_OUT_IN_TRANSIT",
    "INFINITE_TTBR",
    "MQ_OK",
    "MQ_ERROR_QUEUE_NOT_FOUND",
    "MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION",
    "ModelError",
    "Message",
    "MessagePosition",
    "Queue",
    "QueueManager",
    "Transaction",
    "TransactionalOperation",
    "TimeToBeReceivedTimer",
    "MessagePositionAvailable",
    "TimeToBeReceivedTimerExpired",
    "OpenQueueDescriptor",
    "EnqueueResult",
    "LookupIdentifierParts",
    "lookup_identifier",
    "decode_lookup_identifier",
]

# rStatus of the Enqueue Message event ([MS-MQDMPR] 3.1.7.1.9)
ENQUEUE_OK = 0
ENQUEUE_QUEUE_QUOTA_EXCEEDED = 1
ENQUEUE_QUEUE_MANAGER_QUOTA_EXCEEDED = 2
ENQUEUE_TIMED_OUT_IN_TRANSIT = 3

# [MS-MQDMPR] 3.1.2.4: "If the TimeToBeReceived ADM attribute value is infinity
# (0xFFFFFFFF), the timer is not enabled"
INFINITE_TTBR = 0xFFFFFFFF

# [MS-MQDMPR] 3.1.7.1.5 Open Queue status codes
MQ_OK = 0x00000000
MQ_ERROR_QUEUE_NOT_FOUND = 0xC00E0003
MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION = 0xC00E0020

U64 = (1 << 64) - 1
LOW7 = (1 << 56) - 1
KILOBYTE = 1024


class ModelError(MQCodecError, ValueError):
    """An argument the model cannot process (e.g. a Priority outside 0..7)."""


@dataclass(eq=False)
class Message:
    """The attributes of the Message ADM element ([MS-MQDMPR] 3.1.1.12) the
    enqueue event reads or writes, plus ``size``.

    ``size`` is the storage, in bytes, the message consumes against the
    quotas; when None it is ``len(Body) + len(Extension)`` (see
    docs/msmq-semantics.md).  ``TransactionalMessageSequenceIdentifier`` is
    None (or empty) for non-transactional messages.
    """

    Priority: int = 3
    TransactionalMessageSequenceIdentifier: Any = None
    TimeToBeReceived: int = INFINITE_TTBR
    TimeToReachQueue: int = 0x54600
    SentTime: Optional[int] = None
    Class: int = 0x0000
    DeliveryGuarantee: str = "Express"
    Label: str = ""
    Body: bytes = b""
    Extension: bytes = b""
    DestinationQueueFormatName: str = ""
    Identifier: Any = None
    size: Optional[int] = None
    # written by the enqueue event
    LookupIdentifier: Optional[int] = None
    ArrivalTime: Optional[int] = None
    MessagePositionReference: Optional["MessagePosition"] = field(default=None, repr=False)

    @property
    def transactional(self) -> bool:
        v = self.TransactionalMessageSequenceIdentifier
        return v is not None and not (hasattr(v, "__len__") and len(v) == 0)

    @property
    def storage_bytes(self) -> int:
        if self.size is not None:
            return self.size
        return len(self.Body) + len(self.Extension)


@dataclass(eq=False)
class MessagePosition:
    """[MS-MQDMPR] 3.1.1.11.  State: Available / Locked / Deleted / PurgePending."""

    MessageReference: Message
    QueueReference: "Queue" = field(repr=False)
    State: str = "Available"


@dataclass(eq=False)
class TransactionalOperation:
    """[MS-MQDMPR] 3.1.1.13."""

    OperationType: str  # Enqueue / Dequeue / Move
    MessagePositionReference: MessagePosition


@dataclass(eq=False)
class Transaction:
    """[MS-MQDMPR] 3.1.1.14 (FIFO TransactionalOperationCollection)."""

    Identifier: uuid.UUID = field(default_factory=uuid.uuid4)
    TransactionalOperationCollection: List[TransactionalOperation] = field(default_factory=list)
    SinglePhase: bool = True


@dataclass(frozen=True, eq=False)
class TimeToBeReceivedTimer:
    """A started Time To Be Received Timer ([MS-MQDMPR] 3.1.2.4).

    ``enabled`` is False when TimeToBeReceived is infinity (0xFFFFFFFF).
    ``expires_at`` (seconds since 1970 UTC): SentTime + TimeToBeReceived
    (the attribute is "relative to the SentTime ADM attribute"); the start
    time stands in for an unknown SentTime; TimeToBeReceived 0 expires at
    once (at the start time).
    """

    iMessage: Message
    started_at: int
    enabled: bool
    expires_at: Optional[int]


@dataclass(frozen=True, eq=False)
class MessagePositionAvailable:
    """Message Position Available event ([MS-MQDMPR] 3.1.7.2.2) arguments."""

    iQueue: "Queue" = field(repr=False)
    MessagePositionReference: MessagePosition


@dataclass(frozen=True, eq=False)
class TimeToBeReceivedTimerExpired:
    """Time To Be Received Timer Expired event ([MS-MQDMPR] 3.1.7.2.7)."""

    iMessage: Message


@dataclass(frozen=True, eq=False)
class OpenQueueDescriptor:
    """The part of [MS-MQDMPR] 3.1.1.16 the model uses."""

    FormatName: str
    AccessType: str
    SharedMode: str
    QueueReference: "Queue" = field(repr=False)
    Multiple: bool = False


@dataclass(frozen=True, eq=False)
class EnqueueResult:
    """What the Enqueue Message event did.  ``position``, ``timer`` are None
    unless rStatus is 0; ``events`` holds the events it generated."""

    rStatus: int
    position: Optional[MessagePosition] = None
    timer: Optional[TimeToBeReceivedTimer] = None
    events: tuple = ()

    @property
    def ok(self) -> bool:
        return self.rStatus == ENQUEUE_OK


@dataclass(eq=False)
class Queue:
    """The Queue ADM element ([MS-MQDMPR] 3.1.1.2), the attributes used here.

    ``Quota``: kilobytes; None = no quota.  ``FormatName``: the format name
    this queue is opened by (defaults to PUBLIC=<Identifier>).
    """

    Identifier: uuid.UUID = field(default_factory=uuid.uuid4)
    Quota: Optional[int] = None
    Transactional: bool = False
    FormatName: Optional[str] = None
    Pathname: str = ""
    QueueManager: Optional["QueueManager"] = field(default=None, repr=False)
    MessagePositionList: List[MessagePosition] = field(default_factory=list, repr=False)

    @property
    def TotalBytes(self) -> int:
        """"The storage space, in bytes, consumed by all the messages in a queue"."""
        return sum(p.MessageReference.storage_bytes for p in self.MessagePositionList
                   if p.State != "Deleted")

    def format_names(self) -> tuple:
        names = ["PUBLIC=" + str(self.Identifier).upper()]
        if self.FormatName:
            names.append(self.FormatName)
        return tuple(n.upper() for n in names)

    def messages(self) -> list:
        return [p.MessageReference for p in self.MessagePositionList]


@dataclass(eq=False)
class QueueManager:
    """The local QueueManager ADM element ([MS-MQDMPR] 3.1.1.1), the
    attributes the enqueue event uses.  ``QueueManagerQuota`` is in bytes
    (default 0x00100000 as the ADM says); None = no quota."""

    Identifier: uuid.UUID = field(default_factory=uuid.uuid4)
    QueueManagerQuota: Optional[int] = 0x00100000
    Throttled: bool = False
    SequentialID: int = 0
    QueueCollection: List[Queue] = field(default_factory=list, repr=False)
    timers: List[TimeToBeReceivedTimer] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if not 0 <= self.SequentialID <= U64:
            raise ModelError("SequentialID is a 64-bit unsigned integer: %r" % self.SequentialID)

    # -- queues ------------------------------------------------------------

    def add_queue(self, queue: Optional[Queue] = None, **attributes: Any) -> Queue:
        queue = queue if queue is not None else Queue(**attributes)
        queue.QueueManager = self
        self.QueueCollection.append(queue)
        return queue

    @property
    def TotalBytes(self) -> int:
        return sum(q.TotalBytes for q in self.QueueCollection)

    def open_queue(self, iFormatName: str, iRequiredAccess: str = "SendAccess",
                   iSharedMode: str = "DenyNone") -> tuple:
        """A minimal Open Queue ([MS-MQDMPR] 3.1.7.1.5) over the local queues:
        (rStatus, rOpenQueueDescriptor).  Multiple-element format names are
        outside this model (MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION)."""
        if "," in iFormatName:
            return MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION, None
        wanted = iFormatName.strip().upper()
        for queue in self.QueueCollection:
            if wanted in queue.format_names():
                return MQ_OK, OpenQueueDescriptor(iFormatName, iRequiredAccess, iSharedMode, queue)
        return MQ_ERROR_QUEUE_NOT_FOUND, None

    # -- the events --------------------------------------------------------

    def enqueue_message_to_open_queue(self, iOpenQueueDescriptor: OpenQueueDescriptor, iMessage: Message,
                                      iTransaction: Optional[Transaction] = None, *,
                                      current_time: int) -> EnqueueResult:
        """[MS-MQDMPR] 3.1.7.1.27 for a single-queue descriptor (Multiple FALSE)."""
        if iOpenQueueDescriptor.Multiple:
            raise ModelError("multiple-element open queue descriptors are outside this model")
        return self.enqueue_message(iOpenQueueDescriptor.QueueReference, iMessage, iTransaction,
                                    current_time=current_time)

    def enqueue_message(self, iQueue: Queue, iMessage: Message, iTransaction: Optional[Transaction] = None,
                        *, current_time: int) -> EnqueueResult:
        """The Enqueue Message event ([MS-MQDMPR] 3.1.7.1.9); see the module
        docstring for the steps."""
        if iQueue.QueueManager is not self:
            raise ModelError("iQueue is not hosted by this queue manager")
        if isinstance(iMessage.Priority, bool) or not isinstance(iMessage.Priority, int) \
                or not 0 <= iMessage.Priority <= 7:
            raise ModelError("Priority is 0..7, got %r" % (iMessage.Priority,))
        size = iMessage.storage_bytes
        if size < 0:
            raise ModelError("a message size cannot be negative: %r" % size)
        # 1. Throttled or queue manager quota -> 2
        if self.Throttled or (self.QueueManagerQuota is not None
                              and self.TotalBytes + size > self.QueueManagerQuota):
            return EnqueueResult(ENQUEUE_QUEUE_MANAGER_QUOTA_EXCEEDED)
        # 2. queue quota (kilobytes) -> 1
        if iQueue.Quota is not None and iQueue.TotalBytes + size > iQueue.Quota * KILOBYTE:
            return EnqueueResult(ENQUEUE_QUEUE_QUOTA_EXCEEDED)
        # 3. newMessagePos
        position = MessagePosition(MessageReference=iMessage, QueueReference=iQueue)
        # 4. SequentialID (64-bit unsigned: wraps)
        self.SequentialID = (self.SequentialID + 1) & U64
        # 5., 6. LookupIdentifier
        iMessage.LookupIdentifier = lookup_identifier(self.SequentialID, iMessage.Priority,
                                                      iMessage.transactional)
        # 7. MessagePositionList, ascending arrival time within priority
        iMessage.ArrivalTime = current_time
        iMessage.MessagePositionReference = position
        _insert_by_priority(iQueue.MessagePositionList, position)
        # 8. Time To Be Received Timer
        timer = _start_ttbr_timer(iMessage, current_time)
        self.timers.append(timer)
        # 9. transaction
        events: tuple = ()
        if iTransaction is not None:
            position.State = "Locked"
            iTransaction.TransactionalOperationCollection.append(
                TransactionalOperation(OperationType="Enqueue", MessagePositionReference=position))
        else:
            events = (MessagePositionAvailable(iQueue=iQueue, MessagePositionReference=position),)
        # 10.
        return EnqueueResult(ENQUEUE_OK, position, timer, events)

    def expired_timers(self, now: int) -> list:
        """Time To Be Received Timer Expired events due at ``now`` for
        messages still in their queue ("When the timer expires, if that
        message is still in the queue, ...")."""
        due = []
        for timer in self.timers:
            if not timer.enabled or timer.expires_at is None or timer.expires_at > now:
                continue
            pos = timer.iMessage.MessagePositionReference
            if pos is not None and pos.State != "Deleted" and pos in pos.QueueReference.MessagePositionList:
                due.append(TimeToBeReceivedTimerExpired(iMessage=timer.iMessage))
        return due


def _insert_by_priority(positions: list, new: MessagePosition) -> None:
    """Higher Priority first (7 is the highest); within a priority, ascending
    arrival time, so a new arrival goes after every entry of its priority."""
    prio = new.MessageReference.Priority
    index = len(positions)
    for i, p in enumerate(positions):
        if p.MessageReference.Priority < prio:
            index = i
            break
    positions.insert(index, new)


def _start_ttbr_timer(message: Message, current_time: int) -> TimeToBeReceivedTimer:
    ttbr = message.TimeToBeReceived
    if ttbr == INFINITE_TTBR:
        return TimeToBeReceivedTimer(message, current_time, False, None)
    if ttbr == 0:
        return TimeToBeReceivedTimer(message, current_time, True, current_time)
    base = message.SentTime if message.SentTime is not None else current_time
    return TimeToBeReceivedTimer(message, current_time, True, base + ttbr)


# ---------------------------------------------------------------------------
# LookupIdentifier

def lookup_identifier(sequential_id: int, priority: int, transactional: bool) -> int:
    """High-order byte 0x07 - Priority when the message has a
    TransactionalMessageSequenceIdentifier, else 0x00; the seven low-order
    bytes are those of SequentialID."""
    if not 0 <= sequential_id <= U64:
        raise ModelError("SequentialID is a 64-bit unsigned integer: %r" % sequential_id)
    if not 0 <= priority <= 7:
        raise ModelError("Priority is 0..7, got %r" % priority)
    high = (0x07 - priority) if transactional else 0x00
    return (high << 56) | (sequential_id & LOW7)


@dataclass(frozen=True)
class LookupIdentifierParts:
    """A LookupIdentifier split as the Enqueue Message event built it.

    ``priority_if_transactional`` is 7 - high-order byte when that is 0..7:
    the Priority *if* the message was transactional.  A high-order byte of 0
    is also what every non-transactional message gets, so the identifier
    alone cannot tell a non-transactional message from a transactional one
    of priority 7.
    """

    high_order_byte: int
    sequential_id_low: int  # the seven low-order bytes of SequentialID

    @property
    def priority_if_transactional(self) -> Optional[int]:
        return 0x07 - self.high_order_byte if self.high_order_byte <= 0x07 else None

    @property
    def certainly_transactional(self) -> bool:
        return 1 <= self.high_order_byte <= 0x07


def decode_lookup_identifier(x: Union[int, bytes, bytearray, memoryview]) -> LookupIdentifierParts:
    """Split a LookupIdentifier (an int, or its 8 little-endian bytes).

    Raises DecodeError (structure "LookupIdentifier") for a value that is not
    a 64-bit unsigned integer or bytes that are not 8 long.
    """
    if isinstance(x, (bytes, bytearray, memoryview)):
        raw = bytes(x)
        if len(raw) != 8:
            raise DecodeError("LookupIdentifier", "", min(len(raw), 8),
                              "a LookupIdentifier is 8 bytes, got %d" % len(raw))
        x = int.from_bytes(raw, "little")
    if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= U64:
        raise DecodeError("LookupIdentifier", "", 0, "not a 64-bit unsigned integer: %r" % (x,))
    return LookupIdentifierParts(high_order_byte=x >> 56, sequential_id_low=x & LOW7)
