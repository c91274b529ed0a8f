// SPDX-License-Identifier: Apache-2.0
// microattn kernel family: fp32 matrix-vector products for the single-token decode step.
// A decode step reads every weight once and does two flops per weight, so these kernels are
// bound by memory bandwidth: they stream each matrix once, front to back, in a few
// sequential streams, and keep enough independent accumulators to never wait on an FMA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "microattn/format.hpp"
#include "microattn/internal/elem.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/layout.hpp"

namespace microattn {
namespace kernels {

/// f32_gemv_axpy4: y[N] = x[K] · W + bias, W stored [K][N] (row stride ldw >= N), i.e. the
/// kInOut layout. Four rows of W at a time: y[n..n+W) += x[k] w[k] + ... + x[k+3] w[k+3], so
/// y (N floats, in L1) is loaded and stored once per four rows and W is read as four
/// sequential streams. bias: N floats or null. y must not overlap x or W.
/// For every kernel of this family, WE = int8_t gives its qc8w form: W(k, n) = scale[n] *
/// q(k, n), int8 q widened in registers, the per-column scale applied once to each sum
/// (y[n] = scale[n] * sum_k x[k] q(k, n) + bias[n]), so a decode step reads a quarter of the
/// weight bytes. scale is ignored (may be null) for fp32 weights; null with int8 weights gives
/// the unscaled sums (W = q: the absorbed query of latent attention scales x instead).
template <class Arch, class WE = float>
void f32_gemv_axpy(std::size_t N, std::size_t K, const float* x, const WE* w, std::size_t ldw,
                   const float* bias, float* y, const float* scale = nullptr) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t W = V::kWidth;
  constexpr bool kQ = internal::Elem<WE>::kScaled;
  // Two loops, not `bias ? bias[n] : 0`: GCC 12 makes that AVX-512 masked loads from a null
  // pointer, each a microcode assist (docs/compiler-notes.md).
  if (bias && !kQ) {
    for (std::size_t n = 0; n < N; ++n) y[n] = bias[n];
  } else {
    for (std::size_t n = 0; n < N; ++n) y[n] = 0.0f;
  }
  const std::size_t n_vec = N - N % W;  // columns in whole vectors
  const std::size_t k4 = K - K % 4;
  for (std::size_t k = 0; k < k4; k += 4) {
    const WE* w0 = w + k * ldw;
    const WE* w1 = w0 + ldw;
    const WE* w2 = w1 + ldw;
    const WE* w3 = w2 + ldw;
    const T x0 = V::set1(x[k]), x1 = V::set1(x[k + 1]), x2 = V::set1(x[k + 2]),
            x3 = V::set1(x[k + 3]);
    for (std::size_t n = 0; n < n_vec; n += W) {
      // Two short chains instead of one of four: the FMA latency overlaps across n anyway,
      // this halves it within one n.
      T a = V::fma(x0, V::load_elem(w0 + n), V::loadu(y + n));
      T b = x1 * V::load_elem(w1 + n);
      a = V::fma(x2, V::load_elem(w2 + n), a);
      b = V::fma(x3, V::load_elem(w3 + n), b);
      V::storeu(y + n, a + b);
    }
    for (std::size_t n = n_vec; n < N; ++n)
      y[n] += (x[k] * internal::elem_value(w0[n]) + x[k + 1] * internal::elem_value(w1[n])) +
              (x[k + 2] * internal::elem_value(w2[n]) + x[k + 3] * internal::elem_value(w3[n]));
  }
  for (std::size_t k = k4; k < K; ++k) {
    const WE* w0 = w + k * ldw;
    const T x0 = V::set1(x[k]);
    for (std::size_t n = 0; n < n_vec; n += W)
      V::storeu(y + n, V::fma(x0, V::load_elem(w0 + n), V::loadu(y + n)));
    for (std::size_t n = n_vec; n < N; ++n) y[n] += x[k] * internal::elem_value(w0[n]);
  }
  if constexpr (kQ) {
    if (scale && bias)
      for (std::size_t n = 0; n < N; ++n) y[n] = y[n] * scale[n] + bias[n];
    else if (scale)
      for (std::size_t n = 0; n < N; ++n) y[n] *= scale[n];
    else if (bias)
      for (std::size_t n = 0; n < N; ++n) y[n] += bias[n];
  }
}

/// f32_gemv_dot4x2: y[N] = x[K] · W^T + bias, W stored [N][K] (row stride ldw >= K), i.e. the
/// kOutIn (PyTorch nn.Linear) layout: each y[n] is the dot product of row n with x. Four rows at
/// a time with two vector accumulators each (8 independent FMA chains, x loaded once for the
/// four rows); four sequential streams. bias: N floats or null. y must not overlap x or W.
template <class Arch, class WE = float>
MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE void f32_gemv_dot(std::size_t N, std::size_t K,
                                                        const float* x, const WE* w,
                                                        std::size_t ldw, const float* bias,
                                                        float* y,
                                                        const float* scale = nullptr) noexcept {
  constexpr bool kQ = internal::Elem<WE>::kScaled;
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t W = V::kWidth;
  const std::size_t n4 = N - N % 4;
  // The k ranges as bounds fixed before the loops (the tail runs K % W times from k1), not
  // `k + 2 * W <= K` tests on a running k: with those, GCC 12 could not bound where the scalar
  // tail starts (as far as it knew the sums could wrap) and, with K a constant after inlining
  // (d_ff 172, SSE2 or NEON, -O3), warned "iteration 4611686018427387903 invokes undefined
  // behavior" in the tail: a -Werror user build failed (docs/compiler-notes.md).
  const std::size_t k2 = K - K % (2 * W);  // in pairs of vectors
  const std::size_t k1 = K - K % W;        // in whole vectors: k2 or k2 + W
  for (std::size_t n = 0; n < n4; n += 4) {
    const WE* r0 = w + n * ldw;
    const WE* r1 = r0 + ldw;
    const WE* r2 = r1 + ldw;
    const WE* r3 = r2 + ldw;
    T a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
    T b0 = V::zero(), b1 = V::zero(), b2 = V::zero(), b3 = V::zero();
    for (std::size_t k = 0; k < k2; k += 2 * W) {
      const T xa = V::loadu(x + k), xb = V::loadu(x + k + W);
      a0 = V::fma(V::load_elem(r0 + k), xa, a0);
      b0 = V::fma(V::load_elem(r0 + k + W), xb, b0);
      a1 = V::fma(V::load_elem(r1 + k), xa, a1);
      b1 = V::fma(V::load_elem(r1 + k + W), xb, b1);
      a2 = V::fma(V::load_elem(r2 + k), xa, a2);
      b2 = V::fma(V::load_elem(r2 + k + W), xb, b2);
      a3 = V::fma(V::load_elem(r3 + k), xa, a3);
      b3 = V::fma(V::load_elem(r3 + k + W), xb, b3);
    }
    if (k2 < k1) {
      const T xa = V::loadu(x + k2);
      a0 = V::fma(V::load_elem(r0 + k2), xa, a0);
      a1 = V::fma(V::load_elem(r1 + k2), xa, a1);
      a2 = V::fma(V::load_elem(r2 + k2), xa, a2);
      a3 = V::fma(V::load_elem(r3 + k2), xa, a3);
    }
    float s0 = V::hsum(a0 + b0), s1 = V::hsum(a1 + b1), s2 = V::hsum(a2 + b2),
          s3 = V::hsum(a3 + b3);
    for (std::size_t k = k1; k < K; ++k) {
      s0 += internal::elem_value(r0[k]) * x[k];
      s1 += internal::elem_value(r1[k]) * x[k];
      s2 += internal::elem_value(r2[k]) * x[k];
      s3 += internal::elem_value(r3[k]) * x[k];
    }
    if (kQ && scale) s0 *= scale[n], s1 *= scale[n + 1], s2 *= scale[n + 2], s3 *= scale[n + 3];
    if (bias) s0 += bias[n], s1 += bias[n + 1], s2 += bias[n + 2], s3 += bias[n + 3];
    y[n] = s0, y[n + 1] = s1, y[n + 2] = s2, y[n + 3] = s3;
  }
  for (std::size_t n = n4; n < N; ++n) {
    const WE* r0 = w + n * ldw;
    T a0 = V::zero(), b0 = V::zero();
    for (std::size_t k = 0; k < k2; k += 2 * W) {
      a0 = V::fma(V::load_elem(r0 + k), V::loadu(x + k), a0);
      b0 = V::fma(V::load_elem(r0 + k + W), V::loadu(x + k + W), b0);
    }
    if (k2 < k1) a0 = V::fma(V::load_elem(r0 + k2), V::loadu(x + k2), a0);
    float s0 = V::hsum(a0 + b0);
    for (std::size_t k = k1; k < K; ++k) s0 += internal::elem_value(r0[k]) * x[k];
    if (kQ && scale) s0 *= scale[n];
    y[n] = bias ? s0 + bias[n] : s0;
  }
}

namespace detail {

/// y for kNP whole panels at once (panel i at pw[i], its 16 outputs at y[i]): every panel is
/// its own sequential stream, kU rows of the panels per step so kNP * kU * (16 / width)
/// accumulators are in flight (8 vectors on the SIMD arches).
template <class Arch, std::size_t kNP, class WE>
inline void gemv_panels(std::size_t K, const float* x, const WE* const (&pw)[kNP],
                        const float* const (&bias)[kNP], float* const (&y)[kNP],
                        const float* const (&scale)[kNP]) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t P = kWeightPanel, W = V::kWidth, PV = P / W;
  constexpr std::size_t kU = kNP * PV >= 8 ? 1 : 8 / (kNP * PV);
  // The fixed-size loops are unrolled whatever the optimisation level (rolled, as GCC leaves
  // them at -O2, the accumulators live in memory).
  T acc[kNP][kU][PV];
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kNP; ++i)
#pragma GCC unroll 16
    for (std::size_t u = 0; u < kU; ++u)
#pragma GCC unroll 16
      for (std::size_t v = 0; v < PV; ++v) acc[i][u][v] = V::zero();
  const std::size_t k_step = K - K % kU;
  std::size_t k = 0;
  if constexpr (V::kLoadsFirst && kNP == 1 && kU == 1 && PV == 16) {
    // Cortex-M: a panel row's 16 weights in two groups of 8, each group's loads before its
    // multiply-adds (Vec<ScalarArch>::loads_first; 16 at once would need 33 registers).
    for (; k < K; ++k) {
      const float xk = x[k];
#pragma GCC unroll 2
      for (std::size_t h = 0; h < 2; ++h) {
        float wa[4], wb[4];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < 4; ++v) {
          wa[v] = V::load_elem(pw[0] + k * P + h * 8 + v);
          wb[v] = V::load_elem(pw[0] + k * P + h * 8 + 4 + v);
        }
        V::loads_first(wa, wb);
#pragma GCC unroll 4
        for (std::size_t v = 0; v < 4; ++v) {
          acc[0][0][h * 8 + v] = V::fma(xk, wa[v], acc[0][0][h * 8 + v]);
          acc[0][0][h * 8 + 4 + v] = V::fma(xk, wb[v], acc[0][0][h * 8 + 4 + v]);
        }
      }
    }
  }
  for (; k < k_step; k += kU)
