#!/usr/bin/env bash
# One command for the GPU machine: build the ltx_video example, run the integration's GPU
# tests and the end-to-end benchmark (plain and CUDA-graph configurations, batch 1 and 2);
# logs, JSON and RESULTS.md go to OUTDIR and a compact summary is printed last. About 4-5
# minutes on an H200 with a warm build.
#
#   LTX_BUILD_ROOT=/tmp/ksb LTX_DEADLINE_S=360 PYTHONPATH=src:/tmp/site \
#     bash benchmarks/ltx_video/run_gpu_e2e.sh OUTDIR
#
# Run from anywhere inside the repository. A failing step does not stop the later ones.
# Environment knobs:
#   LTX_ARCH=9.0           compute capability to build (H200/H100: 9.0)
#   LTX_BUILD_ROOT=DIR     build directory (default /tmp/kernel-skills-builds; kept out of OUTDIR)
#   LTX_WHEELS=DIR         if diffusers, PIL, requests or pytest is not importable, pip-install
#                          the wheels in DIR (--no-deps --target /tmp/site) first; default:
#                          REPO/.whl if present
#   LTX_DEADLINE_S=360     wall-clock budget for all steps; each step's timeout is cut to fit
#   LTX_E2E_ARGS="..."     extra benchmark_e2e.py arguments, e.g. "--configs eager patched"
#   LTX_INJECTION=1        also run scripts/ltx_kernel_injection_example.py (off by default:
#                          it repeats the e2e comparison on a smaller scale)
set -u

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
INTEGRATION=$REPO/skills/cuda-kernels/examples/ltx_video/integration
cd "$REPO" || exit 1
PY=${PYTHON:-python}
ARCH=${LTX_ARCH:-9.0}
BUILD_ROOT=${LTX_BUILD_ROOT:-/tmp/kernel-skills-builds}
DEADLINE=${LTX_DEADLINE_S:-360}
START=$(date +%s)
STATUS="$OUT/status.txt"
: > "$STATUS"

remaining() { echo $(( DEADLINE - ($(date +%s) - START) )); }

# step NAME CAP_SECONDS COMMAND...: runs with timeout min(CAP, time left), logs to OUTDIR/NAME.log
step() {
  local name=$1 cap=$2; shift 2
  local left; left=$(remaining)
  local limit=$(( cap < left - 15 ? cap : left - 15 ))
  if [ "$limit" -le 10 ]; then
    echo "$name skipped (out of time)" | tee -a "$STATUS"
    return 1
  fi
  local t0; t0=$(date +%s)
  echo "== $name (timeout ${limit}s): $*" | tee "$OUT/$name.log"
  timeout --kill-after=10 "$limit" "$@" >> "$OUT/$name.log" 2>&1
  local rc=$?
  local took=$(( $(date +%s) - t0 ))
  if [ $rc -eq 0 ]; then
    echo "$name ok ${took}s" | tee -a "$STATUS"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "$name TIMEOUT after ${took}s (see $name.log)" | tee -a "$STATUS"
  else
    echo "$name FAILED rc=$rc ${took}s (see $name.log)" | tee -a "$STATUS"
  fi
  return $rc
}

