# Helpers for one device call of benchmarks/scaffold_gpu_run.py, sourced by a call script from
# the repository root (calls before warp_runs/call4.sh spell the same lines out):
#   . evidence/scaffolds/scripts/device_call.sh NAME   # prints the GPU and its clocks
#   sg OUT_NAME WORK_NAME TREE SOURCE_COMMIT TIMEOUT_S BUDGET_S --ops ... --stages ...
#   save                                               # $OUT/NAME.tgz of every stage so far
# Stages of one tree share WORK_NAME, so a bench reuses its build.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
CALL_NAME=${1:?name the call}
O=$PWD/build/o; rm -rf "$O"; mkdir -p "$O"
WK=$(mktemp -d)
T0=$SECONDS
save() { tar czf "$OUT/$CALL_NAME.tgz" -C "$O" . ; echo "saved at $((SECONDS-T0)) s"; }
sg() {
  local n=$1 w=$2 d=$3 sc=$4 to=$5 bu=$6; shift 6
  (cd "$d" && SOURCE_COMMIT=$sc PYTHONPATH=$PWD/src timeout "$to" python3 benchmarks/scaffold_gpu_run.py "$O/$n" "$@" \
     --budget-s "$bu" --work "$WK/w_$w" > "$O/$n.log" 2>&1; echo "$n rc $? at $((SECONDS-T0)) s")
}
