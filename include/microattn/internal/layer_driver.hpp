// SPDX-License-Identifier: Apache-2.0
// microattn internal: what the layers' prefill pipelines share (MultiHeadAttention,
// ScaledDotProductAttention, KvAttention::prefill): the staged K/V buffers, the masks, the
// argument checks, the projections' row blocks and weight slices, and the split of a call's
// key/value heads over the executor's workers (run_heads).
#pragma once

#include <cstddef>
#include <cstring>

#include "microattn/config.hpp"
#include "microattn/executor.hpp"
#include "microattn/internal/checks.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/f32_attn_tile.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/weights.hpp"

namespace microattn {
namespace internal {

/// Key/value staging of kStages key/value heads (one per worker that attends whole heads) plus
/// the tile scratch: what the attention core needs besides its inputs.
template <class Cfg, class Arch, std::size_t kStages = 1>
struct CoreBuffers {
  using Tl = Tiles<Arch>;
  using Scratch = kernels::AttnScratch<Arch, Cfg::kDHead>;
  static constexpr std::size_t kTPad = round_up(Cfg::kTMax, Tl::kBK);
  static constexpr std::size_t kDPad = Scratch::kDPad;
  static_assert(kStages >= 1, "at least one staged key/value head");
  static_assert(kTPad * Cfg::kDHead * sizeof(float) % Tl::kAlign == 0 &&
                    kTPad * kDPad * sizeof(float) % Tl::kAlign == 0,
                "every stage's K^T and V start aligned");
  alignas(Tl::kAlign) float kt[kStages][kTPad * Cfg::kDHead] = {};  ///< K^T in key tiles
  alignas(Tl::kAlign) float v[kStages][kTPad * kDPad] = {};         ///< V rows, padded to kDPad
  Scratch tile[Cfg::kMaxWorkers] = {};                              ///< one per worker
};

/// Key/value heads a layer stages at once: one, or with MaxWorkers{n} > 1 one per worker up to
/// H_kv (workers then take whole heads, each in its own buffers).
template <class Cfg>
constexpr std::size_t staged_heads() noexcept {
  return Cfg::kMaxWorkers < Cfg::kKvHeads ? Cfg::kMaxWorkers : Cfg::kKvHeads;
}

/// The mask of a layer over n_keys keys starting at position 0 (key j is token j).
template <class Cfg>
constexpr kernels::KeyMask layer_mask(std::size_t n_keys) noexcept {
  return kernels::KeyMask{n_keys, 0, Cfg::kWindow, Cfg::kCausal};
}

/// The first checks of a layer call on T tokens: kNullPointer (x or y null, or a weight the
/// configuration needs: Weights::check), kBadArgument (a layout the configuration cannot use),
/// kBadTokenCount (T == 0 or T > T_max); kOk otherwise.
template <class Cfg>
Status check_layer_args(const Weights<Cfg>& w, const float* x, const float* y,
                        std::size_t T) noexcept {
  if (!x || !y) return Status::kNullPointer;
  if (const Status s = w.check(); s != Status::kOk) return s;
  if (T == 0 || T > Cfg::kTMax) return Status::kBadTokenCount;
  return Status::kOk;
}

/// kOverlap when y ([T][OutDim]) overlaps x ([T][d_model]) where it may not (without W_O always;
/// with W_O unless x_read_first: every x row is read before a y row over it is written), or a
/// weight or bias array; kOk otherwise.
template <class Cfg>
Status check_layer_output(const Weights<Cfg>& w, const float* x, std::size_t T, const float* y,
                          bool x_read_first) noexcept {
  const std::size_t y_bytes = T * Cfg::kOutDim * sizeof(float);
  if (overlaps(x, T * Cfg::kDModel * sizeof(float), y, y_bytes) &&
      (!Cfg::kHasOutProj || !x_read_first))
    return Status::kOverlap;
  return overlaps_weights(w, y, y_bytes) ? Status::kOverlap : Status::kOk;
}

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
/// GEMM's B operand (with the int8 scales of those columns; null for fp32 weights).
template <class E>
struct WeightSlice {
  const E* b;
  std::size_t ldb;
  WeightLayout layout;
  const float* scale;
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

/// C[M][N] = A[M][K] · W (+ bias) for a weight slice of either element type: the projections
/// of every layer go through here (f32_gemm or qc8w_f32_gemm).
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

/// The key/value heads of a prefill call (T tokens) over the executor's parts. With at least as
/// many heads as parts, each part takes whole heads in one parallel region, in its own buffers:
/// part i calls prepare(g, 0, T, i, i) then attend(g, i, i, 0, 1) for g = i, i + parts, ...
/// (nothing shared, no core reading what another prepared). The heads left over (H_kv not a
/// multiple of the parts, or fewer heads than parts) go one at a time over buffer 0: a region
/// prepares each part's token rows (prepare(g, b, e, 0, i)), a second attends each part's share
/// of the query tiles (attend(g, 0, i, i, parts)).
///   prepare(g, b, e, s, w): stage or project head g's tokens [b, e) into buffer s (worker w);
///   attend(g, s, w, part, parts): part `part` of head g's query tiles over buffer s, in
///                                  worker w's tile scratch.
/// (Always inlined, like the driver: a frame of its own costs Cortex-M stack.)
template <class Arch, std::size_t kHeads, std::size_t kMaxWorkers, class Prepare, class Attend>
MICROATTN_ALWAYS_INLINE inline void run_heads(const ExecutorSetting<kMaxWorkers>& ex, std::size_t T,
                                              Prepare& prepare, Attend& attend) noexcept {
  const std::size_t parts = ex.parts();
  const std::size_t whole = parts > 1 ? kHeads / parts * parts : 0;
  if (whole > 0) {
    auto heads = [&](std::size_t i) {
      for (std::size_t g = i; g < whole; g += parts) {
        prepare(g, std::size_t{0}, T, i, i);
        attend(g, i, i, std::size_t{0}, std::size_t{1});
      }
    };
    ex.run(parts, heads);
  }
  for (std::size_t g = whole; g < kHeads; ++g) {
    auto rows = [&](std::size_t i) {
      const Range r = token_rows<Arch>(T, i, parts);
      prepare(g, r.begin, r.end, std::size_t{0}, i);
    };
    ex.run(parts, rows);
    auto tiles = [&](std::size_t i) { attend(g, std::size_t{0}, i, i, parts); };
    ex.run(parts, tiles);
  }
}

}  // namespace internal
}  // namespace microattn
