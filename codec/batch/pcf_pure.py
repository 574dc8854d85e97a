"""Pure-Python implementation of the PCF batch decoder.

The reference behaviour: each record is decoded by
:func:`mqcodec.ibmmq.pcf.decode_pcf` (strict mode) and its tree is written
out in the long form of :mod:`mqcodec.batch.schema`.  The compiled twin
(``mqcodec._ext.pcf_batch``) has the same entry point and must give the
same tables for every input (tests/test_batch_equivalence.py).

A record that raises :class:`~mqcodec.errors.DecodeError` gives a headers
row carrying the error's structure, field, offset and reason plus the
record's raw bytes, its other header columns null, and no parameter rows.
A null record gives the error ``record`` / ``""`` / 0 / ``"null record"``
(:data:`mqcodec.batch.errors.NULL_RECORD`) and a null ``raw``.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from .. import ccsid as _ccsid
from ..errors import DecodeError
from ..ibmmq import pcf as _pcf
from ._front import check_offsets
from .errors import NULL_RECORD
from .schema import PCF_HEADERS, PCF_PARAMETERS

__all__ = ["decode_pcf_buffers", "decode_records"]

_CFH_FIELDS = ("Type", "StrucLength", "Version", "Command", "MsgSeqNumber", "Control",
               "CompCode", "Reason", "ParameterCount")

_INT = (_pcf.T_INTEGER, _pcf.T_INTEGER64)
_INT_LIST = (_pcf.T_INTEGER_LIST, _pcf.T_INTEGER64_LIST)
_BYTES = (_pcf.T_BYTE_STRING, _pcf.T_BYTE_STRING_FILTER, _pcf.T_USER)


def decode_pcf_buffers(buf, offsets, *, encoding=None, ccsid=None, valid=None, first=0, parameters=True):
    """Decode the records ``buf[offsets[i]:offsets[i+1]]`` (same contract as
    ``mqcodec._ext.pcf_batch.decode_pcf_buffers``)."""
    mv, offs, valid = check_offsets(buf, offsets, valid)
    n = len(offs) - 1
    starts = offs.tolist()
    records = (None if valid is not None and not valid[i] else bytes(mv[starts[i]:starts[i + 1]])
               for i in range(n))
    return decode_records(records, encoding=encoding, ccsid=ccsid, first=first, parameters=parameters)


def decode_records(records, *, encoding=None, ccsid=None, first=0, parameters=True):
    """Decode an iterable of ``bytes`` (or None for a null record); record
    numbers count from ``first``.  ``parameters`` False: every record is still
    decoded whole (a bad parameter fails its record), but the parameters
    batch is returned empty."""
    h: dict[str, list] = {f.name: [] for f in PCF_HEADERS}
    p: dict[str, list] = {f.name: [] for f in PCF_PARAMETERS}
    for rec, data in enumerate(records, first):
        h["record"].append(rec)
        if data is None:
            _header_error(h, NULL_RECORD, None)
            continue
        try:
            msg = _pcf.decode_pcf(data, encoding=encoding, ccsid=ccsid)
        except DecodeError as exc:
            _header_error(h, (exc.structure, exc.field, exc.offset, exc.reason), data)
            continue
        h["encoding"].append(msg.encoding)
        h["has_eph"].append(msg.eph is not None)
        for name in _CFH_FIELDS:
            h[name].append(msg.cfh[name])
        h["parameters_end"].append(len(data) - len(msg.trailing))
        for name in ("error_structure", "error_field", "error_offset", "error_reason", "raw"):
            h[name].append(None)
        if parameters:
            _parameter_rows(p, rec, msg)
    headers = pa.RecordBatch.from_arrays([pa.array(h[f.name], f.type) for f in PCF_HEADERS],
                                         schema=PCF_HEADERS)
    params = pa.RecordBatch.from_arrays([pa.array(p[f.name], f.type) for f in PCF_PARAMETERS],
                                        schema=PCF_PARAMETERS)
    return headers, params


def _header_error(h: dict, err: tuple, raw: bytes | None) -> None:
    for name in ("encoding", "has_eph", *_CFH_FIELDS, "parameters_end"):
        h[name].append(None)
    for name, value in zip(("error_structure", "error_field", "error_offset", "error_reason"), err):
        h[name].append(value)
    h["raw"].append(raw)


def _parameter_rows(p: dict, rec: int, msg: Any) -> None:
    """One row per parameter, pre-order; ``parent`` is the param_index of
    the enclosing group (the last group seen one level up)."""
    last_group: dict[int, int] = {}
    for index, (depth, prm) in enumerate(msg.walk()):
        t = prm.Type
        if t == _pcf.T_GROUP:
            last_group[depth] = index
        row = {
            "record": rec, "param_index": index,
            "parent": last_group[depth - 1] if depth else -1, "depth": depth,
            "Parameter": prm.Parameter, "Type": t,
            "int_value": None, "count": None, "operator": None, "ccsid": None,
            "string_value": None, "bytes_value": None, "int_list": None, "string_list": None,
        }
        v = prm.Value
        if t in _INT or t == _pcf.T_INTEGER_FILTER:
            row["int_value"] = v
        elif t in _INT_LIST:
            row["count"] = len(v)
            row["int_list"] = v
        elif t in (_pcf.T_STRING, _pcf.T_STRING_FILTER):
            row["ccsid"] = prm.CodedCharSetId
            # a CCSID without a converter: the kept bytes go to bytes_value
            row["bytes_value" if isinstance(v, bytes) else "string_value"] = v
        elif t == _pcf.T_STRING_LIST:
            row["ccsid"] = prm.CodedCharSetId
            row["count"] = len(v)
            # a CCSID without a converter keeps the bytes, an empty list's too (as the compiled walker)
            if any(isinstance(s, bytes) for s in v) or (not v and not _ccsid.is_known(prm.ccsid)):
                row["bytes_value"] = b"".join(prm.raw_value or [])   # Count x StringLength bytes
            else:
                row["string_list"] = v
        elif t in _BYTES:
            row["bytes_value"] = v
        elif t == _pcf.T_GROUP:
            row["count"] = len(v)
        if t in (_pcf.T_INTEGER_FILTER, _pcf.T_STRING_FILTER, _pcf.T_BYTE_STRING_FILTER):
            row["operator"] = prm.Operator
        for k, val in row.items():
            p[k].append(val)
