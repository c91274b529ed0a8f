// SPDX-License-Identifier: Apache-2.0
// Shared test helpers: tolerances and the arches every kernel is checked on.
#pragma once

#include <cmath>
#include <cstddef>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/internal/vec.hpp"

namespace microattn_test {

/// Unit roundoff of float, 2^-24.
constexpr double kEps = 5.9604644775390625e-08;

/// Tolerance, relative to the output magnitude, for a float result whose longest chain of
/// rounded operations has `chain` steps (a dot product of length n is n steps). Each step can
/// add at most eps relative error to the magnitude, so eps * chain bounds the error linearly;
/// we allow 4x that for exp's 1 ulp, the 1/l normalisation and rounding of the inputs.
/// Measured: the worst of ~490 random core and layer cases reaches 0.09 of it (AVX2+FMA).
inline double tolerance(double chain, double magnitude) {
  return 4.0 * kEps * chain * (magnitude > 1.0 ? magnitude : 1.0);
}

inline double max_abs(const double* p, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::fabs(p[i]) > m ? std::fabs(p[i]) : m;
  return m;
}

/// max |a[i] - ref[i]|.
inline double max_diff(const float* a, const double* ref, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - ref[i]);
    if (!(d <= m)) m = d;  // NaN propagates as a failure
  }
  return m;
}

/// Calls f.template operator()<Arch>() for the default (SIMD) arch and, when it differs, the
/// scalar arch: every test runs both the shipped SIMD kernels and the Cortex-M kernels.
template <class F>
void for_each_arch(F&& f) {
  f(microattn::DefaultArch{});
  if (!std::is_same<microattn::DefaultArch, microattn::ScalarArch>::value) f(microattn::ScalarArch{});
}

/// Token count of the tests that span two GEMM row blocks in one call: the arch's row block
/// kMC + 7 (271 on AVX-512, 71 scalar).
template <class A>
constexpr std::size_t long_t() {
  return microattn::internal::Tiles<A>::kMC + 7;
}
/// The largest long_t of the arches for_each_arch runs, to size shared pools.
constexpr std::size_t kLongT = microattn::internal::max_size(long_t<microattn::DefaultArch>(),
                                                             long_t<microattn::ScalarArch>());

}  // namespace microattn_test
