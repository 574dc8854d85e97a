"""Spark UDFs and DataFrame helpers over the batch decoders.

A THIN adapter: every byte is decoded by :mod:`mqcodec.batch`; this module
only moves Arrow arrays between Spark and the batch functions.

The registry (:data:`DECODERS`) names each batch decoder, its function and
its Arrow schema (both as ``"module:attribute"`` so a decoder that is not
written yet costs nothing until it is asked for).  Adding a decoder is one
:func:`register` line.  For each registered ``kind``:

* :func:`decode_column` (``mapInArrow``): the fast path -- the column's
  Arrow buffers go straight to the batch decoder, no Python object per row;
  one struct of scalars per input row (the decoder's row table);
* :func:`arrow_decoder` (``arrow_udf``): Arrow array in, the same struct
  array out;
* :func:`pandas_decoder` (``pandas_udf``): Series of bytes in, the same
  struct column (a pandas DataFrame of scalar columns) out, for code
  written against pandas UDFs;
* :func:`explode_children` / :func:`explode_pcf_parameters`: the decoder's
  child table (for PCF: one row per parameter) as flat rows via
  ``mapInArrow``.

The outputs are flat on purpose: Spark converts every element of an array
column one at a time when it turns a Python worker's Arrow batch into rows,
so a list of 49 parameter structs per record cost ~85 % of a
``decode_column`` job; Spark converts a struct of scalars per record at
the cost of its few fields, and the parameters come as a separate long table
of scalars (BENCHMARKS.md, "Spark: the column decoders").

Decode errors never fail a task: the batch decoders turn a bad record into
a row with the ``error_*`` columns and ``raw`` set (docs/spark.md).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa

from .schema import (
    RECORD,
    row_schema,
    spark_arrow_schema,
    spark_arrow_type,
    to_spark_schema,
    without_record,
)

__all__ = [
    "Decoder",
    "DECODERS",
    "register",
    "get",
    "available",
    "decode_arrow",
    "arrow_decoder",
    "pandas_decoder",
    "decode_column",
    "explode_children",
    "explode_pcf_parameters",
    "LARGE_VAR_TYPES",
]

#: the Spark setting that makes Spark exchange ``large_binary`` /
#: ``large_string`` (64-bit offsets) with Python workers
LARGE_VAR_TYPES = "spark.sql.execution.arrow.useLargeVarTypes"


def _resolve(ref: Any) -> Any:
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Decoder:
    """One batch decoder as the adapter sees it.

    ``function``: ``records -> pa.RecordBatch`` (one row per record, a
    ``record`` column numbering them from 0), or ``records -> (rows,
    children)`` when ``children`` is given.  ``schema``: the Arrow schema of
    ``rows``.  ``children``: ``(name, schema of the child table)``; the child
    table carries ``record`` and is what :func:`explode_children` returns
    (``name`` names it, e.g. ``"parameters"``).  Each may be the object
    itself or ``"module:attribute"``.  ``rows_only``: keyword arguments
    that make ``function`` skip its child table (returned empty), for the
    callers that read the rows alone (:func:`decode_arrow` and every column
    UDF).
    """

    name: str
    function: Any
    schema: Any
    children: tuple[str, Any] | None = None
    rows_only: Any = None   # a dict of keyword arguments, or None
    #: the batch function's argument that names the row columns to make (its walk then skips
    #: the others), or None: a field selection is applied after decoding
    select_option: str | None = None

    def batch_function(self) -> Callable:
        return _resolve(self.function)

    def arrow_schema(self, fields: "list[str] | None" = None) -> pa.Schema:
        """The per-record Arrow schema (what one decoded struct holds): the
        row table's columns without ``record``, all scalars; with ``fields``,
        those columns only, in the order given."""
        schema = row_schema(_resolve(self.schema))
        if fields is None:
            return schema
        if isinstance(fields, str):
            raise TypeError("fields must be a list of column names, not one string")
        unknown = [f for f in fields if f not in schema.names]
        problem = ("no column %s" % ", ".join(map(repr, unknown)) if unknown else "none given" if not fields
                   else "a name repeated" if len(set(fields)) != len(fields) else None)
        if problem:
            raise ValueError("fields of %r: %s (its columns: %s)" % (self.name, problem, ", ".join(schema.names)))
        return pa.schema([schema.field(f) for f in fields])

    def child_schema(self) -> pa.Schema:
        """The Arrow schema of one long-form child row (``record`` removed)."""
        if self.children is None:
            raise ValueError("decoder %r has no child table" % self.name)
        return without_record(_resolve(self.children[1]))

    def spark_type(self, fields: "list[str] | None" = None):
        """The Spark ``StructType`` of the decoded struct column (``fields``: see
        :meth:`arrow_schema`).

        Its direct fields are all nullable: a ``pandas_udf`` cannot hand back
        a non-nullable struct field (pyspark rebuilds the struct from pandas
        columns), and every UDF of a kind must have the same type."""
        from pyspark.sql.types import StructField, StructType

        st = to_spark_schema(self.arrow_schema(fields))
        return StructType([StructField(f.name, f.dataType, True, f.metadata) for f in st.fields])

    def spark_arrow_type(self, *, large: bool = False, fields: "list[str] | None" = None) -> pa.DataType:
        """The Arrow type of :meth:`spark_type` as Spark exchanges it with
        Python (``large``: ``useLargeVarTypes``); what the UDFs return."""
        return spark_arrow_type(self.spark_type(fields), large=large)

    def is_available(self) -> bool:
        try:
            self.batch_function()
            self.arrow_schema()
        except (ImportError, AttributeError):
            return False
        return True


#: kind -> Decoder
DECODERS: dict[str, Decoder] = {}


def register(name: str, function: Any, schema: Any, children: tuple[str, Any] | None = None,
             rows_only: dict | None = None, select_option: str | None = None) -> Decoder:
    """Add (or replace) a batch decoder under ``name``."""
    dec = Decoder(name, function, schema, children, rows_only, select_option)
    DECODERS[name] = dec
    return dec


# The registry: one line a decoder.
register("pcf", "mqcodec.batch:decode_pcf_batch", "mqcodec.batch.schema:PCF_HEADERS",
         children=("parameters", "mqcodec.batch.schema:PCF_PARAMETERS"), rows_only={"parameters": False})
register("mq", "mqcodec.batch:decode_mq_batch", "mqcodec.batch.schema:MQ_MESSAGES")
register("msmq", "mqcodec.batch:decode_msmq_batch", "mqcodec.batch.schema:MSMQ_PACKETS", select_option="columns")


def get(kind: "str | Decoder") -> Decoder:
    """The registered decoder ``kind`` (a :class:`Decoder` is returned as
    it is); ``LookupError`` naming what exists if unknown, ``ImportError``
    if its batch function is not importable."""
    if isinstance(kind, Decoder):
        return kind
    try:
        dec = DECODERS[kind]
    except KeyError:
        raise LookupError("unknown decoder %r (registered: %s)" % (kind, ", ".join(sorted(DECODERS)))) from None
    try:
        dec.batch_function()
        dec.arrow_schema()
    except (ImportError, AttributeError) as exc:
        raise ImportError("the %r batch decoder is not available: %s" % (kind, exc)) from exc
    return dec


def available() -> list[str]:
    """The kinds whose batch function and schema import."""
    return sorted(k for k, d in DECODERS.items() if d.is_available())


# ---------------------------------------------------------------------------
# Arrow in, Arrow out (no Spark needed; every UDF below calls this)
# ---------------------------------------------------------------------------

def _binary(records: Any) -> pa.Array:
    if isinstance(records, pa.ChunkedArray):
        records = records.combine_chunks() if records.num_chunks != 1 else records.chunk(0)
    if not isinstance(records, pa.Array):
        records = pa.array(records, type=pa.large_binary())
    if not (pa.types.is_binary(records.type) or pa.types.is_large_binary(records.type)):
        raise TypeError("the records column must be binary, not %s" % records.type)
    return records


def _in_record_order(table: pa.RecordBatch, n: int | None) -> tuple[pa.RecordBatch, np.ndarray]:
    rec = table.column(RECORD).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    if len(rec) > 1 and (np.diff(rec) < 0).any():
        order = np.argsort(rec, kind="stable")
        table, rec = table.take(pa.array(order)), rec[order]
    if n is not None and not np.array_equal(rec, np.arange(n)):
        raise RuntimeError("the batch decoder did not return one row per record in order")
    return table, rec


def _columns(table: pa.RecordBatch, schema: pa.Schema) -> list[pa.Array]:
    return [table.column(f.name) for f in schema]


def decode_rows(records: Any, kind: "str | Decoder", *, children: bool = True, fields: "list[str] | None" = None,
                **options) -> tuple[pa.RecordBatch, pa.Table | None]:
    """Run the batch decoder ``kind``: ``(rows, children)`` with the
    ``record`` column kept, rows in record order as one record batch, the
    child table as the decoder made it (a ``pa.Table``, possibly of several
    batches: nothing is copied for a caller that does not read it; None for
    a decoder without a child table).  ``children`` False: the caller reads
    the rows alone, and the decoder skips its child table where it can
    (``Decoder.rows_only``; the child table is then empty).  ``fields``: the
    row columns the caller reads (:meth:`Decoder.arrow_schema`); a decoder
    with a ``select_option`` makes only those (and ``record``)."""
    dec = get(kind)
    arr = _binary(records)
    if not children and dec.rows_only:
        options = {**dec.rows_only, **options}
    if fields is not None and dec.select_option:
        wanted = set(dec.arrow_schema(fields).names) | {RECORD}
        options[dec.select_option] = [f.name for f in _resolve(dec.schema) if f.name in wanted]
    out = dec.batch_function()(arr, **options)
    if dec.children is None:
        rows, kids = out, None
    else:
        rows, kids = out[0], out[1]
    rows, _ = _in_record_order(_as_batch(rows), len(arr))
    if isinstance(kids, pa.RecordBatch):
        kids = pa.Table.from_batches([kids])
    return rows, kids


def _as_batch(table: "pa.RecordBatch | pa.Table") -> pa.RecordBatch:
    if isinstance(table, pa.RecordBatch):
        return table
    batches = table.combine_chunks().to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)


def decode_arrow(records: Any, kind: "str | Decoder", *, target: pa.DataType | None = None,
                 fields: "list[str] | None" = None, **options) -> pa.StructArray:
    """Decode a binary array with the batch decoder ``kind``: one struct of
    scalars per record, typed by ``Decoder.arrow_schema(fields)`` (or cast to
    ``target``, the Arrow type Spark expects); ``fields``: only those
    columns, each with the values of a whole decode (the MSMQ decoder's walk
    then skips the others' work).  A child table (PCF
    parameters) is not part of it: :func:`decode_rows` gives both tables,
    :func:`explode_children` the child rows in Spark.  ``options`` go to the
    batch function (e.g. ``encoding=546`` for PCF)."""
    dec = get(kind)
    rows, _ = decode_rows(records, dec, children=False, fields=fields, **options)
    return _struct(rows, dec.arrow_schema(fields), target)


def _struct(rows: pa.RecordBatch, schema: pa.Schema, target: pa.DataType | None) -> pa.StructArray:
    out = pa.StructArray.from_arrays(_columns(rows, schema), fields=list(schema))
    if target is not None and out.type != target:
        out = out.cast(target)
    return out


# ---------------------------------------------------------------------------
# Column UDFs
# ---------------------------------------------------------------------------

def arrow_decoder(kind: "str | Decoder", *, fields: "list[str] | None" = None, **options):
    """An ``arrow_udf``: ``df.select(arrow_decoder("pcf")("payload"))``.

    The UDF receives the column as a ``pa.Array`` (binary or large_binary)
    and returns the struct array of :func:`decode_arrow` (``fields``: of
    those columns only)."""
    from pyspark.sql.functions import arrow_udf

    dec = get(kind)
    spark_type = dec.spark_type(fields)

    target = dec.spark_arrow_type(fields=fields)

    def decode(records: pa.Array) -> pa.Array:
        return decode_arrow(records, dec, target=target, fields=fields, **options)

    decode.__name__ = "mqcodec_%s_arrow" % dec.name
    decode.__annotations__ = {"records": pa.Array, "return": pa.Array}
    # the UDF's types come from decode.__annotations__ (set above), which mypy does not read
    return arrow_udf(decode, spark_type)  # type: ignore[call-overload]


def pandas_decoder(kind: "str | Decoder", *, fields: "list[str] | None" = None, **options):
    """A ``pandas_udf`` (Series of bytes -> DataFrame = struct column), the
    same decoded values as :func:`arrow_decoder` for callers on pandas UDFs.

    The Series goes to the batch decoder as one Arrow array (one C loop over
    its ``bytes`` objects) and the result comes back as one pandas column
    per field: nullable integer/boolean dtypes, ``object`` for strings and
    bytes -- no Python object per row beyond what pandas needs for those."""
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    dec = get(kind)
    spark_type = dec.spark_type(fields)

    target = dec.spark_arrow_type(fields=fields)

    def decode(records: pd.Series) -> pd.DataFrame:
        arr = pa.array(records, type=pa.large_binary(), from_pandas=True)
        out = decode_arrow(arr, dec, target=target, fields=fields, **options)
        return pa.Table.from_struct_array(out).to_pandas(types_mapper=_pandas_types)

    decode.__name__ = "mqcodec_%s_pandas" % dec.name
    # real classes, not the strings of ``from __future__ import annotations``:
    # pyspark infers the UDF type from them
    decode.__annotations__ = {"records": pd.Series, "return": pd.DataFrame}
    return pandas_udf(decode, spark_type)  # type: ignore[call-overload]


def _pandas_types(t: pa.DataType):
    """Integers/booleans to pandas' nullable dtypes (no float round trip of
    int64 values, nulls stay nulls)."""
    import pandas as pd

    mapping = {
        pa.int8(): pd.Int8Dtype(),
        pa.int16(): pd.Int16Dtype(),
        pa.int32(): pd.Int32Dtype(),
        pa.int64(): pd.Int64Dtype(),
        pa.bool_(): pd.BooleanDtype(),
    }
    return mapping.get(t)


# ---------------------------------------------------------------------------
# DataFrame helpers (mapInArrow: the fast path)
# ---------------------------------------------------------------------------

def _large(df) -> bool:
    try:
        return str(df.sparkSession.conf.get(LARGE_VAR_TYPES, "false")).lower() == "true"
    except Exception:  # pragma: no cover - e.g. a restricted Connect session
        return False


def decode_column(df, column: str, kind: "str | Decoder", *, alias: str | None = None,
                  fields: "list[str] | None" = None, **options):
    """``df`` with one more column, ``alias`` (default ``kind``): the struct
    decoded from the binary column ``column`` -- the same values as
    ``df.withColumn(alias, arrow_decoder(kind)(column))``; ``fields``: a
    struct of those columns only (the JVM converts a struct field by field,
    so the fields left out cost it nothing).

    Runs as ``mapInArrow``: each Arrow batch's ``column`` goes to the batch
    decoder as it is (buffers, offsets, validity); no Python object per row.
    """
    from pyspark.sql.types import StructField, StructType

    dec = get(kind)
    alias = alias or dec.name
    if alias in df.columns:
        raise ValueError("column %r already exists; pass another alias" % alias)
    _check_binary(df, column)
    out_schema = StructType(list(df.schema.fields) + [StructField(alias, dec.spark_type(fields), False)])
    target = spark_arrow_schema(out_schema, large=_large(df))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            decoded = decode_arrow(batch.column(column), dec, target=target.field(alias).type, fields=fields,
                                   **options)
            arrays = [batch.column(i) for i in range(batch.num_columns)] + [decoded]
            yield _batch(arrays, target)

    return df.mapInArrow(run, out_schema)


def _check_binary(df, column: str) -> None:
    from pyspark.sql.types import BinaryType

    if column not in df.columns:
        raise ValueError("no column %r in %s" % (column, df.columns))
    if not isinstance(df.schema[column].dataType, BinaryType):
        raise TypeError("column %r must be binary, not %s" % (column, df.schema[column].dataType.simpleString()))


def _batch(arrays: list[pa.Array], target: pa.Schema) -> pa.RecordBatch:
    arrays = [a if a.type == f.type else a.cast(f.type) for a, f in zip(arrays, target)]
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def explode_children(df, column: str, kind: "str | Decoder", *, keep: list[str] | None = None, **options):
    """The long form: one row per child row of the batch decoder ``kind``
    (for PCF: one per parameter, in pre-order), carrying the ``keep``
    columns of its record (default: every column but ``column``) and the
    child schema's columns.  A record without children (or that failed to
    decode: see its ``error_*`` in :func:`decode_column`) gives no row."""
    from pyspark.sql.types import StructType

    dec = get(kind)
    child = dec.child_schema()
    keep = [c for c in df.columns if c != column] if keep is None else list(keep)
    _check_binary(df, column)
    missing = [c for c in keep if c not in df.columns]
    if missing:
        raise ValueError("no column(s) %s in %s" % (missing, df.columns))
    clash = [c for c in keep if c in child.names]
    if clash:
        raise ValueError("kept column(s) %s clash with the %s child columns; rename them" % (clash, dec.name))
    kept = [df.schema[c] for c in keep]
    out_schema = StructType(kept + list(to_spark_schema(child).fields))
    target = spark_arrow_schema(out_schema, large=_large(df))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            _, kids = decode_rows(batch.column(column), dec, **options)
            assert kids is not None         # dec.child_schema() above refused a decoder without children
            for part in kids.to_batches():        # the decoder's pieces, each handed on as it is
                part, rec = _in_record_order(part, None)
                if len(rec) and (rec[0] < 0 or rec[-1] >= batch.num_rows):
                    raise RuntimeError("the batch decoder returned a child row for a record that does not exist")
                idx = pa.array(rec, pa.int64())
                arrays = [batch.column(c).take(idx) for c in keep]
                arrays += [part.column(f.name) for f in child]
                yield _batch(arrays, target)

    return df.mapInArrow(run, out_schema)


def explode_pcf_parameters(df, column: str, *, keep: list[str] | None = None, **options):
    """One row per PCF parameter of the PCF bodies in ``column`` (see
    :func:`explode_children`); ``options`` as for ``decode_pcf_batch``."""
    return explode_children(df, column, "pcf", keep=keep, **options)
