// SPDX-License-Identifier: Apache-2.0
// microattn vocabulary: 16-bit float storage. f16 (IEEE 754 binary16) and bf16 (bfloat16) are
// distinct trivial types over the 16 stored bits, so that arrays of them can be const data in
// flash and a format entry can name each; the conversions are integer bit manipulation (the
// same bits on every target, with or without a hardware converter, under -ffast-math too).
#pragma once

#include <cstdint>
#include <cstring>

namespace microattn {

/// An IEEE 754 binary16 value as stored: 1 sign, 5 exponent, 10 mantissa bits.
struct f16 {
  std::uint16_t bits;
};
/// A bfloat16 value as stored: the top 16 bits of an fp32 (1 sign, 8 exponent, 7 mantissa).
struct bf16 {
  std::uint16_t bits;
};

namespace internal {
inline std::uint32_t f32_bits(float f) noexcept {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float f32_from_bits(std::uint32_t u) noexcept {
  float f = 0.0f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace internal

/// The float h stands for, exactly (subnormals normalised; infinities; a NaN's payload kept).
inline float to_float(f16 h) noexcept {
  const std::uint32_t sign = std::uint32_t{h.bits & 0x8000u} << 16;
  const std::uint32_t e = (h.bits >> 10) & 0x1Fu;
  std::uint32_t m = h.bits & 0x3FFu;
  if (e == 0x1F) return internal::f32_from_bits(sign | 0x7F800000u | (m << 13));
  if (e != 0) return internal::f32_from_bits(sign | ((e + 112) << 23) | (m << 13));
  if (m == 0) return internal::f32_from_bits(sign);
  std::uint32_t exp = 113;  // a subnormal m * 2^-24: shifted until its leading bit is bit 10
  while (!(m & 0x400u)) {
    m <<= 1;
    --exp;
  }
  return internal::f32_from_bits(sign | (exp << 23) | ((m & 0x3FFu) << 13));
}

/// The float b stands for, exactly.
inline float to_float(bf16 b) noexcept {
  return internal::f32_from_bits(std::uint32_t{b.bits} << 16);
}

/// f rounded to binary16: to nearest, ties to even; beyond the largest finite value (65504)
/// by half a step or more, infinity; below the smallest subnormal's half, zero (signed); a NaN
/// stays a quiet NaN.
inline f16 to_f16(float f) noexcept {
  const std::uint32_t u = internal::f32_bits(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u)
    return f16{static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu))};
  if (a >= 0x477FF000u) return f16{static_cast<std::uint16_t>(sign | 0x7C00u)};  // >= 65520
  if (a < 0x38800000u) {                    // below 2^-14: a subnormal (or zero) of 2^-24 steps
    if (a < 0x33000000u) return f16{sign};  // below 2^-25, half the smallest subnormal
    const std::uint32_t shift = 126 - (a >> 23), mant = (a & 0x7FFFFFu) | 0x800000u;
    std::uint32_t q = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // (to 0x400: the smallest normal)
    return f16{static_cast<std::uint16_t>(sign | q)};
  }
  const std::uint32_t r = a - (112u << 23);  // the exponent rebiased, 23 mantissa bits
  return f16{static_cast<std::uint16_t>(sign | ((r + 0xFFFu + ((r >> 13) & 1u)) >> 13))};
}

/// f rounded to bfloat16: to nearest, ties to even (past the largest finite value: infinity);
/// a NaN stays a quiet NaN.
inline bf16 to_bf16(float f) noexcept {
  const std::uint32_t u = internal::f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return bf16{static_cast<std::uint16_t>((u >> 16) | 0x40u)};
  return bf16{static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16)};
}

}  // namespace microattn
