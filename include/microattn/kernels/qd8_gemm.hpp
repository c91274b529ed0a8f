// SPDX-License-Identifier: Apache-2.0
// microattn kernels: integer compute (Compute::kInt8). qd8_f32_qc8w_gemm / _gemv: activations
// quantised to int8 at run time with one scale per row (qd8), int8 weights with one scale per
// output column (qc8w), exact int32 sums of int8 products, and the two scales and the bias
// applied in a float epilogue (f32 output). The sums are formed 4 bytes at a time (kQd8Group):
// AVX-512 VNNI's vpdpbusd, x86's pmaddubsw, NEON's SDOT or SMULL, Helium's VMLADAV, two of ARM
// DSP's SMLAD, or plain C++ elsewhere.
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

/// The integer kernels' choices for Arch:
///   kVnni  the AVX-512 VNNI kernels (vpdpbusd takes unsigned bytes for A: a quantised row
///          holds its values xor kFlip = 0x80, i.e. q + 128, and the sums subtract 128 times
///          the weight column sums);
///   kHelium  the Helium kernels (MveArch): VMLADAV over 16 bytes of a row and a column, so the
///          packed panel holds each column's runs of 4 groups together (qd8_pack_panel);
///   kI8mm  the AArch64 FEAT_I8MM kernels: SMMLA over 8 bytes of two rows and two columns, so
///          the packed panel holds each column's pairs of groups together (runs of 2, kRun);
///   kDsp   the ARM DSP kernels (the scalar arch with the DSP extension): a group
///          of a quantised row, and of a packed weight column, is its 4 values already widened
///          to two int16 pairs (values 0, 2 and 1, 3: SMLAD's operands), 8 bytes, so the
///          micro-kernel loads them ready;
///   kMR x kNR  micro-tile; kKC  depth of one packed weight panel (the fp32 panel's bytes).
template <class Arch>
struct Qd8Params {
#if defined(MICROATTN_INTRIN_AVX512VNNI)
  static constexpr bool kVnni = internal::kIsAvx512<Arch>;
#else
  static constexpr bool kVnni = false;
#endif
#if MICROATTN_HAS_MVE
  static constexpr bool kHelium = std::is_same<Arch, MveArch>::value;
#else
  static constexpr bool kHelium = false;
#endif
#if defined(MICROATTN_INTRIN_NEON)
  /// NEON: SMMLA where the build has FEAT_I8MM (kI8mm), else SDOT where it has FEAT_DotProd
  /// (AArch64), SMULL/SADALP without (and armv7).
  static constexpr bool kNeon = std::is_base_of<xsimd::neon, Arch>::value;
#else
  static constexpr bool kNeon = false;
#endif
#if defined(MICROATTN_INTRIN_I8MM)
  static constexpr bool kI8mm = kNeon;
#else
  static constexpr bool kI8mm = false;
#endif
#if defined(MICROATTN_INTRIN_DSP)
  static constexpr bool kDsp = !kVnni && !kHelium && !kNeon;
#else
  static constexpr bool kDsp = false;
#endif
#if defined(MICROATTN_INTRIN_SSSE3)
  /// x86 without VNNI: pmaddubsw / pmaddwd (vpdpbusd with AVX-VNNI) on |b| and a with b's sign,
  /// no offset (intrin::X86I8): 32-byte vectors where the build has AVX2 (8-float archs, and
  /// AVX-512 without VNNI), 16-byte ones on the 4-float SSE archs.
#if defined(MICROATTN_INTRIN_AVX2)
  static constexpr bool kAvx2 = internal::kIsX86x8<Arch> || (internal::kIsAvx512<Arch> && !kVnni);
#else
  static constexpr bool kAvx2 = false;
#endif
  static constexpr bool kSsse3 = internal::kIsX86x4<Arch>;
  using X86I8 = intrin::X86I8<kAvx2 ? 32 : 16>;
#else
  static constexpr bool kAvx2 = false;
  static constexpr bool kSsse3 = false;
#endif
  /// Either x86 pmaddubsw family (kAvx2 or kSsse3).
  static constexpr bool kMaddubs = kAvx2 || kSsse3;
  /// No intrinsics kernel: the plain C++ loops (only then instantiated: unrolled, they cost
  /// GCC 12 most of a minute per file with AVX-512).
  static constexpr bool kPlainC = !kVnni && !kHelium && !kDsp && !kMaddubs && !kNeon;
  static constexpr unsigned char kFlip = kVnni ? 0x80 : 0;
#if defined(MICROATTN_INTRIN_NEON) && !defined(MICROATTN_INTRIN_SDOT) && \
    !defined(MICROATTN_INTRIN_I8MM)
  // SMULL/SADALP: two sums per column and row: 2 x 4 x 2 accumulators + 4 B + 2 A registers of
  // AArch64's 32; armv7's 16 q registers hold one row's (8 + 4 + 1).
  static constexpr std::size_t kMR =
      kNeon ? (std::is_base_of<xsimd::neon64, Arch>::value ? 2 : 1) : internal::Tiles<Arch>::kQd8MR;
#else
  static constexpr std::size_t kMR = internal::Tiles<Arch>::kQd8MR;
#endif
  static constexpr std::size_t kNR = internal::Tiles<Arch>::kNR;
  /// Bytes of one group of a quantised row or of a packed column.
  static constexpr std::size_t kGroupBytes = kDsp ? 2 * kQd8Group : kQd8Group;
  static constexpr std::size_t kKC =
      kQd8Group * internal::Tiles<Arch>::kKC * kQd8Group / kGroupBytes;
  /// Groups a packed column holds together (qd8_pack_at).
  static constexpr std::size_t kRun = kHelium ? 4 : (kI8mm ? 2 : 1);
  static_assert(kKC / kQd8Group % kRun == 0, "whole runs in a full panel (I8MM pads the last)");
  static_assert(kNR % (kVnni || kAvx2 ? 16 : (kDsp ? 2 : (kNeon || kSsse3 ? 4 : 1))) == 0,
                "VNNI and AVX2 panels are whole 16-column vectors or pairs of 8, NEON and SSE "
                "ones 4-column vectors, DSP ones column pairs");
};

/// Bytes a quantised row of K values takes on Arch (see Qd8Rows): whole groups (zero values
/// past K), 4 bytes each, or 8 where kDsp widens them.
template <class Arch>
constexpr std::size_t qd8_row_bytes(std::size_t K) noexcept {
  return (K + kQd8Group - 1) / kQd8Group * Qd8Params<Arch>::kGroupBytes;
}

/// Floats of the packing buffer qd8_f32_qc8w_gemm needs for Arch (its int8 panel).
template <class Arch>
constexpr std::size_t qd8_pack_floats() noexcept {
  using P = Qd8Params<Arch>;
  return P::kKC / kQd8Group * P::kGroupBytes * P::kNR / sizeof(float);
}

/// Rows of quantised activations: row i stands for scale[i] * v(i, k), k < K, v the int8
/// values at q + i * ld (ld >= qd8_row_bytes<Arch>(K); qd8_value reads one): bytes whose bits
/// xor Qd8Params::kFlip are v, or with kDsp per group of 4 two words of int16 pairs (v0, v2),
/// (v1, v3); zero values past K up to whole groups.
struct Qd8Rows {
  const std::int8_t* q;
  std::size_t ld;
  const float* scale;
  Qd8Rows from(std::size_t i) const noexcept { return {q + i * ld, ld, scale + i}; }
};

/// The value v(k) of a quantised row (Qd8Rows) on Arch.
template <class Arch>
inline int qd8_value(const std::int8_t* row, std::size_t k) noexcept {
  using P = Qd8Params<Arch>;
  if constexpr (P::kDsp) {
    std::int16_t h;  // word (k & 1) of group k / 4, half k / 2 % 2 (little-endian)
    std::memcpy(&h, row + k / kQd8Group * P::kGroupBytes + 4 * (k & 1) + 2 * ((k >> 1) & 1),
                sizeof h);
    return h;
  } else {
    return static_cast<std::int8_t>(static_cast<unsigned char>(row[k]) ^ P::kFlip);
  }
}

