"""The Spark adapter (mqcodec.spark) against the batch decoders.

Every path -- the mapInArrow helper ``decode_column``, the ``arrow_udf``
and the ``pandas_udf`` -- must give, row for row, exactly what the batch
decoder gives when called directly on the same column (compared as Python
lists of the Arrow values), malformed rows included: their error columns
are set, ``raw`` keeps their bytes and the task does not fail.  The long
form (``explode_pcf_parameters``) must give exactly the batch decoder's
parameter table.  Values are
also checked against outside facts: the PCF parameters each generated
record was BUILT from, the Type/Command the vectors README states, and the
MSMQ packet sizes of [MS-MQQB] 4.1.

One Spark job decodes one DataFrame holding every input with every decoder
(records of another protocol are malformed input for a decoder, which is
more error coverage); a second runs the long form; a third the same with
``useLargeVarTypes`` off.  The session is the ``spark`` fixture
(tests/conftest.py), shared by the whole run.
"""
from __future__ import annotations

import pathlib
import random
import struct

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mqcodec.batch import decode_pcf_batch
from mqcodec.batch.schema import MQ_MESSAGES, MSMQ_PACKETS, PCF_HEADERS, PCF_PARAMETERS
from mqcodec.ibmmq.headers import MQMD
from mqcodec.ibmmq.message import MQMessage, encode_message
from mqcodec.ibmmq.pcf import PcfMessage, PcfParameter, encode_pcf
from mqcodec.spark import udfs
from mqcodec.spark.schema import to_spark_schema

# --- outside facts --------------------------------------------------------
# IBM MQ cmqcfc.h: PCF structure types and header types
MQCFT_COMMAND, MQCFT_RESPONSE, MQCFT_EVENT, MQCFT_STATISTICS = 1, 2, 7, 21
MQCFT_INTEGER, MQCFT_STRING, MQCFT_INTEGER_LIST, MQCFT_STRING_LIST = 3, 4, 5, 6
MQCFT_BYTE_STRING, MQCFT_INTEGER_FILTER, MQCFT_GROUP = 9, 13, 20
MQCFT_INTEGER64, MQCFT_INTEGER64_LIST = 23, 25
MQCFOP_EQUAL = 2  # cmqcfc.h MQCFOP_EQUAL
MQENC_BIG, MQENC_LITTLE = 273, 546  # MQENC_INTEGER_NORMAL|..., MQENC_NATIVE on x86
# /work/shared/vectors/README.md
VECTOR_FACTS = {
    "pcf_with_cfif.dat": (MQCFT_EVENT, 99),         # MQCMD_COMMAND_EVENT
    "statistics_q.dat": (MQCFT_STATISTICS, 165),    # MQCMD_STATISTICS_Q
}
# [MS-MQQB] 4.1 example packets whose BaseHeader.PacketSize is the whole file
MSMQ_WHOLE_PACKETS = {
    "4.1.3_establish_connection_request.bin": 572,
    "4.1.4_establish_connection_response.bin": 572,
    "4.1.5_connection_parameters_request.bin": 32,
    "4.1.6_connection_parameters_response.bin": 32,
    "4.1.8_session_ack.bin": 36,
}

KINDS = ("pcf", "mq", "msmq")


# --- inputs ---------------------------------------------------------------

def _text(rng: random.Random, lo: int = 1, hi: int = 20) -> str:
    return "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._") for _ in range(rng.randint(lo, hi)))


