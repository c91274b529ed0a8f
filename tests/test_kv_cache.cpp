// SPDX-License-Identifier: Apache-2.0
// KvAttention (KV cache, prefill, chunked prefill, decode, RoPE, GQA/MQA) against the
// double-precision reference, against itself (decode == prefill == chunked prefill), and its
// statuses (nothing changes on error; reset and truncate give fresh-object results bit for bit).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "microattn/kv_cache.hpp"
#include "reference/attention_ref.hpp"
#include "reference/rope_ref.hpp"
#include "support/check.hpp"
#include "support/random_weights.hpp"
#include "support/rng.hpp"
#include "support/rope.hpp"
#include "support/unit.hpp"

namespace {

using microattn::Bias;
using microattn::Config;
using microattn::KvAttention;
using microattn::OutProj;
using microattn::RopeConfig;
using microattn::RopePairing;
using microattn::Status;
using microattn::WeightLayout;
using microattn::Weights;
using microattn_test::all_sentinel;
using microattn_test::fill_sentinel;
using microattn_test::for_each_arch;
using microattn_test::kLongT;
using microattn_test::kQuick;
using microattn_test::long_t;
using microattn_test::quick_cap;
using microattn_test::RandomWeights;
using microattn_test::rope_cfg;
using microattn_test::rope_ref_of;
using microattn_test::same_bits;

// Shared pools (one check runs at a time), so the test image stays small on Cortex-M.
constexpr std::size_t kWideT = kQuick ? 20 : 70;  // T_max of the d_head = 64 configuration
// PrefillLongerThanARowBlock: T_max of an arch = long_t<A>() (d_model 12).
// x: T_max * d_model of the largest config (also the split-K ones: 150 x 24, 140 x 20)
constexpr std::size_t kPoolIn = microattn::internal::max_size(
    microattn::internal::max_size(quick_cap(70) * 40, quick_cap(150) * 24), kLongT * 12);
constexpr std::size_t kPoolOut = microattn::internal::max_size(
    microattn::internal::max_size(quick_cap(70) * 64, quick_cap(150) * 24), kLongT * 12);
constexpr std::size_t kPoolRef = microattn::internal::max_size(
    microattn::internal::max_size(
        microattn::internal::max_size(quick_cap(70) * (2 * 64 + 2 * 32) + quick_cap(70),
                                      quick_cap(30) * (2 * 96 + 2 * 48) + quick_cap(30)),
        kWideT*(4 * 2 * 64) + kWideT),
    microattn::internal::max_size(
        microattn::internal::max_size(quick_cap(150) * (2 * 32 + 2 * 8) + quick_cap(150),
                                      quick_cap(140) * (2 * 36 + 2 * 12) + quick_cap(140)),
        kLongT*(2 * 16 + 2 * 16) + kLongT));
float g_x[kPoolIn];
float g_y_pre[kPoolOut], g_y_dec[kPoolOut], g_y_chunk[kPoolOut];
double g_ref[kPoolOut];
double g_scratch[kPoolRef];

/// The RoPE variants every layer configuration is run with: off, both pairings over the whole
/// head (largest even width), both over a partial width.
constexpr int kRopeVariants = 5;
template <class Cfg>
RopeConfig rope_variant(int i) {
  constexpr std::size_t D = Cfg::kDHead;
  const std::size_t full = D % 2 ? D - 1 : 0;  // 0 = d_head
  const std::size_t part = (D / 2) % 2 ? D / 2 + 1 : D / 2;
  switch (i) {
    case 1:
      return rope_cfg(true, RopePairing::kHalfSplit, full);
    case 2:
      return rope_cfg(true, RopePairing::kAdjacent, full);
    case 3:
      return rope_cfg(true, RopePairing::kHalfSplit, part, 500000.0f);
    case 4:
      return rope_cfg(true, RopePairing::kAdjacent, part, 10.0f);  // fast turns
    default:
      return rope_cfg(false, RopePairing::kHalfSplit, 0);
  }
}

/// One sequence of T tokens three ways on one object (reset in between): a single prefill,
/// token-by-token decode, and a prefill in three chunks; each against the double reference,
/// and decode against prefill.
template <class Cfg, class A>
void check_sequence(std::size_t T, std::uint64_t seed, WeightLayout layout, const RopeConfig& rc) {
  constexpr std::size_t DM = Cfg::kDModel, OD = Cfg::kOutDim;
  static_assert(Cfg::kTMax * DM <= kPoolIn && Cfg::kTMax * OD <= kPoolOut, "test pools too small");
  static_assert(microattn_ref::layer_rope_scratch(Cfg::kTMax, Cfg::kHeads, Cfg::kKvHeads,
                                                  Cfg::kDHead) <= kPoolRef,
                "test scratch pool too small");
  static RandomWeights<Cfg> w;
  // Under emulation prefill runs in chunks of 8 (less RAM; the chunked path on the target).
  static KvAttention<Cfg, A, kQuick ? microattn::internal::min_size(8, Cfg::kTMax) : Cfg::kTMax> kv;
  w.fill(seed);
  microattn_test::Rng rng(seed ^ 0x5eed);
  rng.fill(g_x, T * DM, -1.0f, 1.0f);
  kv.reset();
  ASSERT_EQ(kv.set_weights(w.view(layout)), Status::kOk);
  ASSERT_EQ(kv.set_rope(rc), Status::kOk);

  ASSERT_EQ(kv.prefill(g_x, T, g_y_pre), Status::kOk);
  ASSERT_EQ(kv.length(), T);

  kv.reset();
  for (std::size_t t = 0; t < T; ++t)
    ASSERT_EQ(kv.decode(g_x + t * DM, g_y_dec + t * OD), Status::kOk);
  ASSERT_EQ(kv.length(), T);

  kv.reset();
  const std::size_t c1 = T / 3, c2 = T / 3 + (T % 3 == 2 ? 1 : 0);
  std::size_t done = 0;
  for (std::size_t c : {c1, c2, T - c1 - c2}) {
    if (c == 0) continue;
    ASSERT_EQ(kv.prefill(g_x + done * DM, c, g_y_chunk + done * OD), Status::kOk);
    done += c;
  }
  ASSERT_EQ(kv.length(), T);

  microattn_ref::layer_rope(w.ref(layout), rope_ref_of(rc, Cfg::kDHead), g_x, T,
                            microattn::default_scale<Cfg>(), g_ref, g_scratch);
  // Chain (as the layer test): d_model terms per projection, d_head per score (|score| < 2),
  // T per P V row, H*d_head per output-projection term; RoPE adds 3 roundings to Q and K and
  // its tables one each (rotations keep norms, so scores stay < 2).
  const double chain = DM + 2.0 * Cfg::kDHead + T + (Cfg::kHasOutProj ? Cfg::kQDim : 0) + 4;
  const double mag = microattn_test::max_abs(g_ref, T * OD);
  const double tol = microattn_test::tolerance(chain, mag);
  const double e_pre = microattn_test::max_diff(g_y_pre, g_ref, T * OD);
  const double e_dec = microattn_test::max_diff(g_y_dec, g_ref, T * OD);
  const double e_chk = microattn_test::max_diff(g_y_chunk, g_ref, T * OD);
  // decode vs prefill: both within tol of the reference, so within 2 tol of each other
  const double e_dp = microattn_test::max_diff(g_y_dec, g_y_pre, T * OD);
  EXPECT_LE(e_pre, tol) << "prefill " << A::name() << " T=" << T << " H=" << Cfg::kHeads
                        << " Hkv=" << Cfg::kKvHeads << " D=" << Cfg::kDHead
                        << " rope=" << rc.enabled << "/" << static_cast<int>(rc.pairing) << "/"
                        << rc.rotary_dims << " layout=" << static_cast<int>(layout)
                        << " seed=" << seed;
  EXPECT_LE(e_dec, tol) << "decode " << A::name() << " T=" << T << " H=" << Cfg::kHeads
                        << " Hkv=" << Cfg::kKvHeads << " D=" << Cfg::kDHead
                        << " rope=" << rc.enabled << "/" << static_cast<int>(rc.pairing) << "/"
                        << rc.rotary_dims << " layout=" << static_cast<int>(layout)
                        << " seed=" << seed;
  EXPECT_LE(e_chk, tol) << "chunked " << A::name() << " T=" << T << " H=" << Cfg::kHeads
                        << " Hkv=" << Cfg::kKvHeads << " D=" << Cfg::kDHead
                        << " rope=" << rc.enabled << "/" << static_cast<int>(rc.pairing) << "/"
                        << rc.rotary_dims << " layout=" << static_cast<int>(layout)
                        << " seed=" << seed;
  EXPECT_LE(e_dp, 2 * tol) << "decode vs prefill " << A::name() << " T=" << T << " seed=" << seed;
}

template <class Cfg>
void sweep_sequence(std::uint64_t seed) {
  for_each_arch([seed](auto arch) {
    using A = decltype(arch);
    using Tl = microattn::internal::Tiles<A>;
    constexpr std::size_t W = microattn::internal::Vec<A>::kWidth;
    const std::size_t all[] = {1, 2, W + 1, Tl::kBK + 1, Cfg::kTMax};
    const std::size_t quick[] = {1, Cfg::kTMax};
    const std::size_t* sizes = kQuick ? quick : all;
    const std::size_t n_sizes = kQuick ? 2 : 5;
    for (int r = 0; r < kRopeVariants; ++r) {
      if (Cfg::kDHead < 2 && r != 0) continue;
      const RopeConfig rc = rope_variant<Cfg>(r);
      for (std::size_t i = 0; i < n_sizes; ++i) {
        const std::size_t T = sizes[i];
        if (T > Cfg::kTMax) continue;
        // Every stored layout in turn (kPanel16 where the configuration fits it).
        const std::size_t n_lay = microattn::panel_layout_fits<Cfg>() ? 3 : 2;
        const WeightLayout lays[] = {WeightLayout::kInOut, WeightLayout::kOutIn,
                                     WeightLayout::kPanel16};
        const WeightLayout lay = lays[(i + r) % n_lay];
        check_sequence<Cfg, A>(T, seed + 100 * r + T, lay, rc);
      }
    }
  });
}

TEST(KvCache, DecodeEqualsPrefillMha) {
  sweep_sequence<Config<quick_cap(40), 24, 4, 4, 8, Bias::kYes, microattn::Rope::kYes>>(1);
  sweep_sequence<
      Config<quick_cap(33), 13, 3, 3, 5, Bias::kNo, OutProj::kNo, microattn::Rope::kYes>>(
      2);                                                                  // odd d_head, no W_O
  sweep_sequence<Config<kWideT, 16, 2, 2, 64, microattn::Rope::kYes>>(3);  // wide heads
  sweep_sequence<Config<20, 7, 2, 2, 1, microattn::Rope::kYes>>(4);        // d_head 1: no RoPE
}

TEST(KvCache, DecodeEqualsPrefillGqa) {
  sweep_sequence<Config<quick_cap(70), 32, 4, 2, 16, Bias::kYes, microattn::Rope::kYes>>(5);
  sweep_sequence<
      Config<quick_cap(50), 20, 6, 2, 6, Bias::kNo, OutProj::kNo, microattn::Rope::kYes>>(
      6);  // 3 heads per group
  sweep_sequence<Config<quick_cap(30), 40, 8, 4, 12, Bias::kYes, microattn::Rope::kYes>>(7);
}

TEST(KvCache, DecodeEqualsPrefillMqa) {
  sweep_sequence<Config<quick_cap(40), 24, 8, 1, 8, microattn::Rope::kYes>>(
      8);  // 8 heads per group: more than one row block
  sweep_sequence<Config<quick_cap(45), 17, 3, 1, 10, Bias::kYes, microattn::Rope::kYes>>(9);
  sweep_sequence<Config<quick_cap(40), 32, 4, 1, 16, microattn::Rope::kYes>>(10);  // fits kPanel16
}

// More workers than key/value heads: decode splits each head's keys into fixed chunks (split-K,
// partial max / sum / P·V merged in chunk order), here on one worker (the same bits as on
// several: tests/test_threads.cpp). Against the double reference like the unsplit layers, with
// T past two key tiles so that every chunk holds keys, and short T where some are empty.
TEST(KvCache, DecodeSplitKEqualsPrefill) {
  sweep_sequence<
      Config<quick_cap(150), 24, 4, 1, 8, microattn::MaxWorkers{3}, microattn::Rope::kYes>>(
      21);  // MQA: 3 chunks
  sweep_sequence<Config<quick_cap(140), 20, 6, 2, 6, Bias::kYes, microattn::MaxWorkers{4},
                        microattn::Rope::kYes>>(22);  // GQA, 2 heads: 2 chunks each
}

// Both weight layouts of the same weights give the same outputs (kOutIn = transposed copy).
TEST(KvCache, DecodeEqualsPrefillBiasFlagsAndOutDim) {
  sweep_sequence<
      Config<quick_cap(30), 20, 4, 2, 6, Bias::kQkv, microattn::OutDim{12}, microattn::Rope::kYes>>(
      11);
  sweep_sequence<Config<quick_cap(30), 16, 2, 2, 16, Bias::kQ | Bias::kO, microattn::OutDim{32},
                        microattn::Rope::kYes>>(12);
}

// A start position shifts every cached position: prefill then decode at start + p equal the
// reference layer rotated from `start` on; and the plain layer with the same RoPE agrees.
TEST(KvCache, RopeStartPosition) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<24, 16, 4, 2, 8, Bias::kQkv, microattn::Rope::kYes>;
    constexpr std::size_t T = 20, DM = Cfg::kDModel, OD = Cfg::kOutDim;
    static RandomWeights<Cfg> w;
    static KvAttention<Cfg, A> kv;
    static microattn::MultiHeadAttention<Cfg, A> layer;
    w.fill(90);
    microattn_test::Rng(91).fill(g_x, T * DM, -1, 1);
    RopeConfig r = rope_cfg(true, RopePairing::kHalfSplit, 0);
    r.start_position = 4093;
    kv.reset();
    ASSERT_EQ(kv.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(kv.set_rope(r), Status::kOk);
    ASSERT_EQ(kv.prefill(g_x, 12, g_y_pre), Status::kOk);
    for (std::size_t t = 12; t < T; ++t)
      ASSERT_EQ(kv.decode(g_x + t * DM, g_y_pre + t * OD), Status::kOk);
    ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(layer.set_rope(r), Status::kOk);
    ASSERT_EQ(layer.forward(g_x, T, g_y_dec), Status::kOk);
    microattn_ref::RopeRef rr = rope_ref_of(r, Cfg::kDHead);
    rr.start = 4093;
    microattn_ref::layer_rope(w.ref(WeightLayout::kInOut), rr, g_x, T,
                              microattn::default_scale<Cfg>(), g_ref, g_scratch);
    const double chain = DM + 2.0 * Cfg::kDHead + T + Cfg::kQDim + 4;
    const double tol = microattn_test::tolerance(chain, microattn_test::max_abs(g_ref, T * OD));
    EXPECT_LE(microattn_test::max_diff(g_y_pre, g_ref, T * OD), tol) << A::name() << " kv";
    EXPECT_LE(microattn_test::max_diff(g_y_dec, g_ref, T * OD), tol) << A::name() << " layer";
    EXPECT_EQ(kv.rope().start_position, 4093u);
  });
}

