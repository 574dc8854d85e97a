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
