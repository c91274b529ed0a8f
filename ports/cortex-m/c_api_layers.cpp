// SPDX-License-Identifier: Apache-2.0
// The C image's layers (c_api_main.c): one MICROATTN_C_* line each, as a C project's one C++
// file would hold them. Their headers (cm_mha.h, cm_kv.h, cm_core.h, cm_mha_q8.h) are generated
// at build time by tools/microattn_c.py with this image's compiler and flags (c_api.cmake).
// Also the int8 layer's C++ references (the others' are in c_api_support.cpp).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cm_core.h"
#include "cm_kv.h"
#include "cm_mha.h"
#include "cm_mha_q8.h"
#include "microattn/c_api.hpp"

using CmMhaQ8Cfg =
    microattn::Config<24, 32, 4, 2, 8, microattn::Bias::kYes, microattn::WeightType::kInt8>;

MICROATTN_C_LAYER(cm_mha, microattn::Config<24, 32, 4, 2, 8, microattn::Bias::kYes>);
MICROATTN_C_KV_LAYER_CHUNKED(cm_kv, 5, microattn::Config<24, 32, 4, 2, 8, microattn::Rope::kYes>);
MICROATTN_C_CORE(cm_core, microattn::Config<24, 32, 4, 2, 8>);
MICROATTN_C_LAYER(cm_mha_q8, CmMhaQ8Cfg);

namespace {
microattn::MultiHeadAttention<CmMhaQ8Cfg> g_ref_mha_q8;  // zero bytes: no constructor runs
}  // namespace

// The int8 references, declared in c_api_main.c. Statuses as ints.
extern "C" int cm_ref_quantize_int8(const float* src, size_t in_dim, size_t out_dim, int8_t* dst,
                                    float* scales) {
  return static_cast<int>(microattn::quantize_int8(src, microattn::WeightLayout::kOutIn, in_dim,
                                                   out_dim, microattn::WeightLayout::kOutIn, dst,
                                                   scales));
}

// w[4] = w_q, w_k, w_v, w_o (OUT_IN int8), s[4] their scales, b[4] the biases; a fresh object.
extern "C" int cm_ref_mha_q8_forward(const int8_t* const w[4], const float* const s[4],
                                     const float* const b[4], const float* x, size_t T, float* y) {
  std::memset(static_cast<void*>(&g_ref_mha_q8), 0, sizeof g_ref_mha_q8);
  const microattn::Weights<CmMhaQ8Cfg> wv(microattn::WeightLayout::kOutIn, w[0], s[0], w[1], s[1],
                                          w[2], s[2], w[3], s[3], b[0], b[1], b[2], b[3]);
  microattn::Status st = g_ref_mha_q8.set_weights(wv);
  if (st == microattn::Status::kOk) st = g_ref_mha_q8.forward(x, T, y);
  return static_cast<int>(st);
}
