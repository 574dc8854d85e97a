"""IBM MQ Programmable Command Format (PCF): MQCFH, MQEPH and every PCF
parameter structure, decoded and encoded byte-for-byte.

Layouts are IBM's (IBM MQ reference, "PCF structures"; cmqcfc.h)::

    MQCFH   Type StrucLength(36) Version Command MsgSeqNumber Control
            CompCode Reason ParameterCount
    MQEPH   StrucId("EPH ") Version StrucLength Encoding CodedCharSetId
            Format(8) Flags PCFHeader(MQCFH)                    = 68 bytes
    MQCFIN  Type StrucLength Parameter Value                    = 16
    MQCFIN64 Type StrucLength Parameter Reserved Value(int64)   = 24
    MQCFIL  Type StrucLength Parameter Count Values[Count]      16 + 4n
    MQCFIL64 Type StrucLength Parameter Count Values[Count]     16 + 8n
    MQCFST  Type StrucLength Parameter CodedCharSetId StringLength String
    MQCFSL  Type StrucLength Parameter CodedCharSetId Count StringLength
            Strings[Count] (each StringLength bytes)
    MQCFBS  Type StrucLength Parameter StringLength String
    MQCFGR  Type StrucLength(16) Parameter ParameterCount
            -- the ParameterCount child structures FOLLOW the MQCFGR and are
               not inside its StrucLength; a group with all its children
               counts as one parameter of its parent
    MQCFIF  Type StrucLength Parameter Operator FilterValue     = 20
    MQCFSF  Type StrucLength Parameter Operator CodedCharSetId
            FilterValueLength FilterValue
    MQCFBF  Type StrucLength Parameter Operator FilterValueLength FilterValue

Every MQLONG is signed and in the byte order of the governing header's
Encoding (MQMD, or the header before the MQEPH), never the machine's.

Rules applied while decoding untrusted bytes (see docs/ibmmq-pcf.md):

* a parameter is always stepped over by its own StrucLength (bytes between
  the declared content and StrucLength are padding, kept for re-encoding);
  a group is never skipped by its StrucLength, its children are walked;
* every length and count is checked against the bytes present (and against
  StrucLength) *before* anything is sliced, looped over or allocated;
* groups nest at most :data:`MAX_GROUP_DEPTH` deep;
* every failure is a :class:`~mqcodec.errors.DecodeError` naming the
  structure, the field and the absolute byte offset.
"""
from __future__ import annotations

import struct as _struct
from typing import Any, Iterator

import construct as cs

from ..render import json_ready
from ..ccsid import UnknownCCSID, decode_or_keep, decode_text, encode_text
from ..errors import DecodeError, DecodeWarning, EncodeError, Problems
from . import constants as _c

__all__ = [
    "PcfMessage",
    "PcfParameter",
    "decode_pcf",
    "decode_pcf_at",
    "encode_pcf",
    "MAX_GROUP_DEPTH",
    "DEFAULT_CCSID",
    "PARAMETER_TYPES",
    "HEADER_TYPES",
    "MIN_PARAMETER_LENGTH",
    "MQCFH",
    "MQEPH",
]

#: Groups nested deeper than this raise DecodeError (IBM documents no bound;
#: real messages nest 3-4 deep: Activity > Operation > Message > MQMD).
MAX_GROUP_DEPTH = 64
#: CCSID assumed for strings whose CodedCharSetId is 0 (MQCCSI_DEFAULT) or
#: negative when the caller gives none (an EBCDIC MQEPH StrucId gives 500).
DEFAULT_CCSID = 1208
#: Smallest possible PCF parameter structure (Type, StrucLength, Parameter).
MIN_PARAMETER_LENGTH = 12

# MQCFT values (cmqcfc.h "Types of Structure"); literal so that this module
# works whatever state the constants tables are in.
T_INTEGER = 3
T_STRING = 4
T_INTEGER_LIST = 5
T_STRING_LIST = 6
T_USER = 8
T_BYTE_STRING = 9
T_INTEGER_FILTER = 13
T_STRING_FILTER = 14
T_BYTE_STRING_FILTER = 15
T_GROUP = 20
T_INTEGER64 = 23
T_INTEGER64_LIST = 25

_ENC_BIG = 0x111
_ENC_LITTLE = 0x222
_EPH_ASCII = b"EPH "
_EPH_EBCDIC = b"\xc5\xd7\xc8\x40"
#: MQCFH.Type values a PCF message header can carry (cmqcfc.h).
HEADER_TYPES = frozenset({1, 2, 7, 8, 10, 12, 16, 17, 18, 19, 21, 22, 26, 27})


# ---------------------------------------------------------------------------
# Declarations (as IBM's tables list the fields), one set per byte order
# ---------------------------------------------------------------------------

def _declare(MQLONG: cs.Construct, MQINT64: cs.Construct) -> dict[str, cs.Struct]:
    MQCFH = cs.Struct(
        "Type" / MQLONG,
        "StrucLength" / MQLONG,
        "Version" / MQLONG,
        "Command" / MQLONG,
        "MsgSeqNumber" / MQLONG,
        "Control" / MQLONG,
        "CompCode" / MQLONG,
        "Reason" / MQLONG,
        "ParameterCount" / MQLONG,
    )
    return {
        "MQCFH": MQCFH,
        "MQEPH": cs.Struct(
            "StrucId" / cs.Bytes(4),
            "Version" / MQLONG,
            "StrucLength" / MQLONG,
            "Encoding" / MQLONG,
            "CodedCharSetId" / MQLONG,
            "Format" / cs.Bytes(8),
            "Flags" / MQLONG,
            "PCFHeader" / MQCFH,
        ),
        # the part every parameter structure starts with
        "PARAMETER": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG),
        "MQCFIN": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG,
                            "Value" / MQLONG),
        "MQCFIN64": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG,
                              "Reserved" / MQLONG, "Value" / MQINT64),
        # fixed parts; Values / String / Strings / FilterValue follow
        "MQCFIL": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG,
                            "Count" / MQLONG),
        "MQCFIL64": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG,
                              "Count" / MQLONG),
        "MQCFST": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG,
                            "CodedCharSetId" / MQLONG, "StringLength" / MQLONG),
        "MQCFSL": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG,
                            "CodedCharSetId" / MQLONG, "Count" / MQLONG, "StringLength" / MQLONG),
        "MQCFBS": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG,
                            "StringLength" / MQLONG),
        "MQCFGR": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG,
                            "ParameterCount" / MQLONG),
        "MQCFIF": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG,
                            "Operator" / MQLONG, "FilterValue" / MQLONG),
        "MQCFSF": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG,
                            "Operator" / MQLONG, "CodedCharSetId" / MQLONG,
                            "FilterValueLength" / MQLONG),
        "MQCFBF": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG,
                            "Operator" / MQLONG, "FilterValueLength" / MQLONG),
        # MQCFT_USER and (lenient) unknown types: kept opaque after these
        "OPAQUE": cs.Struct("Type" / MQLONG, "StrucLength" / MQLONG, "Parameter" / MQLONG),
    }


