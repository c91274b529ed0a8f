// SPDX-License-Identifier: Apache-2.0
// ScaledDotProductAttention (the fused tiled causal core) against the worked example of the
// teaching notes and the double-precision reference.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "microattn/attention.hpp"
#include "reference/attention_ref.hpp"
#include "support/check.hpp"
#include "support/rng.hpp"
#include "support/unit.hpp"

namespace {

using microattn::Config;
using microattn::ScaledDotProductAttention;
using microattn::Status;
using microattn_test::for_each_arch;

// The 3-token example of seeds/002: Q = K = [[1,0],[0,1],[1,1]], V = [[1,2],[3,0],[0,1]].
const float kEx_QK[3 * 2] = {1, 0, 0, 1, 1, 1};
const float kEx_V[3 * 2] = {1, 2, 3, 0, 0, 1};

// store_key_tiles (the K^T staging of the core, the layer and the KV cache) writes every key's
// row into its tile column and nothing else, for any start key and count: the x86 register
// transposes (W x W blocks from a key that is a multiple of W, the plain loop around them and
// for the dimensions past the last whole W) against the plain formula, element by element.
template <class A, std::size_t D>
void check_key_tiles() {
  constexpr std::size_t BK = microattn::internal::Tiles<A>::kBK, LDK = D + 7;
  constexpr std::size_t kRows = 3 * BK;
  static float k[kRows * LDK], kt[kRows * D], want[kRows * D];
  microattn_test::Rng rng(D);
  rng.fill(k, kRows * LDK, -1.0f, 1.0f);
  for (std::size_t row0 : {std::size_t{0}, std::size_t{3}, std::size_t{16}, BK - 5, BK + 37}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{33},
                          std::size_t{70}, 2 * BK - row0 % BK}) {
      if (row0 + n > kRows) continue;
      microattn_test::fill_sentinel(kt);
      microattn_test::fill_sentinel(want);
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t r = row0 + i;
        for (std::size_t d = 0; d < D; ++d)
          want[(r / BK) * D * BK + d * BK + r % BK] = k[i * LDK + d];
      }
      microattn::kernels::store_key_tiles<A, D>(k, LDK, n, row0, BK, kt);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < kRows * D; ++i) bad += kt[i] != want[i];
      EXPECT_EQ(bad, 0u) << A::name() << " D=" << D << " row0=" << row0 << " n=" << n;
    }
  }
}

TEST(AttentionCore, KeyTilesHoldEveryKeyRow) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    check_key_tiles<A, 64>();
    check_key_tiles<A, 20>();
    check_key_tiles<A, 5>();
    check_key_tiles<A, 16>();
  });
}

TEST(AttentionCore, WorkedExampleScaleOne) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<3, 2, 1, 1, 2>;
    static ScaledDotProductAttention<Cfg, A> attn;
    float out[3 * 2];
    ASSERT_EQ(attn.set_scale(1.0f), microattn::Status::kOk);
    ASSERT_EQ(attn.forward(kEx_QK, 2, kEx_QK, 2, kEx_V, 2, 3, out, 2), Status::kOk);
    const float want[3 * 2] = {1.0f, 2.0f, 2.462117f, 0.537883f, 0.847766f, 1.000000f};
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(out[i], want[i], 1e-6) << A::name() << " i=" << i;
  });
}

TEST(AttentionCore, WorkedExampleDefaultScale) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<3, 2, 1, 1, 2>;
    static ScaledDotProductAttention<Cfg, A> attn;
    float out[3 * 2];
    ASSERT_EQ(attn.forward(kEx_QK, kEx_QK, kEx_V, 3, out), Status::kOk);  // 1/sqrt(2)
    const float want[3 * 2] = {1.0f, 2.0f, 2.339523f, 0.660477f, 0.993020f, 1.000000f};
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(out[i], want[i], 1e-6) << A::name() << " i=" << i;
  });
}

// With V = identity the outputs are the attention weights themselves:
// [1], [0.268941, 0.731059], [0.211942, 0.211942, 0.576117].
TEST(AttentionCore, WorkedExampleWeights) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<3, 3, 1, 1, 3>;
    static ScaledDotProductAttention<Cfg, A> attn;
    const float qk[3 * 3] = {1, 0, 0, 0, 1, 0, 1, 1, 0};
    const float eye[3 * 3] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    float w[3 * 3];
    ASSERT_EQ(attn.set_scale(1.0f), microattn::Status::kOk);
    ASSERT_EQ(attn.forward(qk, 3, qk, 3, eye, 3, 3, w, 3), Status::kOk);
    const float want[3 * 3] = {1, 0, 0, 0.268941f, 0.731059f, 0, 0.211942f, 0.211942f, 0.576117f};
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(w[i], want[i], 1e-6) << A::name() << " i=" << i;
  });
}

