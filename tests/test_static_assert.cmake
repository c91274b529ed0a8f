# SPDX-License-Identifier: Apache-2.0
# A configuration that makes no sense must fail to compile with a message naming the parameter.
# Run as: cmake -DCXX=... -DINC=... -DCASE=... -DEXPECT=... -P test_static_assert.cmake
# Or, with -DSOURCE=file.cpp -DDEFS=..., a given source file (CASE then only names the case).
# EXPECT empty: the source must compile.
if(SOURCE)
  set(_src "${SOURCE}")
  separate_arguments(_defs UNIX_COMMAND "${DEFS}")
else()
  set(_src "${OUT}/bad_config_${CASE}.cpp")
  file(WRITE "${_src}"
       "#include \"microattn/microattn.hpp\"\nusing Bad = microattn::Config<${CASE}>;\nint main() { return static_cast<int>(Bad::kGroup); }\n")
  set(_defs "")
endif()
execute_process(COMMAND ${CXX} -std=c++17 -fsyntax-only -I${INC} -DMICROATTN_FORCE_SCALAR=1 ${_defs} "${_src}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT EXPECT)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CASE} must compile, but:\n${err}")
  endif()
  message(STATUS "${CASE}: compiles")
  return()
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "Config<${CASE}> compiled, but it must not")
endif()
string(FIND "${err}" "${EXPECT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "Config<${CASE}> failed without the message '${EXPECT}':\n${err}")
endif()
message(STATUS "Config<${CASE}>: rejected with '${EXPECT}'")
