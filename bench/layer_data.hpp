// microattn benchmarks: random weights and inputs for a layer configuration, shared by the
// prefill (attention_layer.cpp) and decode (kv_cache.cpp) cases.
#pragma once

#include <cmath>
#include <cstdint>

#include "bench_util.hpp"
#include "microattn/config.hpp"
#include "microattn/weights.hpp"

namespace microattn_bench {

/// x in [-1, 1]; every weight matrix U(+-1/sqrt(fan_in)), layout kInOut, no biases.
template <class Cfg>
struct LayerData {
  static constexpr std::size_t kWqFloats = Cfg::kDModel * Cfg::kQDim;
  static constexpr std::size_t kWkvFloats = Cfg::kDModel * Cfg::kKvDim;
  static constexpr std::size_t kWoFloats = Cfg::kQDim * Cfg::kDModel;
  /// Bytes of every weight matrix: what a decode step must read besides the cache.
  static constexpr std::size_t kWeightBytes = (kWqFloats + 2 * kWkvFloats + kWoFloats) * sizeof(float);

  explicit LayerData(std::uint32_t seed)
      : wq(uniform_floats(kWqFloats, -bound(Cfg::kDModel), bound(Cfg::kDModel), seed + 1)),
        wk(uniform_floats(kWkvFloats, -bound(Cfg::kDModel), bound(Cfg::kDModel), seed + 2)),
        wv(uniform_floats(kWkvFloats, -bound(Cfg::kDModel), bound(Cfg::kDModel), seed + 3)),
        wo(uniform_floats(kWoFloats, -bound(Cfg::kQDim), bound(Cfg::kQDim), seed + 4)),
        x(uniform_floats(Cfg::kTMax * Cfg::kDModel, -1.0f, 1.0f, seed + 5)),
        y(Cfg::kTMax * Cfg::kOutDim) {}

  microattn::Weights<Cfg> weights() const {
    microattn::Weights<Cfg> w;
    w.layout = microattn::WeightLayout::kInOut;
    w.w_q = wq.data();
    w.w_k = wk.data();
    w.w_v = wv.data();
    w.w_o = wo.data();
    return w;
  }

  static float bound(std::size_t fan_in) { return 1.0f / std::sqrt(static_cast<float>(fan_in)); }

  AlignedFloats wq, wk, wv, wo, x, y;
};

}  // namespace microattn_bench
