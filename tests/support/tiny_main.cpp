// SPDX-License-Identifier: Apache-2.0
// microattn tiny test runner: main(). Runs every TEST registered through tiny_test.hpp, prints
// each failure with file:line, and ends with exactly one line "N passed, N failed". Returns
// the number of failed tests (capped at 255), so 0 means success; on Cortex-M the startup code
// hands that to semihosting SYS_EXIT_EXTENDED and it becomes QEMU's exit status.
//
// Optional argument (hosted builds, or semihosting command lines): --gtest_filter=PATTERN with
// '*' and '?' wildcards against "Suite.Name", like GoogleTest's positive filter.
#include <cstddef>
#include <cstring>

#include "support/tiny_test.hpp"

#if !defined(MICROATTN_TINY_TEST_PORT_CONSOLE)
#include <cstdio>
extern "C" void microattn_tiny_test_write(const char* s, std::size_t n) {
  std::fwrite(s, 1, n, stdout);
  std::fflush(stdout);
}
#endif

namespace microattn {
namespace tiny_test {
namespace {

bool glob(const char* p, const char* s) {
  if (*p == '\0') return *s == '\0';
  if (*p == '*') return glob(p + 1, s) || (*s && glob(p, s + 1));
  return *s && (*p == '?' || *p == *s) && glob(p + 1, s + 1);
}

/// Matches "Suite.Name" against pattern without building the string.
bool selected(const TestCase& t, const char* pattern) {
  if (!pattern) return true;
  char full[160];
  std::size_t n = 0;
  for (const char* c = t.suite; *c && n < sizeof(full) - 2; ++c) full[n++] = *c;
  full[n++] = '.';
  for (const char* c = t.name; *c && n < sizeof(full) - 1; ++c) full[n++] = *c;
  full[n] = '\0';
  return glob(pattern, full);
}

void line(const char* tag, const TestCase& t) {
  Out o;
  o.str(tag);
  o.str(t.suite);
  o.put('.');
  o.str(t.name);
  o.put('\n');
}

}  // namespace

int run_all(const char* pattern) {
  unsigned passed = 0, failed = 0;
  for (TestCase* t = Registry::get().head; t; t = t->next) {
    if (!selected(*t, pattern)) continue;
    line("[ RUN      ] ", *t);
    Stats::get().failures_in_test = 0;
    t->body();
    if (Stats::get().failures_in_test == 0) {
      ++passed;
      line("[       OK ] ", *t);
    } else {
      ++failed;
      line("[  FAILED  ] ", *t);
    }
  }
  Out o;
  o.u64(passed);
  o.str(" passed, ");
  o.u64(failed);
  o.str(" failed\n");
  return static_cast<int>(failed > 255 ? 255 : failed);
}

}  // namespace tiny_test
}  // namespace microattn

int main(int argc, char** argv) {
  const char* pattern = nullptr;
  static const char kFlag[] = "--gtest_filter=";
  for (int i = 1; i < argc; ++i)
    if (argv[i] && std::strncmp(argv[i], kFlag, sizeof(kFlag) - 1) == 0)
      pattern = argv[i] + sizeof(kFlag) - 1;
  return microattn::tiny_test::run_all(pattern);
}
