// SPDX-License-Identifier: Apache-2.0
// Every bad input returns its status and leaves the sentinel-filled output untouched.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "microattn/attention.hpp"
#include "microattn/kv_cache.hpp"
#include "support/check.hpp"
#include "support/random_weights.hpp"
#include "support/rng.hpp"
#include "support/unit.hpp"

namespace {

using microattn::Bias;
using microattn::Config;
using microattn::MultiHeadAttention;
using microattn::OutProj;
using microattn::ScaledDotProductAttention;
using microattn::Status;
using microattn::Weights;
using microattn_test::all_sentinel;
using microattn_test::fill_sentinel;

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

using LayerCfg = Config<8, 6, 2, 1, 4, Bias::kYes>;  // with W_O and biases
float g_w[4][64], g_b[4][16];
Weights<LayerCfg> full_weights() {
  microattn_test::Rng rng(1);
  for (auto& w : g_w) rng.fill(w, 64, -1, 1);
  for (auto& b : g_b) rng.fill(b, 16, -1, 1);
  Weights<LayerCfg> w(microattn::WeightLayout::kInOut);
  w.w_q = g_w[0], w.w_k = g_w[1], w.w_v = g_w[2], w.w_o = g_w[3];
  w.b_q = g_b[0], w.b_k = g_b[1], w.b_v = g_b[2], w.b_o = g_b[3];
  return w;
}

TEST(BadInput, LayerArguments) {
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    static MultiHeadAttention<LayerCfg, A> layer;
    float x[8 * 6], y[8 * 6];
    microattn_test::Rng(2).fill(x, 8 * 6, -1, 1);
    fill_sentinel(y);
    EXPECT_EQ(layer.forward(x, 4, y), Status::kNullPointer) << "no weights yet";
    EXPECT_TRUE(all_sentinel(y));
    ASSERT_EQ(layer.set_weights(full_weights()), Status::kOk);
    EXPECT_EQ(layer.forward(nullptr, 4, y), Status::kNullPointer);
    EXPECT_EQ(layer.forward(x, 4, nullptr), Status::kNullPointer);
    EXPECT_EQ(layer.forward(x, 0, y), Status::kBadTokenCount);
    EXPECT_EQ(layer.forward(x, 9, y), Status::kBadTokenCount);
    EXPECT_EQ(layer.set_scale(kInf), Status::kBadScale);
    EXPECT_EQ(layer.set_scale(-kInf), Status::kBadScale);
    EXPECT_EQ(layer.set_scale(kNaN), Status::kBadScale);
    EXPECT_EQ(layer.scale(), microattn::default_scale<LayerCfg>())
        << "a rejected scale is not kept";
    EXPECT_TRUE(all_sentinel(y)) << A::name();
    EXPECT_EQ(layer.forward(x, 4, y), Status::kOk);  // and a good call still works
    EXPECT_FALSE(all_sentinel(y));
  });
}

TEST(BadInput, IncompleteWeightsAreRejectedAndKeepTheOldOnes) {
  static MultiHeadAttention<LayerCfg> layer;
  ASSERT_EQ(layer.set_weights(full_weights()), Status::kOk);
  float x[8 * 6], y0[8 * 6], y1[8 * 6];
  microattn_test::Rng(3).fill(x, 8 * 6, -1, 1);
  ASSERT_EQ(layer.forward(x, 8, y0), Status::kOk);
  const char* missing[] = {"w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"};
  for (int i = 0; i < 8; ++i) {
    Weights<LayerCfg> w = full_weights();
    const float** p[] = {&w.w_q, &w.w_k, &w.w_v, &w.w_o, &w.b_q, &w.b_k, &w.b_v, &w.b_o};
    *p[i] = nullptr;
    EXPECT_EQ(layer.set_weights(w), Status::kNullPointer) << missing[i];
  }
  ASSERT_EQ(layer.forward(x, 8, y1), Status::kOk);
  EXPECT_EQ(std::memcmp(y0, y1, sizeof y0), 0);
  // A configuration without bias or W_O does not need those pointers.
  using Lean = Config<8, 6, 2, 1, 4, Bias::kNo, OutProj::kNo>;
  Weights<Lean> lean(microattn::WeightLayout::kInOut);
  lean.w_q = g_w[0], lean.w_k = g_w[1], lean.w_v = g_w[2];
  static MultiHeadAttention<Lean> lean_layer;
  EXPECT_EQ(lean_layer.set_weights(lean), Status::kOk);
}

