"""The PCF batch decoder gives exactly what the pure codec gives, on both
implementations (``impl`` fixture: "c" and "py").

The reference is :func:`mqcodec.ibmmq.pcf.decode_pcf`, record by record:
a decoded record's tree (``PcfParameter.tree()``) and MQCFH, or the
``DecodeError`` (structure, field, offset, reason) it raised.  The batch
tables are read back into the same shape by :func:`observed` -- which
rebuilds the group trees from ``param_index``/``parent``/``depth`` and
checks that each parameter row fills exactly the value columns its Type
owns (the table in ``mqcodec.batch.schema``) -- and compared whole.
"""
from __future__ import annotations

import struct

import pyarrow as pa
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcodec.batch import decode_pcf_batch
from mqcodec.errors import DecodeError
from mqcodec.ibmmq.pcf import PcfMessage, PcfParameter, decode_pcf, encode_pcf

SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# value columns each structure Type sets (mqcodec.batch.schema's table)
COLUMNS_OF_TYPE = {
    3: {"int_value"}, 23: {"int_value"},
    5: {"count", "int_list"}, 25: {"count", "int_list"},
    4: {"ccsid", "string_value"},
    6: {"ccsid", "count", "string_list"},
    9: {"bytes_value"},
    20: {"count"},
    13: {"operator", "int_value"},
    14: {"operator", "ccsid", "string_value"},
    15: {"operator", "bytes_value"},
    8: {"bytes_value"},
}
VALUE_COLUMNS = ["int_value", "count", "operator", "ccsid", "string_value", "bytes_value",
                 "int_list", "string_list"]
CFH = ["Type", "StrucLength", "Version", "Command", "MsgSeqNumber", "Control", "CompCode",
       "Reason", "ParameterCount"]
HEADER_COLUMNS = ["encoding", "has_eph", *CFH, "parameters_end"]


# ---------------------------------------------------------------------------
# reference and observation
# ---------------------------------------------------------------------------

def reference(records, *, encoding=None, ccsid=None):
    out = []
    for data in records:
        if data is None:
            out.append(("error", ("record", "", 0, "null record"), None))
            continue
        data = bytes(data)
        try:
            msg = decode_pcf(data, encoding=encoding, ccsid=ccsid)
        except DecodeError as exc:
            out.append(("error", (exc.structure, exc.field, exc.offset, exc.reason), data))
            continue
        head = {"encoding": msg.encoding, "has_eph": msg.eph is not None,
                "parameters_end": len(data) - len(msg.trailing)}
        head.update({k: msg.cfh[k] for k in CFH})
        out.append(("ok", head, msg.tree()))
    return out


#: a string parameter in a CCSID without a converter (mqcodec.ccsid.UnknownCCSID):
#: decode_pcf keeps the bytes as the Value, the batch puts them in bytes_value
UNDECODED_COLUMNS = {4: {"ccsid", "bytes_value"}, 14: {"operator", "ccsid", "bytes_value"},
                     6: {"ccsid", "count", "bytes_value"}}


def _value(row: dict, children: list):
    t = row["Type"]
    want = COLUMNS_OF_TYPE[t]
    # told apart by the columns set; the reference tree (bytes vs str Value) checks it was right
    if t in UNDECODED_COLUMNS and row["bytes_value"] is not None:
        want = UNDECODED_COLUMNS[t]
        for col in VALUE_COLUMNS:
            assert (row[col] is not None) == (col in want), (col, row)
        if t == 6:
            n, b = row["count"], row["bytes_value"]
            size = len(b) // n if n else 0
            return tuple(b[i * size:(i + 1) * size] for i in range(n))
        return row["bytes_value"]
    for col in VALUE_COLUMNS:
        assert (row[col] is not None) == (col in want), (col, row)
    if t == 20:
        assert row["count"] == len(children)
        return children
    if "int_list" in want:
        assert row["count"] == len(row["int_list"])
        return tuple(row["int_list"])
    if "string_list" in want:
        assert row["count"] == len(row["string_list"])
        return tuple(row["string_list"])
    for col in ("string_value", "bytes_value", "int_value"):
        if col in want:
            return row[col]
    raise AssertionError(row)


def _freeze(node):
    t, param, op, cs, value, children = node
    if t == 20:
        value = tuple(_freeze(c) for c in children)
    return (t, param, op, cs, value)


