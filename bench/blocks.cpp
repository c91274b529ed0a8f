// SPDX-License-Identifier: Apache-2.0
// The building blocks around attention (linear.hpp, mlp.hpp): a LLaMA-style MLP at D1's width.
//
//   FF1     one token through a SwiGLU MLP, d_model 512, d_hidden 1408 (LLaMA's 8/3 d_model
//           rounded up to 64): three GEMVs, kPanel16 fp32 weights; gbps / pct_bw over the
//           weights (8.65 MB), as D1's
//   FF1_q8  FF1 with int8 weights (WeightType::kInt8, kPanel16): a quarter of the bytes
//   FF1_qd8 FF1_q8 with integer compute (Compute::kInt8: x and the hidden row quantised)
//   FFP1    1024 tokens through FF1's MLP (kMaxRows 64: three GEMMs per 64 rows), kInOut
//           weights as P3's; gflops / pct_peak
//   FFP1_qd8  FFP1 with int8 weights and integer compute
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "microattn/mlp.hpp"

namespace microattn_bench {
namespace {

constexpr std::size_t kDM = 512, kDH = 1408, kTokens = 1024;
using Ff = microattn::MlpConfig<kDM, kDH, microattn::Activation::kSwiGlu>;
using FfQ8 =
    microattn::MlpConfig<kDM, kDH, microattn::Activation::kSwiGlu, microattn::WeightType::kInt8>;
using FfQd8 = microattn::MlpConfig<kDM, kDH, microattn::Activation::kSwiGlu,
                                   microattn::WeightType::kInt8, microattn::Compute::kInt8>;

template <class MCfg>
struct FfData {
  AlignedFloats w[3] = {uniform_floats(kDM * kDH, -0.044f, 0.044f, 21),
                        uniform_floats(kDM* kDH, -0.044f, 0.044f, 22),
                        uniform_floats(kDH* kDM, -0.027f, 0.027f, 23)};
  AlignedFloats x = uniform_floats(kTokens * kDM, -1.0f, 1.0f, 24);
  AlignedFloats y = uniform_floats(kTokens * kDM, 0.0f, 0.0f, 25);
  std::vector<std::int8_t> q[3];
  std::vector<float> s[3];
  microattn::MlpWeights<MCfg> weights(microattn::WeightLayout layout) {
    microattn::MlpWeights<MCfg> mw;
    mw.layout = layout;
    if constexpr (MCfg::kInt8Weights) {
      const std::size_t in[3] = {kDM, kDM, kDH}, out[3] = {kDH, kDH, kDM};
      for (int m = 0; m < 3; ++m) {
        q[m].assign(microattn::weight_floats(layout, in[m], out[m]), 0);
        s[m].assign(out[m], 0.0f);
        (void)microattn::quantize_int8(w[m].data(), microattn::WeightLayout::kInOut, in[m], out[m],
                                       layout, q[m].data(), s[m].data());
      }
      mw.w_gate = q[0].data(), mw.w_up = q[1].data(), mw.w_down = q[2].data();
      mw.s_gate = s[0].data(), mw.s_up = s[1].data(), mw.s_down = s[2].data();
    } else {
      mw.w_gate = w[0].data(), mw.w_up = w[1].data(), mw.w_down = w[2].data();
    }
    return mw;
  }
};

template <class MCfg>
constexpr std::size_t ff_bytes() {
  return MCfg::kInt8Weights ? 3 * kDM * kDH + (2 * kDH + kDM) * sizeof(float)
                            : 3 * kDM * kDH * sizeof(float);
}
constexpr double ff_flops(double rows) { return 2.0 * rows * 3.0 * kDM * kDH; }

template <class MCfg, std::size_t kRows>
void bm_ff(benchmark::State& state) {
  const bool one = kRows == 1;
  const auto layout = one ? microattn::WeightLayout::kPanel16 : microattn::WeightLayout::kInOut;
  FfData<MCfg> d;
  auto mlp = std::make_unique<microattn::Mlp<MCfg, microattn::DefaultArch, 64>>();
  if (mlp->set_weights(d.weights(layout)) != microattn::Status::kOk) {
    state.SkipWithError("set_weights failed");
    return;
  }
  for (auto _ : state) {
    if (mlp->forward(d.x.data(), kRows, d.y.data()) != microattn::Status::kOk) {
      state.SkipWithError("forward failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, ff_flops(kRows));
  if (one) set_byte_counters(state, static_cast<double>(ff_bytes<MCfg>()), ff_bytes<MCfg>());
  state.SetLabel(arch_label<microattn::DefaultArch>() + (one ? ", kPanel16" : ", kInOut") +
                 (MCfg::kInt8Weights ? ", int8 weights" : "") +
                 (MCfg::kInt8Compute ? ", integer compute" : "") + ", SwiGLU 512-1408-512");
}

}  // namespace

void register_block_benchmarks() {
  register_read_bw(ff_bytes<Ff>());
  register_read_bw(ff_bytes<FfQ8>());
  benchmark::RegisterBenchmark("FF1", bm_ff<Ff, 1>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("FF1_q8", bm_ff<FfQ8, 1>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("FF1_qd8", bm_ff<FfQd8, 1>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("FFP1", bm_ff<Ff, kTokens>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("FFP1_qd8", bm_ff<FfQd8, kTokens>)->Unit(benchmark::kMillisecond);
}

}  // namespace microattn_bench
