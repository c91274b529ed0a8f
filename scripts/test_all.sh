#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every test: set up (Debian packages incl. cross compilers and QEMU), then build and test the
# host five ways (SIMD for this CPU, forced scalar = the Cortex-M code, ASan+UBSan; the kernels'
# suites at -Ofast, the numerics when a user builds with -ffast-math, and against xsimd 14) and
# every cross target under emulation (scripts/test_targets.sh). Each step is a CMake workflow preset
# (CMakePresets.json), so `cmake --workflow --preset NAME` repeats one of them.
# Usage: bash scripts/test_all.sh [--host-only]
set -euo pipefail
cd "$(dirname "$0")/.."
host_only=0
[ "${1:-}" = "--host-only" ] && host_only=1
setup_start=$(date +%s)
if [ "$host_only" -eq 1 ]; then bash scripts/setup.sh; else bash scripts/setup.sh --cross; fi
setup_seconds=$(( $(date +%s) - setup_start ))
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
export CTEST_PARALLEL_LEVEL=${CTEST_PARALLEL_LEVEL:-$(nproc)}
export CTEST_OUTPUT_ON_FAILURE=1

failed=()
summary=("$(printf '  %-16s %-7s %5ss' setup ok "$setup_seconds")")  # each step: name, result, seconds
all_start=$(date +%s)
step() {  # step NAME COMMAND...: runs it, records its result and time
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  "$@" || rc=$?
  summary+=("$(printf '  %-16s %-7s %5ss' "$name" "$([ $rc -eq 0 ] && echo ok || echo FAILED)" "$(( $(date +%s) - start ))")")
  return $rc
}
presets=(host host-scalar host-asan host-tsan host-ofast)
# The newest xsimd release's headers (shared/ beside the clone; never downloaded): the whole
# suite against them too, since users get xsimd 12-14 from newer distributions.
if [ -f ../shared/third_party/xsimd-14.3.0/include/xsimd/xsimd.hpp ]; then
  presets+=(host-xsimd14)
else
  echo "=== host-xsimd14 skipped: ../shared/third_party/xsimd-14.3.0 not found"
fi
for preset in "${presets[@]}"; do
  echo "=== $preset: cmake --workflow --preset $preset"
  start=$(date +%s)
  step "$preset" cmake --workflow --preset "$preset" || failed+=("$preset")
  echo "=== $preset: $(( $(date +%s) - start )) s"
done
# libFuzzer smoke run (clang 14, SIMD and scalar builds): the layer, the core and KV-cache
# operation sequences against the numeric contract and the status rules (tests/fuzz).
echo "=== fuzz: scripts/fuzz_smoke.sh"
start=$(date +%s)
step fuzz env FUZZ_SKIP_SETUP=1 bash scripts/fuzz_smoke.sh || failed+=("fuzz")
echo "=== fuzz: $(( $(date +%s) - start )) s"
if [ "$host_only" -eq 0 ]; then
  # The host preset's kernels (its demo's first line): test_targets.sh skips the x86 preset
  # that would build and run those same kernels again (x86-avx512 on an AVX-512 CPU, x86-avx2
  # on an AVX2 one), to keep a CI run short. Run by hand, test_targets.sh runs every target.
  if [ -x build/host/examples/microattn_demo ]; then
    MICROATTN_HOST_KERNELS=$(build/host/examples/microattn_demo | sed -n '1s/^microattn \(.*\) kernels$/\1/p')
    export MICROATTN_HOST_KERNELS
  fi
  # test_targets.sh also checks the figures in README.md and docs/ against the Cortex-M builds
  # (scripts/update_figures.py --check; "figures" in its summary).
  # aarch64's benchmark (built for ARM Linux boards, never run here) is left out of a CI run.
  step "cross targets" env MICROATTN_TARGETS_NO_BENCH=1 bash scripts/test_targets.sh ||
    failed+=("cross targets (see their summary above)")
else
  echo "=== figures check skipped (--host-only: it needs the Cortex-M builds of scripts/test_targets.sh)"
fi

echo
echo "=== test_all summary (seconds of each step; the cross targets' own are above)"
printf '%s\n' "${summary[@]}"
echo "  total            $(( $(date +%s) - all_start + setup_seconds ))s (setup included)"
if [ "${#failed[@]}" -ne 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all test suites passed"
