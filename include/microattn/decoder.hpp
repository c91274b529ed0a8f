// SPDX-License-Identifier: Apache-2.0
// microattn: a whole LLaMA-style decoder language model (token embedding, pre-norm blocks of
// RMSNorm + GQA attention with RoPE and a KV cache + RMSNorm + gated MLP, final RMSNorm, LM head)
// on the building blocks, and the reader of its weight file (docs/model-format.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/config.hpp"
#include "microattn/kernels/f32_norm.hpp"
#include "microattn/kv_cache.hpp"
#include "microattn/linear.hpp"
#include "microattn/mlp.hpp"
#include "microattn/model_file.hpp"
#include "microattn/weights.hpp"

namespace microattn {

/// Whether the LM head is the embedding matrix itself (tied, as GPT-2 and small LLaMA-style
/// models) or a matrix of its own.
enum class LmHead : unsigned char { kSeparate, kTied };

namespace internal {
template <class T>
constexpr bool is_decoder_option() noexcept {
  return std::is_same<T, WeightType>::value || std::is_same<T, CacheType>::value ||
         std::is_same<T, Compute>::value || std::is_same<T, MaxWorkers>::value ||
         std::is_same<T, LmHead>::value || std::is_same<T, Activation>::value;
}
}  // namespace internal

/// The shape of a Decoder: vocabulary, d_model, layers, query heads, key/value heads, d_head,
/// MLP hidden width, context T_max, and options in any order, each at most once:
/// WeightType::kInt8 (every matrix and the embedding int8, a scale per output row), kInt8G32 /
/// G64 / G128 (int8, a scale per output row and group of inputs) or kF16 / kBF16 (every matrix
/// and the embedding; the norms stay fp32),
/// CacheType::kInt8, Compute::kInt8 (integer products in every matrix: the attention's
/// projections, the MLP, the LM head; needs kInt8 weights), MaxWorkers{n},
/// LmHead::kTied (default kSeparate), Activation::kGeGlu (default kSwiGlu; gated only).
template <std::size_t kVocab_, std::size_t kDModel_, std::size_t kLayers_, std::size_t kHeads_,
          std::size_t kKvHeads_, std::size_t kDHead_, std::size_t kDHidden_, std::size_t kTMax_,
          auto... kOptions>
struct DecoderConfig {
  static_assert((internal::is_decoder_option<decltype(kOptions)>() && ...),
                "microattn::DecoderConfig: an option is not a WeightType, CacheType, Compute, "
                "MaxWorkers, LmHead or Activation value");
  static_assert(internal::option_count<LmHead>(kOptions...) <= 1 &&
                    internal::option_count<Activation>(kOptions...) <= 1,
                "microattn::DecoderConfig: each option may be given once");
  static_assert(kVocab_ >= 1 && kLayers_ >= 1, "microattn::DecoderConfig: empty model");
  static_assert(kVocab_ <= (std::size_t{1} << 24) && kLayers_ <= 256,
                "microattn::DecoderConfig: vocabulary or layer count too large");
  static constexpr std::size_t kVocab = kVocab_, kDModel = kDModel_, kLayers = kLayers_;
  static constexpr std::size_t kDHidden = kDHidden_, kTMax = kTMax_;
  static constexpr WeightType kWeightType =
      internal::option_or<WeightType>(WeightType::kF32, kOptions...);
  /// The weight matrices' storage format (format.hpp) and the C++ type of their arrays.
  using WeightFormat = internal::weight_format_t<kOptions...>;
  using WeightElem = typename WeightFormat::Elem;
  static constexpr bool kInt8Weights = std::is_same<WeightFormat, format::Qc8>::value;
  static constexpr std::size_t kMaxWorkers =
      static_cast<std::size_t>(internal::option_or<MaxWorkers>(MaxWorkers{1}, kOptions...));
  static constexpr bool kTiedHead =
      internal::option_or<LmHead>(LmHead::kSeparate, kOptions...) == LmHead::kTied;
  static constexpr Activation kAct =
      internal::option_or<Activation>(Activation::kSwiGlu, kOptions...);
  static_assert(is_gated(kAct), "microattn::DecoderConfig: the MLP is gated (kSwiGlu, kGeGlu)");
  static constexpr Compute kCompute = internal::option_or<Compute>(Compute::kF32, kOptions...);
  /// The blocks' own configurations.
  using Attn = Config<kTMax_, kDModel_, kHeads_, kKvHeads_, kDHead_, Rope::kYes, kWeightType,
                      internal::option_or<CacheType>(CacheType::kF32, kOptions...), kCompute,
                      MaxWorkers{kMaxWorkers}>;
  using Ffn = MlpConfig<kDModel_, kDHidden_, kAct, kWeightType, kCompute, MaxWorkers{kMaxWorkers}>;
  using Head = LinearConfig<kDModel_, kVocab_, kWeightType, kCompute, MaxWorkers{kMaxWorkers}>;
};

/// The weights of one block: views over caller arrays (flash). Set attn.layout (the all-zero
/// struct says kInOut) and mlp.layout; PyTorch's matrices are kOutIn.
template <class DCfg>
struct DecoderLayerWeights {
  const float* attn_norm = nullptr;  ///< [d_model], RMSNorm before the attention
  Weights<typename DCfg::Attn> attn{WeightLayout::kInOut};
  const float* mlp_norm = nullptr;  ///< [d_model], RMSNorm before the MLP
  MlpWeights<typename DCfg::Ffn> mlp{};
};

/// The weights of a Decoder and the model's settings: views over caller arrays (flash). The
/// embedding is [vocab][d_model] (int8: a scale per token row); the LM head [vocab][d_model]
/// (kOutIn, PyTorch's lm_head.weight; int8: a scale per token row) is unused with
/// LmHead::kTied (the embedding is the head). norm_eps has no default (models differ: 1e-5
/// LLaMA 2, 1e-6 LLaMA 1 and Qwen): 0 is refused. decoder_weights_from_blob() fills it all
/// from a model file.
template <class DCfg>
struct DecoderWeights {
  using Elem = typename DCfg::WeightElem;
  const Elem* embed = nullptr;
  const float* s_embed = nullptr;
  const Elem* head = nullptr;
  const float* s_head = nullptr;
  const float* norm = nullptr;  ///< [d_model], the final RMSNorm
  DecoderLayerWeights<DCfg> layers[DCfg::kLayers] = {};
  float rope_base = 0.0f;  ///< every layer's RoPE base (0: 10000)
  /// kAdjacent: Meta's LLaMA code; kHalfSplit: Hugging Face checkpoints.
  RopePairing rope_pairing = RopePairing::kAdjacent;
  std::size_t rotary_dims = 0;  ///< rotated dimensions of each head (0: all)
  float norm_eps = 0.0f;        ///< every RMSNorm's epsilon (required: > 0)
  /// The context the model was trained for (0: not known); a Decoder's T_max may be any value
  /// up to it, not above.
  std::size_t trained_context = 0;

