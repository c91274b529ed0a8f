# SPDX-License-Identifier: Apache-2.0
# Every source file of the project carries its licence line (LICENSE: Apache-2.0) within its
# first three lines. Run as: cmake -DSRC=<repo> -P check_spdx.cmake
file(GLOB_RECURSE _files RELATIVE ${SRC}
     ${SRC}/include/*.hpp ${SRC}/include/*.h ${SRC}/lib/*.cpp ${SRC}/tests/*.cpp ${SRC}/tests/*.hpp
     ${SRC}/tests/*.c ${SRC}/tests/*.h ${SRC}/tests/*.py ${SRC}/tests/*.cmake
     ${SRC}/bench/*.cpp ${SRC}/bench/*.hpp ${SRC}/bench/*.c ${SRC}/bench/*.h
     ${SRC}/examples/*.cpp ${SRC}/ports/*.cpp ${SRC}/ports/*.c
     ${SRC}/ports/*.h ${SRC}/ports/*.hpp ${SRC}/ports/*.py ${SRC}/ports/*.sh ${SRC}/ports/*.cmake
     ${SRC}/tools/*.py ${SRC}/scripts/*.sh ${SRC}/scripts/*.py ${SRC}/toolchains/*.cmake
     ${SRC}/cmake/*.cmake ${SRC}/cmake/*.in)
file(GLOB_RECURSE _lists RELATIVE ${SRC} ${SRC}/CMakeLists.txt)
set(_missing "")
foreach(f IN LISTS _files _lists)
  if(f MATCHES "^build/|^tests/data/")
    continue()
  endif()
  file(STRINGS "${SRC}/${f}" _head LIMIT_COUNT 3)
  string(FIND "${_head}" "SPDX-License-Identifier: Apache-2.0" _pos)
  if(_pos EQUAL -1)
    list(APPEND _missing "${f}")
  endif()
endforeach()
if(_missing)
  list(JOIN _missing "\n  " _m)
  message(FATAL_ERROR "no SPDX-License-Identifier line in:\n  ${_m}")
endif()
list(LENGTH _files _n)
message(STATUS "SPDX line in all ${_n} source files")