#: The declarations, big-endian (MQENC_INTEGER_NORMAL) and little-endian.
DECLARATIONS: dict[str, dict[str, cs.Struct]] = {
    ">": _declare(cs.Int32sb, cs.Int64sb),
    "<": _declare(cs.Int32sl, cs.Int64sl),
}
MQCFH = DECLARATIONS[">"]["MQCFH"]
MQEPH = DECLARATIONS[">"]["MQEPH"]


class _Fixed:
    """A fast reader/writer of one fixed-size declaration.

    The declaration above stays the single source of truth: its fields
    (MQLONG, MQINT64, CHAR n; nested Structs flattened) become one
    ``struct.Struct`` format.  tests check both give the same values.
    """

    __slots__ = ("name", "fields", "offsets", "size", "_st")

    def __init__(self, name: str, decl: cs.Struct, order: str):
        self.name = name
        fields: list[str] = []
        offsets: dict[str, int] = {}
        fmt = [order]
        pos = 0

        def walk(sc: cs.Construct, prefix: str) -> None:
            nonlocal pos
            for sub in sc.subcons:
                inner = sub.subcon if isinstance(sub, cs.Renamed) else sub
                fname = prefix + sub.name
                if isinstance(inner, cs.Struct):
                    walk(inner, fname + ".")
                    continue
                offsets[fname] = pos
                if isinstance(inner, cs.FormatField):
                    fmt.append(inner.fmtstr[1:])
                    pos += inner.length
                elif isinstance(inner, cs.Bytes):
                    fmt.append("%ds" % inner.length)
                    pos += inner.length
                else:  # pragma: no cover - declarations use only the above
                    raise TypeError("unsupported field %s" % fname)
                fields.append(fname)

        walk(decl, "")
        self.fields = tuple(fields)
        self.offsets = offsets
        self._st = _struct.Struct("".join(fmt))
        self.size = self._st.size
        assert self.size == decl.sizeof(), name

    def read(self, data: bytes, offset: int) -> dict[str, Any]:
        # callers have checked that self.size bytes are present
        return dict(zip(self.fields, self._st.unpack_from(data, offset)))

    def write(self, values: dict[str, Any]) -> bytes:
        try:
            return self._st.pack(*[values[f] for f in self.fields])
        except (_struct.error, KeyError, TypeError) as exc:
            raise EncodeError(self.name, "", str(exc)) from None


_FIXED: dict[str, dict[str, _Fixed]] = {
    order: {name: _Fixed(name, decl, order) for name, decl in decls.items()}
    for order, decls in DECLARATIONS.items()
}
#: the fixed layouts of :data:`DECLARATIONS` (byte order -> structure -> its
#: ``fields``, ``offsets`` and ``size``), read by the compiled decoders' table generator
FIXED_LAYOUTS = _FIXED
#: the MQEPH's StrucId, ASCII and EBCDIC
EPH_STRUC_IDS = (_EPH_ASCII, _EPH_EBCDIC)

#: MQCFT value -> name of the structure that carries it.
PARAMETER_TYPES: dict[int, str] = {
    T_INTEGER: "MQCFIN",
    T_STRING: "MQCFST",
    T_INTEGER_LIST: "MQCFIL",
    T_STRING_LIST: "MQCFSL",
    T_USER: "MQCFT_USER",
    T_BYTE_STRING: "MQCFBS",
    T_INTEGER_FILTER: "MQCFIF",
    T_STRING_FILTER: "MQCFSF",
    T_BYTE_STRING_FILTER: "MQCFBF",
    T_GROUP: "MQCFGR",
    T_INTEGER64: "MQCFIN64",
    T_INTEGER64_LIST: "MQCFIL64",
}
_DECL_OF_TYPE = {t: ("OPAQUE" if n == "MQCFT_USER" else n) for t, n in PARAMETER_TYPES.items()}


def byte_order(encoding: int | None) -> str:
    """'<' when the MQENC integer part is MQENC_INTEGER_REVERSED (2), else
    '>' (MQENC_INTEGER_NORMAL, and undefined, are big-endian)."""
    return "<" if encoding is not None and (encoding & 0xF) == 2 else ">"


# ---------------------------------------------------------------------------
# Names (only through the constants API; never fail when a name is missing)
# ---------------------------------------------------------------------------

def _family_name(prefix: str, value: Any) -> str | None:
    try:
        fam = _c.FAMILIES.get(prefix)
        return fam.name_of(value) if fam is not None else None
    except Exception:  # the tables are data owned elsewhere: never crash on them
        return None


def type_name(cftype: int) -> str | None:
    return _family_name("MQCFT", cftype)


def _parameter_name(param: int | None, cftype: int) -> str | None:
    if param is None:
        return None
    try:
        return _c.parameter_name(param, cftype)
    except Exception:
        return None


def _value_name(param: int | None, value: int) -> str | None:
    if param is None:
        return None
    try:
        return _c.value_name(param, value)
    except Exception:
        return None


def _reason_name(reason: int) -> str | None:
    return _family_name("MQRC", reason) or _family_name("MQRCCF", reason)


# ---------------------------------------------------------------------------
# The objects
# ---------------------------------------------------------------------------

