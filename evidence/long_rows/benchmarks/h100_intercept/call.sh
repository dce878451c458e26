# One device call (prepared 2026-12-07; its lines ran on 2026-12-08 inside
# evidence/scaffolds/act_math/scripts/call1.sh): build
# long_rows for sm_90 and run intercept_probe.py. carry: nothing. About 2 min of device time.
. evidence/scaffolds/scripts/device_call.sh intercept1
LR=skills/cuda-kernels/examples/long_rows
B=$(python3 skills/cuda-kernels/scripts/build_local.py $LR --arch 9.0 --build-dir build/lr 2> $O/lr_build.log | tail -1)
echo "long_rows build: $B at $((SECONDS-T0)) s"
PYTHONPATH=$B timeout 300 python3 evidence/long_rows/benchmarks/h100_intercept/intercept_probe.py $LR/benchmarks \
  $O/intercept_probe.json > $O/intercept_probe.log 2>&1; echo "probe rc $? at $((SECONDS-T0)) s"
cat $O/intercept_probe.log
save
