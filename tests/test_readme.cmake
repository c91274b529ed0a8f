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

# The C example: README's C blocks are those of tests/c/readme_layer.cpp and readme_example.c
# (between the same readme markers), which the c_api test builds and runs; its integer-compute
# block is tests/readme_int8.cpp's (ctest ReadmeInt8.*).
foreach(_case "tests/c/readme_layer.cpp|readme-c-layer|cpp" "tests/c/readme_example.c|readme-c-example|c"
              "tests/readme_int8.cpp|readme-int8|cpp"
              "examples/tiny_lm/readme_tiny_lm.c|readme-tiny-lm|c")
  string(REPLACE "|" ";" _case "${_case}")
  list(GET _case 0 _file)
  list(GET _case 1 _marker)
  list(GET _case 2 _lang)
  file(READ "${SRC}/${_file}" _src)
  string(REGEX MATCH "// \\[readme-begin\\]\n(.*)// \\[readme-end\\]" _ "${_src}")
  set(_code "${CMAKE_MATCH_1}")
  string(REGEX MATCH "<!-- ${_marker}-begin -->\n```${_lang}\n(.*)```\n<!-- ${_marker}-end -->" _ "${readme}")
  set(_doc "${CMAKE_MATCH_1}")
  if(_code STREQUAL "" OR NOT _code STREQUAL _doc)
    message(FATAL_ERROR "README.md block ${_marker} differs from ${_file} (readme markers)")
  endif()
  message(STATUS "README ${_marker} block matches ${_file}")
endforeach()
