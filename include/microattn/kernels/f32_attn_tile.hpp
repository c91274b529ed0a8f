// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: fused, tiled, causal attention with an online softmax
// (flash-attention style). Never forms a T x T score matrix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "microattn/internal/elem.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/f32_exp.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/qd8_gemm.hpp"

MICROATTN_GCC12_AVX512_WARNINGS_OFF

namespace microattn {
namespace kernels {

/// Row stride (floats or cache elements) of V rows d_v wide, and of the P V accumulators, on
/// Arch: d_v rounded up to whole GEMM panels (kNR) from a panel up; under a panel, on the SIMD
/// arches, to the fewest vectors that hold d_v rounded up to a power of two (P V then reads
/// only the vectors that hold values, in one register block: decode_cols). A d_head-8 row is 8
/// floats on AVX2 and 16 on AVX-512, not a panel of 16 and 32: the KV cache of a small-head
/// model is no larger than it has to be for whole-vector loads (docs/memory.md has the bytes).
/// The scalar path keeps whole panels (its P V runs every panel whole).
template <class Arch>
constexpr std::size_t v_row_stride(std::size_t d_v) noexcept {
  using Tl = internal::Tiles<Arch>;
  constexpr std::size_t W = internal::Vec<Arch>::kWidth;
  if (W == 1 || d_v >= Tl::kNR) return internal::round_up(d_v, Tl::kNR);
  std::size_t vecs = 1;
  while (vecs * W < d_v) vecs *= 2;
  return vecs * W;
}

/// Per-call scratch of the attention tile kernel: O(kBQ x (d_head + kBK)) floats, independent
/// of the number of tokens; with kIntScores also the query rows quantised (integer scores
/// against an int8 cache). kDHead is the query/key width, kDV the value width (the same except
/// in multi-head latent attention's unabsorbed form).
template <class Arch, std::size_t kDHead, bool kIntScores = false, std::size_t kDV = kDHead>
struct AttnScratch : Qd8QueryRows<Arch, kDHead, internal::Tiles<Arch>::kBQ, kIntScores> {
  using Tl = internal::Tiles<Arch>;
  /// Row stride of V and of the output accumulator (v_row_stride).
  static constexpr std::size_t kDPad = v_row_stride<Arch>(kDV);
  alignas(Tl::kAlign) float q[Tl::kBQ * kDHead];   ///< scaled query rows
  alignas(Tl::kAlign) float s[Tl::kBQ * Tl::kBK];  ///< scores, then probabilities, of one tile
  alignas(Tl::kAlign) float o[Tl::kBQ * kDPad];    ///< unnormalised output rows
  static constexpr std::size_t kW = internal::Vec<Arch>::kWidth;
  float m[Tl::kBQ];                           ///< running row max
  float tile_max[Tl::kBQ];                    ///< row max in the current key tile
  alignas(Tl::kAlign) float l[Tl::kBQ * kW];  ///< running row sum, lane by lane
  std::uint16_t ka[Tl::kBQ], kb[Tl::kBQ];     ///< row's keys [ka, kb) in the current key tile
  unsigned char started[Tl::kBQ];             ///< row has seen a key (m, l are set)
};

/// Writes n keys (rows of k, row stride ldk, kDHead floats each) as keys row0 .. row0 + n - 1
/// of the key-tile layout f32_attn_rows reads: tile t = [kDHead][bk] floats at kt + t*kDHead*bk.
/// (A transpose after a row-major projection: far cheaper than scattering from the GEMM.)
/// Where Vec<Arch> transposes in registers (x86; bk a multiple of the width W), W keys starting
/// at a multiple of W go W x W blocks at a time: W row loads, W vector stores, where the plain
/// loop's W * W scalar stores each touched a different cache line (W consecutive keys of one
/// dimension are one vector of the tile). Keys before and after such blocks, and dimensions
/// past the last whole W, take the plain loop. Either way the tiles hold the same values.
template <class Arch, std::size_t kDHead>
inline void store_key_tiles(const float* k, std::size_t ldk, std::size_t n, std::size_t row0,
                            std::size_t bk, float* kt) noexcept {
  using V = internal::Vec<Arch>;
  constexpr std::size_t W = V::kWidth;
  auto plain = [&](std::size_t i, std::size_t d0) {
    const std::size_t r = row0 + i;
    float* dst = kt + (r / bk) * (kDHead * bk) + r % bk;
    const float* src = k + i * ldk;
    for (std::size_t d = d0; d < kDHead; ++d) dst[d * bk] = src[d];
  };
  std::size_t i = 0;
  if constexpr (V::kTranspose && kDHead >= W) {
    if (bk % W == 0) {
      constexpr std::size_t DW = kDHead / W * W;
      for (; i < n && (row0 + i) % W != 0; ++i) plain(i, 0);
      for (; i + W <= n; i += W) {
        const std::size_t r = row0 + i;
        float* dst = kt + (r / bk) * (kDHead * bk) + r % bk;
        const float* src = k + i * ldk;
        for (std::size_t d0 = 0; d0 < DW; d0 += W) {
          typename V::type x[W];
          for (std::size_t j = 0; j < W; ++j) x[j] = V::loadu(src + j * ldk + d0);
          V::transpose(x);
          for (std::size_t c = 0; c < W; ++c) V::storeu(dst + (d0 + c) * bk, x[c]);
        }
        if constexpr (DW < kDHead)
          for (std::size_t j = 0; j < W; ++j) plain(i + j, DW);
      }
    }
  }
  for (; i < n; ++i) plain(i, 0);
}

/// The query rows attended together: n_tokens consecutive tokens (absolute positions pos0,
/// pos0 + 1, ...) of `heads` query heads that share one key/value head. Row r of the tile
/// kernel is token r / heads of head r % heads, so each K/V tile is read once for all of them.
struct QueryRows {
  const float* q;  ///< Q(token i, head e)[d] = q[i * ldq + e * q_head_stride + d]
  std::size_t ldq;
  std::size_t q_head_stride;
  float* out;  ///< out(token i, head e)[d] = out[i * ldo + e * o_head_stride + d]
  std::size_t ldo;
  std::size_t o_head_stride;
  std::size_t n_tokens;
  std::size_t heads;
  std::size_t pos0;  ///< absolute position of token 0 (cached tokens before it)
};

/// Which keys each query row sees: the mask, analytically (O(1) per row). Keys are numbered by
/// index; key index j holds the token at position key_pos0 + j, and indices 0 .. n_keys - 1
/// exist. A row at position p sees the key indices [lo(p), hi(p)):
///   causal (window 0)      positions 0 .. p
///   sliding window W       positions p - W + 1 .. p (causal)
///   none (causal false)    every key
/// and, with sinks > 0 (attention sinks: a window that keeps the first tokens), also the
/// indices [0, sink_end(p)): the first `sinks` keys that are below its band and not after it.
/// Tiles outside every row's ranges are never computed; a tile crossing an edge computes only
/// the columns its rows see.
struct KeyMask {
  std::size_t n_keys;
  std::size_t key_pos0 = 0;
  std::size_t window = 0;
  bool causal = true;
  std::size_t lo(std::size_t pos) const noexcept {
    if (!causal || window == 0 || pos + 1 <= window) return 0;
    const std::size_t first = pos + 1 - window;
    return first > key_pos0 ? first - key_pos0 : 0;
  }
  std::size_t hi(std::size_t pos) const noexcept {
    if (!causal) return n_keys;
    const std::size_t h = pos + 1 - key_pos0;
    return h < n_keys ? h : n_keys;
  }
  std::size_t sinks = 0;
  std::size_t sink_end(std::size_t pos) const noexcept {
    const std::size_t a = lo(pos);
    return sinks < a ? sinks : a;  // lo <= hi: below the band is also not after the row
  }
};

/// Where f32_attn_rows writes the softmax probabilities when asked (attention maps): row
/// (token i, head e) of the rows at p + e * head_stride + i * ld, one float per key index
/// (0 .. n_keys - 1), zero where the mask hides the key.
struct MapRows {
  float* p;
  std::size_t ld;
  std::size_t head_stride;
};

namespace detail {

/// Largest value of a[0 .. n) (n >= 1): whole vectors, then the tail one float at a time, so
/// nothing past a[n - 1] is read. A NaN among them may or may not win (arches differ); the
/// softmax weights carry NaN either way (f32_softmax_exp2).
template <class Arch>
inline float row_max(const float* a, std::size_t n) noexcept {
  using V = internal::Vec<Arch>;
  constexpr std::size_t W = V::kWidth;
  const std::size_t nv = n - n % W;
  float m = a[0];
  if (nv != 0) {
    typename V::type vmax = V::loadu(a);
    for (std::size_t j = W; j < nv; j += W) vmax = V::max(vmax, V::loadu(a + j));
    m = V::hmax(vmax);
  }
  for (std::size_t j = nv; j < n; ++j) m = a[j] > m ? a[j] : m;
  return m;
}

/// a[j] *= s[j] for j < n (the per-key scales of an int8 cache).
template <class Arch>
inline void scale_row(float* a, std::size_t n, const float* s) noexcept {
  using V = internal::Vec<Arch>;
  constexpr std::size_t W = V::kWidth;
  const std::size_t nv = n - n % W;
  for (std::size_t j = 0; j < nv; j += W) V::storeu(a + j, V::loadu(a + j) * V::loadu(s + j));
  for (std::size_t j = nv; j < n; ++j) a[j] *= s[j];
}

/// a[j] = f32_softmax_exp2(a[j] - m) for j < n; returns their sum. Reads and writes nothing
/// past a[n - 1].
template <class Arch>
inline float exp2_row(float* a, std::size_t n, float m) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t W = V::kWidth;
  const std::size_t nv = n - n % W;
  const T vm = V::set1(m);
  T vsum = V::zero();
  std::size_t j = 0;
  if constexpr (W == 1 && V::kExpStep > 1) {
    // Scalar on a dual-issue Cortex-M: kExpStep weights per step, so the in-order core overlaps
    // their dependency chains (the polynomial's multiply-adds wait on each other); the sum is
    // added in the same order, so the bits are those of one at a time (docs/targets.md). The
    // loop below takes the rest.
    constexpr std::size_t S = V::kExpStep;
    for (; j + S <= n; j += S) {
      float p[S];
#pragma GCC unroll 8
      for (std::size_t u = 0; u < S; ++u) p[u] = f32_softmax_exp2<Arch>(a[j + u] - m);
#pragma GCC unroll 8
      for (std::size_t u = 0; u < S; ++u) a[j + u] = p[u];
#pragma GCC unroll 8
      for (std::size_t u = 0; u < S; ++u) vsum = vsum + p[u];
    }
  }
  for (; j < nv; j += W) {
    const T p = f32_softmax_exp2<Arch>(V::loadu(a + j) - vm);
    V::storeu(a + j, p);
    vsum = vsum + p;
  }
  float sum = V::hsum(vsum);
  for (j = nv; j < n; ++j) {
    const float p = f32_softmax_exp2<ScalarArch>(a[j] - m);
    a[j] = p;
    sum += p;
  }
  return sum;
}

/// The aligned vectors of a score row (the BK floats of one key tile, vector aligned) that cover
/// its columns [a, b) (a < b): columns va .. vb - 1 all exist in the tile and were written by the
/// score GEMM (it computes whole panels). keep() masks the lanes outside [a, b) by index, only in
/// a vector that has such lanes, so a row's edges cost two selects per edge vector instead of a
/// scalar tail, and a row of whole vectors none.
template <class Arch>
struct TileCols {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  static constexpr std::size_t W = V::kWidth;
  std::size_t a, b, va, vb;
  T iota;
  TileCols(std::size_t a_, std::size_t b_, T lanes) noexcept
      : a(a_), b(b_), va(a_ / W * W), vb(internal::round_up(b_, W)), iota(lanes) {}
  /// x (the vector at column j), with `fill` in the lanes outside [a, b).
  T keep(T x, std::size_t j, T fill) const noexcept {
    if (a <= j && j + W <= b) return x;
    const T idx = iota + V::set1(static_cast<float>(j));
    return V::select_lt(idx, V::set1(static_cast<float>(b)),
                        V::select_lt(idx, V::set1(static_cast<float>(a)), fill, x), fill);
  }
};

/// Online-softmax steps of one row over the columns [a, b) of its score row s, in whole aligned
/// vectors (TileCols; iota: the lane numbers 0 .. W - 1). tile_row_max: the max over [a, b)
/// (lanes outside hold the lowest float; one hmax). tile_row_exp2: s[j] = 2^(s[j] - m) in
/// [a, b), 0 in the other lanes of those vectors; returns the weights' sum lane by lane.
template <class Arch>
MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE inline float tile_row_max(
    const float* s, std::size_t a, std::size_t b,
    typename internal::Vec<Arch>::type iota) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t W = V::kWidth;
  if constexpr (W == 1) {
    (void)iota;
    return row_max<Arch>(s + a, b - a);
  } else {
    const TileCols<Arch> c(a, b, iota);
    const T lowest = V::set1(std::numeric_limits<float>::lowest());
    T vmax = c.keep(V::load(s + c.va), c.va, lowest);
    for (std::size_t j = c.va + W; j < c.vb; j += W)
      vmax = V::max(vmax, c.keep(V::load(s + j), j, lowest));
    return V::hmax(vmax);
  }
}

template <class Arch>
MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE inline typename internal::Vec<Arch>::type tile_row_exp2(
    float* s, std::size_t a, std::size_t b, float m,
    typename internal::Vec<Arch>::type iota) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t W = V::kWidth;
  if constexpr (W == 1) {
    (void)iota;
    return exp2_row<Arch>(s + a, b - a, m);
  } else {
    const T vm = V::set1(m), zero = V::zero();
    const TileCols<Arch> c(a, b, iota);
    T vsum = zero;  // + the first weights: the same bits as starting from them (all >= +0)
    for (std::size_t j = c.va; j < c.vb; j += W) {
      const T p = c.keep(f32_softmax_exp2<Arch>(V::load(s + j) - vm), j, zero);
      V::store(s + j, p);
      vsum = vsum + p;
    }
    return vsum;
  }
}