class PcfParameter:
    """One PCF parameter structure (and, for MQCFGR, its children).

    ``Value`` is an ``int`` (MQCFIN, MQCFIN64, MQCFIF), ``list[int]``
    (MQCFIL, MQCFIL64), ``str`` (MQCFST, MQCFSF), ``list[str]`` (MQCFSL),
    ``bytes`` (MQCFBS, MQCFBF, MQCFT_USER/unknown: the bytes after
    Parameter) or ``list[PcfParameter]`` (MQCFGR).  Filters also have
    ``Operator``.  ``CodedCharSetId`` is the field as stored (0 = inherit);
    ``ccsid`` the one actually used.

    What keeps re-encoding exact: ``raw_value`` (untrimmed string bytes),
    ``padding`` (bytes between the content and StrucLength), ``Reserved``
    (MQCFIN64), ``StringLength`` (MQCFSL).  When ``Value`` is changed so that
    it no longer matches ``raw_value``, encoding builds fresh bytes.
    """

    __slots__ = ("Type", "Parameter", "Value", "Operator", "CodedCharSetId", "ccsid",
                 "Reserved", "StringLength", "StrucLength", "raw_value", "padding",
                 "offset", "declared_count", "raw")

    def __init__(self, Type: int, Parameter: int | None, Value: Any, *, Operator: int | None = None,
                 CodedCharSetId: int | None = None, Reserved: int = 0, StringLength: int | None = None,
                 padding: bytes = b"", raw_value: Any = None, ccsid: int | None = None,
                 StrucLength: int | None = None, offset: int | None = None,
                 declared_count: int | None = None, raw: bytes | None = None):
        self.Type = Type
        self.Parameter = Parameter
        self.Value = Value
        self.Operator = Operator
        self.CodedCharSetId = CodedCharSetId
        self.ccsid = ccsid
        self.Reserved = Reserved
        self.StringLength = StringLength
        self.StrucLength = StrucLength
        self.raw_value = raw_value
        self.padding = padding
        self.offset = offset
        self.declared_count = declared_count
        self.raw = raw

    # -- constructors for building messages --------------------------------
    @classmethod
    def integer(cls, parameter: int, value: int) -> "PcfParameter":
        return cls(T_INTEGER, parameter, value)

    @classmethod
    def integer64(cls, parameter: int, value: int) -> "PcfParameter":
        return cls(T_INTEGER64, parameter, value)

    @classmethod
    def integer_list(cls, parameter: int, values: list[int]) -> "PcfParameter":
        return cls(T_INTEGER_LIST, parameter, list(values))

    @classmethod
    def integer64_list(cls, parameter: int, values: list[int]) -> "PcfParameter":
        return cls(T_INTEGER64_LIST, parameter, list(values))

    @classmethod
    def string(cls, parameter: int, value: str, ccsid: int = 0) -> "PcfParameter":
        return cls(T_STRING, parameter, value, CodedCharSetId=ccsid)

    @classmethod
    def string_list(cls, parameter: int, values: list[str], ccsid: int = 0) -> "PcfParameter":
        return cls(T_STRING_LIST, parameter, list(values), CodedCharSetId=ccsid)

    @classmethod
    def byte_string(cls, parameter: int, value: bytes) -> "PcfParameter":
        return cls(T_BYTE_STRING, parameter, bytes(value))

    @classmethod
    def group(cls, parameter: int, children: list["PcfParameter"]) -> "PcfParameter":
        return cls(T_GROUP, parameter, list(children))

    @classmethod
    def integer_filter(cls, parameter: int, operator: int, value: int) -> "PcfParameter":
        return cls(T_INTEGER_FILTER, parameter, value, Operator=operator)

    @classmethod
    def string_filter(cls, parameter: int, operator: int, value: str, ccsid: int = 0) -> "PcfParameter":
        return cls(T_STRING_FILTER, parameter, value, Operator=operator, CodedCharSetId=ccsid)

    @classmethod
    def byte_string_filter(cls, parameter: int, operator: int, value: bytes) -> "PcfParameter":
        return cls(T_BYTE_STRING_FILTER, parameter, bytes(value), Operator=operator)

    @classmethod
    def user(cls, parameter: int, body: bytes) -> "PcfParameter":
        """MQCFT_USER: Type, StrucLength, then opaque bytes (shown as a
        Parameter MQLONG followed by ``body``)."""
        return cls(T_USER, parameter, bytes(body))

    # -- navigation ---------------------------------------------------------
    @property
    def structure(self) -> str:
        return PARAMETER_TYPES.get(self.Type, "PCFParameter")

    @property
    def is_group(self) -> bool:
        return self.Type == T_GROUP

    @property
    def children(self) -> list["PcfParameter"]:
        return self.Value if self.Type == T_GROUP else []

    @property
    def Name(self) -> str | None:
        return _parameter_name(self.Parameter, self.Type)

    def find(self, param_id: int) -> "PcfParameter | None":
        """First direct child with this Parameter id (groups only)."""
        for p in self.children:
            if p.Parameter == param_id:
                return p
        return None

    def find_all(self, param_id: int) -> list["PcfParameter"]:
        return [p for p in self.children if p.Parameter == param_id]

    def get(self, param_id: int, default: Any = None) -> Any:
        """Value of the first direct child with this id, or ``default``."""
        p = self.find(param_id)
        return default if p is None else p.Value

    def walk(self, depth: int = 0) -> Iterator[tuple[int, "PcfParameter"]]:
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)

    def __iter__(self) -> Iterator["PcfParameter"]:
        return iter(self.children)

    def tree(self) -> tuple:
        """A comparable summary (Type, Parameter, Operator, CodedCharSetId,
        Value with groups expanded), for equality of decoded trees."""
        value = [c.tree() for c in self.Value] if self.Type == T_GROUP else self.Value
        if isinstance(value, list):
            value = tuple(value)
        return (self.Type, self.Parameter, self.Operator, self.CodedCharSetId, value)

    def __repr__(self) -> str:
        return "PcfParameter(%s, %r, %r)" % (self.structure, self.Parameter, self.Value)

    # -- presentation -------------------------------------------------------
    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = {
            "Parameter": self.Parameter,
            "Name": self.Name,
            "Type": type_name(self.Type) or self.Type,
        }
        if self.Operator is not None:
            d["Operator"] = self.Operator
            d["OperatorName"] = _family_name("MQCFOP", self.Operator)
        if self.CodedCharSetId is not None:
            d["CodedCharSetId"] = self.CodedCharSetId
        if self.Type == T_GROUP:
            d["ParameterCount"] = len(self.Value)
            d["Parameters"] = [c.to_dict() for c in self.Value]
            return d
        d["Value"] = self.Value
        if self.Type in (T_INTEGER, T_INTEGER64, T_INTEGER_FILTER):
            name = _value_name(self.Parameter, self.Value)
            if name is not None:
                d["ValueName"] = name
        elif self.Type in (T_INTEGER_LIST, T_INTEGER64_LIST):
            names = [_value_name(self.Parameter, v) for v in self.Value]
            if any(n is not None for n in names):
                d["ValueNames"] = names
        return d

    # -- encoding -----------------------------------------------------------
    def encode(self, order: str = ">", ccsid: int = DEFAULT_CCSID) -> bytes:
        """This structure and (for groups) its children, in byte order
        ``order`` ('>' or '<'); ``ccsid`` is inherited by strings whose
        CodedCharSetId is 0 or negative."""
        out: list[bytes] = []
        _encode_parameter(self, order, ccsid, out, 0)
        return b"".join(out)


