// SPDX-License-Identifier: Apache-2.0
// MultiHeadAttention (projections + fused core + W_O) against the double reference, the
// 11-token example of the teaching notes, and PyTorch's weight layout.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/attention.hpp"
#include "microattn/kv_cache.hpp"
#include "reference/attention_ref.hpp"
#include "reference/rope_ref.hpp"
#include "support/check.hpp"
#include "support/random_weights.hpp"
#include "support/rng.hpp"
#include "support/unit.hpp"

namespace {

using microattn::Bias;
using microattn::Config;
using microattn::MaxWorkers;
using microattn::MultiHeadAttention;
using microattn::OutProj;
using microattn::ScaledDotProductAttention;
using microattn::Status;
using microattn::WeightLayout;
using microattn::Weights;
using microattn_test::for_each_arch;

using microattn_test::RandomWeights;

template <class Cfg, class A>
void check_layer_random(std::size_t T, std::uint64_t seed, WeightLayout layout) {
  constexpr std::size_t N = Cfg::kTMax;
  static RandomWeights<Cfg> w;
  static float x[N * Cfg::kDModel], y[N * Cfg::kOutDim];
  static double ref[N * Cfg::kOutDim];
  static double scratch[microattn_ref::layer_scratch(N, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead)];
  static MultiHeadAttention<Cfg, A> layer;
  w.fill(seed);
  microattn_test::Rng rng(seed ^ 0xabcdef);
  rng.fill(x, T * Cfg::kDModel, -1.0f, 1.0f);
  ASSERT_EQ(layer.set_weights(w.view(layout)), Status::kOk);
  ASSERT_EQ(layer.forward(x, T, y), Status::kOk);
  microattn_ref::layer(w.ref(layout), x, T, microattn::default_scale<Cfg>(), ref, scratch);
  // Chain: d_model terms per projection, d_head per score (|score| < 2 here), T per P V row,
  // H*d_head per output-projection term.
  const double chain = Cfg::kDModel + 2.0 * Cfg::kDHead + T + (Cfg::kHasOutProj ? Cfg::kQDim : 0);
  const double mag = microattn_test::max_abs(ref, T * Cfg::kOutDim);
  const double err = microattn_test::max_diff(y, ref, T * Cfg::kOutDim);
  EXPECT_LE(err, microattn_test::tolerance(chain, mag))
      << A::name() << " T=" << T << " d_model=" << Cfg::kDModel << " H=" << Cfg::kHeads
      << " Hkv=" << Cfg::kKvHeads << " d_head=" << Cfg::kDHead
      << " bias=" << static_cast<int>(Cfg::kBias) << " W_O=" << Cfg::kHasOutProj
      << " layout=" << static_cast<int>(layout) << " seed=" << seed;
}

template <class Cfg>
void sweep_layer(std::uint64_t seed) {
  for_each_arch([seed](auto arch) {
    using A = decltype(arch);
    using Tl = microattn::internal::Tiles<A>;
    const std::size_t sizes[] = {1,           Tl::kMR - 1,    Tl::kMR + 1, Tl::kBQ + 1,
                                 Tl::kBK + 1, Cfg::kTMax - 1, Cfg::kTMax};
    for (std::size_t T : sizes) {
      if (T < 1 || T > Cfg::kTMax) continue;
      check_layer_random<Cfg, A>(T, seed + T, WeightLayout::kInOut);
      check_layer_random<Cfg, A>(T, seed + 1000 + T, WeightLayout::kOutIn);
      if (microattn::panel_layout_fits<Cfg>())
        check_layer_random<Cfg, A>(T, seed + 2000 + T, WeightLayout::kPanel16);
    }
  });
}

TEST(AttentionLayer, RandomMha) {
  sweep_layer<Config<70, 16, 4, 4, 4>>(1);
  sweep_layer<Config<70, 13, 2, 2, 5, Bias::kYes>>(2);  // d_model not a vector multiple
  sweep_layer<Config<70, 37, 3, 3, 1, Bias::kNo, OutProj::kNo>>(3);  // d_head 1, no W_O
  sweep_layer<Config<70, 24, 2, 2, 12, Bias::kYes, OutProj::kNo>>(4);
}

TEST(AttentionLayer, RandomWideHeads) {
  sweep_layer<Config<70, 64, 2, 2, 64, Bias::kYes>>(5);
  sweep_layer<Config<70, 40, 1, 1, 80>>(6);
  sweep_layer<Config<70, 300, 2, 1, 3>>(7);  // d_model deeper than one packed panel (KC)
}

TEST(AttentionLayer, RandomGqaMqa) {
  sweep_layer<Config<70, 32, 4, 2, 8, Bias::kYes>>(8);
  sweep_layer<Config<70, 20, 6, 1, 5>>(9);
  sweep_layer<Config<70, 48, 8, 2, 6, Bias::kNo, OutProj::kNo>>(10);
  sweep_layer<Config<70, 48, 4, 2, 16, Bias::kYes>>(11);  // fits kPanel16
}

// Bias flags per projection (Qwen2: Q, K, V; Whisper: no key bias) and W_O widths other than
// d_model (the teaching notes' MultiHeadAttention(d_in 8, d_out 4) with out_proj 4 -> 4).
TEST(AttentionLayer, BiasPerProjectionAndOutDim) {
  sweep_layer<Config<70, 24, 4, 2, 6, Bias::kQkv>>(12);
  sweep_layer<Config<70, 20, 2, 2, 5, Bias::kQ | Bias::kV | Bias::kO>>(13);
  sweep_layer<Config<70, 8, 2, 2, 2, microattn::OutDim{4}>>(14);
  sweep_layer<Config<70, 16, 2, 1, 16, microattn::OutDim{48}, Bias::kYes>>(15);  // fits kPanel16
  sweep_layer<Config<70, 12, 3, 1, 4, Bias::kK, OutProj::kNo>>(16);
}

// A prompt longer than the GEMM's row block (kMC: 264 rows on AVX-512, 192 on AVX2, 100 on
// aarch64 NEON, 64 scalar) is projected block by block, with RoPE from each block's own
// position and K staged from each block's first key: T = kMC + 1 and T = 600 (two to nine
// blocks, the last partial) with GQA, biases and RoPE from position 5, against the double
// reference.
TEST(AttentionLayer, LongPromptsProjectedByRowBlocks) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<600, 16, 4, 2, 8, Bias::kYes, microattn::Rope::kYes>;
    constexpr std::size_t N = Cfg::kTMax;
    static RandomWeights<Cfg> w;
    static MultiHeadAttention<Cfg, A> layer;
    static float x[N * Cfg::kDModel], y[N * Cfg::kOutDim];
    static double ref[N * Cfg::kOutDim];
    static double scratch[microattn_ref::layer_scratch(N, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead)];
    w.fill(91);
    microattn_test::Rng(92).fill(x, N * Cfg::kDModel, -1, 1);
    ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    microattn::RopeConfig r;
    r.enabled = true;
    r.start_position = 5;
    ASSERT_EQ(layer.set_rope(r), Status::kOk);
    for (std::size_t T : {microattn::internal::Tiles<A>::kMC + 1, N}) {
      ASSERT_EQ(layer.forward(x, T, y), Status::kOk);
      const microattn_ref::RopeRef rr{Cfg::kDHead, 10000.0, false, 5.0};
      microattn_ref::layer_rope(w.ref(WeightLayout::kInOut), rr, x, T,
                                microattn::default_scale<Cfg>(), ref, scratch);
      const double chain = Cfg::kDModel + 2.0 * Cfg::kDHead + T + Cfg::kQDim + 4;
      EXPECT_LE(microattn_test::max_diff(y, ref, T * Cfg::kOutDim),
                microattn_test::tolerance(chain, microattn_test::max_abs(ref, T * Cfg::kOutDim)))
          << A::name() << " T=" << T;
    }
  });
}

