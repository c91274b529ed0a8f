# SPDX-License-Identifier: Apache-2.0
# Static half of the zero-init proof (zero_init.cpp): fails unless the linked image
#  1. has empty .preinit_array and .init_array, i.e. no dynamic initialiser at all (no
#     constructor for the startup to run or skip: the objects cannot depend on one), and
#  2. holds each object named in SYMBOLS in .bss (nm type b/B), not .data (d/D): an object
#     whose default members are not all zero is constant-initialised into .data, which costs its
#     full size in flash as well as RAM and only works when the start-up copies .data.
#   cmake -DNM=arm-none-eabi-nm -DELF=image.elf "-DSYMBOLS=ns::a;ns::b" -P check_zero_init.cmake
# Symbols are matched on their demangled names (nm -C), with or without enclosing namespaces.
cmake_minimum_required(VERSION 3.22)
if(NOT NM OR NOT ELF OR NOT SYMBOLS)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DELF=<image> -DSYMBOLS=<a;b> -P check_zero_init.cmake")
endif()
execute_process(COMMAND ${NM} --defined-only -S -C ${ELF} OUTPUT_VARIABLE _syms RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${NM} ${ELF} failed (${_rc})")
endif()
string(REPLACE ";" "\\;" _syms "${_syms}")
string(REPLACE "\n" ";" _lines "${_syms}")

set(_errors "")
# name -> "type size" for the symbols we need, and the constructor functions GCC emits
# (_GLOBAL__sub_I_<file>: one per translation unit with dynamic initialisers).
set(_ctors "")
foreach(line IN LISTS _lines)
  if(line MATCHES "^([0-9a-fA-F]+) ([0-9a-fA-F]+ )?([A-Za-z]) (.+)$")
    set(_addr "${CMAKE_MATCH_1}")
    string(STRIP "${CMAKE_MATCH_2}" _size)
    set(_type "${CMAKE_MATCH_3}")
    set(_name "${CMAKE_MATCH_4}")
    if(_name MATCHES "^__(pre)?init_array_(start|end)$")
      set(_addr_${_name} "${_addr}")
    elseif(_name MATCHES "^_GLOBAL__sub_I")
      list(APPEND _ctors "${_name}")
    endif()
    foreach(want IN LISTS SYMBOLS)
      if(_name STREQUAL want OR _name MATCHES "::${want}$")
        if(DEFINED _found_${want})
          list(APPEND _errors "symbol '${want}' matches more than one definition")
        endif()
        set(_found_${want} "${_type}")
        set(_size_${want} "${_size}")
      endif()
    endforeach()
  endif()
endforeach()

# 1. The init arrays: the linker script (common.ld) brackets each with start/end symbols.
string(REPLACE ";" ", " _ctors "${_ctors}")
foreach(arr preinit_array init_array)
  if(NOT DEFINED _addr___${arr}_start OR NOT DEFINED _addr___${arr}_end)
    list(APPEND _errors "__${arr}_start/__${arr}_end not found (linker script changed?)")
  else()
    math(EXPR _n "(0x${_addr___${arr}_end} - 0x${_addr___${arr}_start}) / 4")
    if(NOT _n EQUAL 0)
      list(APPEND _errors ".${arr} holds ${_n} constructor(s): a static object needs dynamic initialisation, which a start-up without constructors skips (functions: ${_ctors}, GCC names each after the first global of its translation unit, not after the object that needs it)")
    endif()
  endif()
endforeach()

# 2. Where the objects are.
set(_report "")
foreach(want IN LISTS SYMBOLS)
  if(NOT DEFINED _found_${want})
    list(APPEND _errors "object '${want}' not found in ${ELF}")
  elseif(NOT _found_${want} MATCHES "^[bB]$")
    if(_found_${want} MATCHES "^[dD]$")
      set(_where ".data: constant-initialised with a nonzero member")
    else()
      set(_where "nm type '${_found_${want}}'")
    endif()
    math(EXPR _bytes "0x${_size_${want}}")
    list(APPEND _errors "object '${want}' (${_bytes} bytes) is not in .bss but in ${_where}")
  else()
    math(EXPR _bytes "0x${_size_${want}}")
    string(APPEND _report " ${want} (${_bytes} B)")
  endif()
endforeach()

if(_errors)
  string(REPLACE ";" "\n  " _msg "${_errors}")
  message(FATAL_ERROR "zero-init check of ${ELF} failed:\n  ${_msg}")
endif()
message(STATUS "empty .preinit_array and .init_array; in .bss:${_report}")
