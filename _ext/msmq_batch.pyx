# distutils: language = c++
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled batch decoder for MSMQ binary-protocol packets.

Many records in (one buffer + int64 offsets), one Arrow record batch out
(schema ``mqcodec.batch.schema.MSMQ_PACKETS``, one row per record).  The walk
runs without the GIL and creates no Python object per record: numeric
columns are written straight into preallocated numpy arrays of their Arrow
width, validity is kept per header (all columns of one header share it),
GUIDs are formatted in C, UTF-16 text is converted to UTF-8 in C.

This is the compiled twin of ``mqcodec.batch.msmq_pure`` (which runs
``mqcodec.msmq.decode_packet`` record by record): every check below is made
in the same order as base.py / user.py / properties.py / session.py /
optional_headers.py / packet.py make it, with the same structure, field,
offset and reason, so both implementations give identical tables
(tests/test_batch_msmq.py).  Change them together.

Native: Ping, BaseHeader, InternalHeader, EstablishConnection,
ConnectionParameters, SessionAck, UserHeader, TransactionHeader,
SecurityHeader (SecurityID, EncryptionKey, Signature), MessagePropertiesHeader,
DebugHeader, the SessionHeader after a UserMessage.  Records whose
UserHeader announces SRMP/Compound headers (AH), a SoapHeader (HH) or a
MultiQueueFormatHeader (MQ), or whose SecurityHeader carries a SenderCert or
ProviderInfo -- and the rare text cases whose presentation needs Python's
FormatName parser or str.upper() (a direct name starting with "DIRECT=" or
with a non-ASCII character in its first 7, an OrderAck/FinalAck candidate
with a direct DestinationQueue) -- are decoded by the pure implementation
after the walk and their rows put in place; ``stats()`` counts them.

