// SPDX-License-Identifier: Apache-2.0
// microattn: a linear layer y = x W (+ b), the projection kernels of the attention layers as a
// building block of its own (the MLP, the LM head of a model).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/config.hpp"
#include "microattn/driver/project.hpp"
#include "microattn/executor.hpp"
#include "microattn/internal/checks.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/layout.hpp"
#include "microattn/status.hpp"

namespace microattn {

namespace internal {
template <class T>
constexpr bool is_block_option() noexcept {
  return std::is_same<T, Bias>::value || std::is_same<T, WeightType>::value ||
         std::is_same<T, Compute>::value || std::is_same<T, MaxWorkers>::value;
}
/// The options every building block takes (Bias: none or all; WeightType; Compute; MaxWorkers).
template <auto... kOptions>
struct BlockOptions {
  static_assert((is_block_option<decltype(kOptions)>() && ...),
                "microattn: a building block's option is not a Bias, WeightType, Compute or "
                "MaxWorkers value");
  static_assert(option_count<Bias>(kOptions...) <= 1 &&
                    option_count<WeightType>(kOptions...) <= 1 &&
                    option_count<Compute>(kOptions...) <= 1 &&
                    option_count<MaxWorkers>(kOptions...) <= 1,
                "microattn: each option may be given once");
  static constexpr bool kBias = option_or<Bias>(Bias::kNo, kOptions...) != Bias::kNo;
  /// The weight matrices' storage format (format.hpp) and the C++ type of their arrays.
  using WeightFormat = weight_format_t<kOptions...>;
  using WeightElem = typename WeightFormat::Elem;
  static constexpr bool kInt8Weights = std::is_same<WeightFormat, format::Qc8>::value;
  /// Compute::kInt8: each row of a matrix product's input quantised to int8 (a scale per row),
  /// integer sums with the int8 weights (the attention layers' integer option).
  static constexpr Compute kCompute = option_or<Compute>(Compute::kF32, kOptions...);
  static constexpr bool kInt8Compute = kCompute == Compute::kInt8;
  static_assert(kCompute == Compute::kF32 || kCompute == Compute::kInt8,
                "microattn: not a Compute value");
  static_assert(!kInt8Compute || kInt8Weights,
                "microattn: Compute::kInt8 multiplies int8 weights: it needs WeightType::kInt8 "
                "(group-wise int8, kInt8G32 / G64 / G128, has fp32 compute only)");
  /// The quantised input rows a block keeps for Compute::kInt8 (nothing for fp32 compute).
  template <class Arch, std::size_t kRows, std::size_t kWidth>
  using Qd8Input = std::conditional_t<kInt8Compute, Qd8RowBuffer<Arch, kRows, kWidth>, NoQd8Buffer>;
  static constexpr std::size_t kMaxWorkers =
      static_cast<std::size_t>(option_or<MaxWorkers>(MaxWorkers{1}, kOptions...));
  static_assert(kMaxWorkers >= 1 && kMaxWorkers <= 256,
                "microattn: MaxWorkers{n} needs 1 <= n <= 256");
};

/// One weight matrix (in inputs, out outputs) of a building block: the matrix record (its
/// elements and scales) and its bias.
template <class Fmt>
struct MatrixView {
  Matrix<Fmt> m;
  const float* b = nullptr;  ///< bias (out floats), when the block has biases
  constexpr bool ok(bool bias) const noexcept { return m.complete() && (!bias || b); }
  bool overlaps(const void* p, std::size_t bytes, WeightLayout l, std::size_t in, std::size_t out,
                bool bias) const noexcept {
    return m.overlaps(p, bytes, l, in, out) ||
           (bias && internal::overlaps(p, bytes, b, out * sizeof(float)));
  }
  WeightSlice<typename Fmt::Elem, typename FormatTraits<Fmt>::ScaleRef> slice(
      WeightLayout l, std::size_t in, std::size_t out, std::size_t col0) const noexcept {
    return weight_slice(m, l, in, out, col0);
  }
};

/// What every block holds and checks: its weights (a view with check() and overlaps()) and its
/// executor setting. The all-zero state is valid (no weights: calls return kNullPointer).
template <class W, std::size_t kMaxWorkers>
class BlockState {
 public:
  /// @return kOk, or the weights' check() status (nothing changed).
  [[nodiscard]] Status set_weights(const W& w) noexcept {
    const Status s = w.check();
    if (s == Status::kOk) w_ = w;
    return s;
  }
  /// @return kOk, or kBadArgument (nothing changed): more workers than MaxWorkers.
  [[nodiscard]] Status set_executor(const Executor& e) noexcept { return ex_.set(e); }

