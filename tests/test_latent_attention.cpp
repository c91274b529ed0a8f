// SPDX-License-Identifier: Apache-2.0
// Multi-head latent attention (latent_attention.hpp) against a double-precision reference
// written from the DeepSeek-V2 paper (section 2.1) in its unabsorbed form: prefill (unabsorbed
// kernels) and decode (absorbed) both against it, against each other, chunked and streamed, the
// cache's content and its export/import, the executor split, and the status rules.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "microattn/latent_attention.hpp"
#include "reference/rope_ref.hpp"
#include "support/check.hpp"
#include "support/rng.hpp"
#include "support/serial_executor.hpp"
#include "support/unit.hpp"

namespace {

using microattn::LatentAttention;
using microattn::LatentConfig;
using microattn::LatentWeights;
using microattn::QueryLatent;
using microattn::Status;
using microattn::WeightLayout;

constexpr float kBase = 10000.0f;
constexpr float kEpsNorm = 1e-6f;

/// The weights of a test layer as [in][out] arrays (the reference reads them so), and a copy
/// in the layout under test. int8 weights (WeightType::kInt8): the matrices quantised
/// (quantize_int8) and the reference's arrays replaced by their dequantised values, so the
/// layer must compute the fp32 layer of the dequantised weights.
template <class LCfg>
struct Params {
  static constexpr std::size_t DM = LCfg::kDModel, DCQ = LCfg::kDQLatent, QD = LCfg::kQDim,
                               DCR = LCfg::kDCache, DC = LCfg::kDLatent, UD = LCfg::kUkvDim,
                               VD = LCfg::kVDim;
  static constexpr bool kQ8 = LCfg::kInt8Weights;
  using E = typename LCfg::WeightElem;
  float wq[LCfg::kHasQueryLatent ? 1 : DM * QD], wdq[DM * (DCQ ? DCQ : 1)], gq[DCQ ? DCQ : 1];
  float wuq[(DCQ ? DCQ : 1) * QD], wdkv[DM * DCR], gkv[DC], wukv[DC * UD], wo[VD * DM];
  // The same matrices in the layout under test, and (int8) quantised [in][out] with scales.
  E lq[sizeof(wq) / 4], ldq[sizeof(wdq) / 4], luq[sizeof(wuq) / 4], ldkv[sizeof(wdkv) / 4],
      lukv[sizeof(wukv) / 4], lo[sizeof(wo) / 4];
  E qq[sizeof(wq) / 4], qdq[sizeof(wdq) / 4], quq[sizeof(wuq) / 4], qdkv[sizeof(wdkv) / 4],
      qukv[sizeof(wukv) / 4], qo[sizeof(wo) / 4];
  float sq[QD], sdq[DCQ ? DCQ : 1], suq[QD], sdkv[DCR], sukv[UD], so[DM];