Errors are recorded per record as codes (structure, field, reason, up to
three integer arguments) and an offset; the tables are in
``mqcodec.batch.msmq_pure`` (STRUCTURES, FIELDS, REASONS).
"""
cimport cython
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy, memset

import numpy as np
cimport numpy as cnp
import pyarrow as pa

from mqcodec import arrow_kernels as _ak

from mqcodec.batch import msmq_pure as _pure
from mqcodec.batch.schema import MSMQ_PACKETS

cnp.import_array()

include "batch_common.pxi"
include "arrow_export.pxi"

# ------------------------------------------------------------------ outcome
DEF OK = 0
DEF ERR = 1
DEF FALLBACK_HEADER = 2
DEF FALLBACK_TEXT = 3
DEF PREFETCH = 6            # records ahead whose headers are fetched into the cache

# ------------------------------------------------------------------ structure codes (msmq_pure.STRUCTURES)
DEF S_RECORD = 0
DEF S_PING = 1
DEF S_BASE = 2
DEF S_INTERNAL = 3
DEF S_SESSION = 4
DEF S_USER = 5
DEF S_XACT = 6
DEF S_MP = 7
DEF S_DEBUG = 8
DEF S_USERMSG = 9
DEF S_SEC = 10

# ------------------------------------------------------------------ reason codes (msmq_pure.REASONS)
DEF R_NULL = 0
DEF R_TRUNC = 1
DEF R_SIGNATURE = 2
DEF R_VERSION = 3
DEF R_PS_BELOW = 4
DEF R_PS_ABOVE = 5
DEF R_PS_INPUT = 6
DEF R_TR_NO_DH = 7
DEF R_DH_INTERNAL = 8
DEF R_INTERNAL_TRUNC = 9
DEF R_PT = 10
DEF R_SA_NO_SH = 11
DEF R_SA_SIZE = 12
DEF R_SH_TRUNC = 13
DEF R_SH_EC = 14
DEF R_SH_CP = 15
DEF R_EC_SIZE = 16
DEF R_CP_SIZE = 17
DEF R_UH_TRUNC = 18
DEF R_TH_DM = 19
DEF R_MP_CLEAR = 20
DEF R_DQ_INVALID = 21
DEF R_AQ_INVALID = 22
DEF R_Q_ID = 23
DEF R_Q_PUB = 24
DEF R_Q_PRIV = 25
DEF R_Q_DCOUNT = 26
DEF R_Q_DPAST = 27
DEF R_Q_DWHOLE = 28
DEF R_Q_DNULL = 29
DEF R_Q_DPAD = 30
DEF R_CQ = 31
DEF R_ANN_TH = 32
DEF R_ANN_MP = 33
DEF R_ANN_DH = 34
DEF R_XACT_SEQ0 = 35
DEF R_XACT_PREV = 36
DEF R_XACT_CG = 37
DEF R_MP_TRUNC = 38
DEF R_MP_ALLOC = 39
DEF R_MP_LABELLEN = 40
DEF R_MP_LABELPAST = 41
DEF R_MP_LABELNULL = 42
DEF R_MP_EXT = 43
DEF R_MP_BODY = 44
DEF R_MP_PAD = 45
DEF R_DBG_QT = 46
DEF R_DBG_QI = 47
DEF R_REST = 48
DEF R_USH_TRUNC = 49
DEF R_SEC_ST = 50
DEF R_SEC_AU = 51
DEF R_SEC_AS = 52
DEF R_SEC_ST0 = 53
DEF R_SEC_ST2 = 54
DEF R_SEC_NONE = 55
DEF R_SEC_ITEM = 56     # + 0 SecurityID, 1 EncryptionKey, 2 Signature
DEF R_SEC_SID = 59
DEF R_ANN_SEC = 60

# The codes above are the Python side's, checked when this module is imported
# (a table that disagrees fails the import: mqcodec._impl.check_codes).
from mqcodec._impl import check_codes as _check_codes

#: name -> code, as compiled (tests/test_layers.py checks a corrupted Python side is refused)
CODE_TABLES = {
    "structure": {
        "record": S_RECORD,
        "PingPacket": S_PING,
        "BaseHeader": S_BASE,
        "InternalHeader": S_INTERNAL,
        "SessionHeader": S_SESSION,
        "UserHeader": S_USER,
        "TransactionHeader": S_XACT,
        "MessagePropertiesHeader": S_MP,
        "DebugHeader": S_DEBUG,
        "UserMessage": S_USERMSG,
        "SecurityHeader": S_SEC,
    },
    "reason": {
        "NULL": R_NULL,
        "TRUNC": R_TRUNC,
        "SIGNATURE": R_SIGNATURE,
        "VERSION": R_VERSION,
        "PS_BELOW": R_PS_BELOW,
        "PS_ABOVE": R_PS_ABOVE,
        "PS_INPUT": R_PS_INPUT,
        "TR_NO_DH": R_TR_NO_DH,
        "DH_INTERNAL": R_DH_INTERNAL,
        "INTERNAL_TRUNC": R_INTERNAL_TRUNC,
        "PT": R_PT,
        "SA_NO_SH": R_SA_NO_SH,
        "SA_SIZE": R_SA_SIZE,
        "SH_TRUNC": R_SH_TRUNC,
        "SH_EC": R_SH_EC,
        "SH_CP": R_SH_CP,
        "EC_SIZE": R_EC_SIZE,
        "CP_SIZE": R_CP_SIZE,
        "UH_TRUNC": R_UH_TRUNC,
        "TH_DM": R_TH_DM,
        "MP_CLEAR": R_MP_CLEAR,
        "DQ_INVALID": R_DQ_INVALID,
        "AQ_INVALID": R_AQ_INVALID,
        "Q_ID": R_Q_ID,
        "Q_PUB": R_Q_PUB,
        "Q_PRIV": R_Q_PRIV,
        "Q_DCOUNT": R_Q_DCOUNT,
        "Q_DPAST": R_Q_DPAST,
        "Q_DWHOLE": R_Q_DWHOLE,
        "Q_DNULL": R_Q_DNULL,
        "Q_DPAD": R_Q_DPAD,
        "CQ": R_CQ,
        "ANN_TH": R_ANN_TH,
        "ANN_MP": R_ANN_MP,
        "ANN_DH": R_ANN_DH,
        "XACT_SEQ0": R_XACT_SEQ0,
        "XACT_PREV": R_XACT_PREV,
        "XACT_CG": R_XACT_CG,
        "MP_TRUNC": R_MP_TRUNC,
        "MP_ALLOC": R_MP_ALLOC,
        "MP_LABELLEN": R_MP_LABELLEN,
        "MP_LABELPAST": R_MP_LABELPAST,
        "MP_LABELNULL": R_MP_LABELNULL,
        "MP_EXT": R_MP_EXT,
        "MP_BODY": R_MP_BODY,
        "MP_PAD": R_MP_PAD,
        "DBG_QT": R_DBG_QT,
        "DBG_QI": R_DBG_QI,
        "REST": R_REST,
        "USH_TRUNC": R_USH_TRUNC,
        "SEC_ST": R_SEC_ST,
        "SEC_AU": R_SEC_AU,
        "SEC_AS": R_SEC_AS,
        "SEC_ST0": R_SEC_ST0,
        "SEC_ST2": R_SEC_ST2,
        "SEC_NONE": R_SEC_NONE,
        "SEC_SECURITYID": R_SEC_ITEM,
        "SEC_ENCRYPTIONKEY": R_SEC_ITEM + 1,
        "SEC_SIGNATURE": R_SEC_ITEM + 2,
        "SEC_SID": R_SEC_SID,
        "ANN_SEC": R_ANN_SEC,
    },
}


def python_tables():
    """The Python side of every table of CODE_TABLES: (reference, complete, source)."""
    return {
        "structure": (_pure.STRUCTURES, True, "mqcodec.batch.msmq_pure.STRUCTURES"),
        "reason": (_pure.REASON_CODES, True, "mqcodec.batch.msmq_pure.REASON_CODES"),
    }


def check_tables(python=None):
    """Check CODE_TABLES against ``python`` (default: python_tables()); ImportError on a disagreement."""
    for _table, (_ref, _complete, _source) in (python_tables() if python is None else python).items():
        _check_codes("msmq_batch", _table, CODE_TABLES[_table], _ref, complete=_complete, source=_source)


check_tables()

# field codes: looked up by name in msmq_pure.FIELDS at import
cdef int F_NONE, F_FLAGS, F_SIGNATURE, F_VERSIONNUMBER, F_PACKETSIZE, F_RESERVED, F_ACKSEQ
cdef int F_DQ, F_AQ, F_RQ, F_CONNECTORTYPE, F_TXSEQNUM, F_PREVTXSEQNUM, F_CONNECTORQMGUID
cdef int F_LABELLENGTH, F_LABEL, F_ALLOCATIONBODYSIZE, F_EXTENSIONSIZE, F_MESSAGESIZE, F_QUEUEIDENTIFIER
cdef int F_SENDERIDSIZE, F_SECURITYID
cdef int F_SEC_SIZE[3]

_F = _pure.FIELDS.index
F_NONE = _F(""); F_FLAGS = _F("Flags"); F_SIGNATURE = _F("Signature")
F_VERSIONNUMBER = _F("VersionNumber"); F_PACKETSIZE = _F("PacketSize"); F_RESERVED = _F("Reserved")
F_ACKSEQ = _F("AckSequenceNumber"); F_DQ = _F("DestinationQueue"); F_AQ = _F("AdminQueue")
F_RQ = _F("ResponseQueue"); F_CONNECTORTYPE = _F("ConnectorType")
F_TXSEQNUM = _F("TxSequenceNumber"); F_PREVTXSEQNUM = _F("PreviousTxSequenceNumber")
F_CONNECTORQMGUID = _F("ConnectorQMGuid"); F_LABELLENGTH = _F("LabelLength"); F_LABEL = _F("Label")
F_ALLOCATIONBODYSIZE = _F("AllocationBodySize"); F_EXTENSIONSIZE = _F("ExtensionSize")
F_MESSAGESIZE = _F("MessageSize"); F_QUEUEIDENTIFIER = _F("QueueIdentifier")
F_SENDERIDSIZE = _F("SenderIdSize"); F_SECURITYID = _F("SecurityID")
F_SEC_SIZE[0] = _F("SenderIdSize"); F_SEC_SIZE[1] = _F("EncryptionKeySize"); F_SEC_SIZE[2] = _F("SignatureSize")

# Fixed parts: (field name, relative offset) in declaration order.  A cut
# fixed part names the last field starting at or before the cut
# (layout.parse_at and the explicit checks of user.py / properties.py).
_CUTS = {
    "ping": [("Flags", 0), ("Signature", 2), ("Cookie", 4), ("QMGuid", 8)],
    "base": [("VersionNumber", 0), ("Reserved", 1), ("Flags", 2), ("Signature", 4), ("PacketSize", 8),
             ("TimeToReachQueue", 12)],
    "user": [("SourceQueueManager", 0), ("QueueManagerAddress", 16), ("TimeToBeReceived", 32),
             ("SentTime", 36), ("MessageID", 40), ("Flags", 44)],
    "xact": [("Flags", 0), ("TxSequenceID", 4), ("TxSequenceNumber", 12), ("PreviousTxSequenceNumber", 16)],
    "mp": [("Flags", 0), ("LabelLength", 1), ("MessageClass", 2), ("CorrelationID", 4), ("BodyType", 24),
           ("ApplicationTag", 28), ("MessageSize", 32), ("AllocationBodySize", 36), ("PrivacyLevel", 40),
           ("HashAlgorithm", 44), ("EncryptionAlgorithm", 48), ("ExtensionSize", 52)],
    "debug": [("Flags", 0), ("Reserved", 2)],
    "sec": [("Flags", 0), ("SenderIdSize", 2), ("EncryptionKeySize", 4), ("SignatureSize", 6),
            ("SenderCertSize", 8), ("ProviderInfoSize", 12)],
}
DEF CUT_PING = 0
DEF CUT_BASE = 1
DEF CUT_USER = 2
DEF CUT_XACT = 3
DEF CUT_MP = 4
DEF CUT_DEBUG = 5
DEF CUT_SEC = 6
cdef int _cut_n[7]
cdef int _cut_rel[7][16]
cdef int _cut_code[7][16]
for _k, _name in enumerate(["ping", "base", "user", "xact", "mp", "debug", "sec"]):
    _cut_n[_k] = len(_CUTS[_name])
    for _j, (_fname, _rel) in enumerate(_CUTS[_name]):
        _cut_rel[_k][_j] = _rel
        _cut_code[_k][_j] = _F(_fname)

# ------------------------------------------------------------------ columns
# Numeric columns, in this order; each belongs to a validity group.
cdef enum:
    G_PACKET, G_PING, G_BASE, G_INTERNAL, G_EC, G_CP, G_SESSION, G_SESSION_COUNTED, G_USER, G_CQ,
    G_DQ, G_AQ, G_RQ, G_XACT, G_XACT_CG, G_SEC, G_PROPS, G_LABEL, G_DEBUG, G_DEBUG_QI, G_NEVER, NGROUPS

cdef enum:
    N_PACKET_END,
    N_PING_FLAGS, N_PING_RC, N_PING_RF, N_PING_SIGNATURE, N_PING_COOKIE,
    N_BASE_VERSION_NUMBER, N_BASE_RESERVED, N_BASE_FLAGS, N_BASE_PR, N_BASE_IN, N_BASE_SH, N_BASE_DH,
    N_BASE_TR, N_BASE_SIGNATURE, N_BASE_PACKET_SIZE, N_BASE_TIME_TO_REACH_QUEUE,
    N_INTERNAL_RESERVED, N_INTERNAL_FLAGS, N_INTERNAL_PT, N_INTERNAL_CS,
    N_EC_TIME_STAMP, N_EC_OPERATING_SYSTEM, N_EC_RE, N_EC_SE, N_EC_OS, N_EC_QS, N_EC_RESERVED,
    N_EC_PADDING_IS_SERVER_FILL,
    N_CP_RECOVERABLE_ACK_TIMEOUT, N_CP_ACK_TIMEOUT, N_CP_RESERVED, N_CP_WINDOW_SIZE,
    N_SESSION_ACK_SEQUENCE_NUMBER, N_SESSION_RECOVERABLE_MSG_ACK_SEQ_NUMBER,
    N_SESSION_RECOVERABLE_MSG_ACK_FLAGS, N_SESSION_USER_MSG_SEQUENCE_NUMBER,
    N_SESSION_RECOVERABLE_MSG_SEQ_NUMBER, N_SESSION_WINDOW_SIZE, N_SESSION_RESERVED,
    N_SESSION_HEADER_COUNTED,
    N_USER_TIME_TO_BE_RECEIVED, N_USER_SENT_TIME, N_USER_MESSAGE_ID, N_USER_FLAGS, N_USER_RC, N_USER_DM,
    N_USER_JN, N_USER_JP, N_USER_DQ, N_USER_AQ, N_USER_RQ, N_USER_SH, N_USER_TH, N_USER_MP, N_USER_CQ,
    N_USER_MQ, N_USER_AH, N_USER_HH,
    N_XACT_FLAGS, N_XACT_CG, N_XACT_FA, N_XACT_FM, N_XACT_LM, N_XACT_ID, N_XACT_TX_SEQUENCE_ID_ORDINAL,
    N_XACT_TX_SEQUENCE_ID_TIME_STAMP, N_XACT_TX_SEQUENCE_NUMBER, N_XACT_PREVIOUS_TX_SEQUENCE_NUMBER,
    N_SEC_FLAGS, N_SEC_ST, N_SEC_SENDER_ID_SIZE, N_SEC_ENCRYPTION_KEY_SIZE, N_SEC_SIGNATURE_SIZE,
    N_SEC_SENDER_CERT_SIZE, N_SEC_PROVIDER_INFO_SIZE,
    N_PROPS_FLAGS, N_PROPS_PA, N_PROPS_PR, N_PROPS_NA, N_PROPS_NR, N_PROPS_LABEL_LENGTH,
    N_PROPS_MESSAGE_CLASS, N_PROPS_BODY_TYPE, N_PROPS_APPLICATION_TAG, N_PROPS_MESSAGE_SIZE,
    N_PROPS_ALLOCATION_BODY_SIZE, N_PROPS_PRIVACY_LEVEL, N_PROPS_HASH_ALGORITHM,
    N_PROPS_ENCRYPTION_ALGORITHM, N_PROPS_EXTENSION_SIZE, N_PROPS_EXTENSION_OFFSET, N_PROPS_BODY_OFFSET,
    N_DEBUG_FLAGS, N_DEBUG_QT, N_DEBUG_RESERVED,
    NNUM

_NUM_NAMES = """packet_end
ping_flags ping_rc ping_rf ping_signature ping_cookie
base_version_number base_reserved base_flags base_pr base_in base_sh base_dh base_tr base_signature
base_packet_size base_time_to_reach_queue
internal_reserved internal_flags internal_pt internal_cs
ec_time_stamp ec_operating_system ec_re ec_se ec_os ec_qs ec_reserved ec_padding_is_server_fill
cp_recoverable_ack_timeout cp_ack_timeout cp_reserved cp_window_size
session_ack_sequence_number session_recoverable_msg_ack_seq_number session_recoverable_msg_ack_flags
session_user_msg_sequence_number session_recoverable_msg_seq_number session_window_size session_reserved
session_header_counted
user_time_to_be_received user_sent_time user_message_id user_flags user_rc user_dm user_jn user_jp
user_dq user_aq user_rq user_sh user_th user_mp user_cq user_mq user_ah user_hh
xact_flags xact_cg xact_fa xact_fm xact_lm xact_id xact_tx_sequence_id_ordinal
xact_tx_sequence_id_time_stamp xact_tx_sequence_number xact_previous_tx_sequence_number
sec_flags sec_st sec_sender_id_size sec_encryption_key_size sec_signature_size sec_sender_cert_size
sec_provider_info_size
props_flags props_pa props_pr props_na props_nr props_label_length props_message_class props_body_type
props_application_tag props_message_size props_allocation_body_size props_privacy_level
props_hash_algorithm props_encryption_algorithm props_extension_size props_extension_offset
props_body_offset
debug_flags debug_qt debug_reserved""".split()
assert len(_NUM_NAMES) == NNUM, (len(_NUM_NAMES), NNUM)
#: bytes per value of each numeric column as the walk writes it (put8/16/32/64; bool = 1)
_NUM_WIDTHS = [8, 2, 1, 1, 2, 4, 1, 1, 2, 1, 1, 1, 1, 1, 4, 4, 4, 2, 2, 1, 1, 4, 2, 1, 1, 1, 1, 2, 1, 4, 4, 2, 2, 2, 2, 4, 2, 2, 2, 2, 1, 4, 4, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1, 1, 1, 1, 4, 4, 4, 4, 4, 2, 1, 2, 2, 2, 4, 4, 1, 1, 1, 1, 1, 1, 2, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 2, 1, 2]
cdef int _NUM_WIDTHS_C[NNUM]
for _k, (_name, _w) in enumerate(zip(_NUM_NAMES, _NUM_WIDTHS)):
    _NUM_WIDTHS_C[_k] = _w
    _t = MSMQ_PACKETS.field(_name).type
    assert _w == (1 if pa.types.is_boolean(_t) else _t.bit_width // 8), (_name, _w, _t)

# GUID (string) columns: 16 wire bytes per row, formatted after the walk
cdef enum:
    U_PING_QM_GUID, U_EC_CLIENT_GUID, U_EC_SERVER_GUID, U_USER_SOURCE_QUEUE_MANAGER,
    U_USER_QUEUE_MANAGER_ADDRESS, U_USER_CONNECTOR_TYPE, U_XACT_CONNECTOR_QM_GUID,
    U_DEBUG_QUEUE_IDENTIFIER, NGUID
_GUID_COLS = [("ping_qm_guid", G_PING), ("ec_client_guid", G_EC), ("ec_server_guid", G_EC),
              ("user_source_queue_manager", G_USER), ("user_queue_manager_address", G_USER),
              ("user_connector_type", G_CQ), ("xact_connector_qm_guid", G_XACT_CG),
              ("debug_queue_identifier", G_DEBUG_QI)]

# text columns (UTF-8 built in C, one _Text each, in this order)
_TEXT_COLS = [("props_label", G_LABEL), ("user_destination_queue", G_DQ),
              ("user_admin_queue", G_AQ), ("user_response_queue", G_RQ)]

_PREFIX_GROUP = [("packet_end", G_PACKET), ("ping_", G_PING), ("base_", G_BASE),
                 ("internal_", G_INTERNAL), ("ec_", G_EC), ("cp_", G_CP),
                 ("session_header_counted", G_SESSION_COUNTED), ("session_", G_SESSION),
                 ("user_", G_USER), ("xact_", G_XACT), ("sec_", G_SEC), ("props_", G_PROPS), ("debug_", G_DEBUG)]


def _group_of(name):
    for prefix, g in _PREFIX_GROUP:
        if name.startswith(prefix):
            return g
    return G_NEVER


#: (name, Arrow type, validity group, boolean?) of each numeric column, looked up once
_NUM_META = [(name, MSMQ_PACKETS.field(name).type, _group_of(name), pa.types.is_boolean(MSMQ_PACKETS.field(name).type))
             for name in _NUM_NAMES]
#: the validity group of every column the walk writes (numbers, GUIDs, CorrelationID)
_GROUP_OF = dict([(name, _group_of(name)) for name in _NUM_NAMES] + _GUID_COLS + [("props_correlation_id", G_PROPS)])

KINDS = ["Ping", "SessionAck", "EstablishConnection", "ConnectionParameters", "UserMessage",
         "OrderAck", "FinalAck"]
DEF K_PING = 0
DEF K_SESSION_ACK = 1
DEF K_EC = 2
DEF K_CP = 3
DEF K_USER = 4
DEF K_ORDER_ACK = 5
DEF K_FINAL_ACK = 6

cdef uint8_t _ORDER_ACK_LABEL[15]
for _k, _c in enumerate(list("QM Ordering Ack".encode("ascii"))):
    _ORDER_ACK_LABEL[_k] = _c

# ------------------------------------------------------------------ per-run state

cdef struct Queue:
    int kind            # 0 none, 1 PrivateQueueFormatNameId, 2 Public, 3 Private, 4 Direct
    uint32_t ident
    int64_t guid_at     # record-relative offset of the 16-byte GUID (Public, Private)
    int64_t name_at     # record-relative offset of the direct name (terminator excluded: nunits)
    int64_t nunits


cdef struct Run:
    int64_t n                       # records
    int64_t i                       # current record
    const uint8_t* d                # current record's bytes
    int64_t L                       # current record's length
    void* num[NNUM]
    uint8_t* grp[NGROUPS]
    uint8_t* guid[NGUID]
    int8_t* kind
    uint8_t* corr                   # n x 20 CorrelationID
    bint want_text[4]               # build the text of props_label, user_{destination,admin,response}_queue
    bint want[NGROUPS]              # some column of the group is selected: write its values
    Err err


cdef class _Text:
    """One text column's UTF-8 bytes (grown by ``room``, never zero-filled) and offsets."""
    cdef char* data
    cdef size_t size
    cdef size_t cap
    cdef bint failed        # an allocation failed: the call raises MemoryError
    cdef object arr         # n + 1 int32 offsets (numpy), written by index
    cdef int32_t* offs

    def __dealloc__(self):
        free(self.data)


