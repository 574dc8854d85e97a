"""The stream framers' contract, one suite run against both implementations.

``impl`` ``py`` is the pure framer (:class:`mqcodec.ibmmq.framing.MQStreamFramer`,
:class:`mqcodec.msmq.framing.MSMQStreamFramer`); ``c`` the compiled one the
capture core runs (``_ext/framer_mq.pxi``, ``_ext/framer_msmq.pxi``), both
made by :func:`mqcodec.framers.framer` and driven through the one interface
(``feed``, ``gap``, ``close``, iteration); their events read here as
``("unit", offset, data, kind)``, ``("error", offset, raw, length,
structure, field, reason)``, and the count of resynchronisations.

The expected facts come from outside the framers: the encoders and the
simulator that built the streams (which units, where, with which bytes), the
[MS-MQQB] 4.1 example frames and malformed vectors, and the error kinds of
``framing_errors``.  (tests/test_framer_mq_streams.py and
tests/test_framer_msmq_streams.py drive both through many more streams, step by
step, tests/framer_steps.py.)
"""
from __future__ import annotations

import random
import struct

import pytest

from mqcodec.ibmmq import framing_errors as MQE
from mqcodec.ibmmq.builders import build_tsh, encode_async_message, encode_get_reply, encode_put, encode_put1
from mqcodec.framers import framer
from mqcodec.ibmmq.framing import Segment, Unit
from mqcodec.msmq import builders as MB
from mqcodec.msmq import framing_errors as MSE
from mqcodec.stream_events import FramingError, Resynchronised


class Driven:
    """One direction's framer of ``protocol`` ("mq", "msmq") in ``impl``
    (mqcodec.framers.framer), its events in the suite's vocabulary."""

    def __init__(self, protocol: str, impl: str, offset: int = 0):
        self.protocol, self.impl = protocol, impl
        self.events: list = []
        self.resyncs = 0
        self.f = framer(protocol, impl, offset)

    def _take(self) -> None:
        for ev in self.f:
            if isinstance(ev, Resynchronised):
                self.resyncs += 1
            elif isinstance(ev, FramingError):
                self.events.append(("error", ev.offset, ev.raw, ev.end - ev.offset, ev.structure, ev.field,
                                    ev.reason))
            elif not isinstance(ev, (Segment, Unit)):
                self.events.append(("unit", ev.offset, ev.data, ev.kind))

    def feed(self, data: bytes) -> "Driven":
        self.f.feed(data)
        self._take()
        return self

    def gap(self, n: int) -> "Driven":
        self.f.gap(n)
        self._take()
        return self

    def close(self) -> "Driven":
        self.f.close()
        self._take()
        return self

    def units(self) -> list:
        return [e for e in self.events if e[0] == "unit"]

    def errors(self) -> list:
        return [e for e in self.events if e[0] == "error"]


def chunked(data: bytes, rnd: random.Random):
    pos = 0
    while pos < len(data):
        n = rnd.choice((1, 3, 28, 100, 1000, 4096))
        yield data[pos:pos + n]
        pos += n


# ---------------------------------------------------------------------------------------- IBM MQ
def _md(little=True, data=b"hello, queue"):
    return b"MD  " + struct.pack("<i" if little else ">i", 2) + bytes(356) + data


ENCODERS = {
    "MQPUT": lambda m, **kw: encode_put(m, **kw),
    "MQPUT1": lambda m, **kw: encode_put1(m, object_name="Q1", **kw),
    "MQGET_REPLY": lambda m, **kw: encode_get_reply(m, **kw),
    "ASYNC_MESSAGE": lambda m, **kw: encode_async_message(m, resolved_q_name="Q.RESOLVED", **kw),
}


def _calls(kind: str, n: int, little: bool, split=None):
    """``n`` encoded calls of ``kind`` and where each starts, from the encoder."""
    kw = {"max_segment_length": split} if split else {}
    parts = [ENCODERS[kind](_md(little, b"payload %d " % i * (i + 1)), **kw) for i in range(n)]
    starts = [sum(map(len, parts[:i])) for i in range(n)]
    return parts, starts


@pytest.mark.parametrize("kind", sorted(ENCODERS))
@pytest.mark.parametrize("little", [True, False])
@pytest.mark.parametrize("split", [None, 200])
def test_mq_encoded_calls_are_framed_where_the_encoder_put_them(impl, kind, little, split):
    parts, starts = _calls(kind, 4, little, split)
    d = Driven("mq", impl)
    for chunk in chunked(b"".join(parts), random.Random(kind)):
        d.feed(chunk)
    d.close()
    units = d.units()
    assert [(u[1], u[3]) for u in units] == [(s, kind) for s in starts]
    for i, u in enumerate(units):   # the message: its MQMD, then its data
        assert u[2][:4] == b"MD  " and u[2].endswith(b"payload %d " % i * (i + 1))
    assert d.errors() == [] and d.resyncs == 0


def test_mq_garbage_between_calls_is_one_error_then_resynchronisation(impl):
    parts, starts = _calls("MQPUT", 3, True)
    garbage = b"\x00garbage, no segment header\x00" * 4
    stream = parts[0] + garbage + parts[1] + parts[2]
    d = Driven("mq", impl).feed(stream).close()
    (err,) = d.errors()
    assert err[1:4] == (len(parts[0]), garbage, len(garbage))
    assert err[6].endswith("at a segment boundary is not TSH, TSHM or TSHC")
    assert [u[1] for u in d.units()] == [0, len(parts[0]) + len(garbage), len(parts[0]) + len(garbage) + len(parts[1])]
    assert d.resyncs == 1


