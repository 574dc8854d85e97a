"""The Arrow schemas of the batch decoders: ONE definition, used by the
Cython implementation, the pure-Python implementation and the Spark adapter.

PCF in long form
----------------
``decode_pcf_batch`` returns two tables; both implementations (compiled and
pure) fill them identically (docs/batch.md).

``PCF_HEADERS`` -- one row per input record, always (nothing is dropped).
For a record that decoded: ``encoding`` (the caller's ``encoding`` when
given, else the detected 273 big-endian / 546 little-endian), ``has_eph``,
the MQCFH fields, ``parameters_end`` (offset after the last parameter, or
after MQEPH.StrucLength; bytes beyond it are not PCF) and null error
columns.  For a record that failed: ``error_structure``, ``error_field``,
``error_offset`` (from the record's first byte), ``error_reason`` and
``raw`` (the record's bytes); every other header column is null.  A null
input record has the error ``record`` / "" / 0 / "null record" and a null
``raw``.

``PCF_PARAMETERS`` -- one row per PCF parameter structure of the decoded
records, in pre-order (a group's row comes before its children's); a
failed record has none.  ``param_index`` numbers the rows of one record
from 0; ``parent`` is the ``param_index`` of the enclosing MQCFGR (-1 at
top level) and ``depth`` its nesting level (0 at top level), so group
trees rebuild exactly.  ``Parameter`` and ``Type`` are the structure's
fields.  Values go to the columns that fit the structure's Type; the
others are null:

=============  ===============================================================
type           columns set
=============  ===============================================================
MQCFIN         int_value
MQCFIN64       int_value (signed)
MQCFIL(64)     count, int_list (signed)
MQCFST         ccsid, string_value
MQCFSL         ccsid, count, string_list
MQCFBS         bytes_value (StringLength bytes)
MQCFGR         count (= ParameterCount)
MQCFIF         operator, int_value (FilterValue)
MQCFSF         operator, ccsid, string_value (FilterValue)
MQCFBF         operator, bytes_value (FilterValue)
MQCFT_USER     bytes_value: the bytes after its third MQLONG (shown as
               ``Parameter``) up to StrucLength, as pcf.py keeps them
=============  ===============================================================

``ccsid`` is CodedCharSetId as stored (0 and negative values mean
"inherited").  Strings are decoded by that CCSID, or when it is 0 or
negative by the ``ccsid`` the caller gave (default 1208, or 500 after an
EBCDIC MQEPH StrucId), with trailing blanks and NULs removed, exactly as
the pure codec does.
"""
from __future__ import annotations

import pyarrow as pa

__all__ = ["PCF_HEADERS", "PCF_PARAMETERS", "ERROR_FIELDS", "MQ_MESSAGES"]

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


# ---------------------------------------------------------------------------
# IBM MQ messages (decode_mq_batch; docs/batch-mq.md)
# ---------------------------------------------------------------------------
_MD_INT = pa.int32()

#: One row per input record: the MQMD's fields (IBM names in snake case,
#: md_ prefix; the version-2 fields null for an MQMD version 1), the byte
#: order and CCSID the MQMD itself was read in, the header-chain facts, the
#: PCF header when the body is PCF (MQCFH or MQEPH first), and the error
#: columns + raw bytes of failing records (all other columns null then).
MQ_MESSAGES = pa.schema(
    [
        pa.field("record", pa.int64(), nullable=False),
        pa.field("md_own_encoding", pa.int32()),
        pa.field("md_own_ccsid", pa.int32()),
        pa.field("md_version", _MD_INT),
        pa.field("md_report", _MD_INT),
        pa.field("md_msg_type", _MD_INT),
        pa.field("md_expiry", _MD_INT),
        pa.field("md_feedback", _MD_INT),
        pa.field("md_encoding", _MD_INT),
        pa.field("md_ccsid", _MD_INT),
        pa.field("md_format", pa.string()),
        pa.field("md_priority", _MD_INT),
        pa.field("md_persistence", _MD_INT),
        pa.field("md_msg_id", pa.binary(24)),
        pa.field("md_correl_id", pa.binary(24)),
        pa.field("md_backout_count", _MD_INT),
        pa.field("md_reply_to_q", pa.string()),
        pa.field("md_reply_to_q_mgr", pa.string()),
        pa.field("md_user_identifier", pa.string()),
        pa.field("md_accounting_token", pa.binary(32)),
        pa.field("md_appl_identity_data", pa.string()),
        pa.field("md_put_appl_type", _MD_INT),
        pa.field("md_put_appl_name", pa.string()),
        pa.field("md_put_date", pa.string()),
        pa.field("md_put_time", pa.string()),
        pa.field("md_appl_origin_data", pa.string()),
        pa.field("md_group_id", pa.binary(24)),
        pa.field("md_msg_seq_number", _MD_INT),
        pa.field("md_offset", _MD_INT),
        pa.field("md_msg_flags", _MD_INT),
        pa.field("md_original_length", _MD_INT),
        pa.field("header_formats", pa.list_(pa.string())),
        pa.field("body_format", pa.string()),
        pa.field("body_encoding", pa.int32()),
        pa.field("body_ccsid", pa.int32()),
        pa.field("body_offset", pa.int64()),
        pa.field("body_length", pa.int64()),
        pa.field("pcf_has_eph", pa.bool_()),
        pa.field("pcf_type", pa.int32()),
        pa.field("pcf_version", pa.int32()),
        pa.field("pcf_command", pa.int32()),
        pa.field("pcf_msg_seq_number", pa.int32()),
        pa.field("pcf_control", pa.int32()),
        pa.field("pcf_comp_code", pa.int32()),
        pa.field("pcf_reason", pa.int32()),
        pa.field("pcf_parameter_count", pa.int32()),
        *ERROR_FIELDS,
        pa.field("raw", pa.binary()),
    ]
)


