// SPDX-License-Identifier: Apache-2.0
// f32_exp and f32_exp2: error budget over the whole softmax input range, special values.
#include <cmath>
#include <cstdint>
#include <limits>

#include "microattn/kernels/f32_exp.hpp"
#include "support/check.hpp"
#include "support/unit.hpp"

namespace {

using microattn::internal::Vec;
using microattn_test::from_bits;

// Every Stride-th float of the range: every one of the 1.1e9 in one build per CI run (the host
// preset's; MICROATTN_TEST_EXP_EXHAUSTIVE), a sample in the others (MICROATTN_TEST_EXP_STRIDE:
// every 61st, every 997th under the sanitizers), under emulators (MICROATTN_TEST_QUICK) and on
// Cortex-M (MICROATTN_TINY_TEST).
#if defined(MICROATTN_TINY_TEST)
constexpr std::uint32_t kStride = 100003;
#elif defined(MICROATTN_TEST_EXP_STRIDE)
constexpr std::uint32_t kStride = MICROATTN_TEST_EXP_STRIDE;
#else
constexpr std::uint32_t kStride = microattn_test::kQuick ? 61 : 1;
#endif

// The function under test: f32_exp2 when Base2 (f32_softmax_exp2 when also Softmax), f32_exp
// otherwise.
template <class A, bool Base2, bool Softmax = false>
typename Vec<A>::type under_test(typename Vec<A>::type x) {
  if (Softmax) return microattn::kernels::f32_softmax_exp2<A>(x);
  if (Base2) return microattn::kernels::f32_exp2<A>(x);
  return microattn::kernels::f32_exp<A>(x);
}

// Error in ulps of the correctly rounded result (ulp = spacing of floats at f(x)) over every
// Stride-th float in [lo, 0]; the double exp / exp2 is the oracle (its error is ~2^-29 of a
// float ulp).
template <class A, bool Base2, bool Softmax = false>
void max_ulp_error(float lo, double& worst, float& worst_x, std::uint32_t stride = kStride) {
  using V = Vec<A>;
  constexpr std::size_t W = V::kWidth;
  const std::uint32_t first = 0x80000000u;  // -0.0
  const std::uint32_t last = microattn_test::to_bits(lo);
  alignas(64) float in[W], out[W];
  std::uint32_t u = first;
  bool done = false;
  while (!done) {
    for (std::size_t i = 0; i < W; ++i) {
      in[i] = from_bits(u);
      if (last - u < stride)
        done = true;
      else if (!done)
        u += stride;
    }
    V::storeu(out, under_test<A, Base2, Softmax>(V::loadu(in)));
    for (std::size_t i = 0; i < W; ++i) {
      const double e =
          Base2 ? std::exp2(static_cast<double>(in[i])) : std::exp(static_cast<double>(in[i]));
      const float ef = static_cast<float>(e);
      const double ulp = static_cast<double>(std::nextafter(ef, 1e30f)) - ef;
      const double err = std::fabs(out[i] - e) / ulp;
      if (!(err <= worst)) worst = err, worst_x = in[i];
    }
  }
}

// At most 2 ulp (the budget) over [lo, 0], on every arch.
// (Softmax: f32_softmax_exp2 is f32_exp2 plus an exact x * 0, which F32Exp2 sweeps whole, so
// every 61st float.)
template <bool Base2, bool Softmax = false>
void expect_two_ulp_over(float lo) {
  microattn_test::for_each_arch([lo](auto arch) {
    using A = decltype(arch);
    double worst = 0;
    float worst_x = 0;
    const std::uint32_t stride = Softmax && kStride < 61 ? 61 : kStride;
    max_ulp_error<A, Base2, Softmax>(lo, worst, worst_x, stride);
    EXPECT_LE(worst, 2.0) << A::name() << " worst at x=" << worst_x;
  });
}

// f(xs[t]) in every lane within rel_tol * |want[t]| of want[t] (rel_tol 0: exactly), every arch.
template <bool Base2, std::size_t N, bool Softmax = false>
void expect_values(const float (&xs)[N], const float (&want)[N], double rel_tol) {
  microattn_test::for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using V = Vec<A>;
    constexpr std::size_t W = V::kWidth;
    for (std::size_t t = 0; t < N; ++t) {
      alignas(64) float in[W], out[W];
      for (std::size_t i = 0; i < W; ++i) in[i] = xs[t];
      V::storeu(out, under_test<A, Base2, Softmax>(V::loadu(in)));
      for (std::size_t i = 0; i < W; ++i) {
        if (std::isnan(want[t]))
          EXPECT_TRUE(std::isnan(out[i])) << A::name() << " x=" << xs[t] << " gave " << out[i];
        else
          EXPECT_NEAR(out[i], want[t], std::fabs(want[t]) * rel_tol) << A::name() << " x=" << xs[t];
      }
    }
  });
}

// Softmax inputs never exceed 0, so the result never exceeds 1, and it never goes up as x
// goes down (a sweep over (lo, 0] that crosses every range-reduction boundary).
template <bool Base2, bool Softmax = false>
void expect_monotone_and_bounded(float lo) {
  microattn_test::for_each_arch([lo](auto arch) {
    using A = decltype(arch);
    float prev = 1.0f;
    bool ok = true;
    for (float x = 0.0f; x > lo; x -= 0.00731f) {
      alignas(64) float out[Vec<A>::kWidth];
      Vec<A>::storeu(out, under_test<A, Base2, Softmax>(Vec<A>::set1(x)));
      ok = ok && out[0] <= prev && out[0] <= 1.0f;
      prev = out[0];
    }
    EXPECT_TRUE(ok) << A::name();
  });
}