cdef char* room(_Text t, size_t extra) noexcept nogil:
    """Where ``extra`` more bytes go (the caller then adds to ``t.size`` what it
    wrote); NULL when memory runs out (``t.failed`` is set, nothing is written)."""
    cdef size_t cap
    cdef char* grown
    if t.size + extra > t.cap:
        cap = t.cap * 2 if t.cap else 4096
        while cap < t.size + extra:
            cap *= 2
        grown = <char*>realloc(t.data, cap)
        if grown == NULL:
            t.failed = True
            return NULL
        t.data = grown
        t.cap = cap
    return t.data + t.size


# ------------------------------------------------------------------ reading / writing
# (little-endian readers rd16le / rd32le: batch_common.pxi)
# One writer per Arrow width: the call sites name the width of their column
# (checked against the schema at import, see _NUM_WIDTHS).
cdef inline void put8(Run* r, int k, uint32_t v) noexcept nogil:
    (<uint8_t*>r.num[k])[r.i] = <uint8_t>v


cdef inline void put16(Run* r, int k, uint32_t v) noexcept nogil:
    (<uint16_t*>r.num[k])[r.i] = <uint16_t>v


cdef inline void put32(Run* r, int k, uint32_t v) noexcept nogil:
    (<uint32_t*>r.num[k])[r.i] = v


cdef inline void put64(Run* r, int k, int64_t v) noexcept nogil:
    (<int64_t*>r.num[k])[r.i] = v


cdef inline void valid(Run* r, int g) noexcept nogil:
    r.grp[g][r.i] = 1


cdef inline void put_guid(Run* r, int u, int64_t at) noexcept nogil:
    memcpy(r.guid[u] + 16 * r.i, r.d + at, 16)


cdef inline int fail(Run* r, int structure, int field, int reason, int64_t off,
                     int64_t a0=0, int64_t a1=0, int64_t a2=0) noexcept nogil:
    _set_err(&r.err, structure, field, reason, off, a0, a1, a2)
    return ERR


cdef inline int fail_cut(Run* r, int structure, int cut, int64_t start, int64_t avail, int reason,
                         int64_t a0, int64_t a1) noexcept nogil:
    """A cut fixed part: the last field starting at or before the cut."""
    cdef int64_t at = 0
    cdef int code = _last_field_at(_cut_rel[cut], _cut_code[cut], _cut_n[cut], avail, &at)
    return fail(r, structure, code, reason, start + at, a0, a1)


cdef inline int64_t utf8_at(char* o, int64_t j, uint32_t cp) noexcept nogil:
    """Write code point ``cp`` as UTF-8 at o[j]; returns the next j."""
    if cp < 0x80:
        o[j] = <char>cp
        return j + 1
    if cp < 0x800:
        o[j] = <char>(0xC0 | (cp >> 6))
        o[j + 1] = <char>(0x80 | (cp & 0x3F))
        return j + 2
    if cp < 0x10000:
        o[j] = <char>(0xE0 | (cp >> 12))
        o[j + 1] = <char>(0x80 | ((cp >> 6) & 0x3F))
        o[j + 2] = <char>(0x80 | (cp & 0x3F))
        return j + 3
    o[j] = <char>(0xF0 | (cp >> 18))
    o[j + 1] = <char>(0x80 | ((cp >> 12) & 0x3F))
    o[j + 2] = <char>(0x80 | ((cp >> 6) & 0x3F))
    o[j + 3] = <char>(0x80 | (cp & 0x3F))
    return j + 4


cdef void utf16_append(_Text out, const uint8_t* p, int64_t nunits) noexcept nogil:
    """UTF-16LE -> UTF-8; a lone surrogate becomes U+FFFD (msmq_pure.arrow_text).
    At most 3 bytes per code unit (a pair: 4 bytes for 2 units)."""
    cdef int64_t k = 0, j = 0
    cdef uint32_t u, u2
    cdef char* o = room(out, 3 * nunits)
    cdef uint64_t w
    cdef uint32_t a4
    if o == NULL:
        return
    while k < nunits:
        if k + 4 <= nunits:
            # four ASCII code units at once, written as one 32-bit word
            memcpy(&w, p + 2 * k, 8)
            if not (w & <uint64_t>0xFF80FF80FF80FF80ULL):
                w = (w | (w >> 8)) & <uint64_t>0x0000FFFF0000FFFFULL
                a4 = <uint32_t>((w | (w >> 16)) & 0xFFFFFFFFULL)
                memcpy(o + j, &a4, 4)
                j += 4
                k += 4
                continue
        u = rd16le(p + 2 * k)
        if u < 0x80:
            o[j] = <char>u
            j += 1
        elif 0xD800 <= u < 0xDC00:
            if k + 1 < nunits:
                u2 = rd16le(p + 2 * k + 2)
                if 0xDC00 <= u2 < 0xE000:
                    j = utf8_at(o, j, 0x10000 + ((u - 0xD800) << 10) + (u2 - 0xDC00))
                    k += 2
                    continue
            j = utf8_at(o, j, 0xFFFD)
        elif 0xDC00 <= u < 0xE000:
            j = utf8_at(o, j, 0xFFFD)
        else:
            j = utf8_at(o, j, u)
        k += 1
    out.size += j


