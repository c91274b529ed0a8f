// SPDX-License-Identifier: Apache-2.0
// The library never touches the heap: global operator new/delete and the malloc family are
// replaced by counting versions, and every entry point runs with the count watched. The test
// also proves its own trap fires on a deliberate allocation (as Eigen's nomalloc test does).
#include <cstddef>
#include <cstdlib>
#include <new>

#include "microattn/microattn.hpp"
#include "support/rng.hpp"
#include "support/serial_executor.hpp"
#include "support/unit.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MICROATTN_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define MICROATTN_TEST_ASAN 1
#endif

namespace {
volatile std::size_t g_allocations = 0;
}

#if !defined(MICROATTN_TEST_ASAN) && defined(__GLIBC__)
// The malloc family too (glibc exports the real ones as __libc_*); ASan owns malloc, so
// sanitizer builds watch operator new only.
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void* malloc(std::size_t n) {
  ++g_allocations;
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t m) {
  ++g_allocations;
  return __libc_calloc(n, m);
}
void* realloc(void* p, std::size_t n) {
  ++g_allocations;
  return __libc_realloc(p, n);
}
void* aligned_alloc(std::size_t a, std::size_t n) {
  ++g_allocations;
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, std::size_t a, std::size_t n) {
  ++g_allocations;
  *out = __libc_memalign(a, n);
  return *out ? 0 : 12;
}
}
#define MICROATTN_TEST_WATCHES_MALLOC 1
#endif

namespace {
// The allocator underneath the counting operator new, so one `new` counts once.
void* raw_alloc(std::size_t n) {
#if defined(MICROATTN_TEST_WATCHES_MALLOC)
  return __libc_malloc(n ? n : 1);
#else
  return std::malloc(n ? n : 1);
#endif
}
}  // namespace

