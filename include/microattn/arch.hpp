// SPDX-License-Identifier: Apache-2.0
// microattn: the one place that translates compiler feature macros into a kernel architecture.
//
// Kernels are templates on an arch tag. Where xsimd 8.1 has an architecture for the target
// (SSE2 and up, AVX2+FMA, AVX-512, NEON, NEON64) the tag is an xsimd arch; on Cortex-M cores
// with Helium (M55, M85) it is MveArch; otherwise (Cortex-M4/M7, or MICROATTN_FORCE_SCALAR) it
// is ScalarArch. All have the same kernel interface (internal/vec.hpp's Vec<Arch>).
// Nothing else in the library tests __ARM_NEON, __AVX2__ and friends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if !defined(MICROATTN_FORCE_SCALAR) &&                                                      \
    (defined(__SSE2__) || defined(_M_X64) || defined(__ARM_NEON) || defined(__ARM_NEON__) || \
     defined(__aarch64__))
#define MICROATTN_HAS_XSIMD 1
// xsimd 14's own headers use __int128 (-Wpedantic) and, under -ffast-math, define unused local
// typedefs (-Wunused-local-typedefs): a user's -Werror build must not stop on them.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wunused-local-typedefs"
#endif
#include <xsimd/xsimd.hpp>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
// xsimd 8.1 (Debian 12) to 14 (tested: 8.1, 12.1, 13.2, 14.3). The API differences (hadd /
// reduce_add, bitwise_cast's template argument) are bridged in internal/vec.hpp alone.
#if !defined(XSIMD_VERSION_MAJOR) || XSIMD_VERSION_MAJOR < 8 || \
    (XSIMD_VERSION_MAJOR == 8 && XSIMD_VERSION_MINOR < 1)
#error "microattn needs xsimd 8.1 or newer (Debian 12: apt-get install libxsimd-dev)"
#endif
#else
#define MICROATTN_HAS_XSIMD 0
#endif

/// 1 on Armv8.1-M cores with the M-profile Vector Extension's floating point (Helium, MVE-F:
/// Cortex-M55, M85; GCC's -mcpu=cortex-m55 without +nomve.fp), where xsimd has no arch: the
/// kernels then run on microattn's own MveArch (four float lanes in a Q register, arm_mve.h).
/// MICROATTN_FORCE_SCALAR keeps such a core on the scalar kernels.
#if !defined(MICROATTN_FORCE_SCALAR) && !MICROATTN_HAS_XSIMD && defined(__ARM_FEATURE_MVE) && \
    (__ARM_FEATURE_MVE & 2)
#define MICROATTN_HAS_MVE 1
#include <arm_mve.h>
#else
#define MICROATTN_HAS_MVE 0
#endif

/// 1 where a scalar float fused multiply-add is one instruction (Cortex-M4F, M7, M55, x86 with
/// FMA, AArch64): Vec<ScalarArch>::fma is then an explicit fmaf.
#if defined(__ARM_FEATURE_FMA) || defined(__FMA__) || defined(__aarch64__)
#define MICROATTN_SCALAR_FMA 1
#else
#define MICROATTN_SCALAR_FMA 0
#endif

/// 1 where that multiply-add is written as a `vfma.f32` asm statement instead of fmaf: clang for
/// bare-metal 32-bit ARM with math errno on (its default) calls the C library's fmaf for the
/// builtin (docs/compiler-notes.md; test clang_cortex_m_fma).
#if MICROATTN_SCALAR_FMA && defined(__clang__) && defined(__arm__) && !defined(__aarch64__) && \
    !defined(__NO_MATH_ERRNO__) && defined(__ARM_FP) && (__ARM_FP & 4) && !defined(__SOFTFP__)
#define MICROATTN_SCALAR_FMA_ASM 1
#else
#define MICROATTN_SCALAR_FMA_ASM 0
#endif

/// 1 on a Cortex-M (M-profile) core with a hardware FPU and a hard- or softfp float ABI: the
/// scalar kernels' Cortex-M scheduling choices (Vec<ScalarArch>::loads_first, clamp_below,
/// kExpStep) build on it.
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && \
    !defined(__SOFTFP__)
#define MICROATTN_CORTEX_M_FPU 1
#else
#define MICROATTN_CORTEX_M_FPU 0
#endif

/// 1 where an empty GNU asm statement can pin an x86 vector in a register (Vec::pinned;
/// docs/compiler-notes.md), and where functions get frames of their own (OWN_FRAME below).
#if MICROATTN_HAS_XSIMD && defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define MICROATTN_PIN_X86 1
#else
#define MICROATTN_PIN_X86 0
#endif