#pragma GCC unroll 16
    for (std::size_t u = 0; u < kU; ++u) {
      const T xk = V::set1(x[k + u]);
#pragma GCC unroll 16
      for (std::size_t i = 0; i < kNP; ++i)
#pragma GCC unroll 16
        for (std::size_t v = 0; v < PV; ++v)
          acc[i][u][v] = V::fma(xk, V::load_elem(pw[i] + (k + u) * P + v * W), acc[i][u][v]);
    }
  for (; k < K; ++k) {
    const T xk = V::set1(x[k]);
#pragma GCC unroll 16
    for (std::size_t i = 0; i < kNP; ++i)
#pragma GCC unroll 16
      for (std::size_t v = 0; v < PV; ++v)
        acc[i][0][v] = V::fma(xk, V::load_elem(pw[i] + k * P + v * W), acc[i][0][v]);
  }
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kNP; ++i)
#pragma GCC unroll 16
    for (std::size_t v = 0; v < PV; ++v) {
      T s = acc[i][0][v];
#pragma GCC unroll 16
      for (std::size_t u = 1; u < kU; ++u) s = s + acc[i][u][v];
      if (scale[i]) s = s * V::loadu(scale[i] + v * W);
      if (bias[i]) s = s + V::loadu(bias[i] + v * W);
      V::storeu(y[i] + v * W, s);
    }
}

}  // namespace detail

