# SPDX-License-Identifier: Apache-2.0
# Static check of a linked image: no double-precision code. Fails if the image defines any
#  - soft-float double routine of libgcc: __aeabi_d* (arithmetic, compares, conversions from
#    double), __aeabi_*2d (conversions to double), and their generic names (__muldf3, ...);
#  - double libm function: cos, sin, exp, log, pow and the rest of the usual ones, and newlib's
#    double internals (__ieee754_*, __kernel_* without the float suffix f).
# On the Cortex-M4/M33 FPU (single precision only) each such routine is flash and, on the path
# that calls it, soft-float cycles; microattn's RoPE tables and the tiny_lm demo need none.
#   cmake -DNM=arm-none-eabi-nm -DELF=image.elf [-DMAP=image.map] -P check_no_double.cmake
# With MAP (the linker map), the failure names the objects that pulled each routine in.
cmake_minimum_required(VERSION 3.22)
if(NOT NM OR NOT ELF)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DELF=<image> [-DMAP=<map>] -P check_no_double.cmake")
endif()
execute_process(COMMAND ${NM} --defined-only ${ELF} OUTPUT_VARIABLE _syms RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${NM} ${ELF} failed (${_rc})")
endif()
string(REPLACE ";" "\\;" _syms "${_syms}")
string(REPLACE "\n" ";" _lines "${_syms}")

set(_libm sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 expm1 log
          log2 log10 log1p pow sqrt cbrt hypot fmod sincos erf erfc tgamma lgamma)
string(REPLACE ";" "|" _libm "${_libm}")
set(_re_libm "^(${_libm})$")
set(_re_newlib "^__(ieee754|kernel)_[a-z0-9_]*[a-eg-z0-9_]$")  # not ..f (float)
set(_re_aeabi "^__aeabi_(d[a-z0-9]+|[a-z0-9]+2d)$")
set(_re_libgcc
    "^__([a-z]+df3|[a-z]+df2|extendsfdf2|truncdfsf2|float(un)?[sdt]idf|fix(uns)?df[sdt]i)$")

set(_found "")
foreach(line IN LISTS _lines)
  if(line MATCHES "^[0-9a-fA-F]+ [A-Za-z] (.+)$")
    set(_name "${CMAKE_MATCH_1}")
    if(_name MATCHES "${_re_libm}" OR _name MATCHES "${_re_newlib}" OR _name MATCHES "${_re_aeabi}"
       OR _name MATCHES "${_re_libgcc}")
      list(APPEND _found "${_name}")
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES _found)

if(_found)
  set(_why "")
  if(MAP AND EXISTS "${MAP}")
    # The map's "Archive member included to satisfy reference by file (symbol)" section:
    # "<archive>(<member>)" then, indented, "<the object that referenced it> (<symbol>)".
    file(STRINGS "${MAP}" _map)
    foreach(sym IN LISTS _found)
      foreach(m IN LISTS _map)
        string(STRIP "${m}" m)
        if(m MATCHES "^(.+) \\(${sym}\\)$")
          get_filename_component(_obj "${CMAKE_MATCH_1}" NAME)
          list(APPEND _why "${sym} <- ${_obj}")
        endif()
      endforeach()
    endforeach()
  endif()
  string(REPLACE ";" ", " _list "${_found}")
  string(REPLACE ";" "\n  " _why "${_why}")
  message(STATUS "double-precision routines: ${_list}")  # one line (no wrapping), for tests
  message(FATAL_ERROR "${ELF} links double-precision code: ${_list}\n"
                      "first referenced by (linker map):\n  ${_why}")
endif()
message(STATUS "no double-precision routine in ${ELF}")
