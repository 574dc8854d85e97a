"""Which protocol a TCP direction speaks (its ports, or its first bytes) and
the stream framer that cuts it into units.  ``mqcodec show`` frames
captures with these too."""
from __future__ import annotations

from typing import Optional

__all__ = ["detect_protocol", "port_protocol", "new_framer"]


def detect_protocol(data: bytes) -> Optional[str]:
    """"mq", "msmq" or None for the first bytes of a TCP direction no port named."""
    if data[:3] == b"TSH" and len(data) >= 4 and data[3:4] in (b" ", b"M", b"C"):
        return "mq"
    if len(data) >= 8 and data[0] == 0x10 and data[4:8] == b"LIOR":
        return "msmq"
    return None


def port_protocol(conn, mq_ports, msmq_ports) -> Optional[str]:
    """"mq" or "msmq" when either port of the connection ``conn`` (a
    ``capture.ConnKey``) is one of the given ports, else None."""
    if conn.server_port in mq_ports or conn.client_port in mq_ports:
        return "mq"
    if conn.server_port in msmq_ports or conn.client_port in msmq_ports:
        return "msmq"
    return None


def new_framer(protocol: str, offset: int = 0, *, units: bool = False):
    """The stream framer of ``protocol`` for a direction whose byte ``offset``
    comes first (0 when known by its port; the first recognised byte when
    detected by content: the framers report stream offsets from there).
    ``units``: the IBM MQ framer also yields every whole unit (mq_calls)."""
    if protocol == "mq":
        from ..ibmmq.framing import MQStreamFramer

        return MQStreamFramer(offset, units=units)
    from ..msmq.framing import MSMQStreamFramer

    return MSMQStreamFramer(offset=offset)
