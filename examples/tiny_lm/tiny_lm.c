/* SPDX-License-Identifier: Apache-2.0 */
/* The tiny trained language model (examples/tiny_lm/TRAINING.md) from C through microattn's C
 * API: one source for the host and the Cortex-M boards. Encodes a prompt one character to one
 * token, prefills it, continues it greedily or by seeded sampling, prints the text and the
 * speed (tokens/s on a host; instructions per token on a board under QEMU -icount).
 *
 *   tiny_lm [--prompt TEXT] [--n N] [--sample] [--seed S] [--threads T] [--fp32]
 *   tiny_lm --check    the logits at every position of the exporter's reference sequence
 *                      and the greedy continuation against PyTorch's
 *                      (tests/data/tiny_lm_reference.h; built with TINY_LM_CHECK)
 *
 * The models: tlm_q8 (int8 weights, the board's) and tlm_f32 (fp32), each compiled in unless
 * its TINY_LM_NO_* macro is defined; the default is int8 when present. Exit status 0, 1 on a
 * failed check or call, 2 on bad arguments. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tiny_lm_blobs.h"
#include "tiny_lm_platform.h"
#include "tiny_lm_vocab.h"
/* (after tlm_write's prototype) */
#include "run_support.h"
#if !defined(TINY_LM_NO_F32)
#include "tlm_f32.h"
#endif
#if !defined(TINY_LM_NO_Q8)
#include "tlm_q8.h"
#endif
#if defined(TINY_LM_CHECK)
#include "data/tiny_lm_reference.h"
#endif

#define VOCAB TINY_LM_VOCAB_SIZE
#define MAX_TOKENS 128 /* the model's context (T_max) */

/* One model behind plain functions, whichever C API type it has. */
typedef struct model {
  const char* name;
  size_t ram_bytes;
  microattn_status (*load)(void);
  microattn_status (*executor)(const microattn_executor* ex);
  microattn_status (*prefill)(const int32_t* tokens, size_t n, float* logits);
  microattn_status (*prefill_all)(const int32_t* tokens, size_t n, float* logits);
  microattn_status (*decode)(int32_t token, float* logits);
  microattn_status (*reset)(void);
} model;

#define TINY_LM_MODEL(m, blob_name)                                                         \
  static m g_##m; /* all-zero: a ready object, no init call */                              \
  static microattn_status m##_load(void) {                                                  \
    return m##_set_weights_blob(&g_##m, blob_name, blob_name##_bytes);                      \
  }                                                                                         \
  static microattn_status m##_ex(const microattn_executor* ex) {                            \
    static const microattn_executor none = MICROATTN_EXECUTOR_NONE;                         \
    return m##_set_executor(&g_##m, ex ? ex : &none);                                       \
  }                                                                                         \
  static microattn_status m##_pf(const int32_t* t, size_t n, float* l) {                    \
    return m##_prefill(&g_##m, t, n, l);                                                    \
  }                                                                                         \
  static microattn_status m##_pfa(const int32_t* t, size_t n, float* l) {                   \
    return m##_prefill_all(&g_##m, t, n, l);                                                \
  }                                                                                         \
  static microattn_status m##_dec(int32_t t, float* l) { return m##_decode(&g_##m, t, l); } \
  static microattn_status m##_rst(void) { return m##_reset(&g_##m); }                       \
  static const model m##_model = {#m,     sizeof(m), m##_load, m##_ex,                      \
                                  m##_pf, m##_pfa,   m##_dec,  m##_rst};

#if !defined(TINY_LM_NO_F32)
TINY_LM_MODEL(tlm_f32, tiny_lm_f32_blob)
#endif
#if !defined(TINY_LM_NO_Q8)
TINY_LM_MODEL(tlm_q8, tiny_lm_q8_blob)
#endif

/* ---- text <-> tokens (one UTF-8 character each; vocab strings are whole characters) */

static size_t utf8_length(unsigned char c) {
  return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
}

static size_t encode(const char* text, int32_t* tokens, size_t cap) {
  size_t n = 0;
  while (*text && n < cap) {
    size_t len = utf8_length((unsigned char)*text), k;
    int32_t id = 0;
    for (k = 0; k < len; ++k)
      if (text[k] == '\0') len = k;
    for (k = 1; k < VOCAB; ++k)
      if (strlen(tiny_lm_vocab[k]) == len && memcmp(tiny_lm_vocab[k], text, len) == 0)
        id = (int32_t)k;
    tokens[n++] = id;
    text += len ? len : 1;
  }
  return n;
}

static void write_tokens(const int32_t* tokens, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) tlm_write(tokens[i] == 3 ? "\n" : tiny_lm_vocab[tokens[i]]);
}

