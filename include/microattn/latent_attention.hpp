// SPDX-License-Identifier: Apache-2.0
// microattn: multi-head latent attention (DeepSeek-V2's MLA, section 2.1 of its paper) with a
// KV cache that holds one latent row per token: the compressed c_KV and the shared rotated key
// k_R, d_c + d_R floats, instead of every head's keys and values.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/arch.hpp"
#include "microattn/attention.hpp"
#include "microattn/config.hpp"
#include "microattn/driver/layer_driver.hpp"
#include "microattn/executor.hpp"
#include "microattn/kernels/f32_attn_latent.hpp"
#include "microattn/kernels/f32_attn_tile.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/f32_gemv.hpp"
#include "microattn/kernels/f32_norm.hpp"
#include "microattn/kv_cache.hpp"
#include "microattn/status.hpp"

namespace microattn {

/// The query path through a latent of width d_cq (DeepSeek-V2's q_lora_rank): c_Q =
/// RMSNorm(x · W_DQ), q = c_Q · W_UQ. Without it (DeepSeek-V2-Lite) q = x · W_Q.
enum class QueryLatent : std::size_t {};

/// How LatentAttention::prefill attends (decode is always absorbed); docs/latent-attention.md.
enum class LatentPrefill : unsigned char {
  /// The form with fewer flops for the call: absorbed when
  /// (2 d_c - d_nope - d_v) * (query-key pairs) < d_c (d_nope + d_v) * (cached tokens before it),
  /// i.e. short calls after a long cached prefix.
  kAuto = 0,
  /// Every token as decode does it: nothing expanded, no staging.
  kAbsorbed = 1,
  /// Every head's keys and values of every cached token expanded, then the tile kernel.
  kUnabsorbed = 2,
};

namespace internal {
template <class T>
constexpr bool is_latent_option() noexcept {
  return std::is_same<T, QueryLatent>::value || std::is_same<T, MaxWorkers>::value ||
         std::is_same<T, WeightType>::value || std::is_same<T, CacheType>::value ||
         std::is_same<T, LatentPrefill>::value;
}
}  // namespace internal

/// Every dimension of a multi-head latent attention layer, fixed at compile time.
///
/// @tparam kTMax_     most tokens the cache holds (and one prefill call takes)
/// @tparam kDModel_   model width d_model (x's and y's rows)
/// @tparam kHeads_    query heads H
/// @tparam kDLatent_  d_c: width of the key/value latent c_KV (kv_lora_rank)
/// @tparam kDRope_    d_R: width of the rotated key k_R shared by all heads and of each head's
///                    rotated query part (qk_rope_head_dim); even
/// @tparam kDNope_    d_nope: each head's unrotated query/key width (qk_nope_head_dim)
/// @tparam kDV_       d_v: each head's value width (v_head_dim)
/// @tparam kOptions   QueryLatent{d_cq} (none: q = x W_Q), MaxWorkers{n} (1),
///                    WeightType::kInt8 (int8 matrices, a scale per output column; the
///                    absorbed products stay per-head steps at run time, see LatentWeights),
///                    CacheType::kInt8 (int8 latent rows, a scale for c_KV and one for k_R
///                    per token), LatentPrefill::kAbsorbed (prefill always absorbed: the layer
///                    holds none of the unabsorbed form's staging, for RAM-bound devices)
template <std::size_t kTMax_, std::size_t kDModel_, std::size_t kHeads_, std::size_t kDLatent_,
          std::size_t kDRope_, std::size_t kDNope_, std::size_t kDV_, auto... kOptions>
struct LatentConfig {
  static_assert((internal::is_latent_option<decltype(kOptions)>() && ...),
                "microattn::LatentConfig: an option is not a QueryLatent, MaxWorkers, "
                "WeightType, CacheType or LatentPrefill value");
  static_assert(internal::option_count<QueryLatent>(kOptions...) <= 1 &&
                    internal::option_count<MaxWorkers>(kOptions...) <= 1 &&
                    internal::option_count<WeightType>(kOptions...) <= 1 &&
                    internal::option_count<CacheType>(kOptions...) <= 1 &&
                    internal::option_count<LatentPrefill>(kOptions...) <= 1,
                "microattn::LatentConfig: each option may be given once");
  static_assert(kTMax_ > 0 && kDModel_ > 0 && kHeads_ > 0 && kDLatent_ > 0 && kDV_ > 0,
                "microattn::LatentConfig: T_max, d_model, H, d_c and d_v must be at least 1");
  static_assert(kDRope_ >= 2 && kDRope_ % 2 == 0,
                "microattn::LatentConfig: d_R (the rotated part) must be even and at least 2");
  static_assert(kDV_ <= kDLatent_ + kDRope_,
                "microattn::LatentConfig: d_v must not exceed d_c + d_R (the absorbed decode "
                "reads its values inside the latent rows)");

