"""The IBM MQ stream framers, both implementations (``impl``: the pure
:class:`mqcodec.ibmmq.framing.MQStreamFramer` and the capture core's compiled
framer, ``_ext/framer_mq.pxi``), on the streams the encoders build.

Outside facts: the encoders' streams (both byte orders, EBCDIC eye-catchers,
multi-segment splits, interleaved conversations; how many units each holds),
the real capture's directions, the simulator's captures, mutated, truncated
and gapped streams.  Every stream is driven through tests/framer_steps.py:
whatever the chunking, a framer reports the rows the pure framer reports for
the stream fed whole, at the step the pure framer reports them (docs/framer-mq-compiled.md).
"""
from __future__ import annotations

import io
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcodec.ibmmq.builders import (
    build_tsh, default_gmo, default_od, default_pmo, encode_async_message, encode_get_reply, encode_message_data,
    encode_put, encode_put1, encode_put_reply, encode_segments,
)
from mqcodec.ibmmq import framing_errors
from mqcodec.ibmmq.framing import DEFAULT_MAX_RAW, FramingError, Message, MQStreamFramer, Resynchronised, Segment

from conftest import CAPTURES
from framer_steps import check, chunk_sizes, errors, gap_sizes, pieces, resyncs, units

CAPTURE = CAPTURES / "ibmmq_jms_client_1414.pcap"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def compiled_core():
    """The compiled capture core, for the checks of its constants (skipped where it is not built)."""
    return pytest.importorskip("mqcodec._ext.capture_core")


def run(impl: str, stream: bytes, sizes, offset: int = 0) -> list:
    """The rows of ``framer("mq", impl)`` for ``stream`` cut by ``sizes``
    (framer_steps.pieces), checked against the pure framer's."""
    return check("mq", impl, pieces(stream, sizes), offset)


def all_chunkings(impl: str, stream: bytes, seed: int = 0, offset: int = 0) -> list:
    """The rows, the same whole, a byte at a time and cut at random twice."""
    rnd = random.Random(seed)
    rows: list = []
    for mode in ("whole", "bytes", "random", "random"):
        rows = run(impl, stream, chunk_sizes(len(stream), rnd, mode), offset)
    return rows


def pure_reference(stream: bytes, offset: int = 0) -> list:
    """The pure framer's non-Segment events for the whole stream and close."""
    p = MQStreamFramer(offset)
    p.feed(stream)
    p.close()
    return [e for e in p.events() if not isinstance(e, Segment)]


# ---------------------------------------------------------------------------
# message material (MQMD bytes built here from IBM's layout: StrucId, Version)
# ---------------------------------------------------------------------------
def md_bytes(version: int = 2, little: bool = True, fill: int = 0) -> bytes:
    n = 324 if version == 1 else 364
    return b"MD  " + struct.pack("<i" if little else ">i", version) + bytes([fill]) * (n - 8)


def message(version=2, little=True, data=b"hello, queue", fill=0):
    return md_bytes(version, little, fill) + data


def order(little: bool) -> str:
    return "little" if little else "big"


def segments_of(stream: bytes) -> list:
    """Split a clean stream at its MQSegmLen boundaries."""
    out, pos = [], 0
    while pos < len(stream):
        n = struct.unpack_from(">I", stream, pos + 4)[0]
        out.append(stream[pos:pos + n])
        pos += n
    return out


ENCODERS = {
    "put": lambda m, **kw: encode_put(m, **kw),
    "put1": lambda m, **kw: encode_put1(m, object_name="Q1", **kw),
    "get_reply": lambda m, **kw: encode_get_reply(m, **kw),
    "put_reply": lambda m, **kw: encode_put_reply(m, **kw),
    "put_reply_data": lambda m, **kw: encode_put_reply(m, include_data=True, **kw),
    "async": lambda m, **kw: encode_async_message(m, resolved_q_name="Q.RESOLVED", **kw),
    "message_data": lambda m, **kw: encode_message_data(m, remote_q_name="RQ", remote_qmgr_name="QM2", **kw),
    "message_data_nomsh": lambda m, **kw: encode_message_data(m, msh=False, **kw),
}


