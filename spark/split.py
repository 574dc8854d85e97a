"""One capture over many Spark tasks: byte ranges, a shuffle by connection,
each connection converted where its frames land.

``mqcodec pcap2parquet --engine spark --split-size N`` (:func:`split_rows`,
called by :mod:`mqcodec.spark.pipeline`):

1. **Plan** (driver): each capture cut into byte ranges of ``split_size``
   (:func:`mqcodec.capture.ranges.plan_ranges`); gzip and unknown files are
   one range.
2. **Scan** (a task per range of a pcap capture, :func:`_scan_range`; a task
   per capture for pcapng, whose walk starts at the file's start, and for a
   pcap whose ranges meet damage or do not chain, :func:`_scan`): where each
   range's first record starts and how many frames it holds
   (:func:`~mqcodec.capture.ranges.scan_ranges`, checked and repaired by
   ``check_plan``/``reconcile_plan``); the driver numbers the frames
   (:func:`~mqcodec.capture.ranges.frame_number_bases`).
3. **Frames** (a task per range): the range's frames with their connection
   and address-pair keys (:func:`mqcodec.capture.connections.keys_of`).
4. **Shuffle**: address pairs that exchanged IPv4 fragments are found
   (a small distinct set, broadcast); every frame gets its group
   (:func:`~mqcodec.capture.connections.group_key`); the frames are
   repartitioned by (capture, group) and sorted by frame number within.
5. **Convert** (a task per shuffle partition): its groups' frames, one group
   after another, through :meth:`mqcodec.convert.Converter.add_frames`
   (the compiled core; one call per capture),
   the rows of every table, the connections' opening frames and one report
   per task, as the data source's ``all`` rows.
6. **tcp_stream** (driver + join): the opening frames ranked per capture
   give each connection its index (:func:`~mqcodec.capture.connections.
   stream_indices`), joined onto the rows that carry a ``tcp_stream``.

With a local output (:func:`write_in_tasks`), stage 5 is two passes over the
grouped frames (each shuffled from the frames cached on disk): 5a finds the connections' opening frames with the
capture core's reassembly alone (nothing framed), which the driver broadcasts;
5b converts and each task writes its rows' Parquet files with their capture-wide
``tcp_stream`` (:class:`Renumbered`).  Only the frames and the reports go through
the JVM.

The rows equal the local engine's (``tests/test_spark_split.py``), but for
what acts across connections: the global byte budget and connection limit
(over the connections of one task).
"""
from __future__ import annotations

import itertools
import json
from typing import Any

import pyarrow as pa

__all__ = ["split_rows", "write_in_tasks", "Renumbered", "file_structure", "FRAMES_SCHEMA", "STREAMS"]

#: stage 3's rows: one per frame
FRAMES_SCHEMA = pa.schema([
    pa.field("capture_index", pa.int64(), nullable=False),
    pa.field("number", pa.int64(), nullable=False),
    pa.field("ts_ns", pa.int64(), nullable=False),
    pa.field("linktype", pa.int32(), nullable=False),
    pa.field("caplen", pa.int64(), nullable=False),
    pa.field("origlen", pa.int64(), nullable=False),
    pa.field("interface_id", pa.int32(), nullable=False),
    pa.field("data", pa.binary(), nullable=False),
    pa.field("conn", pa.binary(), nullable=False),
    pa.field("pair", pa.binary(), nullable=False),
    pa.field("fragment", pa.bool_(), nullable=False),
    # set on the one row each range adds after its frames (JSON: :func:`_range_row`);
    # ``number`` is then the first frame number the range did not read
    pa.field("range_report", pa.string()),
])
#: the tag of the rows naming the frames that opened connections
STREAMS = "streams"
_STREAMS_SCHEMA = pa.schema([pa.field("capture_index", pa.int64(), nullable=False),
                             pa.field("opened", pa.int64(), nullable=False)])
_BATCH_FRAMES = 4096


