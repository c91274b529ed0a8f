// SPDX-License-Identifier: Apache-2.0
// The C test's C++ side: the layers the C tests use, each defined by one MICROATTN_C_* line as a
// user's project would (their headers are generated at build time by tools/microattn_c.py for
// this build's compiler and flags), and the reference functions of c_api_reference.h, which run
// the same operations through the C++ API on separate C++ objects. The references build their
// C++ arguments directly from the raw values (not through microattn/c_api.hpp), so the C path's
// conversions are checked against an independent one.
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "c_api_reference.h"
#include "ccore.h"
#include "ckv.h"
#include "ckv5.h"
#include "ckv_mt.h"
#include "ckv_q8.h"
#include "ckv_win.h"
#include "clat.h"
#include "clat_q.h"
#include "clat_q8.h"
#include "clat_q8n.h"
#include "cmha.h"
#include "cmha_mt.h"
#include "cmha_none.h"
#include "cmha_p.h"
#include "cmha_q8.h"
#include "microattn/c_api.hpp"
#include "microattn/latent_attention.hpp"
#include "microattn/microattn.hpp"

using MhaCfg = microattn::Config<24, 32, 4, 2, 8, microattn::Bias::kYes>;
using PanelCfg = microattn::Config<20, 32, 2, 1, 16, microattn::Rope::kYes>;
using KvCfg = microattn::Config<24, 32, 4, 2, 8, microattn::Rope::kYes>;
using CoreCfg = microattn::Config<24, 32, 4, 2, 8>;
// int8 weights; the KV layer also caches int8 (d_head 16: PANEL16 fits).
using MhaQ8Cfg =
    microattn::Config<24, 32, 4, 2, 8, microattn::Bias::kYes, microattn::WeightType::kInt8>;
using KvQ8Cfg = microattn::Config<24, 32, 2, 1, 16, microattn::Rope::kYes,
                                  microattn::WeightType::kInt8, microattn::CacheType::kInt8>;

MICROATTN_C_LAYER(cmha, MhaCfg);
MICROATTN_C_LAYER(cmha_p, microattn::Config<20, 32, 2, 1, 16, microattn::Rope::kYes>);
MICROATTN_C_KV_LAYER(ckv, KvCfg);
MICROATTN_C_KV_LAYER_CHUNKED(ckv5, 5, KvCfg);
MICROATTN_C_CORE(ccore, CoreCfg);
MICROATTN_C_LAYER(cmha_q8, MhaQ8Cfg);
MICROATTN_C_LAYER(
    cmha_mt, microattn::Config<24, 32, 4, 2, 8, microattn::Bias::kYes, microattn::MaxWorkers{3}>);
MICROATTN_C_KV_LAYER(
    ckv_mt, microattn::Config<24, 32, 4, 2, 8, microattn::Rope::kYes, microattn::MaxWorkers{3}>);
MICROATTN_C_KV_LAYER_CHUNKED(ckv_q8, 5, KvQ8Cfg);
// A bidirectional layer and a sliding-window KV layer (a ring of W + chunk - 1 = 9 tokens).
using NoneCfg = microattn::Config<24, 32, 4, 2, 8, microattn::Mask::kNone>;
using WinCfg = microattn::Config<24, 32, 4, 2, 8, microattn::SlidingWindow{6}>;
MICROATTN_C_LAYER(cmha_none, NoneCfg);
MICROATTN_C_KV_LAYER_CHUNKED(ckv_win, 4, WinCfg);
// Multi-head latent attention: q = x W_Q (prefill chunk T_max), and a query latent with 3
// workers and prefill chunk 5.
using LatCfg = microattn::LatentConfig<24, 32, 4, 16, 8, 8, 8>;
using LatQCfg = microattn::LatentConfig<24, 32, 3, 20, 6, 10, 12, microattn::QueryLatent{12},
                                        microattn::MaxWorkers{3}>;
MICROATTN_C_LATENT(clat, LatCfg);
MICROATTN_C_LATENT_CHUNKED(clat_q, 5, LatQCfg);
// int8 weights: with a query latent and an int8 latent cache (prefill chunk 5), and without
// either (q = x W_Q, fp32 cache). Every width a multiple of 16: PANEL16 fits.
using LatQ8Cfg = microattn::LatentConfig<24, 32, 2, 16, 16, 16, 16, microattn::QueryLatent{16},
                                         microattn::WeightType::kInt8, microattn::CacheType::kInt8>;
