"""Many IBM MQ units at once: :func:`decode_units` returns the ``mq_calls``
columns of :func:`mqcodec.ibmmq.calls.decode_unit` for a whole batch of
units as one Arrow table, reading the common units over arrays.

The units most captures are made of -- MQPUT, MQGET and their replies with
an MQMD and an ASCII MQPMO/MQGMO, channel MESSAGE_DATA (MSH, MQXQH), and
the units whose only columns are their TSH (HEARTBEAT, ...) -- are read
with numpy, one array operation per field for the whole batch; character
fields are decoded once per distinct (bytes, CCSID), by ``decode_unit``'s
own text rule.  Every other unit (another type, an EBCDIC identifier, a
structure version or record count this reader does not take, anything cut
short or damaged) goes to :func:`decode_unit` itself, so each row is the
row ``decode_unit`` gives (tests/test_calls_batch.py compares them).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..ccsid import is_known
from .calls import CALL_COLUMNS, name_text, decode_unit
from .tsh import MQGMO_LENGTHS, MQMD_LENGTHS, MQPMO_LENGTHS, MSH_LENGTH, XQH_PREFIX_LENGTH, segment_type_name

__all__ = ["decode_units", "DECODED_SCHEMA"]

_DICT = pa.dictionary(pa.int32(), pa.string())

#: the table decode_units returns: decode_unit's columns and its error columns
DECODED_SCHEMA = pa.schema([pa.field(name, t) for name, t in CALL_COLUMNS] + [
    pa.field("error", _DICT), pa.field("error_structure", _DICT), pa.field("error_field", _DICT),
    pa.field("error_offset", pa.int64()),
])


def _id(s: bytes) -> int:
    return int.from_bytes(s, "big")


_TSH, _TSHM, _TSHC = _id(b"TSH "), _id(b"TSHM"), _id(b"TSHC")
_MD, _PMO, _GMO, _MSH, _XQH = _id(b"MD  "), _id(b"PMO "), _id(b"GMO "), _id(b"MSH "), _id(b"XQH ")
_MD_E, _PMO_E, _GMO_E = _id(b"\xd4\xc4\x40\x40"), _id(b"\xd7\xd4\xd6\x40"), _id(b"\xc7\xd4\xd6\x40")
_MSH_E, _XQH_E = _id(b"\xd4\xe2\xc8\x40"), _id(b"\xe7\xd8\xc8\x40")
#: non-API types decode_unit reads a body of (calls._decode_other); MESSAGE_DATA (4) is read here
_OTHER_BODIES = np.array([0x01, 0x03, 0x05, 0x07, 0x08, 0x0A, 0x0C, 0x0D, 0x0E, 0x0F])
_TYPE_NAMES = [segment_type_name(t) for t in range(256)]


class _Reader:
    """Byte-level reads at per-unit positions, over the whole batch."""

    def __init__(self, buf: np.ndarray, starts: np.ndarray, lens: np.ndarray):
        self.buf, self.starts, self.lens = buf, starts, lens
        self.last = max(len(buf) - 1, 0)
        # every 4-byte window of the buffer as one unaligned 32-bit integer (stride 1 byte): a
        # 32-bit field in one 1-D gather (a field past the buffer's end reads its last window:
        # such a field is outside its unit, never used)
        if len(buf) < 4:
            buf = np.concatenate([buf, np.zeros(4, dtype=np.uint8)])
        self._le = np.ndarray((len(buf) - 3,), dtype="<u4", buffer=buf, strides=(1,))
        self._be = np.ndarray((len(buf) - 3,), dtype=">u4", buffer=buf, strides=(1,))
        self.last_window = len(buf) - 4

    def has(self, pos, n) -> np.ndarray:
        return pos + n <= self.lens

    def u8(self, pos) -> np.ndarray:
        if len(self.buf) == 0:
            return np.zeros(len(self.starts), dtype=np.int64)
        return self.buf[np.minimum(self.starts + pos, self.last)].astype(np.int64)

    def _at(self, pos) -> np.ndarray:
        return np.minimum(self.starts + pos, self.last_window)

    def be32(self, pos) -> np.ndarray:
        """Four bytes as an unsigned big-endian integer (-1 where absent)."""
        v = self._be[self._at(pos)].astype(np.int64)
        return np.where(self.has(pos, 4), v, -1)

    def u32(self, pos, little) -> np.ndarray:
        v = self._le[self._at(pos)]
        return np.where(little, v, v.byteswap()).astype(np.int64)

    def i32(self, pos, little) -> np.ndarray:
        v = self.u32(pos, little)
        return np.where(v >= 1 << 31, v - (1 << 32), v)

    def i16(self, pos, little) -> np.ndarray:
        b0, b1 = self.u8(pos), self.u8(pos + 1)
        v = np.where(little, (b1 << 8) | b0, (b0 << 8) | b1)
        return np.where(v >= 1 << 15, v - (1 << 16), v)

    def texts(self, rows, pos, width, ccsid) -> pa.Array:
        """The character field of ``width`` bytes at ``pos`` of units ``rows``
        (decode_unit's ``name_text``: NUL/blank trimmed, None when empty), as a
        dictionary array; each distinct (bytes, CCSID) decoded once."""
        if len(rows) == 0:
            return pa.array([], _DICT)
        at = self.starts[rows] + pos[rows]
        raw = np.empty((len(rows), width + 2), dtype=np.uint8)
        # each row's field copied whole: a view of every width-byte window of the buffer
        raw[:, :width] = np.lib.stride_tricks.sliding_window_view(self.buf, width)[at]
        cc = ccsid[rows].astype(np.uint16)
        raw[:, width] = cc >> 8
        raw[:, width + 1] = cc & 0xFF
        # distinct (bytes, CCSID) keys by Arrow's hash table (a sort of wide keys costs more)
        keys = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width + 2), len(rows),
                                                    [None, pa.py_buffer(raw)]).dictionary_encode()
        values, nulls = [], []
        for b in keys.dictionary.to_pylist():
            s = name_text(b[:width], (b[width] << 8) | b[width + 1])
            values.append(s or "")
            nulls.append(s is None)
        indices = keys.indices.to_numpy()
        mask = np.asarray(nulls, dtype=bool)[indices]
        return pa.DictionaryArray.from_arrays(pa.array(indices, mask=mask), pa.array(values, pa.string()))


def _column(values, valid, t: pa.DataType) -> pa.Array:
    return pa.array(np.asarray(values), mask=~np.asarray(valid, dtype=bool)).cast(t)


def _scatter(n: int, rows: np.ndarray, part: pa.Array) -> pa.Array:
    """``part`` (one value per unit of ``rows``) spread over ``n`` units, null elsewhere."""
    where = np.full(n, -1, dtype=np.int64)
    where[rows] = np.arange(len(rows))
    return part.take(pa.array(where, mask=where < 0))


def decode_units(data, starts, lengths, full_lengths=None) -> pa.Table:
    """The ``mq_calls`` columns (:data:`DECODED_SCHEMA`) of the units
    ``data[starts[i]:starts[i] + lengths[i]]``, each as
    ``decode_unit(unit, full_lengths[i])`` gives them, in unit order."""
    buf = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.asarray(lengths, dtype=np.int64)
    n = len(starts)
    full = lens if full_lengths is None else np.asarray(full_lengths, dtype=np.int64)
    r = _Reader(buf, starts, lens)
    ident = r.be32(0)
    tshm = ident == _TSHM
    fast = (ident == _TSH) | tshm | (ident == _TSHC)
    hlen = np.where(tshm, 36, 28)
    fast &= r.has(hlen, 0)
    bo, t = r.u8(hlen - 20), r.u8(hlen - 19)
    little = bo == 2
    encoding, ccsid = r.i32(hlen - 8, little), r.i16(hlen - 4, little)
    known = np.zeros(n, dtype=bool)
    for c in sorted(set(ccsid[fast].tolist())):   # (not np.unique: its first plain call imports numpy.ma)
        if c > 0 and is_known(c):
            known |= ccsid == c
    ccsid_eff = np.where(known, ccsid, 819)
    api = (t > 0x80) & (t <= 0x9F)
    base = t & ~0x10
    getput = api & ((base == 0x85) | (base == 0x86))
    msg = t == 0x04
    # types read here: MQPUT/MQGET and replies, MESSAGE_DATA, and the non-API, non-XA types with no body
    fast &= getput | msg | (~api & ~((t >= 0xA1) & (t <= 0xBA)) & ~np.isin(t, _OTHER_BODIES))
    cols: dict[str, tuple] = {}   # name -> (values, valid)
    # API header
    pos = hlen + 16
    fast &= ~api | r.has(pos, 0)
    cols["reply_length"] = (r.be32(hlen), api)
    cols["completion_code"] = (r.i32(hlen + 4, little), api)
    cols["reason_code"] = (r.i32(hlen + 8, little), api)
    cols["hobj"] = (r.i32(hlen + 12, little), api)
    # MQMD, then MQPMO / MQGMO
    sid = r.be32(pos)
    fast &= ~(getput & (sid == _MD_E))
    md = getput & (sid == _MD)
    fast &= ~md | r.has(pos, 8)
    mdv = r.i32(pos + 4, little)
    mdlen = np.select([mdv == 1, mdv == 2], [MQMD_LENGTHS[1], MQMD_LENGTHS[2]], 0)
    fast &= ~md | ((mdlen > 0) & r.has(pos, mdlen))
    pos = pos + mdlen
    sid = r.be32(pos)
    put, get = md & (base == 0x86), md & (base == 0x85)
    fast &= ~(put & (sid == _PMO_E)) & ~(get & (sid == _GMO_E))
    pmo, gmo = put & (sid == _PMO), get & (sid == _GMO)
    fast &= ~(pmo | gmo) | r.has(pos, 8)
    ver = r.i32(pos + 4, little)
    pmolen = np.select([ver == v for v in MQPMO_LENGTHS], list(MQPMO_LENGTHS.values()), 0)
    gmolen = np.select([ver == v for v in MQGMO_LENGTHS], list(MQGMO_LENGTHS.values()), 0)
    size = np.where(pmo, pmolen, np.where(gmo, gmolen, 0))
    fast &= ~(pmo | gmo) | ((size > 0) & r.has(pos, size))
    fast &= ~(pmo & (ver >= 2)) | (r.i32(pos + 128, little) <= 0)   # put message records: decode_unit
    cols["pmo_options"] = (r.u32(pos + 8, little), pmo)
    cols["gmo_options"] = (r.u32(pos + 8, little), gmo)
    cols["gmo_wait_interval"] = (r.i32(pos + 12, little), gmo)
    opts = pmo | gmo
    dpos = pos + size
    cols["data_length"] = (r.i32(dpos, little), opts & r.has(dpos, 4))
    # MESSAGE_DATA: MSH, then MQXQH
    mpos = hlen
    sid = r.be32(mpos)
    fast &= ~(msg & (sid == _MSH_E))
    msh = msg & (sid == _MSH)
    fast &= ~msh | r.has(mpos, MSH_LENGTH)
    mpos = np.where(msh, mpos + MSH_LENGTH, mpos)
    sid = r.be32(mpos)
    fast &= ~(msg & (sid == _XQH_E))
    xqh = msg & (sid == _XQH)
    fast &= ~xqh | r.has(mpos, XQH_PREFIX_LENGTH)

    slow = np.flatnonzero(~fast)
    f = fast
    arrays = {
        "structid": pa.array(np.where(tshm, 1, np.where(ident == _TSHC, 2, 0)), pa.int32()),
        "segment_type": _column(t, f, pa.int16()),
        "ctl_flags1": _column(r.u8(hlen - 18), f, pa.int16()),
        "ctl_flags2": _column(r.u8(hlen - 17), f, pa.int16()),
        "byte_order": _column(bo, f, pa.int16()),
        "encoding": _column(encoding, f, pa.int64()),
        "ccsid": _column(ccsid, f, pa.int32()),
        "conversation_id": _column(r.be32(8), f & tshm, pa.int64()),
        "request_id": _column(r.be32(12), f & tshm, pa.int64()),
    }
    arrays["structid"] = pa.DictionaryArray.from_arrays(arrays["structid"], pa.array(["TSH", "TSHM", "TSHC"]))
    arrays["segment_type_name"] = pa.DictionaryArray.from_arrays(pa.array(t.astype(np.int32)),
                                                                 pa.array(_TYPE_NAMES, pa.string()))
    for name, (values, valid) in cols.items():
        arrays[name] = _column(values, f & valid, dict(CALL_COLUMNS)[name])
    texts = (("resolved_q_name", pmo, pos + 32, 48), ("resolved_q_mgr_name", pmo, pos + 80, 48),
             ("remote_q_name", xqh, mpos + 8, 48), ("remote_q_mgr_name", xqh, mpos + 56, 48))
    gmo_name = r.texts(np.flatnonzero(f & gmo), pos + 24, 48, ccsid_eff)
    for name, where, p, width in texts:
        sel = np.flatnonzero(f & where)
        part = _scatter(n, sel, r.texts(sel, p, width, ccsid_eff))
        if name == "resolved_q_name":
            g = _scatter(n, np.flatnonzero(f & gmo), gmo_name)
            part = _coalesce(part, g)
        arrays[name] = part
    fields = []
    for fld in DECODED_SCHEMA:
        a = arrays.get(fld.name)
        fields.append(pa.nulls(n, fld.type) if a is None else a)
    table = pa.Table.from_arrays(fields, schema=DECODED_SCHEMA)
    if len(slow):
        # every other unit: decode_unit's own rows, in place of the fast reader's
        slow_rows = [decode_unit(bytes(buf[s:s + ln]), int(fl))
                     for s, ln, fl in zip(starts[slow].tolist(), lens[slow].tolist(), full[slow].tolist())]
        table = pa.concat_tables([table, pa.Table.from_pylist(slow_rows, schema=DECODED_SCHEMA)])
        order = np.arange(n, dtype=np.int64)
        order[slow] = n + np.arange(len(slow))
        table = table.take(pa.array(order))
    return table


def _coalesce(a: pa.Array, b: pa.Array) -> pa.Array:
    """``a`` where valid, else ``b`` (dictionary arrays, as strings)."""
    import pyarrow.compute as pc

    return pc.coalesce(a.cast(pa.string()), b.cast(pa.string())).dictionary_encode().cast(_DICT)
