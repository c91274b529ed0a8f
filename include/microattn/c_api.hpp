// SPDX-License-Identifier: Apache-2.0
// microattn: the C interface, C++ side. Configurations are compile-time, so a C program gets
// one set of extern "C" functions per layer: one macro line in a C++ file of the project
// defines them, and a C header generated for the target declares them with the layer's storage
// struct (whose size and alignment C must know at compile time).
//
//   1. Generate the C header (and, optionally, the one-line C++ file) for the TARGET: the tool
//      compiles a probe with the target's compiler and flags and reads sizeof / alignof of the
//      C++ object and the configuration's fingerprint from the object file (nothing is run):
//        python3 tools/microattn_c.py --name mylayer --kind layer
//            --config "64, 64, 4, 2, 16, Bias::kYes"
//            --cxx arm-none-eabi-g++
//            --cxxflags="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"
//            --out mylayer.h --cpp-out mylayer.cpp          (one command line)
//      --kind layer | kv | core | latent (MultiHeadAttention, KvAttention,
//      ScaledDotProductAttention, LatentAttention: --config gives a LatentConfig's arguments);
//      --chunk N sets a KV or latent layer's prefill chunk. The Config may hold every option, also
//      microattn::WeightType::kInt8 (set_weights then takes microattn_weights_q8, a latent
//      layer's microattn_latent_weights_q8) and, for kv and latent, microattn::CacheType::kInt8
//      (an int8 cache: the header's NAME_CACHE_BYTES). The building blocks: --kind linear
//      (--config gives a LinearConfig's arguments, "64, 32, Bias::kYes"), mlp (an MlpConfig's,
//      "64, 256, Activation::kSwiGlu, WeightType::kInt8"; --chunk N: rows per pass, default 16),
//      rmsnorm ("64": RmsNorm<64>), layernorm ("64" or "64, Bias::kNo"). Pass
//      every flag that changes the kernels' arch (-march, -mcpu, -mfpu,
//      -DMICROATTN_FORCE_SCALAR=1); `--help` lists the rest. `--cpp-from a.h b.h --cpp-out
//      layers.cpp` writes one C++ file for several layers (the kernels they share compiled once).
//   2. Compile the C++ file with that compiler and those flags, C++17 with -fno-exceptions
//      -fno-rtti (a C program's linker has no C++ runtime: with exceptions on, the kernels'
//      noexcept functions reference __gxx_personality_v0), with lib/c_api.cpp and
//      lib/status.cpp built the same way (docs/integration.md):
//        #include "mylayer.h"
//        #include "microattn/c_api.hpp"
//        MICROATTN_C_LAYER(mylayer, microattn::Config<64, 64, 4, 2, 16, microattn::Bias::kYes>);
//      Other kinds: MICROATTN_C_KV_LAYER(NAME, Config), MICROATTN_C_KV_LAYER_CHUNKED(NAME, chunk,
//      Config), MICROATTN_C_CORE(NAME, Config), MICROATTN_C_LINEAR(NAME, LinearConfig),
//      MICROATTN_C_MLP(NAME, MlpConfig), MICROATTN_C_MLP_CHUNKED(NAME, rows, MlpConfig),
//      MICROATTN_C_RMSNORM(NAME, d), MICROATTN_C_LAYERNORM(NAME, d[, Bias]) (--cpp-out writes
//      the right line). A header
//      generated for another configuration (any Config parameter, the kind, the chunk) does not
//      compile here: the header's NAME_CONFIG_ID is config_id<>() of the configuration it was
//      made for, and a static_assert names the layer (ConfigCheck<microattn_c_NAME::Layer, ...>
//      in the instantiation shows both fingerprints). Nor does one made for another arch or
//      compiler whose object differs (StorageCheck<...> shows the sizes). Define
//      MICROATTN_C_ALLOW_LARGER_STORAGE before this include to accept a storage struct larger
//      than needed (e.g. one hand-written header shared by two targets; it still needs the
//      configuration's MICROATTN_C_CONFIG_ID_NAME, which is the same on every target).
//   3. From C:
//        #include "mylayer.h"
//        static mylayer g_layer;  // or __attribute__((section(".sram2"))), or on the stack
//        microattn_status s = mylayer_set_weights(&g_layer, &weights);
//        if (s == MICROATTN_OK) s = mylayer_forward(&g_layer, x, tokens, y);
//
// The object: `typedef struct mylayer { MICROATTN_ALIGNAS(A) unsigned char opaque[N]; } mylayer;`
// with MYLAYER_BYTES == N == sizeof and MYLAYER_ALIGN == A == alignof of the C++ object, which
// the functions use in place. All-zero bytes are a ready object (default scale, RoPE off, empty
// cache, no weights; a norm's default epsilon), so a static in .bss needs no init call and no
// C++ constructor;
// mylayer_init() zeroes one on the stack or for reuse. An object that is not aligned to
// MYLAYER_ALIGN (e.g. from malloc on a target with 64-byte SIMD alignment) gets
// MICROATTN_BAD_ARGUMENT from every function.
//
// Functions the macros define (all extern "C"; obj NULL -> MICROATTN_NULL_POINTER; statuses
// and rules as the C++ methods of the same name, README "Status codes", docs/numeric-contract.md):
//   every kind   void NAME_init(NAME* obj);
//   attention    (layer, kv, core, latent, decoder: the building blocks have no softmax scale)
//                microattn_status NAME_set_scale(NAME* obj, float scale);
//                float NAME_scale(const NAME* obj);                  (0 for a NULL obj)
//                microattn_status NAME_set_executor(NAME* obj, const microattn_executor* ex);
//                    (MICROATTN_BAD_ARGUMENT for more workers than the Config's MaxWorkers,
//                    or workers > 1 without run; nothing changed then)
//   layer, kv    microattn_status NAME_set_weights(NAME* obj, const microattn_weights* w);
//                    (const microattn_weights_q8* w when the Config has WeightType::kInt8:
//                    int8 matrices + fp32 scales, made by microattn_quantize_int8())
//                microattn_status NAME_set_rope(NAME* obj, const microattn_rope* rope);
//                microattn_rope NAME_rope(const NAME* obj);          (off for a NULL obj)
//   layer        microattn_status NAME_forward(NAME* obj, const float* x, size_t T, float* y);
//   kv           microattn_status NAME_prefill(NAME* obj, const float* x, size_t T, float* y);
//                microattn_status NAME_decode(NAME* obj, const float* x, float* y);
//                microattn_status NAME_truncate(NAME* obj, size_t length);
//                microattn_status NAME_reset(NAME* obj);
//                size_t NAME_length(const NAME* obj);                (0 for a NULL obj)
//                size_t NAME_oldest(const NAME* obj);   (oldest position held: 0 unless the
//                    Config has SlidingWindow{W}, whose cache is a ring; 0 for a NULL obj)
//                microattn_status NAME_export_cache(const NAME* obj, size_t first, size_t n,
//                    float* k, float* v, microattn_cache_slice* info);
//                microattn_status NAME_import_cache(NAME* obj, const microattn_cache_slice* info,
//                    const float* k, const float* v);
//   latent       (LatentAttention<LatentConfig>, DeepSeek-V2's multi-head latent attention:
//                MICROATTN_C_LATENT(NAME, LatentConfig), MICROATTN_C_LATENT_CHUNKED(NAME,
//                chunk, LatentConfig); --kind latent)
//                microattn_status NAME_set_weights(NAME* obj, const microattn_latent_weights* w);
//                    (const microattn_latent_weights_q8* w when the LatentConfig has
//                    WeightType::kInt8; PANEL16 where LatentWeights<LCfg>::panel_fits())
//                NAME_set_rope, NAME_rope, NAME_prefill, NAME_decode, NAME_truncate,
//                NAME_reset, NAME_length as kv;
//                microattn_status NAME_set_rms_eps(NAME* obj, float eps);
//                float NAME_rms_eps(const NAME* obj);               (0 for a NULL obj)
//                microattn_status NAME_export_cache(const NAME* obj, size_t first, size_t n,
//                    float* rows, microattn_cache_slice* info);   (rows [n][d_c + d_R])
//                microattn_status NAME_import_cache(NAME* obj, const microattn_cache_slice* info,
//                    const float* rows);
//   core         microattn_status NAME_forward(NAME* obj, const float* q, size_t ldq,
//                    const float* k, size_t ldk, const float* v, size_t ldv, size_t T,
//                    float* out, size_t ldo);
//   decoder      set_weights_blob, check_blob, prefill, prefill_all, decode, truncate, reset,
//   length
//                (MICROATTN_C_DECODER: tokens in, logits out; the generated header lists them)
//   linear, mlp  (Linear<LinearConfig>, Mlp<MlpConfig>: M rows of any number, no scale)
//                microattn_status NAME_set_weights(NAME* obj, const microattn_linear_weights* w);
//                    (microattn_mlp_weights for an MLP; microattn_linear_weights_q8 /
//                    microattn_mlp_weights_q8 with WeightType::kInt8)
//                microattn_status NAME_set_executor(NAME* obj, const microattn_executor* ex);
//                microattn_status NAME_forward(NAME* obj, const float* x, size_t M, float* y);
//   rmsnorm,     (RmsNorm<d>, LayerNorm<d, Bias>: no weights struct, no executor; y may be x)
//   layernorm    microattn_status NAME_set_weight(NAME* obj, const float* g);     (rmsnorm)
//                microattn_status NAME_set_weights(NAME* obj, const float* g,
//                    const float* b);                  (layernorm; b unused with Bias::kNo)
//                microattn_status NAME_set_eps(NAME* obj, float eps);
//                float NAME_eps(const NAME* obj);                    (0 for a NULL obj)
//                microattn_status NAME_forward(NAME* obj, const float* x, size_t M, float* y);
//
// Use each macro at namespace scope, once per layer in the whole program (the functions have
// external linkage).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "microattn/attention.hpp"
#include "microattn/config.hpp"
#include "microattn/decoder.hpp"
#include "microattn/kv_cache.hpp"
#include "microattn/latent_attention.hpp"
#include "microattn/linear.hpp"
#include "microattn/microattn.h"
#include "microattn/mlp.hpp"
#include "microattn/norm.hpp"
#include "microattn/status.hpp"
#include "microattn/weights.hpp"

