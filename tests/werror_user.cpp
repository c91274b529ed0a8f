// SPDX-License-Identifier: Apache-2.0
// A user's translation unit: every public header and class, compiled by ctest with the user's
// kind of flags (-Wall -Wextra -Wpedantic -Werror, several -march, -Ofast, no exceptions/RTTI,
// g++ and clang++, the cross compilers): a warning in microattn's headers fails the build of a
// project that treats warnings as errors. werror_user_decoder.cpp is compiled with it: one model
// alone in its unit, where the kernels are inlined with its constant shapes.
#include "microattn/c_api.hpp"
#include "microattn/microattn.h"
#include "microattn/microattn.hpp"

using Cfg = microattn::Config<64, 64, 4, 2, 16, microattn::Bias::kQkv, microattn::Rope::kYes>;
using Wide = microattn::Config<32, 32, 2, 1, 16, microattn::OutDim{48}>;
static microattn::MultiHeadAttention<Cfg> g_mha;
static microattn::MultiHeadAttention<Wide> g_wide;
static microattn::ScaledDotProductAttention<Cfg> g_core;
static microattn::KvAttention<Cfg, microattn::DefaultArch, 16> g_kv;
// int8 weights with integer compute (every qd8 kernel: GEMM, GEMV, quantiser), both arches.
using Qd8 = microattn::Config<32, 64, 4, 2, 16, microattn::WeightType::kInt8,
                              microattn::Compute::kInt8, microattn::Bias::kYes>;
static microattn::MultiHeadAttention<Qd8> g_qd8;
static microattn::KvAttention<Qd8, microattn::ScalarArch, 8> g_qd8_kv;
// ... with the int8 cache: integer scores (d_head 64: whole groups, the score kernel's tails).
using Qd8Kv8 = microattn::Config<64, 128, 2, 2, 64, microattn::WeightType::kInt8,
                                 microattn::Compute::kInt8, microattn::CacheType::kInt8>;
static microattn::KvAttention<Qd8Kv8> g_qd8_kv8;
// Multi-head latent attention with a query latent, both arches, a prefill chunk.
using Mla = microattn::LatentConfig<32, 64, 4, 32, 16, 16, 16, microattn::QueryLatent{32}>;
static microattn::LatentAttention<Mla, microattn::DefaultArch, 8> g_mla;
static microattn::LatentAttention<Mla, microattn::ScalarArch> g_mla_scalar;
// ... with int8 weights and the int8 latent cache.
using Mla8 = microattn::LatentConfig<32, 64, 4, 32, 16, 16, 16, microattn::WeightType::kInt8,
                                     microattn::CacheType::kInt8>;
static microattn::LatentAttention<Mla8> g_mla8;
// The building blocks: a linear layer with int8 weights and bias, both norms, MLPs.
using Lin = microattn::LinearConfig<64, 48, microattn::WeightType::kInt8, microattn::Bias::kYes,
                                    microattn::MaxWorkers{2}>;
static microattn::Linear<Lin> g_lin;
static microattn::RmsNorm<64> g_rms;
static microattn::LayerNorm<64> g_ln;
using Swi = microattn::MlpConfig<64, 160, microattn::Activation::kSwiGlu>;
static microattn::Mlp<Swi> g_swiglu;
using Gelu8 = microattn::MlpConfig<64, 128, microattn::Activation::kGelu,
                                   microattn::WeightType::kInt8, microattn::Bias::kYes>;
static microattn::Mlp<Gelu8, microattn::ScalarArch, 4> g_gelu8;
// fp16 / bf16 weights (the widening loads of each -march): a KV layer and an MLP.
using Kv16 = microattn::Config<32, 64, 4, 2, 16, microattn::WeightType::kF16>;
static microattn::KvAttention<Kv16, microattn::DefaultArch, 8> g_kv16;
using Mlp16 =
    microattn::MlpConfig<64, 96, microattn::Activation::kSwiGlu, microattn::WeightType::kBF16>;
static microattn::Mlp<Mlp16> g_mlp16;
static microattn::f16 g_w16[64 * 64];
// Group-wise int8 weights with a bf16 cache.
using KvG = microattn::Config<32, 64, 4, 2, 16, microattn::WeightType::kInt8G32,
                              microattn::CacheType::kBF16>;