def _scan(task) -> list:
    """Stage 2: (capture index, uri, [(part, start, end), ...]) -> [(index,
    range, scan)], or [(index, None, error)] for an input that is not a
    readable capture (it cannot be opened, or its file header is not a
    capture's: what the local engine reports as not read).  Damage after the
    first frame ends the plan at the damaged range, which stops where the
    damaged record starts (the local engine converts the frames before it;
    the frames stage reports the error)."""
    from mqcodec.capture import open_capture
    from mqcodec.capture.ranges import ByteRange, check_plan, reconcile_plan, scan_ranges
    from mqcodec.errors import DecodeError

    from .storage import input_source

    index, uri, plan = task
    ranges = [ByteRange(*r) for r in plan]
    try:
        with input_source(uri) as source:
            try:
                scans = scan_ranges(source, ranges)
                if check_plan(scans):
                    scans = reconcile_plan(source, ranges, scans)
            except DecodeError as exc:
                if not _has_a_frame(open_capture, uri):
                    return [(index, None, str(exc))]
                if getattr(exc, "scans", None) is None:
                    raise
                scans = exc.scans   # type: ignore[attr-defined]
                ranges = ranges[:len(scans)]
                if check_plan(scans):
                    try:
                        scans = reconcile_plan(source, ranges, scans)
                    except DecodeError as again:   # damage met again from a corrected start
                        scans = again.scans   # type: ignore[attr-defined]
                        ranges = ranges[:len(scans)]
    except OSError as exc:   # it cannot be opened, or read
        return [(index, None, str(exc))]
    return [(index, tuple(r), s) for r, s in zip(ranges, scans)]


def _scan_range(task) -> tuple:
    """Stage 2 for one range of a pcap capture of several: (capture index, uri,
    (part, start, end)) -> (index, range, its scan), or (index, range, None) when
    the range cannot be read or its scan meets damage (the driver then scans the
    whole capture with :func:`_scan`, which reports what the local engine does).
    A pcap range's first boundary and record count need nothing of the ranges
    before it (the boundary finder's profile is the file's first records), so the
    ranges of one big capture are scanned by as many tasks."""
    from mqcodec.capture.ranges import ByteRange, scan_ranges
    from mqcodec.errors import DecodeError

    from .storage import input_source

    index, uri, rng = task
    try:
        with input_source(uri) as source:
            return (index, tuple(rng), scan_ranges(source, [ByteRange(*rng)])[0])
    except (DecodeError, OSError):
        return (index, tuple(rng), None)


def _has_a_frame(open_capture, uri) -> bool:
    """Whether the whole-file reader gets a frame out of ``uri`` before an error."""
    from mqcodec.errors import DecodeError

    from .storage import input_source

    with input_source(uri) as source:
        try:
            next(iter(open_capture(source)))
            return True
        except (DecodeError, StopIteration):
            return False


def _frames(rows, names: dict):
    """Stage 3, a mapInArrow function: each input row a range -> its frames."""
    import pickle

    from mqcodec import _impl
    from mqcodec.capture.connections import keys_of
    from mqcodec.capture.ranges import ByteRange, RangeReader
    from mqcodec.errors import DecodeError

    core = _impl.pick("capture_core", None, what="capture core")   # its frame_keys, when built

    from .storage import input_source

    for batch in rows:
        for task in batch.to_pylist():
            index, uri = task["capture_index"], names[task["capture_index"]][1]
            rng = ByteRange(task["part"], task["start"], task["end"])
            scan = pickle.loads(task["scan"])
            frames: list = []   # of the batch being built
            damage = None
            with input_source(uri) as source:
                reader = RangeReader(source, rng, first_number=task["first_number"], scan=scan)
                try:
                    for frame in reader:
                        frames.append(frame)
                        if len(frames) >= _BATCH_FRAMES:
                            yield _frames_batch(index, frames, keys_of, core)
                            frames = []
                except DecodeError as exc:   # the frames before it were yielded
                    damage = exc
            if frames:
                yield _frames_batch(index, frames, keys_of, core)
            yield _range_row(index, task["first_number"], reader, damage)


#: the summary figure, and the key of each task's report, of the Python workers' peak memory
PEAK_RSS = "python_peak_rss_mib"


