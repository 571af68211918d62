//===- Parallel.h - Data-parallel loops on the CPU --------------*- C++ -*-===//
//
// parallelFor splits [0, n) into contiguous chunks of one size (the last
// may be shorter): at most 4 per thread and at most ceil(n / grain), so
// about `grain` iterations or more each. The caller and a process-wide pool
// of worker threads claim them as they become free, so a late worker never
// stalls the caller. The thread count is std::thread::hardware_concurrency
// unless TRAINC_NUM_THREADS is set. The chunks depend only on n, grain and
// the thread count, so a kernel that writes disjoint outputs per index is
// reproducible bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_BASE_PARALLEL_H
#define TRAINC_RUNTIME_BASE_PARALLEL_H

#include <cstdint>
#include <functional>

namespace trainc {

/// Calls body(begin, end) on disjoint chunks covering [0, n).
void parallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &body);

/// The number of threads parallelFor uses.
int parallelThreads();

/// While one is alive, parallelFor on this thread runs its whole range
/// inline: for a kernel that, inside its own parallel loop, calls other
/// kernels on pieces small enough for one thread (the fused elementwise
/// loop).
class SerialScope {
public:
  SerialScope();
  ~SerialScope();
  SerialScope(const SerialScope &) = delete;
  SerialScope &operator=(const SerialScope &) = delete;

private:
  bool previous_;
};

} // namespace trainc

#endif // TRAINC_RUNTIME_BASE_PARALLEL_H
