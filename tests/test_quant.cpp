// SPDX-License-Identifier: Apache-2.0
// int8 weights (WeightType::kInt8) and the int8 KV cache (CacheType::kInt8): the quantiser, the
// qc8w kernels, and the layers, each against the double-precision reference run on the
// dequantised values (tight fp32 tolerance: the int8 paths dequantise and compute in fp32), plus
// the quantisation error itself, measured against the fp32 layer and bounded.
#include <cfloat>
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
using microattn::CacheType;
using microattn::Config;
using microattn::KvAttention;
using microattn::MultiHeadAttention;
using microattn::QuantError;
using microattn::RopeConfig;
using microattn::RopePairing;
using microattn::Status;
using microattn::WeightLayout;
using microattn::Weights;
using microattn::WeightType;
using microattn_test::for_each_arch;
using microattn_test::kLongT;
using microattn_test::kQuick;
using microattn_test::long_t;
using microattn_test::quick_cap;
using microattn_test::rel_err;
using microattn_test::report;

// ---------------------------------------------------------------------------------------------
// The quantiser

constexpr std::size_t kQIn = 37, kQOut = 29;  // odd on purpose: partial panels, vector tails
float g_src[kQIn * kQOut];
std::int8_t g_q[3][microattn::weight_floats(WeightLayout::kPanel16, kQIn, kQOut)];
float g_s[3][kQOut];

/// W(i, o) of a [in][out] (kInOut) array.
float in_out(const float* w, std::size_t i, std::size_t o) { return w[i * kQOut + o]; }
std::int8_t q_at(const std::int8_t* q, WeightLayout l, std::size_t i, std::size_t o) {
  return q[microattn_test::weight_index(l, kQIn, kQOut, i, o)];
}

TEST(Quantize, RoundTripEveryLayout) {
  microattn_test::Rng rng(11);
  rng.fill(g_src, kQIn * kQOut, -0.3f, 0.3f);
  for (std::size_t i = 0; i < kQIn; ++i) g_src[i * kQOut + 3] = 0.0f;  // an all-zero column
  g_src[5 * kQOut + 7] = 1.0e30f;                                      // one huge weight
  g_src[9 * kQOut + 8] = -2.0f;                                        // a negative maximum
  const WeightLayout lays[] = {WeightLayout::kInOut, WeightLayout::kOutIn, WeightLayout::kPanel16};
  for (int li = 0; li < 3; ++li) {
    std::memset(g_q[li], 0x55, sizeof g_q[li]);
    QuantError err;
    ASSERT_EQ(microattn::quantize_int8(g_src, WeightLayout::kInOut, kQIn, kQOut, lays[li], g_q[li],
                                       g_s[li], &err),
              Status::kOk);
    double e2 = 0, w2 = 0, emax = 0;
    for (std::size_t o = 0; o < kQOut; ++o) {
      float amax = 0;
      for (std::size_t i = 0; i < kQIn; ++i) amax = std::fmax(amax, std::fabs(in_out(g_src, i, o)));
      volatile float d127 = 127.0f;  // a true division, also under -ffast-math
      EXPECT_EQ(g_s[li][o], amax / d127) << "column " << o;
      int qmax = 0;
      for (std::size_t i = 0; i < kQIn; ++i) {
        const int q = q_at(g_q[li], lays[li], i, o);
        const float w = in_out(g_src, i, o);
        EXPECT_TRUE(q >= -127 && q <= 127);
        qmax = q < 0 ? (-q > qmax ? -q : qmax) : (q > qmax ? q : qmax);
        // Round to nearest: the error is at most half a step (plus the rounding of s * q).
        const double e = std::fabs(static_cast<double>(w) - double(g_s[li][o]) * q);
        EXPECT_LE(e, 0.5 * g_s[li][o] * (1 + 1e-6)) << "i " << i << " o " << o;
        // The same int8 value in every layout.
        EXPECT_EQ(q, q_at(g_q[0], WeightLayout::kInOut, i, o));
        const double ef = static_cast<double>(w - g_s[li][o] * static_cast<float>(q));
        e2 += ef * ef, w2 += double(w) * w, emax = std::fmax(emax, std::fabs(ef));
      }
      // A nonzero column's largest weight is exactly +-127 steps; a zero column is all zero.
      EXPECT_EQ(qmax, amax > 0 ? 127 : 0) << "column " << o;
    }
    EXPECT_EQ(g_s[li][3], 0.0f);  // all-zero column: scale 0, no NaN
    EXPECT_EQ(q_at(g_q[li], lays[li], 5, 7), 127);
    EXPECT_EQ(q_at(g_q[li], lays[li], 9, 8), -127);
    EXPECT_EQ(q_at(g_q[li], lays[li], 0, 7), 0);  // 0.3 / (1e30 / 127) rounds to 0
    EXPECT_NEAR(err.max_abs, emax, 1e-6 * (emax + 1e-30));
    EXPECT_NEAR(err.rel, std::sqrt(e2 / w2), 1e-6);
    if (lays[li] == WeightLayout::kPanel16) {  // padding columns 29 .. 31 of the last panel: zero
      for (std::size_t i = 0; i < kQIn; ++i)
        for (std::size_t o = kQOut; o < 32; ++o)
          EXPECT_EQ(g_q[li][(o / 16) * kQIn * 16 + i * 16 + o % 16], 0);
    }
  }
  // From the PyTorch layout: the same values.
  static float t[kQIn * kQOut];
  for (std::size_t i = 0; i < kQIn; ++i)
    for (std::size_t o = 0; o < kQOut; ++o) t[o * kQIn + i] = g_src[i * kQOut + o];
  static std::int8_t q2[kQIn * kQOut];
  static float s2[kQOut];
  ASSERT_EQ(microattn::quantize_int8(t, WeightLayout::kOutIn, kQIn, kQOut, WeightLayout::kInOut, q2,
                                     s2, nullptr),
            Status::kOk);
  EXPECT_EQ(std::memcmp(q2, g_q[0], sizeof q2), 0);
  EXPECT_EQ(std::memcmp(s2, g_s[0], sizeof s2), 0);
}