class PcfMessage:
    """A decoded (or built) PCF message: optional MQEPH, the MQCFH and the
    parameters.

    ``eph``: dict of MQEPH fields (StrucId, Version, StrucLength, Encoding,
    CodedCharSetId, Format, Flags) or None.  ``cfh``: dict of the MQCFH
    fields.  ``trailing``: bytes after the PCF (for an MQEPH, user data
    described by ``eph`` Encoding/CodedCharSetId/Format).  ``encoding``: the
    MQENC of the PCF structures; ``ccsid``: the CCSID inherited by strings.
    """

    def __init__(self, cfh: dict, parameters: list[PcfParameter], *, eph: dict | None = None,
                 encoding: int = _ENC_BIG, ccsid: int = DEFAULT_CCSID, trailing: bytes = b"",
                 warnings: list[DecodeWarning] | None = None, slack: bytes = b"",
                 cfh_padding: bytes = b"", damaged: bool = False, eph_raw: dict | None = None):
        self.cfh = dict(cfh)
        self.parameters = parameters
        self.eph = None if eph is None else dict(eph)
        self.encoding = encoding
        self.ccsid = ccsid
        self.trailing = trailing
        self.warnings = warnings if warnings is not None else []
        #: bytes inside MQEPH.StrucLength after the last parameter (lenient)
        self.slack = slack
        #: bytes after the 36-byte MQCFH when its StrucLength is larger (lenient)
        self.cfh_padding = cfh_padding
        #: lenient decoding stopped early; counts are re-encoded as declared
        self.damaged = damaged
        self._eph_raw = eph_raw or {}

    @classmethod
    def new(cls, Type: int, Command: int, parameters: list[PcfParameter], *, Version: int = 3,
            MsgSeqNumber: int = 1, Control: int = 1, CompCode: int = 0, Reason: int = 0,
            encoding: int = _ENC_BIG, ccsid: int = DEFAULT_CCSID, eph: dict | None = None,
            trailing: bytes = b"") -> "PcfMessage":
        cfh = {"Type": Type, "StrucLength": 36, "Version": Version, "Command": Command,
               "MsgSeqNumber": MsgSeqNumber, "Control": Control, "CompCode": CompCode,
               "Reason": Reason, "ParameterCount": len(parameters)}
        if eph is not None:
            full = {"StrucId": "EPH ", "Version": 1, "StrucLength": 0, "Encoding": 0,
                    "CodedCharSetId": 0, "Format": "        ", "Flags": 0}
            full.update(eph)
            eph = full
        return cls(cfh, list(parameters), eph=eph, encoding=encoding, ccsid=ccsid, trailing=trailing)

    # -- navigation ---------------------------------------------------------
    @property
    def Type(self) -> int:
        return self.cfh["Type"]

    @property
    def Command(self) -> int:
        return self.cfh["Command"]

    def __iter__(self) -> Iterator[PcfParameter]:
        return iter(self.parameters)

    def __len__(self) -> int:
        return len(self.parameters)

    def find(self, param_id: int, *, recursive: bool = False) -> PcfParameter | None:
        """First parameter with this id (top level, or depth-first through
        groups with ``recursive``)."""
        for p in (self.walk_parameters() if recursive else self.parameters):
            if p.Parameter == param_id:
                return p
        return None

    def find_all(self, param_id: int, *, recursive: bool = False) -> list[PcfParameter]:
        return [p for p in (self.walk_parameters() if recursive else self.parameters)
                if p.Parameter == param_id]

    def get(self, param_id: int, default: Any = None) -> Any:
        p = self.find(param_id)
        return default if p is None else p.Value

    def walk(self) -> Iterator[tuple[int, PcfParameter]]:
        """(depth, parameter) for every parameter, depth-first, groups
        before their children; top level is depth 0."""
        for p in self.parameters:
            yield from p.walk(0)

    def walk_parameters(self) -> Iterator[PcfParameter]:
        for _, p in self.walk():
            yield p

    def tree(self) -> tuple:
        return tuple(p.tree() for p in self.parameters)

    @property
    def next_encoding(self) -> int | None:
        """MQEPH.Encoding: encoding of the data after the parameters."""
        return None if self.eph is None else self.eph["Encoding"]

    @property
    def next_ccsid(self) -> int | None:
        return None if self.eph is None else self.eph["CodedCharSetId"]

    @property
    def next_format(self) -> str | None:
        return None if self.eph is None else self.eph["Format"]

    def __repr__(self) -> str:
        return "PcfMessage(Type=%r, Command=%r, %d parameters)" % (
            self.cfh.get("Type"), self.cfh.get("Command"), len(self.parameters))

    # -- presentation -------------------------------------------------------
    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = {}
        if self.eph is not None:
            d["MQEPH"] = dict(self.eph)
        cfh = self.cfh
        d["MQCFH"] = {
            "Type": cfh["Type"],
            "TypeName": type_name(cfh["Type"]),
            "StrucLength": cfh["StrucLength"],
            "Version": cfh["Version"],
            "Command": cfh["Command"],
            "CommandName": _family_name("MQCMD", cfh["Command"]),
            "MsgSeqNumber": cfh["MsgSeqNumber"],
            "Control": cfh["Control"],
            "CompCode": cfh["CompCode"],
            "Reason": cfh["Reason"],
            "ReasonName": _reason_name(cfh["Reason"]),
            "ParameterCount": cfh["ParameterCount"],
        }
        d["Encoding"] = self.encoding
        d["CodedCharSetId"] = self.ccsid
        d["Parameters"] = [p.to_dict() for p in self.parameters]
        if self.trailing:
            d["Trailing"] = self.trailing
        if self.warnings:
            d["Warnings"] = [w.to_dict() for w in self.warnings]
        return d

    def encode(self) -> bytes:
        return encode_pcf(self)


# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------

class _Ctx(Problems):
    """One PCF decode: the input, its byte order and CCSID, and what is found
    wrong (``error``: raised unless lenient; ``note``: always a warning)."""

    __slots__ = ("data", "order", "fx", "ccsid")

    def __init__(self, data: bytes, order: str, ccsid: int, lenient: bool, warnings: list):
        super().__init__(lenient, warnings)
        self.data = data
        self.order = order
        self.fx = _FIXED[order]
        self.ccsid = ccsid


def _read_long(data: bytes, offset: int, order: str) -> int:
    return _struct.unpack_from(order + "l", data, offset)[0]


def _eff_ccsid(field: int | None, inherited: int) -> int:
    # 0 = MQCCSI_DEFAULT; negative values (MQCCSI_EMBEDDED -1, MQCCSI_INHERIT
    # -2, ...) are not a code page: the enclosing CCSID applies
    return field if field is not None and field > 0 else inherited


def _check_count(ctx: _Ctx, count: int, pos: int, end: int, structure: str, field: str, field_off: int) -> None:
    if count < 0:
        raise DecodeError(structure, field, field_off, "negative ParameterCount %d" % count)
    room = end - pos
    if count * MIN_PARAMETER_LENGTH > room:
        raise DecodeError(structure, field, field_off,
                          "%d parameters need at least %d bytes but only %d remain"
                          % (count, count * MIN_PARAMETER_LENGTH, max(room, 0)))


def _decode_list(ctx: _Ctx, pos: int, end: int, count: int, depth: int, out: list) -> int:
    for _ in range(count):
        param, pos = _decode_parameter(ctx, pos, end, depth)
        out.append(param)
    return pos


def _decode_parameter(ctx: _Ctx, pos: int, end: int, depth: int) -> tuple[PcfParameter, int]:
    data, order, fx = ctx.data, ctx.order, ctx.fx
    avail = end - pos
    if avail < 4:
        raise DecodeError("PCFParameter", "Type", pos,
                          "truncated: a parameter structure needs %d bytes, %d present"
                          % (MIN_PARAMETER_LENGTH, max(avail, 0)))
    cftype = _read_long(data, pos, order)
    structure = PARAMETER_TYPES.get(cftype, "PCFParameter")
    if avail < 8:
        raise DecodeError(structure, "StrucLength", pos + 4,
                          "truncated: StrucLength needs 4 bytes, %d present" % (avail - 4))
    length = _read_long(data, pos + 4, order)
    decl_name = _DECL_OF_TYPE.get(cftype)
    if decl_name is None:
        if not ctx.lenient:
            raise DecodeError("PCFParameter", "Type", pos, "unknown PCF structure type %d" % cftype)
        decl_name = "OPAQUE"
    f = fx[decl_name]
    if length < f.size:
        raise DecodeError(structure, "StrucLength", pos + 4,
                          "StrucLength %d is smaller than the %d-byte fixed part" % (length, f.size))
    if length > avail:
        raise DecodeError(structure, "StrucLength", pos + 4,
                          "StrucLength %d runs past the end (%d bytes remain)" % (length, avail))
    if decl_name == "OPAQUE" and cftype not in PARAMETER_TYPES:
        ctx.note("PCFParameter", "Type", pos,
                 "unknown PCF structure type %d kept opaque (%d bytes)" % (cftype, length))
    stop = pos + length
    v = f.read(data, pos)
    p = PcfParameter(cftype, v["Parameter"], None, StrucLength=length, offset=pos)
    content_end = pos + f.size

    if cftype == T_INTEGER or cftype == T_INTEGER64:
        p.Value = v["Value"]
        if cftype == T_INTEGER64:
            p.Reserved = v["Reserved"]
    elif cftype == T_INTEGER_LIST or cftype == T_INTEGER64_LIST:
        count = v["Count"]
        width = 4 if cftype == T_INTEGER_LIST else 8
        coff = pos + f.offsets["Count"]
        if count < 0:
            raise DecodeError(structure, "Count", coff, "negative Count %d" % count)
        if count * width > length - f.size:
            raise DecodeError(structure, "Count", coff,
                              "Count %d needs %d bytes of Values but StrucLength leaves %d"
                              % (count, count * width, length - f.size))
        p.Value = list(_struct.unpack_from("%s%d%s" % (order, count, "l" if width == 4 else "q"),
                                           data, content_end))
        content_end += count * width
    elif cftype in (T_STRING, T_BYTE_STRING, T_STRING_FILTER, T_BYTE_STRING_FILTER):
        lfield = "StringLength" if cftype in (T_STRING, T_BYTE_STRING) else "FilterValueLength"
        slen = v[lfield]
        loff = pos + f.offsets[lfield]
        if slen < 0:
            raise DecodeError(structure, lfield, loff, "negative %s %d" % (lfield, slen))
        if slen > length - f.size:
            raise DecodeError(structure, lfield, loff,
                              "%s %d does not fit in StrucLength %d" % (lfield, slen, length))
        raw_at = content_end
        raw = bytes(data[content_end:content_end + slen])
        content_end += slen
        if cftype in (T_INTEGER_FILTER, T_STRING_FILTER, T_BYTE_STRING_FILTER):
            p.Operator = v["Operator"]
        if cftype in (T_STRING, T_STRING_FILTER):
            p.CodedCharSetId = v["CodedCharSetId"]
            p.ccsid = _eff_ccsid(p.CodedCharSetId, ctx.ccsid)
            p.raw_value = raw
            # a CCSID without a converter: the bytes are the Value, with a warning
            p.Value = decode_or_keep(raw, p.ccsid, ctx.warnings, structure,
                                     "String" if cftype == T_STRING else "FilterValue", raw_at)
        else:
            p.Value = raw
    elif cftype == T_STRING_LIST:
        count, slen = v["Count"], v["StringLength"]
        if count < 0:
            raise DecodeError(structure, "Count", pos + f.offsets["Count"], "negative Count %d" % count)
        if slen < 0:
            raise DecodeError(structure, "StringLength", pos + f.offsets["StringLength"],
                              "negative StringLength %d" % slen)
        if count * slen > length - f.size:
            raise DecodeError(structure, "StringLength", pos + f.offsets["StringLength"],
                              "Count %d x StringLength %d does not fit in StrucLength %d"
                              % (count, slen, length))
        if slen == 0 and count > len(data):
            # empty strings take no bytes: bound the list by the input size
            raise DecodeError(structure, "Count", pos + f.offsets["Count"],
                              "Count %d of empty strings exceeds the input size" % count)
        p.CodedCharSetId = v["CodedCharSetId"]
        p.ccsid = _eff_ccsid(p.CodedCharSetId, ctx.ccsid)
        p.StringLength = slen
        raws = [bytes(data[content_end + i * slen:content_end + (i + 1) * slen]) for i in range(count)]
        p.raw_value = raws
        p.Value = [decode_or_keep(r, p.ccsid, ctx.warnings, structure, "Strings", content_end + i * slen)
                   for i, r in enumerate(raws)]
        content_end += count * slen
    elif cftype == T_INTEGER_FILTER:
        p.Operator = v["Operator"]
        p.Value = v["FilterValue"]
    elif cftype == T_GROUP:
        if depth >= MAX_GROUP_DEPTH:
            raise DecodeError("MQCFGR", "", pos, "groups nested deeper than %d" % MAX_GROUP_DEPTH)
        p.padding = bytes(data[content_end:stop])
        count = v["ParameterCount"]
        _check_count(ctx, count, stop, end, "MQCFGR", "ParameterCount", pos + f.offsets["ParameterCount"])
        children: list[PcfParameter] = []
        p.Value = children
        p.declared_count = count
        p.raw = bytes(data[pos:stop])
        nxt = _decode_list(ctx, stop, end, count, depth + 1, children)
        return p, nxt
    else:  # MQCFT_USER, or an unknown type kept opaque (lenient)
        p.Value = bytes(data[content_end:stop])
        content_end = stop
    p.padding = bytes(data[content_end:stop])
    p.raw = bytes(data[pos:stop])
    return p, stop


