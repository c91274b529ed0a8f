// SPDX-License-Identifier: Apache-2.0
// microattn::Decoder (decoder.hpp), a whole LLaMA-style model on the blocks, against a
// double-precision reference of the same recipe written here from the maths: fp32 and int8
// weights (the reference then uses the dequantised weights), tied and separate LM heads, both
// RoPE pairings, prefill in several chunks against decode token by token, the executor split
// bit-identical, the status rules, and the model file reader (decoder_weights_from_blob).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "microattn/decoder.hpp"
#include "support/check.hpp"
#include "support/rng.hpp"
#include "support/serial_executor.hpp"
#include "support/unit.hpp"

namespace {

using microattn::LmHead;
using microattn::RopePairing;
using microattn::Status;
using microattn::WeightLayout;
using microattn::WeightType;

// vocab 11, d_model 16, 2 layers, 4 query heads on 2 key/value heads of 4, hidden 24, T_max 12.
template <auto... kOptions>
using SmallCfg = microattn::DecoderConfig<11, 16, 2, 4, 2, 4, 24, 12, kOptions...>;
using TiedCfg = SmallCfg<LmHead::kTied, microattn::MaxWorkers{3}>;
using SeparateCfg = SmallCfg<>;
using Int8Cfg = SmallCfg<LmHead::kTied, WeightType::kInt8>;
using Qd8Cfg = SmallCfg<WeightType::kInt8, microattn::Compute::kInt8, microattn::MaxWorkers{2}>;
static_assert(Qd8Cfg::Attn::kInt8Compute && Qd8Cfg::Ffn::kInt8Compute && Qd8Cfg::Head::kInt8Compute,
              "Compute::kInt8 reaches every block");
constexpr std::size_t kChunk = 5;  // prefill of T_max tokens in three chunks

/// A model's weights as PyTorch holds them ([out][in]); int8: quantised copies, and the float
/// arrays then hold the dequantised values the reference uses.
template <class DCfg>
struct TestModel {
  static constexpr std::size_t V = DCfg::kVocab, DM = DCfg::kDModel, L = DCfg::kLayers;
  static constexpr std::size_t DH = DCfg::kDHidden, QD = DCfg::Attn::kQDim, KD = DCfg::Attn::kKvDim;
  static constexpr std::size_t kPerLayer = 2 * DM + QD * DM + 2 * KD * DM + DM * QD + 3 * DH * DM;
  static constexpr std::size_t kFloats = 2 * V * DM + DM + L * kPerLayer;
  using E = typename DCfg::WeightElem;
  float f[kFloats];
  E q[kFloats];
  float s[kFloats];  // scales (only the first entries of each matrix's slot are used)
  microattn::DecoderWeights<DCfg> w;

  struct Layer {
    const float *an, *wq, *wk, *wv, *wo, *mn, *gate, *up, *down;
  };
  const float* embed() const { return f; }
  const float* head() const { return DCfg::kTiedHead ? f : f + V * DM; }
  const float* norm() const { return f + 2 * V * DM; }
  Layer layer(std::size_t l) const {
    const float* p = f + 2 * V * DM + DM + l * kPerLayer;
    Layer r;
    r.an = p, p += DM;
    r.wq = p, p += QD * DM;
    r.wk = p, p += KD * DM;
    r.wv = p, p += KD * DM;
    r.wo = p, p += DM * QD;
    r.mn = p, p += DM;
    r.gate = p, p += DH * DM;
    r.up = p, p += DH * DM;
    r.down = p;
    return r;
  }

  /// Random weights (matrices ~ U(+-1/sqrt(in)), embedding ~ U(+-1), norms ~ U(0.5, 1.5)).
  void init(std::uint64_t seed, RopePairing pairing) {
    microattn_test::Rng rng(seed);
    rng.fill(f, 2 * V * DM, -1.0f, 1.0f);
    rng.fill(f + 2 * V * DM, DM, 0.5f, 1.5f);
    for (std::size_t l = 0; l < L; ++l) {
      const Layer r = layer(l);
      rng.fill(const_cast<float*>(r.an), DM, 0.5f, 1.5f);
      rng.fill(const_cast<float*>(r.mn), DM, 0.5f, 1.5f);
      fill(rng, r.wq, QD, DM), fill(rng, r.wk, KD, DM), fill(rng, r.wv, KD, DM);
      fill(rng, r.wo, DM, QD), fill(rng, r.gate, DH, DM), fill(rng, r.up, DH, DM);
      fill(rng, r.down, DM, DH);
    }
    w = microattn::DecoderWeights<DCfg>();
    w.embed = view(embed(), V, DM, &w.s_embed);
    if (!DCfg::kTiedHead) w.head = view(head(), V, DM, &w.s_head);
    w.norm = norm();
    for (std::size_t l = 0; l < L; ++l) {
      const Layer r = layer(l);
      auto& lw = w.layers[l];
      lw.attn.layout = lw.mlp.layout = WeightLayout::kOutIn;
      lw.attn_norm = r.an, lw.mlp_norm = r.mn;
      lw.attn.w_q = view(r.wq, QD, DM, &lw.attn.s_q);
      lw.attn.w_k = view(r.wk, KD, DM, &lw.attn.s_k);
      lw.attn.w_v = view(r.wv, KD, DM, &lw.attn.s_v);
      lw.attn.w_o = view(r.wo, DM, QD, &lw.attn.s_o);
      lw.mlp.w_gate = view(r.gate, DH, DM, &lw.mlp.s_gate);
      lw.mlp.w_up = view(r.up, DH, DM, &lw.mlp.s_up);
      lw.mlp.w_down = view(r.down, DM, DH, &lw.mlp.s_down);
    }
    w.rope_base = 500.0f;  // a small base: positions up to 12 turn every pair visibly
    w.rope_pairing = pairing;
    w.norm_eps = 1e-5f;
  }
  static void fill(microattn_test::Rng& rng, const float* m, std::size_t out, std::size_t in) {
    const float a = 1.0f / std::sqrt(float(in));
    rng.fill(const_cast<float*>(m), out * in, -a, a);
  }
  /// The array under test for matrix m [out][in]: itself (fp32), or its quantised copy; the
  /// float array then becomes the dequantised values.
  const E* view(const float* m, std::size_t out, std::size_t in, const float** scales) {
    const std::size_t at = static_cast<std::size_t>(m - f);
    if constexpr (std::is_same<E, float>::value) {
      (void)scales, (void)out, (void)in;
      return m;
    } else {
      float* mf = f + at;
      const Status st = microattn::quantize_int8(mf, WeightLayout::kOutIn, in, out,
                                                 WeightLayout::kOutIn, q + at, s + at);
      MICROATTN_ASSERT(st == Status::kOk);
      (void)st;
      for (std::size_t o = 0; o < out; ++o)
        for (std::size_t i = 0; i < in; ++i) mf[o * in + i] = s[at + o] * float(q[at + o * in + i]);
      *scales = s + at;
      return q + at;
    }
  }
};

// ---- the double reference

/// y[T][out] = x[T][in] W^T, W [out][in].
void ref_linear(const double* x, std::size_t T, std::size_t in, std::size_t out, const float* w,
                double* y) {
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t o = 0; o < out; ++o) {
      double a = 0;
      for (std::size_t i = 0; i < in; ++i) a += x[t * in + i] * double(w[o * in + i]);
      y[t * out + o] = a;
    }
}
void ref_rms(const double* x, std::size_t T, std::size_t d, const float* g, double eps, double* y) {
  for (std::size_t t = 0; t < T; ++t) {
    double ss = 0;
    for (std::size_t j = 0; j < d; ++j) ss += x[t * d + j] * x[t * d + j];
    const double r = 1.0 / std::sqrt(ss / double(d) + eps);
    for (std::size_t j = 0; j < d; ++j) y[t * d + j] = x[t * d + j] * r * double(g[j]);
  }
}
/// RoPE on row x (heads of d, n of them) at position p.
void ref_rope(double* x, std::size_t heads, std::size_t d, std::size_t p, double base,
              RopePairing pairing) {
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < d / 2; ++i) {
      const double th = double(p) * std::pow(base, -2.0 * double(i) / double(d));
      const std::size_t a = pairing == RopePairing::kAdjacent ? 2 * i : i;
      const std::size_t b = pairing == RopePairing::kAdjacent ? 2 * i + 1 : i + d / 2;
      const double u = x[h * d + a], v = x[h * d + b];
      x[h * d + a] = u * std::cos(th) - v * std::sin(th);
      x[h * d + b] = u * std::sin(th) + v * std::cos(th);
    }
}

