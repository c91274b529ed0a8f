#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages microattn needs. Idempotent; run as root (or with sudo).
#   scripts/setup.sh           host build, tests and benchmark
#   scripts/setup.sh --cross   also the ARM cross toolchains, multiarch GoogleTest/Benchmark, QEMU,
#                              llvm-mca, PyTorch and matplotlib for the Python tests (all
#                              test_all.sh runs)
#   scripts/setup.sh --peers   also Eigen and OpenBLAS, which the benchmark compares against
set -euo pipefail

cross=0
peers=0
for arg in "$@"; do
  case "$arg" in
    --cross) cross=1 ;;
    --peers) peers=1 ;;
    *) echo "usage: $0 [--cross] [--peers]" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

host_pkgs=(build-essential cmake ninja-build clang libclang-rt-14-dev python3
           libxsimd-dev libgtest-dev libbenchmark-dev)
# The exporter's tests (tests/python) need PyTorch, the attention-map plot test
# (examples/plot_attention_maps.py) matplotlib; they are skipped, saying so, without them.
test_pkgs=(python3-torch python3-numpy python3-matplotlib)
# llvm-19: llvm-mca for tools/mca_report.py (the ARM cores' cycle model; LLVM 19's has the
# Neoverse N1 = Cortex-A76 pipeline, LLVM 14's does not).
cross_pkgs=(g++-aarch64-linux-gnu g++-arm-linux-gnueabihf
            gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib binutils-arm-none-eabi
            qemu-user qemu-system-arm llvm-19
            libgtest-dev:arm64 libbenchmark-dev:arm64 libgtest-dev:armhf libbenchmark-dev:armhf)

pkgs=("${host_pkgs[@]}")
if [ "$peers" -eq 1 ]; then pkgs+=(libeigen3-dev libopenblas-dev); fi
if [ "$cross" -eq 1 ]; then
  pkgs+=("${test_pkgs[@]}")
  for a in arm64 armhf; do
    dpkg --print-foreign-architectures | grep -qx "$a" || $SUDO dpkg --add-architecture "$a"
  done
  pkgs+=("${cross_pkgs[@]}")
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#pkgs[@]} packages already installed"
  exit 0
fi
echo "setup: installing ${missing[*]}"
# A mirror mid-sync can fail one index now and then: retry, then go on with what was fetched.
for try in 1 2 3; do
  if $SUDO apt-get update -qq; then break; fi
  echo "setup: apt-get update failed (try $try of 3)" >&2
  sleep $((try * 5))
done
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