  static void fill_matrix(microattn_test::Rng& rng, float* w, std::size_t in, std::size_t out) {
    const float a = 1.0f / std::sqrt(static_cast<float>(in));
    rng.fill(w, in * out, -a, a);
  }
  /// int8: w [in][out] quantised into q (same layout) and sc, then w = sc * q.
  static void quantise(float* w, std::size_t in, std::size_t out, E* q, float* sc) {
    if constexpr (kQ8) {
      ASSERT_EQ(
          microattn::quantize_int8(w, WeightLayout::kInOut, in, out, WeightLayout::kInOut, q, sc),
          Status::kOk);
      for (std::size_t i = 0; i < in * out; ++i) w[i] = sc[i % out] * float(q[i]);
    }
  }
  /// The matrix in layout l: fp32 from w, int8 from its quantised copy q.
  static void to_layout(const float* w, const E* q, std::size_t in, std::size_t out, WeightLayout l,
                        E* dst) {
    if constexpr (kQ8)
      relayout(q, in, out, l, dst);
    else
      relayout(w, in, out, l, dst);
  }
  template <class T>
  static void relayout(const T* w, std::size_t in, std::size_t out, WeightLayout l, T* dst) {
    for (std::size_t i = 0; i < in; ++i)
      for (std::size_t o = 0; o < out; ++o)
        dst[microattn_test::weight_index(l, in, out, i, o)] = w[i * out + o];
  }
  void init(std::uint64_t seed) {
    microattn_test::Rng rng(seed);
    if constexpr (LCfg::kHasQueryLatent) {
      fill_matrix(rng, wdq, DM, DCQ);
      rng.fill(gq, DCQ, 0.5f, 1.5f);
      fill_matrix(rng, wuq, DCQ, QD);
    } else {
      fill_matrix(rng, wq, DM, QD);
    }
    fill_matrix(rng, wdkv, DM, DCR);
    rng.fill(gkv, DC, 0.5f, 1.5f);
    fill_matrix(rng, wukv, DC, UD);
    fill_matrix(rng, wo, VD, DM);
    if constexpr (LCfg::kHasQueryLatent) {
      quantise(wdq, DM, DCQ, qdq, sdq);
      quantise(wuq, DCQ, QD, quq, suq);
    } else {
      quantise(wq, DM, QD, qq, sq);
    }
    quantise(wdkv, DM, DCR, qdkv, sdkv);
    quantise(wukv, DC, UD, qukv, sukv);
    quantise(wo, VD, DM, qo, so);
  }
  LatentWeights<LCfg> weights(WeightLayout l) {
    LatentWeights<LCfg> w;
    w.layout = l;
    if constexpr (LCfg::kHasQueryLatent) {
      to_layout(wdq, qdq, DM, DCQ, l, ldq);
      to_layout(wuq, quq, DCQ, QD, l, luq);
      w.w_dq = ldq, w.g_q = gq, w.w_uq = luq;
    } else {
      to_layout(wq, qq, DM, QD, l, lq);
      w.w_q = lq;
    }
    to_layout(wdkv, qdkv, DM, DCR, l, ldkv);
    to_layout(wukv, qukv, DC, UD, l, lukv);
    to_layout(wo, qo, VD, DM, l, lo);
    w.w_dkv = ldkv, w.g_kv = gkv, w.w_ukv = lukv, w.w_o = lo;
    if constexpr (kQ8) w.s_q = sq, w.s_dq = sdq, w.s_uq = suq, w.s_dkv = sdkv, w.s_ukv = sukv;
    if constexpr (kQ8) w.s_o = so;
    return w;
  }
};

/// rows [n][in] (double) times the [in][out] float matrix w.
inline void mul(const double* x, std::size_t n, std::size_t in, std::size_t out, const float* w,
                double* y) {
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t o = 0; o < out; ++o) {
      double acc = 0;
      for (std::size_t i = 0; i < in; ++i) acc += x[t * in + i] * w[i * out + o];
      y[t * out + o] = acc;
    }
}
inline void rms_norm(double* x, std::size_t d, const float* g, double eps) {
  double ss = 0;
  for (std::size_t i = 0; i < d; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss / double(d) + eps);
  for (std::size_t i = 0; i < d; ++i) x[i] = x[i] * inv * g[i];
}

/// The reference layer over T tokens at positions 0 .. T - 1 (causal), unabsorbed, as the
/// paper writes it; also the cache rows it implies ([c_KV | k_R] per token).
template <class LCfg, std::size_t kT>
struct Reference {
  static constexpr std::size_t DM = LCfg::kDModel, H = LCfg::kHeads, DC = LCfg::kDLatent,
                               DR = LCfg::kDRope, DN = LCfg::kDNope, DV = LCfg::kDV,
                               DQK = LCfg::kDQk, DCR = LCfg::kDCache, QD = LCfg::kQDim,
                               UD = LCfg::kUkvDim, VD = LCfg::kVDim, DCQ = LCfg::kDQLatent;
  double x[kT * DM], lat[kT * DCR], cq[kT * (DCQ ? DCQ : 1)], q[kT * QD], kv[kT * UD];
  double ctx[kT * VD], y[kT * DM], s[kT];

  /// cached: the latent rows to attend over instead of the computed ones (an int8 cache's
  /// dequantised rows), or null.
  void run(const Params<LCfg>& P, const float* xf, std::size_t T, double scale,
           const float* cached = nullptr) {
    for (std::size_t i = 0; i < T * DM; ++i) x[i] = xf[i];
    mul(x, T, DM, DCR, P.wdkv, lat);
    for (std::size_t t = 0; t < T; ++t) {
      rms_norm(lat + t * DCR, DC, P.gkv, kEpsNorm);
      microattn_ref::rope(lat + t * DCR + DC, DR, double(t), kBase, true);
    }
    if (cached)
      for (std::size_t i = 0; i < T * DCR; ++i) lat[i] = cached[i];
    if constexpr (LCfg::kHasQueryLatent) {
      mul(x, T, DM, DCQ, P.wdq, cq);
      for (std::size_t t = 0; t < T; ++t) rms_norm(cq + t * DCQ, DCQ, P.gq, kEpsNorm);
      mul(cq, T, DCQ, QD, P.wuq, q);
    } else {
      mul(x, T, DM, QD, P.wq, q);
    }
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t h = 0; h < H; ++h)
        microattn_ref::rope(q + t * QD + h * DQK + DN, DR, double(t), kBase, true);
    // kv[t] = c_t W_UKV: head h's [k_nope | v] at columns h (DN + DV) ..
    double c[kT * DC];
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t d = 0; d < DC; ++d) c[t * DC + d] = lat[t * DCR + d];
    mul(c, T, DC, UD, P.wukv, kv);
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < T; ++i) {
        const double* qh = q + i * QD + h * DQK;
        double mx = -INFINITY;
        for (std::size_t j = 0; j <= i; ++j) {
          const double* kn = kv + j * UD + h * (DN + DV);
          double acc = 0;
          for (std::size_t d = 0; d < DN; ++d) acc += qh[d] * kn[d];
          for (std::size_t d = 0; d < DR; ++d) acc += qh[DN + d] * lat[j * DCR + DC + d];
          s[j] = acc * scale;
          mx = s[j] > mx ? s[j] : mx;
        }
        double sum = 0;
        for (std::size_t j = 0; j <= i; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (std::size_t d = 0; d < DV; ++d) {
          double acc = 0;
          for (std::size_t j = 0; j <= i; ++j) acc += s[j] * kv[j * UD + h * (DN + DV) + DN + d];
          ctx[i * VD + h * DV + d] = acc / sum;
        }
      }
    mul(ctx, T, VD, DM, P.wo, y);
  }
};