// A prefix's cache exported and imported into another object (e.g. a system prompt computed
// offline and kept in flash) continues bit for bit like the object that computed it; a slice
// that would mean something else (other position, RoPE, shape) is refused and changes nothing.
// kCacheBytes against docs/memory.md's formula ("The KV cache's bytes"): fp32
// 4 H_kv T_pad (d_head + d_pad), int8 H_kv T_pad (d_head + d_pad + 8), T_pad = T_max rounded up
// to the key tile BK, d_pad as microattn_test::doc_d_pad (the page's rule, written out).
template <class A, std::size_t kT, std::size_t kHkv, std::size_t kD>
void check_cache_bytes() {
  constexpr std::size_t bk = microattn::internal::Tiles<A>::kBK;
  constexpr std::size_t t_pad = (kT + bk - 1) / bk * bk, d_pad = microattn_test::doc_d_pad<A>(kD);
  using F32 = Config<kT, 64, 2 * kHkv, kHkv, kD, microattn::Rope::kYes>;
  using I8 = Config<kT, 64, 2 * kHkv, kHkv, kD, microattn::CacheType::kInt8>;
  constexpr std::size_t f32 = KvAttention<F32, A>::kCacheBytes;
  constexpr std::size_t i8 = KvAttention<I8, A>::kCacheBytes;
  EXPECT_EQ(f32, 4 * kHkv * t_pad * (kD + d_pad))
      << A::name() << " T_max=" << kT << " H_kv=" << kHkv << " d_head=" << kD;
  EXPECT_EQ(i8, kHkv * t_pad * (kD + d_pad + 8))
      << A::name() << " int8, T_max=" << kT << " H_kv=" << kHkv << " d_head=" << kD;
}

