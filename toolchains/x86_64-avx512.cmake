# SPDX-License-Identifier: Apache-2.0
# x86-64 with AVX-512 F/CD/BW/DQ/VL (x86-64-v4: Skylake-SP, Ice Lake, Sapphire Rapids, Zen 4).
# xsimd 8.1 then picks its avx512bw arch.
#   cmake -B build/x86-avx512 -DCMAKE_TOOLCHAIN_FILE=toolchains/x86_64-avx512.cmake
# The tests run natively, so only on a CPU with AVX-512 (elsewhere they die with SIGILL).
# No emulator helps here: QEMU 7.2's TCG does not implement AVX-512 (`qemu-x86_64 -cpu max` and
# `-cpu Icelake-Server` both fault, "TCG doesn't support requested feature: avx512f"); Intel SDE
# would, but is not a Debian package. The avx512 preset therefore only builds by default.
set(CMAKE_C_COMPILER gcc)
set(CMAKE_CXX_COMPILER g++)
set(CMAKE_C_FLAGS_INIT "-march=x86-64-v4")
# No -Wno-maybe-uninitialized here: g++ 12's false positive inside avx512fintrin.h (GCC PR
# 105593) is silenced by microattn's headers around their own code (arch.hpp), as a user needs.
set(CMAKE_CXX_FLAGS_INIT "-march=x86-64-v4")
set(MICROATTN_EXPECT_ARCH "avx512bw" CACHE STRING "Kernel arch the tests must see")
