// SPDX-License-Identifier: Apache-2.0
// The C test's C++ side for the building blocks (--kind linear, mlp, rmsnorm, layernorm): their
// MICROATTN_C_* lines as a user's project would write them (headers generated at build time for
// this build's compiler and flags), and the references of c_api_reference.h, which run the same
// operations on C++ objects of their own built from the raw pointers (not through c_api.hpp).
// A file apart from c_api_layers.cpp so the two compile in parallel.
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "c_api_reference.h"
#include "clin.h"
#include "clin_q8.h"
#include "cln.h"
#include "cln_nb.h"
#include "cmlp.h"
#include "cmlp_gelu.h"
#include "cmlp_q8.h"
#include "crms.h"
#include "microattn/c_api.hpp"
#include "microattn/microattn.hpp"

namespace m = microattn;

using LinCfg = m::LinearConfig<32, 24, m::Bias::kYes>;
using LinQ8Cfg = m::LinearConfig<32, 48, m::WeightType::kInt8, m::MaxWorkers{3}>;
using MlpCfg = m::MlpConfig<32, 48, m::Activation::kSwiGlu>;
using MlpGeluCfg = m::MlpConfig<32, 40, m::Activation::kGelu, m::Bias::kYes, m::MaxWorkers{3}>;
using MlpQ8Cfg = m::MlpConfig<32, 48, m::Activation::kGeGlu, m::WeightType::kInt8, m::Bias::kYes>;

MICROATTN_C_LINEAR(clin, LinCfg);
MICROATTN_C_LINEAR(clin_q8, m::LinearConfig<32, 48, m::WeightType::kInt8, m::MaxWorkers{3}>);
MICROATTN_C_MLP(cmlp, MlpCfg);
MICROATTN_C_MLP_CHUNKED(cmlp_gelu, 5, MlpGeluCfg);
MICROATTN_C_MLP(cmlp_q8, MlpQ8Cfg);
MICROATTN_C_RMSNORM(crms, 32);
MICROATTN_C_LAYERNORM(cln, 32);
MICROATTN_C_LAYERNORM(cln_nb, 32, m::Bias::kNo);

static_assert(
    std::is_same<microattn_c_clin::Object, m::Linear<LinCfg>>::value &&
        std::is_same<microattn_c_cmlp::Object, m::Mlp<MlpCfg>>::value &&
        std::is_same<microattn_c_cmlp_gelu::Object, m::Mlp<MlpGeluCfg, m::DefaultArch, 5>>::value &&
        std::is_same<microattn_c_crms::Object, m::RmsNorm<32>>::value &&
        std::is_same<microattn_c_cln::Object, m::LayerNorm<32>>::value &&
        std::is_same<microattn_c_cln_nb::Object, m::LayerNorm<32, m::Bias::kNo>>::value,
    "the blocks' objects: Linear, Mlp (16 rows a pass, or 5), RmsNorm, LayerNorm");
static_assert(
    std::is_same<decltype(&clin_set_weights),
                 microattn_status (*)(clin*, const microattn_linear_weights*)>::value &&
        std::is_same<decltype(&clin_q8_set_weights),
                     microattn_status (*)(clin_q8*, const microattn_linear_weights_q8*)>::value &&
        std::is_same<decltype(&cmlp_set_weights),
                     microattn_status (*)(cmlp*, const microattn_mlp_weights*)>::value &&
        std::is_same<decltype(&cmlp_q8_set_weights),
                     microattn_status (*)(cmlp_q8*, const microattn_mlp_weights_q8*)>::value,
    "fp32 blocks take microattn_*_weights, int8 ones microattn_*_weights_q8");

namespace {

using m::Status;
using m::WeightLayout;

int code(Status s) { return static_cast<int>(s); }

m::Linear<LinCfg> g_lin;
m::Linear<LinQ8Cfg> g_lin_q8;
m::Mlp<MlpCfg> g_mlp;
m::Mlp<MlpGeluCfg, m::DefaultArch, 5> g_mlp_gelu;
m::Mlp<MlpQ8Cfg> g_mlp_q8;

// A fresh object: zero bytes are every block's default state (the library's contract; the
// blocks are not assignable).
template <class T>
T& fresh(T& t) {
  std::memset(static_cast<void*>(&t), 0, sizeof t);
  return t;
}

template <class Cfg, class Block>
int linear_forward(Block& lin, int layout, const void* w, const float* s, const float* b,
                   const float* x, size_t M, float* y) {
  m::LinearWeights<Cfg> lw;
  lw.layout = static_cast<WeightLayout>(layout);
  lw.w = static_cast<const typename Cfg::WeightElem*>(w);
  lw.s = s, lw.b = b;
  Status st = fresh(lin).set_weights(lw);
  if (st == Status::kOk) st = lin.forward(x, M, y);
  return code(st);
}

template <class Cfg, class Block>
int mlp_forward(Block& mlp, int layout, const void* const w[3], const float* const s[3],
                const float* const b[3], const float* x, size_t M, float* y) {
  using E = typename Cfg::WeightElem;
  m::MlpWeights<Cfg> mw;
  mw.layout = static_cast<WeightLayout>(layout);
  mw.w_gate = static_cast<const E*>(w[0]);
  mw.w_up = static_cast<const E*>(w[1]);
  mw.w_down = static_cast<const E*>(w[2]);
  mw.s_gate = s[0], mw.s_up = s[1], mw.s_down = s[2];
  mw.b_gate = b[0], mw.b_up = b[1], mw.b_down = b[2];
  Status st = fresh(mlp).set_weights(mw);
  if (st == Status::kOk) st = mlp.forward(x, M, y);
  return code(st);
}

}  // namespace

