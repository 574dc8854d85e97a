"""IBM MQ on TCP: the transmission segment header (TSH, TSHM, TSHC), the API
header and the structures that sit between them and the MQMD.

IBM does not publish the MQ FAP (the wire protocol).  The layouts below are
the ones Wireshark's MQ dissector (``epan/dissectors/packet-mq.c`` and
``packet-mq.h``) decodes, with its field names; the MQI structures (MQPMO,
MQGMO, MQOD) use IBM's field names from the MQ reference.  See
``docs/ibmmq-framing.md`` for the facts and the decisions.

Byte order
----------
* ``MQSegmLen`` (and the TSHM ``ConversID``/``RequestID``, and the API
  header's ``ReplyLength``) are always big-endian.
* ``ByteOrder`` (one byte: 1 = big-endian, 2 = little-endian) decides every
  other integer of the segment: the rest of the TSH, the API header, the MQI
  structures and the MQMD.
* The TSH ``Encoding`` field is an MQENC naming the application data; it is
  *not* the byte order of the TSH (the IBM MQ classes for Java send
  ``ByteOrder`` 2 with ``Encoding`` 273).

Declarations are plain ``construct`` structs, one per byte order, indexed
``DECL[order]`` with ``order`` "big" or "little".
"""
from __future__ import annotations

import construct as cs

__all__ = [
    "BIG", "LITTLE", "BYTE_ORDER_BIG", "BYTE_ORDER_LITTLE", "order_of",
    "TSH_IDS", "TSH_IDS_EBCDIC", "TSH_LENGTH", "TSHM_LENGTH",
    "MD_IDS", "PMO_IDS", "GMO_IDS", "OD_IDS", "XQH_IDS", "MSH_IDS", "ID_IDS", "UID_IDS", "CAUT_IDS",
    "TSH_DECL", "TSHM_DECL", "API_HEADER_DECL", "API_HEADER_LENGTH",
    "ASYNC_HEADER_DECL", "ASYNC_HEADER_SHORT_LENGTH", "ASYNC_HEADER_FIXED_LENGTH",
    "MSH_DECL", "MSH_LENGTH", "XQH_PREFIX_DECL", "XQH_PREFIX_LENGTH",
    "MQPMO_DECL", "MQPMO_LENGTHS", "MQGMO_DECL", "MQGMO_LENGTHS", "MQOD_LENGTHS", "MQOD_PREFIX_DECL", "MQOD_DECL",
    "MQMD_LENGTHS",
    "SEGMENT_TYPES", "SEGMENT_TYPE_VALUES", "segment_type_name",
    "TCF_CONFIRM_REQUEST", "TCF_ERROR", "TCF_REQUEST_CLOSE", "TCF_CLOSE_CHANNEL",
    "TCF_FIRST", "TCF_LAST", "TCF_REQUEST_ACCEPTED", "TCF_DLQ_USED",
    "MQ_MAXMSGL_CEILING",
]

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


_I32 = {BIG: cs.Int32sb, LITTLE: cs.Int32sl}
_U32 = {BIG: cs.Int32ub, LITTLE: cs.Int32ul}
_I16 = {BIG: cs.Int16sb, LITTLE: cs.Int16sl}
_U16 = {BIG: cs.Int16ub, LITTLE: cs.Int16ul}
_I64 = {BIG: cs.Int64sb, LITTLE: cs.Int64sl}


def _both(fn):
    return {BIG: fn(BIG), LITTLE: fn(LITTLE)}


def _tsh_tail(o):
    # the part of TSH/TSHC/TSHM after MQSegmLen (TSHM: after RequestID)
    return [
        "ByteOrder" / cs.Int8ub,      # 1 big-endian, 2 little-endian
        "SegmType" / cs.Int8ub,       # SEGMENT_TYPES
        "CtlFlag1" / cs.Int8ub,       # TCF_*
        "CtlFlag2" / cs.Int8ub,       # HDRCOMP 0x01, MSGCOMP 0x02, CSH 0x04, CMIT_INTERVAL 0x08
        "LUWIdent" / cs.Bytes(8),     # logical unit of work identifier
        "Encoding" / _I32[o],         # MQENC of the application data
        "CCSID" / _I16[o],            # coded character set of the segment's strings
        "Reserved" / _U16[o],
    ]