TEST(F32Exp, AtMostTwoUlpOverSoftmaxRange) { expect_two_ulp_over<false>(-87.3f); }

TEST(F32Exp, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float xs[] = {0.0f, -0.0f, -inf, -87.34f, -88.0f, -1000.0f, -1e30f, 1.0f, 88.0f};
  const float want[] = {1.0f,         1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 2.71828182845904523536f,
                        1.6516363e38f};
  expect_values<false>(xs, want, 2.5e-7);
}

TEST(F32Exp, MonotoneAndBounded) { expect_monotone_and_bounded<false>(-87.0f); }

// The attention kernels' softmax runs in base 2 (scores pre-multiplied by log2 e): its range
// [-87.3, 0] in base e is [-126, 0] in base 2, about 1.07e9 floats.
TEST(F32Exp2, AtMostTwoUlpOverSoftmaxRange) { expect_two_ulp_over<true>(-126.0f); }

TEST(F32Exp2, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  // Exact powers of two where r = 0; zero at and below -126.5 (masked scores are -inf).
  const float xs[] = {0.0f,    -0.0f,   -1.0f,   -126.0f, 3.0f, 127.0f,
                      -126.5f, -127.0f, -200.0f, -1e30f,  -inf};
  const float want[] = {1.0f, 1.0f, 0.5f, 1.17549435e-38f, 8.0f, 1.70141183e38f, 0.0f, 0.0f,
                        0.0f, 0.0f, 0.0f};
  expect_values<true>(xs, want, 0.0);
  // Between -126.5 and -126 the result is below FLT_MIN but never above it.
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    alignas(64) float out[Vec<A>::kWidth];
    Vec<A>::storeu(out, microattn::kernels::f32_exp2<A>(Vec<A>::set1(-126.3f)));
    EXPECT_LE(out[0], 1.17549435e-38f) << A::name();
    EXPECT_GE(out[0], 0.0f) << A::name();
  });
  // The scalar form runs the same steps: 2^-0.5 within one float ulp (6e-8).
  EXPECT_NEAR(microattn::kernels::f32_exp2_scalar(-0.5f), 0.70710678f, 6e-8f);
}

TEST(F32Exp2, MonotoneAndBounded) { expect_monotone_and_bounded<true>(-127.0f); }

// The softmax's weight (f32_softmax_exp2): the same 2 ulp over [-126, 0].
TEST(F32SoftmaxExp2, AtMostTwoUlpOverSoftmaxRange) { expect_two_ulp_over<true, true>(-126.0f); }

// NaN for every non-finite x (infinite or NaN scores poison their row on every arch; not
// under -ffinite-math-only, which lets the compiler drop the NaN FMA), 0 for finite x far
// below -126, exact powers of two where r = 0.
TEST(F32SoftmaxExp2, SpecialValues) {
  const float big = std::numeric_limits<float>::max();
  const float xs[] = {0.0f, -0.0f, -1.0f, -126.0f, -200.0f, -1e30f, -big};
  const float want[] = {1.0f, 1.0f, 0.5f, 1.17549435e-38f, 0.0f, 0.0f, 0.0f};
  expect_values<true, 7, true>(xs, want, 0.0);
#if !(defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float nxs[] = {-inf, inf, nan};
  const float nwant[] = {nan, nan, nan};
  expect_values<true, 3, true>(nxs, nwant, 0.0);
#endif
}

// Every 7 Stride-th float below -126, down to -FLT_MAX: the weight is in [0, 2^-126]. (Any
// other form of the exponential must keep it: rounding n by adding 1.5 * 2^23, as f32_exp2
// does, works on a grid coarser than 1 once |x| passes 2^22, so r = x - n is no longer small
// there and only the clamp to -127 keeps 2^r 2^n at 0.)
TEST(F32SoftmaxExp2, TinyForEveryFiniteXBelowTheRange) {
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    using V = Vec<A>;
    constexpr std::size_t W = V::kWidth;
    const float lo = -126.0f;
    std::uint32_t u = microattn_test::to_bits(lo);
    alignas(64) float in[W], out[W];
    std::size_t bad = 0;
    float bad_x = 0, bad_y = 0;
    const std::uint32_t stride = kStride * 7;
    while (u < 0xFF800000u) {  // -inf excluded
      for (std::size_t i = 0; i < W; ++i) {
        in[i] = from_bits(u);
        u = 0xFF800000u - u > stride ? u + stride : 0xFF7FFFFFu;  // -FLT_MAX last
      }
      V::storeu(out, microattn::kernels::f32_softmax_exp2<A>(V::loadu(in)));
      for (std::size_t i = 0; i < W; ++i)
        if (!(out[i] >= 0.0f && out[i] <= 1.17549435e-38f)) ++bad, bad_x = in[i], bad_y = out[i];
      if (in[W - 1] == -std::numeric_limits<float>::max()) break;
    }
    EXPECT_EQ(bad, 0u) << A::name() << " e.g. x=" << bad_x << " gave " << bad_y;
  });
}

TEST(F32SoftmaxExp2, MonotoneAndBounded) { expect_monotone_and_bounded<true, true>(-127.0f); }

}  // namespace
