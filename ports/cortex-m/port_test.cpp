// SPDX-License-Identifier: Apache-2.0
// Tests of the Cortex-M port itself, run by the tiny test runner next to the library's portable
// tests: the worked example on the target's (scalar) kernels, the selected arch, the FPU and
// the exit-status plumbing.
#include "port.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "microattn/attention.hpp"
#include "microattn/internal/vec.hpp"
#include "support/tiny_test.hpp"

namespace {

using microattn::Config;
using microattn::Status;

// The 3-token worked example: Q = K = [[1,0],[0,1],[1,1]], V = [[1,2],[3,0],[0,1]], scale 1.
TEST(CortexMPort, WorkedExample) {
  using Cfg = Config<3, 2, 1, 1, 2>;
  static microattn::ScaledDotProductAttention<Cfg> attn;
  const float qk[6] = {1, 0, 0, 1, 1, 1};
  const float v[6] = {1, 2, 3, 0, 0, 1};
  float out[6] = {};
  ASSERT_EQ(attn.set_scale(1.0f), Status::kOk);
  ASSERT_EQ(attn.forward(qk, 2, qk, 2, v, 2, 3, out, 2), Status::kOk);
  const float want[6] = {1.0f, 2.0f, 2.462117f, 0.537883f, 0.847766f, 1.0f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(out[i], want[i], 1e-6) << "i=" << i;
}

TEST(CortexMPort, ArgumentErrorsWriteNothing) {
  using Cfg = Config<3, 2, 1, 1, 2>;
  static microattn::ScaledDotProductAttention<Cfg> attn;
  const float qk[6] = {1, 0, 0, 1, 1, 1};
  float out[6] = {7, 7, 7, 7, 7, 7};
  EXPECT_EQ(attn.forward(qk, 2, qk, 2, qk, 2, 4, out, 2), Status::kBadTokenCount);
  EXPECT_EQ(attn.set_scale(NAN), Status::kBadScale);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], 7.0f) << "i=" << i;
}

// Cortex-M has no xsimd arch: the build must run microattn's own kernels for the core
// (MICROATTN_EXPECT_ARCH: "mve" on the M55, "scalar" on the M4 and M7), never something else.
TEST(CortexMPort, KernelsOfTheCore) {
  EXPECT_EQ(std::strcmp(microattn::arch_name<>(), MICROATTN_EXPECT_ARCH), 0)
      << microattn::arch_name<>() << ", expected " << MICROATTN_EXPECT_ARCH;
  const std::size_t w = microattn::internal::Vec<microattn::DefaultArch>::kWidth;
  EXPECT_EQ(w, std::strcmp(MICROATTN_EXPECT_ARCH, "mve") == 0 ? 4u : 1u)
      << microattn::arch_name<>() << ": " << w;
}

// The FPU is on (startup sets CPACR) and computes in hardware with IEEE single precision.
TEST(CortexMPort, FloatingPoint) {
  volatile float a = 1.0f, b = 3.0f;
  const float third = a / b;
  EXPECT_NEAR(third * 3.0f, 1.0f, 1e-7);
  volatile float big = 1e30f;
  const float inf = big * big;  // IEEE overflow: +inf (its bits, so -Ofast cannot fold the check)
  std::uint32_t bits;
  std::memcpy(&bits, &inf, sizeof bits);
  EXPECT_EQ(bits, 0x7f800000u);
  std::uint32_t cpacr = *reinterpret_cast<volatile std::uint32_t*>(0xE000ED88);
  EXPECT_EQ((cpacr >> 20) & 0xFu, 0xFu);
}

// .data was copied and .bss cleared before the constructors ran.
int g_data = 42;
int g_bss;
TEST(CortexMPort, StaticInitialisation) {
  EXPECT_EQ(g_data, 42);
  EXPECT_EQ(g_bss, 0);
}

}  // namespace