TEST(Quantize, RoundsHalfAwayFromZeroAndSaturates) {
  // scale 0.5: w / s is exact, so the ties are real ties.
  EXPECT_EQ(microattn::quantize_value(1.25f, 0.5f), 3);    // 2.5 -> 3
  EXPECT_EQ(microattn::quantize_value(-1.25f, 0.5f), -3);  // -2.5 -> -3
  EXPECT_EQ(microattn::quantize_value(1.2f, 0.5f), 2);     // 2.4 -> 2
  EXPECT_EQ(microattn::quantize_value(0.2f, 0.5f), 0);
  EXPECT_EQ(microattn::quantize_value(-0.0f, 0.5f), 0);
  EXPECT_EQ(microattn::quantize_value(0.49999997f, 1.0f), 0);  // not rounded up by r + 0.5
  EXPECT_EQ(microattn::quantize_value(63.75f, 0.5f), 127);     // 127.5 saturates at 127
  EXPECT_EQ(microattn::quantize_value(1.0e6f, 0.5f), 127);
  EXPECT_EQ(microattn::quantize_value(-1.0e6f, 0.5f), -127);  // never -128
  EXPECT_EQ(microattn::quantize_value(5.0f, 0.0f), 0);        // zero scale: zero, no NaN
}

// Columns at the ends of the float range: 127 * scale is a finite float (a column of maxima
// near FLT_MAX dequantised to inf in the GEMM), and every weight is within half a scale of its
// int8 value (plus the rounding of w / scale), subnormal columns too (a subnormal amax / 127 has
// few bits: rounded down, the largest weight clamped by up to 63 scales).
TEST(Quantize, ScaleCoversTheColumnAndStaysFinite) {
  constexpr std::size_t kIn = 6;
  using microattn_test::from_bits;
  static float amax[40];
  std::size_t n = 0;
  amax[n++] = FLT_MAX;
  amax[n++] = from_bits(0x7f7ffffeu);  // the float below FLT_MAX
  amax[n++] = 3.0e38f;
  amax[n++] = 2.7e38f;
  // Where the FPU flushes subnormals to zero (-ffast-math's start-up sets FTZ/DAZ on x86), a
  // subnormal weight or scale is 0 to every instruction: columns below 127 * FLT_MIN have a
  // zero scale there, and are skipped.
  volatile float tiny = from_bits(1u);
  if (tiny > 0.0f) {
    for (std::uint32_t units : {1u, 2u, 63u, 64u, 100u, 126u, 127u, 128u, 190u, 253u, 254u, 255u,
                                1000u, 65535u, 0x7fffffu})
      amax[n++] = from_bits(units);  // subnormals: units of 2^-149
    amax[n++] = FLT_MIN;
  }
  amax[n++] = 1.0e-30f;
  microattn_test::Rng rng(7);
  while (n < 40) amax[n++] = std::ldexp(rng.uniform(0.5f, 1.0f), int(rng.next_u32() % 200) - 100);
  static float w[40 * kIn];  // [out][in]: row o is column o
  static std::int8_t q[40 * kIn];
  static float sc[40];
  for (std::size_t o = 0; o < n; ++o) {
    const float a = amax[o];
    const float col[kIn] = {
        a, -a, a * 0.5f, -a * rng.uniform(0.0f, 1.0f), a * rng.uniform(0.0f, 1.0f), 0.0f};
    for (std::size_t i = 0; i < kIn; ++i) w[o * kIn + i] = col[i];
  }
  ASSERT_EQ(microattn::quantize_int8(w, WeightLayout::kOutIn, kIn, n, WeightLayout::kOutIn, q, sc),
            Status::kOk);
  for (std::size_t o = 0; o < n; ++o) {
    volatile float s127 = sc[o] * 127.0f;  // what a kernel's dequantisation computes
    EXPECT_TRUE(std::isfinite(s127)) << "column " << o << " amax " << amax[o];
    EXPECT_GT(sc[o], 0.0f) << "column " << o;
    for (std::size_t i = 0; i < kIn; ++i) {
      const double e = std::fabs(double(w[o * kIn + i]) - double(sc[o]) * q[o * kIn + i]);
      EXPECT_LE(e, double(sc[o]) * (0.5 + std::ldexp(1.0, -17)))
          << "column " << o << " amax " << amax[o] << " w " << w[o * kIn + i] << " q "
          << int(q[o * kIn + i]) << " scale " << sc[o];
    }
    EXPECT_EQ(microattn::column_scale(amax[o]), sc[o]);
  }
}

