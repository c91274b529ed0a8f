// SPDX-License-Identifier: Apache-2.0
// microattn: views over caller-owned weights (which may live in flash).
#pragma once

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/config.hpp"
#include "microattn/format.hpp"
#include "microattn/internal/elem.hpp"
#include "microattn/layout.hpp"
#include "microattn/status.hpp"

namespace microattn {

/// True when the configuration's matrices can be stored as WeightLayout::kPanel16: every
/// head's columns (and W_O's output columns) start and end on panel boundaries.
template <class Cfg>
constexpr bool panel_layout_fits() noexcept {
  return Cfg::kDHead % kWeightPanel == 0 && (!Cfg::kHasOutProj || Cfg::kOutDim % kWeightPanel == 0);
}

namespace internal {
template <class E>
inline Status pack_panels(const E* src, WeightLayout from, std::size_t in_dim, std::size_t out_dim,
                          E* dst) noexcept {
  if (!src || !dst) return Status::kNullPointer;
  if (in_dim == 0 || out_dim == 0 || (from != WeightLayout::kInOut && from != WeightLayout::kOutIn))
    return Status::kBadArgument;
  const std::size_t n_dst = weight_floats(WeightLayout::kPanel16, in_dim, out_dim);
  const auto s0 = reinterpret_cast<std::uintptr_t>(src), d0 = reinterpret_cast<std::uintptr_t>(dst);
  if (s0 < d0 + n_dst * sizeof(E) && d0 < s0 + in_dim * out_dim * sizeof(E))
    return Status::kOverlap;
  for (std::size_t p0 = 0; p0 < out_dim; p0 += kWeightPanel) {
    E* panel = dst + p0 * in_dim;
    for (std::size_t i = 0; i < in_dim; ++i)
      for (std::size_t j = 0; j < kWeightPanel; ++j) {
        const std::size_t o = p0 + j;
        E v = 0;
        if (o < out_dim)
          v = from == WeightLayout::kInOut ? src[i * out_dim + o] : src[o * in_dim + i];
        panel[i * kWeightPanel + j] = v;
      }
  }
  return Status::kOk;
}
}  // namespace internal

/// Rewrites one weight matrix (in_dim inputs, out_dim outputs) stored in `from` (kInOut or
/// kOutIn) as kPanel16 into dst, which holds weight_floats(kPanel16, in_dim, out_dim) floats
/// (columns past out_dim in the last panel are set to zero). For start-up packing into RAM;
/// weights in flash are better packed offline (tools/export_pytorch.py --layout panel16).
/// @return kOk; kNullPointer (src or dst null); kBadArgument (a dimension is 0, `from` is not
///         kInOut or kOutIn); kOverlap (dst overlaps src). Nothing is written on error.
inline Status pack_weight_panels(const float* src, WeightLayout from, std::size_t in_dim,
                                 std::size_t out_dim, float* dst) noexcept {
  return internal::pack_panels(src, from, in_dim, out_dim, dst);
}
/// The same for int8 weights (WeightType::kInt8): dst holds weight_floats(kPanel16, in_dim,
/// out_dim) bytes; the scales (one per output column) do not change.
inline Status pack_weight_panels(const std::int8_t* src, WeightLayout from, std::size_t in_dim,
                                 std::size_t out_dim, std::int8_t* dst) noexcept {
  return internal::pack_panels(src, from, in_dim, out_dim, dst);
}

/// What quantize_int8() measured: the error its rounding introduced into one matrix.
struct QuantError {
  float max_abs = 0.0f;  ///< largest |w - scale[o] * q| over the matrix
  float rms = 0.0f;      ///< root mean square of w - scale[o] * q
  float rel = 0.0f;      ///< ||W - W_q||_F / ||W||_F (0 for an all-zero matrix)
};

/// Scale of a column whose largest |w| is amax: amax / 127 in float; a subnormal one a float up
/// if 127 * scale falls short of amax (it has few bits: the largest weight would clamp by up to
/// 63 scales; a normal one falls short by at most 64 ulps, within the rounding bound), and one
/// float down if 127 * scale is not a finite float (dequantising the largest weight would
/// overflow). The products are compared in double, where they are exact.
inline float column_scale(float amax) noexcept {
  float s = amax / internal::opaque_divisor(127.0f);
  const auto step = [](float v, int d) {
    std::uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    u = d > 0 ? u + 1 : u - 1;
    std::memcpy(&v, &u, sizeof u);
    return v;
  };
  if (s < FLT_MIN && static_cast<double>(s) * 127.0 < static_cast<double>(amax)) s = step(s, 1);
  if (static_cast<double>(s) * 127.0 > static_cast<double>(FLT_MAX)) s = step(s, -1);
  return s;
}

namespace internal {
/// max |w| over inputs [i0, i1) of column o, compared as bits (the order of non-negative
/// floats): a vectorised float max flushes subnormals on some vector units (Helium under
/// -Ofast) and lost subnormal columns.
template <class At>
inline float absmax_bits(const At& at, std::size_t i0, std::size_t i1, std::size_t o) noexcept {
  std::uint32_t abits = 0;
  for (std::size_t i = i0; i < i1; ++i) {
    float w = at(i, o);
    std::uint32_t u;
    std::memcpy(&u, &w, sizeof u);
    u &= 0x7fffffffu;
    abits = u > abits ? u : abits;
  }
  float amax;
  std::memcpy(&amax, &abits, sizeof amax);
  return amax;
}
/// Index of element (i, o) of a matrix (in_dim inputs, out_dim outputs) stored in `to`.
inline std::size_t element_index(WeightLayout to, std::size_t i, std::size_t o, std::size_t in_dim,
                                 std::size_t out_dim) noexcept {
  if (to == WeightLayout::kInOut) return i * out_dim + o;
  if (to == WeightLayout::kOutIn) return o * in_dim + i;
  return (o / kWeightPanel) * in_dim * kWeightPanel + i * kWeightPanel + o % kWeightPanel;
}
/// The checks of quantize_int8 / quantize_int8_groups (nothing is read past them on error).
inline Status check_quantize(const float* src, WeightLayout from, std::size_t in_dim,
                             std::size_t out_dim, WeightLayout to, const std::int8_t* dst,
                             const float* scales, std::size_t n_scales) noexcept {
  if (!src || !dst || !scales) return Status::kNullPointer;
  if (in_dim == 0 || out_dim == 0 ||
      (from != WeightLayout::kInOut && from != WeightLayout::kOutIn) ||
      (to != WeightLayout::kInOut && to != WeightLayout::kOutIn && to != WeightLayout::kPanel16))
    return Status::kBadArgument;
  if (in_dim > SIZE_MAX / sizeof(float) / out_dim) return Status::kBadArgument;
  const std::size_t n_src = in_dim * out_dim * sizeof(float);
  const std::size_t n_dst = weight_floats(to, in_dim, out_dim), n_sc = n_scales * sizeof(float);
  if (overlaps(dst, n_dst, src, n_src) || overlaps(scales, n_sc, src, n_src) ||
      overlaps(dst, n_dst, scales, n_sc))
    return Status::kOverlap;
  for (std::size_t k = 0; k < in_dim * out_dim; ++k)
    if (!finite_bits(src[k])) return Status::kBadArgument;
  return Status::kOk;
}
/// quantize_int8 with a scale per column and group of `group` inputs (group >= in_dim: one per
/// column), scale (g, o) at scales[scale_at(g, o)].
template <class ScaleAt>
inline void quantize_groups(const float* src, WeightLayout from, std::size_t in_dim,
                            std::size_t out_dim, std::size_t group, WeightLayout to,
                            std::int8_t* dst, float* scales, const ScaleAt& scale_at,
                            QuantError* err) noexcept {
  const auto at = [&](std::size_t i, std::size_t o) {
    return from == WeightLayout::kInOut ? src[i * out_dim + o] : src[o * in_dim + i];
  };
  double e2 = 0.0, w2 = 0.0;
  float emax = 0.0f;
  for (std::size_t o = 0; o < out_dim; ++o)
    for (std::size_t i0 = 0, g = 0; i0 < in_dim; i0 += group, ++g) {
      const std::size_t i1 = min_size(i0 + group, in_dim);
      const float s = column_scale(absmax_bits(at, i0, i1, o));
      scales[scale_at(g, o)] = s;
      for (std::size_t i = i0; i < i1; ++i) {
        const float w = at(i, o);
        const std::int8_t q = quantize_value(w, s);
        dst[element_index(to, i, o, in_dim, out_dim)] = q;
        const float e = w - s * static_cast<float>(q);
        const float ae = e < 0.0f ? -e : e;
        emax = ae > emax ? ae : emax;
        e2 += static_cast<double>(e) * e;
        w2 += static_cast<double>(w) * w;
      }
    }
  if (to == WeightLayout::kPanel16)  // zero the padding columns of the last panel
    for (std::size_t o = out_dim; o % kWeightPanel != 0; ++o)
      for (std::size_t i = 0; i < in_dim; ++i) dst[element_index(to, i, o, in_dim, out_dim)] = 0;
  if (err) {
    err->max_abs = emax;
    err->rms = static_cast<float>(std::sqrt(e2 / static_cast<double>(in_dim * out_dim)));
    err->rel = w2 > 0.0 ? static_cast<float>(std::sqrt(e2 / w2)) : 0.0f;
  }
}
}  // namespace internal

/// Quantises one fp32 weight matrix (in_dim inputs, out_dim outputs, stored in `from`: kInOut
/// or kOutIn) to int8, symmetric, per output column: scale[o] = column_scale(max_i |W(i, o)|)
/// (max / 127 but at the ends of the float range), q(i, o) = quantize_value(W(i, o), scale[o]),
/// so W(i, o) ~ scale[o] * q(i, o) with |error| <= scale[o] * (1/2 + 2^-17) (the 2^-17: the
/// rounding of w / scale), and 127 * scale[o] a finite float, for every finite weight
/// (subnormal columns included; kernels on flush-to-zero hardware, armv7 NEON, read subnormal
/// products as 0). An all-zero column gets scale 0 and q 0 (no NaN).
/// dst holds weight_floats(to, in_dim, out_dim) int8 values in layout `to` (any layout;
/// kPanel16 pads the last panel with zeros), scales out_dim floats. err (may be null) receives
/// the error the rounding introduced. No heap; runs on the host (the exporter's twin) or on a
/// device at start-up.
/// @return kOk; kNullPointer (src, dst or scales null); kBadArgument (a dimension is 0, a layout
///         that is not a WeightLayout value or `from` kPanel16, a weight that is not finite);
///         kOverlap (dst, scales and src overlap). Nothing is written on error.
inline Status quantize_int8(const float* src, WeightLayout from, std::size_t in_dim,
                            std::size_t out_dim, WeightLayout to, std::int8_t* dst, float* scales,
                            QuantError* err = nullptr) noexcept {
  const Status st = internal::check_quantize(src, from, in_dim, out_dim, to, dst, scales, out_dim);
  if (st != Status::kOk) return st;
  internal::quantize_groups(
      src, from, in_dim, out_dim, in_dim, to, dst, scales,
      [](std::size_t, std::size_t o) { return o; }, err);
  return Status::kOk;
}

/// quantize_int8 with a scale per output column and group of `group` inputs (32, 64 or 128:
/// WeightType::kInt8G32 / G64 / G128): each group's scale is column_scale of its max |w|, the
/// values and the error bound as quantize_int8's per group (a last group of in_dim % group
/// inputs has its own scale). scales holds out_dim * ceil(in_dim / group) floats, stored like the
/// rows ([out][groups] for `to` kOutIn, [groups][out] otherwise; GroupScales), as the kernels
/// and tools/export_pytorch.py --quant int8-g32 have them.
/// @return as quantize_int8, and kBadArgument for another group size.
inline Status quantize_int8_groups(const float* src, WeightLayout from, std::size_t in_dim,
                                   std::size_t out_dim, std::size_t group, WeightLayout to,
                                   std::int8_t* dst, float* scales,
                                   QuantError* err = nullptr) noexcept {
  if (group != 32 && group != 64 && group != 128) return Status::kBadArgument;
  const std::size_t groups = in_dim / group + (in_dim % group != 0);
  if (groups != 0 && out_dim > SIZE_MAX / sizeof(float) / groups) return Status::kBadArgument;
  const Status st =
      internal::check_quantize(src, from, in_dim, out_dim, to, dst, scales, groups * out_dim);
  if (st != Status::kOk) return st;
  const bool rows = to == WeightLayout::kOutIn;
  internal::quantize_groups(
      src, from, in_dim, out_dim, group, to, dst, scales,
      [&](std::size_t g, std::size_t o) { return rows ? o * groups + g : g * out_dim + o; }, err);
  return Status::kOk;
}

// clang-format off
/// Pointers to the weights of one attention layer with configuration Cfg. Shapes (elements:
/// floats, or int8_t with WeightType::kInt8), with QD = H*d_head, KD = H_kv*d_head,
/// OD = Cfg::kOutDim (W_O's width, default d_model):
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
/// | s_q   | [QD] floats    | same             | same                  | int8 weights   |
/// | s_k   | [KD] floats    | same             | same                  | int8 weights   |
/// | s_v   | [KD] floats    | same             | same                  | int8 weights   |
/// | s_o   | [OD] floats    | same             | same                  | int8 W_O       |
///
/// Group-wise int8 (kInt8G32 / G64 / G128, G inputs per group, n_g = ceil(in / G) groups):
/// s_x holds out * n_g floats, [n_g][out] for kInOut and kPanel16, [out][n_g] for kOutIn
/// (GroupScales; quantize_int8_groups() writes them so).
///
// clang-format on
/// Head h owns columns (kInOut) or rows (kOutIn) h*d_head .. h*d_head + d_head - 1 of w_q
/// (panels h*d_head/16 .. for kPanel16); key/value head g likewise of w_k and w_v; query head
/// h reads key/value head h / (H/H_kv).
/// Pointers that the configuration does not need are ignored and may be null.
///
/// int8 weights (Config option WeightType::kInt8): the matrices are `const int8_t` arrays in
/// the same layouts (kPanel16 included: a panel row is 16 bytes), and s_x[o] is the fp32 scale
/// of output column o: W(i, o) = s_x[o] * w_x(i, o). Make them with quantize_int8() or
/// `tools/export_pytorch.py --quant int8`. The layer computes what fp32 weights equal to the
/// dequantised values would give (up to float rounding); biases stay fp32.
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
  /// The matrices' storage format (format.hpp) and the C++ type of their arrays: float, int8_t
  /// with WeightType::kInt8, f16 / bf16 with kF16 / kBF16.
  using Format = typename Cfg::WeightFormat;
  using Elem = typename Cfg::WeightElem;
  static constexpr bool kInt8 = Cfg::kInt8Weights;