// A layout the configuration cannot use (kPanel16 needs d_head % 16 == 0; a value outside the
// enum) is kBadArgument: set_weights keeps the old weights, forward/decode write nothing.
TEST(BadInput, WeightLayoutTheConfigCannotUse) {
  using microattn::WeightLayout;
  static_assert(!microattn::panel_layout_fits<LayerCfg>(), "LayerCfg: d_head 4 cannot be panelled");
  static_assert(microattn::panel_layout_fits<Config<8, 16, 2, 1, 16>>(),
                "d_head 16, d_model 16 fit");
  static_assert(!microattn::panel_layout_fits<Config<8, 12, 2, 1, 16>>(),
                "W_O: d_model 12 does not");
  static_assert(microattn::panel_layout_fits<Config<8, 12, 2, 1, 16, Bias::kNo, OutProj::kNo>>(),
                "no W_O: d_model is an input width only");
  static MultiHeadAttention<LayerCfg> layer;
  static microattn::KvAttention<LayerCfg> kv;
  ASSERT_EQ(layer.set_weights(full_weights()), Status::kOk);
  ASSERT_EQ(kv.set_weights(full_weights()), Status::kOk);
  float x[8 * 6], y0[8 * 6], y1[8 * 6], yk[6];
  microattn_test::Rng(5).fill(x, 8 * 6, -1, 1);
  ASSERT_EQ(layer.forward(x, 8, y0), Status::kOk);
  for (int bad : {static_cast<int>(WeightLayout::kPanel16), 3, 255}) {
    Weights<LayerCfg> w = full_weights();
    w.layout = static_cast<WeightLayout>(bad);
    EXPECT_EQ(w.check(), Status::kBadArgument) << bad;
    EXPECT_EQ(layer.set_weights(w), Status::kBadArgument) << bad;
    EXPECT_EQ(kv.set_weights(w), Status::kBadArgument) << bad;
  }
  // Weights given to the constructor are checked by forward.
  Weights<LayerCfg> panelled = full_weights();
  panelled.layout = WeightLayout::kPanel16;
  static MultiHeadAttention<LayerCfg> direct(panelled);
  fill_sentinel(y1);
  EXPECT_EQ(direct.forward(x, 8, y1), Status::kBadArgument);
  EXPECT_TRUE(all_sentinel(y1));
  ASSERT_EQ(layer.forward(x, 8, y1), Status::kOk);  // the old weights are still in use
  EXPECT_EQ(std::memcmp(y0, y1, sizeof y0), 0);
  fill_sentinel(yk);
  EXPECT_EQ(kv.decode(x, yk), Status::kOk);
  EXPECT_EQ(kv.length(), 1u);
}

TEST(BadInput, LayerWithoutOutputProjectionRejectsOverlap) {
  using Cfg = Config<8, 8, 2, 2, 4, Bias::kNo, OutProj::kNo>;  // y is [T][8], like x
  static MultiHeadAttention<Cfg> layer;
  Weights<Cfg> w(microattn::WeightLayout::kInOut);
  w.w_q = g_w[0], w.w_k = g_w[1], w.w_v = g_w[2];
  ASSERT_EQ(layer.set_weights(w), Status::kOk);
  static float buf[8 * 8 + 8];
  fill_sentinel(buf);
  microattn_test::Rng(4).fill(buf, 8 * 8, -1, 1);
  static float copy[8 * 8 + 8];
  std::memcpy(copy, buf, sizeof buf);
  EXPECT_EQ(layer.forward(buf, 8, buf), Status::kOverlap);
  EXPECT_EQ(layer.forward(buf, 8, buf + 3), Status::kOverlap);
  EXPECT_EQ(layer.forward(buf + 3, 8, buf), Status::kOverlap);
  EXPECT_EQ(std::memcmp(copy, buf, sizeof buf), 0);
}

