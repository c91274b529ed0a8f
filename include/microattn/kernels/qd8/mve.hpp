// SPDX-License-Identifier: Apache-2.0
// microattn kernels: the integer (qd8) kernels on Helium (MVE, Cortex-M55/M85; names:
// kernels/qd8/generic.hpp): VMLADAV over 16 bytes of a row and a column, so the packed panel
// holds each column's runs of 4 groups together (kRun 4); the row's absmax and quantisation and
// the float epilogue's 4-column step (qd8_dequant4__mve) on Q registers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/qd8/generic.hpp"
#include "microattn/layout.hpp"

#if MICROATTN_HAS_MVE
namespace microattn {
namespace kernels {
namespace detail {
/// The int32 sums of an MR x NR micro-tile of the integer GEMM on Helium into sums[i][j]: row
/// i's bytes at arow[i] (4 groups, 16 bytes, at a time) times column j's run of the packed
/// panel (runs of up to 16 bytes per column: qd8_pack_panel), one VMLADAVA (16 multiply-adds
/// into a core register) per row and column; the last run (fewer than 4 groups) by predicated
/// loads. Two columns at a time: MR x 2 sums, the row and run pointers fit the core registers
/// (all NR columns at once, GCC 12 spilled a sum and copied the others every step).
template <std::size_t MR, std::size_t NR>
MICROATTN_NOINLINE inline void qd8_tile_c16__mve(std::size_t groups,
                                                 const signed char* const (&arow)[MR],
                                                 const signed char* pack,
                                                 std::int32_t (&sums)[MR][NR]) noexcept {
  static_assert(NR % 2 == 0, "column pairs");
  const std::size_t full = groups / 4, rest = 4 * (groups % 4);  // runs of 16 B; tail bytes
  for (std::size_t j0 = 0; j0 < NR; j0 += 2) {
    std::int32_t acc[MR][2] = {};
    const signed char* ap[MR];
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i) ap[i] = arow[i];
    const signed char* bp = pack + 16 * j0;
    for (std::size_t n = full; n > 0; --n, bp += NR * 16) {
      int8x16_t a[MR];
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i) {
        a[i] = vldrbq_s8(ap[i]);
        ap[i] += 16;
      }
#pragma GCC unroll 2
      for (std::size_t j = 0; j < 2; ++j) {
        const int8x16_t b = vldrbq_s8(bp + 16 * j);
#pragma GCC unroll 64
        for (std::size_t i = 0; i < MR; ++i) acc[i][j] = vmladavaq_s8(acc[i][j], a[i], b);
      }
    }
    if (rest != 0) {
      const mve_pred16_t p = vctp8q(static_cast<std::uint32_t>(rest));
      const signed char* tail = pack + full * NR * 16 + rest * j0;
      int8x16_t a[MR];
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i) a[i] = vldrbq_z_s8(ap[i], p);
#pragma GCC unroll 2
      for (std::size_t j = 0; j < 2; ++j) {
        const int8x16_t b = vldrbq_z_s8(tail + rest * j, p);
#pragma GCC unroll 64
        for (std::size_t i = 0; i < MR; ++i) acc[i][j] = vmladavaq_s8(acc[i][j], a[i], b);
      }
    }
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i) {
      sums[i][j0] = acc[i][0];
      sums[i][j0 + 1] = acc[i][1];
    }
  }
}
/// f32_absmax__avx512 on Helium: max |x[i]| over n floats, or NaN when one of them is not finite
/// (on the bits, as the x86 ones), 4 at a time, the tail predicated.
inline float f32_absmax__mve(const float* x, std::size_t n) noexcept {
  const uint32x4_t abs = vdupq_n_u32(0x7fffffffu);
  uint32x4_t m = vdupq_n_u32(0);
  for (std::size_t i = 0; i < n; i += 4) {
    const mve_pred16_t p = vctp32q(static_cast<std::uint32_t>(n - i));
    const uint32x4_t v = vldrwq_z_u32(reinterpret_cast<const std::uint32_t*>(x + i), p);
    m = vmaxq_u32(m, vandq_u32(v, abs));
  }
  return abs_bits_to_f32(vmaxvq_u32(0, m));
}
/// f32_qs8_quantize__avx512 on Helium: q[i] = (x[i] * inv rounded to nearest, ties to even (VCVTN),
/// clamped to -127 .. 127) xor flip, 4 at a time (a narrowing byte store), the tail predicated.
inline void f32_qs8_quantize__mve(const float* x, std::size_t n, float inv, signed char* q,
                                  unsigned char flip) noexcept {
  const int32x4_t f = vdupq_n_s32(static_cast<signed char>(flip));
  for (std::size_t i = 0; i < n; i += 4) {
    const mve_pred16_t p = vctp32q(static_cast<std::uint32_t>(n - i));
    const float32x4_t v = vmulq_n_f32(vldrwq_z_f32(x + i, p), inv);
    const int32x4_t r =
        vminq_s32(vmaxq_s32(vcvtnq_s32_f32(v), vdupq_n_s32(-127)), vdupq_n_s32(127));
    vstrbq_p_s32(q + i, veorq_s32(r, f), p);
  }
}
/// t[j] = (sa * (sb[j] * float(s[j]))) + bias[j] for 4 columns (kBias false: no sum, bias not
/// read), kernels::detail::qd8_dequant's operations: each product through an empty asm
/// statement, so that none is fused into the sum or reassociated (the integer epilogue is
/// unfused on every target). The floats through a may_alias vector type, as Vec<MveArch>::Mem
/// (GCC 12 writes vld1q_f32 / vst1q_f32 as int accesses that strict aliasing may move past
/// float ones).
template <bool kBias>
inline void qd8_dequant4__mve(float sa, const float* sb, int32x4_t s, const float* bias,
                              float* t) noexcept {
  using Mem = float __attribute__((vector_size(16), aligned(4), may_alias));
  float32x4_t p = vmulq_f32(*reinterpret_cast<const Mem*>(sb), vcvtq_f32_s32(s));
  __asm__("" : MICROATTN_OPAQUE_VEC(p));
  p = vmulq_n_f32(p, sa);
  if constexpr (kBias) {
    __asm__("" : MICROATTN_OPAQUE_VEC(p));
    p = vaddq_f32(p, *reinterpret_cast<const Mem*>(bias));
  }
  *reinterpret_cast<Mem*>(t) = p;
}
/// 16 bytes at p, p + 16, ..., p + 240 (a kPanel16 column's 16 inputs) in one gather.
inline int8x16_t qs8_panel16_column__mve(const signed char* p) noexcept {
  const uint8x16_t off = vmulq_n_u8(vidupq_n_u8(0, 1), 16);
  return vldrbq_gather_offset_s8(p, off);
}
/// s[c] = sum over k < n of a[k] w[k ld + c] for the 16 columns c: per k four widening loads
/// (VLDRB.S32) and four VMLAs by the row's value from a core register.
inline void qd8_dot16__mve(std::size_t n, const signed char* a, const signed char* w,
                           std::size_t ld, std::int32_t* s) noexcept {
  int32x4_t acc0 = vdupq_n_s32(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for (std::size_t k = 0; k < n; ++k, w += ld) {
    const std::int32_t x = a[k];
    acc0 = vmlaq_n_s32(acc0, vldrbq_s32(w), x);
    acc1 = vmlaq_n_s32(acc1, vldrbq_s32(w + 4), x);
    acc2 = vmlaq_n_s32(acc2, vldrbq_s32(w + 8), x);
    acc3 = vmlaq_n_s32(acc3, vldrbq_s32(w + 12), x);
  }
  vst1q_s32(s, acc0);
  vst1q_s32(s + 4, acc1);
  vst1q_s32(s + 8, acc2);
  vst1q_s32(s + 12, acc3);
}
/// sum over k < n of a[k] w[k] (signed bytes), 16 at a time (VMLADAVA), the tail predicated.
inline std::int32_t qd8_dot__mve(std::size_t n, const signed char* a,
                                 const signed char* w) noexcept {
  std::int32_t acc = 0;
  std::size_t k = 0;
  for (; k + 16 <= n; k += 16) acc = vmladavaq_s8(acc, vldrbq_s8(a + k), vldrbq_s8(w + k));
  if (k < n) {
    const mve_pred16_t p = vctp8q(static_cast<std::uint32_t>(n - k));
    acc = vmladavaq_s8(acc, vldrbq_z_s8(a + k, p), vldrbq_z_s8(w + k, p));
  }
  return acc;
}
/// qd8_pack_panel's Helium part for a whole panel (nr == kNR) of [out][in] or kPanel16 weights:
/// each column's whole runs of 16 inputs by one load (a gather for kPanel16); returns how many
/// groups it packed (0 for [in][out]).
template <class Arch>
inline std::size_t qd8_pack_c16__mve(const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                                     std::size_t pc, std::size_t kc, std::size_t jc,
                                     std::int8_t* pack) noexcept {
  constexpr std::size_t NR = internal::Tiles<Arch>::kNR;
  if (layout == WeightLayout::kInOut) return 0;
  const std::size_t runs = kc / 16;
  for (std::size_t r = 0; r < runs; ++r)
    for (std::size_t j = 0; j < NR; ++j) {
      const std::size_t n = jc + j, k = pc + 16 * r;
      const int8x16_t v = layout == WeightLayout::kOutIn
                              ? vldrbq_s8(b + n * ldb + k)
                              : qs8_panel16_column__mve(b + (n / kWeightPanel) * ldb +
                                                        k * kWeightPanel + n % kWeightPanel);
      vstrbq_s8(pack + (r * NR + j) * 16, v);
    }
  return 4 * runs;
}
}  // namespace detail