/// The score micro-kernel calls of one group of mr rows of f32_attn_rows: s[i][j] for the
/// columns [a, b) of the key tile (whole panels from `a`; with av < a, first the vectors av ..
/// a - 1 alone, a window's lower edge), q: the group's scaled query rows.
template <class Arch, std::size_t kDHead, class CE>
MICROATTN_ALWAYS_INLINE MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE inline void score_panels(
    std::size_t mr, std::size_t av, std::size_t a, std::size_t b, const float* q, const CE* ktile,
    float* s) noexcept {
  using Tl = internal::Tiles<Arch>;
  constexpr std::size_t NR = Tl::kNR, BK = Tl::kBK, LW = internal::Vec<Arch>::kWidth;
  if (av < a)
    f32_gemm_ukernel_rows_nv<Arch>((a - av) / LW, mr, kDHead, q, kDHead, ktile + av, BK, s + av, BK,
                                   nullptr, false);
  for (std::size_t jn = a; jn < b; jn += NR)
    f32_gemm_ukernel_rows<Arch>(mr, kDHead, q, kDHead, ktile + jn, BK, s + jn, BK, nullptr, false);
}

/// The P V micro-kernel calls of a group of mr > 1 rows of f32_attn_rows over n keys: o (row
/// stride kDPad) += p (row stride kBK) v (row stride kDPad), over the vectors of each row that
/// hold d_v's columns.
template <class Arch, std::size_t kDV, class CE>
MICROATTN_ALWAYS_INLINE MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE inline void pv_rows(
    std::size_t mr, std::size_t n, const float* p, const CE* v, float* o) noexcept {
  using Tl = internal::Tiles<Arch>;
  constexpr std::size_t DPad = AttnScratch<Arch, kDV>::kDPad, W = internal::Vec<Arch>::kWidth;
  constexpr std::size_t kRowVecs = W > 1 ? (kDV + W - 1) / W : DPad / W;
  for (std::size_t dn = 0; dn < DPad; dn += Tl::kNR) {
    const std::size_t nv = internal::min_size(Tl::kNRVec, kRowVecs - dn / W);
    f32_gemm_ukernel_rows_nv<Arch>(nv, mr, n, p, Tl::kBK, v + dn, DPad, o + dn, DPad, nullptr,
                                   true);
  }
}