// The int8 cache's row quantiser (internal::Elem<std::int8_t>::encode): scale max |x| / 127, each
// value x * (127 / max |x|) rounded to nearest with ties to even (integer compute's rule), never
// -128, written at the given stride; a zero row: scale 0, values 0; a row with a NaN or an
// infinity: scale NaN, values 0; a row too small for 127 / max |x|: each value divided by the
// scale. Against the rule computed here with nearbyint (the C library's ties-to-even).
TEST(Int8Cache, RowQuantiserRule) {
  using E = microattn::internal::Elem<std::int8_t>;
  constexpr std::size_t kN = 67, kStride = 3;
  static float x[kN];
  static std::int8_t q[kN * kStride];
  microattn_test::Rng rng(5);
  std::size_t wrong = 0, ties = 0;
  for (int row = 0; row < 200; ++row) {
    rng.fill(x, kN, -3.0f, 3.0f);
    x[row % kN] = row % 2 ? 3.5f : -3.5f;  // max |x|: 127 / 3.5 is not exact, the ties below are
    const float inv = 127.0f / 3.5f;
    for (std::size_t i = 0; i < 8; ++i) {  // values that land on .5 after the multiply
      const float t = (static_cast<float>(row % 120) + 0.5f + static_cast<float>(i)) / inv;
      if (std::fabs(t * inv - std::nearbyint(t * inv)) == 0.5f) x[(row + 7 * i + 1) % kN] = t;
    }
    const float s = E::encode(x, kN, q, kStride);
    EXPECT_EQ(s, 3.5f / 127.0f);
    for (std::size_t i = 0; i < kN; ++i) {
      const float v = x[i] * inv;
      ties += std::fabs(v - std::trunc(v)) == 0.5f;
      const float r = std::fmin(127.0f, std::fmax(-127.0f, std::nearbyint(v)));
      wrong += q[i * kStride] != static_cast<std::int8_t>(r);
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_GT(ties, 100u) << "the rows must hold ties";
  // Exact products (max 127: the multiplier is 1): ties to even, the ends, zero, NaN, infinity,
  // and a row too small for 127 / max |x| (each value divided by the scale; 0 where denormals
  // are flushed, as under -Ofast).
  const float edge[6] = {127.0f, -127.0f, 0.5f, 31.75f, 2.5f, -3.5f};
  EXPECT_EQ(E::encode(edge, 6, q, 1), 1.0f);
  const std::int8_t want[6] = {127, -127, 0, 32, 2, -4};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(q[i], want[i]) << edge[i];
  const float zero[3] = {0.0f, -0.0f, 0.0f};
  std::memset(q, 0x55, sizeof q);
  EXPECT_EQ(E::encode(zero, 3, q, 1), 0.0f);
  EXPECT_TRUE(q[0] == 0 && q[1] == 0 && q[2] == 0);
  const float bad[3] = {1.0f, NAN, 2.0f}, inf[2] = {INFINITY, 1.0f};
  EXPECT_TRUE(microattn_test::is_nan(E::encode(bad, 3, q, 1)));
  EXPECT_TRUE(q[0] == 0 && q[1] == 0 && q[2] == 0);
  EXPECT_TRUE(microattn_test::is_nan(E::encode(inf, 2, q, 1)));
  const float tiny[2] = {1e-40f, -5e-41f};
  const float st = E::encode(tiny, 2, q, 1);
  EXPECT_EQ(q[0], microattn::quantize_value(tiny[0], st));
  EXPECT_EQ(q[1], microattn::quantize_value(tiny[1], st));
}

TEST(Quantize, BadInputWritesNothing) {
  static float src[4 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  static std::int8_t dst[16 * 4];
  static float sc[4];
  std::memset(dst, 0x5a, sizeof dst);
  microattn_test::fill_sentinel(sc);
  const auto unchanged = [&] {
    for (std::int8_t v : dst)
      if (v != 0x5a) return false;
    return microattn_test::all_sentinel(sc);
  };
  using microattn::quantize_int8;
  EXPECT_EQ(quantize_int8(nullptr, WeightLayout::kInOut, 4, 3, WeightLayout::kInOut, dst, sc),
            Status::kNullPointer);
  EXPECT_EQ(quantize_int8(src, WeightLayout::kInOut, 4, 3, WeightLayout::kInOut, nullptr, sc),
            Status::kNullPointer);
  EXPECT_EQ(quantize_int8(src, WeightLayout::kInOut, 4, 3, WeightLayout::kInOut, dst, nullptr),
            Status::kNullPointer);
  EXPECT_EQ(quantize_int8(src, WeightLayout::kInOut, 0, 3, WeightLayout::kInOut, dst, sc),
            Status::kBadArgument);
  EXPECT_EQ(quantize_int8(src, WeightLayout::kPanel16, 4, 3, WeightLayout::kInOut, dst, sc),
            Status::kBadArgument);
  EXPECT_EQ(quantize_int8(src, WeightLayout::kInOut, 4, 3, static_cast<WeightLayout>(9), dst, sc),
            Status::kBadArgument);
  src[5] = INFINITY;
  EXPECT_EQ(quantize_int8(src, WeightLayout::kInOut, 4, 3, WeightLayout::kInOut, dst, sc),
            Status::kBadArgument);
  src[5] = 6.0f;
  EXPECT_EQ(quantize_int8(src, WeightLayout::kInOut, 4, 3, WeightLayout::kInOut,
                          reinterpret_cast<std::int8_t*>(src), sc),
            Status::kOverlap);
  EXPECT_EQ(quantize_int8(src, WeightLayout::kInOut, 4, 3, WeightLayout::kInOut, dst,
                          reinterpret_cast<float*>(dst)),
            Status::kOverlap);
  EXPECT_TRUE(unchanged());
  EXPECT_EQ(quantize_int8(src, WeightLayout::kInOut, 4, 3, WeightLayout::kPanel16, dst, sc),
            Status::kOk);
  volatile float d127 = 127.0f;
  EXPECT_EQ(sc[2], 12.0f / d127);
}

// ---------------------------------------------------------------------------------------------
// The qc8w kernels

constexpr std::size_t kKMax = 70, kNMax = 53, kMMax = 15;
float g_a[kMMax * kKMax];
float g_w[kKMax * kNMax];
std::int8_t g_wq[microattn::weight_floats(WeightLayout::kPanel16, kKMax, kNMax)];
float g_ws[kNMax], g_bias[kNMax];
float g_c[kMMax * kNMax];
double g_cref[kMMax * kNMax];
float g_pack[16384];

/// C = A · deq(W) + bias in double, deq(W)(k, n) = float(s[n] * q(k, n)) as the GEMM forms it.
void ref_gemm(std::size_t M, std::size_t N, std::size_t K, WeightLayout l) {
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) {
      double acc = g_bias[n];
      for (std::size_t k = 0; k < K; ++k) {
        std::int8_t q;
        if (l == WeightLayout::kInOut)
          q = g_wq[k * N + n];
        else if (l == WeightLayout::kOutIn)
          q = g_wq[n * K + k];
        else
          q = g_wq[(n / 16) * K * 16 + k * 16 + n % 16];
        acc += double(g_a[m * K + k]) * double(g_ws[n] * static_cast<float>(q));
      }
      g_cref[m * N + n] = acc;
    }
}

TEST(Qc8wKernels, GemmAndGemvEveryLayoutOddSizes) {
  static_assert(microattn::kernels::gemm_pack_floats<microattn::DefaultArch>() <= 16384 &&
                    microattn::kernels::gemm_pack_floats<microattn::ScalarArch>() <= 16384,
                "pack buffer too small");
  const std::size_t shapes[][3] = {{1, 1, 1}, {3, 17, 5}, {7, 53, 70}, {15, 32, 64}, {2, 48, 33}};
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    std::uint64_t seed = 21;
    for (const auto& sh : shapes) {
      const std::size_t M = sh[0], N = sh[1], K = sh[2];
      microattn_test::Rng rng(seed++);
      rng.fill(g_a, M * K, -1.0f, 1.0f);
      rng.fill(g_w, K * N, -0.5f, 0.5f);
      rng.fill(g_bias, N, -1.0f, 1.0f);
      const WeightLayout lays[] = {WeightLayout::kInOut, WeightLayout::kOutIn,
                                   WeightLayout::kPanel16};
      for (WeightLayout l : lays) {
        ASSERT_EQ(microattn::quantize_int8(g_w, WeightLayout::kInOut, K, N, l, g_wq, g_ws),
                  Status::kOk);
        ref_gemm(M, N, K, l);
        const std::size_t ld = l == WeightLayout::kInOut   ? N
                               : l == WeightLayout::kOutIn ? K
                                                           : K * 16;
        const double tol =
            microattn_test::tolerance(double(K) + 2, microattn_test::max_abs(g_cref, M * N));
        for (std::size_t i = 0; i < M * N; ++i) g_c[i] = NAN;
        microattn::kernels::qc8w_f32_gemm<A>(M, N, K, g_a, K, g_wq, ld, l, g_ws, g_bias,
                                             microattn::kernels::StoreRowMajor{g_c, N}, g_pack);
        EXPECT_LE(microattn_test::max_diff(g_c, g_cref, M * N), tol)
            << "gemm " << A::name() << " " << M << "x" << N << "x" << K << " layout "
            << static_cast<int>(l);
        for (std::size_t i = 0; i < N; ++i) g_c[i] = NAN;
        microattn::kernels::qc8w_f32_gemv<A>(N, K, g_a, g_wq, ld, l, g_ws, g_bias, g_c);
        EXPECT_LE(microattn_test::max_diff(g_c, g_cref, N), tol)
            << "gemv " << A::name() << " " << N << "x" << K << " layout " << static_cast<int>(l);
        microattn::kernels::qc8w_f32_gemv<A>(N, K, g_a, g_wq, ld, l, g_ws, nullptr, g_c);
        for (std::size_t n = 0; n < N; ++n) g_cref[n] -= g_bias[n];
        EXPECT_LE(microattn_test::max_diff(g_c, g_cref, N), tol)
            << "gemv no bias " << A::name() << " layout " << static_cast<int>(l);
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Layers

// d_head 16 (kPanel16 fits), GQA, every bias, OutDim != d_model; T_max past one key tile.
using Q8Cfg = Config<quick_cap(70), 40, 4, 2, 16, Bias::kYes, WeightType::kInt8,
                     microattn::OutDim{48}, microattn::Rope::kYes>;
using Q8CfgF32 =
    Config<quick_cap(70), 40, 4, 2, 16, Bias::kYes, microattn::OutDim{48}, microattn::Rope::kYes>;
using KV8Cfg = Config<quick_cap(70), 40, 4, 2, 16, Bias::kYes, CacheType::kInt8,
                      microattn::OutDim{48}, microattn::Rope::kYes>;
using Q8KV8Cfg = Config<quick_cap(70), 40, 4, 2, 16, Bias::kYes, WeightType::kInt8,
                        CacheType::kInt8, microattn::OutDim{48}, microattn::Rope::kYes>;
// Odd head width and no W_O (the tails of every kernel), MQA.
using Q8OddCfg = Config<quick_cap(30), 21, 3, 1, 7, Bias::kQkv, WeightType::kInt8, CacheType::kInt8,
                        microattn::OutProj::kNo, microattn::Rope::kYes>;

// Int8Cache.PrefillLongerThanARowBlock: Q8OddCfg's shape with T_max = the arch's GEMM row
// block kMC + 7, so one prefill call spans two row blocks.
template <class A>
using LongOddCfg = Config<long_t<A>(), 21, 3, 1, 7, Bias::kQkv, CacheType::kInt8,
                          microattn::OutProj::kNo, microattn::Rope::kYes>;

microattn_test::QuantWeights<Q8CfgF32> g_qw;
microattn_test::QuantWeights<Q8OddCfg> g_qw_odd;
constexpr std::size_t kT = quick_cap(70), kDM = 40, kOD = 48;
constexpr std::size_t kIn = microattn::internal::max_size(kT * kDM, kLongT * 21);
constexpr std::size_t kOut = microattn::internal::max_size(kT * kOD, kLongT * 21);
float g_x[kIn], g_y[kOut], g_y2[kOut], g_y3[kOut];
double g_ref[kOut], g_ref32[kT * kOD];
double g_scratch[microattn::internal::max_size(microattn_ref::layer_scratch(kT, 4, 2, 16),
                                               microattn_ref::layer_scratch(kLongT, 3, 1, 7))];
constexpr std::size_t kKv = microattn::internal::max_size(kT * 32, kLongT * 7);
float g_kc[kKv], g_vc[kKv], g_kc2[kKv], g_vc2[kKv];

/// RoPE over the largest even width of the head.
RopeConfig rope_on(std::size_t d_head) {
  return microattn_test::rope_cfg(true, RopePairing::kHalfSplit, d_head % 2 ? d_head - 1 : 0);
}

TEST(Int8Weights, LayerEqualsFp32OnDequantisedWeights) {
  g_qw.fill(5);
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    static MultiHeadAttention<Q8Cfg, A> mha;
    const std::size_t Ts[] = {1, 13, kT};
    for (std::size_t T : Ts) {
      microattn_test::Rng rng(T);
      rng.fill(g_x, T * kDM, -1.0f, 1.0f);
      microattn_ref::layer(g_qw.ref(true), g_x, T, microattn::default_scale<Q8Cfg>(), g_ref,
                           g_scratch);
      microattn_ref::layer(g_qw.ref(false), g_x, T, microattn::default_scale<Q8Cfg>(), g_ref32,
                           g_scratch);
      // The fp32 layer test's chain: d_model per projection, d_head per score, T per P·V row,
      // H * d_head per W_O term.
      const double chain = kDM + 2.0 * 16 + double(T) + 64 + 4;
      const double tol = microattn_test::tolerance(chain, microattn_test::max_abs(g_ref, T * kOD));
      for (int l = 0; l < 3; ++l) {
        ASSERT_EQ(mha.set_weights(g_qw.view8<Q8Cfg>(l)), Status::kOk);
        ASSERT_EQ(mha.forward(g_x, T, g_y), Status::kOk);
        EXPECT_LE(microattn_test::max_diff(g_y, g_ref, T * kOD), tol)
            << A::name() << " T " << T << " layout " << l;
        // The quantisation error itself, against the fp32 layer: int8 per-channel weights on
        // U(+-1/sqrt(fan_in)) matrices (step ~ 1/127 of the largest weight, relative error
        // ~0.5% per matrix) move the output by about 1%: bounded at 3%.
        const double rel = rel_err(g_y, g_ref32, T * kOD);
        EXPECT_LE(rel, 0.03) << A::name() << " T " << T;
        if (l == 0 && T == kT)
          report(
              "[ int8 ] weights W_Q/W_K/W_V/W_O rel err %.4f %.4f %.4f %.4f; layer output vs "
              "fp32: rel %.4f (%s)\n",
              double(g_qw.err[0].rel), double(g_qw.err[1].rel), double(g_qw.err[2].rel),
              double(g_qw.err[3].rel), rel, A::name());
      }
    }
  });
}

/// The KV layer over T tokens three ways (prefill, token by token, three chunks), each compared
/// with the reference: on the dequantised weights, and, with an int8 cache, over the keys and
/// values the cache holds (export_cache: the dequantised rows), so the comparison is tight.
/// kWhole: prefill chunk T_max even under emulation (else 8 there: less RAM, the target's path).
template <class Cfg, class A, bool kWhole = false, class QW>
void check_kv(const QW& qw, int layout, std::size_t T, bool rope) {
  constexpr std::size_t DM = Cfg::kDModel, OD = Cfg::kOutDim, KD = Cfg::kKvDim;
  static_assert(Cfg::kTMax * DM <= kIn && Cfg::kTMax * OD <= kOut && Cfg::kTMax * KD <= kKv,
                "test pools too small");
  static KvAttention<Cfg, A, kQuick && !kWhole ? 8 : Cfg::kTMax> kv;
  float* outs[3] = {g_y, g_y2, g_y3};
  const RopeConfig rc = rope ? rope_on(Cfg::kDHead) : RopeConfig{};
  microattn_test::Rng rng(T * 7 + layout);
  rng.fill(g_x, T * DM, -1.0f, 1.0f);
  if constexpr (Cfg::kInt8Weights) {
    ASSERT_EQ(kv.set_weights(qw.template view8<Cfg>(layout)), Status::kOk);
  } else {
    ASSERT_EQ(kv.set_weights(qw.template view32<Cfg>()), Status::kOk);
  }
  for (int way = 0; way < 3; ++way) {
    kv.reset();
    ASSERT_EQ(kv.set_rope(rc), Status::kOk);
    if (way == 0) {
      ASSERT_EQ(kv.prefill(g_x, T, outs[0]), Status::kOk);
    }
    if (way == 1) {
      for (std::size_t t = 0; t < T; ++t) {
        ASSERT_EQ(kv.decode(g_x + t * DM, outs[1] + t * OD), Status::kOk);
      }
    }
    if (way == 2) {
      const std::size_t c1 = T / 3, c2 = T / 3 + 1 < T - c1 ? T / 3 + 1 : 0;
      std::size_t done = 0;
      for (std::size_t c : {c1, c2, T - c1 - c2}) {
        if (c == 0) continue;
        ASSERT_EQ(kv.prefill(g_x + done * DM, c, outs[2] + done * OD), Status::kOk);
        done += c;
      }
    }
    ASSERT_EQ(kv.length(), T);
    microattn::CacheSlice info;
    float* kc = way == 0 ? g_kc : g_kc2;
    float* vc = way == 0 ? g_vc : g_vc2;
    ASSERT_EQ(kv.export_cache(0, T, kc, vc, &info), Status::kOk);
    const auto ref = qw.ref(Cfg::kInt8Weights);
    const auto rr = microattn_test::rope_ref_of(rc, Cfg::kDHead);
    if (Cfg::kInt8Cache) {
      microattn_ref::layer_given_kv(ref, rr, g_x, T, kc, vc, microattn::default_scale<Cfg>(), g_ref,
                                    g_scratch);
    } else {
      microattn_ref::layer_rope(ref, rr, g_x, T, microattn::default_scale<Cfg>(), g_ref, g_scratch);
    }
    const double chain = DM + 2.0 * Cfg::kDHead + double(T) + Cfg::kQDim + 8;
    const double tol = microattn_test::tolerance(chain, microattn_test::max_abs(g_ref, T * OD));
    EXPECT_LE(microattn_test::max_diff(outs[way], g_ref, T * OD), tol)
        << A::name() << " way " << way << " T " << T << " layout " << layout << " rope " << rope;
    if (Cfg::kInt8Cache && way > 0) {
      // The cache of this run against the prefill's: the same int8 rows, except where K or V
      // differed by a rounding between the GEMV / chunked GEMM and the one-shot GEMM and that
      // moved a value across a rounding boundary: one step (scale) at most, on a few values.
      std::size_t moved = 0;
      for (std::size_t i = 0; i < T * KD; ++i) {
        const double dk = std::fabs(double(g_kc2[i]) - g_kc[i]);
        const double dv = std::fabs(double(g_vc2[i]) - g_vc[i]);
        moved +=
            (dk > 1e-6 * (std::fabs(g_kc[i]) + 1e-3)) + (dv > 1e-6 * (std::fabs(g_vc[i]) + 1e-3));
      }
      EXPECT_LE(moved, 2 * T * KD / 100 + 2) << A::name() << " way " << way << " T " << T;
    }
  }
}

TEST(Int8Weights, KvCacheFp32EqualsReference) {
  g_qw.fill(6);
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    for (int l = 0; l < 3; ++l)
      check_kv<Q8Cfg, A>(g_qw, l, l == 0 ? 1 : (l == 1 ? 17 : kT), l != 1);
  });
}

TEST(Int8Cache, Fp32WeightsEqualReferenceOverCachedValues) {
  g_qw.fill(7);
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    const std::size_t Ts[] = {1, 9, kT};
    for (std::size_t T : Ts) check_kv<KV8Cfg, A>(g_qw, 0, T, T != 9);
  });
}

