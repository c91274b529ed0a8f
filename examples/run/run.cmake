# SPDX-License-Identifier: Apache-2.0
# examples/run/microattn_run.c for one model file. tools/microattn_c.py --from-model writes the
# C glue of the file's DecoderConfig (T_max: the file's context, or CONTEXT) for this build's
# compiler and flags; the model file must exist when it builds.
#   microattn_runner(<target> <name> <model file> [CONTEXT <n>])    a host program reading the
#       file at run time (run_host.c, tiny_lm_host.cpp)
#   microattn_run_setup(<target> <name> <model file> [CONTEXT <n>])  the glue and the runner's
#       sources and settings added to an existing target (a board image brings its own
#       run_platform.h and tiny_lm_platform.h)
set(MICROATTN_RUN_DIR ${CMAKE_CURRENT_LIST_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/../tiny_lm/tiny_lm.cmake)  # microattn_glue_flags

function(microattn_run_setup target name model)
  cmake_parse_arguments(ARG "" "CONTEXT" "" ${ARGN})
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  set(_gen ${PROJECT_SOURCE_DIR}/tools/microattn_c.py)
  set(_dir ${CMAKE_CURRENT_BINARY_DIR}/${target}_glue)
  file(GLOB_RECURSE _headers ${PROJECT_SOURCE_DIR}/include/microattn/*)
  microattn_glue_flags(_flags _probe_incs)
  set(_ctx "")
  if(ARG_CONTEXT)
    set(_ctx --context ${ARG_CONTEXT})
  endif()
  add_custom_command(OUTPUT ${_dir}/${name}.h ${_dir}/${name}.cpp
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_dir}
    COMMAND ${Python3_EXECUTABLE} ${_gen} --name ${name} --kind decoder --from-model ${model}
            ${_ctx} --cxx ${CMAKE_CXX_COMPILER} "--cxxflags=${_flags}" "${_probe_incs}"
            --out ${_dir}/${name}.h --cpp-out ${_dir}/${name}.cpp
    DEPENDS ${_gen} ${_headers} ${model}
    COMMENT "tools/microattn_c.py --from-model: ${name}.h" VERBATIM COMMAND_EXPAND_LISTS)
  enable_language(C)
  target_sources(${target} PRIVATE ${MICROATTN_RUN_DIR}/microattn_run.c ${_dir}/${name}.cpp)
  string(TOUPPER "${name}" _N)
  target_compile_definitions(${target} PRIVATE RUN_MODEL=${name} "RUN_HEADER=\"${name}.h\""
                             RUN_VOCAB=${_N}_VOCAB RUN_T_MAX=${_N}_T_MAX)
  target_include_directories(${target} PRIVATE ${_dir} ${MICROATTN_RUN_DIR}
                             ${PROJECT_SOURCE_DIR}/examples/tiny_lm)
  set_target_properties(${target} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON
                        C_EXTENSIONS OFF)
  set_source_files_properties(${_dir}/${name}.cpp TARGET_DIRECTORY ${target} PROPERTIES
                              COMPILE_OPTIONS "-fno-exceptions;-fno-rtti")
endfunction()

function(microattn_runner target name model)
  add_executable(${target} ${MICROATTN_RUN_DIR}/run_host.c
                 ${PROJECT_SOURCE_DIR}/examples/tiny_lm/tiny_lm_host.cpp)
  microattn_run_setup(${target} ${name} ${model} ${ARGN})
  find_package(Threads REQUIRED)
  target_link_libraries(${target} PRIVATE microattn Threads::Threads)
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:C>:-Wall;-Wextra;-pedantic>"
    "$<$<COMPILE_LANGUAGE:CXX>:${MICROATTN_WARNINGS}>")
endfunction()
