// SPDX-License-Identifier: Apache-2.0
// The layer: microattn::MultiHeadAttention (projections, fused causal attention, W_O), prefill.
//
//   P1  T=64   d_model=256 H=4 d_head=64        P1_scalar     P1 on microattn::ScalarArch
//   P2  T=256  d_model=512 H=8 d_head=64        P1_reference  P1 by the plain triple-loop path
//   P3  T=1024 d_model=512 H=8 d_head=64                      (reference_layer.hpp)
//   P4  T=512  d_model=512 H=8 H_kv=2 d_head=64 (GQA)
//   P1_panel16 .. P4_panel16  with the weights stored as kPanel16 (the GEMM reads them
//               in place, without packing, on every arch)
//   P1_outin .. P4_outin  with the weights in PyTorch's [out][in] (kOutIn, the exporter's
//               default; the GEMM packs each panel by a transposing copy)
//   S1  the teaching notes' tiny layer: T=11 d_in=8 H=2 d_head=2, W_O 4 -> 4 (per-call overhead)
//   E1  encoder: T=256 d_model=512 H=8 d_head=64, Mask::kNone (every token sees every token)
//   W1  sliding window W=256 over T=1024, otherwise P3's shape (SlidingWindow{256})
//   P2_q8, P3_q8  P2, P3 with int8 weights (WeightType::kInt8, kInOut; dequantised into the
//               GEMM's packed panels); P2_q8g32 with group-wise int8 (kInt8G32, fp32 compute)
//   P1_qd8, P2_qd8, P4_qd8 (and _panel16, _outin)  P1, P2, P4 with integer compute
//               (Compute::kInt8 on int8 weights: activations quantised per row, int32 sums)
//   P1_eigen .. P4_eigen, S1_eigen  optional peer: the layer as an Eigen composition
//   (peer_eigen.hpp) S1_openblas optional peer: the layer as cblas_sgemm calls + a vector softmax
//   (peer_openblas.hpp) M1_openblas, M1_eigen  the peers on the Cortex-M example's shape (M1 in
//   cortex_m_shapes.cpp:
//               T=64 d_model=64 H=4 d_head=16), with random weights of that shape
// fp32, batch 1, one thread; W_O, no bias; x in [-1, 1], weights U(+-1/sqrt(fan_in)), stored
// kInOut ([in][out]) unless the name says otherwise.
// gflops counts the attended pairs (the causal half, all T^2 for E1, the band for W1) plus the
// projections and W_O.
#include <memory>
#include <string>

#include "bench_util.hpp"
#include "layer_data.hpp"
#include "microattn/attention.hpp"
#include "peer_eigen.hpp"
#include "peer_openblas.hpp"
#include "reference_layer.hpp"

