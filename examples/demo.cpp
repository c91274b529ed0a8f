// SPDX-License-Identifier: Apache-2.0
// microattn demo: the worked example of the teaching notes, then one forward pass of a small
// GQA layer with weights in PyTorch's layout. The part between the readme markers is the
// usage example in README.md (a test checks that they match).
#include <cmath>

// [readme-begin]
#include <cstdio>

#include "microattn/microattn.hpp"

// T_max 64 tokens, d_model 64, 4 query heads, 2 key/value heads (GQA), d_head 16.
using Cfg = microattn::Config<64, 64, 4, 2, 16>;

static microattn::MultiHeadAttention<Cfg> attn;  // all working memory; no heap, no globals

// q_proj..o_proj: PyTorch nn.Linear weights as exported ([out][in]), may live in flash.
int run_layer(const float* q_proj, const float* k_proj, const float* v_proj, const float* o_proj,
              const float* x, int tokens, float* y) {  // x, y: [tokens][64]
  microattn::Weights<Cfg> w(microattn::WeightLayout::kOutIn);
  w.w_q = q_proj, w.w_k = k_proj, w.w_v = v_proj, w.w_o = o_proj;
  microattn::Status s = attn.set_weights(w);
  if (s == microattn::Status::kOk) s = attn.forward(x, tokens, y);
  if (s != microattn::Status::kOk) std::printf("microattn: %s\n", microattn::to_string(s));
  return s == microattn::Status::kOk ? 0 : 1;
}
// [readme-end]

namespace {

float g_wq[64 * 64], g_wk[32 * 64], g_wv[32 * 64], g_wo[64 * 64], g_x[64 * 64], g_y[64 * 64];

void fill(float* p, unsigned n, unsigned salt, float amp) {
  for (unsigned i = 0; i < n; ++i) {
    const unsigned h = (i + salt) * 2654435761u;
    p[i] = amp * (static_cast<float>(h >> 8) / 16777216.0f * 2.0f - 1.0f);
  }
}

int worked_example() {
  // seeds/002: Q = K = [[1,0],[0,1],[1,1]], V = [[1,2],[3,0],[0,1]], causal, scale 1.
  using Tiny = microattn::Config<3, 2, 1, 1, 2>;
  static microattn::ScaledDotProductAttention<Tiny> sdpa;
  const float qk[] = {1, 0, 0, 1, 1, 1}, v[] = {1, 2, 3, 0, 0, 1};
  float out[6];
  if (sdpa.set_scale(1.0f) != microattn::Status::kOk) return 1;
  if (sdpa.forward(qk, 2, qk, 2, v, 2, 3, out, 2) != microattn::Status::kOk) return 1;
  std::printf("worked example (scale 1), expected [1,2] [2.462117,0.537883] [0.847766,1]:\n");
  for (int i = 0; i < 3; ++i)
    std::printf("  token %d: [%.6f, %.6f]\n", i, out[2 * i], out[2 * i + 1]);
  return 0;
}

}  // namespace

int main() {
  std::printf("microattn %s kernels\n", microattn::arch_name<>());
  if (worked_example() != 0) return 1;
  const float a = 0.125f;  // 1/sqrt(64), like nn.Linear's init
  fill(g_wq, 64 * 64, 1, a);
  fill(g_wk, 32 * 64, 2, a);
  fill(g_wv, 32 * 64, 3, a);
  fill(g_wo, 64 * 64, 4, a);
  fill(g_x, 64 * 64, 5, 1.0f);
  if (run_layer(g_wq, g_wk, g_wv, g_wo, g_x, 64, g_y) != 0) return 1;
  double sum = 0, sum_abs = 0;
  for (float f : g_y) sum += f, sum_abs += std::fabs(f);
  std::printf("GQA layer T=64 d_model=64 H=4 H_kv=2 d_head=16: checksum %.6f (sum |y| %.6f)\n", sum,
              sum_abs);
  std::printf("RAM of the layer object: %zu bytes (weights stay where they are)\n",
              microattn::MultiHeadAttention<Cfg>::ram_bytes());
  return 0;
}
