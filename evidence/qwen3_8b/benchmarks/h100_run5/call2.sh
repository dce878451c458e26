export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
REPO=$(pwd); mkdir -p build/res; EX=skills/cuda-kernels/examples/qwen3_8b; S=skills/cuda-kernels/scripts
SH=4096x4100,8192x4100,1024x4100,2048x12290,4096x12290,512x12290,4096x4095,4096x4096
mkdir -p build/src; cp -r $EX build/src/v0
for v in v1 v2; do cp -r $EX build/src/$v; patch -s -d build/src/$v -p1 < .gpu/$v.patch || exit 1; done
# build the three in parallel, 5 jobs each
for v in v0 v1 v2; do (cd build/src/$v && MAX_JOBS=5 python3 $REPO/$S/build_local.py . --arch 9.0 --build-dir build/b_$v > $OUT/build_$v.log 2>&1; echo build $v rc $?) & done
wait
t0=$SECONDS
for v in v0 v1 v2; do
  extra=""; [ $v != v0 ] && extra=--skip-compile
  python3 $S/benchmark_rmsnorm.py --package-path build/b_$v --shapes $SH $extra --out build/res/w_$v.json > build/res/w_$v.log 2>&1; echo bench $v rc $? $((SECONDS-t0)) s
done
for v in v1 v2; do
  QWEN3_8B_KERNELS_PATH=build/b_$v timeout 200 python3 -m pytest build/src/$v/tests -m gpu -q -x -p no:cacheprovider > build/res/tests_$v.log 2>&1; echo tests $v rc $?; tail -1 build/res/tests_$v.log
done
for v in v0 v1 v2; do echo == $v; grep -E "^rms_norm +[0-9]" build/res/w_$v.log | tail -8; done
tar czf $OUT/call2.tgz -C build/res .
