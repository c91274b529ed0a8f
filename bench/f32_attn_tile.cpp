// Kernel family: fused, tiled, causal attention with an online softmax
// (include/microattn/kernels/f32_attn_tile.hpp), measured through the public attention core
// microattn::ScaledDotProductAttention.
//
//   A1          attention core only, T=1024 H=8 d_head=64 (default arch)
//   A1_scalar   the same on microattn::ScalarArch (what Cortex-M runs), for the SIMD/scalar ratio
//   A1_eigen    optional peer: Eigen 3 composition (blocks of query rows: S = Q K^T, masked
//               softmax with Eigen's vector exp, O = P V), when Eigen is installed
//   A1_openblas optional peer: the same blocks with cblas_sgemm (1 thread) and microattn's vector
//               exp for the softmax, when OpenBLAS is installed
// Flops count the causal half only (issue 2), for every path, so GFLOP/s compare directly.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "bench_util.hpp"
#include "microattn/attention.hpp"
#include "microattn/kernels/f32_exp.hpp"

#if defined(MICROATTN_BENCH_EIGEN)
#include <Eigen/Core>
#endif
#if defined(MICROATTN_BENCH_OPENBLAS)
#include <cblas.h>
#endif

namespace microattn_bench {
namespace {

constexpr std::size_t kT = 1024, kH = 8, kD = 64;
using A1Cfg = microattn::Config<kT, kH * kD, kH, kH, kD>;
constexpr std::size_t kQDim = kH * kD;

struct A1Data {
  AlignedFloats q = uniform_floats(kT * kQDim, -1.0f, 1.0f, 11);
  AlignedFloats k = uniform_floats(kT * kQDim, -1.0f, 1.0f, 12);
  AlignedFloats v = uniform_floats(kT * kQDim, -1.0f, 1.0f, 13);
  AlignedFloats out = AlignedFloats(kT * kQDim);
};

template <class Arch>
void bm_a1(benchmark::State& state) {
  A1Data d;
  auto core = std::make_unique<microattn::ScaledDotProductAttention<A1Cfg, Arch>>();
  for (auto _ : state) {
    const microattn::Status s = core->forward(d.q.data(), d.k.data(), d.v.data(), kT, d.out.data());
    if (s != microattn::Status::kOk) {
      state.SkipWithError(microattn::to_string(s));
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, attn_flops(kT, kH, kD));
  state.SetLabel(arch_label<Arch>());
}

// Query rows per block in the peers: S for one block is kBlock x T floats (512 KiB at T=1024).
constexpr std::size_t kBlock = 128;

/// Masked, scaled softmax of row i (position pos) over keys 0..n-1 in place; keys past pos -> 0.
/// Scale is applied here (the peers' GEMM computes raw Q K^T).
inline void softmax_row(float* s, std::size_t n, std::size_t pos, float scale) {
  using V = microattn::internal::Vec<microattn::DefaultArch>;
  constexpr std::size_t W = V::kWidth;
  const std::size_t vis = pos + 1;
  float m = -std::numeric_limits<float>::infinity();
  for (std::size_t j = 0; j < vis; ++j) m = std::max(m, s[j]);
  const auto vscale = V::set1(scale), vm = V::set1(m * scale);
  auto vsum = V::zero();
  std::size_t j = 0;
  for (; j + W <= vis; j += W) {
    const auto p = microattn::kernels::f32_exp<microattn::DefaultArch>(V::loadu(s + j) * vscale - vm);
    V::storeu(s + j, p);
    vsum = vsum + p;
  }
  float sum = V::hsum(vsum);
  for (; j < vis; ++j) {
    s[j] = microattn::kernels::f32_exp_scalar(s[j] * scale - m * scale);
    sum += s[j];
  }
  const float inv = 1.0f / sum;
  for (j = 0; j < vis; ++j) s[j] *= inv;
  for (; j < n; ++j) s[j] = 0.0f;
}

#if defined(MICROATTN_BENCH_EIGEN)
void bm_a1_eigen(benchmark::State& state) {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Strided = Eigen::Map<const Mat, 0, Eigen::OuterStride<>>;
  using StridedOut = Eigen::Map<Mat, 0, Eigen::OuterStride<>>;
  A1Data d;
  Mat s(kBlock, kT);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kD));
  for (auto _ : state) {
    for (std::size_t h = 0; h < kH; ++h) {
      for (std::size_t r0 = 0; r0 < kT; r0 += kBlock) {
        const Eigen::Index br = static_cast<Eigen::Index>(std::min(kBlock, kT - r0));
        const Eigen::Index nk = static_cast<Eigen::Index>(r0) + br;  // keys this block can see
        const Strided q(d.q.data() + r0 * kQDim + h * kD, br, kD, Eigen::OuterStride<>(kQDim));
        const Strided k(d.k.data() + h * kD, nk, kD, Eigen::OuterStride<>(kQDim));
        const Strided v(d.v.data() + h * kD, nk, kD, Eigen::OuterStride<>(kQDim));
        StridedOut o(d.out.data() + r0 * kQDim + h * kD, br, kD, Eigen::OuterStride<>(kQDim));
        auto sb = s.topLeftCorner(br, nk);
        sb.noalias() = (q * scale) * k.transpose();
        for (Eigen::Index i = 0; i < br; ++i) {
          const Eigen::Index vis = static_cast<Eigen::Index>(r0) + i + 1;
          auto row = sb.row(i);
          const float m = row.head(vis).maxCoeff();
          row.head(vis) = (row.head(vis).array() - m).exp();
          row.head(vis) /= row.head(vis).sum();
          row.tail(nk - vis).setZero();
        }
        o.noalias() = sb * v;
      }
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, attn_flops(kT, kH, kD));
  state.SetLabel("eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
                 std::to_string(EIGEN_MINOR_VERSION));
}
#endif

#if defined(MICROATTN_BENCH_OPENBLAS)
void bm_a1_openblas(benchmark::State& state) {
  A1Data d;
  std::vector<float> s(kBlock * kT);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kD));
  const int ld = static_cast<int>(kQDim);
  for (auto _ : state) {
    for (std::size_t h = 0; h < kH; ++h) {
      for (std::size_t r0 = 0; r0 < kT; r0 += kBlock) {
        const std::size_t br = std::min(kBlock, kT - r0), nk = r0 + br;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(br), static_cast<int>(nk),
                    static_cast<int>(kD), 1.0f, d.q.data() + r0 * kQDim + h * kD, ld, d.k.data() + h * kD, ld,
                    0.0f, s.data(), static_cast<int>(kT));
        for (std::size_t i = 0; i < br; ++i) softmax_row(s.data() + i * kT, nk, r0 + i, scale);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(br), static_cast<int>(kD),
                    static_cast<int>(nk), 1.0f, s.data(), static_cast<int>(kT), d.v.data() + h * kD, ld, 0.0f,
                    d.out.data() + r0 * kQDim + h * kD, ld);
      }
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, attn_flops(kT, kH, kD));
  state.SetLabel(std::string("openblas 1 thread, ") + openblas_get_config());
}
#endif

}  // namespace

void register_attn_benchmarks() {
  benchmark::RegisterBenchmark("A1", bm_a1<microattn::DefaultArch>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("A1_scalar", bm_a1<microattn::ScalarArch>)->Unit(benchmark::kMillisecond);
#if defined(MICROATTN_BENCH_EIGEN)
  benchmark::RegisterBenchmark("A1_eigen", bm_a1_eigen)->Unit(benchmark::kMillisecond);
#endif
#if defined(MICROATTN_BENCH_OPENBLAS)
  openblas_set_num_threads(1);
  benchmark::RegisterBenchmark("A1_openblas", bm_a1_openblas)->Unit(benchmark::kMillisecond);
#endif
}

}  // namespace microattn_bench
