# SPDX-License-Identifier: Apache-2.0
# The usage example in README.md is the block of examples/demo.cpp between the readme markers.
file(READ "${SRC}/examples/demo.cpp" demo)
file(READ "${SRC}/README.md" readme)
string(REGEX MATCH "// \\[readme-begin\\]\n(.*)// \\[readme-end\\]" _ "${demo}")
set(code "${CMAKE_MATCH_1}")
string(REGEX MATCH "<!-- readme-example-begin -->\n```cpp\n(.*)```\n<!-- readme-example-end -->" _ "${readme}")
set(doc "${CMAKE_MATCH_1}")
if(code STREQUAL "" OR NOT code STREQUAL doc)
  message(FATAL_ERROR "README.md usage example differs from examples/demo.cpp (readme markers)")
endif()
message(STATUS "README usage example matches examples/demo.cpp")

# A reader copies a block into a file of their own: each C++ block compiles alone (its own
# includes), warning-free (with -DCXX=... -DINC=... -DOUT=...).
function(readme_block_compiles name code)
  if(NOT CXX)
    return()
  endif()
  file(WRITE "${OUT}/readme_${name}.cpp" "${code}")
  execute_process(COMMAND ${CXX} -std=c++17 -fsyntax-only -Wall -Wextra -Wpedantic -Werror
                          -I${INC} -DMICROATTN_FORCE_SCALAR=1 "${OUT}/readme_${name}.cpp"
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "README.md's ${name} block does not compile on its own:\n${err}")
  endif()
  message(STATUS "README ${name} block compiles on its own")
endfunction()
readme_block_compiles(usage "${code}")

# The documented code blocks are those of sources the tests build and run (between the same
# readme markers): README's C blocks, tests/c/readme_layer.cpp and readme_example.c (the c_api
# test); docs/quantization.md's integer-compute block, tests/readme_int8.cpp (ctest
# ReadmeInt8.*); docs/tiny-lm.md's C block, examples/tiny_lm/readme_tiny_lm.c (ctest
# tiny_lm_readme).
foreach(_case "tests/c/readme_layer.cpp|readme-c-layer|cpp|README.md"
              "tests/c/readme_example.c|readme-c-example|c|README.md"
              "tests/readme_int8.cpp|readme-int8|cpp|docs/quantization.md"
              "examples/tiny_lm/readme_tiny_lm.c|readme-tiny-lm|c|docs/tiny-lm.md")
  string(REPLACE "|" ";" _case "${_case}")
  list(GET _case 0 _file)
  list(GET _case 1 _marker)
  list(GET _case 2 _lang)
  list(GET _case 3 _page)
  file(READ "${SRC}/${_file}" _src)
  file(READ "${SRC}/${_page}" _text)
  string(REGEX MATCH "// \\[readme-begin\\]\n(.*)// \\[readme-end\\]" _ "${_src}")
  set(_code "${CMAKE_MATCH_1}")
  string(REGEX MATCH "<!-- ${_marker}-begin -->\n```${_lang}\n(.*)```\n<!-- ${_marker}-end -->" _ "${_text}")
  set(_doc "${CMAKE_MATCH_1}")
  if(_code STREQUAL "" OR NOT _code STREQUAL _doc)
    message(FATAL_ERROR "${_page} block ${_marker} differs from ${_file} (readme markers)")
  endif()
  message(STATUS "${_page} ${_marker} block matches ${_file}")
  if(_marker STREQUAL "readme-int8")
    readme_block_compiles(int8 "${_code}")
  endif()
endforeach()
