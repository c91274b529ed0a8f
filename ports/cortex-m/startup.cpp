// SPDX-License-Identifier: Apache-2.0
// microattn Cortex-M port: vector table, reset handler and fault reporting.
//
// Reset: enable the FPU (before the compiler may emit any FP instruction), set the v8-M stack
// limit, copy .data, clear .bss, turn the L1 instruction and data caches on where the core has
// them (Cortex-M7, M55, M85), enable the fault handlers, call the board's board_init() (clocks,
// console), enable the DWT cycle counter, run the static constructors (the tiny test runner
// registers its tests there), fetch the board's command line, call main and hand its return
// value to the board's exit().
// We link with -nostartfiles: no crt0, no _init, no atexit, nothing that could allocate.
//
// MICROATTN_PORT_NO_CACHES: leave the caches as the reset left them (off), e.g. to measure
// what they are worth (CMake: -DMICROATTN_CM_CACHES=OFF).
//
// MICROATTN_PORT_NO_CONSTRUCTORS: skip .preinit_array and .init_array, as many vendor SDK
// start-ups do (C start-up code that never calls __libc_init_array). Static objects are then
// only zero-filled (.bss) or constant-initialised (.data); the zero-init image
// (zero_init.cpp) is built this way to prove the library needs nothing else.
#include <cstddef>
#include <cstdint>

#include "port.hpp"

#ifndef MICROATTN_PORT_CPU
#define MICROATTN_PORT_CPU "unknown"
#endif

extern "C" {
// From the linker script.
extern std::uint32_t __data_load__[], __data_start__[], __data_end__[];
extern std::uint32_t __bss_start__[], __bss_end__[];
extern std::uint32_t __stack_limit__[], __stack_top__[];
extern void (*__preinit_array_start[])();
extern void (*__preinit_array_end[])();
extern void (*__init_array_start[])();
extern void (*__init_array_end[])();

// main itself, under another name: ISO C++ forbids calling (or taking the address of) ::main.
int microattn_port_main(int argc, char** argv) __asm("main");
void Reset_Handler();
void microattn_port_start();
void microattn_port_fault(const std::uint32_t* frame, std::uint32_t exc_return);
void Fault_Handler();
void Default_Handler();
void SysTick_Handler();
}

