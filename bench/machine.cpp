// SPDX-License-Identifier: Apache-2.0
// microattn benchmarks: the machine's own ceilings, measured in the same binary so every case
// can say how close it gets — single-core fp32 FMA peak (GFLOP/s) and single-core read
// bandwidth over a buffer of a given size (GB/s). Registered as benchmarks too (peak_fma,
// peak_read_bw/<bytes>) so they appear in the output beside the cases.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <type_traits>
#include <utility>

#include "bench_util.hpp"
#include "microattn/internal/vec.hpp"

namespace microattn_bench {
namespace {

using Arch = microattn::DefaultArch;
using V = microattn::internal::Vec<Arch>;
using VT = typename V::type;

// Independent accumulator chains: enough to cover FMA latency x FMA ports (Zen 3 and Intel
// since Haswell: latency 4-5, 2 ports -> at least 10 in flight; 12 leave two registers for the
// operands of the 16 an AVX2 or armv7 NEON core has). 32-register ISAs (AVX-512, AArch64) take
// 24. The scalar arch keeps 8 scalar chains (Cortex-M7/M4F and in-order cores need far fewer).
template <class A>
constexpr std::size_t fma_chains() {
  if constexpr (std::is_same<A, microattn::ScalarArch>::value) {
    return 8;
  } else {
#if MICROATTN_HAS_XSIMD
    if constexpr (std::is_base_of<xsimd::avx512f, A>::value ||
                  std::is_base_of<xsimd::neon64, A>::value)
      return 24;
#endif
    return 12;
  }
}
constexpr std::size_t kChains = fma_chains<Arch>();
constexpr std::size_t kUnroll =
    4;  // chain steps per loop trip, so loop overhead stays off the FMA ports

// One step of every chain, unrolled by a fold so each accumulator lives in its own register.
template <std::size_t... I>
inline void fma_step(VT* acc, VT b, VT c, std::index_sequence<I...>) noexcept {
  ((acc[I] = V::fma(acc[I], b, c)), ...);
}

// Operands from volatile memory so the compiler can neither fold the chains nor drop them.
volatile float g_mul = 0.999999f;
volatile float g_add = 1e-6f;
volatile float g_sink = 0.0f;

// The same clock Google Benchmark's rate counters divide by (CPU time of this thread, which the
// machine's other load does not inflate), so pct_peak of peak_fma itself comes out near 100.
double now_seconds() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
  timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
#endif
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double g_peak_gflops = 0.0;
std::mutex g_bw_mutex;
std::map<std::size_t, std::pair<double, double>>& bw_table() {  // bytes -> best, median
  static std::map<std::size_t, std::pair<double, double>> t;
  return t;
}
std::vector<std::size_t>& bw_requests() {
  static std::vector<std::size_t> r;
  return r;
}

std::size_t floats_for(std::size_t bytes) {
  const std::size_t w = V::kWidth * 8;  // whole trips of read_sum's 8 vector accumulators
  return std::max<std::size_t>(w, (bytes / sizeof(float) + w - 1) / w * w);
}

struct Bw {
  double best, median;
};

// Best and median of kBwRuns timed runs. pct_bw uses the best, as STREAM reports its best rate:
// on this shared machine the last-level cache is shared with other tenants and a run's
// bandwidth swings by +-40 % with their load (the FMA peak, private to the core, barely moves),
// so a median taken at a busy moment would overstate every case's pct_bw. 61 runs of ~3 ms
// (0.2 s per size): with 15 (50 ms) the best itself depended on the moment, 57-75 GB/s over
// 8.4 MB between invocations, so a busy start-up flattered pct_bw (D1 once read 104 %).
constexpr int kBwRuns = 61;
Bw measure_bw(std::size_t bytes) {
  const std::size_t n = floats_for(bytes);
  AlignedFloats buf = uniform_floats(n, -1.0f, 1.0f, 7);
  g_sink = static_cast<float>(read_sum(buf.data(), n));  // warm: bring the buffer into cache
  // Passes per timed run: about 2e8 bytes, so each run takes a few ms even from DRAM.
  const std::size_t passes = std::max<std::size_t>(1, std::size_t{200000000} / (n * sizeof(float)));
  std::vector<double> gbps;
  for (int rep = 0; rep < kBwRuns; ++rep) {
    double s = 0.0;
    const double t0 = now_seconds();
    for (std::size_t p = 0; p < passes; ++p) {
      s += read_sum(buf.data(), n);
      benchmark::ClobberMemory();  // or the compiler may hoist the (pure) sum out of the loop
    }
    const double dt = now_seconds() - t0;
    g_sink = static_cast<float>(s);
    gbps.push_back(static_cast<double>(passes * n * sizeof(float)) / dt * 1e-9);
  }
  return {*std::max_element(gbps.begin(), gbps.end()), median(gbps)};
}

}  // namespace

double fma_chains_flops(std::size_t iters) {
  VT acc[kChains];
  const float a0 = g_add;
  for (std::size_t i = 0; i < kChains; ++i) acc[i] = V::set1(a0 * static_cast<float>(i + 1));
  const VT b = V::set1(g_mul), c = V::set1(g_add);
  for (std::size_t it = 0; it < iters; ++it) {
    for (std::size_t u = 0; u < kUnroll; ++u)
      fma_step(acc, b, c, std::make_index_sequence<kChains>{});
  }
  VT s = acc[0];
  for (std::size_t i = 1; i < kChains; ++i) s = s + acc[i];
  g_sink = V::hsum(s);
  return 2.0 * static_cast<double>(V::kWidth * kChains * kUnroll) * static_cast<double>(iters);
}

double read_sum(const float* p, std::size_t n) noexcept {
  // Two sequential streams, the buffer's halves read side by side, 4 vector accumulators each
  // (the add latency is hidden, loads are the limit). One stream reads ~10 % slower on Zen 3
  // (61 against 67 GB/s median over 8.4 MB): the core keeps more misses in flight for two
  // streams, and the decode kernels use that (f32_gemv_panel16), so the ceiling must too.
  constexpr std::size_t W = V::kWidth;
  VT a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
  VT a4 = V::zero(), a5 = V::zero(), a6 = V::zero(), a7 = V::zero();
  const std::size_t h = n / 2 - (n / 2) % (4 * W);  // floats per stream, whole trips
  const float* q = p + h;
  for (std::size_t i = 0; i < h; i += 4 * W) {
    a0 = a0 + V::load(p + i + 0 * W);
    a4 = a4 + V::load(q + i + 0 * W);
    a1 = a1 + V::load(p + i + 1 * W);
    a5 = a5 + V::load(q + i + 1 * W);
    a2 = a2 + V::load(p + i + 2 * W);
    a6 = a6 + V::load(q + i + 2 * W);
    a3 = a3 + V::load(p + i + 3 * W);
    a7 = a7 + V::load(q + i + 3 * W);
  }
  float tail = 0.0f;
  for (std::size_t i = 2 * h; i < n; ++i) tail += p[i];
  return static_cast<double>(V::hsum(((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)))) + tail;
}

double fma_peak_gflops() noexcept { return g_peak_gflops; }

double read_bw_gbps(std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(g_bw_mutex);
    auto it = bw_table().find(bytes);
    if (it != bw_table().end()) return it->second.first;
  }
  const Bw v = measure_bw(bytes);
  std::lock_guard<std::mutex> lock(g_bw_mutex);
  bw_table()[bytes] = {v.best, v.median};
  return v.best;
}

