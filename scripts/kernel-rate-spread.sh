#!/bin/bash
# How far the streaming compress rate that `clbo validate`'s kernel model takes for p ranks
# moves between repeated measurements, measured the way validate did until 2026-12-07 (one run
# of each benchmark) and the way it does since (the median of five repetitions), in
# alternating rounds on this machine (docs/validation.md, "One draw of a fluctuating rate").
#
#   scripts/kernel-rate-spread.sh [ROUNDS] [WORK_DIR]     (default 7 rounds, a temporary folder)
#
# Each round and way: the streaming compress alone (the kernel benchmark's row), then one copy
# alone and p = 2, 4, 8 copies at once behind a start barrier (the streaming contention). The
# model's rate for p ranks is kernel benchmark x median of the copies / the copy alone, the
# factor never below max(1, p / cores), as validate computes it. Prints every round and the
# spread (max / min) of each way's rates. About 35 s a round on 2 cores; run it on an idle
# machine (it measures the machine's memory bandwidth).
set -euo pipefail
rounds=${1:-7}
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")/.." && pwd)
clbo=${CLBO:-$here/build/bin/clbo}
filter='^BM_compress_fused/67108864/'
cores=$(nproc)
[ -x "$clbo" ] || { echo "kernel-rate-spread: $clbo not built" >&2; exit 2; }
mkdir -p "$work"
for ((r = 0; r < rounds; ++r)); do
  for way in one median5; do
    d=$work/r$r-$way
    rm -rf "$d" && mkdir -p "$d"
    if [ $way = one ]; then kb=(--benchmark_min_time=0.2); reps=1; iters=23
    else kb=(--benchmark_min_time=0.1 --benchmark_repetitions=5); reps=5; iters=5; fi
    "$clbo" bench kernels --cpu -o "$d/kb" --no_reference --benchmark_filter=$filter "${kb[@]}" \
      >"$d/kb.log" 2>&1
    for p in 1 2 4 8; do
      mkdir -p "$d/barrier$p"
      for ((i = 1; i <= p; ++i)); do
        "$clbo" bench kernels --cpu -o "$d/p$p-$i" --no_reference --benchmark_filter=$filter \
          --iterations=$iters --benchmark_repetitions=$reps --start_barrier="$d/barrier$p,$p" \
          >"$d/p$p-$i.log" 2>&1 &
      done
      wait
    done
  done
  echo "round $((r + 1)) of $rounds done" >&2
done
/usr/bin/python3 - "$work" "$cores" <<'EOF'
import glob, json, os, statistics, sys
work, cores = sys.argv[1], int(sys.argv[2])

def rate(path):  # the median repetition's rate, as sim::median_iteration_rows picks it
    rows = [b["items_per_second"] for b in json.load(open(path))["benchmarks"]
            if b.get("run_type", "iteration") == "iteration" and b.get("items_per_second", 0) > 0]
    rows.sort()
    return rows[(len(rows) - 1) // 2]

spread = {}
for d in sorted(glob.glob(os.path.join(work, "r*-*")), key=lambda d: (int(d.split("/r")[-1].split("-")[0]), d)):
    way = d.rsplit("-", 1)[1]
    kb, alone = rate(f"{d}/kb/kernels-cpu.json"), rate(f"{d}/p1-1/kernels-cpu.json")
    cols = [os.path.basename(d), f"bench {kb / 1e9:.2f}e9", f"alone {alone / 1e9:.2f}e9"]
    for p in (2, 4, 8):
        copies = statistics.median(rate(f) for f in glob.glob(f"{d}/p{p}-*/kernels-cpu.json"))
        factor = max(alone / copies, max(1.0, p / cores))
        spread.setdefault((way, p), []).append(kb / factor)
        cols.append(f"p={p}: copies {copies / 1e9:.2f}e9 factor {alone / copies:.2f} "
                    f"model {kb / factor / 1e9:.2f}e9")
    print(" | ".join(cols))
for (way, p), v in sorted(spread.items()):
    print(f"{way:8s} p={p}: model rate {min(v) / 1e9:.2f}-{max(v) / 1e9:.2f}e9, "
          f"median {statistics.median(v) / 1e9:.2f}e9, max/min {max(v) / min(v):.2f}")
EOF
