# The landed rule (x[..., 1:] rows at 4 packs per lane first), against main, in one call:
# A = main (git archive into .gpu/A, carried), V = the working tree. Builds both, benches A
# then V (adaln), then V's compute-sanitizer and, if the time allows, its GPU tests.
. evidence/scaffolds/scripts/device_call.sh ln_vpt2
A_SHA=${A_SHA:?set A_SHA}
sg bA A .gpu/A $A_SHA 150 140 --ops layernorm --stages build &
sg bV V . $A_SHA+any4 150 140 --ops layernorm --stages build &
wait
sg layernormA A .gpu/A $A_SHA 150 140 --ops layernorm --stages bench
sg layernormV V . $A_SHA+any4 150 140 --ops layernorm --stages bench
sg sV V . $A_SHA+any4 100 90 --ops layernorm --stages sanitizer
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
L=$((${CALL_S:-560}-(SECONDS-T0)))
if [ $L -gt 80 ]; then sg tV V . $A_SHA+any4 $L $((L-5)) --ops layernorm --stages test; cat $O/tV/summary.txt; fi
save
