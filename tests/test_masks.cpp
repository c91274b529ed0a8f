// SPDX-License-Identifier: Apache-2.0
// Mask kinds (causal, none, sliding window), attention maps, and the ring-buffer KV cache of
// sliding-window layers, against the double-precision reference with the same mask.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/microattn.hpp"
#include "reference/attention_ref.hpp"
#include "reference/rope_ref.hpp"
#include "support/check.hpp"
#include "support/random_weights.hpp"
#include "support/rng.hpp"
#include "support/rope.hpp"
#include "support/serial_executor.hpp"
#include "support/unit.hpp"

namespace {

using microattn::Bias;
using microattn::Config;
using microattn::KvAttention;
using microattn::Mask;
using microattn::MultiHeadAttention;
using microattn::RopeConfig;
using microattn::ScaledDotProductAttention;
using microattn::SlidingWindow;
using microattn::Status;
using microattn::WeightLayout;
using microattn_test::all_sentinel;
using microattn_test::fill_sentinel;
using microattn_test::for_each_arch;
using microattn_test::kQuick;

// T_max past two SIMD key tiles (64) and many scalar ones (16); smaller under emulation.
constexpr std::size_t kT = kQuick ? 40 : 150;
constexpr std::size_t kDM = 24, kH = 4, kHkv = 2, kD = 8;
template <auto... kOpts>
using Cfg = Config<kT, kDM, kH, kHkv, kD, Bias::kYes, kOpts...>;

float g_x[kT * kDM], g_y[kT * 32],
    g_y2[kT * 32];      // y: [T][d_model] (layer), [T][H * d_head] (core)
double g_ref[kT * 32];  // reference outputs: [T][d_model] (layer), [T][H * d_head] (core)
double g_scratch[microattn_ref::layer_scratch(kT, kH, kHkv, kD)];
float g_maps[kH * kT * kT];
double g_wref[kH * kT * kT];

template <class C>
microattn_ref::LayerRef ref_of(const microattn_test::RandomWeights<C>& w) {
  microattn_ref::LayerRef r = w.ref(WeightLayout::kInOut);
  r.window = C::kWindow;
  r.causal = C::kCausal;
  return r;
}

/// The layer with mask C at several T, each arch, against the reference; also the maps.
template <class C>
void check_layer_mask(std::uint64_t seed) {
  static microattn_test::RandomWeights<C> w;
  w.fill(seed);
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using Tl = microattn::internal::Tiles<A>;
    static MultiHeadAttention<C, A> layer;
    ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    const std::size_t Ts[] = {1, 7, Tl::kBK - 1, Tl::kBK + 1, 2 * Tl::kBK + 5, kT};
    for (std::size_t T : Ts) {
      if (T > kT) continue;
      microattn_test::Rng(seed + T).fill(g_x, T * kDM, -1.0f, 1.0f);
      ASSERT_EQ(layer.forward(g_x, T, g_y), Status::kOk);
      microattn_ref::layer(ref_of(w), g_x, T, microattn::default_scale<C>(), g_ref, g_scratch);
      const double chain = kDM + 2.0 * kD + double(T) + kH * kD + 4;
      const double tol = microattn_test::tolerance(chain, microattn_test::max_abs(g_ref, T * kDM));
      EXPECT_LE(microattn_test::max_diff(g_y, g_ref, T * kDM), tol)
          << A::name() << " T " << T << " window " << C::kWindow << " causal " << C::kCausal;
      // The maps call gives the same output, bit for bit (same kernel, same order).
      ASSERT_EQ(layer.forward_with_maps(g_x, T, g_y2, g_maps, kH * T * T), Status::kOk);
      EXPECT_EQ(std::memcmp(g_y, g_y2, T * kDM * sizeof(float)), 0) << A::name() << " T " << T;
    }
  });
}

TEST(Masks, LayerNone) { check_layer_mask<Cfg<Mask::kNone>>(1); }
TEST(Masks, LayerCausal) { check_layer_mask<Cfg<Mask::kCausal>>(2); }
TEST(Masks, LayerWindow1) { check_layer_mask<Cfg<SlidingWindow{1}>>(3); }
TEST(Masks, LayerWindowBelowTile) { check_layer_mask<Cfg<SlidingWindow{5}>>(4); }
TEST(Masks, LayerWindowScalarTile) { check_layer_mask<Cfg<SlidingWindow{16}>>(5); }
TEST(Masks, LayerWindowSimdTile) { check_layer_mask<Cfg<SlidingWindow{64}>>(6); }
TEST(Masks, LayerWindowNotATileMultiple) { check_layer_mask<Cfg<SlidingWindow{37}>>(7); }
TEST(Masks, LayerWindowAboveT) { check_layer_mask<Cfg<SlidingWindow{kT + 50}>>(8); }

