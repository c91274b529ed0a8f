// SPDX-License-Identifier: Apache-2.0
// 16-bit float storage (half.hpp): every one of the 65,536 binary16 and bfloat16 patterns
// decoded against a double-precision reading of its fields and encoded back to itself; every
// midpoint between two neighbouring finite values rounded to the even one, a float either side
// of it to that side; overflow, underflow and NaN; the format entries (format::F16, BF16) and
// Elem's encode and decode. Bits are compared as integers: the same test under -ffast-math.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "microattn/attention.hpp"
#include "microattn/format.hpp"
#include "microattn/half.hpp"
#include "microattn/internal/elem.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/f32_gemv.hpp"
#include "microattn/kv_cache.hpp"
#include "support/check.hpp"
#include "support/rng.hpp"
#include "support/twins.hpp"
#include "support/unit.hpp"

namespace {

using microattn::bf16;
using microattn::f16;
using microattn::internal::f32_bits;
using microattn::internal::f32_from_bits;

// The float binary16 pattern h means, from its fields in double precision (not NaN or inf).
float f16_reference(std::uint32_t h) {
  const std::uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double mag =
      e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + double(m) / 1024.0, int(e) - 15);
  return static_cast<float>((h & 0x8000) ? -mag : mag);
}

bool is_nan_bits(std::uint32_t u) { return (u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu); }

TEST(Half, F16DecodesEveryPatternExactly) {
  std::size_t wrong = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const std::uint32_t got = f32_bits(microattn::to_float(f16{std::uint16_t(h)}));
    const std::uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
    if (e == 0x1F) {
      const bool ok = m ? is_nan_bits(got) && ((got >> 13) & 0x3FF) == m
                        : got == (((h & 0x8000u) << 16) | 0x7F800000u);
      wrong += ok ? 0 : 1;
    } else {
      wrong += got == f32_bits(f16_reference(h)) ? 0 : 1;
    }
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(Half, F16EncodesEveryValueBackToItself) {
  std::size_t wrong = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF)) continue;  // NaN: below
    wrong += microattn::to_f16(microattn::to_float(f16{std::uint16_t(h)})).bits == h ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0u);
}

// Between neighbours lo and lo + 1 (both finite, either sign): the midpoint goes to the even
// pattern, the floats just above and below it to their side.
TEST(Half, F16RoundsToNearestEven) {
  std::size_t wrong = 0;
  for (std::uint32_t lo = 0; lo < 0x7BFF; ++lo) {
    const double a = microattn::to_float(f16{std::uint16_t(lo)});
    const double b = microattn::to_float(f16{std::uint16_t(lo + 1)});
    const float mid = static_cast<float>((a + b) / 2);  // exact: 12 significant bits
    const std::uint32_t even = (lo & 1) ? lo + 1 : lo;
    for (const std::uint32_t sign : {0u, 0x8000u}) {
      const float s = sign ? -1.0f : 1.0f;
      wrong += microattn::to_f16(s * mid).bits == (sign | even) ? 0 : 1;
      wrong += microattn::to_f16(s * std::nextafter(mid, 1e9f)).bits == (sign | (lo + 1)) ? 0 : 1;
      wrong += microattn::to_f16(s * std::nextafter(mid, 0.0f)).bits == (sign | lo) ? 0 : 1;
    }
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(Half, F16OverflowUnderflowNan) {
  EXPECT_EQ(microattn::to_f16(65504.0f).bits, 0x7BFFu);
  EXPECT_EQ(microattn::to_f16(65520.0f).bits, 0x7C00u);  // the midpoint: to even, infinity
  EXPECT_EQ(microattn::to_f16(std::nextafter(65520.0f, 0.0f)).bits, 0x7BFFu);
  EXPECT_EQ(microattn::to_f16(-1e30f).bits, 0xFC00u);
  EXPECT_EQ(microattn::to_f16(f32_from_bits(0x7F800000u)).bits, 0x7C00u);
  EXPECT_EQ(microattn::to_f16(std::ldexp(1.0f, -25)).bits, 0u);  // half the smallest: to even
  EXPECT_EQ(microattn::to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)).bits, 1u);
  EXPECT_EQ(microattn::to_f16(-1e-30f).bits, 0x8000u);
  const std::uint16_t nan = microattn::to_f16(f32_from_bits(0x7F800001u)).bits;
  EXPECT_EQ(nan & 0x7E00u, 0x7E00u);  // a quiet NaN
  EXPECT_TRUE(is_nan_bits(f32_bits(microattn::to_float(f16{nan}))));
}

