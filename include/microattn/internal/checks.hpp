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

// (internal::overlaps, the test of two byte ranges, is in format.hpp: the views use it.)

/// True when [y, y + y_bytes) overlaps one of the weight or bias arrays Cfg reads through w
/// (sized by w.layout). Writing y there would change the weights in the middle of the call.
template <class Cfg>
bool overlaps_weights(const Weights<Cfg>& w, const void* y, std::size_t y_bytes) noexcept {
  constexpr std::size_t F = sizeof(float), D = Cfg::kDModel;
  const WeightLayout l = w.layout;
  if (w.q().overlaps(y, y_bytes, l, D, Cfg::kQDim) ||
      w.k().overlaps(y, y_bytes, l, D, Cfg::kKvDim) ||
      w.v().overlaps(y, y_bytes, l, D, Cfg::kKvDim))
    return true;
  if (Cfg::kHasOutProj && w.o().overlaps(y, y_bytes, l, Cfg::kQDim, Cfg::kOutDim)) return true;
  return (Cfg::kBiasQ && overlaps(y, y_bytes, w.b_q, Cfg::kQDim * F)) ||
         (Cfg::kBiasK && overlaps(y, y_bytes, w.b_k, Cfg::kKvDim * F)) ||
         (Cfg::kBiasV && overlaps(y, y_bytes, w.b_v, Cfg::kKvDim * F)) ||
         (Cfg::kBiasO && overlaps(y, y_bytes, w.b_o, Cfg::kOutDim * F));
}

}  // namespace internal
}  // namespace microattn