template <class DCfg>
struct RefScratch {
  static constexpr std::size_t T = DCfg::kTMax, DM = DCfg::kDModel, DH = DCfg::kDHidden;
  static constexpr std::size_t QD = DCfg::Attn::kQDim, KD = DCfg::Attn::kKvDim;
  double x[T * DM], n[T * DM], q[T * QD], k[T * KD], v[T * KD], c[T * QD], o[T * DM];
  double g[T * DH], u[T * DH];
};

/// Causal GQA attention of T tokens: c = softmax(q k^T / sqrt(d)) v per head.
template <class DCfg>
void ref_attention(RefScratch<DCfg>& s, std::size_t T) {
  constexpr std::size_t H = DCfg::Attn::kHeads, D = DCfg::Attn::kDHead, G = DCfg::Attn::kGroup;
  constexpr std::size_t QD = H * D, KD = QD / G;
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < T; ++i) {
      double p[DCfg::kTMax], mx = -1e300, sum = 0;
      for (std::size_t j = 0; j <= i; ++j) {
        double a = 0;
        for (std::size_t e = 0; e < D; ++e)
          a += s.q[i * QD + h * D + e] * s.k[j * KD + h / G * D + e];
        p[j] = a / std::sqrt(double(D));
        mx = p[j] > mx ? p[j] : mx;
      }
      for (std::size_t j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - mx));
      for (std::size_t e = 0; e < D; ++e) {
        double a = 0;
        for (std::size_t j = 0; j <= i; ++j) a += p[j] * s.v[j * KD + h / G * D + e];
        s.c[i * QD + h * D + e] = a / sum;
      }
    }
}

/// logits[T][V] of the whole sequence, in double.
template <class DCfg>
void ref_logits(const TestModel<DCfg>& m, const std::int32_t* tok, std::size_t T, double* logits) {
  using M = TestModel<DCfg>;
  static RefScratch<DCfg> s;
  const double eps = m.w.norm_eps, base = m.w.rope_base;
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < M::DM; ++j) s.x[t * M::DM + j] = m.embed()[tok[t] * M::DM + j];
  for (std::size_t l = 0; l < M::L; ++l) {
    const typename M::Layer r = m.layer(l);
    ref_rms(s.x, T, M::DM, r.an, eps, s.n);
    ref_linear(s.n, T, M::DM, M::QD, r.wq, s.q);
    ref_linear(s.n, T, M::DM, M::KD, r.wk, s.k);
    ref_linear(s.n, T, M::DM, M::KD, r.wv, s.v);
    for (std::size_t t = 0; t < T; ++t) {
      ref_rope(s.q + t * M::QD, DCfg::Attn::kHeads, DCfg::Attn::kDHead, t, base, m.w.rope_pairing);
      ref_rope(s.k + t * M::KD, DCfg::Attn::kKvHeads, DCfg::Attn::kDHead, t, base,
               m.w.rope_pairing);
    }
    ref_attention<DCfg>(s, T);
    ref_linear(s.c, T, M::QD, M::DM, r.wo, s.o);
    for (std::size_t i = 0; i < T * M::DM; ++i) s.x[i] += s.o[i];
    ref_rms(s.x, T, M::DM, r.mn, eps, s.n);
    ref_linear(s.n, T, M::DM, M::DH, r.gate, s.g);
    ref_linear(s.n, T, M::DM, M::DH, r.up, s.u);
    for (std::size_t i = 0; i < T * M::DH; ++i)
      s.g[i] = s.g[i] / (1.0 + std::exp(-s.g[i])) * s.u[i];
    ref_linear(s.g, T, M::DH, M::DM, r.down, s.o);
    for (std::size_t i = 0; i < T * M::DM; ++i) s.x[i] += s.o[i];
  }
  ref_rms(s.x, T, M::DM, m.norm(), eps, s.n);
  ref_linear(s.n, T, M::DM, M::V, m.head(), logits);
}

/// Tolerance relative to the largest logit: check.hpp's linear bound for the longest chain of
/// rounded operations, a layer's dot products (d_model twice, QD, T, d_hidden) per layer plus
/// the head's.
template <class DCfg>
double logit_tolerance(double magnitude) {
  constexpr double chain = double(DCfg::kLayers) * (2 * DCfg::kDModel + DCfg::Attn::kQDim +
                                                    DCfg::kTMax + DCfg::kDHidden) +
                           DCfg::kDModel;
  return microattn_test::tolerance(chain, magnitude);
}

template <class DCfg>
struct Case {
  static constexpr std::size_t T = DCfg::kTMax, V = DCfg::kVocab;
  TestModel<DCfg> m;
  microattn::Decoder<DCfg, microattn::DefaultArch, kChunk> dec;
  std::int32_t tok[T];
  double ref[T * V];
  float out[T * V];

  void init(std::uint64_t seed, RopePairing pairing) {
    m.init(seed, pairing);
    for (std::size_t t = 0; t < T; ++t) tok[t] = std::int32_t((t * 7 + seed) % V);
    ref_logits(m, tok, T, ref);
    dec.reset();
  }
};

