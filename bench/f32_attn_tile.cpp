// SPDX-License-Identifier: Apache-2.0
// Kernel family: fused, tiled, causal attention with an online softmax
// (include/microattn/kernels/f32_attn_tile.hpp), measured through the public attention core
// microattn::ScaledDotProductAttention.
//
//   A1          attention core only, T=1024 H=8 d_head=64 (default arch)
//   W1_core     the attention core of W1: T=1024 H=8 d_head=64 with SlidingWindow{256}; gflops
//               counts the band's pairs, so W1_core's rate / A1's is how close it is to ideal
//   A1_nomask   A1 with Mask::kNone: every key tile whole, no mask edge (A1's rate / this one's
//               is what the causal diagonal costs)
//   A1_scalar   the same on microattn::ScalarArch (what Cortex-M runs), for the SIMD/scalar ratio
//   A1_eigen    optional peer: Eigen 3 composition (peer_eigen.hpp: blocks of query rows,
//               S = Q K^T, masked softmax with Eigen's vector exp, O = P V), when installed
//   A1_openblas optional peer: the same blocks with cblas_sgemm (1 thread) and microattn's vector
//               exp for the softmax (peer_openblas.hpp), when OpenBLAS is installed
// Flops count the causal half only (issue 2), for every path, so GFLOP/s compare directly.
#include <memory>
#include <vector>

#include "bench_util.hpp"
#include "microattn/attention.hpp"
#include "peer_eigen.hpp"
#include "peer_openblas.hpp"

namespace microattn_bench {
namespace {

constexpr std::size_t kT = 1024, kH = 8, kD = 64;
using A1Cfg = microattn::Config<kT, kH * kD, kH, kH, kD>;
constexpr std::size_t kW1 = 256;
using W1CoreCfg = microattn::Config<kT, kH * kD, kH, kH, kD, microattn::SlidingWindow{kW1}>;
using A1NoneCfg = microattn::Config<kT, kH * kD, kH, kH, kD, microattn::Mask::kNone>;
constexpr std::size_t kQDim = kH * kD;

struct A1Data {
  AlignedFloats q = uniform_floats(kT * kQDim, -1.0f, 1.0f, 11);
  AlignedFloats k = uniform_floats(kT * kQDim, -1.0f, 1.0f, 12);
  AlignedFloats v = uniform_floats(kT * kQDim, -1.0f, 1.0f, 13);
  AlignedFloats out = AlignedFloats(kT * kQDim);
};

template <class Arch, class Cfg = A1Cfg>
void bm_a1(benchmark::State& state) {
  A1Data d;
  auto core = std::make_unique<microattn::ScaledDotProductAttention<Cfg, Arch>>();
  for (auto _ : state) {
    const microattn::Status s = core->forward(d.q.data(), d.k.data(), d.v.data(), kT, d.out.data());
    if (s != microattn::Status::kOk) {
      state.SkipWithError(microattn::to_string(s));
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(
      state, attn_pair_flops(attended_pairs(kT, Cfg::kCausal, double(Cfg::kWindow)), kH, kD));
  state.SetLabel(arch_label<Arch>() + (Cfg::kSliding ? ", window 256" : "") +
                 (Cfg::kCausal ? "" : ", no mask"));
}

#if defined(MICROATTN_BENCH_EIGEN)
void bm_a1_eigen(benchmark::State& state) {
  A1Data d;
  eigen_peer::RowMat s;
  const auto QD = static_cast<eigen_peer::Index>(kQDim);
  for (auto _ : state) {
    eigen_peer::causal_attention(d.q.data(), QD, d.k.data(), QD, d.v.data(), QD, kT, kH, kH, kD,
                                 d.out.data(), QD, s);
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, attn_flops(kT, kH, kD));
  state.SetLabel(eigen_peer::label());
}
#endif

#if defined(MICROATTN_BENCH_OPENBLAS)
void bm_a1_openblas(benchmark::State& state) {
  A1Data d;
  std::vector<float> s;
  for (auto _ : state) {
    openblas_peer::causal_attention(d.q.data(), kQDim, d.k.data(), kQDim, d.v.data(), kQDim, kT, kH,
                                    kH, kD, d.out.data(), kQDim, s);
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, attn_flops(kT, kH, kD));
  state.SetLabel(openblas_peer::label());
}
#endif

}  // namespace

void register_attn_benchmarks() {
  benchmark::RegisterBenchmark("A1", bm_a1<microattn::DefaultArch>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("A1_nomask", bm_a1<microattn::DefaultArch, A1NoneCfg>)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("W1_core", bm_a1<microattn::DefaultArch, W1CoreCfg>)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("A1_scalar", bm_a1<microattn::ScalarArch>)
      ->Unit(benchmark::kMillisecond);
#if defined(MICROATTN_BENCH_EIGEN)
  benchmark::RegisterBenchmark("A1_eigen", bm_a1_eigen)->Unit(benchmark::kMillisecond);
#endif
#if defined(MICROATTN_BENCH_OPENBLAS)
  openblas_peer::single_thread();
  benchmark::RegisterBenchmark("A1_openblas", bm_a1_openblas)->Unit(benchmark::kMillisecond);
#endif
}

}  // namespace microattn_bench
