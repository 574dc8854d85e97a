"""A SparkSession with the settings the mqcodec adapter relies on.

    from mqcodec.spark.session import get_session
    spark = get_session()                    # local[*], for a laptop / notebook
    spark = get_session(master="yarn")       # or leave master None under spark-submit
    spark = get_session(jvm_stdout_to_stderr=True)  # a command whose stdout is its result

Only the settings that matter for the adapter are set here (docs/spark.md
explains each); everything else stays the cluster's.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator, Mapping

__all__ = ["ADAPTER_CONF", "LOCAL_CONF", "get_session", "session_conf"]

#: Settings of the Arrow exchange between the JVM and the Python workers.
ADAPTER_CONF: dict[str, str] = {
    # Arrow for toPandas/createDataFrame too (the UDFs use Arrow regardless).
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # 64-bit offsets for binary/string columns: a batch of large MQ messages
    # (up to 100 MB each) can pass 2 GiB, the limit of 32-bit offsets.
    "spark.sql.execution.arrow.useLargeVarTypes": "true",
    # Records per Arrow batch handed to one batch-decoder call: big enough to
    # amortise the call, small enough to bound worker memory.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "4096",
    # No console progress bars ("[Stage 3:>   (0 + 4) / 8]"): the adapter's jobs run
    # under commands whose standard streams are for results and diagnostics.
    "spark.ui.showConsoleProgress": "false",
}

#: Extra settings for a local session (tests, notebooks on one machine).
LOCAL_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def get_session(master: str | None = "local[*]", app_name: str = "mqcodec",
                conf: Mapping[str, Any] | None = None, *, jvm_stdout_to_stderr: bool = False):
    """Get or create the SparkSession with :data:`ADAPTER_CONF` (and, for a
    ``local`` master, :data:`LOCAL_CONF`), then ``conf`` on top.

    ``master=None`` leaves the master to ``spark-submit`` / the cluster.
    Sets ``PYSPARK_PYTHON`` to this interpreter when unset, so local workers
    import the same mqcodec; on a cluster ship the wheel (docs/spark.md).
    This process's ``ARROW_DEFAULT_MEMORY_POOL``, if set, goes to the
    executors' environment (``spark.executorEnv``; ``conf`` may say otherwise).

    ``jvm_stdout_to_stderr``: when this call starts the JVM, the JVM (and the
    Python workers it starts) get this process's standard error as their
    standard output, so everything Spark prints -- log lines, banners -- is
    on stderr and this process's stdout holds only what it prints itself
    (``mqcodec pcap2parquet --engine spark`` prints its JSON result there).
    Spark's own log4j2 defaults already log to stderr.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in session_conf(master, conf).items():
        builder = builder.config(key, str(value))
    if not jvm_stdout_to_stderr:
        return builder.getOrCreate()
    with _stdout_to_stderr():
        return builder.getOrCreate()


def session_conf(master: str | None, conf: Mapping[str, Any] | None = None) -> dict:
    """The settings :func:`get_session` makes: :data:`ADAPTER_CONF`,
    :data:`LOCAL_CONF` for a ``local`` master, this process's
    ``ARROW_DEFAULT_MEMORY_POOL`` (the mqcodec command's: jemalloc) for the
    executors' Python workers, then ``conf``."""
    settings: dict[str, Any] = dict(ADAPTER_CONF)
    if master is not None and master.startswith("local"):
        settings.update(LOCAL_CONF)
    pool = os.environ.get("ARROW_DEFAULT_MEMORY_POOL")
    if pool:
        settings["spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL"] = pool
    settings.update(conf or {})
    return settings


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """File descriptor 1 is a copy of descriptor 2 for the duration: a JVM
    launched meanwhile inherits it as its stdout."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):  # no usable descriptor 1: nothing to protect
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
