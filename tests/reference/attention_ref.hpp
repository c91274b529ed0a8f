// SPDX-License-Identifier: Apache-2.0
// Plain double-precision oracles: the whole layer and the attention core, written the obvious
// way (full score matrix, masked softmax), with nothing shared with the library's kernels.
#pragma once

#include <cmath>
#include <cstddef>

namespace microattn_ref {

/// y[T][n] = x[T][k] · W + bias, W given as B(k, n) = w[kk * n + nn] (in_out) or w[nn * k + kk].
inline void linear(const float* x, std::size_t T, std::size_t k, std::size_t n, const float* w,
                   bool out_in, const float* bias, double* y) {
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (std::size_t i = 0; i < k; ++i)
        acc += static_cast<double>(x[t * k + i]) * (out_in ? w[j * k + i] : w[i * n + j]);
      y[t * n + j] = acc;
    }
}

/// Causal attention: q [T][H*D], k, v [T][Hkv*D] -> out [T][H*D]; query i sees keys
/// pos0 + ... : key j is visible to query i when j <= i + offset, with T_k keys
/// (offset = T_k - T_q: bottom-right alignment, as with a KV cache).
/// s: scratch of T_k doubles. weights (optional) receives the softmax rows, [H][T_q][T_k].
/// (No heap: the same oracle runs on Cortex-M.)
/// Mask: causal (query i sees keys lo .. i + offset) with lo = i + offset + 1 - window when
/// window > 0 (a sliding window), else 0; causal == false: every query sees every key.
inline void core(const double* q, const double* k, const double* v, std::size_t T_q,
                 std::size_t T_k, std::size_t H, std::size_t Hkv, std::size_t D, double scale,
                 double* out, double* s, double* weights = nullptr, std::size_t window = 0,
                 bool causal = true) {
  const std::size_t G = H / Hkv, offset = T_k - T_q;
  for (std::size_t h = 0; h < H; ++h) {
    const std::size_t g = h / G;
    for (std::size_t i = 0; i < T_q; ++i) {
      const std::size_t n_vis = causal ? i + offset + 1 : T_k;
      const std::size_t lo = (causal && window && n_vis > window) ? n_vis - window : 0;
      double mx = -INFINITY;
      for (std::size_t j = lo; j < n_vis; ++j) {
        double d = 0;
        for (std::size_t e = 0; e < D; ++e)
          d += q[i * H * D + h * D + e] * k[j * Hkv * D + g * D + e];
        s[j] = d * scale;
        mx = s[j] > mx ? s[j] : mx;
      }
      double sum = 0;
      for (std::size_t j = lo; j < n_vis; ++j) {
        s[j] = std::exp(s[j] - mx);
        sum += s[j];
      }
      for (std::size_t e = 0; e < D; ++e) {
        double acc = 0;
        for (std::size_t j = lo; j < n_vis; ++j) acc += s[j] / sum * v[j * Hkv * D + g * D + e];
        out[i * H * D + h * D + e] = acc;
      }
      if (weights)
        for (std::size_t j = 0; j < T_k; ++j)
          weights[(h * T_q + i) * T_k + j] = (j >= lo && j < n_vis) ? s[j] / sum : 0.0;
    }
  }
}

/// Shape and weights of a layer for the reference (plain pointers, layout as the library's).
struct LayerRef {
  std::size_t d_model, H, Hkv, D;
  bool out_in;                                         // weights in PyTorch [out][in] layout
  const float *wq, *wk, *wv, *wo, *bq, *bk, *bv, *bo;  // wo null: no output projection
  std::size_t d_out = 0;                               // W_O's output width; 0: d_model
  std::size_t window = 0;                              // sliding window W; 0: none
  bool causal = true;                                  // false: Mask::kNone
};

/// y = ctx · W_O (+ b_O), or y = ctx when the layer has no W_O.
inline void output(const LayerRef& L, const double* ctx, std::size_t T, double* y) {
  const std::size_t QD = L.H * L.D;
  if (!L.wo) {
    for (std::size_t i = 0; i < T * QD; ++i) y[i] = ctx[i];
    return;
  }
  const std::size_t OD = L.d_out ? L.d_out : L.d_model;
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < OD; ++j) {
      double acc = L.bo ? L.bo[j] : 0.0;
      for (std::size_t i = 0; i < QD; ++i)
        acc += ctx[t * QD + i] * (L.out_in ? L.wo[j * QD + i] : L.wo[i * OD + j]);
      y[t * OD + j] = acc;
    }
}

/// Doubles of scratch layer() needs.
constexpr std::size_t layer_scratch(std::size_t T, std::size_t H, std::size_t Hkv, std::size_t D) {
  return T * (2 * H * D + 2 * Hkv * D) + T;
}

/// What layer() does to Q [T][H*D] and K [T][Hkv*D] between projection and attention: nothing.
struct NoRotation {
  void operator()(double*, double*, std::size_t) const {}
};

/// The whole layer: y [T][d_model] (or [T][H*D] without W_O). scratch: layer_scratch() doubles.
/// rotate(q, k, T) runs on the projected Q and K (rope_ref.hpp's layer_rope passes RoPE).
template <class Rotate = NoRotation>
inline void layer(const LayerRef& L, const float* x, std::size_t T, double scale, double* y,
                  double* scratch, Rotate rotate = Rotate{}) {
  const std::size_t QD = L.H * L.D, KD = L.Hkv * L.D;
  double* q = scratch;
  double* k = q + T * QD;
  double* v = k + T * KD;
  double* ctx = v + T * KD;
  double* s = ctx + T * QD;
  linear(x, T, L.d_model, QD, L.wq, L.out_in, L.bq, q);
  linear(x, T, L.d_model, KD, L.wk, L.out_in, L.bk, k);
  linear(x, T, L.d_model, KD, L.wv, L.out_in, L.bv, v);
  rotate(q, k, T);
  core(q, k, v, T, T, L.H, L.Hkv, L.D, scale, ctx, s, nullptr, L.window, L.causal);
  output(L, ctx, T, y);
}

}  // namespace microattn_ref
