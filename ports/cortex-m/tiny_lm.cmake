# SPDX-License-Identifier: Apache-2.0
# The tiny trained language model from C on the board (examples/tiny_lm; included by
# ports/cortex-m/CMakeLists.txt): tiny_lm.c linked by the C compiler with the start-up that runs
# no C++ constructors, as a C firmware is.
#   microattn_cm_tiny_lm        the board's image: int8 weights and int8 cache (the model file
#                               in flash), integer compute, prefill 2 tokens at a time; prints
#                               the prompt's greedy continuation and the instructions per token
#   microattn_cm_tiny_lm_budget the same objects linked for linker/template (512 KiB flash,
#                               128 KiB RAM): the build fails if the image does not fit
#   microattn_cm_tiny_lm_check  QEMU only (big-memory layout): fp32 and the board's int8 model
#                               and the PyTorch reference; `--check` compares (ctest
#                               tiny_lm.cortex_m.<board>.check)
# Tests: cortex_m.<board>.tiny_lm (runs the demo under -icount), tiny_lm.cortex_m.<board>.check,
# tiny_lm.cortex_m.<board>.sampled (seeded sampling gives the host's text),
# cortex_m.<board>.tiny_lm_stack (worst-case stack of main within firmware.ld's reserve),
# cortex_m.<board>.tiny_lm_zero_init (the model object in .bss, no constructors),
# cortex_m.<board>.tiny_lm_no_double (no soft-float double routine and no double libm function
# in the image: check_no_double.cmake).
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "microattn: no Python 3 interpreter: the Cortex-M tiny_lm images are skipped")
  return()
endif()
enable_language(C)
include(${PROJECT_SOURCE_DIR}/examples/tiny_lm/tiny_lm.cmake)

set(_tlm_dir ${CMAKE_CURRENT_BINARY_DIR}/tiny_lm)
# Integer compute: 2.5x fewer modelled M4 cycles per token than fp32 compute on the int8
# weights (docs/targets.md); prefill chunk 2: its buffers and the cache fit 128 KiB of RAM.
microattn_tiny_lm_glue(${_tlm_dir} _tlm WORKERS 1 Q8_CHUNK 2 NO_F32 Q8_INT8_COMPUTE)
add_library(microattn_cm_tiny_lm_objs OBJECT ${_tlm})
microattn_tiny_lm_setup(microattn_cm_tiny_lm_objs ${_tlm_dir} NO_F32)
target_link_libraries(microattn_cm_tiny_lm_objs PRIVATE microattn)
target_compile_options(microattn_cm_tiny_lm_objs PRIVATE ${MICROATTN_WARNINGS}
                       ${MICROATTN_CM_STACK_FLAGS})

function(microattn_cm_tiny_lm_image name port)
  microattn_cm_firmware(${name} firmware PORT ${port} tiny_lm_port.cpp
                        $<TARGET_OBJECTS:microattn_cm_tiny_lm_objs>)
  target_include_directories(${name} PRIVATE ${MICROATTN_TINY_LM_DIR})
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE C)
  target_link_libraries(${name} PRIVATE m)