TEST(Half, Bf16EveryPatternAndRounding) {
  std::size_t wrong = 0;
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = microattn::to_float(bf16{std::uint16_t(b)});
    wrong += f32_bits(f) == b << 16 ? 0 : 1;
    if ((b & 0x7F80) == 0x7F80 && (b & 0x7F)) continue;  // NaN
    wrong += microattn::to_bf16(f).bits == b ? 0 : 1;
  }
  for (std::uint32_t lo = 0; lo < 0x7F7F; ++lo) {
    const float mid = f32_from_bits((lo << 16) | 0x8000u);  // halfway to lo + 1
    const std::uint32_t even = (lo & 1) ? lo + 1 : lo;
    wrong += microattn::to_bf16(mid).bits == even ? 0 : 1;
    wrong += microattn::to_bf16(f32_from_bits((lo << 16) | 0x8001u)).bits == lo + 1 ? 0 : 1;
    wrong += microattn::to_bf16(f32_from_bits((lo << 16) | 0x7FFFu)).bits == lo ? 0 : 1;
    wrong += microattn::to_bf16(-mid).bits == (0x8000u | even) ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(microattn::to_bf16(f32_from_bits(0x7F7F8000u)).bits, 0x7F80u);  // to even: inf
  EXPECT_EQ(microattn::to_bf16(f32_from_bits(0x7F7F7FFFu)).bits, 0x7F7Fu);
  EXPECT_EQ(microattn::to_bf16(f32_from_bits(0xFF800001u)).bits & 0xFFC0u, 0xFFC0u);  // quiet
}

TEST(Half, FormatEntriesAndElem) {
  using F16 = microattn::FormatTraits<microattn::format::F16>;
  using BF16 = microattn::FormatTraits<microattn::format::BF16>;
  EXPECT_EQ(F16::kDesc.code(), 0x1002u);
  EXPECT_EQ(BF16::kDesc.code(), 0x1003u);
  EXPECT_FALSE(F16::kScaled);
  EXPECT_EQ(F16::bytes(7), 14u);
  EXPECT_EQ(F16::scale_count(64, 8), 0u);
  EXPECT_EQ(f32_bits(F16::widen(f16{0x3C00}, 5.0f)), f32_bits(1.0f));
  EXPECT_EQ(f32_bits(BF16::widen(bf16{0xC040}, 5.0f)), f32_bits(-3.0f));
  const float x[3] = {1.0f / 3.0f, -2.5f, 70000.0f};
  f16 h[6] = {};
  EXPECT_EQ(microattn::internal::Elem<f16>::encode(x, 3, h, 2), 1.0f);
  EXPECT_EQ(h[0].bits, 0x3555u);  // 1/3 rounded to nearest
  EXPECT_EQ(h[2].bits, 0xC100u);
  EXPECT_EQ(h[4].bits, 0x7C00u);
  EXPECT_EQ(h[1].bits, 0u);  // the stride's gaps untouched
  EXPECT_EQ(f32_bits(microattn::internal::Elem<f16>::decode(h[2], 9.0f)), f32_bits(-2.5f));
  bf16 b[3] = {};
  (void)microattn::internal::Elem<bf16>::encode(x, 3, b, 1);
  EXPECT_EQ(b[0].bits, 0x3EABu);  // 0x3EAAAAAB rounded
  EXPECT_EQ(f32_bits(microattn::internal::Elem<bf16>::decode(b[1], 0.0f)), f32_bits(-2.5f));
}

// ---- fp16 / bf16 weights: the fp32 kernels on widened values

