#!/usr/bin/env bash
# Runs every fuzz target over its committed seed corpus for a bounded time each:
#   fuzz/run.sh SECONDS [BUILD_DIR] [TARGET...]
# New inputs go to a scratch corpus (the committed seeds are only read); a finding (crash,
# sanitizer report, leak, timeout, out-of-memory) leaves its input in BUILD_DIR/fuzz/findings
# and makes the script exit 1. Targets run one after another: each loads a core fully.
# CLBO_FUZZ_BUDGET=cpu makes SECONDS the CPU time each target gets (user + sys), for a
# machine where other work shares the cores: the target is interrupted once it has used
# that much, however long that takes on the wall clock.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: fuzz/run.sh SECONDS [BUILD_DIR] [TARGET...]}
build=${2:-build-fuzz}
shift $(( $# >= 2 ? 2 : $# ))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$build"/fuzz/fuzz_*; do [ -x "$f" ] && targets+=("$(basename "$f")"); done
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "[fuzz] no fuzz targets in $build/fuzz (cmake --preset fuzz && cmake --build --preset fuzz)" >&2
  exit 1
fi
findings="$build/fuzz/findings"
mkdir -p "$findings"
status=0
for t in "${targets[@]}"; do
  scratch=$(mktemp -d)
  seeds="fuzz/corpus/$t"
  echo "[fuzz] $t: ${seconds}s ${CLBO_FUZZ_BUDGET:-wall} over $seeds"
  start=$(date +%s)
  args=(-timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
        -artifact_prefix="$findings/$t-" "$scratch" "$seeds")
  rc=0
  if [ "${CLBO_FUZZ_BUDGET:-wall}" = cpu ]; then
    "$build/fuzz/$t" "${args[@]}" > "$build/fuzz/$t.log" 2>&1 &
    pid=$!
    ticks=$(getconf CLK_TCK)
    while kill -0 "$pid" 2> /dev/null; do
      sleep 5
      # utime + stime of the fuzzer (fields 14 and 15 of /proc/PID/stat, in clock ticks).
      used=$(awk -v t="$ticks" '{print int(($14 + $15) / t)}' "/proc/$pid/stat" 2> /dev/null || echo 0)
      if [ "$used" -ge "$seconds" ]; then kill -INT "$pid" 2> /dev/null || true; break; fi
    done
    wait "$pid" || rc=$?
    [ "$rc" -eq 72 ] && rc=0  # libFuzzer's exit code when interrupted: the budget was spent
    cpu=" (${used:-?} s CPU)"
  else
    "$build/fuzz/$t" -max_total_time="$seconds" "${args[@]}" > "$build/fuzz/$t.log" 2>&1 || rc=$?
    cpu=""
  fi
  if [ "$rc" -ne 0 ]; then
    echo "[fuzz] $t: FINDING (log: $build/fuzz/$t.log, input: $findings/$t-*)" >&2
    tail -40 "$build/fuzz/$t.log" >&2
    status=1
  else
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$build/fuzz/$t.log" | awk '{print $2}')
    echo "[fuzz] $t: no finding in $(( $(date +%s) - start ))s$cpu, ${runs:-?} inputs"
  fi
  rm -rf "$scratch"
done
exit $status
