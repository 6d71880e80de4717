#!/usr/bin/env bash
# One-call GPU check for a lent GPU node (docs/hardware.md). In at most 8 minutes it:
#   1. records the machine (nvidia-smi -q and tool versions) beside the results;
#   2. builds the CUDA parts for sm_90 only (-DCMAKE_CUDA_ARCHITECTURES=90);
#   3. runs the CUDA and NCCL tests (GoogleTest JSON);
#   4. runs the CUDA kernel benchmarks (Google Benchmark JSON, cudaEvent timing);
#   5. runs the p = 1 NCCL collective benchmark (compressed, allreduce, sparse);
#   6. times DeepSpeed's reference dataflow (torch + cupy) against clbo per stage.
# Results go to $OUT when set (the device tool's output folder), else results/gpu/: the clbo
# results (kernels-cuda.json, collectives-nccl-p1.json; results/SCHEMA.md) at the top, other
# tools' own output (GoogleTest JSON, the reference-path comparison, the machine description,
# summary.json) under raw/. Every stage logs to logs/<stage>.log and the script goes on when
# one fails; raw/summary.json lists each stage's status and duration. Exit status: 0 when
# every stage passed.
#
# Usage: scripts/gpu-check.sh            (from the repository root)
#        CUDA_ARCH=80 scripts/gpu-check.sh   (an A100 node)
#        GPU_CHECK_PREBUILT=1 GPU_CHECK_BUILD=build-gpu scripts/gpu-check.sh
#          (a node without clbo's build dependencies: the binaries were built elsewhere with
#          `cmake --preset gpu-node && cmake --build --preset gpu-node`, their shared libraries
#          are on LD_LIBRARY_PATH, and the configure and build stages are replaced by a check
#          that the binaries are there and resolve; docs/hardware.md)
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${OUT:-$ROOT/results/gpu}
BUILD=${GPU_CHECK_BUILD:-$ROOT/build-gpu}
ARCH=${CUDA_ARCH:-90}
BUDGET_S=${GPU_CHECK_BUDGET_S:-480}
JOBS=$(nproc 2>/dev/null || echo 4)
START=$(date +%s)
mkdir -p "$DEST/logs" "$DEST/raw"
SUMMARY="$DEST/logs/stages.tsv"
: >"$SUMMARY"
FAILED=0

elapsed() { echo $(($(date +%s) - START)); }
log() { echo "[gpu-check $(elapsed)s] $*" | tee -a "$DEST/logs/gpu-check.log"; }

# stage NAME TIMEOUT_S COMMAND...: runs the command with a timeout (shrunk to what is left of
# the budget), logs its output, records its status, never stops the script.
stage() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET_S - $(elapsed)))
  if [ "$left" -le 10 ]; then
    log "$name: skipped, the ${BUDGET_S}s budget is spent"
    printf '%s\tskipped\t0\n' "$name" >>"$SUMMARY"
    FAILED=1
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  log "$name: start (limit ${limit}s)"
  local t0 rc
  t0=$(date +%s)
  # Stage bodies are shell functions: run them in a child bash that timeout can kill.
  timeout --kill-after=10 "$limit" bash -c "$*" >"$DEST/logs/$name.log" 2>&1
  rc=$?
  local dt=$(($(date +%s) - t0))
  if [ $rc -eq 0 ]; then
    log "$name: ok (${dt}s)"
    printf '%s\tok\t%s\n' "$name" "$dt" >>"$SUMMARY"
  else
    [ $rc -eq 124 ] && log "$name: TIMED OUT after ${dt}s" || log "$name: FAILED rc=$rc (${dt}s)"
    tail -n 20 "$DEST/logs/$name.log" | sed "s/^/    /" | tee -a "$DEST/logs/gpu-check.log"
    printf '%s\tfailed(rc=%s)\t%s\n' "$name" "$rc" "$dt" >>"$SUMMARY"
    FAILED=1
  fi
  return $rc
}

machine() {
  nvidia-smi -q >"$DEST/raw/machine-nvidia-smi-q.txt" 2>&1
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(hostname)"
    echo "kernel: $(uname -sr)"
    echo "cpus: $(nproc)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
    nvcc --version 2>/dev/null | tail -n 2 || /usr/local/cuda/bin/nvcc --version | tail -n 2
    echo "git: $(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null) $(git -C "$ROOT" status --porcelain 2>/dev/null | wc -l) changed files (the checkout here)"
    # Prebuilt binaries carry the commit they were built at, which a copied checkout's .git
    # need not show: the results' environment.git_hash is theirs.
    [ -x "$BUILD/bin/clbo" ] && echo "binaries: $("$BUILD/bin/clbo" --version 2>&1)"
    python3 -c 'import torch, cupy; print("torch", torch.__version__, "cupy", cupy.__version__)' 2>&1 | tail -n 1
  } >"$DEST/raw/machine.txt" 2>&1
  cat "$DEST/raw/machine.txt"
}

