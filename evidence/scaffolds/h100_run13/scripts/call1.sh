# Call 1 (stop 47): A = main at 3ef1c66 (.gpu/A); V = working tree: the shifted pack's word
# offset known at compile time (common.cuh window_q, with_word_offset, for_each_window: one
# switch per row around the loop of packs, four funnel shifts per pack in place of window()'s
# fifteen selects), in elementwise's and glu's shuffled loads and the norms' cached pass 1
# (rmsnorm kAny/kShifted; layernorm kShifted, and kAny except at VPT 2, which spilled).
# Benches A/V of elementwise, glu, rmsnorm (same call, one after the other), then V's GPU tests
# and compute-sanitizer of those three while time is left.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; rm -rf $O; mkdir -p $O
WK=$(mktemp -d)
T0=$SECONDS
save() { tar czf $OUT/call1.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
V=3ef1c66+window_q
OPS="elementwise glu rmsnorm"
sg bA A .gpu/A 3ef1c66 150 140 --ops $OPS --stages build --jobs 3 &
sg bV V . $V 150 140 --ops $OPS --stages build --jobs 3 &
wait
for op in $OPS; do
  sg ${op}A A .gpu/A 3ef1c66 75 66 --ops $op --stages bench
  sg ${op}V V . $V 75 66 --ops $op --stages bench
  save
done
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
L=$((585-(SECONDS-T0)))
if [ $L -gt 70 ]; then sg tV V . $V $L $((L-5)) --ops $OPS --stages test sanitizer --jobs 3; cat $O/tV/summary.txt; fi
save
