// SPDX-License-Identifier: Apache-2.0
// microattn kernels: the integer (qd8) kernels on NEON (names: kernels/qd8/generic.hpp), three
// micro-tiles: SMULL + SADALP on any NEON (armv7 too), SDOT with FEAT_DotProd, SMMLA with
// FEAT_I8MM (whose packed panel holds each column's pairs of groups together: kRun 2); the
// GEMV's 16-column dot by SMLAL by element on all three.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/qd8/generic.hpp"

#if defined(MICROATTN_INTRIN_NEON)
namespace microattn {
namespace kernels {
namespace detail {
/// (a0 + a1, a2 + a3, b0 + b1, b2 + b3): ADDP on AArch64, two VPADDs on armv7.
inline int32x4_t pairwise_sums(int32x4_t a, int32x4_t b) noexcept {
#if defined(MICROATTN_INTRIN_NEON64)
  return vpaddq_s32(a, b);
#else
  return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)),
                      vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
}
/// The int32 sums of an MR x (4 NV) micro-tile of the integer GEMM on NEON into
/// sums[i][4 v ..]: the sum over `groups` groups g of row i's 4 signed bytes at arow[i] + 4 g
/// times the 16 signed bytes at pack + (g NV + v) 16 (4 columns' groups of 4), by SMULL into
/// int16 products and SADALP into pairwise int32 sums, two per column, added at the end (any
/// NEON: Cortex-A72, A53, armv7). In a frame of its own, as the x86 tile (GCC 12 keeps inlined
/// accumulators in memory).
template <std::size_t MR, std::size_t NV>
MICROATTN_NOINLINE inline void qd8_tile_c4__neon_smull(std::size_t groups,
                                                       const signed char* const (&arow)[MR],
                                                       const signed char* pack,
                                                       std::int32_t (&sums)[MR][NV * 4]) noexcept {
  int32x4_t lo[MR][NV], hi[MR][NV];  // (c0: k0+k1, c0: k2+k3, c1: .., c1: ..), columns 2, 3
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t v = 0; v < NV; ++v) lo[i][v] = hi[i][v] = vdupq_n_s32(0);
  for (std::size_t g = 0; g < groups; ++g) {
    int8x16_t b[NV];
#pragma GCC unroll 64
    for (std::size_t v = 0; v < NV; ++v) b[v] = vld1q_s8(pack + (g * NV + v) * 16);
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i) {
      std::int32_t w;
      __builtin_memcpy(&w, arow[i] + 4 * g, sizeof w);
      const int8x8_t a = vreinterpret_s8_s32(vdup_n_s32(w));
#pragma GCC unroll 64
      for (std::size_t v = 0; v < NV; ++v) {
        lo[i][v] = vpadalq_s16(lo[i][v], vmull_s8(vget_low_s8(b[v]), a));
        hi[i][v] = vpadalq_s16(hi[i][v], vmull_s8(vget_high_s8(b[v]), a));
      }
    }
  }
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t v = 0; v < NV; ++v)
      vst1q_s32(sums[i] + 4 * v, pairwise_sums(lo[i][v], hi[i][v]));
}
#if defined(MICROATTN_INTRIN_SDOT)
/// qd8_tile_c4__neon_smull's sums with FEAT_DotProd: one SDOT per vector and row (4 groups of a
/// row from one load, by lane).
template <std::size_t MR, std::size_t NV>
MICROATTN_NOINLINE inline void qd8_tile_c4__neon_sdot(std::size_t groups,
                                                      const signed char* const (&arow)[MR],
                                                      const signed char* pack,
                                                      std::int32_t (&sums)[MR][NV * 4]) noexcept {
  int32x4_t acc[MR][NV];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t v = 0; v < NV; ++v) acc[i][v] = vdupq_n_s32(0);
  std::size_t g = 0;
  for (; g + 4 <= groups; g += 4) {
    int8x16_t a[MR];
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i) a[i] = vld1q_s8(arow[i] + 4 * g);
    auto step = [&](auto lane) {  // the groups g + L, by lane L of the rows (an immediate)
      constexpr int L = decltype(lane)::value;
      int8x16_t b[NV];
#pragma GCC unroll 64
      for (std::size_t v = 0; v < NV; ++v) b[v] = vld1q_s8(pack + ((g + L) * NV + v) * 16);
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
        for (std::size_t v = 0; v < NV; ++v) acc[i][v] = vdotq_laneq_s32(acc[i][v], b[v], a[i], L);
    };
    step(std::integral_constant<int, 0>{});
    step(std::integral_constant<int, 1>{});
    step(std::integral_constant<int, 2>{});
    step(std::integral_constant<int, 3>{});
  }
  for (; g < groups; ++g) {
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i) {
      std::int32_t w;
      __builtin_memcpy(&w, arow[i] + 4 * g, sizeof w);
      const int8x16_t a = vreinterpretq_s8_s32(vdupq_n_s32(w));
#pragma GCC unroll 64
      for (std::size_t v = 0; v < NV; ++v)
        acc[i][v] = vdotq_s32(acc[i][v], vld1q_s8(pack + (g * NV + v) * 16), a);
    }
  }
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t v = 0; v < NV; ++v) vst1q_s32(sums[i] + 4 * v, acc[i][v]);
}
#endif
#if defined(MICROATTN_INTRIN_I8MM)
/// The int32 sums of an MR x (2 NP) micro-tile of the integer GEMM with FEAT_I8MM into
/// sums[i][j]: one SMMLA per row pair and column pair and pair of groups (8 bytes of depth),
/// the rows' 8 bytes at arow[i] + 8 s (no repacking; an odd MR pairs its last row with itself)
/// against the 16 bytes at pack + (s NP + c) 16, column 2c's 8 bytes then column 2c + 1's
/// (qd8_pack_at). An odd last group: a row holds whole groups only, so each row's last 4 bytes
/// and 4 zeros, against the panel's zero pad group. NP even; in a frame of its own, as the others.
template <std::size_t MR, std::size_t NP>
MICROATTN_NOINLINE inline void qd8_tile_c8__neon_i8mm(std::size_t groups,
                                                      const signed char* const (&arow)[MR],
                                                      const signed char* pack,
                                                      std::int32_t (&sums)[MR][NP * 2]) noexcept {
  static_assert(NP % 2 == 0, "whole 4-column vectors of sums");
  constexpr std::size_t RP = (MR + 1) / 2;
  const signed char* r[2 * RP];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < 2 * RP; ++i) r[i] = arow[i < MR ? i : MR - 1];
  int32x4_t acc[RP][NP];  // (row 2p, row 2p + 1) x (column 2c, column 2c + 1), row-major
