// microattn: views over caller-owned weights (which may live in flash).
#pragma once

#include <cstddef>

namespace microattn {

/// How a weight matrix is stored in memory. Both are row-major and used as they are; the
/// library never copies weights into RAM.
enum class WeightLayout : unsigned char {
  /// [in][out]: Q = x · W_q as the math is written (W_q is d_model rows of H*d_head).
  kInOut,
  /// [out][in]: PyTorch's nn.Linear.weight and nn.MultiheadAttention.in_proj_weight
  /// (W_q is H*d_head rows of d_model). Export a state_dict as it is and point at it.
  kOutIn,
};

/// Pointers to the weights of one attention layer with configuration Cfg. Shapes (floats):
///
/// | field | kInOut layout          | kOutIn layout (PyTorch)  | needed when        |
/// |-------|------------------------|--------------------------|--------------------|
/// | w_q   | [d_model][H*d_head]    | [H*d_head][d_model]      | always             |
/// | w_k   | [d_model][H_kv*d_head] | [H_kv*d_head][d_model]   | always             |
/// | w_v   | [d_model][H_kv*d_head] | [H_kv*d_head][d_model]   | always             |
/// | w_o   | [H*d_head][d_model]    | [d_model][H*d_head]      | Cfg::kHasOutProj   |
/// | b_q   | [H*d_head]             | same                     | Cfg::kHasBias      |
/// | b_k   | [H_kv*d_head]          | same                     | Cfg::kHasBias      |
/// | b_v   | [H_kv*d_head]          | same                     | Cfg::kHasBias      |
/// | b_o   | [d_model]              | same                     | both of the above  |
///
/// Head h owns columns (kInOut) or rows (kOutIn) h*d_head .. h*d_head + d_head - 1 of w_q;
/// key/value head g likewise of w_k and w_v; query head h reads key/value head h / (H/H_kv).
/// Pointers that the configuration does not need are ignored and may be null.
///
/// PyTorch nn.MultiheadAttention(E, H, bias=True) (E = d_model = H*d_head), layout kOutIn:
///   w_q = in_proj_weight, w_k = in_proj_weight + E*E, w_v = in_proj_weight + 2*E*E,
///   b_q = in_proj_bias,   b_k = in_proj_bias + E,     b_v = in_proj_bias + 2*E,
///   w_o = out_proj.weight, b_o = out_proj.bias.
/// LLaMA-style separate layers, layout kOutIn: w_q = q_proj.weight, w_k = k_proj.weight,
///   w_v = v_proj.weight, w_o = o_proj.weight, no biases.
template <class Cfg>
struct Weights {
  WeightLayout layout = WeightLayout::kInOut;
  const float* w_q = nullptr;
  const float* w_k = nullptr;
  const float* w_v = nullptr;
  const float* w_o = nullptr;
  const float* b_q = nullptr;
  const float* b_k = nullptr;
  const float* b_v = nullptr;
  const float* b_o = nullptr;

  /// True when every pointer the configuration needs is set.
  constexpr bool complete() const noexcept {
    if (!w_q || !w_k || !w_v) return false;
    if (Cfg::kHasOutProj && !w_o) return false;
    if (Cfg::kHasBias && (!b_q || !b_k || !b_v)) return false;
    if (Cfg::kHasBias && Cfg::kHasOutProj && !b_o) return false;
    return true;
  }
};

}  // namespace microattn