template <class DCfg>
void check_prefill_and_decode(Case<DCfg>& c, const char* what) {
  constexpr std::size_t T = DCfg::kTMax, V = DCfg::kVocab;
  ASSERT_EQ(c.dec.set_weights(c.m.w), Status::kOk) << what;
  ASSERT_EQ(c.dec.prefill_all(c.tok, T, c.out), Status::kOk) << what;
  const double mag = microattn_test::max_abs(c.ref, T * V);
  const double tol = logit_tolerance<DCfg>(mag);
  EXPECT_LE(microattn_test::max_diff(c.out, c.ref, T * V), tol) << what << ": prefill_all";
  microattn_test::report("decoder %s: |logits| %.3g, error %.3g (tolerance %.3g)\n", what, mag,
                         microattn_test::max_diff(c.out, c.ref, T * V), tol);
  // Token by token: the same logits within the tolerance (decode's GEMVs sum in another order).
  static float row[DCfg::kVocab];
  c.dec.reset();
  for (std::size_t t = 0; t < T; ++t) {
    ASSERT_EQ(c.dec.decode(c.tok[t], row), Status::kOk) << what;
    EXPECT_LE(microattn_test::max_diff(row, c.ref + t * V, V), tol) << what << ": decode " << t;
  }
  EXPECT_EQ(c.dec.length(), T);
  // prefill(): only the last row, and it is prefill_all's.
  static float last[DCfg::kVocab];
  c.dec.reset();
  ASSERT_EQ(c.dec.prefill(c.tok, 7, last), Status::kOk);
  ASSERT_EQ(c.dec.prefill(c.tok + 7, T - 7, last), Status::kOk);
  EXPECT_LE(microattn_test::max_diff(last, c.ref + (T - 1) * V, V), tol) << what << ": prefill";
}

Case<TiedCfg> g_tied;
Case<SeparateCfg> g_separate;
Case<Int8Cfg> g_int8;
Case<Qd8Cfg> g_qd8;

TEST(Decoder, TiedHeadMatchesDoubleReference) {
  g_tied.init(1, RopePairing::kAdjacent);
  check_prefill_and_decode(g_tied, "tied, adjacent RoPE");
  g_tied.init(2, RopePairing::kHalfSplit);
  check_prefill_and_decode(g_tied, "tied, half-split RoPE");
}

TEST(Decoder, SeparateHeadMatchesDoubleReference) {
  g_separate.init(3, RopePairing::kHalfSplit);
  check_prefill_and_decode(g_separate, "separate head");
}

TEST(Decoder, Int8WeightsMatchDequantisedReference) {
  g_int8.init(4, RopePairing::kAdjacent);
  check_prefill_and_decode(g_int8, "int8 weights");
}

// Integer compute (every matrix product's input rows quantised): the logits against the double
// reference on the dequantised weights. Each quantised row moves its products by up to half a
// step (1/254 of its largest value, ~0.4 % of a row): measured 0.6 % of the largest logit over
// 2 layers and the head, bounded at 3 % (the attention layer's bound for the option).
// prefill_all on 2 workers: bit-identical; decode: within the bound.
TEST(Decoder, IntegerComputeStaysClose) {
  constexpr std::size_t T = Qd8Cfg::kTMax, V = Qd8Cfg::kVocab;
  g_qd8.init(6, RopePairing::kHalfSplit);
  ASSERT_EQ(g_qd8.dec.set_weights(g_qd8.m.w), Status::kOk);
  ASSERT_EQ(g_qd8.dec.prefill_all(g_qd8.tok, T, g_qd8.out), Status::kOk);
  const double mag = microattn_test::max_abs(g_qd8.ref, T * V);
  const double rel = microattn_test::max_diff(g_qd8.out, g_qd8.ref, T * V) / mag;
  microattn_test::report("decoder integer compute: |logits| %.3g, error %.4f of it\n", mag, rel);
  EXPECT_LE(rel, 0.03);
  EXPECT_GT(rel, 1e-4);  // quantised: not the fp32 result
  static float two[T * V], row[V];
  g_qd8.dec.reset();
  ASSERT_EQ(g_qd8.dec.set_executor(microattn_test::serial_executor(2)), Status::kOk);
  ASSERT_EQ(g_qd8.dec.prefill_all(g_qd8.tok, T, two), Status::kOk);
  EXPECT_EQ(std::memcmp(g_qd8.out, two, sizeof two), 0);
  g_qd8.dec.reset();
  for (std::size_t t = 0; t < T; ++t) {
    ASSERT_EQ(g_qd8.dec.decode(g_qd8.tok[t], row), Status::kOk);
    EXPECT_LE(microattn_test::max_diff(row, g_qd8.ref + t * V, V), 0.03 * mag) << "decode " << t;
  }
  ASSERT_EQ(g_qd8.dec.set_executor(microattn_test::serial_executor(1)), Status::kOk);
}

TEST(Decoder, ExecutorSplitIsBitIdentical) {
  constexpr std::size_t T = TiedCfg::kTMax, V = TiedCfg::kVocab;
  g_tied.init(5, RopePairing::kAdjacent);
  static float one[T * V], three[T * V];
  ASSERT_EQ(g_tied.dec.set_weights(g_tied.m.w), Status::kOk);
  ASSERT_EQ(g_tied.dec.prefill_all(g_tied.tok, T, one), Status::kOk);
  g_tied.dec.reset();
  ASSERT_EQ(g_tied.dec.set_executor(microattn_test::serial_executor(3)), Status::kOk);
  ASSERT_EQ(g_tied.dec.prefill_all(g_tied.tok, T, three), Status::kOk);
  EXPECT_EQ(std::memcmp(one, three, sizeof one), 0);
  EXPECT_EQ(g_tied.dec.set_executor(microattn_test::serial_executor(4)), Status::kBadArgument);
  ASSERT_EQ(g_tied.dec.set_executor(microattn_test::serial_executor(1)), Status::kOk);
}

