#!/usr/bin/env bash
# README command 1: install missing dependencies, build (Release), run the main job on its
# embedded defaults. Output lands in results/ and the summary is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset default
cmake --build --preset default -j"$(nproc)"
./build/bin/clbo demo
