"""The local engine: captures in, Parquet datasets out, in this process
(``mqcodec pcap2parquet``; the Spark engine is :mod:`mqcodec.spark.pipeline`)."""
from __future__ import annotations

from typing import Any, Iterable, Optional

from ..errors import NoCaptureRead
from ..progress import CaptureProgress
from .converter import Converter
from .keys import check_job_size
from .options import ConvertOptions, writer_threads
from .sinks import BackgroundSink, DatasetSink, WriteFailures

__all__ = ["convert", "overlapped"]


def convert(inputs: Iterable, outdir: str, options: ConvertOptions | None = None, *, progress: bool = False,
            partition_by: Optional[str] = None) -> dict:
    """Convert captures to the Parquet datasets ``outdir/<table>/`` of
    :mod:`mqcodec.convert.tables`; returns the summary report.

    An input that cannot be opened, or whose file header is not a capture's,
    is reported (``captures not read`` in the summary, its ``error`` in the
    capture's report) and the job goes on with the next one.  When no input
    can be read, :class:`NoCaptureRead` is raised and nothing is written."""
    from ..errors import DecodeError

    options = options or ConvertOptions()
    inputs = list(inputs)
    check_job_size(len(inputs))   # before anything is written
    options.check_partitioning(partition_by)
    sink, render_thread = overlapped(DatasetSink.of(outdir, options, partition_by=partition_by), options)
    write = WriteFailures(sink)  # what writing raised: an output error (a full disk), not an unreadable input
    conv = Converter(write, options, render_thread=render_thread)
    read = 0
    os_errors_only = True
    try:
        for index, path in enumerate(inputs):
            bar = CaptureProgress(path) if progress else None
            try:
                conv.add_capture(path, progress=bar, index=index)
            except (DecodeError, OSError) as exc:
                if write.raised_by(exc) or conv.rendering_failed(exc):
                    raise
                conv.not_read(path, exc, index=index)
                os_errors_only = os_errors_only and isinstance(exc, OSError)
                continue
            finally:
                if bar is not None:
                    bar.done()
            read += 1
        conv.drain()
    finally:
        conv.drain_quietly()
        sink.close(complete=read > 0)
    if not read:
        raise NoCaptureRead("no input could be read as a capture: " + "; ".join(
            "%s: %s" % (r["capture"], r["error"]) for r in conv.capture_reports), file_errors_only=os_errors_only)
    return conv.report()


def overlapped(sink: DatasetSink, options: ConvertOptions) -> tuple[Any, bool]:
    """The stages of writing overlapped for ``options.threads`` (the local
    engine's wiring, and that of the Spark engine's tasks that write their own
    files): with N > 1 threads ``sink`` written by N - 1 background writers
    (:class:`BackgroundSink`, at most one per table) and each chunk decoded and
    assembled on a render thread of the converter's own while the calling
    thread reads the capture.  Returns the sink to give the converter (and to
    close) and whether the converter renders on a thread of its own
    (``Converter(..., render_thread=...)``)."""
    writers = writer_threads(options.threads)
    if not writers:
        return sink, False
    # the writers start with the first chunk of at least a quarter of chunk_messages
    # rows: a small capture (one small chunk at its end) is written by the calling thread
    return BackgroundSink(sink, workers=writers, start_rows=max(1, options.chunk_messages // 4)), True
