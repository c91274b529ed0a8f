// SPDX-License-Identifier: Apache-2.0
// The numeric contract for every input (docs/numeric-contract.md), on every arch:
// - causality bit for bit: no output of token p depends on tokens after p, NaN and Inf included;
// - a row that sees a NaN or infinite value (input, or a score that overflows) is NaN or Inf in
//   every element; rows that do not see it are bit-identical to a run without it;
// - the same on the SIMD arch and the scalar (Cortex-M) arch.
// Under -ffinite-math-only (-Ofast) the compiler may assume there are no NaN or Inf, so only the
// finite parts run there (the -Ofast presets build this file too).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "microattn/attention.hpp"
#include "microattn/kv_cache.hpp"
#include "support/check.hpp"
#include "support/random_weights.hpp"
#include "support/rng.hpp"
#include "support/unit.hpp"

#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#define MICROATTN_TEST_NONFINITE 0
#else
#define MICROATTN_TEST_NONFINITE 1
#endif

namespace {

using microattn::Config;
using microattn::KvAttention;
using microattn::MultiHeadAttention;
using microattn::ScaledDotProductAttention;
using microattn::Status;
using microattn::WeightLayout;
using microattn_test::for_each_arch;
// NaN / NaN or Inf, decided on the bits (the compiler cannot fold them under any flag).
using microattn_test::is_nan;
using microattn_test::nonfinite;
using microattn_test::RandomWeights;

/// The values later tokens are poisoned with. Finite ones always; NaN and Inf where the build
/// keeps IEEE semantics.
float poison(int kind, microattn_test::Rng& rng) {
  switch (kind) {
    case 0:
      return rng.uniform(-1e3f, 1e3f);
    case 1:
      return 3e38f;  // finite, but every projection of it overflows
#if MICROATTN_TEST_NONFINITE
    case 2:
      return std::numeric_limits<float>::quiet_NaN();
    case 3:
      return std::numeric_limits<float>::infinity();
    case 4:
      return -std::numeric_limits<float>::infinity();
#endif
    default:
      return 0.5f;
  }
}
constexpr int kPoisonKinds = MICROATTN_TEST_NONFINITE ? 5 : 2;

// GQA with 2 query heads per key/value head, d_head 5, so rows, tiles and micro-tiles all end
// mid-way: T 70 spans two query tiles (BQ 48 rows = 24 tokens on SIMD arches) and two key tiles.
using LayerCfg = Config<70, 12, 4, 2, 5, microattn::Bias::kYes>;
constexpr std::size_t kT = LayerCfg::kTMax, kDM = LayerCfg::kDModel, kOD = LayerCfg::kOutDim;

/// Last token positions p tried: around the micro-tile (4/6/12 rows), the query tile and the
/// key tile of every arch.
const std::size_t kCuts[] = {0,  1,  2,  3,  5,  6,  7,  11, 15, 16,
                             17, 23, 24, 25, 47, 48, 63, 64, 65, 68};

// Outputs of tokens 0..p are bit-identical whatever tokens p+1.. hold, and bit-identical to a
// call with only tokens 0..p. Later rows that hold NaN or Inf make every later output element
// non-finite (with a window: the rows that see them; checked by test_masks.cpp).
template <class C>
void check_layer_causal_bits(std::uint64_t seed) {
  for_each_arch([seed](auto arch) {
    using A = decltype(arch);
    static RandomWeights<C> w;
    static MultiHeadAttention<C, A> layer;
    static float x[kT * kDM], xp[kT * kDM], y0[kT * kOD], y1[kT * kOD];
    w.fill(seed);
    ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    microattn_test::Rng rng(12);
    rng.fill(x, kT * kDM, -1.0f, 1.0f);
    ASSERT_EQ(layer.forward(x, kT, y0), Status::kOk);
    for (std::size_t p : kCuts) {
      for (int kind = 0; kind < kPoisonKinds; ++kind) {
        std::memcpy(xp, x, sizeof x);
        // Poison one element of row p + 1 (the first row after the cut) and all of row p + 2.
        if (p + 1 < kT) xp[(p + 1) * kDM + (p % kDM)] = poison(kind, rng);
        for (std::size_t i = (p + 2) * kDM; i < kT * kDM && i < (p + 3) * kDM; ++i)
          xp[i] = poison(kind, rng);
        ASSERT_EQ(layer.forward(xp, kT, y1), Status::kOk);
        EXPECT_EQ(std::memcmp(y0, y1, (p + 1) * kOD * sizeof(float)), 0)
            << A::name() << " p=" << p << " poison kind " << kind;
        if (kind >= 2 && p + 1 < kT && !C::kSliding) {  // NaN, Inf: every later element
          std::size_t finite = 0;
          for (std::size_t i = (p + 1) * kOD; i < kT * kOD; ++i) finite += nonfinite(y1[i]) ? 0 : 1;
          EXPECT_EQ(finite, 0u) << A::name() << " p=" << p << " poison kind " << kind;
        }
      }
      // The first p + 1 tokens alone give the same rows. (Not under -ffast-math: there the
      // compiler may order a short micro-tile's sums differently from a full one's, so a row's
      // last bits may depend on how many rows its tile holds; no later token's value reaches it,
      // which the poisoned runs above check under every flag.)
#if !defined(__FAST_MATH__)
      ASSERT_EQ(layer.forward(x, p + 1, y1), Status::kOk);
      EXPECT_EQ(std::memcmp(y0, y1, (p + 1) * kOD * sizeof(float)), 0) << A::name() << " p=" << p;
#endif
    }
  });
}

TEST(NumericContract, LayerIsCausalBitForBit) { check_layer_causal_bits<LayerCfg>(11); }
// A window's rows see different first keys, so a micro-tile's rows share fewer keys: each row's
// sums must still not depend on which rows follow it in the call.
TEST(NumericContract, WindowLayerIsCausalBitForBit) {
  check_layer_causal_bits<
      Config<70, 12, 4, 2, 5, microattn::Bias::kYes, microattn::SlidingWindow{5}>>(13);
  check_layer_causal_bits<
      Config<70, 12, 4, 2, 5, microattn::Bias::kYes, microattn::SlidingWindow{17}>>(14);
}

#if !defined(__FAST_MATH__)
// The core with a window (one key/value head of two query heads, d_head 4): row p of a call of
// T tokens is the same bits for every T > p.
TEST(NumericContract, WindowCoreRowDoesNotDependOnLaterRows) {
  using C = Config<40, 8, 2, 1, 4, microattn::SlidingWindow{5}>;
  constexpr std::size_t T = C::kTMax, QD = C::kQDim, KD = C::kKvDim;
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    static ScaledDotProductAttention<C, A> core;
    static float q[T * QD], k[T * KD], v[T * KD], y0[T * QD], y1[T * QD];
    microattn_test::Rng rng(15);
    rng.fill(q, T * QD, -2.0f, 2.0f);
    rng.fill(k, T * KD, -2.0f, 2.0f);
    rng.fill(v, T * KD, -1.0f, 1.0f);
    std::size_t differ = 0;
    for (std::size_t n = 1; n <= T; ++n) {
      ASSERT_EQ(core.forward(q, QD, k, KD, v, KD, n, y1, QD), Status::kOk);
      if (n > 1)
        for (std::size_t p = 0; p < n - 1; ++p)
          differ += std::memcmp(y0 + p * QD, y1 + p * QD, QD * sizeof(float)) != 0;
      std::memcpy(y0, y1, n * QD * sizeof(float));
    }
    EXPECT_EQ(differ, 0u) << A::name() << ": (row, T) pairs whose row differs from the T - 1 call";
  });
}
#endif

