// SPDX-License-Identifier: Apache-2.0
// microattn benchmarks: the plain path — the whole layer written the textbook way (triple-loop
// projections, the full T x T score matrix per head, masked softmax with std::exp), in float.
// It is what a first implementation looks like; P1_reference times it so the speed-up of the
// library is visible in the same run. (The double-precision oracle the tests trust lives in
// tests/reference/; this one is only timed.)
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace microattn_bench {

class PlainLayer {
 public:
  PlainLayer(std::size_t d_model_, std::size_t heads_, std::size_t kv_heads_, std::size_t d_head_,
             const float* w_q_, const float* w_k_, const float* w_v_, const float* w_o_)
      : d_model(d_model_),
        heads(heads_),
        kv_heads(kv_heads_),
        d_head(d_head_),
        w_q(w_q_),
        w_k(w_k_),
        w_v(w_v_),
        w_o(w_o_) {}

  std::size_t d_model, heads, kv_heads, d_head;
  const float* w_q;  ///< [d_model][H*d_head]   (microattn's kInOut layout)
  const float* w_k;  ///< [d_model][H_kv*d_head]
  const float* w_v;  ///< [d_model][H_kv*d_head]
  const float* w_o;  ///< [H*d_head][d_model]

  /// y[T][d_model] = layer(x[T][d_model]); scratch is resized on first use only.
  void forward(const float* x, std::size_t T, float* y) {
    const std::size_t qd = heads * d_head, kd = kv_heads * d_head, group = heads / kv_heads;
    q_.resize(T * qd);
    k_.resize(T * kd);
    v_.resize(T * kd);
    ctx_.resize(T * qd);
    s_.resize(T * T);
    linear(x, T, d_model, qd, w_q, q_.data());
    linear(x, T, d_model, kd, w_k, k_.data());
    linear(x, T, d_model, kd, w_v, v_.data());
    const float scale = 1.0f / std::sqrt(static_cast<float>(d_head));
    for (std::size_t h = 0; h < heads; ++h) {
      const std::size_t g = h / group;
      for (std::size_t i = 0; i < T; ++i)  // full score matrix, then the mask
        for (std::size_t j = 0; j < T; ++j) {
          float dot = 0.0f;
          for (std::size_t e = 0; e < d_head; ++e)
            dot += q_[i * qd + h * d_head + e] * k_[j * kd + g * d_head + e];
          s_[i * T + j] = j <= i ? dot * scale : -INFINITY;
        }
      for (std::size_t i = 0; i < T; ++i) {
        float* row = &s_[i * T];
        float m = -INFINITY;
        for (std::size_t j = 0; j < T; ++j) m = row[j] > m ? row[j] : m;
        float sum = 0.0f;
        for (std::size_t j = 0; j < T; ++j) {
          row[j] = std::exp(row[j] - m);
          sum += row[j];
        }
        for (std::size_t j = 0; j < T; ++j) row[j] /= sum;
      }
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t e = 0; e < d_head; ++e) {
          float acc = 0.0f;
          for (std::size_t j = 0; j < T; ++j) acc += s_[i * T + j] * v_[j * kd + g * d_head + e];
          ctx_[i * qd + h * d_head + e] = acc;
        }
    }
    linear(ctx_.data(), T, qd, d_model, w_o, y);
  }

 private:
  /// y[T][n] = x[T][k] W[k][n], one dot product per output.
  static void linear(const float* x, std::size_t T, std::size_t k, std::size_t n, const float* w,
                     float* y) {
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (std::size_t i = 0; i < k; ++i) acc += x[t * k + i] * w[i * n + j];
        y[t * n + j] = acc;
      }
  }
  std::vector<float> q_, k_, v_, ctx_, s_;
};

}  // namespace microattn_bench