/// Longest chain of rounded operations of an output (each projection's and dot product's
/// length along the absorbed and the unabsorbed paths, and the normalisations).
template <class LCfg>
constexpr double chain(std::size_t T) {
  return double(LCfg::kDModel + LCfg::kDQLatent + 2 * LCfg::kDLatent + LCfg::kDNope +
                LCfg::kDCache + T + LCfg::kVDim + 16);
}

// Two shapes: value width below and not a multiple of the query/key width, d_c not a multiple
// of a vector, with and without a query latent.
constexpr std::size_t kT = 13;
using CfgA = LatentConfig<kT, 32, 4, 16, 8, 8, 8>;
using CfgB = LatentConfig<kT, 24, 3, 20, 6, 10, 12, QueryLatent{12}>;
// Every width in whole panels of 16 (kPanel16), d_v below d_nope + d_R.
using CfgP = LatentConfig<kT, 32, 2, 24, 8, 16, 16>;
// More heads than half a vector of any arch (9): the scores without the pair form.
using CfgH = LatentConfig<kT, 16, 9, 8, 4, 4, 6>;
using CfgAThreads = LatentConfig<kT, 32, 4, 16, 8, 8, 8, microattn::MaxWorkers{3}>;
// int8 weights: every layout (CfgP's shape), and the query latent's path (CfgB's).
using CfgPQ8 = LatentConfig<kT, 32, 2, 24, 8, 16, 16, microattn::WeightType::kInt8>;
using CfgBQ8 =
    LatentConfig<kT, 24, 3, 20, 6, 10, 12, QueryLatent{12}, microattn::WeightType::kInt8>;
// int8 latent cache: alone (CfgA, CfgH's plain score form) and with int8 weights in kPanel16.
using CfgAC8 = LatentConfig<kT, 32, 4, 16, 8, 8, 8, microattn::CacheType::kInt8>;
using CfgHC8 = LatentConfig<kT, 16, 9, 8, 4, 4, 6, microattn::CacheType::kInt8>;
using CfgPQ8C8 = LatentConfig<kT, 32, 2, 24, 8, 16, 16, microattn::WeightType::kInt8,
                              microattn::CacheType::kInt8>;

template <class LCfg, std::size_t kChunk = LCfg::kTMax>
struct Case {
  using Layer = LatentAttention<LCfg, microattn::DefaultArch, kChunk>;
  Params<LCfg> P;
  Reference<LCfg, kT> ref;
  Layer layer;
  float x[kT * LCfg::kDModel], y[kT * LCfg::kDModel];

  void init(std::uint64_t seed, WeightLayout l) {
    P.init(seed);
    microattn_test::Rng rng(seed + 100);
    rng.fill(x, kT * LCfg::kDModel, -1.0f, 1.0f);
    layer.reset();
    (void)layer.set_weights(P.weights(l));
    microattn::RopeConfig r;
    r.enabled = true, r.base = kBase, r.pairing = microattn::RopePairing::kAdjacent;
    (void)layer.set_rope(r);
    ref.run(P, x, kT, 1.0 / std::sqrt(double(LCfg::kDQk)));
  }
  double tol() const {
    return microattn_test::tolerance(chain<LCfg>(kT),
                                     microattn_test::max_abs(ref.y, kT * LCfg::kDModel));
  }
};