  /// Weights stored in `layout`, pointers to be set field by field.
  constexpr explicit Weights(WeightLayout layout_) noexcept : layout(layout_) {}
  /// Unscaled weights (fp32, fp16, bf16) stored in `layout` with their pointers (biases and
  /// w_o may be null when Cfg does not use them).
  template <
      class E = Elem,
      std::enable_if_t<!FormatTraits<Format>::kScaled && std::is_same<E, Elem>::value, int> = 0>
  constexpr Weights(WeightLayout layout_, const E* q, const E* k, const E* v, const E* o,
                    const float* bq = nullptr, const float* bk = nullptr, const float* bv = nullptr,
                    const float* bo = nullptr) noexcept
      : layout(layout_), w_q(q), w_k(k), w_v(v), w_o(o), b_q(bq), b_k(bk), b_v(bv), b_o(bo) {}
  /// int8 weights stored in `layout`, each matrix followed by its per-output-column scales.
  template <class E = Elem, std::enable_if_t<std::is_same<E, std::int8_t>::value, int> = 0>
  constexpr Weights(WeightLayout layout_, const std::int8_t* q, const float* sq,
                    const std::int8_t* k, const float* sk, const std::int8_t* v, const float* sv,
                    const std::int8_t* o, const float* so, const float* bq = nullptr,
                    const float* bk = nullptr, const float* bv = nullptr,
                    const float* bo = nullptr) noexcept
      : layout(layout_),
        w_q(q),
        w_k(k),
        w_v(v),
        w_o(o),
        b_q(bq),
        b_k(bk),
        b_v(bv),
        b_o(bo),
        s_q(sq),
        s_k(sk),
        s_v(sv),
        s_o(so) {}

