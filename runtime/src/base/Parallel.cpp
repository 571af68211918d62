//===- Parallel.cpp - Data-parallel loops on the CPU ----------------------===//

#include "base/Parallel.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace trainc {
namespace {

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
    {
      std::lock_guard<std::mutex> lock(mutex);
      tasks.push_back(std::move(task));
    }
    wake.notify_one();
  }

private:
  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [this] { return stopping || !tasks.empty(); });
        if (tasks.empty())
          return;
        task = std::move(tasks.front());
        tasks.pop_front();
      }
      task();
    }
  }

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> tasks;
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

void parallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &body) {
  if (n <= 0)
    return;
  int64_t chunks = std::min<int64_t>(parallelThreads(),
                                     (n + std::max<int64_t>(grain, 1) - 1) /
                                         std::max<int64_t>(grain, 1));
  if (chunks <= 1) {
    body(0, n);
    return;
  }
  int64_t per = (n + chunks - 1) / chunks;
  std::mutex mutex;
  std::condition_variable done;
  int64_t remaining = chunks - 1;
  for (int64_t c = 1; c < chunks; ++c) {
    int64_t begin = c * per, end = std::min(n, begin + per);
    pool().submit([&, begin, end] {
      if (begin < end)
        body(begin, end);
      std::lock_guard<std::mutex> lock(mutex);
      if (--remaining == 0)
        done.notify_one();
    });
  }
  body(0, std::min(n, per));
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [&] { return remaining == 0; });
}

} // namespace trainc
