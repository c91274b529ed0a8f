// SPDX-License-Identifier: Apache-2.0
// microattn: the one place that translates compiler feature macros into a kernel architecture.
//
// Kernels are templates on an arch tag. Where xsimd 8.1 has an architecture for the target
// (SSE2 and up, AVX2+FMA, AVX-512, NEON, NEON64) the tag is an xsimd arch; on Cortex-M cores
// with Helium (M55, M85) it is MveArch; otherwise (Cortex-M4/M7, or MICROATTN_FORCE_SCALAR) it
// is ScalarArch. All have the same kernel interface (internal/vec.hpp's Vec<Arch>).
// Nothing else in the library tests __ARM_NEON, __AVX2__ and friends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if !defined(MICROATTN_FORCE_SCALAR) &&                                                      \
    (defined(__SSE2__) || defined(_M_X64) || defined(__ARM_NEON) || defined(__ARM_NEON__) || \
     defined(__aarch64__))
#define MICROATTN_HAS_XSIMD 1
// xsimd 14's own headers use __int128 (-Wpedantic) and, under -ffast-math, define unused local
// typedefs (-Wunused-local-typedefs): a user's -Werror build must not stop on them.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wunused-local-typedefs"
#endif
#include <xsimd/xsimd.hpp>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
// xsimd 8.1 (Debian 12) to 14 (tested: 8.1, 12.1, 13.2, 14.3). The API differences (hadd /
// reduce_add, bitwise_cast's template argument) are bridged in internal/vec.hpp alone.
#if !defined(XSIMD_VERSION_MAJOR) || XSIMD_VERSION_MAJOR < 8 || \
    (XSIMD_VERSION_MAJOR == 8 && XSIMD_VERSION_MINOR < 1)
#error "microattn needs xsimd 8.1 or newer (Debian 12: apt-get install libxsimd-dev)"
#endif
#else
#define MICROATTN_HAS_XSIMD 0
#endif

/// 1 on Armv8.1-M cores with the M-profile Vector Extension's floating point (Helium, MVE-F:
/// Cortex-M55, M85; GCC's -mcpu=cortex-m55 without +nomve.fp), where xsimd has no arch: the
/// kernels then run on microattn's own MveArch (four float lanes in a Q register, arm_mve.h).
/// MICROATTN_FORCE_SCALAR keeps such a core on the scalar kernels.
#if !defined(MICROATTN_FORCE_SCALAR) && !MICROATTN_HAS_XSIMD && defined(__ARM_FEATURE_MVE) && \
    (__ARM_FEATURE_MVE & 2)
#define MICROATTN_HAS_MVE 1
#include <arm_mve.h>
#else
#define MICROATTN_HAS_MVE 0
#endif

/// 1 where a scalar float fused multiply-add is one instruction (Cortex-M4F, M7, M55, x86 with
/// FMA, AArch64): Vec<ScalarArch>::fma is then an explicit fmaf.
#if defined(__ARM_FEATURE_FMA) || defined(__FMA__) || defined(__aarch64__)
#define MICROATTN_SCALAR_FMA 1
#else
#define MICROATTN_SCALAR_FMA 0
#endif

/// 1 where that multiply-add is written as a `vfma.f32` asm statement instead of fmaf: clang for
/// bare-metal 32-bit ARM with math errno on (its default) calls the C library's fmaf for the
/// builtin (docs/compiler-notes.md; test clang_cortex_m_fma).
#if MICROATTN_SCALAR_FMA && defined(__clang__) && defined(__arm__) && !defined(__aarch64__) && \
    !defined(__NO_MATH_ERRNO__) && defined(__ARM_FP) && (__ARM_FP & 4) && !defined(__SOFTFP__)
#define MICROATTN_SCALAR_FMA_ASM 1
#else
#define MICROATTN_SCALAR_FMA_ASM 0
#endif

/// 1 on a Cortex-M (M-profile) core with a hardware FPU and a hard- or softfp float ABI: the
/// scalar kernels' Cortex-M scheduling choices (Vec<ScalarArch>::loads_first, clamp_below,
/// kExpStep) build on it.
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && \
    !defined(__SOFTFP__)
#define MICROATTN_CORTEX_M_FPU 1
#else
#define MICROATTN_CORTEX_M_FPU 0
#endif

