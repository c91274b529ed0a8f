// SPDX-License-Identifier: Apache-2.0
// microattn Cortex-M board file for the QEMU machines the tests run on: mps2-an386 (Cortex-M4),
// mps2-an500 (Cortex-M7), mps3-an547 (Cortex-M55). The smallest possible port, and an example
// of one (docs/porting.md; boards/template_port.cpp is the one to copy for a real board):
//   board_init          nothing: QEMU starts every clock, and semihosting needs no set-up
//   core_clock_hz       the fixed processor clock QEMU gives SysTick on these machines
//                       (hw/arm/mps2.c: 25 MHz; mps2-tz.c AN547: 32 MHz), from CMake
//   write, exit,        Arm semihosting (semihosting.cpp): QEMU's
//   board_command_line  -semihosting-config enable=on,target=native,arg=...
#include <cstddef>
#include <cstdint>

#include "port.hpp"
#include "semihosting.hpp"

#ifndef MICROATTN_PORT_CORE_CLOCK_HZ
#define MICROATTN_PORT_CORE_CLOCK_HZ 25000000u  // QEMU mps2-an386 / an500
#endif
#ifndef MICROATTN_PORT_BOARD
#define MICROATTN_PORT_BOARD "unknown"
#endif

namespace microattn {
namespace port {

void board_init() noexcept {}
std::uint32_t core_clock_hz() noexcept { return MICROATTN_PORT_CORE_CLOCK_HZ; }
const char* board_name() noexcept { return MICROATTN_PORT_BOARD; }
void write(const char* s, std::size_t n) noexcept { semihosting::write(s, n); }
void exit(int status) noexcept { semihosting::exit(status); }
int board_command_line(char*** argv) noexcept { return semihosting::command_line(argv); }

}  // namespace port
}  // namespace microattn
