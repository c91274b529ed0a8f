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

/// N norm gains (an RMSNorm's weight) from stream `seed`: 1 + U(-spread, spread), so they
/// stay positive and near 1 as trained gains do.
template <std::size_t N>
constexpr std::array<float, N> make_gains(std::uint32_t seed, float spread) {
  std::array<float, N> g = make_weights<N>(seed, spread);
  for (std::size_t i = 0; i < N; ++i) g[i] += 1.0f;
  return g;
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

/// One int8 matrix and its per-output-column fp32 scales, as microattn::Weights<Cfg> takes
/// them with WeightType::kInt8: W(i, o) ~ scale[o] * q(i, o), q in the layout it was made for.
template <std::size_t In, std::size_t Out>
struct Int8Matrix {
  std::array<std::int8_t, In * Out> q;
  std::array<float, Out> scale;
};

/// microattn::quantize_value() as a constexpr function (that one is not constexpr): w / scale
/// rounded to nearest, ties away from zero, clamped to [-127, 127], in float; 0 for scale 0.
/// The same statements, so it gives the same bits (example_q8.cpp's check image compares the
/// compile-time arrays with microattn::quantize_int8() at run time, byte for byte).
constexpr std::int8_t quantize_value(float w, float scale) {
  if (!(scale > 0.0f)) return 0;
  const float r = w / scale;
  float a = r < 0.0f ? -r : r;
  const float f = static_cast<float>(static_cast<std::int32_t>(a < 127.0f ? a : 127.0f));
  a = (a - f >= 0.5f && f < 127.0f) ? f + 1.0f : f;
  const auto q = static_cast<std::int32_t>(a);
  return static_cast<std::int8_t>(r < 0.0f ? -q : q);
}

/// A [in][out] fp32 matrix quantised at compile time by microattn::quantize_int8()'s rule:
/// per output column o, scale[o] = max_i |W(i, o)| / 127.0f (float), q(i, o) =
/// quantize_value(W(i, o), scale[o]); an all-zero column gets scale 0 and q 0. q is stored as
/// kPanel16 when `panel16` (out must be a multiple of 16: no padding columns), else [in][out].
/// What `tools/export_pytorch.py --quant int8 [--layout panel16]` writes for real weights.
template <std::size_t In, std::size_t Out>
constexpr Int8Matrix<In, Out> quantize_int8(const std::array<float, In * Out>& w, bool panel16) {
  static_assert(Out % 16 == 0, "quantize_int8: out must be a multiple of 16 (kPanel16)");
  Int8Matrix<In, Out> m{};
  for (std::size_t o = 0; o < Out; ++o) {
    float amax = 0.0f;
    for (std::size_t i = 0; i < In; ++i) {
      const float a = w[i * Out + o] < 0.0f ? -w[i * Out + o] : w[i * Out + o];
      amax = a > amax ? a : amax;
    }
    const float s = amax / 127.0f;
    m.scale[o] = s;
    for (std::size_t i = 0; i < In; ++i)
      m.q[panel16 ? (o / 16) * In * 16 + i * 16 + o % 16 : i * Out + o] =
          quantize_value(w[i * Out + o], s);
  }
  return m;
}

/// The same stream written at run time into a caller's buffer (inputs live in RAM).
inline void fill(float* p, std::size_t n, std::uint32_t seed, float scale) {
  std::uint32_t s = seed * 2654435761u + 1u;
  for (std::size_t i = 0; i < n; ++i) p[i] = next_uniform(s, scale);
}

}  // namespace example
