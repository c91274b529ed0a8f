// SPDX-License-Identifier: Apache-2.0
// microattn vocabulary: a layer's rotary position embedding (RoPE) settings. Shared by the
// layers' set_rope, the C API and the RoPE kernel (kernels/f32_rope.hpp).
#pragma once

#include <cstddef>

namespace microattn {

/// Which dimensions of a head RoPE rotates together. Both use the frequencies
/// theta_i = base^(-2i / rotary_dims), i = 0 .. rotary_dims/2 - 1, and rotate pair i by
/// position * theta_i:  (a, b) -> (a cos - b sin, a sin + b cos).
enum class RopePairing : unsigned char {
  /// Pair i = dimensions (2i, 2i + 1): the original LLaMA code (complex view of adjacent
  /// floats), GPT-J's rotate_every_two.
  kAdjacent,
  /// Pair i = dimensions (i, i + rotary_dims/2): Hugging Face transformers' rotate_half
  /// (LLaMA, Mistral, Qwen checkpoints in HF format), GPT-NeoX.
  kHalfSplit,
};

/// RoPE settings of a layer. Disabled by default.
struct RopeConfig {
  bool enabled = false;
  /// Frequency base, finite and > 0 (10000 in LLaMA 1/2, 500000 in LLaMA 3).
  float base = 10000.0f;
  RopePairing pairing = RopePairing::kHalfSplit;
  /// Leading dimensions of each head that are rotated (the rest pass through, as GPT-NeoX's
  /// rotary_pct / Phi's partial_rotary_factor); 0 means all of d_head. Must be even and
  /// <= d_head.
  std::size_t rotary_dims = 0;
  /// Absolute position of the first token: MultiHeadAttention's token i rotates at
  /// start_position + i, KvAttention's cached token p at start_position + p (e.g. a layer
  /// that continues a sequence whose first tokens it never saw).
  std::size_t start_position = 0;
};

}  // namespace microattn