def _looks_like_cfh(data: bytes, offset: int, order: str) -> int:
    """Plausibility score of an MQCFH at offset in this byte order."""
    t, sl, ver = _struct.unpack_from(order + "3l", data, offset)
    return (sl == 36) * 4 + (1 <= ver <= 3) * 2 + (t in HEADER_TYPES)


def _detect(data: bytes, offset: int, end: int) -> str:
    """The byte order of the PCF at offset, from the MQEPH Version or the
    MQCFH Type/StrucLength/Version read both ways."""
    avail = end - offset
    if avail >= 8 and bytes(data[offset:offset + 4]) in (_EPH_ASCII, _EPH_EBCDIC):
        ver_big = _read_long(data, offset + 4, ">")
        ver_little = _read_long(data, offset + 4, "<")
        if ver_big == 1 and ver_little != 1:
            return ">"
        if ver_little == 1 and ver_big != 1:
            return "<"
        if avail >= 32 + 12:
            offset += 32
            avail -= 32
    if avail < 12:
        raise DecodeError("MQCFH", "Type", offset,
                          "truncated: %d bytes cannot show the byte order (MQCFH needs 36)" % max(avail, 0))
    big = _looks_like_cfh(data, offset, ">")
    little = _looks_like_cfh(data, offset, "<")
    if big == little == 0 or big == little:
        raise DecodeError("MQCFH", "StrucLength", offset + 4,
                          "neither byte order gives a plausible MQCFH (Type, StrucLength 36, Version 1-3)")
    return ">" if big > little else "<"


def _text8(raw: bytes, ebcdic: bool) -> str:
    return decode_text(raw, 500 if ebcdic else 819, trim=False)


def decode_pcf(data: bytes, *, encoding: int | None = None, ccsid: int | None = None,
               lenient: bool = False) -> PcfMessage:
    """Decode a whole PCF message body: MQCFH first, or MQEPH first.

    ``encoding``: the MQENC value of the governing header (MQMD.Encoding),
    273 big-endian / 546 little-endian; None detects the byte order (MQCFH
    Type/StrucLength/Version read in both orders, the plausible one wins;
    MQEPH by StrucId 'EPH ' and its Version 1).  ``ccsid``: the CCSID
    strings inherit when their CodedCharSetId is 0 (default
    :data:`DEFAULT_CCSID`).  Bytes after the PCF land in ``.trailing``.
    """
    data = bytes(data) if not isinstance(data, bytes) else data
    msg, nxt = decode_pcf_at(data, 0, encoding=encoding, ccsid=ccsid, lenient=lenient)
    msg.trailing += data[nxt:]
    return msg


def decode_pcf_at(data: bytes, offset: int, *, encoding: int | None, ccsid: int | None,
                  lenient: bool = False, warnings: list | None = None,
                  end: int | None = None) -> tuple[PcfMessage, int]:
    """Decode a PCF body (MQCFH first, or MQEPH first when the bytes at
    ``offset`` are the StrucId 'EPH ') starting at ``offset`` of a larger
    buffer.

    All offsets in errors are absolute.  ``end`` bounds the body (default:
    end of ``data``).  Returns ``(message, next_offset)``: for an MQCFH the
    offset after its last parameter, for an MQEPH the offset
    MQEPH.StrucLength bytes after it (where the data described by the
    MQEPH's Encoding/CodedCharSetId/Format starts).  ``message.trailing`` is
    left empty: what follows belongs to the caller.  ``warnings``: a list the
    DecodeWarnings of this body are also appended to (the message's own
    ``.warnings`` holds only this body's).
    """
    try:
        msg, nxt = _decode_pcf_at(data, offset, encoding, ccsid, lenient, None, end)
        if warnings is not None:
            warnings.extend(msg.warnings)
        return msg, nxt
    except DecodeError:
        raise
    except RecursionError:
        raise DecodeError("MQCFGR", "", offset, "nesting too deep for this interpreter") from None
    except MemoryError:
        raise DecodeError("PCF", "", offset, "not enough memory to decode") from None
    except (_struct.error, IndexError, ValueError, OverflowError, TypeError, UnicodeError) as exc:
        # defensive: every check above should have caught the problem first
        raise DecodeError("PCF", "", offset, "internal decode failure: %s" % exc) from None


