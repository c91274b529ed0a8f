# SPDX-License-Identifier: Apache-2.0
# x86-64 with AVX2 + FMA (x86-64-v3: Haswell and later, Zen 1 and later), built and run on an
# x86-64 Linux machine with the system g++. Not a cross build: ctest runs the tests natively,
# so the machine must have AVX2 (on one without, `qemu-x86_64 -cpu max` runs AVX2 since QEMU 7.2).
#   cmake -B build/x86-avx2 -DCMAKE_TOOLCHAIN_FILE=toolchains/x86_64-avx2.cmake
set(CMAKE_C_COMPILER gcc)
set(CMAKE_CXX_COMPILER g++)
set(CMAKE_C_FLAGS_INIT "-march=x86-64-v3")
set(CMAKE_CXX_FLAGS_INIT "-march=x86-64-v3")
set(MICROATTN_EXPECT_ARCH "fma3+avx2" CACHE STRING "Kernel arch the tests must see")
