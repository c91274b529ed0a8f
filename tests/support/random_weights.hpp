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
template <class Cfg>
struct RandomWeights {
  static constexpr std::size_t DM = Cfg::kDModel, QD = Cfg::kQDim, KD = Cfg::kKvDim;
  float wq[DM * QD], wk[DM * KD], wv[DM * KD], wo[QD * DM], bq[QD], bk[KD], bv[KD], bo[DM];
  void fill(std::uint64_t seed) {
    microattn_test::Rng rng(seed);
    const float a = 1.0f / std::sqrt(static_cast<float>(DM)), b = 1.0f / std::sqrt(float(QD));
    rng.fill(wq, DM * QD, -a, a);
    rng.fill(wk, DM * KD, -a, a);
    rng.fill(wv, DM * KD, -a, a);
    rng.fill(wo, QD * DM, -b, b);
    rng.fill(bq, QD, -a, a);
    rng.fill(bk, KD, -a, a);
    rng.fill(bv, KD, -a, a);
    rng.fill(bo, DM, -b, b);
  }
  microattn::Weights<Cfg> view(microattn::WeightLayout layout) const {
    microattn::Weights<Cfg> w;
    w.layout = layout;
    w.w_q = wq, w.w_k = wk, w.w_v = wv, w.w_o = wo;
    w.b_q = bq, w.b_k = bk, w.b_v = bv, w.b_o = bo;
    return w;
  }
  microattn_ref::LayerRef ref(microattn::WeightLayout layout) const {
    return {DM, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead, layout == microattn::WeightLayout::kOutIn,
            wq, wk, wv, Cfg::kHasOutProj ? wo : nullptr,
            Cfg::kHasBias ? bq : nullptr, Cfg::kHasBias ? bk : nullptr,
            Cfg::kHasBias ? bv : nullptr, Cfg::kHasBias ? bo : nullptr};
  }
};

}  // namespace microattn_test
