#!/usr/bin/env bash
# README command 1: install missing dependencies, build (Release), and run the main job,
# `clbo reproduce`, on its embedded defaults: every simulation experiment, a convergence
# smoke run, the CPU benchmarks, then tables/ and figures/ (docs/reproduce.md). Arguments go
# to `clbo reproduce`, e.g. `bash scripts/quickstart.sh --full`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset default
cmake --build --preset default -j"$(nproc)"
./build/bin/clbo reproduce "$@"
