#!/usr/bin/env bash
# Runs the committed convergence set (results/convergence/*.json) and regenerates
# results/convergence/SUMMARY.md from the result files. The two families take 12.6 min on an idle
# 2-core machine, everything 40 (docs/convergence.md, "Time"). Usage: experiments/convergence/run_all.sh
# [path/to/clbo]. Each file's CPU and wall time and the load average go to stderr.
set -euo pipefail
cd "$(dirname "$0")/../.."
CLBO=${1:-build/bin/clbo}
# Every experiment but the smoke subset, in file-name order as `clbo reproduce --full` runs them.
SET=(adam_family adam_family_2x adam_family_shifted compression_granularity deepspeed_defaults
     lamb_family lamb_family_2x lamb_family_shifted zero_one_adam_ablation)
for name in "${SET[@]}"; do
  echo "load before $name: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  TIMEFORMAT="$name: %U s user, %S s sys, %R s wall"
  time "$CLBO" train "experiments/convergence/$name.json"
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
files=(); for name in "${SET[@]}"; do files+=("results/convergence/$name.json"); done
"$CLBO" train --summary "${files[@]}" -o results/convergence/SUMMARY.md