TEST(Decoder, BadInputChangesNothing) {
  constexpr std::size_t T = TiedCfg::kTMax, V = TiedCfg::kVocab;
  static microattn::Decoder<TiedCfg> zero;  // all-zero: no weights
  static float out[T * V];
  std::int32_t tok[2] = {1, 2};
  EXPECT_EQ(zero.decode(1, out), Status::kNullPointer);
  g_tied.init(6, RopePairing::kAdjacent);
  auto& d = g_tied.dec;
  ASSERT_EQ(d.set_weights(g_tied.m.w), Status::kOk);
  ASSERT_EQ(d.prefill(tok, 2, out), Status::kOk);
  for (float& v : out) v = 42.0f;
  tok[1] = std::int32_t(V);  // not a token
  EXPECT_EQ(d.prefill(tok, 2, out), Status::kBadArgument);
  EXPECT_EQ(d.decode(-1, out), Status::kBadArgument);
  EXPECT_EQ(d.prefill(tok, 0, out), Status::kBadTokenCount);
  EXPECT_EQ(d.prefill(nullptr, 1, out), Status::kNullPointer);
  EXPECT_EQ(d.decode(1, nullptr), Status::kNullPointer);
  EXPECT_EQ(d.prefill_all(g_tied.tok, T - 1, out), Status::kCacheFull);
  EXPECT_EQ(d.decode(1, const_cast<float*>(g_tied.m.norm())), Status::kOverlap);
  // Logits over the token ids (more tokens than a prefill chunk): the first chunk's logits
  // would overwrite ids not read yet.
  static union {
    float logits[T * V];
    std::int32_t tokens[T];
  } shared;
  std::memcpy(shared.tokens, g_tied.tok, sizeof shared.tokens);
  static_assert(T - 2 > kChunk, "the overlap case needs several chunks");
  EXPECT_EQ(d.prefill_all(shared.tokens, T - 2, shared.logits), Status::kOverlap);
  EXPECT_EQ(d.prefill(shared.tokens + 1, 3, shared.logits), Status::kOverlap);
  EXPECT_EQ(std::memcmp(shared.tokens, g_tied.tok, sizeof shared.tokens), 0);
  EXPECT_EQ(d.length(), 2u);
  for (float v : out) ASSERT_EQ(v, 42.0f);
  // Weights with a missing array, another RoPE while tokens are cached: refused, unchanged.
  auto w = g_tied.m.w;
  w.layers[1].mlp.w_up = nullptr;
  EXPECT_EQ(d.set_weights(w), Status::kNullPointer);
  // The epsilon has no default (0 refused), the RoPE base and epsilon must be finite, checked
  // on the bits (the -Ofast build runs this too), and T_max may not exceed the trained context.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const float eps : {0.0f, -1e-5f, nan, inf}) {
    w = g_tied.m.w;
    w.norm_eps = eps;
    EXPECT_EQ(w.check(), Status::kBadArgument) << eps;
    EXPECT_EQ(d.set_weights(w), Status::kBadArgument) << eps;
  }
  for (const float base : {-10000.0f, nan, -nan, inf}) {
    w = g_tied.m.w;
    w.rope_base = base;
    EXPECT_EQ(d.set_weights(w), Status::kBadArgument) << base;
  }
  w = g_tied.m.w;
  w.trained_context = TiedCfg::kTMax - 1;
  EXPECT_EQ(d.set_weights(w), Status::kBadArgument);
  w.trained_context = TiedCfg::kTMax;
  EXPECT_EQ(d.set_weights(w), Status::kOk);
  w = g_tied.m.w;
  w.rope_base = 1000.0f;
  EXPECT_EQ(d.set_weights(w), Status::kBadArgument);
  EXPECT_EQ(d.rope().base, 500.0f);
  EXPECT_EQ(d.truncate(3), Status::kBadArgument);
  ASSERT_EQ(d.truncate(1), Status::kOk);
  EXPECT_EQ(d.length(), 1u);
  d.reset();
  EXPECT_EQ(d.set_weights(w), Status::kOk);  // an empty cache takes a new RoPE
  EXPECT_EQ(d.rope().base, 1000.0f);
}

// ---- the model file (docs/model-format.md)

/// Writes g_int8's or g_tied's model as a model file into buf; returns its size.
template <class DCfg>
std::size_t write_blob(const TestModel<DCfg>& m, unsigned char* buf, std::size_t cap) {
  using M = TestModel<DCfg>;
  std::size_t pos = 64;
  const auto put = [&](const void* p, std::size_t bytes) {
    pos = (pos + 15) / 16 * 16;
    MICROATTN_ASSERT(pos + bytes <= cap);
    std::memcpy(buf + pos, p, bytes);
    pos += bytes;
  };
  constexpr bool q = DCfg::kInt8Weights;
  const auto mat = [&](const typename M::E* w, const float* s, std::size_t out, std::size_t in) {
    put(w, out * in * sizeof(*w));
    if (q) put(s, out * sizeof(float));
  };
  std::memset(buf, 0, cap);
  mat(m.w.embed, m.w.s_embed, M::V, M::DM);
  for (const auto& l : m.w.layers) {
    put(l.attn_norm, M::DM * 4);
    mat(l.attn.w_q, l.attn.s_q, M::QD, M::DM), mat(l.attn.w_k, l.attn.s_k, M::KD, M::DM);
    mat(l.attn.w_v, l.attn.s_v, M::KD, M::DM), mat(l.attn.w_o, l.attn.s_o, M::DM, M::QD);
    put(l.mlp_norm, M::DM * 4);
    mat(l.mlp.w_gate, l.mlp.s_gate, M::DH, M::DM), mat(l.mlp.w_up, l.mlp.s_up, M::DH, M::DM);
    mat(l.mlp.w_down, l.mlp.s_down, M::DM, M::DH);
  }
  put(m.w.norm, M::DM * 4);
  if (!DCfg::kTiedHead) mat(m.w.head, m.w.s_head, M::V, M::DM);
  pos = (pos + 15) / 16 * 16;
  float base = m.w.rope_base, eps = m.w.norm_eps;
  std::uint32_t b, e;
  std::memcpy(&b, &base, 4), std::memcpy(&e, &eps, 4);
  const std::uint32_t flags =
      (DCfg::kTiedHead ? 1u : 0u) | (m.w.rope_pairing == RopePairing::kAdjacent ? 2u : 0u);
  const std::uint32_t head[16] = {0x4D4C414Du,
                                  1,
                                  64,
                                  q ? 1u : 0u,
                                  std::uint32_t(M::V),
                                  std::uint32_t(M::DM),
                                  std::uint32_t(M::L),
                                  std::uint32_t(DCfg::Attn::kHeads),
                                  std::uint32_t(DCfg::Attn::kKvHeads),
                                  std::uint32_t(DCfg::Attn::kDHead),
                                  std::uint32_t(M::DH),
                                  std::uint32_t(DCfg::kTMax),
                                  flags,
                                  b,
                                  e,
                                  std::uint32_t(pos)};
  for (std::size_t i = 0; i < 16; ++i)
    for (std::size_t k = 0; k < 4; ++k) buf[4 * i + k] = (head[i] >> (8 * k)) & 0xffu;
  return pos;
}

alignas(16) unsigned char g_blob[32768];

