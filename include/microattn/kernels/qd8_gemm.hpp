// SPDX-License-Identifier: Apache-2.0
// microattn kernels: integer compute (Compute::kInt8). qd8_f32_qc8w_gemm / _gemv: activations
// quantised to int8 at run time with one scale per row (qd8), int8 weights with one scale per
// output column (qc8w), exact int32 sums of int8 products, and the two scales and the bias
// applied in a float epilogue (f32 output). The sums are formed 4 bytes at a time (kQd8Group):
// AVX-512 VNNI's vpdpbusd, two of ARM DSP's SMLAD, or plain C++ elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/executor.hpp"
#include "microattn/internal/elem.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/layout.hpp"

MICROATTN_GCC12_AVX512_WARNINGS_OFF

namespace microattn {
namespace kernels {

/// Depth of the int8 dot product's groups: A and B meet 4 bytes at a time.
constexpr std::size_t kQd8Group = 4;

/// Bytes a quantised row of K values takes: K rounded up to whole groups (zero past K).
constexpr std::size_t qd8_row_bytes(std::size_t K) noexcept {
  return (K + kQd8Group - 1) / kQd8Group * kQd8Group;
}

/// The integer kernels' choices for Arch:
///   kVnni  the AVX-512 VNNI kernels (vpdpbusd takes unsigned bytes for A: a quantised row
///          holds its values xor kFlip = 0x80, i.e. q + 128, and the sums subtract 128 times
///          the weight column sums);
///   kMR x kNR  micro-tile; kKC  depth of one packed weight panel (the fp32 panel's bytes).
template <class Arch>
struct Qd8Params {
#if defined(MICROATTN_INTRIN_AVX512VNNI)
  static constexpr bool kVnni = internal::kIsAvx512<Arch>;
#else
  static constexpr bool kVnni = false;
#endif
  static constexpr unsigned char kFlip = kVnni ? 0x80 : 0;
  static constexpr std::size_t kMR = internal::Tiles<Arch>::kQd8MR;
  static constexpr std::size_t kNR = internal::Tiles<Arch>::kNR;
  static constexpr std::size_t kKC = kQd8Group * internal::Tiles<Arch>::kKC;
  static_assert(kNR % (kVnni ? 16 : 1) == 0, "VNNI panels are whole 16-column vectors");
};

/// Floats of the packing buffer qd8_f32_qc8w_gemm needs for Arch (its int8 panel).
template <class Arch>
constexpr std::size_t qd8_pack_floats() noexcept {
  return Qd8Params<Arch>::kKC * Qd8Params<Arch>::kNR / sizeof(float);
}

/// Rows of quantised activations: row i stands for scale[i] * v(i, k), v(i, k) the int8 value
/// whose bits xor Qd8Params::kFlip are q[i * ld + k] (k < K; zero values up to ld, a multiple of
/// kQd8Group).
struct Qd8Rows {
  const std::int8_t* q;
  std::size_t ld;
  const float* scale;
  Qd8Rows from(std::size_t i) const noexcept { return {q + i * ld, ld, scale + i}; }
};

namespace detail {
/// v (|v| <= 127.5) rounded to nearest, ties to even (as the SIMD conversions), in -127 .. 127.
inline std::int32_t qd8_round(float v) noexcept {
  std::int32_t r = static_cast<std::int32_t>(v);
  const float d = v - static_cast<float>(r);  // exact
  if (d > 0.5f || (d == 0.5f && (r & 1) != 0))
    ++r;
  else if (d < -0.5f || (d == -0.5f && (r & 1) != 0))
    --r;
  return r < -127 ? -127 : (r > 127 ? 127 : r);
}
}  // namespace detail

/// Quantises x[0 .. K) into q[0 .. qd8_row_bytes(K)) (see Qd8Rows) and returns its scale:
/// s = max |x| / 127 and v = x * (127 / max |x|) rounded to nearest (ties to even), so
/// |x - s v| <= s / 2 (plus a few ulps of the two divisions). All-zero x: s = 0, v = 0; an x
/// that is not finite: s = NaN (what it multiplies becomes NaN, as in fp32), v = 0.
template <class Arch>
inline float qd8_quantize_row(std::size_t K, const float* x, std::int8_t* q) noexcept {
  constexpr unsigned char kFlip = Qd8Params<Arch>::kFlip;
  const std::size_t kp = qd8_row_bytes(K);
  float amax = 0.0f;
#if defined(MICROATTN_INTRIN_AVX512) && defined(__AVX512BW__)
  if constexpr (internal::kIsAvx512<Arch>) {
    amax = intrin::absmax_f32(x, K);
  } else
#endif
  {
    for (std::size_t k = 0; k < K; ++k) {
      if (!internal::finite_bits(x[k])) {
        amax = __builtin_nanf("");
        break;
      }
      const float a = x[k] < 0.0f ? -x[k] : x[k];
      amax = a > amax ? a : amax;
    }
  }
  if (!(amax > 0.0f)) {  // all zero, or not finite (NaN)
    for (std::size_t k = 0; k < kp; ++k) q[k] = static_cast<std::int8_t>(kFlip);
    return amax == 0.0f ? 0.0f : __builtin_nanf("");
  }
  const float s = amax / internal::opaque_divisor(127.0f);
  const float inv = 127.0f / internal::opaque_divisor(amax);
  if (!internal::finite_bits(inv)) {  // max |x| tiny: divide each value by s instead
    for (std::size_t k = 0; k < K; ++k)
      q[k] = static_cast<std::int8_t>(static_cast<unsigned char>(quantize_value(x[k], s)) ^ kFlip);
  } else {
#if defined(MICROATTN_INTRIN_AVX512) && defined(__AVX512BW__)
    if constexpr (internal::kIsAvx512<Arch>) {
      intrin::quantize_f32_i8(x, K, inv, q, kFlip);
    } else
#endif
    {
      for (std::size_t k = 0; k < K; ++k)
        q[k] = static_cast<std::int8_t>(static_cast<unsigned char>(detail::qd8_round(x[k] * inv)) ^
                                        kFlip);
    }
  }
  for (std::size_t k = K; k < kp; ++k) q[k] = static_cast<std::int8_t>(kFlip);
  return s;
}

/// qd8_quantize_row of each of M rows of x (row stride ldx) into q (row stride ldq >=
/// qd8_row_bytes(K)), the scales into scale[0 .. M).
template <class Arch>
inline void qd8_quantize_rows(std::size_t M, std::size_t K, const float* x, std::size_t ldx,
                              std::int8_t* q, std::size_t ldq, float* scale) noexcept {
  for (std::size_t i = 0; i < M; ++i)
    scale[i] = qd8_quantize_row<Arch>(K, x + i * ldx, q + i * ldq);
}

namespace detail {
/// Packs B's kc x nr panel (depth pc, columns jc) as the micro-kernels read it:
/// pack[(g * kNR + j) * 4 + r] = B(pc + 4 g + r, jc + j), zero past kc and nr; colsum[j] = the
/// sum of column j over the panel (the VNNI kernels' offset correction).
template <class Arch>
inline void qd8_pack_panel(const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                           std::size_t pc, std::size_t kc, std::size_t jc, std::size_t nr,
                           std::int8_t* pack, std::int32_t* colsum) noexcept {
  using P = Qd8Params<Arch>;
  constexpr std::size_t NR = P::kNR, G = kQd8Group;
  const std::size_t groups = (kc + G - 1) / G;
  std::size_t g0 = 0;
#if defined(MICROATTN_INTRIN_AVX512VNNI)
  if constexpr (P::kVnni) {
    // Whole 16-column vectors of whole groups, by byte transposes: of 4 rows of 16 columns
    // (the row-major layouts), or of 16 columns of 64 bytes ([out][in]).
    if (nr == NR) {
      using I = xsimd::batch<std::int32_t, Arch>;
      const I ones(0x01010101);
      I cs[NR / 16];
      for (std::size_t v = 0; v < NR / 16; ++v) cs[v] = I(0);
      g0 = layout == WeightLayout::kOutIn ? kc / 64 * 16 : kc / G;
      if (layout == WeightLayout::kOutIn) {
        for (std::size_t g = 0; g < g0; g += 16) {
          for (std::size_t v = 0; v < NR / 16; ++v) {
            typename I::register_type r[16];
            intrin::cols16_to_k4_i8x64(b + (jc + v * 16) * ldb + pc + g * G, ldb, r);
            for (std::size_t h = 0; h < 16; ++h) {
              const I t(r[h]);
              t.store_unaligned(
                  reinterpret_cast<std::int32_t*>(pack + ((g + h) * NR + v * 16) * G));
              cs[v] = I(intrin::dpbusd_i32x16(cs[v], ones, t));
            }
          }
        }
      }
      for (std::size_t g = 0; g < g0 && layout != WeightLayout::kOutIn; ++g) {
        const std::size_t k = pc + g * G;
        for (std::size_t v = 0; v < NR / 16; ++v) {
          const std::size_t n = jc + v * 16;
          const std::int8_t* src = layout == WeightLayout::kInOut
                                       ? b + k * ldb + n
                                       : b + (n / kWeightPanel) * ldb + k * kWeightPanel;
          const I t(
              intrin::load_k4_i8x64(src, layout == WeightLayout::kInOut ? ldb : kWeightPanel));
          t.store_unaligned(reinterpret_cast<std::int32_t*>(pack + (g * NR + v * 16) * G));
          cs[v] = I(intrin::dpbusd_i32x16(cs[v], ones, t));
        }
      }
      for (std::size_t v = 0; v < NR / 16; ++v) cs[v].store_unaligned(colsum + v * 16);
    }
  }
#endif
  if (g0 == 0)
    for (std::size_t j = 0; j < NR; ++j) colsum[j] = 0;
  // B(k, n) = b[k * sk + n * sn] within one kPanel16 panel or a dense layout.
  for (std::size_t g = g0; g < groups; ++g) {
    for (std::size_t r = 0; r < G; ++r) {
      const std::size_t k = g * G + r;
      std::int8_t* d = pack + g * NR * G + r;
      for (std::size_t j = 0; j < NR; ++j) {
        std::int8_t v = 0;
        if (k < kc && j < nr) {
          const std::size_t n = jc + j, kk = pc + k;
          v = layout == WeightLayout::kInOut ? b[kk * ldb + n]
              : layout == WeightLayout::kOutIn
                  ? b[n * ldb + kk]
                  : b[(n / kWeightPanel) * ldb + kk * kWeightPanel + n % kWeightPanel];
        }
        d[j * G] = v;
        colsum[j] += v;
      }
    }
  }
}

/// The int32 sums of an mr x NR micro-tile (mr <= kMR): acc(i, j) = sum over `groups` groups
/// of a's row i (row stride lda, bytes as Qd8Rows) times the packed panel's column j, handed to
/// out.sums(i, j0, s) for runs of columns j0 ..: out.run (the run's width) at a time.
template <class Arch, std::size_t MR, class Out>
MICROATTN_ALWAYS_INLINE inline void qd8_ukernel(std::size_t groups, const std::int8_t* a,
                                                std::size_t lda, const std::int8_t* pack,
                                                Out& out) noexcept {
  using P = Qd8Params<Arch>;
  constexpr std::size_t NR = P::kNR, G = kQd8Group;
  // The loops over rows and columns are unrolled at every -O level: rolled, the sums live in
  // memory (as the fp32 micro-kernel's, f32_gemm.hpp).
  const std::int8_t* arow[MR];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i) arow[i] = a + i * lda;
#if defined(MICROATTN_INTRIN_AVX512VNNI)
  if constexpr (P::kVnni) {
    using I = xsimd::batch<std::int32_t, Arch>;
    constexpr std::size_t NV = NR / 16;
    alignas(64) std::int32_t sums[MR][NR];
    intrin::qd8_tile_vnni<MR, NV>(groups, arow, pack, sums);
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
      for (std::size_t v = 0; v < NV; ++v) out.sums(i, v * 16, I::load_aligned(sums[i] + v * 16));
    return;
  }
#endif
  std::int32_t acc[MR][NR];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t j = 0; j < NR; ++j) acc[i][j] = 0;
  for (std::size_t g = 0; g < groups; ++g, pack += NR * G) {
#if defined(MICROATTN_INTRIN_DSP)
    // Each row's 4 bytes unpacked once into two int16 pairs, reused over the NR columns.
    std::uint32_t a02[MR], a13[MR];
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i) {
      std::uint32_t w;
      std::memcpy(&w, arow[i] + g * G, sizeof w);
      a02[i] = intrin::sxtb16_02(w);
      a13[i] = intrin::sxtb16_13(w);
    }
#pragma GCC unroll 64
    for (std::size_t j = 0; j < NR; ++j) {
      std::uint32_t w;
      std::memcpy(&w, pack + j * G, sizeof w);
      const std::uint32_t b02 = intrin::sxtb16_02(w), b13 = intrin::sxtb16_13(w);
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i)
        acc[i][j] = intrin::smlad(a13[i], b13, intrin::smlad(a02[i], b02, acc[i][j]));
    }
#else
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i) {
      const std::int8_t* ai = arow[i] + g * G;
#pragma GCC unroll 64
      for (std::size_t j = 0; j < NR; ++j) {
        const std::int8_t* bj = pack + j * G;
        acc[i][j] += std::int32_t{ai[0]} * bj[0] + std::int32_t{ai[1]} * bj[1] +
                     std::int32_t{ai[2]} * bj[2] + std::int32_t{ai[3]} * bj[3];
      }
    }