template <class LCfg>
void check_prefill_and_decode(std::uint64_t seed) {
  static Case<LCfg> c;
  constexpr std::size_t DM = LCfg::kDModel;
  for (WeightLayout l : {WeightLayout::kInOut, WeightLayout::kOutIn, WeightLayout::kPanel16}) {
    if (l == WeightLayout::kPanel16 && !LatentWeights<LCfg>::panel_fits()) continue;
    c.init(seed, l);
    ASSERT_EQ(c.layer.prefill(c.x, kT, c.y), Status::kOk);
    const double tol = c.tol();
    EXPECT_LE(microattn_test::max_diff(c.y, c.ref.y, kT * DM), tol) << int(l);
    // The cache: one latent row per token, c_KV normalised, k_R rotated.
    static float rows[kT * LCfg::kDCache];
    microattn::CacheSlice info;
    ASSERT_EQ(c.layer.export_cache(0, kT, rows, &info), Status::kOk);
    EXPECT_LE(microattn_test::max_diff(rows, c.ref.lat, kT * LCfg::kDCache),
              microattn_test::tolerance(double(DM + LCfg::kDLatent + 8), 2.0));
    // Both prefill forms forced (kAuto took the unabsorbed one: an empty cache).
    static float yf[kT * DM];
    for (microattn::LatentPrefill f :
         {microattn::LatentPrefill::kAbsorbed, microattn::LatentPrefill::kUnabsorbed}) {
      c.layer.reset();
      ASSERT_EQ(c.layer.set_prefill_form(f), Status::kOk);
      ASSERT_EQ(c.layer.prefill(c.x, kT, yf), Status::kOk);
      EXPECT_LE(microattn_test::max_diff(yf, c.ref.y, kT * DM), tol) << int(l) << int(f);
    }
    EXPECT_TRUE(microattn_test::same_bits(yf, c.y, kT * DM));  // kUnabsorbed is kAuto's choice
    ASSERT_EQ(c.layer.set_prefill_form(microattn::LatentPrefill::kAuto), Status::kOk);
    // Absorbed decode, token by token, against the same reference.
    static float yd[kT * DM];
    c.layer.reset();
    for (std::size_t t = 0; t < kT; ++t)
      ASSERT_EQ(c.layer.decode(c.x + t * DM, yd + t * DM), Status::kOk);
    EXPECT_LE(microattn_test::max_diff(yd, c.ref.y, kT * DM), tol) << int(l);
    // Absorbed equals unabsorbed within fp32 rounding.
    EXPECT_LE(microattn_test::max_diff(yd, c.y, kT * DM), 2 * tol) << int(l);
    EXPECT_EQ(c.layer.length(), kT);
  }
}

TEST(LatentAttention, PrefillAndAbsorbedDecodeMatchDoubleReference) {
  check_prefill_and_decode<CfgA>(1);
  check_prefill_and_decode<CfgB>(2);
  check_prefill_and_decode<CfgP>(8);
  check_prefill_and_decode<CfgH>(9);
}

// int8 weights (WeightType::kInt8): the layer of the dequantised weights, in every form; the
// absorbed query scales q_nope by W_UK's column scales at run time.
TEST(LatentAttention, Int8WeightsMatchDequantisedReference) {
  check_prefill_and_decode<CfgPQ8>(10);
  check_prefill_and_decode<CfgBQ8>(11);
  // A missing scale array is a null pointer; y over one is an overlap.
  static Case<CfgPQ8> c;
  c.init(12, WeightLayout::kOutIn);
  LatentWeights<CfgPQ8> w = c.P.weights(WeightLayout::kOutIn);
  w.s_ukv = nullptr;
  EXPECT_EQ(c.layer.set_weights(w), Status::kNullPointer);
  EXPECT_EQ(c.layer.decode(c.x, c.P.so), Status::kOverlap);
  EXPECT_EQ(c.layer.length(), std::size_t{0});
}