  static constexpr std::size_t kTMax = kTMax_;
  static constexpr std::size_t kDModel = kDModel_;
  static constexpr std::size_t kHeads = kHeads_;
  static constexpr std::size_t kDLatent = kDLatent_;
  static constexpr std::size_t kDRope = kDRope_;
  static constexpr std::size_t kDNope = kDNope_;
  static constexpr std::size_t kDV = kDV_;
  /// d_cq, or 0 without a query latent.
  static constexpr std::size_t kDQLatent =
      static_cast<std::size_t>(internal::option_or<QueryLatent>(QueryLatent{0}, kOptions...));
  static constexpr bool kHasQueryLatent = kDQLatent > 0;
  static constexpr std::size_t kMaxWorkers =
      static_cast<std::size_t>(internal::option_or<MaxWorkers>(MaxWorkers{1}, kOptions...));
  static_assert(kMaxWorkers >= 1 && kMaxWorkers <= 256,
                "microattn::LatentConfig: MaxWorkers{n} needs 1 <= n <= 256");
  /// The weight matrices' storage format (format.hpp) and the C++ type of their arrays.
  using WeightFormat = internal::weight_format_t<kOptions...>;
  using WeightElem = typename WeightFormat::Elem;
  static constexpr bool kInt8Weights = std::is_same<WeightFormat, format::Qc8>::value;
  static_assert(kInt8Weights || std::is_same<WeightFormat, format::F32>::value,
                "microattn::LatentConfig: WeightType::kF16, kBF16 and the group-wise kInt8G32 "
                "/ G64 / G128 are not implemented for LatentAttention (its absorbed matrices "
                "are fp32 or per-column int8): kF32 or kInt8");
  static constexpr bool kInt8Cache =
      internal::option_or<CacheType>(CacheType::kF32, kOptions...) == CacheType::kInt8;
  static_assert(kInt8Cache ||
                    internal::option_or<CacheType>(CacheType::kF32, kOptions...) == CacheType::kF32,
                "microattn::LatentConfig: CacheType::kF16 and kBF16 are not implemented for "
                "LatentAttention's latent cache: kF32 or kInt8");
  static_assert(internal::option_or<LatentPrefill>(LatentPrefill::kAuto, kOptions...) !=
                    LatentPrefill::kUnabsorbed,
                "microattn::LatentConfig: LatentPrefill::kUnabsorbed is a run-time choice "
                "(set_prefill_form), not an option; the option is LatentPrefill::kAbsorbed");
  /// Prefill always absorbed (option LatentPrefill::kAbsorbed): no unabsorbed staging.
  static constexpr bool kAbsorbedOnly =
      internal::option_or<LatentPrefill>(LatentPrefill::kAuto, kOptions...) ==
      LatentPrefill::kAbsorbed;

  /// A head's query/key width before absorption, d_nope + d_R (the softmax scale's d).
  static constexpr std::size_t kDQk = kDNope_ + kDRope_;
  /// A cached latent row: [c_KV | k_R], d_c + d_R floats.
  static constexpr std::size_t kDCache = kDLatent_ + kDRope_;
  /// Width of q (H heads of [q_nope | q_R]).
  static constexpr std::size_t kQDim = kHeads_ * kDQk;
  /// Width of W_UKV's output (H heads of [k_nope | v]).
  static constexpr std::size_t kUkvDim = kHeads_ * (kDNope_ + kDV_);
  /// Width of the concatenated heads (W_O's input).
  static constexpr std::size_t kVDim = kHeads_ * kDV_;
  static constexpr std::size_t kOutDim = kDModel_;
  static_assert(kTMax_ <= (std::size_t{1} << 24) && kDModel_ <= (std::size_t{1} << 20) &&
                    kQDim <= (std::size_t{1} << 20) && kUkvDim <= (std::size_t{1} << 20) &&
                    kDCache <= (std::size_t{1} << 20),
                "microattn::LatentConfig: dimensions too large for 32-bit index arithmetic");
  static_assert(internal::sizes_fit(kTMax_, kDModel_ + kDCache + kDQLatent, kHeads_, 1,
                                    kDQk + kDV_ + kDLatent_, SIZE_MAX),
                "microattn::LatentConfig: T_max x widths buffers do not fit this target's size_t");

  // The RoPE state (internal::RopeState) reads these: tables for the d_R rotated dimensions.
  static constexpr std::size_t kDHead = kDRope_;
  static constexpr bool kHasRope = true;
};

/// The weights of a LatentAttention layer: views over caller arrays (flash), every matrix in
/// `layout` (kInOut: [in][out]; kOutIn: PyTorch's nn.Linear.weight, [out][in]; kPanel16, the
/// fastest for decode, when panel_fits()). Hugging Face's
/// DeepseekV2Attention, layout kOutIn:
///   w_q = q_proj.weight, or w_dq = q_a_proj.weight, g_q = q_a_layernorm.weight,
///   w_uq = q_b_proj.weight (with QueryLatent);  [H][d_nope | d_R] output columns
///   w_dkv = kv_a_proj_with_mqa.weight           [d_c | d_R] output columns
///   g_kv = kv_a_layernorm.weight                d_c
///   w_ukv = kv_b_proj.weight                    [H][d_nope | d_v] output columns
///   w_o = o_proj.weight                         H * d_v inputs
/// No biases (DeepSeek's attention_bias = False).
/// With WeightType::kInt8 the matrices are int8 (quantize_int8(): W(i, o) = s_x[o] q(i, o), a
/// scale per output column) and s_q .. s_o point at their scales; the RMSNorm weights stay fp32.
/// W_UK is never multiplied into another matrix (per-column scales would not survive it): the
/// absorbed query W_UK_h q_nope_h is computed at run time from the int8 block, with q_nope
/// scaled by the block's column scales first.
template <class LCfg>
struct LatentWeights {
  /// The matrices' storage format (format.hpp) and the C++ type of their arrays: float, or
  /// int8_t with WeightType::kInt8.
  using Format = typename LCfg::WeightFormat;
  using Elem = typename LCfg::WeightElem;
  static constexpr bool kInt8 = LCfg::kInt8Weights;
  WeightLayout layout = WeightLayout::kInOut;
  const Elem* w_q = nullptr;
  const Elem* w_dq = nullptr;
  const float* g_q = nullptr;
  const Elem* w_uq = nullptr;
  const Elem* w_dkv = nullptr;
  const float* g_kv = nullptr;
  const Elem* w_ukv = nullptr;
  const Elem* w_o = nullptr;
  /// Per-output-column scales of the int8 matrices (ignored for fp32 weights).
  const float* s_q = nullptr;
  const float* s_dq = nullptr;
  const float* s_uq = nullptr;
  const float* s_dkv = nullptr;
  const float* s_ukv = nullptr;
  const float* s_o = nullptr;

