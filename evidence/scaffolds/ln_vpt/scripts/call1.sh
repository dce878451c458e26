# LayerNorm + AdaLN's packs per lane, by environment overrides in the launcher
# (../ln_vpt_env.patch, applied to the working tree; not merged): one build, then the
# benchmark (adaln) three times: as main launches, KS_LN_FIRST=2 (aligned rows at 2
# packs per lane where 256 lanes hold them), KS_LN_ANY4=1 (x[..., 1:] rows at 4 packs per lane
# first, operands one load each). Then the GPU tests under each override.
. evidence/scaffolds/scripts/device_call.sh ln_vpt1
S=${SRC:?set SRC}
sg b V . $S 150 140 --ops layernorm --stages build
sg main V . $S 150 140 --ops layernorm --stages bench
KS_LN_FIRST=2 sg first2 V . $S 150 140 --ops layernorm --stages bench
KS_LN_ANY4=1 sg any4 V . $S 150 140 --ops layernorm --stages bench
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
L=$((${CALL_S:-560}-(SECONDS-T0)))
if [ $L -gt 150 ]; then KS_LN_FIRST=2 KS_LN_ANY4=1 sg t V . $S $L $((L-5)) --ops layernorm --stages test; cat $O/t/summary.txt; fi
save
