// SPDX-License-Identifier: Apache-2.0
// microattn: the feed-forward block of a transformer layer (gated: LLaMA's SwiGLU, GeGLU; or
// not: BERT's GELU MLP), on the projection kernels of the attention layers.
#pragma once

#include <cstddef>

#include "microattn/kernels/f32_act.hpp"
#include "microattn/linear.hpp"

namespace microattn {

/// The shape of an Mlp: d_model, hidden width d_hidden, the activation, and options
/// Bias::kYes (a bias on every matrix; default none, as LLaMA), WeightType::kInt8,
/// MaxWorkers{n}.
template <std::size_t kDModel_, std::size_t kDHidden_, Activation kAct_, auto... kOptions>
struct MlpConfig : internal::BlockOptions<kOptions...> {
  static_assert(kDModel_ > 0 && kDHidden_ > 0, "microattn::MlpConfig: widths must be >= 1");
  static_assert(kDModel_ <= (std::size_t{1} << 20) && kDHidden_ <= (std::size_t{1} << 20),
                "microattn::MlpConfig: dimensions too large for 32-bit index arithmetic");
  static_assert(static_cast<unsigned>(kAct_) <= static_cast<unsigned>(Activation::kRelu),
                "microattn::MlpConfig: not an Activation value");
  static constexpr std::size_t kDModel = kDModel_;
  static constexpr std::size_t kDHidden = kDHidden_;
  static constexpr Activation kAct = kAct_;
  static constexpr bool kGated = is_gated(kAct_);
};

/// The weights of an Mlp: views over caller arrays, every matrix in `layout` (kOutIn:
/// PyTorch's nn.Linear.weight). LLaMA's MLP, kOutIn: w_gate = gate_proj.weight, w_up =
/// up_proj.weight, w_down = down_proj.weight. Ungated (BERT): w_up = the first Linear (d_model
/// -> d_hidden), w_down = the second; w_gate unused. s_*: int8 scales, b_*: biases (Bias::kYes).
template <class MCfg>
struct MlpWeights {
  using Elem = typename MCfg::WeightElem;
  WeightLayout layout = WeightLayout::kInOut;
  const Elem* w_gate = nullptr;
  const Elem* w_up = nullptr;
  const Elem* w_down = nullptr;
  const float* s_gate = nullptr;
  const float* s_up = nullptr;
  const float* s_down = nullptr;
  const float* b_gate = nullptr;
  const float* b_up = nullptr;
  const float* b_down = nullptr;

  constexpr internal::MatrixView<Elem> gate() const noexcept { return {w_gate, s_gate, b_gate}; }
  constexpr internal::MatrixView<Elem> up() const noexcept { return {w_up, s_up, b_up}; }
  constexpr internal::MatrixView<Elem> down() const noexcept { return {w_down, s_down, b_down}; }
  /// kOk; kNullPointer (a matrix, scale or bias array the configuration needs is null);
  /// kBadArgument (layout not a WeightLayout value).
  constexpr Status check() const noexcept {
    constexpr bool q = MCfg::kInt8Weights, b = MCfg::kBias;
    if ((MCfg::kGated && !gate().ok(q, b)) || !up().ok(q, b) || !down().ok(q, b))
      return Status::kNullPointer;
    if (layout != WeightLayout::kInOut && layout != WeightLayout::kOutIn &&
        layout != WeightLayout::kPanel16)
      return Status::kBadArgument;
    return Status::kOk;
  }
  bool overlaps(const void* p, std::size_t bytes) const noexcept {
    constexpr bool q = MCfg::kInt8Weights, b = MCfg::kBias;
    constexpr std::size_t DM = MCfg::kDModel, DH = MCfg::kDHidden;
    return (MCfg::kGated && gate().overlaps(p, bytes, layout, DM, DH, q, b)) ||
           up().overlaps(p, bytes, layout, DM, DH, q, b) ||
           down().overlaps(p, bytes, layout, DH, DM, q, b);
  }
};

/// y = act(x W_gate (+ b)) * (x W_up (+ b)) W_down (+ b) (gated), or act(x W_up) W_down, for
/// M rows, kMaxRows at a time through hidden buffers in the object. A row alone (decode) runs
/// the GEMVs split by output columns over the executor's workers; several rows the GEMMs split
/// by rows; bit-identical for any worker count. Fixed size, no heap, sizeof == ram_bytes(),
/// the all-zero object valid (no weights: kNullPointer).
template <class MCfg, class Arch = DefaultArch, std::size_t kMaxRows = 16>
class Mlp : public internal::BlockState<MlpWeights<MCfg>, MCfg::kMaxWorkers> {
  static_assert(kMaxRows >= 1, "microattn::Mlp: kMaxRows must be at least 1");
  static constexpr std::size_t DM = MCfg::kDModel, DH = MCfg::kDHidden;
  static constexpr std::size_t kPackFloats = kernels::gemm_pack_floats<Arch>();
  static constexpr bool kQ = MCfg::kInt8Weights;
  using Base = internal::BlockState<MlpWeights<MCfg>, MCfg::kMaxWorkers>;
  using Base::ex_;
  using Base::w_;