/// f32_gemv_panel16: y[N] = x[K] · W + bias, W stored as panels of 16 output columns
/// (WeightLayout::kPanel16): W(k, n) = w[(n / 16) * ldp + k * 16 + n % 16], ldp >= 16 K.
/// Each panel is a sequential stream of K * 64 bytes whose 16 sums stay in registers (no
/// partial sums through memory). Where KernelParams::kGemvPanelPairs (the SIMD arches) panel
/// p runs together with panel p + n_panels / 2: two streams far apart keep more cache misses
/// in flight than one. The scalar arch (Cortex-M: no prefetcher streams to feed, 16 scalar
/// sums already fill the register file) takes one panel at a time. A last panel of N % 16
/// columns reads only its valid columns.
/// bias: N floats or null. y must not overlap x or W.
template <class Arch, class WE = float>
void f32_gemv_panel16(std::size_t N, std::size_t K, const float* x, const WE* w, std::size_t ldp,
                      const float* bias, float* y, const float* scale = nullptr,
                      std::size_t part = 0, std::size_t parts = 1) noexcept {
  constexpr bool kQ = internal::Elem<WE>::kScaled;
  constexpr std::size_t P = kWeightPanel;
  static_assert(P % internal::Vec<Arch>::kWidth == 0,
                "f32_gemv_panel16: the vector width must divide the panel width");
  constexpr bool kPairs = internal::Tiles<Arch>::kGemvPanelPairs;
  const std::size_t n_panels = N / P;
  const std::size_t half = kPairs ? n_panels / 2 : 0;
  // Part `part` of `parts` takes a contiguous run of the pairs (the pairing is the same for
  // every split, so each panel's sums are too); the last part also the odd and partial panels.
  const std::size_t per = (half + parts - 1) / parts;
  const std::size_t p_begin = internal::min_size(part * per, half);
  const std::size_t p_end = internal::min_size(p_begin + per, half);
  const bool last = part + 1 == parts;
  for (std::size_t p = p_begin; p < p_end; ++p) {
    const std::size_t q = p + half;
    const WE* const pw[2] = {w + p * ldp, w + q * ldp};
    const float* const b[2] = {bias ? bias + p * P : nullptr, bias ? bias + q * P : nullptr};
    float* const yy[2] = {y + p * P, y + q * P};
    const float* const sc[2] = {kQ ? scale + p * P : nullptr, kQ ? scale + q * P : nullptr};
    detail::gemv_panels<Arch, 2>(K, x, pw, b, yy, sc);
  }
  for (std::size_t p = 2 * half; last && p < n_panels; ++p) {
    const WE* const pw[1] = {w + p * ldp};
    const float* const b[1] = {bias ? bias + p * P : nullptr};
    float* const yy[1] = {y + p * P};
    const float* const sc[1] = {kQ ? scale + p * P : nullptr};
    detail::gemv_panels<Arch, 1>(K, x, pw, b, yy, sc);
  }
  const std::size_t n_full = n_panels * P;
  if (last && n_full < N) {  // the last, partial panel
    const WE* pw = w + n_panels * ldp;
    for (std::size_t n = n_full; n < N; ++n) {
      float s = 0.0f;
      for (std::size_t k = 0; k < K; ++k)
        s += x[k] * internal::elem_value(pw[k * P + (n - n_full)]);
      if constexpr (kQ) s *= scale[n];
      y[n] = bias ? s + bias[n] : s;
    }
  }
}

