"""The output tables of the main job and their schemas (the sinks that write
them: :mod:`mqcodec.convert.sinks`; their keys: :mod:`mqcodec.convert.keys`).

One Parquet dataset per table, the same layout whichever engine writes it::

    OUTDIR/mq_messages/part-00000-c000.parquet       IBM MQ messages and MQ framing errors
    OUTDIR/msmq_packets/part-00000-c000.parquet      MSMQ packets (pings included) and MSMQ framing errors
    OUTDIR/pcf_parameters/part-00000-c000.parquet    PCF parameters of MQ messages with a PCF body
    OUTDIR/mq_calls/part-00000-c000.parquet          IBM MQ protocol units (every segment type), paired
    (with partitioning by date: OUTDIR/<table>/date=YYYY-MM-DD/part-*.parquet)

Each table is self-contained: the common columns (:data:`COMMON`) then only
its own protocol's columns, all snake_case.  The types are the ones every
reader takes as they are (pyarrow, pandas, Polars, DuckDB, Spark):

* ``ts`` is ``TIMESTAMP(MICROS, UTC)``; ``ts_nanos`` keeps the nanoseconds
  within that microsecond (0 for captures with microsecond resolution);
* unsigned integers are widened to the next signed type (Spark has none);
* low-cardinality strings are dictionary-encoded (:data:`DICTIONARY`).

Everything here is derived from :mod:`mqcodec.batch.schema`, the one Arrow
definition of the decoded columns; nothing is spelt twice.
"""
from __future__ import annotations

from typing import Callable

import pyarrow as pa

from ..batch import schema as _schema

__all__ = [
    "TABLES", "MQ_MESSAGES", "MSMQ_PACKETS", "PCF_PARAMETERS", "MQ_CALLS", "COMMON", "MQ_LINK", "DICTIONARY",
    "table_schema", "widen_unsigned", "Sink", "NAMED", "name_column", "snake_case", "BLOCK_SCHEMA",
    "MAX_CONFLICT_RANGES", "KEY_COLUMN", "check_columns", "chosen_columns", "output_schema", "words",
    "where_seen",
]

MQ_MESSAGES = "mq_messages"
MSMQ_PACKETS = "msmq_packets"
PCF_PARAMETERS = "pcf_parameters"
MQ_CALLS = "mq_calls"
#: every table of the main job, in the order they are listed to users
TABLES = (MQ_MESSAGES, MSMQ_PACKETS, PCF_PARAMETERS, MQ_CALLS)

#: overlap_conflict: the [start, end) ranges of differing copies a direction keeps
#: until a row starts past them; beyond this many the two latest are merged
#: (a row is flagged a little more often, never less)
MAX_CONFLICT_RANGES = 256

#: a sink takes (table name, rows of that table's schema)
Sink = Callable[[str, pa.Table], None]


_DICT = pa.dictionary(pa.int32(), pa.string())

#: the last columns of every row table: what failed and where (null when the unit
#: decoded), the unit's length and bytes (error rows always; every row with --raw)
_ERROR_AND_BYTES = [
    pa.field("error", _DICT),
    pa.field("error_structure", _DICT),
    pa.field("error_field", _DICT),
    pa.field("error_offset", pa.int64()),
    pa.field("length", pa.int64()),
    pa.field("raw", pa.binary()),
]

#: columns every message table (mq_messages, msmq_packets) starts with
COMMON = [
    # capture index << 49 | frame << 17 | rank (KEY_*, MessageKeys): unique in one job
    # across the message tables, from the input only; the join key of pcf_parameters
    pa.field("message_key", pa.int64(), nullable=False),
    pa.field("capture", _DICT, nullable=False),
    pa.field("frame", pa.int64()),          # 1-based, as tshark's frame.number: the frame of the first byte
    pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("ts_nanos", pa.int16()),       # nanoseconds within ts's microsecond
    pa.field("src_ip", _DICT),
    pa.field("src_port", pa.int32()),
    pa.field("dst_ip", _DICT),
    pa.field("dst_port", pa.int32()),
    pa.field("tcp_stream", pa.int64()),     # tshark's tcp.stream; null for UDP (MSMQ ping)
    pa.field("stream_offset", pa.int64()),
    # True when a retransmitted or overlapping TCP copy of some of the unit's bytes
    # differed from the copy received first, which the row keeps (docs/ROBUSTNESS.md)
    pa.field("overlap_conflict", pa.bool_()),
    pa.field("kind", _DICT),
    *_ERROR_AND_BYTES,
]

