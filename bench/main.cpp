// SPDX-License-Identifier: Apache-2.0
// microattn_bench: one binary for every case (P1..P4, A1, D1, D2), the competing paths
// (reference, scalar, optional peers) and the machine ceilings they are measured against.
// Google Benchmark's flags, and --microattn_progress (one line per case as it finishes).
//
// The FMA peak and the read bandwidths are measured before Google Benchmark starts, so every
// case's pct_peak / pct_bw counter uses the same figures; they are also run as benchmarks
// (peak_fma, peak_read_bw/<bytes>) so they show in the output.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
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

/// --microattn_progress: instead of Google Benchmark's table, one line per case as it finishes
/// ("[ 3/38] P2_panel16  3.89 ms  88.5 % of peak  (12 s)": the median where there are
/// repetitions, CPU time unless the case is timed in real time); the file reporter
/// (--benchmark_out) gets every run as usual. scripts/run_main.sh runs the README's cases so.
class ProgressLines final : public benchmark::BenchmarkReporter {
 public:
  explicit ProgressLines(std::size_t total)
      : total_(total), start_(std::chrono::steady_clock::now()) {}

  bool ReportContext(const Context&) override {
    std::printf("microattn_bench: %zu cases, one line each as it finishes\n", total_);
    std::fflush(stdout);
    return true;
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    const Run* shown = nullptr;
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") shown = &r;
    if (!shown && !runs.empty() && runs.front().run_type == Run::RT_Iteration)
      shown = &runs.front();
    if (!shown) return;
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const std::string name = shown->run_name.str();
    std::printf("[%*zu/%zu] %-40s ", width(), ++done_, total_, name.c_str());
    if (shown->error_occurred) {
      std::printf("error: %s", shown->error_message.c_str());
    } else {
      const bool real = shown->run_name.time_type.find("real") != std::string::npos;
      std::printf("%9.3g %-2s", real ? shown->GetAdjustedRealTime() : shown->GetAdjustedCPUTime(),
                  benchmark::GetTimeUnitString(shown->time_unit));
      for (const char* c : {"pct_peak", "pct_bw"}) {
        const auto it = shown->counters.find(c);
        if (it != shown->counters.end())
          std::printf("  %5.1f %% of %s", it->second.value,
                      std::strcmp(c, "pct_bw") == 0 ? "read bw" : "peak");
      }
    }
    std::printf("  (%.0f s)\n", secs);
    std::fflush(stdout);
  }

 private:
  int width() const noexcept { return total_ >= 100 ? 3 : total_ >= 10 ? 2 : 1; }
  std::size_t total_, done_ = 0;
  std::chrono::steady_clock::time_point start_;
};

/// A reporter that writes nothing (the count_cases listing goes to its stream).
class Quiet final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

/// argv without --benchmark_context (each benchmark::Initialize adds it again, with a warning)
/// and with `extra` appended, for benchmark::Initialize (which removes what it parses).
std::vector<char*> listing_args(int argc, char** argv, char* extra) {
  std::vector<char*> v;
  for (int i = 0; i < argc; ++i)
    if (std::strncmp(argv[i], "--benchmark_context", 19) != 0) v.push_back(argv[i]);
  v.push_back(extra);
  v.push_back(nullptr);
  return v;
}

/// The number of cases the command line selects. Google Benchmark 1.7 has no listing API:
/// with --benchmark_list_tests RunSpecifiedBenchmarks names the cases (to the display
/// reporter's stream, here a string) and returns their count. The caller parses the flags
/// again with the listing off.
std::size_t count_cases(int argc, char** argv) {
  static char list_on[] = "--benchmark_list_tests=true";
  std::vector<char*> on = listing_args(argc, argv, list_on);
  int n_on = static_cast<int>(on.size()) - 1;
  benchmark::Initialize(&n_on, on.data());
  Quiet quiet;
  std::ostringstream names;
  quiet.SetOutputStream(&names);
  quiet.SetErrorStream(&names);
  const std::size_t n = benchmark::RunSpecifiedBenchmarks(&quiet);
  if (n == 0) std::fputs(names.str().c_str(), stderr);  // e.g. "Failed to match any benchmarks"
  return n;
}

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
  // Our own flag, taken out before Google Benchmark sees the rest.
  bool progress = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--microattn_progress") == 0)
      progress = true;
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  const std::size_t cases = progress ? count_cases(argc, argv) : 0;
  static char list_off[] = "--benchmark_list_tests=false";
  std::vector<char*> args(argv, argv + argc);
  if (progress) args.push_back(list_off);
  args.push_back(nullptr);
  int n_args = static_cast<int>(args.size()) - 1;
  benchmark::Initialize(&n_args, args.data());
  if (benchmark::ReportUnrecognizedArguments(n_args, args.data())) return 1;
  if (progress && cases == 0) return 1;
  measure_machine();
  PercentCountersPlain display;
  ProgressLines lines(cases);
  if (progress)
    benchmark::RunSpecifiedBenchmarks(&lines);
  else
    benchmark::RunSpecifiedBenchmarks(&display);
  benchmark::Shutdown();
  return 0;
}
