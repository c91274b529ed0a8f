// SPDX-License-Identifier: Apache-2.0
// A published checkpoint end to end (ctest real_model.*): llama2.c's stories260K, converted by
// tools/export_pytorch.py --llama2c at build time (tests/real_model.cmake), through
// microattn::Decoder against a float64 NumPy implementation of the llama2.c format
// (tests/python/llama2c_reference.py). The same 256 greedy tokens from BOS, and every position's
// logits within 1e-5 of that position's largest |logit|: by decode, by one prefill of the whole
// sequence, and by a prefill of a prompt followed by decode. Runs on every hosted target and on
// the Cortex-M boards (unit.hpp), with the files linked in (tests/real_model_data.cpp).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/decoder.hpp"
#include "real_model_data.h"
#include "support/check.hpp"
#include "support/unit.hpp"

namespace {

using microattn::Status;
// stories260K: vocab 512, d_model 64, 5 layers, 8 query heads on 4 key/value heads, d_head 8,
// SwiGLU 172, context 512, the classifier tied to the embedding.
using Stories = microattn::DecoderConfig<512, 64, 5, 8, 4, 8, 172, 512, microattn::LmHead::kTied>;
constexpr std::size_t kV = Stories::kVocab;
constexpr std::size_t kSteps = 256;
// Issue 49's target. The reference's smallest top-2 gap over a step's largest |logit| is 8.7e-5
// (it prints it), so within this tolerance every argmax is the reference's; measured errors are
// a few 1e-6 (float rounding over d_model 64 and hidden 172 in another order than NumPy's).
constexpr double kTolerance = 1e-5;

microattn::Decoder<Stories> g_model;
float g_logits[kSteps * kV];  // prefill_all's
float g_row[kV];
float g_ref_row[kV];
std::int32_t g_tokens[kSteps + 1];

std::uint32_t ref_u32(std::size_t offset) {
  std::uint32_t v = 0;
  std::memcpy(&v, real_model_ref + offset, sizeof v);
  return v;
}
constexpr std::size_t kTokensAt = 12, kLogitsAt = kTokensAt + 4 * (kSteps + 1);

/// The reference's header as this test reads it, and its tokens into g_tokens.
bool load_reference() {
  if (real_model_ref_bytes != kLogitsAt + 4 * (kSteps * kV + 1)) return false;
  if (std::memcmp(real_model_ref, "RMR1", 4) != 0 || ref_u32(4) != kSteps || ref_u32(8) != kV)
    return false;
  std::memcpy(g_tokens, real_model_ref + kTokensAt, sizeof g_tokens);
  return g_tokens[0] == 1;  // BOS
}

/// Position p's reference logits, into g_ref_row.
const float* ref_logits(std::size_t p) {
  std::memcpy(g_ref_row, real_model_ref + kLogitsAt + 4 * p * kV, sizeof g_ref_row);
  return g_ref_row;
}

std::int32_t argmax(const float* l) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < kV; ++i)
    if (l[i] > l[best]) best = i;
  return static_cast<std::int32_t>(best);
}

/// max |logit - reference| / max |reference logit| at position p.
double step_error(const float* logits, std::size_t p) {
  const float* r = ref_logits(p);
  return microattn_test::max_diff(logits, r, kV) / microattn_test::max_abs(r, kV);
}

bool ready() {
  microattn::ModelCheck why;
  if (!load_reference() ||
      g_model.set_weights_blob(real_model_blob, real_model_blob_bytes, &why) != Status::kOk)
    return false;
  g_model.reset();
  return true;
}

TEST(RealModel, Stories260kGreedyDecodeMatchesReference) {
  ASSERT_TRUE(ready());
  double worst = 0;
  std::size_t agree = 0;
  std::int32_t token = g_tokens[0];
  for (std::size_t p = 0; p < kSteps; ++p) {
    ASSERT_EQ(g_model.decode(token, g_row), Status::kOk);
    const double e = step_error(g_row, p);
    worst = e > worst || e != e ? e : worst;
    token = argmax(g_row);
    agree += token == g_tokens[p + 1] ? 1u : 0u;
  }
  microattn_test::report(
      "real_model stories260K decode: max error %.3g of the logit scale, "
      "%zu of %zu greedy tokens equal\n",
      worst, agree, kSteps);
  EXPECT_LE(worst, kTolerance);
  EXPECT_EQ(agree, kSteps);
}