#endif
  }
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i) out.sums(i, 0, acc[i]);
}

/// qd8_ukernel for any mr in 1 .. kMR rows.
template <class Arch, std::size_t MR, class Out>
struct Qd8Rows_ {
  static void call(std::size_t mr, std::size_t groups, const std::int8_t* a, std::size_t lda,
                   const std::int8_t* pack, Out& out) noexcept {
    if (mr == MR) return qd8_ukernel<Arch, MR>(groups, a, lda, pack, out);
    Qd8Rows_<Arch, MR - 1, Out>::call(mr, groups, a, lda, pack, out);
  }
};
template <class Arch, class Out>
struct Qd8Rows_<Arch, 0, Out> {
  static void call(std::size_t, std::size_t, const std::int8_t*, std::size_t, const std::int8_t*,
                   Out&) noexcept {}
};

/// The blocking of the integer GEMM: panels of kNR columns, depth blocks of kKC bytes, each
/// panel packed once (it is reused by all M rows: the driver hands over at most a row block of
/// the fp32 GEMM's kMC rows), then the kMR-row micro-tiles; tile(ir, mr, jc, nr, first, sums)
/// runs a micro-tile's sums through its epilogue, sums(out) computing them into out.
template <class Arch, class Tile>
inline void qd8_blocks(std::size_t M, std::size_t N, std::size_t K, const std::int8_t* qa,
                       std::size_t lda, const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                       float* pack_f, Tile& tile) noexcept {
  using P = Qd8Params<Arch>;
  constexpr std::size_t NR = P::kNR, MR = P::kMR, KC = P::kKC;
  std::int8_t* pack = reinterpret_cast<std::int8_t*>(pack_f);
  std::int32_t colsum[NR];
  for (std::size_t jc = 0; jc < N; jc += NR) {
    const std::size_t nr = internal::min_size(NR, N - jc);
    for (std::size_t pc = 0; pc < K; pc += KC) {
      const std::size_t kc = internal::min_size(KC, K - pc);
      qd8_pack_panel<Arch>(b, ldb, layout, pc, kc, jc, nr, pack, colsum);
      const std::size_t groups = (kc + kQd8Group - 1) / kQd8Group;
      for (std::size_t ir = 0; ir < M; ir += MR) {
        const std::size_t mr = internal::min_size(MR, M - ir);
        const std::int8_t* ablk = qa + ir * lda + pc;
        tile(ir, mr, jc, nr, pc == 0, colsum, [&](auto& out) {
          Qd8Rows_<Arch, MR, std::remove_reference_t<decltype(out)>>::call(mr, groups, ablk, lda,
                                                                           pack, out);
        });
      }
    }
  }
}

