// SPDX-License-Identifier: Apache-2.0
// microattn driver: the one pipeline of every attention layer with its own K/V projections
// (MultiHeadAttention, ScaledDotProductAttention, KvAttention). Prefill: a call's key/value
// groups are prepared (a Source: projected from x and rotated, or staged from the caller's Q,
// K, V) into a K/V store (a Store: the staged fp32 tiles of the call's own tokens, or a KV
// cache), attended by the tile kernel with the store's mask, then projected by W_O. Decode: the
// token's Q, K, V by GEMVs, its K and V appended to the store, the decode kernel over the keys
// the store's mask gives, W_O. What every query and key head gets after its projection (RoPE;
// the home of any per-head option) is written once, in query_heads and key_heads.
// (Namespace microattn::internal: not public API.)
//
// A Store (see StagedKv, and KvAttention's cache store) provides:
//   keys(g, s, k, ldk, n, pos)        n rotated keys of group g at positions pos .. (stage s)
//   kValueRows / value_rows(g, s, pos) fp32 rows V can be projected into in place, or
//   values(g, s, v, ldv, n, pos)       n value rows to copy (or quantise) in
//   mask(L, T)                         the keys the rows of a call at positions L .. L + T - 1 see
//   kt(g, s), v(g, s), k_scale(g), v_scale(g)   what the tile kernel reads
//   kKeyRows                           (decode) key rows per head in kt/v: the kernels' stride
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "microattn/config.hpp"
#include "microattn/driver/project.hpp"
#include "microattn/executor.hpp"
#include "microattn/internal/checks.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/f32_attn_decode.hpp"
#include "microattn/kernels/f32_attn_tile.hpp"
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

/// What every key head gets after its projection: n rows of `heads` heads of d_head (row
/// stride ld) at positions pos .. rotated (RoPE). Prefill and decode both call it: the one home
/// of a per-head option on keys. query_heads: the same for the query heads.
template <class Cfg, class Rope>
inline void key_heads(const Rope& rope, float* k, std::size_t ld, std::size_t n, std::size_t heads,
                      std::size_t pos) noexcept {
  rope.apply(k, ld, Cfg::kDHead, n, heads, pos);
}
template <class Cfg, class Rope>
inline void query_heads(const Rope& rope, float* q, std::size_t ld, std::size_t n,
                        std::size_t heads, std::size_t pos) noexcept {
  rope.apply(q, ld, Cfg::kDHead, n, heads, pos);
}

/// One call of a layer: T tokens of x at positions L .. into y (with maps: also the attention
/// maps, H * T * T floats), at softmax scale `scale`.
struct LayerCall {
  const float* x;
  std::size_t T;
  std::size_t L;
  float* y;
  float scale;
  float* maps;
};

/// The working memory of a prefill call: Q buffers (stage s at q + s * q_stride), the
/// concatenated heads ctx, the GEMM panels (worker i's at pack + i * pack_stride), the tile
/// scratch of each worker, and integer compute's quantised rows.
template <class Scratch, class QBuf>
struct PrefillBuffers {
  using QBuffer = QBuf;
  float* q;
  std::size_t q_stride;
  float* ctx;
  float* pack;
  std::size_t pack_stride;
  Scratch* tiles;
  QBuf& qbuf;
};

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
      project<Arch>(n, D, DM, xa, DM,
                    format_slice<typename Cfg::WeightFormat>(w.w_k, lay, DM, KD, g * D, w.s_k),
                    Cfg::kBiasK ? w.b_k + g * D : nullptr, kernels::StoreRowMajor{qs, D}, panel);
      key_heads<Cfg>(rope, qs, D, n, 1, pos);
      store.keys(g, s, qs, D, n, pos);
      const auto wv = format_slice<typename Cfg::WeightFormat>(w.w_v, lay, DM, KD, g * D, w.s_v);
      const float* bv = Cfg::kBiasV ? w.b_v + g * D : nullptr;
      if constexpr (Store::kValueRows) {
        project<Arch>(n, D, DM, xa, DM, wv, bv,
                      kernels::StoreRowMajor{store.value_rows(g, s, pos), Store::kVStride}, panel);
      } else {
        project<Arch>(n, D, DM, xa, DM, wv, bv, kernels::StoreRowMajor{qs, D}, panel);
        store.values(g, s, qs, D, n, pos);
      }
      project<Arch>(n, G * D, DM, xa, DM,
                    format_slice<typename Cfg::WeightFormat>(w.w_q, lay, DM, QD, g * G * D, w.s_q),
                    Cfg::kBiasQ ? w.b_q + g * G * D : nullptr, kernels::StoreRowMajor{qs, G * D},
                    panel);
      query_heads<Cfg>(rope, qs, G * D, n, G, pos);
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
                    format_slice<typename Cfg::WeightFormat>(w.w_o, w.layout, QD, OD, 0, w.s_o),
                    Cfg::kBiasO ? w.b_o : nullptr, kernels::StoreRowMajor{y + r.begin * OD, OD},
                    pack + i * pack_stride);
    };
    ex.run(ex.parts(), out);
  } else {
    auto out = [&](std::size_t i) MICROATTN_NOINLINE {
      const Range r = token_rows<Arch>(T, i, ex.parts());
      if (r.begin >= r.end) return;
      project<Arch>(r.end - r.begin, OD, QD, ctx + r.begin * QD, QD,
                    format_slice<typename Cfg::WeightFormat>(w.w_o, w.layout, QD, OD, 0, w.s_o),
                    Cfg::kBiasO ? w.b_o : nullptr, kernels::StoreRowMajor{y + r.begin * OD, OD},
                    pack + i * pack_stride);
    };
    ex.run(ex.parts(), out);
  }
}