extern "C" {

void ref_block_size(const char* name, size_t* bytes, size_t* align) {
  *bytes = *align = 0;
  const auto set = [&](size_t b, size_t a) { *bytes = b, *align = a; };
  if (!std::strcmp(name, "clin")) set(sizeof(g_lin), alignof(decltype(g_lin)));
  if (!std::strcmp(name, "clin_q8")) set(sizeof(g_lin_q8), alignof(decltype(g_lin_q8)));
  if (!std::strcmp(name, "cmlp")) set(sizeof(g_mlp), alignof(decltype(g_mlp)));
  if (!std::strcmp(name, "cmlp_gelu")) set(sizeof(g_mlp_gelu), alignof(decltype(g_mlp_gelu)));
  if (!std::strcmp(name, "cmlp_q8")) set(sizeof(g_mlp_q8), alignof(decltype(g_mlp_q8)));
  if (!std::strcmp(name, "crms")) set(sizeof(m::RmsNorm<32>), alignof(m::RmsNorm<32>));
  if (!std::strcmp(name, "cln")) set(sizeof(m::LayerNorm<32>), alignof(m::LayerNorm<32>));
  if (!std::strcmp(name, "cln_nb"))
    set(sizeof(m::LayerNorm<32, m::Bias::kNo>), alignof(m::LayerNorm<32, m::Bias::kNo>));
}

uint32_t ref_block_config_id(const char* name) {
  namespace c = m::c_api;
  if (!std::strcmp(name, "clin")) return c::config_id<c::Kind::kLinear, LinCfg, 0>();
  if (!std::strcmp(name, "cmlp")) return c::config_id<c::Kind::kMlp, MlpCfg, 16>();
  if (!std::strcmp(name, "cmlp_gelu")) return c::config_id<c::Kind::kMlp, MlpGeluCfg, 5>();
  if (!std::strcmp(name, "crms")) return c::config_id<c::Kind::kRmsNorm, m::RmsNorm<32>, 0>();
  if (!std::strcmp(name, "cln")) return c::config_id<c::Kind::kLayerNorm, m::LayerNorm<32>, 0>();
  // Twins that differ in one option only: other fingerprints.
  if (!std::strcmp(name, "clin without bias"))
    return c::config_id<c::Kind::kLinear, m::LinearConfig<32, 24>, 0>();
  if (!std::strcmp(name, "cmlp_gelu chunk 16"))
    return c::config_id<c::Kind::kMlp, MlpGeluCfg, 16>();
  if (!std::strcmp(name, "cmlp as kGeGlu"))
    return c::config_id<c::Kind::kMlp, m::MlpConfig<32, 48, m::Activation::kGeGlu>, 16>();
  if (!std::strcmp(name, "clin with fp16 weights"))
    return c::config_id<c::Kind::kLinear,
                        m::LinearConfig<32, 24, m::Bias::kYes, m::WeightType::kF16>, 0>();
  if (!std::strcmp(name, "cmlp with int8 g32 weights"))
    return c::config_id<
        c::Kind::kMlp, m::MlpConfig<32, 48, m::Activation::kSwiGlu, m::WeightType::kInt8G32>, 16>();
  return 0;
}

int ref_linear_forward(int which, int layout, const void* w, const float* s, const float* b,
                       const float* x, size_t M, float* y) {
  return which == 0 ? linear_forward<LinCfg>(g_lin, layout, w, s, b, x, M, y)
                    : linear_forward<LinQ8Cfg>(g_lin_q8, layout, w, s, b, x, M, y);
}

int ref_mlp_forward(int which, int layout, const void* const w[3], const float* const s[3],
                    const float* const b[3], const float* x, size_t M, float* y) {
  return which == 0   ? mlp_forward<MlpCfg>(g_mlp, layout, w, s, b, x, M, y)
         : which == 1 ? mlp_forward<MlpGeluCfg>(g_mlp_gelu, layout, w, s, b, x, M, y)
                      : mlp_forward<MlpQ8Cfg>(g_mlp_q8, layout, w, s, b, x, M, y);
}

int ref_norm_forward(int which, const float* g, const float* b, float eps, const float* x, size_t M,
                     float* y) {
  const auto run = [&](auto norm, Status set) {
    Status st = set;
    if (st == Status::kOk && eps != 0.0f) st = norm.set_eps(eps);
    if (st == Status::kOk) st = norm.forward(x, M, y);
    return code(st);
  };
  if (which == 0) {
    m::RmsNorm<32> n;
    const Status s = n.set_weight(g);
    return run(n, s);
  }
  if (which == 1) {
    m::LayerNorm<32> n;
    const Status s = n.set_weights(g, b);
    return run(n, s);
  }
  m::LayerNorm<32, m::Bias::kNo> n;
  const Status s = n.set_weights(g, b);
  return run(n, s);
}

float ref_norm_default_eps(int which) {
  return which == 0 ? m::RmsNorm<32>{}.eps() : m::LayerNorm<32>{}.eps();
}

}  // extern "C"