def observed(batch):
    h = batch.headers.to_pylist()
    rows_by_record: dict[int, list] = {}
    for row in batch.parameters.to_pylist():
        rows_by_record.setdefault(row["record"], []).append(row)
    out = []
    for i, hr in enumerate(h):
        assert hr["record"] == i
        rows = rows_by_record.pop(i, [])
        if hr["error_structure"] is not None:
            assert rows == [], "a failed record has parameter rows"
            assert all(hr[c] is None for c in HEADER_COLUMNS), hr
            out.append(("error", (hr["error_structure"], hr["error_field"], hr["error_offset"],
                                  hr["error_reason"]), hr["raw"]))
            continue
        assert hr["raw"] is None and hr["error_field"] is None and hr["error_offset"] is None
        nodes: list = []
        top: list = []
        for k, row in enumerate(rows):
            assert row["param_index"] == k
            children: list = []
            node = [row["Type"], row["Parameter"], row["operator"], row["ccsid"], None, children]
            nodes.append((node, row))
            if row["parent"] == -1:
                assert row["depth"] == 0
                top.append(node)
            else:
                pnode, prow = nodes[row["parent"]]
                assert prow["Type"] == 20 and row["depth"] == prow["depth"] + 1
                pnode[5].append(node)
        for node, row in nodes:
            node[4] = _value(row, node[5]) if row["Type"] != 20 else None
            if row["Type"] == 20:
                assert row["count"] == len(node[5])
        head = {c: hr[c] for c in HEADER_COLUMNS}
        out.append(("ok", head, tuple(_freeze(n) for n in top)))
    assert not rows_by_record, "parameter rows of unknown records"
    return out


def check(records, impl, **kw):
    batch = decode_pcf_batch(list(records), impl=impl, **kw)
    assert batch.headers.num_rows == len(records)
    got, want = observed(batch), reference(records, **kw)
    for i, (g, w) in enumerate(zip(got, want)):
        # one record at a time: a readable failure names the record
        assert g == w, "record %d %r (%s): got %s, want %s" % (
            i, None if records[i] is None else bytes(records[i][:48]), kw, _short(g), _short(w))
    assert len(got) == len(want)
    return batch


def _short(entry):
    text = repr(entry)
    return text if len(text) < 600 else text[:600] + "..."


# ---------------------------------------------------------------------------
# building messages
# ---------------------------------------------------------------------------

CCSIDS = [0, 819, 1208, 37, 500, 1047, 1140, 1200]
HEADER_TYPES = [1, 2, 7, 8, 10, 12, 16, 17, 18, 19, 21, 22, 26, 27]
EBCDIC_EPH = b"\xc5\xd7\xc8\x40"

i32 = st.integers(-2 ** 31, 2 ** 31 - 1)
i64 = st.integers(-2 ** 63, 2 ** 63 - 1)
SBCS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcxyz0123456789 ._-*/éüßÀ"


def _text(ccsid):
    if ccsid in (1200, 1208):
        return st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
    return st.text(st.sampled_from(SBCS), max_size=12)


@st.composite
def _string_param(draw, msg_ccsid, kind):
    cs = draw(st.sampled_from(CCSIDS))
    eff = cs or msg_ccsid
    if kind == "st":
        return PcfParameter.string(draw(i32), draw(_text(eff)), cs)
    if kind == "sf":
        return PcfParameter.string_filter(draw(i32), draw(i32), draw(_text(eff)), cs)
    return PcfParameter.string_list(draw(i32), draw(st.lists(_text(eff), max_size=4)), cs)


def parameters(msg_ccsid):
    leaves = st.one_of(
        st.builds(PcfParameter.integer, i32, i32),
        st.builds(PcfParameter.integer64, i32, i64),
        st.builds(PcfParameter.integer_list, i32, st.lists(i32, max_size=5)),
        st.builds(PcfParameter.integer64_list, i32, st.lists(i64, max_size=5)),
        st.builds(PcfParameter.byte_string, i32, st.binary(max_size=12)),
        st.builds(PcfParameter.integer_filter, i32, i32, i32),
        st.builds(PcfParameter.byte_string_filter, i32, i32, st.binary(max_size=12)),
        st.builds(PcfParameter.user, i32, st.binary(max_size=12)),
        _string_param(msg_ccsid, "st"),
        _string_param(msg_ccsid, "sf"),
        _string_param(msg_ccsid, "sl"),
    )
    return st.recursive(leaves, lambda kids: st.builds(PcfParameter.group, i32, st.lists(kids, max_size=4)),
                        max_leaves=10)