/// y[i] = sum_{k < K} x[k] W(i, k) for i < N: a kPanel16 matrix's block of K columns read
/// transposed (W has N rows; the block's panel p at w + p * ldp, ldp >= 16 N; K a multiple of
/// 16). One row of 16 floats per panel and output, summed in a vector and reduced once (the
/// absorbed query of latent attention: W_UK_h^T q_nope_h). WE = int8_t: W = q, unscaled (the
/// per-column scales of the block are along K: the caller scales x).
template <class Arch, class WE = float>
void f32_gemv_panel16_t(std::size_t N, std::size_t K, const float* x, const WE* w, std::size_t ldp,
                        float* y) noexcept {
  using V = internal::Vec<Arch>;
  constexpr std::size_t P = kWeightPanel, W = V::kWidth;
  static_assert(P % W == 0, "f32_gemv_panel16_t: the vector width must divide the panel width");
  MICROATTN_ASSERT(K % P == 0);
  for (std::size_t i = 0; i < N; ++i) {
    typename V::type acc = V::zero();
    for (std::size_t k = 0; k < K; k += P) {
      const WE* row = w + (k / P) * ldp + i * P;
#pragma GCC unroll 16
      for (std::size_t v = 0; v < P; v += W)
        acc = V::fma(V::load_elem(row + v), V::loadu(x + k + v), acc);
    }
    y[i] = V::hsum(acc);
  }
}

