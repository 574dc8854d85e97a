"""Many IBM MQ units at once: :func:`decode_units` returns the ``mq_calls``
columns of :func:`mqcodec.ibmmq.calls.decode_unit` for a whole batch of
units as one Arrow table, reading the units over arrays.

Every unit type decode_unit reads a body of is read here too, one array
operation per field for the whole batch: the TSH and the API header; MQCONN,
MQOPEN (MQOD), MQCLOSE, MQPUT, MQPUT1 and MQGET (MQMD, MQPMO/MQGMO), MQINQ and
MQSET (the selector and value lists), SPI (its verb, and the MQOD it carries);
INITIAL_DATA, USERID_DATA, CONAUTH_INFO, STATUS_DATA, PING_DATA, RESET_DATA,
SOCKET_ACTION, ASYNC_MESSAGE, REQUEST_MSGS, NOTIFICATION, MESSAGE_DATA (MSH,
MQXQH) and the XA calls.  Character fields are decoded once per distinct
(bytes, CCSID), by decode_unit's own text rule.  What this reader does not
take -- an EBCDIC identifier, a structure version it does not know, object
or put-message records, anything cut short or damaged -- goes to
:func:`decode_unit` itself, so each row is the row ``decode_unit`` gives
(tests/test_calls_batch.py compares them unit by unit, on the simulator's
and the shared real capture's units, every cut of them and damaged bytes).

The offsets below are data (:data:`LAYOUT`); tests/test_calls_batch.py
checks each against the ``construct`` declaration that reads the field in
decode_unit.  This module does not import those declarations: a capture of
well-formed units converts without loading ``construct``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .. import arrow_kernels as _k
from ..ccsid import decode_text, is_known
from .call_columns import CALL_COLUMNS
from .wire import (
    ASYNC_MESSAGE, CAUT_IDS, CONAUTH_INFO, GMO_IDS, ID_IDS, INITIAL_DATA, MD_IDS, MESSAGE_DATA, MQCLOSE, MQCONN,
    MQGET, MQGMO_LENGTHS, MQINQ, MQMD_LENGTHS, MQOD_LENGTHS, MQOPEN, MQPMO_LENGTHS, MQPUT, MQPUT1, MQSET,
    MSH_IDS, NOTIFICATION, NOTIFICATION_CODES, OD_IDS, PING_DATA, PMO_IDS, REPLY_BIT, REQUEST_MSGS, RESET_DATA,
    SOCKET_ACTION, SPI, SPI_VERBS, STATUS_CODES, STATUS_DATA, TSH_IDS, UID_IDS, USERID_DATA, XQH_IDS, name_text,
    segment_type_name,
)

__all__ = ["decode_units", "DECODED_SCHEMA", "LAYOUT"]

_DICT = pa.dictionary(pa.int32(), pa.string())
_TYPES = dict(CALL_COLUMNS)

#: the table decode_units returns: decode_unit's columns and its error columns
DECODED_SCHEMA = pa.schema([pa.field(name, t) for name, t in CALL_COLUMNS] + [
    pa.field("error", _DICT), pa.field("error_structure", _DICT), pa.field("error_field", _DICT),
    pa.field("error_offset", pa.int64()),
])

#: Where the fields read here lie: structure -> field -> (offset from the
#: structure's start, size in bytes), with the names of the declaration
#: decode_unit parses (tsh.*_DECL, calls.*_DECL, builders.*_DECL).
LAYOUT: dict[str, dict[str, tuple[int, int]]] = {
    "API_HEADER": {"ReplyLength": (0, 4), "CompCode": (4, 4), "Reason": (8, 4), "Hobj": (12, 4)},
    "MSH": {"StructID": (0, 4), "MsgLength": (16, 4)},
    "XQH_PREFIX": {"StrucId": (0, 4), "RemoteQName": (8, 48), "RemoteQMgrName": (56, 48)},
    "MQPMO": {"Version": (4, 4), "Options": (8, 4), "ResolvedQName": (32, 48), "ResolvedQMgrName": (80, 48),
              "RecsPresent": (128, 4)},
    "MQGMO": {"Version": (4, 4), "Options": (8, 4), "WaitInterval": (12, 4), "ResolvedQName": (24, 48)},
    "MQOD": {"StrucId": (0, 4), "Version": (4, 4), "ObjectType": (8, 4), "ObjectName": (12, 48),
             "ObjectQMgrName": (60, 48), "DynamicQName": (108, 48), "RecsPresent": (168, 4),
             "ResolvedQName": (240, 48), "ResolvedQMgrName": (288, 48)},
    "CONN": {"QMgrName": (0, 48), "ApplName": (48, 28), "ApplType": (76, 4), "Options": (112, 4),
             "XOptions": (116, 4)},
    "ID": {"StructID": (0, 4), "FapLevel": (4, 1), "CapFlag1": (5, 1), "IniErrFlg1": (7, 1),
           "MaxMsgBtch": (10, 2), "MaxTrSize": (12, 4), "MaxMsgSize": (16, 4), "SeqWrapVal": (20, 4),
           "ChannelName": (24, 20), "CapFlag2": (44, 1), "CCSID": (46, 2), "QMgrName": (48, 48),
           "HBInterval": (96, 4), "ConvBySkt": (128, 4), "CapFlag3": (132, 1), "ProdId": (148, 12)},
    "UID": {"StructID": (0, 4), "UserId": (4, 12), "LongUserId": (28, 64)},
    "CAUT": {"StructID": (0, 4), "AuthType": (4, 4), "UsrLength": (16, 4)},
    "INQ": {"SelectorCount": (0, 4), "IntAttrCount": (4, 4), "CharAttrLength": (8, 4)},
    "SPI": {"Verb": (0, 4), "Version": (4, 4)},
    "STATUS": {"Length": (0, 4), "Code": (4, 4)},
    "PING": {"Length": (0, 4)},
    "RESET": {"SeqNum": (4, 4)},
    "SOCKET": {"ConversId": (0, 4), "RequestId": (4, 4), "Type": (8, 4), "Parm1": (12, 4), "Parm2": (16, 4)},
    "NOTIF": {"Handle": (4, 4), "Code": (8, 4), "Value": (12, 4)},
    "MSGREQ": {"Handle": (4, 4), "RqstBytes": (12, 4), "WaitIntrv": (24, 4)},
    "XA": {"ReturnValue": (4, 4), "TMFlags": (8, 4), "RMId": (12, 4)},
    "ASYNC_HEADER": {"Hobj": (4, 4), "SegmIndex": (20, 2), "ReasonCode": (24, 4), "ResolQNLn": (54, 1)},
}
#: lengths decode_unit tests the bytes present against (calls.py, tsh.py)
LENGTHS = {"API_HEADER": 16, "MSH": 20, "XQH_PREFIX": 104, "CONN_SHORT": 112, "CONN": 120, "ID_SHORT": 44,
           "ID_V4": 104, "ID_EXT": 160, "UID": 28, "UID_LONG": 92, "CAUT": 24, "INQ": 12, "SPI": 12,
           "STATUS": 8, "RESET": 8, "SOCKET": 20, "NOTIF": 16, "MSGREQ": 36, "XA": 16, "ASYNC_SHORT": 24,
           "ASYNC_FIXED": 55}
#: how far past the SPI verb header decode_unit looks for the MQOD (calls._decode_api)
SPI_OD_SCAN = 2048
#: the widest variable-length character field read here (CAUT user id); longer ones go to decode_unit
MAX_TEXT = 1024


def _off(structure: str, field: str) -> int:
    return LAYOUT[structure][field][0]


def _width(structure: str, field: str) -> int:
    return LAYOUT[structure][field][1]


def _id(s: bytes) -> int:
    return int.from_bytes(s, "big")


_TSH, _TSHM, _TSHC = (_id(next(k for k, v in TSH_IDS.items() if v == name)) for name in ("TSH", "TSHM", "TSHC"))
#: StrucIds as integers, ASCII and EBCDIC (an EBCDIC one sends the unit to decode_unit): wire's
_IDS = {"MD": MD_IDS, "PMO": PMO_IDS, "GMO": GMO_IDS, "MSH": MSH_IDS, "XQH": XQH_IDS, "OD": OD_IDS, "ID": ID_IDS,
        "UID": UID_IDS, "CAUT": CAUT_IDS}
_ASCII = {k: _id(v[0]) for k, v in _IDS.items()}
_EBCDIC = {k: _id(v[1]) for k, v in _IDS.items()}
_TYPE_NAMES = [segment_type_name(t) for t in range(256)]


_NUMPY = {pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64}


def _lengths(versions: dict, version: np.ndarray) -> np.ndarray:
    """The structure length of each version (0 where the version is unknown)."""
    return np.select([version == v for v in versions], list(versions.values()), 0)


def _array(values: np.ndarray, valid: np.ndarray | None, t: pa.DataType) -> pa.Array:
    """An Arrow integer array of ``values`` (null where not ``valid``), built
    from the buffers (no cast, and numpy.ma stays unloaded)."""
    data = pa.py_buffer(np.ascontiguousarray(values, dtype=_NUMPY[t]))
    if valid is None or valid.all():
        return pa.Array.from_buffers(t, len(values), [None, data])
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(t, len(values), [bitmap, data], null_count=int(len(valid) - valid.sum()))


class _Reader:
    """The batch: its buffer, and each unit's start and length in it."""

    def __init__(self, buf: np.ndarray, starts: np.ndarray, lens: np.ndarray):
        self.starts, self.lens = starts, lens
        if len(buf) < 4:
            buf = np.concatenate([buf, np.zeros(4, dtype=np.uint8)])
        self.buf = buf
        self.last = len(buf) - 1
        # every 4-byte window of the buffer as one unaligned 32-bit integer (stride 1 byte): a
        # 32-bit field in one 1-D gather (a field past the buffer's end reads its last window:
        # such a field is outside its unit, never used)
        self.le = np.ndarray((len(buf) - 3,), dtype="<u4", buffer=buf, strides=(1,))
        self.be = np.ndarray((len(buf) - 3,), dtype=">u4", buffer=buf, strides=(1,))
        self.last_window = len(buf) - 4
        self.little = np.zeros(len(starts), dtype=bool)

    def rows(self, rows: np.ndarray, pos) -> "_Rows":
        """The units ``rows``, each with a structure at ``pos`` (offset in the
        unit: one for all, or one per unit of the batch)."""
        return _Rows(self, rows, pos[rows] if isinstance(pos, np.ndarray) else np.full(len(rows), pos, np.int64))

    def texts(self, at: np.ndarray, width: int, ccsid: np.ndarray, lengths=None) -> pa.Array:
        """The character fields of ``width`` bytes at buffer positions ``at``
        (only their first ``lengths`` bytes, if given), in ``ccsid``, by
        decode_unit's ``name_text`` (NUL/blank trimmed, None when empty), as a
        dictionary array; each distinct (bytes, CCSID) decoded once."""
        if len(at) == 0:
            return pa.array([], _DICT)
        buf = self.buf
        if len(buf) < int(at.max()) + width:   # a variable field's window may run past the buffer
            buf = np.concatenate([buf, np.zeros(width, dtype=np.uint8)])
        raw = np.empty((len(at), width + 2), dtype=np.uint8)
        # each field copied whole: a view of every width-byte window of the buffer
        raw[:, :width] = np.lib.stride_tricks.sliding_window_view(buf, width)[at]
        if lengths is not None:   # bytes past the field's own length: NULs, which name_text trims
            raw[:, :width][np.arange(width)[None, :] >= lengths[:, None]] = 0
        cc = ccsid.astype(np.uint16)
        raw[:, width] = cc >> 8
        raw[:, width + 1] = cc & 0xFF
        # distinct (bytes, CCSID) keys by Arrow's hash table (a sort of wide keys costs more)
        keys = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width + 2), len(at),
                                                    [None, pa.py_buffer(raw)])
        keys = _k.dictionary_encode(keys)
        return text_dictionary(keys.dictionary.to_pylist(), keys.indices.to_numpy(), width)