namespace microattn {
namespace c_api {

/// False where this file may not define C glue: with exceptions on, the kernels' noexcept
/// functions reference __gxx_personality_v0, which a C program's link does not have. Every
/// MICROATTN_C_* macro asserts it; MICROATTN_C_ALLOW_EXCEPTIONS (a program linked by the C++
/// compiler) lifts it.
#if (defined(__cpp_exceptions) || defined(__EXCEPTIONS)) && !defined(MICROATTN_C_ALLOW_EXCEPTIONS)
constexpr bool kGlueCompiles = false;
#else
constexpr bool kGlueCompiles = true;
#endif

/// The C++ object behind each kind of C layer (the macros and tools/microattn_c.py use these).
template <class Cfg>
using Layer = MultiHeadAttention<Cfg>;
template <class Cfg, std::size_t kPrefillChunk = Cfg::kTMax>
using KvLayer = KvAttention<Cfg, DefaultArch, kPrefillChunk>;
template <class Cfg>
using Core = ScaledDotProductAttention<Cfg>;
template <class LCfg, std::size_t kPrefillChunk = LCfg::kTMax>
using Latent = LatentAttention<LCfg, DefaultArch, kPrefillChunk>;
template <class DCfg, std::size_t kPrefillChunk>
using DecoderModel = Decoder<DCfg, DefaultArch, kPrefillChunk>;
template <class LCfg>
using LinearBlock = Linear<LCfg, DefaultArch>;
template <class MCfg, std::size_t kMaxRows>
using MlpBlock = Mlp<MCfg, DefaultArch, kMaxRows>;

/// The object of each kind (kChunk: a KV, latent or decoder layer's prefill chunk, an MLP's rows
/// per pass, unused by the others). kLatent's Cfg is a LatentConfig, kDecoder's a
/// DecoderConfig, kLinear's a LinearConfig, kMlp's an MlpConfig; a norm's Cfg is the norm class
/// itself (RmsNorm<d>, LayerNorm<d, Bias>: its whole configuration). New kinds go last: the
/// value is part of every fingerprint.
enum class Kind { kLayer, kKv, kCore, kLatent, kDecoder, kLinear, kMlp, kRmsNorm, kLayerNorm };

/// The shape of a norm class: its width, its bias, and its kind.
template <class Norm>
struct NormShape {
  static_assert(sizeof(Norm) == 0,
                "microattn C API: a norm's configuration is microattn::RmsNorm<d> or "
                "microattn::LayerNorm<d, Bias>");
};
template <std::size_t kD>
struct NormShape<RmsNorm<kD>> {
  static constexpr Kind kKind = Kind::kRmsNorm;
  static constexpr std::size_t kDim = kD;
  static constexpr bool kBias = false;
};
template <std::size_t kD, Bias kB>
struct NormShape<LayerNorm<kD, kB>> {
  static constexpr Kind kKind = Kind::kLayerNorm;
  static constexpr std::size_t kDim = kD;
  static constexpr bool kBias = kB != Bias::kNo;
};
template <Kind kKind, class Cfg, std::size_t kChunk>
struct ObjectOf;
template <class Cfg, std::size_t kChunk>
struct ObjectOf<Kind::kLayer, Cfg, kChunk> {
  using type = Layer<Cfg>;
};
template <class Cfg, std::size_t kChunk>
struct ObjectOf<Kind::kKv, Cfg, kChunk> {
  using type = KvLayer<Cfg, kChunk>;
};
template <class Cfg, std::size_t kChunk>
struct ObjectOf<Kind::kCore, Cfg, kChunk> {
  using type = Core<Cfg>;
};
template <class Cfg, std::size_t kChunk>
struct ObjectOf<Kind::kLatent, Cfg, kChunk> {
  using type = Latent<Cfg, kChunk>;
};
template <class Cfg, std::size_t kChunk>
struct ObjectOf<Kind::kDecoder, Cfg, kChunk> {
  using type = DecoderModel<Cfg, kChunk>;
};
template <class Cfg, std::size_t kChunk>
struct ObjectOf<Kind::kLinear, Cfg, kChunk> {
  using type = LinearBlock<Cfg>;
};
template <class Cfg, std::size_t kChunk>
struct ObjectOf<Kind::kMlp, Cfg, kChunk> {
  using type = MlpBlock<Cfg, kChunk>;
};
template <class Cfg, std::size_t kChunk>
struct ObjectOf<Kind::kRmsNorm, Cfg, kChunk> {
  static_assert(NormShape<Cfg>::kKind == Kind::kRmsNorm,
                "microattn C API: MICROATTN_C_RMSNORM / --kind rmsnorm is an RmsNorm<d>");
  using type = Cfg;
};
template <class Cfg, std::size_t kChunk>
struct ObjectOf<Kind::kLayerNorm, Cfg, kChunk> {
  static_assert(
      NormShape<Cfg>::kKind == Kind::kLayerNorm,
      "microattn C API: MICROATTN_C_LAYERNORM / --kind layernorm is a LayerNorm<d, Bias>");
  using type = Cfg;
};

namespace detail {
/// FNV-1a over the 8 bytes of each value, little end first: the same number on every target.
constexpr std::uint32_t fnv1a(std::uint32_t h, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i)
    h = (h ^ static_cast<std::uint32_t>((v >> (8 * i)) & 0xffu)) * 16777619u;
  return h;
}

/// config_id() of a latent layer: every LatentConfig parameter (T_max, d_model, H, d_c, d_R,
/// d_nope, d_v, d_cq, MaxWorkers, WeightType, CacheType, LatentPrefill) and the prefill chunk.
template <class LCfg, std::size_t kChunk>
constexpr std::uint32_t latent_config_id() noexcept {
  // The first value is the version of this encoding: a change to it changes every fingerprint.
  const std::uint64_t values[] = {1u,
                                  static_cast<std::uint64_t>(Kind::kLatent),
                                  LCfg::kTMax,
                                  LCfg::kDModel,
                                  LCfg::kHeads,
                                  LCfg::kDLatent,
                                  LCfg::kDRope,
                                  LCfg::kDNope,
                                  LCfg::kDV,
                                  LCfg::kDQLatent,
                                  LCfg::kMaxWorkers,
                                  kChunk};
  std::uint32_t h = 2166136261u;  // FNV-1a's offset basis
  for (const std::uint64_t v : values) h = fnv1a(h, v);
  // Options added after version 1, folded in only when set (older fingerprints stay valid).
  if (LCfg::kInt8Weights) h = fnv1a(h, 0x57493855u);   // "WI8U": WeightType::kInt8
  if (LCfg::kInt8Cache) h = fnv1a(h, 0x43493855u);     // "CI8U": CacheType::kInt8
  if (LCfg::kAbsorbedOnly) h = fnv1a(h, 0x4c504142u);  // "LPAB": LatentPrefill::kAbsorbed
  return h;
}

/// config_id() of a Decoder: every DecoderConfig parameter and option, and the prefill chunk.
template <class DCfg, std::size_t kChunk>
constexpr std::uint32_t decoder_config_id() noexcept {
  using A = typename DCfg::Attn;
  // The first value is the version of this encoding: a change to it changes every fingerprint.
  const std::uint64_t values[] = {1u,
                                  static_cast<std::uint64_t>(Kind::kDecoder),
                                  DCfg::kVocab,
                                  DCfg::kDModel,
                                  DCfg::kLayers,
                                  A::kHeads,
                                  A::kKvHeads,
                                  A::kDHead,
                                  DCfg::kDHidden,
                                  DCfg::kTMax,
                                  static_cast<std::uint64_t>(A::kWeightType),
                                  static_cast<std::uint64_t>(A::kCacheType),
                                  static_cast<std::uint64_t>(A::kCompute),
                                  DCfg::kMaxWorkers,
                                  DCfg::kTiedHead ? 1u : 0u,
                                  static_cast<std::uint64_t>(DCfg::kAct),
                                  kChunk};
  std::uint32_t h = 2166136261u;  // FNV-1a's offset basis
  for (const std::uint64_t v : values) h = fnv1a(h, v);
  return h;
}

/// FNV-1a over a list of values (the fingerprints of the building blocks).
template <std::size_t kN>
constexpr std::uint32_t fnv1a_all(const std::uint64_t (&values)[kN]) noexcept {
  std::uint32_t h = 2166136261u;  // FNV-1a's offset basis
  for (const std::uint64_t v : values) h = fnv1a(h, v);
  return h;
}

/// config_id() of a Linear (every LinearConfig parameter and option) or an Mlp (every
/// MlpConfig parameter and option, the activation, the rows per pass kChunk).
template <Kind kKind, class Cfg, std::size_t kChunk>
constexpr std::uint32_t block_options_id() noexcept {
  // The first value is the version of this encoding: a change to it changes every fingerprint.
  if constexpr (kKind == Kind::kLinear) {
    const std::uint64_t values[] = {1u,
                                    static_cast<std::uint64_t>(kKind),
                                    Cfg::kIn,
                                    Cfg::kOut,
                                    Cfg::kBias,
                                    Cfg::kInt8Weights,
                                    Cfg::kMaxWorkers};
    return fnv1a_all(values);
  } else {
    const std::uint64_t values[] = {1u,
                                    static_cast<std::uint64_t>(kKind),
                                    Cfg::kDModel,
                                    Cfg::kDHidden,
                                    static_cast<std::uint64_t>(Cfg::kAct),
                                    Cfg::kBias,
                                    Cfg::kInt8Weights,
                                    Cfg::kMaxWorkers,
                                    kChunk};
    return fnv1a_all(values);
  }
}
/// h with the weights' format folded in when it is neither fp32 nor per-column int8 (the
/// formats added after version 1: older fingerprints stay valid).
template <class Cfg>
constexpr std::uint32_t block_format_id(std::uint32_t h) noexcept {
  constexpr std::uint32_t code = Cfg::WeightFormat::kDesc.code();
  if (code == format::F32::kDesc.code() || code == format::Qc8::kDesc.code()) return h;
  return fnv1a(h, 0x464d5400u + std::uint64_t{code});  // "FMT"
}
template <Kind kKind, class Cfg, std::size_t kChunk>
constexpr std::uint32_t block_config_id() noexcept {
  return block_format_id<Cfg>(block_options_id<kKind, Cfg, kChunk>());
}

/// config_id() of a norm: its kind, width and bias.
template <class Norm>
constexpr std::uint32_t norm_config_id() noexcept {
  using S = NormShape<Norm>;
  // The first value is the version of this encoding: a change to it changes every fingerprint.
  const std::uint64_t values[] = {1u, static_cast<std::uint64_t>(S::kKind), S::kDim, S::kBias};
  return fnv1a_all(values);
}

/// config_id() of a MultiHeadAttention, KvAttention or ScaledDotProductAttention Config.
template <Kind kKind, class Cfg, std::size_t kChunk>
constexpr std::uint32_t attention_config_id() noexcept {
  const std::uint64_t bias = (Cfg::kBiasQ ? 1u : 0u) | (Cfg::kBiasK ? 2u : 0u) |
                             (Cfg::kBiasV ? 4u : 0u) | (Cfg::kBiasO ? 8u : 0u);
  // The first value is the version of this encoding: a change to it changes every fingerprint.
  const std::uint64_t values[] = {1u,
                                  static_cast<std::uint64_t>(kKind),
                                  Cfg::kTMax,
                                  Cfg::kDModel,
                                  Cfg::kHeads,
                                  Cfg::kKvHeads,
                                  Cfg::kDHead,
                                  bias,
                                  Cfg::kHasOutProj ? 1u : 0u,
                                  Cfg::kOutDim,
                                  Cfg::kHasRope ? 1u : 0u,
                                  static_cast<std::uint64_t>(Cfg::kMask),
                                  Cfg::kWindow,
                                  static_cast<std::uint64_t>(Cfg::kWeightType),
                                  static_cast<std::uint64_t>(Cfg::kCacheType),
                                  Cfg::kMaxWorkers,
                                  kKind == Kind::kKv ? kChunk : 0u};
  std::uint32_t h = 2166136261u;  // FNV-1a's offset basis
  for (const std::uint64_t v : values) h = fnv1a(h, v);
  // Options added after version 1, folded in only when set (older fingerprints stay valid).
  if (Cfg::kInt8Compute) h = fnv1a(h, 0x434f4d50u + static_cast<std::uint64_t>(Cfg::kCompute));
  return h;
}
}  // namespace detail

/// Fingerprint of a C layer's configuration: the kind, every Config parameter (T_max, d_model,
/// H, H_kv, d_head, the bias flags in use, W_O and its width, RoPE, mask, window, weight and
/// cache types, MaxWorkers; a LatentConfig's: detail::latent_config_id) and a KV or latent
/// layer's prefill chunk. tools/microattn_c.py writes it into the header as NAME_CONFIG_ID and
/// the MICROATTN_C_* line compares, so a header made for another configuration does not compile
/// even where the object's size is the same (a mask or a window does not change it).
/// Independent of the target: sizes and arch are checked apart.
template <Kind kKind, class Cfg, std::size_t kChunk>
constexpr std::uint32_t config_id() noexcept {
  if constexpr (kKind == Kind::kLatent) {
    return detail::latent_config_id<Cfg, kChunk>();
  } else if constexpr (kKind == Kind::kDecoder) {
    return detail::decoder_config_id<Cfg, kChunk>();
  } else if constexpr (kKind == Kind::kLinear || kKind == Kind::kMlp) {
    return detail::block_config_id<kKind, Cfg, kChunk>();
  } else if constexpr (kKind == Kind::kRmsNorm || kKind == Kind::kLayerNorm) {
    return detail::norm_config_id<Cfg>();
  } else {
    return detail::attention_config_id<kKind, Cfg, kChunk>();
  }
}

/// Compile-time comparison of the configuration a layer's C header was made for (its
/// NAME_CONFIG_ID) with the MICROATTN_C_* line's; instantiated by the macros so that a mismatch
/// shows the layer and both fingerprints in the compiler's instantiation context.
template <class LayerTag, std::uint32_t kLineId, std::uint32_t kHeaderId>
struct ConfigCheck {
  static constexpr bool kFits = kLineId == kHeaderId;
  static_assert(kFits,
                "microattn C API: a layer's C header was made for another configuration "
                "(ConfigCheck<layer, this line's config_id, the header's NAME_CONFIG_ID>): "
                "regenerate it with tools/microattn_c.py and this line's Config");
};

/// Compile-time comparison of a C storage struct with the C++ object; instantiated by the
/// macros so that a mismatch shows the layer (a tag type in its namespace) and the four numbers
/// in the compiler's instantiation context.
template <class LayerTag, std::size_t kObjectBytes, std::size_t kObjectAlign,
          std::size_t kHeaderBytes, std::size_t kHeaderAlign>
struct StorageCheck {
#if defined(MICROATTN_C_ALLOW_LARGER_STORAGE)
  static constexpr bool kFits = kHeaderBytes >= kObjectBytes && kHeaderAlign % kObjectAlign == 0;
#else
  static constexpr bool kFits = kHeaderBytes == kObjectBytes && kHeaderAlign == kObjectAlign;
#endif
  static_assert(
      kFits,
      "microattn C API: a layer's C header gives a storage size / alignment "
      "(StorageCheck<layer, object bytes, object align, header bytes, header align>) that "
      "differs from this target's C++ object: regenerate it with tools/microattn_c.py "
      "and this compiler and flags");
};

/// Compile-time comparison of the set_weights prototype of a layer's C header (HeaderFn, as
/// declared there) with the C weight struct of its Config (WeightsC): a header made for fp32
/// weights used with a WeightType::kInt8 Config (or the reverse) names the layer.
template <class LayerTag, class HeaderFn, class WeightsC, class Storage>
struct SetWeightsCheck {
  static constexpr bool kFits =
      std::is_same<HeaderFn, microattn_status(Storage*, const WeightsC*)>::value;
  static_assert(kFits,
                "microattn C API: a layer's C header declares NAME_set_weights with another "
                "weight struct (SetWeightsCheck<layer, header's prototype, the Config's "
                "struct, ...>) than its Config needs: regenerate it with tools/microattn_c.py");
};

constexpr microattn_status to_c(Status s) noexcept {
  return static_cast<microattn_status>(static_cast<int>(s));
}

/// The C++ object in a C storage struct: kOk, kNullPointer (storage is null) or kBadArgument
/// (storage is not aligned for Object). The storage is used as the object itself: every
/// object of the library is valid from all-zero bytes, with nothing to construct or destroy.
template <class Object, class Storage>
Status object_of(Storage* storage, Object** out) noexcept {
  static_assert(std::is_trivially_destructible<Object>::value,
                "microattn C API: the object must need no destructor");
  if (storage == nullptr) return Status::kNullPointer;
  std::uintptr_t address = reinterpret_cast<std::uintptr_t>(storage);
#if defined(__GNUC__)
  // Storage's type promises its alignment, so a compiler may fold the test below to false:
  // the caller's pointer can still be misaligned (malloc, a cast, a packed struct).
  __asm__("" : "+r"(address));
#endif
  if (address % alignof(Object) != 0) return Status::kBadArgument;
  *out = reinterpret_cast<Object*>(storage);
  return Status::kOk;
}

/// The C weight struct of a configuration: microattn_weights (fp32 matrices), or
/// microattn_weights_q8 (int8 matrices + scales) with WeightType::kInt8; for a LatentConfig
/// microattn_latent_weights, or microattn_latent_weights_q8. NAME_set_weights takes a pointer
/// to it, and tools/microattn_c.py declares it so in the generated header.
template <class Cfg>
struct CWeightsOf {
  using type = std::conditional_t<Cfg::kInt8Weights, microattn_weights_q8, microattn_weights>;
};
template <std::size_t kT, std::size_t kD, std::size_t kH, std::size_t kC, std::size_t kR,
          std::size_t kN, std::size_t kV, auto... kOptions>
struct CWeightsOf<LatentConfig<kT, kD, kH, kC, kR, kN, kV, kOptions...>> {
  using type =
      std::conditional_t<LatentConfig<kT, kD, kH, kC, kR, kN, kV, kOptions...>::kInt8Weights,
                         microattn_latent_weights_q8, microattn_latent_weights>;
};
template <std::size_t kI, std::size_t kO, auto... kOptions>
struct CWeightsOf<LinearConfig<kI, kO, kOptions...>> {
  using type = std::conditional_t<LinearConfig<kI, kO, kOptions...>::kInt8Weights,
                                  microattn_linear_weights_q8, microattn_linear_weights>;
};
template <std::size_t kD, std::size_t kH, Activation kA, auto... kOptions>
struct CWeightsOf<MlpConfig<kD, kH, kA, kOptions...>> {
  using type = std::conditional_t<MlpConfig<kD, kH, kA, kOptions...>::kInt8Weights,
                                  microattn_mlp_weights_q8, microattn_mlp_weights>;
};
template <class Cfg>
using CWeights = typename CWeightsOf<Cfg>::type;

/// A C layout as the C++ one: a value that is not a MICROATTN_LAYOUT_* becomes one that
/// Weights::check() refuses (kBadArgument), after its null-pointer check, as in C++ (256 must
/// not read as kInOut: the C++ enum is 8 bits wide).
constexpr WeightLayout layout_from_c(int layout) noexcept {
  return (layout >= MICROATTN_LAYOUT_IN_OUT && layout <= MICROATTN_LAYOUT_PANEL16)
             ? static_cast<WeightLayout>(layout)
             : static_cast<WeightLayout>(0xff);
}

static_assert(MICROATTN_FORMAT_F32 == format::F32::kDesc.code() &&
                  MICROATTN_FORMAT_QC8 == format::Qc8::kDesc.code() &&
                  MICROATTN_FORMAT_F16 == format::F16::kDesc.code() &&
                  MICROATTN_FORMAT_BF16 == format::BF16::kDesc.code() &&
                  MICROATTN_FORMAT_QG8_32 == format::Qg8<32>::kDesc.code() &&
                  MICROATTN_FORMAT_QG8_64 == format::Qg8<64>::kDesc.code() &&
                  MICROATTN_FORMAT_QG8_128 == format::Qg8<128>::kDesc.code(),
              "microattn C API: the C format codes are StorageFormat::code()");

/// The C matrices struct of a configuration (NAME_set_matrices): microattn_layer_matrices, or
/// microattn_latent_matrices, _linear_matrices, _mlp_matrices for those Config families.
template <class Cfg>
struct CMatricesOf {
  using type = microattn_layer_matrices;
};
template <std::size_t kT, std::size_t kD, std::size_t kH, std::size_t kC, std::size_t kR,
          std::size_t kN, std::size_t kV, auto... kOptions>
struct CMatricesOf<LatentConfig<kT, kD, kH, kC, kR, kN, kV, kOptions...>> {
  using type = microattn_latent_matrices;
};
template <std::size_t kI, std::size_t kO, auto... kOptions>
struct CMatricesOf<LinearConfig<kI, kO, kOptions...>> {
  using type = microattn_linear_matrices;
};
template <std::size_t kD, std::size_t kH, Activation kA, auto... kOptions>
struct CMatricesOf<MlpConfig<kD, kH, kA, kOptions...>> {
  using type = microattn_mlp_matrices;
};
template <class Cfg>
using CMatrices = typename CMatricesOf<Cfg>::type;

/// A C matrix as the C++ record of format Fmt; *format_ok becomes false when the matrix is
/// `used` by the layer and its format is not Fmt (an unused one may be left all zero).
template <class Fmt>
Matrix<Fmt> matrix_from_c(const microattn_matrix& m, bool used, bool* format_ok) noexcept {
  if (used && m.format != FormatTraits<Fmt>::kDesc.code()) *format_ok = false;
  return {static_cast<const typename Fmt::Elem*>(m.data),
          FormatTraits<Fmt>::kScaled ? m.scales : nullptr};
}
/// A C matrix of the old structs' element type E and scales (null: an fp32 matrix).
inline microattn_matrix matrix_to_c(const float* w) noexcept {
  return {w, nullptr, MICROATTN_FORMAT_F32};
}
inline microattn_matrix matrix_to_c(const std::int8_t* w, const float* s) noexcept {
  return {w, s, MICROATTN_FORMAT_QC8};
}

/// The C matrices of an attention layer as the C++ view.
template <class Cfg>
Weights<Cfg> view_from_c(const microattn_layer_matrices& w, bool* ok) noexcept {
  using F = typename Cfg::WeightFormat;
  Weights<Cfg> c(layout_from_c(w.layout));
  const Matrix<F> q = matrix_from_c<F>(w.q, true, ok), k = matrix_from_c<F>(w.k, true, ok),
                  v = matrix_from_c<F>(w.v, true, ok),
                  o = matrix_from_c<F>(w.o, Cfg::kHasOutProj, ok);
  c.w_q = q.data, c.s_q = q.scales, c.w_k = k.data, c.s_k = k.scales;
  c.w_v = v.data, c.s_v = v.scales, c.w_o = o.data, c.s_o = o.scales;
  c.b_q = w.b_q, c.b_k = w.b_k, c.b_v = w.b_v, c.b_o = w.b_o;
  return c;
}

/// The C matrices of a latent layer as the C++ view (w_q, or w_dq and w_uq with a query
/// latent, are the ones used).
template <class LCfg>
LatentWeights<LCfg> view_from_c(const microattn_latent_matrices& w, bool* ok) noexcept {
  using F = typename LCfg::WeightFormat;
  constexpr bool kQl = LCfg::kHasQueryLatent;
  LatentWeights<LCfg> c;
  c.layout = layout_from_c(w.layout);
  const Matrix<F> q = matrix_from_c<F>(w.q, !kQl, ok), dq = matrix_from_c<F>(w.dq, kQl, ok),
                  uq = matrix_from_c<F>(w.uq, kQl, ok), dkv = matrix_from_c<F>(w.dkv, true, ok),
                  ukv = matrix_from_c<F>(w.ukv, true, ok), o = matrix_from_c<F>(w.o, true, ok);
  c.w_q = q.data, c.s_q = q.scales, c.w_dq = dq.data, c.s_dq = dq.scales, c.g_q = w.g_q;
  c.w_uq = uq.data, c.s_uq = uq.scales, c.w_dkv = dkv.data, c.s_dkv = dkv.scales, c.g_kv = w.g_kv;
  c.w_ukv = ukv.data, c.s_ukv = ukv.scales, c.w_o = o.data, c.s_o = o.scales;
  return c;
}

/// The C matrix of a linear layer as the C++ view.
template <class LCfg>
LinearWeights<LCfg> view_from_c(const microattn_linear_matrices& w, bool* ok) noexcept {
  const auto m = matrix_from_c<typename LCfg::WeightFormat>(w.w, true, ok);
  LinearWeights<LCfg> c;
  c.layout = layout_from_c(w.layout);
  c.w = m.data, c.s = m.scales, c.b = w.b;
  return c;
}

/// The C matrices of an MLP as the C++ view (w_gate used by the gated activations only).
template <class MCfg>
MlpWeights<MCfg> view_from_c(const microattn_mlp_matrices& w, bool* ok) noexcept {
  using F = typename MCfg::WeightFormat;
  const Matrix<F> g = matrix_from_c<F>(w.gate, MCfg::kGated, ok),
                  u = matrix_from_c<F>(w.up, true, ok), d = matrix_from_c<F>(w.down, true, ok);
  MlpWeights<MCfg> c;
  c.layout = layout_from_c(w.layout);
  c.w_gate = g.data, c.s_gate = g.scales, c.w_up = u.data, c.s_up = u.scales;
  c.w_down = d.data, c.s_down = d.scales;
  c.b_gate = w.b_gate, c.b_up = w.b_up, c.b_down = w.b_down;
  return c;
}

/// The old per-format structs (NAME_set_weights, kept for this release) as the matrices structs:
/// NAME_set_weights is NAME_set_matrices on them.
inline microattn_layer_matrices matrices_from_c(const microattn_weights& w) noexcept {
  return {w.layout,
          matrix_to_c(w.w_q),
          matrix_to_c(w.w_k),
          matrix_to_c(w.w_v),
          matrix_to_c(w.w_o),
          w.b_q,
          w.b_k,
          w.b_v,
          w.b_o};
}
inline microattn_layer_matrices matrices_from_c(const microattn_weights_q8& w) noexcept {
  return {w.layout,
          matrix_to_c(w.w_q, w.s_q),
          matrix_to_c(w.w_k, w.s_k),
          matrix_to_c(w.w_v, w.s_v),
          matrix_to_c(w.w_o, w.s_o),
          w.b_q,
          w.b_k,
          w.b_v,
          w.b_o};
}
inline microattn_latent_matrices matrices_from_c(const microattn_latent_weights& w) noexcept {
  return {w.layout, matrix_to_c(w.w_q),   matrix_to_c(w.w_dq),
          w.g_q,    matrix_to_c(w.w_uq),  matrix_to_c(w.w_dkv),
          w.g_kv,   matrix_to_c(w.w_ukv), matrix_to_c(w.w_o)};
}
inline microattn_latent_matrices matrices_from_c(const microattn_latent_weights_q8& w) noexcept {
  return {w.layout, matrix_to_c(w.w_q, w.s_q),     matrix_to_c(w.w_dq, w.s_dq),
          w.g_q,    matrix_to_c(w.w_uq, w.s_uq),   matrix_to_c(w.w_dkv, w.s_dkv),
          w.g_kv,   matrix_to_c(w.w_ukv, w.s_ukv), matrix_to_c(w.w_o, w.s_o)};
}
inline microattn_linear_matrices matrices_from_c(const microattn_linear_weights& w) noexcept {
  return {w.layout, matrix_to_c(w.w), w.b};
}
inline microattn_linear_matrices matrices_from_c(const microattn_linear_weights_q8& w) noexcept {
  return {w.layout, matrix_to_c(w.w, w.s), w.b};
}
inline microattn_mlp_matrices matrices_from_c(const microattn_mlp_weights& w) noexcept {
  return {
      w.layout, matrix_to_c(w.w_gate), matrix_to_c(w.w_up), matrix_to_c(w.w_down), w.b_gate, w.b_up,
      w.b_down};
}
inline microattn_mlp_matrices matrices_from_c(const microattn_mlp_weights_q8& w) noexcept {
  return {w.layout,
          matrix_to_c(w.w_gate, w.s_gate),
          matrix_to_c(w.w_up, w.s_up),
          matrix_to_c(w.w_down, w.s_down),
          w.b_gate,
          w.b_up,
          w.b_down};
}

/// A C RoPE setting as the C++ one (an unknown pairing becomes one set_rope() refuses).
inline RopeConfig rope_from_c(const microattn_rope& r) noexcept {
  RopeConfig c;
  c.enabled = r.enabled != 0;
  c.base = r.base;
  c.pairing = r.pairing == MICROATTN_ROPE_ADJACENT     ? RopePairing::kAdjacent
              : r.pairing == MICROATTN_ROPE_HALF_SPLIT ? RopePairing::kHalfSplit
                                                       : static_cast<RopePairing>(0xff);
  c.rotary_dims = r.rotary_dims;
  c.start_position = r.start_position;
  return c;
}

inline microattn_rope rope_to_c(const RopeConfig& c) noexcept {
  microattn_rope r = MICROATTN_ROPE_DEFAULTS;
  r.enabled = c.enabled ? 1 : 0;
  r.base = c.base;
  r.pairing =
      c.pairing == RopePairing::kAdjacent ? MICROATTN_ROPE_ADJACENT : MICROATTN_ROPE_HALF_SPLIT;
  r.rotary_dims = c.rotary_dims;
  r.start_position = c.start_position;
  return r;
}

inline CacheSlice slice_from_c(const microattn_cache_slice& s) noexcept {
  CacheSlice c;
  c.first = s.first;
  c.tokens = s.tokens;
  c.kv_heads = s.kv_heads;
  c.d_head = s.d_head;
  c.rope = rope_from_c(s.rope);
  return c;
}

inline microattn_cache_slice slice_to_c(const CacheSlice& c) noexcept {
  microattn_cache_slice s;
  s.first = c.first;
  s.tokens = c.tokens;
  s.kv_heads = c.kv_heads;
  s.d_head = c.d_head;
  s.rope = rope_to_c(c.rope);
  return s;
}

// The operations behind the macros' functions: one template each.

template <class Storage>
void init(Storage* storage) noexcept {
  if (storage != nullptr) std::memset(static_cast<void*>(storage), 0, sizeof(Storage));
}

template <class Object, class Storage>
microattn_status set_scale(Storage* storage, float scale) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  return to_c(s != Status::kOk ? s : o->set_scale(scale));
}

