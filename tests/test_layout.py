import construct as cs
import pytest

from mqcodec.errors import DecodeError
from mqcodec.layout import parse_at, field_offsets

DEMO = cs.Struct("StrucId" / cs.Const(b"ABCD"), "Version" / cs.Int32ub, "Length" / cs.Int32ub)


def test_offsets():
    assert field_offsets(DEMO) == {"StrucId": 0, "Version": 4, "Length": 8}


def test_parse_at_offset():
    c = parse_at(DEMO, b"xx" + b"ABCD" + (1).to_bytes(4, "big") + (9).to_bytes(4, "big"), 2, "DEMO")
    assert (c.Version, c.Length) == (1, 9)


def test_truncated_names_field_and_offset():
    with pytest.raises(DecodeError) as ei:
        parse_at(DEMO, b"xx" + b"ABCD" + b"\0\0\0\1" + b"\0", 2, "DEMO")
    e = ei.value
    assert (e.structure, e.field, e.offset) == ("DEMO", "Length", 10)


def test_bad_constant_names_field():
    with pytest.raises(DecodeError) as ei:
        parse_at(DEMO, b"ABCE" + bytes(8), 0, "DEMO")
    assert ei.value.field == "StrucId" and ei.value.offset == 0