def text_dictionary(distinct: list, indices: np.ndarray, width: int) -> pa.Array:
    """The dictionary array of character fields: ``distinct`` (bytes, CCSID)
    keys (``width`` bytes of the field, then the CCSID in two bytes, big
    endian), each decoded once by decode_unit's ``name_text`` (an empty name
    null), and each row's key number in ``indices`` (-1: null).  The
    dictionary holds each name once, in order of first appearance (as
    dictionary_encode gives it: one column however many structures it is
    read from, and however the keys that spell a name differ)."""
    names: dict = {}
    number = np.empty(len(distinct) + 1, dtype=np.int32)
    for j, b in enumerate(distinct):
        s = name_text(b[:width], (b[width] << 8) | b[width + 1])
        number[j] = -1 if s is None else names.setdefault(s, len(names))
    number[-1] = -1   # (a row without a key: index -1)
    index = number[indices]
    valid = index >= 0
    return pa.DictionaryArray.from_arrays(_array(np.maximum(index, 0), valid, pa.int32()),
                                          pa.array(list(names), pa.string()))


class _Rows:
    """Some units of the batch, each with a structure at ``pos`` (its offset
    in the unit): the reads of that structure's fields, one array operation
    per field over these units only."""

    __slots__ = ("r", "rows", "pos", "at", "lens", "little")

    def __init__(self, r: _Reader, rows: np.ndarray, pos: np.ndarray):
        self.r, self.rows, self.pos = r, rows, pos
        self.at = r.starts[rows] + pos
        self.lens = r.lens[rows]
        self.little = r.little[rows]

    def __len__(self) -> int:
        return len(self.rows)

    def sub(self, keep: np.ndarray) -> "_Rows":
        return _Rows(self.r, self.rows[keep], self.pos[keep])

    def moved(self, by) -> "_Rows":
        return _Rows(self.r, self.rows, self.pos + by)

    def rest(self) -> np.ndarray:
        """Bytes of the unit from the structure on."""
        return self.lens - self.pos

    def has(self, n) -> np.ndarray:
        return self.pos + n <= self.lens

    def u8(self, off: int) -> np.ndarray:
        return self.r.buf[np.minimum(self.at + off, self.r.last)].astype(np.int64)

    def u16(self, off: int) -> np.ndarray:
        b0, b1 = self.u8(off), self.u8(off + 1)
        return np.where(self.little, (b1 << 8) | b0, (b0 << 8) | b1)

    def be32(self, off: int) -> np.ndarray:
        """Four bytes as an unsigned big-endian integer (-1 where absent)."""
        v = self.r.be[np.minimum(self.at + off, self.r.last_window)].astype(np.int64)
        return np.where(self.has(off + 4), v, -1)

    def u32(self, off) -> np.ndarray:
        v = self.r.le[np.minimum(self.at + off, self.r.last_window)]
        return np.where(self.little, v, v.byteswap()).astype(np.int64)

    def i32(self, off) -> np.ndarray:
        v = self.u32(off)
        return np.where(v >= 1 << 31, v - (1 << 32), v)


