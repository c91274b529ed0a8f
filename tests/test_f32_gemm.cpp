// SPDX-License-Identifier: Apache-2.0
// f32_gemm (the projection GEMM) and its micro-kernel against a double reference, around every
// blocking boundary (kMR, kNR, kKC, kMC), every weight layout and bias; the decode step's
// f32_gemv in every layout; pack_weight_panels.
#include <cmath>
#include <cstddef>

#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/f32_gemv.hpp"
#include "microattn/weights.hpp"
#include "support/check.hpp"
#include "support/rng.hpp"
#include "support/unit.hpp"

namespace {

using microattn::WeightLayout;
using microattn_test::all_sentinel;
using microattn_test::fill_sentinel;
using microattn_test::for_each_arch;

constexpr std::size_t kMaxM = 200, kMaxN = 70, kMaxK = 300;
constexpr std::size_t kMaxNPanel = (kMaxN + 15) / 16 * 16;
float g_a[kMaxM * kMaxK], g_b[kMaxK * kMaxN], g_bs[kMaxK * kMaxNPanel + 16], g_bias[kMaxN],
    g_c[kMaxM * (kMaxN + 3)];
double g_ref[kMaxM * kMaxN];

const char* layout_name(WeightLayout l) {
  return l == WeightLayout::kInOut ? "kInOut" : l == WeightLayout::kOutIn ? "kOutIn" : "kPanel16";
}

/// Stores the logical K x N matrix g_b ([K][N]) in `layout` into g_bs; returns the ldb the
/// kernels take (row stride, or the panel stride for kPanel16). Panel slots past N hold NaN,
/// so a kernel that reads them fails.
std::size_t store_b(WeightLayout layout, std::size_t N, std::size_t K) {
  if (layout == WeightLayout::kInOut) {
    for (std::size_t i = 0; i < K * N; ++i) g_bs[i] = g_b[i];
    return N;
  }
  if (layout == WeightLayout::kOutIn) {
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t n = 0; n < N; ++n) g_bs[n * K + k] = g_b[k * N + n];
    return K;
  }
  const std::size_t np = (N + 15) / 16 * 16;
  for (std::size_t i = 0; i < K * np; ++i) g_bs[i] = NAN;
  EXPECT_EQ(microattn::pack_weight_panels(g_b, WeightLayout::kInOut, K, N, g_bs),
            microattn::Status::kOk);
  for (std::size_t n = N; n < np; ++n)  // pack_weight_panels zeroes the padding: poison it
    for (std::size_t k = 0; k < K; ++k) g_bs[(n / 16) * K * 16 + k * 16 + n % 16] = NAN;
  return K * 16;
}

template <class A>
void check_gemm(std::size_t M, std::size_t N, std::size_t K, WeightLayout layout, bool bias) {
  static float pack[microattn::kernels::gemm_pack_floats<A>()];
  microattn_test::Rng rng(M * 10007 + N * 101 + K + static_cast<std::size_t>(layout));
  rng.fill(g_a, M * K, -1, 1);
  rng.fill(g_b, K * N, -1, 1);
  rng.fill(g_bias, N, -1, 1);
  const std::size_t ldb = store_b(layout, N, K);
  const std::size_t ldc = N + 3;  // a row stride wider than the row
  fill_sentinel(g_c, M * ldc);
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) {
      double acc = bias ? g_bias[n] : 0.0;
      for (std::size_t k = 0; k < K; ++k) acc += double(g_a[m * K + k]) * g_b[k * N + n];
      g_ref[m * N + n] = acc;
    }
  microattn::kernels::f32_gemm<A>(M, N, K, g_a, K, g_bs, ldb, layout, bias ? g_bias : nullptr,
                                  microattn::kernels::StoreRowMajor{g_c, ldc}, pack);
  double err = 0;
  bool pad_ok = true;
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      const double d = std::fabs(g_c[m * ldc + n] - g_ref[m * N + n]);
      err = d <= err ? err : d;  // NaN propagates as a failure
    }
    if (m + 1 < M) pad_ok = pad_ok && all_sentinel(g_c + m * ldc + N, ldc - N);
  }
  // K products of magnitude <= 1 and a bias: error <= K eps (sqrt(K) typical), with 4x margin.
  EXPECT_LE(err, microattn_test::tolerance(K + 1, 1.0))
      << A::name() << " M=" << M << " N=" << N << " K=" << K << " " << layout_name(layout);
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
          check_gemm<A>(m, n, k, WeightLayout::kInOut, false);
          check_gemm<A>(m, n, k, WeightLayout::kOutIn, true);
          check_gemm<A>(m, n, k, WeightLayout::kPanel16, k % 2 == 1);
        }
  });
}

