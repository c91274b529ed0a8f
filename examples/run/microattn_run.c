/* SPDX-License-Identifier: Apache-2.0 */
/* microattn_run: a model file through microattn's C API, the text as it is generated, then
 * prompt and decode speed. One source for a host and a board (the machine's part:
 * tiny_lm_platform.h and run_platform.h).
 *
 *   microattn_run MODEL.bin [-p PROMPT | -i ID...] [-n N] [-t TEMP] [--top-k K] [--top-p P]
 *                 [-s SEED] [--tokenizer FILE] [--ids] [--threads T]
 *
 * The prompt is encoded with the model file's tokenizer (export_pytorch.py --tokenizer) or
 * --tokenizer's, BOS first; -i gives the ids instead (a model without a tokenizer). Greedy with
 * -t 0 (the default), else seeded sampling (temperature, top-k, top-p: run_support.h); the
 * stream is the same on every target. Printed: the generated text (--ids, or no tokenizer:
 * the ids), stopping at EOS or after N tokens or at the model's T_max.
 * The model is the generated C glue RUN_MODEL (tools/microattn_c.py --from-model; RUN_HEADER
 * its header, RUN_VOCAB and RUN_T_MAX its constants). Exit status 0, 1 on a failed call, 2 on
 * bad arguments. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include RUN_HEADER
#include "microattn/microattn.h"
#include "run_platform.h"
#include "tiny_lm_platform.h"
/* (after tlm_write's prototype) */
#include "run_support.h"

#define RUN_CAT2(a, b) a##_##b
#define RUN_CAT(a, b) RUN_CAT2(a, b)
#define RUN_FN(x) RUN_CAT(RUN_MODEL, x)
#define RUN_MAX_TEXT 1024 /* prompt bytes */

typedef struct options {
  const char *model, *prompt, *tokenizer;
  const char* ids[RUN_T_MAX];
  size_t n_ids;
  unsigned long n, threads;
  run_sampling sampling;
  uint64_t seed;
  int print_ids;
} options;

static RUN_MODEL g_model; /* all-zero: a ready object */
static microattn_tokenizer g_tok;
static int32_t g_tokens[RUN_T_MAX];
static float g_logits[RUN_VOCAB], g_p[RUN_VOCAB];
static int32_t g_idx[RUN_VOCAB];

static int fail(const char* what, microattn_status s) {
  tlm_write("microattn_run: ");
  tlm_write(what);
  tlm_write(": ");
  tlm_write(microattn_status_string(s));
  tlm_write("\n");
  return 1;
}

/* The prompt's ids into g_tokens (BOS first): from -i, or encoded. 0 on error. */
static size_t prompt_ids(const options* o) {
  static _Alignas(8) unsigned char scratch[MICROATTN_TOKENIZER_SCRATCH_BYTES(RUN_MAX_TEXT)];
  static int32_t ids[MICROATTN_TOKENIZER_MAX_IDS(RUN_MAX_TEXT)];
  size_t i, n = 0;
  microattn_status s;
  if (o->n_ids) {
    for (i = 0; i < o->n_ids; ++i) g_tokens[i] = (int32_t)strtol(o->ids[i], NULL, 10);
    return o->n_ids;
  }
  s = microattn_tokenizer_encode(&g_tok, o->prompt, strlen(o->prompt), 1, scratch, sizeof scratch,
                                 ids, MICROATTN_TOKENIZER_MAX_IDS(RUN_MAX_TEXT), &n);
  if (s != MICROATTN_OK || n > RUN_T_MAX) {
    (void)fail(s != MICROATTN_OK ? "encode the prompt" : "the prompt is longer than T_max",
               s != MICROATTN_OK ? s : MICROATTN_BAD_TOKEN_COUNT);
    return 0;
  }
  memcpy(g_tokens, ids, n * sizeof *ids);
  return n;
}

static void print_token(const options* o, int32_t prev, int32_t id) {
  char text[512];
  size_t n = 0;
  if (o->print_ids || microattn_tokenizer_size(&g_tok) == 0) {
    run_write_u((unsigned long)id);
    tlm_write(" ");
    return;
  }
  if (microattn_tokenizer_decode(&g_tok, prev, id, text, sizeof text - 1, &n) == MICROATTN_OK) {
    text[n] = '\0'; /* (a byte piece's 0 byte ends it: the console takes C strings) */
    tlm_write(text);
  }
}

