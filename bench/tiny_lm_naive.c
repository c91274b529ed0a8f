// SPDX-License-Identifier: Apache-2.0
/* The tiny LM as plain C (tiny_lm_naive.h): what a competent engineer writes without SIMD,
 * blocking or threads. Matrix-vector products are dot products over the [out][in] rows in
 * float, summed in order (without -ffast-math the compiler may not reorder the sum, so these
 * loops stay scalar at -O3 -march=native: that is the point of the baseline). Softmax and SiLU
 * use libm's expf; RMSNorm sqrtf. RoPE: the inverse frequencies base^(-2i/d_head) are computed
 * once at load (in double, rounded to float); each step computes its position's 16 angles
 * (float position x inverse frequency) and their cosf / sinf once, shared by every head and
 * layer. */
#include "tiny_lm_naive.h"

#include <math.h>
#include <string.h>

#define TLM_MAGIC 0x4D4C414Du /* "MALM" */
#define TLM_FLAG_TIED 1u
#define TLM_FLAG_ADJACENT 2u

static uint32_t read_u32(const unsigned char* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float read_f32(const unsigned char* p) {
  uint32_t u = read_u32(p);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Copies the next tensor of n floats (little-endian) at the next 16-aligned offset. */
static int take(float* dst, size_t n, const unsigned char* blob, size_t end, size_t* off) {
  size_t o = (*off + 15u) & ~(size_t)15u;
  size_t i;
  if (o > end || n * 4u > end - o) return TLM_NAIVE_BAD_SIZE;
  for (i = 0; i < n; ++i) dst[i] = read_f32(blob + o + 4u * i);
  *off = o + n * 4u;
  return TLM_NAIVE_OK;
}

static int check_header(const unsigned char* b, size_t bytes) {
  static const uint32_t dims[8] = {TLM_VOCAB, TLM_DM, TLM_LAYERS, TLM_H,
                                   TLM_HKV,   TLM_DH, TLM_HIDDEN, TLM_TMAX};
  int i;
  if (bytes < 64u) return TLM_NAIVE_BAD_SIZE;
  if (read_u32(b) != TLM_MAGIC || read_u32(b + 4) != 1u || read_u32(b + 8) != 64u ||
      read_u32(b + 12) != 0u)
    return TLM_NAIVE_BAD_HEADER;
  for (i = 0; i < 8; ++i)
    if (read_u32(b + 16 + 4 * i) != dims[i]) return TLM_NAIVE_BAD_SHAPE;
  if (read_u32(b + 48) != (TLM_FLAG_TIED | TLM_FLAG_ADJACENT)) return TLM_NAIVE_BAD_HEADER;
  if (!(read_f32(b + 52) > 1.0f) || !(read_f32(b + 56) >= 0.0f)) return TLM_NAIVE_BAD_HEADER;
  if (read_u32(b + 60) > bytes) return TLM_NAIVE_BAD_SIZE;
  return TLM_NAIVE_OK;
}

int tlm_naive_load(tlm_naive* m, const void* blob, size_t bytes) {
  const unsigned char* b = (const unsigned char*)blob;
  size_t off = 64, end;
  int l, i, r;
  if (!m || !blob) return TLM_NAIVE_BAD_ARG;
  r = check_header(b, bytes);
  if (r) return r;
  end = read_u32(b + 60);
  r = take(&m->embed[0][0], (size_t)TLM_VOCAB * TLM_DM, b, end, &off);
  for (l = 0; l < TLM_LAYERS && !r; ++l) {
    tlm_naive_layer* L = &m->layer[l];
    r = take(L->attn_norm, TLM_DM, b, end, &off);
    if (!r) r = take(&L->wq[0][0], (size_t)TLM_QD * TLM_DM, b, end, &off);
    if (!r) r = take(&L->wk[0][0], (size_t)TLM_KVD * TLM_DM, b, end, &off);
    if (!r) r = take(&L->wv[0][0], (size_t)TLM_KVD * TLM_DM, b, end, &off);
    if (!r) r = take(&L->wo[0][0], (size_t)TLM_DM * TLM_QD, b, end, &off);
    if (!r) r = take(L->mlp_norm, TLM_DM, b, end, &off);
    if (!r) r = take(&L->w_gate[0][0], (size_t)TLM_HIDDEN * TLM_DM, b, end, &off);
    if (!r) r = take(&L->w_up[0][0], (size_t)TLM_HIDDEN * TLM_DM, b, end, &off);
    if (!r) r = take(&L->w_down[0][0], (size_t)TLM_DM * TLM_HIDDEN, b, end, &off);
  }
  if (!r) r = take(m->norm, TLM_DM, b, end, &off);
  if (r) return r;
  m->eps = read_f32(b + 56);
  for (i = 0; i < TLM_DH / 2; ++i)
    m->inv_freq[i] = (float)pow((double)read_f32(b + 52), -2.0 * i / TLM_DH);
  tlm_naive_reset(m);
  return TLM_NAIVE_OK;
}

void tlm_naive_reset(tlm_naive* m) { m->pos = 0; }

/* out = x / sqrt(mean(x^2) + eps) * w */
static void rmsnorm(float* out, const float* x, const float* w, float eps) {
  float ss = 0.0f, inv;
  int i;
  for (i = 0; i < TLM_DM; ++i) ss += x[i] * x[i];
  inv = 1.0f / sqrtf(ss / TLM_DM + eps);
  for (i = 0; i < TLM_DM; ++i) out[i] = x[i] * inv * w[i];
}

/* out[o] = sum_i w[o][i] x[i], w [rows][cols] row-major */
static void matvec(float* out, const float* w, const float* x, int rows, int cols) {
  int o, i;
  for (o = 0; o < rows; ++o) {
    const float* row = w + (size_t)o * cols;
    float s = 0.0f;
    for (i = 0; i < cols; ++i) s += row[i] * x[i];
    out[o] = s;
  }
}

/* Rotates each adjacent pair (2i, 2i+1) of a head by this position's angle i. */
static void rope(float* v, const tlm_naive* m) {
  int i;
  for (i = 0; i < TLM_DH / 2; ++i) {
    float a = v[2 * i], b = v[2 * i + 1];
    v[2 * i] = a * m->rope_cos[i] - b * m->rope_sin[i];
    v[2 * i + 1] = a * m->rope_sin[i] + b * m->rope_cos[i];
  }
}

/* ctx for query head h over positions 0..pos of layer l's cache. */
static void attend(tlm_naive* m, int l, int h) {
  const int g = h / (TLM_H / TLM_HKV);
  const float scale = 1.0f / sqrtf((float)TLM_DH);
  const float* q = m->q + h * TLM_DH;
  float* out = m->ctx + h * TLM_DH;
  float mx = -INFINITY, sum = 0.0f;
  int t, d;
  for (t = 0; t <= m->pos; ++t) {
    const float* k = m->k_cache[l][t] + g * TLM_DH;
    float s = 0.0f;
    for (d = 0; d < TLM_DH; ++d) s += q[d] * k[d];
    m->att[t] = s * scale;
    if (m->att[t] > mx) mx = m->att[t];
  }
  for (t = 0; t <= m->pos; ++t) {
    m->att[t] = expf(m->att[t] - mx);
    sum += m->att[t];
  }
  for (d = 0; d < TLM_DH; ++d) out[d] = 0.0f;
  for (t = 0; t <= m->pos; ++t) {
    const float* v = m->v_cache[l][t] + g * TLM_DH;
    const float p = m->att[t] / sum;
    for (d = 0; d < TLM_DH; ++d) out[d] += p * v[d];
  }
}

static void attention_block(tlm_naive* m, int l) {
  tlm_naive_layer* L = &m->layer[l];
  float* k = m->k_cache[l][m->pos];
  float* v = m->v_cache[l][m->pos];
  float y[TLM_DM];
  int h, i;
  rmsnorm(m->xn, m->x, L->attn_norm, m->eps);
  matvec(m->q, &L->wq[0][0], m->xn, TLM_QD, TLM_DM);
  matvec(k, &L->wk[0][0], m->xn, TLM_KVD, TLM_DM);
  matvec(v, &L->wv[0][0], m->xn, TLM_KVD, TLM_DM);
  for (h = 0; h < TLM_H; ++h) rope(m->q + h * TLM_DH, m);
  for (h = 0; h < TLM_HKV; ++h) rope(k + h * TLM_DH, m);
  for (h = 0; h < TLM_H; ++h) attend(m, l, h);
  matvec(y, &L->wo[0][0], m->ctx, TLM_DM, TLM_QD);
  for (i = 0; i < TLM_DM; ++i) m->x[i] += y[i];
}

static void mlp_block(tlm_naive* m, int l) {
  tlm_naive_layer* L = &m->layer[l];
  float y[TLM_DM];
  int i;
  rmsnorm(m->xn, m->x, L->mlp_norm, m->eps);
  matvec(m->gate, &L->w_gate[0][0], m->xn, TLM_HIDDEN, TLM_DM);
  matvec(m->up, &L->w_up[0][0], m->xn, TLM_HIDDEN, TLM_DM);
  for (i = 0; i < TLM_HIDDEN; ++i) {
    const float g = m->gate[i];
    m->gate[i] = g / (1.0f + expf(-g)) * m->up[i]; /* silu(gate) * up */
  }
  matvec(y, &L->w_down[0][0], m->gate, TLM_DM, TLM_HIDDEN);
  for (i = 0; i < TLM_DM; ++i) m->x[i] += y[i];
}

int tlm_naive_step(tlm_naive* m, int32_t token, float* logits) {
  int l, i;
  if (!m || !logits || token < 0 || token >= TLM_VOCAB) return TLM_NAIVE_BAD_ARG;
  if (m->pos >= TLM_TMAX) return TLM_NAIVE_FULL;
  for (i = 0; i < TLM_DH / 2; ++i) {
    const float a = (float)m->pos * m->inv_freq[i];
    m->rope_cos[i] = cosf(a);
    m->rope_sin[i] = sinf(a);
  }
  for (i = 0; i < TLM_DM; ++i) m->x[i] = m->embed[token][i];
  for (l = 0; l < TLM_LAYERS; ++l) {
    attention_block(m, l);
    mlp_block(m, l);
  }
  rmsnorm(m->xn, m->x, m->norm, m->eps);
  matvec(logits, &m->embed[0][0], m->xn, TLM_VOCAB, TLM_DM); /* tied LM head */
  m->pos += 1;
  return TLM_NAIVE_OK;
}
