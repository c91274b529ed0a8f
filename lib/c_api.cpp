// SPDX-License-Identifier: Apache-2.0
// microattn: the C interface's compiled part (the per-layer functions are defined by the
// macros of microattn/c_api.hpp in the user's C++ file). Proves here, at compile time, that
// the C constants are the C++ enumerators' values.
#include <cstdint>
#include <type_traits>

#include "microattn/microattn.h"
#include "microattn/model_file.hpp"
#include "microattn/rope_config.hpp"
#include "microattn/status.hpp"
#include "microattn/tokenizer.hpp"
#include "microattn/weights.hpp"

namespace {

using microattn::Status;
constexpr bool same(int c, Status s) { return c == static_cast<int>(s); }
static_assert(same(MICROATTN_OK, Status::kOk), "MICROATTN_OK != Status::kOk");
static_assert(same(MICROATTN_NULL_POINTER, Status::kNullPointer),
              "MICROATTN_NULL_POINTER != Status::kNullPointer");
static_assert(same(MICROATTN_BAD_TOKEN_COUNT, Status::kBadTokenCount),
              "MICROATTN_BAD_TOKEN_COUNT != Status::kBadTokenCount");
static_assert(same(MICROATTN_OVERLAP, Status::kOverlap), "MICROATTN_OVERLAP != Status::kOverlap");
static_assert(same(MICROATTN_BAD_SCALE, Status::kBadScale),
              "MICROATTN_BAD_SCALE != Status::kBadScale");
static_assert(same(MICROATTN_BAD_STRIDE, Status::kBadStride),
              "MICROATTN_BAD_STRIDE != Status::kBadStride");
static_assert(same(MICROATTN_CACHE_FULL, Status::kCacheFull),
              "MICROATTN_CACHE_FULL != Status::kCacheFull");
static_assert(same(MICROATTN_BAD_ARGUMENT, Status::kBadArgument),
              "MICROATTN_BAD_ARGUMENT != Status::kBadArgument");
// The last status: a new C++ status needs its C constant (and this line moved).
static_assert(static_cast<int>(Status::kBadArgument) == 7,
              "each Status value needs its C constant");

using microattn::WeightLayout;
static_assert(MICROATTN_LAYOUT_IN_OUT == static_cast<int>(WeightLayout::kInOut),
              "MICROATTN_LAYOUT_IN_OUT != WeightLayout::kInOut");
static_assert(MICROATTN_LAYOUT_OUT_IN == static_cast<int>(WeightLayout::kOutIn),
              "MICROATTN_LAYOUT_OUT_IN != WeightLayout::kOutIn");
static_assert(MICROATTN_LAYOUT_PANEL16 == static_cast<int>(WeightLayout::kPanel16),
              "MICROATTN_LAYOUT_PANEL16 != WeightLayout::kPanel16");

using microattn::RopePairing;
static_assert(MICROATTN_ROPE_ADJACENT == static_cast<int>(RopePairing::kAdjacent),
              "MICROATTN_ROPE_ADJACENT != RopePairing::kAdjacent");
static_assert(MICROATTN_ROPE_HALF_SPLIT == static_cast<int>(RopePairing::kHalfSplit),
              "MICROATTN_ROPE_HALF_SPLIT != RopePairing::kHalfSplit");

// The C quantiser's error struct is the C++ one's fields (copied one by one, so only the
// types must agree).
static_assert(std::is_same<decltype(microattn_quant_error::max_abs),
                           decltype(microattn::QuantError::max_abs)>::value,
              "microattn_quant_error::max_abs");
static_assert(
    std::is_same<decltype(microattn_quant_error::rms), decltype(microattn::QuantError::rms)>::value,
    "microattn_quant_error::rms");
static_assert(
    std::is_same<decltype(microattn_quant_error::rel), decltype(microattn::QuantError::rel)>::value,
    "microattn_quant_error::rel");

// A C layout as the C++ one; a value that is not a MICROATTN_LAYOUT_* becomes one that
// quantize_int8() refuses (kBadArgument, after its null-pointer check, as in C++). 256 must
// not read as kInOut (the C++ enum is 8 bits wide).
WeightLayout layout_from_c(int layout) {
  return (layout >= MICROATTN_LAYOUT_IN_OUT && layout <= MICROATTN_LAYOUT_PANEL16)
             ? static_cast<WeightLayout>(layout)
             : static_cast<WeightLayout>(0xff);
}

}  // namespace