/// y[N] = x[K] · B + bias with B a weight matrix (K inputs, N outputs) stored in `layout`,
/// the operand convention of f32_gemm: B(k, n) = w[k * ldw + n] (kInOut), w[n * ldw + k]
/// (kOutIn) or w[(n / 16) * ldw + k * 16 + n % 16] (kPanel16).
template <class Arch>
void f32_gemv(std::size_t N, std::size_t K, const float* x, const float* w, std::size_t ldw,
              WeightLayout layout, const float* bias, float* y) noexcept {
  if (layout == WeightLayout::kOutIn)
    f32_gemv_dot<Arch>(N, K, x, w, ldw, bias, y);
  else if (layout == WeightLayout::kPanel16)
    f32_gemv_panel16<Arch>(N, K, x, w, ldw, bias, y);
  else
    f32_gemv_axpy<Arch>(N, K, x, w, ldw, bias, y);
}

/// Part `part` of `parts` of f32_gemv / qc8w_f32_gemv (WE = float / int8_t): the outputs split
/// into runs that keep every output's code path (vector body or tail, 4-row block or single
/// row, panel pair) the one of the unsplit call, so the results are bit-identical for any split.
template <class Arch, class WE>
void gemv_part(std::size_t N, std::size_t K, const float* x, const WE* w, std::size_t ldw,
               WeightLayout layout, const float* scale, const float* bias, float* y,
               std::size_t part, std::size_t parts) noexcept {
  if (layout == WeightLayout::kPanel16) {
    f32_gemv_panel16<Arch>(N, K, x, w, ldw, bias, y, scale, part, parts);
    return;
  }
  const bool dot = layout == WeightLayout::kOutIn;
  const std::size_t unit = dot ? 4 : internal::Vec<Arch>::kWidth;
  const std::size_t units = (N + unit - 1) / unit, per = (units + parts - 1) / parts;
  const std::size_t b = internal::min_size(part * per * unit, N);
  const std::size_t e = internal::min_size(b + per * unit, N);
  if (b >= e) return;
  const float* bb = bias ? bias + b : nullptr;
  const float* sb = scale ? scale + b : nullptr;
  if (dot)
    f32_gemv_dot<Arch>(e - b, K, x, w + b * ldw, ldw, bb, y + b, sb);
  else
    f32_gemv_axpy<Arch>(e - b, K, x, w + b, ldw, bb, y + b, sb);
}