namespace microattn_bench {
namespace {

using P1Cfg = microattn::Config<64, 256, 4, 4, 64>;
using P2Cfg = microattn::Config<256, 512, 8, 8, 64>;
using P3Cfg = microattn::Config<1024, 512, 8, 8, 64>;
using P4Cfg = microattn::Config<512, 512, 8, 2, 64>;
using P2q8 = microattn::Config<256, 512, 8, 8, 64, microattn::WeightType::kInt8>;
using P2q8g32 = microattn::Config<256, 512, 8, 8, 64, microattn::WeightType::kInt8G32>;
using E1Cfg = microattn::Config<256, 512, 8, 8, 64, microattn::Mask::kNone>;
// Integer compute (Compute::kInt8 on int8 weights): P1_qd8, P2_qd8, P4_qd8.
template <std::size_t T, std::size_t Hkv, std::size_t DM = 512, std::size_t H = 8>
using Qd8Cfg =
    microattn::Config<T, DM, H, Hkv, 64, microattn::WeightType::kInt8, microattn::Compute::kInt8>;
// The teaching notes' layer: 11 tokens, d_in 8, d_out 4 (2 heads of 2), W_O 4 -> 4.
using M1PeerCfg = microattn::Config<64, 64, 4, 4, 16>;  // M1's shape (cortex_m_shapes.cpp)
using S1Cfg = microattn::Config<11, 8, 2, 2, 2, microattn::OutDim{4}>;
using W1Cfg = microattn::Config<1024, 512, 8, 8, 64, microattn::SlidingWindow{256}>;
using P3q8 = microattn::Config<1024, 512, 8, 8, 64, microattn::WeightType::kInt8>;

template <class Cfg, class Arch, microattn::WeightLayout kLayout = microattn::WeightLayout::kInOut>
void bm_layer(benchmark::State& state) {
  LayerData<Cfg> d(static_cast<std::uint32_t>(Cfg::kTMax));
  auto layer = std::make_unique<microattn::MultiHeadAttention<Cfg, Arch>>();
  if (layer->set_weights(d.weights(kLayout)) != microattn::Status::kOk) {
    state.SkipWithError("set_weights failed");
    return;
  }
  for (auto _ : state) {
    const microattn::Status s = layer->forward(d.x.data(), Cfg::kTMax, d.y.data());
    if (s != microattn::Status::kOk) {
      state.SkipWithError(microattn::to_string(s));
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, config_flops<Cfg>());
  state.SetLabel(arch_label<Arch>() +
                 (kLayout == microattn::WeightLayout::kInOut   ? ""
                  : kLayout == microattn::WeightLayout::kOutIn ? ", kOutIn"
                                                               : ", kPanel16") +
                 (Cfg::kInt8Weights ? ", int8 weights" : ""));
}

template <class Cfg>
void bm_reference(benchmark::State& state) {
  LayerData<Cfg> d(static_cast<std::uint32_t>(Cfg::kTMax));
  PlainLayer ref(Cfg::kDModel, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead, d.wq.data(), d.wk.data(),
                 d.wv.data(), d.wo.data());
  for (auto _ : state) {
    ref.forward(d.x.data(), Cfg::kTMax, d.y.data());
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, config_flops<Cfg>());
  state.SetLabel("plain float loops");
}

#if defined(MICROATTN_BENCH_EIGEN)
template <class Cfg>
void bm_eigen(benchmark::State& state) {
  LayerData<Cfg> d(static_cast<std::uint32_t>(Cfg::kTMax));
  eigen_peer::Layer layer{Cfg::kDModel, Cfg::kHeads, Cfg::kKvHeads,
                          Cfg::kDHead,  d.wq.data(), d.wk.data(),
                          d.wv.data(),  d.wo.data(), {},
                          {},           {},          {},
                          {},           Cfg::kOutDim};
  for (auto _ : state) {
    layer.forward(d.x.data(), Cfg::kTMax, d.y.data());
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, config_flops<Cfg>());
  state.SetLabel(eigen_peer::label());
}
#endif

#if defined(MICROATTN_BENCH_OPENBLAS)
template <class Cfg>
void bm_openblas(benchmark::State& state) {
  openblas_peer::single_thread();
  LayerData<Cfg> d(static_cast<std::uint32_t>(Cfg::kTMax));
  openblas_peer::Layer layer{
      Cfg::kDModel, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead, Cfg::kOutDim, d.wq.data(),
      d.wk.data(),  d.wv.data(), d.wo.data(),   {},          {},           {},
      {},           {}};
  for (auto _ : state) {
    layer.forward(d.x.data(), Cfg::kTMax, d.y.data());
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, config_flops<Cfg>());
  state.SetLabel(openblas_peer::label());
}
#endif

/// The layer named `name` (Cfg) with its weights in the other two layouts: <name>_panel16
/// (kPanel16) and <name>_outin (PyTorch's [out][in], what tools/export_pytorch.py writes by
/// default).
template <class Cfg>
void register_layouts(const std::string& name, benchmark::TimeUnit unit) {
  using microattn::DefaultArch;
  using microattn::WeightLayout;
  benchmark::RegisterBenchmark((name + "_panel16").c_str(),
                               bm_layer<Cfg, DefaultArch, WeightLayout::kPanel16>)
      ->Unit(unit);
  benchmark::RegisterBenchmark((name + "_outin").c_str(),
                               bm_layer<Cfg, DefaultArch, WeightLayout::kOutIn>)
      ->Unit(unit);
}

}  // namespace

void register_layer_benchmarks() {
  using microattn::DefaultArch;
  using microattn::ScalarArch;
  benchmark::RegisterBenchmark("P1", bm_layer<P1Cfg, DefaultArch>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("P1_scalar", bm_layer<P1Cfg, ScalarArch>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("P1_reference", bm_reference<P1Cfg>)->Unit(benchmark::kMicrosecond);
  register_layouts<P1Cfg>("P1", benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("P2", bm_layer<P2Cfg, DefaultArch>)->Unit(benchmark::kMillisecond);
  register_layouts<P2Cfg>("P2", benchmark::kMillisecond);
  benchmark::RegisterBenchmark("P3", bm_layer<P3Cfg, DefaultArch>)->Unit(benchmark::kMillisecond);
  register_layouts<P3Cfg>("P3", benchmark::kMillisecond);
  benchmark::RegisterBenchmark("P2_q8", bm_layer<P2q8, DefaultArch>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("P2_q8g32", bm_layer<P2q8g32, DefaultArch>)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("E1", bm_layer<E1Cfg, DefaultArch>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("S1", bm_layer<S1Cfg, DefaultArch>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("S1_scalar", bm_layer<S1Cfg, ScalarArch>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("W1", bm_layer<W1Cfg, DefaultArch>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("P3_q8", bm_layer<P3q8, DefaultArch>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("P4", bm_layer<P4Cfg, DefaultArch>)->Unit(benchmark::kMillisecond);
  register_layouts<P4Cfg>("P4", benchmark::kMillisecond);
  benchmark::RegisterBenchmark("P1_qd8", bm_layer<Qd8Cfg<64, 4, 256, 4>, DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  register_layouts<Qd8Cfg<64, 4, 256, 4>>("P1_qd8", benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("P2_qd8", bm_layer<Qd8Cfg<256, 8>, DefaultArch>)
      ->Unit(benchmark::kMillisecond);
  register_layouts<Qd8Cfg<256, 8>>("P2_qd8", benchmark::kMillisecond);
  benchmark::RegisterBenchmark("P4_qd8", bm_layer<Qd8Cfg<512, 2>, DefaultArch>)
      ->Unit(benchmark::kMillisecond);
  register_layouts<Qd8Cfg<512, 2>>("P4_qd8", benchmark::kMillisecond);
#if defined(MICROATTN_BENCH_EIGEN)
  benchmark::RegisterBenchmark("P1_eigen", bm_eigen<P1Cfg>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("P2_eigen", bm_eigen<P2Cfg>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("P3_eigen", bm_eigen<P3Cfg>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("P4_eigen", bm_eigen<P4Cfg>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("S1_eigen", bm_eigen<S1Cfg>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("M1_eigen", bm_eigen<M1PeerCfg>)->Unit(benchmark::kMicrosecond);
#endif
#if defined(MICROATTN_BENCH_OPENBLAS)
  benchmark::RegisterBenchmark("S1_openblas", bm_openblas<S1Cfg>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("M1_openblas", bm_openblas<M1PeerCfg>)
      ->Unit(benchmark::kMicrosecond);
#endif
}

}  // namespace microattn_bench
