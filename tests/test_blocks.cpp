// SPDX-License-Identifier: Apache-2.0
// The building blocks around attention (linear.hpp, norm.hpp, mlp.hpp) against double-precision
// references: every weight layout, fp32 and int8 weights (the reference then uses the
// dequantised weights), integer compute (the reference then also takes every product's input
// rows quantised), biases, one row (the GEMV path) and many (the GEMM path, several kMaxRows
// chunks), the executor split bit-identical, the status rules, the all-zero objects.
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "microattn/internal/elem.hpp"
#include "microattn/linear.hpp"
#include "microattn/mlp.hpp"
#include "microattn/norm.hpp"
#include "support/check.hpp"
#include "support/rng.hpp"
#include "support/serial_executor.hpp"
#include "support/unit.hpp"

namespace {

using microattn::Activation;
using microattn::Bias;
using microattn::Status;
using microattn::WeightLayout;
using microattn::WeightType;

constexpr WeightLayout kLayouts[] = {WeightLayout::kInOut, WeightLayout::kOutIn,
                                     WeightLayout::kPanel16};

/// A test matrix: reference values w [in][out] (int8: the dequantised ones; fp16 / bf16: the
/// rounded ones), its bias, and the copy under test in a layout (int8: quantised, with scales).
template <class E, std::size_t kIn, std::size_t kOut>
struct TestMatrix {
  static constexpr std::size_t kPadded = (kOut + 15) / 16 * 16;
  float w[kIn * kOut], b[kOut], s[kOut];
  E q[kIn * kOut];
  E lay[kIn * kPadded];

  void init(microattn_test::Rng& rng) {
    const float a = 1.0f / std::sqrt(float(kIn));
    rng.fill(w, kIn * kOut, -a, a);
    rng.fill(b, kOut, -0.5f, 0.5f);
    if constexpr (std::is_same<E, std::int8_t>::value) {
      ASSERT_EQ(
          microattn::quantize_int8(w, WeightLayout::kInOut, kIn, kOut, WeightLayout::kInOut, q, s),
          Status::kOk);
      for (std::size_t i = 0; i < kIn * kOut; ++i) w[i] = s[i % kOut] * float(q[i]);
    } else if constexpr (!std::is_same<E, float>::value) {  // fp16, bf16: rounded, widened back
      for (std::size_t i = 0; i < kIn * kOut; ++i) {
        microattn::internal::Elem<E>::encode(w + i, 1, q + i, 1);
        w[i] = microattn::internal::elem_value(q[i]);
      }
    }
  }
  /// The matrix in layout l (kPanel16's last panel zero-padded).
  const E* in_layout(WeightLayout l) {
    const E* src = q;
    if constexpr (std::is_same<E, float>::value) src = w;
    for (std::size_t i = 0; i < kIn * kPadded; ++i) lay[i] = E{};
    for (std::size_t i = 0; i < kIn; ++i)
      for (std::size_t o = 0; o < kOut; ++o)
        lay[microattn_test::weight_index(l, kIn, kOut, i, o)] = src[i * kOut + o];
    return lay;
  }
};

/// Integer compute's input rows (Compute::kInt8) as the blocks see them: row m of x (n wide)
/// quantised (kernels::qd8_quantize_row, its tested contract) and dequantised into xd; returns
/// the row's scale.
inline double quantised_row(const float* x, std::size_t n, double* xd) {
  using A = microattn::DefaultArch;
  static std::int8_t q[microattn::kernels::qd8_row_bytes<A>(512)];
  const float s = microattn::kernels::qd8_quantize_row<A>(n, x, q);
  for (std::size_t k = 0; k < n; ++k) xd[k] = double(s) * microattn::kernels::qd8_value<A>(q, k);
  return s;
}

/// y[m][o] = sum_i x[m][i] w[i][o] (+ b[o]) in double.
inline void ref_matmul(const double* x, std::size_t M, std::size_t in, std::size_t out,
                       const float* w, const float* b, double* y) {
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t o = 0; o < out; ++o) {
      double acc = b ? double(b[o]) : 0.0;
      for (std::size_t i = 0; i < in; ++i) acc += x[m * in + i] * double(w[i * out + o]);
      y[m * out + o] = acc;
    }
}