def peak_rss_mib() -> int:
    """The peak resident memory of this Python worker so far, in MiB (a worker
    Spark reuses counts every task it ran): what a task's memory cost at most."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024   # (Linux: KiB)


def _range_row(index: int, first_number: int, reader, damage: BaseException | None) -> pa.RecordBatch:
    """The row a range adds after its frames: ``number`` the first frame number
    it did not read, ``range_report`` what the local engine's report says of the
    file structure, for this range: ``first_number``, ``file_error`` (the
    DecodeError that ended it, or null), ``truncation`` (the file cut short in
    it), ``skipped_blocks`` and ``impossible_timestamps``."""
    report = {"first_number": first_number, "file_error": None if damage is None else str(damage),
              "truncation": None if reader.truncation is None else reader.truncation._asdict(),
              "skipped_blocks": {str(k): v for k, v in reader.skipped_blocks.items()},
              "impossible_timestamps": reader.impossible_timestamps, PEAK_RSS: peak_rss_mib()}
    return pa.RecordBatch.from_pydict(
        {"capture_index": [index], "number": [first_number + reader.numbers], "ts_ns": [0], "linktype": [0],
         "caplen": [0], "origlen": [0], "data": [b""], "interface_id": [0], "conn": [b""], "pair": [b""],
         "fragment": [False], "range_report": [json.dumps(report)]}, schema=FRAMES_SCHEMA)


def file_structure(rows) -> dict:
    """The ranges' reports (``(capture index, number, range_report)`` rows) ->
    per capture what a whole-file read reports of its structure: ``cut`` (the
    first frame number past a damaged record, or None), ``file_error``,
    ``truncation`` (only without damage: a whole-file read stops at the damage),
    ``skipped_blocks`` and ``impossible_timestamps`` (of the ranges that start
    before the cut)."""
    out: dict = {}
    reports = sorted(((i, n, json.loads(r)) for i, n, r in rows), key=lambda t: (t[0], t[2]["first_number"]))
    for index, number, r in reports:
        c = out.setdefault(index, {"cut": None, "file_error": None, "truncation": None, "skipped_blocks": 0,
                                   "impossible_timestamps": 0})
        if c["cut"] is not None:
            continue   # ranges are in frame order: the rest lie past the damage
        c["skipped_blocks"] += sum(r["skipped_blocks"].values())
        c["impossible_timestamps"] += r["impossible_timestamps"]
        if r["file_error"] is not None:
            c["cut"], c["file_error"], c["truncation"] = number, r["file_error"], None
        elif r["truncation"] is not None:
            c["truncation"] = r["truncation"]
    return out


def _frames_batch(index: int, frames: list, keys_of, core) -> pa.RecordBatch:
    """Stage 3's rows of ``frames`` with their keys (``keys_of``; the compiled
    ``core``'s ``frame_keys`` first where it is built) as a batch of :data:`FRAMES_SCHEMA`."""
    frame_cols = list(zip(*frames))   # Frame's fields: number, ts_ns, linktype, caplen, origlen, data, interface_id
    if core is not None:
        keys = core.frame_keys(frame_cols[5], frame_cols[2], frame_cols[3], frame_cols[4])
        keys = [k if k is not None else keys_of(f) for k, f in zip(keys, frames)]
    else:
        keys = [keys_of(f) for f in frames]
    key_cols = list(zip(*keys))
    cols = {"capture_index": [index] * len(frames), "number": frame_cols[0], "ts_ns": frame_cols[1],
            "linktype": frame_cols[2], "caplen": frame_cols[3], "origlen": frame_cols[4], "data": frame_cols[5],
            "interface_id": frame_cols[6], "conn": key_cols[0], "pair": key_cols[1], "fragment": key_cols[2],
            "range_report": [None] * len(frames)}
    return pa.RecordBatch.from_pydict(cols, schema=FRAMES_SCHEMA)


