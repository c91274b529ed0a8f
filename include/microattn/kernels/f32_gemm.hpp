// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: register-blocked, cache-tiled fp32 GEMM (the projections) and its
// micro-kernel (also used by the attention tile for Q·K^T and P·V).
//
// Kernel naming grammar (every family): <types>_<op>[_<MR>x<NR>][__<arch>]
//   types  the activations' type, then the weights' or cache's where it differs:
//          f32        fp32 activations, fp32 weights and cache
//          qc8w_f32   fp32 activations, int8 weights with one fp32 scale per output channel
//                     (XNNPACK's qc8w): qc8w_f32_gemm, qc8w_f32_gemv
//          qs8        an int8 KV cache with one fp32 scale per token and head: the attention
//                     kernels f32_attn_rows / f32_attn_decode with CE = int8_t
//          (qd8_f32_qc8w_...: dynamically quantised int8 activations; not implemented)
//   op     gemm, gemm_ukernel, gemv_axpy / gemv_dot / gemv_panel16, attn_rows, attn_decode,
//          exp, exp2, rope
//   MRxNR  register tile of a micro-kernel; arch: the xsimd arch (fma3+avx2, avx512bw, neon64)
//          or scalar. In code, tile and arch are template parameters and the int8 element type
//          of an operand is one too (BE / WE / CE = std::int8_t), so one source serves every
//          (type, arch) pair; benches and tests use these names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "microattn/format.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/layout.hpp"

namespace microattn {
namespace kernels {

/// Micro-kernel f32_gemm_<MR>x<NR>__<arch>: C[MR][NR] (=, or += when accumulate)
/// A[MR][kc] · B[kc][NR] (+ add_row broadcast down the rows when add_row is not null).
/// NR = NRV vector widths.
/// A is read one float at a time (row stride lda), B one row of NR elements per k (row stride
/// ldb: a packed panel, or any row-major matrix whose rows hold NR readable elements; with
/// bvs != 0 the row's vector j is at b + j * bvs instead of b + j * W: NR columns from
/// side-by-side weight panels, kPanel16 weights read in place by a 32-wide AVX-512 tile), C is a
/// full MR x NR tile with row stride ldc. B's elements are floats, or int8 (BE = int8_t: the
/// qs8 attention kernels' cached K/V, widened to float in registers; their scales are applied
/// by the caller).
template <class Arch, std::size_t MR, std::size_t NRV, class BE = float, bool kSplitB = false>
inline void f32_gemm_ukernel(std::size_t kc, const float* a, std::size_t lda, const BE* b,
                             std::size_t ldb, float* c, std::size_t ldc, const float* add_row,
                             bool accumulate, std::size_t bvs = 0) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t W = V::kWidth;
  // The vector stride: W at compile time unless kSplitB, so every other caller's kernel is
  // exactly the plain one (GCC 12 for the M55: docs/compiler-notes.md, scalar kernels).
  const std::size_t vs = kSplitB ? bvs : W;
  T acc[MR][NRV];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t j = 0; j < NRV; ++j) acc[i][j] = V::zero();
  // One pointer per row of A and a running pointer into B: every load in the loop is then
  // base + k * 4 or a bumped pointer (clang 14 spent much of the loop on i * lda + k). The
  // loops over i and j are unrolled at every -O level: rolled (GCC 12 at -O2) the accumulators
  // live in memory (docs/compiler-notes.md).
  const float* arow[MR];
  for (std::size_t i = 0; i < MR; ++i) arow[i] = a + i * lda;
  for (std::size_t k = 0; k < kc; ++k, b += ldb) {
    T bv[NRV];
#pragma GCC unroll 64
    for (std::size_t j = 0; j < NRV; ++j) {
      // One load per B vector, not one per use (see Vec::pinned). With one row each vector has
      // one use, and pinning 2 x NRV + 1 live vectors could run out of registers.
      bv[j] = V::load_elem(b + j * vs);
      if (MR > 1) bv[j] = V::pinned(bv[j]);
    }
    if constexpr (V::kLoadsFirst && MR == 4 && NRV == 4) {
      // Cortex-M: every load of the k step before its multiply-adds (Vec::loads_first).
      float av[MR];
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i) av[i] = arow[i][k];
      V::loads_first(av, bv);
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
        for (std::size_t j = 0; j < NRV; ++j) acc[i][j] = V::fma(av[i], bv[j], acc[i][j]);
    } else {
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i) {
        const float av = arow[i][k];
#pragma GCC unroll 64
        for (std::size_t j = 0; j < NRV; ++j) acc[i][j] = V::fma_scalar(av, bv[j], acc[i][j]);
      }
    }
  }
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i) {
#pragma GCC unroll 64
    for (std::size_t j = 0; j < NRV; ++j) {
      T r = acc[i][j];
      if (accumulate) r = r + V::loadu(c + i * ldc + j * W);
      if (add_row) r = r + V::loadu(add_row + j * W);
      V::storeu(c + i * ldc + j * W, r);
    }
  }
}

