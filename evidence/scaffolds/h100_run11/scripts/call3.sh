# Call 3 (stop 45): A = 7bb0916 (.gpu/A); W3 = call 2's W2 with glu's unpack kept to the aligned
# instances (call 2: misaligned rows lost 1-4 % with it) and elementwise back to main (flat).
# glu: A against W3, then W3's glu tests and compute-sanitizer; rmsnorm A/W3 again (a second sample).
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; mkdir -p $O
WK=$(mktemp -d)  # projects and builds outside the repository: its pyproject would capture pytest
T0=$SECONDS
save() { tar czf $OUT/call3.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
W3=7bb0916+unpack+ln_c+rms_guard+glu_aligned_only
sg bA A .gpu/A 7bb0916 200 190 --ops glu rmsnorm --stages build --jobs 2 &
sg bW W . $W3 200 190 --ops glu rmsnorm --stages build --jobs 2 &
wait
sg gluA A .gpu/A 7bb0916 85 75 --ops glu --stages bench
sg gluW W . $W3 85 75 --ops glu --stages bench
save
sg tW W . $W3 120 110 --ops glu --stages test sanitizer
save
sg rmA A .gpu/A 7bb0916 85 75 --ops rmsnorm --stages bench
sg rmW W . $W3 85 75 --ops rmsnorm --stages bench
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
