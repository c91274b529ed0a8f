// SPDX-License-Identifier: Apache-2.0
// microattn cycle-counter benchmark for Cortex-M, printed in Google Benchmark's JSON shape so
// board results go through the same tools (tools/compare_bench.py, compare.py, jq) as host
// results. The host bench runs the same shapes under the same names (bench/cortex_m_shapes.cpp).
//
//   M1  layer forward, T=64, T_max=64 d_model=64 H=4 d_head=16 (the example's layer)
//   M2  the same layer, T=16 (a short prompt)
//   M3  the attention core alone (ScaledDotProductAttention), T=64 H=4 d_head=16
//   MD1 one decode step with the KV cache (KvAttention, same layer): the 64th token attends
//       over 63 cached ones; each iteration decodes it and truncates the cache back to 63
//   M1_panel16, MD1_panel16  M1 and MD1 with the same weights stored as kPanel16 (the others
//       use kInOut)
//   M1_q8, MD1_q8  M1 and MD1 with int8 weights (WeightType::kInt8): the same weights quantised
//       at compile time (example::quantize_int8, quantize_int8()'s rule), kPanel16, fp32 cache
//   MD1_q8_kv8     MD1_q8 with an int8 KV cache as well (CacheType::kInt8)
//   M1_qd8, MD1_qd8  M1_q8 and MD1_q8 with integer compute (Compute::kInt8: activations
//       quantised per row, int32 sums; SMLAD on cores with the DSP extension); only when
//       selected by name (the image microattn_cm_bench_qd8), not in "all"
//   MD1_qd8_kv8    MD1_qd8 with the int8 KV cache: the scores against it integer too (idem)
//   MLD1  one decode step of a multi-head latent attention layer (LatentAttention, issue 34) at
//         MD1's d_model, heads and T_max: d_c 32, d_R 16, d_nope 16, d_v 16 (a cached token is
//         48 floats, MD1's 128), RoPE on k_R and q_R (adjacent pairs, base 10000); the 64th
//         token over 63 cached ones (absorbed), truncating back to 63 as MD1; weights kInOut
//   MLD1_panel16  MLD1 with the same weights stored as kPanel16
//   MLF1  MLD1's layer prefilling a 64-token prompt into its emptied cache (unabsorbed, as
//         LatentPrefill::kAuto chooses for an empty cache): M1's counterpart
//   TLD1  one decode step of the trained tiny language model (examples/tiny_lm: microattn::Decoder,
//         int8 weights from the model file in flash, int8 cache, prefill chunk 4, the board
//         image's configuration): the 64th token over 63 cached ones, truncating back
//   TLD1_qd8  TLD1 with integer compute (Compute::kInt8: every matrix product in int8)
//   STD1  one decode step of the published stories260K checkpoint (tests/real_model.cmake's
//         model file in flash, fp32, T_max 256): the 129th token over 128 cached ones (the mean
//         position of a 256-token generation), truncating back
//   STD1_qd8  STD1 with int8 weights (export_pytorch.py --quant int8), int8 cache and integer
//         compute
//   The latent cases and TLD1 run only when selected by name (the image microattn_cm_bench_latent),
//   not in "all", for the reason the integer-compute ones do not (ports/cortex-m/CMakeLists.txt).
//
// Cases are chosen at build time (CMake MICROATTN_CM_BENCH_CASES="M1;MD1_q8", which defines
// MICROATTN_CM_BENCH_CASES_SELECTED and MICROATTN_CM_BENCH_<case>=1 for each): only their
// weights are in flash and only their objects in RAM. The cases run one after the other, so
// every layer object lives in one static arena, constructed before its case and destroyed
// after it: RAM is the largest case's object (~60 KB), not their sum.
//
// Counters, best first:
//   DWT->CYCCNT  real core cycles, on hardware ("cycles" in the JSON; real_time = cycles / the
//                board's core_clock_hz(), so only as right as the board file's clock).
//   QEMU -icount SysTick. QEMU's Cortex-M models have no DWT, so CYCCNT never advances; the
//                harness detects that and says so. Started with `-icount shift=0`
//                `... arg=--icount-shift=0`, QEMU advances its virtual clock 1 ns per guest
//                instruction, and SysTick (processor clock) counts that clock: "instructions"
//                in the JSON is a deterministic instruction count (+- one tick), NOT cycles.
//                Use it as a regression signal only.
//   neither      SysTick under plain QEMU follows host time: printed, labelled as noise.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>

#include "example_weights.hpp"
#include "microattn/microattn.hpp"
#include "port.hpp"

#if __has_include("microattn/kv_cache.hpp")
#include "microattn/kv_cache.hpp"
#define MICROATTN_CM_BENCH_KV 1
#else
#define MICROATTN_CM_BENCH_KV 0
#endif
#if __has_include("microattn/latent_attention.hpp")
#include "microattn/latent_attention.hpp"
#define MICROATTN_CM_BENCH_LATENT 1
#else
#define MICROATTN_CM_BENCH_LATENT 0
#endif

