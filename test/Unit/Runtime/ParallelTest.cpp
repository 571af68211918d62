//===- ParallelTest.cpp - parallelFor and its pool of workers -------------===//
//
// parallelFor covers [0, n) once in chunks of one size (Parallel.h); a worker
// takes part whether it was still looking for work (within the pool's
// idle spin) or asleep, so neither path may lose a task; and a SerialScope
// keeps a loop on the calling thread.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace trainc {
namespace {

TEST(Parallel, CoversEveryIndexOnce) {
  for (int64_t n : {1, 2, 7, 64, 100, 1000, 100003}) {
    for (int64_t grain : {1, 3, 64, 5000}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      std::mutex mutex;
      std::vector<std::pair<int64_t, int64_t>> chunks;
      parallelFor(n, grain, [&](int64_t begin, int64_t end) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          chunks.push_back({begin, end});
        }
        for (int64_t i = begin; i < end; ++i)
          seen[size_t(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(seen[size_t(i)].load(), 1)
            << "index " << i << " of n=" << n << ", grain=" << grain;
      }
      // Parallel.h: chunks of one size but the last, at most 4 per thread
      // and at most ceil(n / grain).
      std::sort(chunks.begin(), chunks.end());
      EXPECT_LE(int64_t(chunks.size()), (n + grain - 1) / grain);
      EXPECT_LE(int64_t(chunks.size()), 4 * int64_t(parallelThreads()));
      for (size_t c = 0; c + 1 < chunks.size(); ++c) {
        ASSERT_EQ(chunks[c].second - chunks[c].first,
                  chunks[0].second - chunks[0].first)
            << "chunk " << c << " of n=" << n << ", grain=" << grain;
        ASSERT_GE(chunks[c].second - chunks[c].first,
                  chunks.back().second - chunks.back().first);
      }
    }
  }
}

/// Runs a parallelFor whose first chunk waits (up to 10 s) until a second
/// thread has run a chunk, and returns how many threads ran chunks: the
/// caller alone would finish every chunk itself without a worker.
size_t threadsTakingPart() {
  std::mutex mutex;
  std::set<std::thread::id> ids;
  std::atomic<bool> first{true};
  parallelFor(64, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ids.insert(std::this_thread::get_id());
    }
    if (!first.exchange(false))
      return;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (ids.size() > 1)
          return;
      }
      if (std::chrono::steady_clock::now() > until)
        return;
      std::this_thread::yield();
    }
  });
  return ids.size();
}

TEST(Parallel, WorkersTakePartAwakeAndAfterSleeping) {
  if (parallelThreads() < 2)
    GTEST_SKIP() << "one thread (TRAINC_NUM_THREADS or a one-core machine)";
  // Back to back: the worker is still looking for the next task.
  for (int i = 0; i < 50; ++i)
    ASSERT_GT(threadsTakingPart(), 1u) << "call " << i << " ran alone";
  // After a pause far past the pool's idle spin the workers are asleep
  // and must be woken.
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_GT(threadsTakingPart(), 1u) << "call " << i << " after a pause";
  }
}

TEST(Parallel, SerialScopeRunsOnTheCallingThread) {
  SerialScope serial;
  std::atomic<int> calls{0};
  std::thread::id caller = std::this_thread::get_id();
  parallelFor(100000, 1, [&](int64_t begin, int64_t end) {
    ++calls;
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100000);
    EXPECT_EQ(std::this_thread::get_id(), caller);
  });
  EXPECT_EQ(calls.load(), 1);
}

} // namespace
} // namespace trainc
