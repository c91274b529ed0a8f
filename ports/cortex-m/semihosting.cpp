// SPDX-License-Identifier: Apache-2.0
// microattn Cortex-M port: console, exit status and command line through Arm semihosting
// (`bkpt 0xab`). QEMU implements it with `-semihosting-config enable=on,target=native`; on a
// board with a debug probe, the probe's GDB server does (pyOCD, OpenOCD `arm semihosting enable`).
// Without a debugger attached a semihosting call is a HardFault, so firmware that runs on its
// own must use another console (a UART: boards/template_port.cpp).
// A board file calls these from its write / exit / board_command_line (boards/qemu_mps.cpp).
#include "semihosting.hpp"

#include <cstddef>
#include <cstdint>

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
namespace semihosting {

void write(const char* s, std::size_t n) noexcept {
  if (n == 0) return;
  const std::uint32_t args[3] = {static_cast<std::uint32_t>(console_handle()),
                                 reinterpret_cast<std::uint32_t>(s), static_cast<std::uint32_t>(n)};
  semihost(kSysWrite, args);
}

void exit(int status) noexcept {
  const std::uint32_t code = static_cast<std::uint32_t>(status) & 0xff;
  const std::uint32_t block[2] = {kAdpStoppedApplicationExit, code};
  semihost(kSysExitExtended, block);
  // Only reached where SYS_EXIT_EXTENDED is missing: SYS_EXIT can just say ok / not ok.
  semihost(kSysExit, reinterpret_cast<const void*>(code == 0 ? kAdpStoppedApplicationExit
                                                             : kAdpStoppedRunTimeErrorUnknown));
  for (;;) __asm volatile("bkpt 0");
}

/// argc/argv from SYS_GET_CMDLINE (QEMU: `-semihosting-config ...,arg=prog,arg=--flag`, or the
/// kernel path plus -append). Split on spaces into static storage.
int command_line(char*** argv_out) noexcept {
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
  argv[argc] = nullptr;
  *argv_out = argv;
  return argc;
}

}  // namespace semihosting
}  // namespace port
}  // namespace microattn