# ---------------------------------------------------------------------------
# the encoders' streams
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ENCODERS))
@pytest.mark.parametrize("little", [True, False])
@pytest.mark.parametrize("split", [None, 120, 400, 1000])
def test_encoder_streams(impl, name, little, split):
    version = 1 if name.startswith("message_data") else 2
    msgs = [message(version, little, bytes(range(256)) * k, fill=k) for k in (0, 1, 3)]
    stream = b"".join(ENCODERS[name](m, max_segment_length=split, byte_order=order(little)) for m in msgs)
    rows = all_chunkings(impl, stream, seed=hash((name, little, split)) & 0xFFFF)
    if name == "put_reply":          # the MQMD, not the data
        msgs = [m[:len(md_bytes(version))] for m in msgs]
    assert [r[2] for r in rows] == msgs and not errors(rows)


def test_every_kind_name_is_a_pure_kind(impl):
    """The compiled framer's kinds are the pure framer's."""
    stream = b"".join(ENCODERS[n](message(1 if n.startswith("message_data") else 2), max_segment_length=300)
                      for n in sorted(ENCODERS))
    stream += encode_segments(0x85, struct.pack(">iiii", 0, 0, 0, 1) + md_bytes() + default_gmo("little"))
    stream += encode_segments(0x97, api() + default_od("little") + md_bytes() + default_pmo("little"))
    kinds = {e.kind for e in pure_reference(stream)}
    assert kinds == set(compiled_core().MQ_KIND_NAMES)
    assert {r[3] for r in all_chunkings(impl, stream)} == kinds


@pytest.mark.parametrize("structid", ["TSH", "TSHM", "TSHC"])
@pytest.mark.parametrize("ebcdic", [False, True])
def test_header_spellings(impl, structid, ebcdic):
    m = message()
    stream = encode_put(m, structid=structid, ebcdic=ebcdic, split_points=[30, 500]) + \
        encode_get_reply(m, structid=structid, ebcdic=ebcdic) + \
        encode_async_message(m, structid=structid, ebcdic=ebcdic, max_segment_length=200)
    rows = all_chunkings(impl, stream)
    assert [r[2] for r in rows] == [m, m, m]


def test_ebcdic_structure_ids(impl):
    """MQMD/MQPMO/MQXQH/MSH eye-catchers in EBCDIC (z/OS) are recognised as the pure framer does."""
    md = b"\xd4\xc4\x40\x40" + struct.pack(">i", 1) + b"\0" * 316
    pmo = b"\xd7\xd4\xd6\x40" + default_pmo("big", version=1)[4:]
    body = struct.pack(">iiii", 0, 0, 0, 1) + md + pmo + struct.pack(">i", 3) + b"abc"
    stream = encode_segments(0x86, body, byte_order="big", structid="TSH", ebcdic=True)
    xqh = b"\xe7\xd8\xc8\x40" + struct.pack(">i", 1) + b" " * 96
    msh = b"\xd4\xe2\xc8\x40" + struct.pack(">iiii", 1, 0, 0, 0)
    stream += encode_segments(0x04, msh + xqh + md + b"data", byte_order="big", structid="TSH")
    ref = pure_reference(stream)
    assert [e.kind for e in ref] == ["MQPUT", "MESSAGE_DATA"]
    assert [r[3] for r in all_chunkings(impl, stream)] == ["MQPUT", "MESSAGE_DATA"]


def test_start_offset(impl):
    first = encode_put(message(), max_segment_length=100)
    stream = first + encode_get_reply(message(little=False))
    rows = all_chunkings(impl, stream, offset=123456789012)
    assert [r[1] for r in rows] == [123456789012, 123456789012 + len(first)]


def test_non_message_segments_and_multisegment_api_units(impl):
    """Heartbeats, INITIAL_DATA, multi-segment MQCONN (no message) between messages."""
    m = message(data=b"x" * 900)
    stream = encode_segments(0x01, b"\0" * 100, structid="TSH") + \
        encode_segments(0x81, b"\0" * 700, max_segment_length=200) + \
        encode_put(m, max_segment_length=300) + encode_segments(0x09, b"", structid="TSH") + \
        encode_segments(0xA1, b"\1" * 50) + encode_put_reply(m)
    rows = all_chunkings(impl, stream)
    assert [r[3] for r in rows] == ["MQPUT", "MQPUT_REPLY"] and rows[0][2] == m