namespace detail {
/// max |x[k]| over K floats, or NaN when one of them is not finite.
template <class Arch>
inline float qd8_absmax(std::size_t K, const float* x) noexcept {
#if defined(MICROATTN_INTRIN_AVX512) && defined(__AVX512BW__)
  if constexpr (internal::kIsAvx512<Arch>) return intrin::absmax_f32(x, K);
#endif
#if defined(MICROATTN_INTRIN_AVX2)
  if constexpr (Qd8Params<Arch>::kAvx2) return intrin::absmax_f32x8(x, K);
#endif
#if MICROATTN_HAS_MVE
  if constexpr (Qd8Params<Arch>::kHelium) return intrin::absmax_f32_mve(x, K);
#endif
  // |x| compared as bits, as the vector helpers do: the same maximum whatever the FPU does
  // with subnormals (flush-to-zero vector units) and whatever the compiler vectorises.
  std::uint32_t m = 0;
  for (std::size_t k = 0; k < K; ++k) {
    std::uint32_t u;
    std::memcpy(&u, x + k, sizeof u);
    u &= 0x7fffffffu;
    m = u > m ? u : m;
  }
  return intrin::abs_bits_to_f32(m);
}

/// q[k] = (internal::round_to_int8(x[k] * inv)) xor kFlip for K floats.
template <class Arch>
inline void qd8_quantize_values(std::size_t K, const float* x, float inv, std::int8_t* q) noexcept {
  constexpr unsigned char kFlip = Qd8Params<Arch>::kFlip;
#if defined(MICROATTN_INTRIN_AVX512) && defined(__AVX512BW__)
  if constexpr (internal::kIsAvx512<Arch>) return intrin::quantize_f32_i8(x, K, inv, q, kFlip);
#endif
#if defined(MICROATTN_INTRIN_AVX2)
  if constexpr (Qd8Params<Arch>::kAvx2) return intrin::quantize_f32x8_i8(x, K, inv, q, kFlip);
#endif
#if MICROATTN_HAS_MVE
  if constexpr (Qd8Params<Arch>::kHelium) return intrin::quantize_f32_i8_mve(x, K, inv, q, kFlip);
#endif
  for (std::size_t k = 0; k < K; ++k)
    q[k] = static_cast<std::int8_t>(
        static_cast<unsigned char>(internal::round_to_int8(x[k] * inv)) ^ kFlip);
}

/// The epilogue of every integer product, one output: p = sa * (sb * float(s)), then y = p +
/// bias (with a bias; without one y = p): these roundings in this order and nothing fused, on
/// every arch (docs/quantization.md, "The same bits on every target"). An FMA exists on some
/// targets only (SSE2, Cortex-M0/M3, armv7 without VFPv4 have none) and GCC contracts a * b + c
/// into one wherever it exists, in ISO C++ too, in some inlined copies and not others: so each
/// product goes through an empty asm statement (no instruction) that the compiler can neither
/// fuse into the sum nor, under -ffast-math, reassociate with the other product.
MICROATTN_ALWAYS_INLINE inline float qd8_scale(float sa, float sb, std::int32_t s) noexcept {
  using V = internal::Vec<ScalarArch>;
  return sa * V::opaque(sb * static_cast<float>(s));
}
MICROATTN_ALWAYS_INLINE inline float qd8_dequant(float sa, float sb, std::int32_t s,
                                                 float bias) noexcept {
  return internal::Vec<ScalarArch>::opaque(qd8_scale(sa, sb, s)) + bias;
}

/// Whether Arch's float epilogue runs on xsimd batches (every xsimd arch; not ScalarArch, not
/// MveArch, which has its own helper).
template <class Arch>
constexpr bool qd8_xsimd_epilogue() noexcept {
#if MICROATTN_HAS_XSIMD
  return !std::is_same<Arch, ScalarArch>::value;
#else
  return false;
#endif
}

#if MICROATTN_HAS_XSIMD
/// qd8_scale and qd8_dequant on a vector of outputs (the same operations, lane by lane).
template <class Arch>
MICROATTN_ALWAYS_INLINE inline xsimd::batch<float, Arch> qd8_scale(
    float sa, const xsimd::batch<float, Arch>& sb,
    const xsimd::batch<std::int32_t, Arch>& s) noexcept {
  using F = xsimd::batch<float, Arch>;
  return F(sa) * internal::Vec<Arch>::opaque(sb * xsimd::to_float(s));
}
template <class Arch>
MICROATTN_ALWAYS_INLINE inline xsimd::batch<float, Arch> qd8_dequant(
    float sa, const xsimd::batch<float, Arch>& sb, const xsimd::batch<std::int32_t, Arch>& s,
    const xsimd::batch<float, Arch>& bias) noexcept {
  return internal::Vec<Arch>::opaque(qd8_scale<Arch>(sa, sb, s)) + bias;
}
#endif

/// y[j] = qd8_dequant(sa, sb[j], s[j], bias[j]) for j < n (kBias), or qd8_scale(sa, sb[j],
/// s[j]) (bias not read: may be null), by vectors where Arch has them.
template <class Arch, bool kBias>
MICROATTN_ALWAYS_INLINE inline void qd8_dequant_n(std::size_t n, float sa, const float* sb,
                                                  const std::int32_t* s, const float* bias,
                                                  float* y) noexcept {
  std::size_t j = 0;
#if MICROATTN_HAS_XSIMD
  if constexpr (qd8_xsimd_epilogue<Arch>()) {
    using F = xsimd::batch<float, Arch>;
    using I = xsimd::batch<std::int32_t, Arch>;
    constexpr std::size_t W = F::size;
    for (; j + W <= n; j += W) {
      const F sbv = F::load_unaligned(sb + j);
      const I sv = I::load_unaligned(s + j);
      if constexpr (kBias)
        qd8_dequant<Arch>(sa, sbv, sv, F::load_unaligned(bias + j)).store_unaligned(y + j);
      else
        qd8_scale<Arch>(sa, sbv, sv).store_unaligned(y + j);
    }
  }
#endif
#if MICROATTN_HAS_MVE
  if constexpr (std::is_same<Arch, MveArch>::value)
    for (; j + 4 <= n; j += 4)
      intrin::dequant4_mve<kBias>(sa, sb + j, vld1q_s32(s + j), kBias ? bias + j : nullptr, y + j);
#endif
  for (; j < n; ++j)
    y[j] = kBias ? qd8_dequant(sa, sb[j], s[j], bias[j]) : qd8_scale(sa, sb[j], s[j]);
}
/// qd8_dequant_n with bias null meaning none (two loops, not bias ? bias[j] : 0: no compiler
/// turns the choice into masked loads from a null pointer; see Qd8Epilogue).
template <class Arch>
MICROATTN_ALWAYS_INLINE inline void qd8_dequant_row(std::size_t n, float sa, const float* sb,
                                                    const std::int32_t* s, const float* bias,
                                                    float* y) noexcept {
  if (bias)
    qd8_dequant_n<Arch, true>(n, sa, sb, s, bias, y);
  else
    qd8_dequant_n<Arch, false>(n, sa, sb, s, nullptr, y);
}

/// kDsp rows: the first `groups` groups of 4 bytes at q widened in place to 8 bytes each
/// (Qd8Rows), last group first so that none is overwritten before it is read.
template <class Arch>
inline void qd8_widen_groups(std::int8_t* q, std::size_t groups) noexcept {
#if defined(MICROATTN_INTRIN_DSP)
  for (std::size_t g = groups; g-- > 0;) {
    std::uint32_t w;
    std::memcpy(&w, q + g * kQd8Group, sizeof w);
    const std::uint32_t pairs[2] = {intrin::sxtb16_02(w), intrin::sxtb16_13(w)};
    std::memcpy(q + g * 2 * kQd8Group, pairs, sizeof pairs);
  }
#else
  (void)q;
  (void)groups;
#endif
}
}  // namespace detail