/// score_panels and pv_rows in frames of their own (noinline, the micro-kernel inlined in them
/// with the tile's compile-time strides), where KernelParams::kOwnFrameAttn says so: there the
/// micro-kernel has the registers to itself whatever else the translation unit holds
/// (MICROATTN_OWN_FRAME_X86: docs/compiler-notes.md; cost: docs/tuning.md).
template <class Arch, std::size_t kDHead, class CE>
MICROATTN_OWN_FRAME_X86 MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE void score_panels_framed(
    std::size_t mr, std::size_t av, std::size_t a, std::size_t b, const float* q, const CE* ktile,
    float* s) noexcept {
  score_panels<Arch, kDHead>(mr, av, a, b, q, ktile, s);
}
template <class Arch, std::size_t kDV, class CE>
MICROATTN_OWN_FRAME_X86 MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE void pv_rows_framed(
    std::size_t mr, std::size_t n, const float* p, const CE* v, float* o) noexcept {
  pv_rows<Arch, kDV>(mr, n, p, v, o);
}

}  // namespace detail

namespace detail {

/// The work split of f32_attn_rows over `parts` workers: which part runs query tile t (BQ rows;
/// the last may be partial). The tiles are ranked by falling cost (the keys their rows see, plus
/// a per-row constant for the row's own loads and stores) and dealt out back and forth by rank
/// (0 1 .. P-1 P-1 .. 1 0 0 1 ..), so each part gets as many dear tiles as cheap ones (in index
/// order, the last and dearest tiles decided the balance). A tile's work is the same whichever
/// part runs it, so the split never changes a result. Full tiles' costs never fall with the
/// position (every mask's range grows or stays), so ranking them is reversing them; only a
/// partial last tile has to be placed by its cost.
struct QueryTileSplit {
  std::size_t n_full;        ///< whole tiles
  bool partial;              ///< a partial last tile (index n_full)
  std::size_t partial_rank;  ///< its rank among the tiles by falling cost
  std::size_t parts;