def _parameter(rng: random.Random, allow_group: bool = True):
    """A random PcfParameter and the columns the long form must show for it
    (children: a list of the same for a group)."""
    pid = rng.randint(1, 9000)
    choice = rng.randrange(9 if allow_group else 8)
    if choice == 0:
        v = rng.randint(-2**31, 2**31 - 1)
        return PcfParameter.integer(pid, v), {"Parameter": pid, "Type": MQCFT_INTEGER, "int_value": v}
    if choice == 1:
        v = rng.randint(-2**63, 2**63 - 1)
        return PcfParameter.integer64(pid, v), {"Parameter": pid, "Type": MQCFT_INTEGER64, "int_value": v}
    if choice == 2:
        vs = [rng.randint(-2**31, 2**31 - 1) for _ in range(rng.randint(0, 6))]
        return (PcfParameter.integer_list(pid, vs),
                {"Parameter": pid, "Type": MQCFT_INTEGER_LIST, "count": len(vs), "int_list": vs})
    if choice == 3:
        vs = [rng.randint(-2**63, 2**63 - 1) for _ in range(rng.randint(0, 6))]
        return (PcfParameter.integer64_list(pid, vs),
                {"Parameter": pid, "Type": MQCFT_INTEGER64_LIST, "count": len(vs), "int_list": vs})
    if choice == 4:
        s = _text(rng)
        return PcfParameter.string(pid, s), {"Parameter": pid, "Type": MQCFT_STRING, "string_value": s}
    if choice == 5:
        width = rng.randint(1, 12)
        vs = [_text(rng, 1, width) for _ in range(rng.randint(1, 5))]
        return (PcfParameter.string_list(pid, vs),
                {"Parameter": pid, "Type": MQCFT_STRING_LIST, "count": len(vs), "string_list": vs})
    if choice == 6:
        b = rng.randbytes(rng.randint(0, 40))
        return PcfParameter.byte_string(pid, b), {"Parameter": pid, "Type": MQCFT_BYTE_STRING, "bytes_value": b}
    if choice == 7:
        v = rng.randint(-2**31, 2**31 - 1)
        return (PcfParameter.integer_filter(pid, MQCFOP_EQUAL, v),
                {"Parameter": pid, "Type": MQCFT_INTEGER_FILTER, "operator": MQCFOP_EQUAL, "int_value": v})
    kids = [_parameter(rng, allow_group=False) for _ in range(rng.randint(0, 4))]
    return (PcfParameter.group(pid, [k[0] for k in kids]),
            {"Parameter": pid, "Type": MQCFT_GROUP, "count": len(kids), "children": [k[1] for k in kids]})


def _pcf_record(rng: random.Random):
    """(bytes, facts) of a random PCF message built with the codec's constructors."""
    params = [_parameter(rng) for _ in range(rng.randint(0, 8))]
    htype = rng.choice([MQCFT_COMMAND, MQCFT_RESPONSE, MQCFT_EVENT, MQCFT_STATISTICS])
    command = rng.randint(1, 220)
    enc = rng.choice([MQENC_BIG, MQENC_LITTLE])
    msg = PcfMessage.new(htype, command, [p[0] for p in params], encoding=enc)
    facts = {"Type": htype, "Command": command, "ParameterCount": len(params),
             "encoding": enc, "params": [p[1] for p in params]}
    return encode_pcf(msg), facts


def _malformed(rng: random.Random, good: bytes) -> bytes:
    how = rng.randrange(3)
    if how == 0:                                  # cut short
        return good[:rng.randrange(len(good))]
    if how == 1:                                  # junk
        return rng.randbytes(rng.randint(0, 80))
    # ParameterCount (MQCFH offset 32) set to 0x7fffffff in both byte orders
    return good[:32] + struct.pack(">i", 0x7FFFFFFF) + good[36:] if len(good) >= 36 else good + b"\x00"


def _mq_record(rng: random.Random, body: bytes, enc: int):
    msg_id = rng.randbytes(24)
    md = MQMD(Version=rng.choice([1, 2]), Format="MQADMIN", Encoding=enc, CodedCharSetId=1208,
              MsgId=msg_id, PutApplName=_text(rng, 1, 28))
    data = encode_message(MQMessage(md=md, body=body, md_encoding=rng.choice([MQENC_BIG, MQENC_LITTLE])))
    return data, {"md_msg_id": msg_id, "md_format": "MQADMIN", "body_length": len(body)}


