// SPDX-License-Identifier: Apache-2.0
/* tiny_lm_naive.c compiled for llama2.c's stories260K (5 layers, d_model 64, 8 heads on 4 KV
 * heads, d_head 8, SwiGLU 172, vocab 512, context 512, tied head): the plain single-threaded C
 * baseline of issue 49's host target, the same loops under stories_naive_* names. It reads the
 * version-1 model file of tools/export_pytorch.py --llama2c --blob-version 1. */
#define TLM_VOCAB 512
#define TLM_DM 64
#define TLM_LAYERS 5
#define TLM_H 8
#define TLM_HKV 4
#define TLM_DH 8
#define TLM_HIDDEN 172
#define TLM_TMAX 512
#define tlm_naive stories_naive
#define tlm_naive_layer stories_naive_layer
#define tlm_naive_load stories_naive_load
#define tlm_naive_reset stories_naive_reset
#define tlm_naive_step stories_naive_step
#include "stories_naive.h"

#include "tiny_lm_naive.c"

size_t stories_naive_bytes(void) { return sizeof(stories_naive); }
