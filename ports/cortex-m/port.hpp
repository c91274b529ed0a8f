// SPDX-License-Identifier: Apache-2.0
// microattn Cortex-M port: what firmware (tests, example, benchmark) may call. Implemented in
// startup.cpp (reset, faults), semihosting.cpp (console, exit, command line) and cycles.cpp
// (DWT cycle counter, SysTick tick counter). No heap, no stdio: newlib's printf allocates.
#pragma once

#include <cstddef>
#include <cstdint>

namespace microattn {
namespace port {

// ---------------------------------------------------------------- console (semihosting)

/// Writes n bytes to the debugger's (QEMU's) console.
void write(const char* s, std::size_t n) noexcept;
/// Writes a NUL-terminated string.
void write(const char* s) noexcept;
/// Writes v in decimal / as 0x%08x.
void write_u64(std::uint64_t v) noexcept;
void write_hex32(std::uint32_t v) noexcept;
/// Writes v with `digits` significant digits (printf %g-like, no heap).
void write_double(double v, int digits = 9) noexcept;
/// Ends the program: semihosting SYS_EXIT_EXTENDED, so QEMU exits with `status` (0..255).
[[noreturn]] void exit(int status) noexcept;

// ---------------------------------------------------------------- counters

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
/// The processor clock QEMU gives SysTick on this board (Hz).
std::uint32_t core_clock_hz() noexcept;

/// QEMU machine name this image was linked for ("mps2-an386", ...).
const char* board_name() noexcept;
/// CPU this image was compiled for ("cortex-m4", ...).
const char* cpu_name() noexcept;

}  // namespace port
}  // namespace microattn
