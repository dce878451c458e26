# Second call, on the machine call 1 left warm: rmsnorm A (.gpu/A) against V3 = the working
# tree (call 1's V2, warp runs with the word offset switched per row, launched for every row
# whose 4-packs-per-lane lanes are whole warps: 1024-wide bf16 rows too). Bench, then V3's GPU
# tests and compute-sanitizer. carry [".gpu/A"], A_SHA = main's short hash.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; rm -rf $O; mkdir -p $O
WK=$(mktemp -d)
T0=$SECONDS
save() { tar czf $OUT/warp_runs2.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
A_SHA=${A_SHA:?set A_SHA}
sg bA A .gpu/A $A_SHA 150 140 --ops rmsnorm --stages build &
sg bV3 V3 . $A_SHA+runs_all 150 140 --ops rmsnorm --stages build &
wait
sg rmsnormA A .gpu/A $A_SHA 150 140 --ops rmsnorm --stages bench
sg rmsnormV3 V3 . $A_SHA+runs_all 150 140 --ops rmsnorm --stages bench
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
L=$((330-(SECONDS-T0)))
if [ $L -gt 80 ]; then sg tV3 V3 . $A_SHA+runs_all $L $((L-5)) --ops rmsnorm --stages test sanitizer; cat $O/tV3/summary.txt; fi
save
