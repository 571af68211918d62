// RUN: not trainc %s -o %t.tcx 2>&1 | FileCheck %s

// A fused loop longer than the executable's program limit (40 steps;
// the pass never makes one, hand-written IR can) is an error naming the
// limits (exit 1, no file written).
// CHECK: error: {{.*}}a fused loop of 1 operands, 41 steps and 1 results exceeds the executable's limits (16, 40, 8)
func.func @main(%x: tensor<8xf32> {graph.input = "x"}) -> (tensor<8xf32> {graph.output = "y"}) {
  %r = graph.fused_elementwise %x : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%v0: tensor<f32>):
    %v1 = graph.exp %v0 : tensor<f32>
    %v2 = graph.exp %v1 : tensor<f32>
    %v3 = graph.exp %v2 : tensor<f32>
    %v4 = graph.exp %v3 : tensor<f32>
    %v5 = graph.exp %v4 : tensor<f32>
    %v6 = graph.exp %v5 : tensor<f32>
    %v7 = graph.exp %v6 : tensor<f32>
    %v8 = graph.exp %v7 : tensor<f32>
    %v9 = graph.exp %v8 : tensor<f32>
    %v10 = graph.exp %v9 : tensor<f32>
    %v11 = graph.exp %v10 : tensor<f32>
    %v12 = graph.exp %v11 : tensor<f32>
    %v13 = graph.exp %v12 : tensor<f32>
    %v14 = graph.exp %v13 : tensor<f32>
    %v15 = graph.exp %v14 : tensor<f32>
    %v16 = graph.exp %v15 : tensor<f32>
    %v17 = graph.exp %v16 : tensor<f32>
    %v18 = graph.exp %v17 : tensor<f32>
    %v19 = graph.exp %v18 : tensor<f32>
    %v20 = graph.exp %v19 : tensor<f32>
    %v21 = graph.exp %v20 : tensor<f32>
    %v22 = graph.exp %v21 : tensor<f32>
    %v23 = graph.exp %v22 : tensor<f32>
    %v24 = graph.exp %v23 : tensor<f32>
    %v25 = graph.exp %v24 : tensor<f32>
    %v26 = graph.exp %v25 : tensor<f32>
    %v27 = graph.exp %v26 : tensor<f32>
    %v28 = graph.exp %v27 : tensor<f32>
    %v29 = graph.exp %v28 : tensor<f32>
    %v30 = graph.exp %v29 : tensor<f32>
    %v31 = graph.exp %v30 : tensor<f32>
    %v32 = graph.exp %v31 : tensor<f32>
    %v33 = graph.exp %v32 : tensor<f32>
    %v34 = graph.exp %v33 : tensor<f32>
    %v35 = graph.exp %v34 : tensor<f32>
    %v36 = graph.exp %v35 : tensor<f32>
    %v37 = graph.exp %v36 : tensor<f32>
    %v38 = graph.exp %v37 : tensor<f32>
    %v39 = graph.exp %v38 : tensor<f32>
    %v40 = graph.exp %v39 : tensor<f32>
    %v41 = graph.exp %v40 : tensor<f32>
    graph.yield %v41 : tensor<f32>
  }
  return %r : tensor<8xf32>
}
