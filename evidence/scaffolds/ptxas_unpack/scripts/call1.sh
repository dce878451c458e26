# Call 1 (this session): A = HEAD 7bb0916 (.gpu/A); W = working tree (unpack in layernorm/glu/elementwise/rmsnorm (+ rmsnorm VPT4 256x4),
# layernorm aligned bounds VPT2 256x5 / VPT4 512x2, long_rows pipelined row loop); V2 = W + layernorm
# first=2 always + non-aligned instances under the same bounds (launch_any by lanes_cover); glu kAny 2 packs/thread.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; mkdir -p $O
WK=$(mktemp -d)  # projects and builds outside the repository: its pyproject would capture pytest
T0=$SECONDS
save() { tar czf $OUT/call1.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
lrb() { # name dir
  (cd $2 && timeout 120 python3 skills/cuda-kernels/scripts/build_local.py skills/cuda-kernels/examples/long_rows --arch 9.0 --check --build-dir $WK/lr_$1 > $O/lr_build_$1.log 2>&1; echo "lr build $1 rc $? at $((SECONDS-T0)) s")
}
# builds, all at once (16 cores)
sg bA A .gpu/A 7bb0916 200 190 --ops layernorm glu elementwise rmsnorm --stages build --jobs 4 &
sg bW W . 7bb0916+unpack 200 190 --ops layernorm glu elementwise rmsnorm --stages build --jobs 4 &
sg bV2 V2 .gpu/V2 7bb0916+unpack+ln_first2+glu_u2 200 190 --ops layernorm glu --stages build --jobs 2 &
lrb A .gpu/A & lrb W . &
wait
# benches one at a time (the GPU to itself)
sg lnA A .gpu/A 7bb0916 80 70 --ops layernorm --stages bench
sg lnW W . 7bb0916+unpack 80 70 --ops layernorm --stages bench
sg lnV2 V2 .gpu/V2 7bb0916+unpack+ln_first2 80 70 --ops layernorm --stages bench
(export LN_SMALL=1; sg lnV2s V2 .gpu/V2 7bb0916+unpack+ln_first2+LN_SMALL 80 70 --ops layernorm --stages bench)
save
(PYTHONPATH=$WK/lr_A timeout 60 python3 .gpu/lr_ab.py $O/lr_A.json A > $O/lr_A.log 2>&1; echo "lr A rc $?")
(PYTHONPATH=$WK/lr_W timeout 60 python3 .gpu/lr_ab.py $O/lr_W.json W > $O/lr_W.log 2>&1; echo "lr W rc $?")
save
sg gluA A .gpu/A 7bb0916 85 75 --ops glu --stages bench
sg gluW W . 7bb0916+unpack 85 75 --ops glu --stages bench
sg gluV2 V2 .gpu/V2 7bb0916+unpack+ln_first2+glu_u2 85 75 --ops glu --stages bench
save
LIMIT=${LIMIT:-590}
if [ $((SECONDS-T0)) -lt $((LIMIT-110)) ]; then
sg rmA A .gpu/A 7bb0916 55 50 --ops rmsnorm --stages bench
sg rmW W . 7bb0916+unpack 55 50 --ops rmsnorm --stages bench
save
fi
if [ $((SECONDS-T0)) -lt $((LIMIT-90)) ]; then
sg elA A .gpu/A 7bb0916 45 40 --ops elementwise --stages bench
sg elW W . 7bb0916+unpack 45 40 --ops elementwise --stages bench
save
fi
cat $O/lr_A.log $O/lr_W.log
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
# W's GPU tests while time is left
if [ $((SECONDS-T0)) -lt 430 ]; then
  (cd skills/cuda-kernels/examples/long_rows && LONG_ROWS_KERNELS_PATH=$WK/lr_W PYTHONPATH=$WK/lr_W timeout 60 python3 -m pytest tests -q -x -p no:cacheprovider > $O/lr_tests_W.log 2>&1; echo "lr tests rc $?"; tail -2 $O/lr_tests_W.log)
  sg tW W . 7bb0916+unpack $((560-(SECONDS-T0))) $((545-(SECONDS-T0))) --ops layernorm glu elementwise --stages test --jobs 3
  cat $O/tW/summary.txt
fi
save
