// SPDX-License-Identifier: Apache-2.0
// A microattn::Executor for hosted targets: a fixed pool of std::threads. Optional: the umbrella
// header does not include it and no other header starts a thread; bare metal plugs its RTOS in
// through executor.hpp instead. Include it from your application and hand pool.executor() to a
// layer's set_executor():
//
//   microattn::ThreadPool pool(4);                          // the caller + 3 threads
//   using Cfg = microattn::Config<..., microattn::MaxWorkers{4}>;
//   static microattn::MultiHeadAttention<Cfg> layer;
//   if (layer.set_executor(pool.executor()) != microattn::Status::kOk) ...
//
// Task i of a run goes to thread i (the calling thread runs task 0), so a run of n tasks wakes
// n - 1 threads; the threads wait by spinning briefly, then yielding, then sleeping on a
// condition variable, so back-to-back runs (a decode step has three) cost a few microseconds.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

#include "microattn/executor.hpp"

namespace microattn {

class ThreadPool {
 public:
  /// Most workers a pool runs (its thread handles are an array of this size less one).
  static constexpr std::size_t kMaxWorkers = 64;

  /// A pool that runs up to `workers` tasks at once (1 .. kMaxWorkers; clamped): the calling
  /// thread and workers - 1 threads.
  explicit ThreadPool(std::size_t workers)
      : workers_(workers < 1             ? 1
                 : workers > kMaxWorkers ? kMaxWorkers
                                         : workers) {
    for (std::size_t t = 1; t < workers_; ++t)
      threads_[t - 1] = std::thread([this, t] { loop(t); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_.store(true, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    for (std::size_t t = 1; t < workers_; ++t) threads_[t - 1].join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// The executor view of this pool (valid while the pool lives).
  microattn::Executor executor() noexcept {
    microattn::Executor e;
    e.run = &ThreadPool::run;
    e.self = this;
    e.workers = workers_;
    return e;
  }
  std::size_t workers() const noexcept { return workers_; }

 private:
  static void run(void* self, std::size_t n, void (*task)(void*, std::size_t), void* arg) {
    static_cast<ThreadPool*>(self)->dispatch(n, task, arg);
  }

  void dispatch(std::size_t n, void (*task)(void*, std::size_t), void* arg) {
    if (n <= 1 || workers_ == 1) {
      for (std::size_t i = 0; i < n; ++i) task(arg, i);
      return;
    }
    task_ = task, arg_ = arg, n_ = n;
    done_.store(0, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(m_);  // no lost wake-up for a thread about to sleep
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    task(arg, 0);
    // Every thread reports every generation (also those without a task this time), so no
    // thread can still be in this run when the next one starts. The spin count stops at 64 (no
    // signed overflow, however long a descheduled thread keeps us yielding).
    for (int spin = 0; done_.load(std::memory_order_acquire) != workers_ - 1;) {
      if (spin < 64)
        ++spin;
      else
        std::this_thread::yield();
    }
  }

  void loop(std::size_t t) {
    std::uint64_t seen = 0;
    for (;;) {
      std::uint64_t g = generation_.load(std::memory_order_acquire);
      for (int spin = 0; g == seen; ++spin) {
        if (spin < 2000) {
          if (spin > 64) std::this_thread::yield();
        } else {
          std::unique_lock<std::mutex> lock(m_);
          cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        }
        g = generation_.load(std::memory_order_acquire);
      }
      seen = g;
      if (stop_.load(std::memory_order_relaxed)) return;
      if (t < n_) task_(arg_, t);
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  const std::size_t workers_;
  std::thread threads_[kMaxWorkers - 1];
  std::mutex m_;
  std::condition_variable cv_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::size_t> done_{0};
  std::atomic<bool> stop_{false};
  void (*task_)(void*, std::size_t) = nullptr;
  void* arg_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace microattn