/// An int8 latent cache: the exported (dequantised) rows within half a quantisation step of
/// the reference's latents (a step: max |part| / 127 for c_KV and for k_R apart), and every
/// form's outputs those of the reference attending over exactly those rows, within fp32
/// rounding. Prefill and decode quantise their own (differently rounded) latents, so each is
/// checked against the rows it cached.
template <class LCfg>
void check_int8_cache(std::uint64_t seed) {
  static Case<LCfg> c;
  static Reference<LCfg, kT> rq;
  static float rows[kT * LCfg::kDCache], y[kT * LCfg::kDModel];
  constexpr std::size_t DM = LCfg::kDModel, DC = LCfg::kDLatent, DCR = LCfg::kDCache;
  microattn::CacheSlice info;
  const double fp_tol = microattn_test::tolerance(double(DM + DC + 8), 2.0);
  for (WeightLayout l : {WeightLayout::kInOut, WeightLayout::kOutIn, WeightLayout::kPanel16}) {
    if (l == WeightLayout::kPanel16 && !LatentWeights<LCfg>::panel_fits()) continue;
    c.init(seed, l);
    for (int form = 0; form < 3; ++form) {  // prefill unabsorbed, absorbed; decode
      c.layer.reset();
      ASSERT_EQ(c.layer.set_prefill_form(form == 1 ? microattn::LatentPrefill::kAbsorbed
                                                   : microattn::LatentPrefill::kUnabsorbed),
                Status::kOk);
      if (form < 2) {
        ASSERT_EQ(c.layer.prefill(c.x, kT, y), Status::kOk);
      } else {
        for (std::size_t t = 0; t < kT; ++t)
          ASSERT_EQ(c.layer.decode(c.x + t * DM, y + t * DM), Status::kOk);
      }
      ASSERT_EQ(c.layer.export_cache(0, kT, rows, &info), Status::kOk);
      for (std::size_t t = 0; t < kT; ++t)
        for (std::size_t b : {std::size_t{0}, DC}) {
          const std::size_t e = b == 0 ? DC : DCR;
          const double step = microattn_test::max_abs(c.ref.lat + t * DCR + b, e - b) / 127.0;
          EXPECT_LE(microattn_test::max_diff(rows + t * DCR + b, c.ref.lat + t * DCR + b, e - b),
                    0.5 * step * 1.001 + fp_tol)
              << t << " " << b;
        }
      rq.run(c.P, c.x, kT, 1.0 / std::sqrt(double(LCfg::kDQk)), rows);
      const double tol =
          microattn_test::tolerance(chain<LCfg>(kT), microattn_test::max_abs(rq.y, kT * DM));
      EXPECT_LE(microattn_test::max_diff(y, rq.y, kT * DM), tol) << int(l) << " " << form;
      // Against the unquantised layer: the cache's rounding, well above fp32's.
      EXPECT_GT(microattn_test::max_diff(y, c.ref.y, kT * DM), 4 * tol) << int(l) << " " << form;
    }
  }
}

TEST(LatentAttention, Int8CacheIsAttentionOverTheDequantisedRows) {
  check_int8_cache<CfgAC8>(13);
  check_int8_cache<CfgHC8>(14);
  check_int8_cache<CfgPQ8C8>(15);
}

// A prompt in chunks (kPrefillChunk 5), in several calls, then decode steps: the outputs of one
// prefill call of every token, within fp32 rounding. (kAuto: the first chunk unabsorbed, the
// later 5-token chunks absorbed: 18 * 40 < 440 * 5 flops at CfgB's shape.)
TEST(LatentAttention, ChunkedPrefillThenDecodeMatchesOneCall) {
  static Case<CfgB> whole;
  static Case<CfgB, 5> chunked;
  constexpr std::size_t DM = CfgB::kDModel;
  whole.init(3, WeightLayout::kOutIn);
  chunked.init(3, WeightLayout::kOutIn);
  ASSERT_EQ(whole.layer.prefill(whole.x, kT, whole.y), Status::kOk);
  ASSERT_EQ(chunked.layer.prefill(chunked.x, 7, chunked.y), Status::kOk);
  ASSERT_EQ(chunked.layer.prefill(chunked.x + 7 * DM, 3, chunked.y + 7 * DM), Status::kOk);
  for (std::size_t t = 10; t < kT; ++t)
    ASSERT_EQ(chunked.layer.decode(chunked.x + t * DM, chunked.y + t * DM), Status::kOk);
  EXPECT_LE(microattn_test::max_diff(chunked.y, whole.ref.y, kT * DM), whole.tol());
  EXPECT_LE(microattn_test::max_diff(chunked.y, whole.y, kT * DM), 2 * whole.tol());
}

// MaxWorkers{3} split over an executor (3 parts, run last first): the same bits as 1 part.
TEST(LatentAttention, ExecutorSplitIsBitIdentical) {
  static Case<CfgAThreads> one, three;
  constexpr std::size_t DM = CfgAThreads::kDModel;
  one.init(4, WeightLayout::kInOut);
  three.init(4, WeightLayout::kInOut);
  ASSERT_EQ(three.layer.set_executor(microattn_test::serial_executor(3)), Status::kOk);
  ASSERT_EQ(one.layer.prefill(one.x, kT - 2, one.y), Status::kOk);
  ASSERT_EQ(three.layer.prefill(three.x, kT - 2, three.y), Status::kOk);
  for (std::size_t t = kT - 2; t < kT; ++t) {
    ASSERT_EQ(one.layer.decode(one.x + t * DM, one.y + t * DM), Status::kOk);
    ASSERT_EQ(three.layer.decode(three.x + t * DM, three.y + t * DM), Status::kOk);
  }
  EXPECT_TRUE(microattn_test::same_bits(one.y, three.y, kT * DM));
  EXPECT_LE(microattn_test::max_diff(three.y, three.ref.y, kT * DM), three.tol());
}