TEST(BadInput, CoreArguments) {
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<8, 1, 2, 1, 3>;  // q, out [T][6]; k, v [T][3]
    static ScaledDotProductAttention<Cfg, A> attn;
    static float q[8 * 6], k[8 * 3], v[8 * 3], out[8 * 6];
    microattn_test::Rng rng(5);
    rng.fill(q, 8 * 6, -1, 1);
    rng.fill(k, 8 * 3, -1, 1);
    rng.fill(v, 8 * 3, -1, 1);
    fill_sentinel(out);
    const float s = 0.5f;
    ASSERT_EQ(attn.set_scale(s), Status::kOk);
    EXPECT_EQ(attn.forward(nullptr, 6, k, 3, v, 3, 4, out, 6), Status::kNullPointer);
    EXPECT_EQ(attn.forward(q, 6, nullptr, 3, v, 3, 4, out, 6), Status::kNullPointer);
    EXPECT_EQ(attn.forward(q, 6, k, 3, nullptr, 3, 4, out, 6), Status::kNullPointer);
    EXPECT_EQ(attn.forward(q, 6, k, 3, v, 3, 4, nullptr, 6), Status::kNullPointer);
    EXPECT_EQ(attn.forward(q, 6, k, 3, v, 3, 0, out, 6), Status::kBadTokenCount);
    EXPECT_EQ(attn.forward(q, 6, k, 3, v, 3, 9, out, 6), Status::kBadTokenCount);
    EXPECT_EQ(attn.forward(q, 5, k, 3, v, 3, 4, out, 6), Status::kBadStride);
    EXPECT_EQ(attn.forward(q, 6, k, 2, v, 3, 4, out, 6), Status::kBadStride);
    EXPECT_EQ(attn.forward(q, 6, k, 3, v, 2, 4, out, 6), Status::kBadStride);
    EXPECT_EQ(attn.forward(q, 6, k, 3, v, 3, 4, out, 5), Status::kBadStride);
    EXPECT_EQ(attn.set_scale(kNaN), Status::kBadScale);
    EXPECT_EQ(attn.set_scale(kInf), Status::kBadScale);
    EXPECT_EQ(attn.scale(), s) << "a rejected scale is not kept";
    EXPECT_TRUE(all_sentinel(out)) << A::name();
    // Output overlapping any input.
    static float big[8 * 6 + 8 * 3 + 8 * 3];
    fill_sentinel(big);
    EXPECT_EQ(attn.forward(big, 6, k, 3, v, 3, 4, big + 4, 6), Status::kOverlap);
    EXPECT_EQ(attn.forward(q, 6, big, 3, v, 3, 4, big + 2, 6), Status::kOverlap);
    EXPECT_EQ(attn.forward(q, 6, k, 3, big + 30, 3, 4, big + 10, 6), Status::kOverlap);
    EXPECT_TRUE(all_sentinel(big)) << A::name();
    // Adjacent, not overlapping, is fine.
    EXPECT_EQ(attn.forward(q, 6, k, 3, v, 3, 4, big, 6), Status::kOk);
  });
}

// |scale| * log2(e) must be finite: the kernels fold it into Q (FLT_MAX / log2 e = 2.35865e38).
TEST(BadInput, ScaleWhoseBase2FormOverflows) {
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    static MultiHeadAttention<LayerCfg, A> layer;
    static microattn::KvAttention<LayerCfg, A> kv;
    using CoreCfg = Config<8, 1, 2, 1, 3>;
    static ScaledDotProductAttention<CoreCfg, A> core;
    ASSERT_EQ(layer.set_weights(full_weights()), Status::kOk);
    float x[8 * 6], y[8 * 6], q[8 * 6], kv_in[8 * 3];
    microattn_test::Rng(6).fill(x, 8 * 6, -1, 1);
    microattn_test::Rng(7).fill(q, 8 * 6, -1, 1);
    microattn_test::Rng(8).fill(kv_in, 8 * 3, -1, 1);
    for (float bad : {2.3590e38f, -2.3590e38f, 3.4028235e38f, -3.4028235e38f}) {
      fill_sentinel(y);
      EXPECT_EQ(layer.set_scale(bad), Status::kBadScale) << A::name() << " " << bad;
      EXPECT_EQ(core.set_scale(bad), Status::kBadScale) << bad;
      EXPECT_EQ(kv.set_scale(bad), Status::kBadScale) << bad;
      EXPECT_TRUE(all_sentinel(y)) << A::name();
    }
    EXPECT_EQ(kv.scale(), microattn::default_scale<LayerCfg>()) << "a rejected scale is not kept";
    // The largest accepted magnitudes (their scores overflow: NaN rows, see NumericContract).
    EXPECT_EQ(layer.set_scale(2.3580e38f), Status::kOk);
    EXPECT_EQ(layer.forward(x, 4, y), Status::kOk);
    EXPECT_EQ(core.set_scale(-2.3580e38f), Status::kOk);
    EXPECT_EQ(core.forward(q, 6, kv_in, 3, kv_in, 3, 4, y, 6), Status::kOk);
    EXPECT_EQ(kv.set_scale(2.3580e38f), Status::kOk);
  });
}

