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

#include "microattn/internal/vec.hpp"
#include "microattn/weights.hpp"

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
  // The vector stride: W at compile time unless kSplitB (so every other caller's kernel is
  // exactly the plain one: GCC 12's MVE auto-vectorisation of the scalar kernel depends on it).
  const std::size_t vs = kSplitB ? bvs : W;
  T acc[MR][NRV];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t j = 0; j < NRV; ++j) acc[i][j] = V::zero();
  // One pointer per row of A and a running pointer into B: every load in the loop is then
  // base + k * 4 or a bumped pointer (computing i * lda + k per load cost clang a third).
  // The loops over i and j are unrolled whatever the optimisation level: rolled (GCC at -O2)
  // the accumulators live in memory and the kernel runs at a third of its speed.
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
  if (layout == WeightLayout::kInOut) return static_cast<float>(b[k * ldb + n]);
  if (layout == WeightLayout::kOutIn) return static_cast<float>(b[n * ldb + k]);
  return static_cast<float>(b[(n / kWeightPanel) * ldb + k * kWeightPanel + n % kWeightPanel]);
}

/// The int8 form of pack_b_panel: the kc x NR panel of an int8 weight operand dequantised into
/// pack[k * NR + j] = scale[jc + j] * B(pc + k, jc + j) (zero past nr), once per panel and row
/// block, so the micro-kernel runs at its fp32 speed and the result equals fp32 math on the
/// dequantised weights. Rows contiguous in j (kInOut, kPanel16) are widened a vector at a time.
template <class Arch, std::size_t NR>
inline void pack_b_panel_q8(const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                            const float* scale, std::size_t pc, std::size_t kc, std::size_t jc,
                            std::size_t nr, float* pack) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t W = V::kWidth, NV = NR / W, P = kWeightPanel;
  alignas(internal::Tiles<Arch>::kAlign) float sc[NR];
  for (std::size_t j = 0; j < NR; ++j) sc[j] = j < nr ? scale[jc + j] : 0.0f;
  const std::int8_t* src = nullptr;
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
      for (std::size_t v = 0; v < NV; ++v)
        V::storeu(pack + k * NR + v * W, V::load_elem(src + v * W) * sv[v]);
    return;
  }
  for (std::size_t k = 0; k < kc; ++k)
    for (std::size_t j = 0; j < NR; ++j)
      pack[k * NR + j] = j < nr ? b_at(b, ldb, layout, pc + k, jc + j) * sc[j] : 0.0f;
}

/// Whether the GEMM copies the rows of edge tiles and partial panels with copy_row: on the
/// xsimd arches. (The scalar and Helium kernels keep their plain loops: GCC 12 emits no string
/// instruction for those targets, and their code stays as it was.)
template <class Arch>
constexpr bool kCopyRowVectors = (MICROATTN_HAS_XSIMD != 0) && internal::Vec<Arch>::kWidth > 1;