def _runs(batches):
    """(capture index, the batch's slice of that capture's frames) per run of an index."""
    import numpy as np

    for b in batches:
        n = b.num_rows
        if not n:
            continue
        index = b.column("capture_index").to_numpy()
        starts = [0] + (np.flatnonzero(index[1:] != index[:-1]) + 1).tolist() + [n]
        for a, z in zip(starts[:-1], starts[1:]):
            yield int(index[a]), b.slice(a, z - a)


def _convert_groups(conv, batches, names: dict):
    """Stage 5's conversion of frames sorted by (capture, group, number): each
    capture's groups in one pass, one group after another (frame numbers go back
    where a group ends; rows as group by group, tests/test_capture_connections.py),
    so that thousands of small connections cost one conversion's fixed cost, not one
    each.  Yields (capture index, the frames that opened its connections here)."""
    for index, part in itertools.groupby(_runs(batches), key=lambda t: t[0]):
        yield index, conv.add_frames((b for _, b in part), names[index][0], index=index)


def _convert(batches, names: dict, options, target: pa.Schema):
    """Stage 5, a mapInArrow function: frames sorted by (capture, group,
    number) -> the ``all`` rows of their conversion, the connections' opening
    frames (tag :data:`STREAMS`) and the task's report (tag ``captures``).
    The conversion runs in a thread handing each chunk of rows over a queue of
    :data:`~mqcodec.spark.datasource.QUEUE_CHUNKS`, so that a task holds a few
    chunks, never a connection's output (``Converter.add_frames`` flushes
    every ``chunk_messages`` rows)."""
    from mqcodec.convert import Converter

    from .datasource import produced_in_thread, wide_batches

    def produce(put) -> None:
        conv = Converter(lambda name, table: put((name, table)), options, render_thread=(options.threads or 1) > 1)
        try:
            for index, opened in _convert_groups(conv, batches, names):
                for i in range(0, len(opened), _BATCH_FRAMES):
                    put((STREAMS, pa.table({"capture_index": [index] * len(opened[i:i + _BATCH_FRAMES]),
                                            "opened": opened[i:i + _BATCH_FRAMES]}, schema=_STREAMS_SCHEMA)))
            conv.drain()
        finally:
            conv.drain_quietly()
        put(("captures", _task_report(conv)))

    for name, table in produced_in_thread(produce, "mqcodec-split-convert"):
        yield from wide_batches(name, table, target)


def _task_report(conv, opened: dict | None = None) -> pa.Table:
    """The task's report row; ``opened``: capture index -> how many connections the
    task opened (``connections opened``, checked by :func:`check_numbering`)."""
    from .datasource import CAPTURES_SCHEMA

    report = conv.report(top=None)
    report[PEAK_RSS] = peak_rss_mib()
    if opened is not None:
        report["connections opened"] = {str(k): v for k, v in opened.items()}
    return pa.table({"index": [-1], "capture": ["(split)"], "report": [json.dumps(report, sort_keys=True, default=str)]},
                    schema=CAPTURES_SCHEMA)


def _opened(batches, names: dict, options_text: str):
    """Stage 5a of a job whose tasks write their own files, a mapInArrow function:
    the frames that open the connections of frames sorted by (capture, group,
    number), found by the capture core's reassembly alone (no port or content is
    a protocol's: nothing is framed or decoded)."""
    import dataclasses

    from mqcodec.convert import ConvertOptions, Converter

    options = ConvertOptions.from_text(options_text)
    quiet = dataclasses.replace(options, mq_ports=(), msmq_ports=(), detect_by_content=False)
    conv = Converter(lambda name, table: None, quiet)
    for index, opened in _convert_groups(conv, batches, names):
        for i in range(0, len(opened), _BATCH_FRAMES):
            part = opened[i:i + _BATCH_FRAMES]
            yield pa.RecordBatch.from_pydict({"capture_index": [index] * len(part), "opened": part},
                                             schema=_STREAMS_SCHEMA)


