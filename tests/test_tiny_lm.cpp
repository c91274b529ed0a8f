// SPDX-License-Identifier: Apache-2.0
// The trained tiny language model (examples/tiny_lm) through microattn::Decoder against
// PyTorch: tests/data/tiny_lm_reference.h holds the exporter's PyTorch logits at every
// position of a prompt + its greedy continuation, and the model files are linked in
// (examples/tiny_lm/tiny_lm_blobs.cpp). fp32: every logit within 1e-4 of the largest (the
// issue's target), by prefill and by decode, and the same 64 greedy tokens. int8 weights (and
// the int8 cache, and integer compute): the error and the greedy agreement are printed and
// gated loosely, as a check that the quantised model is still this model.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "data/tiny_lm_reference.h"
#include "microattn/decoder.hpp"
#include "support/check.hpp"
#include "support/serial_executor.hpp"
#include "support/unit.hpp"
#include "tiny_lm_blobs.h"

namespace {

using microattn::Status;

template <auto... kOptions>
using TinyLm = microattn::DecoderConfig<100, 128, 2, 4, 2, 32, 256, 128, microattn::LmHead::kTied,
                                        microattn::MaxWorkers{2}, kOptions...>;
using F32 = TinyLm<>;
using Q8 = TinyLm<microattn::WeightType::kInt8>;
using Q8Kv8 = TinyLm<microattn::WeightType::kInt8, microattn::CacheType::kInt8>;
using Qd8 =
    TinyLm<microattn::WeightType::kInt8, microattn::CacheType::kInt8, microattn::Compute::kInt8>;

constexpr std::size_t kV = TINY_LM_REF_VOCAB, kP = TINY_LM_REF_POSITIONS;
constexpr std::size_t kPrompt = TINY_LM_REF_PROMPT_TOKENS, kN = TINY_LM_REF_CONTINUATION;
static_assert(kV == F32::kVocab && kP <= F32::kTMax, "the reference fits the model");

float g_logits[kP * kV];
float g_row[kV];

struct Result {
  double rel_error = 0;     // max |logit - PyTorch| / max |PyTorch logit|, prefill_all
  double decode_error = 0;  // the same for decode's logits, position by position
  std::size_t agree = 0;    // greedy tokens equal to PyTorch's, of kN
  bool ok = false;
};

std::int32_t argmax(const float* l) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < kV; ++i)
    if (l[i] > l[best]) best = i;
  return static_cast<std::int32_t>(best);
}

double ref_scale() { return microattn_test::max_abs(&tiny_lm_ref_logits[0][0], kP * kV); }

/// Runs the model in `blob` three ways: prefill_all over the reference sequence, decode token
/// by token over it, and greedy generation from the prompt.
template <class DCfg>
Result run(microattn::Decoder<DCfg>& d, const unsigned char* blob, std::uint32_t bytes) {
  Result r;
  microattn::DecoderWeights<DCfg> w;
  if (microattn::decoder_weights_from_blob<DCfg>(blob, bytes, &w) != Status::kOk ||
      d.set_weights(w) != Status::kOk)
    return r;
  d.reset();
  if (d.prefill_all(tiny_lm_ref_tokens, kP, g_logits) != Status::kOk) return r;
  r.rel_error =
      microattn_test::max_diff(g_logits, &tiny_lm_ref_logits[0][0], kP * kV) / ref_scale();
  d.reset();
  for (std::size_t p = 0; p < kP; ++p) {
    if (d.decode(tiny_lm_ref_tokens[p], g_row) != Status::kOk) return r;
    const double e = microattn_test::max_diff(g_row, tiny_lm_ref_logits[p], kV) / ref_scale();
    r.decode_error = e > r.decode_error || e != e ? e : r.decode_error;
  }
  d.reset();
  if (d.prefill(tiny_lm_ref_tokens, kPrompt, g_row) != Status::kOk) return r;
  for (std::size_t i = 0; i < kN; ++i) {
    const std::int32_t t = argmax(g_row);
    r.agree += t == tiny_lm_ref_tokens[kPrompt + i] ? 1u : 0u;
    if (i + 1 < kN && d.decode(t, g_row) != Status::kOk) return r;
  }
  r.ok = true;
  return r;
}

template <class DCfg>
void report(const char* what, const Result& r) {
  microattn_test::report(
      "tiny_lm %s: max |logit error| / max |logit| %.3g (prefill), %.3g "
      "(decode); greedy tokens equal to PyTorch's: %zu of %zu\n",
      what, r.rel_error, r.decode_error, r.agree, kN);
}

microattn::Decoder<F32> g_f32;
microattn::Decoder<Q8> g_q8;
microattn::Decoder<Q8Kv8> g_q8kv8;
microattn::Decoder<Qd8> g_qd8;

// The target: fp32 logits within 1e-4 of the logit scale. Measured on x86 and the
// emulated targets: a few 1e-7 (float rounding in another summation order than PyTorch's).
constexpr double kF32Tolerance = 1e-4;
// int8 weights: each matrix's rounding error is ~0.6 % (TRAINING.md); the logits measured
// 0.4 % off. 5 % says "still the same model", not a precision claim; greedy tokens likewise.
constexpr double kInt8Tolerance = 5e-2;
constexpr std::size_t kInt8MinAgree = kN * 3 / 4;

TEST(TinyLm, Fp32MatchesPyTorch) {
  const Result r = run(g_f32, tiny_lm_f32_blob, tiny_lm_f32_blob_bytes);
  ASSERT_TRUE(r.ok);
  report<F32>("fp32", r);
  EXPECT_LE(r.rel_error, kF32Tolerance);
  EXPECT_LE(r.decode_error, kF32Tolerance);
  EXPECT_EQ(r.agree, kN);
}

TEST(TinyLm, Fp32TwoWorkersBitIdentical) {
  static float one[kP * kV];
  microattn::DecoderWeights<F32> w;
  ASSERT_EQ(microattn::decoder_weights_from_blob<F32>(tiny_lm_f32_blob, tiny_lm_f32_blob_bytes, &w),
            Status::kOk);
  ASSERT_EQ(g_f32.set_weights(w), Status::kOk);
  g_f32.reset();
  ASSERT_EQ(g_f32.prefill_all(tiny_lm_ref_tokens, kP, one), Status::kOk);
  g_f32.reset();
  ASSERT_EQ(g_f32.set_executor(microattn_test::serial_executor(2)), Status::kOk);
  ASSERT_EQ(g_f32.prefill_all(tiny_lm_ref_tokens, kP, g_logits), Status::kOk);
  ASSERT_EQ(g_f32.set_executor(microattn_test::serial_executor(1)), Status::kOk);
  EXPECT_EQ(std::memcmp(one, g_logits, sizeof one), 0);
}

/// An int8 configuration against PyTorch: reported, and gated loosely.
template <class DCfg>
void check_int8(microattn::Decoder<DCfg>& d, const char* what) {
  const Result r = run(d, tiny_lm_q8_blob, tiny_lm_q8_blob_bytes);
  ASSERT_TRUE(r.ok);
  report<DCfg>(what, r);
  EXPECT_LE(r.rel_error, kInt8Tolerance);
  EXPECT_GE(r.agree, kInt8MinAgree);
}

TEST(TinyLm, Int8WeightsStayClose) { check_int8(g_q8, "int8 weights"); }

TEST(TinyLm, Int8WeightsAndCacheStayClose) { check_int8(g_q8kv8, "int8 weights + int8 cache"); }

TEST(TinyLm, IntegerComputeStaysClose) {
  check_int8(g_qd8, "int8 weights + cache, integer compute (Compute::kInt8)");
}

}  // namespace