TEST(KvCache, CacheBytesMatchDocsFormula) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Tl = microattn::internal::Tiles<A>;
    check_cache_bytes<A, 512, 4, 8>();  // the stories260K shape
    check_cache_bytes<A, 100, 1, 5>();
    check_cache_bytes<A, 64, 2, 16>();
    check_cache_bytes<A, 30, 3, 24>();
    check_cache_bytes<A, 1024, 8, 64>();
    check_cache_bytes<A, 40, 2, 80>();
    // The page's table for the stories260K shape (5 layers of this one): 655 360 bytes, the
    // scalar size, on every arch but AVX-512 (VW 16: V rows of 16 floats, 983 040).
    using Stories = Config<512, 64, 8, 4, 8, microattn::Rope::kYes>;
    const std::size_t want = Tl::kWidth == 16 ? 983040 : 655360;
    constexpr std::size_t layer = KvAttention<Stories, A>::kCacheBytes;
    EXPECT_EQ(5 * layer, want) << A::name();
  });
}

TEST(KvCache, ExportImport) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<24, 16, 4, 2, 8, Bias::kYes, microattn::Rope::kYes>;
    constexpr std::size_t DM = Cfg::kDModel, OD = Cfg::kOutDim, KD = Cfg::kKvDim;
    static RandomWeights<Cfg> w;
    static KvAttention<Cfg, A> src, dst;
    static float k[24 * KD], v[24 * KD], k2[24 * KD], v2[24 * KD];
    w.fill(95);
    microattn_test::Rng(96).fill(g_x, 24 * DM, -1, 1);
    RopeConfig r = rope_cfg(true, RopePairing::kAdjacent, 0);
    r.start_position = 7;
    for (auto* o : {&src, &dst}) {
      o->reset();
      ASSERT_EQ(o->set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
      ASSERT_EQ(o->set_rope(r), Status::kOk);
    }
    ASSERT_EQ(src.prefill(g_x, 13, g_y_pre), Status::kOk);
    microattn::CacheSlice a, b;
    ASSERT_EQ(src.export_cache(0, 9, k, v, &a), Status::kOk);
    ASSERT_EQ(src.export_cache(9, 4, k2, v2, &b), Status::kOk);
    EXPECT_EQ(a.first, 0u);
    EXPECT_EQ(b.first, 9u);
    EXPECT_EQ(b.tokens, 4u);
    // Out of order, another RoPE, another shape, no room: refused, nothing changes.
    EXPECT_EQ(dst.import_cache(b, k2, v2), Status::kBadArgument) << "position 9 on an empty cache";
    microattn::CacheSlice bad = a;
    bad.rope.start_position = 0;
    EXPECT_EQ(dst.import_cache(bad, k, v), Status::kBadArgument) << "other start position";
    bad = a;
    bad.rope.enabled = false;
    EXPECT_EQ(dst.import_cache(bad, k, v), Status::kBadArgument) << "keys not rotated";
    bad = a;
    bad.d_head = 4;
    EXPECT_EQ(dst.import_cache(bad, k, v), Status::kBadArgument) << "other shape";
    bad = a;
    bad.tokens = 25;
    EXPECT_EQ(dst.import_cache(bad, k, v), Status::kCacheFull);
    EXPECT_EQ(dst.import_cache(a, nullptr, v), Status::kNullPointer);
    EXPECT_EQ(dst.length(), 0u);
    // In order: the same cache as src's, so the next tokens come out bit for bit the same.
    ASSERT_EQ(dst.import_cache(a, k, v), Status::kOk);
    ASSERT_EQ(dst.import_cache(b, k2, v2), Status::kOk);
    EXPECT_EQ(dst.length(), 13u);
    ASSERT_EQ(src.prefill(g_x + 13 * DM, 5, g_y_pre), Status::kOk);
    ASSERT_EQ(dst.prefill(g_x + 13 * DM, 5, g_y_dec), Status::kOk);
    EXPECT_EQ(std::memcmp(g_y_pre, g_y_dec, 5 * OD * sizeof(float)), 0) << A::name();
    ASSERT_EQ(src.decode(g_x + 18 * DM, g_y_pre), Status::kOk);
    ASSERT_EQ(dst.decode(g_x + 18 * DM, g_y_dec), Status::kOk);
    EXPECT_EQ(std::memcmp(g_y_pre, g_y_dec, OD * sizeof(float)), 0) << A::name();
    // Export's own argument checks leave its outputs untouched.
    fill_sentinel(k);
    EXPECT_EQ(src.export_cache(15, 5, k, v, &a), Status::kBadArgument) << "past length()";
    EXPECT_EQ(src.export_cache(0, 0, k, v, &a), Status::kBadArgument);
    EXPECT_EQ(src.export_cache(0, 2, k, k + 4, &a), Status::kOverlap);
    EXPECT_EQ(src.export_cache(0, 2, k, v, nullptr), Status::kNullPointer);
    ASSERT_TRUE(all_sentinel(k));
  });
}