def _concat(parts: list) -> _Rows:
    return _Rows(parts[0].r, np.concatenate([p.rows for p in parts]), np.concatenate([p.pos for p in parts]))


def _scatter(n: int, rows: np.ndarray, part: pa.Array) -> pa.Array:
    """``part`` (one value per unit of ``rows``) spread over ``n`` units, null elsewhere."""
    where = np.full(n, -1, dtype=np.int32)
    where[rows] = np.arange(len(rows), dtype=np.int32)
    return _k.take(part, _array(where, where >= 0, pa.int32()))


def _named(codes: np.ndarray, names: dict) -> pa.Array:
    """The value names of ``codes`` (null for a code without one) as a dictionary array."""
    distinct = sorted(set(codes.tolist()))
    labels = [names.get(c) for c in distinct]
    index = np.searchsorted(np.asarray(distinct, dtype=np.int64), codes).astype(np.int32)
    valid = ~np.asarray([s is None for s in labels], dtype=bool)[index] if distinct else np.zeros(0, bool)
    return pa.DictionaryArray.from_arrays(_array(index, valid, pa.int32()),
                                          pa.array([s or "" for s in labels], pa.string()))


class _Columns:
    """The columns of a batch while they are read, as parts (the units of a
    structure, their values); :meth:`arrays` assembles them, keeping only
    the units read here (``fast``)."""

    def __init__(self, n: int):
        self.n = n
        self.fast = np.ones(n, dtype=bool)
        self.ints: dict[str, list] = {}
        self.texts: dict[str, list] = {}
        self.arrow: dict[str, tuple] = {}   # name -> (rows, Arrow array of those rows)

    def not_here(self, rows: np.ndarray) -> None:
        """These units go to decode_unit."""
        self.fast[rows] = False

    def put(self, name: str, part: _Rows, values: np.ndarray) -> None:
        if len(part):   # (a column no unit has stays out: all null)
            self.ints.setdefault(name, []).append((part.rows, values))

    def text(self, name: str, part: _Rows, off: int, width: int, lengths=None) -> None:
        if len(part):
            self.texts.setdefault(name, []).append((part.rows, part.at + off, width, lengths))

    def named(self, name: str, part: _Rows, codes: np.ndarray, names: dict) -> None:
        if len(part):
            self.arrow[name] = (part.rows, _named(codes, names))

    def arrays(self, r: _Reader, ccsid: np.ndarray) -> dict:
        n, fast = self.n, self.fast
        out = {}
        for name, parts in self.ints.items():
            values = np.zeros(n, dtype=np.int64)
            valid = np.zeros(n, dtype=bool)
            for rows, v in parts:
                values[rows] = v
                valid[rows] = True
            out[name] = _array(values, valid & fast, _TYPES[name])
        for name, sources in self.texts.items():
            rows_parts, arrays = [], []
            for rows, at, width, lengths in sources:
                keep = fast[rows]
                if keep.any():
                    rows_parts.append(rows[keep])
                    arrays.append(r.texts(at[keep], width, ccsid[rows[keep]],
                                          None if lengths is None else lengths[keep]))
            if not rows_parts:
                continue
            if len(arrays) == 1:
                out[name] = _scatter(n, rows_parts[0], arrays[0])
            else:   # one column read from several structures: joined as strings, encoded again
                joined = pa.concat_arrays([_k.cast(a, pa.string()) for a in arrays])
                out[name] = _k.dictionary_encode(_scatter(n, np.concatenate(rows_parts), joined))
        for name, (rows, array) in self.arrow.items():
            keep = fast[rows]
            if keep.any():
                out[name] = _scatter(n, rows[keep], _k.filter(array, _k.bools(keep)) if not keep.all() else array)
        return out


