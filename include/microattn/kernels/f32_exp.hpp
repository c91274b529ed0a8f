// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: vectorised exponentials for the softmax (exp, and the base-2 one the
// attention kernels use).
#pragma once

#include "microattn/internal/vec.hpp"

MICROATTN_GCC12_AVX512_WARNINGS_OFF

namespace microattn {
namespace kernels {

// The three exponentials below are always inlined (MICROATTN_ALWAYS_INLINE): each is the body
// of a loop over a row, which GCC 12 with xsimd 14 left out of line (docs/compiler-notes.md).

/// exp(x) lane by lane, written once for every arch (the scalar path runs the same steps).
///
/// Domain: accurate on [-87.33654, 88] (results are normal floats there); returns exactly 0 for
/// x below -87.33654 (ln FLT_MIN) and for -inf, so masked scores contribute nothing; inputs
/// above 88 are clamped to 88. Softmax only feeds it x - max <= 0.
///
/// Method: n = round(x / ln 2), r = x - n ln 2 in two steps (ln2_hi has 16 significant bits, so
/// n * ln2_hi is exact for |n| <= 128 with or without FMA: the two-constant Cody-Waite
/// reduction), exp(r) by its degree-7 Taylor polynomial on |r| <= ln(2)/2, then times 2^n
/// built from the exponent bits.
/// Error: truncation r^8/8! <= 5.3e-9 relative (0.05 ulp); measured over every float in
/// [-87.3, 0] by tests/test_f32_exp.cpp: at most 1 ulp on AVX2+FMA and scalar (the test
/// asserts <= 2 ulp, the budget).
template <class Arch>
MICROATTN_ALWAYS_INLINE inline typename internal::Vec<Arch>::type f32_exp(
    typename internal::Vec<Arch>::type x) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  const T lo = V::set1(-87.33654f);
  const T hi = V::set1(88.0f);
  // 1.5 * 2^23 + 127: adding it rounds x/ln2 to an integer n held in the low mantissa bits,
  // already biased by 127, so shifting those bits up by 23 gives the float 2^n.
  const T magic = V::set1(12582912.0f + 127.0f);
  const T xc = V::min(V::max(x, lo), hi);
  // z and n are opaque so that -ffast-math cannot fold n = (x log2 e + magic) - magic into
  // x log2 e (no rounding) or reassociate r = x - n ln 2 (Vec::opaque emits no instruction).
  const T z = V::opaque(V::fma(xc, V::set1(1.44269504088896341f), magic));
  const T n = V::opaque(z - magic);
  // Opaque too: -ffast-math would fold the two-constant (Cody-Waite) reduction below into one
  // multiply by ln2_hi + ln2_lo, losing the low part (docs/compiler-notes.md).
  T r = V::opaque(V::fnma(n, V::set1(0.693145751953125f), xc));  // ln2_hi = 0x3F317200
  r = V::fnma(n, V::set1(1.42860682030941723212e-6f), r);        // ln2_lo = ln 2 - ln2_hi
  // exp(r) = 1 + r + r^2 (1/2! + r (1/3! + r (1/4! + r (1/5! + r (1/6! + r / 7!)))))
  T p = V::fma(V::set1(1.0f / 5040.0f), r, V::set1(1.0f / 720.0f));
  p = V::fma(p, r, V::set1(1.0f / 120.0f));
  p = V::fma(p, r, V::set1(1.0f / 24.0f));
  p = V::fma(p, r, V::set1(1.0f / 6.0f));
  p = V::fma(p, r, V::set1(0.5f));
  const T r2 = r * r;
  p = V::fma(p, r2, r) + V::set1(1.0f);
  // p opaque: -ffast-math would distribute the scaling over the sum (p' 2^n + 2^n), whose first
  // term is subnormal near x = ln FLT_MIN and flushed to zero (x = -86.99 gave 2^-125, 4.9e6 ulp
  // off, on AVX2 under -Ofast).
  const T result = V::opaque(p) * V::shl23_bits(z);
  return V::select_lt(x, lo, V::zero(), result);
}

/// Scalar exp with exactly the steps of the vector one.
inline float f32_exp_scalar(float x) noexcept { return f32_exp<ScalarArch>(x); }

/// log2(e): the softmax kernels multiply the queries by scale * kLog2e once, so every score is
/// in base 2 and exp(s - m) = 2^(s' - m') costs f32_exp2, which needs no ln 2 reduction.
constexpr float kLog2e = 1.44269504088896341f;

/// 2^x lane by lane: the softmax's exponential (inputs x = s' - m' <= 0, base-2 scores).
///
/// Domain: accurate on [-126, 127] (results are normal floats there); for x below -126 the
/// result lies in [0, 2^-126] and is exactly 0 from x <= -126.5 on, -inf included, so masked
/// scores contribute nothing.
///
/// Method: n = round(x) and r = x - n are exact (no Cody-Waite constants: the argument is
/// already in base 2), 2^r on |r| <= 1/2 by a degree-6 polynomial fitted for least relative
/// error (iteratively reweighted least squares on Chebyshev nodes; 1.9e-9 with exact
/// coefficients, 1.6e-8 = 0.26 ulp with these float ones), then times 2^n built from the
/// exponent bits. 12 vector operations against f32_exp's 18 (with its clamps and select).
/// Error: measured over every float in [-126, 0] by tests/test_f32_exp.cpp: at most 0.95 ulp
/// with FMA (AVX2 and the contracted scalar path), 1.23 ulp with separate multiply and add (the
/// test asserts <= 2 ulp, the budget for the softmax's exponential).
template <class Arch>
MICROATTN_ALWAYS_INLINE inline typename internal::Vec<Arch>::type f32_exp2(
    typename internal::Vec<Arch>::type x) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  // max(x, -127) first: -inf becomes -127, whose 2^n has a zero exponent field (+0).
  const T xc = V::clamp_below(x, V::set1(-127.0f));
  // 1.5 * 2^23 + 127: adding it rounds x to the integer n held in the low mantissa bits,
  // biased by 127, so shifting those bits up by 23 gives the float 2^n (0 for n = -127).
  const T magic = V::set1(12582912.0f + 127.0f);
  // Opaque z and n: -ffast-math would otherwise fold xc - ((xc + magic) - magic) to 0, or
  // reassociate it into (xc - z) + magic, and 2^x would lose its fraction
  // (docs/compiler-notes.md). No instruction is emitted for it.
  const T z = V::opaque(xc + magic);
  const T r = xc - V::opaque(z - magic);  // exact: |r| <= 1/2
  T p = V::fma(V::set1(1.534581243e-04f), r, V::set1(1.339993090e-03f));
  p = V::fma(p, r, V::set1(9.618489072e-03f));
  p = V::fma(p, r, V::set1(5.550328642e-02f));
  p = V::fma(p, r, V::set1(2.402264625e-01f));
  p = V::fma(p, r, V::set1(6.931471825e-01f));
  p = V::fma(p, r, V::set1(1.0f));
  return V::opaque(p) * V::shl23_bits(z);  // opaque as in f32_exp
}

