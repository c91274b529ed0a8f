#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and tests every cross target through its CMake workflow preset (CMakePresets.json):
# aarch64 and armv7 under qemu-user; x86-avx2 and x86-avx512 natively when this CPU has the
# instruction set (x86-64-v3 / x86-64-v4 flags in /proc/cpuinfo), build only otherwise (QEMU
# 7.2 cannot emulate AVX-512); the three Cortex-M boards under qemu-system-arm, and the
# Cortex-M4 (scalar kernels) and Cortex-M55 (Helium kernels) once more with -Ofast
# (cortex-m4-ofast, cortex-m55-ofast: the numerics, and the code, under -ffast-math). When the
# three Cortex-M boards ran, it then checks the size, stack and instruction-count figures in
# README.md and docs/ against their builds (scripts/update_figures.py --check: "figures").
# CI runs it after the host tests (scripts/test_all.sh).
#
#   scripts/test_targets.sh                   all targets
#   scripts/test_targets.sh aarch64 cortex-m4 some of them
#   MICROATTN_TARGETS="armv7 cortex-m55" scripts/test_targets.sh
#
# MICROATTN_HOST_KERNELS=avx512bw (or fma3+avx2; scripts/test_all.sh sets it from the host
# preset's demo): the x86 preset with those kernels is skipped, saying so; the host preset has
# run the same tests on the same kernels (-march=native there, x86-64-v3/v4 here).
# MICROATTN_TARGETS_NO_BENCH=1 (scripts/test_all.sh): aarch64 is configured without its
# benchmark (the same tests; the bench is for ARM Linux boards and never runs here).
#
# Needs `scripts/setup.sh --cross` and ninja (the presets use the Ninja generator). Uses ccache
# when it is installed. Keeps going after a failure and ends with a summary; exit status 1 if
# any target failed. Build trees stay in build/<preset>, so a second run is incremental.
set -uo pipefail
cd "$(dirname "$0")/.."

all=(aarch64 armv7 x86-avx2 x86-avx512 cortex-m4 cortex-m7 cortex-m55 cortex-m4-ofast cortex-m55-ofast)
if [ $# -gt 0 ]; then targets=("$@")
elif [ -n "${MICROATTN_TARGETS:-}" ]; then read -r -a targets <<< "$MICROATTN_TARGETS"
else targets=("${all[@]}"); fi

command -v ninja > /dev/null || { echo "test_targets: ninja not found (apt-get install ninja-build)" >&2; exit 2; }
jobs=$(nproc 2> /dev/null || echo 2)
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$jobs}
export CTEST_PARALLEL_LEVEL=${CTEST_PARALLEL_LEVEL:-$jobs}
if command -v ccache > /dev/null; then
  # Read by CMake at the first configure of each tree (ignored once cached).
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi

# x86 presets run their tests natively: only where the CPU has every extension their -march
# level allows the compiler to use (elsewhere the tests would die with SIGILL). Prints the
# missing flags; empty output = all present.
cpu_lacks() {
  local want have=" $(grep -m1 '^flags' /proc/cpuinfo 2> /dev/null | cut -d: -f2) " missing=""
  case $1 in
    x86-64-v3) want="avx avx2 bmi1 bmi2 f16c fma movbe abm" ;;
    x86-64-v4) want="avx avx2 bmi1 bmi2 f16c fma movbe abm avx512f avx512bw avx512cd avx512dq avx512vl" ;;
  esac
  [ "$have" = "  " ] && { echo "no flags line in /proc/cpuinfo"; return; }
  for f in $want; do [[ "$have" == *" $f "* ]] || missing+=" $f"; done
  echo "${missing# }"
}

declare -A result seconds note
failed=0
for t in "${targets[@]}"; do
  build_only=""
  case $t in
    x86-avx2) m=$(cpu_lacks x86-64-v3); [ -n "$m" ] && build_only="no AVX2 on this CPU (lacks: $m)" ;;
    x86-avx512) m=$(cpu_lacks x86-64-v4); [ -n "$m" ] && build_only="no AVX-512 on this CPU (lacks: $m)" ;;
  esac
  kernels=""
  case $t in x86-avx2) kernels="fma3+avx2" ;; x86-avx512) kernels="avx512bw" ;; esac
  start=$(date +%s)
  if [ -n "$kernels" ] && [ -z "$build_only" ] && [ "${MICROATTN_HOST_KERNELS:-}" = "$kernels" ]; then
    echo "=== $t: skipped: the host preset ran the same tests on the same kernels ($kernels)"
    note[$t]=" (skipped: $kernels kernels tested by the host preset)"
    result[$t]=ok
  elif [ -n "$build_only" ]; then
    echo "=== $t: build only: $build_only"
    note[$t]=" (build only: $build_only)"
    if cmake --preset "$t" && cmake --build --preset "$t"; then result[$t]=ok; else result[$t]=FAILED; failed=1; fi
  elif [ "$t" = aarch64 ] && [ "${MICROATTN_TARGETS_NO_BENCH:-0}" = 1 ]; then
    # CI (test_all.sh): the same tests without the benchmark the preset builds for boards (a
    # fifth of the target's build; the host preset builds and runs the same bench sources).
    echo "=== $t: cmake --preset $t -DMICROATTN_BUILD_BENCH=OFF, build, ctest --preset $t"
    note[$t]=" (benchmark not built: MICROATTN_TARGETS_NO_BENCH)"
    if cmake --preset "$t" -DMICROATTN_BUILD_BENCH=OFF && cmake --build --preset "$t" &&
      ctest --preset "$t"; then result[$t]=ok; else result[$t]=FAILED; failed=1; fi
  else
    echo "=== $t: cmake --workflow --preset $t"
    note[$t]=""
    if cmake --workflow --preset "$t"; then result[$t]=ok; else result[$t]=FAILED; failed=1; fi
  fi
  seconds[$t]=$(( $(date +%s) - start ))
done

# The figures in README.md and docs/ (image sizes, stacks, layer sizes, QEMU instruction counts)
# against the Cortex-M builds just made: scripts/update_figures.py --check reads build/cortex-m4,
# -m7 and -m55 without rebuilding them (it relinks the bench once per case selection and
# compiles two small probes). Needs all three boards in this run; a stale figure fails it.
figures=(cortex-m4 cortex-m7 cortex-m55)
figures_skip=""
for t in "${figures[@]}"; do
  if [[ " ${targets[*]} " != *" $t "* ]]; then figures_skip+=" $t not run;"
  elif [ "${result[$t]}" != ok ]; then figures_skip+=" $t failed;"; fi
done
targets+=(figures)
start=$(date +%s)
if [ -n "$figures_skip" ]; then
  echo "=== figures: check skipped (it needs cortex-m4, cortex-m7 and cortex-m55 built and tested here:${figures_skip%;})"
  result[figures]=skipped
  note[figures]=" (${figures_skip# }"
  note[figures]="${note[figures]%;})"
else
  echo "=== figures: python3 scripts/update_figures.py --check"
  note[figures]=" (README.md and docs/ against the Cortex-M builds)"
  if python3 scripts/update_figures.py --check; then result[figures]=ok
  else
    result[figures]=FAILED; failed=1
    note[figures]=" (stale or unreadable: see above; regenerate with python3 scripts/update_figures.py)"
  fi
fi
seconds[figures]=$(( $(date +%s) - start ))

echo
echo "=== summary"
for t in "${targets[@]}"; do
  printf '  %-15s %-7s %4ss%s\n' "$t" "${result[$t]}" "${seconds[$t]}" "${note[$t]}"
done
exit $failed
