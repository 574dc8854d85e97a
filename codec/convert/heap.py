"""The heaps of a conversion process: the C heap (glibc only; nothing
elsewhere) and Arrow's default memory pool.

A conversion allocates and frees many buffers of 0.1-30 MB a chunk (the
batch decoders' columns, numpy arrays, Parquet pages).  glibc's defaults
serve each one above 128 KiB with a fresh ``mmap`` and give it back at
``free``, and trim the top of the heap as soon as 128 KiB are free there, so
the next chunk faults the same pages in again, zero-filled by the kernel: a
tenth of a job's CPU time went to page faults (perf: 11.5 %; system time
0.8-1.4 s of 7-8 s of CPU on the simulator's capture of 100,000 messages).

:func:`tune` keeps those buffers in the heap (``M_MMAP_THRESHOLD`` 8 MiB,
``M_TRIM_THRESHOLD`` 32 MiB), so a freed buffer is reused by the next
chunk; :func:`release` hands the free pages back to the system
(``malloc_trim``) only when more than :data:`RELEASE_ABOVE` bytes were freed
since it last did -- the heap a capture of many damaged connections
fragments (docs/ROBUSTNESS.md), not the few chunks' worth a healthy capture
reuses.

Arrow's buffers (the tables, their columns, the Parquet writer's pages)
come from jemalloc where pyarrow has it (its Linux wheels), unless
``ARROW_DEFAULT_MEMORY_POOL`` names a pool: on the simulator's capture of
100,000 messages pyarrow's default there (mimalloc) peaked at 300 MiB with one
thread and 400 MiB with two, jemalloc at 230 and 360 MiB, in no more time
(BENCHMARKS.md, "Memory").  Arrow reads the variable once, when pyarrow
loads: the ``mqcodec`` command sets it first (:func:`prefer_jemalloc`); a
process that loaded pyarrow before converting gets jemalloc as pyarrow's
default pool (:func:`arrow_pool`), which Arrow's C++ parts that take the
process's pool do not see (that way the same capture peaked at 259-263 MiB
with one thread, against 231-237 with the variable).

Both change the whole process's allocators: they are called by the
conversion engines for their own processes (the local engine, the Spark
engine's Python workers), never at import.
"""
from __future__ import annotations

import ctypes
import os
import sys
from typing import Any, Optional

__all__ = ["tune", "release", "free_bytes", "arrow_pool", "prefer_jemalloc", "MMAP_THRESHOLD", "TRIM_THRESHOLD",
           "RELEASE_ABOVE"]

#: buffers up to this size come from the heap (glibc's default: 128 KiB, raised
#: as it frees mmap'd buffers of up to 32 MiB)
MMAP_THRESHOLD = 8 << 20
#: the top of the heap is given back when this much of it is free
TRIM_THRESHOLD = 32 << 20
#: :func:`release` trims when this many more bytes are free than after its last trim
RELEASE_ABOVE = 32 << 20

_M_TRIM_THRESHOLD = -1   # malloc.h
_M_MMAP_THRESHOLD = -3


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _glibc() -> Optional[Any]:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt, libc.malloc_trim, libc.mallinfo2   # noqa: B018 (all three, or none is used)
    except (OSError, AttributeError):
        return None   # not glibc (musl), or glibc before 2.33
    libc.mallinfo2.restype = _Mallinfo2
    return libc


_LIBC = _glibc()
_tuned = False
_free_after_trim = 0   # free bytes just after the last trim of release()


def tune() -> bool:
    """Keep buffers up to :data:`MMAP_THRESHOLD` in the heap and trim its top
    past :data:`TRIM_THRESHOLD`, and choose Arrow's pool (:func:`arrow_pool`),
    once per process.  False where the C library is not glibc."""
    global _tuned
    if not _tuned:
        arrow_pool()
        if _LIBC is not None:
            _LIBC.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            _LIBC.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        _tuned = True
    return _LIBC is not None


def prefer_jemalloc() -> None:
    """``ARROW_DEFAULT_MEMORY_POOL=jemalloc`` for this process and its
    children, on Linux (pyarrow's wheels there have it), unless the variable
    is set or pyarrow is loaded already (Arrow has read it then)."""
    if sys.platform.startswith("linux") and "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")


def arrow_pool() -> str:
    """Make jemalloc Arrow's default memory pool, unless
    ``ARROW_DEFAULT_MEMORY_POOL`` names one or pyarrow was built without it;
    returns the pool's name.  (Buffers already allocated go back to the pool
    they came from.)"""
    import pyarrow as pa

    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        try:
            pa.set_memory_pool(pa.jemalloc_memory_pool())
        except NotImplementedError:   # (a build without jemalloc: its default stays)
            pass
    return pa.default_memory_pool().backend_name


def free_bytes() -> int:
    """Free bytes held by the heap's arenas (glibc's ``mallinfo2().fordblks``), or 0."""
    return int(_LIBC.mallinfo2().fordblks) if _LIBC is not None else 0


def release(above: int = RELEASE_ABOVE) -> bool:
    """Give the heap's free pages back when more than ``above`` bytes were
    freed since the last time (free chunks stay in glibc's lists after a trim,
    their pages given back: counted from what was free then); True when it
    trimmed."""
    global _free_after_trim
    if _LIBC is None or free_bytes() - _free_after_trim <= above:
        return False
    _LIBC.malloc_trim(0)
    _free_after_trim = free_bytes()
    return True