TEST(KvCache, WeightLayoutsAgree) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<24, 20, 4, 2, 6, Bias::kYes, microattn::Rope::kYes>;
    constexpr std::size_t DM = Cfg::kDModel, QD = Cfg::kQDim, KD = Cfg::kKvDim, T = 24;
    static RandomWeights<Cfg> a;
    static RandomWeights<Cfg> b;
    static KvAttention<Cfg, A> ka, kb;
    a.fill(77);
    b = a;
    for (std::size_t i = 0; i < DM; ++i) {
      for (std::size_t j = 0; j < QD; ++j)
        b.wq[j * DM + i] = a.wq[i * QD + j], b.wo[i * QD + j] = a.wo[j * DM + i];
      for (std::size_t j = 0; j < KD; ++j)
        b.wk[j * DM + i] = a.wk[i * KD + j], b.wv[j * DM + i] = a.wv[i * KD + j];
    }
    microattn_test::Rng rng(78);
    rng.fill(g_x, T * DM, -1, 1);
    ka.reset();
    kb.reset();
    ASSERT_EQ(ka.set_weights(a.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(kb.set_weights(b.view(WeightLayout::kOutIn)), Status::kOk);
    ASSERT_EQ(ka.set_rope(rope_cfg(true, RopePairing::kHalfSplit, 0)), Status::kOk);
    ASSERT_EQ(kb.set_rope(rope_cfg(true, RopePairing::kHalfSplit, 0)), Status::kOk);
    ASSERT_EQ(ka.prefill(g_x, T - 4, g_y_pre), Status::kOk);
    ASSERT_EQ(kb.prefill(g_x, T - 4, g_y_dec), Status::kOk);
    for (std::size_t t = T - 4; t < T; ++t) {
      ASSERT_EQ(ka.decode(g_x + t * DM, g_y_pre + t * DM), Status::kOk);
      ASSERT_EQ(kb.decode(g_x + t * DM, g_y_dec + t * DM), Status::kOk);
    }
    const double err = microattn_test::max_diff(g_y_pre, g_y_dec, T * DM);
    // Different summation orders of the same products: within the layer tolerance (x2).
    EXPECT_LE(err, 2 * microattn_test::tolerance(DM + 2 * 6 + T + QD, 1.0)) << A::name();
  });
}

