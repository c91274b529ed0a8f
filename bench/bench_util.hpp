// SPDX-License-Identifier: Apache-2.0
// microattn benchmarks: what every benchmark file shares — the machine figures measured at
// start-up (FMA peak, read bandwidth), flop/byte counters, data generation.
//
// Bench code may use the heap (the no-heap rule is the library's, not the harness's): the layer
// objects are megabytes, so they are created with new, never on the stack.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "microattn/arch.hpp"

namespace microattn_bench {

// ---- machine figures (machine.cpp) ------------------------------------------------------------

/// Single-core fp32 FMA peak of the build's default arch in GFLOP/s, measured once by
/// measure_machine() (median of several timed runs of independent FMA chains).
double fma_peak_gflops() noexcept;

/// Single-core read bandwidth in GB/s (1e9 bytes/s) streaming a buffer of `bytes` bytes that
/// was just read (so it sits in whichever cache level it fits): the best of 61 timed runs (as
/// STREAM reports; see machine.cpp for why not the median), measured by measure_machine()
/// for every size passed to register_read_bw() before; other sizes are measured on
/// first use.
double read_bw_gbps(std::size_t bytes);

/// Registers the benchmark peak_read_bw/<bytes> and asks measure_machine() to measure the read
/// bandwidth over a buffer of `bytes` bytes. Call it before measure_machine().
void register_read_bw(std::size_t bytes);

/// Measures the figures above and prints them to stderr. Called by main before any benchmark.
void measure_machine();

/// The timing loops measure_machine() uses, also run as benchmarks (peak_fma, peak_read_bw).
double fma_chains_flops(std::size_t iters);  ///< runs the FMA chains, returns the flops done
double read_sum(const float* p, std::size_t n) noexcept;  ///< vectorised sum of n floats

// ---- registration: main() calls these in this order, so the output order is stable ---------

void register_machine_benchmarks();  ///< peak_fma (machine.cpp)
void register_gemm_benchmarks();     ///< f32_gemm_* (f32_gemm.cpp)
void register_gemv_benchmarks();     ///< f32_gemv_* (f32_gemv.cpp)
void register_exp_benchmarks();      ///< f32_exp__* (f32_exp.cpp)
void register_rope_benchmarks();     ///< f32_rope__* (f32_rope.cpp)
void register_attn_benchmarks();     ///< A1, A1_scalar, peers (f32_attn_tile.cpp)
void register_layer_benchmarks();    ///< P1..P4, P1_scalar, P1_reference (attention_layer.cpp)
void register_decode_benchmarks();   ///< D1, D2 (kv_cache.cpp)
void register_latent_benchmarks();   ///< ML1, ML2, MLP1 (latent_attention.cpp)
void register_block_benchmarks();    ///< FF1, FF1_q8, FF1_qd8, FFP1, FFP1_qd8 (blocks.cpp)
/// M1..M3, MD1 and variants: the Cortex-M bench's cases on this machine (cortex_m_shapes.cpp)
void register_cortex_m_shape_benchmarks();
void register_thread_benchmarks();  ///< <case>/threads:1 and :2 (threads.cpp)
/// TLM_*: the tiny trained LM, microattn::Decoder against a plain C baseline (tiny_lm.cpp)
void register_tiny_lm_benchmarks();

// ---- counters ---------------------------------------------------------------------------------

/// gflops = flops_per_iter * iterations / time / 1e9; pct_peak = gflops / fma_peak * 100.
/// Both are created as rate counters, so Google Benchmark divides them by the same time it
/// reports for the run (CPU time; real time for UseRealTime cases). pct_peak is a percentage all
/// the same: the console shows it without "/s" (is_percent_counter, main.cpp's reporter).
inline void set_flop_counters(benchmark::State& state, double flops_per_iter) {
  const double it = static_cast<double>(state.iterations());
  state.counters["gflops"] =
      benchmark::Counter(flops_per_iter * it * 1e-9, benchmark::Counter::kIsRate);
  state.counters["pct_peak"] = benchmark::Counter(
      flops_per_iter * it * 1e-9 * 100.0 / fma_peak_gflops(), benchmark::Counter::kIsRate);
}

/// gbps = bytes_per_iter * iterations / time / 1e9; pct_bw = gbps / read_bw(bw_bytes) * 100,
/// made as set_flop_counters makes gflops and pct_peak.
inline void set_byte_counters(benchmark::State& state, double bytes_per_iter,
                              std::size_t bw_bytes) {
  const double it = static_cast<double>(state.iterations());
  state.counters["gbps"] =
      benchmark::Counter(bytes_per_iter * it * 1e-9, benchmark::Counter::kIsRate);
  state.counters["pct_bw"] = benchmark::Counter(
      bytes_per_iter * it * 1e-9 * 100.0 / read_bw_gbps(bw_bytes), benchmark::Counter::kIsRate);
}

/// The counters above that are percentages (pct_peak, pct_bw): rates for Google Benchmark (it
/// divides them by the run's time), plain numbers for the reader. main.cpp's display reporter
/// clears their rate flag after that division, so the console prints "pct_peak=86.4", not
/// "pct_peak=86.4/s"; the value is the same (JSON and CSV print no unit either way).
inline bool is_percent_counter(const std::string& name) { return name.rfind("pct_", 0) == 0; }

// ---- flop counts (issue 2: count the causal half only) ---------------------------------------

/// Attention core: QK^T and PV over the causal half, 4 * H * d_head * T(T+1)/2.
constexpr double attn_flops(double T, double H, double D) {
  return 4.0 * H * D * T * (T + 1) / 2.0;
}
/// Q, K and V projections: 2 * T * d_model * (H + 2 H_kv) * d_head.
constexpr double proj_flops(double T, double DM, double H, double Hkv, double D) {
  return 2.0 * T * DM * (H + 2.0 * Hkv) * D;
}
/// Output projection: 2 * T * H * d_head * d_model.
constexpr double out_proj_flops(double T, double DM, double H, double D) {
  return 2.0 * T * H * D * DM;
}
/// The whole layer with W_O.
/// Query/key pairs a mask attends over T tokens: causal T(T+1)/2, none T^2, a sliding window
/// of W: W(W+1)/2 + (T - W) W (W < T).
constexpr double attended_pairs(double T, bool causal, double window) {
  if (!causal) return T * T;
  if (window <= 0 || window >= T) return T * (T + 1) / 2;
  return window * (window + 1) / 2 + (T - window) * window;
}
/// Attention flops of H heads of width D over that many pairs (Q K^T and P V: 4 D per pair).
constexpr double attn_pair_flops(double pairs, double H, double D) { return 4.0 * H * D * pairs; }

/// A layer of configuration Cfg over T tokens: the pairs its mask attends (a sliding window's
/// band, all T^2 without a mask), the Q, K and V projections, and W_O when it has one. The
/// prefill cases' count (P*, KP3, the thread cases).
template <class Cfg>
constexpr double config_flops(double T = Cfg::kTMax) {
  return attn_pair_flops(attended_pairs(T, Cfg::kCausal, double(Cfg::kWindow)), Cfg::kHeads,
                         Cfg::kDHead) +
         proj_flops(T, Cfg::kDModel, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead) +
         (Cfg::kHasOutProj ? out_proj_flops(T, Cfg::kOutDim, Cfg::kHeads, Cfg::kDHead) : 0.0);
}

// ---- data --------------------------------------------------------------------------------------

/// n floats uniform in [lo, hi), from a fixed-seed generator (same data every run).
void fill_uniform(float* p, std::size_t n, float lo, float hi, std::uint32_t seed);

/// n floats uniform in [lo, hi), 64-byte aligned (vector(aligned) is not in C++17 std).
struct AlignedFloats {
  struct Free {
    void operator()(float* p) const noexcept { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<float[], Free> p;
  std::size_t n = 0;
  AlignedFloats() = default;
  explicit AlignedFloats(std::size_t count)
      : p(static_cast<float*>(::operator new[](count * sizeof(float), std::align_val_t(64)))),
        n(count) {
    for (std::size_t i = 0; i < n; ++i) p[i] = 0.0f;
  }
  float* data() noexcept { return p.get(); }
  const float* data() const noexcept { return p.get(); }
};
inline AlignedFloats uniform_floats(std::size_t n, float lo, float hi, std::uint32_t seed) {
  AlignedFloats a(n);
  fill_uniform(a.data(), n, lo, hi, seed);
  return a;
}

/// Name of an arch for benchmark labels and kernel names ("fma3+avx2", "scalar", ...).
template <class Arch>
std::string arch_label() {
  return microattn::arch_name<Arch>();
}

}  // namespace microattn_bench
