// SPDX-License-Identifier: Apache-2.0
// Plain double-precision oracle for rotary positional embeddings and for a whole attention
// layer with RoPE (built from attention_ref.hpp's linear() and core()). Written from the
// definitions, sharing nothing with the library's kernels or tables.
#pragma once

#include <cmath>
#include <cstddef>

#include "reference/attention_ref.hpp"

namespace microattn_ref {

/// Rotates one head x[0 .. d) at position pos: pair i (0 <= i < rot/2) turns by
/// pos * base^(-2i / rot). adjacent: pair i = (2i, 2i+1); else (i, i + rot/2).
/// Dimensions rot .. d - 1 are left as they are.
inline void rope(double* x, std::size_t rot, double pos, double base, bool adjacent) {
  const std::size_t half = rot / 2;
  for (std::size_t i = 0; i < half; ++i) {
    const double theta = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(rot));
    const double c = std::cos(pos * theta), s = std::sin(pos * theta);
    const std::size_t a = adjacent ? 2 * i : i, b = adjacent ? 2 * i + 1 : i + half;
    const double xa = x[a], xb = x[b];
    x[a] = xa * c - xb * s;
    x[b] = xa * s + xb * c;
  }
}

/// RoPE settings of the reference layer (rot == 0: no RoPE).
struct RopeRef {
  std::size_t rot;
  double base;
  bool adjacent;
  double start = 0;  // absolute position of token 0
};

/// Doubles of scratch layer_rope() needs (the same as layer()).
constexpr std::size_t layer_rope_scratch(std::size_t T, std::size_t H, std::size_t Hkv,
                                         std::size_t D) {
  return layer_scratch(T, H, Hkv, D);
}

/// The whole layer with RoPE on Q and K at absolute positions start .. start + T-1, then causal
/// attention (token i sees 0 .. i): y [T][d_model] (or [T][H*D] without W_O).
inline void layer_rope(const LayerRef& L, const RopeRef& r, const float* x, std::size_t T,
                       double scale, double* y, double* scratch) {
  layer(L, x, T, scale, y, scratch, [&](double* q, double* k, std::size_t n) {
    if (!r.rot) return;
    const std::size_t QD = L.H * L.D, KD = L.Hkv * L.D;
    for (std::size_t t = 0; t < n; ++t) {
      for (std::size_t h = 0; h < L.H; ++h)
        rope(q + t * QD + h * L.D, r.rot, r.start + double(t), r.base, r.adjacent);
      for (std::size_t h = 0; h < L.Hkv; ++h)
        rope(k + t * KD + h * L.D, r.rot, r.start + double(t), r.base, r.adjacent);
    }
  });
}

/// The layer over given keys and values (as a KV cache holds them: keys already rotated, e.g. an
/// int8 cache's dequantised rows from export_cache): Q = x W_q (+ b_q), rotated at positions
/// start .., attends causally to k, v ([T][Hkv*D] floats); y as layer(). scratch: layer_scratch().
inline void layer_given_kv(const LayerRef& L, const RopeRef& r, const float* x, std::size_t T,
                           const float* k, const float* v, double scale, double* y,
                           double* scratch) {
  layer(L, x, T, scale, y, scratch, [&](double* q, double* kk, std::size_t n) {
    const std::size_t QD = L.H * L.D, KD = L.Hkv * L.D;
    double* vv = kk + n * KD;  // layer()'s scratch: q, k, v, ctx, s
    for (std::size_t i = 0; i < n * KD; ++i) kk[i] = k[i], vv[i] = v[i];
    if (!r.rot) return;
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t h = 0; h < L.H; ++h)
        rope(q + t * QD + h * L.D, r.rot, r.start + double(t), r.base, r.adjacent);
  });
}

}  // namespace microattn_ref