/// qc8w_f32_gemv: f32_gemv with int8 weights, W(k, n) = scale[n] * q(k, n) (scale: N floats),
/// q in `layout` like fp32 weights. The int8 values are widened in registers and each sum is
/// scaled once; every kernel reads a quarter of the fp32 weight bytes, in the same streams.
template <class Arch>
void qc8w_f32_gemv(std::size_t N, std::size_t K, const float* x, const std::int8_t* w,
                   std::size_t ldw, WeightLayout layout, const float* scale, const float* bias,
                   float* y) noexcept {
  if (layout == WeightLayout::kOutIn)
    f32_gemv_dot<Arch>(N, K, x, w, ldw, bias, y, scale);
  else if (layout == WeightLayout::kPanel16)
    f32_gemv_panel16<Arch>(N, K, x, w, ldw, bias, y, scale);
  else
    f32_gemv_axpy<Arch>(N, K, x, w, ldw, bias, y, scale);
}

namespace detail {

/// Columns of an output chunk of qg8w_gemv_axpy: its unscaled group sums stay in L1.
constexpr std::size_t kGroupChunk = 64;

/// y += x · W for a [K][N] int8 matrix with group scales s (kInOut): per group, per chunk of
/// kGroupChunk columns, f32_gemv_axpy's unscaled sums of the group's rows, then y += s * sum.
template <class Arch, std::size_t G>
void qg8w_gemv_axpy(std::size_t N, std::size_t K, const float* x, const std::int8_t* w,
                    std::size_t ldw, GroupScales<G> s, float* y) noexcept {
  using V = internal::Vec<Arch>;
  constexpr std::size_t W = V::kWidth;
  static_assert(kGroupChunk % W == 0, "qg8w_gemv_axpy: chunks of whole vectors");
  alignas(internal::Tiles<Arch>::kAlign) float part[kGroupChunk];
  for (std::size_t k0 = 0; k0 < K; k0 += G) {
    const std::size_t kg = internal::min_size(G, K - k0);
    for (std::size_t n0 = 0; n0 < N; n0 += kGroupChunk) {
      const std::size_t nc = internal::min_size(kGroupChunk, N - n0), nv = nc - nc % W;
      f32_gemv_axpy<Arch, std::int8_t>(nc, kg, x + k0, w + k0 * ldw + n0, ldw, nullptr, part);
      const GroupScales<G> sc = s.cols(n0);
      const float* sg = sc.p + (k0 / G) * sc.group_stride;  // kInOut: col_stride 1
      for (std::size_t j = 0; j < nv; j += W)
        V::storeu(y + n0 + j, V::fma(V::loadu(part + j), V::loadu(sg + j), V::loadu(y + n0 + j)));
      for (std::size_t j = nv; j < nc; ++j) y[n0 + j] += sg[j] * part[j];
    }
  }
}

/// The R dot products of rows r[0..R) (each K int8, group scales of row i at s.cols(i)) with
/// x: per row and group one vector of the group's products, scaled once and accumulated.
template <class Arch, std::size_t G, std::size_t R>
inline void qg8w_dot_rows(std::size_t K, const float* x, const std::int8_t* const (&r)[R],
                          GroupScales<G> s, float (&out)[R]) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t W = V::kWidth;
  static_assert(G % (2 * W) == 0, "qg8w_dot_rows: a group is whole pairs of vectors");
  const std::size_t kfull = K - K % G;
  T acc[R];
#pragma GCC unroll 4
  for (std::size_t i = 0; i < R; ++i) acc[i] = V::zero();
  for (std::size_t k0 = 0; k0 < kfull; k0 += G) {
    T pa[R], pb[R];
#pragma GCC unroll 4
    for (std::size_t i = 0; i < R; ++i) pa[i] = V::zero(), pb[i] = V::zero();
    for (std::size_t k = k0; k < k0 + G; k += 2 * W) {
      const T xa = V::loadu(x + k), xb = V::loadu(x + k + W);
#pragma GCC unroll 4
      for (std::size_t i = 0; i < R; ++i) {
        pa[i] = V::fma(V::load_elem(r[i] + k), xa, pa[i]);
        pb[i] = V::fma(V::load_elem(r[i] + k + W), xb, pb[i]);
      }
    }
#pragma GCC unroll 4
    for (std::size_t i = 0; i < R; ++i)
      acc[i] = V::fma(V::set1(s.at(k0, i)), pa[i] + pb[i], acc[i]);
  }
#pragma GCC unroll 4
  for (std::size_t i = 0; i < R; ++i) {
    float t = 0.0f;  // the last, partial group
    for (std::size_t k = kfull; k < K; ++k) t += internal::elem_value(r[i][k]) * x[k];
    out[i] = V::hsum(acc[i]) + (kfull < K ? s.at(kfull, i) * t : 0.0f);
  }
}

