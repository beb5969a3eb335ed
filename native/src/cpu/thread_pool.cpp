// The persistent thread pool (see thread_pool.h).
#include "cpu/thread_pool.h"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>
#define NNSTUDIO_PAUSE() _mm_pause()
#else
#define NNSTUDIO_PAUSE() std::this_thread::yield()
#endif

namespace nnstudio::cpu {

namespace {
constexpr int kSpin = 2000;    // pause loops (~tens of microseconds): the gap between regions of a step
constexpr int kYield = 200;    // then yield: on a busy machine another thread may need this core
constexpr uint64_t kChunkMask = 0xFFFFFFFFull;
}  // namespace

// ---- denormals ----

FlushDenormals::FlushDenormals() {
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
  saved_ = _mm_getcsr();
  _mm_setcsr(saved_ | 0x8040u);  // FTZ (bit 15) + DAZ (bit 6)
#endif
}

FlushDenormals::~FlushDenormals() {
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
  _mm_setcsr(saved_);
#endif
}

// ---- pool ----

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = int(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;
  threads_ = threads;
  for (int t = 1; t < threads_; ++t) workers_.emplace_back([this, t] { workerLoop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    // a new generation with no chunks wakes everyone
    state_.store(((state_.load() >> 32) + 1) << 32);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::work(uint64_t generation, int thread) {
  while (true) {
    uint64_t s = state_.load(std::memory_order_acquire);
    if ((s >> 32) != generation) return;
    const int chunks = chunks_.load(std::memory_order_relaxed);
    void* fn = fn_.load(std::memory_order_relaxed);
    auto call = call_.load(std::memory_order_relaxed);
    const int chunk = int(s & kChunkMask);
    if (chunk >= chunks) return;
    // the CAS fails if the region moved on, so (fn, call, chunks) read above belong to `generation`
    if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    call(fn, chunk, thread);
    done_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::runTask(int chunks, Task task) {
  const uint64_t generation = (state_.load(std::memory_order_relaxed) >> 32) + 1;
  chunks_.store(chunks, std::memory_order_relaxed);
  fn_.store(task.fn, std::memory_order_relaxed);
  call_.store(task.call, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  state_.store(generation << 32, std::memory_order_seq_cst);  // publishes the region
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  work(generation, 0);
  // wait for chunks other threads claimed
  for (int i = 0; done_.load(std::memory_order_acquire) != chunks; ++i) {
    if (i < kSpin) NNSTUDIO_PAUSE();
    else std::this_thread::yield();
  }
}

void ThreadPool::workerLoop(int thread) {
  FlushDenormals flush;
  uint64_t seen = 0;
  while (true) {
    uint64_t generation = state_.load(std::memory_order_acquire) >> 32;
    for (int i = 0; generation == seen && i < kSpin + kYield; ++i) {
      if (i < kSpin) NNSTUDIO_PAUSE();
      else std::this_thread::yield();
      generation = state_.load(std::memory_order_acquire) >> 32;
    }
    if (generation == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, [&] { return (state_.load(std::memory_order_seq_cst) >> 32) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      generation = state_.load(std::memory_order_acquire) >> 32;
    }
    seen = generation;
    if (stop_.load()) return;
    work(generation, thread);
  }
}

}  // namespace nnstudio::cpu
