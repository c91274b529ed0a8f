// SPDX-License-Identifier: Apache-2.0
// microattn: the compile-time shape of an attention layer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "microattn/format.hpp"

namespace microattn {

/// Which projections add a bias vector: a set of flags, combined with `|`.
///   Bias::kYes  every projection (PyTorch nn.MultiheadAttention's default)
///   Bias::kQkv  Q, K and V but not O (Qwen2)
///   Bias::kQ | Bias::kV | Bias::kO  no key bias (Whisper)
///   Bias::kNo   none (LLaMA-style layers; the default)
/// A flag for O is ignored when the layer has no output projection.
enum class Bias : unsigned char { kNo = 0, kQ = 1, kK = 2, kV = 4, kO = 8, kQkv = 7, kYes = 15 };
constexpr Bias operator|(Bias a, Bias b) noexcept {
  return static_cast<Bias>(static_cast<unsigned char>(a) | static_cast<unsigned char>(b));
}
/// True when every flag of `flag` is set in `set`.
constexpr bool has(Bias set, Bias flag) noexcept {
  return (static_cast<unsigned char>(set) & static_cast<unsigned char>(flag)) ==
         static_cast<unsigned char>(flag);
}

/// Whether the layer ends with the output projection W_O. Without it the result is the
/// concatenation of the heads, [T][H * d_head].
enum class OutProj : bool { kNo = false, kYes = true };

/// Whether the layer can apply rotary position embeddings (set_rope): with Rope::kYes it holds
/// cos/sin tables for T_max positions (4 * T_max * d_head bytes); without, it holds none and
/// set_rope accepts only a disabled RoPE.
enum class Rope : bool { kNo = false, kYes = true };

/// Output width of W_O (default: d_model). For layers whose output projection maps to another
/// width than the input's, e.g. the teaching notes' MultiHeadAttention(d_in, d_out) with
/// out_proj = Linear(d_out, d_out): Config<T, d_in, H, H, d_out / H, OutDim{d_out}>.
enum class OutDim : std::size_t {};

// WeightType (the weight matrices' storage format: fp32, int8 per column) is in format.hpp.

/// The arithmetic of the projections (W_Q, W_K, W_V, W_O; prefill and decode).
///   Compute::kF32   fp32 multiply-adds (the default; int8 weights are widened to fp32)
///   Compute::kInt8  integer: each row of a projection's input (a token of x, of the attended
///                   heads) is quantised to int8 at run time with its own scale (max |x| / 127,
///                   "qd8" in kernel names), multiplied by the int8 weights with exact int32
///                   sums, and the two scales and the bias applied in fp32. Needs
///                   WeightType::kInt8. Attention stays fp32, except that with
///                   CacheType::kInt8 (KvAttention) each query row is quantised the same way
///                   and its scores against the int8 keys are integer dot products too;
///                   softmax and P·V stay fp32 (docs/quantization.md says why).
enum class Compute : unsigned char { kF32 = 0, kInt8 = 1 };

/// Element type of KvAttention's key/value cache.
///   CacheType::kF32   fp32 (the default)
///   CacheType::kInt8  int8, symmetric, one fp32 scale per cached token per key/value head for
///                     K and one for V, computed when the token is appended ("qs8" in kernel
///                     names): about a quarter of the cache RAM and of a decode step's reads.
///   CacheType::kF16   IEEE fp16 (half.hpp), each K and V value rounded to nearest even as it is
///                     appended, widened exactly as it is read: half the cache RAM, fp32
///                     arithmetic.
///   CacheType::kBF16  bfloat16, the same way (fp32's range, 8 significant bits).
enum class CacheType : unsigned char { kF32 = 0, kInt8 = 1, kF16 = 2, kBF16 = 3 };

/// Most workers (cores) a layer can split its work over: every worker's scratch is part of the
/// object (ram_bytes() grows with it). Default 1; the Executor given at run time says how many
/// are used (see executor.hpp).
enum class MaxWorkers : std::size_t {};

/// Which keys each token attends to.
///   Mask::kCausal  token i sees tokens 0 .. i (decoders; the default)
///   Mask::kNone    every token sees every token (bidirectional: BERT, ViT, audio encoders);
///                  MultiHeadAttention and ScaledDotProductAttention only (a KV cache is causal)
/// For a sliding window give SlidingWindow{W} instead (causal, banded).
enum class Mask : unsigned char { kCausal = 0, kNone = 1 };

/// Causal sliding-window attention: token i sees tokens i - W + 1 .. i (Mistral, Gemma 2/3
/// local layers, Phi-3, streaming speech). W >= 1. KvAttention with a window keeps a ring-buffer
/// cache of O(W) tokens and takes streams of unbounded length.
enum class SlidingWindow : std::size_t {};

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

namespace internal {

/// The option of type Opt among a Config's options, or `fallback` when there is none.
template <class Opt>
constexpr Opt option_or(Opt fallback) noexcept {
  return fallback;
}
template <class Opt, class First, class... Rest>
constexpr Opt option_or(Opt fallback, First first, Rest... rest) noexcept {
  if constexpr (std::is_same<First, Opt>::value)
    return first;
  else
    return option_or<Opt>(fallback, rest...);
}
/// How many of the options have type Opt.
template <class Opt, class... Ts>
constexpr std::size_t option_count(Ts...) noexcept {
  return (std::size_t{0} + ... + (std::is_same<Ts, Opt>::value ? 1u : 0u));
}
/// The storage format of the weight matrices among a Config's options (WeightType; fp32 when
/// none): the one parser every Config family (attention, latent, linear, MLP, decoder) uses.
template <auto... kOptions>
using weight_format_t =
    typename WeightFormatOf<option_or<WeightType>(WeightType::kF32, kOptions...)>::type;
/// Whether a WeightType value names a format (WeightFormatOf has an entry for it).
constexpr bool is_weight_type(WeightType w) noexcept {
  return static_cast<unsigned>(w) <= static_cast<unsigned>(WeightType::kInt8G128);
}

template <class T>
constexpr bool is_config_option() noexcept {
  return std::is_same<T, Bias>::value || std::is_same<T, OutProj>::value ||
         std::is_same<T, OutDim>::value || std::is_same<T, Rope>::value ||
         std::is_same<T, WeightType>::value || std::is_same<T, CacheType>::value ||
         std::is_same<T, Mask>::value || std::is_same<T, SlidingWindow>::value ||
         std::is_same<T, MaxWorkers>::value || std::is_same<T, Compute>::value;
}

}  // namespace internal

/// Every dimension of a causal multi-head attention layer, fixed at compile time.
///
/// @tparam kTMax_    largest number of tokens one call (or the KV cache) holds
/// @tparam kDModel_  model width: the row length of the input x (and of y, unless OutDim says)
/// @tparam kHeads_   query heads H
/// @tparam kKvHeads_ key/value heads H_kv: H (MHA), fewer (GQA) or 1 (MQA); must divide H
/// @tparam kDHead_   head width d_head (need not equal d_model / H)
/// @tparam kOptions  any of, in any order, each at most once (defaults in brackets):
///                   Bias (Bias::kNo), OutProj (OutProj::kYes), OutDim{n} (d_model),
///                   Rope (Rope::kNo: no RoPE tables), WeightType (WeightType::kF32),
///                   Compute (Compute::kF32; kInt8 needs WeightType::kInt8),
///                   CacheType (CacheType::kF32; used by KvAttention only), Mask
///                   (Mask::kCausal), SlidingWindow{W} (none: the whole prefix),
///                   MaxWorkers{n} (1).
///                   `Config<T, D, H, Hkv, dh, Bias::kYes, OutProj::kNo>` reads as before.
template <std::size_t kTMax_, std::size_t kDModel_, std::size_t kHeads_, std::size_t kKvHeads_,
          std::size_t kDHead_, auto... kOptions>
struct Config {
  static_assert((internal::is_config_option<decltype(kOptions)>() && ...),
                "microattn::Config: an option is not a Bias, OutProj, OutDim, Rope, WeightType, "
                "Compute, CacheType, Mask, SlidingWindow or MaxWorkers value");
  static_assert(internal::option_count<Bias>(kOptions...) <= 1 &&
                    internal::option_count<OutProj>(kOptions...) <= 1 &&
                    internal::option_count<OutDim>(kOptions...) <= 1 &&
                    internal::option_count<Rope>(kOptions...) <= 1 &&
                    internal::option_count<WeightType>(kOptions...) <= 1 &&
                    internal::option_count<Compute>(kOptions...) <= 1 &&
                    internal::option_count<CacheType>(kOptions...) <= 1 &&
                    internal::option_count<Mask>(kOptions...) <= 1 &&
                    internal::option_count<SlidingWindow>(kOptions...) <= 1 &&
                    internal::option_count<MaxWorkers>(kOptions...) <= 1,
                "microattn::Config: each option (Bias, OutProj, OutDim, Rope, WeightType, "
                "Compute, CacheType, Mask, SlidingWindow, MaxWorkers) may be given once");
  static_assert(kTMax_ > 0, "microattn::Config: T_max (max tokens) must be at least 1");
  static_assert(kDModel_ > 0, "microattn::Config: d_model must be at least 1");
  static_assert(kHeads_ > 0, "microattn::Config: H (query heads) must be at least 1");
  static_assert(kKvHeads_ > 0, "microattn::Config: H_kv (key/value heads) must be at least 1");
  static_assert(kDHead_ > 0, "microattn::Config: d_head must be at least 1");
  static_assert(kKvHeads_ <= kHeads_ && kHeads_ % kKvHeads_ == 0,
                "microattn::Config: H_kv (key/value heads) must divide H (query heads)");

