// SPDX-License-Identifier: Apache-2.0
// microattn benchmarks: the Eigen 3 peer (optional, only when Eigen is installed). A causal
// attention layer written as a straightforward Eigen composition, the way a host programmer
// would without a fused kernel: GEMMs for the projections, then per head and per block of 128
// query rows S = Q K^T over the keys the block can see (about the causal half), a masked
// softmax with Eigen's vector exp, O = P V; then the output GEMM. Single-threaded (no OpenMP).
#pragma once

#if defined(MICROATTN_BENCH_EIGEN)
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>

namespace microattn_bench {
namespace eigen_peer {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CStrided = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;
using Strided = Eigen::Map<RowMat, 0, Eigen::OuterStride<>>;
using Index = Eigen::Index;

/// Query rows per block: S of one block is 128 x T floats (512 KiB at T = 1024).
constexpr Index kBlock = 128;

inline std::string label() {
  return "eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
         std::to_string(EIGEN_MAJOR_VERSION) + "." + std::to_string(EIGEN_MINOR_VERSION);
}

/// out = causal softmax(scale Q_h K_g^T) V_g for every query head h (g = h / (H / H_kv)).
/// q [T][ldq], k [T][ldk], v [T][ldv], out [T][ldo]; s is scratch (resized on first use).
inline void causal_attention(const float* q, Index ldq, const float* k, Index ldk, const float* v,
                             Index ldv, Index T, Index H, Index Hkv, Index D, float* out, Index ldo,
                             RowMat& s) {
  if (s.rows() < kBlock || s.cols() < T) s.resize(kBlock, T);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const Index G = H / Hkv;
  for (Index h = 0; h < H; ++h) {
    const Index g = h / G;
    for (Index r0 = 0; r0 < T; r0 += kBlock) {
      const Index br = std::min(kBlock, T - r0);
      const Index nk = r0 + br;  // keys this block can see
      const CStrided qb(q + r0 * ldq + h * D, br, D, Eigen::OuterStride<>(ldq));
      const CStrided kb(k + g * D, nk, D, Eigen::OuterStride<>(ldk));
      const CStrided vb(v + g * D, nk, D, Eigen::OuterStride<>(ldv));
      Strided ob(out + r0 * ldo + h * D, br, D, Eigen::OuterStride<>(ldo));
      auto sb = s.topLeftCorner(br, nk);
      sb.noalias() = (qb * scale) * kb.transpose();
      for (Index i = 0; i < br; ++i) {
        const Index vis = r0 + i + 1;
        auto row = sb.row(i);
        const float m = row.head(vis).maxCoeff();
        row.head(vis) = (row.head(vis).array() - m).exp();
        row.head(vis) /= row.head(vis).sum();
        row.tail(nk - vis).setZero();
      }
      ob.noalias() = sb * vb;
    }
  }
}

/// The whole layer: weights kInOut ([in][out] row-major), no bias, with W_O ([H d_head][out_dim],
/// out_dim 0 = d_model).
struct Layer {
  Index d_model, heads, kv_heads, d_head;
  const float *w_q, *w_k, *w_v, *w_o;
  RowMat q, k, v, ctx, s;
  Index out_dim = 0;

  void forward(const float* x, Index T, float* y) {
    const Index QD = heads * d_head, KD = kv_heads * d_head;
    const Eigen::Map<const RowMat> X(x, T, d_model);
    q.resize(T, QD);
    k.resize(T, KD);
    v.resize(T, KD);
    ctx.resize(T, QD);
    q.noalias() = X * Eigen::Map<const RowMat>(w_q, d_model, QD);
    k.noalias() = X * Eigen::Map<const RowMat>(w_k, d_model, KD);
    v.noalias() = X * Eigen::Map<const RowMat>(w_v, d_model, KD);
    causal_attention(q.data(), QD, k.data(), KD, v.data(), KD, T, heads, kv_heads, d_head,
                     ctx.data(), QD, s);
    const Index OD = out_dim != 0 ? out_dim : d_model;
    Eigen::Map<RowMat>(y, T, OD).noalias() = ctx * Eigen::Map<const RowMat>(w_o, QD, OD);
  }
};

}  // namespace eigen_peer
}  // namespace microattn_bench
#endif