  /// n_rows rows (row r: token r / heads, at position pos0 + r / heads), tiles of bq rows,
  /// row_cost: the per-row constant (d_head).
  QueryTileSplit(const KeyMask& mask, std::size_t n_rows, std::size_t heads, std::size_t pos0,
                 std::size_t bq, std::size_t row_cost, std::size_t parts_) noexcept
      : n_full(n_rows / bq), partial(n_rows % bq != 0), partial_rank(0), parts(parts_) {
    if (parts < 2 || !partial) return;
    auto cost = [&](std::size_t t) {
      std::size_t c = 0;
      for (std::size_t r = t * bq; r < n_rows && r < (t + 1) * bq; ++r) {
        const std::size_t pos = pos0 + r / heads, lo = mask.lo(pos), hi = mask.hi(pos);
        c += (hi > lo ? hi - lo : 0) + mask.sink_end(pos) + row_cost;
      }
      return c;
    };
    const std::size_t c_partial = cost(n_full);
    while (partial_rank < n_full && cost(n_full - 1 - partial_rank) >= c_partial) ++partial_rank;
  }
  /// The part that runs tile t (0 .. parts - 1).
  std::size_t owner(std::size_t t) const noexcept {
    std::size_t rank = partial_rank;  // t == n_full: the partial tile
    if (t < n_full) {
      const std::size_t i = n_full - 1 - t;
      rank = partial && i >= partial_rank ? i + 1 : i;
    }
    const std::size_t m = rank % (2 * parts);
    return m < parts ? m : 2 * parts - 1 - m;
  }
};

/// One query tile of f32_attn_rows: rows r0 .. r0 + bq - 1 of `rows`, with the scratch and the
/// constants every tile shares.
template <class Arch, std::size_t kDHead, class CE, bool kIntScores, std::size_t kDV>
struct QueryTile {
  using Tl = internal::Tiles<Arch>;
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  using Scratch = AttnScratch<Arch, kDHead, kIntScores, kDV>;
  static constexpr bool kQ = internal::Elem<CE>::kScaled;
  static_assert(!kIntScores || std::is_same<CE, std::int8_t>::value,
                "f32_attn_rows: integer scores need int8 keys");
  static_assert(!kIntScores || Tl::kBK % kQs8Keys == 0,
                "f32_attn_rows: integer scores go by whole runs of kQs8Keys keys");
  static constexpr std::size_t MR = Tl::kMR, NR = Tl::kNR, BQ = Tl::kBQ, BK = Tl::kBK,
                               LW = V::kWidth;
  static constexpr std::size_t DPad = Scratch::kDPad;
  // The row groups' micro-kernel calls in frames of their own (score_panels_framed), for heads
  // of at least a vector: a tiny head pays for the calls.
  static constexpr bool kFramed = Tl::kOwnFrameAttn && kDHead >= LW;
  // One row's whole output in one P V call where it fits the registers (SIMD arches: d_head 64
  // is 4 or 8 vectors), and only the vectors that hold d_head's columns (o's padding past them
  // stays 0; scalar path: every panel whole, see gemm_weights).
  static constexpr std::size_t kRowVecs = LW > 1 ? (kDV + LW - 1) / LW : DPad / LW;