// GQA equals MHA whose key/value heads are the GQA ones repeated H/H_kv times: first for the
// double reference itself, then for the library (prefill + decode, with RoPE).
TEST(KvCache, GqaEqualsMhaWithRepeatedHeads) {
  constexpr std::size_t H = 6, HKV = 2, G = H / HKV, D = 8, DM = 16, T = quick_cap(30);
  using CfgG = Config<T, DM, H, HKV, D, Bias::kYes, microattn::Rope::kYes>;
  using CfgM = Config<T, DM, H, H, D, Bias::kYes, microattn::Rope::kYes>;
  static RandomWeights<CfgG> wg;
  static RandomWeights<CfgM> wm;
  wg.fill(91);
  wm.fill(92);
  for (std::size_t i = 0; i < DM * H * D; ++i) wm.wq[i] = wg.wq[i], wm.wo[i] = wg.wo[i];
  for (std::size_t i = 0; i < H * D; ++i) wm.bq[i] = wg.bq[i];
  for (std::size_t i = 0; i < DM; ++i) wm.bo[i] = wg.bo[i];
  // kInOut: head h of MHA = columns of GQA head h / G.
  for (std::size_t r = 0; r < DM; ++r)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t d = 0; d < D; ++d) {
        wm.wk[r * H * D + h * D + d] = wg.wk[r * HKV * D + (h / G) * D + d];
        wm.wv[r * H * D + h * D + d] = wg.wv[r * HKV * D + (h / G) * D + d];
      }
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t d = 0; d < D; ++d) {
      wm.bk[h * D + d] = wg.bk[(h / G) * D + d];
      wm.bv[h * D + d] = wg.bv[(h / G) * D + d];
    }
  microattn_test::Rng rng(93);
  rng.fill(g_x, T * DM, -1, 1);

  // The reference: core() with H_kv = 2 and with the heads repeated (H_kv = 6).
  {
    static double q[T * H * D], k[T * HKV * D], v[T * HKV * D], kr[T * H * D], vr[T * H * D];
    static double og[T * H * D], om[T * H * D], s[T];
    microattn_test::Rng r2(94);
    for (std::size_t i = 0; i < T * H * D; ++i) q[i] = r2.uniform(-1, 1);
    for (std::size_t i = 0; i < T * HKV * D; ++i)
      k[i] = r2.uniform(-1, 1), v[i] = r2.uniform(-1, 1);
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t d = 0; d < D; ++d) {
          kr[(t * H + h) * D + d] = k[(t * HKV + h / G) * D + d];
          vr[(t * H + h) * D + d] = v[(t * HKV + h / G) * D + d];
        }
    microattn_ref::core(q, k, v, T, T, H, HKV, D, 0.35, og, s);
    microattn_ref::core(q, kr, vr, T, T, H, H, D, 0.35, om, s);
    double err = 0;
    for (std::size_t i = 0; i < T * H * D; ++i)
      err = std::fabs(og[i] - om[i]) > err ? std::fabs(og[i] - om[i]) : err;
    EXPECT_EQ(err, 0.0) << "reference GQA vs repeated-head MHA";
  }

  for_each_arch([](auto arch) {
    using A = decltype(arch);
    static KvAttention<CfgG, A> kg;
    static KvAttention<CfgM, A> km;
    kg.reset();
    km.reset();
    ASSERT_EQ(kg.set_weights(wg.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(km.set_weights(wm.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(kg.set_rope(rope_cfg(true, RopePairing::kAdjacent, 6)), Status::kOk);
    ASSERT_EQ(km.set_rope(rope_cfg(true, RopePairing::kAdjacent, 6)), Status::kOk);
    ASSERT_EQ(kg.prefill(g_x, 20, g_y_pre), Status::kOk);
    ASSERT_EQ(km.prefill(g_x, 20, g_y_dec), Status::kOk);
    for (std::size_t t = 20; t < T; ++t) {
      ASSERT_EQ(kg.decode(g_x + t * DM, g_y_pre + t * DM), Status::kOk);
      ASSERT_EQ(km.decode(g_x + t * DM, g_y_dec + t * DM), Status::kOk);
    }
    const double err = microattn_test::max_diff(g_y_pre, g_y_dec, T * DM);
    // Per output the same products in the same order (each query head's keys are the same
    // floats); allow the layer tolerance in case a kernel blocks rows differently.
    EXPECT_LE(err, microattn_test::tolerance(DM + 2 * D + T + H * D, 1.0)) << A::name();
  });
}

// Positions up to T_max with RoPE, reached by prefill then decode, against the reference.
TEST(KvCache, RopeUpToCapacity) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg =
        Config<kQuick ? 40 : 70, 12, 2, 1, 16, microattn::Rope::kYes>;  // past one scalar key tile
    check_sequence<Cfg, A>(Cfg::kTMax, 123, WeightLayout::kOutIn,
                           rope_cfg(true, RopePairing::kHalfSplit, 10, 5.0f));
    check_sequence<Cfg, A>(Cfg::kTMax, 124, WeightLayout::kInOut,
                           rope_cfg(true, RopePairing::kAdjacent, 0, 2.0f));
  });
}

// One prefill call longer than the GEMM's row block (kMC: 64 scalar/Helium, 96-264 SIMD): the
// projections run block by block (K, V, Q of one block of x, then the next), each block's rows
// going to their own positions in the cache and the Q rows. Against the double reference, so a
// block written to the wrong rows or positions (errors of order 1) fails: fp32 cache with RoPE
// (keys through the Q rows), and the ring (sliding window) with K and V side by side in the Q
// rows (G >= 2) and with V through its own stage (G == 1).
template <class Cfg, class A>
void check_long_prefill(std::uint64_t seed) {
  constexpr std::size_t T = Cfg::kTMax, DM = Cfg::kDModel, OD = Cfg::kOutDim;
  static_assert(T > microattn::internal::Tiles<A>::kMC, "one call must span two row blocks");
  static_assert(T * DM <= kPoolIn && T * OD <= kPoolOut, "test pools too small");
  static_assert(
      microattn_ref::layer_rope_scratch(T, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead) <= kPoolRef,
      "test scratch pool too small");
  static RandomWeights<Cfg> w;
  static KvAttention<Cfg, A> kv;
  w.fill(seed);
  microattn_test::Rng(seed + 1).fill(g_x, T * DM, -1, 1);
  const RopeConfig rc = rope_cfg(true, RopePairing::kHalfSplit, 0, 100.0f);
  kv.reset();
  ASSERT_EQ(kv.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
  ASSERT_EQ(kv.set_rope(rc), Status::kOk);
  ASSERT_EQ(kv.prefill(g_x, T, g_y_pre), Status::kOk);
  microattn_ref::LayerRef ref = w.ref(WeightLayout::kInOut);
  ref.window = Cfg::kWindow;
  microattn_ref::layer_rope(ref, rope_ref_of(rc, Cfg::kDHead), g_x, T,
                            microattn::default_scale<Cfg>(), g_ref, g_scratch);
  // check_sequence's chain (d_model per projection, d_head per score, the keys a row sees per
  // P V row: T or the window, H d_head per W_O term), plus 8 for RoPE as the ring tests have.
  const double keys = Cfg::kSliding ? double(Cfg::kWindow) : double(T);
  const double chain = DM + 2.0 * Cfg::kDHead + keys + Cfg::kQDim + 8;
  const double tol = microattn_test::tolerance(chain, microattn_test::max_abs(g_ref, T * OD));
  EXPECT_LE(microattn_test::max_diff(g_y_pre, g_ref, T * OD), tol)
      << A::name() << " H " << Cfg::kHeads << " H_kv " << Cfg::kKvHeads << " window "
      << Cfg::kWindow;
}

TEST(KvCache, PrefillLongerThanARowBlock) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    constexpr std::size_t T = long_t<A>();
    check_long_prefill<Config<T, 12, 4, 2, 4, Bias::kYes, microattn::Rope::kYes>, A>(61);
    check_long_prefill<Config<T, 12, 4, 1, 4, microattn::SlidingWindow{40}, microattn::Rope::kYes>,
                       A>(62);
    check_long_prefill<Config<T, 12, 2, 2, 4, microattn::SlidingWindow{40}, microattn::Rope::kYes>,
                       A>(63);
  });
}

