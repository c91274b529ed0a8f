# SPDX-License-Identifier: Apache-2.0
# The version is written once (include/microattn/version.h): its string agrees with its numbers,
# and CHANGELOG.md's newest release ("## X.Y.Z ...") is that version. The CMake package takes it
# from the same header (CMakeLists.txt) and microattn_version() returns the string
# (tests/consumer checks an installed package and its library).
# Run as: cmake -DSRC=<repo> -P check_version.cmake
file(STRINGS "${SRC}/include/microattn/version.h" _lines REGEX "#define MICROATTN_VERSION_")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" _nums "${_lines}")
string(REGEX REPLACE ".*STRING \"([^\"]*)\".*" "\\1" _str "${_lines}")
if(NOT _nums STREQUAL _str)
  message(FATAL_ERROR "version.h: MICROATTN_VERSION_STRING \"${_str}\" but the numbers say ${_nums}")
endif()
# An "## Unreleased" section (changes since the last release) may come first.
file(STRINGS "${SRC}/CHANGELOG.md" _releases REGEX "^## ")
list(FILTER _releases EXCLUDE REGEX "^## Unreleased$")
list(GET _releases 0 _newest)
if(NOT _newest MATCHES "^## ([0-9]+\\.[0-9]+\\.[0-9]+)")
  message(FATAL_ERROR "CHANGELOG.md: the first \"## \" heading is not a release: '${_newest}'")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL _nums)
  message(FATAL_ERROR "CHANGELOG.md's newest release is ${CMAKE_MATCH_1}, version.h says ${_nums}")
endif()
message(STATUS "version ${_nums}: version.h and CHANGELOG.md agree")
