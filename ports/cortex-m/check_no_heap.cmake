# SPDX-License-Identifier: Apache-2.0
# Fails when the linked image ELF contains any heap function (the no-heap rule of DESIGN.md
# section 2, checked on the final image rather than on the sources).
#   cmake -DNM=arm-none-eabi-nm -DELF=image.elf -P check_no_heap.cmake
cmake_minimum_required(VERSION 3.22)
if(NOT NM OR NOT ELF)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DELF=<image> -P check_no_heap.cmake")
endif()
execute_process(COMMAND ${NM} --defined-only ${ELF} OUTPUT_VARIABLE _syms RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${NM} ${ELF} failed (${_rc})")
endif()
# C allocators, newlib's reentrant versions and break, and every operator new/delete
# (_Znwj/_Znaj: new(size_t) on 32-bit; _ZdlPv...: delete; nothrow and aligned variants included).
set(_forbidden malloc free realloc calloc memalign posix_memalign aligned_alloc valloc pvalloc
    _malloc_r _free_r _realloc_r _calloc_r _memalign_r _sbrk _sbrk_r sbrk)
set(_bad "")
string(REPLACE "\n" ";" _lines "${_syms}")
foreach(line IN LISTS _lines)
  if(line MATCHES "^[0-9a-fA-F]+ [A-Za-z] (.+)$")
    set(_name "${CMAKE_MATCH_1}")
    if(_name IN_LIST _forbidden OR _name MATCHES "^_Zn[wa][jmy]" OR _name MATCHES "^_Zd[la]Pv")
      list(APPEND _bad "${_name}")
    endif()
  endif()
endforeach()
list(LENGTH _lines _n)
if(_bad)
  message(FATAL_ERROR "heap functions linked into ${ELF}: ${_bad}")
endif()
message(STATUS "no heap function among the ${_n} symbols of ${ELF}")
