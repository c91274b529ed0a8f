// SPDX-License-Identifier: Apache-2.0
// microattn kernels: the integer (qd8) kernels on ARM's DSP extension (Cortex-M4/M7/M55's
// scalar arch, armv7-A; names: kernels/qd8/generic.hpp): SMLAD, two int16 products per
// instruction. A group of a quantised row, and of a packed weight column, is its 4 values
// already widened to two int16 pairs (values 0, 2 and 1, 3: SMLAD's operands), 8 bytes
// (kGroupBytes), so the micro-kernel loads them ready.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/qd8/generic.hpp"
#include "microattn/layout.hpp"

#if defined(MICROATTN_INTRIN_DSP)
#include <arm_acle.h>

namespace microattn {
namespace kernels {
namespace detail {
/// The two signed bytes 0 and 2 of w as two int16 halves (SXTB16).
inline std::uint32_t sxtb16_02(std::uint32_t w) noexcept { return __sxtb16(w); }
/// The two signed bytes 1 and 3 of w as two int16 halves (SXTB16 of w rotated by 8: one
/// instruction; GCC 12 does not fold the rotation of __sxtb16's operand into it).
inline std::uint32_t sxtb16_13(std::uint32_t w) noexcept {
  std::uint32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(w));
  return r;
}
/// acc + a.lo * b.lo + a.hi * b.hi of int16 halves (SMLAD; exact while the sum fits int32).
inline std::int32_t smlad(std::uint32_t a, std::uint32_t b, std::int32_t acc) noexcept {
  return __smlad(a, b, acc);
}
/// The low int16 halves of a and b as one word (a's low, b's in the high half): PKHBT.
inline std::uint32_t pack_lo(std::uint32_t a, std::uint32_t b) noexcept {
  return (a & 0xffffu) | (b << 16);
}
/// The high int16 halves of a and b as one word (a's in the low half): PKHTB.
inline std::uint32_t pack_hi(std::uint32_t a, std::uint32_t b) noexcept {
  return (a >> 16) | (b & 0xffff0000u);
}
/// acc + a's int16 half HA times b's half HB (0 low, 1 high): SMLABB, SMLABT, SMLATB, SMLATT.
template <int HA, int HB>
inline std::int32_t smla_half(std::uint32_t a, std::uint32_t b, std::int32_t acc) noexcept {
  const auto x = static_cast<std::int32_t>(a), y = static_cast<std::int32_t>(b);
  if constexpr (HA == 0 && HB == 0) return __smlabb(x, y, acc);
  if constexpr (HA == 0 && HB == 1) return __smlabt(x, y, acc);
  if constexpr (HA == 1 && HB == 0) return __smlatb(x, y, acc);
  if constexpr (HA == 1 && HB == 1) return __smlatt(x, y, acc);
}
/// The first `groups` groups of 4 bytes at q widened in place to 8 bytes each (Qd8Rows), last
/// group first so that none is overwritten before it is read.
inline void qd8_widen__dsp(std::int8_t* q, std::size_t groups) noexcept {
  for (std::size_t g = groups; g-- > 0;) {
    std::uint32_t w;
    std::memcpy(&w, q + g * kQd8Group, sizeof w);
    const std::uint32_t pairs[2] = {sxtb16_02(w), sxtb16_13(w)};
    std::memcpy(q + g * 2 * kQd8Group, pairs, sizeof pairs);
  }
}
/// qd8_pack_panel's whole groups of a full DSP panel: each group of 4 rows of 4 columns loaded
/// as 4 words, sign-extended (columns 0, 2 and 1, 3 of a row) and paired across rows 0, 2 and
/// 1, 3 into each column's two SMLAD words; [out][in] columns a word per group. Returns the
/// groups packed (the rest, a partial group, is the generic loop's).
template <class Arch>
inline std::size_t qd8_pack_c4__dsp(const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                                    std::size_t pc, std::size_t kc, std::size_t jc,
                                    std::int8_t* pack) noexcept {
  constexpr std::size_t NR = internal::Tiles<Arch>::kNR, GB = 2 * kQd8Group;
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
        store(pack + (g * NR + j) * GB, sxtb16_02(w), sxtb16_13(w));
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
        e[r] = sxtb16_02(y[r]);  // (column 0, column 2) of row r
        o[r] = sxtb16_13(y[r]);  // (column 1, column 3)
      }
      std::int8_t* d = pack + (g * NR + q) * GB;
      // Column c's words: (row 0, row 2) and (row 1, row 3) of it.
      store(d, pack_lo(e[0], e[2]), pack_lo(e[1], e[3]));
      store(d + GB, pack_lo(o[0], o[2]), pack_lo(o[1], o[3]));
      store(d + 2 * GB, pack_hi(e[0], e[2]), pack_hi(e[1], e[3]));
      store(d + 3 * GB, pack_hi(o[0], o[2]), pack_hi(o[1], o[3]));
    }
  }
  return groups;
}
/// The DSP micro-tile of one column pair, MR x 2 (packed 8-byte groups, a group of both columns
/// every `step` bytes): acc(i, j) = the MR x 2 int32 sums, loaded ready as int16 pairs. In a frame
/// of its own: inlined into the column loop, GCC 12 keeps that loop's values in registers and
/// spills the sums on the Cortex-M4 (2 x 2 sums, 2 row and 2 column operands and 4 pointers
/// fill the 13 core registers here).
template <std::size_t MR, std::size_t GB, std::size_t Step>
[[gnu::noinline]] inline void qd8_tile_c4__dsp(std::size_t groups,
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
        acc[i][0] = smlad(av[i], bv[0], acc[i][0]);
        acc[i][1] = smlad(av[i], bv[1], acc[i][1]);
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

/// qd8_dot on the DSP: 4 values at a time (the row's pairs ready, the weights' widened here),
/// then the tail.
template <class Arch>
inline std::int32_t qd8_dot__dsp(std::size_t K, const std::int8_t* a,
                                 const std::int8_t* w) noexcept {
  std::int32_t acc = 0;
  std::size_t k = 0;
  for (; k + 4 <= K; k += 4) {  // the row's pairs ready, the weights' widened here
    std::uint32_t a02, a13, y;
    std::memcpy(&a02, a + 2 * k, sizeof a02);
    std::memcpy(&a13, a + 2 * k + 4, sizeof a13);
    std::memcpy(&y, w + k, sizeof y);
    acc = smlad(a13, sxtb16_13(y), smlad(a02, sxtb16_02(y), acc));
  }
  for (; k < K; ++k) acc += qd8_value<Arch>(a, k) * w[k];
  return acc;
}
/// The DSP's sums of two [out][in] weight columns w0, w1 over `groups` groups of 4 (a's bytes
/// as Qd8Rows with kDsp): each column word sign-extended into SMLAD's pairs (values 0, 2 and
/// 1, 3), the row's pairs loaded once for both columns.
inline void qd8_dot2__dsp(std::size_t groups, const std::int8_t* a, const std::int8_t* w0,
                          const std::int8_t* w1, std::int32_t (&s)[2]) noexcept {
  std::int32_t acc0 = 0, acc1 = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    std::uint32_t a02, a13, y0, y1;
    std::memcpy(&a02, a + 8 * g, sizeof a02);
    std::memcpy(&a13, a + 8 * g + 4, sizeof a13);
    std::memcpy(&y0, w0 + 4 * g, sizeof y0);
    std::memcpy(&y1, w1 + 4 * g, sizeof y1);
    acc0 = smlad(a13, sxtb16_13(y0), smlad(a02, sxtb16_02(y0), acc0));
    acc1 = smlad(a13, sxtb16_13(y1), smlad(a02, sxtb16_02(y1), acc1));
  }
  s[0] = acc0;
  s[1] = acc1;
}

