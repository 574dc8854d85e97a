"""IBM MQ constants, as data, in one place.

The values live in :mod:`mqcodec.ibmmq.constants_data` (generated from IBM's
published declarations of cmqc.h / cmqcfc.h / cmqxc.h and cross-checked
against Wireshark's dissector tables by ``tests/test_ibmmq_constants.py``;
see ``docs/ibmmq-constants.md``).  Other modules use only this API:

* module-level ints/strings for every name (``MQCFT_INTEGER``, ``MQFMT_ADMIN``);
* ``FAMILIES[prefix]`` -> :class:`ConstantFamily` (``MQCFT``, ``MQCMD``, ...),
  also bound as module attributes (``MQCFT.name_of(3) == "MQCFT_INTEGER"``);
* ``parameter_name(param_id, cftype=None)`` -> the MQIA*/MQCA*/MQBACF/MQGACF
  name of a PCF parameter id (type-aware where ranges overlap);
* ``value_name(param_id, value)`` -> the name a value has for that parameter
  (MQIACF_OPERATION_TYPE 4 -> "MQOPER_PUT"), or None;
* ``reason_name(code)`` (MQRC_* and MQRCCF_*), ``format_name(fmt)``
  (``"MQADMIN "`` -> ``"MQFMT_ADMIN"``), ``MQRO.flag_names(report)`` for bit fields.

Integers are MQLONG values, stored signed 32-bit as IBM declares them
(``MQCC_UNKNOWN == -1``, ``MQROUTE_DELIVER_REJ_UNSUP_MASK == -65536``).  Every
lookup by value accepts either reading of the same 32 bits, so a decoder that
unpacks ``>I`` and one that unpacks ``>i`` get the same names.

Pure data and lookups: no I/O, nothing here raises on unknown input (lookups
answer None, or ``default``), except ``ConstantFamily.value_of`` which raises
KeyError for a name that is not in the family.
"""
from __future__ import annotations

import re
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, cast

from .constants_data import DATA

#: family prefix -> {name: value} (the generated literal, as its type)
_GENERATED = cast("dict[str, dict[str, int | str]]", DATA)

__all__ = [
    "ConstantFamily", "FAMILIES", "parameter_name", "value_name", "reason_name", "format_name",
    "parameter_families", "value_family", "is_range_marker", "ENCODING_BIG", "ENCODING_LITTLE",
]

_MASK32 = 0xFFFFFFFF


def _key(value):
    """Lookup key of a value: ints as their unsigned 32-bit pattern."""
    if type(value) is int and -0x80000000 <= value <= _MASK32:
        return value & _MASK32
    return value


#: Names that end like a range marker but are real values.
_NOT_MARKERS = frozenset({"MQCFC_LAST", "MQCFC_NOT_LAST", "MQCUOWC_FIRST", "MQCUOWC_LAST"})
_MARKER_RE = re.compile(r"_(FIRST|LAST|LAST_USED)$")


def is_range_marker(name: str) -> bool:
    """True for ``*_FIRST`` / ``*_LAST`` / ``*_LAST_USED`` bounds and ``*_MASK``
    bit masks: names that exist but never name a value on the wire."""
    if name in _NOT_MARKERS:
        return False
    return bool(_MARKER_RE.search(name)) or name.endswith("_MASK")


