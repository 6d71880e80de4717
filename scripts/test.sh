#!/usr/bin/env bash
# README command 2: build (Release) and run the whole test suite. GPU tests skip with a
# reason when no device is present; MPI tests run under mpirun.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset default
cmake --build --preset default -j"$(nproc)"
ctest --preset default -j"$(nproc)"
