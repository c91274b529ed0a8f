// SPDX-License-Identifier: Apache-2.0
// microattn Cortex-M port: DWT cycle counter and a 64-bit SysTick tick counter. Generic
// ARMv7-M / ARMv8-M (Mainline); both count the core clock, whose rate the board file gives
// (core_clock_hz()).
#include <cstdint>

#include "port.hpp"

namespace {

volatile std::uint32_t& reg(std::uintptr_t a) {
  return *reinterpret_cast<volatile std::uint32_t*>(a);
}

constexpr std::uintptr_t kDemcr = 0xE000EDFC;    // CoreDebug->DEMCR, bit 24 TRCENA
constexpr std::uintptr_t kDwtCtrl = 0xE0001000;  // bit 0 CYCCNTENA, bit 25 NOCYCCNT
constexpr std::uintptr_t kDwtCyccnt = 0xE0001004;
constexpr std::uintptr_t kDwtLar = 0xE0001FB0;  // Cortex-M7 needs the unlock key
constexpr std::uintptr_t kSystCsr = 0xE000E010, kSystRvr = 0xE000E014, kSystCvr = 0xE000E018;
constexpr std::uint32_t kSysTickMax = 0x00FFFFFF;

volatile std::uint64_t g_tick_wraps = 0;

}  // namespace

extern "C" void SysTick_Handler() { g_tick_wraps = g_tick_wraps + (kSysTickMax + 1ull); }

namespace microattn {
namespace port {

bool cycle_counter_works() noexcept {
  reg(kDemcr) |= 1u << 24;
  reg(kDwtLar) = 0xC5ACCE55;
  if (reg(kDwtCtrl) & (1u << 25)) return false;  // NOCYCCNT: no counter on this core
  reg(kDwtCyccnt) = 0;
  reg(kDwtCtrl) |= 1u;
  const std::uint32_t a = reg(kDwtCyccnt);
  for (volatile int i = 0; i < 100; ++i) {
  }
  return reg(kDwtCyccnt) != a;
}

std::uint32_t cycles() noexcept { return reg(kDwtCyccnt); }

void tick_counter_start() noexcept {
  reg(kSystCsr) = 0;
  g_tick_wraps = 0;
  reg(kSystRvr) = kSysTickMax;
  reg(kSystCvr) = 0;
  reg(kSystCsr) = (1u << 2) | (1u << 1) | 1u;  // processor clock, wrap interrupt, enable
  // The write to CVR cleared it to 0; the reload from RVR happens on the next clock and is not
  // a wrap. Until then ticks() would read 0xFFFFFF ticks too many.
  while (reg(kSystCvr) == 0) {
  }
  g_tick_wraps = 0;
}

std::uint64_t ticks() noexcept {
  for (;;) {
    const std::uint64_t wraps = g_tick_wraps;
    const std::uint32_t val = reg(kSystCvr);
    if (wraps == g_tick_wraps) return wraps + (kSysTickMax - val);
  }
}

}  // namespace port
}  // namespace microattn
