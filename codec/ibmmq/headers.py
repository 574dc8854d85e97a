"""IBM MQ message headers: MQMD (v1/v2), MQMDE, MQXQH, MQDLH, MQRFH2, MQRFH
and the "standard prefix" headers (MQCIH, MQIIH, MQWIH, MQRMH, MQDH) that
are kept opaque by their StrucLength.

The declarations below follow the C declarations of IBM's MQ reference
("MQMD - Message descriptor", "MQMDE", "MQXQH", "MQDLH", "MQRFH2", "MQRFH")
field by field, with IBM's field names.  ``MQLONG`` is a signed 32-bit
integer whose byte order is the one *the preceding header names* (for the
MQMD: the transport's, or the caller's); ``MQCHARn`` are characters in the
CCSID the preceding header names; ``MQBYTEn`` are opaque bytes.

Every header keeps what it needs to re-encode byte for byte: the raw bytes of
each CHAR field (used again when the decoded text was not changed), the
bytes of an MQMDE/MQRFH2 beyond the fields we know, and the raw
NameValueData of every MQRFH2 folder.

No I/O; every failure is a :class:`~mqcodec.errors.DecodeError` naming the
structure, the field and the absolute byte offset.
"""
from __future__ import annotations

import codecs
import struct as _struct
from typing import Any
from xml.etree import ElementTree as _ET

import construct as cs

from ..render import json_ready
from ..ccsid import UnknownCCSID, decode_text, encode_text
from ..errors import DecodeError, DecodeWarning, EncodeError
from ..layout import field_offsets, parse_at

__all__ = [
    "BIG", "LITTLE", "ENCODING_BIG", "ENCODING_LITTLE", "byte_order",
    "Header", "MQMD", "MQMDE", "MQXQH", "MQDLH", "MQRFH2", "MQRFH", "OpaqueHeader",
    "MQCIH", "MQIIH", "MQWIH", "MQRMH", "MQDH",
    "HEADER_BY_FORMAT", "header_class_for_format", "decode_md", "detect_md", "decode_header",
    "parse_folder",
]

# ENCODING_BIG = 273 (integer, decimal, float all "normal"), ENCODING_LITTLE
# = 546 (all "reversed", MQENC_NATIVE on x86/x86-64)
from .constants import ENCODING_BIG, ENCODING_LITTLE  # noqa: E402
BIG = "big"
LITTLE = "little"

MQENC_INTEGER_MASK = 0xF
MQENC_INTEGER_REVERSED = 0x2


def byte_order(encoding: int) -> str:
    """Byte order of MQLONGs under MQENC ``encoding``: reversed integers
    (low nibble 2) are little-endian; normal (1) and undefined (0) big-endian."""
    return LITTLE if (int(encoding) & MQENC_INTEGER_MASK) == MQENC_INTEGER_REVERSED else BIG


def _mqenc(order: str) -> int:
    return ENCODING_LITTLE if order == LITTLE else ENCODING_BIG


# --------------------------------------------------------------------------
# Field types, named as IBM's C header names them
# --------------------------------------------------------------------------
class MQCHAR(cs.Bytes):
    """MQCHARn: characters in the governing CCSID, blank padded."""


class MQBYTE(cs.Bytes):
    """MQBYTEn: opaque bytes (identifiers, tokens)."""


_MQLONG = {BIG: cs.Int32sb, LITTLE: cs.Int32sl}


def _mqmd1_fields(MQLONG):
    """MQMD version 1 (MQMD1), 324 bytes."""
    return [
        "StrucId" / MQCHAR(4),            # 'MD  '
        "Version" / MQLONG,               # 1 or 2
        "Report" / MQLONG,
        "MsgType" / MQLONG,
        "Expiry" / MQLONG,
        "Feedback" / MQLONG,
        "Encoding" / MQLONG,              # of the data that follows
        "CodedCharSetId" / MQLONG,        # of the data that follows
        "Format" / MQCHAR(8),             # of the data that follows
        "Priority" / MQLONG,
        "Persistence" / MQLONG,
        "MsgId" / MQBYTE(24),
        "CorrelId" / MQBYTE(24),
        "BackoutCount" / MQLONG,
        "ReplyToQ" / MQCHAR(48),
        "ReplyToQMgr" / MQCHAR(48),
        "UserIdentifier" / MQCHAR(12),
        "AccountingToken" / MQBYTE(32),
        "ApplIdentityData" / MQCHAR(32),
        "PutApplType" / MQLONG,
        "PutApplName" / MQCHAR(28),
        "PutDate" / MQCHAR(8),
        "PutTime" / MQCHAR(8),
        "ApplOriginData" / MQCHAR(4),
    ]


def _mqmd2_extra(MQLONG):
    """Fields a version-2 MQMD adds (364 bytes in all)."""
    return [
        "GroupId" / MQBYTE(24),
        "MsgSeqNumber" / MQLONG,
        "Offset" / MQLONG,
        "MsgFlags" / MQLONG,
        "OriginalLength" / MQLONG,
    ]


def _mqmde_fields(MQLONG):
    """MQMDE, 72 bytes."""
    return [
        "StrucId" / MQCHAR(4),            # 'MDE '
        "Version" / MQLONG,               # 2
        "StrucLength" / MQLONG,           # 72
        "Encoding" / MQLONG,
        "CodedCharSetId" / MQLONG,
        "Format" / MQCHAR(8),
        "Flags" / MQLONG,
        "GroupId" / MQBYTE(24),
        "MsgSeqNumber" / MQLONG,
        "Offset" / MQLONG,
        "MsgFlags" / MQLONG,
        "OriginalLength" / MQLONG,
    ]


