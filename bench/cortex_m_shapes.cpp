// SPDX-License-Identifier: Apache-2.0
// The Cortex-M benchmark's cases on this machine (ports/cortex-m/bench.cpp): the same
// configurations, weights, inputs and names, so tools/compare_bench.py can put a board's JSON
// and this binary's side by side (docs/porting.md).
//
//   M1  layer forward, T=64, T_max=64 d_model=64 H=4 d_head=16
//   M2  the same layer, T=16
//   M3  the attention core alone (ScaledDotProductAttention), T=64 H=4 d_head=16
//   MD1 one decode step (KvAttention): the 64th token over 63 cached ones, then truncate(63)
//   M1_panel16, MD1_panel16  with the weights stored kPanel16 (the others kInOut)
//   M1_q8, MD1_q8  int8 weights (WeightType::kInt8, kPanel16, quantised as on the board),
//                  fp32 cache; MD1_q8_kv8 also with the int8 cache (CacheType::kInt8)
//   M1_qd8, MD1_qd8  M1_q8, MD1_q8 with integer compute (Compute::kInt8)
//   MD1_qd8_kv8  MD1_qd8 with the int8 cache (integer scores against it)
//   MLD1  one decode step of the latent attention layer (LatentAttention, d_c 32, d_R 16,
//         d_nope 16, d_v 16, RoPE adjacent pairs) at MD1's d_model, heads and T_max, kInOut
//   MLD1_panel16  the same, kPanel16
//   MLF1  that layer prefilling the 64-token prompt into its emptied cache (unabsorbed)
// Weights and inputs come from ports/cortex-m/example_weights.hpp (xorshift streams, weights
// U(+-0.125), x U(+-1)), as on the board. fp32 x, batch 1, one thread, this build's kernels
// (the board runs the scalar ones). gflops counts the causal half, as for the other cases.
#include <array>
#include <cstddef>
#include <memory>
#include <string>

#include "bench_util.hpp"
#include "example_weights.hpp"
#include "microattn/attention.hpp"
#include "microattn/kv_cache.hpp"
#include "microattn/latent_attention.hpp"

namespace microattn_bench {
namespace {

using microattn::WeightLayout;
using Cfg = microattn::Config<64, 64, 4, 4, 16>;
using CfgQ8 = microattn::Config<64, 64, 4, 4, 16, microattn::WeightType::kInt8>;
using CfgQ8Kv8 =
    microattn::Config<64, 64, 4, 4, 16, microattn::WeightType::kInt8, microattn::CacheType::kInt8>;
using CfgQd8 =
    microattn::Config<64, 64, 4, 4, 16, microattn::WeightType::kInt8, microattn::Compute::kInt8>;
using CfgQd8Kv8 = microattn::Config<64, 64, 4, 4, 16, microattn::WeightType::kInt8,
                                    microattn::Compute::kInt8, microattn::CacheType::kInt8>;
constexpr std::size_t kT = Cfg::kTMax, kDM = Cfg::kDModel, kQD = Cfg::kQDim, kKD = Cfg::kKvDim;

/// The board's weights (same seeds and scale as bench.cpp), in every form its cases use.
struct MWeights {
  alignas(64) std::array<float, kDM* kQD> wq = example::make_weights<kDM * kQD>(1, 0.125f);
  alignas(64) std::array<float, kDM* kKD> wk = example::make_weights<kDM * kKD>(2, 0.125f);
  alignas(64) std::array<float, kDM* kKD> wv = example::make_weights<kDM * kKD>(3, 0.125f);
  alignas(64) std::array<float, kQD* kDM> wo = example::make_weights<kQD * kDM>(4, 0.125f);
  alignas(64) std::array<float, kDM* kQD> pq = example::panel16<kDM, kQD>(wq);
  alignas(64) std::array<float, kDM* kKD> pk = example::panel16<kDM, kKD>(wk);
  alignas(64) std::array<float, kDM* kKD> pv = example::panel16<kDM, kKD>(wv);
  alignas(64) std::array<float, kQD* kDM> po = example::panel16<kQD, kDM>(wo);
  example::Int8Matrix<kDM, kQD> qq = example::quantize_int8<kDM, kQD>(wq, /*panel16=*/true);
  example::Int8Matrix<kDM, kKD> qk = example::quantize_int8<kDM, kKD>(wk, true);
  example::Int8Matrix<kDM, kKD> qv = example::quantize_int8<kDM, kKD>(wv, true);
  example::Int8Matrix<kQD, kDM> qo = example::quantize_int8<kQD, kDM>(wo, true);
  alignas(64) float x[kT * kDM];
  alignas(64) float q[kT * kQD], k[kT * kKD], v[kT * kKD];
  MWeights() {
    example::fill(x, kT * kDM, 5, 1.0f);
    example::fill(q, kT * kQD, 6, 1.0f);
    example::fill(k, kT * kKD, 7, 1.0f);
    example::fill(v, kT * kKD, 8, 1.0f);
  }

