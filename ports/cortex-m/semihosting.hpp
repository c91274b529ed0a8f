// SPDX-License-Identifier: Apache-2.0
// microattn Cortex-M port: Arm semihosting (semihosting.cpp), for board files whose console is
// a debugger or QEMU. Every call traps into the debugger: without one attached it is a
// HardFault.
#pragma once

#include <cstddef>

namespace microattn {
namespace port {
namespace semihosting {

/// SYS_WRITE to the debugger's console (":tt").
void write(const char* s, std::size_t n) noexcept;
/// SYS_EXIT_EXTENDED: QEMU exits with `status` (0..255).
[[noreturn]] void exit(int status) noexcept;
/// SYS_GET_CMDLINE split on spaces into static storage (at most 8 arguments); 0 when none.
int command_line(char*** argv) noexcept;

}  // namespace semihosting
}  // namespace port
}  // namespace microattn
