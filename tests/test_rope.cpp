// SPDX-License-Identifier: Apache-2.0
// Rotary positional embeddings: the table + kernel (kernels/f32_rope.hpp) against the plain
// double reference (reference/rope_ref.hpp) for both pairings, partial rotary widths and every
// position up to T_max; properties that pin the definition down; the table's own accuracy
// (ulps against a long double reference over 2^16 positions) and its bits (one hash for every
// target and build).
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "microattn/kernels/f32_rope.hpp"
#include "reference/rope_ref.hpp"
#include "support/check.hpp"
#include "support/rng.hpp"
#include "support/unit.hpp"

namespace {

using microattn::RopePairing;
using microattn::kernels::f32_rope_head;
using microattn::kernels::f32_rope_rows;
using microattn::kernels::rope_args_valid;
using microattn::kernels::rope_fill;
using microattn::kernels::RopeTable;

using microattn_test::kQuick;

constexpr std::size_t kPosStep = kQuick ? 7 : 1;  // every 7th position under emulation
// Table lengths, shorter under emulation: the tables are static (Cortex-M RAM).
constexpr std::size_t kMid = kQuick ? 128 : 512;
constexpr std::size_t kFar = kQuick ? 1024 : 4096;

/// Every position 0 .. kTMax-1 (or every kPosStep-th and the last): rotate random heads with
/// the float table and kernel, and with the double reference.
template <std::size_t kTMax, std::size_t kD>
void check_against_reference(std::size_t rot, float base, RopePairing pairing, std::uint64_t seed) {
  static RopeTable<kTMax, kD> tab;
  rope_fill(tab, base, rot / 2);
  constexpr std::size_t S = RopeTable<kTMax, kD>::kHalf;
  microattn_test::Rng rng(seed);
  double worst = 0;  // worst error in units of the bound
  for (std::size_t p = 0; p < kTMax;
       p = (p + 1 == kTMax || p + kPosStep < kTMax) ? p + kPosStep : kTMax - 1) {
    float x[kD];
    double xd[kD];
    rng.fill(x, kD, -2.0f, 2.0f);
    for (std::size_t i = 0; i < kD; ++i) xd[i] = x[i];
    f32_rope_head(x, tab.cos + p * S, tab.sin + p * S, rot / 2, pairing);
    microattn_ref::rope(xd, rot, static_cast<double>(p), base, pairing == RopePairing::kAdjacent);
    for (std::size_t i = 0; i < kD; ++i) {
      // Pair partner of i (or i itself past the rotated dims).
      std::size_t j = i;
      if (i < rot)
        j = pairing == RopePairing::kAdjacent ? (i ^ 1u)
                                              : (i < rot / 2 ? i + rot / 2 : i - rot / 2);
      // Output = a c -+ b s with c, s rounded to float (0.5 ulp each), two rounded products and
      // one rounded sum: <= 2 eps (|a| + |b|); we allow 4 eps (|a| + |b|).
      const double mag =
          std::fabs(xd[i]) + std::fabs(xd[j]);  // rotation keeps |a|+|b| within sqrt2
      const double bound = 4 * microattn_test::kEps * 1.5 * (mag > 1e-30 ? mag : 1e-30);
      const double err = std::fabs(static_cast<double>(x[i]) - xd[i]) / bound;
      worst = err > worst ? err : worst;
      if (i >= rot) {
        EXPECT_EQ(static_cast<double>(x[i]), xd[i]) << "dim " << i << " past rot changed";
      }
    }
  }
  EXPECT_LE(worst, 1.0) << "T_max=" << kTMax << " d=" << kD << " rot=" << rot << " base=" << base
                        << " pairing=" << static_cast<int>(pairing);
}

TEST(Rope, HalfSplitAgainstReference) {
  check_against_reference<kMid, 32>(32, 10000.0f, RopePairing::kHalfSplit, 1);
  check_against_reference<kMid, 32>(16, 10000.0f, RopePairing::kHalfSplit, 2);  // partial
  check_against_reference<kMid, 32>(2, 500000.0f, RopePairing::kHalfSplit, 3);
  check_against_reference<kFar, 6>(6, 10000.0f, RopePairing::kHalfSplit, 4);  // far positions
  check_against_reference<300, 5>(4, 10.0f, RopePairing::kHalfSplit, 5);      // odd d_head
}

TEST(Rope, AdjacentAgainstReference) {
  check_against_reference<kMid, 32>(32, 10000.0f, RopePairing::kAdjacent, 11);
  check_against_reference<kMid, 32>(20, 10000.0f, RopePairing::kAdjacent, 12);  // partial
  check_against_reference<kMid, 32>(2, 500000.0f, RopePairing::kAdjacent, 13);
  check_against_reference<kFar, 6>(4, 10000.0f, RopePairing::kAdjacent, 14);  // far, partial
  check_against_reference<300, 5>(4, 10.0f, RopePairing::kAdjacent, 15);
}

// Position 0 is the identity, bit for bit; with one pair (theta_0 = 1) position p turns
// (1, 0) by p radians.
TEST(Rope, KnownValues) {
  static RopeTable<64, 4> tab;
  rope_fill(tab, 10000.0f, 2);
  float x[4] = {0.3f, -1.7f, 2.5f, 1e-3f};
  const float x0[4] = {0.3f, -1.7f, 2.5f, 1e-3f};
  f32_rope_head(x, tab.cos, tab.sin, 2, RopePairing::kHalfSplit);
  EXPECT_EQ(std::memcmp(x, x0, sizeof x), 0);
  f32_rope_head(x, tab.cos, tab.sin, 2, RopePairing::kAdjacent);
  EXPECT_EQ(std::memcmp(x, x0, sizeof x), 0);

  static RopeTable<64, 2> one;
  rope_fill(one, 10000.0f, 1);
  for (std::size_t p : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{63}}) {
    float v[2] = {1.0f, 0.0f};
    f32_rope_head(v, one.cos + p, one.sin + p, 1, RopePairing::kAdjacent);
    EXPECT_NEAR(v[0], std::cos(static_cast<double>(p)), 1e-7) << "p=" << p;
    EXPECT_NEAR(v[1], std::sin(static_cast<double>(p)), 1e-7) << "p=" << p;
  }
  // d = 4, base 100: theta = (1, 0.1). Half-split pairs (0,2), (1,3); adjacent (0,1), (2,3).
  static RopeTable<64, 4> b100;
  rope_fill(b100, 100.0f, 2);
  const std::size_t p = 5;
  float h[4] = {1, 0, 0, 1};
  f32_rope_head(h, b100.cos + p * 2, b100.sin + p * 2, 2, RopePairing::kHalfSplit);
  // pair (0,2) = (1,0) by 5 rad; pair (1,3) = (0,1) by 0.5 rad -> (-sin .5, cos .5)
  EXPECT_NEAR(h[0], std::cos(5.0), 1e-7);
  EXPECT_NEAR(h[2], std::sin(5.0), 1e-7);
  EXPECT_NEAR(h[1], -std::sin(0.5), 1e-7);
  EXPECT_NEAR(h[3], std::cos(0.5), 1e-7);
  float a[4] = {1, 0, 0, 1};
  f32_rope_head(a, b100.cos + p * 2, b100.sin + p * 2, 2, RopePairing::kAdjacent);
  EXPECT_NEAR(a[0], std::cos(5.0), 1e-7);
  EXPECT_NEAR(a[1], std::sin(5.0), 1e-7);
  EXPECT_NEAR(a[2], -std::sin(0.5), 1e-7);
  EXPECT_NEAR(a[3], std::cos(0.5), 1e-7);
}

