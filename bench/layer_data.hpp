// SPDX-License-Identifier: Apache-2.0
// microattn benchmarks: random weights and inputs for a layer configuration, shared by the
// prefill (attention_layer.cpp) and decode (kv_cache.cpp) cases.
#pragma once

#include <cmath>
#include <cstdint>

#include "bench_util.hpp"
#include "microattn/config.hpp"
#include "microattn/weights.hpp"

namespace microattn_bench {

/// x in [-1, 1]; every weight matrix U(+-1/sqrt(fan_in)), no biases; stored kInOut (wq..wo),
/// and as copies in the other layouts: kOutIn (tq..to) and kPanel16 (pq..po, when Cfg fits).
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
        y(Cfg::kTMax * Cfg::kOutDim) {
    using microattn::WeightLayout;
    constexpr std::size_t DM = Cfg::kDModel, QD = Cfg::kQDim, KD = Cfg::kKvDim;
    tq = transposed(wq, DM, QD), tk = transposed(wk, DM, KD), tv = transposed(wv, DM, KD);
    to = transposed(wo, QD, DM);
    if constexpr (microattn::panel_layout_fits<Cfg>()) {
      pq = AlignedFloats(microattn::weight_floats(WeightLayout::kPanel16, DM, QD));
      pk = AlignedFloats(microattn::weight_floats(WeightLayout::kPanel16, DM, KD));
      pv = AlignedFloats(microattn::weight_floats(WeightLayout::kPanel16, DM, KD));
      po = AlignedFloats(microattn::weight_floats(WeightLayout::kPanel16, QD, DM));
      (void)microattn::pack_weight_panels(wq.data(), WeightLayout::kInOut, DM, QD, pq.data());
      (void)microattn::pack_weight_panels(wk.data(), WeightLayout::kInOut, DM, KD, pk.data());
      (void)microattn::pack_weight_panels(wv.data(), WeightLayout::kInOut, DM, KD, pv.data());
      (void)microattn::pack_weight_panels(wo.data(), WeightLayout::kInOut, QD, DM, po.data());
    }
  }

  /// The same weights in `layout` (kPanel16 only when panel_layout_fits<Cfg>()).
  microattn::Weights<Cfg> weights(
      microattn::WeightLayout layout = microattn::WeightLayout::kInOut) const {
    using microattn::WeightLayout;
    microattn::Weights<Cfg> w(layout);
    const AlignedFloats* m[4] = {&wq, &wk, &wv, &wo};
    if (layout == WeightLayout::kOutIn) m[0] = &tq, m[1] = &tk, m[2] = &tv, m[3] = &to;
    if (layout == WeightLayout::kPanel16) m[0] = &pq, m[1] = &pk, m[2] = &pv, m[3] = &po;
    w.w_q = m[0]->data();
    w.w_k = m[1]->data();
    w.w_v = m[2]->data();
    w.w_o = m[3]->data();
    return w;
  }

  static const char* layout_name(microattn::WeightLayout layout) {
    return layout == microattn::WeightLayout::kInOut   ? "kInOut"
           : layout == microattn::WeightLayout::kOutIn ? "kOutIn"
                                                       : "kPanel16";
  }

  static float bound(std::size_t fan_in) { return 1.0f / std::sqrt(static_cast<float>(fan_in)); }
  static AlignedFloats transposed(const AlignedFloats& a, std::size_t rows, std::size_t cols) {
    AlignedFloats t(rows * cols);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) t.data()[c * rows + r] = a.data()[r * cols + c];
    return t;
  }

  AlignedFloats wq, wk, wv, wo, x, y;
  AlignedFloats tq, tk, tv, to, pq, pk, pv, po;
};

}  // namespace microattn_bench
