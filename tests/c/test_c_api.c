// SPDX-License-Identifier: Apache-2.0
/* microattn's C interface from C11 (built with -std=c11 -Wall -Wextra -Werror -pedantic):
 * statuses and their strings, the storage structs, every function of the three kinds of layer
 * against the C++ API on the same inputs (bit for bit: c_api_reference.h runs the C++ objects),
 * errors that leave outputs and objects untouched, the KV-cache sequence (prefill, decode,
 * truncate, reset, length, RoPE, scale), README.md's C example, and int8: layers with int8
 * weights (microattn_weights_q8; the KV one with an int8 cache) against the C++ objects on the
 * same int8 arrays, bit for bit, and microattn_quantize_int8 against microattn::quantize_int8;
 * a Mask::kNone layer and a sliding-window KV layer (its ring past T_max, oldest(), truncate
 * and export_cache bounded by it), and the headers' NAME_MASK, NAME_WINDOW, NAME_CONFIG_ID;
 * latent attention (--kind latent) with and without a query latent against the C++
 * LatentAttention bit for bit: prefill, absorbed decode, truncate, reset, RoPE, scale and RMSNorm
 * epsilon, the latent rows' export and import, the executor, and every refusal; the building
 * blocks (--kind linear, mlp, rmsnorm, layernorm: fp32 and int8 weights in every layout, biases,
 * the executor, an MLP's rows per pass) against the C++ Linear, Mlp, RmsNorm and LayerNorm bit
 * for bit, with their refusals (NULL, no weights, M == 0, overlap, misaligned object).
 * The C objects are static (all-zero .bss, never initialised) unless a test says otherwise.
 * Prints one line per test and each failed check; exits 0 when every check passed. */
#include <float.h>
#include <math.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "c_api_reference.h"
#include "ccore.h"
#include "ckv.h"
#include "ckv5.h"
#include "ckv_mt.h"
#include "ckv_q8.h"
#include "ckv_win.h"
#include "clat.h"
#include "clat_q.h"
#include "clat_q8.h"
#include "clat_q8n.h"
#include "clin.h"
#include "clin_q8.h"
#include "cln.h"
#include "cln_nb.h"
#include "cmha.h"
#include "cmha_mt.h"
#include "cmha_none.h"
#include "cmha_p.h"
#include "cmha_q8.h"
#include "cmlp.h"
#include "cmlp_gelu.h"
#include "cmlp_q8.h"
#include "crms.h"
#include "demo_layer.h"
#include "microattn/microattn.h"

/* The C constants are the C++ values (lib/c_api.cpp static_asserts that; here: as C sees them). */
_Static_assert(MICROATTN_OK == 0 && MICROATTN_NULL_POINTER == 1 && MICROATTN_BAD_TOKEN_COUNT == 2 &&
                   MICROATTN_OVERLAP == 3 && MICROATTN_BAD_SCALE == 4 &&
                   MICROATTN_BAD_STRIDE == 5 && MICROATTN_CACHE_FULL == 6 &&
                   MICROATTN_BAD_ARGUMENT == 7,
               "status values");
_Static_assert(sizeof(microattn_status) == sizeof(int), "microattn_status is int-sized");
_Static_assert(MICROATTN_LAYOUT_IN_OUT == 0 && MICROATTN_LAYOUT_OUT_IN == 1 &&
                   MICROATTN_LAYOUT_PANEL16 == 2,
               "layout values");
_Static_assert(MICROATTN_ROPE_ADJACENT == 0 && MICROATTN_ROPE_HALF_SPLIT == 1, "pairing values");
/* The storage structs are what their macros say, usable in constant expressions. */
_Static_assert(sizeof(cmha) == CMHA_BYTES && alignof(cmha) == CMHA_ALIGN, "cmha storage");
_Static_assert(sizeof(ckv5) == CKV5_BYTES && alignof(ckv5) == CKV5_ALIGN, "ckv5 storage");
_Static_assert(CMHA_T_MAX == 24 && CMHA_D_MODEL == 32 && CMHA_HEADS == 4 && CMHA_KV_HEADS == 2 &&
                   CMHA_D_HEAD == 8 && CMHA_Q_DIM == 32 && CMHA_KV_DIM == 16 &&
                   CMHA_OUT_DIM == 32 && CMHA_HAS_OUT_PROJ == 1 && CMHA_BIAS_Q == 1 &&
                   CMHA_BIAS_K == 1 && CMHA_BIAS_V == 1 && CMHA_BIAS_O == 1,
               "cmha shape");
_Static_assert(CKV_PREFILL_CHUNK == 24 && CKV5_PREFILL_CHUNK == 5 && CKV_BIAS_Q == 0 &&
                   CKV_HAS_ROPE == 1 && CMHA_HAS_ROPE == 0 && CMHA_P_HAS_ROPE == 1,
               "ckv shape");
_Static_assert(CCORE_Q_DIM == 32 && CCORE_KV_DIM == 16, "ccore shape");
/* int8 weights and cache: what the generated headers say. */
_Static_assert(CMHA_Q8_INT8_WEIGHTS == 1 && CKV_Q8_INT8_WEIGHTS == 1 && CKV_Q8_INT8_CACHE == 1 &&
                   CMHA_INT8_WEIGHTS == 0 && CKV_INT8_WEIGHTS == 0 && CKV_INT8_CACHE == 0,
               "int8 flags");
_Static_assert(CMHA_Q8_Q_DIM == 32 && CMHA_Q8_KV_DIM == 16 && CMHA_Q8_BIAS_O == 1 &&
                   CKV_Q8_D_HEAD == 16 && CKV_Q8_KV_HEADS == 1 && CKV_Q8_Q_DIM == 32 &&
                   CKV_Q8_KV_DIM == 16 && CKV_Q8_OUT_DIM == 32 && CKV_Q8_PREFILL_CHUNK == 5 &&
                   CKV_Q8_HAS_ROPE == 1,
               "int8 layers' shape");
_Static_assert(sizeof(ckv_q8) == CKV_Q8_BYTES && alignof(ckv_q8) == CKV_Q8_ALIGN &&
                   CKV_Q8_CACHE_BYTES < CKV_Q8_BYTES && CKV5_CACHE_BYTES < CKV5_BYTES,
               "ckv_q8 storage");

/* Mask and window as the headers say them, and the fingerprint that tells apart configurations
 * whose objects may have the same size (a mask changes no buffer). */
_Static_assert(CMHA_MASK == 0 && CMHA_WINDOW == 0 && CKV_MASK == 0 && CKV_WINDOW == 0 &&
                   CMHA_NONE_MASK == 1 && CMHA_NONE_WINDOW == 0 && CKV_WIN_MASK == 0 &&
                   CKV_WIN_WINDOW == 6 && CKV_WIN_PREFILL_CHUNK == 4 && CKV_WIN_T_MAX == 24,
               "mask and window");
_Static_assert(CMHA_CONFIG_ID != CMHA_NONE_CONFIG_ID && CKV_CONFIG_ID != CKV5_CONFIG_ID &&
                   CKV_CONFIG_ID != CKV_WIN_CONFIG_ID,
               "fingerprints differ");

/* README.md's example (readme_example.c). */
int run_layer(const float* q_proj, const float* k_proj, const float* v_proj, const float* o_proj,
              const float* x, size_t tokens, float* y);

/* ------------------------------------------------------------------------ checks */

static int g_failed_checks = 0;
static const char* g_test = "";

#define CHECK(cond)                                                                         \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "%s:%d: [%s] CHECK failed: %s\n", __FILE__, __LINE__, g_test, #cond); \
      ++g_failed_checks;                                                                    \
    }                                                                                       \
  } while (0)

#define CHECK_STATUS(expr, want)                                                                 \
  do {                                                                                           \
    const microattn_status got_ = (expr);                                                        \
    if (got_ != (want)) {                                                                        \
      fprintf(stderr, "%s:%d: [%s] %s returned %d (%s), expected %d (%s)\n", __FILE__, __LINE__, \
              g_test, #expr, (int)got_, microattn_status_string(got_), (int)(want),              \
              microattn_status_string(want));                                                    \
      ++g_failed_checks;                                                                         \
    }                                                                                            \
  } while (0)

/* n floats equal bit for bit. */
#define CHECK_SAME(a, b, n) CHECK(memcmp((a), (b), (n) * sizeof(float)) == 0)

/* A float pattern no computation produces: what an untouched output still holds. */
static void poison(float* p, size_t n) { memset(p, 0xA5, n * sizeof(float)); }
static int poisoned(const float* p, size_t n) {
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = 0; i < n * sizeof(float); ++i)
    if (b[i] != 0xA5) return 0;
  return 1;
}

/* Uniform values in [-amp, amp), fixed by salt. */
static void fill(float* p, size_t n, uint32_t salt, float amp) {
  uint32_t s = salt * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = amp * ((float)(s >> 8) / 16777216.0f * 2.0f - 1.0f);
  }
}

/* max |a[i] - b[i]| over n values; *amax: max |a[i]|. */
static float max_abs_diff(const float* a, const float* b, size_t n, float* amax) {
  float err = 0.0f;
  *amax = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    err = fmaxf(err, fabsf(a[i] - b[i]));
    *amax = fmaxf(*amax, fabsf(a[i]));
  }
  return err;
}

static int run(const char* name, void (*test)(void)) {
  const int before = g_failed_checks;
  g_test = name;
  test();
  printf("%s %s\n", g_failed_checks == before ? "[  OK  ]" : "[ FAIL ]", name);
  return g_failed_checks == before;
}

/* ------------------------------------------------------------------------ data */

enum { kT = 24, kDM = 32, kQD = 32, kKD = 16 };

/* Weights in RAM (filled at start), so that outputs overlapping them can be tried. */
static float g_wq[kQD * kDM], g_wk[kKD * kDM], g_wv[kKD * kDM], g_wo[kDM * kQD];
static float g_bq[kQD], g_bk[kKD], g_bv[kKD], g_bo[kDM];
static float g_x[kT * kDM], g_x2[kT * kDM];
static float g_y[kT * kDM], g_ref[kT * kDM];

static void fill_data(void) {
  fill(g_wq, kQD * kDM, 1, 0.18f);
  fill(g_wk, kKD * kDM, 2, 0.18f);
  fill(g_wv, kKD * kDM, 3, 0.18f);
  fill(g_wo, kDM * kQD, 4, 0.18f);
  fill(g_bq, kQD, 5, 0.1f);
  fill(g_bk, kKD, 6, 0.1f);
  fill(g_bv, kKD, 7, 0.1f);
  fill(g_bo, kDM, 8, 0.1f);
  fill(g_x, kT * kDM, 9, 1.0f);
  fill(g_x2, kT * kDM, 10, 1.0f);
}

static microattn_weights all_weights(int layout) {
  const microattn_weights w = {.layout = layout,
                               .w_q = g_wq,
                               .w_k = g_wk,
                               .w_v = g_wv,
                               .w_o = g_wo,
                               .b_q = g_bq,
                               .b_k = g_bk,
                               .b_v = g_bv,
                               .b_o = g_bo};
  return w;
}
static void as_array(const microattn_weights* w, const float* a[8]) {
  a[0] = w->w_q, a[1] = w->w_k, a[2] = w->w_v, a[3] = w->w_o;
  a[4] = w->b_q, a[5] = w->b_k, a[6] = w->b_v, a[7] = w->b_o;
}

/* ------------------------------------------------------------------------ tests */

static void test_status_strings(void) {
  static const char* const kNames[] = {
      "ok",         "null pointer", "bad token count", "overlapping buffers", "scale not finite",
      "bad stride", "cache full",   "bad argument"};
  for (int s = MICROATTN_OK; s <= MICROATTN_BAD_ARGUMENT; ++s) {
    const char* c = microattn_status_string((microattn_status)s);
    CHECK(c != NULL && strcmp(c, kNames[s]) == 0);
    CHECK(c != NULL && strcmp(c, ref_to_string(s)) == 0); /* the C++ to_string */
  }
  CHECK(strcmp(microattn_status_string((microattn_status)8), "unknown status") == 0);
  CHECK(strcmp(microattn_status_string((microattn_status)256), "unknown status") == 0);
  CHECK(strcmp(microattn_status_string(MICROATTN_STATUS_FORCE_INT_), "unknown status") == 0);
}

/* microattn_model_check_text() words a refusal as the C++ model_check_text(): a field, a
 * tensor (role | layer << 16), a bounded buffer, a NULL check and a value past the problems. */
static void test_model_check_text(void) {
  char buf[96];
  microattn_model_check c = {MICROATTN_BAD_ARGUMENT, 9, 3, 16, 17}; /* kFieldDiffers, d_model */
  CHECK(microattn_model_check_text(&c, buf, sizeof buf) == strlen(buf));
  CHECK(strcmp(buf, "field d_model: the file has 17, the configuration 16") == 0);
  c.problem = 13, c.key = 3u | 1u << 16; /* kMissingTensor, q_proj of layer 1 */
  (void)microattn_model_check_text(&c, buf, sizeof buf);
  CHECK(strcmp(buf, "tensor q_proj of layer 1: missing") == 0);
  CHECK(microattn_model_check_text(&c, buf, 7) == 6 && strcmp(buf, "tensor") == 0);
  CHECK(microattn_model_check_text(&c, NULL, 7) == 0);
  (void)microattn_model_check_text(NULL, buf, sizeof buf);
  CHECK(strcmp(buf, "null pointer") == 0);
  c.problem = 99; /* not a problem: the status alone */
  (void)microattn_model_check_text(&c, buf, sizeof buf);
  CHECK(strcmp(buf, "bad argument") == 0);
}

static void test_storage_matches_cpp(void) {
  static const struct {
    const char* name;
    size_t bytes, align;
  } kLayers[] = {{"cmha", CMHA_BYTES, CMHA_ALIGN},
                 {"cmha_p", CMHA_P_BYTES, CMHA_P_ALIGN},
                 {"ckv", CKV_BYTES, CKV_ALIGN},
                 {"ckv5", CKV5_BYTES, CKV5_ALIGN},
                 {"ccore", CCORE_BYTES, CCORE_ALIGN}};
  for (size_t i = 0; i < sizeof kLayers / sizeof kLayers[0]; ++i) {
    size_t bytes = 0, align = 0;
    ref_object_size(kLayers[i].name, &bytes, &align);
    CHECK(bytes == kLayers[i].bytes && align == kLayers[i].align);
  }
  /* A smaller prefill chunk is a smaller object. */
  CHECK(CKV5_BYTES < CKV_BYTES);
}

static cmha g_mha; /* static, never initialised: all-zero bytes */