  microattn::Weights<Cfg> fp32(WeightLayout layout) const {
    microattn::Weights<Cfg> w(layout);
    const bool p = layout == WeightLayout::kPanel16;
    w.w_q = p ? pq.data() : wq.data();
    w.w_k = p ? pk.data() : wk.data();
    w.w_v = p ? pv.data() : wv.data();
    w.w_o = p ? po.data() : wo.data();
    return w;
  }
  template <class C>
  microattn::Weights<C> int8() const {
    return microattn::Weights<C>(WeightLayout::kPanel16, qq.q.data(), qq.scale.data(), qk.q.data(),
                                 qk.scale.data(), qv.q.data(), qv.scale.data(), qo.q.data(),
                                 qo.scale.data());
  }
};

const MWeights& data() {
  static const MWeights d;  // ~150 KB, in static storage, made on first use
  return d;
}

// The latent layer of MLD1 / MLF1, its weights from bench.cpp's seeds 11..15.
using LCfg = microattn::LatentConfig<64, 64, 4, 32, 16, 16, 16>;
constexpr std::size_t kLQ = LCfg::kQDim, kLDkv = LCfg::kDCache, kLC = LCfg::kDLatent,
                      kLUkv = LCfg::kUkvDim, kLV = LCfg::kVDim;
struct MlaWeights {
  alignas(64) std::array<float, kDM* kLQ> q = example::make_weights<kDM * kLQ>(11, 0.125f);
  alignas(64) std::array<float, kDM* kLDkv> dkv = example::make_weights<kDM * kLDkv>(12, 0.125f);
  alignas(64) std::array<float, kLC> g = example::make_gains<kLC>(13, 0.25f);
  alignas(64) std::array<float, kLC* kLUkv> ukv = example::make_weights<kLC * kLUkv>(14, 0.125f);
  alignas(64) std::array<float, kLV* kDM> o = example::make_weights<kLV * kDM>(15, 0.125f);
  alignas(64) std::array<float, kDM* kLQ> pq = example::panel16<kDM, kLQ>(q);
  alignas(64) std::array<float, kDM* kLDkv> pdkv = example::panel16<kDM, kLDkv>(dkv);
  alignas(64) std::array<float, kLC* kLUkv> pukv = example::panel16<kLC, kLUkv>(ukv);
  alignas(64) std::array<float, kLV* kDM> po = example::panel16<kLV, kDM>(o);

