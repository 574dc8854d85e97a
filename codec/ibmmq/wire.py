"""IBM MQ on TCP as data: the eye-catchers, byte orders, segment types and
flags of the transmission segment header, the lengths of the MQI structures'
versions, the classes of segment types and the value names the call columns
carry -- everything about units that is a value rather than a layout.

The layouts themselves (``construct`` declarations) are in :mod:`.tsh` and
:mod:`.calls`, which re-export these names.  This module imports no
``construct``: the compiled engine's readers (:mod:`.calls_batch`) and the
conversation tracker load it alone, so a capture converts without loading the
declarations (tests/test_pcap2parquet_threads.py checks what a conversion
imports).
"""
from __future__ import annotations

from ..ccsid import decode_text

BIG = "big"
LITTLE = "little"

#: TSH ``ByteOrder`` values (packet-mq.h MQ_BIG_ENDIAN / MQ_LITTLE_ENDIAN).
BYTE_ORDER_BIG = 1
BYTE_ORDER_LITTLE = 2


def order_of(byte_order_field: int) -> str:
    """Byte order named by a TSH ``ByteOrder`` byte.  Wireshark reads 2 as
    little-endian and anything else as big-endian; so do we."""
    return LITTLE if byte_order_field == BYTE_ORDER_LITTLE else BIG


#: Eye-catchers: ASCII and EBCDIC (z/OS) spellings.
TSH_IDS = {b"TSH ": "TSH", b"TSHM": "TSHM", b"TSHC": "TSHC"}
TSH_IDS_EBCDIC = {b"\xe3\xe2\xc8\x40": "TSH", b"\xe3\xe2\xc8\xd4": "TSHM", b"\xe3\xe2\xc8\xc3": "TSHC"}
#: StrucIds of the structures inside a unit: (ASCII, EBCDIC) spellings.
MD_IDS = (b"MD  ", b"\xd4\xc4\x40\x40")
PMO_IDS = (b"PMO ", b"\xd7\xd4\xd6\x40")
GMO_IDS = (b"GMO ", b"\xc7\xd4\xd6\x40")
OD_IDS = (b"OD  ", b"\xd6\xc4\x40\x40")
XQH_IDS = (b"XQH ", b"\xe7\xd8\xc8\x40")
MSH_IDS = (b"MSH ", b"\xd4\xe2\xc8\x40")
ID_IDS = (b"ID  ", b"\xc9\xc4\x40\x40")
UID_IDS = (b"UID ", b"\xe4\xc9\xc4\x40")
CAUT_IDS = (b"CAUT", b"\xc3\xc1\xe4\xe3")

TSH_LENGTH = 28          # TSH and TSHC
TSHM_LENGTH = 36         # TSHM: ConversID and RequestID after MQSegmLen

#: The largest message IBM MQ accepts (MAXMSGL ceiling, 100 MiB); used as
#: the default bound on a segment and on a reassembled message.
MQ_MAXMSGL_CEILING = 100 * 1024 * 1024

# --------------------------------------------------------------------------
# Control flags 1 (packet-mq.h MQ_TCF_*)
# --------------------------------------------------------------------------
TCF_CONFIRM_REQUEST = 0x01
TCF_ERROR = 0x02
TCF_REQUEST_CLOSE = 0x04
TCF_CLOSE_CHANNEL = 0x08
TCF_FIRST = 0x10
TCF_LAST = 0x20
TCF_REQUEST_ACCEPTED = 0x40
TCF_DLQ_USED = 0x80

