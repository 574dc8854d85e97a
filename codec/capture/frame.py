"""The unit every capture parser yields: one captured frame."""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["Frame", "Truncation", "NS_PER_S", "TS_UNKNOWN", "ts_or_unknown"]

NS_PER_S = 1_000_000_000

#: ``Frame.ts_ns`` of a frame whose time does not fit in int64 nanoseconds (a
#: pcapng ``if_tsresol``/``if_tsoffset`` putting it before or after the years
#: 1677..2262): -2**63, a value no valid time takes (valid times are within
#: +-(2**63 - 1)).  The frame is processed as any other; its rows have ``ts``
#: null and the capture counts "frames with impossible timestamps".
TS_UNKNOWN = -(1 << 63)
_TS_MAX = (1 << 63) - 1


def ts_or_unknown(ns: int) -> int:
    """``ns`` when it fits in int64 (and is not TS_UNKNOWN itself), else TS_UNKNOWN."""
    return ns if -_TS_MAX <= ns <= _TS_MAX else TS_UNKNOWN


class Frame(NamedTuple):
    """One captured frame, whatever the file format.

    number: 1-based position in the file, as tshark counts (``frame.number``).
    ts_ns: capture time, integer nanoseconds since 1970-01-01T00:00:00Z
        (TS_UNKNOWN when the file's time does not fit in int64 nanoseconds).
    linktype: LINKTYPE_* value of the interface the frame came from.
    caplen: bytes captured (``len(data)``; tshark ``frame.cap_len``).
    origlen: bytes on the wire as the file claims (tshark ``frame.len``).
    data: the captured bytes.
    interface_id: pcapng interface index (0 for classic pcap).
    """

    number: int
    ts_ns: int
    linktype: int
    caplen: int
    origlen: int
    data: bytes
    interface_id: int = 0


class Truncation(NamedTuple):
    """The input ended inside a record or block (a capture cut short).

    structure/field/offset follow :class:`mqcodec.DecodeError`'s meaning:
    ``offset`` is absolute from the start of the (decompressed) file.
    """

    structure: str
    field: str
    offset: int
    needed: int
    present: int