// Export, import into a fresh layer, truncate, reset: continuations are bit-identical.
TEST(LatentAttention, ExportImportTruncateReset) {
  static Case<CfgA> a, b;
  constexpr std::size_t DM = CfgA::kDModel, DCR = CfgA::kDCache;
  a.init(5, WeightLayout::kOutIn);
  b.init(5, WeightLayout::kOutIn);
  ASSERT_EQ(a.layer.prefill(a.x, 9, a.y), Status::kOk);
  static float rows[kT * DCR];
  microattn::CacheSlice info;
  ASSERT_EQ(a.layer.export_cache(0, 9, rows, &info), Status::kOk);
  EXPECT_EQ(info.d_head, DCR);
  EXPECT_EQ(info.kv_heads, std::size_t{1});
  ASSERT_EQ(b.layer.import_cache(info, rows), Status::kOk);
  float ya[DM], yb[DM], yc[DM];
  ASSERT_EQ(a.layer.decode(a.x + 9 * DM, ya), Status::kOk);
  ASSERT_EQ(b.layer.decode(a.x + 9 * DM, yb), Status::kOk);
  EXPECT_TRUE(microattn_test::same_bits(ya, yb, DM));
  // Roll back one token and decode it again; then a fresh sequence after reset.
  ASSERT_EQ(a.layer.truncate(9), Status::kOk);
  ASSERT_EQ(a.layer.decode(a.x + 9 * DM, yc), Status::kOk);
  EXPECT_TRUE(microattn_test::same_bits(ya, yc, DM));
  EXPECT_EQ(a.layer.truncate(11), Status::kBadArgument);
  a.layer.reset();
  ASSERT_EQ(a.layer.prefill(a.x, 9, a.y + DM), Status::kOk);  // (y of 9 rows, offset)
  EXPECT_EQ(a.layer.length(), std::size_t{9});
  // An import that does not continue the cache, or of another RoPE, is refused.
  EXPECT_EQ(b.layer.import_cache(info, rows), Status::kBadArgument);
  b.layer.reset();
  microattn::CacheSlice other = info;
  other.rope.base = 500000.0f;
  EXPECT_EQ(b.layer.import_cache(other, rows), Status::kBadArgument);
  EXPECT_EQ(b.layer.length(), std::size_t{0});
}

// The option LatentPrefill::kAbsorbed: no unabsorbed staging (a smaller object), every prefill
// absorbed: bit for bit the default layer with the absorbed form forced, on the same calls
// (chunked prefill, then decode), and within fp32 rounding of the reference.
using CfgAAbs = LatentConfig<kT, 32, 4, 16, 8, 8, 8, microattn::LatentPrefill::kAbsorbed>;
static_assert(LatentAttention<CfgAAbs>::kWorkspaceBytes + 4 * kT * (8 + 8 + 8) * sizeof(float) <=
                  LatentAttention<CfgA>::kWorkspaceBytes,
              "the absorbed-only layer holds no expanded keys and values");
TEST(LatentAttention, AbsorbedOnlyOptionDropsTheStaging) {
  static Case<CfgA, 5> ref;
  static LatentAttention<CfgAAbs, microattn::DefaultArch, 5> layer;
  static float y[kT * 32];
  ref.init(16, WeightLayout::kOutIn);
  LatentWeights<CfgAAbs> w;
  const LatentWeights<CfgA> wa = ref.P.weights(WeightLayout::kOutIn);
  w.layout = wa.layout, w.w_q = wa.w_q, w.w_dkv = wa.w_dkv, w.g_kv = wa.g_kv;
  w.w_ukv = wa.w_ukv, w.w_o = wa.w_o;
  ASSERT_EQ(layer.set_weights(w), Status::kOk);
  ASSERT_EQ(layer.set_rope(ref.layer.rope()), Status::kOk);
  EXPECT_EQ(layer.set_prefill_form(microattn::LatentPrefill::kUnabsorbed), Status::kBadArgument);
  ASSERT_EQ(ref.layer.set_prefill_form(microattn::LatentPrefill::kAbsorbed), Status::kOk);
  ASSERT_EQ(layer.prefill(ref.x, 7, y), Status::kOk);  // chunks of 5 and 2
  ASSERT_EQ(ref.layer.prefill(ref.x, 7, ref.y), Status::kOk);
  for (std::size_t t = 7; t < kT; ++t) {
    ASSERT_EQ(layer.decode(ref.x + t * 32, y + t * 32), Status::kOk);
    ASSERT_EQ(ref.layer.decode(ref.x + t * 32, ref.y + t * 32), Status::kOk);
  }
  EXPECT_TRUE(microattn_test::same_bits(y, ref.y, kT * 32));
  EXPECT_LE(microattn_test::max_diff(y, ref.ref.y, kT * 32), ref.tol());
}