  static constexpr std::size_t kTMax = kTMax_;
  static constexpr std::size_t kDModel = kDModel_;
  static constexpr std::size_t kHeads = kHeads_;
  static constexpr std::size_t kKvHeads = kKvHeads_;
  static constexpr std::size_t kDHead = kDHead_;
  static constexpr bool kHasOutProj =
      internal::option_or<OutProj>(OutProj::kYes, kOptions...) == OutProj::kYes;
  /// RoPE tables present (set_rope can enable rotary embeddings).
  static constexpr bool kHasRope = internal::option_or<Rope>(Rope::kNo, kOptions...) == Rope::kYes;
  /// The bias flags as given (Bias::kO may be set without W_O; kBiasO says what is used).
  static constexpr Bias kBias = internal::option_or<Bias>(Bias::kNo, kOptions...);
  static constexpr bool kBiasQ = has(kBias, Bias::kQ);
  static constexpr bool kBiasK = has(kBias, Bias::kK);
  static constexpr bool kBiasV = has(kBias, Bias::kV);
  static constexpr bool kBiasO = has(kBias, Bias::kO) && kHasOutProj;

  /// The weight matrices' storage format (format.hpp), and the C++ type of their arrays.
  static constexpr WeightType kWeightType =
      internal::option_or<WeightType>(WeightType::kF32, kOptions...);
  static_assert(internal::is_weight_type(kWeightType),
                "microattn::Config: WeightType must be kF32, kInt8, kF16, kBF16, kInt8G32, "
                "kInt8G64 or kInt8G128");
  using WeightFormat = internal::weight_format_t<kOptions...>;
  using WeightElem = typename WeightFormat::Elem;
  /// int8 weights with a scale per output column (format::Qc8).
  static constexpr bool kInt8Weights = std::is_same<WeightFormat, format::Qc8>::value;
  /// The projections' arithmetic (Compute::kInt8: integer, on int8 weights).
  static constexpr Compute kCompute = internal::option_or<Compute>(Compute::kF32, kOptions...);
  static constexpr bool kInt8Compute = kCompute == Compute::kInt8;
  /// Element type of KvAttention's cache.
  static constexpr CacheType kCacheType =
      internal::option_or<CacheType>(CacheType::kF32, kOptions...);
  static constexpr bool kInt8Cache = kCacheType == CacheType::kInt8;
  using CacheElem = std::conditional_t<
      kInt8Cache, std::int8_t,
      std::conditional_t<kCacheType == CacheType::kF16, f16,
                         std::conditional_t<kCacheType == CacheType::kBF16, bf16, float>>>;

