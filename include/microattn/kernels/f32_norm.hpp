// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: normalisation of rows (RMSNorm, LayerNorm).
#pragma once

#include <cmath>
#include <cstddef>

namespace microattn {
namespace kernels {

/// RMSNorm of n rows of d floats: y_i = x_i / sqrt(mean(x^2) + eps) * g_i, the mean of squares
/// summed in fp32 as PyTorch's RMSNorm modules do (LLaMA's, DeepSeek's: the input cast to fp32
/// first). Row strides ldx, ldy; y may be x (in place). d >= 1, eps > 0.
inline void f32_rms_norm_rows(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                              std::size_t n, std::size_t d, const float* g, float eps) noexcept {
  for (std::size_t t = 0; t < n; ++t) {
    const float* row = x + t * ldx;
    float* out = y + t * ldy;
    float ss = 0.0f;
    for (std::size_t i = 0; i < d; ++i) ss += row[i] * row[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
    for (std::size_t i = 0; i < d; ++i) out[i] = row[i] * inv * g[i];
  }
}
/// The same in place (row stride ld).
inline void f32_rms_norm_rows(float* x, std::size_t ld, std::size_t n, std::size_t d,
                              const float* g, float eps) noexcept {
  f32_rms_norm_rows(x, ld, x, ld, n, d, g, eps);
}

/// LayerNorm of n rows of d floats: y_i = (x_i - mean) / sqrt(var + eps) * g_i (+ b_i), the
/// biased variance of the row, both moments in fp32 over two passes (PyTorch's nn.LayerNorm
/// computes them in fp32 too). b may be null; y may be x. d >= 1, eps > 0.
inline void f32_layer_norm_rows(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                std::size_t n, std::size_t d, const float* g, const float* b,
                                float eps) noexcept {
  for (std::size_t t = 0; t < n; ++t) {
    const float* row = x + t * ldx;
    float* out = y + t * ldy;
    float sum = 0.0f;
    for (std::size_t i = 0; i < d; ++i) sum += row[i];
    const float mean = sum / static_cast<float>(d);
    float ss = 0.0f;
    for (std::size_t i = 0; i < d; ++i) ss += (row[i] - mean) * (row[i] - mean);
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
    if (b) {
      for (std::size_t i = 0; i < d; ++i) out[i] = (row[i] - mean) * inv * g[i] + b[i];
    } else {
      for (std::size_t i = 0; i < d; ++i) out[i] = (row[i] - mean) * inv * g[i];
    }
  }
}

}  // namespace kernels
}  // namespace microattn
