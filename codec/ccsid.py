"""Coded character set identifiers (CCSIDs) and their converters.

IBM MQ tags every string with a CCSID; this module is the one place that maps
them to converters, in two tables:

* :data:`CCSID_CODECS`: CCSIDs with a Python codec (the standard library,
  plus the EBCDIC code pages 1047, 277, 278, 280, 284, 285, 297, 1141-1149
  that the ``ebcdic`` package registers when imported here);
* :data:`ICU_CONVERTERS`: the code pages Python has no codec for -- the
  mixed SBCS/DBCS EBCDIC pages of Japanese, Korean and Chinese queue
  managers (930, 939, 1390, 1399, 5026, 5035, 933, 1364, 935, 1388, 937,
  1371), the other national EBCDIC pages (420, 424, 838, 870, 1026,
  1112, 1122, 1123, 1153-1158, 1160, 1164, 4971) and a few
  ASCII-based CJK pages -- converted by ICU, the maintained converter
  library, through PyICU (Debian ``libicu-dev`` + PyPI ``pyicu``; see
  docs/architecture.md).  ICU's converters handle the shift-out (0x0E) /
  shift-in (0x0F) state of the mixed pages.

Rules shared by every decoder:

* decoded CHAR values have trailing blanks (U+0020) and NULs removed; the
  raw bytes stay with the decoded object so that encoding is exact;
* an undecodable byte never raises: it decodes with the converter's
  substitution character (U+FFFD for Python's codecs; ICU's EBCDIC
  converters give U+001A SUB) and the raw bytes remain authoritative;
* a CCSID in neither table is never guessed (it used to decode as latin-1):
  :func:`decode_text` raises :class:`UnknownCCSID`, and the decoders keep the
  bytes as ``bytes`` with a :class:`~mqcodec.errors.DecodeWarning` naming the
  structure, field and offset (:func:`decode_or_keep`).
"""
from __future__ import annotations

import codecs
from importlib.util import find_spec
from typing import Any, Optional, Union

from .errors import DecodeWarning, EncodeError, MQCodecError

# The converters are loaded on first use, not at import: the ``ebcdic`` package
# (it registers cp1047, cp277, cp1141..cp1149, ...) when a codec is not found,
# PyICU (a dependency in pyproject; without it the ICU_CONVERTERS
# CCSIDs are unknown) before the first ICU one.  The single-byte tables the
# compiled decoders read are data (:mod:`mqcodec.ccsid_tables`), so a process
# that decodes no text through a converter loads neither.
_ICU_INSTALLED = find_spec("icu") is not None
_icu: Any = None
_ebcdic_registered = False


def _python_codecs() -> None:
    """Register the ``ebcdic`` package's codecs (once)."""
    global _ebcdic_registered
    if not _ebcdic_registered:
        import ebcdic  # noqa: F401  (registers its codecs when imported)

        _ebcdic_registered = True


def _icu_module() -> Any:
    global _icu
    if _icu is None:
        import icu

        _icu = icu
    return _icu

__all__ = ["CCSID_CODECS", "ICU_CONVERTERS", "UnknownCCSID", "codec_for", "decode_text", "text_decoder", "decode_or_keep",
           "encode_text", "blank_for", "is_known", "is_single_byte", "is_ebcdic", "single_byte_table",
           "converter_table", "tables_source"]

#: CCSID -> Python codec name.  Values checked in tests/test_ccsid.py against
#: the code pages' defining characters (e.g. 0xC1 is "A" in every EBCDIC page).
CCSID_CODECS: dict[int, str] = {
    # EBCDIC
    37: "cp037",
    273: "cp273",
    277: "cp277",
    278: "cp278",
    280: "cp280",
    284: "cp284",
    285: "cp285",
    297: "cp297",
    500: "cp500",
    871: "cp871",
    875: "cp875",
    1025: "cp1025",
    1047: "cp1047",
    1140: "cp1140",
    1141: "cp1141",
    1142: "cp1142",
    1143: "cp1143",
    1144: "cp1144",
    1145: "cp1145",
    1146: "cp1146",
    1147: "cp1147",
    1148: "cp1148",
    1149: "cp1149",
    # ASCII families
    367: "ascii",
    437: "cp437",
    819: "latin-1",
    850: "cp850",
    852: "cp852",
    858: "cp858",
    912: "iso8859-2",
    923: "iso8859-15",
    1051: "hp_roman8",
    1250: "cp1250",
    1251: "cp1251",
    1252: "cp1252",
    1253: "cp1253",
    1254: "cp1254",
    5348: "cp1252",  # Windows-1252 with the euro sign (which cp1252 has)
    # Unicode
    1200: "utf-16-be",
    1202: "utf-16-le",
    1208: "utf-8",
    13488: "utf-16-be",
    17584: "utf-16-be",
    # CJK
    932: "cp932",
    943: "cp932",
    954: "euc_jp",
    33722: "euc_jp",
    1381: "gbk",
    1386: "gbk",
    5488: "gb18030",
    949: "cp949",
    950: "big5",
}

