// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: the absorbed decode step of multi-head latent attention (DeepSeek's
// MLA): one token's H query heads over a cache of latent rows [c_KV | k_R], an MQA whose keys
// are the whole rows and whose values are the rows' first d_c columns (read in place: the cache
// holds each token once).
//
// The cache is token-major (row j = token j), so the scores are S^T = C · Q^T: the cached rows
// are the GEMM's A (one broadcast per element) and the queries, transposed once per step, its
// B with the heads side by side in vector lanes. The softmax then runs down the keys with a
// vector of heads per key (no horizontal operation), and P·V is P · C[:, :d_c] with the rows
// as B, like f32_attn_decode's. Every cached row is read twice per step (scores, values),
// front to back.
//
// An int8 cache (CE = int8_t, "qs8" as f32_attn_decode's): row j's first kDV columns are
// rs[2j] * c(j), the rest rs[2j + 1] * c(j). For the scores the rows are dequantised a few at a
// time into the scratch (the score micro-kernels broadcast fp32 elements); for P·V the
// weights are scaled by rs[2j] and the int8 values widened in registers. Either way the result
// is the fp32 attention over the dequantised cache, reading a quarter of the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "microattn/executor.hpp"
#include "microattn/internal/elem.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/f32_attn_decode.hpp"
#include "microattn/kernels/f32_exp.hpp"
#include "microattn/kernels/f32_gemm.hpp"