TEST(Decoder, ModelFileGivesTheSameModel) {
  constexpr std::size_t T = Int8Cfg::kTMax, V = Int8Cfg::kVocab;
  g_int8.init(7, RopePairing::kAdjacent);
  const std::size_t n = write_blob(g_int8.m, g_blob, sizeof g_blob);
  microattn::DecoderWeights<Int8Cfg> w;
  ASSERT_EQ(microattn::decoder_weights_from_blob<Int8Cfg>(g_blob, n, &w), Status::kOk);
  EXPECT_EQ(w.rope_base, 500.0f);
  EXPECT_EQ(w.rope_pairing, RopePairing::kAdjacent);
  EXPECT_EQ(w.norm_eps, 1e-5f);
  static float a[T * V], b[T * V];
  ASSERT_EQ(g_int8.dec.set_weights(g_int8.m.w), Status::kOk);
  ASSERT_EQ(g_int8.dec.prefill_all(g_int8.tok, T, a), Status::kOk);
  g_int8.dec.reset();
  ASSERT_EQ(g_int8.dec.set_weights(w), Status::kOk);
  ASSERT_EQ(g_int8.dec.prefill_all(g_int8.tok, T, b), Status::kOk);
  EXPECT_EQ(std::memcmp(a, b, sizeof a), 0);
  // Refusals: short, misaligned, another configuration, another weight type.
  microattn::DecoderWeights<Int8Cfg> keep = w;
  EXPECT_EQ(microattn::decoder_weights_from_blob<Int8Cfg>(g_blob, n - 16, &w),
            Status::kBadArgument);
  EXPECT_EQ(microattn::decoder_weights_from_blob<Int8Cfg>(g_blob + 16, n - 16, &w),
            Status::kBadArgument);
  microattn::DecoderWeights<TiedCfg> wf;
  EXPECT_EQ(microattn::decoder_weights_from_blob<TiedCfg>(g_blob, n, &wf), Status::kBadArgument);
  g_blob[4 * 5] = 17;  // d_model
  EXPECT_EQ(microattn::decoder_weights_from_blob<Int8Cfg>(g_blob, n, &w), Status::kBadArgument);
  EXPECT_EQ(microattn::decoder_weights_from_blob<Int8Cfg>(nullptr, n, &w), Status::kNullPointer);
  EXPECT_TRUE(keep.embed == w.embed && keep.layers[1].mlp.w_down == w.layers[1].mlp.w_down &&
              keep.norm_eps == w.norm_eps);
}

/// A word of g_blob's header (little-endian), set to v.
void set_blob_word(std::size_t i, std::uint32_t v) {
  for (std::size_t k = 0; k < 4; ++k) g_blob[4 * i + k] = (v >> (8 * k)) & 0xffu;
}
std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// A model file's non-finite RoPE base or epsilon is refused on the bits (also at -Ofast, where
// `!(base > 0)` folds away).
TEST(Decoder, ModelFileRefusesNonFiniteSettings) {
  g_int8.init(8, RopePairing::kAdjacent);
  const std::size_t n = write_blob(g_int8.m, g_blob, sizeof g_blob);
  microattn::DecoderWeights<Int8Cfg> w;
  ASSERT_EQ(microattn::decoder_weights_from_blob<Int8Cfg>(g_blob, n, &w), Status::kOk);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::size_t word : {std::size_t{13}, std::size_t{14}})  // RoPE base, eps
    for (const float bad : {nan, -nan, inf, -inf, 0.0f, -1.0f}) {
      write_blob(g_int8.m, g_blob, sizeof g_blob);
      set_blob_word(word, float_bits(bad));
      microattn::DecoderWeights<Int8Cfg> v;
      v.norm_eps = 7.0f;
      EXPECT_EQ(microattn::decoder_weights_from_blob<Int8Cfg>(g_blob, n, &v), Status::kBadArgument)
          << "word " << word << " = " << bad;
      EXPECT_EQ(v.norm_eps, 7.0f);  // untouched
    }
}

// A Decoder's T_max may be shorter than the context the model was trained for (the file's
// t_max, recorded as trained_context); longer is refused. The shorter model computes the same
// logits as the full one over its tokens.
using ShortCfg =
    microattn::DecoderConfig<11, 16, 2, 4, 2, 4, 24, 8, LmHead::kTied, WeightType::kInt8>;
using LongCfg =
    microattn::DecoderConfig<11, 16, 2, 4, 2, 4, 24, 13, LmHead::kTied, WeightType::kInt8>;
static_assert(ShortCfg::kTMax < Int8Cfg::kTMax && LongCfg::kTMax > Int8Cfg::kTMax, "");
microattn::Decoder<ShortCfg, microattn::DefaultArch, kChunk> g_short;

TEST(Decoder, ModelFileTakesAShorterContext) {
  constexpr std::size_t T = ShortCfg::kTMax, V = Int8Cfg::kVocab;
  g_int8.init(9, RopePairing::kAdjacent);
  const std::size_t n = write_blob(g_int8.m, g_blob, sizeof g_blob);
  microattn::DecoderWeights<ShortCfg> ws;
  ASSERT_EQ(microattn::decoder_weights_from_blob<ShortCfg>(g_blob, n, &ws), Status::kOk);
  EXPECT_EQ(ws.trained_context, Int8Cfg::kTMax);
  microattn::DecoderWeights<LongCfg> wl;
  EXPECT_EQ(microattn::decoder_weights_from_blob<LongCfg>(g_blob, n, &wl), Status::kBadArgument);
  EXPECT_EQ(wl.embed, nullptr);
  // The same calls (chunks of 5 and 3 tokens: -ffast-math may sum a shorter micro-tile in
  // another order, docs/numeric-contract.md), so the same bits.
  static float full[T * V], part[T * V];
  ASSERT_EQ(g_int8.dec.set_weights(g_int8.m.w), Status::kOk);
  ASSERT_EQ(g_int8.dec.prefill_all(g_int8.tok, T, full), Status::kOk);
  ASSERT_EQ(g_short.set_weights(ws), Status::kOk);
  ASSERT_EQ(g_short.prefill_all(g_int8.tok, T, part), Status::kOk);
  EXPECT_EQ(std::memcmp(part, full, sizeof part), 0);
  EXPECT_EQ(g_short.decode(1, part), Status::kCacheFull);
}

// ---- version 2 of the model file: keyed fields, a tensor directory (docs/model-format.md)

struct V2Field {
  std::uint32_t key, type, a, b;
};

