// A small persistent thread pool: `threads` participants including the caller (workers run with
// denormals flushed, see FlushDenormals). A parallel region is a
// fixed list of chunks (so reductions per chunk are deterministic for a thread count) that threads
// claim dynamically: if a worker is slow to wake or descheduled on a busy machine, the caller simply
// runs its chunks instead of waiting for it. Workers spin briefly, then yield, then sleep, because a
// training step opens dozens of short regions.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace nnstudio::cpu {

// Flushes denormal floats to zero on this thread while alive (x86 MXCSR FTZ + DAZ; a no-op elsewhere),
// restoring the previous mode after. Late in training tiny gradients and Adam moments turn denormal,
// and denormal arithmetic is up to ~100x slower on x86 (PyTorch offers the same switch as
// torch.set_flush_denormal). Values below 1.2e-38 do not matter to training; NaN/Inf are unaffected.
class FlushDenormals {
 public:
  FlushDenormals();
  ~FlushDenormals();
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned saved_ = 0;
};

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // 0: one per hardware thread
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Runs fn(chunk, thread) for every chunk in [0, chunks) and returns when all are done. `thread` in
  // [0, size()) names the executing thread (for per-thread scratch); 0 is the caller.
  template <class Fn>
  void run(int chunks, Fn&& fn) {
    if (chunks <= 0) return;
    if (threads_ == 1 || chunks == 1) {
      for (int c = 0; c < chunks; ++c) fn(c, 0);
      return;
    }
    using F = std::remove_reference_t<Fn>;
    Task task{&fn, [](void* f, int chunk, int thread) { (*static_cast<F*>(f))(chunk, thread); }};
    runTask(chunks, task);
  }

  // Splits [0, n) into min(size(), n) contiguous chunks and runs fn(begin, end, chunk, thread) on each.
  template <class Fn>
  void parallelFor(int64_t n, Fn&& fn) {
    if (n <= 0) return;
    const int parts = chunksFor(n);
    run(parts, [&](int c, int t) { fn(n * c / parts, n * (c + 1) / parts, c, t); });
  }

  // The number of chunks parallelFor(n) uses (size per-chunk buffers with it).
  int chunksFor(int64_t n) const { return int(std::min<int64_t>(threads_, std::max<int64_t>(n, 1))); }

 private:
  struct Task {
    void* fn;
    void (*call)(void*, int, int);
  };
  void runTask(int chunks, Task task);
  void workerLoop(int thread);
  // claims and runs chunks of region `generation` until none is left; false if the region changed
  void work(uint64_t generation, int thread);

  int threads_ = 1;
  std::vector<std::thread> workers_;
  // (generation << 32) | next unclaimed chunk: one word, so a claim is one CAS that also checks the region
  std::atomic<uint64_t> state_{0};
  std::atomic<int> chunks_{0};
  std::atomic<void*> fn_{nullptr};
  std::atomic<void (*)(void*, int, int)> call_{nullptr};
  std::atomic<int> done_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace nnstudio::cpu
