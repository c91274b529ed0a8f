// SPDX-License-Identifier: Apache-2.0
// ctest tiny_lm_naive (host builds): the bench's plain C baseline of the tiny LM
// (bench/tiny_lm_naive.c, issue 35's "plain single-threaded C implementation of the same model")
// is that model: fed the reference prompt and greedy continuation one token at a time from an
// empty cache, it gives PyTorch's logits (tests/data/tiny_lm_reference.h) within 1e-4 of the
// largest |logit| at every position, and the same greedy tokens. Also its refusals: a blob with
// another magic, version, shape, flags or a short file; a token outside the vocabulary; a full
// cache. The blob is read at run time from the source tree (TINY_LM_BLOB, tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include "../bench/tiny_lm_naive.h"

#if __has_include("data/tiny_lm_reference.h")
#include "data/tiny_lm_reference.h"
#define TINY_LM_HAVE_REF 1
#else
#define TINY_LM_HAVE_REF 0
#endif

namespace {

std::vector<unsigned char> read_blob() {
  std::ifstream f(TINY_LM_BLOB, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(f), {});
}

void put_u32(std::vector<unsigned char>& b, std::size_t word, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[4 * word + i] = static_cast<unsigned char>(v >> (8 * i));
}

struct Model {
  std::unique_ptr<tlm_naive> m = std::make_unique<tlm_naive>();  // 1.4 MB: not on the stack
};

}  // namespace

TEST(TinyLmNaive, MatchesPyTorchAtEveryPosition) {
#if !TINY_LM_HAVE_REF
  GTEST_SKIP() << "tests/data/tiny_lm_reference.h not there (the exporter writes it)";
#else
  const std::vector<unsigned char> blob = read_blob();
  ASSERT_FALSE(blob.empty()) << "cannot read " << TINY_LM_BLOB;
  static_assert(TINY_LM_REF_VOCAB == TLM_VOCAB, "vocabulary");
  static_assert(TINY_LM_REF_POSITIONS <= TLM_TMAX, "positions");
  Model md;
  ASSERT_EQ(tlm_naive_load(md.m.get(), blob.data(), blob.size()), TLM_NAIVE_OK);
  float logits[TLM_VOCAB], first[TLM_VOCAB];
  double worst = 0.0;
  for (int p = 0; p < TINY_LM_REF_POSITIONS; ++p) {
    ASSERT_EQ(tlm_naive_step(md.m.get(), tiny_lm_ref_tokens[p], logits), TLM_NAIVE_OK);
    const float* ref = tiny_lm_ref_logits[p];
    float scale = 0.0f;
    for (int v = 0; v < TLM_VOCAB; ++v) scale = std::max(scale, std::fabs(ref[v]));
    for (int v = 0; v < TLM_VOCAB; ++v) {
      const double err = std::fabs(double(logits[v]) - ref[v]);
      worst = std::max(worst, err / scale);
      ASSERT_LE(err, 1e-4 * scale) << "position " << p << ", token " << v;
    }
    // The greedy choice (argmax, lowest id on ties) is PyTorch's wherever its two best logits
    // are not within the tolerance of each other.
    const int mine = int(std::max_element(logits, logits + TLM_VOCAB) - logits);
    const int theirs = int(std::max_element(ref, ref + TLM_VOCAB) - ref);
    if (std::fabs(ref[mine] - ref[theirs]) > 2e-4f * scale) {
      EXPECT_EQ(mine, theirs) << p;
    }
    if (p == 0) std::memcpy(first, logits, sizeof first);
  }
  std::printf("tiny_lm_naive: %d positions, worst |logit - PyTorch| / max|logit| = %.3g\n",
              TINY_LM_REF_POSITIONS, worst);
  // reset() starts over at position 0: the first logits again, bit for bit.
  tlm_naive_reset(md.m.get());
  ASSERT_EQ(tlm_naive_step(md.m.get(), tiny_lm_ref_tokens[0], logits), TLM_NAIVE_OK);
  EXPECT_EQ(std::memcmp(logits, first, sizeof first), 0);
#endif
}

