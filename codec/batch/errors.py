"""Row-level errors of the batch decoders, shared by both implementations.

The compiled walker records an error as three small integers (indices into
the tables below) and an offset; :func:`error_columns` turns them into the
``error_*`` columns and keeps the failing records' raw bytes.  The pure
implementation maps its :class:`~mqcodec.DecodeError` to the same columns,
so the two agree on structure, field and offset.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

#: structure names (index = code); 2 is a parameter whose Type is not known
STRUCTURES = [
    "MQCFH", "MQEPH", "PCF parameter", "MQCFIN", "MQCFST", "MQCFIL", "MQCFSL", "MQCFT_USER",
    "MQCFBS", "MQCFIF", "MQCFSF", "MQCFBF", "MQCFGR", "MQCFIN64", "MQCFIL64", "record",
]
FIELDS = [
    "", "Type", "StrucLength", "Count", "StringLength", "FilterValueLength", "ParameterCount",
    "Version", "StrucId", "CodedCharSetId",
]
REASONS = [
    "truncated",
    "StrucLength smaller than the fixed part of the structure",
    "runs past the end of the data",
    "negative length or count",
    "unknown PCF structure Type",
    "groups nested deeper than the bound of 64",
    "count larger than the structure holds",
    "unsupported Version",
    "byte order not recognisable (StrucLength is 36 in neither)",
    "null record",
    "more parameters announced than the remaining bytes can hold",
]


def error_columns(e_struct, e_field, e_reason, e_offset, buf, offsets):
    """The error_structure/field/offset/reason and raw columns for a batch."""
    n = len(e_struct)
    failed = e_struct >= 0
    if not failed.any():
        nulls = pa.nulls(n)
        return (nulls.cast(pa.string()), nulls.cast(pa.string()), nulls.cast(pa.int64()),
                nulls.cast(pa.string()), nulls.cast(pa.binary()))
    idx = np.flatnonzero(failed)
    s = [None] * n
    f = [None] * n
    r = [None] * n
    raw = [None] * n
    mv = memoryview(buf).cast("B") if len(buf) else b""
    for i in idx:  # only failing records become Python objects
        s[i] = STRUCTURES[e_struct[i]]
        f[i] = FIELDS[e_field[i]]
        r[i] = REASONS[e_reason[i]]
        raw[i] = bytes(mv[offsets[i]:offsets[i + 1]])
    return (pa.array(s, pa.string()), pa.array(f, pa.string()),
            pa.array(e_offset, pa.int64(), mask=~failed), pa.array(r, pa.string()), pa.array(raw, pa.binary()))
