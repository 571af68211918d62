//===- TensorGroups.h - Launches of the multi-tensor kernels ----*- C++ -*-===//
//
// How a multi-tensor op (graph.adamw_update's N parameters,
// graph.sum_of_squares' operands) is split into kernel launches on the GPU,
// and which tensor a block of a launch works on: plain integer arithmetic,
// so the CPU tests check it (CpuOptimizer.GroupLaunches*) although the CUDA
// kernels that use it (cuda/Optimizer.cu) run only where there is a GPU.
//
// A launch takes up to kGroupTensors tensors, in order, skipping those with
// no work (empty ones: a launch never holds them, and a group of only
// empty tensors makes no launch). Each member takes a run of units (blocks
// of the update, chunks of the sum) numbered from 0 in the launch.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_TENSORGROUPS_H
#define TRAINC_RUNTIME_MATH_TENSORGROUPS_H

#include "base/HostDevice.h"

#include <cstddef>
#include <cstdint>

namespace trainc::math {

/// Tensors per launch: their pointers, in the kernels' parameters, fill
/// most of CUDA's 4 KB for them.
constexpr int kGroupTensors = 32;

/// One launch's members.
struct GroupLaunch {
  int count = 0;
  /// Member k is tensor tensor[k] of the op.
  int32_t tensor[kGroupTensors];
  /// Member k takes units [firstUnit[k], firstUnit[k + 1]).
  int64_t firstUnit[kGroupTensors + 1];
};

/// Fills `launch` with the next members, tensors next, next + 1, ... of
/// `tensors` that have units (`unitsOf(i)` > 0), and moves `next` past
/// them; false when no tensor with units is left.
template <typename UnitsOf>
bool nextLaunch(size_t tensors, size_t &next, UnitsOf &&unitsOf,
                GroupLaunch &launch) {
  launch.count = 0;
  launch.firstUnit[0] = 0;
  for (; next < tensors && launch.count < kGroupTensors; ++next) {
    int64_t units = unitsOf(next);
    if (units <= 0)
      continue;
    int k = launch.count++;
    launch.tensor[k] = int32_t(next);
    launch.firstUnit[k + 1] = launch.firstUnit[k] + units;
  }
  return launch.count > 0;
}

/// The member whose units hold `unit` (< firstUnit[count]).
TRAINC_HD int memberOfUnit(const GroupLaunch &launch, int64_t unit) {
  int k = 0;
  while (k + 1 < launch.count && unit >= launch.firstUnit[k + 1])
    ++k;
  return k;
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_TENSORGROUPS_H
