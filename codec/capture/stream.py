"""Frames in, transport events out: the capture pipeline without I/O.

:class:`CaptureProcessor` ``feed(frame)`` returns a list of events:

* TCP: :class:`~mqcodec.capture.tcp.StreamOpened`, ``StreamData``, ``Gap``,
  ``StreamClosed`` (from :class:`~mqcodec.capture.tcp.TCPReassembler`);
* UDP: :class:`~mqcodec.capture.packet.UDPDatagram` (one per datagram);
  IPv4 fragments are reassembled first (:mod:`.ipfrag`); the result is
  attributed to the frame that completed the datagram, and the frames of
  datagrams never completed are reported as Skipped "incomplete IP
  datagram";
* :class:`~mqcodec.capture.packet.Skipped` and
  :class:`~mqcodec.capture.packet.Malformed` for frames not decoded.

``stats`` counts frames, skipped reasons and malformed structures;
``close()`` flushes open TCP connections.  :func:`iter_capture_events`
wraps it around :func:`~mqcodec.capture.reader.open_capture`.

:func:`iter_stream_events` is stage (b) alone, frames to TCP stream events,
in either implementation: this pure one, or the compiled capture core's
reassembly (``mqcodec._ext.capture_core``) with its framing switched off.
"""
from __future__ import annotations

from collections import Counter

from .ipfrag import FragmentReassembler, IPv4Fragment
from .packet import Skipped, TCPSegment, UDPDatagram, decode_frame, decode_reassembled
from .tcp import ConnKey, Gap, StreamClosed, StreamData, StreamOpened, TCPReassembler

__all__ = ["CaptureProcessor", "iter_capture_events"]


class CaptureProcessor:
    def __init__(self, *, tcp_ports=None, udp_ports=None, emit_skipped: bool = True,
                 reassemble_fragments: bool = True, **tcp_options):
        """``tcp_ports``/``udp_ports``: when given, only segments/datagrams
        with one of these ports as source or destination are processed
        (others count as skipped "port filter").  ``reassemble_fragments``:
        IPv4 fragments are reassembled (else skipped as "IP fragment").
        ``tcp_options`` go to :class:`TCPReassembler`."""
        self.tcp = TCPReassembler(**tcp_options)
        self.frags = FragmentReassembler() if reassemble_fragments else None
        self.tcp_ports = None if tcp_ports is None else frozenset(tcp_ports)
        self.udp_ports = None if udp_ports is None else frozenset(udp_ports)
        self.emit_skipped = emit_skipped
        self.stats: Counter = Counter()
        self.skipped: Counter = Counter()
        self.malformed: Counter = Counter()
        self._last = (0, 0)

    def feed(self, frame) -> list:
        self.stats["frames"] += 1
        self._last = (frame.number, frame.ts_ns)
        pkt = decode_frame(frame)
        cls = type(pkt)
        if cls is IPv4Fragment:
            return self._fragment(pkt)
        return self._packet(pkt, cls)

    def _fragment(self, frag) -> list:
        self.stats["ip fragments"] += 1
        if self.frags is None:
            return self._skip(Skipped(frag.frame_number, "IP fragment"))
        payload, abandoned = self.frags.add(frag)
        out = self._abandon(abandoned)
        if payload is not None:
            self.stats["reassembled datagrams"] += 1
            pkt = decode_reassembled(frag, payload)
            out += self._packet(pkt, type(pkt))
        return out

    def _abandon(self, abandoned) -> list:
        out = []
        for frames in abandoned:
            for number in frames:
                out += self._skip(Skipped(number, "incomplete IP datagram"))
        return out

    def _packet(self, pkt, cls) -> list:
        if cls is TCPSegment:
            ports = self.tcp_ports
            if ports is not None and pkt.sport not in ports and pkt.dport not in ports:
                return self._skip(Skipped(pkt.frame_number, "port filter"))
            self.stats["tcp segments"] += 1
            return self.tcp.segment(pkt.src, pkt.sport, pkt.dst, pkt.dport, pkt.seq, pkt.ack, pkt.flags,
                                    pkt.payload, pkt.missing, pkt.frame_number, pkt.ts_ns)
        if cls is UDPDatagram:
            ports = self.udp_ports
            if ports is not None and pkt.sport not in ports and pkt.dport not in ports:
                return self._skip(Skipped(pkt.frame_number, "port filter"))
            self.stats["udp datagrams"] += 1
            return [pkt]
        if cls is Skipped:
            return self._skip(pkt)
        self.malformed[pkt.structure] += 1
        self.stats["malformed"] += 1
        return [pkt]

    def _skip(self, pkt) -> list:
        self.skipped[pkt.reason] += 1
        self.stats["skipped"] += 1
        return [pkt] if self.emit_skipped else []

    def close(self) -> list:
        out = self._abandon(self.frags.close()) if self.frags is not None else []
        return out + self.tcp.close(*self._last)

    def report(self) -> dict:
        """Counts for the converter's summary."""
        return {
            "stats": dict(self.stats),
            "skipped": dict(self.skipped),
            "malformed": dict(self.malformed),
            "tcp": dict(self.tcp.stats),
        }


