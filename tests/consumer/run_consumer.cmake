# SPDX-License-Identifier: Apache-2.0
# Drives one consumer test (registered by tests/consumer/CMakeLists.txt): configures, builds,
# installs and runs small CMake projects in a scratch folder, as a new user of microattn would.
#   cmake -DMODE=<mode> -DSRC=<microattn source tree> -DWORK=<scratch folder> -DCXX=<c++>
#         -DGENERATOR=<generator> [-DMAKE_PROGRAM=<ninja>] [-DXSIMD_DIR=<folder>]
#         [-DCONSUMER_XSIMD_DIR=<folder>] [-DARM_CXX=<arm-none-eabi-g++>]
#         [-DDEMO=<microattn_demo built with -march=native>] -P run_consumer.cmake
# Modes:
#   install          microattn (MICROATTN_NATIVE=ON) installed to a prefix (library, headers, the
#                    thread pool header, the two tools, CHANGELOG.md), then the find_package
#                    consumer: builds, runs, matches the reference, is compiled with -march=native
#                    (the package's usage requirement) and the kernels of this CPU, against the
#                    xsimd microattn was built with, and links the library whose
#                    microattn_version() is the headers' version; the installed
#                    microattn_c.py finds the installed headers; find_package(microattn 0.1),
#                    (0.3) and (1.0) fail, and so does 0.2 without xsimd.
#                    With XSIMD_DIR: microattn built with MICROATTN_XSIMD_INCLUDE_DIR=XSIMD_DIR
#                    (no version probes). With CONSUMER_XSIMD_DIR: a second consumer passes
#                    MICROATTN_XSIMD_INCLUDE_DIR=CONSUMER_XSIMD_DIR itself, a third finds an
#                    xsimd package (xsimd_DIR) on that folder; both must compile that xsimd.
#   install_scalar   the same with MICROATTN_FORCE_SCALAR=ON; the consumer cannot find xsimd
#                    (CMAKE_DISABLE_FIND_PACKAGE_xsimd) and needs none.
#   no_gtest         a default configure builds the library only (no example, test or
#                    benchmark program); then tests and benchmarks ON where GoogleTest and Google
#                    Benchmark cannot be found: says they are skipped, builds, installs.
#   add_subdirectory the add_subdirectory consumer, Debug and MICROATTN_NATIVE=ON: its build
#                    type is kept, microattn adds no target but the library, the program is
#                    compiled for Debug with -march=native (the option reaches the kernels the
#                    consumer instantiates: the same kernels as microattn's demo), builds,
#                    runs; then without the option: no -march=native; configured again without
#                    a build type, which must stay empty.
#   bare_metal       the bare_metal consumer with its own arm-none-eabi toolchain file and no
#                    MICROATTN_BOARD: configures, builds the library and links the image; then
#                    microattn itself, top level, with that toolchain: configures (saying the
#                    port is skipped) and builds. Prints [microattn-consumer-skip] without ARM_CXX.
cmake_minimum_required(VERSION 3.22)