// The prefill chunk (a RAM knob) does not change results: per output row the same products
// are summed in the same order whatever the chunk. (Bit for bit with the SIMD kernels, whose
// FMAs are explicit; the scalar kernels write a * b + c, which the compiler may or may not
// contract into one FMA depending on the surrounding code, so we allow the layer tolerance.)
TEST(KvCache, PrefillChunkDoesNotChangeResults) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<40, 24, 4, 2, 8, Bias::kYes, microattn::Rope::kYes>;
    constexpr std::size_t DM = Cfg::kDModel, OD = Cfg::kOutDim, T = 40;
    static RandomWeights<Cfg> w;
    static KvAttention<Cfg, A> whole;
    static KvAttention<Cfg, A, 7> by7;
    static KvAttention<Cfg, A, 1> by1;
    static_assert(KvAttention<Cfg, A, 7>::kWorkspaceBytes < KvAttention<Cfg, A>::kWorkspaceBytes,
                  "a smaller chunk needs less workspace");
    w.fill(31);
    microattn_test::Rng rng(32);
    rng.fill(g_x, T * DM, -1, 1);
    const RopeConfig rc = rope_cfg(true, RopePairing::kHalfSplit, 0);
    whole.reset();
    by7.reset();
    by1.reset();
    ASSERT_EQ(whole.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(by7.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(by1.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(whole.set_rope(rc), Status::kOk);
    ASSERT_EQ(by7.set_rope(rc), Status::kOk);
    ASSERT_EQ(by1.set_rope(rc), Status::kOk);
    ASSERT_EQ(whole.prefill(g_x, 30, g_y_pre), Status::kOk);
    ASSERT_EQ(by7.prefill(g_x, 30, g_y_chunk), Status::kOk);
    ASSERT_EQ(by1.prefill(g_x, 30, g_y_dec), Status::kOk);
    EXPECT_EQ(by7.length(), 30u);
    for (std::size_t t = 30; t < T; ++t) {
      ASSERT_EQ(whole.decode(g_x + t * DM, g_y_pre + t * OD), Status::kOk);
      ASSERT_EQ(by7.decode(g_x + t * DM, g_y_chunk + t * OD), Status::kOk);
      ASSERT_EQ(by1.decode(g_x + t * DM, g_y_dec + t * OD), Status::kOk);
    }
    const double tol = microattn_test::tolerance(DM + 2 * 8 + T + Cfg::kQDim, 1.0);
    EXPECT_LE(microattn_test::max_diff(g_y_pre, g_y_chunk, T * OD), tol) << A::name() << " chunk 7";
    EXPECT_LE(microattn_test::max_diff(g_y_pre, g_y_dec, T * OD), tol) << A::name() << " chunk 1";
    // In place (y = x) with chunks: each chunk is read before its rows are written.
    static float io[T * DM];
    std::memcpy(io, g_x, sizeof io);
    by7.reset();
    ASSERT_EQ(by7.prefill(io, 30, io), Status::kOk);
    EXPECT_TRUE(same_bits(io, g_y_chunk, 30 * OD)) << A::name() << " in place, chunk 7";
  });
}

// ---------------------------------------------------------------- statuses and state

using SmallCfg = Config<12, 8, 4, 2, 4, Bias::kYes, microattn::Rope::kYes>;
using SmallNoWo = Config<12, 8, 4, 2, 4, Bias::kNo, OutProj::kNo, microattn::Rope::kYes>;