using LatQ8nCfg = microattn::LatentConfig<24, 32, 2, 16, 16, 16, 16, microattn::WeightType::kInt8>;
MICROATTN_C_LATENT_CHUNKED(clat_q8, 5, LatQ8Cfg);
MICROATTN_C_LATENT(clat_q8n, LatQ8nCfg);
static_assert(
    microattn::LatentWeights<LatQ8Cfg>::panel_fits() &&
        std::is_same<decltype(&clat_q8_set_weights),
                     microattn_status (*)(clat_q8*, const microattn_latent_weights_q8*)>::value &&
        std::is_same<microattn::c_api::CWeights<LatQ8nCfg>, microattn_latent_weights_q8>::value &&
        std::is_same<microattn::c_api::CWeights<LatCfg>, microattn_latent_weights>::value,
    "int8 latent layers take microattn_latent_weights_q8");
static_assert(
    std::is_same<microattn_c_clat_q::Object,
                 microattn::LatentAttention<LatQCfg, microattn::DefaultArch, 5>>::value &&
        std::is_same<microattn_c_clat::Object,
                     microattn::LatentAttention<LatCfg, microattn::DefaultArch, 24>>::value,
    "clat is a LatentAttention with prefill chunk T_max, clat_q with chunk 5");
static_assert(std::is_same<decltype(&clat_set_weights),
                           microattn_status (*)(clat*, const microattn_latent_weights*)>::value,
              "latent layers take microattn_latent_weights");

static_assert(std::is_same<microattn_c_cmha::Object, microattn::MultiHeadAttention<MhaCfg>>::value,
              "cmha is a MultiHeadAttention");
static_assert(std::is_same<microattn_c_ckv5::Object,
                           microattn::KvAttention<KvCfg, microattn::DefaultArch, 5>>::value,
              "ckv5 is a KvAttention with prefill chunk 5");
static_assert(
    std::is_same<microattn_c_cmha_q8::Object, microattn::MultiHeadAttention<MhaQ8Cfg>>::value,
    "cmha_q8 is a MultiHeadAttention with int8 weights");
static_assert(std::is_same<microattn_c_ckv_q8::Object,
                           microattn::KvAttention<KvQ8Cfg, microattn::DefaultArch, 5>>::value,
              "ckv_q8 is an int8-cache KvAttention with prefill chunk 5");
static_assert(std::is_same<microattn::c_api::CWeights<MhaQ8Cfg>, microattn_weights_q8>::value &&
                  std::is_same<microattn::c_api::CWeights<MhaCfg>, microattn_weights>::value &&
                  std::is_same<decltype(&cmha_q8_set_weights),
                               microattn_status (*)(cmha_q8*, const microattn_weights_q8*)>::value,
              "int8 layers take microattn_weights_q8");
static_assert(std::is_same<microattn_c_ckv::Object,
                           microattn::KvAttention<KvCfg, microattn::DefaultArch, 24>>::value,
              "ckv's prefill chunk is T_max");