template <class Object, class Storage>
microattn_status set_executor(Storage* storage, const microattn_executor* ex) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  if (s != Status::kOk) return to_c(s);
  if (ex == nullptr) return MICROATTN_NULL_POINTER;
  Executor e;
  e.run = ex->run;
  e.self = ex->self;
  e.workers = ex->workers;
  return to_c(o->set_executor(e));
}

template <class Object, class Storage>
float scale(const Storage* storage) noexcept {
  const Object* o = nullptr;
  return object_of(storage, &o) == Status::kOk ? o->scale() : 0.0f;
}

/// NAME_set_matrices: the statuses of set_weights (a missing matrix, scale array or bias is
/// kNullPointer first), then kBadArgument for a used matrix whose format is not the Config's.
template <class Object, class Cfg, class Storage>
microattn_status set_matrices(Storage* storage, const CMatrices<Cfg>* w) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  if (s != Status::kOk) return to_c(s);
  if (w == nullptr) return MICROATTN_NULL_POINTER;
  bool format_ok = true;
  const auto view = view_from_c<Cfg>(*w, &format_ok);
  if (const Status c = view.check(); c == Status::kNullPointer) return to_c(c);
  if (!format_ok) return MICROATTN_BAD_ARGUMENT;
  return to_c(o->set_weights(view));
}

