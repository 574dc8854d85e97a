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
