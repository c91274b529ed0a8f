// SPDX-License-Identifier: Apache-2.0
// microattn kernels: integer compute (Compute::kInt8). qd8_f32_qc8w_gemm / _gemv: activations
// quantised to int8 at run time with one scale per row (qd8), int8 weights with one scale per
// output column (qc8w), exact int32 sums of int8 products, and the two scales and the bias
// applied in a float epilogue (f32 output). The sums are formed 4 bytes at a time (kQd8Group)
// by one ISA's kernels per Arch (qd8_isa's table): AVX-512 VNNI's vpdpbusd, x86's pmaddubsw,
// NEON's SMULL, SDOT or SMMLA, Helium's VMLADAV, two of ARM DSP's SMLAD, or plain C++
// elsewhere. The kernels and their names: kernels/qd8/ (the grammar: qd8/generic.hpp). This
// file holds what every ISA shares: the blocking, the packing's layout, the float epilogue and
// the entry points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/executor.hpp"
#include "microattn/internal/elem.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/qd8/dsp.hpp"
#include "microattn/kernels/qd8/generic.hpp"
#include "microattn/kernels/qd8/mve.hpp"
#include "microattn/kernels/qd8/neon.hpp"
#include "microattn/kernels/qd8/x86.hpp"
#include "microattn/layout.hpp"

MICROATTN_GCC12_AVX512_WARNINGS_OFF