  /// Each matrix as one record (its elements and its scales).
  constexpr Matrix<Format> q() const noexcept { return {w_q, s_q}; }
  constexpr Matrix<Format> dq() const noexcept { return {w_dq, s_dq}; }
  constexpr Matrix<Format> uq() const noexcept { return {w_uq, s_uq}; }
  constexpr Matrix<Format> dkv() const noexcept { return {w_dkv, s_dkv}; }
  constexpr Matrix<Format> ukv() const noexcept { return {w_ukv, s_ukv}; }
  constexpr Matrix<Format> o() const noexcept { return {w_o, s_o}; }

  /// kPanel16 needs every matrix's output width and the per-head column blocks of W_UKV
  /// (d_nope, d_v) in whole panels of 16.
  static constexpr bool panel_fits() noexcept {
    constexpr std::size_t P = kWeightPanel;
    return LCfg::kQDim % P == 0 && LCfg::kDCache % P == 0 && LCfg::kDModel % P == 0 &&
           LCfg::kDNope % P == 0 && LCfg::kDV % P == 0 && LCfg::kDQLatent % P == 0;
  }
  /// kOk; kNullPointer when a matrix, norm weight or (int8) scale array the configuration
  /// needs is null; kBadArgument for a layout that is not a WeightLayout value, or kPanel16
  /// without panel_fits().
  constexpr Status check() const noexcept {
    const bool q_ok =
        LCfg::kHasQueryLatent ? (dq().complete() && g_q && uq().complete()) : q().complete();
    if (!q_ok || !dkv().complete() || !g_kv || !ukv().complete() || !o().complete())
      return Status::kNullPointer;
    if (layout != WeightLayout::kInOut && layout != WeightLayout::kOutIn &&
        (layout != WeightLayout::kPanel16 || !panel_fits()))
      return Status::kBadArgument;
    return Status::kOk;
  }
  /// True when [p, p + bytes) overlaps a weight array.
  bool overlaps(const void* p, std::size_t bytes) const noexcept {
    constexpr std::size_t F = sizeof(float), DM = LCfg::kDModel;
    auto mat = [&](const Matrix<Format>& m, std::size_t in, std::size_t out) {
      return m.overlaps(p, bytes, layout, in, out);
    };
    if (LCfg::kHasQueryLatent) {
      if (mat(dq(), DM, LCfg::kDQLatent) ||
          internal::overlaps(p, bytes, g_q, LCfg::kDQLatent * F) ||
          mat(uq(), LCfg::kDQLatent, LCfg::kQDim))
        return true;
    } else if (mat(q(), DM, LCfg::kQDim)) {
      return true;
    }
    return mat(dkv(), DM, LCfg::kDCache) ||
           internal::overlaps(p, bytes, g_kv, LCfg::kDLatent * F) ||
           mat(ukv(), LCfg::kDLatent, LCfg::kUkvDim) || mat(o(), LCfg::kVDim, DM);
  }
};

/// Causal multi-head latent attention with its cache, for generating or streaming a token (or
/// a chunk) at a time. Per token t: [c_KV | k_R] = x W_DKV, c_KV = RMSNorm(c_KV) (weight g_kv,
/// epsilon set_rms_eps), k_R rotated at the token's position and shared by all heads; per head
/// h, k_h = [c_KV W_UK_h | k_R], v_h = c_KV W_UV_h, q_h = [q_nope_h | RoPE(q_R_h)]; o_h =
/// softmax(q_h k_h^T * scale) v_h over the tokens up to t; y = concat_h(o_h) W_O. The cache holds
/// only [c_KV | k_R] per token (kCacheBytes: d_c + d_R floats a token).
///   prefill(x, T, y): the projections of the call's tokens as GEMMs, then, by default, the
///     form with fewer flops (set_prefill_form): unabsorbed (each head's keys and values
///     expanded from the cached latents, two GEMMs a head over every cached token, then the
///     prefill tile kernel with query/key width d_nope + d_R and value width d_v), cheaper once
///     a call has many tokens; or absorbed, token by token as decode, for a short call after a
///     long cached prefix (docs/latent-attention.md).
///   decode(x, y): the absorbed form: q~_h = W_UK_h q_nope_h moves the query into the latent
///     space, so one MQA over the cached rows gives each head's attention in the latent space
///     (values: the rows' first d_c columns, read in place), lifted by W_UV_h afterwards. It
///     reads d_c + d_R floats a cached token, once for every head.
/// Both compute the same function; the tests bound their difference at fp32 rounding.
///
/// Like KvAttention: fixed size, no heap; sizeof == ram_bytes(); a status-returning method
/// changes nothing unless it returns kOk; the all-zero object is a valid empty layer (RoPE off,
/// default scale 1/sqrt(d_nope + d_R) and RMSNorm epsilon 1e-6, no weights).
///
/// @tparam kPrefillChunk tokens prefill() processes at a time (1 .. T_max).
template <class LCfg, class Arch = DefaultArch, std::size_t kPrefillChunk = LCfg::kTMax>
class LatentAttention {
  static_assert(kPrefillChunk >= 1 && kPrefillChunk <= LCfg::kTMax,
                "microattn::LatentAttention: kPrefillChunk must be in 1 .. T_max");
  using Tl = internal::Tiles<Arch>;
  static constexpr std::size_t H = LCfg::kHeads, DM = LCfg::kDModel, DC = LCfg::kDLatent,
                               DR = LCfg::kDRope, DN = LCfg::kDNope, DV = LCfg::kDV,
                               DQK = LCfg::kDQk, DCR = LCfg::kDCache, QD = LCfg::kQDim,
                               UD = LCfg::kUkvDim, VD = LCfg::kVDim, DCQ = LCfg::kDQLatent;
  static constexpr std::size_t kTPad = internal::round_up(LCfg::kTMax, Tl::kBK);
  using Elem = typename LCfg::WeightElem;
  static constexpr bool kInt8W = LCfg::kInt8Weights;
  static constexpr bool kInt8C = LCfg::kInt8Cache;
  using CE = std::conditional_t<kInt8C, std::int8_t, float>;
  // The softmax scale's default 1/sqrt(d_nope + d_R).
  struct ScaleShape {
    static constexpr std::size_t kDHead = DQK;
  };
  using TileScratch = kernels::AttnScratch<Arch, DQK, false, DV>;
  using DecScratch = kernels::LatentDecodeScratch<Arch, DCR, DC, H, kTPad, CE, LCfg::kMaxWorkers>;
  static constexpr std::size_t kStages = LCfg::kMaxWorkers < H ? LCfg::kMaxWorkers : H;
  static constexpr std::size_t kDPad = TileScratch::kDPad;
  static constexpr std::size_t kPackFloats = kernels::gemm_pack_floats<Arch>();
  static constexpr std::size_t kBlockRows = internal::row_block<Arch, LCfg::kTMax>(LCfg::kTMax);
  // Cached rows expanded at a time: an int8 cache dequantises them first into a staging block,
  // kept to two micro-tiles so that it does not cost the RAM the int8 cache saves.
  static constexpr std::size_t kExpandRows =
      kInt8C && 2 * Tl::kMR < kBlockRows ? 2 * Tl::kMR : kBlockRows;

