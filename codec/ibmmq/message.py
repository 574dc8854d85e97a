"""An IBM MQ message: the MQMD, the chain of headers its Format starts, and
the body.

The header-chain rule (IBM MQ reference, "Character set and encoding" of
each header): every header names, in its Encoding, CodedCharSetId and
Format fields, the encoding, CCSID and format of *what follows it*.  So:

* the MQMD's own integers are in the byte order of the transport/caller
  (detected: its Version must read 1 or 2), its strings in the caller's
  CCSID (detected: StrucId "MD  " in ASCII or EBCDIC);
* header N+1's integers use the byte order of header N's Encoding and its
  strings header N's CodedCharSetId (a CCSID <= 0 - MQCCSI_Q_MGR,
  MQCCSI_INHERIT - inherits the CCSID already governing);
* an MQXQH's embedded MQMD1 (MsgDesc) names what follows the MQXQH;
* the chain ends at a Format that names no header: MQADMIN/MQEVENT/MQPCF
  (PCF, MQCFH first) and MQHEPCF (MQEPH first) are decoded by
  :mod:`mqcodec.ibmmq.pcf`, MQSTR as text in the governing CCSID, anything
  else (MQFMT_NONE, unknown names) is kept as bytes.

At most :data:`MAX_HEADERS` headers follow the MQMD.

No I/O; errors are :class:`~mqcodec.errors.DecodeError` with absolute
offsets.  With ``lenient=True`` a header that does not decode ends the chain:
the bytes from its start become the body (bytes) and a
:class:`~mqcodec.errors.DecodeWarning` says why.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ..render import json_ready
from ..ccsid import decode_or_keep, decode_text, encode_text
from ..errors import DecodeError, DecodeWarning, EncodeError
from .headers import (ENCODING_BIG, ENCODING_LITTLE, MQMD, Header, detect_md,
                      header_class_for_format)

__all__ = ["MQMessage", "decode_message", "decode_message_at", "encode_message",
           "MAX_HEADERS", "PCF_FORMATS", "EMBEDDED_PCF_FORMAT", "STRING_FORMAT"]

#: Bound on the number of headers after the MQMD (protects against loops).
MAX_HEADERS = 32

PCF_FORMATS = frozenset({"MQADMIN", "MQEVENT", "MQPCF"})   # MQCFH first
EMBEDDED_PCF_FORMAT = "MQHEPCF"                            # MQEPH first
STRING_FORMAT = "MQSTR"


class MQMessage:
    """A decoded (or constructed) IBM MQ message.

    Attributes: ``md`` (:class:`MQMD`), ``headers`` (list of
    :class:`~mqcodec.ibmmq.headers.Header`, in order), ``body_format``
    (the Format naming the body, trimmed), ``body`` (PcfMessage, str or
    bytes), ``body_offset``, ``encoding``/``ccsid`` (governing the body),
    ``md_encoding``/``md_ccsid`` (the MQMD's own), ``warnings``.
    """

    def __init__(self, md: MQMD | None = None, headers: Sequence[Header] | None = None, body: Any = b"", *,
                 md_encoding: int = ENCODING_LITTLE, md_ccsid: int = 819):
        self.md = md if md is not None else MQMD()
        self.headers = list(headers or [])
        self.body = body
        self.md_encoding = md_encoding
        self.md_ccsid = md_ccsid
        self.warnings: list[DecodeWarning] = []
        self.body_offset: int | None = None
        self.body_trailer = b""          # bytes after a PCF body
        self._body_raw: tuple[int, bytes] | None = None
        enc, cc = self._governing()
        self.encoding, self.ccsid = enc, cc
        self.body_format: Optional[str] = self._last_format()

    # ------------------------------------------------------------------
    def _governing(self) -> tuple[int, int]:
        enc, cc = self.md.next_governing(self.md_encoding, self.md_ccsid)
        for h in self.headers:
            enc, cc = h.next_governing(enc, cc)
        return enc, cc

    def _last_format(self) -> str:
        return (self.headers[-1] if self.headers else self.md).format_name

    def encode(self) -> bytes:
        return encode_message(self)

    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = self.md.to_dict()
        d["Headers"] = [h.to_dict() for h in self.headers]
        d["BodyFormat"] = self.body_format
        if self.body_offset is not None:
            d["BodyOffset"] = self.body_offset
        d["BodyEncoding"] = self.encoding
        d["BodyCCSID"] = self.ccsid
        body = self.body
        d["Body"] = body.to_dict() if hasattr(body, "to_dict") else body
        if self.body_trailer:
            d["BodyTrailer"] = self.body_trailer
        if self.warnings:
            d["Warnings"] = [w.to_dict() for w in self.warnings]
        return d

    def __repr__(self) -> str:
        return "<MQMessage %s%s body=%s>" % (
            "MQMD", "".join(" " + h.NAME for h in self.headers), self.body_format or "-")


# ----------------------------------------------------------------------
def decode_message(data: bytes, *, encoding: int | None = None, ccsid: int | None = None,
                   lenient: bool = False) -> MQMessage:
    """Decode ``data`` (MQMD first) into an :class:`MQMessage`.

    ``encoding`` (MQENC, e.g. ENCODING_BIG) and ``ccsid`` describe the MQMD
    itself and are detected when omitted."""
    return decode_message_at(data, 0, encoding=encoding, ccsid=ccsid, lenient=lenient)


def decode_message_at(data: bytes, offset: int = 0, end: int | None = None, *, encoding: int | None = None,
                      ccsid: int | None = None, lenient: bool = False) -> MQMessage:
    """Decode the message at ``data[offset:end]``; offsets in errors and in
    the result are absolute (from the start of ``data``)."""
    try:
        return _decode(data, offset, end, encoding, ccsid, lenient)
    except DecodeError:
        raise
    except (RecursionError, MemoryError, IndexError, ValueError, TypeError, OverflowError,
            UnicodeError) as exc:  # defensive: nothing else may escape
        raise DecodeError("MQMessage", "", offset, "%s: %s" % (exc.__class__.__name__, exc)) from None


def _decode(data, offset, end, encoding, ccsid, lenient) -> MQMessage:
    if not isinstance(data, bytes):
        data = bytes(data)
    end = len(data) if end is None else min(end, len(data))
    if offset < 0 or offset > end:
        raise DecodeError("MQMD", "StrucId", offset, "offset outside the input")
    md_enc, md_cc = detect_md(data[:end], offset, encoding, ccsid)
    md = MQMD.decode(data, offset, end, md_enc, md_cc)
    msg = MQMessage(md, [], b"", md_encoding=md_enc, md_ccsid=md_cc)
    warnings: list[DecodeWarning] = list(md.warnings)
    pos = offset + md.length
    enc, cc = md.next_governing(md_enc, md_cc)
    current: Header = md
    fmt = md.format_name
    while True:
        cls = header_class_for_format(fmt)
        if cls is None:
            break
        if len(msg.headers) >= MAX_HEADERS:
            exc = DecodeError(current.NAME, "Format", _format_offset(current),
                              "the header chain exceeds %d headers" % MAX_HEADERS)
            if not lenient:
                raise exc
            warnings.append(_warning(exc))
            break
        try:
            h = cls.decode(data, pos, end, enc, cc)
        except DecodeError as exc:
            if not lenient:
                raise
            warnings.append(_warning(exc))
            break
        msg.headers.append(h)
        warnings.extend(h.warnings)
        pos += h.length
        enc, cc = h.next_governing(enc, cc)
        current = h
        fmt = h.format_name
    msg.encoding, msg.ccsid = enc, cc
    msg.body_format = fmt
    msg.body_offset = pos
    _decode_body(msg, data, pos, end, fmt, enc, cc, lenient, warnings)
    if current.format_undecoded:
        msg.body_format = None   # the Format's CCSID has no converter: no format is known
    msg.warnings = warnings
    return msg


def _format_offset(h: Header) -> int:
    base = h.offset or 0
    if h.NAME == "MQMD":
        return base + 32
    if h.NAME == "MQXQH":
        return base + 104 + 32
    if h.NAME == "MQDLH":
        return base + 116
    return base + 20  # the standard prefix


def _warning(exc: DecodeError) -> DecodeWarning:
    return DecodeWarning(exc.structure, exc.field, exc.offset, exc.reason)


def _decode_body(msg: MQMessage, data: bytes, pos: int, end: int, fmt: str, enc: int, cc: int,
                 lenient: bool, warnings: list) -> None:
    name = fmt.rstrip(" \x00").upper()
    raw = data[pos:end]
    if header_class_for_format(name) is not None:
        # lenient stop inside the chain: the rest is opaque
        msg.body = raw
        return
    if name in PCF_FORMATS or name == EMBEDDED_PCF_FORMAT:
        try:
            from . import pcf  # written concurrently; imported lazily
            decode_pcf_at = pcf.decode_pcf_at
        except (ImportError, AttributeError):
            warnings.append(DecodeWarning("MQMessage", "Body", pos,
                                          "no PCF decoder available; body kept as bytes"))
            msg.body = raw
            return
        try:
            body, body_end = decode_pcf_at(data, pos, encoding=enc, ccsid=cc, lenient=lenient,
                                           warnings=warnings, end=end)
        except DecodeError as exc:
            if not lenient:
                raise
            warnings.append(_warning(exc))
            msg.body = raw
            return
        msg.body = body
        if pos <= body_end < end:
            msg.body_trailer = data[body_end:end]
        return
    if name == STRING_FORMAT:
        # a CCSID without a converter: the body stays bytes, with a warning
        msg.body = decode_or_keep(raw, cc, warnings, "MQMessage", "Body", pos, trim=False)
        if isinstance(msg.body, str):
            msg._body_raw = (cc, raw)
        return
    msg.body = raw


# ----------------------------------------------------------------------
def encode_message(msg: MQMessage) -> bytes:
    """The bytes of ``msg``: each header encoded in the encoding and CCSID
    named by the header before it.  Identical to the input for any decoded
    and unchanged message."""
    out = [msg.md.encode(msg.md_encoding, msg.md_ccsid)]
    enc, cc = msg.md.next_governing(msg.md_encoding, msg.md_ccsid)
    for h in msg.headers:
        out.append(h.encode(enc, cc))
        enc, cc = h.next_governing(enc, cc)
    body = msg.body
    if body is None:
        pass
    elif isinstance(body, (bytes, bytearray, memoryview)):
        out.append(bytes(body))
    elif isinstance(body, str):
        raw = msg._body_raw
        if raw is not None and raw[0] == cc and decode_text(raw[1], cc, trim=False) == body:
            out.append(raw[1])
        else:
            out.append(encode_text(body, cc, structure="MQMessage", field="Body"))
    elif hasattr(body, "encode"):
        out.append(bytes(body.encode()))
    else:
        raise EncodeError("MQMessage", "Body", "cannot encode a body of type %s" % type(body).__name__)
    out.append(msg.body_trailer or b"")
    return b"".join(out)
