// SPDX-License-Identifier: Apache-2.0
// microattn on a Cortex-M: one causal self-attention layer (T_max = 64, d_model = 64, H = 4,
// d_head = 16) with its weights as const arrays in flash, one forward pass over 64 tokens, and
// a checksum of the output. All working memory is the static layer object (its size is printed);
// nothing is allocated. The checksum is the same on the M4 and M7, which run the scalar
// kernels (ISO C++ mode keeps GCC from contracting a*b+c into FMAs); the M55's Helium kernels
// sum in four lanes and differ in the last bits.
#include <cstddef>

#include "example_report.hpp"
#include "example_weights.hpp"
#include "microattn/microattn.hpp"

namespace {

using Cfg = microattn::Config</*T_max=*/64, /*d_model=*/64, /*H=*/4, /*H_kv=*/4, /*d_head=*/16>;
constexpr std::size_t kT = 64;

// Xavier-like scale 1/sqrt(d_model) = 0.125. Layout kInOut: W_q is [d_model][H * d_head].
constexpr auto kWq = example::make_weights<Cfg::kDModel * Cfg::kQDim>(1, 0.125f);
constexpr auto kWk = example::make_weights<Cfg::kDModel * Cfg::kKvDim>(2, 0.125f);
constexpr auto kWv = example::make_weights<Cfg::kDModel * Cfg::kKvDim>(3, 0.125f);
constexpr auto kWo = example::make_weights<Cfg::kQDim * Cfg::kDModel>(4, 0.125f);

microattn::MultiHeadAttention<Cfg> g_layer;  // .bss: the whole RAM budget of the library
float g_x[kT * Cfg::kDModel];
float g_y[kT * Cfg::kOutDim];

}  // namespace

int main(int, char**) {
  example::fill(g_x, kT * Cfg::kDModel, 5, 1.0f);  // the input: 64 tokens of 64 features

  microattn::Weights<Cfg> w(microattn::WeightLayout::kInOut);
  w.w_q = kWq.data();
  w.w_k = kWk.data();
  w.w_v = kWv.data();
  w.w_o = kWo.data();
  microattn::Status s = g_layer.set_weights(w);
  if (s == microattn::Status::kOk) s = g_layer.forward(g_x, kT, g_y);

  return example::report({"microattn example", "T_max=64 d_model=64 H=4 H_kv=4 d_head=16", kT,
                          microattn::MultiHeadAttention<Cfg>::ram_bytes(),
                          sizeof(kWq) + sizeof(kWk) + sizeof(kWv) + sizeof(kWo), ""},
                         s, g_y, kT * Cfg::kOutDim);
}