  /// The latent rows; int8: each row's c_KV scale and k_R scale (s[2t], s[2t + 1]).
  struct Cache {
    alignas(Tl::kAlign) CE c[LCfg::kTMax * DCR + kernels::latent_cache_slack<Arch>()];
    float s[kInt8C ? 2 * LCfg::kTMax : 1];
  };
  /// The unabsorbed prefill's staging: one head's expanded keys (K^T tiles) and values per
  /// stage, the rows of keys being expanded (int8 cache: the cached rows dequantised first) and
  /// a tile scratch per worker. None with the option LatentPrefill::kAbsorbed.
  struct Staging {
    alignas(Tl::kAlign) float kt[kStages][kTPad * DQK];
    alignas(Tl::kAlign) float v[kStages][kTPad * kDPad];
    alignas(Tl::kAlign) float krows[LCfg::kMaxWorkers][kExpandRows * DQK];
    alignas(Tl::kAlign) float cdq[LCfg::kMaxWorkers][kInt8C ? kExpandRows * DCR : 1];
    TileScratch tile[LCfg::kMaxWorkers];
  };
  struct NoStaging {};
  /// Prefill: the chunk's queries (and query latents), the concatenated heads, (int8 cache) its
  /// latent rows before quantisation, a GEMM panel per worker, the staging.
  struct PrefillWork {
    alignas(Tl::kAlign) float q[kPrefillChunk * QD];
    alignas(Tl::kAlign) float cq[LCfg::kHasQueryLatent ? kPrefillChunk * DCQ : 1];
    alignas(Tl::kAlign) float ctx[kPrefillChunk * VD];
    alignas(Tl::kAlign) float lat[kInt8C ? kPrefillChunk * DCR : 1];
    alignas(Tl::kAlign) float pack[LCfg::kMaxWorkers][kPackFloats];
    std::conditional_t<LCfg::kAbsorbedOnly, NoStaging, Staging> st;
  };
  /// Decode: the token's queries, absorbed queries [q~_h | q_R_h] (int8 weights: with each
  /// head's q_nope scaled by W_UK_h's column scales first), latent-space outputs, heads.
  struct DecodeWork {
    alignas(Tl::kAlign) float q[QD];
    alignas(Tl::kAlign) float cq[LCfg::kHasQueryLatent ? DCQ : 1];
    alignas(Tl::kAlign) float qa[H * DCR];
    alignas(Tl::kAlign) float qs[LCfg::kInt8Weights && DN > 0 ? H* DN : 1];
    alignas(Tl::kAlign) float oc[H * DC];
    alignas(Tl::kAlign) float ctx[VD];
    DecScratch att;
  };

 public:
  /// Bytes of the latent cache: T_max rows of d_c + d_R floats (plus a vector of slack); int8
  /// cache: d_c + d_R bytes and two float scales a row.
  static constexpr std::size_t kCacheBytes = sizeof(Cache);
  /// Cache bytes per token: 4 (d_c + d_R), or d_c + d_R + 8 with CacheType::kInt8.
  static constexpr std::size_t kCacheBytesPerToken =
      DCR * sizeof(CE) + (kInt8C ? 2 * sizeof(float) : 0);
  /// Bytes of working memory: prefill (the chunk's queries and heads, and unless the option
  /// LatentPrefill::kAbsorbed, a head's expanded K and V for T_max tokens per stage) and decode.
  static constexpr std::size_t kWorkspaceBytes = sizeof(PrefillWork) + sizeof(DecodeWork);

  LatentAttention() = default;
  LatentAttention(const LatentAttention&) = delete;
  LatentAttention& operator=(const LatentAttention&) = delete;

  /// RAM of the whole object in bytes (weights are views and not included).
  static constexpr std::size_t ram_bytes() noexcept { return sizeof(LatentAttention); }