def build_inputs(vectors: pathlib.Path):
    """(records, meta): meta[i] = (origin, facts) for record i."""
    rng = random.Random(20261121)
    records, meta = [], []

    def add(data, origin, facts=None):
        records.append(data)
        meta.append((origin, facts))

    for name in sorted(VECTOR_FACTS):
        add((vectors / "ibmmq" / name).read_bytes(), "pcf_vector", name)
    good = []
    for _ in range(300):
        data, facts = _pcf_record(rng)
        good.append((data, facts))
        add(data, "pcf", facts)
    for data, _ in good[:80]:
        add(_malformed(rng, data), "pcf_bad", None)
    for data, facts in good[:60]:
        mq, mq_facts = _mq_record(rng, data, facts["encoding"])
        add(mq, "mq", dict(mq_facts, pcf_command=facts["Command"], pcf_type=facts["Type"]))
    for data, _ in good[60:75]:
        mq, _ = _mq_record(rng, data, MQENC_LITTLE)
        add(mq[:rng.randrange(len(mq))], "mq_bad", None)
    for path in sorted((vectors / "msmq").rglob("*.bin")):
        data = path.read_bytes()
        add(data, "msmq_vector", path.name)
        if path.name in MSMQ_WHOLE_PACKETS:
            for _ in range(3):
                add(data[:rng.randrange(len(data))], "msmq_bad", None)
    add(None, "null", None)
    add(b"", "empty", None)
    return records, meta


# --- what the batch decoders say, called directly --------------------------

def _drop_record(d: dict) -> dict:
    return {k: v for k, v in d.items() if k != "record"}


def expected_rows(kind: str, records, **options) -> list[dict]:
    """One dict per record from the batch decoder itself (its row table;
    for PCF the headers)."""
    arr = records if isinstance(records, (pa.Array, pa.ChunkedArray)) else pa.array(records, pa.large_binary())
    fn = udfs.get(kind).batch_function()
    if kind == "pcf":
        return [_drop_record(h) for h in fn(arr, **options).headers.to_pylist()]
    return [_drop_record(r) for r in fn(arr, **options).to_pylist()]


def parameters_by_id(table: pa.Table, n: int) -> list[list[dict]]:
    """The long form's rows (with an ``id`` column) grouped per record, in
    parameter order, without ``id``."""
    out: list[list[dict]] = [[] for _ in range(n)]
    for row in table.sort_by([("id", "ascending"), ("param_index", "ascending")]).to_pylist():
        out[row.pop("id")].append(row)
    return out


def test_all_three_batch_decoders_are_registered_and_available():
    assert set(KINDS) <= set(udfs.available())


# --- one Spark job: every decoder x every path -----------------------------

def _side_columns(n: int) -> dict:
    """Columns riding along with the payload (must pass through unchanged)."""
    return {"ts": pa.array([1_700_000_000_000_000 + 1000 * i for i in range(n)], pa.timestamp("us", tz="UTC")),
            "note": pa.array(["row %d" % i if i % 7 else None for i in range(n)], pa.string())}


def _frame(spark, records):
    """DataFrame (id long, payload binary, ts timestamp, note string) made
    from Arrow (no Python row objects)."""
    table = pa.table({"id": pa.array(range(len(records)), pa.int64()),
                      "payload": pa.array(records, pa.binary()), **_side_columns(len(records))})
    return spark.createDataFrame(table)


@pytest.fixture(scope="module")
def inputs(vectors):
    return build_inputs(vectors)


@pytest.fixture(scope="module")
def spark_decoded(spark, inputs):
    """{(kind, path): [row dict per record]} from ONE Spark job, rows ordered by id."""
    records, _ = inputs
    # one partition: every Python node of the plan starts a worker process
    # per task, and the first start (imports) dominates on a busy machine;
    # maxRecordsPerBatch=64 still splits it into several Arrow batches
    df = _frame(spark, records).coalesce(1)
    out = df
    for kind in KINDS:
        out = udfs.decode_column(out, "payload", kind, alias="%s_map" % kind)
    cols = ["id", "ts", "note"]
    for kind in KINDS:
        cols += ["%s_map" % kind,
                 udfs.arrow_decoder(kind)("payload").alias("%s_arrow" % kind),
                 udfs.pandas_decoder(kind)("payload").alias("%s_pandas" % kind)]
    table = out.select(*cols).toArrow().sort_by("id")
    got = {}
    for kind in KINDS:
        for path in ("map", "arrow", "pandas"):
            got[kind, path] = table.column("%s_%s" % (kind, path)).to_pylist()
    for name in ("id", "ts", "note"):
        got[name] = table.column(name).to_pylist()
    return got