TEST(TinyLmNaive, RefusesOtherBlobs) {
  const std::vector<unsigned char> blob = read_blob();
  if (blob.empty() && !TINY_LM_HAVE_REF) GTEST_SKIP() << "no blob yet (the exporter writes it)";
  ASSERT_FALSE(blob.empty()) << "cannot read " << TINY_LM_BLOB;
  Model md;
  ASSERT_EQ(tlm_naive_load(md.m.get(), blob.data(), blob.size()), TLM_NAIVE_OK);
  EXPECT_NE(tlm_naive_load(nullptr, blob.data(), blob.size()), TLM_NAIVE_OK);
  EXPECT_NE(tlm_naive_load(md.m.get(), nullptr, blob.size()), TLM_NAIVE_OK);
  EXPECT_EQ(tlm_naive_load(md.m.get(), blob.data(), 40), TLM_NAIVE_BAD_SIZE);
  EXPECT_EQ(tlm_naive_load(md.m.get(), blob.data(), blob.size() - 16), TLM_NAIVE_BAD_SIZE);
  // word, value, expected code
  const std::uint32_t cases[][3] = {
      {0, 0x4D4C414Eu, TLM_NAIVE_BAD_HEADER},  // magic
      {1, 2, TLM_NAIVE_BAD_HEADER},            // version
      {3, 1, TLM_NAIVE_BAD_HEADER},            // int8 weights
      {4, 101, TLM_NAIVE_BAD_SHAPE},           // vocab
      {5, 64, TLM_NAIVE_BAD_SHAPE},            // d_model
      {6, 3, TLM_NAIVE_BAD_SHAPE},             // layers
      {8, 4, TLM_NAIVE_BAD_SHAPE},             // kv heads
      {10, 512, TLM_NAIVE_BAD_SHAPE},          // d_hidden
      {11, 256, TLM_NAIVE_BAD_SHAPE},          // t_max
      {12, 1, TLM_NAIVE_BAD_HEADER},           // half-split RoPE
      {12, 2, TLM_NAIVE_BAD_HEADER},           // separate LM head
      {15, 0xFFFFFFF0u, TLM_NAIVE_BAD_SIZE},   // total bytes beyond the file
  };
  for (const auto& c : cases) {
    std::vector<unsigned char> bad(blob);
    put_u32(bad, c[0], c[1]);
    EXPECT_EQ(tlm_naive_load(md.m.get(), bad.data(), bad.size()), int(c[2])) << "word " << c[0];
  }
}

TEST(TinyLmNaive, RefusesBadTokensAndAFullCache) {
  const std::vector<unsigned char> blob = read_blob();
  if (blob.empty() && !TINY_LM_HAVE_REF) GTEST_SKIP() << "no blob yet (the exporter writes it)";
  ASSERT_FALSE(blob.empty()) << "cannot read " << TINY_LM_BLOB;
  Model md;
  ASSERT_EQ(tlm_naive_load(md.m.get(), blob.data(), blob.size()), TLM_NAIVE_OK);
  float logits[TLM_VOCAB];
  EXPECT_EQ(tlm_naive_step(md.m.get(), -1, logits), TLM_NAIVE_BAD_ARG);
  EXPECT_EQ(tlm_naive_step(md.m.get(), TLM_VOCAB, logits), TLM_NAIVE_BAD_ARG);
  EXPECT_EQ(tlm_naive_step(md.m.get(), 1, nullptr), TLM_NAIVE_BAD_ARG);
  EXPECT_EQ(md.m->pos, 0);
  for (int p = 0; p < TLM_TMAX; ++p)
    ASSERT_EQ(tlm_naive_step(md.m.get(), p % TLM_VOCAB, logits), 0);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(tlm_naive_step(md.m.get(), 1, logits), TLM_NAIVE_FULL);
  EXPECT_EQ(md.m->pos, TLM_TMAX);
}