namespace {

using microattn::Status;
using microattn::WeightLayout;

template <class Cfg>
microattn::Weights<Cfg> weights(int layout, const float* const w[8]) {
  return microattn::Weights<Cfg>(static_cast<WeightLayout>(layout), w[0], w[1], w[2], w[3], w[4],
                                 w[5], w[6], w[7]);
}

int code(Status s) { return static_cast<int>(s); }

microattn::MultiHeadAttention<MhaCfg> g_mha;
microattn::MultiHeadAttention<PanelCfg> g_mha_p;
microattn::KvAttention<KvCfg> g_kv;
microattn::KvAttention<KvCfg, microattn::DefaultArch, 5> g_kv5;
microattn::ScaledDotProductAttention<CoreCfg> g_core;
microattn::MultiHeadAttention<microattn::Config<64, 64, 4, 2, 16>> g_demo;
microattn::MultiHeadAttention<MhaQ8Cfg> g_mha_q8;
microattn::KvAttention<KvQ8Cfg, microattn::DefaultArch, 5> g_kv_q8;
microattn::MultiHeadAttention<NoneCfg> g_mha_none;
microattn::KvAttention<WinCfg, microattn::DefaultArch, 4> g_kv_win;
microattn::LatentAttention<LatCfg> g_lat;
microattn::LatentAttention<LatQCfg, microattn::DefaultArch, 5> g_lat_q;
microattn::LatentAttention<LatQ8Cfg, microattn::DefaultArch, 5> g_lat_q8;
microattn::LatentAttention<LatQ8nCfg> g_lat_q8n;

// Latent layer `which`: 0 clat, 1 clat_q, 2 clat_q8, 3 clat_q8n.
template <class Fn>
auto with_lat(int which, Fn fn) {
  return which == 0   ? fn(g_lat)
         : which == 1 ? fn(g_lat_q)
         : which == 2 ? fn(g_lat_q8)
                      : fn(g_lat_q8n);
}

// Latent weights from the raw pointers (w_q, w_dq, g_q, w_uq, w_dkv, g_kv, w_ukv, w_o).
template <class LCfg>
microattn::LatentWeights<LCfg> latent_weights(int layout, const float* const w[8]) {
  microattn::LatentWeights<LCfg> l;
  l.layout = static_cast<WeightLayout>(layout);
  l.w_q = w[0], l.w_dq = w[1], l.g_q = w[2], l.w_uq = w[3];
  l.w_dkv = w[4], l.g_kv = w[5], l.w_ukv = w[6], l.w_o = w[7];
  return l;
}

// int8 latent weights from the raw pointers: m = w_q, w_dq, w_uq, w_dkv, w_ukv, w_o, s their
// scales, g = g_q, g_kv.
template <class LCfg>
microattn::LatentWeights<LCfg> latent_weights_q8(int layout, const int8_t* const m[6],
                                                 const float* const s[6], const float* const g[2]) {
  microattn::LatentWeights<LCfg> l;
  l.layout = static_cast<WeightLayout>(layout);
  l.w_q = m[0], l.w_dq = m[1], l.w_uq = m[2], l.w_dkv = m[3], l.w_ukv = m[4], l.w_o = m[5];
  l.s_q = s[0], l.s_dq = s[1], l.s_uq = s[2], l.s_dkv = s[3], l.s_ukv = s[4], l.s_o = s[5];
  l.g_q = g[0], l.g_kv = g[1];
  return l;
}

// The int8 configurations' weights, from the reference's raw arrays.
template <class Cfg>
microattn::Weights<Cfg> weights_q8(int layout, const int8_t* const w[4], const float* const s[4],
                                   const float* const b[4]) {
  return microattn::Weights<Cfg>(static_cast<WeightLayout>(layout), w[0], s[0], w[1], s[1], w[2],
                                 s[2], w[3], s[3], b[0], b[1], b[2], b[3]);
}

microattn::RopeConfig rope(int enabled, float base, int pairing, size_t rotary_dims,
                           size_t start_position) {
  microattn::RopeConfig r;
  r.enabled = enabled != 0;
  r.base = base;
  r.pairing = static_cast<microattn::RopePairing>(pairing);
  r.rotary_dims = rotary_dims;
  r.start_position = start_position;
  return r;
}

template <class Layer, class Cfg>
int layer_forward(Layer& layer, int layout, const float* const w[8], float scale, const float* x,
                  size_t T, float* y, const microattn::RopeConfig& r = microattn::RopeConfig{}) {
  layer = Layer{};  // fresh: default scale unless one is given
  Status s = layer.set_weights(weights<Cfg>(layout, w));
  if (s == Status::kOk && scale != 0.0f) s = layer.set_scale(scale);
  if (s == Status::kOk) s = layer.set_rope(r);
  if (s == Status::kOk) s = layer.forward(x, T, y);
  return code(s);
}

template <class Fn>
auto with_kv(int which, Fn fn) {
  return which == 0 ? fn(g_kv) : which == 1 ? fn(g_kv5) : fn(g_kv_q8);
}

}  // namespace

