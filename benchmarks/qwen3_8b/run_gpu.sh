#!/usr/bin/env bash
# Build the qwen3_8b example, run its GPU tests, run every micro-benchmark, and write
# results.json + RESULTS.md + logs into OUT_DIR (also throw_probe.txt: why a C++ exception
# from the extension crashed the first run). A repository tool (the skill ships bench_ops.py,
# which tune_ops.py here runs with the launch-configuration sweep, and make_results.py);
# about 5 minutes on an H200 with 16 cores:
#
#   bash benchmarks/qwen3_8b/run_gpu.sh OUT_DIR
#
# Environment:
#   ARCH=9.0            architecture to build for (default: 9.0)
#   BUILD_DIR=...       build directory (default: /tmp/qwen3_8b_kernels_build; reused, ninja-cached)
#   MAX_JOBS=N          parallel compile jobs (default: all cores)
#   SOURCE=TEXT         what is measured, recorded in results.json and RESULTS.md, e.g. "commit abc1234"
#                       (default: this checkout's git commit; unrecorded outside a git checkout)
# A test failure does not stop the benchmarks; the exit code is non-zero if the build,
# the tests or the benchmark failed. To publish, slim OUT_DIR/results.json into the example's
# benchmarks/results.json with benchmarks/qwen3_8b/slim_tuning.py, regenerate
# evidence/qwen3_8b/benchmarks/RESULTS.md with make_results.py and the README tables with
# benchmarks/results_tables.py.
# The rest of OUT_DIR (logs, JUnit XML, probes) goes to
# evidence/qwen3_8b/benchmarks/<gpu>_run<N>/ (evidence/README.md), never into the skill.
set -uo pipefail

if [[ $# -ne 1 || "$1" == -* ]]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
EXAMPLE=$REPO/skills/cuda-kernels/examples/qwen3_8b
HERE=$EXAMPLE/benchmarks
SCRIPTS=$REPO/skills/cuda-kernels/scripts
ARCH=${ARCH:-9.0}
BUILD_DIR=${BUILD_DIR:-/tmp/qwen3_8b_kernels_build}
export MAX_JOBS=${MAX_JOBS:-$(nproc)}
PY=${PYTHON:-python3}
status=0
t0=$SECONDS

echo "== qwen3_8b: build for sm_${ARCH/./} into $BUILD_DIR (log: $OUT/build.log)"
if ! "$PY" "$SCRIPTS/build_local.py" "$EXAMPLE" --arch "$ARCH" --build-dir "$BUILD_DIR" --check >"$OUT/build.log" 2>&1; then
  echo "BUILD FAILED; last lines of $OUT/build.log:" >&2
  tail -n 40 "$OUT/build.log" >&2
  exit 1
fi
tail -n 2 "$OUT/build.log"
echo "   build: $((SECONDS - t0)) s"

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
  "$PY" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
} >"$OUT/environment.txt" 2>&1

# Why a TORCH_CHECK in the extension killed the first run's pytest with SIGSEGV: toolchain,
# the failing call in child processes, a minimal throwing op built by build_local and by
# torch.utils.cpp_extension (C++17 and C++20), and cuda-gdb backtraces at the throw and at
# the crash. It runs beside the tests (mostly CPU: compiles and process start-up) and is
# waited for before the benchmarks, so it cannot disturb the timings.
PROBE="$REPO/evidence/qwen3_8b/benchmarks/throw_probe.py"
probe_pid=""
if [[ -f "$PROBE" ]]; then
  echo "== throw probe in the background (report: $OUT/throw_probe.txt)"
  timeout 200 "$PY" "$PROBE" --package-path "$BUILD_DIR" --out "$OUT/throw_probe.txt" \
    --arch "$ARCH" --jobs "$MAX_JOBS" >"$OUT/throw_probe.log" 2>&1 &
  probe_pid=$!
fi

echo "== GPU tests (log: $OUT/pytest_gpu.log)"
t1=$SECONDS
QWEN3_8B_KERNELS_PATH="$BUILD_DIR" PYTHONFAULTHANDLER=1 timeout 240 "$PY" -m pytest "$EXAMPLE/tests" -m gpu -q \
  -p no:cacheprovider --junitxml="$OUT/pytest_gpu.xml" >"$OUT/pytest_gpu.log" 2>&1
rc=$?
if [[ $rc -ne 0 ]]; then
  status=1
  echo "   tests FAILED (exit $rc); failures:"
  grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.log" | head -n 40
fi
tail -n 1 "$OUT/pytest_gpu.log"
echo "   tests: $((SECONDS - t1)) s"

if [[ -n "$probe_pid" ]]; then
  t3=$SECONDS
  wait "$probe_pid"
  echo "   throw probe: exit $? (waited $((SECONDS - t3)) s); key lines:"
  grep -E "^- |cpp_extension compile|build_local compile" "$OUT/throw_probe.txt" | cut -c1-220 | head -n 30
  grep -A12 "=== stopped" "$OUT/throw_probe.txt" | grep -E "^#[0-9]|===" | head -n 24
fi

echo "== micro-benchmarks (log: $OUT/bench.log)"
t2=$SECONDS
QWEN3_8B_KERNELS_PATH="$BUILD_DIR" timeout 330 "$PY" "$REPO/benchmarks/qwen3_8b/tune_ops.py" --package-path "$BUILD_DIR" \
  ${SOURCE:+--source "$SOURCE"} --out "$OUT/results.json" >"$OUT/bench.log" 2>&1
rc=$?
if [[ $rc -ne 0 ]]; then
  status=1
  echo "   benchmark FAILED (exit $rc); last lines:"
  tail -n 30 "$OUT/bench.log"
fi
echo "   benchmarks: $((SECONDS - t2)) s"
grep -E "^tune " "$OUT/bench.log" || true

if [[ -f "$OUT/results.json" ]]; then
  grep -m1 "copy bandwidth" "$OUT/bench.log" || true
  echo "== summary: default kernel | best configuration of the sweep | best peer (x = peer us / our best us) | targets"
  "$PY" "$HERE/make_results.py" "$OUT/results.json" --md "$OUT/RESULTS.md" --summary || status=1
fi
echo "== done in $((SECONDS - t0)) s; outputs in $OUT (exit $status)"
exit $status