cdef const char* _HEX_UP = "0123456789ABCDEF"
# each byte's two hex digits, in memory order (written 2 bytes at a time)
cdef uint8_t _HEX2_UP[256][2]
cdef uint8_t _HEX2_LO[256][2]
for _k in range(256):
    _HEX2_UP[_k][0] = b"0123456789ABCDEF"[_k >> 4]
    _HEX2_UP[_k][1] = b"0123456789ABCDEF"[_k & 15]
    _HEX2_LO[_k][0] = b"0123456789abcdef"[_k >> 4]
    _HEX2_LO[_k][1] = b"0123456789abcdef"[_k & 15]


cdef inline void hex_at(char* out, const uint8_t (*hex2)[2], uint8_t b) noexcept nogil:
    memcpy(out, &hex2[b][0], 2)


cdef inline void guid_text(char* out, const uint8_t* g, const uint8_t (*hex2)[2]) noexcept nogil:
    """36 characters: xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, the [MS-DTYP] packet
    form's bytes in text order (3 2 1 0 - 5 4 - 7 6 - 8 9 - 10..15), a table
    lookup per byte."""
    hex_at(out, hex2, g[3])
    hex_at(out + 2, hex2, g[2])
    hex_at(out + 4, hex2, g[1])
    hex_at(out + 6, hex2, g[0])
    out[8] = 45  # '-'
    hex_at(out + 9, hex2, g[5])
    hex_at(out + 11, hex2, g[4])
    out[13] = 45
    hex_at(out + 14, hex2, g[7])
    hex_at(out + 16, hex2, g[6])
    out[18] = 45
    hex_at(out + 19, hex2, g[8])
    hex_at(out + 21, hex2, g[9])
    out[23] = 45
    hex_at(out + 24, hex2, g[10])
    hex_at(out + 26, hex2, g[11])
    hex_at(out + 28, hex2, g[12])
    hex_at(out + 30, hex2, g[13])
    hex_at(out + 32, hex2, g[14])
    hex_at(out + 34, hex2, g[15])


cdef void append_public(_Text out, const uint8_t* guid) noexcept nogil:
    """PUBLIC=<GUID upper> (formatname.FormatName.public)."""
    cdef char* o = room(out, 43)
    if o == NULL:
        return
    memcpy(o, b"PUBLIC=", 7)
    guid_text(o + 7, guid, _HEX2_UP)
    out.size += 43


cdef void append_private(_Text out, const uint8_t* host, uint32_t ident) noexcept nogil:
    """PRIVATE=<GUID upper>\\<8 hex digits upper> (formatname.FormatName.private)."""
    cdef int k
    cdef char* o = room(out, 53)
    if o == NULL:
        return
    memcpy(o, b"PRIVATE=", 8)
    guid_text(o + 8, host, _HEX2_UP)
    o[44] = 92  # '\\'
    for k in range(8):
        o[45 + k] = _HEX_UP[(ident >> (28 - 4 * k)) & 15]
    out.size += 53


cdef void append_direct(_Text out, const uint8_t* name, int64_t nunits) noexcept nogil:
    """DIRECT=<name> (formatname.FormatName.direct, the prefix test done by the caller)."""
    cdef char* o = room(out, 7)
    if o == NULL:
        return
    memcpy(o, b"DIRECT=", 7)
    out.size += 7
    utf16_append(out, name, nunits)


# ------------------------------------------------------------------ the walk
cdef int decode_queue(Run* r, int kind, int64_t pos, int64_t end, int field, Queue* q,
                      int64_t* nxt) noexcept nogil:
    """user._decode_queue for one queue field at ``pos`` (UserHeader at 16)."""
    cdef const uint8_t* d = r.d
    cdef int64_t avail = end - pos, count, name_at, stop, need
    q.kind = kind
    if kind == 0:
        nxt[0] = pos
        return OK
    if kind == 1:
        if avail < 4:
            return fail(r, S_USER, field, R_Q_ID, pos, _nonneg(avail))
        q.ident = rd32le(d + pos)
        nxt[0] = pos + 4
        return OK
    if kind == 2:
        if avail < 16:
            return fail(r, S_USER, field, R_Q_PUB, pos, _nonneg(avail))
        q.guid_at = pos
        nxt[0] = pos + 16
        return OK
    if kind == 3:
        if avail < 20:
            return fail(r, S_USER, field, R_Q_PRIV, pos, _nonneg(avail))
        q.guid_at = pos
        q.ident = rd32le(d + pos + 16)
        nxt[0] = pos + 20
        return OK
    # DirectQueueFormatName
    if avail < 2:
        return fail(r, S_USER, field, R_Q_DCOUNT, pos, _nonneg(avail))
    count = rd16le(d + pos)
    name_at = pos + 2
    if count > end - name_at:
        return fail(r, S_USER, field, R_Q_DPAST, pos, count, end - name_at)
    if count < 2 or count % 2:
        return fail(r, S_USER, field, R_Q_DWHOLE, pos, count)
    if d[name_at + count - 2] != 0 or d[name_at + count - 1] != 0:
        return fail(r, S_USER, field, R_Q_DNULL, name_at + count - 2)
    stop = name_at + count
    need = (4 - ((stop - 16) & 3)) & 3
    if need > end - stop:
        return fail(r, S_USER, field, R_Q_DPAD, stop, need)
    q.name_at = name_at
    q.nunits = count // 2 - 1
    nxt[0] = stop + need
    return OK


cdef bint direct_needs_python(Run* r, Queue* q) noexcept nogil:
    """True when FormatName.direct's "DIRECT=" prefix test (text[:7].upper())
    cannot be decided in ASCII: the name starts with "DIRECT=" in any case,
    or one of its first 7 characters is not ASCII."""
    cdef int64_t k
    cdef uint32_t u
    cdef const char* want = "DIRECT="
    cdef bint same = q.nunits >= 7
    for k in range(7 if q.nunits > 7 else q.nunits):
        u = rd16le(r.d + q.name_at + 2 * k)
        if u >= 0x80:
            return True
        if 97 <= u <= 122:
            u -= 32
        if u != <uint32_t>want[k]:
            same = False
    return same


cdef int host_of(Run* r, int sel, Queue* aq, int aq_sel, int64_t* at) noexcept nogil:
    """UserHeader._host_for: offset of the host GUID a PrivateQueueFormatNameId
    is relative to; 0 when there is none."""
    if sel == 2:
        at[0] = 16        # SourceQueueManager
        return 1
    if sel == 3:
        at[0] = 32        # QueueManagerAddress
        return 1
    if sel == 4:
        if aq.kind == 3:
            at[0] = aq.guid_at
            return 1
        if aq.kind == 1:
            return host_of(r, aq_sel, aq, aq_sel, at)
    return 0


cdef void render(Run* r, _Text t, int g, int sel, Queue* q, Queue* aq, int aq_sel, bint want) noexcept nogil:
    """The format name of one queue field (UserHeader.format_name), or null;
    without ``want`` only its validity (the column is not selected)."""
    cdef int64_t host = 0
    if q.kind == 0:
        return
    if q.kind == 1 and not host_of(r, sel, aq, aq_sel, &host):
        return
    if want:
        if q.kind == 2:
            append_public(t, r.d + q.guid_at)
        elif q.kind == 3:
            append_private(t, r.d + q.guid_at, q.ident)
        elif q.kind == 1:
            append_private(t, r.d + host, q.ident)
        else:
            append_direct(t, r.d + q.name_at, q.nunits)
    r.grp[g][r.i] = 1


cdef inline int dq_kind(int t) noexcept nogil:
    if t == 0: return 0
    if t == 3: return 1
    if t == 5: return 2
    if t == 7: return 4
    return -1


cdef inline int aq_kind(int t) noexcept nogil:
    if t == 0: return 0
    if t == 2 or t == 3: return 1
    if t == 5: return 2
    if t == 6: return 3
    if t == 7: return 4
    return -1


cdef inline int rq_kind(int t) noexcept nogil:
    if t == 0 or t == 1: return 0
    if t == 2 or t == 3 or t == 4: return 1
    if t == 5: return 2
    if t == 6: return 3
    return 4


cdef void session_cols(Run* r, int64_t at) noexcept nogil:
    cdef const uint8_t* p = r.d + at
    if not r.want[G_SESSION]:
        valid(r, G_SESSION)
        return
    put16(r, N_SESSION_ACK_SEQUENCE_NUMBER, rd16le(p))
    put16(r, N_SESSION_RECOVERABLE_MSG_ACK_SEQ_NUMBER, rd16le(p + 2))
    put32(r, N_SESSION_RECOVERABLE_MSG_ACK_FLAGS, rd32le(p + 4))
    put16(r, N_SESSION_USER_MSG_SEQUENCE_NUMBER, rd16le(p + 8))
    put16(r, N_SESSION_RECOVERABLE_MSG_SEQ_NUMBER, rd16le(p + 10))
    put16(r, N_SESSION_WINDOW_SIZE, rd16le(p + 12))
    put16(r, N_SESSION_RESERVED, rd16le(p + 14))
    valid(r, G_SESSION)


cdef inline int64_t align4(int64_t v) noexcept nogil:
    return (v + 3) & ~(<int64_t>3)


