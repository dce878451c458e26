export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p build/o/A build/o/B
# A = main 0d49ab5 (scaffolds as h100_run8), B = the same-phase instances; A's build+bench first
(cd .gpu/A && SOURCE_COMMIT=0d49ab5 PYTHONPATH=$PWD/src timeout 175 python3 benchmarks/scaffold_gpu_run.py build/o/A --ops rmsnorm layernorm --stages build bench --budget-s 160 --work build/wA --jobs 2 > build/o/A.log 2>&1; echo A rc $?)
SOURCE_COMMIT=${SC:-same-phase} timeout ${TB:-260} python3 benchmarks/scaffold_gpu_run.py build/o/B --ops rmsnorm layernorm --stages build test bench $SAN --budget-s ${BB:-245} --work build/wB --jobs 2 > build/o/B.log 2>&1; echo B rc $?
cat build/o/A/summary.txt build/o/B/summary.txt
tar czf $OUT/call3.tgz -C build/o .
