"""``mqcodec pcap2parquet`` under spark-submit (which runs a file, not a module):

    spark-submit --master spark://host:7077 [--conf ...] \\
        "$(python -c 'import mqcodec.spark_submit as s; print(s.__file__)')" \\
        pcap2parquet 'file:///shared/caps/*.pcap' -o file:///shared/out

The command line is the CLI's; ``--engine spark`` and ``--master ''`` (the
master spark-submit gives) are the defaults here.
"""
from __future__ import annotations

import os
import sys


def _argv(args: list[str]) -> list[str]:
    args = list(args)
    if args[:1] == ["pcap2parquet"]:
        if not any(a == "--engine" or a.startswith("--engine=") for a in args):
            args += ["--engine", "spark"]
        if not any(a == "--master" or a.startswith("--master=") for a in args):
            args += ["--master", ""]
    return args


def main(argv=None) -> int:
    from mqcodec.cli import main as cli_main

    return cli_main(_argv(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    # run as a file: this folder is sys.path[0]; its modules (tables, errors...) must not
    # shadow top-level ones (it lives beside the CLI, not in mqcodec.spark, which the CLI
    # imports: no import cycle between the two)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    sys.exit(main())