@st.composite
def messages(draw):
    """(bytes, encoding, ccsid) of a valid PCF message (MQCFH or MQEPH first)."""
    msg_ccsid = draw(st.sampled_from([c for c in CCSIDS if c]))
    enc = draw(st.sampled_from([273, 546]))
    params = draw(st.lists(parameters(msg_ccsid), max_size=5))
    kind = draw(st.sampled_from(["cfh", "cfh", "eph", "eph-ebcdic"]))
    eph = None
    if kind != "cfh":
        eph = {"Encoding": draw(i32), "CodedCharSetId": draw(i32), "Format": "MQSTR   ", "Flags": draw(i32)}
    msg = PcfMessage.new(draw(st.sampled_from(HEADER_TYPES)), draw(i32), params,
                         Version=draw(st.integers(1, 3)), MsgSeqNumber=draw(i32), Control=draw(i32),
                         CompCode=draw(i32), Reason=draw(i32), encoding=enc, ccsid=msg_ccsid, eph=eph,
                         trailing=draw(st.binary(max_size=6)))
    data = encode_pcf(msg)
    if kind == "eph-ebcdic":
        data = EBCDIC_EPH + data[4:]
    return data, enc, msg_ccsid


def decode_options(enc, msg_ccsid):
    return st.fixed_dictionaries({
        "encoding": st.sampled_from([None, None, enc]),
        "ccsid": st.sampled_from([None, msg_ccsid, 37, 1208]),
    })


def _fixed_messages():
    """A few hand-built messages covering every structure, both byte orders
    and both MQEPH StrucIds (used for exhaustive truncation)."""
    def params():
        return [
            PcfParameter.integer(1, -5),
            PcfParameter.string(2015, "QM1 é", 0),
            PcfParameter.string(3, "EBCDIC", 500),
            PcfParameter.integer64(4, -2 ** 40),
            PcfParameter.integer_list(5, [1, -1, 2 ** 31 - 1]),
            PcfParameter.integer64_list(6, [-(2 ** 63), 2 ** 63 - 1]),
            PcfParameter.string_list(7, ["A", "BB ", ""], 1208),
            PcfParameter.byte_string(8, b"\x00\x01\x02"),
            PcfParameter.group(9, [PcfParameter.integer_filter(10, 4, 0),
                                   PcfParameter.string_filter(11, 18, "test*", 0),
                                   PcfParameter.group(12, [PcfParameter.byte_string_filter(13, 1, b"\xff")])]),
            PcfParameter.user(14, b"opaque!"),
            PcfParameter.string(15, "Grüße", 1200),
        ]
    out = []
    for enc in (273, 546):
        out.append(encode_pcf(PcfMessage.new(21, 165, params(), encoding=enc)))
        eph = encode_pcf(PcfMessage.new(7, 99, params(), encoding=enc,
                                        eph={"Encoding": enc, "CodedCharSetId": 1208, "Format": "MQSTR"},
                                        trailing=b"user data"))
        out.append(eph)
        out.append(EBCDIC_EPH + eph[4:])
    return out


FIXED = _fixed_messages()


def truncations(data: bytes, *, every: int = 1):
    return [data[:i] for i in range(0, len(data) + 1, every)]


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------

def test_vectors_equal_the_tree(impl, vectors):
    records = [p.read_bytes() for p in sorted((vectors / "ibmmq").glob("*.dat"))]
    assert len(records) == 2
    check(records, impl)
    check(records, impl, encoding=546)          # MQENC_NATIVE on x86: the vectors' byte order
    check(records, impl, encoding=273)          # the wrong one: errors must agree too
    check(records, impl, ccsid=37)


def test_fixed_messages(impl):
    check(FIXED, impl)
    check(FIXED, impl, ccsid=1140)
    for f in FIXED:
        assert decode_pcf(f) is not None  # they are valid


def test_truncated_at_every_byte(impl, vectors):
    records = []
    for f in FIXED:
        records += truncations(f)
    cfif = (vectors / "ibmmq" / "pcf_with_cfif.dat").read_bytes()
    records += truncations(cfif)
    stats = (vectors / "ibmmq" / "statistics_q.dat").read_bytes()
    records += [stats[:i] for i in list(range(0, 400)) + list(range(400, len(stats) - 200, 97))
                + list(range(len(stats) - 200, len(stats) + 1))]
    check(records, impl)
    check(records[:2000], impl, encoding=546)


