// RUN: not trainc-opt %s --trainc-partition="mesh=data=2" 2>&1 | FileCheck %s --check-prefix=NOSTRATEGY
// RUN: not trainc-opt %s --trainc-partition="mesh=data=1 tensor-parallel=true" 2>&1 | FileCheck %s --check-prefix=TENSOR
// RUN: not trainc-opt %s --trainc-partition="mesh=data=2,data=2 data-parallel=true" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not trainc-opt %s --trainc-partition="mesh=pipe=2 data-parallel=true" 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not trainc-opt %s --trainc-partition="mesh=data=0 data-parallel=true" 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: trainc-opt %s --trainc-partition="mesh=data=1 data-parallel=true" | FileCheck %s --check-prefix=ONE
// RUN: not trainc-opt %s --trainc-partition="mesh=data=1 data-parallel=true sync-batch-norm=true" 2>&1 | FileCheck %s --check-prefix=SYNC

// NOSTRATEGY: partition: the mesh's data axis has 2 ranks but no strategy uses it: add --data-parallel
// TENSOR: partition: tensor-parallel needs a mesh whose tensor axis has more than 1 rank (as tensor=2)
// TWICE: --mesh 'data=2,data=2': axis 'data' is given twice
// AXIS: --mesh 'pipe=2': unknown axis 'pipe' (axes: data, tensor)
// SIZE: --mesh 'data=0': axis 'data' needs a size >= 1 (as in data=2)
// SYNC: partition: sync-batch-norm needs data-parallel on a data axis of at least 2 ranks
// One rank: nothing changes.
// ONE-NOT: graph.mesh
// ONE-NOT: all_reduce
func.func @main(%x: tensor<2x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", train.loss}) {
  %l = graph.reduce_sum %x, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
