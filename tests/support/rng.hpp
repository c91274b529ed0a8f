// SPDX-License-Identifier: Apache-2.0
// Deterministic test data: a fixed-seed generator, so every failure reproduces.
#pragma once

#include <cstddef>
#include <cstdint>

namespace microattn_test {

/// xorshift64*: small, fast, the same sequence on every target.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  std::uint32_t next_u32() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return static_cast<std::uint32_t>((s_ * 0x2545F4914F6CDD1Dull) >> 32);
  }
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f);
  }
  void fill(float* p, std::size_t n, float lo, float hi) {
    for (std::size_t i = 0; i < n; ++i) p[i] = uniform(lo, hi);
  }

 private:
  std::uint64_t s_;
};

}  // namespace microattn_test