class ConstantFamily:
    """One enumeration: names (with their prefix) to values and back.

    ``name_of`` never answers a range marker or mask (see :func:`is_range_marker`);
    where several names share a value it answers the first in IBM's header
    order, or the entry of ``preferred`` for that value.
    """

    _flag_order: list[tuple[int, str]]  # made by _flags() on first use

    def __init__(self, prefix: str, items: Mapping[str, object], preferred: Iterable[str] = ()):
        self.prefix = prefix
        self._by_name = dict(items)
        self._preferred = tuple(preferred)

    # the value -> name indexes, made on first use: importing the constants costs
    # no work per family (a command that names nothing does not pay for them)
    @cached_property
    def _by_value(self) -> dict[object, str]:
        by_value: dict[object, str] = {}
        for name, value in self._by_name.items():
            if not is_range_marker(name):
                by_value.setdefault(_key(value), name)  # first name wins for aliases
        for name in self._preferred:
            if name in self._by_name:
                by_value[_key(self._by_name[name])] = name
        return by_value

    @cached_property
    def _names_by_value(self) -> dict[object, list[str]]:
        names: dict[object, list[str]] = {}
        for name, value in self._by_name.items():
            if not is_range_marker(name):
                names.setdefault(_key(value), []).append(name)
        return names

    def name_of(self, value, default=None):
        try:
            return self._by_value.get(_key(value), default)
        except TypeError:  # unhashable input
            return default

    def names_of(self, value) -> list[str]:
        """Every name (aliases included, markers excluded) that has ``value``."""
        try:
            return list(self._names_by_value.get(_key(value), ()))
        except TypeError:
            return []

    def flag_names(self, value) -> list[str]:
        """Names of the options set in bit-field ``value`` (MQRO, MQMF, MQENC).

        Widest options first, so MQRO_EXCEPTION_WITH_FULL_DATA is named rather
        than MQRO_EXCEPTION plus leftovers; bits no name covers are reported as
        one hex string (``"0x00000800"``).  Zero gives ``[]``.
        """
        if type(value) is not int:
            return []
        rest = value & _MASK32
        chosen = []
        for v, name in self._flags():
            if rest & v == v:
                chosen.append((v, name))
                rest &= ~v
        out = [name for v, name in sorted(chosen, reverse=True)]  # highest bits first
        if rest:
            out.append("0x%08X" % rest)
        return out

    def _flags(self):
        try:
            return self._flag_order
        except AttributeError:
            pairs = [(_key(self._by_name[n]), n) for n in self._by_value.values()
                     if type(self._by_name[n]) is int and _key(self._by_name[n])]
            pairs.sort(key=lambda p: (-bin(p[0]).count("1"), p[0]))
            self._flag_order = pairs
            return pairs

    def value_of(self, name: str):
        return self._by_name[name]

    def get(self, name: str, default=None):
        return self._by_name.get(name, default)

    def items(self):
        return self._by_name.items()

    def values(self) -> list:
        """Distinct values that have a name (markers and masks excluded)."""
        return [self._by_name[n] for n in self._by_value.values()]

    def subset(self, names: Iterable[str], prefix: str | None = None) -> "ConstantFamily":
        """A family of just ``names`` (e.g. the MQROUTE_DETAIL_* values)."""
        names = list(names)
        return ConstantFamily(prefix or self.prefix, {n: self._by_name[n] for n in names})

    def __contains__(self, name) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __repr__(self) -> str:
        return "<ConstantFamily %s (%d names)>" % (self.prefix, len(self))


#: Aliases: which of several names for one value ``name_of`` answers, where
#: IBM's header order would give a superseded name (the header lists the old
#: spelling first): MQAT_ZOS replaced MQAT_MVS/MQAT_OS390, MQAT_UNIX MQAT_AIX,
#: MQAT_NSK MQAT_GUARDIAN, MQAT_QMGR_PUBLISH MQAT_BROKER; the channel-status
#: counters' full spellings replaced *_RCVD.  Wireshark shows the same choices.
PREFERRED: dict[str, tuple[str, ...]] = {
    "MQAT": ("MQAT_ZOS", "MQAT_UNIX", "MQAT_NSK", "MQAT_QMGR_PUBLISH"),
    "MQIACH": ("MQIACH_BYTES_RECEIVED", "MQIACH_BUFFERS_RECEIVED"),
}

#: Names IBM's documentation uses that the headers spell differently: added to
#: their family (module attribute, value_of, names_of).  The trace-route
#: reference writes "MQROUTE_FORWARDING_REJ_UNSUP_MASK"; cmqcfc.h defines
#: MQROUTE_FORWARD_REJ_UNSUP_MASK (a mask, so name_of answers neither).
DOC_ALIASES: dict[str, tuple[str, str]] = {
    "MQROUTE_FORWARDING_REJ_UNSUP_MASK": ("MQROUTE", "MQROUTE_FORWARD_REJ_UNSUP_MASK"),
}


def _build() -> dict[str, ConstantFamily]:
    data = {p: dict(d) for p, d in _GENERATED.items()}
    for alias, (prefix, target) in DOC_ALIASES.items():
        data[prefix][alias] = data[prefix][target]
    fams = {p: ConstantFamily(p, d, PREFERRED.get(p, ())) for p, d in data.items()}
    # MQRC includes the PCF reason codes (MQRCCF_*): one family for reason_name.
    # MQRCCF stays available on its own.
    rc = dict(data["MQRC"])
    rc.update(data["MQRCCF"])
    fams["MQRC"] = ConstantFamily("MQRC", rc, PREFERRED.get("MQRC", ()))
    return fams


FAMILIES: dict[str, ConstantFamily] = _build()