  /// kOk; kNullPointer (an array the configuration needs is null); kBadArgument (a layout that
  /// is not a WeightLayout value, eps not positive and finite, a negative or non-finite RoPE
  /// base, T_max above trained_context). Checked on the bits: holds under fast-math.
  Status check() const noexcept {
    using Record = Matrix<typename DCfg::WeightFormat>;
    if (!embedding().complete() || !norm) return Status::kNullPointer;
    if (!DCfg::kTiedHead && !Record{head, s_head}.complete()) return Status::kNullPointer;
    for (const auto& l : layers) {
      if (!l.attn_norm || !l.mlp_norm) return Status::kNullPointer;
      if (const Status s = l.attn.check(); s != Status::kOk) return s;
      if (const Status s = l.mlp.check(); s != Status::kOk) return s;
    }
    if (!internal::finite_bits(norm_eps) || !(norm_eps > 0.0f) ||
        !internal::finite_bits(rope_base) || rope_base < 0.0f)
      return Status::kBadArgument;
    if (trained_context != 0 && trained_context < DCfg::kTMax) return Status::kBadArgument;
    return Status::kOk;
  }
  /// The RoPE every layer applies.
  RopeConfig rope() const noexcept {
    return RopeConfig{true, rope_base > 0.0f ? rope_base : 10000.0f, rope_pairing, rotary_dims, 0};
  }
  float eps() const noexcept { return norm_eps; }
  /// The embedding as a matrix record ([vocab][d_model], a scale per token row when scaled).
  constexpr Matrix<typename DCfg::WeightFormat> embedding() const noexcept {
    return {embed, s_embed};
  }
  /// The LM head as a Linear layer's weights (the embedding when tied).
  LinearWeights<typename DCfg::Head> head_weights() const noexcept {
    LinearWeights<typename DCfg::Head> h;
    h.layout = WeightLayout::kOutIn;
    h.w = DCfg::kTiedHead ? embed : head;
    h.s = DCfg::kTiedHead ? s_embed : s_head;
    return h;
  }
  /// True when [p, p + bytes) overlaps a weight array.
  bool overlaps(const void* p, std::size_t bytes) const noexcept {
    constexpr std::size_t V = DCfg::kVocab, DM = DCfg::kDModel;
    // The embedding is [vocab][d_model] with a scale per token row: kOutIn's shape.
    if (embedding().overlaps(p, bytes, WeightLayout::kOutIn, DM, V) ||
        internal::overlaps(p, bytes, norm, DM * sizeof(float)) || head_weights().overlaps(p, bytes))
      return true;
    for (const auto& l : layers)
      if (internal::overlaps(p, bytes, l.attn_norm, DM * sizeof(float)) ||
          internal::overlaps(p, bytes, l.mlp_norm, DM * sizeof(float)) ||
          internal::overlaps_weights(l.attn, p, bytes) || l.mlp.overlaps(p, bytes))
        return true;
    return false;
  }
};

namespace internal {
/// Version 1's tensors in order (docs/model-format.md): each at the next 16-byte offset,
/// bounds-checked.
class BlobCursor {
 public:
  BlobCursor(const unsigned char* base, std::size_t bytes) noexcept : base_(base), bytes_(bytes) {}
  template <class E>
  const E* take(std::size_t count) noexcept {
    pos_ = (pos_ + 15u) & ~std::size_t{15};
    if (!ok_ || pos_ > bytes_ || count > (bytes_ - pos_) / sizeof(E)) {
      ok_ = false;
      return nullptr;
    }
    const E* p = reinterpret_cast<const E*>(base_ + pos_);
    pos_ += count * sizeof(E);
    return p;
  }
  /// A matrix [out][in] in format Fmt (a scaled format: followed by its scales).
  template <class Fmt>
  const typename Fmt::Elem* matrix(std::size_t out, std::size_t in, const float** scales) noexcept {
    using T = FormatTraits<Fmt>;
    const auto* m = take<typename Fmt::Elem>(T::elem_offset(out * in));
    if (T::kScaled) *scales = take<float>(T::scale_count(in, out));
    return m;
  }
  bool ok() const noexcept { return ok_; }
  std::size_t end() const noexcept { return (pos_ + 15u) & ~std::size_t{15}; }

