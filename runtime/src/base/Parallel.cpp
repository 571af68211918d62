//===- Parallel.cpp - Data-parallel loops on the CPU ----------------------===//

#include "base/Parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace trainc {
namespace {

/// How long an idle worker keeps looking for the next task before it
/// sleeps. A training step is hundreds of kernels, each a parallelFor
/// moments after the last; a worker asleep on a condition variable takes
/// a futex wake and a context switch to start (tens of microseconds, on
/// every call), and until it does the caller runs the chunks alone.
/// Within this time a worker notices a task as soon as it is queued.
/// While it looks it yields its core at every turn, so a runnable thread
/// that shares the core (another rank, a checkpoint writer) is not held
/// up; past it, it sleeps as before, and an idle process costs nothing.
constexpr std::chrono::microseconds kIdleSpin{200};

/// A fixed set of workers draining one queue of closures.
class ThreadPool {
public:
  explicit ThreadPool(int threads) {
    for (int i = 0; i < threads; ++i)
      workers.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    for (std::thread &t : workers)
      t.join();
  }

  void submit(std::function<void()> task) {
    bool sleeping;
    {
      std::lock_guard<std::mutex> lock(mutex);
      tasks.push_back(std::move(task));
      queued.store(tasks.size(), std::memory_order_release);
      sleeping = sleepers > 0;
    }
    // A worker that is looking (not asleep) finds the task by `queued`.
    if (sleeping)
      wake.notify_one();
  }

private:
  /// Waits (looking, then asleep) until there is a task or the pool stops;
  /// returns with `lock` held.
  void waitForTask(std::unique_lock<std::mutex> &lock) {
    auto until = std::chrono::steady_clock::now() + kIdleSpin;
    while (tasks.empty() && !stopping) {
      if (std::chrono::steady_clock::now() >= until) {
        // Counted under the lock: a submit either sees this sleeper and
        // wakes it, or queued its task before the check in wait.
        ++sleepers;
        wake.wait(lock, [this] { return stopping || !tasks.empty(); });
        --sleepers;
        return;
      }
      // Look without the lock until a task is queued (another worker may
      // take it first: then look again) or the time is up.
      lock.unlock();
      while (queued.load(std::memory_order_acquire) == 0 &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      lock.lock();
    }
  }

  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex);
        waitForTask(lock);
        if (tasks.empty())
          return;
        task = std::move(tasks.front());
        tasks.pop_front();
        queued.store(tasks.size(), std::memory_order_release);
      }
      task();
    }
  }

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> tasks;
  /// tasks.size(), readable without the lock by a looking worker.
  std::atomic<size_t> queued{0};
  int sleepers = 0; ///< Workers waiting on `wake` (under `mutex`).
  std::vector<std::thread> workers;
  bool stopping = false;
};

int configuredThreads() {
  if (const char *env = std::getenv("TRAINC_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1)
      return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool &pool() {
  // The caller runs one chunk itself, so the pool has threads - 1 workers.
  static ThreadPool instance(configuredThreads() - 1);
  return instance;
}

} // namespace

int parallelThreads() {
  static const int threads = configuredThreads();
  return threads;
}

namespace {
thread_local bool serialHere = false;
} // namespace

SerialScope::SerialScope() : previous_(serialHere) { serialHere = true; }
SerialScope::~SerialScope() { serialHere = previous_; }

namespace {

/// One parallelFor call: chunks are claimed from `next` by whoever is free,
/// the caller included, so a worker that wakes late never holds the caller
/// up; the caller returns once `finished` counts every chunk. Shared with
/// the tasks, which may start after the caller has returned (they then find
/// nothing to claim and never touch `body`).
struct Job {
  std::atomic<int64_t> next{0}, finished{0};
  int64_t n = 0, chunks = 0, per = 0;
  const std::function<void(int64_t, int64_t)> *body = nullptr;

  void runChunks() {
    for (;;) {
      int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks)
        return;
      (*body)(c * per, std::min(n, (c + 1) * per));
      finished.fetch_add(1, std::memory_order_release);
    }
  }
};

/// Chunks per thread: more than one, so that uneven progress (a worker
/// woken late, a core shared with BLAS) evens out.
constexpr int64_t kChunksPerThread = 4;

} // namespace

void parallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &body) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  int threads = parallelThreads();
  int64_t chunks =
      std::min<int64_t>(threads * kChunksPerThread, (n + grain - 1) / grain);
  if (threads <= 1 || chunks <= 1 || serialHere) {
    body(0, n);
    return;
  }
  auto job = std::make_shared<Job>();
  job->n = n;
  job->per = (n + chunks - 1) / chunks;
  job->chunks = (n + job->per - 1) / job->per;
  job->body = &body;
  for (int t = 1; t < std::min<int64_t>(threads, job->chunks); ++t)
    pool().submit([job] { job->runChunks(); });
  job->runChunks();
  // The last chunks are in flight on workers: they take at most one
  // chunk's time, so wait by spinning (yielding now and then).
  for (int spins = 0;
       job->finished.load(std::memory_order_acquire) < job->chunks; ++spins)
    if (spins % 64 == 63)
      std::this_thread::yield();
}

} // namespace trainc
