// SPDX-License-Identifier: Apache-2.0
// The build really runs the kernels it was configured for: a target can never fall back to
// scalar silently (MICROATTN_EXPECT_ARCH is set per preset/toolchain).
#include <cstdint>
#include <cstring>
#include <limits>

#include "microattn/arch.hpp"
#include "microattn/internal/vec.hpp"
#include "support/unit.hpp"

TEST(Arch, SelectedArchIsTheExpectedOne) {
#if defined(MICROATTN_EXPECT_ARCH)
  EXPECT_EQ(std::strcmp(microattn::arch_name<>(), MICROATTN_EXPECT_ARCH), 0)
      << "built for " << microattn::arch_name<>() << ", expected " << MICROATTN_EXPECT_ARCH;
#endif
#if defined(MICROATTN_FORCE_SCALAR)
  EXPECT_EQ(std::strcmp(microattn::arch_name<>(), "scalar"), 0) << microattn::arch_name<>();
#endif
  EXPECT_EQ(std::strcmp(microattn::ScalarArch::name(), "scalar"), 0);
}

TEST(Arch, VectorWidthMatchesTheArch) {
  const std::size_t w = microattn::internal::Vec<microattn::DefaultArch>::kWidth;
  if (std::strcmp(microattn::arch_name<>(), "scalar") == 0) {
    EXPECT_EQ(w, 1u);
  } else {
    EXPECT_GE(w, 4u) << microattn::arch_name<>();
  }
}

namespace {
using VecD = microattn::internal::Vec<microattn::DefaultArch>;
constexpr std::size_t kW = VecD::kWidth;

// Vec::select_lt(a, b, t, f) against the scalar compare, lane by lane, over values where a
// shortcut would go wrong: signed zeros, infinities, NaN of either sign, equal values, the
// largest floats (a - b overflows) and values one ulp apart. (armv7 computes it from the sign
// of a - b, see vec.hpp; denormals, and values within 2^-126 of each other, are left out: NEON
// flushes them.)
TEST(Vec, SelectLtIsTheCompareLaneByLane) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float big = std::numeric_limits<float>::max();
#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__  // -ffast-math: no inf, no NaN
  const float vals[] = {-big, -87.33654f, -1.0f, -0.0f, 0.0f, 1e-30f, 1.0f, 1.0000001f, 3.0f, big};
  (void)inf, (void)nan;
#else
  const float vals[] = {-inf, -big,       -87.33654f, -1.0f, -0.0f, 0.0f, 1e-30f,
                        1.0f, 1.0000001f, 3.0f,       big,   inf,   nan,  -nan};
#endif
  const std::size_t n = sizeof vals / sizeof vals[0];
  alignas(64) float a[kW], b[kW], out[kW];
  std::size_t pairs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      // Lane k holds (vals[i], vals[j]) in lane 0 and other pairs of the set in the rest, so
      // a lane mixed up with its neighbour shows too.
      for (std::size_t k = 0; k < kW; ++k) {
        a[k] = vals[(i + k) % n];
        b[k] = vals[(j + 3 * k) % n];
      }
      const auto r =
          VecD::select_lt(VecD::loadu(a), VecD::loadu(b), VecD::set1(1.0f), VecD::set1(0.0f));
      VecD::storeu(out, r);
      for (std::size_t k = 0; k < kW; ++k) {
        EXPECT_EQ(out[k], a[k] < b[k] ? 1.0f : 0.0f) << a[k] << " < " << b[k] << " lane " << k;
        ++pairs;
      }
    }
  }
  EXPECT_EQ(pairs, n * n * kW);
}

// Vec::fnma(a, b, c) is c - a b, operands in that order: with a b exact in float (a small
// integer times ln2_hi's 16 significant bits, as in f32_exp's reduction), fused or not, the
// result is c - a b rounded once.
TEST(Vec, FnmaIsCMinusAB) {
  const float as[] = {3.0f, -7.0f, 128.0f, 0.0f};
  const float bs[] = {0.693145751953125f, -1.5f};
  const float cs[] = {1.5f, -87.3f, 1e-3f, 100.0f};
  for (float x : as)
    for (float y : bs)
      for (float z : cs) {
        alignas(64) float out[kW];
        VecD::storeu(out, VecD::fnma(VecD::set1(x), VecD::set1(y), VecD::set1(z)));
        const float want = static_cast<float>(static_cast<double>(z) -
                                              static_cast<double>(x) * static_cast<double>(y));
        for (std::size_t k = 0; k < kW; ++k)
          EXPECT_EQ(out[k], want) << z << " - " << x << " * " << y;
      }
}

// Vec::fma_scalar(a, b, c) (the GEMM micro-kernel's FMA; Helium's VFMA with a core-register
// operand) is a b + c, lane by lane, the same bits as fma with a broadcast a. With a b exact
// (a small integer times a 16-bit-mantissa constant) the result is a b + c rounded once, fused
// or not; lanes of b and c differ so a swapped operand or lane shows.
TEST(Vec, FmaScalarIsABPlusC) {
  const float as[] = {3.0f, -7.0f, 128.0f, 0.0f};
  alignas(64) float b[kW], c[kW], out[kW], ref[kW];
  for (float x : as) {
    for (std::size_t k = 0; k < kW; ++k) {
      b[k] = 0.693145751953125f * static_cast<float>(k + 1);
      c[k] = 1.5f - 11.25f * static_cast<float>(k);
    }
    VecD::storeu(out, VecD::fma_scalar(x, VecD::loadu(b), VecD::loadu(c)));
    VecD::storeu(ref, VecD::fma(VecD::set1(x), VecD::loadu(b), VecD::loadu(c)));
    for (std::size_t k = 0; k < kW; ++k) {
      const float want = static_cast<float>(static_cast<double>(x) * static_cast<double>(b[k]) +
                                            static_cast<double>(c[k]));
      EXPECT_EQ(out[k], want) << x << " * " << b[k] << " + " << c[k] << " lane " << k;
      EXPECT_EQ(out[k], ref[k]) << "lane " << k;
    }
  }
}

// Vec::load_elem(int8) widens kW int8 values to floats in lane order (Helium: one VLDRB.S32),
// over the whole int8 range.
TEST(Vec, LoadElemWidensInt8) {
  std::int8_t q[256 + kW];
  for (int i = 0; i < 256 + static_cast<int>(kW); ++i) q[i] = static_cast<std::int8_t>(i - 128);
  alignas(64) float out[kW];
  for (std::size_t i = 0; i < 256; i += 1) {
    VecD::storeu(out, VecD::load_elem(q + i));
    for (std::size_t k = 0; k < kW; ++k)
      EXPECT_EQ(out[k], static_cast<float>(q[i + k])) << "offset " << i << " lane " << k;
  }
}

// Vec::hmax and Vec::hsum read every lane: the largest value in each lane position in turn,
// and a sum of distinct powers of two (exact in any order).
TEST(Vec, HmaxAndHsumSeeEveryLane) {
  alignas(64) float v[kW];
  for (std::size_t top = 0; top < kW; ++top) {
    for (std::size_t k = 0; k < kW; ++k) v[k] = k == top ? 5.0f : -3.0f - static_cast<float>(k);
    EXPECT_EQ(VecD::hmax(VecD::loadu(v)), 5.0f) << "max in lane " << top;
  }
  float want = 0.0f;
  for (std::size_t k = 0; k < kW; ++k) {
    v[k] = static_cast<float>(1u << k);
    want += v[k];
  }
  EXPECT_EQ(VecD::hsum(VecD::loadu(v)), want);
}
}  // namespace