#: mq_messages columns that link a message to its unit in mq_calls and name its queue
MQ_LINK = [
    pa.field("call_key", pa.int64()),        # the mq_calls row of the unit carrying the message
    pa.field("queue_name", _DICT),           # the queue (Hobj tracking, MQPUT1's MQOD, the MQXQH)
    pa.field("queue_manager", _DICT),
    pa.field("remote_q_name", _DICT),        # MQXQH RemoteQName (channel MESSAGE_DATA)
    pa.field("remote_q_mgr_name", _DICT),    # MQXQH RemoteQMgrName
    # who, as on the unit's mq_calls row: the connection's channel, the conversation's user
    # and application (mqcodec.ibmmq.conversation)
    pa.field("channel_name", _DICT),
    pa.field("user_id", _DICT),
    pa.field("appl_name", _DICT),
]

#: the short MSMQ columns analysts ask for first (name, type, the batch column it comes from)
MSMQ_SHORT = [
    ("message_id", pa.string(), None),  # SourceQueueManager GUID \ MessageID (an OBJECTID)
    ("source_qm", _DICT, "user_source_queue_manager"),
    ("label", pa.string(), "props_label"),
    ("class", pa.int32(), "props_message_class"),
    ("class_name", _DICT, None),
    ("priority", pa.int16(), "base_pr"),
    ("destination", _DICT, "user_destination_queue"),
    ("body_text", pa.string(), None),   # a string body as text (mqcodec.convert.converter._msmq_body_text)
]

#: string columns with few distinct values, dictionary-encoded in every table
DICTIONARY = frozenset({
    "capture", "src_ip", "dst_ip", "kind", "error", "error_structure", "error_field",
    # IBM MQ
    "md_format", "md_reply_to_q", "md_reply_to_q_mgr", "md_user_identifier", "md_put_appl_name",
    "md_appl_identity_data", "md_appl_origin_data", "body_format",
    # MSMQ
    "source_qm", "destination", "class_name", "ping_qm_guid", "ec_client_guid", "ec_server_guid",
    "user_source_queue_manager", "user_queue_manager_address", "user_destination_queue",
    "user_admin_queue", "user_response_queue", "user_connector_type", "xact_connector_qm_guid",
    "debug_queue_identifier",
})

#: enumerated column -> (its name column, how values are named): every name
#: comes from mqcodec.ibmmq.constants (cross-checked against tshark there)
NAMED: dict[str, tuple[str, str]] = {
    "md_report": ("md_report_names", "MQRO flags"),
    "md_msg_type": ("md_msg_type_name", "MQMT"),
    "md_feedback": ("md_feedback_name", "feedback"),
    "md_encoding": ("md_encoding_name", "MQENC flags"),
    "md_persistence": ("md_persistence_name", "MQPER"),
    "md_put_appl_type": ("md_put_appl_type_name", "MQAT"),
    "pcf_type": ("pcf_type_name", "MQCFT"),
    "pcf_command": ("pcf_command_name", "MQCMD"),
    "pcf_comp_code": ("pcf_comp_code_name", "MQCC"),
    "pcf_reason": ("pcf_reason_name", "reason"),
    # mq_calls
    "completion_code": ("completion_code_name", "MQCC"),
    "reason_code": ("reason_name", "reason"),
    "conn_appl_type": ("conn_appl_type_name", "MQAT"),
    "od_object_type": ("od_object_type_name", "MQOT"),
    # pcf_parameters
    "parameter": ("parameter_name", "parameter"),
    "type": ("type_name", "MQCFT"),
    "int_value": ("value_name", "value"),
}
_NAME_TYPES = {how: (pa.list_(pa.string()) if how == "MQRO flags" else _DICT)
               for _, how in NAMED.values()}