/// Quantises x[0 .. K) into q[0 .. qd8_row_bytes<Arch>(K)) (see Qd8Rows) and returns its scale:
/// s = max |x| / 127 and v = x * (127 / max |x|) rounded to nearest (ties to even), so
/// |x - s v| <= s / 2 (plus a few ulps of the two divisions). All-zero x: s = 0, v = 0; an x
/// that is not finite: s = NaN (what it multiplies becomes NaN, as in fp32), v = 0.
template <class Arch>
inline float qd8_quantize_row(std::size_t K, const float* x, std::int8_t* q) noexcept {
  constexpr unsigned char kFlip = Qd8Params<Arch>::kFlip;
  const std::size_t kp4 = (K + kQd8Group - 1) / kQd8Group * kQd8Group;  // bytes before widening
  const float amax = detail::qd8_absmax<Arch>(K, x);
  if (!(amax > 0.0f)) {  // all zero, or not finite (NaN)
    for (std::size_t k = 0; k < qd8_row_bytes<Arch>(K); ++k) q[k] = static_cast<std::int8_t>(kFlip);
    return amax == 0.0f ? 0.0f : __builtin_nanf("");
  }
  const float s = amax / internal::opaque_divisor(127.0f);
  const float inv = 127.0f / internal::opaque_divisor(amax);
  if (!internal::finite_bits(inv)) {  // max |x| tiny: divide each value by s instead
    for (std::size_t k = 0; k < K; ++k)
      q[k] = static_cast<std::int8_t>(static_cast<unsigned char>(quantize_value(x[k], s)) ^ kFlip);
  } else {
    detail::qd8_quantize_values<Arch>(K, x, inv, q);
  }
  for (std::size_t k = K; k < kp4; ++k) q[k] = static_cast<std::int8_t>(kFlip);
  if constexpr (Qd8Params<Arch>::kDsp) detail::qd8_widen_groups<Arch>(q, kp4 / kQd8Group);
  return s;
}

/// qd8_quantize_row of each of M rows of x (row stride ldx) into q (row stride ldq >=
/// qd8_row_bytes<Arch>(K)), the scales into scale[0 .. M).
template <class Arch>
inline void qd8_quantize_rows(std::size_t M, std::size_t K, const float* x, std::size_t ldx,
                              std::int8_t* q, std::size_t ldq, float* scale) noexcept {
  for (std::size_t i = 0; i < M; ++i)
    scale[i] = qd8_quantize_row<Arch>(K, x + i * ldx, q + i * ldq);
}

namespace detail {
#if defined(MICROATTN_INTRIN_AVX512VNNI)
/// qd8_pack_panel's VNNI part for a whole panel (nr == kNR): the first whole groups by byte
/// transposes, of 4 rows of 16 columns (the row-major layouts) or of 16 columns of 64 bytes
/// ([out][in]), with the column sums; returns how many groups it packed.
template <class Arch>
inline std::size_t qd8_pack_panel_vnni(const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                                       std::size_t pc, std::size_t kc, std::size_t jc,
                                       std::int8_t* pack, std::int32_t* colsum) noexcept {
  using I = xsimd::batch<std::int32_t, Arch>;
  constexpr std::size_t NR = Qd8Params<Arch>::kNR, NV = NR / 16, G = kQd8Group;
  const I ones(0x01010101);
  I cs[NV];
  for (std::size_t v = 0; v < NV; ++v) cs[v] = I(0);
  auto put = [&](std::size_t g, std::size_t v, const I& t) {
    t.store_unaligned(reinterpret_cast<std::int32_t*>(pack + (g * NR + v * 16) * G));
    cs[v] = I(intrin::dpbusd_i32x16(cs[v], ones, t));
  };
  const bool out_in = layout == WeightLayout::kOutIn;
  const std::size_t g0 = out_in ? kc / 64 * 16 : kc / G;
  for (std::size_t g = 0; g < g0; g += out_in ? 16 : 1) {
    for (std::size_t v = 0; v < NV; ++v) {
      const std::size_t n = jc + v * 16, k = pc + g * G;
      if (out_in) {
        typename I::register_type r[16];
        intrin::cols16_to_k4_i8x64(b + n * ldb + k, ldb, r);
        for (std::size_t h = 0; h < 16; ++h) put(g + h, v, I(r[h]));
      } else if (layout == WeightLayout::kInOut) {
        put(g, v, I(intrin::load_k4_i8x64(b + k * ldb + n, ldb)));
      } else {
        put(g, v,
            I(intrin::load_k4_i8x64(b + (n / kWeightPanel) * ldb + k * kWeightPanel,
                                    kWeightPanel)));
      }
    }
  }
  for (std::size_t v = 0; v < NV; ++v) cs[v].store_unaligned(colsum + v * 16);
  return g0;
}
#endif

#if defined(MICROATTN_INTRIN_AVX2)
/// qd8_pack_panel's AVX2 part for a whole panel (nr == kNR): the first kc / 4 groups, by byte
/// interleaves of 4 rows of 16 columns (the row-major layouts) or a word per column and group
/// ([out][in]); returns how many groups it packed. (No column sums: AVX2 has no offset.)
template <class Arch>
inline std::size_t qd8_pack_panel_avx2(const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                                       std::size_t pc, std::size_t kc, std::size_t jc,
                                       std::int8_t* pack) noexcept {
  constexpr std::size_t NR = Qd8Params<Arch>::kNR, G = kQd8Group;
  const std::size_t groups = kc / G;
  for (std::size_t g = 0; g < groups; ++g) {
    std::int8_t* d = pack + g * NR * G;
    const std::size_t k = pc + g * G;
    for (std::size_t n = jc; n < jc + NR; n += 16, d += 16 * G) {
      if (layout == WeightLayout::kOutIn) {
        for (std::size_t c = 0; c < 16; ++c) std::memcpy(d + c * G, b + (n + c) * ldb + k, G);
        continue;
      }
      __m128i t[4];
      if (layout == WeightLayout::kInOut)
        intrin::rows4_to_k4_i8x16(b + k * ldb + n, ldb, t);
      else
        intrin::rows4_to_k4_i8x16(b + (n / kWeightPanel) * ldb + k * kWeightPanel, kWeightPanel, t);
      std::memcpy(d, t, sizeof t);
    }
  }
  return groups;
}
#endif

#if MICROATTN_HAS_MVE
/// qd8_pack_panel's Helium part for a whole panel (nr == kNR) of [out][in] or kPanel16 weights:
/// each column's whole runs of 16 inputs by one load (a gather for kPanel16); returns how many
/// groups it packed (0 for [in][out]).
template <class Arch>
inline std::size_t qd8_pack_panel_mve(const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                                      std::size_t pc, std::size_t kc, std::size_t jc,
                                      std::int8_t* pack) noexcept {
  constexpr std::size_t NR = Qd8Params<Arch>::kNR;
  if (layout == WeightLayout::kInOut) return 0;
  const std::size_t runs = kc / 16;
  for (std::size_t r = 0; r < runs; ++r)
    for (std::size_t j = 0; j < NR; ++j) {
      const std::size_t n = jc + j, k = pc + 16 * r;
      const int8x16_t v = layout == WeightLayout::kOutIn
                              ? vldrbq_s8(b + n * ldb + k)
                              : intrin::panel16_column_i8_mve(b + (n / kWeightPanel) * ldb +
                                                              k * kWeightPanel + n % kWeightPanel);
      vstrbq_s8(pack + (r * NR + j) * 16, v);
    }
  return 4 * runs;
}
#endif

#if defined(MICROATTN_INTRIN_DSP)
/// qd8_pack_panel's whole groups of a full DSP panel: each group of 4 rows of 4 columns loaded
/// as 4 words, sign-extended (columns 0, 2 and 1, 3 of a row) and paired across rows 0, 2 and
/// 1, 3 into each column's two SMLAD words; [out][in] columns a word per group. Returns the
/// groups packed (the rest, a partial group, is the generic loop's).
template <class Arch>
inline std::size_t qd8_pack_panel_dsp(const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                                      std::size_t pc, std::size_t kc, std::size_t jc,
                                      std::int8_t* pack) noexcept {
  using P = Qd8Params<Arch>;
  constexpr std::size_t NR = P::kNR, GB = P::kGroupBytes;
  static_assert(NR % 4 == 0 && kWeightPanel % NR == 0, "whole column quads, in one panel");
  const std::size_t groups = kc / kQd8Group;
  auto store = [](std::int8_t* d, std::uint32_t lo, std::uint32_t hi) {
    std::memcpy(d, &lo, sizeof lo);
    std::memcpy(d + 4, &hi, sizeof hi);
  };
  if (layout == WeightLayout::kOutIn) {
    for (std::size_t j = 0; j < NR; ++j) {
      const std::int8_t* src = b + (jc + j) * ldb + pc;
      for (std::size_t g = 0; g < groups; ++g) {
        std::uint32_t w;
        std::memcpy(&w, src + 4 * g, sizeof w);
        store(pack + (g * NR + j) * GB, intrin::sxtb16_02(w), intrin::sxtb16_13(w));
      }
    }
    return groups;
  }
  // Row k's columns jc .. jc + NR at src + k * sk (a kPanel16 panel holds all NR of them).
  const bool inout = layout == WeightLayout::kInOut;
  const std::size_t sk = inout ? ldb : kWeightPanel;
  const std::int8_t* src =
      inout ? b + pc * ldb + jc
            : b + (jc / kWeightPanel) * ldb + pc * kWeightPanel + jc % kWeightPanel;
  for (std::size_t g = 0; g < groups; ++g, src += 4 * sk) {
    for (std::size_t q = 0; q < NR; q += 4) {
      std::uint32_t y[4], e[4], o[4];
      for (std::size_t r = 0; r < 4; ++r) {
        std::memcpy(&y[r], src + r * sk + q, sizeof y[r]);
        e[r] = intrin::sxtb16_02(y[r]);  // (column 0, column 2) of row r
        o[r] = intrin::sxtb16_13(y[r]);  // (column 1, column 3)
      }
      std::int8_t* d = pack + (g * NR + q) * GB;
      // Column c's words: (row 0, row 2) and (row 1, row 3) of it.
      store(d, intrin::pack_lo(e[0], e[2]), intrin::pack_lo(e[1], e[3]));
      store(d + GB, intrin::pack_lo(o[0], o[2]), intrin::pack_lo(o[1], o[3]));
      store(d + 2 * GB, intrin::pack_hi(e[0], e[2]), intrin::pack_hi(e[1], e[3]));
      store(d + 3 * GB, intrin::pack_hi(o[0], o[2]), intrin::pack_hi(o[1], o[3]));
    }
  }
  return groups;
}
#endif

/// Byte offset of column j's group g in a packed panel of `groups` groups: (g kNR + j) groups
/// in, or runs of kRun groups per column: kHelium's of 4 (16 bytes; the last run, of w < 4
/// groups, 4 w bytes per column), kI8mm's of 2 (8 bytes, SMMLA's operand; an odd last group is
/// completed by a zero group, qd8_pack_panel).
template <class Arch>
constexpr std::size_t qd8_pack_at(std::size_t g, std::size_t j, std::size_t groups) noexcept {
  using P = Qd8Params<Arch>;
  if constexpr (P::kRun > 1) {
    constexpr std::size_t R = P::kRun;
    const std::size_t s = g / R, w = P::kI8mm ? R : internal::min_size(R, groups - R * s);
    return (R * s * P::kNR + j * w + g % R) * kQd8Group;
  } else {
    return (g * P::kNR + j) * P::kGroupBytes;
  }
}

/// Packs B's kc x nr panel (depth pc, columns jc) as the micro-kernels read it: group g of
/// column j (B(pc + 4 g + r, jc + j), r < 4) at pack + qd8_pack_at(g, j, groups), zero past kc
/// and nr (kDsp: each group widened, see Qd8Params; kI8mm: a zero group after an odd last
/// one); colsum[j] = the sum of column j over the panel, for the VNNI kernels' offset
/// correction (zero elsewhere).
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
    if (nr == NR) g0 = qd8_pack_panel_vnni<Arch>(b, ldb, layout, pc, kc, jc, pack, colsum);
  }
