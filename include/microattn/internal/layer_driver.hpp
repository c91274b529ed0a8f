// SPDX-License-Identifier: Apache-2.0
// microattn internal: the one prefill pipeline of MultiHeadAttention, ScaledDotProductAttention
// and KvAttention::prefill. A call's key/value groups are prepared (a Source: projected from x
// and rotated, or staged from the caller's Q, K, V) into a K/V store (a Store: the staged fp32
// tiles of the call's own tokens, or a KV cache), attended by the tile kernel with the store's
// mask, then projected by W_O. The entry points differ only in their Source and Store. Also the
// projections every layer and block calls (project: a GEMM; project_vec: a decode step's GEMV).
//
// A Store (see StagedKv, and KvAttention's cache store) provides:
//   keys(g, s, k, ldk, n, pos)        n rotated keys of group g at positions pos .. (stage s)
//   kValueRows / value_rows(g, s, pos) fp32 rows V can be projected into in place, or
//   values(g, s, v, ldv, n, pos)       n value rows to copy (or quantise) in
//   mask(L, T)                         the keys the rows of a call at positions L .. L + T - 1 see
//   kt(g, s), v(g, s), k_scale(g), v_scale(g)   what the tile kernel reads
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "microattn/config.hpp"
#include "microattn/executor.hpp"
#include "microattn/internal/checks.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/f32_attn_tile.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/f32_gemv.hpp"
#include "microattn/kernels/qd8_gemm.hpp"
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

/// The Store of MultiHeadAttention and ScaledDotProductAttention: the call's own tokens, fp32,
/// K^T in key tiles and V rows in stage s of CoreBuffers (key j is token j).
template <class Cfg, class Arch, std::size_t kStages>
struct StagedKv {
  using Buffers = CoreBuffers<Cfg, Arch, kStages>;
  static constexpr std::size_t D = Cfg::kDHead;
  static constexpr bool kValueRows = true;
  static constexpr std::size_t kVStride = Buffers::kDPad;
  Buffers& buf;