// ---- Linear

template <class LCfg>
struct LinearCase {
  static constexpr std::size_t kM = 20, I = LCfg::kIn, O = LCfg::kOut;
  TestMatrix<typename LCfg::WeightElem, I, O> m;
  microattn::Linear<LCfg> layer, split;
  float x[kM * I], y[kM * O], y2[kM * O];
  double xd[kM * I], ref[kM * O];

  microattn::LinearWeights<LCfg> weights(WeightLayout l) {
    microattn::LinearWeights<LCfg> w;
    w.layout = l, w.w = m.in_layout(l), w.s = m.s, w.b = m.b;
    return w;
  }
  void run(std::uint64_t seed) {
    microattn_test::Rng rng(seed);
    m.init(rng);
    rng.fill(x, kM * I, -1.0f, 1.0f);
    for (std::size_t i = 0; i < kM * I; ++i) xd[i] = x[i];
    if constexpr (LCfg::kInt8Compute)  // exact integer sums of the quantised rows
      for (std::size_t r = 0; r < kM; ++r) quantised_row(x + r * I, I, xd + r * I);
    ref_matmul(xd, kM, I, O, m.w, LCfg::kBias ? m.b : nullptr, ref);
    const double tol =
        microattn_test::tolerance(double(I + 2), microattn_test::max_abs(ref, kM * O));
    for (WeightLayout l : kLayouts) {
      ASSERT_EQ(layer.set_weights(weights(l)), Status::kOk);
      ASSERT_EQ(split.set_weights(weights(l)), Status::kOk);
      ASSERT_EQ(split.set_executor(microattn_test::serial_executor(LCfg::kMaxWorkers)),
                Status::kOk);
      for (std::size_t M : {std::size_t{1}, std::size_t{7}, kM}) {
        ASSERT_EQ(layer.forward(x, M, y), Status::kOk);
        EXPECT_LE(microattn_test::max_diff(y, ref, M * O), tol) << int(l) << " M " << M;
        ASSERT_EQ(split.forward(x, M, y2), Status::kOk);
        EXPECT_TRUE(microattn_test::same_bits(y, y2, M * O)) << int(l) << " M " << M;
      }
    }
  }
};

using LinA = microattn::LinearConfig<37, 29>;
using LinB = microattn::LinearConfig<32, 48, Bias::kYes, microattn::MaxWorkers{3}>;
using LinQ =
    microattn::LinearConfig<37, 29, WeightType::kInt8, Bias::kYes, microattn::MaxWorkers{2}>;
using LinC = microattn::LinearConfig<37, 29, WeightType::kInt8, microattn::Compute::kInt8,
                                     Bias::kYes, microattn::MaxWorkers{2}>;
using LinH =
    microattn::LinearConfig<37, 29, WeightType::kF16, Bias::kYes, microattn::MaxWorkers{2}>;
using LinBH = microattn::LinearConfig<32, 48, WeightType::kBF16, microattn::MaxWorkers{3}>;

TEST(Blocks, LinearMatchesDoubleReference) {
  static LinearCase<LinA> a;
  a.run(1);
  static LinearCase<LinB> b;
  b.run(2);
  static LinearCase<LinQ> q;
  q.run(3);
  static LinearCase<LinC> c;  // 20 rows: kMaxRows chunks of 16 and 4
  c.run(5);
}

// fp16 and bf16 weights: the fp32 arithmetic on the widened values, every layout, GEMV and GEMM,
// the same tolerance as fp32 (the reference takes the rounded weights).
TEST(Blocks, LinearHalfWeightsMatchDoubleReference) {
  static LinearCase<LinH> h;
  h.run(6);
  static LinearCase<LinBH> b;
  b.run(7);
}