static microattn::KvAttention<KvG, microattn::DefaultArch, 8> g_kvg;
static microattn::bf16 g_wb16[64 * 96];
// A whole decoder: int8 weights and cache, tied head, a prefill chunk; and fp32, separate head.
using Dec8 = microattn::DecoderConfig<50, 64, 2, 4, 2, 16, 96, 32, microattn::LmHead::kTied,
                                      microattn::WeightType::kInt8, microattn::CacheType::kInt8>;
static microattn::Decoder<Dec8, microattn::DefaultArch, 4> g_dec8;
using Dec = microattn::DecoderConfig<50, 64, 1, 4, 4, 16, 96, 32, microattn::MaxWorkers{2}>;
static microattn::Decoder<Dec, microattn::ScalarArch> g_dec;

static int user_decoders(const void* blob, std::size_t bytes, float* logits) {
  const std::int32_t tokens[3] = {1, 2, 3};
  microattn::DecoderWeights<Dec8> w8;
  if (microattn::decoder_weights_from_blob<Dec8>(blob, bytes, &w8) != microattn::Status::kOk ||
      g_dec8.set_weights(w8) != microattn::Status::kOk ||
      g_dec8.prefill_all(tokens, 3, logits) != microattn::Status::kOk ||
      g_dec8.decode(4, logits) != microattn::Status::kOk)
    return 1;
  microattn::DecoderWeights<Dec> w;
  if (microattn::decoder_weights_from_blob<Dec>(blob, bytes, &w) != microattn::Status::kOk ||
      g_dec.set_weights(w) != microattn::Status::kOk ||
      g_dec.prefill(tokens, 3, logits) != microattn::Status::kOk)
    return 1;
  return g_dec.truncate(1) == microattn::Status::kOk ? 0 : 1;
}

static int user_blocks(const float* w, const float* x, float* y) {
  const auto* q = reinterpret_cast<const std::int8_t*>(w);
  microattn::LatentWeights<Mla8> wm;
  wm.layout = microattn::WeightLayout::kPanel16;
  wm.w_q = wm.w_dkv = wm.w_ukv = wm.w_o = q;
  wm.g_kv = wm.s_q = wm.s_dkv = wm.s_ukv = wm.s_o = w;
  if (g_mla8.set_weights(wm) != microattn::Status::kOk ||
      g_mla8.prefill(x, 5, y) != microattn::Status::kOk ||
      g_mla8.decode(x, y) != microattn::Status::kOk)
    return 1;
  microattn::LinearWeights<Lin> wl;
  wl.layout = microattn::WeightLayout::kOutIn, wl.w = q, wl.s = w, wl.b = w;
  if (g_lin.set_weights(wl) != microattn::Status::kOk ||
      g_lin.forward(x, 3, y) != microattn::Status::kOk)
    return 1;
  if (g_rms.set_weight(w) != microattn::Status::kOk ||
      g_rms.forward(x, 2, y) != microattn::Status::kOk ||
      g_ln.set_weights(w, w) != microattn::Status::kOk ||
      g_ln.forward(x, 2, y) != microattn::Status::kOk)
    return 1;
  microattn::MlpWeights<Swi> ws;
  ws.layout = microattn::WeightLayout::kPanel16, ws.w_gate = ws.w_up = ws.w_down = w;
  if (g_swiglu.set_weights(ws) != microattn::Status::kOk ||
      g_swiglu.forward(x, 20, y) != microattn::Status::kOk ||
      g_swiglu.forward(x, 1, y) != microattn::Status::kOk)
    return 1;
  microattn::MlpWeights<Gelu8> wg;
  wg.w_up = wg.w_down = q;
  wg.s_up = wg.s_down = wg.b_up = wg.b_down = w;
  if (g_gelu8.set_weights(wg) != microattn::Status::kOk ||
      g_gelu8.forward(x, 9, y) != microattn::Status::kOk)
    return 1;
  const microattn::Weights<Kv16> w16(microattn::WeightLayout::kPanel16, g_w16, g_w16, g_w16, g_w16);
  if (g_kv16.set_weights(w16) != microattn::Status::kOk ||
      g_kv16.prefill(x, 9, y) != microattn::Status::kOk ||
      g_kv16.decode(x, y) != microattn::Status::kOk)
    return 1;
  const microattn::Weights<KvG> wg32(microattn::WeightLayout::kPanel16, q, w, q, w, q, w, q, w);
  if (g_kvg.set_weights(wg32) != microattn::Status::kOk ||
      g_kvg.prefill(x, 9, y) != microattn::Status::kOk ||
      g_kvg.decode(x, y) != microattn::Status::kOk)
    return 1;
  microattn::MlpWeights<Mlp16> wb;
  wb.layout = microattn::WeightLayout::kOutIn, wb.w_gate = wb.w_up = wb.w_down = g_wb16;
  if (g_mlp16.set_weights(wb) != microattn::Status::kOk ||
      g_mlp16.forward(x, 7, y) != microattn::Status::kOk ||
      g_mlp16.forward(x, 1, y) != microattn::Status::kOk)
    return 1;
  return 0;
}

