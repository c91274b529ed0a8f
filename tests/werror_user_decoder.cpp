// SPDX-License-Identifier: Apache-2.0
// A user's translation unit with one model, compiled next to werror_user.cpp by every
// werror_user_* ctest (same flags). Alone in its unit, a model's kernels are inlined with its
// constant shapes, where GCC's loop analyses see more than in werror_user.cpp (whose many
// instantiations keep them out of line): GCC 12 at -O3 and -Ofast without -march (SSE2) warned
// "iteration 4611686018427387903 invokes undefined behavior" in f32_gemv_dot's tails here.
#include "microattn/decoder.hpp"

// The stories260K shape, decoding in a loop: d_head 8 (under a vector of AVX-512, under a
// weight panel), d_ff 172 (not a multiple of the panel width nor of two vectors: the
// row-major GEMV's vector and scalar tails with a constant K).
using Stories = microattn::DecoderConfig<512, 64, 5, 8, 4, 8, 172, 512, microattn::LmHead::kTied>;
static microattn::Decoder<Stories> g_stories;

int user_decoder_run(const void* blob, std::size_t bytes, float* logits) {
  microattn::DecoderWeights<Stories> w;
  if (microattn::decoder_weights_from_blob<Stories>(blob, bytes, &w) != microattn::Status::kOk ||
      g_stories.set_weights(w) != microattn::Status::kOk)
    return 1;
  const std::int32_t prompt[2] = {1, 2};
  if (g_stories.prefill(prompt, 2, logits) != microattn::Status::kOk) return 1;
  for (std::int32_t t = 3; t < 64; ++t)
    if (g_stories.decode(t, logits) != microattn::Status::kOk) return 1;
  return 0;
}