def decode_units(data, starts, lengths, full_lengths=None) -> pa.Table:
    """The ``mq_calls`` columns (:data:`DECODED_SCHEMA`) of the units
    ``data[starts[i]:starts[i] + lengths[i]]``, each as
    ``decode_unit(unit, full_lengths[i])`` gives them, in unit order."""
    buf, starts, lens, full = inputs(data, starts, lengths, full_lengths)
    n = len(starts)
    r = _Reader(buf, starts, lens)
    c = _Columns(n)
    every = r.rows(np.arange(n), 0)
    ident = every.be32(0)
    tshm = ident == _TSHM
    c.fast &= (ident == _TSH) | tshm | (ident == _TSHC)
    hlen = np.where(tshm, 36, 28)
    c.fast &= hlen <= lens
    tsh = r.rows(np.arange(n), hlen - 20)     # ByteOrder, SegmType, CtlFlag1, CtlFlag2 ... Encoding, CCSID
    bo, t = tsh.u8(0), tsh.u8(1)
    r.little = tsh.little = bo == 2   # the byte order of every later read (the TSH's ByteOrder)
    ccsid, ccsid_eff = ccsids(tsh.u16(16), c.fast)
    api = (t > 0x80) & (t <= 0x9F)
    base = t & ~REPLY_BIT

    _api(c, r.rows(np.flatnonzero(api), hlen), base, t, ccsid_eff)
    _other(c, r.rows(np.flatnonzero(~api), hlen), t)

    # ---- the table
    f = c.fast
    arrays = tsh_columns(t, tsh.u8(2), tsh.u8(3), bo, tsh.i32(12), ccsid,
                         np.where(tshm, 1, np.where(ident == _TSHC, 2, 0)), every.be32(8), every.be32(12), f)
    arrays.update(c.arrays(r, ccsid_eff))
    table = table_of(arrays, n)
    slow = np.flatnonzero(~f)
    if len(slow):
        # every other unit: decode_unit's own rows, in place of the fast reader's
        from .calls import decode_unit   # the declarations (construct): only when a unit needs them

        slow_rows = [decode_unit(bytes(buf[s:s + ln]), int(fl))
                     for s, ln, fl in zip(starts[slow].tolist(), lens[slow].tolist(), full[slow].tolist())]
        table = interleave(table, pa.Table.from_pylist(slow_rows, schema=DECODED_SCHEMA), slow)
    return table


def inputs(data, starts, lengths, full_lengths=None) -> tuple:
    """decode_units' arguments as arrays: (the buffer as uint8, starts, lengths, full lengths)."""
    buf = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data
    lens = np.asarray(lengths, dtype=np.int64)
    full = lens if full_lengths is None else np.asarray(full_lengths, dtype=np.int64)
    return buf, np.asarray(starts, dtype=np.int64), lens, full


