// SPDX-License-Identifier: Apache-2.0
// An executor without threads, for the split paths on every target (Cortex-M included).
#pragma once

#include <cstddef>

#include "microattn/executor.hpp"

namespace microattn_test {

/// Runs its tasks one after the other on this thread, last first, so a split's parts run in an
/// order no thread pool would pick; `workers` parts (set it before set_executor).
inline microattn::Executor serial_executor(std::size_t workers = 1) {
  microattn::Executor e;
  e.workers = workers;
  e.run = [](void*, std::size_t n, void (*task)(void*, std::size_t), void* arg) {
    for (std::size_t i = n; i-- > 0;) task(arg, i);
  };
  return e;
}

}  // namespace microattn_test
