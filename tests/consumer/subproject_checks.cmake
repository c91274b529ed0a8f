# SPDX-License-Identifier: Apache-2.0
# Checks for a parent project that add_subdirectory()'s microattn (included by the
# add_subdirectory and bare_metal consumer projects).

# microattn_consumer_add(<source dir>): add_subdirectory(<source dir> microattn), then fail
# unless the parent's CMAKE_BUILD_TYPE (variable and cache) is what it was, and microattn
# defined no target but the library itself (no board images, tests, benchmarks or examples).
macro(microattn_consumer_add source_dir)
  set(_bt_var_before "${CMAKE_BUILD_TYPE}")
  set(_bt_cache_before "$CACHE{CMAKE_BUILD_TYPE}")
  add_subdirectory(${source_dir} microattn)
  if(NOT "${CMAKE_BUILD_TYPE}" STREQUAL "${_bt_var_before}"
     OR NOT "$CACHE{CMAKE_BUILD_TYPE}" STREQUAL "${_bt_cache_before}")
    message(FATAL_ERROR "consumer: add_subdirectory(microattn) changed the parent's CMAKE_BUILD_TYPE "
                        "from '${_bt_var_before}' (cache '${_bt_cache_before}') to "
                        "'${CMAKE_BUILD_TYPE}' (cache '$CACHE{CMAKE_BUILD_TYPE}')")
  endif()
  message(STATUS "consumer: CMAKE_BUILD_TYPE '${CMAKE_BUILD_TYPE}' kept")
  _microattn_consumer_targets(${CMAKE_CURRENT_BINARY_DIR}/microattn _targets)
  if(NOT _targets STREQUAL "microattn")
    message(FATAL_ERROR "consumer: add_subdirectory(microattn) defined the targets '${_targets}', "
                        "expected the library 'microattn' only")
  endif()
  message(STATUS "consumer: microattn's only target is microattn")
endmacro()

function(_microattn_consumer_targets dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _microattn_consumer_targets(${sub} sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} "${targets}" PARENT_SCOPE)
endfunction()
