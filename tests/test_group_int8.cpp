// SPDX-License-Identifier: Apache-2.0
// Group-wise int8 weights (WeightType::kInt8G32 / G64 / G128, format::Qg8<G>): the quantiser
// against its rules (a scale per column and group, stored like the rows, the error bound, per
// column when one group spans the column, refusals); the GEMM and GEMV in every layout at odd
// sizes (partial groups, panels and vectors) against double on the dequantised weights, the
// GEMV bit-identical for any split; the attention layers, Linear and Mlp against the same
// layers with fp32 weights holding the dequantised values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "microattn/attention.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/f32_gemv.hpp"
#include "microattn/kv_cache.hpp"
#include "microattn/linear.hpp"
#include "microattn/mlp.hpp"
#include "microattn/weights.hpp"
#include "support/check.hpp"
#include "support/rng.hpp"
#include "support/twins.hpp"
#include "support/unit.hpp"

namespace {

using microattn::GroupScales;
using microattn::Status;
using microattn::WeightLayout;
using microattn::WeightType;

constexpr WeightLayout kLayouts[] = {WeightLayout::kInOut, WeightLayout::kOutIn,
                                     WeightLayout::kPanel16};

/// Index of scale (group g, output o) of a matrix with `groups` groups per column in layout l,
/// written from format.hpp's contract ([out][groups] for kOutIn, [groups][out] otherwise).
std::size_t scale_at(WeightLayout l, std::size_t groups, std::size_t out, std::size_t g,
                     std::size_t o) {
  return l == WeightLayout::kOutIn ? o * groups + g : g * out + o;
}

constexpr std::size_t kMaxK = 150, kMaxN = 53, kMaxM = 15, kPadN = (kMaxN + 15) / 16 * 16;
constexpr std::size_t kMaxScales = kPadN * 5;  // groups of 32 in kMaxK
float g_w[kMaxK * kMaxN], g_s[kMaxScales], g_a[kMaxM * kMaxK];
float g_bias[kMaxN], g_c[kMaxM * kMaxN], g_c2[kMaxM * kMaxN], g_pack[16384];
std::int8_t g_q[kMaxK * kPadN];
double g_ref[kMaxM * kMaxN];

/// The value element (k, n) of the stored matrix stands for, from the test's own indices.
float dequant(WeightLayout l, std::size_t K, std::size_t N, std::size_t G, std::size_t k,
              std::size_t n) {
  const std::size_t groups = (K + G - 1) / G;
  return g_s[scale_at(l, groups, N, k / G, n)] *
         float(g_q[microattn_test::weight_index(l, K, N, k, n)]);
}

TEST(GroupInt8, QuantiserRulesAndRefusals) {
  microattn_test::Rng rng(5);
  const std::size_t K = 70, N = 9;  // 3 groups of 32 per column, the last of 6
  rng.fill(g_w, K * N, -1.0f, 1.0f);
  g_w[40 * N + 3] = 9.0f;  // one large weight: only its group's scale grows
  for (std::size_t i = 0; i < 32; ++i) g_w[(64 + i % 6) * N + 5] = 0.0f;  // an all-zero group
  for (WeightLayout to : kLayouts) {
    microattn::QuantError err;
    ASSERT_EQ(
        microattn::quantize_int8_groups(g_w, WeightLayout::kInOut, K, N, 32, to, g_q, g_s, &err),
        Status::kOk);
    double e2 = 0.0, w2 = 0.0, emax = 0.0;
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t g = 0; g < 3; ++g) {
        double amax = 0.0;
        for (std::size_t k = g * 32; k < std::min<std::size_t>(K, g * 32 + 32); ++k)
          amax = std::max(amax, std::fabs(double(g_w[k * N + n])));
        const float s = g_s[scale_at(to, 3, N, g, n)];
        // max / 127 rounded once (column_scale away from the float range's ends); an opaque
        // divisor, so that -ffast-math cannot make the division a multiplication here either.
        EXPECT_EQ(s, float(amax) / microattn::internal::opaque_divisor(127.0f))
            << "group " << g << " column " << n;
        for (std::size_t k = g * 32; k < std::min<std::size_t>(K, g * 32 + 32); ++k) {
          const double e = double(g_w[k * N + n]) - double(dequant(to, K, N, 32, k, n));
          EXPECT_LE(std::fabs(e), double(s) * (0.5 + 0x1p-17)) << k << "," << n;
          emax = std::max(emax, std::fabs(e)), e2 += e * e,
          w2 += double(g_w[k * N + n]) * g_w[k * N + n];
        }
      }
    EXPECT_EQ(g_s[scale_at(to, 3, N, 2, 5)], 0.0f);  // the all-zero group: scale 0, no NaN
    EXPECT_NEAR(err.max_abs, emax, 1e-6 * emax);     // float vs double differences
    EXPECT_NEAR(err.rel, std::sqrt(e2 / w2), 1e-6);
    // Only the group holding the large weight has its scale.
    EXPECT_EQ(g_s[scale_at(to, 3, N, 1, 3)], 9.0f / microattn::internal::opaque_divisor(127.0f));
    EXPECT_LT(g_s[scale_at(to, 3, N, 0, 3)], 1.0f / 127.0f + 1e-9f);
  }
  // One group per column: the per-column quantiser's values and scales, bit for bit.
  static std::int8_t q1[32 * 16];
  static float s1[16];
  ASSERT_EQ(
      microattn::quantize_int8(g_w, WeightLayout::kOutIn, 32, 16, WeightLayout::kOutIn, q1, s1),
      Status::kOk);
  ASSERT_EQ(microattn::quantize_int8_groups(g_w, WeightLayout::kOutIn, 32, 16, 32,
                                            WeightLayout::kOutIn, g_q, g_s),
            Status::kOk);
  EXPECT_EQ(std::memcmp(q1, g_q, sizeof q1), 0);
  EXPECT_EQ(std::memcmp(s1, g_s, sizeof s1), 0);
  // Refusals write nothing.
  std::memset(g_q, 0x5a, 64), std::memset(g_s, 0x5a, 64);
  const WeightLayout io = WeightLayout::kInOut;
  EXPECT_EQ(microattn::quantize_int8_groups(g_w, io, K, N, 16, io, g_q, g_s), Status::kBadArgument);
  EXPECT_EQ(microattn::quantize_int8_groups(g_w, io, K, N, 48, io, g_q, g_s), Status::kBadArgument);
  EXPECT_EQ(microattn::quantize_int8_groups(g_w, io, 0, N, 32, io, g_q, g_s), Status::kBadArgument);
  EXPECT_EQ(microattn::quantize_int8_groups(nullptr, io, K, N, 32, io, g_q, g_s),
            Status::kNullPointer);
  EXPECT_EQ(microattn::quantize_int8_groups(g_w, io, K, N, 32, io, g_q, nullptr),
            Status::kNullPointer);
  EXPECT_EQ(microattn::quantize_int8_groups(g_w, io, K, N, 32, io, g_q,
                                            reinterpret_cast<float*>(g_q) + 4),
            Status::kOverlap);
  g_w[7] = INFINITY;
  EXPECT_EQ(microattn::quantize_int8_groups(g_w, io, K, N, 32, io, g_q, g_s), Status::kBadArgument);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(static_cast<unsigned char>(g_q[i]), 0x5au);
    EXPECT_EQ(reinterpret_cast<unsigned char*>(g_s)[i], 0x5au);
  }
}

