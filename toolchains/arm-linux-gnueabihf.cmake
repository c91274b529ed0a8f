# SPDX-License-Identifier: Apache-2.0
# 32-bit ARMv7-A Linux, hard-float, with NEON and VFPv4 (Raspberry Pi 2/3 in 32-bit mode,
# Cortex-A7/A9/A15 boards) using Debian's g++-arm-linux-gnueabihf.
#   cmake -B build/armv7 -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-linux-gnueabihf.cmake
# Debian armhf's default FPU is VFPv3-D16 without NEON: -mfpu=neon-vfpv4 turns on the NEON
# (and fused multiply-add) instructions that xsimd's arm32 NEON arch needs.
# ctest runs the tests under qemu-arm (Debian qemu-user).
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(MICROATTN_TRIPLE arm-linux-gnueabihf)
set(MICROATTN_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/linux-multiarch.cmake)

# -Wno-psabi: silences GCC's "parameter passing ... changed in GCC 7.1" notes, which flood
# every std::vector<double> use on 32-bit ARM and concern only linking with GCC < 7.1 code.
set(_flags "-march=armv7-a -mfpu=neon-vfpv4 -mfloat-abi=hard -Wno-psabi")
set(CMAKE_C_FLAGS_INIT "${_flags}")
set(CMAKE_CXX_FLAGS_INIT "${_flags}")

set(MICROATTN_EXPECT_ARCH "arm32+neon" CACHE STRING "Kernel arch the tests must see")