def test_mq_gap_inside_a_segment_reports_the_segment_and_goes_on(impl):
    parts, starts = _calls("MQPUT", 3, True)
    stream = b"".join(parts)
    cut, n = starts[1] + 100, 50
    d = Driven("mq", impl).feed(stream[:cut]).gap(n).feed(stream[cut + n:]).close()
    (err,) = d.errors()
    assert err[1] == starts[1] and err[3] == len(parts[1])          # the whole segment, by its MQSegmLen
    assert err[6].startswith("gap of %d bytes at stream offset %d inside the segment" % (n, cut))
    assert err[2] == stream[starts[1]:cut] + stream[cut + n:starts[2]]
    assert [u[1] for u in d.units()] == [starts[0], starts[2]]
    assert d.resyncs == 1


def test_mq_stream_ending_inside_a_segment(impl):
    parts, starts = _calls("MQPUT", 2, False)
    stream = b"".join(parts)[:-10]
    d = Driven("mq", impl).feed(stream).close()
    (err,) = d.errors()
    assert err[1] == starts[1] and err[2] == stream[starts[1]:]
    assert err[6] == MQE.describe(MQE.ENDS_IN_SEGMENT, len(parts[1]) - 10, len(parts[1]))[2]
    assert [u[1] for u in d.units()] == [0]


def test_mq_more_open_units_than_a_framer_keeps_drop_the_oldest(impl):
    units = 1025   # one more than max_pending_messages
    first = b"".join(build_tsh(0x86, 36 + 10, conversation_id=7000 + k, ctl_flags1=0x10) + bytes(10)
                     for k in range(units))
    d = Driven("mq", impl).feed(first).close()
    errs = d.errors()
    assert errs[0][1] == 0 and errs[0][6].startswith("dropped unfinished: open multi-segment messages exceed 1024")
    # at the end of the stream the others are reported, in the order they opened
    assert [e[1] for e in errs[1:]] == [46 * k for k in range(1, units)]
    assert all(e[6] == "stream ends before the last segment inside a 1-segment message" for e in errs[1:])


# ---------------------------------------------------------------------------------------- MSMQ
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("side", ["initiator", "acceptor"])
def test_msmq_simulated_session_packets_are_the_builders(impl, seed, side):
    sess = MB.simulate_session(seed, messages=4)
    stream = getattr(sess, side)
    packets = getattr(sess, side + "_packets")
    d = Driven("msmq", impl)
    for chunk in chunked(stream, random.Random(seed)):
        d.feed(chunk)
    d.close()
    starts = [sum(len(p) for _k, p in packets[:i]) for i in range(len(packets))]
    assert [(u[1], u[2], u[3]) for u in d.units()] == [(s, p, k) for s, (k, p) in zip(starts, packets)]
    assert d.errors() == []


def test_msmq_gap_inside_a_packet_breaks_only_that_packet(impl):
    sess = MB.simulate_session(7, messages=5)
    packets = [p for _k, p in sess.initiator_packets]
    stream = MB.frame_packets(packets)
    starts = [sum(map(len, packets[:i])) for i in range(len(packets) + 1)]
    cut, n = starts[2] + 100, 50
    d = Driven("msmq", impl).feed(stream[:cut]).gap(n).feed(stream[cut + n:]).close()
    e1, e2 = d.errors()
    assert (e1[1], e1[2]) == (starts[2], stream[starts[2]:cut])
    assert (e2[1], e2[2]) == (cut + n, stream[cut + n:starts[3]])
    assert [u[1] for u in d.units()] == starts[:2] + starts[3:-1]


def test_msmq_spec_example_frames(impl, vectors):
    """The client's frames of the [MS-MQQB] 4.1 session, one after the other:
    EstablishConnection, ConnectionParameters, then the first 222 bytes of a
    2,224-byte UserMessage, which the stream ends inside (reported at close)."""
    names = ("4.1.3_establish_connection_request.bin", "4.1.5_connection_parameters_request.bin",
             "4.1.7_user_message_first_222_bytes.bin")
    data = [(vectors / "msmq" / n).read_bytes() for n in names]
    d = Driven("msmq", impl).feed(b"".join(data)).close()
    assert [(u[1], u[3]) for u in d.units()] == [(0, "EstablishConnection"), (len(data[0]), "ConnectionParameters")]
    (err,) = d.errors()
    assert err[1:3] == (len(data[0]) + len(data[1]), data[2])
    assert err[6] == MSE.describe(MSE.TRUNCATED_AT_CLOSE, 2224, 2224, 222)[2]


def test_msmq_bytes_that_are_no_packet(impl):
    sess = MB.simulate_session(4, messages=2)
    packets = [p for _k, p in sess.initiator_packets]
    garbage = b"\x11" + b"x" * 40
    stream = packets[0] + garbage + MB.frame_packets(packets[1:])
    d = Driven("msmq", impl).feed(stream).close()
    (err,) = d.errors()
    assert err[1:3] == (len(packets[0]), garbage) and err[6].startswith("VersionNumber 0x11, MUST be 0x10")
    assert [u[2] for u in d.units()] == packets and d.resyncs == 1
