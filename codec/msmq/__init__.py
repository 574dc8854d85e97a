"""Microsoft Message Queuing (MSMQ) binary protocol, MS-MQQB / MS-MQMQ.

Shared file: each module's owner adds its own import lines below.
"""
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on first use at run time (mqcodec._lazy): a command pays only for what it uses
    from . import constants
    from .base import (BaseFlags, BaseHeader, ConnectionParametersHeader, EstablishConnectionHeader,
                       InternalFlags, InternalHeader, OperatingSystemFlags, PingFlags, PingPacket)
    from .packet import Packet, decode_packet, decode_ping, encode_packet
    from .properties import MessagePropertiesFlags, MessagePropertiesHeader
    from .session import SessionHeader
    from .user import (DirectQueueFormatName, PrivateQueueFormatName, PrivateQueueFormatNameId,
                       PublicQueueFormatName, UserFlags, UserHeader)
    # report / queue_manager / xact: stdlib-only semantic models (no construct), cheap to import
    from .report import parse_report_body, parse_report_label, trace_message_for
    from .queue_manager import QueueManager, decode_lookup_identifier
    from .xact import dead_letter_deadline, extended_interval
    from .formatname import FormatName, FormatNameError
    from .mqf import MQFAddressHeader, MQFFormatNameElement, MQFSignatureHeader, MultiQueueFormatHeader
    from .optional_headers import (OPTIONAL_HEADER_ORDER, CompoundMessageHeader, DebugHeader, DeadLetterHeader,
                                   EodAckHeader, EodHeader, ExtendedAddressHeader, ExtensionHeader, FinalAckBody,
                                   OrderAckBody, RemoteReadExtensions, SecurityHeader, SoapHeader,
                                   SRMPEnvelopeHeader, SubqueueHeader, TransactionHeader)
    from .framing import MSMQStreamFramer, FramingError, Resynchronised
    from .builders import frame_packets, simulate_session
    from .framing import Packet as FramedPacket

#: the public names (what `from mqcodec.msmq import *` gives, and what type checkers
#: see as exported: a name imported above for users belongs here too)
__all__ = ["constants", "BaseFlags", "BaseHeader", "ConnectionParametersHeader", "EstablishConnectionHeader",
           "InternalFlags", "InternalHeader", "OperatingSystemFlags", "PingFlags", "PingPacket", "Packet",
           "decode_packet", "decode_ping", "encode_packet", "MessagePropertiesFlags",
           "MessagePropertiesHeader", "SessionHeader", "DirectQueueFormatName", "PrivateQueueFormatName",
           "PrivateQueueFormatNameId", "PublicQueueFormatName", "UserFlags", "UserHeader",
           "parse_report_body", "parse_report_label", "trace_message_for", "QueueManager",
           "decode_lookup_identifier", "dead_letter_deadline", "extended_interval", "FormatName",
           "FormatNameError", "MQFAddressHeader", "MQFFormatNameElement", "MQFSignatureHeader",
           "MultiQueueFormatHeader", "OPTIONAL_HEADER_ORDER", "CompoundMessageHeader", "DebugHeader",
           "DeadLetterHeader", "EodAckHeader", "EodHeader", "ExtendedAddressHeader", "ExtensionHeader",
           "FinalAckBody", "OrderAckBody", "RemoteReadExtensions", "SecurityHeader", "SoapHeader",
           "SRMPEnvelopeHeader", "SubqueueHeader", "TransactionHeader", "MSMQStreamFramer", "FramingError",
           "Resynchronised", "frame_packets", "simulate_session", "FramedPacket"]

from .._lazy import lazy as _lazy  # noqa: E402

__getattr__, __dir__ = _lazy(__name__, __file__, globals())
