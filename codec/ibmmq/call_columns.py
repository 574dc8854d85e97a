"""The columns of the ``mq_calls`` table that :func:`mqcodec.ibmmq.calls.decode_unit`
fills, as data: (name, Arrow type).  Their own module so that the table's schema
is known without importing the IBM MQ call declarations (a capture with no IBM MQ
unit still writes an empty ``mq_calls`` table with this schema)."""
from __future__ import annotations

import pyarrow as pa

__all__ = ["CALL_COLUMNS"]

_DICT = pa.dictionary(pa.int32(), pa.string())

#: the columns decode_unit fills (name, Arrow type); None/absent = null
CALL_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("structid", _DICT),
    ("conversation_id", pa.int64()),
    ("request_id", pa.int64()),
    ("segment_type", pa.int16()),
    ("segment_type_name", _DICT),
    ("ctl_flags1", pa.int16()),
    ("ctl_flags2", pa.int16()),
    ("byte_order", pa.int16()),
    ("encoding", pa.int64()),
    ("ccsid", pa.int32()),
    # API header (MQ API calls and replies)
    ("reply_length", pa.int64()),
    ("completion_code", pa.int32()),
    ("reason_code", pa.int32()),
    ("hobj", pa.int64()),
    # INITIAL_DATA (ID)
    ("id_fap_level", pa.int16()),
    ("id_cap_flags1", pa.int16()),
    ("id_cap_flags2", pa.int16()),
    ("id_cap_flags3", pa.int16()),
    ("id_ini_err_flags1", pa.int16()),
    ("id_max_msg_batch", pa.int32()),
    ("id_max_tr_size", pa.int64()),
    ("id_max_msg_size", pa.int64()),
    ("id_seq_wrap_value", pa.int64()),
    ("id_channel_name", _DICT),
    ("id_ccsid", pa.int32()),
    ("id_q_mgr_name", _DICT),
    ("id_hb_interval", pa.int64()),
    ("id_conv_by_socket", pa.int64()),
    ("id_prod_id", _DICT),
    # USERID_DATA, CONAUTH_INFO
    ("uid_user_id", _DICT),
    ("uid_long_user_id", _DICT),
    ("caut_auth_type", pa.int64()),
    ("caut_user_id", _DICT),
    # MQCONN
    ("conn_q_mgr_name", _DICT),
    ("conn_appl_name", _DICT),
    ("conn_appl_type", pa.int32()),
    ("conn_options", pa.int64()),
    ("conn_x_options", pa.int64()),
    # MQOD (MQOPEN, MQPUT1, SPI OPEN) and the options after it
    ("od_object_type", pa.int32()),
    ("od_object_name", _DICT),
    ("od_object_q_mgr_name", _DICT),
    ("od_dynamic_q_name", _DICT),
    ("od_resolved_q_name", _DICT),
    ("od_resolved_q_mgr_name", _DICT),
    ("open_options", pa.int64()),
    ("close_options", pa.int64()),
    # MQPUT / MQPUT1 / MQGET (MQPMO / MQGMO after the MQMD)
    ("pmo_options", pa.int64()),
    ("gmo_options", pa.int64()),
    ("gmo_wait_interval", pa.int64()),
    ("resolved_q_name", _DICT),       # MQPMO/MQGMO ResolvedQName, ASYNC_MESSAGE ResolQName
    ("resolved_q_mgr_name", _DICT),   # MQPMO ResolvedQMgrName
    ("data_length", pa.int64()),
    # MQINQ / MQSET
    ("inq_selectors", pa.list_(pa.int64())),
    ("inq_int_values", pa.list_(pa.int64())),
    ("inq_char_values", pa.string()),
    # SPI
    ("spi_verb", pa.int64()),
    ("spi_verb_name", _DICT),
    ("spi_version", pa.int64()),
    # STATUS_DATA, NOTIFICATION, SOCKET_ACTION, REQUEST_MSGS
    ("status_code", pa.int64()),
    ("status_code_name", _DICT),
    ("status_value", pa.int64()),
    ("notification_code", pa.int64()),
    ("notification_code_name", _DICT),
    ("notification_value", pa.int64()),
    ("socket_type", pa.int64()),
    ("socket_conversation_id", pa.int64()),
    ("socket_request_id", pa.int64()),
    ("socket_parm1", pa.int64()),
    ("socket_parm2", pa.int64()),
    ("ping_length", pa.int64()),
    ("reset_seq_num", pa.int64()),
    ("msgreq_rqst_bytes", pa.int64()),
    ("msgreq_wait_interval", pa.int64()),
    # XA
    ("xa_return_value", pa.int32()),
    ("xa_tm_flags", pa.int64()),
    ("xa_rmid", pa.int64()),
    # channel MESSAGE_DATA: the MQXQH
    ("remote_q_name", _DICT),
    ("remote_q_mgr_name", _DICT),
]
