// SPDX-License-Identifier: Apache-2.0
// microattn: normalisation layers (RMSNorm, LayerNorm) of a model's blocks.
#pragma once

#include <cstddef>

#include "microattn/config.hpp"
#include "microattn/internal/checks.hpp"
#include "microattn/kernels/f32_norm.hpp"
#include "microattn/status.hpp"

namespace microattn {

namespace internal {
/// The checks both norms share: x, y and weights present, M >= 1, y either x itself (in place)
/// or apart from it, and apart from the weights.
inline Status norm_call(const float* x, std::size_t M, const float* y, std::size_t d,
                        const float* g, const float* b, bool need_b) noexcept {
  if (!x || !y || !g || (need_b && !b)) return Status::kNullPointer;
  if (M == 0) return Status::kBadTokenCount;
  const std::size_t bytes = M * d * sizeof(float);
  if ((x != y && overlaps(x, bytes, y, bytes)) || overlaps(y, bytes, g, d * sizeof(float)) ||
      (need_b && overlaps(y, bytes, b, d * sizeof(float))))
    return Status::kOverlap;
  return Status::kOk;
}
/// An epsilon setting whose zero bytes mean the default.
struct EpsSetting {
  float eps = 0.0f;
  Status set(float e) noexcept {
    if (!(e > 0.0f) || !finite_bits(e)) return Status::kBadArgument;
    eps = e;
    return Status::kOk;
  }
  float get(float fallback) const noexcept { return eps > 0.0f ? eps : fallback; }
};
}  // namespace internal

/// RMSNorm over rows of kDim floats: y = x / sqrt(mean(x^2) + eps) * g (LLaMA's, PyTorch's
/// nn.RMSNorm). eps defaults to 1e-6 (Hugging Face LLaMA's rms_norm_eps). The all-zero object
/// is valid (no weight: kNullPointer).
template <std::size_t kDim>
class RmsNorm {
  static_assert(kDim >= 1, "microattn::RmsNorm: kDim must be at least 1");

 public:
  /// g: kDim floats (may live in flash). @return kOk, or kNullPointer (nothing changed).
  [[nodiscard]] Status set_weight(const float* g) noexcept {
    if (!g) return Status::kNullPointer;
    g_ = g;
    return Status::kOk;
  }
  /// @return kOk, or kBadArgument (nothing changed) unless eps is finite and > 0.
  [[nodiscard]] Status set_eps(float eps) noexcept { return eps_.set(eps); }
  float eps() const noexcept { return eps_.get(1e-6f); }

  /// y[M][kDim] = RMSNorm(x[M][kDim]); y may be x (in place).
  /// @return kOk; kNullPointer (x, y or the weight null); kBadTokenCount (M == 0); kOverlap (y
  ///         partly over x, or over the weight). y is written only on kOk.
  [[nodiscard]] Status forward(const float* x, std::size_t M, float* y) const noexcept {
    if (const Status s = internal::norm_call(x, M, y, kDim, g_, nullptr, false); s != Status::kOk)
      return s;
    kernels::f32_rms_norm_rows(x, kDim, y, kDim, M, kDim, g_, eps());
    return Status::kOk;
  }

 private:
  const float* g_ = nullptr;
  internal::EpsSetting eps_{};
};

/// LayerNorm over rows of kDim floats: y = (x - mean) / sqrt(var + eps) * g (+ b) (PyTorch's
/// nn.LayerNorm with elementwise_affine; Bias::kNo for bias=False). eps defaults to 1e-5
/// (nn.LayerNorm's). The all-zero object is valid (no weights: kNullPointer).
template <std::size_t kDim, Bias kBias = Bias::kYes>
class LayerNorm {
  static_assert(kDim >= 1, "microattn::LayerNorm: kDim must be at least 1");
  static constexpr bool kHasBias = kBias != Bias::kNo;

 public:
  /// g, b: kDim floats each (b ignored, may be null, with Bias::kNo).
  /// @return kOk, or kNullPointer (nothing changed).
  [[nodiscard]] Status set_weights(const float* g, const float* b) noexcept {
    if (!g || (kHasBias && !b)) return Status::kNullPointer;
    g_ = g, b_ = kHasBias ? b : nullptr;
    return Status::kOk;
  }
  /// @return kOk, or kBadArgument (nothing changed) unless eps is finite and > 0.
  [[nodiscard]] Status set_eps(float eps) noexcept { return eps_.set(eps); }
  float eps() const noexcept { return eps_.get(1e-5f); }

  /// y[M][kDim] = LayerNorm(x[M][kDim]); y may be x. @return as RmsNorm::forward.
  [[nodiscard]] Status forward(const float* x, std::size_t M, float* y) const noexcept {
    if (const Status s = internal::norm_call(x, M, y, kDim, g_, b_, kHasBias); s != Status::kOk)
      return s;
    kernels::f32_layer_norm_rows(x, kDim, y, kDim, M, kDim, g_, b_, eps());
    return Status::kOk;
  }

 private:
  const float* g_ = nullptr;
  const float* b_ = nullptr;
  internal::EpsSetting eps_{};
};

}  // namespace microattn
