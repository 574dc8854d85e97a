"""Batch decoders: many records in, Arrow record batches out (see schema.py).

One API, two implementations (msgpack-python style)::

    from mqcodec.batch import decode_pcf_batch
    batch = decode_pcf_batch(pa_binary_array, encoding=546)
    batch.headers      # pa.RecordBatch, schema PCF_HEADERS, one row per record
    batch.parameters   # pa.RecordBatch, schema PCF_PARAMETERS, one row per parameter

``impl=None`` uses the compiled implementation (``mqcodec._ext.pcf_batch``)
when it is importable and the environment variable ``MQCODEC_PURE`` is not
``"1"``, else the pure-Python one (:mod:`mqcodec.batch.pcf_pure`);
``impl="c"`` / ``impl="py"`` force one.  :data:`IMPLEMENTATION` says which
one ``impl=None`` picks.  Both give identical tables for every input, errors
included (see docs/batch.md).
"""
from __future__ import annotations

import operator
import os
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from . import pcf_pure
from .schema import PCF_HEADERS, PCF_PARAMETERS
from . import mq_pure as _mq

__all__ = ["decode_pcf_batch", "PcfBatch", "IMPLEMENTATION", "PCF_HEADERS", "PCF_PARAMETERS",
           "decode_mq_batch"]


def _load_compiled():
    try:
        from .._ext import pcf_batch
    except ImportError:
        return None
    return pcf_batch


_COMPILED = None if os.environ.get("MQCODEC_PURE") == "1" else _load_compiled()

#: "c" when ``impl=None`` runs the compiled implementation, else "py".
IMPLEMENTATION = "c" if _COMPILED is not None else "py"


class PcfBatch(NamedTuple):
    headers: pa.RecordBatch
    parameters: pa.RecordBatch


def _module(impl: str | None):
    if impl is None:
        return _COMPILED if _COMPILED is not None else pcf_pure
    if impl == "py":
        return pcf_pure
    if impl == "c":
        mod = _COMPILED if _COMPILED is not None else _load_compiled()
        if mod is None:
            raise ImportError("the compiled PCF batch decoder (mqcodec._ext.pcf_batch) is not built")
        return mod
    raise ValueError("impl must be None, 'c' or 'py', not %r" % (impl,))


def decode_pcf_batch(records: Any, *, encoding: int | None = None, ccsid: int | None = None,
                     impl: str | None = None) -> PcfBatch:
    """Decode many PCF message bodies (MQCFH or MQEPH first) at once.

    ``records``: a ``pyarrow`` Binary/LargeBinary array (its buffers are
    used directly; ``array.offset`` and nulls honoured), a ChunkedArray of
    those, a list of bytes-like (None = null record), or ``(buffer,
    offsets)`` with n+1 offsets into ``buffer``.  ``encoding``: the
    governing MQENC (MQMD.Encoding; None detects the byte order per
    record).  ``ccsid``: the CCSID strings with CodedCharSetId 0 inherit
    (None: 1208, or 500 after an EBCDIC MQEPH StrucId).  Record numbers in
    the ``record`` columns count from 0 over the whole input.
    """
    mod = _module(impl)
    kw = {"encoding": _mqlong("encoding", encoding), "ccsid": _mqlong("ccsid", ccsid)}
    if isinstance(records, pa.ChunkedArray):
        return _decode_chunks(mod, records, kw)
    if isinstance(records, pa.Array):
        return PcfBatch(*_decode_array(mod, records, kw))
    if _is_buffer_and_offsets(records):
        buf, offsets = records
        return PcfBatch(*mod.decode_pcf_buffers(buf, offsets, **kw))
    if isinstance(records, (bytes, bytearray, memoryview, str)):
        raise TypeError("records must be a collection of records, not one %s" % type(records).__name__)
    items = [x if x is None or isinstance(x, bytes) else bytes(x) for x in records]
    return PcfBatch(*_decode_array(mod, pa.array(items, type=pa.large_binary()), kw))


def _is_buffer_and_offsets(records: Any) -> bool:
    """``(buffer, offsets)`` -- not a pair of records, whose second item is
    bytes-like or None."""
    return (isinstance(records, tuple) and len(records) == 2
            and records[1] is not None and not isinstance(records[1], (bytes, bytearray, memoryview)))


def _mqlong(name: str, value: Any) -> int | None:
    """encoding and ccsid are MQLONGs: reject anything else up front, so
    that both implementations refuse the same arguments the same way."""
    if value is None:
        return None
    value = operator.index(value)
    if not -2 ** 31 <= value < 2 ** 31:
        raise ValueError("%s %d is not an MQLONG (32-bit signed)" % (name, value))
    return value


def _decode_array(mod, arr: pa.Array, kw: dict):
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        arr = arr.view(pa.large_binary() if pa.types.is_large_string(arr.type) else pa.binary())
    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        raise TypeError("records must be a binary or large_binary array, not %s" % arr.type)
    n = len(arr)
    bufs = arr.buffers()
    if n == 0 or bufs[1] is None:
        return mod.decode_pcf_buffers(b"", np.zeros(n + 1, np.int64), **kw)
    width = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offsets = np.frombuffer(bufs[1], dtype=width)[arr.offset:arr.offset + n + 1]
    data = bufs[2] if bufs[2] is not None else b""
    valid = None
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
    return mod.decode_pcf_buffers(data, offsets, valid=valid, **kw)


def _shift(batch: pa.RecordBatch, base: int) -> pa.RecordBatch:
    if base == 0:
        return batch
    i = batch.schema.get_field_index("record")
    col = pa.array(batch.column(i).to_numpy() + base, pa.int64())
    return batch.set_column(i, batch.schema.field(i), col)


def _decode_chunks(mod, chunked: pa.ChunkedArray, kw: dict) -> PcfBatch:
    heads, params = [], []
    base = 0
    for chunk in chunked.chunks:
        h, p = _decode_array(mod, chunk, kw)
        heads.append(_shift(h, base))
        params.append(_shift(p, base))
        base += len(chunk)
    if not heads:
        return PcfBatch(*mod.decode_pcf_buffers(b"", np.zeros(1, np.int64), **kw))
    return PcfBatch(pa.concat_batches(heads), pa.concat_batches(params))


def decode_mq_batch(records: Any, *, encoding: int | None = None, ccsid: int | None = None,
                    impl: str | None = None, md_only=None) -> pa.RecordBatch:
    """Decode many IBM MQ messages (MQMD first, then its header chain) at
    once: one row per record in schema ``MQ_MESSAGES`` (MQMD columns, the
    header-chain facts, the PCF header of PCF bodies, errors).  ``records``
    as for :func:`decode_pcf_batch`; ``encoding``/``ccsid`` describe the
    MQMD itself (None: detected per record).  ``md_only``: optional
    per-record booleans marking records that are an MQMD whose data the
    protocol unit does not carry (an MQPUT_REPLY): the MQMD is decoded, the
    chain is not followed and the body is empty.  See docs/batch-mq.md."""
    return _mq.decode_batch(records, encoding=encoding, ccsid=ccsid, impl=impl, md_only=md_only)


def decode_msmq_batch(records: Any, *, impl: str | None = None) -> pa.RecordBatch:
    """Decode many MSMQ binary-protocol packets (one packet per record, from
    its first byte) at once: one row per record in schema ``MSMQ_PACKETS``.
    ``records`` as for :func:`decode_pcf_batch`.  See docs/batch-msmq.md."""
    from . import msmq_pure
    return msmq_pure.decode_batch(records, impl=impl)


__all__ += ["decode_msmq_batch"]
