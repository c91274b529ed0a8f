# SPDX-License-Identifier: Apache-2.0
# The benchmark built with a case subset (MICROATTN_CM_BENCH_CASES): runs the image under QEMU
# with -icount (as the bench ctest does) and passes when it exits 0, every case of EXPECT is in
# its JSON with an instruction count and no error, and no other case of ALL is; then, with
# PYTHON and COMPARE, tools/compare_bench.py must read the output (saved to OUT) and list the
# same cases.
#   cmake -DQEMU=qemu-system-arm -DBOARD=mps2-an386 -DIMAGE=bench.elf "-DEXPECT=M1;MD1_q8"
#         "-DALL=M1;M2;..." [-DPYTHON=python3 -DCOMPARE=tools/compare_bench.py -DOUT=out.json]
#         -P check_bench.cmake
cmake_minimum_required(VERSION 3.22)
if(NOT QEMU OR NOT BOARD OR NOT IMAGE OR NOT EXPECT OR NOT ALL)
  message(FATAL_ERROR "usage: cmake -DQEMU=<qemu-system-arm> -DBOARD=<board> -DIMAGE=<elf> "
                      "-DEXPECT=<cases> -DALL=<cases> [-DPYTHON= -DCOMPARE= -DOUT=] -P check_bench.cmake")
endif()

execute_process(
  COMMAND ${QEMU} -M ${BOARD} -nographic -monitor none -serial null -icount shift=0
          -semihosting-config enable=on,target=native,arg=microattn_cm_bench,arg=--icount-shift=0
          -kernel ${IMAGE}
  OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc TIMEOUT 240)
message("--- ${IMAGE}: exit ${_rc}\n${_out}${_err}")
if(NOT _rc STREQUAL "0")
  message(FATAL_ERROR "the bench exited with '${_rc}'")
endif()
if(_out MATCHES "error_occurred")
  message(FATAL_ERROR "a case reports an error")
endif()
foreach(c IN LISTS ALL)
  set(_has FALSE)
  if(_out MATCHES "\"name\": \"${c}\", [^\n]*\"instructions\": [0-9]")
    set(_has TRUE)
  elseif(_out MATCHES "\"name\": \"${c}\"")
    message(FATAL_ERROR "case ${c} has no instruction count")
  endif()
  if(c IN_LIST EXPECT AND NOT _has)
    message(FATAL_ERROR "case ${c} was selected but did not run")
  elseif(NOT c IN_LIST EXPECT AND _has)
    message(FATAL_ERROR "case ${c} was not selected but ran")
  endif()
endforeach()

if(PYTHON AND COMPARE AND OUT)
  file(WRITE "${OUT}" "${_out}")
  execute_process(COMMAND ${PYTHON} ${COMPARE} ${OUT}
                  OUTPUT_VARIABLE _table ERROR_VARIABLE _terr RESULT_VARIABLE _rc)
  message("--- ${COMPARE} ${OUT}: exit ${_rc}\n${_table}${_terr}")
  if(NOT _rc STREQUAL "0")
    message(FATAL_ERROR "compare_bench.py failed on the bench output")
  endif()
  foreach(c IN LISTS EXPECT)
    if(NOT _table MATCHES "\n\\| ${c} \\|")
      message(FATAL_ERROR "compare_bench.py's table has no row ${c}")
    endif()
  endforeach()
endif()
message(STATUS "bench subset ${EXPECT}: ran exactly these cases")
