// SPDX-License-Identifier: Apache-2.0
// microattn Cortex-M port: console, exit status and command line through Arm semihosting
// (`bkpt 0xab`). QEMU implements it with `-semihosting-config enable=on,target=native`; on a
// board with a debug probe, the probe's GDB server does (pyOCD, OpenOCD `arm semihosting enable`).
// Without a debugger attached a semihosting call is a HardFault, so do not ship this file.
#include <cstddef>
#include <cstdint>

#include "port.hpp"

namespace {

enum : int {
  kSysOpen = 0x01,
  kSysWrite = 0x05,
  kSysGetCmdline = 0x15,
  kSysExit = 0x18,
  kSysExitExtended = 0x20,
};
constexpr std::uint32_t kAdpStoppedApplicationExit = 0x20026;
constexpr std::uint32_t kAdpStoppedRunTimeErrorUnknown = 0x20024;

int semihost(int op, const void* arg) noexcept {
  register int r0 __asm("r0") = op;
  register const void* r1 __asm("r1") = arg;
  __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

/// Handle of the console (":tt" opened for writing), or -1 before the first write.
int console_handle() noexcept {
  static int handle = -1;
  if (handle < 0) {
    static const char kTt[] = ":tt";
    const std::uint32_t args[3] = {reinterpret_cast<std::uint32_t>(kTt), 4 /* "w" */,
                                   sizeof(kTt) - 1};
    handle = semihost(kSysOpen, args);
  }
  return handle;
}

}  // namespace

namespace microattn {
namespace port {

void write(const char* s, std::size_t n) noexcept {
  if (n == 0) return;
  const std::uint32_t args[3] = {static_cast<std::uint32_t>(console_handle()),
                                 reinterpret_cast<std::uint32_t>(s), static_cast<std::uint32_t>(n)};
  semihost(kSysWrite, args);
}

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

void exit(int status) noexcept {
  const std::uint32_t code = static_cast<std::uint32_t>(status) & 0xff;
  const std::uint32_t block[2] = {kAdpStoppedApplicationExit, code};
  semihost(kSysExitExtended, block);
  // Only reached where SYS_EXIT_EXTENDED is missing: SYS_EXIT can just say ok / not ok.
  semihost(kSysExit, reinterpret_cast<const void*>(
                         code == 0 ? kAdpStoppedApplicationExit : kAdpStoppedRunTimeErrorUnknown));
  for (;;) __asm volatile("bkpt 0");
}

}  // namespace port
}  // namespace microattn

extern "C" {

/// argc/argv from SYS_GET_CMDLINE (QEMU: `-semihosting-config ...,arg=prog,arg=--flag`, or the
/// kernel path plus -append). Split on spaces into static storage.
int microattn_port_cmdline(char*** argv_out) {
  static char buf[256];
  static char* argv[9];
  std::uint32_t args[2] = {reinterpret_cast<std::uint32_t>(buf), sizeof(buf) - 1};
  int argc = 0;
  if (semihost(kSysGetCmdline, args) == 0) {
    buf[args[1] < sizeof(buf) ? args[1] : sizeof(buf) - 1] = '\0';
    for (char* p = buf; *p && argc < 8;) {
      while (*p == ' ') *p++ = '\0';
      if (!*p) break;
      argv[argc++] = p;
      while (*p && *p != ' ') ++p;
    }
  }
  if (argc == 0) argv[argc++] = const_cast<char*>("firmware");
  argv[argc] = nullptr;
  *argv_out = argv;
  return argc;
}

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