// RoPE in the plain layer (Config option Rope::kYes): both pairings, partial rotation and start
// positions, against the double reference; without Rope::kYes only a disabled RoPE is accepted.
TEST(AttentionLayer, RopeWithStartPosition) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<40, 24, 4, 2, 8, Bias::kYes, microattn::Rope::kYes>;
    constexpr std::size_t T = 37, N = Cfg::kTMax;
    static RandomWeights<Cfg> w;
    static MultiHeadAttention<Cfg, A> layer;
    static float x[N * Cfg::kDModel], y[N * Cfg::kOutDim];
    static double ref[N * Cfg::kOutDim];
    static double scratch[microattn_ref::layer_scratch(N, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead)];
    w.fill(77);
    microattn_test::Rng(78).fill(x, T * Cfg::kDModel, -1, 1);
    ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
    const std::size_t starts[] = {0, 3, 1000, 123456};
    for (int v = 0; v < 4; ++v) {
      microattn::RopeConfig r;
      r.enabled = true;
      r.pairing = v % 2 ? microattn::RopePairing::kAdjacent : microattn::RopePairing::kHalfSplit;
      r.rotary_dims = v < 2 ? 0 : 4;
      r.base = v == 3 ? 500000.0f : 10000.0f;
      r.start_position = starts[v];
      ASSERT_EQ(layer.set_rope(r), Status::kOk);
      EXPECT_EQ(layer.rope().start_position, starts[v]);
      ASSERT_EQ(layer.forward(x, T, y), Status::kOk);
      const microattn_ref::RopeRef rr{
          r.rotary_dims ? r.rotary_dims : Cfg::kDHead, static_cast<double>(r.base),
          r.pairing == microattn::RopePairing::kAdjacent, static_cast<double>(starts[v])};
      microattn_ref::layer_rope(w.ref(WeightLayout::kOutIn), rr, x, T,
                                microattn::default_scale<Cfg>(), ref, scratch);
      const double chain = Cfg::kDModel + 2.0 * Cfg::kDHead + T + Cfg::kQDim + 4;
      EXPECT_LE(microattn_test::max_diff(y, ref, T * Cfg::kOutDim),
                microattn_test::tolerance(chain, microattn_test::max_abs(ref, T * Cfg::kOutDim)))
          << A::name() << " variant " << v;
    }
    microattn::RopeConfig off;
    ASSERT_EQ(layer.set_rope(off), Status::kOk);
    EXPECT_FALSE(layer.rope().enabled);
    // Without Rope::kYes there are no tables: an enabled RoPE is refused, nothing changes.
    using NoRope = Config<40, 24, 4, 2, 8, Bias::kYes>;
    static MultiHeadAttention<NoRope, A> plain;
    microattn::RopeConfig on;
    on.enabled = true;
    EXPECT_EQ(plain.set_rope(on), Status::kBadArgument);
    EXPECT_FALSE(plain.rope().enabled);
    EXPECT_EQ(plain.set_rope(off), Status::kOk);
    static_assert(MultiHeadAttention<NoRope, A>::kRopeBytes < 16 &&
                      microattn::KvAttention<NoRope, A>::kRopeBytes < 16,
                  "no tables without Rope::kYes");
    static_assert(MultiHeadAttention<Cfg, A>::kRopeBytes >= 4 * N * Cfg::kDHead, "tables");
    on.start_position = SIZE_MAX - 5;  // its last table row would overflow size_t
    EXPECT_EQ(layer.set_rope(on), Status::kBadArgument);
  });
}

