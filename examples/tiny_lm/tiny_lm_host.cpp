// SPDX-License-Identifier: Apache-2.0
// tiny_lm_platform.h on a host: stdout, a monotonic clock, microattn's thread pool.
#include <chrono>
#include <cstdio>

#include "microattn/arch.hpp"
#include "microattn/thread_pool.hpp"
#include "tiny_lm_platform.h"

extern "C" void tlm_write(const char* s) { std::fputs(s, stdout); }

extern "C" uint64_t tlm_counter(void) {
  using C = std::chrono::steady_clock;
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(C::now().time_since_epoch()).count());
}

extern "C" const char* tlm_counter_unit(void) { return "nanoseconds"; }

extern "C" const microattn_executor* tlm_executor(unsigned threads) {
  static microattn_executor e;
  if (threads < 2) return nullptr;
  static microattn::ThreadPool pool(threads);  // the first call's size (the demo asks once)
  const microattn::Executor x = pool.executor();
  e.run = x.run, e.self = x.self, e.workers = x.workers;
  return &e;
}

extern "C" const char* tlm_platform(void) {
  static char name[64];
  std::snprintf(name, sizeof name, "host, %s kernels", microattn::arch_name());
  return name;
}