TEST(RealModel, Stories260kPrefillAllMatchesReference) {
  ASSERT_TRUE(ready());
  ASSERT_EQ(g_model.prefill_all(g_tokens, kSteps, g_logits), Status::kOk);
  double worst = 0;
  std::size_t agree = 0;
  for (std::size_t p = 0; p < kSteps; ++p) {
    const double e = step_error(g_logits + p * kV, p);
    worst = e > worst || e != e ? e : worst;
    agree += argmax(g_logits + p * kV) == g_tokens[p + 1] ? 1u : 0u;
  }
  microattn_test::report("real_model stories260K prefill_all: max error %.3g\n", worst);
  EXPECT_LE(worst, kTolerance);
  EXPECT_EQ(agree, kSteps);
}

// A prompt of 100 reference tokens in one prefill (its last logits), then decode: the chunked
// prefill path and the decode path over one cache.
TEST(RealModel, Stories260kPrefillThenDecodeMatchesReference) {
  ASSERT_TRUE(ready());
  constexpr std::size_t kPrompt = 100;
  ASSERT_EQ(g_model.prefill(g_tokens, kPrompt, g_row), Status::kOk);
  double worst = step_error(g_row, kPrompt - 1);
  for (std::size_t p = kPrompt; p < kSteps; ++p) {
    ASSERT_EQ(argmax(g_row), g_tokens[p]);
    ASSERT_EQ(g_model.decode(g_tokens[p], g_row), Status::kOk);
    const double e = step_error(g_row, p);
    worst = e > worst || e != e ? e : worst;
  }
  EXPECT_LE(worst, kTolerance);
  EXPECT_EQ(argmax(g_row), g_tokens[kSteps]);
}

// The converted file says what it is: a configuration of another hidden width, or of a longer
// context than the 512 the model was trained for, is refused naming the field.
TEST(RealModel, Stories260kFileRefusesOtherConfigs) {
  using Wide = microattn::DecoderConfig<512, 64, 5, 8, 4, 8, 176, 64, microattn::LmHead::kTied>;
  microattn::DecoderWeights<Wide> w;
  microattn::ModelCheck why;
  EXPECT_EQ(
      microattn::decoder_weights_from_blob<Wide>(real_model_blob, real_model_blob_bytes, &w, &why),
      Status::kBadArgument);
  EXPECT_TRUE(why.problem == microattn::ModelProblem::kFieldDiffers);
  EXPECT_EQ(why.key, std::uint32_t{microattn::kKeyDHidden});
  EXPECT_EQ(why.expected, 176u);
  EXPECT_EQ(why.found, 172u);
  using Long = microattn::DecoderConfig<512, 64, 5, 8, 4, 8, 172, 1024, microattn::LmHead::kTied>;
  microattn::DecoderWeights<Long> wl;
  EXPECT_EQ(
      microattn::decoder_weights_from_blob<Long>(real_model_blob, real_model_blob_bytes, &wl, &why),
      Status::kBadArgument);
  EXPECT_EQ(why.key, std::uint32_t{microattn::kKeyTrainedContext});
  EXPECT_EQ(why.found, 512u);
}

#if defined(REAL_MODEL_FORMATS)
// fp16 and bf16 weights (export_pytorch.py --quant fp16 / bf16): teacher-forced on the reference's
// greedy sequence, every position's logits against the float64 fp32 reference. Measured (this
// test's report line, AMD Zen 4 and scalar alike): fp16 0.39 % of the logit range, 254 / 256 top
// choices kept; bf16 4.22 %, 247 / 256: tools/quant_study.py's float64 figures for the formats'
// rounding alone, so the kernels add nothing visible. Bounds: issue 50's 0.5 % for fp16, 5 % for
// bf16 (its 8-bit mantissa), and two to three top choices of room for near-ties that another
// arch's float rounding could flip (the reference's smallest top-2 margin is 8.7e-5).
template <microattn::WeightType kW>
using StoriesHalf =
    microattn::DecoderConfig<512, 64, 5, 8, 4, 8, 172, 512, microattn::LmHead::kTied, kW>;
microattn::Decoder<StoriesHalf<microattn::WeightType::kF16>> g_f16;
microattn::Decoder<StoriesHalf<microattn::WeightType::kBF16>> g_bf16;