  /// Points the layer at weights (see LatentWeights). Allowed at any time; cached rows stay.
  /// @return kOk, or LatentWeights::check()'s status (nothing changed).
  [[nodiscard]] Status set_weights(const LatentWeights<LCfg>& w) noexcept {
    const Status s = w.check();
    if (s != Status::kOk) return s;
    w_ = w;
    return Status::kOk;
  }

  /// RoPE of the rotated parts (k_R, q_R; rotary_dims 0 = d_R). DeepSeek's checkpoints rotate
  /// adjacent pairs (RopePairing::kAdjacent); Hugging Face's code permutes q_R and k_R to
  /// half-split before rotating, which gives the same scores: use kAdjacent with its weights.
  /// Only while the cache is empty. @return as KvAttention::set_rope.
  [[nodiscard]] Status set_rope(const RopeConfig& r) noexcept {
    if (length_ != 0) return Status::kBadArgument;
    return rope_.set(r);
  }
  RopeConfig rope() const noexcept { return rope_.get(); }

  /// Softmax scale, default 1/sqrt(d_nope + d_R) (the head width before absorption, not d_c).
  /// @return kOk, or kBadScale (nothing changed).
  [[nodiscard]] Status set_scale(float scale) noexcept { return scale_.set(scale); }
  float scale() const noexcept { return scale_.get<ScaleShape>(); }

  /// Epsilon of both RMSNorms (default 1e-6, DeepSeek's rms_norm_eps). Only while the cache is
  /// empty (the cached latents were normalised with it).
  /// @return kOk, or kBadArgument (nothing changed) when eps is not finite and > 0, or the cache
  ///         is not empty.
  [[nodiscard]] Status set_rms_eps(float eps) noexcept {
    if (length_ != 0 || !(eps > 0.0f) || !internal::finite_bits(eps)) return Status::kBadArgument;
    eps_ = eps;
    return Status::kOk;
  }
  float rms_eps() const noexcept { return eps_ > 0.0f ? eps_ : 1e-6f; }

  /// The form prefill attends in (default LatentPrefill::kAuto). Both give the same outputs
  /// within fp32 rounding. With the option LatentPrefill::kAbsorbed every prefill is absorbed
  /// (kAuto and kAbsorbed accepted). @return kOk, or kBadArgument (nothing changed) for
  /// another value.
  [[nodiscard]] Status set_prefill_form(LatentPrefill f) noexcept {
    if (f != LatentPrefill::kAuto && f != LatentPrefill::kAbsorbed &&
        (f != LatentPrefill::kUnabsorbed || LCfg::kAbsorbedOnly))
      return Status::kBadArgument;
    form_ = f;
    return Status::kOk;
  }
  LatentPrefill prefill_form() const noexcept { return form_; }

  /// Splits later calls over the executor's workers (at most MaxWorkers): prefill's projections
  /// by rows and its heads by worker, decode's projections by output columns (its attention runs
  /// on the calling thread). @return kOk, or kBadArgument (nothing changed).
  [[nodiscard]] Status set_executor(const Executor& e) noexcept { return ex_.set(e); }

  /// Appends T tokens and returns their outputs (token at position length() + i sees the cached
  /// tokens and this call's up to itself).
  /// @param x  [T][d_model] floats
  /// @param y  [T][d_model] floats, written only on kOk; must not overlap x or a weight array
  /// @return kOk; kNullPointer (x, y or a weight null); kBadTokenCount (T == 0 or T > T_max);
  ///         kCacheFull (length() + T > T_max); kOverlap. Nothing changes on error.
  [[nodiscard]] Status prefill(const float* x, std::size_t T, float* y) noexcept {
    if (const Status s = check_call(x, T, y); s != Status::kOk) return s;
    for (std::size_t t0 = 0; t0 < T; t0 += kPrefillChunk) {
      const std::size_t n = internal::min_size(kPrefillChunk, T - t0);
      run_prefill(x + t0 * DM, n, y + t0 * DM);
      length_ += n;
    }
    return Status::kOk;
  }

  /// Appends one token and returns its output, attending over the whole cache (absorbed form).
  /// @return as prefill with T = 1.
  [[nodiscard]] Status decode(const float* x, float* y) noexcept {
    if (const Status s = check_call(x, 1, y); s != Status::kOk) return s;
    run_decode(x, y);
    ++length_;
    return Status::kOk;
  }

  /// Copies the cached latent rows of tokens first .. first + n - 1 out ([n][d_c + d_R]:
  /// c_KV normalised, k_R rotated) and describes them (kv_heads = 1, d_head = d_c + d_R).
  /// @return kOk; kNullPointer; kBadArgument (n == 0 or past length()).
  [[nodiscard]] Status export_cache(std::size_t first, std::size_t n, float* rows,
                                    CacheSlice* info) const noexcept {
    if (!rows || !info) return Status::kNullPointer;
    if (n == 0 || first > length_ || n > length_ - first) return Status::kBadArgument;
    load_rows(first, n, rows);
    info->first = first, info->tokens = n, info->kv_heads = 1, info->d_head = DCR;
    info->rope = rope();
    return Status::kOk;
  }
  /// Appends rows export_cache() wrote (continuing this cache: info.first == length(), the same
  /// shape and RoPE). @return kOk; kNullPointer; kBadArgument; kCacheFull. Nothing changes on
  /// error.
  [[nodiscard]] Status import_cache(const CacheSlice& info, const float* rows) noexcept {
    if (!rows) return Status::kNullPointer;
    if (info.tokens == 0 || info.kv_heads != 1 || info.d_head != DCR || info.first != length_ ||
        !internal::same_rope(info.rope, rope(), DR))
      return Status::kBadArgument;
    if (info.tokens > LCfg::kTMax - length_) return Status::kCacheFull;
    store_rows(rows, info.tokens, length_);
    length_ += info.tokens;
    return Status::kOk;
  }