  const QueryRows& rows;
  const KeyMask& mask;
  const CE* kt;
  const CE* v;
  Scratch& sc;
  const float* k_scale;
  const float* v_scale;
  const MapRows* maps;
  T iota;  ///< lane numbers 0 .. W - 1 (the masks of tile_row_max / tile_row_exp2)
  std::size_t r0, bq;
  bool in_sinks;  ///< the pass over the mask's sink keys (else over its band)

  std::size_t pos_of(std::size_t r) const noexcept { return rows.pos0 + r / rows.heads; }
  /// The key indices [lo, hi) the row at pos sees in this pass.
  std::size_t lo(std::size_t pos) const noexcept { return in_sinks ? 0 : mask.lo(pos); }
  std::size_t hi(std::size_t pos) const noexcept {
    return in_sinks ? mask.sink_end(pos) : mask.hi(pos);
  }

  /// Scaled query rows, zeroed accumulators, in whole vectors written out (left to the compiler
  /// the loop stayed scalar: docs/compiler-notes.md). The same products, so the same bits, except
  /// that a denormal product is flushed to 0 where the vector unit flushes them (armv7 NEON).
  MICROATTN_ALWAYS_INLINE void load_queries(float qscale) noexcept {
    const T vqscale = V::set1(qscale);
    const std::size_t G = rows.heads;
    for (std::size_t i = 0; i < bq; ++i) {
      const std::size_t r = r0 + i;
      const float* src = rows.q + (r / G) * rows.ldq + (r % G) * rows.q_head_stride;
      float* qd = sc.q + i * kDHead;
      std::size_t d = 0;
      for (; d + LW <= kDHead; d += LW) V::storeu(qd + d, V::loadu(src + d) * vqscale);
      for (; d < kDHead; ++d) qd[d] = src[d] * qscale;
      if constexpr (kIntScores)
        sc.qs[i] = qd8_quantize_row<Arch>(kDHead, qd, sc.qq + i * Scratch::kQBytes);
      for (std::size_t e = 0; e < DPad; e += LW) V::store(sc.o + i * DPad + e, V::zero());
      sc.started[i] = 0;
    }
  }

  /// Keys of the tile at j0 (kvalid of them exist) that the row at position pos sees: [first,
  /// last).
  std::size_t first(std::size_t pos, std::size_t j0, std::size_t kvalid) const noexcept {
    const std::size_t a = lo(pos);
    return a > j0 ? internal::min_size(a - j0, kvalid) : std::size_t{0};
  }
  std::size_t last(std::size_t pos, std::size_t j0, std::size_t kvalid) const noexcept {
    const std::size_t b = hi(pos);
    return b > j0 ? internal::min_size(b - j0, kvalid) : std::size_t{0};
  }
  /// Every row's keys in the tile at j0, once (row r0 + i is token tok of head e, counted along:
  /// a division per row and key tile was measurable; docs/tuning.md).
  MICROATTN_ALWAYS_INLINE void row_ranges(std::size_t j0, std::size_t kvalid) noexcept {
    const std::size_t G = rows.heads;
    for (std::size_t i = 0, tok = r0 / G, e = r0 % G; i < bq; ++i) {
      const std::size_t pos = rows.pos0 + tok;
      sc.ka[i] = static_cast<std::uint16_t>(first(pos, j0, kvalid));
      sc.kb[i] = static_cast<std::uint16_t>(last(pos, j0, kvalid));
      if (++e == G) e = 0, ++tok;
    }
  }

