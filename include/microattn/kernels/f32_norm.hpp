// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: normalisation of rows (RMSNorm).
#pragma once

#include <cmath>
#include <cstddef>

namespace microattn {
namespace kernels {

/// RMSNorm of n rows of d floats in place (row stride ld): x_i = x_i / sqrt(mean(x^2) + eps) *
/// g_i, the mean of squares summed in fp32 as PyTorch's RMSNorm modules do (LLaMA's,
/// DeepSeek's: the input cast to fp32 first). d >= 1, eps > 0.
inline void f32_rms_norm_rows(float* x, std::size_t ld, std::size_t n, std::size_t d,
                              const float* g, float eps) noexcept {
  for (std::size_t t = 0; t < n; ++t) {
    float* row = x + t * ld;
    float ss = 0.0f;
    for (std::size_t i = 0; i < d; ++i) ss += row[i] * row[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
    for (std::size_t i = 0; i < d; ++i) row[i] = row[i] * inv * g[i];
  }
}

}  // namespace kernels
}  // namespace microattn
