"""Pure-Python implementation of the MSMQ packet batch decoder, and the
input handling and error tables both implementations share.

The reference behaviour: each record is decoded by
:func:`mqcodec.msmq.decode_packet` (strict mode, specification header order)
and written out as one row of :data:`mqcodec.batch.schema.MSMQ_PACKETS`.
The compiled twin (``mqcodec._ext.msmq_batch``) has the same entry point
``decode_msmq_buffers`` and must give the same table for every input,
errors included (tests/test_batch_msmq.py).

A record that raises :class:`~mqcodec.errors.DecodeError` gives a row with
the error's structure, field, offset and reason plus the record's raw bytes,
every other column null.  A null record gives ``record`` / ``""`` / 0 /
``"null record"`` and a null ``raw``.

Text columns (Label, format names) are UTF-8: a lone UTF-16 surrogate, which
the codec keeps (``surrogatepass``) but Arrow cannot store, becomes U+FFFD.
"""
from __future__ import annotations

import sys
import uuid
from typing import Any

import pyarrow as pa

from ..errors import DecodeError
from . import _front
from ._front import Implementations, check_offsets, dispatch
from .schema import MSMQ_PACKETS

__all__ = ["decode_msmq_buffers", "decode_records", "decode_batch", "STRUCTURES", "FIELDS",
           "REASONS", "REASON_TABLE", "REASON_CODES", "reason_text", "arrow_text", "NULL_RECORD"]

NULL_RECORD = ("record", "", 0, "null record")

# ---------------------------------------------------------------------------
# Error tables of the compiled walker (index = code; append, never reorder).
# The texts are those of mqcodec.msmq's DecodeErrors, so both
# implementations give the same error_reason.
# ---------------------------------------------------------------------------
STRUCTURES = [
    "record",                   # 0
    "PingPacket",               # 1
    "BaseHeader",               # 2
    "InternalHeader",           # 3
    "SessionHeader",            # 4
    "UserHeader",               # 5
    "TransactionHeader",        # 6
    "MessagePropertiesHeader",  # 7
    "DebugHeader",              # 8
    "UserMessage",              # 9
    "SecurityHeader",           # 10
]

FIELDS = [
    "",
    # PingPacket
    "Flags", "Signature", "Cookie", "QMGuid",
    # BaseHeader
    "VersionNumber", "Reserved", "PacketSize", "TimeToReachQueue",
    # SessionHeader
    "AckSequenceNumber",
    # UserHeader
    "SourceQueueManager", "QueueManagerAddress", "TimeToBeReceived", "SentTime", "MessageID",
    "DestinationQueue", "AdminQueue", "ResponseQueue", "ConnectorType",
    # TransactionHeader
    "TxSequenceID", "TxSequenceNumber", "PreviousTxSequenceNumber", "ConnectorQMGuid",
    # MessagePropertiesHeader
    "LabelLength", "MessageClass", "CorrelationID", "BodyType", "ApplicationTag", "MessageSize",
    "AllocationBodySize", "PrivacyLevel", "HashAlgorithm", "EncryptionAlgorithm", "ExtensionSize",
    "Label",
    # DebugHeader
    "QueueIdentifier",
    # SecurityHeader
    "SenderIdSize", "EncryptionKeySize", "SignatureSize", "SenderCertSize", "ProviderInfoSize", "SecurityID",
]

