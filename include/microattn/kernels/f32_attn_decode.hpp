// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: attention of one new token over a KV cache (the decode step).
//
// One decode step has a single query position, so its score row is only n_keys floats: the
// kernel keeps the whole row in scratch and runs an exact two-pass softmax (scores for every
// key, then max, exp and sum, then P·V) instead of the online rescaling of the prefill tile
// kernel. K and V are each streamed exactly once, front to back, and every K/V element loaded
// serves all the query heads of the group. Flash-decoding's split-K (partial max/sum/O per key
// chunk, merged at the end) exists to spread one query over many cores; on one core it only
// adds the merge, so the kernel runs whole rows unless asked for a partial result
// (DecodePartial; KvAttention splits the keys only when a configuration has more workers than
// key/value heads, docs/inference.md).
#pragma once

#include <cstddef>
#include <type_traits>

#include "microattn/internal/elem.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/f32_attn_tile.hpp"
#include "microattn/kernels/f32_exp.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/qd8_gemm.hpp"

namespace microattn {
namespace kernels {

/// Scratch of f32_attn_decode for kRows query heads over up to kKeys keys (a multiple of the
/// key tile): scaled queries, one score row per head, and the output accumulators; with
/// kIntScores also the scaled queries quantised (integer scores against an int8 cache).
template <class Arch, std::size_t kDHead, std::size_t kRows, std::size_t kKeys,
          bool kIntScores = false>
struct DecodeScratch : Qd8QueryRows<Arch, kDHead, kRows, kIntScores> {
  using Tl = internal::Tiles<Arch>;
  static_assert(kKeys % Tl::kBK == 0, "DecodeScratch: kKeys must be whole key tiles");
  /// Row stride of V and of the P·V rows (v_row_stride).
  static constexpr std::size_t kDPad = v_row_stride<Arch>(kDHead);
  alignas(Tl::kAlign) float q[kRows * kDHead];  ///< scaled query rows
  alignas(Tl::kAlign) float s[kRows * kKeys];   ///< scores, then unnormalised probabilities
  alignas(Tl::kAlign) float o[kRows * kDPad];   ///< P·V rows
};

/// The partial result of f32_attn_decode over one chunk of the keys (split-K): per query head e
/// the chunk's base-2 row max m[e], the sum l[e] of 2^(s - m[e]) over the chunk, and the
/// unnormalised o[e] = sum 2^(s - m[e]) v (kDPad floats per head; columns past d_head 0).
/// f32_attn_decode_merge combines the chunks' results into the attention output.
template <class Arch, std::size_t kDHead, std::size_t kRows>
struct DecodePartial {
  static constexpr std::size_t kDPad = v_row_stride<Arch>(kDHead);
  alignas(internal::Tiles<Arch>::kAlign) float o[kRows * kDPad];
  float m[kRows];
  float l[kRows];
  bool empty;  ///< the chunk had no keys (then m, l, o are not set)
};

namespace detail {

/// Largest power of two c with rows * c <= budget that divides vecs (at least 1): the number
/// of vector columns one register block of `rows` rows holds.
constexpr std::size_t decode_cols(std::size_t budget, std::size_t rows, std::size_t vecs) noexcept {
  std::size_t c = 1;
  while (rows * c * 2 <= budget && vecs % (c * 2) == 0) c *= 2;
  return c;
}

/// C[kRows][CV*W] (=, or += when accumulate) A[kRows][kc] · B[kc][CV*W] in register blocks of
/// R rows, the last block holding kRows % R rows: all sizes compile-time.
template <class Arch, std::size_t kRows, std::size_t R, std::size_t CV, class BE>
inline void gemm_row_blocks(std::size_t kc, const float* a, std::size_t lda, const BE* b,
                            std::size_t ldb, float* c, std::size_t ldc,
                            bool accumulate = false) noexcept {
  std::size_t r = 0;
  for (; r + R <= kRows; r += R)
    f32_gemm_ukernel<Arch, R, CV>(kc, a + r * lda, lda, b, ldb, c + r * ldc, ldc, nullptr,
                                  accumulate);
  constexpr std::size_t kTail = kRows % R;
  if (kTail != 0)
    f32_gemm_ukernel<Arch, (kTail != 0 ? kTail : 1), CV>(kc, a + r * lda, lda, b, ldb, c + r * ldc,
                                                         ldc, nullptr, accumulate);
}

/// Pass 1 of f32_attn_decode: S = (scale Q) K^T over the keys key0 .. k_end - 1, one key tile
/// after the other (each tile read once); integer scores: the rows quantised first, then each
/// head alone against the tile's int8 keys.
template <class Arch, std::size_t kDHead, std::size_t kRows, std::size_t kKeys, class CE,
          bool kIntScores>
inline void decode_scores(std::size_t key0, std::size_t k_end, const CE* kt,
                          DecodeScratch<Arch, kDHead, kRows, kKeys, kIntScores>& sc,
                          const float* k_scale) noexcept {
  using Tl = internal::Tiles<Arch>;
  constexpr std::size_t W = internal::Vec<Arch>::kWidth, BK = Tl::kBK;
  constexpr std::size_t R = kRows < Tl::kMR ? kRows : Tl::kMR;
  constexpr std::size_t CS = decode_cols(Tl::kMR * Tl::kNRVec, R, BK / W);  // score columns
  if constexpr (kIntScores) {
    for (std::size_t e = 0; e < kRows; ++e)
      sc.qs[e] = qd8_quantize_row<Arch>(kDHead, sc.q + e * kDHead, sc.qq + e * sc.kQBytes);
  }
  for (std::size_t j0 = key0 / BK * BK; j0 < k_end; j0 += BK) {
    const CE* ktile = kt + (j0 / BK) * (kDHead * BK);
    const std::size_t kvalid = internal::min_size(BK, k_end - j0);
    if constexpr (kIntScores) {
      const std::size_t a = key0 > j0 ? key0 - j0 : 0;
      for (std::size_t e = 0; e < kRows; ++e)
        qd8_f32_qs8_scores<Arch>(kDHead, sc.qq + e * sc.kQBytes, sc.qs[e], ktile, BK, a, kvalid,
                                 k_scale + j0, sc.s + e * kKeys + j0);
    } else {
      for (std::size_t c0 = 0; c0 < kvalid; c0 += CS * W)
        gemm_row_blocks<Arch, kRows, R, CS>(kDHead, sc.q, kDHead, ktile + c0, BK, sc.s + j0 + c0,
                                            kKeys);
    }
  }
}

}  // namespace detail

/// out_e = softmax(scale * q_e K^T) V for the kRows query heads e of one key/value group, all
/// at the newest position: every one of the n_keys keys is visible (no mask).
///   q:   head e at q + e * q_head_stride (kDHead floats)
///   out: head e at out + e * o_head_stride (kDHead floats written)
///   kt:  keys as tiles of K^T, tile t = [kDHead][kBK] at kt + t * kDHead * kBK (the layout of
///        f32_attn_rows), covering round_up(n_keys, kBK) keys; columns past n_keys are read
///        and ignored
///   v:   values [n_keys][kDPad] row-major; only the first n_keys rows are read
/// The keys are key0 .. key0 + n_keys - 1 (a ring-buffer cache's window; key0 = 0 otherwise):
/// tiles are read from the one holding key0, and only those keys reach the softmax and P·V.
/// 1 <= n_keys, key0 + n_keys <= kKeys. out may alias q (q is copied before out is written).
///
/// qs8 form (CE = int8_t, an int8 cache): key j is k_scale[j] * kt(j), value j is
/// v_scale[j] * v(j); int8 rows are widened in registers, each score scaled once after its dot
/// product and each probability once after the row sum (see f32_attn_rows), so the step reads a
/// quarter of the fp32 cache bytes and computes fp32 attention over the dequantised cache.
/// Integer scores (the scratch's kIntScores, qs8 form only): each scaled query row is quantised
/// (qd8_quantize_row) and its scores are integer dot products with the int8 keys
/// (qd8_f32_qs8_scores); softmax and P·V stay fp32.
template <class Arch, std::size_t kDHead, std::size_t kRows, std::size_t kKeys, class CE = float,
          bool kIntScores = false>
void f32_attn_decode(const float* q, std::size_t q_head_stride, float* out,
                     std::size_t o_head_stride, std::size_t n_keys, const CE* kt, const CE* v,
                     float scale, DecodeScratch<Arch, kDHead, kRows, kKeys, kIntScores>& sc,
                     const float* k_scale = nullptr, const float* v_scale = nullptr,
                     std::size_t key0 = 0,
                     DecodePartial<Arch, kDHead, kRows>* partial = nullptr) noexcept {
  constexpr bool kQ = internal::Elem<CE>::kScaled;
  static_assert(!kIntScores || std::is_same<CE, std::int8_t>::value,
                "f32_attn_decode: integer scores need int8 keys");
  static_assert(!kIntScores || internal::Tiles<Arch>::kBK % kQs8Keys == 0,
                "f32_attn_decode: integer scores go by whole runs of kQs8Keys keys");
  using V = internal::Vec<Arch>;
  using Tl = internal::Tiles<Arch>;
  constexpr std::size_t W = V::kWidth, BK = Tl::kBK;
  constexpr std::size_t DPad = DecodeScratch<Arch, kDHead, kRows, kKeys>::kDPad;
  // Register blocks: R rows (every head of the group when they fit, so each K/V element is
  // loaded once) by as many vector columns as the micro-kernel's accumulator budget allows.
  constexpr std::size_t kBudget = Tl::kMR * Tl::kNRVec;
  constexpr std::size_t R = kRows < Tl::kMR ? kRows : Tl::kMR;
  constexpr std::size_t CP = detail::decode_cols(kBudget, R, DPad / W);  // output columns
  MICROATTN_ASSERT(n_keys >= 1 && key0 + n_keys <= kKeys);
  const std::size_t k_end = key0 + n_keys;

  // Scores in base 2 (scale and log2 e folded into Q once): the exponential is f32_exp2.
  const float qscale = scale * kLog2e;
  for (std::size_t e = 0; e < kRows; ++e)
    for (std::size_t d = 0; d < kDHead; ++d)
      sc.q[e * kDHead + d] = q[e * q_head_stride + d] * qscale;

  detail::decode_scores(key0, k_end, kt, sc, k_scale);

  // Exact softmax of each row (unnormalised: P = 2^(S - max), l = sum P; S is in base 2).
  float l[kRows], m[kRows];
  for (std::size_t e = 0; e < kRows; ++e) {
    float* s = sc.s + e * kKeys + key0;
    if constexpr (kQ && !kIntScores) detail::scale_row<Arch>(s, n_keys, k_scale + key0);
    m[e] = detail::row_max<Arch>(s, n_keys);
    l[e] = detail::exp2_row<Arch>(s, n_keys, m[e]);
    if constexpr (kQ) detail::scale_row<Arch>(s, n_keys, v_scale + key0);
  }

  // Pass 2: O = P V, V streamed from memory once. When one register block holds every output
  // column (MHA with d_head 64 on AVX2: 1 row x 8 vectors) it runs over all keys at once. When
  // the columns need several blocks (GQA: 4 heads x 64 columns on AVX2 = 4 blocks of 2 vectors)
  // V goes in chunks of kBK keys (16 KB at d_head 64, L1-resident) and every block runs over a
  // chunk before the next: otherwise each block would stream all of V again.
  constexpr std::size_t kBlocks = DPad / (CP * W);
  const std::size_t chunk = kBlocks == 1 ? n_keys : BK;
  for (std::size_t j0 = key0; j0 < k_end; j0 += chunk) {
    const std::size_t kc = internal::min_size(chunk, k_end - j0);
    for (std::size_t c0 = 0; c0 < DPad; c0 += CP * W)
      detail::gemm_row_blocks<Arch, kRows, R, CP>(kc, sc.s + j0, kKeys, v + j0 * DPad + c0, DPad,
                                                  sc.o + c0, DPad, j0 != key0);
  }

  if (partial != nullptr) {  // split-K: the chunk's state, merged by f32_attn_decode_merge
    for (std::size_t e = 0; e < kRows; ++e) {
      partial->m[e] = m[e];
      partial->l[e] = l[e];
    }
    for (std::size_t i = 0; i < kRows * DPad; ++i) partial->o[i] = sc.o[i];
    partial->empty = false;
    return;
  }
  for (std::size_t e = 0; e < kRows; ++e) {
    const float inv = 1.0f / l[e];
    float* dst = out + e * o_head_stride;
    for (std::size_t d = 0; d < kDHead; ++d) dst[d] = sc.o[e * DPad + d] * inv;
  }
}

/// out_e = the attention over the keys of n chunks from their partial results (part[0 .. n),
/// in that order: the same bits whichever worker computed which chunk):
/// M = max m_c, L = sum l_c 2^(m_c - M), O = sum o_c 2^(m_c - M), out = O / L.
template <class Arch, std::size_t kDHead, std::size_t kRows>
void f32_attn_decode_merge(const DecodePartial<Arch, kDHead, kRows>* part, std::size_t n,
                           float* out, std::size_t o_head_stride) noexcept {
  constexpr std::size_t DPad = DecodePartial<Arch, kDHead, kRows>::kDPad;
  for (std::size_t e = 0; e < kRows; ++e) {
    bool any = false;
    float mx = 0.0f;
    for (std::size_t c = 0; c < n; ++c) {
      if (part[c].empty) continue;
      mx = (!any || part[c].m[e] > mx) ? part[c].m[e] : mx;
      any = true;
    }
    float acc[kDHead] = {};
    float l = 0.0f;
    for (std::size_t c = 0; c < n; ++c) {
      if (part[c].empty) continue;
      const float f = f32_exp2_scalar(part[c].m[e] - mx);
      l += part[c].l[e] * f;
      for (std::size_t d = 0; d < kDHead; ++d) acc[d] += part[c].o[e * DPad + d] * f;
    }
    const float inv = 1.0f / l;
    for (std::size_t d = 0; d < kDHead; ++d) out[e * o_head_stride + d] = acc[d] * inv;
  }
}

}  // namespace kernels
}  // namespace microattn