class Renumbered:
    """A sink that gives the rows it passes on their capture-wide ``tcp_stream``:
    the rank of the frame that opened their connection (what
    ``Converter.add_frames`` puts there) among the capture's ``streams`` (capture
    index -> every opening frame of the capture, sorted), as
    :func:`stream_numbering` does with a join.  A frame not among them gives null."""

    def __init__(self, sink, streams: dict) -> None:
        self.sink = sink
        self.streams = streams

    def __call__(self, table: str, rows: pa.Table) -> None:
        import numpy as np

        from mqcodec.arrow_kernels import fill_null, from_numpy
        from mqcodec.convert.keys import KEY_CAPTURE_SHIFT
        from mqcodec.convert.tables import MQ_CALLS

        if rows.num_rows and "tcp_stream" in rows.column_names:
            key = rows.column("call_key" if table == MQ_CALLS else "message_key")
            capture = fill_null(key, 0).to_numpy() >> KEY_CAPTURE_SHIFT
            opened = rows.column("tcp_stream")
            frame = fill_null(opened, -1).to_numpy()
            index = np.full(len(frame), -1, dtype=np.int64)
            for c in np.unique(capture[frame >= 0]).tolist():
                known = np.asarray(self.streams.get(c, ()), dtype=np.int64)
                sel = np.flatnonzero((capture == c) & (frame >= 0))
                if not len(known) or not len(sel):
                    continue
                at = np.minimum(np.searchsorted(known, frame[sel]), len(known) - 1)
                index[sel] = np.where(known[at] == frame[sel], at, -1)
            i = rows.schema.get_field_index("tcp_stream")
            rows = rows.set_column(i, rows.schema.field(i), from_numpy(index, mask=index < 0))
        self.sink(table, rows)


def _write_groups(batches, names: dict, options_text: str, root: str, partition_by, streams):
    """Stage 5b of a job whose tasks write their own files, a mapInArrow function:
    the conversion of frames sorted by (capture, group, number), its rows written
    as Parquet files under ``root`` (the job's temporary folder, which the executors
    see: a local output) with their capture-wide ``tcp_stream`` (:class:`Renumbered`,
    ``streams`` a broadcast of stage 5a's opening frames); yields the task's report
    (tag ``captures``).  The attempt writes into a folder of its own, moved into
    place when it succeeds (:class:`mqcodec.spark.storage.AttemptFolder`)."""
    import numpy as np
    from pyspark import TaskContext

    from mqcodec.convert import ConvertOptions

    from .storage import converting_into

    options = ConvertOptions.from_text(options_text)
    ctx = TaskContext.get()
    if ctx is None:
        raise RuntimeError("mqcodec.spark.split._write_groups runs in a Spark task")
    part = ctx.partitionId()
    known = streams.value
    counts: dict = {}
    with converting_into(root, "split-%05d" % part, options, partition_by=partition_by, part="part-%05d" % part,
                         wrap=lambda sink: Renumbered(sink, known)) as (conv, _):
        for index, opened in _convert_groups(conv, batches, names):
            counts[index] = counts.get(index, 0) + len(opened)
            # the sorted opening frames of 5a, searched (not a set of every connection per task)
            missing = np.setdiff1d(np.asarray(opened, dtype=np.int64), known.get(index, np.empty(0, np.int64)))
            if len(missing):   # stage 5a found other connections: the numbering would be wrong
                raise RuntimeError("mqcodec split job: capture %d: connections opened at frames %s were not "
                                   "found by the numbering stage" % (index, missing[:5].tolist()))
    yield from _task_report(conv, counts).to_batches()


