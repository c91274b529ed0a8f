#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fuzz smoke run (CI): builds the libFuzzer targets of tests/fuzz with clang 14 twice, SIMD
# kernels for this CPU (build/host-fuzz) and the forced scalar Cortex-M path
# (build/host-fuzz-scalar), then runs its targets side by side (one job each) for a fixed time,
# starting from the seed and regression corpus tests/fuzz/corpus/<target>/. Any invariant violation, sanitizer
# report or crash fails the run; its input is saved as build/<dir>/fuzz-artifacts/<target>-crash-*.
# The SIMD build also runs the latent attention's, the Decoder's and the blocks' unit tests
# under clang's UBSan (microattn_clang_ubsan_tests).
# The last line is "N passed, N failed" (one per target and build); exit status 1 if any failed.
#
# Environment:
#   FUZZ_SECONDS   seconds per target and build (default 20; 2 builds x 2 targets)
#   FUZZ_RUNS      run this many inputs per target instead of a time budget
#   FUZZ_SEED      libFuzzer's seed (default 1: CI explores the same inputs every run, a slower
#                  machine a prefix of them; 0 = random, for exploring further by hand)
#   FUZZ_BUILDS    which builds (default "simd scalar")
#   FUZZ_TARGETS   which targets (default "fuzz_layer fuzz_kv_cache")
#   FUZZ_SKIP_SETUP=1  do not run scripts/setup.sh (the packages are known to be there)
#   CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default 2)
# Replaying only the corpus: ctest --test-dir build/host-fuzz -L fuzz
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-20}
runs=${FUZZ_RUNS:-}
builds=${FUZZ_BUILDS:-simd scalar}
targets=${FUZZ_TARGETS:-fuzz_layer fuzz_kv_cache}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

passed=0
failed=0
summary=()
n_targets=$(wc -w <<<"$targets")

if [ "${FUZZ_SKIP_SETUP:-0}" != 1 ]; then
  if ! bash scripts/setup.sh; then
    echo "fuzz_smoke: scripts/setup.sh failed"
    echo "0 passed, 1 failed"
    exit 1
  fi
fi

# One fuzz target of one build for the time budget: its summary line into $dir/fuzz-$t.result,
# the invariant message, sanitizer report and saved input on stdout when it fails.
fuzz_one() {
  local dir=$1 b=$2 t=$3 budget rc secs execs t0
  local work="$dir/fuzz-work/$t" art="$dir/fuzz-artifacts" log="$dir/fuzz-$t.log"
  rm -rf "$work" "$dir/fuzz-$t.result"
  mkdir -p "$work" "$art"
  if [ -n "$runs" ]; then budget=(-runs="$runs"); else budget=(-max_total_time="$seconds"); fi
  echo "=== $b: $t (${budget[*]})"
  t0=$(date +%s)
  "$dir/tests/fuzz/$t" "${budget[@]}" -seed="${FUZZ_SEED:-1}" -timeout=60 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/$t-" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
  execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    echo "PASS $b $t: ${execs:-?} inputs in ${secs} s" > "$dir/fuzz-$t.result"
  else
    echo "FAIL $b $t (exit $rc after ${secs} s, log $log)" > "$dir/fuzz-$t.result"
    grep -A3 -e '^==== microattn fuzz' "$log" | head -8
    grep -m1 -A6 -e 'ERROR: AddressSanitizer' -e 'runtime error:' -e 'ERROR: libFuzzer: timeout' "$log"
    grep -e 'Test unit written to' "$log" | tail -1
  fi
}

start_all=$(date +%s)
for b in $builds; do
  case "$b" in
    simd) dir=build/host-fuzz; flags=(-DMICROATTN_NATIVE=ON -DMICROATTN_FORCE_SCALAR=OFF) ;;
    scalar) dir=build/host-fuzz-scalar; flags=(-DMICROATTN_FORCE_SCALAR=ON) ;;
    *) echo "fuzz_smoke: unknown build '$b' (simd, scalar)"; failed=$((failed + 1)); continue ;;
  esac
  ubsan=""  # the unit tests under clang's UBSan: once (the SIMD build), not per build
  [ "$b" = simd ] && ubsan=microattn_clang_ubsan_tests
  echo "=== $b: configure and build $dir"
  if ! CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DMICROATTN_BUILD_FUZZ=ON -DMICROATTN_BUILD_TESTS=ON -DMICROATTN_BUILD_BENCH=OFF "${flags[@]}" >"$dir.configure.log" 2>&1 \
     || ! cmake --build "$dir" --target $targets $ubsan; then
    [ -f "$dir.configure.log" ] && tail -20 "$dir.configure.log"
    echo "=== $b: build FAILED"
    failed=$((failed + n_targets))
    [ -n "$ubsan" ] && failed=$((failed + 1))
    summary+=("FAIL $b: build")
    continue
  fi
  # The latent attention's, the Decoder's and the blocks' tests under clang's UBSan (its
  # array-bounds check covers pointer arithmetic on arrays; GCC's does not).
  t0=$(date +%s)
  if [ -z "$ubsan" ]; then
    :  # not in this build
  elif "$dir/tests/fuzz/microattn_clang_ubsan_tests" >"$dir/clang-ubsan.log" 2>&1; then
    passed=$((passed + 1))
    summary+=("PASS $b clang_ubsan: $(grep -c '^\[       OK' "$dir/clang-ubsan.log") tests in $(($(date +%s) - t0)) s")
  else
    failed=$((failed + 1))
    summary+=("FAIL $b clang_ubsan (log $dir/clang-ubsan.log)")
    grep -m3 -e 'runtime error:' -e '^\[  FAILED' "$dir/clang-ubsan.log"
  fi
  # The targets run side by side (one job each, as many as there are targets: 2 cores are 2x
  # the inputs per second); each writes its one summary line to $dir/fuzz-$t.result.
  for t in $targets; do fuzz_one "$dir" "$b" "$t" & done
  wait
  for t in $targets; do
    r=$(cat "$dir/fuzz-$t.result" 2> /dev/null || echo "FAIL $b $t (no result)")
    summary+=("$r")
    case "$r" in PASS*) passed=$((passed + 1)) ;; *) failed=$((failed + 1)) ;; esac
  done
done

echo "=== fuzz smoke: $(($(date +%s) - start_all)) s"
for s in "${summary[@]}"; do echo "$s"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
