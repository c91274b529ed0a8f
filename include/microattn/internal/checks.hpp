// SPDX-License-Identifier: Apache-2.0
// microattn internal: the argument checks of the public entry points. They look at bits and
// integers only, so -ffast-math (-ffinite-math-only folds std::isfinite to true) cannot remove
// them, and they do all their arithmetic without overflow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/kernels/f32_exp.hpp"
#include "microattn/weights.hpp"

namespace microattn {
namespace internal {

/// A softmax scale the kernels can use: finite, and finite again once multiplied by log2(e)
/// (the kernels fold scale * log2 e into Q; |scale| > FLT_MAX / log2 e would make it inf).
inline bool scale_ok(float scale) noexcept {
  return finite_bits(scale) && finite_bits(scale * kernels::kLog2e);
}

/// Bytes spanned by `rows` rows of `width` floats with row stride `ld` (ld >= width, rows >= 1),
/// starting at p; false when that number, or p plus it, does not fit the address space.
inline bool span_bytes(const void* p, std::size_t rows, std::size_t ld, std::size_t width,
                       std::size_t* bytes) noexcept {
  constexpr std::size_t kMaxFloats = SIZE_MAX / sizeof(float);
  if (rows > 1 && ld > (kMaxFloats - width) / (rows - 1)) return false;
  const std::size_t n = ((rows - 1) * ld + width) * sizeof(float);
  if (reinterpret_cast<std::uintptr_t>(p) > UINTPTR_MAX - n) return false;
  *bytes = n;
  return true;
}

/// True when [a, a + a_bytes) and [b, b + b_bytes) share a byte (both ranges must be valid
/// address ranges: span_bytes() says so).
inline bool overlaps(const void* a, std::size_t a_bytes, const void* b,
                     std::size_t b_bytes) noexcept {
  const auto pa = reinterpret_cast<std::uintptr_t>(a);
  const auto pb = reinterpret_cast<std::uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

/// True when [y, y + y_bytes) overlaps one of the weight or bias arrays Cfg reads through w
/// (sized by w.layout). Writing y there would change the weights in the middle of the call.
template <class Cfg>
bool overlaps_weights(const Weights<Cfg>& w, const void* y, std::size_t y_bytes) noexcept {
  constexpr std::size_t F = sizeof(float), E = sizeof(typename Cfg::WeightElem);
  const WeightLayout l = w.layout;
  if (overlaps(y, y_bytes, w.w_q, Weights<Cfg>::q_floats(l) * E) ||
      overlaps(y, y_bytes, w.w_k, Weights<Cfg>::kv_floats(l) * E) ||
      overlaps(y, y_bytes, w.w_v, Weights<Cfg>::kv_floats(l) * E))
    return true;
  if (Cfg::kHasOutProj && overlaps(y, y_bytes, w.w_o, Weights<Cfg>::o_floats(l) * E)) return true;
  if (Cfg::kInt8Weights && (overlaps(y, y_bytes, w.s_q, Cfg::kQDim * F) ||
                            overlaps(y, y_bytes, w.s_k, Cfg::kKvDim * F) ||
                            overlaps(y, y_bytes, w.s_v, Cfg::kKvDim * F) ||
                            (Cfg::kHasOutProj && overlaps(y, y_bytes, w.s_o, Cfg::kOutDim * F))))
    return true;
  return (Cfg::kBiasQ && overlaps(y, y_bytes, w.b_q, Cfg::kQDim * F)) ||
         (Cfg::kBiasK && overlaps(y, y_bytes, w.b_k, Cfg::kKvDim * F)) ||
         (Cfg::kBiasV && overlaps(y, y_bytes, w.b_v, Cfg::kKvDim * F)) ||
         (Cfg::kBiasO && overlaps(y, y_bytes, w.b_o, Cfg::kOutDim * F));
}

}  // namespace internal
}  // namespace microattn
