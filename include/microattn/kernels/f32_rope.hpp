// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: rotary positional embeddings (RoPE), from precomputed tables.
#pragma once

#include <cmath>
#include <cstddef>

#include "microattn/internal/vec.hpp"
#include "microattn/rope_config.hpp"

namespace microattn {
namespace kernels {

/// cos / sin of position * theta_i for kTMax positions start .. start + kTMax - 1 (row r is
/// position start + r) and pair i, row-major [row][i] with row stride kHalf = d_head / 2 (rotations
/// with fewer pairs use the first ones of each row). 2 * kTMax * kHalf floats: the only RoPE
/// memory, filled once.
template <std::size_t kTMax, std::size_t kDHead>
struct RopeTable {
  static constexpr std::size_t kHalf = kDHead / 2 > 0 ? kDHead / 2 : 1;
  float cos[kTMax * kHalf];
  float sin[kTMax * kHalf];
};

/// True when (base, rotary_dims) is a valid rotation for heads of d_head floats (finiteness from
/// the bits: a check -ffast-math cannot remove)
/// (rotary_dims already resolved: 0 is not accepted here).
inline bool rope_args_valid(float base, std::size_t rotary_dims, std::size_t d_head) noexcept {
  return internal::finite_bits(base) && base > 0.0f && rotary_dims >= 2 && rotary_dims % 2 == 0 &&
         rotary_dims <= d_head;
}

/// Fills the table for `half` = rotary_dims / 2 pairs. Angles and their cos / sin are computed
/// in double and rounded once to float (|error| <= 0.5 ulp of each entry at every position);
/// Hugging Face computes position * theta in float, which drifts by up to ~pos * 6e-8 rad.
/// Runs once per configuration (T_max * half cos/sin pairs), never per token.
template <std::size_t kTMax, std::size_t kDHead>
void rope_fill(RopeTable<kTMax, kDHead>& t, float base, std::size_t half,
               std::size_t start = 0) noexcept {
  constexpr std::size_t S = RopeTable<kTMax, kDHead>::kHalf;
  MICROATTN_ASSERT(half >= 1 && half <= S);
  const double lb = std::log(static_cast<double>(base));
  for (std::size_t i = 0; i < half; ++i) {
    // theta_i = base^(-2i / rotary_dims) = base^(-i / half)
    const double theta = std::exp(-lb * static_cast<double>(i) / static_cast<double>(half));
    for (std::size_t p = 0; p < kTMax; ++p) {
      const double a = static_cast<double>(start + p) * theta;
      t.cos[p * S + i] = static_cast<float>(std::cos(a));
      t.sin[p * S + i] = static_cast<float>(std::sin(a));
    }
  }
}

/// Rotates one head x[0 .. 2*half) in place with the table row (c, s) of its position.
/// Half-split pairs are two contiguous runs, so the loop vectorises (the compiler does it:
/// RoPE is O(d_head) per head and token, a small part of a layer's work).
inline void f32_rope_head(float* x, const float* c, const float* s, std::size_t half,
                          RopePairing pairing) noexcept {
  if (pairing == RopePairing::kHalfSplit) {
    float* lo = x;
    float* hi = x + half;
    for (std::size_t i = 0; i < half; ++i) {
      const float a = lo[i], b = hi[i];
      lo[i] = a * c[i] - b * s[i];
      hi[i] = a * s[i] + b * c[i];
    }
  } else {
    for (std::size_t i = 0; i < half; ++i) {
      const float a = x[2 * i], b = x[2 * i + 1];
      x[2 * i] = a * c[i] - b * s[i];
      x[2 * i + 1] = a * s[i] + b * c[i];
    }
  }
}

/// Rotates n_tokens rows of `heads` heads: head e of token t is x + t * ldx + e * head_stride,
/// at position pos0 + t (pos0 + n_tokens <= kTMax).
template <std::size_t kTMax, std::size_t kDHead>
void f32_rope_rows(float* x, std::size_t ldx, std::size_t head_stride, std::size_t n_tokens,
                   std::size_t heads, std::size_t pos0, const RopeTable<kTMax, kDHead>& t,
                   std::size_t half, RopePairing pairing) noexcept {
  constexpr std::size_t S = RopeTable<kTMax, kDHead>::kHalf;
  MICROATTN_ASSERT(pos0 + n_tokens <= kTMax && 2 * half <= kDHead);
  for (std::size_t i = 0; i < n_tokens; ++i) {
    const float* c = t.cos + (pos0 + i) * S;
    const float* s = t.sin + (pos0 + i) * S;
    for (std::size_t e = 0; e < heads; ++e)
      f32_rope_head(x + i * ldx + e * head_stride, c, s, half, pairing);
  }
}

}  // namespace kernels
}  // namespace microattn