 protected:
  /// The rules of forward(x, M, y) with rows of `in` and `out` floats: kNullPointer (x, y or
  /// the weights null), kBadTokenCount (M == 0), kOverlap (y over x or a weight array).
  Status check_call(const float* x, std::size_t M, std::size_t in, const float* y,
                    std::size_t out) const noexcept {
    if (!x || !y) return Status::kNullPointer;
    if (const Status s = w_.check(); s != Status::kOk) return s;
    if (M == 0) return Status::kBadTokenCount;
    const std::size_t xb = M * in * sizeof(float), yb = M * out * sizeof(float);
    if (internal::overlaps(x, xb, y, yb) || w_.overlaps(y, yb)) return Status::kOverlap;
    return Status::kOk;
  }
  W w_{};
  ExecutorSetting<kMaxWorkers> ex_{};
};

/// Row r of a matrix product's input: of x (row stride lda), or of its quantised rows.
inline const float* input_row(const float* a, std::size_t lda, std::size_t r) noexcept {
  return a + r * lda;
}
inline kernels::Qd8Rows input_row(const kernels::Qd8Rows& a, std::size_t, std::size_t r) noexcept {
  return a.from(r);
}

/// The input of a block's matrix product for rows [b, e) of x (K wide, row stride ldx): x itself
/// (fp32 compute), or those rows quantised into buf (Compute::kInt8), returned from row 0.
template <class Buf>
auto block_input(Buf& buf, const float* x, std::size_t ldx, std::size_t K, std::size_t b,
                 std::size_t e) noexcept {
  if constexpr (std::is_same<Buf, NoQd8Buffer>::value) {
    return x;
  } else {
    buf.quantize(b, e, K, x, ldx);
    return buf.rows(0);
  }
}

/// C[M][N] = A[M][K] · W (+ b) by part `part` of `parts`: one row (decode) split by output
/// columns (kernels::gemv_part), several split by rows in micro-tile units; the same arithmetic
/// for every split. A: fp32 rows or quantised rows (input_row). pack: gemm_pack_floats<Arch>()
/// floats of this part's own.
template <class Arch, class A, class E, class S>
void block_matmul(std::size_t M, std::size_t N, std::size_t K, const A& a, std::size_t lda,
                  const WeightSlice<E, S>& w, const float* bias, float* c, std::size_t ldc,
                  float* pack, std::size_t part, std::size_t parts) noexcept {
  if (M == 1) {
    project_vec<Arch>(N, K, a, w, bias, c, part, parts);
    return;
  }
  const Range r = token_rows<Arch>(M, part, parts);
  if (r.begin < r.end)
    project<Arch>(r.end - r.begin, N, K, input_row(a, lda, r.begin), lda, w, bias,
                  kernels::StoreRowMajor{c + r.begin * ldc, ldc}, pack);
}
}  // namespace internal

/// The shape of a Linear layer: kIn inputs, kOut outputs, and options Bias::kYes (a bias
/// vector; default Bias::kNo), WeightType::kInt8 (int8 W with a scale per output column;
/// kInt8G32 / G64 / G128: per output column and group of inputs), kF16, kBF16,
/// Compute::kInt8 (integer arithmetic on the int8 W, each input row quantised), MaxWorkers{n}.
template <std::size_t kIn_, std::size_t kOut_, auto... kOptions>
struct LinearConfig : internal::BlockOptions<kOptions...> {
  static_assert(kIn_ > 0 && kOut_ > 0, "microattn::LinearConfig: kIn and kOut must be >= 1");
  static_assert(kIn_ <= (std::size_t{1} << 20) && kOut_ <= (std::size_t{1} << 20),
                "microattn::LinearConfig: dimensions too large for 32-bit index arithmetic");
  static constexpr std::size_t kIn = kIn_;
  static constexpr std::size_t kOut = kOut_;
};

/// The weights of a Linear layer: a view over caller arrays (flash). w: the matrix in `layout`
/// (kOutIn is PyTorch's nn.Linear.weight), s: its int8 scales (WeightType::kInt8), b: the
/// bias (Bias::kYes).
template <class LCfg>
struct LinearWeights {
  using Elem = typename LCfg::WeightElem;
  WeightLayout layout = WeightLayout::kInOut;
  const Elem* w = nullptr;
  const float* s = nullptr;
  const float* b = nullptr;

