// SPDX-License-Identifier: Apache-2.0
/* microattn's C interface on a Cortex-M: a C11 main (-Wall -Wextra -Werror -pedantic) using the
 * three kinds of layer (and a layer with int8 weights) as C firmware would: the objects are statics
 * in .bss that nothing initialises (the start-up runs no C++ constructors), weights and inputs in
 * RAM arrays filled at run time. The image is a Debug build (-O0 -g, MICROATTN_ASSERT active) and
 * must link no heap and no __assert_func (c_api_check_image.cmake); its layers are defined by
 * c_api_layers.cpp.
 *
 * Each result is compared bit for bit with the same operation through the C++ API
 * (c_api_support.cpp), the layer's also with the double-precision oracle (relative error
 * <= 1e-5). Prints one PASS/FAIL line per check and a summary; exits 0 when all pass.
 * With the argument --assert it fails a kernel assertion instead, which must trap (a fault
 * report from the port, exit status 255): the ctest c_api_assert_traps. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "c_api_support.h"
#include "cm_core.h"
#include "cm_kv.h"
#include "cm_mha.h"
#include "cm_mha_q8.h"
#include "microattn/microattn.h"

/* 1 when the library is compiled with -ffast-math / -Ofast (c_api.cmake). */

/* The int8 layer's C++ references (c_api_layers.cpp): microattn::quantize_int8 (OUT_IN to
 * OUT_IN), and cm_mha_q8's layer through the C++ API on an object of its own (w, s, b: the four
 * int8 matrices, their scales, the biases). Statuses as ints. */
int cm_ref_quantize_int8(const float* src, size_t in_dim, size_t out_dim, int8_t* dst,
                         float* scales);
int cm_ref_mha_q8_forward(const int8_t* const w[4], const float* const s[4],
                          const float* const b[4], const float* x, size_t T, float* y);

enum { kT = 24, kDM = 32, kQD = 32, kKD = 16 };

/* The objects: all-zero .bss, never initialised. One in a named .bss subsection, as firmware
 * places an object in a RAM region of its choice (common.ld collects .bss.*). */
static cm_mha g_mha __attribute__((section(".bss.microattn_layers")));
static cm_kv g_kv;
static cm_core g_core;
static cm_mha_q8 g_mha_q8;

/* int8 weights, quantised at start-up from g_wq.. (as firmware would from fp32 in flash). */
static int8_t g_q8[2][kQD * kDM + 2 * kKD * kDM + kDM * kQD];
static float g_s8[2][kQD + 2 * kKD + kDM];

static float g_wq[kQD * kDM], g_wk[kKD * kDM], g_wv[kKD * kDM], g_wo[kDM * kQD];
static float g_bq[kQD], g_bk[kKD], g_bv[kKD], g_bo[kDM];
static float g_x[kT * kDM], g_y[kT * kDM], g_ref[kT * kDM];
static float g_q[kT * kQD], g_k[kT * kKD], g_v[kT * kKD];

static int g_passed = 0, g_failed = 0;

static void fill(float* p, size_t n, uint32_t salt, float amp) {
  uint32_t s = salt * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = amp * ((float)(s >> 8) / 16777216.0f * 2.0f - 1.0f);
  }
}

static void poison(float* p, size_t n) { memset(p, 0xA5, n * sizeof(float)); }
static int poisoned(const float* p, size_t n) {
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = 0; i < n * sizeof(float); ++i)
    if (b[i] != 0xA5) return 0;
  return 1;
}

static void result(int pass, const char* what) {
  cm_write(pass ? "PASS " : "FAIL ");
  cm_write(what);
  cm_write("\n");
  ++*(pass ? &g_passed : &g_failed);
}

/* The status is the expected one (the line names both when it is not). */
static void expect(microattn_status got, microattn_status want, const char* what) {
  if (got == want) {
    result(1, what);
    return;
  }
  cm_write("FAIL ");
  cm_write(what);
  cm_write(": ");
  cm_write(microattn_status_string(got));
  cm_write(", expected ");
  cm_write(microattn_status_string(want));
  cm_write("\n");
  ++g_failed;
}

