// SPDX-License-Identifier: Apache-2.0
// microattn against PyTorch itself: layers run by PyTorch (tools/export_pytorch.py --fixtures),
// their weights used exactly as PyTorch stores them (WeightLayout::kOutIn, nothing transposed),
// and one layer as the tool exports it with --layout panel16 (WeightLayout::kPanel16).
#include <cstddef>

#include "data/pytorch_fixtures.h"
#include "microattn/attention.hpp"
#include "microattn/kv_cache.hpp"
#include "support/check.hpp"
#include "support/unit.hpp"

namespace {

using microattn::Bias;
using microattn::Config;
using microattn::Status;
using microattn::WeightLayout;

using microattn_test::max_diff;

// nn.MultiheadAttention(16, 4, bias=True), attn_mask = causal, 11 tokens.
TEST(PyTorch, MultiheadAttentionWithBiases) {
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<11, 16, 4, 4, 4, Bias::kYes>;
    constexpr std::size_t E = 16;
    microattn::Weights<Cfg> w(WeightLayout::kOutIn);
    w.w_q = mha_in_proj_weight, w.w_k = mha_in_proj_weight + E * E,
    w.w_v = mha_in_proj_weight + 2 * E * E;
    w.b_q = mha_in_proj_bias, w.b_k = mha_in_proj_bias + E, w.b_v = mha_in_proj_bias + 2 * E;
    w.w_o = mha_out_proj_weight, w.b_o = mha_out_proj_bias;
    static microattn::MultiHeadAttention<Cfg, A> layer;
    static float y[11 * E];
    ASSERT_EQ(layer.set_weights(w), Status::kOk);
    ASSERT_EQ(layer.forward(mha_x, 11, y), Status::kOk);
    // Both sides are float computations of the same chain (16 + 2*4 + 11 + 16 steps): twice
    // our bound covers the two roundings.
    EXPECT_LE(max_diff(y, mha_y, 11 * E), 2 * microattn_test::tolerance(51, 1.0)) << A::name();
  });
}

// LLaMA-style GQA layer (q/k/v/o_proj Linear, no bias): 6 query heads, 2 key/value heads,
// d_head 5, d_model 24, 13 tokens.
TEST(PyTorch, LlamaStyleGqa) {
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<13, 24, 6, 2, 5>;
    microattn::Weights<Cfg> w(WeightLayout::kOutIn);
    w.w_q = gqa_q_proj, w.w_k = gqa_k_proj, w.w_v = gqa_v_proj, w.w_o = gqa_o_proj;
    static microattn::MultiHeadAttention<Cfg, A> layer;
    static float y[13 * 24];
    ASSERT_EQ(layer.set_weights(w), Status::kOk);
    ASSERT_EQ(layer.forward(gqa_x, 13, y), Status::kOk);
    EXPECT_LE(max_diff(y, gqa_y, 13 * 24), 2 * microattn_test::tolerance(24 + 10 + 13 + 30, 1.0))
        << A::name();
  });
}

// LLaMA-style GQA layer with d_head 16 (d_model 32, 4 query heads, 2 key/value heads, 9
// tokens), weights written by the export tool's kPanel16 path: the layer and a token-by-token
// decode through the KV cache (the panel GEMV) both match PyTorch.
TEST(PyTorch, Panel16ExportLayerAndDecode) {
  microattn_test::for_each_arch([](auto arch) {
    using A = decltype(arch);
    using Cfg = Config<9, 32, 4, 2, 16>;
    constexpr std::size_t T = 9, DM = 32;
    static_assert(
        sizeof(p16_wq) == sizeof(float) * DM * 64 && sizeof(p16_wo) == sizeof(float) * 64 * DM,
        "fixture shapes");
    microattn::Weights<Cfg> w(WeightLayout::kPanel16);
    w.w_q = p16_wq, w.w_k = p16_wk, w.w_v = p16_wv, w.w_o = p16_wo;
    static microattn::MultiHeadAttention<Cfg, A> layer;
    static microattn::KvAttention<Cfg, A> kv;
    static float y[T * DM], yd[T * DM];
    ASSERT_EQ(layer.set_weights(w), Status::kOk);
    ASSERT_EQ(layer.forward(p16_x, T, y), Status::kOk);
    ASSERT_EQ(kv.set_weights(w), Status::kOk);
    kv.reset();
    for (std::size_t t = 0; t < T; ++t)
      ASSERT_EQ(kv.decode(p16_x + t * DM, yd + t * DM), Status::kOk);
    const double tol = 2 * microattn_test::tolerance(DM + 2 * 16 + T + 64, 1.0);
    EXPECT_LE(max_diff(y, p16_y, T * DM), tol) << A::name() << " forward";
    EXPECT_LE(max_diff(yd, p16_y, T * DM), tol) << A::name() << " decode";
  });
}

}  // namespace