namespace {

volatile std::uint32_t& reg(std::uintptr_t a) {
  return *reinterpret_cast<volatile std::uint32_t*>(a);
}

constexpr std::uintptr_t kScbShcsr = 0xE000ED24, kScbCfsr = 0xE000ED28, kScbHfsr = 0xE000ED2C;
constexpr std::uintptr_t kScbMmfar = 0xE000ED34, kScbBfar = 0xE000ED38;

// ---- L1 caches (ARMv7-M / ARMv8-M architecture registers; CMSIS SCB_EnableICache/DCache)
constexpr std::uintptr_t kScbCpuid = 0xE000ED00;
constexpr std::uintptr_t kScbCcr = 0xE000ED14;      // bit 16 DC, bit 17 IC
constexpr std::uintptr_t kScbClidr = 0xE000ED78;    // Ctype1 [2:0]: bit 0 I-cache, bit 1 D-cache
constexpr std::uintptr_t kScbCcsidr = 0xE000ED80;   // geometry of the cache CSSELR selects
constexpr std::uintptr_t kScbCsselr = 0xE000ED84;   // bit 0: 1 instruction, 0 data (level 1)
constexpr std::uintptr_t kScbIciallu = 0xE000EF50;  // invalidate the whole I-cache
constexpr std::uintptr_t kScbDcisw = 0xE000EF60;    // invalidate a D-cache line by set/way
constexpr std::uint32_t kCcrDc = 1u << 16, kCcrIc = 1u << 17;

inline void barriers() { __asm volatile("dsb 0xF\n isb 0xF" ::: "memory"); }

/// Cores whose (optional) L1 caches have the architected maintenance registers: Cortex-M7,
/// M55, M85 (CPUID part numbers 0xC27, 0xD22, 0xD23). The M4, M33 and others have none; their
/// SCB has no cache registers to touch.
bool core_has_caches() {
  const std::uint32_t part = (reg(kScbCpuid) >> 4) & 0xFFF;
  return part == 0xC27 || part == 0xD22 || part == 0xD23;
}

/// Bytes of the level-1 cache selected by `instruction` (0 when the core reports none).
std::uint32_t cache_bytes(bool instruction) {
  reg(kScbCsselr) = instruction ? 1u : 0u;
  barriers();
  const std::uint32_t ccsidr = reg(kScbCcsidr);
  const std::uint32_t line = 1u << ((ccsidr & 7u) + 4), ways = ((ccsidr >> 3) & 0x3FFu) + 1;
  const std::uint32_t sets = ((ccsidr >> 13) & 0x7FFFu) + 1;
  return ccsidr ? line * ways * sets : 0;
}

/// Which L1 caches to turn on: those CLIDR reports. An emulator may model no cache ID
/// registers at all (CLIDR 0, which a real M7/M55 never reads); then both, as CMSIS's
/// SystemInit does unconditionally on these cores (the maintenance writes are harmless).
std::uint32_t clidr_caches() {
  const std::uint32_t clidr = reg(kScbClidr);
  return clidr == 0 ? 3u : clidr & 3u;
}

void enable_caches() {
  if (!core_has_caches()) return;
  const std::uint32_t which = clidr_caches();
  if ((which & 1u) && !(reg(kScbCcr) & kCcrIc)) {  // I-cache: invalidate, then enable
    barriers();
    reg(kScbIciallu) = 0;
    barriers();
    reg(kScbCcr) |= kCcrIc;
    barriers();
  }
  if ((which & 2u) && !(reg(kScbCcr) & kCcrDc)) {  // D-cache: invalidate every set and way
    reg(kScbCsselr) = 0;
    barriers();
    const std::uint32_t ccsidr = reg(kScbCcsidr);
    const std::uint32_t line_shift = (ccsidr & 7u) + 4;  // log2(line bytes)
    const std::uint32_t ways = ((ccsidr >> 3) & 0x3FFu) + 1, sets = ((ccsidr >> 13) & 0x7FFFu) + 1;
    std::uint32_t way_shift = 32;  // way index in the top ceil(log2(ways)) bits
    for (std::uint32_t w = ways - 1; w; w >>= 1) --way_shift;
    for (std::uint32_t set = 0; set < sets; ++set)
      for (std::uint32_t way = 0; way < ways; ++way)
        reg(kScbDcisw) = (set << line_shift) | (way_shift < 32 ? way << way_shift : 0u);
    barriers();
    reg(kScbCcr) |= kCcrDc;
    barriers();
  }
}

}  // namespace

