/* SPDX-License-Identifier: Apache-2.0 */
/* docs/tiny-lm.md's C example (the block between the readme markers), built and
 * run by the tests (ctest tiny_lm_readme): greedy text from the tiny model through the C API. */
#include <stdio.h>
#include <string.h>

#include "tiny_lm_blobs.h"
#include "tiny_lm_vocab.h"
#include "tlm_q8.h"

int readme_generate(const char* prompt, int n);

// [readme-begin]
// tlm_q8.h: tools/microattn_c.py --name tlm_q8 --kind decoder --config "100, 128, 2, 4, 2, 32,
//           256, 128, LmHead::kTied, WeightType::kInt8, CacheType::kInt8"
static tlm_q8 g_model;  // all working memory and the KV caches, in .bss

// Greedy continuation of an ASCII prompt: one token per character (tiny_lm_vocab.h).
int readme_generate(const char* prompt, int n) {
  int32_t tokens[TLM_Q8_T_MAX];
  float logits[TLM_Q8_VOCAB];
  size_t len = strlen(prompt), i;
  if (len == 0 || len + (size_t)n > TLM_Q8_T_MAX) return 1;
  for (i = 0; i < len; ++i) {  // id of each character (0: unknown)
    tokens[i] = 0;
    for (int32_t id = 1; id < TLM_Q8_VOCAB; ++id)
      if (tiny_lm_vocab[id][0] == prompt[i] && tiny_lm_vocab[id][1] == '\0') tokens[i] = id;
  }
  // The model file stays in flash: the object keeps views into it.
  microattn_status s = tlm_q8_set_weights_blob(&g_model, tiny_lm_q8_blob, tiny_lm_q8_blob_bytes);
  if (s == MICROATTN_OK) s = tlm_q8_prefill(&g_model, tokens, len, logits);
  for (int k = 0; s == MICROATTN_OK && k < n; ++k) {
    int32_t next = 0;  // greedy: the most likely token
    for (int32_t id = 1; id < TLM_Q8_VOCAB; ++id)
      if (logits[id] > logits[next]) next = id;
    fputs(tiny_lm_vocab[next], stdout);
    s = tlm_q8_decode(&g_model, next, logits);
  }
  if (s != MICROATTN_OK) printf("\nmicroattn: %s\n", microattn_status_string(s));
  return s == MICROATTN_OK ? 0 : 1;
}
// [readme-end]

int main(void) {
  const int r = readme_generate("The artist painted", 16);
  putchar('\n');
  return r;
}
