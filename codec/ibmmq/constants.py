"""IBM MQ constants, as data, in one place.

SKELETON: the API below is fixed; the tables are being completed (the
constants helper owns this file).  Other modules use only this API:

* module-level ints/strings for every name (``MQCFT_INTEGER``, ``MQFMT_ADMIN``);
* ``FAMILIES[prefix]`` -> :class:`ConstantFamily` (``MQCFT``, ``MQCMD``, ...),
  also bound as module attributes (``MQCFT.name_of(3) == "MQCFT_INTEGER"``);
* ``parameter_name(param_id, cftype=None)`` -> the MQIA*/MQCA*/MQBACF/MQGACF
  name of a PCF parameter id (type-aware where ranges overlap);
* ``value_name(param_id, value)`` -> the name a value has for that parameter
  (MQIACF_OPERATION_TYPE 4 -> "MQOPER_PUT"), or None.
"""
from __future__ import annotations

from typing import Iterator

__all__ = ["ConstantFamily", "FAMILIES", "parameter_name", "value_name", "ENCODING_BIG", "ENCODING_LITTLE"]


class ConstantFamily:
    """One enumeration: names (with their prefix) to values and back."""

    def __init__(self, prefix: str, items: dict[str, object]):
        self.prefix = prefix
        self._by_name = dict(items)
        self._by_value: dict[object, str] = {}
        for name, value in items.items():
            self._by_value.setdefault(value, name)  # first name wins for aliases

    def name_of(self, value, default=None):
        return self._by_value.get(value, default)

    def value_of(self, name: str):
        return self._by_name[name]

    def items(self):
        return self._by_name.items()

    def __contains__(self, name) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __repr__(self) -> str:
        return "<ConstantFamily %s (%d names)>" % (self.prefix, len(self))


_DATA: dict[str, dict[str, object]] = {
    "MQCFT": {
        "MQCFT_NONE": 0, "MQCFT_COMMAND": 1, "MQCFT_RESPONSE": 2, "MQCFT_INTEGER": 3,
        "MQCFT_STRING": 4, "MQCFT_INTEGER_LIST": 5, "MQCFT_STRING_LIST": 6, "MQCFT_EVENT": 7,
        "MQCFT_USER": 8, "MQCFT_BYTE_STRING": 9, "MQCFT_TRACE_ROUTE": 10, "MQCFT_REPORT": 12,
        "MQCFT_INTEGER_FILTER": 13, "MQCFT_STRING_FILTER": 14, "MQCFT_BYTE_STRING_FILTER": 15,
        "MQCFT_COMMAND_XR": 16, "MQCFT_XR_MSG": 17, "MQCFT_XR_ITEM": 18, "MQCFT_XR_SUMMARY": 19,
        "MQCFT_GROUP": 20, "MQCFT_STATISTICS": 21, "MQCFT_ACCOUNTING": 22, "MQCFT_INTEGER64": 23,
        "MQCFT_INTEGER64_LIST": 25, "MQCFT_APP_ACTIVITY": 26, "MQCFT_STATUS": 27,
    },
    "MQENC": {
        "MQENC_INTEGER_UNDEFINED": 0x0, "MQENC_INTEGER_NORMAL": 0x1, "MQENC_INTEGER_REVERSED": 0x2,
        "MQENC_DECIMAL_UNDEFINED": 0x0, "MQENC_DECIMAL_NORMAL": 0x10, "MQENC_DECIMAL_REVERSED": 0x20,
        "MQENC_FLOAT_UNDEFINED": 0x0, "MQENC_FLOAT_IEEE_NORMAL": 0x100, "MQENC_FLOAT_IEEE_REVERSED": 0x200,
        "MQENC_FLOAT_S390": 0x300, "MQENC_FLOAT_TNS": 0x400,
        "MQENC_INTEGER_MASK": 0xF, "MQENC_DECIMAL_MASK": 0xF0, "MQENC_FLOAT_MASK": 0xF00,
    },
    "MQFMT": {
        "MQFMT_NONE": "        ", "MQFMT_ADMIN": "MQADMIN ", "MQFMT_EVENT": "MQEVENT ",
        "MQFMT_PCF": "MQPCF   ", "MQFMT_STRING": "MQSTR   ", "MQFMT_EMBEDDED_PCF": "MQHEPCF ",
        "MQFMT_XMIT_Q_HEADER": "MQXMIT  ", "MQFMT_MD_EXTENSION": "MQHMDE  ",
        "MQFMT_DEAD_LETTER_HEADER": "MQDEAD  ", "MQFMT_RF_HEADER_2": "MQHRF2  ",
        "MQFMT_RF_HEADER": "MQHRF   ", "MQFMT_TRIGGER": "MQTRIG  ",
    },
}

FAMILIES: dict[str, ConstantFamily] = {p: ConstantFamily(p, d) for p, d in _DATA.items()}

for _fam in FAMILIES.values():
    globals().update(_fam.items())
    globals()[_fam.prefix] = _fam

#: MQENC values of the two byte orders (integer, packed decimal and float all
#: "normal" = big-endian, 273; all "reversed" = little-endian, 546).
ENCODING_BIG = 0x111
ENCODING_LITTLE = 0x222


def parameter_name(param_id: int, cftype: int | None = None) -> str | None:
    """Name of a PCF parameter identifier (None when unknown)."""
    return None


def value_name(param_id: int, value: int) -> str | None:
    """Name of ``value`` where parameter ``param_id`` gives values a meaning."""
    return None