def write_in_tasks(spark, files: list, options, root: str, *, split_size: int, partitions: int | None = None,
                   partition_by=None) -> tuple[list, dict]:
    """Stages 1-4 as :func:`split_rows`, then 5a (the connections' opening frames,
    collected and broadcast) and 5b (each task converts its groups and writes its
    rows' Parquet files under ``root``, with their capture-wide ``tcp_stream``):
    nothing goes through the JVM but the frames and the reports.  Returns the
    tasks' report rows and the plan's figures (as :func:`split_rows`)."""
    import numpy as np

    from .datasource import CAPTURES_SCHEMA
    from .schema import to_spark_schema

    grouped, figures, names = _grouped(spark, files, options, split_size=split_size, partitions=partitions)
    # read twice (5a, 5b), shuffled twice from the frames cached on disk: caching the grouped
    # frames instead builds Spark's columnar batches of 10,000 frames on the executor's heap
    # (768 MiB executors ran out of it on a 512 MiB capture)
    text = options.to_text()
    opened: dict = {}
    for row in grouped.mapInArrow(lambda it: _opened(it, names, text), to_spark_schema(_STREAMS_SCHEMA)).collect():
        opened.setdefault(row["capture_index"], []).append(row["opened"])
    streams = spark.sparkContext.broadcast({i: np.unique(np.asarray(v, dtype=np.int64)) for i, v in opened.items()})
    try:
        reports = [r.asDict() for r in grouped.mapInArrow(
            lambda it: _write_groups(it, names, text, root, partition_by, streams),
            to_spark_schema(CAPTURES_SCHEMA)).collect()]
    finally:
        streams.destroy()
    check_numbering(reports, {i: len(v) for i, v in opened.items()})
    return reports, figures


def check_numbering(reports: list, found: dict) -> None:
    """The conversion tasks opened, per capture, as many connections as the
    numbering stage found (``found``: capture index -> count): each task checked
    that it opened none the stage did not find, so equal counts mean the same
    connections, and every ``tcp_stream`` written is the local engine's.  Raises
    RuntimeError otherwise (the files are in the job's temporary folder, which the
    failed job discards)."""
    from collections import Counter

    opened: Counter = Counter()
    for row in reports:
        for index, n in json.loads(row["report"]).pop("connections opened", {}).items():
            opened[int(index)] += n
    for index in sorted(set(opened) | set(found)):
        if opened[index] != found.get(index, 0):
            raise RuntimeError("mqcodec split job: capture %d: the numbering stage found %d connections, the "
                               "conversion opened %d: tcp_stream would be wrong" % (index, found.get(index, 0),
                                                                                   opened[index]))


def wide_schema_with_streams(columns=()) -> pa.Schema:
    from .datasource import wide_schema

    base = wide_schema(columns)
    return base.append(pa.field(STREAMS, pa.struct(list(_STREAMS_SCHEMA))))