def _special_values(old: int, size: int):
    return [-1, 0, 1, 3, 12, 2 ** 31 - 1, -2 ** 31, 0x40000000, size, old + 1, old + 4, old - 4, old * 2 + 1]


def test_lengths_and_counts_set_to_hostile_values(impl):
    """Every 4-byte-aligned field of the fixed messages (StrucLength, Count,
    StringLength, ParameterCount, ...) set to -1, huge, slightly too big."""
    records = []
    for data in (FIXED[0], FIXED[2], FIXED[4]):   # BE MQCFH, BE EBCDIC MQEPH, LE MQEPH
        order = "<" if decode_pcf(data).encoding == 546 else ">"
        for off in range(0, len(data) - 3, 4):
            (old,) = struct.unpack_from(order + "i", data, off)
            for v in _special_values(old, len(data)):
                v = (v + 2 ** 31) % 2 ** 32 - 2 ** 31
                records.append(data[:off] + struct.pack(order + "i", v) + data[off + 4:])
    check(records, impl)


def test_header_type_decides_the_byte_order(impl):
    """Neither StrucLength nor Version plausible: only MQCFH.Type tells."""
    records = [struct.pack("<9i", t, 7, 0, 0, 0, 0, 0, 0, 0) for t in range(-1, 32)]
    records += [struct.pack(">9i", t, 36, 9, 0, 0, 0, 0, 0, 0) for t in range(-1, 32)]
    check(records, impl)


def test_eph_byte_order_detection_branches(impl):
    """MQEPH Version decides the byte order when it is 1 in exactly one
    order; otherwise the MQCFH after it (or, when too short, the bytes at 0)
    decide: every Version x every length up to 80 bytes."""
    records = []
    for data in FIXED:
        if data[:4] not in (b"EPH ", EBCDIC_EPH):
            continue
        for version in (b"\x00\x00\x00\x01", b"\x01\x00\x00\x00", b"\x00\x00\x00\x02",
                        b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"\x01\x00\x00\x01"):
            mutated = data[:4] + version + data[8:]
            records += [mutated[:i] for i in range(0, 81)] + [mutated]
    check(records, impl)
    check(records, impl, encoding=546)


def test_string_edge_cases(impl):
    """Empty MQCFSL strings (bounded by the input size), odd-length UTF-16,
    invalid UTF-8, unknown and negative CCSIDs, blanks and NULs."""
    def cfh(count):
        return struct.pack(">9i", 1, 36, 3, 1, 1, 1, 0, 0, count)

    def cfst(cs, raw):
        pad = b"\x00" * (-len(raw) % 4)
        return struct.pack(">5i", 4, 20 + len(raw) + len(pad), 1, cs, len(raw)) + raw + pad

    records = []
    for count in (0, 1, 100, 151, 152, 153, 2 ** 31 - 1):
        body = struct.pack(">6i", 6, 24, 2, 0, count, 0)
        records.append(cfh(1) + body)
    for cs in (1200, 1202, 1208, 13488, 0, -1, -2, 1, 4242, 37, 500, 1047, 1140, 819, 943, 5348):
        for raw in (b"", b"A", b"AB ", b"\x00\x41\x00", b"\xc3\xa9  ", b"\xff\xfe\xfd", b"a\x00b\x00\x00",
                    b"\x40\x40", b"\xd8\x00\x00\x41", "Grüße".encode("utf-16-be") + b"\x00"):
            records.append(cfh(1) + cfst(cs, raw))
    check(records, impl)
    check(records, impl, ccsid=0)
    check(records, impl, ccsid=-1)
    check(records, impl, ccsid=1200)


def test_nesting_bound(impl):
    """Groups nest at most MAX_GROUP_DEPTH (64) deep: 64 nested MQCFGR decode
    (their MQCFIN sits at depth 64), 65 do not (raw bytes: the encoder
    refuses them)."""
    from mqcodec.ibmmq.pcf import MAX_GROUP_DEPTH

    def nested(levels):
        body = b"".join(struct.pack(">4i", 20, 16, i, 1) for i in range(levels))
        return struct.pack(">9i", 1, 36, 3, 1, 1, 1, 0, 0, 1) + body + struct.pack(">4i", 3, 16, 1, 1)

    batch = check([nested(MAX_GROUP_DEPTH), nested(MAX_GROUP_DEPTH + 1)], impl)
    assert batch.parameters.column("depth").to_pylist()[-1] == MAX_GROUP_DEPTH
    h = batch.headers.to_pylist()
    assert h[0]["error_structure"] is None
    assert (h[1]["error_structure"], h[1]["error_offset"]) == ("MQCFGR", 36 + 16 * MAX_GROUP_DEPTH)