template <class A, std::size_t G>
void group_kernels_case(std::size_t M, std::size_t N, std::size_t K, std::uint64_t seed) {
  microattn_test::Rng rng(seed);
  rng.fill(g_a, M * K, -1.0f, 1.0f);
  rng.fill(g_w, K * N, -0.5f, 0.5f);
  for (std::size_t i = 0; i < K * N; i += 7) g_w[i] *= 8.0f;  // groups of unlike ranges
  rng.fill(g_bias, N, -1.0f, 1.0f);
  const std::size_t groups = (K + G - 1) / G;
  for (WeightLayout l : kLayouts) {
    ASSERT_EQ(microattn::quantize_int8_groups(g_w, WeightLayout::kInOut, K, N, G, l, g_q, g_s),
              Status::kOk);
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t n = 0; n < N; ++n) {
        double acc = g_bias[n];
        for (std::size_t k = 0; k < K; ++k)
          acc += double(g_a[m * K + k]) * double(dequant(l, K, N, G, k, n));
        g_ref[m * N + n] = acc;
      }
    const bool rows = l == WeightLayout::kOutIn;
    const GroupScales<G> s{g_s, rows ? groups : 1, rows ? 1 : N};
    const std::size_t ld = l == WeightLayout::kInOut ? N : rows ? K : K * 16;
    // K products and the groups' sums (at most K + groups + 2 roundings on a path).
    const double tol =
        microattn_test::tolerance(double(K + groups) + 2, microattn_test::max_abs(g_ref, M * N));
    microattn::kernels::qg8w_f32_gemm<A>(M, N, K, g_a, K, g_q, ld, l, s, g_bias,
                                         microattn::kernels::StoreRowMajor{g_c, N}, g_pack);
    EXPECT_LE(microattn_test::max_diff(g_c, g_ref, M * N), tol)
        << "gemm " << A::name() << " G " << G << " " << M << "x" << N << "x" << K << " layout "
        << int(l);
    microattn::kernels::qg8w_f32_gemv<A>(N, K, g_a, g_q, ld, l, s, g_bias, g_c);
    EXPECT_LE(microattn_test::max_diff(g_c, g_ref, N), tol)
        << "gemv " << A::name() << " G " << G << " " << N << "x" << K << " layout " << int(l);
    for (std::size_t parts = 2; parts <= 4; ++parts) {  // any split: the same bits
      for (std::size_t n = 0; n < N; ++n) g_c2[n] = NAN;
      for (std::size_t p = 0; p < parts; ++p)
        microattn::kernels::gemv_part<A>(N, K, g_a, g_q, ld, l, s, g_bias, g_c2, p, parts);
      EXPECT_TRUE(microattn_test::same_bits(g_c, g_c2, N)) << "gemv split in " << parts;
    }
  }
}