TEST(KvCache, BadInputsChangeNothing) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = SmallCfg;
    constexpr std::size_t DM = Cfg::kDModel, OD = Cfg::kOutDim, N = Cfg::kTMax;
    static RandomWeights<Cfg> w;
    static KvAttention<Cfg, A> kv, fresh;
    static float y[N * OD], yf[N * OD];
    w.fill(5);
    microattn_test::Rng rng(6);
    rng.fill(g_x, N * DM, -1, 1);
    kv.reset();
    fresh.reset();
    fill_sentinel(y, N * OD);

    // No weights yet (a default object): kNullPointer.
    static KvAttention<Cfg, A> unset;
    EXPECT_EQ(unset.prefill(g_x, 1, y), Status::kNullPointer);
    EXPECT_EQ(unset.decode(g_x, y), Status::kNullPointer);
    EXPECT_EQ(unset.length(), 0u);
    Weights<Cfg> partial = w.view(WeightLayout::kInOut);
    partial.b_v = nullptr;
    EXPECT_EQ(unset.set_weights(partial), Status::kNullPointer);
    EXPECT_EQ(unset.decode(g_x, y), Status::kNullPointer);  // still unset
    EXPECT_TRUE(all_sentinel(y, N * OD));

    ASSERT_EQ(kv.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
    ASSERT_EQ(fresh.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
    const RopeConfig rc = rope_cfg(true, RopePairing::kHalfSplit, 0);
    ASSERT_EQ(kv.set_rope(rc), Status::kOk);
    ASSERT_EQ(fresh.set_rope(rc), Status::kOk);

    // Bad RoPE settings on an empty cache: kBadArgument, setting unchanged.
    EXPECT_EQ(kv.set_rope(rope_cfg(true, RopePairing::kHalfSplit, 3)), Status::kBadArgument);
    EXPECT_EQ(kv.set_rope(rope_cfg(true, RopePairing::kHalfSplit, 6)), Status::kBadArgument);
    EXPECT_EQ(kv.set_rope(rope_cfg(true, RopePairing::kAdjacent, 2, 0.0f)), Status::kBadArgument);
    EXPECT_EQ(kv.set_rope(rope_cfg(true, RopePairing::kAdjacent, 2, -5.0f)), Status::kBadArgument);
    EXPECT_EQ(kv.set_rope(rope_cfg(true, RopePairing::kAdjacent, 2,
                                   std::numeric_limits<float>::quiet_NaN())),
              Status::kBadArgument);
    EXPECT_EQ(kv.set_rope(rope_cfg(true, RopePairing::kAdjacent, 2,
                                   std::numeric_limits<float>::infinity())),
              Status::kBadArgument);
    EXPECT_EQ(kv.set_rope(rope_cfg(true, static_cast<RopePairing>(7), 2)), Status::kBadArgument);
    EXPECT_TRUE(kv.rope().enabled);
    EXPECT_EQ(kv.rope().pairing, RopePairing::kHalfSplit);
    EXPECT_EQ(kv.rope().rotary_dims, 0u);
    EXPECT_EQ(kv.set_scale(std::numeric_limits<float>::infinity()), Status::kBadScale);

    // Null pointers and token counts.
    EXPECT_EQ(kv.prefill(nullptr, 1, y), Status::kNullPointer);
    EXPECT_EQ(kv.prefill(g_x, 1, nullptr), Status::kNullPointer);
    EXPECT_EQ(kv.decode(nullptr, y), Status::kNullPointer);
    EXPECT_EQ(kv.decode(g_x, nullptr), Status::kNullPointer);
    EXPECT_EQ(kv.prefill(g_x, 0, y), Status::kBadTokenCount);
    EXPECT_EQ(kv.prefill(g_x, N + 1, y), Status::kBadTokenCount);
    EXPECT_EQ(kv.truncate(1), Status::kBadArgument);
    EXPECT_EQ(kv.length(), 0u);
    EXPECT_TRUE(all_sentinel(y, N * OD));

    // Fill to T_max - 2, then an overflowing chunk: kCacheFull, y and length untouched.
    ASSERT_EQ(kv.prefill(g_x, N - 2, y), Status::kOk);
    ASSERT_EQ(fresh.prefill(g_x, N - 2, yf), Status::kOk);
    fill_sentinel(y, N * OD);
    EXPECT_EQ(kv.prefill(g_x, 3, y), Status::kCacheFull);
    EXPECT_EQ(kv.set_rope(rc), Status::kBadArgument);  // not while the cache holds tokens
    EXPECT_EQ(kv.truncate(N - 1), Status::kBadArgument);
    EXPECT_EQ(kv.length(), N - 2);
    EXPECT_TRUE(all_sentinel(y, N * OD));
    // The two remaining slots, then decode must refuse.
    ASSERT_EQ(kv.decode(g_x + (N - 2) * DM, y), Status::kOk);
    ASSERT_EQ(kv.prefill(g_x + (N - 1) * DM, 1, y + OD), Status::kOk);
    ASSERT_EQ(fresh.decode(g_x + (N - 2) * DM, yf), Status::kOk);
    ASSERT_EQ(fresh.prefill(g_x + (N - 1) * DM, 1, yf + OD), Status::kOk);
    EXPECT_TRUE(same_bits(y, yf, 2 * OD)) << A::name() << ": the failed calls changed the state";
    fill_sentinel(y, N * OD);
    EXPECT_EQ(kv.decode(g_x, y), Status::kCacheFull);
    EXPECT_EQ(kv.prefill(g_x, 1, y), Status::kCacheFull);
    EXPECT_EQ(kv.length(), N);
    EXPECT_TRUE(all_sentinel(y, N * OD));
  });
}

TEST(KvCache, OverlapWithoutOutputProjection) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = SmallNoWo;  // d_model 8, output 16 floats per token
    static RandomWeights<Cfg> w;
    static KvAttention<Cfg, A> kv;
    static float buf[Cfg::kTMax * Cfg::kOutDim], keep[Cfg::kTMax * Cfg::kOutDim];
    w.fill(8);
    kv.reset();
    ASSERT_EQ(kv.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    microattn_test::Rng rng(9);
    rng.fill(buf, Cfg::kTMax * Cfg::kOutDim, -1, 1);
    std::memcpy(keep, buf, sizeof buf);
    EXPECT_EQ(kv.prefill(buf, 2, buf + 4), Status::kOverlap);
    EXPECT_EQ(kv.decode(buf, buf + 7), Status::kOverlap);
    EXPECT_EQ(kv.length(), 0u);
    EXPECT_TRUE(same_bits(buf, keep, Cfg::kTMax * Cfg::kOutDim));
  });
}

// With W_O, y may alias x: the same bits as separate buffers.
TEST(KvCache, InPlaceWithOutputProjection) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = SmallCfg;
    constexpr std::size_t DM = Cfg::kDModel, N = Cfg::kTMax;
    static RandomWeights<Cfg> w;
    static KvAttention<Cfg, A> a, b;
    static float x[N * DM], io[N * DM], y[N * DM];
    w.fill(10);
    microattn_test::Rng rng(11);
    rng.fill(x, N * DM, -1, 1);
    std::memcpy(io, x, sizeof x);
    a.reset();
    b.reset();
    ASSERT_EQ(a.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(b.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(a.prefill(x, 5, y), Status::kOk);
    ASSERT_EQ(b.prefill(io, 5, io), Status::kOk);
    for (std::size_t t = 5; t < N; ++t) {
      ASSERT_EQ(a.decode(x + t * DM, y + t * DM), Status::kOk);
      ASSERT_EQ(b.decode(io + t * DM, io + t * DM), Status::kOk);
    }
    EXPECT_TRUE(same_bits(y, io, N * DM)) << A::name();
  });
}

