export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
B=build/q3; EX=skills/cuda-kernels/examples/qwen3_8b
t0=$SECONDS
python3 skills/cuda-kernels/scripts/build_local.py $EX --arch 9.0 --build-dir $B --check > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build $((SECONDS-t0)) s
QWEN3_8B_KERNELS_PATH=$B timeout 300 python3 -m pytest $EX/tests -m gpu -q -p no:cacheprovider > $OUT/gpu_tests.log 2>&1; echo tests rc $?; tail -3 $OUT/gpu_tests.log
echo tests $((SECONDS-t0)) s
python3 skills/cuda-kernels/scripts/benchmark_rmsnorm.py --package-path $B --shapes 4096x4096,4096x4100,8192x4100,4096x4095,2048x12290,4096x12290,1x8192x4096 --out $OUT/widths.json > $OUT/widths.log 2>&1; echo bench rc $?; cat $OUT/widths.log | grep -v "^ *$" | tail -12
echo bench $((SECONDS-t0)) s
timeout 120 ncu --set full -k regex:rms_norm -c 4 -o build/prof python3 .gpu/ncu_q3.py $B > $OUT/ncu_run.log 2>&1; echo ncu rc $?
ncu --import build/prof.ncu-rep --page details > $OUT/ncu_details.txt 2>&1
ncu --import build/prof.ncu-rep --page raw --csv > $OUT/ncu_raw.csv 2>&1
echo all $((SECONDS-t0)) s