extern "C" microattn_status microattn_quantize_int8(const float* src, int from, size_t in_dim,
                                                    size_t out_dim, int to, int8_t* dst,
                                                    float* scales, microattn_quant_error* err) {
  microattn::QuantError e;
  const Status s = microattn::quantize_int8(src, layout_from_c(from), in_dim, out_dim,
                                            layout_from_c(to), dst, scales, &e);
  if (s == Status::kOk && err != nullptr) {
    err->max_abs = e.max_abs;
    err->rms = e.rms;
    err->rel = e.rel;
  }
  return static_cast<microattn_status>(static_cast<int>(s));
}

extern "C" size_t microattn_model_check_text(const microattn_model_check* c, char* buf,
                                             size_t cap) {
  microattn::ModelCheck m;
  m.status = Status::kNullPointer;
  if (c != nullptr) {
    const int v = static_cast<int>(c->status);
    m.status = v >= MICROATTN_OK && v <= MICROATTN_BAD_ARGUMENT ? static_cast<Status>(v)
                                                                : Status::kBadArgument;
    m.problem = c->problem <= static_cast<std::uint32_t>(microattn::ModelProblem::kTensorBytes)
                    ? static_cast<microattn::ModelProblem>(c->problem)
                    : microattn::ModelProblem::kNone;
    m.key = c->key, m.expected = c->expected, m.found = c->found;
  }
  return microattn::model_check_text(m, buf, cap);
}

extern "C" const char* microattn_status_string(microattn_status s) {
  // Range first: the C++ enum is 8 bits wide, and 256 must not read as kOk.
  const int v = static_cast<int>(s);
  if (v < MICROATTN_OK || v > MICROATTN_BAD_ARGUMENT) return "unknown status";
  return microattn::to_string(static_cast<Status>(v));
}

// ---- the tokenizer (microattn/tokenizer.hpp): a view kept as its pointer and size

static_assert(MICROATTN_TOKENIZER_SCRATCH_BYTES(1000) == microattn::tokenizer_scratch_bytes(1000),
              "MICROATTN_TOKENIZER_SCRATCH_BYTES != tokenizer_scratch_bytes");
static_assert(MICROATTN_TOKENIZER_MAX_IDS(1000) == microattn::tokenizer_max_ids(1000),
              "MICROATTN_TOKENIZER_MAX_IDS != tokenizer_max_ids");

namespace {
microattn::TokenizerModel tokenizer_of(const microattn_tokenizer* t) {
  return t ? microattn::TokenizerModel::accepted(t->blob_, t->bytes_) : microattn::TokenizerModel{};
}
microattn_status c_status(Status s) { return static_cast<microattn_status>(s); }
}  // namespace

extern "C" microattn_status microattn_tokenizer_set_blob(microattn_tokenizer* t, const void* blob,
                                                         size_t bytes) {
  if (!t) return MICROATTN_NULL_POINTER;
  microattn::TokenizerModel m;
  const Status s = m.set_blob(blob, bytes);
  if (s == Status::kOk) t->blob_ = m.blob(), t->bytes_ = m.bytes();
  return c_status(s);
}

extern "C" microattn_status microattn_model_file_tokenizer(microattn_tokenizer* t,
                                                           const void* model_blob, size_t bytes) {
  if (!t || !model_blob) return MICROATTN_NULL_POINTER;
  const unsigned char* data = nullptr;
  std::size_t n = 0;
  const Status s =
      microattn::model_file_range(model_blob, bytes, microattn::kKeyTokenizer, &data, &n);
  return s == Status::kOk ? microattn_tokenizer_set_blob(t, data, n) : c_status(s);
}

extern "C" size_t microattn_tokenizer_size(const microattn_tokenizer* t) {
  return tokenizer_of(t).size();
}
extern "C" int32_t microattn_tokenizer_bos(const microattn_tokenizer* t) {
  return tokenizer_of(t).bos();
}
extern "C" int32_t microattn_tokenizer_eos(const microattn_tokenizer* t) {
  return tokenizer_of(t).eos();
}
extern "C" int32_t microattn_tokenizer_unk(const microattn_tokenizer* t) {
  return tokenizer_of(t).unk();
}

extern "C" microattn_status microattn_tokenizer_encode(const microattn_tokenizer* t,
                                                       const char* text, size_t n, int add_bos,
                                                       void* scratch, size_t scratch_bytes,
                                                       int32_t* ids, size_t cap, size_t* n_ids) {
  if (!t) return MICROATTN_NULL_POINTER;
  return c_status(microattn::tokenizer_encode(tokenizer_of(t), scratch, scratch_bytes, text, n,
                                              add_bos != 0, ids, cap, n_ids));
}

extern "C" microattn_status microattn_tokenizer_decode(const microattn_tokenizer* t, int32_t prev,
                                                       int32_t id, char* out, size_t cap,
                                                       size_t* n) {
  if (!t) return MICROATTN_NULL_POINTER;
  return c_status(tokenizer_of(t).decode(prev, id, out, cap, n));
}
