// microattn: the compile-time shape of an attention layer.
#pragma once

#include <cstddef>

namespace microattn {

/// Whether the Q/K/V (and O) projections add a bias vector (PyTorch's nn.MultiheadAttention
/// does by default, LLaMA-style layers do not).
enum class Bias : bool { kNo = false, kYes = true };

/// Whether the layer ends with the output projection W_O. Without it the result is the
/// concatenation of the heads, [T][H * d_head].
enum class OutProj : bool { kNo = false, kYes = true };

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
