# SPDX-License-Identifier: Apache-2.0
# The int8-weight example's check (example_q8.cpp): runs the check image (the example + the
# comparisons against quantize_int8() and the double oracle on the dequantised weights) and the
# example image itself under QEMU; passes when both exit 0, the check image reports no FAIL, and
# both print the same checksum line (so the checked output is bit for bit the example's).
#   cmake -DQEMU=qemu-system-arm -DBOARD=mps2-an386 -DIMAGE=a.elf -DCHECK_IMAGE=b.elf \
#         -P check_example_q8.cmake
cmake_minimum_required(VERSION 3.22)
if(NOT QEMU OR NOT BOARD OR NOT IMAGE OR NOT CHECK_IMAGE)
  message(FATAL_ERROR "usage: cmake -DQEMU=<qemu-system-arm> -DBOARD=<board> -DIMAGE=<elf> "
                      "-DCHECK_IMAGE=<elf> -P check_example_q8.cmake")
endif()

# The same command line as the ctest QEMU runs (CMakeLists.txt, microattn_cm_qemu_test).
function(run_image elf name out_var)
  execute_process(
    COMMAND ${QEMU} -M ${BOARD} -nographic -monitor none -serial null
            -semihosting-config enable=on,target=native,arg=${name} -kernel ${elf}
    OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc TIMEOUT 240)
  message("--- ${name} (${elf}): exit ${_rc}\n${_out}${_err}")
  if(NOT _rc STREQUAL "0")
    message(FATAL_ERROR "${name} exited with '${_rc}'")
  endif()
  set(${out_var} "${_out}" PARENT_SCOPE)
endfunction()

run_image(${CHECK_IMAGE} microattn_cm_example_q8_check _check)
run_image(${IMAGE} microattn_cm_example_q8 _example)

if(_check MATCHES "FAIL ")
  message(FATAL_ERROR "the check image reports a failure")
endif()
if(NOT _check MATCHES "int8 example check: all passed")
  message(FATAL_ERROR "the check image did not finish its checks")
endif()
string(REGEX MATCH "checksum: [^\n]*" _sum_check "${_check}")
string(REGEX MATCH "checksum: [^\n]*" _sum_example "${_example}")
if(NOT _sum_check OR NOT _sum_check STREQUAL _sum_example)
  message(FATAL_ERROR "checksums differ: check image '${_sum_check}', example '${_sum_example}'")
endif()
message(STATUS "int8 example checked; both images print '${_sum_example}'")
