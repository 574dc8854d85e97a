"""One capture as independent groups of frames, each converted on its own.

A TCP connection's rows depend only on its own frames (both directions), so
a capture can be converted a group of connections at a time, anywhere -- the
cluster engine shuffles frames by :func:`group_key` -- and the rows put
together again give the whole capture's.  Two things tie frames of different
connections together:

* IPv4 fragments: a fragment's ports are in the first fragment only, so every
  frame between two addresses that exchanged fragments is grouped by the
  address pair (:func:`~mqcodec.capture.segments.pair_key`), its fragments
  and its whole datagrams alike; every other TCP segment or UDP datagram by
  its connection (:func:`~mqcodec.capture.segments.conn_key`); frames that
  are neither (not IP, malformed, ICMP, ...) make one group of their own.
* ``tcp_stream``, the connection's index in order of opening: a group's
  reassembler numbers a connection by the frame that opened it
  (``TCPReassembler(streams_by_frame=True)``), and :func:`stream_indices`
  turns those frame numbers, gathered from every group, into the index.

What does not carry over: a byte budget or a connection limit over the whole
capture (each group has its own), since they act across connections.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .ipfrag import IPv4Fragment
from .packet import TCPSegment, UDPDatagram, decode_frame
from .segments import conn_key, pair_key

__all__ = ["OTHER", "keys_of", "group_key", "split_by_connection", "stream_indices"]

#: the group of frames that are neither TCP, UDP nor IPv4 fragments
OTHER = b""


def keys_of(frame) -> tuple[bytes, bytes, bool]:
    """``(connection key, address-pair key, is a fragment)`` of a frame
    (both keys :data:`OTHER` for a frame that is not TCP, UDP or a fragment)."""
    pkt = decode_frame(frame)
    cls = type(pkt)
    if cls is TCPSegment or cls is UDPDatagram:
        return (conn_key(pkt.ip_version, pkt.src, pkt.sport, pkt.dst, pkt.dport)[0],
                pair_key(pkt.ip_version, pkt.src, pkt.dst)[0], False)
    if cls is IPv4Fragment:
        return OTHER, pair_key(4, pkt.src, pkt.dst)[0], True
    return OTHER, OTHER, False


def group_key(conn: bytes, pair: bytes, fragmented_pairs) -> bytes:
    """The group of a frame with keys ``conn``/``pair`` (:func:`keys_of`),
    given the address pairs that exchanged IPv4 fragments: the pair's key
    (prefixed ``b"p"``) for those, else the connection's (``b"c"``)."""
    if pair and pair in fragmented_pairs:
        return b"p" + pair
    return b"c" + conn if conn else OTHER


def split_by_connection(frames: Iterable) -> list[list]:
    """Frames (in capture order) -> their groups, each in capture order, the
    groups in order of their first frame (in memory: for tests and small
    captures; the cluster engine does the same with a shuffle)."""
    frames = list(frames)
    keys = [keys_of(f) for f in frames]
    fragmented = {pair for _, pair, frag in keys if frag}
    groups: dict[bytes, list] = {}
    for f, (conn, pair, _) in zip(frames, keys):
        groups.setdefault(group_key(conn, pair, fragmented), []).append(f)
    return list(groups.values())


def stream_indices(opened: Iterable[int]):
    """The frame numbers that opened the capture's connections (gathered
    from every group) -> a function from such a frame number (the
    ``tcp_stream`` a group's reassembler gives) to the connection's
    capture-wide index (its rank: the reassembler of the whole capture
    numbers connections in order of opening).  It takes and returns numpy
    arrays; a number that opened no connection is an error."""
    ordered = np.unique(np.fromiter(opened, dtype=np.int64))

    def index(frames) -> np.ndarray:
        frames = np.asarray(frames, dtype=np.int64)
        at = np.searchsorted(ordered, frames)
        if len(frames) and (at.max() >= len(ordered) or not np.array_equal(ordered[at], frames)):
            raise ValueError("tcp_stream values that name no opening frame: %s"
                             % sorted(set(frames.tolist()) - set(ordered.tolist()))[:5])
        return at

    return index