 public:
  Mlp() = default;
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;
  static constexpr std::size_t ram_bytes() noexcept { return sizeof(Mlp); }

  /// y[M][d_model] = MLP(x[M][d_model]).
  /// @return kOk; kNullPointer (x, y or the weights null); kBadTokenCount (M == 0); kOverlap
  ///         (y overlaps x or a weight array). y is written only on kOk.
  [[nodiscard]] Status forward(const float* x, std::size_t M, float* y) noexcept {
    if (const Status s = this->check_call(x, M, DM, y, DM); s != Status::kOk) return s;
    for (std::size_t r0 = 0; r0 < M; r0 += kMaxRows) {
      const std::size_t m = internal::min_size(kMaxRows, M - r0);
      if (m == 1)
        run_row(x + r0 * DM, y + r0 * DM);
      else
        run_rows(x + r0 * DM, m, y + r0 * DM);
    }
    return Status::kOk;
  }

 private:
  const float* bias(const float* b) const noexcept { return MCfg::kBias ? b : nullptr; }
  /// One row: the hidden GEMVs by columns, the activation, the down GEMV by columns.
  void run_row(const float* x, float* y) noexcept {
    const std::size_t parts = ex_.parts();
    auto hidden = [&](std::size_t i) {
      if constexpr (MCfg::kGated)
        internal::project_vec<Arch>(DH, DM, x, w_.gate().slice(w_.layout, DM, DH, 0, kQ),
                                    bias(w_.b_gate), h_, i, parts);
      internal::project_vec<Arch>(DH, DM, x, w_.up().slice(w_.layout, DM, DH, 0, kQ), bias(w_.b_up),
                                  MCfg::kGated ? u_ : h_, i, parts);
    };
    ex_.run(parts, hidden);
    activate(0, 1);
    auto down = [&](std::size_t i) {
      internal::project_vec<Arch>(DM, DH, h_, w_.down().slice(w_.layout, DH, DM, 0, kQ),
                                  bias(w_.b_down), y, i, parts);
    };
    ex_.run(parts, down);
  }
  /// m rows, split by rows: each part runs its rows through all three GEMMs.
  void run_rows(const float* x, std::size_t m, float* y) noexcept {
    const std::size_t parts = ex_.parts();
    auto rows = [&](std::size_t i) {
      const internal::Range r = internal::token_rows<Arch>(m, i, parts);
      if (r.begin >= r.end) return;
      const std::size_t n = r.end - r.begin;
      const float* xr = x + r.begin * DM;
      float* up = (MCfg::kGated ? u_ : h_) + r.begin * DH;
      if constexpr (MCfg::kGated)
        internal::project<Arch>(n, DH, DM, xr, DM, w_.gate().slice(w_.layout, DM, DH, 0, kQ),
                                bias(w_.b_gate), kernels::StoreRowMajor{h_ + r.begin * DH, DH},
                                pack_[i]);
      internal::project<Arch>(n, DH, DM, xr, DM, w_.up().slice(w_.layout, DM, DH, 0, kQ),
                              bias(w_.b_up), kernels::StoreRowMajor{up, DH}, pack_[i]);
      activate(r.begin, n);
      internal::project<Arch>(n, DM, DH, h_ + r.begin * DH, DH,
                              w_.down().slice(w_.layout, DH, DM, 0, kQ), bias(w_.b_down),
                              kernels::StoreRowMajor{y + r.begin * DM, DM}, pack_[i]);
    };
    ex_.run(parts, rows);
  }
  /// The activation of hidden rows [r, r + n): h = act(h) (* u). With a gate, h holds
  /// x W_gate and u x W_up; without, h holds x W_up.
  void activate(std::size_t r, std::size_t n) noexcept {
    kernels::f32_activate<MCfg::kAct>(h_ + r * DH, MCfg::kGated ? u_ + r * DH : nullptr, n * DH);
  }

  alignas(internal::Tiles<Arch>::kAlign) float h_[kMaxRows * DH] = {};
  alignas(internal::Tiles<Arch>::kAlign) float u_[MCfg::kGated ? kMaxRows * DH : 1] = {};
  alignas(internal::Tiles<Arch>::kAlign) float pack_[MCfg::kMaxWorkers][kPackFloats] = {};
};

}  // namespace microattn
