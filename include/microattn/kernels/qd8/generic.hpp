// SPDX-License-Identifier: Apache-2.0
// microattn kernels: the integer (qd8) kernels' house, and its plain C++ kernels: the generic
// fallback every ISA's kernels are tested against (tests/test_qd8.cpp, bit for bit).
//
// Names. A kernel is named <types>_<op>[_<tile>]__<isa> (XNNPACK's micro-kernel names, ggml's
// arch/<isa>/ files with _generic fallbacks):
//   types  qd8 (dynamically quantised int8 activations, one scale per row) against int8
//          weights; f32 for an operation on floats (f32_absmax), f32_qs8 for float to int8;
//   op     tile (the int32 sums of a GEMM micro-tile), pack (a weight panel into the tile's
//          layout), dot (one row against K weights), dot16 (against 16 row-major columns),
//          dot2 / dot4 (two [out][in] / four row-major columns), absmax, quantize, dequant4;
//   tile   cK: the bytes of depth a column takes per multiply-add step in the packed panel (4:
//          one group; 8: I8MM's pairs of groups; 16: Helium's runs of 4). The micro-tile's
//          MR x NR are template arguments (internal::Tiles<Arch>), so they are not in the name;
//   isa    generic, avx512 (F + BW), avx512vnni, avx2, maddubs (SSSE3 16-byte or AVX2 32-byte
//          pmaddubsw, one template), neon_smull, neon_sdot, neon_i8mm, neon (any of them), mve
//          (Helium), dsp (ARM DSP's SMLAD).
// One file per ISA family (qd8/x86.hpp, neon.hpp, mve.hpp, dsp.hpp) defines Qd8Kernels<isa>:
// the same operations under the same names as Qd8Kernels<Qd8Isa::kGeneric> below, which they
// inherit where they have nothing faster. kernels/qd8_gemm.hpp picks one per Arch (qd8_isa, a
// table) and holds the blocking, the epilogue and the public entry points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/arch.hpp"
#include "microattn/internal/elem.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/layout.hpp"