extern "C" {

const char* ref_to_string(int s) { return microattn::to_string(static_cast<Status>(s)); }

void ref_object_size(const char* name, size_t* bytes, size_t* align) {
  *bytes = *align = 0;
  const auto set = [&](size_t b, size_t a) { *bytes = b, *align = a; };
  if (!std::strcmp(name, "cmha")) set(sizeof(g_mha), alignof(decltype(g_mha)));
  if (!std::strcmp(name, "cmha_p")) set(sizeof(g_mha_p), alignof(decltype(g_mha_p)));
  if (!std::strcmp(name, "ckv")) set(sizeof(g_kv), alignof(decltype(g_kv)));
  if (!std::strcmp(name, "ckv5")) set(sizeof(g_kv5), alignof(decltype(g_kv5)));
  if (!std::strcmp(name, "ccore")) set(sizeof(g_core), alignof(decltype(g_core)));
  if (!std::strcmp(name, "cmha_q8")) set(sizeof(g_mha_q8), alignof(decltype(g_mha_q8)));
  if (!std::strcmp(name, "ckv_q8")) set(sizeof(g_kv_q8), alignof(decltype(g_kv_q8)));
  if (!std::strcmp(name, "clat")) set(sizeof(g_lat), alignof(decltype(g_lat)));
  if (!std::strcmp(name, "clat_q")) set(sizeof(g_lat_q), alignof(decltype(g_lat_q)));
  if (!std::strcmp(name, "clat_q8")) set(sizeof(g_lat_q8), alignof(decltype(g_lat_q8)));
  if (!std::strcmp(name, "clat_q8n")) set(sizeof(g_lat_q8n), alignof(decltype(g_lat_q8n)));
}

void ref_kv_q8_cache_bytes(size_t* int8_cache, size_t* f32_cache) {
  // The same layer with an fp32 cache (sizes only: nothing of it is compiled).
  using F32Cache =
      microattn::Config<24, 32, 2, 1, 16, microattn::Rope::kYes, microattn::WeightType::kInt8>;
  *int8_cache = decltype(g_kv_q8)::kCacheBytes;
  *f32_cache = microattn::KvAttention<F32Cache, microattn::DefaultArch, 5>::kCacheBytes;
}

int ref_quantize_int8(const float* src, int from, size_t in_dim, size_t out_dim, int to,
                      int8_t* dst, float* scales, float err[3]) {
  microattn::QuantError e;
  const Status s = microattn::quantize_int8(src, static_cast<WeightLayout>(from), in_dim, out_dim,
                                            static_cast<WeightLayout>(to), dst, scales, &e);
  if (s == Status::kOk) err[0] = e.max_abs, err[1] = e.rms, err[2] = e.rel;
  return code(s);
}

int ref_mha_q8_forward(int layout, const int8_t* const w[4], const float* const s[4],
                       const float* const b[4], const float* x, size_t T, float* y) {
  g_mha_q8 = decltype(g_mha_q8){};
  Status st = g_mha_q8.set_weights(weights_q8<MhaQ8Cfg>(layout, w, s, b));
  if (st == Status::kOk) st = g_mha_q8.forward(x, T, y);
  return code(st);
}

int ref_kv_q8_set_weights(int layout, const int8_t* const w[4], const float* const s[4]) {
  const float* const b[4] = {nullptr, nullptr, nullptr, nullptr};
  return code(g_kv_q8.set_weights(weights_q8<KvQ8Cfg>(layout, w, s, b)));
}

float ref_default_scale(void) { return microattn::default_scale<MhaCfg>(); }

int ref_mha_forward(int layout, const float* const w[8], float scale, const float* x, size_t T,
                    float* y) {
  return layer_forward<decltype(g_mha), MhaCfg>(g_mha, layout, w, scale, x, T, y);
}

int ref_mha_p_forward(int layout, const float* const w[8], float scale, const float* x, size_t T,
                      float* y, int rope_enabled, float base, int pairing, size_t rotary_dims,
                      size_t start_position) {
  return layer_forward<decltype(g_mha_p), PanelCfg>(
      g_mha_p, layout, w, scale, x, T, y,
      rope(rope_enabled, base, pairing, rotary_dims, start_position));
}

int ref_demo_forward(const float* const w[8], const float* x, size_t T, float* y) {
  return layer_forward<decltype(g_demo), microattn::Config<64, 64, 4, 2, 16>>(
      g_demo, static_cast<int>(WeightLayout::kOutIn), w, 0.0f, x, T, y);
}

int ref_core_forward(float scale, const float* q, size_t ldq, const float* k, size_t ldk,
                     const float* v, size_t ldv, size_t T, float* out, size_t ldo) {
  g_core = decltype(g_core){};
  Status s = scale != 0.0f ? g_core.set_scale(scale) : Status::kOk;
  if (s == Status::kOk) s = g_core.forward(q, ldq, k, ldk, v, ldv, T, out, ldo);
  return code(s);
}

void ref_kv_fresh(int which) {
  // KvAttention is not assignable: zero bytes are its default state (the library's contract).
  with_kv(which, [](auto& kv) {
    std::memset(static_cast<void*>(&kv), 0, sizeof kv);
    return 0;
  });
}
int ref_kv_set_weights(int which, int layout, const float* const w[8]) {
  return with_kv(which, [&](auto& kv) {
    if constexpr (std::is_same<std::decay_t<decltype(kv)>, decltype(g_kv_q8)>::value)
      return code(Status::kBadArgument);  // int8 weights: ref_kv_q8_set_weights
    else
      return code(kv.set_weights(weights<KvCfg>(layout, w)));
  });
}
int ref_kv_set_scale(int which, float scale) {
  return with_kv(which, [&](auto& kv) { return code(kv.set_scale(scale)); });
}
int ref_kv_set_rope(int which, int enabled, float base, int pairing, size_t rotary_dims,
                    size_t start_position) {
  const microattn::RopeConfig r = rope(enabled, base, pairing, rotary_dims, start_position);
  return with_kv(which, [&](auto& kv) { return code(kv.set_rope(r)); });
}
int ref_kv_prefill(int which, const float* x, size_t T, float* y) {
  return with_kv(which, [&](auto& kv) { return code(kv.prefill(x, T, y)); });
}
int ref_kv_decode(int which, const float* x, float* y) {
  return with_kv(which, [&](auto& kv) { return code(kv.decode(x, y)); });
}
int ref_kv_truncate(int which, size_t length) {
  return with_kv(which, [&](auto& kv) { return code(kv.truncate(length)); });
}
void ref_kv_reset(int which) {
  with_kv(which, [](auto& kv) {
    kv.reset();
    return 0;
  });
}
size_t ref_kv_length(int which) {
  return with_kv(which, [](auto& kv) { return kv.length(); });
}
int ref_kv_export(int which, size_t first, size_t n, float* k, float* v, size_t* slice_first,
                  size_t* slice_tokens) {
  return with_kv(which, [&](auto& kv) {
    microattn::CacheSlice info;
    const Status s = kv.export_cache(first, n, k, v, &info);
    if (s == Status::kOk) *slice_first = info.first, *slice_tokens = info.tokens;
    return code(s);
  });
}

int ref_mha_none_forward(int layout, const float* const w[8], const float* x, size_t T, float* y) {
  return layer_forward<decltype(g_mha_none), NoneCfg>(g_mha_none, layout, w, 0.0f, x, T, y);
}

void ref_kv_win_fresh(void) { std::memset(static_cast<void*>(&g_kv_win), 0, sizeof g_kv_win); }
int ref_kv_win_set_weights(int layout, const float* const w[8]) {
  return code(g_kv_win.set_weights(weights<WinCfg>(layout, w)));
}
int ref_kv_win_decode(const float* x, float* y) { return code(g_kv_win.decode(x, y)); }
int ref_kv_win_truncate(size_t length) { return code(g_kv_win.truncate(length)); }
size_t ref_kv_win_length(void) { return g_kv_win.length(); }
size_t ref_kv_win_oldest(void) { return g_kv_win.oldest(); }
uint32_t ref_config_id(const char* name) {
  namespace c = microattn::c_api;
  if (!std::strcmp(name, "cmha")) return c::config_id<c::Kind::kLayer, MhaCfg, 0>();
  if (!std::strcmp(name, "cmha_none")) return c::config_id<c::Kind::kLayer, NoneCfg, 0>();
  if (!std::strcmp(name, "ckv_win")) return c::config_id<c::Kind::kKv, WinCfg, 4>();
  if (!std::strcmp(name, "clat")) return c::config_id<c::Kind::kLatent, LatCfg, 24>();
  if (!std::strcmp(name, "clat_q")) return c::config_id<c::Kind::kLatent, LatQCfg, 5>();
  if (!std::strcmp(name, "clat_q8")) return c::config_id<c::Kind::kLatent, LatQ8Cfg, 5>();
  if (!std::strcmp(name, "clat_q8n")) return c::config_id<c::Kind::kLatent, LatQ8nCfg, 24>();
  // clat_q8 with fp32 weights, and with an fp32 cache: other fingerprints.
  using F32W = microattn::LatentConfig<24, 32, 2, 16, 16, 16, 16, microattn::QueryLatent{16},
                                       microattn::CacheType::kInt8>;
  using F32C = microattn::LatentConfig<24, 32, 2, 16, 16, 16, 16, microattn::QueryLatent{16},
                                       microattn::WeightType::kInt8>;
  if (!std::strcmp(name, "clat_q8 fp32 weights")) return c::config_id<c::Kind::kLatent, F32W, 5>();
  if (!std::strcmp(name, "clat_q8 fp32 cache")) return c::config_id<c::Kind::kLatent, F32C, 5>();
  return 0;
}

void ref_lat_fresh(int which) {
  // Not assignable: zero bytes are its default state (the library's contract).
  with_lat(which, [](auto& l) {
    std::memset(static_cast<void*>(&l), 0, sizeof l);
    return 0;
  });
}
int ref_lat_set_weights(int which, int layout, const float* const w[8]) {
  if (which > 1) return code(Status::kBadArgument);  // int8 weights: ref_lat_q8_set_weights
  return which == 0 ? code(g_lat.set_weights(latent_weights<LatCfg>(layout, w)))
                    : code(g_lat_q.set_weights(latent_weights<LatQCfg>(layout, w)));
}
int ref_lat_q8_set_weights(int which, int layout, const int8_t* const m[6], const float* const s[6],
                           const float* const g[2]) {
  if (which == 2) return code(g_lat_q8.set_weights(latent_weights_q8<LatQ8Cfg>(layout, m, s, g)));
  if (which == 3) return code(g_lat_q8n.set_weights(latent_weights_q8<LatQ8nCfg>(layout, m, s, g)));
  return code(Status::kBadArgument);
}
int ref_lat_set_rope(int which, int enabled, float base, int pairing, size_t rotary_dims,
                     size_t start_position) {
  const microattn::RopeConfig r = rope(enabled, base, pairing, rotary_dims, start_position);
  return with_lat(which, [&](auto& l) { return code(l.set_rope(r)); });
}
int ref_lat_set_scale(int which, float scale) {
  return with_lat(which, [&](auto& l) { return code(l.set_scale(scale)); });
}
int ref_lat_set_rms_eps(int which, float eps) {
  return with_lat(which, [&](auto& l) { return code(l.set_rms_eps(eps)); });
}
float ref_lat_scale(int which) {
  return with_lat(which, [](auto& l) { return l.scale(); });
}
float ref_lat_rms_eps(int which) {
  return with_lat(which, [](auto& l) { return l.rms_eps(); });
}
int ref_lat_prefill(int which, const float* x, size_t T, float* y) {
  return with_lat(which, [&](auto& l) { return code(l.prefill(x, T, y)); });
}
int ref_lat_decode(int which, const float* x, float* y) {
  return with_lat(which, [&](auto& l) { return code(l.decode(x, y)); });
}
int ref_lat_truncate(int which, size_t length) {
  return with_lat(which, [&](auto& l) { return code(l.truncate(length)); });
}
size_t ref_lat_length(int which) {
  return with_lat(which, [](auto& l) { return l.length(); });
}
int ref_lat_export(int which, size_t first, size_t n, float* rows, size_t* d_head) {
  return with_lat(which, [&](auto& l) {
    microattn::CacheSlice info;
    const Status s = l.export_cache(first, n, rows, &info);
    if (s == Status::kOk) *d_head = info.d_head;
    return code(s);
  });
}
size_t ref_lat_cache_bytes(int which, size_t* per_token) {
  return with_lat(which, [&](auto& l) {
    using L = std::decay_t<decltype(l)>;
    *per_token = L::kCacheBytesPerToken;
    return L::kCacheBytes;
  });
}

}  // extern "C"
