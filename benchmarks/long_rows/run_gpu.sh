#!/usr/bin/env bash
# The long_rows example on a GPU, inside one time budget (default 560 s, so one 10-minute
# command holds it): build (sm_90), CPU-emulator + GPU tests, benchmark (target shapes
# first; no new shape once the budget is near), compute-sanitizer memcheck with what is left.
# Usage, from the repository root or anywhere:
#   bash benchmarks/long_rows/run_gpu.sh OUTDIR
# LONG_ROWS_BUDGET_S changes the budget; LONG_ROWS_BENCH_ARGS adds benchmark arguments.
# Writes OUTDIR/status.txt (one line per stage), OUTDIR/bench.json (rewritten after every
# shape), OUTDIR/bench.log, OUTDIR/gpu_tests.log and OUTDIR/logs.tar.gz (every log). Every
# stage runs even when an earlier one failed; the exit status is 1 when any failed.
set -uo pipefail
OUT=${1:?usage: run_gpu.sh OUTDIR}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$(dirname "$HERE")")
SKILL=$REPO/skills/cuda-kernels
EX=$SKILL/examples/long_rows
PY=${PYTHON:-python}
BUILD=${LONG_ROWS_BUILD_DIR:-/tmp/long_rows_build}
BUDGET=${LONG_ROWS_BUDGET_S:-560}
STATUS="$OUT/status.txt"
: > "$STATUS"
fail=0
left() { echo $((BUDGET - SECONDS)); }
stage() {  # stage NAME SECONDS LOG CMD...
  local name=$1 secs=$2 log=$3; shift 3
  if [ "$secs" -le 5 ]; then echo "$name: skipped (budget spent)" | tee -a "$STATUS"; return 0; fi
  local t0=$SECONDS
  timeout "$secs" "$@" > "$log" 2>&1
  local rc=$?
  echo "$name: exit $rc ($((SECONDS - t0)) s)$([ $rc -eq 124 ] && echo ', timed out')" | tee -a "$STATUS"
  [ $rc -eq 0 ] || fail=1
  return $rc
}

{
  date -u; nvidia-smi; nvcc --version
  "$PY" -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__); print(torch.cuda.get_device_name())"
  (cd "$REPO" && git rev-parse HEAD 2>/dev/null) || true
  command -v compute-sanitizer || echo "compute-sanitizer: not on PATH"
} > "$OUT/logs/env.txt" 2>&1

stage build $(( $(left) - 60 )) "$OUT/logs/build.log" "$PY" "$SKILL/scripts/build_local.py" "$EX" --arch 9.0 --check --build-dir "$BUILD"
export LONG_ROWS_KERNELS_PATH=$BUILD
export PYTHONPATH="$BUILD${PYTHONPATH:+:$PYTHONPATH}"

# The GPU tests may take up to half of what is left; the benchmark gets the rest.
stage tests $(( $(left) / 2 )) "$OUT/logs/gpu_tests.log" "$PY" -m pytest "$EX/tests" -q -rfE -p no:cacheprovider --basetemp "$(mktemp -d)"
tail -n 3 "$OUT/logs/gpu_tests.log" | sed 's/^/  /' | tee -a "$STATUS"

# Stop starting shapes 150 s before the end (a shape takes up to ~40 s: two torch.compile
# builds and eleven timings), leaving time for memcheck and the archive.
BENCH_S=$(( $(left) - 15 ))
stage bench "$BENCH_S" "$OUT/logs/bench.log" "$PY" "$EX/benchmarks/bench_long_rows.py" --out "$OUT/bench.json" --budget-s $(( BENCH_S - 135 )) ${LONG_ROWS_BENCH_ARGS:-}
grep -E "budget|target misses|MISS" "$OUT/logs/bench.log" | sed 's/^/  /' | tee -a "$STATUS"

if command -v compute-sanitizer > /dev/null; then
  stage sanitizer-memcheck $(( $(left) - 10 )) "$OUT/logs/sanitizer_memcheck.log" \
    compute-sanitizer --tool memcheck --error-exitcode 3 "$PY" "$HERE/sanitize_run.py"
  grep -E "ERROR SUMMARY|sanitize_run" "$OUT/logs/sanitizer_memcheck.log" | sed 's/^/  /' | tee -a "$STATUS"
else
  echo "sanitizer: skipped (compute-sanitizer not on PATH)" | tee -a "$STATUS"
fi

cp "$OUT/logs/bench.log" "$OUT/logs/gpu_tests.log" "$OUT/" 2>/dev/null
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
echo "overall: $([ $fail -eq 0 ] && echo ok || echo FAILED) ($SECONDS s)" | tee -a "$STATUS"
exit $fail