TEST(Blocks, LinearStatusRulesAndZeroObject) {
  static LinearCase<LinQ> c;
  c.run(4);
  using Layer = microattn::Linear<LinQ>;
  alignas(Layer) static unsigned char storage[sizeof(Layer)];
  std::memset(storage, 0, sizeof(storage));
  Layer& z = *reinterpret_cast<Layer*>(storage);
  microattn_test::fill_sentinel(c.y, 20 * 29);
  EXPECT_EQ(z.forward(c.x, 1, c.y), Status::kNullPointer);  // no weights
  microattn::LinearWeights<LinQ> w = c.weights(WeightLayout::kOutIn);
  w.s = nullptr;
  EXPECT_EQ(z.set_weights(w), Status::kNullPointer);
  w = c.weights(WeightLayout::kOutIn);
  w.b = nullptr;
  EXPECT_EQ(z.set_weights(w), Status::kNullPointer);
  w = c.weights(WeightLayout::kOutIn);
  w.layout = static_cast<WeightLayout>(7);
  EXPECT_EQ(z.set_weights(w), Status::kBadArgument);
  ASSERT_EQ(z.set_weights(c.weights(WeightLayout::kOutIn)), Status::kOk);
  EXPECT_EQ(z.forward(nullptr, 1, c.y), Status::kNullPointer);
  EXPECT_EQ(z.forward(c.x, 0, c.y), Status::kBadTokenCount);
  EXPECT_EQ(z.forward(c.x, 2, c.x + 10), Status::kOverlap);
  EXPECT_EQ(z.forward(c.x, 1, c.m.b), Status::kOverlap);
  EXPECT_TRUE(microattn_test::all_sentinel(c.y, 20 * 29));
  microattn::Executor e = microattn_test::serial_executor(3);
  EXPECT_EQ(z.set_executor(e), Status::kBadArgument);  // MaxWorkers{2}
  ASSERT_EQ(z.forward(c.x, 20, c.y), Status::kOk);
  EXPECT_LE(microattn_test::max_diff(c.y, c.ref, 20 * 29),
            microattn_test::tolerance(39.0, microattn_test::max_abs(c.ref, 20 * 29)));
}

// ---- RMSNorm, LayerNorm

/// RMSNorm (eps 1e-5) of M rows of d in double.
void ref_rms_norm(const float* x, std::size_t M, std::size_t d, const float* g, double* ref) {
  for (std::size_t t = 0; t < M; ++t) {
    double ss = 0;
    for (std::size_t i = 0; i < d; ++i) ss += double(x[t * d + i]) * x[t * d + i];
    const double inv = 1.0 / std::sqrt(ss / double(d) + 1e-5);
    for (std::size_t i = 0; i < d; ++i) ref[t * d + i] = x[t * d + i] * inv * g[i];
  }
}
/// LayerNorm (eps 1e-5, bias b) of M rows of d in double.
void ref_layer_norm(const float* x, std::size_t M, std::size_t d, const float* g, const float* b,
                    double* ref) {
  for (std::size_t t = 0; t < M; ++t) {
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < d; ++i) mean += x[t * d + i];
    mean /= double(d);
    for (std::size_t i = 0; i < d; ++i) var += (x[t * d + i] - mean) * (x[t * d + i] - mean);
    const double inv = 1.0 / std::sqrt(var / double(d) + 1e-5);
    for (std::size_t i = 0; i < d; ++i) ref[t * d + i] = (x[t * d + i] - mean) * inv * g[i] + b[i];
  }
}