template <class D>
void half_case(D& model, const unsigned char* blob, unsigned bytes, double max_err,
               std::size_t min_kept, const char* what) {
  ASSERT_TRUE(load_reference());
  microattn::ModelCheck why;
  ASSERT_EQ(model.set_weights_blob(blob, bytes, &why), Status::kOk);
  model.reset();
  ASSERT_EQ(model.prefill_all(g_tokens, kSteps, g_logits), Status::kOk);
  double diff = 0, mag = 0;
  std::size_t kept = 0;
  for (std::size_t p = 0; p < kSteps; ++p) {
    const float* r = ref_logits(p);
    const double d = microattn_test::max_diff(g_logits + p * kV, r, kV);
    const double m = microattn_test::max_abs(r, kV);
    diff = d > diff || d != d ? d : diff;
    mag = m > mag ? m : mag;
    kept += argmax(g_logits + p * kV) == g_tokens[p + 1] ? 1u : 0u;
  }
  microattn_test::report(
      "real_model stories260K %s: max error %.3g of the logit range, %zu of %zu top "
      "choices kept\n",
      what, diff / mag, kept, kSteps);
  EXPECT_LE(diff / mag, max_err) << what;
  EXPECT_GE(kept, min_kept) << what;
}

TEST(RealModel, Stories260kHalfWeightsStayClose) {
  half_case(g_f16, real_model_f16_blob, real_model_f16_blob_bytes, 0.005, 252, "fp16 weights");
  half_case(g_bf16, real_model_bf16_blob, real_model_bf16_blob_bytes, 0.05, 244, "bf16 weights");
}

// int8 weights (--quant int8, int8-g32 / g64 / g128), the same teacher-forced measure. Measured
// (this test's report lines, AMD Zen 4): per column 16.3 % of the logit range, 231 / 256 top
// choices kept; per group of 32 9.60 %, 231; of 64 12.6 %, 238; of 128 13.2 %, 232:
// tools/quant_study.py's float64 figures for the rounding alone, so the kernels add nothing
// visible. Bounds: those figures plus a tenth of them, and the top choices less three (near-ties
// another arch's rounding can flip). Issue 50's 3 % for g32 is out of this format's reach on
// this model (docs/quantization.md).
microattn::Decoder<StoriesHalf<microattn::WeightType::kInt8>> g_q8;
microattn::Decoder<StoriesHalf<microattn::WeightType::kInt8G32>> g_q8g32;
microattn::Decoder<StoriesHalf<microattn::WeightType::kInt8G64>> g_q8g64;
microattn::Decoder<StoriesHalf<microattn::WeightType::kInt8G128>> g_q8g128;

// fp16 and bf16 KV caches (CacheType::kF16 / kBF16) with the fp32 weights: every layer's keys
// and values rounded as they are cached. Measured (AMD Zen 4): fp16 0.263 % of the logit range,
// 254 / 256 top choices kept; bf16 1.88 %, 252. Bounds: fp16 as its weights' (issue 50's 0.5 %),
// bf16 the measure plus a third, less three top choices.
template <microattn::CacheType kC>
using StoriesCache =
    microattn::DecoderConfig<512, 64, 5, 8, 4, 8, 172, 512, microattn::LmHead::kTied, kC>;
microattn::Decoder<StoriesCache<microattn::CacheType::kF16>> g_c16;
microattn::Decoder<StoriesCache<microattn::CacheType::kBF16>> g_cb16;

TEST(RealModel, Stories260kHalfCachesStayClose) {
  half_case(g_c16, real_model_blob, real_model_blob_bytes, 0.005, 252, "fp16 cache");
  half_case(g_cb16, real_model_blob, real_model_blob_bytes, 0.025, 249, "bf16 cache");
}

TEST(RealModel, Stories260kInt8WeightsPerColumnAndPerGroup) {
  half_case(g_q8, real_model_q8_blob, real_model_q8_blob_bytes, 0.18, 228,
            "int8 weights (per column)");
  half_case(g_q8g32, real_model_q8g32_blob, real_model_q8g32_blob_bytes, 0.106, 228,
            "int8 g32 weights");
  half_case(g_q8g64, real_model_q8g64_blob, real_model_q8g64_blob_bytes, 0.139, 235,
            "int8 g64 weights");
  half_case(g_q8g128, real_model_q8g128_blob, real_model_q8g128_blob_bytes, 0.146, 229,
            "int8 g128 weights");
}

// A configuration's weight type must be the file's: the fp32 file, read as fp16, is refused at
// its first matrix, naming both format codes.
TEST(RealModel, Stories260kHalfConfigRefusesFp32File) {
  microattn::DecoderWeights<StoriesHalf<microattn::WeightType::kF16>> w;
  microattn::ModelCheck why;
  EXPECT_EQ(microattn::decoder_weights_from_blob<StoriesHalf<microattn::WeightType::kF16>>(
                real_model_blob, real_model_blob_bytes, &w, &why),
            Status::kBadArgument);
  EXPECT_TRUE(why.problem == microattn::ModelProblem::kTensorFormat);
  EXPECT_EQ(why.expected, 0x1002u);
  EXPECT_EQ(why.found, 0u);
}
#endif

}  // namespace