// Strides so large that the span of T rows does not fit the address space are kBadStride (they
// used to wrap the pointer arithmetic); with one row any stride >= the row is fine.
TEST(BadInput, StrideWhoseSpanOverflows) {
  using Cfg = Config<8, 1, 2, 1, 3>;
  static ScaledDotProductAttention<Cfg> attn;
  static float q[8 * 6], k[8 * 3], v[8 * 3], out[8 * 6];
  microattn_test::Rng(9).fill(q, 8 * 6, -1, 1);
  microattn_test::Rng(10).fill(k, 8 * 3, -1, 1);
  microattn_test::Rng(11).fill(v, 8 * 3, -1, 1);
  fill_sentinel(out);
  const std::size_t huge = SIZE_MAX / sizeof(float);       // 2^62 on 64-bit targets
  const std::size_t wraps = SIZE_MAX / sizeof(float) / 2;  // fits size_t, but p + span wraps
  const float s = 0.5f;
  ASSERT_EQ(attn.set_scale(s), Status::kOk);
  EXPECT_EQ(attn.forward(q, huge, k, 3, v, 3, 2, out, 6), Status::kBadStride);
  EXPECT_EQ(attn.forward(q, 6, k, huge, v, 3, 2, out, 6), Status::kBadStride);
  EXPECT_EQ(attn.forward(q, 6, k, 3, v, huge, 2, out, 6), Status::kBadStride);
  EXPECT_EQ(attn.forward(q, 6, k, 3, v, 3, 2, out, huge), Status::kBadStride);
  EXPECT_EQ(attn.forward(q, 6, k, 3, v, 3, 3, out, wraps), Status::kBadStride);
  EXPECT_EQ(attn.forward(q, wraps, k, 3, v, 3, 3, out, 6), Status::kBadStride);
  EXPECT_TRUE(all_sentinel(out));
  EXPECT_EQ(attn.forward(q, huge, k, huge, v, huge, 1, out, huge), Status::kOk);  // one row
  EXPECT_FALSE(all_sentinel(out));
}

// Chunked prefill with W_O reads each chunk's x and then writes that chunk's y: y overlapping a
// later chunk's x would feed overwritten rows to the cache. y starting after x is refused when
// the call runs in several chunks; y at or before x is fine and gives what separate buffers give.
TEST(BadInput, ChunkedPrefillOverlap) {
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    constexpr std::size_t DM = 6, T = 6;  // chunks of 3; 1 + T cached, then one decode (T_max 8)
    static microattn::KvAttention<LayerCfg, A, 3> kv, twin;
    static float buf[(T + 2) * DM], keep[(T + 2) * DM], x[T * DM], y[T * DM], y1[DM], y2[DM];
    ASSERT_EQ(kv.set_weights(full_weights()), Status::kOk);
    ASSERT_EQ(twin.set_weights(full_weights()), Status::kOk);
    microattn_test::Rng(12).fill(x, T * DM, -1, 1);
    for (int shift : {-1, 0, 1}) {  // y = x - 1 row, y = x, y = x + 1 row
      for (std::size_t n : {std::size_t{3}, T}) {
        kv.reset();
        twin.reset();
        ASSERT_EQ(kv.prefill(x, 1, y), Status::kOk);  // something in the cache already
        ASSERT_EQ(twin.prefill(x, 1, y), Status::kOk);
        fill_sentinel(buf);
        float* xin = buf + DM;
        std::memcpy(xin, x, n * DM * sizeof(float));
        float* yout = xin + static_cast<std::ptrdiff_t>(shift) * static_cast<std::ptrdiff_t>(DM);
        std::memcpy(keep, buf, sizeof buf);
        const Status st = kv.prefill(xin, n, yout);
        if (shift > 0 && n > 3) {
          EXPECT_EQ(st, Status::kOverlap) << A::name() << " shift " << shift << " n " << n;
          EXPECT_EQ(std::memcmp(buf, keep, sizeof buf), 0) << A::name();
          EXPECT_EQ(kv.length(), 1u);
        } else {
          ASSERT_EQ(st, Status::kOk) << A::name() << " shift " << shift << " n " << n;
          ASSERT_EQ(twin.prefill(x, n, y), Status::kOk);
          EXPECT_EQ(std::memcmp(yout, y, n * DM * sizeof(float)), 0)
              << A::name() << " shift " << shift << " n " << n;
        }
        // The cache is what it would be without the overlap (or, refused, as before the call):
        // the next token agrees bit for bit with the twin.
        ASSERT_EQ(kv.decode(x + (T - 1) * DM, y1), Status::kOk);
        ASSERT_EQ(twin.decode(x + (T - 1) * DM, y2), Status::kOk);
        EXPECT_EQ(std::memcmp(y1, y2, sizeof y1), 0) << A::name() << " shift " << shift;
      }
    }
  });
}

