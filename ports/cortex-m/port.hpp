// SPDX-License-Identifier: Apache-2.0
// microattn Cortex-M port: what firmware (tests, example, benchmark) may call. No heap, no
// stdio: newlib's printf allocates.
//
// Two halves (docs/porting.md):
//  - the board file (boards/qemu_mps.cpp for the QEMU boards, boards/template_port.cpp to copy
//    for your own) defines the few board-specific functions in the "board" section below:
//    init (clocks, console), the core clock, the console, exit, the command line;
//  - the rest is generic Cortex-M and shared by every board: startup.cpp (reset, FPU, caches,
//    faults), cycles.cpp (DWT cycle counter, SysTick tick counter), console.cpp (number
//    formatting on top of the board's console, assert/abort). semihosting.cpp is a console and
//    exit any board may use while a debugger (or QEMU) is attached.
#pragma once

#include <cstddef>
#include <cstdint>

namespace microattn {
namespace port {

// ================================================================ provided by the board file

/// Called once by the reset handler after .data/.bss are set up and the caches are on, before
/// the static constructors and main: bring the core clock to the speed to measure at (PLL,
/// flash wait states), and the console (UART pins, baud rate) up. QEMU boards: nothing to do.
void board_init() noexcept;
/// The core clock in Hz, as set by board_init(): what DWT CYCCNT and SysTick count. The
/// benchmark divides cycles by it for its times, so it must be the real clock.
std::uint32_t core_clock_hz() noexcept;
/// Board name for reports ("mps2-an386", "nucleo-h743zi", ...).
const char* board_name() noexcept;
/// Writes n bytes to the console (semihosting SYS_WRITE, a UART, an RTT buffer, ...). Blocking.
void write(const char* s, std::size_t n) noexcept;
/// Ends the program with `status` (0 = success, up to 255): semihosting SYS_EXIT_EXTENDED on
/// QEMU (QEMU's exit status); on a board without a debugger, e.g. flush the UART and stop in
/// a loop or `bkpt`.
[[noreturn]] void exit(int status) noexcept;
/// The command line (argv[0] first) into static storage, or 0 when the board has none (main
/// then gets argc 1, argv[0] "firmware"). Called once, before main.
int board_command_line(char*** argv) noexcept;

// ================================================================ console (console.cpp)

/// Writes a NUL-terminated string.
void write(const char* s) noexcept;
/// Writes v in decimal / as 0x%08x.
void write_u64(std::uint64_t v) noexcept;
void write_hex32(std::uint32_t v) noexcept;
/// Writes v with `digits` significant digits (printf %g-like, no heap).
void write_double(double v, int digits = 9) noexcept;

// ================================================================ counters (cycles.cpp)

/// Enables the DWT cycle counter (startup does it too) and reports whether it advances:
/// false under QEMU, whose Cortex-M models have no DWT, and on cores without CYCCNT.
bool cycle_counter_works() noexcept;
/// DWT->CYCCNT (wraps at 2^32, ~21 s at 200 MHz).
std::uint32_t cycles() noexcept;

/// Starts SysTick from the processor clock with a wrap interrupt, giving a 64-bit tick count.
/// On hardware a tick is a cycle. Under `qemu-system-arm -icount shift=N` QEMU's virtual clock
/// advances 2^N ns per guest instruction, so ticks * 1e9 / (clock Hz * 2^N) counts guest
/// instructions: deterministic, NOT cycles, but usable as a regression signal.
void tick_counter_start() noexcept;
std::uint64_t ticks() noexcept;

// ================================================================ core (startup.cpp)

/// CPU this image was compiled for ("cortex-m4", ...).
const char* cpu_name() noexcept;

/// The L1 caches. Cortex-M7, M55 and M85 have them (optional in the silicon, present in almost
/// every part); the reset handler turns them on unless built with MICROATTN_PORT_NO_CACHES.
/// Other cores (M4, M33, ...) have none.
struct CacheInfo {
  bool core_has_caches;       ///< an M7 / M55 / M85 (CPUID part number)
  bool enabled_at_reset;      ///< the reset handler turned them on
  bool icache_on, dcache_on;  ///< CCR.IC / CCR.DC read back now (QEMU: always 0, it models none)
  std::uint32_t icache_bytes, dcache_bytes;  ///< from CCSIDR; 0 when the core reports none
};
CacheInfo cache_info() noexcept;
/// SCB->CPUID (implementer, variant, part number, revision: 0x411FC272 is a Cortex-M7 r1p2).
std::uint32_t cpuid() noexcept;

}  // namespace port
}  // namespace microattn
