// SPDX-License-Identifier: Apache-2.0
// A firmware's use of microattn on a Cortex-M4F: the layer a static object in .bss, one forward
// pass on fixed data; the result goes to a volatile so nothing is optimised away.
#include "microattn/microattn.hpp"

namespace {

using Cfg = microattn::Config<8, 16, 2, 1, 8>;
float g_wq[16 * 16], g_wk[16 * 8], g_wv[16 * 8], g_wo[16 * 16], g_x[6 * 16], g_y[6 * 16];
microattn::MultiHeadAttention<Cfg> g_attn;

void fill(float* p, unsigned n, unsigned salt) {
  for (unsigned i = 0; i < n; ++i)
    p[i] = static_cast<float>((i + salt) * 2654435761u >> 24) / 512.0f - 0.25f;
}

}  // namespace

volatile float g_checksum;

int main() {
  fill(g_wq, 16 * 16, 1);
  fill(g_wk, 16 * 8, 2);
  fill(g_wv, 16 * 8, 3);
  fill(g_wo, 16 * 16, 4);
  fill(g_x, 6 * 16, 5);
  microattn::Weights<Cfg> w(microattn::WeightLayout::kInOut);
  w.w_q = g_wq, w.w_k = g_wk, w.w_v = g_wv, w.w_o = g_wo;
  microattn::Status s = g_attn.set_weights(w);
  if (s == microattn::Status::kOk) s = g_attn.forward(g_x, 6, g_y);
  float sum = 0;
  for (float v : g_y) sum += v;
  g_checksum = sum;
  return s == microattn::Status::kOk ? 0 : 1;
}
