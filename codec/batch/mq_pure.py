"""Pure-Python implementation of the IBM MQ message batch decoder, and the
front door shared by both implementations.

The reference behaviour: each record (an MQMD first, then the header chain
its Format starts, then the body) is decoded by
:func:`mqcodec.ibmmq.message.decode_message` and written out as one row of
:data:`mqcodec.batch.schema.MQ_MESSAGES`.  The compiled twin
(``mqcodec._ext.mq_batch``) has the same entry point,
``decode_mq_buffers(buf, offsets, *, encoding, ccsid, valid)``, and gives
the same table for every input (tests/test_batch_mq.py).

What makes a row fail: anything ``decode_message`` raises for the MQMD, a
header of the chain, the chain bound, or the PCF *header* of a PCF body
(MQCFH, or MQEPH and its embedded MQCFH, up to the ParameterCount check).
The PCF *parameters* are not this decoder's business (the caller runs
``decode_pcf_batch`` on the body slices), so a body whose parameters do not
decode still gives a full row: the record is then decoded again with
``lenient=True`` to obtain the chain, which is identical because the strict
pass got past it.

A failing record's row carries the error's structure, field, offset
(from the start of the record) and reason plus the record's bytes in
``raw``; its other columns are null.  A null record gives the error
``record`` / ``""`` / 0 / ``"null record"`` and a null ``raw``.
"""
from __future__ import annotations

import sys
from typing import Any, Iterable

import numpy as np
import pyarrow as pa

from ..errors import DecodeError
from ._front import Implementations, check_offsets, dispatch, mqlong
from .errors import NULL_RECORD
from .schema import MQ_MESSAGES

__all__ = ["decode_batch", "decode_mq_buffers", "decode_records", "decode_row", "body_slices", "MQ_IMPLEMENTATION",
           "MD_INT_FIELDS", "MD_BYTE_FIELDS", "MD_CHAR_FIELDS", "MD_V2_FIELDS", "PCF_COLUMNS",
           "KIND_FORMATS", "layout_source"]

#: column -> MQMD field (IBM's name)
MD_INT_FIELDS = {
    "md_version": "Version", "md_report": "Report", "md_msg_type": "MsgType", "md_expiry": "Expiry",
    "md_feedback": "Feedback", "md_encoding": "Encoding", "md_ccsid": "CodedCharSetId",
    "md_priority": "Priority", "md_persistence": "Persistence", "md_backout_count": "BackoutCount",
    "md_put_appl_type": "PutApplType", "md_msg_seq_number": "MsgSeqNumber", "md_offset": "Offset",
    "md_msg_flags": "MsgFlags", "md_original_length": "OriginalLength",
}
MD_BYTE_FIELDS = {
    "md_msg_id": "MsgId", "md_correl_id": "CorrelId", "md_accounting_token": "AccountingToken",
    "md_group_id": "GroupId",
}
MD_CHAR_FIELDS = {
    "md_format": "Format", "md_reply_to_q": "ReplyToQ", "md_reply_to_q_mgr": "ReplyToQMgr",
    "md_user_identifier": "UserIdentifier", "md_appl_identity_data": "ApplIdentityData",
    "md_put_appl_name": "PutApplName", "md_put_date": "PutDate", "md_put_time": "PutTime",
    "md_appl_origin_data": "ApplOriginData",
}
#: the fields only an MQMD version 2 has (null for version 1)
MD_V2_FIELDS = frozenset({"GroupId", "MsgSeqNumber", "Offset", "MsgFlags", "OriginalLength"})
#: column -> MQCFH field
PCF_COLUMNS = {
    "pcf_type": "Type", "pcf_version": "Version", "pcf_command": "Command",
    "pcf_msg_seq_number": "MsgSeqNumber", "pcf_control": "Control", "pcf_comp_code": "CompCode",
    "pcf_reason": "Reason", "pcf_parameter_count": "ParameterCount",
}
_ERROR_COLUMNS = ("error_structure", "error_field", "error_offset", "error_reason")
_NAMES = [f.name for f in MQ_MESSAGES]



