"""mqcodec: decode and encode IBM MQ and Microsoft MSMQ binary traffic.

Public entry points::

    import mqcodec
    msg = mqcodec.ibmmq.decode_message(data)      # MQMD first
    pcf = mqcodec.ibmmq.decode_pcf(data)          # MQCFH / MQEPH first
    pkt = mqcodec.msmq.decode_packet(data)        # MSMQ BaseHeader first

Every decoder raises :class:`mqcodec.DecodeError` (a ValueError naming the
structure, the field and the byte offset) and nothing else.
"""
from .errors import DecodeError, DecodeWarning, EncodeError, MQCodecError

__version__ = "0.1.0"

__all__ = ["DecodeError", "DecodeWarning", "EncodeError", "MQCodecError", "ibmmq", "msmq", "__version__"]


def __getattr__(name):  # lazy sub-packages: `import mqcodec` stays cheap
    if name in ("ibmmq", "msmq"):
        import importlib

        mod = importlib.import_module("." + name, __name__)
        globals()[name] = mod
        return mod
    raise AttributeError("module 'mqcodec' has no attribute %r" % name)