TEST(LatentAttention, StatusRulesLeaveStateUntouched) {
  static Case<CfgA> c;
  constexpr std::size_t DM = CfgA::kDModel;
  c.init(6, WeightLayout::kInOut);
  microattn_test::fill_sentinel(c.y, kT * DM);
  EXPECT_EQ(c.layer.prefill(nullptr, 1, c.y), Status::kNullPointer);
  EXPECT_EQ(c.layer.prefill(c.x, 0, c.y), Status::kBadTokenCount);
  EXPECT_EQ(c.layer.prefill(c.x, kT + 1, c.y), Status::kBadTokenCount);
  EXPECT_EQ(c.layer.prefill(c.x, 2, c.x + DM), Status::kOverlap);
  EXPECT_EQ(c.layer.decode(c.x, const_cast<float*>(c.P.gkv)), Status::kOverlap);
  EXPECT_TRUE(microattn_test::all_sentinel(c.y, kT * DM));
  EXPECT_EQ(c.layer.length(), std::size_t{0});
  ASSERT_EQ(c.layer.prefill(c.x, kT, c.y), Status::kOk);
  EXPECT_EQ(c.layer.decode(c.x, c.y), Status::kCacheFull);
  EXPECT_EQ(c.layer.set_rms_eps(1e-5f), Status::kBadArgument);  // cache not empty
  microattn::RopeConfig r;
  EXPECT_EQ(c.layer.set_rope(r), Status::kBadArgument);
  c.layer.reset();
  EXPECT_EQ(c.layer.set_rms_eps(0.0f), Status::kBadArgument);
  EXPECT_EQ(c.layer.set_rms_eps(NAN), Status::kBadArgument);
  EXPECT_EQ(c.layer.set_rms_eps(1e-5f), Status::kOk);
  EXPECT_EQ(c.layer.rms_eps(), 1e-5f);
  LatentWeights<CfgA> w = c.P.weights(WeightLayout::kInOut);
  w.layout = WeightLayout::kPanel16;  // CfgA's d_nope 8 is not a whole panel
  EXPECT_EQ(c.layer.set_weights(w), Status::kBadArgument);
  w.layout = WeightLayout::kInOut;
  w.g_kv = nullptr;
  EXPECT_EQ(c.layer.set_weights(w), Status::kNullPointer);
  EXPECT_EQ(c.layer.scale(), 1.0f / std::sqrt(float(CfgA::kDQk)));
  EXPECT_EQ(c.layer.set_prefill_form(static_cast<microattn::LatentPrefill>(3)),
            Status::kBadArgument);
  EXPECT_EQ(c.layer.prefill_form(), microattn::LatentPrefill::kAuto);
}

// An object that never ran a constructor (zero bytes, as in .bss under a startup without
// C++ constructors) is an empty layer: no weights (kNullPointer), then correct results.
TEST(LatentAttention, ZeroBytesObjectIsAnEmptyLayer) {
  using Layer = LatentAttention<CfgA>;
  alignas(Layer) static unsigned char storage[sizeof(Layer)];
  std::memset(storage, 0, sizeof(storage));
  Layer& layer = *reinterpret_cast<Layer*>(storage);
  static Case<CfgA> c;
  c.init(7, WeightLayout::kOutIn);
  EXPECT_EQ(layer.prefill(c.x, 1, c.y), Status::kNullPointer);
  EXPECT_EQ(layer.scale(), c.layer.scale());
  EXPECT_EQ(layer.rms_eps(), 1e-6f);
  ASSERT_EQ(layer.set_weights(c.P.weights(WeightLayout::kOutIn)), Status::kOk);
  microattn::RopeConfig r;
  r.enabled = true, r.base = kBase, r.pairing = microattn::RopePairing::kAdjacent;
  ASSERT_EQ(layer.set_rope(r), Status::kOk);
  ASSERT_EQ(layer.prefill(c.x, kT, c.y), Status::kOk);
  EXPECT_LE(microattn_test::max_diff(c.y, c.ref.y, kT * CfgA::kDModel), c.tol());
}

static_assert(LatentWeights<CfgP>::panel_fits() && !LatentWeights<CfgA>::panel_fits(),
              "CfgP tests kPanel16");
static_assert(LatentAttention<CfgA>::kCacheBytesPerToken == (16 + 8) * sizeof(float),
              "the cache holds d_c + d_R floats a token");
static_assert(LatentAttention<CfgAC8>::kCacheBytesPerToken == 16 + 8 + 2 * sizeof(float),
              "the int8 cache: d_c + d_R bytes and two scales a token");
// The int8 cache's staging (the rows it dequantises to expand) stays below what it saves: the
// Cortex-M bench's latent shape, chunks of 8.
using CfgM = LatentConfig<64, 64, 4, 32, 16, 16, 16, QueryLatent{32}>;
using CfgMC8 =
    LatentConfig<64, 64, 4, 32, 16, 16, 16, QueryLatent{32}, microattn::CacheType::kInt8>;