 private:
  const unsigned char* base_;
  std::size_t bytes_;
  std::size_t pos_ = 64;  // after the header
  bool ok_ = true;
};

/// The value DCfg requires of a field that must match it exactly (true), or false for a field
/// the file chooses (the context, RoPE, epsilon) or one DCfg does not know.
template <class DCfg>
bool decoder_exact_field(std::uint32_t key, std::uint32_t* v) noexcept {
  using A = typename DCfg::Attn;
  switch (key) {
    case kKeyArchitecture:
      *v = 1;
      return true;
    case kKeyVocab:
      *v = static_cast<std::uint32_t>(DCfg::kVocab);
      return true;
    case kKeyDModel:
      *v = static_cast<std::uint32_t>(DCfg::kDModel);
      return true;
    case kKeyLayers:
      *v = static_cast<std::uint32_t>(DCfg::kLayers);
      return true;
    case kKeyHeads:
      *v = static_cast<std::uint32_t>(A::kHeads);
      return true;
    case kKeyKvHeads:
      *v = static_cast<std::uint32_t>(A::kKvHeads);
      return true;
    case kKeyDHead:
      *v = static_cast<std::uint32_t>(A::kDHead);
      return true;
    case kKeyDHidden:
      *v = static_cast<std::uint32_t>(DCfg::kDHidden);
      return true;
    case kKeyTiedHead:
      *v = DCfg::kTiedHead ? 1u : 0u;
      return true;
    case kKeyActivation:
      *v = static_cast<std::uint32_t>(DCfg::kAct);
      return true;
    case kKeyWeightType:
      *v = static_cast<std::uint32_t>(DCfg::kWeightType);  // (WeightType's values: 0 .. 3)
      return true;
    default:
      return false;
  }
}

/// A field the file chooses, checked and stored into *w; false (and *why) when out of range.
template <class DCfg>
bool decoder_chosen_field(std::uint32_t key, std::uint32_t a, DecoderWeights<DCfg>* w,
                          ModelCheck* why) noexcept {
  const float f = bits_float(a);
  const bool positive = finite_bits(f) && f > 0.0f;
  switch (key) {
    case kKeyTrainedContext:
      if (a < DCfg::kTMax)
        return refuse(why, ModelProblem::kFieldDiffers, key,
                      static_cast<std::uint32_t>(DCfg::kTMax), a);
      w->trained_context = a;
      return true;
    case kKeyRopePairing:
      w->rope_pairing = a == 1 ? RopePairing::kAdjacent : RopePairing::kHalfSplit;
      return a <= 1 || refuse(why, ModelProblem::kBadValue, key, 0, a);
    case kKeyRopeBase:
      w->rope_base = f;
      return positive || refuse(why, ModelProblem::kBadValue, key, 0, a);
    case kKeyNormEps:
      w->norm_eps = f;
      return positive || refuse(why, ModelProblem::kBadValue, key, 0, a);
    case kKeyRotaryDims:
      w->rotary_dims = a;
      return (a % 2 == 0 && a <= DCfg::Attn::kDHead) ||
             refuse(why, ModelProblem::kBadValue, key, 0, a);
    case kKeyContext:  // (at most t_max: decoder_fields_v2 checks once both are read)
      if (a < DCfg::kTMax)
        return refuse(why, ModelProblem::kFieldDiffers, key,
                      static_cast<std::uint32_t>(DCfg::kTMax), a);
      return true;
    default:
      return refuse(why, ModelProblem::kUnknownField, key);
  }
}

/// Version 2's fields into *w: every key known, none twice, every required one there, each
/// one's type and value right (docs/model-format.md, "Fields").
template <class DCfg>
bool decoder_fields_v2(const ModelFileV2& f, DecoderWeights<DCfg>* w, ModelCheck* why) noexcept {
  std::uint32_t seen = 0, context = 0;
  for (std::uint32_t k = 0; k < f.fields; ++k) {
    const std::size_t at = f.field_at + 16u * k;
    const std::uint32_t key = f.word(at, 0), type = f.word(at, 1), a = f.word(at, 2);
    if (key & kModelKeyInfo) {  // described, not computed: its range must lie in the file
      const std::uint32_t n = f.word(at, 3);
      if (type == kFieldRange && (a > f.total || n > f.total - a))
        return refuse(why, ModelProblem::kBadValue, key, 0, a);
      continue;
    }
    if (key == 0 || key > kKeyContext || key == kKeyWeightType)
      return refuse(why, ModelProblem::kUnknownField, key);
    if (key == kKeyContext) context = a;
    if ((seen >> key) & 1u) return refuse(why, ModelProblem::kDuplicateField, key);
    seen |= 1u << key;
    const std::uint32_t want_type =
        key == kKeyRopeBase || key == kKeyNormEps ? kFieldF32 : kFieldU32;
    if (type != want_type) return refuse(why, ModelProblem::kBadValue, key, want_type, type);
    std::uint32_t v = 0;
    if (decoder_exact_field<DCfg>(key, &v)) {
      if (a != v) return refuse(why, ModelProblem::kFieldDiffers, key, v, a);
    } else if (!decoder_chosen_field<DCfg>(key, a, w, why)) {
      return false;
    }
  }
  for (std::uint32_t key = kKeyArchitecture; key <= kKeyNormEps; ++key)
    if (((seen >> key) & 1u) == 0) return refuse(why, ModelProblem::kMissingField, key);
  if (context > w->trained_context)
    return refuse(why, ModelProblem::kBadValue, kKeyContext,
                  static_cast<std::uint32_t>(w->trained_context), context);
  return true;
}

/// Where a version-2 tensor goes in DecoderWeights: a matrix (elements and scales) or an fp32
/// vector, and its shape (rows = outputs, cols = inputs; a vector is [n][1]).
template <class DCfg>
struct TensorSlot {
  const typename DCfg::WeightElem** m = nullptr;
  const float** s = nullptr;
  const float** v = nullptr;
  std::size_t rows = 0, cols = 0;
};

template <class DCfg>
TensorSlot<DCfg> decoder_slot(DecoderWeights<DCfg>* w, std::uint32_t role,
                              std::uint32_t layer) noexcept {
  constexpr std::size_t V = DCfg::kVocab, DM = DCfg::kDModel, DH = DCfg::kDHidden;
  constexpr std::size_t Q = DCfg::Attn::kQDim, KV = DCfg::Attn::kKvDim;
  const bool global = role == kTensorEmbed || role == kTensorNorm || role == kTensorHead;
  if (global != (layer == kModelNoLayer) || (!global && layer >= DCfg::kLayers)) return {};
  auto& l = w->layers[global ? 0 : layer];
  auto& a = l.attn;
  auto& p = l.mlp;
  switch (role) {
    case kTensorEmbed:
      return {&w->embed, &w->s_embed, nullptr, V, DM};
    case kTensorAttnNorm:
      return {nullptr, nullptr, &l.attn_norm, DM, 1};
    case kTensorQ:
      return {&a.w_q, &a.s_q, nullptr, Q, DM};
    case kTensorK:
      return {&a.w_k, &a.s_k, nullptr, KV, DM};
    case kTensorV:
      return {&a.w_v, &a.s_v, nullptr, KV, DM};
    case kTensorO:
      return {&a.w_o, &a.s_o, nullptr, DM, Q};
    case kTensorMlpNorm:
      return {nullptr, nullptr, &l.mlp_norm, DM, 1};
    case kTensorGate:
      return {&p.w_gate, &p.s_gate, nullptr, DH, DM};
    case kTensorUp:
      return {&p.w_up, &p.s_up, nullptr, DH, DM};
    case kTensorDown:
      return {&p.w_down, &p.s_down, nullptr, DM, DH};
    case kTensorNorm:
      return {nullptr, nullptr, &w->norm, DM, 1};
    case kTensorHead:
      if (DCfg::kTiedHead) return {};
      return {&w->head, &w->s_head, nullptr, V, DM};
    default:
      return {};
  }
}

/// A byte range [at, at + n) of the file: 16-aligned, after the header, inside the file.
inline bool range_fits(std::uint32_t at, std::uint32_t n, std::uint32_t total) noexcept {
  return at % 16 == 0 && at >= 64 && at <= total && n <= total - at;
}

/// One version-2 tensor record into *w: a role DCfg computes, not given before, the format,
/// shape and byte counts DCfg's arrays have, inside the file.
template <class DCfg>
bool decoder_tensor_v2(const ModelFileV2& f, const TensorRecord& r, DecoderWeights<DCfg>* w,
                       ModelCheck* why) noexcept {
  using T = FormatTraits<typename DCfg::WeightFormat>;
  using Elem = typename DCfg::WeightElem;
  const TensorSlot<DCfg> slot = decoder_slot<DCfg>(w, r.id & 0xffffu, r.id >> 16);
  if (!slot.m && !slot.v) return refuse(why, ModelProblem::kUnknownTensor, r.id);
  if (slot.m ? *slot.m != nullptr : *slot.v != nullptr)
    return refuse(why, ModelProblem::kDuplicateTensor, r.id);
  const std::uint32_t code = slot.m ? T::kDesc.code() : format::F32::kDesc.code();
  if (r.format != code) return refuse(why, ModelProblem::kTensorFormat, r.id, code, r.format);
  if (r.rows != slot.rows || r.cols != slot.cols)
    return refuse(why, ModelProblem::kTensorShape, r.id,
                  static_cast<std::uint32_t>(slot.rows << 16 | slot.cols), r.rows << 16 | r.cols);
  const std::size_t n = slot.rows * slot.cols;
  const std::size_t data_bytes = slot.m ? T::bytes(n) : n * sizeof(float);
  const std::size_t scale_bytes = slot.m ? T::scale_count(slot.cols, slot.rows) * sizeof(float) : 0;
  if (r.data_bytes != data_bytes || r.scales_bytes != scale_bytes ||
      !range_fits(r.data, r.data_bytes, f.total) ||
      (scale_bytes ? !range_fits(r.scales, r.scales_bytes, f.total) : r.scales != 0))
    return refuse(why, ModelProblem::kTensorBytes, r.id);
  if (slot.v) {
    *slot.v = reinterpret_cast<const float*>(f.b + r.data);
    return true;
  }
  *slot.m = reinterpret_cast<const Elem*>(f.b + r.data);
  if (scale_bytes) *slot.s = reinterpret_cast<const float*>(f.b + r.scales);
  return true;
}

/// The first tensor DCfg needs that a version-2 file did not give (its id), or 0.
template <class DCfg>
std::uint32_t decoder_missing_tensor(DecoderWeights<DCfg>* w) noexcept {
  const std::uint32_t none = kModelNoLayer;
  if (!w->embed) return model_tensor_id(kTensorEmbed, none);
  for (std::uint32_t l = 0; l < DCfg::kLayers; ++l)
    for (std::uint32_t role = kTensorAttnNorm; role <= kTensorDown; ++role) {
      const TensorSlot<DCfg> s = decoder_slot<DCfg>(w, role, l);
      if (s.m ? *s.m == nullptr : *s.v == nullptr) return model_tensor_id(role, l);
    }
  if (!w->norm) return model_tensor_id(kTensorNorm, none);
  if (!DCfg::kTiedHead && !w->head) return model_tensor_id(kTensorHead, none);
  return 0;
}

/// A version-2 file into *w (docs/model-format.md): its tables, fields and tensors.
template <class DCfg>
bool decoder_weights_v2(const unsigned char* b, DecoderWeights<DCfg>* w, ModelCheck* why) noexcept {
  ModelFileV2 f;
  if (!model_file_v2(b, &f, why) || !decoder_fields_v2<DCfg>(f, w, why)) return false;
  for (std::uint32_t k = 0; k < f.tensors; ++k)
    if (!decoder_tensor_v2<DCfg>(f, f.tensor(k), w, why)) return false;
  if (const std::uint32_t id = decoder_missing_tensor<DCfg>(w))
    return refuse(why, ModelProblem::kMissingTensor, id);
  for (auto& l : w->layers) l.attn.layout = l.mlp.layout = WeightLayout::kOutIn;
  return true;
}

/// The header of a version-1 file against DCfg (docs/model-format.md, "Version 1"): every
/// dimension and the weight type exactly, T_max at most the trained context, the head's tying
/// and the activation; its RoPE and epsilon into *w.
template <class DCfg>
bool decoder_header_v1(const unsigned char* b, DecoderWeights<DCfg>* w, ModelCheck* why) noexcept {
  for (std::uint32_t i = 3; i <= 10; ++i) {  // words 3 .. 10: weight type, then the dimensions
    const std::uint32_t key = i == 3 ? kKeyWeightType : i - 2;
    std::uint32_t v = 0;
    (void)decoder_exact_field<DCfg>(key, &v);
    if (blob_word(b, i) != v)
      return refuse(why, ModelProblem::kFieldDiffers, key, v, blob_word(b, i));
  }
  const std::uint32_t flags = blob_word(b, 12);
  std::uint32_t tied = 0, act = 0;
  (void)decoder_exact_field<DCfg>(kKeyTiedHead, &tied);
  (void)decoder_exact_field<DCfg>(kKeyActivation, &act);
  if ((flags & ~std::uint32_t{0xff03}) != 0) return refuse(why, ModelProblem::kBadHeader, 12);
  if ((flags & 1u) != tied)
    return refuse(why, ModelProblem::kFieldDiffers, kKeyTiedHead, tied, flags & 1u);
  if (((flags >> 8) & 0xffu) != act)
    return refuse(why, ModelProblem::kFieldDiffers, kKeyActivation, act, (flags >> 8) & 0xffu);
  return decoder_chosen_field<DCfg>(kKeyTrainedContext, blob_word(b, 11), w, why) &&
         decoder_chosen_field<DCfg>(kKeyRopePairing, (flags >> 1) & 1u, w, why) &&
         decoder_chosen_field<DCfg>(kKeyRopeBase, blob_word(b, 13), w, why) &&
         decoder_chosen_field<DCfg>(kKeyNormEps, blob_word(b, 14), w, why);
}

/// A version-1 file's tensors, in their fixed order, into *w.
template <class DCfg>
bool decoder_weights_v1(const unsigned char* b, DecoderWeights<DCfg>* w, ModelCheck* why) noexcept {
  if (!decoder_header_v1<DCfg>(b, w, why)) return false;
  using A = typename DCfg::Attn;
  using E = typename DCfg::WeightFormat;
  constexpr std::size_t DM = DCfg::kDModel, DH = DCfg::kDHidden;
  const std::uint32_t total = blob_word(b, 15);
  BlobCursor c(b, total);
  w->embed = c.matrix<E>(DCfg::kVocab, DM, &w->s_embed);
  for (auto& l : w->layers) {
    l.attn.layout = l.mlp.layout = WeightLayout::kOutIn;
    l.attn_norm = c.take<float>(DM);
    l.attn.w_q = c.matrix<E>(A::kQDim, DM, &l.attn.s_q);
    l.attn.w_k = c.matrix<E>(A::kKvDim, DM, &l.attn.s_k);
    l.attn.w_v = c.matrix<E>(A::kKvDim, DM, &l.attn.s_v);
    l.attn.w_o = c.matrix<E>(DM, A::kQDim, &l.attn.s_o);
    l.mlp_norm = c.take<float>(DM);
    l.mlp.w_gate = c.matrix<E>(DH, DM, &l.mlp.s_gate);
    l.mlp.w_up = c.matrix<E>(DH, DM, &l.mlp.s_up);
    l.mlp.w_down = c.matrix<E>(DM, DH, &l.mlp.s_down);
  }
  w->norm = c.take<float>(DM);
  if (!DCfg::kTiedHead) w->head = c.matrix<E>(DCfg::kVocab, DM, &w->s_head);
  if (!c.ok() || c.end() != total) return refuse(why, ModelProblem::kBadHeader, 15);
  return true;
}
}  // namespace internal

/// Points *out at the tensors of a model file (docs/model-format.md, versions 1 and 2;
/// tools/export_pytorch.py --kind decoder writes it) and sets its RoPE and epsilon: views into
/// the blob, which must stay (flash). Every field and tensor must be what DCfg computes
/// (dimensions, formats, tied head, activation), but for DCfg's T_max, which may be any value
/// up to the context the model was trained for (recorded in out->trained_context).
/// @return kOk; kNullPointer (blob or out null); kBadArgument (the file is misaligned, short,
///         or not for DCfg: *why, when given, says which field or tensor and how). *out is
///         written only on kOk; *why always (status kOk on success).
template <class DCfg>
Status decoder_weights_from_blob(const void* blob, std::size_t bytes, DecoderWeights<DCfg>* out,
                                 ModelCheck* why = nullptr) noexcept {
  if (why) *why = ModelCheck{};
  if (!blob || !out) {
    if (why) why->status = Status::kNullPointer;
    return Status::kNullPointer;
  }
  const auto* b = static_cast<const unsigned char*>(blob);
  DecoderWeights<DCfg> w;
  std::uint32_t version = 0;
  if (!internal::model_file_version(b, bytes, &version, why) ||
      !(version == 1 ? internal::decoder_weights_v1<DCfg>(b, &w, why)
                     : internal::decoder_weights_v2<DCfg>(b, &w, why)))
    return Status::kBadArgument;
  if (const Status s = w.check(); s != Status::kOk) {
    if (why) *why = ModelCheck{Status::kBadArgument, ModelProblem::kNone, 0, 0, 0};
    return Status::kBadArgument;
  }
  *out = w;
  return Status::kOk;
}

/// A decoder-only language model: tokens in, next-token logits out, with a KV cache per layer.
/// Per block (pre-norm): x += attn(rms_norm(x)), x += mlp(rms_norm(x)); then logits =
/// head(rms_norm(x)). Prefill runs kChunk tokens at a time through every layer (working memory
/// grows with kChunk). Fixed size, no heap, sizeof == ram_bytes(), the all-zero object valid
/// (no weights: kNullPointer); results bit-identical for any worker count.
template <class DCfg, class Arch = DefaultArch,
          std::size_t kChunk = (DCfg::kTMax < 16 ? DCfg::kTMax : 16)>
class Decoder {
  static_assert(kChunk >= 1 && kChunk <= DCfg::kTMax, "microattn::Decoder: 1 <= kChunk <= T_max");
  static constexpr std::size_t V = DCfg::kVocab, DM = DCfg::kDModel, L = DCfg::kLayers;

