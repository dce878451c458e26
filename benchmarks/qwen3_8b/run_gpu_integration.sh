#!/usr/bin/env bash
# qwen3_8b integration on a GPU, in one command (a repository tool, not shipped):
#
#   bash benchmarks/qwen3_8b/run_gpu_integration.sh OUT_DIR [WHEELS]
#
# 1. builds the example for this GPU's arch with build_local.py      -> OUT/build.log
# 2. runs the gpu-marked integration tests (full-size bf16 model)    -> OUT/gpu_tests.log, .xml
# 3. runs the end-to-end benchmark                                   -> OUT/e2e_h200.json, OUT/benchmark.log
# 4. renders RESULTS.md from that JSON                               -> OUT/RESULTS.md
# 5. runs the skill scripts' GPU paths                               -> OUT/injection_example.*, OUT/benchmark_example.*
# 6. prints a compact summary (last lines of stdout)
#
# A failing step does not stop the later ones. BUDGET (seconds, default 470) bounds the
# whole run: the benchmark gets a deadline from what is left and skips compile variants
# that would not fit (saying so in its JSON). WHEELS (optional; default REPO/.whl if it
# exists): a wheel file or a directory of wheels. When pytest or kernels is not importable,
# the wheels named pytest / pluggy / iniconfig / kernels in it are installed with --no-deps
# into OUT/pydeps (unzipped if pip is missing). Without kernels the Kernel Hub (kernelize)
# GPU test skips; without pytest the GPU tests cannot run. To publish a run, copy
# OUT/e2e_h200.json to the example's integration/results/e2e_h200.json and OUT/RESULTS.md
# to evidence/qwen3_8b/integration/RESULTS.md.
set -u -o pipefail

OUT=${1:?usage: run_gpu_integration.sh OUT_DIR [WHEELS]}
WHEELS=${2:-}
BUDGET=${BUDGET:-470}
START=$(date +%s)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO" || exit 2
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
EX=skills/cuda-kernels/examples/qwen3_8b
INTEG=$EX/integration
PY=${PYTHON:-python}

elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET - $(elapsed) )); }
note() { echo "[$(elapsed)s] $*"; }

export PYTHONPATH="$REPO/src${PYTHONPATH:+:$PYTHONPATH}"
ARCH=$($PY -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())' 2>/dev/null || echo 9.0)
export KERNEL_SKILLS_TEST_ARCHS=$ARCH KERNEL_SKILLS_BUILD_ROOT="$OUT/build"
export MAX_JOBS=${MAX_JOBS:-$(nproc)}

[ -z "$WHEELS" ] && [ -d "$REPO/.whl" ] && WHEELS="$REPO/.whl"
missing=""
for mod in pytest kernels; do
  $PY -c "import $mod" > /dev/null 2>&1 || missing="$missing $mod"
