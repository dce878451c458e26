export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p build/o3/ncu
SOURCE_COMMIT=4211dff timeout 60 python3 benchmarks/scaffold_gpu_run.py build/o3/L --ops layernorm --stages build --budget-s 55 --work build/wL > build/o3/L.log 2>&1; echo L rc $?
B=build/wL/builds/layernorm; P=build/wL/projects/sg-layernorm/benchmarks
PYTHONPATH=$B:$PYTHONPATH timeout 70 ncu --set full -k regex:layer_norm --launch-skip 3 --launch-count 1 -o build/o3/ncu/ln_cuda python3 .gpu/ncu_case.py layernorm 8192 4096 0 > build/o3/ncu/ln_cuda.log 2>&1; echo ncu cuda rc $?
PYTHONPATH=$B:$PYTHONPATH timeout 70 ncu --set full -k regex:_row_kernel --launch-skip 3 --launch-count 1 -o build/o3/ncu/ln_triton python3 .gpu/ncu_case.py layernorm_triton 8192 4096 0 $P > build/o3/ncu/ln_triton.log 2>&1; echo ncu triton rc $?
for f in build/o3/ncu/*.ncu-rep; do ncu -i $f --page details > ${f%.ncu-rep}.txt 2>&1; done
grep -h "Duration\|DRAM Throughput\|Registers Per\|Achieved Occupancy\|Block Size\|Theoretical Occ" build/o3/ncu/*.txt | head -24
tar czf $OUT/call3.tgz -C build/o3 .
