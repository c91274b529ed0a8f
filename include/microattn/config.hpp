// microattn: the compile-time shape of an attention layer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace microattn {

/// Whether the Q/K/V (and O) projections add a bias vector (PyTorch's nn.MultiheadAttention
/// does by default, LLaMA-style layers do not).
enum class Bias : bool { kNo = false, kYes = true };

/// Whether the layer ends with the output projection W_O. Without it the result is the
/// concatenation of the heads, [T][H * d_head].
enum class OutProj : bool { kNo = false, kYes = true };

namespace internal {

/// a * b, or `limit + 1` when the product exceeds limit (never wraps).
constexpr std::size_t mul_capped(std::size_t a, std::size_t b, std::size_t limit) noexcept {
  return (b != 0 && a > limit / b) ? limit + 1 : a * b;
}
constexpr std::size_t add_capped(std::size_t a, std::size_t b, std::size_t limit) noexcept {
  return (a > limit || b > limit - a) ? limit + 1 : a + b;
}

/// True when every buffer and weight matrix of a configuration is addressable with a size_t of
/// at most `limit` bytes, padding included. The bound is generous on purpose: every working
/// buffer of the layers is at most (T_max + 64) rows of (4 H + 4 H_kv + 2) * d_head + 2 d_model
/// + 64 floats, and every weight matrix at most (d_model + 16) x (H + H_kv + 16) * d_head floats
/// (64 and 16 are the largest tile and panel paddings). A factor check alone is not enough: on a
/// 32-bit target T_max = 2^20 with H * d_head = 1024 passes every factor limit and wraps.
constexpr bool sizes_fit(std::size_t t_max, std::size_t d_model, std::size_t heads,
                         std::size_t kv_heads, std::size_t d_head, std::size_t limit) noexcept {
  const std::size_t L = limit / 2;  // room for the sum of several buffers in one object
  const std::size_t width = add_capped(
      add_capped(mul_capped(mul_capped(4, heads + kv_heads, L), d_head, L), 2 * d_head, L),
      add_capped(mul_capped(2, d_model, L), 64, L), L);
  const std::size_t buf = mul_capped(mul_capped(add_capped(t_max, 64, L), width, L), 4, L);
  const std::size_t wmat =
      mul_capped(mul_capped(add_capped(d_model, 16, L),
                            mul_capped(add_capped(heads + kv_heads, 16, L), d_head, L), L),
                 4, L);
  return buf <= L && wmat <= L;
}

}  // namespace internal

/// Every dimension of a causal multi-head attention layer, fixed at compile time.
///
/// @tparam kTMax_    largest number of tokens one call (or the KV cache) holds
/// @tparam kDModel_  model width: the row length of the input x and of the output y
/// @tparam kHeads_   query heads H
/// @tparam kKvHeads_ key/value heads H_kv: H (MHA), fewer (GQA) or 1 (MQA); must divide H
/// @tparam kDHead_   head width d_head (need not equal d_model / H)
/// @tparam kBias_    biases on the projections
/// @tparam kOutProj_ output projection present
template <std::size_t kTMax_, std::size_t kDModel_, std::size_t kHeads_, std::size_t kKvHeads_,
          std::size_t kDHead_, Bias kBias_ = Bias::kNo, OutProj kOutProj_ = OutProj::kYes>
struct Config {
  static_assert(kTMax_ > 0, "microattn::Config: T_max (max tokens) must be at least 1");
  static_assert(kDModel_ > 0, "microattn::Config: d_model must be at least 1");
  static_assert(kHeads_ > 0, "microattn::Config: H (query heads) must be at least 1");
  static_assert(kKvHeads_ > 0, "microattn::Config: H_kv (key/value heads) must be at least 1");
  static_assert(kDHead_ > 0, "microattn::Config: d_head must be at least 1");
  static_assert(kKvHeads_ <= kHeads_ && kHeads_ % kKvHeads_ == 0,
                "microattn::Config: H_kv (key/value heads) must divide H (query heads)");
  static_assert(kTMax_ <= (std::size_t{1} << 24) && kDModel_ <= (std::size_t{1} << 20) &&
                    kHeads_ * kDHead_ <= (std::size_t{1} << 20),
                "microattn::Config: dimensions too large for 32-bit index arithmetic");
  static_assert(internal::sizes_fit(kTMax_, kDModel_, kHeads_, kKvHeads_, kDHead_, SIZE_MAX),
                "microattn::Config: T_max x (d_model, H * d_head) buffers do not fit this "
                "target's size_t (they would wrap on a 32-bit target)");

  static constexpr std::size_t kTMax = kTMax_;
  static constexpr std::size_t kDModel = kDModel_;
  static constexpr std::size_t kHeads = kHeads_;
  static constexpr std::size_t kKvHeads = kKvHeads_;
  static constexpr std::size_t kDHead = kDHead_;
  static constexpr bool kHasBias = kBias_ == Bias::kYes;
  static constexpr bool kHasOutProj = kOutProj_ == OutProj::kYes;

  /// Query heads per key/value head; query head h reads key/value head h / kGroup.
  static constexpr std::size_t kGroup = kHeads_ / kKvHeads_;
  /// Width of Q and of the concatenated heads: H * d_head.
  static constexpr std::size_t kQDim = kHeads_ * kDHead_;
  /// Width of K and of V: H_kv * d_head.
  static constexpr std::size_t kKvDim = kKvHeads_ * kDHead_;
  /// Row length of the layer's output y: d_model with W_O, H * d_head without.
  static constexpr std::size_t kOutDim = kHasOutProj ? kDModel_ : kQDim;
};

}  // namespace microattn
