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
/// Compute::kInt8 (integer products: x's and the hidden rows quantised), MaxWorkers{n}.
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
  /// The widest row a product reads (integer compute's quantised rows).
  static constexpr std::size_t kWidest = kDModel_ > kDHidden_ ? kDModel_ : kDHidden_;
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

  using View = internal::MatrixView<typename MCfg::WeightFormat>;
  constexpr View gate() const noexcept { return {{w_gate, s_gate}, b_gate}; }
  constexpr View up() const noexcept { return {{w_up, s_up}, b_up}; }
  constexpr View down() const noexcept { return {{w_down, s_down}, b_down}; }
  /// kOk; kNullPointer (a matrix, scale or bias array the configuration needs is null);
  /// kBadArgument (layout not a WeightLayout value).
  constexpr Status check() const noexcept {
    constexpr bool b = MCfg::kBias;
    if ((MCfg::kGated && !gate().ok(b)) || !up().ok(b) || !down().ok(b))
      return Status::kNullPointer;
    if (layout != WeightLayout::kInOut && layout != WeightLayout::kOutIn &&
        layout != WeightLayout::kPanel16)
      return Status::kBadArgument;
    return Status::kOk;
  }
  bool overlaps(const void* p, std::size_t bytes) const noexcept {
    constexpr bool b = MCfg::kBias;
    constexpr std::size_t DM = MCfg::kDModel, DH = MCfg::kDHidden;
    return (MCfg::kGated && gate().overlaps(p, bytes, layout, DM, DH, b)) ||
           up().overlaps(p, bytes, layout, DM, DH, b) ||
           down().overlaps(p, bytes, layout, DH, DM, b);
  }
};

namespace internal {
/// The working memory and arithmetic of an Mlp: hidden rows (kMaxRows), the GEMM panels and,
/// for integer compute, the quantised rows (x's, then the activated hidden rows').
template <class MCfg, class Arch, std::size_t kMaxRows>
class MlpWork : private MCfg::template Qd8Input<Arch, kMaxRows, MCfg::kWidest> {
  static constexpr std::size_t DM = MCfg::kDModel, DH = MCfg::kDHidden;
  static constexpr std::size_t kPackFloats = kernels::gemm_pack_floats<Arch>();
  static_assert(kernels::qd8_pack_floats<Arch>() <= kPackFloats, "integer GEMM panel fits");
  using Qd8 = typename MCfg::template Qd8Input<Arch, kMaxRows, MCfg::kWidest>;
  using W = MlpWeights<MCfg>;

 public:
  /// y[m][d_model] = MLP(x[m][d_model]) for 1 <= m <= kMaxRows rows with weights w (checked by
  /// the caller), over ex's parts: a row alone by run_row, several by run_rows.
  template <class Ex>
  void run(const W& w, Ex& ex, const float* x, std::size_t m, float* y) noexcept {
    if (m == 1)
      run_row(w, ex, x, y);
    else
      run_rows(w, ex, x, m, y);
  }