/// The DSP's sums of 4 row-major weight columns (column c of row k at w[k * ld + c]) over
/// `groups` groups of 4 rows: each row's word of 4 columns sign-extended in two (columns 0, 2
/// and 1, 3) and multiplied by the row's value with the halfword multiply-accumulates (the
/// value is the low or the high half of one of the row's SMLAD pairs: no repacking).
inline void qd8_dot4__dsp(std::size_t groups, const std::int8_t* a, const std::int8_t* w,
                          std::size_t ld, std::int32_t* s) noexcept {
  std::int32_t acc[4] = {0, 0, 0, 0};
  auto row = [&](auto half, std::uint32_t x, const std::int8_t* p) {
    constexpr int H = decltype(half)::value;
    std::uint32_t y;
    std::memcpy(&y, p, sizeof y);
    const std::uint32_t e = sxtb16_02(y), o = sxtb16_13(y);
    acc[0] = smla_half<H, 0>(x, e, acc[0]);
    acc[2] = smla_half<H, 1>(x, e, acc[2]);
    acc[1] = smla_half<H, 0>(x, o, acc[1]);
    acc[3] = smla_half<H, 1>(x, o, acc[3]);
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
}  // namespace detail

template <class Arch>
constexpr bool kQd8Runs<Qd8Isa::kDsp, Arch> = true;
template <>
struct Qd8Kernels<Qd8Isa::kDsp> : Qd8Kernels<Qd8Isa::kGeneric> {
  static constexpr std::size_t kGroupBytes = 2 * kQd8Group;
  static constexpr std::size_t kColumns = 2;
  MICROATTN_ALWAYS_INLINE static void widen(std::int8_t* q, std::size_t groups) noexcept {
    detail::qd8_widen__dsp(q, groups);
  }
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static std::size_t pack(const std::int8_t* b, std::size_t ldb,
                                                  WeightLayout layout, std::size_t pc,
                                                  std::size_t kc, std::size_t jc, std::int8_t* pack,
                                                  std::int32_t*) noexcept {
    return detail::qd8_pack_c4__dsp<Arch>(b, ldb, layout, pc, kc, jc, pack);
  }
  MICROATTN_ALWAYS_INLINE static void put_group(std::int8_t* d, std::uint32_t w) noexcept {
    const std::uint32_t pairs[2] = {detail::sxtb16_02(w), detail::sxtb16_13(w)};
    std::memcpy(d, pairs, sizeof pairs);
  }
  /// Two columns at a time (qd8_tile_c4__dsp), MR x 2 sums each.
  template <class Arch, std::size_t MR, class Out>
  MICROATTN_ALWAYS_INLINE static void sums(std::size_t groups, const std::int8_t* const (&arow)[MR],
                                           const std::int8_t* pack, Out& out) noexcept {
    constexpr std::size_t NR = internal::Tiles<Arch>::kNR, GB = kGroupBytes;
    for (std::size_t j0 = 0; j0 < NR; j0 += 2) {
      std::int32_t acc[MR][2];
      detail::qd8_tile_c4__dsp<MR, GB, NR * GB>(groups, arow, pack + j0 * GB, acc);
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i) out.sums(i, j0, acc[i], 2);
    }
  }
  template <class Arch>
  static std::int32_t dot(std::size_t K, const std::int8_t* a, const std::int8_t* w) noexcept {
    return detail::qd8_dot__dsp<Arch>(K, a, w);
  }
  template <class Arch>
  static void dot16(std::size_t K, const std::int8_t* a, const std::int8_t* w, std::size_t ld,
                    std::size_t nc, std::int32_t* s) noexcept {
    std::size_t k = 0;
    for (std::size_t c = 0; c < nc; ++c) s[c] = 0;
    if (nc == 16) {
      for (std::size_t c = 0; c < 16; c += 4) detail::qd8_dot4__dsp(K / 4, a, w + c, ld, s + c);
      k = K / 4 * 4;
    }
    detail::qd8_dot16_from__generic<Arch>(k, K, a, w, ld, nc, s);
  }
  /// Column pairs (qd8_dot2__dsp), then the generic dot for an odd last column.
  template <class Arch>
  static void dots(std::size_t K, const std::int8_t* a, const std::int8_t* w, std::size_t ldw,
                   std::size_t nc, std::int32_t* s) noexcept {
    std::size_t c = 0;
    const std::size_t k4 = K / 4 * 4;
    for (; c + 2 <= nc; c += 2) {
      std::int32_t two[2];
      detail::qd8_dot2__dsp(K / 4, a, w + c * ldw, w + (c + 1) * ldw, two);
      for (std::size_t j = 0; j < 2; ++j) {
        for (std::size_t k = k4; k < K; ++k) two[j] += qd8_value<Arch>(a, k) * w[(c + j) * ldw + k];
        s[c + j] = two[j];
      }
    }
    detail::qd8_dots_from__generic<Arch>(c, K, a, w, ldw, nc, s);
  }
};

}  // namespace kernels
}  // namespace microattn
#endif
