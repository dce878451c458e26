export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD; mkdir -p build/o
sg() { # name dir sourcecommit timeout budget ops... -- stages...
  n=$1 d=$2 sc=$3 to=$4 bu=$5; shift 5
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $R/build/o/$n "$@" --budget-s $bu --work $R/build/w$n > $R/build/o/$n.log 2>&1; echo $n rc $?)
}
# A = main (kernels as 7a351d3); W = main + same_phase_vpt4 (rmsnorm) + layernorm: 2 packs/lane on aligned rows, two operand slots loaded before the reductions;
sg A .gpu/A 7a351d3 135 125 --ops rmsnorm layernorm --stages build bench --jobs 2
sg W . 7a351d3+vpt4+ln_ahead2 135 125 --ops rmsnorm layernorm --stages build bench --jobs 2
tar czf $OUT/call1.tgz -C build/o .
sg T . 7a351d3+vpt4+ln_ahead2 150 140 --ops rmsnorm layernorm --stages build test --jobs 2
cat build/o/*/summary.txt
tar czf $OUT/call1.tgz -C build/o .
