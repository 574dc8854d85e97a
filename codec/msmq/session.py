"""SessionHeader ([MS-MQMQ] 2.2.20.4): the session acknowledgment carried by a
stand-alone SessionAck Packet ([MS-MQQB] 2.2.6) or piggy-backed on a
UserMessage Packet (then it follows the PacketSize bytes)."""
from __future__ import annotations

import construct as cs

from ..render import json_ready
from ..errors import DecodeError, Problems
from ..layout import build, parse_at
from . import constants as C

__all__ = ["SessionHeader"]

SessionHeaderStruct = cs.Struct(
    "AckSequenceNumber" / cs.Int16ul,
    "RecoverableMsgAckSeqNumber" / cs.Int16ul,
    "RecoverableMsgAckFlags" / cs.Int32ul,
    "UserMsgSequenceNumber" / cs.Int16ul,
    "RecoverableMsgSeqNumber" / cs.Int16ul,
    "WindowSize" / cs.Int16ul,
    "Reserved" / cs.Int16ul,
)

_FIELDS = ("AckSequenceNumber", "RecoverableMsgAckSeqNumber", "RecoverableMsgAckFlags",
           "UserMsgSequenceNumber", "RecoverableMsgSeqNumber", "WindowSize", "Reserved")


class SessionHeader:
    STRUCTURE = "SessionHeader"
    SIZE = C.SESSION_HEADER_SIZE

    def __init__(self, *, AckSequenceNumber: int = 0, RecoverableMsgAckSeqNumber: int = 0,
                 RecoverableMsgAckFlags: int = 0, UserMsgSequenceNumber: int = 0,
                 RecoverableMsgSeqNumber: int = 0, WindowSize: int = 0x40, Reserved: int = 0):
        self.AckSequenceNumber = AckSequenceNumber
        self.RecoverableMsgAckSeqNumber = RecoverableMsgAckSeqNumber
        self.RecoverableMsgAckFlags = RecoverableMsgAckFlags
        self.UserMsgSequenceNumber = UserMsgSequenceNumber
        self.RecoverableMsgSeqNumber = RecoverableMsgSeqNumber
        self.WindowSize = WindowSize
        self.Reserved = Reserved

    @classmethod
    def decode(cls, data, offset, end=None, *, lenient=False, warnings=None):
        p = Problems(lenient, warnings)
        end = len(data) if end is None else end
        if end - offset < cls.SIZE:
            raise DecodeError(cls.STRUCTURE, "AckSequenceNumber", offset,
                              "truncated: 16 bytes needed, %d present" % max(end - offset, 0))
        v = parse_at(SessionHeaderStruct, data, offset, cls.STRUCTURE)
        h = cls(**{k: v[k] for k in _FIELDS})
        if h.WindowSize == 0:
            p.note(cls.STRUCTURE, "WindowSize", offset + 12, "0 outside the valid range 1..65535")
        return h, offset + cls.SIZE

    def acknowledged_recoverable(self) -> list[int]:
        """Recoverable sequence numbers acknowledged by RecoverableMsgAckFlags
        (bit k stands for RecoverableMsgAckSeqNumber + k)."""
        return [self.RecoverableMsgAckSeqNumber + k for k in range(32)
                if self.RecoverableMsgAckFlags >> k & 1]

    def encode(self) -> bytes:
        return build(SessionHeaderStruct, self.to_dict(), self.STRUCTURE)

    @json_ready
    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in _FIELDS}

    def __eq__(self, other):
        return isinstance(other, SessionHeader) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return "SessionHeader(%s)" % ", ".join("%s=%d" % kv for kv in self.to_dict().items())