/// y = x · W for an [N][K] int8 matrix (kOutIn, row stride ldw) with group scales s: four rows
/// at a time (x loaded once for them), then one; each row's arithmetic is the same either way.
template <class Arch, std::size_t G>
void qg8w_gemv_dot(std::size_t N, std::size_t K, const float* x, const std::int8_t* w,
                   std::size_t ldw, GroupScales<G> s, float* y) noexcept {
  std::size_t n = 0;
  for (; n + 4 <= N; n += 4) {
    const std::int8_t* const r[4] = {w + n * ldw, w + (n + 1) * ldw, w + (n + 2) * ldw,
                                     w + (n + 3) * ldw};
    float o[4];
    qg8w_dot_rows<Arch, G, 4>(K, x, r, s.cols(n), o);
    y[n] += o[0], y[n + 1] += o[1], y[n + 2] += o[2], y[n + 3] += o[3];
  }
  for (; n < N; ++n) {
    const std::int8_t* const r[1] = {w + n * ldw};
    float o[1];
    qg8w_dot_rows<Arch, G, 1>(K, x, r, s.cols(n), o);
    y[n] += o[0];
  }
}

/// y += x · W for the kPanel16 panels of an int8 matrix with group scales s ([groups][out]):
/// per panel and group, kU rows at a time into kU * 16 / width accumulators, their sum scaled
/// by the group's 16 scales; a last partial panel column by column.
template <class Arch, std::size_t G>
void qg8w_gemv_panel16(std::size_t N, std::size_t K, const float* x, const std::int8_t* w,
                       std::size_t ldp, GroupScales<G> s, float* y) noexcept {
  using V = internal::Vec<Arch>;
  using T = typename V::type;
  constexpr std::size_t P = kWeightPanel, W = V::kWidth, PV = P / W;
  constexpr std::size_t kU = PV >= 8 ? 1 : 8 / PV;
  static_assert(P % W == 0 && G % kU == 0, "qg8w_gemv_panel16: whole vectors and row steps");
  const std::size_t n_panels = N / P;
  for (std::size_t p = 0; p < n_panels; ++p) {
    const std::int8_t* pw = w + p * ldp;
    for (std::size_t k0 = 0; k0 < K; k0 += G) {
      const std::size_t kg = internal::min_size(G, K - k0), ku = kg - kg % kU;
      T acc[kU][PV];
#pragma GCC unroll 16
      for (std::size_t u = 0; u < kU; ++u)
#pragma GCC unroll 16
        for (std::size_t v = 0; v < PV; ++v) acc[u][v] = V::zero();
      std::size_t k = k0;
      for (; k < k0 + ku; k += kU)
#pragma GCC unroll 16
        for (std::size_t u = 0; u < kU; ++u) {
          const T xk = V::set1(x[k + u]);
#pragma GCC unroll 16
          for (std::size_t v = 0; v < PV; ++v)
            acc[u][v] = V::fma(xk, V::load_elem(pw + (k + u) * P + v * W), acc[u][v]);
        }
      for (; k < k0 + kg; ++k) {
        const T xk = V::set1(x[k]);
#pragma GCC unroll 16
        for (std::size_t v = 0; v < PV; ++v)
          acc[0][v] = V::fma(xk, V::load_elem(pw + k * P + v * W), acc[0][v]);
      }
      const float* sg = s.p + (k0 / G) * s.group_stride + p * P;  // col_stride 1
#pragma GCC unroll 16
      for (std::size_t v = 0; v < PV; ++v) {
        T t = acc[0][v];
#pragma GCC unroll 16
        for (std::size_t u = 1; u < kU; ++u) t = t + acc[u][v];
        float* yv = y + p * P + v * W;
        V::storeu(yv, V::fma(t, V::loadu(sg + v * W), V::loadu(yv)));
      }
    }
  }
  const std::int8_t* pw = w + n_panels * ldp;
  for (std::size_t n = n_panels * P; n < N; ++n)
    for (std::size_t k0 = 0; k0 < K; k0 += G) {
      float t = 0.0f;
      for (std::size_t k = k0; k < internal::min_size(k0 + G, K); ++k)
        t += x[k] * internal::elem_value(pw[k * P + (n - n_panels * P)]);
      y[n] += s.at(k0, n) * t;
    }
}

}  // namespace detail