def _parameter_level(exc: DecodeError) -> bool:
    """True for errors pcf.py raises while walking the parameters (or
    after them: the MQEPH's StrucLength slack check)."""
    from ..ibmmq import pcf as _pcf

    # structures of PCF *parameters* (errors there do not fail the row)
    if exc.structure in _pcf.PARAMETER_TYPES.values() or exc.structure in ("PCFParameter", "MQCFGR"):
        return True
    return (exc.structure == "MQEPH" and exc.field == "StrucLength"
            and exc.reason.endswith("follow the last parameter"))


def decode_row(data: bytes, *, encoding: int | None = None, ccsid: int | None = None,
               md_only: bool = False) -> dict[str, Any]:
    """The row of one record (column name -> value); raises DecodeError for
    a failing record.  ``md_only``: the record is an MQMD whose data the
    protocol unit does not carry (an MQPUT_REPLY repeats the MQMD, not the
    data): decode the MQMD alone; the body is empty."""
    # the pure decoder's modules, imported when it runs (the compiled twin needs none of them)
    from ..ibmmq import pcf as _pcf
    from ..ibmmq.headers import MQMD, detect_md
    from ..ibmmq.message import decode_message

    if md_only:
        md_enc, md_cc = detect_md(data, 0, encoding, ccsid)
        md = MQMD.decode(data, 0, len(data), md_enc, md_cc)
        row = _md_columns(md, md_enc, md_cc)
        enc, cc = md.next_governing(md_enc, md_cc)
        row.update(header_formats=[], body_format=None if md.format_undecoded else md.format_name,
                   body_encoding=enc, body_ccsid=cc,
                   body_offset=md.length, body_length=len(data) - md.length, pcf_has_eph=None)
        for col in PCF_COLUMNS:
            row[col] = None
        return row
    try:
        msg = decode_message(data, encoding=encoding, ccsid=ccsid)
    except DecodeError as exc:
        if not _parameter_level(exc):
            raise
        msg = decode_message(data, encoding=encoding, ccsid=ccsid, lenient=True)
        if not isinstance(msg.body, _pcf.PcfMessage):  # pragma: no cover - defensive
            raise exc
    row = _md_columns(msg.md, msg.md_encoding, msg.md_ccsid)
    # a Format kept as bytes (its CCSID has no converter) is null, as in the compiled path
    formats = [None if h.format_undecoded else h.format_name for h in [msg.md, *msg.headers]]
    row["header_formats"] = formats[:-1]
    row["body_format"] = formats[-1] if formats[-1] is None else msg.body_format
    row["body_encoding"] = msg.encoding
    row["body_ccsid"] = msg.ccsid
    row["body_offset"] = msg.body_offset
    assert msg.body_offset is not None  # set by decode_message
    row["body_length"] = len(data) - msg.body_offset
    body = msg.body
    if isinstance(body, _pcf.PcfMessage):
        row["pcf_has_eph"] = body.eph is not None
        for col, name in PCF_COLUMNS.items():
            row[col] = body.cfh[name]
    else:
        row["pcf_has_eph"] = None
        for col in PCF_COLUMNS:
            row[col] = None
    return row


def _md_columns(md, md_encoding: int, md_ccsid: int) -> dict[str, Any]:
    fields = md.fields
    version = fields["Version"]
    row: dict[str, Any] = {"md_own_encoding": md_encoding, "md_own_ccsid": md_ccsid}
    for col, name in MD_INT_FIELDS.items():
        row[col] = fields[name] if (version >= 2 or name not in MD_V2_FIELDS) else None
    for col, name in MD_BYTE_FIELDS.items():
        row[col] = fields[name] if (version >= 2 or name not in MD_V2_FIELDS) else None
    for col, name in MD_CHAR_FIELDS.items():
        v = fields[name]
        row[col] = None if isinstance(v, (bytes, bytearray)) else v   # no converter: null (ccsid.UnknownCCSID)
    return row