extern "C" {

/// Naked: runs before the FPU is on, so not one FP instruction may come from the compiler.
__attribute__((naked, noreturn)) void Reset_Handler() {
  __asm volatile(
      "ldr r0, =0xE000ED88\n"  // SCB->CPACR
      "ldr r1, [r0]\n"
      "orr r1, r1, #(0xF << 20)\n"  // CP10, CP11 full access (FPU; MVE on Cortex-M55)
      "str r1, [r0]\n"
      "dsb\n"
      "isb\n"
      "ldr r0, =__stack_top__\n"
      "mov sp, r0\n"
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
      "ldr r0, =__stack_limit__\n"  // overflow becomes a UsageFault (STKOF), not corruption
      "msr msplim, r0\n"
#endif
      "b microattn_port_start\n");
}

void microattn_port_start() {
  for (std::uint32_t *s = __data_load__, *d = __data_start__; d < __data_end__;) *d++ = *s++;
  for (std::uint32_t* d = __bss_start__; d < __bss_end__;) *d++ = 0;
#if !defined(MICROATTN_PORT_NO_CACHES)
  enable_caches();
#endif
  // MemManage, BusFault, UsageFault get their own exceptions, so the report names the cause.
  reg(kScbShcsr) |= (1u << 16) | (1u << 17) | (1u << 18);
  microattn::port::board_init();                 // clocks, console (boards/*.cpp)
  (void)microattn::port::cycle_counter_works();  // enables DWT->CYCCNT
#if !defined(MICROATTN_PORT_NO_CONSTRUCTORS)
  for (auto f = __preinit_array_start; f < __preinit_array_end; ++f) (*f)();
  for (auto f = __init_array_start; f < __init_array_end; ++f) (*f)();
#endif
  static char firmware[] = "firmware";
  static char* no_args[2] = {firmware, nullptr};
  char** argv = nullptr;
  int argc = microattn::port::board_command_line(&argv);
  if (argc <= 0 || !argv) argc = 1, argv = no_args;
  microattn::port::exit(microattn_port_main(argc, argv));
}

/// Common fault entry: passes the stacked frame (r0-r3, r12, lr, pc, xpsr) to the reporter.
__attribute__((naked)) void Fault_Handler() {
  __asm volatile(
      "tst lr, #4\n"
      "ite eq\n"
      "mrseq r0, msp\n"
      "mrsne r0, psp\n"
      "mov r1, lr\n"
      "b microattn_port_fault\n");
}

void microattn_port_fault(const std::uint32_t* frame, std::uint32_t exc_return) {
  using namespace microattn::port;
  std::uint32_t ipsr;
  __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
  static const char* const kNames[] = {"?",         "Reset",    "NMI",        "HardFault",
                                       "MemManage", "BusFault", "UsageFault", "SecureFault"};
  const std::uint32_t n = ipsr & 0x1ff;
  write("\nmicroattn: ");
  write(n < 8 ? kNames[n] : "exception");
  write(" pc=");
  write_hex32(frame[6]);
  write(" lr=");
  write_hex32(frame[5]);
  write(" cfsr=");
  write_hex32(reg(kScbCfsr));
  write(" hfsr=");
  write_hex32(reg(kScbHfsr));
  write(" mmfar=");
  write_hex32(reg(kScbMmfar));
  write(" bfar=");
  write_hex32(reg(kScbBfar));
  write(" exc_return=");
  write_hex32(exc_return);
  write(
      "\n(arm-none-eabi-addr2line -e <elf> <pc> names the faulting line; cfsr bit 20 "
      "(STKOF) on v8-M or a pc/bfar near the stack means the stack overflowed)\n");
  exit(255);
}

void Default_Handler() {
  microattn::port::write("\nmicroattn: unexpected interrupt\n");
  microattn::port::exit(255);
}

}  // extern "C"

namespace microattn {
namespace port {

const char* cpu_name() noexcept { return MICROATTN_PORT_CPU; }

std::uint32_t cpuid() noexcept { return reg(kScbCpuid); }

CacheInfo cache_info() noexcept {
  CacheInfo c{false, false, false, false, 0, 0};
  if (!core_has_caches()) return c;
  c.core_has_caches = true;
#if !defined(MICROATTN_PORT_NO_CACHES)
  c.enabled_at_reset = true;
#endif
  c.icache_bytes = cache_bytes(true);
  c.dcache_bytes = cache_bytes(false);
  const std::uint32_t ccr = reg(kScbCcr);
  c.icache_on = (ccr & kCcrIc) != 0;
  c.dcache_on = (ccr & kCcrDc) != 0;
  return c;
}

}  // namespace port
}  // namespace microattn

/// The vector table: initial SP, then the system exceptions, then a few external IRQs (none is
/// enabled; they only catch the unexpected). Placed first in the image by the linker script.
using Vector = void (*)();
__attribute__((section(".vectors"), used)) extern const Vector microattn_vectors[16 + 32] = {
    reinterpret_cast<Vector>(__stack_top__),
    Reset_Handler,
    Fault_Handler,  // NMI
    Fault_Handler,  // HardFault
    Fault_Handler,  // MemManage
    Fault_Handler,  // BusFault
    Fault_Handler,  // UsageFault
    Fault_Handler,  // SecureFault (v8-M)
    nullptr,
    nullptr,
    nullptr,
    Default_Handler,  // SVCall
    Default_Handler,  // DebugMonitor
    nullptr,
    Default_Handler,  // PendSV
    SysTick_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
    Default_Handler,
};