# 0. diffusers (pure Python), its import-time requirements and pytest, if the machine lacks them
if ! "$PY" -c "import diffusers, PIL, requests, pytest" 2>/dev/null; then
  WHEELS=${LTX_WHEELS:-$REPO/.whl}
  if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    mkdir -p /tmp/site
    "$PY" -m pip install -q --no-deps --no-index --target /tmp/site "$WHEELS"/*.whl > "$OUT/wheels.log" 2>&1 \
      && echo "wheels ok" | tee -a "$STATUS" || echo "wheels FAILED (see wheels.log)" | tee -a "$STATUS"
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
  fi
fi
"$PY" - > "$OUT/environment.log" 2>&1 <<'EOF'
import platform, torch
print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.version.cuda)
print("gpu", torch.cuda.get_device_name() if torch.cuda.is_available() else None)
import diffusers
print("diffusers", diffusers.__version__, diffusers.__file__)
EOF
if [ $? -ne 0 ]; then echo "environment FAILED: diffusers or torch missing (see environment.log)" | tee -a "$STATUS"; fi

export KERNEL_SKILLS_TEST_ARCHS=$ARCH
export KERNEL_SKILLS_BUILD_ROOT=$BUILD_ROOT
export MAX_JOBS=${MAX_JOBS:-16}
PKG_DIR="$BUILD_ROOT/ltx_video"  # the tests' fixture builds into BUILD_ROOT/<project>: same dir, one build

# 1. build (ninja-cached: the tests and scripts below reuse it)
step build 300 "$PY" skills/cuda-kernels/scripts/build_local.py skills/cuda-kernels/examples/ltx_video \
  --arch "$ARCH" --build-dir "$PKG_DIR" --check
PKG_PATH=$PKG_DIR  # build_local puts the package in BUILD_DIR/ltx_video_kernels

# 2. correctness on the GPU (full-size transformer vs float64, per-token timesteps, compile)
step gpu_tests 180 "$PY" -m pytest tests/examples/test_ltx_integration.py -m gpu -v -s -p no:cacheprovider \
  --junitxml="$OUT/gpu_tests.xml"

# 3. end-to-end benchmark (writes JSON after every configuration, RESULTS.md at the end)
# shellcheck disable=SC2086 # LTX_E2E_ARGS is a list of arguments
step e2e 330 "$PY" "$INTEGRATION/benchmark_e2e.py" --device cuda --package-path "$PKG_PATH" \
  --out "$OUT/e2e_h200.json" --markdown "$OUT/RESULTS.md" ${LTX_E2E_ARGS:-}
if [ -f "$OUT/e2e_h200.json" ] && [ ! -f "$OUT/RESULTS.md" ]; then
  "$PY" "$HERE/make_results_md.py" "$OUT/e2e_h200.json" -o "$OUT/RESULTS.md" >> "$OUT/e2e.log" 2>&1
fi

# 4. the skill's injection example, GPU path (opt-in)
if [ "${LTX_INJECTION:-0}" = "1" ]; then
  step injection 150 "$PY" skills/cuda-kernels/scripts/ltx_kernel_injection_example.py --device cuda \
    --package-path "$PKG_PATH" --out "$OUT/injection_h200.json"
fi

# 5. summary
"$PY" - "$OUT" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
from pathlib import Path
out = Path(sys.argv[1])
print("\n===== ltx_video integration on the GPU: summary =====")
print((out / "status.txt").read_text().strip())
xml = out / "gpu_tests.xml"
if xml.exists():
    root = ET.parse(xml).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    print(f"gpu tests: {suite.get('tests')} run, {suite.get('failures')} failed, {suite.get('errors')} errors, "
          f"{suite.get('skipped')} skipped")
    for case in suite.iter("testcase"):
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if bad is not None:
            print(f"  FAIL {case.get('name')}: {(bad.get('message') or '')[:300]}")
log = out / "gpu_tests.log"
if log.exists():
    for line in log.read_text().splitlines():
        if "rel. error vs float64" in line:
            print("  " + line.strip())
e2e = out / "e2e_h200.json"
if e2e.exists():
    d = json.loads(e2e.read_text())
    print(f"e2e ({d['environment'].get('gpu')}, torch {d['environment']['torch']}, {d['inputs']['tokens']} tokens, "
          f"compile {d['settings']['compile_mode']}, complete={d.get('complete')}):")
    for r in d["results"]:
        print(f"  b{r['batch']} {r['config']:<26} {r['median_ms']:8.2f} ms  first {r['first_call_s']:6.1f} s  "
              f"err {r.get('rel_err_vs_eager', float('nan')):.1e}" + (f"  graphs {r['graphs']}" if "graphs" in r else ""))
    for b, s in d["speedups"].items():
        print(f"  b{b}: " + ", ".join(f"{k} {v:.2f}x" for k, v in s.items()))
    print(f"  goal patched+compile < compile: {d['goal_patched_compile_faster_than_compile']}")
    print(f"  goal with CUDA graphs, patched+compile+cudagraph < compile+cudagraph: "
          f"{d.get('goal_patched_compile_faster_than_compile_cudagraph')}")
    if d["patch"]:
        print(f"  patched sites: {d['patch']['counts']}, fused q/k norm+RoPE: {d['patch']['fused_norm_rope']}")
    for e in d["errors"]:
        print(f"  ERROR b{e['batch']} {e['config']}: {e['error'][:300]}")
inj = out / "injection_h200.json"
if inj.exists():
    d = json.loads(inj.read_text())
    print("injection example: " + ", ".join(f"{k} {v:.2f} ms" for k, v in d["median_ms"].items())
          + f"; rel err {d['rel_err_patched_vs_eager']:.1e}; "
          + ", ".join(f"{k} {v:.2f}x" for k, v in d["speedups"].items()))
EOF
echo "total $(( $(date +%s) - START ))s; outputs in $OUT"