/// A micro-tile's float epilogue: t(i, j) = (first ? bias[j] : t(i, j)) + sa[i] * (sb[j] *
/// (sum - off * colsum[j])) into the float tile t (row stride kNR).
template <class Arch>
struct Qd8Epilogue {
  float* t;
  const float* sa;
  const float* sb;
  const float* bias;
  const std::int32_t* colsum;
  bool first;
  static constexpr std::int32_t kOff = Qd8Params<Arch>::kFlip ? 128 : 0;
#if defined(MICROATTN_INTRIN_AVX512VNNI)
  template <class I, class = std::enable_if_t<!std::is_array<I>::value>>
  MICROATTN_ALWAYS_INLINE void sums(std::size_t i, std::size_t j0, const I& s) const noexcept {
    using F = xsimd::batch<float, Arch>;
    constexpr std::size_t NR = Qd8Params<Arch>::kNR;
    const I c = I::load_unaligned(colsum + j0);
    const F v = F(sa[i]) * (F::load_unaligned(sb + j0) * xsimd::to_float(s - c * I(kOff)));
    const F base = first ? (bias ? F::load_unaligned(bias + j0) : F(0.0f))
                         : F::load_unaligned(t + i * NR + j0);
    (base + v).store_unaligned(t + i * NR + j0);
  }
#endif
  MICROATTN_ALWAYS_INLINE void sums(std::size_t i, std::size_t,
                                    const std::int32_t* s) const noexcept {
    constexpr std::size_t NR = Qd8Params<Arch>::kNR;
    float* ti = t + i * NR;
    for (std::size_t j = 0; j < NR; ++j) {
      const float v = sa[i] * (sb[j] * static_cast<float>(s[j] - kOff * colsum[j]));
      ti[j] = (first ? (bias ? bias[j] : 0.0f) : ti[j]) + v;
    }
  }
};
/// The int32 sums' epilogue of qd8_qc8w_gemm_i32: c(i, j) = (first ? 0 : c(i, j)) + sum -
/// off * colsum[j] for the nr valid columns.
template <class Arch>
struct Qd8SumsOut {
  static constexpr std::int32_t kOff = Qd8Params<Arch>::kFlip ? 128 : 0;
  std::int32_t* c;
  std::size_t ldc, nr;
  const std::int32_t* colsum;
  bool first;
#if defined(MICROATTN_INTRIN_AVX512VNNI)
  template <class I, class = std::enable_if_t<!std::is_array<I>::value>>
  void sums(std::size_t i, std::size_t j0, const I& s) const noexcept {
    alignas(64) std::int32_t lanes[I::size];
    s.store_aligned(lanes);
    sums(i, j0, static_cast<const std::int32_t*>(lanes), I::size);
  }
#endif
  void sums(std::size_t i, std::size_t j0, const std::int32_t* s,
            std::size_t n = Qd8Params<Arch>::kNR) const noexcept {
    for (std::size_t j = j0; j < j0 + n && j < nr; ++j) {
      const std::int32_t v = s[j - j0] - kOff * colsum[j];
      c[i * ldc + j] = first ? v : c[i * ldc + j] + v;
    }
  }
};

}  // namespace detail