TEST(Blocks, NormsMatchDoubleReference) {
  constexpr std::size_t D = 24, M = 5;
  static float x[M * D], y[M * D], g[D], b[D];
  microattn_test::Rng rng(5);
  rng.fill(x, M * D, -3.0f, 2.0f);
  rng.fill(g, D, 0.5f, 1.5f);
  rng.fill(b, D, -0.5f, 0.5f);
  double ref[M * D];
  // RMSNorm, eps 1e-5.
  microattn::RmsNorm<D> rms;
  EXPECT_EQ(rms.forward(x, M, y), Status::kNullPointer);
  EXPECT_EQ(rms.eps(), 1e-6f);
  ASSERT_EQ(rms.set_weight(g), Status::kOk);
  ASSERT_EQ(rms.set_eps(1e-5f), Status::kOk);
  EXPECT_EQ(rms.set_eps(0.0f), Status::kBadArgument);
  EXPECT_EQ(rms.set_eps(INFINITY), Status::kBadArgument);
  ref_rms_norm(x, M, D, g, ref);
  ASSERT_EQ(rms.forward(x, M, y), Status::kOk);
  // Chain: the sum of squares (D), the mean, sqrt, the division and two products.
  const double tol_r = microattn_test::tolerance(D + 6, microattn_test::max_abs(ref, M * D));
  EXPECT_LE(microattn_test::max_diff(y, ref, M * D), tol_r);
  static float inplace[M * D];
  std::memcpy(inplace, x, sizeof(x));
  ASSERT_EQ(rms.forward(inplace, M, inplace), Status::kOk);
  EXPECT_TRUE(microattn_test::same_bits(inplace, y, M * D));
  EXPECT_EQ(rms.forward(x, M, x + 1), Status::kOverlap);
  EXPECT_EQ(rms.forward(x, 0, y), Status::kBadTokenCount);
  // LayerNorm with bias, default eps 1e-5.
  microattn::LayerNorm<D> ln;
  EXPECT_EQ(ln.set_weights(g, nullptr), Status::kNullPointer);
  ASSERT_EQ(ln.set_weights(g, b), Status::kOk);
  ref_layer_norm(x, M, D, g, b, ref);
  ASSERT_EQ(ln.forward(x, M, y), Status::kOk);
  // Chain: the mean (D), the centred squares' sum (D), sqrt, division, three steps a value.
  const double tol_l = microattn_test::tolerance(2 * D + 8, microattn_test::max_abs(ref, M * D));
  EXPECT_LE(microattn_test::max_diff(y, ref, M * D), tol_l);
  // Without bias (Bias::kNo): the same without b.
  microattn::LayerNorm<D, Bias::kNo> ln0;
  ASSERT_EQ(ln0.set_weights(g, nullptr), Status::kOk);
  ASSERT_EQ(ln0.forward(x, M, y), Status::kOk);
  for (std::size_t i = 0; i < M * D; ++i) ref[i] -= b[i % D];
  EXPECT_LE(microattn_test::max_diff(y, ref, M * D), tol_l);
}

// Rows too large to square in float (|x| above about 1.8e19): before, RMSNorm gave zeros and
// LayerNorm the bias. Now the normalised row, as in double, up to rows holding +-FLT_MAX; the
// rows of ordinary size keep their bits (the scaled path is only taken on overflow).
TEST(Blocks, NormsOfRowsTooLargeToSquare) {
  constexpr std::size_t D = 24, M = 5;
  static float x[M * D], y[M * D], g[D], b[D], small[D];
  microattn_test::Rng rng(25);
  rng.fill(g, D, 0.5f, 1.5f);
  rng.fill(b, D, -0.5f, 0.5f);
  rng.fill(small, D, -3.0f, 2.0f);
  const float mult[M] = {1e19f, 1e25f, 1e30f, 1e37f, 1.0f};
  for (std::size_t t = 0; t < M; ++t)
    for (std::size_t i = 0; i < D; ++i) x[t * D + i] = small[i] * mult[t];
  x[4 * D + 3] = FLT_MAX, x[4 * D + 7] = -FLT_MAX;  // the largest floats themselves
  static double ref[M * D];
  microattn::RmsNorm<D> rms;
  ASSERT_EQ(rms.set_weight(g), Status::kOk);
  ASSERT_EQ(rms.set_eps(1e-5f), Status::kOk);
  ref_rms_norm(x, M, D, g, ref);
  ASSERT_EQ(rms.forward(x, M, y), Status::kOk);
  // NormsMatchDoubleReference's chain, plus the exact scaling by a power of two.
  const double tol_r = microattn_test::tolerance(D + 6, microattn_test::max_abs(ref, M * D));
  EXPECT_LE(microattn_test::max_diff(y, ref, M * D), tol_r);
  EXPECT_GT(microattn_test::max_abs(y, M * D), 0.5);  // not the zeros of an overflowed sum
  microattn::LayerNorm<D> ln;
  ASSERT_EQ(ln.set_weights(g, b), Status::kOk);
  ref_layer_norm(x, M, D, g, b, ref);
  ASSERT_EQ(ln.forward(x, M, y), Status::kOk);
  const double tol_l = microattn_test::tolerance(2 * D + 8, microattn_test::max_abs(ref, M * D));
  EXPECT_LE(microattn_test::max_diff(y, ref, M * D), tol_l);
}

