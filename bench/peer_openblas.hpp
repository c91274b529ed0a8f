// SPDX-License-Identifier: Apache-2.0
// microattn benchmarks: the OpenBLAS peer (optional, only when OpenBLAS is installed): causal
// attention as cblas_sgemm calls per head and block of 128 query rows (S = Q K^T over the keys
// the block can see, about the causal half; O = P V) with a vectorised softmax between them
// (microattn's vector exp, so the peer gets the same exp as the library). One thread.
#pragma once

#if defined(MICROATTN_BENCH_OPENBLAS)
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "microattn/kernels/f32_exp.hpp"

namespace microattn_bench {
namespace openblas_peer {

/// Query rows per block: S of one block is 128 x T floats.
constexpr std::size_t kBlock = 128;

inline void single_thread() { openblas_set_num_threads(1); }
inline std::string label() { return std::string("openblas 1 thread, ") + openblas_get_config(); }

/// Scaled, masked softmax of one row of raw scores in place: keys 0..pos visible, pos+1..n-1 -> 0.
inline void softmax_row(float* s, std::size_t n, std::size_t pos, float scale) {
  using Arch = microattn::DefaultArch;
  using V = microattn::internal::Vec<Arch>;
  constexpr std::size_t W = V::kWidth;
  const std::size_t vis = pos + 1;
  float m = -std::numeric_limits<float>::infinity();
  for (std::size_t j = 0; j < vis; ++j) m = std::max(m, s[j]);
  const auto vscale = V::set1(scale), vm = V::set1(m * scale);
  auto vsum = V::zero();
  std::size_t j = 0;
  for (; j + W <= vis; j += W) {
    const auto p = microattn::kernels::f32_exp<Arch>(V::loadu(s + j) * vscale - vm);
    V::storeu(s + j, p);
    vsum = vsum + p;
  }
  float sum = V::hsum(vsum);
  for (; j < vis; ++j) {
    s[j] = microattn::kernels::f32_exp_scalar(s[j] * scale - m * scale);
    sum += s[j];
  }
  const float inv = 1.0f / sum;
  for (j = 0; j < vis; ++j) s[j] *= inv;
  for (; j < n; ++j) s[j] = 0.0f;
}

/// out = causal softmax(Q_h K_g^T / sqrt(D)) V_g for every query head h (g = h / (H / H_kv)).
/// q [T][ldq], k [T][ldk], v [T][ldv], out [T][ldo]; s is scratch (resized on first use).
inline void causal_attention(const float* q, std::size_t ldq, const float* k, std::size_t ldk,
                             const float* v, std::size_t ldv, std::size_t T, std::size_t H,
                             std::size_t Hkv, std::size_t D, float* out, std::size_t ldo,
                             std::vector<float>& s) {
  if (s.size() < kBlock * T) s.resize(kBlock * T);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const std::size_t G = H / Hkv;
  const auto I = [](std::size_t n) { return static_cast<int>(n); };
  for (std::size_t h = 0; h < H; ++h) {
    const std::size_t g = h / G;
    for (std::size_t r0 = 0; r0 < T; r0 += kBlock) {
      const std::size_t br = std::min(kBlock, T - r0), nk = r0 + br;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, I(br), I(nk), I(D), 1.0f,
                  q + r0 * ldq + h * D, I(ldq), k + g * D, I(ldk), 0.0f, s.data(), I(T));
      for (std::size_t i = 0; i < br; ++i) softmax_row(s.data() + i * T, nk, r0 + i, scale);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, I(br), I(D), I(nk), 1.0f, s.data(),
                  I(T), v + g * D, I(ldv), 0.0f, out + r0 * ldo + h * D, I(ldo));
    }
  }
}

/// The whole layer as cblas_sgemm calls (projections, the attention above, W_O): weights kInOut
/// ([in][out] row-major), no bias; W_O is [H d_head][out_dim]. Buffers sized on first use.
struct Layer {
  std::size_t d_model, heads, kv_heads, d_head, out_dim;
  const float *w_q, *w_k, *w_v, *w_o;
  std::vector<float> q, k, v, ctx, s;

  void forward(const float* x, std::size_t T, float* y) {
    const std::size_t QD = heads * d_head, KD = kv_heads * d_head;
    q.resize(T * QD), k.resize(T * KD), v.resize(T * KD), ctx.resize(T * QD);
    const auto I = [](std::size_t n) { return static_cast<int>(n); };
    auto gemm = [&](std::size_t n, std::size_t kdim, const float* a, const float* b, float* c) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, I(T), I(n), I(kdim), 1.0f, a, I(kdim),
                  b, I(n), 0.0f, c, I(n));
    };
    gemm(QD, d_model, x, w_q, q.data());
    gemm(KD, d_model, x, w_k, k.data());
    gemm(KD, d_model, x, w_v, v.data());
    causal_attention(q.data(), QD, k.data(), KD, v.data(), KD, T, heads, kv_heads, d_head,
                     ctx.data(), QD, s);
    gemm(out_dim, QD, ctx.data(), w_o, y);
  }
};

}  // namespace openblas_peer
}  // namespace microattn_bench
#endif
