#!/usr/bin/env bash
# README command 1: install missing dependencies, build (Release), run the main job on its
# embedded defaults: the default simulation sweep (experiments/sim/default-sweep.json, built
# into the binary), which writes results/sim/default-sweep.json and prints its table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset default
cmake --build --preset default -j"$(nproc)"
./build/bin/clbo simulate
