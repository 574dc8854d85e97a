"""MSMQ traffic built again: whole packets joined into a stream, and the
traffic simulator's protocol sessions (the simulator and the tests build
with these; :mod:`mqcodec.msmq.framing` only reads).

* :func:`frame_packets` -- whole encoded packets into one stream, each
  checked to be exactly one packet;
* :func:`simulate_session` -- a deterministic protocol session
  ([MS-MQQB] 3.1.1.7, 4.1) built with the ``mqcodec.msmq`` encoders.
"""
from __future__ import annotations

import random
import struct
import uuid
from typing import NamedTuple

from ..errors import EncodeError
from . import constants as C
from .base import (BaseFlags, BaseHeader, ConnectionParametersHeader, EstablishConnectionHeader,
                   InternalHeader)
from .framing import check_base_header, framed_length
from .packet import Packet as DecodedPacket, encode_packet
from .properties import MessagePropertiesHeader
from .session import SessionHeader
from .user import DirectQueueFormatName, UserFlags, UserHeader

__all__ = ["frame_packets", "simulate_session", "SimulatedSession"]

_BASE = struct.Struct("<BBHII")          # VersionNumber Reserved Flags Signature PacketSize


def frame_packets(packets) -> bytes:
    """Concatenate whole encoded packets into a stream, checking that each
    is exactly one packet (VersionNumber, Signature, PacketSize range, and
    length = :func:`framed_length`).  Raises :class:`EncodeError`."""
    out = bytearray()
    for n, p in enumerate(packets):
        if not isinstance(p, (bytes, bytearray, memoryview)):
            raise EncodeError("BaseHeader", "", "packet %d is %s, not bytes" % (n, type(p).__name__))
        p = bytes(p)
        if len(p) < C.BASE_HEADER_SIZE:
            raise EncodeError("BaseHeader", "", "packet %d has %d bytes, fewer than the 16-byte BaseHeader"
                              % (n, len(p)))
        bad = check_base_header(p)
        if bad is not None:
            raise EncodeError("BaseHeader", bad[0], "packet %d: %s" % (n, bad[1]))
        _v, _r, flags, _s, size = _BASE.unpack_from(p)
        total = framed_length(flags, size)
        if total != len(p):
            raise EncodeError("BaseHeader", "PacketSize", "packet %d has %d bytes but its BaseHeader frames %d"
                              % (n, len(p), total))
        out += p
    return bytes(out)


class SimulatedSession(NamedTuple):
    """Both directions of a simulated protocol session."""

    initiator: bytes                 # stream to TCP port 1801
    acceptor: bytes                  # stream from TCP port 1801
    initiator_packets: list          # [(kind, bytes)] in stream order
    acceptor_packets: list


def simulate_session(seed: int, *, messages: int = 4) -> SimulatedSession:
    """A realistic protocol session ([MS-MQQB] 3.1.1.7, 4.1), deterministic
    from ``seed``: EstablishConnection request / response, ConnectionParameters
    request / response, ``messages`` UserMessages from the initiator (some
    recoverable, some with a piggy-backed SessionHeader), and SessionAck
    Packets from the acceptor; built with the ``mqcodec.msmq`` encoders."""
    rnd = random.Random(seed)
    client = uuid.UUID(int=rnd.getrandbits(128))
    server = uuid.UUID(int=rnd.getrandbits(128))
    stamp = rnd.randrange(0x10000000, 0x70000000)
    host = "10.%d.%d.%d" % (rnd.randrange(256), rnd.randrange(256), rnd.randrange(1, 255))
    window = rnd.choice((0x40, 0x80, 0x20))

    def internal(pt: int, **headers) -> bytes:
        flags = BaseFlags(PR=3, IN=1, SH=1 if pt == C.PT_SESSION_ACK else 0)
        return encode_packet(DecodedPacket(C.PACKET_TYPES[pt], BaseHeader(Flags=flags),
                                           InternalHeader=InternalHeader(Flags=pt), **headers))

    ini: list = []
    acc: list = []
    ini.append(("EstablishConnection", internal(
        C.PT_ESTABLISH_CONNECTION, EstablishConnectionHeader=EstablishConnectionHeader(
            ClientGuid=client, ServerGuid=server, TimeStamp=stamp, OperatingSystem=0x10 | 0x300))))
    acc.append(("EstablishConnection", internal(
        C.PT_ESTABLISH_CONNECTION, EstablishConnectionHeader=EstablishConnectionHeader(
            ClientGuid=client, ServerGuid=server, TimeStamp=stamp, OperatingSystem=0x10 | 0x300))))
    params = dict(RecoverableAckTimeout=rnd.choice((0x5D8, 0x1F4, 0x2710)), AckTimeout=0x1D4C0, WindowSize=window)
    ini.append(("ConnectionParameters", internal(
        C.PT_CONNECTION_PARAMETERS, ConnectionParametersHeader=ConnectionParametersHeader(**params))))
    acc.append(("ConnectionParameters", internal(
        C.PT_CONNECTION_PARAMETERS, ConnectionParametersHeader=ConnectionParametersHeader(**params))))
    recoverable = 0
    for n in range(1, messages + 1):
        dm = rnd.randrange(2)                      # express (0) or recoverable (1)
        recoverable += dm
        queue = "TCP:%s\\PRIVATE$\\%s" % (host, rnd.choice(("orders", "audit", "q%d" % rnd.randrange(100))))
        uh = UserHeader(SourceQueueManager=client, QueueManagerAddress=server, SentTime=stamp + n,
                        MessageID=n, Flags=UserFlags(DM=dm, DQ=7, MP=1),
                        DestinationQueue=DirectQueueFormatName(queue))
        body = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 300)))
        mp = MessagePropertiesHeader(Label="msg %d" % n, BodyType=0x11, MessageBody=body)
        bflags = BaseFlags(PR=rnd.randrange(8))
        piggy = None
        if rnd.random() < 0.4:
            # a piggy-backed session acknowledgment: the acceptor sent no UserMessage, so
            # AckSequenceNumber is 0; it carries this direction's sequence numbers and window
            bflags.set("SH", 1)
            piggy = SessionHeader(AckSequenceNumber=0, UserMsgSequenceNumber=n,
                                  RecoverableMsgSeqNumber=recoverable, WindowSize=window)
        ini.append(("UserMessage", encode_packet(DecodedPacket(
            "UserMessage", BaseHeader(Flags=bflags, TimeToReachQueue=rnd.choice((C.INFINITE, 3600, 0x7FFFFFFF))),
            UserHeader=uh, MessagePropertiesHeader=mp, SessionHeader=piggy))))
        if rnd.random() < 0.6 or n == messages:
            # AckSequenceNumber: UserMessages received so far; recoverable ones acknowledged by bit 0
            acc.append(("SessionAck", internal(C.PT_SESSION_ACK, SessionHeader=SessionHeader(
                AckSequenceNumber=n, RecoverableMsgAckSeqNumber=recoverable,
                RecoverableMsgAckFlags=1 if dm else 0, UserMsgSequenceNumber=0,
                RecoverableMsgSeqNumber=0, WindowSize=window))))
    return SimulatedSession(frame_packets(p for _k, p in ini), frame_packets(p for _k, p in acc), ini, acc)
