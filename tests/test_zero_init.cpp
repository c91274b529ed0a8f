// SPDX-License-Identifier: Apache-2.0
// Firmware often places objects in .bss and starts without running C++ constructors (vendor
// startup code that skips __init_array). Every public object must then work from all-zero
// bytes exactly as a constructed one does. (ports/cortex-m's zero_init image proves the same on
// a board whose startup runs no constructors at all.)
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "microattn/attention.hpp"
#include "microattn/kv_cache.hpp"
#include "support/random_weights.hpp"
#include "support/rng.hpp"
#include "support/unit.hpp"

namespace {

using microattn::Config;
using microattn::KvAttention;
using microattn::MultiHeadAttention;
using microattn::ScaledDotProductAttention;
using microattn::Status;
using microattn::WeightLayout;

/// An object of type T that was never constructed: static zero bytes, as a .bss object is when
/// the startup code copied .data and cleared .bss but ran no constructor.
template <class T, int kTag = 0>
T& never_constructed() {
  alignas(T) static unsigned char bytes[sizeof(T)];
  std::memset(bytes, 0, sizeof bytes);
  return *reinterpret_cast<T*>(bytes);
}

using Cfg = Config<24, 16, 4, 2, 8, microattn::Bias::kYes, microattn::Rope::kYes>;
constexpr std::size_t kT = Cfg::kTMax, kDM = Cfg::kDModel, kOD = Cfg::kOutDim;

TEST(ZeroInit, WeightsHaveNoDefaultLayout) {
  static_assert(!std::is_default_constructible<microattn::Weights<Cfg>>::value,
                "Weights<Cfg> must be given its layout: a default one computes wrong layers "
                "without an error");
  constexpr microattn::Weights<Cfg> w(WeightLayout::kOutIn);
  static_assert(w.layout == WeightLayout::kOutIn && !w.complete(), "layout kept, no pointers");
  SUCCEED();
}

TEST(ZeroInit, KvAttentionFromZeroBytes) {
  static microattn_test::RandomWeights<Cfg> w;
  w.fill(61);
  static float x[kT * kDM], ya[kT * kOD], yb[kT * kOD];
  microattn_test::Rng(62).fill(x, kT * kDM, -1, 1);
  for (int with_rope = 0; with_rope < 2; ++with_rope) {
    KvAttention<Cfg, microattn::DefaultArch, 5>& z =
        never_constructed<KvAttention<Cfg, microattn::DefaultArch, 5>>();
    static KvAttention<Cfg, microattn::DefaultArch, 5> c;
    c.reset();
    EXPECT_EQ(z.length(), 0u);
    EXPECT_EQ(z.scale(), microattn::default_scale<Cfg>()) << "default scale from zero bytes";
    EXPECT_FALSE(z.rope().enabled);
    EXPECT_EQ(z.decode(x, ya), Status::kNullPointer) << "no weights yet";
    ASSERT_EQ(z.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    ASSERT_EQ(c.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
    microattn::RopeConfig r;
    r.enabled = with_rope != 0;
    ASSERT_EQ(z.set_rope(r), Status::kOk);
    ASSERT_EQ(c.set_rope(r), Status::kOk);
    ASSERT_EQ(z.prefill(x, 11, ya), Status::kOk);
    ASSERT_EQ(c.prefill(x, 11, yb), Status::kOk);
    for (std::size_t t = 11; t < 14; ++t) {
      ASSERT_EQ(z.decode(x + t * kDM, ya + t * kOD), Status::kOk);
      ASSERT_EQ(c.decode(x + t * kDM, yb + t * kOD), Status::kOk);
    }
    EXPECT_EQ(std::memcmp(ya, yb, 14 * kOD * sizeof(float)), 0) << "rope " << with_rope;
    ASSERT_EQ(z.truncate(4), Status::kOk);
    ASSERT_EQ(c.truncate(4), Status::kOk);
    ASSERT_EQ(z.prefill(x + 4 * kDM, 9, ya), Status::kOk);
    ASSERT_EQ(c.prefill(x + 4 * kDM, 9, yb), Status::kOk);
    EXPECT_EQ(std::memcmp(ya, yb, 9 * kOD * sizeof(float)), 0) << "rope " << with_rope;
  }
}

TEST(ZeroInit, LayerAndCoreFromZeroBytes) {
  static microattn_test::RandomWeights<Cfg> w;
  w.fill(63);
  static float x[kT * kDM], ya[kT * kOD], yb[kT * kOD];
  microattn_test::Rng(64).fill(x, kT * kDM, -1, 1);
  MultiHeadAttention<Cfg>& z = never_constructed<MultiHeadAttention<Cfg>>();
  static MultiHeadAttention<Cfg> c;
  EXPECT_EQ(z.forward(x, kT, ya), Status::kNullPointer) << "no weights yet";
  EXPECT_EQ(z.scale(), microattn::default_scale<Cfg>()) << "default scale from zero bytes";
  ASSERT_EQ(z.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
  ASSERT_EQ(c.set_weights(w.view(WeightLayout::kOutIn)), Status::kOk);
  ASSERT_EQ(z.forward(x, kT, ya), Status::kOk);
  ASSERT_EQ(c.forward(x, kT, yb), Status::kOk);
  EXPECT_EQ(std::memcmp(ya, yb, sizeof ya), 0);

  constexpr std::size_t QD = Cfg::kQDim, KD = Cfg::kKvDim;
  static float q[kT * QD], k[kT * KD], v[kT * KD], oa[kT * QD], ob[kT * QD];
  microattn_test::Rng rng(65);
  rng.fill(q, kT * QD, -1, 1);
  rng.fill(k, kT * KD, -1, 1);
  rng.fill(v, kT * KD, -1, 1);
  ScaledDotProductAttention<Cfg>& zc = never_constructed<ScaledDotProductAttention<Cfg>>();
  static ScaledDotProductAttention<Cfg> cc;
  EXPECT_EQ(zc.scale(), microattn::default_scale<Cfg>()) << "default scale from zero bytes";
  ASSERT_EQ(zc.forward(q, k, v, kT, oa), Status::kOk);
  ASSERT_EQ(cc.forward(q, k, v, kT, ob), Status::kOk);
  EXPECT_EQ(std::memcmp(oa, ob, sizeof oa), 0);
}

// The int8 cache and int8 weights from zero bytes: the scales' arrays are zero too.
TEST(ZeroInit, Int8KvAttentionFromZeroBytes) {
  using QCfg = Config<24, 16, 4, 2, 8, microattn::Bias::kYes, microattn::WeightType::kInt8,
                      microattn::CacheType::kInt8>;
  static float wf[4][16 * 32], sc[4][32], b[32];
  static std::int8_t q[4][16 * 32];
  microattn_test::Rng rng(66);
  for (auto& m : wf) rng.fill(m, 16 * 32, -0.3f, 0.3f);
  rng.fill(b, 32, -0.3f, 0.3f);
  const std::size_t in[4] = {16, 16, 16, 32}, out[4] = {32, 16, 16, 16};
  for (int m = 0; m < 4; ++m)
    ASSERT_EQ(microattn::quantize_int8(wf[m], WeightLayout::kInOut, in[m], out[m],
                                       WeightLayout::kOutIn, q[m], sc[m]),
              Status::kOk);
  const microattn::Weights<QCfg> w(WeightLayout::kOutIn, q[0], sc[0], q[1], sc[1], q[2], sc[2],
                                   q[3], sc[3], b, b, b, b);
  static float x[kT * kDM], ya[kT * kOD], yb[kT * kOD];
  microattn_test::Rng(67).fill(x, kT * kDM, -1, 1);
  KvAttention<QCfg>& z = never_constructed<KvAttention<QCfg>>();
  static KvAttention<QCfg> c;
  EXPECT_EQ(z.decode(x, ya), Status::kNullPointer) << "no weights yet";
  ASSERT_EQ(z.set_weights(w), Status::kOk);
  ASSERT_EQ(c.set_weights(w), Status::kOk);
  ASSERT_EQ(z.prefill(x, 9, ya), Status::kOk);
  ASSERT_EQ(c.prefill(x, 9, yb), Status::kOk);
  for (std::size_t t = 9; t < 13; ++t) {
    ASSERT_EQ(z.decode(x + t * kDM, ya + t * kOD), Status::kOk);
    ASSERT_EQ(c.decode(x + t * kDM, yb + t * kOD), Status::kOk);
  }
  EXPECT_EQ(std::memcmp(ya, yb, 13 * kOD * sizeof(float)), 0);
  MultiHeadAttention<QCfg>& zm = never_constructed<MultiHeadAttention<QCfg>>();
  static MultiHeadAttention<QCfg> cm;
  ASSERT_EQ(zm.set_weights(w), Status::kOk);
  ASSERT_EQ(cm.set_weights(w), Status::kOk);
  ASSERT_EQ(zm.forward(x, kT, ya), Status::kOk);
  ASSERT_EQ(cm.forward(x, kT, yb), Status::kOk);
  EXPECT_EQ(std::memcmp(ya, yb, sizeof ya), 0);
}

}  // namespace