// ---- MLP

inline double ref_act(Activation a, double z) {
  switch (a) {
    case Activation::kSwiGlu:
      return z / (1.0 + std::exp(-z));
    case Activation::kGeGlu:
    case Activation::kGelu:  // z / 2 (1 + erf(z / sqrt 2)), without its cancellation for z < 0
      return 0.5 * z * std::erfc(-z / std::sqrt(2.0));
    case Activation::kGeluTanh:  // z / 2 (1 + tanh(u)) = z / (1 + exp(-2u))
      return z / (1.0 + std::exp(-2.0 * 0.7978845608028654 * (z + 0.044715 * z * z * z)));
    default:
      return z > 0 ? z : 0.0;
  }
}

// The activations alone, every 1/64 over [-12, 12], against double precision: relative 1e-6
// (16 ulp) where |value| >= 1e-3, absolute 1e-9 below (there the float rounding of the
// exponential's argument, -z^2 / 2 or -2u, up to ~1e-5 relative, is all that is left, at values
// that add nothing to a projection). Own erfc and exponential (not libm's): the same bits in
// every build (f32_act.hpp says why).
TEST(Blocks, ActivationsMatchDoublePrecision) {
  double worst_rel[3] = {0, 0, 0}, worst_abs[3] = {0, 0, 0};
  for (int i = -768; i <= 768; ++i) {
    const float z = float(i) / 64.0f;
    const float got[3] = {microattn::kernels::f32_silu(z), microattn::kernels::f32_gelu(z),
                          microattn::kernels::f32_gelu_tanh(z)};
    const Activation act[3] = {Activation::kSwiGlu, Activation::kGelu, Activation::kGeluTanh};
    for (int a = 0; a < 3; ++a) {
      const double ref = ref_act(act[a], double(z)), err = std::fabs(double(got[a]) - ref);
      if (std::fabs(ref) >= 1e-3)
        worst_rel[a] = err / std::fabs(ref) > worst_rel[a] ? err / std::fabs(ref) : worst_rel[a];
      else
        worst_abs[a] = err > worst_abs[a] ? err : worst_abs[a];
    }
  }
  for (int a = 0; a < 3; ++a) {
    EXPECT_LE(worst_rel[a], 1e-6) << a;
    EXPECT_LE(worst_abs[a], 1e-9) << a;
  }
}

#if !(defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)  // -ffast-math: NaN undefined
// NaN in, NaN out through every activation (ReLU's max(z, 0) used to give 0), gated ones from
// either input.
TEST(Blocks, ActivationsPropagateNaN) {
  namespace k = microattn::kernels;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto all = [&](auto act) {
    float h[3] = {nan, 1.0f, -2.0f}, u[3] = {1.0f, nan, 1.0f};
    act(h, u);
    return std::isnan(h[0]) && std::isnan(h[1]) && std::isfinite(h[2]);
  };
  EXPECT_TRUE(all([](float* h, float* u) { k::f32_activate<Activation::kSwiGlu>(h, u, 3); }));
  EXPECT_TRUE(all([](float* h, float* u) { k::f32_activate<Activation::kGeGlu>(h, u, 3); }));
  float h[4] = {nan, -nan, 1.0f, -1.0f};
  k::f32_activate<Activation::kRelu>(h, nullptr, 4);
  EXPECT_TRUE(std::isnan(h[0]) && std::isnan(h[1]) && h[2] == 1.0f && h[3] == 0.0f);
  for (auto f : {&k::f32_activate<Activation::kGelu>, &k::f32_activate<Activation::kGeluTanh>}) {
    float z[2] = {nan, 0.5f};
    f(z, nullptr, 2);
    EXPECT_TRUE(std::isnan(z[0]) && std::isfinite(z[1]));
  }
}
#endif