namespace microattn {
namespace kernels {

/// Scratch of f32_attn_latent_decode for kRows query heads of kDK floats over up to kKeys
/// cached rows (elements CE), values kDV wide, its phases run in up to kParts parts at once.
template <class Arch, std::size_t kDK, std::size_t kDV, std::size_t kRows, std::size_t kKeys,
          class CE = float, std::size_t kParts = 1>
struct LatentDecodeScratch {
  static_assert(kParts >= 1, "at least one part");
  using Tl = internal::Tiles<Arch>;
  static constexpr std::size_t kW = internal::Vec<Arch>::kWidth;
  /// Rows dequantised at a time for the scores (int8 cache): two micro-kernel blocks.
  static constexpr std::size_t kStageRows = 2 * Tl::kMR;
  static constexpr bool kScaled = internal::Elem<CE>::kScaled;
  /// The heads side by side in vector lanes: kRows rounded up to whole vectors.
  static constexpr std::size_t kRPad = internal::round_up(kRows, kW);
  /// Row stride of the output accumulators: d_v rounded up to whole vectors.
  static constexpr std::size_t kDVPad = internal::round_up(kDV, kW);
  alignas(Tl::kAlign) float qt[kDK * kRPad];    ///< scaled queries transposed: qt[d][e]
  alignas(Tl::kAlign) float st[kKeys * kRPad];  ///< scores, then weights, key by key: st[j][e]
  alignas(Tl::kAlign) float p[kRows * kKeys];   ///< weights head by head: p[e][j]
  alignas(Tl::kAlign) float o[kRows * kDVPad];  ///< unnormalised P·V rows
  float l[kRows];                               ///< each head's sum of weights
  alignas(Tl::kAlign) float stage[kParts][kScaled ? kStageRows * kDK : 1];  ///< dequantised rows
};

/// n int8 latent rows (row stride ldc, kDK values) as fp32 rows [n][kDK]: row j's first kDV
/// values times rs[2j], the rest times rs[2j + 1] (the two scales of an int8 latent cache).
template <std::size_t kDK, std::size_t kDV>
inline void latent_dequantise_rows(const std::int8_t* c, std::size_t ldc, std::size_t n,
                                   const float* rs, float* dst) noexcept {
  for (std::size_t t = 0; t < n; ++t) {
    const std::int8_t* row = c + t * ldc;
    float* out = dst + t * kDK;
    const float s0 = rs[2 * t], s1 = rs[2 * t + 1];
    for (std::size_t d = 0; d < kDV; ++d) out[d] = s0 * internal::elem_value(row[d]);
    for (std::size_t d = kDV; d < kDK; ++d) out[d] = s1 * internal::elem_value(row[d]);
  }
}

/// Elements a latent cache must hold past its last row for f32_attn_latent_decode (its value
/// blocks read whole vectors: up to W - 1 elements past the d_v-th column of the last row).
template <class Arch>
constexpr std::size_t latent_cache_slack() noexcept {
  return internal::Vec<Arch>::kWidth;
}

namespace detail {

/// Whether the scores go two dimensions per vector lane pair (kPairBroadcast arches, a vector
/// at least twice the heads: AVX-512 with 8 heads): lanes 2e and 2e + 1 of a key's vector sum
/// head e's products of the even and odd dimensions, so every lane works and each 64-bit
/// broadcast of the row serves two dimensions. Otherwise the heads' lanes past kRows idle.
template <class Arch, std::size_t kDK, std::size_t kRows>
constexpr bool latent_pairs() noexcept {
  return internal::Vec<Arch>::kPairBroadcast && 2 * kRows <= internal::Vec<Arch>::kWidth &&
         kDK % 2 == 0;
}

/// c[i][lane] = sum over the pairs d of a_i[d + lane % 2] qt2[d / 2][lane], for MR rows of a
/// (row stride lda, kc floats, kc even): the pair form's micro-kernel.
template <class Arch, std::size_t MR>
MICROATTN_ALWAYS_INLINE inline void latent_pair_rows(std::size_t kc, const float* a,
                                                     std::size_t lda, const float* qt2, float* c,
                                                     std::size_t ldc) noexcept {
  using V = internal::Vec<Arch>;
  constexpr std::size_t W = V::kWidth;
  typename V::type acc[MR];
#pragma GCC unroll 32
  for (std::size_t i = 0; i < MR; ++i) acc[i] = V::zero();
  for (std::size_t d = 0; d < kc; d += 2) {
    const typename V::type b = V::load(qt2 + (d / 2) * W);
#pragma GCC unroll 32
    for (std::size_t i = 0; i < MR; ++i)
      acc[i] = V::fma(V::broadcast_pair(a + i * lda + d), b, acc[i]);
  }
#pragma GCC unroll 32
  for (std::size_t i = 0; i < MR; ++i) V::store(c + i * ldc, acc[i]);
}

/// The pair form of latent_scores: S^T rows of W lanes, then each head's two lanes summed into
/// lane e (lanes from kRows on zeroed).
template <class Arch, std::size_t kDK, std::size_t kRows, std::size_t kRPad>
inline void latent_scores_pairs(const float* c, std::size_t ldc, std::size_t n, const float* qt2,
                                float* st) noexcept {
  constexpr std::size_t MR = internal::Tiles<Arch>::kMR;
  std::size_t j = 0;
  for (; j + MR <= n; j += MR)
    latent_pair_rows<Arch, MR>(kDK, c + j * ldc, ldc, qt2, st + j * kRPad, kRPad);
  for (; j < n; ++j) latent_pair_rows<Arch, 1>(kDK, c + j * ldc, ldc, qt2, st + j * kRPad, kRPad);
  for (j = 0; j < n; ++j) {
    float* row = st + j * kRPad;
    for (std::size_t e = 0; e < kRows; ++e) row[e] = row[2 * e] + row[2 * e + 1];
    for (std::size_t e = kRows; e < kRPad; ++e) row[e] = 0.0f;
  }
}

/// S^T[j][e] = c_j · q_e for keys [0, n) (qt: the scaled queries transposed), by blocks of the
/// micro-kernel's rows of keys and its panels of heads.
template <class Arch, std::size_t kDK, std::size_t kRPad>
inline void latent_scores(const float* c, std::size_t ldc, std::size_t n, const float* qt,
                          float* st) noexcept {
  using Tl = internal::Tiles<Arch>;
  constexpr std::size_t W = internal::Vec<Arch>::kWidth, MR = Tl::kMR;
  for (std::size_t j = 0; j < n; j += MR) {
    const std::size_t mr = internal::min_size(MR, n - j);
    for (std::size_t c0 = 0; c0 < kRPad; c0 += Tl::kNR) {
      const std::size_t nv = internal::min_size(Tl::kNRVec, (kRPad - c0) / W);
      f32_gemm_ukernel_rows_nv<Arch>(nv, mr, kDK, c + j * ldc, ldc, qt + c0, kRPad,
                                     st + j * kRPad + c0, kRPad, nullptr, false);
    }
  }
}

/// The exact softmax of every head down the keys [0, n) of st (heads in lanes): each lane's max,
/// then st[j] = 2^(st[j] - max) and the lanes' sums into l[0 .. kRows); the weights are copied
/// head by head into p (row stride kKeys).
template <class Arch, std::size_t kRows, std::size_t kRPad, std::size_t kKeys>
inline void latent_softmax(float* st, std::size_t n, float* p, float* l) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t W = V::kWidth;
  for (std::size_t c0 = 0; c0 < kRPad; c0 += W) {
    T vmax = V::load(st + c0);
    for (std::size_t j = 1; j < n; ++j) vmax = V::max(vmax, V::load(st + j * kRPad + c0));
    T vsum = V::zero();
    for (std::size_t j = 0; j < n; ++j) {
      const T w = f32_softmax_exp2<Arch>(V::load(st + j * kRPad + c0) - vmax);
      V::store(st + j * kRPad + c0, w);
      vsum = vsum + w;
    }
    alignas(internal::Tiles<Arch>::kAlign) float sums[W];
    V::store(sums, vsum);
    for (std::size_t e = c0; e < c0 + W && e < kRows; ++e) l[e] = sums[e - c0];
  }
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t e = 0; e < kRows; ++e) p[e * kKeys + j] = st[j * kRPad + e];
}

}  // namespace detail

