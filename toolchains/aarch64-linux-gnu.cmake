# SPDX-License-Identifier: Apache-2.0
# 64-bit ARM Linux (Raspberry Pi 4/5, Jetson, Graviton, ...) with Debian's g++-aarch64-linux-gnu.
# NEON is part of ARMv8-A, so no flag is needed: xsimd picks its arm64 NEON arch.
#   cmake -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake
# ctest runs the tests under qemu-aarch64 (Debian qemu-user).
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(MICROATTN_TRIPLE aarch64-linux-gnu)
set(MICROATTN_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/linux-multiarch.cmake)

# Tune for the common cores without requiring more than ARMv8.0-A.
set(CMAKE_C_FLAGS_INIT "-mtune=cortex-a72")
set(CMAKE_CXX_FLAGS_INIT "-mtune=cortex-a72")

# Kernel arch the tests must report (tests/test_arch.cpp): NEON, never the scalar fallback.
set(MICROATTN_EXPECT_ARCH "arm64+neon" CACHE STRING "Kernel arch the tests must see")