def ccsids(raw: np.ndarray, fast: np.ndarray) -> tuple:
    """The TSH CCSIDs (their 16 bits, ``raw``) as the ``ccsid`` column has them
    (signed), and the CCSID the units' text is read in: theirs where
    :func:`mqcodec.ccsid.is_known`, else 819 (decode_unit's rule)."""
    ccsid = np.where(raw >= 1 << 15, raw - (1 << 16), raw)
    seen = np.zeros(1 << 16, dtype=bool)   # the distinct CCSIDs (not np.unique: its first call imports numpy.ma)
    seen[raw[fast] & 0xFFFF] = True
    good = np.zeros(1 << 16, dtype=bool)
    for cc in np.flatnonzero(seen[1:1 << 15]).tolist():
        good[cc + 1] = is_known(cc + 1)
    return ccsid, np.where(good[raw & 0xFFFF], ccsid, 819)


def tsh_columns(t, flags1, flags2, bo, encoding, ccsid, kind, conversation, request, valid) -> dict:
    """The TSH's columns (``kind``: 0 TSH, 1 TSHM, 2 TSHC; ``conversation`` and
    ``request``: a TSHM's), valid where ``valid``."""
    return {
        "segment_type": _array(t, valid, pa.int16()),
        "ctl_flags1": _array(flags1, valid, pa.int16()),
        "ctl_flags2": _array(flags2, valid, pa.int16()),
        "byte_order": _array(bo, valid, pa.int16()),
        "encoding": _array(encoding, valid, pa.int64()),
        "ccsid": _array(ccsid, valid, pa.int32()),
        "conversation_id": _array(conversation, valid & (kind == 1), pa.int64()),
        "request_id": _array(request, valid & (kind == 1), pa.int64()),
        "structid": pa.DictionaryArray.from_arrays(_array(kind, None, pa.int32()), pa.array(["TSH", "TSHM", "TSHC"])),
        "segment_type_name": pa.DictionaryArray.from_arrays(_array(t, None, pa.int32()),
                                                            pa.array(_TYPE_NAMES, pa.string())),
    }


def table_of(arrays: dict, n: int) -> pa.Table:
    """``arrays`` (column name -> array of ``n`` rows) as a table of
    :data:`DECODED_SCHEMA`, null where a column is not given."""
    fields = []
    for fld in DECODED_SCHEMA:
        arr = arrays.get(fld.name)
        if arr is not None and arr.type != fld.type:
            arr = _k.cast(arr, fld.type)
        fields.append(pa.nulls(n, fld.type) if arr is None else arr)
    return pa.Table.from_arrays(fields, schema=DECODED_SCHEMA)


