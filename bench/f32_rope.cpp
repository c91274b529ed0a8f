// SPDX-License-Identifier: Apache-2.0
// Kernel family: rotary positional embeddings (include/microattn/kernels/f32_rope.hpp), from
// the precomputed cos/sin table, on the prefill shape of P3 (1024 tokens x 8 heads x 64) in both
// pairings. gelem_per_s = 10^9 rotated floats per second; it is O(d_head) per head and token,
// so it should stay a small fraction of a layer's time (compare with P3's time per token).
#include <memory>

#include "bench_util.hpp"

#if __has_include("microattn/kernels/f32_rope.hpp")
#include "microattn/kernels/f32_rope.hpp"
#define MICROATTN_BENCH_HAVE_ROPE 1
#else
#define MICROATTN_BENCH_HAVE_ROPE 0
#endif

namespace microattn_bench {
#if MICROATTN_BENCH_HAVE_ROPE
namespace {

constexpr std::size_t kT = 1024, kH = 8, kD = 64;
using Table = microattn::kernels::RopeTable<kT, kD>;

void bm_rope(benchmark::State& state, microattn::RopePairing pairing) {
  auto table = std::make_unique<Table>();
  microattn::kernels::rope_fill(*table, 10000.0f, kD / 2);
  AlignedFloats q = uniform_floats(kT * kH * kD, -1.0f, 1.0f, 21);
  for (auto _ : state) {
    // Rotating again and again keeps the values bounded (rotations preserve norms).
    microattn::kernels::f32_rope_rows(q.data(), kH * kD, kD, kT, kH, 0, *table, kD / 2, pairing);
    benchmark::ClobberMemory();
  }
  state.counters["gelem_per_s"] = benchmark::Counter(
      static_cast<double>(kT * kH * kD) * static_cast<double>(state.iterations()) * 1e-9,
      benchmark::Counter::kIsRate);
}

}  // namespace
#endif

void register_rope_benchmarks() {
#if MICROATTN_BENCH_HAVE_ROPE
  benchmark::RegisterBenchmark("f32_rope__half_split/T:1024/H:8/d_head:64", bm_rope,
                               microattn::RopePairing::kHalfSplit)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("f32_rope__adjacent/T:1024/H:8/d_head:64", bm_rope,
                               microattn::RopePairing::kAdjacent)
      ->Unit(benchmark::kMicrosecond);
#endif
}

}  // namespace microattn_bench
