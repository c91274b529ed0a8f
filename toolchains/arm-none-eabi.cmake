# SPDX-License-Identifier: Apache-2.0
# Bare-metal Cortex-M with Debian's gcc-arm-none-eabi (GCC 12) and newlib.
#   cmake -B build/cm7 -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-none-eabi.cmake -DMICROATTN_CPU=cortex-m7
# MICROATTN_CPU picks the core and its FPU (the convention of CMSIS-NN's and Arm's toolchain
# files); MICROATTN_BOARD the QEMU machine the port links for (default: the one for that CPU).
# The library sees no __ARM_NEON, so arch.hpp selects the scalar kernels.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(MICROATTN_CPU "cortex-m4" CACHE STRING "cortex-m4 | cortex-m7 | cortex-m55")
set_property(CACHE MICROATTN_CPU PROPERTY STRINGS cortex-m4 cortex-m7 cortex-m55)
# try_compile projects re-read this file: hand them the choice.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES MICROATTN_CPU MICROATTN_BOARD)

if(MICROATTN_CPU STREQUAL "cortex-m4")
  set(_cpu_flags "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard")  # FPv4-SP: float only
  set(_board mps2-an386)
elseif(MICROATTN_CPU STREQUAL "cortex-m7")
  set(_cpu_flags "-mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard")     # FPv5: float + double
  set(_board mps2-an500)
elseif(MICROATTN_CPU STREQUAL "cortex-m55")
  # -mfpu=auto (the default) takes the FPU from -mcpu: FPv5-D16 + MVE-F (Helium). GCC 12 picks
  # the thumb/v8-m.main+dp/hard multilib for it.
  set(_cpu_flags "-mcpu=cortex-m55 -mfloat-abi=hard")
  set(_board mps3-an547)
else()
  message(FATAL_ERROR "MICROATTN_CPU='${MICROATTN_CPU}': use cortex-m4, cortex-m7 or cortex-m55")
endif()
set(MICROATTN_BOARD "${_board}" CACHE STRING "QEMU machine for the Cortex-M port")

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_AR arm-none-eabi-ar CACHE FILEPATH "")
set(CMAKE_RANLIB arm-none-eabi-ranlib CACHE FILEPATH "")
set(CMAKE_OBJCOPY arm-none-eabi-objcopy CACHE FILEPATH "")
set(CMAKE_SIZE arm-none-eabi-size CACHE FILEPATH "")
set(CMAKE_NM arm-none-eabi-nm CACHE FILEPATH "")
# Without startup code and a linker script a test executable cannot link: probe with a library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# No exceptions, no RTTI, one section per function/object so --gc-sections drops what is
# unused, no thread-safe static guards (single thread; spares __cxa_guard_*), no atexit
# registration of static destructors (they never run on bare metal).
set(_common "-mthumb ${_cpu_flags} -ffunction-sections -fdata-sections")
set(CMAKE_C_FLAGS_INIT "${_common}")
set(CMAKE_CXX_FLAGS_INIT "${_common} -fno-exceptions -fno-rtti -fno-threadsafe-statics -fno-use-cxa-atexit")
set(CMAKE_ASM_FLAGS_INIT "${_common}")
# newlib-nano; -nostartfiles: ports/cortex-m/startup.cpp is the whole C runtime start-up.
set(CMAKE_EXE_LINKER_FLAGS_INIT "--specs=nano.specs -nostartfiles -Wl,--gc-sections")

# Kernel arch the tests must report (tests/test_arch.cpp, ports/cortex-m/port_test.cpp): Helium
# (MVE-F) kernels on the M55, scalar ones on the M4 and M7 or with -DMICROATTN_FORCE_SCALAR=ON.
if(MICROATTN_CPU STREQUAL "cortex-m55" AND NOT MICROATTN_FORCE_SCALAR)
  set(_expect_arch mve)
else()
  set(_expect_arch scalar)
endif()
set(MICROATTN_EXPECT_ARCH "${_expect_arch}" CACHE STRING "Kernel arch the tests must see")

# Find programs on the build machine, everything else only in the (absent) target root.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