/// Scalar 2^x with exactly the steps of the vector one (the per-row rescale factors).
inline float f32_exp2_scalar(float x) noexcept { return f32_exp2<ScalarArch>(x); }

/// The softmax weight 2^x of a base-2 score x = s - max: f32_exp2 for finite x, and NaN for any
/// non-finite x (a NaN score, or an infinite one: s = +inf makes x = inf - inf, s = -inf makes
/// x = -inf). So a row that sees a NaN or infinite score is NaN on every arch, whichever way
/// the arch's max treats NaN (x86 drops it, NEON keeps it, and xsimd 14 swapped the operand
/// order). PyTorch gives NaN for NaN and +inf scores and weight 0 for -inf; microattn never
/// forms -inf scores for masking (masks are applied by key index), so a -inf score can only
/// come from non-finite inputs or overflow, and NaN is the honest answer. Costs one FMA;
/// under -ffinite-math-only the compiler removes it (non-finite inputs are then undefined).
template <class Arch>
MICROATTN_ALWAYS_INLINE inline typename internal::Vec<Arch>::type f32_softmax_exp2(
    typename internal::Vec<Arch>::type x) noexcept {
  using V = internal::Vec<Arch>;
  return V::fma(x, V::zero(), f32_exp2<Arch>(x));  // x * 0 is 0, or NaN for inf and NaN
}

}  // namespace kernels
}  // namespace microattn

MICROATTN_GCC12_AVX512_WARNINGS_ON