/// C = A · B (+ bias) with integer compute: A[M][K] given quantised (Qd8Rows a), B a weight
/// matrix of int8 q(k, n) with per-column scales b_scale (B(k, n) = b_scale[n] q(k, n)) stored
/// in b_layout as for f32_gemm, C(m, n) = a.scale[m] * (b_scale[n] * sum_k v(m, k) q(k, n))
/// (+ bias[n]) with the sums exact in int32 over each depth block of Qd8Params::kKC (one block
/// for K <= kKC; blocks are then added in float), written through store. pack:
/// qd8_pack_floats<Arch>() floats. b_scale and bias must cover N columns padded to nothing:
/// the epilogue reads b_scale[jc + j] and bias[jc + j] for j < kNR only where jc + j < N.
template <class Arch, class Store>
void qd8_f32_qc8w_gemm(std::size_t M, std::size_t N, std::size_t K, const Qd8Rows& a,
                       const std::int8_t* b, std::size_t ldb, WeightLayout b_layout,
                       const float* b_scale, const float* bias, Store store, float* pack) noexcept {
  using P = Qd8Params<Arch>;
  constexpr std::size_t NR = P::kNR, MR = P::kMR;
  alignas(internal::Tiles<Arch>::kAlign) float tile[MR * NR];
  alignas(internal::Tiles<Arch>::kAlign) float sb[NR];
  alignas(internal::Tiles<Arch>::kAlign) float bb[NR];
  std::size_t last_jc = ~std::size_t{0};
  auto run = [&](std::size_t ir, std::size_t mr, std::size_t jc, std::size_t nr, bool first,
                 const std::int32_t* colsum, auto&& sums) {
    if (jc != last_jc) {  // the panel's scales and bias, zero past N
      for (std::size_t j = 0; j < NR; ++j) {
        sb[j] = j < nr ? b_scale[jc + j] : 0.0f;
        bb[j] = (bias && j < nr) ? bias[jc + j] : 0.0f;
      }
      last_jc = jc;
    }
    if (!first) detail::gemm_tile_copy<Arch>(true, store, ir, mr, jc, nr, tile);
    detail::Qd8Epilogue<Arch> out{tile, a.scale + ir, sb, bias ? bb : nullptr, colsum, first};
    sums(out);
    detail::gemm_tile_copy<Arch>(false, store, ir, mr, jc, nr, tile);
  };
  detail::qd8_blocks<Arch>(M, N, K, a.q, a.ld, b, ldb, b_layout, pack, run);
}