cdef int security(Run* r, int64_t at, int64_t end, int64_t* nxt) noexcept nogil:
    """security.SecurityHeader._decode (strict) without SenderCert and
    ProviderInfo: a header carrying either goes to the pure codec."""
    cdef const uint8_t* d = r.d
    cdef int64_t avail = end - at, p, size
    cdef uint32_t sflags, st, sizes[3], certs, pis, cnt
    cdef int k
    if avail < 16:
        return fail_cut(r, S_SEC, CUT_SEC, at, avail, R_TRUNC, 16, avail)
    sflags = rd16le(d + at)
    sizes[0] = rd16le(d + at + 2)
    sizes[1] = rd16le(d + at + 4)
    sizes[2] = rd16le(d + at + 6)
    certs = rd32le(d + at + 8)
    pis = rd32le(d + at + 12)
    if certs or pis:
        return FALLBACK_HEADER       # certificates, provider names: the pure codec
    st = sflags & 15
    if st > 2:
        return fail(r, S_SEC, F_FLAGS, R_SEC_ST, at, st)
    if (sflags >> 4) & 1:
        return fail(r, S_SEC, F_FLAGS, R_SEC_AU, at)
    if (sflags >> 8) & 15:
        return fail(r, S_SEC, F_FLAGS, R_SEC_AS, at, (sflags >> 8) & 15)
    if st == 0 and sizes[0]:
        return fail(r, S_SEC, F_SENDERIDSIZE, R_SEC_ST0, at + 2, sizes[0])
    if st == 2 and sizes[0] != 16:
        return fail(r, S_SEC, F_SENDERIDSIZE, R_SEC_ST2, at + 2, sizes[0])
    if not (sizes[0] or sizes[1] or sizes[2]):
        return fail(r, S_SEC, F_NONE, R_SEC_NONE, at)
    p = at + 16
    for k in range(3):
        size = sizes[k]
        if not size:
            continue
        if p + align4(size) > end:
            return fail(r, S_SEC, F_SEC_SIZE[k], R_SEC_ITEM + k, at + 2 + 2 * k, size, p, end)
        p += align4(size)
    if st == 1 and sizes[0]:
        # exactly one [MS-DTYP] 2.4.2.2 SID: Revision 1, SubAuthorityCount <= 15
        cnt = d[at + 17] if sizes[0] >= 2 else 0
        if sizes[0] < 8 or d[at + 16] != 1 or cnt > 15 or sizes[0] != 8 + 4 * cnt:
            return fail(r, S_SEC, F_SECURITYID, R_SEC_SID, at + 16, sizes[0])
    if r.want[G_SEC]:
        put16(r, N_SEC_FLAGS, sflags)
        put8(r, N_SEC_ST, st)
        put16(r, N_SEC_SENDER_ID_SIZE, sizes[0])
        put16(r, N_SEC_ENCRYPTION_KEY_SIZE, sizes[1])
        put16(r, N_SEC_SIGNATURE_SIZE, sizes[2])
        put32(r, N_SEC_SENDER_CERT_SIZE, 0)
        put32(r, N_SEC_PROVIDER_INFO_SIZE, 0)
    valid(r, G_SEC)
    nxt[0] = p
    return OK