namespace detail {
// Calls the micro-kernel with MR = mr (1 <= mr <= MR), so tails keep their accumulators in
// registers too.
template <class Arch, std::size_t MR, std::size_t NRV, class BE, bool kSplitB = false>
struct UkernelRows {
  static void call(std::size_t mr, std::size_t kc, const float* a, std::size_t lda, const BE* b,
                   std::size_t ldb, float* c, std::size_t ldc, const float* add_row,
                   bool accumulate, std::size_t bvs) noexcept {
    if (mr == MR)
      f32_gemm_ukernel<Arch, MR, NRV, BE, kSplitB>(kc, a, lda, b, ldb, c, ldc, add_row, accumulate,
                                                   bvs);
    else
      UkernelRows<Arch, MR - 1, NRV, BE, kSplitB>::call(mr, kc, a, lda, b, ldb, c, ldc, add_row,
                                                        accumulate, bvs);
  }
};
template <class Arch, std::size_t NRV, class BE, bool kSplitB>
struct UkernelRows<Arch, 0, NRV, BE, kSplitB> {
  static void call(std::size_t, std::size_t, const float*, std::size_t, const BE*, std::size_t,
                   float*, std::size_t, const float*, bool, std::size_t) noexcept {}
};
/// B(k, n) of a weight operand in `layout` (see f32_gemm).
template <class BE>
inline float b_at(const BE* b, std::size_t ldb, WeightLayout layout, std::size_t k,
                  std::size_t n) noexcept {
  if (layout == WeightLayout::kInOut) return internal::elem_value(b[k * ldb + n]);
  if (layout == WeightLayout::kOutIn) return internal::elem_value(b[n * ldb + k]);
  return internal::elem_value(b[(n / kWeightPanel) * ldb + k * kWeightPanel + n % kWeightPanel]);
}

/// pack_b_panel for stored elements other than fp32: the kc x NR panel widened into
/// pack[k * NR + j] = scale[jc + j] * B(pc + k, jc + j) for int8 (zero past nr), B(pc + k, jc + j)
/// for fp16 / bf16 (unscaled: no multiply), once per panel and row block, so the micro-kernel
/// runs at its fp32 speed and the result equals fp32 math on the widened weights. Rows
/// contiguous in j (kInOut, kPanel16) are widened a vector at a time.
template <class Arch, std::size_t NR, class BE>
inline void pack_b_panel_widened(const BE* b, std::size_t ldb, WeightLayout layout,
                                 const float* scale, std::size_t pc, std::size_t kc, std::size_t jc,
                                 std::size_t nr, float* pack) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t W = V::kWidth, NV = NR / W, P = kWeightPanel;
  constexpr bool kQ = std::is_same<BE, std::int8_t>::value;
  alignas(internal::Tiles<Arch>::kAlign) float sc[NR];
  for (std::size_t j = 0; j < NR; ++j) sc[j] = j < nr ? (kQ ? scale[jc + j] : 1.0f) : 0.0f;
  const BE* src = nullptr;
  std::size_t step = 0;
  if (nr == NR && layout == WeightLayout::kInOut) {
    src = b + pc * ldb + jc, step = ldb;
  } else if (nr == NR && layout == WeightLayout::kPanel16 && NR <= P && P % NR == 0) {
    src = b + (jc / P) * ldb + pc * P + jc % P, step = P;
  }
  if (src) {
    T sv[NV];
    for (std::size_t v = 0; v < NV; ++v) sv[v] = V::loadu(sc + v * W);
    for (std::size_t k = 0; k < kc; ++k, src += step)
      for (std::size_t v = 0; v < NV; ++v) {
        if constexpr (kQ)
          V::storeu(pack + k * NR + v * W, V::load_elem(src + v * W) * sv[v]);
        else
          V::storeu(pack + k * NR + v * W, V::load_elem(src + v * W));
      }
    return;
  }
  for (std::size_t k = 0; k < kc; ++k)
    for (std::size_t j = 0; j < NR; ++j) {
      const float e = j < nr ? b_at(b, ldb, layout, pc + k, jc + j) : 0.0f;
      pack[k * NR + j] = kQ ? e * sc[j] : e;
    }
}

