// SPDX-License-Identifier: Apache-2.0
// 16-bit float storage (half.hpp): every one of the 65,536 binary16 and bfloat16 patterns
// decoded against a double-precision reading of its fields and encoded back to itself; every
// midpoint between two neighbouring finite values rounded to the even one, a float either side
// of it to that side; overflow, underflow and NaN; the format entries (format::F16, BF16) and
// Elem's encode and decode. Bits are compared as integers: the same test under -ffast-math.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "microattn/format.hpp"
#include "microattn/half.hpp"
#include "microattn/internal/elem.hpp"
#include "support/unit.hpp"

namespace {

using microattn::bf16;
using microattn::f16;
using microattn::internal::f32_bits;
using microattn::internal::f32_from_bits;

// The float binary16 pattern h means, from its fields in double precision (not NaN or inf).
float f16_reference(std::uint32_t h) {
  const std::uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double mag =
      e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + double(m) / 1024.0, int(e) - 15);
  return static_cast<float>((h & 0x8000) ? -mag : mag);
}

bool is_nan_bits(std::uint32_t u) { return (u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu); }

TEST(Half, F16DecodesEveryPatternExactly) {
  std::size_t wrong = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const std::uint32_t got = f32_bits(microattn::to_float(f16{std::uint16_t(h)}));
    const std::uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
    if (e == 0x1F) {
      const bool ok = m ? is_nan_bits(got) && ((got >> 13) & 0x3FF) == m
                        : got == (((h & 0x8000u) << 16) | 0x7F800000u);
      wrong += ok ? 0 : 1;
    } else {
      wrong += got == f32_bits(f16_reference(h)) ? 0 : 1;
    }
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(Half, F16EncodesEveryValueBackToItself) {
  std::size_t wrong = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF)) continue;  // NaN: below
    wrong += microattn::to_f16(microattn::to_float(f16{std::uint16_t(h)})).bits == h ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0u);
}

// Between neighbours lo and lo + 1 (both finite, either sign): the midpoint goes to the even
// pattern, the floats just above and below it to their side.
TEST(Half, F16RoundsToNearestEven) {
  std::size_t wrong = 0;
  for (std::uint32_t lo = 0; lo < 0x7BFF; ++lo) {
    const double a = microattn::to_float(f16{std::uint16_t(lo)});
    const double b = microattn::to_float(f16{std::uint16_t(lo + 1)});
    const float mid = static_cast<float>((a + b) / 2);  // exact: 12 significant bits
    const std::uint32_t even = (lo & 1) ? lo + 1 : lo;
    for (const std::uint32_t sign : {0u, 0x8000u}) {
      const float s = sign ? -1.0f : 1.0f;
      wrong += microattn::to_f16(s * mid).bits == (sign | even) ? 0 : 1;
      wrong += microattn::to_f16(s * std::nextafter(mid, 1e9f)).bits == (sign | (lo + 1)) ? 0 : 1;
      wrong += microattn::to_f16(s * std::nextafter(mid, 0.0f)).bits == (sign | lo) ? 0 : 1;
    }
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(Half, F16OverflowUnderflowNan) {
  EXPECT_EQ(microattn::to_f16(65504.0f).bits, 0x7BFFu);
  EXPECT_EQ(microattn::to_f16(65520.0f).bits, 0x7C00u);  // the midpoint: to even, infinity
  EXPECT_EQ(microattn::to_f16(std::nextafter(65520.0f, 0.0f)).bits, 0x7BFFu);
  EXPECT_EQ(microattn::to_f16(-1e30f).bits, 0xFC00u);
  EXPECT_EQ(microattn::to_f16(f32_from_bits(0x7F800000u)).bits, 0x7C00u);
  EXPECT_EQ(microattn::to_f16(std::ldexp(1.0f, -25)).bits, 0u);  // half the smallest: to even
  EXPECT_EQ(microattn::to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)).bits, 1u);
  EXPECT_EQ(microattn::to_f16(-1e-30f).bits, 0x8000u);
  const std::uint16_t nan = microattn::to_f16(f32_from_bits(0x7F800001u)).bits;
  EXPECT_EQ(nan & 0x7E00u, 0x7E00u);  // a quiet NaN
  EXPECT_TRUE(is_nan_bits(f32_bits(microattn::to_float(f16{nan}))));
}

