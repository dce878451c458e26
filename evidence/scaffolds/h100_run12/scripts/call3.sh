# Call 3 (stop 46): A = main at 99d6025 (.gpu/A); V2 = working tree, after call 2:
# - rmsnorm: Layout::kShifted only (the weight's packs one load each, all in flight); call 2's
#   shuffled loads with 4 packs per lane lost up to 40 % (4096x8192: 1 block of 544 threads per SM);
# - glu, elementwise: shuffled loads as in call 2, with blocks grown until one holds the row
#   (2048 bf16: 96 threads; call 2 split it into 248 + 8 packs and lost 9 % at 2048);
# - layernorm: as call 2's V (kShifted), not re-run.
# Benches A/V2 of rmsnorm, glu, elementwise; V2's GPU tests and compute-sanitizer; A's rope
# bench (unmeasured since run 9) while time is left.
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
V=99d6025+shifted+shfl2
OPS="rmsnorm glu elementwise"
sg bA A .gpu/A 99d6025 150 140 --ops $OPS rope --stages build --jobs 4 &
sg bV V . $V 150 140 --ops $OPS --stages build --jobs 4 &
wait
for op in rmsnorm glu elementwise; do
  sg ${op}A A .gpu/A 99d6025 75 66 --ops $op --stages bench
  sg ${op}V V . $V 75 66 --ops $op --stages bench
  save
done
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
sg tV V . $V 150 140 --ops $OPS --stages test sanitizer --jobs 3
cat $O/tV/summary.txt
save
L=$((560-(SECONDS-T0)))
if [ $L -gt 70 ]; then sg ropeA A .gpu/A 99d6025 $L $((L-5)) --ops rope --stages bench; fi
save