// ---- which cases: all, unless the build selected some.
#if defined(MICROATTN_CM_BENCH_CASES_SELECTED)
#define MICROATTN_CM_BENCH_DEFAULT 0
#else
#define MICROATTN_CM_BENCH_DEFAULT 1
#endif
#ifndef MICROATTN_CM_BENCH_M1
#define MICROATTN_CM_BENCH_M1 MICROATTN_CM_BENCH_DEFAULT
#endif
#ifndef MICROATTN_CM_BENCH_M2
#define MICROATTN_CM_BENCH_M2 MICROATTN_CM_BENCH_DEFAULT
#endif
#ifndef MICROATTN_CM_BENCH_M3
#define MICROATTN_CM_BENCH_M3 MICROATTN_CM_BENCH_DEFAULT
#endif
#ifndef MICROATTN_CM_BENCH_MD1
#define MICROATTN_CM_BENCH_MD1 MICROATTN_CM_BENCH_DEFAULT
#endif
#ifndef MICROATTN_CM_BENCH_M1_panel16
#define MICROATTN_CM_BENCH_M1_panel16 MICROATTN_CM_BENCH_DEFAULT
#endif
#ifndef MICROATTN_CM_BENCH_MD1_panel16
#define MICROATTN_CM_BENCH_MD1_panel16 MICROATTN_CM_BENCH_DEFAULT
#endif
#ifndef MICROATTN_CM_BENCH_M1_q8
#define MICROATTN_CM_BENCH_M1_q8 MICROATTN_CM_BENCH_DEFAULT
#endif
#ifndef MICROATTN_CM_BENCH_MD1_q8
#define MICROATTN_CM_BENCH_MD1_q8 MICROATTN_CM_BENCH_DEFAULT
#endif
#ifndef MICROATTN_CM_BENCH_MD1_q8_kv8
#define MICROATTN_CM_BENCH_MD1_q8_kv8 MICROATTN_CM_BENCH_DEFAULT
#endif
// Integer compute: only when selected (its own image, microattn_cm_bench_qd8; see CMakeLists).
#ifndef MICROATTN_CM_BENCH_M1_qd8
#define MICROATTN_CM_BENCH_M1_qd8 0
#endif
#ifndef MICROATTN_CM_BENCH_MD1_qd8
#define MICROATTN_CM_BENCH_MD1_qd8 0
#endif
#ifndef MICROATTN_CM_BENCH_MD1_qd8_kv8
#define MICROATTN_CM_BENCH_MD1_qd8_kv8 0
#endif
// Latent attention: only when selected, too (its own image, microattn_cm_bench_latent).
#ifndef MICROATTN_CM_BENCH_MLD1
#define MICROATTN_CM_BENCH_MLD1 0
#endif
#ifndef MICROATTN_CM_BENCH_MLD1_panel16
#define MICROATTN_CM_BENCH_MLD1_panel16 0
#endif
#ifndef MICROATTN_CM_BENCH_MLF1
#define MICROATTN_CM_BENCH_MLF1 0
#endif
// The tiny language model: only when selected (its own image, microattn_cm_bench_tiny_lm).
#ifndef MICROATTN_CM_BENCH_TLD1
#define MICROATTN_CM_BENCH_TLD1 0
#endif
#ifndef MICROATTN_CM_BENCH_TLD1_qd8
#define MICROATTN_CM_BENCH_TLD1_qd8 0
#endif
#define MICROATTN_CM_BENCH_TINY_LM (MICROATTN_CM_BENCH_TLD1 || MICROATTN_CM_BENCH_TLD1_qd8)
// stories260K: only when selected (its own image, microattn_cm_bench_stories).
#ifndef MICROATTN_CM_BENCH_STD1
#define MICROATTN_CM_BENCH_STD1 0
#endif
#ifndef MICROATTN_CM_BENCH_STD1_qd8
#define MICROATTN_CM_BENCH_STD1_qd8 0
#endif
#define MICROATTN_CM_BENCH_STORIES (MICROATTN_CM_BENCH_STD1 || MICROATTN_CM_BENCH_STD1_qd8)
#if !MICROATTN_CM_BENCH_KV  // decode cases need kv_cache.hpp
#undef MICROATTN_CM_BENCH_MD1
#undef MICROATTN_CM_BENCH_MD1_panel16
#undef MICROATTN_CM_BENCH_MD1_q8
#undef MICROATTN_CM_BENCH_MD1_q8_kv8
#undef MICROATTN_CM_BENCH_MD1_qd8
#undef MICROATTN_CM_BENCH_MD1_qd8_kv8
#define MICROATTN_CM_BENCH_MD1_qd8 0
#define MICROATTN_CM_BENCH_MD1_qd8_kv8 0
#define MICROATTN_CM_BENCH_MD1 0
#define MICROATTN_CM_BENCH_MD1_panel16 0
#define MICROATTN_CM_BENCH_MD1_q8 0
#define MICROATTN_CM_BENCH_MD1_q8_kv8 0
#endif
#if !MICROATTN_CM_BENCH_LATENT  // the latent cases need latent_attention.hpp
#undef MICROATTN_CM_BENCH_MLD1
#undef MICROATTN_CM_BENCH_MLD1_panel16
#undef MICROATTN_CM_BENCH_MLF1
#define MICROATTN_CM_BENCH_MLD1 0
#define MICROATTN_CM_BENCH_MLD1_panel16 0
#define MICROATTN_CM_BENCH_MLF1 0
#endif
// What the selected cases need.
#define NEED_W_INOUT (MICROATTN_CM_BENCH_M1 || MICROATTN_CM_BENCH_M2 || MICROATTN_CM_BENCH_MD1)
#define NEED_W_PANEL (MICROATTN_CM_BENCH_M1_panel16 || MICROATTN_CM_BENCH_MD1_panel16)
#define NEED_W_Q8                                                                            \
  (MICROATTN_CM_BENCH_M1_q8 || MICROATTN_CM_BENCH_MD1_q8 || MICROATTN_CM_BENCH_MD1_q8_kv8 || \
   MICROATTN_CM_BENCH_M1_qd8 || MICROATTN_CM_BENCH_MD1_qd8 || MICROATTN_CM_BENCH_MD1_qd8_kv8)
