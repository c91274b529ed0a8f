#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: set up (Debian packages), build for this machine, run the demo and the host
# benchmark. Usage: bash scripts/run_main.sh [extra Google Benchmark flags]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --peers
# Its own build tree: the test presets own build/<preset> (build/host has the tests on), so the
# two README commands work in either order and each can be run twice.
build=build/main
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMICROATTN_NATIVE=ON \
      -DMICROATTN_BUILD_TESTS=OFF -DMICROATTN_BUILD_BENCH=ON
cmake --build "$build" --parallel
echo "== demo"
"$build/examples/microattn_demo"
echo "== benchmark (single thread; medians of 3 repetitions; see docs/benchmarks.md)"
"$build/bench/microattn_bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true "$@"
