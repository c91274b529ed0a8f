// SPDX-License-Identifier: Apache-2.0
// microattn: views over caller-owned weights (which may live in flash).
#pragma once

#include <cstddef>
#include <cstdint>

#include "microattn/config.hpp"
#include "microattn/status.hpp"

namespace microattn {

/// Output columns per panel of WeightLayout::kPanel16.
constexpr std::size_t kWeightPanel = 16;

/// How a weight matrix is stored in memory. Every layout is used as it is; the library never
/// copies weights into RAM.
enum class WeightLayout : unsigned char {
  /// [in][out]: Q = x · W_q as the math is written (W_q is d_model rows of H*d_head).
  kInOut,
  /// [out][in]: PyTorch's nn.Linear.weight and nn.MultiheadAttention.in_proj_weight
  /// (W_q is H*d_head rows of d_model). Export a state_dict as it is and point at it.
  kOutIn,
  /// [out/16][in][16]: the [in][out] matrix cut into panels of 16 output columns, each panel
  /// stored row after row, so W(i, o) = w[(o / 16) * in * 16 + i * 16 + o % 16]. The fastest
  /// layout: a decode step's matrix-vector products read each panel as one sequential stream,
  /// and prefill's GEMM uses the panels in place instead of packing them (where the GEMM's
  /// panel width is 16: AVX2, AArch64 NEON). Needs d_head % 16 == 0 and, with W_O,
  /// W_O's width (Cfg::kOutDim) % 16 == 0 (Weights::check). Make it offline with
  /// `tools/export_pytorch.py --layout panel16`, or at start-up with pack_weight_panels().
  kPanel16,
};

/// True when the configuration's matrices can be stored as WeightLayout::kPanel16: every
/// head's columns (and W_O's output columns) start and end on panel boundaries.
template <class Cfg>
constexpr bool panel_layout_fits() noexcept {
  return Cfg::kDHead % kWeightPanel == 0 && (!Cfg::kHasOutProj || Cfg::kOutDim % kWeightPanel == 0);
}

/// Floats of one matrix with in_dim inputs and out_dim outputs in `layout`: in_dim * out_dim,
/// or in_dim * out_dim rounded up to whole panels for kPanel16.
constexpr std::size_t weight_floats(WeightLayout layout, std::size_t in_dim,
                                    std::size_t out_dim) noexcept {
  return layout == WeightLayout::kPanel16
             ? in_dim * ((out_dim + kWeightPanel - 1) / kWeightPanel * kWeightPanel)
             : in_dim * out_dim;
}

/// Rewrites one weight matrix (in_dim inputs, out_dim outputs) stored in `from` (kInOut or
/// kOutIn) as kPanel16 into dst, which holds weight_floats(kPanel16, in_dim, out_dim) floats
/// (columns past out_dim in the last panel are set to zero). For start-up packing into RAM;
/// weights in flash are better packed offline (tools/export_pytorch.py --layout panel16).
/// @return kOk; kNullPointer (src or dst null); kBadArgument (a dimension is 0, `from` is not
///         kInOut or kOutIn); kOverlap (dst overlaps src). Nothing is written on error.
inline Status pack_weight_panels(const float* src, WeightLayout from, std::size_t in_dim,
                                 std::size_t out_dim, float* dst) noexcept {
  if (!src || !dst) return Status::kNullPointer;
  if (in_dim == 0 || out_dim == 0 || (from != WeightLayout::kInOut && from != WeightLayout::kOutIn))
    return Status::kBadArgument;
  const std::size_t n_dst = weight_floats(WeightLayout::kPanel16, in_dim, out_dim);
  const auto s0 = reinterpret_cast<std::uintptr_t>(src), d0 = reinterpret_cast<std::uintptr_t>(dst);
  if (s0 < d0 + n_dst * sizeof(float) && d0 < s0 + in_dim * out_dim * sizeof(float))
    return Status::kOverlap;
  for (std::size_t p0 = 0; p0 < out_dim; p0 += kWeightPanel) {
    float* panel = dst + p0 * in_dim;
    for (std::size_t i = 0; i < in_dim; ++i)
      for (std::size_t j = 0; j < kWeightPanel; ++j) {
        const std::size_t o = p0 + j;
        float v = 0.0f;
        if (o < out_dim)
          v = from == WeightLayout::kInOut ? src[i * out_dim + o] : src[o * in_dim + i];
        panel[i * kWeightPanel + j] = v;
      }
  }
  return Status::kOk;
}

// clang-format off
/// Pointers to the weights of one attention layer with configuration Cfg. Shapes (floats),
/// with QD = H*d_head, KD = H_kv*d_head, OD = Cfg::kOutDim (W_O's width, default d_model):
///
/// | field | kInOut         | kOutIn (PyTorch) | kPanel16              | needed when    |
/// |-------|----------------|------------------|-----------------------|----------------|
/// | w_q   | [d_model][QD]  | [QD][d_model]    | [QD/16][d_model][16]  | always         |
/// | w_k   | [d_model][KD]  | [KD][d_model]    | [KD/16][d_model][16]  | always         |
/// | w_v   | [d_model][KD]  | [KD][d_model]    | [KD/16][d_model][16]  | always         |
/// | w_o   | [QD][OD]       | [OD][QD]         | [OD/16][QD][16]       | Cfg::kHasOutProj |
/// | b_q   | [QD]           | same             | same                  | Cfg::kBiasQ    |
/// | b_k   | [KD]           | same             | same                  | Cfg::kBiasK    |
/// | b_v   | [KD]           | same             | same                  | Cfg::kBiasV    |
/// | b_o   | [OD]           | same             | same                  | Cfg::kBiasO    |
///
// clang-format on
/// Head h owns columns (kInOut) or rows (kOutIn) h*d_head .. h*d_head + d_head - 1 of w_q
/// (panels h*d_head/16 .. for kPanel16); key/value head g likewise of w_k and w_v; query head
/// h reads key/value head h / (H/H_kv).
/// Pointers that the configuration does not need are ignored and may be null.
///
/// The layout has no default: it is the first constructor argument, because a wrong layout
/// computes a wrong layer without any error to show for it. Headers written by
/// tools/export_pytorch.py provide `<name>_weights<Cfg>()`, which sets layout and pointers and
/// checks the header's shape against Cfg at compile time.
///
/// PyTorch nn.MultiheadAttention(E, H, bias=True) (E = d_model = H*d_head), layout kOutIn:
///   w_q = in_proj_weight, w_k = in_proj_weight + E*E, w_v = in_proj_weight + 2*E*E,
///   b_q = in_proj_bias,   b_k = in_proj_bias + E,     b_v = in_proj_bias + 2*E,
///   w_o = out_proj.weight, b_o = out_proj.bias.
/// LLaMA-style separate layers, layout kOutIn: w_q = q_proj.weight, w_k = k_proj.weight,
///   w_v = v_proj.weight, w_o = o_proj.weight, no biases.
template <class Cfg>
struct Weights {
  /// Weights stored in `layout`, pointers to be set field by field.
  constexpr explicit Weights(WeightLayout layout_) noexcept : layout(layout_) {}
  /// Weights stored in `layout` with their pointers (biases and w_o may be null when Cfg does
  /// not use them).
  constexpr Weights(WeightLayout layout_, const float* q, const float* k, const float* v,
                    const float* o, const float* bq = nullptr, const float* bk = nullptr,
                    const float* bv = nullptr, const float* bo = nullptr) noexcept
      : layout(layout_), w_q(q), w_k(k), w_v(v), w_o(o), b_q(bq), b_k(bk), b_v(bv), b_o(bo) {}

