// SPDX-License-Identifier: Apache-2.0
// Multi-core: every entry point with an executor of 2 and 3 workers (and 3 on a pool of 4)
// gives bit for bit the outputs of the same object without one (which the other tests check
// against the double-precision reference), for every mask, weight and cache type; and
// set_executor's argument checks. Runs under ThreadSanitizer in the host-tsan preset.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/microattn.hpp"
#include "microattn/thread_pool.hpp"
#include "support/random_weights.hpp"
#include "support/rng.hpp"
#include "support/unit.hpp"

namespace {

using microattn::Bias;
using microattn::Config;
using microattn::Executor;
using microattn::KvAttention;
using microattn::MaxWorkers;
using microattn::MultiHeadAttention;
using microattn::ScaledDotProductAttention;
using microattn::Status;
using microattn::WeightLayout;

constexpr std::size_t kT = 150, kDM = 40, kMaxOut = 64;
float g_x[kT * kDM], g_x2[kT * kDM], g_y1[kT * kMaxOut], g_yn[kT * kMaxOut];
float g_maps1[4 * kT * kT], g_mapsn[4 * kT * kT];

/// Pools of 2, 3 and 4 threads (the last one used with 3 workers: fewer tasks than threads).
microattn::ThreadPool& pool(std::size_t n) {
  static microattn::ThreadPool p2(2), p3(3), p4(4);
  return n == 2 ? p2 : n == 3 ? p3 : p4;
}
Executor executor(std::size_t pool_size, std::size_t workers) {
  Executor e = pool(pool_size).executor();
  e.workers = workers;
  return e;
}
const std::size_t kRuns[][2] = {{2, 2}, {3, 3}, {4, 3}};  // {pool threads, workers}

template <class C>
void check_layer(std::uint64_t seed, WeightLayout layout) {
  constexpr std::size_t OD = C::kOutDim;
  static microattn_test::RandomWeights<C> w;
  w.fill(seed);
  static MultiHeadAttention<C> layer;
  ASSERT_EQ(layer.set_executor(Executor{}), Status::kOk);
  ASSERT_EQ(layer.set_weights(w.view(layout)), Status::kOk);
  const std::size_t Ts[] = {1, 5, 49, 97, kT};
  for (std::size_t T : Ts) {
    microattn_test::Rng(seed + T).fill(g_x, T * kDM, -1, 1);
    ASSERT_EQ(layer.set_executor(Executor{}), Status::kOk);
    ASSERT_EQ(layer.forward(g_x, T, g_y1), Status::kOk);
    microattn_test::Rng(seed + T + 1000).fill(g_x2, T * kDM, -1, 1);
    for (const auto& r : kRuns) {
      // Another input first (one worker), so a part of the work left undone shows: the
      // layer's buffers would otherwise still hold the 1-worker run's values.
      ASSERT_EQ(layer.set_executor(Executor{}), Status::kOk);
      ASSERT_EQ(layer.forward(g_x2, T, g_yn), Status::kOk);
      ASSERT_EQ(layer.set_executor(executor(r[0], r[1])), Status::kOk);
      ASSERT_EQ(layer.forward(g_x, T, g_yn), Status::kOk);
      EXPECT_EQ(std::memcmp(g_y1, g_yn, T * OD * sizeof(float)), 0)
          << "T " << T << " workers " << r[1];
    }
  }
}

using Mha = Config<kT, kDM, 4, 2, 16, Bias::kYes, MaxWorkers{4}, microattn::OutDim{48}>;
using MhaNone = Config<kT, kDM, 4, 4, 8, Bias::kQkv, MaxWorkers{4}, microattn::Mask::kNone>;
using MhaWin = Config<kT, kDM, 4, 1, 10, MaxWorkers{3}, microattn::SlidingWindow{37}>;
using MhaQ8 = Config<kT, kDM, 4, 2, 16, Bias::kYes, MaxWorkers{4}, microattn::OutDim{48},
                     microattn::WeightType::kInt8>;

TEST(Threads, LayerCausal) { check_layer<Mha>(1, WeightLayout::kPanel16); }
TEST(Threads, LayerNoMask) { check_layer<MhaNone>(2, WeightLayout::kOutIn); }
TEST(Threads, LayerSlidingWindow) { check_layer<MhaWin>(3, WeightLayout::kInOut); }

TEST(Threads, LayerInt8Weights) {
  // int8 weights quantised from the random fp32 ones, as kPanel16.
  static microattn_test::QuantWeights<Mha> q;
  ASSERT_TRUE(q.fill(4));
  static MultiHeadAttention<MhaQ8> layer;
  ASSERT_EQ(layer.set_weights(q.view8<MhaQ8>(2)), Status::kOk);
  microattn_test::Rng(5).fill(g_x, kT * kDM, -1, 1);
  ASSERT_EQ(layer.forward(g_x, kT, g_y1), Status::kOk);
  for (const auto& r : kRuns) {
    ASSERT_EQ(layer.set_executor(executor(r[0], r[1])), Status::kOk);
    ASSERT_EQ(layer.forward(g_x, kT, g_yn), Status::kOk);
    EXPECT_EQ(std::memcmp(g_y1, g_yn, kT * 48 * sizeof(float)), 0) << "workers " << r[1];
  }
}

TEST(Threads, IntegerCompute) {
  // Compute::kInt8: x quantised by rows over the workers, then every projection from it; W_O's
  // rows quantised by the worker that projects them. The layer and a KV layer's prefill and
  // decode, bit-identical for every executor.
  using MhaQd8 = Config<kT, kDM, 4, 2, 16, Bias::kYes, MaxWorkers{4}, microattn::OutDim{48},
                        microattn::WeightType::kInt8, microattn::Compute::kInt8>;
  static microattn_test::QuantWeights<Mha> q;
  ASSERT_TRUE(q.fill(6));
  static MultiHeadAttention<MhaQd8> layer;
  static KvAttention<MhaQd8, microattn::DefaultArch, 40> kv;
  ASSERT_EQ(layer.set_weights(q.view8<MhaQd8>(1)), Status::kOk);
  ASSERT_EQ(kv.set_weights(q.view8<MhaQd8>(0)), Status::kOk);
  microattn_test::Rng(9).fill(g_x, kT * kDM, -1, 1);
  auto run = [&](float* y) {
    ASSERT_EQ(layer.forward(g_x, 100, y), Status::kOk);  // (100 + 75) * 48 <= kT * kMaxOut
    kv.reset();
    ASSERT_EQ(kv.prefill(g_x, 70, y + 100 * 48), Status::kOk);
    for (std::size_t t = 70; t < 75; ++t)
      ASSERT_EQ(kv.decode(g_x + t * kDM, y + (100 + t) * 48), Status::kOk);
  };
  run(g_y1);
  for (const auto& r : kRuns) {
    ASSERT_EQ(layer.set_executor(executor(r[0], r[1])), Status::kOk);
    ASSERT_EQ(kv.set_executor(executor(r[0], r[1])), Status::kOk);
    run(g_yn);
    EXPECT_EQ(std::memcmp(g_y1, g_yn, (100 + 75) * 48 * sizeof(float)), 0) << "workers " << r[1];
  }
}

// The building blocks (an Mlp with fp32 and with integer compute, a Linear with integer
// compute): one row (split by columns) and many (by rows, several kMaxRows chunks), each part
// quantising its own rows.
template <class Block, class W>
void check_block(Block& b, const W& w, std::size_t in, std::size_t out) {
  ASSERT_EQ(b.set_executor(Executor{}), Status::kOk);
  ASSERT_EQ(b.set_weights(w), Status::kOk);
  microattn_test::Rng(11).fill(g_x, kT * kDM, -1, 1);
  microattn_test::Rng(12).fill(g_x2, kT * kDM, -1, 1);
  for (std::size_t M : {std::size_t{1}, std::size_t{kT * kDM / in}}) {
    ASSERT_EQ(b.set_executor(Executor{}), Status::kOk);
    ASSERT_EQ(b.forward(g_x, M, g_y1), Status::kOk);
    for (const auto& r : kRuns) {
      ASSERT_EQ(b.set_executor(Executor{}), Status::kOk);
      ASSERT_EQ(b.forward(g_x2, M, g_yn), Status::kOk);
      ASSERT_EQ(b.set_executor(executor(r[0], r[1])), Status::kOk);
      ASSERT_EQ(b.forward(g_x, M, g_yn), Status::kOk);
      EXPECT_EQ(std::memcmp(g_y1, g_yn, M * out * sizeof(float)), 0)
          << "M " << M << " workers " << r[1];
    }
  }
}

TEST(Threads, BuildingBlocks) {
  using microattn::Activation;
  using microattn::Compute;
  using microattn::WeightType;
  constexpr std::size_t kH = 56;  // hidden width; kDM (40) inputs
  static std::int8_t q[3][kDM * kH];
  static float f[3][kDM * kH], s[3][kH];
  microattn_test::Rng rng(13);
  for (int m = 0; m < 3; ++m) {
    rng.fill(f[m], kDM * kH, -0.2f, 0.2f);
    rng.fill(s[m], kH, 0.001f, 0.002f);
    for (std::size_t i = 0; i < kDM * kH; ++i) q[m][i] = std::int8_t(int(f[m][i] * 600.0f));
  }
  using Ff = microattn::MlpConfig<kDM, kH, Activation::kSwiGlu, MaxWorkers{4}>;
  using FfQd8 = microattn::MlpConfig<kDM, kH, Activation::kSwiGlu, WeightType::kInt8,
                                     Compute::kInt8, MaxWorkers{4}>;
  using LinQd8 = microattn::LinearConfig<kDM, kH, WeightType::kInt8, Compute::kInt8, Bias::kYes,
                                         MaxWorkers{4}>;
  microattn::MlpWeights<Ff> wf;
  wf.layout = WeightLayout::kOutIn, wf.w_gate = f[0], wf.w_up = f[1], wf.w_down = f[2];
  microattn::MlpWeights<FfQd8> wq;
  wq.layout = WeightLayout::kInOut, wq.w_gate = q[0], wq.w_up = q[1], wq.w_down = q[2];
  wq.s_gate = s[0], wq.s_up = s[1], wq.s_down = s[2];
  microattn::LinearWeights<LinQd8> wl;
  wl.layout = WeightLayout::kOutIn, wl.w = q[0], wl.s = s[0], wl.b = s[1];
  static microattn::Mlp<Ff> ff;
  static microattn::Mlp<FfQd8, microattn::DefaultArch, 8> ffq;
  static microattn::Linear<LinQd8, microattn::DefaultArch, 8> lin;
  check_block(ff, wf, kDM, kDM);
  check_block(ffq, wq, kDM, kDM);
  check_block(lin, wl, kDM, kH);
}

TEST(Threads, LayerMapsAndCore) {
  static microattn_test::RandomWeights<Mha> w;
  w.fill(6);
  static MultiHeadAttention<Mha> layer;
  ASSERT_EQ(layer.set_weights(w.view(WeightLayout::kInOut)), Status::kOk);
  const std::size_t T = 77;
  microattn_test::Rng(7).fill(g_x, T * kDM, -1, 1);
  ASSERT_EQ(layer.set_executor(Executor{}), Status::kOk);
  ASSERT_EQ(layer.forward_with_maps(g_x, T, g_y1, g_maps1, 4 * T * T), Status::kOk);
  ASSERT_EQ(layer.set_executor(executor(3, 3)), Status::kOk);
  ASSERT_EQ(layer.forward_with_maps(g_x, T, g_yn, g_mapsn, 4 * T * T), Status::kOk);
  EXPECT_EQ(std::memcmp(g_y1, g_yn, T * 48 * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(g_maps1, g_mapsn, 4 * T * T * sizeof(float)), 0);

  static ScaledDotProductAttention<Mha> core;
  static float q[kT * 64], k[kT * 32], v[kT * 32];
  microattn_test::Rng rng(8);
  rng.fill(q, kT * 64, -2, 2);
  rng.fill(k, kT * 32, -2, 2);
  rng.fill(v, kT * 32, -1, 1);
  ASSERT_EQ(core.forward(q, k, v, kT, g_y1), Status::kOk);
  for (const auto& r : kRuns) {
    ASSERT_EQ(core.set_executor(executor(r[0], r[1])), Status::kOk);
    ASSERT_EQ(core.forward(q, k, v, kT, g_yn), Status::kOk);
    EXPECT_EQ(std::memcmp(g_y1, g_yn, kT * 64 * sizeof(float)), 0) << "workers " << r[1];
  }
}

/// A KV layer: prefill in chunks, decode, truncate, more decode; outputs with each executor
/// bit-identical to those without.
template <class C, std::size_t kChunk = C::kTMax>
void check_kv(std::uint64_t seed, WeightLayout layout) {
  constexpr std::size_t OD = C::kOutDim;
  static microattn_test::RandomWeights<C> w;
  w.fill(seed);
  static KvAttention<C, microattn::DefaultArch, kChunk> kv;
  ASSERT_EQ(kv.set_weights(w.view(layout)), Status::kOk);
  const std::size_t T = C::kTMax;
  microattn_test::Rng(seed).fill(g_x, kT * kDM, -1, 1);
  auto sequence = [&](float* y) {
    kv.reset();
    microattn::RopeConfig r;
    r.enabled = C::kHasRope;
    ASSERT_EQ(kv.set_rope(r), Status::kOk);
    const std::size_t a = T / 2;
    ASSERT_EQ(kv.prefill(g_x, a, y), Status::kOk);
    for (std::size_t t = a; t < a + 6; ++t)
      ASSERT_EQ(kv.decode(g_x + t * kDM, y + t * OD), Status::kOk);
    ASSERT_EQ(kv.truncate(a + 3), Status::kOk);
    const std::size_t rest = T - (a + 3);
    ASSERT_EQ(kv.prefill(g_x + (a + 3) * kDM, rest, y + (a + 3) * OD), Status::kOk);
  };
  ASSERT_EQ(kv.set_executor(Executor{}), Status::kOk);
  sequence(g_y1);
  for (const auto& r : kRuns) {
    ASSERT_EQ(kv.set_executor(executor(r[0], r[1])), Status::kOk);
    sequence(g_yn);
    EXPECT_EQ(std::memcmp(g_y1, g_yn, T * OD * sizeof(float)), 0) << "workers " << r[1];
  }
}

TEST(Threads, KvCacheMha) {
  check_kv<Config<120, kDM, 4, 4, 16, Bias::kYes, MaxWorkers{4}, microattn::OutDim{48},
                  microattn::Rope::kYes>>(11, WeightLayout::kPanel16);
}
TEST(Threads, KvCacheGqaChunked) {
  check_kv<Config<120, kDM, 6, 2, 8, MaxWorkers{3}, microattn::OutDim{48}>, 17>(
      12, WeightLayout::kOutIn);
}
TEST(Threads, KvCacheInt8CacheMqa) {
  check_kv<Config<100, kDM, 4, 1, 16, Bias::kYes, MaxWorkers{4}, microattn::CacheType::kInt8>>(
      13, WeightLayout::kInOut);
}
TEST(Threads, KvCacheRing) {
  check_kv<
      Config<40, kDM, 4, 2, 8, MaxWorkers{4}, microattn::SlidingWindow{9}, microattn::Rope::kYes>,
      8>(14, WeightLayout::kInOut);
}
// G == 1: each worker's V rows go through its Q rows of D floats, after K has left them for the
// ring. A whole-prompt chunk, so the parts have rows to share.
TEST(Threads, KvCacheRingMha) {
  check_kv<
      Config<40, kDM, 4, 4, 8, MaxWorkers{4}, microattn::SlidingWindow{9}, microattn::Rope::kYes>>(
      15, WeightLayout::kInOut);
}

TEST(Threads, SetExecutorChecks) {
  static MultiHeadAttention<MhaWin> layer;  // MaxWorkers{3}
  Executor e = executor(4, 4);
  EXPECT_EQ(layer.set_executor(e), Status::kBadArgument);  // more than MaxWorkers
  e.workers = 2;
  e.run = nullptr;
  EXPECT_EQ(layer.set_executor(e), Status::kBadArgument);  // no run function
  e.workers = 1;
  EXPECT_EQ(layer.set_executor(e), Status::kOk);  // one worker needs none
  EXPECT_EQ(layer.set_executor(executor(3, 3)), Status::kOk);
  static_assert(
      sizeof(MultiHeadAttention<MhaWin>) >
          sizeof(MultiHeadAttention<Config<kT, kDM, 4, 1, 10, microattn::SlidingWindow{37}>>),
      "each worker's scratch is in the object");
}

}  // namespace