  /// S = (scale Q) K^T for the tile, by groups of MR rows, over the columns the group's rows see
  /// (the first row's first key to the last row's last): a tile crossing a mask edge skips the
  /// work outside it. Scores a row does not see are never read. (SIMD arches: a group starting
  /// inside a panel starts at its first vector with only the panel's remaining vectors: a
  /// window's lower edge.) Integer scores: each row alone over its own keys.
  MICROATTN_ALWAYS_INLINE void scores(const CE* ktile, std::size_t j0) noexcept {
    if constexpr (kIntScores) {
      for (std::size_t i = 0; i < bq; ++i)
        if (sc.ka[i] < sc.kb[i])
          qd8_f32_qs8_scores<Arch>(kDHead, sc.qq + i * Scratch::kQBytes, sc.qs[i], ktile, BK,
                                   sc.ka[i], sc.kb[i], k_scale + j0, sc.s + i * BK);
      return;
    }
    for (std::size_t i = 0; i < bq; i += MR) {
      const std::size_t mr = internal::min_size(MR, bq - i);
      std::size_t a = std::size_t{sc.ka[i]} / NR * NR;
      std::size_t av = a;
      const std::size_t b = sc.kb[i + mr - 1];
      if constexpr (LW > 1) {
        const std::size_t v0 = std::size_t{sc.ka[i]} / LW * LW;
        if (v0 > a && v0 < b) av = v0, a += NR;
      }
      if constexpr (kFramed)
        score_panels_framed<Arch, kDHead>(mr, av, a, b, sc.q + i * kDHead, ktile, sc.s + i * BK);
      else
        score_panels<Arch, kDHead>(mr, av, a, b, sc.q + i * kDHead, ktile, sc.s + i * BK);
    }
  }

  /// The online-softmax step of the tile: each row's scores over the keys it sees become
  /// weights 2^(s - m) against its running max m, and its sum and output are rescaled when m
  /// grows; a row's first tile starts them. Two passes over the rows: every row's tile max
  /// first, then the exponentials, so the rows' horizontal-max chains overlap (same operations
  /// per row, same bits). With maps, each row's base-2 scores are kept there first.
  MICROATTN_ALWAYS_INLINE void softmax_step(std::size_t j0) noexcept {
    const std::size_t G = rows.heads;
    for (std::size_t i = 0; i < bq; ++i) {
      const std::size_t a = sc.ka[i], b = sc.kb[i];
      if (a >= b) continue;
      float* s0 = sc.s + i * BK;
      if constexpr (kQ && !kIntScores) scale_row<Arch>(s0 + a, b - a, k_scale + j0 + a);
      if (maps) {
        const std::size_t r = r0 + i;
        float* mrow = maps->p + (r % G) * maps->head_stride + (r / G) * maps->ld + j0 + a;
        for (std::size_t j = 0; j < b - a; ++j) mrow[j] = s0[a + j];
      }
      sc.tile_max[i] = tile_row_max<Arch>(s0, a, b, iota);
    }
    for (std::size_t i = 0; i < bq; ++i) {
      const std::size_t a = sc.ka[i], b = sc.kb[i];
      if (a >= b) continue;
      float* s0 = sc.s + i * BK;
      float* lrow = sc.l + i * LW;
      if (!sc.started[i]) {
        sc.started[i] = 1;
        sc.m[i] = sc.tile_max[i];
        V::store(lrow, tile_row_exp2<Arch>(s0, a, b, sc.tile_max[i], iota));
        if constexpr (kQ) scale_row<Arch>(s0 + a, b - a, v_scale + j0 + a);
        continue;
      }
      const float m_old = sc.m[i];
      const float m_new = sc.tile_max[i] > m_old ? sc.tile_max[i] : m_old;
      const T row_sum = tile_row_exp2<Arch>(s0, a, b, m_new, iota);
      if constexpr (kQ) scale_row<Arch>(s0 + a, b - a, v_scale + j0 + a);
      if (m_new != m_old) {
        const T va = V::set1(f32_exp2_scalar(m_old - m_new));
        V::store(lrow, V::fma(V::load(lrow), va, row_sum));
        float* orow = sc.o + i * DPad;
        for (std::size_t d = 0; d < DPad; d += LW) V::store(orow + d, V::load(orow + d) * va);
        sc.m[i] = m_new;
      } else {
        V::store(lrow, V::load(lrow) + row_sum);
      }
    }
  }