#: CCSID -> ICU converter name, for the code pages Python has no codec for.
#: Checked in tests/test_ccsid.py against published mappings (IBM-939
#: 0x0E 0x45 0x41 0x0F is U+4E00, the single-byte parts against cp037, ...).
ICU_CONVERTERS: dict[int, str] = {
    # Japanese EBCDIC, mixed SBCS/DBCS (SO 0x0E / SI 0x0F): Katakana (930, 5026,
    # 1390) and Latin (939, 5035, 1399) single-byte parts; 290 the Katakana SBCS
    290: "ibm-290", 930: "ibm-930", 939: "ibm-939", 1390: "ibm-1390", 1399: "ibm-1399",
    5026: "ibm-5026", 5035: "ibm-5035",
    # Korean EBCDIC (933, 1364), Simplified Chinese EBCDIC (935, 1388),
    # Traditional Chinese EBCDIC (937, 1371)
    933: "ibm-933", 1364: "ibm-1364", 935: "ibm-935", 1388: "ibm-1388", 937: "ibm-937", 1371: "ibm-1371",
    # single-byte EBCDIC without a Python codec: Arabic, Hebrew, Thai, Latin-2,
    # Turkish, Farsi, Baltic, Estonian, Ukrainian, Greek, the euro updates
    420: "ibm-420", 424: "ibm-424", 838: "ibm-838", 870: "ibm-870", 1026: "ibm-1026", 1097: "ibm-1097",
    1112: "ibm-1112", 1122: "ibm-1122", 1123: "ibm-1123", 4971: "ibm-4971",
    1153: "ibm-1153", 1154: "ibm-1154", 1155: "ibm-1155", 1156: "ibm-1156", 1157: "ibm-1157",
    1158: "ibm-1158", 1160: "ibm-1160", 1164: "ibm-1164",
    # ASCII-based CJK pages without a Python codec: EUC-KR (970), EUC-TW (964),
    # Korean Windows (1363), Big5-HKSCS (1375)
    970: "ibm-970", 964: "ibm-964", 1363: "ibm-1363", 1375: "ibm-1375",
}

#: ICU converters whose every byte is one character (a 256-entry table decodes them)
_ICU_SINGLE_BYTE = frozenset((290, 420, 424, 838, 870, 1026, 1097, 1112, 1122, 1123, 4971,
                              1153, 1154, 1155, 1156, 1157, 1158, 1160, 1164))


class UnknownCCSID(MQCodecError, LookupError):
    """A CCSID with no converter: its bytes cannot be read as text."""

    def __init__(self, ccsid: int):
        super().__init__("CCSID %d has no converter" % ccsid)
        self.ccsid = ccsid


def _icu_name(ccsid: int) -> Optional[str]:
    return ICU_CONVERTERS.get(ccsid) if _ICU_INSTALLED else None


def is_known(ccsid: int) -> bool:
    """True when ``ccsid`` has a converter (a Python codec or an ICU one)."""
    return ccsid in CCSID_CODECS or _icu_name(ccsid) is not None


def is_ebcdic(ccsid: int) -> bool:
    """True for an EBCDIC page: byte 0xC1 is "A" (as in every EBCDIC page)."""
    if not is_known(ccsid):
        return False
    table = _table(ccsid)
    if table is not None:
        return table[0xC1] == "A"
    return decode_text(b"\xc1", ccsid, trim=False) == "A"


_MULTI_BYTE = frozenset(("utf-16-be", "utf-16-le", "utf-8", "cp932", "euc_jp", "gbk", "gb18030", "cp949", "big5"))