#endif
#if defined(MICROATTN_INTRIN_AVX2)
  if constexpr (P::kAvx2) {
    if (nr == NR) g0 = qd8_pack_panel_avx2<Arch>(b, ldb, layout, pc, kc, jc, pack);
  }
#endif
#if MICROATTN_HAS_MVE
  if constexpr (P::kHelium) {
    if (nr == NR) g0 = qd8_pack_panel_mve<Arch>(b, ldb, layout, pc, kc, jc, pack);
  }
#endif
#if defined(MICROATTN_INTRIN_DSP)
  if constexpr (P::kDsp) {
    if (nr == NR) g0 = qd8_pack_panel_dsp<Arch>(b, ldb, layout, pc, kc, jc, pack);
  }
#endif
  if (!P::kVnni || g0 == 0)  // (the VNNI packing wrote them)
    for (std::size_t j = 0; j < NR; ++j) colsum[j] = 0;
  // Column n's values B(pc + k, n) at src + k * sk for the layout.
  const std::size_t sk = layout == WeightLayout::kInOut   ? ldb
                         : layout == WeightLayout::kOutIn ? 1
                                                          : kWeightPanel;
  for (std::size_t g = g0; g < groups; ++g) {
    const std::size_t k0 = g * G, nk = internal::min_size(G, kc - k0);
    for (std::size_t j = 0; j < NR; ++j) {
      std::uint32_t w = 0;  // the group's 4 bytes, k = k0 .. k0 + 3 (zero past kc and nr)
      if (j < nr) {
        const std::size_t n = jc + j, kk = pc + k0;
        const std::int8_t* src =
            layout == WeightLayout::kInOut ? b + kk * ldb + n
            : layout == WeightLayout::kOutIn
                ? b + n * ldb + kk
                : b + (n / kWeightPanel) * ldb + kk * kWeightPanel + n % kWeightPanel;
        for (std::size_t r = 0; r < nk; ++r) {
          w |= std::uint32_t{static_cast<unsigned char>(src[r * sk])} << (8 * r);
          if constexpr (P::kFlip != 0) colsum[j] += src[r * sk];  // only VNNI corrects by it
        }
      }
      std::int8_t* d = pack + qd8_pack_at<Arch>(g, j, groups);
#if defined(MICROATTN_INTRIN_DSP)
      if constexpr (P::kDsp) {
        const std::uint32_t pairs[2] = {intrin::sxtb16_02(w), intrin::sxtb16_13(w)};
        std::memcpy(d, pairs, sizeof pairs);
        continue;
      }
#endif
      std::memcpy(d, &w, sizeof w);  // little-endian: byte r is k = k0 + r
    }
  }
  if constexpr (P::kI8mm) {  // the last run's second group (the pack buffer has room: kRun)
    if (groups % 2 != 0)
      for (std::size_t j = 0; j < NR; ++j)
        std::memset(pack + qd8_pack_at<Arch>(groups, j, groups), 0, G);
  }
}

#if defined(MICROATTN_INTRIN_DSP)
/// The DSP loop over one column pair (packed 8-byte groups, a group of both columns every
/// `step` bytes): acc(i, j) = the MR x 2 int32 sums, loaded ready as int16 pairs. In a frame of
/// its own: inlined into the column loop, GCC 12 keeps that loop's values in registers and
/// spills the sums on the Cortex-M4 (2 x 2 sums, 2 row and 2 column operands and 4 pointers
/// fill the 13 core registers here).
template <std::size_t MR, std::size_t GB, std::size_t Step>
[[gnu::noinline]] inline void qd8_pair_sums_dsp(std::size_t groups,
                                                const std::int8_t* const (&arow)[MR],
                                                const std::int8_t* pg,
                                                std::int32_t (&out)[MR][2]) noexcept {
  std::int32_t acc[MR][2];
  const std::int8_t* a[MR];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = 0, a[i] = arow[i];
  // One group: its pairs of values 0, 2, then of 1, 3 (MR + 2 operands live at a time).
  auto group = [&](std::size_t ga, const std::int8_t* gb) {
#pragma GCC unroll 2
    for (std::size_t h = 0; h < 8; h += 4) {
      std::uint32_t av[MR], bv[2];
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i) std::memcpy(&av[i], a[i] + ga + h, 4);
      std::memcpy(&bv[0], gb + h, 4);
      std::memcpy(&bv[1], gb + GB + h, 4);
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i) {
        acc[i][0] = intrin::smlad(av[i], bv[0], acc[i][0]);
        acc[i][1] = intrin::smlad(av[i], bv[1], acc[i][1]);
      }
    }
  };
  // Two groups per step: the loop's own instructions and its taken branch (1 + 2 cycles on
  // the Cortex-M4) over 32 MACs, not 16.
  std::size_t g = 0;
  for (; g + 2 <= groups; g += 2, pg += 2 * Step) {
    group(g * GB, pg);
    group((g + 1) * GB, pg + Step);
  }
  if (g < groups) group(g * GB, pg);
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i) out[i][0] = acc[i][0], out[i][1] = acc[i][1];
}