# ---------------------------------------------------------------------------
# MSMQ binary-protocol packets (decode_msmq_batch; docs/batch-msmq.md)
# ---------------------------------------------------------------------------
_U8, _U16, _U32, _B, _S = pa.uint8(), pa.uint16(), pa.uint32(), pa.bool_(), pa.string()

#: One row per input record: the packet kind, then every header's fields in
#: their own prefixed columns ([MS-MQMQ] / [MS-MQQB] names in snake case), null
#: where the header is absent or the record failed; GUIDs as canonical
#: lower-case strings; queue fields as [MS-MQMQ] 2.1 format-name strings;
#: error columns + raw bytes of failing records (all other columns null then).
MSMQ_PACKETS = pa.schema(
    [
        pa.field("record", pa.int64(), nullable=False),
        pa.field("kind", _S),
        pa.field("packet_end", pa.int64()),
        # [MS-MQQB] 2.2.7 Ping Packet (no BaseHeader)
        pa.field("ping_flags", _U16),
        pa.field("ping_rc", _B),
        pa.field("ping_rf", _B),
        pa.field("ping_signature", _U16),
        pa.field("ping_cookie", _U32),
        pa.field("ping_qm_guid", _S),
        # [MS-MQMQ] 2.2.19.1 BaseHeader
        pa.field("base_version_number", _U8),
        pa.field("base_reserved", _U8),
        pa.field("base_flags", _U16),
        pa.field("base_pr", _U8),
        pa.field("base_in", _B),
        pa.field("base_sh", _B),
        pa.field("base_dh", _B),
        pa.field("base_tr", _B),
        pa.field("base_signature", _U32),
        pa.field("base_packet_size", _U32),
        pa.field("base_time_to_reach_queue", _U32),
        # [MS-MQQB] 2.2.1 InternalHeader
        pa.field("internal_reserved", _U16),
        pa.field("internal_flags", _U16),
        pa.field("internal_pt", _U8),
        pa.field("internal_cs", _B),
        # [MS-MQQB] 2.2.3.1 EstablishConnectionHeader
        pa.field("ec_client_guid", _S),
        pa.field("ec_server_guid", _S),
        pa.field("ec_time_stamp", _U32),
        pa.field("ec_operating_system", _U16),
        pa.field("ec_re", _U8),
        pa.field("ec_se", _B),
        pa.field("ec_os", _B),
        pa.field("ec_qs", _B),
        pa.field("ec_reserved", _U16),
        pa.field("ec_padding_is_server_fill", _B),
        # [MS-MQQB] 2.2.2.1 ConnectionParametersHeader
        pa.field("cp_recoverable_ack_timeout", _U32),
        pa.field("cp_ack_timeout", _U32),
        pa.field("cp_reserved", _U16),
        pa.field("cp_window_size", _U16),
        # [MS-MQMQ] 2.2.20.4 SessionHeader (SessionAck body, or after a UserMessage)
        pa.field("session_ack_sequence_number", _U16),
        pa.field("session_recoverable_msg_ack_seq_number", _U16),
        pa.field("session_recoverable_msg_ack_flags", _U32),
        pa.field("session_user_msg_sequence_number", _U16),
        pa.field("session_recoverable_msg_seq_number", _U16),
        pa.field("session_window_size", _U16),
        pa.field("session_reserved", _U16),
        pa.field("session_header_counted", _B),
        # [MS-MQMQ] 2.2.19.2 UserHeader
        pa.field("user_source_queue_manager", _S),
        pa.field("user_queue_manager_address", _S),
        pa.field("user_time_to_be_received", _U32),
        pa.field("user_sent_time", _U32),
        pa.field("user_message_id", _U32),
        pa.field("user_flags", _U32),
        pa.field("user_rc", _U8),
        pa.field("user_dm", _U8),
        pa.field("user_jn", _B),
        pa.field("user_jp", _B),
        pa.field("user_dq", _U8),
        pa.field("user_aq", _U8),
        pa.field("user_rq", _U8),
        pa.field("user_sh", _B),
        pa.field("user_th", _B),
        pa.field("user_mp", _B),
        pa.field("user_cq", _B),
        pa.field("user_mq", _B),
        pa.field("user_ah", _B),
        pa.field("user_hh", _B),
        pa.field("user_destination_queue", _S),
        pa.field("user_admin_queue", _S),
        pa.field("user_response_queue", _S),
        pa.field("user_connector_type", _S),
        # [MS-MQMQ] 2.2.20.5 TransactionHeader
        pa.field("xact_flags", _U32),
        pa.field("xact_cg", _B),
        pa.field("xact_fa", _B),
        pa.field("xact_fm", _B),
        pa.field("xact_lm", _B),
        pa.field("xact_id", _U32),
        pa.field("xact_tx_sequence_id_ordinal", _U32),
        pa.field("xact_tx_sequence_id_time_stamp", _U32),
        pa.field("xact_tx_sequence_number", _U32),
        pa.field("xact_previous_tx_sequence_number", _U32),
        pa.field("xact_connector_qm_guid", _S),
        # [MS-MQMQ] 2.2.20.6 SecurityHeader
        pa.field("sec_flags", _U16),
        pa.field("sec_st", _U8),
        pa.field("sec_sender_id_size", _U16),
        pa.field("sec_encryption_key_size", _U16),
        pa.field("sec_signature_size", _U16),
        pa.field("sec_sender_cert_size", _U32),
        pa.field("sec_provider_info_size", _U32),
        # [MS-MQMQ] 2.2.19.3 MessagePropertiesHeader
        pa.field("props_flags", _U8),
        pa.field("props_pa", _B),
        pa.field("props_pr", _B),
        pa.field("props_na", _B),
        pa.field("props_nr", _B),
        pa.field("props_label_length", _U8),
        pa.field("props_label", _S),
        pa.field("props_message_class", _U16),
        pa.field("props_correlation_id", pa.binary(20)),
        pa.field("props_body_type", _U32),
        pa.field("props_application_tag", _U32),
        pa.field("props_message_size", _U32),
        pa.field("props_allocation_body_size", _U32),
        pa.field("props_privacy_level", _U32),
        pa.field("props_hash_algorithm", _U32),
        pa.field("props_encryption_algorithm", _U32),
        pa.field("props_extension_size", _U32),
        pa.field("props_extension_offset", pa.int64()),
        pa.field("props_body_offset", pa.int64()),
        # [MS-MQMQ] 2.2.20.8 DebugHeader
        pa.field("debug_flags", _U16),
        pa.field("debug_qt", _U8),
        pa.field("debug_reserved", _U16),
        pa.field("debug_queue_identifier", _S),
        # [MS-MQRR] 2.2.5.1.2.1-2 SRMPEnvelopeHeader, CompoundMessageHeader
        pa.field("srmp_data_length", _U32),
        pa.field("compound_http_body_size", _U32),
        pa.field("compound_msg_body_size", _U32),
        pa.field("compound_msg_body_offset", _U32),
        # [MS-MQMQ] 2.2.20.7 SoapHeader
        pa.field("soap_header_data_length", _U32),
        pa.field("soap_body_data_length", _U32),
        # [MS-MQMQ] 2.2.20.1-3 MultiQueueFormatHeader
        pa.field("mqf_destination_count", _U32),
        pa.field("mqf_admin_count", _U32),
        pa.field("mqf_response_count", _U32),
        pa.field("mqf_signature_size", _U32),
        *ERROR_FIELDS,
        pa.field("raw", pa.binary()),
    ]
)
__all__.append("MSMQ_PACKETS")


