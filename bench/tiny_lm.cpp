// SPDX-License-Identifier: Apache-2.0
// The tiny trained language model of issue 35 (examples/tiny_lm/TRAINING.md: character level,
// vocabulary 100, d_model 128, 2 layers, 4 query heads, 2 key/value heads, d_head 32, SwiGLU
// 256, tied LM head, T_max 128) on the host, against a plain C implementation of the same model
// (issue 35: "decode >= 3x the tokens/s of a plain single-threaded C implementation, naive loops,
// -O3 -march=native, measured in one run").
//
//   TLM_naive_decode  bench/tiny_lm_naive.c (C11, naive loops, one thread) decoding a fixed
//                     128-character text one token at a time from an empty cache
//   TLM_decode        microattn::Decoder::decode, the same 128 tokens from an empty cache
//   TLM_decode_2t     the same with an executor of 2 workers (microattn::ThreadPool)
//   TLM_prefill       Decoder::prefill of the 128 tokens into an empty cache (logits of the last)
//   TLM_prefill_2t    the same with 2 workers
//   TLM_decode_q8     TLM_decode with the int8 blob (WeightType::kInt8), when it exists
//   TLM_decode_qd8    TLM_decode_q8 with integer compute (Compute::kInt8: every matrix product)
//
// One iteration = the whole 128-token sequence, reset() included (it is O(1)); the weights are
// the committed blobs (examples/tiny_lm/tiny_lm_f32.bin, tiny_lm_q8.bin), read at run time from
// the source tree (a case whose blob is missing reports an error and is skipped). Every case is
// timed in wall-clock time (UseRealTime, as the /threads: cases), so the 2-worker speed-up and
// the Decoder / naive ratio are ratios of times of one run. Before timing, each fp32 Decoder
// case checks its last logits against the naive baseline's (within 1e-4 of the largest |logit|):
// the two compute the same model.
// Counters: tokens_per_s (128 tokens per iteration over the wall time); gflops / pct_peak
// counting every multiply-add of the sequence as 2 flops: the matrix-vector products of each
// token (the LM head for every decoded token, for the last one only in prefill) and the
// attention's causal half, 4 H d_head per (query, key) pair and layer.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "bench_util.hpp"
#include "microattn/decoder.hpp"
#include "microattn/thread_pool.hpp"
#include "tiny_lm_naive.h"

namespace microattn_bench {
namespace {

constexpr std::size_t kSeq = TLM_TMAX;  // 128 tokens: the whole context

/// A model file read into a 64-byte aligned buffer (the Decoder reads its weights in place and
/// needs 16-byte alignment), kept for the whole run: the Decoder's weights are views into it.
struct Blob {
  struct Free {
    void operator()(unsigned char* p) const noexcept {
      ::operator delete[](p, std::align_val_t(64));
    }
  };
  std::unique_ptr<unsigned char[], Free> p;
  std::size_t bytes = 0;
  std::string error;  // empty when read
};

Blob read_blob(const char* name) {
  Blob b;
  const std::string path = std::string(MICROATTN_TINY_LM_DIR) + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    b.error = "cannot open " + path;
    return b;
  }
  if (std::fseek(f, 0, SEEK_END) == 0) {
    const long n = std::ftell(f);
    if (n > 0 && std::fseek(f, 0, SEEK_SET) == 0) {
      b.p.reset(static_cast<unsigned char*>(::operator new[](n, std::align_val_t(64))));
      b.bytes = std::fread(b.p.get(), 1, static_cast<std::size_t>(n), f);
    }
  }
  std::fclose(f);
  if (b.bytes == 0) b.error = "cannot read " + path;
  return b;
}

const Blob& f32_blob() {
  static const Blob b = read_blob("tiny_lm_f32.bin");
  return b;
}

/// The 128 tokens: text encoded as the model's vocabulary does (id 3 newline, 4 space, 5 + c -
/// 0x21 for the printable ASCII c; see TRAINING.md).
std::array<std::int32_t, kSeq> sequence() {
  static const char kText[] =
      "The artist painted the portrait of a woman with a brush.\n"
      "A computer is a machine that does what you tell it, not what you want. Love is";
  static_assert(sizeof kText - 1 >= kSeq, "the text covers the sequence");
  std::array<std::int32_t, kSeq> t{};
  for (std::size_t i = 0; i < kSeq; ++i) {
    const unsigned char c = static_cast<unsigned char>(kText[i]);
    t[i] = c == '\n' ? 3 : c == ' ' ? 4 : (c >= 0x21 && c <= 0x7E) ? 5 + (c - 0x21) : 0;
  }
  return t;
}

/// Flops of the sequence (see the file comment); logits_every: the LM head for every token.
constexpr double sequence_flops(bool logits_every) {
  constexpr double DM = TLM_DM, QD = TLM_QD, KVD = TLM_KVD, DH = TLM_HIDDEN, T = kSeq;
  constexpr double per_layer = QD * DM + 2 * KVD * DM + DM * QD + 3 * DH * DM;  // MACs
  const double head = 2.0 * TLM_VOCAB * DM * (logits_every ? T : 1.0);
  return 2.0 * TLM_LAYERS * per_layer * T + head +
         TLM_LAYERS * attn_pair_flops(T * (T + 1) / 2, TLM_H, TLM_DH);
}

void set_tlm_counters(benchmark::State& state, bool logits_every) {
  state.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(kSeq), benchmark::Counter::kIsIterationInvariantRate);
  set_flop_counters(state, sequence_flops(logits_every));
}