configure() {
  # The gpu-node preset (CMakePresets.json; CI builds it too), in $BUILD, for $ARCH.
  cmake --preset gpu-node -S "$ROOT" -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc
}

prebuilt() {
  local b rc=0
  for b in tests/cuda/test_cuda tests/cuda/test_nccl bin/bench_kernels_cuda bin/clbo_bench_collectives bin/clbo; do
    if [ ! -x "$BUILD/$b" ]; then
      echo "missing prebuilt binary $BUILD/$b"
      rc=1
    elif ldd "$BUILD/$b" | grep 'not found'; then
      # Not fatal: the stages that run this binary fail and say so, the others still run.
      echo "^ unresolved shared libraries of $BUILD/$b (LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-})"
    fi
  done
  "$BUILD/bin/clbo" --version
  return $rc
}

build() {
  cmake --build "$BUILD" -j "$JOBS" --target test_cuda test_nccl bench_kernels_cuda \
    clbo_bench_collectives_bin clbo
}

cuda_tests() {
  local rc=0
  "$BUILD/tests/cuda/test_cuda" --gtest_output="json:$DEST/raw/tests-cuda.json" || rc=$?
  "$BUILD/tests/cuda/test_nccl" --gtest_output="json:$DEST/raw/tests-nccl.json" || rc=$?
  return $rc
}

kernel_bench() {
  # Google Benchmark's JSON with clbo's metadata in its context (clbo.bench.kernels/2).
  # A file left from an earlier run (results/gpu/ is committed) must not pass for this one's.
  rm -f "$DEST/kernels-cuda.json"
  "$BUILD/bin/clbo" bench kernels --cuda -o "$DEST" --benchmark_counters_tabular=true || return
  # clbo exits 0 when the benchmark skips (no device): a stage without results has failed.
  test -s "$DEST/kernels-cuda.json" || { echo "no kernels-cuda.json written"; return 1; }
}

nccl_bench() {
  rm -f "$DEST/collectives-nccl-p1.json"
  "$BUILD/bin/clbo_bench_collectives" --backend nccl -g 1 --collective compressed,allreduce,sparse \
    -b 8 -e 256M -f 4 -n 20 -w 5 -c 1 -J "$DEST/collectives-nccl-p1.json"
}

reference_path() {
  python3 "$ROOT/bench/reference_path.py" --clbo-json "$DEST/kernels-cuda.json" \
    --out "$DEST/raw/reference-path.json"
}

export ROOT DEST BUILD ARCH JOBS
export -f machine configure prebuilt build cuda_tests kernel_bench nccl_bench reference_path
cd "$ROOT" || exit 1
log "results in $DEST, build in $BUILD, sm_$ARCH, $JOBS jobs, budget ${BUDGET_S}s"
stage machine 60 machine
if [ "${GPU_CHECK_PREBUILT:-0}" = 1 ]; then
  built() { stage prebuilt 30 prebuilt; }
else
  built() { stage configure 120 configure && stage build 330 build; }
fi
if built; then
  stage cuda_tests 120 cuda_tests
  stage kernel_bench 150 kernel_bench
  stage nccl_bench 90 nccl_bench
else
  log "build failed: skipping the test and benchmark stages"
fi
stage reference_path 120 reference_path

# summary.json from the stage table (no jq needed).
python3 - "$SUMMARY" "$DEST/raw/summary.json" "$(elapsed)" "$ARCH" <<'PY' || log "summary.json: not written"
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
out = {"schema": "clbo.gpu_check/1", "total_s": int(sys.argv[3]), "cuda_arch": sys.argv[4],
       "stages": [{"stage": r[0], "status": r[1], "seconds": int(r[2])} for r in rows],
       "machine": "raw/machine.txt, raw/machine-nvidia-smi-q.txt"}
json.dump(out, open(sys.argv[2], "w"), indent=2, sort_keys=True)
PY
log "done in $(elapsed)s: $([ $FAILED -eq 0 ] && echo 'all stages passed' || echo 'some stages failed, see logs/')"
exit $FAILED