  /// Forgets the tokens at positions >= length. @return kOk, or kBadArgument (length > length()).
  [[nodiscard]] Status truncate(std::size_t length) noexcept {
    if (length > length_) return Status::kBadArgument;
    length_ = length;
    return Status::kOk;
  }
  /// Empties the cache (weights and settings stay).
  void reset() noexcept { length_ = 0; }
  std::size_t length() const noexcept { return length_; }
  static constexpr std::size_t capacity() noexcept { return LCfg::kTMax; }

 private:
  Status check_call(const float* x, std::size_t T, const float* y) const noexcept {
    if (!x || !y) return Status::kNullPointer;
    if (const Status s = w_.check(); s != Status::kOk) return s;
    if (T == 0 || T > LCfg::kTMax) return Status::kBadTokenCount;
    if (length_ + T > LCfg::kTMax) return Status::kCacheFull;
    const std::size_t bytes = T * DM * sizeof(float);
    if (internal::overlaps(x, bytes, y, bytes) || w_.overlaps(y, bytes)) return Status::kOverlap;
    return Status::kOk;
  }
  /// Columns [col0, ..) of a matrix (in inputs, out outputs) with their int8 scales.
  internal::WeightSlice<Elem> slice(const Matrix<typename LCfg::WeightFormat>& m, std::size_t in,
                                    std::size_t out, std::size_t col0) const noexcept {
    return internal::weight_slice(m, w_.layout, in, out, col0);
  }
  /// Head h's qs scratch: int8 weights only (with fp32 weights dw.qs is a single float).
  static float* query_scratch(DecodeWork& dw, std::size_t h) noexcept {
    if constexpr (kInt8W) {
      return dw.qs + h * DN;
    } else {
      (void)dw, (void)h;
      return nullptr;
    }
  }
  /// q~_h = W_UK_h q_nope_h (d_c floats): W_UK_h read transposed, as the [d_nope][d_c] matrix
  /// of the other dense layout, or a panel block read row by row. int8: W_UK_h(c, o) = s[o]
  /// q(c, o), so q_nope is scaled by s into qs (d_nope floats) and multiplied by q unscaled.
  void absorb_query(std::size_t h, const float* q_nope, float* qs, float* qa) const noexcept {
    const std::size_t col0 = h * (DN + DV);
    if constexpr (kInt8W) {
      for (std::size_t o = 0; o < DN; ++o) qs[o] = q_nope[o] * w_.s_ukv[col0 + o];
      q_nope = qs;
    }
    if (w_.layout == WeightLayout::kPanel16) {
      kernels::f32_gemv_panel16_t<Arch>(DC, DN, q_nope, w_.w_ukv + col0 * DC, kWeightPanel * DC,
                                        qa);
      return;
    }
    const bool out_in = w_.layout == WeightLayout::kOutIn;
    const internal::WeightSlice<Elem> t{w_.w_ukv + col0 * (out_in ? DC : 1), out_in ? DC : UD,
                                        out_in ? WeightLayout::kInOut : WeightLayout::kOutIn,
                                        nullptr};
    internal::project_vec<Arch>(DC, DN, q_nope, t, nullptr, qa);
  }

  /// What every query head of n rows of queries (row stride d_q) at positions pos .. gets after
  /// its projection: its q_R rotated. Prefill and decode both call it: the one home of a
  /// per-head option on queries (the keys' is latents()).
  void query_heads(float* q, std::size_t n, std::size_t pos) const noexcept {
    rope_.apply(q + DN, QD, DQK, n, H, pos);
  }
  /// The latent rows of n tokens at cache rows pos ..: projected by project_rows (into the
  /// cache, or for an int8 cache into stage, n rows of d_c + d_R floats), c_KV normalised, k_R
  /// rotated (then quantised).
  template <class Project>
  void latents(std::size_t n, std::size_t pos, float* stage, Project&& project_rows) noexcept {
    float* rows = stage;
    if constexpr (!kInt8C) rows = cache_.c + pos * DCR;
    project_rows(rows);
    kernels::f32_rms_norm_rows(rows, DCR, n, DC, w_.g_kv, rms_eps());
    rope_.apply(rows + DC, DCR, DR, n, 1, pos);
    if constexpr (kInt8C) store_rows(rows, n, pos);
  }
  /// n fp32 rows [n][d_c + d_R] into cache rows pos ..; int8: c_KV and k_R quantised apart
  /// (their magnitudes differ: a normalised latent, a rotated key).
  void store_rows(const float* rows, std::size_t n, std::size_t pos) noexcept {
    if constexpr (kInt8C) {
      using Q = internal::Elem<std::int8_t>;
      for (std::size_t t = 0; t < n; ++t) {
        CE* c = cache_.c + (pos + t) * DCR;
        cache_.s[2 * (pos + t)] = Q::encode(rows + t * DCR, DC, c, 1);
        cache_.s[2 * (pos + t) + 1] = Q::encode(rows + t * DCR + DC, DR, c + DC, 1);
      }
    } else {
      std::memcpy(cache_.c + pos * DCR, rows, n * DCR * sizeof(float));
    }
  }
  /// Cache rows first .. first + n - 1 as fp32 rows [n][d_c + d_R] (int8: dequantised).
  void load_rows(std::size_t first, std::size_t n, float* rows) const noexcept {
    if constexpr (kInt8C) {
      kernels::latent_dequantise_rows<DCR, DC>(cache_.c + first * DCR, DCR, n, cache_.s + 2 * first,
                                               rows);
    } else {
      std::memcpy(rows, cache_.c + first * DCR, n * DCR * sizeof(float));
    }
  }

