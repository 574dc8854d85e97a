"""Data sets the benchmarks make for themselves (never committed).

``trace_route_messages(n)``: n PCF trace-route messages (MQCFH type
MQCFT_TRACE_ROUTE, command MQCMD_TRACE_ROUTE) holding the TraceRoute group
and Activity -> Operation -> Message -> MQMD groups (four levels of groups,
parameters at depth 4), half big-endian and half little-endian.  A few
hundred distinct messages are encoded with the project's own encoder and
tiled to n records with numpy, so a million records take seconds.
"""
from __future__ import annotations

import numpy as np

from mqcodec.ibmmq import constants as C
from mqcodec.ibmmq.pcf import PcfMessage, PcfParameter as P, encode_pcf

DISTINCT = 256


def _activity(i: int, hop: int) -> P:
    md = P.group(C.MQGACF_MQMD, [
        P.byte_string(C.MQBACF_MSG_ID, (i * 7919 + hop).to_bytes(24, "big")),
        P.integer(C.MQIACF_ENCODING, 273 if i % 2 else 546),
        P.integer(C.MQIA_CODED_CHAR_SET_ID, 1208),
        P.string(C.MQCACH_FORMAT_NAME if hasattr(C, "MQCACH_FORMAT_NAME") else 3507, "MQADMIN "),
    ])
    message = P.group(C.MQGACF_MESSAGE, [md])
    operation = P.group(C.MQGACF_OPERATION, [
        P.integer(C.MQIACF_OPERATION_TYPE, C.MQOPER_PUT),
        P.string(C.MQCACF_OPERATION_DATE, "2026-11-%02d" % (1 + i % 28)),
        P.string(C.MQCACF_OPERATION_TIME, "%02d.%02d.%02d" % (i % 24, hop, i % 60)),
        P.string(C.MQCA_Q_MGR_NAME, "QM%d" % hop),
        P.string(C.MQCA_Q_NAME, "APP.QUEUE.%d" % (i % 97)),
        message,
    ])
    return P.group(C.MQGACF_ACTIVITY, [
        P.string(C.MQCACF_APPL_NAME, "amqrmppa"),
        P.integer(C.MQIA_APPL_TYPE, 7),
        P.string(C.MQCACF_ACTIVITY_DESC, "Sending Message Channel Agent"),
        operation,
    ])


def trace_route_message(i: int) -> bytes:
    hops = 1 + i % 4
    trace = P.group(C.MQGACF_TRACE_ROUTE, [
        P.integer(C.MQIACF_ROUTE_DETAIL, C.MQROUTE_DETAIL_MEDIUM),
        P.integer(C.MQIACF_RECORDED_ACTIVITIES, hops),
        P.integer(C.MQIACF_UNRECORDED_ACTIVITIES, 0),
        P.integer(C.MQIACF_DISCONTINUITY_COUNT, 0),
        P.integer(C.MQIACF_MAX_ACTIVITIES, -1),
        P.integer(C.MQIACF_ROUTE_ACCUMULATION, 2),
        P.integer(C.MQIACF_ROUTE_FORWARDING, 0x100),
        P.integer(C.MQIACF_ROUTE_DELIVERY, 2),
    ])
    msg = PcfMessage.new(C.MQCFT_TRACE_ROUTE, C.MQCMD_TRACE_ROUTE,
                         [trace] + [_activity(i, h) for h in range(hops)],
                         encoding=273 if i % 2 else 546)
    return encode_pcf(msg)


def distinct_messages(k: int = DISTINCT) -> list[bytes]:
    return [trace_route_message(i) for i in range(k)]


def tile(records: list, n: int):
    """(buffer as numpy uint8, int64 offsets) of n records repeating ``records`` in order:
    a million records in seconds, whatever encoder made the originals."""
    lens = np.array([len(m) for m in records], dtype=np.int64)
    pool = np.frombuffer(b"".join(records), dtype=np.uint8)
    reps, rem = divmod(n, len(records))
    buf = np.concatenate([np.tile(pool, reps), pool[: int(lens[:rem].sum())]])
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.concatenate([np.tile(lens, reps), lens[:rem]]), out=offsets[1:])
    return buf, offsets


def tiled(n: int, k: int = DISTINCT):
    """n trace-route PCF records tiled from k distinct ones (see :func:`tile`)."""
    return tile(distinct_messages(min(k, n)), n)