def is_single_byte(ccsid: int) -> bool:
    """True when every byte of ``ccsid`` is one character (a 256-entry table
    decodes it; the compiled core relies on this)."""
    if ccsid in CCSID_CODECS:
        return CCSID_CODECS[ccsid] not in _MULTI_BYTE
    return ccsid in _ICU_SINGLE_BYTE and _icu_name(ccsid) is not None


def single_byte_table(ccsid: int) -> Optional[list[str]]:
    """The character of each byte 0x00..0xFF of a single-byte ``ccsid``
    (what :func:`decode_text` gives for it, substitution included); None for
    other CCSIDs.  The compiled batch decoders build their tables from it."""
    table = _table(ccsid)
    return None if table is None else list(table)


def _table(ccsid: int) -> Optional[tuple]:
    """single_byte_table's table, shared (not copied)."""
    table = _SINGLE_BYTE_TABLES.get(ccsid)
    if table is None:
        if not is_single_byte(ccsid):
            return None
        from .ccsid_tables import SINGLE_BYTE   # the converters' tables as data (tests/test_ccsid.py)

        text = SINGLE_BYTE.get(ccsid)
        table = tuple(text) if text is not None else converter_table(ccsid)
        _SINGLE_BYTE_TABLES[ccsid] = table
    return table


def converter_table(ccsid: int) -> tuple:
    """The 256 characters the converter of single-byte ``ccsid`` gives for the
    bytes 0x00..0xFF (what :mod:`mqcodec.ccsid_tables` holds as data)."""
    # one conversion of the 256 bytes (a single-byte converter maps each byte on its
    # own: 256 characters); byte by byte where it does not give 256
    whole = decode_text(bytes(range(256)), ccsid, trim=False)
    return tuple(whole) if len(whole) == 256 else \
        tuple(decode_text(bytes([b]), ccsid, trim=False) for b in range(256))


def tables_source() -> str:
    """The source of :mod:`mqcodec.ccsid_tables`, from the installed converters
    (``python -m mqcodec.ccsid > codec/ccsid_tables.py`` regenerates it)."""
    lines = ['"""The single-byte CCSIDs\' tables: the character of each byte 0x00..0xFF,',
             "as the converters of :mod:`mqcodec.ccsid` give it (substitution included).",
             "Generated by ``python -m mqcodec.ccsid`` from the installed converters; data,",
             "so that the compiled decoders build their tables without loading a",
             'converter; tests/test_ccsid.py checks every table against its converter."""',
             "", "SINGLE_BYTE: dict[int, str] = {"]
    singles = sorted(c for c in set(CCSID_CODECS) | set(ICU_CONVERTERS) if is_single_byte(c))
    for c in singles:
        lines.append("    %d: %s," % (c, ascii("".join(converter_table(c)))))
    lines.append("}")
    return "\n".join(lines) + "\n"


#: single_byte_table's results, built once per CCSID (the converters do not change)
_SINGLE_BYTE_TABLES: dict[int, tuple] = {}


def codec_for(ccsid: int) -> str:
    """The Python codec of ``ccsid``; UnknownCCSID when it has none (ICU
    converts the :data:`ICU_CONVERTERS` ones: see :func:`decode_text`)."""
    try:
        return CCSID_CODECS[ccsid]
    except KeyError:
        raise UnknownCCSID(ccsid) from None


def _icu_decode(raw: bytes, ccsid: int) -> str:
    # "replace": ICU's substitution callback (the converter's substitution character)
    return str(_icu_module().UnicodeString(raw, ICU_CONVERTERS[ccsid], "replace"))


#: text_decoder's decoders, made once per CCSID
_DECODERS: dict[int, Any] = {}


def text_decoder(ccsid: int) -> Any:
    """A function bytes (or any buffer) -> str that decodes in ``ccsid`` (bytes
    the CCSID cannot map become its replacement character), made once per
    CCSID; UnknownCCSID for a CCSID without a converter.  :func:`decode_text`
    decodes with it."""
    decode = _DECODERS.get(ccsid)
    if decode is None:
        decode = _DECODERS[ccsid] = _new_decoder(ccsid)
    return decode