// A's rows a multiple of 4 KiB apart (lda 1024): gemm_weights computes a tile of more than 8
// rows (AVX-512's 12) as two calls of half as many. The result must be the same bits as with the
// same A at a row stride that is not split (lda 1040), and right against the double reference:
// rows dropped, shifted or computed twice by the split fail it. The two M end on a tail tile of
// more than half a tile and one of less; N has whole panels and a partial one (the edge path); a
// bias (added by the first depth block only) and two depth blocks.
TEST(F32Gemm, RowsFourKibApart) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Tl = microattn::internal::Tiles<A>;
    constexpr std::size_t kLda = 1024, kPad = 1040;
    static float pack[microattn::kernels::gemm_pack_floats<A>()];
    static float c_pad[kMaxM * kMaxN];
    const std::size_t N = 2 * Tl::kNR + 3, K = Tl::kKC + 9;
    for (const std::size_t M : {3 * Tl::kMR - 1, 2 * Tl::kMR + Tl::kMR / 2 - 1}) {
      // A at stride kPad in g_a, then the same rows moved down to stride kLda.
      if ((M - 1) * kPad + K > kMaxM * kMaxK || N > kMaxN || K > kMaxK) {
        ADD_FAILURE() << A::name() << " shape over the test's buffers: M=" << M << " N=" << N;
        return;
      }
      microattn_test::Rng rng(M * 4096 + N);
      rng.fill(g_b, K * N, -1, 1);
      rng.fill(g_bias, N, -1, 1);
      for (WeightLayout layout : {WeightLayout::kInOut, WeightLayout::kPanel16}) {
        microattn_test::Rng ra(M + static_cast<std::size_t>(layout));
        for (std::size_t m = 0; m < M; ++m) ra.fill(g_a + m * kPad, K, -1, 1);
        const std::size_t ldb = store_b(layout, N, K);
        fill_sentinel(g_c, M * N + 1);
        fill_sentinel(c_pad, M * N + 1);
        microattn::kernels::f32_gemm<A>(M, N, K, g_a, kPad, g_bs, ldb, layout, g_bias,
                                        microattn::kernels::StoreRowMajor{c_pad, N}, pack);
        for (std::size_t m = 0; m < M; ++m)  // down to stride kLda (first row first)
          for (std::size_t k = 0; k < K; ++k) g_a[m * kLda + k] = g_a[m * kPad + k];
        microattn::kernels::f32_gemm<A>(M, N, K, g_a, kLda, g_bs, ldb, layout, g_bias,
                                        microattn::kernels::StoreRowMajor{g_c, N}, pack);
        std::size_t differ = 0;
        double err = 0;
        for (std::size_t m = 0; m < M; ++m)
          for (std::size_t n = 0; n < N; ++n) {
            differ += g_c[m * N + n] != c_pad[m * N + n];
            double acc = g_bias[n];
            for (std::size_t k = 0; k < K; ++k) acc += double(g_a[m * kLda + k]) * g_b[k * N + n];
            const double d = std::fabs(g_c[m * N + n] - acc);
            err = d <= err ? err : d;  // NaN propagates as a failure
          }
        EXPECT_EQ(differ, std::size_t{0}) << A::name() << " M=" << M << " " << layout_name(layout);
        // As check_gemm: K products of magnitude <= 1 and a bias.
        EXPECT_LE(err, microattn_test::tolerance(K + 1, 1.0))
            << A::name() << " M=" << M << " " << layout_name(layout);
        EXPECT_EQ(g_c[M * N], microattn_test::kSentinel) << A::name() << " wrote past C";
      }
    }
  });
}