  /// The mask: kCausal (also with a sliding window) or kNone.
  static constexpr Mask kMask = internal::option_or<Mask>(Mask::kCausal, kOptions...);
  static constexpr bool kCausal = kMask == Mask::kCausal;
  /// Sliding-window width W (token i sees i - W + 1 .. i); 0 = no window.
  static constexpr std::size_t kWindow =
      static_cast<std::size_t>(internal::option_or<SlidingWindow>(SlidingWindow{0}, kOptions...));
  static constexpr bool kSliding = internal::option_count<SlidingWindow>(kOptions...) == 1;

  /// Most workers the layer's objects can split a call over (MaxWorkers{n}; default 1).
  static constexpr std::size_t kMaxWorkers =
      static_cast<std::size_t>(internal::option_or<MaxWorkers>(MaxWorkers{1}, kOptions...));

  /// Query heads per key/value head; query head h reads key/value head h / kGroup.
  static constexpr std::size_t kGroup = kHeads_ / kKvHeads_;
  /// Width of Q and of the concatenated heads: H * d_head.
  static constexpr std::size_t kQDim = kHeads_ * kDHead_;
  /// Width of K and of V: H_kv * d_head.
  static constexpr std::size_t kKvDim = kKvHeads_ * kDHead_;
  /// Row length of the layer's output y: W_O's output width (OutDim, default d_model) with
  /// W_O, H * d_head without.
  static constexpr std::size_t kOutDim =
      kHasOutProj
          ? static_cast<std::size_t>(internal::option_or<OutDim>(OutDim{kDModel_}, kOptions...))
          : kQDim;