static int generate(const options* o) {
  const size_t np = prompt_ids(o);
  const int32_t eos = microattn_tokenizer_eos(&g_tok);
  size_t n = o->n, i;
  unsigned long long t0, t1, t2;
  run_rng rng;
  microattn_status s;
  if (np == 0) return 1;
  if (np + n > RUN_T_MAX) n = RUN_T_MAX - np;
  rng.state = o->seed;
  t0 = tlm_counter();
  if ((s = RUN_FN(prefill)(&g_model, g_tokens, np, g_logits)) != MICROATTN_OK)
    return fail("prefill", s);
  t1 = tlm_counter();
  for (i = 0; i < n; ++i) {
    const int32_t next = run_choose(g_logits, RUN_VOCAB, &o->sampling, &rng, g_p, g_idx);
    g_tokens[np + i] = next;
    if (next == eos && !o->print_ids) break;
    print_token(o, g_tokens[np + i - 1], next);
    if (i + 1 < n && (s = RUN_FN(decode)(&g_model, next, g_logits)) != MICROATTN_OK)
      return fail("decode", s);
  }
  t2 = tlm_counter();
  tlm_write("\n");
  run_report_rate("prompt: ", (unsigned long)np, t1 - t0);
  if (i > 1) run_report_rate("decode: ", (unsigned long)(i - 1), t2 - t1);
  return 0;
}

/* A decimal such as "0.8" (no exponent): strtof would pull malloc into a board's image
 * (newlib's strtod allocates). */
static float parse_float(const char* s) {
  float v = 0.0f, scale = 1.0f;
  int neg = *s == '-', frac = 0;
  for (s += neg || *s == '+'; *s; ++s) {
    if (*s == '.' && !frac) {
      frac = 1;
    } else if (*s >= '0' && *s <= '9') {
      if (frac) scale *= 0.1f;
      v = frac ? v + (float)(*s - '0') * scale : v * 10.0f + (float)(*s - '0');
    } else {
      break;
    }
  }
  return neg ? -v : v;
}

static int usage(void) {
  tlm_write(
      "usage: microattn_run MODEL.bin [-p PROMPT | -i ID...] [-n N] [-t TEMP] [--top-k K] "
      "[--top-p P] [-s SEED] [--tokenizer FILE] [--ids] [--threads T]\n");
  return 2;
}

static int parse(int argc, char** argv, options* o) {
  int i;
  if (argc < 2 || argv[1][0] == '-') return usage();
  o->model = argv[1];
  for (i = 2; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--ids") == 0) {
      o->print_ids = 1;
      continue;
    }
    if (!v) return usage();
    ++i;
    if (strcmp(a, "-p") == 0) {
      o->prompt = v;
    } else if (strcmp(a, "-i") == 0) {
      for (--i; i + 1 < argc && argv[i + 1][0] != '-' && o->n_ids < RUN_T_MAX; ++i)
        o->ids[o->n_ids++] = argv[i + 1];
    } else if (strcmp(a, "-n") == 0) {
      o->n = strtoul(v, NULL, 10);
    } else if (strcmp(a, "-t") == 0) {
      o->sampling.temperature = parse_float(v);
    } else if (strcmp(a, "--top-k") == 0) {
      o->sampling.top_k = (int32_t)strtol(v, NULL, 10);
    } else if (strcmp(a, "--top-p") == 0) {
      o->sampling.top_p = parse_float(v);
    } else if (strcmp(a, "-s") == 0) {
      o->seed = strtoull(v, NULL, 10);
    } else if (strcmp(a, "--tokenizer") == 0) {
      o->tokenizer = v;
    } else if (strcmp(a, "--threads") == 0) {
      o->threads = strtoul(v, NULL, 10);
    } else {
      return usage();
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  options o;
  size_t bytes = 0, tok_bytes = 0;
  const void* blob;
  microattn_status s;
  int r;
  memset(&o, 0, sizeof o);
  o.prompt = "";
  o.n = 128;
  o.sampling.top_p = 1.0f;
  if ((r = parse(argc, argv, &o)) != 0) return r;
  if (!(blob = run_load(o.model, &bytes))) return fail(o.model, MICROATTN_NULL_POINTER);
  if ((s = RUN_FN(set_weights_blob)(&g_model, blob, bytes)) != MICROATTN_OK) {
    microattn_model_check why;
    char text[160];
    (void)RUN_FN(check_blob)(blob, bytes, &why);
    (void)microattn_model_check_text(&why, text, sizeof text);
    return fail(text, s);
  }
  if (o.tokenizer) {
    const void* t = run_load(o.tokenizer, &tok_bytes);
    if (!t || (s = microattn_tokenizer_set_blob(&g_tok, t, tok_bytes)) != MICROATTN_OK)
      return fail(o.tokenizer, t ? s : MICROATTN_NULL_POINTER);
  } else {
    (void)microattn_model_file_tokenizer(&g_tok, blob, bytes); /* none: ids */
  }
  if (microattn_tokenizer_size(&g_tok) == 0 && o.n_ids == 0)
    return fail("no tokenizer in the model file: give --tokenizer or -i", MICROATTN_BAD_ARGUMENT);
  if (microattn_tokenizer_size(&g_tok) != 0 && microattn_tokenizer_size(&g_tok) != RUN_VOCAB)
    return fail("the tokenizer's pieces are not the model's vocabulary", MICROATTN_BAD_ARGUMENT);
  if ((s = RUN_FN(set_executor)(&g_model, tlm_executor((unsigned)o.threads))) != MICROATTN_OK &&
      o.threads > 1)
    return fail("set_executor", s);
  return generate(&o);
}
