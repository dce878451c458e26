# Call 1 (stop 51): A = 48c0eee (.gpu/A; its elementwise.cu and glu.cu are main's at 20de2fe),
# V = the working tree (485ed5f): GELU-tanh as v / (1 + __expf(-2u)) and SiLU as __fdividef(v, 1 +
# __expf(-v)) in elementwise and glu (sm_90 SASS: bf16 aligned gelu 1144 -> 784 instructions,
# glu silu 1360 -> 744). Also the long_rows intercept probe (evidence/long_rows/benchmarks/
# h100_intercept), whose build runs beside the scaffold builds. Benches A/V of elementwise and
# glu, then V's GPU tests and compute-sanitizer of both.
. evidence/scaffolds/scripts/device_call.sh act_math1
A_SHA=${A_SHA:?set A_SHA}
V=485ed5f
OPS="elementwise glu"
LR=skills/cuda-kernels/examples/long_rows
(python3 skills/cuda-kernels/scripts/build_local.py $LR --arch 9.0 --build-dir build/lr 2> $O/lr_build.log | tail -1 > $O/lr_path; echo "long_rows build at $((SECONDS-T0)) s") &
sg bA A .gpu/A $A_SHA 200 190 --ops $OPS --stages build --jobs 2 &
sg bV V . $V 200 190 --ops $OPS --stages build --jobs 2 &
wait
PYTHONPATH=$(cat $O/lr_path) timeout 200 python3 evidence/long_rows/benchmarks/h100_intercept/intercept_probe.py \
  $LR/benchmarks $O/intercept_probe.json > $O/intercept_probe.log 2>&1; echo "probe rc $? at $((SECONDS-T0)) s"
tail -30 $O/intercept_probe.log
save
for op in $OPS; do
  sg ${op}A A .gpu/A $A_SHA 75 66 --ops $op --stages bench
  sg ${op}V V . $V 75 66 --ops $op --stages bench
  save
done
for f in $O/*/summary.txt; do echo "== $f"; cat $f; done
python3 evidence/scaffolds/ptxas_unpack/scripts/compare.py elementwise $O/elementwiseA $O/elementwiseV 2>&1 | tail -20
python3 evidence/scaffolds/ptxas_unpack/scripts/compare.py glu $O/gluA $O/gluV 2>&1 | tail -20
PYTHONPATH=src timeout 150 python3 -m pytest -q -p no:cacheprovider tests/skill/test_cuda_error_facts.py > $O/facts.log 2>&1
echo "facts rc $? at $((SECONDS-T0)) s"; tail -3 $O/facts.log
L=$((${CALL_S:-585}-(SECONDS-T0)))
if [ $L -gt 70 ]; then sg tV V . $V $L $((L-5)) --ops $OPS --stages test sanitizer --jobs 2; cat $O/tV/summary.txt; fi
save
