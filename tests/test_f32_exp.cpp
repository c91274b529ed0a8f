// f32_exp: error budget over the whole softmax input range, and its special values.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "microattn/kernels/f32_exp.hpp"
#include "support/check.hpp"
#include "support/unit.hpp"

namespace {

using microattn::internal::Vec;

float bits_to_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Every Stride-th float in [-87.3, 0]: every one of the 1.1e9 on native host builds, a sample
// under emulators and sanitizers (MICROATTN_TEST_QUICK) and on Cortex-M (MICROATTN_TINY_TEST).
#if defined(MICROATTN_TINY_TEST)
constexpr std::uint32_t kStride = 100003;
#elif defined(MICROATTN_TEST_QUICK)
constexpr std::uint32_t kStride = 61;
#else
constexpr std::uint32_t kStride = 1;
#endif

// Error in ulps of the correctly rounded result (ulp = spacing of floats at exp(x)); the double
// exp is the oracle (its error is ~2^-29 of a float ulp).
template <class A>
void max_ulp_error(double& worst, float& worst_x) {
  using V = Vec<A>;
  constexpr std::size_t W = V::kWidth;
  const std::uint32_t first = 0x80000000u;  // -0.0
  std::uint32_t last;
  const float lo = -87.3f;
  std::memcpy(&last, &lo, sizeof last);
  alignas(64) float in[W], out[W];
  std::uint32_t u = first;
  bool done = false;
  while (!done) {
    for (std::size_t i = 0; i < W; ++i) {
      in[i] = bits_to_float(u);
      if (last - u < kStride) done = true; else if (!done) u += kStride;
    }
    V::storeu(out, microattn::kernels::f32_exp<A>(V::loadu(in)));
    for (std::size_t i = 0; i < W; ++i) {
      const double e = std::exp(static_cast<double>(in[i]));
      const float ef = static_cast<float>(e);
      const double ulp = static_cast<double>(std::nextafter(ef, 1e30f)) - ef;
      const double err = std::fabs(out[i] - e) / ulp;
      if (!(err <= worst)) worst = err, worst_x = in[i];
    }
  }
}

TEST(F32Exp, AtMostTwoUlpOverSoftmaxRange) {
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    double worst = 0;
    float worst_x = 0;
    max_ulp_error<A>(worst, worst_x);
    EXPECT_LE(worst, 2.0) << A::name() << " worst at x=" << worst_x;
  });
}

TEST(F32Exp, SpecialValues) {
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    using V = Vec<A>;
    constexpr std::size_t W = V::kWidth;
    const float inf = std::numeric_limits<float>::infinity();
    const float xs[] = {0.0f, -0.0f, -inf, -87.34f, -88.0f, -1000.0f, -1e30f, 1.0f, 88.0f};
    const float want[] = {1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 2.71828182845904523536f,
                          1.6516363e38f};
    for (std::size_t t = 0; t < sizeof xs / sizeof xs[0]; ++t) {
      alignas(64) float in[W], out[W];
      for (std::size_t i = 0; i < W; ++i) in[i] = xs[t];
      V::storeu(out, microattn::kernels::f32_exp<A>(V::loadu(in)));
      for (std::size_t i = 0; i < W; ++i)
        EXPECT_NEAR(out[i], want[t], std::fabs(want[t]) * 2.5e-7) << A::name() << " x=" << xs[t];
    }
  });
}

// Softmax inputs never exceed 0, so the result never exceeds 1, and it never goes up as x
// goes down (checked on a sweep that crosses every range-reduction boundary).
TEST(F32Exp, MonotoneAndBounded) {
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    float prev = 1.0f;
    bool ok = true;
    for (float x = 0.0f; x > -87.0f; x -= 0.00731f) {
      alignas(64) float out[Vec<A>::kWidth];
      Vec<A>::storeu(out, microattn::kernels::f32_exp<A>(Vec<A>::set1(x)));
      ok = ok && out[0] <= prev && out[0] <= 1.0f;
      prev = out[0];
    }
    EXPECT_TRUE(ok) << A::name();
  });
}

}  // namespace