/// NAME_set_weights (the per-format structs, kept for this release): NAME_set_matrices.
template <class Object, class Cfg, class Storage>
microattn_status set_weights(Storage* storage, const CWeights<Cfg>* w) noexcept {
  if (w == nullptr) {
    Object* o = nullptr;
    const Status s = object_of(storage, &o);
    return to_c(s != Status::kOk ? s : Status::kNullPointer);
  }
  const CMatrices<Cfg> m = matrices_from_c(*w);
  return set_matrices<Object, Cfg>(storage, &m);
}

template <class Object, class Storage>
microattn_status forward(Storage* storage, const float* x, std::size_t T, float* y) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  return to_c(s != Status::kOk ? s : o->forward(x, T, y));
}

template <class Object, class Storage>
microattn_status core_forward(Storage* storage, const float* q, std::size_t ldq, const float* k,
                              std::size_t ldk, const float* v, std::size_t ldv, std::size_t T,
                              float* out, std::size_t ldo) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  return to_c(s != Status::kOk ? s : o->forward(q, ldq, k, ldk, v, ldv, T, out, ldo));
}

template <class Object, class Storage>
microattn_status prefill(Storage* storage, const float* x, std::size_t T, float* y) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  return to_c(s != Status::kOk ? s : o->prefill(x, T, y));
}

