# One device call, two probes (no kernel changes): long_rows under three L2-flush timers
# (flush_probe.py), then ncu --set full on LayerNorm + AdaLN, its Triton peer and RMSNorm
# (../../../scaffolds/ln_ncu/scripts/ln_cases.py). carry: nothing.
. evidence/scaffolds/scripts/device_call.sh flush1
LR=skills/cuda-kernels/examples/long_rows
sg bA A . ${SRC:-HEAD} 150 140 --ops layernorm rmsnorm --stages build &
B=$(python3 skills/cuda-kernels/scripts/build_local.py $LR --arch 9.0 --build-dir build/lr 2> $O/lr_build.log | tail -1)
echo "long_rows build: $B"
wait  # the builds before any timing: nothing else on the CPUs
PYTHONPATH=$B timeout 240 python3 evidence/long_rows/benchmarks/h100_flush/flush_probe.py $LR/benchmarks $O/flush_probe.json > $O/flush_probe.log 2>&1; echo "flush rc $? at $((SECONDS-T0)) s"
cat $O/flush_probe.log
save
P=$WK/w_A
timeout 200 ncu --set full -k regex:"layer_norm_rows|rms_norm_rows|_row_kernel" -o $O/ln_ncu \
  python3 evidence/scaffolds/ln_ncu/scripts/ln_cases.py $P/builds/layernorm $P/builds/rmsnorm $P/projects/sg-layernorm/benchmarks > $O/ncu_run.log 2>&1
echo "ncu rc $? at $((SECONDS-T0)) s"; tail -5 $O/ncu_run.log
ncu --import $O/ln_ncu.ncu-rep --page details --csv > $O/ncu_details.csv 2> $O/ncu_import.err
ncu --import $O/ln_ncu.ncu-rep --page raw --csv > $O/ncu_raw.csv 2>> $O/ncu_import.err
ls -la $O; save