  WeightLayout layout;
  const float* w_q = nullptr;
  const float* w_k = nullptr;
  const float* w_v = nullptr;
  const float* w_o = nullptr;
  const float* b_q = nullptr;
  const float* b_k = nullptr;
  const float* b_v = nullptr;
  const float* b_o = nullptr;

  /// True when every pointer the configuration needs is set.
  constexpr bool complete() const noexcept {
    if (!w_q || !w_k || !w_v) return false;
    if (Cfg::kHasOutProj && !w_o) return false;
    if ((Cfg::kBiasQ && !b_q) || (Cfg::kBiasK && !b_k) || (Cfg::kBiasV && !b_v)) return false;
    if (Cfg::kBiasO && !b_o) return false;
    return true;
  }

  /// kOk; kNullPointer when a pointer the configuration needs is null; kBadArgument when
  /// layout is not a WeightLayout value, or is kPanel16 and !panel_layout_fits<Cfg>().
  constexpr Status check() const noexcept {
    if (!complete()) return Status::kNullPointer;
    if (layout != WeightLayout::kInOut && layout != WeightLayout::kOutIn &&
        layout != WeightLayout::kPanel16)
      return Status::kBadArgument;
    if (layout == WeightLayout::kPanel16 && !panel_layout_fits<Cfg>()) return Status::kBadArgument;
    return Status::kOk;
  }

