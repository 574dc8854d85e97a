"""``mqcodec pcap2parquet --engine spark``: the local job's outputs, written
by Spark.

``OUTDIR/messages.parquet`` is a Parquet dataset partitioned by
``protocol`` and ``date`` (the UTC date of ``ts``); ``OUTDIR/pcf_parameters.parquet``
a dataset of the long-form PCF parameters. Both read back with
``pyarrow.parquet.read_table(path)`` or ``spark.read.parquet(path)`` and hold
the same rows as ``--engine local`` gives for the same inputs.
"""
from __future__ import annotations

import os

__all__ = ["convert"]


def convert(inputs, outdir: str, *, master: str | None = "local[*]", raw: bool = False,
            mq_ports=(1414,), msmq_ports=(1801,), spark=None) -> dict:
    from pyspark.sql import functions as F

    from .datasource import expand_paths, register
    from .session import get_session

    files = [os.path.abspath(p) for p in expand_paths(list(inputs))]
    if not files:
        raise FileNotFoundError("no capture file among %r" % (list(inputs),))
    spark = spark or get_session(master=master, app_name="mqcodec pcap2parquet")
    register(spark)
    reader = (spark.read.format("mqcodec").option("raw", str(bool(raw)).lower())
              .option("mq_ports", ",".join(map(str, mq_ports))).option("msmq_ports", ",".join(map(str, msmq_ports))))
    paths = ",".join(files)
    messages = reader.load(paths).withColumn("date", F.to_date(F.col("ts")))
    messages.cache()
    (messages.write.mode("overwrite").partitionBy("protocol", "date")
     .parquet(os.path.join(outdir, "messages.parquet")))
    (reader.option("table", "pcf_parameters").load(paths).write.mode("overwrite")
     .parquet(os.path.join(outdir, "pcf_parameters.parquet")))
    kinds = {"%s/%s" % (r["protocol"], r["kind"]): r["count"]
             for r in messages.groupBy("protocol", "kind").count().collect()}
    errors = messages.filter(F.col("error").isNotNull()).count()
    total = sum(kinds.values())
    messages.unpersist()
    return {"summary": {"messages": total, "errors": errors, "engine": "spark", "captures": len(files)},
            "messages_by_protocol_and_kind": dict(sorted(kinds.items()))}