def _mqxqh_fields(MQLONG):
    """MQXQH, 428 bytes: the original message descriptor is an MQMD1."""
    return [
        "StrucId" / MQCHAR(4),            # 'XQH '
        "Version" / MQLONG,               # 1
        "RemoteQName" / MQCHAR(48),
        "RemoteQMgrName" / MQCHAR(48),
        "MsgDesc" / cs.Struct(*_mqmd1_fields(MQLONG)),
    ]


def _mqdlh_fields(MQLONG):
    """MQDLH, 172 bytes."""
    return [
        "StrucId" / MQCHAR(4),            # 'DLH '
        "Version" / MQLONG,               # 1
        "Reason" / MQLONG,
        "DestQName" / MQCHAR(48),
        "DestQMgrName" / MQCHAR(48),
        "Encoding" / MQLONG,
        "CodedCharSetId" / MQLONG,
        "Format" / MQCHAR(8),
        "PutApplType" / MQLONG,
        "PutApplName" / MQCHAR(28),
        "PutDate" / MQCHAR(8),
        "PutTime" / MQCHAR(8),
    ]


def _prefix_fields(MQLONG):
    """The standard prefix shared by chainable headers (28 bytes)."""
    return [
        "StrucId" / MQCHAR(4),
        "Version" / MQLONG,
        "StrucLength" / MQLONG,           # includes any variable part
        "Encoding" / MQLONG,
        "CodedCharSetId" / MQLONG,
        "Format" / MQCHAR(8),
    ]


def _mqrfh_fields(MQLONG):
    """MQRFH (version 1) fixed part, 32 bytes; NameValueString follows."""
    return _prefix_fields(MQLONG) + ["Flags" / MQLONG]


def _mqrfh2_fields(MQLONG):
    """MQRFH2 fixed part, 36 bytes; NameValueLength/NameValueData pairs follow."""
    return _mqrfh_fields(MQLONG) + ["NameValueCCSID" / MQLONG]


def _both(fields_fn) -> dict[str, cs.Struct]:
    return {order: cs.Struct(*fields_fn(_MQLONG[order])) for order in (BIG, LITTLE)}


MQMD1_DECL = _both(_mqmd1_fields)
MQMD2_DECL = _both(lambda L: _mqmd1_fields(L) + _mqmd2_extra(L))
MQMDE_DECL = _both(_mqmde_fields)
MQXQH_DECL = _both(_mqxqh_fields)
MQDLH_DECL = _both(_mqdlh_fields)
MQRFH_DECL = _both(_mqrfh_fields)
MQRFH2_DECL = _both(_mqrfh2_fields)
PREFIX_DECL = _both(_prefix_fields)


def _field_kinds(decl: cs.Struct) -> dict[str, tuple[str, int]]:
    """name -> ("long"|"char"|"byte"|"struct", size) from a declaration."""
    kinds: dict[str, tuple[str, int]] = {}
    for sc in decl.subcons:
        inner = sc.subcon if isinstance(sc, cs.Renamed) else sc
        if isinstance(inner, MQCHAR):
            kinds[sc.name] = ("char", inner.sizeof())
        elif isinstance(inner, MQBYTE):
            kinds[sc.name] = ("byte", inner.sizeof())
        elif isinstance(inner, cs.Struct):
            kinds[sc.name] = ("struct", inner.sizeof())
        else:
            kinds[sc.name] = ("long", 4)
    return kinds


# --------------------------------------------------------------------------
# Character helpers
# --------------------------------------------------------------------------
def _id_matches(raw: bytes, ident: str) -> bool:
    """StrucId/format comparisons accept ASCII and EBCDIC spellings."""
    return raw == ident.encode("ascii") or raw == ident.encode("cp500")


def _guess_ccsid(raw_strucid: bytes) -> int:
    """500 when the MQMD's StrucId is EBCDIC ('MD  ' = D4 C4 40 40), else 819."""
    return 500 if raw_strucid == "MD  ".encode("cp500") else 819


_UTF16 = {1200, 13488, 17584}


def _nv_codec(nv_ccsid: int, order: str) -> str | None:
    """Codec of MQRFH2 NameValueData: UTF-16 follows the header's byte order."""
    if nv_ccsid in _UTF16:
        return "utf-16-le" if order == LITTLE else "utf-16-be"
    return None


def _says(raw: bytes, ccsid: int, value: Any) -> bool:
    """Whether kept bytes still say ``value`` (text, or the bytes themselves
    when the CCSID has no converter)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(raw) == bytes(value)
    try:
        return decode_text(raw, ccsid) == value
    except UnknownCCSID:
        return False


def _nv_decode(raw: bytes, nv_ccsid: int, order: str) -> str | bytes:
    """A folder's text; its bytes when NameValueCCSID has no converter."""
    name = _nv_codec(nv_ccsid, order)
    if name:
        text = codecs.decode(raw, name, "replace")
    else:
        try:
            text = decode_text(raw, nv_ccsid, trim=False)
        except UnknownCCSID:
            return bytes(raw)
    return text.rstrip(" \x00")


def _nv_encode(text: str | bytes, nv_ccsid: int, order: str) -> bytes:
    if isinstance(text, (bytes, bytearray)):
        return bytes(text) + b"\x00" * (-len(text) % 4)
    name = _nv_codec(nv_ccsid, order)
    if name:
        try:
            raw = text.encode(name)
        except UnicodeEncodeError as exc:  # pragma: no cover - lone surrogates
            raise EncodeError("MQRFH2", "NameValueData", str(exc)) from None
        pad = " ".encode(name)
    else:
        raw = encode_text(text, nv_ccsid, structure="MQRFH2", field="NameValueData")
        pad = encode_text(" ", nv_ccsid)
    while len(raw) % 4:
        raw += pad
    return raw