// With W_O wider than d_model (OutDim 12, d_model 8) y rows are longer than x rows, so `y == x`
// overwrites the next chunk's x before it is read: kOverlap. The rule is that each chunk's y
// rows end before the next chunk's x rows begin: y starting far enough before x is accepted and
// gives the outputs of separate buffers.
TEST(BadInput, ChunkedPrefillOverlapWiderOutput) {
  using C = Config<8, 8, 2, 1, 4, microattn::OutDim{12}>;
  constexpr std::size_t DM = 8, OD = 12, T = 6;  // chunks of 3
  static microattn_test::RandomWeights<C> w;
  w.fill(21);
  static microattn::KvAttention<C, microattn::DefaultArch, 3> kv, twin;
  ASSERT_EQ(kv.set_weights(w.view(microattn::WeightLayout::kInOut)), Status::kOk);
  ASSERT_EQ(twin.set_weights(w.view(microattn::WeightLayout::kInOut)), Status::kOk);
  static float x[T * DM], y[T * OD], buf[T * OD + T * DM];
  microattn_test::Rng(22).fill(x, T * DM, -1, 1);
  ASSERT_EQ(twin.prefill(x, T, y), Status::kOk);
  // y == x: the first chunk's 3 y rows (36 floats) run into x row 3 (at 24): refused.
  std::memcpy(buf, x, sizeof x);
  EXPECT_EQ(kv.prefill(buf, T, buf), Status::kOverlap);
  EXPECT_EQ(kv.length(), 0u);
  EXPECT_EQ(std::memcmp(buf, x, sizeof x), 0);
  // x after y by 12 floats: chunk ends e = 3: y ends at 36 <= x row 3 at 12 + 24. Accepted.
  float* xin = buf + 12;
  std::memcpy(xin, x, sizeof x);
  ASSERT_EQ(kv.prefill(xin, T, buf), Status::kOk);
  EXPECT_EQ(std::memcmp(buf, y, sizeof y), 0);
}

// Weights packed into RAM at start-up must not be the output buffer: y overlapping any weight
// or bias array the configuration reads is kOverlap (it used to run, with wrong results).
TEST(BadInput, OutputOverlappingWeights) {
  static MultiHeadAttention<LayerCfg> layer;
  static microattn::KvAttention<LayerCfg> kv;
  static float ram[4 * 64 + 4 * 16];  // the weights, in RAM
  microattn_test::Rng(13).fill(ram, sizeof ram / sizeof ram[0], -1, 1);
  Weights<LayerCfg> w(microattn::WeightLayout::kInOut, ram, ram + 64, ram + 128, ram + 192,
                      ram + 256, ram + 272, ram + 288, ram + 304);
  ASSERT_EQ(layer.set_weights(w), Status::kOk);
  ASSERT_EQ(kv.set_weights(w), Status::kOk);
  static float keep[sizeof ram / sizeof ram[0]];
  std::memcpy(keep, ram, sizeof ram);
  float x[8 * 6];
  microattn_test::Rng(14).fill(x, 8 * 6, -1, 1);
  // Into w_q, into the end of w_o, into b_v, into b_o.
  for (float* y : {ram + 10, ram + 192 + 20, ram + 290, ram + 300}) {
    EXPECT_EQ(layer.forward(x, 4, y), Status::kOverlap);
    EXPECT_EQ(kv.prefill(x, 4, y), Status::kOverlap);
    EXPECT_EQ(kv.decode(x, y), Status::kOverlap);
  }
  EXPECT_EQ(kv.length(), 0u);
  EXPECT_EQ(std::memcmp(ram, keep, sizeof ram), 0);
  static float y[8 * 6];
  EXPECT_EQ(layer.forward(x, 4, y), Status::kOk);
}

TEST(BadInput, StatusNames) {
  EXPECT_EQ(std::strcmp(microattn::to_string(Status::kOk), "ok"), 0);
  EXPECT_EQ(std::strcmp(microattn::to_string(Status::kCacheFull), "cache full"), 0);
  EXPECT_EQ(std::strcmp(microattn::to_string(static_cast<Status>(200)), "unknown status"), 0);
}

}  // namespace
