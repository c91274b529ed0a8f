// SPDX-License-Identifier: Apache-2.0
// Random layer weights for the tests: static storage, deterministic, nn.Linear-like scale; fp32
// (also packed as kPanel16) and int8 (quantised from the same fp32 draw).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "microattn/weights.hpp"
#include "reference/attention_ref.hpp"
#include "support/rng.hpp"

namespace microattn_test {

/// A layer's fp32 matrices and biases for Cfg in static storage, U(+-1/sqrt(fan_in)) like
/// nn.Linear's init: wq..wo are the kInOut ([in][out]) matrices, or their kOutIn transposes when
/// a test writes those in. fill(seed) draws wq, wk, wv, wo, bq, bk, bv, bo in that order from
/// Rng(seed), so each seed gives the same numbers to RandomWeights and QuantWeights.
template <class Cfg>
struct RandomF32Weights {
  static constexpr std::size_t DM = Cfg::kDModel, QD = Cfg::kQDim, KD = Cfg::kKvDim;
  static constexpr std::size_t OD = Cfg::kOutDim;  // W_O's width (with W_O)
  float wq[DM * QD], wk[DM * KD], wv[DM * KD], wo[QD * OD], bq[QD], bk[KD], bv[KD], bo[OD];
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
  }
};

/// Random fp32 weights (RandomF32Weights) and pq..po: wq..wo packed as kPanel16 by fill() (when
/// Cfg fits it).
template <class Cfg>
struct RandomWeights : RandomF32Weights<Cfg> {
  using F32 = RandomF32Weights<Cfg>;
  static constexpr bool kPanels = microattn::panel_layout_fits<Cfg>();
  static constexpr std::size_t panel_floats(std::size_t in, std::size_t out) {
    return kPanels ? microattn::weight_floats(microattn::WeightLayout::kPanel16, in, out) : 1;
  }
  float pq[panel_floats(F32::DM, F32::QD)], pk[panel_floats(F32::DM, F32::KD)],
      pv[panel_floats(F32::DM, F32::KD)], po[panel_floats(F32::QD, F32::OD)];
  void fill(std::uint64_t seed) {
    F32::fill(seed);
    if (kPanels) {  // (sizes from Cfg, separate arrays: the status is always kOk)
      using microattn::WeightLayout;
      (void)microattn::pack_weight_panels(this->wq, WeightLayout::kInOut, F32::DM, F32::QD, pq);
      (void)microattn::pack_weight_panels(this->wk, WeightLayout::kInOut, F32::DM, F32::KD, pk);
      (void)microattn::pack_weight_panels(this->wv, WeightLayout::kInOut, F32::DM, F32::KD, pv);
      (void)microattn::pack_weight_panels(this->wo, WeightLayout::kInOut, F32::QD, F32::OD, po);
    }
  }
  /// The weights in `layout`: kInOut/kOutIn point at wq..wo as they are, kPanel16 at pq..po.
  microattn::Weights<Cfg> view(microattn::WeightLayout layout) const {
    microattn::Weights<Cfg> w(layout);
    w.w_q = this->wq, w.w_k = this->wk, w.w_v = this->wv, w.w_o = this->wo;
    if (layout == microattn::WeightLayout::kPanel16) w.w_q = pq, w.w_k = pk, w.w_v = pv, w.w_o = po;
    w.b_q = this->bq, w.b_k = this->bk, w.b_v = this->bv, w.b_o = this->bo;
    return w;
  }
  /// The reference's view of the same weights (kPanel16 = the packed copy of kInOut wq..wo).
  microattn_ref::LayerRef ref(microattn::WeightLayout layout) const {
    return {F32::DM,
            Cfg::kHeads,
            Cfg::kKvHeads,
            Cfg::kDHead,
            layout == microattn::WeightLayout::kOutIn,
            this->wq,
            this->wk,
            this->wv,
            Cfg::kHasOutProj ? this->wo : nullptr,
            Cfg::kBiasQ ? this->bq : nullptr,
            Cfg::kBiasK ? this->bk : nullptr,
            Cfg::kBiasV ? this->bv : nullptr,
            Cfg::kBiasO ? this->bo : nullptr,
            Cfg::kHasOutProj ? F32::OD : 0};
  }
};