static_assert(LatentAttention<CfgMC8, microattn::DefaultArch, 8>::ram_bytes() <
                  LatentAttention<CfgM, microattn::DefaultArch, 8>::ram_bytes(),
              "the int8 latent cache makes the object smaller");

// The absorbed decode kernel alone (kernels/f32_attn_latent.hpp) against a double softmax
// attention over the (dequantised) rows, and its phases split into 3 parts run last first (the
// layer's executor split): the bits of the one-part call. Two shapes: ML1's (8 heads, the pair
// form on AVX-512, several value column blocks) and an odd one (5 heads, d_v 20).
template <std::size_t kDK, std::size_t kDV, std::size_t kRows, class CE>
void check_latent_decode_kernel(std::uint32_t seed) {
  using Arch = microattn::DefaultArch;
  constexpr std::size_t kKeys = 100, kN = 97, kParts = 3;
  using Sc = microattn::kernels::LatentDecodeScratch<Arch, kDK, kDV, kRows, kKeys, CE, kParts>;
  constexpr std::size_t kSlack = microattn::kernels::latent_cache_slack<Arch>();
  static float q[kRows * kDK], rows[kKeys * kDK], rs[2 * kKeys], one[kRows * kDV],
      split[kRows * kDV];
  static CE c[kKeys * kDK + kSlack];
  static Sc sa, sb;
  microattn_test::Rng rng(seed);
  rng.fill(q, kRows * kDK, -1.0f, 1.0f);
  rng.fill(rows, kKeys * kDK, -1.0f, 1.0f);
  for (std::size_t j = 0; j < kKeys; ++j) {  // the cache, and rows = what it stands for
    if constexpr (std::is_same<CE, float>::value) {
      std::memcpy(c + j * kDK, rows + j * kDK, kDK * sizeof(float));
    } else {
      using Q = microattn::internal::Elem<std::int8_t>;
      rs[2 * j] = Q::encode(rows + j * kDK, kDV, c + j * kDK, 1);
      rs[2 * j + 1] = Q::encode(rows + j * kDK + kDV, kDK - kDV, c + j * kDK + kDV, 1);
      for (std::size_t d = 0; d < kDK; ++d)
        rows[j * kDK + d] = rs[2 * j + (d < kDV ? 0 : 1)] * float(c[j * kDK + d]);
    }
  }
  const float scale = 0.3f;
  microattn::kernels::f32_attn_latent_decode<Arch, kDK, kDV, kRows, kKeys, CE, kParts>(
      q, kDK, c, kDK, kN, scale, sa, one, kDV, rs);
  namespace k = microattn::kernels;
  k::latent_decode_queries(q, kDK, scale, sb);
  for (std::size_t i = kParts; i-- > 0;) k::latent_decode_scores(c, kDK, kN, rs, sb, i, kParts);
  k::latent_decode_softmax(kN, rs, sb);
  for (std::size_t i = kParts; i-- > 0;)
    k::latent_decode_values(c, kDK, kN, sb, split, kDV, i, kParts);
  EXPECT_TRUE(microattn_test::same_bits(one, split, kRows * kDV));
  // fp32 scores of kDK terms of magnitude <= 1 (scaled: |s| <= 0.3 kDK), weights summed over 97
  // keys, outputs |o| <= 1: a few times (kDK + kN) fp32 epsilons each, so 2e-5 absolute.
  double worst = 0.0;
  for (std::size_t e = 0; e < kRows; ++e) {
    double s[kN], m = -1e300, l = 0.0;
    for (std::size_t j = 0; j < kN; ++j) {
      s[j] = 0.0;
      for (std::size_t d = 0; d < kDK; ++d) s[j] += double(q[e * kDK + d]) * rows[j * kDK + d];
      s[j] *= scale;
      m = s[j] > m ? s[j] : m;
    }
    for (std::size_t j = 0; j < kN; ++j) l += (s[j] = std::exp(s[j] - m));
    for (std::size_t d = 0; d < kDV; ++d) {
      double o = 0.0;
      for (std::size_t j = 0; j < kN; ++j) o += s[j] * rows[j * kDK + d];
      worst = std::fmax(worst, std::fabs(o / l - one[e * kDV + d]));
    }
  }
  EXPECT_LE(worst, 2e-5);
}

TEST(LatentDecodeKernel, MatchesDoubleAndAnySplitGivesOnePartsBits) {
  check_latent_decode_kernel<160, 128, 8, float>(21);
  check_latent_decode_kernel<160, 128, 8, std::int8_t>(22);
  check_latent_decode_kernel<26, 20, 5, float>(23);
  check_latent_decode_kernel<26, 20, 5, std::int8_t>(24);
}

}  // namespace