template <class MCfg>
struct MlpCase {
  static constexpr std::size_t kM = 21, DM = MCfg::kDModel, DH = MCfg::kDHidden;
  using E = typename MCfg::WeightElem;
  TestMatrix<E, DM, DH> gate, up;
  TestMatrix<E, DH, DM> down;
  microattn::Mlp<MCfg, microattn::DefaultArch, 8> layer, split;
  float x[kM * DM], y[kM * DM], y2[kM * DM];
  double xd[kM * DM], g[kM * DH], u[kM * DH], ref[kM * DM];
  double tol = 0, flip[kM * DM] = {};  // flip: integer compute's allowance per output

  microattn::MlpWeights<MCfg> weights(WeightLayout l) {
    microattn::MlpWeights<MCfg> w;
    w.layout = l;
    w.w_gate = gate.in_layout(l), w.w_up = up.in_layout(l), w.w_down = down.in_layout(l);
    w.s_gate = gate.s, w.s_up = up.s, w.s_down = down.s;
    w.b_gate = gate.b, w.b_up = up.b, w.b_down = down.b;
    return w;
  }
  void reference() {
    const bool b = MCfg::kBias;
    ref_matmul(xd, kM, DM, DH, gate.w, b ? gate.b : nullptr, g);
    ref_matmul(xd, kM, DM, DH, up.w, b ? up.b : nullptr, u);
    static double dh[kM * DH];
    for (std::size_t i = 0; i < kM * DH; ++i) {
      const std::size_t k = i % DH;
      dh[i] = hidden_error(g[i], b ? gate.b[k] : 0.0, u[i], b ? up.b[k] : 0.0);
      g[i] = MCfg::kGated ? ref_act(MCfg::kAct, g[i]) * u[i] : ref_act(MCfg::kAct, u[i]);
    }
    if constexpr (MCfg::kInt8Compute) quantise_hidden(dh);
    ref_matmul(g, kM, DH, DM, down.w, b ? down.b : nullptr, ref);
  }
  /// Integer compute quantises the block's fp32 hidden rows, not g: g's rows are quantised
  /// here, and a value so close to a rounding boundary that the block's may round the other way
  /// (one step of its row) adds step * |w_down| to its row's outputs' tolerance (flip). dh: the
  /// bound on each block hidden value's error (hidden_error).
  void quantise_hidden(const double* dh) {
    for (std::size_t r = 0; r < kM; ++r) {
      double* gr = g + r * DH;
      double exact[DH];
      float hf[DH];
      for (std::size_t k = 0; k < DH; ++k) exact[k] = gr[k], hf[k] = float(gr[k]);
      const double step = quantised_row(hf, DH, gr);
      for (std::size_t o = 0; o < DM; ++o) {
        double extra = 0;
        for (std::size_t k = 0; k < DH; ++k) {
          const double t = exact[k] / step;  // 3e-5: x * (127 / max)'s two roundings, in steps
          if (std::fabs(t - std::floor(t) - 0.5) < 2.0 * dh[r * DH + k] / step + 3e-5)
            extra += step * std::fabs(down.w[k * DM + o]);
        }
        flip[r * DM + o] = extra;
      }
    }
  }
  /// The error of a hidden value of the block with integer compute: the sums are exact, so only
  /// the epilogue's two roundings of each pre-activation a (relative to |a| + |bias|), carried
  /// by act' (|act'| <= 1.13 for the GELUs and SiLU), the activation's own 1e-6 (the bound
  /// ActivationsMatchDoublePrecision checks) and the gate product's rounding.
  static double hidden_error(double ag, double bg, double au, double bu) {
    constexpr double u = 1.0 / 16777216.0;
    const double dg = 2 * u * (std::fabs(ag) + std::fabs(bg)),
                 du = 2 * u * (std::fabs(au) + std::fabs(bu));
    if (!MCfg::kGated) return 1.13 * du + 1e-6 * std::fabs(ref_act(MCfg::kAct, au)) + 1e-9;
    const double act = std::fabs(ref_act(MCfg::kAct, ag));
    return 1.13 * dg * std::fabs(au) + act * du + (1e-6 + u) * act * std::fabs(au) + 1e-9;
  }
  /// max |y - ref| over M rows, less each output's allowance flip.
  double worst(const float* out, std::size_t M) const {
    double w = 0;
    for (std::size_t i = 0; i < M * DM; ++i) {
      const double e = std::fabs(double(out[i]) - ref[i]) - flip[i];
      w = e > w ? e : w;
    }
    return w;
  }
  /// Outputs with an allowance, and the largest.
  std::size_t flipped(double* most) const {
    std::size_t n = 0;
    *most = 0;
    for (double f : flip) n += f > 0, *most = f > *most ? f : *most;
    return n;
  }
  void run(std::uint64_t seed) {
    microattn_test::Rng rng(seed);
    gate.init(rng), up.init(rng), down.init(rng);
    rng.fill(x, kM * DM, -2.0f, 2.0f);
    for (std::size_t i = 0; i < kM * DM; ++i) xd[i] = x[i];
    if constexpr (MCfg::kInt8Compute)
      for (std::size_t r = 0; r < kM; ++r) quantised_row(x + r * DM, DM, xd + r * DM);
    reference();
    // Chains: the two hidden products (DM), the activation (exp or erf, a division: 8), the
    // down product (DH); relative to the larger of the outputs and the hidden values (their
    // rounding carries into the down product).
    const double mag = microattn_test::max_abs(ref, kM * DM),
                 hid = microattn_test::max_abs(g, kM * DH);
    tol = microattn_test::tolerance(double(DM + DH + 8), mag > hid ? mag : hid);
    for (WeightLayout l : kLayouts) {
      ASSERT_EQ(layer.set_weights(weights(l)), Status::kOk);
      ASSERT_EQ(split.set_weights(weights(l)), Status::kOk);
      ASSERT_EQ(split.set_executor(microattn_test::serial_executor(MCfg::kMaxWorkers)),
                Status::kOk);
      for (std::size_t M : {std::size_t{1}, std::size_t{5}, kM}) {  // 21: chunks of 8, 8, 5
        ASSERT_EQ(layer.forward(x, M, y), Status::kOk);
        EXPECT_LE(worst(y, M), tol) << int(l) << " M " << M;
        ASSERT_EQ(split.forward(x, M, y2), Status::kOk);
        EXPECT_TRUE(microattn_test::same_bits(y, y2, M * DM))
            << "layout " << int(l) << " M " << M << " activation " << int(MCfg::kAct);
      }
    }
  }
};

