// SPDX-License-Identifier: Apache-2.0
// Integer compute (Compute::kInt8): the run-time quantiser of activation rows, the qd8 kernels'
// int32 sums (exact: equal to an int64 reference bit for bit), their fp32 epilogue against the
// double reference on the dequantised operands, and the layers against the double reference
// run on the quantised inputs of every projection and the dequantised weights (tight fp32
// tolerance), plus the error of the whole option against the fp32 layer, measured and bounded.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "microattn/microattn.hpp"
#include "reference/attention_ref.hpp"
#include "reference/rope_ref.hpp"
#include "support/check.hpp"
#include "support/random_weights.hpp"
#include "support/rng.hpp"
#include "support/rope.hpp"
#include "support/unit.hpp"

namespace {

using microattn::Bias;
using microattn::Compute;
using microattn::Config;
using microattn::KvAttention;
using microattn::MultiHeadAttention;
using microattn::Status;
using microattn::WeightLayout;
using microattn::WeightType;
using microattn::kernels::qd8_row_bytes;
using microattn::kernels::Qd8Rows;
using microattn_test::for_each_arch;
using microattn_test::quick_cap;
using microattn_test::report;

/// Value k of a quantised row on arch A (Qd8Rows).
template <class A>
int value_at(const std::int8_t* row, std::size_t k) {
  return microattn::kernels::qd8_value<A>(row, k);
}
/// for_each_arch, and in an AVX-512 build also AVX2's arch, in an AVX build SSE 4.2's: their
/// integer kernels (pmaddubsw on 32- and 16-byte vectors) otherwise run only in the x86-avx2
/// preset, on AVX2 hosts and in the SSE test binary (tests/CMakeLists.txt).
template <class F>
void for_each_qd8_arch(F&& f) {
  for_each_arch(f);
#if MICROATTN_HAS_XSIMD && defined(__AVX512F__) && defined(__FMA__) && \
    !defined(MICROATTN_FORCE_SCALAR)
  f(xsimd::fma3<xsimd::avx2>{});
#endif
#if MICROATTN_HAS_XSIMD && defined(__AVX__) && defined(__SSE4_2__) && \
    !defined(MICROATTN_FORCE_SCALAR)
  f(xsimd::sse4_2{});
#endif
}

/// Bytes of the largest quantised row of K values on any arch (8 per group of 4).
constexpr std::size_t row_bytes(std::size_t K) { return (K + 3) / 4 * 8; }

// ---------------------------------------------------------------------------------------------
// The path

/// The integer path each build must have compiled (a build that lost its flags would pass every
/// other test on the plain C++ path).
TEST(Qd8Kernels, ExpectedIntegerPath) {
#if defined(MICROATTN_EXPECT_SDOT) && !defined(MICROATTN_INTRIN_SDOT)
  ADD_FAILURE() << "built for FEAT_DotProd, but the SDOT kernels are not compiled";
#endif
#if defined(MICROATTN_EXPECT_I8MM) && !defined(MICROATTN_INTRIN_I8MM)
  ADD_FAILURE() << "built for FEAT_I8MM, but the SMMLA kernels are not compiled";
#endif
#if defined(MICROATTN_EXPECT_I8MM) && MICROATTN_HAS_XSIMD && !defined(MICROATTN_FORCE_SCALAR)
  EXPECT_TRUE(microattn::kernels::Qd8Params<microattn::DefaultArch>::kI8mm);
#endif
#if defined(__ARM_FEATURE_DSP) && defined(__arm__)
  EXPECT_TRUE(microattn::kernels::Qd8Params<microattn::ScalarArch>::kDsp);
#endif
#if defined(__ARM_NEON) && MICROATTN_HAS_XSIMD && !defined(MICROATTN_FORCE_SCALAR)
  EXPECT_TRUE(microattn::kernels::Qd8Params<microattn::DefaultArch>::kNeon);  // armv7 too
#endif
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && !defined(MICROATTN_FORCE_SCALAR)
  EXPECT_TRUE(microattn::kernels::Qd8Params<microattn::DefaultArch>::kVnni);
#endif
#if defined(__AVX2__) && !defined(__AVX512F__) && !defined(MICROATTN_FORCE_SCALAR)
  EXPECT_TRUE(microattn::kernels::Qd8Params<microattn::DefaultArch>::kAvx2);
#endif
#if defined(__AVX512BW__) && !defined(__AVX512VNNI__) && !defined(MICROATTN_FORCE_SCALAR)
  EXPECT_TRUE(microattn::kernels::Qd8Params<microattn::DefaultArch>::kAvx2);  // 32-byte pmaddubsw
#endif
#if defined(__SSSE3__) && !defined(__AVX__) && !defined(MICROATTN_FORCE_SCALAR)
  EXPECT_TRUE(microattn::kernels::Qd8Params<microattn::DefaultArch>::kSsse3);
#endif
#if defined(MICROATTN_EXPECT_X86_ARCH)  // the x86 test binaries' own -march (tests/CMakeLists.txt)
  EXPECT_STREQ(microattn::arch_name<>(), MICROATTN_EXPECT_X86_ARCH);
#endif
#if MICROATTN_HAS_MVE
  EXPECT_TRUE(microattn::kernels::Qd8Params<microattn::MveArch>::kHelium);
#endif
  EXPECT_FALSE(microattn::kernels::Qd8Params<microattn::ScalarArch>::kVnni);
}

// ---------------------------------------------------------------------------------------------
// The quantiser

constexpr std::size_t kRowMax = 1100;
float g_row[kRowMax];
std::int8_t g_qrow[row_bytes(kRowMax)];

/// Checks the quantiser's contract on x[0 .. K): scale = max |x| / 127, values in -127 .. 127,
/// |x - scale v| <= scale / 2 (+ 2^-20 relative: the rounding of 127 / max |x| and of the
/// product), zero values up to the padded length.
template <class A>
void check_row(std::size_t K, const char* what) {
  const float s = microattn::kernels::qd8_quantize_row<A>(K, g_row, g_qrow);
  float amax = 0;
  for (std::size_t k = 0; k < K; ++k)
    amax = std::fabs(g_row[k]) > amax ? std::fabs(g_row[k]) : amax;
  // Within an ulp (of a subnormal scale too), not equal: -Ofast may divide this test's way
  // by a reciprocal.
  const double s_ref = double(amax) / 127.0,
               ulp = s_ref * 1.2e-7 > 1.5e-45 ? s_ref * 1.2e-7 : 1.5e-45;
  EXPECT_LE(std::fabs(double(s) - s_ref), ulp) << A::name() << " " << what << " " << s;
  for (std::size_t k = 0; k < K; ++k) {
    const int v = value_at<A>(g_qrow, k);
    ASSERT_TRUE(v >= -127 && v <= 127) << A::name() << " " << what << " k " << k;
    EXPECT_LE(std::fabs(double(g_row[k]) - double(s) * v), double(s) * (0.5 + 1.0 / (1 << 20)))
        << A::name() << " " << what << " k " << k << " x " << g_row[k];
  }
  for (std::size_t k = K; k < (K + 3) / 4 * 4; ++k)
    EXPECT_EQ(value_at<A>(g_qrow, k), 0) << A::name() << " " << what << " padding";
}

TEST(Qd8Quantize, RowContract) {
  for_each_qd8_arch([&](auto arch) {
    using A = decltype(arch);
    microattn_test::Rng rng(3);
    for (std::size_t K : {std::size_t{1}, std::size_t{5}, std::size_t{16}, std::size_t{17},
                          std::size_t{64}, std::size_t{333}, kRowMax}) {
      rng.fill(g_row, K, -3.0f, 3.0f);
      check_row<A>(K, "uniform");
    }
    // Ties: 127 / 2 * (2 m + 1) / 127 hits x * 127 / max = m + 1/2 exactly for max 127 / 2.
    for (std::size_t k = 0; k < 40; ++k) g_row[k] = (float(k) - 20.0f) * 0.5f + 0.25f;
    g_row[40] = 63.5f;
    check_row<A>(41, "ties");
    // Subnormal and tiny rows: 127 / max overflows, the values are divided by the scale.
    for (std::size_t k = 0; k < 9; ++k) g_row[k] = float(k) * 1e-41f;
    check_row<A>(9, "subnormal");
    for (std::size_t k = 0; k < 9; ++k) g_row[k] = 0.0f;
    EXPECT_EQ(microattn::kernels::qd8_quantize_row<A>(9, g_row, g_qrow), 0.0f);
    for (std::size_t k = 0; k < 12; ++k) EXPECT_EQ(value_at<A>(g_qrow, k), 0);
    for (float bad :
         {microattn_test::from_bits(0x7f800000u), microattn_test::from_bits(0xff800000u),
          microattn_test::from_bits(0x7fc00000u)}) {
      for (std::size_t k = 0; k < 20; ++k) g_row[k] = 1.0f;
      g_row[19] = bad;
      EXPECT_TRUE(
          microattn_test::is_nan(microattn::kernels::qd8_quantize_row<A>(20, g_row, g_qrow)))
          << A::name();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// The kernels

constexpr std::size_t kM = 30, kN = 70, kK = quick_cap(70) == 70 ? 1100 : 530;
float g_a[kM * kK];
std::int8_t g_qa[kM * row_bytes(kK)];
float g_sa[kM];
std::int8_t g_w[microattn::weight_floats(WeightLayout::kPanel16, kK, kN)];
float g_ws[kN], g_bias[kN], g_c[kM * kN], g_c2[kM * kN], g_ones[kN];
std::int32_t g_ci[kM * kN];
std::int64_t g_r[kM * kN];
double g_cref[kM * kN];
alignas(64) float g_pack[16384];

/// B(k, n) of g_w in layout l (K x N).
int w_at(WeightLayout l, std::size_t K, std::size_t N, std::size_t k, std::size_t n) {
  if (l == WeightLayout::kInOut) return g_w[k * N + n];
  if (l == WeightLayout::kOutIn) return g_w[n * K + k];
  return g_w[(n / 16) * K * 16 + k * 16 + n % 16];
}

TEST(Qd8Kernels, IntegerSumsExactAndEpilogueEveryLayout) {
  static_assert(microattn::kernels::qd8_pack_floats<microattn::DefaultArch>() <= 16384 &&
                    microattn::kernels::qd8_pack_floats<microattn::ScalarArch>() <= 16384,
                "pack buffer too small");
  // K past one depth block (kKC bytes: 1024 on AVX-512, 512 scalar) on hosted runs; odd sizes
  // for the row, column and group tails.
  const std::size_t shapes[][3] = {{1, 1, 1},   {3, 17, 5},   {7, 53, 70}, {13, 32, 64},
                                   {2, 48, 33}, {kM, kN, kK}, {1, 70, kK}};
  for (float& v : g_ones) v = 1.0f;
  for_each_qd8_arch([&](auto arch) {
    using A = decltype(arch);
    std::uint64_t seed = 41;
    for (const auto& sh : shapes) {
      const std::size_t M = sh[0], N = sh[1], K = sh[2], ld = qd8_row_bytes<A>(K);
      microattn_test::Rng rng(seed++);
      rng.fill(g_a, M * K, -2.0f, 2.0f);
      rng.fill(g_ws, N, 0.001f, 0.02f);
      rng.fill(g_bias, N, -1.0f, 1.0f);
      // Weights at the ends of the int8 range included (the int16 pair sums must not saturate).
      for (std::size_t i = 0; i < microattn::weight_floats(WeightLayout::kPanel16, K, N); ++i)
        g_w[i] = static_cast<std::int8_t>(i % 7 == 0 ? (i % 2 ? 127 : -127)
                                                     : int(rng.uniform(-127.0f, 127.0f)));
      microattn::kernels::qd8_quantize_rows<A>(M, K, g_a, K, g_qa, ld, g_sa);
      const Qd8Rows a{g_qa, ld, g_sa};
      for (WeightLayout l : {WeightLayout::kInOut, WeightLayout::kOutIn, WeightLayout::kPanel16}) {
        const std::size_t ldb =
            l == WeightLayout::kInOut ? N : (l == WeightLayout::kOutIn ? K : K * 16);
        microattn::kernels::qd8_qc8w_gemm_i32<A>(M, N, K, a, g_w, ldb, l, g_ci, N, g_pack);
        std::size_t wrong = 0;
        for (std::size_t m = 0; m < M; ++m)
          for (std::size_t n = 0; n < N; ++n) {
            std::int64_t r = 0;
            for (std::size_t k = 0; k < K; ++k)
              r += std::int64_t{value_at<A>(g_qa + m * ld, k)} * w_at(l, K, N, k, n);
            wrong += r != g_ci[m * N + n];
            g_r[m * N + n] = r;
            g_cref[m * N + n] = double(g_sa[m]) * g_ws[n] * double(r) + g_bias[n];
          }
        EXPECT_EQ(wrong, 0u) << A::name() << " " << M << "x" << N << "x" << K << " layout "
                             << static_cast<int>(l);
        // The epilogue: a product of three rounded factors and a sum per depth block.
        const double tol = microattn_test::tolerance(8, microattn_test::max_abs(g_cref, M * N));
        for (std::size_t i = 0; i < M * N; ++i) g_c[i] = NAN;
        microattn::kernels::qd8_f32_qc8w_gemm<A>(M, N, K, a, g_w, ldb, l, g_ws, g_bias,
                                                 microattn::kernels::StoreRowMajor{g_c, N}, g_pack);
        EXPECT_LE(microattn_test::max_diff(g_c, g_cref, M * N), tol)
            << "gemm " << A::name() << " " << M << "x" << N << "x" << K << " layout "
            << static_cast<int>(l);
        // Rows [m0, M) alone give the bits the whole call gave them: a row's result does not
        // depend on its place in a micro-tile (the layers split rows over workers).
        for (std::size_t m0 = 1; m0 < M && m0 < 9; ++m0) {
          microattn::kernels::qd8_f32_qc8w_gemm<A>(
              M - m0, N, K, a.from(m0), g_w, ldb, l, g_ws, g_bias,
              microattn::kernels::StoreRowMajor{g_c2, N}, g_pack);
          EXPECT_EQ(std::memcmp(g_c2, g_c + m0 * N, (M - m0) * N * sizeof(float)), 0)
              << "rows from " << m0 << " " << A::name() << " " << M << "x" << N << "x" << K
              << " layout " << static_cast<int>(l);
        }
        for (std::size_t m = 0; m < M; ++m) {
          for (std::size_t n = 0; n < N; ++n) g_c[n] = NAN;
          // In two parts: any split of the columns gives the same bits as none.
          for (std::size_t p = 0; p < 2; ++p)
            microattn::kernels::qd8_f32_qc8w_gemv<A>(N, K, g_qa + m * ld, g_sa[m], g_w, ldb, l,
                                                     g_ws, g_bias, g_c, p, 2);
          EXPECT_LE(microattn_test::max_diff(g_c, g_cref + m * N, N), tol)
              << "gemv " << A::name() << " " << N << "x" << K << " layout " << static_cast<int>(l);
        }
        // The GEMV's integer sums bit for bit: with unit scales and no bias y is the sum itself,
        // exact in float while |sum| <= 127 * 127 * K < 2^24 (K <= 1040).
        if (K <= 1040) {
          std::size_t wrong_gemv = 0;
          for (std::size_t m = 0; m < M; ++m) {
            microattn::kernels::qd8_f32_qc8w_gemv<A>(N, K, g_qa + m * ld, 1.0f, g_w, ldb, l, g_ones,
                                                     nullptr, g_c);
            for (std::size_t n = 0; n < N; ++n)
              wrong_gemv += g_c[n] != static_cast<float>(g_r[m * N + n]);
          }
          EXPECT_EQ(wrong_gemv, 0u) << "gemv sums " << A::name() << " " << M << "x" << N << "x" << K
                                    << " layout " << static_cast<int>(l);
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// The same bits on every arch and build (docs/quantization.md, "The same bits on every target")
//
// Integer compute's floats are a fixed sequence of IEEE operations: the row quantiser (max |x|
// as bits, s = max / 127 and r = 127 / max by division, v = x * r rounded to nearest even,
// clamped to +-127; the tiny-max fallback divides each value by s, ties away), exact integer
// sums over the whole depth, and the epilogue (sa * (sb * float(sum))) + bias, nothing fused.
// Here they are spelled out with plain scalar code (each rounding through a volatile, so no
// contraction or -ffast-math rewrite can touch it), and Linear and Mlp with integer compute
// must give their bits on every arch the build has: AVX-512 VNNI or not, AVX2, SSE, NEON (SDOT,
// SMMLA, SMULL), Helium, the DSP and plain C++ kernels, any depth-block size. The inputs are
// dyadic numbers made with integer arithmetic, so every build and target feeds the same bits,
// and a hash of the outputs is checked against a constant: host and cross builds then agree
// with each other, not only with their own reference.

/// v rounded to a float by a store (never fused into what follows).
float rnd(float v) {
  volatile float t = v;
  return t;
}
/// p (a float of magnitude <= 2^22) rounded to the nearest integer, ties to even.
long round_half_even(float p) {
  const double f = std::floor(double(p)), d = double(p) - f;  // exact
  long r = static_cast<long>(f);
  if (d > 0.5 || (d == 0.5 && r % 2 != 0)) ++r;
  return r;
}
/// The rule of the tiny-max fallback (quantize_value): w / s rounded, ties away from zero.
int round_div_away(float w, float s) {
  if (!(s > 0.0f)) return 0;  // (a subnormal scale on a flush-to-zero FPU)
  const float r = rnd(w / rnd(s));
  const double a = std::fabs(double(r)), f = std::floor(a < 127.0 ? a : 127.0);
  const int q = static_cast<int>((a - f >= 0.5 && f < 127.0) ? f + 1.0 : f);
  return r < 0.0f ? -q : q;
}
/// The quantiser's contract for a row x[0 .. K): values into v, the scale returned.
float ref_quantize(std::size_t K, const float* x, int* v) {
  std::uint32_t m = 0;
  for (std::size_t k = 0; k < K; ++k) {
    const std::uint32_t u = microattn_test::to_bits(x[k]) & 0x7fffffffu;
    m = u > m ? u : m;
  }
  for (std::size_t k = 0; k < K; ++k) v[k] = 0;
  if (m >= 0x7f800000u) return microattn_test::from_bits(0x7fc00000u);  // a NaN or an infinity: NaN
  if (m == 0) return 0.0f;
  const float amax = microattn_test::from_bits(m), s = rnd(rnd(amax) / rnd(127.0f));
  const float inv = rnd(rnd(127.0f) / rnd(amax));
  const bool tiny = (microattn_test::to_bits(inv) & 0x7f800000u) == 0x7f800000u;
  for (std::size_t k = 0; k < K; ++k) {
    if (tiny) {
      v[k] = round_div_away(x[k], s);
    } else {
      const long r = round_half_even(rnd(x[k] * inv));
      v[k] = static_cast<int>(r > 127 ? 127 : (r < -127 ? -127 : r));
    }
  }
  return s;
}
/// The epilogue's contract: p = sa * (sb * float(sum)), then p + bias (bias null: p).
float ref_epilogue(float sa, float sb, std::int64_t sum, const float* bias) {
  const float p = rnd(sa * rnd(sb * static_cast<float>(static_cast<std::int32_t>(sum))));
  return bias ? rnd(p + *bias) : p;
}

// K past every arch's depth block on hosted runs (1 024 bytes on AVX-512 VNNI and AArch64, 512
// plain C++, 256 DSP), past the DSP's and plain C++'s under kQuick (Cortex-M RAM).
constexpr std::size_t kBitsMaxK = 1100, kBitsDeepK = microattn_test::kQuick ? 530 : kBitsMaxK;
constexpr std::size_t kBitsDM = 64, kBitsDH = 172, kBitsM = 19;
int g_bv[kBitsMaxK];
std::int8_t g_bq[kBitsMaxK * 24];  ///< logical weights q(k, n) at k * N + n
std::int8_t g_bq2[kBitsDM * kBitsDH], g_bq3[kBitsDH * kBitsDM];
std::int8_t g_bw[microattn::weight_floats(WeightLayout::kPanel16, kBitsMaxK, 32)];
std::int8_t g_bw2[microattn::weight_floats(WeightLayout::kPanel16, kBitsDM, kBitsDH)],
    g_bw3[microattn::weight_floats(WeightLayout::kPanel16, kBitsDH, kBitsDM)];
float g_bx[kBitsM * kBitsDeepK], g_by[kBitsM * kBitsDH], g_bref[kBitsM * kBitsDH],
    g_bh[kBitsM * kBitsDH], g_bu[kBitsM * kBitsDH];
float g_bs[kBitsDH], g_bb[kBitsDH], g_bs2[kBitsDH], g_bb2[kBitsDH], g_bs3[kBitsDM], g_bb3[kBitsDM];

/// y[M][N] = the contract's integer product of rows x[M][K] (row stride K) with q(k, n) at
/// q[k * N + n], column scales sb, bias (null: none).
void ref_qd8_linear(std::size_t M, std::size_t K, std::size_t N, const float* x,
                    const std::int8_t* q, const float* sb, const float* bias, float* y) {
  for (std::size_t m = 0; m < M; ++m) {
    const float sa = ref_quantize(K, x + m * K, g_bv);
    for (std::size_t n = 0; n < N; ++n) {
      std::int64_t sum = 0;
      for (std::size_t k = 0; k < K; ++k) sum += std::int64_t{g_bv[k]} * q[k * N + n];
      EXPECT_TRUE(sum >= INT32_MIN && sum <= INT32_MAX) << "test data: sums fit int32";
      y[m * N + n] = ref_epilogue(sa, sb[n], sum, bias ? bias + n : nullptr);
    }
  }
}

/// Dyadic test data from integers (the same bits on every build): rows of x in steps of 1/256
/// with outliers, a zero row and a row of ties (half-integers with max 127: x * 127 / max hits
/// m + 1/2 exactly), weights in -127 .. 127 (the ends included), scales of 6 bits, biases.
void bits_data(std::uint64_t seed, std::size_t M, std::size_t K, std::size_t N, float* x,
               std::int8_t* q, float* sb, float* bias) {
  microattn_test::Rng rng(seed);
  auto in = [&](int lo, int hi) {
    return lo + static_cast<int>(rng.next_u32() % static_cast<std::uint32_t>(hi - lo + 1));
  };
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k = 0; k < K; ++k) {
      float v = static_cast<float>(in(-1000, 1000)) / 256.0f;
      if (m % 3 == 1 && k % 37 == 5) v *= 64.0f;  // outliers
      if (m == 2) v = 0.0f;
      if (m == 3) v = static_cast<float>(in(-254, 254)) / 2.0f;  // ties
      x[m * K + k] = v;
    }
  if (M > 3) x[3 * K] = 127.0f;
  for (std::size_t i = 0; i < K * N; ++i)
    q[i] = static_cast<std::int8_t>(i % 11 == 0 ? (i % 2 ? 127 : -127) : in(-127, 127));
  for (std::size_t n = 0; n < N; ++n) {
    sb[n] = static_cast<float>(in(64, 127)) / 8192.0f;
    bias[n] = static_cast<float>(in(-1000, 1000)) / 512.0f;
  }
}

/// q(k, n) (at q[k * N + n]) stored in layout l as weight arrays are (K inputs, N outputs).
void to_layout(const std::int8_t* q, std::size_t K, std::size_t N, WeightLayout l, std::int8_t* w) {
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t n = 0; n < N; ++n)
      w[microattn_test::weight_index(l, K, N, k, n)] = q[k * N + n];
  if (l == WeightLayout::kPanel16)
    for (std::size_t n = N; n % 16 != 0; ++n)
      for (std::size_t k = 0; k < K; ++k) w[(n / 16) * K * 16 + k * 16 + n % 16] = 0;
}

/// FNV-1a of the bits of n floats, continuing from h.
std::uint32_t fnv_bits(const float* y, std::size_t n, std::uint32_t h) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t u = microattn_test::to_bits(y[i]);
    for (int b = 0; b < 32; b += 8) h = (h ^ ((u >> b) & 0xffu)) * 16777619u;
  }
  return h;
}

float g_bqx[kBitsMaxK];
int g_bqv[kBitsMaxK];

TEST(Qd8Bits, QuantiserEqualsSpelledOutRule) {
  float* x = g_bqx;
  int* v = g_bqv;
  for_each_qd8_arch([&](auto arch) {
    using A = decltype(arch);
    std::size_t wrong = 0, cases = 0;
    for (std::size_t K : {std::size_t{1}, std::size_t{3}, std::size_t{16}, std::size_t{17},
                          std::size_t{64}, std::size_t{172}, std::size_t{333}, kBitsMaxK}) {
      for (int kind = 0; kind < 5; ++kind) {
        microattn_test::Rng rng(K * 10 + kind);
        for (std::size_t k = 0; k < K; ++k) {
          const float u = rng.uniform(-3.0f, 3.0f);
          x[k] = kind == 0   ? u
                 : kind == 1 ? u * u * u * u * u  // heavy tails
                 : kind == 2 ? static_cast<float>(static_cast<int>(u * 42.0f)) * 0.5f  // ties
                 : kind == 3 ? u * 1e-20f                                              // small
                             : u * 1e-38f;  // max so small that 127 / max overflows
        }
        if (kind == 2) x[K / 2] = 63.5f;  // max 63.5: x * 2 is exact, half-integers tie
        const float s = microattn::kernels::qd8_quantize_row<A>(K, x, g_qrow);
        const float s_ref = ref_quantize(K, x, v);
        ++cases;
        bool ok = microattn_test::to_bits(s) == microattn_test::to_bits(s_ref);
        for (std::size_t k = 0; k < K; ++k) ok = ok && value_at<A>(g_qrow, k) == v[k];
        wrong += !ok;
        EXPECT_TRUE(ok) << A::name() << " K " << K << " kind " << kind << " scale " << s << " vs "
                        << s_ref;
      }
    }
    EXPECT_EQ(wrong, 0u) << A::name() << " of " << cases;
  });
}

template <class A, std::size_t K, std::size_t N, Bias kBias = Bias::kYes>
void check_linear_bits(std::uint64_t seed, std::uint32_t* hash) {
  using LCfg = microattn::LinearConfig<K, N, kBias, WeightType::kInt8, Compute::kInt8>;
  static microattn::Linear<LCfg, A, 8> lin;  // 8 rows at a time: M = 19 runs 8, 8, 3
  constexpr std::size_t kM = kBitsM;
  static_assert(K <= kBitsDeepK && N <= 24 && K * N <= sizeof g_bq, "test buffers");
  bits_data(seed, kM, K, N, g_bx, g_bq, g_bs, g_bb);
  ref_qd8_linear(kM, K, N, g_bx, g_bq, g_bs, kBias == Bias::kYes ? g_bb : nullptr, g_bref);
  for (WeightLayout l : {WeightLayout::kInOut, WeightLayout::kOutIn, WeightLayout::kPanel16}) {
    to_layout(g_bq, K, N, l, g_bw);
    microattn::LinearWeights<LCfg> w;
    w.layout = l, w.w = g_bw, w.s = g_bs, w.b = g_bb;
    ASSERT_EQ(lin.set_weights(w), Status::kOk);
    for (std::size_t M : {std::size_t{1}, std::size_t{4}, kM}) {  // the GEMV, one GEMM call, 3
      for (std::size_t i = 0; i < M * N; ++i) g_by[i] = NAN;
      ASSERT_EQ(lin.forward(g_bx, M, g_by), Status::kOk);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < M * N; ++i)
        wrong += microattn_test::to_bits(g_by[i]) != microattn_test::to_bits(g_bref[i]);
      EXPECT_EQ(wrong, 0u) << A::name() << " Linear " << K << " -> " << N
                           << (kBias == Bias::kYes ? " + bias, " : ", ") << M << " rows, layout "
                           << static_cast<int>(l) << ": y " << g_by[0] << " vs " << g_bref[0];
    }
    // Each row alone (decode) gives the bits it has among others (prefill).
    for (std::size_t m = 0; m < kM; ++m) {
      ASSERT_EQ(lin.forward(g_bx + m * K, 1, g_by), Status::kOk);
      EXPECT_EQ(std::memcmp(g_by, g_bref + m * N, N * sizeof(float)), 0)
          << A::name() << " row " << m << " alone, layout " << static_cast<int>(l);
    }
  }
  if (hash) *hash = fnv_bits(g_bref, kM * N, *hash);
}

TEST(Qd8Bits, LinearEqualsSpelledOutProduct) {
  std::uint32_t hash = 2166136261u;  // FNV-1a basis: over the shapes every build runs
  check_linear_bits<microattn::ScalarArch, 300, 24>(5, &hash);
  check_linear_bits<microattn::ScalarArch, 64, 17>(6, &hash);
  check_linear_bits<microattn::ScalarArch, 172, 20, Bias::kNo>(9, &hash);
  // The reference's bits from integer-made inputs: one constant on every build and target.
  EXPECT_EQ(hash, 1374096608u) << "the spelled-out product's bits differ from the other builds'";
  for_each_qd8_arch([&](auto arch) {
    using A = decltype(arch);
    check_linear_bits<A, 300, 24>(5, nullptr);
    check_linear_bits<A, 64, 17>(6, nullptr);
    check_linear_bits<A, 172, 20, Bias::kNo>(9, nullptr);
    check_linear_bits<A, kBitsDeepK, 20>(7, nullptr);  // several depth blocks
    check_linear_bits<A, kBitsDeepK, 16, Bias::kNo>(10, nullptr);
    check_linear_bits<A, 5, 3>(8, nullptr);  // one partial group, partial panels
  });
}

/// An Mlp with integer compute (ReLU: act(x W_up + b) W_down + b; or SwiGLU: silu(x W_gate
/// (+ b)) (x W_up (+ b)) W_down (+ b)) against the spelled-out products, the activation the
/// library's f32_activate.
template <class A, microattn::Activation kAct, Bias kBias>
void check_mlp_bits(std::uint64_t seed, std::uint32_t* hash) {
  constexpr std::size_t DM = kBitsDM, DH = kBitsDH, kM = kBitsM;
  using MCfg = microattn::MlpConfig<DM, DH, kAct, kBias, WeightType::kInt8, Compute::kInt8>;
  constexpr bool kB = kBias == Bias::kYes;
  static microattn::Mlp<MCfg, A, 8> mlp;
  constexpr bool kGated = MCfg::kGated;
  // up: g_bq (DM x DH), gate: g_bq2, down: g_bq3 (DH x DM).
  bits_data(seed, kM, DM, DH, g_bx, g_bq, g_bs, g_bb);
  bits_data(seed + 1, 1, DM, DH, g_bh, g_bq2, g_bs2, g_bb2);
  bits_data(seed + 2, 1, DH, DM, g_bh, g_bq3, g_bs3, g_bb3);
  ref_qd8_linear(kM, DM, DH, g_bx, g_bq, g_bs, kB ? g_bb : nullptr, g_bu);
  if (kGated) ref_qd8_linear(kM, DM, DH, g_bx, g_bq2, g_bs2, kB ? g_bb2 : nullptr, g_bh);
  // The activation is fp32 (not integer compute's): the library's own on the reference's rows.
  if constexpr (!kGated) std::memcpy(g_bh, g_bu, sizeof(float) * kM * DH);
  microattn::kernels::f32_activate<kAct>(g_bh, kGated ? g_bu : nullptr, kM * DH);
  ref_qd8_linear(kM, DH, DM, g_bh, g_bq3, g_bs3, kB ? g_bb3 : nullptr, g_bref);
  for (WeightLayout l : {WeightLayout::kInOut, WeightLayout::kOutIn, WeightLayout::kPanel16}) {
    microattn::MlpWeights<MCfg> w;
    w.layout = l;
    to_layout(g_bq, DM, DH, l, g_bw);
    to_layout(g_bq2, DM, DH, l, g_bw2);
    to_layout(g_bq3, DH, DM, l, g_bw3);
    w.w_up = g_bw, w.s_up = g_bs, w.b_up = g_bb;
    w.w_gate = g_bw2, w.s_gate = g_bs2, w.b_gate = g_bb2;
    w.w_down = g_bw3, w.s_down = g_bs3, w.b_down = g_bb3;
    ASSERT_EQ(mlp.set_weights(w), Status::kOk);
    for (std::size_t M : {std::size_t{1}, std::size_t{5}, kM}) {
      for (std::size_t i = 0; i < M * DM; ++i) g_by[i] = NAN;
      ASSERT_EQ(mlp.forward(g_bx, M, g_by), Status::kOk);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < M * DM; ++i)
        wrong += microattn_test::to_bits(g_by[i]) != microattn_test::to_bits(g_bref[i]);
      EXPECT_EQ(wrong, 0u) << A::name() << " Mlp " << (kGated ? "SwiGLU" : "ReLU")
                           << (kB ? " + biases, " : ", ") << M << " rows, layout "
                           << static_cast<int>(l);
    }
  }
  if (hash) *hash = fnv_bits(g_bref, kM * DM, *hash);
}

TEST(Qd8Bits, MlpEqualsSpelledOutProducts) {
  // ReLU's hidden rows are exact functions of the products: one constant on every build. (SiLU's
  // exponential is fused where the target has an FMA: its bits are each build's own.)
  std::uint32_t hash = 2166136261u;
  check_mlp_bits<microattn::ScalarArch, microattn::Activation::kRelu, Bias::kYes>(21, &hash);
  EXPECT_EQ(hash, 246946638u) << "the spelled-out MLP's bits differ from the other builds'";
  for_each_qd8_arch([&](auto arch) {
    using A = decltype(arch);
    check_mlp_bits<A, microattn::Activation::kRelu, Bias::kYes>(21, nullptr);
    check_mlp_bits<A, microattn::Activation::kSwiGlu, Bias::kNo>(31, nullptr);  // LLaMA's
    check_mlp_bits<A, microattn::Activation::kSwiGlu, Bias::kYes>(32, nullptr);
  });
}

// ---------------------------------------------------------------------------------------------
// Layers

// d_head 16 (kPanel16 fits), GQA, every bias, OutDim != d_model, RoPE; the twin without W_O
// gives the attended heads the full layer's W_O multiplies.
constexpr std::size_t kT = quick_cap(70), kDM = 40, kOD = 48, kQD = 64;
using QdCfg = Config<kT, kDM, 4, 2, 16, Bias::kYes, WeightType::kInt8, Compute::kInt8,
                     microattn::OutDim{kOD}, microattn::Rope::kYes>;
using QdNoOCfg = Config<kT, kDM, 4, 2, 16, Bias::kYes, WeightType::kInt8, Compute::kInt8,
                        microattn::OutProj::kNo, microattn::Rope::kYes>;
using Q8Cfg = Config<kT, kDM, 4, 2, 16, Bias::kYes, WeightType::kInt8, microattn::OutDim{kOD},
                     microattn::Rope::kYes>;

microattn_test::QuantWeights<QdCfg> g_qw;
float g_x[kT * kDM], g_xq[kT * kDM], g_ctx[kT * kQD], g_ctxq[kT * kQD], g_y[kT * kOD],
    g_y8[kT * kOD];
double g_ref[kT * kQD], g_dctx[kT * kQD];
double g_scratch[microattn_ref::layer_scratch(kT, 4, 2, 16)];
std::int8_t g_q[row_bytes(kQD)];

/// rows of x (n wide) as the integer path sees them: each row quantised and dequantised.
template <class A>
void dequantised_rows(const float* x, std::size_t T, std::size_t n, float* out) {
  for (std::size_t t = 0; t < T; ++t) {
    const float s = microattn::kernels::qd8_quantize_row<A>(n, x + t * n, g_q);
    for (std::size_t k = 0; k < n; ++k) out[t * n + k] = s * float(value_at<A>(g_q, k));
  }
}

/// The layer checks for one way of running T tokens: ctx (the heads, from the twin without W_O)
/// against the reference on the dequantised x, and y against W_O on the dequantised heads.
template <class A>
void check_layer(const float* ctx, const float* y, std::size_t T, const char* way, int l) {
  const auto rc = microattn_test::rope_cfg(true, microattn::RopePairing::kHalfSplit, 0);
  dequantised_rows<A>(g_x, T, kDM, g_xq);
  auto ref = g_qw.ref(true);
  ref.wo = nullptr;
  ref.bo = nullptr;
  ref.d_out = 0;
  microattn_ref::layer_rope(ref, microattn_test::rope_ref_of(rc, 16), g_xq, T,
                            microattn::default_scale<QdCfg>(), g_ref, g_scratch);
  // The fp32 layer test's chain: d_model per projection, d_head per score, T per P·V row.
  const double chain = kDM + 2.0 * 16 + double(T) + 8;
  EXPECT_LE(microattn_test::max_diff(ctx, g_ref, T * kQD),
            microattn_test::tolerance(chain, microattn_test::max_abs(g_ref, T * kQD)))
      << A::name() << " heads, " << way << " T " << T << " layout " << l;
  dequantised_rows<A>(ctx, T, kQD, g_ctxq);
  for (std::size_t i = 0; i < T * kQD; ++i) g_dctx[i] = g_ctxq[i];
  microattn_ref::output(g_qw.ref(true), g_dctx, T, g_ref);
  EXPECT_LE(microattn_test::max_diff(y, g_ref, T * kOD),
            microattn_test::tolerance(kQD + 8, microattn_test::max_abs(g_ref, T * kOD)))
      << A::name() << " output, " << way << " T " << T << " layout " << l;
}

TEST(Int8Compute, LayerEqualsReferenceOnQuantisedInputs) {
  ASSERT_TRUE(g_qw.fill(9));
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    static MultiHeadAttention<QdCfg, A> mha;
    static MultiHeadAttention<QdNoOCfg, A> heads;
    static MultiHeadAttention<Q8Cfg, A> w8;
    const auto rc = microattn_test::rope_cfg(true, microattn::RopePairing::kHalfSplit, 0);
    for (std::size_t T : {std::size_t{1}, std::size_t{13}, kT}) {
      microattn_test::Rng rng(T);
      rng.fill(g_x, T * kDM, -1.0f, 1.0f);
      for (int l = 0; l < 3; ++l) {
        ASSERT_EQ(mha.set_weights(g_qw.view8<QdCfg>(l)), Status::kOk);
        ASSERT_EQ(heads.set_weights(g_qw.view8<QdNoOCfg>(l)), Status::kOk);
        ASSERT_EQ(mha.set_rope(rc), Status::kOk);
        ASSERT_EQ(heads.set_rope(rc), Status::kOk);
        ASSERT_EQ(heads.forward(g_x, T, g_ctx), Status::kOk);
        ASSERT_EQ(mha.forward(g_x, T, g_y), Status::kOk);
        check_layer<A>(g_ctx, g_y, T, "forward", l);
      }
      // The error of the option against the fp32-compute layer on the same int8 weights:
      // activations rounded to 1/254 of their row's largest value (half a step, relative
      // ~0.4 % per row) move the output by about 1 %: bounded at 3 %.
      ASSERT_EQ(w8.set_weights(g_qw.view8<Q8Cfg>(0)), Status::kOk);
      ASSERT_EQ(w8.set_rope(rc), Status::kOk);
      ASSERT_EQ(w8.forward(g_x, T, g_y8), Status::kOk);
      const double rel = microattn_test::rel_err(g_y, g_y8, T * kOD);
      EXPECT_LE(rel, 0.03) << A::name() << " T " << T;
      if (T == kT)
        report("[ qd8 ] layer output vs fp32 compute on the same int8 weights: rel %.4f (%s)\n",
               rel, A::name());
    }
  });
}

TEST(Int8Compute, KvPrefillDecodeChunksEqualReference) {
  ASSERT_TRUE(g_qw.fill(10));
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    constexpr std::size_t kChunk = microattn_test::kQuick ? 8 : kT;
    static KvAttention<QdCfg, A, kChunk> kv;
    static KvAttention<QdNoOCfg, A, kChunk> kvh;
    const auto rc = microattn_test::rope_cfg(true, microattn::RopePairing::kHalfSplit, 0);
    const std::size_t T = kT;
    microattn_test::Rng rng(77);
    rng.fill(g_x, T * kDM, -1.0f, 1.0f);
    for (int l = 0; l < 3; ++l) {
      ASSERT_EQ(kv.set_weights(g_qw.view8<QdCfg>(l)), Status::kOk);
      ASSERT_EQ(kvh.set_weights(g_qw.view8<QdNoOCfg>(l)), Status::kOk);
      for (int way = 0; way < 2; ++way) {
        kv.reset();
        kvh.reset();
        ASSERT_EQ(kv.set_rope(rc), Status::kOk);
        ASSERT_EQ(kvh.set_rope(rc), Status::kOk);
        if (way == 0) {  // prefill in chunks of at most kChunk
          for (std::size_t b = 0; b < T; b += kChunk) {
            const std::size_t n = T - b < kChunk ? T - b : kChunk;
            ASSERT_EQ(kvh.prefill(g_x + b * kDM, n, g_ctx + b * kQD), Status::kOk);
            ASSERT_EQ(kv.prefill(g_x + b * kDM, n, g_y + b * kOD), Status::kOk);
          }
        } else {  // token by token: the GEMV path
          for (std::size_t t = 0; t < T; ++t) {
            ASSERT_EQ(kvh.decode(g_x + t * kDM, g_ctx + t * kQD), Status::kOk);
            ASSERT_EQ(kv.decode(g_x + t * kDM, g_y + t * kOD), Status::kOk);
          }
        }
        check_layer<A>(g_ctx, g_y, T, way == 0 ? "prefill" : "decode", l);
      }
    }
  });
}

// Integer compute with the int8 cache (CacheType::kInt8): the scores against the cache are
// integer too (qd8_f32_qs8_scores; the kernel tests check them fp32-tight on the quantised
// queries). Here the layer's error from them, against the same layer with the fp32 cache, and
// prefill in chunks against decode token by token.
using QdKv8Cfg = Config<kT, kDM, 4, 2, 16, Bias::kYes, WeightType::kInt8, Compute::kInt8,
                        microattn::CacheType::kInt8, microattn::OutDim{kOD}, microattn::Rope::kYes>;
float g_yd[kT * kOD];

TEST(Int8Compute, Int8CacheIntegerScoresErrorMeasured) {
  ASSERT_TRUE(g_qw.fill(11));
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    constexpr std::size_t kChunk = microattn_test::kQuick ? 8 : kT;
    static KvAttention<QdKv8Cfg, A, kChunk> kv8;
    static KvAttention<QdCfg, A, kChunk> kv;
    static_assert(KvAttention<QdKv8Cfg, A, kChunk>::kIntScores, "integer scores configured");
    const auto rc = microattn_test::rope_cfg(true, microattn::RopePairing::kHalfSplit, 0);
    const std::size_t T = kT;
    microattn_test::Rng rng(78);
    rng.fill(g_x, T * kDM, -1.0f, 1.0f);
    for (int l = 0; l < 3; ++l) {
      kv8.reset();
      kv.reset();
      ASSERT_EQ(kv8.set_weights(g_qw.view8<QdKv8Cfg>(l)), Status::kOk);
      ASSERT_EQ(kv.set_weights(g_qw.view8<QdCfg>(l)), Status::kOk);
      ASSERT_EQ(kv8.set_rope(rc), Status::kOk);
      ASSERT_EQ(kv.set_rope(rc), Status::kOk);
      for (std::size_t b = 0; b < T; b += kChunk) {
        const std::size_t n = T - b < kChunk ? T - b : kChunk;
        ASSERT_EQ(kv8.prefill(g_x + b * kDM, n, g_y + b * kOD), Status::kOk);
        ASSERT_EQ(kv.prefill(g_x + b * kDM, n, g_y8 + b * kOD), Status::kOk);
      }
      // int8 keys and values (half a step of 1/127 of each row's largest value) and queries
      // quantised the same way move the output by about 1 %: bounded at 3 %.
      const double rel = microattn_test::rel_err(g_y, g_y8, T * kOD);
      EXPECT_LE(rel, 0.03) << A::name() << " layout " << l;
      kv8.reset();
      ASSERT_EQ(kv8.set_rope(rc), Status::kOk);
      for (std::size_t t = 0; t < T; ++t)
        ASSERT_EQ(kv8.decode(g_x + t * kDM, g_yd + t * kOD), Status::kOk);
      // The same integer sums both ways; only fp32 roundings differ (a projection's last bit can
      // move a query's int8 value by one step: 1/254 of its row's largest, relative).
      const double rel_dp = microattn_test::rel_err(g_yd, g_y, T * kOD);
      EXPECT_LE(rel_dp, 1e-3) << A::name() << " decode vs prefill, layout " << l;
      if (l == 0)
        report(
            "[ qd8 ] int8 cache, integer scores: output vs the fp32 cache %.4f, decode vs "
            "prefill %.2g (%s)\n",
            rel, rel_dp, A::name());
    }
  });
}

}  // namespace