  // T <= kPrefillChunk tokens at positions length_ .. (unabsorbed).
  void run_prefill(const float* x, std::size_t T, float* y) noexcept {
    const std::size_t L = length_, parts = ex_.parts();
    rope_.cover(L, T);
    PrefillWork& pw = pw_;
    // Latents and queries of the call's tokens, split by rows.
    auto project = [&](std::size_t i) {
      const internal::Range r = internal::token_rows<Arch>(T, i, parts);
      if (r.begin >= r.end) return;
      const std::size_t n = r.end - r.begin;
      const float* xr = x + r.begin * DM;
      float* panel = pw.pack[i];
      latents(n, L + r.begin, kInt8C ? pw.lat + r.begin * DCR : nullptr, [&](float* rows) {
        internal::project<Arch>(n, DCR, DM, xr, DM, slice(w_.dkv(), DM, DCR, 0), nullptr,
                                kernels::StoreRowMajor{rows, DCR}, panel);
      });
      float* q = pw.q + r.begin * QD;
      if constexpr (LCfg::kHasQueryLatent) {
        float* cq = pw.cq + r.begin * DCQ;
        internal::project<Arch>(n, DCQ, DM, xr, DM, slice(w_.dq(), DM, DCQ, 0), nullptr,
                                kernels::StoreRowMajor{cq, DCQ}, panel);
        kernels::f32_rms_norm_rows(cq, DCQ, n, DCQ, w_.g_q, rms_eps());
        internal::project<Arch>(n, QD, DCQ, cq, DCQ, slice(w_.uq(), DCQ, QD, 0), nullptr,
                                kernels::StoreRowMajor{q, QD}, panel);
      } else {
        internal::project<Arch>(n, QD, DM, xr, DM, slice(w_.q(), DM, QD, 0), nullptr,
                                kernels::StoreRowMajor{q, QD}, panel);
      }
      query_heads(q, n, L + r.begin);
    };
    ex_.run(parts, project);
    if (absorbed_prefill(T, L)) {
      for (std::size_t t = 0; t < T; ++t)
        attend_absorbed(pw.q + t * QD, L + t + 1, pw.ctx + t * VD);
    } else if constexpr (!LCfg::kAbsorbedOnly) {
      attend_unabsorbed(T, L);
    }
    auto out = [&](std::size_t i) {
      const internal::Range r = internal::token_rows<Arch>(T, i, parts);
      if (r.begin >= r.end) return;
      internal::project<Arch>(r.end - r.begin, DM, VD, pw.ctx + r.begin * VD, VD,
                              slice(w_.o(), VD, DM, 0), nullptr,
                              kernels::StoreRowMajor{y + r.begin * DM, DM}, pw.pack[i]);
    };
    ex_.run(parts, out);
  }

  /// The chunk's queries (in the prefill buffers) over the cached tokens 0 .. L + T - 1,
  /// unabsorbed: each head's keys and values of every cached token expanded, then the tile
  /// kernel with query/key width d_nope + d_R and value width d_v.
  void attend_unabsorbed(std::size_t T, std::size_t L) noexcept {
    PrefillWork& pw = pw_;
    auto prepare = [&](std::size_t h, std::size_t b, std::size_t e, std::size_t s, std::size_t w) {
      expand_head(h, b, e, s, w);
    };
    const kernels::KeyMask mask{L + T};
    const float sc = scale();
    auto attend = [&](std::size_t h, std::size_t s, std::size_t w, std::size_t part,
                      std::size_t n_parts) MICROATTN_NOINLINE {
      const kernels::QueryRows rows{pw.q + h * DQK, QD, DQK, pw.ctx + h * DV, VD, DV, T, 1, L};
      kernels::f32_attn_rows<Arch, DQK>(rows, mask, pw.st.kt[s], pw.st.v[s], sc, pw.st.tile[w],
                                        nullptr, nullptr, nullptr, part, n_parts);
    };
    internal::run_heads<Arch, H>(ex_, L + T, prepare, attend);
  }

  /// Head h's keys [c W_UK_h | k_R] (as K^T tiles) and values c W_UV_h of cached tokens [b, e)
  /// into stage s, with worker w's rows and GEMM panel.
  void expand_head(std::size_t h, std::size_t b, std::size_t e, std::size_t s,
                   std::size_t w) noexcept {
    PrefillWork& pw = pw_;
    const auto wk = slice(w_.ukv(), DC, UD, h * (DN + DV));
    const auto wv = slice(w_.ukv(), DC, UD, h * (DN + DV) + DN);
    for (std::size_t rb = b, n = 0; rb < e; rb += n) {
      n = internal::min_size(kExpandRows, e - rb);
      const float* c;
      if constexpr (kInt8C) {
        load_rows(rb, n, pw.st.cdq[w]);
        c = pw.st.cdq[w];
      } else {
        c = cache_.c + rb * DCR;
      }
      float* k = pw.st.krows[w];
      if (DN > 0)
        internal::project<Arch>(n, DN, DC, c, DCR, wk, nullptr, kernels::StoreRowMajor{k, DQK},
                                pw.pack[w]);
      for (std::size_t t = 0; t < n; ++t)
        std::memcpy(k + t * DQK + DN, c + t * DCR + DC, DR * sizeof(float));
      kernels::store_key_tiles<Arch, DQK>(k, DQK, n, rb, Tl::kBK, pw.st.kt[s]);
      internal::project<Arch>(n, DV, DC, c, DCR, wv, nullptr,
                              kernels::StoreRowMajor{pw.st.v[s] + rb * kDPad, kDPad}, pw.pack[w]);
    }
  }