/* ---- choosing the next token: run_support.h (greedy, or softmax at temperature 1) */

static int32_t argmax(const float* logits) { return run_argmax(logits, VOCAB); }

/* ---- the demo */

typedef struct options {
  const char* prompt;
  unsigned long n, threads;
  int sample, fp32, check;
  uint64_t seed;
} options;

static int fail(const char* what, microattn_status s) {
  tlm_write("tiny_lm: FAIL ");
  tlm_write(what);
  tlm_write(": ");
  tlm_write(microattn_status_string(s));
  tlm_write("\n");
  return 1;
}

static int generate(const model* m, const options* o) {
  static int32_t tokens[MAX_TOKENS];
  static float logits[VOCAB];
  const size_t np = encode(o->prompt, tokens, MAX_TOKENS);
  size_t n = o->n, i;
  unsigned long long t0, t1, t2;
  microattn_status s;
  if (np == 0) return fail("empty prompt", MICROATTN_BAD_TOKEN_COUNT);
  if (np + n > MAX_TOKENS) n = MAX_TOKENS - np;
  static float p[VOCAB];
  static int32_t idx[VOCAB];
  const run_sampling sampling = {1.0f, 0, 1.0f};
  run_rng rng;
  rng.state = o->seed;
  t0 = tlm_counter();
  s = m->prefill(tokens, np, logits);
  t1 = tlm_counter();
  if (s != MICROATTN_OK) return fail("prefill", s);
  for (i = 0; i < n; ++i) {
    tokens[np + i] =
        o->sample ? run_choose(logits, VOCAB, &sampling, &rng, p, idx) : argmax(logits);
    if (i + 1 < n && (s = m->decode(tokens[np + i], logits)) != MICROATTN_OK)
      return fail("decode", s);
  }
  t2 = tlm_counter();
  tlm_write("\"");
  write_tokens(tokens, np);
  tlm_write("\" ->\n\"");
  write_tokens(tokens + np, n);
  tlm_write("\"\n");
  run_report_rate("prefill: ", (unsigned long)np, t1 - t0);
  if (n > 1) run_report_rate("decode:  ", (unsigned long)(n - 1), t2 - t1);
  return 0;
}

#if defined(TINY_LM_CHECK)
/* v >= 0 as d.ddd e-N (4 significant digits), in float arithmetic. */
static void write_e(float v) {
  int e = 0;
  unsigned long digits;
  if (v > 0)
    while (v < 1.0f) v *= 10.0f, --e;
  while (v >= 10.0f) v /= 10.0f, ++e;
  digits = (unsigned long)(v * 1000.0f + 0.5f);
  if (digits >= 10000) digits /= 10, ++e;
  run_write_fixed(digits, 3);
  tlm_write(e < 0 ? "e-" : "e+");
  run_write_u((unsigned long)(e < 0 ? -e : e));
}

/* The logits of the reference sequence against PyTorch's (relative to the largest), and the
 * greedy continuation of its prompt. fp32: 1e-4 and every token; int8 weights: reported, and
 * gated loosely (5e-2, 3/4 of the tokens) as a smoke test of the quantised model. */
static int check(const model* m, int int8) {
  /* The logits, and for the refusal below the token ids at their start. */
  static union {
    float logits[TINY_LM_REF_POSITIONS * VOCAB];
    int32_t tokens[TINY_LM_REF_POSITIONS];
  } buf;
  float* const logits = buf.logits;
  const float tol = int8 ? 5e-2f : 1e-4f;
  float err = 0.0f, top = 0.0f;
  size_t i, agree = 0;
  microattn_status s;
  /* Logits over the tokens would overwrite ids not read yet (prefill runs in chunks). */
  memcpy(buf.tokens, tiny_lm_ref_tokens, sizeof buf.tokens);
  s = m->prefill_all(buf.tokens, TINY_LM_REF_POSITIONS, buf.logits);
  if (s != MICROATTN_OVERLAP) return fail("prefill_all over its tokens", s);
  s = m->prefill_all(tiny_lm_ref_tokens, TINY_LM_REF_POSITIONS, logits);
  if (s != MICROATTN_OK) return fail("prefill_all", s);
  for (i = 0; i < TINY_LM_REF_POSITIONS * VOCAB; ++i) {
    const float r = tiny_lm_ref_logits[i / VOCAB][i % VOCAB], d = logits[i] - r;
    if (!(d * d <= err * err)) err = d < 0 ? -d : d;
    if ((r < 0 ? -r : r) > top) top = r < 0 ? -r : r;
  }
  m->reset();
  s = m->prefill(tiny_lm_ref_tokens, TINY_LM_REF_PROMPT_TOKENS, logits);
  for (i = 0; s == MICROATTN_OK && i < TINY_LM_REF_CONTINUATION; ++i) {
    const int32_t t = argmax(logits);
    agree += t == tiny_lm_ref_tokens[TINY_LM_REF_PROMPT_TOKENS + i];
    if (i + 1 < TINY_LM_REF_CONTINUATION) s = m->decode(t, logits);
  }
  if (s != MICROATTN_OK) return fail("greedy", s);
  m->reset();
  tlm_write(m->name);
  tlm_write(": logits vs PyTorch, max |error| / max |logit| = ");
  write_e(err / top);
  tlm_write(" (limit ");
  write_e(tol);
  tlm_write("); greedy tokens equal: ");
  run_write_u((unsigned long)agree);
  tlm_write(" of ");
  run_write_u(TINY_LM_REF_CONTINUATION);
  tlm_write("\n");
  if (!(err <= tol * top) ||
      agree < (int8 ? TINY_LM_REF_CONTINUATION * 3 / 4 : TINY_LM_REF_CONTINUATION))
    return fail(m->name, MICROATTN_BAD_ARGUMENT);
  return 0;
}
#endif

