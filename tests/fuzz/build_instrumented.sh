#!/bin/sh
# Build the Cython batch decoders (and capture_core when it exists) with clang,
# instrumented for libFuzzer coverage (-fsanitize=fuzzer-no-link) and, by default,
# AddressSanitizer, into a SEPARATE directory: the in-tree _ext/*.so stay untouched.
#
#   tests/fuzz/build_instrumented.sh [OUTDIR] [MODULE ...]
#   SANITIZE=address   (default) | undefined | none       extra sanitizer
#
# OUTDIR (default /tmp/mqcodec-fuzzbuild) gets mqcodec/_ext/MODULE.*.so;
# tests/fuzz/run_atheris.py --instrumented OUTDIR puts OUTDIR/mqcodec/_ext first on
# mqcodec._ext.__path__ (so `mqcodec._ext.pcf_batch` is the instrumented build) and
# re-executes itself with LD_PRELOAD=<atheris>/asan_with_fuzzer.so (or ubsan_...).
#
# Needs clang (Debian 12: apt-get install clang libclang-rt-14-dev) and atheris.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-/tmp/mqcodec-fuzzbuild}
[ $# -gt 0 ] && shift
MODULES=${*:-}
if [ -z "$MODULES" ]; then
    MODULES="pcf_batch mq_batch msmq_batch"
    [ -f "$ROOT/_ext/capture_core.pyx" ] && MODULES="$MODULES capture_core"
fi
PY=${PYTHON:-$ROOT/.venv/bin/python}
SANITIZE=${SANITIZE:-address}
command -v clang >/dev/null || { echo "clang is not installed (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }

case "$SANITIZE" in
    none) SAN=fuzzer-no-link ;;
    *) SAN="$SANITIZE,fuzzer-no-link" ;;
esac
mkdir -p "$OUT/src" "$OUT/mqcodec/_ext" "$OUT/build"
# copy the sources: cythonize writes its .c/.cpp next to them, never into the tree
cp "$ROOT"/_ext/*.pyx "$OUT/src/"
for f in "$ROOT"/_ext/*.pxi "$ROOT"/_ext/*.pxd; do [ -f "$f" ] && cp "$f" "$OUT/src/"; done
echo "$SANITIZE" > "$OUT/mqcodec/_ext/SANITIZER"

export CC=clang CXX=clang++ LDSHARED="clang -shared" LDCXXSHARED="clang++ -shared"
export CFLAGS="-fsanitize=$SAN -g -O1 -fno-omit-frame-pointer"
export CXXFLAGS="$CFLAGS"
export LDFLAGS="-fsanitize=$SAN"
cd "$OUT"
for m in $MODULES; do
    echo "== $m ($SAN)"
    "$PY" - "$m" "$OUT" <<'EOF'
import os, sys
import numpy
from Cython.Build import cythonize
from setuptools import Extension
from setuptools.dist import Distribution

name, out = sys.argv[1], sys.argv[2]
src = os.path.join(out, "src")
ext = Extension("mqcodec._ext." + name, [os.path.join(src, name + ".pyx")],
                include_dirs=[numpy.get_include(), src],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")])
# the same directives as setup.py: what is fuzzed is what ships
exts = cythonize([ext], compiler_directives={"language_level": 3, "boundscheck": False, "wraparound": False,
                                             "cdivision": True}, quiet=True)
dist = Distribution({"name": "mqcodec-fuzz", "ext_modules": exts})
cmd = dist.get_command_obj("build_ext")
cmd.build_lib = out
cmd.build_temp = os.path.join(out, "build", name)
cmd.ensure_finalized()
cmd.run()
EOF
done
# check the instrumentation is there
for so in "$OUT"/mqcodec/_ext/*.so; do
    u=$(nm -D --undefined-only "$so" | grep -c -E "__sanitizer_cov|__asan" || true)
    echo "$(basename "$so"): $u sanitizer/coverage imports"
done
echo "built into $OUT/mqcodec/_ext"