def _grouped(spark, files: list, options, *, split_size: int, partitions: int | None = None) -> tuple[Any, dict, dict]:
    """Stages 1-4 for ``files`` (the job's inputs, in order): the frames grouped
    and sorted for stage 5 (a DataFrame), the plan's figures (``ranges``,
    ``tasks``; :func:`finish_reports` adds ``shuffled_bytes``) and the captures'
    names (index -> (display name, uri))."""
    import pickle

    from pyspark.sql import functions as F

    from mqcodec.capture.ranges import capture_kind, check_plan, frame_number_bases, plan_ranges
    from mqcodec.capture.segments import pair_key  # noqa: F401  (the keys' module, imported for executors)

    from .schema import to_spark_schema
    from .storage import display_name, input_source

    names = {i: (display_name(uri), uri) for i, uri in enumerate(files)}
    plans: list = []
    not_read: list = []
    by_range: list = []   # pcap captures of several ranges: a scan task per range
    for i, uri in enumerate(files):
        try:
            with input_source(uri) as source:
                plan = [tuple(r) for r in plan_ranges(source, split_size)]
                pcap = len(plan) > 1 and capture_kind(source) == "pcap"
        except OSError:   # perhaps visible to the executors: the scan task says
            plans.append((i, uri, [(0, 0, 1)]))
            continue
        (by_range if pcap else plans).append((i, uri, plan))
    sc = spark.sparkContext
    scanned = []
    if by_range:
        range_tasks = [(i, uri, r) for i, uri, plan in by_range for r in plan]
        found = sc.parallelize(range_tasks, len(range_tasks)).map(_scan_range).collect()
        for i, uri, plan in by_range:
            per_file = sorted((f for f in found if f[0] == i), key=lambda f: f[1][0])
            if any(f[2] is None for f in per_file) or check_plan([f[2] for f in per_file]):
                plans.append((i, uri, plan))   # damage, an unreadable range or a false start: the whole-file scan
            else:
                scanned.append(per_file)
    scanned += sc.parallelize(plans, max(1, len(plans))).map(_scan).collect() if plans else []
    scanned.sort(key=lambda per_file: per_file[0][0] if per_file else -1)
    tasks = []
    for per_file in scanned:
        if per_file and per_file[0][1] is None:
            not_read.append((per_file[0][0], per_file[0][2]))
            continue
        bases = frame_number_bases([s.numbers for _, _, s in per_file])
        for (index, rng, scan), first in zip(per_file, bases):
            tasks.append((index, rng[0], rng[1], rng[2], first, pickle.dumps(scan)))
    ranges_df = spark.createDataFrame(tasks, "capture_index long, part long, start long, end long, "
                                             "first_number long, scan binary").repartition(max(1, len(tasks)))
    from pyspark import StorageLevel

    # read once: the fragment pairs and the shuffle both need the frames.  On disk only: a
    # range's frames held in the executor's memory store (MEMORY_AND_DISK) ran a 768 MiB
    # executor out of heap on 128 MiB ranges (the cached column batches are built on the
    # heap before the store decides to spill); written to disk they stream, a batch at a time
    frames = ranges_df.mapInArrow(lambda it: _frames(it, names), to_spark_schema(FRAMES_SCHEMA)) \
        .persist(StorageLevel.DISK_ONLY)
    # the file structure: a capture ends at its first damaged record, as in the local engine
    range_rows = frames.where(F.col("range_report").isNotNull()).select(
        "capture_index", "number", "range_report").collect()
    structure = file_structure(range_rows)
    kept = frames.where(F.col("range_report").isNull())
    for index, c in structure.items():
        if c["cut"] is not None:
            kept = kept.where((F.col("capture_index") != index) | (F.col("number") < c["cut"]))
    fragmented = kept.where("fragment").select("capture_index", "pair").distinct()
    marked = kept.join(F.broadcast(fragmented.withColumn("_frag", F.lit(True))), ["capture_index", "pair"], "left")
    group = (F.when(F.col("_frag").isNotNull(), F.concat(F.lit(b"p"), F.col("pair")))
             .when(F.length("conn") > 0, F.concat(F.lit(b"c"), F.col("conn")))
             .otherwise(F.lit(b"")))
    convert_tasks = partitions or max(1, sc.defaultParallelism)
    grouped = (marked.withColumn("group", group).drop("_frag", "conn", "pair", "fragment", "range_report")
               .repartition(convert_tasks, "capture_index", "group")
               .sortWithinPartitions("capture_index", "group", "number"))
    # a repartition to a number of partitions keeps it under adaptive execution (``grouped.rdd``
    # would ask, but it runs the fragments' and the frames' shuffle to find out: a pass for nothing)
    figures = {"ranges": len(tasks), "tasks": {"scan": len(plans) + sum(len(p) for _, _, p in by_range),
                                               "frames": len(tasks), "convert": convert_tasks}}
    figures["_frames"] = frames
    figures["_kept"] = kept
    figures["_not_read"] = not_read
    figures["_structure"] = structure
    figures[PEAK_RSS] = max([json.loads(r[2]).get(PEAK_RSS, 0) for r in range_rows], default=0)
    return grouped, figures, names


def split_rows(spark, files: list, options, *, split_size: int, partitions: int | None = None) -> tuple[Any, dict]:
    """Stages 1-5 for ``files`` (the job's inputs, in order): the ``all`` rows
    (plus :data:`STREAMS` rows) as a DataFrame, and the plan's figures
    (``ranges``, ``tasks``; :func:`finish_reports` adds ``shuffled_bytes``)."""
    from .schema import spark_arrow_schema, to_spark_schema

    grouped, figures, names = _grouped(spark, files, options, split_size=split_size, partitions=partitions)
    schema = wide_schema_with_streams(options.columns)
    spark_schema = to_spark_schema(schema)
    target = spark_arrow_schema(spark_schema)
    rows = grouped.mapInArrow(lambda it: _convert(it, names, options, target), spark_schema)
    return rows, figures