template <class Object, class Storage>
microattn_status decode(Storage* storage, const float* x, float* y) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  return to_c(s != Status::kOk ? s : o->decode(x, y));
}

template <class Object, class Storage>
microattn_status truncate(Storage* storage, std::size_t length) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  return to_c(s != Status::kOk ? s : o->truncate(length));
}

template <class Object, class Storage>
microattn_status reset(Storage* storage) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  if (s == Status::kOk) o->reset();
  return to_c(s);
}

template <class Object, class Storage>
std::size_t length(const Storage* storage) noexcept {
  const Object* o = nullptr;
  return object_of(storage, &o) == Status::kOk ? o->length() : 0;
}

template <class Object, class Storage>
microattn_status set_rope(Storage* storage, const microattn_rope* rope) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  if (s != Status::kOk) return to_c(s);
  if (rope == nullptr) return MICROATTN_NULL_POINTER;
  return to_c(o->set_rope(rope_from_c(*rope)));
}

template <class Object, class Storage>
microattn_rope rope(const Storage* storage) noexcept {
  const Object* o = nullptr;
  return rope_to_c(object_of(storage, &o) == Status::kOk ? o->rope() : RopeConfig{});
}

template <class Object, class Storage>
std::size_t oldest(const Storage* storage) noexcept {
  const Object* o = nullptr;
  return object_of(storage, &o) == Status::kOk ? o->oldest() : 0;
}

