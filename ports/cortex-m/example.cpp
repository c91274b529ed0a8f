// SPDX-License-Identifier: Apache-2.0
// microattn on a Cortex-M: one causal self-attention layer (T_max = 64, d_model = 64, H = 4,
// d_head = 16) with its weights as const arrays in flash, one forward pass over 64 tokens, and
// a checksum of the output. All working memory is the static layer object (its size is printed);
// nothing is allocated. The checksum is the same on the M4 and M7, which run the scalar
// kernels (ISO C++ mode keeps GCC from contracting a*b+c into FMAs); the M55's Helium kernels
// sum in four lanes and differ in the last bits.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "example_weights.hpp"
#include "microattn/microattn.hpp"
#include "port.hpp"

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
  using namespace microattn::port;
  example::fill(g_x, kT * Cfg::kDModel, 5, 1.0f);  // the input: 64 tokens of 64 features

  microattn::Weights<Cfg> w(microattn::WeightLayout::kInOut);
  w.w_q = kWq.data();
  w.w_k = kWk.data();
  w.w_v = kWv.data();
  w.w_o = kWo.data();
  microattn::Status s = g_layer.set_weights(w);
  if (s == microattn::Status::kOk) s = g_layer.forward(g_x, kT, g_y);

  write("microattn example on ");
  write(board_name());
  write(" (");
  write(cpu_name());
  write(", kernels ");
  write(microattn::arch_name<>());
  write(")\nconfig T_max=64 d_model=64 H=4 H_kv=4 d_head=16, T=64, layer RAM ");
  write_u64(microattn::MultiHeadAttention<Cfg>::ram_bytes());
  write(" bytes, weights ");
  write_u64(sizeof(kWq) + sizeof(kWk) + sizeof(kWv) + sizeof(kWo));
  write(" bytes in flash\nstatus: ");
  write(microattn::to_string(s));
  write("\n");
  if (s != microattn::Status::kOk) return 1;

  double sum = 0, sum_abs = 0;
  std::uint32_t fnv = 2166136261u;  // FNV-1a over the output's bytes: any bit change shows
  for (float v : g_y) {
    sum += v;
    sum_abs += v < 0 ? -v : v;
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    for (int b = 0; b < 4; ++b) fnv = (fnv ^ ((bits >> (8 * b)) & 0xffu)) * 16777619u;
  }
  write("checksum: sum=");
  write_double(sum, 9);
  write(" sum_abs=");
  write_double(sum_abs, 9);
  write(" fnv1a=");
  write_hex32(fnv);
  write("\ny[0][0..3] = ");
  for (int i = 0; i < 4; ++i) {
    write_double(g_y[i], 9);
    write(i < 3 ? " " : "\n");
  }
  return sum_abs > 0 ? 0 : 2;
}
