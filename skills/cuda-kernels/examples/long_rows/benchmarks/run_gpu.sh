#!/usr/bin/env bash
# The long_rows example on a GPU: build (sm_90), CPU-emulator + GPU tests, compute-sanitizer,
# benchmark. Usage, from the repository root or anywhere:
#   bash skills/cuda-kernels/examples/long_rows/benchmarks/run_gpu.sh OUTDIR
# Writes OUTDIR/status.txt (one line per stage), OUTDIR/bench.json, OUTDIR/bench.log,
# OUTDIR/gpu_tests.log and OUTDIR/logs.tar.gz (every log). Every stage runs even when an
# earlier one failed; the exit status is 1 when any failed.
set -uo pipefail
OUT=${1:?usage: run_gpu.sh OUTDIR}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
EX=$(dirname "$HERE")
SKILL=$(dirname "$(dirname "$EX")")
PY=${PYTHON:-python}
BUILD=${LONG_ROWS_BUILD_DIR:-/tmp/long_rows_build}
STATUS="$OUT/status.txt"
: > "$STATUS"
fail=0
stage() {  # stage NAME SECONDS LOG CMD...
  local name=$1 secs=$2 log=$3; shift 3
  local t0=$SECONDS
  timeout "$secs" "$@" > "$log" 2>&1
  local rc=$?
  echo "$name: exit $rc ($((SECONDS - t0)) s)" | tee -a "$STATUS"
  [ $rc -eq 0 ] || fail=1
  return $rc
}

{
  date -u; nvidia-smi; nvcc --version
  "$PY" -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__); print(torch.cuda.get_device_name())"
  (cd "$SKILL" && git rev-parse HEAD 2>/dev/null) || true
  command -v compute-sanitizer || echo "compute-sanitizer: not on PATH"
} > "$OUT/logs/env.txt" 2>&1

stage build 900 "$OUT/logs/build.log" "$PY" "$SKILL/scripts/build_local.py" "$EX" --arch 9.0 --check --build-dir "$BUILD"
export LONG_ROWS_KERNELS_PATH=$BUILD
export PYTHONPATH="$BUILD${PYTHONPATH:+:$PYTHONPATH}"

stage tests 1200 "$OUT/logs/gpu_tests.log" "$PY" -m pytest "$EX/tests" -q -rfE -p no:cacheprovider --basetemp "$(mktemp -d)"
tail -n 5 "$OUT/logs/gpu_tests.log" | sed 's/^/  /' | tee -a "$STATUS"

if command -v compute-sanitizer > /dev/null; then
  for tool in memcheck racecheck synccheck; do
    stage "sanitizer-$tool" 600 "$OUT/logs/sanitizer_$tool.log" \
      compute-sanitizer --tool "$tool" --error-exitcode 3 "$PY" "$HERE/sanitize_run.py"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/logs/sanitizer_$tool.log" | sed 's/^/  /' | tee -a "$STATUS"
  done
else
  echo "sanitizer: skipped (compute-sanitizer not on PATH)" | tee -a "$STATUS"
fi

stage bench 1500 "$OUT/logs/bench.log" "$PY" "$HERE/bench_long_rows.py" --out "$OUT/bench.json" ${LONG_ROWS_BENCH_ARGS:-}
grep -E "target misses|MISS" "$OUT/logs/bench.log" | sed 's/^/  /' | tee -a "$STATUS"

cp "$OUT/logs/bench.log" "$OUT/logs/gpu_tests.log" "$OUT/" 2>/dev/null
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
echo "overall: $([ $fail -eq 0 ] && echo ok || echo FAILED)" | tee -a "$STATUS"
exit $fail