#: TSH and TSHC (28 bytes).
TSH_DECL = _both(lambda o: cs.Struct(
    "StructID" / cs.Bytes(4),
    "MQSegmLen" / cs.Int32ub,         # always big-endian: the whole segment, header included
    *_tsh_tail(o),
))

#: TSHM (36 bytes): the multiplexed header of shared conversations.
TSHM_DECL = _both(lambda o: cs.Struct(
    "StructID" / cs.Bytes(4),
    "MQSegmLen" / cs.Int32ub,
    "ConversID" / cs.Int32ub,         # always big-endian
    "RequestID" / cs.Int32ub,         # always big-endian
    *_tsh_tail(o),
))

#: API header, after the TSH of the first segment of types 0x80..0x9F.
API_HEADER_DECL = _both(lambda o: cs.Struct(
    "ReplyLength" / cs.Int32ub,       # always big-endian
    "CompCode" / _I32[o],
    "Reason" / _I32[o],
    "Hobj" / _I32[o],                 # object handle
))
API_HEADER_LENGTH = 16

#: ASYNC_MESSAGE header.  The first segment of a message (SegmIndex 0)
#: carries the long form: the fixed 55 bytes below, then ResolQName
#: (ResolQNLn bytes) and padding to a multiple of 4; later segments carry
#: only the first 24 bytes.
ASYNC_HEADER_DECL = _both(lambda o: cs.Struct(
    "Version" / _I32[o],
    "Hobj" / _I32[o],
    "MsgIndex" / _I32[o],
    "GlbMsgIdx" / _I32[o],
    "SegLength" / _I32[o],
    "SegmIndex" / _U16[o],
    "SeleIndex" / _U16[o],
    # long form only:
    "ReasonCode" / _I32[o],
    "TotMsgLen" / _I32[o],
    "ActMsgLen" / _I32[o],
    "MsgToken" / cs.Bytes(16),
    "Status" / _U16[o],
    "ResolQNLn" / cs.Int8ub,
))
ASYNC_HEADER_SHORT_LENGTH = 24
ASYNC_HEADER_FIXED_LENGTH = 55

#: MSH, message segment header (channel MESSAGE_DATA, before the MQXQH).
MSH_DECL = _both(lambda o: cs.Struct(
    "StructID" / cs.Bytes(4),
    "SeqNum" / _I32[o],
    "DataLength" / _I32[o],
    "Unknown1" / _I32[o],
    "MsgLength" / _I32[o],
))
MSH_LENGTH = 20

#: MQXQH up to its embedded MQMD (MsgDesc, an MQMD version 1).
XQH_PREFIX_DECL = _both(lambda o: cs.Struct(
    "StrucId" / cs.Bytes(4),
    "Version" / _I32[o],
    "RemoteQName" / cs.Bytes(48),
    "RemoteQMgrName" / cs.Bytes(48),
))
XQH_PREFIX_LENGTH = 104

MQMD_LENGTHS = {1: 324, 2: 364}


def _pmo(o):
    return cs.Struct(
        "StrucId" / cs.Bytes(4),
        "Version" / _I32[o],
        "Options" / _I32[o],
        "Timeout" / _I32[o],
        "Context" / _I32[o],
        "KnownDestCount" / _I32[o],
        "UnknownDestCount" / _I32[o],
        "InvalidDestCount" / _I32[o],
        "ResolvedQName" / cs.Bytes(48),
        "ResolvedQMgrName" / cs.Bytes(48),
        # version 2
        "RecsPresent" / cs.If(cs.this.Version >= 2, _I32[o]),
        "PutMsgRecFields" / cs.If(cs.this.Version >= 2, _I32[o]),
        "PutMsgRecOffset" / cs.If(cs.this.Version >= 2, _I32[o]),
        "ResponseRecOffset" / cs.If(cs.this.Version >= 2, _I32[o]),
        "PutMsgRecPtr" / cs.If(cs.this.Version >= 2, _I32[o]),
        "ResponseRecPtr" / cs.If(cs.this.Version >= 2, _I32[o]),
        # version 3
        "OriginalMsgHandle" / cs.If(cs.this.Version >= 3, _I64[o]),
        "NewMsgHandle" / cs.If(cs.this.Version >= 3, _I64[o]),
        "Action" / cs.If(cs.this.Version >= 3, _I32[o]),
        "PubLevel" / cs.If(cs.this.Version >= 3, _I32[o]),
    )


#: MQPMO, put-message options (versions 1-3: 128, 152, 176 bytes on the wire).
MQPMO_DECL = _both(_pmo)
MQPMO_LENGTHS = {1: 128, 2: 152, 3: 176}