TEST(Int8Cache, Int8WeightsEveryLayoutAndOddShape) {
  g_qw.fill(8);
  g_qw_odd.fill(9);
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    for (int l = 0; l < 3; ++l) check_kv<Q8KV8Cfg, A>(g_qw, l, l == 2 ? kT : 33 % kT, l != 0);
    for (int l = 0; l < 2; ++l) check_kv<Q8OddCfg, A>(g_qw_odd, l, quick_cap(30) - l * 7, true);
  });
}

// One prefill call of kMC + 7 tokens (two of the GEMM's row blocks, internal::row_block) into
// the int8 cache, MQA, odd head width: its outputs against the reference over its cache, and
// its cache against the token-by-token and three-chunk runs' (check_kv's `moved` count: a row
// block stored at the wrong positions moves most of the cache).
TEST(Int8Cache, PrefillLongerThanARowBlock) {
  g_qw_odd.fill(10);
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using Cfg = LongOddCfg<A>;
    static_assert(Cfg::kTMax > microattn::internal::Tiles<A>::kMC, "two row blocks");
    check_kv<Cfg, A, true>(g_qw_odd, 0, Cfg::kTMax, true);
  });
}

TEST(Int8Cache, QuantisationErrorAgainstFp32Cache) {
  // The same fp32 weights with an fp32 and an int8 cache: the int8 cache's rounding (half a
  // step of max|row| / 127 per value) moves the outputs by well under 2%.
  g_qw.fill(10);
  static KvAttention<Q8CfgF32> f32;
  static KvAttention<KV8Cfg> i8;
  ASSERT_EQ(f32.set_weights(g_qw.view32<Q8CfgF32>()), Status::kOk);
  ASSERT_EQ(i8.set_weights(g_qw.view32<KV8Cfg>()), Status::kOk);
  microattn_test::Rng rng(3);
  rng.fill(g_x, kT * kDM, -1.0f, 1.0f);
  ASSERT_EQ(f32.prefill(g_x, kT, g_y), Status::kOk);
  ASSERT_EQ(i8.prefill(g_x, kT, g_y2), Status::kOk);
  for (std::size_t i = 0; i < kT * kOD; ++i) g_ref[i] = g_y[i];
  const double rel = rel_err(g_y2, g_ref, kT * kOD);
  EXPECT_LE(rel, 0.02);
  EXPECT_GT(rel, 0.0);  // it is quantised
  report(
      "[ int8 ] int8 KV cache vs fp32 cache, layer output rel err %.4f (T %zu); cache bytes "
      "%zu vs %zu\n",
      rel, kT, std::size_t(KvAttention<KV8Cfg>::kCacheBytes),
      std::size_t(KvAttention<Q8CfgF32>::kCacheBytes));
}