void bm_naive_decode(benchmark::State& state) {
  const Blob& blob = f32_blob();
  if (!blob.error.empty()) {
    state.SkipWithError(blob.error.c_str());
    return;
  }
  auto m = std::make_unique<tlm_naive>();  // 1.4 MB: weights copied in, and the cache
  if (tlm_naive_load(m.get(), blob.p.get(), blob.bytes) != TLM_NAIVE_OK) {
    state.SkipWithError("tlm_naive_load refused the blob");
    return;
  }
  const std::array<std::int32_t, kSeq> tokens = sequence();
  float logits[TLM_VOCAB];
  for (auto _ : state) {
    tlm_naive_reset(m.get());
    int r = TLM_NAIVE_OK;
    for (std::int32_t t : tokens) r |= tlm_naive_step(m.get(), t, logits);
    if (r != TLM_NAIVE_OK) {
      state.SkipWithError("tlm_naive_step failed");
      break;
    }
    benchmark::DoNotOptimize(logits);
    benchmark::ClobberMemory();
  }
  set_tlm_counters(state, true);
  state.SetLabel("plain C11, naive loops, 1 thread, 128 tokens from an empty cache, real time");
}

using microattn::MaxWorkers;
using Tiny =
    microattn::DecoderConfig<TLM_VOCAB, TLM_DM, TLM_LAYERS, TLM_H, TLM_HKV, TLM_DH, TLM_HIDDEN,
                             TLM_TMAX, microattn::LmHead::kTied, MaxWorkers{2}>;
using TinyQ8 = microattn::DecoderConfig<TLM_VOCAB, TLM_DM, TLM_LAYERS, TLM_H, TLM_HKV, TLM_DH,
                                        TLM_HIDDEN, TLM_TMAX, microattn::LmHead::kTied,
                                        microattn::WeightType::kInt8, MaxWorkers{2}>;
using TinyQd8 =
    microattn::DecoderConfig<TLM_VOCAB, TLM_DM, TLM_LAYERS, TLM_H, TLM_HKV, TLM_DH, TLM_HIDDEN,
                             TLM_TMAX, microattn::LmHead::kTied, microattn::WeightType::kInt8,
                             microattn::Compute::kInt8, MaxWorkers{2}>;

const Blob& q8_blob() {
  static const Blob b = read_blob("tiny_lm_q8.bin");
  return b;
}

/// The naive baseline's logits of the last token of the sequence (computed once).
const std::array<float, TLM_VOCAB>* naive_last_logits() {
  static std::array<float, TLM_VOCAB> logits{};
  static const bool ok = [] {
    if (!f32_blob().error.empty()) return false;
    auto m = std::make_unique<tlm_naive>();
    if (tlm_naive_load(m.get(), f32_blob().p.get(), f32_blob().bytes) != TLM_NAIVE_OK) return false;
    for (std::int32_t t : sequence())
      if (tlm_naive_step(m.get(), t, logits.data()) != TLM_NAIVE_OK) return false;
    return true;
  }();
  return ok ? &logits : nullptr;
}

microattn::ThreadPool& tlm_pool2() {
  static microattn::ThreadPool p(2);
  return p;
}

/// The model of a configuration: one static object (fixed size, zero-initialised).
template <class Cfg>
microattn::Decoder<Cfg>& model() {
  static microattn::Decoder<Cfg> m;
  return m;
}

