# Call 4 (stop 45): main after the unpack commits (22bc5e4), every op built and benchmarked in one
# run (bf16, do_bench), so the standing table comes from one machine and one call.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
WK=$(mktemp -d)  # projects and builds outside the repository: its pyproject would capture pytest
SOURCE_COMMIT=22bc5e4 PYTHONPATH=$PWD/src timeout 280 \
  python3 benchmarks/scaffold_gpu_run.py $OUT/main --stages build bench --budget-s 250 --work $WK/w > $OUT/main.log 2>&1
echo "rc $?"; cat $OUT/main/summary.txt