#: The reasons of the compiled walker's errors: (name, %-format string),
#: index = code.  ``_ext/msmq_batch.pyx`` uses the codes as R_<name> and
#: checks them against REASON_CODES when it is imported.  SIGNATURE takes
#: the repr of the 4 signature bytes.
REASON_TABLE: tuple[tuple[str, str], ...] = (
    ("NULL", "null record"),                                                                # 0
    ("TRUNC", "truncated: %d bytes needed, %d present"),                                    # 1
    ("SIGNATURE", "signature %s, MUST be 0x524F494C ('LIOR')"),                             # 2
    ("VERSION", "version 0x%02X, MUST be 0x10"),                                            # 3
    ("PS_BELOW", "PacketSize %d is below the 16-byte BaseHeader"),                          # 4
    ("PS_ABOVE", "PacketSize %d above the maximum 0x00400000 (%d)"),                        # 5
    ("PS_INPUT", "PacketSize %d but the input holds %d bytes"),                             # 6
    ("TR_NO_DH", "TR (tracing) is set but DH is clear: TR requires a DebugHeader"),         # 7
    ("DH_INTERNAL", "DH is set in an internal packet: only a UserMessage Packet carries a DebugHeader"),  # 8
    ("INTERNAL_TRUNC", "truncated: 4 bytes needed, %d inside the packet"),                  # 9
    ("PT", "PT 0x%X is not a packet type (1, 2 or 3)"),                                     # 10
    ("SA_NO_SH", "SessionAck Packet without BaseHeader.Flags.SH"),                          # 11
    ("SA_SIZE", "PacketSize %d: a SessionAck Packet is 36 bytes (or 20 when the SessionHeader is not counted)"),  # 12
    ("SH_TRUNC", "truncated: 16 bytes needed, %d present"),                                 # 13
    ("SH_EC", "SH announces a SessionHeader, which an EstablishConnection Packet does not have"),  # 14
    ("SH_CP", "SH announces a SessionHeader, which a ConnectionParameters Packet does not have"),  # 15
    ("EC_SIZE", "PacketSize %d: an EstablishConnection Packet is 572 bytes"),               # 16
    ("CP_SIZE", "PacketSize %d: a ConnectionParameters Packet is 32 bytes"),                # 17
    ("UH_TRUNC", "truncated: 48 fixed bytes needed, %d inside the packet"),                 # 18
    ("TH_DM", "TH (TransactionHeader) is set but DM is 0: a transactional message MUST be recoverable"),  # 19
    ("MP_CLEAR", "MP is clear: a MessagePropertiesHeader MUST always be present"),          # 20
    ("DQ_INVALID", "DQ 0x%X is not a valid queue format type for DestinationQueue (valid: 0x0, 0x3, 0x5, 0x7)"),  # 21
    ("AQ_INVALID", "AQ 0x%X is not a valid queue format type for AdminQueue (valid: 0x0, 0x2, 0x3, 0x5, 0x6, 0x7)"),  # 22
    ("Q_ID", "PrivateQueueFormatNameId needs 4 bytes, %d remain"),                          # 23
    ("Q_PUB", "PublicQueueFormatName needs 16 bytes, %d remain"),                           # 24
    ("Q_PRIV", "PrivateQueueFormatName needs 20 bytes, %d remain"),                         # 25
    ("Q_DCOUNT", "DirectQueueFormatName.Count needs 2 bytes, %d remain"),                   # 26
    ("Q_DPAST", "DirectQueueFormatName.Count %d runs past the packet (%d bytes remain)"),   # 27
    ("Q_DWHOLE", "DirectQueueFormatName.Count %d is not a whole null-terminated WCHAR string"),  # 28
    ("Q_DNULL", "DirectFormatName is not null-terminated"),                                 # 29
    ("Q_DPAD", "padding of %d bytes runs past the packet"),                                 # 30
    ("CQ", "Flags.CQ announces a 16-byte ConnectorType but %d bytes remain"),               # 31
    ("ANN_TH", "UserHeader.Flags.TH announces a TransactionHeader but the packet ends at %d"),  # 32
    ("ANN_MP", "UserHeader.Flags.MP announces a MessagePropertiesHeader but the packet ends at %d"),  # 33
    ("ANN_DH", "BaseHeader.Flags.DH announces a DebugHeader but the packet ends at %d"),    # 34
    ("XACT_SEQ0", "valid range is 0x00000001..0xFFFFFFFF, got 0"),                          # 35
    ("XACT_PREV", "valid range is 0x00000000..0xFFFFFFFE, got 0xFFFFFFFF"),                 # 36
    ("XACT_CG", "Flags.CG announces a ConnectorQMGuid: 16 bytes needed but only %d remain before the packet end"),  # 37
    ("MP_TRUNC", "truncated: 56 fixed bytes needed, %d inside the packet"),                 # 38
    ("MP_ALLOC", "AllocationBodySize %d is smaller than MessageSize %d"),                   # 39
    ("MP_LABELLEN", "LabelLength %d above the maximum 250 WCHARs"),                         # 40
    ("MP_LABELPAST", "Label of %d bytes runs past the packet (%d bytes remain)"),           # 41
    ("MP_LABELNULL", "Label is not null-terminated"),                                       # 42
    ("MP_EXT", "ExtensionSize %d runs past the packet: ExtensionData at offset %d has %d bytes"),  # 43
    ("MP_BODY", "MessageSize %d runs past the packet: MessageBody at offset %d has %d bytes"),  # 44
    ("MP_PAD", "padding to a multiple of 4 bytes (%d bytes) runs past the packet"),         # 45
    ("DBG_QT", "QT must be 0x0 or 0x1, got 0x%x"),                                          # 46
    ("DBG_QI", "Flags.QT = 1 announces a queue GUID: 16 bytes needed but only %d remain before the packet end"),  # 47
    ("REST", "%d bytes inside PacketSize follow the last header the flags announce"),       # 48
    ("USH_TRUNC", "BaseHeader.Flags.SH announces a SessionHeader after PacketSize: truncated: 16 bytes needed, %d present"),  # 49
    ("SEC_ST", "ST must be 0x0, 0x1 or 0x2, got 0x%x"),                                     # 50
    ("SEC_AU", "AU must be 0"),                                                             # 51
    ("SEC_AS", "AS must be 0, got 0x%x"),                                                   # 52
    ("SEC_ST0", "ST = 0 requires SenderIdSize 0, got %d"),                                  # 53
    ("SEC_ST2", "ST = 2 (queue manager GUID) requires 16 bytes, got %d"),                   # 54
    ("SEC_NONE", "at least one of the five size fields must be nonzero"),                   # 55
    ("SEC_SECURITYID", "SecurityID of %d bytes at offset %d runs past the packet end (%d)"),  # 56
    ("SEC_ENCRYPTIONKEY", "EncryptionKey of %d bytes at offset %d runs past the packet end (%d)"),  # 57
    ("SEC_SIGNATURE", "Signature of %d bytes at offset %d runs past the packet end (%d)"),  # 58
    ("SEC_SID", "ST = 1 but the %d bytes are not one SID ([MS-DTYP] 2.4.2.2)"),             # 59
    ("ANN_SEC", "UserHeader.Flags.SH announces a SecurityHeader but the packet ends at %d"),  # 60
)
REASONS = [text for _name, text in REASON_TABLE]
#: name -> code
REASON_CODES = {name: code for code, (name, _text) in enumerate(REASON_TABLE)}
R_SIGNATURE = REASON_CODES["SIGNATURE"]