/// The whole prefill of a layer: the call's T tokens of x at positions L .., attention into
/// ctx (the concatenated heads; y itself without W_O), then W_O into y.
/// (Compute::kInt8: x is first quantised into the buffers' qbuf, split by rows over the parts.)
template <class Cfg, class Arch, std::size_t kMaxRows, bool kMaps, class Rope, class Store,
          class Buffers>
MICROATTN_ALWAYS_INLINE inline void layer_prefill(const ExecutorSetting<Cfg::kMaxWorkers>& ex,
                                                  const Weights<Cfg>& w, const Rope& rope,
                                                  Store& store, const LayerCall& c,
                                                  const Buffers& b) noexcept {
  // The fields as locals, as the stages take them: the two records stay out of memory (a
  // lambda's reference to one would keep all of it on a microcontroller's stack).
  using QBuf = typename Buffers::QBuffer;
  const float* x = c.x;
  const std::size_t T = c.T, L = c.L;
  float* y = c.y;
  QBuf& qbuf = b.qbuf;
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
  float* const ctx = b.ctx;
  float* const pack = b.pack;
  const std::size_t pack_stride = b.pack_stride;
  ProjectedQkv<Cfg, Arch, kMaxRows, Rope, Store, QBuf> src{w,   rope,       store, xin,        L,
                                                           b.q, b.q_stride, pack,  pack_stride};
  float* out = Cfg::kHasOutProj ? ctx : y;
  attend_call<Cfg, Arch, kMaps>(ex, T, L, src, store, b.tiles, out, Cfg::kQDim, c.scale, c.maps);
  if constexpr (Cfg::kHasOutProj)
    out_projection<Cfg, Arch>(ex, w, ctx, T, y, pack, pack_stride, qbuf);
}

/// A decode step's Q, K, V of the token x (or x quantised, Compute::kInt8) into dw.q, dw.k,
/// dw.v: every weight read once, each GEMV split by output columns over the executor's parts.
template <class Cfg, class Arch, class Work>
inline void decode_qkv(const ExecutorSetting<Cfg::kMaxWorkers>& ex, const Weights<Cfg>& w,
                       const float* x, Work& dw) noexcept {
  constexpr std::size_t DM = Cfg::kDModel, QD = Cfg::kQDim, KD = Cfg::kKvDim;
  const WeightLayout lay = w.layout;
  const std::size_t parts = ex.parts();
  const auto wq = weight_slice(w.q(), lay, DM, QD, 0);
  const auto wk = weight_slice(w.k(), lay, DM, KD, 0);
  const auto wv = weight_slice(w.v(), lay, DM, KD, 0);
  auto project_from = [&](const auto& xin) {
    auto proj = [&](std::size_t i) {
      project_vec<Arch>(QD, DM, xin, wq, Cfg::kBiasQ ? w.b_q : nullptr, dw.q, i, parts);
      project_vec<Arch>(KD, DM, xin, wk, Cfg::kBiasK ? w.b_k : nullptr, dw.k, i, parts);
      project_vec<Arch>(KD, DM, xin, wv, Cfg::kBiasV ? w.b_v : nullptr, dw.v, i, parts);
    };
    ex.run(parts, proj);
  };
  if constexpr (Cfg::kInt8Compute) {
    dw.quantize(0, 1, DM, x, DM);
    project_from(dw.rows(0));
  } else {
    project_from(x);
  }
}