template <class Object, class Storage>
microattn_status export_cache(const Storage* storage, std::size_t first, std::size_t n, float* k,
                              float* v, microattn_cache_slice* info) noexcept {
  const Object* o = nullptr;
  const Status s = object_of(storage, &o);
  if (s != Status::kOk) return to_c(s);
  if (info == nullptr) return MICROATTN_NULL_POINTER;
  CacheSlice c;
  const Status e = o->export_cache(first, n, k, v, &c);
  if (e == Status::kOk) *info = slice_to_c(c);
  return to_c(e);
}

template <class Object, class Storage>
microattn_status import_cache(Storage* storage, const microattn_cache_slice* info, const float* k,
                              const float* v) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  if (s != Status::kOk) return to_c(s);
  if (info == nullptr) return MICROATTN_NULL_POINTER;
  return to_c(o->import_cache(slice_from_c(*info), k, v));
}

// The latent layer's own operations (LatentAttention: weights of its own structs, the RMSNorm
// epsilon, a cache of latent rows).

template <class Object, class Storage>
microattn_status set_rms_eps(Storage* storage, float eps) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  return to_c(s != Status::kOk ? s : o->set_rms_eps(eps));
}

template <class Object, class Storage>
float rms_eps(const Storage* storage) noexcept {
  const Object* o = nullptr;
  return object_of(storage, &o) == Status::kOk ? o->rms_eps() : 0.0f;
}

template <class Object, class Storage>
microattn_status latent_export_cache(const Storage* storage, std::size_t first, std::size_t n,
                                     float* rows, microattn_cache_slice* info) noexcept {
  const Object* o = nullptr;
  const Status s = object_of(storage, &o);
  if (s != Status::kOk) return to_c(s);
  if (info == nullptr) return MICROATTN_NULL_POINTER;
  CacheSlice c;
  const Status e = o->export_cache(first, n, rows, &c);
  if (e == Status::kOk) *info = slice_to_c(c);
  return to_c(e);
}

template <class Object, class Storage>
microattn_status latent_import_cache(Storage* storage, const microattn_cache_slice* info,
                                     const float* rows) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  if (s != Status::kOk) return to_c(s);
  if (info == nullptr) return MICROATTN_NULL_POINTER;
  return to_c(o->import_cache(slice_from_c(*info), rows));
}

// A decoder model's own operations (Decoder: weights from a model file, tokens in, logits out).

template <class Object, class Storage>
microattn_status set_weights_blob(Storage* storage, const void* blob, std::size_t bytes) noexcept {
  using DCfg = typename Object::Config;
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  if (s != Status::kOk) return to_c(s);
  DecoderWeights<DCfg> w;
  const Status b = decoder_weights_from_blob<DCfg>(blob, bytes, &w);
  return to_c(b != Status::kOk ? b : o->set_weights(w));
}

/// Whether a model file fits Object's configuration, and why not (no object needed).
template <class Object>
microattn_status check_blob(const void* blob, std::size_t bytes,
                            microattn_model_check* why) noexcept {
  using DCfg = typename Object::Config;
  DecoderWeights<DCfg> w;
  ModelCheck c;
  const Status s = decoder_weights_from_blob<DCfg>(blob, bytes, &w, &c);
  if (why != nullptr)
    *why = microattn_model_check{to_c(c.status), static_cast<std::uint32_t>(c.problem), c.key,
                                 c.expected, c.found};
  return to_c(s);
}

template <class Object, class Storage>
microattn_status decoder_prefill(Storage* storage, const std::int32_t* tokens, std::size_t T,
                                 float* logits, bool all) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  if (s != Status::kOk) return to_c(s);
  return to_c(all ? o->prefill_all(tokens, T, logits) : o->prefill(tokens, T, logits));
}

template <class Object, class Storage>
microattn_status decoder_decode(Storage* storage, std::int32_t token, float* logits) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  return to_c(s != Status::kOk ? s : o->decode(token, logits));
}

// A norm's own operations (RmsNorm, LayerNorm: a weight, an epsilon; forward is forward()).

template <class Object, class Storage>
microattn_status norm_set_weight(Storage* storage, const float* g) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  return to_c(s != Status::kOk ? s : o->set_weight(g));
}

template <class Object, class Storage>
microattn_status norm_set_weights(Storage* storage, const float* g, const float* b) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  return to_c(s != Status::kOk ? s : o->set_weights(g, b));
}

template <class Object, class Storage>
microattn_status set_eps(Storage* storage, float eps) noexcept {
  Object* o = nullptr;
  const Status s = object_of(storage, &o);
  return to_c(s != Status::kOk ? s : o->set_eps(eps));
}

template <class Object, class Storage>
float eps(const Storage* storage) noexcept {
  const Object* o = nullptr;
  return object_of(storage, &o) == Status::kOk ? o->eps() : 0.0f;
}

}  // namespace c_api
}  // namespace microattn

// ------------------------------------------------------------------------------ the macros
// The configuration comes last and may contain commas (Config<64, 64, 4, 2, 16, ...>). Each
// line ends with a semicolon: MICROATTN_C_LAYER(mylayer, Cfg);

/// MultiHeadAttention<Config>: NAME_init, NAME_set_weights, NAME_set_scale, NAME_scale,
/// NAME_set_rope, NAME_rope, NAME_forward.
#define MICROATTN_C_LAYER(name, ...)                                                          \
  MICROATTN_C_OBJECT_(name, kLayer, 0, __VA_ARGS__)                                           \
  MICROATTN_C_WEIGHTS_ROPE_(name)                                                             \
  extern "C" microattn_status name##_forward(name* obj, const float* x, size_t T, float* y) { \
    return ::microattn::c_api::forward<microattn_c_##name::Object>(obj, x, T, y);             \
  }                                                                                           \
  static_assert(true, "")

/// KvAttention<Config> (prefill chunk T_max): NAME_init, NAME_set_weights, NAME_set_scale,
/// NAME_scale, NAME_set_rope, NAME_rope, NAME_prefill, NAME_decode, NAME_truncate, NAME_reset,
/// NAME_length, NAME_oldest, NAME_export_cache, NAME_import_cache.
#define MICROATTN_C_KV_LAYER(name, ...) MICROATTN_C_KV_LAYER_CHUNKED(name, Cfg::kTMax, __VA_ARGS__)