#define NEED_LAYER (MICROATTN_CM_BENCH_M1 || MICROATTN_CM_BENCH_M2 || MICROATTN_CM_BENCH_M1_panel16)
#define NEED_KV (MICROATTN_CM_BENCH_MD1 || MICROATTN_CM_BENCH_MD1_panel16)
#define NEED_LW_INOUT (MICROATTN_CM_BENCH_MLD1 || MICROATTN_CM_BENCH_MLF1)
#define NEED_LW_PANEL (MICROATTN_CM_BENCH_MLD1_panel16)
#define NEED_LATENT (NEED_LW_INOUT || NEED_LW_PANEL)

#if MICROATTN_CM_BENCH_TINY_LM || MICROATTN_CM_BENCH_STORIES
#include "microattn/decoder.hpp"
#endif
#if MICROATTN_CM_BENCH_TINY_LM
#include "tiny_lm_blobs.h"
#endif
#if MICROATTN_CM_BENCH_STORIES
#include "real_model_data.h"
#endif

namespace {

using namespace microattn::port;
using Cfg = microattn::Config<64, 64, 4, 4, 16>;
using CfgQ8 = microattn::Config<64, 64, 4, 4, 16, microattn::WeightType::kInt8>;
using CfgQ8Kv8 =
    microattn::Config<64, 64, 4, 4, 16, microattn::WeightType::kInt8, microattn::CacheType::kInt8>;
using CfgQd8 =
    microattn::Config<64, 64, 4, 4, 16, microattn::WeightType::kInt8, microattn::Compute::kInt8>;
using CfgQd8Kv8 = microattn::Config<64, 64, 4, 4, 16, microattn::WeightType::kInt8,
                                    microattn::Compute::kInt8, microattn::CacheType::kInt8>;
using Layer = microattn::MultiHeadAttention<Cfg>;
using LayerQ8 = microattn::MultiHeadAttention<CfgQ8>;
using LayerQd8 = microattn::MultiHeadAttention<CfgQd8>;
/// M3's object and its inputs (Q, K, V are only needed by M3, so they share the arena too).
struct CoreCase {
  microattn::ScaledDotProductAttention<Cfg> core;
  float q[Cfg::kTMax * Cfg::kQDim], k[Cfg::kTMax * Cfg::kKvDim], v[Cfg::kTMax * Cfg::kKvDim];
};
#if MICROATTN_CM_BENCH_KV
using Kv = microattn::KvAttention<Cfg>;
using KvQ8 = microattn::KvAttention<CfgQ8>;
using KvQ8Kv8 = microattn::KvAttention<CfgQ8Kv8>;
using KvQd8 = microattn::KvAttention<CfgQd8>;
using KvQd8Kv8 = microattn::KvAttention<CfgQd8Kv8>;
#endif
#if MICROATTN_CM_BENCH_LATENT
// T_max 64, d_model 64, H 4 (MD1's), d_c 32, d_R 16, d_nope 16, d_v 16.
using LCfg = microattn::LatentConfig<64, 64, 4, 32, 16, 16, 16>;
using Mla = microattn::LatentAttention<LCfg>;
static_assert(LCfg::kTMax == Cfg::kTMax && LCfg::kDModel == Cfg::kDModel,
              "the latent cases share g_x, g_y and MD1's token counts");
static_assert(microattn::LatentWeights<LCfg>::panel_fits(), "MLD1_panel16 needs kPanel16");
#endif
#if MICROATTN_CM_BENCH_TINY_LM
template <auto... kCompute>
using TinyLmCfgOf = microattn::DecoderConfig<100, 128, 2, 4, 2, 32, 256, 128,
                                             microattn::LmHead::kTied, microattn::WeightType::kInt8,
                                             microattn::CacheType::kInt8, kCompute...>;
using TinyLm = microattn::Decoder<TinyLmCfgOf<>, microattn::DefaultArch, 4>;
using TinyLmQd8 =
    microattn::Decoder<TinyLmCfgOf<microattn::Compute::kInt8>, microattn::DefaultArch, 4>;
#endif
#if MICROATTN_CM_BENCH_STORIES
// stories260K (tests/test_real_model.cpp's configuration) at T_max 256.
template <auto... kOptions>
using StoriesCfgOf =
    microattn::DecoderConfig<512, 64, 5, 8, 4, 8, 172, 256, microattn::LmHead::kTied, kOptions...>;
using Stories = microattn::Decoder<StoriesCfgOf<>>;
using StoriesQd8 =
    microattn::Decoder<StoriesCfgOf<microattn::WeightType::kInt8, microattn::CacheType::kInt8,
                                    microattn::Compute::kInt8>>;
#endif

#if NEED_W_INOUT
constexpr auto kWq = example::make_weights<Cfg::kDModel * Cfg::kQDim>(1, 0.125f);
constexpr auto kWk = example::make_weights<Cfg::kDModel * Cfg::kKvDim>(2, 0.125f);
constexpr auto kWv = example::make_weights<Cfg::kDModel * Cfg::kKvDim>(3, 0.125f);
constexpr auto kWo = example::make_weights<Cfg::kQDim * Cfg::kDModel>(4, 0.125f);
#endif
#if NEED_W_PANEL
constexpr auto kPq = example::panel16<Cfg::kDModel, Cfg::kQDim>(
    example::make_weights<Cfg::kDModel * Cfg::kQDim>(1, 0.125f));
constexpr auto kPk = example::panel16<Cfg::kDModel, Cfg::kKvDim>(
    example::make_weights<Cfg::kDModel * Cfg::kKvDim>(2, 0.125f));
constexpr auto kPv = example::panel16<Cfg::kDModel, Cfg::kKvDim>(
    example::make_weights<Cfg::kDModel * Cfg::kKvDim>(3, 0.125f));
constexpr auto kPo = example::panel16<Cfg::kQDim, Cfg::kDModel>(
    example::make_weights<Cfg::kQDim * Cfg::kDModel>(4, 0.125f));
#endif
#if NEED_W_Q8
// int8 panels + per-column scales (a quarter of the fp32 bytes in flash).
constexpr auto kQq = example::quantize_int8<Cfg::kDModel, Cfg::kQDim>(
    example::make_weights<Cfg::kDModel * Cfg::kQDim>(1, 0.125f), /*panel16=*/true);
constexpr auto kQk = example::quantize_int8<Cfg::kDModel, Cfg::kKvDim>(
    example::make_weights<Cfg::kDModel * Cfg::kKvDim>(2, 0.125f), true);
constexpr auto kQv = example::quantize_int8<Cfg::kDModel, Cfg::kKvDim>(
    example::make_weights<Cfg::kDModel * Cfg::kKvDim>(3, 0.125f), true);
constexpr auto kQo = example::quantize_int8<Cfg::kQDim, Cfg::kDModel>(
    example::make_weights<Cfg::kQDim * Cfg::kDModel>(4, 0.125f), true);
#endif

#if NEED_LW_INOUT || NEED_LW_PANEL
/// The latent layer's weights in one layout: W_Q [64][128], W_DKV [64][48], g_KV [32],
/// W_UKV [32][128], W_O [64][64] (seeds 11..15; U(+-0.125), the gains 1 + U(+-0.25)).
template <bool kPanel>
struct LatentArrays {
  template <std::size_t In, std::size_t Out>
  static constexpr std::array<float, In * Out> mat(std::uint32_t seed) {
    if constexpr (kPanel) {
      return example::panel16<In, Out>(example::make_weights<In * Out>(seed, 0.125f));
    } else {
      return example::make_weights<In * Out>(seed, 0.125f);
    }
  }
  static constexpr std::size_t DM = LCfg::kDModel;
  std::array<float, DM* LCfg::kQDim> q = mat<DM, LCfg::kQDim>(11);
  std::array<float, DM* LCfg::kDCache> dkv = mat<DM, LCfg::kDCache>(12);
  std::array<float, LCfg::kDLatent> g = example::make_gains<LCfg::kDLatent>(13, 0.25f);
  std::array<float, LCfg::kDLatent* LCfg::kUkvDim> ukv = mat<LCfg::kDLatent, LCfg::kUkvDim>(14);
  std::array<float, LCfg::kVDim* DM> o = mat<LCfg::kVDim, DM>(15);
};
#endif
#if NEED_LW_INOUT
constexpr LatentArrays<false> kLatentInOut{};
#endif
#if NEED_LW_PANEL
constexpr LatentArrays<true> kLatentPanel{};
#endif

// ---- the arena: big enough and aligned enough for the object of every selected case.
struct Nothing {};
template <bool kUsed, class T>
using If = std::conditional_t<kUsed, T, Nothing>;
template <class... T>
struct ArenaFor {
  static constexpr std::size_t kBytes = std::max({sizeof(T)...});
  static constexpr std::size_t kAlign = std::max({alignof(T)...});
};
using Arena =
    ArenaFor<If<NEED_LAYER, Layer>, If<MICROATTN_CM_BENCH_M1_q8, LayerQ8>,
             If<MICROATTN_CM_BENCH_M1_qd8, LayerQd8>, If<MICROATTN_CM_BENCH_M3, CoreCase>
#if MICROATTN_CM_BENCH_KV
             ,
             If<NEED_KV, Kv>, If<MICROATTN_CM_BENCH_MD1_q8, KvQ8>,
             If<MICROATTN_CM_BENCH_MD1_q8_kv8, KvQ8Kv8>, If<MICROATTN_CM_BENCH_MD1_qd8, KvQd8>,
             If<MICROATTN_CM_BENCH_MD1_qd8_kv8, KvQd8Kv8>
#endif
#if MICROATTN_CM_BENCH_LATENT
             ,
             If<NEED_LATENT, Mla>
#endif
#if MICROATTN_CM_BENCH_TINY_LM
             ,
             If<MICROATTN_CM_BENCH_TLD1, TinyLm>, If<MICROATTN_CM_BENCH_TLD1_qd8, TinyLmQd8>
#endif
#if MICROATTN_CM_BENCH_STORIES
             ,
             If<MICROATTN_CM_BENCH_STD1, Stories>, If<MICROATTN_CM_BENCH_STD1_qd8, StoriesQd8>
#endif
             >;
alignas(Arena::kAlign) unsigned char g_arena[Arena::kBytes];

/// Constructs a T in the arena (zero-initialised, as a static would be); ~Scoped destroys it.
template <class T>
struct Scoped {
  static_assert(sizeof(T) <= sizeof(g_arena) && alignof(T) <= Arena::kAlign, "arena too small");
  T* p;
  Scoped() : p(new (g_arena) T()) {}
  ~Scoped() { p->~T(); }
  Scoped(const Scoped&) = delete;
  Scoped& operator=(const Scoped&) = delete;
  T& operator*() const { return *p; }
};

float g_x[Cfg::kTMax * Cfg::kDModel];
float g_y[Cfg::kTMax * Cfg::kOutDim];

// The public entry points, each behind a noinline wrapper: the benchmark calls them, and
// stack_usage.py finds them in the call graph as `entry_*` (the wrapper adds a few bytes at most).
[[gnu::noinline, maybe_unused]] microattn::Status entry_layer_forward(Layer& layer, const float* x,
                                                                      std::size_t T, float* y) {
  return layer.forward(x, T, y);
}
[[gnu::noinline, maybe_unused]] microattn::Status entry_layer_forward_q8(LayerQ8& layer,
                                                                         const float* x,
                                                                         std::size_t T, float* y) {
  return layer.forward(x, T, y);
}
[[gnu::noinline, maybe_unused]] microattn::Status entry_layer_forward_qd8(LayerQd8& layer,
                                                                          const float* x,
                                                                          std::size_t T, float* y) {
  return layer.forward(x, T, y);
}
[[gnu::noinline, maybe_unused]] microattn::Status entry_sdpa_forward(
    microattn::ScaledDotProductAttention<Cfg>& core, const float* q, const float* k, const float* v,
    std::size_t T, float* out) {
  return core.forward(q, k, v, T, out);
}
#if MICROATTN_CM_BENCH_KV
[[gnu::noinline, maybe_unused]] microattn::Status entry_decode_step(Kv& kv, const float* x,
                                                                    float* y) {
  return kv.decode(x, y);
}
[[gnu::noinline, maybe_unused]] microattn::Status entry_decode_step_q8(KvQ8& kv, const float* x,
                                                                       float* y) {
  return kv.decode(x, y);
}
[[gnu::noinline, maybe_unused]] microattn::Status entry_decode_step_q8_kv8(KvQ8Kv8& kv,
                                                                           const float* x,
                                                                           float* y) {
  return kv.decode(x, y);
}
[[gnu::noinline, maybe_unused]] microattn::Status entry_decode_step_qd8(KvQd8& kv, const float* x,
                                                                        float* y) {
  return kv.decode(x, y);
}
[[gnu::noinline, maybe_unused]] microattn::Status entry_decode_step_qd8_kv8(KvQd8Kv8& kv,
                                                                            const float* x,
                                                                            float* y) {
  return kv.decode(x, y);
}
#endif

#if MICROATTN_CM_BENCH_LATENT
[[gnu::noinline, maybe_unused]] microattn::Status entry_latent_decode_step(Mla& mla, const float* x,
                                                                           float* y) {
  return mla.decode(x, y);
}
[[gnu::noinline, maybe_unused]] microattn::Status entry_latent_prefill(Mla& mla, const float* x,
                                                                       std::size_t T, float* y) {
  return mla.prefill(x, T, y);
}
#endif
#if MICROATTN_CM_BENCH_TINY_LM
[[gnu::noinline, maybe_unused]] microattn::Status entry_tiny_lm_decode(TinyLm& m,
                                                                       std::int32_t token,
                                                                       float* logits) {
  return m.decode(token, logits);
}
[[gnu::noinline, maybe_unused]] microattn::Status entry_tiny_lm_decode_qd8(TinyLmQd8& m,
                                                                           std::int32_t token,
                                                                           float* logits) {
  return m.decode(token, logits);
}
#endif
#if MICROATTN_CM_BENCH_STORIES
[[gnu::noinline, maybe_unused]] microattn::Status entry_stories_decode(Stories& m,
                                                                       std::int32_t token,
                                                                       float* logits) {
  return m.decode(token, logits);
}
[[gnu::noinline, maybe_unused]] microattn::Status entry_stories_decode_qd8(StoriesQd8& m,
                                                                           std::int32_t token,
                                                                           float* logits) {
  return m.decode(token, logits);
}
#endif

enum class Counter { kCycles, kIcount, kHostTime };
Counter g_counter = Counter::kHostTime;
int g_icount_shift = 0;
int g_index = 0;

/// Average count per call of `iters` calls of f, after one warm-up call (false: f failed).
/// Cycles are read around each call (CYCCNT wraps at 2^32: ~21 s at 200 MHz, far more than one
/// call) and summed in 64 bits; SysTick ticks are 64-bit already, read around the whole loop.
template <class F>
bool measure(int iters, F& f, std::uint64_t& per) {
  if (f() != microattn::Status::kOk) return false;
  std::uint64_t total = 0;
  if (g_counter == Counter::kCycles) {
    for (int i = 0; i < iters; ++i) {
      const std::uint32_t c0 = cycles();
      (void)f();
      total += static_cast<std::uint32_t>(cycles() - c0);
    }
  } else {
    const std::uint64_t t0 = ticks();
    for (int i = 0; i < iters; ++i) (void)f();
    total = ticks() - t0;
  }
  per = total / static_cast<std::uint64_t>(iters);
  return true;
}

/// One JSON benchmark entry: `iters` runs of f, after one warm-up run.
template <class F>
void run(const char* name, int iters, F&& f) {
  std::uint64_t per = 0;
  write(g_index ? ",\n" : "");
  write("    {\"name\": \"");
  write(name);
  if (!measure(iters, f, per)) {
    write(
        "\", \"run_type\": \"iteration\", \"error_occurred\": true, \"error_message\": \"status "
        "not ok\"}");
    ++g_index;
    return;
  }
  // Ticks and cycles are core-clock periods; under -icount one tick is 1e9/clock ns of virtual
  // time = 1e9/clock/2^shift instructions.
  const double ns = static_cast<double>(per) * 1e9 / static_cast<double>(core_clock_hz());
  write("\", \"family_index\": ");
  write_u64(static_cast<std::uint64_t>(g_index));
  write(", \"per_family_instance_index\": 0, \"run_name\": \"");
  write(name);
  write(
      "\", \"run_type\": \"iteration\", \"repetitions\": 1, \"repetition_index\": 0, "
      "\"threads\": 1, \"iterations\": ");
  write_u64(static_cast<std::uint64_t>(iters));
  write(", \"real_time\": ");
  write_double(ns, 9);
  write(", \"cpu_time\": ");
  write_double(ns, 9);
  write(", \"time_unit\": \"ns\"");
  if (g_counter == Counter::kCycles) {
    write(", \"cycles\": ");
    write_u64(per);
  } else if (g_counter == Counter::kIcount) {
    write(", \"instructions\": ");
    write_double(ns / static_cast<double>(1u << g_icount_shift), 9);
    write(", \"label\": \"QEMU -icount instruction count, NOT cycles; time is virtual\"");
  } else {
    write(", \"emulator_ticks\": ");
    write_u64(per);
    write(", \"label\": \"QEMU without -icount: host time, noise, NOT cycles\"");
  }
  write("}");
  ++g_index;
}

/// The layer's four weight matrices stored as `layout` (no biases in this configuration).
[[maybe_unused]] microattn::Weights<Cfg> weights(microattn::WeightLayout layout, const float* q,
                                                 const float* k, const float* v, const float* o) {
  microattn::Weights<Cfg> w(layout);
  w.w_q = q;
  w.w_k = k;
  w.w_v = v;
  w.w_o = o;
  return w;
}

#if NEED_W_INOUT
microattn::Weights<Cfg> weights_inout() {
  return weights(microattn::WeightLayout::kInOut, kWq.data(), kWk.data(), kWv.data(), kWo.data());
}
#endif
#if NEED_W_PANEL
microattn::Weights<Cfg> weights_panel16() {
  return weights(microattn::WeightLayout::kPanel16, kPq.data(), kPk.data(), kPv.data(), kPo.data());
}
#endif
#if NEED_W_Q8
/// The int8 matrices (kPanel16) with their scales, for a Config with WeightType::kInt8.
template <class C>
microattn::Weights<C> weights_q8() {
  return microattn::Weights<C>(microattn::WeightLayout::kPanel16, kQq.q.data(), kQq.scale.data(),
                               kQk.q.data(), kQk.scale.data(), kQv.q.data(), kQv.scale.data(),
                               kQo.q.data(), kQo.scale.data());
}
#endif

#if NEED_LATENT
/// The latent layer's weights over LatentArrays (kPanel16 or kInOut).
template <bool kPanel>
microattn::LatentWeights<LCfg> latent_weights(const LatentArrays<kPanel>& a) {
  microattn::LatentWeights<LCfg> w;
  w.layout = kPanel ? microattn::WeightLayout::kPanel16 : microattn::WeightLayout::kInOut;
  w.w_q = a.q.data(), w.w_dkv = a.dkv.data(), w.g_kv = a.g.data(), w.w_ukv = a.ukv.data();
  w.w_o = a.o.data();
  return w;
}
#endif

/// What a case's layer is set to besides its weights: nothing for KvAttention.
template <class Obj>
[[maybe_unused]] microattn::Status configure(Obj&) {
  return microattn::Status::kOk;
}
#if MICROATTN_CM_BENCH_LATENT
/// The latent layer: RoPE on its decoupled parts (k_R, q_R; adjacent pairs, base 10000, as
/// DeepSeek-V2's checkpoints and the host's ML1).
[[maybe_unused]] microattn::Status configure(Mla& mla) {
  microattn::RopeConfig rope;
  rope.enabled = true, rope.pairing = microattn::RopePairing::kAdjacent;
  return mla.set_rope(rope);
}
#endif

/// An error entry for a case whose set-up failed.
[[maybe_unused]] void run_failed(const char* name) {
  run(name, 1, [] { return microattn::Status::kBadArgument; });
}

#if NEED_LAYER
/// M1 / M2 / M1_panel16: the fp32 layer with weights w, forward over T tokens.
void run_layer(const char* name, int iters, std::size_t T, const microattn::Weights<Cfg>& w) {
  Scoped<Layer> layer;
  if ((*layer).set_weights(w) != microattn::Status::kOk) return run_failed(name);
  Layer& l = *layer;
  run(name, iters, [&l, T] { return entry_layer_forward(l, g_x, T, g_y); });
}
#endif

#if MICROATTN_CM_BENCH_KV || MICROATTN_CM_BENCH_LATENT
/// MD1 on a KvAttention (MLD1 on a LatentAttention) Obj with weights w: prefill 63 tokens, then
/// time Step (the entry_*decode_step* of Obj; a template argument, so a direct call the stack
/// check sees) decoding the 64th and truncating back.
template <class Obj, microattn::Status (*Step)(Obj&, const float*, float*), class W>
[[maybe_unused]] void run_decode_step(const char* name, const W& w) {
  Scoped<Obj> scoped;
  Obj& kv = *scoped;
  if (kv.set_weights(w) != microattn::Status::kOk || configure(kv) != microattn::Status::kOk ||
      kv.prefill(g_x, Cfg::kTMax - 1, g_y) != microattn::Status::kOk)
    return run_failed(name);
  run(name, 10, [&kv] {
    const microattn::Status st = Step(kv, g_x + (Cfg::kTMax - 1) * Cfg::kDModel, g_y);
    return st == microattn::Status::kOk ? kv.truncate(Cfg::kTMax - 1) : st;
  });
}
#endif

#if MICROATTN_CM_BENCH_TINY_LM || MICROATTN_CM_BENCH_STORIES
/// A Decoder from a model file prefills kCached tokens, then each iteration decodes one more and
/// truncates back (TLD1: the tiny model, 63; STD1: stories260K, 128).
template <class Model, microattn::Status (*kEntry)(Model&, std::int32_t, float*),
          std::size_t kCached>
void run_model_decode(const char* name, const unsigned char* blob, std::size_t bytes, int iters) {
  using DCfg = typename Model::Config;
  Scoped<Model> scoped;
  Model& m = *scoped;
  static std::int32_t tokens[kCached + 1];
  static float logits[DCfg::kVocab];
  for (std::size_t i = 0; i <= kCached; ++i)
    tokens[i] = static_cast<std::int32_t>((i * 37 + 11) % DCfg::kVocab);
  microattn::DecoderWeights<DCfg> w;
  if (microattn::decoder_weights_from_blob<DCfg>(blob, bytes, &w) != microattn::Status::kOk ||
      m.set_weights(w) != microattn::Status::kOk ||
      m.prefill(tokens, kCached, logits) != microattn::Status::kOk)
    return run_failed(name);
  run(name, iters, [&m] {
    const microattn::Status st = kEntry(m, tokens[kCached], logits);
    return st == microattn::Status::kOk ? m.truncate(kCached) : st;
  });
}
#endif

#if MICROATTN_CM_BENCH_MLF1
/// MLF1: the latent layer prefilling the whole 64-token prompt into its emptied cache.
void run_latent_prefill(const char* name, int iters) {
  Scoped<Mla> scoped;
  Mla& mla = *scoped;
  if (mla.set_weights(latent_weights(kLatentInOut)) != microattn::Status::kOk ||
      configure(mla) != microattn::Status::kOk)
    return run_failed(name);
  run(name, iters, [&mla] {
    mla.reset();
    return entry_latent_prefill(mla, g_x, LCfg::kTMax, g_y);
  });
}
#endif

/// Google Benchmark's context "caches" entry.
void write_cache(bool first, const char* type, std::uint32_t bytes) {
  write(first ? "\n      " : ",\n      ");
  write("{\"type\": \"");
  write(type);
  write("\", \"level\": 1, \"size\": ");
  write_u64(bytes);
  write(", \"num_sharing\": 1}");
}

}  // namespace

