# SPDX-License-Identifier: Apache-2.0
# A firmware user's clang build: tests/werror_user.cpp compiled by clang++ for bare-metal
# Cortex-M4F, M7 and M55 (-Werror, no exceptions or RTTI), with the C and C++ library headers of
# the arm-none-eabi GCC toolchain (newlib, libstdc++) and clang's own compiler headers, to
# assembly. Fails on a warning; on any call of the C library's fmaf (clang keeps math errno on
# for bare-metal targets and compiled each scalar multiply-add to such a call: see
# MICROATTN_SCALAR_FMA_ASM in arch.hpp) or fmaxf (Vec<ScalarArch>::clamp_below is one VMAXNM);
# and on a build with no vfma.f32 at all.
# -D CLANGXX=... -D GXX=arm-none-eabi-g++ -D SRC=<project> -D OUT=<dir>
set(_cores
    "m4|thumbv7em-none-eabihf|-mcpu=cortex-m4,-mfpu=fpv4-sp-d16,-mfloat-abi=hard"
    "m7|thumbv7em-none-eabihf|-mcpu=cortex-m7,-mfpu=fpv5-d16,-mfloat-abi=hard"
    "m55|thumbv8.1m.main-none-eabihf|-mcpu=cortex-m55,-mfloat-abi=hard")
foreach(c ${_cores})
  string(REPLACE "|" ";" parts "${c}")
  list(GET parts 0 name)
  list(GET parts 1 triple)
  list(GET parts 2 flags)
  string(REPLACE "," ";" flags "${flags}")
  # The toolchain's header directories for this core's multilib, without GCC's own compiler
  # headers (lib/gcc/arm-none-eabi/<version>/include*: clang brings its own arm_mve.h, ...).
  execute_process(COMMAND ${GXX} -mthumb ${flags} -E -x c++ -v -
                  INPUT_FILE /dev/null OUTPUT_QUIET ERROR_VARIABLE gcc_v RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${GXX} -E -v failed for ${name}")
  endif()
  string(REGEX REPLACE ".*#include <...> search starts here:\n(.*)End of search list.*" "\\1"
                       dirs "${gcc_v}")
  string(REPLACE "\n" ";" dirs "${dirs}")
  set(inc "")
  foreach(d ${dirs})
    string(STRIP "${d}" d)
    if(d STREQUAL "" OR d MATCHES "/lib/gcc/arm-none-eabi/[^/]+/include(-fixed)?$")
      continue()
    endif()
    list(APPEND inc -isystem ${d})
  endforeach()
  set(asm ${OUT}/clang_bare_metal_${name}.s)
  execute_process(COMMAND ${CLANGXX} --target=${triple} ${flags} -std=c++17 -O2 -Wall -Wextra
                          -Wpedantic -Werror -fno-exceptions -fno-rtti -nostdinc++ ${inc}
                          -I${SRC}/include -S ${SRC}/tests/werror_user.cpp -o ${asm}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "clang for Cortex-${name}: the build failed:\n${out}")
  endif()
  file(STRINGS ${asm} calls REGEX "^[ \t]+bl?[ \t]+fmax?f$")
  file(STRINGS ${asm} fmas REGEX "^[ \t]+vfma\\.f32")
  list(LENGTH calls n_calls)
  list(LENGTH fmas n_fmas)
  if(n_calls GREATER 0)
    message(FATAL_ERROR "clang for Cortex-${name}: ${n_calls} calls of fmaf / fmaxf (${asm})")
  endif()
  if(n_fmas EQUAL 0)
    message(FATAL_ERROR "clang for Cortex-${name}: no vfma.f32 in the build (${asm})")
  endif()
  message(STATUS "clang for Cortex-${name}: ${n_fmas} vfma.f32, no fmaf or fmaxf call")
endforeach()
