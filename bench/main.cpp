// SPDX-License-Identifier: Apache-2.0
// microattn_bench: one binary for every case (P1..P4, A1, D1, D2), the competing paths
// (reference, scalar, optional peers) and the machine ceilings they are measured against.
//
// The FMA peak and the read bandwidths are measured before Google Benchmark starts, so every
// case's pct_peak / pct_bw counter uses the same figures; they are also run as benchmarks
// (peak_fma, peak_read_bw/<bytes>) so they show in the output.
#include <memory>
#include <vector>

#include "bench_util.hpp"

namespace {

/// The display reporter Google Benchmark would use (--benchmark_format, colour, tabular), handed
/// the runs with the percentage counters' rate flag cleared: the console prints a rate counter
/// with "/s", and pct_peak / pct_bw are percentages whose division by the run's time Google
/// Benchmark has already done (bench_util.hpp, is_percent_counter). Values are unchanged.
class PercentCountersPlain final : public benchmark::BenchmarkReporter {
 public:
  PercentCountersPlain() : shown_(benchmark::CreateDefaultDisplayReporter()) {}

  bool ReportContext(const Context& context) override {
    shown_->SetOutputStream(&GetOutputStream());
    shown_->SetErrorStream(&GetErrorStream());
    return shown_->ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> plain(runs);
    for (Run& run : plain)
      for (auto& counter : run.counters)
        if (microattn_bench::is_percent_counter(counter.first))
          counter.second.flags = static_cast<benchmark::Counter::Flags>(
              counter.second.flags & ~benchmark::Counter::kIsRate);
    shown_->ReportRuns(plain);
  }
  void Finalize() override { shown_->Finalize(); }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> shown_;
};

}  // namespace

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
  register_latent_benchmarks();
  register_block_benchmarks();
  register_cortex_m_shape_benchmarks();
  register_thread_benchmarks();
  register_tiny_lm_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  measure_machine();
  PercentCountersPlain display;
  benchmark::RunSpecifiedBenchmarks(&display);
  benchmark::Shutdown();
  return 0;
}