template <class Arch>
constexpr bool kQd8Runs<Qd8Isa::kMve, Arch> = std::is_same<Arch, MveArch>::value;
template <>
struct Qd8Kernels<Qd8Isa::kMve> : Qd8Kernels<Qd8Isa::kGeneric> {
  static constexpr std::size_t kRun = 4;
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static float absmax(std::size_t K, const float* x) noexcept {
    return detail::f32_absmax__mve(x, K);
  }
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static void quantize(std::size_t K, const float* x, float inv,
                                               std::int8_t* q) noexcept {
    detail::f32_qs8_quantize__mve(x, K, inv, q, kFlip);
  }
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static std::size_t pack(const std::int8_t* b, std::size_t ldb,
                                                  WeightLayout layout, std::size_t pc,
                                                  std::size_t kc, std::size_t jc, std::int8_t* pack,
                                                  std::int32_t*) noexcept {
    return detail::qd8_pack_c16__mve<Arch>(b, ldb, layout, pc, kc, jc, pack);
  }
  template <class Arch, std::size_t MR, class Out>
  MICROATTN_ALWAYS_INLINE static void sums(std::size_t groups, const std::int8_t* const (&arow)[MR],
                                           const std::int8_t* pack, Out& out) noexcept {
    constexpr std::size_t NR = internal::Tiles<Arch>::kNR;
    detail::qd8_sums_of_tile<Arch, MR, alignof(std::int32_t)>(
        out, [&](auto& sums) { detail::qd8_tile_c16__mve<MR, NR>(groups, arow, pack, sums); });
  }
  template <class Arch>
  static std::int32_t dot(std::size_t K, const std::int8_t* a, const std::int8_t* w) noexcept {
    return detail::qd8_dot__mve(K, a, w);
  }
  template <class Arch>
  static void dot16(std::size_t K, const std::int8_t* a, const std::int8_t* w, std::size_t ld,
                    std::size_t nc, std::int32_t* s) noexcept {
    for (std::size_t c = 0; c < nc; ++c) s[c] = 0;
    if (nc == 16) return detail::qd8_dot16__mve(K, a, w, ld, s);
    detail::qd8_dot16_from__generic<Arch>(0, K, a, w, ld, nc, s);
  }
};

}  // namespace kernels
}  // namespace microattn
#endif