/// 1 where an empty GNU asm statement can pin an x86 vector in a register (Vec::pinned;
/// docs/compiler-notes.md), and where functions get frames of their own (OWN_FRAME below).
#if MICROATTN_HAS_XSIMD && defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define MICROATTN_PIN_X86 1
#else
#define MICROATTN_PIN_X86 0
#endif

/// Inline-asm register constraints for Vec::opaque (an empty asm statement that makes a value
/// unknown to the optimiser, so -ffast-math cannot fold a rounding trick away). Vector: the
/// register class of the SIMD arch; scalar float: the FP register class of the target, or a
/// general register on soft-float cores. 0 where no constraint is known (then a volatile copy
/// is used instead).
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define MICROATTN_OPAQUE_VEC "+v"
#if defined(__SSE2__) || defined(__x86_64__)
#define MICROATTN_OPAQUE_F32 "+x"
#endif
#elif defined(__GNUC__) && defined(__aarch64__)
#define MICROATTN_OPAQUE_VEC "+w"
#define MICROATTN_OPAQUE_F32 "+w"
#elif defined(__GNUC__) && defined(__arm__)
#define MICROATTN_OPAQUE_VEC "+w"
#if defined(__ARM_FP) && (__ARM_FP & 4) && !defined(__SOFTFP__)
#define MICROATTN_OPAQUE_F32 "+t"
#else
#define MICROATTN_OPAQUE_F32 "+r"
#endif
#endif

/// GCC 12's own AVX-512 intrinsics trip -Wmaybe-uninitialized / -Wuninitialized at every
/// inlined use (fixed in GCC 13; docs/compiler-notes.md): the kernel headers that reach them
/// bracket their code with these two macros, which silence only those two warnings, only there.
#if MICROATTN_HAS_XSIMD && defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13 && \
    defined(__AVX512F__)
#define MICROATTN_GCC12_AVX512_WARNINGS_OFF                                                  \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define MICROATTN_GCC12_AVX512_WARNINGS_ON _Pragma("GCC diagnostic pop")
#else
#define MICROATTN_GCC12_AVX512_WARNINGS_OFF
#define MICROATTN_GCC12_AVX512_WARNINGS_ON
#endif

/// x86 (GCC and clang): keeps a function out of its callers and inlines every call in it (the
/// micro-kernel, with the caller's compile-time strides), so GCC 12 allocates its registers the
/// same whatever the translation unit holds. Used where KernelParams::kOwnFrameAttn says
/// (kernels/f32_attn_tile.hpp; docs/compiler-notes.md).
#if MICROATTN_PIN_X86
#define MICROATTN_OWN_FRAME_X86 __attribute__((noinline, flatten))
#else
#define MICROATTN_OWN_FRAME_X86
#endif

/// Forces a function into its caller (GCC and clang), where a frame of its own costs stack.
/// MICROATTN_NOINLINE keeps one out, where its locals would otherwise add to a deeper chain's.
#if defined(__GNUC__)
#define MICROATTN_ALWAYS_INLINE __attribute__((always_inline))
#define MICROATTN_NOINLINE __attribute__((noinline))
#else
#define MICROATTN_ALWAYS_INLINE
#define MICROATTN_NOINLINE
#endif

/// Functions marked with this are not loop-vectorised by GCC 12 for MVE (Cortex-M55) only: it
/// emitted an instruction form MVE does not have, or a form that changed results
/// (docs/compiler-notes.md).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13 && defined(__ARM_FEATURE_MVE)
#define MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE __attribute__((optimize("no-tree-loop-vectorize")))
#else
#define MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE
#endif