def parse_folder(text: str) -> dict | None:
    """An MQRFH2 folder (``<jms><Dst>queue:///Q</Dst></jms>``) as a dict
    ``{"jms": {"Dst": "queue:///Q"}}``; repeated elements become lists.
    None when the text is not a well-formed element (or carries a DTD)."""
    if "<!" in text or "<?" in text:
        return None
    try:
        root = _ET.fromstring(text)
    except (_ET.ParseError, ValueError, RecursionError):
        return None

    def conv(el, depth=0):
        if depth > 64:
            raise RecursionError
        children = list(el)
        if not children:
            return el.text or ""
        out: dict[str, Any] = {}
        for ch in children:
            v = conv(ch, depth + 1)
            if ch.tag in out:
                if not isinstance(out[ch.tag], list):
                    out[ch.tag] = [out[ch.tag]]
                out[ch.tag].append(v)
            else:
                out[ch.tag] = v
        return out

    try:
        return {root.tag: conv(root)}
    except RecursionError:
        return None


# --------------------------------------------------------------------------
# The header object
# --------------------------------------------------------------------------
class Header:
    """One decoded (or constructed) header.

    Field values are attributes and items (``md.MsgId``, ``md["Format"]``):
    MQLONG as int, MQCHAR as str (trailing blanks/NULs trimmed), MQBYTE as
    bytes.  ``offset``/``length`` locate a decoded header in the caller's
    input; ``int_encoding`` and ``ccsid`` are the MQENC and CCSID its own
    fields were read with (named by the preceding header).
    """

    NAME = ""
    STRUC_ID = ""
    VERSIONS: tuple[int, ...] = (1,)
    DEFAULTS: dict[str, Any] = {}
    FIXED_LENGTH = 0
    HAS_STRUC_LENGTH = True

    def __init__(self, **fields: Any):
        object.__setattr__(self, "fields", {})
        object.__setattr__(self, "_raw_chars", {})
        #: DecodeWarnings of this header: CHAR fields in a CCSID without a
        #: converter, kept as bytes (mqcodec.ccsid)
        object.__setattr__(self, "warnings", [])
        object.__setattr__(self, "offset", None)
        object.__setattr__(self, "length", None)
        object.__setattr__(self, "int_encoding", None)
        object.__setattr__(self, "ccsid", None)
        values = dict(self.DEFAULTS)
        values.update(fields)
        known = set(self._kinds(values.get("Version", self.VERSIONS[-1])))
        for name in values:
            if name not in known and not self._extra_ok(name):
                raise TypeError("%s has no field %r" % (self.NAME, name))
        for name, (kind, size) in self._kinds(values.get("Version", self.VERSIONS[-1])).items():
            if name in values:
                v = values[name]
                if kind == "byte" and isinstance(v, (bytes, bytearray)):
                    if len(v) > size:
                        raise EncodeError(self.NAME, name, "%d bytes do not fit in %d" % (len(v), size))
                    v = bytes(v) + b"\x00" * (size - len(v))  # MQBYTEn: NUL padded
                self.fields[name] = v
        for name, v in values.items():
            if name not in self.fields:
                self._set_extra(name, v)

    # ---- field access --------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        fields = self.__dict__.get("fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.__dict__.get("fields", {}):
            self.fields[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]

    def __setitem__(self, name: str, value: Any) -> None:
        if name not in self.fields:
            raise KeyError(name)
        self.fields[name] = value

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._compare() == other._compare()

    def __repr__(self) -> str:
        return "<%s %s>" % (self.NAME, ", ".join("%s=%r" % kv for kv in list(self.fields.items())[:8]))

    def _compare(self):
        # StrucLength is derived from the content (computed on encoding)
        return {k: v for k, v in self.fields.items() if k != "StrucLength"}

    def _extra_ok(self, name: str) -> bool:
        return False

    def _set_extra(self, name: str, value: Any) -> None:  # pragma: no cover
        raise TypeError(name)

    # ---- declarations --------------------------------------------------
    @classmethod
    def decl(cls, version: int, order: str) -> cs.Struct:
        raise NotImplementedError

    @classmethod
    def _kinds(cls, version: int) -> dict[str, tuple[str, int]]:
        v = version if version in cls.VERSIONS else cls.VERSIONS[-1]
        return _field_kinds(cls.decl(v, BIG))

    # ---- the chain -----------------------------------------------------
    def next_governing(self, encoding: int, ccsid: int) -> tuple[int, int]:
        """(Encoding, CCSID) of what follows this header.  CCSIDs <= 0
        (MQCCSI_Q_MGR/UNDEFINED 0, MQCCSI_INHERIT -2, ...) inherit ``ccsid``."""
        enc = self.fields.get("Encoding", encoding)
        cc = self.fields.get("CodedCharSetId", ccsid)
        return int(enc), (int(cc) if int(cc) > 0 else ccsid)

    @property
    def format_name(self) -> str:
        """The Format field: the format of what follows (trimmed)."""
        v = self.fields.get("Format", "")
        if isinstance(v, (bytes, bytearray)):
            return ""  # kept undecoded (a CCSID without a converter): names nothing
        return str(v).rstrip(" \x00")

    @property
    def format_undecoded(self) -> bool:
        """The Format field is kept as bytes: its CCSID has no converter."""
        return isinstance(self.fields.get("Format"), (bytes, bytearray))

    # ---- decode --------------------------------------------------------
    def _load(self, container, kinds, ccsid: int, prefix: str = "", decl: cs.Struct | None = None,
              base: int | None = None) -> dict:
        out: dict[str, Any] = {}
        offs = field_offsets(decl) if decl is not None else {}
        for name, (kind, _size) in kinds.items():
            v = container[name]
            if kind == "char":
                self._raw_chars[prefix + name] = (ccsid, bytes(v))
                try:
                    out[name] = decode_text(v, ccsid)
                except UnknownCCSID:
                    out[name] = bytes(v)
                    at = (base if base is not None else (self.offset or 0)) + offs.get(name, 0)
                    self.warnings.append(DecodeWarning(self.NAME, prefix + name, at,
                                                       "CCSID %d has no converter: the %d bytes are kept undecoded"
                                                       % (ccsid, len(v))))
            elif kind == "byte":
                out[name] = bytes(v)
            elif kind == "long":
                out[name] = int(v)
        return out

    def _dump(self, values: dict, kinds, ccsid: int, prefix: str = "") -> dict:
        out: dict[str, Any] = {}
        for name, (kind, size) in kinds.items():
            if kind == "struct":
                continue
            v = values.get(name)
            if kind == "char":
                out[name] = self._char_bytes(prefix + name, v, ccsid, size)
            elif kind == "byte":
                b = b"" if v is None else bytes(v)
                if len(b) > size:
                    raise EncodeError(self.NAME, name, "%d bytes do not fit in %d" % (len(b), size))
                out[name] = b + b"\x00" * (size - len(b))
            else:
                try:
                    iv = int(v if v is not None else 0)
                except (TypeError, ValueError):
                    raise EncodeError(self.NAME, name, "not an integer: %r" % (v,)) from None
                if not -0x80000000 <= iv <= 0xFFFFFFFF:
                    raise EncodeError(self.NAME, name, "%d does not fit an MQLONG" % iv)
                out[name] = iv - 0x100000000 if iv > 0x7FFFFFFF else iv
        return out

    def _char_bytes(self, key: str, value: Any, ccsid: int, size: int) -> bytes:
        if isinstance(value, (bytes, bytearray)):
            raw = self._raw_chars.get(key)
            if raw is not None and raw[1] == bytes(value) and len(raw[1]) == size:
                return raw[1]
            return encode_text(bytes(value), ccsid, size, structure=self.NAME, field=key)
        text = "" if value is None else str(value)
        raw = self._raw_chars.get(key)
        if raw is not None and raw[0] == ccsid and _says(raw[1], ccsid, text):
            return raw[1]
        return encode_text(text, ccsid, size, structure=self.NAME, field=key)

    @classmethod
    def _check_strucid(cls, data: bytes, offset: int, end: int) -> None:
        if end - offset < 4:
            raise DecodeError(cls.NAME, "StrucId", offset,
                              "truncated: %d bytes needed, %d present" % (4, max(0, end - offset)))
        raw = data[offset:offset + 4]
        if not _id_matches(raw, cls.STRUC_ID):
            raise DecodeError(cls.NAME, "StrucId", offset,
                              "expected %r, found %s" % (cls.STRUC_ID, raw.hex()))

    @classmethod
    def _read_long(cls, data: bytes, offset: int, end: int, order: str, field: str) -> int:
        if end - offset < 4:
            raise DecodeError(cls.NAME, field, offset,
                              "truncated: 4 bytes needed, %d present" % max(0, end - offset))
        return _struct.unpack_from(">i" if order == BIG else "<i", data, offset)[0]

    @classmethod
    def decode(cls, data: bytes, offset: int, end: int, encoding: int, ccsid: int) -> "Header":
        """Decode this header at ``data[offset:end]``; its integers in
        ``encoding``'s byte order, its strings in ``ccsid``."""
        order = byte_order(encoding)
        cls._check_strucid(data, offset, end)
        version = cls._read_long(data, offset + 4, end, order, "Version")
        if version not in cls.VERSIONS:
            raise DecodeError(cls.NAME, "Version", offset + 4,
                              "version %d is not %s" % (version, " or ".join(map(str, cls.VERSIONS))))
        length = cls.FIXED_LENGTH
        strucl = None
        if cls.HAS_STRUC_LENGTH:
            strucl = cls._read_long(data, offset + 8, end, order, "StrucLength")
            if strucl < cls.FIXED_LENGTH:
                raise DecodeError(cls.NAME, "StrucLength", offset + 8,
                                  "%d is less than the fixed part (%d bytes)" % (strucl, cls.FIXED_LENGTH))
            if strucl > end - offset:
                raise DecodeError(cls.NAME, "StrucLength", offset + 8,
                                  "%d bytes claimed but only %d remain" % (strucl, end - offset))
            length = strucl
        decl = cls.decl(version, order)
        c = parse_at(decl, data[:min(end, offset + length)], offset, cls.NAME)
        h = cls.__new__(cls)
        Header.__init__(h)
        h.fields.clear()
        h.offset, h.length, h.int_encoding, h.ccsid = offset, length, _mqenc(order), ccsid
        h.fields.update(h._load(c, _field_kinds(decl), ccsid, decl=decl, base=offset))
        h._decode_rest(c, data, offset, length, order, ccsid)
        return h

    def _decode_rest(self, c, data, offset, length, order, ccsid) -> None:
        pass

    # ---- encode --------------------------------------------------------
    def encode(self, encoding: int | None = None, ccsid: int | None = None) -> bytes:
        """Bytes of this header with its integers in ``encoding``'s byte
        order and its strings in ``ccsid`` (default: what it was decoded
        with, else little-endian / 819)."""
        enc = encoding if encoding is not None else (self.int_encoding or ENCODING_LITTLE)
        cc = ccsid if ccsid is not None else (self.ccsid or 819)
        order = byte_order(enc)
        version = int(self.fields.get("Version", self.VERSIONS[-1]))
        if version not in self.VERSIONS:
            raise EncodeError(self.NAME, "Version", "version %d is not supported" % version)
        decl = self.decl(version, order)
        values = self._dump(self.fields, _field_kinds(decl), cc)
        self._encode_prepare(values, order, cc)
        try:
            head = decl.build(values)
        except (cs.ConstructError, ValueError, OverflowError) as exc:
            raise EncodeError(self.NAME, "", str(exc).splitlines()[-1]) from None
        return head + self._encode_rest(order, cc)

    def _encode_prepare(self, values: dict, order: str, ccsid: int) -> None:
        pass

    def _encode_rest(self, order: str, ccsid: int) -> bytes:
        return b""

    # ---- presentation --------------------------------------------------
    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = {"StrucName": self.NAME}
        if self.offset is not None:
            d["Offset"] = self.offset
        for k, v in self.fields.items():
            d[k] = v.to_dict() if isinstance(v, Header) else v
        return d


