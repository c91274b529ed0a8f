// SPDX-License-Identifier: Apache-2.0
// microattn Cortex-M port: the console's formatting on top of the board's write(s, n) (no stdio,
// no heap: newlib's printf allocates), and the C library hooks that would otherwise print with
// stdio: __assert_func, abort, the tiny test runner's console.
#include <cstddef>
#include <cstdint>

#include "port.hpp"

namespace microattn {
namespace port {

void write(const char* s) noexcept {
  std::size_t n = 0;
  while (s[n]) ++n;
  write(s, n);
}

void write_u64(std::uint64_t v) noexcept {
  char d[21];
  int i = 20;
  d[i] = '\0';
  do {
    d[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  write(d + i);
}

void write_hex32(std::uint32_t v) noexcept {
  char d[11] = "0x";
  for (int i = 0; i < 8; ++i) d[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 0xf];
  d[10] = '\0';
  write(d);
}

void write_double(double v, int digits) noexcept {
  // Same algorithm as the tiny test runner's formatter, kept separate so the example image
  // does not depend on test support code.
  char out[40];
  int n = 0;
  if (digits < 1) digits = 1;
  if (digits > 17) digits = 17;
  if (v != v) return write("nan");
  if (v < 0) out[n++] = '-', v = -v;
  if (v > 1.7976931348623157e308) {
    out[n] = '\0';
    write(out);
    return write("inf");
  }
  if (v == 0) {
    out[n++] = '0';
    return write(out, static_cast<std::size_t>(n));
  }
  int e10 = 0;
  double m = v;
  while (m >= 10) m /= 10, ++e10;
  while (m < 1) m *= 10, --e10;
  double scale = 1;
  for (int i = 1; i < digits; ++i) scale *= 10;
  std::uint64_t q = static_cast<std::uint64_t>(m * scale + 0.5);
  if (static_cast<double>(q) >= scale * 10) q /= 10, ++e10;
  char d[17];
  for (int i = digits - 1; i >= 0; --i) d[i] = static_cast<char>('0' + q % 10), q /= 10;
  int last = digits - 1;
  while (last > 0 && d[last] == '0') --last;
  if (e10 >= -5 && e10 < digits) {
    if (e10 < 0) {
      out[n++] = '0';
      out[n++] = '.';
      for (int i = -1; i > e10; --i) out[n++] = '0';
      for (int i = 0; i <= last; ++i) out[n++] = d[i];
    } else {
      for (int i = 0; i <= e10; ++i) out[n++] = i <= last ? d[i] : '0';
      if (last > e10) {
        out[n++] = '.';
        for (int i = e10 + 1; i <= last; ++i) out[n++] = d[i];
      }
    }
  } else {
    out[n++] = d[0];
    if (last > 0) {
      out[n++] = '.';
      for (int i = 1; i <= last; ++i) out[n++] = d[i];
    }
    out[n++] = 'e';
    out[n++] = e10 < 0 ? '-' : '+';
    if (e10 < 0) e10 = -e10;
    if (e10 >= 100) out[n++] = static_cast<char>('0' + e10 / 100);
    out[n++] = static_cast<char>('0' + e10 / 10 % 10);
    out[n++] = static_cast<char>('0' + e10 % 10);
  }
  write(out, static_cast<std::size_t>(n));
}

}  // namespace port
}  // namespace microattn

extern "C" {

/// The tiny test runner's console.
void microattn_tiny_test_write(const char* s, std::size_t n) { microattn::port::write(s, n); }

/// newlib's assert() handler, replaced: the stock one prints with fiprintf, which allocates.
[[noreturn]] void __assert_func(const char* file, int line, const char* func, const char* expr) {
  using namespace microattn::port;
  write("\nassertion failed: ");
  write(expr ? expr : "?");
  write(" in ");
  write(func ? func : "?");
  write(" at ");
  write(file ? file : "?");
  write(":");
  write_u64(static_cast<std::uint64_t>(line));
  write("\n");
  microattn::port::exit(254);
}

/// Called by a pure virtual call or abort() paths; never expected, reported rather than hung.
[[noreturn]] void abort() {
  microattn::port::write("\nabort()\n");
  microattn::port::exit(253);
}

}  // extern "C"