def reason_text(code: int, args, raw: bytes | None) -> str:
    """The error_reason of a compiled-walker error: REASONS[code] % args."""
    fmt = REASONS[code]
    if code == R_SIGNATURE:
        assert raw is not None  # the walker passes the record's bytes with this reason
        at = int(args[0])
        return fmt % (repr(bytes(raw[at:at + 4])),)
    n = fmt.count("%")
    return fmt % tuple(int(a) for a in args[:n]) if n else fmt


def arrow_text(text: str | None) -> str | None:
    """``text`` as Arrow can store it: lone surrogates become U+FFFD."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


# ---------------------------------------------------------------------------
# input forms and the impl switch
# ---------------------------------------------------------------------------

_COLUMN_NAMES = frozenset(MSMQ_PACKETS.names)


def check_columns(columns) -> list | None:
    """``columns`` of :func:`mqcodec.batch.decode_msmq_batch` as a list of
    MSMQ_PACKETS field names (None: all of them, in schema order)."""
    if columns is None:
        return None
    if isinstance(columns, str):
        raise TypeError("columns must be a collection of column names, not one string")
    cols = list(columns)
    unknown = [c for c in cols if c not in _COLUMN_NAMES]
    if unknown:
        raise ValueError("not MSMQ_PACKETS columns: %s" % ", ".join(map(repr, unknown)))
    if len(set(cols)) != len(cols):
        raise ValueError("columns must not repeat a name")
    return cols


def decode_batch(records: Any, *, impl: str | None = None, columns=None) -> pa.Table:
    """See :func:`mqcodec.batch.decode_msmq_batch`."""
    mod = _IMPLS.pick(impl)
    cols = check_columns(columns)
    kw = {} if cols is None else {"columns": cols}
    return dispatch(records, lambda data, offsets, valid, first: mod.decode_msmq_buffers(
        data, offsets, valid=valid, first=first, **kw), chunk=_front.MSMQ_CHUNK)


# ---------------------------------------------------------------------------
# the pure decoder
# ---------------------------------------------------------------------------

def decode_msmq_buffers(buf, offsets, *, valid=None, columns=None, first=0) -> pa.RecordBatch:
    """Decode the records ``buf[offsets[i]:offsets[i+1]]`` (same contract as
    ``mqcodec._ext.msmq_batch.decode_msmq_buffers``; ``columns``: only those
    columns, in that order -- here every column is decoded, then selected)."""
    columns = check_columns(columns)
    mv, offs, valid = check_offsets(buf, offsets, valid)
    n = len(offs) - 1
    starts = offs.tolist()
    records = (None if valid is not None and not valid[i] else bytes(mv[starts[i]:starts[i + 1]])
               for i in range(n))
    out = decode_records(records, record_numbers=range(first, first + n) if first else None)
    return out if columns is None else out.select(columns)


def decode_records(records, record_numbers=None) -> pa.RecordBatch:
    """Decode an iterable of ``bytes`` (None = null record).  ``record_numbers``
    gives the ``record`` column (default 0, 1, ...)."""
    # the pure decoder's modules, imported when it runs (the compiled twin reads only this
    # module's tables: an MSMQ capture converts without loading the declarations)
    from ..msmq import decode_packet
    from ..msmq.base import PingPacket

    cols: dict[str, list] = {f.name: [] for f in MSMQ_PACKETS}
    names = list(cols)
    for k, data in enumerate(records):
        row = _row(data, decode_packet, PingPacket)
        row["record"] = k if record_numbers is None else int(record_numbers[k])
        for name in names:
            cols[name].append(row.get(name))
    return pa.RecordBatch.from_arrays([pa.array(cols[f.name], f.type) for f in MSMQ_PACKETS],
                                      schema=MSMQ_PACKETS)


def _row(data, decode_packet, PingPacket) -> dict:
    if data is None:
        return dict(zip(("error_structure", "error_field", "error_offset", "error_reason"), NULL_RECORD))
    try:
        pkt = decode_packet(data)
    except DecodeError as exc:
        return {"error_structure": exc.structure, "error_field": exc.field, "error_offset": exc.offset,
                "error_reason": exc.reason, "raw": bytes(data)}
    if isinstance(pkt, PingPacket):
        f = pkt.Flags
        return {"kind": "Ping", "packet_end": PingPacket.SIZE, "ping_flags": int(f), "ping_rc": bool(f.RC),
                "ping_rf": bool(f.RF), "ping_signature": pkt.Signature, "ping_cookie": pkt.Cookie,
                "ping_qm_guid": str(pkt.QMGuid)}
    r: dict[str, Any] = {"kind": pkt.kind, "packet_end": len(data) - len(pkt.trailing)}
    b = pkt.BaseHeader
    assert b is not None  # every packet but a ping has one
    bf = b.Flags
    r.update(base_version_number=b.VersionNumber, base_reserved=b.Reserved, base_flags=int(bf),
             base_pr=bf.PR, base_in=bool(bf.IN), base_sh=bool(bf.SH), base_dh=bool(bf.DH),
             base_tr=bool(bf.TR), base_signature=b.Signature, base_packet_size=b.PacketSize,
             base_time_to_reach_queue=b.TimeToReachQueue)
    ih = pkt.InternalHeader
    if ih is not None:
        r.update(internal_reserved=ih.Reserved, internal_flags=int(ih.Flags), internal_pt=ih.Flags.PT,
                 internal_cs=bool(ih.Flags.CS))
    ec = pkt.EstablishConnectionHeader
    if ec is not None:
        o = ec.OperatingSystem
        r.update(ec_client_guid=str(ec.ClientGuid), ec_server_guid=str(ec.ServerGuid),
                 ec_time_stamp=ec.TimeStamp, ec_operating_system=int(o), ec_re=o.RE, ec_se=bool(o.SE),
                 ec_os=bool(o.OS), ec_qs=bool(o.QS), ec_reserved=ec.Reserved,
                 ec_padding_is_server_fill=ec.padding_is_server_fill)
    cp = pkt.ConnectionParametersHeader
    if cp is not None:
        r.update(cp_recoverable_ack_timeout=cp.RecoverableAckTimeout, cp_ack_timeout=cp.AckTimeout,
                 cp_reserved=cp.Reserved, cp_window_size=cp.WindowSize)
    sh = pkt.SessionHeader
    if sh is not None:
        r.update(session_ack_sequence_number=sh.AckSequenceNumber,
                 session_recoverable_msg_ack_seq_number=sh.RecoverableMsgAckSeqNumber,
                 session_recoverable_msg_ack_flags=sh.RecoverableMsgAckFlags,
                 session_user_msg_sequence_number=sh.UserMsgSequenceNumber,
                 session_recoverable_msg_seq_number=sh.RecoverableMsgSeqNumber,
                 session_window_size=sh.WindowSize, session_reserved=sh.Reserved)
        if ih is not None:
            r["session_header_counted"] = bool(pkt.session_header_counted)
    uh = pkt.UserHeader
    if uh is not None:
        uf = uh.Flags
        r.update(user_source_queue_manager=str(uh.SourceQueueManager),
                 user_queue_manager_address=str(uh.QueueManagerAddress),
                 user_time_to_be_received=uh.TimeToBeReceived, user_sent_time=uh.SentTime,
                 user_message_id=uh.MessageID, user_flags=int(uf),
                 user_rc=uf.RC, user_dm=uf.DM, user_jn=bool(uf.JN), user_jp=bool(uf.JP),
                 user_dq=uf.DQ, user_aq=uf.AQ, user_rq=uf.RQ, user_sh=bool(uf.SH), user_th=bool(uf.TH),
                 user_mp=bool(uf.MP), user_cq=bool(uf.CQ), user_mq=bool(uf.MQ), user_ah=bool(uf.AH),
                 user_hh=bool(uf.HH),
                 user_destination_queue=arrow_text(uh.format_name("DestinationQueue")),
                 user_admin_queue=arrow_text(uh.format_name("AdminQueue")),
                 user_response_queue=arrow_text(uh.format_name("ResponseQueue")),
                 user_connector_type=None if uh.ConnectorType is None else str(uh.ConnectorType))
    th = pkt.TransactionHeader
    if th is not None:
        xf = th.Flags
        r.update(xact_flags=xf, xact_cg=bool(xf & 1), xact_fa=bool(xf >> 1 & 1), xact_fm=bool(xf >> 2 & 1),
                 xact_lm=bool(xf >> 3 & 1), xact_id=xf >> 4 & 0xFFFFF,
                 xact_tx_sequence_id_ordinal=th.TxSequenceID.Ordinal,
                 xact_tx_sequence_id_time_stamp=th.TxSequenceID.TimeStamp,
                 xact_tx_sequence_number=th.TxSequenceNumber,
                 xact_previous_tx_sequence_number=th.PreviousTxSequenceNumber,
                 xact_connector_qm_guid=None if th.ConnectorQMGuid is None else _guid(th.ConnectorQMGuid))
    sec = pkt.SecurityHeader
    if sec is not None:
        r.update(sec_flags=sec.Flags, sec_st=sec.Flags & 0xF, sec_sender_id_size=sec.SenderIdSize,
                 sec_encryption_key_size=sec.EncryptionKeySize, sec_signature_size=sec.SignatureSize,
                 sec_sender_cert_size=sec.SenderCertSize, sec_provider_info_size=sec.ProviderInfoSize)
    mp = pkt.MessagePropertiesHeader
    if mp is not None:
        mf = mp.Flags
        assert mp.LabelLength is not None and mp.ExtensionSize is not None  # set by decode
        ext_at = _offset_of(pkt, "MessagePropertiesHeader") + 56 + 2 * mp.LabelLength
        r.update(props_flags=int(mf), props_pa=bool(mf.PA), props_pr=bool(mf.PR), props_na=bool(mf.NA),
                 props_nr=bool(mf.NR), props_label_length=mp.LabelLength, props_label=arrow_text(mp.Label),
                 props_message_class=mp.MessageClass, props_correlation_id=mp.CorrelationID,
                 props_body_type=mp.BodyType, props_application_tag=mp.ApplicationTag,
                 props_message_size=mp.MessageSize, props_allocation_body_size=mp.AllocationBodySize,
                 props_privacy_level=mp.PrivacyLevel, props_hash_algorithm=mp.HashAlgorithm,
                 props_encryption_algorithm=mp.EncryptionAlgorithm, props_extension_size=mp.ExtensionSize,
                 props_extension_offset=ext_at, props_body_offset=ext_at + mp.ExtensionSize)
    dh = pkt.DebugHeader
    if dh is not None:
        r.update(debug_flags=dh.Flags, debug_qt=dh.Flags & 3, debug_reserved=dh.Reserved,
                 debug_queue_identifier=None if dh.QueueIdentifier is None else _guid(dh.QueueIdentifier))
    if pkt.SRMPEnvelopeHeader is not None:
        r["srmp_data_length"] = pkt.SRMPEnvelopeHeader.DataLength
    cm = pkt.CompoundMessageHeader
    if cm is not None:
        r.update(compound_http_body_size=cm.HTTPBodySize, compound_msg_body_size=cm.MsgBodySize,
                 compound_msg_body_offset=cm.MsgBodyOffset)
    so = pkt.SoapHeader
    if so is not None:
        r.update(soap_header_data_length=so.HeaderDataLength, soap_body_data_length=so.BodyDataLength)
    mq = pkt.MultiQueueFormatHeader
    if mq is not None:
        r.update(mqf_destination_count=mq.Destination.ElementCount, mqf_admin_count=mq.Administration.ElementCount,
                 mqf_response_count=mq.Response.ElementCount, mqf_signature_size=mq.Signature.Size)
    return r


def _guid(raw: bytes) -> str:
    return str(uuid.UUID(bytes_le=bytes(raw)))


def _offset_of(pkt, target: str) -> int:
    """Offset of header ``target`` in the packet: the encoded sizes of the
    headers before it (every decoded header re-encodes to its own bytes)."""
    pos = 0
    for name, h in pkt.headers():
        if name == target:
            return pos
        pos += len(h.encode())
    raise KeyError(target)


# the implementations: created last, as mqcodec._ext.msmq_batch reads this module's tables
_IMPLS = Implementations("msmq_batch", sys.modules[__name__], "MSMQ")