/// pack_b_panel_widened for group-wise int8 (GroupScales): pack[k * NR + j] = s.at(pc + k,
/// jc + j) * q(pc + k, jc + j), zero past nr; the panel's scales re-read at each group start.
template <class Arch, std::size_t NR, std::size_t G>
inline void pack_b_panel_grouped(const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                                 GroupScales<G> s, std::size_t pc, std::size_t kc, std::size_t jc,
                                 std::size_t nr, float* pack) noexcept {
  using V = internal::Vec<Arch>;
  constexpr std::size_t W = V::kWidth, NV = NR / W, P = kWeightPanel;
  alignas(internal::Tiles<Arch>::kAlign) float sc[NR];
  const std::int8_t* src = nullptr;
  std::size_t step = 0;
  if (nr == NR && layout == WeightLayout::kInOut) {
    src = b + pc * ldb + jc, step = ldb;
  } else if (nr == NR && layout == WeightLayout::kPanel16 && NR <= P && P % NR == 0) {
    src = b + (jc / P) * ldb + pc * P + jc % P, step = P;
  }
  for (std::size_t k = 0; k < kc; ++k) {
    if (k == 0 || (pc + k) % G == 0)
      for (std::size_t j = 0; j < NR; ++j) sc[j] = j < nr ? s.at(pc + k, jc + j) : 0.0f;
    if (src) {
      for (std::size_t v = 0; v < NV; ++v)
        V::storeu(pack + k * NR + v * W,
                  V::load_elem(src + k * step + v * W) * V::loadu(sc + v * W));
    } else {
      for (std::size_t j = 0; j < NR; ++j)
        pack[k * NR + j] = j < nr ? b_at(b, ldb, layout, pc + k, jc + j) * sc[j] : 0.0f;
    }
  }
}

/// dst[0 .. n) = src[0 .. n): a row of an edge tile or of a partial panel (n < kNR), whole
/// vectors then single floats, each through an empty asm (Vec::opaque, no instruction), so
/// that GCC 12 cannot make the loop an inlined `rep movsq` (KernelParams::kCopyRowVectors;
/// docs/compiler-notes.md).
template <class Arch>
inline void copy_row(float* dst, const float* src, std::size_t n) noexcept {
  using V = internal::Vec<Arch>;
  constexpr std::size_t W = V::kWidth;
  std::size_t j = 0;
  for (; j + W <= n; j += W) V::storeu(dst + j, V::opaque(V::loadu(src + j)));
  for (; j < n; ++j) dst[j] = internal::Vec<ScalarArch>::opaque(src[j]);
}