/// Every 16-bit pattern through Vec<A>::load_elem (the kernels' widening loads: F16C, NEON,
/// Helium's integer rebias, or half.hpp's bits) equals to_float's bits (a NaN: a NaN of the same
/// sign), in every lane position.
template <class H, class A>
std::size_t widening_mismatches() {
  using V = microattn::internal::Vec<A>;
  constexpr std::size_t W = V::kWidth;
  static H in[65536 + W];
  alignas(64) static float out[W];
  for (std::uint32_t i = 0; i < 65536 + W; ++i) in[i].bits = static_cast<std::uint16_t>(i);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < 65536; i += W) {
    V::storeu(out, V::load_elem(in + i));
    for (std::size_t j = 0; j < W; ++j) {
      const std::uint32_t got = f32_bits(out[j]), want = f32_bits(microattn::to_float(in[i + j]));
      const bool same =
          is_nan_bits(want) ? is_nan_bits(got) && (got >> 31) == (want >> 31) : got == want;
      wrong += same ? 0 : 1;
    }
  }
  return wrong;
}

TEST(HalfWeights, WideningLoadsEveryPattern) {
  microattn_test::for_each_arch([&](auto arch) {
    using A = decltype(arch);
    EXPECT_EQ((widening_mismatches<f16, A>()), 0u) << A::name();
    EXPECT_EQ((widening_mismatches<bf16, A>()), 0u) << A::name();
  });
}

using microattn::Status;
using microattn::WeightLayout;
using microattn::WeightType;

constexpr WeightLayout kLayouts[] = {WeightLayout::kInOut, WeightLayout::kOutIn,
                                     WeightLayout::kPanel16};

/// Half weights give what fp32 weights holding their widened values give: the same products in
/// the same order, so the same bits; under -ffast-math the compiler may reassociate the two
/// instantiations differently, so there a float rounding per dot-product term (chain) is allowed.
template <class Out>
void expect_as_fp32(const Out* y, const Out* y32, std::size_t n, double chain, const char* what) {
#if defined(__FAST_MATH__)
  const double tol = microattn_test::tolerance(chain, microattn_test::max_abs(y32, n));
  EXPECT_LE(microattn_test::max_diff(y, y32, n), tol) << what;
#else
  (void)chain;
  EXPECT_TRUE(microattn_test::same_bits(y, y32, n)) << what;
#endif
}

constexpr std::size_t kMaxK = 70, kMaxN = 53, kMaxM = 15, kPadN = (kMaxN + 15) / 16 * 16;
float g_a[kMaxM * kMaxK], g_w[kMaxK * kMaxN], g_lay32[kMaxK * kPadN], g_bias[kMaxN];
float g_c[kMaxM * kMaxN], g_c32[kMaxM * kMaxN], g_pack[16384];
double g_ref[kMaxM * kMaxN];

/// The widened weights w (rounded to H), and the copy in layout l as H and as fp32.
template <class H>
void half_in_layout(WeightLayout l, std::size_t K, std::size_t N, H* lay) {
  for (std::size_t i = 0; i < K * kPadN; ++i) lay[i] = H{}, g_lay32[i] = 0.0f;
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t n = 0; n < N; ++n) {
      const std::size_t at = microattn_test::weight_index(l, K, N, k, n);
      microattn::internal::Elem<H>::encode(g_w + k * N + n, 1, lay + at, 1);
      g_lay32[at] = microattn::internal::elem_value(lay[at]);
    }
}

