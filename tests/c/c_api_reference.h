// SPDX-License-Identifier: Apache-2.0
/* The C tests' reference: the same operations through the C++ API, on C++ objects of their own
 * (c_api_layers.cpp). Statuses are returned as ints (the microattn::Status values). A scale of
 * 0 means "the default". w[8] = w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o. */
#ifndef MICROATTN_TESTS_C_API_REFERENCE_H
#define MICROATTN_TESTS_C_API_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

const char* ref_to_string(int s);
/* sizeof / alignof of the C++ object behind the C layer `name` (0 for an unknown name). */
void ref_object_size(const char* name, size_t* bytes, size_t* align);
/* 1 / sqrt(8), as the library computes it. */
float ref_default_scale(void);

/* cmha: Config<24, 32, 4, 2, 8, Bias::kYes>; cmha_p: Config<20, 32, 2, 1, 16, Rope::kYes> with
 * the RoPE given; a fresh object each time. */
int ref_mha_forward(int layout, const float* const w[8], float scale, const float* x, size_t T,
                    float* y);
int ref_mha_p_forward(int layout, const float* const w[8], float scale, const float* x, size_t T,
                      float* y, int rope_enabled, float base, int pairing, size_t rotary_dims,
                      size_t start_position);
/* The README example's layer: Config<64, 64, 4, 2, 16>, OUT_IN weights. */
int ref_demo_forward(const float* const w[8], const float* x, size_t T, float* y);
/* ccore: Config<24, 32, 4, 2, 8>. */
int ref_core_forward(float scale, const float* q, size_t ldq, const float* k, size_t ldk,
                     const float* v, size_t ldv, size_t T, float* out, size_t ldo);

/* KV layers, which = 0: KvAttention<Config<24, 32, 4, 2, 8, Rope::kYes>>, 1: the same with
 * prefill chunk 5, 2: ckv_q8's KvAttention<Config<24, 32, 2, 1, 16, Rope::kYes,
 * WeightType::kInt8, CacheType::kInt8>> with prefill chunk 5 (its weights: ref_kv_q8_set_weights,
 * not ref_kv_set_weights). */
void ref_kv_fresh(int which);
int ref_kv_set_weights(int which, int layout, const float* const w[8]);
int ref_kv_set_scale(int which, float scale);
int ref_kv_set_rope(int which, int enabled, float base, int pairing, size_t rotary_dims,
                    size_t start_position);
int ref_kv_prefill(int which, const float* x, size_t T, float* y);
int ref_kv_decode(int which, const float* x, float* y);
int ref_kv_truncate(int which, size_t length);
void ref_kv_reset(int which);
size_t ref_kv_length(int which);
int ref_kv_export(int which, size_t first, size_t n, float* k, float* v, size_t* slice_first,
                  size_t* slice_tokens);

/* int8 weights (WeightType::kInt8): w[4] = w_q, w_k, w_v, w_o; s[4] = s_q, s_k, s_v, s_o;
 * b[4] = b_q, b_k, b_v, b_o. */
/* microattn::quantize_int8 (err: max_abs, rms, rel, written on success); the layouts are cast
 * to WeightLayout as they are (only MICROATTN_LAYOUT_* values). */
int ref_quantize_int8(const float* src, int from, size_t in_dim, size_t out_dim, int to,
                      int8_t* dst, float* scales, float err[3]);
/* cmha_q8: Config<24, 32, 4, 2, 8, Bias::kYes, WeightType::kInt8>, a fresh object, default scale.
 */
int ref_mha_q8_forward(int layout, const int8_t* const w[4], const float* const s[4],
                       const float* const b[4], const float* x, size_t T, float* y);
/* The KV layer `which` = 2 (no biases). */
int ref_kv_q8_set_weights(int layout, const int8_t* const w[4], const float* const s[4]);
/* KvAttention::kCacheBytes of ckv_q8's C++ object, and of the same layer with an fp32 cache. */
void ref_kv_q8_cache_bytes(size_t* int8_cache, size_t* f32_cache);

