// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: rotary positional embeddings (RoPE), from precomputed tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/internal/vec.hpp"
#include "microattn/rope_config.hpp"

namespace microattn {
namespace kernels {

/// cos / sin of position * theta_i for kTMax positions start .. start + kTMax - 1 (row r is
/// position start + r) and pair i, row-major [row][i] with row stride kHalf = d_head / 2 (rotations
/// with fewer pairs use the first ones of each row). 2 * kTMax * kHalf floats: the only RoPE
/// memory, filled once.
template <std::size_t kTMax, std::size_t kDHead>
struct RopeTable {
  static constexpr std::size_t kHalf = kDHead / 2 > 0 ? kDHead / 2 : 1;
  float cos[kTMax * kHalf];
  float sin[kTMax * kHalf];
};

/// True when (base, rotary_dims) is a valid rotation for heads of d_head floats (finiteness from
/// the bits: a check -ffast-math cannot remove)
/// (rotary_dims already resolved: 0 is not accepted here).
inline bool rope_args_valid(float base, std::size_t rotary_dims, std::size_t d_head) noexcept {
  return internal::finite_bits(base) && base > 0.0f && rotary_dims >= 2 && rotary_dims % 2 == 0 &&
         rotary_dims <= d_head;
}

namespace rope_detail {

// The table is computed from IEEE float +, -, * and (where the target has one) exact fused
// multiply-adds only: no double (the Cortex-M4/M33 FPU is single precision, soft-float doubles
// and libm's cos/sin cost flash and start-up cycles) and no libm. Every result passes through
// Vec::opaque (no instruction), so no compiler or flag contracts a * b + c into an FMA,
// reassociates, or folds an error-free transformation away (-ffast-math): each target does
// the same operations in the same order and gets the same bits (tests/test_rope.cpp hashes a
// table on every build).
using Op = internal::Vec<ScalarArch>;
inline float add(float a, float b) noexcept { return Op::opaque(a + b); }
inline float sub(float a, float b) noexcept { return Op::opaque(a - b); }
inline float mul(float a, float b) noexcept { return Op::opaque(a * b); }
inline float madd(float a, float b, float c) noexcept { return add(mul(a, b), c); }  // 2 roundings

/// Unevaluated sums hi + lo and a + b + c (|lo| <= ulp(hi) / 2, ...): 48 and 72 bits.
struct F2 {
  float hi, lo;
};
struct F3 {
  float a, b, c;
};

/// hi + lo == a + b exactly, any magnitudes (Knuth's TwoSum).
inline F2 two_sum(float a, float b) noexcept {
  const float s = add(a, b), bb = sub(s, a);
  return {s, add(sub(a, sub(s, bb)), sub(b, bb))};
}

/// hi + lo == a * b exactly (no overflow or underflow): one fused multiply-add where the target
/// has one, Dekker's product of Veltkamp halves elsewhere. Both exact, so the same bits.
inline F2 two_prod(float a, float b) noexcept {
  const float p = mul(a, b);
#if MICROATTN_SCALAR_FMA
  return {p, Op::opaque(Op::fma(a, b, -p))};
#else
  const float ca = mul(a, 4097.0f), cb = mul(b, 4097.0f);
  const float ah = sub(ca, sub(ca, a)), bh = sub(cb, sub(cb, b));
  const float al = sub(a, ah), bl = sub(b, bh);
  return {p, add(add(add(sub(mul(ah, bh), p), mul(ah, bl)), mul(al, bh)), mul(al, bl))};
#endif
}

/// a + b + c (|b| < ~2^-20 |a|, |c| < ~2^-20 |b|) as a triple whose parts do not overlap.
inline F3 renorm(float a, float b, float c) noexcept {
  const F2 t = two_sum(b, c), u = two_sum(a, t.hi), v = two_sum(u.lo, t.lo);
  const F2 w = two_sum(u.hi, v.hi), x = two_sum(w.lo, v.lo);
  return {w.hi, x.hi, x.lo};
}

/// x * y, relative error < 2^-69 (the terms below 2^-72 |x y| are dropped). Out of line: it
/// runs once per pair and ~50 times in root_inv, never per entry.
MICROATTN_NOINLINE inline F3 mul3(const F3& x, const F3& y) noexcept {
  const F2 p = two_prod(x.a, y.a), q = two_prod(x.a, y.b), r = two_prod(x.b, y.a);
  const F2 s = two_sum(q.hi, r.hi), t = two_sum(s.hi, p.lo);
  const float w = add(add(add(mul(x.a, y.c), mul(x.b, y.b)), mul(x.c, y.a)),
                      add(add(q.lo, r.lo), add(s.lo, t.lo)));
  return renorm(p.hi, t.hi, w);
}

/// x + y, error < 2^-70 max(|x|, |y|).
inline F3 add3(const F3& x, const F3& y) noexcept {
  const F2 s = two_sum(x.a, y.a), t = two_sum(x.b, y.b), u = two_sum(t.hi, s.lo);
  return renorm(s.hi, u.hi, add(add(x.c, y.c), add(t.lo, u.lo)));
}

/// 2^e, e clamped to [-126, 127].
inline float pow2i(int e) noexcept {
  e = e < -126 ? -126 : e > 127 ? 127 : e;
  const std::uint32_t u = static_cast<std::uint32_t>(e + 127) << 23;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// x = m 2^e with m in [1, 2), for a positive finite x (subnormals too).
inline float mantissa(float x, int& e) noexcept {
  e = 0;
  if (x < 0x1p-100f) x = mul(x, 0x1p64f), e = -64;
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  e += static_cast<int>((u >> 23) & 0xFFu) - 127;
  u = (u & 0x007FFFFFu) | 0x3F800000u;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

/// x scaled exactly into [1, 2) (x.a > 0), its exponent added to e.
inline F3 normalize(const F3& x, int& e) noexcept {
  int k;
  (void)mantissa(x.a, k);
  e += k;
  const float s = pow2i(-k);
  return {mul(x.a, s), mul(x.b, s), mul(x.c, s)};
}

/// x - n for the integer n nearest x (|x| < 2^30; halves go toward zero), exactly.
inline float round_int(float x, std::int32_t& n) noexcept {
  n = static_cast<std::int32_t>(x);  // toward zero; as a float exact (|x| >= 2^24 is integral)
  float r = sub(x, static_cast<float>(n));
  if (r > 0.5f) r = sub(r, 1.0f), ++n;
  if (r < -0.5f) r = add(r, 1.0f), --n;
  return r;
}

/// log2(x) for a positive finite x, |error| < 1.3e-6: ln(1 + t), |t| <= 0.415, to t^12.
inline float log2_guess(float x) noexcept {
  int e;
  float m = mantissa(x, e);
  if (m > 1.41421356f) m = mul(m, 0.5f), ++e;
  const float t = sub(m, 1.0f);
  float p = -1.0f / 12;
  for (int k = 11; k >= 1; --k) p = madd(p, t, (k % 2 ? 1.0f : -1.0f) / static_cast<float>(k));
  return madd(mul(p, t), 1.44269502f, static_cast<float>(e));
}

/// 2^y for |y| <= 125, relative error < 2e-7: 2^n e^(r ln 2), |r| <= 1/2, Taylor to r^8.
inline float exp2_guess(float y) noexcept {
  std::int32_t n;
  const float r = round_int(y < -125.0f ? -125.0f : y > 125.0f ? 125.0f : y, n);
  const float c[8] = {1.32154867e-6f, 1.52527336e-5f, 1.54035297e-4f, 1.33335579e-3f,
                      9.61812865e-3f, 5.55041097e-2f, 2.40226507e-1f, 6.93147182e-1f};
  float p = c[0];
  for (int k = 1; k < 8; ++k) p = madd(p, r, c[k]);
  return mul(madd(p, r, 1.0f), pow2i(n));
}

/// base^(-1/h), h >= 2, relative error ~2^-69 (any positive finite base). Newton's iteration
/// on t^h = 1/base, t <- t (1 - (base t^h - 1) / h), from a float guess of relative error
/// ~1e-6 / h: a relative error d becomes ~(h + 1) d^2 / 2, so three steps reach the
/// arithmetic's precision. t^h by squaring, every partial product scaled into [1, 2).
inline F3 root_inv(float base, std::size_t h) noexcept {
  int eb;
  const float mb = mantissa(base, eb);
  const float inv_h = 1.0f / static_cast<float>(h);
  F3 t{exp2_guess(-mul(log2_guess(base), inv_h)), 0.0f, 0.0f};
  for (int iter = 0; iter < 3; ++iter) {
    int ex = 0, e = eb;  // r 2^e: base, then base t^h (t = x 2^ex)
    F3 x = normalize(t, ex), r{mb, 0.0f, 0.0f};
    for (std::size_t n = h;; n >>= 1) {
      if (n & 1u) e += ex, r = normalize(mul3(r, x), e);
      if (n < 2) break;
      ex *= 2, x = normalize(mul3(x, x), ex);
    }
    const float s = pow2i(e);  // base t^h = r 2^e, ~1
    const float d = add(add(sub(mul(r.a, s), 1.0f), mul(r.b, s)), mul(r.c, s));
    const F3 c = mul3(t, F3{mul(d, inv_h), 0.0f, 0.0f});
    t = add3(t, F3{-c.a, -c.b, -c.c});
  }
  return t;
}

/// |x| < 2^e (e in [-126, 127]), false for infinities and NaN: from the bits, so that
/// -ffinite-math-only cannot turn it into a comparison that a NaN passes.
inline bool abs_below(float x, int e) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return (u & 0x7FFFFFFFu) < static_cast<std::uint32_t>(e + 127) << 23;
}

/// x 2^(24 k) modulo 4 (a period of the angle in quarter turns), exactly; 0 when the product
/// is a multiple of 4 (|x 2^(24 k)| >= 2^25), infinite or NaN (u past FLT_MAX: bases < 2^-100).
inline float mod4(float x, int k) noexcept {
  if (!abs_below(x, 25 - 24 * k)) return 0.0f;
  std::int32_t n;
  return mul(round_int(mul(x, pow2i(24 * k - 2)), n), 4.0f);
}

/// An angle of q + f quarter turns (q modulo 4, |f| <= 1/2 + 2^-20 as hi + lo).
struct Turns {
  F2 f;
  std::uint32_t q;
};

/// x minus its nearest integer, which is added to q (0 for |x| >= 2^30: a multiple of 4).
inline float wrap(float x, std::uint32_t& q) noexcept {
  if (!abs_below(x, 30)) return 0.0f;
  std::int32_t n;
  const float r = round_int(x, n);
  q += static_cast<std::uint32_t>(n);
  return r;
}

/// c w for an integer c < 2^24 and w = w.a + w.b + w.c (each |.| <= 2): the products exactly
/// (w.c's rounded), their integers dropped, the fractions summed large ones first and exactly
/// (they cancel near a multiple of pi/2), then the small ones: |error| ~2^-68 (c w.a + 1).
/// Out of line: one copy for the three position chunks (flash), a call per entry (~1 %).
MICROATTN_NOINLINE inline Turns reduce(float c, const F3& w) noexcept {
  const F2 p1 = two_prod(c, w.a), p2 = two_prod(c, w.b);
  std::uint32_t q = 0;
  const float a = wrap(p1.hi, q), b = wrap(p1.lo, q), d = wrap(p2.hi, q);
  const float e = wrap(p2.lo, q), g = wrap(mul(c, w.c), q);
  const F2 s = two_sum(b, d), t = two_sum(a, s.hi);
  const float hi = wrap(t.hi, q);
  return {two_sum(hi, add(add(s.lo, t.lo), add(e, g))), q};
}

inline Turns add_turns(const Turns& x, const Turns& y) noexcept {
  std::uint32_t q = x.q + y.q;
  const F2 s = two_sum(x.f.hi, y.f.hi);
  const float hi = wrap(s.hi, q);
  return {two_sum(hi, add(s.lo, add(x.f.lo, y.f.lo))), q};
}

/// a plus the turns of the position's bits 24 .. 47 and 48 .. 63 (w1, w2: u 2^24, u 2^48
/// modulo 4). Out of line: only positions >= 2^24 come here.
MICROATTN_NOINLINE inline Turns add_high_turns(const Turns& a, std::uint64_t pos, const F3& w1,
                                               const F3& w2) noexcept {
  return add_turns(a, add_turns(reduce(static_cast<float>((pos >> 24) & 0xFFFFFFu), w1),
                                reduce(static_cast<float>(pos >> 48), w2)));
}

/// +0 for -0 (so the sign of a zero cannot depend on -fno-signed-zeros).
inline float plus_zero(float v) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  if ((u & 0x7FFFFFFFu) == 0) u = 0;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

/// cos and sin of the angle a. On |f| <= 1/2 (|angle| <= pi/4) Taylor polynomials in f of
/// sin(pi f / 2) (to f^9, truncation < 2.5e-9 relative) and cos(pi f / 2) (to f^10, < 2e-10),
/// the leading terms (pi/2 + S3 f^2 + ..) f and 1 - pi^2/8 f^2 in float-float: the final
/// rounding's 0.5 ulp plus < 0.3 ulp from the tails' float rounding (measured 0.62 ulp).
inline void cos_sin(const Turns& a, float& cos_out, float& sin_out) noexcept {
  const float fh = a.f.hi, fl = a.f.lo;
  const F2 z = two_prod(fh, fh);
  const float ps = madd(madd(madd(0x1.507834p-13f, z.hi, -0x1.32d2ccp-8f), z.hi, 0x1.466bc6p-4f),
                        z.hi, -0x1.4abbcep-1f);  // S9 .. S3
  // sin = fh (S1 + z ps): S1 + z ps and its product by fh in float-float, so ps's rounding
  // counts at 1/9 of its weight; fl enters by the derivative S1 + 3 S3 z.
  const F2 m = two_prod(z.hi, ps), k = two_sum(0x1.921fb6p0f, m.hi);  // S1 = pi/2 (hi, lo)
  const float klo = add(add(k.lo, m.lo), madd(z.lo, ps, -0x1.777a5cp-25f));
  const F2 r = two_prod(fh, k.hi);
  const float s =
      add(r.hi, add(r.lo, madd(fh, klo, mul(fl, madd(-0x1.f019b6p0f, z.hi, 0x1.921fb6p0f)))));
  const float pc = madd(madd(madd(-0x1.a6d1f2p-16f, z.hi, 0x1.e1f506p-11f), z.hi, -0x1.55d3c8p-6f),
                        z.hi, 0x1.03c1f0p-2f);  // C10 .. C4
  // cos = 1 - x + z^2 pc, x = C2 f^2 (C2 = pi^2/8 hi, lo) in float-float; fl by the derivative.
  const F2 x = two_prod(0x1.3bd3ccp0f, z.hi);
  const float xlo = add(add(madd(0x1.37c8bcp-25f, z.hi, mul(0x1.3bd3ccp0f, z.lo)), x.lo),
                        mul(mul(fl, fh), madd(-0x1.03c1f0p0f, z.hi, 0x1.3bd3ccp1f)));
  const float one = sub(1.0f, x.hi), one_lo = sub(sub(1.0f, one), x.hi);  // exact: x.hi < 1/2
  const float c = add(one, add(mul(mul(z.hi, z.hi), pc), sub(one_lo, xlo)));
  const float v[4] = {c, -s, -c, s};  // cos at q = 0, 1, 2, 3 quarter turns; sin is cos at q - 1
  cos_out = plus_zero(v[a.q & 3u]);
  sin_out = plus_zero(v[(a.q + 3u) & 3u]);
}

}  // namespace rope_detail

/// Fills the table for `half` = rotary_dims / 2 pairs, rows for positions start ..
/// start + kTMax - 1: float arithmetic only (no libm, no double), the same bits on every target
/// and build. u_i = base^(-i/half) * 2/pi, pair i's angle step in quarter turns, in
/// triple-float (base^(-1/half) by Newton's iteration, then successive products: relative
/// error < (i + 1) 2^-69 for bases up to 2^40); position * u_i reduced modulo 4 with
/// error-free products, so the reduced angle is off by ~position * 2^-68 quarter turns; cos and
/// sin by polynomials on [-pi/4, pi/4] (< 0.8 ulp by their bounds). Error against the correctly
/// rounded cos/sin of
/// the exact angle position * base^(-i/half): measured at most 0.62 ulp over every entry of
/// tables with 2^16 positions, bases 1e4 .. 1e6, 16 .. 64 pairs, and of 8192-row blocks at
/// 2^24 and 2^31 (against __float128; 99.2 % correctly rounded; tests/test_rope.cpp asserts
/// <= 1 ulp against long double). Beyond ~2^31 the angle error shows as ulps near the zeros of
/// cos and sin (2.2 ulp at 2^32; the double tables this replaces lost position * 2^-53 rad,
/// Hugging Face's float position * theta ~position * 6e-8 rad).
/// Runs once per configuration (T_max * half entries, ~290 Cortex-M4 instructions each), never
/// per token.
template <std::size_t kTMax, std::size_t kDHead>
void rope_fill(RopeTable<kTMax, kDHead>& t, float base, std::size_t half,
               std::size_t start = 0) noexcept {
  constexpr std::size_t S = RopeTable<kTMax, kDHead>::kHalf;
  MICROATTN_ASSERT(half >= 1 && half <= S);
  using namespace rope_detail;
  const F3 step = half > 1 ? root_inv(base, half) : F3{1.0f, 0.0f, 0.0f};
  F3 u{0x1.45f306p-1f, 0x1.b93910p-26f, 0x1.529fc2p-52f};  // theta_0 = 1 rad = 2/pi turns/4
  for (std::size_t i = 0; i < half; ++i, u = mul3(u, step)) {
    // u 2^0, 2^24, 2^48 modulo 4, for the 24-bit chunks of the position.
    const F3 w0{mod4(u.a, 0), mod4(u.b, 0), mod4(u.c, 0)};
    const F3 w1{mod4(u.a, 1), mod4(u.b, 1), mod4(u.c, 1)};
    const F3 w2{mod4(u.a, 2), mod4(u.b, 2), mod4(u.c, 2)};
    for (std::size_t p = 0; p < kTMax; ++p) {
      const std::uint64_t pos = static_cast<std::uint64_t>(start) + p;
      Turns a = reduce(static_cast<float>(pos & 0xFFFFFFu), w0);
      if (pos >> 24) a = add_high_turns(a, pos, w1, w2);
      cos_sin(a, t.cos[p * S + i], t.sin[p * S + i]);
    }
  }
}

/// Rotates one head x[0 .. 2*half) in place with the table row (c, s) of its position.
/// Half-split pairs are two contiguous runs, so the loop vectorises (the compiler does it:
/// RoPE is O(d_head) per head and token, a small part of a layer's work).
inline void f32_rope_head(float* x, const float* c, const float* s, std::size_t half,
                          RopePairing pairing) noexcept {
  if (pairing == RopePairing::kHalfSplit) {
    float* lo = x;
    float* hi = x + half;
    for (std::size_t i = 0; i < half; ++i) {
      const float a = lo[i], b = hi[i];
      lo[i] = a * c[i] - b * s[i];
      hi[i] = a * s[i] + b * c[i];
    }
  } else {
    for (std::size_t i = 0; i < half; ++i) {
      const float a = x[2 * i], b = x[2 * i + 1];
      x[2 * i] = a * c[i] - b * s[i];
      x[2 * i + 1] = a * s[i] + b * c[i];
    }
  }
}

/// Rotates n_tokens rows of `heads` heads: head e of token t is x + t * ldx + e * head_stride,
/// at position pos0 + t (pos0 + n_tokens <= kTMax).
template <std::size_t kTMax, std::size_t kDHead>
void f32_rope_rows(float* x, std::size_t ldx, std::size_t head_stride, std::size_t n_tokens,
                   std::size_t heads, std::size_t pos0, const RopeTable<kTMax, kDHead>& t,
                   std::size_t half, RopePairing pairing) noexcept {
  constexpr std::size_t S = RopeTable<kTMax, kDHead>::kHalf;
  MICROATTN_ASSERT(pos0 + n_tokens <= kTMax && 2 * half <= kDHead);
  for (std::size_t i = 0; i < n_tokens; ++i) {
    const float* c = t.cos + (pos0 + i) * S;
    const float* s = t.sin + (pos0 + i) * S;
    for (std::size_t e = 0; e < heads; ++e)
      f32_rope_head(x + i * ldx + e * head_stride, c, s, half, pairing);
  }
}

}  // namespace kernels
}  // namespace microattn