/// The core with mask C against the reference core, and its maps against the reference's
/// softmax weights: rows sum to 1, exact zeros where masked, and out == P·V from the map.
constexpr std::size_t QD = kH * kD, KD = kHkv * kD;
static_assert(kT * QD <= sizeof(g_y) / sizeof(float) && kT * QD <= sizeof(g_ref) / sizeof(double),
              "core outputs fit g_y and g_ref");
float q[kT * QD], k[kT * KD], v[kT * KD];
double qd[kT * QD], kd[kT * KD], vd[kT * KD];
double s[kT];

template <class C>
void check_core_maps(std::uint64_t seed) {
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    static ScaledDotProductAttention<C, A> core;
    const std::size_t Ts[] = {1, 9, kT};
    for (std::size_t T : Ts) {
      microattn_test::Rng rng(seed + T);
      rng.fill(q, T * QD, -2.0f, 2.0f);
      rng.fill(k, T * KD, -2.0f, 2.0f);
      rng.fill(v, T * KD, -1.0f, 1.0f);
      for (std::size_t i = 0; i < T * QD; ++i) qd[i] = q[i];
      for (std::size_t i = 0; i < T * KD; ++i) kd[i] = k[i], vd[i] = v[i];
      for (std::size_t i = 0; i < kH * T * T; ++i) g_maps[i] = -1.0f;
      ASSERT_EQ(core.forward_with_maps(q, k, v, T, g_y, g_maps, kH * T * T), Status::kOk);
      microattn_ref::core(qd, kd, vd, T, T, kH, kHkv, kD, microattn::default_scale<C>(), g_ref, s,
                          g_wref, C::kWindow, C::kCausal);
      // Probabilities: each a chain of d_head (score) + the exp (1 ulp, relative to the score
      // magnitude ~ |q||k| scale <= 8 here) + the 1/l of T terms.
      const double ptol = microattn_test::tolerance(kD + 8.0 * 4 + double(T), 1.0);
      for (std::size_t h = 0; h < kH; ++h)
        for (std::size_t i = 0; i < T; ++i) {
          const float* row = g_maps + (h * T + i) * T;
          const double* rref = g_wref + (h * T + i) * T;
          double sum = 0;
          for (std::size_t j = 0; j < T; ++j) {
            sum += row[j];
            if (rref[j] == 0.0) {
              EXPECT_EQ(row[j], 0.0f)
                  << "masked key must be exactly 0: h " << h << " i " << i << " j " << j;
            }
            EXPECT_NEAR(row[j], rref[j], ptol)
                << A::name() << " h " << h << " i " << i << " j " << j;
          }
          EXPECT_NEAR(sum, 1.0, microattn_test::tolerance(double(T) + 2, 1.0))
              << A::name() << " h " << h << " i " << i;
          // out == P·V with the map's P.
          const std::size_t g = h / (kH / kHkv);
          for (std::size_t d = 0; d < kD; ++d) {
            double acc = 0;
            for (std::size_t j = 0; j < T; ++j) acc += double(row[j]) * v[j * KD + g * kD + d];
            EXPECT_NEAR(g_y[i * QD + h * kD + d], acc,
                        microattn_test::tolerance(kD + 8.0 * 4 + 2.0 * T, 1.0))
                << A::name() << " h " << h << " i " << i;
          }
        }
      const double tol = microattn_test::tolerance(kD + 8.0 * 4 + double(T), 1.0);
      EXPECT_LE(microattn_test::max_diff(g_y, g_ref, T * QD), tol) << A::name() << " T " << T;
    }
  });
}

/// The multi-core split of the attention's query tiles (ranked by cost, dealt back and forth)
/// gives every tile to exactly one part: with 2 to 5 workers an output pre-filled with NaN ends
/// up the same bits as with one worker, for each mask, at T = 1 .. T_max in steps that put the
/// partial last tile (2 T rows: 2 query heads per key/value head) at many ranks. The executor
/// runs its tasks one after the other on this thread, last first, so every target runs it.
template <class C>
void check_split_covers_every_tile(std::uint64_t seed) {
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    static ScaledDotProductAttention<C, A> core;
    microattn::Executor serial = microattn_test::serial_executor();
    for (std::size_t T = 1; T <= kT; T += kQuick ? 3 : 5) {
      microattn_test::Rng rng(seed + T);
      rng.fill(q, T * QD, -2.0f, 2.0f);
      rng.fill(k, T * KD, -2.0f, 2.0f);
      rng.fill(v, T * KD, -1.0f, 1.0f);
      serial.workers = 1;
      ASSERT_EQ(core.set_executor(serial), Status::kOk);
      ASSERT_EQ(core.forward(q, k, v, T, g_y), Status::kOk);
      for (std::size_t workers = 2; workers <= 5; ++workers) {
        for (std::size_t i = 0; i < T * QD; ++i) g_y2[i] = std::nanf("");
        serial.workers = workers;
        ASSERT_EQ(core.set_executor(serial), Status::kOk);
        ASSERT_EQ(core.forward(q, k, v, T, g_y2), Status::kOk);
        EXPECT_EQ(std::memcmp(g_y, g_y2, T * QD * sizeof(float)), 0)
            << A::name() << " T " << T << " workers " << workers;
      }
    }
  });
}