/// The operations the kernels need that xsimd 8.1 has no fast form of, per ISA
/// (MICROATTN_INTRIN_<ISA> says which ISA's are available):
///  - int8 -> fp32 widening loads (int8 weights and caches): xsimd's converting load goes
///    through a scalar loop. Each loads exactly the bytes it converts.
///  - the largest lane of a vector (the softmax's row max once per row and key tile): xsimd 8.1
///    has no reduce_max, and a lane-by-lane loop through memory is slow.
///  - a W x W transpose in registers (the keys' K^T staging, x86): xsimd 8.1 has no transpose,
///    and its AVX / AVX-512 zip_lo / zip_hi interleave within 128-bit lanes only (the
///    unpack instructions), unlike its SSE and NEON ones and newer xsimd releases.
#if MICROATTN_HAS_XSIMD && defined(__AVX512F__)
#define MICROATTN_INTRIN_AVX512 1
#endif
#if MICROATTN_HAS_XSIMD && defined(__AVX2__)
#define MICROATTN_INTRIN_AVX2 1
#endif
#if MICROATTN_HAS_XSIMD && defined(__SSSE3__)
#define MICROATTN_INTRIN_SSSE3 1
#endif
#if MICROATTN_HAS_XSIMD && defined(__SSE4_1__)
#define MICROATTN_INTRIN_SSE41 1
#endif
#if MICROATTN_HAS_XSIMD && (defined(__ARM_NEON) || defined(__ARM_NEON__) || defined(__aarch64__))
#define MICROATTN_INTRIN_NEON 1
#endif
/// 1 on 32-bit ARM NEON (armv7), where Vec replaces two xsimd 8.1 operations that GCC 12
/// compiles lane by lane (fnma, select_lt; docs/compiler-notes.md); MICROATTN_NEON32_FMA when
/// that NEON has fused multiply-add (VFPv4).
#if defined(MICROATTN_INTRIN_NEON) && defined(__arm__) && !defined(__aarch64__)
#define MICROATTN_NEON32_FIXES 1
#if defined(__ARM_FEATURE_FMA)
#define MICROATTN_NEON32_FMA 1
#endif
#else
#define MICROATTN_NEON32_FIXES 0
#endif

/// ARM's DSP extension (Cortex-M4/M7/M55, armv7-A): the integer (qd8) kernels' int16-pair
/// multiply-accumulate, from ACLE's arm_acle.h.
#if defined(__ARM_FEATURE_DSP) && defined(__arm__) && !defined(__aarch64__)
#define MICROATTN_INTRIN_DSP 1
#include <arm_acle.h>
#endif

// (The intrinsic helpers below are kernel code too: inlined into a user's function, they reach
// the same GCC 12 warnings; see the macros above.)
MICROATTN_GCC12_AVX512_WARNINGS_OFF

