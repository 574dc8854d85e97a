"""The unit every capture parser yields: one captured frame."""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["Frame", "Truncation", "NS_PER_S"]

NS_PER_S = 1_000_000_000


class Frame(NamedTuple):
    """One captured frame, whatever the file format.

    number: 1-based position in the file, as tshark counts (``frame.number``).
    ts_ns: capture time, integer nanoseconds since 1970-01-01T00:00:00Z.
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
