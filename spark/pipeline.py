"""``mqcodec pcap2parquet --engine spark``: the local job's tables, written by Spark.

The layout is the local engine's (:mod:`mqcodec.convert.tables`): one Parquet dataset
per table, ``OUTDIR/<table>/part-*.parquet`` (zstd unless ``options.compression``), optionally partitioned by
the UTC date of ``ts`` (``OUTDIR/<table>/date=YYYY-MM-DD/``, whatever the
session time zone); timestamps as ``TIMESTAMP(MICROS, UTC)``; no ``_SUCCESS``
marker.  The rows equal the local engine's for the same inputs.

One conversion of each capture: the ``mqcodec`` data source's ``all`` rows
(every table's rows and each capture's report, tagged by table) are cached
(``MEMORY_AND_DISK``); the first action (collecting the reports) converts
every capture once and fills the cache, and each table is then written from
the cache.

Inputs and ``outdir`` are paths or URIs (:mod:`mqcodec.spark.storage`); the
tables are written to a hidden sibling of ``outdir`` first and moved into
``outdir`` (Hadoop FileSystem renames, through the driver's JVM) only when
every table is written: a failed job leaves no partial output.  A failure of
the job (an executor's error) raises :class:`SparkJobFailed` whose message is
one line: the error the executor raised.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import uuid
from collections import Counter
from typing import Any, Iterable, Optional

__all__ = ["convert", "WRITE_CONF", "SparkJobFailed", "one_line", "utc_date"]

#: SQL settings the written tables rely on (set on the session for the job)
WRITE_CONF = {
    # INT64 TIMESTAMP(MICROS, isAdjustedToUTC=true): what pyarrow, pandas, Polars and DuckDB
    # read as UTC timestamps (Spark's default, INT96, they read without a time zone)
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}
#: options of every table's write (Hadoop settings of the write job)
WRITE_OPTIONS = {"mapreduce.fileoutputcommitter.marksuccessfuljobs": "false"}

_MICROS_PER_DAY = 86_400_000_000


class SparkJobFailed(RuntimeError):
    """The Spark job failed (a task failed on an executor, or the cluster
    could not run it); the message is the error, in one line."""


def utc_date(column: str = "ts"):
    """The UTC date of a timestamp column, whatever ``spark.sql.session.timeZone``
    (``to_date`` would take the session's time zone)."""
    from pyspark.sql import functions as F

    days = F.floor(F.unix_micros(F.col(column)) / F.lit(_MICROS_PER_DAY)).cast("int")
    return F.date_from_unix_date(days)


_PY_ERROR = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failed|Warning)\b:?.*")
_JAVA_ERROR = re.compile(r"^(?:[a-z_][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error): ")


def one_line(exc: BaseException) -> str:
    """The error of a failed Spark job in one line: the last line of the
    Python traceback an executor raised when there is one, else the first
    line of the JVM's message without its exception class prefixes."""
    text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    starts = [i for i, ln in enumerate(lines) if "Traceback (most recent call last)" in ln]
    if starts:
        tail = lines[starts[-1] + 1:]
        errors = [ln for ln in tail if _PY_ERROR.match(ln) and not ln.startswith("at ")]
        if errors:
            return errors[-1]
    first = lines[0] if lines else type(exc).__name__
    # "An error occurred while calling o123.parquet.\n: org.apache.spark.SparkException: ..."
    for ln in lines[:3]:
        ln = ln.lstrip(": ")
        if _JAVA_ERROR.match(ln):
            first = ln
            break
    while _JAVA_ERROR.match(first):
        first = first.split(": ", 1)[1]
    return first[:500]


def _spark_failure(exc: BaseException) -> bool:
    """An error of the job on the cluster (not a usage error on the driver)."""
    mod = type(exc).__module__ or ""
    return mod.startswith("py4j") or mod.startswith("pyspark.errors")


