// A transpose read only by dot_generals is not materialized: the GEMM reads
// the weight in place as a transposed operand (the trainc-absorb-transposes
// pass of the lower phase), and the product is unchanged.
// RUN: rm -rf %t && mkdir -p %t
// RUN: trainc %s -o %t/m.tcx
// RUN: trainc-run %t/m.tcx --inspect | FileCheck %s
// CHECK: instructions (1):
// CHECK-NEXT: 0: %{{[0-9]+}} = dot_general(%0, %1) ints=[0, 1, 1, 1, 0]
// RUN: %python -c "import numpy as n; r = n.random.default_rng(0); n.save('%t/x.npy', r.standard_normal((4, 8), dtype=n.float32)); n.save('%t/w.npy', r.standard_normal((16, 8), dtype=n.float32))"
// RUN: trainc-run %t/m.tcx --input x=%t/x.npy --input w=%t/w.npy --output-dir %t
// RUN: %python -c "import numpy as n; x, w, y = (n.load('%t/' + f + '.npy') for f in 'xwy'); assert n.allclose(y, x @ w.T, rtol=1e-5, atol=1e-5), abs(y - x @ w.T).max()"
func.func @main(%x: tensor<4x8xf32> {graph.input = "x"}, %w: tensor<16x8xf32> {graph.input = "w"}) -> (tensor<4x16xf32> {graph.output = "y"}) {
  %wt = graph.transpose %w, permutation = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y = graph.dot_general %x, %wt, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