TEST(Int8Cache, CacheIsAboutAQuarter) {
  using Big = Config<256, 64, 4, 4, 64, CacheType::kInt8>;
  using BigF = Config<256, 64, 4, 4, 64>;
  using K8 = KvAttention<Big, microattn::ScalarArch>;
  using KF = KvAttention<BigF, microattn::ScalarArch>;
  // int8 values + two fp32 scales per token and head: (64 + 64 + 8) / (4 * 128).
  EXPECT_EQ(K8::kCacheBytes, 4u * 256u * (64 + 64 + 8));
  EXPECT_EQ(KF::kCacheBytes, 4u * 256u * (64 + 64) * 4);
}

// The largest finite floats survive the int8 cache: a row holding +-FLT_MAX imports, exports
// finite (its scale one float below FLT_MAX / 127, so 127 times it does not round to inf),
// within the quantiser's half step of the value, and the round trip repeats unchanged.
TEST(Int8Cache, LargestFloatsStayFinite) {
  using Cfg = Config<4, 8, 2, 1, 8, CacheType::kInt8>;
  constexpr std::size_t KD = Cfg::kKvDim;
  static KvAttention<Cfg> kv;
  static float k[2 * KD], v[2 * KD], k2[2 * KD], v2[2 * KD];
  microattn_test::Rng(7).fill(k, 2 * KD, -1.0f, 1.0f);
  microattn_test::Rng(8).fill(v, 2 * KD, -1.0f, 1.0f);
  k[0] = FLT_MAX, v[1] = -FLT_MAX, k[KD + 3] = -FLT_MAX, v[KD + 5] = FLT_MAX;
  microattn::CacheSlice info;
  info.first = 0, info.tokens = 2, info.kv_heads = Cfg::kKvHeads, info.d_head = Cfg::kDHead;
  info.rope = kv.rope();
  kv.reset();
  ASSERT_EQ(kv.import_cache(info, k, v), Status::kOk);
  ASSERT_EQ(kv.export_cache(0, 2, k2, v2, &info), Status::kOk);
  for (std::size_t i = 0; i < 2 * KD; ++i) {
    ASSERT_TRUE(std::isfinite(k2[i]) && std::isfinite(v2[i])) << i;
    // Half a step of FLT_MAX / 127 for the rounding, plus the one-float-down scale.
    const double step = double(FLT_MAX) / 127.0;
    EXPECT_LE(std::fabs(double(k2[i]) - double(k[i])), 0.5 * step * (1 + 1e-6)) << i;
    EXPECT_LE(std::fabs(double(v2[i]) - double(v[i])), 0.5 * step * (1 + 1e-6)) << i;
  }
  EXPECT_LT(double(k2[0]), double(FLT_MAX));
  EXPECT_GT(double(k2[0]), double(FLT_MAX) * (1.0 - 1e-6));
  // Again (before the fix: inf came back, then NaN): finite, the same int8 values, the scales
  // within a rounding.
  static float k3[2 * KD], v3[2 * KD];
  kv.reset();
  ASSERT_EQ(kv.import_cache(info, k2, v2), Status::kOk);
  ASSERT_EQ(kv.export_cache(0, 2, k3, v3, &info), Status::kOk);
  for (std::size_t i = 0; i < 2 * KD; ++i) {
    ASSERT_TRUE(std::isfinite(k3[i]) && std::isfinite(v3[i])) << i;
    EXPECT_LE(std::fabs(double(k3[i]) - double(k2[i])), 1e-6 * std::fabs(double(k2[i]))) << i;
    EXPECT_LE(std::fabs(double(v3[i]) - double(v2[i])), 1e-6 * std::fabs(double(v2[i]))) << i;
  }
}