done
if [ -n "$missing" ] && [ -n "$WHEELS" ]; then
  files=()
  if [ -d "$WHEELS" ]; then
    for name in pytest pluggy iniconfig kernels; do
      for f in "$WHEELS"/"$name"-*.whl; do [ -f "$f" ] && files+=("$f"); done
    done
  elif [ -f "$WHEELS" ]; then
    files=("$WHEELS")
  fi
  if [ ${#files[@]} -gt 0 ]; then
    note "missing:$missing; installing ${#files[@]} wheel(s) into $OUT/pydeps"
    mkdir -p "$OUT/pydeps"
    if ! $PY -m pip install -q --no-deps --target "$OUT/pydeps" "${files[@]}" > "$OUT/pip.log" 2>&1; then
      for f in "${files[@]}"; do $PY -m zipfile -e "$f" "$OUT/pydeps" >> "$OUT/pip.log" 2>&1; done
    fi
    export PYTHONPATH="$OUT/pydeps:$PYTHONPATH"
  fi
fi
$PY -c "import pytest" > /dev/null 2>&1 || note "pytest is not importable: the GPU tests cannot run (pass a wheels dir)"

note "1/5 build $EX for sm_${ARCH/./} (MAX_JOBS=$MAX_JOBS)"
timeout 420 $PY skills/cuda-kernels/scripts/build_local.py "$EX" --arch "$ARCH" --build-dir "$OUT/build/qwen3_8b" \
  > "$OUT/build.path" 2> "$OUT/build.log"
BUILD_RC=$?
PKG_PATH=$(tail -n 1 "$OUT/build.path" 2>/dev/null)
note "build rc=$BUILD_RC path=$PKG_PATH"

TEST_RC=skipped
if [ "$BUILD_RC" = 0 ]; then
  T=$(( $(left) - 230 )); [ "$T" -gt 240 ] && T=240; [ "$T" -lt 60 ] && T=60
  note "2/5 gpu tests (timeout ${T}s)"
  timeout "$T" $PY -m pytest -m gpu tests/examples/test_qwen3_integration.py -q -rA -p no:cacheprovider \
    --junitxml "$OUT/gpu_tests.xml" > "$OUT/gpu_tests.log" 2>&1
  TEST_RC=$?
  note "gpu tests rc=$TEST_RC"
fi

BENCH_RC=skipped
if [ "$BUILD_RC" = 0 ]; then
  D=$(( $(left) - 45 )); [ "$D" -lt 60 ] && D=60
  note "3/5 end-to-end benchmark (deadline ${D}s)"
  timeout $(( D + 150 )) $PY "$INTEG/benchmark_e2e.py" --package-path "$PKG_PATH" --out "$OUT/e2e_h200.json" \
    --deadline "$D" > "$OUT/benchmark.log" 2>&1
  BENCH_RC=$?
  note "benchmark rc=$BENCH_RC"
fi

if [ -f "$OUT/e2e_h200.json" ]; then
  note "4/5 RESULTS.md"
  $PY benchmarks/qwen3_8b/results_md.py "$OUT/e2e_h200.json" --source-name integration/results/e2e_h200.json \
    --out "$OUT/RESULTS.md" > "$OUT/results_md.log" 2>&1
fi

INJ_RC=skipped; BEX_RC=skipped
if [ "$BUILD_RC" = 0 ] && [ "$(left)" -gt 40 ]; then
  note "5/5 skill scripts, GPU paths"
  timeout 120 $PY skills/cuda-kernels/scripts/transformers_injection_example.py --device cuda \
    --package-path "$PKG_PATH" --out "$OUT/injection_example.json" > "$OUT/injection_example.log" 2>&1
  INJ_RC=$?
  if [ "$(left)" -gt 150 ]; then VARIANTS="baseline kernels compile"; else VARIANTS="baseline kernels"; fi
  if [ "$(left)" -gt 25 ]; then
    timeout $(( $(left) > 60 ? $(left) : 60 )) $PY skills/cuda-kernels/scripts/benchmark_example.py --device cuda \
      --package-path "$PKG_PATH" --seq-len 512 --variants $VARIANTS --out "$OUT/benchmark_example.json" \
      > "$OUT/benchmark_example.log" 2>&1
    BEX_RC=$?
  fi
fi

echo
echo "================ qwen3_8b integration summary ($(elapsed)s, outputs in $OUT) ================"
echo "build: rc=$BUILD_RC   gpu tests: rc=$TEST_RC   benchmark: rc=$BENCH_RC   injection example: rc=$INJ_RC   benchmark example: rc=$BEX_RC"
[ -f "$OUT/gpu_tests.log" ] && tail -n 3 "$OUT/gpu_tests.log" | sed 's/^/tests: /'
grep -E "^(FAILED|ERROR)" "$OUT/gpu_tests.log" 2>/dev/null | head -n 8
[ "$BUILD_RC" != 0 ] && tail -n 15 "$OUT/build.log"
[ -f "$OUT/injection_example.log" ] && grep -E "logits vs|prefill|^OK|^FAILED" "$OUT/injection_example.log" | sed 's/^/injection: /'
[ -f "$OUT/benchmark_example.log" ] && grep -E "speedup|vs_|FAILED" "$OUT/benchmark_example.log" | tail -n 4 | sed 's/^/bench example: /'
if [ -f "$OUT/e2e_h200.json" ]; then
  $PY - "$OUT/e2e_h200.json" "$INTEG" <<'EOF'
import json, sys
sys.path.insert(0, sys.argv[2])
from benchmark_e2e import summarize, summary_text
result = json.load(open(sys.argv[1]))
lengths = sorted({int(n) for v in result["variants"].values() for n in v.get("prefill", {})})
if lengths and "target" not in result:
    summarize(result, lengths)  # the run was cut short before it summarised
for name, v in result["variants"].items():
    if v.get("status") != "ok":
        print(f"{name}: {v.get('status')}: {(v.get('error') or '').splitlines()[0][:200] if v.get('error') else ''}")
print(summary_text(result))
EOF
else
  tail -n 20 "$OUT/benchmark.log" 2>/dev/null
fi
