// SPDX-License-Identifier: Apache-2.0
// microattn internal: the x86 float helpers Vec<Arch> needs that xsimd 8.1 has no fast form of
// (int8 -> fp32 widening loads, the largest lane, a register transpose). Each is guarded by
// arch.hpp's MICROATTN_INTRIN_<ISA>; the integer kernels' x86 intrinsics are kernels/qd8/x86.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "microattn/arch.hpp"

// Inlined into a user's function, these reach GCC 12's AVX-512 warnings (arch.hpp).
MICROATTN_GCC12_AVX512_WARNINGS_OFF

namespace microattn {
namespace intrin {
#if defined(MICROATTN_INTRIN_AVX512)
/// 16 int8 at p as 16 floats.
inline __m512 i8x16_to_f32(const signed char* p) noexcept {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
/// Largest of the 16 lanes of v (a NaN lane may or may not win).
inline float hmax_f32x16(__m512 v) noexcept {
  const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}
/// r[i] = column i of the 16 x 16 matrix whose row j was r[j]: unpack pairs of rows, then
/// 64-bit pairs within 128-bit lanes (column k + 4 L of four rows in lane L), then whole
/// 128-bit lanes across the four row groups (64 shuffles).
inline void transpose_f32x16(__m512 (&r)[16]) noexcept {
  __m512 t[16], u[16];
  for (std::size_t i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (std::size_t g = 0; g < 4; ++g) {
    u[4 * g] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
    u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    // Lanes (group 0 L0, group 0 L2, group 1 L0, group 1 L2) and (... L1, L3), then groups 2, 3.
    const __m512 v0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88);
    const __m512 v1 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xDD);
    const __m512 w0 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xDD);
    r[k] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    r[4 + k] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(v0, w0, 0xDD);
    r[12 + k] = _mm512_shuffle_f32x4(v1, w1, 0xDD);
  }
}
#endif
#if defined(MICROATTN_INTRIN_AVX512)
/// 16 fp16 (F16C's VCVTPH2PS, exact) and 16 bf16 (widened, shifted into the top half) at p.
inline __m512 f16x16_to_f32(const std::uint16_t* p) noexcept {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 bf16x16_to_f32(const std::uint16_t* p) noexcept {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
#endif
#if defined(MICROATTN_INTRIN_F16C)
/// 8 and 4 fp16 at p as floats (exact).
inline __m256 f16x8_to_f32(const std::uint16_t* p) noexcept {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m128 f16x4_to_f32(const std::uint16_t* p) noexcept {
  return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
#endif
#if defined(MICROATTN_INTRIN_AVX2)
/// 8 bf16 at p as floats (exact).
inline __m256 bf16x8_to_f32(const std::uint16_t* p) noexcept {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
#endif
#if defined(MICROATTN_INTRIN_SSE41)
/// 4 bf16 at p as floats (exact).
inline __m128 bf16x4_to_f32(const std::uint16_t* p) noexcept {
  const __m128i w = _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm_castsi128_ps(_mm_slli_epi32(w, 16));
}
#endif
#if defined(MICROATTN_INTRIN_SSE41)
/// 4 int8 at p as 4 floats.
inline __m128 i8x4_to_f32(const signed char* p) noexcept {
  std::int32_t w;
  __builtin_memcpy(&w, p, sizeof w);
  return _mm_cvtepi32_ps(_mm_cvtepi8_epi32(_mm_cvtsi32_si128(w)));
}
/// Largest of the 4 lanes of v (a NaN lane may or may not win).
inline float hmax_f32x4(__m128 v) noexcept {
  const __m128 m = _mm_max_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}
#endif
#if defined(MICROATTN_INTRIN_AVX2)
/// r[i] = column i of the 8 x 8 matrix whose row j was r[j] (24 shuffles).
inline void transpose_f32x8(__m256 (&r)[8]) noexcept {
  __m256 t[8], u[8];
  for (std::size_t i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (std::size_t g = 0; g < 2; ++g) {
    u[4 * g] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
    u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x20);
    r[4 + k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x31);
  }
}
/// 8 int8 at p as 8 floats.
inline __m256 i8x8_to_f32(const signed char* p) noexcept {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
/// Largest of the 8 lanes of v (a NaN lane may or may not win).
inline float hmax_f32x8(__m256 v) noexcept {
  return hmax_f32x4(_mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}
#endif
}  // namespace intrin
}  // namespace microattn

MICROATTN_GCC12_AVX512_WARNINGS_ON