class _Output:
    """``outdir`` on its Hadoop FileSystem, with a hidden temporary sibling to
    write into and a move of the finished tables into place."""

    def __init__(self, spark, outdir: str):
        from .storage import is_uri, resolve

        target = resolve(outdir)
        if not is_uri(target):
            target = "file://" + target
        jvm = spark._jvm
        self._Path = jvm.org.apache.hadoop.fs.Path
        self.final = self._Path(target)
        self.fs = self.final.getFileSystem(spark._jsc.hadoopConfiguration())
        parent = self.final.getParent()
        self.tmp = self._Path(parent, ".%s.mqcodec-%s" % (self.final.getName(), uuid.uuid4().hex[:12]))
        self.uri = target
        #: the temporary folder as a local path when the output is local (file://), else None
        self.local: Optional[str] = resolve(self.tmp.toString()) if self.fs.getScheme() == "file" else None

    def table(self, name: str) -> str:
        return self._Path(self.tmp, name).toString()

    def commit(self, tables) -> None:
        self.fs.mkdirs(self.final)
        for name in tables:
            src, dst = self._Path(self.tmp, name), self._Path(self.final, name)
            if not self.fs.exists(src):
                continue
            if self.fs.exists(dst):
                self.fs.delete(dst, True)
            if not self.fs.rename(src, dst):
                raise OSError("could not move %s to %s" % (src.toString(), dst.toString()))
        self.discard()

    def discard(self) -> None:
        try:
            if self.fs.exists(self.tmp):
                self.fs.delete(self.tmp, True)
        except Exception:  # noqa: BLE001 - cleanup after another error: that error is the one to report
            pass


def convert(inputs: Iterable[str], outdir: str, options: Any = None, *, master: Optional[str] = "local[*]",
            partition_by: Optional[str] = None, spark: Any = None, split_size: Optional[int] = None,
            partitions: Optional[int] = None, write_in_tasks: Optional[bool] = None, **fields) -> dict:
    """Convert ``inputs`` to the tables under ``outdir`` with the options of
    the local engine (``options``, a :class:`mqcodec.convert.
    ConvertOptions`, default its defaults; ``fields``: any of its fields
    replaced, e.g. ``mq_ports=(1414, 1415)``), every one honoured by the
    tasks that convert.

    ``split_size``: cut every capture into byte ranges of that many bytes,
    shuffle its frames by connection and convert each connection where its
    frames land (:mod:`mqcodec.spark.split`; ``partitions``: the shuffle's
    partitions, default the session's parallelism); None: a task per capture.

    ``threads`` (:attr:`ConvertOptions.threads <mqcodec.convert.ConvertOptions.threads>`):
    the threads of each task that converts, overlapped as the local engine's
    (reading, rendering, writing); None: the task slots a converting task would
    otherwise leave idle (:func:`task_threads`: ``local[2]`` and one capture
    without ``split_size``, 2), else 1.  The summary says how many
    (``threads_per_task``).

    A local ``outdir`` (``write_in_tasks`` None or True): the tasks that convert
    write the tables' Parquet files themselves (:func:`_run_in_tasks`); otherwise
    (or ``write_in_tasks=False``) the data source's rows go through Spark's writer."""
    from mqcodec.convert import ConvertOptions

    options = dataclasses.replace(options or ConvertOptions(), **fields)
    if split_size is not None and int(split_size) < 1:
        raise ValueError("split_size must be a positive number of bytes, not %r" % (split_size,))
    if partition_by not in (None, "date"):
        raise ValueError("partition_by must be None or 'date', not %r" % (partition_by,))
    options.check_partitioning(partition_by)
    from .datasource import expand_paths

    files = expand_paths(list(inputs))
    if not files:
        raise FileNotFoundError("no capture file among %r" % (list(inputs),))
    from ..convert.keys import check_job_size

    check_job_size(len(files))   # each file's index is the high bits of its keys
    from .session import get_session

    spark = spark or get_session(master=master, app_name="mqcodec pcap2parquet")
    if options.threads is None:
        options = dataclasses.replace(options, threads=task_threads(spark, None if split_size else len(files)))
    try:
        return _run(spark, files, outdir, options, partition_by=partition_by, split_size=split_size,
                    partitions=partitions, write_in_tasks=write_in_tasks)
    except Exception as exc:
        if _spark_failure(exc):
            raise SparkJobFailed(one_line(exc)) from exc
        raise


