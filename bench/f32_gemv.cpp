// SPDX-License-Identifier: Apache-2.0
// The decode step's matrix-vector products (include/microattn/kernels/f32_gemv.hpp) alone, in
// each weight layout, on D1's weights: four 512 x 512 matrices (4 MB, the projections and W_O
// of one token), x -> y through each.
//
//   f32_gemv_<layout>__<arch>/4x512x512   layout: inout (f32_gemv_axpy), outin (f32_gemv_dot),
//                                         panel16 (f32_gemv_panel16)
// Counters: gbps = the 4 MB of weights read per second, pct_bw = that as a % of the read
// bandwidth measured over 4 MB (peak_read_bw/4194304), gflops / pct_peak (2 flops per weight).
#include "microattn/kernels/f32_gemv.hpp"

#include <string>
#include <utility>

#include "bench_util.hpp"
#include "microattn/weights.hpp"

namespace microattn_bench {
namespace {

constexpr std::size_t kN = 512, kK = 512, kMats = 4;
constexpr std::size_t kBytes = kMats * kN * kK * sizeof(float);

template <class Arch, microattn::WeightLayout kLayout>
void bm_gemv(benchmark::State& state) {
  using microattn::WeightLayout;
  AlignedFloats w[kMats];
  for (std::size_t m = 0; m < kMats; ++m) {
    AlignedFloats dense = uniform_floats(kN * kK, -0.05f, 0.05f, static_cast<std::uint32_t>(m + 1));
    if (kLayout == WeightLayout::kPanel16) {
      w[m] = AlignedFloats(microattn::weight_floats(WeightLayout::kPanel16, kK, kN));
      (void)microattn::pack_weight_panels(dense.data(), WeightLayout::kInOut, kK, kN, w[m].data());
    } else {
      w[m] = std::move(dense);  // the same random values read as [in][out] or [out][in]
    }
  }
  const std::size_t ld = kLayout == WeightLayout::kPanel16 ? kK * microattn::kWeightPanel : kN;
  AlignedFloats x = uniform_floats(kK, -1.0f, 1.0f, 9), y(kN * kMats);
  for (auto _ : state) {
    for (std::size_t m = 0; m < kMats; ++m)
      microattn::kernels::f32_gemv<Arch>(kN, kK, x.data(), w[m].data(), ld, kLayout, nullptr,
                                         y.data() + m * kN);
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, 2.0 * kMats * kN * kK);
  set_byte_counters(state, static_cast<double>(kBytes), kBytes);
  state.SetLabel(arch_label<Arch>());
}

template <class Arch>
void register_arch() {
  using microattn::WeightLayout;
  const std::string arch = arch_label<Arch>();
  benchmark::RegisterBenchmark(("f32_gemv_inout__" + arch + "/4x512x512").c_str(),
                               bm_gemv<Arch, WeightLayout::kInOut>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(("f32_gemv_outin__" + arch + "/4x512x512").c_str(),
                               bm_gemv<Arch, WeightLayout::kOutIn>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(("f32_gemv_panel16__" + arch + "/4x512x512").c_str(),
                               bm_gemv<Arch, WeightLayout::kPanel16>)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace

void register_gemv_benchmarks() {
  register_read_bw(kBytes);
  register_arch<microattn::DefaultArch>();
}

}  // namespace microattn_bench