cdef int walk(Run* r, _Text label, _Text tdq, _Text taq, _Text trq) noexcept nogil:
    cdef const uint8_t* d = r.d
    cdef int64_t L = r.L, size, end, pos, o, p, nb, need, avail, nxt, ext_at, body_at, stop, sh_end
    cdef uint32_t bflags, uflags, iflags, pt, u, mflags, ll, mclass, msize, alloc, esize, xflags, dflags
    cdef uint32_t seq, prev, qt, osf
    cdef int k, ok, dqs, aqs, rqs, kind
    cdef uint64_t w8
    cdef bint IN, SH, DH, TR, counted
    cdef Queue qd, qa, qr
    # ---------------------------------------------------------------- Ping
    if L >= 4 and d[2] == 0x48 and d[3] == 0x55 and not (
            L >= 8 and d[4] == 76 and d[5] == 73 and d[6] == 79 and d[7] == 82):
        if L < 24:
            return fail_cut(r, S_PING, CUT_PING, 0, L, R_TRUNC, 24, L)
        if r.want[G_PING]:
            u = rd16le(d)
            put16(r, N_PING_FLAGS, u)
            put8(r, N_PING_RC, u & 1)
            put8(r, N_PING_RF, (u >> 1) & 1)
            put16(r, N_PING_SIGNATURE, rd16le(d + 2))
            put32(r, N_PING_COOKIE, rd32le(d + 4))
            put_guid(r, U_PING_QM_GUID, 8)
        valid(r, G_PING)
        r.kind[r.i] = K_PING
        put64(r, N_PACKET_END, 24)
        valid(r, G_PACKET)
        return OK
    # ---------------------------------------------------------------- BaseHeader
    if L < 16:
        return fail_cut(r, S_BASE, CUT_BASE, 0, L, R_TRUNC, 16, L)
    if d[0] != 0x10:
        return fail(r, S_BASE, F_VERSIONNUMBER, R_VERSION, 0, d[0])
    if rd32le(d + 4) != 0x524F494C:
        return fail(r, S_BASE, F_SIGNATURE, R_SIGNATURE, 4, 4)
    size = rd32le(d + 8)
    if size < 16:
        return fail(r, S_BASE, F_PACKETSIZE, R_PS_BELOW, 8, size)
    if size > 0x00400000:
        return fail(r, S_BASE, F_PACKETSIZE, R_PS_ABOVE, 8, size, 0x00400000)
    if size > L:
        return fail(r, S_BASE, F_PACKETSIZE, R_PS_INPUT, 8, size, L)
    end = size
    bflags = rd16le(d + 2)
    IN = (bflags >> 3) & 1
    SH = (bflags >> 4) & 1
    DH = (bflags >> 5) & 1
    TR = (bflags >> 8) & 1
    if TR and not DH:
        return fail(r, S_BASE, F_FLAGS, R_TR_NO_DH, 2)
    if r.want[G_BASE]:
        put8(r, N_BASE_VERSION_NUMBER, d[0])
        put8(r, N_BASE_RESERVED, d[1])
        put16(r, N_BASE_FLAGS, bflags)
        put8(r, N_BASE_PR, bflags & 7)
        put8(r, N_BASE_IN, IN)
        put8(r, N_BASE_SH, SH)
        put8(r, N_BASE_DH, DH)
        put8(r, N_BASE_TR, TR)
        put32(r, N_BASE_SIGNATURE, rd32le(d + 4))
        put32(r, N_BASE_PACKET_SIZE, size)
        put32(r, N_BASE_TIME_TO_REACH_QUEUE, rd32le(d + 12))
    valid(r, G_BASE)
    # ---------------------------------------------------------------- internal packets
    if IN:
        if DH:
            return fail(r, S_BASE, F_FLAGS, R_DH_INTERNAL, 2)
        if end - 16 < 4:
            return fail(r, S_INTERNAL, F_RESERVED, R_INTERNAL_TRUNC, 16, end - 16)
        iflags = rd16le(d + 18)
        pt = iflags & 15
        if pt < 1 or pt > 3:
            return fail(r, S_INTERNAL, F_FLAGS, R_PT, 18, pt)
        if r.want[G_INTERNAL]:
            put16(r, N_INTERNAL_RESERVED, rd16le(d + 16))
            put16(r, N_INTERNAL_FLAGS, iflags)
            put8(r, N_INTERNAL_PT, pt)
            put8(r, N_INTERNAL_CS, (iflags >> 4) & 1)
        valid(r, G_INTERNAL)
        if pt == 1:
            if not SH:
                return fail(r, S_BASE, F_FLAGS, R_SA_NO_SH, 2)
            if size == 36:
                sh_end = end
                counted = True
            elif size == 20:
                sh_end = L
                counted = False
            else:
                return fail(r, S_BASE, F_PACKETSIZE, R_SA_SIZE, 8, size)
            if sh_end - 20 < 16:
                return fail(r, S_SESSION, F_ACKSEQ, R_SH_TRUNC, 20, _nonneg(sh_end - 20))
            session_cols(r, 20)
            put8(r, N_SESSION_HEADER_COUNTED, counted)
            valid(r, G_SESSION_COUNTED)
            r.kind[r.i] = K_SESSION_ACK
            put64(r, N_PACKET_END, 36)
            valid(r, G_PACKET)
            return OK
        if SH:
            return fail(r, S_BASE, F_FLAGS, R_SH_EC if pt == 2 else R_SH_CP, 2)
        if pt == 2:
            if size != 572:
                return fail(r, S_BASE, F_PACKETSIZE, R_EC_SIZE, 8, size)
            if r.want[G_EC]:
                put_guid(r, U_EC_CLIENT_GUID, 20)
                put_guid(r, U_EC_SERVER_GUID, 36)
                put32(r, N_EC_TIME_STAMP, rd32le(d + 52))
                osf = rd16le(d + 56)
                put16(r, N_EC_OPERATING_SYSTEM, osf)
                put8(r, N_EC_RE, osf & 0xFF)
                put8(r, N_EC_SE, (osf >> 8) & 1)
                put8(r, N_EC_OS, (osf >> 9) & 1)
                put8(r, N_EC_QS, (osf >> 10) & 1)
                put16(r, N_EC_RESERVED, rd16le(d + 58))
                ok = 1
                for k in range(64):          # 512 bytes, 8 at a time
                    memcpy(&w8, d + 60 + 8 * k, 8)
                    if w8 != <uint64_t>0x5A5A5A5A5A5A5A5AULL:
                        ok = 0
                        break
                put8(r, N_EC_PADDING_IS_SERVER_FILL, ok)
            valid(r, G_EC)
            r.kind[r.i] = K_EC
            put64(r, N_PACKET_END, 572)
        else:
            if size != 32:
                return fail(r, S_BASE, F_PACKETSIZE, R_CP_SIZE, 8, size)
            if r.want[G_CP]:
                put32(r, N_CP_RECOVERABLE_ACK_TIMEOUT, rd32le(d + 20))
                put32(r, N_CP_ACK_TIMEOUT, rd32le(d + 24))
                put16(r, N_CP_RESERVED, rd16le(d + 28))
                put16(r, N_CP_WINDOW_SIZE, rd16le(d + 30))
            valid(r, G_CP)
            r.kind[r.i] = K_CP
            put64(r, N_PACKET_END, 32)
        valid(r, G_PACKET)
        return OK
    # ---------------------------------------------------------------- UserMessage: UserHeader
    avail = end - 16
    if avail < 48:
        return fail_cut(r, S_USER, CUT_USER, 16, avail, R_UH_TRUNC, avail, 0)
    uflags = rd32le(d + 60)
    if uflags & ((1 << 23) | (1 << 25) | (1 << 28)):
        return FALLBACK_HEADER       # MQF, SRMP/Compound, SoapHeader
    if (uflags >> 20) & 1 and (uflags >> 5) & 3 == 0:
        return fail(r, S_USER, F_FLAGS, R_TH_DM, 60)
    if not (uflags >> 21) & 1:
        return fail(r, S_USER, F_FLAGS, R_MP_CLEAR, 60)
    pos = 64
    dqs = (uflags >> 10) & 7
    aqs = (uflags >> 13) & 7
    rqs = (uflags >> 16) & 7
    if dq_kind(dqs) < 0:
        return fail(r, S_USER, F_FLAGS, R_DQ_INVALID, 60, dqs)
    if decode_queue(r, dq_kind(dqs), pos, end, F_DQ, &qd, &nxt) != OK:
        return ERR
    pos = nxt
    if aq_kind(aqs) < 0:
        return fail(r, S_USER, F_FLAGS, R_AQ_INVALID, 60, aqs)
    if decode_queue(r, aq_kind(aqs), pos, end, F_AQ, &qa, &nxt) != OK:
        return ERR
    pos = nxt
    if decode_queue(r, rq_kind(rqs), pos, end, F_RQ, &qr, &nxt) != OK:
        return ERR
    pos = nxt
    if (uflags >> 22) & 1:
        if end - pos < 16:
            return fail(r, S_USER, F_CONNECTORTYPE, R_CQ, pos, _nonneg(end - pos))
        if r.want[G_CQ]:
            put_guid(r, U_USER_CONNECTOR_TYPE, pos)
        valid(r, G_CQ)
        pos += 16
    if r.want[G_USER]:
        put_guid(r, U_USER_SOURCE_QUEUE_MANAGER, 16)
        put_guid(r, U_USER_QUEUE_MANAGER_ADDRESS, 32)
        put32(r, N_USER_TIME_TO_BE_RECEIVED, rd32le(d + 48))
        put32(r, N_USER_SENT_TIME, rd32le(d + 52))
        put32(r, N_USER_MESSAGE_ID, rd32le(d + 56))
        put32(r, N_USER_FLAGS, uflags)
        put8(r, N_USER_RC, uflags & 31)
        put8(r, N_USER_DM, (uflags >> 5) & 3)
        put8(r, N_USER_JN, (uflags >> 8) & 1)
        put8(r, N_USER_JP, (uflags >> 9) & 1)
        put8(r, N_USER_DQ, dqs)
        put8(r, N_USER_AQ, aqs)
        put8(r, N_USER_RQ, rqs)
        put8(r, N_USER_SH, (uflags >> 19) & 1)
        put8(r, N_USER_TH, (uflags >> 20) & 1)
        put8(r, N_USER_MP, (uflags >> 21) & 1)
        put8(r, N_USER_CQ, (uflags >> 22) & 1)
        put8(r, N_USER_MQ, (uflags >> 23) & 1)
        put8(r, N_USER_AH, (uflags >> 25) & 1)
        put8(r, N_USER_HH, (uflags >> 28) & 1)
    valid(r, G_USER)
    # ---------------------------------------------------------------- TransactionHeader
    if (uflags >> 20) & 1:
        if pos >= end:
            return fail(r, S_XACT, F_NONE, R_ANN_TH, pos, end)
        avail = end - pos
        if avail < 20:
            return fail_cut(r, S_XACT, CUT_XACT, pos, avail, R_TRUNC, 20, avail)
        xflags = rd32le(d + pos)
        seq = rd32le(d + pos + 12)
        prev = rd32le(d + pos + 16)
        if seq == 0:
            return fail(r, S_XACT, F_TXSEQNUM, R_XACT_SEQ0, pos + 12)
        if prev == <uint32_t>-1:
            return fail(r, S_XACT, F_PREVTXSEQNUM, R_XACT_PREV, pos + 16)
        if r.want[G_XACT]:
            put32(r, N_XACT_FLAGS, xflags)
            put8(r, N_XACT_CG, xflags & 1)
            put8(r, N_XACT_FA, (xflags >> 1) & 1)
            put8(r, N_XACT_FM, (xflags >> 2) & 1)
            put8(r, N_XACT_LM, (xflags >> 3) & 1)
            put32(r, N_XACT_ID, (xflags >> 4) & 0xFFFFF)
            put32(r, N_XACT_TX_SEQUENCE_ID_ORDINAL, rd32le(d + pos + 4))
            put32(r, N_XACT_TX_SEQUENCE_ID_TIME_STAMP, rd32le(d + pos + 8))
            put32(r, N_XACT_TX_SEQUENCE_NUMBER, seq)
            put32(r, N_XACT_PREVIOUS_TX_SEQUENCE_NUMBER, prev)
        valid(r, G_XACT)
        pos += 20
        if xflags & 1:
            if pos + 16 > end:
                return fail(r, S_XACT, F_CONNECTORQMGUID, R_XACT_CG, pos, _nonneg(end - pos))
            if r.want[G_XACT_CG]:
                put_guid(r, U_XACT_CONNECTOR_QM_GUID, pos)
            valid(r, G_XACT_CG)
            pos += 16
    # ---------------------------------------------------------------- SecurityHeader
    if (uflags >> 19) & 1:
        if pos >= end:
            return fail(r, S_SEC, F_NONE, R_ANN_SEC, pos, end)
        k = security(r, pos, end, &nxt)
        if k != OK:
            return k
        pos = nxt
    # ---------------------------------------------------------------- MessagePropertiesHeader
    if pos >= end:
        return fail(r, S_MP, F_NONE, R_ANN_MP, pos, end)
    o = pos
    avail = end - o
    if avail < 56:
        return fail_cut(r, S_MP, CUT_MP, o, avail, R_MP_TRUNC, avail, 0)
    mflags = d[o]
    ll = d[o + 1]
    mclass = rd16le(d + o + 2)
    msize = rd32le(d + o + 32)
    alloc = rd32le(d + o + 36)
    esize = rd32le(d + o + 52)
    if alloc < msize:
        return fail(r, S_MP, F_ALLOCATIONBODYSIZE, R_MP_ALLOC, o + 36, alloc, msize)
    p = o + 56
    if ll > 250:
        return fail(r, S_MP, F_LABELLENGTH, R_MP_LABELLEN, o + 1, ll)
    if ll:
        nb = 2 * ll
        if nb > end - p:
            return fail(r, S_MP, F_LABEL, R_MP_LABELPAST, p, nb, _nonneg(end - p))
        if d[p + nb - 2] != 0 or d[p + nb - 1] != 0:
            return fail(r, S_MP, F_LABEL, R_MP_LABELNULL, p + nb - 2)
        if r.want_text[0]:
            utf16_append(label, d + p, ll - 1)
        valid(r, G_LABEL)
        p += nb
    if <int64_t>esize > end - p:
        return fail(r, S_MP, F_EXTENSIONSIZE, R_MP_EXT, o + 52, esize, p, _nonneg(end - p))
    ext_at = p
    p += esize
    if <int64_t>msize > end - p:
        return fail(r, S_MP, F_MESSAGESIZE, R_MP_BODY, o + 32, msize, p, _nonneg(end - p))
    body_at = p
    p += msize
    need = (4 - ((p - o) & 3)) & 3
    if need > end - p:
        return fail(r, S_MP, F_NONE, R_MP_PAD, p, need)
    pos = p + need
    if r.want[G_PROPS]:
        put8(r, N_PROPS_FLAGS, mflags)
        put8(r, N_PROPS_PA, mflags & 1)
        put8(r, N_PROPS_PR, (mflags >> 1) & 1)
        put8(r, N_PROPS_NA, (mflags >> 2) & 1)
        put8(r, N_PROPS_NR, (mflags >> 3) & 1)
        put8(r, N_PROPS_LABEL_LENGTH, ll)
        put16(r, N_PROPS_MESSAGE_CLASS, mclass)
        memcpy(r.corr + 20 * r.i, d + o + 4, 20)
        put32(r, N_PROPS_BODY_TYPE, rd32le(d + o + 24))
        put32(r, N_PROPS_APPLICATION_TAG, rd32le(d + o + 28))
        put32(r, N_PROPS_MESSAGE_SIZE, msize)
        put32(r, N_PROPS_ALLOCATION_BODY_SIZE, alloc)
        put32(r, N_PROPS_PRIVACY_LEVEL, rd32le(d + o + 40))
        put32(r, N_PROPS_HASH_ALGORITHM, rd32le(d + o + 44))
        put32(r, N_PROPS_ENCRYPTION_ALGORITHM, rd32le(d + o + 48))
        put32(r, N_PROPS_EXTENSION_SIZE, esize)
        put64(r, N_PROPS_EXTENSION_OFFSET, ext_at)
        put64(r, N_PROPS_BODY_OFFSET, body_at)
    valid(r, G_PROPS)
    # ---------------------------------------------------------------- DebugHeader
    if DH:
        if pos >= end:
            return fail(r, S_DEBUG, F_NONE, R_ANN_DH, pos, end)
        avail = end - pos
        if avail < 4:
            return fail_cut(r, S_DEBUG, CUT_DEBUG, pos, avail, R_TRUNC, 4, avail)
        dflags = rd16le(d + pos)
        qt = dflags & 3
        if qt > 1:
            return fail(r, S_DEBUG, F_FLAGS, R_DBG_QT, pos, qt)
        if r.want[G_DEBUG]:
            put16(r, N_DEBUG_FLAGS, dflags)
            put8(r, N_DEBUG_QT, qt)
            put16(r, N_DEBUG_RESERVED, rd16le(d + pos + 2))
        valid(r, G_DEBUG)
        pos += 4
        if qt == 1:
            if pos + 16 > end:
                return fail(r, S_DEBUG, F_QUEUEIDENTIFIER, R_DBG_QI, pos, _nonneg(end - pos))
            if r.want[G_DEBUG_QI]:
                put_guid(r, U_DEBUG_QUEUE_IDENTIFIER, pos)
            valid(r, G_DEBUG_QI)
            pos += 16
    # ---------------------------------------------------------------- end of the UserMessage
    if pos < end:
        return fail(r, S_USERMSG, F_NONE, R_REST, pos, end - pos)
    # OrderAck / FinalAck ([MS-MQQB] 3.1.5.1.1; packet._classify)
    kind = K_USER
    if bflags == 0 and ll == 16:
        ok = 1
        for k in range(15):
            if rd16le(d + o + 56 + 2 * k) != _ORDER_ACK_LABEL[k]:
                ok = 0
                break
        if ok and (mclass == 0xFF or mclass >= 0x4000):
            if dqs == 7:
                return FALLBACK_TEXT     # str.upper().endswith on the direct name
            if dqs == 3 and qd.ident == 4:
                kind = K_ORDER_ACK if mclass == 0xFF else K_FINAL_ACK
    # SessionHeader after PacketSize (BaseHeader.Flags.SH)
    stop = end
    if SH:
        if L - end < 16:
            return fail(r, S_SESSION, F_ACKSEQ, R_USH_TRUNC, end, _nonneg(L - end))
        session_cols(r, end)
        stop = end + 16
    # format names (presentation; decided last, after every check)
    if (qd.kind == 4 and direct_needs_python(r, &qd)) or (qa.kind == 4 and direct_needs_python(r, &qa)) \
            or (qr.kind == 4 and direct_needs_python(r, &qr)):
        return FALLBACK_TEXT
    render(r, tdq, G_DQ, dqs, &qd, &qa, aqs, r.want_text[1])
    render(r, taq, G_AQ, aqs, &qa, &qa, aqs, r.want_text[2])
    if rqs == 1:
        # "same as the administration queue": AQ's text once more
        if r.grp[G_AQ][r.i]:
            render(r, trq, G_RQ, aqs, &qa, &qa, aqs, r.want_text[3])
    else:
        render(r, trq, G_RQ, rqs, &qr, &qa, aqs, r.want_text[3])
    r.kind[r.i] = kind
    put64(r, N_PACKET_END, stop)
    valid(r, G_PACKET)
    return OK


