#!/usr/bin/env bash
# One command for a GPU machine: build the ltx_video example, run its GPU tests, run the
# micro-benchmarks, and write JSON + RESULTS.md + logs into OUTDIR. A test failure does
# not stop the benchmarks; the compact summary table is printed last.
#
#   bash benchmarks/ltx_video/run_gpu.sh OUTDIR [ARCH]
#
# ARCH defaults to 9.0 (H100/H200). Needs torch (CUDA build), triton, pytest, ninja and an
# nvcc matching torch's CUDA major version; no diffusers. The whole run is kept under
# LTX_RUN_BUDGET_S seconds (default 300; on an H200 with 16 cores: build ~10 s cached /
# ~60 s cold, GPU tests ~20 s, benchmarks ~200 s as bench_ops.py's printed plan estimates).
# The benchmark measures every non-compile implementation first, then the torch.compile
# peers (pre-compiled by worker processes meanwhile); if time still runs short it marks the
# remaining compile peers skipped, and it writes its JSON after every shape.
# OUTDIR is evidence: it goes to evidence/ltx_video/benchmarks/<gpu>_run<N>/ (evidence/README.md),
# never into the skill; publish its bench.json with make_results.py --publish.
set -uo pipefail

OUT=${1:?usage: run_gpu.sh OUTDIR [ARCH]}
ARCH=${2:-9.0}
PY=${PYTHON:-python3}
BUDGET=${LTX_RUN_BUDGET_S:-300}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EXAMPLE=$(cd "$HERE/../../skills/cuda-kernels/examples/ltx_video" && pwd)
SCRIPTS=$(cd "$EXAMPLE/../../scripts" && pwd)
BUILD_DIR=${KERNEL_SKILLS_BUILD_ROOT:-${TMPDIR:-/tmp}/kernel-skills-build}/ltx_video
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET - $(date +%s) + T0 )); }

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
  $PY -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)' 2>&1
  nvcc --version 2>&1 | tail -n 2
} > "$OUT/env.txt"

# 1. build (kernel-builder layout, local toolchain)
echo "[$(elapsed)s] building for sm_${ARCH/./} into $BUILD_DIR"
$PY "$SCRIPTS/build_local.py" "$EXAMPLE" --arch "$ARCH" --build-dir "$BUILD_DIR" --check > "$OUT/build.log" 2>&1
BUILD_RC=$?
if [ $BUILD_RC -ne 0 ]; then
  echo "build failed (exit $BUILD_RC); last lines of $OUT/build.log:"
  tail -n 40 "$OUT/build.log"
  exit 1
fi
PKG=$(tail -n 1 "$OUT/build.log")
echo "[$(elapsed)s] built: $PKG"

# 2. GPU tests (a failure is recorded, the run goes on)
TEST_TIMEOUT=$(( $(left) - 200 ))
[ $TEST_TIMEOUT -gt 120 ] && TEST_TIMEOUT=120
[ $TEST_TIMEOUT -lt 60 ] && TEST_TIMEOUT=60
echo "[$(elapsed)s] pytest -m gpu (timeout ${TEST_TIMEOUT}s)"
LTX_VIDEO_KERNELS_PATH="$PKG" timeout "$TEST_TIMEOUT" $PY -m pytest -m gpu -q -rfE -p no:cacheprovider \
  --durations=10 --junitxml="$OUT/gpu_tests.xml" "$EXAMPLE/tests" > "$OUT/gpu_tests.log" 2>&1
TEST_RC=$?
TEST_LINE=$(grep -E " in [0-9.]+s( \(.*\))?$" "$OUT/gpu_tests.log" | tail -n 1)
[ $TEST_RC -eq 124 ] && TEST_LINE="TIMED OUT after ${TEST_TIMEOUT}s; $TEST_LINE"
echo "[$(elapsed)s] tests: exit $TEST_RC: $TEST_LINE"

# 3. micro-benchmarks -> bench.json -> RESULTS.md
BENCH_TIMEOUT=$(( $(left) - 15 ))
[ $BENCH_TIMEOUT -lt 60 ] && BENCH_TIMEOUT=60
# a compile peer (cache hit) plus its timing takes a few seconds: stop starting them 20 s before the end
COMPILE_UNTIL=$(( BENCH_TIMEOUT - 20 ))
[ $COMPILE_UNTIL -lt 30 ] && COMPILE_UNTIL=30
echo "[$(elapsed)s] benchmarks (timeout ${BENCH_TIMEOUT}s, torch.compile peers started until ${COMPILE_UNTIL}s)"
timeout "$BENCH_TIMEOUT" $PY "$EXAMPLE/benchmarks/bench_ops.py" --out "$OUT/bench.json" --package-path "$PKG" \
  --max-seconds "$COMPILE_UNTIL" > "$OUT/bench.log" 2>&1
BENCH_RC=$?
head -n 1 "$OUT/bench.log"
$PY "$HERE/make_results.py" "$OUT/bench.json" --out "$OUT/RESULTS.md" --summary > "$OUT/summary.txt" 2>&1

echo "[$(elapsed)s] done; files in $OUT"
echo
echo "== ltx_video: build ok | tests: exit $TEST_RC: $TEST_LINE | bench: exit $BENCH_RC"
grep -E "^(FAILED|ERROR)" "$OUT/gpu_tests.log" | head -n 15
cat "$OUT/summary.txt"