/// The exact int32 sums of qd8_f32_qc8w_gemm without scales: c[m * ldc + n] = sum_k v(m, k)
/// q(k, n) (the integer kernels' own test: they must equal an int64 reference bit for bit).
template <class Arch>
void qd8_qc8w_gemm_i32(std::size_t M, std::size_t N, std::size_t K, const Qd8Rows& a,
                       const std::int8_t* b, std::size_t ldb, WeightLayout b_layout,
                       std::int32_t* c, std::size_t ldc, float* pack) noexcept {
  auto run = [&](std::size_t ir, std::size_t, std::size_t jc, std::size_t nr, bool first,
                 const std::int32_t* colsum, auto&& sums) {
    detail::Qd8SumsOut<Arch> out{c + ir * ldc + jc, ldc, nr, colsum, first};
    sums(out);
  };
  detail::qd8_blocks<Arch>(M, N, K, a.q, a.ld, b, ldb, b_layout, pack, run);
}

namespace detail {
/// sum over k < K of v(k) q(k) for a quantised row (bytes as Qd8Rows) and K contiguous weight
/// bytes w, less the VNNI offset's 128 * sum q(k): exact.
template <class Arch>
inline std::int32_t qd8_dot(std::size_t K, const std::int8_t* a, const std::int8_t* w) noexcept {
  std::int32_t acc = 0;
  std::size_t k = 0;
#if defined(MICROATTN_INTRIN_AVX512VNNI)
  if constexpr (Qd8Params<Arch>::kVnni) {
    using I = xsimd::batch<std::int32_t, Arch>;
    I s(0), cs(0);
    const I ones(0x01010101);
    for (; k + 64 <= K; k += 64) {
      const I av = I::load_unaligned(reinterpret_cast<const std::int32_t*>(a + k));
      const I wv = I::load_unaligned(reinterpret_cast<const std::int32_t*>(w + k));
      s = I(intrin::dpbusd_i32x16(s, av, wv));
      cs = I(intrin::dpbusd_i32x16(cs, ones, wv));
    }
#if XSIMD_VERSION_MAJOR >= 9
    acc = xsimd::reduce_add(s - cs * I(128));  // xsimd 9 renamed hadd
#else
    acc = xsimd::hadd(s - cs * I(128));
#endif
    for (; k < K; ++k) acc += std::int32_t{static_cast<std::int8_t>(a[k] ^ 0x80)} * w[k];
    return acc;
  }
#endif
#if defined(MICROATTN_INTRIN_DSP)
  for (; k + 4 <= K; k += 4) {
    std::uint32_t x, y;
    std::memcpy(&x, a + k, sizeof x);
    std::memcpy(&y, w + k, sizeof y);
    acc = intrin::smlad(intrin::sxtb16_13(x), intrin::sxtb16_13(y),
                        intrin::smlad(intrin::sxtb16_02(x), intrin::sxtb16_02(y), acc));
  }
#endif
  for (; k < K; ++k) acc += std::int32_t{a[k]} * w[k];
  return acc;
}

/// The sums of 16 consecutive output columns n0 .. n0 + 16 (nc of them valid) of a row-major
/// weight layout, column c of row k at w[k * ld + c] (kInOut: ld = ldw; a kPanel16 panel:
/// ld = 16), into s[0 .. nc): exact.
template <class Arch>
inline void qd8_dot16(std::size_t K, const std::int8_t* a, const std::int8_t* w, std::size_t ld,
                      std::size_t nc, std::int32_t* s) noexcept {
  std::size_t k = 0;
#if defined(MICROATTN_INTRIN_AVX512VNNI)
  if constexpr (Qd8Params<Arch>::kVnni) {
    if (nc == 16) {
      using I = xsimd::batch<std::int32_t, Arch>;
      I acc(0), cs(0);
      const I ones(0x01010101);
      for (; k + 4 <= K; k += 4) {
        std::int32_t x;
        std::memcpy(&x, a + k, sizeof x);
        const I t(intrin::load_k4_i8x64(w + k * ld, ld));
        acc = I(intrin::dpbusd_i32x16(acc, I(x), t));
        cs = I(intrin::dpbusd_i32x16(cs, ones, t));
      }
      (acc - cs * I(128)).store_unaligned(s);
      for (; k < K; ++k)
        for (std::size_t c = 0; c < 16; ++c)
          s[c] += std::int32_t{static_cast<std::int8_t>(a[k] ^ 0x80)} * w[k * ld + c];
      return;
    }
  }
#endif
  for (std::size_t c = 0; c < nc; ++c) s[c] = 0;
  constexpr std::int8_t kFlip = static_cast<std::int8_t>(Qd8Params<Arch>::kFlip);
  for (; k < K; ++k) {
    const std::int32_t x = static_cast<std::int8_t>(a[k] ^ kFlip);
    const std::int8_t* wk = w + k * ld;
    for (std::size_t c = 0; c < nc; ++c) s[c] += x * wk[c];
  }
}
}  // namespace detail