template <class H, class A>
void half_kernels_case(std::size_t M, std::size_t N, std::size_t K, std::uint64_t seed) {
  static H lay[kMaxK * kPadN];
  microattn_test::Rng rng(seed);
  rng.fill(g_a, M * K, -1.0f, 1.0f);
  rng.fill(g_w, K * N, -0.5f, 0.5f);
  rng.fill(g_bias, N, -1.0f, 1.0f);
  for (WeightLayout l : kLayouts) {
    half_in_layout(l, K, N, lay);
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t n = 0; n < N; ++n) {
        double acc = g_bias[n];
        for (std::size_t k = 0; k < K; ++k)
          acc +=
              double(g_a[m * K + k]) * double(g_lay32[microattn_test::weight_index(l, K, N, k, n)]);
        g_ref[m * N + n] = acc;
      }
    const std::size_t ld = l == WeightLayout::kInOut ? N : l == WeightLayout::kOutIn ? K : K * 16;
    const double tol =
        microattn_test::tolerance(double(K) + 2, microattn_test::max_abs(g_ref, M * N));
    const microattn::kernels::StoreRowMajor out{g_c, N}, out32{g_c32, N};
    if constexpr (std::is_same<H, f16>::value)
      microattn::kernels::f16w_f32_gemm<A>(M, N, K, g_a, K, lay, ld, l, g_bias, out, g_pack);
    else
      microattn::kernels::bf16w_f32_gemm<A>(M, N, K, g_a, K, lay, ld, l, g_bias, out, g_pack);
    microattn::kernels::f32_gemm<A>(M, N, K, g_a, K, g_lay32, ld, l, g_bias, out32, g_pack);
    EXPECT_LE(microattn_test::max_diff(g_c, g_ref, M * N), tol)
        << "gemm " << A::name() << " " << M << "x" << N << "x" << K << " layout " << int(l);
    expect_as_fp32(g_c, g_c32, M * N, double(K) + 2, "gemm vs fp32");
    microattn::kernels::gemv_part<A>(N, K, g_a, lay, ld, l, nullptr, g_bias, g_c, 0, 1);
    microattn::kernels::gemv_part<A>(N, K, g_a, g_lay32, ld, l, nullptr, g_bias, g_c32, 0, 1);
    EXPECT_LE(microattn_test::max_diff(g_c, g_ref, N), tol)
        << "gemv " << A::name() << " " << N << "x" << K << " layout " << int(l);
    expect_as_fp32(g_c, g_c32, N, double(K) + 2, "gemv vs fp32");
  }
}

// Every layout, odd sizes (every tail), both arches: against double on the rounded weights,
// and equal to the fp32 kernels on the widened ones.
TEST(HalfWeights, GemmAndGemvEveryLayoutOddSizes) {
  const std::size_t shapes[][3] = {{1, 1, 1}, {3, 17, 5}, {7, 53, 70}, {15, 32, 64}, {2, 48, 33}};
  microattn_test::for_each_arch([&](auto arch) {
    using A = decltype(arch);
    std::uint64_t seed = 40;
    for (const auto& sh : shapes) {
      half_kernels_case<f16, A>(sh[0], sh[1], sh[2], seed++);
      half_kernels_case<bf16, A>(sh[0], sh[1], sh[2], seed++);
    }
  });
}

/// An attention layer with H weights against the same layer with fp32 weights holding the
/// widened values: MultiHeadAttention over T tokens, KvAttention's prefill then decode steps.
template <WeightType kW, class A>
void half_layer_case(WeightLayout l, std::uint64_t seed) {
  constexpr std::size_t T = 19, DM = 24, H = 4, HKV = 2, DH = 8, QD = H * DH, KD = HKV * DH;
  using Cfg = microattn::Config<T, DM, H, HKV, DH, microattn::Bias::kYes, kW>;
  using Cfg32 = microattn::Config<T, DM, H, HKV, DH, microattn::Bias::kYes>;
  using E = typename Cfg::WeightElem;
  static float w32[4][DM * QD], b[4][QD], x[T * DM], y[T * DM], y32[T * DM];
  static E w[4][DM * QD];
  const std::size_t outs[4] = {QD, KD, KD, DM}, ins[4] = {DM, DM, DM, QD};
  microattn_test::Rng rng(seed);
  for (int m = 0; m < 4; ++m) {
    rng.fill(w32[m], ins[m] * outs[m], -0.4f, 0.4f);
    rng.fill(b[m], outs[m], -0.2f, 0.2f);
    microattn::internal::Elem<E>::encode(w32[m], ins[m] * outs[m], w[m], 1);
    for (std::size_t i = 0; i < ins[m] * outs[m]; ++i)
      w32[m][i] = microattn::internal::elem_value(w[m][i]);
  }
  rng.fill(x, T * DM, -1.0f, 1.0f);
  const microattn::Weights<Cfg> wv(l, w[0], w[1], w[2], w[3], b[0], b[1], b[2], b[3]);
  const microattn::Weights<Cfg32> wv32(l, w32[0], w32[1], w32[2], w32[3], b[0], b[1], b[2], b[3]);
  const double chain = DM + 2.0 * DH + double(T) + QD + 8;
  static microattn::MultiHeadAttention<Cfg, A> mha;
  static microattn::MultiHeadAttention<Cfg32, A> mha32;
  ASSERT_TRUE(microattn_test::forward_twins(mha, mha32, wv, wv32, x, T, y, y32));
  expect_as_fp32(y, y32, T * DM, chain, "MultiHeadAttention");
  static microattn::KvAttention<Cfg, A> kv;
  static microattn::KvAttention<Cfg32, A> kv32;
  ASSERT_TRUE(microattn_test::kv_twins(kv, kv32, wv, wv32, x, T, 11, DM, DM, y, y32));
  expect_as_fp32(y, y32, T * DM, chain, "KvAttention prefill + decode");
}