/// Packs the kc x NR panel of B at depth pc, column jc (nr <= NR valid columns, the rest
/// zero) into pack[k * NR + j]. Full panels copy rows of NR contiguous floats with a
/// fixed-size memcpy, whole-vector moves at every -O level (GCC 12 vectorises a loop only at
/// -O3): this copy runs once per panel and row block, so it must be cheap.
template <class Arch, std::size_t NR>
inline void pack_b_panel(const float* b, std::size_t ldb, WeightLayout layout, std::size_t pc,
                         std::size_t kc, std::size_t jc, std::size_t nr, float* pack) noexcept {
  constexpr std::size_t P = kWeightPanel;
  if (nr == NR) {
    if (layout == WeightLayout::kInOut) {
      const float* src = b + pc * ldb + jc;
      for (std::size_t k = 0; k < kc; ++k, src += ldb)
        std::memcpy(pack + k * NR, src, NR * sizeof(float));
      return;
    }
    if (layout == WeightLayout::kOutIn) {  // PyTorch's layout: a transposing copy
      const float* src = b + jc * ldb + pc;
      std::size_t k0 = 0;
      using V = internal::Vec<Arch>;
      if constexpr (V::kTranspose && NR % V::kWidth == 0) {
        // x86: W x W blocks through Vec::transpose (W loads, the transpose's shuffles, W
        // stores) instead of W * W single floats; the scalar loop does the last kc % W rows.
        constexpr std::size_t W = V::kWidth;
        for (; k0 + W <= kc; k0 += W)
          for (std::size_t j0 = 0; j0 < NR; j0 += W) {
            typename V::type r[W];
            for (std::size_t i = 0; i < W; ++i) r[i] = V::loadu(src + (j0 + i) * ldb + k0);
            V::transpose(r);
            for (std::size_t i = 0; i < W; ++i) V::storeu(pack + (k0 + i) * NR + j0, r[i]);
          }
      }
      for (std::size_t k = k0; k < kc; ++k)
        for (std::size_t j = 0; j < NR; ++j) pack[k * NR + j] = src[j * ldb + k];
      return;
    }
    if (NR <= P && P % NR == 0) {  // a slice of one 16-column panel (jc is a multiple of NR)
      const float* src = b + (jc / P) * ldb + pc * P + jc % P;
      for (std::size_t k = 0; k < kc; ++k, src += P)
        std::memcpy(pack + k * NR, src, NR * sizeof(float));
      return;
    }
    if (NR % P == 0 && jc % P == 0) {  // NR / 16 whole panels side by side
      for (std::size_t k = 0; k < kc; ++k)
        for (std::size_t p = 0; p < NR / P; ++p)
          std::memcpy(pack + k * NR + p * P, b + (jc / P + p) * ldb + (pc + k) * P,
                      P * sizeof(float));
      return;
    }
  }
  // A partial panel (the last nr < NR columns; tiny layers have nothing else): zero it whole,
  // then copy the nr columns with the layout decided once, not per element.
  for (std::size_t i = 0; i < kc * NR; ++i) pack[i] = 0.0f;
  if (layout == WeightLayout::kInOut) {
    if constexpr (internal::Tiles<Arch>::kCopyRowVectors) {
      for (std::size_t k = 0; k < kc; ++k)
        copy_row<Arch>(pack + k * NR, b + (pc + k) * ldb + jc, nr);
    } else {
      // Four floats at a time by fixed-size memcpy (one vector move at any -O level), then the
      // rest one by one.
      const std::size_t n4 = nr / 4 * 4;
      for (std::size_t k = 0; k < kc; ++k) {
        const float* src = b + (pc + k) * ldb + jc;
        std::size_t j = 0;
        for (; j < n4; j += 4) std::memcpy(pack + k * NR + j, src + j, 4 * sizeof(float));
        for (; j < nr; ++j) pack[k * NR + j] = src[j];
      }
    }
  } else if (layout == WeightLayout::kOutIn) {
    for (std::size_t j = 0; j < nr; ++j)
      for (std::size_t k = 0; k < kc; ++k) pack[k * NR + j] = b[(jc + j) * ldb + pc + k];
  } else {
    for (std::size_t k = 0; k < kc; ++k)
      for (std::size_t j = 0; j < nr; ++j) pack[k * NR + j] = b_at(b, ldb, layout, pc + k, jc + j);
  }
}
}  // namespace detail

/// The micro-kernel for any mr in 1..kMR rows: C[mr][kNR] (ldc) = or += A · B (kSplitB: B's
/// vectors bvs apart, see f32_gemm_ukernel).
template <class Arch, class BE = float, bool kSplitB = false>
inline void f32_gemm_ukernel_rows(std::size_t mr, std::size_t kc, const float* a, std::size_t lda,
                                  const BE* b, std::size_t ldb, float* c, std::size_t ldc,
                                  const float* add_row, bool accumulate,
                                  std::size_t bvs = 0) noexcept {
  using Tl = internal::Tiles<Arch>;
  MICROATTN_ASSERT(mr >= 1 && mr <= Tl::kMR);
  detail::UkernelRows<Arch, Tl::kMR, Tl::kNRVec, BE, kSplitB>::call(mr, kc, a, lda, b, ldb, c, ldc,
                                                                    add_row, accumulate, bvs);
}

