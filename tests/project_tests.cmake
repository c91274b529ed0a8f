# SPDX-License-Identifier: Apache-2.0
# The tests of the whole project beside the kernels' numerics (included by tests/CMakeLists.txt
# unless MICROATTN_TEST_NUMERICS_ONLY): each header alone, the examples and the documented code,
# static_assert probes, the exporter, consumers, the C API, the repository's own checks.
# Each public header compiles on its own (one tiny translation unit per header).
file(GLOB_RECURSE _microattn_headers RELATIVE ${PROJECT_SOURCE_DIR}/include
     ${PROJECT_SOURCE_DIR}/include/microattn/*.hpp)
set(_hdr_srcs "")
foreach(h ${_microattn_headers})
  string(MAKE_C_IDENTIFIER "${h}" id)
  set(src ${CMAKE_CURRENT_BINARY_DIR}/header_check/${id}.cpp)
  file(CONFIGURE OUTPUT ${src} CONTENT "#include \"${h}\"\n#include \"${h}\"  // include guard works\n")
  list(APPEND _hdr_srcs ${src})
endforeach()
add_library(microattn_header_check OBJECT ${_hdr_srcs})
target_link_libraries(microattn_header_check PRIVATE microattn)
target_compile_options(microattn_header_check PRIVATE ${MICROATTN_WARNINGS} -fno-exceptions -fno-rtti -O0)

# The README's usage example is the demo's code, and the demo runs.
add_test(NAME readme_example_matches_demo
         COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -DCXX=${CMAKE_CXX_COMPILER}
                 -DINC=${PROJECT_SOURCE_DIR}/include -DOUT=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/test_readme.cmake)
if(TARGET microattn_demo)
  add_test(NAME demo_runs COMMAND microattn_demo)
  set_tests_properties(demo_runs PROPERTIES PASS_REGULAR_EXPRESSION "token 1: \\[2.462117, 0.537883\\]")
endif()

# The tiny language model from C (examples/tiny_lm/tiny_lm.c through the C API): --check, the
# logits and greedy tokens against PyTorch's; the demo prints the prompt's greedy continuation
# (the committed model's, TRAINING.md) and its speed; 2 threads give the same text.
if(TARGET microattn_tiny_lm)
  add_test(NAME tiny_lm_c_check COMMAND microattn_tiny_lm --check)
  set_tests_properties(tiny_lm_c_check PROPERTIES PASS_REGULAR_EXPRESSION "tiny_lm: check OK"
                                                  FAIL_REGULAR_EXPRESSION "FAIL")
  foreach(_t 1 2)
    add_test(NAME tiny_lm_c_demo_${_t}t COMMAND microattn_tiny_lm --fp32 --threads ${_t})
    set_tests_properties(tiny_lm_c_demo_${_t}t PROPERTIES PASS_REGULAR_EXPRESSION
      "\" the the the the the the the the the the the the the the the the\"\nprefill: 55 tokens")
  endforeach()
  # Seeded sampling (splitmix64, float softmax without libm): the same text on every target
  # (the boards run it too: tiny_lm.cortex_m.<board>.sampled).
  add_test(NAME tiny_lm_c_sampled
           COMMAND microattn_tiny_lm --fp32 --prompt Love is --sample --seed 3)
  set_tests_properties(tiny_lm_c_sampled PROPERTIES PASS_REGULAR_EXPRESSION
    "\" on Ul thisse> shaghitt ou aourrate jull loueis marneh; Onlee th\"")
  add_test(NAME tiny_lm_readme COMMAND microattn_tiny_lm_readme)
  set_tests_properties(tiny_lm_readme PROPERTIES PASS_REGULAR_EXPRESSION "^ the the the the")
  add_test(NAME tiny_lm_c_bad_args COMMAND microattn_tiny_lm --no-such-option)
  set_tests_properties(tiny_lm_c_bad_args PROPERTIES WILL_FAIL TRUE)
endif()

# examples/attention_maps.cpp checks itself (rows sum to 1, maps = softmax in double, y = maps V
# W_O in double, forward() agrees bit for bit) and ends with "attention_maps: OK" only then.
if(TARGET microattn_attention_maps)
  add_test(NAME attention_maps_runs COMMAND microattn_attention_maps)
  add_test(NAME attention_maps_causal COMMAND microattn_attention_maps --causal)
  set(_head "microattn attention maps: 11 tokens[^\n]*")
  set_tests_properties(attention_maps_runs PROPERTIES
    PASS_REGULAR_EXPRESSION "${_head}bidirectional.*\nattention_maps: OK"
    FAIL_REGULAR_EXPRESSION "FAIL")
  set_tests_properties(attention_maps_causal PROPERTIES
    PASS_REGULAR_EXPRESSION "${_head}causal \\(Mask::kCausal\\).*\nattention_maps: OK"
    FAIL_REGULAR_EXPRESSION "FAIL")
  add_test(NAME attention_maps_bad_args COMMAND microattn_attention_maps --no-such-option)
  set_tests_properties(attention_maps_bad_args PROPERTIES WILL_FAIL TRUE)
  # examples/plot_attention_maps.py runs the program (--csv), checks the CSV, draws the PNG;
  # this checks the file's PNG signature. Skipped (exit 77) without matplotlib: Debian's
  # python3-matplotlib installs into /usr/bin/python3, which a pyenv/venv python3 does not see.
  # Host builds only (the script runs the program directly, with no cross emulator).
  if(NOT CMAKE_CROSSCOMPILING)
    set(MICROATTN_PLOT_PYTHON "/usr/bin/python3" CACHE FILEPATH
        "Python with matplotlib for the attention-map plot test (Debian: /usr/bin/python3)")
    if(EXISTS "${MICROATTN_PLOT_PYTHON}")
      set(_png ${CMAKE_CURRENT_BINARY_DIR}/attention_maps_test.png)
      add_test(NAME attention_maps_plot
               COMMAND sh -c "
rm -f \"$3\" || exit 1
\"$0\" \"$1\" \"$2\" --out \"$3\" || exit $?
sig=$(head -c 8 \"$3\" | od -An -tx1 | tr -d ' \\n')
[ \"$sig\" = 89504e470d0a1a0a ] && echo \"PNG signature ok: $3\" && exit 0
echo \"not a PNG: $3 (first bytes: $sig)\"
exit 1"
                       "${MICROATTN_PLOT_PYTHON}"
                       ${PROJECT_SOURCE_DIR}/examples/plot_attention_maps.py
                       $<TARGET_FILE:microattn_attention_maps> ${_png})
    else()
      string(CONCAT _why "${MICROATTN_PLOT_PYTHON} not found (set MICROATTN_PLOT_PYTHON to a "
             "Python with matplotlib)")
      add_test(NAME attention_maps_plot COMMAND sh -c "echo 'SKIP: ${_why}'; exit 77")
    endif()
    set_tests_properties(attention_maps_plot PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  endif()
endif()

# examples/tiny_lm/tiny_lm_heads.cpp runs the trained tiny LM layer by layer with every layer's
# maps, checks its logits against microattn::Decoder (1e-5 of the largest) and the maps' rows,
# and ends with "tiny_lm_heads: OK" only then. Host builds with a Python then run
# examples/tiny_lm/plot_heads.py on its CSV: the maps against PyTorch's own attention
# probabilities (--check-torch, 1e-5) and the figure into a temporary PNG (signature checked);
# 77 (skipped) after the program passed when matplotlib or torch is missing.
if(TARGET microattn_tiny_lm_heads)
  if(NOT CMAKE_CROSSCOMPILING AND EXISTS "${MICROATTN_PLOT_PYTHON}")
    set(_png ${CMAKE_CURRENT_BINARY_DIR}/tiny_lm_heads_test.png)
    add_test(NAME tiny_lm_heads
             COMMAND sh -c "
rm -f \"$3\" \"$3.csv\" || exit 1
\"$1\" --csv \"$3.csv\" || exit 1
\"$0\" \"$2\" \"$3.csv\" --out \"$3\" --check-torch || exit $?
sig=$(head -c 8 \"$3\" | od -An -tx1 | tr -d ' \\n')
[ \"$sig\" = 89504e470d0a1a0a ] && echo \"PNG signature ok: $3\" && exit 0
echo \"not a PNG: $3 (first bytes: $sig)\"
exit 1"
                     "${MICROATTN_PLOT_PYTHON}" $<TARGET_FILE:microattn_tiny_lm_heads>
                     ${PROJECT_SOURCE_DIR}/examples/tiny_lm/plot_heads.py ${_png})
  else()
    add_test(NAME tiny_lm_heads COMMAND microattn_tiny_lm_heads)
  endif()
  set_tests_properties(tiny_lm_heads PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                                                FAIL_REGULAR_EXPRESSION "FAIL")
endif()

# Misconfigurations are compile errors that name the parameter. These probes compile with the
# plain compiler and the headers only (none of the build's flags), so they run in one build per
# compiler: not again in the scalar-forced, sanitized or cross-compiled ones.
if(NOT MICROATTN_FORCE_SCALAR AND NOT MICROATTN_SANITIZE AND NOT CMAKE_CROSSCOMPILING)
set(_bad_cfgs "8, 8, 3, 2, 4|H_kv (key/value heads) must divide H"
              "8, 8, 2, 4, 4|H_kv (key/value heads) must divide H"
              "0, 8, 2, 2, 4|T_max (max tokens) must be at least 1"
              "8, 0, 2, 2, 4|d_model must be at least 1"
              "8, 8, 0, 1, 4|H (query heads) must be at least 1"
              "8, 8, 2, 0, 4|H_kv (key/value heads) must be at least 1"
              "8, 8, 2, 2, 0|d_head must be at least 1"
              "8, 8, 2, 2, 4, microattn::Bias::kYes, microattn::Bias::kNo|each option"
              "8, 8, 2, 2, 4, microattn::OutProj::kNo, microattn::OutDim{4}|OutDim sets W_O's width"
              "8, 8, 2, 2, 4, 3|an option is not a Bias, OutProj")
set(_i 0)
foreach(c ${_bad_cfgs})
  string(REPLACE "|" ";" parts "${c}")
  list(GET parts 0 case)
  list(GET parts 1 expect)
  add_test(NAME static_assert_${_i}
           COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DINC=${PROJECT_SOURCE_DIR}/include
                   -DOUT=${CMAKE_CURRENT_BINARY_DIR} "-DCASE=${case}" "-DEXPECT=${expect}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/test_static_assert.cmake)
  math(EXPR _i "${_i} + 1")
endforeach()

# A Config whose buffers wrap a 32-bit size_t: must fail on a 32-bit target (each factor is
# within its own limit). Checked with a 32-bit cross compiler when one is installed
# (scripts/setup.sh --cross installs them).
find_program(MICROATTN_CXX32 NAMES arm-linux-gnueabihf-g++ arm-none-eabi-g++)
if(MICROATTN_CXX32)
  add_test(NAME static_assert_32bit_size
           COMMAND ${CMAKE_COMMAND} -DCXX=${MICROATTN_CXX32} -DINC=${PROJECT_SOURCE_DIR}/include
                   -DOUT=${CMAKE_CURRENT_BINARY_DIR} "-DCASE=1048576, 1024, 4, 4, 256"
                   "-DEXPECT=do not fit this target's size_t"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/test_static_assert.cmake)
else()
  message(STATUS "microattn: no 32-bit cross compiler, static_assert_32bit_size not built")
endif()

# An exported weight header used with a Config of another shape, mask or sliding window does not
# compile: each case "N|message" compiles SOURCE with -DMISMATCH=N and expects the message.
function(microattn_exported_compile_fail prefix source)
  foreach(c ${ARGN})
    string(REPLACE "|" ";" parts "${c}")
    list(GET parts 0 n)
    list(GET parts 1 expect)
    add_test(NAME ${prefix}_${n}
             COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DINC=${PROJECT_SOURCE_DIR}/include
                     -DSOURCE=${CMAKE_CURRENT_SOURCE_DIR}/${source} -DDEFS=-DMISMATCH=${n}
                     -DCASE=${prefix}_${n} "-DEXPECT=${expect}"
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/test_static_assert.cmake)
  endforeach()
endfunction()
microattn_exported_compile_fail(exported_shape_mismatch compile_fail_exported_shape.cpp
  "0|" "1|exported weights' H (query heads) differs"
  "2|exported weights' H_kv (key/value heads) differs" "3|exported weights' d_head differs"
  "4|exported weights' biases" "5|exported weights' d_model differs" "6|exported weights' biases"
  "7|exported weights' W_O width differs")
# The mask and window (--mask; the exporter's own output for two tiny layers).
microattn_exported_compile_fail(exported_mask_mismatch compile_fail_exported_mask.cpp
  "0|" "1|exported weights' mask differs from the Config's Mask"
  "2|exported weights' mask differs from the Config's Mask"
  "3|exported weights' sliding window differs from the Config's SlidingWindow"
  "4|exported weights' sliding window differs from the Config's SlidingWindow"
  "5|exported weights' sliding window differs from the Config's SlidingWindow")
# WeightType values a family cannot compute (LatentConfig's 16-bit floats, a value no format has).
microattn_exported_compile_fail(weight_type_refused compile_fail_weight_type.cpp
  "0|" "1|kBF16 and the group-wise kInt8G32 / G64 / G128 are not implemented for LatentAttention"
  "2|WeightType must be kF32, kInt8, kF16, kBF16, kInt8G32, kInt8G64 or kInt8G128"
  "3|kBF16 and the group-wise kInt8G32 / G64 / G128 are not implemented for LatentAttention"
  "4|group-wise int8, kInt8G32 / G64 / G128, has fp32 compute only"
  "5|group-wise int8, kInt8G32 / G64 / G128, has fp32 compute only"
  "6|CacheType::kF16 and kBF16 are not implemented for LatentAttention's latent cache")
endif()

# The exporter's own tests (Python + the C/C++ compilers; skipped without python3-torch).
if(MICROATTN_TEST_TOOLS AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/python/CMakeLists.txt)
  add_subdirectory(python)
endif()
# libFuzzer targets (clang only; scripts/fuzz_smoke.sh builds and runs them).
if(MICROATTN_BUILD_FUZZ AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/CMakeLists.txt)
  add_subdirectory(fuzz)
endif()
# microattn used from separate projects: install + find_package, add_subdirectory, bare metal.
add_subdirectory(consumer)

# The C interface from C11 (tests/c): the C API test, the README C example, the header generator.
add_subdirectory(c)

# Every source carries the licence's SPDX line.
add_test(NAME spdx_lines COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR}
                                 -P ${CMAKE_CURRENT_SOURCE_DIR}/check_spdx.cmake)
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME function_length
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_function_length.py
                   ${PROJECT_SOURCE_DIR} 80)
  add_test(NAME figures_results_self_test
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/update_figures.py --self-test)
  # scripts/run_main.sh's summary: the README table of a saved run, and the cases it selects.
  add_test(NAME results_table_from_json
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_results_table.py
                   ${PROJECT_SOURCE_DIR})
  set_tests_properties(results_table_from_json PROPERTIES
                       PASS_REGULAR_EXPRESSION "results table test passed")
  add_test(NAME banned_in_library
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_banned.py
                   ${PROJECT_SOURCE_DIR})
endif()
add_test(NAME version_agrees COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR}
                                    -P ${CMAKE_CURRENT_SOURCE_DIR}/check_version.cmake)
