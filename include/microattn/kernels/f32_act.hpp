// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: the activations of an MLP, row by row. They cost one call per hidden
// value against d_model multiply-adds for it, so they are plain scalar code on every arch.
#pragma once

#include <cmath>
#include <cstddef>

#include "microattn/kernels/f32_exp.hpp"

namespace microattn {

/// The MLP's nonlinearity: gated (h = act(x W_gate) * (x W_up), LLaMA's SwiGLU, GeGLU) or not
/// (h = act(x W_up): BERT's and ViT's GELU, GPT-2's tanh GELU, the original ReLU).
enum class Activation : unsigned char {
  kSwiGlu = 0,    ///< silu(gate) * up, silu(z) = z / (1 + exp(-z))
  kGeGlu = 1,     ///< gelu(gate) * up (erf GELU)
  kGelu = 2,      ///< gelu(z) = z / 2 * (1 + erf(z / sqrt 2)), PyTorch's default GELU
  kGeluTanh = 3,  ///< z / 2 * (1 + tanh(sqrt(2 / pi) (z + 0.044715 z^3))), approximate='tanh'
  kRelu = 4,      ///< max(z, 0)
};
constexpr bool is_gated(Activation a) noexcept {
  return a == Activation::kSwiGlu || a == Activation::kGeGlu;
}

namespace kernels {

inline float f32_silu(float z) noexcept { return z / (1.0f + f32_exp_scalar(-z)); }
inline float f32_gelu(float z) noexcept {
  return 0.5f * z * (1.0f + std::erf(z * 0.70710678118654752f));
}
inline float f32_gelu_tanh(float z) noexcept {
  return 0.5f * z * (1.0f + std::tanh(0.79788456080286536f * (z + 0.044715f * z * z * z)));
}

/// h[i] = act(h[i]) (* u[i] when gated) for i < n. u: n floats (gated), else ignored.
template <Activation kAct>
inline void f32_activate(float* h, const float* u, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const float z = h[i];
    if constexpr (kAct == Activation::kSwiGlu)
      h[i] = f32_silu(z) * u[i];
    else if constexpr (kAct == Activation::kGeGlu)
      h[i] = f32_gelu(z) * u[i];
    else if constexpr (kAct == Activation::kGelu)
      h[i] = f32_gelu(z);
    else if constexpr (kAct == Activation::kGeluTanh)
      h[i] = f32_gelu_tanh(z);
    else
      h[i] = z > 0.0f ? z : 0.0f;
  }
}

}  // namespace kernels
}  // namespace microattn
