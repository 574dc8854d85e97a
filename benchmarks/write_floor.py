"""The most the whole job could reach against tshark: its start and the
writing of its own output, each alone, against tshark's whole process.

A conversion of CAPTURE (``pcap2parquet``, every table and column, one thread)
gives the tables; they are read back into memory and written again in this
process, a row group at a time (``--row-group-rows``' default), three ways:

  sink      - mqcodec's own sink (what the job runs: zstd, dictionaries and
              statistics where its writer chooses them)
  plain     - pyarrow's ParquetWriter with no compression, no dictionary, no
              statistics, into memory (the encoding alone: no file system's work)
  non-null  - plain, without the columns that are null in every row
  unbuffered - the sink with its files written without their buffer
               (``sinks.WRITE_BUFFER = 0``: a system call per page's header and data)

and a whole ``pcap2parquet`` process on a capture of no frame gives the start
(interpreter, imports, an empty output).  tshark is ``tshark -r CAPTURE -T fields
-e mq.tsh.type``, a whole process.  Every figure is CPU time (user + system),
the median of ``--rounds``, the rows run in turn round after round, so that
the load of a shared machine moves them alike.  The bound printed is tshark's
CPU time over (start + writing): the ratio no conversion writing these tables
with one thread can pass, whatever its decoding costs.

    .venv/bin/python -m mqcodec synth -o /tmp/s100000.pcap --seed 1 --messages 100000
    .venv/bin/python benchmarks/write_floor.py /tmp/s100000.pcap
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from mqcodec.convert.heap import prefer_jemalloc

prefer_jemalloc()   # (Arrow's pool as the mqcodec command has it: chosen before pyarrow loads)

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402


def _env():
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)   # (as a pip install leaves it: bytecode cached)
    return env


def child_cpu(cmd) -> float:
    """User + system seconds of one child process running ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=_env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def job(capture: str, out: str) -> list:
    return [sys.executable, "-m", "mqcodec", "pcap2parquet", capture, "-o", out, "--threads", "1"]


def tables_of(folder: str) -> dict:
    return {name: pq.read_table(os.path.join(folder, name)) for name in sorted(os.listdir(folder))}


def non_null(tables: dict) -> dict:
    """``tables`` without their columns that are null in every row."""
    return {name: t.select([c for c in t.schema.names if t.column(c).null_count < t.num_rows])
            for name, t in tables.items()}


def write(tables: dict, folder: str, how: str, rows: int) -> float:
    """CPU seconds to write ``tables`` into ``folder`` ``how``."""
    from mqcodec.convert import sinks

    start = time.process_time()
    if how in ("sink", "unbuffered"):
        buffer = sinks.WRITE_BUFFER
        if how == "unbuffered":
            sinks.WRITE_BUFFER = 0
        try:
            sink = sinks.DatasetSink(folder)
            for name, table in tables.items():
                for batch in table.to_batches(max_chunksize=rows):
                    sink(name, pa.Table.from_batches([batch]))
            sink.close()
        finally:
            sinks.WRITE_BUFFER = buffer
    else:   # (into memory: the encoding alone, no file system's work)
        for name, table in tables.items():
            out = pa.BufferOutputStream()
            w = pq.ParquetWriter(out, table.schema, compression="none", use_dictionary=False,
                                 write_statistics=False)
            for batch in table.to_batches(max_chunksize=rows):
                w.write_table(pa.Table.from_batches([batch]))
            w.close()
            del out
    return time.process_time() - start


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("capture")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    from mqcodec.capture.writer import PcapWriter
    from mqcodec.convert.options import ConvertOptions

    rows = ConvertOptions().row_group_rows
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.pcap")
        with open(empty, "wb") as f:
            PcapWriter(f)
        child_cpu(job(args.capture, os.path.join(tmp, "tables")))
        tables = tables_of(os.path.join(tmp, "tables"))
        given = {"sink": tables, "plain": tables, "non-null": non_null(tables), "unbuffered": tables}
        figures: dict = {}
        for r in range(args.rounds):
            figures.setdefault("tshark", []).append(
                child_cpu(["tshark", "-r", args.capture, "-T", "fields", "-e", "mq.tsh.type"]))
            figures.setdefault("mqcodec", []).append(child_cpu(job(args.capture, os.path.join(tmp, "job%d" % r))))
            figures.setdefault("start", []).append(child_cpu(job(empty, os.path.join(tmp, "empty%d" % r))))
            hows = ("sink", "plain", "non-null", "unbuffered")
            for k in range(len(hows)):   # (in turn: each first once every len(hows) rounds)
                how = hows[(r + k) % len(hows)]
                figures.setdefault(how, []).append(
                    write(given[how], os.path.join(tmp, "%s%d" % (how, r)), "plain" if how == "non-null" else how,
                          rows))
    med = {k: statistics.median(v) for k, v in figures.items()}
    print("CPU s, median of %d rounds (%s): %s" % (
        args.rounds, ", ".join("%d rows" % t.num_rows + " " + n for n, t in tables.items()),
        ", ".join("%s %.2f" % kv for kv in med.items())))
    print("mqcodec --threads 1: %.2fx tshark" % (med["tshark"] / med["mqcodec"]))
    for how in ("sink", "plain", "non-null"):
        print("bound, start + %s writing: %.1fx tshark" % (how, med["tshark"] / (med["start"] + med[how])))
    print("the sink's write buffer: %.3f s with it, %.3f s without (%s)" % (
        med["sink"], med["unbuffered"], ", ".join("%.3f/%.3f" % p for p in zip(figures["sink"], figures["unbuffered"]))))


if __name__ == "__main__":
    main()