# --------------------------------------------------------------------------
# MQMD
# --------------------------------------------------------------------------
_MQMD_DEFAULT: dict[str, Any] = {
    # IBM's MQMD_DEFAULT (initial values of the MQMD fields)
    "StrucId": "MD", "Version": 1, "Report": 0, "MsgType": 8,  # MQMT_DATAGRAM
    "Expiry": -1,  # MQEI_UNLIMITED
    "Feedback": 0, "Encoding": ENCODING_LITTLE,  # MQENC_NATIVE (x86)
    "CodedCharSetId": 0,  # MQCCSI_Q_MGR
    "Format": "",  # MQFMT_NONE
    "Priority": -1,  # MQPRI_PRIORITY_AS_Q_DEF
    "Persistence": 2,  # MQPER_PERSISTENCE_AS_Q_DEF
    "MsgId": b"\x00" * 24, "CorrelId": b"\x00" * 24, "BackoutCount": 0,
    "ReplyToQ": "", "ReplyToQMgr": "", "UserIdentifier": "", "AccountingToken": b"\x00" * 32,
    "ApplIdentityData": "", "PutApplType": 0,  # MQAT_NO_CONTEXT
    "PutApplName": "", "PutDate": "", "PutTime": "", "ApplOriginData": "",
}
_MQMD2_DEFAULT = {"GroupId": b"\x00" * 24, "MsgSeqNumber": 1, "Offset": 0, "MsgFlags": 0, "OriginalLength": -1}