/// qd8_ukernel's DSP loop: two columns at a time (qd8_pair_sums_dsp), MR x 2 sums each.
template <class Arch, std::size_t MR, class Out>
MICROATTN_ALWAYS_INLINE inline void qd8_sums_dsp(std::size_t groups,
                                                 const std::int8_t* const (&arow)[MR],
                                                 const std::int8_t* pack, Out& out) noexcept {
  using P = Qd8Params<Arch>;
  constexpr std::size_t NR = P::kNR, GB = P::kGroupBytes;
  for (std::size_t j0 = 0; j0 < NR; j0 += 2) {
    std::int32_t acc[MR][2];
    qd8_pair_sums_dsp<MR, GB, NR * GB>(groups, arow, pack + j0 * GB, acc);
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i) out.sums(i, j0, acc[i], 2);
  }
}
#endif

/// qd8_ukernel's plain C++ loop: MR x kNR int32 sums of 4-byte products.
template <class Arch, std::size_t MR, class Out>
MICROATTN_ALWAYS_INLINE inline void qd8_sums_c(std::size_t groups,
                                               const std::int8_t* const (&arow)[MR],
                                               const std::int8_t* pack, Out& out) noexcept {
  constexpr std::size_t NR = Qd8Params<Arch>::kNR, G = kQd8Group;
  std::int32_t acc[MR][NR];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t j = 0; j < NR; ++j) acc[i][j] = 0;
  for (std::size_t g = 0; g < groups; ++g, pack += NR * G) {
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i) {
      const std::int8_t* ai = arow[i] + g * G;
      for (std::size_t j = 0; j < NR; ++j) {
        const std::int8_t* bj = pack + j * G;
        acc[i][j] += std::int32_t{ai[0]} * bj[0] + std::int32_t{ai[1]} * bj[1] +
                     std::int32_t{ai[2]} * bj[2] + std::int32_t{ai[3]} * bj[3];
      }
    }
  }
  out.template rows<MR>(acc);
}

/// The sums of an MR x kNR micro-tile from an intrinsics tile function (tile(sums) writes
/// them into an array aligned to kAlign bytes), handed to out.rows.
template <class Arch, std::size_t MR, std::size_t kAlign, class Out, class Tile>
MICROATTN_ALWAYS_INLINE inline void qd8_sums_of_tile(Out& out, Tile&& tile) noexcept {
  alignas(kAlign) std::int32_t sums[MR][Qd8Params<Arch>::kNR];
  tile(sums);
  out.template rows<MR>(sums);
}

/// The int32 sums of an mr x NR micro-tile (mr <= kMR): acc(i, j) = sum over `groups` groups
/// of a's row i (row stride lda, bytes as Qd8Rows) times the packed panel's column j, handed to
/// out.rows<MR>(s) (s[i][j]), or (the DSP's column pairs) out.sums(i, j0, s, n) for columns
/// j0 .. j0 + n of row i.
template <class Arch, std::size_t MR, class Out>
MICROATTN_ALWAYS_INLINE inline void qd8_ukernel(std::size_t groups, const std::int8_t* a,
                                                std::size_t lda, const std::int8_t* pack,
                                                Out& out) noexcept {
  using P = Qd8Params<Arch>;
  [[maybe_unused]] constexpr std::size_t NR = P::kNR;  // (not every arch's branch needs it)
  // The loops over rows and columns are unrolled at every -O level: rolled, the sums live in
  // memory (as the fp32 micro-kernel's, f32_gemm.hpp).
  const std::int8_t* arow[MR];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i) arow[i] = a + i * lda;
#if defined(MICROATTN_INTRIN_AVX512VNNI)
  if constexpr (P::kVnni) {
    return qd8_sums_of_tile<Arch, MR, 64>(
        out, [&](auto& sums) { intrin::qd8_tile_vnni<MR, NR / 16>(groups, arow, pack, sums); });
  }
#endif
#if defined(MICROATTN_INTRIN_SSSE3)
  if constexpr (P::kMaddubs) {
    using X = typename P::X86I8;
    constexpr std::size_t W = sizeof(typename X::V);
    return qd8_sums_of_tile<Arch, MR, W>(out, [&](auto& sums) {
      intrin::qd8_tile_x86<X, MR, NR * 4 / W>(groups, arow, pack, sums);
    });
  }
#endif
#if MICROATTN_HAS_MVE
  if constexpr (P::kHelium) {
    return qd8_sums_of_tile<Arch, MR, alignof(std::int32_t)>(
        out, [&](auto& sums) { intrin::qd8_tile_mve<MR, NR>(groups, arow, pack, sums); });
  }
#endif
#if defined(MICROATTN_INTRIN_I8MM)
  if constexpr (P::kI8mm) {
    return qd8_sums_of_tile<Arch, MR, 16>(
        out, [&](auto& sums) { intrin::qd8_tile_i8mm<MR, NR / 2>(groups, arow, pack, sums); });
  }
#endif
#if defined(MICROATTN_INTRIN_NEON)
  if constexpr (P::kNeon) {
    return qd8_sums_of_tile<Arch, MR, 16>(
        out, [&](auto& sums) { intrin::qd8_tile_neon<MR, NR / 4>(groups, arow, pack, sums); });
  }
#endif
#if defined(MICROATTN_INTRIN_DSP)
  if constexpr (P::kDsp) return qd8_sums_dsp<Arch, MR>(groups, arow, pack, out);
#endif
  if constexpr (P::kPlainC) qd8_sums_c<Arch, MR>(groups, arow, pack, out);
}

/// qd8_ukernel for any mr in 1 .. kMR rows.
template <class Arch, std::size_t MR, class Out>
struct Qd8UkernelRows {
  static void call(std::size_t mr, std::size_t groups, const std::int8_t* a, std::size_t lda,
                   const std::int8_t* pack, Out& out) noexcept {
    if (mr == MR) return qd8_ukernel<Arch, MR>(groups, a, lda, pack, out);
    Qd8UkernelRows<Arch, MR - 1, Out>::call(mr, groups, a, lda, pack, out);
  }
};
template <class Arch, class Out>
struct Qd8UkernelRows<Arch, 0, Out> {
  static void call(std::size_t, std::size_t, const std::int8_t*, std::size_t, const std::int8_t*,
                   Out&) noexcept {}
};

/// A depth block's place in a product (qd8_blocks): not the first (the sums so far are kept),
/// not the last (its sums are kept for the next).
constexpr unsigned char kQd8NotFirst = 1;
constexpr unsigned char kQd8NotLast = 2;

/// The blocking of the integer GEMM: panels of kNR columns, depth blocks of kKC bytes, each
/// panel packed once (it is reused by all M rows: the driver hands over at most a row block of
/// the fp32 GEMM's kMC rows), then the kMR-row micro-tiles; tile(ir, mr, jc, nr, block,
/// colsum, sums) runs a micro-tile's sums of one depth block through its epilogue, sums(out)
/// computing them into out; block: kQd8NotFirst | kQd8NotLast as the block is (0 for
/// K <= kKC).
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
      const unsigned char block = static_cast<unsigned char>((pc == 0 ? 0 : kQd8NotFirst) |
                                                             (pc + kc == K ? 0 : kQd8NotLast));
      for (std::size_t ir = 0; ir < M; ir += MR) {
        const std::size_t mr = internal::min_size(MR, M - ir);
        const std::int8_t* ablk = qa + ir * lda + pc / kQd8Group * P::kGroupBytes;
        tile(ir, mr, jc, nr, block, colsum, [&](auto& out) {
          Qd8UkernelRows<Arch, MR, std::remove_reference_t<decltype(out)>>::call(mr, groups, ablk,
                                                                                 lda, pack, out);
        });
      }
    }
  }
}