def decode_records(records: Iterable[bytes | None], *, encoding: int | None = None,
                   ccsid: int | None = None, md_only=None) -> pa.RecordBatch:
    """Decode an iterable of ``bytes`` (None for a null record); ``md_only``:
    optional per-record flags (see :func:`decode_row`)."""
    cols: dict[str, list] = {name: [] for name in _NAMES}
    flags = list(md_only) if md_only is not None else None
    for rec, data in enumerate(records):
        err = None
        row: dict[str, Any] = {}
        if data is None:
            err = NULL_RECORD
        else:
            try:
                row = decode_row(data, encoding=encoding, ccsid=ccsid,
                                 md_only=bool(flags[rec]) if flags is not None else False)
            except DecodeError as exc:
                err = (exc.structure, exc.field, exc.offset, exc.reason)
        row["record"] = rec
        if err is not None:
            row.update(zip(_ERROR_COLUMNS, err))
            row["raw"] = data
        for name in _NAMES:
            cols[name].append(row.get(name))
    return pa.RecordBatch.from_arrays([pa.array(cols[f.name], f.type) for f in MQ_MESSAGES],
                                      schema=MQ_MESSAGES)


def decode_mq_buffers(buf, offsets, *, encoding=None, ccsid=None, valid=None, md_only=None) -> pa.RecordBatch:
    """Decode the records ``buf[offsets[i]:offsets[i+1]]`` (same contract as
    ``mqcodec._ext.mq_batch.decode_mq_buffers``)."""
    extra = {"md_only": md_only}
    mv, offs, valid = check_offsets(buf, offsets, valid, extra=extra)
    md_only = extra["md_only"]
    n = len(offs) - 1
    starts = offs.tolist()
    records = (None if valid is not None and not valid[i] else bytes(mv[starts[i]:starts[i + 1]])
               for i in range(n))
    return decode_records(records, encoding=encoding, ccsid=ccsid, md_only=md_only)


def decode_batch(records: Any, *, encoding: int | None = None, ccsid: int | None = None,
                 impl: str | None = None, md_only=None) -> pa.RecordBatch:
    """See :func:`mqcodec.batch.decode_mq_batch`."""
    mod = _IMPLS.pick(impl)
    kw = {"encoding": mqlong("encoding", encoding), "ccsid": mqlong("ccsid", ccsid)}
    flags = None if md_only is None else np.ascontiguousarray(np.asarray(md_only, dtype=bool), dtype=np.uint8)

    seen = [0]

    def call(data, offsets, valid, first):
        n = len(offsets) - 1
        seen[0] = first + n
        extra = {}
        if flags is not None:
            if first + n > len(flags):
                raise ValueError("md_only must hold one value per record")
            extra["md_only"] = flags[first:first + n]
        return mod.decode_mq_buffers(data, offsets, valid=valid, **kw, **extra)

    result = dispatch(records, call)
    if flags is not None and seen[0] != len(flags):
        raise ValueError("md_only must hold one value per record")
    return result