foreach(v MODE SRC WORK GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_consumer.cmake: -D${v}= is required")
  endif()
endforeach()
set(_here "${CMAKE_CURRENT_LIST_DIR}")
# Only what this script passes may shape the builds (CMake 3.21+ read these from the environment).
foreach(e CMAKE_BUILD_TYPE CMAKE_TOOLCHAIN_FILE CMAKE_PREFIX_PATH CMAKE_EXPORT_COMPILE_COMMANDS
          CXXFLAGS CPPFLAGS LDFLAGS)
  unset(ENV{${e}})
endforeach()
set(_gen -G "${GENERATOR}")
if(MAKE_PROGRAM)
  list(APPEND _gen "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
set(_host ${_gen})
if(CXX)
  list(APPEND _host "-DCMAKE_CXX_COMPILER=${CXX}")
endif()

# run(<label> [FAIL] COMMAND <command...>): runs the command; the test fails (showing its output)
# unless it exits 0 (with FAIL: unless it exits nonzero). Its output is left in RUN_OUTPUT.
function(run label)
  cmake_parse_arguments(A "FAIL" "" "COMMAND" ${ARGN})
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${A_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(TIMESTAMP t1 "%s")
  math(EXPR dt "${t1} - ${t0}")
  string(REPLACE ";" " " cmd "${A_COMMAND}")
  if(A_FAIL AND "${rc}" STREQUAL "0")
    message(FATAL_ERROR "${label}: succeeded, must fail\n  ${cmd}\n${out}")
  elseif(NOT A_FAIL AND NOT "${rc}" STREQUAL "0")
    message(FATAL_ERROR "${label}: failed (${rc})\n  ${cmd}\n${out}")
  endif()
  message(STATUS "${label}: ok (${dt} s)")
  set(RUN_OUTPUT "${out}" PARENT_SCOPE)
endfunction()

# expect(<label> <text> <regex> [NOT]): the test fails unless text matches regex (NOT: does not).
function(expect label text regex)
  if(ARGN STREQUAL "NOT")
    if(text MATCHES "${regex}")
      message(FATAL_ERROR "${label}: must not match '${regex}':\n${text}")
    endif()
  elseif(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${label}: no match for '${regex}' in:\n${text}")
  endif()
endfunction()

# compile_command(<compile_commands.json> <source file name> <out var>): its command line.
function(compile_command json_file source out)
  file(READ "${json_file}" json)
  string(JSON n LENGTH "${json}")
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON file GET "${json}" ${i} file)
    if(file MATCHES "/${source}$")
      string(JSON cmd GET "${json}" ${i} command)
      set(${out} "${cmd}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "${json_file} has no command for ${source}")
endfunction()

# run_program(<build dir>): runs the consumer program there; must print "consumer: OK".
function(run_program dir)
  file(GLOB_RECURSE exe LIST_DIRECTORIES false "${dir}/consumer" "${dir}/consumer.exe")
  if(NOT exe)
    message(FATAL_ERROR "no consumer program in ${dir}")
  endif()
  list(GET exe 0 exe)
  run("run the consumer" COMMAND "${exe}")
  message(STATUS "${RUN_OUTPUT}")
  expect("consumer output" "${RUN_OUTPUT}" "consumer: OK")
  set(RUN_OUTPUT "${RUN_OUTPUT}" PARENT_SCOPE)
endfunction()

# DEMO: microattn's demo built with -march=native; its first line names this CPU's kernels,
# which a consumer built with MICROATTN_NATIVE must use too.
set(NATIVE_KERNELS "")
if(DEMO)
  execute_process(COMMAND "${DEMO}" OUTPUT_VARIABLE _demo_out RESULT_VARIABLE _demo_rc)
  if(_demo_rc EQUAL 0 AND _demo_out MATCHES "^microattn ([^ \n]+) kernels")
    # As a regular expression (expect() matches one): "fma3+avx2" has a '+'.
    string(REPLACE "+" "[+]" NATIVE_KERNELS "${CMAKE_MATCH_1}")
  endif()
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

if(MODE MATCHES "^install")
  set(prefix "${WORK}/prefix")
  set(opts -DMICROATTN_NATIVE=ON)
  set(consumer_opts "")
  if(MODE STREQUAL "install_scalar")
    set(opts -DMICROATTN_FORCE_SCALAR=ON)
    set(consumer_opts -DCMAKE_DISABLE_FIND_PACKAGE_xsimd=ON)
  elseif(XSIMD_DIR)
    list(APPEND opts "-DMICROATTN_XSIMD_INCLUDE_DIR=${XSIMD_DIR}")
  endif()
  string(REPLACE ";" " " opts_text "${opts}")
  run("configure microattn (${opts_text})" COMMAND "${CMAKE_COMMAND}" -S "${SRC}" -B "${WORK}/microattn"
      ${_host} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_INSTALL_PREFIX=${prefix}"
      -DMICROATTN_BUILD_TESTS=OFF -DMICROATTN_BUILD_BENCH=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
      ${opts})
  if(RUN_OUTPUT MATCHES "microattn: xsimd ([0-9.]+) from")
    set(xsimd_version "${CMAKE_MATCH_1}")
  else()
    set(xsimd_version "none")
  endif()
  run("build microattn" COMMAND "${CMAKE_COMMAND}" --build "${WORK}/microattn" --target microattn
      --parallel 2)
  run("install microattn" COMMAND "${CMAKE_COMMAND}" --install "${WORK}/microattn")
  foreach(f lib/cmake/microattn/microattnConfig.cmake lib/cmake/microattn/microattnConfigVersion.cmake
            lib/cmake/microattn/microattnTargets.cmake include/microattn/microattn.hpp
            include/microattn/thread_pool.hpp include/microattn/version.h
            share/doc/microattn/LICENSE share/doc/microattn/CHANGELOG.md
            share/microattn/tools/microattn_c.py share/microattn/tools/export_pytorch.py)
    if(NOT EXISTS "${prefix}/${f}")
      message(FATAL_ERROR "install: ${prefix}/${f} missing")
    endif()
  endforeach()
  file(READ "${prefix}/share/doc/microattn/LICENSE" license)
  expect("installed LICENSE" "${license}" "Apache License[ \n]+Version 2.0")
  if(NOT MODE STREQUAL "install_scalar")
    # The option took effect on microattn's own library (else the check below proves nothing).
    compile_command("${WORK}/microattn/compile_commands.json" status.cpp cmd)
    expect("microattn's own compile command" "${cmd}" "-march=native")
  endif()

  run("configure the find_package consumer" COMMAND "${CMAKE_COMMAND}" -S "${_here}/find_package"
      -B "${WORK}/consumer" ${_host} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}"
      -DCMAKE_EXPORT_COMPILE_COMMANDS=ON ${consumer_opts})
  file(STRINGS "${SRC}/include/microattn/version.h" vline REGEX "#define MICROATTN_VERSION_STRING")
  string(REGEX REPLACE ".*\"([0-9.]+)\".*" "\\1" version "${vline}")
  string(REPLACE "." "\\." version_re "${version}")
  expect("consumer configure" "${RUN_OUTPUT}"
         "consumer: microattn ${version_re} from ${prefix}/lib/cmake/microattn")
  run("build the consumer" COMMAND "${CMAKE_COMMAND}" --build "${WORK}/consumer" --parallel 2)
  compile_command("${WORK}/consumer/compile_commands.json" consumer.cpp cmd)
  if(MODE STREQUAL "install_scalar")
    expect("the consumer's compile command" "${cmd}" "-march=native" NOT)
  else()
    # MICROATTN_NATIVE=ON: the package's users compile the kernels for this CPU too.
    expect("the consumer's compile command" "${cmd}" "-march=native")
  endif()
  run_program("${WORK}/consumer")
  expect("the consumer's library version" "${RUN_OUTPUT}" "consumer: version ${version_re}\n")
  if(NATIVE_KERNELS AND NOT MODE STREQUAL "install_scalar" AND NOT XSIMD_DIR)
    # (The demo's xsimd: another release names this CPU's arch otherwise.)
    expect("the consumer's kernels" "${RUN_OUTPUT}" "consumer: kernels ${NATIVE_KERNELS}\n")
  endif()
  # The consumer compiled the xsimd microattn was built against (found through the package).
  string(REPLACE "." "\\." v "${xsimd_version}")
  expect("the consumer's xsimd" "${RUN_OUTPUT}" "consumer: xsimd ${v}\n")
  if(MODE STREQUAL "install_scalar")
    expect("the consumer's kernels" "${RUN_OUTPUT}" "consumer: kernels scalar\n")
  endif()
  find_program(_py python3)
  if(_py)
    # The installed generator finds the installed headers (no --microattn-include).
    run("the installed microattn_c.py" COMMAND "${_py}" "${prefix}/share/microattn/tools/microattn_c.py"
        --name probe_layer --config "8, 16, 2, 1, 8" --cxx "${CXX}" --out "${WORK}/probe_layer.h")
    file(READ "${WORK}/probe_layer.h" hdr)
    expect("the header the installed tool wrote" "${hdr}" "PROBE_LAYER_BYTES")
  endif()

  if(CONSUMER_XSIMD_DIR AND NOT MODE STREQUAL "install_scalar")
    # The package's user names another xsimd (e.g. a newer release's include folder): it wins.
    file(STRINGS "${CONSUMER_XSIMD_DIR}/xsimd/config/xsimd_config.hpp" lines
         REGEX "#define XSIMD_VERSION_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" v "${lines}")
    string(REPLACE "." "\\." v "${v}")
    run("configure the find_package consumer with MICROATTN_XSIMD_INCLUDE_DIR" COMMAND
        "${CMAKE_COMMAND}" -S "${_here}/find_package" -B "${WORK}/consumer-xsimd" ${_host}
        -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}"
        "-DMICROATTN_XSIMD_INCLUDE_DIR=${CONSUMER_XSIMD_DIR}")
    run("build that consumer" COMMAND "${CMAKE_COMMAND}" --build "${WORK}/consumer-xsimd" --parallel 2)
    run_program("${WORK}/consumer-xsimd")
    expect("that consumer's xsimd" "${RUN_OUTPUT}" "consumer: xsimd ${v}\n")
    # A distribution's newer xsimd, found by find_dependency(xsimd) (its package: the target
    # xsimd on that folder, as xsimd installs it).
    set(pkg "${WORK}/xsimd-package")
    file(WRITE "${pkg}/xsimdConfig.cmake" "if(NOT TARGET xsimd)
  add_library(xsimd INTERFACE IMPORTED)
  set_target_properties(xsimd PROPERTIES INTERFACE_INCLUDE_DIRECTORIES \"${CONSUMER_XSIMD_DIR}\")
endif()\n")
    file(WRITE "${pkg}/xsimdConfigVersion.cmake"
         "set(PACKAGE_VERSION 99)\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n")
    run("configure the find_package consumer with another xsimd package" COMMAND
        "${CMAKE_COMMAND}" -S "${_here}/find_package" -B "${WORK}/consumer-xsimd-package" ${_host}
        -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" "-Dxsimd_DIR=${pkg}")
    run("build that consumer" COMMAND "${CMAKE_COMMAND}" --build "${WORK}/consumer-xsimd-package"
        --parallel 2)
    run_program("${WORK}/consumer-xsimd-package")
    expect("that consumer's xsimd" "${RUN_OUTPUT}" "consumer: xsimd ${v}\n")
  endif()

  if(MODE STREQUAL "install" AND NOT XSIMD_DIR)
    # SameMinorVersion: a 0.x package accepts its own minor only.
    foreach(req 0.1 0.3 1.0)
      run("find_package(microattn ${req}) refused" FAIL COMMAND "${CMAKE_COMMAND}"
          -S "${_here}/version_probe" -B "${WORK}/probe-${req}" ${_gen} "-DCMAKE_PREFIX_PATH=${prefix}"
          -DMICROATTN_PROBE_VERSION=${req})
      expect("find_package(microattn ${req})" "${RUN_OUTPUT}" "compatible with requested version")
    endforeach()
    # A SIMD package needs xsimd's package (find_dependency).
    run("find_package(microattn ${version}) without xsimd refused" FAIL COMMAND "${CMAKE_COMMAND}"
        -S "${_here}/version_probe" -B "${WORK}/probe-no-xsimd" ${_gen}
        "-DCMAKE_PREFIX_PATH=${prefix}" -DMICROATTN_PROBE_VERSION=${version}
        -DCMAKE_DISABLE_FIND_PACKAGE_xsimd=ON)
    expect("find_package(microattn ${version}) without xsimd" "${RUN_OUTPUT}" "dependency xsimd could not be found")
  endif()

elseif(MODE STREQUAL "no_gtest")
  # Defaults: configure, build and install make the library only (no tests, benchmarks or
  # examples).
  run("configure microattn with defaults" COMMAND "${CMAKE_COMMAND}" -S "${SRC}"
      -B "${WORK}/defaults" ${_host} "-DCMAKE_INSTALL_PREFIX=${WORK}/prefix-defaults")
  expect("configure output" "${RUN_OUTPUT}" "microattn: tests off")
  run("build microattn with defaults" COMMAND "${CMAKE_COMMAND}" --build "${WORK}/defaults" --parallel 2)
  file(GLOB_RECURSE built LIST_DIRECTORIES false "${WORK}/defaults/tests/*" "${WORK}/defaults/bench/*"
       "${WORK}/defaults/examples/*")
  if(built)
    message(FATAL_ERROR "a default build made test, benchmark or example files: ${built}")
  endif()
  run("install microattn built with defaults" COMMAND "${CMAKE_COMMAND}" --install "${WORK}/defaults")
  set(prefix "${WORK}/prefix")
  run("configure microattn without GoogleTest and Google Benchmark" COMMAND "${CMAKE_COMMAND}"
      -S "${SRC}" -B "${WORK}/microattn" ${_host} "-DCMAKE_INSTALL_PREFIX=${prefix}"
      -DMICROATTN_BUILD_TESTS=ON -DMICROATTN_BUILD_BENCH=ON
      -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON)
  string(REGEX REPLACE "[ \t\n]+" " " flat "${RUN_OUTPUT}")  # warnings are wrapped
  expect("configure output" "${flat}" "GoogleTest not found [^.]*, the tests are skipped")
  expect("configure output" "${flat}" "Google Benchmark not found [^.]*, the benchmarks are skipped")
  run("build microattn" COMMAND "${CMAKE_COMMAND}" --build "${WORK}/microattn" --parallel 2)
  run("install microattn" COMMAND "${CMAKE_COMMAND}" --install "${WORK}/microattn")
  if(NOT EXISTS "${prefix}/lib/cmake/microattn/microattnConfig.cmake")
    message(FATAL_ERROR "install: no package config in ${prefix}")
  endif()

elseif(MODE STREQUAL "add_subdirectory")
  run("configure the add_subdirectory consumer (Debug)" COMMAND "${CMAKE_COMMAND}"
      -S "${_here}/add_subdirectory" -B "${WORK}/debug" ${_host} -DCMAKE_BUILD_TYPE=Debug
      "-DMICROATTN_SOURCE_DIR=${SRC}" -DMICROATTN_NATIVE=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
  expect("configure output" "${RUN_OUTPUT}" "consumer: CMAKE_BUILD_TYPE 'Debug' kept")
  run("build the consumer" COMMAND "${CMAKE_COMMAND}" --build "${WORK}/debug" --parallel 2)
  compile_command("${WORK}/debug/compile_commands.json" consumer.cpp cmd)
  expect("the consumer's compile command" "${cmd}" "-march=native")
  expect("the consumer's compile command (Debug: -g, no -O)" "${cmd}" " -g( |$)")
  expect("the consumer's compile command (Debug: -g, no -O)" "${cmd}" " -O[1-3s]( |$)" NOT)
  run_program("${WORK}/debug")
  if(NATIVE_KERNELS)
    expect("the consumer's kernels" "${RUN_OUTPUT}" "consumer: kernels ${NATIVE_KERNELS}\n")
  endif()
  run("configure the add_subdirectory consumer (no MICROATTN_NATIVE)" COMMAND "${CMAKE_COMMAND}"
      -S "${_here}/add_subdirectory" -B "${WORK}/plain" ${_host} -DCMAKE_BUILD_TYPE=Release
      "-DMICROATTN_SOURCE_DIR=${SRC}" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
  compile_command("${WORK}/plain/compile_commands.json" consumer.cpp cmd)
  expect("the consumer's compile command" "${cmd}" "-march=native" NOT)
  run("configure the add_subdirectory consumer (no build type)" COMMAND "${CMAKE_COMMAND}"
      -S "${_here}/add_subdirectory" -B "${WORK}/no-build-type" ${_host}
      "-DMICROATTN_SOURCE_DIR=${SRC}")
  expect("configure output" "${RUN_OUTPUT}" "consumer: CMAKE_BUILD_TYPE '' kept")

elseif(MODE STREQUAL "bare_metal")
  if(NOT ARM_CXX OR NOT EXISTS "${ARM_CXX}")
    message("[microattn-consumer-skip] arm-none-eabi-g++ is not installed")
    return()
  endif()
  get_filename_component(arm_bin "${ARM_CXX}" DIRECTORY)
  set(ENV{PATH} "${arm_bin}:$ENV{PATH}")  # the toolchain file names the compilers, as users' do
  set(toolchain "${_here}/bare_metal/arm-none-eabi.cmake")
  run("configure the bare-metal consumer" COMMAND "${CMAKE_COMMAND}" -S "${_here}/bare_metal"
      -B "${WORK}/firmware" ${_gen} "-DCMAKE_TOOLCHAIN_FILE=${toolchain}" -DCMAKE_BUILD_TYPE=MinSizeRel
      "-DMICROATTN_SOURCE_DIR=${SRC}")
  run("build the bare-metal consumer" COMMAND "${CMAKE_COMMAND}" --build "${WORK}/firmware" --parallel 2)
  if(NOT EXISTS "${WORK}/firmware/firmware.elf")
    message(FATAL_ERROR "no firmware.elf in ${WORK}/firmware")
  endif()
  run("configure microattn top level with that toolchain, no MICROATTN_BOARD" COMMAND
      "${CMAKE_COMMAND}" -S "${SRC}" -B "${WORK}/microattn" ${_gen}
      "-DCMAKE_TOOLCHAIN_FILE=${toolchain}")
  expect("configure output" "${RUN_OUTPUT}" "without MICROATTN_BOARD: the Cortex-M port's")
  run("build microattn" COMMAND "${CMAKE_COMMAND}" --build "${WORK}/microattn" --parallel 2)

else()
  message(FATAL_ERROR "run_consumer.cmake: unknown MODE '${MODE}'")
endif()
message(STATUS "${MODE}: passed")