TEST(GroupInt8, GemmAndGemvEveryLayoutOddSizes) {
  const std::size_t shapes[][3] = {{1, 1, 1},    {3, 17, 5},   {7, 53, 70},
                                   {15, 32, 64}, {2, 48, 150}, {4, 16, 96}};
  microattn_test::for_each_arch([&](auto arch) {
    using A = decltype(arch);
    std::uint64_t seed = 80;
    for (const auto& sh : shapes) {
      group_kernels_case<A, 32>(sh[0], sh[1], sh[2], seed++);
      group_kernels_case<A, 64>(sh[0], sh[1], sh[2], seed++);
      group_kernels_case<A, 128>(sh[0], sh[1], sh[2], seed++);
    }
  });
}

/// Quantises n matrices group-wise in layout l and writes their dequantised values, in the
/// same layout, to deq (the fp32 twin layer's weights).
template <std::size_t G>
void quantize_twin(const float* w, std::size_t in, std::size_t out, WeightLayout l, std::int8_t* q,
                   float* s, float* deq) {
  ASSERT_EQ(microattn::quantize_int8_groups(w, WeightLayout::kInOut, in, out, G, l, q, s),
            Status::kOk);
  const std::size_t groups = (in + G - 1) / G;
  for (std::size_t i = 0; i < microattn::weight_floats(l, in, out); ++i) deq[i] = 0.0f;
  for (std::size_t i = 0; i < in; ++i)
    for (std::size_t o = 0; o < out; ++o) {
      const std::size_t at = microattn_test::weight_index(l, in, out, i, o);
      deq[at] = s[scale_at(l, groups, out, i / G, o)] * float(q[at]);
    }
}

/// An attention layer with kInt8G* weights against the same layer with fp32 weights holding the
/// dequantised values: MultiHeadAttention, KvAttention's prefill then decode steps. d_model 48:
/// a whole group of 32 and a partial one (W_O's 32 inputs: one group).
template <WeightType kW, std::size_t G, class A>
void group_layer_case(WeightLayout l, std::uint64_t seed) {
  constexpr std::size_t T = 19, DM = 48, H = 4, HKV = 2, DH = 16, QD = H * DH, KD = HKV * DH;
  using Cfg = microattn::Config<T, DM, H, HKV, DH, microattn::Bias::kYes, kW>;
  using Cfg32 = microattn::Config<T, DM, H, HKV, DH, microattn::Bias::kYes>;
  static float w32[4][DM * QD], deq[4][DM * QD], b[4][QD], s[4][QD * 4], x[T * DM], y[T * DM],
      y32[T * DM];
  static std::int8_t q[4][DM * QD];
  const std::size_t outs[4] = {QD, KD, KD, DM}, ins[4] = {DM, DM, DM, QD};
  microattn_test::Rng rng(seed);
  for (int m = 0; m < 4; ++m) {
    rng.fill(w32[m], ins[m] * outs[m], -0.4f, 0.4f);
    rng.fill(b[m], outs[m], -0.2f, 0.2f);
    quantize_twin<G>(w32[m], ins[m], outs[m], l, q[m], s[m], deq[m]);
  }
  rng.fill(x, T * DM, -1.0f, 1.0f);
  const microattn::Weights<Cfg> wv(l, q[0], s[0], q[1], s[1], q[2], s[2], q[3], s[3], b[0], b[1],
                                   b[2], b[3]);
  const microattn::Weights<Cfg32> wv32(l, deq[0], deq[1], deq[2], deq[3], b[0], b[1], b[2], b[3]);
  // The longest path: a projection (d_model products + groups), the scores and softmax over T,
  // P·V, W_O; each group's sum adds one rounding.
  const double chain = DM + 2.0 * DH + double(T) + QD + 16;
  static microattn::MultiHeadAttention<Cfg, A> mha;
  static microattn::MultiHeadAttention<Cfg32, A> mha32;
  ASSERT_TRUE(microattn_test::forward_twins(mha, mha32, wv, wv32, x, T, y, y32));
  const double tol = microattn_test::tolerance(chain, microattn_test::max_abs(y32, T * DM));
  EXPECT_LE(microattn_test::max_diff(y, y32, T * DM), tol) << "MultiHeadAttention " << int(l);
  static microattn::KvAttention<Cfg, A> kv;
  static microattn::KvAttention<Cfg32, A> kv32;
  ASSERT_TRUE(microattn_test::kv_twins(kv, kv32, wv, wv32, x, T, 11, DM, DM, y, y32));
  EXPECT_LE(microattn_test::max_diff(y, y32, T * DM), tol) << "KvAttention " << int(l);
}

