#!/usr/bin/env bash
# Runs the committed convergence set (results/convergence/*.json) and regenerates
# results/convergence/SUMMARY.md from the result files. Budget: <= 20 minutes on the
# 2-core development machine. Usage: experiments/convergence/run_all.sh [path/to/clbo]
set -euo pipefail
cd "$(dirname "$0")/../.."
CLBO=${1:-build/bin/clbo}
SET=(adam_family lamb_family lamb_investigation onebit_adam_eps zero_one_adam_local_steps cnn_layerwise)
for name in "${SET[@]}"; do
  "$CLBO" train "experiments/convergence/$name.json"
done
files=(); for name in "${SET[@]}"; do files+=("results/convergence/$name.json"); done
"$CLBO" train --summary "${files[@]}" -o results/convergence/SUMMARY.md