/// Qd8Epilogue for `rows` rows, columns [j0, j1), of a product deeper than one depth block
/// (mode: kQd8NotFirst, kQd8NotLast, 4 for a bias; s, acc, t: row stride ld): v = s(i, j) -
/// kOff colsum[j] (+ acc(i, j)) into acc(i, j), or in the last block through the float
/// epilogue into t(i, j). By vectors on the xsimd archs (inlined there: out of line it cost
/// AVX-512's two-block GEMM 1.5 %), out of line on the others (one call per micro-tile; a
/// block of kKC bytes amortises it, and a microcontroller's flash keeps one copy).
template <class Arch, std::int32_t kOff>
MICROATTN_ALWAYS_INLINE inline void qd8_deep_rows_inline(
    std::size_t rows, std::size_t ld, unsigned mode, const std::int32_t* s,
    const std::int32_t* colsum, std::int32_t* acc, const float* sa, const float* sb,
    const float* bias, float* t, std::size_t j0, std::size_t j1) noexcept {
  // kOut: 0 the sums into acc, 1 the epilogue without a bias, 2 with one (each loop branch-free).
  auto run = [&](auto add, auto out) {
    constexpr bool kAdd = decltype(add)::value;
    constexpr int kOut = decltype(out)::value;
    const std::int32_t* si = s;
    std::int32_t* ai = acc;
    float* ti = t;
    for (std::size_t i = 0; i < rows; ++i, si += ld, ai += ld, ti += ld) {
      std::size_t j = j0;
#if MICROATTN_HAS_XSIMD
      if constexpr (qd8_xsimd_epilogue<Arch>()) {
        using F = xsimd::batch<float, Arch>;
        using I = xsimd::batch<std::int32_t, Arch>;
        for (; j + I::size <= j1; j += I::size) {
          I v = I::load_unaligned(si + j);
          if constexpr (kOff != 0) v = v - I::load_unaligned(colsum + j) * I(kOff);
          if constexpr (kAdd) v = v + I::load_unaligned(ai + j);
          if constexpr (kOut == 0)
            v.store_unaligned(ai + j);
          else if constexpr (kOut == 2)
            qd8_dequant<Arch>(sa[i], F::load_unaligned(sb + j), v, F::load_unaligned(bias + j))
                .store_unaligned(ti + j);
          else
            qd8_scale<Arch>(sa[i], F::load_unaligned(sb + j), v).store_unaligned(ti + j);
        }
        // Whole vectors only here (the micro-tiles' rows; a scalar tail drew GCC 12's
        // -Waggressive-loop-optimizations under -Ofast).
        MICROATTN_ASSERT(j == j1);
      } else
#endif
      {
        for (; j < j1; ++j) {
          std::int32_t v = si[j] - kOff * colsum[j];
          if constexpr (kAdd) v += ai[j];
          if constexpr (kOut == 0)
            ai[j] = v;
          else if constexpr (kOut == 2)
            ti[j] = qd8_dequant(sa[i], sb[j], v, bias[j]);
          else
            ti[j] = qd8_scale(sa[i], sb[j], v);
        }
      }
    }
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (mode & kQd8NotLast) {
    if (mode & kQd8NotFirst)
      run(Yes{}, std::integral_constant<int, 0>{});
    else
      run(No{}, std::integral_constant<int, 0>{});
  } else if (mode & 4u) {  // the last of several blocks: acc holds the sums so far
    run(Yes{}, std::integral_constant<int, 2>{});
  } else {
    run(Yes{}, std::integral_constant<int, 1>{});
  }
}

template <class Arch, std::int32_t kOff>
MICROATTN_NOINLINE inline void qd8_deep_rows_call(std::size_t rows, std::size_t ld, unsigned mode,
                                                  const std::int32_t* s, const std::int32_t* colsum,
                                                  std::int32_t* acc, const float* sa,
                                                  const float* sb, const float* bias, float* t,
                                                  std::size_t j0, std::size_t j1) noexcept {
  qd8_deep_rows_inline<Arch, kOff>(rows, ld, mode, s, colsum, acc, sa, sb, bias, t, j0, j1);
}
template <class Arch, std::int32_t kOff>
MICROATTN_ALWAYS_INLINE inline void qd8_deep_rows(std::size_t rows, std::size_t ld, unsigned mode,
                                                  const std::int32_t* s, const std::int32_t* colsum,
                                                  std::int32_t* acc, const float* sa,
                                                  const float* sb, const float* bias, float* t,
                                                  std::size_t j0, std::size_t j1) noexcept {
  if constexpr (qd8_xsimd_epilogue<Arch>())
    qd8_deep_rows_inline<Arch, kOff>(rows, ld, mode, s, colsum, acc, sa, sb, bias, t, j0, j1);
  else
    qd8_deep_rows_call<Arch, kOff>(rows, ld, mode, s, colsum, acc, sa, sb, bias, t, j0, j1);
}

/// A micro-tile's epilogue for one depth block: v(i, j) = sum - off * colsum[j] (+ acc(i, j)
/// unless the first block), exact in int32; the last block's v goes through the float
/// epilogue, t(i, j) = qd8_dequant(sa[i], sb[j], v, bias[j]) (with a bias) or qd8_scale(sa[i],
/// sb[j], v), earlier blocks' into acc(i, j). So the result is one float epilogue of the whole
/// exact sum, whatever the arch's depth block kKC, and the GEMV's bits (t and acc: row stride
/// kNR). bias is the panel's bias row, zeros without a bias: never null, so no compiler turns
/// the choice into masked loads from a null pointer (microcode assists; docs/compiler-notes.md).
template <class Arch>
struct Qd8Epilogue {
  /// mode: the block (qd8_blocks) and kBias in one byte, tested once per micro-tile (0 or
  /// kBias: the one-block product, every product with K <= kKC).
  static constexpr unsigned char kAddAcc = kQd8NotFirst;   ///< acc holds the sums so far
  static constexpr unsigned char kKeepInts = kQd8NotLast;  ///< v into acc
  static constexpr unsigned char kBias = 4;                ///< a bias (the last block's)
  float* t;
  std::int32_t* acc;
  const float* sa;
  const float* sb;
  const float* bias;
  const std::int32_t* colsum;
  unsigned char mode;
  static constexpr std::int32_t kOff = Qd8Params<Arch>::kFlip ? 128 : 0;
  static constexpr std::size_t NR = Qd8Params<Arch>::kNR;

  /// The MR rows of a micro-tile's sums s[i][j].
  template <std::size_t MR>
  MICROATTN_ALWAYS_INLINE void rows(const std::int32_t (&s)[MR][NR]) const noexcept {
    const unsigned m = mode;
    if (m == 0) {
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i) one_block<false>(i, 0, s[i], NR);
    } else if (m == kBias) {
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i) one_block<true>(i, 0, s[i], NR);
    } else {
      qd8_deep_rows<Arch, kOff>(MR, NR, m, s[0], colsum, acc, sa, sb, bias, t, 0, NR);
    }
  }
  /// Columns j0 .. j0 + n of row i from n sums at s (the DSP's column pairs; on the xsimd
  /// archs whole vectors).
  MICROATTN_ALWAYS_INLINE void sums(std::size_t i, std::size_t j0, const std::int32_t* s,
                                    std::size_t n = NR) const noexcept {
    const unsigned m = mode;
    if (m == 0)
      one_block<false>(i, j0, s, n);
    else if (m == kBias)
      one_block<true>(i, j0, s, n);
    else
      qd8_deep_rows<Arch, kOff>(1, NR, m, s - j0, colsum, acc + i * NR, sa + i, sb, bias,
                                t + i * NR, j0, j0 + n);
  }

 private:
  /// A one-block product's columns j0 .. j0 + n of row i (kB: with a bias).
  template <bool kB>
  MICROATTN_ALWAYS_INLINE void one_block(std::size_t i, std::size_t j0, const std::int32_t* s,
                                         std::size_t n) const noexcept {
    // (Members in locals: the Cortex-M loops then keep them in registers.)
    float* ti = t + i * NR;
    const float* sbj = sb;
    const float* bj = bias;
    const std::int32_t* cj = colsum;
    const float si = sa[i];
    const std::int32_t* sj = s - j0;
    std::size_t j = j0;
#if MICROATTN_HAS_XSIMD
    if constexpr (detail::qd8_xsimd_epilogue<Arch>()) {
      using F = xsimd::batch<float, Arch>;
      using I = xsimd::batch<std::int32_t, Arch>;
      for (; j + I::size <= j0 + n; j += I::size) {
        I v = I::load_unaligned(sj + j);
        if constexpr (kOff != 0) v = v - I::load_unaligned(cj + j) * I(kOff);
        const F sbv = F::load_unaligned(sbj + j);
        if constexpr (kB)
          detail::qd8_dequant<Arch>(si, sbv, v, F::load_unaligned(bj + j)).store_unaligned(ti + j);
        else
          detail::qd8_scale<Arch>(si, sbv, v).store_unaligned(ti + j);
      }
    }
#endif
#if MICROATTN_HAS_MVE
    if constexpr (Qd8Params<Arch>::kHelium)  // (no offset: kOff is 0)
      for (; j + 4 <= j0 + n; j += 4)
        intrin::dequant4_mve<kB>(si, sbj + j, vld1q_s32(sj + j), kB ? bj + j : nullptr, ti + j);
#endif
    for (; j < j0 + n; ++j) {
      const std::int32_t v = sj[j] - kOff * cj[j];
      ti[j] = kB ? detail::qd8_dequant(si, sbj[j], v, bj[j]) : detail::qd8_scale(si, sbj[j], v);
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
  template <std::size_t MR>
  void rows(const std::int32_t (&s)[MR][Qd8Params<Arch>::kNR]) const noexcept {
    for (std::size_t i = 0; i < MR; ++i) sums(i, 0, s[i]);
  }
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
/// in b_layout as for f32_gemm, C(m, n) = (a.scale[m] * (b_scale[n] * sum_k v(m, k) q(k, n)))
/// (+ bias[n]; bias may be null) with the sum exact in int32 over all of K (|sum| < 2^31: K up to
/// 133 000) and the floats of detail::qd8_dequant: the same bits on every arch and as
/// qd8_f32_qc8w_gemv's. Written through store, whose rows (store.row) hold the int32 sums between
/// depth blocks of Qd8Params::kKC. pack: qd8_pack_floats<Arch>() floats. b_scale and bias must
/// cover N columns padded to nothing: the epilogue reads b_scale[jc + j] and bias[jc + j] for j <
/// kNR only where jc + j < N.
template <class Arch, class Store>
void qd8_f32_qc8w_gemm(std::size_t M, std::size_t N, std::size_t K, const Qd8Rows& a,
                       const std::int8_t* b, std::size_t ldb, WeightLayout b_layout,
                       const float* b_scale, const float* bias, Store store, float* pack) noexcept {
  using P = Qd8Params<Arch>;
  constexpr std::size_t NR = P::kNR, MR = P::kMR, kAlign = internal::Tiles<Arch>::kAlign;
  alignas(kAlign) float tile[MR * NR];
  alignas(kAlign) std::int32_t acc[MR * NR];  // a deep product's sums between depth blocks
  alignas(kAlign) float sb[NR] = {};
  alignas(kAlign) float bb[NR] = {};
  std::size_t last_jc = ~std::size_t{0};
  using Epi = detail::Qd8Epilogue<Arch>;
  const unsigned char with_bias = bias ? Epi::kBias : 0;
  auto run = [&](std::size_t ir, std::size_t mr, std::size_t jc, std::size_t nr,
                 unsigned char block, const std::int32_t* colsum, auto&& sums) {
    if (jc != last_jc) {  // the panel's scales and bias, zero past N
      for (std::size_t j = 0; j < NR; ++j) sb[j] = j < nr ? b_scale[jc + j] : 0.0f;
      if (bias)  // (bb stays zero without a bias: no loads from a null pointer)
        for (std::size_t j = 0; j < NR; ++j) bb[j] = j < nr ? bias[jc + j] : 0.0f;
      last_jc = jc;
    }
    // K past one depth block: the int32 sums so far wait in C's own memory (its bytes, copied
    // as bytes: no float operation touches them), so the epilogue sees the exact whole sum.
    // (Whole panels copied with a constant size: inlined as vector moves.)
    auto copy_ints = [nr](void* to, const void* from) {
      if (nr == P::kNR)
        std::memcpy(to, from, P::kNR * sizeof(std::int32_t));
      else
        std::memcpy(to, from, nr * sizeof(std::int32_t));
    };
    if (block & detail::kQd8NotFirst)
      for (std::size_t i = 0; i < mr; ++i) copy_ints(acc + i * NR, store.row(ir + i, jc));
    Epi out{tile, acc, a.scale + ir, sb, bb, colsum, static_cast<unsigned char>(block | with_bias)};
    sums(out);
    if (block & detail::kQd8NotLast) {
      for (std::size_t i = 0; i < mr; ++i) copy_ints(store.row(ir + i, jc), acc + i * NR);
    } else {
      detail::gemm_tile_copy<Arch>(false, store, ir, mr, jc, nr, tile);
    }
  };
  detail::qd8_blocks<Arch>(M, N, K, a.q, a.ld, b, ldb, b_layout, pack, run);
}

/// The exact int32 sums of qd8_f32_qc8w_gemm without scales: c[m * ldc + n] = sum_k v(m, k)
/// q(k, n) (the integer kernels' own test: they must equal an int64 reference bit for bit).
template <class Arch>
void qd8_qc8w_gemm_i32(std::size_t M, std::size_t N, std::size_t K, const Qd8Rows& a,
                       const std::int8_t* b, std::size_t ldb, WeightLayout b_layout,
                       std::int32_t* c, std::size_t ldc, float* pack) noexcept {
  auto run = [&](std::size_t ir, std::size_t, std::size_t jc, std::size_t nr, unsigned char block,
                 const std::int32_t* colsum, auto&& sums) {
    detail::Qd8SumsOut<Arch> out{c + ir * ldc + jc, ldc, nr, colsum,
                                 (block & detail::kQd8NotFirst) == 0};
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
#if defined(MICROATTN_INTRIN_SSSE3)
  if constexpr (Qd8Params<Arch>::kMaddubs) {
    using X = typename Qd8Params<Arch>::X86I8;
    constexpr std::size_t W = sizeof(typename X::V);
    acc = intrin::dot_i8<X>(K / W, a, w);
    k = K / W * W;
  }
#endif
#if MICROATTN_HAS_MVE
  if constexpr (Qd8Params<Arch>::kHelium) return intrin::dot_i8_mve(K, a, w);
#endif
#if defined(MICROATTN_INTRIN_DSP)
  if constexpr (Qd8Params<Arch>::kDsp) {
    for (; k + 4 <= K; k += 4) {  // the row's pairs ready, the weights' widened here
      std::uint32_t a02, a13, y;
      std::memcpy(&a02, a + 2 * k, sizeof a02);
      std::memcpy(&a13, a + 2 * k + 4, sizeof a13);
      std::memcpy(&y, w + k, sizeof y);
      acc = intrin::smlad(a13, intrin::sxtb16_13(y), intrin::smlad(a02, intrin::sxtb16_02(y), acc));
    }
  }
#endif
  for (; k < K; ++k) acc += qd8_value<Arch>(a, k) * w[k];
  return acc;
}

#if defined(MICROATTN_INTRIN_DSP)
/// The DSP's sums of two [out][in] weight columns w0, w1 over `groups` groups of 4 (a's bytes
/// as Qd8Rows with kDsp): each column word sign-extended into SMLAD's pairs (values 0, 2 and
/// 1, 3), the row's pairs loaded once for both columns.
inline void qd8_dot2_dsp(std::size_t groups, const std::int8_t* a, const std::int8_t* w0,
                         const std::int8_t* w1, std::int32_t (&s)[2]) noexcept {
  std::int32_t acc0 = 0, acc1 = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    std::uint32_t a02, a13, y0, y1;
    std::memcpy(&a02, a + 8 * g, sizeof a02);
    std::memcpy(&a13, a + 8 * g + 4, sizeof a13);
    std::memcpy(&y0, w0 + 4 * g, sizeof y0);
    std::memcpy(&y1, w1 + 4 * g, sizeof y1);
    acc0 =
        intrin::smlad(a13, intrin::sxtb16_13(y0), intrin::smlad(a02, intrin::sxtb16_02(y0), acc0));
    acc1 =
        intrin::smlad(a13, intrin::sxtb16_13(y1), intrin::smlad(a02, intrin::sxtb16_02(y1), acc1));
  }
  s[0] = acc0;
  s[1] = acc1;
}

/// The DSP's sums of 4 row-major weight columns (column c of row k at w[k * ld + c]) over
/// `groups` groups of 4 rows: each row's word of 4 columns sign-extended in two (columns 0, 2
/// and 1, 3) and multiplied by the row's value with the halfword multiply-accumulates (the
/// value is the low or the high half of one of the row's SMLAD pairs: no repacking).
inline void qd8_dot4_rows_dsp(std::size_t groups, const std::int8_t* a, const std::int8_t* w,
                              std::size_t ld, std::int32_t* s) noexcept {
  std::int32_t acc[4] = {0, 0, 0, 0};
  auto row = [&](auto half, std::uint32_t x, const std::int8_t* p) {
    constexpr int H = decltype(half)::value;
    std::uint32_t y;
    std::memcpy(&y, p, sizeof y);
    const std::uint32_t e = intrin::sxtb16_02(y), o = intrin::sxtb16_13(y);
    acc[0] = intrin::smla_half<H, 0>(x, e, acc[0]);
    acc[2] = intrin::smla_half<H, 1>(x, e, acc[2]);
    acc[1] = intrin::smla_half<H, 0>(x, o, acc[1]);
    acc[3] = intrin::smla_half<H, 1>(x, o, acc[3]);
  };
  using Lo = std::integral_constant<int, 0>;
  using Hi = std::integral_constant<int, 1>;
  for (std::size_t g = 0; g < groups; ++g, w += 4 * ld) {
    std::uint32_t a02, a13;  // (v0, v2), (v1, v3)
    std::memcpy(&a02, a + 8 * g, sizeof a02);
    std::memcpy(&a13, a + 8 * g + 4, sizeof a13);
    row(Lo{}, a02, w);
    row(Lo{}, a13, w + ld);
    row(Hi{}, a02, w + 2 * ld);
    row(Hi{}, a13, w + 3 * ld);
  }
  for (std::size_t c = 0; c < 4; ++c) s[c] = acc[c];
}
#endif

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
      // The last K % 4 rows, counted from 0 (docs/compiler-notes.md: a -Werror warning).
      for (std::size_t r = 0; r < K % 4; ++r)
        for (std::size_t c = 0; c < 16; ++c)
          s[c] += std::int32_t{static_cast<std::int8_t>(a[k + r] ^ 0x80)} * w[(k + r) * ld + c];
      return;
    }
  }
