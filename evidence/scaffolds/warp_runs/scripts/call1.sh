# One device call: x[..., 1:] rows read in warp runs (run_pack/with_run_next, common.cuh):
# rmsnorm's rows without a residual at 4 packs per lane, and elementwise's shuffled loads at 32
# packs per warp instead of 31. Trees: A = main (.gpu/A, `git archive`), V1 = the working tree
# (rmsnorm: window_at per pack; elementwise), V2 = .gpu/V2 (rmsnorm: V1 with x's word offset
# switched once per row; elementwise as A). Run with carry [".gpu/A", ".gpu/V2"] and A_SHA set
# to main's short hash. Builds the three together, benches A/V1/V2 of rmsnorm and A/V1 of
# elementwise one after the other, then V1's GPU tests and compute-sanitizer, and V2's rmsnorm
# ones if time is left.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; rm -rf $O; mkdir -p $O
WK=$(mktemp -d)
T0=$SECONDS
save() { tar czf $OUT/warp_runs.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
A_SHA=${A_SHA:?set A_SHA}
sg bA A .gpu/A $A_SHA 150 140 --ops rmsnorm elementwise --stages build &
sg bV1 V1 . $A_SHA+runs 150 140 --ops rmsnorm elementwise --stages build &
sg bV2 V2 .gpu/V2 $A_SHA+runs_switch 150 140 --ops rmsnorm --stages build &
wait
sg rmsnormA A .gpu/A $A_SHA 150 140 --ops rmsnorm --stages bench
sg rmsnormV1 V1 . $A_SHA+runs 150 140 --ops rmsnorm --stages bench
sg rmsnormV2 V2 .gpu/V2 $A_SHA+runs_switch 150 140 --ops rmsnorm --stages bench
sg elementwiseA A .gpu/A $A_SHA 150 140 --ops elementwise --stages bench
sg elementwiseV1 V1 . $A_SHA+runs 150 140 --ops elementwise --stages bench
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
L=$((540-(SECONDS-T0)))
if [ $L -gt 80 ]; then sg tV1 V1 . $A_SHA+runs $L $((L-5)) --ops rmsnorm elementwise --stages test sanitizer; cat $O/tV1/summary.txt; fi
save
L=$((560-(SECONDS-T0)))
if [ $L -gt 80 ]; then sg tV2 V2 .gpu/V2 $A_SHA+runs_switch $L $((L-5)) --ops rmsnorm --stages test sanitizer; cat $O/tV2/summary.txt; fi
save