class MQMD(Header):
    """Message descriptor, version 1 (324 bytes) or 2 (364 bytes).

    ``MQMD(Format="MQSTR", MsgId=b"...")`` starts from IBM's MQMD_DEFAULT;
    ``Version=2`` adds the version-2 fields with their defaults."""

    NAME = "MQMD"
    STRUC_ID = "MD  "
    VERSIONS = (1, 2)
    HAS_STRUC_LENGTH = False
    LENGTHS = {1: 324, 2: 364}

    def __init__(self, **fields: Any):
        values = dict(_MQMD_DEFAULT)
        if int(fields.get("Version", 1)) >= 2:
            values.update(_MQMD2_DEFAULT)
        values.update(fields)
        Header.__init__(self, **values)

    @classmethod
    def decl(cls, version: int, order: str) -> cs.Struct:
        return (MQMD2_DECL if version == 2 else MQMD1_DECL)[order]

    @classmethod
    def decode(cls, data: bytes, offset: int, end: int, encoding: int, ccsid: int) -> "MQMD":
        order = byte_order(encoding)
        cls._check_strucid(data, offset, end)
        version = cls._read_long(data, offset + 4, end, order, "Version")
        if version not in cls.VERSIONS:
            raise DecodeError(cls.NAME, "Version", offset + 4, "version %d is not 1 or 2" % version)
        decl = cls.decl(version, order)
        c = parse_at(decl, data[:end], offset, cls.NAME)
        h = cls.__new__(cls)
        Header.__init__(h)
        h.offset, h.length, h.int_encoding, h.ccsid = offset, cls.LENGTHS[version], _mqenc(order), ccsid
        h.fields.update(h._load(c, _field_kinds(decl), ccsid, decl=decl, base=offset))
        return h

    @json_ready
    def to_dict(self) -> dict:
        d = super().to_dict()
        d.pop("StrucName", None)
        d.pop("Offset", None)
        return d


def detect_md(data: bytes, offset: int = 0, encoding: int | None = None,
              ccsid: int | None = None) -> tuple[int, int]:
    """(MQENC, CCSID) the MQMD at ``offset`` is written in.

    The byte order is the one in which Version reads 1 or 2 (big-endian
    tried first); ``encoding`` overrides.  The CCSID is ``ccsid`` if given,
    else 500 when StrucId is EBCDIC ("MD  " = C4C44040), else 819."""
    end = len(data)
    MQMD._check_strucid(data, offset, end)
    if ccsid is None:
        ccsid = _guess_ccsid(data[offset:offset + 4])
    if encoding is None:
        if end - offset < 8:
            raise DecodeError("MQMD", "Version", offset + 4,
                              "truncated: 4 bytes needed, %d present" % max(0, end - offset - 4))
        big = _struct.unpack_from(">i", data, offset + 4)[0]
        little = _struct.unpack_from("<i", data, offset + 4)[0]
        if big in MQMD.VERSIONS:
            encoding = ENCODING_BIG
        elif little in MQMD.VERSIONS:
            encoding = ENCODING_LITTLE
        else:
            raise DecodeError("MQMD", "Version", offset + 4,
                              "reads %d big-endian and %d little-endian; neither is 1 or 2" % (big, little))
    return encoding, ccsid


