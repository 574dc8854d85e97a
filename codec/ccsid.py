"""Coded character set identifiers (CCSIDs) and their Python codecs.

IBM MQ tags every string with a CCSID; this module is the one place that maps
them to codecs.  Python's standard library lacks several EBCDIC code pages
that queue managers use (1047, 277, 278, 280, 284, 285, 297, 1141-1149): the
``ebcdic`` package registers them when imported here.

Rules shared by every decoder:

* decoded CHAR values have trailing blanks (U+0020) and NULs removed; the
  raw bytes stay with the decoded object so that encoding is exact;
* an undecodable byte never raises: it decodes with the codec's
  replacement character and the raw bytes remain authoritative.
"""
from __future__ import annotations

import codecs

import ebcdic  # noqa: F401  (registers cp1047, cp277, cp1141..cp1149, ...)

from .errors import EncodeError

__all__ = ["CCSID_CODECS", "codec_for", "decode_text", "encode_text", "blank_for", "is_known"]

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

_EBCDIC = frozenset(
    c for c, name in CCSID_CODECS.items() if name.startswith("cp") and bytes([0xC1]).decode(name, "replace") == "A"
)


def is_known(ccsid: int) -> bool:
    return ccsid in CCSID_CODECS


def is_ebcdic(ccsid: int) -> bool:
    return ccsid in _EBCDIC


_MULTI_BYTE = frozenset(("utf-16-be", "utf-16-le", "utf-8", "cp932", "euc_jp", "gbk", "gb18030", "cp949", "big5"))


def is_single_byte(ccsid: int) -> bool:
    """True when every byte of ``ccsid`` is one character (a 256-entry table
    decodes it; the compiled core relies on this)."""
    return ccsid in CCSID_CODECS and CCSID_CODECS[ccsid] not in _MULTI_BYTE


def codec_for(ccsid: int) -> str:
    """The Python codec for ``ccsid``; unknown CCSIDs fall back to latin-1
    (every byte maps to one character, so nothing is lost)."""
    return CCSID_CODECS.get(ccsid, "latin-1")


def _is_utf16(name: str) -> bool:
    return name.startswith("utf-16")


def decode_text(raw: bytes, ccsid: int, *, trim: bool = True) -> str:
    """Decode ``raw`` as text in ``ccsid``; trailing blanks and NULs are
    trimmed when ``trim`` (IBM MQ pads CHAR fields with blanks)."""
    name = codec_for(ccsid)
    text = codecs.decode(bytes(raw), name, "replace")
    if trim:
        text = text.rstrip(" \x00")
    return text


def blank_for(ccsid: int) -> bytes:
    """The blank character in ``ccsid``, used to pad fixed CHAR fields."""
    return " ".encode(codec_for(ccsid))


def encode_text(text: str, ccsid: int, length: int | None = None, *, structure: str = "", field: str = "") -> bytes:
    """Encode ``text`` in ``ccsid``; with ``length``, pad with blanks to
    exactly that many bytes (raise :class:`EncodeError` if it does not fit)."""
    name = codec_for(ccsid)
    try:
        raw = text.encode(name)
    except UnicodeEncodeError as exc:
        raise EncodeError(structure, field, "cannot encode %r in CCSID %d: %s" % (text, ccsid, exc)) from None
    if length is None:
        return raw
    if len(raw) > length:
        raise EncodeError(structure, field, "%d bytes do not fit in %d" % (len(raw), length))
    pad = blank_for(ccsid)
    return raw + pad * ((length - len(raw)) // len(pad))