// The core: a NaN or Inf in key/value row j reaches exactly the rows i >= j of the query heads
// of that key/value group; a NaN in one query element makes exactly that row of that head NaN.
TEST(NumericContract, CoreNonFiniteReachesExactlyTheRowsThatSeeIt) {
#if MICROATTN_TEST_NONFINITE
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = LayerCfg;
    constexpr std::size_t QD = Cfg::kQDim, KD = Cfg::kKvDim, D = Cfg::kDHead, G = Cfg::kGroup;
    static ScaledDotProductAttention<Cfg, A> attn;
    static float q[kT * QD], k[kT * KD], v[kT * KD], o0[kT * QD], o1[kT * QD];
    static float qp[kT * QD], kp[kT * KD], vp[kT * KD];
    microattn_test::Rng rng(21);
    rng.fill(q, kT * QD, -1, 1);
    rng.fill(k, kT * KD, -1, 1);
    rng.fill(v, kT * KD, -1, 1);
    const float scale = microattn::default_scale<Cfg>();
    ASSERT_EQ(attn.set_scale(scale), microattn::Status::kOk);
    ASSERT_EQ(attn.forward(q, QD, k, KD, v, KD, kT, o0, QD), Status::kOk);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    for (std::size_t j : kCuts) {
      // which: 0 NaN in k, 1 +Inf in k (score +inf or -inf or NaN: all give NaN rows),
      //        2 NaN in v, 3 Inf in v, 4 NaN in q (row j only)
      for (int which = 0; which < 5; ++which) {
        std::memcpy(qp, q, sizeof q);
        std::memcpy(kp, k, sizeof k);
        std::memcpy(vp, v, sizeof v);
        const std::size_t g = j % Cfg::kKvHeads, d = j % D;
        if (which == 0) kp[j * KD + g * D + d] = nan;
        if (which == 1) kp[j * KD + g * D + d] = inf;
        if (which == 2) vp[j * KD + g * D + d] = nan;
        if (which == 3) vp[j * KD + g * D + d] = -inf;
        if (which == 4) qp[j * QD + (g * G) * D + d] = nan;  // head g*G of token j
        ASSERT_EQ(attn.set_scale(scale), microattn::Status::kOk);
        ASSERT_EQ(attn.forward(qp, QD, kp, KD, vp, KD, kT, o1, QD), Status::kOk);
        for (std::size_t i = 0; i < kT; ++i)
          for (std::size_t h = 0; h < Cfg::kHeads; ++h) {
            const bool sees = which == 4 ? (i == j && h == g * G) : (i >= j && h / G == g);
            const float* r0 = o0 + i * QD + h * D;
            const float* r1 = o1 + i * QD + h * D;
            if (!sees) {
              ASSERT_EQ(std::memcmp(r0, r1, D * sizeof(float)), 0)
                  << A::name() << " which=" << which << " j=" << j << " row " << i << " head " << h;
              continue;
            }
            for (std::size_t e = 0; e < D; ++e) {
              if (which == 2 || which == 3) {
                // A bad value reaches only its own column: the weights P are unchanged.
                if (e != d)
                  ASSERT_EQ(std::memcmp(r0 + e, r1 + e, sizeof(float)), 0) << A::name() << i;
                else if (which == 2)
                  ASSERT_TRUE(is_nan(r1[e])) << A::name() << " j=" << j << " row " << i;
                else  // -Inf times a weight: -Inf, or NaN where the weight is 0
                  ASSERT_TRUE(nonfinite(r1[e])) << A::name() << " j=" << j << " row " << i;
                continue;
              }
              // A NaN score, or an infinite one, makes the whole row NaN.
              ASSERT_TRUE(is_nan(r1[e])) << A::name() << " which=" << which << " j=" << j << " row "
                                         << i << " head " << h << " e=" << e << " value " << r1[e];
            }
          }
      }
    }
  });
