/* SPDX-License-Identifier: Apache-2.0 */
/* What microattn_run needs besides tiny_lm_platform.h: the model file's bytes. A host reads
 * the file (run_host.c); a board returns the file linked into its flash. */
#ifndef MICROATTN_RUN_PLATFORM_H
#define MICROATTN_RUN_PLATFORM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The bytes of file `path` (16-byte aligned; they stay until the program ends) and their
 * count in *bytes, or NULL (the reason printed). */
const void* run_load(const char* path, size_t* bytes);

#ifdef __cplusplus
}
#endif

#endif
