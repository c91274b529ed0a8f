// SPDX-License-Identifier: Apache-2.0
/* README.md's C example, built and run by the C API test (test_c_api.c calls run_layer). The
 * part between the readme markers is in README.md (a test checks that they match). */
// [readme-begin]
#include <stdio.h>

#include "demo_layer.h"  // tools/microattn_c.py --name demo_layer --config "64, 64, 4, 2, 16"

static demo_layer g_layer;  // all working memory, in .bss: all-zero bytes are a ready object

// q_proj..o_proj: PyTorch nn.Linear weights as exported ([out][in]), may live in flash.
int run_layer(const float* q_proj, const float* k_proj, const float* v_proj, const float* o_proj,
              const float* x, size_t tokens, float* y) {  // x, y: [tokens][64]
  const microattn_weights w = {.layout = MICROATTN_LAYOUT_OUT_IN,
                               .w_q = q_proj,
                               .w_k = k_proj,
                               .w_v = v_proj,
                               .w_o = o_proj};
  microattn_status s = demo_layer_set_weights(&g_layer, &w);
  if (s == MICROATTN_OK) s = demo_layer_forward(&g_layer, x, tokens, y);
  if (s != MICROATTN_OK) printf("microattn: %s\n", microattn_status_string(s));
  return s == MICROATTN_OK ? 0 : 1;
}
// [readme-end]
