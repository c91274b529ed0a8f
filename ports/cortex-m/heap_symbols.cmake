# SPDX-License-Identifier: Apache-2.0
# The heap, as an image's symbol table shows it: shared by check_no_heap.cmake and
# c_api_check_image.cmake. C allocators, newlib's reentrant versions and break, and every
# operator new/delete (_Znwj/_Znaj: new(size_t) on 32-bit; _ZdlPv...: delete; nothrow and
# aligned variants included).
set(MICROATTN_HEAP_SYMBOLS malloc free realloc calloc memalign posix_memalign aligned_alloc
    valloc pvalloc _malloc_r _free_r _realloc_r _calloc_r _memalign_r _sbrk _sbrk_r sbrk)
# Sets ${out} to TRUE when `name` is a heap function.
function(microattn_is_heap_symbol name out)
  if(name IN_LIST MICROATTN_HEAP_SYMBOLS OR name MATCHES "^_Zn[wa][jmy]" OR name MATCHES "^_Zd[la]Pv")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()
