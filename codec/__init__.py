"""mqcodec: decode and encode IBM MQ and Microsoft MSMQ binary traffic.

Public entry points::

    import mqcodec
    msg = mqcodec.ibmmq.decode_message(data)      # MQMD first
    pcf = mqcodec.ibmmq.decode_pcf(data)          # MQCFH / MQEPH first
    pkt = mqcodec.msmq.decode_packet(data)        # MSMQ BaseHeader first
    tables = mqcodec.batch.decode_pcf_batch(arr)  # many records -> Arrow
    text = mqcodec.to_json(msg)                   # or msg.to_dict(json_safe=True)

Every decoder raises :class:`mqcodec.DecodeError` (a ValueError naming the
structure, the field and the byte offset) and nothing else.  The package is
typed (PEP 561, ``py.typed``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import DecodeError, DecodeWarning, EncodeError, MQCodecError

if TYPE_CHECKING:  # imported on first use at run time (see __getattr__)
    from . import batch, convert, ibmmq, msmq
    from .render import to_json

__version__ = "0.1.0"

__all__ = ["DecodeError", "DecodeWarning", "EncodeError", "MQCodecError", "to_json", "ibmmq", "msmq", "batch", "convert",
           "__version__"]

_LAZY = ("ibmmq", "msmq", "batch", "convert")


def __getattr__(name: str) -> Any:  # lazy sub-packages: `import mqcodec` stays cheap
    if name == "to_json":   # (render loads json and uuid, which a conversion never needs)
        from .render import to_json

        globals()["to_json"] = to_json
        return to_json
    if name in _LAZY:
        import importlib

        mod = importlib.import_module("." + name, __name__)
        globals()[name] = mod
        return mod
    raise AttributeError("module 'mqcodec' has no attribute %r" % name)