endfunction()
microattn_cm_tiny_lm_image(microattn_cm_tiny_lm microattn_cm_port_no_ctors)
if(MICROATTN_CM_QEMU_BOARD)
  target_compile_definitions(microattn_cm_tiny_lm PRIVATE MICROATTN_TINY_LM_QEMU=1)
  microattn_cm_qemu_test(cortex_m.${MICROATTN_BOARD}.tiny_lm microattn_cm_tiny_lm 600
                         QEMU_ARGS -icount shift=0)
  set_tests_properties(cortex_m.${MICROATTN_BOARD}.tiny_lm PROPERTIES
    PASS_REGULAR_EXPRESSION "decode: +[0-9]+ tokens, [0-9]+ instructions")
  # The template board's memory map (a 512 KiB flash, 128 KiB RAM part).
  microattn_cm_port_library(microattn_cm_port_template_no_ctors
    BOARD_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/boards/template_port.cpp
    MEMORY ${_ld_dir}/template CLOCK_HZ 216000000 BOARD template
    DEFINITIONS MICROATTN_PORT_NO_CONSTRUCTORS=1)
  microattn_cm_tiny_lm_image(microattn_cm_tiny_lm_budget microattn_cm_port_template_no_ctors)

  set(_tlmc_dir ${CMAKE_CURRENT_BINARY_DIR}/tiny_lm_check)
  microattn_tiny_lm_glue(${_tlmc_dir} _tlmc WORKERS 1 Q8_CHUNK 2 Q8_INT8_COMPUTE)
  microattn_cm_firmware(microattn_cm_tiny_lm_check tests PORT microattn_cm_port_no_ctors
                        ${_tlmc} tiny_lm_port.cpp)
  microattn_tiny_lm_setup(microattn_cm_tiny_lm_check ${_tlmc_dir} CHECK)
  target_compile_definitions(microattn_cm_tiny_lm_check PRIVATE MICROATTN_TINY_LM_QEMU=1)
  set_target_properties(microattn_cm_tiny_lm_check PROPERTIES LINKER_LANGUAGE C)
  target_link_libraries(microattn_cm_tiny_lm_check PRIVATE m)
  microattn_cm_qemu_test(tiny_lm.cortex_m.${MICROATTN_BOARD}.check microattn_cm_tiny_lm_check 900
                         ARGS --check)
  set_tests_properties(tiny_lm.cortex_m.${MICROATTN_BOARD}.check PROPERTIES
    PASS_REGULAR_EXPRESSION "tiny_lm: check OK" FAIL_REGULAR_EXPRESSION "FAIL")
  # Seeded sampling gives the host's text (tests/CMakeLists.txt, tiny_lm_c_sampled).
  microattn_cm_qemu_test(tiny_lm.cortex_m.${MICROATTN_BOARD}.sampled microattn_cm_tiny_lm_check
                         600 ARGS --fp32 --prompt Love is --sample --seed 3)
  set_tests_properties(tiny_lm.cortex_m.${MICROATTN_BOARD}.sampled PROPERTIES
    PASS_REGULAR_EXPRESSION "\" on Ul thisse> shaghitt ou aourrate jull loueis marneh; Onlee th\"")
endif()

# The model object is a never-constructed static in .bss, and nothing needs a constructor.
add_test(NAME cortex_m.${MICROATTN_BOARD}.tiny_lm_zero_init
         COMMAND ${CMAKE_COMMAND} -DNM=${MICROATTN_ARM_NM} -DELF=$<TARGET_FILE:microattn_cm_tiny_lm>
                 -DSYMBOLS=g_tlm_q8 -P ${CMAKE_CURRENT_SOURCE_DIR}/check_zero_init.cmake)
set_tests_properties(cortex_m.${MICROATTN_BOARD}.tiny_lm_zero_init PROPERTIES
                     LABELS "cortex-m;static")
# No double anywhere in the board's image: the Cortex-M4/M33 FPU is single precision, so every
# double routine is soft-float flash (RoPE's tables are float-only, the demo prints integers).
add_test(NAME cortex_m.${MICROATTN_BOARD}.tiny_lm_no_double
         COMMAND ${CMAKE_COMMAND} -DNM=${MICROATTN_ARM_NM} -DELF=$<TARGET_FILE:microattn_cm_tiny_lm>
                 -DMAP=$<TARGET_FILE_DIR:microattn_cm_tiny_lm>/microattn_cm_tiny_lm.map
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/check_no_double.cmake)
set_tests_properties(cortex_m.${MICROATTN_BOARD}.tiny_lm_no_double PROPERTIES
                     LABELS "cortex-m;static")
# ... and the check fires: the int8 example's check image computes its oracle in double, which
# the M4 runs in soft float.
if(MICROATTN_CM_QEMU_BOARD AND MICROATTN_CPU STREQUAL "cortex-m4")
  add_test(NAME cortex_m.${MICROATTN_BOARD}.no_double_check_fires
           COMMAND ${CMAKE_COMMAND} -DNM=${MICROATTN_ARM_NM}
                   -DELF=$<TARGET_FILE:microattn_cm_example_q8_check>
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/check_no_double.cmake)
  set_tests_properties(cortex_m.${MICROATTN_BOARD}.no_double_check_fires PROPERTIES
    PASS_REGULAR_EXPRESSION "double-precision routines: [^\n]*__aeabi_dmul"
    LABELS "cortex-m;static")
endif()
add_test(NAME cortex_m.${MICROATTN_BOARD}.tiny_lm_stack
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/stack_usage.py
                 --dir ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/microattn_cm_tiny_lm_objs.dir
                 --dir ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/microattn_cm_tiny_lm.dir
                 --dir ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/microattn_cm_port_no_ctors.dir
                 --dir ${CMAKE_BINARY_DIR}/CMakeFiles/microattn.dir
                 --entry "main" --limit 8192)
set_tests_properties(cortex_m.${MICROATTN_BOARD}.tiny_lm_stack PROPERTIES LABELS "cortex-m;static")