/// Writes m as a version-2 file into buf, written here from docs/model-format.md: the header,
/// the fields (without drop_key, then `extra`), the tensor directory, the arrays. Its size.
template <class DCfg>
std::size_t write_blob_v2(const TestModel<DCfg>& m, unsigned char* buf, std::size_t cap,
                          std::uint32_t drop_key = 0, const V2Field* extra = nullptr,
                          std::size_t n_extra = 0) {
  using M = TestModel<DCfg>;
  constexpr bool q = DCfg::kInt8Weights;
  const std::uint32_t code = q ? 0x10801u : 0u;
  const V2Field all[] = {{1, 0, 1, 0},
                         {2, 0, std::uint32_t(M::V), 0},
                         {3, 0, std::uint32_t(M::DM), 0},
                         {4, 0, std::uint32_t(M::L), 0},
                         {5, 0, std::uint32_t(DCfg::Attn::kHeads), 0},
                         {6, 0, std::uint32_t(DCfg::Attn::kKvHeads), 0},
                         {7, 0, std::uint32_t(DCfg::Attn::kDHead), 0},
                         {8, 0, std::uint32_t(M::DH), 0},
                         {9, 0, std::uint32_t(DCfg::kTMax), 0},
                         {10, 0, DCfg::kTiedHead ? 1u : 0u, 0},
                         {11, 0, 0, 0},
                         {12, 0, m.w.rope_pairing == RopePairing::kAdjacent ? 1u : 0u, 0},
                         {13, 1, float_bits(m.w.rope_base), 0},
                         {14, 1, float_bits(m.w.norm_eps), 0}};
  std::memset(buf, 0, cap);
  const auto word = [&](std::size_t at, std::uint32_t v) {
    for (std::size_t k = 0; k < 4; ++k) buf[at + k] = (v >> (8 * k)) & 0xffu;
  };
  std::size_t nf = 0;
  for (const V2Field& f : all)
    if (f.key != drop_key)
      word(64 + 16 * nf, f.key), word(68 + 16 * nf, f.type), word(72 + 16 * nf++, f.a);
  for (std::size_t i = 0; i < n_extra; ++i, ++nf)
    word(64 + 16 * nf, extra[i].key), word(68 + 16 * nf, extra[i].type),
        word(72 + 16 * nf, extra[i].a), word(76 + 16 * nf, extra[i].b);
  const std::size_t tensors_at = (64 + 16 * nf + 15) / 16 * 16;
  std::size_t nt = 0, pos = tensors_at + 32 * (1 + 9 * M::L + 1 + (DCfg::kTiedHead ? 0 : 1));
  const auto put = [&](const void* p, std::size_t bytes) {
    pos = (pos + 15) / 16 * 16;
    MICROATTN_ASSERT(pos + bytes <= cap);
    std::memcpy(buf + pos, p, bytes);
    pos += bytes;
    return std::uint32_t(pos - bytes);
  };
  const auto record = [&](std::uint32_t role, std::uint32_t layer, std::uint32_t fmt,
                          std::size_t rows, std::size_t cols, std::uint32_t d, std::size_t db,
                          std::uint32_t sc, std::size_t sb) {
    const std::uint32_t r[8] = {
        role | layer << 16, fmt, std::uint32_t(rows), std::uint32_t(cols), d,
        std::uint32_t(db),  sc,  std::uint32_t(sb)};
    for (std::size_t i = 0; i < 8; ++i) word(tensors_at + 32 * nt + 4 * i, r[i]);
    ++nt;
  };
  const auto mat = [&](std::uint32_t role, std::uint32_t layer, const typename M::E* w,
                       const float* sc, std::size_t out, std::size_t in) {
    const std::uint32_t d = put(w, out * in * sizeof(*w));
    const std::uint32_t at = q ? put(sc, out * sizeof(float)) : 0;
    record(role, layer, code, out, in, d, out * in * sizeof(*w), at, q ? out * 4 : 0);
  };
  const auto vec = [&](std::uint32_t role, std::uint32_t layer, const float* v) {
    record(role, layer, 0, M::DM, 1, put(v, M::DM * 4), M::DM * 4, 0, 0);
  };
  const std::uint32_t none = 0xffff;
  mat(1, none, m.w.embed, m.w.s_embed, M::V, M::DM);
  for (std::uint32_t i = 0; i < M::L; ++i) {
    const auto& l = m.w.layers[i];
    vec(2, i, l.attn_norm);
    mat(3, i, l.attn.w_q, l.attn.s_q, M::QD, M::DM),
        mat(4, i, l.attn.w_k, l.attn.s_k, M::KD, M::DM);
    mat(5, i, l.attn.w_v, l.attn.s_v, M::KD, M::DM),
        mat(6, i, l.attn.w_o, l.attn.s_o, M::DM, M::QD);
    vec(7, i, l.mlp_norm);
    mat(8, i, l.mlp.w_gate, l.mlp.s_gate, M::DH, M::DM);
    mat(9, i, l.mlp.w_up, l.mlp.s_up, M::DH, M::DM);
    mat(10, i, l.mlp.w_down, l.mlp.s_down, M::DM, M::DH);
  }
  vec(11, none, m.w.norm);
  if (!DCfg::kTiedHead) mat(12, none, m.w.head, m.w.s_head, M::V, M::DM);
  pos = (pos + 15) / 16 * 16;
  const std::uint32_t head[8] = {0x4D4C414Du,
                                 2,
                                 64,
                                 std::uint32_t(pos),
                                 std::uint32_t(nf),
                                 64,
                                 std::uint32_t(nt),
                                 std::uint32_t(tensors_at)};
  for (std::size_t i = 0; i < 8; ++i) word(4 * i, head[i]);
  return pos;
}

/// The logits of every position of `tok` from a model file (through Decoder::set_weights_blob),
/// or from the weights themselves when blob is null. One prefill_all call for both: under
/// -ffast-math each inlined copy of it may sum in its own order (the Cortex-M4 build's do).
template <class DCfg>
void logits_of_blob(Case<DCfg>& c, const unsigned char* blob, std::size_t n, float* out) {
  c.dec.reset();
  microattn::ModelCheck why;
  if (blob) {
    ASSERT_EQ(c.dec.set_weights_blob(blob, n, &why), Status::kOk);
  } else {
    ASSERT_EQ(c.dec.set_weights(c.m.w), Status::kOk);
  }
  EXPECT_EQ(why.status, Status::kOk);
  ASSERT_EQ(c.dec.prefill_all(c.tok, DCfg::kTMax, out), Status::kOk);
}

// Version 2 of a model (fp32 with its own head; int8 with the tied one) computes what version 1
// and the weights themselves compute, bit for bit.
TEST(Decoder, ModelFileVersion2GivesTheSameModel) {
  constexpr std::size_t T = SeparateCfg::kTMax, V = SeparateCfg::kVocab;
  static float a[T * V], b[T * V], c[T * V];
  g_separate.init(11, RopePairing::kHalfSplit);
  logits_of_blob(g_separate, nullptr, 0, a);
  logits_of_blob(g_separate, g_blob, write_blob(g_separate.m, g_blob, sizeof g_blob), b);
  logits_of_blob(g_separate, g_blob, write_blob_v2(g_separate.m, g_blob, sizeof g_blob), c);
  EXPECT_EQ(std::memcmp(a, b, sizeof a), 0);
  EXPECT_EQ(std::memcmp(a, c, sizeof a), 0);
  EXPECT_EQ(g_separate.dec.rope().pairing, RopePairing::kHalfSplit);
  g_int8.init(12, RopePairing::kAdjacent);
  logits_of_blob(g_int8, g_blob, write_blob(g_int8.m, g_blob, sizeof g_blob), b);
  const std::size_t n = write_blob_v2(g_int8.m, g_blob, sizeof g_blob);
  logits_of_blob(g_int8, g_blob, n, c);
  EXPECT_EQ(std::memcmp(b, c, sizeof b), 0);
  microattn::DecoderWeights<Int8Cfg> w;
  ASSERT_EQ(microattn::decoder_weights_from_blob<Int8Cfg>(g_blob, n, &w), Status::kOk);
  EXPECT_EQ(w.trained_context, Int8Cfg::kTMax);
  EXPECT_EQ(std::memcmp(w.layers[1].mlp.s_down, g_int8.m.w.layers[1].mlp.s_down, 16 * 4), 0);
  // A described-only field (kModelKeyInfo) is skipped when its range lies in the file.
  const V2Field source{microattn::kKeySource, 2, 64, 16};
  logits_of_blob(g_int8, g_blob, write_blob_v2(g_int8.m, g_blob, sizeof g_blob, 0, &source, 1), c);
  EXPECT_EQ(std::memcmp(b, c, sizeof b), 0);
}