/* cmha_none: Config<24, 32, 4, 2, 8, Mask::kNone>, a fresh object, default scale. */
int ref_mha_none_forward(int layout, const float* const w[8], const float* x, size_t T, float* y);
/* ckv_win: KvAttention<Config<24, 32, 4, 2, 8, SlidingWindow{6}>, DefaultArch, 4>. */
void ref_kv_win_fresh(void);
int ref_kv_win_set_weights(int layout, const float* const w[8]);
int ref_kv_win_decode(const float* x, float* y);
int ref_kv_win_truncate(size_t length);
size_t ref_kv_win_length(void);
size_t ref_kv_win_oldest(void);
/* Latent layers, which = 0: clat's LatentAttention<LatentConfig<24, 32, 4, 16, 8, 8, 8>>, 1:
 * clat_q's LatentAttention<LatentConfig<24, 32, 3, 20, 6, 10, 12, QueryLatent{12},
 * MaxWorkers{3}>, DefaultArch, 5>, 2: clat_q8's <LatentConfig<24, 32, 2, 16, 16, 16, 16,
 * QueryLatent{16}, WeightType::kInt8, CacheType::kInt8>, DefaultArch, 5>, 3: clat_q8n's
 * <LatentConfig<24, 32, 2, 16, 16, 16, 16, WeightType::kInt8>>.
 * w[8] = w_q, w_dq, g_q, w_uq, w_dkv, g_kv, w_ukv, w_o (fp32 layers 0 and 1 only). */
void ref_lat_fresh(int which);
int ref_lat_set_weights(int which, int layout, const float* const w[8]);
/* The int8 layers 2 and 3: m[6] = w_q, w_dq, w_uq, w_dkv, w_ukv, w_o, s[6] their scales,
 * g[2] = g_q, g_kv. */
int ref_lat_q8_set_weights(int which, int layout, const int8_t* const m[6], const float* const s[6],
                           const float* const g[2]);
int ref_lat_set_rope(int which, int enabled, float base, int pairing, size_t rotary_dims,
                     size_t start_position);
int ref_lat_set_scale(int which, float scale);
int ref_lat_set_rms_eps(int which, float eps);
float ref_lat_scale(int which);
float ref_lat_rms_eps(int which);
int ref_lat_prefill(int which, const float* x, size_t T, float* y);
int ref_lat_decode(int which, const float* x, float* y);
int ref_lat_truncate(int which, size_t length);
size_t ref_lat_length(int which);
/* export_cache of rows first .. first + n - 1 (*d_head: the slice's, on success). */
int ref_lat_export(int which, size_t first, size_t n, float* rows, size_t* d_head);
/* kCacheBytes of the C++ object (and kCacheBytesPerToken). */
size_t ref_lat_cache_bytes(int which, size_t* per_token);
/* microattn::c_api::config_id of the C layer `name` (cmha, cmha_none, ckv_win, clat, clat_q,
 * clat_q8, clat_q8n; "clat_q8 fp32 weights", "clat_q8 fp32 cache": its twins; 0 otherwise). */
uint32_t ref_config_id(const char* name);

/* The building blocks (c_api_blocks.cpp), each call on a fresh C++ object:
 * linear, which = 0: clin's Linear<LinearConfig<32, 24, Bias::kYes>> (w float), 1: clin_q8's
 * Linear<LinearConfig<32, 48, WeightType::kInt8, MaxWorkers{3}>> (w int8_t, s its scales). */
int ref_linear_forward(int which, int layout, const void* w, const float* s, const float* b,
                       const float* x, size_t M, float* y);
/* mlp, which = 0: cmlp's Mlp<MlpConfig<32, 48, kSwiGlu>>, 1: cmlp_gelu's Mlp<MlpConfig<32, 40,
 * kGelu, Bias::kYes, MaxWorkers{3}>, DefaultArch, 5>, 2: cmlp_q8's Mlp<MlpConfig<32, 48, kGeGlu,
 * WeightType::kInt8, Bias::kYes>>. w[3] = w_gate, w_up, w_down (float, or int8_t for 2), s[3]
 * their scales, b[3] their biases. */
int ref_mlp_forward(int which, int layout, const void* const w[3], const float* const s[3],
                    const float* const b[3], const float* x, size_t M, float* y);
/* norms of width 32, which = 0: RmsNorm (b unused), 1: LayerNorm, 2: LayerNorm<32, Bias::kNo>;
 * eps 0: the default. */
int ref_norm_forward(int which, const float* g, const float* b, float eps, const float* x, size_t M,
                     float* y);
/* The default epsilon of RmsNorm (which 0) and LayerNorm (1). */
float ref_norm_default_eps(int which);
/* sizeof / alignof of the C++ object behind the C block `name` (0 for an unknown name). */
void ref_block_size(const char* name, size_t* bytes, size_t* align);
/* microattn::c_api::config_id of the C block `name` (clin, cmlp, cmlp_gelu, crms, cln) or of a
 * twin ("clin without bias", "cmlp_gelu chunk 16", "cmlp as kGeGlu"); 0 otherwise. */
uint32_t ref_block_config_id(const char* name);

#ifdef __cplusplus
}
#endif

#endif