 public:
  using Config = DCfg;
  using AttnLayer = KvAttention<typename DCfg::Attn, Arch, kChunk>;
  using HeadBlock = Linear<typename DCfg::Head, Arch, kChunk>;

  Decoder() = default;
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;
  static constexpr std::size_t ram_bytes() noexcept { return sizeof(Decoder); }
  /// Bytes of the KV caches of all layers.
  static constexpr std::size_t kCacheBytes = L * AttnLayer::kCacheBytes;

  /// Points the model at weights (views) and applies their RoPE and epsilon to every layer.
  /// @return kOk; the weights' check() status; kBadArgument when the RoPE settings are invalid
  ///         or differ from the current ones while tokens are cached. Nothing changes on error.
  [[nodiscard]] Status set_weights(const DecoderWeights<DCfg>& w) noexcept {
    if (const Status s = w.check(); s != Status::kOk) return s;
    if (const Status s = apply_rope(w.rope()); s != Status::kOk) return s;
    w_ = w;
    for (std::size_t l = 0; l < L; ++l) (void)attn_[l].set_weights(w.layers[l].attn);
    (void)head_.set_weights(w.head_weights());
    ready_ = true;
    return Status::kOk;
  }
  /// set_weights() with the weights of a model file (decoder_weights_from_blob: views into it,
  /// which must stay). @return as those two; *why, when given, says why a file was refused.
  [[nodiscard]] Status set_weights_blob(const void* blob, std::size_t bytes,
                                        ModelCheck* why = nullptr) noexcept {
    DecoderWeights<DCfg> w;
    if (const Status s = decoder_weights_from_blob<DCfg>(blob, bytes, &w, why); s != Status::kOk)
      return s;
    const Status s = set_weights(w);
    if (why) why->status = s;
    return s;
  }
  /// Splits every later call over the executor's workers (at most DCfg's MaxWorkers).
  /// @return kOk, or kBadArgument (nothing changed).
  [[nodiscard]] Status set_executor(const Executor& e) noexcept {
    if (const Status s = attn_[0].set_executor(e); s != Status::kOk) return s;
    for (auto& a : attn_) (void)a.set_executor(e);
    (void)ex_.set(e);
    (void)head_.set_executor(e);
    return Status::kOk;
  }
  /// Softmax scale of every layer (default 1/sqrt(d_head)). @return kOk or kBadScale.
  [[nodiscard]] Status set_scale(float scale) noexcept {
    if (const Status s = attn_[0].set_scale(scale); s != Status::kOk) return s;
    for (auto& a : attn_) (void)a.set_scale(scale);
    return Status::kOk;
  }
  float scale() const noexcept { return attn_[0].scale(); }
  /// The RoPE settings in use (those of the weights given to set_weights).
  RopeConfig rope() const noexcept { return attn_[0].rope(); }