  microattn::LatentWeights<LCfg> fp32(WeightLayout layout) const {
    microattn::LatentWeights<LCfg> w;
    const bool p = layout == WeightLayout::kPanel16;
    w.layout = layout;
    w.w_q = p ? pq.data() : q.data();
    w.w_dkv = p ? pdkv.data() : dkv.data();
    w.g_kv = g.data();
    w.w_ukv = p ? pukv.data() : ukv.data();
    w.w_o = p ? po.data() : o.data();
    return w;
  }
};

const MlaWeights& mla_data() {
  static const MlaWeights d;
  return d;
}

constexpr double layer_case_flops(double T) {
  return attn_flops(T, Cfg::kHeads, Cfg::kDHead) +
         proj_flops(T, kDM, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead) +
         out_proj_flops(T, kDM, Cfg::kHeads, Cfg::kDHead);
}
/// A decode step: the token's projections and W_O, and its query over the kT cached keys.
constexpr double decode_step_flops() {
  return proj_flops(1, kDM, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead) +
         4.0 * Cfg::kHeads * Cfg::kDHead * kT + out_proj_flops(1, kDM, Cfg::kHeads, Cfg::kDHead);
}

/// A latent decode step over kT cached rows (absorbed): the token's projections, W_UK into the
/// latent space, every head's scores and sums over [c_KV | k_R], the lift by W_UV, W_O.
constexpr double mla_decode_step_flops() {
  constexpr double H = LCfg::kHeads;
  return 2.0 * kDM * (kLQ + kLDkv) + 2.0 * H * LCfg::kDNope * kLC + 2.0 * H * kT * (kLDkv + kLC) +
         2.0 * H * kLC * LCfg::kDV + 2.0 * kLV * kDM;
}
/// A prefill of T tokens into an empty cache (unabsorbed): projections, every head's keys and
/// values expanded, the causal half of the attention, W_O.
constexpr double mla_prefill_flops(double T) {
  constexpr double H = LCfg::kHeads;
  return 2.0 * T * kDM * (kLQ + kLDkv) + 2.0 * H * T * kLC * (LCfg::kDNope + LCfg::kDV) +
         2.0 * H * (T * (T + 1) / 2) * (LCfg::kDQk + LCfg::kDV) + 2.0 * T * kLV * kDM;
}

std::string layout_label(WeightLayout layout, bool int8_weights, bool int8_cache) {
  std::string s = arch_label<microattn::DefaultArch>();
  s += layout == WeightLayout::kPanel16 ? ", kPanel16" : ", kInOut";
  if (int8_weights) s += ", int8 weights";
  if (int8_cache) s += ", int8 cache";
  return s;
}

/// M1, M2, M1_panel16, M1_q8: the layer's forward over T tokens.
template <class C, std::size_t T, WeightLayout kLayout = WeightLayout::kInOut>
void bm_m_layer(benchmark::State& state) {
  const MWeights& d = data();
  auto layer = std::make_unique<microattn::MultiHeadAttention<C>>();
  microattn::Status s = microattn::Status::kOk;
  if constexpr (C::kInt8Weights) {
    s = layer->set_weights(d.int8<C>());
  } else {
    s = layer->set_weights(d.fp32(kLayout));
  }
  if (s != microattn::Status::kOk) {
    state.SkipWithError("set_weights failed");
    return;
  }
  alignas(64) static float y[kT * Cfg::kOutDim];
  for (auto _ : state) {
    s = layer->forward(d.x, T, y);
    if (s != microattn::Status::kOk) {
      state.SkipWithError(microattn::to_string(s));
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, layer_case_flops(T));
  state.SetLabel(
      layout_label(C::kInt8Weights ? WeightLayout::kPanel16 : kLayout, C::kInt8Weights, false));
}

/// M3: the attention core alone over T = 64.
void bm_m_core(benchmark::State& state) {
  const MWeights& d = data();
  auto core = std::make_unique<microattn::ScaledDotProductAttention<Cfg>>();
  alignas(64) static float out[kT * kQD];
  for (auto _ : state) {
    const microattn::Status s = core->forward(d.q, d.k, d.v, kT, out);
    if (s != microattn::Status::kOk) {
      state.SkipWithError(microattn::to_string(s));
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, attn_flops(kT, Cfg::kHeads, Cfg::kDHead));
  state.SetLabel(arch_label<microattn::DefaultArch>());
}

/// MD1 and its variants: prefill 63 tokens, then decode the 64th and truncate back to 63.
template <class C, WeightLayout kLayout = WeightLayout::kInOut>
void bm_m_decode(benchmark::State& state) {
  const MWeights& d = data();
  auto kv = std::make_unique<microattn::KvAttention<C>>();
  microattn::Status s = microattn::Status::kOk;
  if constexpr (C::kInt8Weights) {
    s = kv->set_weights(d.int8<C>());
  } else {
    s = kv->set_weights(d.fp32(kLayout));
  }
  alignas(64) static float y[kT * Cfg::kOutDim];
  if (s == microattn::Status::kOk) s = kv->prefill(d.x, kT - 1, y);
  if (s != microattn::Status::kOk) {
    state.SkipWithError(microattn::to_string(s));
    return;
  }
  const float* x_token = d.x + (kT - 1) * kDM;
  for (auto _ : state) {
    s = kv->decode(x_token, y);
    if (s == microattn::Status::kOk) s = kv->truncate(kT - 1);
    if (s != microattn::Status::kOk) {
      state.SkipWithError(microattn::to_string(s));
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, decode_step_flops());
  state.SetLabel(layout_label(C::kInt8Weights ? WeightLayout::kPanel16 : kLayout, C::kInt8Weights,
                              C::kInt8Cache));
}

/// The latent layer with RoPE on its decoupled parts (adjacent pairs, as on the board).
std::unique_ptr<microattn::LatentAttention<LCfg>> make_mla(WeightLayout layout,
                                                           benchmark::State& state) {
  auto mla = std::make_unique<microattn::LatentAttention<LCfg>>();
  microattn::RopeConfig rope;
  rope.enabled = true, rope.pairing = microattn::RopePairing::kAdjacent;
  if (mla->set_weights(mla_data().fp32(layout)) != microattn::Status::kOk ||
      mla->set_rope(rope) != microattn::Status::kOk) {
    state.SkipWithError("set_weights or set_rope failed");
    return nullptr;
  }
  return mla;
}

/// MLD1, MLD1_panel16: prefill 63 tokens, then decode the 64th and truncate back to 63.
template <WeightLayout kLayout>
void bm_mla_decode(benchmark::State& state) {
  const MWeights& d = data();
  auto mla = make_mla(kLayout, state);
  if (!mla) return;
  alignas(64) static float y[kT * kDM];
  microattn::Status s = mla->prefill(d.x, kT - 1, y);
  if (s != microattn::Status::kOk) {
    state.SkipWithError(microattn::to_string(s));
    return;
  }
  const float* x_token = d.x + (kT - 1) * kDM;
  for (auto _ : state) {
    s = mla->decode(x_token, y);
    if (s == microattn::Status::kOk) s = mla->truncate(kT - 1);
    if (s != microattn::Status::kOk) {
      state.SkipWithError(microattn::to_string(s));
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, mla_decode_step_flops());
  state.SetLabel(layout_label(kLayout, false, false) + ", latent, absorbed");
}

/// MLF1: the whole 64-token prompt into the emptied cache.
void bm_mla_prefill(benchmark::State& state) {
  const MWeights& d = data();
  auto mla = make_mla(WeightLayout::kInOut, state);
  if (!mla) return;
  alignas(64) static float y[kT * kDM];
  for (auto _ : state) {
    mla->reset();
    const microattn::Status s = mla->prefill(d.x, kT, y);
    if (s != microattn::Status::kOk) {
      state.SkipWithError(microattn::to_string(s));
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, mla_prefill_flops(kT));
  state.SetLabel(layout_label(WeightLayout::kInOut, false, false) + ", latent, unabsorbed");
}

}  // namespace

void register_cortex_m_shape_benchmarks() {
  // The order and names of ports/cortex-m/bench.cpp.
  benchmark::RegisterBenchmark("M1", bm_m_layer<Cfg, 64>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("M2", bm_m_layer<Cfg, 16>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("M3", bm_m_core)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("MD1", bm_m_decode<Cfg>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("M1_panel16", bm_m_layer<Cfg, 64, WeightLayout::kPanel16>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("MD1_panel16", bm_m_decode<Cfg, WeightLayout::kPanel16>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("M1_q8", bm_m_layer<CfgQ8, 64>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("MD1_q8", bm_m_decode<CfgQ8>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("MD1_q8_kv8", bm_m_decode<CfgQ8Kv8>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("MLD1", bm_mla_decode<WeightLayout::kInOut>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("MLD1_panel16", bm_mla_decode<WeightLayout::kPanel16>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("MLF1", bm_mla_prefill)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("M1_qd8", bm_m_layer<CfgQd8, 64>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("MD1_qd8", bm_m_decode<CfgQd8>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("MD1_qd8_kv8", bm_m_decode<CfgQd8Kv8>)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace microattn_bench