/* The words after argv[*i] up to the next option, joined by spaces: a board's command line
 * (semihosting) arrives split at every space, quotes or not. */
static const char* join_words(int argc, char** argv, int* i) {
  static char text[4 * MAX_TOKENS + 1];
  size_t n = 0;
  while (*i + 1 < argc && (n == 0 || strncmp(argv[*i + 1], "--", 2) != 0)) {
    const char* w = argv[++*i];
    if (n > 0 && n < sizeof text - 1) text[n++] = ' ';
    while (*w && n < sizeof text - 1) text[n++] = *w++;
  }
  text[n] = '\0';
  return text;
}

static int parse(int argc, char** argv, options* o) {
  int i;
  for (i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--sample") == 0)
      o->sample = 1;
    else if (strcmp(a, "--fp32") == 0)
      o->fp32 = 1;
    else if (strcmp(a, "--check") == 0)
      o->check = 1;
    else if (v && strcmp(a, "--prompt") == 0)
      o->prompt = join_words(argc, argv, &i);
    else if (v && strcmp(a, "--n") == 0)
      o->n = strtoul(v, NULL, 10), ++i;
    else if (v && strcmp(a, "--seed") == 0)
      o->seed = strtoull(v, NULL, 10), ++i;
    else if (v && strcmp(a, "--threads") == 0)
      o->threads = strtoul(v, NULL, 10), ++i;
    else {
      tlm_write(
          "usage: tiny_lm [--prompt TEXT] [--n N] [--sample] [--seed S] [--threads T] "
          "[--fp32] [--check]\n");
      return 2;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  options o = {"The artist painted the portrait of a woman with a brush", 64, 1, 0, 0, 0, 1};
  const model* m = NULL;
  microattn_status s;
  int r = parse(argc, argv, &o);
  if (r != 0) return r;
#if !defined(TINY_LM_NO_Q8)
  if (!o.fp32) m = &tlm_q8_model;
#endif
#if !defined(TINY_LM_NO_F32)
  if (!m) m = &tlm_f32_model;
#endif
  if (!m) return fail("--fp32: this build has only the int8 model", MICROATTN_BAD_ARGUMENT);
  if ((s = m->load()) != MICROATTN_OK) return fail("set_weights_blob", s);
  if ((s = m->executor(tlm_executor((unsigned)o.threads))) != MICROATTN_OK)
    return fail("set_executor", s);
  tlm_write("tiny_lm: ");
  tlm_write(tlm_platform());
  tlm_write(", model ");
  tlm_write(m->name);
  tlm_write(" (RAM ");
  run_write_u((unsigned long)m->ram_bytes);
  tlm_write(" bytes), ");
  run_write_u(o.threads);
  tlm_write(o.threads == 1 ? " thread, " : " threads, ");
  tlm_write(o.sample ? "sampled\n" : "greedy\n");
  if (o.check) {
#if defined(TINY_LM_CHECK)
    r = 0;
#if !defined(TINY_LM_NO_F32)
    r |= tlm_f32_model.load() != MICROATTN_OK || check(&tlm_f32_model, 0);
#endif
#if !defined(TINY_LM_NO_Q8)
    r |= tlm_q8_model.load() != MICROATTN_OK || check(&tlm_q8_model, 1);
#endif
    tlm_write(r ? "tiny_lm: check FAILED\n" : "tiny_lm: check OK\n");
    return r;
#else
    return fail("--check: built without TINY_LM_CHECK", MICROATTN_BAD_ARGUMENT);
#endif
  }
  return generate(m, &o);
}
