// SPDX-License-Identifier: Apache-2.0
// microattn benchmarks: random weights and inputs for a layer configuration, shared by the
// prefill (attention_layer.cpp) and decode (kv_cache.cpp) cases.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "bench_util.hpp"
#include "microattn/config.hpp"
#include "microattn/internal/elem.hpp"
#include "microattn/weights.hpp"

namespace microattn_bench {

/// x in [-1, 1]; every weight matrix U(+-1/sqrt(fan_in)), no biases; stored kInOut (wq..wo),
/// and as copies in the other layouts: kOutIn (tq..to) and kPanel16 (pq..po, when Cfg fits).
template <class Cfg>
struct LayerData {
  using Elem = typename Cfg::WeightElem;
  static constexpr bool kHalf =
      std::is_same<Elem, microattn::f16>::value || std::is_same<Elem, microattn::bf16>::value;
  using Traits = microattn::FormatTraits<typename Cfg::WeightFormat>;
  /// Group-wise int8 (kInt8G32 / G64 / G128): G inputs per scale.
  static constexpr std::size_t kGroup =
      Traits::kDesc.grouping == microattn::ScaleGrouping::kPerGroup ? Traits::kDesc.group : 0;
  static constexpr bool kInt8 = Cfg::kInt8Weights || kGroup != 0;
  static constexpr std::size_t kWqFloats = Cfg::kDModel * Cfg::kQDim;
  static constexpr std::size_t kWkvFloats = Cfg::kDModel * Cfg::kKvDim;
  static constexpr std::size_t kWoFloats = Cfg::kQDim * Cfg::kDModel;
  /// Bytes of every weight matrix (and, for int8 weights, their scales): what a decode step must
  /// read besides the cache.
  static constexpr std::size_t kWeightBytes =
      (kWqFloats + 2 * kWkvFloats + kWoFloats) * sizeof(typename Cfg::WeightElem) +
      (Traits::scale_count(Cfg::kDModel, Cfg::kQDim + 2 * Cfg::kKvDim) +
       Traits::scale_count(Cfg::kQDim, Cfg::kDModel)) *
          sizeof(float);

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
    if constexpr (kInt8) {  // int8 copies (per-column or group scales) in every layout
      const WeightLayout lays[3] = {WeightLayout::kInOut, WeightLayout::kOutIn,
                                    WeightLayout::kPanel16};
      const AlignedFloats* src[4] = {&wq, &wk, &wv, &wo};
      const std::size_t in[4] = {DM, DM, DM, QD}, out[4] = {QD, KD, KD, DM};
      for (int m = 0; m < 4; ++m)
        for (int l = 0; l < 3; ++l) {
          q8[l][m].resize(microattn::weight_floats(lays[l], in[m], out[m]));
          scales[l][m].resize(Traits::scale_count(in[m], out[m]));
          if constexpr (kGroup != 0)
            (void)microattn::quantize_int8_groups(src[m]->data(), WeightLayout::kInOut, in[m],
                                                  out[m], kGroup, lays[l], q8[l][m].data(),
                                                  scales[l][m].data());
          else
            (void)microattn::quantize_int8(src[m]->data(), WeightLayout::kInOut, in[m], out[m],
                                           lays[l], q8[l][m].data(), scales[l][m].data());
        }
    }
    if constexpr (kHalf) {  // fp16 / bf16 copies (rounded to nearest even) in every layout
      for (int l = 0; l < 3; ++l)
        for (int m = 0; m < 4; ++m) {
          const AlignedFloats& f = *float_matrices(static_cast<WeightLayout>(l))[m];
          half[l][m].resize(f.n);
          microattn::internal::Elem<Elem>::encode(f.data(), f.n, half[l][m].data(), 1);
        }
    }
  }

  /// The same weights in `layout` (kPanel16 only when panel_layout_fits<Cfg>()).
  microattn::Weights<Cfg> weights(
      microattn::WeightLayout layout = microattn::WeightLayout::kInOut) const {
    using microattn::WeightLayout;
    microattn::Weights<Cfg> w(layout);
    if constexpr (kInt8) {
      const int l = layout == WeightLayout::kInOut ? 0 : layout == WeightLayout::kOutIn ? 1 : 2;
      w.w_q = q8[l][0].data(), w.w_k = q8[l][1].data(), w.w_v = q8[l][2].data();
      w.w_o = q8[l][3].data();
      w.s_q = scales[l][0].data(), w.s_k = scales[l][1].data(), w.s_v = scales[l][2].data();
      w.s_o = scales[l][3].data();
      return w;
    }
    if constexpr (kHalf) {
      const int l = static_cast<int>(layout);
      w.w_q = half[l][0].data(), w.w_k = half[l][1].data(), w.w_v = half[l][2].data();
      w.w_o = half[l][3].data();
      return w;
    }
    const auto m = float_matrices(layout);
    if constexpr (std::is_same<Elem, float>::value) {
      w.w_q = m[0]->data();
      w.w_k = m[1]->data();
      w.w_v = m[2]->data();
      w.w_o = m[3]->data();
    }
    return w;
  }

  /// The fp32 W_Q, W_K, W_V, W_O as stored in `layout`.
  std::array<const AlignedFloats*, 4> float_matrices(microattn::WeightLayout layout) const {
    using microattn::WeightLayout;
    if (layout == WeightLayout::kOutIn) return {&tq, &tk, &tv, &to};
    if (layout == WeightLayout::kPanel16) return {&pq, &pk, &pv, &po};
    return {&wq, &wk, &wv, &wo};
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
  std::vector<std::int8_t> q8[3][4];  ///< int8 W_Q, W_K, W_V, W_O in kInOut, kOutIn, kPanel16
  std::vector<float> scales[3][4];    ///< their scales (per column, or groups like the rows)
  std::vector<Elem> half[3][4];       ///< fp16 / bf16 weights: the same three layouts
};

}  // namespace microattn_bench