/// dst[0 .. n) = src[0 .. n): a row of an edge tile or of a partial panel (n < kNR), whole
/// vectors then single floats, each through an empty asm (Vec::opaque, no instruction). As a
/// plain loop GCC 12 makes it a memcpy, which it inlines on x86 as `rep movsq` (-march=native
/// and the presets' -march=x86-64-v3/v4 alike), whose start-up cost was 60 % of the
/// projections' time in the teaching notes' tiny layer (S1) on an Emerald Rapids Xeon. The
/// vector loop needs the asm too: with xsimd 14's loads and stores GCC 12 recognises it as a
/// memcpy as well (xsimd 8.1's it does not).
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
/// fixed-size memcpy, which every compiler turns into whole-vector moves at any optimisation
/// level (a loop is vectorised by GCC 12 only at -O3: at -O2 it needs an alias check): this
/// copy runs once per panel and row block, so it must be cheap.
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
    if constexpr (kCopyRowVectors<Arch>) {
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

/// A micro-tile of more than kL1SetWays rows is computed as two calls of half as many rows when
/// its rows of A lie a multiple of 4 KiB (kL1WayFloats floats) apart (lda 1024, 2048, ...:
/// d_model 1024 and up). The lines the micro-kernel reads at one k then all fall in one set of a
/// 64-set L1 (4 KiB a way), which holds 8 lines on Zen 3 and Zen 4: the 12 rows of the AVX-512
/// tile evicted each other on every k. Measured on the Zen 4 VM (a scratch GEMM of 264 x 64 x K,
/// K = lda, kPanel16 and [in][out] weights, two alternated runs): lda 1024 and 2048 ran at
/// 101-103 GFLOP/s against 108-111 with lda 1040 and 2064; as two calls of 6 rows, 112-115.
/// Lda 512 (2 KiB: two sets, 6 rows each) loses nothing measurable and keeps whole tiles. The
/// AVX2 tile's 6 rows fit a set (in calls of 3 or 2 rows it ran at 57-85 instead of 106-112), so
/// only tiles of more than 8 rows are split. (Intel's AVX-512 cores have 12-way 48 KiB L1s, also
/// 4 KiB a way: the split applies there too, unmeasured.) Tiles of whole panels only, which are
/// written in place; an edge tile keeps its one call. Each row's multiply-adds are the same
/// whichever call computes them: the same bits.
constexpr std::size_t kL1SetWays = 8;
constexpr std::size_t kL1WayFloats = 4096 / sizeof(float);

template <class Arch, class Store, class BE>
void gemm_weights(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                  const BE* b, std::size_t ldb, WeightLayout b_layout, const float* b_scale,
                  const float* bias, Store store, float* pack) noexcept {
  using Tl = internal::Tiles<Arch>;
  constexpr std::size_t MR = Tl::kMR, NR = Tl::kNR, KC = Tl::kKC, MC = Tl::kMC;
  alignas(Tl::kAlign) float tile[MR * NR];
  alignas(Tl::kAlign) float bias_row[NR];
  constexpr bool kPrefetchNext = Tl::kWidth >= 8 && kCopyRowVectors<Arch>;  // AVX2, AVX-512
  constexpr std::size_t kHalf = (MR + 1) / 2;
  constexpr bool kSplitTiles = MR > kL1SetWays;
  const bool split_tiles = kSplitTiles && lda % kL1WayFloats == 0;
  for (std::size_t ic = 0; ic < M; ic += MC) {
    const std::size_t mc = internal::min_size(MC, M - ic);
    for (std::size_t jc = 0; jc < N; jc += NR) {
      const std::size_t nr = internal::min_size(NR, N - jc);
      // Only with a bias: GCC 12 turns `bias && j < nr ? bias[jc + j] : 0` into AVX-512 masked
      // loads from a null pointer, and a masked load that would fault takes a microcode assist
      // (a fifth of a tiny layer's time).
      if (bias) {
        if constexpr (kCopyRowVectors<Arch>) {
          copy_row<Arch>(bias_row, bias + jc, nr);
        } else {
          for (std::size_t j = 0; j < nr; ++j) bias_row[j] = bias[jc + j];
        }
        for (std::size_t j = nr; j < NR; ++j) bias_row[j] = 0.0f;
      }
      for (std::size_t pc = 0; pc < K; pc += KC) {
        const std::size_t kc = internal::min_size(KC, K - pc);
        const bool first = pc == 0;
        // B's kc x NR panel: in place when kPanel16 weights hold it (row stride 16: the vectors
        // the kernel reads lie in one panel, as with NR <= 16 or a last tile of <= 16 columns,
        // or NR / 16 panels side by side when a vector is a whole panel, as on AVX-512), else
        // packed (row stride NR). A partial tile reads only the vectors holding its nr
        // columns; lanes past nr (the panel's padding) go to tile columns never stored.
        const float* bp = pack;
        std::size_t bld = NR, bvs = Tl::kWidth;  // B's vector stride (read with kTwoPanels only)
        constexpr std::size_t P = kWeightPanel, W = Tl::kWidth;
        // A tile of whole panels whose vectors are panels (AVX-512: two 16-wide panels).
        constexpr bool kTwoPanels = W == P && NR % P == 0 && NR > P;
        const std::size_t read = nr == NR ? NR : internal::round_up(nr, W);
        // x86: [in][out] weights are read in place, without packing, by a row block of at most
        // 72 rows (a short prompt: P1's and M1's 64 tokens), which reads each panel too few
        // times to repay copying it. Medians of three alternated runs on the Emerald Rapids VM:
        // AVX-512 P1 213 vs 221 us, M1 29.4 vs 30.4 us; AVX2 build P1 420 vs 443 us, M1 39.9 vs
        // 41.8 us. P2's 256-row blocks were 1 % slower in place, so they pack. Same values in the
        // same order: the same bits.
        constexpr std::size_t kInPlaceRows = W >= 8 && kCopyRowVectors<Arch> ? 72 : 0;
        if constexpr (std::is_same<BE, float>::value) {
          if (b_layout == WeightLayout::kInOut && nr == NR && mc <= kInPlaceRows) {
            bp = b + pc * ldb + jc, bld = ldb;
          } else if (b_layout == WeightLayout::kPanel16 && jc % P + read <= P) {
            bp = b + (jc / P) * ldb + pc * P + jc % P, bld = P;
          } else if (kTwoPanels && b_layout == WeightLayout::kPanel16 && nr == NR) {
            bp = b + (jc / P) * ldb + pc * P, bld = P, bvs = ldb;
          } else {
            detail::pack_b_panel<Arch, NR>(b, ldb, b_layout, pc, kc, jc, nr, pack);
          }
        } else {
          detail::pack_b_panel_q8<Arch, NR>(b, ldb, b_layout, b_scale, pc, kc, jc, nr, pack);
        }
        // x86: the next panel of dense weights into L2 while this one's micro-tiles run, a few
        // strips per micro-tile. An [in][out] panel's rows are NR elements each, ldb apart (2 KiB
        // in a 512-wide matrix: a new 4 KiB page every other row), and hardware prefetchers do
        // not cross pages: from memory, its copy (or its first micro-tile, in place) waited on
        // every miss. P2's projections (three 512 x 64 weight slices per head and W_O, over 256
        // rows, the weights coming from memory; a Zen 4 VM, three runs) with [in][out] weights
        // ran at 0.89-0.92 of the speed with kPanel16 weights in the same run before, 0.97-0.99
        // after with AVX-512; 0.83-0.91 and 0.98-1.01 with AVX2. The same loads in the same
        // order: the same bits. (Not on ARM: unmeasured; Cortex-M has no cache to fill.)
        PanelStrips next{};
        std::size_t next_per_tile = 0;
        if constexpr (kPrefetchNext) {
          next = next_panel_strips<Arch>(b_layout, K, N, ldb, pc, jc);
          const std::size_t tiles = (mc + MR - 1) / MR;
          next_per_tile = (next.count + tiles - 1) / tiles;
        }
        for (std::size_t ir = 0; ir < mc; ir += MR) {
          const std::size_t mr = internal::min_size(MR, mc - ir);
          const std::size_t m0 = ic + ir;
          if constexpr (kPrefetchNext) {
            for (std::size_t q = 0; q < next_per_tile && next.count > 0; ++q) {
              internal::prefetch_l2(b + next.first, next.elems * sizeof(BE));
              next.first += next.stride, --next.count;
            }
          }
          const float* ablk = a + m0 * lda + pc;
          const float* add = (first && bias) ? bias_row : nullptr;
          if (store.direct() && nr == NR) {
            if (kSplitTiles && split_tiles) {
              for (std::size_t h = 0; h < mr; h += kHalf)
                f32_gemm_ukernel_rows<Arch, float, kTwoPanels>(
                    internal::min_size(kHalf, mr - h), kc, ablk + h * lda, lda, bp, bld,
                    store.row(m0 + h, jc), store.ld(), add, !first, bvs);
              continue;
            }
            f32_gemm_ukernel_rows<Arch, float, kTwoPanels>(
                mr, kc, ablk, lda, bp, bld, store.row(m0, jc), store.ld(), add, !first, bvs);
            continue;
          }
          // Edge or scattered tile: compute into a local tile, then write what is in range.
          if (!first) {
            for (std::size_t i = 0; i < mr; ++i) {
              if constexpr (kCopyRowVectors<Arch>) {
                copy_row<Arch>(tile + i * NR, store.row(m0 + i, jc), nr);
              } else {
                for (std::size_t j = 0; j < nr; ++j) tile[i * NR + j] = store.at(m0 + i, jc + j);
              }
            }
          }
          // Only the vectors holding the nr columns (a partial panel is zero past them). Not on
          // the scalar path: there each narrower width is one more instantiation for GCC 12 to
          // auto-vectorise for Cortex-M55 (MVE) its own way, and a row's last bits then depended
          // on its tile's height (NumericContract.LayerIsCausalBitForBit on the M55).
          const std::size_t nv = W > 1 ? (nr + W - 1) / W : Tl::kNRVec;
          f32_gemm_ukernel_rows_nv<Arch, float, kTwoPanels>(nv, mr, kc, ablk, lda, bp, bld, tile,
                                                            NR, add, !first, bvs);
          for (std::size_t i = 0; i < mr; ++i) {
            if constexpr (kCopyRowVectors<Arch>) {
              copy_row<Arch>(store.row(m0 + i, jc), tile + i * NR, nr);
            } else {
              for (std::size_t j = 0; j < nr; ++j) store.at(m0 + i, jc + j) = tile[i * NR + j];
            }
          }
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
  detail::gemm_weights<Arch>(M, N, K, a, lda, b, ldb, b_layout, nullptr, bias, store, pack);
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

}  // namespace kernels
}  // namespace microattn