#: batch-decoder columns that are not output columns (the row's own columns replace them)
BATCH_ONLY = frozenset({"record", "error_structure", "error_field", "error_offset", "error_reason", "raw"})

_WIDER = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(),
          pa.uint64(): pa.decimal128(20, 0)}


def widen_unsigned(t: pa.DataType) -> pa.DataType:
    """``t`` with every unsigned integer, at any depth, widened to the
    smallest signed type holding all its values (Spark has no unsigned
    types; values are unchanged)."""
    if t in _WIDER:
        return _WIDER[t]
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(widen_unsigned(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(widen_unsigned(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(widen_unsigned(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(widen_unsigned(t.value_type)), t.list_size)
    return t


def _output_field(name: str, t: pa.DataType) -> pa.Field:
    t = widen_unsigned(t)
    if name in DICTIONARY and t == pa.string():
        t = _DICT
    return pa.field(name, t)


def snake_case(name: str) -> str:
    """``MsgType`` -> ``msg_type`` (the decoders' field names as column names)."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _with_names(fields: list) -> list:
    """``fields`` with each named column's companion (:data:`NAMED`) after it."""
    out = []
    for f in fields:
        out.append(f)
        named = NAMED.get(f.name)
        if named is not None:
            out.append(pa.field(named[0], _NAME_TYPES[named[1]]))
    return out


def _mq_messages() -> pa.Schema:
    fields = list(COMMON) + list(MQ_LINK)
    for f in _schema.MQ_MESSAGES:
        if f.name in BATCH_ONLY:
            continue
        fields.append(_output_field(f.name, f.type))
        if f.name == "md_put_time":
            # PutDate + PutTime (GMT, to the hundredth of a second) as one timestamp
            fields.append(pa.field("md_put_timestamp", pa.timestamp("us", tz="UTC")))
        elif f.name == "body_length":
            # a text body (MQSTR) in its CCSID (mqcodec.convert.converter._body_text)
            fields.append(pa.field("body_text", pa.string()))
        elif f.name == "header_formats":
            # the MQRFH2 folders (mqcodec.convert.converter._rfh2_folders)
            fields.append(pa.field("rfh2_folders", pa.list_(pa.string())))
            # the NameValueStrings of its MQRFH version 1 headers (converter._rfh_name_values)
            fields.append(pa.field("rfh_name_values", pa.list_(pa.string())))
    return pa.schema(_with_names(fields))


def _msmq_packets() -> pa.Schema:
    fields = list(COMMON)
    fields += [pa.field(name, t) for name, t, _ in MSMQ_SHORT]
    seen = {f.name for f in fields}
    for f in _schema.MSMQ_PACKETS:
        if f.name in BATCH_ONLY or f.name in seen:  # the batch's "kind" is the row's kind
            continue
        fields.append(_output_field(f.name, f.type))
    return pa.schema(fields)


def _pcf_parameters() -> pa.Schema:
    fields = [pa.field("message_key", pa.int64(), nullable=False)]
    fields += [pa.field(snake_case(f.name), widen_unsigned(f.type), f.nullable)
               for f in _schema.PCF_PARAMETERS if f.name != "record"]
    return pa.schema(_with_names(fields))


def _mq_calls() -> pa.Schema:
    from ..ibmmq.call_columns import CALL_COLUMNS

    fields = [pa.field("call_key", pa.int64(), nullable=False)]
    fields += [f for f in COMMON if f.name not in ("message_key", "kind", "error", "error_structure",
                                                   "error_field", "error_offset", "length", "raw")]
    fields += [pa.field(name, t) for name, t in CALL_COLUMNS]
    fields += [
        # pairing: on replies the request's call_key and reply ts - request ts in microseconds;
        # on requests whether a reply came before the end of the capture, and which
        pa.field("request_call_key", pa.int64()),
        pa.field("latency_us", pa.int64()),
        pa.field("replied", pa.bool_()),
        pa.field("reply_call_key", pa.int64()),
        pa.field("queue_name", _DICT),
        pa.field("queue_manager", _DICT),
        # who (mqcodec.ibmmq.conversation): the connection's channel, the conversation's user
        # and application, on every unit once they were sent
        pa.field("channel_name", _DICT),
        pa.field("user_id", _DICT),
        pa.field("appl_name", _DICT),
        *_ERROR_AND_BYTES,
    ]
    return pa.schema(_with_names(fields))


_SCHEMAS: dict[str, pa.Schema] = {}


def table_schema(table: str) -> pa.Schema:
    """The Arrow schema of output table ``table`` (one of :data:`TABLES`)."""
    s = _SCHEMAS.get(table)
    if s is None:
        builders = {MQ_MESSAGES: _mq_messages, MSMQ_PACKETS: _msmq_packets, PCF_PARAMETERS: _pcf_parameters,
                    MQ_CALLS: _mq_calls}
        if table not in builders:
            raise ValueError("no table %r: the tables are %s" % (table, ", ".join(TABLES)))
        s = _SCHEMAS[table] = builders[table]()
    return s


#: the column that identifies a table's rows (and joins the tables): a column selection
#: (:func:`output_schema`) always keeps it
KEY_COLUMN = {MQ_MESSAGES: "message_key", MSMQ_PACKETS: "message_key", PCF_PARAMETERS: "message_key",
              MQ_CALLS: "call_key"}


def check_columns(columns) -> tuple:
    """A column selection (``"table.column"`` entries, :attr:`ConvertOptions.columns`)
    checked: a ValueError names every entry that is no column of its table."""
    if isinstance(columns, str):
        raise TypeError("columns must be a collection of 'table.column' names, not one string")
    columns = tuple(columns)
    bad = []
    for entry in columns:
        table, _, column = str(entry).partition(".")
        if table not in TABLES or column not in table_schema(table).names:
            bad.append(entry)
    if bad:
        raise ValueError("columns: %s (give 'table.column' with a table of %s and a column of its schema: "
                         "mqcodec columns lists them)" % (", ".join(map(repr, bad)), ", ".join(TABLES)))
    return columns


def chosen_columns(table: str, columns) -> "frozenset | None":
    """The columns of ``table`` that the selection ``columns`` keeps, its key
    column (:data:`KEY_COLUMN`) among them; None: every column (the selection
    names none of ``table``'s)."""
    prefix = table + "."
    names = {c[len(prefix):] for c in columns if c.startswith(prefix)}
    return frozenset(names | {KEY_COLUMN[table]}) if names else None


def output_schema(table: str, columns=()) -> pa.Schema:
    """The schema of ``table`` as a job with the column selection ``columns``
    writes it: the chosen columns in the table's order, or all of them."""
    schema = table_schema(table)
    names = chosen_columns(table, columns) if columns else None
    return schema if names is None else pa.schema([f for f in schema if f.name in names])


def _namer(how: str):
    """value(s) -> name for one way of naming (see :data:`NAMED`)."""
    from ..ibmmq import constants as c

    if how == "MQRO flags":
        return lambda v: c.MQRO.flag_names(v)
    if how == "MQENC flags":
        return lambda v: "+".join(c.MQENC.flag_names(v)) or None
    if how == "feedback":  # an MQFB_* value, or a reason code (MQRC_*) reported as feedback
        return lambda v: c.MQFB.name_of(v) or c.reason_name(v)
    if how == "reason":
        return c.reason_name
    if how == "parameter":
        return lambda pair: c.parameter_name(pair[0], pair[1])
    if how == "value":
        return lambda pair: c.value_name(pair[0], pair[1])
    return c.FAMILIES[how].name_of


def words(indices, values) -> pa.DictionaryArray:
    """A dictionary column: ``indices`` (numpy) into ``values`` (strings, or a string array)."""
    import numpy as np

    from .. import arrow_kernels as _k

    return pa.DictionaryArray.from_arrays(_k.from_numpy(np.asarray(indices, dtype=np.int32)),
                                          values if isinstance(values, pa.Array) else pa.array(values, pa.string()))


def where_seen(connections: list, inverse, direction) -> dict:
    """The ``src_ip``, ``src_port``, ``dst_ip`` and ``dst_port`` columns of rows
    seen on ``connections`` ((client ip, client port, server ip, server port) each):
    ``inverse`` (numpy) is each row's index in them, ``direction`` (numpy) 0 where
    the row went from the client to the server.  The addresses are dictionary
    indices: one string per address, not one per row."""
    import numpy as np

    from .. import arrow_kernels as _k

    index: dict = {}
    cip = np.array([index.setdefault(c[0], len(index)) for c in connections], dtype=np.int32)[inverse]
    sip = np.array([index.setdefault(c[2], len(index)) for c in connections], dtype=np.int32)[inverse]
    cport = np.array([c[1] for c in connections], dtype=np.int32)[inverse]
    sport = np.array([c[3] for c in connections], dtype=np.int32)[inverse]
    ips = pa.array(list(index), pa.string())
    c2s = np.asarray(direction) == 0
    return {"src_ip": words(np.where(c2s, cip, sip), ips), "src_port": _k.from_numpy(np.where(c2s, cport, sport)),
            "dst_ip": words(np.where(c2s, sip, cip), ips), "dst_port": _k.from_numpy(np.where(c2s, sport, cport))}


def name_column(how: str, values, context=None) -> pa.Array:
    """The name companion of an enumerated column (:data:`NAMED`): each
    distinct value named once.  ``context``: the column the names also depend
    on (a parameter's Type for ``parameter``; its id for ``value``, named only
    where the Type is an integer)."""
    from .. import arrow_kernels as _k

    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if context is not None:
        # one int64 key per (first, second) pair: first << 32 | second's 32 bits
        context = context.combine_chunks() if isinstance(context, pa.ChunkedArray) else context
        first, second = (context, values) if how == "value" else (values, context)
        keys = _k.call("add", [_k.call("shift_left", [_k.cast(first, pa.int64()), pa.scalar(32, pa.int64())]),
                               _k.call("bit_wise_and", [_k.cast(second, pa.int64()),
                                                        pa.scalar(0xFFFFFFFF, pa.int64())])])
    else:
        keys = values
    # each distinct key once (a null key: a null index, hence a null name)
    encoded = _k.dictionary_encode(keys)
    where = encoded.indices
    fn = _namer(how)
    names: list = []
    for v in encoded.dictionary.to_pylist():
        names.append(fn((v >> 32, v & 0xFFFFFFFF) if context is not None else v))
    t = _NAME_TYPES[how]
    if pa.types.is_dictionary(t):
        named = [n for n in names if n is not None]
        if len(set(named)) == len(named):
            # the distinct names are the dictionary; a value without a name is null
            slot = {n: i for i, n in enumerate(named)}
            to_slot = pa.array([None if n is None else slot[n] for n in names], pa.int32())
            return pa.DictionaryArray.from_arrays(_k.take(to_slot, where), pa.array(named, pa.string()))
        return _k.dictionary_encode(_k.take(pa.array(names, pa.string()), where))
    return _k.take(pa.array(names, t), where)


#: the pending rows of one chunk, before decoding: where each message was seen
#: and its bytes (the compiled core produces these columns directly); ``ts`` in
#: nanoseconds, as the captures give it (the output tables split it in two).  The
#: columns of few values are dictionaries, as in the output tables: a block is filtered
#: by protocol and written without turning its strings into dictionaries again
BLOCK_SCHEMA = pa.schema([
    pa.field("message_key", pa.int64(), nullable=False),
    pa.field("capture", _DICT, nullable=False),
    pa.field("frame", pa.int64()),
    pa.field("ts", pa.timestamp("ns", tz="UTC")),
    pa.field("src_ip", _DICT),
    pa.field("src_port", pa.int32()),
    pa.field("dst_ip", _DICT),
    pa.field("dst_port", pa.int32()),
    pa.field("tcp_stream", pa.int64()),
    pa.field("stream_offset", pa.int64()),
    pa.field("overlap_conflict", pa.bool_()),
    pa.field("protocol", _DICT, nullable=False),
    pa.field("kind", _DICT),
    pa.field("error", _DICT),
    pa.field("error_structure", _DICT),
    pa.field("error_field", _DICT),
    pa.field("error_offset", pa.int64()),
    pa.field("length", pa.int64()),
    pa.field("_data", pa.large_binary()),
    pa.field("_md_only", pa.bool_()),
    # IBM MQ: the unit's mq_calls row, the queue it names and who (tables.MQ_LINK)
    *MQ_LINK,
])

#: columns of free text or bytes, nearly every value its own: their Parquet column chunks are
#: written without a dictionary (the writer would build one per row group and give up on it)
NO_DICTIONARY = frozenset({"body_text", "raw"})


#: the columns whose row-group statistics (min, max, nulls) the local engine writes: those
#: whose values follow the rows' order (the capture's), so that a filter on them skips row
#: groups. A row group of any other column spans nearly all its values and prunes nothing;
#: writing their statistics took 16-19 % of the writing (measured on the simulator's
#: capture of 100,000 messages, BENCHMARKS.md)
STATISTICS = frozenset({"message_key", "call_key", "capture", "frame", "ts", "tcp_stream"})


def statistics_columns(schema: pa.Schema) -> list[str]:
    """The columns of ``schema`` written with statistics (:data:`STATISTICS`): the
    writer's ``write_statistics``."""
    return [f.name for f in schema if f.name in STATISTICS]


#: a column of a file gets a dictionary when its first rows hold at most one distinct
#: value in this many (see :func:`dictionary_columns`)
DICTIONARY_REPEATS = 4
#: how many first rows tell: counting the distinct values of every column of a whole
#: first row group (10^5 rows) took 4 % of the instructions of a conversion of the
#: simulator's 20,000 messages, the hash tables of the columns whose values hardly repeat
#: growing to the row group's size
DICTIONARY_SAMPLE_ROWS = 8192


def dictionary_columns(schema: pa.Schema, sample: "pa.Table | None" = None) -> list[str]:
    """The Parquet column paths of ``schema``'s leaves (``name``, ``name.list.element``,
    ``name.child``, ``name.key_value.key``/``.value``: the writer's compliant nesting),
    but those of :data:`NO_DICTIONARY`: the writer's ``use_dictionary``.

    With ``sample`` (the first rows of the file, in ``schema``; its first
    :data:`DICTIONARY_SAMPLE_ROWS` are read), a column whose
    values are not dictionary-encoded already keeps a dictionary only if they
    repeat there: at most one distinct value in :data:`DICTIONARY_REPEATS`
    non-null ones (list columns: their elements). A dictionary of values that
    hardly repeat (keys, frame numbers, timestamps, message ids) costs the writer a
    hash of every value and the file a dictionary page, then the writer gives up on it
    at 1 MiB and writes the rest plain (measured on the simulator's capture: those
    columns made the files 28 % larger and the writing 9 % slower, measured for 260be93)."""
    if sample is not None and sample.num_rows:
        from ..arrow_kernels import call

        sample = sample.slice(0, DICTIONARY_SAMPLE_ROWS)
        chosen = []
        for f in schema:
            if f.name in NO_DICTIONARY:
                continue
            values, t = sample.column(f.name), f.type
            while pa.types.is_list(t) or pa.types.is_large_list(t):
                values, t = call("list_flatten", [values]), t.value_type
            if not pa.types.is_dictionary(t) and not pa.types.is_struct(t) and not pa.types.is_map(t):
                n = len(values) - values.null_count
                if n and call("count_distinct", [values]).as_py() * DICTIONARY_REPEATS > n:
                    continue
            chosen += dictionary_columns(pa.schema([f]))
        return chosen

    def leaves(path: str, t: pa.DataType) -> list[str]:
        if pa.types.is_dictionary(t):
            return leaves(path, t.value_type)
        if pa.types.is_map(t):
            return leaves(path + ".key_value.key", t.key_type) + leaves(path + ".key_value.value", t.item_type)
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            return leaves(path + ".list.element", t.value_type)
        if pa.types.is_struct(t):
            return [p for i in range(t.num_fields) for p in leaves(path + "." + t.field(i).name, t.field(i).type)]
        return [path]
    return [p for f in schema if f.name not in NO_DICTIONARY for p in leaves(f.name, f.type)]