static void same(const float* a, const float* b, size_t n, const char* what) {
  result(memcmp(a, b, n * sizeof(float)) == 0, what);
}

static void test_layer(void) {
  const microattn_weights w = {.layout = MICROATTN_LAYOUT_OUT_IN,
                               .w_q = g_wq,
                               .w_k = g_wk,
                               .w_v = g_wv,
                               .w_o = g_wo,
                               .b_q = g_bq,
                               .b_k = g_bk,
                               .b_v = g_bv,
                               .b_o = g_bo};
  const float* const wa[8] = {g_wq, g_wk, g_wv, g_wo, g_bq, g_bk, g_bv, g_bo};
  poison(g_y, kT * kDM);
  expect(cm_mha_forward(&g_mha, g_x, kT, g_y), MICROATTN_NULL_POINTER,
         "layer: forward before set_weights");
  result(poisoned(g_y, kT * kDM), "layer: ... wrote nothing");
  expect(cm_mha_set_weights(&g_mha, &w), MICROATTN_OK, "layer: set_weights (OUT_IN, biases)");
  static const size_t kTokens[] = {kT, 17, 1};
  for (size_t i = 0; i < 3; ++i) {
    const size_t T = kTokens[i];
    expect(cm_mha_forward(&g_mha, g_x, T, g_y), MICROATTN_OK, "layer: forward");
    cm_ref_mha_forward(wa, g_x, T, g_ref);
    same(g_y, g_ref, T * kDM, "layer: forward == C++ MultiHeadAttention::forward, bit for bit");
    const double rel = cm_oracle_mha_rel_error(wa, g_x, T, g_y);
    cm_write(rel <= 1e-5 ? "PASS " : "FAIL ");
    cm_write("layer: forward T=");
    cm_write_u(T);
    cm_write(" vs the double oracle: max rel error ");
    cm_write_g(rel);
    cm_write(" (tol 1e-5)\n");
    ++*(rel <= 1e-5 ? &g_passed : &g_failed);
  }
  poison(g_y, kT * kDM);
  expect(cm_mha_forward(&g_mha, g_x, 0, g_y), MICROATTN_BAD_TOKEN_COUNT, "layer: T = 0");
  expect(cm_mha_forward(&g_mha, g_x, kT + 1, g_y), MICROATTN_BAD_TOKEN_COUNT, "layer: T > T_max");
  expect(cm_mha_forward(&g_mha, g_x, kT, g_wo), MICROATTN_OVERLAP, "layer: y over W_O");
  result(poisoned(g_y, kT * kDM), "layer: errors wrote nothing");
  expect(cm_mha_set_scale(&g_mha, INFINITY), MICROATTN_BAD_SCALE, "layer: set_scale(inf)");
}