def decode_md(data: bytes, offset: int = 0, *, encoding: int | None = None,
              ccsid: int | None = None) -> MQMD:
    """Decode an MQMD alone (e.g. from an MQPUT segment); byte order and
    CCSID detected unless given."""
    data = bytes(data)
    encoding, ccsid = detect_md(data, offset, encoding, ccsid)
    return MQMD.decode(data, offset, len(data), encoding, ccsid)


# --------------------------------------------------------------------------
# MQMDE
# --------------------------------------------------------------------------
class MQMDE(Header):
    """Message descriptor extension (72 bytes; a larger StrucLength is
    accepted and its extra bytes kept as ``extra``)."""

    NAME = "MQMDE"
    STRUC_ID = "MDE "
    VERSIONS = (2,)
    FIXED_LENGTH = 72
    DEFAULTS = {
        "StrucId": "MDE", "Version": 2, "StrucLength": 72, "Encoding": ENCODING_LITTLE,
        "CodedCharSetId": 0, "Format": "", "Flags": 0, "GroupId": b"\x00" * 24,
        "MsgSeqNumber": 1, "Offset": 0, "MsgFlags": 0, "OriginalLength": -1,
    }

    @classmethod
    def decl(cls, version: int, order: str) -> cs.Struct:
        return MQMDE_DECL[order]

    def _decode_rest(self, c, data, offset, length, order, ccsid) -> None:
        object.__setattr__(self, "extra", bytes(data[offset + 72:offset + length]))

    def _encode_rest(self, order: str, ccsid: int) -> bytes:
        return getattr(self, "extra", b"")

    def _encode_prepare(self, values, order, ccsid) -> None:
        values["StrucLength"] = 72 + len(getattr(self, "extra", b""))


# --------------------------------------------------------------------------
# MQXQH
# --------------------------------------------------------------------------
class MQXQH(Header):
    """Transmission-queue header (428 bytes): its embedded MQMD1
    ``MsgDesc`` describes (Encoding, CodedCharSetId, Format) what follows."""

    NAME = "MQXQH"
    STRUC_ID = "XQH "
    VERSIONS = (1,)
    FIXED_LENGTH = 428
    HAS_STRUC_LENGTH = False

    def __init__(self, **fields: Any):
        md = fields.pop("MsgDesc", None)
        if md is None:
            md = MQMD()
        elif isinstance(md, dict):
            md = MQMD(**md)
        values = {"StrucId": "XQH", "Version": 1, "RemoteQName": "", "RemoteQMgrName": ""}
        values.update(fields)
        values["MsgDesc"] = md
        Header.__init__(self, **values)
        if int(md.fields.get("Version", 1)) != 1:
            raise EncodeError("MQXQH", "MsgDesc", "the embedded message descriptor is an MQMD version 1")

    @classmethod
    def decl(cls, version: int, order: str) -> cs.Struct:
        return MQXQH_DECL[order]

    def _decode_rest(self, c, data, offset, length, order, ccsid) -> None:
        md = MQMD.__new__(MQMD)
        Header.__init__(md)
        md.offset, md.length, md.int_encoding, md.ccsid = offset + 104, 324, _mqenc(order), ccsid
        md.fields.update(md._load(c["MsgDesc"], _field_kinds(MQMD1_DECL[order]), ccsid, decl=MQMD1_DECL[order],
                                  base=offset + 104))
        self.warnings.extend(md.warnings)
        if not _id_matches(bytes(c["MsgDesc"]["StrucId"]), "MD  "):
            raise DecodeError("MQXQH", "MsgDesc", offset + 104, "the embedded MQMD's StrucId is not 'MD  '")
        if md.fields["Version"] != 1:
            raise DecodeError("MQXQH", "MsgDesc", offset + 108,
                              "the embedded MQMD's Version is %d, not 1" % md.fields["Version"])
        self.fields["MsgDesc"] = md

    def _encode_prepare(self, values, order, ccsid) -> None:
        md: MQMD = self.fields["MsgDesc"]
        if isinstance(md, dict):
            md = MQMD(**md)
        values["MsgDesc"] = md._dump(md.fields, _field_kinds(MQMD1_DECL[order]), ccsid)

    def next_governing(self, encoding: int, ccsid: int) -> tuple[int, int]:
        return self.fields["MsgDesc"].next_governing(encoding, ccsid)

    @property
    def format_name(self) -> str:
        return self.fields["MsgDesc"].format_name

    @property
    def format_undecoded(self) -> bool:
        return self.fields["MsgDesc"].format_undecoded


# --------------------------------------------------------------------------
# MQDLH
# --------------------------------------------------------------------------
class MQDLH(Header):
    """Dead-letter header (172 bytes)."""

    NAME = "MQDLH"
    STRUC_ID = "DLH "
    VERSIONS = (1,)
    FIXED_LENGTH = 172
    HAS_STRUC_LENGTH = False
    DEFAULTS = {
        "StrucId": "DLH", "Version": 1, "Reason": 0, "DestQName": "", "DestQMgrName": "",
        "Encoding": 0, "CodedCharSetId": 0, "Format": "", "PutApplType": 0, "PutApplName": "",
        "PutDate": "", "PutTime": "",
    }

    @classmethod
    def decl(cls, version: int, order: str) -> cs.Struct:
        return MQDLH_DECL[order]