// seeds/000: 11 tokens, d_in 8, d_out 4, 2 heads of width 2, no W_O. The result equals two
// independent single-head attentions on the column halves of W_Q, W_K, W_V, concatenated.
TEST(AttentionLayer, ElevenTokensTwoHeadsEqualTwoSingleHeads) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Two = Config<11, 8, 2, 2, 2, Bias::kNo, OutProj::kNo>;
    using One = Config<11, 8, 1, 1, 2, Bias::kNo, OutProj::kNo>;
    static float x[11 * 8], wq[8 * 4], wk[8 * 4], wv[8 * 4], y[11 * 4];
    static float half_q[2][8 * 2], half_k[2][8 * 2], half_v[2][8 * 2], y1[2][11 * 2];
    static double ref[11 * 4], scratch[microattn_ref::layer_scratch(11, 2, 2, 2)];
    microattn_test::Rng rng(2024);
    rng.fill(x, 11 * 8, -1, 1);
    rng.fill(wq, 8 * 4, -1, 1);
    rng.fill(wk, 8 * 4, -1, 1);
    rng.fill(wv, 8 * 4, -1, 1);
    static MultiHeadAttention<Two, A> mha;
    Weights<Two> w(microattn::WeightLayout::kInOut);
    w.w_q = wq, w.w_k = wk, w.w_v = wv;
    ASSERT_EQ(mha.set_weights(w), Status::kOk);
    ASSERT_EQ(mha.forward(x, 11, y), Status::kOk);
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 2; ++c) {
          half_q[h][r * 2 + c] = wq[r * 4 + h * 2 + c];
          half_k[h][r * 2 + c] = wk[r * 4 + h * 2 + c];
          half_v[h][r * 2 + c] = wv[r * 4 + h * 2 + c];
        }
      static MultiHeadAttention<One, A> single;
      Weights<One> w1(microattn::WeightLayout::kInOut);
      w1.w_q = half_q[h], w1.w_k = half_k[h], w1.w_v = half_v[h];
      ASSERT_EQ(single.set_weights(w1), Status::kOk);
      ASSERT_EQ(single.forward(x, 11, y1[h]), Status::kOk);
    }
    // Same kernels, same operation order: equal to the last bit.
    for (int t = 0; t < 11; ++t)
      for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 2; ++c)
          EXPECT_EQ(y[t * 4 + h * 2 + c], y1[h][t * 2 + c])
              << A::name() << " t=" << t << " h=" << h;
    const microattn_ref::LayerRef L{8,  2,       2,       2,       false,   wq,     wk,
                                    wv, nullptr, nullptr, nullptr, nullptr, nullptr};
    microattn_ref::layer(L, x, 11, 1.0 / std::sqrt(2.0), ref, scratch);
    EXPECT_LE(microattn_test::max_diff(y, ref, 11 * 4), microattn_test::tolerance(8 + 4 + 11, 1.0))
        << A::name();
  });
}

