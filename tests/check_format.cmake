# SPDX-License-Identifier: Apache-2.0
# Every C and C++ source of the repository as .clang-format formats it (ctest clang_format), but
# generated data: the PyTorch fixtures and reference logits (tests/data), the tiny model's
# vocabulary table. With -DSRC=<source dir> -DCLANG_FORMAT=<clang-format>.
set(_dirs include lib tests bench examples ports tools)
set(_files "")
foreach(d ${_dirs})
  file(GLOB_RECURSE _f RELATIVE ${SRC} ${SRC}/${d}/*.cpp ${SRC}/${d}/*.hpp ${SRC}/${d}/*.c
       ${SRC}/${d}/*.h)
  list(APPEND _files ${_f})
endforeach()
list(FILTER _files EXCLUDE REGEX "^tests/data/|^examples/tiny_lm/tiny_lm_vocab\\.h$")
list(SORT _files)
execute_process(COMMAND ${CLANG_FORMAT} --dry-run -Werror ${_files} WORKING_DIRECTORY ${SRC}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  string(REGEX MATCHALL "[^\n]*: error: code should be clang-formatted" _bad "${err}")
  set(_names "")
  foreach(l ${_bad})
    string(REGEX REPLACE ":[0-9]+:[0-9]+: error:.*" "" _n "${l}")
    list(APPEND _names ${_n})
  endforeach()
  list(REMOVE_DUPLICATES _names)
  string(REPLACE ";" "\n  " _names "${_names}")
  message(FATAL_ERROR "not as .clang-format has them (clang-format -i <file>):\n  ${_names}")
endif()
list(LENGTH _files n)
message(STATUS "${n} sources as .clang-format formats them")