namespace detail {
// Calls the micro-kernel on the first nv (1 <= nv <= NRV) vectors of the panel only.
template <class Arch, std::size_t MR, std::size_t NRV, class BE, bool kSplitB>
struct UkernelCols {
  static void call(std::size_t nv, std::size_t mr, std::size_t kc, const float* a, std::size_t lda,
                   const BE* b, std::size_t ldb, float* c, std::size_t ldc, const float* add_row,
                   bool accumulate, std::size_t bvs) noexcept {
    if (nv == NRV)
      UkernelRows<Arch, MR, NRV, BE, kSplitB>::call(mr, kc, a, lda, b, ldb, c, ldc, add_row,
                                                    accumulate, bvs);
    else
      UkernelCols<Arch, MR, NRV - 1, BE, kSplitB>::call(nv, mr, kc, a, lda, b, ldb, c, ldc, add_row,
                                                        accumulate, bvs);
  }
};
template <class Arch, std::size_t MR, class BE, bool kSplitB>
struct UkernelCols<Arch, MR, 0, BE, kSplitB> {
  static void call(std::size_t, std::size_t, std::size_t, const float*, std::size_t, const BE*,
                   std::size_t, float*, std::size_t, const float*, bool, std::size_t) noexcept {}
};
}  // namespace detail

/// f32_gemm_ukernel_rows on the first nv (1 <= nv <= kNRVec) vectors of the panel: C's columns
/// from nv * W on are neither read nor written. Narrow operands (a tiny layer's 2-column
/// projection, d_head 2 in P·V) then cost one vector of FMAs per row and k, not a whole panel.
template <class Arch, class BE = float, bool kSplitB = false>
inline void f32_gemm_ukernel_rows_nv(std::size_t nv, std::size_t mr, std::size_t kc, const float* a,
                                     std::size_t lda, const BE* b, std::size_t ldb, float* c,
                                     std::size_t ldc, const float* add_row, bool accumulate,
                                     std::size_t bvs = 0) noexcept {
  using Tl = internal::Tiles<Arch>;
  MICROATTN_ASSERT(mr >= 1 && mr <= Tl::kMR && nv >= 1 && nv <= Tl::kNRVec);
  detail::UkernelCols<Arch, Tl::kMR, Tl::kNRVec, BE, kSplitB>::call(nv, mr, kc, a, lda, b, ldb, c,
                                                                    ldc, add_row, accumulate, bvs);
}

/// Where the GEMM writes C(m, n): plain row-major with row stride ldc.
struct StoreRowMajor {
  float* c;
  std::size_t ldc;
  bool direct() const noexcept { return true; }
  std::size_t ld() const noexcept { return ldc; }
  float* row(std::size_t m, std::size_t n) const noexcept { return c + m * ldc + n; }
  float& at(std::size_t m, std::size_t n) const noexcept { return c[m * ldc + n]; }
};

/// Floats of packing buffer f32_gemm needs for Arch.
template <class Arch>
constexpr std::size_t gemm_pack_floats() noexcept {
  return internal::Tiles<Arch>::kKC * internal::Tiles<Arch>::kNR;
}

