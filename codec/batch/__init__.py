"""Batch decoders: many records in, Arrow record batches out (see schema.py).

One API, two implementations (msgpack-python style)::

    from mqcodec.batch import decode_pcf_batch
    batch = decode_pcf_batch(pa_binary_array, encoding=546)
    batch.headers      # pa.Table, schema PCF_HEADERS, one row per record
    batch.parameters   # pa.Table, schema PCF_PARAMETERS, one row per parameter

``impl=None`` uses the compiled implementation (``mqcodec._ext.pcf_batch``)
when it is importable and the environment variable ``MQCODEC_PURE`` is not
``"1"``, else the pure-Python one (:mod:`mqcodec.batch.pcf_pure`);
``impl="c"`` / ``impl="py"`` force one.  :data:`IMPLEMENTATION` says which
one ``impl=None`` picks.  Both give identical tables for every input, errors
included (see docs/batch.md).

The PCF and MSMQ decoders work through their input in pieces of fixed
size (:data:`mqcodec.batch._front.PCF_CHUNK`, ``MSMQ_CHUNK``) and return
``pyarrow.Table`` objects whose record batches are the pieces' outputs,
so that the cost per record does not grow with the size of the call.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import pyarrow as pa

from . import _front
from ._front import Implementations, dispatch, mqlong
from .schema import PCF_HEADERS, PCF_PARAMETERS
from . import mq_pure as _mq

__all__ = ["decode_pcf_batch", "PcfBatch", "IMPLEMENTATION", "PCF_HEADERS", "PCF_PARAMETERS",
           "decode_mq_batch"]

_PCF = Implementations("pcf_batch", __name__ + ".pcf_pure", "PCF")  # the pure twin imported when picked

#: "c" when ``impl=None`` runs the compiled implementation, else "py".
IMPLEMENTATION = _PCF.default


class PcfBatch(NamedTuple):
    headers: pa.Table
    parameters: pa.Table


def decode_pcf_batch(records: Any, *, encoding: int | None = None, ccsid: int | None = None,
                     impl: str | None = None, parameters: bool = True) -> PcfBatch:
    """Decode many PCF message bodies (MQCFH or MQEPH first) at once.

    ``records``: a ``pyarrow`` Binary/LargeBinary array (its buffers are
    used directly; ``array.offset`` and nulls honoured), a ChunkedArray of
    those, a list of bytes-like (None = null record), or ``(buffer,
    offsets)`` with n+1 offsets into ``buffer``.  ``encoding``: the
    governing MQENC (MQMD.Encoding; None detects the byte order per
    record).  ``ccsid``: the CCSID strings with CodedCharSetId 0 inherit
    (None: 1208, or 500 after an EBCDIC MQEPH StrucId).  Record numbers in
    the ``record`` columns count from 0 over the whole input.  Both tables
    are ``pyarrow.Table`` objects made of one record batch per piece of the
    input (``_front.PCF_CHUNK``); the pieces never change a value.
    ``parameters`` False: the headers alone (every record is still walked
    whole, so its errors are the same), the parameters table empty -- what
    a caller that reads only the headers pays (the Spark ``pcf`` decoder's
    struct column).
    """
    mod = _PCF.pick(impl)
    kw = {"encoding": mqlong("encoding", encoding), "ccsid": mqlong("ccsid", ccsid), "parameters": bool(parameters)}
    return PcfBatch(*dispatch(
        records, lambda data, offsets, valid, first: mod.decode_pcf_buffers(data, offsets, valid=valid,
                                                                             first=first, **kw),
        chunk=_front.PCF_CHUNK))


def decode_mq_batch(records: Any, *, encoding: int | None = None, ccsid: int | None = None,
                    impl: str | None = None, md_only: Any = None) -> pa.RecordBatch:
    """Decode many IBM MQ messages (MQMD first, then its header chain) at
    once: one row per record in schema ``MQ_MESSAGES`` (MQMD columns, the
    header-chain facts, the PCF header of PCF bodies, errors).  ``records``
    as for :func:`decode_pcf_batch`; ``encoding``/``ccsid`` describe the
    MQMD itself (None: detected per record).  ``md_only``: optional
    per-record booleans marking records that are an MQMD whose data the
    protocol unit does not carry (an MQPUT_REPLY): the MQMD is decoded, the
    chain is not followed and the body is empty.  See docs/batch-mq.md."""
    return _mq.decode_batch(records, encoding=encoding, ccsid=ccsid, impl=impl, md_only=md_only)


def decode_msmq_batch(records: Any, *, impl: str | None = None,
                      columns: Sequence[str] | None = None) -> pa.Table:
    """Decode many MSMQ binary-protocol packets (one packet per record, from
    its first byte) at once: one row per record in schema ``MSMQ_PACKETS``,
    as a ``pyarrow.Table`` of one record batch per piece of the input
    (``_front.MSMQ_CHUNK``).
    ``records`` as for :func:`decode_pcf_batch`.  ``columns``: optional
    names of MSMQ_PACKETS fields; the batch then holds only those columns,
    in that order, with the same values as the full batch (the compiled
    implementation skips the text, GUID and Arrow work of the others).  See
    docs/batch-msmq.md."""
    from . import msmq_pure
    return msmq_pure.decode_batch(records, impl=impl, columns=columns)


__all__ += ["decode_msmq_batch"]