TEST(Split, CausalTilesEachRunOnce) {
  check_split_covers_every_tile<Cfg<microattn::MaxWorkers{5}>>(21);
}
TEST(Split, NoneTilesEachRunOnce) {
  check_split_covers_every_tile<Cfg<Mask::kNone, microattn::MaxWorkers{5}>>(22);
}
TEST(Split, WindowTilesEachRunOnce) {
  check_split_covers_every_tile<Cfg<SlidingWindow{13}, microattn::MaxWorkers{5}>>(23);
}

/// With MaxWorkers{n} the core stages min(n, H_kv) key/value heads at once: with at least as
/// many heads as workers each worker attends whole heads in its own stage, and the heads left
/// over split their query tiles. Three key/value heads (two query heads each) with 1 to 4
/// workers cover all three cases: 2 workers (two whole heads, one split), 3 (all whole), 4
/// (all split). Outputs and maps, pre-filled with NaN, are the 1-worker bits.
constexpr std::size_t kH3 = 6, kHkv3 = 3;
float q3[kT * kH3 * kD], k3[kT * kHkv3 * kD], v3[kT * kHkv3 * kD], y1[kT * kH3 * kD],
    yn[kT * kH3 * kD], m1[kH3 * kT * kT], mn[kH3 * kT * kT];

TEST(Split, WholeHeadsAndLeftOverHeads) {
  constexpr std::size_t H = kH3, Hkv = kHkv3, QD3 = H * kD, KD3 = Hkv * kD;
  using C = Config<kT, kDM, H, Hkv, kD, microattn::MaxWorkers{4}>;
  static_assert(ScaledDotProductAttention<C>::kStagedHeads == 3, "one stage per head");
  static_assert(ScaledDotProductAttention<
                    Config<kT, kDM, H, Hkv, kD, microattn::MaxWorkers{2}>>::kStagedHeads == 2,
                "one stage per worker");
  static_assert(ScaledDotProductAttention<Config<kT, kDM, H, Hkv, kD>>::kStagedHeads == 1,
                "one stage without workers");
  static_assert(ScaledDotProductAttention<C>::ram_bytes() >
                    ScaledDotProductAttention<Config<kT, kDM, H, Hkv, kD>>::ram_bytes(),
                "ram_bytes counts the stages");
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    static ScaledDotProductAttention<C, A> core;
    microattn::Executor serial = microattn_test::serial_executor();
    for (std::size_t T : {std::size_t{1}, std::size_t{37}, kT}) {
      microattn_test::Rng rng(31 + T);
      rng.fill(q3, T * QD3, -2.0f, 2.0f);
      rng.fill(k3, T * KD3, -2.0f, 2.0f);
      rng.fill(v3, T * KD3, -1.0f, 1.0f);
      serial.workers = 1;
      ASSERT_EQ(core.set_executor(serial), Status::kOk);
      ASSERT_EQ(core.forward_with_maps(q3, k3, v3, T, y1, m1, H * T * T), Status::kOk);
      for (std::size_t workers = 2; workers <= 4; ++workers) {
        for (std::size_t i = 0; i < T * QD3; ++i) yn[i] = std::nanf("");
        for (std::size_t i = 0; i < H * T * T; ++i) mn[i] = std::nanf("");
        serial.workers = workers;
        ASSERT_EQ(core.set_executor(serial), Status::kOk);
        ASSERT_EQ(core.forward_with_maps(q3, k3, v3, T, yn, mn, H * T * T), Status::kOk);
        EXPECT_EQ(std::memcmp(y1, yn, T * QD3 * sizeof(float)), 0)
            << A::name() << " T " << T << " workers " << workers;
        EXPECT_EQ(std::memcmp(m1, mn, H * T * T * sizeof(float)), 0)
            << A::name() << " T " << T << " workers " << workers;
        ASSERT_EQ(core.forward(q3, k3, v3, T, yn), Status::kOk);
        EXPECT_EQ(std::memcmp(y1, yn, T * QD3 * sizeof(float)), 0)
            << A::name() << " T " << T << " workers " << workers;
      }
    }
  });
}

