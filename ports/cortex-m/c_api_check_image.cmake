# SPDX-License-Identifier: Apache-2.0
# Static checks of the Cortex-M C API image (c_api.cmake), a Debug build:
#  1. no heap function (as check_no_heap.cmake) and none of what a C library's assert() or
#     printf brings in on newlib: __assert_func (fiprintf, which allocates), abort, the stdio
#     printers, _sbrk; no C++ runtime (__gxx_personality_v0, the unwinder, __cxa_*), which a
#     C firmware's link does not have;
#  2. the symbols in REQUIRED are defined (the image is what it claims to be);
#  3. with OBJDUMP: microattn's code holds trap instructions (udf), i.e. MICROATTN_ASSERT is
#     compiled in, as a trap rather than a call.
#   cmake -DNM=arm-none-eabi-nm [-DOBJDUMP=arm-none-eabi-objdump] -DELF=image.elf
#         "-DREQUIRED=a;b" -P c_api_check_image.cmake
cmake_minimum_required(VERSION 3.22)
if(NOT NM OR NOT ELF)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> [-DOBJDUMP=<objdump>] -DELF=<image> [-DREQUIRED=..] -P c_api_check_image.cmake")
endif()
execute_process(COMMAND ${NM} --defined-only ${ELF} OUTPUT_VARIABLE _syms RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${NM} ${ELF} failed (${_rc})")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/heap_symbols.cmake)
# Besides the heap: what assert() and printf bring in on newlib.
set(_forbidden __assert_func __assert __assert_fail abort _exit exit
    printf fprintf fiprintf iprintf vfprintf _vfprintf_r _vfiprintf_r puts fputs fwrite
    _printf_r _fprintf_r _fiprintf_r __sfp __sinit _fflush_r)
# The C++ runtime a C link does not bring (the image is linked by the C compiler): exception
# handling and unwinding, guards, pure virtuals. Prefixes.
set(_forbidden_prefixes __gxx_personality __cxa_ _Unwind_ __aeabi_unwind_cpp_pr __gnu_unwind
    __gnu_Unwind _ZSt9terminate _ZN10__cxxabiv)
set(_bad "")
set(_defined "")
string(REPLACE "\n" ";" _lines "${_syms}")
foreach(line IN LISTS _lines)
  if(line MATCHES "^[0-9a-fA-F]+ [A-Za-z] (.+)$")
    set(_name "${CMAKE_MATCH_1}")
    list(APPEND _defined "${_name}")
    microattn_is_heap_symbol("${_name}" _heap)
    if(_heap OR _name IN_LIST _forbidden)
      list(APPEND _bad "${_name}")
    endif()
    foreach(_p IN LISTS _forbidden_prefixes)
      string(FIND "${_name}" "${_p}" _at)
      if(_at EQUAL 0)
        list(APPEND _bad "${_name}")
      endif()
    endforeach()
  endif()
endforeach()
set(_errors "")
if(_bad)
  list(APPEND _errors "forbidden functions linked: ${_bad}")
endif()
foreach(s IN LISTS REQUIRED)
  if(NOT s IN_LIST _defined)
    list(APPEND _errors "symbol ${s} not defined")
  endif()
endforeach()

set(_traps "")
if(OBJDUMP)
  execute_process(COMMAND ${OBJDUMP} -d -C ${ELF} OUTPUT_VARIABLE _dis RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${OBJDUMP} -d ${ELF} failed (${_rc})")
  endif()
  string(REPLACE ";" "," _dis "${_dis}")
  string(REPLACE "\n" ";" _dlines "${_dis}")
  set(_fn "")
  set(_n 0)
  set(_fns "")
  foreach(line IN LISTS _dlines)
    if(line MATCHES "^[0-9a-f]+ <(.+)>:$")
      set(_fn "${CMAKE_MATCH_1}")
    elseif(line MATCHES "\tudf\t" AND _fn MATCHES "microattn")
      math(EXPR _n "${_n} + 1")
      list(APPEND _fns "${_fn}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _fns)
  list(LENGTH _fns _nf)
  if(_n EQUAL 0)
    list(APPEND _errors "no trap instruction (udf) in microattn's functions: MICROATTN_ASSERT is not compiled in")
  endif()
  set(_traps " ${_n} trap instructions (MICROATTN_ASSERT) in ${_nf} microattn functions;")
else()
  message(STATUS "no arm-none-eabi-objdump: trap instructions not counted")
endif()

if(_errors)
  string(REPLACE ";" "\n  " _msg "${_errors}")
  message(FATAL_ERROR "${ELF}:\n  ${_msg}")
endif()
list(LENGTH _lines _n_syms)
message(STATUS "${ELF}:${_traps} no heap, assert, abort, stdio or C++ runtime function among ${_n_syms} symbols")
