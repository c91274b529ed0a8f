#!/usr/bin/env bash
# Builds and tests every cross target through its CMake workflow preset (CMakePresets.json):
# aarch64 and armv7 under qemu-user, x86-avx2 natively, x86-avx512 build only (no AVX-512 CPU
# here and QEMU 7.2 cannot emulate it), the three Cortex-M boards under qemu-system-arm.
# CI runs it after the host tests (scripts/test_all.sh).
#
#   scripts/test_targets.sh                   all targets
#   scripts/test_targets.sh aarch64 cortex-m4 some of them
#   MICROATTN_TARGETS="armv7 cortex-m55" scripts/test_targets.sh
#
# Needs `scripts/setup.sh --cross` and ninja (the presets use the Ninja generator). Uses ccache
# when it is installed. Keeps going after a failure and ends with a summary; exit status 1 if
# any target failed. Build trees stay in build/<preset>, so a second run is incremental.
set -uo pipefail
cd "$(dirname "$0")/.."

all=(aarch64 armv7 x86-avx2 x86-avx512 cortex-m4 cortex-m7 cortex-m55)
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

declare -A result seconds
failed=0
for t in "${targets[@]}"; do
  echo "=== $t: cmake --workflow --preset $t"
  start=$(date +%s)
  if cmake --workflow --preset "$t"; then result[$t]=ok; else result[$t]=FAILED; failed=1; fi
  seconds[$t]=$(( $(date +%s) - start ))
done

echo
echo "=== summary"
for t in "${targets[@]}"; do
  note=""
  [ "$t" = x86-avx512 ] && note=" (build only)"
  printf '  %-12s %-7s %4ss%s\n' "$t" "${result[$t]}" "${seconds[$t]}" "$note"
done
exit $failed
