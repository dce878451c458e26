# Call 2 (this session, short budget): layernorm only. A = HEAD 7bb0916 (.gpu/A); W = working tree
# (unpack, aligned bounds VPT2 256x5 / VPT4 512x2); V2 = W + first=2 always + non-aligned instances
# under the same bounds. Build, bench A/W/V2, then W's and V2's GPU tests; long_rows A/B if time is left.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; mkdir -p $O
WK=$(mktemp -d)  # projects and builds outside the repository: its pyproject would capture pytest
T0=$SECONDS; LIMIT=${LIMIT:-300}
save() { tar czf $OUT/call2.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
lrb() { (cd $2 && timeout 100 python3 skills/cuda-kernels/scripts/build_local.py skills/cuda-kernels/examples/long_rows --arch 9.0 --check --build-dir $WK/lr_$1 > $O/lr_build_$1.log 2>&1; echo "lr build $1 rc $?"); }
sg bA A .gpu/A 7bb0916 120 110 --ops layernorm --stages build --jobs 1 &
sg bW W . 7bb0916+unpack 120 110 --ops layernorm --stages build --jobs 1 &
sg bV2 V2 .gpu/V2 7bb0916+unpack+ln_first2 120 110 --ops layernorm --stages build --jobs 1 &
lrb A .gpu/A & lrb W . &
wait
sg lnA A .gpu/A 7bb0916 60 55 --ops layernorm --stages bench
sg lnW W . 7bb0916+unpack 60 55 --ops layernorm --stages bench
sg lnV2 V2 .gpu/V2 7bb0916+unpack+ln_first2 60 55 --ops layernorm --stages bench
save
sg tW W . 7bb0916+unpack 100 95 --ops layernorm --stages test --jobs 1 > $O/tW.out 2>&1 &
sg tV2 V2 .gpu/V2 7bb0916+unpack+ln_first2 100 95 --ops layernorm --stages test --jobs 1 > $O/tV2.out 2>&1 &
wait
save
if [ $((SECONDS-T0)) -lt $((LIMIT-60)) ]; then
(PYTHONPATH=$WK/lr_A timeout 30 python3 .gpu/lr_ab.py $O/lr_A.json A > $O/lr_A.log 2>&1; echo "lr A rc $?")
(PYTHONPATH=$WK/lr_W timeout 30 python3 .gpu/lr_ab.py $O/lr_W.json W > $O/lr_W.log 2>&1; echo "lr W rc $?")
save
fi
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
cat $O/lr_A.log $O/lr_W.log 2>/dev/null | tail -30
