// SPDX-License-Identifier: Apache-2.0
// Autoregressive decode with the KV cache (include/microattn/kv_cache.hpp, issue 4).
//
//   D1  one token after 1023 cached tokens, d_model=512 H=8 d_head=64 (token's projections and
//       W_O included), weights in microattn's decode layout kPanel16
//   D2  the same with GQA, H_kv=2
//   D1_inout, D1_outin  D1 with the weights stored [in][out] and [out][in] (PyTorch)
//   D1_rope  D1 with RoPE on Q and K (half-split pairs, base 10000), when KvAttention has set_rope
//   DW1  decode with a sliding window of 256 at stream position 4095: a full ring of 256
//   D1_256  D1's layer decoding over 256 cached tokens (no window): DW1's yardstick
//   D1_q8, D2_q8  D1, D2 with int8 weights (WeightType::kInt8, kPanel16): a quarter of the
//             weight bytes; D1_q8_kv8, D2_q8_kv8 also with the int8 cache (CacheType::kInt8)
//   D1_qd8_kv8  D1_q8_kv8 with integer compute (Compute::kInt8)
//   D1_f16, D1_bf16  D1 with fp16 / bf16 weights (WeightType::kF16, kBF16, kPanel16): half the
//             weight bytes, widened to fp32 as they are read
//   D1_kv16  D1 with the fp16 cache (CacheType::kF16): half the cache bytes, fp32 weights
//   D1_q8g32  D1 with group-wise int8 weights (WeightType::kInt8G32, kPanel16): a scale per
//             column and group of 32 inputs (+1/8 of the int8 bytes), fp32 compute
//   KP3  a 1024-token prompt prefilled into an empty cache in one call, P3's shape (d_model=512
//        H=8 d_head=64, [in][out] weights): the KV layer's prefill next to the layer's P3
//   KP3_q8_kv8, KP3_qd8_kv8  KP3 with int8 weights and the int8 cache, and with integer compute
//        as well (the scores against the cache integer too)
//   D1_eigen, D2_eigen  optional peer: the same step as an Eigen composition (GEMVs, K_g Q_g,
//             softmax, V_g^T P), when Eigen is installed
//   D1_openblas, D2_openblas  optional peer: the same with cblas_sgemv / cblas_sgemm (1 thread)
// Counters: gbps = bytes a step must read (every weight + the cached K and V of 1024 tokens,
// about 8.4 MB for D1) per second and pct_bw = that as a % of the read bandwidth measured over
// a buffer of the same size (peak_read_bw/<bytes>); gflops / pct_peak as for prefill, with the
// query attending 1024 keys. Time per iteration = time per token.
//
// Each iteration decodes one token at cache length 1023 and then rolls the cache back with
// truncate(1023) (included in the time; it should be O(1)). Without truncate() the cache is
// restored from a snapshot (copy assignment) or by reset() + prefill, with the timer paused.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include "bench_util.hpp"
#include "layer_data.hpp"

#if __has_include("microattn/kv_cache.hpp")
#include "microattn/kv_cache.hpp"
#define MICROATTN_BENCH_HAVE_KV 1
#else
#define MICROATTN_BENCH_HAVE_KV 0
#endif

#if defined(MICROATTN_BENCH_EIGEN)
#include <Eigen/Core>
#endif
#include "peer_openblas.hpp"

