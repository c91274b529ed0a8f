#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: set up (Debian packages), build for this machine, run the demo, then the
# benchmark cases of README.md's results table (about 40, a line each as it finishes; a few
# minutes on 2 cores) and print that table for this machine, also written to
# build/main/results.md (the run's Google Benchmark JSON beside it: results.json).
# Usage: bash scripts/run_main.sh [--full] [extra Google Benchmark flags]
#   --full  every benchmark case instead (~160, Google Benchmark's console table; 6 minutes on a
#           quiet 2-core machine, 30 on a busy one), then the same table from its results
# MICROATTN_MAIN_BUILD=<dir> builds there instead of build/main.
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
if [ "${1:-}" = "--full" ]; then
  full=1
  shift
fi
bash scripts/setup.sh --peers
# Its own build tree: the test presets own build/<preset> (build/host has the tests on), so the
# two README commands work in either order and each can be run twice.
build=${MICROATTN_MAIN_BUILD:-build/main}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMICROATTN_NATIVE=ON \
      -DMICROATTN_BUILD_TESTS=OFF -DMICROATTN_BUILD_BENCH=ON
cmake --build "$build" --parallel --target microattn_demo microattn_bench
echo "== demo"
"$build/examples/microattn_demo"

json="$build/results.json"
table="$build/results.md"
# The table's first line names the CPU and the commit (no commas: --benchmark_context splits on
# them).
cpu=$(grep -m1 -E '^(model name|Model|Hardware)' /proc/cpuinfo 2>/dev/null | sed 's/^[^:]*: *//') || true
cpu=${cpu:-$(uname -m)}
commit=$(git rev-parse --short HEAD 2>/dev/null) || commit=""
if [ -n "$commit" ] && ! git diff --quiet HEAD -- 2>/dev/null; then commit="$commit+changes"; fi
context="machine=${cpu//,/ } ($(nproc) CPUs)${commit:+,commit=$commit}"
bench=("$build/bench/microattn_bench" --benchmark_repetitions=3
       --benchmark_report_aggregates_only=true --benchmark_context="$context"
       --benchmark_out="$json" --benchmark_out_format=json)
if [ "$full" -eq 1 ]; then
  echo "== benchmark, every case (one core unless said; medians of 3 repetitions; docs/benchmarks.md)"
  "${bench[@]}" "$@"
else
  echo "== benchmark: README.md's results cases (one core unless said; medians of 3 repetitions;"
  echo "   every case: --full; docs/benchmarks.md)"
  "${bench[@]}" --benchmark_filter="$(python3 scripts/update_figures.py --results-filter)" \
                --benchmark_min_time=0.2 --microattn_progress "$@"
fi
if python3 scripts/update_figures.py --results-from "$json" > "$table"; then
  echo "== results: README.md's table for this machine (written to $table; the run's JSON: $json)"
  cat "$table"
else
  rm -f "$table"
  echo "== no results table: the run lacks a case it needs (a --benchmark_filter?); the JSON: $json"
fi