/// The token's attention over the keys the store's mask gives it into ctx: split by key/value
/// groups over the parts, or (kSplitK > 1, more workers than groups) each group's keys in
/// kSplitK chunks (item g * kSplitK + c; task i takes items i, i + tasks, ...), their partial
/// results dw.part merged in chunk order (bit-identical for any worker count).
template <class Cfg, class Arch, std::size_t kSplitK, class Store, class Work>
inline void decode_attend(const ExecutorSetting<Cfg::kMaxWorkers>& ex, const Store& store,
                          std::size_t L, float scale, Work& dw, float* ctx) noexcept {
  constexpr std::size_t D = Cfg::kDHead, G = Cfg::kGroup, HKV = Cfg::kKvHeads;
  constexpr std::size_t kRows = Store::kKeyRows;
  // (The store by value in the closures: its one reference, not a pointer to it on the stack.)
  const kernels::KeyMask mask = store.mask(L, 1);
  const std::size_t key0 = mask.lo(L), n_keys = mask.hi(L) - key0, parts = ex.parts();
  if constexpr (kSplitK == 1) {
    const std::size_t groups = parts < HKV ? parts : HKV;
    auto attn = [&, store](std::size_t i) {
      for (std::size_t g = i; g < HKV; g += groups)
        kernels::f32_attn_decode<Arch, D, G, kRows>(dw.q + g * G * D, D, ctx + g * G * D, D, n_keys,
                                                    store.kt(g, 0), store.v(g, 0), scale, dw.att[i],
                                                    store.k_scale(g), store.v_scale(g), key0);
    };
    ex.run(groups, attn);
  } else {
    constexpr std::size_t kItems = HKV * kSplitK;
    const std::size_t tasks = parts < kItems ? parts : kItems;
    auto attn = [&, store](std::size_t i) {
      for (std::size_t t = i; t < kItems; t += tasks) {
        const std::size_t g = t / kSplitK;
        const Range r = split(n_keys, Tiles<Arch>::kBK, t % kSplitK, kSplitK);
        dw.part[t].empty = r.begin >= r.end;
        if (r.begin < r.end)
          kernels::f32_attn_decode<Arch, D, G, kRows>(
              dw.q + g * G * D, D, nullptr, D, r.end - r.begin, store.kt(g, 0), store.v(g, 0),
              scale, dw.att[i], store.k_scale(g), store.v_scale(g), key0 + r.begin, &dw.part[t]);
      }
    };
    ex.run(tasks, attn);
    for (std::size_t g = 0; g < HKV; ++g)
      kernels::f32_attn_decode_merge<Arch, D, G>(dw.part + g * kSplitK, kSplitK, ctx + g * G * D,
                                                 D);
  }
}

/// y = dw.ctx W_O (+ b_O) for the token (Compute::kInt8: dw.ctx quantised first), split by
/// output columns over the parts.
template <class Cfg, class Arch, class Work>
inline void decode_out(const ExecutorSetting<Cfg::kMaxWorkers>& ex, const Weights<Cfg>& w, Work& dw,
                       float* y) noexcept {
  constexpr std::size_t QD = Cfg::kQDim, OD = Cfg::kOutDim;
  const std::size_t parts = ex.parts();
  const auto wo = weight_slice(w.o(), w.layout, QD, OD, 0);
  auto out_from = [&](const auto& cin) {  // the heads, or the heads quantised
    auto out = [&](std::size_t i) {
      project_vec<Arch>(OD, QD, cin, wo, Cfg::kBiasO ? w.b_o : nullptr, y, i, parts);
    };
    ex.run(parts, out);
  };
  if constexpr (Cfg::kInt8Compute) {
    dw.quantize(0, 1, QD, dw.ctx, QD);
    out_from(dw.rows(0));
  } else {
    out_from(static_cast<const float*>(dw.ctx));
  }
}

/// The decode step of a layer over a KV cache store: the token c.x at position c.L (the rows
/// the store's RoPE covers): its Q, K, V (decode_qkv), its query and key heads (query_heads,
/// key_heads), K and V appended to the store, the attention (decode_attend) into ctx (y itself
/// without W_O), then W_O (decode_out). Work (KvAttention's DecodeWork) holds q, k, v, ctx, the
/// decode scratch att[worker], the split-K partials part[] and integer compute's row buffer.
template <class Cfg, class Arch, std::size_t kSplitK, class Rope, class Store, class Work>
inline void layer_decode(const ExecutorSetting<Cfg::kMaxWorkers>& ex, const Weights<Cfg>& w,
                         const Rope& rope, Store& store, const LayerCall& c, Work& dw) noexcept {
  constexpr std::size_t D = Cfg::kDHead, HKV = Cfg::kKvHeads;
  decode_qkv<Cfg, Arch>(ex, w, c.x, dw);
  query_heads<Cfg>(rope, dw.q, Cfg::kQDim, 1, Cfg::kHeads, c.L);
  key_heads<Cfg>(rope, dw.k, Cfg::kKvDim, 1, HKV, c.L);
  for (std::size_t g = 0; g < HKV; ++g) {
    store.keys(g, 0, dw.k + g * D, D, 1, c.L);
    store.values(g, 0, dw.v + g * D, D, 1, c.L);
  }
  decode_attend<Cfg, Arch, kSplitK>(ex, store, c.L, c.scale, dw, Cfg::kHasOutProj ? dw.ctx : c.y);
  if constexpr (Cfg::kHasOutProj) decode_out<Cfg, Arch>(ex, w, dw, c.y);
}

}  // namespace internal
}  // namespace microattn