// The two pairings are the same rotation of permuted dimensions: interleaving the halves of a
// head, rotating adjacent pairs and de-interleaving gives the half-split result bit for bit.
TEST(Rope, PairingsArePermutationsOfEachOther) {
  constexpr std::size_t D = 24, R = 16, H = R / 2;
  static RopeTable<200, D> tab;
  rope_fill(tab, 10000.0f, H);
  microattn_test::Rng rng(21);
  for (std::size_t p = 0; p < 200; p += 13) {
    float hs[D], ad[D];
    rng.fill(hs, D, -1, 1);
    std::memcpy(ad, hs, sizeof hs);
    for (std::size_t i = 0; i < H; ++i) ad[2 * i] = hs[i], ad[2 * i + 1] = hs[i + H];
    f32_rope_head(hs, tab.cos + p * (D / 2), tab.sin + p * (D / 2), H, RopePairing::kHalfSplit);
    f32_rope_head(ad, tab.cos + p * (D / 2), tab.sin + p * (D / 2), H, RopePairing::kAdjacent);
    bool same = true;
    for (std::size_t i = 0; i < H; ++i)
      same = same && ad[2 * i] == hs[i] && ad[2 * i + 1] == hs[i + H];
    for (std::size_t i = R; i < D; ++i) same = same && ad[i] == hs[i];
    EXPECT_TRUE(same) << "p=" << p;
  }
}

