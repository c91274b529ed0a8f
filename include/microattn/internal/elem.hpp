// SPDX-License-Identifier: Apache-2.0
// microattn internal: what a stored element type means to the kernels and the KV cache. The
// axis a storage dtype extends: an fp16 or int4 cache, or weights of another dtype, add one
// specialisation of Elem here (and a widening load in Vec::load_elem); the kernels and the
// cache ask Elem, never the type itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "microattn/format.hpp"
#include "microattn/internal/vec.hpp"

namespace microattn {
namespace internal {

/// Element type E of stored weights or cache rows:
///   kScaled: a stored e means scale * e, with one fp32 scale per group (a weight matrix's output
///            column, a cache row); false: e is the value;
///   encode(x, n, dst, stride): n floats into elements dst[0], dst[stride], ...; returns the
///            group's scale (1 when unscaled);
///   decode(e, scale): the float e stands for.
template <class E>
struct Elem;

template <>
struct Elem<float> {
  static constexpr bool kScaled = false;
  static float encode(const float* x, std::size_t n, float* dst, std::size_t stride) noexcept {
    for (std::size_t i = 0; i < n; ++i) dst[i * stride] = x[i];
    return 1.0f;
  }
  static float decode(float e, float) noexcept { return e; }
};

/// 16-bit floats (half.hpp): unscaled, rounded to nearest even by encode, exact in decode.
template <class H>
struct HalfElem {
  static constexpr bool kScaled = false;
  static float encode(const float* x, std::size_t n, H* dst, std::size_t stride) noexcept {
    for (std::size_t i = 0; i < n; ++i) dst[i * stride] = round(x[i]);
    return 1.0f;
  }
  static float decode(H e, float) noexcept { return to_float(e); }

 private:
  static H round(float v) noexcept {
    if constexpr (std::is_same<H, f16>::value)
      return to_f16(v);
    else
      return to_bf16(v);
  }
};
template <>
struct Elem<f16> : HalfElem<f16> {};
template <>
struct Elem<bf16> : HalfElem<bf16> {};

/// v (|v| <= 127 and a rounding) rounded to nearest, ties to even, clamped to -127 .. 127, without
/// branches: adding 1.5 * 2^23 rounds v to an integer in the FPU's default mode. Opaque values, so
/// that -ffast-math can neither fold the sum and the difference away nor fuse v's product into
/// the sum (which would round the unrounded product).
inline std::int8_t round_to_int8(float v) noexcept {
  using V = Vec<ScalarArch>;
  constexpr float kMagic = 12582912.0f;
  std::int32_t r = static_cast<std::int32_t>(V::opaque(V::opaque(v) + kMagic) - kMagic);
  r = r > 127 ? 127 : r;
  return static_cast<std::int8_t>(r < -127 ? -127 : r);
}

/// Symmetric int8 (never -128) with one scale per group: max |x| / 127, NaN when the group holds
/// a NaN or an infinity (its scores or outputs then become NaN, as with fp32 values). A value is
/// x · (127 / max |x|) rounded to nearest, ties to even (the run-time quantiser of integer
/// compute's rule, kernels::qd8_quantize_row): one division per group, not per value.
template <>
struct Elem<std::int8_t> {
  static constexpr bool kScaled = true;
  /// max |x| over n values, NaN when one is not finite.
  static float absmax(const float* x, std::size_t n) noexcept {
    float amax = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
      if (!finite_bits(x[i])) return __builtin_nanf("");
      const float a = x[i] < 0.0f ? -x[i] : x[i];
      amax = a > amax ? a : amax;
    }
    return amax;
  }
  /// The scale of a group whose largest |x| is amax: amax / 127, one float down when 127 times
  /// it is not a finite float (dequantising the largest value would give inf: FLT_MAX stays
  /// finite through encode, decode and encode again). NaN stays NaN.
  static float scale(float amax) noexcept {
    float s = amax / opaque_divisor(127.0f);
    if (finite_bits(s) && !finite_bits(opaque_divisor(s) * 127.0f)) {
      std::uint32_t u;
      std::memcpy(&u, &s, sizeof u);
      --u;
      std::memcpy(&s, &u, sizeof u);
    }
    return s;
  }
  static float encode(const float* x, std::size_t n, std::int8_t* dst,
                      std::size_t stride) noexcept {
    const float amax = absmax(x, n);
    const float s = scale(amax);
    // All zero, or not finite (tested on the bits: -ffinite-math-only drops a NaN test): zeros,
    // and the scale 0 or NaN.
    if (!finite_bits(amax) || !(amax > 0.0f)) {
      for (std::size_t i = 0; i < n; ++i) dst[i * stride] = 0;
      return s;
    }
    const float inv = 127.0f / opaque_divisor(amax);
    if (!finite_bits(inv)) {  // max |x| so small that 127 / max overflows: divide each value
      for (std::size_t i = 0; i < n; ++i) dst[i * stride] = quantize_value(x[i], s);
      return s;
    }
    for (std::size_t i = 0; i < n; ++i) dst[i * stride] = round_to_int8(x[i] * inv);
    return s;
  }
  static float decode(std::int8_t e, float scale) noexcept { return scale * static_cast<float>(e); }
};

}  // namespace internal
}  // namespace microattn
