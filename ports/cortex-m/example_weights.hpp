// SPDX-License-Identifier: Apache-2.0
// Deterministic pseudo-random weights for the Cortex-M example, computed by the compiler:
// `constexpr` arrays at namespace scope are constant-initialised const objects, so they land in
// .rodata (flash) with no start-up code and no RAM copy, as real exported weights would.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace example {

/// xorshift32 step mapped to a uniform float in [-scale, scale).
constexpr float next_uniform(std::uint32_t& s, float scale) {
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  return scale * (static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f);
}

/// N weights from stream `seed`, computed at compile time when used in a constexpr variable.
template <std::size_t N>
constexpr std::array<float, N> make_weights(std::uint32_t seed, float scale) {
  std::array<float, N> w{};
  std::uint32_t s = seed * 2654435761u + 1u;
  for (std::size_t i = 0; i < N; ++i) w[i] = next_uniform(s, scale);
  return w;
}

/// A [in][out] matrix rearranged as microattn::WeightLayout::kPanel16 (panels of 16 output
/// columns, each [in][16]) at compile time: what `tools/export_pytorch.py --layout panel16`
/// writes for real weights. out must be a multiple of 16.
template <std::size_t In, std::size_t Out>
constexpr std::array<float, In * Out> panel16(const std::array<float, In * Out>& w) {
  static_assert(Out % 16 == 0, "panel16: out must be a multiple of 16");
  std::array<float, In * Out> p{};
  for (std::size_t o = 0; o < Out; ++o)
    for (std::size_t i = 0; i < In; ++i) p[(o / 16) * In * 16 + i * 16 + o % 16] = w[i * Out + o];
  return p;
}

/// The same stream written at run time into a caller's buffer (inputs live in RAM).
inline void fill(float* p, std::size_t n, std::uint32_t seed, float scale) {
  std::uint32_t s = seed * 2654435761u + 1u;
  for (std::size_t i = 0; i < n; ++i) p[i] = next_uniform(s, scale);
}

}  // namespace example