@pytest.mark.spark
def test_no_row_lost_or_failed(spark_decoded, inputs):
    records, _ = inputs
    assert spark_decoded["id"] == list(range(len(records)))
    for name, col in _side_columns(len(records)).items():
        assert spark_decoded[name] == col.to_pylist(), name


@pytest.mark.spark
@pytest.mark.parametrize("path", ["map", "arrow", "pandas"])
@pytest.mark.parametrize("kind", KINDS)
def test_udf_equals_batch_decoder_row_for_row(spark_decoded, inputs, kind, path):
    records, _ = inputs
    want = expected_rows(kind, records)
    got = spark_decoded[kind, path]
    assert len(got) == len(want)
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not bad, "rows %s differ, first:\n%r\n%r" % (bad[:10], got[bad[0]], want[bad[0]])


@pytest.fixture(scope="module")
def exploded(spark, inputs):
    """The long form of every input (Spark job), as an Arrow table."""
    records, _ = inputs
    return udfs.explode_pcf_parameters(_frame(spark, records), "payload").toArrow()      # keeps id, ts, note


@pytest.mark.spark
def test_decoded_columns_are_flat():
    """Every decoded struct holds scalars (at most a short list of scalars,
    MQ's ``header_formats``), never a nested struct or a list of structs:
    Spark converts nested elements one at a time, which is what made the
    PCF parameters nested per record cost ~85 % of a job (issue 18);
    the parameters are the long form's rows, which are flat too."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    def flat(t) -> bool:
        if isinstance(t, ArrayType):
            return not isinstance(t.elementType, (ArrayType, MapType, StructType))
        return not isinstance(t, (MapType, StructType))

    for kind in KINDS:
        for f in udfs.get(kind).spark_type().fields:
            assert flat(f.dataType), (kind, f)
    for f in to_spark_schema(udfs.get("pcf").child_schema()).fields:
        assert flat(f.dataType), f


@pytest.mark.spark
def test_pcf_values_are_the_ones_built(spark_decoded, inputs, exploded):
    records, meta = inputs
    rows = spark_decoded["pcf", "map"]
    all_params = parameters_by_id(exploded.select(["id"] + [f.name for f in udfs.get("pcf").child_schema()]),
                                  len(records))
    checked = 0
    for row, params, (origin, facts) in zip(rows, all_params, meta):
        if origin == "pcf_vector":
            assert (row["Type"], row["Command"]) == VECTOR_FACTS[facts]
            assert row["error_reason"] is None and params
            assert row["ParameterCount"] == sum(p["depth"] == 0 for p in params)
        if origin != "pcf":
            continue
        assert row["error_reason"] is None, row["error_reason"]
        assert (row["Type"], row["Command"], row["ParameterCount"]) == \
            (facts["Type"], facts["Command"], facts["ParameterCount"])
        assert row["encoding"] == facts["encoding"]
        top = [p for p in params if p["depth"] == 0]
        assert len(top) == len(facts["params"])
        for p, want in zip(top, facts["params"]):
            for key, value in want.items():
                if key != "children":
                    assert p[key] == value, (key, p, want)
            if want["Type"] == MQCFT_GROUP:
                kids = [c for c in params if c["parent"] == p["param_index"]]
                assert [c["depth"] for c in kids] == [1] * len(kids)
                assert len(kids) == len(want["children"])
                for c, cw in zip(kids, want["children"]):
                    assert all(c[k] == v for k, v in cw.items()), (c, cw)
        checked += 1
    assert checked == 300


@pytest.mark.spark
def test_mq_and_msmq_values(spark_decoded, inputs):
    records, meta = inputs
    n_mq = n_msmq = 0
    for rec, row, msmq, (origin, facts) in zip(records, spark_decoded["mq", "map"],
                                               spark_decoded["msmq", "map"], meta):
        if origin == "mq":
            assert row["error_reason"] is None, row["error_reason"]
            assert {k: row[k] for k in facts} == facts
            n_mq += 1
        if origin == "msmq_vector" and facts in MSMQ_WHOLE_PACKETS:
            assert msmq["error_reason"] is None
            assert msmq["base_packet_size"] == MSMQ_WHOLE_PACKETS[facts] == len(rec)
            n_msmq += 1
    assert (n_mq, n_msmq) == (60, len(MSMQ_WHOLE_PACKETS))


@pytest.mark.spark
@pytest.mark.parametrize("kind,bad", [("pcf", ("pcf_bad", "null", "empty", "mq", "mq_bad")),
                                      ("mq", ("mq_bad", "null", "empty", "pcf", "pcf_vector")),
                                      ("msmq", ("msmq_bad", "null", "empty"))])
def test_malformed_rows_are_error_rows_with_raw_kept(spark_decoded, inputs, kind, bad):
    records, meta = inputs
    n = 0
    for path in ("map", "arrow", "pandas"):
        for rec, row, (origin, _) in zip(records, spark_decoded[kind, path], meta):
            if origin not in bad:
                continue
            assert row["error_structure"] is not None and row["error_reason"], (origin, row)
            assert row["error_offset"] is not None and 0 <= row["error_offset"] <= len(rec or b"")
            assert row["raw"] == rec        # None for the null record
            n += 1
    assert n >= 3 * 10


# --- the long form ----------------------------------------------------------

@pytest.mark.spark
def test_explode_pcf_parameters_is_the_parameter_table(exploded, inputs):
    records, _ = inputs
    got = exploded
    assert got.schema.names == ["id", "ts", "note"] + [f.name for f in PCF_PARAMETERS if f.name != "record"]
    got = got.sort_by([("id", "ascending"), ("param_index", "ascending")]).to_pylist()
    _, params = decode_pcf_batch(pa.array(records, pa.large_binary()))
    side = {k: v.to_pylist() for k, v in _side_columns(len(records)).items()}
    want = [dict(id=p["record"], ts=side["ts"][p["record"]], note=side["note"][p["record"]], **_drop_record(p))
            for p in params.to_pylist()]
    assert len(got) == len(want) > 300
    assert got == want


@pytest.mark.spark
def test_small_var_types_and_options(spark, inputs):
    """useLargeVarTypes off (32-bit offsets) and a decoder option
    (encoding=MQENC_LITTLE) pass through unchanged."""
    def payload_type(batches):     # nested: pickled by value for the workers
        for b in batches:
            yield pa.RecordBatch.from_pydict({"t": [str(b.schema.field("payload").type)]})

    records, _ = inputs
    sample = records[:40] + [None, b"\x00" * 7]
    key = udfs.LARGE_VAR_TYPES
    old = spark.conf.get(key)
    spark.conf.set(key, "false")
    try:
        df = _frame(spark, sample)
        out = udfs.decode_column(df, "payload", "pcf", encoding=MQENC_LITTLE)
        out = out.select("id", "pcf", udfs.arrow_decoder("pcf", encoding=MQENC_LITTLE)("payload").alias("a"),
                         udfs.pandas_decoder("pcf", encoding=MQENC_LITTLE)("payload").alias("p"))
        table = out.toArrow().sort_by("id")
        long = udfs.explode_pcf_parameters(df, "payload", keep=["id"], encoding=MQENC_LITTLE).toArrow()
        seen = df.mapInArrow(payload_type, "t string").distinct().collect()
    finally:
        spark.conf.set(key, old)
    want = expected_rows("pcf", pa.array(sample, pa.binary()), encoding=MQENC_LITTLE)
    assert table.column("pcf").to_pylist() == want
    assert table.column("a").to_pylist() == want
    assert table.column("p").to_pylist() == want
    _, params = decode_pcf_batch(pa.array(sample, pa.binary()), encoding=MQENC_LITTLE)
    want_params: list[list[dict]] = [[] for _ in sample]
    for p in params.to_pylist():
        want_params[p.pop("record")].append(p)
    assert parameters_by_id(long, len(sample)) == want_params
    assert sum(map(len, want_params)) > 40
    assert [r.t for r in seen] == ["binary"]            # the setting really was off
    # forcing little-endian makes the big-endian records of the sample fail
    assert any(r["error_reason"] for r in want[:40])


# --- schemas: derived from the core's one definition ------------------------

@pytest.mark.spark
def test_spark_types_follow_the_core_arrow_schemas():
    from pyspark.sql.types import BinaryType, IntegerType, LongType, ShortType, StructType

    pcf = udfs.get("pcf").spark_type()
    assert pcf.names == [f.name for f in PCF_HEADERS if f.name != "record"]
    elem = to_spark_schema(udfs.get("pcf").child_schema())      # the long form's columns
    assert isinstance(elem, StructType)
    assert elem.names == [f.name for f in PCF_PARAMETERS if f.name != "record"]
    assert not elem["param_index"].nullable and elem["string_value"].nullable
    mq = udfs.get("mq").spark_type()
    assert mq.names == [f.name for f in MQ_MESSAGES if f.name != "record"]
    assert isinstance(mq["md_msg_id"].dataType, BinaryType)          # fixed_size_binary(24)
    msmq = udfs.get("msmq").spark_type()
    assert msmq.names == [f.name for f in MSMQ_PACKETS if f.name != "record"]
    widened = {pa.uint8(): ShortType, pa.uint16(): IntegerType, pa.uint32(): LongType}
    for f in MSMQ_PACKETS:
        if f.type in widened:
            assert isinstance(msmq[f.name].dataType, widened[f.type]), f.name


def test_unknown_kind_and_bad_column_type():
    with pytest.raises(LookupError):
        udfs.get("x25")
    with pytest.raises(TypeError):
        udfs.decode_arrow(pa.array(["text"]), "pcf")


def test_one_line_registration_of_another_decoder():
    """A decoder without a child table (the MQ/MSMQ shape) added by one
    register() call works through the same code path."""
    udfs.register("pcf_headers_only", lambda recs: decode_pcf_batch(recs).headers,
                  "mqcodec.batch.schema:PCF_HEADERS")
    try:
        records = [encode_pcf(PcfMessage.new(MQCFT_COMMAND, 13, [PcfParameter.integer(1, 5)])), b"\x01", None]
        got = udfs.decode_arrow(records, "pcf_headers_only").to_pylist()
        want = [_drop_record(h) for h in decode_pcf_batch(records).headers.to_pylist()]
        assert got == want and got[0]["Command"] == 13 and got[1]["error_reason"]
    finally:
        udfs.DECODERS.pop("pcf_headers_only", None)


# --- property: the adapter's Arrow function == the batch decoder ------------

_pcf_bodies = st.integers(0, 2**32 - 1).map(lambda seed: _pcf_record(random.Random(seed))[0])
_records = st.lists(st.one_of(_pcf_bodies, st.binary(max_size=64), st.none(),
                              _pcf_bodies.flatmap(lambda b: st.integers(0, len(b)).map(lambda n: b[:n]))),
                    max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=_records, lead=st.integers(0, 3), large=st.booleans(), chunked=st.booleans(),
       kind=st.sampled_from(KINDS))
def test_decode_arrow_matches_batch_decoder(records, lead, large, chunked, kind):
    full = [b"\x00" * 5] * lead + records
    arr = pa.array(full, pa.large_binary() if large else pa.binary()).slice(lead)   # array.offset != 0
    if chunked and len(records) > 1:
        arr = pa.chunked_array([arr.slice(0, 1), arr.slice(1)])
    got = udfs.decode_arrow(arr, kind).to_pylist()
    assert got == expected_rows(kind, records)


def test_utc_arrow_kwargs_fit_each_pyspark_signature():
    """pyspark 4.2+ asks for timezone=, 4.0/4.1 for timestamp_utc= (the signatures of
    pyspark.sql.pandas.types.to_arrow_type in those releases); the installed one's too."""
    from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type

    from mqcodec.spark.schema import utc_arrow_kwargs

    def new_style(dt, *, timezone=None, prefers_large_types=False, error_on_duplicated_field_names_in_struct=False):
        return None

    def old_style(dt, error_on_duplicated_field_names_in_struct=False, timestamp_utc=True,
                  prefers_large_types=False):
        return None

    def oldest(dt, error_on_duplicated_field_names_in_struct=False, timestamp_utc=True):
        return None

    assert utc_arrow_kwargs(new_style, large=True) == {"timezone": "UTC", "prefers_large_types": True}
    assert utc_arrow_kwargs(old_style) == {"timestamp_utc": True, "prefers_large_types": False}
    assert utc_arrow_kwargs(oldest) == {"timestamp_utc": True}
    with pytest.raises(TypeError, match="prefers_large_types"):
        utc_arrow_kwargs(oldest, large=True)
    for fn in (to_arrow_type, to_arrow_schema):   # the installed pyspark: UTC either way
        kw = utc_arrow_kwargs(fn, large=True)
        assert kw.get("timezone") == "UTC" or kw.get("timestamp_utc") is True