TEST(Half, Bf16EveryPatternAndRounding) {
  std::size_t wrong = 0;
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = microattn::to_float(bf16{std::uint16_t(b)});
    wrong += f32_bits(f) == b << 16 ? 0 : 1;
    if ((b & 0x7F80) == 0x7F80 && (b & 0x7F)) continue;  // NaN
    wrong += microattn::to_bf16(f).bits == b ? 0 : 1;
  }
  for (std::uint32_t lo = 0; lo < 0x7F7F; ++lo) {
    const float mid = f32_from_bits((lo << 16) | 0x8000u);  // halfway to lo + 1
    const std::uint32_t even = (lo & 1) ? lo + 1 : lo;
    wrong += microattn::to_bf16(mid).bits == even ? 0 : 1;
    wrong += microattn::to_bf16(f32_from_bits((lo << 16) | 0x8001u)).bits == lo + 1 ? 0 : 1;
    wrong += microattn::to_bf16(f32_from_bits((lo << 16) | 0x7FFFu)).bits == lo ? 0 : 1;
    wrong += microattn::to_bf16(-mid).bits == (0x8000u | even) ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(microattn::to_bf16(f32_from_bits(0x7F7F8000u)).bits, 0x7F80u);  // to even: inf
  EXPECT_EQ(microattn::to_bf16(f32_from_bits(0x7F7F7FFFu)).bits, 0x7F7Fu);
  EXPECT_EQ(microattn::to_bf16(f32_from_bits(0xFF800001u)).bits & 0xFFC0u, 0xFFC0u);  // quiet
}

TEST(Half, FormatEntriesAndElem) {
  using F16 = microattn::FormatTraits<microattn::format::F16>;
  using BF16 = microattn::FormatTraits<microattn::format::BF16>;
  EXPECT_EQ(F16::kDesc.code(), 0x1002u);
  EXPECT_EQ(BF16::kDesc.code(), 0x1003u);
  EXPECT_FALSE(F16::kScaled);
  EXPECT_EQ(F16::bytes(7), 14u);
  EXPECT_EQ(F16::scale_count(64, 8), 0u);
  EXPECT_EQ(f32_bits(F16::widen(f16{0x3C00}, 5.0f)), f32_bits(1.0f));
  EXPECT_EQ(f32_bits(BF16::widen(bf16{0xC040}, 5.0f)), f32_bits(-3.0f));
  const float x[3] = {1.0f / 3.0f, -2.5f, 70000.0f};
  f16 h[6] = {};
  EXPECT_EQ(microattn::internal::Elem<f16>::encode(x, 3, h, 2), 1.0f);
  EXPECT_EQ(h[0].bits, 0x3555u);  // 1/3 rounded to nearest
  EXPECT_EQ(h[2].bits, 0xC100u);
  EXPECT_EQ(h[4].bits, 0x7C00u);
  EXPECT_EQ(h[1].bits, 0u);  // the stride's gaps untouched
  EXPECT_EQ(f32_bits(microattn::internal::Elem<f16>::decode(h[2], 9.0f)), f32_bits(-2.5f));
  bf16 b[3] = {};
  (void)microattn::internal::Elem<bf16>::encode(x, 3, b, 1);
  EXPECT_EQ(b[0].bits, 0x3EABu);  // 0x3EAAAAAB rounded
  EXPECT_EQ(f32_bits(microattn::internal::Elem<bf16>::decode(b[1], 0.0f)), f32_bits(-2.5f));
}

}  // namespace
