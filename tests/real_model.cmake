# SPDX-License-Identifier: Apache-2.0
# The published checkpoint the real_model tests run (../shared/models/stories260K, a llama2.c
# file; tests read it from ../shared and never copy it into the repository), converted at build
# time: tools/export_pytorch.py --llama2c writes the model file, tests/python/llama2c_reference.py
# the float64 NumPy reference (greedy tokens and logits). Both need only NumPy. Included by
# tests/CMakeLists.txt (hosted builds) and ports/cortex-m/CMakeLists.txt (the boards).
#
# microattn_real_model_data(<dir> <ok_var> <why_var>): the rules that write
#   <dir>/stories260K_f32.bin, stories260K_f32_v1.bin (version 1), stories260K_q8.bin (int8),
#   stories260K_f16.bin and stories260K_bf16.bin (16-bit floats), stories260K_q8g32.bin,
#   _q8g64.bin and _q8g128.bin (group-wise int8) and stories260K_ref.bin (in the calling
#   directory, so a target there depends on them by file); <ok_var> TRUE, or FALSE with
#   <why_var> the reason.
set(MICROATTN_SHARED_DIR "${PROJECT_SOURCE_DIR}/../shared" CACHE PATH
    "The shared test inputs (models/stories260K/stories260K.bin); not part of the repository")
# Debian's python3-numpy installs into the system Python, which a pyenv or venv python3 earlier on
# PATH does not see: hence the absolute path.
set(MICROATTN_NUMPY_PYTHON "/usr/bin/python3" CACHE FILEPATH
    "Python interpreter with NumPy for the real_model test data (Debian: /usr/bin/python3)")

function(microattn_real_model_data dir ok why)
  set(_ckpt "${MICROATTN_SHARED_DIR}/models/stories260K/stories260K.bin")
  set(${ok} FALSE PARENT_SCOPE)
  if(NOT EXISTS "${_ckpt}")
    set(${why} "${_ckpt} not found (set MICROATTN_SHARED_DIR)" PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND "${MICROATTN_NUMPY_PYTHON}" -c "import numpy"
                  RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT _rc EQUAL 0)
    set(${why} "${MICROATTN_NUMPY_PYTHON} has no NumPy (Debian: python3-numpy)" PARENT_SCOPE)
    return()
  endif()
  set(_tools ${PROJECT_SOURCE_DIR}/tools)
  set(_ref ${PROJECT_SOURCE_DIR}/tests/python/llama2c_reference.py)
  add_custom_command(
    OUTPUT ${dir}/stories260K_f32.bin
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND "${MICROATTN_NUMPY_PYTHON}" ${_tools}/export_pytorch.py --kind decoder
            --llama2c ${_ckpt} --blob ${dir}/stories260K_f32.bin
    DEPENDS ${_ckpt} ${_tools}/export_pytorch.py ${_tools}/llama2c.py
    COMMENT "real_model: stories260K.bin -> model file (tools/export_pytorch.py --llama2c)"
    VERBATIM)
  add_custom_command(  # (version 1: what bench/stories_naive.c reads)
    OUTPUT ${dir}/stories260K_f32_v1.bin
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND "${MICROATTN_NUMPY_PYTHON}" ${_tools}/export_pytorch.py --kind decoder
            --llama2c ${_ckpt} --blob ${dir}/stories260K_f32_v1.bin --blob-version 1
    DEPENDS ${_ckpt} ${_tools}/export_pytorch.py ${_tools}/llama2c.py
    COMMENT "real_model: stories260K.bin -> model file version 1"
    VERBATIM)
  add_custom_command(  # (int8 weights: the Cortex-M bench's STD1_qd8)
    OUTPUT ${dir}/stories260K_q8.bin
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND "${MICROATTN_NUMPY_PYTHON}" ${_tools}/export_pytorch.py --kind decoder
            --llama2c ${_ckpt} --quant int8 --blob ${dir}/stories260K_q8.bin
    DEPENDS ${_ckpt} ${_tools}/export_pytorch.py ${_tools}/llama2c.py
    COMMENT "real_model: stories260K.bin -> int8 model file"
    VERBATIM)
  # (16-bit float and group-wise int8 weights: the hosted real_model tests)
  foreach(_hq f16|fp16 bf16|bf16 q8g32|int8-g32 q8g64|int8-g64 q8g128|int8-g128)
    string(REPLACE "|" ";" _hq ${_hq})
    list(GET _hq 0 _h)
    list(GET _hq 1 _q)
    add_custom_command(
      OUTPUT ${dir}/stories260K_${_h}.bin
      COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
      COMMAND "${MICROATTN_NUMPY_PYTHON}" ${_tools}/export_pytorch.py --kind decoder
              --llama2c ${_ckpt} --quant ${_q} --blob ${dir}/stories260K_${_h}.bin
      DEPENDS ${_ckpt} ${_tools}/export_pytorch.py ${_tools}/llama2c.py
      COMMENT "real_model: stories260K.bin -> ${_q} model file"
      VERBATIM)
  endforeach()
  add_custom_command(
    OUTPUT ${dir}/stories260K_ref.bin
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND "${MICROATTN_NUMPY_PYTHON}" ${_ref} ${_ckpt} ${dir}/stories260K_ref.bin --steps 256
    DEPENDS ${_ckpt} ${_ref}
    COMMENT "real_model: the float64 llama2.c reference of stories260K (256 greedy steps)"
    VERBATIM)
  set(${ok} TRUE PARENT_SCOPE)
endfunction()
