// SPDX-License-Identifier: Apache-2.0
// examples/tiny_lm/tiny_lm_platform.h on a Cortex-M board: the port's console, and its SysTick
// count as the counter. Under QEMU (started with -icount shift=0, the image's tests do) one
// tick is 1e9 / clock guest instructions: the counter is in instructions, NOT cycles. On your
// own board the DWT cycle counter (cycles).
#include "port.hpp"
#include "tiny_lm_platform.h"

namespace {
bool g_started = false;
bool counting_cycles() noexcept {
#if defined(MICROATTN_TINY_LM_QEMU)
  return false;
#else
  return microattn::port::cycle_counter_works();
#endif
}
}  // namespace

extern "C" void tlm_write(const char* s) { microattn::port::write(s); }

extern "C" uint64_t tlm_counter(void) {
  if (counting_cycles()) return microattn::port::cycles();
  if (!g_started) {
    microattn::port::tick_counter_start();
    g_started = true;
  }
  const std::uint64_t ticks = microattn::port::ticks();
#if defined(MICROATTN_TINY_LM_QEMU)
  const std::uint64_t hz = microattn::port::core_clock_hz();  // nanoseconds, no overflow
  return ticks / hz * 1000000000u + ticks % hz * 1000000000u / hz;
#else
  return ticks;
#endif
}

extern "C" const char* tlm_counter_unit(void) {
#if defined(MICROATTN_TINY_LM_QEMU)
  return "instructions (QEMU -icount, not cycles)";
#else
  return counting_cycles() ? "cycles" : "SysTick ticks";
#endif
}

extern "C" const microattn_executor* tlm_executor(unsigned) { return nullptr; }

extern "C" const char* tlm_platform(void) {
  static char name[64];
  const char* parts[] = {microattn::port::board_name(), " (", microattn::port::cpu_name(), ")"};
  std::size_t n = 0;
  for (const char* p : parts)
    for (; *p && n + 1 < sizeof name; ++p) name[n++] = *p;
  name[n] = '\0';
  return name;
}