static void test_kv(void) {
  const microattn_weights w = {
      .layout = MICROATTN_LAYOUT_IN_OUT, .w_q = g_wq, .w_k = g_wk, .w_v = g_wv, .w_o = g_wo};
  const float* const wa[8] = {g_wq, g_wk, g_wv, g_wo, NULL, NULL, NULL, NULL};
  const microattn_rope r = {.enabled = 1,
                            .base = 10000.0f,
                            .pairing = MICROATTN_ROPE_HALF_SPLIT,
                            .rotary_dims = 0,
                            .start_position = 5};
  expect(cm_kv_set_weights(&g_kv, &w), MICROATTN_OK, "kv: set_weights (IN_OUT)");
  expect(cm_kv_set_rope(&g_kv, &r), MICROATTN_OK, "kv: set_rope (half-split, from position 5)");
  cm_ref_kv_setup(wa, 10000.0f, MICROATTN_ROPE_HALF_SPLIT, 5);
  /* prefill 7 (chunks of 5), decode, truncate to 4, prefill 12. */
  expect(cm_kv_prefill(&g_kv, g_x, 7, g_y), MICROATTN_OK, "kv: prefill 7");
  cm_ref_kv_prefill(g_x, 7, g_ref);
  same(g_y, g_ref, 7 * kDM, "kv: prefill == C++ KvAttention::prefill, bit for bit");
  expect(cm_kv_decode(&g_kv, g_x + 7 * kDM, g_y), MICROATTN_OK, "kv: decode");
  cm_ref_kv_decode(g_x + 7 * kDM, g_ref);
  same(g_y, g_ref, kDM, "kv: decode == C++, bit for bit");
  result(cm_kv_length(&g_kv) == 8, "kv: length 8");
  expect(cm_kv_truncate(&g_kv, 9), MICROATTN_BAD_ARGUMENT, "kv: truncate past the length");
  expect(cm_kv_truncate(&g_kv, 4), MICROATTN_OK, "kv: truncate to 4");
  cm_ref_kv_truncate(4);
  expect(cm_kv_prefill(&g_kv, g_x + kDM, 12, g_y), MICROATTN_OK, "kv: prefill 12");
  cm_ref_kv_prefill(g_x + kDM, 12, g_ref);
  same(g_y, g_ref, 12 * kDM, "kv: prefill after truncate == C++, bit for bit");
  poison(g_y, kT * kDM);
  expect(cm_kv_prefill(&g_kv, g_x, 9, g_y), MICROATTN_CACHE_FULL, "kv: prefill past T_max");
  result(poisoned(g_y, kT * kDM) && cm_kv_length(&g_kv) == 16, "kv: ... changed nothing");
  expect(cm_kv_set_rope(&g_kv, &r), MICROATTN_BAD_ARGUMENT, "kv: set_rope with tokens cached");
  expect(cm_kv_reset(&g_kv), MICROATTN_OK, "kv: reset");
  result(cm_kv_length(&g_kv) == 0 && cm_kv_rope(&g_kv).start_position == 5,
         "kv: empty after reset, RoPE kept");
}

static void test_layer_q8(void) {
  /* Quantise each matrix with the C function and with the C++ one: the same bytes. */
  const float* const src[4] = {g_wq, g_wk, g_wv, g_wo};
  static const size_t kIn[4] = {kDM, kDM, kDM, kQD}, kOut[4] = {kQD, kKD, kKD, kDM};
  const int8_t* w[4];
  const float* s[4];
  size_t wo = 0, so = 0;
  int quant_ok = 1;
  for (size_t i = 0; i < 4; ++i) {
    microattn_quant_error e;
    quant_ok &= microattn_quantize_int8(src[i], MICROATTN_LAYOUT_OUT_IN, kIn[i], kOut[i],
                                        MICROATTN_LAYOUT_OUT_IN, g_q8[0] + wo, g_s8[0] + so,
                                        &e) == MICROATTN_OK &&
                e.rel > 0.0f && e.rel < 0.01f;
    quant_ok &= cm_ref_quantize_int8(src[i], kIn[i], kOut[i], g_q8[1] + wo, g_s8[1] + so) == 0;
    w[i] = g_q8[0] + wo;
    s[i] = g_s8[0] + so;
    wo += kIn[i] * kOut[i];
    so += kOut[i];
  }
  result(quant_ok, "q8: microattn_quantize_int8 of the four matrices (rel error < 1%)");
  /* Bit for bit also when the library is built with -Ofast: the quantiser divides by values
   * the optimiser cannot see, so no division becomes a multiplication by a reciprocal. */
  result(memcmp(g_q8[0], g_q8[1], sizeof g_q8[0]) == 0 &&
             memcmp(g_s8[0], g_s8[1], sizeof g_s8[0]) == 0,
         "q8: ... == C++ microattn::quantize_int8, bit for bit");
  microattn_weights_q8 q = {.layout = MICROATTN_LAYOUT_OUT_IN,
                            .w_q = w[0],
                            .s_q = s[0],
                            .w_k = w[1],
                            .s_k = s[1],
                            .w_v = w[2],
                            .s_v = s[2],
                            .w_o = w[3],
                            .s_o = s[3],
                            .b_q = g_bq,
                            .b_k = g_bk,
                            .b_v = g_bv,
                            .b_o = g_bo};
  const float* const b[4] = {g_bq, g_bk, g_bv, g_bo};
  const float* const wa[8] = {g_wq, g_wk, g_wv, g_wo, g_bq, g_bk, g_bv, g_bo};
  q.s_k = NULL;
  expect(cm_mha_q8_set_weights(&g_mha_q8, &q), MICROATTN_NULL_POINTER, "q8: set_weights, s_k NULL");
  q.s_k = s[1];
  expect(cm_mha_q8_set_weights(&g_mha_q8, &q), MICROATTN_OK, "q8: set_weights (int8 OUT_IN)");
  expect(cm_mha_q8_forward(&g_mha_q8, g_x, kT, g_y), MICROATTN_OK, "q8: forward");
  cm_ref_mha_q8_forward(w, s, b, g_x, kT, g_ref);
  same(g_y, g_ref, kT * kDM, "q8: forward == C++ MultiHeadAttention (int8 weights), bit for bit");
  /* The quantisation error, against the double oracle on the fp32 weights. */
  const double rel = cm_oracle_mha_rel_error(wa, g_x, kT, g_y);
  cm_write(rel <= 2e-2 ? "PASS " : "FAIL ");
  cm_write("q8: forward vs the double oracle on the fp32 weights: max rel error ");
  cm_write_g(rel);
  cm_write(" (tol 2e-2)\n");
  ++*(rel <= 2e-2 ? &g_passed : &g_failed);
  expect(cm_mha_q8_forward(&g_mha_q8, g_x, 1, g_s8[0]), MICROATTN_OVERLAP, "q8: y over s_q");
}