/// KvAttention<Config> whose prefill runs `chunk` tokens at a time (1 .. T_max; less RAM for
/// a smaller chunk, same results). `chunk` may name the configuration as Cfg (Cfg::kTMax / 4).
#define MICROATTN_C_KV_LAYER_CHUNKED(name, chunk, ...)                                            \
  MICROATTN_C_OBJECT_(name, kKv, chunk, __VA_ARGS__)                                              \
  MICROATTN_C_WEIGHTS_ROPE_(name)                                                                 \
  MICROATTN_C_CACHE_STEPS_(name)                                                                  \
  extern "C" size_t name##_oldest(const name* obj) {                                              \
    return ::microattn::c_api::oldest<microattn_c_##name::Object>(obj);                           \
  }                                                                                               \
  extern "C" microattn_status name##_export_cache(                                                \
      const name* obj, size_t first, size_t n, float* k, float* v, microattn_cache_slice* info) { \
    return ::microattn::c_api::export_cache<microattn_c_##name::Object>(obj, first, n, k, v,      \
                                                                        info);                    \
  }                                                                                               \
  extern "C" microattn_status name##_import_cache(name* obj, const microattn_cache_slice* info,   \
                                                  const float* k, const float* v) {               \
    return ::microattn::c_api::import_cache<microattn_c_##name::Object>(obj, info, k, v);         \
  }                                                                                               \
  static_assert(true, "")

/// ScaledDotProductAttention<Config>: NAME_init, NAME_set_scale, NAME_scale, NAME_forward
/// (q, ldq, k, ldk, v, ldv, T, out, ldo).
#define MICROATTN_C_CORE(name, ...)                                                             \
  MICROATTN_C_OBJECT_(name, kCore, 0, __VA_ARGS__)                                              \
  extern "C" microattn_status name##_forward(name* obj, const float* q, size_t ldq,             \
                                             const float* k, size_t ldk, const float* v,        \
                                             size_t ldv, size_t T, float* out, size_t ldo) {    \
    return ::microattn::c_api::core_forward<microattn_c_##name::Object>(obj, q, ldq, k, ldk, v, \
                                                                        ldv, T, out, ldo);      \
  }                                                                                             \
  static_assert(true, "")

/// LatentAttention<LatentConfig> (multi-head latent attention, prefill chunk T_max): NAME_init,
/// NAME_set_weights (microattn_latent_weights or _q8), NAME_set_scale, NAME_scale,
/// NAME_set_executor, NAME_set_rope, NAME_rope, NAME_set_rms_eps, NAME_rms_eps, NAME_prefill,
/// NAME_decode, NAME_truncate, NAME_reset, NAME_length, NAME_export_cache, NAME_import_cache.
#define MICROATTN_C_LATENT(name, ...) MICROATTN_C_LATENT_CHUNKED(name, Cfg::kTMax, __VA_ARGS__)

/// LatentAttention<LatentConfig> whose prefill runs `chunk` tokens at a time (1 .. T_max).
#define MICROATTN_C_LATENT_CHUNKED(name, chunk, ...)                                             \
  MICROATTN_C_OBJECT_(name, kLatent, chunk, __VA_ARGS__)                                         \
  MICROATTN_C_LATENT_SETTINGS_(name)                                                             \
  MICROATTN_C_CACHE_STEPS_(name)                                                                 \
  extern "C" microattn_status name##_export_cache(const name* obj, size_t first, size_t n,       \
                                                  float* rows, microattn_cache_slice* info) {    \
    return ::microattn::c_api::latent_export_cache<microattn_c_##name::Object>(obj, first, n,    \
                                                                               rows, info);      \
  }                                                                                              \
  extern "C" microattn_status name##_import_cache(name* obj, const microattn_cache_slice* info,  \
                                                  const float* rows) {                           \
    return ::microattn::c_api::latent_import_cache<microattn_c_##name::Object>(obj, info, rows); \
  }                                                                                              \
  static_assert(true, "")

/// Decoder<DecoderConfig> (a whole decoder model, prefill chunk min(16, T_max)): NAME_init,
/// NAME_set_weights_blob, NAME_check_blob, NAME_set_scale, NAME_scale, NAME_set_executor,
/// NAME_prefill, NAME_prefill_all, NAME_decode, NAME_truncate, NAME_reset, NAME_length.
#define MICROATTN_C_DECODER(name, ...) \
  MICROATTN_C_DECODER_CHUNKED(name, (Cfg::kTMax < 16 ? Cfg::kTMax : 16), __VA_ARGS__)

/// Decoder<DecoderConfig> whose prefill runs `chunk` tokens at a time (1 .. T_max).
#define MICROATTN_C_DECODER_CHUNKED(name, chunk, ...)                                              \
  MICROATTN_C_OBJECT_(name, kDecoder, chunk, __VA_ARGS__)                                          \
  extern "C" microattn_status name##_set_weights_blob(name* obj, const void* blob, size_t bytes) { \
    return ::microattn::c_api::set_weights_blob<microattn_c_##name::Object>(obj, blob, bytes);     \
  }                                                                                                \
  extern "C" microattn_status name##_check_blob(const void* blob, size_t bytes,                    \
                                                microattn_model_check* why) {                      \
    return ::microattn::c_api::check_blob<microattn_c_##name::Object>(blob, bytes, why);           \
  }                                                                                                \
  extern "C" microattn_status name##_prefill(name* obj, const int32_t* tokens, size_t T,           \
                                             float* logits) {                                      \
    return ::microattn::c_api::decoder_prefill<microattn_c_##name::Object>(obj, tokens, T, logits, \
                                                                           false);                 \
  }                                                                                                \
  extern "C" microattn_status name##_prefill_all(name* obj, const int32_t* tokens, size_t T,       \
                                                 float* logits) {                                  \
    return ::microattn::c_api::decoder_prefill<microattn_c_##name::Object>(obj, tokens, T, logits, \
                                                                           true);                  \
  }                                                                                                \
  extern "C" microattn_status name##_decode(name* obj, int32_t token, float* logits) {             \
    return ::microattn::c_api::decoder_decode<microattn_c_##name::Object>(obj, token, logits);     \
  }                                                                                                \
  MICROATTN_C_CACHE_LENGTH_(name)                                                                  \
  static_assert(true, "")

/// Linear<LinearConfig> (y = x W + b): NAME_init, NAME_set_weights
/// (microattn_linear_weights or _q8), NAME_set_executor, NAME_forward (x, M, y).
#define MICROATTN_C_LINEAR(name, ...)               \
  MICROATTN_C_BLOCK_(name, kLinear, 0, __VA_ARGS__) \
  static_assert(true, "")

/// Mlp<MlpConfig> (16 rows per pass): NAME_init, NAME_set_weights (microattn_mlp_weights or
/// _q8), NAME_set_executor, NAME_forward (x, M, y).
#define MICROATTN_C_MLP(name, ...) MICROATTN_C_MLP_CHUNKED(name, 16, __VA_ARGS__)

/// Mlp<MlpConfig> that runs `rows` rows at a time (>= 1; its hidden buffers hold `rows` rows:
/// less RAM for fewer, same results).
#define MICROATTN_C_MLP_CHUNKED(name, rows, ...)    \
  MICROATTN_C_BLOCK_(name, kMlp, rows, __VA_ARGS__) \
  static_assert(true, "")

/// RmsNorm<d>: NAME_init, NAME_set_weight, NAME_set_eps, NAME_eps, NAME_forward (x, M, y).
#define MICROATTN_C_RMSNORM(name, ...)                                              \
  MICROATTN_C_BASE_(name, kRmsNorm, 0, ::microattn::RmsNorm<__VA_ARGS__>)           \
  MICROATTN_C_NORM_(name)                                                           \
  extern "C" microattn_status name##_set_weight(name* obj, const float* g) {        \
    return ::microattn::c_api::norm_set_weight<microattn_c_##name::Object>(obj, g); \
  }                                                                                 \
  static_assert(true, "")

/// LayerNorm<d, Bias> (d, or d and microattn::Bias::kNo): NAME_init, NAME_set_weights (g, b),
/// NAME_set_eps, NAME_eps, NAME_forward (x, M, y).
#define MICROATTN_C_LAYERNORM(name, ...)                                                      \
  MICROATTN_C_BASE_(name, kLayerNorm, 0, ::microattn::LayerNorm<__VA_ARGS__>)                 \
  MICROATTN_C_NORM_(name)                                                                     \
  extern "C" microattn_status name##_set_weights(name* obj, const float* g, const float* b) { \
    return ::microattn::c_api::norm_set_weights<microattn_c_##name::Object>(obj, g, b);       \
  }                                                                                           \
  static_assert(true, "")