# ------------------------------------------------------------------ statistics
cdef int64_t _st_records = 0
cdef int64_t _st_fallback_header = 0
cdef int64_t _st_fallback_text = 0


def stats():
    """Counters since import (or reset_stats): records walked, records handed
    to the pure codec for rare headers (SH/AH/HH/MQ) and for text whose
    presentation needs Python (see the module docstring)."""
    return {"records": _st_records, "fallback_rare_header": _st_fallback_header,
            "fallback_text": _st_fallback_text}


def reset_stats():
    global _st_records, _st_fallback_header, _st_fallback_text
    _st_records = 0
    _st_fallback_header = 0
    _st_fallback_text = 0


# ------------------------------------------------------------------ entry point
_ERROR_COLS = ("error_structure", "error_field", "error_offset", "error_reason", "raw")


_KIND_TEXT = [k.encode("ascii") for k in KINDS]
cdef int _KIND_LEN[7]
cdef char _KIND_CHARS[7][24]
for _k, _t in enumerate(_KIND_TEXT):
    assert len(_t) < 24
    _KIND_LEN[_k] = len(_t)
    for _j, _c in enumerate(_t):
        _KIND_CHARS[_k][_j] = _c


cdef int _kind_column(BatchExport ex, Py_ssize_t p, kinds, Py_ssize_t n) except -1:
    """Column ``p`` of ``ex``: ``kind`` (KINDS[k] per row; -1 = null), its
    validity, offsets and text written here."""
    cdef const int8_t[::1] kv = kinds
    cdef Py_ssize_t i, total = 0, nvalid = 0
    cdef int k
    for i in range(n):
        if kv[i] >= 0:
            total += _KIND_LEN[kv[i]]
            nvalid += 1
    offsets = np.empty(n + 1, np.int32)
    text = np.empty(total + 24, np.uint8)      # (each text is copied as 24 bytes, one fixed-size copy)
    bitmap = np.zeros(((n + 7) >> 3) + 1, np.uint8)
    cdef int32_t* ov = <int32_t*>cnp.PyArray_DATA(offsets)
    cdef char* t = <char*>cnp.PyArray_DATA(text)
    cdef uint8_t* bm = <uint8_t*>cnp.PyArray_DATA(bitmap)
    cdef int32_t at = 0
    with nogil:
        ov[0] = 0
        for i in range(n):
            k = kv[i]
            if k >= 0:
                memcpy(t + at, _KIND_CHARS[k], 24)
                at += _KIND_LEN[k]
                bm[i >> 3] |= <uint8_t>(1 << (i & 7))
            ov[i + 1] = at
    ex.column(p, n - nvalid, 3, bm, ov, t)
    ex.keep(offsets)
    ex.keep(text)
    ex.keep(bitmap)
    return 0


_SCHEMAS = {}


def _selected_schema(columns):
    """The schema of a selection (kept: a job asks for the same few again and again)."""
    schema = _SCHEMAS.get(columns)
    if schema is None:
        if len(_SCHEMAS) > 64:
            _SCHEMAS.clear()
        schema = _SCHEMAS[columns] = pa.schema([MSMQ_PACKETS.field(c) for c in columns])
    return schema


cdef class _Plan:
    """Where the columns the walk builds go in a schema (-1, or absent: not selected)."""
    cdef int record, kind, corr
    cdef list nums     # (numeric column, position, validity group, boolean?)
    cdef list guids    # (GUID column, position, group)
    cdef list texts    # (text column, position, group)
    cdef list errors   # (name, position)
    cdef bytes null_layouts  # (arrow_export.pxi)
    # 1 where selected: each numeric, text and GUID column; 1 where a selected
    # column belongs to the validity group (its values are then written)
    cdef bytes sel_num, sel_text, sel_guid, want_group


_PLANS = {}


cdef _Plan _plan_of(schema):
    """The plan of a schema (kept: by the schema object, which _selected_schema keeps)."""
    entry = _PLANS.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    pos = {name: i for i, name in enumerate(schema.names)}
    cdef _Plan plan = _Plan()
    plan.record = pos.get("record", -1)
    plan.kind = pos.get("kind", -1)
    plan.corr = pos.get("props_correlation_id", -1)
    plan.nums = [(k, pos[m[0]], m[2], m[3]) for k, m in enumerate(_NUM_META) if m[0] in pos]
    plan.guids = [(k, pos[name], g) for k, (name, g) in enumerate(_GUID_COLS) if name in pos]
    plan.texts = [(k, pos[name], g) for k, (name, g) in enumerate(_TEXT_COLS) if name in pos]
    plan.errors = [(name, pos[name]) for name in _ERROR_COLS if name in pos]
    plan.null_layouts = null_layouts(schema)
    plan.sel_num = bytes([name in pos for name in _NUM_NAMES])
    plan.sel_text = bytes([name in pos for name, _ in _TEXT_COLS])
    plan.sel_guid = bytes([name in pos for name, _ in _GUID_COLS])
    groups = {_GROUP_OF.get(name, G_NEVER) for name in pos}
    every = schema is MSMQ_PACKETS
    plan.want_group = bytes([every or g in groups for g in range(NGROUPS)])
    if len(_PLANS) > 64:
        _PLANS.clear()
    _PLANS[id(schema)] = (schema, plan)
    return plan


_ZEROS = [pa.py_buffer(b"")]


def _zeros(nbytes):
    """A zeroed buffer of at least ``nbytes`` (one kept and shared, as Arrow buffers
    are never written: the all-null columns of every call read the same one)."""
    if _ZEROS[0].size < nbytes:
        _ZEROS[0] = pa.py_buffer(np.zeros(max(nbytes, 2 * _ZEROS[0].size), np.uint8))
    return _ZEROS[0]


