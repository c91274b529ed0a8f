// SPDX-License-Identifier: Apache-2.0
// microattn: the caller's threads. The library never starts a thread; a layer given an Executor
// splits its work into tasks and hands them to it.
#pragma once

#include <cstddef>

#include "microattn/status.hpp"

namespace microattn {

/// How a layer runs its work on several cores: run(self, n, task, arg) must call task(arg, i)
/// exactly once for every i in 0 .. n - 1 (on any threads, in any order, at the same time or
/// not) and return when all of them have returned. n is at most `workers`. Task i uses the
/// layer's scratch slot i, so the same i must never run twice at once (it cannot, if each is
/// called once). Tasks never allocate or lock, and always return normally.
///
/// A thread pool (microattn/thread_pool.hpp: std::thread), an RTOS (one FreeRTOS task per
/// worker waiting on a semaphore or task notification, Zephyr work queues or k_thread +
/// k_sem; the caller's thread may run task 0 itself) or OpenMP
/// (`#pragma omp parallel for` over i inside run) plug in the same way.
///
/// Zero bytes (the default of every layer) mean no executor: everything runs on the calling
/// thread. Results are bit-identical for every worker count: the split of the work is a fixed
/// function of the shapes, and every output element is computed by the same operations in the
/// same order whichever task computes it.
struct Executor {
  void (*run)(void* self, std::size_t n, void (*task)(void* arg, std::size_t i),
              void* arg) = nullptr;
  void* self = nullptr;
  std::size_t workers = 0;  ///< tasks that may run at once (0 or 1: the calling thread only)
};

namespace internal {

/// The executor setting of a layer with up to kMaxWorkers scratch slots.
template <std::size_t kMaxWorkers>
struct ExecutorSetting {
  Executor ex{};
  /// kOk, or kBadArgument (nothing changed) for workers > kMaxWorkers or workers > 1 without
  /// a run function.
  Status set(const Executor& e) noexcept {
    if (e.workers > kMaxWorkers || (e.workers > 1 && !e.run)) return Status::kBadArgument;
    ex = e;
    return Status::kOk;
  }
  /// Tasks to split into: the worker count (at least 1).
  std::size_t parts() const noexcept { return (ex.run && ex.workers > 1) ? ex.workers : 1; }
  /// Calls f(i) for i in 0 .. n - 1 (n <= parts()): through the executor when n > 1.
  template <class F>
  void run(std::size_t n, F& f) const noexcept {
    if (n <= 1 || !ex.run) {
      for (std::size_t i = 0; i < n; ++i) f(i);
      return;
    }
    ex.run(
        ex.self, n, [](void* arg, std::size_t i) { (*static_cast<F*>(arg))(i); }, &f);
  }
};

/// [begin, end) of part `part` of `parts` over n items in units of `unit` (every part but
/// the last a multiple of unit; the last ends at n). Parts may be empty.
struct Range {
  std::size_t begin, end;
};
inline Range split(std::size_t n, std::size_t unit, std::size_t part, std::size_t parts) noexcept {
  const std::size_t units = (n + unit - 1) / unit;
  const std::size_t per = (units + parts - 1) / parts;
  std::size_t b = part * per * unit, e = (part + 1) * per * unit;
  b = b < n ? b : n;
  e = e < n ? e : n;
  return {b, e};
}

}  // namespace internal
}  // namespace microattn