// What RoPE is for: the score of a rotated query and key depends only on their distance,
// <R(m) q, R(n) k> = <R(m+s) q, R(n+s) k>, up to float rounding of both dot products.
TEST(Rope, ScoresDependOnlyOnDistance) {
  constexpr std::size_t D = 16, N = 256;
  static RopeTable<N, D> tab;
  for (RopePairing pr : {RopePairing::kHalfSplit, RopePairing::kAdjacent}) {
    rope_fill(tab, 10000.0f, D / 2);
    microattn_test::Rng rng(31);
    float q[D], k[D];
    rng.fill(q, D, -1, 1);
    rng.fill(k, D, -1, 1);
    auto score = [&](std::size_t m, std::size_t n) {
      float a[D], b[D];
      std::memcpy(a, q, sizeof a);
      std::memcpy(b, k, sizeof b);
      f32_rope_head(a, tab.cos + m * (D / 2), tab.sin + m * (D / 2), D / 2, pr);
      f32_rope_head(b, tab.cos + n * (D / 2), tab.sin + n * (D / 2), D / 2, pr);
      double s = 0;
      for (std::size_t i = 0; i < D; ++i) s += static_cast<double>(a[i]) * b[i];
      return s;
    };
    for (std::size_t m : {std::size_t{3}, std::size_t{40}, std::size_t{100}}) {
      const double s0 = score(m, m / 2);
      for (std::size_t s : {std::size_t{1}, std::size_t{17}, std::size_t{150}}) {
        // Each rotated entry is off by <= 4 eps (|a|+|b|) <= 8 eps; 16 terms of size <= 2.
        EXPECT_NEAR(score(m + s, m / 2 + s), s0, 16 * 2 * 8 * microattn_test::kEps * 2)
            << "pairing " << static_cast<int>(pr) << " m=" << m << " s=" << s;
      }
    }
  }
}

// The row form used by the layer: heads of tokens at consecutive positions.
TEST(Rope, RowsRotateEveryHeadAtItsPosition) {
  constexpr std::size_t D = 8, HEADS = 3, T = 5, LD = 30, POS0 = 50;
  static RopeTable<64, D> tab;
  rope_fill(tab, 10000.0f, 3);  // rot 6 of 8
  float x[T * LD], want[T * LD];
  microattn_test::Rng rng(41);
  rng.fill(x, T * LD, -1, 1);
  std::memcpy(want, x, sizeof x);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t e = 0; e < HEADS; ++e)
      f32_rope_head(want + t * LD + e * 9, tab.cos + (POS0 + t) * 4, tab.sin + (POS0 + t) * 4, 3,
                    RopePairing::kAdjacent);
  f32_rope_rows(x, LD, 9, T, HEADS, POS0, tab, 3, RopePairing::kAdjacent);
  EXPECT_EQ(std::memcmp(x, want, sizeof x), 0);
}