#else
  SUCCEED();  // -ffinite-math-only: NaN and Inf inputs are outside the contract
#endif
}

// A scale accepted by forward whose scores overflow float (|s| > FLT_MAX) gives NaN rows, on
// every arch, and never a silently finite result.
TEST(NumericContract, ScoresOutsideFloatRangeGiveNaNRows) {
#if MICROATTN_TEST_NONFINITE
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<9, 1, 1, 1, 4>;
    static ScaledDotProductAttention<Cfg, A> attn;
    float q[9 * 4], k[9 * 4], v[9 * 4], o[9 * 4];
    microattn_test::Rng rng(31);
    rng.fill(q, 36, 0.5f, 1.0f);  // q.k >= 1: every score overflows with this scale
    rng.fill(k, 36, 0.5f, 1.0f);
    rng.fill(v, 36, -1.0f, 1.0f);
    ASSERT_EQ(attn.set_scale(2.3e38f), microattn::Status::kOk);
    ASSERT_EQ(attn.forward(q, 4, k, 4, v, 4, 9, o, 4), Status::kOk);
    for (float f : o) EXPECT_TRUE(is_nan(f)) << A::name();
  });
#else
  SUCCEED();
#endif
}

// A NaN token in the KV cache makes every later output NaN; truncating the cache to before it
// gives, bit for bit, what a fresh object gives (the stale NaN key is never read again).
TEST(NumericContract, KvCacheNaNStaysBehindTruncate) {
#if MICROATTN_TEST_NONFINITE
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = LayerCfg;
    static RandomWeights<Cfg> w;
    static KvAttention<Cfg, A, 7> kv, fresh;
    static float x[kT * kDM], ya[kT * kOD], yb[kT * kOD];
    w.fill(41);
    microattn_test::Rng rng(42);
    rng.fill(x, kT * kDM, -1, 1);
    ASSERT_EQ(kv.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
    ASSERT_EQ(fresh.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
    kv.reset();
    fresh.reset();
    const std::size_t j = 20;
    static float xn[kT * kDM];
    std::memcpy(xn, x, sizeof x);
    xn[j * kDM + 3] = std::numeric_limits<float>::quiet_NaN();
    ASSERT_EQ(kv.prefill(xn, 30, ya), Status::kOk);
    ASSERT_EQ(fresh.prefill(x, 30, yb), Status::kOk);
    EXPECT_EQ(std::memcmp(ya, yb, j * kOD * sizeof(float)), 0) << A::name();
    for (std::size_t i = j * kOD; i < 30 * kOD; ++i) ASSERT_TRUE(is_nan(ya[i])) << A::name() << i;
    ASSERT_EQ(kv.decode(x + 30 * kDM, ya), Status::kOk);
    for (std::size_t i = 0; i < kOD; ++i) ASSERT_TRUE(is_nan(ya[i])) << A::name();
    // Roll back to before the NaN token and continue with the clean tokens.
    ASSERT_EQ(kv.truncate(j), Status::kOk);
    ASSERT_EQ(fresh.truncate(j), Status::kOk);
    ASSERT_EQ(kv.prefill(x + j * kDM, 15, ya), Status::kOk);
    ASSERT_EQ(fresh.prefill(x + j * kDM, 15, yb), Status::kOk);
    EXPECT_EQ(std::memcmp(ya, yb, 15 * kOD * sizeof(float)), 0) << A::name();
    ASSERT_EQ(kv.decode(x + 35 * kDM, ya), Status::kOk);
    ASSERT_EQ(fresh.decode(x + 35 * kDM, yb), Status::kOk);
    EXPECT_EQ(std::memcmp(ya, yb, kOD * sizeof(float)), 0) << A::name();
    for (std::size_t i = 0; i < kOD; ++i) ASSERT_FALSE(nonfinite(ya[i])) << A::name();
  });
#else
  SUCCEED();
#endif
}