# --------------------------------------------------------------------------
# Segment types (packet-mq.h MQ_TST_*; names as Wireshark prints them)
# --------------------------------------------------------------------------
SEGMENT_TYPES: dict[int, str] = {
    0x01: "INITIAL_DATA", 0x02: "RESYNC_DATA", 0x03: "RESET_DATA", 0x04: "MESSAGE_DATA",
    0x05: "STATUS_DATA", 0x06: "SECURITY_DATA", 0x07: "PING_DATA", 0x08: "USERID_DATA",
    0x09: "HEARTBEAT", 0x0A: "CONAUTH_INFO", 0x0B: "RENEGOTIATE_DATA", 0x0C: "SOCKET_ACTION",
    0x0D: "ASYNC_MESSAGE", 0x0E: "REQUEST_MSGS", 0x0F: "NOTIFICATION",
    0x81: "MQCONN", 0x82: "MQDISC", 0x83: "MQOPEN", 0x84: "MQCLOSE", 0x85: "MQGET",
    0x86: "MQPUT", 0x87: "MQPUT1", 0x88: "MQSET", 0x89: "MQINQ", 0x8A: "MQCMIT",
    0x8B: "MQBACK", 0x8C: "SPI", 0x8D: "MQSTAT", 0x8E: "MQSUB", 0x8F: "MQSUBRQ",
    0x91: "MQCONN_REPLY", 0x92: "MQDISC_REPLY", 0x93: "MQOPEN_REPLY", 0x94: "MQCLOSE_REPLY",
    0x95: "MQGET_REPLY", 0x96: "MQPUT_REPLY", 0x97: "MQPUT1_REPLY", 0x98: "MQSET_REPLY",
    0x99: "MQINQ_REPLY", 0x9A: "MQCMIT_REPLY", 0x9B: "MQBACK_REPLY", 0x9C: "SPI_REPLY",
    0x9D: "MQSTAT_REPLY", 0x9E: "MQSUB_REPLY", 0x9F: "MQSUBRQ_REPLY",
    0xA1: "XA_START", 0xA2: "XA_END", 0xA3: "XA_OPEN", 0xA4: "XA_CLOSE", 0xA5: "XA_PREPARE",
    0xA6: "XA_COMMIT", 0xA7: "XA_ROLLBACK", 0xA8: "XA_FORGET", 0xA9: "XA_RECOVER",
    0xAA: "XA_COMPLETE",
    0xB1: "XA_START_REPLY", 0xB2: "XA_END_REPLY", 0xB3: "XA_OPEN_REPLY", 0xB4: "XA_CLOSE_REPLY",
    0xB5: "XA_PREPARE_REPLY", 0xB6: "XA_COMMIT_REPLY", 0xB7: "XA_ROLLBACK_REPLY",
    0xB8: "XA_FORGET_REPLY", 0xB9: "XA_RECOVER_REPLY", 0xBA: "XA_COMPLETE_REPLY",
}
SEGMENT_TYPE_VALUES: dict[str, int] = {v: k for k, v in SEGMENT_TYPES.items()}


def segment_type_name(value: int) -> str:
    return SEGMENT_TYPES.get(value, "UNKNOWN_0x%02X" % value)

#: MQMD versions 1 and 2 (bytes on the wire)
MQMD_LENGTHS = {1: 324, 2: 364}
#: MQPMO, put-message options (versions 1-3)
MQPMO_LENGTHS = {1: 128, 2: 152, 3: 176}
#: MQGMO, get-message options (versions 1-4)
MQGMO_LENGTHS = {1: 72, 2: 80, 3: 100, 4: 112}
#: MQOD, object descriptor (versions 1-4): version 2 and later may be followed by
#: RecsPresent object records (96 bytes each, when ObjectRecOffset is not 0) and
#: response records (8 bytes each, when ResponseRecOffset is not 0)
MQOD_LENGTHS = {1: 168, 2: 200, 3: 336, 4: 400}


# --------------------------------------------------------------------------
# Value names (tshark -G values: mq.spi.verb, mq.status.code, mq.notif.code)
# --------------------------------------------------------------------------
SPI_VERBS = {1: "QUERY", 2: "PUT", 3: "GET", 4: "ACTIVATE", 5: "SYNCHPOINT", 6: "RESERVE",
             7: "SUBSCRIBE", 11: "NOTIFY", 12: "OPEN"}