TEST(GroupInt8, AttentionLayersEqualFp32OnDequantisedWeights) {
  microattn_test::for_each_arch([&](auto arch) {
    using A = decltype(arch);
    for (WeightLayout l : kLayouts) {
      group_layer_case<WeightType::kInt8G32, 32, A>(l, 90 + int(l));
      group_layer_case<WeightType::kInt8G64, 64, A>(l, 95 + int(l));
    }
  });
}

/// Linear (one row and several) and a SwiGLU Mlp (hidden 72: two groups of 32 and a partial
/// one into W_down) with kInt8G32 weights against fp32 twins.
template <class A>
void group_blocks_case(WeightLayout l) {
  constexpr std::size_t M = 5, DM = 40, DH = 72;
  using L8 = microattn::LinearConfig<DM, DH, WeightType::kInt8G32, microattn::Bias::kYes>;
  using L32 = microattn::LinearConfig<DM, DH, microattn::Bias::kYes>;
  using M8 = microattn::MlpConfig<DM, DH, microattn::Activation::kSwiGlu, WeightType::kInt8G32>;
  using M32 = microattn::MlpConfig<DM, DH, microattn::Activation::kSwiGlu>;
  static float w[3][4000], deq[3][4000], s[3][80 * 3], b[DH], x[M * DM], y[M * DH], y32[M * DH];
  static std::int8_t q[3][4000];
  microattn_test::Rng rng(100 + int(l));
  rng.fill(x, M * DM, -1.0f, 1.0f);
  rng.fill(b, DH, -0.3f, 0.3f);
  for (int m = 0; m < 3; ++m) {
    rng.fill(w[m], DM * DH, -0.3f, 0.3f);
    if (m < 2)
      quantize_twin<32>(w[m], DM, DH, l, q[m], s[m], deq[m]);
    else
      quantize_twin<32>(w[m], DH, DM, l, q[m], s[m], deq[m]);
  }
  static microattn::Linear<L8, A> lin;
  static microattn::Linear<L32, A> lin32;
  ASSERT_EQ(lin.set_weights({l, q[0], s[0], b}), Status::kOk);
  ASSERT_EQ(lin32.set_weights({l, deq[0], nullptr, b}), Status::kOk);
  for (std::size_t rows : {std::size_t{1}, M}) {
    ASSERT_EQ(lin.forward(x, rows, y), Status::kOk);
    ASSERT_EQ(lin32.forward(x, rows, y32), Status::kOk);
    const double tol = microattn_test::tolerance(DM + 4, microattn_test::max_abs(y32, rows * DH));
    EXPECT_LE(microattn_test::max_diff(y, y32, rows * DH), tol) << "Linear rows " << rows;
  }
  static microattn::Mlp<M8, A> mlp;
  static microattn::Mlp<M32, A> mlp32;
  microattn::MlpWeights<M8> mw;
  mw.layout = l, mw.w_gate = q[0], mw.s_gate = s[0], mw.w_up = q[1], mw.s_up = s[1];
  mw.w_down = q[2], mw.s_down = s[2];
  microattn::MlpWeights<M32> mw32;
  mw32.layout = l, mw32.w_gate = deq[0], mw32.w_up = deq[1], mw32.w_down = deq[2];
  ASSERT_EQ(mlp.set_weights(mw), Status::kOk);
  ASSERT_EQ(mlp32.set_weights(mw32), Status::kOk);
  for (std::size_t rows : {std::size_t{1}, M}) {
    ASSERT_EQ(mlp.forward(x, rows, y), Status::kOk);
    ASSERT_EQ(mlp32.forward(x, rows, y32), Status::kOk);
    const double tol =
        microattn_test::tolerance(DM + DH + 16, microattn_test::max_abs(y32, rows * DM));
    EXPECT_LE(microattn_test::max_diff(y, y32, rows * DM), tol) << "Mlp rows " << rows;
  }
}

TEST(GroupInt8, LinearAndMlpEqualFp32OnDequantisedWeights) {
  microattn_test::for_each_arch([&](auto arch) {
    for (WeightLayout l : kLayouts) group_blocks_case<decltype(arch)>(l);
  });
}

}  // namespace
