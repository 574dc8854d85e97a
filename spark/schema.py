"""Spark schemas of the decoded columns, derived from the batch decoders'
ONE Arrow definition (:mod:`mqcodec.batch.schema`).

Nothing here spells a field a second time: the per-record Arrow schema of a
decoder (:func:`row_schema`) is the batch schema without its ``record``
column (in Spark the row *is* the record); a decoder's child table (PCF
parameters) is a table of its own, its batch schema without ``record``
(never nested as a list column: Spark converts list elements one by
one).  The Spark ``StructType`` is then produced by pyspark's own Arrow
conversion (``pyspark.sql.pandas.types.from_arrow_schema``), and the Arrow
types Spark expects back from a Python worker by its inverse
(``to_arrow_schema``), so both sides always agree with pyspark's mapping
(``fixed_size_binary(24)`` -> ``BinaryType``, ``list`` -> ``ArrayType``...).

One rule is added (:func:`spark_compatible`): Spark has no unsigned
integers (pyspark refuses ``uint8``..``uint64``), so each is widened to the
smallest signed type holding all its values -- ``uint8`` -> ``int16``
(ShortType), ``uint16`` -> ``int32``, ``uint32`` -> ``int64``, ``uint64`` ->
``decimal(20, 0)``.  Values are unchanged; the casts are exact.
"""
from __future__ import annotations

import pyarrow as pa

__all__ = [
    "RECORD",
    "without_record",
    "row_schema",
    "spark_compatible",
    "to_spark_schema",
    "to_spark_type",
    "spark_arrow_type",
    "spark_arrow_schema",
    "utc_arrow_kwargs",
]

#: the record-number column of every batch table (row position in the batch)
RECORD = "record"


def without_record(schema: pa.Schema) -> pa.Schema:
    """``schema`` minus its ``record`` column (if it has one)."""
    i = schema.get_field_index(RECORD)
    return schema if i < 0 else schema.remove(i)


def row_schema(rows: pa.Schema) -> pa.Schema:
    """The per-record Arrow schema of a decoder: its row table without
    ``record`` (in Spark the row is the record; the batch-relative number
    would depend on ``maxRecordsPerBatch``)."""
    return without_record(rows)


def spark_compatible(t: "pa.DataType | pa.Schema") -> "pa.DataType | pa.Schema":
    """``t`` with every unsigned integer (at any depth) widened to a signed
    type Spark has (:func:`mqcodec.convert.tables.widen_unsigned`, the rule the
    output tables follow too) and dictionary-encoded columns as their value
    type (Spark reads them as plain strings); everything else as it is."""
    from mqcodec.convert.tables import widen_unsigned

    if isinstance(t, pa.Schema):
        return pa.schema([f.with_type(spark_compatible(f.type)) for f in t], metadata=t.metadata)
    if pa.types.is_dictionary(t):
        return spark_compatible(t.value_type)
    return widen_unsigned(t)


def to_spark_schema(schema: pa.Schema):
    """Arrow schema -> ``pyspark.sql.types.StructType``: pyspark's own
    mapping, after :func:`spark_compatible`."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(spark_compatible(schema))


def to_spark_type(schema: pa.Schema):
    """The Spark ``StructType`` of the decoded struct column (same as
    :func:`to_spark_schema`; named for readability at call sites)."""
    return to_spark_schema(schema)


def utc_arrow_kwargs(converter, *, large: bool = False) -> dict:
    """Keyword arguments for pyspark's ``to_arrow_type``/``to_arrow_schema``
    asking for UTC timestamps (and large var types): pyspark 4.2 on takes
    ``timezone="UTC"``, 4.0 and 4.1 ``timestamp_utc=True`` (their signatures
    differ; each is given only what it accepts)."""
    import inspect

    params = inspect.signature(converter).parameters
    kwargs: dict = {}
    if "timezone" in params:
        kwargs["timezone"] = "UTC"
    elif "timestamp_utc" in params:
        kwargs["timestamp_utc"] = True
    if "prefers_large_types" in params:
        kwargs["prefers_large_types"] = large
    elif large:
        raise TypeError("this pyspark cannot convert to large Arrow types (prefers_large_types)")
    return kwargs


def spark_arrow_type(spark_type, *, large: bool = False) -> pa.DataType:
    """The Arrow type a Python worker must hand back for ``spark_type``
    (``large``: ``spark.sql.execution.arrow.useLargeVarTypes``)."""
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(spark_type, **utc_arrow_kwargs(to_arrow_type, large=large))


def spark_arrow_schema(spark_schema, *, large: bool = False) -> pa.Schema:
    """The Arrow schema a Python worker must hand back for ``spark_schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema, **utc_arrow_kwargs(to_arrow_schema, large=large))
