"""Constants of the MSMQ binary protocol, as data.

Sources: [MS-MQMQ] 2.2.18-2.2.20 (BaseHeader, UserHeader,
MessagePropertiesHeader, message classes), [MS-MQQB] 2.1-2.2 (ports,
InternalHeader, internal packets, Ping Packet).  One family per dict; the
reverse (value -> name) maps are generated once.
"""
from __future__ import annotations

__all__ = [
    "TCP_PORT", "SPX_PORT", "PING_PORT",
    "BASE_VERSION", "BASE_SIGNATURE", "BASE_SIGNATURE_BYTES", "BASE_HEADER_SIZE",
    "MAX_PACKET_SIZE", "INFINITE",
    "BASE_FLAGS", "INTERNAL_FLAGS", "USER_FLAGS", "MP_FLAGS", "OS_FLAGS", "PING_FLAGS",
    "PT_SESSION_ACK", "PT_ESTABLISH_CONNECTION", "PT_CONNECTION_PARAMETERS", "PACKET_TYPES",
    "MQMSG_CLASS", "MQMSG_CLASS_NAMES", "MESSAGE_CLASS_CUSTOM_MASK",
    "DQ_TYPES", "AQ_TYPES", "RQ_TYPES",
    "PRIVACY_LEVELS", "HASH_ALGORITHMS", "ENCRYPTION_ALGORITHMS", "VARTYPES",
    "PING_SIGNATURE", "PING_PACKET_SIZE",
    "ESTABLISH_CONNECTION_PACKET_SIZE", "CONNECTION_PARAMETERS_PACKET_SIZE",
    "SESSION_ACK_PACKET_SIZE", "SESSION_HEADER_SIZE",
    "ESTABLISH_CONNECTION_RE", "SERVER_PADDING_BYTE",
    "MAX_LABEL_LENGTH", "MAX_ROUTING_COUNT", "ORDER_QUEUE_ID", "ORDER_ACK_LABEL",
    "RECOVERABLE_ACK_TIMEOUT_RANGE", "ACK_TIMEOUT_RANGE",
]

# [MS-MQQB] 2.1.1 / 2.1.2
TCP_PORT = 1801
SPX_PORT = 876
PING_PORT = 3527

# [MS-MQMQ] 2.2.19.1 BaseHeader
BASE_VERSION = 0x10
BASE_SIGNATURE = 0x524F494C          # little-endian on the wire: b"LIOR"
BASE_SIGNATURE_BYTES = b"LIOR"
BASE_HEADER_SIZE = 16
MAX_PACKET_SIZE = 0x00400000          # "This field has a maximum value of 0x00400000"
INFINITE = 0xFFFFFFFF                 # TimeToReachQueue / TimeToBeReceived: infinite

# Bit fields: name -> (shift, width), least significant bit first, named as the
# specification's field descriptions name them ("A - IN" -> "IN").
BASE_FLAGS = {
    "PR": (0, 3), "IN": (3, 1), "SH": (4, 1), "DH": (5, 1), "X9": (6, 1), "X8": (7, 1),
    "TR": (8, 1), "X6": (9, 1), "X5": (10, 1), "X4": (11, 1), "X3": (12, 1), "X2": (13, 1),
    "X1": (14, 1), "X0": (15, 1),
}

# [MS-MQQB] 2.2.1 InternalHeader.Flags
INTERNAL_FLAGS = {
    "PT": (0, 4), "CS": (4, 1), "X5": (5, 1), "X6": (6, 1), "X7": (7, 1), "X8": (8, 1),
    "X9": (9, 1), "X10": (10, 1), "X11": (11, 1), "X12": (12, 1), "X13": (13, 1),
    "X14": (14, 1), "X15": (15, 1),
}
PT_SESSION_ACK = 0x1
PT_ESTABLISH_CONNECTION = 0x2
PT_CONNECTION_PARAMETERS = 0x3
PACKET_TYPES = {
    PT_SESSION_ACK: "SessionAck",
    PT_ESTABLISH_CONNECTION: "EstablishConnection",
    PT_CONNECTION_PARAMETERS: "ConnectionParameters",
}

