// SPDX-License-Identifier: Apache-2.0
// Random layer weights for the tests: static storage, deterministic, nn.Linear-like scale.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "microattn/weights.hpp"
#include "reference/attention_ref.hpp"
#include "support/rng.hpp"

namespace microattn_test {

/// Random weights for Cfg in static storage, U(+-1/sqrt(fan_in)) like nn.Linear's init.
/// wq..wo are the kInOut ([in][out]) matrices, or their kOutIn transposes when a test
/// writes those in; pq..po are wq..wo packed as kPanel16 by fill() (when Cfg fits it).
template <class Cfg>
struct RandomWeights {
  static constexpr std::size_t DM = Cfg::kDModel, QD = Cfg::kQDim, KD = Cfg::kKvDim;
  static constexpr std::size_t OD = Cfg::kOutDim;  // W_O's width (with W_O)
  static constexpr bool kPanels = microattn::panel_layout_fits<Cfg>();
  static constexpr std::size_t panel_floats(std::size_t in, std::size_t out) {
    return kPanels ? microattn::weight_floats(microattn::WeightLayout::kPanel16, in, out) : 1;
  }
  float wq[DM * QD], wk[DM * KD], wv[DM * KD], wo[QD * OD], bq[QD], bk[KD], bv[KD], bo[OD];
  float pq[panel_floats(DM, QD)], pk[panel_floats(DM, KD)], pv[panel_floats(DM, KD)],
      po[panel_floats(QD, OD)];
  void fill(std::uint64_t seed) {
    microattn_test::Rng rng(seed);
    const float a = 1.0f / std::sqrt(static_cast<float>(DM)), b = 1.0f / std::sqrt(float(QD));
    rng.fill(wq, DM * QD, -a, a);
    rng.fill(wk, DM * KD, -a, a);
    rng.fill(wv, DM * KD, -a, a);
    rng.fill(wo, QD * OD, -b, b);
    rng.fill(bq, QD, -a, a);
    rng.fill(bk, KD, -a, a);
    rng.fill(bv, KD, -a, a);
    rng.fill(bo, OD, -b, b);
    if (kPanels) {
      using microattn::WeightLayout;
      microattn::pack_weight_panels(wq, WeightLayout::kInOut, DM, QD, pq);
      microattn::pack_weight_panels(wk, WeightLayout::kInOut, DM, KD, pk);
      microattn::pack_weight_panels(wv, WeightLayout::kInOut, DM, KD, pv);
      microattn::pack_weight_panels(wo, WeightLayout::kInOut, QD, OD, po);
    }
  }
  /// The weights in `layout`: kInOut/kOutIn point at wq..wo as they are, kPanel16 at pq..po.
  microattn::Weights<Cfg> view(microattn::WeightLayout layout) const {
    microattn::Weights<Cfg> w(layout);
    w.w_q = wq, w.w_k = wk, w.w_v = wv, w.w_o = wo;
    if (layout == microattn::WeightLayout::kPanel16) w.w_q = pq, w.w_k = pk, w.w_v = pv, w.w_o = po;
    w.b_q = bq, w.b_k = bk, w.b_v = bv, w.b_o = bo;
    return w;
  }
  /// The reference's view of the same weights (kPanel16 = the packed copy of kInOut wq..wo).
  microattn_ref::LayerRef ref(microattn::WeightLayout layout) const {
    return {DM,
            Cfg::kHeads,
            Cfg::kKvHeads,
            Cfg::kDHead,
            layout == microattn::WeightLayout::kOutIn,
            wq,
            wk,
            wv,
            Cfg::kHasOutProj ? wo : nullptr,
            Cfg::kBiasQ ? bq : nullptr,
            Cfg::kBiasK ? bk : nullptr,
            Cfg::kBiasV ? bv : nullptr,
            Cfg::kBiasO ? bo : nullptr,
            Cfg::kHasOutProj ? OD : 0};
  }
};

}  // namespace microattn_test