void measure_machine() {
  benchmark::AddCustomContext("microattn_arch", microattn::arch_name<Arch>());
  // Calibrate: ~20 ms per timed run, best of 9 runs (a busy neighbour on a shared machine only
  // ever lowers a run; a low median made every pct_peak of the run read high: 221 against the
  // peak_fma case's 235 GFLOP/s in one run here).
  std::size_t iters = 1 << 16;
  for (;;) {
    const double t0 = now_seconds();
    fma_chains_flops(iters);
    if (now_seconds() - t0 > 0.005 || iters > (std::size_t{1} << 30)) break;
    iters *= 2;
  }
  iters *= 4;
  std::vector<double> g;
  for (int rep = 0; rep < 9; ++rep) {
    const double t0 = now_seconds();
    const double flops = fma_chains_flops(iters);
    g.push_back(flops / (now_seconds() - t0) * 1e-9);
  }
  g_peak_gflops = *std::max_element(g.begin(), g.end());
  std::fprintf(
      stderr,
      "microattn_bench: arch %s, fp32 FMA peak %.1f GFLOP/s (1 core, %zu chains x %zu lanes)\n",
      microattn::arch_name<Arch>(), g_peak_gflops, kChains, V::kWidth);
  std::vector<std::size_t> sizes;
  {
    std::lock_guard<std::mutex> lock(g_bw_mutex);
    sizes = bw_requests();
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", g_peak_gflops);
  benchmark::AddCustomContext("fma_peak_gflops", buf);
  for (std::size_t b : sizes) {
    read_bw_gbps(b);
    const auto bw = bw_table()[b];
    std::fprintf(stderr,
                 "microattn_bench: read bandwidth over %zu bytes: best %.1f GB/s (median %.1f)\n",
                 b, bw.first, bw.second);
    std::snprintf(buf, sizeof buf, "%.2f (median %.2f)", bw.first, bw.second);
    benchmark::AddCustomContext("read_bw_gbps_" + std::to_string(b), buf);
  }
}

void fill_uniform(float* p, std::size_t n, float lo, float hi, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (std::size_t i = 0; i < n; ++i) p[i] = dist(rng);
}

// ---- the ceilings as benchmarks ---------------------------------------------------------------
namespace {

void peak_fma(benchmark::State& state) {
  constexpr std::size_t kIters = 1 << 14;
  double flops = 0.0;
  for (auto _ : state) flops = fma_chains_flops(kIters);
  set_flop_counters(state, flops);
  state.SetLabel(arch_label<Arch>());
}

void peak_read_bw(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0));
  const std::size_t n = floats_for(bytes);
  AlignedFloats buf = uniform_floats(n, -1.0f, 1.0f, 7);
  for (auto _ : state) benchmark::DoNotOptimize(read_sum(buf.data(), n));
  set_byte_counters(state, static_cast<double>(n * sizeof(float)), bytes);
  state.SetLabel(arch_label<Arch>());
}

}  // namespace

void register_machine_benchmarks() { benchmark::RegisterBenchmark("peak_fma", peak_fma); }

void register_read_bw(std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(g_bw_mutex);
    bw_requests().push_back(bytes);
  }
  benchmark::RegisterBenchmark("peak_read_bw", peak_read_bw)->Arg(static_cast<std::int64_t>(bytes));
}

}  // namespace microattn_bench
