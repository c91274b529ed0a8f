// SPDX-License-Identifier: Apache-2.0
/* stories_naive.c: tiny_lm_naive.h's functions for stories260K, the struct opaque (its size
 * from stories_naive_bytes; allocate it 16-byte aligned). Same return codes (TLM_NAIVE_*). */
#ifndef MICROATTN_BENCH_STORIES_NAIVE_H
#define MICROATTN_BENCH_STORIES_NAIVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STORIES_VOCAB 512
typedef struct stories_naive stories_naive;
size_t stories_naive_bytes(void);
int stories_naive_load(stories_naive* m, const void* blob, size_t bytes);
void stories_naive_reset(stories_naive* m);
int stories_naive_step(stories_naive* m, int32_t token, float* logits);

#ifdef __cplusplus
}
#endif

#endif