int main(int argc, char** argv) {
  bool icount = false;
  for (int i = 1; i < argc; ++i) {
    static const char kFlag[] = "--icount-shift=";
    if (std::strncmp(argv[i], kFlag, sizeof(kFlag) - 1) == 0) {
      icount = true;
      g_icount_shift = argv[i][sizeof(kFlag) - 1] - '0';
    }
  }
  const bool dwt = cycle_counter_works();
  g_counter = dwt ? Counter::kCycles : icount ? Counter::kIcount : Counter::kHostTime;
  if (!dwt) tick_counter_start();
  example::fill(g_x, Cfg::kTMax * Cfg::kDModel, 5, 1.0f);

  const CacheInfo caches = cache_info();
  write("{\n  \"context\": {\n    \"date\": \"n/a\",\n    \"host_name\": \"");
  write(board_name());
  write(
      "\",\n    \"executable\": \"microattn_cm_bench\",\n    \"num_cpus\": 1,\n    "
      "\"mhz_per_cpu\": ");
  write_u64(core_clock_hz() / 1000000u);
  write(",\n    \"cpu_scaling_enabled\": false,\n    \"caches\": [");
  if (caches.icache_bytes && caches.icache_on)
    write_cache(true, "Instruction", caches.icache_bytes);
  if (caches.dcache_bytes && caches.dcache_on)
    write_cache(!(caches.icache_bytes && caches.icache_on), "Data", caches.dcache_bytes);
  write(
      "],\n    \"load_avg\": [],\n    \"library_build_type\": \"release\",\n"
      "    \"microattn_cpu\": \"");
  write(cpu_name());
  write("\",\n    \"microattn_arch\": \"");
  write(microattn::arch_name<>());
  write("\",\n    \"microattn_core_clock_hz\": ");
  write_u64(core_clock_hz());
  write(",\n    \"microattn_cpuid\": \"");
  write_hex32(cpuid());
  write("\",\n    \"microattn_caches\": \"");
  if (!caches.core_has_caches) {
    write("none (a core without L1 caches)");
  } else if (!caches.enabled_at_reset) {
    write("off (built with MICROATTN_PORT_NO_CACHES)");
  } else if (caches.icache_on || caches.dcache_on) {
    write(caches.icache_on ? "I-cache on" : "I-cache off");
    if (caches.icache_bytes) write(" ("), write_u64(caches.icache_bytes / 1024), write(" KiB)");
    write(caches.dcache_on ? ", D-cache on" : ", D-cache off");
    if (caches.dcache_bytes) write(" ("), write_u64(caches.dcache_bytes / 1024), write(" KiB)");
  } else {
    write("turned on at reset, but CCR reads them back as off (QEMU models no caches)");
  }
  write("\",\n    \"microattn_counter\": \"");
  write(dwt ? "DWT CYCCNT (core cycles)"
        : icount
            ? "DWT CYCCNT does not advance (QEMU); SysTick under -icount: instructions, NOT cycles"
            : "DWT CYCCNT does not advance (QEMU); SysTick follows host time: noise");
  write("\"\n  },\n  \"benchmarks\": [\n");

#if MICROATTN_CM_BENCH_M1
  run_layer("M1", 3, 64, weights_inout());
#endif
#if MICROATTN_CM_BENCH_M2
  run_layer("M2", 10, 16, weights_inout());
#endif
#if MICROATTN_CM_BENCH_M3
  {
    Scoped<CoreCase> scoped;
    CoreCase& c = *scoped;
    example::fill(c.q, Cfg::kTMax * Cfg::kQDim, 6, 1.0f);
    example::fill(c.k, Cfg::kTMax * Cfg::kKvDim, 7, 1.0f);
    example::fill(c.v, Cfg::kTMax * Cfg::kKvDim, 8, 1.0f);
    run("M3", 3, [&c] { return entry_sdpa_forward(c.core, c.q, c.k, c.v, 64, g_y); });
  }
#endif
#if MICROATTN_CM_BENCH_MD1
  run_decode_step<Kv, entry_decode_step>("MD1", weights_inout());
#endif
#if MICROATTN_CM_BENCH_M1_panel16
  run_layer("M1_panel16", 3, 64, weights_panel16());
#endif
#if MICROATTN_CM_BENCH_MD1_panel16
  run_decode_step<Kv, entry_decode_step>("MD1_panel16", weights_panel16());
#endif
#if MICROATTN_CM_BENCH_M1_q8
  {
    Scoped<LayerQ8> scoped;
    LayerQ8& l = *scoped;
    if (l.set_weights(weights_q8<CfgQ8>()) == microattn::Status::kOk)
      run("M1_q8", 3, [&l] { return entry_layer_forward_q8(l, g_x, 64, g_y); });
    else
      run_failed("M1_q8");
  }
#endif
#if MICROATTN_CM_BENCH_MD1_q8
  run_decode_step<KvQ8, entry_decode_step_q8>("MD1_q8", weights_q8<CfgQ8>());
#endif
#if MICROATTN_CM_BENCH_MD1_q8_kv8
  run_decode_step<KvQ8Kv8, entry_decode_step_q8_kv8>("MD1_q8_kv8", weights_q8<CfgQ8Kv8>());
#endif
#if MICROATTN_CM_BENCH_MLD1
  run_decode_step<Mla, entry_latent_decode_step>("MLD1", latent_weights(kLatentInOut));
#endif
#if MICROATTN_CM_BENCH_MLD1_panel16
  run_decode_step<Mla, entry_latent_decode_step>("MLD1_panel16", latent_weights(kLatentPanel));
#endif
#if MICROATTN_CM_BENCH_MLF1
  run_latent_prefill("MLF1", 3);
#endif
#if MICROATTN_CM_BENCH_TLD1
  run_model_decode<TinyLm, entry_tiny_lm_decode, 63>("TLD1", tiny_lm_q8_blob, tiny_lm_q8_blob_bytes,
                                                     3);
#endif
#if MICROATTN_CM_BENCH_TLD1_qd8
  run_model_decode<TinyLmQd8, entry_tiny_lm_decode_qd8, 63>("TLD1_qd8", tiny_lm_q8_blob,
                                                            tiny_lm_q8_blob_bytes, 3);
#endif
#if MICROATTN_CM_BENCH_STD1
  run_model_decode<Stories, entry_stories_decode, 128>("STD1", real_model_blob,
                                                       real_model_blob_bytes, 3);
#endif
#if MICROATTN_CM_BENCH_STD1_qd8
  run_model_decode<StoriesQd8, entry_stories_decode_qd8, 128>("STD1_qd8", real_model_q8_blob,
                                                              real_model_q8_blob_bytes, 3);
#endif
#if MICROATTN_CM_BENCH_M1_qd8
  {
    Scoped<LayerQd8> scoped;
    LayerQd8& l = *scoped;
    if (l.set_weights(weights_q8<CfgQd8>()) == microattn::Status::kOk)
      run("M1_qd8", 3, [&l] { return entry_layer_forward_qd8(l, g_x, 64, g_y); });
    else
      run_failed("M1_qd8");
  }
#endif
#if MICROATTN_CM_BENCH_MD1_qd8
  run_decode_step<KvQd8, entry_decode_step_qd8>("MD1_qd8", weights_q8<CfgQd8>());
#endif
#if MICROATTN_CM_BENCH_MD1_qd8_kv8
  run_decode_step<KvQd8Kv8, entry_decode_step_qd8_kv8>("MD1_qd8_kv8", weights_q8<CfgQd8Kv8>());
#endif
  write("\n  ]\n}\n");
  return 0;
}
