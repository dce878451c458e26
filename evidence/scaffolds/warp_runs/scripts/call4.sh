# Fourth call (prepared in stop 48, not run: the session's device time ran out). Before it:
# `git archive main | tar -x -C .gpu/A` (A), then `git apply` evidence/scaffolds/warp_runs/
# ln_runs.patch and rms_narrow.patch (V, the working tree). V: layernorm's x[..., 1:] rows whose
# 4-packs-per-lane lanes are whole warps in warp runs; rmsnorm's aligned rows of 65-128 packs
# (many rows) as one warp of 4 packs per lane. Benches A/V of layernorm, then of rmsnorm, one
# after the other; saves; then V's GPU tests and compute-sanitizer while CALL_S seconds last.
# carry [".gpu/A"], A_SHA = main's short hash; about 200 s of benches after a cold start.
. evidence/scaffolds/scripts/device_call.sh warp_runs4
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
