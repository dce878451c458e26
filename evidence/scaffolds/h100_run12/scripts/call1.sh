# Call 1 (stop 46): A = main at 99d6025 (.gpu/A); V = working tree:
# - Layout::kShifted in rmsnorm and layernorm: x[..., 1:] rows into a fresh output read the
#   weight/bias/modulation packs with one load each, fetched like the aligned instances';
# - shuffled loads (common.cuh load_chunk/window_next) for rows not at the output's phase in
#   elementwise, glu and rmsnorm (kAny, kShifted): a warp's 32 aligned chunks make 31 packs,
#   one load and one chunk of registers per pack (glu bf16 85-96 -> 58-63 registers), and
#   rmsnorm's such rows take 4 packs per lane (256 x 3).
# A/V benches of the four ops, then ncu (--set full, clocks untouched) of A's misaligned and
# aligned 8192x4096 norm rows, then V's GPU tests and compute-sanitizer while time is left.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; rm -rf $O; mkdir -p $O/ncu
WK=$(mktemp -d)
T0=$SECONDS
S=evidence/scaffolds/h100_run12/scripts
save() { tar czf $OUT/call1.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
prof() { # label work op variant shape layout
  l=$1 w=$2 op=$3; shift 3
  PYTHONPATH=$WK/w_$w/builds/$op timeout 60 ncu --clock-control none --kernel-name regex:_rows --launch-skip 2 \
    --launch-count 1 --set full --print-summary none python3 $S/ncu_probe.py $WK/w_$w/projects/sg-$op $op "$@" \
    > $O/ncu/$l.txt 2>&1; echo "ncu $l rc $? at $((SECONDS-T0)) s"
}
V=99d6025+shifted+shfl
OPS="rmsnorm layernorm glu elementwise"
sg bA A .gpu/A 99d6025 150 140 --ops $OPS --stages build --jobs 4 &
sg bV V . $V 150 140 --ops $OPS --stages build --jobs 4 &
wait
for op in glu rmsnorm layernorm elementwise; do
  sg ${op}A A .gpu/A 99d6025 55 48 --ops $op --stages bench
  sg ${op}V V . $V 55 48 --ops $op --stages bench
  save
done
prof rmA_mis A rmsnorm rms_norm 8192x4096 misaligned
prof rmA_al A rmsnorm rms_norm 8192x4096 aligned
prof lnA_mis A layernorm adaln 8192x4096 misaligned
prof lnA_al A layernorm adaln 8192x4096 aligned
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
L=$((575-(SECONDS-T0)))
if [ $L -gt 60 ]; then
  sg tV V . $V $L $((L-10)) --ops glu elementwise rmsnorm layernorm --stages test sanitizer --jobs 4
  cat $O/tV/summary.txt
fi
save
