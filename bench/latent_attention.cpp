// SPDX-License-Identifier: Apache-2.0
// Multi-head latent attention (include/microattn/latent_attention.hpp, issue 34).
//
//   ML1   one absorbed decode step after 1023 cached tokens at D1's width: d_model 512, 8 heads,
//         d_c 128, d_R 32, d_nope 64, d_v 64 (a cached token is 160 floats; D1's is 1024)
//   ML2   the same at DeepSeek-V2-Lite's attention shape: d_model 2048, 16 heads, d_c 512,
//         d_R 64, d_nope 128, d_v 128
//   MLP1  ML1's layer prefilling a 1024-token prompt into an empty cache (unabsorbed; weights
//         [in][out], as P3's and KP3's)
//   ML1_outin  ML1 with the weights stored [out][in] (PyTorch's layout, the exporter's)
//   ML1_q8, ML1_q8_kv8  ML1 with int8 weights (WeightType::kInt8, kPanel16, per-column scales),
//         and with the int8 latent cache as well (CacheType::kInt8: d_c + d_R + 8 bytes a token);
//         beside D1_q8, D1_q8_kv8
// Weights in kPanel16 (the decode layout, as D1's), U(+-1/sqrt(fan_in)); RoPE on (adjacent
// pairs, base 10000).
// Counters as D1's: gbps / pct_bw over the bytes a step must read (every weight + the latent
// cache of 1024 tokens), gflops / pct_peak; label: cache bytes per token.
#include "microattn/latent_attention.hpp"

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "microattn/thread_pool.hpp"