namespace microattn {
namespace intrin {
/// The float whose bits are `bits` (an absolute value's: sign clear), or NaN when they are an
/// infinity's or a NaN's: the end of the absmax helpers, which compare |x| as integers.
inline float abs_bits_to_f32(std::uint32_t bits) noexcept {
  if (bits >= 0x7f800000u) return __builtin_nanf("");
  float r;
  __builtin_memcpy(&r, &bits, sizeof r);
  return r;
}
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
#if defined(MICROATTN_INTRIN_AVX512) && defined(__AVX512BW__)
/// max |x[i]| over n floats, or NaN when one of them is not finite (checked on the exponent
/// bits, so -ffinite-math-only cannot drop the test).
inline float absmax_f32(const float* x, std::size_t n) noexcept {
  // |x| as bits: ordered like the values, and >= 0x7f800000 exactly for infinities and NaNs.
  const __m512i abs = _mm512_set1_epi32(0x7fffffff);
  __m512i m = _mm512_setzero_si512();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_loadu_si512(x + i), abs));
  if (i < n) {
    const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1u);
    m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_maskz_loadu_epi32(k, x + i), abs));
  }
  return abs_bits_to_f32(_mm512_reduce_max_epu32(m));
}
/// q[i] = (x[i] * inv rounded to nearest, ties to even, saturated to int8) xor flip, for n
/// floats (|x[i] * inv| <= 127.5 gives -127 .. 127).
inline void quantize_f32_i8(const float* x, std::size_t n, float inv, signed char* q,
                            unsigned char flip) noexcept {
  const __m512 s = _mm512_set1_ps(inv);
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i r = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i), s),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm_xor_si128(_mm512_cvtsepi32_epi8(r), f));
  }
  if (i < n) {
    const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512i r = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), s),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_mask_storeu_epi8(q + i, k, _mm_xor_si128(_mm512_cvtsepi32_epi8(r), f));
  }
}
/// 4 weight rows of 16 columns, row r in 128-bit lane r, as the 16 columns' 4-byte groups:
/// byte 4c + r of the result is row r, column c (the operand order of vpdpbusd).
inline __m512i rows4_to_k4_i8x64(__m512i rows) noexcept {
  const __m512i lanes = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i bytes =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(lanes, rows), bytes);
}
/// rows4_to_k4_i8x64 of the 4 rows of 16 bytes at p, p + ld, p + 2 ld, p + 3 ld.
inline __m512i load_k4_i8x64(const signed char* p, std::size_t ld) noexcept {
  __m512i v;
  if (ld == 16) {
    v = _mm512_loadu_si512(p);
  } else {
    v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + ld)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * ld)), 2);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 3 * ld)), 3);
  }
  return rows4_to_k4_i8x64(v);
}
#endif
#if defined(MICROATTN_INTRIN_AVX512) && defined(__AVX512BW__)
/// 16 columns of 64 bytes each (column c at p + c ld: an [out][in] weight's rows) as 16
/// groups: byte 4c + j of r[g] is column c's byte 4g + j (a 16 x 16 transpose of 4-byte words).
inline void cols16_to_k4_i8x64(const signed char* p, std::size_t ld, __m512i (&r)[16]) noexcept {
  __m512 t[16];
  for (std::size_t c = 0; c < 16; ++c) t[c] = _mm512_castsi512_ps(_mm512_loadu_si512(p + c * ld));
  transpose_f32x16(t);
  for (std::size_t g = 0; g < 16; ++g) r[g] = _mm512_castps_si512(t[g]);
}
#endif
#if defined(MICROATTN_INTRIN_AVX512) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define MICROATTN_INTRIN_AVX512VNNI 1
/// acc[i] += u[4i] s[4i] + ... + u[4i+3] s[4i+3], u unsigned and s signed bytes (vpdpbusd: the
/// four products are summed exactly into the int32 lane).
inline __m512i dpbusd_i32x16(__m512i acc, __m512i u, __m512i s) noexcept {
  return _mm512_dpbusd_epi32(acc, u, s);
}
/// The int32 sums of an MR x (16 NV) micro-tile of the integer GEMM into sums[i][16 v ..]: the
/// sum over `groups` groups g of row i's 4 unsigned bytes at arow[i] + 4 g times the 64 signed
/// bytes at pack + (g NV + v) 64 (16 columns' groups of 4). In registers of the intrinsics' own
/// type, in a frame of its own, stored once: kept in xsimd batches, or inlined into the caller,
/// GCC 12 copies every accumulator (and stores it) once per step.
template <std::size_t MR, std::size_t NV>
MICROATTN_NOINLINE inline void qd8_tile_vnni(std::size_t groups,
                                             const signed char* const (&arow)[MR],
                                             const signed char* pack,
                                             std::int32_t (&sums)[MR][NV * 16]) noexcept {
  __m512i acc[MR][NV];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_si512();
  for (std::size_t g = 0; g < groups; ++g, pack += NV * 64) {
    __m512i b[NV];
#pragma GCC unroll 64
    for (std::size_t v = 0; v < NV; ++v) b[v] = _mm512_loadu_si512(pack + v * 64);
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i) {
      std::int32_t w;
      __builtin_memcpy(&w, arow[i] + 4 * g, sizeof w);
      const __m512i a = _mm512_set1_epi32(w);
#pragma GCC unroll 64
      for (std::size_t v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbusd_epi32(acc[i][v], a, b[v]);
    }
  }
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t v = 0; v < NV; ++v) _mm512_storeu_si512(sums[i] + v * 16, acc[i][v]);
}
#endif
#if defined(MICROATTN_INTRIN_AVX2)
/// absmax_f32 on AVX2: max |x[i]| over n floats, or NaN when one of them is not finite (on the
/// exponent bits, as the AVX-512 one). The tail goes through a zeroed copy.
inline float absmax_f32x8(const float* x, std::size_t n) noexcept {
  const __m256i abs = _mm256_set1_epi32(0x7fffffff);
  __m256i m = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    m = _mm256_max_epu32(
        m, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), abs));
  if (i < n) {
    alignas(32) float t[8] = {};
    __builtin_memcpy(t, x + i, (n - i) * sizeof(float));
    m = _mm256_max_epu32(m,
                         _mm256_and_si256(_mm256_load_si256(reinterpret_cast<__m256i*>(t)), abs));
  }
  __m128i h = _mm_max_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0x4e));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0xb1));
  return abs_bits_to_f32(static_cast<std::uint32_t>(_mm_cvtsi128_si32(h)));
}
/// quantize_f32_i8 on AVX2: q[i] = (x[i] * inv rounded to nearest, ties to even, clamped to
/// -127 .. 127) xor flip, for n floats.
inline void quantize_f32x8_i8(const float* x, std::size_t n, float inv, signed char* q,
                              unsigned char flip) noexcept {
  const __m256 s = _mm256_set1_ps(inv);
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
  auto eight = [&](const float* p) {
    const __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(p), s),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i v = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvttps_epi32(r), lo), hi);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return _mm_xor_si128(_mm_packs_epi16(w, w), f);  // the 8 bytes in the low half
  };
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), eight(x + i));
  if (i < n) {
    alignas(32) float t[8] = {};
    alignas(16) signed char b[16];
    __builtin_memcpy(t, x + i, (n - i) * sizeof(float));
    _mm_store_si128(reinterpret_cast<__m128i*>(b), eight(t));
    __builtin_memcpy(q + i, b, n - i);
  }
}
#endif
#if defined(MICROATTN_INTRIN_SSSE3)
/// 4 rows of 16 bytes (row r at p + r ld) as the 16 columns' groups of 4: byte 4c + r of
/// o[c / 4] is row r, column c (two rounds of byte and word interleaves).
inline void rows4_to_k4_i8x16(const signed char* p, std::size_t ld, __m128i (&o)[4]) noexcept {
  auto row = [&](std::size_t r) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + r * ld));
  };
  const __m128i r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3);
  const __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1);
  const __m128i t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
  o[0] = _mm_unpacklo_epi16(t0, t2);
  o[1] = _mm_unpackhi_epi16(t0, t2);
  o[2] = _mm_unpacklo_epi16(t1, t3);
  o[3] = _mm_unpackhi_epi16(t1, t3);
}
/// The x86 integer vectors of the vpmaddubsw kernels below, by width in bytes: 16 (SSSE3) or
/// 32 (AVX2). dot4(acc, ub, sa): acc (int32 lanes) plus, per lane, the 4 products of the
/// unsigned bytes ub = |b| and the signed bytes sa = a with b's sign (pmaddubsw's pair sums,
/// at most 2 x 128 x 127, cannot saturate int16; pmaddwd adds the pairs into int32 lanes; with
/// AVX-VNNI one vpdpbusd does both). a in -127 .. 127, so negating it cannot overflow, and
/// b = -128 still works.
template <std::size_t kBytes>
struct X86I8;
template <>
struct X86I8<16> {
  using V = __m128i;
  static V load(const void* p) noexcept { return _mm_loadu_si128(static_cast<const V*>(p)); }
  static void store(void* p, V v) noexcept { _mm_storeu_si128(static_cast<V*>(p), v); }
  static V zero() noexcept { return _mm_setzero_si128(); }
  static V bcast(std::int32_t x) noexcept { return _mm_set1_epi32(x); }
  static V abs(V b) noexcept { return _mm_abs_epi8(b); }
  static V sign(V a, V b) noexcept { return _mm_sign_epi8(a, b); }
  static V dot4(V acc, V ub, V sa) noexcept {
    return _mm_add_epi32(acc, _mm_madd_epi16(_mm_maddubs_epi16(ub, sa), _mm_set1_epi16(1)));
  }
  /// Vector v of 16 columns' groups (rows4_to_k4_i8x16's o): o[v].
  static V quads(const __m128i (&o)[4], std::size_t v) noexcept { return o[v]; }
  static std::int32_t hsum(V v) noexcept {
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(v, _mm_shuffle_epi32(v, 0xb1)));
  }
};
#endif
#if defined(MICROATTN_INTRIN_AVX2)
template <>
struct X86I8<32> {
  using V = __m256i;
  static V load(const void* p) noexcept { return _mm256_loadu_si256(static_cast<const V*>(p)); }
  static void store(void* p, V v) noexcept { _mm256_storeu_si256(static_cast<V*>(p), v); }
  static V zero() noexcept { return _mm256_setzero_si256(); }
  static V bcast(std::int32_t x) noexcept { return _mm256_set1_epi32(x); }
  static V abs(V b) noexcept { return _mm256_abs_epi8(b); }
  static V sign(V a, V b) noexcept { return _mm256_sign_epi8(a, b); }
  static V dot4(V acc, V ub, V sa) noexcept {
#if defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, ub, sa);
#else
    return _mm256_add_epi32(acc,
                            _mm256_madd_epi16(_mm256_maddubs_epi16(ub, sa), _mm256_set1_epi16(1)));
#endif
  }
  static V quads(const __m128i (&o)[4], std::size_t v) noexcept {
    return _mm256_set_m128i(o[2 * v + 1], o[2 * v]);
  }
  static std::int32_t hsum(V v) noexcept {
    return X86I8<16>::hsum(
        _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
  }
};
#endif
#if defined(MICROATTN_INTRIN_SSSE3)
/// sum over k < W n of a[k] w[k] (signed bytes, a in -127 .. 127), W = X::V's bytes.
template <class X>
inline std::int32_t dot_i8(std::size_t n, const signed char* a, const signed char* w) noexcept {
  constexpr std::size_t W = sizeof(typename X::V);
  typename X::V acc = X::zero();
  for (std::size_t k = 0; k < W * n; k += W) {
    const typename X::V b = X::load(w + k);
    acc = X::dot4(acc, X::abs(b), X::sign(X::load(a + k), b));
  }
  return X::hsum(acc);
}
/// s[c] = sum over k < 4 n of a[k] w[k ld + c] for the 16 columns c (signed bytes, a in
/// -127 .. 127): 4 rows at a time interleaved into the columns' groups of 4.
template <class X>
inline void dot16_i8(std::size_t n, const signed char* a, const signed char* w, std::size_t ld,
                     std::int32_t* s) noexcept {
  constexpr std::size_t NV = 64 / sizeof(typename X::V);
  typename X::V acc[NV];
  for (std::size_t v = 0; v < NV; ++v) acc[v] = X::zero();
  for (std::size_t k = 0; k < 4 * n; k += 4) {
    __m128i t[4];
    rows4_to_k4_i8x16(w + k * ld, ld, t);
    std::int32_t x;
    __builtin_memcpy(&x, a + k, sizeof x);
    const typename X::V av = X::bcast(x);
    for (std::size_t v = 0; v < NV; ++v) {
      const typename X::V b = X::quads(t, v);
      acc[v] = X::dot4(acc[v], X::abs(b), X::sign(av, b));
    }
  }
  for (std::size_t v = 0; v < NV; ++v) X::store(s + v * sizeof(typename X::V) / 4, acc[v]);
}
/// The int32 sums of an MR x (C NV) micro-tile of the integer GEMM (C = X::V's bytes / 4
/// columns per vector) into sums[i][C v ..]: the sum over `groups` groups g of row i's 4
/// signed bytes at arow[i] + 4 g times the bytes at pack + (g NV + v) 4 C (C columns' groups
/// of 4), by X::dot4. In a frame of its own, as the AVX-512 tile.
template <class X, std::size_t MR, std::size_t NV>
MICROATTN_NOINLINE inline void qd8_tile_x86(
    std::size_t groups, const signed char* const (&arow)[MR], const signed char* pack,
    std::int32_t (&sums)[MR][NV * sizeof(typename X::V) / 4]) noexcept {
  using V = typename X::V;
  constexpr std::size_t W = sizeof(V);
  V acc[MR][NV];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t v = 0; v < NV; ++v) acc[i][v] = X::zero();
  for (std::size_t g = 0; g < groups; ++g, pack += NV * W) {
    V b[NV], ub[NV];
#pragma GCC unroll 64
    for (std::size_t v = 0; v < NV; ++v) {
      b[v] = X::load(pack + v * W);
      ub[v] = X::abs(b[v]);
    }
#pragma GCC unroll 64
    for (std::size_t i = 0; i < MR; ++i) {
      std::int32_t w;
      __builtin_memcpy(&w, arow[i] + 4 * g, sizeof w);
      const V a = X::bcast(w);
#pragma GCC unroll 64
      for (std::size_t v = 0; v < NV; ++v) acc[i][v] = X::dot4(acc[i][v], ub[v], X::sign(a, b[v]));
    }
  }
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 64
    for (std::size_t v = 0; v < NV; ++v) X::store(sums[i] + v * W / 4, acc[i][v]);
}
#endif
#if defined(MICROATTN_INTRIN_NEON)
/// The int32 sums of an MR x (4 NV) micro-tile of the integer GEMM on NEON into
/// sums[i][4 v ..]: the sum over `groups` groups g of row i's 4 signed bytes at arow[i] + 4 g
/// times the 16 signed bytes at pack + (g NV + v) 16 (4 columns' groups of 4). With FEAT_DotProd
/// one SDOT per vector and row (4 groups of a row from one load, by lane); without it (Cortex-A72,
/// A53, armv7) SMULL into int16 products and SADALP into pairwise int32 sums, two per column,
/// added at the end. In a frame of its own, as the x86 tile (GCC 12 keeps inlined accumulators in
/// memory).
#if defined(__ARM_FEATURE_DOTPROD) && defined(__aarch64__)
#define MICROATTN_INTRIN_SDOT 1
#endif
/// FEAT_I8MM (Armv8.6-A; Cortex-A510, A710, X2, Neoverse N2, V1 and later): SMMLA, a 2 x 8 by
/// 8 x 2 int8 block product into 2 x 2 int32 sums (qd8_tile_i8mm).
#if defined(__ARM_FEATURE_MATMUL_INT8) && defined(__aarch64__)
#define MICROATTN_INTRIN_I8MM 1
#endif
/// (a0 + a1, a2 + a3, b0 + b1, b2 + b3): ADDP on AArch64, two VPADDs on armv7.
inline int32x4_t pairwise_sums(int32x4_t a, int32x4_t b) noexcept {
#if defined(__aarch64__)
  return vpaddq_s32(a, b);
#else
  return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)),
                      vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
}
template <std::size_t MR, std::size_t NV>
MICROATTN_NOINLINE inline void qd8_tile_neon(std::size_t groups,
                                             const signed char* const (&arow)[MR],
                                             const signed char* pack,
                                             std::int32_t (&sums)[MR][NV * 4]) noexcept {
#if defined(MICROATTN_INTRIN_SDOT)
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
#else
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
#endif
}
#if defined(MICROATTN_INTRIN_I8MM)
/// The int32 sums of an MR x (2 NP) micro-tile of the integer GEMM with FEAT_I8MM into
/// sums[i][j]: one SMMLA per row pair and column pair and pair of groups (8 bytes of depth),
/// the rows' 8 bytes at arow[i] + 8 s (no repacking; an odd MR pairs its last row with itself)
/// against the 16 bytes at pack + (s NP + c) 16, column 2c's 8 bytes then column 2c + 1's
/// (qd8_pack_at). An odd last group: a row holds whole groups only, so each row's last 4 bytes
/// and 4 zeros, against the panel's zero pad group. NP even; in a frame of its own, as the others.
template <std::size_t MR, std::size_t NP>
MICROATTN_NOINLINE inline void qd8_tile_i8mm(std::size_t groups,
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
inline void dot16_i8(std::size_t n, const signed char* a, const signed char* w, std::size_t ld,
                     std::int32_t* s) noexcept {
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
#endif
#if defined(MICROATTN_INTRIN_NEON)
/// 4 int8 at p as 4 floats (one 32-bit load, two widening moves, one convert).
inline float32x4_t i8x4_to_f32(const signed char* p) noexcept {
  std::int32_t u;
  __builtin_memcpy(&u, p, sizeof u);
  const int8x8_t b = vreinterpret_s8_s32(vdup_n_s32(u));
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(b))));
}
/// Largest of the 4 lanes of v (a NaN lane may or may not win).
inline float hmax_f32x4(float32x4_t v) noexcept {
#if defined(__aarch64__)
  return vmaxvq_f32(v);
#else
  float32x2_t m = vpmax_f32(vget_low_f32(v), vget_high_f32(v));
  m = vpmax_f32(m, m);
  return vget_lane_f32(m, 0);
#endif
}
#endif
#if MICROATTN_HAS_MVE
/// The int32 sums of an MR x NR micro-tile of the integer GEMM on Helium into sums[i][j]: row
/// i's bytes at arow[i] (4 groups, 16 bytes, at a time) times column j's run of the packed
/// panel (runs of up to 16 bytes per column: qd8_pack_panel), one VMLADAVA (16 multiply-adds
/// into a core register) per row and column; the last run (fewer than 4 groups) by predicated
/// loads. Two columns at a time: MR x 2 sums, the row and run pointers fit the core registers
/// (all NR columns at once, GCC 12 spilled a sum and copied the others every step).
template <std::size_t MR, std::size_t NR>
MICROATTN_NOINLINE inline void qd8_tile_mve(std::size_t groups,
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
/// absmax_f32 on Helium: max |x[i]| over n floats, or NaN when one of them is not finite (on
/// the bits, as the x86 ones), 4 at a time, the tail predicated.
inline float absmax_f32_mve(const float* x, std::size_t n) noexcept {
  const uint32x4_t abs = vdupq_n_u32(0x7fffffffu);
  uint32x4_t m = vdupq_n_u32(0);
  for (std::size_t i = 0; i < n; i += 4) {
    const mve_pred16_t p = vctp32q(static_cast<std::uint32_t>(n - i));
    const uint32x4_t v = vldrwq_z_u32(reinterpret_cast<const std::uint32_t*>(x + i), p);
    m = vmaxq_u32(m, vandq_u32(v, abs));
  }
  return abs_bits_to_f32(vmaxvq_u32(0, m));
}
/// quantize_f32_i8 on Helium: q[i] = (x[i] * inv rounded to nearest, ties to even (VCVTN),
/// clamped to -127 .. 127) xor flip, 4 at a time (a narrowing byte store), the tail predicated.
inline void quantize_f32_i8_mve(const float* x, std::size_t n, float inv, signed char* q,
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
inline void dequant4_mve(float sa, const float* sb, int32x4_t s, const float* bias,
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
inline int8x16_t panel16_column_i8_mve(const signed char* p) noexcept {
  const uint8x16_t off = vmulq_n_u8(vidupq_n_u8(0, 1), 16);
  return vldrbq_gather_offset_s8(p, off);
}
/// s[c] = sum over k < n of a[k] w[k ld + c] for the 16 columns c: per k four widening loads
/// (VLDRB.S32) and four VMLAs by the row's value from a core register.
inline void dot16_i8_mve(std::size_t n, const signed char* a, const signed char* w, std::size_t ld,
                         std::int32_t* s) noexcept {
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
inline std::int32_t dot_i8_mve(std::size_t n, const signed char* a, const signed char* w) noexcept {
  std::int32_t acc = 0;
  std::size_t k = 0;
  for (; k + 16 <= n; k += 16) acc = vmladavaq_s8(acc, vldrbq_s8(a + k), vldrbq_s8(w + k));
  if (k < n) {
    const mve_pred16_t p = vctp8q(static_cast<std::uint32_t>(n - k));
    acc = vmladavaq_s8(acc, vldrbq_z_s8(a + k, p), vldrbq_z_s8(w + k, p));
  }
  return acc;
}
#endif
#if defined(MICROATTN_INTRIN_DSP)
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
#endif
}  // namespace intrin

/// Portable scalar kernels: what Cortex-M4/M7 ship, and the float oracle SIMD kernels are
/// tested against.
struct ScalarArch {
  static constexpr const char* name() noexcept { return "scalar"; }
};

#if MICROATTN_HAS_MVE
/// Helium (MVE-F) kernels: 128-bit vectors of four floats in eight Q registers. xsimd has no
/// arch for it; internal/vec.hpp's Vec<MveArch> is written on arm_mve.h.
struct MveArch {
  static constexpr const char* name() noexcept { return "mve"; }
  static constexpr unsigned alignment() noexcept { return 16; }
};
#endif

#if MICROATTN_HAS_XSIMD
/// The architecture the compiler flags (-march, -mfpu, ...) select, fixed at build time.
using DefaultArch = xsimd::default_arch;
#elif MICROATTN_HAS_MVE
using DefaultArch = MveArch;
#else
using DefaultArch = ScalarArch;
#endif

/// Name of the architecture the kernels of Arch run on ("scalar", "fma3+avx2", "neon64", ...).
template <class Arch = DefaultArch>
constexpr const char* arch_name() noexcept {
  return Arch::name();
}

}  // namespace microattn

MICROATTN_GCC12_AVX512_WARNINGS_ON