  WeightLayout layout;
  const Elem* w_q = nullptr;
  const Elem* w_k = nullptr;
  const Elem* w_v = nullptr;
  const Elem* w_o = nullptr;
  const float* b_q = nullptr;
  const float* b_k = nullptr;
  const float* b_v = nullptr;
  const float* b_o = nullptr;
  /// Per-output-column scales of int8 matrices (ignored for fp32 weights).
  const float* s_q = nullptr;
  const float* s_k = nullptr;
  const float* s_v = nullptr;
  const float* s_o = nullptr;

  /// Each matrix as one record (its elements and its scales).
  constexpr Matrix<Format> q() const noexcept { return {w_q, s_q}; }
  constexpr Matrix<Format> k() const noexcept { return {w_k, s_k}; }
  constexpr Matrix<Format> v() const noexcept { return {w_v, s_v}; }
  constexpr Matrix<Format> o() const noexcept { return {w_o, s_o}; }

  /// True when every pointer the configuration needs is set.
  [[nodiscard]] constexpr bool complete() const noexcept {
    if (!q().complete() || !k().complete() || !v().complete()) return false;
    if (Cfg::kHasOutProj && !o().complete()) return false;
    if ((Cfg::kBiasQ && !b_q) || (Cfg::kBiasK && !b_k) || (Cfg::kBiasV && !b_v)) return false;
    if (Cfg::kBiasO && !b_o) return false;
    return true;
  }

