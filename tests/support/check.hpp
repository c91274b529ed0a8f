// SPDX-License-Identifier: Apache-2.0
// Shared test helpers: tolerances, comparisons (max_diff, rel_err, same_bits), bit-level float
// tests, output sentinels, the quick switch, and the arches every kernel is checked on. Plain
// functions on pointers: they also run on Cortex-M under the tiny runner (no heap, no iostream).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/layout.hpp"

namespace microattn_test {

/// Prints a measured quantity on hosted runs (the tiny Cortex-M runner has no stdout to spare).
template <class... A>
void report(const char* fmt, A... a) {
#if !defined(MICROATTN_TINY_TEST)
  std::printf(fmt, a...);
#else
  (void)fmt;
  (void)sizeof...(a);
#endif
}

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

inline double max_abs(const float* p, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::fabs(double(p[i])) > m ? std::fabs(double(p[i])) : m;
  return m;
}

/// max |a[i] - ref[i]|, in double.
inline double max_diff(const float* a, const double* ref, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - ref[i]);
    if (!(d <= m)) m = d;  // a NaN d is taken ...
    if (m != m) return m;  // ... and kept (a later d <= NaN is false too): NaN fails EXPECT_LE
  }
  return m;
}
/// max |a[i] - b[i]| of two float results (e.g. decode against prefill), in double.
inline double max_diff(const float* a, const float* b, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    if (!(d <= m)) m = d;  // NaN: as above
    if (m != m) return m;
  }
  return m;
}

/// ||a - ref|| / ||ref|| (2-norms, in double; ||a - ref|| when ref is all zero): the size of an
/// error that is not rounding, such as int8 quantisation's.
template <class R>
double rel_err(const float* a, const R* ref, std::size_t n) {
  double e = 0, r = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(ref[i]);
    e += d * d;
    r += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  return r > 0 ? std::sqrt(e / r) : std::sqrt(e);
}

/// Where element (i, o) (input i, output o) of an in x out weight matrix sits in layout l, written
/// out from docs/weights.md rather than taken from the library (kPanel16: panels of 16 outputs).
inline std::size_t weight_index(microattn::WeightLayout l, std::size_t in, std::size_t out,
                                std::size_t i, std::size_t o) {
  if (l == microattn::WeightLayout::kInOut) return i * out + o;
  if (l == microattn::WeightLayout::kOutIn) return o * in + i;
  return (o / 16) * in * 16 + i * 16 + o % 16;
}

// ---- bits: decided on the representation, so that no compiler flag (-ffast-math) folds them

/// The float with these bits / the bits of this float.
inline float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline std::uint32_t to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
/// NaN or Inf.
inline bool nonfinite(float v) { return (to_bits(v) & 0x7f800000u) == 0x7f800000u; }
inline bool is_nan(float v) { return nonfinite(v) && (to_bits(v) & 0x007fffffu) != 0; }

/// a[0 .. n) and b[0 .. n) are the same bits (NaN payloads and signed zeros included).
inline bool same_bits(const float* a, const float* b, std::size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

// ---- sentinels: an output pre-filled with kSentinel proves that a refused call wrote nothing

/// A value no call under test computes.
constexpr float kSentinel = -31337.0f;
inline void fill_sentinel(float* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) p[i] = kSentinel;
}
/// p[0 .. n) still all kSentinel.
inline bool all_sentinel(const float* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!(p[i] == kSentinel)) return false;
  return true;
}
template <std::size_t N>
void fill_sentinel(float (&a)[N]) {
  fill_sentinel(a, N);
}
template <std::size_t N>
bool all_sentinel(const float (&a)[N]) {
  return all_sentinel(a, N);
}

// ---- sizes

/// MICROATTN_TEST_QUICK (emulated, sanitizer and Cortex-M runs: tests/CMakeLists.txt,
/// ports/cortex-m/CMakeLists.txt): smaller sweeps and shapes, within those runs' time and RAM.
#if defined(MICROATTN_TEST_QUICK)
constexpr bool kQuick = true;
#else
constexpr bool kQuick = false;
#endif

/// Token capacity of a test configuration: as written, or at most 24 under kQuick (Cortex-M
/// images link every portable test and have 512 KB to 4 MB of RAM).
constexpr std::size_t quick_cap(std::size_t t) { return kQuick && t > 24 ? 24 : t; }

/// Calls f.template operator()<Arch>() for the default (SIMD) arch and, when it differs, the
/// scalar arch: every test runs both the shipped SIMD kernels and the Cortex-M kernels.
template <class F>
void for_each_arch(F&& f) {
  f(microattn::DefaultArch{});
  if (!std::is_same<microattn::DefaultArch, microattn::ScalarArch>::value)
    f(microattn::ScalarArch{});
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

/// docs/memory.md's d_pad, the row stride of V (layers' staged V, the KV cache, the tile's
/// output rows), written out from the page rather than taken from the library: with VW floats
/// a vector and NR a GEMM panel, d_head rounded up to NR; except under a panel on the SIMD
/// arches (VW > 1): the fewest vectors that hold d_head, rounded up to a power of two.
template <class A>
constexpr std::size_t doc_d_pad(std::size_t d_head) {
  constexpr std::size_t vw = microattn::internal::Tiles<A>::kWidth;
  constexpr std::size_t nr = microattn::internal::Tiles<A>::kNR;
  if (vw == 1 || d_head >= nr) return (d_head + nr - 1) / nr * nr;
  std::size_t vecs = 1;
  while (vecs * vw < d_head) vecs *= 2;
  return vecs * vw;
}

}  // namespace microattn_test