/// Loads the blob into model<Cfg>() with `threads` workers; for fp32 also checks that the
/// Decoder's last logits of the sequence are the naive baseline's. Empty on success.
template <class Cfg>
std::string setup(const Blob& blob, int threads) {
  if (!blob.error.empty()) return blob.error;
  microattn::DecoderWeights<Cfg> w;
  microattn::Status s = microattn::decoder_weights_from_blob<Cfg>(blob.p.get(), blob.bytes, &w);
  if (s != microattn::Status::kOk)
    return std::string("decoder_weights_from_blob: ") + microattn::to_string(s);
  auto& m = model<Cfg>();
  if ((s = m.set_weights(w)) != microattn::Status::kOk)
    return std::string("set_weights: ") + microattn::to_string(s);
  microattn::Executor e;
  if (threads > 1) e = tlm_pool2().executor();
  if ((s = m.set_executor(e)) != microattn::Status::kOk)
    return std::string("set_executor: ") + microattn::to_string(s);
  if (Cfg::kInt8Weights) return "";
  const std::array<float, TLM_VOCAB>* ref = naive_last_logits();
  if (!ref) return "the naive baseline failed";
  const std::array<std::int32_t, kSeq> tokens = sequence();
  float logits[TLM_VOCAB];
  m.reset();
  if (m.prefill(tokens.data(), kSeq, logits) != microattn::Status::kOk) return "prefill failed";
  m.reset();
  float big = 0.0f, err = 0.0f;
  for (int v = 0; v < TLM_VOCAB; ++v) {
    big = std::fmax(big, std::fabs((*ref)[v]));
    err = std::fmax(err, std::fabs(logits[v] - (*ref)[v]));
  }
  if (!(err <= 1e-4f * big)) return "the Decoder's logits differ from the naive baseline's";
  return "";
}

/// Times `work(model, tokens, logits)` (false: failed) on the 128 tokens from an empty cache,
/// after setup<Cfg>: one decode or prefill case.
template <class Cfg, int kThreads, class Work>
void bm_sequence(benchmark::State& state, bool decode, Work work) {
  const std::string err = setup<Cfg>(Cfg::kInt8Weights ? q8_blob() : f32_blob(), kThreads);
  if (!err.empty()) {
    state.SkipWithError(err.c_str());
    return;
  }
  auto& m = model<Cfg>();
  const std::array<std::int32_t, kSeq> tokens = sequence();
  float logits[TLM_VOCAB];
  for (auto _ : state) {
    m.reset();
    if (!work(m, tokens, logits)) {
      state.SkipWithError(decode ? "decode failed" : "prefill failed");
      break;
    }
    benchmark::DoNotOptimize(logits);
    benchmark::ClobberMemory();
  }
  set_tlm_counters(state, decode);
  state.SetLabel(arch_label<microattn::DefaultArch>() +
                 (Cfg::kInt8Weights ? ", int8 weights" : "") +
                 (Cfg::kCompute == microattn::Compute::kInt8 ? ", integer compute" : "") + ", " +
                 std::to_string(kThreads) + " worker(s), 128 tokens " + (decode ? "from" : "into") +
                 " an empty cache, real time");
}

template <class Cfg, int kThreads>
void bm_decode(benchmark::State& state) {
  bm_sequence<Cfg, kThreads>(state, true, [](auto& m, const auto& tokens, float* logits) {
    bool ok = true;
    for (std::int32_t t : tokens) ok &= m.decode(t, logits) == microattn::Status::kOk;
    return ok;
  });
}

template <class Cfg, int kThreads>
void bm_prefill(benchmark::State& state) {
  bm_sequence<Cfg, kThreads>(state, false, [](auto& m, const auto& tokens, float* logits) {
    return m.prefill(tokens.data(), kSeq, logits) == microattn::Status::kOk;
  });
}

void reg(const char* name, void (*f)(benchmark::State&)) {
  benchmark::RegisterBenchmark(name, f)->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

void register_tiny_lm_benchmarks() {
  reg("TLM_naive_decode", bm_naive_decode);
  reg("TLM_decode", bm_decode<Tiny, 1>);
  reg("TLM_decode_2t", bm_decode<Tiny, 2>);
  reg("TLM_prefill", bm_prefill<Tiny, 1>);
  reg("TLM_prefill_2t", bm_prefill<Tiny, 2>);
  reg("TLM_decode_q8", bm_decode<TinyQ8, 1>);
  reg("TLM_decode_qd8", bm_decode<TinyQd8, 1>);
}

}  // namespace microattn_bench
