# Fourth call: layernorm's x[..., 1:] rows (kShifted) whose 4-packs-per-lane lanes are whole
# warps, read in warp runs at 4 packs per lane (`ln_runs.patch`, the working tree) against A
# (.gpu/A). Bench A/V one after the other, save, then V's GPU tests and compute-sanitizer if
# the device time allows. carry [".gpu/A"], A_SHA = main's short hash.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; rm -rf $O; mkdir -p $O
WK=$(mktemp -d)
T0=$SECONDS
save() { tar czf $OUT/warp_runs4.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
A_SHA=${A_SHA:?set A_SHA}
sg bA A .gpu/A $A_SHA 100 90 --ops layernorm --stages build &
sg bV V . $A_SHA+ln_runs 100 90 --ops layernorm --stages build &
wait
sg layernormA A .gpu/A $A_SHA 100 90 --ops layernorm --stages bench
sg layernormV V . $A_SHA+ln_runs 100 90 --ops layernorm --stages bench
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
L=$((${CALL_S:-220}-(SECONDS-T0)))
if [ $L -gt 75 ]; then sg tV V . $A_SHA+ln_runs $L $((L-5)) --ops layernorm --stages test sanitizer; cat $O/tV/summary.txt; fi
save