STATUS_CODES = {
    1: "NO_CHANNEL", 2: "CHANNEL_WRONG_TYPE", 3: "QM_UNAVAILABLE", 4: "MSG_SEQUENCE_ERROR",
    5: "QM_TERMINATING", 6: "CAN_NOT_STORE", 7: "USER_CLOSED", 10: "REMOTE_PROTOCOL_ERROR",
    11: "BIND_FAILED", 12: "MSGWRAP_DIFFERENT", 14: "REMOTE_CHANNEL_UNAVAILABLE",
    15: "TERMINATED_BY_REMOTE_EXIT", 16: "PROTOCOL_GENERAL", 17: "BATCH_FAILURE",
    18: "MESSAGE_LENGTH_ERROR", 19: "SEGMENT_NUMBER_ERROR", 20: "SECURITY_FAILURE", 21: "WRAP_VALUE_ERROR",
    22: "CHANNEL_UNAVAILABLE", 23: "CLOSED_BY_EXIT", 24: "CIPHER_SPEC", 25: "PEER_NAME",
    26: "SSL_CLIENT_CERTIFICATE", 27: "RMT_RSRCS_IN_RECOVERY", 28: "SSL_REFRESHING", 29: "INVALID_HOBJ",
    30: "CONV_ID_ERROR", 31: "SOCKET_ACTION_TYPE", 32: "STANDBY_Q_MGR", 240: "CCSID_NOT_SUPPORTED",
    241: "ENCODING_INVALID", 242: "FAP_LEVEL", 243: "NEGOTIATION_FAILED",
}
NOTIFICATION_CODES = {
    1: "GET_INHIBITED", 2: "GET_ALLOWED", 3: "CONN_STATE", 4: "CONN_STATE_REPLY", 5: "Q_STATE",
    6: "Q_STATE_REPLY", 7: "QM_QUIESCING", 8: "TXN_ALLOWED", 9: "TXN_REVOKE", 10: "TXN_REVOKE_REPLY",
    11: "CHECK_MSG", 12: "BROWSE_FIRST", 13: "MESSAGE_TOO_LARGE", 14: "STREAMING_FAILURE",
    15: "CLIENT_ASYNC_EMPTY", 16: "STREAMING_TXN_PAUSED", 17: "RECONNECTION_COMPLETE",
}
SOCKET_ACTION_TYPES: dict[int, str] = {}


# --------------------------------------------------------------------------
# Segment type classes
# --------------------------------------------------------------------------
MQCONN, MQDISC, MQOPEN, MQCLOSE, MQGET, MQPUT, MQPUT1, MQSET, MQINQ, SPI = (
    0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8C)
INITIAL_DATA, RESET_DATA, MESSAGE_DATA, STATUS_DATA, PING_DATA = 0x01, 0x03, 0x04, 0x05, 0x07
USERID_DATA, CONAUTH_INFO = 0x08, 0x0A
SOCKET_ACTION, ASYNC_MESSAGE, REQUEST_MSGS, NOTIFICATION = 0x0C, 0x0D, 0x0E, 0x0F
REPLY_BIT = 0x10


def is_api(t: int) -> bool:
    """MQ API calls and replies: the types with an API header."""
    return 0x80 < t <= 0x9F


def is_request(t: int) -> bool:
    """An API call or XA request whose reply type exists (t | 0x10)."""
    return (0x81 <= t <= 0x8F or 0xA1 <= t <= 0xAA) and (t | REPLY_BIT) in SEGMENT_TYPES


def is_reply(t: int) -> bool:
    return (0x91 <= t <= 0x9F or 0xB1 <= t <= 0xBA) and (t & ~REPLY_BIT) in SEGMENT_TYPES


def reply_type_of(t: int) -> int:
    return t | REPLY_BIT


def request_type_of(t: int) -> int:
    return t & ~REPLY_BIT


def name_text(raw: bytes, ccsid: int) -> str | None:
    """A blank- or NUL-padded MQ character field, trimmed; None when empty."""
    s = decode_text(bytes(raw).rstrip(b"\x00"), ccsid).rstrip(" \x00")
    return s or None
