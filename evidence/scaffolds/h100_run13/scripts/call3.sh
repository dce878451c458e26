# Call 3 (stop 47): A = main at 3ef1c66 (.gpu/A); V2 = working tree after calls 1-2:
# - glu: window_q only when gate and up share a phase (call 1 switched on the gate's and kept a
#   runtime pick for up otherwise: 4093x4100 lost 4.5-5.2 points), the runtime pick for both else;
# - rmsnorm: pass 1 as in A (call 1's switch there lost 0.1-1.8 points); pass 2's shifted weight
#   (kSamePhase rows: contiguous rows of 4100) switched once per row;
# - layernorm: as call 2's V (x's word offset switched in pass 1), re-run to confirm;
# - elementwise: as in A (call 1: no change beyond noise).
# Benches A/V2 of glu, rmsnorm, layernorm; then V2's GPU tests and compute-sanitizer of all four
# row ops (common.cuh's window_next now goes through with_next and window_at).
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; rm -rf $O; mkdir -p $O
WK=$(mktemp -d)
T0=$SECONDS
save() { tar czf $OUT/call3.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
V=3ef1c66+window_q2
OPS="glu rmsnorm layernorm"
sg bA A .gpu/A 3ef1c66 150 140 --ops $OPS --stages build --jobs 3 &
sg bV V . $V 150 140 --ops $OPS elementwise --stages build --jobs 4 &
wait
for op in $OPS; do
  sg ${op}A A .gpu/A 3ef1c66 75 66 --ops $op --stages bench
  sg ${op}V V . $V 75 66 --ops $op --stages bench
  save
done
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
L=$((585-(SECONDS-T0)))
if [ $L -gt 70 ]; then sg tV V . $V $L $((L-5)) --ops $OPS elementwise --stages test sanitizer --jobs 4; cat $O/tV/summary.txt; fi
save
