"""Captured traffic: pcap/pcapng reading, link layers, IP, TCP reassembly.

Layers (each I/O-free; see docs/capture.md)::

    bytes --CaptureParser.feed--> Frame --decode_frame--> TCPSegment / UDPDatagram
          (pcap, pcapng, gzip)            (link, IP, TCP/UDP)   / Skipped / Malformed
    TCPSegment --TCPReassembler.segment--> StreamOpened / StreamData / Gap / StreamClosed

:class:`CaptureProcessor` chains the last two; :func:`open_capture` and
:func:`iter_capture_events` read files in chunks; :mod:`.ranges` reads a
capture as independent byte ranges (splittable captures) and
:mod:`.segments` turns a range into stage-1 Arrow batches.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on first use at run time (mqcodec._lazy): the compiled core, which needs
    # only .frame, does not pay for the pure readers and their construct declarations
    from .frame import TS_UNKNOWN, Frame, Truncation
    from .ipfrag import FragmentReassembler, IPv4Fragment
    from .packet import Malformed, Skipped, TCPSegment, UDPDatagram, decode_frame
    from .ranges import (
        ByteRange,
        RangeReader,
        RangeScan,
        check_plan,
        frame_number_bases,
        plan_ranges,
        read_range,
        scan_ranges,
    )
    from .reader import CaptureParser, CaptureReader, iter_frames, open_capture
    from .stream import STREAM_EVENTS, CaptureProcessor, iter_capture_events, iter_stream_events
    from .tcp import (
        CLIENT_TO_SERVER,
        SERVER_TO_CLIENT,
        ConnKey,
        FrameMap,
        Gap,
        StreamClosed,
        StreamData,
        StreamOpened,
        TCPReassembler,
    )

__all__ = [
    "Frame", "Truncation", "TS_UNKNOWN", "CaptureParser", "CaptureReader", "open_capture", "iter_frames",
    "decode_frame", "TCPSegment", "UDPDatagram", "IPv4Fragment", "FragmentReassembler", "Skipped", "Malformed",
    "TCPReassembler", "ConnKey", "StreamOpened", "StreamData", "Gap", "StreamClosed", "FrameMap",
    "CLIENT_TO_SERVER", "SERVER_TO_CLIENT", "CaptureProcessor", "iter_capture_events", "iter_stream_events",
    "STREAM_EVENTS",
    "ByteRange", "RangeScan", "RangeReader", "plan_ranges", "read_range", "scan_ranges", "check_plan",
    "frame_number_bases",
]

from .._lazy import lazy as _lazy  # noqa: E402

__getattr__, __dir__ = _lazy(__name__, __file__, globals())