def _decode_pcf_at(data, offset, encoding, ccsid, lenient, warnings, end):
    if not isinstance(data, bytes):
        data = bytes(data)
    end = len(data) if end is None else min(end, len(data))
    if offset < 0 or offset > end:
        raise DecodeError("MQCFH", "", offset, "offset outside the data")
    warnings = warnings if warnings is not None else []
    order = _detect(data, offset, end) if encoding is None else byte_order(encoding)
    enc_value = encoding if encoding is not None else (_ENC_LITTLE if order == "<" else _ENC_BIG)
    fx = _FIXED[order]
    pos = offset
    eph = None
    eph_raw: dict = {}
    pcf_end = end
    strucid = bytes(data[pos:pos + 4]) if end - pos >= 4 else b""
    ebcdic = strucid == _EPH_EBCDIC
    if ccsid is None:
        ccsid = 500 if ebcdic else DEFAULT_CCSID
    ctx = _Ctx(data, order, ccsid, lenient, warnings)

    if strucid in (_EPH_ASCII, _EPH_EBCDIC):
        f = fx["MQEPH"]
        if end - pos < f.size:
            _truncated(f, data, pos, end, "MQEPH")
        v = f.read(data, pos)
        if v["Version"] != 1:
            ctx.error("MQEPH", "Version", pos + 4, "Version %d is not MQEPH_VERSION_1" % v["Version"])
        sl = v["StrucLength"]
        if sl < f.size:
            raise DecodeError("MQEPH", "StrucLength", pos + 8,
                              "StrucLength %d is smaller than the 68-byte MQEPH" % sl)
        if sl > end - pos:
            raise DecodeError("MQEPH", "StrucLength", pos + 8,
                              "StrucLength %d runs past the end (%d bytes remain)" % (sl, end - pos))
        pcf_end = pos + sl
        eph_raw = {"StrucId": v["StrucId"], "Format": v["Format"]}
        eph = {
            "StrucId": _text8(v["StrucId"], ebcdic),
            "Version": v["Version"],
            "StrucLength": sl,
            "Encoding": v["Encoding"],
            "CodedCharSetId": v["CodedCharSetId"],
            "Format": _text8(v["Format"], ebcdic),
            "Flags": v["Flags"],
        }
        cfh = {k.split(".", 1)[1]: v[k] for k in f.fields if k.startswith("PCFHeader.")}
        cfh_at = pos + 32
        pos = cfh_at + 36
    else:
        f = fx["MQCFH"]
        if end - pos < f.size:
            _truncated(f, data, pos, end, "MQCFH")
        cfh = f.read(data, pos)
        cfh_at = pos
        pos += 36

    # MQCFH checks
    cfh_padding = b""
    sl = cfh["StrucLength"]
    if sl != 36:
        if sl < 36 or sl > pcf_end - cfh_at:
            raise DecodeError("MQCFH", "StrucLength", cfh_at + 4,
                              "StrucLength %d is not MQCFH_STRUC_LENGTH (36)" % sl)
        ctx.error("MQCFH", "StrucLength", cfh_at + 4, "StrucLength %d is not MQCFH_STRUC_LENGTH (36)" % sl)
        cfh_padding = bytes(data[pos:cfh_at + sl])
        pos = cfh_at + sl
    if not 1 <= cfh["Version"] <= 3:
        ctx.error("MQCFH", "Version", cfh_at + 8, "Version %d is not 1, 2 or 3" % cfh["Version"])
    count = cfh["ParameterCount"]
    _check_count(ctx, count, pos, pcf_end, "MQCFH", "ParameterCount", cfh_at + 32)

    params: list[PcfParameter] = []
    damaged = False
    if lenient:
        for i in range(count):
            try:
                param, pos = _decode_parameter(ctx, pos, pcf_end, 0)
            except DecodeError as exc:
                ctx.note(exc.structure, exc.field, exc.offset,
                         exc.reason + " (parameters %d..%d of the MQCFH kept as raw bytes)" % (i + 1, count))
                damaged = True
                break
            params.append(param)
    else:
        pos = _decode_list(ctx, pos, pcf_end, count, 0, params)

    msg = PcfMessage(cfh, params, eph=eph, encoding=enc_value, ccsid=ccsid, warnings=warnings,
                     cfh_padding=cfh_padding, damaged=damaged, eph_raw=eph_raw)
    if damaged:
        if eph is not None:  # the undecoded rest of the parameters, inside StrucLength
            msg.slack = bytes(data[pos:pcf_end])
            return msg, pcf_end
        msg.trailing = bytes(data[pos:end])
        return msg, end
    if eph is not None:
        if pos != pcf_end:
            ctx.error("MQEPH", "StrucLength", offset + 8,
                        "%d bytes inside StrucLength follow the last parameter" % (pcf_end - pos))
            msg.slack = bytes(data[pos:pcf_end])
        return msg, pcf_end
    return msg, pos


def _truncated(f: _Fixed, data: bytes, pos: int, end: int, structure: str) -> None:
    avail = max(end - pos, 0)
    cut_field, cut_at = f.fields[0], pos
    for name in f.fields:
        rel = f.offsets[name]
        if rel <= avail:
            cut_field, cut_at = name, pos + rel
    raise DecodeError(structure, cut_field, cut_at,
                      "truncated: %d bytes needed, %d present" % (f.size, avail))


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------

def _pad4(n: int) -> bytes:
    return b"\x00" * (-n % 4)


def _raw_matches(raw: Any, ccsid: int, value: Any) -> bool:
    """Whether kept bytes ``raw`` still say ``value`` (a str, or the bytes
    kept for a CCSID without a converter)."""
    if not isinstance(raw, (bytes, bytearray)):
        return False
    if isinstance(value, (bytes, bytearray)):
        return bytes(raw) == bytes(value)
    try:
        return decode_text(bytes(raw), ccsid) == value
    except UnknownCCSID:
        return False


def _encode_str(p: PcfParameter, inherited: int) -> bytes:
    eff = _eff_ccsid(p.CodedCharSetId, inherited)
    if _raw_matches(p.raw_value, eff, p.Value):
        return bytes(p.raw_value)
    if not isinstance(p.Value, (str, bytes, bytearray)):
        raise EncodeError(p.structure, "String", "Value must be str (or bytes), not %s" % type(p.Value).__name__)
    text = p.Value if isinstance(p.Value, str) else bytes(p.Value)
    return encode_text(text, eff, structure=p.structure, field="String")


