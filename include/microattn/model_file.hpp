// SPDX-License-Identifier: Apache-2.0
// microattn vocabulary: the model file (docs/model-format.md) below any model: its header, the
// keyed fields of version 2, its tensor directory, and the report that says which field or
// tensor a file and a configuration disagree on. The Decoder's reader (decoder.hpp) asks it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/status.hpp"

namespace microattn {

/// The keys of a model file's fields (version 2; docs/model-format.md's table). A key with
/// kModelKeyInfo set describes the file without changing what the model computes (a reader
/// may skip it); any other key a reader does not know makes it refuse the file.
enum ModelKey : std::uint32_t {
  kKeyArchitecture = 1,  ///< 1: the LLaMA-style decoder of docs/model-format.md
  kKeyVocab = 2,
  kKeyDModel = 3,
  kKeyLayers = 4,
  kKeyHeads = 5,
  kKeyKvHeads = 6,
  kKeyDHead = 7,
  kKeyDHidden = 8,
  kKeyTrainedContext = 9,  ///< the context the model was trained for (a Decoder's T_max <= it)
  kKeyTiedHead = 10,       ///< 1: the LM head is the embedding
  kKeyActivation = 11,     ///< an Activation value (0 SwiGLU)
  kKeyRopePairing = 12,    ///< 0: half-split (i, i + d/2); 1: adjacent (2i, 2i + 1)
  kKeyRopeBase = 13,       ///< float32, positive and finite
  kKeyNormEps = 14,        ///< float32, positive and finite
  kKeyRotaryDims = 15,     ///< rotated dimensions of each head (0: all; even, <= d_head)
  kKeyWeightType = 16,     ///< version 1's header word 3 (0 fp32, 1 int8); a report's name only
  kKeyContext = 17,        ///< optional: the context exported for (T_max <= it <= t_max)
  kKeyLast = 17,
  kModelKeyInfo = 0x80000000u,
  kKeyTokenizer = kModelKeyInfo | 1u,  ///< a byte range: the tokenizer (the real-model issue)
  kKeySource = kModelKeyInfo | 2u,     ///< a byte range: UTF-8 text naming the source model
};

/// The role of a tensor in a model file's directory (version 2).
enum ModelTensor : std::uint32_t {
  kTensorEmbed = 1,  ///< [vocab][d_model]
  kTensorAttnNorm = 2,
  kTensorQ = 3,
  kTensorK = 4,
  kTensorV = 5,
  kTensorO = 6,
  kTensorMlpNorm = 7,
  kTensorGate = 8,
  kTensorUp = 9,
  kTensorDown = 10,
  kTensorNorm = 11,  ///< the final RMSNorm
  kTensorHead = 12,  ///< [vocab][d_model], only when the head is not tied
  kTensorLast = 12,
};
/// A tensor's id in a report and a directory entry: role | layer << 16 (kModelNoLayer: none).
constexpr std::uint32_t kModelNoLayer = 0xffffu;
constexpr std::uint32_t model_tensor_id(std::uint32_t role, std::uint32_t layer) noexcept {
  return role | layer << 16;
}

/// What a model file and a configuration disagree on (ModelCheck::problem).
enum class ModelProblem : std::uint8_t {
  kNone = 0,
  kNotAligned,       ///< the file does not start on a 16-byte boundary
  kTruncated,        ///< shorter than its header says (found: bytes given, expected: needed)
  kNotModelFile,     ///< no "MALM" magic
  kVersion,          ///< a version this reader does not know (found)
  kBadHeader,        ///< a header word or table outside the file, misaligned, reserved not 0
  kUnknownField,     ///< a field this library cannot compute (key)
  kDuplicateField,   ///< a field given twice (key)
  kMissingField,     ///< a field the model needs is absent (key)
  kFieldDiffers,     ///< a field is not the configuration's value (key, expected, found)
  kBadValue,         ///< a field's value is outside its range (key, found: its bits)
  kUnknownTensor,    ///< a tensor role this library cannot compute, or a layer past the last (key)
  kDuplicateTensor,  ///< a tensor given twice (key: its id)
  kMissingTensor,    ///< a tensor the model needs is absent (key: its id)
  kTensorFormat,     ///< a tensor's format code is not the configuration's (expected, found)
  kTensorShape,      ///< a tensor's rows or columns differ (expected, found: rows << 16 | cols)
  kTensorBytes,      ///< a tensor's data or scales outside the file, misaligned or wrong size
};

/// Why a model file was refused: the first problem found, the field or tensor it is about, and
/// the two values where there are two. status is the reader's result.
struct ModelCheck {
  Status status = Status::kOk;
  ModelProblem problem = ModelProblem::kNone;
  std::uint32_t key = 0;  ///< a ModelKey, or a tensor id (model_tensor_id)
  std::uint32_t expected = 0;
  std::uint32_t found = 0;
};

/// The name docs/model-format.md gives a field key ("d_model"), or "unknown".
inline const char* model_key_name(std::uint32_t key) noexcept {
  static const char* const kNames[] = {
      "unknown",      "architecture", "vocab",    "d_model",     "layers",      "heads",
      "kv_heads",     "d_head",       "d_hidden", "t_max",       "tied_head",   "activation",
      "rope_pairing", "rope_base",    "norm_eps", "rotary_dims", "weight_type", "context"};
  if (key == kKeyTokenizer) return "tokenizer";
  if (key == kKeySource) return "source";
  return key <= kKeyLast ? kNames[key] : kNames[0];
}

/// The name of a tensor role ("q_proj"), or "unknown".
inline const char* model_tensor_name(std::uint32_t role) noexcept {
  static const char* const kNames[] = {"unknown",   "embed",  "attn_norm", "q_proj",    "k_proj",
                                       "v_proj",    "o_proj", "mlp_norm",  "gate_proj", "up_proj",
                                       "down_proj", "norm",   "lm_head"};
  return role <= kTensorLast ? kNames[role] : kNames[0];
}

namespace internal {
/// Appends text to a bounded, always terminated buffer (cap >= 1).
struct TextOut {
  char* buf;
  std::size_t cap;
  std::size_t n = 0;
  void put(const char* s) noexcept {
    for (; *s; ++s)
      if (n + 1 < cap) buf[n++] = *s;
    buf[n] = '\0';
  }
  void put(std::uint32_t v) noexcept {
    char d[11];
    std::size_t k = 0;
    do d[k++] = static_cast<char>('0' + v % 10);
    while ((v /= 10) != 0);
    char s[12];
    for (std::size_t i = 0; i < k; ++i) s[i] = d[k - 1 - i];
    s[k] = '\0';
    put(static_cast<const char*>(s));
  }
};
inline void put_subject(TextOut& t, const ModelCheck& c) noexcept {
  const std::uint32_t role = c.key & 0xffffu, layer = c.key >> 16;
  switch (c.problem) {
    case ModelProblem::kUnknownTensor:
    case ModelProblem::kDuplicateTensor:
    case ModelProblem::kMissingTensor:
    case ModelProblem::kTensorFormat:
    case ModelProblem::kTensorShape:
    case ModelProblem::kTensorBytes:
      t.put("tensor ");
      t.put(model_tensor_name(role));
      if (role == 0 || role > kTensorLast) {
        t.put(" ");
        t.put(role);
      }
      if (layer != kModelNoLayer) {
        t.put(" of layer ");
        t.put(layer);
      }
      return;
    default:
      t.put("field ");
      t.put(model_key_name(c.key));
      if (c.key == 0 || (c.key > kKeyLast && (c.key & kModelKeyInfo) == 0)) {
        t.put(" ");
        t.put(c.key);
      }
  }
}
}  // namespace internal

/// Writes a one-line English reason for c into buf (at most cap bytes with the terminating
/// 0; nothing when buf is null or cap is 0), e.g. "field d_model: the file has 17, the
/// configuration 16". Returns the length written (without the 0).
inline std::size_t model_check_text(const ModelCheck& c, char* buf, std::size_t cap) noexcept {
  if (!buf || cap == 0) return 0;
  internal::TextOut t{buf, cap};
  buf[0] = '\0';
  switch (c.problem) {
    case ModelProblem::kNone:
      t.put(c.status == Status::kOk ? "ok" : to_string(c.status));
      break;
    case ModelProblem::kNotAligned:
      t.put("the file is not 16-byte aligned");
      break;
    case ModelProblem::kTruncated:
      t.put("the file is ");
      t.put(c.found);
      t.put(" bytes, its header says ");
      t.put(c.expected);
      break;
    case ModelProblem::kNotModelFile:
      t.put("not a microattn model file (no MALM magic)");
      break;
    case ModelProblem::kVersion:
      t.put("model file version ");
      t.put(c.found);
      t.put(" is not read by this library");
      break;
    case ModelProblem::kBadHeader:
      t.put("header word ");
      t.put(c.key);
      t.put(" is invalid");
      break;
    default:
      internal::put_subject(t, c);
      switch (c.problem) {
        case ModelProblem::kUnknownField:
        case ModelProblem::kUnknownTensor:
          t.put(": not computed by this library");
          break;
        case ModelProblem::kDuplicateField:
        case ModelProblem::kDuplicateTensor:
          t.put(": given twice");
          break;
        case ModelProblem::kMissingField:
        case ModelProblem::kMissingTensor:
          t.put(": missing");
          break;
        case ModelProblem::kBadValue:
          t.put(": value out of range");
          break;
        case ModelProblem::kTensorBytes:
          t.put(": data outside the file, misaligned or sized wrong");
          break;
        default:
          t.put(c.problem == ModelProblem::kTensorFormat ? ": format code " : ": the file has ");
          t.put(c.found);
          t.put(c.problem == ModelProblem::kTensorFormat ? ", the configuration's is "
                                                         : ", the configuration ");
          t.put(c.expected);
      }
  }
  return t.n;
}

namespace internal {
/// Little-endian word i and float word i of a file (any alignment, any host byte order).
inline std::uint32_t blob_word(const unsigned char* b, std::size_t i) noexcept {
  return static_cast<std::uint32_t>(b[4 * i]) | static_cast<std::uint32_t>(b[4 * i + 1]) << 8 |
         static_cast<std::uint32_t>(b[4 * i + 2]) << 16 |
         static_cast<std::uint32_t>(b[4 * i + 3]) << 24;
}
inline float bits_float(std::uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// A field record of version 2: 16 bytes, {key, type, a, b}.
enum FieldType : std::uint32_t { kFieldU32 = 0, kFieldF32 = 1, kFieldRange = 2 };
/// A tensor record of version 2: 32 bytes, {id, format code, rows, cols, data offset, data
/// bytes, scales offset, scales bytes}.
struct TensorRecord {
  std::uint32_t id, format, rows, cols, data, data_bytes, scales, scales_bytes;
};

/// The header of a version-2 file (docs/model-format.md): words 0..15. Checks the magic,
/// the version, the sizes and that both tables lie inside the file; the tables' positions.
struct ModelFileV2 {
  const unsigned char* b = nullptr;
  std::uint32_t total = 0, fields = 0, field_at = 0, tensors = 0, tensor_at = 0;

  [[nodiscard]] std::uint32_t word(std::size_t at, std::size_t i) const noexcept {
    return blob_word(b + at, i);
  }
  [[nodiscard]] TensorRecord tensor(std::size_t k) const noexcept {
    const std::size_t at = tensor_at + 32 * k;
    return {word(at, 0), word(at, 1), word(at, 2), word(at, 3),
            word(at, 4), word(at, 5), word(at, 6), word(at, 7)};
  }
};

inline bool refuse(ModelCheck* c, ModelProblem p, std::uint32_t key, std::uint32_t expected = 0,
                   std::uint32_t found = 0) noexcept {
  if (c) *c = ModelCheck{Status::kBadArgument, p, key, expected, found};
  return false;
}

/// A table of `count` records of `size` bytes at `at` lies inside [64, total) and is 16-aligned.
inline bool table_fits(std::uint32_t at, std::uint32_t count, std::uint32_t size,
                       std::uint32_t total) noexcept {
  return at % 16 == 0 && at >= 64 && at <= total && count <= (total - at) / size;
}

/// The checks every version shares (alignment, magic, version, size): *version on success.
inline bool model_file_version(const unsigned char* b, std::size_t bytes, std::uint32_t* version,
                               ModelCheck* why) noexcept {
  const std::uint32_t given = bytes > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(bytes);
  if (reinterpret_cast<std::uintptr_t>(b) % 16 != 0)
    return refuse(why, ModelProblem::kNotAligned, 0);
  if (bytes < 64) return refuse(why, ModelProblem::kTruncated, 0, 64, given);
  if (blob_word(b, 0) != 0x4D4C414Du) return refuse(why, ModelProblem::kNotModelFile, 0);
  const std::uint32_t v = blob_word(b, 1);
  if (v != 1 && v != 2) return refuse(why, ModelProblem::kVersion, 1, 2, v);
  const std::size_t total_word = v == 1 ? 15 : 3;
  const std::uint32_t total = blob_word(b, total_word);
  if (blob_word(b, 2) != 64) return refuse(why, ModelProblem::kBadHeader, 2);
  if (total > bytes) return refuse(why, ModelProblem::kTruncated, 0, total, given);
  if (total < 64 || total % 16 != 0)
    return refuse(why, ModelProblem::kBadHeader, static_cast<std::uint32_t>(total_word));
  *version = v;
  return true;
}

/// The version-2 header's tables (after model_file_version gave 2).
inline bool model_file_v2(const unsigned char* b, ModelFileV2* f, ModelCheck* why) noexcept {
  f->b = b;
  f->total = blob_word(b, 3);
  f->fields = blob_word(b, 4);
  f->field_at = blob_word(b, 5);
  f->tensors = blob_word(b, 6);
  f->tensor_at = blob_word(b, 7);
  for (std::size_t i = 8; i < 16; ++i)
    if (blob_word(b, i) != 0)
      return refuse(why, ModelProblem::kBadHeader, static_cast<std::uint32_t>(i));
  if (!table_fits(f->field_at, f->fields, 16, f->total))
    return refuse(why, ModelProblem::kBadHeader, 5);
  if (!table_fits(f->tensor_at, f->tensors, 32, f->total))
    return refuse(why, ModelProblem::kBadHeader, 7);
  return true;
}
}  // namespace internal

/// The byte range a version-2 file gives under key (kKeyTokenizer, kKeySource): *data and
/// *bytes point into blob (16-aligned when the exporter wrote it). @return kOk; kNullPointer;
/// kBadArgument (not a valid version-2 file, no such field, or its range outside the file:
/// outputs untouched; *why, when given, says which).
inline Status model_file_range(const void* blob, std::size_t bytes, std::uint32_t key,
                               const unsigned char** data, std::size_t* n,
                               ModelCheck* why = nullptr) noexcept {
  if (!blob || !data || !n) return Status::kNullPointer;
  const auto* b = static_cast<const unsigned char*>(blob);
  std::uint32_t version = 0;
  internal::ModelFileV2 f;
  if (!internal::model_file_version(b, bytes, &version, why)) return Status::kBadArgument;
  if (version != 2) {
    (void)internal::refuse(why, ModelProblem::kVersion, 1, 2, version);
    return Status::kBadArgument;
  }
  if (!internal::model_file_v2(b, &f, why)) return Status::kBadArgument;
  for (std::uint32_t k = 0; k < f.fields; ++k) {
    const std::size_t at = f.field_at + 16u * k;
    if (f.word(at, 0) != key) continue;
    const std::uint32_t a = f.word(at, 2), len = f.word(at, 3);
    if (f.word(at, 1) != internal::kFieldRange || a > f.total || len > f.total - a) {
      (void)internal::refuse(why, ModelProblem::kBadValue, key, 0, a);
      return Status::kBadArgument;
    }
    *data = b + a;
    *n = len;
    return Status::kOk;
  }
  (void)internal::refuse(why, ModelProblem::kMissingField, key);
  return Status::kBadArgument;
}

}  // namespace microattn
