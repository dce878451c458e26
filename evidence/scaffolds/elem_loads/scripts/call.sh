# One device call (stop 47): A = main's rmsnorm (.gpu/A, a `git archive` of 3ef1c66: rmsnorm.cu
# unchanged since); V = working tree: rmsnorm's shifted rows (x[..., 1:] into a fresh output)
# read x element by element (load_elems in common.cuh), as Triton does for rows it cannot prove
# aligned, instead of two 16-byte loads and a splice per pack. Benches A/V of rmsnorm only:
# 295 device seconds were left, a cold start included, so no GPU tests.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
R=$PWD; O=$R/build/o; rm -rf $O; mkdir -p $O
WK=$(mktemp -d)
T0=$SECONDS
save() { tar czf $OUT/elem_loads.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
V=3ef1c66+elem_loads
sg bA A .gpu/A 3ef1c66 60 55 --ops rmsnorm --stages build &
sg bV V . $V 60 55 --ops rmsnorm --stages build &
wait
sg rmsnormA A .gpu/A 3ef1c66 75 66 --ops rmsnorm --stages bench
save
sg rmsnormV V . $V 75 66 --ops rmsnorm --stages bench
save
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
