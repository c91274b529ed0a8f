// SPDX-License-Identifier: Apache-2.0
/* The C program of docs/integration.md's recipe (ctest c_api_integration builds it with the
 * page's commands, no CMake): the page's two layers, enc (Mask::kNone) and dec (a
 * sliding-window KV layer), as statics that nothing initialises. Every call must return
 * MICROATTN_OK with finite outputs, and dec must decode past its T_max (a ring never fills).
 * Returns 0 when all of that holds; prints one line (a bare-metal image has no console: its
 * test only links it). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dec.h"
#include "enc.h"
#include "microattn/microattn.h"

static enc g_enc;
static dec g_dec;

static float g_enc_wq[ENC_Q_DIM * ENC_D_MODEL], g_enc_wk[ENC_KV_DIM * ENC_D_MODEL],
    g_enc_wv[ENC_KV_DIM * ENC_D_MODEL], g_enc_wo[ENC_OUT_DIM * ENC_Q_DIM];
static float g_dec_wq[DEC_Q_DIM * DEC_D_MODEL], g_dec_wk[DEC_KV_DIM * DEC_D_MODEL],
    g_dec_wv[DEC_KV_DIM * DEC_D_MODEL], g_dec_wo[DEC_OUT_DIM * DEC_Q_DIM];
static float g_x[ENC_T_MAX * ENC_D_MODEL], g_y[ENC_T_MAX * ENC_OUT_DIM];

_Static_assert(ENC_MASK == 1 && ENC_WINDOW == 0 && DEC_MASK == 0 && DEC_WINDOW == 32,
               "the page's layers");
_Static_assert(ENC_D_MODEL == DEC_D_MODEL && ENC_OUT_DIM == DEC_OUT_DIM, "one x and y for both");

static void fill(float* p, size_t n, uint32_t salt, float amp) {
  uint32_t s = salt * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = amp * ((float)(s >> 8) / 16777216.0f * 2.0f - 1.0f);
  }
}

static int finite(const float* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!isfinite(p[i])) return 0;
  return 1;
}

int main(void) {
  fill(g_enc_wq, sizeof g_enc_wq / sizeof(float), 1, 0.125f);
  fill(g_enc_wk, sizeof g_enc_wk / sizeof(float), 2, 0.125f);
  fill(g_enc_wv, sizeof g_enc_wv / sizeof(float), 3, 0.125f);
  fill(g_enc_wo, sizeof g_enc_wo / sizeof(float), 4, 0.125f);
  fill(g_dec_wq, sizeof g_dec_wq / sizeof(float), 5, 0.125f);
  fill(g_dec_wk, sizeof g_dec_wk / sizeof(float), 6, 0.125f);
  fill(g_dec_wv, sizeof g_dec_wv / sizeof(float), 7, 0.125f);
  fill(g_dec_wo, sizeof g_dec_wo / sizeof(float), 8, 0.125f);
  fill(g_x, sizeof g_x / sizeof(float), 9, 1.0f);
  const microattn_weights we = {.layout = MICROATTN_LAYOUT_OUT_IN,
                                .w_q = g_enc_wq,
                                .w_k = g_enc_wk,
                                .w_v = g_enc_wv,
                                .w_o = g_enc_wo};
  const microattn_weights wd = {.layout = MICROATTN_LAYOUT_OUT_IN,
                                .w_q = g_dec_wq,
                                .w_k = g_dec_wk,
                                .w_v = g_dec_wv,
                                .w_o = g_dec_wo};
  int failed = 0;
  failed |= enc_set_weights(&g_enc, &we) != MICROATTN_OK;
  failed |= enc_forward(&g_enc, g_x, ENC_T_MAX, g_y) != MICROATTN_OK;
  failed |= !finite(g_y, ENC_T_MAX * ENC_OUT_DIM);
  failed |= dec_set_weights(&g_dec, &wd) != MICROATTN_OK;
  failed |= dec_prefill(&g_dec, g_x, ENC_T_MAX, g_y) != MICROATTN_OK;
  for (size_t i = 0; i < DEC_T_MAX + 8; ++i) { /* past T_max: a ring never fills */
    failed |= dec_decode(&g_dec, g_x + (i % ENC_T_MAX) * DEC_D_MODEL, g_y) != MICROATTN_OK;
    failed |= !finite(g_y, DEC_OUT_DIM);
  }
  failed |= dec_length(&g_dec) != ENC_T_MAX + DEC_T_MAX + 8;
  printf("integration: %s (%s)\n", failed ? "FAIL" : "ok",
         microattn_status_string(failed ? MICROATTN_BAD_ARGUMENT : MICROATTN_OK));
  return failed;
}
