// SPDX-License-Identifier: Apache-2.0
// microattn kernels: the integer (qd8) kernels on x86 (names: kernels/qd8/generic.hpp).
// AVX-512 VNNI: vpdpbusd on unsigned A bytes (a quantised row holds q + 128: kFlip 0x80) and
// the weight column sums to take the offset off again. AVX2 and SSSE3: pmaddubsw / pmaddwd on
// |b| and a with b's sign, no offset (vpdpbusd where AVX-VNNI has it); AVX-512 without VNNI
// runs the 32-byte ones. AVX-512BW and AVX2 also quantise and take the absmax of a row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/arch.hpp"
#include "microattn/internal/intrin_x86.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/qd8/generic.hpp"
#include "microattn/layout.hpp"

// Inlined into a user's function, these reach GCC 12's AVX-512 warnings (arch.hpp).
MICROATTN_GCC12_AVX512_WARNINGS_OFF

namespace microattn {
namespace kernels {
namespace detail {
#if defined(MICROATTN_INTRIN_AVX512BW)
/// max |x[i]| over n floats, or NaN when one of them is not finite (checked on the exponent
/// bits, so -ffinite-math-only cannot drop the test).
inline float f32_absmax__avx512(const float* x, std::size_t n) noexcept {
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
inline void f32_qs8_quantize__avx512(const float* x, std::size_t n, float inv, signed char* q,
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
/// 16 columns of 64 bytes each (column c at p + c ld: an [out][in] weight's rows) as 16
/// groups: byte 4c + j of r[g] is column c's byte 4g + j (a 16 x 16 transpose of 4-byte words).
inline void cols16_to_k4_i8x64(const signed char* p, std::size_t ld, __m512i (&r)[16]) noexcept {
  __m512 t[16];
  for (std::size_t c = 0; c < 16; ++c) t[c] = _mm512_castsi512_ps(_mm512_loadu_si512(p + c * ld));
  intrin::transpose_f32x16(t);
  for (std::size_t g = 0; g < 16; ++g) r[g] = _mm512_castps_si512(t[g]);
}
#endif
#if defined(MICROATTN_INTRIN_AVX512VNNI)
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
MICROATTN_NOINLINE inline void qd8_tile_c4__avx512vnni(std::size_t groups,
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
/// qd8_pack_panel's VNNI part (qd8_pack_c4__avx512vnni) for a whole panel (nr == kNR): the first
/// whole groups by byte transposes, of 4 rows of 16 columns (the row-major layouts) or of 16
/// columns of 64 bytes
/// ([out][in]), with the column sums; returns how many groups it packed.
template <class Arch>
inline std::size_t qd8_pack_c4__avx512vnni(const std::int8_t* b, std::size_t ldb,
                                           WeightLayout layout, std::size_t pc, std::size_t kc,
                                           std::size_t jc, std::int8_t* pack,
                                           std::int32_t* colsum) noexcept {
  using I = xsimd::batch<std::int32_t, Arch>;
  constexpr std::size_t NR = internal::Tiles<Arch>::kNR, NV = NR / 16, G = kQd8Group;
  const I ones(0x01010101);
  I cs[NV];
  for (std::size_t v = 0; v < NV; ++v) cs[v] = I(0);
  auto put = [&](std::size_t g, std::size_t v, const I& t) {
    t.store_unaligned(reinterpret_cast<std::int32_t*>(pack + (g * NR + v * 16) * G));
    cs[v] = I(dpbusd_i32x16(cs[v], ones, t));
  };
  const bool out_in = layout == WeightLayout::kOutIn;
  const std::size_t g0 = out_in ? kc / 64 * 16 : kc / G;
  for (std::size_t g = 0; g < g0; g += out_in ? 16 : 1) {
    for (std::size_t v = 0; v < NV; ++v) {
      const std::size_t n = jc + v * 16, k = pc + g * G;
      if (out_in) {
        typename I::register_type r[16];
        cols16_to_k4_i8x64(b + n * ldb + k, ldb, r);
        for (std::size_t h = 0; h < 16; ++h) put(g + h, v, I(r[h]));
      } else if (layout == WeightLayout::kInOut) {
        put(g, v, I(load_k4_i8x64(b + k * ldb + n, ldb)));
      } else {
        put(g, v, I(load_k4_i8x64(b + (n / kWeightPanel) * ldb + k * kWeightPanel, kWeightPanel)));
      }
    }
  }
  for (std::size_t v = 0; v < NV; ++v) cs[v].store_unaligned(colsum + v * 16);
  return g0;
}
/// qd8_dot on VNNI: 64 bytes at a time, then the tail (unsigned a bytes: a[k] ^ 0x80).
template <class Arch>
inline std::int32_t qd8_dot__avx512vnni(std::size_t K, const std::int8_t* a,
                                        const std::int8_t* w) noexcept {
  std::int32_t acc = 0;
  std::size_t k = 0;
  using I = xsimd::batch<std::int32_t, Arch>;
  I s(0), cs(0);
  const I ones(0x01010101);
  for (; k + 64 <= K; k += 64) {
    const I av = I::load_unaligned(reinterpret_cast<const std::int32_t*>(a + k));
    const I wv = I::load_unaligned(reinterpret_cast<const std::int32_t*>(w + k));
    s = I(dpbusd_i32x16(s, av, wv));
    cs = I(dpbusd_i32x16(cs, ones, wv));
  }
#if XSIMD_VERSION_MAJOR >= 9
  acc = xsimd::reduce_add(s - cs * I(128));  // xsimd 9 renamed hadd
#else
  acc = xsimd::hadd(s - cs * I(128));
#endif
  for (; k < K; ++k) acc += std::int32_t{static_cast<std::int8_t>(a[k] ^ 0x80)} * w[k];
  return acc;
}
/// qd8_dot16 on VNNI for 16 columns: 4 rows at a time, then the last K % 4.
template <class Arch>
inline void qd8_dot16__avx512vnni(std::size_t K, const std::int8_t* a, const std::int8_t* w,
                                  std::size_t ld, std::int32_t* s) noexcept {
  std::size_t k = 0;
  using I = xsimd::batch<std::int32_t, Arch>;
  I acc(0), cs(0);
  const I ones(0x01010101);
  for (; k + 4 <= K; k += 4) {
    std::int32_t x;
    std::memcpy(&x, a + k, sizeof x);
    const I t(load_k4_i8x64(w + k * ld, ld));
    acc = I(dpbusd_i32x16(acc, I(x), t));
    cs = I(dpbusd_i32x16(cs, ones, t));
  }
  (acc - cs * I(128)).store_unaligned(s);
  // The last K % 4 rows, counted from 0 (docs/compiler-notes.md: a -Werror warning).
  for (std::size_t r = 0; r < K % 4; ++r)
    for (std::size_t c = 0; c < 16; ++c)
      s[c] += std::int32_t{static_cast<std::int8_t>(a[k + r] ^ 0x80)} * w[(k + r) * ld + c];
}
#endif
#if defined(MICROATTN_INTRIN_AVX2)
/// f32_absmax__avx512 on AVX2: max |x[i]| over n floats, or NaN when one of them is not finite (on
/// the exponent bits, as the AVX-512 one). The tail goes through a zeroed copy.
inline float f32_absmax__avx2(const float* x, std::size_t n) noexcept {
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
/// f32_qs8_quantize__avx512 on AVX2: q[i] = (x[i] * inv rounded to nearest, ties to even, clamped
/// to -127 .. 127) xor flip, for n floats.
inline void f32_qs8_quantize__avx2(const float* x, std::size_t n, float inv, signed char* q,
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
/// The x86 integer vectors of the vpmaddubsw kernels below, by width in bytes (a byte-vector
/// width chosen by the integer ISA, independently of the float Vec's arch: AVX-512 without VNNI
/// runs these on 32 bytes, so a kernel-private detail of this file, not a second Vec): 16 (SSSE3)
/// or 32 (AVX2). dot4(acc, ub, sa): acc (int32 lanes) plus, per lane, the 4 products of the
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
#if defined(MICROATTN_INTRIN_AVXVNNI)
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
inline std::int32_t qd8_dot__maddubs(std::size_t n, const signed char* a,
                                     const signed char* w) noexcept {
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
inline void qd8_dot16__maddubs(std::size_t n, const signed char* a, const signed char* w,
                               std::size_t ld, std::int32_t* s) noexcept {
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
MICROATTN_NOINLINE inline void qd8_tile_c4__maddubs(
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
#if defined(MICROATTN_INTRIN_AVX2)
/// qd8_pack_panel's AVX2 part for a whole panel (nr == kNR): the first kc / 4 groups, by byte
/// interleaves of 4 rows of 16 columns (the row-major layouts) or a word per column and group
/// ([out][in]); returns how many groups it packed. (No column sums: AVX2 has no offset.)
template <class Arch>
inline std::size_t qd8_pack_c4__avx2(const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                                     std::size_t pc, std::size_t kc, std::size_t jc,
                                     std::int8_t* pack) noexcept {
  constexpr std::size_t NR = internal::Tiles<Arch>::kNR, G = kQd8Group;
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
        rows4_to_k4_i8x16(b + k * ldb + n, ldb, t);
      else
        rows4_to_k4_i8x16(b + (n / kWeightPanel) * ldb + k * kWeightPanel, kWeightPanel, t);
      std::memcpy(d, t, sizeof t);
    }
  }
  return groups;
}
#endif
}  // namespace detail

#if defined(MICROATTN_INTRIN_AVX512VNNI)
template <class Arch>
constexpr bool kQd8Runs<Qd8Isa::kAvx512Vnni, Arch> = internal::kIsAvx512<Arch>;
/// AVX-512 VNNI: a quantised row's bytes are q + 128 (vpdpbusd takes unsigned bytes for A), so
/// the sums subtract 128 times the weight column sums (the packing's colsum).
template <>
struct Qd8Kernels<Qd8Isa::kAvx512Vnni> : Qd8Kernels<Qd8Isa::kGeneric> {
  static constexpr unsigned char kFlip = 0x80;
  static constexpr std::size_t kColumns = 16;
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static float absmax(std::size_t K, const float* x) noexcept {
    return detail::f32_absmax__avx512(x, K);
  }
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static void quantize(std::size_t K, const float* x, float inv,
                                               std::int8_t* q) noexcept {
    detail::f32_qs8_quantize__avx512(x, K, inv, q, kFlip);
  }
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static std::size_t pack(const std::int8_t* b, std::size_t ldb,
                                                  WeightLayout layout, std::size_t pc,
                                                  std::size_t kc, std::size_t jc, std::int8_t* pack,
                                                  std::int32_t* colsum) noexcept {
    return detail::qd8_pack_c4__avx512vnni<Arch>(b, ldb, layout, pc, kc, jc, pack, colsum);
  }
  template <class Arch, std::size_t MR, class Out>
  MICROATTN_ALWAYS_INLINE static void sums(std::size_t groups, const std::int8_t* const (&arow)[MR],
                                           const std::int8_t* pack, Out& out) noexcept {
    constexpr std::size_t NR = internal::Tiles<Arch>::kNR;
    detail::qd8_sums_of_tile<Arch, MR, 64>(out, [&](auto& sums) {
      detail::qd8_tile_c4__avx512vnni<MR, NR / 16>(groups, arow, pack, sums);
    });
  }
  template <class Arch>
  static std::int32_t dot(std::size_t K, const std::int8_t* a, const std::int8_t* w) noexcept {
    return detail::qd8_dot__avx512vnni<Arch>(K, a, w);
  }
  template <class Arch>
  static void dot16(std::size_t K, const std::int8_t* a, const std::int8_t* w, std::size_t ld,
                    std::size_t nc, std::int32_t* s) noexcept {
    if (nc == 16) return detail::qd8_dot16__avx512vnni<Arch>(K, a, w, ld, s);
    Qd8Kernels<Qd8Isa::kGeneric>::dot16<Arch>(K, a, w, ld, nc, s);
  }
};
#endif

#if defined(MICROATTN_INTRIN_SSSE3)
/// pmaddubsw on kBytes-byte vectors (detail::X86I8): 32 (AVX2, and AVX-512 without VNNI) or 16
/// (the 4-float SSE archs). No offset: kFlip 0.
template <std::size_t kBytes>
struct Qd8KernelsMaddubs : Qd8Kernels<Qd8Isa::kGeneric> {
  using X = detail::X86I8<kBytes>;
  static constexpr std::size_t W = kBytes;
  static constexpr std::size_t kColumns = kBytes == 32 ? 16 : 4;
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static float absmax(std::size_t K, const float* x) noexcept {
#if defined(MICROATTN_INTRIN_AVX512BW)
    if constexpr (internal::kIsAvx512<Arch>) return detail::f32_absmax__avx512(x, K);
#endif
#if defined(MICROATTN_INTRIN_AVX2)
    if constexpr (kBytes == 32) return detail::f32_absmax__avx2(x, K);
#endif
    return detail::f32_absmax__generic(x, K);
  }
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static void quantize(std::size_t K, const float* x, float inv,
                                               std::int8_t* q) noexcept {
#if defined(MICROATTN_INTRIN_AVX512BW)
    if constexpr (internal::kIsAvx512<Arch>)
      return detail::f32_qs8_quantize__avx512(x, K, inv, q, 0);
#endif
#if defined(MICROATTN_INTRIN_AVX2)
    if constexpr (kBytes == 32) return detail::f32_qs8_quantize__avx2(x, K, inv, q, 0);
#endif
    detail::f32_qs8_quantize__generic<0>(x, K, inv, q);
  }
  template <class Arch>
  MICROATTN_ALWAYS_INLINE static std::size_t pack(const std::int8_t* b, std::size_t ldb,
                                                  WeightLayout layout, std::size_t pc,
                                                  std::size_t kc, std::size_t jc, std::int8_t* pack,
                                                  std::int32_t*) noexcept {
#if defined(MICROATTN_INTRIN_AVX2)
    if constexpr (kBytes == 32)
      return detail::qd8_pack_c4__avx2<Arch>(b, ldb, layout, pc, kc, jc, pack);
#endif
    (void)b, (void)ldb, (void)layout, (void)pc, (void)kc, (void)jc, (void)pack;
    return 0;
  }
  template <class Arch, std::size_t MR, class Out>
  MICROATTN_ALWAYS_INLINE static void sums(std::size_t groups, const std::int8_t* const (&arow)[MR],
                                           const std::int8_t* pack, Out& out) noexcept {
    constexpr std::size_t NR = internal::Tiles<Arch>::kNR;
    detail::qd8_sums_of_tile<Arch, MR, W>(out, [&](auto& sums) {
      detail::qd8_tile_c4__maddubs<X, MR, NR * 4 / W>(groups, arow, pack, sums);
    });
  }
  template <class Arch>
  static std::int32_t dot(std::size_t K, const std::int8_t* a, const std::int8_t* w) noexcept {
    const std::int32_t acc = detail::qd8_dot__maddubs<X>(K / W, a, w);
    return detail::qd8_dot_from__generic<Arch>(K / W * W, K, a, w, acc);
  }
  template <class Arch>
  static void dot16(std::size_t K, const std::int8_t* a, const std::int8_t* w, std::size_t ld,
                    std::size_t nc, std::int32_t* s) noexcept {
    std::size_t k = 0;
    for (std::size_t c = 0; c < nc; ++c) s[c] = 0;
    if (nc == 16) {
      detail::qd8_dot16__maddubs<X>(K / 4, a, w, ld, s);
      k = K / 4 * 4;
    }
    detail::qd8_dot16_from__generic<Arch>(k, K, a, w, ld, nc, s);
  }
};
template <class Arch>
constexpr bool kQd8Runs<Qd8Isa::kSsse3, Arch> = internal::kIsX86x4<Arch>;
template <>
struct Qd8Kernels<Qd8Isa::kSsse3> : Qd8KernelsMaddubs<16> {};
#endif
#if defined(MICROATTN_INTRIN_AVX2)
template <class Arch>
constexpr bool kQd8Runs<Qd8Isa::kAvx2, Arch> =
    internal::kIsX86x8<Arch> || internal::kIsAvx512<Arch>;
template <>
struct Qd8Kernels<Qd8Isa::kAvx2> : Qd8KernelsMaddubs<32> {};
#endif

}  // namespace kernels
}  // namespace microattn

MICROATTN_GCC12_AVX512_WARNINGS_ON
