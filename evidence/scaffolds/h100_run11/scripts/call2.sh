# Call 2 (stop 45): A = 7bb0916 (.gpu/A); W2 = working tree: unpack.patch in layernorm/glu/elementwise/
# rmsnorm, rmsnorm VPT 4 at 256 x 4 on sm_90 (3 on sm_80), layernorm = v2.patch with LN_SMALL made
# the rule (<= 128 packs: 4 per lane) and aligned first = 4 also for many rows of >= 256 packs
# (call 1: W won there); long_rows back to main (call 1: the pipelined loop lost). V2 = glu kAny 2 packs.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; mkdir -p $O
WK=$(mktemp -d)  # projects and builds outside the repository: its pyproject would capture pytest
T0=$SECONDS
save() { tar czf $OUT/call2.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
W2=7bb0916+unpack+ln_c+rms_guard
sg bA A .gpu/A 7bb0916 200 190 --ops layernorm glu elementwise rmsnorm --stages build --jobs 4 &
sg bW W . $W2 200 190 --ops layernorm glu elementwise rmsnorm --stages build --jobs 4 &
sg bV2 V2 .gpu/V2 7bb0916+unpack+glu_u2 200 190 --ops glu --stages build --jobs 1 &
wait
sg lnA A .gpu/A 7bb0916 85 75 --ops layernorm --stages bench
sg lnW W . $W2 85 75 --ops layernorm --stages bench
save
sg rmA A .gpu/A 7bb0916 85 75 --ops rmsnorm --stages bench
sg rmW W . $W2 85 75 --ops rmsnorm --stages bench
save
sg elA A .gpu/A 7bb0916 85 75 --ops elementwise --stages bench
sg elW W . $W2 85 75 --ops elementwise --stages bench
save
sg gluA A .gpu/A 7bb0916 85 75 --ops glu --stages bench
sg gluW W . $W2 85 75 --ops glu --stages bench
sg gluV2 V2 .gpu/V2 7bb0916+unpack+glu_u2 85 75 --ops glu --stages bench
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
# W2's GPU tests and compute-sanitizer while time is left (glu, elementwise: tested in call 1)
L=$((575-(SECONDS-T0)))
if [ $L -gt 100 ]; then
  sg tW W . $W2 $L $((L-10)) --ops layernorm rmsnorm glu elementwise --stages test sanitizer --jobs 2
  cat $O/tW/summary.txt
fi
save
