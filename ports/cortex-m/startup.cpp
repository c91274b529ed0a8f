// SPDX-License-Identifier: Apache-2.0
// microattn Cortex-M port: vector table, reset handler and fault reporting.
//
// Reset: enable the FPU (before the compiler may emit any FP instruction), set the v8-M stack
// limit, copy .data, clear .bss, enable the DWT cycle counter and the fault handlers, run the
// static constructors (the tiny test runner registers its tests there), fetch the semihosting
// command line, call main and hand its return value to semihosting exit.
// We link with -nostartfiles: no crt0, no _init, no atexit, nothing that could allocate.
//
// MICROATTN_PORT_NO_CONSTRUCTORS: skip .preinit_array and .init_array, as many vendor SDK
// start-ups do (C start-up code that never calls __libc_init_array). Static objects are then
// only zero-filled (.bss) or constant-initialised (.data); the zero-init image
// (zero_init.cpp) is built this way to prove the library needs nothing else.
#include <cstddef>
#include <cstdint>

#include "port.hpp"

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
// Defined in semihosting.cpp.
int microattn_port_cmdline(char*** argv);
}

namespace {

volatile std::uint32_t& reg(std::uintptr_t a) { return *reinterpret_cast<volatile std::uint32_t*>(a); }

constexpr std::uintptr_t kScbShcsr = 0xE000ED24, kScbCfsr = 0xE000ED28, kScbHfsr = 0xE000ED2C;
constexpr std::uintptr_t kScbMmfar = 0xE000ED34, kScbBfar = 0xE000ED38;

}  // namespace

extern "C" {

/// Naked: runs before the FPU is on, so not one FP instruction may come from the compiler.
__attribute__((naked, noreturn)) void Reset_Handler() {
  __asm volatile(
      "ldr r0, =0xE000ED88\n"     // SCB->CPACR
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
  // MemManage, BusFault, UsageFault get their own exceptions, so the report names the cause.
  reg(kScbShcsr) |= (1u << 16) | (1u << 17) | (1u << 18);
  (void)microattn::port::cycle_counter_works();  // enables DWT->CYCCNT
#if !defined(MICROATTN_PORT_NO_CONSTRUCTORS)
  for (auto f = __preinit_array_start; f < __preinit_array_end; ++f) (*f)();
  for (auto f = __init_array_start; f < __init_array_end; ++f) (*f)();
#endif
  char** argv = nullptr;
  const int argc = microattn_port_cmdline(&argv);
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
  static const char* const kNames[] = {"?", "Reset", "NMI", "HardFault", "MemManage", "BusFault",
                                       "UsageFault", "SecureFault"};
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
  write("\n(arm-none-eabi-addr2line -e <elf> <pc> names the faulting line; cfsr bit 20 "
        "(STKOF) on v8-M or a pc/bfar near the stack means the stack overflowed)\n");
  exit(255);
}

void Default_Handler() {
  microattn::port::write("\nmicroattn: unexpected interrupt\n");
  microattn::port::exit(255);
}

}  // extern "C"

/// The vector table: initial SP, then the system exceptions, then a few external IRQs (none is
/// enabled; they only catch the unexpected). Placed first in the image by the linker script.
using Vector = void (*)();
__attribute__((section(".vectors"), used)) extern const Vector microattn_vectors[16 + 32] = {
    reinterpret_cast<Vector>(__stack_top__),
    Reset_Handler,
    Fault_Handler,    // NMI
    Fault_Handler,    // HardFault
    Fault_Handler,    // MemManage
    Fault_Handler,    // BusFault
    Fault_Handler,    // UsageFault
    Fault_Handler,    // SecureFault (v8-M)
    nullptr, nullptr, nullptr,
    Default_Handler,  // SVCall
    Default_Handler,  // DebugMonitor
    nullptr,
    Default_Handler,  // PendSV
    SysTick_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler,
};
