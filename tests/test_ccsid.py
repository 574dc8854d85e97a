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


# ---------------------------------------------------------------------------
# CCSIDs without a Python codec: ICU's converters (through PyICU), checked
# against Java's IBM charsets (the JDK's own tables, an implementation
# independent of ICU) and against Python's cp037 for the shared Latin part.

import shutil
import subprocess

from mqcodec.errors import DecodeWarning

CJK = {
    930: ("IBM930", "ﾃｽﾄ 日本語の文字 ABC 123"),       # Katakana SBCS part: no lower-case Latin
    939: ("IBM939", "Test 日本語の文字 abc 123"),
    933: ("IBM933", "Test 한국어 문자 123"),
    935: ("IBM935", "Test 简体中文字符 123"),
    937: ("IBM937", "Test 繁體中文字元 123"),
    1364: ("x-IBM1364", "Test 한국어 123"),
}

_JAVA = r"""
import java.nio.charset.Charset;
public class Oracle {
    static String hex(byte[] b) { StringBuilder s = new StringBuilder(); for (byte x : b) s.append(String.format("%02x", x)); return s.toString(); }
    public static void main(String[] a) throws Exception {
        java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, "UTF-8"));
        for (String line; (line = r.readLine()) != null; ) {
            String[] f = line.split("\t", -1);
            System.out.println(hex(f[1].getBytes(Charset.forName(f[0]))));
        }
    }
}
"""


@pytest.fixture(scope="module")
def java_encoded(tmp_path_factory):
    """{ccsid: the bytes Java's IBM charset encodes the sample text to}."""
    java = shutil.which("java")
    if java is None:
        pytest.skip("java not installed (make setup installs Java 17)")
    src = tmp_path_factory.mktemp("java") / "Oracle.java"
    src.write_text(_JAVA)
    lines = "".join("%s\t%s\n" % (name, text) for name, text in CJK.values())
    out = subprocess.run([java, str(src)], input=lines.encode("utf-8"), capture_output=True, check=True,
                         timeout=120).stdout.decode().split()
    return {cs: bytes.fromhex(h) for cs, h in zip(CJK, out)}


@pytest.mark.parametrize("cs", sorted(CJK))
def test_dbcs_ebcdic_decodes_and_encodes_as_java(java_encoded, cs):
    raw = java_encoded[cs]
    text = CJK[cs][1]
    assert b"\x0e" in raw and b"\x0f" in raw or cs == 1364   # shift-out / shift-in around the DBCS run
    assert ccsid.is_known(cs) and not ccsid.is_single_byte(cs)
    assert ccsid.decode_text(raw, cs) == text
    assert ccsid.encode_text(text, cs) == raw
    assert ccsid.encode_text(text, cs, len(raw) + 3) == raw + b"\x40" * 3   # padded with the EBCDIC blank


def test_939_kanji_one_and_the_1390_1399_supersets(java_encoded):
    # IBM-939 X'0E 4541 0F' is U+4E00 (Java's IBM939 says the same, checked in the fixture's language)
    assert ccsid.decode_text(b"\x0e\x45\x41\x0f", 939) == "\u4e00"
    assert ccsid.decode_text(b"\xc1\x0e\x45\x41\x0f\xc2", 930) == "A\u4e00B"
    # 1390/1399 extend 930/939 (the euro sign and more): Java has no charset for
    # them; they read 930/939 text the same way
    assert ccsid.decode_text(java_encoded[930], 1390) == CJK[930][1]
    assert ccsid.decode_text(java_encoded[939], 1399) == CJK[939][1]
    assert ccsid.decode_text(java_encoded[937], 937) == CJK[937][1]


def test_icu_single_byte_parts_agree_with_cp037():
    """The invariant EBCDIC characters (letters, digits, blank, common
    punctuation) are where cp037 has them in every EBCDIC page ICU converts."""
    invariant = bytes(range(0xC1, 0xCA)) + bytes(range(0xD1, 0xDA)) + bytes(range(0xE2, 0xEA)) + \
        bytes(range(0xF0, 0xFA)) + b"\x40\x4b\x4d\x4e\x50\x5c\x5d\x5e\x60\x61\x6b\x6c\x6d\x6e\x6f\x7a\x7e"
    for cs in (939, 1399, 420, 424, 870, 1026, 1112, 1122, 1123, 1153, 1154, 1155, 1156, 1157, 1158, 1160, 1164,
               4971):
        assert ccsid.decode_text(invariant, cs, trim=False) == invariant.decode("cp037"), cs
        assert ccsid.is_ebcdic(cs)


def test_icu_single_byte_tables_are_whole():
    for cs in ccsid.ICU_CONVERTERS:
        table = ccsid.single_byte_table(cs)
        if ccsid.is_single_byte(cs):
            assert len(table) == 256 and all(len(ch) == 1 for ch in table)
            # the table decodes a string as the converter does
            assert "".join(table) == ccsid.decode_text(bytes(range(256)), cs, trim=False)
        else:
            assert table is None


