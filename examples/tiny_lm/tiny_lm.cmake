# SPDX-License-Identifier: Apache-2.0
# The tiny language model's C glue for this build's compiler and flags (included by
# examples/CMakeLists.txt for a host and by ports/cortex-m/CMakeLists.txt for a board):
# tools/microattn_c.py writes the C headers of its models, tlm_f32 (fp32 weights and cache) and
# tlm_q8 (int8 weights, int8 cache), and the C++ file that defines their functions.
#
# microattn_tiny_lm_glue(<dir> <out_var> WORKERS <n> [F32_CHUNK <n>] [Q8_CHUNK <n>] [NO_F32]
#                        [Q8_INT8_COMPUTE])
#   <dir>/tlm_q8.h, <dir>/tlm_f32.h (unless NO_F32), <dir>/tiny_lm_model.cpp; <out_var> gets
#   the generated files (add them to the program's sources, <dir> to its include folders).
#   Q8_INT8_COMPUTE: tlm_q8 with Compute::kInt8 (integer products) as well.
set(MICROATTN_TINY_LM_DIR ${CMAKE_CURRENT_LIST_DIR})
set(MICROATTN_TINY_LM_SHAPE "100, 128, 2, 4, 2, 32, 256, 128, LmHead::kTied")

# microattn_glue_flags(<flags_var> <includes_var>): tools/microattn_c.py's --cxxflags and -I
# arguments for this build (generator expressions): the compiler's flags and target, and what
# the microattn target hands its users (as tests/c/CMakeLists.txt). Also examples/run/run.cmake's.
function(microattn_glue_flags flags_var incs_var)
  set(_flags "${CMAKE_CXX_FLAGS}")
  if(CMAKE_CXX_COMPILER_TARGET)
    string(APPEND _flags " --target=${CMAKE_CXX_COMPILER_TARGET}")
  endif()
  set(_opts "$<TARGET_PROPERTY:microattn,INTERFACE_COMPILE_OPTIONS>")
  set(_defs "$<TARGET_PROPERTY:microattn,INTERFACE_COMPILE_DEFINITIONS>")
  set(_incs "$<TARGET_PROPERTY:microattn,INTERFACE_INCLUDE_DIRECTORIES>")
  string(APPEND _flags "$<$<BOOL:${_opts}>: $<JOIN:${_opts}, >>"
                       "$<$<BOOL:${_defs}>: -D$<JOIN:${_defs}, -D>>")
  set(${flags_var} "${_flags}" PARENT_SCOPE)
  set(${incs_var} "$<$<BOOL:${_incs}>:-I$<JOIN:${_incs},;-I>>" PARENT_SCOPE)
endfunction()

function(microattn_tiny_lm_glue dir out)
  cmake_parse_arguments(ARG "NO_F32;Q8_INT8_COMPUTE" "WORKERS;F32_CHUNK;Q8_CHUNK" "" ${ARGN})
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  set(_gen ${PROJECT_SOURCE_DIR}/tools/microattn_c.py)
  file(GLOB_RECURSE _headers ${PROJECT_SOURCE_DIR}/include/microattn/*)
  microattn_glue_flags(_flags _probe_incs)
  set(_models q8)
  if(NOT ARG_NO_F32)
    list(APPEND _models f32)
  endif()
  set(_outs "")
  foreach(m IN LISTS _models)
    set(_cfg "${MICROATTN_TINY_LM_SHAPE}, MaxWorkers{${ARG_WORKERS}}")
    if(m STREQUAL "q8")
      string(APPEND _cfg ", WeightType::kInt8, CacheType::kInt8")
      if(ARG_Q8_INT8_COMPUTE)
        string(APPEND _cfg ", Compute::kInt8")
      endif()
    endif()
    string(TOUPPER "${m}" _M)
    set(_chunk "")
    if(ARG_${_M}_CHUNK)
      set(_chunk --chunk ${ARG_${_M}_CHUNK})
    endif()
    add_custom_command(OUTPUT ${dir}/tlm_${m}.h
      COMMAND ${Python3_EXECUTABLE} ${_gen} --name tlm_${m} --kind decoder "--config=${_cfg}"
              ${_chunk} --cxx ${CMAKE_CXX_COMPILER} "--cxxflags=${_flags}" "${_probe_incs}"
              --out ${dir}/tlm_${m}.h
      DEPENDS ${_gen} ${_headers}
      COMMENT "tools/microattn_c.py: tlm_${m}.h" VERBATIM COMMAND_EXPAND_LISTS)
    list(APPEND _outs ${dir}/tlm_${m}.h)
  endforeach()
  add_custom_command(OUTPUT ${dir}/tiny_lm_model.cpp
    COMMAND ${Python3_EXECUTABLE} ${_gen} --cpp-from ${_outs} --cpp-out ${dir}/tiny_lm_model.cpp
    DEPENDS ${_gen} ${_outs}
    COMMENT "tools/microattn_c.py: tiny_lm_model.cpp" VERBATIM)
  set(${out} ${_outs} ${dir}/tiny_lm_model.cpp PARENT_SCOPE)
endfunction()

# microattn_tiny_lm_setup(<target> <dir> [NO_F32] [CHECK] [README]): the program's sources and
# settings (<dir>: microattn_tiny_lm_glue's; the platform file is added by the caller; README:
# without tiny_lm.c).
function(microattn_tiny_lm_setup target dir)
  cmake_parse_arguments(ARG "NO_F32;CHECK;README" "" "" ${ARGN})
  if(NOT ARG_README)  # README's example has a main of its own
    target_sources(${target} PRIVATE ${MICROATTN_TINY_LM_DIR}/tiny_lm.c)
  endif()
  target_sources(${target} PRIVATE ${MICROATTN_TINY_LM_DIR}/tiny_lm_blobs.cpp)
  target_include_directories(${target} PRIVATE ${dir} ${MICROATTN_TINY_LM_DIR}
                             ${MICROATTN_TINY_LM_DIR}/../run)
  set_target_properties(${target} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  set_source_files_properties(${MICROATTN_TINY_LM_DIR}/tiny_lm_blobs.cpp PROPERTIES
    COMPILE_DEFINITIONS "TINY_LM_DIR=\"${MICROATTN_TINY_LM_DIR}\""
    OBJECT_DEPENDS "${MICROATTN_TINY_LM_DIR}/tiny_lm_f32.bin;${MICROATTN_TINY_LM_DIR}/tiny_lm_q8.bin")
  # The C glue as a C program links it: no C++ runtime (tools/microattn_c.py's file says so).
  set_source_files_properties(${dir}/tiny_lm_model.cpp PROPERTIES
                              COMPILE_OPTIONS "-fno-exceptions;-fno-rtti")
  if(ARG_NO_F32)
    target_compile_definitions(${target} PRIVATE TINY_LM_NO_F32=1)
  endif()
  if(ARG_CHECK)
    target_compile_definitions(${target} PRIVATE TINY_LM_CHECK=1)
    target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  endif()
endfunction()