#pragma GCC unroll 64
  for (std::size_t p = 0; p < RP; ++p)
#pragma GCC unroll 64
    for (std::size_t c = 0; c < NP; ++c) acc[p][c] = vdupq_n_s32(0);
  auto step = [&](const int8x16_t(&a)[RP], const signed char* pb) {
#pragma GCC unroll 64
    for (std::size_t c = 0; c < NP; ++c) {
      const int8x16_t b = vld1q_s8(pb + 16 * c);
#pragma GCC unroll 64
      for (std::size_t p = 0; p < RP; ++p) acc[p][c] = vmmlaq_s32(acc[p][c], a[p], b);
    }
  };
  std::size_t s = 0;
  for (; 2 * s + 2 <= groups; ++s) {
    int8x16_t a[RP];
#pragma GCC unroll 64
    for (std::size_t p = 0; p < RP; ++p)
      a[p] = vcombine_s8(vld1_s8(r[2 * p] + 8 * s), vld1_s8(r[2 * p + 1] + 8 * s));
    step(a, pack + s * NP * 16);
  }
  if (2 * s < groups) {
    int8x16_t a[RP];
#pragma GCC unroll 64
    for (std::size_t p = 0; p < RP; ++p) {
      std::uint32_t w0, w1;
      __builtin_memcpy(&w0, r[2 * p] + 8 * s, sizeof w0);
      __builtin_memcpy(&w1, r[2 * p + 1] + 8 * s, sizeof w1);
      a[p] =
          vcombine_s8(vreinterpret_s8_u64(vcreate_u64(w0)), vreinterpret_s8_u64(vcreate_u64(w1)));
    }
    step(a, pack + s * NP * 16);
  }
#pragma GCC unroll 64
  for (std::size_t p = 0; p < RP; ++p)
#pragma GCC unroll 64
    for (std::size_t c = 0; c < NP; c += 2) {  // rows 2p, 2p + 1 of columns 2c .. 2c + 3
      const int64x2_t x = vreinterpretq_s64_s32(acc[p][c]),
                      y = vreinterpretq_s64_s32(acc[p][c + 1]);
      vst1q_s32(sums[2 * p] + 2 * c, vreinterpretq_s32_s64(vzip1q_s64(x, y)));
      if (2 * p + 1 < MR)
        vst1q_s32(sums[2 * p + 1] + 2 * c, vreinterpretq_s32_s64(vzip2q_s64(x, y)));
    }
}
#endif
/// s[c] = the sum over k < 4 n of a[k] w[k ld + c] for 16 columns c of row-major signed bytes
/// (a's values in -127 .. 127): each row widened to int16 and multiplied by its value as a
/// lane (SMLAL by element) into int32 sums.
inline void qd8_dot16__neon(std::size_t n, const signed char* a, const signed char* w,
                            std::size_t ld, std::int32_t* s) noexcept {
  int32x4_t acc[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
  auto row = [&](auto lane, int16x4_t x, const signed char* p) {
    constexpr int L = decltype(lane)::value;
    const int8x16_t r = vld1q_s8(p);
    const int16x8_t lo = vmovl_s8(vget_low_s8(r)), hi = vmovl_s8(vget_high_s8(r));
    acc[0] = vmlal_lane_s16(acc[0], vget_low_s16(lo), x, L);
    acc[1] = vmlal_lane_s16(acc[1], vget_high_s16(lo), x, L);
    acc[2] = vmlal_lane_s16(acc[2], vget_low_s16(hi), x, L);
    acc[3] = vmlal_lane_s16(acc[3], vget_high_s16(hi), x, L);
  };
  for (std::size_t k = 0; k < 4 * n; k += 4, w += 4 * ld) {
    std::int32_t v;
    __builtin_memcpy(&v, a + k, sizeof v);
    const int16x4_t x = vget_low_s16(vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(v))));
    row(std::integral_constant<int, 0>{}, x, w);
    row(std::integral_constant<int, 1>{}, x, w + ld);
    row(std::integral_constant<int, 2>{}, x, w + 2 * ld);
    row(std::integral_constant<int, 3>{}, x, w + 3 * ld);
  }
  for (std::size_t v = 0; v < 4; ++v) vst1q_s32(s + 4 * v, acc[v]);
}
}  // namespace detail