  void keys(std::size_t, std::size_t s, const float* k, std::size_t ldk, std::size_t n,
            std::size_t pos) noexcept {
    kernels::store_key_tiles<Arch, D>(k, ldk, n, pos, Tiles<Arch>::kBK, buf.kt[s]);
  }
  float* value_rows(std::size_t, std::size_t s, std::size_t pos) noexcept {
    return buf.v[s] + pos * Buffers::kDPad;
  }
  void values(std::size_t, std::size_t s, const float* v, std::size_t ldv, std::size_t n,
              std::size_t pos) noexcept {
    for (std::size_t t = 0; t < n; ++t)
      std::memcpy(buf.v[s] + (pos + t) * Buffers::kDPad, v + t * ldv, D * sizeof(float));
  }
  static kernels::KeyMask mask(std::size_t, std::size_t T) noexcept { return layer_mask<Cfg>(T); }
  const float* kt(std::size_t, std::size_t s) const noexcept { return buf.kt[s]; }
  const float* v(std::size_t, std::size_t s) const noexcept { return buf.v[s]; }
  static const float* k_scale(std::size_t) noexcept { return nullptr; }
  static const float* v_scale(std::size_t) noexcept { return nullptr; }
};

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
/// The same for a matrix record: its elements and, for a scaled format, the scales of those
/// columns (format.hpp says where they are; null when unscaled).
template <class Fmt>
inline WeightSlice<typename Fmt::Elem> weight_slice(Matrix<Fmt> m, WeightLayout layout,
                                                    std::size_t in_dim, std::size_t out_dim,
                                                    std::size_t col0) noexcept {
  using T = FormatTraits<Fmt>;
  const float* sc = T::kScaled && m.scales ? m.scales + T::scale_index(0, col0, in_dim) : nullptr;
  const auto* w = m.data;
  if (layout == WeightLayout::kInOut)
    return {w + T::elem_offset(col0), T::elem_offset(out_dim), layout, sc};
  if (layout == WeightLayout::kOutIn)
    return {w + T::elem_offset(col0 * in_dim), T::elem_offset(in_dim), layout, sc};
  return {w + T::elem_offset(col0 * in_dim), T::elem_offset(in_dim * kWeightPanel), layout, sc};
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

template <class Arch, class Store>
inline void project(std::size_t M, std::size_t N, std::size_t K, const kernels::Qd8Rows& a,
                    std::size_t, const WeightSlice<std::int8_t>& w, const float* bias, Store store,
                    float* pack) noexcept {
  kernels::qd8_f32_qc8w_gemm<Arch>(M, N, K, a, w.b, w.ldb, w.layout, w.scale, bias, store, pack);
}

/// y[N] = x[K] · W (+ bias) for a weight slice of either element type (the decode step's
/// projections: f32_gemv or qc8w_f32_gemv), or part `part` of `parts` of it
/// (kernels::gemv_part: bit-identical for any split).
template <class Arch, class E>
inline void project_vec(std::size_t N, std::size_t K, const float* x, const WeightSlice<E>& w,
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
/// The quantised rows of an attention call for integer compute: up to kRows rows of x (d_model
/// wide) and later of the attended heads (H * d_head wide).
template <class Cfg, class Arch, std::size_t kRows>
using Qd8BufferFor = std::conditional_t<
    Cfg::kInt8Compute,
    Qd8RowBuffer<Arch, kRows, (Cfg::kDModel > Cfg::kQDim ? Cfg::kDModel : Cfg::kQDim)>,
    NoQd8Buffer>;

/// The Source of the layers: a call's tokens x at positions L .. projected by W_K, W_V, W_Q
/// (and rotated) group by group. Q goes to the Q buffer of the stage (q + s * q_stride, rows of
/// G * d_head), K through those rows (free until Q is projected) into the store, V into the
/// store's rows or, for a store that converts them, through the same rows. By blocks of the
/// GEMM's kMC rows (kMaxRows: the most a call has), so the three projections read a block of x
/// while it is in L2.
template <class Cfg, class Arch, std::size_t kMaxRows, class Rope, class Store, class QBuf>
struct ProjectedQkv {
  static constexpr std::size_t D = Cfg::kDHead, G = Cfg::kGroup, DM = Cfg::kDModel;
  const Weights<Cfg>& w;
  const Rope& rope;
  Store& store;
  /// x, or x quantised (Compute::kInt8): one pointer either way (the struct is on the prefill's
  /// stack on a microcontroller).
  std::conditional_t<Cfg::kInt8Compute, const QBuf*, const float*> x;
  std::size_t L;  ///< position of token 0
  float* q;       ///< Q buffer of stage 0
  std::size_t q_stride;
  float* pack;  ///< GEMM panel of worker 0
  std::size_t pack_stride;

  /// Tokens [b, e) of group g into stage s, with worker p's GEMM panel. (Not forced inline:
  /// docs/compiler-notes.md, "Prefill driver frames".)
  void operator()(std::size_t g, std::size_t b, std::size_t e, std::size_t s,
                  std::size_t p) const noexcept {
    const WeightLayout lay = w.layout;
    constexpr std::size_t KD = Cfg::kKvDim, QD = Cfg::kQDim;
    float* panel = pack + p * pack_stride;
    for (std::size_t rb = b, n = 0; rb < e; rb += n) {
      n = row_block<Arch, kMaxRows>(e - rb);
      const std::size_t pos = L + rb;
      const auto xa = [&] {  // the rows' input: x, or x quantised
        if constexpr (Cfg::kInt8Compute)
          return x->rows(rb);
        else
          return x + rb * DM;
      }();
      float* qs = q + s * q_stride + rb * G * D;
      // Each weight slice is made where it is used: none lives across the three projections
      // (the frame this sits in adds to the GEMM's on a microcontroller's deepest stack). From
      // the pointers, not the views' records: through a record GCC 12 inlined this frame into
      // its caller on Cortex-M and kept the layer out of main (+112 B of stack, +1 KB of code).
      project<Arch>(n, D, DM, xa, DM, weight_slice(w.w_k, lay, DM, KD, g * D, w.s_k),
                    Cfg::kBiasK ? w.b_k + g * D : nullptr, kernels::StoreRowMajor{qs, D}, panel);
      rope.apply(qs, D, D, n, 1, pos);
      store.keys(g, s, qs, D, n, pos);
      const auto wv = weight_slice(w.w_v, lay, DM, KD, g * D, w.s_v);
      const float* bv = Cfg::kBiasV ? w.b_v + g * D : nullptr;
      if constexpr (Store::kValueRows) {
        project<Arch>(n, D, DM, xa, DM, wv, bv,
                      kernels::StoreRowMajor{store.value_rows(g, s, pos), Store::kVStride}, panel);
      } else {
        project<Arch>(n, D, DM, xa, DM, wv, bv, kernels::StoreRowMajor{qs, D}, panel);
        store.values(g, s, qs, D, n, pos);
      }
      project<Arch>(n, G * D, DM, xa, DM, weight_slice(w.w_q, lay, DM, QD, g * G * D, w.s_q),
                    Cfg::kBiasQ ? w.b_q + g * G * D : nullptr, kernels::StoreRowMajor{qs, G * D},
                    panel);
      rope.apply(qs, G * D, D, n, G, pos);
    }
  }
  const float* q_rows(std::size_t, std::size_t s) const noexcept { return q + s * q_stride; }
  static constexpr std::size_t ldq() noexcept { return G * D; }
};

/// The Source of the core: the caller's Q, K, V; preparing a group stages its K and V rows.
template <class Cfg, class Store>
struct GivenQkv {
  static constexpr std::size_t D = Cfg::kDHead, G = Cfg::kGroup;
  Store& store;
  const float* q;
  std::size_t ldq_;
  const float* k;
  std::size_t ldk;
  const float* v;
  std::size_t ldv;

  void operator()(std::size_t g, std::size_t b, std::size_t e, std::size_t s,
                  std::size_t) const noexcept {
    if (b >= e) return;
    store.keys(g, s, k + b * ldk + g * D, ldk, e - b, b);
    store.values(g, s, v + b * ldv + g * D, ldv, e - b, b);
  }
  const float* q_rows(std::size_t g, std::size_t) const noexcept { return q + g * G * D; }
  std::size_t ldq() const noexcept { return ldq_; }
};

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

/// The attention of a prefill call: T query rows at positions L .. of every key/value group,
/// prepared by `src` into `store`, attended with the store's mask into ctx (row stride ldc,
/// group g at columns g * G * d_head), each worker in its tile scratch tiles[w]; with kMaps
/// also the maps (H * T * T floats). (Scratch: kernels::AttnScratch<Arch, d_head, kIntScores>.)
template <class Cfg, class Arch, bool kMaps, class Source, class Store, class Scratch>
MICROATTN_ALWAYS_INLINE inline void attend_call(const ExecutorSetting<Cfg::kMaxWorkers>& ex,
                                                std::size_t T, std::size_t L, Source& src,
                                                Store& store, Scratch* tiles, float* ctx,
                                                std::size_t ldc, float scale,
                                                float* maps) noexcept {
  constexpr std::size_t D = Cfg::kDHead, G = Cfg::kGroup;
  const kernels::KeyMask mask = store.mask(L, T);
  // In a frame of its own, so its locals do not add to the projections' chain
  // (docs/compiler-notes.md, "Prefill driver frames").
  auto attend = [&](std::size_t g, std::size_t s, std::size_t w, std::size_t part,
                    std::size_t n_parts) MICROATTN_NOINLINE {
    const kernels::QueryRows rows{src.q_rows(g, s), src.ldq(), D, ctx + g * G * D, ldc, D, T, G, L};
    const kernels::MapRows mr{kMaps ? maps + g * G * T * T : nullptr, T, T * T};
    kernels::f32_attn_rows<Arch, D>(rows, mask, store.kt(g, s), store.v(g, s), scale, tiles[w],
                                    store.k_scale(g), store.v_scale(g), kMaps ? &mr : nullptr, part,
                                    n_parts);
  };
  run_heads<Arch, Cfg::kKvHeads>(ex, T, src, attend);
}

/// y = ctx W_O (+ b_O) for T rows, split by rows over the executor's parts (worker i's GEMM
/// panel at pack + i * pack_stride).
/// (Compute::kInt8: each worker quantises its rows of ctx into qbuf first.)
template <class Cfg, class Arch, class QBuf>
MICROATTN_ALWAYS_INLINE inline void out_projection(const ExecutorSetting<Cfg::kMaxWorkers>& ex,
                                                   const Weights<Cfg>& w, const float* ctx,
                                                   std::size_t T, float* y, float* pack,
                                                   std::size_t pack_stride,
                                                   [[maybe_unused]] QBuf& qbuf) noexcept {
  constexpr std::size_t QD = Cfg::kQDim, OD = Cfg::kOutDim;
  // In a frame of its own, like the attention call (docs/compiler-notes.md). One lambda per
  // kind: fp32's captures nothing it does not use (its closure is on the caller's stack).
  if constexpr (Cfg::kInt8Compute) {
    auto out = [&](std::size_t i) MICROATTN_NOINLINE {
      const Range r = token_rows<Arch>(T, i, ex.parts());
      if (r.begin >= r.end) return;
      qbuf.quantize(r.begin, r.end, QD, ctx, QD);
      project<Arch>(r.end - r.begin, OD, QD, qbuf.rows(r.begin), QD,
                    weight_slice(w.w_o, w.layout, QD, OD, 0, w.s_o), Cfg::kBiasO ? w.b_o : nullptr,
                    kernels::StoreRowMajor{y + r.begin * OD, OD}, pack + i * pack_stride);
    };
    ex.run(ex.parts(), out);
  } else {
    auto out = [&](std::size_t i) MICROATTN_NOINLINE {
      const Range r = token_rows<Arch>(T, i, ex.parts());
      if (r.begin >= r.end) return;
      project<Arch>(r.end - r.begin, OD, QD, ctx + r.begin * QD, QD,
                    weight_slice(w.w_o, w.layout, QD, OD, 0, w.s_o), Cfg::kBiasO ? w.b_o : nullptr,
                    kernels::StoreRowMajor{y + r.begin * OD, OD}, pack + i * pack_stride);
    };
    ex.run(ex.parts(), out);
  }
}

/// The whole prefill of a layer: T tokens of x at positions L .., attention into ctx (the
/// concatenated heads; y itself without W_O), then W_O into y.
/// (Compute::kInt8: x is first quantised into qbuf, split by rows over the parts.)
template <class Cfg, class Arch, std::size_t kMaxRows, bool kMaps, class Rope, class Store,
          class QBuf, class Scratch>
MICROATTN_ALWAYS_INLINE inline void layer_prefill(
    const ExecutorSetting<Cfg::kMaxWorkers>& ex, const Weights<Cfg>& w, const Rope& rope,
    Store& store, const float* x, std::size_t T, std::size_t L, float* q, std::size_t q_stride,
    float* ctx, float* pack, std::size_t pack_stride, Scratch* tiles, float scale, float* y,
    float* maps, [[maybe_unused]] QBuf& qbuf) noexcept {
  const auto xin = [&] {  // x, or x quantised (split by rows over the parts)
    if constexpr (Cfg::kInt8Compute) {
      auto quantize = [&](std::size_t i) {
        const Range r = token_rows<Arch>(T, i, ex.parts());
        qbuf.quantize(r.begin, r.end, Cfg::kDModel, x, Cfg::kDModel);
      };
      ex.run(ex.parts(), quantize);
      return static_cast<const QBuf*>(&qbuf);
    } else {
      return x;
    }
  }();
  ProjectedQkv<Cfg, Arch, kMaxRows, Rope, Store, QBuf> src{w, rope,     store, xin,        L,
                                                           q, q_stride, pack,  pack_stride};
  float* out = Cfg::kHasOutProj ? ctx : y;
  attend_call<Cfg, Arch, kMaps>(ex, T, L, src, store, tiles, out, Cfg::kQDim, scale, maps);
  if constexpr (Cfg::kHasOutProj)
    out_projection<Cfg, Arch>(ex, w, ctx, T, y, pack, pack_stride, qbuf);
}

}  // namespace internal
}  // namespace microattn