  /// kOk; kNullPointer when a pointer the configuration needs is null (a scale array of int8
  /// weights included); kBadArgument when layout is not a WeightLayout value, or is kPanel16
  /// and !panel_layout_fits<Cfg>().
  constexpr Status check() const noexcept {
    if (!complete()) return Status::kNullPointer;
    if (layout != WeightLayout::kInOut && layout != WeightLayout::kOutIn &&
        layout != WeightLayout::kPanel16)
      return Status::kBadArgument;
    if (layout == WeightLayout::kPanel16 && !panel_layout_fits<Cfg>()) return Status::kBadArgument;
    return Status::kOk;
  }

  /// Elements of each matrix in this layout (what the arrays must hold), for overlap checks.
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
///   static constexpr WeightType kWeightType;   (headers from before int8 support: kF32)
/// Builds the Weights view of an exported header's arrays after checking its Shape against Cfg
/// (each mismatch is a compile error that names the parameter). Biases the header does not
/// have are null.
namespace internal {
template <class Shape, class = void>
struct ShapeWeightType {
  static constexpr WeightType value = WeightType::kF32;
};
template <class Shape>
struct ShapeWeightType<Shape, std::void_t<decltype(Shape::kWeightType)>> {
  static constexpr WeightType value = Shape::kWeightType;
};
template <class Cfg, class Shape>
constexpr void check_exported_shape() noexcept {
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
  static_assert(ShapeWeightType<Shape>::value == Cfg::kWeightType,
                "microattn: the exported weights' WeightType (fp32 / int8) differs from the "
                "Config's WeightType");
}
}  // namespace internal

template <class Cfg, class Shape>
constexpr Weights<Cfg> exported_weights(const float* w_q, const float* w_k, const float* w_v,
                                        const float* w_o, const float* b_q = nullptr,
                                        const float* b_k = nullptr, const float* b_v = nullptr,
                                        const float* b_o = nullptr) noexcept {
  internal::check_exported_shape<Cfg, Shape>();
  return Weights<Cfg>(Shape::kLayout, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o);
}
/// The same for an int8 header (each matrix followed by its scales).
template <class Cfg, class Shape>
constexpr Weights<Cfg> exported_weights(const std::int8_t* w_q, const float* s_q,
                                        const std::int8_t* w_k, const float* s_k,
                                        const std::int8_t* w_v, const float* s_v,
                                        const std::int8_t* w_o, const float* s_o,
                                        const float* b_q = nullptr, const float* b_k = nullptr,
                                        const float* b_v = nullptr,
                                        const float* b_o = nullptr) noexcept {
  internal::check_exported_shape<Cfg, Shape>();
  return Weights<Cfg>(Shape::kLayout, w_q, s_q, w_k, s_k, w_v, s_v, w_o, s_o, b_q, b_k, b_v, b_o);
}

}  // namespace microattn