namespace detail {
/// Where B's kc x nr panel at depth pc, columns jc, lies in a dense weight layout: `count`
/// strips of `elems` contiguous elements, `stride` elements apart, the first `first` elements
/// from b. [in][out]: a strip per row k (its nr columns); [out][in]: a strip per column n (its
/// kc rows). kPanel16: none (a panel is contiguous, which hardware prefetchers follow).
struct PanelStrips {
  std::size_t first = 0, count = 0, stride = 0, elems = 0;
};
inline PanelStrips panel_strips(WeightLayout layout, std::size_t ldb, std::size_t pc,
                                std::size_t kc, std::size_t jc, std::size_t nr) noexcept {
  if (layout == WeightLayout::kInOut) return PanelStrips{pc * ldb + jc, kc, ldb, nr};
  if (layout == WeightLayout::kOutIn) return PanelStrips{jc * ldb + pc, nr, ldb, kc};
  return PanelStrips{};
}

/// The strips of the panel gemm_weights reads after the one at (pc, jc) within a row block of
/// its K x N weights: the next depth block, else the next columns' first; none after the last.
template <class Arch>
PanelStrips next_panel_strips(WeightLayout layout, std::size_t K, std::size_t N, std::size_t ldb,
                              std::size_t pc, std::size_t jc) noexcept {
  using Tl = internal::Tiles<Arch>;
  const bool deeper = pc + Tl::kKC < K;
  const std::size_t npc = deeper ? pc + Tl::kKC : 0, njc = deeper ? jc : jc + Tl::kNR;
  if (njc >= N) return PanelStrips{};
  return panel_strips(layout, ldb, npc, internal::min_size(Tl::kKC, K - npc), njc,
                      internal::min_size(Tl::kNR, N - njc));
}

/// Whether a tile of whole panels takes two 16-wide panels side by side (AVX-512: a vector is
/// a kPanel16 panel), reading B's vectors bvs apart.
template <class Arch>
constexpr bool kTwoPanels = (internal::Tiles<Arch>::kWidth == kWeightPanel) &&
                            (internal::Tiles<Arch>::kNR % kWeightPanel == 0) &&
                            (internal::Tiles<Arch>::kNR > kWeightPanel);

/// B's kc x kNR panel at depth pc, columns jc (nr valid) for a row block of mc rows, as the
/// micro-kernel reads it: row k at the returned pointer + k * bld, its vector j bvs apart (see
/// f32_gemm_ukernel). In place where the weights hold it (kPanel16: a slice of one panel, or two
/// panels side by side on AVX-512; [in][out] for short row blocks, KernelParams::
/// kInPlaceInOutRows), else packed into pack (row stride kNR; int8 dequantised). A partial
/// tile reads only the vectors holding its nr columns; lanes past nr (the panel's padding) go
/// to tile columns never stored. The same values in the same order either way.
template <class Arch, class BE, class S>
MICROATTN_ALWAYS_INLINE inline const float* gemm_panel_b(
    const BE* b, std::size_t ldb, WeightLayout b_layout, S b_scale, std::size_t mc, std::size_t pc,
    std::size_t kc, std::size_t jc, std::size_t nr, float* pack, std::size_t& bld,
    std::size_t& bvs) noexcept {
  using Tl = internal::Tiles<Arch>;
  constexpr std::size_t NR = Tl::kNR, P = kWeightPanel, W = Tl::kWidth;
  const float* bp = pack;
  bld = NR, bvs = W;
  const std::size_t read = nr == NR ? NR : internal::round_up(nr, W);
  if constexpr (std::is_same<BE, float>::value) {
    if (b_layout == WeightLayout::kInOut && nr == NR && mc <= Tl::kInPlaceInOutRows) {
      bp = b + pc * ldb + jc, bld = ldb;
    } else if (b_layout == WeightLayout::kPanel16 && jc % P + read <= P) {
      bp = b + (jc / P) * ldb + pc * P + jc % P, bld = P;
    } else if (kTwoPanels<Arch> && b_layout == WeightLayout::kPanel16 && nr == NR) {
      bp = b + (jc / P) * ldb + pc * P, bld = P, bvs = ldb;
    } else {
      pack_b_panel<Arch, NR>(b, ldb, b_layout, pc, kc, jc, nr, pack);
    }
  } else if constexpr (std::is_same<S, const float*>::value) {
    pack_b_panel_widened<Arch, NR>(b, ldb, b_layout, b_scale, pc, kc, jc, nr, pack);
  } else {
    pack_b_panel_grouped<Arch, NR>(b, ldb, b_layout, b_scale, pc, kc, jc, nr, pack);
  }
  return bp;
}

/// Asks L2 for up to n of the strips left in `next`, first to last (PanelStrips).
template <class BE>
MICROATTN_ALWAYS_INLINE inline void prefetch_strips(const BE* b, PanelStrips& next,
                                                    std::size_t n) noexcept {
  for (std::size_t q = 0; q < n && next.count > 0; ++q) {
    internal::prefetch_l2(b + next.first, next.elems * sizeof(BE));
    next.first += next.stride, --next.count;
  }
}

/// Rows m0 .. m0 + mr, columns jc .. jc + nr of C into (to_tile) or out of `tile` (row
/// stride kNR): an edge or scattered micro-tile is computed there.
template <class Arch, class Store>
MICROATTN_ALWAYS_INLINE inline void gemm_tile_copy(bool to_tile, const Store& store, std::size_t m0,
                                                   std::size_t mr, std::size_t jc, std::size_t nr,
                                                   float* tile) noexcept {
  constexpr std::size_t NR = internal::Tiles<Arch>::kNR;
  for (std::size_t i = 0; i < mr; ++i) {
    float* t = tile + i * NR;
    if constexpr (internal::Tiles<Arch>::kCopyRowVectors) {
      if (to_tile)
        copy_row<Arch>(t, store.row(m0 + i, jc), nr);
      else
        copy_row<Arch>(store.row(m0 + i, jc), t, nr);
    } else {
      for (std::size_t j = 0; j < nr; ++j) {
        if (to_tile)
          t[j] = store.at(m0 + i, jc + j);
        else
          store.at(m0 + i, jc + j) = t[j];
      }
    }
  }
}

/// f32_gemm and qc8w_f32_gemm (see f32_gemm): row blocks of kMC rows, panels of kNR columns,
/// depth blocks of kKC, and per panel the kMR-row micro-tiles. Whole-panel tiles of a direct
/// store are computed in place, as two calls of half the rows where KernelParams::
/// kSplitTileStride says (each row's multiply-adds are the same either way), others in `tile`.
/// The micro-kernel and copy_row calls stay here, not in the always-inline helpers: GCC 12
/// orders its early inlining by direct calls, and moved into a helper they changed which
/// micro-kernel tails it inlined (docs/compiler-notes.md, "GEMM helpers").
template <class Arch, class Store, class BE, class S>
void gemm_weights(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                  const BE* b, std::size_t ldb, WeightLayout b_layout, S b_scale, const float* bias,
                  Store store, float* pack) noexcept {
  using Tl = internal::Tiles<Arch>;
  constexpr std::size_t MR = Tl::kMR, NR = Tl::kNR, KC = Tl::kKC, MC = Tl::kMC;
  constexpr std::size_t kHalf = (MR + 1) / 2;
  alignas(Tl::kAlign) float tile[MR * NR];
  alignas(Tl::kAlign) float bias_row[NR];
  const bool split =
      Tl::kSplitTileStride != 0 && lda % internal::max_size(Tl::kSplitTileStride, 1) == 0;
  for (std::size_t ic = 0; ic < M; ic += MC) {
    const std::size_t mc = internal::min_size(MC, M - ic);
    for (std::size_t jc = 0; jc < N; jc += NR) {
      const std::size_t nr = internal::min_size(NR, N - jc);
      // Only with a bias: GCC 12 makes `bias && j < nr ? bias[jc + j] : 0` AVX-512 masked loads
      // from a null pointer, each a microcode assist (docs/compiler-notes.md).
      if (bias) {
        if constexpr (Tl::kCopyRowVectors) {
          copy_row<Arch>(bias_row, bias + jc, nr);
        } else {
          for (std::size_t j = 0; j < nr; ++j) bias_row[j] = bias[jc + j];
        }
        for (std::size_t j = nr; j < NR; ++j) bias_row[j] = 0.0f;
      }
      for (std::size_t pc = 0; pc < K; pc += KC) {
        const std::size_t kc = internal::min_size(KC, K - pc);
        const bool first = pc == 0;
        std::size_t bld, bvs;
        const float* bp =
            gemm_panel_b<Arch>(b, ldb, b_layout, b_scale, mc, pc, kc, jc, nr, pack, bld, bvs);
        PanelStrips next{};
        std::size_t next_per_tile = 0;
        if constexpr (Tl::kPrefetchNextPanel) {
          next = next_panel_strips<Arch>(b_layout, K, N, ldb, pc, jc);
          const std::size_t tiles = (mc + MR - 1) / MR;
          next_per_tile = (next.count + tiles - 1) / tiles;
        }
        for (std::size_t ir = 0; ir < mc; ir += MR) {
          const std::size_t mr = internal::min_size(MR, mc - ir);
          const std::size_t m0 = ic + ir;
          if constexpr (Tl::kPrefetchNextPanel) prefetch_strips(b, next, next_per_tile);
          const float* ablk = a + m0 * lda + pc;
          const float* add = (first && bias) ? bias_row : nullptr;
          if (store.direct() && nr == NR) {
            if (Tl::kSplitTileStride != 0 && split) {
              for (std::size_t h = 0; h < mr; h += kHalf)
                f32_gemm_ukernel_rows<Arch, float, kTwoPanels<Arch>>(
                    internal::min_size(kHalf, mr - h), kc, ablk + h * lda, lda, bp, bld,
                    store.row(m0 + h, jc), store.ld(), add, !first, bvs);
              continue;
            }
            f32_gemm_ukernel_rows<Arch, float, kTwoPanels<Arch>>(
                mr, kc, ablk, lda, bp, bld, store.row(m0, jc), store.ld(), add, !first, bvs);
            continue;
          }
          // Edge or scattered tile. Only the vectors holding the nr columns (a partial panel is
          // zero past them); the scalar path keeps its whole panel (docs/compiler-notes.md, M55).
          if (!first) gemm_tile_copy<Arch>(true, store, m0, mr, jc, nr, tile);
          const std::size_t nv = Tl::kWidth > 1 ? (nr + Tl::kWidth - 1) / Tl::kWidth : Tl::kNRVec;
          f32_gemm_ukernel_rows_nv<Arch, float, kTwoPanels<Arch>>(nv, mr, kc, ablk, lda, bp, bld,
                                                                  tile, NR, add, !first, bvs);
          gemm_tile_copy<Arch>(false, store, m0, mr, jc, nr, tile);
        }
      }
    }
  }
}

}  // namespace detail