/// The phases of f32_attn_latent_decode, for a caller that splits them over workers: queries
/// (once), scores (part `part` of `parts` of the keys), softmax (once, after every part's
/// scores), values (part `part` of `parts` of the value columns, each head normalised). Any
/// split gives the bits of one part: a key's score and an output column are each computed by
/// one part in the same order, and the softmax runs whole. Arguments as f32_attn_latent_decode's.
template <class Arch, std::size_t kDK, std::size_t kDV, std::size_t kRows, std::size_t kKeys,
          class CE, std::size_t kParts>
void latent_decode_queries(
    const float* q, std::size_t ldq, float scale,
    LatentDecodeScratch<Arch, kDK, kDV, kRows, kKeys, CE, kParts>& sc) noexcept {
  using Sc = LatentDecodeScratch<Arch, kDK, kDV, kRows, kKeys, CE, kParts>;
  constexpr std::size_t RP = Sc::kRPad;
  // Scores in base 2 (scale and log2 e folded into the queries once): the exponential is exp2.
  const float qscale = scale * kLog2e;
  if constexpr (detail::latent_pairs<Arch, kDK, kRows>()) {
    // qt2[d / 2][2e + u] = q_e[d + u] (RP == W here).
    for (std::size_t d = 0; d < kDK; d += 2)
      for (std::size_t l = 0; l < RP; ++l)
        sc.qt[(d / 2) * RP + l] = l / 2 < kRows ? q[(l / 2) * ldq + d + l % 2] * qscale : 0.0f;
  } else {
    for (std::size_t d = 0; d < kDK; ++d)
      for (std::size_t e = 0; e < RP; ++e)
        sc.qt[d * RP + e] = e < kRows ? q[e * ldq + d] * qscale : 0.0f;
  }
}

/// S^T for part `part` of `parts` of the keys [0, n_keys) (whole stage blocks each): fp32 rows
/// read in place; int8 rows dequantised kStageRows at a time into the part's stage.
template <class Arch, std::size_t kDK, std::size_t kDV, std::size_t kRows, std::size_t kKeys,
          class CE, std::size_t kParts>
void latent_decode_scores(const CE* c, std::size_t ldc, std::size_t n_keys, const float* rs,
                          LatentDecodeScratch<Arch, kDK, kDV, kRows, kKeys, CE, kParts>& sc,
                          std::size_t part, std::size_t parts) noexcept {
  using Sc = LatentDecodeScratch<Arch, kDK, kDV, kRows, kKeys, CE, kParts>;
  constexpr std::size_t RP = Sc::kRPad;
  const internal::Range r = internal::split(n_keys, Sc::kStageRows, part, parts);
  auto run = [&](const float* rows, std::size_t ld, std::size_t nb, float* st) {
    if constexpr (detail::latent_pairs<Arch, kDK, kRows>())
      detail::latent_scores_pairs<Arch, kDK, kRows, RP>(rows, ld, nb, sc.qt, st);
    else
      detail::latent_scores<Arch, kDK, RP>(rows, ld, nb, sc.qt, st);
  };
  if (r.begin >= r.end) return;
  if constexpr (!Sc::kScaled) {
    run(c + r.begin * ldc, ldc, r.end - r.begin, sc.st + r.begin * RP);
  } else {
    for (std::size_t j0 = r.begin; j0 < r.end; j0 += Sc::kStageRows) {
      const std::size_t nb = internal::min_size(Sc::kStageRows, r.end - j0);
      latent_dequantise_rows<kDK, kDV>(c + j0 * ldc, ldc, nb, rs + 2 * j0, sc.stage[part]);
      run(sc.stage[part], kDK, nb, sc.st + j0 * RP);
    }
  }
}

/// The softmax of every head over the keys [0, n_keys) (sc.p, sc.l); an int8 cache's value
/// scales rs[2j] folded into the weights.
template <class Arch, std::size_t kDK, std::size_t kDV, std::size_t kRows, std::size_t kKeys,
          class CE, std::size_t kParts>