def body_slices(records: Any, batch: pa.RecordBatch) -> pa.Array:
    """The body of every record (``record[body_offset:]``) as a
    ``large_binary`` array aligned with ``batch`` (the result of
    ``decode_mq_batch(records)``); null where the row failed.  Built with
    vectorised numpy gathers, no Python object per record.  Feed the PCF
    rows to ``decode_pcf_batch`` (same ``record`` numbering when the whole
    array is passed)."""
    if isinstance(records, pa.ChunkedArray):
        records = (pa.concat_arrays(records.chunks) if records.num_chunks
                   else pa.array([], type=records.type))
    if not isinstance(records, pa.Array):
        records = pa.array([x if x is None or isinstance(x, bytes) else bytes(x) for x in records],
                           type=pa.large_binary())
    if not (pa.types.is_binary(records.type) or pa.types.is_large_binary(records.type)):
        raise TypeError("records must be a binary or large_binary array, not %s" % records.type)
    n = len(records)
    if batch.num_rows != n:
        raise ValueError("batch has %d rows for %d records" % (batch.num_rows, n))
    if n == 0:
        return pa.array([], type=pa.large_binary())
    bufs = records.buffers()
    width = np.int64 if pa.types.is_large_binary(records.type) else np.int32
    offs = np.frombuffer(bufs[1], dtype=width)[records.offset:records.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    ok = batch.column("body_offset").is_valid().to_numpy(zero_copy_only=False)
    start = offs[:-1] + batch.column("body_offset").fill_null(0).to_numpy()
    length = np.where(ok, batch.column("body_length").fill_null(0).to_numpy(), 0)
    new_offs = np.zeros(n + 1, np.int64)
    np.cumsum(length, out=new_offs[1:])
    idx = np.repeat(start - new_offs[:-1], length) + np.arange(new_offs[-1], dtype=np.int64)
    body = data[idx] if len(idx) else np.zeros(0, np.uint8)
    validity = None if ok.all() else pa.py_buffer(np.packbits(ok, bitorder="little"))
    return pa.Array.from_buffers(pa.large_binary(), n, [validity, pa.py_buffer(new_offs), pa.py_buffer(body)],
                                 null_count=int(n - ok.sum()))


#: the Format names of the headers, in the order of the compiled decoder's header kinds (1..10)
KIND_FORMATS = ("MQXMIT", "MQHMDE", "MQDEAD", "MQHRF2", "MQHRF", "MQCICS", "MQIMS", "MQHWIH", "MQHREF", "MQHDIST")


def layout_source() -> str:
    """The source of :mod:`mqcodec.batch.mq_layout`: what the compiled
    decoder's tables are made of (StrucIds, versions, lengths and field
    offsets of the MQMD, the headers and the PCF headers), read from the
    declarations (``python -m mqcodec.batch.mq_pure > codec/batch/mq_layout.py``
    regenerates it; tests/test_batch_mq.py checks it is current)."""
    from ..ibmmq import headers as h, message as m, pcf
    from ..layout import field_offsets

    classes = [h.MQMD] + [h.HEADER_BY_FORMAT[f] for f in KIND_FORMATS]
    if set(KIND_FORMATS) != set(h.HEADER_BY_FORMAT):
        raise ValueError("headers without a kind: %s" % sorted(set(KIND_FORMATS) ^ set(h.HEADER_BY_FORMAT)))
    kinds = []
    for k, cls in enumerate(classes):
        vmax = max(cls.VERSIONS)
        if cls is h.MQXQH:   # the fields that govern what follows are the embedded MQMD's
            offs = {f: 104 + o for f, o in field_offsets(h.MQMD1_DECL[h.BIG]).items()}
            assert field_offsets(h.MQXQH_DECL[h.BIG])["MsgDesc"] == 104
        else:
            offs = field_offsets(cls.decl(vmax, h.BIG))
        versions = tuple(cls.VERSIONS)
        if versions != tuple(range(min(versions), vmax + 1)):
            raise ValueError("the versions of %s are not a range" % cls.NAME)
        kinds.append((cls.NAME, cls.STRUC_ID, (min(versions), vmax), bool(cls.HAS_STRUC_LENGTH) if k else False,
                      cls.FIXED_LENGTH, offs["Encoding"], offs["CodedCharSetId"], offs["Format"]))
    cuts = {name: (list(field_offsets(decl[h.BIG]).items()), decl[h.BIG].sizeof())
            for name, decl in (("MD1", h.MQMD1_DECL), ("MD2", h.MQMD2_DECL), ("XQH", h.MQXQH_DECL),
                               ("DLH", h.MQDLH_DECL))}
    for name in ("MQCFH", "MQEPH"):
        fx = pcf.FIXED_LAYOUTS[">"][name]
        cuts[name[2:]] = ([(f, fx.offsets[f]) for f in fx.fields], fx.size)
    md2 = h.MQMD2_DECL[h.BIG]
    md2_offsets = field_offsets(md2)
    pdecl = pcf.DECLARATIONS[">"]
    eph = field_offsets(pdecl["MQEPH"])
    eph_fields = {name: off for name, off in eph.items() if name != "PCFHeader"}
    for name, off in field_offsets(pdecl["MQCFH"]).items():
        eph_fields["PCFHeader." + name] = eph["PCFHeader"] + off
    lines = [
        '"""The layouts the compiled IBM MQ message decoder (``_ext/mq_batch.pyx``) builds its',
        "tables from, as data: generated by ``python -m mqcodec.batch.mq_pure`` from the",
        "declarations of :mod:`mqcodec.ibmmq.headers`, :mod:`~mqcodec.ibmmq.message` and",
        ":mod:`~mqcodec.ibmmq.pcf`, so that the decoder loads without them (and without",
        'construct); tests/test_batch_mq.py checks this file against a fresh generation."""',
        "",
        "#: the header kinds: (NAME, STRUC_ID, (first, last VERSION), HAS_STRUC_LENGTH, FIXED_LENGTH, offsets of",
        "#: Encoding, CodedCharSetId and Format); kind 0 is the MQMD, 1..10 the headers of KIND_FORMATS",
        "KINDS = [",
    ] + ["    %r," % (k,) for k in kinds] + [
        "]",
        "KIND_FORMATS = %r" % (KIND_FORMATS,),
        "MAX_HEADERS = %r" % m.MAX_HEADERS,
        "PCF_FORMATS = %r" % (tuple(sorted(m.PCF_FORMATS)),),
        "EMBEDDED_PCF_FORMAT = %r" % m.EMBEDDED_PCF_FORMAT,
        "MIN_PARAMETER_LENGTH = %r" % pcf.MIN_PARAMETER_LENGTH,
        "EPH_STRUC_IDS = %r" % (pcf.EPH_STRUC_IDS,),
        "MQMD_LENGTHS = %r" % (dict(h.MQMD.LENGTHS),),
        "MQXQH_FIXED_LENGTH = %r" % h.MQXQH.FIXED_LENGTH,
        "MQDLH_FIXED_LENGTH = %r" % h.MQDLH.FIXED_LENGTH,
        "#: per structure cut short: its fields (name, offset) in order, and its fixed size",
        "CUTS = {",
    ] + ["    %r: (%r, %r)," % (name, fields, size) for name, (fields, size) in cuts.items()] + [
        "}",
        "#: the MQMD version 2 fields: (name, offset, size)",
        "MQMD2_FIELDS = [",
    ] + ["    %r," % ((sc.name, md2_offsets[sc.name], sc.sizeof()),) for sc in md2.subcons] + [
        "]",
        "#: the MQCFH fields in order",
        "MQCFH_FIELDS = %r" % (tuple(pcf.FIXED_LAYOUTS[">"]["MQCFH"].fields),),
        "#: where the MQEPH's embedded MQCFH starts (its Type field)",
        "MQEPH_PCF_HEADER_OFFSET = %r" % pcf.FIXED_LAYOUTS[">"]["MQEPH"].offsets["PCFHeader.Type"],
        "",
        "# the compiled PCF decoder's tables (_ext/pcf_batch.pyx checks its own against these at import)",
        "#: parameter structure Type -> name (pcf.PARAMETER_TYPES)",
        "PCF_PARAMETER_TYPES = %r" % (dict(sorted(pcf.PARAMETER_TYPES.items())),),
        "#: the fixed part of each parameter structure, in bytes",
        "PCF_FIXED_LENGTHS = %r" % ({name: pdecl.get(name, pdecl["OPAQUE"]).sizeof()
                                      for name in pcf.PARAMETER_TYPES.values()},),
        "#: the MQCFH Type values of a PCF header (pcf.HEADER_TYPES)",
        "PCF_HEADER_TYPES = %r" % (tuple(sorted(pcf.HEADER_TYPES)),),
        "#: field offsets of the MQCFH, and of the MQEPH with its embedded MQCFH's",
        "PCF_MQCFH_OFFSETS = %r" % (field_offsets(pdecl["MQCFH"]),),
        "PCF_MQEPH_OFFSETS = %r" % (eph_fields,),
        "PCF_MAX_GROUP_DEPTH = %r" % pcf.MAX_GROUP_DEPTH,
        "PCF_DEFAULT_CCSID = %r" % pcf.DEFAULT_CCSID,
    ]
    return "\n".join(lines) + "\n"


# the implementations: created last, as mqcodec._ext.mq_batch reads this module's tables
_IMPLS = Implementations("mq_batch", sys.modules[__name__], "MQ")
#: "c" when ``impl=None`` runs the compiled implementation, else "py".
MQ_IMPLEMENTATION = _IMPLS.default

if __name__ == "__main__":  # regenerate mqcodec.batch.mq_layout
    print(layout_source(), end="")