  /// Appends T tokens and writes the logits of the last one ([vocab] floats).
  /// @return kOk; kNullPointer (tokens, logits or the weights null); kBadTokenCount (T == 0 or
  ///         T > T_max); kCacheFull (length() + T > T_max); kBadArgument (a token id outside
  ///         0 .. vocab - 1); kOverlap (logits over a weight array or the tokens). Nothing
  ///         changes on error.
  [[nodiscard]] Status prefill(const std::int32_t* tokens, std::size_t T, float* logits) noexcept {
    return run(tokens, T, logits, false);
  }
  /// prefill() that writes the logits of every token: [T][vocab] floats.
  [[nodiscard]] Status prefill_all(const std::int32_t* tokens, std::size_t T,
                                   float* logits) noexcept {
    return run(tokens, T, logits, true);
  }
  /// Appends one token and writes its logits ([vocab] floats). As prefill(&token, 1, logits).
  [[nodiscard]] Status decode(std::int32_t token, float* logits) noexcept {
    return run(&token, 1, logits, true);
  }
  /// Forgets the cached tokens at positions >= length. @return kOk or kBadArgument.
  [[nodiscard]] Status truncate(std::size_t length) noexcept {
    if (length > this->length()) return Status::kBadArgument;
    for (auto& a : attn_) (void)a.truncate(length);
    return Status::kOk;
  }
  /// Empties every cache (weights and settings stay).
  void reset() noexcept {
    for (auto& a : attn_) a.reset();
  }
  /// Tokens in the cache (the position of the next token).
  std::size_t length() const noexcept { return attn_[0].length(); }
  static constexpr std::size_t capacity() noexcept { return DCfg::kTMax; }