def _gmo(o):
    return cs.Struct(
        "StrucId" / cs.Bytes(4),
        "Version" / _I32[o],
        "Options" / _I32[o],
        "WaitInterval" / _I32[o],
        "Signal1" / _I32[o],
        "Signal2" / _I32[o],
        "ResolvedQName" / cs.Bytes(48),
        # version 2
        "MatchOptions" / cs.If(cs.this.Version >= 2, _I32[o]),
        "GroupStatus" / cs.If(cs.this.Version >= 2, cs.Bytes(1)),
        "SegmentStatus" / cs.If(cs.this.Version >= 2, cs.Bytes(1)),
        "Segmentation" / cs.If(cs.this.Version >= 2, cs.Bytes(1)),
        "Reserved1" / cs.If(cs.this.Version >= 2, cs.Bytes(1)),
        # version 3
        "MsgToken" / cs.If(cs.this.Version >= 3, cs.Bytes(16)),
        "ReturnedLength" / cs.If(cs.this.Version >= 3, _I32[o]),
        # version 4
        "Reserved2" / cs.If(cs.this.Version >= 4, _I32[o]),
        "MsgHandle" / cs.If(cs.this.Version >= 4, _I64[o]),
    )


#: MQGMO, get-message options (versions 1-4: 72, 80, 100, 112 bytes).
MQGMO_DECL = _both(_gmo)
MQGMO_LENGTHS = {1: 72, 2: 80, 3: 100, 4: 112}

#: MQOD, object descriptor (MQPUT1): versions 1-4 are 168, 200, 336, 400
#: bytes; version 2 and later may be followed by RecsPresent object records
#: (96 bytes each, when ObjectRecOffset is not 0) and response records (8
#: bytes each, when ResponseRecOffset is not 0).
MQOD_LENGTHS = {1: 168, 2: 200, 3: 336, 4: 400}
def _mqod(o: str, *, versions: bool) -> cs.Struct:
    """The MQOD: version 1's fields, and with ``versions`` those of 2-4."""
    fields = [
        "StrucId" / cs.Bytes(4),
        "Version" / _I32[o],
        "ObjectType" / _I32[o],
        "ObjectName" / cs.Bytes(48),
        "ObjectQMgrName" / cs.Bytes(48),
        "DynamicQName" / cs.Bytes(48),
        "AlternateUserId" / cs.Bytes(12),
    ]
    if versions:
        fields += [
            # version 2
            "RecsPresent" / cs.If(cs.this.Version >= 2, _I32[o]),
            "KnownDestCount" / cs.If(cs.this.Version >= 2, _I32[o]),
            "UnknownDestCount" / cs.If(cs.this.Version >= 2, _I32[o]),
            "InvalidDestCount" / cs.If(cs.this.Version >= 2, _I32[o]),
            "ObjectRecOffset" / cs.If(cs.this.Version >= 2, _I32[o]),
            "ResponseRecOffset" / cs.If(cs.this.Version >= 2, _I32[o]),
            "ObjectRecPtr" / cs.If(cs.this.Version >= 2, _I32[o]),
            "ResponseRecPtr" / cs.If(cs.this.Version >= 2, _I32[o]),
            # version 3
            "AlternateSecurityId" / cs.If(cs.this.Version >= 3, cs.Bytes(40)),
            "ResolvedQName" / cs.If(cs.this.Version >= 3, cs.Bytes(48)),
            "ResolvedQMgrName" / cs.If(cs.this.Version >= 3, cs.Bytes(48)),
            # version 4: three MQCHARV (20 bytes with a 4-byte pointer) and ResolvedType
            "ObjectString" / cs.If(cs.this.Version >= 4, cs.Bytes(20)),
            "SelectionString" / cs.If(cs.this.Version >= 4, cs.Bytes(20)),
            "ResObjectString" / cs.If(cs.this.Version >= 4, cs.Bytes(20)),
            "ResolvedType" / cs.If(cs.this.Version >= 4, _I32[o]),
        ]
    return cs.Struct(*fields)


#: the MQOD's version-1 part, which every version starts with (the framer reads only it)
MQOD_PREFIX_DECL = _both(lambda o: _mqod(o, versions=False))
#: the whole MQOD, versions 1-4 (168, 200, 336, 400 bytes)
MQOD_DECL = _both(lambda o: _mqod(o, versions=True))