template <class Arch>
constexpr bool kQd8Runs<Qd8Isa::kNeonSmull, Arch> = std::is_base_of<xsimd::neon, Arch>::value;
/// SMULL + SADALP: two sums per column and row, 2 x 4 x 2 accumulators + 4 B + 2 A registers
/// of AArch64's 32 (2 rows); armv7's 16 q registers hold one row's (8 + 4 + 1).
template <>
struct Qd8Kernels<Qd8Isa::kNeonSmull> : Qd8Kernels<Qd8Isa::kGeneric> {
  static constexpr std::size_t kColumns = 4;
  template <class Arch>
  static constexpr std::size_t mr() noexcept {
    return std::is_base_of<xsimd::neon64, Arch>::value ? 2 : 1;
  }
  template <class Arch, std::size_t MR, class Out>
  MICROATTN_ALWAYS_INLINE static void sums(std::size_t groups, const std::int8_t* const (&arow)[MR],
                                           const std::int8_t* pack, Out& out) noexcept {
    constexpr std::size_t NR = internal::Tiles<Arch>::kNR;
    detail::qd8_sums_of_tile<Arch, MR, 16>(out, [&](auto& sums) {
      detail::qd8_tile_c4__neon_smull<MR, NR / 4>(groups, arow, pack, sums);
    });
  }
  template <class Arch>
  static void dot16(std::size_t K, const std::int8_t* a, const std::int8_t* w, std::size_t ld,
                    std::size_t nc, std::int32_t* s) noexcept {
    std::size_t k = 0;
    for (std::size_t c = 0; c < nc; ++c) s[c] = 0;
    if (nc == 16) {
      detail::qd8_dot16__neon(K / 4, a, w, ld, s);
      k = K / 4 * 4;
    }
    detail::qd8_dot16_from__generic<Arch>(k, K, a, w, ld, nc, s);
  }
};

#if defined(MICROATTN_INTRIN_SDOT)
template <class Arch>
constexpr bool kQd8Runs<Qd8Isa::kNeonSdot, Arch> = std::is_base_of<xsimd::neon, Arch>::value;
template <>
struct Qd8Kernels<Qd8Isa::kNeonSdot> : Qd8Kernels<Qd8Isa::kNeonSmull> {
  template <class Arch>
  static constexpr std::size_t mr() noexcept {
    return internal::Tiles<Arch>::kQd8MR;
  }
  template <class Arch, std::size_t MR, class Out>
  MICROATTN_ALWAYS_INLINE static void sums(std::size_t groups, const std::int8_t* const (&arow)[MR],
                                           const std::int8_t* pack, Out& out) noexcept {
    constexpr std::size_t NR = internal::Tiles<Arch>::kNR;
    detail::qd8_sums_of_tile<Arch, MR, 16>(out, [&](auto& sums) {
      detail::qd8_tile_c4__neon_sdot<MR, NR / 4>(groups, arow, pack, sums);
    });
  }
};
#endif

#if defined(MICROATTN_INTRIN_I8MM)
template <class Arch>
constexpr bool kQd8Runs<Qd8Isa::kNeonI8mm, Arch> = std::is_base_of<xsimd::neon, Arch>::value;
/// SMMLA over 8 bytes of two rows and two columns: the packed panel holds each column's pairs
/// of groups together (kRun 2; an odd last group completed by a zero group, qd8_pack_panel).
template <>
struct Qd8Kernels<Qd8Isa::kNeonI8mm> : Qd8Kernels<Qd8Isa::kNeonSmull> {
  static constexpr std::size_t kRun = 2;
  template <class Arch>
  static constexpr std::size_t mr() noexcept {
    return internal::Tiles<Arch>::kQd8MR;
  }
  template <class Arch, std::size_t MR, class Out>
  MICROATTN_ALWAYS_INLINE static void sums(std::size_t groups, const std::int8_t* const (&arow)[MR],
                                           const std::int8_t* pack, Out& out) noexcept {
    constexpr std::size_t NR = internal::Tiles<Arch>::kNR;
    detail::qd8_sums_of_tile<Arch, MR, 16>(out, [&](auto& sums) {
      detail::qd8_tile_c8__neon_i8mm<MR, NR / 2>(groups, arow, pack, sums);
    });
  }
};
#endif

}  // namespace kernels
}  // namespace microattn
#endif