// Random Q, K, V in [-1, 1]; the fast path (both arches) against the double reference.
template <class Cfg, class A>
void check_core_random(std::size_t T, std::uint64_t seed, float scale_mul = 1.0f) {
  constexpr std::size_t N = Cfg::kTMax, QD = Cfg::kQDim, KD = Cfg::kKvDim;
  static float q[N * QD], k[N * KD], v[N * KD], out[N * QD];
  static double qd[N * QD], kd[N * KD], vd[N * KD], ref[N * QD], s[N];
  static ScaledDotProductAttention<Cfg, A> attn;
  microattn_test::Rng rng(seed);
  rng.fill(q, T * QD, -1.0f, 1.0f);
  rng.fill(k, T * KD, -1.0f, 1.0f);
  rng.fill(v, T * KD, -1.0f, 1.0f);
  for (std::size_t i = 0; i < T * QD; ++i) qd[i] = q[i];
  for (std::size_t i = 0; i < T * KD; ++i) kd[i] = k[i], vd[i] = v[i];
  const float scale = microattn::default_scale<Cfg>() * scale_mul;
  ASSERT_EQ(attn.set_scale(scale), microattn::Status::kOk);
  ASSERT_EQ(attn.forward(q, QD, k, KD, v, KD, T, out, QD), Status::kOk);
  microattn_ref::core(qd, kd, vd, T, T, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead, scale, ref, s);
  // Chain: d_head products per score, amplified by the largest |score| (<= scale * d_head),
  // then T terms of P V.
  const double smax = scale * Cfg::kDHead;
  const double tol = microattn_test::tolerance(Cfg::kDHead * (smax > 1 ? smax : 1) + T, 1.0);
  const double err = microattn_test::max_diff(out, ref, T * QD);
  EXPECT_LE(err, tol) << A::name() << " T=" << T << " H=" << Cfg::kHeads << " Hkv=" << Cfg::kKvHeads
                      << " d_head=" << Cfg::kDHead << " seed=" << seed;
}

template <class Cfg>
void sweep_core(std::uint64_t seed) {
  for_each_arch([seed](auto arch) {
    using A = decltype(arch);
    using Tl = microattn::internal::Tiles<A>;
    // Around the tile sizes and at the ends: 1, N-1, N, N+1, 2N+1, T_max.
    const std::size_t sizes[] = {
        1,           2,       3,           Tl::kBQ - 1,     Tl::kBQ,        Tl::kBQ + 1,
        Tl::kBK - 1, Tl::kBK, Tl::kBK + 1, 2 * Tl::kBK + 1, Cfg::kTMax - 1, Cfg::kTMax};
    for (std::size_t T : sizes)
      if (T >= 1 && T <= Cfg::kTMax) check_core_random<Cfg, A>(T, seed + T);
  });
}

TEST(AttentionCore, RandomMhaHeadWidths) {
  sweep_core<Config<70, 1, 2, 2, 1>>(11);
  sweep_core<Config<70, 1, 2, 2, 3>>(12);
  sweep_core<Config<70, 1, 1, 1, 5>>(13);
  sweep_core<Config<70, 1, 2, 2, 12>>(14);
  sweep_core<Config<140, 1, 2, 2, 64>>(15);
  sweep_core<Config<140, 1, 1, 1, 80>>(16);
}

TEST(AttentionCore, RandomGqaMqa) {
  sweep_core<Config<70, 1, 4, 2, 16>>(21);  // GQA, 2 query heads per key/value head
  sweep_core<Config<70, 1, 6, 1, 8>>(22);   // MQA
  sweep_core<Config<100, 1, 8, 2, 5>>(23);  // GQA, odd width
}