#endif
  for (std::size_t c = 0; c < nc; ++c) s[c] = 0;
#if defined(MICROATTN_INTRIN_SSSE3)
  if constexpr (Qd8Params<Arch>::kMaddubs) {
    if (nc == 16) {
      intrin::dot16_i8<typename Qd8Params<Arch>::X86I8>(K / 4, a, w, ld, s);
      k = K / 4 * 4;
    }
  }
#endif
#if defined(MICROATTN_INTRIN_NEON)
  if constexpr (Qd8Params<Arch>::kNeon) {
    if (nc == 16) {
      intrin::dot16_i8(K / 4, a, w, ld, s);
      k = K / 4 * 4;
    }
  }
#endif
#if MICROATTN_HAS_MVE
  if constexpr (Qd8Params<Arch>::kHelium) {
    if (nc == 16) return intrin::dot16_i8_mve(K, a, w, ld, s);
  }
#endif
#if defined(MICROATTN_INTRIN_DSP)
  if constexpr (Qd8Params<Arch>::kDsp) {
    if (nc == 16) {
      for (std::size_t c = 0; c < 16; c += 4) qd8_dot4_rows_dsp(K / 4, a, w + c, ld, s + c);
      k = K / 4 * 4;
    }
  }
#endif
  for (; k < K; ++k) {
    const std::int32_t x = qd8_value<Arch>(a, k);
    const std::int8_t* wk = w + k * ld;
    for (std::size_t c = 0; c < nc; ++c) s[c] += x * wk[c];
  }
}