/// qg8w_f32_gemv: y[N] = x[K] · W + bias with group-wise int8 weights, W(k, n) = s.at(k, n) *
/// q(k, n) (a scale per output column and group of G inputs; GroupScales), q in `layout` like
/// fp32 weights; or part `part` of `parts` of it. Per group the unscaled int8 products are
/// summed in fp32, scaled once and added in group order (the partial last group included):
/// fp32 math on the dequantised weights up to float rounding, bit-identical for any split.
template <class Arch, std::size_t G>
void gemv_part(std::size_t N, std::size_t K, const float* x, const std::int8_t* w, std::size_t ldw,
               WeightLayout layout, GroupScales<G> s, const float* bias, float* y,
               std::size_t part = 0, std::size_t parts = 1) noexcept {
  const std::size_t unit = layout == WeightLayout::kPanel16 ? kWeightPanel
                           : layout == WeightLayout::kOutIn ? 4
                                                            : internal::Vec<Arch>::kWidth;
  const std::size_t units = (N + unit - 1) / unit, per = (units + parts - 1) / parts;
  const std::size_t b = internal::min_size(part * per * unit, N);
  const std::size_t e = internal::min_size(b + per * unit, N);
  if (b >= e) return;
  float* yb = y + b;
  for (std::size_t n = 0; n < e - b; ++n) yb[n] = bias ? bias[b + n] : 0.0f;
  if (layout == WeightLayout::kOutIn)
    detail::qg8w_gemv_dot<Arch>(e - b, K, x, w + b * ldw, ldw, s.cols(b), yb);
  else if (layout == WeightLayout::kPanel16)
    detail::qg8w_gemv_panel16<Arch>(e - b, K, x, w + (b / kWeightPanel) * ldw, ldw, s.cols(b), yb);
  else
    detail::qg8w_gemv_axpy<Arch>(e - b, K, x, w + b, ldw, s.cols(b), yb);
}
template <class Arch, std::size_t G>
void qg8w_f32_gemv(std::size_t N, std::size_t K, const float* x, const std::int8_t* w,
                   std::size_t ldw, WeightLayout layout, GroupScales<G> s, const float* bias,
                   float* y) noexcept {
  gemv_part<Arch>(N, K, x, w, ldw, layout, s, bias, y);
}

}  // namespace kernels
}  // namespace microattn