namespace microattn {
namespace kernels {

/// Depth of the int8 dot product's groups: A and B meet 4 bytes at a time.
constexpr std::size_t kQd8Group = 4;

/// The integer kernel families, one Qd8Kernels specialisation each (kernels/qd8/*.hpp).
enum class Qd8Isa : std::uint8_t {
  kGeneric,     ///< plain C++ (qd8/generic.hpp)
  kAvx512Vnni,  ///< AVX-512 VNNI vpdpbusd, unsigned A bytes (qd8/x86.hpp)
  kAvx2,        ///< 32-byte pmaddubsw (or AVX-VNNI), AVX2 and AVX-512 without VNNI (qd8/x86.hpp)
  kSsse3,       ///< 16-byte pmaddubsw, the 4-float SSE archs (qd8/x86.hpp)
  kNeonI8mm,    ///< SMMLA, FEAT_I8MM (qd8/neon.hpp)
  kNeonSdot,    ///< SDOT, FEAT_DotProd (qd8/neon.hpp)
  kNeonSmull,   ///< SMULL + SADALP: any NEON, armv7 too (qd8/neon.hpp)
  kMve,         ///< Helium VMLADAV (qd8/mve.hpp)
  kDsp,         ///< ARM DSP SMLAD on int16 pairs, the scalar arch (qd8/dsp.hpp)
};

/// Whether the build has ISA I's kernels and Arch runs them (specialised by each ISA's file).
template <Qd8Isa I, class Arch>
constexpr bool kQd8Runs = false;

/// The kernels of ISA I (specialised by each ISA's file; kGeneric below).
template <Qd8Isa I>
struct Qd8Kernels;

template <class Arch>
struct Qd8Params;  // kernels/qd8_gemm.hpp
/// The value v(k) of a quantised row (Qd8Rows) on Arch (kernels/qd8_gemm.hpp).
template <class Arch>
inline int qd8_value(const std::int8_t* row, std::size_t k) noexcept;

namespace detail {
/// The float whose bits are `bits` (an absolute value's: sign clear), or NaN when they are an
/// infinity's or a NaN's: the end of the absmax kernels, which compare |x| as integers.
inline float abs_bits_to_f32(std::uint32_t bits) noexcept {
  if (bits >= 0x7f800000u) return __builtin_nanf("");
  float r;
  __builtin_memcpy(&r, &bits, sizeof r);
  return r;
}

/// max |x[k]| over K floats, or NaN when one of them is not finite. |x| compared as bits, as
/// the vector kernels do: the same maximum whatever the FPU does with subnormals
/// (flush-to-zero vector units) and whatever the compiler vectorises.
inline float f32_absmax__generic(const float* x, std::size_t K) noexcept {
  std::uint32_t m = 0;
  for (std::size_t k = 0; k < K; ++k) {
    std::uint32_t u;
    std::memcpy(&u, x + k, sizeof u);
    u &= 0x7fffffffu;
    m = u > m ? u : m;
  }
  return abs_bits_to_f32(m);
}

/// q[k] = (internal::round_to_int8(x[k] * inv)) xor kFlip for K floats.
template <unsigned char kFlip>
inline void f32_qs8_quantize__generic(const float* x, std::size_t K, float inv,
                                      std::int8_t* q) noexcept {
  for (std::size_t k = 0; k < K; ++k)
    q[k] = static_cast<std::int8_t>(
        static_cast<unsigned char>(internal::round_to_int8(x[k] * inv)) ^ kFlip);
}

/// The plain C++ micro-tile: MR x kNR int32 sums of 4-byte products, handed to out.rows.
template <class Arch, std::size_t MR, class Out>
MICROATTN_ALWAYS_INLINE inline void qd8_tile_c4__generic(std::size_t groups,
                                                         const std::int8_t* const (&arow)[MR],
                                                         const std::int8_t* pack,
                                                         Out& out) noexcept {
  constexpr std::size_t NR = internal::Tiles<Arch>::kNR, G = kQd8Group;
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
  alignas(kAlign) std::int32_t sums[MR][internal::Tiles<Arch>::kNR];
  tile(sums);
  out.template rows<MR>(sums);
}

/// acc + the sum over k0 <= k < K of v(k) w[k] (the tail of every qd8 dot).
template <class Arch>
MICROATTN_ALWAYS_INLINE inline std::int32_t qd8_dot_from__generic(std::size_t k, std::size_t K,
                                                                  const std::int8_t* a,
                                                                  const std::int8_t* w,
                                                                  std::int32_t acc) noexcept {
  for (; k < K; ++k) acc += qd8_value<Arch>(a, k) * w[k];
  return acc;
}

/// s[c] += the sum over k0 <= k < K of v(k) w[k ld + c] for c < nc (the tail of every dot16).
template <class Arch>
MICROATTN_ALWAYS_INLINE inline void qd8_dot16_from__generic(std::size_t k, std::size_t K,
                                                            const std::int8_t* a,
                                                            const std::int8_t* w, std::size_t ld,
                                                            std::size_t nc,
                                                            std::int32_t* s) noexcept {
  for (; k < K; ++k) {
    const std::int32_t x = qd8_value<Arch>(a, k);
    const std::int8_t* wk = w + k * ld;
    for (std::size_t c = 0; c < nc; ++c) s[c] += x * wk[c];
  }
}

/// s[c] = the dot of Arch's kernels for columns c0 <= c < nc (column c at w + c * ldw).
template <class Arch>
MICROATTN_ALWAYS_INLINE inline void qd8_dots_from__generic(std::size_t c, std::size_t K,
                                                           const std::int8_t* a,
                                                           const std::int8_t* w, std::size_t ldw,
                                                           std::size_t nc,
                                                           std::int32_t* s) noexcept {
  using Kern = typename Qd8Params<Arch>::Kernels;
  for (; c < nc; ++c) s[c] = Kern::template dot<Arch>(K, a, w + c * ldw);
}
}  // namespace detail

/// The plain C++ kernels, and the interface every ISA's Qd8Kernels has (each operation
/// documented at its dispatcher in kernels/qd8_gemm.hpp):
///   kFlip        xor of a quantised row's bytes (VNNI: 0x80, unsigned bytes);
///   kGroupBytes  bytes of one group of a quantised row or packed column (DSP: 8, widened);
///   kRun         groups a packed column holds together (qd8_pack_at);
///   kColumns     the panel width kNR must be a multiple of;
///   mr<Arch>()   micro-tile rows.
template <>
struct Qd8Kernels<Qd8Isa::kGeneric> {
  static constexpr unsigned char kFlip = 0;
  static constexpr std::size_t kGroupBytes = kQd8Group;
  static constexpr std::size_t kRun = 1;
  static constexpr std::size_t kColumns = 1;
  template <class Arch>
  static constexpr std::size_t mr() noexcept {
    return internal::Tiles<Arch>::kQd8MR;
  }
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static float absmax(std::size_t K, const float* x) noexcept {
    return detail::f32_absmax__generic(x, K);
  }
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static void quantize(std::size_t K, const float* x, float inv,
                                               std::int8_t* q) noexcept {
    detail::f32_qs8_quantize__generic<Qd8Params<Arch>::kFlip>(x, K, inv, q);
  }
  /// A quantised row's groups after quantize (DSP: widened in place); nothing here.
  MICROATTN_ALWAYS_INLINE static void widen(std::int8_t*, std::size_t) noexcept {}
  /// A whole panel's first groups by the ISA's own packing; returns how many (none here).
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static std::size_t pack(const std::int8_t*, std::size_t, WeightLayout,
                                                  std::size_t, std::size_t, std::size_t,
                                                  std::int8_t*, std::int32_t*) noexcept {
    return 0;
  }
  /// One packed group: its 4 bytes w (byte r: depth k0 + r) at d.
  MICROATTN_ALWAYS_INLINE static void put_group(std::int8_t* d, std::uint32_t w) noexcept {
    std::memcpy(d, &w, sizeof w);  // little-endian: byte r is k = k0 + r
  }
  template <class Arch, std::size_t MR, class Out>
  MICROATTN_ALWAYS_INLINE static void sums(std::size_t groups, const std::int8_t* const (&arow)[MR],
                                           const std::int8_t* pack, Out& out) noexcept {
    detail::qd8_tile_c4__generic<Arch, MR>(groups, arow, pack, out);
  }
  template <class Arch>
  static std::int32_t dot(std::size_t K, const std::int8_t* a, const std::int8_t* w) noexcept {
    return detail::qd8_dot_from__generic<Arch>(0, K, a, w, 0);
  }
  template <class Arch>
  static void dot16(std::size_t K, const std::int8_t* a, const std::int8_t* w, std::size_t ld,
                    std::size_t nc, std::int32_t* s) noexcept {
    for (std::size_t c = 0; c < nc; ++c) s[c] = 0;
    detail::qd8_dot16_from__generic<Arch>(0, K, a, w, ld, nc, s);
  }
  template <class Arch>
  static void dots(std::size_t K, const std::int8_t* a, const std::int8_t* w, std::size_t ldw,
                   std::size_t nc, std::int32_t* s) noexcept {
    detail::qd8_dots_from__generic<Arch>(0, K, a, w, ldw, nc, s);
  }
};

}  // namespace kernels
}  // namespace microattn
