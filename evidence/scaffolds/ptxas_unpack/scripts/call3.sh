# Call 3 (this session, ~4 device minutes left): layernorm only, main (.gpu/A) against W (working tree =
# unpack.patch) and V2 (.gpu/V2) if time is left: build in parallel, bench one after another.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD; O=$R/build/o; mkdir -p $O
WK=$(mktemp -d)  # projects and builds outside the repository: its pyproject would capture pytest
T0=$SECONDS
save() { tar czf $OUT/call3.tgz -C build/o . ; echo "saved at $((SECONDS-T0)) s"; }
sg() { # name workname dir sourcecommit timeout budget args...
  n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd $d && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout $to python3 benchmarks/scaffold_gpu_run.py $O/$n "$@" --budget-s $bu --work $WK/w_$w > $O/$n.log 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
sg bA A .gpu/A 7bb0916 60 55 --ops layernorm --stages build --jobs 1 &
sg bW W . 7bb0916+unpack 60 55 --ops layernorm --stages build --jobs 1 &
sg bV2 V2 .gpu/V2 7bb0916+unpack+v2 60 55 --ops layernorm --stages build --jobs 1 &
wait
sg lnA A .gpu/A 7bb0916 45 42 --ops layernorm --stages bench
save
sg lnW W . 7bb0916+unpack 45 42 --ops layernorm --stages bench
save
sg lnV2 V2 .gpu/V2 7bb0916+unpack+v2 45 42 --ops layernorm --stages bench
save
python3 .gpu/compare.py layernorm $O/lnA $O/lnW $O/lnV2
