// f32_gemm (the projection GEMM) and its micro-kernel against a double reference, around every
// blocking boundary (kMR, kNR, kKC, kMC), both weight layouts, bias, and the key-tile store.
#include <cmath>
#include <cstddef>

#include "microattn/kernels/f32_gemm.hpp"
#include "support/check.hpp"
#include "support/rng.hpp"
#include "support/unit.hpp"

namespace {

using microattn_test::for_each_arch;

constexpr std::size_t kMaxM = 200, kMaxN = 70, kMaxK = 300;
float g_a[kMaxM * kMaxK], g_b[kMaxK * kMaxN], g_bias[kMaxN], g_c[kMaxM * (kMaxN + 3)];
double g_ref[kMaxM * kMaxN];

template <class A>
void check_gemm(std::size_t M, std::size_t N, std::size_t K, bool b_trans, bool bias) {
  static float pack[microattn::kernels::gemm_pack_floats<A>()];
  microattn_test::Rng rng(M * 10007 + N * 101 + K + (b_trans ? 1 : 0));
  rng.fill(g_a, M * K, -1, 1);
  rng.fill(g_b, K * N, -1, 1);
  rng.fill(g_bias, N, -1, 1);
  const std::size_t ldc = N + 3;  // a row stride wider than the row
  for (std::size_t i = 0; i < M * ldc; ++i) g_c[i] = 12345.0f;
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) {
      double acc = bias ? g_bias[n] : 0.0;
      for (std::size_t k = 0; k < K; ++k)
        acc += double(g_a[m * K + k]) * (b_trans ? g_b[n * K + k] : g_b[k * N + n]);
      g_ref[m * N + n] = acc;
    }
  microattn::kernels::f32_gemm<A>(M, N, K, g_a, K, g_b, b_trans ? K : N, b_trans,
                                  bias ? g_bias : nullptr, microattn::kernels::StoreRowMajor{g_c, ldc},
                                  pack);
  double err = 0;
  bool pad_ok = true;
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      const double d = std::fabs(g_c[m * ldc + n] - g_ref[m * N + n]);
      err = d > err ? d : err;
    }
    for (std::size_t n = N; n < ldc && m + 1 < M; ++n) pad_ok = pad_ok && g_c[m * ldc + n] == 12345.0f;
  }
  // K products of magnitude <= 1 and a bias: error <= K eps (sqrt(K) typical), with 4x margin.
  EXPECT_LE(err, microattn_test::tolerance(K + 1, 1.0))
      << A::name() << " M=" << M << " N=" << N << " K=" << K << " trans=" << b_trans;
  EXPECT_TRUE(pad_ok) << A::name() << " wrote outside its columns M=" << M << " N=" << N;
}

TEST(F32Gemm, BlockingBoundaries) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Tl = microattn::internal::Tiles<A>;
    const std::size_t ms[] = {1, Tl::kMR - 1, Tl::kMR, Tl::kMR + 1, Tl::kMC + 1, kMaxM};
    const std::size_t ns[] = {1, Tl::kNR - 1, Tl::kNR, Tl::kNR + 1, 2 * Tl::kNR + 1, kMaxN};
    const std::size_t ks[] = {1, 7, Tl::kKC, Tl::kKC + 1, kMaxK};
    for (std::size_t m : ms)
      for (std::size_t n : ns)
        for (std::size_t k : ks) {
          if (m < 1 || m > kMaxM || n > kMaxN || k > kMaxK) continue;
          check_gemm<A>(m, n, k, false, false);
          check_gemm<A>(m, n, k, true, true);
        }
  });
}

}  // namespace