// Changing tokens after position i never changes outputs 0..i (bit for bit).
TEST(AttentionCore, Causality) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<80, 1, 4, 2, 12>;
    constexpr std::size_t T = 80, QD = Cfg::kQDim, KD = Cfg::kKvDim;
    static float q[T * QD], k[T * KD], v[T * KD], a[T * QD], b[T * QD];
    static ScaledDotProductAttention<Cfg, A> attn;
    microattn_test::Rng rng(7);
    rng.fill(q, T * QD, -1, 1);
    rng.fill(k, T * KD, -1, 1);
    rng.fill(v, T * KD, -1, 1);
    for (std::size_t i : {std::size_t{0}, std::size_t{5}, std::size_t{47}, std::size_t{63},
                          std::size_t{64}, std::size_t{78}}) {
      ASSERT_EQ(attn.forward(q, k, v, T, a), Status::kOk);
      microattn_test::Rng r2(100 + i);
      r2.fill(q + (i + 1) * QD, (T - i - 1) * QD, -50, 50);
      r2.fill(k + (i + 1) * KD, (T - i - 1) * KD, -50, 50);
      r2.fill(v + (i + 1) * KD, (T - i - 1) * KD, -50, 50);
      ASSERT_EQ(attn.forward(q, k, v, T, b), Status::kOk);
      EXPECT_EQ(std::memcmp(a, b, (i + 1) * QD * sizeof(float)), 0) << A::name() << " i=" << i;
    }
  });
}

// Scores of magnitude 1e4 and more: finite, and equal to the reference.
TEST(AttentionCore, HugeScores) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<70, 1, 2, 1, 8>;
    constexpr std::size_t T = 70, QD = Cfg::kQDim, KD = Cfg::kKvDim;
    static float q[T * QD], k[T * KD], v[T * KD], out[T * QD];
    static double qd[T * QD], kd[T * KD], vd[T * KD], ref[T * QD], s[T];
    static ScaledDotProductAttention<Cfg, A> attn;
    microattn_test::Rng rng(31);
    rng.fill(q, T * QD, -100, 100);  // |scores| up to 8e4 with scale 1
    rng.fill(k, T * KD, -100, 100);
    rng.fill(v, T * KD, -1, 1);
    for (std::size_t i = 0; i < T * QD; ++i) qd[i] = q[i];
    for (std::size_t i = 0; i < T * KD; ++i) kd[i] = k[i], vd[i] = v[i];
    ASSERT_EQ(attn.set_scale(1.0f), microattn::Status::kOk);
    ASSERT_EQ(attn.forward(q, QD, k, KD, v, KD, T, out, QD), Status::kOk);
    microattn_ref::core(qd, kd, vd, T, T, 2, 1, 8, 1.0, ref, s);
    bool finite = true;
    for (std::size_t i = 0; i < T * QD; ++i)
      finite = finite && microattn::internal::finite_bits(out[i]);
    EXPECT_TRUE(finite) << A::name();
    // Scores of size S carry absolute error ~ 8 eps S, so the weights of near-ties move by
    // that much: with S ~ 1e4, 8 * 6e-8 * 1e4 = 5e-3 relative per weight in the worst case.
    // Most rows are dominated by one key; we bound the error by the score-rounding model.
    const double worst = microattn_test::max_diff(out, ref, T * QD);
    EXPECT_LE(worst, 8 * microattn_test::kEps * 8 * 1e4 * 2) << A::name();
  });
}

// A row whose visible scores are all equal averages the visible values.
TEST(AttentionCore, EqualScoresGiveTheMean) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<130, 1, 1, 1, 4>;
    constexpr std::size_t T = 130, D = 4;
    static float q[T * D], k[T * D], v[T * D], out[T * D];
    microattn_test::Rng rng(41);
    for (std::size_t i = 0; i < T * D; ++i) q[i] = 3.0f, k[i] = 0.5f;
    rng.fill(v, T * D, -1, 1);
    static ScaledDotProductAttention<Cfg, A> attn;
    ASSERT_EQ(attn.forward(q, k, v, T, out), Status::kOk);
    double sum[D] = {0, 0, 0, 0};
    for (std::size_t i = 0; i < T; ++i) {
      for (std::size_t d = 0; d < D; ++d) {
        sum[d] += v[i * D + d];
        EXPECT_NEAR(out[i * D + d], sum[d] / (i + 1), microattn_test::tolerance(i + 1, 1.0))
            << A::name() << " row " << i;
      }
    }
  });
}

// Scores that overflow exp() unless the max is subtracted first (exp(100) > FLT_MAX... and
// exp(-100) underflows): the online softmax must still give the reference.
TEST(AttentionCore, LargeNegativeScale) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<40, 1, 1, 1, 3>;
    check_core_random<Cfg, A>(40, 77, -300.0f);  // scores in about [-900, 900]
  });
}

}  // namespace