static void test_core(void) {
  fill(g_q, kT * kQD, 21, 1.0f);
  fill(g_k, kT * kKD, 22, 1.0f);
  fill(g_v, kT * kKD, 23, 1.0f);
  expect(cm_core_forward(&g_core, g_q, kQD, g_k, kKD, g_v, kKD, kT, g_y, kQD), MICROATTN_OK,
         "core: forward");
  cm_ref_core_forward(g_q, g_k, g_v, kT, g_ref);
  same(g_y, g_ref, kT * kQD, "core: forward == C++ ScaledDotProductAttention, bit for bit");
  expect(cm_core_forward(&g_core, g_q, kQD - 1, g_k, kKD, g_v, kKD, kT, g_y, kQD),
         MICROATTN_BAD_STRIDE, "core: ldq below the row");
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--assert") == 0) {
    cm_write("failing a kernel assertion: a trap, then the port's fault report\n");
    cm_fail_assert();
    cm_write("FAIL the assertion did not stop the program\n");
    return 1;
  }
  cm_write("microattn C API on ");
  cm_write(cm_board());
  cm_write(" (");
  cm_write(cm_cpu());
  cm_write(", kernels ");
  cm_write(cm_arch());
  cm_write("), Debug: objects cm_mha ");
  cm_write_u(CM_MHA_BYTES);
  cm_write(" B, cm_kv ");
  cm_write_u(CM_KV_BYTES);
  cm_write(" B, cm_core ");
  cm_write_u(CM_CORE_BYTES);
  cm_write(" B, cm_mha_q8 ");
  cm_write_u(CM_MHA_Q8_BYTES);
  cm_write(" B\n");

  fill(g_wq, kQD * kDM, 1, 0.18f);
  fill(g_wk, kKD * kDM, 2, 0.18f);
  fill(g_wv, kKD * kDM, 3, 0.18f);
  fill(g_wo, kDM * kQD, 4, 0.18f);
  fill(g_bq, kQD, 5, 0.1f);
  fill(g_bk, kKD, 6, 0.1f);
  fill(g_bv, kKD, 7, 0.1f);
  fill(g_bo, kDM, 8, 0.1f);
  fill(g_x, kT * kDM, 9, 1.0f);

  test_layer();
  test_kv();
  test_core();
  test_layer_q8();
  result(strcmp(microattn_status_string(MICROATTN_CACHE_FULL), "cache full") == 0,
         "microattn_status_string");

  cm_write("c_api: ");
  cm_write_u((size_t)g_passed);
  cm_write(" passed, ");
  cm_write_u((size_t)g_failed);
  cm_write(" failed\n");
  return g_failed == 0 ? 0 : 1;
}
