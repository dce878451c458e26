export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p build/o4
timeout 90 python3 skills/cuda-kernels/scripts/build_local.py skills/cuda-kernels/examples/long_rows --arch 9.0 --build-dir build/lrb --check > build/o4/build.log 2>&1; echo build rc $?
for c in "512 151936 bfloat16" "512 32000 float32"; do set -- $c
PYTHONPATH=build/lrb:$PYTHONPATH timeout 50 ncu --set full -k regex:lse_ --launch-skip 3 --launch-count 1 -o build/o4/lse_$1x$2_$3 python3 .gpu/lse_case.py $1 $2 $3 > build/o4/lse_$1x$2_$3.log 2>&1; echo ncu $c rc $?
done
for f in build/o4/*.ncu-rep; do ncu -i $f --page details > ${f%.ncu-rep}.txt 2>&1; done
grep -h "Duration\|DRAM Throughput\|Registers Per\|Achieved Occupancy\|Block Size\|Grid Size\|Theoretical Occ\|Waves Per SM" build/o4/*.txt | head -24
tar czf $OUT/call4.tgz -C build/o4 .
