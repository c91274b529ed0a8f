// SPDX-License-Identifier: Apache-2.0
// microattn internal: one small vector interface over xsimd batches and plain floats, and the
// tile sizes each architecture's kernels use. Kernels are written once against Vec<Arch>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/half.hpp"
#include "microattn/internal/intrin_neon.hpp"
#include "microattn/internal/intrin_x86.hpp"

/// MICROATTN_ASSERT(cond): precondition of an inner kernel, checked in debug and sanitizer
/// builds (!NDEBUG) and with MICROATTN_ENABLE_ASSERTS (whatever NDEBUG says), free otherwise.
/// A failed check stops the program without the C library's assert: hosted, a message on stderr
/// and abort(); on bare metal (Cortex-M, -ffreestanding, or MICROATTN_ASSERT_TRAP defined) a
/// trap instruction (UDF: a HardFault/UsageFault whose pc is the failing kernel), because
/// newlib's __assert_func prints with fiprintf, which links malloc and _sbrk into a Debug image.
/// A project may define MICROATTN_ASSERT(cond) itself, identically in every translation unit,
/// before including microattn (e.g. -D'MICROATTN_ASSERT(c)=configASSERT(c)').
#if !defined(MICROATTN_ASSERT)
#if defined(MICROATTN_ENABLE_ASSERTS) || !defined(NDEBUG)
#if (defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M') || \
    (defined(__STDC_HOSTED__) && !__STDC_HOSTED__) || defined(MICROATTN_ASSERT_TRAP)