/// y[N] = x · B (+ bias) with integer compute for one quantised row (a: qd8_row_bytes(K) bytes
/// as Qd8Rows, scale sa), B as in qd8_f32_qc8w_gemm: y[n] = sa * (b_scale[n] * sum_k v(k)
/// q(k, n)) (+ bias[n]), exact int32 sums, no packing (each weight byte is read once). Part
/// `part` of `parts`: the columns split in runs of 16 (any split gives the same bits).
template <class Arch>
void qd8_f32_qc8w_gemv(std::size_t N, std::size_t K, const std::int8_t* a, float sa,
                       const std::int8_t* w, std::size_t ldw, WeightLayout layout,
                       const float* b_scale, const float* bias, float* y, std::size_t part = 0,
                       std::size_t parts = 1) noexcept {
  const internal::Range r = internal::split(N, kWeightPanel, part, parts);
  std::int32_t s[kWeightPanel];
  for (std::size_t n0 = r.begin; n0 < r.end; n0 += kWeightPanel) {
    const std::size_t nc = internal::min_size(kWeightPanel, r.end - n0);
    if (layout == WeightLayout::kOutIn) {
      for (std::size_t c = 0; c < nc; ++c) s[c] = detail::qd8_dot<Arch>(K, a, w + (n0 + c) * ldw);
    } else if (layout == WeightLayout::kInOut) {
      detail::qd8_dot16<Arch>(K, a, w + n0, ldw, nc, s);
    } else {
      detail::qd8_dot16<Arch>(K, a, w + (n0 / kWeightPanel) * ldw, kWeightPanel, nc, s);
    }
    for (std::size_t c = 0; c < nc; ++c)
      y[n0 + c] = sa * (b_scale[n0 + c] * static_cast<float>(s[c])) + (bias ? bias[n0 + c] : 0.0f);
  }
}

}  // namespace kernels
}  // namespace microattn

MICROATTN_GCC12_AVX512_WARNINGS_ON
