// SPDX-License-Identifier: Apache-2.0
// microattn driver: the projections every layer and block calls. A weight matrix's columns as a
// GEMM or GEMV operand (WeightSlice, from a view's pointers or its Matrix record), project (a
// GEMM: f32_gemm, qc8w_f32_gemm or, with integer compute, qd8_f32_qc8w_gemm), project_vec (a
// decode step's GEMV), decode_projections (a token's GEMVs split by output columns over the
// executor's parts), the quantised-row buffers of integer compute, and how a call's rows are
// split into blocks and parts. Nothing here knows attention: Linear and Mlp include this alone.
// (Namespace microattn::internal: not public API.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "microattn/executor.hpp"
#include "microattn/format.hpp"
#include "microattn/internal/checks.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/f32_gemv.hpp"
#include "microattn/kernels/qd8_gemm.hpp"
#include "microattn/layout.hpp"

namespace microattn {
namespace internal {

/// The rows the next projection step takes of the `left` still to do: a block of the GEMM's
/// kMC rows, so the three projections read a block of x while it is in L2 (one block per GEMM
/// row block: the same work and bits as one whole call). When at most kMaxRows rows can come
/// (a microcontroller's layer or prefill chunk fits one block), all of them: the caller's loop
/// then runs once and the compiler sees it so (no loop: less Cortex-M code).
template <class Arch, std::size_t kMaxRows>
constexpr std::size_t row_block(std::size_t left) noexcept {
  return kMaxRows <= Tiles<Arch>::kMC ? left : min_size(Tiles<Arch>::kMC, left);
}

/// The rows [b, e) of part i of `parts` of a prefill call of T tokens (multiples of the GEMM's
/// micro-tile rows, so the split never changes an output's arithmetic).
template <class Arch>
Range token_rows(std::size_t T, std::size_t i, std::size_t parts) noexcept {
  return split(T, Tiles<Arch>::kMR, i, parts);
}

/// Columns [col0, col0 + n) of a weight matrix with in_dim inputs and out_dim outputs, as the
/// GEMM's B operand, with the scales of those columns: S = const float* (per column; null for
/// unscaled formats) or GroupScales<G> (group-wise int8).
template <class E, class S = const float*>
struct WeightSlice {
  const E* b;
  std::size_t ldb;
  WeightLayout layout;
  S scale;
};
template <class E>
inline WeightSlice<E> weight_slice(const E* w, WeightLayout layout, std::size_t in_dim,
                                   std::size_t out_dim, std::size_t col0,
                                   const float* scale = nullptr) noexcept {
  const float* sc = scale ? scale + col0 : nullptr;
  if (layout == WeightLayout::kInOut) return {w + col0, out_dim, layout, sc};
  if (layout == WeightLayout::kOutIn) return {w + col0 * in_dim, in_dim, layout, sc};
  // kPanel16: col0 is a multiple of the panel width (Weights::check); ldb = panel stride.
  return {w + col0 * in_dim, in_dim * kWeightPanel, layout, sc};
}
/// The same for a matrix record: its elements and, for a scaled format, the scales of those
/// columns (format.hpp says where they are; null when unscaled).
template <class Fmt>
inline WeightSlice<typename Fmt::Elem, typename FormatTraits<Fmt>::ScaleRef> weight_slice(
    Matrix<Fmt> m, WeightLayout layout, std::size_t in_dim, std::size_t out_dim,
    std::size_t col0) noexcept {
  using T = FormatTraits<Fmt>;
  const auto sc = T::slice_scales(m.scales, layout, in_dim, out_dim, col0);
  const auto* w = m.data;
  if (layout == WeightLayout::kInOut)
    return {w + T::elem_offset(col0), T::elem_offset(out_dim), layout, sc};
  if (layout == WeightLayout::kOutIn)
    return {w + T::elem_offset(col0 * in_dim), T::elem_offset(in_dim), layout, sc};
  return {w + T::elem_offset(col0 * in_dim), T::elem_offset(in_dim * kWeightPanel), layout, sc};
}

/// weight_slice of a view's pointers (elements w, scales s) in format Fmt: the pointer form
/// for every format but group-wise int8, whose scales the record form finds.
template <class Fmt>
inline auto format_slice(const typename Fmt::Elem* w, WeightLayout layout, std::size_t in_dim,
                         std::size_t out_dim, std::size_t col0, const float* s) noexcept {
  if constexpr (Fmt::kDesc.grouping == ScaleGrouping::kPerGroup)
    return weight_slice(Matrix<Fmt>{w, s}, layout, in_dim, out_dim, col0);
  else
    return weight_slice(w, layout, in_dim, out_dim, col0, s);
}

/// C[M][N] = A[M][K] · W (+ bias) for a weight slice of any element type: the projections of
/// every layer go through here (f32_gemm, qc8w_f32_gemm, f16w_f32_gemm, bf16w_f32_gemm).
template <class Arch, class Store>
inline void project(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                    const WeightSlice<float>& w, const float* bias, Store store,
                    float* pack) noexcept {
  kernels::f32_gemm<Arch>(M, N, K, a, lda, w.b, w.ldb, w.layout, bias, store, pack);
}
template <class Arch, class Store>
inline void project(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                    const WeightSlice<std::int8_t>& w, const float* bias, Store store,
                    float* pack) noexcept {
  kernels::qc8w_f32_gemm<Arch>(M, N, K, a, lda, w.b, w.ldb, w.layout, w.scale, bias, store, pack);
}

template <class Arch, class Store>
inline void project(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                    const WeightSlice<f16>& w, const float* bias, Store store,
                    float* pack) noexcept {
  kernels::f16w_f32_gemm<Arch>(M, N, K, a, lda, w.b, w.ldb, w.layout, bias, store, pack);
}
template <class Arch, class Store>
inline void project(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                    const WeightSlice<bf16>& w, const float* bias, Store store,
                    float* pack) noexcept {
  kernels::bf16w_f32_gemm<Arch>(M, N, K, a, lda, w.b, w.ldb, w.layout, bias, store, pack);
}

template <class Arch, std::size_t G, class Store>
inline void project(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                    const WeightSlice<std::int8_t, GroupScales<G>>& w, const float* bias,
                    Store store, float* pack) noexcept {
  kernels::qg8w_f32_gemm<Arch>(M, N, K, a, lda, w.b, w.ldb, w.layout, w.scale, bias, store, pack);
}

template <class Arch, class Store>
inline void project(std::size_t M, std::size_t N, std::size_t K, const kernels::Qd8Rows& a,
                    std::size_t, const WeightSlice<std::int8_t>& w, const float* bias, Store store,
                    float* pack) noexcept {
  kernels::qd8_f32_qc8w_gemm<Arch>(M, N, K, a, w.b, w.ldb, w.layout, w.scale, bias, store, pack);
}

/// y[N] = x[K] · W (+ bias) for a weight slice of any format (the decode step's projections:
/// f32_gemv, qc8w_f32_gemv, qg8w_f32_gemv), or part `part` of `parts` of it
/// (kernels::gemv_part: bit-identical for any split).
template <class Arch, class E, class S>
inline void project_vec(std::size_t N, std::size_t K, const float* x, const WeightSlice<E, S>& w,
                        const float* bias, float* y, std::size_t part = 0,
                        std::size_t parts = 1) noexcept {
  kernels::gemv_part<Arch>(N, K, x, w.b, w.ldb, w.layout, w.scale, bias, y, part, parts);
}
/// The same with integer compute, for one quantised row (kernels::qd8_f32_qc8w_gemv).
template <class Arch>
inline void project_vec(std::size_t N, std::size_t K, const kernels::Qd8Rows& x,
                        const WeightSlice<std::int8_t>& w, const float* bias, float* y,
                        std::size_t part = 0, std::size_t parts = 1) noexcept {
  kernels::qd8_f32_qc8w_gemv<Arch>(N, K, x.q, x.scale[0], w.b, w.ldb, w.layout, w.scale, bias, y,
                                   part, parts);
}

/// Up to kRows quantised rows of at most kWidth values (integer compute's activations,
/// Compute::kInt8), one scale per row.
template <class Arch, std::size_t kRows, std::size_t kWidth>
struct Qd8RowBuffer {
  static constexpr std::size_t kLd = kernels::qd8_row_bytes<Arch>(kWidth);
  alignas(64) std::int8_t q[kRows * kLd] = {};
  float scale[kRows] = {};
  kernels::Qd8Rows rows(std::size_t i) const noexcept { return {q + i * kLd, kLd, scale + i}; }
  /// Rows [b, e) of x (row stride ldx, K <= kWidth wide) quantised into rows [b, e).
  void quantize(std::size_t b, std::size_t e, std::size_t K, const float* x,
                std::size_t ldx) noexcept {
    if (b < e)
      kernels::qd8_quantize_rows<Arch>(e - b, K, x + b * ldx, ldx, q + b * kLd, kLd, scale + b);
  }
};
/// What a layer or block with fp32 compute keeps instead (nothing).
struct NoQd8Buffer {};

}  // namespace internal
}  // namespace microattn
