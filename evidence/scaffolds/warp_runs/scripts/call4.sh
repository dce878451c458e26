# Fourth call (prepared in stop 48, not run: the session's device time ran out). Before it:
# `git archive main | tar -x -C .gpu/A` (A), then `git apply` evidence/scaffolds/warp_runs/
# ln_runs.patch and rms_narrow.patch (V, the working tree). V: layernorm's x[..., 1:] rows whose
# 4-packs-per-lane lanes are whole warps in warp runs; rmsnorm's aligned rows of 65-128 packs
# (many rows) as one warp of 4 packs per lane. Benches A/V of layernorm, then of rmsnorm, one
# after the other; saves; then V's GPU tests and compute-sanitizer while CALL_S seconds last.
# carry [".gpu/A"], A_SHA = main's short hash; about 200 s of benches after a cold start.
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
V=$A_SHA+ln_runs+rms_narrow
sg bA A .gpu/A $A_SHA 150 140 --ops layernorm rmsnorm --stages build &
sg bV V . $V 150 140 --ops layernorm rmsnorm --stages build &
wait
sg layernormA A .gpu/A $A_SHA 150 140 --ops layernorm --stages bench
sg layernormV V . $V 150 140 --ops layernorm --stages bench
sg rmsnormA A .gpu/A $A_SHA 150 140 --ops rmsnorm --stages bench
sg rmsnormV V . $V 150 140 --ops rmsnorm --stages bench
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
L=$((${CALL_S:-560}-(SECONDS-T0)))
if [ $L -gt 80 ]; then sg tV V . $V $L $((L-5)) --ops layernorm rmsnorm --stages test sanitizer; cat $O/tV/summary.txt; fi
save