/// Inline-asm register constraints for Vec::opaque (an empty asm statement that makes a value
/// unknown to the optimiser, so -ffast-math cannot fold a rounding trick away). Vector: the
/// register class of the SIMD arch; scalar float: the FP register class of the target, or a
/// general register on soft-float cores. 0 where no constraint is known (then a volatile copy
/// is used instead).
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define MICROATTN_OPAQUE_VEC "+v"
#if defined(__SSE2__) || defined(__x86_64__)
#define MICROATTN_OPAQUE_F32 "+x"
#endif
#elif defined(__GNUC__) && defined(__aarch64__)
#define MICROATTN_OPAQUE_VEC "+w"
#define MICROATTN_OPAQUE_F32 "+w"
#elif defined(__GNUC__) && defined(__arm__)
#define MICROATTN_OPAQUE_VEC "+w"
#if defined(__ARM_FP) && (__ARM_FP & 4) && !defined(__SOFTFP__)
#define MICROATTN_OPAQUE_F32 "+t"
#else
#define MICROATTN_OPAQUE_F32 "+r"
#endif
#endif

/// GCC 12's own AVX-512 intrinsics trip -Wmaybe-uninitialized / -Wuninitialized at every
/// inlined use (fixed in GCC 13; docs/compiler-notes.md): the kernel headers that reach them
/// bracket their code with these two macros, which silence only those two warnings, only there.
#if MICROATTN_HAS_XSIMD && defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13 && \
    defined(__AVX512F__)
#define MICROATTN_GCC12_AVX512_WARNINGS_OFF                                                  \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define MICROATTN_GCC12_AVX512_WARNINGS_ON _Pragma("GCC diagnostic pop")
#else
#define MICROATTN_GCC12_AVX512_WARNINGS_OFF
#define MICROATTN_GCC12_AVX512_WARNINGS_ON
#endif

/// x86 (GCC and clang): keeps a function out of its callers and inlines every call in it (the
/// micro-kernel, with the caller's compile-time strides), so GCC 12 allocates its registers the
/// same whatever the translation unit holds. Used where KernelParams::kOwnFrameAttn says
/// (kernels/f32_attn_tile.hpp; docs/compiler-notes.md).
#if MICROATTN_PIN_X86
#define MICROATTN_OWN_FRAME_X86 __attribute__((noinline, flatten))
#else
#define MICROATTN_OWN_FRAME_X86
#endif

/// Forces a function into its caller (GCC and clang), where a frame of its own costs stack.
/// MICROATTN_NOINLINE keeps one out, where its locals would otherwise add to a deeper chain's.
#if defined(__GNUC__)
#define MICROATTN_ALWAYS_INLINE __attribute__((always_inline))
#define MICROATTN_NOINLINE __attribute__((noinline))
#else
#define MICROATTN_ALWAYS_INLINE
#define MICROATTN_NOINLINE
#endif

/// Functions marked with this are not loop-vectorised by GCC 12 for MVE (Cortex-M55) only: it
/// emitted an instruction form MVE does not have, or a form that changed results
/// (docs/compiler-notes.md).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13 && defined(__ARM_FEATURE_MVE)
#define MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE __attribute__((optimize("no-tree-loop-vectorize")))
#else
#define MICROATTN_GCC12_MVE_NO_LOOP_VECTORIZE
#endif

/// MICROATTN_INTRIN_<ISA>: which ISA's intrinsics the build may use. They serve the integer
/// kernels (kernels/qd8/) and the operations Vec needs that xsimd 8.1 has no fast form of
/// (internal/intrin_x86.hpp, intrin_neon.hpp):
///  - int8 -> fp32 widening loads (int8 weights and caches): xsimd's converting load goes
///    through a scalar loop. Each loads exactly the bytes it converts.
///  - the largest lane of a vector (the softmax's row max once per row and key tile): xsimd 8.1
///    has no reduce_max, and a lane-by-lane loop through memory is slow.
///  - a W x W transpose in registers (the keys' K^T staging, x86): xsimd 8.1 has no transpose,
///    and its AVX / AVX-512 zip_lo / zip_hi interleave within 128-bit lanes only (the
///    unpack instructions), unlike its SSE and NEON ones and newer xsimd releases.
#if MICROATTN_HAS_XSIMD && defined(__AVX512F__)
#define MICROATTN_INTRIN_AVX512 1
#endif
#if MICROATTN_HAS_XSIMD && defined(__AVX2__)
#define MICROATTN_INTRIN_AVX2 1
#endif
#if MICROATTN_HAS_XSIMD && defined(__SSSE3__)
#define MICROATTN_INTRIN_SSSE3 1
#endif
#if MICROATTN_HAS_XSIMD && defined(__SSE4_1__)
#define MICROATTN_INTRIN_SSE41 1
#endif
#if MICROATTN_HAS_XSIMD && (defined(__ARM_NEON) || defined(__ARM_NEON__) || defined(__aarch64__))
#define MICROATTN_INTRIN_NEON 1
#endif
/// fp16 -> fp32 conversion in hardware for fp16 weights: x86's F16C (x86-64-v3, AVX-512) and
/// NEON's VCVT.F32.F16 (every AArch64; 32-bit NEON with the IEEE half format, -mfp16-format=ieee);
/// without it the conversion is half.hpp's bit manipulation.
#if MICROATTN_HAS_XSIMD && defined(__F16C__)
#define MICROATTN_INTRIN_F16C 1
#endif
#if defined(MICROATTN_INTRIN_NEON) && (defined(__aarch64__) || defined(__ARM_FP16_FORMAT_IEEE))
#define MICROATTN_INTRIN_NEON_F16 1
#endif
/// 1 on 32-bit ARM NEON (armv7), where Vec replaces two xsimd 8.1 operations that GCC 12
/// compiles lane by lane (fnma, select_lt; docs/compiler-notes.md); MICROATTN_NEON32_FMA when
/// that NEON has fused multiply-add (VFPv4).
#if defined(MICROATTN_INTRIN_NEON) && defined(__arm__) && !defined(__aarch64__)
#define MICROATTN_NEON32_FIXES 1
#if defined(__ARM_FEATURE_FMA)
#define MICROATTN_NEON32_FMA 1
#endif
#else
#define MICROATTN_NEON32_FIXES 0
#endif

