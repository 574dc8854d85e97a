"""Benchmarks run side by side in one session; the summary at the end turns
pytest-benchmark's timings into records/s, MB/s and ratios against the
named baselines (plain construct, construct compiled, memory copy)."""
import os
import sys


sys.path.insert(0, os.path.dirname(__file__))

#: ../shared beside the checkout (spec vectors, captures), or MQCODEC_SHARED
SHARED = os.path.realpath(os.environ.get("MQCODEC_SHARED",
                                         os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")))

#: name -> (seconds per call, records per call, bytes per call)
RESULTS: dict[str, tuple[float, int, int]] = {}


def record(benchmark, name: str, records: int, nbytes: int) -> None:
    benchmark.extra_info.update(records=records, bytes=nbytes)
    RESULTS[name] = (benchmark, records, nbytes)


def pytest_terminal_summary(terminalreporter):
    rows = []
    for name, (bench, n, nbytes) in RESULTS.items():
        stats = getattr(bench, "stats", None)
        if stats is None or getattr(stats, "stats", None) is None:
            continue
        t = stats.stats.median
        rows.append((name, n / t, nbytes / t / 1e6))
    if not rows:
        return
    rates = {name: rps for name, rps, _ in rows}
    mbs = {name: m for name, _, m in rows}
    tr = terminalreporter
    tr.section("mqcodec throughput (median of rounds, one process, one core)")
    base = {k: v for k, v in rates.items()}
    tr.write_line("%-34s %14s %10s %12s %10s %10s %10s" % ("row", "records/s", "MB/s", "x construct", "% memcpy",
                                                          "x tshark", "x identity"))
    for name, rps, mb in rows:
        group = name.split(":")[0]
        family = group.split("@")[0]      # "pcf@100k" compares with "pcf"'s once-measured rows
        c = base.get(group + ":construct compiled", base.get(family + ":construct compiled"))
        c = c or base.get(group + ":construct")   # a group without a compiled declaration (calls)
        m = mbs.get(group + ":memory copy")
        t = base.get(group + ":tshark fields", base.get(family + ":tshark fields"))
        i = base.get(group + ":identity")      # the Spark rows: the same mechanism doing nothing
        tr.write_line("%-34s %14.0f %10.1f %12s %10s %10s %10s" % (
            name, rps, mb, "%.1f" % (rps / c) if c else "-", "%.1f" % (100 * mb / m) if m else "-",
            "%.2f" % (rps / t) if t else "-", "%.2f" % (rps / i) if i else "-"))


# The rows every decoder group measures the same way (so their ratios compare like with like).
def memory_copy_row(benchmark, group: str, buf, n: int) -> None:
    """Copying the input bytes once (into a buffer written before, as the
    decoders' steady state reuses theirs): the physical limit."""
    import numpy as np

    out = np.empty_like(buf)
    out[:] = 0
    benchmark(np.copyto, out, buf)
    record(benchmark, group + ":memory copy", n, buf.nbytes)


def size_label(n: int) -> str:
    """1000 -> "1k", 1000000 -> "1M" (group names of the call-size rows)."""
    for unit, div in (("M", 1_000_000), ("k", 1000)):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, unit)
    return str(n)


def call_sizes(big, n: int):
    """The first ``n`` records of ``big = (buffer, offsets)`` (views, no copy)."""
    buf, offs = big
    return buf[: int(offs[n])], offs[: n + 1]


def batch_row(benchmark, group: str, decode, buf, offs, n: int, impl: str, rounds: int):
    """One batch decoder on ``(buf, offs)``: row "<group>:batch compiled|pure"."""
    result = benchmark.pedantic(decode, args=((buf, offs),), kwargs={"impl": impl}, rounds=rounds)
    record(benchmark, "%s:batch %s" % (group, "compiled" if impl == "c" else "pure"), n, buf.nbytes)
    return result