void* operator new(std::size_t n) {
  ++g_allocations;
  if (void* p = raw_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++g_allocations;
  return raw_alloc(n);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
// Not inlined: GCC 12 would see our operator new's pointer reach std::free inside gtest's
// test factory and warn (-Wmismatched-new-delete), not knowing the pair is matched by design.
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete[](void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

using microattn::Bias;
using microattn::Config;
using microattn::Status;

// Runs f and returns how many allocations happened meanwhile.
template <class F>
std::size_t allocations_during(F&& f) {
  const std::size_t before = g_allocations;
  f();
  return g_allocations - before;
}

TEST(NoHeap, TrapFiresOnDeliberateAllocation) {
  EXPECT_EQ(allocations_during([] {
              int* volatile p = new int(3);
              delete p;
            }),
            1u);
#if defined(MICROATTN_TEST_WATCHES_MALLOC)
  EXPECT_EQ(allocations_during([] {
              void* volatile p = std::malloc(16);
              std::free(p);
            }),
            1u);
#endif
}

using Cfg = Config<80, 40, 4, 2, 12, Bias::kYes, microattn::Rope::kYes>;
float g_w[4][40 * 48], g_b[4][48], g_x[80 * 40], g_y[80 * 48], g_q[80 * 48], g_kv[2][80 * 24];

TEST(NoHeap, EveryEntryPoint) {
  microattn_test::Rng rng(1);
  for (auto& w : g_w) rng.fill(w, 40 * 48, -0.2f, 0.2f);
  for (auto& b : g_b) rng.fill(b, 48, -0.2f, 0.2f);
  rng.fill(g_x, 80 * 40, -1, 1);
  rng.fill(g_q, 80 * 48, -1, 1);
  rng.fill(g_kv[0], 80 * 24, -1, 1);
  rng.fill(g_kv[1], 80 * 24, -1, 1);
  microattn::Weights<Cfg> w(microattn::WeightLayout::kInOut);
  w.w_q = g_w[0], w.w_k = g_w[1], w.w_v = g_w[2], w.w_o = g_w[3];
  w.b_q = g_b[0], w.b_k = g_b[1], w.b_v = g_b[2], w.b_o = g_b[3];
  Status s1 = Status::kBadArgument, s2 = s1, s3 = s1, s4 = s1, s5 = s1, s6 = s1;
  EXPECT_EQ(allocations_during([&] {
              // Construction in automatic storage, too (the objects are large, so heap-backed
              // containers would show up here).
              static microattn::MultiHeadAttention<Cfg> layer;
              static microattn::MultiHeadAttention<Cfg, microattn::ScalarArch> scalar_layer;
              static microattn::ScaledDotProductAttention<Cfg> core;
              microattn::ScaledDotProductAttention<Config<8, 1, 1, 1, 4>> small_core;
              s1 = layer.set_weights(w);
              s2 = layer.forward(g_x, 80, g_y);
              s3 = scalar_layer.set_weights(w);
              ASSERT_EQ(scalar_layer.set_scale(0.3f), microattn::Status::kOk);
              s4 = scalar_layer.forward(g_x, 37, g_y);
              s5 = core.forward(g_q, g_kv[0], g_kv[1], 80, g_y);
              ASSERT_EQ(small_core.set_scale(1.0f), microattn::Status::kOk);
              s6 = small_core.forward(g_q, 4, g_kv[0], 4, g_kv[1], 4, 8, g_y, 4);
              (void)layer.forward(nullptr, 0, g_y);  // error paths too
              (void)microattn::to_string(Status::kOverlap);
            }),
            0u);
  EXPECT_EQ(s1, Status::kOk);
  EXPECT_EQ(s2, Status::kOk);
  EXPECT_EQ(s3, Status::kOk);
  EXPECT_EQ(s4, Status::kOk);
  EXPECT_EQ(s5, Status::kOk);
  EXPECT_EQ(s6, Status::kOk);
}

// The inference layer: KV cache, RoPE, prefill (whole and chunked), decode, truncate, reset,
// and its error paths (cache overflow), for the SIMD and the scalar arch.
TEST(NoHeap, KvAttentionEntryPoints) {
  microattn::Weights<Cfg> w(microattn::WeightLayout::kInOut);
  w.w_q = g_w[0], w.w_k = g_w[1], w.w_v = g_w[2], w.w_o = g_w[3];
  w.b_q = g_b[0], w.b_k = g_b[1], w.b_v = g_b[2], w.b_o = g_b[3];
  microattn::RopeConfig rope;
  rope.enabled = true;
  rope.pairing = microattn::RopePairing::kAdjacent;
  rope.rotary_dims = 8;
  Status st[16];
  for (Status& s : st) s = Status::kBadArgument;
  EXPECT_EQ(allocations_during([&] {
              static microattn::KvAttention<Cfg> kv;
              static microattn::KvAttention<Cfg, microattn::ScalarArch, 16> kv_scalar;
              st[0] = kv.set_weights(w);
              st[1] = kv.set_rope(rope);
              st[2] = kv.set_scale(0.25f);
              st[3] = kv.prefill(g_x, 50, g_y);
              st[4] = kv.prefill(g_x, 20, g_y);
              st[5] = kv.decode(g_x, g_y);
              st[6] = kv.truncate(30);
              st[7] = kv.decode(g_x, g_y);
              (void)kv.prefill(g_x, 80, g_y);  // kCacheFull
              kv.reset();
              st[8] = kv.decode(g_x, g_y);
              st[9] = kv_scalar.set_weights(w);
              st[10] = kv_scalar.prefill(g_x, 40, g_y);
              st[11] = kv_scalar.decode(g_x, g_y);
            }),
            0u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(st[i], Status::kOk) << "call " << i;
}

// The panel layout: packing at start-up and every entry point that reads kPanel16 weights.
TEST(NoHeap, PanelLayout) {
  using PCfg = Config<40, 32, 4, 2, 16>;  // d_head 16, d_model 32: fits kPanel16
  using microattn::WeightLayout;
  static float src[4][32 * 64], p[4][32 * 64];  // W_q/W_o 32 x 64, W_k/W_v 32 x 32
  microattn_test::Rng rng(7);
  for (auto& m : src) rng.fill(m, 32 * 64, -0.2f, 0.2f);
  microattn::Weights<PCfg> w(WeightLayout::kPanel16);
  w.w_q = p[0], w.w_k = p[1], w.w_v = p[2], w.w_o = p[3];
  Status st[8];
  for (Status& s : st) s = Status::kBadArgument;
  EXPECT_EQ(allocations_during([&] {
              static microattn::KvAttention<PCfg> kv;
              static microattn::MultiHeadAttention<PCfg> layer;
              st[0] = microattn::pack_weight_panels(src[0], WeightLayout::kInOut, 32, 64, p[0]);
              st[1] = microattn::pack_weight_panels(src[1], WeightLayout::kOutIn, 32, 32, p[1]);
              st[2] = microattn::pack_weight_panels(src[2], WeightLayout::kInOut, 32, 32, p[2]);
              st[3] = microattn::pack_weight_panels(src[3], WeightLayout::kInOut, 64, 32, p[3]);
              st[4] = kv.set_weights(w);
              st[5] = kv.prefill(g_x, 20, g_y);
              st[6] = kv.decode(g_x, g_y);
              st[7] = layer.set_weights(w) == Status::kOk ? layer.forward(g_x, 40, g_y)
                                                          : Status::kBadArgument;
            }),
            0u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(st[i], Status::kOk) << "call " << i;
}

// int8 weights and the int8 cache: quantising at start-up and every entry point.
TEST(NoHeap, Int8WeightsAndCache) {
  using QCfg = Config<40, 32, 4, 2, 16, microattn::WeightType::kInt8, microattn::CacheType::kInt8>;
  using microattn::WeightLayout;
  static float src[4][32 * 64], sc[4][64];
  static std::int8_t q[4][32 * 64];
  microattn_test::Rng rng(8);
  for (auto& m : src) rng.fill(m, 32 * 64, -0.2f, 0.2f);
  Status st[10];
  for (Status& s : st) s = Status::kBadArgument;
  EXPECT_EQ(allocations_during([&] {
              static microattn::KvAttention<QCfg> kv;
              static microattn::MultiHeadAttention<QCfg> layer;
              microattn::QuantError err;
              st[0] = microattn::quantize_int8(src[0], WeightLayout::kInOut, 32, 64,
                                               WeightLayout::kPanel16, q[0], sc[0], &err);
              st[1] = microattn::quantize_int8(src[1], WeightLayout::kInOut, 32, 32,
                                               WeightLayout::kPanel16, q[1], sc[1], &err);
              st[2] = microattn::quantize_int8(src[2], WeightLayout::kInOut, 32, 32,
                                               WeightLayout::kPanel16, q[2], sc[2], &err);
              st[3] = microattn::quantize_int8(src[3], WeightLayout::kInOut, 64, 32,
                                               WeightLayout::kPanel16, q[3], sc[3], &err);
              const microattn::Weights<QCfg> w(WeightLayout::kPanel16, q[0], sc[0], q[1], sc[1],
                                               q[2], sc[2], q[3], sc[3]);
              st[4] = kv.set_weights(w);
              st[5] = kv.prefill(g_x, 20, g_y);
              st[6] = kv.decode(g_x, g_y);
              st[7] = kv.truncate(3);
              st[8] = kv.prefill(g_x, 30, g_y);
              (void)kv.prefill(g_x, 30, g_y);  // kCacheFull
              st[9] = layer.set_weights(w) == Status::kOk ? layer.forward(g_x, 40, g_y)
                                                          : Status::kBadArgument;
            }),
            0u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(st[i], Status::kOk) << "call " << i;
}

// The multi-core split allocates nothing either: an executor that runs its tasks one after the
// other on this thread (no thread library involved) drives every split path.
TEST(NoHeap, ExecutorSplitPaths) {
  using microattn::WeightLayout;
  using TCfg = Config<40, 32, 4, 2, 16, microattn::MaxWorkers{3}, microattn::SlidingWindow{9}>;
  using KCfg = Config<40, 32, 4, 2, 16, microattn::MaxWorkers{3}>;
  static float w[4][32 * 64];
  microattn_test::Rng rng(9);
  for (auto& m : w) rng.fill(m, 32 * 64, -0.2f, 0.2f);
  const microattn::Executor e = microattn_test::serial_executor(3);
  Status st[8];
  for (Status& s : st) s = Status::kBadArgument;
  EXPECT_EQ(allocations_during([&] {
              static microattn::MultiHeadAttention<TCfg> layer;
              static microattn::KvAttention<KCfg> kv;
              static microattn::KvAttention<TCfg, microattn::DefaultArch, 8> ring;
              st[0] = layer.set_executor(e);
              st[1] = layer.set_weights(
                  microattn::Weights<TCfg>(WeightLayout::kPanel16, w[0], w[1], w[2], w[3]));
              st[2] = layer.forward(g_x, 40, g_y);
              st[3] = kv.set_executor(e) == Status::kOk
                          ? kv.set_weights(microattn::Weights<KCfg>(WeightLayout::kInOut, w[0],
                                                                    w[1], w[2], w[3]))
                          : Status::kBadArgument;
              st[4] = kv.prefill(g_x, 30, g_y);
              st[5] = kv.decode(g_x, g_y);
              st[6] = ring.set_executor(e) == Status::kOk
                          ? ring.set_weights(microattn::Weights<TCfg>(WeightLayout::kOutIn, w[0],
                                                                      w[1], w[2], w[3]))
                          : Status::kBadArgument;
              st[7] = ring.prefill(g_x, 30, g_y) == Status::kOk ? ring.decode(g_x, g_y)
                                                                : Status::kBadArgument;
            }),
            0u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(st[i], Status::kOk) << "call " << i;
}

}  // namespace