namespace microattn_bench {
namespace {

constexpr std::size_t kCtx = 1024;
using ML1Cfg = microattn::LatentConfig<kCtx, 512, 8, 128, 32, 64, 64>;
using ML2Cfg = microattn::LatentConfig<kCtx, 2048, 16, 512, 64, 128, 128>;
using ML1T = microattn::LatentConfig<kCtx, 512, 8, 128, 32, 64, 64, microattn::MaxWorkers{2}>;
using ML1q8 = microattn::LatentConfig<kCtx, 512, 8, 128, 32, 64, 64, microattn::WeightType::kInt8>;
using ML1q8kv8 = microattn::LatentConfig<kCtx, 512, 8, 128, 32, 64, 64,
                                         microattn::WeightType::kInt8, microattn::CacheType::kInt8>;

template <class LCfg>
struct LatentData {
  static constexpr std::size_t DM = LCfg::kDModel, QD = LCfg::kQDim, DCR = LCfg::kDCache,
                               DC = LCfg::kDLatent, UD = LCfg::kUkvDim, VD = LCfg::kVDim;
  static constexpr std::size_t kWeightFloats = DM * QD + DM * DCR + DC + DC * UD + VD * DM;
  static float bound(std::size_t fan_in) { return 1.0f / std::sqrt(static_cast<float>(fan_in)); }
  AlignedFloats wq = uniform_floats(DM * QD, -bound(DM), bound(DM), 11);
  AlignedFloats wdkv = uniform_floats(DM * DCR, -bound(DM), bound(DM), 12);
  AlignedFloats gkv = uniform_floats(DC, 0.5f, 1.5f, 13);
  AlignedFloats wukv = uniform_floats(DC * UD, -bound(DC), bound(DC), 14);
  AlignedFloats wo = uniform_floats(VD * DM, -bound(VD), bound(VD), 15);
  AlignedFloats x = uniform_floats(kCtx * DM, -1.0f, 1.0f, 16);
  AlignedFloats y = uniform_floats(kCtx * DM, 0.0f, 0.0f, 17);
  // int8 weights: each matrix quantised into the layout asked for, and its scales.
  std::vector<std::int8_t> q8[4];
  std::vector<float> s8[4];
  /// The arrays as weights in `layout` (random values: any layout holds the same distribution).
  microattn::LatentWeights<LCfg> weights(microattn::WeightLayout layout) {
    microattn::LatentWeights<LCfg> w;
    w.layout = layout;
    w.g_kv = gkv.data();
    if constexpr (LCfg::kInt8Weights) {
      const float* src[4] = {wq.data(), wdkv.data(), wukv.data(), wo.data()};
      const std::size_t in[4] = {DM, DM, DC, VD}, out[4] = {QD, DCR, UD, DM};
      for (int m = 0; m < 4; ++m) {
        q8[m].assign(microattn::weight_floats(layout, in[m], out[m]), 0);
        s8[m].assign(out[m], 0.0f);
        (void)microattn::quantize_int8(src[m], microattn::WeightLayout::kInOut, in[m], out[m],
                                       layout, q8[m].data(), s8[m].data());
      }
      w.w_q = q8[0].data(), w.w_dkv = q8[1].data(), w.w_ukv = q8[2].data(), w.w_o = q8[3].data();
      w.s_q = s8[0].data(), w.s_dkv = s8[1].data(), w.s_ukv = s8[2].data(), w.s_o = s8[3].data();
    } else {
      w.w_q = wq.data(), w.w_dkv = wdkv.data(), w.w_ukv = wukv.data(), w.w_o = wo.data();
    }
    return w;
  }
};

/// Bytes one decode step reads: every weight (int8: a byte each, plus the scales) and the
/// latent cache of kCtx tokens.
template <class LCfg>
constexpr std::size_t step_bytes() {
  using D = LatentData<LCfg>;
  constexpr std::size_t weights =
      LCfg::kInt8Weights
          ? D::kWeightFloats - D::DC + (D::DC + D::QD + D::DCR + D::UD + D::DM) * sizeof(float)
          : D::kWeightFloats * sizeof(float);
  return weights + kCtx * microattn::LatentAttention<LCfg>::kCacheBytesPerToken;
}
template <class LCfg>
constexpr double step_flops() {
  constexpr double H = LCfg::kHeads, DM = LCfg::kDModel, DC = LCfg::kDLatent;
  return 2.0 * DM * (LCfg::kQDim + LCfg::kDCache) + 2.0 * H * LCfg::kDNope * DC +
         2.0 * H * kCtx * (LCfg::kDCache + DC) + 2.0 * H * DC * LCfg::kDV + 2.0 * LCfg::kVDim * DM;
}
template <class LCfg>
constexpr double prefill_flops(double T) {
  constexpr double H = LCfg::kHeads, DM = LCfg::kDModel, DC = LCfg::kDLatent;
  return 2.0 * T * DM * (LCfg::kQDim + LCfg::kDCache) +
         2.0 * H * T * DC * (LCfg::kDNope + LCfg::kDV) +
         2.0 * H * (T * (T + 1) / 2) * (LCfg::kDQk + LCfg::kDV) + 2.0 * T * LCfg::kVDim * DM;
}

template <class LCfg>
std::unique_ptr<microattn::LatentAttention<LCfg>> make_layer(LatentData<LCfg>& d,
                                                             benchmark::State& state,
                                                             microattn::WeightLayout layout) {
  auto layer = std::make_unique<microattn::LatentAttention<LCfg>>();
  microattn::RopeConfig rope;
  rope.enabled = true, rope.pairing = microattn::RopePairing::kAdjacent;
  if (layer->set_weights(d.weights(layout)) != microattn::Status::kOk ||
      layer->set_rope(rope) != microattn::Status::kOk) {
    state.SkipWithError("set_weights or set_rope failed");
    return nullptr;
  }
  return layer;
}

std::string cache_label(std::size_t bytes_per_token) {
  return "cache " + std::to_string(bytes_per_token) + " B/token";
}

/// One absorbed decode step after kCtx - 1 cached tokens. kThreads > 0: with an executor of
/// kThreads workers (1: none; LCfg has MaxWorkers{2}), timed in wall-clock time (the speed-up is
/// the ratio of the two real times in one run).
template <class LCfg, microattn::WeightLayout kLayout = microattn::WeightLayout::kPanel16,
          int kThreads = 0>
void bm_latent_decode(benchmark::State& state) {
  using Layer = microattn::LatentAttention<LCfg>;
  static microattn::ThreadPool pool(kThreads > 1 ? kThreads : 1);  // (1: no other thread)
  LatentData<LCfg> d;
  auto layer = make_layer(d, state, kLayout);
  if (!layer) return;
  const float* x_token = d.x.data() + (kCtx - 1) * LCfg::kDModel;
  float* y_token = d.y.data() + (kCtx - 1) * LCfg::kDModel;
  if ((kThreads > 1 && layer->set_executor(pool.executor()) != microattn::Status::kOk) ||
      layer->prefill(d.x.data(), kCtx - 1, d.y.data()) != microattn::Status::kOk) {
    state.SkipWithError("set_executor or prefill failed");
    return;
  }
  for (auto _ : state) {
    if (layer->decode(x_token, y_token) != microattn::Status::kOk ||
        layer->truncate(kCtx - 1) != microattn::Status::kOk) {
      state.SkipWithError("decode failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, step_flops<LCfg>());
  set_byte_counters(state, static_cast<double>(step_bytes<LCfg>()), step_bytes<LCfg>());
  const std::string workers =
      kThreads > 0 ? ", " + std::to_string(kThreads) + " worker(s), real time" : "";
  state.SetLabel(arch_label<microattn::DefaultArch>() +
                 (kLayout == microattn::WeightLayout::kPanel16 ? ", kPanel16" : ", kOutIn") +
                 (LCfg::kInt8Weights ? ", int8 weights" : "") +
                 (LCfg::kInt8Cache ? ", int8 cache" : "") + ", absorbed, " +
                 cache_label(Layer::kCacheBytesPerToken) + workers);
}

template <class LCfg>
void bm_latent_prefill(benchmark::State& state) {
  using Layer = microattn::LatentAttention<LCfg>;
  LatentData<LCfg> d;
  auto layer = make_layer(d, state, microattn::WeightLayout::kInOut);
  if (!layer) return;
  for (auto _ : state) {
    layer->reset();
    if (layer->prefill(d.x.data(), kCtx, d.y.data()) != microattn::Status::kOk) {
      state.SkipWithError("prefill failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, prefill_flops<LCfg>(kCtx));
  state.SetLabel(arch_label<microattn::DefaultArch>() + ", unabsorbed, " +
                 cache_label(Layer::kCacheBytesPerToken));
}

}  // namespace

void register_latent_benchmarks() {
  register_read_bw(step_bytes<ML1Cfg>());
  register_read_bw(step_bytes<ML2Cfg>());
  register_read_bw(step_bytes<ML1q8>());
  register_read_bw(step_bytes<ML1q8kv8>());
  benchmark::RegisterBenchmark("ML1", bm_latent_decode<ML1Cfg>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("ML1_outin",
                               bm_latent_decode<ML1Cfg, microattn::WeightLayout::kOutIn>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("ML1_q8", bm_latent_decode<ML1q8>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("ML1_q8_kv8", bm_latent_decode<ML1q8kv8>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("ML2", bm_latent_decode<ML2Cfg>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("MLP1", bm_latent_prefill<ML1Cfg>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("ML1/threads:1",
                               bm_latent_decode<ML1T, microattn::WeightLayout::kPanel16, 1>)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("ML1/threads:2",
                               bm_latent_decode<ML1T, microattn::WeightLayout::kPanel16, 2>)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

}  // namespace microattn_bench