def task_threads(spark, tasks: Optional[int]) -> int:
    """The threads of a converting task when the job does not say: the
    session's task slots (``defaultParallelism``) shared among ``tasks`` tasks
    (None: as many as the slots, a split job's), at most an executor's cores
    (``spark.executor.cores`` where set, over ``spark.task.cpus``) and at most
    what a task can use (a render thread and a writer per table).  One capture
    on ``local[2]``: 2; a capture per slot or more: 1."""
    from mqcodec.convert.tables import TABLES

    if not tasks:
        return 1
    sc = spark.sparkContext
    threads = max(1, sc.defaultParallelism // tasks)
    conf = sc.getConf()
    cores = conf.get("spark.executor.cores", None)
    if cores:
        threads = min(threads, max(1, int(cores) // max(1, int(conf.get("spark.task.cpus", "1")))))
    return min(threads, 1 + len(TABLES))


def _run(spark, files, outdir, options, *, partition_by, split_size=None, partitions=None,
         write_in_tasks=None) -> dict:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from mqcodec.convert.tables import MQ_MESSAGES, MSMQ_PACKETS, PCF_PARAMETERS

    from .datasource import ALL, TAG, register

    out = _Output(spark, outdir)
    if out.local is not None and write_in_tasks is not False:
        return _run_in_tasks(spark, files, out, options, partition_by=partition_by, split_size=split_size,
                             partitions=partitions)
    register(spark)
    saved = {k: spark.conf.get(k, None) for k in WRITE_CONF}
    for k, v in WRITE_CONF.items():
        spark.conf.set(k, v)
    reader = spark.read.format("mqcodec").option("table", ALL).option("options", options.to_text())
    figures: dict = {}
    if split_size:
        from .split import split_rows

        rows, figures = split_rows(spark, files, options, split_size=int(split_size), partitions=partitions)
    else:
        rows = reader.load(files)
    # a split job is a big capture's: its rows cached on disk only (in the memory store, the
    # column batches of a task's rows are built on the executor's heap before the store
    # decides to spill, which ran 768 MiB executors out of heap on a 2 GiB capture)
    rows = rows.persist(StorageLevel.DISK_ONLY if split_size else StorageLevel.MEMORY_AND_DISK)
    try:
        # the first action: every capture converted once, every table's rows cached
        reports = [r.asDict() for r in rows.where(F.col(TAG) == "captures").select("captures.*").collect()]
        numbering = None
        if split_size:
            from .split import finish_reports, stream_numbering

            numbering = stream_numbering(rows)
            reports = finish_reports(reports, files, figures)
        unread = sum(json.loads(r["report"])["summary"].get("captures not read", 0) for r in reports)
        if unread >= len(files):
            from mqcodec.convert import NoCaptureRead

            raise NoCaptureRead("no input could be read as a capture: " + "; ".join(
                "%s: %s" % (c["capture"], c.get("error")) for r in reports for c in json.loads(r["report"])["captures"]))
        for table in options.tables:
            df = rows.where(F.col(TAG) == table).select("%s.*" % table)
            if numbering is not None:
                df = numbering(df, table)
            writer = df.write
            # as the local engine (mqcodec.convert.sinks.DatasetSink): a table with no rows is one
            # empty file, not partitioned (Spark's partitioned writer would write no file at all,
            # and a folder without one cannot be read)
            if partition_by == "date" and table != PCF_PARAMETERS and not df.isEmpty():
                writer = df.withColumn("date", utc_date("ts")).write.partitionBy("date")
            writer.mode("overwrite").options(**WRITE_OPTIONS).option("compression", options.compression) \
                .parquet(out.table(table))
        out.commit(options.tables)
    except BaseException:
        out.discard()
        raise
    finally:
        rows.unpersist()
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
    merged = _merge(sorted(reports, key=lambda r: r["index"]), (MQ_MESSAGES, MSMQ_PACKETS))
    if split_size:
        merged["summary"].update(figures)
    merged["summary"]["threads_per_task"] = options.threads
    return merged


def _run_in_tasks(spark, files, out: _Output, options, *, partition_by, split_size=None, partitions=None) -> dict:
    """The tasks write their rows of every table as Parquet files themselves (the
    local engine's files: :class:`mqcodec.convert.sinks.DatasetSink`) into the
    output's temporary folder; the driver collects the reports and moves the
    tables into place.  Without ``split_size`` a task per capture converts it
    (``part-<capture index>``); with it, the tasks of the split job's conversion
    stage write (``part-<task>``, :func:`mqcodec.spark.split.write_in_tasks`).
    Nothing goes through the JVM but the reports (and a split job's frames): the
    rows are not turned into Spark rows, cached and written again (measured: 35-42
    s for a 58 MB capture that way, against 2.4 s for the local engine).  For a
    local output (``file://``, or a plain path: the executors see the same files,
    as on one machine or a shared mount); other filesystems go through Spark's
    writer."""
    from mqcodec.convert.tables import MQ_MESSAGES, MSMQ_PACKETS

    text = options.to_text()
    root = out.local
    if root is None:
        raise ValueError("mqcodec.spark.pipeline: the tasks write only a local output")
    items = list(enumerate(files))
    figures: dict = {}
    try:
        if split_size:
            from .split import finish_reports, write_in_tasks

            os.makedirs(root, exist_ok=True)
            reports, figures = write_in_tasks(spark, files, options, root, split_size=int(split_size),
                                              partitions=partitions, partition_by=partition_by)
            reports = finish_reports(reports, files, figures)
        else:
            reports = spark.sparkContext.parallelize(items, len(items)).map(
                lambda item: _write_capture(item[0], item[1], root, text, partition_by)).collect()
        unread = sum(json.loads(r["report"])["summary"].get("captures not read", 0) for r in reports)
        if unread >= len(files):
            from mqcodec.convert import NoCaptureRead

            raise NoCaptureRead("no input could be read as a capture: " + "; ".join(
                "%s: %s" % (c["capture"], c.get("error")) for r in reports for c in json.loads(r["report"])["captures"]))
        # a task writes the tables its capture has rows of; a table no capture has rows of
        # gets one empty part file, as the local engine gives it (every table can be read)
        from mqcodec.convert.sinks import DatasetSink

        empty = DatasetSink(root, tables=[t for t in options.tables if not os.path.isdir(os.path.join(root, t))],
                            columns=options.columns, compression=options.compression)
        empty.close(complete=True)
        out.commit(options.tables)
    except BaseException:
        out.discard()
        raise
    merged = _merge(sorted(reports, key=lambda r: r["index"]), (MQ_MESSAGES, MSMQ_PACKETS))
    merged["summary"].update(figures)
    merged["summary"]["threads_per_task"] = options.threads
    return merged


def _write_capture(index: int, uri: str, root: str, options_text: str, partition_by) -> dict:
    """On an executor: convert capture ``index`` (``uri``) and write its rows
    under ``root`` (the job's temporary folder); its report as the data
    source's ``captures`` row."""
    from mqcodec.convert import ConvertOptions
    from mqcodec.errors import DecodeError

    from .storage import converting_into, display_name, input_source

    options = ConvertOptions.from_text(options_text)
    name = display_name(uri)
    # the attempt writes into a folder of its own, moved into place when it succeeds: a retried
    # or speculative attempt of the same capture never writes into a file another one writes;
    # it drains the converter (what rendering raised fails the task) before the files move
    with converting_into(root, "%05d" % index, options, partition_by=partition_by,
                         part="part-%05d" % index) as (conv, write):
        try:
            with input_source(uri) as source:
                conv.add_capture(source, name=name, index=index)
        except (DecodeError, OSError) as exc:  # as the local engine: reported, the job goes on
            if write.raised_by(exc) or conv.rendering_failed(exc):
                raise
            conv.not_read(name, exc, index=index)
    return {"index": index, "capture": name, "report": json.dumps(conv.report(top=None), sort_keys=True, default=str)}


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