def interleave(table: pa.Table, other: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table`` (a row per unit) with the units ``rows`` given ``other``'s rows
    instead (a column null in both stays a null column; one null in ``other``
    is ``table``'s with those rows null)."""
    n = table.num_rows
    order = np.arange(n, dtype=np.int64)
    order[rows] = n + np.arange(len(rows))
    order_a = _k.int64s(order)
    keep = np.ones(n, dtype=bool)
    keep[rows] = False
    columns = []
    for i, fld in enumerate(table.schema):
        a, b = table.column(i), other.column(i)
        if b.null_count == len(b):
            if a.null_count == len(a):
                columns.append(a)
            else:
                columns.append(_k.take(a, _k.from_numpy(np.arange(n, dtype=np.int64), mask=~keep)))
        else:
            columns.append(_k.take(pa.chunked_array(a.chunks + b.chunks, fld.type), order_a))
    return pa.Table.from_arrays(columns, schema=table.schema)


def _api(c: _Columns, a: _Rows, base: np.ndarray, t: np.ndarray, ccsid: np.ndarray) -> None:
    """API calls and replies (``a``: at the API header): the header, then each call's body."""
    s = "API_HEADER"
    ok = a.has(LENGTHS[s])
    c.not_here(a.rows[~ok])
    a = a.sub(ok)
    c.put("reply_length", a, a.be32(_off(s, "ReplyLength")))
    c.put("completion_code", a, a.i32(_off(s, "CompCode")))
    c.put("reason_code", a, a.i32(_off(s, "Reason")))
    c.put("hobj", a, a.i32(_off(s, "Hobj")))
    b = a.moved(LENGTHS[s])
    call = base[b.rows]
    body = b.rest()

    # MQCONN
    s = "CONN"
    conn = b.sub((call == MQCONN) & (body >= LENGTHS["CONN_SHORT"]))
    c.text("conn_q_mgr_name", conn, _off(s, "QMgrName"), _width(s, "QMgrName"))
    c.text("conn_appl_name", conn, _off(s, "ApplName"), _width(s, "ApplName"))
    c.put("conn_appl_type", conn, conn.i32(_off(s, "ApplType")))
    full = conn.sub(conn.has(LENGTHS["CONN"]))
    c.put("conn_options", full, full.u32(_off(s, "Options")))
    c.put("conn_x_options", full, full.u32(_off(s, "XOptions")))

    # MQOPEN, MQPUT1: an MQOD first (no MQOD: nothing more is read)
    od = b.sub((call == MQOPEN) | (call == MQPUT1))
    sid = od.be32(0)
    c.not_here(od.rows[sid == _EBCDIC["OD"]])
    od = od.sub(sid == _ASCII["OD"])
    od, size = _mqod(c, od)
    after = od.moved(size)
    opened = after.sub((base[after.rows] == MQOPEN) & after.has(4))
    c.put("open_options", opened, opened.u32(0))

    # MQCLOSE
    close = b.sub((call == MQCLOSE) & (body >= 4))
    c.put("close_options", close, close.u32(0))

    # MQMD, then MQPMO / MQGMO and DataLength: MQPUT, MQGET, and MQPUT1 after its MQOD
    md = _concat([b.sub((call == MQGET) | (call == MQPUT)), after.sub(base[after.rows] == MQPUT1)])
    sid = md.be32(0)
    c.not_here(md.rows[sid == _EBCDIC["MD"]])
    md = md.sub(sid == _ASCII["MD"])
    ok = md.has(8)
    c.not_here(md.rows[~ok])
    md = md.sub(ok)
    mdlen = _lengths(MQMD_LENGTHS, md.i32(4))
    ok = (mdlen > 0) & md.has(mdlen)
    c.not_here(md.rows[~ok])
    opts = md.sub(ok).moved(mdlen[ok])
    sid = opts.be32(0)
    get = base[opts.rows] == MQGET
    c.not_here(opts.rows[(~get & (sid == _EBCDIC["PMO"])) | (get & (sid == _EBCDIC["GMO"]))])
    for name, rows, lengths in (("MQPMO", ~get & (sid == _ASCII["PMO"]), MQPMO_LENGTHS),
                                ("MQGMO", get & (sid == _ASCII["GMO"]), MQGMO_LENGTHS)):
        o = opts.sub(rows)
        ok = o.has(8)
        c.not_here(o.rows[~ok])
        o = o.sub(ok)
        version = o.i32(_off(name, "Version"))
        size = _lengths(lengths, version)
        ok = (size > 0) & o.has(size)
        if name == "MQPMO":   # put message records: decode_unit
            ok &= (version < 2) | (o.i32(_off(name, "RecsPresent")) <= 0)
        c.not_here(o.rows[~ok])
        o, size = o.sub(ok), size[ok]
        if name == "MQPMO":
            c.put("pmo_options", o, o.u32(_off(name, "Options")))
            c.text("resolved_q_mgr_name", o, _off(name, "ResolvedQMgrName"), _width(name, "ResolvedQMgrName"))
        else:
            c.put("gmo_options", o, o.u32(_off(name, "Options")))
            c.put("gmo_wait_interval", o, o.i32(_off(name, "WaitInterval")))
        c.text("resolved_q_name", o, _off(name, "ResolvedQName"), _width(name, "ResolvedQName"))
        data = o.moved(size)
        data = data.sub(data.has(4))
        c.put("data_length", data, data.i32(0))

    # MQINQ, MQSET and replies: the counts, then the lists
    _inq(c, b.sub(((call == MQINQ) | (call == MQSET)) & (body >= LENGTHS["INQ"])), t, ccsid)

    # SPI: the verb header, then an MQOD within SPI_OD_SCAN bytes
    spi = b.sub((call == SPI) & (body >= LENGTHS["SPI"]))
    verb = spi.u32(_off("SPI", "Verb"))
    c.put("spi_verb", spi, verb)
    c.put("spi_version", spi, spi.u32(_off("SPI", "Version")))
    c.named("spi_verb_name", spi, verb, SPI_VERBS)
    _spi_od(c, spi)


def _mqod(c: _Columns, od: _Rows) -> tuple:
    """The MQODs at ``od``: their columns; returns (the MQODs read here,
    their sizes).  The others -- a version this reader does not know, an
    MQOD cut short, object or response records (decode_unit's errors and
    record walk) -- go to decode_unit."""
    s = "MQOD"
    ok = od.has(8)
    version = od.i32(_off(s, "Version"))
    size = _lengths(MQOD_LENGTHS, version)
    ok &= (size > 0) & od.has(size)
    ok &= (version < 2) | (od.i32(_off(s, "RecsPresent")) <= 0)
    c.not_here(od.rows[~ok])
    od, version, size = od.sub(ok), version[ok], size[ok]
    c.put("od_object_type", od, od.i32(_off(s, "ObjectType")))
    for col, fld in (("od_object_name", "ObjectName"), ("od_object_q_mgr_name", "ObjectQMgrName"),
                     ("od_dynamic_q_name", "DynamicQName")):
        c.text(col, od, _off(s, fld), _width(s, fld))
    v3 = od.sub(version >= 3)
    for col, fld in (("od_resolved_q_name", "ResolvedQName"), ("od_resolved_q_mgr_name", "ResolvedQMgrName")):
        c.text(col, v3, _off(s, fld), _width(s, fld))
    return od, size


def _inq(c: _Columns, q: _Rows, t: np.ndarray, ccsid: np.ndarray) -> None:
    """MQINQ / MQSET (and replies) with their counts present: the selector
    list, and in MQINQ_REPLY and MQSET the integer values and the characters
    when all of them are present (negative counts and selectors cut short
    are decode_unit's errors)."""
    s = "INQ"
    nsel, nint, nchar = (q.i32(_off(s, f)) for f in ("SelectorCount", "IntAttrCount", "CharAttrLength"))
    room = q.rest() - LENGTHS[s]
    ok = (nsel >= 0) & (nint >= 0) & (nchar >= 0) & (4 * nsel <= room)
    c.not_here(q.rows[~ok])
    q, nsel, nint, nchar, room = q.sub(ok), nsel[ok], nint[ok], nchar[ok], room[ok]
    if len(q) == 0:
        return
    at = q.at + LENGTHS[s]
    c.arrow["inq_selectors"] = (q.rows, _int_lists(q.r, at, nsel, q.little))
    values = np.isin(t[q.rows], (MQINQ | REPLY_BIT, MQSET)) & (room >= 4 * (nsel + nint) + nchar)
    c.arrow["inq_int_values"] = (q.rows[values], _int_lists(q.r, (at + 4 * nsel)[values], nint[values],
                                                            q.little[values]))
    chars = values & (nchar > 0)
    if chars.any():
        c.arrow["inq_char_values"] = (q.rows[chars], _char_values(q.r, (at + 4 * (nsel + nint))[chars], nchar[chars],
                                                                  ccsid[q.rows[chars]]))


def _char_values(r: _Reader, at: np.ndarray, lengths: np.ndarray, ccsid: np.ndarray) -> pa.Array:
    """The MQINQ / MQSET characters: ``lengths[i]`` bytes at buffer positions
    ``at[i]`` in ``ccsid[i]``, untrimmed."""
    return pa.array([decode_text(r.buf[a:a + ln].tobytes(), cc, trim=False)
                     for a, ln, cc in zip(at.tolist(), lengths.tolist(), ccsid.tolist())], pa.string())


def _int_lists(r: _Reader, at: np.ndarray, counts: np.ndarray, little: np.ndarray) -> pa.Array:
    """Lists of ``counts[i]`` signed 32-bit integers at buffer positions ``at[i]``."""
    offsets = np.zeros(len(at) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    where = np.repeat(at - 4 * offsets[:-1], counts) + 4 * np.arange(total, dtype=np.int64)
    v = r.le[np.minimum(where, r.last_window)]
    v = np.where(np.repeat(little, counts), v, v.byteswap()).astype(np.int64)
    v = np.where(v >= 1 << 31, v - (1 << 32), v)
    return pa.ListArray.from_arrays(_array(offsets, None, pa.int32()), _array(v, None, pa.int64()))


def _spi_od(c: _Columns, spi: _Rows) -> None:
    """The MQOD an SPI carries (SPI OPEN): at the first 4-aligned place after
    the verb header, within SPI_OD_SCAN bytes, where an MQOD StrucId and a
    known version stand (calls._decode_api's scan).  An EBCDIC MQOD goes to
    decode_unit."""
    if len(spi) == 0:
        return
    first = spi.moved(LENGTHS["SPI"])
    ends = np.minimum(spi.lens, spi.pos + SPI_OD_SCAN) - first.pos
    found, places = [], []
    buf = spi.r.buf
    for i, (a, span, lt) in enumerate(zip(first.at.tolist(), ends.tolist(), first.little.tolist())):
        seg = buf[a:a + span].tobytes() if span > 0 else b""
        hit = None
        for ident, ebcdic in ((OD_IDS[0], False), (OD_IDS[1], True)):
            j = seg.find(ident)
            while j != -1 and j + 8 <= len(seg) and (hit is None or j < hit[0]):
                if j % 4 == 0 and int.from_bytes(seg[j + 4:j + 8], "little" if lt else "big", signed=True) \
                        in MQOD_LENGTHS:
                    hit = (j, ebcdic)
                    break
                j = seg.find(ident, j + 1)
        if hit is None:
            continue
        if hit[1]:
            c.not_here(first.rows[i:i + 1])
        else:
            found.append(i)
            places.append(hit[0])
    if found:
        idx = np.asarray(found, dtype=np.int64)
        _mqod(c, first.sub(idx).moved(np.asarray(places, dtype=np.int64)))


def _other(c: _Columns, u: _Rows, t: np.ndarray) -> None:
    """The types without an API header (``u``: after the TSH)."""
    tt = t[u.rows]
    rest = u.rest()
    sid = u.be32(0)
    # INITIAL_DATA, USERID_DATA, CONAUTH_INFO: a StrucId first (absent: nothing is read)
    ident = {}
    for key, segment_type, least in (("ID", INITIAL_DATA, 5), ("UID", USERID_DATA, 4), ("CAUT", CONAUTH_INFO, 4)):
        here = (tt == segment_type) & (rest >= least)
        c.not_here(u.rows[here & (sid == _EBCDIC[key])])
        x = u.sub(here & (sid == _ASCII[key]))
        ok = x.has(LENGTHS["ID_SHORT" if key == "ID" else key])
        c.not_here(x.rows[~ok])
        ident[key] = x.sub(ok)
    s, x = "ID", ident["ID"]
    c.put("id_fap_level", x, x.u8(_off(s, "FapLevel")))
    c.put("id_cap_flags1", x, x.u8(_off(s, "CapFlag1")))
    c.put("id_ini_err_flags1", x, x.u8(_off(s, "IniErrFlg1")))
    c.put("id_max_msg_batch", x, x.u16(_off(s, "MaxMsgBtch")))
    c.put("id_max_tr_size", x, x.u32(_off(s, "MaxTrSize")))
    c.put("id_max_msg_size", x, x.u32(_off(s, "MaxMsgSize")))
    c.put("id_seq_wrap_value", x, x.u32(_off(s, "SeqWrapVal")))
    c.text("id_channel_name", x, _off(s, "ChannelName"), _width(s, "ChannelName"))
    x4 = x.sub(x.has(LENGTHS["ID_V4"]))
    c.put("id_cap_flags2", x4, x4.u8(_off(s, "CapFlag2")))
    c.put("id_ccsid", x4, x4.u16(_off(s, "CCSID")))
    c.text("id_q_mgr_name", x4, _off(s, "QMgrName"), _width(s, "QMgrName"))
    c.put("id_hb_interval", x4, x4.u32(_off(s, "HBInterval")))
    xe = x.sub(x.has(LENGTHS["ID_EXT"]))
    c.put("id_cap_flags3", xe, xe.u8(_off(s, "CapFlag3")))
    c.put("id_conv_by_socket", xe, xe.u32(_off(s, "ConvBySkt")))
    c.text("id_prod_id", xe, _off(s, "ProdId"), _width(s, "ProdId"))
    s, x = "UID", ident["UID"]
    c.text("uid_user_id", x, _off(s, "UserId"), _width(s, "UserId"))
    x = x.sub(x.has(LENGTHS["UID_LONG"]))
    c.text("uid_long_user_id", x, _off(s, "LongUserId"), _width(s, "LongUserId"))
    # CONAUTH_INFO: the user id of UsrLength bytes after the structure
    s, x = "CAUT", ident["CAUT"]
    c.put("caut_auth_type", x, x.u32(_off(s, "AuthType")))
    usr = x.u32(_off(s, "UsrLength"))
    named = usr <= x.rest() - LENGTHS[s]
    c.not_here(x.rows[named & (usr > MAX_TEXT)])
    named &= usr <= MAX_TEXT
    if (usr[named] > 0).any():
        c.text("caut_user_id", x.sub(named), LENGTHS[s], int(usr[named].max()), usr[named])
    # STATUS_DATA
    s = "STATUS"
    x = u.sub((tt == STATUS_DATA) & (rest >= LENGTHS[s]))
    code = x.u32(_off(s, "Code"))
    c.put("status_code", x, code)
    c.named("status_code_name", x, code, STATUS_CODES)
    v = x.sub((x.u32(_off(s, "Length")) >= 12) & x.has(12))
    c.put("status_value", v, v.u32(8))
    # PING_DATA, RESET_DATA
    x = u.sub((tt == PING_DATA) & (rest > 4))
    c.put("ping_length", x, x.u32(_off("PING", "Length")))
    x = u.sub((tt == RESET_DATA) & (rest >= LENGTHS["RESET"]))
    c.put("reset_seq_num", x, x.u32(_off("RESET", "SeqNum")))
    # SOCKET_ACTION
    x = u.sub((tt == SOCKET_ACTION) & (rest >= LENGTHS["SOCKET"]))
    for col, fld in (("socket_conversation_id", "ConversId"), ("socket_request_id", "RequestId"),
                     ("socket_type", "Type"), ("socket_parm1", "Parm1"), ("socket_parm2", "Parm2")):
        c.put(col, x, x.u32(_off("SOCKET", fld)))
    # NOTIFICATION
    s = "NOTIF"
    x = u.sub((tt == NOTIFICATION) & (rest >= LENGTHS[s]))
    c.put("hobj", x, x.i32(_off(s, "Handle")))
    code = x.u32(_off(s, "Code"))
    c.put("notification_code", x, code)
    c.named("notification_code_name", x, code, NOTIFICATION_CODES)
    c.put("notification_value", x, x.u32(_off(s, "Value")))
    # REQUEST_MSGS
    s = "MSGREQ"
    x = u.sub((tt == REQUEST_MSGS) & (rest >= LENGTHS[s]))
    c.put("hobj", x, x.i32(_off(s, "Handle")))
    c.put("msgreq_rqst_bytes", x, x.u32(_off(s, "RqstBytes")))
    c.put("msgreq_wait_interval", x, x.i32(_off(s, "WaitIntrv")))
    # ASYNC_MESSAGE: the handle in every segment; the first segment's long form adds the
    # reason and the resolved queue name (ResolQNLn bytes)
    s = "ASYNC_HEADER"
    x = u.sub((tt == ASYNC_MESSAGE) & (rest >= LENGTHS["ASYNC_SHORT"]))
    c.put("hobj", x, x.i32(_off(s, "Hobj")))
    x = x.sub((x.u16(_off(s, "SegmIndex")) == 0) & x.has(LENGTHS["ASYNC_FIXED"]))
    c.put("reason_code", x, x.i32(_off(s, "ReasonCode")))
    qlen = x.u8(_off(s, "ResolQNLn"))
    ok = x.has(LENGTHS["ASYNC_FIXED"] + qlen)
    c.not_here(x.rows[~ok])
    if (qlen[ok] > 0).any():
        c.text("resolved_q_name", x.sub(ok), LENGTHS["ASYNC_FIXED"], int(qlen[ok].max()), qlen[ok])
    # MESSAGE_DATA: MSH, then MQXQH
    m = u.sub(tt == MESSAGE_DATA)
    sid = m.be32(0)
    c.not_here(m.rows[sid == _EBCDIC["MSH"]])
    msh = sid == _ASCII["MSH"]
    c.not_here(m.rows[msh & ~m.has(LENGTHS["MSH"])])
    m = m.moved(np.where(msh, LENGTHS["MSH"], 0))
    sid = m.be32(0)
    c.not_here(m.rows[sid == _EBCDIC["XQH"]])
    x = m.sub(sid == _ASCII["XQH"])
    c.not_here(x.rows[~x.has(LENGTHS["XQH_PREFIX"])])
    for col, fld in (("remote_q_name", "RemoteQName"), ("remote_q_mgr_name", "RemoteQMgrName")):
        c.text(col, x, _off("XQH_PREFIX", fld), _width("XQH_PREFIX", fld))
    # XA_*: no API header
    s = "XA"
    x = u.sub((tt >= 0xA1) & (tt <= 0xBA) & (rest >= LENGTHS[s]))
    c.put("xa_return_value", x, x.i32(_off(s, "ReturnValue")))
    c.put("xa_tm_flags", x, x.u32(_off(s, "TMFlags")))
    c.put("xa_rmid", x, x.u32(_off(s, "RMId")))