template <Activation kA, auto... kOpts>
using MlpCfg = microattn::MlpConfig<24, 40, kA, kOpts...>;

TEST(Blocks, MlpEveryActivationMatchesDoubleReference) {
  static MlpCase<MlpCfg<Activation::kSwiGlu, microattn::MaxWorkers{3}>> swiglu;
  swiglu.run(6);
  static MlpCase<MlpCfg<Activation::kGeGlu, Bias::kYes>> geglu;
  geglu.run(7);
  static MlpCase<MlpCfg<Activation::kGelu, Bias::kYes, microattn::MaxWorkers{2}>> gelu;
  gelu.run(8);
  static MlpCase<MlpCfg<Activation::kGeluTanh>> gelu_tanh;
  gelu_tanh.run(9);
  static MlpCase<MlpCfg<Activation::kRelu, Bias::kYes>> relu;
  relu.run(10);
}

TEST(Blocks, MlpInt8WeightsMatchDequantisedReference) {
  static MlpCase<MlpCfg<Activation::kSwiGlu, WeightType::kInt8, microattn::MaxWorkers{3}>> q;
  q.run(11);
  static MlpCase<MlpCfg<Activation::kGelu, WeightType::kInt8, Bias::kYes>> qb;
  qb.run(12);
}

TEST(Blocks, MlpHalfWeightsMatchRoundedReference) {
  static MlpCase<MlpCfg<Activation::kSwiGlu, WeightType::kF16, microattn::MaxWorkers{3}>> h;
  h.run(15);
  static MlpCase<MlpCfg<Activation::kGelu, WeightType::kBF16, Bias::kYes>> b;
  b.run(16);
}