#define MICROATTN_ASSERT(cond) ((cond) ? (void)0 : __builtin_trap())
#else
#include <cstdio>
#include <cstdlib>
namespace microattn {
namespace internal {
[[noreturn]] inline void assert_failed(const char* cond, const char* file, int line) noexcept {
  std::fprintf(stderr, "%s:%d: microattn: assertion failed: %s\n", file, line, cond);
  std::abort();
}
}  // namespace internal
}  // namespace microattn
#define MICROATTN_ASSERT(cond) \
  ((cond) ? (void)0 : ::microattn::internal::assert_failed(#cond, __FILE__, __LINE__))
#endif
#else
#define MICROATTN_ASSERT(cond) ((void)0)
#endif
#endif

MICROATTN_GCC12_AVX512_WARNINGS_OFF

namespace microattn {
namespace internal {

/// The value of a stored weight or cache element before its scale (the kernels' scalar tails;
/// Vec::load_elem is the vector form).
inline float elem_value(float v) noexcept { return v; }
inline float elem_value(std::int8_t v) noexcept { return static_cast<float>(v); }
inline float elem_value(f16 v) noexcept { return to_float(v); }
inline float elem_value(bf16 v) noexcept { return to_float(v); }

/// True when v is neither infinite nor NaN, decided on its bits (an exponent field of all ones
/// is inf or NaN), which no floating-point optimisation flag can fold away (-ffinite-math-only
/// folds std::isfinite to true).
inline bool finite_bits(float v) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return (u & 0x7f800000u) != 0x7f800000u;
}

constexpr std::size_t round_up(std::size_t n, std::size_t m) noexcept {
  return (n + m - 1) / m * m;
}
constexpr std::size_t min_size(std::size_t a, std::size_t b) noexcept { return a < b ? a : b; }
constexpr std::size_t max_size(std::size_t a, std::size_t b) noexcept { return a > b ? a : b; }

/// Asks the cache for the lines holding bytes [p, p + n), n >= 1, to be read soon: into L2 but
/// not L1 (`prefetcht1` on x86). A hint with no architectural effect, which never faults. A
/// no-op for compilers without GNU builtins.
MICROATTN_ALWAYS_INLINE inline void prefetch_l2(const void* p, std::size_t n) noexcept {
#if defined(__GNUC__)
  const char* c = static_cast<const char*>(p);
  for (std::size_t i = 0; i < n; i += 64) __builtin_prefetch(c + i, 0, 2);
  __builtin_prefetch(c + n - 1, 0, 2);  // the last line, when p does not start one
#else
  (void)p, (void)n;
#endif
}

/// Vector operations on floats for Arch. The primary template wraps xsimd::batch<float, Arch>.
template <class Arch>
struct Vec;

template <>
struct Vec<ScalarArch> {
  using type = float;
  static constexpr std::size_t kWidth = 1;
  static constexpr std::size_t kAlign = alignof(float);
  static constexpr bool kTranspose = false;      ///< see Vec<Arch>::transpose
  static constexpr bool kPairBroadcast = false;  ///< see Vec<Arch>::broadcast_pair

  static type load(const float* p) noexcept { return *p; }
  static type loadu(const float* p) noexcept { return *p; }
  /// kWidth elements at p (floats, or int8 widened to floats), unaligned.
  static type load_elem(const float* p) noexcept { return *p; }
  static type load_elem(const std::int8_t* p) noexcept { return static_cast<float>(*p); }
  static type load_elem(const f16* p) noexcept { return to_float(*p); }
  static type load_elem(const bf16* p) noexcept { return to_float(*p); }
  static void store(float* p, type v) noexcept { *p = v; }
  static void storeu(float* p, type v) noexcept { *p = v; }
  static type set1(float v) noexcept { return v; }
  static type zero() noexcept { return 0.0f; }
  /// a * b + c, fused (one rounding) where the target has a fused multiply-add (Cortex-M4F, M7,
  /// M55, x86 with FMA): explicitly, not left to contraction, so that every form the compiler
  /// gives a loop computes the same bits (MICROATTN_SCALAR_FMA; docs/compiler-notes.md).
  static type fma(type a, type b, type c) noexcept {
#if MICROATTN_SCALAR_FMA_ASM
    __asm__("vfma.f32 %0, %1, %2" : "+t"(c) : "t"(a), "t"(b));
    return c;
#elif MICROATTN_SCALAR_FMA
    return __builtin_fmaf(a, b, c);
#else
    return a * b + c;
#endif
  }
  /// a * b + c with a scalar a (fma_scalar: the GEMM micro-kernel's broadcast A value).
  static type fma_scalar(float a, type b, type c) noexcept { return fma(a, b, c); }
  /// c - a * b.
  static type fnma(type a, type b, type c) noexcept { return c - a * b; }
  static type max(type a, type b) noexcept { return a > b ? a : b; }
  /// max(x, lo) for a constant lo that is not NaN (the exponentials' lower clamp): lo where x is
  /// NaN, as max above. One VMAXNM on the Cortex-M FPUs that have it (FPv5 with double precision,
  /// the M7's fpv5-d16; Armv8-M: M33, M55): no compare and branch splits the scalar softmax's
  /// exponential chains (docs/tuning.md).
#if MICROATTN_CORTEX_M_FPU && ((__ARM_FP & 8) || __ARM_ARCH >= 8)
  static type clamp_below(type x, type lo) noexcept { return __builtin_fmaxf(x, lo); }
#else
  static type clamp_below(type x, type lo) noexcept { return max(x, lo); }
#endif
  /// Softmax weights computed per step of the scalar exp2_row: 4 on the Cortex-M cores with a
  /// double-precision FPU (M7 with fpv5-d16, M55, M85: dual-issue in-order cores overlap four
  /// weights' chains), 1 elsewhere (the M4 issues one at a time; unrolling costs flash) (tuning
  /// knob: docs/tuning.md).
#if MICROATTN_CORTEX_M_FPU && (__ARM_FP & 8)
  static constexpr std::size_t kExpStep = 4;
#else
  static constexpr std::size_t kExpStep = 1;
#endif
  static type min(type a, type b) noexcept { return a < b ? a : b; }
  /// a < b ? t : f, lane by lane.
  static type select_lt(type a, type b, type t, type f) noexcept { return a < b ? t : f; }
  /// The float whose bits are the bits of v shifted left by 23 (builds 2^n in exp).
  static type shl23_bits(type v) noexcept {
    std::uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    u <<= 23;
    float r;
    std::memcpy(&r, &u, sizeof r);
    return r;
  }
  static float hsum(type v) noexcept { return v; }
  static float hmax(type v) noexcept { return v; }
  static type pinned(type v) noexcept { return v; }
  /// Cortex-M with an FPU: the GEMM micro-kernel (4 x 4) loads its k step's four A and four B
  /// values, passes all eight through this empty asm (no instruction), then does its 16
  /// multiply-adds, so the compiler schedules no load between them: on an in-order core a load
  /// after a multiply-add waits for its write-back (docs/tuning.md). The kPanel16 decode GEMV
  /// does the same by groups of 8 weights. The same instructions either way, so the same bits.
#if MICROATTN_CORTEX_M_FPU && defined(__GNUC__)
  static constexpr bool kLoadsFirst = true;
  static void loads_first(float (&a)[4], float (&b)[4]) noexcept {
    __asm__(""
            : "+t"(a[0]), "+t"(a[1]), "+t"(a[2]), "+t"(a[3]), "+t"(b[0]), "+t"(b[1]), "+t"(b[2]),
              "+t"(b[3]));
  }
#else
  static constexpr bool kLoadsFirst = false;
#endif
  /// v, as a value the optimiser knows nothing about (see the xsimd Vec::opaque).
  static type opaque(type v) noexcept {
#if defined(MICROATTN_OPAQUE_F32)
    __asm__("" : MICROATTN_OPAQUE_F32(v));
    return v;
#else
    volatile float t = v;
    return t;
#endif
  }
};

#if MICROATTN_HAS_XSIMD
template <class Arch>
struct Vec {
  using type = xsimd::batch<float, Arch>;
  static constexpr std::size_t kWidth = type::size;
  static constexpr std::size_t kAlign = Arch::alignment();

  static type load(const float* p) noexcept { return type::load_aligned(p); }
  static type loadu(const float* p) noexcept { return type::load_unaligned(p); }
  /// kWidth elements at p (floats, or int8 widened to floats), unaligned; reads only those.
  static type load_elem(const float* p) noexcept { return type::load_unaligned(p); }
  static type load_elem(const std::int8_t* p) noexcept {
    const auto* b = reinterpret_cast<const signed char*>(p);
#if defined(MICROATTN_INTRIN_AVX512)
    if constexpr (std::is_base_of<xsimd::avx512f, Arch>::value) {
      return type(intrin::i8x16_to_f32(b));
    } else
#endif
#if defined(MICROATTN_INTRIN_AVX2)
        if constexpr (std::is_base_of<xsimd::avx2, Arch>::value && kWidth == 8) {
      return type(intrin::i8x8_to_f32(b));
    } else
#endif
#if defined(MICROATTN_INTRIN_NEON)
        if constexpr (std::is_base_of<xsimd::neon, Arch>::value && kWidth == 4) {
      return type(intrin::i8x4_to_f32(b));
    } else
#endif
#if defined(MICROATTN_INTRIN_SSE41)
        if constexpr (std::is_base_of<xsimd::sse4_1, Arch>::value && kWidth == 4) {
      return type(intrin::i8x4_to_f32(b));
    } else
#endif
    {
      alignas(Arch::alignment()) float lanes[kWidth];
      for (std::size_t i = 0; i < kWidth; ++i) lanes[i] = static_cast<float>(b[i]);
      return type::load_aligned(lanes);
    }
  }
  /// kWidth fp16 or bf16 at p widened (exactly), by F16C / VCVT where there is one.
  static type load_elem(const f16* p) noexcept {
    [[maybe_unused]] const auto* h = reinterpret_cast<const std::uint16_t*>(p);
#if defined(MICROATTN_INTRIN_AVX512)
    if constexpr (std::is_base_of<xsimd::avx512f, Arch>::value) {
      return type(intrin::f16x16_to_f32(h));
    } else
#endif
#if defined(MICROATTN_INTRIN_F16C)
        if constexpr (std::is_base_of<xsimd::avx, Arch>::value && kWidth == 8) {
      return type(intrin::f16x8_to_f32(h));
    } else if constexpr (std::is_base_of<xsimd::sse2, Arch>::value && kWidth == 4) {
      return type(intrin::f16x4_to_f32(h));
    } else
#endif
#if defined(MICROATTN_INTRIN_NEON_F16)
        if constexpr (std::is_base_of<xsimd::neon, Arch>::value && kWidth == 4) {
      return type(intrin::f16x4_to_f32(h));
    } else
#endif
    {
      return widen_lanes(p);
    }
  }
  static type load_elem(const bf16* p) noexcept {
    [[maybe_unused]] const auto* h = reinterpret_cast<const std::uint16_t*>(p);
#if defined(MICROATTN_INTRIN_AVX512)
    if constexpr (std::is_base_of<xsimd::avx512f, Arch>::value) {
      return type(intrin::bf16x16_to_f32(h));
    } else
#endif
#if defined(MICROATTN_INTRIN_AVX2)
        if constexpr (std::is_base_of<xsimd::avx2, Arch>::value && kWidth == 8) {
      return type(intrin::bf16x8_to_f32(h));
    } else
#endif
#if defined(MICROATTN_INTRIN_SSE41)
        if constexpr (std::is_base_of<xsimd::sse4_1, Arch>::value && kWidth == 4) {
      return type(intrin::bf16x4_to_f32(h));
    } else
#endif
#if defined(MICROATTN_INTRIN_NEON)
        if constexpr (std::is_base_of<xsimd::neon, Arch>::value && kWidth == 4) {
      return type(intrin::bf16x4_to_f32(h));
    } else
#endif
    {
      return widen_lanes(p);
    }
  }
  static void store(float* p, type v) noexcept { v.store_aligned(p); }
  static void storeu(float* p, type v) noexcept { v.store_unaligned(p); }
  static type set1(float v) noexcept { return type(v); }
  static type zero() noexcept { return type(0.0f); }
  static type fma(type a, type b, type c) noexcept { return xsimd::fma(a, b, c); }
  static type fma_scalar(float a, type b, type c) noexcept { return xsimd::fma(type(a), b, c); }
  /// c - a b (MICROATTN_NEON32_FMA: one vfms; docs/compiler-notes.md).
  static type fnma(type a, type b, type c) noexcept {
#if defined(MICROATTN_NEON32_FMA)
    if constexpr (std::is_base_of<xsimd::neon, Arch>::value && kWidth == 4)
      return type(vfmsq_f32(c.data, a.data, b.data));
#endif
    return xsimd::fnma(a, b, c);
  }
  static type max(type a, type b) noexcept { return xsimd::max(a, b); }
  static type clamp_below(type x, type lo) noexcept { return max(x, lo); }
  static type min(type a, type b) noexcept { return xsimd::min(a, b); }
  /// a < b ? t : f lane by lane.
  /// MICROATTN_NEON32_FIXES (armv7, whose compare GCC 12 lowers lane by lane through the stack:
  /// docs/compiler-notes.md): a < b is read off d = a - b: true when d's bits, unsigned, exceed
  /// 0x80000000 (negative and not -0). a - b rounds to nearest, so it is negative when a < b
  /// and +0 when a == b; a NaN difference (a NaN operand, or inf - inf) is the positive default
  /// NaN in NEON arithmetic, so false, as IEEE says. Where it differs from a compare: NEON
  /// flushes denormals, so denormal operands count as zero (as NEON's own compare does), and a
  /// difference below 2^-126 (a and b both that close to zero) flushes to a zero: a < b is
  /// then false. The kernels compare small whole numbers (column indices) and x with -87.3.
  static type select_lt(type a, type b, type t, type f) noexcept {
#if MICROATTN_NEON32_FIXES
    if constexpr (std::is_base_of<xsimd::neon, Arch>::value && kWidth == 4) {
      const uint32x4_t d = vreinterpretq_u32_f32(vsubq_f32(a.data, b.data));
      return type(vbslq_f32(vcgtq_u32(d, vdupq_n_u32(0x80000000u)), t.data, f.data));
    }
#endif
    return xsimd::select(a < b, t, f);
  }
  static type shl23_bits(type v) noexcept {
#if defined(MICROATTN_INTRIN_NEON)
    // One shift: xsimd 8.1's NEON bitwise_cast is an out-of-line call (docs/compiler-notes.md).
    if constexpr (std::is_base_of<xsimd::neon, Arch>::value && kWidth == 4)
      return type(vreinterpretq_f32_s32(vshlq_n_s32(vreinterpretq_s32_f32(v.data), 23)));
#endif
#if XSIMD_VERSION_MAJOR >= 9  // bitwise_cast<element type>(batch)
    return xsimd::bitwise_cast<float>(xsimd::bitwise_cast<std::int32_t>(v) << 23);
#else  // xsimd 8: bitwise_cast<batch type>(batch)
    using ibatch = xsimd::batch<std::int32_t, Arch>;
    return xsimd::bitwise_cast<type>(xsimd::bitwise_cast<ibatch>(v) << 23);
#endif
  }
  /// v as a register value the compiler cannot re-derive from memory (MICROATTN_PIN_X86): the
  /// micro-kernel's B vectors stay one load each per k, not a load folded into every FMA. Emits
  /// no instruction. By value, not by reference (docs/compiler-notes.md).
  static type pinned(type v) noexcept {
#if MICROATTN_PIN_X86
    __asm__("" : "+v"(v.data));
#endif
    return v;
  }
  /// v, as a value the optimiser knows nothing about: an empty asm statement that "changes"
  /// the register. Emits no instruction. Under -ffast-math (-fassociative-math) the compiler
  /// may otherwise fold (x + c) - c to x, which removes the round-to-integer step of
  /// f32_exp / f32_exp2 (users build with -Ofast; the -Ofast test presets check this).
  static type opaque(type v) noexcept {
#if defined(MICROATTN_OPAQUE_VEC)
    __asm__("" : MICROATTN_OPAQUE_VEC(v.data));
    return v;
#else
    alignas(Arch::alignment()) float lanes[kWidth];
    v.store_aligned(lanes);
    for (std::size_t i = 0; i < kWidth; ++i) {
      volatile float t = lanes[i];
      lanes[i] = t;
    }
    return type::load_aligned(lanes);
#endif
  }
  /// Whether transpose() is a register transpose here (x86); elsewhere callers keep their
  /// scalar loops and transpose() does not exist.
#if defined(MICROATTN_INTRIN_AVX512) || defined(MICROATTN_INTRIN_AVX2)
  static constexpr bool kTranspose =
#if defined(MICROATTN_INTRIN_AVX512)
      std::is_base_of<xsimd::avx512f, Arch>::value ||
#endif
      (std::is_base_of<xsimd::avx2, Arch>::value && kWidth == 8);
  /// r[i] = column i of the kWidth x kWidth matrix whose row j was r[j] (kTranspose arches only:
  /// callers test kTranspose first).
  static void transpose(type (&r)[kWidth]) noexcept {
    static_assert(kTranspose, "Vec::transpose: no register transpose for this arch");
#if defined(MICROATTN_INTRIN_AVX512)
    if constexpr (std::is_base_of<xsimd::avx512f, Arch>::value) {
      __m512 x[16];
      for (std::size_t i = 0; i < 16; ++i) x[i] = r[i].data;
      intrin::transpose_f32x16(x);
      for (std::size_t i = 0; i < 16; ++i) r[i] = type(x[i]);
      return;
    } else
#endif
    {
      __m256 x[8];
      for (std::size_t i = 0; i < 8; ++i) x[i] = r[i].data;
      intrin::transpose_f32x8(x);
      for (std::size_t i = 0; i < 8; ++i) r[i] = type(x[i]);
    }
  }
#else
  static constexpr bool kTranspose = false;
#endif
  /// Whether broadcast_pair() exists (x86 AVX and AVX-512: one 64-bit broadcast).
  static constexpr bool kPairBroadcast = kTranspose;
  /// The two floats p[0], p[1] repeated across the vector: lanes 2i = p[0], 2i + 1 = p[1]
  /// (kPairBroadcast arches only).
  static type broadcast_pair(const float* p) noexcept {
    double d;
    std::memcpy(&d, p, sizeof d);
#if XSIMD_VERSION_MAJOR >= 9
    return xsimd::bitwise_cast<float>(xsimd::batch<double, Arch>(d));
#else
    return xsimd::bitwise_cast<type>(xsimd::batch<double, Arch>(d));
#endif
  }
  static constexpr bool kLoadsFirst = false;  ///< see Vec<ScalarArch>::loads_first
  static constexpr std::size_t kExpStep = 1;  ///< see Vec<ScalarArch>::kExpStep
#if XSIMD_VERSION_MAJOR >= 9
  static float hsum(type v) noexcept { return xsimd::reduce_add(v); }
#else
  static float hsum(type v) noexcept { return xsimd::hadd(v); }
#endif
  static float hmax(type v) noexcept {
#if defined(MICROATTN_INTRIN_AVX512)
    if constexpr (std::is_base_of<xsimd::avx512f, Arch>::value) return intrin::hmax_f32x16(v.data);
#endif
#if defined(MICROATTN_INTRIN_AVX2)
    if constexpr (std::is_base_of<xsimd::avx2, Arch>::value && kWidth == 8)
      return intrin::hmax_f32x8(v.data);
#endif
#if defined(MICROATTN_INTRIN_NEON)
    if constexpr (std::is_base_of<xsimd::neon, Arch>::value && kWidth == 4)
      return intrin::hmax_f32x4(v.data);
#endif
#if defined(MICROATTN_INTRIN_SSE41)
    if constexpr (std::is_base_of<xsimd::sse4_1, Arch>::value && kWidth == 4)
      return intrin::hmax_f32x4(v.data);
#endif
    alignas(Arch::alignment()) float lanes[kWidth];
    v.store_aligned(lanes);
    float m = lanes[0];
    for (std::size_t i = 1; i < kWidth; ++i) m = lanes[i] > m ? lanes[i] : m;
    return m;
  }

 private:
  template <class H>
  static type widen_lanes(const H* p) noexcept {
    alignas(Arch::alignment()) float lanes[kWidth];
    for (std::size_t i = 0; i < kWidth; ++i) lanes[i] = to_float(p[i]);
    return type::load_aligned(lanes);
  }
};
#endif

#if MICROATTN_HAS_MVE
/// Helium (MVE-F, Cortex-M55/M85): four floats per Q register, on arm_mve.h (xsimd has no arch
/// for it). Element-aligned loads and stores suffice (VLDRW/VSTRW); every operation is one
/// instruction, with two exceptions: hsum (no float add-across) and hmax with a seed lane.
/// NaN: max and min are VMAXNM / VMINNM (a NaN operand loses to a number, as the kernels allow:
/// see row_max; f32_softmax_exp2 turns a NaN score into a NaN weight on every arch), and a
/// compare with a NaN is false (see select_lt).
template <>
struct Vec<MveArch> {
  using type = float32x4_t;
  static constexpr std::size_t kWidth = 4;
  static constexpr std::size_t kAlign = 16;
  static constexpr bool kTranspose = false;      ///< see Vec<Arch>::transpose
  static constexpr bool kPairBroadcast = false;  ///< see Vec<Arch>::broadcast_pair
  static constexpr bool kLoadsFirst = false;     ///< see Vec<ScalarArch>::loads_first
  static constexpr std::size_t kExpStep = 1;     ///< see Vec<ScalarArch>::kExpStep
  /// Four floats in memory as the compiler must see them: element-aligned, and aliasing
  /// anything. Not arm_mve.h's vld1q_f32 / vst1q_f32, which GCC 12 writes as int-pointer
  /// accesses that strict aliasing may move past a float store (docs/compiler-notes.md). The
  /// same VLDRW / VSTRW instructions.
  using Mem = float __attribute__((vector_size(16), aligned(4), may_alias));

  static type load(const float* p) noexcept { return *reinterpret_cast<const Mem*>(p); }
  static type loadu(const float* p) noexcept { return *reinterpret_cast<const Mem*>(p); }
  /// 4 floats, or 4 int8 widened by the load itself (VLDRB.S32: a character type, which
  /// aliases anything) and converted.
  static type load_elem(const float* p) noexcept { return loadu(p); }
  static type load_elem(const std::int8_t* p) noexcept {
    return vcvtq_f32_s32(vldrbq_s32(reinterpret_cast<const signed char*>(p)));
  }
  /// 4 fp16 or bf16 widened by the load (VLDRH.U32: each in the bottom half of a lane). fp16's
  /// bits are rebiased in integer lanes (subnormals: m * 2^-24, exact; inf / NaN kept), not by
  /// VCVTB.F32.F16: GCC 12 gives that widening instruction the same source and destination
  /// register, which the architecture leaves unpredictable (QEMU: wrong lanes, then UNDEF).
  static type load_elem(const f16* p) noexcept {
    const uint32x4_t h = vldrhq_u32(reinterpret_cast<const std::uint16_t*>(p));
    const uint32x4_t mag = vandq_u32(h, vdupq_n_u32(0x7FFFu));
    const uint32x4_t shifted = vshlq_n_u32(mag, 13);
    uint32x4_t bits = vaddq_u32(shifted, vdupq_n_u32(112u << 23));  // a normal number
    bits = vpselq_u32(vorrq_u32(shifted, vdupq_n_u32(0x7F800000u)), bits,
                      vcmpcsq_u32(mag, vdupq_n_u32(0x7C00u)));  // inf, NaN
    const float32x4_t sub = vmulq_n_f32(vcvtq_f32_u32(mag), 0x1p-24f);
    bits = vpselq_u32(vreinterpretq_u32_f32(sub), bits, vcmphiq_u32(vdupq_n_u32(0x400u), mag));
    const uint32x4_t sign = vshlq_n_u32(vandq_u32(h, vdupq_n_u32(0x8000u)), 16);
    return vreinterpretq_f32_u32(vorrq_u32(bits, sign));
  }
  static type load_elem(const bf16* p) noexcept {
    return vreinterpretq_f32_u32(
        vshlq_n_u32(vldrhq_u32(reinterpret_cast<const std::uint16_t*>(p)), 16));
  }
  static void store(float* p, type v) noexcept { *reinterpret_cast<Mem*>(p) = v; }
  static void storeu(float* p, type v) noexcept { *reinterpret_cast<Mem*>(p) = v; }
  static type set1(float v) noexcept { return vdupq_n_f32(v); }
  static type zero() noexcept { return vdupq_n_f32(0.0f); }
  static type fma(type a, type b, type c) noexcept { return vfmaq_f32(c, a, b); }
  /// VFMA with a scalar operand from a core register: no broadcast, one Q register fewer.
  static type fma_scalar(float a, type b, type c) noexcept { return vfmaq_n_f32(c, b, a); }
  static type fnma(type a, type b, type c) noexcept { return vfmsq_f32(c, a, b); }
  static type max(type a, type b) noexcept { return vmaxnmq_f32(a, b); }
  static type clamp_below(type x, type lo) noexcept { return max(x, lo); }
  static type min(type a, type b) noexcept { return vminnmq_f32(a, b); }
  /// a < b as b > a: MVE's VCMP condition LT is "less than or unordered" (true when a or b is
  /// NaN), GT is ordered (Vec.SelectLtIsTheCompareLaneByLane).
  static type select_lt(type a, type b, type t, type f) noexcept {
    return vpselq_f32(t, f, vcmpgtq_f32(b, a));
  }
  static type shl23_bits(type v) noexcept {
    return vreinterpretq_f32_s32(vshlq_n_s32(vreinterpretq_s32_f32(v), 23));
  }
  static float hsum(type v) noexcept {
    return (vgetq_lane_f32(v, 0) + vgetq_lane_f32(v, 1)) +
           (vgetq_lane_f32(v, 2) + vgetq_lane_f32(v, 3));
  }
  static float hmax(type v) noexcept { return vmaxnmvq_f32(vgetq_lane_f32(v, 0), v); }
  static type pinned(type v) noexcept { return v; }
  /// (GNU C only, as the vector operators and Mem above: arch.hpp gives every GNU ARM compiler
  /// MICROATTN_OPAQUE_VEC.)
  static type opaque(type v) noexcept {
    __asm__("" : MICROATTN_OPAQUE_VEC(v));
    return v;
  }
};
#endif

/// Register blocking, tile sizes and tuning knobs of the kernels for Arch, all compile-time (every
/// buffer size is a constexpr of the configuration and the arch). The kernels read these and
/// test nothing else about the arch; each value's why and measurement: docs/tuning.md.
///   kMR x kNR           GEMM micro-tile (rows x columns of C in registers); kNR = kNRVec vectors
///   kKC                 depth of one packed B panel (kKC x kNR floats, sized for L1)
///   kMC                 rows of A a B panel is reused over (sized for L2)
///   kBQ, kBK            attention tile: query rows x key columns
///   kCopyRowVectors     GEMM edge-tile and partial-panel rows copied by copy_row (whole vectors
///                       through an empty asm), not by loops the compiler may make a memcpy
///   kPrefetchNextPanel  GEMM: the next dense weight panel prefetched into L2 during this one
///   kInPlaceInOutRows   GEMM: [in][out] weights read in place, unpacked, by row blocks of at
///                       most this many rows (0: always packed)
///   kSplitTileStride    GEMM: a whole-panel micro-tile whose rows of A are a multiple of this
///                       many floats apart runs as two calls of half the rows (0: never)
///   kGemvPanelPairs     f32_gemv_panel16 runs panel p together with panel p + n_panels / 2
///   kOwnFrameAttn       the attention tile's row groups call their micro-kernels from frames of
///                       their own (MICROATTN_OWN_FRAME_X86), for heads of at least a vector
///   kQd8MR              integer (qd8) GEMM micro-tile rows (its columns: kNR)
/// A new arch gets these defaults: the x86 register budget's sizes and every knob off (the
/// plain code, correct on any target) until it is measured and specialised below.
struct KernelParamsDefaults {
  // 16 vector registers (SSE, AVX, AVX2): 6 x 2 accumulators + 2 B + 1 broadcast.
  static constexpr std::size_t kMR = 6;
  static constexpr std::size_t kNRVec = 2;
  static constexpr std::size_t kKC = 256;
  static constexpr std::size_t kMC = 192;
  static constexpr std::size_t kBQ = 48;
  static constexpr std::size_t kBK = 64;
  static constexpr bool kCopyRowVectors = false;
  static constexpr bool kPrefetchNextPanel = false;
  static constexpr std::size_t kInPlaceInOutRows = 0;
  static constexpr std::size_t kSplitTileStride = 0;
  static constexpr bool kGemvPanelPairs = false;
  static constexpr bool kOwnFrameAttn = false;
  static constexpr std::size_t kQd8MR = 4;
};

template <class Arch, class Enable = void>
struct KernelParams : KernelParamsDefaults {};

template <>
struct KernelParams<ScalarArch> : KernelParamsDefaults {
  // Cortex-M4F/M7 have 32 single-precision registers: 4 x 4 accumulators + 4 B + 1 A. Sizes
  // for a microcontroller's RAM; every knob off (16 scalar sums fill the register file, and
  // there is no cache to prefetch into).
  static constexpr std::size_t kMR = 4;
  static constexpr std::size_t kNRVec = 4;
  static constexpr std::size_t kKC = 128;
  static constexpr std::size_t kMC = 64;
  static constexpr std::size_t kBQ = 16;
  static constexpr std::size_t kBK = 16;
  // 2 x 4 int32 sums + 2 rows' and 1 column's unpacked bytes fit the 13 core registers.
  static constexpr std::size_t kQd8MR = 2;
};

#if MICROATTN_HAS_MVE
// Helium: eight Q registers. The micro-kernel's FMA takes its A value from a core register
// (Vec::fma_scalar), so MR x NRV accumulators + NRV B vectors must fit in eight: 4 x 1 vector,
// the scalar path's 4 x 4 floats. Every other size is the scalar path's (a microcontroller's
// RAM). A panel pair's 8 accumulators fit: the panel GEMV takes two streams.
template <>
struct KernelParams<MveArch> : KernelParams<ScalarArch> {
  static constexpr std::size_t kNRVec = 1;
  static constexpr bool kGemvPanelPairs = true;
};
#endif

#if MICROATTN_HAS_XSIMD
template <class Arch>
constexpr bool kIsAvx512 = std::is_base_of<xsimd::avx512f, Arch>::value;
// x86 with 8-float vectors: AVX, AVX2 (and xsimd 14's AVX-512VL 256-bit arch).
template <class Arch>
constexpr bool kIsX86x8 = std::is_base_of<xsimd::avx, Arch>::value && !kIsAvx512<Arch>;
// x86 with 4-float vectors: SSE2 .. SSE4.2, FMA4 (and xsimd 14's 128-bit AVX archs).
template <class Arch>
constexpr bool kIsX86x4 =
    std::is_base_of<xsimd::sse2, Arch>::value && !kIsX86x8<Arch> && !kIsAvx512<Arch>;

// x86 SSE: the default sizes; vector row copies, panel pairs.
template <class Arch>
struct KernelParams<Arch, std::enable_if_t<kIsX86x4<Arch>>> : KernelParamsDefaults {
  static constexpr bool kCopyRowVectors = true;  // else GCC 12 inlines `rep movsq`
  static constexpr bool kGemvPanelPairs = true;  // two streams keep more misses in flight
};

// x86 AVX / AVX2: the default sizes (6 x 2 accumulators + 2 B + 1 broadcast of 16 registers).
template <class Arch>
struct KernelParams<Arch, std::enable_if_t<kIsX86x8<Arch>>> : KernelParamsDefaults {
  static constexpr bool kCopyRowVectors = true;     // else GCC 12 inlines `rep movsq`
  static constexpr bool kPrefetchNextPanel = true;  // [in][out] rows a page apart: no HW prefetch
  static constexpr std::size_t kInPlaceInOutRows = 72;  // short prompts don't repay a copy
  static constexpr bool kGemvPanelPairs = true;         // two streams: more misses in flight
  static constexpr bool kOwnFrameAttn = MICROATTN_PIN_X86 != 0;  // GCC 12's register allocation
  // AVX2 integer tile: 4 x 2 int32 sums + 2 B + 2 |B| + the broadcast row + ones = 15 registers.
  static constexpr std::size_t kQd8MR = 4;
};

// AVX-512 (32 registers): 12 x 2 accumulators. kMC 264: a 256-token prefill packs each weight
// panel once, not twice (an A block of 264 KiB for 1-2 MB L2s). kBK 128: half the per-row
// online-softmax steps (horizontal max, rescale of the output row) per key.
template <class Arch>
struct KernelParams<Arch, std::enable_if_t<kIsAvx512<Arch>>> : KernelParamsDefaults {
  static constexpr std::size_t kMR = 12;
  static constexpr std::size_t kNRVec = 2;
  static constexpr std::size_t kKC = 256;
  static constexpr std::size_t kMC = 264;
  static constexpr std::size_t kBQ = 48;
  static constexpr std::size_t kBK = 128;
  static constexpr bool kCopyRowVectors = true;     // else GCC 12 inlines `rep movsq`
  static constexpr bool kPrefetchNextPanel = true;  // [in][out] rows a page apart: no HW prefetch
  static constexpr std::size_t kInPlaceInOutRows = 72;  // short prompts don't repay a copy
  // 12 rows 4 KiB apart share one set of an L1 of 4 KiB ways and fewer than 12 of them.
  static constexpr std::size_t kSplitTileStride = 4096 / sizeof(float);
  static constexpr bool kGemvPanelPairs = true;                  // more misses in flight
  static constexpr bool kOwnFrameAttn = MICROATTN_PIN_X86 != 0;  // GCC 12's register allocation
#if defined(MICROATTN_INTRIN_AVX512VNNI)
  static constexpr std::size_t kQd8MR = 12;  // VNNI: 12 x 2 int32 accumulators, as the fp32 tile
#else
  // Without VNNI the AVX2 tile (pmaddubsw, 32-byte vectors): 4 x 4 int32 sums + 4 B + 4 |B| of
  // AVX-512VL's 32 ymm registers.
  static constexpr std::size_t kQd8MR = 4;
#endif
};

// AArch64 NEON (32 registers), chosen with tools/mca_report.py (llvm-mca's models):
// 5 x 4 accumulators + 4 B + 5 A = 29 registers (6 x 4 needs 34 and GCC 12 spills). kNR 16 reads
// kPanel16 weights in place; kMC and kBQ are multiples of kMR (40 query rows: q, s and o of a
// d_head-64 tile fit a Cortex-A72's 32 KB L1). The x86 prefetch and in-place reads are
// unmeasured here, so off.
template <class Arch>
struct KernelParams<Arch, std::enable_if_t<std::is_base_of<xsimd::neon64, Arch>::value>>
    : KernelParamsDefaults {
  static constexpr std::size_t kMR = 5;
  static constexpr std::size_t kNRVec = 4;
  static constexpr std::size_t kKC = 256;
  static constexpr std::size_t kMC = 100;
  static constexpr std::size_t kBQ = 40;
  static constexpr std::size_t kBK = 64;
  static constexpr bool kCopyRowVectors = true;  // as every xsimd arch (unmeasured either way)
  static constexpr bool kGemvPanelPairs = true;  // two streams keep more misses in flight
};

// ARMv7 NEON (16 q registers, no by-lane fused multiply-add: each A value is a load-duplicate):
// 3 x 4 accumulators + 3 A + 1 B = 16 registers (the default 6 x 2 spills an accumulator);
// kNR 16 reads kPanel16 weights in place (tools/mca_report.py --sweep).
template <class Arch>
struct KernelParams<Arch, std::enable_if_t<std::is_base_of<xsimd::neon, Arch>::value &&
                                           !std::is_base_of<xsimd::neon64, Arch>::value>>
    : KernelParamsDefaults {
  static constexpr std::size_t kMR = 3;
  static constexpr std::size_t kNRVec = 4;
  static constexpr std::size_t kKC = 256;
  static constexpr std::size_t kMC = 96;
  static constexpr std::size_t kBQ = 48;
  static constexpr std::size_t kBK = 64;
  static constexpr bool kCopyRowVectors = true;  // as every xsimd arch (unmeasured either way)
  static constexpr bool kGemvPanelPairs = true;  // two streams keep more misses in flight
};
#endif

template <class Arch>
struct Tiles : KernelParams<Arch> {
  using P = KernelParams<Arch>;
  static constexpr std::size_t kWidth = Vec<Arch>::kWidth;
  static constexpr std::size_t kNR = P::kNRVec * kWidth;
  static constexpr std::size_t kAlign = max_size(Vec<Arch>::kAlign, 16);
  static_assert(P::kBK % kNR == 0, "attention key tile must be a whole number of GEMM panels");
  static_assert(P::kBQ % P::kMR == 0, "attention query tile must be a whole number of micro-tiles");
  static_assert(P::kMC % P::kMR == 0, "GEMM row block must be a whole number of micro-tiles");
};

}  // namespace internal
}  // namespace microattn

MICROATTN_GCC12_AVX512_WARNINGS_ON
