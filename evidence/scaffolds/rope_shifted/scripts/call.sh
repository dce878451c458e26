# One device call (prepared in stop 47, not yet run: no machine could be started with the
# device time left). Before it: `git archive main | tar -x -C .gpu/A` (A), then
# `git apply evidence/scaffolds/rope_shifted/rope_shifted.patch` (V, the working tree); run it
# with carry [".gpu/A"] and A_SHA set to main's short hash. Benches A/V of rope, rotate-half
# (same call, one after the other), then V's GPU tests and compute-sanitizer; about 180 s
# after a cold start.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; rm -rf $O; mkdir -p $O
WK=$(mktemp -d)
T0=$SECONDS
save() { tar czf $OUT/rope_shifted.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
A_SHA=${A_SHA:-1692fb9}
V=$A_SHA+rope_shifted
sg bA A .gpu/A $A_SHA 150 140 --ops rope --stages build &
sg bV V . $V 150 140 --ops rope --stages build &
wait
sg ropeA A .gpu/A $A_SHA 150 140 --ops rope --stages bench
sg ropeV V . $V 150 140 --ops rope --stages bench
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
L=$((560-(SECONDS-T0)))
if [ $L -gt 70 ]; then sg tV V . $V $L $((L-5)) --ops rope --stages test sanitizer; cat $O/tV/summary.txt; fi
save