def test_null_empty_large_and_sliced_inputs(impl):
    recs = [FIXED[0], None, b"", FIXED[1], None, FIXED[2]]
    arr = pa.array(recs, pa.binary())
    want = reference(recs)
    assert observed(decode_pcf_batch(arr, impl=impl)) == want
    assert observed(decode_pcf_batch(arr.cast(pa.large_binary()), impl=impl)) == want
    for start in range(len(recs)):
        for stop in range(start, len(recs) + 1):
            got = decode_pcf_batch(arr.slice(start, stop - start), impl=impl)
            assert observed(got) == want[start:stop]
    chunked = pa.chunked_array([arr.slice(0, 2), arr.slice(2, 0), arr.slice(2)])
    assert observed(decode_pcf_batch(chunked, impl=impl)) == want
    assert observed(decode_pcf_batch([], impl=impl)) == []
    assert observed(decode_pcf_batch(pa.array([], pa.binary()), impl=impl)) == []
    assert observed(decode_pcf_batch(pa.chunked_array([], pa.binary()), impl=impl)) == []
    assert observed(decode_pcf_batch(pa.array([None, None], pa.binary()), impl=impl)) == want[1:2] * 2


@SETTINGS
@given(st.lists(messages(), min_size=1, max_size=3), st.data())
def test_generated_messages(impl, msgs, data):
    records = [m[0] for m in msgs]
    kw = data.draw(decode_options(msgs[0][1], msgs[0][2]))
    check(records, impl, **kw)


@st.composite
def mutated(draw):
    data, enc, cs = draw(messages())
    b = bytearray(data)
    order = "<" if enc == 546 else ">"
    for _ in range(draw(st.integers(1, 3))):
        if len(b) < 4:
            break
        off = draw(st.integers(0, (len(b) - 4) // 4)) * 4
        how = draw(st.sampled_from(["flip", "value", "delta"]))
        if how == "flip":
            b[off + draw(st.integers(0, 3))] ^= draw(st.integers(1, 255))
        else:
            (old,) = struct.unpack_from(order + "i", b, off)
            v = draw(st.sampled_from(_special_values(old, len(b)))) if how == "value" else old + draw(
                st.integers(-8, 8))
            b[off:off + 4] = struct.pack(order + "i", (v + 2 ** 31) % 2 ** 32 - 2 ** 31)
    cut = draw(st.one_of(st.none(), st.integers(0, len(b))))
    return bytes(b if cut is None else b[:cut]), enc, cs


@SETTINGS
@given(st.lists(mutated(), min_size=1, max_size=3), st.data())
def test_mutated_messages(impl, msgs, data):
    records = [m[0] for m in msgs]
    kw = data.draw(decode_options(msgs[0][1], msgs[0][2]))
    check(records, impl, **kw)


@SETTINGS
@given(st.lists(st.one_of(st.none(), st.binary(max_size=80)), max_size=6))
def test_random_bytes(impl, records):
    check(records, impl)


def test_c_and_py_tables_are_identical(vectors):
    """Beyond the tree comparison: the two implementations' Arrow tables are
    equal column for column (types, nulls, values)."""
    from mqcodec import batch

    if batch.IMPLEMENTATION != "c":
        if os.environ.get("CI"):
            pytest.fail("the compiled core must be built in CI")
        pytest.skip("the compiled core is not built (or MQCODEC_PURE=1)")
    records = [p.read_bytes() for p in sorted((vectors / "ibmmq").glob("*.dat"))] + FIXED
    records += truncations(FIXED[2], every=3) + [None, b""]
    for kw in ({}, {"encoding": 273}, {"ccsid": 500}):
        c = decode_pcf_batch(records, impl="c", **kw)
        p = decode_pcf_batch(records, impl="py", **kw)
        assert c.headers.schema == p.headers.schema and c.parameters.schema == p.parameters.schema
        assert c.headers.equals(p.headers)
        assert c.parameters.equals(p.parameters)
