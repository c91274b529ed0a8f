/* SPDX-License-Identifier: Apache-2.0 */
/* run_platform.h where the model file is linked into the program (a board's flash):
 * RUN_LINKED_BLOB names it (a 16-byte aligned array with RUN_LINKED_BLOB##_bytes beside it, as
 * tests/real_model_data.cpp's .incbin gives); the path is not read. */
#include <stdint.h>

#include "run_platform.h"

#if !defined(RUN_LINKED_BLOB)
#error "run_linked.c: define RUN_LINKED_BLOB as the linked model file's symbol"
#endif
#define RUN_BYTES2(s) s##_bytes
#define RUN_BYTES(s) RUN_BYTES2(s)

extern const unsigned char RUN_LINKED_BLOB[];
extern const unsigned int RUN_BYTES(RUN_LINKED_BLOB);

const void* run_load(const char* path, size_t* bytes) {
  (void)path;
  *bytes = RUN_BYTES(RUN_LINKED_BLOB);
  return RUN_LINKED_BLOB;
}
