// SPDX-License-Identifier: Apache-2.0
// The C image's helpers (c_api_support.h). No static object here needs a constructor: the image
// runs with a start-up that runs none (microattn_cm_port_no_ctors), as C firmware's does.
#include "c_api_support.h"

#include <cmath>
#include <cstddef>
#include <cstring>

#include "microattn/microattn.hpp"
#include "port.hpp"
#include "reference/attention_ref.hpp"

#if defined(NDEBUG)
#error "the C image is a Debug build: MICROATTN_ASSERT must be active (c_api.cmake: -UNDEBUG)"
#endif

namespace {

using MhaCfg = microattn::Config<24, 32, 4, 2, 8, microattn::Bias::kYes>;
using KvCfg = microattn::Config<24, 32, 4, 2, 8, microattn::Rope::kYes>;
using CoreCfg = microattn::Config<24, 32, 4, 2, 8>;
constexpr std::size_t kT = 24, kDM = 32, kH = 4, kHkv = 2, kD = 8;

microattn::MultiHeadAttention<MhaCfg> g_ref_mha;
microattn::KvAttention<KvCfg, microattn::DefaultArch, 5> g_ref_kv;
microattn::ScaledDotProductAttention<CoreCfg> g_ref_core;
double g_oracle[kT * kDM];
double g_scratch[microattn_ref::layer_scratch(kT, kH, kHkv, kD)];

int code(microattn::Status s) { return static_cast<int>(s); }

}  // namespace

extern "C" {

void cm_write(const char* s) { microattn::port::write(s); }
void cm_write_u(size_t v) { microattn::port::write_u64(v); }
void cm_write_g(double v) { microattn::port::write_double(v, 3); }
const char* cm_board(void) { return microattn::port::board_name(); }
const char* cm_cpu(void) { return microattn::port::cpu_name(); }
const char* cm_arch(void) { return microattn::arch_name(); }

int cm_ref_mha_forward(const float* const w[8], const float* x, size_t T, float* y) {
  // Fresh: zero bytes are the default state (the library's contract; assigning a new object
  // would need a large temporary on this image's small stack).
  std::memset(static_cast<void*>(&g_ref_mha), 0, sizeof g_ref_mha);
  const microattn::Weights<MhaCfg> wv(microattn::WeightLayout::kOutIn, w[0], w[1], w[2], w[3], w[4],
                                      w[5], w[6], w[7]);
  microattn::Status s = g_ref_mha.set_weights(wv);
  if (s == microattn::Status::kOk) s = g_ref_mha.forward(x, T, y);
  return code(s);
}

double cm_oracle_mha_rel_error(const float* const w[8], const float* x, size_t T, const float* y) {
  const microattn_ref::LayerRef L{kDM,  kH,   kHkv, kD,  /*out_in=*/true, w[0], w[1], w[2], w[3],
                                  w[4], w[5], w[6], w[7]};
  microattn_ref::layer(L, x, T, 1.0 / std::sqrt(static_cast<double>(kD)), g_oracle, g_scratch);
  double max_err = 0, max_ref = 0;
  for (std::size_t i = 0; i < T * kDM; ++i) {
    const double e = std::fabs(y[i] - g_oracle[i]), a = std::fabs(g_oracle[i]);
    max_err = e > max_err ? e : max_err;
    max_ref = a > max_ref ? a : max_ref;
  }
  return max_ref > 0 ? max_err / max_ref : 1.0;
}

int cm_ref_kv_setup(const float* const w[8], float base, int pairing, size_t start_position) {
  const microattn::Weights<KvCfg> wv(microattn::WeightLayout::kInOut, w[0], w[1], w[2], w[3]);
  microattn::RopeConfig r;
  r.enabled = true;
  r.base = base;
  r.pairing = static_cast<microattn::RopePairing>(pairing);
  r.start_position = start_position;
  microattn::Status s = g_ref_kv.set_weights(wv);
  if (s == microattn::Status::kOk) s = g_ref_kv.set_rope(r);
  return code(s);
}
int cm_ref_kv_prefill(const float* x, size_t T, float* y) {
  return code(g_ref_kv.prefill(x, T, y));
}
int cm_ref_kv_decode(const float* x, float* y) { return code(g_ref_kv.decode(x, y)); }
int cm_ref_kv_truncate(size_t length) { return code(g_ref_kv.truncate(length)); }

int cm_ref_core_forward(const float* q, const float* k, const float* v, size_t T, float* out) {
  return code(g_ref_core.forward(q, k, v, T, out));
}

void cm_fail_assert(void) {
  static microattn::kernels::RopeTable<4, 4> table;
  microattn::kernels::rope_fill(table, 10000.0f, 0);  // MICROATTN_ASSERT(half >= 1 ...)
}

}  // extern "C"
