#!/usr/bin/env bash
# Lays out mqcodec as it was at commit REV as an importable package tree in DIR, for
# MQCODEC_BENCH_BASELINE (benchmarks/bench_capture.py): DIR/mqcodec = codec/ of REV, with
# _ext/ and spark/ of REV inside it, and the compiled modules of REV's _ext sources built in
# place (with the project's venv).  Usage: benchmarks/baseline_tree.sh REV DIR
set -euo pipefail
rev=$1 dir=$2
top=$(git rev-parse --show-toplevel)
py=${PYTHON:-$top/.venv/bin/python}
rm -rf "$dir" && mkdir -p "$dir/src"
git -C "$top" archive "$rev" | tar -x -C "$dir/src"
cp -r "$dir/src/codec" "$dir/mqcodec"
cp -r "$dir/src/_ext" "$dir/mqcodec/_ext"
cp -r "$dir/src/spark" "$dir/mqcodec/spark"
(cd "$dir/src" && MQCODEC_PURE=0 "$py" setup.py -q build_ext --build-lib "$dir/build" >/dev/null)
find "$dir/build" -name '*.so' -exec cp {} "$dir/mqcodec/_ext/" \;
echo "$dir"
