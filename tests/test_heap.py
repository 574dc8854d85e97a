"""mqcodec.convert.heap: the conversion keeps freed buffers in the heap and
trims it only when it holds much free memory.  Run in a child process: the
settings are the whole process's."""
import subprocess
import sys
import textwrap

import pytest

from mqcodec.convert import heap

pytestmark = pytest.mark.skipif(heap._LIBC is None, reason="glibc only (mallopt, mallinfo2, malloc_trim)")

CHILD = textwrap.dedent("""
    import ctypes, json, sys
    from mqcodec.convert import heap
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    out = {"tuned": heap.tune()}

    def churn(n, size):
        # n buffers of size bytes, written (so their pages are in), then freed but the last
        ptrs = [libc.malloc(size) for _ in range(n)]
        for p in ptrs:
            ctypes.memset(p, 1, size)
        for p in ptrs[:-1]:
            libc.free(p)
        return ptrs[-1]

    keep = churn(8, 1 << 20)            # 7 MiB freed below the last buffer: kept, not trimmed
    out["small_free"] = heap.free_bytes()
    out["small_released"] = heap.release()
    keep2 = churn(48, 1 << 20)          # 47 MiB freed: more than RELEASE_ABOVE
    out["big_free"] = heap.free_bytes()
    out["big_released"] = heap.release()
    out["again"] = heap.release()       # nothing freed since
    libc.free(keep2)
    libc.free(keep)
    print(json.dumps(out))
""")


def _child():
    import json

    res = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    return json.loads(res.stdout)


def test_freed_buffers_stay_in_the_heap_until_there_are_many():
    out = _child()
    assert out["tuned"] is True
    # 1 MiB buffers come from the heap once tuned (glibc's default would mmap them and give
    # each back at free: no free bytes would stay)
    assert out["small_free"] >= 7 << 20
    assert out["small_released"] is False
    assert out["big_free"] > heap.RELEASE_ABOVE
    assert out["big_released"] is True
    assert out["again"] is False


def test_release_below_the_limit_keeps_the_heap():
    assert heap.release(above=1 << 62) is False


POOL_CHILD = textwrap.dedent("""
    import os, sys
    from mqcodec.convert import heap
    if sys.argv[1] == "prefer":        # the mqcodec command: before pyarrow loads
        heap.prefer_jemalloc()
        import pyarrow as pa
    elif sys.argv[1] == "late":        # pyarrow loaded first: too late for the variable
        import pyarrow as pa
        heap.prefer_jemalloc()
    else:                              # a library user's process converting: tune()
        import pyarrow as pa
        heap.tune()
    print(pa.default_memory_pool().backend_name, os.environ.get("ARROW_DEFAULT_MEMORY_POOL", "-"))
""")


def _pool(how: str, **env) -> list:
    import os

    child_env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    child_env.update(env)
    res = subprocess.run([sys.executable, "-c", POOL_CHILD, how], capture_output=True, text=True, check=True,
                         env=child_env)
    return res.stdout.split()


def test_conversions_take_arrow_buffers_from_jemalloc():
    """The mqcodec command makes jemalloc Arrow's pool for the whole process and
    its children before pyarrow loads; a process that loaded pyarrow first gets
    it as pyarrow's default when it converts; a pool the user names stays."""
    import pyarrow as pa

    if "jemalloc" not in pa.supported_memory_backends():
        pytest.skip("this pyarrow was built without jemalloc")
    default = _pool("late")[0]                                 # (what pyarrow would use here)
    assert _pool("prefer") == ["jemalloc", "jemalloc"]
    assert _pool("late") == [default, "-"]                    # (the variable not set: too late)
    assert _pool("tune") == ["jemalloc", "-"]
    assert _pool("prefer", ARROW_DEFAULT_MEMORY_POOL="system") == ["system", "system"]
    assert _pool("tune", ARROW_DEFAULT_MEMORY_POOL="system") == ["system", "system"]


def test_the_command_prefers_jemalloc_before_anything_loads_pyarrow():
    """``mqcodec`` (cli.run) sets the variable before its command runs, and
    nothing it imports before has loaded pyarrow."""
    import os

    child = ("import os, sys\n"
             "from mqcodec import cli\n"
             "cli.main = lambda: print(os.environ.get('ARROW_DEFAULT_MEMORY_POOL'), 'pyarrow' in sys.modules) or 0\n"
             "cli.run()\n")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == (["jemalloc", "False"] if sys.platform.startswith("linux") else ["None", "False"])


@pytest.mark.parametrize("impl", ["c", "py"])
def test_rows_that_decoded_carry_no_copy_of_their_bytes(tmp_path, impl):
    """``raw`` holds the bytes of the rows that failed only: a chunk whose rows all
    decoded gives an all-null column of no more than its offsets and validity, not
    one that keeps a copy of every message's bytes behind the nulls."""
    import pyarrow as pa

    from mqcodec import synth
    from mqcodec.convert import ConvertOptions, Converter

    capture = tmp_path / "sim.pcap"
    synth.write_capture(str(capture), seed=1, messages=300)
    given: list = []
    conv = Converter(lambda name, rows: given.append((name, rows)),
                     ConvertOptions(threads=1, impl=impl, capture_impl=impl))
    conv.add_capture(str(capture))
    conv.drain()
    chunks = [rows for name, rows in given if "raw" in rows.schema.names]
    assert {name for name, rows in given if "raw" in rows.schema.names} == {"mq_messages", "msmq_packets", "mq_calls"}
    for rows in chunks:
        raw = rows.column("raw")
        assert raw.type == pa.binary() and raw.null_count == rows.num_rows == rows.column("error").null_count
        assert raw.nbytes <= 4 * (rows.num_rows + 1) + rows.num_rows // 8 + 64


def test_waiting_rows_keep_their_all_null_columns_in_shared_zeros(tmp_path):
    """Rows that wait for their row group hold their all-null columns (a quarter of the
    bytes of the chunks of this capture: the call types and headers they lack) in zeros
    they share, not in buffers of their own; the files hold the same rows."""
    import gc

    import pyarrow as pa

    from mqcodec import synth
    from mqcodec.convert import ConvertOptions, Converter
    from mqcodec.convert.sinks import DatasetSink, read_table

    capture = tmp_path / "sim.pcap"
    synth.write_capture(str(capture), seed=1, messages=300)
    given: list = []
    conv = Converter(lambda name, rows: given.append((name, rows)), ConvertOptions(threads=1))
    conv.add_capture(str(capture))
    conv.drain()
    expected = {name: pa.concat_tables([r for n, r in given if n == name]).to_pylist() for name, _ in given}
    size = sum(rows.nbytes for _, rows in given)
    null_bytes = sum(c.nbytes for _, rows in given for c in rows.columns if c.null_count == len(c))
    assert null_bytes > size // 5   # (what the test is about)
    sink = DatasetSink(str(tmp_path / "out"))
    for name, rows in given:   # a small capture: every row waits for close
        sink(name, rows)
    given.clear()
    gc.collect()
    waiting = pa.total_allocated_bytes()
    sink.close()
    held = waiting - pa.total_allocated_bytes()
    assert 0 < held < size - null_bytes   # (their own buffers: more than all but the null columns)
    for name, rows in expected.items():
        assert read_table(str(tmp_path / "out"), name).to_pylist() == rows
