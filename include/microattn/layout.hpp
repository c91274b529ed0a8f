// SPDX-License-Identifier: Apache-2.0
// microattn vocabulary: how a weight matrix is stored. Shared by the public weight view
// (weights.hpp) and the GEMM / GEMV kernels, which need the layout but not the view.
#pragma once

#include <cstddef>

namespace microattn {

/// Output columns per panel of WeightLayout::kPanel16.
constexpr std::size_t kWeightPanel = 16;

/// How a weight matrix is stored in memory. Every layout is used as it is; the library never
/// copies weights into RAM.
enum class WeightLayout : unsigned char {
  /// [in][out]: Q = x · W_q as the math is written (W_q is d_model rows of H*d_head).
  kInOut,
  /// [out][in]: PyTorch's nn.Linear.weight and nn.MultiheadAttention.in_proj_weight
  /// (W_q is H*d_head rows of d_model). Export a state_dict as it is and point at it.
  kOutIn,
  /// [out/16][in][16]: the [in][out] matrix cut into panels of 16 output columns, each panel
  /// stored row after row, so W(i, o) = w[(o / 16) * in * 16 + i * 16 + o % 16]. The fastest
  /// layout: a decode step's matrix-vector products read each panel as one sequential stream,
  /// and prefill's GEMM uses the panels in place instead of packing them (on every arch; see
  /// kernels::f32_gemm). Needs d_head % 16 == 0 and, with W_O,
  /// W_O's width (Cfg::kOutDim) % 16 == 0 (Weights::check). Make it offline with
  /// `tools/export_pytorch.py --layout panel16`, or at start-up with pack_weight_panels().
  kPanel16,
};

/// Floats of one matrix with in_dim inputs and out_dim outputs in `layout`: in_dim * out_dim,
/// or in_dim * out_dim rounded up to whole panels for kPanel16.
constexpr std::size_t weight_floats(WeightLayout layout, std::size_t in_dim,
                                    std::size_t out_dim) noexcept {
  return layout == WeightLayout::kPanel16
             ? in_dim * ((out_dim + kWeightPanel - 1) / kWeightPanel * kWeightPanel)
             : in_dim * out_dim;
}

}  // namespace microattn