TEST(Maps, CoreCausal) { check_core_maps<Cfg<>>(11); }
TEST(Maps, CoreNone) { check_core_maps<Cfg<Mask::kNone>>(12); }
TEST(Maps, CoreWindow) { check_core_maps<Cfg<SlidingWindow{6}>>(13); }
TEST(Maps, CoreWindowNotATileMultiple) { check_core_maps<Cfg<SlidingWindow{21}>>(14); }

TEST(Maps, WorkedExampleOfTheTeachingNotes) {
  // seeds/002: "The cat sat", Q = K = X, V given, scale 1, causal. The notes print the weights
  // cut to three digits: [1, 0, 0], [0.268, 0.731, 0], [0.211, 0.211, 0.576].
  using W = Config<3, 2, 1, 1, 2>;
  const float x[] = {1, 0, 0, 1, 1, 1}, v[] = {1, 2, 3, 0, 0, 1};
  const float printed[9] = {1, 0, 0, 0.268f, 0.731f, 0, 0.211f, 0.211f, 0.576f};
  float out[6], maps[9];
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    ScaledDotProductAttention<W, A> core;
    ASSERT_EQ(core.set_scale(1.0f), Status::kOk);
    ASSERT_EQ(core.forward_with_maps(x, x, v, 3, out, maps, 9), Status::kOk);
    const double e = std::exp(1.0), e2 = std::exp(2.0);
    const double exact[9] = {1,
                             0,
                             0,
                             1 / (1 + e),
                             e / (1 + e),
                             0,
                             e / (2 * e + e2),
                             e / (2 * e + e2),
                             e2 / (2 * e + e2)};
    for (int i = 0; i < 9; ++i) {
      // The notes cut to three digits: printed <= weight < printed + 0.001 (a weight of 1 may
      // come out a rounding below 1).
      EXPECT_GE(maps[i], printed[i] - 1e-6f) << A::name() << " " << i;
      EXPECT_LT(maps[i], printed[i] + 0.001f) << A::name() << " " << i;
      EXPECT_NEAR(maps[i], exact[i], 4e-7) << A::name() << " " << i;
    }
    EXPECT_EQ(maps[1], 0.0f);
    EXPECT_EQ(maps[2], 0.0f);
    EXPECT_EQ(maps[5], 0.0f);
  });
}

TEST(Maps, BadInputWritesNothing) {
  using C = Cfg<>;
  static microattn_test::RandomWeights<C> w;
  w.fill(21);
  static MultiHeadAttention<C> layer;
  ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
  microattn_test::Rng(22).fill(g_x, 10 * kDM, -1, 1);
  fill_sentinel(g_maps);
  fill_sentinel(g_y);
  EXPECT_EQ(layer.forward_with_maps(g_x, 10, g_y, nullptr, 400), Status::kNullPointer);
  EXPECT_EQ(layer.forward_with_maps(g_x, 10, g_y, g_maps, kH * 100 - 1), Status::kBadArgument);
  EXPECT_EQ(layer.forward_with_maps(g_x, 10, g_y, g_x, kH * 100), Status::kOverlap);
  EXPECT_EQ(layer.forward_with_maps(g_x, 10, g_y, g_y + 1, kH * 100), Status::kOverlap);
  EXPECT_EQ(layer.forward_with_maps(g_x, 0, g_y, g_maps, kH * 100), Status::kBadTokenCount);
  ASSERT_TRUE(all_sentinel(g_maps));
  ASSERT_TRUE(all_sentinel(g_y));
}

TEST(Masks, NoneIsPermutationEquivariant) {
  // Without a mask or positions, attention commutes with permuting the tokens:
  // layer(P x) = P layer(x) (up to rounding: the sums run in another order).
  using C = Cfg<Mask::kNone>;
  static microattn_test::RandomWeights<C> w;
  w.fill(31);
  static MultiHeadAttention<C> layer;
  ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
  const std::size_t T = kQuick ? 23 : 97;
  static float xp[kT * kDM];
  microattn_test::Rng(32).fill(g_x, T * kDM, -1, 1);
  std::size_t perm[kT];
  for (std::size_t i = 0; i < T; ++i) perm[i] = (i * 37 + 11) % T;  // 37 coprime with T
  for (std::size_t i = 0; i < T; ++i)
    std::memcpy(xp + i * kDM, g_x + perm[i] * kDM, kDM * sizeof(float));
  ASSERT_EQ(layer.forward(g_x, T, g_y), Status::kOk);
  ASSERT_EQ(layer.forward(xp, T, g_y2), Status::kOk);
  double mag = 0, diff = 0;
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t d = 0; d < kDM; ++d) {
      const double a = g_y2[i * kDM + d], b = g_y[perm[i] * kDM + d];
      mag = std::fmax(mag, std::fabs(b));
      diff = std::fmax(diff, std::fabs(a - b));
    }
  EXPECT_LE(diff, 2 * microattn_test::tolerance(kDM + 2.0 * kD + T + kH * kD + 4, mag));
  // ... and a causal layer does not (a check that can fail).
  using CC = Cfg<>;
  static MultiHeadAttention<CC> causal;
  ASSERT_EQ(causal.set_weights(microattn::Weights<CC>(WeightLayout::kOutIn, w.wq, w.wk, w.wv, w.wo,
                                                      w.bq, w.bk, w.bv, w.bo)),
            Status::kOk);
  ASSERT_EQ(causal.forward(g_x, T, g_y), Status::kOk);
  ASSERT_EQ(causal.forward(xp, T, g_y2), Status::kOk);
  double cdiff = 0;
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t d = 0; d < kDM; ++d)
      cdiff = std::fmax(cdiff, std::fabs(double(g_y2[i * kDM + d]) - g_y[perm[i] * kDM + d]));
  EXPECT_GT(cdiff, 1e-3);
}