  /// O += P V for rows i .. i + mr - 1 over the tile's keys [a, b).
  MICROATTN_ALWAYS_INLINE void pv(const CE* vtile, std::size_t i, std::size_t mr, std::size_t a,
                                  std::size_t b) noexcept {
    if constexpr (kRowVecs <= 8 && LW > 1) {
      if (mr == 1) {
        f32_gemm_ukernel<Arch, 1, kRowVecs>(b - a, sc.s + i * BK + a, BK, vtile + a * DPad, DPad,
                                            sc.o + i * DPad, DPad, nullptr, true);
        return;
      }
    }
    if constexpr (kFramed)
      pv_rows_framed<Arch, kDV>(mr, b - a, sc.s + i * BK + a, vtile + a * DPad, sc.o + i * DPad);
    else
      pv_rows<Arch, kDV>(mr, b - a, sc.s + i * BK + a, vtile + a * DPad, sc.o + i * DPad);
  }
  /// O += P V for the tile: each group over the keys all its rows see, then each row alone over
  /// the few more it sees on either side. A group never multiplies a row's P by a V row that row
  /// does not see (0 * NaN would be NaN). The shared keys start at the first key of the group's
  /// last row in a full tile, not of its last row in this call: a row's order of sums must not
  /// depend on the rows after it (with a window, a shorter call's last row sees earlier keys).
  MICROATTN_ALWAYS_INLINE void values(std::size_t j0, std::size_t kvalid) noexcept {
    const CE* vtile = v + j0 * DPad;
    for (std::size_t i = 0; i < bq; i += MR) {
      const std::size_t mr = internal::min_size(MR, bq - i);
      const std::size_t ca = first(pos_of(r0 + i + internal::min_size(MR, BQ - i) - 1), j0, kvalid);
      const std::size_t cb = sc.kb[i];
      const bool common = ca < cb;
      if (common) pv(vtile, i, mr, ca, cb);
      for (std::size_t e = 0; e < mr; ++e) {
        const std::size_t a = sc.ka[i + e], b = sc.kb[i + e];
        if (a >= b) continue;
        if (!common) {
          pv(vtile, i + e, 1, a, b);
          continue;
        }
        if (a < ca) pv(vtile, i + e, 1, a, ca);
        if (cb < b) pv(vtile, i + e, 1, cb, b);
      }
    }
  }

  /// Normalise and write the rows out, and the maps' rows (2^(s - m) / l where the row sees the
  /// key, 0 elsewhere: the same exp2 and the same 1/l as the output row).
  MICROATTN_ALWAYS_INLINE void finish() noexcept {
    const std::size_t G = rows.heads;
    for (std::size_t i = 0; i < bq; ++i) {
      const std::size_t r = r0 + i;
      float* dst = rows.out + (r / G) * rows.ldo + (r % G) * rows.o_head_stride;
      const float inv = 1.0f / V::hsum(V::load(sc.l + i * LW));
      for (std::size_t d = 0; d < kDV; ++d) dst[d] = sc.o[i * DPad + d] * inv;
      if (maps) {
        float* mrow = maps->p + (r % G) * maps->head_stride + (r / G) * maps->ld;
        const std::size_t pos = pos_of(r);
        const std::size_t e = mask.sink_end(pos), a = mask.lo(pos), b = mask.hi(pos);
        if (e != 0) (void)exp2_row<Arch>(mrow, e, sc.m[i]);
        for (std::size_t j = 0; j < e; ++j) mrow[j] *= inv;
        for (std::size_t j = e; j < a; ++j) mrow[j] = 0.0f;
        (void)exp2_row<Arch>(mrow + a, b - a, sc.m[i]);
        for (std::size_t j = a; j < b; ++j) mrow[j] *= inv;
        for (std::size_t j = b; j < mask.n_keys; ++j) mrow[j] = 0.0f;
      }
    }
  }

  /// The whole tile: queries, then every key tile any of its rows sees (lo and hi grow with the
  /// position; the sink keys first, in a pass of their own), then the outputs.
  MICROATTN_ALWAYS_INLINE void run(float qscale) noexcept {
    load_queries(qscale);
    for (int pass = mask.sinks != 0 ? 0 : 1; pass < 2; ++pass) {
      in_sinks = pass == 0;
      const std::size_t k_begin = lo(pos_of(r0)) / BK * BK;
      const std::size_t k_end = hi(pos_of(r0 + bq - 1));
      for (std::size_t j0 = k_begin; j0 < k_end; j0 += BK) {
        const std::size_t kvalid = internal::min_size(BK, mask.n_keys - j0);
        row_ranges(j0, kvalid);
        scores(kt + (j0 / BK) * (kDHead * BK), j0);
        softmax_step(j0);
        values(j0, kvalid);
      }
    }
    finish();
  }
};

}  // namespace detail