# [MS-MQMQ] 2.2.19.2 UserHeader.Flags
USER_FLAGS = {
    "RC": (0, 5), "DM": (5, 2), "X1": (7, 1), "JN": (8, 1), "JP": (9, 1),
    "DQ": (10, 3), "AQ": (13, 3), "RQ": (16, 3),
    "SH": (19, 1), "TH": (20, 1), "MP": (21, 1), "CQ": (22, 1), "MQ": (23, 1),
    "X2": (24, 1), "AH": (25, 1), "X3": (26, 2), "HH": (28, 1), "X4": (29, 3),
}
MAX_ROUTING_COUNT = 0x1D               # UserHeader.Flags.RC valid range 0x00..0x1D

# Queue format types selected by UserHeader.Flags.DQ / AQ / RQ ([MS-MQMQ] 2.2.19.2)
DQ_TYPES = {
    0x0: ("None", None),
    0x3: ("Private queue on destination host", "PrivateQueueFormatNameId"),
    0x5: ("Public queue", "PublicQueueFormatName"),
    0x7: ("Direct", "DirectQueueFormatName"),
}
AQ_TYPES = {
    0x0: ("None", None),
    0x2: ("Private queue on source host", "PrivateQueueFormatNameId"),
    0x3: ("Private queue on destination host", "PrivateQueueFormatNameId"),
    0x5: ("Public queue", "PublicQueueFormatName"),
    0x6: ("Private queue on host other than the source or destination host", "PrivateQueueFormatName"),
    0x7: ("Direct", "DirectQueueFormatName"),
}
RQ_TYPES = {
    0x0: ("None", None),
    0x1: ("Same as the administration queue", None),
    0x2: ("Private queue on source host", "PrivateQueueFormatNameId"),
    0x3: ("Private queue on destination host", "PrivateQueueFormatNameId"),
    0x4: ("Private queue on the same host as the administration queue", "PrivateQueueFormatNameId"),
    0x5: ("Public queue", "PublicQueueFormatName"),
    0x6: ("Private queue on a host other than the source queue, destination queue, or "
          "administration queue host", "PrivateQueueFormatName"),
    0x7: ("Direct", "DirectQueueFormatName"),
}

# [MS-MQMQ] 2.2.19.3 MessagePropertiesHeader.Flags
MP_FLAGS = {"PA": (0, 1), "PR": (1, 1), "NA": (2, 1), "NR": (3, 1), "X": (4, 4)}
MAX_LABEL_LENGTH = 0xFA                # LabelLength valid range 0x00..0xFA (WCHARs)

PRIVACY_LEVELS = {
    0x00000000: "No encryption",
    0x00000001: "40-bit end-to-end encryption",
    0x00000003: "128-bit end-to-end encryption",
    0x00000005: "AES",
}
HASH_ALGORITHMS = {
    0x00008001: "MD2", 0x00008002: "MD4", 0x00008003: "MD5", 0x00008004: "SHA-1",
    0x0000800C: "SHA-256", 0x0000800E: "SHA-512",
}
ENCRYPTION_ALGORITHMS = {
    0x00006602: "RC2", 0x00006610: "AES 256", 0x0000660E: "AES 128",
    0x0000660F: "AES 192", 0x00006801: "RC4",
}
# [MS-MQMQ] 2.2.12 PROPVARIANT type constants (BodyType), plus VT_BSTR (8), the
# COM VARTYPE the [MS-MQQB] 4.1.7 example carries ("VTBSTR").
VARTYPES = {
    0: "VT_EMPTY", 1: "VT_NULL", 2: "VT_I2", 3: "VT_I4", 8: "VT_BSTR", 11: "VT_BOOL",
    12: "VT_VARIANT", 16: "VT_I1", 17: "VT_UI1", 18: "VT_UI2", 19: "VT_UI4", 20: "VT_I8",
    21: "VT_UI8", 31: "VT_LPWSTR", 65: "VT_BLOB", 72: "VT_CLSID", 0x1000: "VT_VECTOR",
}