// The panel gemm_weights prefetches while it computes one: for every panel in its order (depth
// blocks within a column panel, listed here), the strips of the next one in the list, each
// inside the weight matrix's K x N elements; none after the last, and none for kPanel16
// (contiguous panels).
TEST(F32Gemm, NextPanelStrips) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Tl = microattn::internal::Tiles<A>;
    using microattn::kernels::detail::next_panel_strips;
    const std::size_t ks[] = {1, Tl::kKC, Tl::kKC + 1, 3 * Tl::kKC - 5};
    const std::size_t ns[] = {1, Tl::kNR, Tl::kNR + 3, 4 * Tl::kNR};
    for (std::size_t K : ks)
      for (std::size_t N : ns)
        for (WeightLayout layout : {WeightLayout::kInOut, WeightLayout::kOutIn}) {
          const bool inout = layout == WeightLayout::kInOut;
          const std::size_t ldb = inout ? N + 5 : K + 3;  // strides wider than the rows
          std::size_t pcs[16], jcs[16], n = 0;            // the panels, in the GEMM's order
          for (std::size_t jc = 0; jc < N; jc += Tl::kNR)
            for (std::size_t pc = 0; pc < K; pc += Tl::kKC) pcs[n] = pc, jcs[n] = jc, ++n;
          for (std::size_t i = 0; i < n; ++i) {
            const auto s = next_panel_strips<A>(layout, K, N, ldb, pcs[i], jcs[i]);
            if (i + 1 == n) {
              EXPECT_EQ(s.count, 0u) << A::name() << " K=" << K << " N=" << N << ": the last";
              continue;
            }
            const std::size_t pc = pcs[i + 1], jc = jcs[i + 1];
            const std::size_t kc = K - pc < Tl::kKC ? K - pc : Tl::kKC;
            const std::size_t nr = N - jc < Tl::kNR ? N - jc : Tl::kNR;
            // [in][out]: kc rows of nr columns; [out][in]: nr columns of kc rows.
            EXPECT_EQ(s.first, inout ? pc * ldb + jc : jc * ldb + pc)
                << A::name() << " " << layout_name(layout) << " K=" << K << " N=" << N << " panel "
                << i;
            EXPECT_EQ(s.count, inout ? kc : nr) << A::name() << " K=" << K << " N=" << N;
            EXPECT_EQ(s.elems, inout ? nr : kc) << A::name() << " K=" << K << " N=" << N;
            EXPECT_EQ(s.stride, ldb);
            const std::size_t last = s.first + (s.count - 1) * s.stride;
            EXPECT_LE(last % ldb + s.elems, inout ? N : K) << "a strip past its row";
            EXPECT_LT(last / ldb, inout ? K : N) << "a strip past the matrix";
          }
          const auto p = next_panel_strips<A>(WeightLayout::kPanel16, K, N, ldb, 0, 0);
          EXPECT_EQ(p.count, 0u) << "kPanel16 panels are contiguous";
        }
  });
}

// Panel-aligned widths of the layer (every head a whole number of panels), where kNR == 16
// arches use the panels in place, and widths that split a panel between GEMM column blocks.
TEST(F32Gemm, PanelLayoutWidths) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    const std::size_t ns[] = {16, 32, 48, 64, 8, 24, 40};
    for (std::size_t n : ns) {
      check_gemm<A>(13, n, 37, WeightLayout::kPanel16, true);
      check_gemm<A>(7, n, microattn::internal::Tiles<A>::kKC + 5, WeightLayout::kPanel16, false);
    }
  });
}

float g_x[kMaxK], g_y[kMaxN + 8];
double g_yref[kMaxN];

