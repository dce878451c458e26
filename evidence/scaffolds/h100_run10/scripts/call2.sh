export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p build/o
SOURCE_COMMIT=4211dff+same_phase_vpt4 timeout 330 python3 benchmarks/scaffold_gpu_run.py build/o/T2 --ops rmsnorm --stages build test sanitizer --budget-s 320 --work build/wT2 > build/o/T2.log 2>&1; echo T2 rc $?
cat build/o/T2/summary.txt
tar czf $OUT/call2.tgz -C build/o .