def iter_capture_events(source, *, strict: bool = False, processor: CaptureProcessor | None = None, **options):
    """Yield every event of a capture file (path or binary file object)."""
    proc = processor if processor is not None else CaptureProcessor(**options)
    from .reader import open_capture   # (here: CaptureProcessor alone needs no file reader)

    reader = open_capture(source, strict=strict)
    for frame in reader:
        yield from proc.feed(frame)
    yield from proc.close()


#: the TCP stream events (stage b), what :func:`iter_stream_events` yields
STREAM_EVENTS = (StreamOpened, StreamData, Gap, StreamClosed)
#: the options of TCPReassembler the capture core takes too, under the same names
_CORE_OPTIONS = ("server_ports", "max_closed", "max_connections", "max_reassembly_bytes", "max_reassembly_segments")


def iter_stream_events(source, *, impl: str | None = None, **tcp_options):
    """The TCP stream events of a capture file (path, bytes or binary file
    object; pcap, pcapng, gzip), in order: :class:`StreamOpened`,
    :class:`StreamData`, :class:`Gap`, :class:`StreamClosed`.

    ``impl``: ``"py"`` this module's :class:`CaptureProcessor`; ``"c"`` the
    compiled capture core's reassembly (``CaptureCore(stream_events=True)``:
    the same rules, IPv4/IPv6, fragments, reordering, overlaps, holes and
    snap-length cuts, with no framer behind it); None: the default
    (:mod:`mqcodec._impl`).  Both give the same events, but for what the
    core does not keep: its Gap and StreamClosed have no ``reason`` (None).
    ``tcp_options``: :class:`TCPReassembler`'s ``server_ports``,
    ``max_closed``, ``max_connections``, ``max_reassembly_bytes``,
    ``max_reassembly_segments``."""
    from .. import _impl

    core_mod = _impl.pick("capture_core", impl, what="capture core")
    if core_mod is None:
        for ev in iter_capture_events(source, **tcp_options):
            if type(ev) in STREAM_EVENTS:
                yield ev
        return
    unknown = set(tcp_options) - set(_CORE_OPTIONS)
    if unknown:
        raise TypeError("the compiled reassembly takes no %s" % ", ".join(sorted(unknown)))
    core = core_mod.CaptureCore((), (), False, stream_events=True, **tcp_options)
    keys: dict = {}   # the connections with a direction still open -> their ConnKey
    closed: set = set()   # those with one direction closed

    def events():
        for kind, ci, direction, offset, x, frame, ts in core.take_stream_events():
            key = keys.get(ci)
            if key is None:
                client, client_port, server, server_port, stream = core.connection(ci)
                key = keys[ci] = ConnKey(stream, client, client_port, server, server_port)
            if kind == 1:
                yield StreamData(key, direction, offset, x, frame, ts)
            elif kind == 2:
                yield Gap(key, direction, offset, x, frame, ts, None)
            elif kind == 3:
                if ci in closed:   # both directions closed: the connection has no more events
                    closed.discard(ci)
                    del keys[ci]
                else:
                    closed.add(ci)
                yield StreamClosed(key, direction, offset, None, frame, ts)
            else:
                yield StreamOpened(key, bool(x), frame, ts)

    from .reader import file_bytes

    for chunk in file_bytes(source):
        core.feed(chunk)          # (frames the core defers hold no TCP: it decodes every TCP segment)
        if not core.supported:
            raise ValueError("the compiled capture core does not read this capture: %s" % core.unsupported_reason)
        yield from events()
    core.finish()
    yield from events()
