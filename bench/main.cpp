// SPDX-License-Identifier: Apache-2.0
// microattn_bench: one binary for every case (P1..P4, A1, D1, D2), the competing paths
// (reference, scalar, optional peers) and the machine ceilings they are measured against.
//
// The FMA peak and the read bandwidths are measured before Google Benchmark starts, so every
// case's pct_peak / pct_bw counter uses the same figures; they are also run as benchmarks
// (peak_fma, peak_read_bw/<bytes>) so they show in the output.
#include <cstdio>

#include "bench_util.hpp"

int main(int argc, char** argv) {
  using namespace microattn_bench;
  register_machine_benchmarks();
  register_gemm_benchmarks();
  register_gemv_benchmarks();
  register_exp_benchmarks();
  register_rope_benchmarks();
  register_attn_benchmarks();
  register_layer_benchmarks();
  register_decode_benchmarks();
  register_cortex_m_shape_benchmarks();
  register_thread_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  measure_machine();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
