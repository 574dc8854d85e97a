"""pcap2parquet's threads (issue 18, part 2) and its start (part 3).

* ``--threads N`` / ``ConvertOptions.threads``: Parquet written on background
  threads gives the same files as one thread -- every table, its rows and its
  row groups, for both capture pipelines; a writer's failure reaches the
  caller; the writers' queues are bounded; the Spark engine rejects it.
* ``python -m mqcodec pcap2parquet`` never imports pandas (both capture
  pipelines, the real capture and an empty one); with the compiled core, a
  capture with no message imports neither the IBM MQ call declarations, nor
  construct, nor ``pyarrow.compute``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import CAPTURES

from mqcodec import synth
from mqcodec.convert import sinks, tables
from mqcodec.capture.writer import PcapWriter
from mqcodec.errors import DecodeError
from mqcodec.convert import ConvertOptions, NoCaptureRead, available_cores, convert, writer_threads

JMS = CAPTURES / "ibmmq_jms_client_1414.pcap"


def _capture_impl(impl: str) -> str:
    if impl == "c":
        pytest.importorskip("mqcodec._ext.capture_core")
    return impl


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    path = tmp_path_factory.mktemp("sim") / "sim.pcap"
    synth.write_capture(str(path), seed=7, messages=60)
    return path


def _plain(t: pa.Table) -> pa.Table:
    """``t`` with its dictionary columns decoded."""
    return pa.table({f.name: t.column(f.name).cast(f.type.value_type) if pa.types.is_dictionary(f.type)
                     else t.column(f.name) for f in t.schema})


def _files(outdir) -> dict:
    """table -> (its Parquet file's rows, row-group sizes) of a job's output."""
    out = {}
    for table in tables.TABLES:
        f = pq.ParquetFile(outdir / table / "part-00000-c000.parquet")
        out[table] = (f.read(), [f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)])
    return out


@pytest.mark.parametrize("impl", ["c", "py"])
def test_threads_write_the_same_files(tmp_path, simulated, impl, monkeypatch):
    """N=1 (no background thread), N=2 (one writer) and N=5 (one writer per
    table): equal tables, row groups included, on the simulator's capture and
    the real one converted in one job, in small chunks (many row groups)."""
    _capture_impl(impl)
    from mqcodec.convert import compiled

    # the compiled core takes its input in pieces of 8 KiB, its output taken after each: a
    # chunk of rows ends after each piece that makes enough of them (whole MiB pieces: one
    # chunk per capture here)
    monkeypatch.setattr(compiled, "CHUNK", 8192)
    monkeypatch.setattr(compiled, "TAKE_BYTES", 8192)
    from mqcodec.convert import Converter

    rendered_by: set = set()
    render = Converter._render

    def watched(self, *args):
        rendered_by.add(threading.current_thread().name)
        return render(self, *args)

    monkeypatch.setattr(Converter, "_render", watched)
    inputs = [str(simulated), str(JMS)]
    results = {}
    for n in (1, 2, 5):
        opts = ConvertOptions(capture_impl=impl, threads=n, chunk_messages=97, row_group_rows=1)
        rendered_by.clear()
        report = convert(inputs, str(tmp_path / str(n)), opts)
        results[n] = (report, _files(tmp_path / str(n)))
        # with threads, the chunks are decoded and assembled by the render thread
        assert rendered_by == ({threading.current_thread().name} if n == 1 else {"mqcodec-render"}), n
    report1, files1 = results[1]
    assert report1["summary"]["messages"] > 200 and report1["summary"]["calls"] > 200
    assert len(files1[tables.MQ_MESSAGES][1]) >= 3  # several row groups: the order of writes matters
    for n in (2, 5):
        report, files = results[n]
        assert report == report1, n
        for table in tables.TABLES:
            t1, groups1 = files1[table]
            t, groups = files[table]
            assert groups == groups1, (n, table)
            assert t.schema == t1.schema and t.equals(t1), (n, table)


@pytest.mark.parametrize("impl", ["c", "py"])
def test_row_groups_gather_chunks(tmp_path, simulated, impl, monkeypatch):
    """A row group holds the rows of consecutive chunks until ``row_group_rows`` have
    come (the last one the rest): the same rows as a row group per chunk, in fewer row
    groups, the dictionary-encoded columns still written with a dictionary."""
    _capture_impl(impl)
    from mqcodec.convert import compiled

    monkeypatch.setattr(compiled, "CHUNK", 8192)      # chunks of the compiled core: see above
    monkeypatch.setattr(compiled, "TAKE_BYTES", 8192)
    inputs = [str(simulated), str(JMS)]
    out = {}
    for rows in (1, 120, 1 << 17):
        convert(inputs, str(tmp_path / str(rows)), ConvertOptions(capture_impl=impl, chunk_messages=7,
                                                                   row_group_rows=rows, row_groups_per_file=0))
        out[rows] = _files(tmp_path / str(rows))
    for table in tables.TABLES:
        t1, chunks = out[1][table]
        assert len(chunks) > 3 or table == tables.PCF_PARAMETERS, (table, chunks)
        for rows in (120, 1 << 17):
            t, groups = out[rows][table]
            assert _plain(t).equals(_plain(t1)), (table, rows)   # (the dictionaries are unified)
            # each row group is the consecutive chunks that first reach the size
            expected, at = [], 0
            for c in chunks:
                at += c
                if at >= rows:
                    expected.append(at)
                    at = 0
            assert groups == expected + ([at] if at else []), (table, rows, groups)
        assert len(out[1 << 17][table][1]) == 1, table
    meta = pq.ParquetFile(tmp_path / str(1 << 17) / tables.MQ_MESSAGES / "part-00000-c000.parquet").metadata
    capture = meta.schema.to_arrow_schema().get_field_index("capture")
    assert "RLE_DICTIONARY" in meta.row_group(0).column(capture).encodings


def test_threads_default_and_writer_count():
    assert available_cores() >= 1
    assert writer_threads(None) == min(available_cores() - 1, len(tables.TABLES))
    assert writer_threads(1) == 0
    assert writer_threads(2) == 1
    assert writer_threads(64) == len(tables.TABLES)
    with pytest.raises(ValueError, match="threads must be >= 1"):
        writer_threads(0)


class _SlowSink:
    """A sink that takes its time and counts what it holds."""

    def __init__(self, fail_at=None):
        self.got: list = []
        self.closed = None
        self.fail_at = fail_at
        self.thread_names: set = set()

    def __call__(self, table, rows):
        self.thread_names.add(threading.current_thread().name)
        time.sleep(0.01)
        if self.fail_at is not None and len(self.got) == self.fail_at:
            raise OSError(28, "No space left on device")
        self.got.append((table, rows.num_rows))

    def close(self, *, complete=True):
        self.closed = complete
        return []


def _rows(n):
    return pa.table({"x": pa.array(list(range(n)), pa.int64())})


def test_background_sink_keeps_order_and_bounds_its_queue():
    inner = _SlowSink()
    sink = sinks.BackgroundSink(inner, workers=1, max_pending=3)
    waits = []
    for i in range(12):
        t0 = time.perf_counter()
        sink(tables.MQ_MESSAGES if i % 2 else tables.MQ_CALLS, _rows(i))
        waits.append(time.perf_counter() - t0)
        # never more than max_pending tables queued, plus the one being written
        assert sink.workers[0].pending <= 3
    sink.close(complete=True)
    assert inner.closed is True
    assert inner.got == [(tables.MQ_MESSAGES if i % 2 else tables.MQ_CALLS, i) for i in range(12)]
    assert inner.thread_names == {"mqcodec-writer-0"}
    assert max(waits) > 0.005  # the caller waited on a full queue


def test_background_sink_starts_its_workers_with_the_first_big_table():
    """With start_rows the tables smaller than it are written by the caller
    until the first one that is not; from then on the workers write, and every
    table keeps its order."""
    inner = _SlowSink()
    sink = sinks.BackgroundSink(inner, workers=2, start_rows=5)
    for n in (1, 4, 2):
        sink(tables.MQ_MESSAGES, _rows(n))
        sink(tables.MQ_CALLS, _rows(n))
    assert inner.thread_names == {threading.current_thread().name} and not any(w.started for w in sink.workers)
    for n in (5, 1, 3):   # 5 rows: the workers start; the small tables after it are theirs too
        sink(tables.MQ_MESSAGES, _rows(n))
        sink(tables.MQ_CALLS, _rows(n))
    sink.close()
    for t in (tables.MQ_MESSAGES, tables.MQ_CALLS):
        assert [n for name, n in inner.got if name == t] == [1, 4, 2, 5, 1, 3]
    assert {"mqcodec-writer-0", "mqcodec-writer-1"} <= inner.thread_names
    assert len(inner.thread_names) == 3

    inner = _SlowSink()
    sink = sinks.BackgroundSink(inner, workers=1, start_rows=100)
    sink(tables.MQ_MESSAGES, _rows(3))
    sink.close()   # no worker ever started: nothing to join
    assert inner.got == [(tables.MQ_MESSAGES, 3)] and inner.closed is True


def test_background_sink_workers_per_table():
    inner = _SlowSink()
    sink = sinks.BackgroundSink(inner, workers=4)
    for i in range(8):
        for t in tables.TABLES:
            sink(t, _rows(i))
    sink.close()
    for t in tables.TABLES:  # each table's own order kept
        assert [n for name, n in inner.got if name == t] == list(range(8))
    assert len(inner.thread_names) == 4


def test_background_sink_failure_reaches_the_caller():
    inner = _SlowSink(fail_at=2)
    sink = sinks.BackgroundSink(inner, workers=1, max_pending=2)
    with pytest.raises(OSError, match="No space left"):
        for i in range(50):  # raised by a later call, never a deadlock on the full queue
            sink(tables.MQ_MESSAGES, _rows(1))
    sink.close(complete=True)  # reported already: not raised twice; the tables are not completed
    assert inner.closed is False
    assert len(inner.got) == 2

    inner = _SlowSink(fail_at=0)
    sink = sinks.BackgroundSink(inner, workers=1)
    sink(tables.MQ_MESSAGES, _rows(1))
    with pytest.raises(OSError, match="No space left"):  # raised by close when no call saw it
        sink.close(complete=True)
    assert inner.closed is False


def _open_files() -> int:
    import os

    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/dev/full and /proc are Linux's")
@pytest.mark.parametrize("how", ["small", "big", "footer"])
def test_a_parquet_file_on_a_full_disk_raises_and_is_let_go(how, monkeypatch):
    """A Parquet file is written through a buffer (sinks.WRITE_BUFFER), yet a
    device with no room (Linux's /dev/full) fails it: a row group whose pages
    outgrow the buffer raises as it is written, a small one by the file's close;
    and the close lets the file go whatever raised, the footer's writing included."""
    import random

    rng = random.Random(7)
    n = 4 * sinks.WRITE_BUFFER // 1000 if how == "big" else 10
    table = pa.table({"raw": pa.array([rng.randbytes(1000) for _ in range(n)], pa.binary())})
    before = _open_files()
    f = sinks.ParquetFile("/dev/full", table.schema, "zstd", table)
    assert _open_files() == before + 1
    if how == "big":
        with pytest.raises(OSError, match="No space left"):
            f.write_table(table)
    else:
        f.write_table(table)   # still in the buffer
    if how == "footer":   # the writer fails before the file is flushed
        class NoFooter:
            def close(self):
                raise OSError(28, "No space left on device (footer)")

        monkeypatch.setattr(f, "_writer", NoFooter())
    with pytest.raises(OSError, match="No space left"):
        f.close()
    assert _open_files() == before


def test_a_sink_closes_every_file_when_one_fails(tmp_path, monkeypatch):
    """DatasetSink.close closes every part file although one fails (a full disk
    at its footer), then raises that failure."""
    closed = []
    original = sinks.ParquetFile.close

    def close(self):
        closed.append(os.path.basename(os.path.dirname(self.path)))
        original(self)
        if len(closed) == 1:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(sinks.ParquetFile, "close", close)
    sink = sinks.DatasetSink(str(tmp_path))
    with pytest.raises(OSError, match="No space left"):
        sink.close(complete=True)   # an empty part file for each table
    assert sorted(closed) == sorted(tables.TABLES)


@pytest.mark.parametrize("threads", [1, 2])
def test_convert_reports_a_writer_failure(tmp_path, monkeypatch, threads):
    """An output that cannot be written fails the job with the OSError (exit
    status 3 on the command line) whichever thread wrote it, and is not taken
    for an input that could not be read."""
    def full(self, table, date, rows):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sinks.DatasetSink, "_write", full)
    with pytest.raises(OSError, match="No space left") as info:
        convert([str(JMS), str(JMS)], str(tmp_path / "o"), ConvertOptions(threads=threads))
    assert not isinstance(info.value, NoCaptureRead)


@pytest.mark.parametrize("stage", ["_write_block", "_calls_rows"])
@pytest.mark.parametrize("error", [ValueError, DecodeError, OSError])
@pytest.mark.parametrize("threads", [1, 2])
def test_convert_reports_a_rendering_failure(tmp_path, monkeypatch, threads, error, stage):
    """What decoding or assembling a chunk raises fails the job whichever thread
    did it (the render thread's exception is raised in the reading thread, by its
    next flush or at the end), with no wait on the full queue -- even an error of
    the kinds an unreadable input raises, whichever capture is being read then: it
    is not that capture's.  ``_calls_rows`` (a chunk's mq_calls table) runs on the
    reading thread when a render thread renders the rest."""
    from mqcodec.convert import Converter

    calls = []
    original = getattr(Converter, stage)

    def broken(self, *args):
        calls.append(1)
        if len(calls) == 2:
            raise (error("chunk", "field", 0, "assembly went wrong") if error is DecodeError
                   else error("assembly went wrong"))
        return original(self, *args)

    monkeypatch.setattr(Converter, stage, broken)
    with pytest.raises(error, match="assembly went wrong"):
        convert([str(JMS)] * 6, str(tmp_path / "o"), ConvertOptions(threads=threads, chunk_messages=10))


def _run(*args):
    return subprocess.run([sys.executable, "-m", "mqcodec", *map(str, args)], capture_output=True)


def test_cli_threads(tmp_path):
    r = _run("pcap2parquet", JMS, "-o", tmp_path / "a", "--threads", "1")
    assert r.returncode == 0, r.stderr
    r2 = _run("pcap2parquet", JMS, "-o", tmp_path / "b", "--threads", "3")
    assert r2.returncode == 0, r2.stderr
    assert json.loads(r.stdout) == json.loads(r2.stdout)
    for table in tables.TABLES:
        assert pq.read_table(tmp_path / "a" / table).equals(pq.read_table(tmp_path / "b" / table)), table
    bad = _run("pcap2parquet", JMS, "-o", tmp_path / "c", "--threads", "0")
    assert bad.returncode == 2 and b"--threads" in bad.stderr and b"not a positive integer" in bad.stderr
    assert "--threads" in _run("pcap2parquet", "--help").stdout.decode()


# ---------------------------------------------------------------------------
# start: no pandas on the conversion path
# ---------------------------------------------------------------------------
#: what a capture with no message does not need: the IBM MQ call declarations and
#: construct (the pure readers and decoders), Arrow's compute functions (about 50 ms
#: of wrapping at import), numpy.ma (imported by the first plain np.unique)
HEAVY = ("mqcodec.ibmmq.calls", "mqcodec.ibmmq.conversation", "construct", "pyarrow.compute", "numpy.ma",
         "mqcodec.ccsid", "pyarrow.fs", "pyarrow.parquet")

_WRAPPER = """\
import json, runpy, sys
HEAVY = %r
sys.argv = ["mqcodec"] + sys.argv[1:]
status = 0
from mqcodec.cli import main   # what the command runs (its run() would end the process at once)
try:
    status = main(sys.argv[1:])
except SystemExit as exc:
    status = exc.code
print(json.dumps({"status": status, "pandas": sorted(m for m in sys.modules if m.split(".")[0] == "pandas"),
                  "pyarrow": "pyarrow" in sys.modules,
                  "heavy": sorted(m for m in HEAVY if m in sys.modules)}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def empty_capture(tmp_path_factory):
    path = tmp_path_factory.mktemp("empty") / "empty.pcap"
    with open(path, "wb") as f:
        PcapWriter(f)
    return path


@pytest.mark.parametrize("impl", ["c", "py"])
@pytest.mark.parametrize("which", ["real", "empty", "simulated"])
def test_pcap2parquet_does_not_import_pandas(tmp_path, impl, which, empty_capture, simulated):
    _capture_impl(impl)
    import importlib.util

    if importlib.util.find_spec("pandas") is None:
        pytest.skip("pandas not installed: nothing to check")
    capture = {"real": JMS, "empty": empty_capture, "simulated": simulated}[which]
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(_WRAPPER % (HEAVY,))
    r = subprocess.run([sys.executable, str(wrapper), "pcap2parquet", str(capture), "-o", str(tmp_path / "o"),
                        "--capture-impl", impl, "--threads", "2"], capture_output=True)
    state = json.loads(r.stderr.decode().strip().splitlines()[-1])
    assert state["status"] == 0, r.stderr
    assert state["pyarrow"]  # the job did run
    assert state["pandas"] == []
    # Parquet files are written without pyarrow.parquet's filesystem layer (sinks.ParquetFile)
    assert "pyarrow.fs" not in state["heavy"] and "pyarrow.parquet" not in state["heavy"], state["heavy"]
    if which == "empty" and impl == "c":
        # a fast start (issue 18): the compiled engine imports what a capture needs, when it needs it
        assert state["heavy"] == []
    elif which == "real":
        assert "mqcodec.ibmmq.conversation" in state["heavy"]   # (the probe sees what is imported)
        # the compiled engine reads every unit of the real capture over arrays (ibmmq.calls_batch):
        # the call declarations (construct) are the pure engine's
        assert ("mqcodec.ibmmq.calls" in state["heavy"]) == (impl == "py")
    if which != "empty" and impl == "c":
        # the conversion's kernels are called by name (mqcodec.arrow_kernels): neither
        # pyarrow.compute's wrappers nor numpy.ma are imported (issue 18)
        assert "pyarrow.compute" not in state["heavy"] and "numpy.ma" not in state["heavy"], state["heavy"]
    if which == "simulated" and impl == "c":
        # the simulated capture carries PCF messages (and MSMQ): their compiled decoders check
        # their tables against generated data (mqcodec.batch.mq_layout), not the construct
        # declarations (issue 18)
        assert pq.read_table(tmp_path / "o" / tables.PCF_PARAMETERS).num_rows > 0
        assert "construct" not in state["heavy"], state["heavy"]
    report = json.loads(r.stdout)
    frames = {"real": 695, "empty": 0}.get(which)
    if frames is not None:
        assert report["summary"].get("frames", 0) == frames
    # the tables are readable and the same as those of a process where pandas is loaded
    for table in tables.TABLES:
        assert pq.read_table(tmp_path / "o" / table).num_rows >= 0
    if which != "empty":
        convert([str(capture)], str(tmp_path / "ref"), ConvertOptions(capture_impl=impl, threads=1))
        for table in tables.TABLES:
            got, want = pq.read_table(tmp_path / "o" / table), pq.read_table(tmp_path / "ref" / table)
            assert got.equals(want) and got.schema.metadata == want.schema.metadata, table


def test_lazy_packages_resolve_every_public_name():
    """mqcodec.ibmmq, .msmq, .capture and .convert import their modules on first use
    (mqcodec._lazy): every name of their __all__ still resolves, to the
    object its module defines, and from-imports and dir() see them."""
    import importlib

    from mqcodec import _lazy

    for package in ("mqcodec.ibmmq", "mqcodec.msmq", "mqcodec.capture", "mqcodec.convert"):
        mod = importlib.import_module(package)
        names = _lazy._names(mod.__file__)
        assert names, package
        for name in mod.__all__:
            value = getattr(mod, name)
            assert value is not None, (package, name)
            if name in names:
                where, attr = names[name]
                source = importlib.import_module(where, package)
                assert value is (getattr(source, attr) if attr else source), (package, name)
            assert name in dir(mod)
        with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
            getattr(mod, "nothing_here")
    from mqcodec.msmq import FramedPacket, constants
    from mqcodec.msmq.framing import Packet

    assert FramedPacket is Packet and constants.TCP_PORT == 1801


def test_imports_stay_narrow():
    """What a module pulls in, in a fresh process: the MSMQ constants without
    the MSMQ decoders, mq_calls' decoder without the IBM MQ message and PCF
    decoders, the batch front door without its compiled modules."""
    code = (
        "import sys\n"
        "import mqcodec.msmq.constants, mqcodec.ibmmq.calls, mqcodec.batch\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('mqcodec'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "mqcodec.msmq.constants" in out and "mqcodec.ibmmq.calls" in out
    for absent in ("mqcodec.msmq.packet", "mqcodec.msmq.framing", "mqcodec.ibmmq.message", "mqcodec.ibmmq.pcf",
                   "mqcodec.ibmmq.traceroute", "mqcodec.batch.pcf_pure", "mqcodec._ext.mq_batch",
                   "mqcodec._ext.pcf_batch"):
        assert absent not in out, absent


def test_dictionaries_for_repeated_values_only(tmp_path, simulated):
    """A column chunk has a dictionary page when the column's values repeat in
    the file's first rows (its first row group here: ``tables.dictionary_columns``
    with them), never for free text and bytes (``body_text``, ``raw``); keys and
    message ids, every value its own, have none, codes and dictionary-encoded
    strings have one."""
    convert([str(simulated)], str(tmp_path / "o"), ConvertOptions(threads=1, raw=True, chunk_messages=40))
    exempt = set()
    for table in tables.TABLES:
        f = pq.ParquetFile(tmp_path / "o" / table / "part-00000-c000.parquet")
        paths = [f.schema.column(i).path for i in range(len(f.schema))]
        free = [p for p in paths if p.split(".")[0] in tables.NO_DICTIONARY]
        assert tables.dictionary_columns(tables.table_schema(table)) == [p for p in paths if p not in free]
        assert f.metadata.num_row_groups and f.metadata.num_rows
        chosen = set(tables.dictionary_columns(tables.table_schema(table), f.read_row_group(0)))
        assert chosen <= set(paths) - set(free), table
        for g in range(f.metadata.num_row_groups):
            group = f.metadata.row_group(g)
            for i in range(group.num_columns):
                chunk = group.column(i)
                if chunk.physical_type != "BOOLEAN":   # Parquet has no dictionary of booleans
                    assert chunk.has_dictionary_page == (chunk.path_in_schema in chosen), \
                        (table, chunk.path_in_schema)
                if chunk.path_in_schema in free:
                    exempt.add((table, chunk.path_in_schema))
        key = "call_key" if table == tables.MQ_CALLS else "message_key"
        # a message's key repeats in pcf_parameters (a row per parameter), nowhere else
        assert (key in chosen) == (table == tables.PCF_PARAMETERS) and ("capture" in chosen or table == tables.PCF_PARAMETERS), table
        if table == tables.MQ_MESSAGES:
            assert "md_msg_id" not in chosen and {"md_format", "md_msg_type", "kind"} <= chosen
    assert exempt == {(tables.MQ_MESSAGES, "body_text"), (tables.MQ_MESSAGES, "raw"), (tables.MQ_CALLS, "raw"),
                      (tables.MSMQ_PACKETS, "body_text"), (tables.MSMQ_PACKETS, "raw")}


def test_dictionaries_are_chosen_from_the_first_rows_only():
    """``dictionary_columns`` counts the distinct values of the sample's first
    ``DICTIONARY_SAMPLE_ROWS`` rows only (counting a whole row group cost 4 % of a
    conversion): a column that repeats there keeps its dictionary whatever follows,
    one whose first rows hardly repeat gets none."""
    import pyarrow as pa

    n = tables.DICTIONARY_SAMPLE_ROWS
    schema = pa.schema([pa.field("frame", pa.int64()), pa.field("queue_name", pa.string())])
    # frame: every value its own; queue_name: one name for the first rows, then every value its own
    sample = pa.table({"frame": pa.array(range(3 * n), pa.int64()),
                       "queue_name": pa.array(["Q"] * n + ["Q%d" % i for i in range(2 * n)])}, schema=schema)
    assert tables.dictionary_columns(schema, sample) == ["queue_name"]
    assert tables.dictionary_columns(schema, sample.slice(n)) == []


def test_parquet_file_writes_what_pyarrow_parquet_writes(tmp_path, simulated):
    """sinks.ParquetFile (pyarrow's writer class without pyarrow.parquet's filesystem
    layer) writes, byte for byte, the file pyarrow.parquet.ParquetWriter writes with
    the same schema, compression, dictionary and statistics columns, row group by row group; rows of another schema
    are refused."""
    convert([str(simulated)], str(tmp_path / "o"), ConvertOptions(threads=1, chunk_messages=50))
    for table in tables.TABLES:
        rows = pq.read_table(tmp_path / "o" / table)
        schema = tables.table_schema(table)
        groups = [rows.slice(0, rows.num_rows // 2), rows.slice(rows.num_rows // 2)]
        ours = sinks.ParquetFile(str(tmp_path / "ours.parquet"), schema, "zstd")
        theirs = pq.ParquetWriter(str(tmp_path / "theirs.parquet"), schema, compression="zstd",
                                  use_dictionary=tables.dictionary_columns(schema),
                                  write_statistics=tables.statistics_columns(schema))
        for g in groups:
            ours.write_table(g)
            theirs.write_table(g)
        ours.close()
        theirs.close()
        assert (tmp_path / "ours.parquet").read_bytes() == (tmp_path / "theirs.parquet").read_bytes(), table
    f = sinks.ParquetFile(str(tmp_path / "x.parquet"), tables.table_schema(tables.MQ_CALLS), "zstd")
    with pytest.raises(ValueError, match="schema"):
        f.write_table(_rows(3))
    f.close()
