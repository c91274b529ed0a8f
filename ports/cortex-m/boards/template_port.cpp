// SPDX-License-Identifier: Apache-2.0
// microattn Cortex-M board file: TEMPLATE for your own board (docs/porting.md).
//
// Copy it to ports/cortex-m/boards/<your-board>.cpp, and linker/template/memory.ld to
// linker/<your-board>/memory.ld; put your memory map in the latter and work through the TODOs
// here (clock; the console only if you do not use a debugger's semihosting). Then:
//
//   cmake -S . -B build/<your-board> -G Ninja -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-none-eabi.cmake
//         -DMICROATTN_CPU=cortex-m7 -DMICROATTN_BOARD=<your-board>
//         -DMICROATTN_CM_CORE_CLOCK_HZ=<core clock after board_init(), Hz>
//         -DMICROATTN_CM_BENCH_CASES="M1;MD1;MD1_q8"        (optional: the default is all)
//   cmake --build build/<your-board> --target microattn_cm_bench
//
// and load build/<your-board>/ports/cortex-m/microattn_cm_bench.elf with your debugger.
//
// A board file defines the six functions of port.hpp's "board" section:
//   board_init()          clocks (flash wait states, PLL) and the console; runs before main
//   core_clock_hz()       the core clock after board_init(): the bench's times are cycles / it
//   board_name()          for the reports
//   write(s, n)           the console: semihosting (the default here) or a UART
//   exit(status)          the end of the program
//   board_command_line()  arguments for main, if the console has a way to pass them
// Everything else is generic Cortex-M and already done: the vector table and reset (FPU on,
// .data/.bss, the M7/M55 L1 caches on, fault reports), the DWT cycle counter, SysTick, the
// number formatting. The QEMU boards' file, boards/qemu_mps.cpp, is the smallest example.
#include <cstddef>
#include <cstdint>

#include "port.hpp"
#include "semihosting.hpp"

// TODO(console): 0 = Arm semihosting through the debugger (pyOCD, OpenOCD with
// `arm semihosting enable`, J-Link GDB server with `monitor semihosting enable`): nothing to set
// up, and slow output does not matter (nothing is printed while a case is timed). But a
// semihosting call without a debugger attached is a HardFault: for a board that runs on its
// own, set 1 and fill in the UART below.
#ifndef BOARD_CONSOLE_UART
#define BOARD_CONSOLE_UART 0
#endif

#ifndef MICROATTN_PORT_BOARD
#define MICROATTN_PORT_BOARD "my-board"
#endif

// TODO(clock): CMake passes -DMICROATTN_CM_CORE_CLOCK_HZ=<Hz> on as MICROATTN_PORT_CORE_CLOCK_HZ.
// Or, with the vendor's CMSIS device files, return SystemCoreClock from core_clock_hz() below
// (after SystemCoreClockUpdate()) and drop this check.
#ifndef MICROATTN_PORT_CORE_CLOCK_HZ
#error "set the core clock: cmake -DMICROATTN_CM_CORE_CLOCK_HZ=<Hz> (or return SystemCoreClock)"
#endif

namespace {

volatile std::uint32_t& reg(std::uintptr_t a) {
  return *reinterpret_cast<volatile std::uint32_t*>(a);
}

#if BOARD_CONSOLE_UART
// TODO(console): your UART's transmit data register and status flags. The values are those of
// an STM32F7's USART3 (the ST-LINK virtual COM port of the Nucleo-144 boards) as an example:
// USART3->TDR, USART3->ISR, ISR.TXE (transmit data register empty), ISR.TC (transmission
// complete). Any UART with a "TX ready" bit fits this shape.
constexpr std::uintptr_t kUartTdr = 0x40004828;
constexpr std::uintptr_t kUartIsr = 0x4000481C;
constexpr std::uint32_t kUartTxReady = 1u << 7;
constexpr std::uint32_t kUartTxDone = 1u << 6;

void uart_init() {
  // TODO(console): clock the UART and its GPIO port, put the pins in their UART function, set
  // the baud rate (115200 8N1 is what terminals expect) and enable the transmitter: your
  // vendor HAL's init (e.g. CubeMX's MX_USART3_UART_Init()) or a few register writes.
}

void uart_putc(char c) {
  while (!(reg(kUartIsr) & kUartTxReady)) {
  }
  reg(kUartTdr) = static_cast<std::uint8_t>(c);
}
#endif

}  // namespace

namespace microattn {
namespace port {

void board_init() noexcept {
  // TODO(clock): bring the core to the clock you want to measure at, as your vendor's start-up
  // would: flash wait states first, then the PLL (CubeMX: SystemClock_Config(); CMSIS:
  // SystemInit() and SystemCoreClockUpdate(); add the vendor's C files and include folders with
  // MICROATTN_CM_BOARD_SOURCES / MICROATTN_CM_BOARD_INCLUDE_DIRS). Left as it is, the part runs
  // at its reset clock (often a 4-16 MHz internal oscillator): set MICROATTN_CM_CORE_CLOCK_HZ to
  // that. Cycle counts depend on the clock too (flash wait states grow with it).
  // If the part starts with a watchdog running, disable or feed it here.
  (void)reg;
#if BOARD_CONSOLE_UART
  uart_init();
#endif
}

std::uint32_t core_clock_hz() noexcept { return MICROATTN_PORT_CORE_CLOCK_HZ; }

const char* board_name() noexcept { return MICROATTN_PORT_BOARD; }

void write(const char* s, std::size_t n) noexcept {
#if BOARD_CONSOLE_UART
  for (std::size_t i = 0; i < n; ++i) {
    if (s[i] == '\n') uart_putc('\r');  // terminals want CR LF
    uart_putc(s[i]);
  }
#else
  semihosting::write(s, n);
#endif
}

void exit(int status) noexcept {
#if BOARD_CONSOLE_UART
  // No one to hand the status to: print it (tools/compare_bench.py ignores the line), let the
  // UART drain, and stop. Not a `bkpt`: without a debugger that would be a HardFault.
  write("\nmicroattn exit ");
  write_u64(static_cast<std::uint64_t>(status) & 0xff);
  write("\n");
  while (!(reg(kUartIsr) & kUartTxDone)) {
  }
  for (;;) __asm volatile("wfi");
#else
  semihosting::exit(status);
#endif
}

int board_command_line(char*** argv) noexcept {
#if BOARD_CONSOLE_UART
  (void)argv;
  return 0;  // main gets argc 1, argv[0] "firmware"
#else
  return semihosting::command_line(argv);
#endif
}

}  // namespace port
}  // namespace microattn
