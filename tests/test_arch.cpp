// SPDX-License-Identifier: Apache-2.0
// The build really runs the kernels it was configured for: a target can never fall back to
// scalar silently (MICROATTN_EXPECT_ARCH is set per preset/toolchain).
#include <cstring>

#include "microattn/arch.hpp"
#include "microattn/internal/vec.hpp"
#include "support/unit.hpp"

TEST(Arch, SelectedArchIsTheExpectedOne) {
#if defined(MICROATTN_EXPECT_ARCH)
  EXPECT_EQ(std::strcmp(microattn::arch_name<>(), MICROATTN_EXPECT_ARCH), 0)
      << "built for " << microattn::arch_name<>() << ", expected " << MICROATTN_EXPECT_ARCH;
#endif
#if defined(MICROATTN_FORCE_SCALAR)
  EXPECT_EQ(std::strcmp(microattn::arch_name<>(), "scalar"), 0) << microattn::arch_name<>();
#endif
  EXPECT_EQ(std::strcmp(microattn::ScalarArch::name(), "scalar"), 0);
}

TEST(Arch, VectorWidthMatchesTheArch) {
  const std::size_t w = microattn::internal::Vec<microattn::DefaultArch>::kWidth;
  if (std::strcmp(microattn::arch_name<>(), "scalar") == 0) {
    EXPECT_EQ(w, 1u);
  } else {
    EXPECT_GE(w, 4u) << microattn::arch_name<>();
  }
}