/// The decode step's matrix-vector product in each layout against a double reference; y past
/// N must stay untouched.
template <class A>
void check_gemv(std::size_t N, std::size_t K, WeightLayout layout, bool bias) {
  microattn_test::Rng rng(N * 7919 + K * 31 + static_cast<std::size_t>(layout) + (bias ? 5 : 0));
  rng.fill(g_x, K, -1, 1);
  rng.fill(g_b, K * N, -1, 1);
  rng.fill(g_bias, N, -1, 1);
  const std::size_t ldw = store_b(layout, N, K);
  fill_sentinel(g_y);
  for (std::size_t n = 0; n < N; ++n) {
    double acc = bias ? g_bias[n] : 0.0;
    for (std::size_t k = 0; k < K; ++k) acc += double(g_x[k]) * g_b[k * N + n];
    g_yref[n] = acc;
  }
  microattn::kernels::f32_gemv<A>(N, K, g_x, g_bs, ldw, layout, bias ? g_bias : nullptr, g_y);
  EXPECT_LE(microattn_test::max_diff(g_y, g_yref, N), microattn_test::tolerance(K + 1, 1.0))
      << A::name() << " N=" << N << " K=" << K << " " << layout_name(layout) << " bias=" << bias;
  EXPECT_TRUE(all_sentinel(g_y + N, 8))
      << A::name() << " f32_gemv wrote past N=" << N << " " << layout_name(layout);
}

TEST(F32Gemv, EveryLayoutAgainstDoubleReference) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    // N: below, at and around the panel width and the 4-row/vector unrolls; K: the depth unroll
    // of each kernel (4 rows, 2 vectors, 8 accumulators) with and without remainders; 172 (the
    // stories260K d_ff): a vector pair loop, then a single vector (AVX2) and a scalar tail.
    const std::size_t ns[] = {1, 3, 4, 5, 8, 15, 16, 17, 31, 32, 33, 64, kMaxN};
    const std::size_t ks[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64, 172, 255, kMaxK};
    for (std::size_t n : ns)
      for (std::size_t k : ks)
        for (WeightLayout l : {WeightLayout::kInOut, WeightLayout::kOutIn, WeightLayout::kPanel16})
          check_gemv<A>(n, k, l, (n + k) % 2 == 0);
  });
}

// pack_weight_panels: both source layouts give the same panels, padding is zero, bad
// arguments write nothing.
TEST(PackWeightPanels, LayoutsAndStatuses) {
  constexpr std::size_t in = 5, out = 21, np = 32;
  float a[in * out], b[in * out], pa[in * np], pb[in * np];
  for (std::size_t i = 0; i < in; ++i)
    for (std::size_t o = 0; o < out; ++o) a[i * out + o] = b[o * in + i] = float(i * 100 + o);
  static_assert(microattn::weight_floats(WeightLayout::kPanel16, in, out) == in * np, "panel size");
  static_assert(microattn::weight_floats(WeightLayout::kOutIn, in, out) == in * out, "dense size");
  ASSERT_EQ(microattn::pack_weight_panels(a, WeightLayout::kInOut, in, out, pa),
            microattn::Status::kOk);
  ASSERT_EQ(microattn::pack_weight_panels(b, WeightLayout::kOutIn, in, out, pb),
            microattn::Status::kOk);
  for (std::size_t o = 0; o < np; ++o)
    for (std::size_t i = 0; i < in; ++i) {
      const float want = o < out ? float(i * 100 + o) : 0.0f;
      EXPECT_EQ(pa[(o / 16) * in * 16 + i * 16 + o % 16], want) << "i=" << i << " o=" << o;
      EXPECT_EQ(pb[(o / 16) * in * 16 + i * 16 + o % 16], want) << "i=" << i << " o=" << o;
    }
  fill_sentinel(pb);
  using microattn::Status;
  EXPECT_EQ(microattn::pack_weight_panels(nullptr, WeightLayout::kInOut, in, out, pb),
            Status::kNullPointer);
  EXPECT_EQ(microattn::pack_weight_panels(a, WeightLayout::kInOut, in, out, nullptr),
            Status::kNullPointer);
  EXPECT_EQ(microattn::pack_weight_panels(a, WeightLayout::kInOut, 0, out, pb),
            Status::kBadArgument);
  EXPECT_EQ(microattn::pack_weight_panels(a, WeightLayout::kInOut, in, 0, pb),
            Status::kBadArgument);
  EXPECT_EQ(microattn::pack_weight_panels(a, WeightLayout::kPanel16, in, out, pb),
            Status::kBadArgument);
  EXPECT_EQ(microattn::pack_weight_panels(pa, WeightLayout::kInOut, in, out, pa + 3),
            Status::kOverlap);
  EXPECT_TRUE(all_sentinel(pb));
}

}  // namespace
