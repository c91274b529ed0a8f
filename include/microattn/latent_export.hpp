// SPDX-License-Identifier: Apache-2.0
// microattn: what a latent attention header written by tools/export_pytorch.py calls: the
// compile-time check of its shape against a LatentConfig, and its RoPE settings.
#pragma once

#include <cstddef>
#include <cstdint>

#include "microattn/latent_attention.hpp"
#include "microattn/rope_config.hpp"
#include "microattn/weights.hpp"

namespace microattn {

/// An exported latent attention header's `name_shape` struct has these members:
///   static constexpr std::size_t kDModel, kHeads, kDLatent, kDRope, kDNope, kDV, kDQLatent;
///   static constexpr WeightLayout kLayout;   (kOutIn; kInOut and fitting kPanel16 also accepted)
///   static constexpr WeightType kWeightType; (kF32, or kInt8: int8 matrices + scales)
///   static constexpr float kScale, kRopeBase, kRmsEps;
///   static constexpr RopePairing kRopePairing;
namespace internal {
template <class LCfg, class Shape>
constexpr void check_exported_latent_shape() noexcept {
  static_assert(Shape::kDModel == LCfg::kDModel,
                "microattn: the exported weights' d_model differs from the LatentConfig's");
  static_assert(Shape::kHeads == LCfg::kHeads,
                "microattn: the exported weights' H (heads) differs from the LatentConfig's");
  static_assert(Shape::kDLatent == LCfg::kDLatent,
                "microattn: the exported weights' d_c (kv_lora_rank) differs from the "
                "LatentConfig's");
  static_assert(Shape::kDRope == LCfg::kDRope,
                "microattn: the exported weights' d_R (qk_rope_head_dim) differs from the "
                "LatentConfig's");
  static_assert(Shape::kDNope == LCfg::kDNope,
                "microattn: the exported weights' d_nope (qk_nope_head_dim) differs from the "
                "LatentConfig's");
  static_assert(Shape::kDV == LCfg::kDV,
                "microattn: the exported weights' d_v (v_head_dim) differs from the "
                "LatentConfig's");
  static_assert(Shape::kDQLatent == LCfg::kDQLatent,
                "microattn: the exported weights' query latent (QueryLatent{d_cq}, q_lora_rank; "
                "0: none) differs from the LatentConfig's");
  static_assert(Shape::kLayout == WeightLayout::kInOut || Shape::kLayout == WeightLayout::kOutIn ||
                    (Shape::kLayout == WeightLayout::kPanel16 && LatentWeights<LCfg>::panel_fits()),
                "microattn: the exported weights' layout is not one LatentWeights take (kInOut, "
                "kOutIn, or kPanel16 with every width a whole panel)");
  static_assert((Shape::kWeightType == WeightType::kInt8) == LCfg::kInt8Weights,
                "microattn: the exported weights' WeightType (fp32 / int8) differs from the "
                "LatentConfig's (WeightType::kInt8 for a header written with --quant int8)");
}
}  // namespace internal

/// The LatentWeights view of an exported header's arrays after checking its Shape against LCfg
/// (each mismatch is a compile error that names the parameter). w_q without a query latent,
/// w_dq, g_q and w_uq with one; the others null.
template <class LCfg, class Shape>
constexpr LatentWeights<LCfg> exported_latent_weights(const float* w_q, const float* w_dq,
                                                      const float* g_q, const float* w_uq,
                                                      const float* w_dkv, const float* g_kv,
                                                      const float* w_ukv,
                                                      const float* w_o) noexcept {
  internal::check_exported_latent_shape<LCfg, Shape>();
  LatentWeights<LCfg> w;
  w.layout = Shape::kLayout;
  w.w_q = w_q, w.w_dq = w_dq, w.g_q = g_q, w.w_uq = w_uq;
  w.w_dkv = w_dkv, w.g_kv = g_kv, w.w_ukv = w_ukv, w.w_o = w_o;
  return w;
}

/// The same for an int8 header (--quant int8; LCfg with WeightType::kInt8): each matrix
/// followed by its per-output-column scales, the RMSNorm weights fp32.
template <class LCfg, class Shape>
constexpr LatentWeights<LCfg> exported_latent_weights(
    const std::int8_t* w_q, const float* s_q, const std::int8_t* w_dq, const float* s_dq,
    const float* g_q, const std::int8_t* w_uq, const float* s_uq, const std::int8_t* w_dkv,
    const float* s_dkv, const float* g_kv, const std::int8_t* w_ukv, const float* s_ukv,
    const std::int8_t* w_o, const float* s_o) noexcept {
  internal::check_exported_latent_shape<LCfg, Shape>();
  LatentWeights<LCfg> w;
  w.layout = Shape::kLayout;
  w.w_q = w_q, w.s_q = s_q, w.w_dq = w_dq, w.s_dq = s_dq, w.g_q = g_q, w.w_uq = w_uq;
  w.s_uq = s_uq, w.w_dkv = w_dkv, w.s_dkv = s_dkv, w.g_kv = g_kv, w.w_ukv = w_ukv;
  w.s_ukv = s_ukv, w.w_o = w_o, w.s_o = s_o;
  return w;
}

/// The exported module's RoPE for LatentAttention::set_rope: base Shape::kRopeBase, pairing
/// Shape::kRopePairing, every one of the d_R rotated dimensions, positions from 0.
template <class Shape>
constexpr RopeConfig exported_latent_rope() noexcept {
  RopeConfig r;
  r.enabled = true;
  r.base = Shape::kRopeBase;
  r.pairing = Shape::kRopePairing;
  return r;
}

}  // namespace microattn