static void test_layer_errors_before_weights(void) {
  CHECK(cmha_scale(&g_mha) == ref_default_scale());
  poison(g_y, kT * kDM);
  CHECK_STATUS(cmha_forward(&g_mha, g_x, kT, g_y), MICROATTN_NULL_POINTER); /* no weights yet */
  CHECK(poisoned(g_y, kT * kDM));
  CHECK_STATUS(cmha_forward(NULL, g_x, kT, g_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cmha_set_scale(NULL, 1.0f), MICROATTN_NULL_POINTER);
  CHECK(cmha_scale(NULL) == 0.0f);
  cmha_init(NULL); /* nothing */
}

static void test_layer_set_weights_errors(void) {
  microattn_weights w = all_weights(MICROATTN_LAYOUT_OUT_IN);
  CHECK_STATUS(cmha_set_weights(NULL, &w), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cmha_set_weights(&g_mha, NULL), MICROATTN_NULL_POINTER);
  w.b_k = NULL; /* the layer has biases: all needed */
  CHECK_STATUS(cmha_set_weights(&g_mha, &w), MICROATTN_NULL_POINTER);
  w = all_weights(3);
  CHECK_STATUS(cmha_set_weights(&g_mha, &w), MICROATTN_BAD_ARGUMENT);
  w = all_weights(-1);
  CHECK_STATUS(cmha_set_weights(&g_mha, &w), MICROATTN_BAD_ARGUMENT);
  w = all_weights(256); /* not read as IN_OUT (the C++ enum is 8 bits wide) */
  CHECK_STATUS(cmha_set_weights(&g_mha, &w), MICROATTN_BAD_ARGUMENT);
  w = all_weights(MICROATTN_LAYOUT_PANEL16); /* d_head 8 is not a multiple of 16 */
  CHECK_STATUS(cmha_set_weights(&g_mha, &w), MICROATTN_BAD_ARGUMENT);
  w = all_weights(MICROATTN_LAYOUT_OUT_IN);
  w.w_q = NULL; /* NULL is checked before the layout, as in C++ */
  w.layout = 9;
  CHECK_STATUS(cmha_set_weights(&g_mha, &w), MICROATTN_NULL_POINTER);
  /* None of these set weights. */
  poison(g_y, kT * kDM);
  CHECK_STATUS(cmha_forward(&g_mha, g_x, kT, g_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_y, kT * kDM));
}

static void test_layer_forward_matches_cpp(void) {
  static const size_t kTokens[] = {1, 2, 15, 16, 17, kT};
  static const int kLayouts[] = {MICROATTN_LAYOUT_OUT_IN, MICROATTN_LAYOUT_IN_OUT};
  for (size_t l = 0; l < 2; ++l) {
    const microattn_weights w = all_weights(kLayouts[l]);
    const float* wa[8];
    as_array(&w, wa);
    CHECK_STATUS(cmha_set_weights(&g_mha, &w), MICROATTN_OK);
    for (size_t i = 0; i < sizeof kTokens / sizeof kTokens[0]; ++i) {
      const size_t T = kTokens[i];
      poison(g_y, kT * kDM);
      CHECK_STATUS(cmha_forward(&g_mha, g_x, T, g_y), MICROATTN_OK);
      CHECK(ref_mha_forward(kLayouts[l], wa, 0.0f, g_x, T, g_ref) == MICROATTN_OK);
      CHECK_SAME(g_y, g_ref, T * kDM);
      CHECK(poisoned(g_y + T * kDM, (kT - T) * kDM)); /* nothing past row T */
    }
  }
  /* The layouts are passed through: the two give different outputs. */
  const microattn_weights w_io = all_weights(MICROATTN_LAYOUT_IN_OUT);
  const float* wa[8];
  as_array(&w_io, wa);
  CHECK(ref_mha_forward(MICROATTN_LAYOUT_OUT_IN, wa, 0.0f, g_x, kT, g_ref) == MICROATTN_OK);
  CHECK(memcmp(g_y, g_ref, kT * kDM * sizeof(float)) != 0);
}

static void test_layer_scale(void) {
  const microattn_weights w = all_weights(MICROATTN_LAYOUT_OUT_IN);
  const float* wa[8];
  as_array(&w, wa);
  CHECK_STATUS(cmha_set_weights(&g_mha, &w), MICROATTN_OK);
  CHECK_STATUS(cmha_set_scale(&g_mha, INFINITY), MICROATTN_BAD_SCALE);
  CHECK_STATUS(cmha_set_scale(&g_mha, NAN), MICROATTN_BAD_SCALE);
  CHECK_STATUS(cmha_set_scale(&g_mha, 3.0e38f), MICROATTN_BAD_SCALE); /* * log2(e) overflows */
  CHECK(cmha_scale(&g_mha) == ref_default_scale());                   /* unchanged */
  CHECK_STATUS(cmha_set_scale(&g_mha, 0.7f), MICROATTN_OK);
  CHECK(cmha_scale(&g_mha) == 0.7f);
  CHECK_STATUS(cmha_forward(&g_mha, g_x, kT, g_y), MICROATTN_OK);
  CHECK(ref_mha_forward(MICROATTN_LAYOUT_OUT_IN, wa, 0.7f, g_x, kT, g_ref) == MICROATTN_OK);
  CHECK_SAME(g_y, g_ref, kT * kDM);
  CHECK_STATUS(cmha_set_scale(&g_mha, 2.0e38f), MICROATTN_OK); /* finite * log2(e) */
  CHECK(cmha_scale(&g_mha) == 2.0e38f);
  CHECK_STATUS(cmha_set_scale(&g_mha, ref_default_scale()), MICROATTN_OK);
}

static void test_layer_rope_needs_tables(void) {
  /* cmha's Config has no Rope::kYes: only a disabled RoPE is accepted. */
  microattn_rope r = MICROATTN_ROPE_DEFAULTS;
  CHECK_STATUS(cmha_set_rope(&g_mha, &r), MICROATTN_OK);
  r.enabled = 1;
  CHECK_STATUS(cmha_set_rope(&g_mha, &r), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(cmha_set_rope(&g_mha, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cmha_set_rope(NULL, &r), MICROATTN_NULL_POINTER);
  CHECK(cmha_rope(&g_mha).enabled == 0);
}

static void test_layer_forward_errors_write_nothing(void) {
  const microattn_weights w = all_weights(MICROATTN_LAYOUT_OUT_IN);
  CHECK_STATUS(cmha_set_weights(&g_mha, &w), MICROATTN_OK);
  poison(g_y, kT * kDM);
  CHECK_STATUS(cmha_forward(&g_mha, g_x, 0, g_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(cmha_forward(&g_mha, g_x, kT + 1, g_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(cmha_forward(&g_mha, NULL, kT, g_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cmha_forward(&g_mha, g_x, kT, NULL), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_y, kT * kDM));
  /* y over a weight array (weights in RAM): refused, the weights unchanged. */
  float wo_copy[kDM * kQD];
  memcpy(wo_copy, g_wo, sizeof wo_copy);
  CHECK_STATUS(cmha_forward(&g_mha, g_x, kT, g_wo), MICROATTN_OVERLAP);
  CHECK_STATUS(cmha_forward(&g_mha, g_x, 1, g_bo), MICROATTN_OVERLAP);
  CHECK(memcmp(wo_copy, g_wo, sizeof wo_copy) == 0);
  /* With W_O, y may be x itself: the same result as a separate y. */
  const float* wa[8];
  as_array(&w, wa);
  CHECK(ref_mha_forward(MICROATTN_LAYOUT_OUT_IN, wa, 0.0f, g_x2, kT, g_ref) == MICROATTN_OK);
  memcpy(g_y, g_x2, sizeof g_y);
  CHECK_STATUS(cmha_forward(&g_mha, g_y, kT, g_y), MICROATTN_OK);
  CHECK_SAME(g_y, g_ref, kT * kDM);
}

static void test_layer_object_placement(void) {
  /* init zeroes an object (here a used one): it is as new, weights gone. */
  cmha_init(&g_mha);
  CHECK(cmha_scale(&g_mha) == ref_default_scale());
  CHECK_STATUS(cmha_forward(&g_mha, g_x, kT, g_y), MICROATTN_NULL_POINTER);
  /* A storage that is not aligned as the object needs: refused by every function. */
  static alignas(CMHA_ALIGN) unsigned char raw[CMHA_BYTES + CMHA_ALIGN];
  if (CMHA_ALIGN > 1) {
    cmha* bad = (cmha*)(void*)(raw + 1);
    const microattn_weights w = all_weights(MICROATTN_LAYOUT_OUT_IN);
    CHECK_STATUS(cmha_set_weights(bad, &w), MICROATTN_BAD_ARGUMENT);
    CHECK_STATUS(cmha_set_scale(bad, 1.0f), MICROATTN_BAD_ARGUMENT);
    CHECK_STATUS(cmha_forward(bad, g_x, kT, g_y), MICROATTN_BAD_ARGUMENT);
    CHECK(cmha_scale(bad) == 0.0f);
  }
}

static void test_layer_panel16_rope(void) {
  /* Config<20, 32, 2, 1, 16, Rope::kYes>: d_head 16 allows PANEL16 (the arrays are read as
   * panels); RoPE from a start position. */
  static cmha_p layer;
  const microattn_weights w = all_weights(MICROATTN_LAYOUT_PANEL16);
  const float* wa[8];
  as_array(&w, wa);
  CHECK_STATUS(cmha_p_set_weights(&layer, &w), MICROATTN_OK);
  CHECK_STATUS(cmha_p_forward(&layer, g_x, 20, g_y), MICROATTN_OK);
  CHECK(ref_mha_p_forward(MICROATTN_LAYOUT_PANEL16, wa, 0.0f, g_x, 20, g_ref, 0, 0.0f, 0, 0, 0) ==
        MICROATTN_OK);
  CHECK_SAME(g_y, g_ref, 20 * CMHA_P_OUT_DIM);
  CHECK_STATUS(cmha_p_forward(&layer, g_x, 21, g_y), MICROATTN_BAD_TOKEN_COUNT);

  const microattn_rope r = {.enabled = 1,
                            .base = 10000.0f,
                            .pairing = MICROATTN_ROPE_HALF_SPLIT,
                            .rotary_dims = 12,
                            .start_position = 100};
  CHECK_STATUS(cmha_p_set_rope(&layer, &r), MICROATTN_OK);
  const microattn_rope back = cmha_p_rope(&layer);
  CHECK(back.enabled == 1 && back.base == 10000.0f && back.pairing == MICROATTN_ROPE_HALF_SPLIT &&
        back.rotary_dims == 12 && back.start_position == 100);
  static float no_rope[20 * CMHA_P_OUT_DIM];
  memcpy(no_rope, g_y, sizeof no_rope);
  CHECK_STATUS(cmha_p_forward(&layer, g_x, 20, g_y), MICROATTN_OK);
  CHECK(ref_mha_p_forward(MICROATTN_LAYOUT_PANEL16, wa, 0.0f, g_x, 20, g_ref, 1, 10000.0f,
                          MICROATTN_ROPE_HALF_SPLIT, 12, 100) == MICROATTN_OK);
  CHECK_SAME(g_y, g_ref, 20 * CMHA_P_OUT_DIM);
  CHECK(memcmp(g_y, no_rope, sizeof no_rope) != 0); /* the rotation was applied */
}

static void test_core(void) {
  /* q, k, v with strides wider than their rows, out too. */
  enum { kLdq = kQD + 3, kLdk = kKD + 1, kLdv = kKD + 5, kLdo = kQD + 2 };
  static float q[kT * kLdq], k[kT * kLdk], v[kT * kLdv], out[kT * kLdo], ref[kT * kLdo];
  fill(q, kT * kLdq, 21, 1.0f);
  fill(k, kT * kLdk, 22, 1.0f);
  fill(v, kT * kLdv, 23, 1.0f);
  /* On the stack, dirty, then initialised. */
  ccore core;
  memset(&core, 0xff, sizeof core);
  ccore_init(&core);
  CHECK(ccore_scale(&core) == ref_default_scale());
  for (size_t T = 1; T <= kT; T += 7) {
    poison(out, kT * kLdo);
    poison(ref, kT * kLdo);
    CHECK_STATUS(ccore_forward(&core, q, kLdq, k, kLdk, v, kLdv, T, out, kLdo), MICROATTN_OK);
    CHECK(ref_core_forward(0.0f, q, kLdq, k, kLdk, v, kLdv, T, ref, kLdo) == MICROATTN_OK);
    CHECK_SAME(out, ref, kT * kLdo); /* the padding columns untouched by both */
  }
  CHECK_STATUS(ccore_set_scale(&core, -0.25f), MICROATTN_OK);
  CHECK_STATUS(ccore_forward(&core, q, kLdq, k, kLdk, v, kLdv, kT, out, kLdo), MICROATTN_OK);
  CHECK(ref_core_forward(-0.25f, q, kLdq, k, kLdk, v, kLdv, kT, ref, kLdo) == MICROATTN_OK);
  CHECK_SAME(out, ref, kT * kLdo);
  /* Errors: nothing written. */
  poison(out, kT * kLdo);
  CHECK_STATUS(ccore_forward(&core, q, kQD - 1, k, kLdk, v, kLdv, kT, out, kLdo),
               MICROATTN_BAD_STRIDE);
  CHECK_STATUS(ccore_forward(&core, q, kLdq, k, kLdk, v, kKD - 1, kT, out, kLdo),
               MICROATTN_BAD_STRIDE);
  CHECK_STATUS(ccore_forward(&core, q, kLdq, k, kLdk, v, kLdv, 0, out, kLdo),
               MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(ccore_forward(&core, q, kLdq, k, kLdk, v, kLdv, kT + 1, out, kLdo),
               MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(ccore_forward(&core, q, kLdq, NULL, kLdk, v, kLdv, kT, out, kLdo),
               MICROATTN_NULL_POINTER);
  CHECK_STATUS(ccore_forward(NULL, q, kLdq, k, kLdk, v, kLdv, kT, out, kLdo),
               MICROATTN_NULL_POINTER);
  CHECK(poisoned(out, kT * kLdo));
  CHECK_STATUS(ccore_forward(&core, q, kLdq, k, kLdk, v, kLdv, kT, q + 5, kLdo), MICROATTN_OVERLAP);
  CHECK_STATUS(ccore_set_scale(&core, NAN), MICROATTN_BAD_SCALE);
  CHECK(ccore_scale(&core) == -0.25f);
}

/* The same step on the C object and on the C++ reference `which`, outputs compared. */
static ckv g_kv;       /* static, never initialised */
static ckv5 g_kv5;     /* prefill in chunks of 5 */
static ckv_q8 g_kv_q8; /* which == 2: int8 weights and cache, chunks of 5 */

static microattn_status c_prefill(int which, const float* x, size_t T, float* y) {
  return which == 0   ? ckv_prefill(&g_kv, x, T, y)
         : which == 1 ? ckv5_prefill(&g_kv5, x, T, y)
                      : ckv_q8_prefill(&g_kv_q8, x, T, y);
}
static microattn_status c_decode(int which, const float* x, float* y) {
  return which == 0   ? ckv_decode(&g_kv, x, y)
         : which == 1 ? ckv5_decode(&g_kv5, x, y)
                      : ckv_q8_decode(&g_kv_q8, x, y);
}
static microattn_status c_truncate(int which, size_t n) {
  return which == 0   ? ckv_truncate(&g_kv, n)
         : which == 1 ? ckv5_truncate(&g_kv5, n)
                      : ckv_q8_truncate(&g_kv_q8, n);
}
static microattn_status c_reset(int which) {
  return which == 0 ? ckv_reset(&g_kv) : which == 1 ? ckv5_reset(&g_kv5) : ckv_q8_reset(&g_kv_q8);
}
static size_t c_length(int which) {
  return which == 0   ? ckv_length(&g_kv)
         : which == 1 ? ckv5_length(&g_kv5)
                      : ckv_q8_length(&g_kv_q8);
}
static microattn_status c_set_rope(int which, const microattn_rope* r) {
  return which == 0   ? ckv_set_rope(&g_kv, r)
         : which == 1 ? ckv5_set_rope(&g_kv5, r)
                      : ckv_q8_set_rope(&g_kv_q8, r);
}
static microattn_rope c_rope(int which) {
  return which == 0 ? ckv_rope(&g_kv) : which == 1 ? ckv5_rope(&g_kv5) : ckv_q8_rope(&g_kv_q8);
}
static microattn_status c_set_scale(int which, float s) {
  return which == 0   ? ckv_set_scale(&g_kv, s)
         : which == 1 ? ckv5_set_scale(&g_kv5, s)
                      : ckv_q8_set_scale(&g_kv_q8, s);
}
static float c_scale(int which) {
  return which == 0 ? ckv_scale(&g_kv) : which == 1 ? ckv5_scale(&g_kv5) : ckv_q8_scale(&g_kv_q8);
}
static microattn_status c_set_weights(int which, const microattn_weights* w) {
  return which == 0 ? ckv_set_weights(&g_kv, w) : ckv5_set_weights(&g_kv5, w);
}

static void prefill_both(int which, const float* x, size_t T) {
  poison(g_y, kT * kDM);
  poison(g_ref, kT * kDM);
  CHECK_STATUS(c_prefill(which, x, T, g_y), MICROATTN_OK);
  CHECK(ref_kv_prefill(which, x, T, g_ref) == MICROATTN_OK);
  CHECK_SAME(g_y, g_ref, T * kDM);
  CHECK(c_length(which) == ref_kv_length(which));
}
static void decode_both(int which, const float* x) {
  poison(g_y, kDM);
  poison(g_ref, kDM);
  CHECK_STATUS(c_decode(which, x, g_y), MICROATTN_OK);
  CHECK(ref_kv_decode(which, x, g_ref) == MICROATTN_OK);
  CHECK_SAME(g_y, g_ref, kDM);
  CHECK(c_length(which) == ref_kv_length(which));
}

static void kv_sequence(int which) {
  ref_kv_fresh(which);
  /* Fresh: empty, default scale, RoPE off, no weights. */
  CHECK(c_length(which) == 0);
  CHECK(c_scale(which) == ref_default_scale());
  CHECK(c_rope(which).enabled == 0);
  poison(g_y, kT * kDM);
  CHECK_STATUS(c_prefill(which, g_x, 4, g_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(c_decode(which, g_x, g_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_y, kT * kDM) && c_length(which) == 0);

  /* Weights: no biases in this config; IN_OUT. */
  microattn_weights w = {
      .layout = MICROATTN_LAYOUT_IN_OUT, .w_q = g_wq, .w_k = g_wk, .w_v = g_wv, .w_o = g_wo};
  const float* wa[8];
  as_array(&w, wa);
  CHECK_STATUS(c_set_weights(which, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(c_set_weights(which, &w), MICROATTN_OK);
  CHECK(ref_kv_set_weights(which, MICROATTN_LAYOUT_IN_OUT, wa) == MICROATTN_OK);

  /* RoPE: refused settings change nothing; a valid one is read back. */
  microattn_rope r = MICROATTN_ROPE_DEFAULTS;
  r.enabled = 1;
  r.rotary_dims = 3; /* odd */
  CHECK_STATUS(c_set_rope(which, &r), MICROATTN_BAD_ARGUMENT);
  r.rotary_dims = 10; /* > d_head */
  CHECK_STATUS(c_set_rope(which, &r), MICROATTN_BAD_ARGUMENT);
  r.rotary_dims = 0;
  r.base = -1.0f;
  CHECK_STATUS(c_set_rope(which, &r), MICROATTN_BAD_ARGUMENT);
  r.base = 10000.0f;
  r.pairing = 2;
  CHECK_STATUS(c_set_rope(which, &r), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(c_set_rope(which, NULL), MICROATTN_NULL_POINTER);
  CHECK(c_rope(which).enabled == 0);
  r.pairing = MICROATTN_ROPE_ADJACENT;
  r.base = 500000.0f;
  r.rotary_dims = 6; /* partial rotation */
  r.start_position = 4093;
  CHECK_STATUS(c_set_rope(which, &r), MICROATTN_OK);
  CHECK(ref_kv_set_rope(which, 1, 500000.0f, MICROATTN_ROPE_ADJACENT, 6, 4093) == MICROATTN_OK);
  const microattn_rope back = c_rope(which);
  CHECK(back.enabled == 1 && back.base == 500000.0f && back.pairing == MICROATTN_ROPE_ADJACENT &&
        back.rotary_dims == 6 && back.start_position == 4093);

  /* Scale. */
  CHECK_STATUS(c_set_scale(which, -INFINITY), MICROATTN_BAD_SCALE);
  CHECK_STATUS(c_set_scale(which, 0.3f), MICROATTN_OK);
  CHECK(ref_kv_set_scale(which, 0.3f) == MICROATTN_OK);
  CHECK(c_scale(which) == 0.3f);

  /* prefill 7 (two chunks of 5 for ckv5), decode, prefill 3 more. */
  prefill_both(which, g_x, 7);
  CHECK(c_length(which) == 7);
  decode_both(which, g_x + 7 * kDM);
  CHECK(c_length(which) == 8);
  prefill_both(which, g_x + 8 * kDM, 3);
  CHECK(c_length(which) == 11);

  /* RoPE is fixed while the cache holds tokens. */
  CHECK_STATUS(c_set_rope(which, &r), MICROATTN_BAD_ARGUMENT);

  /* truncate: past the length refused; back to 5, then other tokens from there. */
  CHECK_STATUS(c_truncate(which, 12), MICROATTN_BAD_ARGUMENT);
  CHECK(c_length(which) == 11);
  CHECK_STATUS(c_truncate(which, 5), MICROATTN_OK);
  CHECK(ref_kv_truncate(which, 5) == MICROATTN_OK);
  CHECK(c_length(which) == 5);
  decode_both(which, g_x2);
  prefill_both(which, g_x2 + kDM, 12);
  CHECK(c_length(which) == 18);

  /* Errors change nothing: cache full, bad counts, NULL, overlap with a weight. */
  poison(g_y, kT * kDM);
  CHECK_STATUS(c_prefill(which, g_x, 7, g_y), MICROATTN_CACHE_FULL);
  CHECK_STATUS(c_prefill(which, g_x, 0, g_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(c_prefill(which, g_x, kT + 1, g_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(c_prefill(which, NULL, 1, g_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(c_decode(which, g_x, NULL), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_y, kT * kDM));
  CHECK_STATUS(c_decode(which, g_x, g_wq + 3), MICROATTN_OVERLAP);
  CHECK(c_length(which) == 18);
  /* ... and the cache is intact: the next token is as the reference's. */
  prefill_both(which, g_x, 6);
  CHECK(c_length(which) == kT);
  CHECK_STATUS(c_decode(which, g_x, g_y), MICROATTN_CACHE_FULL);

  /* reset: empty, settings kept; the same tokens again give the same outputs as the first time
   * (compared with a reference that was reset too). */
  CHECK_STATUS(c_reset(which), MICROATTN_OK);
  ref_kv_reset(which);
  CHECK(c_length(which) == 0);
  CHECK(c_scale(which) == 0.3f && c_rope(which).enabled == 1);
  prefill_both(which, g_x, 7);
  static float first[7 * kDM];
  memcpy(first, g_y, sizeof first);
  CHECK_STATUS(c_truncate(which, 0), MICROATTN_OK);
  CHECK_STATUS(c_prefill(which, g_x, 7, g_y), MICROATTN_OK);
  CHECK_SAME(g_y, first, 7 * kDM);
  /* With W_O, y may be x: in place, the same outputs. */
  CHECK_STATUS(c_truncate(which, 0), MICROATTN_OK);
  static float inplace[7 * kDM];
  memcpy(inplace, g_x, sizeof inplace);
  CHECK_STATUS(c_prefill(which, inplace, 7, inplace), MICROATTN_OK);
  CHECK_SAME(inplace, first, 7 * kDM);
}

/* A C executor: runs the n tasks on the calling thread, the last one first (any order and any
 * threads are allowed), and counts its calls. */
static void run_reversed(void* self, size_t n, void (*task)(void* arg, size_t i), void* arg) {
  size_t* calls = (size_t*)self;
  ++*calls;
  for (size_t i = n; i-- > 0;) task(arg, i);
}

static void test_executor(void) {
  static cmha_mt split, plain; /* .bss: no executor */
  static ckv_mt kv_split, kv_plain;
  size_t calls = 0;
  const microattn_executor none = MICROATTN_EXECUTOR_NONE;
  microattn_executor ex = {run_reversed, &calls, 3};
  CHECK(CMHA_MT_MAX_WORKERS == 3 && CKV_MT_MAX_WORKERS == 3 && CMHA_MAX_WORKERS == 1);
  /* Refusals change nothing. */
  CHECK_STATUS(cmha_mt_set_executor(NULL, &ex), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cmha_mt_set_executor(&split, NULL), MICROATTN_NULL_POINTER);
  ex.workers = 4; /* > MAX_WORKERS */
  CHECK_STATUS(cmha_mt_set_executor(&split, &ex), MICROATTN_BAD_ARGUMENT);
  ex.workers = 2;
  CHECK_STATUS(cmha_set_executor(&g_mha, &ex), MICROATTN_BAD_ARGUMENT); /* MaxWorkers 1 */
  const microattn_executor no_run = {NULL, NULL, 2};
  CHECK_STATUS(cmha_mt_set_executor(&split, &no_run), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(cmha_set_executor(&g_mha, &none), MICROATTN_OK);
  CHECK_STATUS(ccore_set_executor(NULL, &none), MICROATTN_NULL_POINTER);

  const microattn_weights w = all_weights(MICROATTN_LAYOUT_OUT_IN);
  CHECK_STATUS(cmha_mt_set_weights(&split, &w), MICROATTN_OK);
  CHECK_STATUS(cmha_mt_set_weights(&plain, &w), MICROATTN_OK);
  CHECK_STATUS(cmha_mt_forward(&split, g_x, kT, g_ref), MICROATTN_OK);
  CHECK(calls == 0); /* the refused executors were not kept */
  CHECK_STATUS(cmha_mt_forward(&plain, g_x, kT, g_ref), MICROATTN_OK);
  for (size_t workers = 2; workers <= 3; ++workers) {
    ex.workers = workers;
    CHECK_STATUS(cmha_mt_set_executor(&split, &ex), MICROATTN_OK);
    poison(g_y, kT * kDM);
    calls = 0;
    CHECK_STATUS(cmha_mt_forward(&split, g_x, kT, g_y), MICROATTN_OK);
    CHECK(calls > 0);
    CHECK_SAME(g_y, g_ref, kT * kDM); /* bit-identical to one worker */
  }
  CHECK_STATUS(cmha_mt_set_executor(&split, &none), MICROATTN_OK);
  calls = 0;
  CHECK_STATUS(cmha_mt_forward(&split, g_x, kT, g_y), MICROATTN_OK);
  CHECK(calls == 0);
  CHECK_SAME(g_y, g_ref, kT * kDM);

  /* KV layer: prefill 9 and decode 3 tokens with 3 workers, the same bits as without. */
  const microattn_weights kw = {
      .layout = MICROATTN_LAYOUT_IN_OUT, .w_q = g_wq, .w_k = g_wk, .w_v = g_wv, .w_o = g_wo};
  microattn_rope r = MICROATTN_ROPE_DEFAULTS;
  r.enabled = 1;
  ex.workers = 3;
  CHECK_STATUS(ckv_mt_set_executor(&kv_split, &ex), MICROATTN_OK);
  static float y_split[kT * kDM];
  ckv_mt* objs[2] = {&kv_split, &kv_plain};
  float* outs[2] = {y_split, g_y};
  calls = 0;
  for (int o = 0; o < 2; ++o) {
    CHECK_STATUS(ckv_mt_set_weights(objs[o], &kw), MICROATTN_OK);
    CHECK_STATUS(ckv_mt_set_rope(objs[o], &r), MICROATTN_OK);
    CHECK_STATUS(ckv_mt_prefill(objs[o], g_x, 9, outs[o]), MICROATTN_OK);
    for (size_t t = 9; t < 12; ++t)
      CHECK_STATUS(ckv_mt_decode(objs[o], g_x + t * kDM, outs[o] + t * kDM), MICROATTN_OK);
    if (o == 0) CHECK(calls >= 4); /* the prefill and every decode step went through it */
  }
  CHECK_SAME(y_split, g_y, 12 * kDM);
}

static void test_kv_sequence(void) { kv_sequence(0); }
static void test_kv_chunked_sequence(void) { kv_sequence(1); }

static void test_kv_export_import(void) {
  /* g_kv holds 7 tokens (the end of kv_sequence(0)); export 2 .. 6 like the C++ reference. */
  enum { kN = 5 };
  static float k[kN * kKD], v[kN * kKD], rk[kN * kKD], rv[kN * kKD];
  microattn_cache_slice info;
  size_t rfirst = 0, rtokens = 0;
  CHECK(ckv_length(&g_kv) == 7 && ref_kv_length(0) == 7);
  poison(k, kN * kKD);
  CHECK_STATUS(ckv_export_cache(&g_kv, 2, 6, k, v, &info), MICROATTN_BAD_ARGUMENT); /* 2 + 6 > 7 */
  CHECK_STATUS(ckv_export_cache(&g_kv, 0, 0, k, v, &info), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(ckv_export_cache(&g_kv, 0, 1, k, v, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(ckv_export_cache(&g_kv, 0, 1, NULL, v, &info), MICROATTN_NULL_POINTER);
  CHECK(poisoned(k, kN * kKD));
  CHECK_STATUS(ckv_export_cache(&g_kv, 2, kN, k, v, &info), MICROATTN_OK);
  CHECK(ref_kv_export(0, 2, kN, rk, rv, &rfirst, &rtokens) == MICROATTN_OK);
  CHECK_SAME(k, rk, kN * kKD);
  CHECK_SAME(v, rv, kN * kKD);
  CHECK(info.first == 2 && info.tokens == kN && rfirst == 2 && rtokens == kN &&
        info.kv_heads == CKV_KV_HEADS && info.d_head == CKV_D_HEAD);
  CHECK(info.rope.enabled == 1 && info.rope.base == 500000.0f &&
        info.rope.pairing == MICROATTN_ROPE_ADJACENT && info.rope.rotary_dims == 6 &&
        info.rope.start_position == 4093);

  /* Into another object (ckv5: the same shape) set up the same way: the whole prefix 0 .. 6,
   * after which both continue with bit-identical decode outputs. */
  static float k7[7 * kKD], v7[7 * kKD], y5[kDM];
  static ckv5 other; /* zero */
  CHECK_STATUS(ckv_export_cache(&g_kv, 0, 7, k7, v7, &info), MICROATTN_OK);
  CHECK_STATUS(ckv5_import_cache(&other, &info, k7, v7), MICROATTN_BAD_ARGUMENT); /* RoPE off */
  const microattn_weights w = {
      .layout = MICROATTN_LAYOUT_IN_OUT, .w_q = g_wq, .w_k = g_wk, .w_v = g_wv, .w_o = g_wo};
  CHECK_STATUS(ckv5_set_weights(&other, &w), MICROATTN_OK);
  CHECK_STATUS(ckv5_set_rope(&other, &info.rope), MICROATTN_OK);
  CHECK_STATUS(ckv5_set_scale(&other, ckv_scale(&g_kv)), MICROATTN_OK);
  microattn_cache_slice wrong = info;
  wrong.first = 1; /* does not continue an empty cache */
  CHECK_STATUS(ckv5_import_cache(&other, &wrong, k7, v7), MICROATTN_BAD_ARGUMENT);
  wrong = info;
  wrong.rope.start_position = 0;
  CHECK_STATUS(ckv5_import_cache(&other, &wrong, k7, v7), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(ckv5_import_cache(&other, &info, NULL, v7), MICROATTN_NULL_POINTER);
  CHECK_STATUS(ckv5_import_cache(&other, NULL, k7, v7), MICROATTN_NULL_POINTER);
  CHECK(ckv5_length(&other) == 0);
  CHECK_STATUS(ckv5_import_cache(&other, &info, k7, v7), MICROATTN_OK);
  CHECK(ckv5_length(&other) == 7);
  CHECK_STATUS(ckv_decode(&g_kv, g_x2, g_y), MICROATTN_OK);
  CHECK_STATUS(ckv5_decode(&other, g_x2, y5), MICROATTN_OK);
  CHECK_SAME(g_y, y5, kDM);
}

static void test_kv_null_object(void) {
  microattn_rope r = MICROATTN_ROPE_DEFAULTS;
  CHECK_STATUS(ckv_prefill(NULL, g_x, 1, g_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(ckv_decode(NULL, g_x, g_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(ckv_truncate(NULL, 0), MICROATTN_NULL_POINTER);
  CHECK_STATUS(ckv_reset(NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(ckv_set_rope(NULL, &r), MICROATTN_NULL_POINTER);
  CHECK_STATUS(ckv_set_weights(NULL, NULL), MICROATTN_NULL_POINTER);
  CHECK(ckv_length(NULL) == 0);
  CHECK(ckv_rope(NULL).enabled == 0);
  CHECK(r.enabled == 0 && r.base == 10000.0f && r.pairing == MICROATTN_ROPE_HALF_SPLIT &&
        r.rotary_dims == 0 && r.start_position == 0);
  microattn_cache_slice info;
  float k[kKD], v[kKD];
  CHECK_STATUS(ckv_export_cache(NULL, 0, 1, k, v, &info), MICROATTN_NULL_POINTER);
  CHECK_STATUS(ckv_import_cache(NULL, &info, k, v), MICROATTN_NULL_POINTER);
}

/* ------------------------------------------------------------------------ int8 */

/* int8 weights (and scales) quantised from g_wq.. (read as OUT_IN) by microattn_quantize_int8:
 * cmha_q8's and ckv_q8's. Aligned so that an output can be pointed at them. */
typedef struct q8_set {
  alignas(16) int8_t q[kQD * kDM];
  alignas(16) int8_t k[kKD * kDM];
  alignas(16) int8_t v[kKD * kDM];
  alignas(16) int8_t o[kDM * kQD];
  float sq[kQD], sk[kKD], sv[kKD], so[kDM];
} q8_set;
static q8_set g_q8_mha, g_q8_kv;

static void quantize_set(q8_set* q, int layout) {
  CHECK_STATUS(
      microattn_quantize_int8(g_wq, MICROATTN_LAYOUT_OUT_IN, kDM, kQD, layout, q->q, q->sq, NULL),
      MICROATTN_OK);
  CHECK_STATUS(
      microattn_quantize_int8(g_wk, MICROATTN_LAYOUT_OUT_IN, kDM, kKD, layout, q->k, q->sk, NULL),
      MICROATTN_OK);
  CHECK_STATUS(
      microattn_quantize_int8(g_wv, MICROATTN_LAYOUT_OUT_IN, kDM, kKD, layout, q->v, q->sv, NULL),
      MICROATTN_OK);
  CHECK_STATUS(
      microattn_quantize_int8(g_wo, MICROATTN_LAYOUT_OUT_IN, kQD, kDM, layout, q->o, q->so, NULL),
      MICROATTN_OK);
}
static microattn_weights_q8 q8_weights(const q8_set* q, int layout, int biases) {
  const microattn_weights_q8 w = {.layout = layout,
                                  .w_q = q->q,
                                  .s_q = q->sq,
                                  .w_k = q->k,
                                  .s_k = q->sk,
                                  .w_v = q->v,
                                  .s_v = q->sv,
                                  .w_o = q->o,
                                  .s_o = q->so,
                                  .b_q = biases ? g_bq : NULL,
                                  .b_k = biases ? g_bk : NULL,
                                  .b_v = biases ? g_bv : NULL,
                                  .b_o = biases ? g_bo : NULL};
  return w;
}
static void q8_arrays(const microattn_weights_q8* w, const int8_t* m[4], const float* s[4],
                      const float* b[4]) {
  m[0] = w->w_q, m[1] = w->w_k, m[2] = w->w_v, m[3] = w->w_o;
  s[0] = w->s_q, s[1] = w->s_k, s[2] = w->s_v, s[3] = w->s_o;
  b[0] = w->b_q, b[1] = w->b_k, b[2] = w->b_v, b[3] = w->b_o;
}

static void test_q8_storage_matches_cpp(void) {
  size_t bytes = 0, align = 0;
  ref_object_size("cmha_q8", &bytes, &align);
  CHECK(bytes == CMHA_Q8_BYTES && align == CMHA_Q8_ALIGN);
  ref_object_size("ckv_q8", &bytes, &align);
  CHECK(bytes == CKV_Q8_BYTES && align == CKV_Q8_ALIGN);
  /* The header's cache bytes are the C++ kCacheBytes: int8 values + scales, less than the fp32
   * cache of the same layer. */
  size_t int8_cache = 0, f32_cache = 0;
  ref_kv_q8_cache_bytes(&int8_cache, &f32_cache);
  CHECK(CKV_Q8_CACHE_BYTES == int8_cache);
  CHECK(int8_cache < f32_cache / 2);
}

/* microattn_quantize_int8 == microattn::quantize_int8, bit for bit: values, scales, error. */
static void test_quantize_matches_cpp(void) {
  enum { kIn = 13, kOut = 21, kPad = 32, kCap = kIn * kPad + 8 };
  static float src[kIn * kOut];
  static int8_t dst[kCap], ref[kCap];
  static float sc[kOut + 1], rsc[kOut + 1];
  fill(src, kIn * kOut, 41, 0.5f);
  src[3] = 4.0f;   /* a large weight: its column's scale */
  src[7] = -0.25f; /* more rounding cases */
  static const int kFrom[] = {MICROATTN_LAYOUT_IN_OUT, MICROATTN_LAYOUT_OUT_IN};
  static const int kTo[] = {MICROATTN_LAYOUT_IN_OUT, MICROATTN_LAYOUT_OUT_IN,
                            MICROATTN_LAYOUT_PANEL16};
  for (size_t f = 0; f < 2; ++f)
    for (size_t t = 0; t < 3; ++t) {
      /* Column 5 all zero (scale 0, q 0), as either layout stores it. */
      for (size_t i = 0; i < kIn; ++i)
        src[kFrom[f] == MICROATTN_LAYOUT_IN_OUT ? i * kOut + 5 : 5 * kIn + i] = 0.0f;
      const size_t n = (size_t)kIn * (kTo[t] == MICROATTN_LAYOUT_PANEL16 ? kPad : kOut);
      microattn_quant_error e;
      float re[3] = {-1.0f, -1.0f, -1.0f};
      memset(dst, 0x5A, sizeof dst);
      memset(ref, 0x5A, sizeof ref);
      poison(sc, kOut + 1);
      poison(rsc, kOut + 1);
      CHECK_STATUS(microattn_quantize_int8(src, kFrom[f], kIn, kOut, kTo[t], dst, sc, &e),
                   MICROATTN_OK);
      CHECK(ref_quantize_int8(src, kFrom[f], kIn, kOut, kTo[t], ref, rsc, re) == MICROATTN_OK);
      CHECK(memcmp(dst, ref, sizeof dst) == 0); /* the padding and past the end too */
      CHECK(dst[n] == 0x5A);                    /* nothing past the matrix */
      CHECK_SAME(sc, rsc, kOut + 1);
      CHECK(poisoned(sc + kOut, 1));
      CHECK(sc[5] == 0.0f && sc[0] > 0.0f);
      CHECK(memcmp(&e.max_abs, &re[0], sizeof(float)) == 0 &&
            memcmp(&e.rms, &re[1], sizeof(float)) == 0 &&
            memcmp(&e.rel, &re[2], sizeof(float)) == 0);
      CHECK(e.max_abs > 0.0f && e.max_abs <= 1.001f * 4.0f / 127.0f / 2.0f && e.rms <= e.max_abs &&
            e.rel > 0.0f && e.rel < 0.02f);
      /* err may be NULL: the same values. */
      memset(ref, 0x5A, sizeof ref);
      CHECK_STATUS(microattn_quantize_int8(src, kFrom[f], kIn, kOut, kTo[t], ref, rsc, NULL),
                   MICROATTN_OK);
      CHECK(memcmp(dst, ref, sizeof dst) == 0);
    }

  /* Errors: the C++ status, nothing written (dst, scales, err). */
  microattn_quant_error e;
  memset(&e, 0x5A, sizeof e);
  const microattn_quant_error e0 = e;
  memset(dst, 0x5A, sizeof dst);
  poison(sc, kOut + 1);
  float re[3];
  const int OI = MICROATTN_LAYOUT_OUT_IN;
  static const struct {
    int from, to, null_src, null_dst, null_sc;
    size_t in, out;
    microattn_status want;
  } kBad[] = {
      {1, 0, 1, 0, 0, kIn, kOut, MICROATTN_NULL_POINTER},
      {1, 0, 0, 1, 0, kIn, kOut, MICROATTN_NULL_POINTER},
      {1, 0, 0, 0, 1, kIn, kOut, MICROATTN_NULL_POINTER},
      {9, 0, 1, 0, 0, kIn, kOut, MICROATTN_NULL_POINTER}, /* NULL before the layout, as C++ */
      {1, 0, 0, 0, 0, 0, kOut, MICROATTN_BAD_ARGUMENT},
      {1, 0, 0, 0, 0, kIn, 0, MICROATTN_BAD_ARGUMENT},
      {2, 0, 0, 0, 0, kIn, kOut, MICROATTN_BAD_ARGUMENT}, /* from PANEL16 */
      {3, 0, 0, 0, 0, kIn, kOut, MICROATTN_BAD_ARGUMENT},
      {-1, 0, 0, 0, 0, kIn, kOut, MICROATTN_BAD_ARGUMENT},
      {256, 0, 0, 0, 0, kIn, kOut, MICROATTN_BAD_ARGUMENT}, /* not IN_OUT (8-bit C++ enum) */
      {1, 3, 0, 0, 0, kIn, kOut, MICROATTN_BAD_ARGUMENT},
      {1, 256, 0, 0, 0, kIn, kOut, MICROATTN_BAD_ARGUMENT},
  };
  for (size_t i = 0; i < sizeof kBad / sizeof kBad[0]; ++i) {
    CHECK_STATUS(microattn_quantize_int8(kBad[i].null_src ? NULL : src, kBad[i].from, kBad[i].in,
                                         kBad[i].out, kBad[i].to, kBad[i].null_dst ? NULL : dst,
                                         kBad[i].null_sc ? NULL : sc, &e),
                 kBad[i].want);
    if (kBad[i].from >= 0 && kBad[i].from <= 2 && kBad[i].to >= 0 && kBad[i].to <= 2)
      CHECK(ref_quantize_int8(kBad[i].null_src ? NULL : src, kBad[i].from, kBad[i].in, kBad[i].out,
                              kBad[i].to, kBad[i].null_dst ? NULL : ref,
                              kBad[i].null_sc ? NULL : rsc, re) == (int)kBad[i].want);
  }
  /* A weight that is not finite. */
  src[kIn * kOut - 1] = INFINITY;
  CHECK_STATUS(microattn_quantize_int8(src, OI, kIn, kOut, OI, dst, sc, &e),
               MICROATTN_BAD_ARGUMENT);
  src[kIn * kOut - 1] = NAN;
  CHECK_STATUS(microattn_quantize_int8(src, OI, kIn, kOut, OI, dst, sc, &e),
               MICROATTN_BAD_ARGUMENT);
  CHECK(ref_quantize_int8(src, OI, kIn, kOut, OI, ref, rsc, re) == MICROATTN_BAD_ARGUMENT);
  src[kIn * kOut - 1] = 0.125f;
  /* Overlaps: dst over src, scales over src, scales over dst. */
  CHECK_STATUS(microattn_quantize_int8(src, OI, kIn, kOut, OI, (int8_t*)(void*)(src + 4), sc, &e),
               MICROATTN_OVERLAP);
  CHECK_STATUS(microattn_quantize_int8(src, OI, kIn, kOut, OI, dst, src + kOut, &e),
               MICROATTN_OVERLAP);
  CHECK_STATUS(microattn_quantize_int8(src, OI, kIn, kOut, OI, dst, (float*)(void*)(dst + 4), &e),
               MICROATTN_OVERLAP);
  CHECK(memcmp(&e, &e0, sizeof e) == 0);
  size_t untouched = 0;
  for (size_t i = 0; i < sizeof dst; ++i) untouched += dst[i] == 0x5A;
  CHECK(untouched == sizeof dst);
  CHECK(poisoned(sc, kOut + 1));
}

static cmha_q8 g_mha_q8; /* static, never initialised */

static void test_q8_layer_set_weights_errors(void) {
  quantize_set(&g_q8_mha, MICROATTN_LAYOUT_OUT_IN);
  poison(g_y, kT * kDM);
  CHECK_STATUS(cmha_q8_forward(&g_mha_q8, g_x, kT, g_y), MICROATTN_NULL_POINTER); /* no weights */
  microattn_weights_q8 w = q8_weights(&g_q8_mha, MICROATTN_LAYOUT_OUT_IN, 1);
  CHECK_STATUS(cmha_q8_set_weights(NULL, &w), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, NULL), MICROATTN_NULL_POINTER);
  /* Each scale array is needed like its matrix. */
  w.s_q = NULL;
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_NULL_POINTER);
  w = q8_weights(&g_q8_mha, MICROATTN_LAYOUT_OUT_IN, 1);
  w.s_k = NULL;
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_NULL_POINTER);
  w = q8_weights(&g_q8_mha, MICROATTN_LAYOUT_OUT_IN, 1);
  w.s_v = NULL;
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_NULL_POINTER);
  w = q8_weights(&g_q8_mha, MICROATTN_LAYOUT_OUT_IN, 1);
  w.s_o = NULL;
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_NULL_POINTER);
  w = q8_weights(&g_q8_mha, MICROATTN_LAYOUT_OUT_IN, 1);
  w.w_o = NULL;
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_NULL_POINTER);
  w = q8_weights(&g_q8_mha, MICROATTN_LAYOUT_OUT_IN, 0); /* the layer has biases */
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_NULL_POINTER);
  /* Layouts. */
  w = q8_weights(&g_q8_mha, 3, 1);
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_BAD_ARGUMENT);
  w = q8_weights(&g_q8_mha, -1, 1);
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_BAD_ARGUMENT);
  w = q8_weights(&g_q8_mha, 256, 1);
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_BAD_ARGUMENT);
  w = q8_weights(&g_q8_mha, MICROATTN_LAYOUT_PANEL16, 1); /* d_head 8 */
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_BAD_ARGUMENT);
  w = q8_weights(&g_q8_mha, 9, 1);
  w.s_v = NULL; /* NULL is checked before the layout, as in C++ */
  CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_NULL_POINTER);
  /* None of these set weights. */
  CHECK_STATUS(cmha_q8_forward(&g_mha_q8, g_x, kT, g_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_y, kT * kDM));
}

static void test_q8_layer_forward_matches_cpp(void) {
  static const size_t kTokens[] = {1, 2, 15, 16, 17, kT};
  static const int kLayouts[] = {MICROATTN_LAYOUT_OUT_IN, MICROATTN_LAYOUT_IN_OUT};
  static float f32[kT * kDM];
  for (size_t l = 0; l < 2; ++l) {
    quantize_set(&g_q8_mha, kLayouts[l]);
    const microattn_weights_q8 w = q8_weights(&g_q8_mha, kLayouts[l], 1);
    const int8_t* m[4];
    const float *sc[4], *b[4];
    q8_arrays(&w, m, sc, b);
    CHECK_STATUS(cmha_q8_set_weights(&g_mha_q8, &w), MICROATTN_OK);
    for (size_t i = 0; i < sizeof kTokens / sizeof kTokens[0]; ++i) {
      const size_t T = kTokens[i];
      poison(g_y, kT * kDM);
      CHECK_STATUS(cmha_q8_forward(&g_mha_q8, g_x, T, g_y), MICROATTN_OK);
      CHECK(ref_mha_q8_forward(kLayouts[l], m, sc, b, g_x, T, g_ref) == MICROATTN_OK);
      CHECK_SAME(g_y, g_ref, T * kDM);
      CHECK(poisoned(g_y + T * kDM, (kT - T) * kDM));
    }
  }
  /* Near the fp32 layer with the weights it was quantised from (the C fields reach the right
   * matrices: a swapped scale array would be far off). */
  static cmha fp;
  const microattn_weights wf = all_weights(MICROATTN_LAYOUT_OUT_IN);
  CHECK_STATUS(cmha_set_weights(&fp, &wf), MICROATTN_OK);
  CHECK_STATUS(cmha_forward(&fp, g_x, kT, f32), MICROATTN_OK);
  float amax = 0.0f;
  const float err = max_abs_diff(f32, g_y, kT * kDM, &amax);
  CHECK(amax > 0.1f && err <= 0.02f * amax);
  if (!(err <= 0.02f * amax)) fprintf(stderr, "  int8 vs fp32: max |diff| %g of %g\n", err, amax);
  /* Scale and errors as for fp32: nothing written, y over an int8 matrix or a scale refused. */
  CHECK_STATUS(cmha_q8_set_scale(&g_mha_q8, NAN), MICROATTN_BAD_SCALE);
  CHECK_STATUS(cmha_q8_set_scale(&g_mha_q8, 0.5f), MICROATTN_OK);
  CHECK(cmha_q8_scale(&g_mha_q8) == 0.5f);
  poison(g_y, kT * kDM);
  CHECK_STATUS(cmha_q8_forward(&g_mha_q8, g_x, 0, g_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(cmha_q8_forward(&g_mha_q8, g_x, kT + 1, g_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(cmha_q8_forward(&g_mha_q8, NULL, kT, g_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_y, kT * kDM));
  static q8_set saved;
  memcpy(&saved, &g_q8_mha, sizeof saved);
  CHECK_STATUS(cmha_q8_forward(&g_mha_q8, g_x, 1, (float*)(void*)g_q8_mha.o), MICROATTN_OVERLAP);
  CHECK_STATUS(cmha_q8_forward(&g_mha_q8, g_x, 1, g_q8_mha.sv), MICROATTN_OVERLAP);
  CHECK_STATUS(cmha_q8_forward(&g_mha_q8, g_x, 1, g_q8_mha.so), MICROATTN_OVERLAP);
  CHECK(memcmp(&saved, &g_q8_mha, sizeof saved) == 0);
  /* init: weights gone. */
  cmha_q8_init(&g_mha_q8);
  CHECK_STATUS(cmha_q8_forward(&g_mha_q8, g_x, kT, g_y), MICROATTN_NULL_POINTER);
}

/* ckv_q8 (which == 2): int8 PANEL16 weights, int8 cache, RoPE, prefill in chunks of 5. */
static void test_q8_kv_sequence(void) {
  ref_kv_fresh(2);
  CHECK(c_length(2) == 0 && c_scale(2) == 0.25f && c_rope(2).enabled == 0); /* 1/sqrt(16) */
  poison(g_y, kT * kDM);
  CHECK_STATUS(c_prefill(2, g_x, 4, g_y), MICROATTN_NULL_POINTER); /* no weights */
  CHECK(poisoned(g_y, kT * kDM));

  quantize_set(&g_q8_kv, MICROATTN_LAYOUT_PANEL16);
  microattn_weights_q8 w = q8_weights(&g_q8_kv, MICROATTN_LAYOUT_PANEL16, 0);
  const int8_t* m[4];
  const float *sc[4], *b[4];
  q8_arrays(&w, m, sc, b);
  w.s_v = NULL;
  CHECK_STATUS(ckv_q8_set_weights(&g_kv_q8, &w), MICROATTN_NULL_POINTER);
  w.s_v = g_q8_kv.sv;
  CHECK_STATUS(ckv_q8_set_weights(NULL, &w), MICROATTN_NULL_POINTER);
  CHECK_STATUS(ckv_q8_set_weights(&g_kv_q8, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(ckv_q8_set_weights(&g_kv_q8, &w), MICROATTN_OK);
  CHECK(ref_kv_q8_set_weights(MICROATTN_LAYOUT_PANEL16, m, sc) == MICROATTN_OK);

  const microattn_rope r = {.enabled = 1,
                            .base = 10000.0f,
                            .pairing = MICROATTN_ROPE_HALF_SPLIT,
                            .rotary_dims = 12,
                            .start_position = 7};
  CHECK_STATUS(c_set_rope(2, &r), MICROATTN_OK);
  CHECK(ref_kv_set_rope(2, 1, 10000.0f, MICROATTN_ROPE_HALF_SPLIT, 12, 7) == MICROATTN_OK);
  CHECK_STATUS(c_set_scale(2, 0.3f), MICROATTN_OK);
  CHECK(ref_kv_set_scale(2, 0.3f) == MICROATTN_OK);

  /* prefill 7 (5 + 2), decode, prefill 3; truncate to 5, decode, prefill 12. */
  prefill_both(2, g_x, 7);
  decode_both(2, g_x + 7 * kDM);
  prefill_both(2, g_x + 8 * kDM, 3);
  CHECK(c_length(2) == 11);
  CHECK_STATUS(c_truncate(2, 12), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(c_truncate(2, 5), MICROATTN_OK);
  CHECK(ref_kv_truncate(2, 5) == MICROATTN_OK);
  decode_both(2, g_x2);
  prefill_both(2, g_x2 + kDM, 12);
  CHECK(c_length(2) == 18);

  /* Errors change nothing (y over an int8 matrix or a scale included). */
  poison(g_y, kT * kDM);
  CHECK_STATUS(c_prefill(2, g_x, 7, g_y), MICROATTN_CACHE_FULL);
  CHECK_STATUS(c_prefill(2, g_x, 0, g_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(c_decode(2, NULL, g_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_y, kT * kDM));
  CHECK_STATUS(c_decode(2, g_x, (float*)(void*)g_q8_kv.q), MICROATTN_OVERLAP);
  CHECK_STATUS(c_decode(2, g_x, g_q8_kv.sk), MICROATTN_OVERLAP);
  CHECK_STATUS(c_set_rope(2, &r), MICROATTN_BAD_ARGUMENT); /* tokens cached */
  CHECK(c_length(2) == 18);

  /* The cache as the C++ one holds it (dequantised), then into another object: it continues
   * as the original does (the int8 values come back; scales within a rounding). */
  enum { kN = 18 };
  static float k[kN * kKD], v[kN * kKD], rk[kN * kKD], rv[kN * kKD], y2[kDM];
  microattn_cache_slice info;
  size_t rfirst = 0, rtokens = 0;
  CHECK_STATUS(ckv_q8_export_cache(&g_kv_q8, 0, kN + 1, k, v, &info), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(ckv_q8_export_cache(&g_kv_q8, 0, kN, k, v, &info), MICROATTN_OK);
  CHECK(ref_kv_export(2, 0, kN, rk, rv, &rfirst, &rtokens) == MICROATTN_OK);
  CHECK_SAME(k, rk, kN * kKD);
  CHECK_SAME(v, rv, kN * kKD);
  CHECK(info.first == 0 && info.tokens == kN && rtokens == kN && info.kv_heads == 1 &&
        info.d_head == 16 && info.rope.enabled == 1 && info.rope.start_position == 7);
  static ckv_q8 other; /* zero */
  CHECK_STATUS(ckv_q8_set_weights(&other, &w), MICROATTN_OK);
  CHECK_STATUS(ckv_q8_set_rope(&other, &info.rope), MICROATTN_OK);
  CHECK_STATUS(ckv_q8_set_scale(&other, 0.3f), MICROATTN_OK);
  CHECK_STATUS(ckv_q8_import_cache(&other, &info, k, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(ckv_q8_import_cache(&other, &info, k, v), MICROATTN_OK);
  CHECK(ckv_q8_length(&other) == kN);
  CHECK_STATUS(ckv_q8_decode(&g_kv_q8, g_x2, g_y), MICROATTN_OK);
  CHECK_STATUS(ckv_q8_decode(&other, g_x2, y2), MICROATTN_OK);
  float amax = 0.0f;
  const float err = max_abs_diff(g_y, y2, kDM, &amax);
  CHECK(amax > 0.0f && err <= 1e-5f * amax);
  CHECK(ref_kv_decode(2, g_x2, g_ref) == MICROATTN_OK);
  CHECK_SAME(g_y, g_ref, kDM);

  /* reset: empty, settings kept; the same tokens give the same outputs again. */
  CHECK_STATUS(c_reset(2), MICROATTN_OK);
  ref_kv_reset(2);
  CHECK(c_length(2) == 0 && c_scale(2) == 0.3f && c_rope(2).start_position == 7);
  prefill_both(2, g_x, 9);
  static float first[9 * kDM];
  memcpy(first, g_y, sizeof first);
  CHECK_STATUS(c_truncate(2, 0), MICROATTN_OK);
  CHECK_STATUS(c_prefill(2, g_x, 9, g_y), MICROATTN_OK);
  CHECK_SAME(g_y, first, 9 * kDM);
}

/* ------------------------------------------------------------------------ mask and window */

static cmha_none g_mha_none; /* Mask::kNone */
static ckv_win g_kv_win;     /* SlidingWindow{6}, prefill chunk 4: a ring of 9 tokens */

static void test_config_ids(void) {
  /* The header's number is the C++ side's config_id (the MICROATTN_C_* line checks it). */
  CHECK(CMHA_CONFIG_ID == ref_config_id("cmha"));
  CHECK(CMHA_NONE_CONFIG_ID == ref_config_id("cmha_none"));
  CHECK(CKV_WIN_CONFIG_ID == ref_config_id("ckv_win"));
}

static void test_mask_none_layer(void) {
  const microattn_weights w = all_weights(MICROATTN_LAYOUT_IN_OUT);
  const float* wa[8];
  as_array(&w, wa);
  CHECK_STATUS(cmha_none_set_weights(&g_mha_none, &w), MICROATTN_OK);
  poison(g_y, kT * kDM);
  poison(g_ref, kT * kDM);
  CHECK_STATUS(cmha_none_forward(&g_mha_none, g_x, kT, g_y), MICROATTN_OK);
  CHECK(ref_mha_none_forward(MICROATTN_LAYOUT_IN_OUT, wa, g_x, kT, g_ref) == MICROATTN_OK);
  CHECK_SAME(g_y, g_ref, kT * kDM);
  /* Bidirectional: token 0 sees the later tokens, so alone it gives another output. */
  static float alone[kDM];
  CHECK_STATUS(cmha_none_forward(&g_mha_none, g_x, 1, alone), MICROATTN_OK);
  CHECK(memcmp(alone, g_y, sizeof alone) != 0);
}

static void test_kv_window_ring(void) {
  const microattn_weights w = all_weights(MICROATTN_LAYOUT_IN_OUT);
  const float* wa[8];
  as_array(&w, wa);
  ref_kv_win_fresh();
  CHECK_STATUS(ckv_win_set_weights(&g_kv_win, &w), MICROATTN_OK);
  CHECK(ref_kv_win_set_weights(MICROATTN_LAYOUT_IN_OUT, wa) == MICROATTN_OK);
  CHECK(ckv_win_oldest(&g_kv_win) == 0 && ckv_win_oldest(NULL) == 0);
  /* 40 tokens, past T_max 24: a ring never fills; oldest() follows the C++ object's. */
  for (size_t i = 0; i < 40; ++i) {
    poison(g_y, kDM);
    poison(g_ref, kDM);
    CHECK_STATUS(ckv_win_decode(&g_kv_win, g_x + (i % kT) * kDM, g_y), MICROATTN_OK);
    CHECK(ref_kv_win_decode(g_x + (i % kT) * kDM, g_ref) == MICROATTN_OK);
    CHECK_SAME(g_y, g_ref, kDM);
    CHECK(ckv_win_length(&g_kv_win) == i + 1 && ref_kv_win_length() == i + 1);
    CHECK(ckv_win_oldest(&g_kv_win) == ref_kv_win_oldest());
  }
  CHECK(ckv_win_oldest(&g_kv_win) == 40 - (CKV_WIN_WINDOW + CKV_WIN_PREFILL_CHUNK - 1));
  /* export_cache reads oldest .. length - 1 only. */
  static float k[2 * kKD], v[2 * kKD];
  microattn_cache_slice info;
  const size_t oldest = ckv_win_oldest(&g_kv_win);
  CHECK_STATUS(ckv_win_export_cache(&g_kv_win, oldest - 1, 2, k, v, &info), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(ckv_win_export_cache(&g_kv_win, oldest, 2, k, v, &info), MICROATTN_OK);
  CHECK(info.first == oldest && info.tokens == 2);
  /* truncate: refused where a token the next one sees is overwritten (length - W + 1 <
   * oldest), accepted where none is; then both objects go on alike. */
  CHECK_STATUS(ckv_win_truncate(&g_kv_win, oldest + CKV_WIN_WINDOW - 2), MICROATTN_BAD_ARGUMENT);
  CHECK(ref_kv_win_truncate(oldest + CKV_WIN_WINDOW - 2) == MICROATTN_BAD_ARGUMENT);
  CHECK(ckv_win_length(&g_kv_win) == 40);
  CHECK_STATUS(ckv_win_truncate(&g_kv_win, oldest + CKV_WIN_WINDOW - 1), MICROATTN_OK);
  CHECK(ref_kv_win_truncate(oldest + CKV_WIN_WINDOW - 1) == MICROATTN_OK);
  CHECK_STATUS(ckv_win_decode(&g_kv_win, g_x2, g_y), MICROATTN_OK);
  CHECK(ref_kv_win_decode(g_x2, g_ref) == MICROATTN_OK);
  CHECK_SAME(g_y, g_ref, kDM);
  CHECK(ckv_win_oldest(&g_kv_win) == ref_kv_win_oldest());
  /* A layer without a window keeps every token. */
  CHECK(ckv_oldest(&g_kv) == 0 && ckv_oldest(NULL) == 0);
}

/* ------------------------------------------------------------------------ latent attention */

/* clat: LatentConfig<24, 32, 4, 16, 8, 8, 8> (q = x W_Q); clat_q: <24, 32, 3, 20, 6, 10, 12,
 * QueryLatent{12}, MaxWorkers{3}>, prefill chunk 5. d_model 32 = kDM and T_max 24 = kT, so
 * g_x, g_y and g_ref serve them too. */
_Static_assert(CLAT_T_MAX == kT && CLAT_D_MODEL == kDM && CLAT_Q_T_MAX == kT &&
                   CLAT_Q_D_MODEL == kDM && CLAT_OUT_DIM == kDM && CLAT_Q_OUT_DIM == kDM,
               "latent layers' rows");
_Static_assert(CLAT_HEADS == 4 && CLAT_D_LATENT == 16 && CLAT_D_ROPE == 8 && CLAT_D_NOPE == 8 &&
                   CLAT_D_V == 8 && CLAT_D_Q_LATENT == 0 && CLAT_D_QK == 16 && CLAT_D_CACHE == 24 &&
                   CLAT_Q_DIM == 64 && CLAT_UKV_DIM == 64 && CLAT_V_DIM == 32 &&
                   CLAT_PREFILL_CHUNK == 24 && CLAT_MAX_WORKERS == 1,
               "clat shape");
_Static_assert(CLAT_Q_HEADS == 3 && CLAT_Q_D_LATENT == 20 && CLAT_Q_D_ROPE == 6 &&
                   CLAT_Q_D_NOPE == 10 && CLAT_Q_D_V == 12 && CLAT_Q_D_Q_LATENT == 12 &&
                   CLAT_Q_D_CACHE == 26 && CLAT_Q_Q_DIM == 48 && CLAT_Q_UKV_DIM == 66 &&
                   CLAT_Q_V_DIM == 36 && CLAT_Q_PREFILL_CHUNK == 5 && CLAT_Q_MAX_WORKERS == 3,
               "clat_q shape");
_Static_assert(sizeof(clat) == CLAT_BYTES && alignof(clat) == CLAT_ALIGN &&
                   sizeof(clat_q) == CLAT_Q_BYTES && alignof(clat_q) == CLAT_Q_ALIGN,
               "latent storage");
/* The cache: d_c + d_R floats a token, T_max tokens (plus at most a vector of slack). */
_Static_assert(CLAT_CACHE_BYTES_PER_TOKEN == 4 * 24 && CLAT_Q_CACHE_BYTES_PER_TOKEN == 4 * 26 &&
                   CLAT_CACHE_BYTES >= CLAT_T_MAX * CLAT_CACHE_BYTES_PER_TOKEN &&
                   CLAT_CACHE_BYTES < CLAT_BYTES && CLAT_CONFIG_ID != CLAT_Q_CONFIG_ID,
               "latent cache bytes");

static clat g_lat;         /* static, never initialised */
static clat_q g_lat_q;     /* which == 1 */
static clat_q8 g_lat_q8;   /* which == 2: int8 weights and cache, chunk 5 */
static clat_q8n g_lat_q8n; /* which == 3: int8 weights, q = x W_Q */

/* Each layer's weights in RAM (outputs overlapping them are tried); norm weights near 1. */
static float g_l_wq[kDM * CLAT_Q_DIM], g_l_wdkv[kDM * CLAT_D_CACHE], g_l_gkv[CLAT_D_LATENT],
    g_l_wukv[CLAT_D_LATENT * CLAT_UKV_DIM], g_l_wo[CLAT_V_DIM * kDM];
static float g_lq_wdq[kDM * CLAT_Q_D_Q_LATENT], g_lq_gq[CLAT_Q_D_Q_LATENT],
    g_lq_wuq[CLAT_Q_D_Q_LATENT * CLAT_Q_Q_DIM], g_lq_wdkv[kDM * CLAT_Q_D_CACHE],
    g_lq_gkv[CLAT_Q_D_LATENT], g_lq_wukv[CLAT_Q_D_LATENT * CLAT_Q_UKV_DIM],
    g_lq_wo[CLAT_Q_V_DIM * kDM];

static void fill_norm(float* g, size_t n, uint32_t salt) {
  fill(g, n, salt, 0.5f);
  for (size_t i = 0; i < n; ++i) g[i] += 1.0f;
}
static void fill_latent_data(void) {
  fill(g_l_wq, sizeof g_l_wq / sizeof(float), 41, 0.2f);
  fill(g_l_wdkv, sizeof g_l_wdkv / sizeof(float), 42, 0.2f);
  fill_norm(g_l_gkv, CLAT_D_LATENT, 43);
  fill(g_l_wukv, sizeof g_l_wukv / sizeof(float), 44, 0.25f);
  fill(g_l_wo, sizeof g_l_wo / sizeof(float), 45, 0.2f);
  fill(g_lq_wdq, sizeof g_lq_wdq / sizeof(float), 46, 0.2f);
  fill_norm(g_lq_gq, CLAT_Q_D_Q_LATENT, 47);
  fill(g_lq_wuq, sizeof g_lq_wuq / sizeof(float), 48, 0.3f);
  fill(g_lq_wdkv, sizeof g_lq_wdkv / sizeof(float), 49, 0.2f);
  fill_norm(g_lq_gkv, CLAT_Q_D_LATENT, 50);
  fill(g_lq_wukv, sizeof g_lq_wukv / sizeof(float), 51, 0.25f);
  fill(g_lq_wo, sizeof g_lq_wo / sizeof(float), 52, 0.2f);
}

/* The weights of layer `which` (only the pointers it needs). */
static microattn_latent_weights latent_weights(int which, int layout) {
  microattn_latent_weights w;
  memset(&w, 0, sizeof w);
  w.layout = layout;
  if (which == 0) {
    w.w_q = g_l_wq, w.w_dkv = g_l_wdkv, w.g_kv = g_l_gkv, w.w_ukv = g_l_wukv, w.w_o = g_l_wo;
  } else {
    w.w_dq = g_lq_wdq, w.g_q = g_lq_gq, w.w_uq = g_lq_wuq, w.w_dkv = g_lq_wdkv;
    w.g_kv = g_lq_gkv, w.w_ukv = g_lq_wukv, w.w_o = g_lq_wo;
  }
  return w;
}
static void latent_array(const microattn_latent_weights* w, const float* a[8]) {
  a[0] = w->w_q, a[1] = w->w_dq, a[2] = w->g_q, a[3] = w->w_uq;
  a[4] = w->w_dkv, a[5] = w->g_kv, a[6] = w->w_ukv, a[7] = w->w_o;
}

/* The int8 latent layers (clat_q8, clat_q8n: the same widths): fp32 matrices w_q, w_dq, w_uq,
 * w_dkv, w_ukv, w_o in OUT_IN ([out][in]) and g_q, g_kv, quantised by microattn_quantize_int8
 * into a layout. Aligned so that an output can be pointed at them. */
enum { kL8Mats = 6, kL8Max = CLAT_Q8_Q_DIM * CLAT_Q8_D_MODEL };
static const size_t kL8In[kL8Mats] = {CLAT_Q8_D_MODEL, CLAT_Q8_D_MODEL,  CLAT_Q8_D_Q_LATENT,
                                      CLAT_Q8_D_MODEL, CLAT_Q8_D_LATENT, CLAT_Q8_V_DIM};
static const size_t kL8Out[kL8Mats] = {CLAT_Q8_Q_DIM,   CLAT_Q8_D_Q_LATENT, CLAT_Q8_Q_DIM,
                                       CLAT_Q8_D_CACHE, CLAT_Q8_UKV_DIM,    CLAT_Q8_D_MODEL};
static float g_l8_src[kL8Mats][kL8Max], g_l8_g[2][CLAT_Q8_D_LATENT];
typedef struct lq8_set {
  alignas(16) int8_t m[kL8Mats][kL8Max];
  float s[kL8Mats][CLAT_Q8_Q_DIM];
} lq8_set;
static lq8_set g_lq8[2]; /* clat_q8's, clat_q8n's */
_Static_assert(CLAT_Q8_D_Q_LATENT == CLAT_Q8_D_LATENT && CLAT_Q8N_D_Q_LATENT == 0 &&
                   CLAT_Q8N_Q_DIM == CLAT_Q8_Q_DIM && CLAT_Q8N_D_CACHE == CLAT_Q8_D_CACHE &&
                   CLAT_Q8N_UKV_DIM == CLAT_Q8_UKV_DIM && CLAT_Q8N_V_DIM == CLAT_Q8_V_DIM,
               "clat_q8 and clat_q8n share their widths");

static void fill_latent_q8_data(void) {
  for (size_t i = 0; i < kL8Mats; ++i) fill(g_l8_src[i], kL8Max, 60 + (uint32_t)i, 0.25f);
  fill_norm(g_l8_g[0], CLAT_Q8_D_LATENT, 66);
  fill_norm(g_l8_g[1], CLAT_Q8_D_LATENT, 67);
}
/* Layer which (2 or 3)'s int8 weights in `layout`, quantised now (only the pointers it needs). */
static microattn_latent_weights_q8 latent_q8_weights(int which, int layout) {
  lq8_set* q = &g_lq8[which - 2];
  for (size_t i = 0; i < kL8Mats; ++i)
    CHECK_STATUS(microattn_quantize_int8(g_l8_src[i], MICROATTN_LAYOUT_OUT_IN, kL8In[i], kL8Out[i],
                                         layout, q->m[i], q->s[i], NULL),
                 MICROATTN_OK);
  microattn_latent_weights_q8 w;
  memset(&w, 0, sizeof w);
  w.layout = layout;
  if (which == 2) {
    w.w_dq = q->m[1], w.s_dq = q->s[1], w.g_q = g_l8_g[0], w.w_uq = q->m[2], w.s_uq = q->s[2];
  } else {
    w.w_q = q->m[0], w.s_q = q->s[0];
  }
  w.w_dkv = q->m[3], w.s_dkv = q->s[3], w.g_kv = g_l8_g[1], w.w_ukv = q->m[4], w.s_ukv = q->s[4];
  w.w_o = q->m[5], w.s_o = q->s[5];
  return w;
}
static microattn_status l_set_weights(int which, const microattn_latent_weights* w) {
  return which == 0 ? clat_set_weights(&g_lat, w) : clat_q_set_weights(&g_lat_q, w);
}
static microattn_status l_q8_set_weights(int which, const microattn_latent_weights_q8* w) {
  return which == 2 ? clat_q8_set_weights(&g_lat_q8, w) : clat_q8n_set_weights(&g_lat_q8n, w);
}
/* Gives layer which's weights in `layout` to the C layer (ref 0) or to the reference (ref 1). */
static int l_weights(int which, int layout, int ref) {
  if (which < 2) {
    const microattn_latent_weights w = latent_weights(which, layout);
    const float* a[8];
    latent_array(&w, a);
    return ref ? ref_lat_set_weights(which, layout, a) : (int)l_set_weights(which, &w);
  }
  const microattn_latent_weights_q8 w = latent_q8_weights(which, layout);
  const int8_t* const m[6] = {w.w_q, w.w_dq, w.w_uq, w.w_dkv, w.w_ukv, w.w_o};
  const float* const sc[6] = {w.s_q, w.s_dq, w.s_uq, w.s_dkv, w.s_ukv, w.s_o};
  const float* const g[2] = {w.g_q, w.g_kv};
  return ref ? ref_lat_q8_set_weights(which, layout, m, sc, g) : (int)l_q8_set_weights(which, &w);
}
/* Two of layer which's weight arrays (for overlap checks): W_O's and g_kv. */
static float* l_w_o(int which) {
  return which == 0 ? g_l_wo : which == 1 ? g_lq_wo : (float*)(void*)g_lq8[which - 2].m[5];
}
static float* l_g_kv(int which) { return which == 0 ? g_l_gkv : which == 1 ? g_lq_gkv : g_l8_g[1]; }

/* fn of latent layer `which` on its object, then args (a parenthesised tail: (, x, T, y)). */
#define L_CALL(which, fn, args)                          \
  ((which) == 0   ? clat_##fn(&g_lat L_ARGS_ args)       \
   : (which) == 1 ? clat_q_##fn(&g_lat_q L_ARGS_ args)   \
   : (which) == 2 ? clat_q8_##fn(&g_lat_q8 L_ARGS_ args) \
                  : clat_q8n_##fn(&g_lat_q8n L_ARGS_ args))
#define L_ARGS_(...) __VA_ARGS__

static microattn_status l_set_rope(int which, const microattn_rope* r) {
  return L_CALL(which, set_rope, (, r));
}
static microattn_rope l_rope(int which) { return L_CALL(which, rope, ()); }
static microattn_status l_set_scale(int which, float s) { return L_CALL(which, set_scale, (, s)); }
static float l_scale(int which) { return L_CALL(which, scale, ()); }
static microattn_status l_set_rms_eps(int which, float e) {
  return L_CALL(which, set_rms_eps, (, e));
}
static float l_rms_eps(int which) { return L_CALL(which, rms_eps, ()); }
static microattn_status l_prefill(int which, const float* x, size_t T, float* y) {
  return L_CALL(which, prefill, (, x, T, y));
}
static microattn_status l_decode(int which, const float* x, float* y) {
  return L_CALL(which, decode, (, x, y));
}
static microattn_status l_truncate(int which, size_t n) { return L_CALL(which, truncate, (, n)); }
static microattn_status l_reset(int which) { return L_CALL(which, reset, ()); }
static size_t l_length(int which) { return L_CALL(which, length, ()); }
static microattn_status l_export(int which, size_t first, size_t n, float* rows,
                                 microattn_cache_slice* info) {
  return L_CALL(which, export_cache, (, first, n, rows, info));
}

static void l_prefill_both(int which, const float* x, size_t T) {
  poison(g_y, kT * kDM);
  poison(g_ref, kT * kDM);
  CHECK_STATUS(l_prefill(which, x, T, g_y), MICROATTN_OK);
  CHECK(ref_lat_prefill(which, x, T, g_ref) == MICROATTN_OK);
  CHECK_SAME(g_y, g_ref, T * kDM);
  CHECK(l_length(which) == ref_lat_length(which));
}
static void l_decode_both(int which, const float* x) {
  poison(g_y, kDM);
  poison(g_ref, kDM);
  CHECK_STATUS(l_decode(which, x, g_y), MICROATTN_OK);
  CHECK(ref_lat_decode(which, x, g_ref) == MICROATTN_OK);
  CHECK_SAME(g_y, g_ref, kDM);
  CHECK(l_length(which) == ref_lat_length(which));
}

static void test_latent_storage_matches_cpp(void) {
  static const char* const kNames[] = {"clat", "clat_q", "clat_q8", "clat_q8n"};
  const size_t want[4][4] = {
      {CLAT_BYTES, CLAT_ALIGN, CLAT_CACHE_BYTES, CLAT_CACHE_BYTES_PER_TOKEN},
      {CLAT_Q_BYTES, CLAT_Q_ALIGN, CLAT_Q_CACHE_BYTES, CLAT_Q_CACHE_BYTES_PER_TOKEN},
      {CLAT_Q8_BYTES, CLAT_Q8_ALIGN, CLAT_Q8_CACHE_BYTES, CLAT_Q8_CACHE_BYTES_PER_TOKEN},
      {CLAT_Q8N_BYTES, CLAT_Q8N_ALIGN, CLAT_Q8N_CACHE_BYTES, CLAT_Q8N_CACHE_BYTES_PER_TOKEN}};
  for (int i = 0; i < 4; ++i) {
    size_t bytes = 0, align = 0, per_token = 0;
    ref_object_size(kNames[i], &bytes, &align);
    CHECK(bytes == want[i][0] && align == want[i][1]);
    CHECK(ref_lat_cache_bytes(i, &per_token) == want[i][2] && per_token == want[i][3]);
  }
  CHECK(CLAT_CONFIG_ID == ref_config_id("clat") && CLAT_Q_CONFIG_ID == ref_config_id("clat_q"));
  /* int8: the headers say so; a token of the int8 cache is d_c + d_R bytes and two scales; the
   * fingerprint tells the weight and cache types apart. */
  CHECK(CLAT_Q8_CONFIG_ID == ref_config_id("clat_q8") &&
        CLAT_Q8N_CONFIG_ID == ref_config_id("clat_q8n"));
  CHECK(CLAT_Q8_CONFIG_ID != ref_config_id("clat_q8 fp32 weights") &&
        CLAT_Q8_CONFIG_ID != ref_config_id("clat_q8 fp32 cache") &&
        ref_config_id("clat_q8 fp32 weights") != ref_config_id("clat_q8 fp32 cache"));
  CHECK(CLAT_Q8_INT8_WEIGHTS == 1 && CLAT_Q8_INT8_CACHE == 1 && CLAT_Q8N_INT8_WEIGHTS == 1 &&
        CLAT_Q8N_INT8_CACHE == 0 && CLAT_INT8_WEIGHTS == 0 && CLAT_INT8_CACHE == 0);
  CHECK(CLAT_Q8_PANEL16 == 1 && CLAT_Q8N_PANEL16 == 1 && CLAT_PANEL16 == 0 && CLAT_Q_PANEL16 == 0);
  CHECK(CLAT_Q8_CACHE_BYTES_PER_TOKEN == CLAT_Q8_D_CACHE + 8 &&
        CLAT_Q8N_CACHE_BYTES_PER_TOKEN == 4 * CLAT_Q8N_D_CACHE &&
        CLAT_Q8_CACHE_BYTES >= CLAT_Q8_T_MAX * CLAT_Q8_CACHE_BYTES_PER_TOKEN &&
        CLAT_Q8_CACHE_BYTES < CLAT_Q8N_CACHE_BYTES / 2);
}

/* set_weights: what is missing or wrong is refused and changes nothing (the layer still has no
 * weights: prefill stays MICROATTN_NULL_POINTER). */
static void latent_weights_errors(int which) {
  microattn_latent_weights w = latent_weights(which, MICROATTN_LAYOUT_IN_OUT);
  const microattn_latent_weights good = w;
  CHECK_STATUS(l_set_weights(which, NULL), MICROATTN_NULL_POINTER);
  w.w_dkv = NULL;
  CHECK_STATUS(l_set_weights(which, &w), MICROATTN_NULL_POINTER);
  w = good, w.g_kv = NULL;
  CHECK_STATUS(l_set_weights(which, &w), MICROATTN_NULL_POINTER);
  w = good, w.w_o = NULL;
  CHECK_STATUS(l_set_weights(which, &w), MICROATTN_NULL_POINTER);
  if (which == 0) {
    w = good, w.w_q = NULL, w.w_dq = g_lq_wdq, w.g_q = g_lq_gq, w.w_uq = g_lq_wuq;
    CHECK_STATUS(l_set_weights(which, &w), MICROATTN_NULL_POINTER); /* no query latent */
  } else {
    w = good, w.g_q = NULL, w.w_q = g_l_wq; /* w_q is not what it needs */
    CHECK_STATUS(l_set_weights(which, &w), MICROATTN_NULL_POINTER);
  }
  w = good, w.layout = MICROATTN_LAYOUT_PANEL16;
  CHECK_STATUS(l_set_weights(which, &w), MICROATTN_BAD_ARGUMENT);
  w.layout = 256; /* not IN_OUT for an 8-bit enum */
  CHECK_STATUS(l_set_weights(which, &w), MICROATTN_BAD_ARGUMENT);
  w.layout = -1;
  CHECK_STATUS(l_set_weights(which, &w), MICROATTN_BAD_ARGUMENT);
  poison(g_y, kT * kDM);
  CHECK_STATUS(l_prefill(which, g_x, 3, g_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(l_decode(which, g_x, g_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_y, kT * kDM) && l_length(which) == 0);
}

/* The same for the int8 layers (which 2, 3): each scale array is needed like its matrix. */
static void latent_q8_weights_errors(int which) {
  const microattn_latent_weights_q8 good = latent_q8_weights(which, MICROATTN_LAYOUT_OUT_IN);
  microattn_latent_weights_q8 w = good;
  CHECK_STATUS(l_q8_set_weights(which, NULL), MICROATTN_NULL_POINTER);
  const float** scales[] = {&w.s_dkv, &w.s_ukv, &w.s_o, which == 2 ? &w.s_dq : &w.s_q,
                            which == 2 ? &w.s_uq : &w.s_q};
  for (size_t i = 0; i < sizeof scales / sizeof scales[0]; ++i) {
    w = good;
    *scales[i] = NULL;
    CHECK_STATUS(l_q8_set_weights(which, &w), MICROATTN_NULL_POINTER);
  }
  w = good, w.w_ukv = NULL;
  CHECK_STATUS(l_q8_set_weights(which, &w), MICROATTN_NULL_POINTER);
  w = good, w.g_kv = NULL;
  CHECK_STATUS(l_q8_set_weights(which, &w), MICROATTN_NULL_POINTER);
  w = good, w.layout = 256;
  CHECK_STATUS(l_q8_set_weights(which, &w), MICROATTN_BAD_ARGUMENT);
  w.s_o = NULL; /* NULL is checked before the layout, as in C++ */
  CHECK_STATUS(l_q8_set_weights(which, &w), MICROATTN_NULL_POINTER);
  poison(g_y, kT * kDM);
  CHECK_STATUS(l_prefill(which, g_x, 3, g_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_y, kT * kDM) && l_length(which) == 0);
}

/* Settings: refusals change nothing; what is accepted is read back and given to the
 * reference. */
static void latent_settings(int which, float default_scale) {
  CHECK(l_scale(which) == default_scale && l_rms_eps(which) == 1e-6f);
  CHECK(l_scale(which) == ref_lat_scale(which) && l_rope(which).enabled == 0);
  microattn_rope r = MICROATTN_ROPE_DEFAULTS;
  r.enabled = 1;
  r.rotary_dims = 3; /* odd */
  CHECK_STATUS(l_set_rope(which, &r), MICROATTN_BAD_ARGUMENT);
  r.rotary_dims = 18; /* > d_R */
  CHECK_STATUS(l_set_rope(which, &r), MICROATTN_BAD_ARGUMENT);
  r.rotary_dims = 0;
  r.pairing = 7;
  CHECK_STATUS(l_set_rope(which, &r), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(l_set_rope(which, NULL), MICROATTN_NULL_POINTER);
  CHECK(l_rope(which).enabled == 0);
  r.pairing = MICROATTN_ROPE_ADJACENT; /* DeepSeek's pairing */
  r.start_position = 17;
  CHECK_STATUS(l_set_rope(which, &r), MICROATTN_OK);
  CHECK(ref_lat_set_rope(which, 1, 10000.0f, MICROATTN_ROPE_ADJACENT, 0, 17) == MICROATTN_OK);
  const microattn_rope back = l_rope(which);
  CHECK(back.enabled == 1 && back.pairing == MICROATTN_ROPE_ADJACENT && back.start_position == 17);
  CHECK_STATUS(l_set_rms_eps(which, 0.0f), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(l_set_rms_eps(which, -1e-5f), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(l_set_rms_eps(which, NAN), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(l_set_rms_eps(which, INFINITY), MICROATTN_BAD_ARGUMENT);
  CHECK(l_rms_eps(which) == 1e-6f);
  CHECK_STATUS(l_set_rms_eps(which, 1e-5f), MICROATTN_OK);
  CHECK(ref_lat_set_rms_eps(which, 1e-5f) == MICROATTN_OK && l_rms_eps(which) == 1e-5f);
  CHECK_STATUS(l_set_scale(which, INFINITY), MICROATTN_BAD_SCALE);
  CHECK(l_scale(which) == default_scale);
  CHECK_STATUS(l_set_scale(which, 0.2f), MICROATTN_OK);
  CHECK(ref_lat_set_scale(which, 0.2f) == MICROATTN_OK && l_scale(which) == 0.2f);
}

/* The C layer `which` and its C++ reference through the same steps, bit for bit: weights,
 * settings, prefill (clat_q: in chunks of 5), absorbed decode, truncate, errors, reset. */
static void latent_sequence(int which, int layout, float default_scale) {
  ref_lat_fresh(which);
  L_CALL(which, init, ()); /* a layer run before starts over */
  CHECK(l_length(which) == 0);
  if (which < 2)
    latent_weights_errors(which);
  else
    latent_q8_weights_errors(which);
  CHECK(l_weights(which, layout, 0) == MICROATTN_OK);
  CHECK(l_weights(which, layout, 1) == MICROATTN_OK);
  latent_settings(which, default_scale);

  l_prefill_both(which, g_x, 7);
  l_decode_both(which, g_x + 7 * kDM);
  l_prefill_both(which, g_x + 8 * kDM, 3);
  CHECK(l_length(which) == 11);
  /* The cached latent rows are the C++ object's. */
  static float rows[11 * CLAT_Q8_D_CACHE], ref_rows[11 * CLAT_Q8_D_CACHE]; /* the widest */
  microattn_cache_slice info;
  size_t d_head = 0;
  CHECK_STATUS(l_export(which, 0, 11, rows, &info), MICROATTN_OK);
  CHECK(ref_lat_export(which, 0, 11, ref_rows, &d_head) == MICROATTN_OK);
  CHECK(info.tokens == 11 && info.d_head == d_head);
  CHECK_SAME(rows, ref_rows, 11 * d_head);
  /* RoPE and epsilon are fixed while the cache holds tokens (the rows were made with them). */
  const microattn_rope r = l_rope(which);
  CHECK_STATUS(l_set_rope(which, &r), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(l_set_rms_eps(which, 1e-6f), MICROATTN_BAD_ARGUMENT);
  CHECK(l_rms_eps(which) == 1e-5f);

  CHECK_STATUS(l_truncate(which, 12), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(l_truncate(which, 5), MICROATTN_OK);
  CHECK(ref_lat_truncate(which, 5) == MICROATTN_OK && l_length(which) == 5);
  l_decode_both(which, g_x2);
  l_prefill_both(which, g_x2 + kDM, 12);
  CHECK(l_length(which) == 18);

  /* Errors change nothing: cache full, bad counts, NULL, overlaps (with x, with a weight). */
  poison(g_y, kT * kDM);
  CHECK_STATUS(l_prefill(which, g_x, 7, g_y), MICROATTN_CACHE_FULL);
  CHECK_STATUS(l_prefill(which, g_x, 0, g_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(l_prefill(which, g_x, kT + 1, g_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(l_prefill(which, NULL, 1, g_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(l_decode(which, g_x, NULL), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_y, kT * kDM));
  CHECK_STATUS(l_prefill(which, g_y, 2, g_y + 3), MICROATTN_OVERLAP);
  CHECK_STATUS(l_decode(which, g_x, l_w_o(which) + 1), MICROATTN_OVERLAP);
  CHECK_STATUS(l_decode(which, g_x, l_g_kv(which)), MICROATTN_OVERLAP);
  CHECK(poisoned(g_y, kT * kDM) && l_length(which) == 18);
  l_prefill_both(which, g_x, 6); /* ... and the cache is intact */
  CHECK(l_length(which) == kT);
  CHECK_STATUS(l_decode(which, g_x, g_y), MICROATTN_CACHE_FULL);

  /* reset: empty, settings kept; the same tokens give the same outputs again. */
  CHECK_STATUS(l_reset(which), MICROATTN_OK);
  CHECK(l_length(which) == 0 && l_scale(which) == 0.2f && l_rope(which).enabled == 1 &&
        l_rms_eps(which) == 1e-5f);
  static float first[7 * kDM];
  CHECK_STATUS(l_prefill(which, g_x, 7, first), MICROATTN_OK);
  CHECK_STATUS(l_truncate(which, 0), MICROATTN_OK);
  ref_lat_fresh(which); /* back in step: weights and settings again, then the 7 tokens */
  CHECK(l_weights(which, layout, 1) == MICROATTN_OK &&
        ref_lat_set_rope(which, 1, 10000.0f, MICROATTN_ROPE_ADJACENT, 0, 17) == MICROATTN_OK &&
        ref_lat_set_rms_eps(which, 1e-5f) == MICROATTN_OK &&
        ref_lat_set_scale(which, 0.2f) == MICROATTN_OK);
  l_prefill_both(which, g_x, 7);
  CHECK_SAME(g_y, first, 7 * kDM);
}

static void test_latent_sequence(void) { latent_sequence(0, MICROATTN_LAYOUT_IN_OUT, 0.25f); }
static void test_latent_query_latent_sequence(void) {
  latent_sequence(1, MICROATTN_LAYOUT_OUT_IN, 0.25f); /* 1 / sqrt(10 + 6) */
}

/* int8 weights (PANEL16 from flash-like arrays; clat_q8n IN_OUT) and clat_q8's int8 cache,
 * bit for bit against the C++ layers. */
static void test_latent_q8_sequence(void) {
  ref_lat_fresh(2);
  const float default_scale = ref_lat_scale(2); /* 1/sqrt(16 + 16), both layers */
  CHECK(fabsf(default_scale - 0.1767767f) < 1e-6f);
  latent_sequence(2, MICROATTN_LAYOUT_PANEL16, default_scale);
  latent_sequence(3, MICROATTN_LAYOUT_IN_OUT, default_scale);
  latent_sequence(3, MICROATTN_LAYOUT_PANEL16, default_scale);
  latent_sequence(2, MICROATTN_LAYOUT_OUT_IN, default_scale);
}

/* clat_q8's int8 cache exports dequantised rows; another object imports (quantises) them and
 * continues as the original does, within a rounding of the scales. */
static void test_latent_q8_cache_export_import(void) {
  enum { kN = 7, kD = CLAT_Q8_D_CACHE };
  static float rows[kN * kD], y2[kDM];
  static clat_q8 other; /* zero */
  microattn_cache_slice info;
  CHECK(clat_q8_length(&g_lat_q8) == kN); /* the end of latent_sequence(2, ..) */
  CHECK_STATUS(clat_q8_export_cache(&g_lat_q8, 0, kN, rows, &info), MICROATTN_OK);
  CHECK(info.tokens == kN && info.kv_heads == 1 && info.d_head == kD);
  const microattn_latent_weights_q8 w = latent_q8_weights(2, MICROATTN_LAYOUT_OUT_IN);
  CHECK_STATUS(clat_q8_set_weights(&other, &w), MICROATTN_OK);
  CHECK_STATUS(clat_q8_set_rope(&other, &info.rope), MICROATTN_OK);
  CHECK_STATUS(clat_q8_set_rms_eps(&other, clat_q8_rms_eps(&g_lat_q8)), MICROATTN_OK);
  CHECK_STATUS(clat_q8_set_scale(&other, clat_q8_scale(&g_lat_q8)), MICROATTN_OK);
  CHECK_STATUS(clat_q8_import_cache(&other, &info, rows), MICROATTN_OK);
  CHECK(clat_q8_length(&other) == kN);
  CHECK_STATUS(clat_q8_decode(&g_lat_q8, g_x2, g_y), MICROATTN_OK);
  CHECK_STATUS(clat_q8_decode(&other, g_x2, y2), MICROATTN_OK);
  float amax = 0.0f;
  const float err = max_abs_diff(g_y, y2, kDM, &amax);
  CHECK(amax > 0.0f && err <= 1e-5f * amax);
}

static void test_latent_export_import(void) {
  /* g_lat holds 7 tokens (the end of latent_sequence(0)); its rows as the reference's. */
  enum { kN = 5, kD = CLAT_D_CACHE };
  static float rows[kT * kD], ref_rows[kN * kD], y2[kDM];
  microattn_cache_slice info;
  size_t d_head = 0;
  CHECK(clat_length(&g_lat) == 7 && ref_lat_length(0) == 7);
  poison(rows, kT * kD);
  CHECK_STATUS(clat_export_cache(&g_lat, 3, 5, rows, &info), MICROATTN_BAD_ARGUMENT); /* > 7 */
  CHECK_STATUS(clat_export_cache(&g_lat, 0, 0, rows, &info), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(clat_export_cache(&g_lat, 0, 1, rows, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_export_cache(&g_lat, 0, 1, NULL, &info), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_export_cache(NULL, 0, 1, rows, &info), MICROATTN_NULL_POINTER);
  CHECK(poisoned(rows, kT * kD));
  CHECK_STATUS(clat_export_cache(&g_lat, 2, kN, rows, &info), MICROATTN_OK);
  CHECK(ref_lat_export(0, 2, kN, ref_rows, &d_head) == MICROATTN_OK);
  CHECK_SAME(rows, ref_rows, kN * kD);
  CHECK(poisoned(rows + kN * kD, (kT - kN) * kD)); /* n rows written, no more */
  CHECK(info.first == 2 && info.tokens == kN && info.kv_heads == 1 && info.d_head == kD &&
        d_head == kD && info.rope.enabled == 1 && info.rope.start_position == 17 &&
        info.rope.pairing == MICROATTN_ROPE_ADJACENT);

  /* Into another object of the same layer, set up alike: the whole prefix, then both decode
   * the same bits. */
  static clat other; /* zero */
  CHECK_STATUS(clat_export_cache(&g_lat, 0, 7, rows, &info), MICROATTN_OK);
  CHECK_STATUS(clat_import_cache(&other, &info, rows), MICROATTN_BAD_ARGUMENT); /* RoPE off */
  const microattn_latent_weights w = latent_weights(0, MICROATTN_LAYOUT_IN_OUT);
  CHECK_STATUS(clat_set_weights(&other, &w), MICROATTN_OK);
  CHECK_STATUS(clat_set_rope(&other, &info.rope), MICROATTN_OK);
  CHECK_STATUS(clat_set_rms_eps(&other, clat_rms_eps(&g_lat)), MICROATTN_OK);
  CHECK_STATUS(clat_set_scale(&other, clat_scale(&g_lat)), MICROATTN_OK);
  microattn_cache_slice wrong = info;
  wrong.first = 1; /* does not continue an empty cache */
  CHECK_STATUS(clat_import_cache(&other, &wrong, rows), MICROATTN_BAD_ARGUMENT);
  wrong = info, wrong.d_head = kD - 1;
  CHECK_STATUS(clat_import_cache(&other, &wrong, rows), MICROATTN_BAD_ARGUMENT);
  wrong = info, wrong.kv_heads = 2;
  CHECK_STATUS(clat_import_cache(&other, &wrong, rows), MICROATTN_BAD_ARGUMENT);
  wrong = info, wrong.rope.start_position = 0;
  CHECK_STATUS(clat_import_cache(&other, &wrong, rows), MICROATTN_BAD_ARGUMENT);
  wrong = info, wrong.tokens = kT + 1;
  CHECK_STATUS(clat_import_cache(&other, &wrong, rows), MICROATTN_CACHE_FULL);
  CHECK_STATUS(clat_import_cache(&other, &info, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_import_cache(&other, NULL, rows), MICROATTN_NULL_POINTER);
  CHECK(clat_length(&other) == 0);
  CHECK_STATUS(clat_import_cache(&other, &info, rows), MICROATTN_OK);
  CHECK(clat_length(&other) == 7);
  CHECK_STATUS(clat_decode(&g_lat, g_x2, g_y), MICROATTN_OK);
  CHECK_STATUS(clat_decode(&other, g_x2, y2), MICROATTN_OK);
  CHECK_SAME(g_y, y2, kDM);
  /* clat_q's rows (another d_c + d_R) are not clat's. */
  static float qrows[CLAT_Q_D_CACHE];
  CHECK(clat_q_length(&g_lat_q) == 7);
  CHECK_STATUS(clat_q_export_cache(&g_lat_q, 6, 1, qrows, &info), MICROATTN_OK);
  CHECK(info.d_head == CLAT_Q_D_CACHE);
  info.first = clat_length(&other);
  CHECK_STATUS(clat_import_cache(&other, &info, qrows), MICROATTN_BAD_ARGUMENT);
  CHECK(clat_length(&other) == 8);
}

static void test_latent_executor(void) {
  /* clat_q (MaxWorkers{3}): prefill 9 and decode 3 tokens with 2 and 3 workers, the same bits
   * as on the calling thread. */
  static clat_q split, plain; /* .bss: no executor */
  static float y_plain[12 * kDM], y_split[12 * kDM];
  size_t calls = 0;
  microattn_executor ex = {run_reversed, &calls, 4}; /* > MAX_WORKERS */
  CHECK_STATUS(clat_q_set_executor(&split, &ex), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(clat_q_set_executor(&split, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_q_set_executor(NULL, &ex), MICROATTN_NULL_POINTER);
  ex.workers = 2;
  CHECK_STATUS(clat_set_executor(&g_lat, &ex), MICROATTN_BAD_ARGUMENT); /* MaxWorkers 1 */
  const microattn_executor no_run = {NULL, NULL, 2};
  CHECK_STATUS(clat_q_set_executor(&split, &no_run), MICROATTN_BAD_ARGUMENT);
  const microattn_latent_weights w = latent_weights(1, MICROATTN_LAYOUT_OUT_IN);
  microattn_rope r = MICROATTN_ROPE_DEFAULTS;
  r.enabled = 1;
  clat_q* objs[2] = {&plain, &split};
  float* outs[2] = {y_plain, y_split};
  for (size_t workers = 2; workers <= 3; ++workers) {
    ex.workers = workers;
    CHECK_STATUS(clat_q_set_executor(&split, &ex), MICROATTN_OK);
    calls = 0;
    for (int o = 0; o < 2; ++o) {
      CHECK_STATUS(clat_q_reset(objs[o]), MICROATTN_OK);
      CHECK_STATUS(clat_q_set_weights(objs[o], &w), MICROATTN_OK);
      CHECK_STATUS(clat_q_set_rope(objs[o], &r), MICROATTN_OK);
      CHECK_STATUS(clat_q_prefill(objs[o], g_x, 9, outs[o]), MICROATTN_OK);
      for (size_t t = 9; t < 12; ++t)
        CHECK_STATUS(clat_q_decode(objs[o], g_x + t * kDM, outs[o] + t * kDM), MICROATTN_OK);
    }
    CHECK(calls >= 4); /* the prefill and every decode step went through it */
    CHECK_SAME(y_split, y_plain, 12 * kDM);
  }
}

static void test_latent_null_and_misaligned(void) {
  const microattn_latent_weights w = latent_weights(0, MICROATTN_LAYOUT_IN_OUT);
  const microattn_rope r = MICROATTN_ROPE_DEFAULTS;
  microattn_cache_slice info;
  memset(&info, 0, sizeof info);
  CHECK_STATUS(clat_set_weights(NULL, &w), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_set_rope(NULL, &r), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_set_scale(NULL, 0.5f), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_set_rms_eps(NULL, 1e-5f), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_prefill(NULL, g_x, 1, g_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_decode(NULL, g_x, g_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_truncate(NULL, 0), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_reset(NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clat_import_cache(NULL, &info, g_y), MICROATTN_NULL_POINTER);
  CHECK(clat_length(NULL) == 0 && clat_scale(NULL) == 0.0f && clat_rms_eps(NULL) == 0.0f &&
        clat_rope(NULL).enabled == 0);
  clat_init(NULL); /* nothing */
  /* init zeroes a used object: as new. */
  static clat used;
  CHECK_STATUS(clat_set_weights(&used, &w), MICROATTN_OK);
  CHECK_STATUS(clat_set_scale(&used, 0.5f), MICROATTN_OK);
  CHECK_STATUS(clat_decode(&used, g_x, g_y), MICROATTN_OK);
  clat_init(&used);
  CHECK(clat_length(&used) == 0 && clat_scale(&used) == 0.25f);
  CHECK_STATUS(clat_decode(&used, g_x, g_y), MICROATTN_NULL_POINTER); /* no weights */
  /* An object that is not aligned to CLAT_ALIGN: every function refuses it. */
  static alignas(CLAT_ALIGN) unsigned char raw[CLAT_BYTES + CLAT_ALIGN];
  if (CLAT_ALIGN == 1) return;
  clat* odd = (clat*)(void*)(raw + 1);
  CHECK_STATUS(clat_set_weights(odd, &w), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(clat_set_rms_eps(odd, 1e-5f), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(clat_prefill(odd, g_x, 1, g_y), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(clat_decode(odd, g_x, g_y), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(clat_export_cache(odd, 0, 1, g_y, &info), MICROATTN_BAD_ARGUMENT);
  CHECK(clat_length(odd) == 0 && clat_rms_eps(odd) == 0.0f);
}

/* ------------------------------------------------------------------------ building blocks */

/* What the blocks' headers say (the probe's values), usable in constant expressions. */
_Static_assert(CLIN_IN == 32 && CLIN_OUT == 24 && CLIN_BIAS == 1 && CLIN_INT8_WEIGHTS == 0 &&
                   CLIN_MAX_WORKERS == 1 && CLIN_Q8_OUT == 48 && CLIN_Q8_BIAS == 0 &&
                   CLIN_Q8_INT8_WEIGHTS == 1 && CLIN_Q8_MAX_WORKERS == 3,
               "linear shape");
_Static_assert(CMLP_D_MODEL == 32 && CMLP_D_HIDDEN == 48 && CMLP_ACTIVATION == 0 &&
                   CMLP_GATED == 1 && CMLP_BIAS == 0 && CMLP_MAX_ROWS == 16 &&
                   CMLP_GELU_D_HIDDEN == 40 && CMLP_GELU_ACTIVATION == 2 && CMLP_GELU_GATED == 0 &&
                   CMLP_GELU_BIAS == 1 && CMLP_GELU_MAX_ROWS == 5 && CMLP_GELU_MAX_WORKERS == 3 &&
                   CMLP_Q8_ACTIVATION == 1 && CMLP_Q8_INT8_WEIGHTS == 1 && CMLP_Q8_BIAS == 1,
               "mlp shape");
_Static_assert(CRMS_D == 32 && CLN_D == 32 && CLN_BIAS == 1 && CLN_NB_BIAS == 0, "norm shape");
_Static_assert(sizeof(cmlp_gelu) == CMLP_GELU_BYTES && alignof(cmlp_gelu) == CMLP_GELU_ALIGN &&
                   sizeof(crms) == CRMS_BYTES,
               "block storage");
_Static_assert(CLN_CONFIG_ID != CLN_NB_CONFIG_ID && CLN_CONFIG_ID != CRMS_CONFIG_ID &&
                   CMLP_CONFIG_ID != CMLP_Q8_CONFIG_ID && CLIN_CONFIG_ID != CLIN_Q8_CONFIG_ID,
               "block fingerprints differ");

enum { kBH = 48 }; /* the widest hidden / output width of the blocks */

static clin g_lin;           /* static, never initialised */
static clin_q8 g_lin_q8;     /* int8 weights, 3 workers */
static cmlp g_mlp;           /* SwiGLU */
static cmlp_gelu g_mlp_gelu; /* GELU, biases, 3 workers, 5 rows a pass */
static cmlp_q8 g_mlp_q8;     /* GeGLU, int8, biases */
static crms g_rms;
static cln g_ln;
static cln_nb g_ln_nb;

/* Block weights in RAM (OUT_IN as read; IN_OUT is the same floats read the other way), their
 * biases, a PANEL16 copy of the linear matrix, int8 copies, and outputs of up to kBH columns. */
static float g_b_w[3][kDM * kBH], g_b_bias[3][kBH], g_b_panel[kDM * 32];
static float g_b_g[kDM], g_b_beta[kDM];
static alignas(16) int8_t g_b_q[3][kDM * kBH];
static float g_b_s[3][kBH];
static float g_b_y[kT * kBH], g_b_ref[kT * kBH];

static void fill_block_data(void) {
  for (int i = 0; i < 3; ++i) {
    fill(g_b_w[i], kDM * kBH, 41 + (uint32_t)i, 0.2f);
    fill(g_b_bias[i], kBH, 44 + (uint32_t)i, 0.1f);
  }
  fill(g_b_g, kDM, 47, 0.5f);
  for (size_t i = 0; i < kDM; ++i) g_b_g[i] += 1.0f;
  fill(g_b_beta, kDM, 48, 0.2f);
  /* clin's matrix (OUT_IN [24][32]) as PANEL16 [2][32][16], the padding columns zero. */
  for (size_t p = 0; p < 2; ++p)
    for (size_t i = 0; i < kDM; ++i)
      for (size_t c = 0; c < 16; ++c) {
        const size_t o = 16 * p + c;
        g_b_panel[(p * kDM + i) * 16 + c] = o < CLIN_OUT ? g_b_w[0][o * kDM + i] : 0.0f;
      }
}

/* The three matrices of an MLP of hidden width dh, int8 in `layout` (their fp32 source read as
 * OUT_IN): g_b_q / g_b_s. */
static void quantize_blocks(size_t dh, int layout) {
  CHECK_STATUS(microattn_quantize_int8(g_b_w[0], MICROATTN_LAYOUT_OUT_IN, kDM, dh, layout, g_b_q[0],
                                       g_b_s[0], NULL),
               MICROATTN_OK);
  CHECK_STATUS(microattn_quantize_int8(g_b_w[1], MICROATTN_LAYOUT_OUT_IN, kDM, dh, layout, g_b_q[1],
                                       g_b_s[1], NULL),
               MICROATTN_OK);
  CHECK_STATUS(microattn_quantize_int8(g_b_w[2], MICROATTN_LAYOUT_OUT_IN, dh, kDM, layout, g_b_q[2],
                                       g_b_s[2], NULL),
               MICROATTN_OK);
}

static void test_blocks_storage_matches_cpp(void) {
  static const struct {
    const char* name;
    size_t bytes, align;
  } kBlocks[] = {{"clin", CLIN_BYTES, CLIN_ALIGN},
                 {"clin_q8", CLIN_Q8_BYTES, CLIN_Q8_ALIGN},
                 {"cmlp", CMLP_BYTES, CMLP_ALIGN},
                 {"cmlp_gelu", CMLP_GELU_BYTES, CMLP_GELU_ALIGN},
                 {"cmlp_q8", CMLP_Q8_BYTES, CMLP_Q8_ALIGN},
                 {"crms", CRMS_BYTES, CRMS_ALIGN},
                 {"cln", CLN_BYTES, CLN_ALIGN},
                 {"cln_nb", CLN_NB_BYTES, CLN_NB_ALIGN}};
  for (size_t i = 0; i < sizeof kBlocks / sizeof kBlocks[0]; ++i) {
    size_t bytes = 0, align = 0;
    ref_block_size(kBlocks[i].name, &bytes, &align);
    CHECK(bytes == kBlocks[i].bytes && align == kBlocks[i].align);
  }
  CHECK(ref_block_config_id("clin") == CLIN_CONFIG_ID);
  CHECK(ref_block_config_id("cmlp") == CMLP_CONFIG_ID);
  CHECK(ref_block_config_id("cmlp_gelu") == CMLP_GELU_CONFIG_ID);
  CHECK(ref_block_config_id("crms") == CRMS_CONFIG_ID);
  CHECK(ref_block_config_id("cln") == CLN_CONFIG_ID);
  /* One option apart (a bias, the rows per pass, the activation, the weights' format): another
   * fingerprint. */
  CHECK(ref_block_config_id("clin without bias") != CLIN_CONFIG_ID);
  CHECK(ref_block_config_id("cmlp_gelu chunk 16") != CMLP_GELU_CONFIG_ID);
  CHECK(ref_block_config_id("cmlp as kGeGlu") != CMLP_CONFIG_ID);
  CHECK(ref_block_config_id("clin with fp16 weights") != CLIN_CONFIG_ID);
  CHECK(ref_block_config_id("cmlp with int8 g32 weights") != CMLP_CONFIG_ID);
}

static microattn_linear_weights lin_weights(int layout) {
  const microattn_linear_weights w = {
      .layout = layout,
      .w = layout == MICROATTN_LAYOUT_PANEL16 ? g_b_panel : g_b_w[0],
      .b = g_b_bias[0]};
  return w;
}

static void test_linear(void) {
  static const size_t kRows[] = {1, 2, 5, 16, 17, kT};
  microattn_linear_weights w = lin_weights(MICROATTN_LAYOUT_OUT_IN);
  /* No weights yet; NULLs; refused weights change nothing. */
  poison(g_b_y, kT * kBH);
  CHECK_STATUS(clin_forward(&g_lin, g_x, kT, g_b_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clin_forward(NULL, g_x, kT, g_b_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clin_set_weights(NULL, &w), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clin_set_weights(&g_lin, NULL), MICROATTN_NULL_POINTER);
  w.b = NULL; /* Bias::kYes: b needed */
  CHECK_STATUS(clin_set_weights(&g_lin, &w), MICROATTN_NULL_POINTER);
  static const int kBadLayouts[] = {3, -1, 256};
  for (size_t i = 0; i < 3; ++i) {
    w = lin_weights(MICROATTN_LAYOUT_OUT_IN);
    w.layout = kBadLayouts[i];
    CHECK_STATUS(clin_set_weights(&g_lin, &w), MICROATTN_BAD_ARGUMENT);
  }
  CHECK_STATUS(clin_forward(&g_lin, g_x, kT, g_b_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_b_y, kT * kBH));
  /* Every layout and row count: the C++ Linear's bits. */
  static const int kLayouts[] = {MICROATTN_LAYOUT_OUT_IN, MICROATTN_LAYOUT_IN_OUT,
                                 MICROATTN_LAYOUT_PANEL16};
  for (size_t l = 0; l < 3; ++l) {
    w = lin_weights(kLayouts[l]);
    CHECK_STATUS(clin_set_weights(&g_lin, &w), MICROATTN_OK);
    for (size_t i = 0; i < sizeof kRows / sizeof kRows[0]; ++i) {
      const size_t M = kRows[i];
      poison(g_b_y, kT * kBH);
      CHECK_STATUS(clin_forward(&g_lin, g_x, M, g_b_y), MICROATTN_OK);
      CHECK(ref_linear_forward(0, kLayouts[l], w.w, NULL, w.b, g_x, M, g_b_ref) == MICROATTN_OK);
      CHECK_SAME(g_b_y, g_b_ref, M * CLIN_OUT);
      CHECK(poisoned(g_b_y + M * CLIN_OUT, (kT - M) * CLIN_OUT)); /* nothing past row M */
    }
  }
  /* PANEL16 is OUT_IN's matrix rearranged: the same result. */
  w = lin_weights(MICROATTN_LAYOUT_OUT_IN);
  CHECK(ref_linear_forward(0, MICROATTN_LAYOUT_OUT_IN, w.w, NULL, w.b, g_x, kT, g_b_y) ==
        MICROATTN_OK);
  CHECK_SAME(g_b_y, g_b_ref, kT * CLIN_OUT);
  /* Refusals of forward write nothing. */
  CHECK_STATUS(clin_set_weights(&g_lin, &w), MICROATTN_OK);
  poison(g_b_y, kT * kBH);
  CHECK_STATUS(clin_forward(&g_lin, g_x, 0, g_b_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(clin_forward(&g_lin, NULL, kT, g_b_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clin_forward(&g_lin, g_x, kT, NULL), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_b_y, kT * kBH));
  static float xy[kT * kDM];
  memcpy(xy, g_x, sizeof xy);
  CHECK_STATUS(clin_forward(&g_lin, xy, 4, xy + 8), MICROATTN_OVERLAP); /* y over x */
  CHECK(memcmp(xy, g_x, sizeof xy) == 0);
  float bias_copy[kBH];
  memcpy(bias_copy, g_b_bias[0], sizeof bias_copy);
  CHECK_STATUS(clin_forward(&g_lin, g_x, 1, g_b_bias[0]), MICROATTN_OVERLAP); /* y over b */
  CHECK_STATUS(clin_forward(&g_lin, g_x, 2, g_b_w[0]), MICROATTN_OVERLAP);    /* y over w */
  CHECK(memcmp(bias_copy, g_b_bias[0], sizeof bias_copy) == 0);
  /* Executor: MaxWorkers 1 takes none but the calling thread. */
  size_t calls = 0;
  microattn_executor ex = {run_reversed, &calls, 2};
  const microattn_executor none = MICROATTN_EXECUTOR_NONE;
  CHECK_STATUS(clin_set_executor(&g_lin, &ex), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(clin_set_executor(&g_lin, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clin_set_executor(NULL, &none), MICROATTN_NULL_POINTER);
  CHECK_STATUS(clin_set_executor(&g_lin, &none), MICROATTN_OK);
  /* A misaligned object: refused by every function; init forgets the weights. */
  static alignas(CLIN_ALIGN) unsigned char raw[CLIN_BYTES + CLIN_ALIGN];
  if (CLIN_ALIGN > 1) {
    clin* bad = (clin*)(void*)(raw + 1);
    CHECK_STATUS(clin_set_weights(bad, &w), MICROATTN_BAD_ARGUMENT);
    CHECK_STATUS(clin_set_executor(bad, &none), MICROATTN_BAD_ARGUMENT);
    CHECK_STATUS(clin_forward(bad, g_x, kT, g_b_y), MICROATTN_BAD_ARGUMENT);
  }
  clin_init(&g_lin);
  clin_init(NULL);
  CHECK_STATUS(clin_forward(&g_lin, g_x, kT, g_b_y), MICROATTN_NULL_POINTER);
}

static void test_linear_q8(void) {
  static const int kLayouts[] = {MICROATTN_LAYOUT_OUT_IN, MICROATTN_LAYOUT_IN_OUT,
                                 MICROATTN_LAYOUT_PANEL16};
  size_t calls = 0;
  microattn_executor ex = {run_reversed, &calls, 3};
  for (size_t l = 0; l < 3; ++l) {
    CHECK_STATUS(microattn_quantize_int8(g_b_w[0], MICROATTN_LAYOUT_OUT_IN, kDM, CLIN_Q8_OUT,
                                         kLayouts[l], g_b_q[0], g_b_s[0], NULL),
                 MICROATTN_OK);
    microattn_linear_weights_q8 w = {.layout = kLayouts[l], .w = g_b_q[0], .s = NULL};
    CHECK_STATUS(clin_q8_set_weights(&g_lin_q8, &w), MICROATTN_NULL_POINTER); /* scales */
    w.s = g_b_s[0];
    CHECK_STATUS(clin_q8_set_weights(&g_lin_q8, &w), MICROATTN_OK);
    for (size_t M = 1; M <= kT; M += 7) {
      ex.workers = 1 + M % 3;
      CHECK_STATUS(clin_q8_set_executor(&g_lin_q8, &ex), MICROATTN_OK);
      poison(g_b_y, kT * kBH);
      calls = 0;
      CHECK_STATUS(clin_q8_forward(&g_lin_q8, g_x, M, g_b_y), MICROATTN_OK);
      CHECK(calls == (ex.workers > 1 ? 1u : 0u)); /* one split call, or none */
      CHECK(ref_linear_forward(1, kLayouts[l], w.w, w.s, NULL, g_x, M, g_b_ref) == MICROATTN_OK);
      CHECK_SAME(g_b_y, g_b_ref, M * CLIN_Q8_OUT); /* any worker count: the same bits */
      CHECK(poisoned(g_b_y + M * CLIN_Q8_OUT, (kT - M) * CLIN_Q8_OUT));
    }
  }
  ex.workers = 4; /* > MAX_WORKERS */
  CHECK_STATUS(clin_q8_set_executor(&g_lin_q8, &ex), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(clin_q8_forward(&g_lin_q8, g_x, 1, g_b_s[0]), MICROATTN_OVERLAP); /* y over s */
}

static microattn_mlp_weights mlp_weights(int layout, int biases) {
  const microattn_mlp_weights w = {.layout = layout,
                                   .w_gate = g_b_w[0],
                                   .w_up = g_b_w[1],
                                   .w_down = g_b_w[2],
                                   .b_gate = biases ? g_b_bias[0] : NULL,
                                   .b_up = biases ? g_b_bias[1] : NULL,
                                   .b_down = biases ? g_b_bias[2] : NULL};
  return w;
}
static void mlp_arrays(const microattn_mlp_weights* w, const void* m[3], const float* b[3]) {
  m[0] = w->w_gate, m[1] = w->w_up, m[2] = w->w_down;
  b[0] = w->b_gate, b[1] = w->b_up, b[2] = w->b_down;
}

static void test_mlp(void) {
  static const size_t kRows[] = {1, 2, 4, 5, 6, 16, 17, kT};
  static const int kLayouts[] = {MICROATTN_LAYOUT_OUT_IN, MICROATTN_LAYOUT_IN_OUT};
  const float* const no_s[3] = {NULL, NULL, NULL};
  /* The SwiGLU MLP: refusals first (gated: w_gate needed). */
  microattn_mlp_weights w = mlp_weights(MICROATTN_LAYOUT_OUT_IN, 0);
  poison(g_b_y, kT * kBH);
  CHECK_STATUS(cmlp_forward(&g_mlp, g_x, kT, g_b_y), MICROATTN_NULL_POINTER); /* no weights */
  w.w_gate = NULL;
  CHECK_STATUS(cmlp_set_weights(&g_mlp, &w), MICROATTN_NULL_POINTER);
  w = mlp_weights(7, 0);
  CHECK_STATUS(cmlp_set_weights(&g_mlp, &w), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(cmlp_set_weights(&g_mlp, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cmlp_set_weights(NULL, &w), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cmlp_forward(&g_mlp, g_x, kT, g_b_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_b_y, kT * kBH));
  for (size_t l = 0; l < 2; ++l) {
    const microattn_mlp_weights ws = mlp_weights(kLayouts[l], 0);
    const microattn_mlp_weights wg = mlp_weights(kLayouts[l], 1);
    const void* ms[3];
    const float* bs[3];
    const void* mg[3];
    const float* bg[3];
    mlp_arrays(&ws, ms, bs);
    mlp_arrays(&wg, mg, bg);
    CHECK_STATUS(cmlp_set_weights(&g_mlp, &ws), MICROATTN_OK);
    CHECK_STATUS(cmlp_gelu_set_weights(&g_mlp_gelu, &wg), MICROATTN_OK);
    for (size_t i = 0; i < sizeof kRows / sizeof kRows[0]; ++i) {
      const size_t M = kRows[i];
      poison(g_b_y, kT * kBH);
      CHECK_STATUS(cmlp_forward(&g_mlp, g_x, M, g_b_y), MICROATTN_OK);
      CHECK(ref_mlp_forward(0, kLayouts[l], ms, no_s, bs, g_x, M, g_b_ref) == MICROATTN_OK);
      CHECK_SAME(g_b_y, g_b_ref, M * kDM);
      CHECK(poisoned(g_b_y + M * kDM, (kT - M) * kDM));
      /* GELU, biases, 5 rows a pass (M = 6, 16, 17, 24: several passes). */
      poison(g_b_y, kT * kBH);
      CHECK_STATUS(cmlp_gelu_forward(&g_mlp_gelu, g_x, M, g_b_y), MICROATTN_OK);
      CHECK(ref_mlp_forward(1, kLayouts[l], mg, no_s, bg, g_x, M, g_b_ref) == MICROATTN_OK);
      CHECK_SAME(g_b_y, g_b_ref, M * kDM);
      CHECK(poisoned(g_b_y + M * kDM, (kT - M) * kDM));
    }
  }
  /* Ungated: w_gate is not needed; the biases are. */
  w = mlp_weights(MICROATTN_LAYOUT_OUT_IN, 1);
  w.w_gate = NULL, w.b_gate = NULL;
  CHECK_STATUS(cmlp_gelu_set_weights(&g_mlp_gelu, &w), MICROATTN_OK);
  w.b_down = NULL;
  CHECK_STATUS(cmlp_gelu_set_weights(&g_mlp_gelu, &w), MICROATTN_NULL_POINTER);
  /* The executor: 2 and 3 workers, the same bits as one (one row: the GEMVs split by columns,
   * several: by rows). */
  size_t calls = 0;
  microattn_executor ex = {run_reversed, &calls, 3};
  w = mlp_weights(MICROATTN_LAYOUT_OUT_IN, 1);
  CHECK_STATUS(cmlp_gelu_set_weights(&g_mlp_gelu, &w), MICROATTN_OK);
  CHECK_STATUS(cmlp_gelu_forward(&g_mlp_gelu, g_x, kT, g_b_ref), MICROATTN_OK);
  static float one_row[kDM];
  CHECK_STATUS(cmlp_gelu_forward(&g_mlp_gelu, g_x, 1, one_row), MICROATTN_OK);
  for (size_t workers = 2; workers <= 3; ++workers) {
    ex.workers = workers;
    CHECK_STATUS(cmlp_gelu_set_executor(&g_mlp_gelu, &ex), MICROATTN_OK);
    calls = 0;
    CHECK_STATUS(cmlp_gelu_forward(&g_mlp_gelu, g_x, kT, g_b_y), MICROATTN_OK);
    CHECK(calls > 0);
    CHECK_SAME(g_b_y, g_b_ref, kT * kDM);
    CHECK_STATUS(cmlp_gelu_forward(&g_mlp_gelu, g_x, 1, g_b_y), MICROATTN_OK);
    CHECK_SAME(g_b_y, one_row, kDM);
  }
  ex.workers = 4;
  CHECK_STATUS(cmlp_gelu_set_executor(&g_mlp_gelu, &ex), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(cmlp_set_executor(&g_mlp, &ex), MICROATTN_BAD_ARGUMENT);
  /* Refusals of forward write nothing: M == 0, NULLs, y over x or a weight array. */
  poison(g_b_y, kT * kBH);
  CHECK_STATUS(cmlp_gelu_forward(&g_mlp_gelu, g_x, 0, g_b_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(cmlp_gelu_forward(&g_mlp_gelu, NULL, 1, g_b_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cmlp_gelu_forward(&g_mlp_gelu, g_x, 1, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cmlp_gelu_forward(NULL, g_x, 1, g_b_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_b_y, kT * kBH));
  static float xy[kT * kDM];
  memcpy(xy, g_x, sizeof xy);
  CHECK_STATUS(cmlp_gelu_forward(&g_mlp_gelu, xy, 3, xy), MICROATTN_OVERLAP); /* y is x */
  CHECK(memcmp(xy, g_x, sizeof xy) == 0);
  float down_copy[kBH];
  memcpy(down_copy, g_b_bias[2], sizeof down_copy);
  CHECK_STATUS(cmlp_gelu_forward(&g_mlp_gelu, g_x, 1, g_b_bias[2]), MICROATTN_OVERLAP);
  CHECK_STATUS(cmlp_gelu_forward(&g_mlp_gelu, g_x, 2, g_b_w[2] + 16), MICROATTN_OVERLAP);
  CHECK(memcmp(down_copy, g_b_bias[2], sizeof down_copy) == 0);
}

static void test_mlp_q8(void) {
  static const int kLayouts[] = {MICROATTN_LAYOUT_OUT_IN, MICROATTN_LAYOUT_PANEL16,
                                 MICROATTN_LAYOUT_IN_OUT};
  for (size_t l = 0; l < 3; ++l) {
    quantize_blocks(CMLP_Q8_D_HIDDEN, kLayouts[l]);
    microattn_mlp_weights_q8 w = {.layout = kLayouts[l],
                                  .w_gate = g_b_q[0],
                                  .s_gate = g_b_s[0],
                                  .w_up = g_b_q[1],
                                  .s_up = g_b_s[1],
                                  .w_down = g_b_q[2],
                                  .s_down = NULL,
                                  .b_gate = g_b_bias[0],
                                  .b_up = g_b_bias[1],
                                  .b_down = g_b_bias[2]};
    CHECK_STATUS(cmlp_q8_set_weights(&g_mlp_q8, &w), MICROATTN_NULL_POINTER); /* a scale */
    w.s_down = g_b_s[2];
    CHECK_STATUS(cmlp_q8_set_weights(&g_mlp_q8, &w), MICROATTN_OK);
    const void* m[3] = {w.w_gate, w.w_up, w.w_down};
    const float* s[3] = {w.s_gate, w.s_up, w.s_down};
    const float* b[3] = {w.b_gate, w.b_up, w.b_down};
    for (size_t M = 1; M <= kT; M += 5) {
      poison(g_b_y, kT * kBH);
      CHECK_STATUS(cmlp_q8_forward(&g_mlp_q8, g_x, M, g_b_y), MICROATTN_OK);
      CHECK(ref_mlp_forward(2, kLayouts[l], m, s, b, g_x, M, g_b_ref) == MICROATTN_OK);
      CHECK_SAME(g_b_y, g_b_ref, M * kDM);
      CHECK(poisoned(g_b_y + M * kDM, (kT - M) * kDM));
    }
  }
}

static void test_norms(void) {
  static float xy[kT * kDM];
  /* Defaults: no weight, the C++ epsilons. */
  CHECK(crms_eps(&g_rms) == ref_norm_default_eps(0));
  CHECK(cln_eps(&g_ln) == ref_norm_default_eps(1) &&
        cln_nb_eps(&g_ln_nb) == ref_norm_default_eps(1));
  CHECK(crms_eps(NULL) == 0.0f && cln_eps(NULL) == 0.0f);
  poison(g_b_y, kT * kBH);
  CHECK_STATUS(crms_forward(&g_rms, g_x, kT, g_b_y), MICROATTN_NULL_POINTER); /* no weight */
  CHECK_STATUS(cln_forward(&g_ln, g_x, kT, g_b_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_b_y, kT * kBH));
  CHECK_STATUS(crms_set_weight(&g_rms, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(crms_set_weight(NULL, g_b_g), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cln_set_weights(&g_ln, g_b_g, NULL), MICROATTN_NULL_POINTER); /* Bias::kYes */
  CHECK_STATUS(cln_nb_set_weights(&g_ln_nb, g_b_g, NULL), MICROATTN_OK);     /* Bias::kNo */
  CHECK_STATUS(crms_set_weight(&g_rms, g_b_g), MICROATTN_OK);
  CHECK_STATUS(cln_set_weights(&g_ln, g_b_g, g_b_beta), MICROATTN_OK);
  /* Epsilon: finite and > 0, else nothing changes. */
  CHECK_STATUS(crms_set_eps(&g_rms, 0.0f), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(crms_set_eps(&g_rms, -1e-5f), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(cln_set_eps(&g_ln, NAN), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(cln_set_eps(&g_ln, INFINITY), MICROATTN_BAD_ARGUMENT);
  CHECK_STATUS(crms_set_eps(NULL, 1e-5f), MICROATTN_NULL_POINTER);
  CHECK(crms_eps(&g_rms) == ref_norm_default_eps(0) && cln_eps(&g_ln) == ref_norm_default_eps(1));
  /* forward: the C++ norms' bits, default and set epsilons, in place too. */
  static const float kEps[] = {0.0f, 1e-3f};
  for (size_t e = 0; e < 2; ++e) {
    if (kEps[e] != 0.0f) {
      CHECK_STATUS(crms_set_eps(&g_rms, kEps[e]), MICROATTN_OK);
      CHECK_STATUS(cln_set_eps(&g_ln, kEps[e]), MICROATTN_OK);
      CHECK_STATUS(cln_nb_set_eps(&g_ln_nb, kEps[e]), MICROATTN_OK);
      CHECK(crms_eps(&g_rms) == kEps[e] && cln_eps(&g_ln) == kEps[e]);
    }
    for (size_t M = 1; M <= kT; M += 23) {
      for (int which = 0; which < 3; ++which) {
        poison(g_b_y, kT * kBH);
        const microattn_status s = which == 0   ? crms_forward(&g_rms, g_x, M, g_b_y)
                                   : which == 1 ? cln_forward(&g_ln, g_x, M, g_b_y)
                                                : cln_nb_forward(&g_ln_nb, g_x, M, g_b_y);
        CHECK_STATUS(s, MICROATTN_OK);
        CHECK(ref_norm_forward(which, g_b_g, which == 1 ? g_b_beta : NULL, kEps[e], g_x, M,
                               g_b_ref) == MICROATTN_OK);
        CHECK_SAME(g_b_y, g_b_ref, M * kDM);
        CHECK(poisoned(g_b_y + M * kDM, (kT - M) * kDM));
        memcpy(xy, g_x, sizeof xy);
        const microattn_status p = which == 0   ? crms_forward(&g_rms, xy, M, xy)
                                   : which == 1 ? cln_forward(&g_ln, xy, M, xy)
                                                : cln_nb_forward(&g_ln_nb, xy, M, xy);
        CHECK_STATUS(p, MICROATTN_OK);
        CHECK_SAME(xy, g_b_ref, M * kDM); /* in place: the same */
      }
    }
  }
  /* LayerNorm's bias is added: with and without it the results differ. */
  CHECK_STATUS(cln_forward(&g_ln, g_x, 1, g_b_y), MICROATTN_OK);
  CHECK_STATUS(cln_nb_forward(&g_ln_nb, g_x, 1, g_b_ref), MICROATTN_OK);
  CHECK(memcmp(g_b_y, g_b_ref, kDM * sizeof(float)) != 0);
  /* Refusals write nothing: M == 0, NULLs, y partly over x, y over g or b. */
  poison(g_b_y, kT * kBH);
  CHECK_STATUS(crms_forward(&g_rms, g_x, 0, g_b_y), MICROATTN_BAD_TOKEN_COUNT);
  CHECK_STATUS(cln_forward(&g_ln, NULL, 1, g_b_y), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cln_forward(&g_ln, g_x, 1, NULL), MICROATTN_NULL_POINTER);
  CHECK_STATUS(crms_forward(NULL, g_x, 1, g_b_y), MICROATTN_NULL_POINTER);
  CHECK(poisoned(g_b_y, kT * kBH));
  memcpy(xy, g_x, sizeof xy);
  CHECK_STATUS(crms_forward(&g_rms, xy, 2, xy + 1), MICROATTN_OVERLAP);
  CHECK_STATUS(cln_forward(&g_ln, xy + kDM, 2, xy), MICROATTN_OVERLAP);
  CHECK(memcmp(xy, g_x, sizeof xy) == 0);
  float g_copy[kDM];
  memcpy(g_copy, g_b_g, sizeof g_copy);
  CHECK_STATUS(crms_forward(&g_rms, g_x, 1, g_b_g), MICROATTN_OVERLAP);
  CHECK_STATUS(cln_forward(&g_ln, g_x, 1, g_b_beta), MICROATTN_OVERLAP);
  CHECK(memcmp(g_copy, g_b_g, sizeof g_copy) == 0);
  /* A misaligned object; init forgets the weight and the epsilon. */
  static alignas(CRMS_ALIGN) unsigned char raw[CRMS_BYTES + CRMS_ALIGN];
  if (CRMS_ALIGN > 1) {
    crms* bad = (crms*)(void*)(raw + 1);
    CHECK_STATUS(crms_set_weight(bad, g_b_g), MICROATTN_BAD_ARGUMENT);
    CHECK_STATUS(crms_set_eps(bad, 1e-5f), MICROATTN_BAD_ARGUMENT);
    CHECK_STATUS(crms_forward(bad, g_x, 1, g_b_y), MICROATTN_BAD_ARGUMENT);
    CHECK(crms_eps(bad) == 0.0f);
  }
  crms_init(&g_rms);
  CHECK(crms_eps(&g_rms) == ref_norm_default_eps(0));
  CHECK_STATUS(crms_forward(&g_rms, g_x, 1, g_b_y), MICROATTN_NULL_POINTER);
}

static void test_readme_example(void) {
  static float wq[64 * 64], wk[32 * 64], wv[32 * 64], wo[64 * 64], x[64 * 64], y[64 * 64],
      ref[64 * 64];
  fill(wq, 64 * 64, 31, 0.125f);
  fill(wk, 32 * 64, 32, 0.125f);
  fill(wv, 32 * 64, 33, 0.125f);
  fill(wo, 64 * 64, 34, 0.125f);
  fill(x, 64 * 64, 35, 1.0f);
  const float* const wa[8] = {wq, wk, wv, wo, NULL, NULL, NULL, NULL};
  CHECK(run_layer(wq, wk, wv, wo, x, 64, y) == 0);
  CHECK(ref_demo_forward(wa, x, 64, ref) == MICROATTN_OK);
  CHECK_SAME(y, ref, 64 * 64);
  poison(y, 64 * 64);
  CHECK(run_layer(wq, wk, wv, wo, x, 65, y) == 1); /* prints "microattn: bad token count" */
  CHECK(poisoned(y, 64 * 64));
}

/* NAME_set_matrices: one microattn_matrix per matrix, whatever the format. The headers name
 * each layer's format; the old per-format structs are the same call (the same outputs); a used
 * matrix of another format is refused after the null checks; an unused one is not looked at. */
_Static_assert(CMHA_WEIGHT_FORMAT == MICROATTN_FORMAT_F32 &&
                   CMHA_Q8_WEIGHT_FORMAT == MICROATTN_FORMAT_QC8 &&
                   CLAT_Q8_WEIGHT_FORMAT == MICROATTN_FORMAT_QC8 &&
                   CLAT_WEIGHT_FORMAT == MICROATTN_FORMAT_F32 &&
                   CLIN_WEIGHT_FORMAT == MICROATTN_FORMAT_F32 &&
                   CLIN_Q8_WEIGHT_FORMAT == MICROATTN_FORMAT_QC8 &&
                   CMLP_GELU_WEIGHT_FORMAT == MICROATTN_FORMAT_F32 &&
                   CMLP_Q8_WEIGHT_FORMAT == MICROATTN_FORMAT_QC8,
               "each header's NAME_WEIGHT_FORMAT is its Config's format");

static microattn_matrix f32_matrix(const float* w) {
  const microattn_matrix m = {w, NULL, MICROATTN_FORMAT_F32};
  return m;
}
static microattn_matrix qc8_matrix(const int8_t* w, const float* s) {
  const microattn_matrix m = {w, s, MICROATTN_FORMAT_QC8};
  return m;
}

static void test_set_matrices_layers(void) {
  static cmha a, b;
  static float ya[kT * kDM], yb[kT * kDM];
  const microattn_weights w = all_weights(MICROATTN_LAYOUT_OUT_IN);
  microattn_layer_matrices m = {w.layout,
                                f32_matrix(w.w_q),
                                f32_matrix(w.w_k),
                                f32_matrix(w.w_v),
                                f32_matrix(w.w_o),
                                w.b_q,
                                w.b_k,
                                w.b_v,
                                w.b_o};
  CHECK_STATUS(cmha_set_matrices(NULL, &m), MICROATTN_NULL_POINTER);
  CHECK_STATUS(cmha_set_matrices(&b, NULL), MICROATTN_NULL_POINTER);
  m.k.format = MICROATTN_FORMAT_QC8;
  CHECK_STATUS(cmha_set_matrices(&b, &m), MICROATTN_BAD_ARGUMENT);
  m.k.data = NULL; /* a missing matrix is named first, as by set_weights */
  CHECK_STATUS(cmha_set_matrices(&b, &m), MICROATTN_NULL_POINTER);
  m.k = f32_matrix(w.w_k);
  m.k.scales = g_wq; /* fp32: scales are ignored */
  poison(yb, kT * kDM);
  CHECK_STATUS(cmha_forward(&b, g_x, kT, yb), MICROATTN_NULL_POINTER); /* nothing was set */
  CHECK(poisoned(yb, kT * kDM));
  CHECK_STATUS(cmha_set_weights(&a, &w), MICROATTN_OK);
  CHECK_STATUS(cmha_set_matrices(&b, &m), MICROATTN_OK);
  CHECK_STATUS(cmha_forward(&a, g_x, kT, ya), MICROATTN_OK);
  CHECK_STATUS(cmha_forward(&b, g_x, kT, yb), MICROATTN_OK);
  CHECK(memcmp(ya, yb, sizeof ya) == 0);

  /* int8 weights: the same struct with QC8 matrices and their scales. */
  static cmha_q8 qa, qb;
  quantize_set(&g_q8_mha, MICROATTN_LAYOUT_IN_OUT);
  const microattn_weights_q8 q = q8_weights(&g_q8_mha, MICROATTN_LAYOUT_IN_OUT, 1);
  microattn_layer_matrices mq = {q.layout,
                                 qc8_matrix(q.w_q, q.s_q),
                                 qc8_matrix(q.w_k, q.s_k),
                                 qc8_matrix(q.w_v, q.s_v),
                                 qc8_matrix(q.w_o, q.s_o),
                                 q.b_q,
                                 q.b_k,
                                 q.b_v,
                                 q.b_o};
  mq.o.scales = NULL;
  CHECK_STATUS(cmha_q8_set_matrices(&qb, &mq), MICROATTN_NULL_POINTER);
  mq.o.scales = q.s_o;
  mq.q.format = MICROATTN_FORMAT_F32;
  CHECK_STATUS(cmha_q8_set_matrices(&qb, &mq), MICROATTN_BAD_ARGUMENT);
  mq.q.format = MICROATTN_FORMAT_QC8;
  CHECK_STATUS(cmha_q8_set_weights(&qa, &q), MICROATTN_OK);
  CHECK_STATUS(cmha_q8_set_matrices(&qb, &mq), MICROATTN_OK);
  CHECK_STATUS(cmha_q8_forward(&qa, g_x, kT, ya), MICROATTN_OK);
  CHECK_STATUS(cmha_q8_forward(&qb, g_x, kT, yb), MICROATTN_OK);
  CHECK(memcmp(ya, yb, sizeof ya) == 0);
}

static void test_set_matrices_latent(void) {
  /* clat_q8 has a query latent: w_q is not used, so its all-zero matrix (format F32) is fine. */
  static clat_q8 a, b;
  static float ya[4 * CLAT_Q8_D_MODEL], yb[4 * CLAT_Q8_D_MODEL];
  _Static_assert(CLAT_Q8_D_MODEL == kDM && CLAT_Q8_D_Q_LATENT > 0, "x rows fit; query latent");
  const microattn_latent_weights_q8 w = latent_q8_weights(2, MICROATTN_LAYOUT_OUT_IN);
  microattn_latent_matrices m;
  memset(&m, 0, sizeof m);
  m.layout = w.layout;
  m.dq = qc8_matrix(w.w_dq, w.s_dq), m.g_q = w.g_q, m.uq = qc8_matrix(w.w_uq, w.s_uq);
  m.dkv = qc8_matrix(w.w_dkv, w.s_dkv), m.g_kv = w.g_kv, m.ukv = qc8_matrix(w.w_ukv, w.s_ukv);
  m.o = qc8_matrix(w.w_o, w.s_o);
  m.ukv.format = MICROATTN_FORMAT_F32;
  CHECK_STATUS(clat_q8_set_matrices(&b, &m), MICROATTN_BAD_ARGUMENT);
  m.ukv.format = MICROATTN_FORMAT_QC8;
  CHECK_STATUS(clat_q8_set_weights(&a, &w), MICROATTN_OK);
  CHECK_STATUS(clat_q8_set_matrices(&b, &m), MICROATTN_OK);
  CHECK_STATUS(clat_q8_prefill(&a, g_x, 4, ya), MICROATTN_OK);
  CHECK_STATUS(clat_q8_prefill(&b, g_x, 4, yb), MICROATTN_OK);
  CHECK(memcmp(ya, yb, sizeof ya) == 0);
}

static void test_set_matrices_blocks(void) {
  static clin la, lb;
  static float ya[kT * kBH], yb[kT * kBH];
  const microattn_linear_weights w = lin_weights(MICROATTN_LAYOUT_OUT_IN);
  microattn_linear_matrices m = {w.layout, f32_matrix(w.w), w.b};
  m.w.format = 0x10801u; /* QC8 given to an fp32 block */
  CHECK_STATUS(clin_set_matrices(&lb, &m), MICROATTN_BAD_ARGUMENT);
  m.w.format = MICROATTN_FORMAT_F32;
  m.b = NULL; /* Bias::kYes: the bias is needed */
  CHECK_STATUS(clin_set_matrices(&lb, &m), MICROATTN_NULL_POINTER);
  m.b = w.b;
  CHECK_STATUS(clin_set_weights(&la, &w), MICROATTN_OK);
  CHECK_STATUS(clin_set_matrices(&lb, &m), MICROATTN_OK);
  CHECK_STATUS(clin_forward(&la, g_x, kT, ya), MICROATTN_OK);
  CHECK_STATUS(clin_forward(&lb, g_x, kT, yb), MICROATTN_OK);
  CHECK(memcmp(ya, yb, kT * CLIN_OUT * sizeof(float)) == 0);
  /* An ungated MLP does not use w_gate: left all zero with another format, still accepted. */
  static cmlp_gelu ga, gb;
  const microattn_mlp_weights mw = mlp_weights(MICROATTN_LAYOUT_OUT_IN, 1);
  microattn_mlp_matrices mm;
  memset(&mm, 0, sizeof mm);
  mm.layout = mw.layout;
  mm.gate.format = MICROATTN_FORMAT_QC8;
  mm.up = f32_matrix(mw.w_up), mm.down = f32_matrix(mw.w_down);
  mm.b_gate = mw.b_gate, mm.b_up = mw.b_up, mm.b_down = mw.b_down;
  CHECK_STATUS(cmlp_gelu_set_weights(&ga, &mw), MICROATTN_OK);
  CHECK_STATUS(cmlp_gelu_set_matrices(&gb, &mm), MICROATTN_OK);
  CHECK_STATUS(cmlp_gelu_forward(&ga, g_x, kT, ya), MICROATTN_OK);
  CHECK_STATUS(cmlp_gelu_forward(&gb, g_x, kT, yb), MICROATTN_OK);
  CHECK(memcmp(ya, yb, kT * CMLP_GELU_D_MODEL * sizeof(float)) == 0);
}

int main(void) {
  fill_data();
  int passed = 0, total = 0;
#define RUN(t) (passed += run(#t, t), ++total)
  RUN(test_status_strings);
  RUN(test_model_check_text);
  RUN(test_storage_matches_cpp);
  RUN(test_layer_errors_before_weights);
  RUN(test_layer_set_weights_errors);
  RUN(test_layer_forward_matches_cpp);
  RUN(test_layer_scale);
  RUN(test_layer_forward_errors_write_nothing);
  RUN(test_layer_object_placement);
  RUN(test_layer_rope_needs_tables);
  RUN(test_layer_panel16_rope);
  RUN(test_core);
  RUN(test_kv_sequence);
  RUN(test_kv_chunked_sequence);
  RUN(test_kv_export_import);
  RUN(test_kv_null_object);
  RUN(test_readme_example);
  RUN(test_q8_storage_matches_cpp);
  RUN(test_quantize_matches_cpp);
  RUN(test_q8_layer_set_weights_errors);
  RUN(test_q8_layer_forward_matches_cpp);
  RUN(test_q8_kv_sequence);
  RUN(test_executor);
  RUN(test_config_ids);
  RUN(test_mask_none_layer);
  RUN(test_kv_window_ring);
  fill_latent_data();
  fill_latent_q8_data();
  RUN(test_latent_storage_matches_cpp);
  RUN(test_latent_sequence);
  RUN(test_latent_query_latent_sequence);
  RUN(test_latent_export_import);
  RUN(test_latent_executor);
  RUN(test_latent_null_and_misaligned);
  RUN(test_latent_q8_sequence);
  RUN(test_latent_q8_cache_export_import);
  fill_block_data();
  RUN(test_blocks_storage_matches_cpp);
  RUN(test_linear);
  RUN(test_linear_q8);
  RUN(test_mlp);
  RUN(test_mlp_q8);
  RUN(test_norms);
  RUN(test_set_matrices_layers);
  RUN(test_set_matrices_latent);
  RUN(test_set_matrices_blocks);
  printf("%d of %d C API tests passed (%d failed checks)\n", passed, total, g_failed_checks);
  return g_failed_checks == 0 ? 0 : 1;
}