# [MS-MQMQ] 2.2.18.1.6 MESSAGE_CLASS_VALUES
MQMSG_CLASS = {
    "MQMSG_CLASS_NORMAL": 0x0000,
    "MQMSG_CLASS_REPORT": 0x0001,
    "MQMSG_CLASS_ACK_REACH_QUEUE": 0x0002,
    "MQMSG_CLASS_ORDER_ACK": 0x00FF,
    "MQMSG_CLASS_ACK_RECEIVE": 0x4000,
    "MQMSG_CLASS_NACK_BAD_DST_Q": 0x8000,
    "MQMSG_CLASS_NACK_DELETED": 0x8001,
    "MQMSG_CLASS_NACK_REACH_QUEUE_TIMEOUT": 0x8002,
    "MQMSG_CLASS_NACK_Q_EXCEED_QUOTA": 0x8003,
    "MQMSG_CLASS_NACK_ACCESS_DENIED": 0x8004,
    "MQMSG_CLASS_NACK_HOP_COUNT_EXCEEDED": 0x8005,
    "MQMSG_CLASS_NACK_BAD_SIGNATURE": 0x8006,
    "MQMSG_CLASS_NACK_BAD_ENCRYPTION": 0x8007,
    "MQMSG_CLASS_NACK_NOT_TRANSACTIONAL_Q": 0x8009,
    "MQMSG_CLASS_NACK_NOT_TRANSACTIONAL_MSG": 0x800A,
    "MQMSG_CLASS_NACK_UNSUPPORTED_CRYPTO_PROVIDER": 0x800B,
    "MQMSG_CLASS_NACK_Q_DELETED": 0xC000,
    "MQMSG_CLASS_NACK_Q_PURGED": 0xC001,
    "MQMSG_CLASS_NACK_RECEIVE_TIMEOUT": 0xC002,
    "MQMSG_CLASS_NACK_RECEIVE_REJECTED": 0xC004,
}
MQMSG_CLASS_NAMES = {v: k for k, v in MQMSG_CLASS.items()}
# "the sending application can set the type of a message to a custom value by
# setting one or more bits of the mask 0xE1FF and by leaving the remaining bits
# as zero"
MESSAGE_CLASS_CUSTOM_MASK = 0xE1FF
globals().update(MQMSG_CLASS)
__all__ += list(MQMSG_CLASS)

# [MS-MQQB] 2.2.2 / 2.2.3 / 2.2.6 fixed packet sizes
CONNECTION_PARAMETERS_PACKET_SIZE = 16 + 4 + 12
ESTABLISH_CONNECTION_PACKET_SIZE = 16 + 4 + 552
SESSION_HEADER_SIZE = 16
SESSION_ACK_PACKET_SIZE = 16 + 4 + SESSION_HEADER_SIZE
ESTABLISH_CONNECTION_RE = 0x10         # OperatingSystem.RE "MUST be set to 0x10"
SERVER_PADDING_BYTE = 0x5A             # EstablishConnectionHeader.Padding in a response
RECOVERABLE_ACK_TIMEOUT_RANGE = (0x000001F4, 0x0001D4C0)
ACK_TIMEOUT_RANGE = (0x00004E20, 0x0001D4C0)

# [MS-MQQB] 2.2.3.1 EstablishConnectionHeader.OperatingSystem
OS_FLAGS = {
    "RE": (0, 8), "SE": (8, 1), "OS": (9, 1), "QS": (10, 1), "X11": (11, 1), "X12": (12, 1),
    "X13": (13, 1), "X14": (14, 1), "X15": (15, 1),
}

# [MS-MQQB] 2.2.7 Ping Packet
PING_SIGNATURE = 0x5548
PING_PACKET_SIZE = 24
PING_FLAGS = {"RC": (0, 1), "RF": (1, 1), "X": (2, 14)}

# [MS-MQQB] 2.2.4 / 2.2.5 OrderAck and FinalAck packets
ORDER_QUEUE_ID = 0x00000004            # PrivateQueueIdentifier of "order_queue$"
ORDER_ACK_LABEL = "QM Ordering Ack"