// Internal: the configuration and object type (microattn_c_NAME::Cfg and ::Object, usable from
// the project's C++ code), the storage check, and the functions every attention kind has (the
// softmax scale, the executor).
#define MICROATTN_C_OBJECT_(name, kind, chunk, ...)                                          \
  MICROATTN_C_BASE_(name, kind, chunk, __VA_ARGS__)                                          \
  extern "C" microattn_status name##_set_scale(name* obj, float scale) {                     \
    return ::microattn::c_api::set_scale<microattn_c_##name::Object>(obj, scale);            \
  }                                                                                          \
  extern "C" float name##_scale(const name* obj) {                                           \
    return ::microattn::c_api::scale<microattn_c_##name::Object>(obj);                       \
  }                                                                                          \
  extern "C" microattn_status name##_set_executor(name* obj, const microattn_executor* ex) { \
    return ::microattn::c_api::set_executor<microattn_c_##name::Object>(obj, ex);            \
  }

// Internal: a building block with weights (Linear, Mlp): no softmax scale; set_weights of its own
// C struct (checked against the header's prototype), the executor, forward on M rows.
#define MICROATTN_C_BLOCK_(name, kind, chunk, ...)                                            \
  MICROATTN_C_BASE_(name, kind, chunk, __VA_ARGS__)                                           \
  MICROATTN_C_SET_WEIGHTS_(name)                                                              \
  extern "C" microattn_status name##_set_executor(name* obj, const microattn_executor* ex) {  \
    return ::microattn::c_api::set_executor<microattn_c_##name::Object>(obj, ex);             \
  }                                                                                           \
  extern "C" microattn_status name##_forward(name* obj, const float* x, size_t M, float* y) { \
    return ::microattn::c_api::forward<microattn_c_##name::Object>(obj, x, M, y);             \
  }

// Internal: a norm's epsilon and forward (y may be x).
#define MICROATTN_C_NORM_(name)                                                               \
  extern "C" microattn_status name##_set_eps(name* obj, float eps) {                          \
    return ::microattn::c_api::set_eps<microattn_c_##name::Object>(obj, eps);                 \
  }                                                                                           \
  extern "C" float name##_eps(const name* obj) {                                              \
    return ::microattn::c_api::eps<microattn_c_##name::Object>(obj);                          \
  }                                                                                           \
  extern "C" microattn_status name##_forward(name* obj, const float* x, size_t M, float* y) { \
    return ::microattn::c_api::forward<microattn_c_##name::Object>(obj, x, M, y);             \
  }

// Internal: the configuration and object type, the fingerprint and storage checks, NAME_init:
// what every kind has.
#define MICROATTN_C_BASE_(name, kind, chunk, ...)                                               \
  static_assert(::microattn::c_api::kGlueCompiles,                                              \
                "microattn C glue, layer '" #name                                               \
                "': compile this file with -fno-exceptions -fno-rtti (a C link has no "         \
                "__gxx_personality_v0); or define MICROATTN_C_ALLOW_EXCEPTIONS and link with "  \
                "the C++ compiler");                                                            \
  namespace microattn_c_##name {                                                                \
    using Cfg = __VA_ARGS__;                                                                    \
    using Object =                                                                              \
        ::microattn::c_api::ObjectOf<::microattn::c_api::Kind::kind, Cfg, (chunk)>::type;       \
    constexpr std::uint32_t kConfigId =                                                         \
        ::microattn::c_api::config_id<::microattn::c_api::Kind::kind, Cfg, (chunk)>();          \
    struct Layer;                                                                               \
  }                                                                                             \
  static_assert(                                                                                \
      ::microattn::c_api::ConfigCheck<microattn_c_##name::Layer, microattn_c_##name::kConfigId, \
                                      (MICROATTN_C_CONFIG_ID_##name)>::kFits,                   \
      "microattn C API, layer '" #name                                                          \
      "': its C header was made for another configuration (NAME_CONFIG_ID: "                    \
      "mask, window, bias, shape, options, kind or chunk differ; regenerate the "               \
      "header with tools/microattn_c.py for this line's Config)");                              \
  static_assert(::microattn::c_api::StorageCheck<                                               \
                    microattn_c_##name::Layer, sizeof(microattn_c_##name::Object),              \
                    alignof(microattn_c_##name::Object), sizeof(name), alignof(name)>::kFits,   \
                "microattn C API, layer '" #name                                                \
                "': the storage struct of its C header "                                        \
                "does not match this target's object (regenerate the header with "              \
                "tools/microattn_c.py and this compiler and flags)");                           \
  extern "C" void name##_init(name* obj) { ::microattn::c_api::init(obj); }

// Internal: NAME_set_weights with the C weight struct of the configuration (CWeights), checked
// against the header's prototype.
#define MICROATTN_C_SET_WEIGHTS_(name)                                                             \
  static_assert(                                                                                   \
      ::microattn::c_api::SetWeightsCheck<microattn_c_##name::Layer, decltype(name##_set_weights), \
                                          ::microattn::c_api::CWeights<microattn_c_##name::Cfg>,   \
                                          name>::kFits,                                            \
      "microattn C API, layer '" #name                                                             \
      "': its C header declares set_weights for another weight type (fp32: microattn_weights, "    \
      "microattn_latent_weights, microattn_linear_weights, microattn_mlp_weights; "                \
      "WeightType::kInt8: their _q8 structs) than this Config's (regenerate the header with "      \
      "tools/microattn_c.py)");                                                                    \
  extern "C" microattn_status name##_set_weights(                                                  \
      name* obj, const ::microattn::c_api::CWeights<microattn_c_##name::Cfg>* w) {                 \
    return ::microattn::c_api::set_weights<microattn_c_##name::Object, microattn_c_##name::Cfg>(   \
        obj, w);                                                                                   \
  }                                                                                                \
  extern "C" microattn_status name##_set_matrices(                                                 \
      name* obj, const ::microattn::c_api::CMatrices<microattn_c_##name::Cfg>* w) {                \
    return ::microattn::c_api::set_matrices<microattn_c_##name::Object, microattn_c_##name::Cfg>(  \
        obj, w);                                                                                   \
  }

#define MICROATTN_C_WEIGHTS_ROPE_(name)                                                \
  MICROATTN_C_SET_WEIGHTS_(name)                                                       \
  extern "C" microattn_status name##_set_rope(name* obj, const microattn_rope* rope) { \
    return ::microattn::c_api::set_rope<microattn_c_##name::Object>(obj, rope);        \
  }                                                                                    \
  extern "C" microattn_rope name##_rope(const name* obj) {                             \
    return ::microattn::c_api::rope<microattn_c_##name::Object>(obj);                  \
  }

// Internal: a latent layer's weights (its own C structs, CWeights of a LatentConfig), RoPE and
// RMSNorm epsilon.
#define MICROATTN_C_LATENT_SETTINGS_(name)                                        \
  MICROATTN_C_WEIGHTS_ROPE_(name)                                                 \
  extern "C" microattn_status name##_set_rms_eps(name* obj, float eps) {          \
    return ::microattn::c_api::set_rms_eps<microattn_c_##name::Object>(obj, eps); \
  }                                                                               \
  extern "C" float name##_rms_eps(const name* obj) {                              \
    return ::microattn::c_api::rms_eps<microattn_c_##name::Object>(obj);          \
  }

// Internal: prefill, decode, truncate, reset, length (a KV or latent layer's cache).
#define MICROATTN_C_CACHE_STEPS_(name)                                                        \
  extern "C" microattn_status name##_prefill(name* obj, const float* x, size_t T, float* y) { \
    return ::microattn::c_api::prefill<microattn_c_##name::Object>(obj, x, T, y);             \
  }                                                                                           \
  extern "C" microattn_status name##_decode(name* obj, const float* x, float* y) {            \
    return ::microattn::c_api::decode<microattn_c_##name::Object>(obj, x, y);                 \
  }                                                                                           \
  MICROATTN_C_CACHE_LENGTH_(name)

// Internal: truncate, reset, length (every kind with a cache: kv, latent, decoder).
#define MICROATTN_C_CACHE_LENGTH_(name)                                           \
  extern "C" microattn_status name##_truncate(name* obj, size_t length) {         \
    return ::microattn::c_api::truncate<microattn_c_##name::Object>(obj, length); \
  }                                                                               \
  extern "C" microattn_status name##_reset(name* obj) {                           \
    return ::microattn::c_api::reset<microattn_c_##name::Object>(obj);            \
  }                                                                               \
  extern "C" size_t name##_length(const name* obj) {                              \
    return ::microattn::c_api::length<microattn_c_##name::Object>(obj);           \
  }