// reset() then a new sequence gives a fresh object's outputs bit for bit, and truncate()
// followed by new tokens gives the outputs of an object that never saw the dropped ones.
TEST(KvCache, ResetAndTruncateEqualFreshObject) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<40, 12, 4, 2, 6, Bias::kYes, microattn::Rope::kYes>;
    constexpr std::size_t DM = Cfg::kDModel, OD = Cfg::kOutDim;
    static RandomWeights<Cfg> w;
    static KvAttention<Cfg, A> used, fresh;
    static float xa[40 * DM], xb[40 * DM], ya[40 * OD], yb[40 * OD];
    w.fill(12);
    microattn_test::Rng rng(13);
    rng.fill(xa, 40 * DM, -3, 3);
    rng.fill(xb, 40 * DM, -1, 1);
    const RopeConfig rc = rope_cfg(true, RopePairing::kAdjacent, 4);
    used.reset();
    fresh.reset();
    ASSERT_EQ(used.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
    ASSERT_EQ(fresh.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
    ASSERT_EQ(used.set_rope(rc), Status::kOk);
    ASSERT_EQ(fresh.set_rope(rc), Status::kOk);
    // A long first sequence leaves stale keys in every tile the second one uses.
    ASSERT_EQ(used.prefill(xa, 37, ya), Status::kOk);
    for (std::size_t t = 37; t < 40; ++t) ASSERT_EQ(used.decode(xa + t * DM, ya), Status::kOk);
    used.reset();
    EXPECT_EQ(used.length(), 0u);
    ASSERT_EQ(used.prefill(xb, 9, ya), Status::kOk);
    ASSERT_EQ(fresh.prefill(xb, 9, yb), Status::kOk);
    for (std::size_t t = 9; t < 20; ++t) {
      ASSERT_EQ(used.decode(xb + t * DM, ya + t * OD), Status::kOk);
      ASSERT_EQ(fresh.decode(xb + t * DM, yb + t * OD), Status::kOk);
    }
    EXPECT_TRUE(same_bits(ya, yb, 20 * OD)) << A::name() << " after reset";

    // Speculative roll-back: `used` continues with 6 tokens of xa, drops them, continues
    // with xb; `fresh` only ever sees xb.
    for (std::size_t t = 20; t < 26; ++t)
      ASSERT_EQ(used.decode(xa + t * DM, ya + t * OD), Status::kOk);
    ASSERT_EQ(used.truncate(20), Status::kOk);
    EXPECT_EQ(used.length(), 20u);
    ASSERT_EQ(used.prefill(xb + 20 * DM, 3, ya + 20 * OD), Status::kOk);
    ASSERT_EQ(used.decode(xb + 23 * DM, ya + 23 * OD), Status::kOk);
    ASSERT_EQ(fresh.prefill(xb + 20 * DM, 3, yb + 20 * OD), Status::kOk);
    ASSERT_EQ(fresh.decode(xb + 23 * DM, yb + 23 * OD), Status::kOk);
    EXPECT_TRUE(same_bits(ya + 20 * OD, yb + 20 * OD, 4 * OD)) << A::name() << " after truncate";
  });
}

// A decode on an empty cache is position 0: attention over itself only, so the output is the
// projection of its own value (softmax of one score is 1), as prefill(x, 1) gives.
TEST(KvCache, DecodeOnEmptyCache) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = SmallCfg;
    static RandomWeights<Cfg> w;
    static KvAttention<Cfg, A> a, b;
    w.fill(14);
    microattn_test::Rng rng(15);
    rng.fill(g_x, Cfg::kDModel, -1, 1);
    a.reset();
    b.reset();
    ASSERT_EQ(a.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(b.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(a.decode(g_x, g_y_dec), Status::kOk);
    ASSERT_EQ(b.prefill(g_x, 1, g_y_pre), Status::kOk);
    EXPECT_EQ(a.length(), 1u);
    microattn_ref::layer_rope(w.ref(WeightLayout::kInOut), {0, 0.0, false}, g_x, 1,
                              microattn::default_scale<Cfg>(), g_ref, g_scratch);
    const double tol = microattn_test::tolerance(Cfg::kDModel + 8 + 1 + Cfg::kQDim, 1.0);
    EXPECT_LE(microattn_test::max_diff(g_y_dec, g_ref, Cfg::kOutDim), tol) << A::name();
    EXPECT_LE(microattn_test::max_diff(g_y_pre, g_ref, Cfg::kOutDim), tol) << A::name();
  });
}

// The worked example of the teaching notes through the cache, token by token, scale 1:
// W_q = W_k = I and x = [[1,0],[0,1],[1,1]] give the notes' Q = K; W_v = [[1,2],[3,0]] gives
// V = [[1,2],[3,0],[4,2]] (the notes' first two value rows), so the outputs are the notes'
// attention weights times these rows.
TEST(KvCache, WorkedExampleTokenByToken) {
  for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<3, 2, 1, 1, 2, Bias::kNo, OutProj::kNo, microattn::Rope::kYes>;
    static const float eye[4] = {1, 0, 0, 1};
    static const float wv[4] = {1, 2, 3, 0};
    static KvAttention<Cfg, A> kv;
    Weights<Cfg> w(microattn::WeightLayout::kInOut);
    w.w_q = eye, w.w_k = eye, w.w_v = wv;
    kv.reset();
    ASSERT_EQ(kv.set_weights(w), Status::kOk);
    ASSERT_EQ(kv.set_scale(1.0f), Status::kOk);
    const float x[3 * 2] = {1, 0, 0, 1, 1, 1};
    float y[3 * 2];
    for (int t = 0; t < 3; ++t) ASSERT_EQ(kv.decode(x + 2 * t, y + 2 * t), Status::kOk);
    // Weights of the notes: [1], [0.268941, 0.731059], [0.211942, 0.211942, 0.576117].
    const float want[3 * 2] = {1.0f,
                               2.0f,
                               0.268941f * 1 + 0.731059f * 3,
                               0.268941f * 2 + 0.731059f * 0,
                               0.211942f * 1 + 0.211942f * 3 + 0.576117f * 4,
                               0.211942f * 2 + 0.211942f * 0 + 0.576117f * 2};
    // The weights are given to 6 digits: up to 5e-7 each, times values <= 4, three terms.
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(y[i], want[i], 1e-5) << A::name() << " i=" << i;
  });
}

}  // namespace
