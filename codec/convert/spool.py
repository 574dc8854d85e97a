"""Frames of one connection, or of several, as a capture the compiled core can
read: a nanosecond pcap in a temporary file (in memory up to
:data:`SPOOL_MEMORY`), with each record's frame number beside it.  The
cluster engine hands a task's frames as Arrow batches (:data:`FRAME_BATCH_SCHEMA`),
written a batch at a time without a Python object per frame."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["spool", "spooled_frames", "as_frames", "batch_frames", "as_batches", "FRAME_BATCH_SCHEMA",
           "SPOOL_MEMORY", "FrameNumbers"]

#: a spool of frames stays in memory up to this size, then goes to a temporary file (the
#: page cache's, not the process's): a spool in memory is held while its frames convert
#: (measured: 64 MiB in memory raised a conversion's peak by 55 MB over 8 MiB)
SPOOL_MEMORY = 8 << 20
#: the frame numbers of a spool (8 bytes per frame) likewise
NUMBERS_MEMORY = 1 << 20
_TS_LIMIT = (1 << 32) * 1_000_000_000   # a nanosecond pcap record holds 0 <= ts < 2^32 s


def spool(frames) -> tuple:
    """Frames, in the order to convert them, with any numbers -> ``(file,
    numbers, rest)``: a nanosecond pcap of them in a temporary file (memory up
    to :data:`SPOOL_MEMORY`), which the core reads like any capture, and each
    record's frame number (:class:`FrameNumbers`, a temporary file as well: a
    connection of a billion frames costs no memory per frame).  ``frames`` yields :class:`mqcodec.capture.frame.
    Frame` objects or Arrow record batches of frames (columns ``number``,
    ``ts_ns``, ``linktype``, ``caplen``, ``origlen``, ``data``,
    ``interface_id``: the cluster engine's, written a batch at a time).
    ``rest`` is None when every frame went in; else the frames (as ``Frame``
    objects) from the first one a pcap cannot hold as it is (another link
    type, a time before 1970 or unknown, a length of 2^32 or more) on, the
    spool holding those before it.  The caller closes ``file`` and ``numbers``."""
    import itertools
    import tempfile

    from ..capture.writer import PcapWriter

    it = as_batches(frames)
    f = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)
    numbers = FrameNumbers()
    writer = None
    for batch in it:
        if writer is None:
            writer = PcapWriter(f, batch.column("linktype")[0].as_py(), snaplen=1 << 30, nanosecond=True)
        k = _write_batch(f, numbers, batch, writer.linktype)
        if k < batch.num_rows:
            return f, numbers, itertools.chain(batch_frames(batch.slice(k)), as_frames(it))
    return f, numbers, None if writer is not None else iter(())


#: the columns of an Arrow batch of frames (:func:`spool`), ``Frame``'s fields
FRAME_BATCH_SCHEMA = pa.schema([("number", pa.int64()), ("ts_ns", pa.int64()), ("linktype", pa.int32()),
                                ("caplen", pa.int64()), ("origlen", pa.int64()), ("data", pa.binary()),
                                ("interface_id", pa.int32())])


def as_batches(items, size: int = 4096):
    """Non-empty Arrow batches of frames, from batches and ``Frame`` objects."""
    run: list = []
    for item in items:
        if isinstance(item, pa.RecordBatch):
            if run:
                yield _frame_batch(run)
                run = []
            if item.num_rows:
                yield item
            continue
        run.append(item)
        if len(run) >= size:
            yield _frame_batch(run)
            run = []
    if run:
        yield _frame_batch(run)


def _frame_batch(frames: list) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(zip(*frames), FRAME_BATCH_SCHEMA)],
                                      schema=FRAME_BATCH_SCHEMA)


def _write_batch(f, numbers, batch: pa.RecordBatch, linktype: int) -> int:
    """Write the batch's frames as pcap records up to the first one a pcap
    cannot hold as it is; returns how many were written."""
    from ..arrow_kernels import pc

    data = pc.cast(batch.column("data"), pa.large_binary())
    ts = batch.column("ts_ns").to_numpy()
    caplen = batch.column("caplen").to_numpy()
    origlen = batch.column("origlen").to_numpy()
    ok = (batch.column("linktype").to_numpy() == linktype) & (ts >= 0) & (ts < _TS_LIMIT) \
        & (origlen >= 0) & (origlen < 1 << 32) & (caplen == pc.binary_length(data).to_numpy())
    k = len(ok) if ok.all() else int(np.argmin(ok))
    if k == 0:
        return 0
    hdr = np.empty((k, 4), dtype="<u4")
    hdr[:, 0], hdr[:, 1] = np.divmod(ts[:k], 1_000_000_000)
    hdr[:, 2] = caplen[:k]
    hdr[:, 3] = origlen[:k]
    heads = pc.cast(pa.Array.from_buffers(pa.binary(16), k, [None, pa.py_buffer(hdr)]), pa.large_binary())
    records = pc.binary_join_element_wise(heads, data.slice(0, k), pa.scalar(b"", pa.large_binary()))
    offsets = np.frombuffer(records.buffers()[1], dtype=np.int64, count=k + 1, offset=records.offset * 8)
    f.write(memoryview(records.buffers()[2])[offsets[0]:offsets[k]])
    numbers.extend(batch.column("number").to_numpy()[:k])
    return k


class FrameNumbers:
    """The frame number of each record of a spool, in order: int64 in a temporary
    file (memory up to :data:`NUMBERS_MEMORY`), read back a window at a time
    (:meth:`window`, the compiled core's :meth:`number_frames`) or in order
    (iteration)."""

    def __init__(self) -> None:
        import tempfile

        self._file = tempfile.SpooledTemporaryFile(max_size=NUMBERS_MEMORY)
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def extend(self, numbers) -> None:
        self._file.seek(0, 2)
        self._file.write(np.ascontiguousarray(numbers, dtype="<i8").tobytes())
        self.count += len(numbers)

    def window(self, start: int, end: int) -> np.ndarray:
        """The numbers of records ``start`` to ``end`` (excluded; fewer past the last)."""
        end = min(end, self.count)
        if end <= start:
            return np.empty(0, np.int64)
        self._file.seek(start * 8)
        return np.frombuffer(self._file.read((end - start) * 8), dtype="<i8").astype(np.int64, copy=False)

    def __iter__(self):
        step = 1 << 16
        for start in range(0, self.count, step):
            yield from self.window(start, start + step).tolist()

    def close(self) -> None:
        self._file.close()


def batch_frames(batch: pa.RecordBatch):
    """The frames of an Arrow batch of frames (:func:`spool`) as ``Frame`` objects."""
    from ..capture.frame import Frame

    cols = batch.to_pydict()
    for i in range(batch.num_rows):
        yield Frame(cols["number"][i], cols["ts_ns"][i], cols["linktype"][i], cols["caplen"][i],
                    cols["origlen"][i], cols["data"][i], cols["interface_id"][i])


def as_frames(items):
    """``Frame`` objects, from frames and Arrow batches of frames (:func:`spool`)."""
    for item in items:
        if isinstance(item, pa.RecordBatch):
            yield from batch_frames(item)
        else:
            yield item


def spooled_frames(f, numbers):
    """The frames of a :func:`spool` again, with their numbers."""
    from ..capture import open_capture

    f.seek(0)
    for frame, number in zip(open_capture(f), numbers):
        yield frame._replace(number=number)
