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

# the data of the segments (eye-catchers, lengths, segment types, flags) lives in .wire,
# which loads without construct; re-exported here next to the declarations
from .wire import (  # noqa: F401
    BIG, BYTE_ORDER_BIG, BYTE_ORDER_LITTLE, CAUT_IDS, GMO_IDS, ID_IDS, LITTLE, MD_IDS, MQ_MAXMSGL_CEILING,
    MQGMO_LENGTHS, MQMD_LENGTHS, MQOD_LENGTHS, MQPMO_LENGTHS, MSH_IDS, OD_IDS, PMO_IDS, SEGMENT_TYPE_VALUES,
    SEGMENT_TYPES, TCF_CLOSE_CHANNEL, TCF_CONFIRM_REQUEST, TCF_DLQ_USED, TCF_ERROR, TCF_FIRST, TCF_LAST,
    TCF_REQUEST_ACCEPTED, TCF_REQUEST_CLOSE, TSH_IDS, TSH_IDS_EBCDIC, TSH_LENGTH, TSHM_LENGTH, UID_IDS, XQH_IDS,
    order_of, segment_type_name,
)

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


#: MQOD, object descriptor (MQPUT1): versions 1-4 are 168, 200, 336, 400
#: bytes; version 2 and later may be followed by RecsPresent object records
#: (96 bytes each, when ObjectRecOffset is not 0) and response records (8
#: bytes each, when ResponseRecOffset is not 0); the lengths are .wire's MQOD_LENGTHS.
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