# A family is bound under its prefix, so no prefix may also be a constant's name
# (the carved-out MQIAMO_MONITOR_* value families are named *_VALUES for this).
if any(p in f for p in FAMILIES for f in FAMILIES.values()):  # pragma: no cover - data error
    raise ImportError("a constant family prefix is also a constant's name")

for _fam in FAMILIES.values():
    globals().update(_fam.items())
    globals()[_fam.prefix] = _fam
del _fam

if TYPE_CHECKING:
    # The names bound above from the data (MQCFT_INTEGER, MQFMT_ADMIN, the
    # MQCFT family, ...) are invisible to a type checker: it reads them
    # through this declaration (ints or strings or families, hence Any).
    def __getattr__(name: str) -> Any: ...

_CFT = FAMILIES["MQCFT"]

#: MQENC values of the two byte orders (integer, packed decimal and float all
#: "normal" = big-endian, 273; all "reversed" = little-endian, 546).
ENCODING_BIG = 0x111
ENCODING_LITTLE = 0x222

# -- PCF parameter identifiers -------------------------------------------------

#: Families that name parameter identifiers, by the kind of PCF structure that
#: carries them.  Order matters only where a value is in two families of one
#: list (MQIAMO / MQIAMO64 share ids: the 64-bit name is first for 64-bit types).
_INT_FAMS = ("MQIA", "MQIACF", "MQIACH", "MQIAMO", "MQIAMO64")
_INT64_FAMS = ("MQIAMO64", "MQIAMO", "MQIA", "MQIACF", "MQIACH")
_STR_FAMS = ("MQCA", "MQCACF", "MQCACH", "MQCAMO")
_BYTE_FAMS = ("MQBACF", "MQBA")
_GROUP_FAMS = ("MQGACF",)
_ANY_FAMS = _INT_FAMS + _STR_FAMS + _BYTE_FAMS + _GROUP_FAMS

_BY_CFTYPE: dict[int, tuple[str, ...]] = {
    _CFT.value_of(name): fams
    for names, fams in (
        (("MQCFT_INTEGER", "MQCFT_INTEGER_LIST", "MQCFT_INTEGER_FILTER"), _INT_FAMS),
        (("MQCFT_INTEGER64", "MQCFT_INTEGER64_LIST"), _INT64_FAMS),
        (("MQCFT_STRING", "MQCFT_STRING_LIST", "MQCFT_STRING_FILTER"), _STR_FAMS),
        (("MQCFT_BYTE_STRING", "MQCFT_BYTE_STRING_FILTER"), _BYTE_FAMS),
        (("MQCFT_GROUP",), _GROUP_FAMS),
    )
    for name in names
}


def parameter_families(cftype: int | None = None) -> tuple[str, ...]:
    """Family prefixes searched, in order, for a parameter of PCF type ``cftype``.

    ``None`` or a type that carries no parameter id (MQCFT_COMMAND, ...) gives
    every parameter family: integers, strings, byte strings, groups.
    """
    if cftype is None:
        return _ANY_FAMS
    try:
        return _BY_CFTYPE.get(_key(cftype), _ANY_FAMS)
    except TypeError:  # unhashable
        return _ANY_FAMS


def parameter_name(param_id: int, cftype: int | None = None) -> str | None:
    """Name of a PCF parameter identifier (None when unknown).

    With ``cftype`` (the MQCFT_* Type of the structure carrying the parameter)
    only the families of that kind are searched, so id 703 is
    MQIAMO_AVG_Q_TIME in an MQCFIN but MQIAMO64_AVG_Q_TIME in an MQCFIN64.
    """
    for prefix in parameter_families(cftype):
        name = FAMILIES[prefix].name_of(param_id)
        if name is not None:
            return name
    return None


# -- values of parameters --------------------------------------------------------

def _sub(prefix: str, *names: str) -> ConstantFamily:
    return FAMILIES[prefix].subset(names)


