/* SPDX-License-Identifier: Apache-2.0 */
/* run_platform.h on a host: the file read into 16-byte aligned memory. */
#include <stdio.h>
#include <stdlib.h>

#include "run_platform.h"

const void* run_load(const char* path, size_t* bytes) {
  FILE* f = fopen(path, "rb");
  long n;
  void* p;
  if (!f) {
    perror(path);
    return NULL;
  }
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  p = aligned_alloc(64, ((size_t)n + 63) / 64 * 64 + 64);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *bytes = (size_t)n;
  return p;
}