// Compute::kInt8: x's rows and the hidden rows quantised (the reference on those), integer sums.
TEST(Blocks, MlpInt8ComputeMatchesQuantisedReference) {
  using microattn::Compute;
  static MlpCase<
      MlpCfg<Activation::kSwiGlu, WeightType::kInt8, Compute::kInt8, microattn::MaxWorkers{3}>>
      q;
  q.run(14);
  static MlpCase<MlpCfg<Activation::kGelu, WeightType::kInt8, Compute::kInt8, Bias::kYes>> qb;
  qb.run(15);
  double most = 0;
  const std::size_t n = q.flipped(&most);
  microattn_test::report(
      "[ blocks ] int8 compute MLP: %zu of %zu outputs allow a hidden value's "
      "rounding either way (up to %.2e; fp32 tolerance %.2e)\n",
      n, sizeof(q.flip) / sizeof(q.flip[0]), most, q.tol);
}

#if !(defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
// A NaN in one input row makes that row's every output NaN, with every activation (ReLU's gave
// finite outputs); the other rows keep their values bit for bit.
template <class MCfg>
void check_mlp_nan_row(std::uint64_t seed) {
  static MlpCase<MCfg> c;
  c.run(seed);
  constexpr std::size_t DM = MCfg::kDModel, M = 3;
  ASSERT_EQ(c.layer.set_weights(c.weights(WeightLayout::kInOut)), Status::kOk);
  ASSERT_EQ(c.layer.forward(c.x, M, c.y2), Status::kOk);
  c.x[DM + 5] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_EQ(c.layer.forward(c.x, M, c.y), Status::kOk);
  for (std::size_t j = 0; j < DM; ++j) EXPECT_TRUE(std::isnan(c.y[DM + j])) << j;
  EXPECT_TRUE(microattn_test::same_bits(c.y, c.y2, DM));
  EXPECT_TRUE(microattn_test::same_bits(c.y + 2 * DM, c.y2 + 2 * DM, DM));
}
TEST(Blocks, MlpNaNRowStaysNaN) {
  check_mlp_nan_row<MlpCfg<Activation::kRelu, Bias::kYes>>(31);
  check_mlp_nan_row<MlpCfg<Activation::kSwiGlu>>(32);
  check_mlp_nan_row<MlpCfg<Activation::kGelu>>(33);
  check_mlp_nan_row<MlpCfg<Activation::kGeluTanh, WeightType::kInt8>>(34);
  check_mlp_nan_row<MlpCfg<Activation::kGeGlu, WeightType::kInt8, microattn::Compute::kInt8>>(35);
}
#endif

TEST(Blocks, MlpStatusRulesAndZeroObject) {
  using Cfg = MlpCfg<Activation::kSwiGlu, WeightType::kInt8>;
  static MlpCase<Cfg> c;
  c.run(13);
  using Layer = microattn::Mlp<Cfg, microattn::DefaultArch, 8>;
  alignas(Layer) static unsigned char storage[sizeof(Layer)];
  std::memset(storage, 0, sizeof(storage));
  Layer& z = *reinterpret_cast<Layer*>(storage);
  constexpr std::size_t n = MlpCase<Cfg>::kM * 24;
  microattn_test::fill_sentinel(c.y, n);
  EXPECT_EQ(z.forward(c.x, 1, c.y), Status::kNullPointer);
  microattn::MlpWeights<Cfg> w = c.weights(WeightLayout::kInOut);
  w.w_gate = nullptr;  // gated: the gate is needed
  EXPECT_EQ(z.set_weights(w), Status::kNullPointer);
  w = c.weights(WeightLayout::kInOut);
  w.s_down = nullptr;
  EXPECT_EQ(z.set_weights(w), Status::kNullPointer);
  ASSERT_EQ(z.set_weights(c.weights(WeightLayout::kInOut)), Status::kOk);
  EXPECT_EQ(z.forward(c.x, 0, c.y), Status::kBadTokenCount);
  EXPECT_EQ(z.forward(c.x, 3, c.x + 24), Status::kOverlap);
  EXPECT_EQ(z.forward(c.x, 1, c.up.s), Status::kOverlap);
  EXPECT_TRUE(microattn_test::all_sentinel(c.y, n));
  ASSERT_EQ(z.forward(c.x, MlpCase<Cfg>::kM, c.y), Status::kOk);
  EXPECT_LE(c.worst(c.y, MlpCase<Cfg>::kM), c.tol);
}

}  // namespace
