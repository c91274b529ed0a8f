# SPDX-License-Identifier: Apache-2.0
# microattn's C interface on the board (included by ports/cortex-m/CMakeLists.txt): a C11 main
# (c_api_main.c) using layers defined by c_api_layers.cpp, whose C headers tools/microattn_c.py
# generates at build time for this compiler and these flags. Built in Debug (-O0 -g,
# MICROATTN_ASSERT active) whatever the build type, with the start-up that runs no C++
# constructors (as C firmware's does). Tests:
#   cortex_m.<board>.c_api               runs it: the C API equals the C++ API bit for bit, the
#                                        layer is within 1e-5 of the double oracle; an int8-weight
#                                        layer (cm_mha_q8, weights from microattn_quantize_int8)
#   cortex_m.<board>.c_api_assert_traps  a failed kernel assertion traps into the fault handler
#   cortex_m.<board>.c_api_static        no heap function, no __assert_func / abort / stdio in
#                                        the image (newlib's assert prints with fiprintf, which
#                                        allocates), no C++ runtime (personality routine,
#                                        unwinder, __cxa_*: the image is linked by the C
#                                        compiler), and trap instructions in microattn's code
#                                        (the assertions are compiled in, as traps)
#   cortex_m.<board>.c_api_zero_init     its C objects are in .bss, nothing in .init_array
#   cortex_m.<board>.c_api_stack_usage   worst-case stack of main at -O0 within the stack reserve
enable_language(C)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "microattn: no Python 3 interpreter: the Cortex-M C API image is skipped "
                 "(tools/microattn_c.py writes its headers)")
  return()
endif()
find_program(MICROATTN_ARM_OBJDUMP NAMES arm-none-eabi-objdump)

