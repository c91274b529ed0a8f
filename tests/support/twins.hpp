// SPDX-License-Identifier: Apache-2.0
// A layer in one storage format and its twin with fp32 weights (or cache) holding the same
// values, run on the same inputs: what the format tests compare.
#pragma once

#include <cstddef>

#include "microattn/status.hpp"

namespace microattn_test {

/// MultiHeadAttention (or any layer with set_weights and forward(x, T, y)) and its twin over T
/// rows of x. False when a call does not return kOk.
template <class L, class L32, class W, class W32>
bool forward_twins(L& a, L32& b, const W& w, const W32& w32, const float* x, std::size_t T,
                   float* y, float* y32) {
  using microattn::Status;
  return a.set_weights(w) == Status::kOk && b.set_weights(w32) == Status::kOk &&
         a.forward(x, T, y) == Status::kOk && b.forward(x, T, y32) == Status::kOk;
}

/// Two KvAttention layers from empty caches over T rows of x (dm wide): a prefill of the first
/// `split` rows, then a decode step per row (outputs od wide). False when a call does not
/// return kOk.
template <class Kv, class Kv32, class W, class W32>
bool kv_twins(Kv& a, Kv32& b, const W& w, const W32& w32, const float* x, std::size_t T,
              std::size_t split, std::size_t dm, std::size_t od, float* y, float* y32) {
  using microattn::Status;
  a.reset(), b.reset();
  if (a.set_weights(w) != Status::kOk || b.set_weights(w32) != Status::kOk ||
      a.prefill(x, split, y) != Status::kOk || b.prefill(x, split, y32) != Status::kOk)
    return false;
  for (std::size_t t = split; t < T; ++t)
    if (a.decode(x + t * dm, y + t * od) != Status::kOk ||
        b.decode(x + t * dm, y32 + t * od) != Status::kOk)
      return false;
  return true;
}

}  // namespace microattn_test