// ---- the table itself: float-only rope_fill against the exact angle

/// The spacing of floats at |v| (normal range).
double ulp_at(long double v) {
  int e;
  const double a = std::fabs(static_cast<double>(v));
  std::frexp(a > 0x1p-126 ? a : 0x1p-126, &e);  // a in [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 24);
}

/// Every entry of the rows start .. start + kT - 1 (all kD / 2 pairs) in ulps against cos/sin of
/// position * theta_i, theta_i = base^(-i/half), in long double (double on Arm). The reference
/// itself is off by up to |angle| 2^(3 - digits) (theta's and the product's rounding) plus
/// cos/sin's own: that, in ulps of the entry, is subtracted from the measured distance (it
/// matters only near the zeros of cos and sin; there double, tried first for speed, is
/// replaced by long double).
template <std::size_t kT, std::size_t kD>
void check_table_ulps(float base, std::size_t start, double* worst) {
  static RopeTable<kT, kD> tab;
  constexpr std::size_t S = RopeTable<kT, kD>::kHalf;
  rope_fill(tab, base, S, start);
  using LD = long double;
  const LD lb = std::log(static_cast<LD>(base));
  const double rel = std::ldexp(1.0, 3 - std::numeric_limits<LD>::digits);
  bool ok = true;  // one failure per table is enough
  for (std::size_t i = 0; i < S && ok; ++i) {
    const LD theta = std::exp(-lb * static_cast<LD>(i) / static_cast<LD>(S));
    for (std::size_t p = 0; p < kT && ok; ++p) {
      const LD a = static_cast<LD>(start + p) * theta;
      const double ad = static_cast<double>(a), mag = std::fabs(ad);
      for (int k = 0; k < 2 && ok; ++k) {
        const float got = k ? tab.sin[p * S + i] : tab.cos[p * S + i];
        LD ref = k ? std::sin(ad) : std::cos(ad);
        double ref_err = (mag * (rel + 0x1p-53) + 0x1p-52) / ulp_at(ref);
        if (ref_err > 0.02 && rel < 0x1p-53) {
          ref = k ? std::sin(a) : std::cos(a);
          ref_err = (mag + 1.0) * rel / ulp_at(ref);
        }
        const double err =
            static_cast<double>(std::fabs(static_cast<LD>(got) - ref)) / ulp_at(ref) - ref_err;
        *worst = err > *worst ? err : *worst;
        ok = err <= 1.0;
        EXPECT_LE(err, 1.0) << (k ? "sin" : "cos") << " base " << base << " position " << start + p
                            << " pair " << i << " of " << S << ": " << got << " vs "
                            << static_cast<double>(ref);
      }
    }
  }
}

// Within 1 ulp of the correctly rounded cos/sin of the exact angle (the contract; the bound
// is 0.8 ulp, measured 0.62 ulp against __float128 over every entry of these tables) at every
// position 0 .. 2^16 - 1 for d_head 128 / base 1e4 and d_head 64 / bases 5e5, 1e6; under
// emulation two blocks of 128 rows (the first and the last below 2^16).
TEST(Rope, TableWithinOneUlpOfTheExactAngle) {
  constexpr std::size_t kRows = kQuick ? 128 : 4096;
  constexpr std::size_t kEnd = std::size_t{1} << 16;
  double worst = 0;
  for (std::size_t s = 0; s < kEnd; s += kQuick ? kEnd - kRows : kRows) {
    check_table_ulps<kRows, 128>(10000.0f, s, &worst);
    check_table_ulps<kRows, 64>(500000.0f, s, &worst);
    check_table_ulps<kRows, 64>(1000000.0f, s, &worst);
  }
  EXPECT_LE(worst, 1.0);
}