#if !(defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)  // no NaN promise under -ffast-math
TEST(Masks, SlidingWindowSeesExactlyItsBand) {
  // A NaN in token j reaches rows j .. j + W - 1 and no other: rows before j are bit-identical
  // to a run without it (causality), rows from j + W on too (the band).
  constexpr std::size_t W = 9;
  using C = Cfg<SlidingWindow{W}>;
  static microattn_test::RandomWeights<C> w;
  w.fill(41);
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    static MultiHeadAttention<C, A> layer;
    ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    const std::size_t T = kT, j = kQuick ? 13 : 70;
    microattn_test::Rng(42).fill(g_x, T * kDM, -1, 1);
    ASSERT_EQ(layer.forward(g_x, T, g_y), Status::kOk);
    g_x[j * kDM + 3] = NAN;
    ASSERT_EQ(layer.forward(g_x, T, g_y2), Status::kOk);
    for (std::size_t t = 0; t < T; ++t) {
      const bool hit = t >= j && t < j + W;
      bool nan = false;
      for (std::size_t d = 0; d < kDM; ++d) nan |= g_y2[t * kDM + d] != g_y2[t * kDM + d];
      EXPECT_EQ(nan, hit) << A::name() << " row " << t;
      if (!hit) {
        EXPECT_EQ(std::memcmp(g_y + t * kDM, g_y2 + t * kDM, kDM * sizeof(float)), 0)
            << A::name() << " row " << t;
      }
    }
  });
}

#endif

// ---------------------------------------------------------------------------------------------
// Ring-buffer KV cache

constexpr std::size_t kW = 5, kChunk = 4, kRingT = 8;  // window, prefill chunk, T_max per call
using RingCfg =
    Config<kRingT, kDM, kH, kHkv, kD, Bias::kYes, SlidingWindow{kW}, microattn::Rope::kYes>;
constexpr std::size_t kStream = 5 * kW + 3;
float g_sx[kStream * kDM], g_sy[kStream * kDM];
double g_sref[kStream * kDM];
double g_sscratch[microattn_ref::layer_scratch(kStream, kH, kHkv, kD)];

/// RoPE over the whole head, base 100: fast turns, so positions past W visibly matter.
RopeConfig rope_on() {
  return microattn_test::rope_cfg(true, microattn::RopePairing::kHalfSplit, 0, 100.0f);
}

TEST(Ring, StreamDecodedEqualsSlidingWindowPrefillAtEveryStep) {
  static microattn_test::RandomWeights<RingCfg> w;
  w.fill(51);
  microattn_test::Rng(52).fill(g_sx, kStream * kDM, -1, 1);
  microattn_ref::LayerRef ref = w.ref(WeightLayout::kInOut);
  ref.window = kW;
  const microattn_ref::RopeRef rr{kD, 100.0, false};
  // The reference over the whole stream: row t attends t - W + 1 .. t, RoPE at position t.
  microattn_ref::layer_rope(ref, rr, g_sx, kStream, microattn::default_scale<RingCfg>(), g_sref,
                            g_sscratch);
  const double tol = microattn_test::tolerance(kDM + 2.0 * kD + kW + kH * kD + 8,
                                               microattn_test::max_abs(g_sref, kStream * kDM));
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    static KvAttention<RingCfg, A, kChunk> kv;
    static_assert(KvAttention<RingCfg, A, kChunk>::kRingTokens == kW + kChunk - 1, "ring size");
    kv.reset();
    ASSERT_EQ(kv.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(kv.set_rope(rope_on()), Status::kOk);
    for (std::size_t t = 0; t < kStream; ++t) {
      ASSERT_EQ(kv.decode(g_sx + t * kDM, g_sy + t * kDM), Status::kOk);
      EXPECT_LE(microattn_test::max_diff(g_sy + t * kDM, g_sref + t * kDM, kDM), tol)
          << A::name() << " step " << t;
    }
    EXPECT_EQ(kv.length(), kStream);
    // The same stream as prefill calls of every length 1 .. T_max (each run in chunks of 4,
    // wrapping the ring mid-call), mixed with decodes.
    kv.reset();
    const std::size_t calls[] = {3, 8, 1, 7, 2, 5};  // 26 of the 28 tokens
    std::size_t done = 0;
    for (std::size_t c : calls) {
      ASSERT_LE(done + c, kStream);
      ASSERT_EQ(kv.prefill(g_sx + done * kDM, c, g_sy + done * kDM), Status::kOk);
      done += c;
    }
    while (done < kStream) {
      ASSERT_EQ(kv.decode(g_sx + done * kDM, g_sy + done * kDM), Status::kOk);
      ++done;
    }
    EXPECT_LE(microattn_test::max_diff(g_sy, g_sref, kStream * kDM), tol) << A::name();
  });
}

