"""Long fuzz campaigns with atheris (libFuzzer for Python).

    .venv/bin/python tests/fuzz/run_atheris.py TARGET [libFuzzer options] [corpus_dir ...]
    .venv/bin/python tests/fuzz/run_atheris.py msmq -max_total_time=600 /tmp/corpus-msmq
    .venv/bin/python tests/fuzz/run_atheris.py --list
    .venv/bin/python tests/fuzz/run_atheris.py all -runs=3000 -seed=1 DIR   # every target, one process (CI)

TARGET is a key of ``harnesses.TARGETS``.  When the first corpus directory
is empty it is seeded from ``seeds.seeds(TARGET)`` and the committed
regression corpus ``tests/fuzz/corpus/TARGET/``.  Crashers are written by
libFuzzer as ``crash-<sha1>`` in the working directory (``-artifact_prefix=``
to change); minimize with ``-minimize_crash=1 -runs=10000 crash-...`` and
commit the result under ``tests/fuzz/corpus/TARGET/``.

atheris is optional (``pip install atheris``, Linux wheels); without it this
script exits with a message and the pytest replay still runs.

Coverage of the compiled modules: build them instrumented into a separate
directory with ``tests/fuzz/build_instrumented.sh DIR`` (clang,
``-fsanitize=address,fuzzer-no-link``), then

    .venv/bin/python tests/fuzz/run_atheris.py --instrumented DIR batch_msmq -max_total_time=600 CORPUS

``--bounded N`` (default 16; 0: off) checks invariant 4 on every Nth input with
``harnesses.bounded``: the traced peak allocation and the CPU time must stay within
a linear bound of the input's length (a violation is a finding like a crash).

``--instrumented DIR`` puts ``DIR/mqcodec/_ext`` first on ``mqcodec._ext.__path__``
(so ``impl="c"`` runs the instrumented build; the in-tree ``.so`` files are not
touched), re-executes the runner with ``LD_PRELOAD`` set to atheris'
``asan_with_fuzzer.so`` (or ``ubsan_with_fuzzer.so``, as the build recorded) and
checks that the batch modules really were loaded from ``DIR``.  libFuzzer's
``cov``/``ft`` counts then include the Cython modules' edges; with ``--native-only`` the
Python code is not instrumented and the counts are the compiled modules' alone.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _instrumented(argv: list[str]):
    """``--instrumented DIR`` out of ``argv``: (DIR or None, the rest)."""
    if "--instrumented" not in argv:
        return os.environ.get("MQCODEC_FUZZ_EXT") or None, argv
    i = argv.index("--instrumented")
    return os.path.abspath(argv[i + 1]), argv[:i] + argv[i + 2:]


def _preload(ext_dir: str, argv: list[str], native_only: bool) -> None:
    """Re-execute with the sanitizer runtime (with libFuzzer linked in) preloaded:
    an ASan-instrumented extension cannot be loaded otherwise."""
    import atheris

    san = (Path(ext_dir) / "mqcodec" / "_ext" / "SANITIZER")
    kind = san.read_text().strip() if san.is_file() else "address"
    if kind == "none" or os.environ.get("MQCODEC_FUZZ_PRELOADED") == "1":
        return
    lib = {"address": "asan_with_fuzzer.so", "undefined": "ubsan_with_fuzzer.so"}[kind]
    env = dict(os.environ, MQCODEC_FUZZ_PRELOADED="1", MQCODEC_FUZZ_EXT=ext_dir,
               LD_PRELOAD=os.path.join(atheris.path(), lib))
    # CPython's own allocations are not instrumented; leaks at exit are not findings
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0:allocator_may_return_null=1:handle_segv=1")
    flags = ["--native-only"] if native_only else []
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + flags + argv[1:], env)


def use_instrumented(ext_dir: str) -> list:
    """Make ``mqcodec._ext.X`` resolve to the instrumented builds in
    ``ext_dir/mqcodec/_ext``; returns the module names found there."""
    import mqcodec._ext

    d = os.path.join(ext_dir, "mqcodec", "_ext")
    names = sorted({f.split(".")[0] for f in os.listdir(d) if f.endswith(".so")})
    if not names:
        raise SystemExit("no instrumented modules in %s (run tests/fuzz/build_instrumented.sh)" % d)
    mqcodec._ext.__path__.insert(0, d)
    return names


def main(argv: list[str]) -> int:
    try:
        import atheris
    except ImportError:
        print("atheris is not installed: pip install atheris", file=sys.stderr)
        return 2
    ext_dir, argv = _instrumented(argv)
    # --native-only: no Python instrumentation, so libFuzzer's cov/ft count the
    # compiled modules' edges alone (and executions are ~2x faster)
    native_only = "--native-only" in argv
    argv = [a for a in argv if a != "--native-only"]
    native = []
    if ext_dir is not None:
        _preload(ext_dir, argv, native_only)
    if len(argv) < 2 or argv[1] in ("-h", "--help", "--list"):
        import harnesses
        print(__doc__)
        print("targets:", " ".join(sorted(harnesses.TARGETS)))
        return 0
    target = argv[1]
    import contextlib

    with (contextlib.nullcontext() if native_only else atheris.instrument_imports()):
        import mqcodec  # noqa: F401
        if ext_dir is not None:   # before mqcodec.batch imports the compiled modules
            native = use_instrumented(ext_dir)
        import mqcodec.batch, mqcodec.capture, mqcodec.ibmmq, mqcodec.msmq  # noqa: F401,E401
        import mqcodec.batch.mq_pure, mqcodec.batch.msmq_pure, mqcodec.batch.pcf_pure  # noqa: F401,E401
        import mqcodec.ibmmq.framing, mqcodec.msmq.framing  # noqa: F401,E401
    for name in native:   # not instrumented by atheris (native code): imported after the block
        mod = __import__("mqcodec._ext." + name, fromlist=["_"])
        if not mod.__file__.startswith(ext_dir):
            raise SystemExit("mqcodec._ext.%s came from %s, not the instrumented build" % (name, mod.__file__))
        print("instrumented native module:", mod.__file__, file=sys.stderr)
    import harnesses
    import seeds

    # "all": every target in one process, the first byte of the input picking it
    fn = harnesses.fuzz_all if target == "all" else harnesses.TARGETS[target]
    rest = argv[2:]
    # --bounded N: every Nth input also checks invariant 4 (harnesses.bounded: linear
    # peak allocation and CPU time); 0 turns it off.  Default 16 (~10 % slower).
    every = 16
    if "--bounded" in rest:
        i = rest.index("--bounded")
        every = int(rest[i + 1])
        del rest[i:i + 2]
    dirs = [a for a in rest if not a.startswith("-")]
    if dirs:
        first = Path(dirs[0])
        if first.is_dir() and not any(first.iterdir()):
            inputs = []
            for t in (harnesses.ALL_ORDER if target == "all" else (target,)):
                mine = list(seeds.seeds(t))
                committed = HERE / "corpus" / t
                # the mixed pass: the conversion targets' seeds only (their committed
                # corpus is replayed by tests/test_fuzz_regressions.py)
                if committed.is_dir() and not (target == "all" and t in harnesses.SLOW_TARGETS):
                    mine += [p.read_bytes() for p in sorted(committed.iterdir()) if p.is_file()]
                inputs += [harnesses.all_input(t, d) for d in mine] if target == "all" else mine
            for data in inputs:
                (first / hashlib.sha1(data).hexdigest()).write_bytes(data)

    count = [0]

    def one(data: bytes) -> None:
        count[0] += 1
        if every and count[0] % every == 0 and target != "all":
            harnesses.bounded(target, data)
        elif every and count[0] % every == 0 and data:
            t = harnesses.ALL_ORDER[data[0] % len(harnesses.ALL_ORDER)]
            # the mixed pass: a conversion target's input is checked one time in 4 of these
            if t not in harnesses.SLOW_TARGETS or count[0] % (4 * every) == 0:
                harnesses.bounded(t, data[1:])
            else:
                fn(data)
        else:
            fn(data)

    # libFuzzer re-runs its own command line through the shell for -merge, -minimize_crash and
    # -fork: make that line "python run_atheris.py TARGET" so the child finds the target
    argv0 = "%s %s %s" % (sys.executable, os.path.abspath(__file__), target)
    if ext_dir is not None:   # libFuzzer's child command lines (-merge, -fork) keep the build
        argv0 = "%s %s --instrumented %s%s %s" % (sys.executable, os.path.abspath(__file__), ext_dir,
                                                  " --native-only" if native_only else "", target)
    atheris.Setup([argv0] + rest, one)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