namespace microattn_bench {
namespace {

constexpr std::size_t kCtx = 1024;  // cache length after the step
using D1Cfg =
    microattn::Config<kCtx, 512, 8, 8, 64, microattn::Rope::kYes>;  // D1_rope uses the tables
using D2Cfg = microattn::Config<kCtx, 512, 8, 2, 64, microattn::Rope::kYes>;
// Sliding window: DW1 decodes with a full ring of 256 (SlidingWindow{256}, one-token chunks: the
// ring holds exactly 256) at stream position 4095; D1_256 is the same layer without a window
// over 256 cached tokens (what DW1 should match).
constexpr std::size_t kRingW = 256, kStreamLen = 4096;
using DW1Cfg = microattn::Config<kRingW, 512, 8, 8, 64, microattn::SlidingWindow{kRingW}>;
using D256Cfg = microattn::Config<kRingW, 512, 8, 8, 64>;
// int8 weights (per-column scales, kPanel16), with the fp32 and with the int8 cache.
using D1q8 = microattn::Config<kCtx, 512, 8, 8, 64, microattn::WeightType::kInt8>;
using D1q8kv8 = microattn::Config<kCtx, 512, 8, 8, 64, microattn::WeightType::kInt8,
                                  microattn::CacheType::kInt8>;
// D1_qd8_kv8: D1_q8_kv8 with integer compute (Compute::kInt8: the token quantised, int8 GEMVs).
using D1qd8kv8 = microattn::Config<kCtx, 512, 8, 8, 64, microattn::WeightType::kInt8,
                                   microattn::Compute::kInt8, microattn::CacheType::kInt8>;
using D2q8 = microattn::Config<kCtx, 512, 8, 2, 64, microattn::WeightType::kInt8>;
// fp16 and bf16 weights (kPanel16, widened as read), fp32 cache.
using D1f16 = microattn::Config<kCtx, 512, 8, 8, 64, microattn::WeightType::kF16>;
using D1bf16 = microattn::Config<kCtx, 512, 8, 8, 64, microattn::WeightType::kBF16>;
using D1q8g32 = microattn::Config<kCtx, 512, 8, 8, 64, microattn::WeightType::kInt8G32>;
using D1kv16 = microattn::Config<kCtx, 512, 8, 8, 64, microattn::CacheType::kF16>;
using D2q8kv8 = microattn::Config<kCtx, 512, 8, 2, 64, microattn::WeightType::kInt8,
                                  microattn::CacheType::kInt8>;

/// Bytes one step reads: every weight (and int8 scale) and the cached K and V (int8 caches: one
/// byte per value plus a K and a V scale per token and key/value head).
template <class Cfg>
constexpr std::size_t step_bytes() {
  return LayerData<Cfg>::kWeightBytes + 2 * kCtx * Cfg::kKvDim * sizeof(typename Cfg::CacheElem) +
         (Cfg::kInt8Cache ? 2 * kCtx * Cfg::kKvHeads * sizeof(float) : 0);
}
template <class Cfg>
constexpr double step_flops() {
  return proj_flops(1, Cfg::kDModel, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead) +
         4.0 * Cfg::kHeads * Cfg::kDHead * kCtx +
         out_proj_flops(1, Cfg::kDModel, Cfg::kHeads, Cfg::kDHead);
}

template <class Cfg>
void set_decode_counters(benchmark::State& state) {
  set_flop_counters(state, step_flops<Cfg>());
  set_byte_counters(state, static_cast<double>(step_bytes<Cfg>()), step_bytes<Cfg>());
}

#if MICROATTN_BENCH_HAVE_KV
template <class K, class = void>
struct HasTruncate : std::false_type {};
template <class K>
struct HasTruncate<K, std::void_t<decltype(std::declval<K&>().truncate(std::size_t{}))>>
    : std::true_type {};

template <class K, class = void>
struct HasRope : std::false_type {};
template <class K>
struct HasRope<K, std::void_t<decltype(std::declval<K&>().set_rope(microattn::RopeConfig{}))>>
    : std::true_type {};

/// kRope: also rotate Q and K (LLaMA-style, half-split pairs, base 10000, all of d_head).
/// kLayout: how the weights are stored (the same values in every layout).
template <class Cfg, class Arch, bool kRope = false,
          microattn::WeightLayout kLayout = microattn::WeightLayout::kPanel16>
void bm_decode(benchmark::State& state) {
  using Kv = microattn::KvAttention<Cfg, Arch>;
  LayerData<Cfg> d(static_cast<std::uint32_t>(Cfg::kKvHeads) + 100);
  auto kv = std::make_unique<Kv>();
  if (kv->set_weights(d.weights(kLayout)) != microattn::Status::kOk) {
    state.SkipWithError("set_weights failed");
    return;
  }
  if constexpr (kRope) {
    microattn::RopeConfig rope;
    rope.enabled = true;
    if (kv->set_rope(rope) != microattn::Status::kOk) {
      state.SkipWithError("set_rope failed");
      return;
    }
  }
  const float* x_prompt = d.x.data();
  const float* x_token = d.x.data() + (kCtx - 1) * Cfg::kDModel;
  float* y_prompt = d.y.data();
  float* y_token = d.y.data() + (kCtx - 1) * Cfg::kOutDim;
  if (kv->prefill(x_prompt, kCtx - 1, y_prompt) != microattn::Status::kOk) {
    state.SkipWithError("prefill failed");
    return;
  }
  const char* rollback = "truncate";
  if constexpr (HasTruncate<Kv>::value) {
    for (auto _ : state) {
      const microattn::Status s = kv->decode(x_token, y_token);
      if (s != microattn::Status::kOk || kv->truncate(kCtx - 1) != microattn::Status::kOk) {
        state.SkipWithError(microattn::to_string(s));
        break;
      }
      benchmark::ClobberMemory();
    }
  } else if constexpr (std::is_copy_assignable<Kv>::value) {
    rollback = "snapshot copy (timer paused)";
    auto snap = std::make_unique<Kv>(*kv);
    for (auto _ : state) {
      const microattn::Status s = kv->decode(x_token, y_token);
      benchmark::ClobberMemory();
      state.PauseTiming();
      *kv = *snap;
      state.ResumeTiming();
      if (s != microattn::Status::kOk) {
        state.SkipWithError(microattn::to_string(s));
        break;
      }
    }
  } else {
    rollback = "reset + prefill (timer paused)";
    for (auto _ : state) {
      const microattn::Status s = kv->decode(x_token, y_token);
      benchmark::ClobberMemory();
      state.PauseTiming();
      kv->reset();
      const microattn::Status p = kv->prefill(x_prompt, kCtx - 1, y_prompt);
      state.ResumeTiming();
      if (s != microattn::Status::kOk || p != microattn::Status::kOk) {
        state.SkipWithError("decode or prefill failed");
        break;
      }
    }
  }
  set_decode_counters<Cfg>(state);
  state.SetLabel(arch_label<Arch>() + ", " + LayerData<Cfg>::layout_name(kLayout) +
                 (Cfg::kInt8Weights ? ", int8 weights" : "") +
                 (Cfg::kWeightType == microattn::WeightType::kF16    ? ", fp16 weights"
                  : Cfg::kWeightType == microattn::WeightType::kBF16 ? ", bf16 weights"
                                                                     : "") +
                 (Cfg::kInt8Cache ? ", int8 cache" : "") + (kRope ? ", rope" : "") +
                 ", rollback: " + rollback);
}
#endif

/// KP3: one prefill of the whole prompt into an empty cache (reset() is O(1): it is timed).
template <class Cfg>
void bm_kv_prefill(benchmark::State& state) {
  using Kv = microattn::KvAttention<Cfg, microattn::DefaultArch>;
  constexpr std::size_t T = Cfg::kTMax;
  LayerData<Cfg> d(static_cast<std::uint32_t>(T));
  auto kv = std::make_unique<Kv>();
  if (kv->set_weights(d.weights(microattn::WeightLayout::kInOut)) != microattn::Status::kOk) {
    state.SkipWithError("set_weights failed");
    return;
  }
  for (auto _ : state) {
    kv->reset();
    if (kv->prefill(d.x.data(), T, d.y.data()) != microattn::Status::kOk) {
      state.SkipWithError("prefill failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, config_flops<Cfg>());
  state.SetLabel(arch_label<microattn::DefaultArch>() + ", " + std::to_string(T) +
                 " tokens in one prefill");
}

/// One decode step after n_before tokens (the stream or cache), rolled back each iteration;
/// counters over the keys the step attends (at most the window).
template <class Cfg, std::size_t kChunk>
void bm_decode_at(benchmark::State& state, std::size_t n_before) {
  using Kv = microattn::KvAttention<Cfg, microattn::DefaultArch, kChunk>;
  LayerData<Cfg> d(static_cast<std::uint32_t>(Cfg::kKvHeads) + 100);
  AlignedFloats xs = uniform_floats(n_before * Cfg::kDModel + Cfg::kDModel, -1.0f, 1.0f, 77);
  auto kv = std::make_unique<Kv>();
  if (kv->set_weights(d.weights(microattn::WeightLayout::kPanel16)) != microattn::Status::kOk) {
    state.SkipWithError("set_weights failed");
    return;
  }
  for (std::size_t t = 0; t < n_before; t += Cfg::kTMax) {
    const std::size_t n = std::min<std::size_t>(Cfg::kTMax, n_before - t);
    if (kv->prefill(xs.data() + t * Cfg::kDModel, n, d.y.data()) != microattn::Status::kOk) {
      state.SkipWithError("prefill failed");
      return;
    }
  }
  const float* x = xs.data() + n_before * Cfg::kDModel;
  for (auto _ : state) {
    const microattn::Status s = kv->decode(x, d.y.data());
    if (s != microattn::Status::kOk || kv->truncate(n_before) != microattn::Status::kOk) {
      state.SkipWithError("decode or truncate failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  const std::size_t keys =
      std::min<std::size_t>(n_before + 1, Cfg::kSliding ? Cfg::kWindow : n_before + 1);
  const double bytes =
      double(LayerData<Cfg>::kWeightBytes) + 2.0 * keys * Cfg::kKvDim * sizeof(float);
  set_flop_counters(state, proj_flops(1, Cfg::kDModel, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead) +
                               4.0 * Cfg::kHeads * Cfg::kDHead * keys +
                               out_proj_flops(1, Cfg::kDModel, Cfg::kHeads, Cfg::kDHead));
  set_byte_counters(state, bytes, static_cast<std::size_t>(bytes));
  state.SetLabel(arch_label<microattn::DefaultArch>() + ", kPanel16, " + std::to_string(keys) +
                 " keys" +
                 (Cfg::kSliding ? ", ring, stream position " + std::to_string(n_before) : ""));
}

#if defined(MICROATTN_BENCH_EIGEN)
/// One decode step as an Eigen composition: the row-vector GEMVs of the token's projections, the
/// new K/V row appended to a [T][H_kv*d_head] cache, per key/value group S = K_g Q_g (every K row
/// read once for the group's query heads), column softmax, O_g = V_g^T P, then W_O.
template <class Cfg>
void bm_decode_eigen(benchmark::State& state) {
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ColMat = Eigen::MatrixXf;
  using RowVec = Eigen::RowVectorXf;
  constexpr Eigen::Index DM = Cfg::kDModel, QD = Cfg::kQDim, KD = Cfg::kKvDim, D = Cfg::kDHead,
                         G = Cfg::kGroup, T = kCtx;
  LayerData<Cfg> d(static_cast<std::uint32_t>(Cfg::kKvHeads) + 100);
  const Eigen::Map<const RowMat> wq(d.wq.data(), DM, QD), wk(d.wk.data(), DM, KD),
      wv(d.wv.data(), DM, KD), wo(d.wo.data(), QD, DM);
  RowMat kc = RowMat::Random(T, KD), vc = RowMat::Random(T, KD);  // the cached tokens
  const Eigen::Map<const RowVec> x(d.x.data(), DM);
  RowVec q(QD), ctx(QD), y(DM);
  ColMat s(T, G);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  for (auto _ : state) {
    q.noalias() = x * wq;
    kc.row(T - 1).noalias() = x * wk;
    vc.row(T - 1).noalias() = x * wv;
    for (Eigen::Index g = 0; g < static_cast<Eigen::Index>(Cfg::kKvHeads); ++g) {
      const Eigen::Map<const ColMat> qg(q.data() + g * G * D, D, G);
      s.noalias() = kc.middleCols(g * D, D) * (qg * scale);
      for (Eigen::Index e = 0; e < G; ++e) {
        auto col = s.col(e);
        col = (col.array() - col.maxCoeff()).exp();
        col /= col.sum();
      }
      Eigen::Map<ColMat> og(ctx.data() + g * G * D, D, G);
      og.noalias() = vc.middleCols(g * D, D).transpose() * s;
    }
    y.noalias() = ctx * wo;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_decode_counters<Cfg>(state);
  state.SetLabel("eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
                 std::to_string(EIGEN_MAJOR_VERSION) + "." + std::to_string(EIGEN_MINOR_VERSION));
}
#endif

#if defined(MICROATTN_BENCH_OPENBLAS)
/// One decode step with OpenBLAS (1 thread): cblas_sgemv for the token's projections and W_O,
/// the new K/V row appended to [T][H_kv*d_head] caches, per key/value group S = Q_g K_g^T with
/// cblas_sgemm (each K row read once per group; cblas_sgemv when the group is one head), a column
/// softmax with microattn's vector exp, O_g = P^T V_g with cblas_sgemm.
template <class Cfg>
void bm_decode_openblas(benchmark::State& state) {
  using V = microattn::internal::Vec<microattn::DefaultArch>;
  constexpr int DM = Cfg::kDModel, QD = Cfg::kQDim, KD = Cfg::kKvDim, D = Cfg::kDHead,
                G = Cfg::kGroup, T = kCtx;
  LayerData<Cfg> d(static_cast<std::uint32_t>(Cfg::kKvHeads) + 100);
  AlignedFloats kc = uniform_floats(std::size_t{T} * KD, -1.0f, 1.0f, 31);
  AlignedFloats vc = uniform_floats(std::size_t{T} * KD, -1.0f, 1.0f, 32);
  AlignedFloats q(QD), ctx(QD), y(DM), s(std::size_t{G} * T);  // s: [G][T], one row per head
  const float* x = d.x.data();
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  for (auto _ : state) {
    cblas_sgemv(CblasRowMajor, CblasTrans, DM, QD, scale, d.wq.data(), QD, x, 1, 0.0f, q.data(), 1);
    cblas_sgemv(CblasRowMajor, CblasTrans, DM, KD, 1.0f, d.wk.data(), KD, x, 1, 0.0f,
                kc.data() + (T - 1) * KD, 1);
    cblas_sgemv(CblasRowMajor, CblasTrans, DM, KD, 1.0f, d.wv.data(), KD, x, 1, 0.0f,
                vc.data() + (T - 1) * KD, 1);
    for (int g = 0; g < static_cast<int>(Cfg::kKvHeads); ++g) {
      // S[G][T] = Q_g[G][D] K_g^T (a GEMV when G = 1: OpenBLAS's sgemm is slow at M = 1)
      if (G == 1)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, T, D, 1.0f, kc.data() + g * D, KD,
                    q.data() + g * D, 1, 0.0f, s.data(), 1);
      else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, G, T, D, 1.0f, q.data() + g * G * D, D,
                    kc.data() + g * D, KD, 0.0f, s.data(), T);
      for (int e = 0; e < G; ++e) {
        float* row = s.data() + static_cast<std::size_t>(e) * T;
        auto vmax = V::loadu(row);
        for (int j = V::kWidth; j + static_cast<int>(V::kWidth) <= T; j += V::kWidth)
          vmax = V::max(vmax, V::loadu(row + j));
        const auto vm = V::set1(V::hmax(vmax));
        auto vsum = V::zero();
        for (int j = 0; j + static_cast<int>(V::kWidth) <= T; j += V::kWidth) {
          const auto p =
              microattn::kernels::f32_exp<microattn::DefaultArch>(V::loadu(row + j) - vm);
          V::storeu(row + j, p);
          vsum = vsum + p;
        }
        const auto inv = V::set1(1.0f / V::hsum(vsum));
        for (int j = 0; j + static_cast<int>(V::kWidth) <= T; j += V::kWidth)
          V::storeu(row + j, V::loadu(row + j) * inv);
      }
      // O_g[G][D] = P[G][T] V_g
      if (G == 1)
        cblas_sgemv(CblasRowMajor, CblasTrans, T, D, 1.0f, vc.data() + g * D, KD, s.data(), 1, 0.0f,
                    ctx.data() + g * D, 1);
      else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, G, D, T, 1.0f, s.data(), T,
                    vc.data() + g * D, KD, 0.0f, ctx.data() + g * G * D, D);
    }
    cblas_sgemv(CblasRowMajor, CblasTrans, QD, DM, 1.0f, d.wo.data(), DM, ctx.data(), 1, 0.0f,
                y.data(), 1);
    benchmark::ClobberMemory();
  }
  set_decode_counters<Cfg>(state);
  state.SetLabel("openblas 1 thread");  // (the config string is in A1_openblas's label)
}
#endif

}  // namespace

void register_decode_benchmarks() {
  register_read_bw(step_bytes<D1Cfg>());
  register_read_bw(step_bytes<D2Cfg>());
#if MICROATTN_BENCH_HAVE_KV
  benchmark::RegisterBenchmark("D1", bm_decode<D1Cfg, microattn::DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("D2", bm_decode<D2Cfg, microattn::DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  register_read_bw(LayerData<D256Cfg>::kWeightBytes + 2 * kRingW * D256Cfg::kKvDim * sizeof(float));
  benchmark::RegisterBenchmark("DW1", [](benchmark::State& st) {
    bm_decode_at<DW1Cfg, 1>(st, kStreamLen - 1);
  })->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("KP3", bm_kv_prefill<microattn::Config<kCtx, 512, 8, 8, 64>>)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(
      "KP3_q8_kv8",
      bm_kv_prefill<microattn::Config<kCtx, 512, 8, 8, 64, microattn::WeightType::kInt8,
                                      microattn::CacheType::kInt8>>)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(
      "KP3_qd8_kv8",
      bm_kv_prefill<microattn::Config<kCtx, 512, 8, 8, 64, microattn::WeightType::kInt8,
                                      microattn::Compute::kInt8, microattn::CacheType::kInt8>>)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("D1_256", [](benchmark::State& st) {
    bm_decode_at<D256Cfg, D256Cfg::kTMax>(st, kRingW - 1);
  })->Unit(benchmark::kMicrosecond);
  register_read_bw(step_bytes<D1q8>());
  register_read_bw(step_bytes<D1q8kv8>());
  register_read_bw(step_bytes<D2q8>());
  register_read_bw(step_bytes<D2q8kv8>());
  benchmark::RegisterBenchmark("D1_q8", bm_decode<D1q8, microattn::DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("D1_q8_kv8", bm_decode<D1q8kv8, microattn::DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("D1_qd8_kv8", bm_decode<D1qd8kv8, microattn::DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("D1_f16", bm_decode<D1f16, microattn::DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("D1_bf16", bm_decode<D1bf16, microattn::DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  register_read_bw(step_bytes<D1q8g32>());
  register_read_bw(step_bytes<D1kv16>());
  benchmark::RegisterBenchmark("D1_kv16", bm_decode<D1kv16, microattn::DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("D1_q8g32", bm_decode<D1q8g32, microattn::DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("D2_q8", bm_decode<D2q8, microattn::DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("D2_q8_kv8", bm_decode<D2q8kv8, microattn::DefaultArch>)
      ->Unit(benchmark::kMicrosecond);
  // D1 with the weights in the two dense layouts ([in][out]; PyTorch's [out][in]).
  benchmark::RegisterBenchmark(
      "D1_inout", bm_decode<D1Cfg, microattn::DefaultArch, false, microattn::WeightLayout::kInOut>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(
      "D1_outin", bm_decode<D1Cfg, microattn::DefaultArch, false, microattn::WeightLayout::kOutIn>)
      ->Unit(benchmark::kMicrosecond);
  if constexpr (HasRope<microattn::KvAttention<D1Cfg>>::value)
    benchmark::RegisterBenchmark(
        "D1_rope",
        bm_decode<D1Cfg, microattn::DefaultArch, HasRope<microattn::KvAttention<D1Cfg>>::value>)
        ->Unit(benchmark::kMicrosecond);
#endif
#if defined(MICROATTN_BENCH_EIGEN)
  benchmark::RegisterBenchmark("D1_eigen", bm_decode_eigen<D1Cfg>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("D2_eigen", bm_decode_eigen<D2Cfg>)->Unit(benchmark::kMicrosecond);
#endif
#if defined(MICROATTN_BENCH_OPENBLAS)
  openblas_peer::single_thread();
  benchmark::RegisterBenchmark("D1_openblas", bm_decode_openblas<D1Cfg>)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("D2_openblas", bm_decode_openblas<D2Cfg>)
      ->Unit(benchmark::kMicrosecond);
#endif
}

}  // namespace microattn_bench