/// FNV-1a of the bits of every cos and sin entry, byte by byte from the least significant.
template <std::size_t kT, std::size_t kD>
std::uint32_t table_hash(const RopeTable<kT, kD>& t, std::uint32_t h) {
  for (std::size_t k = 0; k < kT * RopeTable<kT, kD>::kHalf; ++k)
    for (const float v : {t.cos[k], t.sin[k]}) {
      std::uint32_t u;
      std::memcpy(&u, &v, sizeof u);
      for (int b = 0; b < 32; b += 8) h = (h ^ ((u >> b) & 0xFFu)) * 16777619u;
    }
  return h;
}

// The table is the same bits on every target and build (host SSE2 without FMA, AVX2 and
// AVX-512 with FMA, -Ofast, AArch64, Armv7, Cortex-M4/M7/M55): one hash, written here, of
// tables at positions from 0 to beyond 2^31 (the 24-bit position chunks), partial widths and
// bases 0.5 .. 1e6. If rope_fill's arithmetic changes on purpose, update the constant (and
// say why in the commit); if one build alone disagrees, that build changed an operation.
TEST(Rope, TableBitsAreTheSameOnEveryTarget) {
  static RopeTable<256, 64> tab;
  struct Fill {
    float base;
    std::size_t half, start;
  };
  const Fill fills[] = {{10000.0f, 32, 0},          {500000.0f, 32, 65280},
                        {1000000.0f, 24, 16777000}, {500.0f, 32, 4000000000u},
                        {0.5f, 5, 1234567},         {10000.0f, 1, 99}};
  std::uint32_t h = 2166136261u;
  for (const Fill& f : fills) {
    rope_fill(tab, f.base, f.half, f.start);
    h = table_hash(tab, h);
  }
  EXPECT_EQ(h, 0x134e30b7u) << "rope_fill's bits changed";
}

// Every valid base (any positive finite float) and start position gives finite entries with
// cos^2 + sin^2 = 1 to float accuracy, however meaningless the angles (the fuzzers feed
// bases down to 1e-30 and starts up to SIZE_MAX - T_max).
TEST(Rope, TableFiniteForEveryValidBase) {
  static RopeTable<64, 16> tab;
  const float bases[] = {FLT_TRUE_MIN, 1e-30f, 0.5f, 1.0f, 2.5f, 1e30f, FLT_MAX};
  for (const float base : bases)
    for (const std::size_t start : {std::size_t{0}, std::size_t{SIZE_MAX - 64}}) {
      if (!rope_args_valid(base, 16, 16)) continue;  // FLT_TRUE_MIN is 0 to a flush-to-zero FPU
      rope_fill(tab, base, 8, start);
      bool finite = true;  // from the bits: -ffinite-math-only (the -Ofast tests) folds isfinite
      double worst = 0;
      for (std::size_t k = 0; k < 64 * 8; ++k) {
        const double c = tab.cos[k], s = tab.sin[k], e = std::fabs(c * c + s * s - 1.0);
        finite = finite && microattn::internal::finite_bits(tab.cos[k]) &&
                 microattn::internal::finite_bits(tab.sin[k]);
        worst = e > worst ? e : worst;
      }
      EXPECT_TRUE(finite) << "base " << base << " start " << start;
      EXPECT_LE(worst, 4 * microattn_test::kEps) << "base " << base << " start " << start;
    }
}

TEST(Rope, ArgumentValidation) {
  EXPECT_TRUE(rope_args_valid(10000.0f, 64, 64));
  EXPECT_TRUE(rope_args_valid(0.5f, 2, 3));
  EXPECT_FALSE(rope_args_valid(10000.0f, 0, 64));
  EXPECT_FALSE(rope_args_valid(10000.0f, 63, 64));
  EXPECT_FALSE(rope_args_valid(10000.0f, 66, 64));
  EXPECT_FALSE(rope_args_valid(0.0f, 64, 64));
  EXPECT_FALSE(rope_args_valid(-2.0f, 64, 64));
  EXPECT_FALSE(rope_args_valid(std::nanf(""), 64, 64));
  EXPECT_FALSE(rope_args_valid(HUGE_VALF, 64, 64));
}

}  // namespace
