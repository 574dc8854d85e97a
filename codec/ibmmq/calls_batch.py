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

from ..ccsid import decode_text, is_known
from .call_columns import CALL_COLUMNS
from .wire import (
    MQGMO_LENGTHS, MQMD_LENGTHS, MQOD_LENGTHS, MQPMO_LENGTHS, NOTIFICATION_CODES, SPI_VERBS, STATUS_CODES,
    name_text, segment_type_name,
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


_TSH, _TSHM, _TSHC = _id(b"TSH "), _id(b"TSHM"), _id(b"TSHC")
#: StrucIds, ASCII and EBCDIC (an EBCDIC one sends the unit to decode_unit)
_ASCII = {k: _id(v) for k, v in (("MD", b"MD  "), ("PMO", b"PMO "), ("GMO", b"GMO "), ("MSH", b"MSH "),
                                 ("XQH", b"XQH "), ("OD", b"OD  "), ("ID", b"ID  "), ("UID", b"UID "),
                                 ("CAUT", b"CAUT"))}
_EBCDIC = {k: _id(v.encode("cp500")) for k, v in (("MD", "MD  "), ("PMO", "PMO "), ("GMO", "GMO "),
                                                  ("MSH", "MSH "), ("XQH", "XQH "), ("OD", "OD  "),
                                                  ("ID", "ID  "), ("UID", "UID "), ("CAUT", "CAUT"))}
_OD_ASCII, _OD_EBCDIC = b"OD  ", "OD  ".encode("cp500")
_TYPE_NAMES = [segment_type_name(t) for t in range(256)]
_MQCONN, _MQOPEN, _MQCLOSE, _MQGET, _MQPUT, _MQPUT1, _MQSET, _MQINQ, _SPI = (
    0x81, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8C)


def _lengths(versions: dict, version: np.ndarray) -> np.ndarray:
    """The structure length of each version (0 where the version is unknown)."""
    return np.select([version == v for v in versions], list(versions.values()), 0)


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

    def u16(self, pos, little) -> np.ndarray:
        b0, b1 = self.u8(pos), self.u8(pos + 1)
        return np.where(little, (b1 << 8) | b0, (b0 << 8) | b1)

    def i16(self, pos, little) -> np.ndarray:
        v = self.u16(pos, little)
        return np.where(v >= 1 << 15, v - (1 << 16), v)

    def texts(self, rows, at, width: int, ccsid, lengths=None) -> pa.Array:
        """The character fields of ``width`` bytes at buffer positions ``at``
        of units ``rows`` (only their first ``lengths`` bytes, if given), by
        decode_unit's ``name_text`` (NUL/blank trimmed, None when empty), as a
        dictionary array; each distinct (bytes, CCSID) decoded once."""
        if len(rows) == 0:
            return pa.array([], _DICT)
        buf = self.buf
        if len(buf) < int(at.max()) + width:   # a variable field's window may run past the buffer
            buf = np.concatenate([buf, np.zeros(width, dtype=np.uint8)])
        raw = np.empty((len(rows), width + 2), dtype=np.uint8)
        # each row's field copied whole: a view of every width-byte window of the buffer
        raw[:, :width] = np.lib.stride_tricks.sliding_window_view(buf, width)[at]
        if lengths is not None:   # bytes past the field's own length: NULs, which name_text trims
            raw[:, :width][np.arange(width)[None, :] >= lengths[:, None]] = 0
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


def _named(codes: np.ndarray, valid: np.ndarray, names: dict) -> pa.Array:
    """The value names of ``codes`` (None for a code without one) as a dictionary array."""
    distinct = sorted(set(codes[valid].tolist())) or [0]
    labels = [names.get(c) for c in distinct]
    index = np.searchsorted(np.asarray(distinct, dtype=np.int64), codes).clip(0, len(distinct) - 1)
    unnamed = np.asarray([s is None for s in labels], dtype=bool)
    mask = ~valid | unnamed[index] | (np.asarray(distinct, dtype=np.int64)[index] != codes)
    return pa.DictionaryArray.from_arrays(pa.array(index.astype(np.int32), mask=mask),
                                          pa.array([s or "" for s in labels], pa.string()))


class _Columns:
    """The columns of a batch while they are read: integers as (values,
    valid) over every unit, character fields as the places to read them
    from; :meth:`arrays` keeps only the units read here (``fast``)."""

    def __init__(self, n: int):
        self.n = n
        self.ints: dict[str, tuple] = {}
        self.texts: dict[str, list] = {}
        self.other: dict[str, tuple] = {}   # name -> (rows, Arrow array of those rows), built per row

    def put(self, name: str, values, valid) -> None:
        old = self.ints.get(name)
        if old is not None:   # another structure's rows (hobj: API header, NOTIFICATION, ...)
            values, valid = np.where(valid, values, old[0]), valid | old[1]
        self.ints[name] = (values, valid)

    def text(self, name: str, where, at, width: int, lengths=None) -> None:
        self.texts.setdefault(name, []).append((where, at, width, lengths))

    def arrays(self, r: _Reader, fast: np.ndarray, ccsid: np.ndarray) -> dict:
        n = self.n
        out = {name: _column(values, fast & valid, _TYPES[name]) for name, (values, valid) in self.ints.items()}
        for name, sources in self.texts.items():
            rows_parts, arrays = [], []
            for where, at, width, lengths in sources:
                rows = np.flatnonzero(fast & where)
                if len(rows):
                    rows_parts.append(rows)
                    arrays.append(r.texts(rows, r.starts[rows] + at[rows], width, ccsid,
                                          None if lengths is None else lengths[rows]))
            if not rows_parts:
                continue
            if len(arrays) == 1:
                out[name] = _scatter(n, rows_parts[0], arrays[0])
            else:   # one column read from several structures: joined as strings, encoded again
                joined = pa.concat_arrays([a.cast(pa.string()) for a in arrays])
                out[name] = _scatter(n, np.concatenate(rows_parts), joined).dictionary_encode()
        for name, (rows, array) in self.other.items():
            keep = fast[rows]
            if keep.any():
                out[name] = _scatter(n, rows[keep], array.filter(pa.array(keep)))
        return out


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
    c = _Columns(n)
    ident = r.be32(0)
    tshm = ident == _TSHM
    fast = (ident == _TSH) | tshm | (ident == _TSHC)
    hlen = np.where(tshm, 36, 28)
    fast &= r.has(hlen, 0)
    bo, t = r.u8(hlen - 20), r.u8(hlen - 19)
    little = bo == 2
    encoding, ccsid = r.i32(hlen - 8, little), r.i16(hlen - 4, little)
    known = np.zeros(n, dtype=bool)
    for cc in sorted(set(ccsid[fast].tolist())):   # (not np.unique: its first plain call imports numpy.ma)
        if cc > 0 and is_known(cc):
            known |= ccsid == cc
    ccsid_eff = np.where(known, ccsid, 819)
    api = (t > 0x80) & (t <= 0x9F)
    base = t & ~0x10
    rest = lens - hlen

    # ---- API header, then the body of each call
    a = "API_HEADER"
    fast &= ~api | r.has(hlen, LENGTHS[a])
    c.put("reply_length", r.be32(hlen + _off(a, "ReplyLength")), api)
    c.put("completion_code", r.i32(hlen + _off(a, "CompCode"), little), api)
    c.put("reason_code", r.i32(hlen + _off(a, "Reason"), little), api)
    c.put("hobj", r.i32(hlen + _off(a, "Hobj"), little), api)
    pos = hlen + LENGTHS[a]
    body = lens - pos

    # MQCONN
    conn = api & (base == _MQCONN) & (body >= LENGTHS["CONN_SHORT"])
    c.text("conn_q_mgr_name", conn, pos + _off("CONN", "QMgrName"), _width("CONN", "QMgrName"))
    c.text("conn_appl_name", conn, pos + _off("CONN", "ApplName"), _width("CONN", "ApplName"))
    c.put("conn_appl_type", r.i32(pos + _off("CONN", "ApplType"), little), conn)
    conn_full = conn & (body >= LENGTHS["CONN"])
    c.put("conn_options", r.u32(pos + _off("CONN", "Options"), little), conn_full)
    c.put("conn_x_options", r.u32(pos + _off("CONN", "XOptions"), little), conn_full)

    # MQOPEN, MQPUT1: an MQOD first (no MQOD: nothing more is read)
    sid = r.be32(pos)
    opens = api & ((base == _MQOPEN) | (base == _MQPUT1))
    fast &= ~(opens & (sid == _EBCDIC["OD"]))
    od = opens & (sid == _ASCII["OD"])
    od_ok, od_size = _mqod(r, c, od, pos, little)
    fast &= ~od | od_ok
    after = pos + od_size
    c.put("open_options", r.u32(after, little), od & (base == _MQOPEN) & r.has(after, 4))

    # MQCLOSE
    c.put("close_options", r.u32(pos, little), api & (base == _MQCLOSE) & (body >= 4))

    # MQMD, then MQPMO / MQGMO and DataLength: MQPUT, MQGET, and MQPUT1 after its MQOD
    put1 = od & (base == _MQPUT1)
    getput = (api & ((base == _MQGET) | (base == _MQPUT))) | put1
    mpos = np.where(put1, after, pos)
    sid = r.be32(mpos)
    fast &= ~(getput & (sid == _EBCDIC["MD"]))
    md = getput & (sid == _ASCII["MD"])
    fast &= ~md | r.has(mpos, 8)
    mdlen = _lengths(MQMD_LENGTHS, r.i32(mpos + 4, little))
    fast &= ~md | ((mdlen > 0) & r.has(mpos, mdlen))
    mpos = mpos + mdlen
    sid = r.be32(mpos)
    put, get = md & (base != _MQGET), md & (base == _MQGET)
    fast &= ~(put & (sid == _EBCDIC["PMO"])) & ~(get & (sid == _EBCDIC["GMO"]))
    pmo, gmo = put & (sid == _ASCII["PMO"]), get & (sid == _ASCII["GMO"])
    fast &= ~(pmo | gmo) | r.has(mpos, 8)
    ver = r.i32(mpos + _off("MQPMO", "Version"), little)
    size = np.where(pmo, _lengths(MQPMO_LENGTHS, ver), np.where(gmo, _lengths(MQGMO_LENGTHS, ver), 0))
    fast &= ~(pmo | gmo) | ((size > 0) & r.has(mpos, size))
    # put message records: decode_unit
    fast &= ~(pmo & (ver >= 2)) | (r.i32(mpos + _off("MQPMO", "RecsPresent"), little) <= 0)
    c.put("pmo_options", r.u32(mpos + _off("MQPMO", "Options"), little), pmo)
    c.put("gmo_options", r.u32(mpos + _off("MQGMO", "Options"), little), gmo)
    c.put("gmo_wait_interval", r.i32(mpos + _off("MQGMO", "WaitInterval"), little), gmo)
    c.text("resolved_q_name", pmo, mpos + _off("MQPMO", "ResolvedQName"), _width("MQPMO", "ResolvedQName"))
    c.text("resolved_q_mgr_name", pmo, mpos + _off("MQPMO", "ResolvedQMgrName"),
           _width("MQPMO", "ResolvedQMgrName"))
    c.text("resolved_q_name", gmo, mpos + _off("MQGMO", "ResolvedQName"), _width("MQGMO", "ResolvedQName"))
    dpos = mpos + size
    c.put("data_length", r.i32(dpos, little), (pmo | gmo) & r.has(dpos, 4))

    # MQINQ, MQSET and replies: counts, then the lists
    fast &= _inq(r, c, api & ((base == _MQINQ) | (base == _MQSET)) & (body >= LENGTHS["INQ"]), t, pos,
                 little, ccsid_eff)

    # SPI: the verb header, then an MQOD within SPI_OD_SCAN bytes
    spi = api & (base == _SPI) & (body >= LENGTHS["SPI"])
    verb = r.u32(pos + _off("SPI", "Verb"), little)
    c.put("spi_verb", verb, spi)
    c.put("spi_version", r.u32(pos + _off("SPI", "Version"), little), spi)
    c.other["spi_verb_name"] = (np.arange(n), _named(verb, spi, SPI_VERBS))
    fast &= _spi_od(r, c, buf, spi, pos, lens, little)

    # ---- the other types: a body after the TSH
    other = ~api
    tpos = hlen
    # INITIAL_DATA
    sid = r.be32(tpos)
    i = other & (t == 0x01) & (rest >= 5)
    fast &= ~(i & (sid == _EBCDIC["ID"]))
    i &= sid == _ASCII["ID"]
    fast &= ~i | (rest >= LENGTHS["ID_SHORT"])
    s = "ID"
    c.put("id_fap_level", r.u8(tpos + _off(s, "FapLevel")), i)
    c.put("id_cap_flags1", r.u8(tpos + _off(s, "CapFlag1")), i)
    c.put("id_ini_err_flags1", r.u8(tpos + _off(s, "IniErrFlg1")), i)
    c.put("id_max_msg_batch", r.u16(tpos + _off(s, "MaxMsgBtch"), little), i)
    c.put("id_max_tr_size", r.u32(tpos + _off(s, "MaxTrSize"), little), i)
    c.put("id_max_msg_size", r.u32(tpos + _off(s, "MaxMsgSize"), little), i)
    c.put("id_seq_wrap_value", r.u32(tpos + _off(s, "SeqWrapVal"), little), i)
    c.text("id_channel_name", i, tpos + _off(s, "ChannelName"), _width(s, "ChannelName"))
    i4 = i & (rest >= LENGTHS["ID_V4"])
    c.put("id_cap_flags2", r.u8(tpos + _off(s, "CapFlag2")), i4)
    c.put("id_ccsid", r.u16(tpos + _off(s, "CCSID"), little), i4)
    c.text("id_q_mgr_name", i4, tpos + _off(s, "QMgrName"), _width(s, "QMgrName"))
    c.put("id_hb_interval", r.u32(tpos + _off(s, "HBInterval"), little), i4)
    ie = i & (rest >= LENGTHS["ID_EXT"])
    c.put("id_cap_flags3", r.u8(tpos + _off(s, "CapFlag3")), ie)
    c.put("id_conv_by_socket", r.u32(tpos + _off(s, "ConvBySkt"), little), ie)
    c.text("id_prod_id", ie, tpos + _off(s, "ProdId"), _width(s, "ProdId"))
    # USERID_DATA
    u = other & (t == 0x08) & (rest >= 4)
    fast &= ~(u & (sid == _EBCDIC["UID"]))
    u &= sid == _ASCII["UID"]
    fast &= ~u | (rest >= LENGTHS["UID"])
    c.text("uid_user_id", u, tpos + _off("UID", "UserId"), _width("UID", "UserId"))
    c.text("uid_long_user_id", u & (rest >= LENGTHS["UID_LONG"]), tpos + _off("UID", "LongUserId"),
           _width("UID", "LongUserId"))
    # CONAUTH_INFO: the user id of UsrLength bytes after the structure
    ca = other & (t == 0x0A) & (rest >= 4)
    fast &= ~(ca & (sid == _EBCDIC["CAUT"]))
    ca &= sid == _ASCII["CAUT"]
    fast &= ~ca | (rest >= LENGTHS["CAUT"])
    c.put("caut_auth_type", r.u32(tpos + _off("CAUT", "AuthType"), little), ca)
    usr = r.u32(tpos + _off("CAUT", "UsrLength"), little)
    named = ca & (usr <= rest - LENGTHS["CAUT"])
    fast &= ~named | (usr <= MAX_TEXT)
    width = int(usr[fast & named].max()) if (fast & named).any() else 0
    if width:
        c.text("caut_user_id", named, tpos + LENGTHS["CAUT"], width, usr)
    # STATUS_DATA
    st = other & (t == 0x05) & (rest >= LENGTHS["STATUS"])
    code = r.u32(tpos + _off("STATUS", "Code"), little)
    c.put("status_code", code, st)
    c.other["status_code_name"] = (np.arange(n), _named(code, st, STATUS_CODES))
    c.put("status_value", r.u32(tpos + 8, little),
          st & (r.u32(tpos + _off("STATUS", "Length"), little) >= 12) & (rest >= 12))
    # PING_DATA, RESET_DATA
    c.put("ping_length", r.u32(tpos + _off("PING", "Length"), little), other & (t == 0x07) & (rest > 4))
    c.put("reset_seq_num", r.u32(tpos + _off("RESET", "SeqNum"), little),
          other & (t == 0x03) & (rest >= LENGTHS["RESET"]))
    # SOCKET_ACTION
    so = other & (t == 0x0C) & (rest >= LENGTHS["SOCKET"])
    for col, fld in (("socket_conversation_id", "ConversId"), ("socket_request_id", "RequestId"),
                     ("socket_type", "Type"), ("socket_parm1", "Parm1"), ("socket_parm2", "Parm2")):
        c.put(col, r.u32(tpos + _off("SOCKET", fld), little), so)
    # NOTIFICATION
    no = other & (t == 0x0F) & (rest >= LENGTHS["NOTIF"])
    c.put("hobj", r.i32(tpos + _off("NOTIF", "Handle"), little), no)
    code = r.u32(tpos + _off("NOTIF", "Code"), little)
    c.put("notification_code", code, no)
    c.other["notification_code_name"] = (np.arange(n), _named(code, no, NOTIFICATION_CODES))
    c.put("notification_value", r.u32(tpos + _off("NOTIF", "Value"), little), no)
    # REQUEST_MSGS
    mr = other & (t == 0x0E) & (rest >= LENGTHS["MSGREQ"])
    c.put("hobj", r.i32(tpos + _off("MSGREQ", "Handle"), little), mr)
    c.put("msgreq_rqst_bytes", r.u32(tpos + _off("MSGREQ", "RqstBytes"), little), mr)
    c.put("msgreq_wait_interval", r.i32(tpos + _off("MSGREQ", "WaitIntrv"), little), mr)
    # ASYNC_MESSAGE: the handle in every segment; the first segment's long form adds the
    # reason and the resolved queue name (ResolQNLn bytes)
    s = "ASYNC_HEADER"
    am = other & (t == 0x0D) & (rest >= LENGTHS["ASYNC_SHORT"])
    c.put("hobj", r.i32(tpos + _off(s, "Hobj"), little), am)
    am &= (r.u16(tpos + _off(s, "SegmIndex"), little) == 0) & (rest >= LENGTHS["ASYNC_FIXED"])
    c.put("reason_code", r.i32(tpos + _off(s, "ReasonCode"), little), am)
    qlen = r.u8(tpos + _off(s, "ResolQNLn"))
    fast &= ~am | (rest >= LENGTHS["ASYNC_FIXED"] + qlen)
    width = int(qlen[fast & am].max()) if (fast & am).any() else 0
    if width:
        c.text("resolved_q_name", am, tpos + LENGTHS["ASYNC_FIXED"], width, qlen)
    # MESSAGE_DATA: MSH, then MQXQH
    msg = other & (t == 0x04)
    mp = tpos
    sid = r.be32(mp)
    fast &= ~(msg & (sid == _EBCDIC["MSH"]))
    msh = msg & (sid == _ASCII["MSH"])
    fast &= ~msh | r.has(mp, LENGTHS["MSH"])
    mp = np.where(msh, mp + LENGTHS["MSH"], mp)
    sid = r.be32(mp)
    fast &= ~(msg & (sid == _EBCDIC["XQH"]))
    xqh = msg & (sid == _ASCII["XQH"])
    fast &= ~xqh | r.has(mp, LENGTHS["XQH_PREFIX"])
    for col, fld in (("remote_q_name", "RemoteQName"), ("remote_q_mgr_name", "RemoteQMgrName")):
        c.text(col, xqh, mp + _off("XQH_PREFIX", fld), _width("XQH_PREFIX", fld))
    # XA_*: no API header
    xa = (t >= 0xA1) & (t <= 0xBA) & (rest >= LENGTHS["XA"])
    c.put("xa_return_value", r.i32(tpos + _off("XA", "ReturnValue"), little), xa)
    c.put("xa_tm_flags", r.u32(tpos + _off("XA", "TMFlags"), little), xa)
    c.put("xa_rmid", r.u32(tpos + _off("XA", "RMId"), little), xa)

    # ---- the table
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
    arrays.update(c.arrays(r, f, ccsid_eff))
    fields = []
    for fld in DECODED_SCHEMA:
        arr = arrays.get(fld.name)
        if arr is not None and arr.type != fld.type:
            arr = arr.cast(fld.type)
        fields.append(pa.nulls(n, fld.type) if arr is None else arr)
    table = pa.Table.from_arrays(fields, schema=DECODED_SCHEMA)
    slow = np.flatnonzero(~fast)
    if len(slow):
        # every other unit: decode_unit's own rows, in place of the fast reader's
        from .calls import decode_unit   # the declarations (construct): only when a unit needs them

        slow_rows = [decode_unit(bytes(buf[s:s + ln]), int(fl))
                     for s, ln, fl in zip(starts[slow].tolist(), lens[slow].tolist(), full[slow].tolist())]
        table = pa.concat_tables([table, pa.Table.from_pylist(slow_rows, schema=DECODED_SCHEMA)])
        order = np.arange(n, dtype=np.int64)
        order[slow] = n + np.arange(len(slow))
        table = table.take(pa.array(order))
    return table


def _mqod(r: _Reader, c: _Columns, od: np.ndarray, pos: np.ndarray, little: np.ndarray) -> tuple:
    """The MQOD at ``pos`` of the units ``od``: its columns; returns (read
    here, its size).  Not read here: a version this reader does not know, an
    MQOD cut short, object or response records (decode_unit's errors and
    record walk)."""
    s = "MQOD"
    ok = r.has(pos, 8)
    version = r.i32(pos + _off(s, "Version"), little)
    size = _lengths(MQOD_LENGTHS, version)
    ok &= (size > 0) & r.has(pos, size)
    ok &= (version < 2) | (r.i32(pos + _off(s, "RecsPresent"), little) <= 0)
    good = od & ok
    c.put("od_object_type", r.i32(pos + _off(s, "ObjectType"), little), good)
    for col, fld, where in (("od_object_name", "ObjectName", good), ("od_object_q_mgr_name", "ObjectQMgrName", good),
                            ("od_dynamic_q_name", "DynamicQName", good),
                            ("od_resolved_q_name", "ResolvedQName", good & (version >= 3)),
                            ("od_resolved_q_mgr_name", "ResolvedQMgrName", good & (version >= 3))):
        c.text(col, where, pos + _off(s, fld), _width(s, fld))
    return ok, np.where(good, size, 0)


def _inq(r: _Reader, c: _Columns, inq: np.ndarray, t: np.ndarray, pos: np.ndarray, little: np.ndarray,
         ccsid: np.ndarray) -> np.ndarray:
    """MQINQ / MQSET (and replies) with their counts present: the selector
    list, and in MQINQ_REPLY and MQSET the integer values and the characters
    when all of them are present.  Returns the units read here (negative
    counts and selectors cut short are decode_unit's errors)."""
    s = "INQ"
    n = len(t)
    nsel = r.i32(pos + _off(s, "SelectorCount"), little)
    nint = r.i32(pos + _off(s, "IntAttrCount"), little)
    nchar = r.i32(pos + _off(s, "CharAttrLength"), little)
    start = pos + LENGTHS[s]
    room = r.lens - start
    ok = ~inq | ((nsel >= 0) & (nint >= 0) & (nchar >= 0) & (4 * nsel <= room))
    rows = np.flatnonzero(inq & ok)
    if len(rows) == 0:
        return ok
    values = np.isin(t[rows], (0x99, 0x88)) & (room[rows] >= 4 * (nsel[rows] + nint[rows]) + nchar[rows])
    at = r.starts[rows] + start[rows]
    c.other["inq_selectors"] = (rows, _int_lists(r, at, nsel[rows], little[rows]))
    vrows = np.flatnonzero(values)
    c.other["inq_int_values"] = (rows[vrows], _int_lists(r, at[vrows] + 4 * nsel[rows][vrows], nint[rows][vrows],
                                                         little[rows][vrows]))
    crows = vrows[nchar[rows][vrows] > 0]
    if len(crows):
        cat = at[crows] + 4 * (nsel[rows][crows] + nint[rows][crows])
        chars = [decode_text(r.buf[a:a + ln].tobytes(), int(cc), trim=False)
                 for a, ln, cc in zip(cat.tolist(), nchar[rows][crows].tolist(), ccsid[rows][crows].tolist())]
        c.other["inq_char_values"] = (rows[crows], pa.array(chars, pa.string()))
    return ok


def _int_lists(r: _Reader, at: np.ndarray, counts: np.ndarray, little: np.ndarray) -> pa.Array:
    """Lists of ``counts[i]`` signed 32-bit integers at buffer positions ``at[i]``."""
    offsets = np.zeros(len(at) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    first = np.repeat(at - 4 * offsets[:-1], counts)
    where = first + 4 * np.arange(total, dtype=np.int64)
    v = r._le[np.minimum(where, r.last_window)] if total else np.zeros(0, dtype=np.uint32)
    v = np.where(np.repeat(little, counts), v, v.byteswap()).astype(np.int64)
    v = np.where(v >= 1 << 31, v - (1 << 32), v)
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(v, pa.int64()))


def _spi_od(r: _Reader, c: _Columns, buf: np.ndarray, spi: np.ndarray, pos: np.ndarray, lens: np.ndarray,
            little: np.ndarray) -> np.ndarray:
    """The MQOD an SPI carries (SPI OPEN): the first 4-aligned place after the
    verb header, within SPI_OD_SCAN bytes, where an MQOD StrucId and a known
    version stand (calls._decode_api's scan).  Returns the units read here (an
    EBCDIC MQOD, or one this reader does not take, goes to decode_unit)."""
    ok = np.ones(len(spi), dtype=bool)
    rows = np.flatnonzero(spi)
    if len(rows) == 0:
        return ok
    found_rows, found_at = [], []
    for row, s, p, end, lt in zip(rows.tolist(), r.starts[rows].tolist(), pos[rows].tolist(),
                                  np.minimum(lens[rows], pos[rows] + SPI_OD_SCAN).tolist(), little[rows].tolist()):
        q0 = p + LENGTHS["SPI"]
        seg = buf[s + q0:s + end].tobytes() if end > q0 else b""
        hit = None
        for ident, ebcdic in ((_OD_ASCII, False), (_OD_EBCDIC, True)):
            i = seg.find(ident)
            while i != -1 and i + 8 <= len(seg) and (hit is None or i < hit[0]):
                if i % 4 == 0 and int.from_bytes(seg[i + 4:i + 8], "little" if lt else "big", signed=True) \
                        in MQOD_LENGTHS:
                    hit = (i, ebcdic)
                    break
                i = seg.find(ident, i + 1)
        if hit is None:
            continue
        if hit[1]:
            ok[row] = False
        else:
            found_rows.append(row)
            found_at.append(q0 + hit[0])
    if found_rows:
        where = np.zeros(len(spi), dtype=bool)
        where[found_rows] = True
        at = np.zeros(len(spi), dtype=np.int64)
        at[found_rows] = found_at
        od_ok, _ = _mqod(r, c, where, at, little)
        ok &= ~where | od_ok
    return ok
