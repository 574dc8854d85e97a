"""CCSID table checked against facts about the code pages themselves."""
import pytest

from mqcodec import ccsid
from mqcodec.errors import EncodeError

# Every EBCDIC code page IBM MQ users meet: 0xC1 is 'A', 0x40 is blank, 0xF0 is '0'.
EBCDIC = [37, 273, 277, 278, 280, 284, 285, 297, 500, 871, 1047] + list(range(1140, 1150))
# Issue list of CCSIDs real queue managers use.
REQUIRED = [37, 273, 277, 278, 280, 284, 285, 297, 500, 819, 850, 437, 1047, 1051,
            *range(1140, 1150), 1200, 1208, 1252, 5348]


@pytest.mark.parametrize("cs", REQUIRED)
def test_required_ccsids_known(cs):
    assert ccsid.is_known(cs)


@pytest.mark.parametrize("cs", EBCDIC)
def test_ebcdic_invariants(cs):
    assert ccsid.decode_text(b"\xc1\xc2\xf0\x40\x40", cs) == "AB0"
    assert ccsid.blank_for(cs) == b"\x40"
    assert ccsid.is_ebcdic(cs)


def test_euro_differs_between_1140_family_and_037():
    # 1140 is 37 with the euro at 0x9F (where 37 has the currency sign).
    assert ccsid.decode_text(b"\x9f", 1140) == "\u20ac"
    assert ccsid.decode_text(b"\x9f", 37) == "\u00a4"
    # 1047 differs from 37 in the brackets: '[' is 0xAD in 1047, 0xBA in 37
    assert ccsid.decode_text(b"\xad", 1047) == "["
    assert ccsid.decode_text(b"\xba", 37) == "["


def test_ascii_family_and_unicode():
    assert ccsid.decode_text(b"QM1 \x00\x00", 819) == "QM1"
    assert ccsid.decode_text("é".encode("utf-8"), 1208) == "é"
    assert ccsid.decode_text("é".encode("utf-16-be"), 1200) == "é"
    assert ccsid.decode_text(b"\x80", 5348) == "\u20ac"
    assert not ccsid.is_ebcdic(819)


def test_untrimmed_and_padding():
    assert ccsid.decode_text(b"A  ", 819, trim=False) == "A  "
    assert ccsid.encode_text("AB", 500, 4) == b"\xc1\xc2\x40\x40"
    with pytest.raises(EncodeError):
        ccsid.encode_text("TOO LONG", 819, 4)