def stream_numbering(rows):
    """The opening frames of the :data:`STREAMS` rows ranked per capture ->
    a function (DataFrame of a table, its name) -> the same rows with
    ``tcp_stream`` the connection's index in the capture."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from mqcodec.convert.keys import KEY_CAPTURE_SHIFT
    from mqcodec.convert.tables import MQ_CALLS

    from .datasource import TAG

    opened = rows.where(F.col(TAG) == STREAMS).select("%s.*" % STREAMS)
    ranks = opened.withColumn("_index", F.row_number().over(
        Window.partitionBy("capture_index").orderBy("opened")) - F.lit(1))

    def number(df, table: str):
        if "tcp_stream" not in df.columns:
            return df
        # the capture index: the high bits of the row's key (message_key and call_key alike)
        key = "call_key" if table == MQ_CALLS else "message_key"
        cols = df.columns
        joined = df.withColumn("_capture", F.shiftright(F.col(key), KEY_CAPTURE_SHIFT)).join(
            F.broadcast(ranks),
            (F.col("_capture") == F.col("capture_index")) & (F.col("tcp_stream") == F.col("opened")),
            "left")
        return joined.select([F.col("_index").cast(df.schema["tcp_stream"].dataType).alias("tcp_stream")
                              if c == "tcp_stream" else F.col(c) for c in cols])

    return number


def finish_reports(reports: list, files: list, figures: dict) -> list:
    """The tasks' reports (one per convert task, a capture report in it for
    each capture it converted connections of) -> report rows for :func:`mqcodec.spark.pipeline._merge`: the
    tasks' own (their counters, which it sums) without their group reports,
    and one row with a report per capture, as the local engine lists them
    (the tasks' counters summed, ``tasks`` how many converted part of it;
    inputs not read with their error).
    ``figures`` gets ``shuffled_bytes`` (the frames' bytes through the shuffle) and
    ``python_peak_rss_mib`` the largest of the tasks' (:func:`peak_rss_mib`)."""
    from collections import Counter

    from pyspark.sql import functions as F

    from mqcodec.convert.converter import report_file_structure

    from .storage import display_name

    frames = figures.pop("_frames")
    not_read = dict(figures.pop("_not_read"))
    structure = figures.pop("_structure")
    figures["shuffled_bytes"] = int(figures.pop("_kept").agg(F.sum(F.length("data"))).collect()[0][0] or 0)
    frames.unpersist()
    merged: dict = {}
    out = []
    for row in reports:
        report = json.loads(row["report"])
        report.pop("connections opened", None)   # checked already (check_numbering)
        figures[PEAK_RSS] = max(figures.get(PEAK_RSS, 0), report.pop(PEAK_RSS, 0))
        for c in report["captures"]:
            m = merged.setdefault(c.get("index", 0), {"capture": c["capture"], "stats": Counter(), "tasks": 0})
            m["tasks"] += 1
            m["stats"].update({k: v for k, v in c.get("stats", {}).items() if isinstance(v, int)})
        report["captures"] = []
        out.append({"index": -1, "capture": row["capture"], "report": json.dumps(report, default=str)})
    captures: list = []
    summary: Counter = Counter({"captures not read": len(not_read)})
    for i, uri in enumerate(files):
        if i in not_read:   # as the local engine reports an input it cannot read
            captures.append({"index": i, "capture": display_name(uri), "error": not_read[i], "stats": {}})
            continue
        m = merged.get(i, {"capture": display_name(uri), "stats": Counter(), "tasks": 0})
        captures.append({"index": i, "capture": m["capture"], "stats": dict(m["stats"]), "tasks": m["tasks"]})
        c = structure.get(i)
        if c is not None:   # as the local engine reports the file structure
            report_file_structure(captures[-1], summary, file_error=c["file_error"], truncation=c["truncation"],
                                  skipped_blocks=c["skipped_blocks"], impossible_timestamps=c["impossible_timestamps"])
    per_capture = {"summary": {k: v for k, v in summary.items() if v}, "messages_by_protocol_and_kind": {},
                   "captures": captures}
    out.append({"index": len(files), "capture": "(captures)", "report": json.dumps(per_capture, default=str)})
    return out