/// The x86 ISA extensions the integer kernels (kernels/qd8/x86.hpp) choose by: AVX-512BW
/// (byte and word operations on 512-bit vectors), AVX-512 VNNI (vpdpbusd on 512-bit vectors;
/// it implies BW here) and AVX-VNNI (vpdpbusd on 256-bit vectors, VEX-encoded).
#if defined(MICROATTN_INTRIN_AVX512) && defined(__AVX512BW__)
#define MICROATTN_INTRIN_AVX512BW 1
#endif
#if defined(MICROATTN_INTRIN_AVX512BW) && defined(__AVX512VNNI__)
#define MICROATTN_INTRIN_AVX512VNNI 1
#endif
#if defined(MICROATTN_INTRIN_AVX2) && defined(__AVXVNNI__)
#define MICROATTN_INTRIN_AVXVNNI 1
#endif
/// AArch64's NEON (the A64 forms: across-vector reductions, ADDP on Q registers).
#if defined(MICROATTN_INTRIN_NEON) && defined(__aarch64__)
#define MICROATTN_INTRIN_NEON64 1
#endif
/// FEAT_DotProd (AArch64): SDOT, four int8 products summed into each int32 lane.
#if defined(MICROATTN_INTRIN_NEON64) && defined(__ARM_FEATURE_DOTPROD)
#define MICROATTN_INTRIN_SDOT 1
#endif
/// FEAT_I8MM (Armv8.6-A; Cortex-A510, A710, X2, Neoverse N2, V1 and later): SMMLA, a 2 x 8 by
/// 8 x 2 int8 block product into 2 x 2 int32 sums.
#if defined(MICROATTN_INTRIN_NEON64) && defined(__ARM_FEATURE_MATMUL_INT8)
#define MICROATTN_INTRIN_I8MM 1
#endif

/// ARM's DSP extension (Cortex-M4/M7/M55, armv7-A): the integer (qd8) kernels' int16-pair
/// multiply-accumulate, from ACLE's arm_acle.h (kernels/qd8/dsp.hpp).
#if defined(__ARM_FEATURE_DSP) && defined(__arm__) && !defined(__aarch64__)
#define MICROATTN_INTRIN_DSP 1
#endif

namespace microattn {

/// Portable scalar kernels: what Cortex-M4/M7 ship, and the float oracle SIMD kernels are
/// tested against.
struct ScalarArch {
  static constexpr const char* name() noexcept { return "scalar"; }
};

#if MICROATTN_HAS_MVE
/// Helium (MVE-F) kernels: 128-bit vectors of four floats in eight Q registers. xsimd has no
/// arch for it; internal/vec.hpp's Vec<MveArch> is written on arm_mve.h.
struct MveArch {
  static constexpr const char* name() noexcept { return "mve"; }
  static constexpr unsigned alignment() noexcept { return 16; }
};
#endif

#if MICROATTN_HAS_XSIMD
/// The architecture the compiler flags (-march, -mfpu, ...) select, fixed at build time.
using DefaultArch = xsimd::default_arch;
#elif MICROATTN_HAS_MVE
using DefaultArch = MveArch;
#else
using DefaultArch = ScalarArch;
#endif

/// Name of the architecture the kernels of Arch run on ("scalar", "fma3+avx2", "neon64", ...).
template <class Arch = DefaultArch>
constexpr const char* arch_name() noexcept {
  return Arch::name();
}

}  // namespace microattn