int user_run(const float* w, const float* x, float* y, float* k, float* v) {
  const microattn::Weights<Cfg> wt(microattn::WeightLayout::kPanel16, w, w, w, w, w, w, w);
  if (g_mha.set_weights(wt) != microattn::Status::kOk) return 1;
  if (g_kv.set_weights(wt) != microattn::Status::kOk) return 1;
  if (g_wide.set_weights(microattn::Weights<Wide>(microattn::WeightLayout::kOutIn, w, w, w, w)) !=
      microattn::Status::kOk)
    return 1;
  microattn::RopeConfig r;
  r.enabled = true;
  if (g_kv.set_rope(r) != microattn::Status::kOk || g_mha.set_rope(r) != microattn::Status::kOk)
    return 1;
  if (g_mha.forward(x, 33, y) != microattn::Status::kOk) return 1;
  if (g_wide.forward(x, 3, y) != microattn::Status::kOk) return 1;
  if (g_core.forward(x, x, x, 17, y) != microattn::Status::kOk) return 1;
  if (g_kv.prefill(x, 40, y) != microattn::Status::kOk) return 1;
  if (g_kv.decode(x, y) != microattn::Status::kOk) return 1;
  const auto* q = reinterpret_cast<const std::int8_t*>(w);
  const microattn::Weights<Qd8> wq(microattn::WeightLayout::kOutIn, q, w, q, w, q, w, q, w, w, w, w,
                                   w);
  if (g_qd8.set_weights(wq) != microattn::Status::kOk ||
      g_qd8_kv.set_weights(wq) != microattn::Status::kOk)
    return 1;
  if (g_qd8.forward(x, 20, y) != microattn::Status::kOk) return 1;
  if (g_qd8_kv.prefill(x, 9, y) != microattn::Status::kOk) return 1;
  if (g_qd8_kv.decode(x, y) != microattn::Status::kOk) return 1;
  const microattn::Weights<Qd8Kv8> wk8(microattn::WeightLayout::kInOut, q, w, q, w, q, w, q, w);
  if (g_qd8_kv8.set_weights(wk8) != microattn::Status::kOk) return 1;
  if (g_qd8_kv8.prefill(x, 9, y) != microattn::Status::kOk) return 1;
  if (g_qd8_kv8.decode(x, y) != microattn::Status::kOk) return 1;
  microattn::CacheSlice s;
  if (g_kv.export_cache(0, 4, k, v, &s) != microattn::Status::kOk) return 1;
  microattn::LatentWeights<Mla> wm;
  wm.layout = microattn::WeightLayout::kPanel16;
  wm.w_dq = wm.g_q = wm.w_uq = wm.w_dkv = wm.g_kv = wm.w_ukv = wm.w_o = w;
  if (g_mla.set_weights(wm) != microattn::Status::kOk ||
      g_mla.set_rope(r) != microattn::Status::kOk ||
      g_mla.prefill(x, 12, y) != microattn::Status::kOk ||
      g_mla.decode(x, y) != microattn::Status::kOk)
    return 1;
  if (g_mla_scalar.set_weights(wm) != microattn::Status::kOk ||
      g_mla_scalar.prefill(x, 3, y) != microattn::Status::kOk ||
      g_mla_scalar.decode(x, y) != microattn::Status::kOk ||
      g_mla_scalar.export_cache(0, 2, k, &s) != microattn::Status::kOk)
    return 1;
  if (user_blocks(w, x, y) != 0) return 1;
  if (user_decoders(w, 4096, y) != 0) return 1;
  return microattn_status_string(MICROATTN_OK)[0] == 'o' ? 0 : 1;
}
