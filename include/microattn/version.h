/* SPDX-License-Identifier: Apache-2.0 */
/* microattn's version, for C11 and C++: the one place it is written. CMake reads it for the
   package (find_package(microattn 0.2)), CHANGELOG.md's newest release must name it (a test
   checks both), and microattn_version() returns it as a string from the compiled library. */
#ifndef MICROATTN_VERSION_H_
#define MICROATTN_VERSION_H_

#define MICROATTN_VERSION_MAJOR 0
#define MICROATTN_VERSION_MINOR 2
#define MICROATTN_VERSION_PATCH 0
/* "MAJOR.MINOR.PATCH" */
#define MICROATTN_VERSION_STRING "0.2.0"

#ifdef __cplusplus
extern "C" {
#endif

/** The version of the compiled library (lib/status.cpp), "MAJOR.MINOR.PATCH": compare it with
    MICROATTN_VERSION_STRING to catch headers and a library from different releases. */
const char* microattn_version(void);

#ifdef __cplusplus
}
#endif

#endif /* MICROATTN_VERSION_H_ */