# --------------------------------------------------------------------------
# MQRFH2 and MQRFH
# --------------------------------------------------------------------------
class MQRFH2(Header):
    """Rules and formatting header 2: a 36-byte fixed part then
    NameValueLength/NameValueData pairs up to StrucLength.

    ``folders`` is the list of folder texts (decoded by NameValueCCSID,
    trailing blanks trimmed); ``folder_raw`` the NameValueData bytes as
    they were; ``folder_dicts()`` the folders parsed to dicts."""

    NAME = "MQRFH2"
    STRUC_ID = "RFH "
    VERSIONS = (2,)
    FIXED_LENGTH = 36
    DEFAULTS = {
        "StrucId": "RFH", "Version": 2, "StrucLength": None, "Encoding": ENCODING_LITTLE,
        "CodedCharSetId": -2,  # MQCCSI_INHERIT
        "Format": "", "Flags": 0, "NameValueCCSID": 1208,
    }

    def __init__(self, folders: list[str] | None = None, **fields: Any):
        Header.__init__(self, **fields)
        object.__setattr__(self, "folders", list(folders or []))
        object.__setattr__(self, "folder_raw", [None] * len(self.folders))
        object.__setattr__(self, "folder_lengths", [None] * len(self.folders))
        object.__setattr__(self, "trailing", b"")

    @classmethod
    def decl(cls, version: int, order: str) -> cs.Struct:
        return MQRFH2_DECL[order]

    def _compare(self):
        return (Header._compare(self), self.folders, self.trailing)

    def _decode_rest(self, c, data, offset, length, order, ccsid) -> None:
        end = offset + length
        pos = offset + 36
        nv_ccsid = int(self.fields["NameValueCCSID"])
        folders, raws, lens = [], [], []
        fmt = ">i" if order == BIG else "<i"
        while pos < end:
            if end - pos < 4:
                raise DecodeError("MQRFH2", "NameValueLength", pos,
                                  "%d bytes left before StrucLength ends; a NameValueLength needs 4" % (end - pos))
            nvl = _struct.unpack_from(fmt, data, pos)[0]
            if nvl < 0 or nvl > end - pos - 4:
                raise DecodeError("MQRFH2", "NameValueLength", pos,
                                  "%d bytes claimed but only %d remain within StrucLength" % (nvl, end - pos - 4))
            raw = bytes(data[pos + 4:pos + 4 + nvl])
            folder = _nv_decode(raw, nv_ccsid, order)
            if isinstance(folder, bytes):
                self.warnings.append(DecodeWarning("MQRFH2", "NameValueData", pos + 4,
                                                   "NameValueCCSID %d has no converter: the %d bytes are kept"
                                                   " undecoded" % (nv_ccsid, nvl)))
            folders.append(folder)
            raws.append(raw)
            lens.append(nvl)
            pos += 4 + nvl
        object.__setattr__(self, "folders", folders)
        object.__setattr__(self, "folder_raw", raws)
        object.__setattr__(self, "folder_lengths", lens)
        object.__setattr__(self, "trailing", b"")

    def _folder_bytes(self, order: str) -> list[bytes]:
        nv_ccsid = int(self.fields.get("NameValueCCSID", 1208))
        out = []
        raws = list(self.folder_raw) + [None] * (len(self.folders) - len(self.folder_raw))
        for text, raw in zip(self.folders, raws):
            if raw is not None and _nv_decode(raw, nv_ccsid, order) == text:
                out.append(raw)
            else:
                out.append(_nv_encode(text, nv_ccsid, order))
        return out

    def _encode_prepare(self, values, order, ccsid) -> None:
        values["StrucLength"] = 36 + sum(4 + len(b) for b in self._folder_bytes(order)) + len(self.trailing)

    def _encode_rest(self, order: str, ccsid: int) -> bytes:
        fmt = ">i" if order == BIG else "<i"
        out = []
        for b in self._folder_bytes(order):
            out.append(_struct.pack(fmt, len(b)))
            out.append(b)
        return b"".join(out) + self.trailing

    def folder_dicts(self) -> list[dict | None]:
        return [parse_folder(t) if isinstance(t, str) else None for t in self.folders]

    @json_ready
    def to_dict(self) -> dict:
        d = super().to_dict()
        d["NameValues"] = [
            {"NameValueLength": (n if n is not None else None), "NameValueData": t,
             "Folder": parse_folder(t) if isinstance(t, str) else None}
            for t, n in zip(self.folders, list(self.folder_lengths) + [None] * len(self.folders))
        ]
        return d


