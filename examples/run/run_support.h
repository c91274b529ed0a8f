/* SPDX-License-Identifier: Apache-2.0 */
/* What the C programs that generate text share (examples/run/microattn_run.c,
 * examples/tiny_lm/tiny_lm.c): a seeded generator whose stream is the same on every target, the
 * choice of the next token (greedy, temperature, top-k, top-p) in float arithmetic without
 * libm, and numbers as text without printf (the boards' C library has none to spare). Needs
 * tlm_write (tiny_lm_platform.h) before it is included. */
#ifndef MICROATTN_RUN_SUPPORT_H
#define MICROATTN_RUN_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64. */
typedef struct run_rng {
  uint64_t state;
} run_rng;

/* Uniform in [0, 1), 24 bits (exact in float). */
static float run_uniform(run_rng* r) {
  uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (float)((z ^ (z >> 31)) >> 40) * (1.0f / 16777216.0f);
}

/* exp(x) for x <= 0 without libm (the board images link none), in float: the boards' FPUs
 * have no double. Relative error ~1e-6; C11 (no FMA contraction) makes it the same bits on
 * every target. */
static float run_exp_neg(float x) {
  float r = 1.0f, t = 1.0f;
  int k, halvings = 0;
  while (x < -0.5f) x *= 0.5f, ++halvings;
  for (k = 1; k < 10; ++k) t *= x / (float)k, r += t;
  while (halvings-- > 0) r *= r;
  return r;
}

static int32_t run_argmax(const float* logits, int32_t n) {
  int32_t best = 0, i;
  for (i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

/* How the next token is chosen: temperature <= 0 greedy; else softmax(logits / temperature)
 * restricted to the top_k most likely (0: all), then to the smallest most-likely set whose
 * probability reaches top_p (>= 1: all). */
typedef struct run_sampling {
  float temperature;
  int32_t top_k;
  float top_p;
} run_sampling;

/* i before j: more likely, then the smaller id (a total order: the same choice everywhere). */
static int run_before(const float* p, int32_t i, int32_t j) {
  return p[i] > p[j] || (p[i] == p[j] && i < j);
}

/* Moves idx[root] down the heap idx[0 .. end) whose root is the last in run_before's order. */
static void run_sift(const float* p, int32_t* idx, int32_t root, int32_t end) {
  while (2 * root + 1 < end) {
    int32_t c = 2 * root + 1, t;
    if (c + 1 < end && run_before(p, idx[c], idx[c + 1])) ++c; /* the later child */
    if (!run_before(p, idx[root], idx[c])) return;
    t = idx[root], idx[root] = idx[c], idx[c] = t, root = c;
  }
}

/* Heap sort of idx[0 .. n) into run_before's order (no qsort: no callback state). */
static void run_sort(const float* p, int32_t* idx, int32_t n) {
  int32_t i;
  for (i = n / 2 - 1; i >= 0; --i) run_sift(p, idx, i, n);
  for (i = n - 1; i > 0; --i) {
    const int32_t t = idx[0];
    idx[0] = idx[i], idx[i] = t;
    run_sift(p, idx, 0, i);
  }
}

/* The next token of logits[n]; p[n] and idx[n]: the caller's scratch. */
static int32_t run_choose(const float* logits, int32_t n, const run_sampling* s, run_rng* r,
                          float* p, int32_t* idx) {
  const float top = logits[run_argmax(logits, n)];
  float sum = 0.0f, u, c = 0.0f;
  int32_t i, keep = n;
  if (!(s->temperature > 0.0f)) return run_argmax(logits, n);
  for (i = 0; i < n; ++i) sum += (p[i] = run_exp_neg((logits[i] - top) / s->temperature));
  if ((s->top_k > 0 && s->top_k < n) || s->top_p < 1.0f) {
    for (i = 0; i < n; ++i) idx[i] = i;
    run_sort(p, idx, n);
    if (s->top_k > 0 && s->top_k < n) keep = s->top_k;
    for (sum = 0.0f, i = 0; i < keep; ++i) sum += p[idx[i]];
    if (s->top_p < 1.0f) {
      const float want = s->top_p * sum;
      for (c = 0.0f, i = 0; i < keep; ++i)
        if ((c += p[idx[i]]) >= want) break;
      keep = i < keep ? i + 1 : keep;
      for (sum = 0.0f, i = 0; i < keep; ++i) sum += p[idx[i]];
    }
    u = run_uniform(r) * sum;
    for (c = 0.0f, i = 0; i < keep; ++i)
      if ((c += p[idx[i]]) > u) return idx[i];
    return idx[keep - 1];
  }
  u = run_uniform(r) * sum;
  for (i = 0; i < n; ++i)
    if ((c += p[i]) > u) return i;
  return n - 1;
}

static void run_write_u(unsigned long v) {
  char b[24];
  int i = 23;
  b[i] = '\0';
  do b[--i] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  tlm_write(b + i);
}

/* v / 10^decimals with `decimals` digits after the point (integers only). */
static void run_write_fixed(unsigned long long v, int decimals) {
  unsigned long long scale = 1;
  int d;
  for (d = 0; d < decimals; ++d) scale *= 10;
  run_write_u((unsigned long)(v / scale));
  if (decimals == 0) return;
  tlm_write(".");
  for (d = decimals - 1; d >= 0; --d) {
    unsigned long long q = 1;
    int k;
    for (k = 0; k < d; ++k) q *= 10;
    run_write_u((unsigned long)(v / q % 10));
  }
}

/* "what N tokens, R tokens/s" (nanoseconds counter) or "... U per token" (a board's). */
static void run_report_rate(const char* what, unsigned long tokens, unsigned long long used) {
  const char* unit = tlm_counter_unit();
  tlm_write(what);
  run_write_u(tokens);
  tlm_write(" tokens, ");
  if (unit[0] == 'n' && unit[1] == 'a') { /* nanoseconds: tenths of tokens/s, rounded */
    run_write_fixed(used > 0 ? (tokens * 10000000000ull + used / 2) / used : 0, 1);
    tlm_write(" tokens/s\n");
  } else {
    run_write_u((unsigned long)((used + tokens / 2) / (tokens ? tokens : 1)));
    tlm_write(" ");
    tlm_write(unit);
    tlm_write(" per token\n");
  }
}

#endif