// The KV cache is causal too: prefill of T tokens whose later rows are poisoned gives the
// earlier rows bit-identically, and so does a chunked prefill (chunk 7).
TEST(NumericContract, KvPrefillIsCausalBitForBit) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    static RandomWeights<LayerCfg> w;
    static KvAttention<LayerCfg, A, 7> kv;
    static float x[kT * kDM], xp[kT * kDM], y0[kT * kOD], y1[kT * kOD];
    w.fill(51);
    ASSERT_EQ(kv.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    microattn_test::Rng rng(52);
    rng.fill(x, kT * kDM, -1.0f, 1.0f);
    kv.reset();
    ASSERT_EQ(kv.prefill(x, kT, y0), Status::kOk);
    for (std::size_t p :
         {std::size_t{0}, std::size_t{6}, std::size_t{7}, std::size_t{30}, std::size_t{64}}) {
      for (int kind = 0; kind < kPoisonKinds; ++kind) {
        std::memcpy(xp, x, sizeof x);
        for (std::size_t i = (p + 1) * kDM; i < kT * kDM; ++i) xp[i] = poison(kind, rng);
        kv.reset();
        ASSERT_EQ(kv.prefill(xp, kT, y1), Status::kOk);
        EXPECT_EQ(std::memcmp(y0, y1, (p + 1) * kOD * sizeof(float)), 0)
            << A::name() << " p=" << p << " kind " << kind;
      }
    }
  });
}

}  // namespace