def decode_msmq_buffers(buf, offsets, *, valid=None, columns=None, first=0):
    """Decode MSMQ packets ``buf[offsets[i]:offsets[i+1]]`` (one packet per
    record, from its first byte).  ``buf``: any contiguous bytes-like;
    ``offsets``: n+1 offsets; ``valid``: optional array, 0/False = null
    record.  Returns a ``pyarrow.RecordBatch`` in schema ``MSMQ_PACKETS``,
    or with ``columns`` (names of MSMQ_PACKETS fields) only those columns,
    in that order: every packet is still checked in full, but the values of
    headers none of whose columns is selected are not written, and the text,
    GUID and Arrow work of the other columns is skipped.  ``first``: the
    number of the first record (the ``record`` column counts from it)."""
    global _st_records, _st_fallback_header, _st_fallback_text
    columns = _pure.check_columns(columns)
    schema = MSMQ_PACKETS if columns is None else _selected_schema(tuple(columns))
    cdef _Plan plan = _plan_of(schema)
    cdef bint every = columns is None
    mv, buflen, offs_np, valid_np = _checked_input(buf, offsets, valid)
    cdef const uint8_t[::1] data = mv
    cdef const int64_t[::1] offs = offs_np
    cdef Py_ssize_t n = offs.shape[0] - 1, i
    cdef const uint8_t[::1] vmask
    cdef bint has_valid = valid_np is not None
    if has_valid:
        vmask = valid_np
    # ---- output arrays
    cdef Run r
    memset(&r, 0, sizeof(Run))
    r.n = n
    cdef int k
    for k in range(len(_TEXT_COLS)):
        r.want_text[k] = plan.sel_text[k]
    for k in range(NGROUPS):
        r.want[k] = plan.want_group[k]
    # the selected numeric columns share one block, each at a 64-byte boundary (the
    # batch is imported whole: its columns are released together anyway); the columns
    # not selected are written by the walk all the same, into one scratch column
    # (8 bytes a row) at its end: one stream of stores instead of one per column
    cdef Py_ssize_t at[NNUM]
    cdef Py_ssize_t total = 0, slot
    for k in range(NNUM):
        if plan.sel_num[k]:
            at[k] = total
            total += (_NUM_WIDTHS_C[k] * n + 63) & ~(<Py_ssize_t>63)
        else:
            at[k] = -1
    slot = total
    if not every:
        total += 8 * n
    numbers = np.empty(total + 64, np.uint8)   # (null slots stay undefined, as Arrow allows)
    cdef uint8_t* nb = <uint8_t*>cnp.PyArray_DATA(numbers)
    nb += (64 - (<uintptr_t>nb & 63)) & 63
    for k in range(NNUM):
        r.num[k] = nb + (at[k] if at[k] >= 0 else slot)
    groups = np.zeros(NGROUPS * n, np.uint8).reshape(NGROUPS, n)
    a = groups
    for k in range(NGROUPS):
        r.grp[k] = <uint8_t*>cnp.PyArray_DATA(a) + k * n
    # one slot a GUID column, and a last one the columns not selected share
    guids = np.empty((NGUID + 1) * n * 16, np.uint8).reshape(NGUID + 1, n, 16)
    a = guids
    for k in range(NGUID):
        r.guid[k] = <uint8_t*>cnp.PyArray_DATA(a) + (k if plan.sel_guid[k] else NGUID) * n * 16
    kinds = np.empty(n, np.int8)
    kinds.fill(-1)
    a = kinds
    r.kind = <int8_t*>cnp.PyArray_DATA(a)
    corr = np.empty(n * 20, np.uint8).reshape(n, 20)
    a = corr
    r.corr = <uint8_t*>cnp.PyArray_DATA(a)
    outcome = np.zeros(n, np.uint8)
    cdef uint8_t[::1] outv = outcome
    e_struct = np.zeros(n, np.int32)
    e_field = np.zeros(n, np.int32)
    e_reason = np.zeros(n, np.int32)
    e_offset = np.empty(n, np.int64)
    e_args = np.empty(3 * n, np.int64).reshape(n, 3)
    cdef int32_t[::1] esv = e_struct, efv = e_field, erv = e_reason
    cdef int64_t[::1] eov = e_offset
    cdef int64_t[:, ::1] eav = e_args
    cdef _Text tl = _Text(), tdq = _Text(), taq = _Text(), trq = _Text()
    cdef _Text tt
    cdef size_t m0, m1, m2, m3
    cdef int res, g
    cdef int64_t nfb_h = 0, nfb_t = 0
    for tt in (tl, tdq, taq, trq):
        tt.arr = np.zeros(n + 1, np.int32)
        a = tt.arr
        tt.offs = <int32_t*>cnp.PyArray_DATA(a)
    with nogil:
        for i in range(n):
            r.i = i
            m0 = tl.size; m1 = tdq.size; m2 = taq.size; m3 = trq.size
            if has_valid and not vmask[i]:
                res = ERR
                r.err.structure = S_RECORD; r.err.field = F_NONE; r.err.reason = R_NULL
                r.err.offset = 0; r.err.a0 = 0; r.err.a1 = 0; r.err.a2 = 0
            else:
                if i + PREFETCH < n:
                    # the headers of a record some records ahead (the input is read once,
                    # headers only: the bodies between them are skipped)
                    __builtin_prefetch(&data[0] + offs[i + PREFETCH])
                    __builtin_prefetch(&data[0] + offs[i + PREFETCH] + 64)
                    __builtin_prefetch(&data[0] + offs[i + PREFETCH] + 128)
                r.d = &data[0] + offs[i]
                r.L = offs[i + 1] - offs[i]
                res = walk(&r, tl, tdq, taq, trq)
            if res != OK:
                # nothing but the error columns (or the pure row) for this record
                for g in range(NGROUPS):
                    r.grp[g][i] = 0
                r.kind[i] = -1
                tl.size = m0; tdq.size = m1; taq.size = m2; trq.size = m3
                if res == ERR:
                    esv[i] = r.err.structure; efv[i] = r.err.field; erv[i] = r.err.reason
                    eov[i] = r.err.offset
                    eav[i, 0] = r.err.a0; eav[i, 1] = r.err.a1; eav[i, 2] = r.err.a2
                elif res == FALLBACK_HEADER:
                    nfb_h += 1
                else:
                    nfb_t += 1
            outv[i] = res
            tl.offs[i + 1] = <int32_t>tl.size; tdq.offs[i + 1] = <int32_t>tdq.size
            taq.offs[i + 1] = <int32_t>taq.size; trq.offs[i + 1] = <int32_t>trq.size
    if tl.failed or tdq.failed or taq.failed or trq.failed:
        raise MemoryError("MSMQ batch: no memory for the text columns of %d records" % n)
    _st_records += n
    _st_fallback_header += nfb_h
    _st_fallback_text += nfb_t
    # ---- columns (a validity bitmap per header group, values zero-copy), handed
    # to Arrow in one import (arrow_export.pxi)
    cdef BatchExport ex = BatchExport(len(schema), n)
    cdef Py_ssize_t nbm = (n + 7) >> 3
    cdef int64_t counts[NGROUPS]
    bitmaps = np.empty(NGROUPS * nbm + 1, np.uint8)
    ex.keep(bitmaps)
    cdef uint8_t* bm = <uint8_t*>cnp.PyArray_DATA(bitmaps)
    cdef const uint8_t* gv
    cdef Py_ssize_t j
    with nogil:
        for k in range(NGROUPS):
            gv = r.grp[k]
            counts[k] = count_set(gv, n)
            if 0 < counts[k] < n:
                pack_bits(gv, n, bm + k * nbm)
    cdef int p
    if plan.record >= 0:
        a = np.arange(first, first + n, dtype=np.int64)
        ex.column(plan.record, 0, 2, NULL, cnp.PyArray_DATA(a), NULL)
        ex.keep(a)
    if plan.kind >= 0:
        _kind_column(ex, plan.kind, kinds, n)
    for k, p, g, is_bool in plan.nums:
        if counts[g] == 0:
            continue                     # all null
        if is_bool:                      # its bytes become its bits, in place
            pack_bits(<const uint8_t*>r.num[k], n, <uint8_t*>r.num[k])
        ex.column(p, n - counts[g], 2, bm + g * nbm, r.num[k], NULL)
    ex.keep(numbers)
    cdef char* gt
    cdef char* shrunk
    cdef int32_t* go
    cdef const uint8_t* graw
    for k, p, g in plan.guids:
        if counts[g] == 0:
            continue
        text = np.empty(counts[g] * 36, np.uint8)
        a = text
        gt = <char*>cnp.PyArray_DATA(a)
        offs36 = np.empty(n + 1, np.int32)
        a = offs36
        go = <int32_t*>cnp.PyArray_DATA(a)
        a = guids
        graw = <const uint8_t*>cnp.PyArray_DATA(a) + k * n * 16
        gv = r.grp[g]
        with nogil:
            go[0] = 0
            for j in range(n):
                if gv[j]:
                    guid_text(gt + go[j], graw + 16 * j, _HEX2_LO)
                    go[j + 1] = go[j] + 36
                else:
                    go[j + 1] = go[j]             # null rows: empty
        ex.column(p, n - counts[g], 3, bm + g * nbm, go, gt)
        ex.keep(offs36)
        ex.keep(text)
    texts = (tl, tdq, taq, trq)
    for k, p, g in plan.texts:
        tt = texts[k]
        if counts[g] == 0:
            continue
        if tt.size > 0x7FFFFFFF:
            raise OverflowError("more than 2 GiB of text in one column: decode in smaller batches")
        if tt.cap - tt.size > tt.cap // 4 and tt.size:    # held as long as the batch: no slack
            shrunk = <char*>realloc(tt.data, tt.size)
            if shrunk != NULL:
                tt.data = shrunk
                tt.cap = tt.size
        ex.column(p, n - counts[g], 3, bm + g * nbm, tt.offs, tt.data)
        ex.keep(tt)                      # (its offsets, and its text until the batch goes)
    if plan.corr >= 0 and counts[G_PROPS]:
        ex.column(plan.corr, n - counts[G_PROPS], 2, bm + G_PROPS * nbm, cnp.PyArray_DATA(corr), NULL)
        ex.keep(corr)
    failed = outcome == ERR
    if failed.any() and plan.errors:
        es = [None] * n
        ef = [None] * n
        er = [None] * n
        raw = [None] * n
        for j in np.flatnonzero(failed).tolist():   # only failing records become Python objects
            es[j] = _pure.STRUCTURES[e_struct[j]]
            ef[j] = _pure.FIELDS[e_field[j]]
            rec = None if (has_valid and not valid_np[j]) else bytes(mv[offs_np[j]:offs_np[j + 1]])
            er[j] = _pure.reason_text(int(e_reason[j]), e_args[j], rec)
            raw[j] = rec
        errors = {"error_structure": pa.array(es, pa.string()), "error_field": pa.array(ef, pa.string()),
                  "error_offset": _ak.from_numpy(e_offset, pa.int64(), ~failed),
                  "error_reason": pa.array(er, pa.string()), "raw": pa.array(raw, pa.binary())}
        for name, p in plan.errors:
            ex.array(p, errors[name])
    # the rest is all null (or only the pure codec decodes it): one shared zeroed buffer
    zeros = _zeros(24 * n + 64)
    ex.keep(zeros)
    ex.nulls(schema, plan.null_layouts, <const void*><uintptr_t>zeros.address)
    batch = ex.batch(schema)
    # ---- records handed to the pure codec: their rows replace the empty ones
    fb = np.flatnonzero(outcome >= FALLBACK_HEADER)
    if len(fb):
        recs = [bytes(mv[offs_np[j]:offs_np[j + 1]]) for j in fb.tolist()]
        pure = _pure.decode_records(recs, record_numbers=fb + first)
        if columns is not None:
            pure = pure.select(columns)
        idx = np.arange(n, dtype=np.int64)
        idx[fb] = n + np.arange(len(fb), dtype=np.int64)
        batch = _ak.take(pa.concat_batches([batch, pure]), _ak.int64s(idx))
    return batch