  /// The absorbed attention of one token's queries q (H heads of [q_nope | q_R], rotated) over
  /// cached rows 0 .. n_keys - 1, into ctx (H heads of d_v): q~_h = W_UK_h^T q_nope_h, the MQA
  /// over the rows in the latent space, each head lifted by W_UV_h. Absorb and lift split by
  /// heads over the executor's parts.
  void attend_absorbed(const float* q, std::size_t n_keys, float* ctx) noexcept {
    DecodeWork& dw = dw_;
    const std::size_t parts = ex_.parts();
    auto absorb = [&](std::size_t i) {
      const internal::Range r = internal::split(H, 1, i, parts);
      for (std::size_t h = r.begin; h < r.end; ++h) {
        float* qa = dw.qa + h * DCR;
        if (DN > 0)
          absorb_query(h, q + h * DQK, query_scratch(dw, h), qa);
        else
          for (std::size_t d = 0; d < DC; ++d) qa[d] = 0.0f;
        std::memcpy(qa + DC, q + h * DQK + DN, DR * sizeof(float));
      }
    };
    ex_.run(parts, absorb);
    // The MQA in the latent space: the scores split by keys, the values by columns (the
    // kernel's phases; the bits of one part for any split). Not inlined: one compiled copy for
    // the calling thread and the workers, so -ffast-math cannot make them round differently.
    const float* rs = kInt8C ? cache_.s : nullptr;
    kernels::latent_decode_queries(dw.qa, DCR, scale(), dw.att);
    auto scores = [&](std::size_t i) MICROATTN_NOINLINE {
      kernels::latent_decode_scores(cache_.c, DCR, n_keys, rs, dw.att, i, parts);
    };
    ex_.run(parts, scores);
    kernels::latent_decode_softmax(n_keys, rs, dw.att);
    auto values = [&](std::size_t i) MICROATTN_NOINLINE {
      kernels::latent_decode_values(cache_.c, DCR, n_keys, dw.att, dw.oc, DC, i, parts);
    };
    ex_.run(parts, values);
    auto lift = [&](std::size_t i) {
      const internal::Range r = internal::split(H, 1, i, parts);
      for (std::size_t h = r.begin; h < r.end; ++h)
        internal::project_vec<Arch>(DV, DC, dw.oc + h * DC,
                                    slice(w_.ukv(), DC, UD, h * (DN + DV) + DN), nullptr,
                                    ctx + h * DV);
    };
    ex_.run(parts, lift);
  }

  // One token at position length_ (absorbed).
  void run_decode(const float* x, float* y) noexcept {
    const std::size_t L = length_, parts = ex_.parts();
    rope_.cover(L, 1);
    DecodeWork& dw = dw_;
    latents(1, L, pw_.lat, [&](float* row) {
      auto proj = [&](std::size_t i) {
        internal::project_vec<Arch>(DCR, DM, x, slice(w_.dkv(), DM, DCR, 0), nullptr, row, i,
                                    parts);
      };
      ex_.run(parts, proj);
    });
    if constexpr (LCfg::kHasQueryLatent) {
      auto pa = [&](std::size_t i) {
        internal::project_vec<Arch>(DCQ, DM, x, slice(w_.dq(), DM, DCQ, 0), nullptr, dw.cq, i,
                                    parts);
      };
      ex_.run(parts, pa);
      kernels::f32_rms_norm_rows(dw.cq, DCQ, 1, DCQ, w_.g_q, rms_eps());
      auto pb = [&](std::size_t i) {
        internal::project_vec<Arch>(QD, DCQ, dw.cq, slice(w_.uq(), DCQ, QD, 0), nullptr, dw.q, i,
                                    parts);
      };
      ex_.run(parts, pb);
    } else {
      auto pq = [&](std::size_t i) {
        internal::project_vec<Arch>(QD, DM, x, slice(w_.q(), DM, QD, 0), nullptr, dw.q, i, parts);
      };
      ex_.run(parts, pq);
    }
    query_heads(dw.q, 1, L);
    attend_absorbed(dw.q, L + 1, dw.ctx);
    auto out = [&](std::size_t i) {
      internal::project_vec<Arch>(DM, VD, dw.ctx, slice(w_.o(), VD, DM, 0), nullptr, y, i, parts);
    };
    ex_.run(parts, out);
  }

  /// True when a prefill call of T tokens after L cached ones attends absorbed: forced, or
  /// (kAuto) when that takes fewer flops. Per query-key pair the absorbed attention costs
  /// 2 H (2 d_c - d_nope - d_v) more; the unabsorbed one expands every cached token (2 H d_c
  /// (d_nope + d_v) each), the absorbed one absorbs and lifts every query as much: they differ by
  /// the L cached tokens before the call.
  bool absorbed_prefill(std::size_t T, std::size_t L) const noexcept {
    if (LCfg::kAbsorbedOnly) return true;
    if (form_ != LatentPrefill::kAuto) return form_ == LatentPrefill::kAbsorbed;
    const double delta = 2.0 * DC - double(DN) - double(DV), expand = double(DC) * (DN + DV);
    const double pairs = double(T) * double(L) + double(T) * (double(T) + 1.0) / 2.0;
    return delta * pairs < expand * double(L);
  }

  // Every member's default is zero bytes (the all-zero object is valid).
  LatentWeights<LCfg> w_{};
  LatentPrefill form_ = LatentPrefill::kAuto;
  std::size_t length_ = 0;
  float eps_ = 0.0f;  // 0: the default 1e-6
  internal::ScaleSetting scale_{};
  internal::RopeState<LCfg> rope_{};
  Cache cache_{};
  PrefillWork pw_{};
  DecodeWork dw_{};
  internal::ExecutorSetting<LCfg::kMaxWorkers> ex_{};
};

}  // namespace microattn