TEST(Ring, TruncateResetAndBounds) {
  static microattn_test::RandomWeights<RingCfg> w;
  w.fill(61);
  microattn_test::Rng(62).fill(g_sx, kStream * kDM, -1, 1);
  static KvAttention<RingCfg, microattn::DefaultArch, kChunk> a, fresh;
  static float y1[kStream * kDM], y2[kStream * kDM];
  for (auto* kv : {&a, &fresh}) {
    ASSERT_EQ(kv->set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(kv->set_rope(rope_on()), Status::kOk);
  }
  EXPECT_EQ(a.capacity(), SIZE_MAX);  // never kCacheFull
  // Run 20 tokens, roll back the last 4 (the most a chunk of 4 allows) and redo them: the
  // same outputs, bit for bit, as running them once.
  ASSERT_EQ(a.prefill(g_sx, 8, y1), Status::kOk);
  ASSERT_EQ(a.prefill(g_sx + 8 * kDM, 8, y1 + 8 * kDM), Status::kOk);
  for (std::size_t t = 16; t < 20; ++t)
    ASSERT_EQ(a.decode(g_sx + t * kDM, y1 + t * kDM), Status::kOk);
  EXPECT_EQ(a.truncate(15), Status::kBadArgument);  // 5 back: token 15's window is overwritten
  EXPECT_EQ(a.length(), 20u);
  ASSERT_EQ(a.truncate(16), Status::kOk);
  for (std::size_t t = 16; t < 20; ++t)
    ASSERT_EQ(a.decode(g_sx + t * kDM, y2 + t * kDM), Status::kOk);
  EXPECT_EQ(std::memcmp(y1 + 16 * kDM, y2 + 16 * kDM, 4 * kDM * sizeof(float)), 0);
  // reset: a new stream equals a fresh object's, bit for bit (RoPE tables refilled as needed).
  a.reset();
  for (std::size_t t = 0; t < 12; ++t) {
    ASSERT_EQ(a.decode(g_sx + t * kDM, y1 + t * kDM), Status::kOk);
    ASSERT_EQ(fresh.decode(g_sx + t * kDM, y2 + t * kDM), Status::kOk);
  }
  EXPECT_EQ(std::memcmp(y1, y2, 12 * kDM * sizeof(float)), 0);
  // export: only positions still held.
  static float kc[kW * kHkv * kD], vc[kW * kHkv * kD];
  microattn::CacheSlice info;
  EXPECT_EQ(a.export_cache(0, 2, kc, vc, &info), Status::kBadArgument);  // overwritten
  EXPECT_EQ(a.export_cache(12 - kW, kW, kc, vc, &info), Status::kOk);
  EXPECT_EQ(a.prefill(g_sx, kRingT + 1, y1), Status::kBadTokenCount);  // a call is <= T_max
}

// Speculative decoding on a window model truncates after every rejected draft, several times in
// a row. Random sequences of decode, prefill and truncate, checked after every append against
//  - a fresh object that replays only the calls of the tokens still in the sequence (a truncated
//    call cut to its surviving tokens): the same bits (each row's projections and attention do
//    not depend on the other rows of its call), or within float rounding under -ffast-math;
//  - fp32: the windowed double reference over the surviving tokens;
//  - truncate: accepted exactly when every token the next position sees is still in its slot
//    (the test's own model: which position each slot holds last), a refused one changes
//    nothing; oldest(): the oldest position from which on every slot holds its own position;
//  - export_cache of every position held: the fresh object's keys and values, bit for bit.
constexpr std::size_t kHist = 40;  // longest surviving sequence the test builds
float g_hx[kHist * kDM], g_hy[kHist * kDM], g_hy2[kHist * kDM];
double g_href[kHist * kDM];
double g_hscratch[microattn_ref::layer_scratch(kHist, kH, kHkv, kD)];

/// Feeds `fresh` (reset) the calls that wrote positions 0 .. len - 1: call[p] is the first
/// position of the call that last wrote p, decoded[p] whether it was a decode.
template <class Kv>
void replay(Kv& fresh, std::size_t len, const std::size_t* call, const bool* decoded) {
  fresh.reset();
  for (std::size_t p = 0; p < len;) {
    std::size_t n = 1;
    while (p + n < len && call[p + n] == call[p] && !decoded[p]) ++n;
    const Status s = decoded[p] ? fresh.decode(g_hx + p * kDM, g_hy2 + p * kDM)
                                : fresh.prefill(g_hx + p * kDM, n, g_hy2 + p * kDM);
    ASSERT_EQ(s, Status::kOk);
    p += n;
  }
}

bool same_or_close(const float* a, const float* b, std::size_t n) {
#if defined(__FAST_MATH__)
  // -ffast-math may order a row's sums by the call's size (docs/numeric-contract.md).
  return microattn_test::max_diff(a, b, n) <=
         microattn_test::tolerance(kDM + 2.0 * kD + kW + kH * kD + 8,
                                   microattn_test::max_abs(b, n));
#else
  return microattn_test::same_bits(a, b, n);
#endif
}

template <class C>
void check_ring_sequences(std::uint64_t seed, std::size_t ops) {
  static microattn_test::RandomWeights<C> w;
  w.fill(seed);
  microattn_ref::LayerRef ref = w.ref(WeightLayout::kInOut);
  ref.window = kW;
  const microattn_ref::RopeRef rr{kD, 100.0, false};
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using Kv = KvAttention<C, A, kChunk>;
    constexpr std::size_t R = Kv::kRingTokens;
    static Kv kv, fresh;
    for (Kv* o : {&kv, &fresh}) {
      o->reset();
      ASSERT_EQ(o->set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
      ASSERT_EQ(o->set_rope(rope_on()), Status::kOk);
    }
    microattn_test::Rng rng(seed + 1);
    std::size_t slot_pos[R];  // the position each slot holds (SIZE_MAX: none yet)
    for (std::size_t& p : slot_pos) p = SIZE_MAX;
    std::size_t call[kHist];
    bool decoded[kHist];
    std::size_t len = 0, truncates = 0, refused = 0;
    for (std::size_t op = 0; op < ops; ++op) {
      const std::uint32_t kind = rng.next_u32() % 8;
      if (kind < 3 && len > 0) {  // truncate 0 .. kChunk + 2 tokens back
        const std::size_t back = rng.next_u32() % (kChunk + 3);
        const std::size_t n = back > len ? 0 : len - back;
        bool held = true;
        for (std::size_t q = n + 1 > kW ? n + 1 - kW : 0; q < n; ++q) held &= slot_pos[q % R] == q;
        const Status s = kv.truncate(n);
        EXPECT_EQ(s, held ? Status::kOk : Status::kBadArgument)
            << A::name() << " op " << op << ": truncate(" << n << ") at length " << len;
        if (s == Status::kOk) {
          len = n, ++truncates;
        } else {
          ++refused;
        }
        ASSERT_EQ(kv.length(), len);
        continue;
      }
      // Append T new tokens (1 = decode).
      const std::size_t T = kind < 6 ? 1 : 1 + rng.next_u32() % kRingT;
      if (len + T > kHist) {  // a new sequence (truncate(0) is always accepted)
        ASSERT_EQ(kv.truncate(0), Status::kOk);
        len = 0;
        continue;
      }
      rng.fill(g_hx + len * kDM, T * kDM, -1, 1);
      const Status s = T == 1 ? kv.decode(g_hx + len * kDM, g_hy + len * kDM)
                              : kv.prefill(g_hx + len * kDM, T, g_hy + len * kDM);
      ASSERT_EQ(s, Status::kOk) << A::name() << " op " << op;
      for (std::size_t p = len; p < len + T; ++p)
        slot_pos[p % R] = p, call[p] = len, decoded[p] = T == 1;
      len += T;
      const float* y = g_hy + (len - T) * kDM;
      replay(fresh, len, call, decoded);
      EXPECT_TRUE(same_or_close(y, g_hy2 + (len - T) * kDM, T * kDM))
          << A::name() << " op " << op << ": " << T << " tokens at position " << len - T;
      if constexpr (!C::kInt8Cache) {
        microattn_ref::layer_rope(ref, rr, g_hx, len, microattn::default_scale<C>(), g_href,
                                  g_hscratch);
        const double tol = microattn_test::tolerance(kDM + 2.0 * kD + kW + kH * kD + 8,
                                                     microattn_test::max_abs(g_href, len * kDM));
        EXPECT_LE(microattn_test::max_diff(y, g_href + (len - T) * kDM, T * kDM), tol)
            << A::name() << " op " << op << ": " << T << " tokens at position " << len - T;
      }
      std::size_t oldest = len;
      while (oldest > 0 && slot_pos[(oldest - 1) % R] == oldest - 1) --oldest;
      ASSERT_EQ(kv.oldest(), oldest) << A::name() << " op " << op;
      // Every position held, exported, against the replaying object's.
      static float k1[R * kHkv * kD], v1[R * kHkv * kD], k2[R * kHkv * kD], v2[R * kHkv * kD];
      microattn::CacheSlice i1, i2;
      const std::size_t n = len - oldest;
      ASSERT_EQ(kv.export_cache(oldest, n, k1, v1, &i1), Status::kOk);
      ASSERT_EQ(fresh.export_cache(oldest, n, k2, v2, &i2), Status::kOk);
      EXPECT_TRUE(same_or_close(k1, k2, n * kHkv * kD) && same_or_close(v1, v2, n * kHkv * kD))
          << A::name() << " op " << op << ": export of " << oldest << " .. " << len - 1;
    }
    EXPECT_GT(truncates, ops / 8) << "the sequence must exercise truncate";
    EXPECT_GT(refused, 0u) << "and refuse some";
  });
}

