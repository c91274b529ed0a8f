// SPDX-License-Identifier: Apache-2.0
// Kernel family: register-blocked, cache-tiled fp32 GEMM (include/microattn/kernels/f32_gemm.hpp).
//
//   f32_gemm_ukernel_<MR>x<NR>__<arch>/kc:K   the micro-kernel alone on L1-resident operands: the
//                                             ceiling every GEMM-shaped step of the layer runs at
//   f32_gemm__<arch>/M:../N:../K:..           the blocked driver with packing, on the shapes the
//                                             layer cases run (per key/value group: K and V
//                                             N=d_head, Q N=G*d_head; W_O N=d_model)
//   f32_gemm_openblas/M:../N:../K:..          optional peer: cblas_sgemm (1 thread) on the same
//                                             shapes and operands, when OpenBLAS is installed: what
//                                             the best BLAS reaches against the same FMA peak
#include "microattn/kernels/f32_gemm.hpp"

#include <string>

#include "bench_util.hpp"
#include "peer_openblas.hpp"

namespace microattn_bench {
namespace {

template <class Arch>
void bm_ukernel(benchmark::State& state) {
  using Tl = microattn::internal::Tiles<Arch>;
  constexpr std::size_t MR = Tl::kMR, NR = Tl::kNR;
  const std::size_t kc = static_cast<std::size_t>(state.range(0));
  AlignedFloats a = uniform_floats(MR * kc, -1.0f, 1.0f, 1);
  AlignedFloats b = uniform_floats(kc * NR, -1.0f, 1.0f, 2);
  AlignedFloats c(MR * NR);
  for (auto _ : state) {
    microattn::kernels::f32_gemm_ukernel<Arch, MR, Tl::kNRVec>(kc, a.data(), kc, b.data(), NR,
                                                               c.data(), NR, nullptr, false);
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, 2.0 * MR * NR * static_cast<double>(kc));
  state.SetLabel(arch_label<Arch>());
}

/// A GEMM case's operands from its arguments M, N, K: A (M x K), B (K x N), C (M x N).
struct GemmOperands {
  std::size_t M, N, K;
  AlignedFloats a, b, c;
  explicit GemmOperands(const benchmark::State& state)
      : M(static_cast<std::size_t>(state.range(0))),
        N(static_cast<std::size_t>(state.range(1))),
        K(static_cast<std::size_t>(state.range(2))),
        a(uniform_floats(M * K, -1.0f, 1.0f, 1)),
        b(uniform_floats(K * N, -0.05f, 0.05f, 2)),
        c(M * N) {}
  double flops() const {
    return 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  }
};

/// The shapes the layer cases run (per key/value group: K and V N=d_head, Q N=G*d_head; W_O
/// N=d_model), for microattn and the peer alike.
void gemm_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"})
      ->Args({64, 64, 256})     // P1: K or V projection of one head
      ->Args({256, 64, 512})    // P2
      ->Args({1024, 64, 512})   // P3: K or V of one group
      ->Args({1024, 512, 512})  // P3: W_O
      ->Args({264, 64, 1024})   // d_model 1024: rows of A 4 KiB apart (gemm_weights splits
      ->Args({264, 64, 1040})   // AVX-512 tiles there); 1040: the same work, rows staggered
      ->Args({1, 512, 512});    // decode: one token through W_O
}

template <class Arch>
void bm_gemm(benchmark::State& state) {
  GemmOperands g(state);
  AlignedFloats pack(microattn::kernels::gemm_pack_floats<Arch>());
  for (auto _ : state) {
    microattn::kernels::f32_gemm<Arch>(
        g.M, g.N, g.K, g.a.data(), g.K, g.b.data(), g.N, microattn::WeightLayout::kInOut, nullptr,
        microattn::kernels::StoreRowMajor{g.c.data(), g.N}, pack.data());
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, g.flops());
  state.SetLabel(arch_label<Arch>());
}

#if defined(MICROATTN_BENCH_OPENBLAS)
void bm_gemm_openblas(benchmark::State& state) {
  GemmOperands g(state);
  openblas_peer::single_thread();
  const auto I = [](std::size_t x) { return static_cast<blasint>(x); };
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, I(g.M), I(g.N), I(g.K), 1.0f, g.a.data(),
                I(g.K), g.b.data(), I(g.N), 0.0f, g.c.data(), I(g.N));
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, g.flops());
  state.SetLabel(openblas_peer::label());
}
#endif

template <class Arch>
void register_arch() {
  using Tl = microattn::internal::Tiles<Arch>;
  const std::string arch = arch_label<Arch>();
  const std::string tile = std::to_string(Tl::kMR) + "x" + std::to_string(Tl::kNR);
  benchmark::RegisterBenchmark(("f32_gemm_ukernel_" + tile + "__" + arch).c_str(), bm_ukernel<Arch>)
      ->ArgName("kc")
      ->Arg(64)
      ->Arg(static_cast<std::int64_t>(Tl::kKC));
  benchmark::RegisterBenchmark(("f32_gemm__" + arch).c_str(), bm_gemm<Arch>)
      ->Apply(gemm_shapes);  // decode: one token through W_O
}

}  // namespace

void register_gemm_benchmarks() {
  register_arch<microattn::DefaultArch>();
#if defined(MICROATTN_BENCH_OPENBLAS)
  benchmark::RegisterBenchmark("f32_gemm_openblas", bm_gemm_openblas)->Apply(gemm_shapes);
#endif
#if MICROATTN_HAS_XSIMD
  register_arch<microattn::ScalarArch>();
#endif
}

}  // namespace microattn_bench
