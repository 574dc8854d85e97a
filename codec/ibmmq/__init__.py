"""IBM MQ: MQMD and its header chain, PCF, trace-route.

Shared file: each module's owner adds its own import lines below.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on first use at run time (mqcodec._lazy): a command pays only for what it uses
    from .constants import ENCODING_BIG, ENCODING_LITTLE  # noqa: F401
    from ..errors import DecodeError  # noqa: F401
    from .message import MQMessage, decode_message, decode_message_at, encode_message  # noqa: F401
    from .headers import MQMD, MQMDE, MQXQH, MQDLH, MQRFH2, MQRFH, decode_md  # noqa: F401
    from .pcf import PcfMessage, PcfParameter, decode_pcf_at  # noqa: F401
    from .traceroute import TraceRouteView, trace_route_view  # noqa: F401
    from .framing import MQStreamFramer, FramingError, Resynchronised  # noqa: F401
    from .builders import (encode_put, encode_put_reply, encode_put1, encode_get_reply,  # noqa: F401
                           encode_message_data, encode_async_message)


def decode_pcf(data: bytes, *, encoding: int | None = None, ccsid: int | None = None,
               lenient: bool = False) -> PcfMessage:
    """A PCF body (MQCFH or MQEPH first): see :mod:`mqcodec.ibmmq.pcf`."""
    from .pcf import decode_pcf as _decode_pcf

    return _decode_pcf(data, encoding=encoding, ccsid=ccsid, lenient=lenient)


def encode_pcf(msg: PcfMessage) -> bytes:
    """Bytes of a PcfMessage: see :mod:`mqcodec.ibmmq.pcf`."""
    from .pcf import encode_pcf as _encode_pcf

    return _encode_pcf(msg)

#: the public names (what `from mqcodec.ibmmq import *` gives, and what type checkers
#: see as exported: a name imported above for users belongs here too)
__all__ = ["ENCODING_BIG", "ENCODING_LITTLE", "DecodeError", "MQMessage", "decode_message",
           "decode_message_at", "encode_message", "MQMD", "MQMDE", "MQXQH", "MQDLH", "MQRFH2", "MQRFH",
           "decode_md", "PcfMessage", "PcfParameter", "decode_pcf_at", "TraceRouteView", "trace_route_view",
           "MQStreamFramer", "FramingError", "Resynchronised", "encode_put", "encode_put_reply",
           "encode_put1", "encode_get_reply", "encode_message_data", "encode_async_message", "decode_pcf",
           "encode_pcf"]

from .._lazy import lazy as _lazy  # noqa: E402

__getattr__, __dir__ = _lazy(__name__, __file__, globals())
