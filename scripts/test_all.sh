#!/usr/bin/env bash
# Every test: set up (Debian packages incl. cross compilers and QEMU), then build and test the
# host (SIMD, forced scalar, sanitizers) and every cross target under emulation.
# Usage: bash scripts/test_all.sh [--host-only]
set -euo pipefail
cd "$(dirname "$0")/.."
host_only=0
[ "${1:-}" = "--host-only" ] && host_only=1
if [ "$host_only" -eq 1 ]; then bash scripts/setup.sh; else bash scripts/setup.sh --cross; fi
jobs=$(nproc)
failed=()

run() {  # run NAME CMAKE_ARGS...: configure, build, ctest in build/NAME
  local name=$1; shift
  echo "== $name: configure + build"
  if ! cmake -S . -B "build/$name" -G Ninja -DMICROATTN_BUILD_BENCH=OFF "$@" >"build/$name.configure.log" 2>&1; then
    cat "build/$name.configure.log"; failed+=("$name (configure)"); return; fi
  if ! cmake --build "build/$name" --parallel "$jobs"; then failed+=("$name (build)"); return; fi
  echo "== $name: ctest"
  if ! (cd "build/$name" && ctest --output-on-failure -j "$jobs"); then failed+=("$name"); fi
}

mkdir -p build
run host -DCMAKE_BUILD_TYPE=Release -DMICROATTN_NATIVE=ON
run host-scalar -DCMAKE_BUILD_TYPE=Release -DMICROATTN_FORCE_SCALAR=ON -DMICROATTN_EXPECT_ARCH=scalar
run host-asan -DCMAKE_BUILD_TYPE=Debug -DMICROATTN_NATIVE=ON -DMICROATTN_SANITIZE=address,undefined
if [ "$host_only" -eq 0 ] && [ -f scripts/test_targets.sh ]; then
  echo "== cross targets"
  bash scripts/test_targets.sh || failed+=("cross targets")
fi

if [ "${#failed[@]}" -ne 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all test suites passed"