/// A refusal's text (the boards' test harness compares C strings, not std::string).
struct Text {
  char s[160];
  bool operator==(const char* t) const { return std::strcmp(s, t) == 0; }
};

/// The report and its text for a file refused by Int8Cfg; *w untouched.
microattn::ModelCheck refusal(const unsigned char* blob, std::size_t n, Text* text) {
  microattn::DecoderWeights<Int8Cfg> w;
  w.norm_eps = 7.0f;
  microattn::ModelCheck why;
  EXPECT_EQ(microattn::decoder_weights_from_blob<Int8Cfg>(blob, n, &w, &why), Status::kBadArgument);
  EXPECT_TRUE(w.norm_eps == 7.0f && w.embed == nullptr);
  EXPECT_EQ(why.status, Status::kBadArgument);
  const std::size_t len = microattn::model_check_text(why, text->s, sizeof text->s);
  EXPECT_EQ(len, std::strlen(text->s));
  return why;
}

/// Patches word `i` of the record at byte `at` of g_blob.
void set_word_at(std::size_t at, std::size_t i, std::uint32_t v) {
  for (std::size_t k = 0; k < 4; ++k) g_blob[at + 4 * i + k] = (v >> (8 * k)) & 0xffu;
}

// Every way a version-2 file can differ from its configuration is refused, naming the field or
// tensor and both values: the report and its one-line text.
TEST(Decoder, ModelFileVersion2SaysWhy) {
  using microattn::ModelProblem;
  g_int8.init(13, RopePairing::kAdjacent);
  const std::size_t n = write_blob_v2(g_int8.m, g_blob, sizeof g_blob);
  const std::size_t t0 = 64 + 16 * 14;  // the tensor directory: embed, then layer 0's attn_norm
  struct Case {
    const char* what;
    std::size_t at, word;  // the word patched (at: a byte offset); at 0, word 0: none
    std::uint32_t value;
    ModelProblem problem;
    std::uint32_t key, expected, found;
    const char* text;
  };
  const Case cases[] = {
      {"d_model", 64 + 16 * 2, 2, 17, ModelProblem::kFieldDiffers, 3, 16, 17,
       "field d_model: the file has 17, the configuration 16"},
      {"unknown key", 64 + 16 * 2, 0, 37, ModelProblem::kUnknownField, 37, 0, 0,
       "field unknown 37: not computed by this library"},
      {"twice", 64 + 16 * 2, 0, 2, ModelProblem::kDuplicateField, 2, 0, 0,
       "field vocab: given twice"},
      {"eps 0", 64 + 16 * 13, 2, 0, ModelProblem::kBadValue, 14, 0, 0,
       "field norm_eps: value out of range"},
      {"eps as uint32", 64 + 16 * 13, 1, 0, ModelProblem::kBadValue, 14, 1, 0,
       "field norm_eps: value out of range"},
      {"t_max short", 64 + 16 * 8, 2, 11, ModelProblem::kFieldDiffers, 9, 12, 11,
       "field t_max: the file has 11, the configuration 12"},
      {"not tied", 64 + 16 * 9, 2, 0, ModelProblem::kFieldDiffers, 10, 1, 0,
       "field tied_head: the file has 0, the configuration 1"},
      {"format", t0, 1, 0, ModelProblem::kTensorFormat, 1 | 0xffffu << 16, 0x10801, 0,
       "tensor embed: format code 0, the configuration's is 67585"},
      {"role", t0 + 32, 0, 40, ModelProblem::kUnknownTensor, 40, 0, 0,
       "tensor unknown 40 of layer 0: not computed by this library"},
      {"layer", t0 + 32, 0, 2 | 2u << 16, ModelProblem::kUnknownTensor, 2 | 2u << 16, 0, 0,
       "tensor attn_norm of layer 2: not computed by this library"},
      {"head in a tied file", t0 + 32, 0, 12 | 0xffffu << 16, ModelProblem::kUnknownTensor,
       12 | 0xffffu << 16, 0, 0, "tensor lm_head: not computed by this library"},
      {"shape", t0 + 64, 2, 8, ModelProblem::kTensorShape, 3, 16 << 16 | 16, 8 << 16 | 16,
       "tensor q_proj of layer 0: the file has 524304, the configuration 1048592"},
      {"misaligned", t0 + 64, 4, 72, ModelProblem::kTensorBytes, 3, 0, 0,
       "tensor q_proj of layer 0: data outside the file, misaligned or sized wrong"},
      {"outside", t0 + 64, 6, 1u << 20, ModelProblem::kTensorBytes, 3, 0, 0,
       "tensor q_proj of layer 0: data outside the file, misaligned or sized wrong"},
      {"version", 0, 1, 3, ModelProblem::kVersion, 1, 2, 3,
       "model file version 3 is not read by this library"},
      {"reserved", 0, 9, 1, ModelProblem::kBadHeader, 9, 0, 0, "header word 9 is invalid"},
      {"field table", 0, 4, 1000, ModelProblem::kBadHeader, 5, 0, 0, "header word 5 is invalid"},
      {"magic", 0, 0, 0x4D4C414Eu, ModelProblem::kNotModelFile, 0, 0, 0,
       "not a microattn model file (no MALM magic)"},
  };
  for (const Case& c : cases) {
    write_blob_v2(g_int8.m, g_blob, sizeof g_blob);
    set_word_at(c.at, c.word, c.value);
    Text text;
    const microattn::ModelCheck why = refusal(g_blob, n, &text);
    EXPECT_EQ(why.problem, c.problem) << c.what;
    EXPECT_EQ(why.key, c.key) << c.what;
    EXPECT_EQ(why.expected, c.expected) << c.what;
    EXPECT_EQ(why.found, c.found) << c.what;
    EXPECT_TRUE(text == c.text) << c.what << ": " << text.s;
  }
  Text text;
  // A tensor twice (layer 0's attn_norm for the embedding), a field or a tensor missing, short.
  write_blob_v2(g_int8.m, g_blob, sizeof g_blob);
  for (std::size_t i = 0; i < 8; ++i)
    set_word_at(t0, i, microattn::internal::blob_word(g_blob + t0 + 32, i));
  EXPECT_EQ(refusal(g_blob, n, &text).problem, ModelProblem::kDuplicateTensor);
  EXPECT_TRUE(text == "tensor attn_norm of layer 0: given twice") << text.s;
  const std::size_t m = write_blob_v2(g_int8.m, g_blob, sizeof g_blob, 14);
  EXPECT_EQ(refusal(g_blob, m, &text).key, 14u);
  EXPECT_TRUE(text == "field norm_eps: missing") << text.s;
  write_blob_v2(g_int8.m, g_blob, sizeof g_blob);
  set_word_at(0, 6, microattn::internal::blob_word(g_blob, 6) - 1);  // the last tensor: norm
  EXPECT_EQ(refusal(g_blob, n, &text).problem, ModelProblem::kMissingTensor);
  EXPECT_TRUE(text == "tensor norm: missing") << text.s;
  write_blob_v2(g_int8.m, g_blob, sizeof g_blob);
  EXPECT_EQ(refusal(g_blob, n - 16, &text).problem, ModelProblem::kTruncated);
  // The expected text without printf (the boards link no heap): n is 4 digits here.
  ASSERT_TRUE(n >= 1000 && n < 10000);
  char want[] = "the file is 0000 bytes, its header says 0000";
  for (std::size_t k = 0, x = n - 16, y = n; k < 4; ++k, x /= 10, y /= 10) {
    want[15 - k] = static_cast<char>('0' + x % 10);
    want[43 - k] = static_cast<char>('0' + y % 10);
  }
  EXPECT_TRUE(text == want) << text.s;
  EXPECT_EQ(refusal(g_blob + 4, n - 16, &text).problem, ModelProblem::kNotAligned);
  const V2Field bad_range{microattn::kKeySource, 2, std::uint32_t(n), 32};  // the file: n + 16
  write_blob_v2(g_int8.m, g_blob, sizeof g_blob, 0, &bad_range, 1);
  EXPECT_EQ(refusal(g_blob, n + 16, &text).problem, ModelProblem::kBadValue);
  EXPECT_TRUE(text == "field source: value out of range") << text.s;
  // The exported-for context (key 17, --context): at least T_max (12 here) and at most t_max.
  {
    const V2Field ctx{17, 0, 12, 0};
    const std::size_t k = write_blob_v2(g_int8.m, g_blob, sizeof g_blob, 0, &ctx, 1);
    microattn::DecoderWeights<Int8Cfg> w;
    EXPECT_EQ(microattn::decoder_weights_from_blob<Int8Cfg>(g_blob, k, &w), Status::kOk);
    const V2Field short_ctx{17, 0, 11, 0}, long_ctx{17, 0, 13, 0}, v1_key{16, 0, 1, 0};
    write_blob_v2(g_int8.m, g_blob, sizeof g_blob, 0, &short_ctx, 1);
    EXPECT_EQ(refusal(g_blob, k, &text).problem, ModelProblem::kFieldDiffers);
    EXPECT_TRUE(text == "field context: the file has 11, the configuration 12") << text.s;
    write_blob_v2(g_int8.m, g_blob, sizeof g_blob, 0, &long_ctx, 1);
    EXPECT_EQ(refusal(g_blob, k, &text).problem, ModelProblem::kBadValue);
    EXPECT_TRUE(text == "field context: value out of range") << text.s;
    write_blob_v2(g_int8.m, g_blob, sizeof g_blob, 0, &v1_key, 1);  // version 1's word only
    EXPECT_EQ(refusal(g_blob, k, &text).problem, ModelProblem::kUnknownField);
    EXPECT_EQ(refusal(g_blob, k, &text).key, 16u);
  }
  // A described byte range (the tokenizer's): model_file_range finds it, or says why not.
  {
    const V2Field tok{microattn::kKeyTokenizer, 2, 64, 16};
    const std::size_t k = write_blob_v2(g_int8.m, g_blob, sizeof g_blob, 0, &tok, 1);
    const unsigned char* d = nullptr;
    std::size_t len = 0;
    microattn::ModelCheck why;
    EXPECT_EQ(microattn::model_file_range(g_blob, k, microattn::kKeyTokenizer, &d, &len, &why),
              Status::kOk);
    EXPECT_TRUE(d == g_blob + 64 && len == 16u);
    d = nullptr;
    EXPECT_EQ(microattn::model_file_range(g_blob, k, microattn::kKeySource, &d, &len, &why),
              Status::kBadArgument);
    EXPECT_TRUE(why.problem == ModelProblem::kMissingField && d == nullptr);
    EXPECT_EQ(microattn::model_file_range(g_blob, 40, microattn::kKeyTokenizer, &d, &len, &why),
              Status::kBadArgument);
    EXPECT_TRUE(why.problem == ModelProblem::kTruncated && d == nullptr);
    EXPECT_EQ(microattn::model_file_range(nullptr, k, microattn::kKeyTokenizer, &d, &len),
              Status::kNullPointer);
    const V2Field outside{microattn::kKeyTokenizer, 2, std::uint32_t(k), 16};
    write_blob_v2(g_int8.m, g_blob, sizeof g_blob, 0, &outside, 1);
    EXPECT_EQ(microattn::model_file_range(g_blob, k, microattn::kKeyTokenizer, &d, &len, &why),
              Status::kBadArgument);
    EXPECT_TRUE(why.problem == ModelProblem::kBadValue && d == nullptr);
  }
  // Version 1 names its differences the same way.
  write_blob(g_int8.m, g_blob, sizeof g_blob);
  set_blob_word(5, 17);
  EXPECT_EQ(refusal(g_blob, n, &text).problem, ModelProblem::kFieldDiffers);
  EXPECT_TRUE(text == "field d_model: the file has 17, the configuration 16") << text.s;
  write_blob(g_int8.m, g_blob, sizeof g_blob);
  set_blob_word(3, 0);
  refusal(g_blob, n, &text);
  EXPECT_TRUE(text == "field weight_type: the file has 0, the configuration 1") << text.s;
  // A short buffer gets a terminated prefix; a null one nothing.
  char small[6];
  microattn::ModelCheck why;
  why.problem = ModelProblem::kNotAligned;
  EXPECT_EQ(microattn::model_check_text(why, small, sizeof small), 5u);
  EXPECT_EQ(std::strcmp(small, "the f"), 0);
  EXPECT_EQ(microattn::model_check_text(why, nullptr, 4), 0u);
}

}  // namespace