/// Attention of `rows` over keys 0 .. mask.n_keys - 1 under `mask` (see KeyMask).
///   kt: keys as tiles of K^T, tile t = [kDHead][kBK] floats at kt + t * kDHead * kBK, covering
///       at least round_up(n_keys, kBK) keys (columns no row sees may hold anything).
///   v:  values [n_keys][kDPad] row-major, kDV wide (columns past kDV are read into padding
///       only); kDV (default kDHead) may differ from the query/key width kDHead.
///   scale: multiplies Q once per row before the scores (1/sqrt(d_head) by default), together
///          with log2 e: the running max and the exponentials are in base 2.
/// Key tiles outside every row's range are skipped; in a tile crossing a mask edge, a row's
/// softmax and P·V use exactly the keys it sees (decided by index, never by a -inf score), so
/// no value of a hidden key, NaN included, reaches a row: causal outputs are causal bit for bit.
///
/// qs8 form (CE = int8_t: an int8 KV cache): kt and v hold int8 values, key j's K row is
/// k_scale[j] * kt(j) and its V row v_scale[j] * v(j) (k_scale, v_scale: n_keys floats). The
/// int8 tiles are widened in the micro-kernel's registers; a score is scaled once
/// (s_j = k_scale[j] * q·kt(j)) and a probability once (p_j v_scale[j], after the row sum), so
/// the result is fp32 attention over the dequantised cache. Integer scores (the scratch's
/// kIntScores, qs8 form only): each scaled query row is quantised (qd8_quantize_row) and its
/// scores are integer dot products with the int8 keys (qd8_f32_qs8_scores); softmax and P·V
/// stay fp32.
///
/// part / parts: only the query tiles of part `part` of a fixed split into `parts` (for
/// several workers sharing the rows; detail::QueryTileSplit; results are bit-identical for any
/// split).
///
/// maps (not null): also writes each row's softmax probabilities there (attention maps): the kernel
/// keeps the row's base-2 scores (the very scores its online softmax used) and, once the row's
/// max m and sum l are final, turns them into 2^(s - m) / l with the same exp2 and the same 1/l
/// as the output row. One function for both, so an output is the same bits with and without
/// maps on every compiler (two instantiations may be optimised differently); without maps the
/// extra work is a not-taken branch per row and tile.
template <class Arch, std::size_t kDHead, class CE = float, bool kIntScores = false,
          std::size_t kDV = kDHead>
MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE void f32_attn_rows(
    const QueryRows& rows, const KeyMask& mask, const CE* kt, const CE* v, float scale,
    AttnScratch<Arch, kDHead, kIntScores, kDV>& sc, const float* k_scale = nullptr,
    const float* v_scale = nullptr, const MapRows* maps = nullptr, std::size_t part = 0,
    std::size_t parts = 1) noexcept {
  using Tile = detail::QueryTile<Arch, kDHead, CE, kIntScores, kDV>;
  using V = internal::Vec<Arch>;
  static_assert(Tile::BK <= 0xFFFF,
                "f32_attn_rows: a key tile's column numbers are kept in 16 bits");
  MICROATTN_ASSERT(mask.n_keys >= 1);
  // Scores in base 2: softmax(s) = 2^(s log2 e - max) / sum, so the exponential is f32_exp2.
  const float qscale = scale * kLog2e;
  alignas(internal::Tiles<Arch>::kAlign) float lane_no[V::kWidth];
  for (std::size_t w = 0; w < V::kWidth; ++w) lane_no[w] = static_cast<float>(w);
  const std::size_t n_rows = rows.n_tokens * rows.heads;
  const detail::QueryTileSplit split(mask, n_rows, rows.heads, rows.pos0, Tile::BQ, kDHead, parts);
  Tile tile{rows, mask, kt, v, sc, k_scale, v_scale, maps, V::load(lane_no), 0, 0, false};
  for (std::size_t r0 = 0; r0 < n_rows; r0 += Tile::BQ) {
    if (parts > 1 && split.owner(r0 / Tile::BQ) != part) continue;
    tile.r0 = r0;
    tile.bq = internal::min_size(Tile::BQ, n_rows - r0);
    tile.run(qscale);
  }
}

/// Causal attention over keys 0 .. n_keys - 1 (the row at position p sees keys 0 .. p).
template <class Arch, std::size_t kDHead, class CE = float, bool kIntScores = false,
          std::size_t kDV = kDHead>
void f32_attn_rows(const QueryRows& rows, std::size_t n_keys, const CE* kt, const CE* v,
                   float scale, AttnScratch<Arch, kDHead, kIntScores, kDV>& sc,
                   const float* k_scale = nullptr, const float* v_scale = nullptr) noexcept {
  f32_attn_rows<Arch, kDHead>(rows, KeyMask{n_keys}, kt, v, scale, sc, k_scale, v_scale);
}

}  // namespace kernels
}  // namespace microattn

MICROATTN_GCC12_AVX512_WARNINGS_ON