  /// kOk; kNullPointer (w, or a scale or bias array the configuration needs, null);
  /// kBadArgument (layout not a WeightLayout value).
  constexpr Status check() const noexcept {
    if (!view().ok(LCfg::kBias)) return Status::kNullPointer;
    if (layout != WeightLayout::kInOut && layout != WeightLayout::kOutIn &&
        layout != WeightLayout::kPanel16)
      return Status::kBadArgument;
    return Status::kOk;
  }
  /// True when [p, p + bytes) overlaps the matrix, its scales or its bias.
  bool overlaps(const void* p, std::size_t bytes) const noexcept {
    return view().overlaps(p, bytes, layout, LCfg::kIn, LCfg::kOut, LCfg::kBias);
  }
  constexpr internal::MatrixView<typename LCfg::WeightFormat> view() const noexcept {
    return {{w, s}, b};
  }
};

/// y = x W (+ b) for M rows at a time: the GEMM of the attention layers' projections (M > 1)
/// or their GEMV (M == 1), fp32 or int8 weights in any layout, fp32 or integer compute (then
/// kMaxRows rows at a time through quantised rows in the object), split over the executor's
/// workers bit-identically. Fixed size, no heap; sizeof == ram_bytes(); the all-zero object is
/// a valid layer without weights.
template <class LCfg, class Arch = DefaultArch, std::size_t kMaxRows = 16>
class Linear : public internal::BlockState<LinearWeights<LCfg>, LCfg::kMaxWorkers>,
               private LCfg::template Qd8Input<Arch, kMaxRows, LCfg::kIn> {
  static_assert(kMaxRows >= 1, "microattn::Linear: kMaxRows must be at least 1");
  static constexpr std::size_t kPackFloats = kernels::gemm_pack_floats<Arch>();
  static_assert(kernels::qd8_pack_floats<Arch>() <= kPackFloats, "integer GEMM panel fits");
  static constexpr std::size_t I = LCfg::kIn, O = LCfg::kOut;
  using Base = internal::BlockState<LinearWeights<LCfg>, LCfg::kMaxWorkers>;
  using Qd8 = typename LCfg::template Qd8Input<Arch, kMaxRows, LCfg::kIn>;
  using Base::ex_;
  using Base::w_;

 public:
  Linear() = default;
  Linear(const Linear&) = delete;
  Linear& operator=(const Linear&) = delete;
  static constexpr std::size_t ram_bytes() noexcept { return sizeof(Linear); }

  /// y[M][kOut] = x[M][kIn] W (+ b).
  /// @return kOk; kNullPointer (x, y or the weights null); kBadTokenCount (M == 0); kOverlap
  ///         (y overlaps x or a weight array). y is written only on kOk.
  [[nodiscard]] Status forward(const float* x, std::size_t M, float* y) noexcept {
    if (const Status s = this->check_call(x, M, I, y, O); s != Status::kOk) return s;
    if constexpr (LCfg::kInt8Compute) {
      for (std::size_t r0 = 0; r0 < M; r0 += kMaxRows)
        run(x + r0 * I, internal::min_size(kMaxRows, M - r0), y + r0 * O);
    } else {
      run(x, M, y);
    }
    return Status::kOk;
  }

 private:
  /// y[m][kOut] = x[m][kIn] W (+ b); with integer compute m <= kMaxRows, each part quantising
  /// the rows it multiplies (a row alone: before the split by columns).
  void run(const float* x, std::size_t m, float* y) noexcept {
    const auto slice = w_.view().slice(w_.layout, I, O, 0);
    const float* bias = LCfg::kBias ? w_.b : nullptr;
    const std::size_t parts = ex_.parts();
    Qd8& buf = *this;
    if (m == 1) {
      const auto a = internal::block_input(buf, x, I, I, 0, 1);
      auto part = [&](std::size_t i) {
        internal::block_matmul<Arch>(1, O, I, a, I, slice, bias, y, O, pack_[i], i, parts);
      };
      ex_.run(parts, part);
      return;
    }
    auto part = [&](std::size_t i) {
      const internal::Range r = internal::token_rows<Arch>(m, i, parts);
      const auto a = internal::block_input(buf, x, I, I, r.begin, r.end);
      internal::block_matmul<Arch>(m, O, I, a, I, slice, bias, y, O, pack_[i], i, parts);
    };
    ex_.run(parts, part);
  }

  alignas(internal::Tiles<Arch>::kAlign) float pack_[LCfg::kMaxWorkers][kPackFloats] = {};
};

}  // namespace microattn
