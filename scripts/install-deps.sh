#!/usr/bin/env bash
# Installs clbo's build and run dependencies from Debian 12 packages (the CUDA toolkit, when
# present, comes from /usr/local/cuda and is optional). Safe to rerun: apt-get skips what is
# already installed. Needs root, or sudo. mininet, bridge-utils and iproute2 are the emulated
# cluster of `clbo validate` (emu/; running it also needs root with CAP_NET_ADMIN).
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang-format
  clang libclang-rt-14-dev
  nlohmann-json3-dev libfmt-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libsimgrid-dev libeigen3-dev zlib1g-dev
  libopenmpi-dev openmpi-bin
  python3 python3-numpy python3-matplotlib
  dataset-fashion-mnist
  mininet bridge-utils iproute2
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "[deps] all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "[deps] installing: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