#: Parameter name -> the family that names its values.  Only parameters whose
#: values are enumerations; bit fields (MQIACF_ENCODING, MQIACF_REPORT,
#: MQIACF_MSG_FLAGS) and counts are deliberately absent.
_VALUE_FAMILY_BY_NAME: dict[str, ConstantFamily] = {
    # activity / trace-route (IBM MQ "Trace-route message reference")
    "MQIACF_OPERATION_TYPE": FAMILIES["MQOPER"],
    "MQIACF_ROUTE_DETAIL": _sub("MQROUTE", "MQROUTE_DETAIL_LOW", "MQROUTE_DETAIL_MEDIUM", "MQROUTE_DETAIL_HIGH"),
    "MQIACF_ROUTE_FORWARDING": _sub("MQROUTE", "MQROUTE_FORWARD_ALL", "MQROUTE_FORWARD_IF_SUPPORTED"),
    "MQIACF_ROUTE_DELIVERY": _sub("MQROUTE", "MQROUTE_DELIVER_YES", "MQROUTE_DELIVER_NO"),
    "MQIACF_ROUTE_ACCUMULATION": _sub("MQROUTE", "MQROUTE_ACCUMULATE_NONE", "MQROUTE_ACCUMULATE_IN_MSG",
                                      "MQROUTE_ACCUMULATE_AND_REPLY"),
    "MQIACF_MAX_ACTIVITIES": _sub("MQROUTE", "MQROUTE_UNLIMITED_ACTIVITIES"),
    # message descriptor fields carried as PCF parameters
    "MQIACF_FEEDBACK": FAMILIES["MQFB"],
    "MQIACF_MSG_TYPE": FAMILIES["MQMT"],
    "MQIACF_PERSISTENCE": FAMILIES["MQPER"],
    "MQIACF_PRIORITY": FAMILIES["MQPRI"],
    "MQIACF_EXPIRY": FAMILIES["MQEI"],
    "MQIA_APPL_TYPE": FAMILIES["MQAT"],
    # command / event responses
    "MQIACF_REASON_CODE": FAMILIES["MQRC"],
    "MQIACF_COMP_CODE": FAMILIES["MQCC"],
    "MQIACF_COMMAND": FAMILIES["MQCMD"],
    "MQIACF_REASON_QUALIFIER": FAMILIES["MQRQ"],
    "MQIACF_OBJECT_TYPE": FAMILIES["MQOT"],
    # object attributes
    "MQIA_Q_TYPE": FAMILIES["MQQT"],
    "MQIA_DEF_PERSISTENCE": FAMILIES["MQPER"],
    "MQIA_DEFINITION_TYPE": FAMILIES["MQQDT"],
    "MQIACH_CHANNEL_TYPE": FAMILIES["MQCHT"],
    "MQIACH_CHANNEL_STATUS": FAMILIES["MQCHS"],
    # monitoring metadata (MQ 9.x resource monitoring)
    "MQIAMO_MONITOR_FLAGS": FAMILIES["MQIAMO_MONITOR_FLAGS_VALUES"],
    "MQIAMO_MONITOR_DATATYPE": FAMILIES["MQIAMO_MONITOR_DATATYPE_VALUES"],
}

_VALUE_FAMILY: dict[int, ConstantFamily] = {}
for _name, _vfam in _VALUE_FAMILY_BY_NAME.items():
    _VALUE_FAMILY[_key(globals()[_name])] = _vfam
del _name, _vfam


def value_family(param_id) -> ConstantFamily | None:
    """The family naming the values of integer parameter ``param_id`` (an id
    or its MQIA*/MQIACF* name), or None where values have no names."""
    if isinstance(param_id, str):
        param_id = globals().get(param_id) if param_id.startswith("MQIA") else None
        if param_id is None:
            return None
    try:
        return _VALUE_FAMILY.get(_key(param_id))
    except TypeError:
        return None


def value_name(param_id: int, value: int) -> str | None:
    """Name of ``value`` where parameter ``param_id`` gives values a meaning.

    ``value_name(MQIACF_OPERATION_TYPE, 4) == "MQOPER_PUT"``;
    ``value_name(MQIACF_ROUTE_DETAIL, 8) == "MQROUTE_DETAIL_MEDIUM"``.
    """
    fam = value_family(param_id)
    return None if fam is None else fam.name_of(value)


def reason_name(code: int) -> str | None:
    """MQRC_* or MQRCCF_* name of a reason code (None when unknown)."""
    return FAMILIES["MQRC"].name_of(code)


_FORMATS: dict[str, str] = {}
for _name, _value in FAMILIES["MQFMT"].items():
    _FORMATS.setdefault(_value.rstrip(" "), _name)
del _name, _value


def format_name(fmt) -> str | None:
    """MQFMT_* name of an 8-character format (``"MQADMIN "`` -> ``"MQFMT_ADMIN"``).

    Trailing blanks are not significant (``"MQADMIN"`` matches too; all blanks
    is MQFMT_NONE); ``bytes`` are read as ASCII.  Unknown formats give None.
    """
    if isinstance(fmt, (bytes, bytearray, memoryview)):
        try:
            fmt = bytes(fmt).decode("ascii")
        except UnicodeDecodeError:
            return None
    if not isinstance(fmt, str) or len(fmt) > 8:
        return None
    return _FORMATS.get(fmt.rstrip(" "))
