// RUN: trainc-opt %s -split-input-file --trainc-schedule | FileCheck %s
// RUN: trainc-opt %s -split-input-file --trainc-schedule="overlap=false" | FileCheck %s --check-prefix=SYNC

// A gradient bucket: the all_reduce starts where it was; the divide and
// the slices back to each gradient sink to their first user, and the done
// waits just before them, so the rest of the backward pass (the tanh) runs
// while the ranks communicate.
// CHECK-LABEL: func.func @bucket
// CHECK: %[[P:.+]] = graph.all_reduce_start %[[J:.+]], axis = "data" : tensor<8xf32>
// CHECK: graph.tanh
// CHECK-NEXT: %[[S:.+]] = graph.collective_done %[[P]], %[[J]] : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT: graph.div %[[S]]
// CHECK-NEXT: graph.slice
// CHECK: return
// SYNC-LABEL: func.func @bucket
// SYNC: graph.all_reduce %{{.+}}, axis = "data" : tensor<8xf32>
// SYNC-NOT: _start
module attributes {graph.mesh = {data = 2 : i64}} {
func.func @bucket(%a: tensor<4xf32>, %b: tensor<4xf32>, %x: tensor<16xf32>) -> (tensor<4xf32>, tensor<16xf32>) {
  %j = graph.concatenate(%a, %b), dim = 0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %s = graph.all_reduce %j, axis = "data" : tensor<8xf32>
  %n = graph.constant dense<2.0> : tensor<8xf32>
  %m = graph.div %s, %n : tensor<8xf32>
  %g = graph.slice %m, start = [0], limit = [4], strides = [1] : (tensor<8xf32>) -> tensor<4xf32>
  %t = graph.tanh %x : tensor<16xf32>
  return %g, %t : tensor<4xf32>, tensor<16xf32>
}
}

// -----

// ZeRO-3 gathers: each ends just before its reader, and each but the first
// starts right after the previous gather's done (a prefetch one ahead).
// CHECK-LABEL: func.func @prefetch
// CHECK: %[[S1:.+]] = graph.all_gather_start %arg0
// CHECK-NEXT: %[[D1:.+]] = graph.collective_done %[[S1]], %arg0
// CHECK-NEXT: %[[S2:.+]] = graph.all_gather_start %arg1
// CHECK-NEXT: graph.mul %[[D1]], %[[D1]]
// CHECK-NEXT: %[[D2:.+]] = graph.collective_done %[[S2]], %arg1
// CHECK-NEXT: graph.add
module attributes {graph.mesh = {data = 2 : i64}} {
func.func @prefetch(%p: tensor<2x4xf32>, %q: tensor<2x4xf32>) -> tensor<4x4xf32> {
  %w = graph.all_gather %p, axis = "data" : (tensor<2x4xf32>) -> tensor<4x4xf32>
  %y = graph.mul %w, %w : tensor<4x4xf32>
  %v = graph.all_gather %q, axis = "data" : (tensor<2x4xf32>) -> tensor<4x4xf32>
  %z = graph.add %y, %v : tensor<4x4xf32>
  return %z : tensor<4x4xf32>
}
}