/// Random fp32 weights (RandomF32Weights, kInOut), their int8 forms in every layout and the
/// dequantised fp32 matrices (kInOut) the reference runs on. fill() quantises each matrix with
/// microattn::quantize_int8 (per-column scales sq..so, the same in every layout) into
/// qq[l]..qo[l], l = 0 kInOut, 1 kOutIn, 2 kPanel16; dq..dwo hold s[o] * q(i, o) as the int8
/// kernels form it; err[0..3] is the rounding error of W_Q, W_K, W_V, W_O.
template <class Cfg>
struct QuantWeights : RandomF32Weights<Cfg> {
  using F32 = RandomF32Weights<Cfg>;
  static constexpr std::size_t DM = F32::DM, QD = F32::QD, KD = F32::KD, OD = F32::OD;
  static constexpr std::size_t pf(std::size_t in, std::size_t out) {
    return microattn::weight_floats(microattn::WeightLayout::kPanel16, in, out);
  }
  float dq[DM * QD], dk[DM * KD], dv[DM * KD], dwo[QD * OD];  // dequantised, kInOut
  std::int8_t qq[3][pf(DM, QD)], qk[3][pf(DM, KD)], qv[3][pf(DM, KD)], qo[3][pf(QD, OD)];
  float sq[QD], sk[KD], sv[KD], so[OD];
  microattn::QuantError err[4];

  /// Quantises w ([in][out]) into q in the three layouts (q + l * pf(in, out)) and scales s,
  /// and writes the dequantised matrix d; whether quantize_int8 accepted it every time.
  static bool deq(const float* w, std::size_t in, std::size_t out, std::int8_t* q, float* s,
                  float* d, microattn::QuantError* e) {
    using microattn::WeightLayout;
    const WeightLayout lays[] = {WeightLayout::kInOut, WeightLayout::kOutIn,
                                 WeightLayout::kPanel16};
    bool ok = true;
    for (int l = 0; l < 3; ++l)
      ok &= microattn::quantize_int8(w, WeightLayout::kInOut, in, out, lays[l], q + l * pf(in, out),
                                     s, e) == microattn::Status::kOk;
    for (std::size_t i = 0; i < in; ++i)
      for (std::size_t o = 0; o < out; ++o)
        d[i * out + o] = s[o] * static_cast<float>(q[i * out + o]);
    return ok;
  }
  /// Draws the fp32 weights and quantises them; whether every quantize_int8 call was kOk.
  bool fill(std::uint64_t seed) {
    F32::fill(seed);
    bool ok = deq(this->wq, DM, QD, qq[0], sq, dq, &err[0]);
    ok &= deq(this->wk, DM, KD, qk[0], sk, dk, &err[1]);
    ok &= deq(this->wv, DM, KD, qv[0], sv, dv, &err[2]);
    ok &= deq(this->wo, QD, OD, qo[0], so, dwo, &err[3]);
    return ok;
  }
  /// int8 view in layout l (0 kInOut, 1 kOutIn, 2 kPanel16), for a Config C of Cfg's shape.
  template <class C>
  microattn::Weights<C> view8(int l) const {
    using microattn::WeightLayout;
    const WeightLayout lays[] = {WeightLayout::kInOut, WeightLayout::kOutIn,
                                 WeightLayout::kPanel16};
    return microattn::Weights<C>(lays[l], qq[l], sq, qk[l], sk, qv[l], sv, qo[l], so, this->bq,
                                 this->bk, this->bv, this->bo);
  }
  /// fp32 view of the original weights (kInOut).
  template <class C>
  microattn::Weights<C> view32() const {
    return microattn::Weights<C>(microattn::WeightLayout::kInOut, this->wq, this->wk, this->wv,
                                 this->wo, this->bq, this->bk, this->bv, this->bo);
  }
  /// The reference's view (kInOut): the dequantised matrices, or the original fp32 ones.
  microattn_ref::LayerRef ref(bool dequantised) const {
    return {DM,
            Cfg::kHeads,
            Cfg::kKvHeads,
            Cfg::kDHead,
            false,
            dequantised ? dq : this->wq,
            dequantised ? dk : this->wk,
            dequantised ? dv : this->wv,
            Cfg::kHasOutProj ? (dequantised ? dwo : this->wo) : nullptr,
            Cfg::kBiasQ ? this->bq : nullptr,
            Cfg::kBiasK ? this->bk : nullptr,
            Cfg::kBiasV ? this->bv : nullptr,
            Cfg::kBiasO ? this->bo : nullptr,
            Cfg::kHasOutProj ? OD : 0};
  }
};

}  // namespace microattn_test