TEST(Ring, RandomDecodePrefillTruncateEqualFreshObject) {
  check_ring_sequences<RingCfg>(81, kQuick ? 60 : 200);
}
TEST(Ring, RandomDecodePrefillTruncateInt8Cache) {
  using Q = Config<kRingT, kDM, kH, kHkv, kD, Bias::kYes, SlidingWindow{kW}, microattn::Rope::kYes,
                   microattn::CacheType::kInt8>;
  check_ring_sequences<Q>(91, kQuick ? 40 : 120);
}

// The reproduction: ring of 4 (window 4, chunk 1), ten decodes, truncate(9) and
// truncate(8): the second must be refused, since position 8 would see position 5, whose slot
// (5 mod 4) now holds position 9.
TEST(Ring, SecondTruncateIntoAnOverwrittenSlotIsRefused) {
  using C = Config<16, 8, 1, 1, 8, SlidingWindow{4}>;
  static microattn_test::RandomWeights<C> w;
  w.fill(97);
  static KvAttention<C, microattn::DefaultArch, 1> kv;
  ASSERT_EQ(kv.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
  float x[11 * 8], y[8];
  microattn_test::Rng(98).fill(x, 11 * 8, -1, 1);
  for (std::size_t t = 0; t < 10; ++t) ASSERT_EQ(kv.decode(x + t * 8, y), Status::kOk);
  EXPECT_EQ(kv.oldest(), 6u);
  ASSERT_EQ(kv.truncate(9), Status::kOk);  // position 9 sees 6, 7, 8: held
  EXPECT_EQ(kv.oldest(), 6u);
  EXPECT_EQ(kv.truncate(8), Status::kBadArgument);  // position 8 would see 5: overwritten
  EXPECT_EQ(kv.length(), 9u);
  ASSERT_EQ(kv.decode(x + 10 * 8, y), Status::kOk);  // position 9 again: overwrites slot 1 (5)
  EXPECT_EQ(kv.oldest(), 6u);
  EXPECT_EQ(kv.truncate(9), Status::kOk);
  EXPECT_EQ(kv.truncate(0), Status::kOk);  // always: the next token sees nothing
  EXPECT_EQ(kv.oldest(), 0u);
}

TEST(Ring, Int8CacheFollowsTheFp32Ring) {
  using Q =
      Config<kRingT, kDM, kH, kHkv, kD, Bias::kYes, SlidingWindow{kW}, microattn::CacheType::kInt8>;
  using F = Config<kRingT, kDM, kH, kHkv, kD, Bias::kYes, SlidingWindow{kW}>;
  static microattn_test::RandomWeights<F> w;
  w.fill(71);
  microattn_test::Rng(72).fill(g_sx, kStream * kDM, -1, 1);
  static KvAttention<F> f;
  static KvAttention<Q> q;
  static float y1[kStream * kDM], y2[kStream * kDM];
  ASSERT_EQ(f.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
  ASSERT_EQ(q.set_weights(microattn::Weights<Q>(WeightLayout::kInOut, w.wq, w.wk, w.wv, w.wo, w.bq,
                                                w.bk, w.bv, w.bo)),
            Status::kOk);
  for (std::size_t t = 0; t < kStream; ++t) {
    ASSERT_EQ(f.decode(g_sx + t * kDM, y1 + t * kDM), Status::kOk);
    ASSERT_EQ(q.decode(g_sx + t * kDM, y2 + t * kDM), Status::kOk);
  }
  const double rel = microattn_test::rel_err(y2, y1, kStream * kDM);
  EXPECT_LE(rel, 0.02);  // int8 rounding of K and V, as for the append-only cache
  EXPECT_GT(rel, 0.0);
}

}  // namespace