set(_cm_c_dir ${CMAKE_CURRENT_BINARY_DIR}/c_api_generated)
file(GLOB_RECURSE _cm_c_lib_headers ${PROJECT_SOURCE_DIR}/include/microattn/*)
set(_cm_c_opts "$<TARGET_PROPERTY:microattn,INTERFACE_COMPILE_OPTIONS>")
set(_cm_c_defs "$<TARGET_PROPERTY:microattn,INTERFACE_COMPILE_DEFINITIONS>")
set(_cm_c_flags "${CMAKE_CXX_FLAGS}$<$<BOOL:${_cm_c_opts}>: $<JOIN:${_cm_c_opts}, >>")
string(APPEND _cm_c_flags "$<$<BOOL:${_cm_c_defs}>: -D$<JOIN:${_cm_c_defs}, -D>>")
set(_cm_c_headers "")
foreach(spec "cm_mha|layer|24, 32, 4, 2, 8, microattn::Bias::kYes|"
             "cm_kv|kv|24, 32, 4, 2, 8, microattn::Rope::kYes|5"
             "cm_core|core|24, 32, 4, 2, 8|"
             "cm_mha_q8|layer|24, 32, 4, 2, 8, microattn::Bias::kYes, microattn::WeightType::kInt8|")
  string(REPLACE "|" ";" spec "${spec}")
  list(GET spec 0 name)
  list(GET spec 1 kind)
  list(GET spec 2 config)
  list(GET spec 3 chunk)
  set(_chunk_arg "")
  if(chunk)
    set(_chunk_arg --chunk ${chunk})
  endif()
  add_custom_command(OUTPUT ${_cm_c_dir}/${name}.h
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/microattn_c.py --name ${name}
            --kind ${kind} "--config=${config}" ${_chunk_arg} --cxx ${CMAKE_CXX_COMPILER}
            "--cxxflags=${_cm_c_flags}" --out ${_cm_c_dir}/${name}.h
    DEPENDS ${PROJECT_SOURCE_DIR}/tools/microattn_c.py ${_cm_c_lib_headers}
    COMMENT "tools/microattn_c.py: ${name}.h for ${MICROATTN_CPU}" VERBATIM)
  list(APPEND _cm_c_headers ${_cm_c_dir}/${name}.h)
endforeach()

# The stack reserve of firmware.ld (8 KiB): -O0 frames are larger than -O3's, and
# c_api_stack_usage checks that main's deepest chain still fits.
set(_cm_c_stack 8192)
microattn_cm_firmware(microattn_cm_c_api firmware PORT microattn_cm_port_no_ctors
                      c_api_main.c c_api_layers.cpp c_api_support.cpp ${_cm_c_headers})
set_target_properties(microattn_cm_c_api PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON
                      C_EXTENSIONS OFF)
target_include_directories(microattn_cm_c_api PRIVATE ${_cm_c_dir} ${PROJECT_SOURCE_DIR}/tests)
# Debug whatever CMAKE_BUILD_TYPE says: these come after its -O3 -DNDEBUG on the command line.
target_compile_options(microattn_cm_c_api PRIVATE -O0 -g -UNDEBUG
                       "$<$<COMPILE_LANGUAGE:C>:-Werror;-pedantic>")
# Linked by the C compiler, as a C firmware is: no libstdc++ / libsupc++ (the C++ files are built
# with -fno-exceptions -fno-rtti, toolchains/arm-none-eabi.cmake), so a C++ runtime symbol the
# C++ files needed (__gxx_personality_v0, __cxa_*, operator new) would fail the link. libm: what
# g++ adds by itself.
set_target_properties(microattn_cm_c_api PROPERTIES LINKER_LANGUAGE C)
target_link_libraries(microattn_cm_c_api PRIVATE m)

microattn_cm_qemu_test(cortex_m.${MICROATTN_BOARD}.c_api microattn_cm_c_api 120)
set_tests_properties(cortex_m.${MICROATTN_BOARD}.c_api PROPERTIES FAIL_REGULAR_EXPRESSION "FAIL ")
microattn_cm_qemu_test(cortex_m.${MICROATTN_BOARD}.c_api_assert_traps microattn_cm_c_api 60
                       ARGS --assert)
set_tests_properties(cortex_m.${MICROATTN_BOARD}.c_api_assert_traps PROPERTIES
  PASS_REGULAR_EXPRESSION "microattn: (UsageFault|HardFault) pc=" FAIL_REGULAR_EXPRESSION "FAIL ")

add_test(NAME cortex_m.${MICROATTN_BOARD}.c_api_static
         COMMAND ${CMAKE_COMMAND} -DNM=${MICROATTN_ARM_NM} -DOBJDUMP=${MICROATTN_ARM_OBJDUMP}
                 -DELF=$<TARGET_FILE:microattn_cm_c_api>
                 "-DREQUIRED=main;cm_mha_forward;cm_kv_prefill;cm_kv_decode;cm_core_forward;cm_mha_q8_forward;microattn_quantize_int8;microattn_status_string"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/c_api_check_image.cmake)
set_tests_properties(cortex_m.${MICROATTN_BOARD}.c_api_static PROPERTIES LABELS "cortex-m;static")
add_test(NAME cortex_m.${MICROATTN_BOARD}.c_api_zero_init
         COMMAND ${CMAKE_COMMAND} -DNM=${MICROATTN_ARM_NM} -DELF=$<TARGET_FILE:microattn_cm_c_api>
                 "-DSYMBOLS=g_mha;g_kv;g_core;g_mha_q8"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/check_zero_init.cmake)
set_tests_properties(cortex_m.${MICROATTN_BOARD}.c_api_zero_init PROPERTIES LABELS "cortex-m;static")
if(Python3_Interpreter_FOUND)
  add_test(NAME cortex_m.${MICROATTN_BOARD}.c_api_stack_usage
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/stack_usage.py
                   --dir ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/microattn_cm_c_api.dir
                   --dir ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/microattn_cm_port_no_ctors.dir
                   --dir ${CMAKE_BINARY_DIR}/CMakeFiles/microattn.dir
                   --entry "main" --limit ${_cm_c_stack})
  set_tests_properties(cortex_m.${MICROATTN_BOARD}.c_api_stack_usage PROPERTIES
    LABELS "cortex-m;static")
endif()