class MQRFH(Header):
    """Rules and formatting header (version 1): 32-byte fixed part and a
    NameValueString up to StrucLength, in the header's own CCSID."""

    NAME = "MQRFH"
    STRUC_ID = "RFH "
    VERSIONS = (1,)
    FIXED_LENGTH = 32
    DEFAULTS = {
        "StrucId": "RFH", "Version": 1, "StrucLength": None, "Encoding": ENCODING_LITTLE,
        "CodedCharSetId": 0, "Format": "", "Flags": 0,
    }

    def __init__(self, NameValueString: str = "", **fields: Any):
        Header.__init__(self, **fields)
        object.__setattr__(self, "NameValueString", NameValueString)
        object.__setattr__(self, "_nvs_raw", None)

    @classmethod
    def decl(cls, version: int, order: str) -> cs.Struct:
        return MQRFH_DECL[order]

    def _compare(self):
        return (Header._compare(self), self.NameValueString)

    def _decode_rest(self, c, data, offset, length, order, ccsid) -> None:
        raw = bytes(data[offset + 32:offset + length])
        object.__setattr__(self, "_nvs_raw", (ccsid, raw))
        try:
            nvs: str | bytes = decode_text(raw, ccsid)
        except UnknownCCSID:
            nvs = raw
            self.warnings.append(DecodeWarning("MQRFH", "NameValueString", offset + 32,
                                               "CCSID %d has no converter: the %d bytes are kept undecoded"
                                               % (ccsid, len(raw))))
        object.__setattr__(self, "NameValueString", nvs)

    def _nvs_bytes(self, ccsid: int) -> bytes:
        raw = self._nvs_raw
        if raw is not None and raw[0] == ccsid and _says(raw[1], ccsid, self.NameValueString):
            return raw[1]
        if isinstance(self.NameValueString, (bytes, bytearray)):
            return bytes(self.NameValueString) + b"\x00" * (-len(self.NameValueString) % 4)
        b = encode_text(self.NameValueString, ccsid, structure="MQRFH", field="NameValueString")
        while len(b) % 4:
            b += encode_text(" ", ccsid)
        return b

    def _encode_prepare(self, values, order, ccsid) -> None:
        values["StrucLength"] = 32 + len(self._nvs_bytes(ccsid))

    def _encode_rest(self, order: str, ccsid: int) -> bytes:
        return self._nvs_bytes(ccsid)

    @json_ready
    def to_dict(self) -> dict:
        d = super().to_dict()
        d["NameValueString"] = self.NameValueString
        return d


# --------------------------------------------------------------------------
# Headers with the standard prefix, kept opaque beyond it
# --------------------------------------------------------------------------
class OpaqueHeader(Header):
    """A chainable header whose standard prefix (StrucId, Version,
    StrucLength, Encoding, CodedCharSetId, Format) is decoded and whose
    remaining StrucLength - 28 bytes are kept as ``Data``."""

    NAME = "MQHEADER"
    STRUC_ID = "    "
    VERSIONS = tuple(range(1, 100))
    FIXED_LENGTH = 28

    def __init__(self, Data: bytes = b"", **fields: Any):
        values = {"StrucId": self.STRUC_ID.rstrip(), "Version": 1, "StrucLength": None, "Encoding": ENCODING_LITTLE,
                  "CodedCharSetId": 0, "Format": ""}
        values.update(fields)
        Header.__init__(self, **values)
        object.__setattr__(self, "Data", bytes(Data))

    @classmethod
    def decl(cls, version: int, order: str) -> cs.Struct:
        return PREFIX_DECL[order]

    def _compare(self):
        return (Header._compare(self), self.Data)

    def _decode_rest(self, c, data, offset, length, order, ccsid) -> None:
        object.__setattr__(self, "Data", bytes(data[offset + 28:offset + length]))

    def _encode_prepare(self, values, order, ccsid) -> None:
        values["StrucLength"] = 28 + len(self.Data)

    def _encode_rest(self, order: str, ccsid: int) -> bytes:
        return self.Data

    @json_ready
    def to_dict(self) -> dict:
        d = super().to_dict()
        d["Data"] = self.Data
        return d


class MQCIH(OpaqueHeader):
    """CICS bridge header (format MQCICS)."""
    NAME, STRUC_ID = "MQCIH", "CIH "


class MQIIH(OpaqueHeader):
    """IMS information header (format MQIMS)."""
    NAME, STRUC_ID = "MQIIH", "IIH "


class MQWIH(OpaqueHeader):
    """Work information header (format MQHWIH)."""
    NAME, STRUC_ID = "MQWIH", "WIH "


class MQRMH(OpaqueHeader):
    """Reference message header (format MQHREF)."""
    NAME, STRUC_ID = "MQRMH", "RMH "


class MQDH(OpaqueHeader):
    """Distribution header (format MQHDIST)."""
    NAME, STRUC_ID = "MQDH", "DH  "


#: Format name (MQFMT_*, trimmed) -> the header it announces.
HEADER_BY_FORMAT: dict[str, type[Header]] = {
    "MQXMIT": MQXQH,        # MQFMT_XMIT_Q_HEADER
    "MQHMDE": MQMDE,        # MQFMT_MD_EXTENSION
    "MQDEAD": MQDLH,        # MQFMT_DEAD_LETTER_HEADER
    "MQHRF2": MQRFH2,       # MQFMT_RF_HEADER_2
    "MQHRF": MQRFH,         # MQFMT_RF_HEADER
    "MQCICS": MQCIH,        # MQFMT_CICS
    "MQIMS": MQIIH,         # MQFMT_IMS
    "MQHWIH": MQWIH,        # MQFMT_WORK_INFO_HEADER
    "MQHREF": MQRMH,        # MQFMT_REF_MSG_HEADER
    "MQHDIST": MQDH,        # MQFMT_DIST_HEADER
}


def header_class_for_format(fmt: str) -> type[Header] | None:
    return HEADER_BY_FORMAT.get(fmt.rstrip(" \x00").upper())


def decode_header(fmt: str, data: bytes, offset: int, end: int, encoding: int, ccsid: int) -> Header | None:
    """Decode the header that Format ``fmt`` announces at ``offset``, or
    None when ``fmt`` names no header."""
    cls = header_class_for_format(fmt)
    if cls is None:
        return None
    return cls.decode(data, offset, end, encoding, ccsid)
