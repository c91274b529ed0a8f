// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: the activations of an MLP, row by row. They cost one call per hidden
// value against d_model multiply-adds for it, so they are plain scalar code on every arch.
#pragma once

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
  kRelu = 4,      ///< max(z, 0); NaN stays NaN
};
constexpr bool is_gated(Activation a) noexcept {
  return a == Activation::kSwiGlu || a == Activation::kGeGlu;
}

namespace kernels {

// The activations are computed with microattn's own exponential and explicit FMAs, not libm's
// erff / tanhf: under -ffast-math GCC may vectorise a libm call with glibc's vector variants,
// which round differently, in one inlined copy of a loop and not in another (two equal calls
// then differ in the last bit); these give the same bits in every build and on every target.

/// silu(z) = z / (1 + exp(-z)).
inline float f32_silu(float z) noexcept { return z / (1.0f + f32_exp_scalar(-z)); }

namespace detail {
/// erfc(x) for x >= 0 as t exp(-x^2 + P(t)), t = 1 / (1 + x / 2), P the degree-9 Chebyshev fit
/// published with Numerical Recipes' erfcc: relative error below 1.2e-7 for every x >= 0 (no
/// cancellation in the tail, where GELU's small negative values come from).
inline float erfc_nonneg(float x) noexcept {
  using V = internal::Vec<ScalarArch>;
  const float t = 1.0f / (1.0f + 0.5f * x);
  float p = 0.17087277f;
  p = V::fma(p, t, -0.82215223f);
  p = V::fma(p, t, 1.48851587f);
  p = V::fma(p, t, -1.13520398f);
  p = V::fma(p, t, 0.27886807f);
  p = V::fma(p, t, -0.18628806f);
  p = V::fma(p, t, 0.09678418f);
  p = V::fma(p, t, 0.37409196f);
  p = V::fma(p, t, 1.00002368f);
  p = V::fma(p, t, -1.26551223f);
  return t * f32_exp_scalar(V::fma(-x, x, p));
}
}  // namespace detail

/// gelu(z) = z Phi(z) = z / 2 (1 + erf(z / sqrt 2)), Phi(-|z|) = erfc(|z| / sqrt 2) / 2.
inline float f32_gelu(float z) noexcept {
  const float a = z * 0.70710678118654752f;
  const float c = 0.5f * detail::erfc_nonneg(a < 0.0f ? -a : a);
  return z * (a < 0.0f ? c : 1.0f - c);
}
/// z / 2 (1 + tanh(u)), u = sqrt(2 / pi) (z + 0.044715 z^3), as z / (1 + exp(-2u)) (the same
/// value without tanh's cancellation near -1).
inline float f32_gelu_tanh(float z) noexcept {
  using V = internal::Vec<ScalarArch>;
  const float zz = z * z;
  const float u = 0.79788456080286536f * V::fma(0.044715f * zz, z, z);
  return z / (1.0f + f32_exp_scalar(-2.0f * u));
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
      h[i] = z < 0.0f ? 0.0f : z;  // NaN stays NaN (as torch.relu), -0 stays -0
  }
}

}  // namespace kernels
}  // namespace microattn
