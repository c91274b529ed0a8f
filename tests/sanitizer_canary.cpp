// SPDX-License-Identifier: Apache-2.0
// A deliberate stack-buffer overflow: in the address-sanitized presets (host-asan) ctest expects
// AddressSanitizer's report, so the sanitizer flags the test programs get
// (MICROATTN_SANITIZE_OPTIONS) are shown to still catch what host-asan is for.
#include <cstdio>

int main(int argc, char**) {
  volatile int buf[4] = {1, 2, 3, 4};
  volatile int* p = buf;      // through a pointer: UBSan's bounds check does not see it
  volatile int i = 3 + argc;  // 4: one past the end, unknown to the compiler
  std::printf("%d\n", p[i]);
  return 0;
}
