"""The Arrow schemas of the batch decoders: ONE definition, used by the
Cython implementation, the pure-Python implementation and the Spark adapter.

PCF in long form
----------------
``decode_pcf_batch`` returns two tables.

``PCF_HEADERS`` — one row per input record, always (nothing is dropped):
the MQCFH fields (null when the record failed before them), the byte order
found, the error columns (null when the record decoded) and ``raw`` (the
record's bytes, only for rows with an error).

``PCF_PARAMETERS`` — one row per PCF parameter structure, in pre-order
(a group's row comes before its children's). ``param_index`` numbers the
rows of one record from 0; ``parent`` is the ``param_index`` of the
enclosing MQCFGR (-1 at top level) and ``depth`` its nesting level (0 at
top level), so group trees rebuild exactly. Values go to the column that
fits the structure's type:

=============  ===============================================================
type           columns set
=============  ===============================================================
MQCFIN         int_value
MQCFIN64       int_value
MQCFIL(64)     count, int_list
MQCFST         ccsid, string_value
MQCFSL         ccsid, count, string_list
MQCFBS         bytes_value
MQCFGR         count (= ParameterCount)
MQCFIF         operator, int_value
MQCFSF         operator, ccsid, string_value
MQCFBF         operator, bytes_value
MQCFT_USER     bytes_value (the whole structure, opaque)
=============  ===============================================================

Strings are decoded by the parameter's CCSID (0 = the ``ccsid`` the caller
gave for the record) with trailing blanks and NULs removed, exactly as the
pure codec does.
"""
from __future__ import annotations

import pyarrow as pa

__all__ = ["PCF_HEADERS", "PCF_PARAMETERS", "ERROR_FIELDS"]

ERROR_FIELDS = [
    pa.field("error_structure", pa.string()),
    pa.field("error_field", pa.string()),
    pa.field("error_offset", pa.int64()),
    pa.field("error_reason", pa.string()),
]

PCF_HEADERS = pa.schema(
    [
        pa.field("record", pa.int64(), nullable=False),
        pa.field("encoding", pa.int32()),
        pa.field("has_eph", pa.bool_()),
        pa.field("Type", pa.int32()),
        pa.field("StrucLength", pa.int32()),
        pa.field("Version", pa.int32()),
        pa.field("Command", pa.int32()),
        pa.field("MsgSeqNumber", pa.int32()),
        pa.field("Control", pa.int32()),
        pa.field("CompCode", pa.int32()),
        pa.field("Reason", pa.int32()),
        pa.field("ParameterCount", pa.int32()),
        pa.field("parameters_end", pa.int64()),
        *ERROR_FIELDS,
        pa.field("raw", pa.binary()),
    ]
)

PCF_PARAMETERS = pa.schema(
    [
        pa.field("record", pa.int64(), nullable=False),
        pa.field("param_index", pa.int32(), nullable=False),
        pa.field("parent", pa.int32(), nullable=False),
        pa.field("depth", pa.int32(), nullable=False),
        pa.field("Parameter", pa.int32(), nullable=False),
        pa.field("Type", pa.int32(), nullable=False),
        pa.field("int_value", pa.int64()),
        pa.field("count", pa.int32()),
        pa.field("operator", pa.int32()),
        pa.field("ccsid", pa.int32()),
        pa.field("string_value", pa.string()),
        pa.field("bytes_value", pa.binary()),
        pa.field("int_list", pa.list_(pa.int64())),
        pa.field("string_list", pa.list_(pa.string())),
    ]
)
