"""Every stream framer speaks one vocabulary (issue 13: mqcodec.stream_events),
both protocols, both implementations: the same FramingError, Resynchronised
and FramerStateError classes, the same NEED_DATA and CLOSED, and unit events
with ``offset``, ``data`` and ``kind`` (the pure framers' also ``end``)."""
from __future__ import annotations

import struct

import pytest

from mqcodec import stream_events
from mqcodec.framers import framer
from mqcodec.ibmmq import framing as mq_framing
from mqcodec.ibmmq.builders import encode_put
from mqcodec.msmq import builders as msmq_builders
from mqcodec.msmq import framing as msmq_framing


def test_the_event_types_are_one():
    for mod in (mq_framing, msmq_framing):
        assert mod.FramingError is stream_events.FramingError
        assert mod.Resynchronised is stream_events.Resynchronised
        assert mod.FramerStateError is stream_events.FramerStateError
        assert mod.NEED_DATA is stream_events.NEED_DATA and mod.CLOSED is stream_events.CLOSED
    assert issubclass(stream_events.FramerStateError, RuntimeError)


def _units(protocol: str) -> list[bytes]:
    if protocol == "mq":
        md = b"MD  " + struct.pack("<i", 1) + bytes(316)          # an MQMD version 1, little-endian
        return [encode_put(md + b"message %d" % i, conversation_id=1, request_id=i) for i in range(3)]
    s = msmq_builders.simulate_session(3, messages=3)
    return [msmq_builders.frame_packets([p]) for _k, p in s.initiator_packets][:4]


@pytest.mark.parametrize("protocol", ["mq", "msmq"])
def test_both_framers_report_units_errors_and_resynchronisation_alike(protocol, impl):
    """Garbage, then whole units: one FramingError holding the garbage, a
    Resynchronised where the first unit starts, then each unit with its
    offset, end and bytes; feeding after close is a FramerStateError."""
    units = _units(protocol)
    junk = b"\x00no unit here\x00" * 3
    stream = junk + b"".join(units)
    f = framer(protocol, impl)
    assert isinstance(f, mq_framing.MQStreamFramer if protocol == "mq" else msmq_framing.MSMQStreamFramer) == \
        (impl == "py")
    f.feed(stream)
    assert f.end == len(stream)
    f.close()
    events = list(f)
    assert f.next_event() is stream_events.CLOSED
    errors = [e for e in events if isinstance(e, stream_events.FramingError)]
    assert [(e.offset, e.raw, e.end) for e in errors] == [(0, junk, len(junk))]
    assert [e for e in events if isinstance(e, stream_events.Resynchronised)] == \
        [stream_events.Resynchronised(len(junk), len(junk))]
    found = [e for e in events if type(e).__name__ in ("Message", "Packet", "StreamUnit")]
    assert len(found) == len(units)
    at = len(junk)
    for ev, unit in zip(found, units):
        assert ev.offset == at and (impl != "py" or ev.end == at + len(unit))
        if protocol == "msmq":
            assert ev.data == unit and ev.kind in ("EstablishConnection", "ConnectionParameters", "UserMessage",
                                                   "SessionAck", "OrderAck", "FinalAck")
        else:   # the MQMD (version 1: 324 bytes) and the message data, without the MQPMO and DataLength
            md, body = ev.data[:324], ev.data[324:]
            assert ev.kind == "MQPUT" and md == unit[36 + 16:36 + 16 + 324] and unit.endswith(body)
            assert body.startswith(b"message ")
        at += len(unit)
    assert errors[0].to_decode_error().offset == 0
    with pytest.raises(stream_events.FramerStateError):
        f.feed(b"more")