TEST(Int8Cache, ResetAndTruncateEqualFreshObject) {
  g_qw.fill(12);
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    static KvAttention<Q8KV8Cfg, A> a, fresh;
    const std::size_t T = kQuick ? 12 : 40;
    microattn_test::Rng rng(4);
    rng.fill(g_x, T * kDM, -1.0f, 1.0f);
    ASSERT_EQ(a.set_weights(g_qw.view8<Q8KV8Cfg>(2)), Status::kOk);
    ASSERT_EQ(fresh.set_weights(g_qw.view8<Q8KV8Cfg>(2)), Status::kOk);
    // Fill with other tokens, reset, run: bit-identical to a fresh object.
    ASSERT_EQ(a.prefill(g_x + kDM, T - 1, g_y), Status::kOk);
    a.reset();
    fresh.reset();
    ASSERT_EQ(a.prefill(g_x, T, g_y), Status::kOk);
    ASSERT_EQ(fresh.prefill(g_x, T, g_y2), Status::kOk);
    EXPECT_EQ(std::memcmp(g_y, g_y2, T * kOD * sizeof(float)), 0);
    // Truncate to T / 2 and decode the rest: the same as a fresh prefill of T / 2 + decodes.
    ASSERT_EQ(a.truncate(T / 2), Status::kOk);
    fresh.reset();
    ASSERT_EQ(fresh.prefill(g_x, T / 2, g_y2), Status::kOk);
    for (std::size_t t = T / 2; t < T; ++t) {
      ASSERT_EQ(a.decode(g_x + t * kDM, g_y + t * kOD), Status::kOk);
      ASSERT_EQ(fresh.decode(g_x + t * kDM, g_y2 + t * kOD), Status::kOk);
    }
    EXPECT_EQ(std::memcmp(g_y + T / 2 * kOD, g_y2 + T / 2 * kOD, (T - T / 2) * kOD * sizeof(float)),
              0);
  });
}