  /// Layer `layer`'s attention (layer 0 when layer >= layers), for inspection (export_cache) and
  /// per-layer settings; the weights stay the Decoder's (set_weights replaces them).
  AttnLayer& attention(std::size_t layer) noexcept { return attn_[layer < L ? layer : 0]; }

 private:
  Status apply_rope(const RopeConfig& r) noexcept {
    const RopeConfig cur = attn_[0].rope();
    if (cur.enabled && cur.base == r.base && cur.pairing == r.pairing &&
        cur.rotary_dims == r.rotary_dims && cur.start_position == r.start_position)
      return Status::kOk;
    if (const Status s = attn_[0].set_rope(r); s != Status::kOk) return s;
    for (auto& a : attn_) (void)a.set_rope(r);
    return Status::kOk;
  }
  Status check_run(const std::int32_t* tokens, std::size_t T, const float* logits,
                   bool all) const noexcept {
    if (!tokens || !logits || !ready_) return Status::kNullPointer;
    if (T == 0 || T > DCfg::kTMax) return Status::kBadTokenCount;
    if (length() + T > DCfg::kTMax) return Status::kCacheFull;
    for (std::size_t i = 0; i < T; ++i)
      if (tokens[i] < 0 || static_cast<std::size_t>(tokens[i]) >= V) return Status::kBadArgument;
    // Logits over the tokens would overwrite ids not read yet (prefill runs in chunks).
    const std::size_t lb = (all ? T : 1) * V * sizeof(float);
    if (w_.overlaps(logits, lb) || internal::overlaps(logits, lb, tokens, T * sizeof(*tokens)))
      return Status::kOverlap;
    return Status::kOk;
  }
  Status run(const std::int32_t* tokens, std::size_t T, float* logits, bool all) noexcept {
    if (const Status s = check_run(tokens, T, logits, all); s != Status::kOk) return s;
    for (std::size_t r0 = 0; r0 < T; r0 += kChunk) {
      const std::size_t m = internal::min_size(kChunk, T - r0);
      forward_chunk(tokens + r0, m);
      // Logits of every row (all), or of the sequence's last row only.
      const std::size_t first = all ? 0 : (r0 + m == T ? m - 1 : m);
      if (first < m) logits_of(first, m - first, logits + (all ? r0 * V : 0));
    }
    return Status::kOk;
  }
  /// m tokens (1 .. kChunk) through the embedding and every block: x_ holds their residual
  /// stream after the last block.
  void forward_chunk(const std::int32_t* tokens, std::size_t m) noexcept {
    embed(tokens, m);
    for (std::size_t l = 0; l < L; ++l) {
      const DecoderLayerWeights<DCfg>& lw = w_.layers[l];
      normalise(lw.attn_norm, x_, m);
      const Status a = m == 1 ? attn_[l].decode(n_, t_) : attn_[l].prefill(n_, m, t_);
      MICROATTN_ASSERT(a == Status::kOk);
      add_residual(m);
      normalise(lw.mlp_norm, x_, m);
      ffn_.run(lw.mlp, ex_, n_, m, t_);
      add_residual(m);
      (void)a;
    }
  }
  /// logits[k][vocab] of rows first .. first + k - 1 of the chunk.
  void logits_of(std::size_t first, std::size_t k, float* logits) noexcept {
    normalise(w_.norm, x_ + first * DM, k);
    const Status s = head_.forward(n_, k, logits);
    MICROATTN_ASSERT(s == Status::kOk);
    (void)s;
  }
  void embed(const std::int32_t* tokens, std::size_t m) noexcept {
    for (std::size_t i = 0; i < m; ++i) {
      using F = FormatTraits<typename DCfg::WeightFormat>;
      const std::size_t t = static_cast<std::size_t>(tokens[i]);
      for (std::size_t j = 0; j < DM; ++j) {  // row t of [vocab][d_model] (kOutIn's indices)
        const float s =
            F::kScaled ? w_.s_embed[F::scale_index(WeightLayout::kOutIn, j, t, DM, DCfg::kVocab)]
                       : 1.0f;
        x_[i * DM + j] = F::widen(F::load(w_.embed, t * DM + j), s);
      }
    }
  }
  /// n_ = RMSNorm(x rows) with weight g and the weights' epsilon (checked by set_weights).
  void normalise(const float* g, const float* x, std::size_t m) noexcept {
    kernels::f32_rms_norm_rows(x, DM, n_, DM, m, DM, g, w_.eps());
  }
  void add_residual(std::size_t m) noexcept {
    for (std::size_t i = 0; i < m * DM; ++i) x_[i] += t_[i];
  }

  DecoderWeights<DCfg> w_{};
  bool ready_ = false;
  AttnLayer attn_[L] = {};
  // The blocks of every layer: attention with its cache per layer; one MLP's working memory
  // and the head, each layer's weights passed in the call.
  internal::MlpWork<typename DCfg::Ffn, Arch, kChunk> ffn_{};
  internal::ExecutorSetting<DCfg::Ffn::kMaxWorkers> ex_{};
  HeadBlock head_{};
  alignas(internal::Tiles<Arch>::kAlign) float x_[kChunk * DM] = {};  // residual stream
  alignas(internal::Tiles<Arch>::kAlign) float n_[kChunk * DM] = {};  // normed rows
  alignas(internal::Tiles<Arch>::kAlign) float t_[kChunk * DM] = {};  // a block's output
};

}  // namespace microattn