 protected:
  /// One row: the hidden GEMVs by columns, the activation, the down GEMV by columns.
  template <class Ex>
  void run_row(const W& w, Ex& ex, const float* x, float* y) noexcept {
    const std::size_t parts = ex.parts();
    const auto xa = input(x, DM, 0, 1);
    auto hidden = [&](std::size_t i) {
      if constexpr (MCfg::kGated)
        project_vec<Arch>(DH, DM, xa, gate(w), bias(w.b_gate), h_, i, parts);
      project_vec<Arch>(DH, DM, xa, up(w), bias(w.b_up), MCfg::kGated ? u_ : h_, i, parts);
    };
    ex.run(parts, hidden);
    activate(0, 1);
    const auto ha = input(h_, DH, 0, 1);
    auto out = [&](std::size_t i) {
      project_vec<Arch>(DM, DH, ha, down(w), bias(w.b_down), y, i, parts);
    };
    ex.run(parts, out);
  }
  /// m <= kMaxRows rows, split by rows: each part runs its rows through all three GEMMs
  /// (quantising its rows of x, then of h, with integer compute).
  template <class Ex>
  void run_rows(const W& w, Ex& ex, const float* x, std::size_t m, float* y) noexcept {
    const std::size_t parts = ex.parts();
    auto rows = [&](std::size_t i) {
      const Range r = token_rows<Arch>(m, i, parts);
      if (r.begin >= r.end) return;
      const std::size_t n = r.end - r.begin;
      const auto xr = input(x, DM, r.begin, r.end);
      float* ur = (MCfg::kGated ? u_ : h_) + r.begin * DH;
      if constexpr (MCfg::kGated)
        project<Arch>(n, DH, DM, xr, DM, gate(w), bias(w.b_gate),
                      kernels::StoreRowMajor{h_ + r.begin * DH, DH}, pack_[i]);
      project<Arch>(n, DH, DM, xr, DM, up(w), bias(w.b_up), kernels::StoreRowMajor{ur, DH},
                    pack_[i]);
      activate(r.begin, n);
      const auto hr = input(h_, DH, r.begin, r.end);
      project<Arch>(n, DM, DH, hr, DH, down(w), bias(w.b_down),
                    kernels::StoreRowMajor{y + r.begin * DM, DM}, pack_[i]);
    };
    ex.run(parts, rows);
  }

 private:
  static const float* bias(const float* b) noexcept { return MCfg::kBias ? b : nullptr; }
  static auto gate(const W& w) noexcept { return w.gate().slice(w.layout, DM, DH, 0); }
  static auto up(const W& w) noexcept { return w.up().slice(w.layout, DM, DH, 0); }
  static auto down(const W& w) noexcept { return w.down().slice(w.layout, DH, DM, 0); }
  /// Rows [b, e) of src (K wide) as the products read them, from row b: src's, or quantised.
  auto input(const float* src, std::size_t K, std::size_t b, std::size_t e) noexcept {
    Qd8& buf = *this;
    return input_row(block_input(buf, src, K, K, b, e), K, b);
  }
  /// The activation of hidden rows [r, r + n): h = act(h) (* u). With a gate, h holds
  /// x W_gate and u x W_up; without, h holds x W_up.
  void activate(std::size_t r, std::size_t n) noexcept {
    kernels::f32_activate<MCfg::kAct>(h_ + r * DH, MCfg::kGated ? u_ + r * DH : nullptr, n * DH);
  }

  alignas(Tiles<Arch>::kAlign) float h_[kMaxRows * DH] = {};
  alignas(Tiles<Arch>::kAlign) float u_[MCfg::kGated ? kMaxRows * DH : 1] = {};
  alignas(Tiles<Arch>::kAlign) float pack_[MCfg::kMaxWorkers][kPackFloats] = {};
};
}  // namespace internal

/// y = act(x W_gate (+ b)) * (x W_up (+ b)) W_down (+ b) (gated), or act(x W_up) W_down, for
/// M rows, kMaxRows at a time through hidden buffers in the object. A row alone (decode) runs
/// the GEMVs split by output columns over the executor's workers; several rows the GEMMs split
/// by rows; bit-identical for any worker count. Compute::kInt8 quantises x's rows for the
/// hidden products and the activated hidden rows for the down product into one buffer. Fixed
/// size, no heap, sizeof == ram_bytes(), the all-zero object valid (no weights: kNullPointer).
template <class MCfg, class Arch = DefaultArch, std::size_t kMaxRows = 16>
class Mlp : public internal::BlockState<MlpWeights<MCfg>, MCfg::kMaxWorkers>,
            private internal::MlpWork<MCfg, Arch, kMaxRows> {
  static_assert(kMaxRows >= 1, "microattn::Mlp: kMaxRows must be at least 1");
  static constexpr std::size_t DM = MCfg::kDModel;
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
      this->run(w_, ex_, x + r0 * DM, m, y + r0 * DM);
    }
    return Status::kOk;
  }
};

}  // namespace microattn