  /// Floats of each matrix in this layout (what the arrays must hold), for overlap checks.
  static constexpr std::size_t q_floats(WeightLayout l) noexcept {
    return weight_floats(l, Cfg::kDModel, Cfg::kQDim);
  }
  static constexpr std::size_t kv_floats(WeightLayout l) noexcept {
    return weight_floats(l, Cfg::kDModel, Cfg::kKvDim);
  }
  static constexpr std::size_t o_floats(WeightLayout l) noexcept {
    return weight_floats(l, Cfg::kQDim, Cfg::kOutDim);
  }
};

/// The shape a weight header from tools/export_pytorch.py was exported with. The header
/// defines a struct with these members (and the arrays); exported_weights() compares it with
/// a Config at compile time, so a header used with the wrong Config does not compile.
///   static constexpr std::size_t kDModel, kHeads, kKvHeads, kDHead, kOutDim;
///   static constexpr bool kBiasQ, kBiasK, kBiasV, kBiasO, kHasOutProj;
///   static constexpr WeightLayout kLayout;
/// Builds the Weights view of an exported header's arrays after checking its Shape against Cfg
/// (each mismatch is a compile error that names the parameter). Biases the header does not
/// have are null.
template <class Cfg, class Shape>
constexpr Weights<Cfg> exported_weights(const float* w_q, const float* w_k, const float* w_v,
                                        const float* w_o, const float* b_q = nullptr,
                                        const float* b_k = nullptr, const float* b_v = nullptr,
                                        const float* b_o = nullptr) noexcept {
  static_assert(Shape::kDModel == Cfg::kDModel,
                "microattn: the exported weights' d_model differs from the Config's d_model");
  static_assert(Shape::kHeads == Cfg::kHeads,
                "microattn: the exported weights' H (query heads) differs from the Config's H");
  static_assert(
      Shape::kKvHeads == Cfg::kKvHeads,
      "microattn: the exported weights' H_kv (key/value heads) differs from the Config's H_kv");
  static_assert(Shape::kDHead == Cfg::kDHead,
                "microattn: the exported weights' d_head differs from the Config's d_head");
  static_assert(Shape::kBiasQ == Cfg::kBiasQ && Shape::kBiasK == Cfg::kBiasK &&
                    Shape::kBiasV == Cfg::kBiasV && Shape::kBiasO == Cfg::kBiasO,
                "microattn: the exported weights' biases differ from the Config's Bias flags");
  static_assert(
      Shape::kHasOutProj == Cfg::kHasOutProj,
      "microattn: the exported weights' output projection (OutProj) differs from the Config's");
  static_assert(!Shape::kHasOutProj || Shape::kOutDim == Cfg::kOutDim,
                "microattn: the exported weights' W_O width differs from the Config's OutDim");
  static_assert(Shape::kLayout != WeightLayout::kPanel16 || panel_layout_fits<Cfg>(),
                "microattn: kPanel16 weights need d_head (and W_O's width) multiples of 16");
  return Weights<Cfg>(Shape::kLayout, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o);
}

}  // namespace microattn
