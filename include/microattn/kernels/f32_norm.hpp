// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: normalisation of rows (RMSNorm, LayerNorm).
#pragma once

#include <cmath>
#include <cstddef>

#include "microattn/internal/vec.hpp"

namespace microattn {
namespace kernels {

namespace detail {
/// A row whose squares overflow float (|x| above about 1.8e19 / sqrt(d)) is normalised as
/// x * 2^-80 instead: exact for every value that matters beside its largest, and the same
/// normalised row (normalisation does not depend on a common factor), where x^2 gives inf.
constexpr float kNormDown = 0x1p-80f;
/// eps in the units of x * kNormDown squared (eps * 2^-160, in two exact steps).
inline float scaled_eps(float eps) noexcept {
  using V = internal::Vec<ScalarArch>;
  return V::opaque(eps * kNormDown) * kNormDown;
}
}  // namespace detail

/// RMSNorm of n rows of d floats: y_i = x_i / sqrt(mean(x^2) + eps) * g_i, the mean of squares
/// summed in fp32 as PyTorch's RMSNorm modules do (LLaMA's, DeepSeek's: the input cast to fp32
/// first); rows too large to square are scaled down first (detail::kNormDown). Row strides
/// ldx, ldy; y may be x (in place). d >= 1, eps > 0.
inline void f32_rms_norm_rows(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                              std::size_t n, std::size_t d, const float* g, float eps) noexcept {
  using V = internal::Vec<ScalarArch>;
  for (std::size_t t = 0; t < n; ++t) {
    const float* row = x + t * ldx;
    float* out = y + t * ldy;
    float ss = 0.0f;
    for (std::size_t i = 0; i < d; ++i) ss += row[i] * row[i];
    if (internal::finite_bits(ss)) {
      const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
      for (std::size_t i = 0; i < d; ++i) out[i] = row[i] * inv * g[i];
      continue;
    }
    // x^2 overflowed (or the row holds inf or NaN, which stays NaN or 0 as before).
    // Opaque scaled values: -ffast-math would otherwise square x before scaling it.
    constexpr float k = detail::kNormDown;
    ss = 0.0f;
    for (std::size_t i = 0; i < d; ++i) {
      const float v = V::opaque(row[i] * k);
      ss += v * v;
    }
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + detail::scaled_eps(eps));
    for (std::size_t i = 0; i < d; ++i) out[i] = V::opaque(row[i] * k) * inv * g[i];
  }
}
/// The same in place (row stride ld).
inline void f32_rms_norm_rows(float* x, std::size_t ld, std::size_t n, std::size_t d,
                              const float* g, float eps) noexcept {
  f32_rms_norm_rows(x, ld, x, ld, n, d, g, eps);
}

namespace detail {
/// One LayerNorm row of the values row[i] * k (k = 1, or kNormDown for a row whose moments
/// overflow); false when they overflowed (nothing written).
inline bool layer_norm_row(const float* row, float* out, std::size_t d, const float* g,
                           const float* b, float eps, float k, bool last_try) noexcept {
  using V = internal::Vec<ScalarArch>;
  // x * k, opaque when scaled: -ffast-math would otherwise move k past a square or a sum.
  const auto x = [&](std::size_t i) { return k == 1.0f ? row[i] : V::opaque(row[i] * k); };
  float sum = 0.0f;
  for (std::size_t i = 0; i < d; ++i) sum += x(i);
  const float mean = sum / static_cast<float>(d);
  float ss = 0.0f;
  for (std::size_t i = 0; i < d; ++i) ss += (x(i) - mean) * (x(i) - mean);
  if (!last_try && !internal::finite_bits(ss)) return false;
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
  for (std::size_t i = 0; i < d; ++i) {
    const float c = x(i) - mean;
    out[i] = b ? c * inv * g[i] + b[i] : c * inv * g[i];
  }
  return true;
}
}  // namespace detail

/// LayerNorm of n rows of d floats: y_i = (x_i - mean) / sqrt(var + eps) * g_i (+ b_i), the
/// biased variance of the row, both moments in fp32 over two passes (PyTorch's nn.LayerNorm
/// computes them in fp32 too); rows whose moments overflow are scaled down first
/// (detail::kNormDown). b may be null; y may be x. d >= 1, eps > 0.
inline void f32_layer_norm_rows(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                std::size_t n, std::size_t d, const float* g, const float* b,
                                float eps) noexcept {
  for (std::size_t t = 0; t < n; ++t) {
    const float* row = x + t * ldx;
    float* out = y + t * ldy;
    if (!detail::layer_norm_row(row, out, d, g, b, eps, 1.0f, false))
      (void)detail::layer_norm_row(row, out, d, g, b, detail::scaled_eps(eps), detail::kNormDown,
                                   true);
  }
}

}  // namespace kernels
}  // namespace microattn
