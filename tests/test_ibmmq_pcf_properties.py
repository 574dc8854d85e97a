"""Property tests of the PCF codec: random trees of every parameter type, of
any (bounded) depth, in both byte orders and several CCSIDs, round-trip
exactly; random and mutated bytes raise DecodeError and nothing else."""
from __future__ import annotations

import os
import struct

import construct as cs
from hypothesis import HealthCheck, given, settings, strategies as st

from mqcodec.errors import DecodeError
from mqcodec.ibmmq import pcf
from mqcodec.ibmmq.pcf import PcfMessage, PcfParameter as P, decode_pcf, decode_pcf_at

# MQCODEC_PCF_EXAMPLES=2500 for a longer hunt (2500 passed when written)
SETTINGS = settings(max_examples=int(os.environ.get("MQCODEC_PCF_EXAMPLES", "150")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

CCSIDS = [819, 1208, 37, 500, 1047, 1140]
# characters every one of those code pages has (EBCDIC invariant set)
SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-/ "
MQCFOP = [1, 2, 3, 4, 5, 6, 10, 13, 18, 21, 26, 29]  # cmqcfc.h "Filter Operators"
ENCODINGS = [273, 546]  # MQENC_NATIVE big-endian, little-endian

int32 = st.integers(-2 ** 31, 2 ** 31 - 1)
int64 = st.integers(-2 ** 63, 2 ** 63 - 1)
pid = st.integers(1, 9999)
text = st.text(alphabet=SAFE, max_size=24).map(lambda s: s.rstrip())
field_ccsid = st.sampled_from([0] + CCSIDS)

leaves = st.one_of(
    st.builds(P.integer, pid, int32),
    st.builds(P.integer64, pid, int64),
    st.builds(P.integer_list, pid, st.lists(int32, max_size=6)),
    st.builds(P.integer64_list, pid, st.lists(int64, max_size=6)),
    st.builds(P.string, pid, text, field_ccsid),
    st.builds(P.string_list, pid, st.lists(text, max_size=5), field_ccsid),
    st.builds(P.byte_string, pid, st.binary(max_size=20)),
    st.builds(P.integer_filter, pid, st.sampled_from(MQCFOP), int32),
    st.builds(P.string_filter, pid, st.sampled_from(MQCFOP), text, field_ccsid),
    st.builds(P.byte_string_filter, pid, st.sampled_from(MQCFOP), st.binary(max_size=20)),
    st.builds(P.user, pid, st.binary(max_size=16)),
)
trees = st.recursive(leaves, lambda kids: st.builds(P.group, st.integers(8001, 8017), st.lists(kids, max_size=4)),
                     max_leaves=25)
messages = st.builds(
    lambda params, enc, ccsid, t, cmd: PcfMessage.new(t, cmd, params, encoding=enc, ccsid=ccsid),
    st.lists(trees, max_size=6), st.sampled_from(ENCODINGS), st.sampled_from(CCSIDS),
    st.sampled_from([1, 2, 7, 10, 12, 21, 22]), st.integers(0, 220))


@SETTINGS
@given(messages)
def test_round_trip(msg):
    data = msg.encode()
    # detection finds the byte order the tree was encoded in
    back = decode_pcf(data, ccsid=msg.ccsid)
    assert back.encoding == msg.encoding
    assert back.tree() == msg.tree()
    assert back.trailing == b"" and not back.warnings
    assert back.encode() == data
    # every structure starts where the previous one ended, and strings with
    # CodedCharSetId 0 use the message's CCSID
    pos = 36
    for p in back.walk_parameters():
        assert p.offset == pos
        pos += p.StrucLength
        if p.Type in (4, 6, 14):
            assert p.ccsid == (p.CodedCharSetId or msg.ccsid)
            if p.Type != 6:
                assert p.StrucLength % 4 == 0
    assert pos == len(data)


@SETTINGS
@given(messages, st.binary(max_size=8))
def test_round_trip_inside_mqeph(msg, user_data):
    msg.eph = {"StrucId": "EPH ", "Version": 1, "StrucLength": 0, "Encoding": 546,
               "CodedCharSetId": 1208, "Format": "MQSTR   ", "Flags": 0}
    msg.trailing = user_data
    data = msg.encode()
    back = decode_pcf(data, encoding=msg.encoding, ccsid=msg.ccsid)
    assert back.tree() == msg.tree() and back.trailing == user_data
    assert back.eph["StrucLength"] == len(data) - len(user_data)
    assert back.encode() == data
    prefix = b"\x00" * 5
    m2, nxt = decode_pcf_at(prefix + data, 5, encoding=msg.encoding, ccsid=msg.ccsid)
    assert nxt == 5 + back.eph["StrucLength"]


def _only_decode_errors(data, **kw):
    try:
        msg = decode_pcf(data, **kw)
    except DecodeError as e:
        assert 0 <= e.offset <= len(data)
        return
    # whatever decodes re-encodes to the very same bytes
    assert msg.encode() == data


@SETTINGS
@given(st.binary(max_size=300), st.sampled_from([None, 273, 546]), st.booleans())
def test_random_bytes(data, enc, lenient):
    _only_decode_errors(data, encoding=enc, lenient=lenient)


@SETTINGS
@given(messages, st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1, max_size=6),
       st.booleans(), st.integers(0, 10 ** 6))
def test_mutated_bytes(msg, edits, lenient, cut):
    if cut % 3 == 0:  # sometimes inside an MQEPH with user data after it
        msg.eph = {"StrucId": "EPH ", "Version": 1, "StrucLength": 0, "Encoding": 273,
                   "CodedCharSetId": 819, "Format": "MQSTR   ", "Flags": 0}
        msg.trailing = b"user"
    data = bytearray(msg.encode())
    for where, value in edits:
        data[where % len(data)] = value
    data = bytes(data)
    _only_decode_errors(data, encoding=msg.encoding, lenient=lenient)
    _only_decode_errors(data[: cut % (len(data) + 1)], encoding=msg.encoding, lenient=lenient)


@SETTINGS
@given(st.sampled_from(sorted(pcf.DECLARATIONS[">"])), st.sampled_from([">", "<"]), st.data())
def test_fast_reader_matches_construct(name, order, data):
    """The struct-based reader used on the hot path reads exactly what the
    construct declaration reads (the declaration is the source of truth)."""
    decl = pcf.DECLARATIONS[order][name]
    raw = data.draw(st.binary(min_size=decl.sizeof(), max_size=decl.sizeof()))
    parsed = decl.parse(raw)
    flat = {}
    for k, v in parsed.items():
        if k.startswith("_"):
            continue
        if isinstance(v, cs.Container):
            flat.update({"%s.%s" % (k, kk): vv for kk, vv in v.items() if not kk.startswith("_")})
        else:
            flat[k] = v
    fast = pcf._FIXED[order][name]
    assert fast.read(raw, 0) == flat
    assert fast.write(flat) == raw == decl.build(parsed)


@SETTINGS
@given(st.integers(0, 2 ** 31 - 1), st.sampled_from([">", "<"]))
def test_parameter_count_never_loops_past_the_bytes(count, order):
    data = struct.pack(order + "9l", 1, 36, 1, 13, 1, 1, 0, 0, count) + struct.pack(order + "4l", 3, 16, 1, 2)
    enc = 273 if order == ">" else 546
    try:
        msg = decode_pcf(data, encoding=enc)
    except DecodeError as e:
        assert (e.structure, e.offset) in {("MQCFH", 32), ("PCFParameter", 52)}
        return
    assert count in (0, 1) and len(msg.parameters) == count