// PyTorch's [out][in] weights give the same result, bit for bit, as the transposed [in][out].
TEST(AttentionLayer, PyTorchLayoutEqualsTransposed) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<40, 24, 4, 2, 6, Bias::kYes>;
    constexpr std::size_t DM = 24, QD = 24, KD = 12, T = 40;
    static RandomWeights<Cfg> w;
    static float tq[QD * DM], tk[KD * DM], tv[KD * DM], to[DM * QD], x[T * DM], y1[T * DM],
        y2[T * DM];
    w.fill(99);
    for (std::size_t i = 0; i < DM; ++i)
      for (std::size_t j = 0; j < QD; ++j)
        tq[j * DM + i] = w.wq[i * QD + j], to[i * QD + j] = w.wo[j * DM + i];
    for (std::size_t i = 0; i < DM; ++i)
      for (std::size_t j = 0; j < KD; ++j)
        tk[j * DM + i] = w.wk[i * KD + j], tv[j * DM + i] = w.wv[i * KD + j];
    microattn_test::Rng(5).fill(x, T * DM, -1, 1);
    static MultiHeadAttention<Cfg, A> layer;
    ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(layer.forward(x, T, y1), Status::kOk);
    Weights<Cfg> pt = w.view(WeightLayout::kOutIn);
    pt.w_q = tq, pt.w_k = tk, pt.w_v = tv, pt.w_o = to;
    ASSERT_EQ(layer.set_weights(pt), Status::kOk);
    ASSERT_EQ(layer.forward(x, T, y2), Status::kOk);
    EXPECT_EQ(std::memcmp(y1, y2, sizeof y1), 0) << A::name();
  });
}

// With W_O the output may overwrite the input.
TEST(AttentionLayer, InPlaceWithOutputProjection) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<30, 16, 2, 2, 8>;
    static RandomWeights<Cfg> w;
    static float x[30 * 16], y[30 * 16];
    w.fill(3);
    microattn_test::Rng(4).fill(x, 30 * 16, -1, 1);
    static MultiHeadAttention<Cfg, A> layer;
    ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(layer.forward(x, 30, y), Status::kOk);
    ASSERT_EQ(layer.forward(x, 30, x), Status::kOk);
    EXPECT_EQ(std::memcmp(x, y, sizeof y), 0) << A::name();
  });
}

// Changing tokens after position i never changes outputs 0..i.
TEST(AttentionLayer, Causality) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<70, 20, 4, 2, 6, Bias::kYes>;
    constexpr std::size_t T = 70, DM = 20;
    static RandomWeights<Cfg> w;
    static float x[T * DM], a[T * DM], b[T * DM];
    w.fill(8);
    microattn_test::Rng(9).fill(x, T * DM, -1, 1);
    static MultiHeadAttention<Cfg, A> layer;
    ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
    for (std::size_t i : {std::size_t{0}, std::size_t{15}, std::size_t{47}, std::size_t{64}}) {
      ASSERT_EQ(layer.forward(x, T, a), Status::kOk);
      microattn_test::Rng(50 + i).fill(x + (i + 1) * DM, (T - i - 1) * DM, -30, 30);
      ASSERT_EQ(layer.forward(x, T, b), Status::kOk);
      EXPECT_EQ(std::memcmp(a, b, (i + 1) * DM * sizeof(float)), 0) << A::name() << " i=" << i;
    }
  });
}