namespace microattn {
namespace kernels {

/// The integer kernels Arch runs: the first row of this table whose ISA the build has and
/// whose vectors Arch is (kQd8Runs, in each ISA's file).
template <class Arch>
constexpr Qd8Isa qd8_isa() noexcept {
  constexpr Qd8Isa kTable[] = {
      Qd8Isa::kAvx512Vnni,  // internal::kIsAvx512
      Qd8Isa::kAvx2,        // the 8-float x86 archs, and AVX-512 without VNNI
      Qd8Isa::kSsse3,       // the 4-float x86 archs
      Qd8Isa::kNeonI8mm,    // NEON, by what the build's -march has
      Qd8Isa::kNeonSdot,   Qd8Isa::kNeonSmull,
      Qd8Isa::kMve,  // MveArch
      Qd8Isa::kDsp,  // what is left on a core with the DSP extension: ScalarArch
  };
  constexpr bool kRuns[] = {
      kQd8Runs<Qd8Isa::kAvx512Vnni, Arch>, kQd8Runs<Qd8Isa::kAvx2, Arch>,
      kQd8Runs<Qd8Isa::kSsse3, Arch>,      kQd8Runs<Qd8Isa::kNeonI8mm, Arch>,
      kQd8Runs<Qd8Isa::kNeonSdot, Arch>,   kQd8Runs<Qd8Isa::kNeonSmull, Arch>,
      kQd8Runs<Qd8Isa::kMve, Arch>,        kQd8Runs<Qd8Isa::kDsp, Arch>,
  };
  static_assert(sizeof kRuns == sizeof kTable / sizeof kTable[0], "one row each");
  for (std::size_t i = 0; i < sizeof kRuns; ++i)
    if (kRuns[i]) return kTable[i];
  return Qd8Isa::kGeneric;
}

/// The integer kernels' choices for Arch: kIsa and its Kernels (kernels/qd8/), and
///   kFlip  a quantised row's bytes are its values xor kFlip (VNNI: 0x80, i.e. q + 128, as
///          vpdpbusd takes unsigned bytes for A; the sums subtract 128 times the weight column
///          sums);
///   kGroupBytes  bytes of one group of a quantised row or packed column (DSP: 8, each group's
///          4 values widened to SMLAD's two int16 pairs);
///   kRun   groups a packed column holds together (Helium's VMLADAV: 4, 16 bytes; I8MM's SMMLA:
///          2, qd8_pack_at);
///   kMR x kNR  micro-tile; kKC  depth of one packed weight panel (the fp32 panel's bytes);
///   kVnni ... kPlainC  which ISA, one bool each (what the tests ask).
template <class Arch>
struct Qd8Params {
  static constexpr Qd8Isa kIsa = qd8_isa<Arch>();
  using Kernels = Qd8Kernels<kIsa>;
  static constexpr bool kVnni = kIsa == Qd8Isa::kAvx512Vnni;
  static constexpr bool kAvx2 = kIsa == Qd8Isa::kAvx2;
  static constexpr bool kSsse3 = kIsa == Qd8Isa::kSsse3;
  static constexpr bool kMaddubs = kAvx2 || kSsse3;  ///< either x86 pmaddubsw family
  static constexpr bool kI8mm = kIsa == Qd8Isa::kNeonI8mm;
  static constexpr bool kNeon =
      kI8mm || kIsa == Qd8Isa::kNeonSdot || kIsa == Qd8Isa::kNeonSmull;  ///< any NEON tile
  static constexpr bool kHelium = kIsa == Qd8Isa::kMve;
  static constexpr bool kDsp = kIsa == Qd8Isa::kDsp;
  /// No intrinsics kernel: the plain C++ loops (only then instantiated: unrolled, they cost
  /// GCC 12 most of a minute per file with AVX-512).
  static constexpr bool kPlainC = kIsa == Qd8Isa::kGeneric;
  static constexpr unsigned char kFlip = Kernels::kFlip;
  static constexpr std::size_t kMR = Kernels::template mr<Arch>();
  static constexpr std::size_t kNR = internal::Tiles<Arch>::kNR;
  static constexpr std::size_t kGroupBytes = Kernels::kGroupBytes;
  static constexpr std::size_t kKC =
      kQd8Group * internal::Tiles<Arch>::kKC * kQd8Group / kGroupBytes;
  static constexpr std::size_t kRun = Kernels::kRun;
  static_assert(kKC / kQd8Group % kRun == 0, "whole runs in a full panel (I8MM pads the last)");
  static_assert(kNR % Kernels::kColumns == 0,
                "VNNI and AVX2 panels are whole 16-column vectors or pairs of 8, NEON and SSE "
                "ones 4-column vectors, DSP ones column pairs");
};

/// Bytes a quantised row of K values takes on Arch (see Qd8Rows): whole groups (zero values
/// past K), 4 bytes each, or 8 where kDsp widens them.
template <class Arch>
constexpr std::size_t qd8_row_bytes(std::size_t K) noexcept {
  return (K + kQd8Group - 1) / kQd8Group * Qd8Params<Arch>::kGroupBytes;
}

/// Floats of the packing buffer qd8_f32_qc8w_gemm needs for Arch (its int8 panel).
template <class Arch>
constexpr std::size_t qd8_pack_floats() noexcept {
  using P = Qd8Params<Arch>;
  return P::kKC / kQd8Group * P::kGroupBytes * P::kNR / sizeof(float);
}

/// Rows of quantised activations: row i stands for scale[i] * v(i, k), k < K, v the int8
/// values at q + i * ld (ld >= qd8_row_bytes<Arch>(K); qd8_value reads one): bytes whose bits
/// xor Qd8Params::kFlip are v, or with kDsp per group of 4 two words of int16 pairs (v0, v2),
/// (v1, v3); zero values past K up to whole groups.
struct Qd8Rows {
  const std::int8_t* q;
  std::size_t ld;
  const float* scale;
  Qd8Rows from(std::size_t i) const noexcept { return {q + i * ld, ld, scale + i}; }
};

/// The value v(k) of a quantised row (Qd8Rows) on Arch.
template <class Arch>
inline int qd8_value(const std::int8_t* row, std::size_t k) noexcept {
  using P = Qd8Params<Arch>;
  if constexpr (P::kDsp) {
    std::int16_t h;  // word (k & 1) of group k / 4, half k / 2 % 2 (little-endian)
    std::memcpy(&h, row + k / kQd8Group * P::kGroupBytes + 4 * (k & 1) + 2 * ((k >> 1) & 1),
                sizeof h);
    return h;
  } else {
    return static_cast<std::int8_t>(static_cast<unsigned char>(row[k]) ^ P::kFlip);
  }
}

namespace detail {
/// max |x[k]| over K floats, or NaN when one of them is not finite.
template <class Arch>
MICROATTN_ALWAYS_INLINE inline float qd8_absmax(std::size_t K, const float* x) noexcept {
  return Qd8Params<Arch>::Kernels::template absmax<Arch>(K, x);
}

/// q[k] = (internal::round_to_int8(x[k] * inv)) xor kFlip for K floats.
template <class Arch>
MICROATTN_ALWAYS_INLINE inline void qd8_quantize_values(std::size_t K, const float* x, float inv,
                                                        std::int8_t* q) noexcept {
  Qd8Params<Arch>::Kernels::template quantize<Arch>(K, x, inv, q);
}

/// The epilogue of every integer product, one output: p = sa * (sb * float(s)), then y = p +
/// bias (with a bias; without one y = p): these roundings in this order and nothing fused, on
/// every arch (docs/quantization.md, "The same bits on every target"). An FMA exists on some
/// targets only (SSE2, Cortex-M0/M3, armv7 without VFPv4 have none) and GCC contracts a * b + c
/// into one wherever it exists, in ISO C++ too, in some inlined copies and not others: so each
/// product goes through an empty asm statement (no instruction) that the compiler can neither
MICROATTN_ALWAYS_INLINE inline float qd8_scale(float sa, float sb, std::int32_t s) noexcept {
  using V = internal::Vec<ScalarArch>;
  return sa * V::opaque(sb * static_cast<float>(s));
}
MICROATTN_ALWAYS_INLINE inline float qd8_dequant(float sa, float sb, std::int32_t s,
                                                 float bias) noexcept {
  return internal::Vec<ScalarArch>::opaque(qd8_scale(sa, sb, s)) + bias;
}

/// Whether Arch's float epilogue runs on xsimd batches (every xsimd arch; not ScalarArch,
/// not MveArch, which has its own helper).
template <class Arch>
constexpr bool qd8_xsimd_epilogue() noexcept {
#if MICROATTN_HAS_XSIMD
  return !std::is_same<Arch, ScalarArch>::value;
#else
  return false;
#endif
}

#if MICROATTN_HAS_XSIMD
/// qd8_scale and qd8_dequant on a vector of outputs (the same operations, lane by lane).
template <class Arch>
MICROATTN_ALWAYS_INLINE inline xsimd::batch<float, Arch> qd8_scale(
    float sa, const xsimd::batch<float, Arch>& sb,
    const xsimd::batch<std::int32_t, Arch>& s) noexcept {
  using F = xsimd::batch<float, Arch>;
  return F(sa) * internal::Vec<Arch>::opaque(sb * xsimd::to_float(s));
}
template <class Arch>
MICROATTN_ALWAYS_INLINE inline xsimd::batch<float, Arch> qd8_dequant(
    float sa, const xsimd::batch<float, Arch>& sb, const xsimd::batch<std::int32_t, Arch>& s,
    const xsimd::batch<float, Arch>& bias) noexcept {
  return internal::Vec<Arch>::opaque(qd8_scale<Arch>(sa, sb, s)) + bias;
}
#endif

/// y[j] = qd8_dequant(sa, sb[j], s[j], bias[j]) for j < n (kBias), or qd8_scale(sa, sb[j],
/// s[j]) (bias not read: may be null), by vectors where Arch has them.
template <class Arch, bool kBias>
MICROATTN_ALWAYS_INLINE inline void qd8_dequant_n(std::size_t n, float sa, const float* sb,
                                                  const std::int32_t* s, const float* bias,
                                                  float* y) noexcept {
  std::size_t j = 0;
#if MICROATTN_HAS_XSIMD
  if constexpr (qd8_xsimd_epilogue<Arch>()) {
    using F = xsimd::batch<float, Arch>;
    using I = xsimd::batch<std::int32_t, Arch>;
    constexpr std::size_t W = F::size;
    for (; j + W <= n; j += W) {
      const F sbv = F::load_unaligned(sb + j);
      const I sv = I::load_unaligned(s + j);
      if constexpr (kBias)
        qd8_dequant<Arch>(sa, sbv, sv, F::load_unaligned(bias + j)).store_unaligned(y + j);
      else
        qd8_scale<Arch>(sa, sbv, sv).store_unaligned(y + j);
    }
  }
#endif
#if MICROATTN_HAS_MVE
  if constexpr (std::is_same<Arch, MveArch>::value)
    for (; j + 4 <= n; j += 4)
      qd8_dequant4__mve<kBias>(sa, sb + j, vld1q_s32(s + j), kBias ? bias + j : nullptr, y + j);
#endif
  for (; j < n; ++j)
    y[j] = kBias ? qd8_dequant(sa, sb[j], s[j], bias[j]) : qd8_scale(sa, sb[j], s[j]);
}
/// qd8_dequant_n with bias null meaning none (two loops, not bias ? bias[j] : 0: no
/// compiler turns the choice into masked loads from a null pointer; see Qd8Epilogue).
template <class Arch>
MICROATTN_ALWAYS_INLINE inline void qd8_dequant_row(std::size_t n, float sa, const float* sb,
                                                    const std::int32_t* s, const float* bias,
                                                    float* y) noexcept {
  if (bias)
    qd8_dequant_n<Arch, true>(n, sa, sb, s, bias, y);
  else
    qd8_dequant_n<Arch, false>(n, sa, sb, s, nullptr, y);
}

}  // namespace detail

/// Quantises x[0 .. K) into q[0 .. qd8_row_bytes<Arch>(K)) (see Qd8Rows) and returns its
/// scale: s = max |x| / 127 and v = x * (127 / max |x|) rounded to nearest (ties to even),
/// so |x - s v| <= s / 2 (plus a few ulps of the two divisions). All-zero x: s = 0, v = 0;
/// an x that is not finite: s = NaN (what it multiplies becomes NaN, as in fp32), v = 0.
template <class Arch>
inline float qd8_quantize_row(std::size_t K, const float* x, std::int8_t* q) noexcept {
  constexpr unsigned char kFlip = Qd8Params<Arch>::kFlip;
  const std::size_t kp4 = (K + kQd8Group - 1) / kQd8Group * kQd8Group;  // bytes before widening
  const float amax = detail::qd8_absmax<Arch>(K, x);
  if (!(amax > 0.0f)) {  // all zero, or not finite (NaN)
    for (std::size_t k = 0; k < qd8_row_bytes<Arch>(K); ++k) q[k] = static_cast<std::int8_t>(kFlip);
    return amax == 0.0f ? 0.0f : __builtin_nanf("");
  }
  const float s = amax / internal::opaque_divisor(127.0f);
  const float inv = 127.0f / internal::opaque_divisor(amax);
  if (!internal::finite_bits(inv)) {  // max |x| tiny: divide each value by s instead
    for (std::size_t k = 0; k < K; ++k)
      q[k] = static_cast<std::int8_t>(static_cast<unsigned char>(quantize_value(x[k], s)) ^ kFlip);
  } else {
    detail::qd8_quantize_values<Arch>(K, x, inv, q);
  }
  for (std::size_t k = K; k < kp4; ++k) q[k] = static_cast<std::int8_t>(kFlip);
  Qd8Params<Arch>::Kernels::widen(q, kp4 / kQd8Group);  // (DSP: into int16 pairs)
  return s;
}

/// qd8_quantize_row of each of M rows of x (row stride ldx) into q (row stride ldq >=
/// qd8_row_bytes<Arch>(K)), the scales into scale[0 .. M).
template <class Arch>
inline void qd8_quantize_rows(std::size_t M, std::size_t K, const float* x, std::size_t ldx,
                              std::int8_t* q, std::size_t ldq, float* scale) noexcept {
  for (std::size_t i = 0; i < M; ++i)
    scale[i] = qd8_quantize_row<Arch>(K, x + i * ldx, q + i * ldq);
}

namespace detail {
/// Byte offset of column j's group g in a packed panel of `groups` groups: (g kNR + j)
/// groups in, or runs of kRun groups per column: kHelium's of 4 (16 bytes; the last run, of
/// w < 4 groups, 4 w bytes per column), kI8mm's of 2 (8 bytes, SMMLA's operand; an odd last
/// group is completed by a zero group, qd8_pack_panel).
template <class Arch>
constexpr std::size_t qd8_pack_at(std::size_t g, std::size_t j, std::size_t groups) noexcept {
  using P = Qd8Params<Arch>;
  if constexpr (P::kRun > 1) {
    constexpr std::size_t R = P::kRun;
    const std::size_t s = g / R, w = P::kI8mm ? R : internal::min_size(R, groups - R * s);
    return (R * s * P::kNR + j * w + g % R) * kQd8Group;
  } else {
    return (g * P::kNR + j) * P::kGroupBytes;
  }
}

/// Packs B's kc x nr panel (depth pc, columns jc) as the micro-kernels read it: group g of
/// column j (B(pc + 4 g + r, jc + j), r < 4) at pack + qd8_pack_at(g, j, groups), zero past
/// kc and nr (kDsp: each group widened, Kernels::put_group; kI8mm: a zero group after an
/// odd last one); colsum[j] = the sum of column j over the panel, for the VNNI kernels'
/// offset correction (zero elsewhere).
template <class Arch>
inline void qd8_pack_panel(const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                           std::size_t pc, std::size_t kc, std::size_t jc, std::size_t nr,
                           std::int8_t* pack, std::int32_t* colsum) noexcept {
  using P = Qd8Params<Arch>;
  constexpr std::size_t NR = P::kNR, G = kQd8Group;
  const std::size_t groups = (kc + G - 1) / G;
  std::size_t g0 = 0;
  if (nr == NR) g0 = P::Kernels::template pack<Arch>(b, ldb, layout, pc, kc, jc, pack, colsum);
  if (!P::kVnni || g0 == 0)  // (the VNNI packing wrote them)
    for (std::size_t j = 0; j < NR; ++j) colsum[j] = 0;
  // Column n's values B(pc + k, n) at src + k * sk for the layout.
  const std::size_t sk = layout == WeightLayout::kInOut   ? ldb
                         : layout == WeightLayout::kOutIn ? 1
                                                          : kWeightPanel;
  for (std::size_t g = g0; g < groups; ++g) {
    const std::size_t k0 = g * G, nk = internal::min_size(G, kc - k0);
    for (std::size_t j = 0; j < NR; ++j) {
      std::uint32_t w = 0;  // the group's 4 bytes, k = k0 .. k0 + 3 (zero past kc and nr)
      if (j < nr) {
        const std::size_t n = jc + j, kk = pc + k0;
        const std::int8_t* src =
            layout == WeightLayout::kInOut ? b + kk * ldb + n
            : layout == WeightLayout::kOutIn
                ? b + n * ldb + kk
                : b + (n / kWeightPanel) * ldb + kk * kWeightPanel + n % kWeightPanel;
        for (std::size_t r = 0; r < nk; ++r) {
          w |= std::uint32_t{static_cast<unsigned char>(src[r * sk])} << (8 * r);
          if constexpr (P::kFlip != 0) colsum[j] += src[r * sk];  // only VNNI corrects by it
        }
      }
      P::Kernels::put_group(pack + qd8_pack_at<Arch>(g, j, groups), w);
    }
  }
  if constexpr (P::kI8mm) {  // the last run's second group (the pack buffer has room: kRun)
    if (groups % 2 != 0)
      for (std::size_t j = 0; j < NR; ++j)
        std::memset(pack + qd8_pack_at<Arch>(groups, j, groups), 0, G);
  }
}

/// The int32 sums of an mr x NR micro-tile (mr <= kMR): acc(i, j) = sum over `groups` groups
/// of a's row i (row stride lda, bytes as Qd8Rows) times the packed panel's column j, handed to
/// out.rows<MR>(s) (s[i][j]), or (the DSP's column pairs) out.sums(i, j0, s, n) for columns
/// j0 .. j0 + n of row i.
template <class Arch, std::size_t MR, class Out>
MICROATTN_ALWAYS_INLINE inline void qd8_ukernel(std::size_t groups, const std::int8_t* a,
                                                std::size_t lda, const std::int8_t* pack,
                                                Out& out) noexcept {
  // The loops over rows and columns are unrolled at every -O level: rolled, the sums live
  // in memory (as the fp32 micro-kernel's, f32_gemm.hpp).
  const std::int8_t* arow[MR];
#pragma GCC unroll 64
  for (std::size_t i = 0; i < MR; ++i) arow[i] = a + i * lda;
  Qd8Params<Arch>::Kernels::template sums<Arch, MR>(groups, arow, pack, out);
}

/// qd8_ukernel for any mr in 1 .. kMR rows.
template <class Arch, std::size_t MR, class Out>
struct Qd8UkernelRows {
  static void call(std::size_t mr, std::size_t groups, const std::int8_t* a, std::size_t lda,
                   const std::int8_t* pack, Out& out) noexcept {
    if (mr == MR) return qd8_ukernel<Arch, MR>(groups, a, lda, pack, out);
    Qd8UkernelRows<Arch, MR - 1, Out>::call(mr, groups, a, lda, pack, out);
  }
};
template <class Arch, class Out>
struct Qd8UkernelRows<Arch, 0, Out> {
  static void call(std::size_t, std::size_t, const std::int8_t*, std::size_t, const std::int8_t*,
                   Out&) noexcept {}
};

/// A depth block's place in a product (qd8_blocks): not the first (the sums so far are
/// kept), not the last (its sums are kept for the next).
constexpr unsigned char kQd8NotFirst = 1;
constexpr unsigned char kQd8NotLast = 2;

/// The blocking of the integer GEMM: panels of kNR columns, depth blocks of kKC bytes, each
/// panel packed once (it is reused by all M rows: the driver hands over at most a row block
/// of the fp32 GEMM's kMC rows), then the kMR-row micro-tiles; tile(ir, mr, jc, nr, block,
/// colsum, sums) runs a micro-tile's sums of one depth block through its epilogue,
/// sums(out) computing them into out; block: kQd8NotFirst | kQd8NotLast as the block is (0
/// for K <= kKC).
template <class Arch, class Tile>
inline void qd8_blocks(std::size_t M, std::size_t N, std::size_t K, const std::int8_t* qa,
                       std::size_t lda, const std::int8_t* b, std::size_t ldb, WeightLayout layout,
                       float* pack_f, Tile& tile) noexcept {
  using P = Qd8Params<Arch>;
  constexpr std::size_t NR = P::kNR, MR = P::kMR, KC = P::kKC;
  std::int8_t* pack = reinterpret_cast<std::int8_t*>(pack_f);
  std::int32_t colsum[NR];
  for (std::size_t jc = 0; jc < N; jc += NR) {
    const std::size_t nr = internal::min_size(NR, N - jc);
    for (std::size_t pc = 0; pc < K; pc += KC) {
      const std::size_t kc = internal::min_size(KC, K - pc);
      qd8_pack_panel<Arch>(b, ldb, layout, pc, kc, jc, nr, pack, colsum);
      const std::size_t groups = (kc + kQd8Group - 1) / kQd8Group;
      const unsigned char block = static_cast<unsigned char>((pc == 0 ? 0 : kQd8NotFirst) |
                                                             (pc + kc == K ? 0 : kQd8NotLast));
      for (std::size_t ir = 0; ir < M; ir += MR) {
        const std::size_t mr = internal::min_size(MR, M - ir);
        const std::int8_t* ablk = qa + ir * lda + pc / kQd8Group * P::kGroupBytes;
        tile(ir, mr, jc, nr, block, colsum, [&](auto& out) {
          Qd8UkernelRows<Arch, MR, std::remove_reference_t<decltype(out)>>::call(mr, groups, ablk,
                                                                                 lda, pack, out);
        });
      }
    }
  }
}

/// Qd8Epilogue for `rows` rows, columns [j0, j1), of a product deeper than one depth block
/// (mode: kQd8NotFirst, kQd8NotLast, 4 for a bias; s, acc, t: row stride ld): v = s(i, j) -
/// kOff colsum[j] (+ acc(i, j)) into acc(i, j), or in the last block through the float
/// epilogue into t(i, j). By vectors on the xsimd archs (inlined there: out of line it cost
/// AVX-512's two-block GEMM 1.5 %), out of line on the others (one call per micro-tile; a
/// block of kKC bytes amortises it, and a microcontroller's flash keeps one copy).
template <class Arch, std::int32_t kOff>
MICROATTN_ALWAYS_INLINE inline void qd8_deep_rows_inline(
    std::size_t rows, std::size_t ld, unsigned mode, const std::int32_t* s,
    const std::int32_t* colsum, std::int32_t* acc, const float* sa, const float* sb,
    const float* bias, float* t, std::size_t j0, std::size_t j1) noexcept {
  // kOut: 0 the sums into acc, 1 the epilogue without a bias, 2 with one (each loop
  // branch-free).
  auto run = [&](auto add, auto out) {
    constexpr bool kAdd = decltype(add)::value;
    constexpr int kOut = decltype(out)::value;
    const std::int32_t* si = s;
    std::int32_t* ai = acc;
    float* ti = t;
    for (std::size_t i = 0; i < rows; ++i, si += ld, ai += ld, ti += ld) {
      std::size_t j = j0;
#if MICROATTN_HAS_XSIMD
      if constexpr (qd8_xsimd_epilogue<Arch>()) {
        using F = xsimd::batch<float, Arch>;
        using I = xsimd::batch<std::int32_t, Arch>;
        for (; j + I::size <= j1; j += I::size) {
          I v = I::load_unaligned(si + j);
          if constexpr (kOff != 0) v = v - I::load_unaligned(colsum + j) * I(kOff);
          if constexpr (kAdd) v = v + I::load_unaligned(ai + j);
          if constexpr (kOut == 0)
            v.store_unaligned(ai + j);
          else if constexpr (kOut == 2)
            qd8_dequant<Arch>(sa[i], F::load_unaligned(sb + j), v, F::load_unaligned(bias + j))
                .store_unaligned(ti + j);
          else
            qd8_scale<Arch>(sa[i], F::load_unaligned(sb + j), v).store_unaligned(ti + j);
        }
        // Whole vectors only here (the micro-tiles' rows; a scalar tail drew GCC 12's
        // -Waggressive-loop-optimizations under -Ofast).
        MICROATTN_ASSERT(j == j1);
      } else
#endif
      {
        for (; j < j1; ++j) {
          std::int32_t v = si[j] - kOff * colsum[j];
          if constexpr (kAdd) v += ai[j];
          if constexpr (kOut == 0)
            ai[j] = v;
          else if constexpr (kOut == 2)
            ti[j] = qd8_dequant(sa[i], sb[j], v, bias[j]);
          else
            ti[j] = qd8_scale(sa[i], sb[j], v);
        }
      }
    }
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (mode & kQd8NotLast) {
    if (mode & kQd8NotFirst)
      run(Yes{}, std::integral_constant<int, 0>{});
    else
      run(No{}, std::integral_constant<int, 0>{});
  } else if (mode & 4u) {  // the last of several blocks: acc holds the sums so far
    run(Yes{}, std::integral_constant<int, 2>{});
  } else {
    run(Yes{}, std::integral_constant<int, 1>{});
  }
}

template <class Arch, std::int32_t kOff>
MICROATTN_NOINLINE inline void qd8_deep_rows_call(std::size_t rows, std::size_t ld, unsigned mode,
                                                  const std::int32_t* s, const std::int32_t* colsum,
                                                  std::int32_t* acc, const float* sa,
                                                  const float* sb, const float* bias, float* t,
                                                  std::size_t j0, std::size_t j1) noexcept {
  qd8_deep_rows_inline<Arch, kOff>(rows, ld, mode, s, colsum, acc, sa, sb, bias, t, j0, j1);
}
template <class Arch, std::int32_t kOff>
MICROATTN_ALWAYS_INLINE inline void qd8_deep_rows(std::size_t rows, std::size_t ld, unsigned mode,
                                                  const std::int32_t* s, const std::int32_t* colsum,
                                                  std::int32_t* acc, const float* sa,
                                                  const float* sb, const float* bias, float* t,
                                                  std::size_t j0, std::size_t j1) noexcept {
  if constexpr (qd8_xsimd_epilogue<Arch>())
    qd8_deep_rows_inline<Arch, kOff>(rows, ld, mode, s, colsum, acc, sa, sb, bias, t, j0, j1);
  else
    qd8_deep_rows_call<Arch, kOff>(rows, ld, mode, s, colsum, acc, sa, sb, bias, t, j0, j1);
}

/// A micro-tile's epilogue for one depth block: v(i, j) = sum - off * colsum[j] (+ acc(i,
/// j) unless the first block), exact in int32; the last block's v goes through the float
/// epilogue, t(i, j) = qd8_dequant(sa[i], sb[j], v, bias[j]) (with a bias) or
/// qd8_scale(sa[i], sb[j], v), earlier blocks' into acc(i, j). So the result is one float
/// epilogue of the whole exact sum, whatever the arch's depth block kKC, and the GEMV's
/// bits (t and acc: row stride kNR). bias is the panel's bias row, zeros without a bias:
/// never null, so no compiler turns the choice into masked loads from a null pointer
/// (microcode assists; docs/compiler-notes.md).
template <class Arch>
struct Qd8Epilogue {
  /// mode: the block (qd8_blocks) and kBias in one byte, tested once per micro-tile (0 or
  /// kBias: the one-block product, every product with K <= kKC).
  static constexpr unsigned char kAddAcc = kQd8NotFirst;   ///< acc holds the sums so far
  static constexpr unsigned char kKeepInts = kQd8NotLast;  ///< v into acc
  static constexpr unsigned char kBias = 4;                ///< a bias (the last block's)
  float* t;
  std::int32_t* acc;
  const float* sa;
  const float* sb;
  const float* bias;
  const std::int32_t* colsum;
  unsigned char mode;
  static constexpr std::int32_t kOff = Qd8Params<Arch>::kFlip ? 128 : 0;
  static constexpr std::size_t NR = Qd8Params<Arch>::kNR;

  /// The MR rows of a micro-tile's sums s[i][j].
  template <std::size_t MR>
  MICROATTN_ALWAYS_INLINE void rows(const std::int32_t (&s)[MR][NR]) const noexcept {
    const unsigned m = mode;
    if (m == 0) {
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i) one_block<false>(i, 0, s[i], NR);
    } else if (m == kBias) {
#pragma GCC unroll 64
      for (std::size_t i = 0; i < MR; ++i) one_block<true>(i, 0, s[i], NR);
    } else {
      qd8_deep_rows<Arch, kOff>(MR, NR, m, s[0], colsum, acc, sa, sb, bias, t, 0, NR);
    }
  }
  /// Columns j0 .. j0 + n of row i from n sums at s (the DSP's column pairs; on the xsimd
  /// archs whole vectors).
  MICROATTN_ALWAYS_INLINE void sums(std::size_t i, std::size_t j0, const std::int32_t* s,
                                    std::size_t n = NR) const noexcept {
    const unsigned m = mode;
    if (m == 0)
      one_block<false>(i, j0, s, n);
    else if (m == kBias)
      one_block<true>(i, j0, s, n);
    else
      qd8_deep_rows<Arch, kOff>(1, NR, m, s - j0, colsum, acc + i * NR, sa + i, sb, bias,
                                t + i * NR, j0, j0 + n);
  }

 private:
  /// A one-block product's columns j0 .. j0 + n of row i (kB: with a bias).
  template <bool kB>
  MICROATTN_ALWAYS_INLINE void one_block(std::size_t i, std::size_t j0, const std::int32_t* s,
                                         std::size_t n) const noexcept {
    // (Members in locals: the Cortex-M loops then keep them in registers.)
    float* ti = t + i * NR;
    const float* sbj = sb;
    const float* bj = bias;
    const std::int32_t* cj = colsum;
    const float si = sa[i];
    const std::int32_t* sj = s - j0;
    std::size_t j = j0;
#if MICROATTN_HAS_XSIMD
    if constexpr (detail::qd8_xsimd_epilogue<Arch>()) {
      using F = xsimd::batch<float, Arch>;
      using I = xsimd::batch<std::int32_t, Arch>;
      for (; j + I::size <= j0 + n; j += I::size) {
        I v = I::load_unaligned(sj + j);
        if constexpr (kOff != 0) v = v - I::load_unaligned(cj + j) * I(kOff);
        const F sbv = F::load_unaligned(sbj + j);
        if constexpr (kB)
          detail::qd8_dequant<Arch>(si, sbv, v, F::load_unaligned(bj + j)).store_unaligned(ti + j);
        else
          detail::qd8_scale<Arch>(si, sbv, v).store_unaligned(ti + j);
      }
    }
#endif
#if MICROATTN_HAS_MVE
    if constexpr (Qd8Params<Arch>::kHelium)  // (no offset: kOff is 0)
      for (; j + 4 <= j0 + n; j += 4)
        qd8_dequant4__mve<kB>(si, sbj + j, vld1q_s32(sj + j), kB ? bj + j : nullptr, ti + j);
#endif
    for (; j < j0 + n; ++j) {
      const std::int32_t v = sj[j] - kOff * cj[j];
      ti[j] = kB ? detail::qd8_dequant(si, sbj[j], v, bj[j]) : detail::qd8_scale(si, sbj[j], v);
    }
  }
};
/// The int32 sums' epilogue of qd8_qc8w_gemm_i32: c(i, j) = (first ? 0 : c(i, j)) + sum -
/// off * colsum[j] for the nr valid columns.
template <class Arch>
struct Qd8SumsOut {
  static constexpr std::int32_t kOff = Qd8Params<Arch>::kFlip ? 128 : 0;
  std::int32_t* c;
  std::size_t ldc, nr;
  const std::int32_t* colsum;
  bool first;
  template <std::size_t MR>
  void rows(const std::int32_t (&s)[MR][Qd8Params<Arch>::kNR]) const noexcept {
    for (std::size_t i = 0; i < MR; ++i) sums(i, 0, s[i]);
  }
  void sums(std::size_t i, std::size_t j0, const std::int32_t* s,
            std::size_t n = Qd8Params<Arch>::kNR) const noexcept {
    for (std::size_t j = j0; j < j0 + n && j < nr; ++j) {
      const std::int32_t v = s[j - j0] - kOff * colsum[j];
      c[i * ldc + j] = first ? v : c[i * ldc + j] + v;
    }
  }
};

}  // namespace detail

/// C = A · B (+ bias) with integer compute: A[M][K] given quantised (Qd8Rows a), B a weight
/// matrix of int8 q(k, n) with per-column scales b_scale (B(k, n) = b_scale[n] q(k, n))
/// stored in b_layout as for f32_gemm, C(m, n) = (a.scale[m] * (b_scale[n] * sum_k v(m, k)
/// q(k, n)))
/// (+ bias[n]; bias may be null) with the sum exact in int32 over all of K (|sum| < 2^31: K
/// up to 133 000) and the floats of detail::qd8_dequant: the same bits on every arch and as
/// qd8_f32_qc8w_gemv's. Written through store, whose rows (store.row) hold the int32 sums
/// between depth blocks of Qd8Params::kKC. pack: qd8_pack_floats<Arch>() floats. b_scale
/// and bias must cover N columns padded to nothing: the epilogue reads b_scale[jc + j] and
/// bias[jc + j] for j < kNR only where jc + j < N.
template <class Arch, class Store>
void qd8_f32_qc8w_gemm(std::size_t M, std::size_t N, std::size_t K, const Qd8Rows& a,
                       const std::int8_t* b, std::size_t ldb, WeightLayout b_layout,
                       const float* b_scale, const float* bias, Store store, float* pack) noexcept {
  using P = Qd8Params<Arch>;
  constexpr std::size_t NR = P::kNR, MR = P::kMR, kAlign = internal::Tiles<Arch>::kAlign;
  alignas(kAlign) float tile[MR * NR];
  alignas(kAlign) std::int32_t acc[MR * NR];  // a deep product's sums between depth blocks
  alignas(kAlign) float sb[NR] = {};
  alignas(kAlign) float bb[NR] = {};
  std::size_t last_jc = ~std::size_t{0};
  using Epi = detail::Qd8Epilogue<Arch>;
  const unsigned char with_bias = bias ? Epi::kBias : 0;
  auto run = [&](std::size_t ir, std::size_t mr, std::size_t jc, std::size_t nr,
                 unsigned char block, const std::int32_t* colsum, auto&& sums) {
    if (jc != last_jc) {  // the panel's scales and bias, zero past N
      for (std::size_t j = 0; j < NR; ++j) sb[j] = j < nr ? b_scale[jc + j] : 0.0f;
      if (bias)  // (bb stays zero without a bias: no loads from a null pointer)
        for (std::size_t j = 0; j < NR; ++j) bb[j] = j < nr ? bias[jc + j] : 0.0f;
      last_jc = jc;
    }
    // K past one depth block: the int32 sums so far wait in C's own memory (its bytes,
    // copied as bytes: no float operation touches them), so the epilogue sees the exact
    // whole sum. (Whole panels copied with a constant size: inlined as vector moves.)
    auto copy_ints = [nr](void* to, const void* from) {
      if (nr == P::kNR)
        std::memcpy(to, from, P::kNR * sizeof(std::int32_t));
      else
        std::memcpy(to, from, nr * sizeof(std::int32_t));
    };
    if (block & detail::kQd8NotFirst)
      for (std::size_t i = 0; i < mr; ++i) copy_ints(acc + i * NR, store.row(ir + i, jc));
    Epi out{tile, acc, a.scale + ir, sb, bb, colsum, static_cast<unsigned char>(block | with_bias)};
    sums(out);
    if (block & detail::kQd8NotLast) {
      for (std::size_t i = 0; i < mr; ++i) copy_ints(store.row(ir + i, jc), acc + i * NR);
    } else {
      detail::gemm_tile_copy<Arch>(false, store, ir, mr, jc, nr, tile);
    }
  };
  detail::qd8_blocks<Arch>(M, N, K, a.q, a.ld, b, ldb, b_layout, pack, run);
}

/// The exact int32 sums of qd8_f32_qc8w_gemm without scales: c[m * ldc + n] = sum_k v(m, k)
/// q(k, n) (the integer kernels' own test: they must equal an int64 reference bit for bit).
template <class Arch>
void qd8_qc8w_gemm_i32(std::size_t M, std::size_t N, std::size_t K, const Qd8Rows& a,
                       const std::int8_t* b, std::size_t ldb, WeightLayout b_layout,
                       std::int32_t* c, std::size_t ldc, float* pack) noexcept {
  auto run = [&](std::size_t ir, std::size_t, std::size_t jc, std::size_t nr, unsigned char block,
                 const std::int32_t* colsum, auto&& sums) {
    detail::Qd8SumsOut<Arch> out{c + ir * ldc + jc, ldc, nr, colsum,
                                 (block & detail::kQd8NotFirst) == 0};
    sums(out);
  };
  detail::qd8_blocks<Arch>(M, N, K, a.q, a.ld, b, ldb, b_layout, pack, run);
}

namespace detail {
/// sum over k < K of v(k) q(k) for a quantised row (bytes as Qd8Rows) and K contiguous
/// weight bytes w, less the VNNI offset's 128 * sum q(k): exact.
template <class Arch>
MICROATTN_ALWAYS_INLINE inline std::int32_t qd8_dot(std::size_t K, const std::int8_t* a,
                                                    const std::int8_t* w) noexcept {
  return Qd8Params<Arch>::Kernels::template dot<Arch>(K, a, w);
}

/// The sums of 16 consecutive output columns n0 .. n0 + 16 (nc of them valid) of a
/// row-major weight layout, column c of row k at w[k * ld + c] (kInOut: ld = ldw; a
/// kPanel16 panel: ld = 16), into s[0 .. nc): exact.
template <class Arch>
MICROATTN_ALWAYS_INLINE inline void qd8_dot16(std::size_t K, const std::int8_t* a,
                                              const std::int8_t* w, std::size_t ld, std::size_t nc,
                                              std::int32_t* s) noexcept {
  Qd8Params<Arch>::Kernels::template dot16<Arch>(K, a, w, ld, nc, s);
}

/// The sums s[0 .. nc) of nc [out][in] weight columns (column c at w + c * ldw): exact.
template <class Arch>
MICROATTN_ALWAYS_INLINE inline void qd8_dots(std::size_t K, const std::int8_t* a,
                                             const std::int8_t* w, std::size_t ldw, std::size_t nc,
                                             std::int32_t* s) noexcept {
  Qd8Params<Arch>::Kernels::template dots<Arch>(K, a, w, ldw, nc, s);
}
}  // namespace detail

/// y[N] = x · B (+ bias) with integer compute for one quantised row (a:
/// qd8_row_bytes<Arch>(K) bytes as Qd8Rows, scale sa), B as in qd8_f32_qc8w_gemm: y[n] =
/// (sa * (b_scale[n] * sum_k v(k) q(k, n))) (+ bias[n]), exact int32 sums, no packing (each
/// weight byte is read once). Part `part` of `parts`: the columns split in runs of 16 (any
/// split gives the same bits).
template <class Arch>
void qd8_f32_qc8w_gemv(std::size_t N, std::size_t K, const std::int8_t* a, float sa,
                       const std::int8_t* w, std::size_t ldw, WeightLayout layout,
                       const float* b_scale, const float* bias, float* y, std::size_t part = 0,
                       std::size_t parts = 1) noexcept {
  const internal::Range r = internal::split(N, kWeightPanel, part, parts);
  std::int32_t s[kWeightPanel];
  for (std::size_t n0 = r.begin; n0 < r.end; n0 += kWeightPanel) {
    const std::size_t nc = internal::min_size(kWeightPanel, r.end - n0);
    if (layout == WeightLayout::kOutIn) {
      detail::qd8_dots<Arch>(K, a, w + n0 * ldw, ldw, nc, s);
    } else if (layout == WeightLayout::kInOut) {
      detail::qd8_dot16<Arch>(K, a, w + n0, ldw, nc, s);
    } else {
      detail::qd8_dot16<Arch>(K, a, w + (n0 / kWeightPanel) * ldw, kWeightPanel, nc, s);
    }
    detail::qd8_dequant_row<Arch>(nc, sa, b_scale + n0, s, bias ? bias + n0 : nullptr, y + n0);
  }
}

/// Keys formed together by qd8_f32_qs8_scores (a key tile's width must be a multiple).
constexpr std::size_t kQs8Keys = 16;

/// The attention kernels' quantised query rows for integer scores (kOn): kRows rows of
/// qd8_row_bytes<Arch>(kDHead) bytes and their scales; no bytes at all otherwise (an empty
/// base).
template <class Arch, std::size_t kDHead, std::size_t kRows, bool kOn>
struct Qd8QueryRows {
  static constexpr std::size_t kQBytes = qd8_row_bytes<Arch>(kDHead);  ///< a quantised row
  alignas(4) std::int8_t qq[kRows * kQBytes];                          ///< quantised query rows
  float qs[kRows];                                                     ///< their scales
};
template <class Arch, std::size_t kDHead, std::size_t kRows>
struct Qd8QueryRows<Arch, kDHead, kRows, false> {};

/// Integer scores of one quantised query row (qa: K values as Qd8Rows, scale sa) against
/// int8 keys in the int8 cache's K^T layout (value d of key j at kt[d * ld + j], the key's
/// scale k_scale[j]): s[j] = sa * (k_scale[j] * sum_d v(d) kt(d, j)) for a <= j < b, the
/// sums exact in int32. Keys go kQs8Keys at a time from a rounded down (ld: a multiple of
/// kQs8Keys, at least b rounded up); the sums of keys outside [a, b) are formed from
/// whatever the tile holds there and dropped: only s[a .. b) and k_scale[a .. b) are
/// touched.
template <class Arch>
void qd8_f32_qs8_scores(std::size_t K, const std::int8_t* qa, float sa, const std::int8_t* kt,
                        std::size_t ld, std::size_t a, std::size_t b, const float* k_scale,
                        float* s) noexcept {
  std::int32_t sum[kQs8Keys];
  for (std::size_t j0 = a / kQs8Keys * kQs8Keys; j0 < b; j0 += kQs8Keys) {
    detail::qd8_dot16<Arch>(K, qa, kt + j0, ld, kQs8Keys, sum);
    const std::size_t lo = j0 > a ? j0 : a, hi = internal::min_size(j0 + kQs8Keys, b);
    detail::qd8_dequant_row<Arch>(hi - lo, sa, k_scale + lo, sum + (lo - j0), nullptr, s + lo);
  }
}

}  // namespace kernels
}  // namespace microattn

MICROATTN_GCC12_AVX512_WARNINGS_ON