def interleave(streams: list, rnd: random.Random) -> bytes:
    queues = [segments_of(s) for s in streams]
    out = []
    while any(queues):
        q = rnd.choice([q for q in queues if q])
        out.append(q.pop(0))
    return b"".join(out)


@pytest.mark.parametrize("seed", range(4))
def test_interleaved_conversations(impl, seed):
    """Multi-segment units of several TSHM conversations interleaved, and a
    TSH (no ConversID) one among them: joined per conversation."""
    rnd = random.Random(seed)
    parts = [encode_put(message(data=bytes([c]) * 1500), conversation_id=c, max_segment_length=300)
             for c in range(1, 6)]
    parts.append(encode_async_message(message(data=b"a" * 700), conversation_id=9, max_segment_length=250))
    parts.append(encode_get_reply(message(little=False, data=b"T" * 600), structid="TSH", max_segment_length=200))
    stream = interleave(parts, rnd)
    rows = all_chunkings(impl, stream, seed)
    assert len(rows) == 7 and not errors(rows)
    assert sorted(r[2][-1] for r in rows) == sorted([1, 2, 3, 4, 5, ord("a"), ord("T")])


def test_too_many_open_units_drop_the_oldest(impl):
    """A framer keeps max_pending_messages open units; one more and the oldest
    is dropped with a FramingError, and the rest of its segments are
    continuations without a first segment."""
    import inspect

    open_units = inspect.signature(MQStreamFramer).parameters["max_pending_messages"].default
    parts = [encode_put(message(data=b"z" * 200), conversation_id=c, max_segment_length=200)
             for c in range(open_units + 1)]
    segs = [segments_of(p) for p in parts]
    stream = b"".join(s[0] for s in segs) + b"".join(b"".join(s[1:]) for s in segs)
    reasons = [e.reason for e in pure_reference(stream) if isinstance(e, FramingError)]
    assert reasons[0].startswith("dropped unfinished") and len(reasons) >= 2
    rnd = random.Random(5)
    for sizes in ([len(stream)], [4096] * (len(stream) // 4096 + 1), chunk_sizes(len(stream), rnd, "random")):
        rows = run(impl, stream, sizes)
        assert len(units(rows)) == open_units and [r[7] for r in errors(rows)] == reasons
    # as many as a framer keeps: followed, every unit whole
    stream = b"".join(s[0] for s in segs[1:]) + b"".join(b"".join(s[1:]) for s in segs[1:])
    for sizes in ([len(stream)], [4096] * (len(stream) // 4096 + 1)):
        rows = run(impl, stream, sizes)
        assert len(rows) == open_units and not errors(rows)



def test_units_beyond_the_size_limits(impl):
    """framing._check_size's two limits, on units of ~60 MiB segments: a unit
    joined beyond max_message_length (its first max_raw bytes reported at its
    last segment), and open units holding more than max_pending_bytes together
    (the oldest dropped).  Large: a few hundred MiB for a few seconds."""
    mib = 1 << 20
    seg = 60 * mib
    big = encode_put(message(data=bytes(130 * mib)), conversation_id=7, max_segment_length=seg)
    a = encode_put(message(data=b"a" * (70 * mib)), conversation_id=1, max_segment_length=seg)
    b = encode_put(message(data=b"b" * (70 * mib)), conversation_id=2, max_segment_length=seg)
    sa, sb = segments_of(a), segments_of(b)
    assert len(segments_of(big)) == 3 and len(sa) == len(sb) == 2
    tail = encode_put(message(data=b"after"), conversation_id=3)
    for stream, want in ((big + tail, "the joined message exceeds"),
                         (sa[0] + sb[0] + sa[1] + sb[1] + tail, "dropped unfinished")):
        for sizes in ([len(stream)], [7 * mib + 3] * 40):
            rows = run(impl, stream, sizes)
            bad = errors(rows)
            assert bad and bad[0][7].startswith(want)
            # (the joined unit keeps max_raw bytes, reported whole; the dropped one all its bytes, cut)
            assert len(bad[0][3]) == DEFAULT_MAX_RAW and bad[0][4] is (want == "dropped unfinished")
            assert units(rows)[-1][2] == message(data=b"after")
            del rows, bad


# ---------------------------------------------------------------------------
# errors: damaged segments and units, garbage, gaps
# ---------------------------------------------------------------------------
def api(hobj=1):
    return struct.pack(">i", 0) + struct.pack("<iii", 0, 0, hobj)


BAD = {
    "garbage_first": b"HELLO WORLD, NOT MQ",
    "segmlen_small": b"TSHM" + struct.pack(">I", 20) + b"\0" * 40,
    "segmlen_below_tshm": b"TSHM" + struct.pack(">I", 30) + b"\0" * 40,
    "segmlen_huge": b"TSH " + struct.pack(">I", 0x7FFFFFF0) + b"\0" * 40,
    "put_no_md": encode_segments(0x86, api() + b"XX  " + b"\0" * 400),
    "put_md_version": encode_segments(0x86, api() + b"MD  " + struct.pack("<i", 7) + b"\0" * 400),
    "put_no_pmo": encode_segments(0x86, api() + md_bytes() + b"\0" * 200),
    "put_short_api": encode_segments(0x86, b"\0" * 10),
    "get_reply_short_api": encode_segments(0x95, b"\0" * 10),
    "put_dl_negative": encode_put(message(), data_length=-1),
    "put_dl_too_long": encode_put(message(), data_length=10 ** 6),
    "get_reply_dl_negative": encode_get_reply(message(), data_length=-5),
    "put_no_datalength": encode_segments(0x86, api() + md_bytes() + default_pmo("little") + b"\1\2"),
    "put1_no_od": encode_segments(0x87, api() + md_bytes() + default_pmo("little") + b"\0" * 8),
    "md_no_xqh_md": encode_segments(0x04, b"XQH " + struct.pack("<i", 1) + b" " * 96 + b"nope" * 100,
                                    structid="TSH"),
    "md_short_msh": encode_segments(0x04, b"MSH " + b"\0" * 8, structid="TSH"),
    "async_short_header": encode_segments(0x0D, b"\0" * 20),
    "async_long_header_cut": encode_segments(0x0D, struct.pack("<iiiiiHH", 1, 1, 0, 1, 0, 0, 0) + b"\0" * 10),
    "continuation_without_first": build_tsh(0x86, 36 + 10, ctl_flags1=0) + b"\0" * 10,
    "new_first_before_last": encode_put(message(), split_points=[100])[:36 + 100] + encode_put(message()),
    "async_cont_too_short": encode_async_message(message(), split_points=[100])[:36 + 100]
    + build_tsh(0x0D, 36 + 10, ctl_flags1=0x20) + b"\0" * 10,
    "truncated_at_close": encode_put(message())[:-1],
    "open_unit_at_close": encode_put(message(), split_points=[100])[:36 + 100],
    "od_bad_version": encode_put1(message(), od=b"OD  " + struct.pack("<i", 9) + b"\0" * 160),
    "od_records_overrun": encode_put1(message(), od=b"OD  " + struct.pack("<i", 2) + b"\0" * 160
                                      + struct.pack("<iiiiiiii", 1000, 0, 0, 0, 1, 1, 0, 0)),
    "pmo_records_negative": encode_put(message(), pmo=default_pmo("little", RecsPresent=-1,
                                                                   PutMsgRecOffset=1)),
    "pmo_records_overrun": encode_put(message(), pmo=default_pmo("little", RecsPresent=50, PutMsgRecFields=31,
                                                                  PutMsgRecOffset=1, ResponseRecOffset=1)),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_errors_are_reported_and_framing_goes_on(impl, name):
    """Garbage, damaged segments and units, incomplete streams: a FramingError
    (or a resynchronisation), and the units before and after it."""
    good = encode_put(message(data=b"before")) + encode_get_reply(message(little=False), max_segment_length=150)
    stream = good + BAD[name] + (encode_put(message(data=b"after")) if "close" not in name else b"")
    ref = pure_reference(stream)
    assert any(isinstance(e, (FramingError, Resynchronised)) for e in ref), "not an error case for the pure framer"
    rows = all_chunkings(impl, stream)
    assert errors(rows) or resyncs(rows)
    assert [r[2] for r in units(rows)[:2]] == [message(data=b"before"), message(little=False)]
    if "close" not in name:
        assert units(rows)[-1][2] == message(data=b"after")


@pytest.mark.parametrize("name", ["garbage_first", "segmlen_small", "segmlen_huge"])
def test_garbage_between_messages_then_resynchronisation(impl, name):
    """Garbage between two messages: one FramingError with the garbage's bytes,
    one Resynchronised, the message after it, in any chunking."""
    stream = encode_put(message(data=b"before")) + BAD[name] + encode_put(message(data=b"after"),
                                                                          max_segment_length=200)
    rows = all_chunkings(impl, stream)
    assert len(errors(rows)) == 1 and len(resyncs(rows)) == 1 and len(units(rows)) == 2
    assert errors(rows)[0][3] == BAD[name]


def test_garbage_longer_than_max_raw_is_kept_in_part(impl):
    """More garbage than max_raw: the error keeps max_raw bytes, says so, and
    counts them all."""
    junk = bytes(range(7, 250)) * ((DEFAULT_MAX_RAW // 243) + 50)
    stream = encode_put(message()) + junk + encode_put(message())
    (err,) = errors(run(impl, stream, chunk_sizes(len(stream), random.Random(1), "random")))
    start = len(encode_put(message()))
    assert err[4] and err[3] == junk[:DEFAULT_MAX_RAW] and (err[1], err[2]) == (start, start + len(junk))


def test_error_codes_are_the_pure_ones():
    """The compiled framer's codes and limits are those of mqcodec.ibmmq.framing_errors."""
    _mod = compiled_core()
    for name, value in _mod.MQ_ERROR_CODES.items():
        assert getattr(framing_errors, name) == value, name
    assert set(_mod.MQ_ERROR_CODES) == {n for n in framing_errors.__all__ if n.isupper() and n not in (
        "HEADER_NAMES", "UNIT_STRUCTURES", "UNIT_FIELDS", "VERSIONS")}
    assert _mod.MQ_MAX_RAW == DEFAULT_MAX_RAW
    import inspect

    defaults = inspect.signature(MQStreamFramer).parameters
    assert _mod.MQ_MAX_MESSAGE_LENGTH == defaults["max_message_length"].default
    assert _mod.MQ_MAX_PENDING_BYTES == defaults["max_pending_bytes"].default
    assert _mod.MQ_MAX_OPEN_UNITS == defaults["max_pending_messages"].default


@pytest.mark.parametrize("seed", range(12))
def test_gaps_anywhere(impl, seed):
    """Bytes lost anywhere (inside headers, segments, multi-segment units,
    between segments): errors and resynchronisations, no unit with bytes
    that were not in the stream."""
    rnd = random.Random(seed)
    msgs = [message(data=bytes([c]) * rnd.randint(0, 2500)) for c in range(1, 7)]
    parts = [encode_put(m, conversation_id=c, max_segment_length=rnd.choice((None, 150, 400)))
             for c, m in enumerate(msgs, 1)]
    msgs.append(message(little=False, data=b"G" * 900))
    parts.append(encode_get_reply(msgs[-1], structid="TSH", max_segment_length=300))
    parts.append(encode_segments(0x01, b"\0" * 100, structid="TSH"))
    stream = interleave(parts, rnd)
    rows = run(impl, stream, gap_sizes(len(stream), rnd, rnd.randint(1, 4)))
    assert errors(rows) or resyncs(rows)
    assert all(r[2] in msgs for r in units(rows))


def test_gap_cases(impl):
    """Each branch of MQStreamFramer.gap: at a boundary, inside a header, inside
    a segment of known end (SKIP) ending before, at or after it, inside a
    multi-segment unit, while LOST, and at close in each state."""
    one = encode_put(message(data=b"x" * 500))
    multi = encode_put(message(data=b"y" * 900), max_segment_length=300)
    stream = one + one + multi + one + one
    n1, first, m = len(one), len(segments_of(multi)[0]), len(multi)
    b, c = 2 * n1, 2 * n1 + m        # where multi starts and ends
    cases = {   # name: (steps up to the end or the early close, the least errors)
        "boundary": ([n1, ("gap", n1)], 0),
        "inside_header": ([n1 + 5, ("gap", 20)], 2),
        "inside_skip_before_end": ([n1 + 100, ("gap", 50)], 1),
        "to_segment_end": ([n1 + 100, ("gap", n1 - 100)], 1),
        "past_segment_end": ([c + 100, ("gap", n1)], 2),
        "skip_then_gap": ([n1 + 100, ("gap", 50), 10, ("gap", 400)], 1),
        "multi_unit": ([b + first + 20, ("gap", m - first - 20)], 2),
        "lost_then_gap": ([n1 + 5, ("gap", 10), 2, ("gap", 5)], 3),
        "close_in_skip": ([n1 + 100, ("gap", 50)], 1),
        "close_lost": ([n1 + 5, ("gap", 10), 30], 2),
        "close_mid_segment": ([n1 + 100], 1),
        "close_open_unit": ([b + first + 10], 1),
    }
    for name, (steps, least) in cases.items():
        if not name.startswith("close"):
            used = sum(k if isinstance(k, int) else k[1] for k in steps)
            steps = steps + [len(stream) - used]
        rows = run(impl, stream, steps)
        assert len(errors(rows)) >= least, (name, rows)
        assert {r[2] for r in units(rows)} <= {message(data=b"x" * 500), message(data=b"y" * 900)}, name


def test_pmo_records_within_the_unit_are_skipped(impl):
    pmo = default_pmo("little", RecsPresent=2, PutMsgRecFields=0b10101, PutMsgRecOffset=1, ResponseRecOffset=1)
    recs = b"R" * (2 * (24 + 24 + 32) + 2 * 8)
    m = message(data=b"payload!")
    body = api() + m[:364] + pmo + recs + struct.pack("<i", 8) + b"payload!"
    stream = encode_segments(0x86, body, max_segment_length=150)
    assert [r[2] for r in all_chunkings(impl, stream)] == [m]


def test_od_version2_records(impl):
    od = b"OD  " + struct.pack("<i", 2) + b"\0" * 160 + struct.pack("<iiiiiiii", 2, 0, 0, 0, 1, 1, 0, 0)
    recs = b"o" * (2 * (96 + 8))
    m = message(data=b"put1 data")
    body = api() + od + recs + m[:364] + default_pmo("little") + struct.pack("<i", 9) + b"put1 data"
    stream = encode_segments(0x87, body) + encode_segments(0x97, api() + od + recs + m[:364])
    assert [r[2:4] for r in all_chunkings(impl, stream)] == [(m, "MQPUT1"), (m[:364], "MQPUT1_REPLY")]


def test_units_without_message_emit_nothing(impl):
    """MQGET without MQMD, ASYNC without MQMD, MESSAGE_DATA without MQXQH, MQPUT1_REPLY without MQOD."""
    stream = encode_segments(0x85, api() + b"\0" * 50) + \
        encode_segments(0x0D, struct.pack("<iiiiiHH", 1, 1, 0, 1, 0, 1, 0) + b"\0" * 40) + \
        encode_segments(0x04, b"no xqh here" * 5, structid="TSH") + \
        encode_segments(0x97, api() + b"\0" * 50) + encode_segments(0x95, api() + md_bytes()) + \
        encode_segments(0x96, api() + md_bytes() + b"not a pmo")
    assert [r[3] for r in all_chunkings(impl, stream)] == ["MQGET_REPLY", "MQPUT_REPLY"]


def test_get_reply_declaring_more_data_than_it_carries(impl):
    """MQGET_REPLY whose DataLength exceeds the bytes present: what is there
    is kept (a truncated get), no error."""
    stream = encode_get_reply(message(data=b"partial"), data_length=10 ** 6, max_segment_length=200)
    assert [r[2] for r in all_chunkings(impl, stream)] == [message(data=b"partial")]


def test_message_data_after_an_open_unit_of_another_type(impl):
    """A non-first MESSAGE_DATA while a unit of another type is open on the
    same key is a single unit (not a continuation)."""
    m = message(1)
    opener = encode_put(message(), split_points=[60], structid="TSH")
    segs = segments_of(opener)
    md = segments_of(encode_message_data(m))[0]
    for flags in (0, 0x20):
        alone = build_tsh(0x04, len(md), structid="TSH", ctl_flags1=flags) + md[28:]
        stream = segs[0] + alone + segs[1]
        assert [r[3] for r in all_chunkings(impl, stream)] == ["MESSAGE_DATA", "MQPUT"]


def test_md_only_rows(impl):
    """A unit that carries the MQMD but no data is md_only."""
    stream = encode_put_reply(message()) + encode_get_reply(message(data=b"")) + encode_put(message(data=b"")) + \
        encode_put(message(data=b"x"))
    assert [r[4] for r in all_chunkings(impl, stream)] == [True, True, True, False]


# ---------------------------------------------------------------------------
# generated messages
# ---------------------------------------------------------------------------
@st.composite
def mq_streams(draw):
    out = []
    for _ in range(draw(st.integers(1, 5))):
        name = draw(st.sampled_from(sorted(ENCODERS)))
        little = draw(st.booleans())
        version = 1 if name.startswith("message_data") else draw(st.sampled_from([1, 2]))
        data = draw(st.binary(max_size=700))
        m = message(version, little, data, fill=draw(st.integers(0, 255)))
        kw = {"byte_order": order(little)}
        if name != "message_data" and name != "message_data_nomsh":
            kw["structid"] = draw(st.sampled_from(["TSHM", "TSH"]))
        how = draw(st.sampled_from(["one", "max", "points"]))
        if how == "max":
            kw["max_segment_length"] = draw(st.integers(100, 800))
        elif how == "points" and name != "async":
            kw["split_points"] = draw(st.lists(st.integers(1, 1200), max_size=4))
        out.append(ENCODERS[name](m, **kw))
    return b"".join(out), len(out)


@SETTINGS
@given(built=mq_streams(), seed=st.integers(0, 2 ** 32))
def test_generated_streams(impl, built, seed):
    stream, n = built
    rows = run(impl, stream, chunk_sizes(len(stream), random.Random(seed), "random"))
    assert len(rows) == n and not errors(rows)


@SETTINGS
@given(built=mq_streams(), data=st.data())
def test_mutated_streams(impl, built, data):
    """Flipped, inserted, deleted bytes and truncation: never a crash, and
    the rows of any chunking."""
    b = bytearray(built[0])
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate", "length"]))
        if not b:
            break
        i = data.draw(st.integers(0, len(b) - 1))
        if op == "flip":
            b[i] ^= data.draw(st.integers(1, 255))
        elif op == "insert":
            b[i:i] = data.draw(st.binary(min_size=1, max_size=40))
        elif op == "delete":
            del b[i:i + data.draw(st.integers(1, 40))]
        elif op == "truncate":
            del b[i:]
        elif op == "length" and i + 8 <= len(b):
            b[i + 4:i + 8] = struct.pack(">I", data.draw(st.integers(0, 2000)))
    seed = data.draw(st.integers(0, 2 ** 32))
    run(impl, bytes(b), chunk_sizes(len(b), random.Random(seed), "random"))


def test_flags_and_types_exhaustive(impl):
    """Every CtlFlag1 FIRST/LAST combination for every message-bearing type,
    after an open unit of the same and of another type."""
    m = message(data=b"flags")
    count = 0
    for t in (0x04, 0x0D, 0x85, 0x86, 0x87, 0x95, 0x96, 0x97, 0x81, 0x09):
        for flags in (0, 0x10, 0x20, 0x30):
            for opener in (b"", encode_put(m, split_points=[50])[:36 + 50],
                           encode_message_data(message(1), max_segment_length=300)[:300]):
                body = encode_put(m)[36:]
                stream = opener + build_tsh(t, 36 + len(body), ctl_flags1=flags) + body + encode_put(m)
                run(impl, stream, [len(stream)])
                rows = run(impl, stream, [1] * len(stream))
                assert units(rows)[-1][1:3] == (len(stream) - len(encode_put(m)), m)
                count += 1
    assert count == 120


# ---------------------------------------------------------------------------
# captures: the real one and the simulator's
# ---------------------------------------------------------------------------
def mq_directions(source) -> dict:
    """(stream, direction) -> (first offset, [data chunks as captured]) for
    the TCP directions on port 1414 or starting with a TSH eye-catcher, up to
    the first gap."""
    from mqcodec.capture.stream import iter_capture_events
    from mqcodec.capture.tcp import Gap, StreamData

    dirs: dict = {}
    stopped = set()
    for ev in iter_capture_events(source):
        if isinstance(ev, Gap):
            stopped.add((ev.conn.stream, ev.direction))
        if not isinstance(ev, StreamData):
            continue
        key = (ev.conn.stream, ev.direction)
        if key in stopped:
            continue
        if key not in dirs:
            if 1414 not in (ev.conn.server_port, ev.conn.client_port) and ev.data[:3] != b"TSH":
                stopped.add(key)
                continue
            dirs[key] = (ev.offset, [])
        start, chunks = dirs[key]
        if start + sum(map(len, chunks)) != ev.offset:
            stopped.add(key)
            continue
        chunks.append(ev.data)
    return dirs


def test_real_capture_directions(impl):
    if not CAPTURE.is_file():
        pytest.fail("the shared capture is missing: %s" % CAPTURE)
    dirs = mq_directions(str(CAPTURE))
    assert dirs
    total = 0
    for key, (start, chunks) in sorted(dirs.items()):
        stream = b"".join(chunks)
        rows = run(impl, stream, [len(c) for c in chunks], start)
        run(impl, stream, [1] * len(stream), start)
        run(impl, stream, chunk_sizes(len(stream), random.Random(key[0]), "random"), start)
        total += len(units(rows))
    assert total == sum(sum(isinstance(e, Message) for e in pure_reference(b"".join(c), s))
                        for s, c in dirs.values())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_synth_capture_directions(impl, seed):
    from mqcodec import synth

    buf = io.BytesIO()
    synth.write_capture(buf, seed=seed, messages=60)
    buf.seek(0)
    dirs = mq_directions(buf)
    messages = 0
    for key, (start, chunks) in sorted(dirs.items()):
        rows = run(impl, b"".join(chunks), [len(c) for c in chunks], start)
        assert not errors(rows) and not resyncs(rows), key   # clean simulator traffic
        messages += len(rows)
    assert len(dirs) >= 4 and messages > 60


@pytest.mark.parametrize("seed", [5, 6])
def test_synth_capture_mutated(impl, seed):
    from mqcodec import synth

    buf = io.BytesIO()
    synth.write_capture(buf, seed=seed, messages=20)
    buf.seek(0)
    rnd = random.Random(seed)
    for key, (start, chunks) in sorted(mq_directions(buf).items()):
        b = bytearray(b"".join(chunks))
        for _ in range(3):
            i = rnd.randrange(len(b))
            b[i] ^= 1 << rnd.randrange(8)
        run(impl, bytes(b), chunk_sizes(len(b), rnd, "random"), start)
        run(impl, bytes(b[:rnd.randrange(len(b))]), [len(b)], start)


def test_segment_types_of_a_plausible_header_are_the_declared_ones():
    """The compiled resynchronisation (a plausible header after a gap) knows the
    segment types the pure framer does (tsh.SEGMENT_TYPES)."""
    from mqcodec.ibmmq.tsh import SEGMENT_TYPES

    assert sorted(compiled_core().MQ_SEGMENT_TYPE_CODES) == sorted(SEGMENT_TYPES)