  static_assert(kCompute == Compute::kF32 || kCompute == Compute::kInt8,
                "microattn::Config: Compute must be kF32 or kInt8");
  static_assert(!kInt8Compute || kInt8Weights,
                "microattn::Config: Compute::kInt8 multiplies int8 weights: it needs "
                "WeightType::kInt8 (group-wise int8, kInt8G32 / G64 / G128, has fp32 compute "
                "only)");
  static_assert(static_cast<unsigned>(kCacheType) <= static_cast<unsigned>(CacheType::kBF16),
                "microattn::Config: CacheType must be kF32, kInt8, kF16 or kBF16");
  static_assert(kMaxWorkers >= 1 && kMaxWorkers <= 256,
                "microattn::Config: MaxWorkers{n} needs 1 <= n <= 256");
  static_assert(kMask == Mask::kCausal || kMask == Mask::kNone,
                "microattn::Config: Mask must be kCausal or kNone");
  static_assert(!kSliding || kWindow >= 1,
                "microattn::Config: SlidingWindow{W} needs W >= 1 (token i sees i - W + 1 .. i)");
  static_assert(!kSliding || kMask == Mask::kCausal,
                "microattn::Config: SlidingWindow is causal; it cannot be combined with "
                "Mask::kNone");
  static_assert(internal::option_count<OutDim>(kOptions...) == 0 || kHasOutProj,
                "microattn::Config: OutDim sets W_O's width, but OutProj::kNo has no W_O");
  static_assert(kOutDim > 0, "microattn::Config: OutDim must be at least 1");
  static_assert(kTMax_ <= (std::size_t{1} << 24) && kDModel_ <= (std::size_t{1} << 20) &&
                    kHeads_ * kDHead_ <= (std::size_t{1} << 20) &&
                    kOutDim <= (std::size_t{1} << 20),
                "microattn::Config: dimensions too large for 32-bit index arithmetic");
  static_assert(internal::sizes_fit(kTMax_, kDModel_ > kOutDim ? kDModel_ : kOutDim, kHeads_,
                                    kKvHeads_, kDHead_, SIZE_MAX),
                "microattn::Config: T_max x (d_model, H * d_head) buffers do not fit this "
                "target's size_t (they would wrap on a 32-bit target)");
};

}  // namespace microattn