/// C = A · B (+ bias), C[M][N] written through store, A[M][K] row-major (row stride lda).
/// B is a weight matrix (K inputs, N outputs) as stored in `layout`:
///   kInOut   B(k, n) = b[k * ldb + n]                       (weights [in][out])
///   kOutIn   B(k, n) = b[n * ldb + k]                       (weights [out][in], PyTorch)
///   kPanel16 B(k, n) = b[(n / 16) * ldb + k * 16 + n % 16]  (ldb = floats between panels)
/// bias: N floats or null. pack: gemm_pack_floats<Arch>() floats.
///
/// Blocking: rows in blocks of kMC (A block stays in L2), columns in panels of kNR, depth in
/// blocks of kKC; each kKC x kNR panel of B is packed once (zero-padded past N) and reused by
/// every kMR-row micro-tile of the row block. kPanel16 weights are read in place (no packing)
/// on every arch whose kNR divides 16 (AVX2, NEON, scalar) or whose vector is 16 floats
/// (AVX-512: a 32-wide tile reads two panels side by side).
template <class Arch, class Store>
void f32_gemm(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
              const float* b, std::size_t ldb, WeightLayout b_layout, const float* bias,
              Store store, float* pack) noexcept {
  detail::gemm_weights<Arch>(M, N, K, a, lda, b, ldb, b_layout, static_cast<const float*>(nullptr),
                             bias, store, pack);
}

