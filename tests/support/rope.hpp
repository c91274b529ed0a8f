// SPDX-License-Identifier: Apache-2.0
// RoPE settings for the tests: a RopeConfig in one expression, and the double reference's view
// of the same settings (reference/rope_ref.hpp).
#pragma once

#include <cstddef>

#include "microattn/kernels/f32_rope.hpp"
#include "reference/rope_ref.hpp"

namespace microattn_test {

/// RoPE on or off, with its pairing, rotated dimensions (0 = all of d_head) and base; the
/// start position 0.
inline microattn::RopeConfig rope_cfg(bool on, microattn::RopePairing p, std::size_t dims,
                                      float base = 10000.0f) {
  microattn::RopeConfig r;
  r.enabled = on;
  r.pairing = p;
  r.rotary_dims = dims;
  r.base = base;
  return r;
}

/// The reference's RoPE for a layer of head width d_head set to `r` (start position 0: set
/// .start for another).
inline microattn_ref::RopeRef rope_ref_of(const microattn::RopeConfig& r, std::size_t d_head) {
  if (!r.enabled) return {0, 0.0, false};
  return {r.rotary_dims ? r.rotary_dims : d_head, static_cast<double>(r.base),
          r.pairing == microattn::RopePairing::kAdjacent};
}

}  // namespace microattn_test
