// SPDX-License-Identifier: Apache-2.0
// A published checkpoint decoding (issue 49's host target: stories260K decode >= 4x the
// tokens/s of a plain single-threaded C implementation, same run):
//   STORIES_naive_decode  bench/stories_naive.c (tiny_lm_naive.c's loops for stories260K's
//                         shape): 256 tokens from an empty cache, one thread
//   STORIES_decode        microattn::Decoder::decode, the same 256 tokens
// The tokens: the greedy continuation from BOS of tests/python/llama2c_reference.py. The files
// come from the build (tests/real_model.cmake in bench/); the case is skipped without them.
// Before timing, the Decoder's last logits are checked against the baseline's (1e-4 of the
// largest |logit|).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "microattn/decoder.hpp"
#include "stories_naive.h"

namespace microattn_bench {
namespace {

constexpr std::size_t kSteps = 256;
using Stories = microattn::DecoderConfig<512, 64, 5, 8, 4, 8, 172, 512, microattn::LmHead::kTied>;

struct File {
  std::vector<std::uint64_t> words;  // 8-byte aligned; the Decoder needs 16: checked below
  std::size_t bytes = 0;
};

File read_file(const char* name) {
  File f;
  const std::string path = std::string(MICROATTN_STORIES_DIR) + "/" + name;
  std::FILE* fp = std::fopen(path.c_str(), "rb");
  if (!fp) return f;
  std::fseek(fp, 0, SEEK_END);
  const long n = std::ftell(fp);
  std::fseek(fp, 0, SEEK_SET);
  f.words.resize(static_cast<std::size_t>(n) / 8 + 3);
  // (16-byte alignment: operator new's for vectors of this size on the hosts the bench runs)
  f.bytes = std::fread(f.words.data(), 1, static_cast<std::size_t>(n), fp);
  std::fclose(fp);
  return f;
}

/// The 256 tokens (BOS, then the reference's greedy choices).
std::vector<std::int32_t> tokens() {
  const File r = read_file("stories260K_ref.bin");
  std::vector<std::int32_t> t(kSteps);
  if (r.bytes < 12 + 4 * kSteps) return {};
  std::memcpy(t.data(), reinterpret_cast<const unsigned char*>(r.words.data()) + 12, 4 * kSteps);
  return t;
}

struct Naive {
  struct Free {
    void operator()(stories_naive* p) const noexcept {
      ::operator delete(static_cast<void*>(p), std::align_val_t(64));
    }
  };
  std::unique_ptr<stories_naive, Free> m;
};

Naive load_naive(const File& v1) {
  Naive n;
  n.m.reset(
      static_cast<stories_naive*>(::operator new(stories_naive_bytes(), std::align_val_t(64))));
  if (stories_naive_load(n.m.get(), v1.words.data(), v1.bytes) != 0) n.m.reset();
  return n;
}

void bm_naive(benchmark::State& state) {
  const File v1 = read_file("stories260K_f32_v1.bin");
  const std::vector<std::int32_t> t = tokens();
  Naive n = load_naive(v1);
  if (!n.m || t.empty())
    return state.SkipWithError("no stories260K files (tests/real_model.cmake)");
  float logits[STORIES_VOCAB];
  for (auto _ : state) {
    stories_naive_reset(n.m.get());
    int r = 0;
    for (std::int32_t tok : t) r |= stories_naive_step(n.m.get(), tok, logits);
    if (r != 0) return state.SkipWithError("stories_naive_step failed");
    benchmark::DoNotOptimize(logits);
  }
  state.counters["tokens_per_s"] = benchmark::Counter(
      static_cast<double>(kSteps), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel("plain C11, naive loops, 1 thread, 256 tokens from an empty cache");
}

void bm_decode(benchmark::State& state) {
  const File v2 = read_file("stories260K_f32.bin");
  const File v1 = read_file("stories260K_f32_v1.bin");
  const std::vector<std::int32_t> t = tokens();
  static microattn::Decoder<Stories> d;
  if (t.empty() || reinterpret_cast<std::uintptr_t>(v2.words.data()) % 16 != 0 ||
      d.set_weights_blob(v2.words.data(), v2.bytes) != microattn::Status::kOk)
    return state.SkipWithError("no stories260K files (tests/real_model.cmake)");
  float logits[STORIES_VOCAB], want[STORIES_VOCAB];
  Naive n = load_naive(v1);  // the check: the last logits against the baseline's
  if (!n.m) return state.SkipWithError("the baseline refused its file");
  for (std::int32_t tok : t) (void)stories_naive_step(n.m.get(), tok, want);
  d.reset();
  for (std::int32_t tok : t) (void)d.decode(tok, logits);
  double err = 0, scale = 0;
  // (Plain comparisons: GCC 12 for AArch64 at -O3 hit an internal compiler error
  // vectorising this loop as an fmax reduction.)
  for (std::size_t i = 0; i < STORIES_VOCAB; ++i) {
    const double d = std::fabs(double(logits[i]) - want[i]), w = std::fabs(double(want[i]));
    if (d > err || d != d) err = d;
    if (w > scale) scale = w;
  }
  if (!(err <= 1e-4 * scale)) return state.SkipWithError("logits differ from the baseline's");
  for (auto _ : state) {
    d.reset();
    for (std::int32_t tok : t) (void)d.decode(tok, logits);
    benchmark::DoNotOptimize(logits);
  }
  state.counters["tokens_per_s"] = benchmark::Counter(
      static_cast<double>(kSteps), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel("microattn::Decoder::decode, fp32, 1 thread, 256 tokens from an empty cache");
}

BENCHMARK(bm_naive)->Name("STORIES_naive_decode")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bm_decode)->Name("STORIES_decode")->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace microattn_bench
