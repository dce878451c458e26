#!/usr/bin/env bash
# Sweep the RMSNorm-family chunk targets on a GPU machine (how run 4's choice was made).
#
#   bash benchmarks/ltx_video/sweep_norm_targets.sh OUTDIR V0_BENCH_JSON
#
# V0_BENCH_JSON: a bench_ops.py run of the targets in pick_norm_targets.py's VARIANTS["v0"]
# (run 4 used run 3's bench.json, whose defaults were (6, 4, 2)); edit VARIANTS for a new sweep.
# For each variant of pick_norm_targets.py's VARIANTS other than v0, a copy of the example with
# norm_target_vpt rewritten is built and benchmarked (the three norm ops, no torch.compile peers:
# the kernel's time is what is compared), then pick_norm_targets.py prints the line to commit.
# Run from the repository root; ~60 s per variant on an H200 (build ~25 s, bench ~35 s).
set -uo pipefail
OUT=${1:?usage: sweep_norm_targets.sh OUTDIR V0_BENCH_JSON}
V0=${2:?usage: sweep_norm_targets.sh OUTDIR V0_BENCH_JSON}
PY=${PYTHON:-python3}
EX=skills/cuda-kernels/examples/ltx_video
HERE=benchmarks/ltx_video
mkdir -p "$OUT"
PATTERN='return add ? [0-9]* : mod ? [0-9]* : [0-9]*;'
grep -q "$PATTERN" "$EX/kernel_src/ltx_ops.cpp" || { echo "ltx_ops.cpp: norm_target_vpt's return line not found" >&2; exit 1; }
for v in "v1 4 2 1" "v2 4 1 2"; do
  set -- $v
  work=$(mktemp -d)
  cp -r "$EX" "$work/ltx_video"
  sed -i "s/$PATTERN/return add ? $4 : mod ? $3 : $2;/" "$work/ltx_video/kernel_src/ltx_ops.cpp"
  "$PY" skills/cuda-kernels/scripts/build_local.py "$work/ltx_video" --arch 9.0 --build-dir "$work/build" --check \
    > "$OUT/build_$1.log" 2>&1 || { echo "$1: build failed (see $OUT/build_$1.log)" | tee -a "$OUT/status.txt"; continue; }
  "$PY" "$EX/benchmarks/bench_ops.py" --package-path "$(tail -n 1 "$OUT/build_$1.log")" \
    --ops rms_norm,rms_norm_modulate,add_rms_norm_modulate --max-seconds 0 --compile-workers 0 \
    --out "$OUT/bench_$1.json" > "$OUT/bench_$1.log" 2>&1
  echo "$1 rc=$? t=${SECONDS}s" | tee -a "$OUT/status.txt"
done
"$PY" "$HERE/pick_norm_targets.py" "v0=$V0" "v1=$OUT/bench_v1.json" "v2=$OUT/bench_v2.json" \
  > "$OUT/picked.txt" 2> "$OUT/pick.log"
cat "$OUT/pick.log" "$OUT/picked.txt"