TEST(HalfWeights, AttentionLayersEqualFp32OnWidenedWeights) {
  microattn_test::for_each_arch([&](auto arch) {
    using A = decltype(arch);
    for (WeightLayout l : {WeightLayout::kInOut, WeightLayout::kOutIn}) {
      half_layer_case<WeightType::kF16, A>(l, 60 + int(l));
      half_layer_case<WeightType::kBF16, A>(l, 70 + int(l));
    }
  });
}

/// KvAttention with an fp16 / bf16 cache (CacheType::kF16, kBF16) against the same layer with
/// the fp32 cache, on weights and inputs whose keys and values are exact in both formats
/// (multiples of 1/64 of at most 4 in magnitude: 8 significant bits, bf16's): the cache stores
/// them exactly and widens them exactly, so every output is the fp32 layer's, prefill and
/// decode, and the cache takes half the bytes.
template <microattn::CacheType kC, class A>
void half_cache_case(WeightLayout l, std::uint64_t seed) {
  constexpr std::size_t T = 21, DM = 16, H = 4, HKV = 2, DH = 16, QD = H * DH;
  using Cfg = microattn::Config<T, DM, H, HKV, DH, kC>;
  using Cfg32 = microattn::Config<T, DM, H, HKV, DH>;
  static float w[4][DM * QD], x[T * DM], y[T * DM], y32[T * DM];
  microattn_test::Rng rng(seed);
  const std::size_t outs[4] = {QD, HKV * DH, HKV * DH, DM}, ins[4] = {DM, DM, DM, QD};
  for (int m = 0; m < 4; ++m)
    for (std::size_t i = 0; i < ins[m] * outs[m]; ++i)  // multiples of 1/8 in [-1/4, 1/4]
      w[m][i] = float(int(rng.next_u32() % 5) - 2) / 8.0f;
  for (std::size_t i = 0; i < T * DM; ++i)  // multiples of 1/8 in [-1, 1]: |K|, |V| <= 4
    x[i] = float(int(rng.next_u32() % 17) - 8) / 8.0f;
  const microattn::Weights<Cfg> wv(l, w[0], w[1], w[2], w[3]);
  const microattn::Weights<Cfg32> wv32(l, w[0], w[1], w[2], w[3]);
  static microattn::KvAttention<Cfg, A> kv;
  static microattn::KvAttention<Cfg32, A> kv32;
  ASSERT_TRUE(microattn_test::kv_twins(kv, kv32, wv, wv32, x, T, 13, DM, DM, y, y32));
  expect_as_fp32(y, y32, T * DM, DM + 2.0 * DH + double(T) + QD + 8, "KvAttention 16-bit cache");
  static_assert(sizeof(kv) < sizeof(kv32), "the 16-bit cache is smaller");
  constexpr std::size_t kBytes = microattn::KvAttention<Cfg, A>::kCacheBytes;
  constexpr std::size_t kBytes32 = microattn::KvAttention<Cfg32, A>::kCacheBytes;
  EXPECT_EQ(2 * kBytes, kBytes32);
}

TEST(HalfCache, KvAttentionEqualsFp32CacheOnExactValues) {
  microattn_test::for_each_arch([&](auto arch) {
    using A = decltype(arch);
    for (WeightLayout l : kLayouts) {
      half_cache_case<microattn::CacheType::kF16, A>(l, 110 + int(l));
      half_cache_case<microattn::CacheType::kBF16, A>(l, 120 + int(l));
    }
  });
}

}  // namespace
