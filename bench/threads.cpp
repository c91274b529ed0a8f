// SPDX-License-Identifier: Apache-2.0
// Multi-core: P1-P4, A1, D1 and DQ1 (MQA decode over 4095 cached tokens, H=8, H_kv=1: one
// key/value head, so two workers split its keys: split-K) with an executor of 1 and 2 workers
// (microattn/thread_pool.hpp),
// named <case>/threads:<n>. Wall-clock time (UseRealTime: CPU time of the calling thread would
// hide the other workers), so the speed-up is the ratio of the two real times in one run.
// The objects are the same type in both (MaxWorkers{2}); threads:1 sets no executor.
#include <memory>
#include <string>

#include "bench_util.hpp"
#include "layer_data.hpp"
#include "microattn/attention.hpp"
#include "microattn/kv_cache.hpp"
#include "microattn/thread_pool.hpp"

namespace microattn_bench {
namespace {

using microattn::MaxWorkers;
using P1T = microattn::Config<64, 256, 4, 4, 64, MaxWorkers{2}>;
using P2T = microattn::Config<256, 512, 8, 8, 64, MaxWorkers{2}>;
using P3T = microattn::Config<1024, 512, 8, 8, 64, MaxWorkers{2}>;
using P4T = microattn::Config<512, 512, 8, 2, 64, MaxWorkers{2}>;
using A1T = microattn::Config<1024, 512, 8, 8, 64, MaxWorkers{2}>;
constexpr std::size_t kCtx = 1024;
using D1T = microattn::Config<kCtx, 512, 8, 8, 64, MaxWorkers{2}>;
constexpr std::size_t kCtxQ = 4096;
using DQ1T = microattn::Config<kCtxQ, 512, 8, 1, 64, MaxWorkers{2}>;

microattn::ThreadPool& pool2() {
  static microattn::ThreadPool p(2);
  return p;
}
template <class Obj>
bool use_threads(Obj& o, int threads) {
  microattn::Executor e;
  if (threads > 1) e = pool2().executor();
  return o.set_executor(e) == microattn::Status::kOk;
}

template <class Cfg, int kThreads>
void bm_layer_mt(benchmark::State& state) {
  LayerData<Cfg> d(static_cast<std::uint32_t>(Cfg::kTMax));
  auto layer = std::make_unique<microattn::MultiHeadAttention<Cfg>>();
  if (layer->set_weights(d.weights()) != microattn::Status::kOk || !use_threads(*layer, kThreads)) {
    state.SkipWithError("set_weights / set_executor failed");
    return;
  }
  for (auto _ : state) {
    if (layer->forward(d.x.data(), Cfg::kTMax, d.y.data()) != microattn::Status::kOk) {
      state.SkipWithError("forward failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, config_flops<Cfg>());
  state.SetLabel(arch_label<microattn::DefaultArch>() + ", " + std::to_string(kThreads) +
                 " worker(s), real time");
}

template <int kThreads>
void bm_a1_mt(benchmark::State& state) {
  constexpr std::size_t T = A1T::kTMax, QD = A1T::kQDim;
  AlignedFloats q = uniform_floats(T * QD, -1.0f, 1.0f, 11);
  AlignedFloats k = uniform_floats(T * QD, -1.0f, 1.0f, 12);
  AlignedFloats v = uniform_floats(T * QD, -1.0f, 1.0f, 13);
  AlignedFloats out(T * QD);
  auto core = std::make_unique<microattn::ScaledDotProductAttention<A1T>>();
  if (!use_threads(*core, kThreads)) {
    state.SkipWithError("set_executor failed");
    return;
  }
  for (auto _ : state) {
    if (core->forward(q.data(), k.data(), v.data(), T, out.data()) != microattn::Status::kOk) {
      state.SkipWithError("forward failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, attn_flops(T, A1T::kHeads, A1T::kDHead));
  state.SetLabel(arch_label<microattn::DefaultArch>() + ", " + std::to_string(kThreads) +
                 " worker(s), real time");
}

template <int kThreads, class Cfg = D1T, std::size_t kN = kCtx,
          microattn::WeightLayout kLayout = microattn::WeightLayout::kPanel16>
void bm_d1_mt(benchmark::State& state) {
  using Kv = microattn::KvAttention<Cfg>;
  LayerData<Cfg> d(108);
  auto kv = std::make_unique<Kv>();
  if (kv->set_weights(d.weights(kLayout)) != microattn::Status::kOk ||
      !use_threads(*kv, kThreads) ||
      kv->prefill(d.x.data(), kN - 1, d.y.data()) != microattn::Status::kOk) {
    state.SkipWithError("setup failed");
    return;
  }
  const float* x = d.x.data() + (kN - 1) * Cfg::kDModel;
  for (auto _ : state) {
    if (kv->decode(x, d.y.data()) != microattn::Status::kOk ||
        kv->truncate(kN - 1) != microattn::Status::kOk) {
      state.SkipWithError("decode failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  const std::size_t bytes = LayerData<Cfg>::kWeightBytes + 2 * kN * Cfg::kKvDim * sizeof(float);
  set_flop_counters(state, proj_flops(1, 512, 8, Cfg::kKvHeads, 64) + 4.0 * 8 * 64 * kN +
                               out_proj_flops(1, 512, 8, 64));
  set_byte_counters(state, static_cast<double>(bytes), bytes);
  state.SetLabel(arch_label<microattn::DefaultArch>() +
                 (kLayout == microattn::WeightLayout::kPanel16 ? ", kPanel16, " : ", kInOut, ") +
                 std::to_string(kThreads) + " worker(s), real time");
}

template <class F>
void reg(const char* name, F f, benchmark::TimeUnit unit) {
  benchmark::RegisterBenchmark(name, f)->Unit(unit)->UseRealTime();
}

}  // namespace

void register_thread_benchmarks() {
  reg("P1/threads:1", bm_layer_mt<P1T, 1>, benchmark::kMicrosecond);
  reg("P1/threads:2", bm_layer_mt<P1T, 2>, benchmark::kMicrosecond);
  reg("P2/threads:1", bm_layer_mt<P2T, 1>, benchmark::kMillisecond);
  reg("P2/threads:2", bm_layer_mt<P2T, 2>, benchmark::kMillisecond);
  reg("P3/threads:1", bm_layer_mt<P3T, 1>, benchmark::kMillisecond);
  reg("P3/threads:2", bm_layer_mt<P3T, 2>, benchmark::kMillisecond);
  reg("P4/threads:1", bm_layer_mt<P4T, 1>, benchmark::kMillisecond);
  reg("P4/threads:2", bm_layer_mt<P4T, 2>, benchmark::kMillisecond);
  reg("A1/threads:1", bm_a1_mt<1>, benchmark::kMillisecond);
  reg("A1/threads:2", bm_a1_mt<2>, benchmark::kMillisecond);
  reg("D1/threads:1", bm_d1_mt<1>, benchmark::kMicrosecond);
  reg("D1/threads:2", bm_d1_mt<2>, benchmark::kMicrosecond);
  // D1 with plain [in][out] weights: the projections split by output column ranges of each row.
  reg("D1_inout/threads:1", bm_d1_mt<1, D1T, kCtx, microattn::WeightLayout::kInOut>,
      benchmark::kMicrosecond);
  reg("D1_inout/threads:2", bm_d1_mt<2, D1T, kCtx, microattn::WeightLayout::kInOut>,
      benchmark::kMicrosecond);
  reg("DQ1/threads:1", bm_d1_mt<1, DQ1T, kCtxQ>, benchmark::kMicrosecond);
  reg("DQ1/threads:2", bm_d1_mt<2, DQ1T, kCtxQ>, benchmark::kMicrosecond);
}

}  // namespace microattn_bench
