"""Long fuzz campaigns with atheris (libFuzzer for Python).

    .venv/bin/python tests/fuzz/run_atheris.py TARGET [libFuzzer options] [corpus_dir ...]
    .venv/bin/python tests/fuzz/run_atheris.py msmq -max_total_time=600 /tmp/corpus-msmq
    .venv/bin/python tests/fuzz/run_atheris.py --list

TARGET is a key of ``harnesses.TARGETS``.  When the first corpus directory
is empty it is seeded from ``seeds.seeds(TARGET)`` and the committed
regression corpus ``tests/fuzz/corpus/TARGET/``.  Crashers are written by
libFuzzer as ``crash-<sha1>`` in the working directory (``-artifact_prefix=``
to change); minimize with ``-minimize_crash=1 -runs=10000 crash-...`` and
commit the result under ``tests/fuzz/corpus/TARGET/``.

atheris is optional (``pip install atheris``, Linux wheels); without it this
script exits with a message and the pytest replay still runs.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(argv: list[str]) -> int:
    try:
        import atheris
    except ImportError:
        print("atheris is not installed: pip install atheris", file=sys.stderr)
        return 2
    if len(argv) < 2 or argv[1] in ("-h", "--help", "--list"):
        import harnesses
        print(__doc__)
        print("targets:", " ".join(sorted(harnesses.TARGETS)))
        return 0
    target = argv[1]
    with atheris.instrument_imports():
        import mqcodec  # noqa: F401
        import mqcodec.batch, mqcodec.capture, mqcodec.ibmmq, mqcodec.msmq  # noqa: F401,E401
        import mqcodec.batch.mq_pure, mqcodec.batch.msmq_pure, mqcodec.batch.pcf_pure  # noqa: F401,E401
        import mqcodec.ibmmq.framing, mqcodec.msmq.framing  # noqa: F401,E401
    import harnesses
    import seeds

    fn = harnesses.TARGETS[target]
    rest = argv[2:]
    dirs = [a for a in rest if not a.startswith("-")]
    if dirs:
        first = Path(dirs[0])
        if first.is_dir() and not any(first.iterdir()):
            inputs = list(seeds.seeds(target))
            committed = HERE / "corpus" / target
            if committed.is_dir():
                inputs += [p.read_bytes() for p in sorted(committed.iterdir()) if p.is_file()]
            for data in inputs:
                (first / hashlib.sha1(data).hexdigest()).write_bytes(data)

    def one(data: bytes) -> None:
        fn(data)

    # libFuzzer re-runs its own command line through the shell for -merge, -minimize_crash and
    # -fork: make that line "python run_atheris.py TARGET" so the child finds the target
    argv0 = "%s %s %s" % (sys.executable, os.path.abspath(__file__), target)
    atheris.Setup([argv0] + rest, one)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