TEST(Int8, BadInputChangesNothing) {
  g_qw.fill(13);
  static KvAttention<Q8KV8Cfg> kv;
  static MultiHeadAttention<Q8Cfg> mha;
  // A missing scale array is a missing weight.
  auto w = g_qw.view8<Q8KV8Cfg>(0);
  w.s_v = nullptr;
  EXPECT_EQ(kv.set_weights(w), Status::kNullPointer);
  auto wm = g_qw.view8<Q8Cfg>(1);
  wm.s_o = nullptr;
  EXPECT_EQ(mha.set_weights(wm), Status::kNullPointer);
  EXPECT_EQ(
      Weights<Q8Cfg>(WeightLayout::kInOut, g_qw.qq[0], g_qw.sq, g_qw.qk[0], g_qw.sk, g_qw.qv[0],
                     nullptr, g_qw.qo[0], g_qw.so, g_qw.bq, g_qw.bk, g_qw.bv, g_qw.bo)
          .check(),
      Status::kNullPointer);
  // Never-set weights: kNullPointer, y untouched.
  microattn_test::fill_sentinel(g_y, kOD);
  EXPECT_EQ(kv.decode(g_x, g_y), Status::kNullPointer);
  ASSERT_EQ(kv.set_weights(g_qw.view8<Q8KV8Cfg>(0)), Status::kOk);
  // y over a scale array: kOverlap.
  EXPECT_EQ(kv.decode(g_x, const_cast<float*>(g_qw.sq)), Status::kOverlap);
  // Cache full: kCacheFull, nothing changed.
  microattn_test::Rng rng(5);
  rng.fill(g_x, kT * kDM, -1.0f, 1.0f);
  ASSERT_EQ(kv.prefill(g_x, kT, g_y2), Status::kOk);
  microattn_test::fill_sentinel(g_y, kOD);
  EXPECT_EQ(kv.decode(g_x, g_y), Status::kCacheFull);
  EXPECT_EQ(kv.prefill(g_x, 1, g_y), Status::kCacheFull);
  EXPECT_EQ(kv.length(), kT);
  EXPECT_TRUE(microattn_test::all_sentinel(g_y, kOD));
#if !defined(__FAST_MATH__)  // -ffast-math promises nothing about NaN (docs/numeric-contract.md)
  // A non-finite key makes the rows that see it NaN (as with an fp32 cache), not garbage.
  kv.reset();
  g_x[3] = NAN;
  ASSERT_EQ(kv.prefill(g_x, 4, g_y), Status::kOk);
  for (std::size_t i = 0; i < 4 * kOD; ++i) EXPECT_TRUE(g_y[i] != g_y[i]);
#endif
}

}  // namespace