def _encode_parameter(p: PcfParameter, order: str, inherited: int, out: list, depth: int) -> None:
    fx = _FIXED[order]
    t = p.Type
    decl = _DECL_OF_TYPE.get(t, "OPAQUE")
    f = fx[decl]
    v: dict[str, Any] = {"Type": t, "Parameter": p.Parameter if p.Parameter is not None else 0}
    content = b""
    if depth > MAX_GROUP_DEPTH:
        raise EncodeError("MQCFGR", "", "groups nested deeper than %d" % MAX_GROUP_DEPTH)
    try:
        if t in (T_INTEGER, T_INTEGER64):
            v["Value"] = int(p.Value)
            if t == T_INTEGER64:
                v["Reserved"] = p.Reserved or 0
        elif t in (T_INTEGER_LIST, T_INTEGER64_LIST):
            vals = [int(x) for x in p.Value]
            v["Count"] = len(vals)
            content = _struct.pack("%s%d%s" % (order, len(vals), "l" if t == T_INTEGER_LIST else "q"), *vals)
        elif t == T_STRING or t == T_STRING_FILTER:
            content = _encode_str(p, inherited)
            v["CodedCharSetId"] = p.CodedCharSetId or 0
            v["StringLength" if t == T_STRING else "FilterValueLength"] = len(content)
            if t == T_STRING_FILTER:
                v["Operator"] = p.Operator
        elif t in (T_BYTE_STRING, T_BYTE_STRING_FILTER):
            content = bytes(p.Value)
            v["StringLength" if t == T_BYTE_STRING else "FilterValueLength"] = len(content)
            if t == T_BYTE_STRING_FILTER:
                v["Operator"] = p.Operator
        elif t == T_STRING_LIST:
            eff = _eff_ccsid(p.CodedCharSetId, inherited)
            values = list(p.Value)
            raws = p.raw_value
            if (isinstance(raws, list) and len(raws) == len(values) and p.StringLength is not None
                    and all(_raw_matches(r, eff, s) for r, s in zip(raws, values))):
                slen = p.StringLength
                items = raws
            else:
                enc = [encode_text(s, eff, structure="MQCFSL", field="Strings") for s in values]
                slen = max((len(e) for e in enc), default=0)
                items = [encode_text(s, eff, slen, structure="MQCFSL", field="Strings") for s in values]
            content = b"".join(items)
            v.update(CodedCharSetId=p.CodedCharSetId or 0, Count=len(values), StringLength=slen)
        elif t == T_INTEGER_FILTER:
            v["Operator"] = p.Operator
            v["FilterValue"] = int(p.Value)
        elif t == T_GROUP:
            v["ParameterCount"] = len(p.Value)
        else:  # MQCFT_USER / opaque
            content = bytes(p.Value)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, EncodeError):
            raise
        raise EncodeError(p.structure, "Value", str(exc)) from None
    body_len = f.size + len(content)
    if decl == "OPAQUE":
        padding = b""  # the opaque bytes run to StrucLength already
    elif p.raw is not None and p.raw[f.size:] == content + p.padding:
        padding = p.padding  # decoded and unchanged: the original bytes
    elif p.raw is not None and len(p.raw) - len(p.padding) == body_len:
        padding = p.padding  # same content length: keep the original padding
    else:
        padding = _pad4(body_len)  # new content: IBM wants a multiple of 4
    v["StrucLength"] = body_len + len(padding)
    fields = dict(v)
    for name in f.fields:
        fields.setdefault(name, 0)
    if fields.get("Operator") is None:
        fields["Operator"] = 0
    out.append(f.write(fields) + content + padding)
    if t == T_GROUP:
        for child in p.Value:
            _encode_parameter(child, order, inherited, out, depth + 1)


def encode_pcf(msg: PcfMessage) -> bytes:
    """The bytes of ``msg``: MQEPH (if any), MQCFH, parameters, trailing.

    Counts and lengths are computed from the tree (ParameterCount,
    StrucLength, Count, StringLength); decoded padding and untrimmed string
    bytes are reused so that decode -> encode gives identical bytes."""
    order = byte_order(msg.encoding)
    fx = _FIXED[order]
    body: list[bytes] = []
    for p in msg.parameters:
        _encode_parameter(p, order, msg.ccsid, body, 0)
    params = b"".join(body)
    cfh = dict(msg.cfh)
    cfh["StrucLength"] = 36 + len(msg.cfh_padding)
    if not msg.damaged:
        cfh["ParameterCount"] = len(msg.parameters)
    try:
        cfh_bytes = fx["MQCFH"].write(cfh) + msg.cfh_padding
    except EncodeError as exc:
        raise EncodeError("MQCFH", exc.field, exc.reason) from None
    if msg.eph is None:
        return cfh_bytes + params + msg.trailing
    e = msg.eph
    ebcdic = msg._eph_raw.get("StrucId") == _EPH_EBCDIC
    strucid = msg._eph_raw.get("StrucId")
    if strucid is None or _text8(strucid, ebcdic) != e.get("StrucId", "EPH "):
        strucid = encode_text(e.get("StrucId", "EPH "), 500 if ebcdic else 819, 4, structure="MQEPH",
                              field="StrucId")
    fmt = msg._eph_raw.get("Format")
    if fmt is None or _text8(fmt, ebcdic) != e.get("Format", "        "):
        fmt = encode_text(e.get("Format", "        "), 500 if ebcdic else 819, 8, structure="MQEPH",
                          field="Format")
    head = fx["MQEPH"]
    values = {
        "StrucId": strucid, "Version": e.get("Version", 1), "Encoding": e.get("Encoding", 0),
        "CodedCharSetId": e.get("CodedCharSetId", 0), "Format": fmt, "Flags": e.get("Flags", 0),
    }
    total = 32 + len(cfh_bytes) + len(params) + len(msg.slack)
    values["StrucLength"] = total
    for k, val in cfh.items():
        values["PCFHeader." + k] = val
    eph_bytes = head.write(values)[:32]
    return eph_bytes + cfh_bytes + params + msg.slack + msg.trailing