void latent_decode_softmax(
    std::size_t n_keys, const float* rs,
    LatentDecodeScratch<Arch, kDK, kDV, kRows, kKeys, CE, kParts>& sc) noexcept {
  using Sc = LatentDecodeScratch<Arch, kDK, kDV, kRows, kKeys, CE, kParts>;
  detail::latent_softmax<Arch, kRows, Sc::kRPad, kKeys>(sc.st, n_keys, sc.p, sc.l);
  if constexpr (Sc::kScaled)  // value j is rs[2j] * c(j)[:kDV]: the scale goes into its weight
    for (std::size_t e = 0; e < kRows; ++e)
      for (std::size_t j = 0; j < n_keys; ++j) sc.p[e * kKeys + j] *= rs[2 * j];
}

/// O = P · C[:, :kDV] for part `part` of `parts` of the value column blocks, each head's columns
/// normalised into out. Register blocks of R heads by CP vectors (f32_attn_decode's blocking):
/// with several blocks per row, by chunks of kBK rows so each block reads a chunk from L1.
template <class Arch, std::size_t kDK, std::size_t kDV, std::size_t kRows, std::size_t kKeys,
          class CE, std::size_t kParts>
void latent_decode_values(const CE* c, std::size_t ldc, std::size_t n_keys,
                          LatentDecodeScratch<Arch, kDK, kDV, kRows, kKeys, CE, kParts>& sc,
                          float* out, std::size_t ldo, std::size_t part,
                          std::size_t parts) noexcept {
  using Sc = LatentDecodeScratch<Arch, kDK, kDV, kRows, kKeys, CE, kParts>;
  using Tl = internal::Tiles<Arch>;
  constexpr std::size_t W = Sc::kW, DVP = Sc::kDVPad, BK = Tl::kBK;
  constexpr std::size_t R = kRows < Tl::kMR ? kRows : Tl::kMR;
  constexpr std::size_t CP = detail::decode_cols(Tl::kMR * Tl::kNRVec, R, DVP / W);
  constexpr std::size_t kBlocks = DVP / (CP * W);
  const internal::Range blocks = internal::split(kBlocks, 1, part, parts);
  if (blocks.begin >= blocks.end) return;
  const std::size_t chunk = kBlocks == 1 ? n_keys : BK;
  for (std::size_t j0 = 0; j0 < n_keys; j0 += chunk) {
    const std::size_t kc = internal::min_size(chunk, n_keys - j0);
    for (std::size_t b = blocks.begin; b < blocks.end; ++b)
      detail::gemm_row_blocks<Arch, kRows, R, CP>(kc, sc.p + j0, kKeys, c + j0 * ldc + b * CP * W,
                                                  ldc, sc.o + b * CP * W, DVP, j0 != 0);
  }
  const std::size_t d0 = blocks.begin * CP * W, d1 = internal::min_size(kDV, blocks.end * CP * W);
  for (std::size_t e = 0; e < kRows; ++e) {
    const float inv = 1.0f / sc.l[e];
    for (std::size_t d = d0; d < d1; ++d) out[e * ldo + d] = sc.o[e * DVP + d] * inv;
  }
}

/// out_e = softmax(scale * qa_e C^T) C[:, :kDV] for the kRows query heads e of one token, over the
/// n_keys cached rows of C (every one visible): the four phases above in one part.
///   q:   head e at q + e * ldq (kDK floats: [q~_e | q_R_e], the absorbed query)
///   c:   the cache, row j at c + j * ldc (kDK floats read; its first kDV are the values); the
///        array holds latent_cache_slack<Arch>() floats past the last row's kDK
///   out: head e at out + e * ldo (kDV floats written)
/// 1 <= n_keys <= kKeys, kDV <= kDK <= ldc.
/// CE = int8_t (an int8 cache): rs holds two scales per row (its first kDV columns', the
/// rest's); ignored (may be null) for fp32 rows.
template <class Arch, std::size_t kDK, std::size_t kDV, std::size_t kRows, std::size_t kKeys,
          class CE = float, std::size_t kParts = 1>
void f32_attn_latent_decode(const float* q, std::size_t ldq, const CE* c, std::size_t ldc,
                            std::size_t n_keys, float scale,
                            LatentDecodeScratch<Arch, kDK, kDV, kRows, kKeys, CE, kParts>& sc,
                            float* out, std::size_t ldo, const float* rs = nullptr) noexcept {
  static_assert(kDV <= kDK, "f32_attn_latent_decode: the values are the keys' first columns");
  MICROATTN_ASSERT(n_keys >= 1 && n_keys <= kKeys && kDK <= ldc);
  latent_decode_queries(q, ldq, scale, sc);
  latent_decode_scores(c, ldc, n_keys, rs, sc, 0, 1);
  latent_decode_softmax(n_keys, rs, sc);
  latent_decode_values(c, ldc, n_keys, sc, out, ldo, 0, 1);
}

}  // namespace kernels
}  // namespace microattn