// The RAM formula in docs/memory.md matches sizeof, up to alignment padding: the layer's,
// and the core's (K^T, V and tile scratch only); with MaxWorkers{n} the tile scratch and the GEMM
// panel n times, Q, K^T and V min(n, H_kv) times.
template <class Cfg, class A>
void check_ram_formula() {
  using Tl = microattn::internal::Tiles<A>;
  constexpr std::size_t D = Cfg::kDHead, BQ = Tl::kBQ, BK = Tl::kBK, n = Cfg::kMaxWorkers;
  constexpr std::size_t staged = n < Cfg::kKvHeads ? n : Cfg::kKvHeads;
  constexpr std::size_t t_pad = microattn::internal::round_up(Cfg::kTMax, BK);
  constexpr std::size_t d_pad = microattn_test::doc_d_pad<A>(D);
  constexpr std::size_t kv = t_pad * D + t_pad * d_pad;
  // q, s, o; row max, row sums by lane; tile max and the key ranges (two 16-bit numbers a row).
  constexpr std::size_t tile = BQ * D + BQ * BK + BQ * d_pad + BQ + BQ * Tl::kWidth + 2 * BQ;
  constexpr std::size_t floats = staged * (Cfg::kTMax * Cfg::kGroup * D + kv) +
                                 (Cfg::kHasOutProj ? Cfg::kTMax * Cfg::kQDim : 1) +
                                 n * (tile + Tl::kKC * Tl::kNR);
  constexpr std::size_t formula = 4 * floats + sizeof(Weights<Cfg>);
  static_assert(MultiHeadAttention<Cfg, A>::kStagedHeads == staged, "staged heads");
  constexpr std::size_t ram = MultiHeadAttention<Cfg, A>::ram_bytes();
  EXPECT_GE(ram, formula) << A::name();
  // At most one alignment gap per buffer: 8, and 7 more per extra worker (its tile scratch's
  // arrays and GEMM panel).
  constexpr std::size_t slack = (8 + 7 * (n - 1)) * Tl::kAlign;
  EXPECT_LE(ram, formula + slack) << A::name();
  constexpr std::size_t core_formula = 4 * (staged * kv + n * tile);
  constexpr std::size_t core_ram = ScaledDotProductAttention<Cfg, A>::ram_bytes();
  EXPECT_GE(core_ram, core_formula) << A::name();
  EXPECT_LE(core_ram, core_formula + slack) << A::name();
}

TEST(AttentionLayer, RamMatchesReadmeFormula) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    check_ram_formula<Config<64, 64, 4, 2, 16>, A>();
    check_ram_formula<Config<100, 24, 3, 1, 5, Bias::kYes, OutProj::kNo>, A>();
    check_ram_formula<Config<1024, 512, 8, 8, 64>, A>();
    check_ram_formula<Config<512, 64, 8, 4, 8>, A>();  // d_head under a vector (AVX-512)
    check_ram_formula<Config<64, 64, 4, 2, 16, MaxWorkers{3}>, A>();  // 2 staged heads
    check_ram_formula<Config<64, 64, 8, 4, 16, MaxWorkers{2}>, A>();  // 2 staged heads
    check_ram_formula<Config<100, 24, 3, 1, 5, MaxWorkers{4}>, A>();  // 1 staged head
  });
}

// Caller buffers need no alignment: x and y one float off give the same bits.
TEST(AttentionLayer, MisalignedBuffers) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<50, 20, 2, 1, 12, Bias::kYes>;
    static RandomWeights<Cfg> w;
    static float x[50 * 20 + 1], y[50 * 20 + 1], x1[50 * 20 + 1], y1[50 * 20 + 1];
    w.fill(21);
    microattn_test::Rng(22).fill(x, 50 * 20, -1, 1);
    std::memcpy(x1 + 1, x, 50 * 20 * sizeof(float));
    static MultiHeadAttention<Cfg, A> layer;
    ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
    ASSERT_EQ(layer.forward(x, 50, y), Status::kOk);
    ASSERT_EQ(layer.forward(x1 + 1, 50, y1 + 1), Status::kOk);
    EXPECT_EQ(std::memcmp(y, y1 + 1, 50 * 20 * sizeof(float)), 0) << A::name();
  });
}

}  // namespace