/// The sums s[0 .. nc) of nc [out][in] weight columns (column c at w + c * ldw): exact.
template <class Arch>
inline void qd8_dots(std::size_t K, const std::int8_t* a, const std::int8_t* w, std::size_t ldw,
                     std::size_t nc, std::int32_t* s) noexcept {
  std::size_t c = 0;
#if defined(MICROATTN_INTRIN_DSP)
  if constexpr (Qd8Params<Arch>::kDsp) {
    const std::size_t k4 = K / 4 * 4;
    for (; c + 2 <= nc; c += 2) {
      std::int32_t two[2];
      qd8_dot2_dsp(K / 4, a, w + c * ldw, w + (c + 1) * ldw, two);
      for (std::size_t j = 0; j < 2; ++j) {
        for (std::size_t k = k4; k < K; ++k) two[j] += qd8_value<Arch>(a, k) * w[(c + j) * ldw + k];
        s[c + j] = two[j];
      }
    }
  }
#endif
  for (; c < nc; ++c) s[c] = qd8_dot<Arch>(K, a, w + c * ldw);
}
}  // namespace detail

/// y[N] = x · B (+ bias) with integer compute for one quantised row (a: qd8_row_bytes<Arch>(K)
/// bytes as Qd8Rows, scale sa), B as in qd8_f32_qc8w_gemm: y[n] = (sa * (b_scale[n] * sum_k
/// v(k) q(k, n))) (+ bias[n]), exact int32 sums, no packing (each weight byte is read once). Part
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
      detail::qd8_dots<Arch>(K, a, w + n0 * ldw, ldw, nc, s);
    } else if (layout == WeightLayout::kInOut) {
      detail::qd8_dot16<Arch>(K, a, w + n0, ldw, nc, s);
    } else {
      detail::qd8_dot16<Arch>(K, a, w + (n0 / kWeightPanel) * ldw, kWeightPanel, nc, s);
    }
    detail::qd8_dequant_row<Arch>(nc, sa, b_scale + n0, s, bias ? bias + n0 : nullptr, y + n0);
  }
}

/// Keys formed together by qd8_f32_qs8_scores (a key tile's width must be a multiple).
constexpr std::size_t kQs8Keys = 16;

/// The attention kernels' quantised query rows for integer scores (kOn): kRows rows of
/// qd8_row_bytes<Arch>(kDHead) bytes and their scales; no bytes at all otherwise (an empty base).
template <class Arch, std::size_t kDHead, std::size_t kRows, bool kOn>
struct Qd8QueryRows {
  static constexpr std::size_t kQBytes = qd8_row_bytes<Arch>(kDHead);  ///< a quantised row
  alignas(4) std::int8_t qq[kRows * kQBytes];                          ///< quantised query rows
  float qs[kRows];                                                     ///< their scales
};
template <class Arch, std::size_t kDHead, std::size_t kRows>
struct Qd8QueryRows<Arch, kDHead, kRows, false> {};

/// Integer scores of one quantised query row (qa: K values as Qd8Rows, scale sa) against int8
/// keys in the int8 cache's K^T layout (value d of key j at kt[d * ld + j], the key's scale
/// k_scale[j]): s[j] = sa * (k_scale[j] * sum_d v(d) kt(d, j)) for a <= j < b, the sums exact in
/// int32. Keys go kQs8Keys at a time from a rounded down (ld: a multiple of kQs8Keys, at least
/// b rounded up); the sums of keys outside [a, b) are formed from whatever the tile holds there
/// and dropped: only s[a .. b) and k_scale[a .. b) are touched.
template <class Arch>
void qd8_f32_qs8_scores(std::size_t K, const std::int8_t* qa, float sa, const std::int8_t* kt,
                        std::size_t ld, std::size_t a, std::size_t b, const float* k_scale,
                        float* s) noexcept {
  std::int32_t sum[kQs8Keys];
  for (std::size_t j0 = a / kQs8Keys * kQs8Keys; j0 < b; j0 += kQs8Keys) {
    detail::qd8_dot16<Arch>(K, qa, kt + j0, ld, kQs8Keys, sum);
    const std::size_t lo = j0 > a ? j0 : a, hi = internal::min_size(j0 + kQs8Keys, b);
    detail::qd8_dequant_row<Arch>(hi - lo, sa, k_scale + lo, sum + (lo - j0), nullptr, s + lo);
  }
}

}  // namespace kernels
}  // namespace microattn

MICROATTN_GCC12_AVX512_WARNINGS_ON
