"""Row-level errors of the batch decoders, shared by both implementations.

The compiled walker records an error as small integers -- a structure code,
a field code, a reason code, up to three integer arguments of the reason --
and the offset; :func:`error_columns` turns them into the ``error_*``
columns (only failing records become Python objects).  The tables below are
the names and sentences of :mod:`mqcodec.ibmmq.pcf`'s ``DecodeError``\\ s, so a
record gives the same ``error_structure``, ``error_field``,
``error_offset`` *and* ``error_reason`` whichever implementation decoded it
(tests/test_batch_equivalence.py compares all four).

The index of every entry is used as a literal code by ``_ext/pcf_batch.pyx``:
append, never reorder.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["STRUCTURES", "FIELDS", "REASONS", "REASON_TABLE", "REASON_CODES", "NULL_RECORD", "reason_text",
           "error_columns", "no_error_columns"]

#: structure names (index = code), as pcf.py names them
STRUCTURES = [
    "MQCFH",         # 0
    "MQEPH",         # 1
    "PCFParameter",  # 2: a parameter whose Type is not known (or not read yet)
    "MQCFIN",        # 3
    "MQCFST",        # 4
    "MQCFIL",        # 5
    "MQCFSL",        # 6
    "MQCFT_USER",    # 7
    "MQCFBS",        # 8
    "MQCFIF",        # 9
    "MQCFSF",        # 10
    "MQCFBF",        # 11
    "MQCFGR",        # 12
    "MQCFIN64",      # 13
    "MQCFIL64",      # 14
    "record",        # 15: the input record itself (null)
    "PCF",           # 16: pure codec's defensive catch-all (never expected)
]

_CFH_FIELDS = ["Type", "StrucLength", "Version", "Command", "MsgSeqNumber", "Control",
               "CompCode", "Reason", "ParameterCount"]

#: field names (index = code)
FIELDS = (
    [""]                                                            # 0
    + _CFH_FIELDS                                                   # 1..9 (MQCFH, offset 4*(code-1))
    + ["StrucId", "Encoding", "CodedCharSetId", "Format", "Flags"]  # 10..14 (MQEPH)
    + ["PCFHeader." + f for f in _CFH_FIELDS]                       # 15..23 (MQEPH's embedded MQCFH)
    + ["Count", "StringLength", "FilterValueLength"]                # 24..26
)

#: reason sentences (index = code), %-formatted with the error's integer
#: arguments; the same texts as mqcodec.ibmmq.pcf's DecodeError reasons.
#: (name, sentence): ``_ext/pcf_batch.pyx`` uses the codes as R_<name> and
#: checks them against REASON_CODES when it is imported.
REASON_TABLE: tuple[tuple[str, str], ...] = (
    ("DETECT_TRUNC", "truncated: %d bytes cannot show the byte order (MQCFH needs 36)"),              # 0
    ("DETECT_NONE", "neither byte order gives a plausible MQCFH (Type, StrucLength 36, Version 1-3)"),  # 1
    ("FIXED_TRUNC", "truncated: %d bytes needed, %d present"),                                        # 2
    ("EPH_VERSION", "Version %d is not MQEPH_VERSION_1"),                                             # 3
    ("EPH_SMALL", "StrucLength %d is smaller than the 68-byte MQEPH"),                                # 4
    ("PAST_END", "StrucLength %d runs past the end (%d bytes remain)"),                               # 5
    ("CFH_LEN", "StrucLength %d is not MQCFH_STRUC_LENGTH (36)"),                                     # 6
    ("CFH_VERSION", "Version %d is not 1, 2 or 3"),                                                   # 7
    ("NEG_PCOUNT", "negative ParameterCount %d"),                                                     # 8
    ("PCOUNT_ROOM", "%d parameters need at least %d bytes but only %d remain"),                       # 9
    ("EPH_SLACK", "%d bytes inside StrucLength follow the last parameter"),                           # 10
    ("PARAM_TRUNC", "truncated: a parameter structure needs %d bytes, %d present"),                   # 11
    ("SLEN_TRUNC", "truncated: StrucLength needs 4 bytes, %d present"),                               # 12
    ("UNKNOWN_TYPE", "unknown PCF structure type %d"),                                                # 13
    ("TOO_SMALL", "StrucLength %d is smaller than the %d-byte fixed part"),                           # 14
    ("NEG_COUNT", "negative Count %d"),                                                               # 15
    ("IL_COUNT", "Count %d needs %d bytes of Values but StrucLength leaves %d"),                      # 16
    ("NEG_STRINGLENGTH", "negative StringLength %d"),                                                 # 17
    ("NEG_FVL", "negative FilterValueLength %d"),                                                     # 18
    ("FIT_STRINGLENGTH", "StringLength %d does not fit in StrucLength %d"),                           # 19
    ("FIT_FVL", "FilterValueLength %d does not fit in StrucLength %d"),                               # 20
    ("SL_FIT", "Count %d x StringLength %d does not fit in StrucLength %d"),                          # 21
    ("SL_EMPTY", "Count %d of empty strings exceeds the input size"),                                 # 22
    ("TOO_DEEP", "groups nested deeper than %d"),                                                     # 23
    ("NULL", "null record"),                                                                          # 24
)
REASONS = [text for _name, text in REASON_TABLE]
#: name -> code
REASON_CODES = {name: code for code, (name, _text) in enumerate(REASON_TABLE)}

#: (structure, field, offset, reason) of a null entry of the input
NULL_RECORD = ("record", "", 0, "null record")


def reason_text(code: int, args) -> str:
    fmt = REASONS[code]
    n = fmt.count("%d")
    return fmt % tuple(int(a) for a in args[:n]) if n else fmt


_NO_ERRORS: dict = {}


def no_error_columns(n: int) -> tuple:
    """The five columns of ``n`` records without error: all null, made once per
    ``n`` (the last few sizes kept; Arrow arrays are immutable, so calls of one
    size share them)."""
    cols = _NO_ERRORS.get(n)
    if cols is None:
        if len(_NO_ERRORS) >= 8:
            _NO_ERRORS.clear()
        cols = _NO_ERRORS[n] = (pa.nulls(n, pa.string()), pa.nulls(n, pa.string()), pa.nulls(n, pa.int64()),
                                pa.nulls(n, pa.string()), pa.nulls(n, pa.binary()))
    return cols


def error_columns(e_struct, e_field, e_reason, e_offset, e_args, raw_ok, buf, offsets):
    """The error_structure/field/offset/reason and raw columns for a batch.

    ``e_struct`` is -1 for records without error; ``e_args`` an (n, 3) int64
    array; ``raw_ok`` marks the rows whose bytes go to ``raw`` (failed and
    not null)."""
    n = len(e_struct)
    failed = np.asarray(e_struct) >= 0
    if not failed.any():
        return no_error_columns(n)
    s: list[str | None] = [None] * n
    f: list[str | None] = [None] * n
    r: list[str | None] = [None] * n
    raw: list[bytes | None] = [None] * n
    mv = memoryview(buf).cast("B") if len(buf) else b""
    for i in np.flatnonzero(failed).tolist():  # only failing records become Python objects
        s[i] = STRUCTURES[e_struct[i]]
        f[i] = FIELDS[e_field[i]]
        r[i] = reason_text(e_reason[i], e_args[i])
        if raw_ok[i]:
            raw[i] = bytes(mv[offsets[i]:offsets[i + 1]])
    return (pa.array(s, pa.string()), pa.array(f, pa.string()),
            pa.array(np.asarray(e_offset, dtype=np.int64), pa.int64(), mask=~failed),
            pa.array(r, pa.string()), pa.array(raw, pa.binary()))
