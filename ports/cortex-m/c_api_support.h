// SPDX-License-Identifier: Apache-2.0
/* The C image's helpers from C++ (c_api_support.cpp): the port's console, the same operations
 * through the C++ API on C++ objects of their own (bit-for-bit references), the double-precision
 * oracle, and a deliberately failed kernel assertion. Statuses as ints (microattn::Status). */
#ifndef MICROATTN_PORT_C_API_SUPPORT_H
#define MICROATTN_PORT_C_API_SUPPORT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void cm_write(const char* s);
void cm_write_u(size_t v);
void cm_write_g(double v); /* 3 significant digits */
const char* cm_board(void);
const char* cm_cpu(void);
const char* cm_arch(void);

/* w[8] = w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o (OUT_IN, cm_mha's Config); a fresh object. */
int cm_ref_mha_forward(const float* const w[8], const float* x, size_t T, float* y);
/* max |y - oracle| / max |oracle| over T tokens of cm_mha's layer (default scale). */
double cm_oracle_mha_rel_error(const float* const w[8], const float* x, size_t T, const float* y);

/* cm_kv's C++ twin (KvAttention<..., Rope::kYes>, chunk 5), IN_OUT weights without biases. */
int cm_ref_kv_setup(const float* const w[8], float base, int pairing, size_t start_position);
int cm_ref_kv_prefill(const float* x, size_t T, float* y);
int cm_ref_kv_decode(const float* x, float* y);
int cm_ref_kv_truncate(size_t length);

int cm_ref_core_forward(const float* q, const float* k, const float* v, size_t T, float* out);

/* Fails a MICROATTN_ASSERT inside a kernel (rope_fill with zero pairs): must trap. */
void cm_fail_assert(void);

#ifdef __cplusplus
}
#endif

#endif