# --- a field selection -----------------------------------------------------

MSMQ_DOZEN = ["kind", "base_pr", "props_label", "props_message_class", "user_message_id", "user_destination_queue",
              "user_source_queue_manager", "props_body_type", "props_message_size", "error_structure",
              "error_reason", "raw"]


def test_fields_are_the_whole_decodes_and_narrow_the_walk(inputs, monkeypatch):
    """``fields``: a struct of those columns, in the order given, each with the
    values of a whole decode; the MSMQ decoder is asked for those (and
    ``record``) only; a decoder without a column option (PCF) selects after
    decoding; unknown, repeated or no fields are refused."""
    import mqcodec.batch as batch

    records, _ = inputs
    arr = pa.array(records, pa.large_binary())
    for kind, fields in (("msmq", MSMQ_DOZEN), ("pcf", ["Command", "Type", "error_reason"])):
        whole = udfs.decode_arrow(arr, kind).to_pylist()
        some = udfs.decode_arrow(arr, kind, fields=fields)
        assert [some.type.field(i).name for i in range(some.type.num_fields)] == fields
        assert some.to_pylist() == [{f: row[f] for f in fields} for row in whole], kind
    asked = []
    decode = batch.decode_msmq_batch
    monkeypatch.setattr(batch, "decode_msmq_batch", lambda r, **kw: asked.append(kw.get("columns")) or decode(r, **kw))
    udfs.decode_arrow(arr, "msmq", fields=["props_label", "base_pr"])
    assert asked == [["record", "base_pr", "props_label"]]
    for bad, message in ((["no_such"], "no column 'no_such'"), ([], "none given"),
                         (["base_pr", "base_pr"], "a name repeated")):
        with pytest.raises(ValueError, match=message):
            udfs.decode_arrow(arr, "msmq", fields=bad)
    with pytest.raises(TypeError, match="not one string"):
        udfs.decode_arrow(arr, "msmq", fields="base_pr")


@pytest.mark.spark
def test_fields_through_every_udf(spark, inputs):
    """decode_column, arrow_decoder and pandas_decoder with ``fields``: the
    struct column holds those fields, the values of the whole struct's."""
    records, _ = inputs
    df = _frame(spark, records).coalesce(1)
    out = udfs.decode_column(df, "payload", "msmq", alias="whole")
    out = udfs.decode_column(out, "payload", "msmq", alias="some", fields=MSMQ_DOZEN)
    out = out.select("id", "whole", "some", udfs.arrow_decoder("msmq", fields=MSMQ_DOZEN)("payload").alias("a"),
                     udfs.pandas_decoder("msmq", fields=MSMQ_DOZEN)("payload").alias("p"))
    assert out.schema["some"].dataType.names == MSMQ_DOZEN == out.schema["p"].dataType.names
    table = out.toArrow().sort_by("id")
    want = [{f: row[f] for f in MSMQ_DOZEN} for row in table.column("whole").to_pylist()]
    assert any(w["base_pr"] is not None for w in want) and any(w["error_reason"] for w in want)
    for name in ("some", "a", "p"):
        assert table.column(name).to_pylist() == want, name