def test_single_byte_tables_are_each_bytes_own_decoding():
    """single_byte_table converts the 256 bytes at once: the same characters
    as decoding every byte alone, for every single-byte CCSID known (Python
    codecs and ICU), and the table is a fresh list each time."""
    known = sorted(c for c in set(ccsid.CCSID_CODECS) | set(ccsid.ICU_CONVERTERS) if ccsid.is_known(c))
    single = [cs for cs in known if ccsid.is_single_byte(cs)]
    assert len(single) > 40 and {37, 500, 819, 850, 1047, 1208} & set(single) == {37, 500, 819, 850, 1047}
    for cs in single:
        table = ccsid.single_byte_table(cs)
        assert table == [ccsid.decode_text(bytes([b]), cs, trim=False) for b in range(256)], cs
        table[0] = "changed"
        assert ccsid.single_byte_table(cs)[0] != "changed"


def test_unknown_ccsid_is_never_guessed():
    for cs in (0, -1, 4242, 65535):
        assert not ccsid.is_known(cs)
        with pytest.raises(ccsid.UnknownCCSID):
            ccsid.decode_text(b"\xc1", cs)
        warnings = []
        assert ccsid.decode_or_keep(b"\xc1\xc2", cs, warnings, "MQCFST", "String", 40) == b"\xc1\xc2"
        assert warnings == [DecodeWarning("MQCFST", "String", 40,
                                          "CCSID %d has no converter: the 2 bytes are kept undecoded" % cs)]
        with pytest.raises(EncodeError, match="no converter"):
            ccsid.encode_text("A", cs)
        assert ccsid.encode_text(b"\xc1", cs, 3) == b"\xc1\x00\x00"   # kept bytes go back as they were


def test_unmappable_character_is_an_encode_error_for_icu_too():
    with pytest.raises(EncodeError, match="CCSID 939"):
        ccsid.encode_text("\U0001F600", 939)


def test_tables_module_is_what_the_converters_give():
    """mqcodec.ccsid_tables (data, read by the compiled decoders at import) is
    exactly what ``python -m mqcodec.ccsid`` generates from the installed
    converters: a converter that changes shows here as a difference."""
    import pathlib

    from mqcodec import ccsid_tables

    assert pathlib.Path(ccsid_tables.__file__).read_text(encoding="utf-8") == ccsid.tables_source()
    assert set(ccsid_tables.SINGLE_BYTE) == {c for c in set(ccsid.CCSID_CODECS) | set(ccsid.ICU_CONVERTERS)
                                            if ccsid.is_single_byte(c)}


def test_converters_load_on_first_use():
    """Importing mqcodec.ccsid and a compiled decoder (which builds its tables
    from the data) loads neither the ebcdic package nor PyICU, nor does a
    conversion with a codec of the standard library; the first conversion
    that needs one loads it."""
    import subprocess
    import sys

    code = ("import sys, importlib, mqcodec.ccsid as c\n"
            "from mqcodec import _impl\n"
            "_impl.pick('mq_batch', None)\n"
            "print(sorted(m for m in ('ebcdic', 'icu') if m in sys.modules))\n"
            "c.decode_text(b'QM1', 819); c.decode_text(b'\\xc1', 500); c.encode_text('A', 37)\n"
            "print(sorted(m for m in ('ebcdic', 'icu') if m in sys.modules))\n"
            "c.decode_text(b'\\xc1', 1047); print(sorted(m for m in ('ebcdic', 'icu') if m in sys.modules))\n"
            "c.decode_text(b'\\xc1', 420); print(sorted(m for m in ('ebcdic', 'icu') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    # (the standard library's codecs, 819, 500, 37, load neither)
    assert out[:4] == ["[]", "[]", "['ebcdic']", "['ebcdic', 'icu']"]


@pytest.mark.parametrize("cs", sorted(set(ccsid.CCSID_CODECS) | set(ccsid.ICU_CONVERTERS)))
def test_text_decoder_is_decode_text_untrimmed(cs):
    """The decoder looked up once for many bodies (mqcodec.convert's body_text)
    decodes every byte value, trailing blanks and NULs kept, as decode_text does;
    it takes any buffer (the bodies are memoryview slices of a record buffer)."""
    raw = bytes(range(256)) + b"\x40\x40\x20\x20\x00"
    decode = ccsid.text_decoder(cs)
    assert decode(raw) == decode(memoryview(raw)) == ccsid.decode_text(raw, cs, trim=False)
    assert decode(b"") == ""
    with pytest.raises(ccsid.UnknownCCSID):
        ccsid.text_decoder(4242)
