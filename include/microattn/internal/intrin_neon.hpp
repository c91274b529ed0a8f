// SPDX-License-Identifier: Apache-2.0
// microattn internal: the NEON float helpers Vec<Arch> needs that xsimd 8.1 has no fast form of
// (int8 -> fp32 widening loads, the largest lane), where arch.hpp says MICROATTN_INTRIN_NEON.
#pragma once

#include <cstdint>

#include "microattn/arch.hpp"

namespace microattn {
namespace intrin {
#if defined(MICROATTN_INTRIN_NEON)
/// 4 int8 at p as 4 floats (one 32-bit load, two widening moves, one convert).
inline float32x4_t i8x4_to_f32(const signed char* p) noexcept {
  std::int32_t u;
  __builtin_memcpy(&u, p, sizeof u);
  const int8x8_t b = vreinterpret_s8_s32(vdup_n_s32(u));
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(b))));
}
/// 4 bf16 at p as 4 floats (exact: widened into the top half of each lane).
inline float32x4_t bf16x4_to_f32(const std::uint16_t* p) noexcept {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}
#if defined(MICROATTN_INTRIN_NEON_F16)
/// 4 fp16 at p as 4 floats (VCVT.F32.F16, exact).
inline float32x4_t f16x4_to_f32(const std::uint16_t* p) noexcept {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}
#endif
/// Largest of the 4 lanes of v (a NaN lane may or may not win).
inline float hmax_f32x4(float32x4_t v) noexcept {
#if defined(MICROATTN_INTRIN_NEON64)
  return vmaxvq_f32(v);
#else
  float32x2_t m = vpmax_f32(vget_low_f32(v), vget_high_f32(v));
  m = vpmax_f32(m, m);
  return vget_lane_f32(m, 0);
#endif
}
#endif
}  // namespace intrin
}  // namespace microattn