def _new_decoder(ccsid: int):
    name = CCSID_CODECS.get(ccsid)
    if name is not None:
        try:
            decode = codecs.getdecoder(name)
        except LookupError:   # a codec of the ebcdic package, not registered yet
            _python_codecs()
            decode = codecs.getdecoder(name)
        return lambda raw: decode(raw, "replace")[0]
    if _icu_name(ccsid) is not None:
        return lambda raw: _icu_decode(bytes(raw), ccsid) if len(raw) else ""
    raise UnknownCCSID(ccsid)


def decode_text(raw: bytes, ccsid: int, *, trim: bool = True) -> str:
    """Decode ``raw`` as text in ``ccsid``; trailing blanks and NULs are
    trimmed when ``trim`` (IBM MQ pads CHAR fields with blanks).  Raises
    :class:`UnknownCCSID` for a CCSID without a converter."""
    text = text_decoder(ccsid)(bytes(raw))
    if trim:
        text = text.rstrip(" \x00")
    return text


def decode_or_keep(raw: bytes, ccsid: int, warnings: Optional[list], structure: str, field: str, offset: int, *,
                   trim: bool = True) -> Union[str, bytes]:
    """:func:`decode_text`, except that a CCSID without a converter gives
    the bytes themselves and appends a DecodeWarning(structure, field,
    offset) to ``warnings`` (when given)."""
    try:
        return decode_text(raw, ccsid, trim=trim)
    except UnknownCCSID:
        if warnings is not None:
            warnings.append(DecodeWarning(structure, field, offset,
                                          "CCSID %d has no converter: the %d bytes are kept undecoded"
                                          % (ccsid, len(raw))))
        return bytes(raw)


def _encode(text: str, ccsid: int) -> bytes:
    name = CCSID_CODECS.get(ccsid)
    if name is not None:
        try:
            return text.encode(name)
        except LookupError:   # a codec of the ebcdic package, not registered yet
            _python_codecs()
            return text.encode(name)
    if _icu_name(ccsid) is None:
        raise UnknownCCSID(ccsid)
    icu = _icu_module()
    raw = icu.UnicodeString(text).encode(ICU_CONVERTERS[ccsid])
    # ICU substitutes what it cannot map: refuse instead, as Python's codecs do
    if _icu_decode(raw, ccsid) != text:
        bad = next((c for c in text if _icu_decode(icu.UnicodeString(c).encode(ICU_CONVERTERS[ccsid]), ccsid) != c),
                   text)
        raise UnicodeEncodeError(ICU_CONVERTERS[ccsid], text, text.find(bad), text.find(bad) + len(bad),
                                 "no mapping in the converter")
    return raw


def blank_for(ccsid: int) -> bytes:
    """The blank character in ``ccsid``, used to pad fixed CHAR fields."""
    return _encode(" ", ccsid)


def encode_text(text: Union[str, bytes], ccsid: int, length: int | None = None, *, structure: str = "",
                field: str = "") -> bytes:
    """Encode ``text`` in ``ccsid``; with ``length``, pad with blanks to
    exactly that many bytes (raise :class:`EncodeError` if it does not fit).
    ``bytes`` (a value kept undecoded) are written as they are; a CCSID
    without a converter accepts only those (padded with NULs)."""
    if isinstance(text, (bytes, bytearray)):
        raw = bytes(text)
        if length is None:
            return raw
        if len(raw) > length:
            raise EncodeError(structure, field, "%d bytes do not fit in %d" % (len(raw), length))
        try:
            pad = blank_for(ccsid)
        except UnknownCCSID:
            pad = b"\x00"
        if (length - len(raw)) % len(pad):
            pad = b"\x00"
        return raw + pad * ((length - len(raw)) // len(pad))
    try:
        raw = _encode(text, ccsid)
    except UnknownCCSID:
        raise EncodeError(structure, field, "CCSID %d has no converter: cannot encode %r (give bytes)"
                          % (ccsid, text)) from None
    except UnicodeEncodeError as exc:
        raise EncodeError(structure, field, "cannot encode %r in CCSID %d: %s" % (text, ccsid, exc)) from None
    if length is None:
        return raw
    if len(raw) > length:
        raise EncodeError(structure, field, "%d bytes do not fit in %d" % (len(raw), length))
    pad = blank_for(ccsid)
    return raw + pad * ((length - len(raw)) // len(pad))


if __name__ == "__main__":  # regenerate mqcodec.ccsid_tables
    print(tables_source(), end="")
