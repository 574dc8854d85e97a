"""SessionHeader ([MS-MQMQ] 2.2.20.4): the session acknowledgment carried by a
stand-alone SessionAck Packet ([MS-MQQB] 2.2.6) or piggy-backed on a
UserMessage Packet (then it follows the PacketSize bytes)."""
from __future__ import annotations

import construct as cs

from ..errors import Problems
from .base import FixedHeader

__all__ = ["SessionHeader"]


class SessionHeader(FixedHeader):
    """[MS-MQMQ] 2.2.20.4: 16 bytes of acknowledgment state and window size."""

    STRUCTURE = "SessionHeader"
    AckSequenceNumber: int
    RecoverableMsgAckSeqNumber: int
    RecoverableMsgAckFlags: int
    UserMsgSequenceNumber: int
    RecoverableMsgSeqNumber: int
    WindowSize: int
    Reserved: int
    LAYOUT = cs.Struct(
        "AckSequenceNumber" / cs.Int16ul,
        "RecoverableMsgAckSeqNumber" / cs.Int16ul,
        "RecoverableMsgAckFlags" / cs.Int32ul,
        "UserMsgSequenceNumber" / cs.Int16ul,
        "RecoverableMsgSeqNumber" / cs.Int16ul,
        "WindowSize" / cs.Int16ul,
        "Reserved" / cs.Int16ul,
    )
    DEFAULTS = {"WindowSize": 0x40}
    CUT = "present"

    def check(self, offset: int, p: Problems) -> None:
        if self.WindowSize == 0:
            p.note(self.STRUCTURE, "WindowSize", offset + 12, "0 outside the valid range 1..65535")

    def acknowledged_recoverable(self) -> list[int]:
        """Recoverable sequence numbers acknowledged by RecoverableMsgAckFlags
        (bit k stands for RecoverableMsgAckSeqNumber + k)."""
        return [self.RecoverableMsgAckSeqNumber + k for k in range(32)
                if self.RecoverableMsgAckFlags >> k & 1]
