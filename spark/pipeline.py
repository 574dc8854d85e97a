"""``mqcodec pcap2parquet --engine spark``: the local job's tables, written by Spark.

The layout is the local engine's (:mod:`mqcodec.tables`): one Parquet dataset
per table, ``OUTDIR/<table>/part-*.parquet`` (zstd), optionally partitioned by
the UTC date of ``ts`` (``OUTDIR/<table>/date=YYYY-MM-DD/``); timestamps as
``TIMESTAMP(MICROS, UTC)``; no ``_SUCCESS`` marker.  The rows equal the local
engine's for the same inputs.

Each table is one read of the ``mqcodec`` data source, and the summary one
more (the ``captures`` table): every capture is converted once per table.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any, Iterable, Optional

__all__ = ["convert", "WRITE_CONF"]

#: SQL settings the written tables rely on (set on the session for the job)
WRITE_CONF = {
    # INT64 TIMESTAMP(MICROS, isAdjustedToUTC=true): what pyarrow, pandas, Polars and DuckDB
    # read as UTC timestamps (Spark's default, INT96, they read without a time zone)
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # dates (the partition column) are UTC dates, whatever the cluster's time zone
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.compression.codec": "zstd",
}


def convert(inputs: Iterable[str], outdir: str, *, master: Optional[str] = "local[*]", raw: bool = False,
            mq_ports=(1414,), msmq_ports=(1801,), partition_by: Optional[str] = None,
            chunk_messages: Optional[int] = None, spark: Any = None, threads: Optional[int] = None) -> dict:
    """``threads`` (the local engine's :attr:`ConvertOptions.threads
    <mqcodec.pcap2parquet.ConvertOptions.threads>`) must be None: Spark runs
    as many tasks at once as its master gives (``local[N]``, or the cluster's
    executor cores), and its JVM writes the Parquet files."""
    if threads is not None:
        raise ValueError("threads=%r: the Spark engine runs as many tasks at once as its master gives "
                         "(master='local[N]', or the cluster's executor cores); threads is for the local engine"
                         % (threads,))
    from pyspark.sql import functions as F

    from mqcodec.tables import MQ_MESSAGES, MSMQ_PACKETS, TABLES

    from .datasource import expand_paths, register
    from .session import get_session

    if partition_by not in (None, "date"):
        raise ValueError("partition_by must be None or 'date', not %r" % (partition_by,))
    files = [os.path.abspath(p) for p in expand_paths(list(inputs))]
    if not files:
        raise FileNotFoundError("no capture file among %r" % (list(inputs),))
    spark = spark or get_session(master=master, app_name="mqcodec pcap2parquet")
    register(spark)
    saved = {k: spark.conf.get(k, None) for k in WRITE_CONF}
    for k, v in WRITE_CONF.items():
        spark.conf.set(k, v)
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
    reader = (spark.read.format("mqcodec").option("raw", str(bool(raw)).lower())
              .option("mq_ports", ",".join(map(str, mq_ports))).option("msmq_ports", ",".join(map(str, msmq_ports))))
    if chunk_messages:
        reader = reader.option("chunk", str(int(chunk_messages)))
    paths = ",".join(files)
    try:
        reports = [r.asDict() for r in reader.option("table", "captures").load(paths).collect()]
        if all(json.loads(r["report"])["summary"].get("captures not read") for r in reports):
            from mqcodec.pcap2parquet import NoCaptureRead

            raise NoCaptureRead("no input could be read as a capture: " + "; ".join(
                "%s: %s" % (c["capture"], c.get("error")) for r in reports for c in json.loads(r["report"])["captures"]))
        for table in TABLES:
            df = reader.option("table", table).load(paths)
            writer = df.write.mode("overwrite")
            if partition_by == "date" and table != "pcf_parameters":
                writer = df.withColumn("date", F.to_date(F.col("ts"))).write.mode("overwrite").partitionBy("date")
            writer.parquet(os.path.join(outdir, table))
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
    return _merge(sorted(reports, key=lambda r: r["index"]), (MQ_MESSAGES, MSMQ_PACKETS))


def _merge(rows: list, tables) -> dict:
    """The local engine's report from the per-capture reports of the executors."""
    summary: Counter = Counter()
    kinds: Counter = Counter()
    calls: Counter = Counter()
    failed: Counter = Counter()
    captures = []
    for row in rows:
        report = json.loads(row["report"])
        summary.update(report["summary"])
        kinds.update(report["messages_by_protocol_and_kind"])
        calls.update(report.get("calls_by_type", {}))
        failed.update(report.get("failed_calls_by_reason", {}))
        captures.extend(report["captures"])
    out = dict(summary)
    out["engine"] = "spark"
    return {"summary": out, "messages_by_protocol_and_kind": dict(sorted(kinds.items())),
            "calls_by_type": dict(sorted(calls.items())), "failed_calls_by_reason": dict(failed.most_common(10)),
            "captures": captures}
