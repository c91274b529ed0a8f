# SPDX-License-Identifier: Apache-2.0
# Shared by the Debian cross toolchains (aarch64-linux-gnu.cmake, arm-linux-gnueabihf.cmake),
# which set MICROATTN_TRIPLE first. Three jobs:
#  1. compilers <triple>-gcc/g++ (Debian g++-<triple>), libraries for CMAKE_LIBRARY_ARCHITECTURE;
#  2. ctest runs target binaries through qemu-user with the cross C library as its prefix;
#  3. GoogleTest / Google Benchmark come from Debian multiarch (libgtest-dev:arm64, ...): their
#     libraries and CMake files are in /usr/lib/<triple>, but their headers are in /usr/include,
#     next to every header of the build machine. Using the packages' own CMake files as they are
#     would put -isystem /usr/include (x86-64 glibc, host xsimd, ...) into target builds. So we
#     stage a small root in the build tree holding only links to those files, and search it:
#       <build>/multiarch-root/usr/include/{gtest,gmock,benchmark} -> /usr/include/...
#       <build>/multiarch-root/usr/lib/<triple>/{libgtest*,libgmock*,libbenchmark*,cmake/...}
#     The packages' config files compute their prefix from their own path, so they then point
#     at the staged root: the include path holds gtest, gmock and benchmark and nothing else.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${MICROATTN_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${MICROATTN_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${MICROATTN_TRIPLE})

# 2. qemu-user; -L: where the target's dynamic loader lives, LD_LIBRARY_PATH: where its libc,
#    libm and libstdc++ are taken from. ld.so and libc.so.6 must come from one glibc build: with
#    -L alone, ld.so is Debian's cross package's (libc6-<arch>-cross, 2.36-8cross1) but its
#    ld.so.cache sends it to the multiarch libc6:<arch> in /lib/<triple> (2.36-9+deb12u14), whose
#    private interface to ld.so differs (aarch64 _rtld_global: 4512 vs 4520 bytes). Nothing
#    single-threaded notices; the first pthread_create walks the thread-stack cache at a wrong
#    offset and spins forever on aarch64, segfaults on armv7 (the thread tests "never finished").
set(CMAKE_CROSSCOMPILING_EMULATOR ${MICROATTN_QEMU} -L /usr/${MICROATTN_TRIPLE} -E
                                  LD_LIBRARY_PATH=/usr/${MICROATTN_TRIPLE}/lib)

# 3. The staged root (links only; made once per build tree: after installing more multiarch
#    packages, delete <build>/multiarch-root and re-run cmake).
set(_root "${CMAKE_BINARY_DIR}/multiarch-root")
get_property(_in_try_compile GLOBAL PROPERTY IN_TRY_COMPILE)
if(NOT _in_try_compile AND NOT EXISTS "${_root}/.complete")
  file(MAKE_DIRECTORY "${_root}/usr/include" "${_root}/usr/lib/${MICROATTN_TRIPLE}/cmake")
  foreach(h gtest gmock benchmark)
    if(EXISTS /usr/include/${h} AND NOT EXISTS "${_root}/usr/include/${h}")
      file(CREATE_LINK /usr/include/${h} "${_root}/usr/include/${h}" SYMBOLIC)
    endif()
  endforeach()
  file(GLOB _libs /usr/lib/${MICROATTN_TRIPLE}/libgtest* /usr/lib/${MICROATTN_TRIPLE}/libgmock*
                  /usr/lib/${MICROATTN_TRIPLE}/libbenchmark*)
  foreach(l IN LISTS _libs)
    get_filename_component(_n "${l}" NAME)
    file(CREATE_LINK "${l}" "${_root}/usr/lib/${MICROATTN_TRIPLE}/${_n}" SYMBOLIC)
  endforeach()
  # Config directories are copied as real directories of links: a link to the directory itself
  # would make the config files resolve their prefix back to /usr.
  foreach(pkg GTest benchmark)
    set(_src /usr/lib/${MICROATTN_TRIPLE}/cmake/${pkg})
    if(EXISTS "${_src}")
      file(MAKE_DIRECTORY "${_root}/usr/lib/${MICROATTN_TRIPLE}/cmake/${pkg}")
      file(GLOB _files "${_src}/*.cmake")
      foreach(f IN LISTS _files)
        get_filename_component(_n "${f}" NAME)
        file(CREATE_LINK "${f}" "${_root}/usr/lib/${MICROATTN_TRIPLE}/cmake/${pkg}/${_n}" SYMBOLIC)
      endforeach()
    endif()
  endforeach()
  file(TOUCH "${_root}/.complete")
endif()

# Packages and libraries only from the staged root; headers and libraries the compiler finds
# itself come from its own sysroot (/usr/<triple>); programs from the build machine.
set(CMAKE_FIND_ROOT_PATH "${_root}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
