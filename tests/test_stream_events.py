"""Both stream framers speak one vocabulary (issue 13: mqcodec.stream_events):
the same FramingError, Resynchronised and FramerStateError classes, and unit
events with ``offset``, ``end``, ``data`` and ``kind``."""
from __future__ import annotations

import struct

import pytest

from mqcodec import stream_events
from mqcodec.ibmmq import framing as mq_framing
from mqcodec.ibmmq.builders import encode_put
from mqcodec.msmq import builders as msmq_builders
from mqcodec.msmq import framing as msmq_framing


def test_the_event_types_are_one():
    for mod in (mq_framing, msmq_framing):
        assert mod.FramingError is stream_events.FramingError
        assert mod.Resynchronised is stream_events.Resynchronised
        assert mod.FramerStateError is stream_events.FramerStateError
    assert issubclass(stream_events.FramerStateError, RuntimeError)


def _units(protocol: str) -> list[bytes]:
    if protocol == "mq":
        md = b"MD  " + struct.pack("<i", 1) + bytes(316)          # an MQMD version 1, little-endian
        return [encode_put(md + b"message %d" % i, conversation_id=1, request_id=i) for i in range(3)]
    s = msmq_builders.simulate_session(3, messages=3)
    return [msmq_builders.frame_packets([p]) for _k, p in s.initiator_packets][:4]


def _framer(protocol: str):
    return mq_framing.MQStreamFramer() if protocol == "mq" else msmq_framing.MSMQStreamFramer()


@pytest.mark.parametrize("protocol", ["mq", "msmq"])
def test_both_framers_report_units_errors_and_resynchronisation_alike(protocol):
    """Garbage, then whole units: one FramingError holding the garbage, a
    Resynchronised where the first unit starts, then each unit with its
    offset, end and bytes; feeding after close is a FramerStateError."""
    units = _units(protocol)
    junk = b"\x00no unit here\x00" * 3
    stream = junk + b"".join(units)
    f = _framer(protocol)
    f.feed(stream)
    f.close()
    events = list(f)
    errors = [e for e in events if isinstance(e, stream_events.FramingError)]
    assert [(e.offset, e.raw, e.end) for e in errors] == [(0, junk, len(junk))]
    assert [e for e in events if isinstance(e, stream_events.Resynchronised)] == \
        [stream_events.Resynchronised(len(junk), len(junk))]
    found = [e for e in events if type(e).__name__ in ("Message", "Packet")]
    assert len(found) == len(units)
    at = len(junk)
    for ev, unit in zip(found, units):
        assert (ev.offset, ev.end) == (at, at + len(unit))
        if protocol == "msmq":
            assert ev.data == unit and ev.kind in ("EstablishConnection", "ConnectionParameters", "UserMessage",
                                                   "SessionAck", "OrderAck", "FinalAck")
        else:   # the MQMD and the message data, without the MQPMO and DataLength between them
            assert ev.kind == "MQPUT" and ev.md in unit and unit.endswith(ev.body) and ev.data == ev.md + ev.body
        at += len(unit)
    assert errors[0].to_decode_error().offset == 0
    with pytest.raises(stream_events.FramerStateError):
        f.feed(b"more")
