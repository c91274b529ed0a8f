#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages microattn needs. Idempotent; run as root (or with sudo).
#   scripts/setup.sh            host build, tests and benchmark
#   scripts/setup.sh --cross    also the ARM cross toolchains, multiarch GoogleTest/Benchmark,
#                               QEMU, llvm-mca, PyTorch, matplotlib, NumPy, SentencePiece, regex and
#                               the fortunes corpus for the Python-made tests (all test_all.sh
#                               runs)
#   scripts/setup.sh --cortex-m only what the Cortex-M firmware needs (scripts/run_tiny_lm.sh
#                               --cortex-m4, the cortex-m* presets): CMake, Ninja, Python 3,
#                               arm-none-eabi GCC with newlib, qemu-system-arm; no host
#                               compilers, no Linux cross toolchains, no qemu-user
#   scripts/setup.sh --peers    also Eigen and OpenBLAS, which the benchmark compares against
# Another apt/dpkg at work (unattended-upgrades, a second setup) is waited for, up to 10 minutes.
set -euo pipefail

cross=0
cortex_m=0
peers=0
for arg in "$@"; do
  case "$arg" in
    --cross) cross=1 ;;
    --cortex-m) cortex_m=1 ;;
    --peers) peers=1 ;;
    *) echo "usage: $0 [--cross] [--cortex-m] [--peers]" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# How long apt-get waits for another apt/dpkg's lock before it gives up (seconds).
lock_wait=600

host_pkgs=(build-essential cmake ninja-build clang libclang-rt-14-dev clang-format clang-tidy python3
           libxsimd-dev libgtest-dev libbenchmark-dev)
# The exporter's tests (tests/python) need PyTorch, the attention-map plot test
# (examples/plot_attention_maps.py) matplotlib, the real_model tests NumPy, the tokenizer tests
# SentencePiece and regex (the references) and the fortunes files (their corpus); they are skipped,
# saying so, without them.
test_pkgs=(python3-torch python3-numpy python3-matplotlib python3-sentencepiece python3-regex
           fortunes fortunes-min)
# Bare-metal Cortex-M (toolchains/arm-none-eabi.cmake: no xsimd, GoogleTest or Benchmark);
# python3 generates the tiny model's C glue (examples/tiny_lm/tiny_lm.cmake).
cortex_m_base=(cmake ninja-build python3)
cortex_m_pkgs=(gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib
               binutils-arm-none-eabi qemu-system-arm)
# llvm-19: llvm-mca for tools/mca_report.py (the ARM cores' cycle model; LLVM 19's has the
# Neoverse N1 = Cortex-A76 pipeline, LLVM 14's does not).
cross_pkgs=(g++-aarch64-linux-gnu g++-arm-linux-gnueabihf "${cortex_m_pkgs[@]}" qemu-user llvm-19
            libgtest-dev:arm64 libbenchmark-dev:arm64 libgtest-dev:armhf libbenchmark-dev:armhf)

if [ "$cortex_m" -eq 1 ] && [ "$cross" -eq 0 ] && [ "$peers" -eq 0 ]; then
  pkgs=("${cortex_m_base[@]}" "${cortex_m_pkgs[@]}")
else
  pkgs=("${host_pkgs[@]}")
  if [ "$cortex_m" -eq 1 ] && [ "$cross" -eq 0 ]; then pkgs+=("${cortex_m_pkgs[@]}"); fi
fi
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
# DPkg::Lock::Timeout makes apt-get wait for the dpkg lock another apt holds (apt >= 1.9.11;
# Debian 12 has 2.6). apt-get update's own lock on /var/lib/apt/lists is not covered by it
# (apt 2.6 fails at once there), so a busy one is waited for here; a mirror mid-sync can fail
# one index now and then: retry, then go on with what was fetched.
apt_opts=(-o "DPkg::Lock::Timeout=$lock_wait")
try=1
waited=0
while :; do
  if out=$($SUDO env LC_ALL=C apt-get -qq "${apt_opts[@]}" update 2>&1); then break; fi
  if grep -q "Could not get lock" <<<"$out" && [ "$waited" -lt "$lock_wait" ]; then
    if [ "$waited" -eq 0 ]; then echo "setup: waiting for another apt-get update" >&2; fi
    sleep 5
    waited=$((waited + 5))
    continue
  fi
  printf '%s\n' "$out" >&2
  echo "setup: apt-get update failed (try $try of 3)" >&2
  if [ "$try" -ge 3 ]; then break; fi
  sleep $((try * 5))
  try=$((try + 1))
done
$SUDO apt-get install -y -qq --no-install-recommends "${apt_opts[@]}" "${missing[@]}"