/// qc8w_f32_gemm: f32_gemm with int8 weights, B(k, n) = b_scale[n] * q(k, n) (q stored in
/// b_layout like fp32 B; b_scale: N floats, the per-output-column scales). Each kKC x kNR
/// panel is dequantised into the packing buffer once per row block (kPanel16 included), so
/// the micro-kernel and its speed are the fp32 ones: the result is fp32 math on the
/// dequantised weights.
template <class Arch, class Store>
void qc8w_f32_gemm(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                   const std::int8_t* b, std::size_t ldb, WeightLayout b_layout,
                   const float* b_scale, const float* bias, Store store, float* pack) noexcept {
  detail::gemm_weights<Arch>(M, N, K, a, lda, b, ldb, b_layout, b_scale, bias, store, pack);
}

/// f16w_f32_gemm / bf16w_f32_gemm: f32_gemm with fp16 / bf16 weights (stored in b_layout like
/// fp32 B, no scales): each panel is widened into the packing buffer as qc8w_f32_gemm's is, so
/// the result is fp32 math on the widened weights.
template <class Arch, class Store>
void f16w_f32_gemm(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                   const f16* b, std::size_t ldb, WeightLayout b_layout, const float* bias,
                   Store store, float* pack) noexcept {
  detail::gemm_weights<Arch>(M, N, K, a, lda, b, ldb, b_layout, static_cast<const float*>(nullptr),
                             bias, store, pack);
}
template <class Arch, class Store>
void bf16w_f32_gemm(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                    const bf16* b, std::size_t ldb, WeightLayout b_layout, const float* bias,
                    Store store, float* pack) noexcept {
  detail::gemm_weights<Arch>(M, N, K, a, lda, b, ldb, b_layout, static_cast<const float*>(nullptr),
                             bias, store, pack);
}

/// qg8w_f32_gemm: f32_gemm with group-wise int8 weights, B(k, n) = s.at(k, n) * q(k, n) (a
/// scale per output column and group of G inputs; GroupScales): each panel dequantised into the
/// packing buffer as qc8w_f32_gemm's is, the scales re-read per group.
template <class Arch, std::size_t G, class Store>
void qg8w_f32_gemm(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                   const std::int8_t* b, std::size_t ldb, WeightLayout b_layout, GroupScales<G> s,
                   const float* bias, Store store, float* pack) noexcept {
  detail::gemm_weights<Arch>(M, N, K, a, lda, b, ldb, b_layout, s, bias, store, pack);
}

}  // namespace kernels
}  // namespace microattn
