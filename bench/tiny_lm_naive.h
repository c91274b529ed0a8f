// SPDX-License-Identifier: Apache-2.0
/* The tiny character-level LLaMA-style model of issue 35 (examples/tiny_lm/TRAINING.md) as plain
 * C11: one thread, naive loops, no SIMD, no blocking. It is the yardstick of the host
 * target ("decode >= 3x the tokens/s of a plain single-threaded C implementation of the same
 * model, -O3 -march=native"): bench/tiny_lm.cpp's TLM_naive_decode runs it beside
 * microattn::Decoder, and the test tiny_lm_naive checks it against PyTorch's logits, so it is
 * the same model.
 *
 * The sizes are this model's, fixed at compile time (the TLM_* macros); tlm_naive_load refuses a
 * blob of any other shape. The weights are copied out of the fp32 model blob
 * (docs/model-format.md, version 1: examples/tiny_lm/tiny_lm_f32.bin) into the struct's arrays,
 * so the blob may be freed after loading; the struct is about 1.4 MB: keep it static or on the
 * heap. */
#ifndef MICROATTN_BENCH_TINY_LM_NAIVE_H
#define MICROATTN_BENCH_TINY_LM_NAIVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The tiny LM's shape; another model's when its file defines them all first (stories_naive.c:
 * stories260K, with the names renamed). */
#if !defined(TLM_VOCAB)
#define TLM_VOCAB 100
#define TLM_DM 128 /* d_model */
#define TLM_LAYERS 2
#define TLM_H 4        /* query heads */
#define TLM_HKV 2      /* key/value heads (GQA: query head h reads kv head h / (H / H_kv)) */
#define TLM_DH 32      /* d_head */
#define TLM_HIDDEN 256 /* SwiGLU hidden width */
#define TLM_TMAX 128   /* context: positions 0 .. TLM_TMAX - 1 */
#endif
#define TLM_QD (TLM_H * TLM_DH)
#define TLM_KVD (TLM_HKV * TLM_DH)

/* Return codes of tlm_naive_load and tlm_naive_step. */
enum {
  TLM_NAIVE_OK = 0,
  TLM_NAIVE_BAD_ARG = 1,    /* null pointer, token outside [0, TLM_VOCAB) */
  TLM_NAIVE_BAD_HEADER = 2, /* magic, version, header size, weight type or flags */
  TLM_NAIVE_BAD_SHAPE = 3,  /* a dimension differs from the TLM_* macros */
  TLM_NAIVE_BAD_SIZE = 4,   /* the blob is shorter than its tensors or than its stated size */
  TLM_NAIVE_FULL = 5        /* TLM_TMAX tokens already in the cache */
};

typedef struct tlm_naive_layer {
  float attn_norm[TLM_DM];
  float wq[TLM_QD][TLM_DM]; /* [out][in], as nn.Linear.weight */
  float wk[TLM_KVD][TLM_DM];
  float wv[TLM_KVD][TLM_DM];
  float wo[TLM_DM][TLM_QD];
  float mlp_norm[TLM_DM];
  float w_gate[TLM_HIDDEN][TLM_DM];
  float w_up[TLM_HIDDEN][TLM_DM];
  float w_down[TLM_DM][TLM_HIDDEN];
} tlm_naive_layer;

typedef struct tlm_naive {
  /* weights */
  float embed[TLM_VOCAB][TLM_DM]; /* also the LM head (tied) */
  tlm_naive_layer layer[TLM_LAYERS];
  float norm[TLM_DM];
  float eps;                  /* RMSNorm epsilon, from the blob */
  float inv_freq[TLM_DH / 2]; /* RoPE: base^(-2i / d_head), from the blob's base */
  /* KV cache (K after RoPE) */
  float k_cache[TLM_LAYERS][TLM_TMAX][TLM_KVD];
  float v_cache[TLM_LAYERS][TLM_TMAX][TLM_KVD];
  int pos; /* tokens in the cache = position of the next token */
  /* activations of one step */
  float x[TLM_DM], xn[TLM_DM], q[TLM_QD], ctx[TLM_QD], att[TLM_TMAX];
  float gate[TLM_HIDDEN], up[TLM_HIDDEN];
  float rope_cos[TLM_DH / 2], rope_sin[TLM_DH / 2];
} tlm_naive;

/* Parses and checks the fp32 blob (magic, version 1, 64-byte header, fp32 weights, every
 * dimension equal to the TLM_* macros, flags = tied LM head + adjacent RoPE pairs + SwiGLU, the
 * stated total size within `bytes`), copies the weights and empties the cache. Nonzero on any
 * mismatch (m is then unusable until a successful load). */
int tlm_naive_load(tlm_naive* m, const void* blob, size_t bytes);

/* Empties the KV cache: the next token is at position 0. */
void tlm_naive_reset(tlm_naive* m);

/* One token through the model at the next position; writes TLM_VOCAB logits. Nonzero (nothing
 * written, cache unchanged) for a token outside the vocabulary or a full cache. */
int tlm_naive_step(tlm_naive* m, int32_t token, float* logits);

#ifdef __cplusplus
}
#endif

#endif /* MICROATTN_BENCH_TINY_LM_NAIVE_H */
