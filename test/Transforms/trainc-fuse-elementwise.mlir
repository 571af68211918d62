// RUN: trainc-opt %s --trainc-fuse-elementwise -split-input-file | FileCheck %s

// The residual add of a bf16 projection: convert and add, one loop.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[R:.+]]: tensor<8x64xf32>, %[[H:.+]]: tensor<8x64xbf16>)
func.func @residual(%r: tensor<8x64xf32>, %h: tensor<8x64xbf16>) -> tensor<8x64xf32> {
  // CHECK: %[[S:.+]] = graph.fused_elementwise %[[H]], %[[R]] : (tensor<8x64xbf16>, tensor<8x64xf32>) -> tensor<8x64xf32> {
  // CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<bf16>, %[[B:.+]]: tensor<f32>):
  // CHECK-NEXT: %[[W:.+]] = graph.convert %[[A]] : (tensor<bf16>) -> tensor<f32>
  // CHECK-NEXT: %[[SUM:.+]] = graph.add %[[B]], %[[W]] : tensor<f32>
  // CHECK-NEXT: graph.yield %[[SUM]] : tensor<f32>
  // CHECK-NEXT: }
  // CHECK-NEXT: return %[[S]]
  %w = graph.convert %h : (tensor<8x64xbf16>) -> tensor<8x64xf32>
  %s = graph.add %r, %w : tensor<8x64xf32>
  return %s : tensor<8x64xf32>
}

// -----

// A value also used after the chain is a second result; the one used
// only inside is not stored.
// CHECK-LABEL: func.func @two_results
func.func @two_results(%a: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xbf16>) {
  // CHECK: %[[F:.+]]:2 = graph.fused_elementwise
  // CHECK-SAME: -> (tensor<16xf32>, tensor<16xbf16>)
  // CHECK: graph.mul
  // CHECK: graph.add
  // CHECK: graph.convert
  // CHECK: graph.yield
  // CHECK-NOT: graph.
  // CHECK: return %[[F]]#0, %[[F]]#1
  %m = graph.mul %a, %b : tensor<16xf32>
  %s = graph.add %m, %a : tensor<16xf32>
  %c = graph.convert %s : (tensor<16xf32>) -> tensor<16xbf16>
  return %s, %c : tensor<16xf32>, tensor<16xbf16>
}

// -----

// gelu_grad between converts (a bf16 step's MLP gradient), keeping the
// approximation.
// CHECK-LABEL: func.func @gelu_grad_chain
func.func @gelu_grad_chain(%x: tensor<4x8xbf16>, %g: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  // CHECK: graph.fused_elementwise
  // CHECK: graph.convert
  // CHECK: graph.gelu_grad %{{.+}}, %{{.+}}, approximation = tanh : tensor<f32>
  // CHECK: graph.convert
  // CHECK: graph.yield
  // CHECK-NOT: graph.gelu_grad
  %w = graph.convert %x : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %d = graph.gelu_grad %w, %g, approximation = tanh : tensor<4x8xf32>
  %n = graph.convert %d : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return %n : tensor<4x8xbf16>
}

// -----

// A broadcast of a 0-d value becomes a 0-d operand, and the broadcast
// goes; compare and select on i1 join too.
// CHECK-LABEL: func.func @scalar_operand
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[S:.+]]: tensor<f32>)
func.func @scalar_operand(%x: tensor<4x8xf32>, %s: tensor<f32>) -> tensor<4x8xf32> {
  // CHECK-NOT: graph.broadcast_in_dim
  // CHECK: graph.fused_elementwise %[[X]], %[[S]] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK: graph.compare GT
  // CHECK: graph.select
  // CHECK-NOT: graph.broadcast_in_dim
  %b = graph.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
  %p = graph.compare GT, %x, %b : tensor<4x8xf32>
  %y = graph.select %p, %x, %b : tensor<4x8xi1>, tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// One op with a broadcast used only by it is fused (the broadcast is not
// stored); one op alone is left as it is.
// CHECK-LABEL: func.func @single_ops
func.func @single_ops(%x: tensor<8xf32>, %s: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK: graph.fused_elementwise %{{.+}}, %{{.+}} : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  // CHECK: graph.mul
  // CHECK: graph.yield
  // CHECK: graph.exp %{{.+}} : tensor<8xf32>
  // CHECK-NOT: graph.fused_elementwise
  %b = graph.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<8xf32>
  %m = graph.mul %x, %b : tensor<8xf32>
  %e = graph.exp %x : tensor<8xf32>
  return %m, %e : tensor<8xf32>, tensor<8xf32>
}

// -----

// A batch norm's per-channel scale and shift: the loop reads the [C]
// values in place (operand_dims), the broadcasts go; one value broadcast
// two ways is two operands; a rank-3 value is read in place too (its view
// is 2 strides); a broadcast that also feeds an op alone (exp) stays for
// it.
// CHECK-LABEL: func.func @broadcast_operands
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4x4xf32>, %[[G:.+]]: tensor<3xf32>, %[[B:.+]]: tensor<3xf32>, %[[Q:.+]]: tensor<4xf32>, %[[W:.+]]: tensor<2x3x4xf32>)
func.func @broadcast_operands(%x: tensor<2x3x4x4xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %q: tensor<4xf32>, %w: tensor<2x3x4xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) {
  // CHECK: %[[BQ:.+]] = graph.broadcast_in_dim %[[Q]], dims = [3]
  // CHECK: %[[F:.+]] = graph.fused_elementwise %[[X]], %[[G]], %[[B]], %[[Q]], %[[W]], %[[Q]]
  // CHECK-SAME: {operand_dims = [array<i64: 0, 1, 2, 3>, array<i64: 1>, array<i64: 1>, array<i64: 2>, array<i64: 0, 1, 2>, array<i64: 3>]}
  // CHECK-SAME: : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4x4xf32>
  // CHECK-NOT: graph.broadcast_in_dim
  // CHECK: graph.exp %[[BQ]]
  // CHECK: return %[[F]], %{{.+}}, %[[BQ]]
  %bg = graph.broadcast_in_dim %g, dims = [1] : (tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %bb = graph.broadcast_in_dim %b, dims = [1] : (tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %bq2 = graph.broadcast_in_dim %q, dims = [2] : (tensor<4xf32>) -> tensor<2x3x4x4xf32>
  %bq3 = graph.broadcast_in_dim %q, dims = [3] : (tensor<4xf32>) -> tensor<2x3x4x4xf32>
  %bw = graph.broadcast_in_dim %w, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<2x3x4x4xf32>
  %m = graph.mul %x, %bg : tensor<2x3x4x4xf32>
  %a = graph.add %m, %bb : tensor<2x3x4x4xf32>
  %p = graph.mul %a, %bq2 : tensor<2x3x4x4xf32>
  %v = graph.sub %p, %bw : tensor<2x3x4x4xf32>
  %o = graph.add %v, %bq3 : tensor<2x3x4x4xf32>
  %e = graph.exp %bq3 : tensor<2x3x4x4xf32>
  return %o, %e, %bq3 : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>
}

// -----

// A broadcast the executable would read through more than 6 strides (a
// [2, 2, 2] value spanning every other dimension of seven: 7) stays.
// CHECK-LABEL: func.func @broadcast_too_strided
func.func @broadcast_too_strided(%x: tensor<2x2x2x2x2x2x2xf32>, %w: tensor<2x2x2xf32>) -> tensor<2x2x2x2x2x2x2xf32> {
  // CHECK: %[[BW:.+]] = graph.broadcast_in_dim
  // CHECK: graph.fused_elementwise %{{.+}}, %[[BW]] : (tensor<2x2x2x2x2x2x2xf32>, tensor<2x2x2x2x2x2x2xf32>)
  %bw = graph.broadcast_in_dim %w, dims = [1, 3, 5] : (tensor<2x2x2xf32>) -> tensor<2x2x2x2x2x2x2xf32>
  %m = graph.mul %x, %bw : tensor<2x2x2x2x2x2x2xf32>
  %e = graph.exp %m : tensor<2x2x2x2x2x2x2xf32>
  return %e : tensor<2x2x2x2x2x2x2xf32>
}

// -----

// A splat constant of the loop's shape (ReLU's zeros, a padding value)
// becomes one 0-d constant operand, however many ops read it; the big
// constant goes.
// CHECK-LABEL: func.func @splat_constants
func.func @splat_constants(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  // CHECK-NOT: tensor<16x32xf32> = graph.constant
  // CHECK: %[[Z:.+]] = graph.constant dense<0.000000e+00> : tensor<f32>
  // CHECK-NOT: graph.constant
  // CHECK: graph.fused_elementwise %{{.+}}, %[[Z]] : (tensor<16x32xf32>, tensor<f32>) -> tensor<16x32xf32>
  // CHECK: graph.max
  // CHECK: graph.add
  // CHECK-NOT: graph.constant
  %z = graph.constant dense<0.0> : tensor<16x32xf32>
  %r = graph.max %x, %z : tensor<16x32xf32>
  %s = graph.add %r, %z : tensor<16x32xf32>
  return %s : tensor<16x32xf32>
}

// -----

// An op outside the chain that uses a member's value before the chain's
// last op would need the fused op earlier than its last member: the chain
// stops there, and what follows is a loop of its own.
// CHECK-LABEL: func.func @used_in_between
func.func @used_in_between(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<f32>) {
  // CHECK: %[[M:.+]] = graph.mul
  // CHECK-NEXT: %[[SUM:.+]] = graph.reduce_sum %[[M]]
  // CHECK-NEXT: graph.fused_elementwise %[[M]], %[[SUM]], %{{.+}} : (tensor<8xf32>, tensor<f32>, tensor<8xf32>)
  // CHECK: graph.add
  // CHECK: graph.sub
  %m = graph.mul %a, %b : tensor<8xf32>
  %sum = graph.reduce_sum %m, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  %bc = graph.broadcast_in_dim %sum, dims = [] : (tensor<f32>) -> tensor<8xf32>
  %x = graph.add %m, %bc : tensor<8xf32>
  %y = graph.sub %x, %a : tensor<8xf32>
  return %y, %sum : tensor<8xf32>, tensor<f32>
}

// -----

// Joining a loop to an op further on holds the loop's operands until then,
// which matters only if something between allocates: constants and a
// broadcast the op reads in place do not, so a compare and the select of
// zeros after it are one loop (a max pool's chosen positions, also read
// by its gradient, and the chosen values). An exp of other values between
// does: the compare's two operands would be held over it for its one
// i1 result freed, so there the select starts a loop of its own.
// CHECK-LABEL: func.func @join_across_constants
// CHECK: %[[F:.+]]:2 = graph.fused_elementwise %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xi1>, tensor<4x8xf32>)
// CHECK: graph.reduce_sum %[[F]]#1
// CHECK: graph.fused_elementwise %{{.+}}, %[[F]]#0
func.func @join_across_constants(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %p: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>) {
  %s = graph.compare EQ, %a, %b : tensor<4x8xf32>
  %z = graph.constant dense<0.0> : tensor<4x8xf32>
  %y = graph.select %s, %p, %z : tensor<4x8xi1>, tensor<4x8xf32>
  %r = graph.reduce_sum %y, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %e = graph.exp %g : tensor<4x8xf32>
  %d = graph.select %s, %e, %z : tensor<4x8xi1>, tensor<4x8xf32>
  return %r, %d : tensor<4xf32>, tensor<4x8xf32>
}

// A broadcast between that another op also reads is stored, so it counts
// as work between: the select stays apart (an op of its own).
// CHECK-LABEL: func.func @held_across_shared_broadcast
// CHECK: graph.compare
// CHECK-NEXT: graph.broadcast_in_dim
// CHECK-NEXT: graph.select
func.func @held_across_shared_broadcast(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %p: tensor<4x8xf32>, %q: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xf32>) {
  %s = graph.compare EQ, %a, %b : tensor<4x8xf32>
  %w = graph.broadcast_in_dim %q, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %y = graph.select %s, %p, %w : tensor<4x8xi1>, tensor<4x8xf32>
  return %y, %s, %w : tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @held_across_work
// CHECK: graph.compare
// CHECK-NEXT: graph.exp
// CHECK: graph.fused_elementwise
// CHECK-SAME: (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
func.func @held_across_work(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %p: tensor<4x8xf32>, %g: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x8xi1>) {
  %s = graph.compare EQ, %a, %b : tensor<4x8xf32>
  %e = graph.exp %g : tensor<16x8xf32>
  %z = graph.constant dense<0.0> : tensor<4x8xf32>
  %y = graph.select %s, %p, %z : tensor<4x8xi1>, tensor<4x8xf32>
  return %y, %e, %s : tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x8xi1>
}

// -----

// Ops of different shapes, 16-bit integer math and ops with different
// marks (a recompute clone) stay apart.
// CHECK-LABEL: func.func @stays
func.func @stays(%a: tensor<8xf32>, %b: tensor<2x4xf32>, %i: tensor<8xi16>) -> (tensor<2x4xf32>, tensor<8xi16>, tensor<8xf32>) {
  // CHECK-NOT: graph.fused_elementwise
  %e = graph.exp %a : tensor<8xf32>
  %r = graph.reshape %e : (tensor<8xf32>) -> tensor<2x4xf32>
  %s = graph.add %r, %b : tensor<2x4xf32>
  %j = graph.add %i, %i : tensor<8xi16>
  %k = graph.mul %j, %i : tensor<8xi16>
  %t = graph.tanh %a {recompute.clone} : tensor<8xf32>
  %u = graph.neg %t : tensor<8xf32>
  return %s, %k, %u : tensor<2x4xf32>, tensor<8xi16>, tensor<8xf32>
}

// -----

// jax.random's threefry and uniform: ui64 counters narrowed to ui32, adds,
// rotations by broadcast 0-d amounts and xors are one integer loop; the
// bitcast to f32 and the convert from the integers stay between it and the
// float loop after them (a loop computes on floats or on integers, C5), and
// an integer division (which may fault) stays alone.
// CHECK-LABEL: func.func @integers
// CHECK-SAME: (%[[C:.+]]: tensor<64xui64>, %[[K:.+]]: tensor<ui32>, %[[D:.+]]: tensor<64xi32>)
func.func @integers(%c: tensor<64xui64>, %k: tensor<ui32>, %d: tensor<64xi32>) -> (tensor<64xf32>, tensor<64xi32>) {
  // CHECK: %[[I:.+]] = graph.fused_elementwise %[[C]], %[[K]], %{{.+}}, %{{.+}} : (tensor<64xui64>, tensor<ui32>, tensor<ui32>, tensor<ui32>) -> tensor<64xui32> {
  // CHECK: graph.convert %{{.+}} : (tensor<ui64>) -> tensor<ui32>
  // CHECK: graph.add
  // CHECK: graph.shift_left
  // CHECK: graph.shift_right_logical
  // CHECK: graph.or
  // CHECK: graph.xor
  // CHECK: graph.shift_right_logical
  // CHECK: graph.or
  // CHECK: graph.yield
  // CHECK: %[[B:.+]] = graph.bitcast %[[I]]
  // CHECK: graph.fused_elementwise %[[B]]
  // CHECK-SAME: -> tensor<64xf32>
  // CHECK: graph.div %[[D]], %[[D]] : tensor<64xi32>
  %kb = graph.broadcast_in_dim %k, dims = [] : (tensor<ui32>) -> tensor<64xui32>
  %r13 = graph.constant dense<13> : tensor<ui32>
  %r19 = graph.constant dense<19> : tensor<ui32>
  %b13 = graph.broadcast_in_dim %r13, dims = [] : (tensor<ui32>) -> tensor<64xui32>
  %b19 = graph.broadcast_in_dim %r19, dims = [] : (tensor<ui32>) -> tensor<64xui32>
  %lo = graph.convert %c : (tensor<64xui64>) -> tensor<64xui32>
  %x0 = graph.add %lo, %kb : tensor<64xui32>
  %s0 = graph.shift_left %x0, %b13 : tensor<64xui32>
  %s1 = graph.shift_right_logical %x0, %b19 : tensor<64xui32>
  %rot = graph.or %s0, %s1 : tensor<64xui32>
  %x1 = graph.xor %rot, %x0 : tensor<64xui32>
  %m = graph.shift_right_logical %x1, %b13 : tensor<64xui32>
  %bits = graph.or %m, %kb : tensor<64xui32>
  %f = graph.bitcast %bits : (tensor<64xui32>) -> tensor<64xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %ob = graph.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> tensor<64xf32>
  %u = graph.sub %f, %ob : tensor<64xf32>
  %e = graph.mul %u, %u : tensor<64xf32>
  %q = graph.div %d, %d : tensor<64xi32>
  return %e, %q : tensor<64xf32>, tensor<64xi32>
}

// -----

// A convert between floats and integers joins neither loop.
// CHECK-LABEL: func.func @int_to_float
func.func @int_to_float(%i: tensor<8xi32>) -> tensor<8xf32> {
  // CHECK: %[[N:.+]] = graph.fused_elementwise
  // CHECK-SAME: -> tensor<8xi32>
  // CHECK: graph.neg
  // CHECK: graph.abs
  // CHECK: %[[F:.+]] = graph.convert %[[N]] : (tensor<8xi32>) -> tensor<8xf32>
  // CHECK: graph.fused_elementwise %[[F]]
  // CHECK: graph.exp
  // CHECK: graph.sqrt
  %n = graph.neg %i : tensor<8xi32>
  %a = graph.abs %n : tensor<8xi32>
  %f = graph.convert %a : (tensor<8xi32>) -> tensor<8xf32>
  %e = graph.exp %f : tensor<8xf32>
  %r = graph.sqrt %e : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// The casts of the parameters (train.param arguments), each pair of
// element types, become one convert_group at the first cast's place when
// their copies are read again after the last cast (as the backward pass
// reads the weights); the bias's copy, read only by its matmul, keeps its
// cast, and so does a cast of another value.
// CHECK-LABEL: func.func @parameter_casts
// CHECK-SAME: (%[[W:.+]]: tensor<8x4xf32> {{.*}}, %[[B:.+]]: tensor<8xf32> {{.*}}, %[[V:.+]]: tensor<4x8xf32> {{.*}}, %[[X:.+]]: tensor<2x4xf32>
// CHECK: %[[XB:.+]] = graph.convert %[[X]]
// CHECK-NEXT: %[[G:.+]]:2 = graph.convert_group %[[W]], %[[V]] : (tensor<8x4xf32>, tensor<4x8xf32>) -> (tensor<8x4xbf16>, tensor<4x8xbf16>)
// CHECK-NEXT: %[[BB:.+]] = graph.convert %[[B]]
// CHECK-NEXT: graph.dot_general_bias %[[XB]], %[[G]]#0, %[[BB]]
// CHECK: return %{{.+}}, %[[G]]#0, %[[G]]#1
func.func @parameter_casts(%w: tensor<8x4xf32> {train.param = "w", train.init = dense<0.0> : tensor<8x4xf32>},
                           %b: tensor<8xf32> {train.param = "b", train.init = dense<0.0> : tensor<8xf32>},
                           %v: tensor<4x8xf32> {train.param = "v", train.init = dense<0.0> : tensor<4x8xf32>},
                           %x: tensor<2x4xf32>) -> (tensor<2x4xbf16>, tensor<8x4xbf16>, tensor<4x8xbf16>) {
  %x16 = graph.convert %x : (tensor<2x4xf32>) -> tensor<2x4xbf16>
  %w16 = graph.convert %w : (tensor<8x4xf32>) -> tensor<8x4xbf16>
  %b16 = graph.convert %b : (tensor<8xf32>) -> tensor<8xbf16>
  %h = graph.dot_general_bias %x16, %w16, %b16, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2x4xbf16>, tensor<8x4xbf16>, tensor<8xbf16>) -> tensor<2x8xbf16>
  %v16 = graph.convert %v : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %y = graph.dot_general %h, %v16, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2x8xbf16>, tensor<4x8xbf16>) -> tensor<2x4xbf16>
  return %y, %w16, %v16 : tensor<2x4xbf16>, tensor<8x4xbf16>, tensor<4x8xbf16>
}

// -----

// Small copies read only nearby (biases) join the weights' group while
// they add at most 1/64 of its bytes (here 2 x 8 KiB / 64 = 256 bytes):
// the first two 64-element biases (128 bytes each) join, the third does
// not fit. A bias read before the group's place keeps its cast.
// CHECK-LABEL: func.func @small_casts_join
// CHECK-SAME: (%[[W:[^:]+]]: tensor<64x64xf32> {{.*}}, %[[V:[^:]+]]: tensor<64x64xf32> {{.*}}, %[[B1:[^:]+]]: tensor<64xf32> {{.*}}, %[[B2:[^:]+]]: tensor<64xf32> {{.*}}, %[[B3:[^:]+]]: tensor<64xf32> {{.*}}, %[[B0:[^:]+]]: tensor<64xf32> {{.*}}, %[[X:[^:]+]]: tensor<2x64xbf16>)
// CHECK: %[[B0B:.+]] = graph.convert %[[B0]]
// CHECK: graph.dot_general_bias %[[X]], %{{.+}}, %[[B0B]]
// CHECK: %[[G:.+]]:4 = graph.convert_group %[[W]], %[[V]], %[[B1]], %[[B2]] : {{.+}} -> (tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
// CHECK: graph.dot_general_bias %{{.+}}, %[[G]]#0, %[[G]]#2
// CHECK: graph.dot_general_bias %{{.+}}, %[[G]]#0, %[[G]]#3
// CHECK: %[[B3B:.+]] = graph.convert %[[B3]]
// CHECK: graph.dot_general_bias %{{.+}}, %[[G]]#0, %[[B3B]]
// CHECK: return %{{.+}}, %[[G]]#0, %[[G]]#1
func.func @small_casts_join(%w: tensor<64x64xf32> {train.param = "w", train.init = dense<0.0> : tensor<64x64xf32>},
                            %v: tensor<64x64xf32> {train.param = "v", train.init = dense<0.0> : tensor<64x64xf32>},
                            %b1: tensor<64xf32> {train.param = "b1", train.init = dense<0.0> : tensor<64xf32>},
                            %b2: tensor<64xf32> {train.param = "b2", train.init = dense<0.0> : tensor<64xf32>},
                            %b3: tensor<64xf32> {train.param = "b3", train.init = dense<0.0> : tensor<64xf32>},
                            %b0: tensor<64xf32> {train.param = "b0", train.init = dense<0.0> : tensor<64xf32>},
                            %x: tensor<2x64xbf16>)
    -> (tensor<2x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>) {
  %u = graph.constant dense<1.0> : tensor<64x64xbf16>
  %b016 = graph.convert %b0 : (tensor<64xf32>) -> tensor<64xbf16>
  %h0 = graph.dot_general_bias %x, %u, %b016, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<2x64xbf16>
  %w16 = graph.convert %w : (tensor<64x64xf32>) -> tensor<64x64xbf16>
  %b116 = graph.convert %b1 : (tensor<64xf32>) -> tensor<64xbf16>
  %h1 = graph.dot_general_bias %h0, %w16, %b116, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<2x64xbf16>
  %b216 = graph.convert %b2 : (tensor<64xf32>) -> tensor<64xbf16>
  %h2 = graph.dot_general_bias %h1, %w16, %b216, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<2x64xbf16>
  %b316 = graph.convert %b3 : (tensor<64xf32>) -> tensor<64xbf16>
  %h3 = graph.dot_general_bias %h2, %w16, %b316, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<2x64xbf16>
  %v16 = graph.convert %v : (tensor<64x64xf32>) -> tensor<64x64xbf16>
  // A dead cast does not join (nor is it grouped).
  %dead = graph.convert %b0 : (tensor<64xf32>) -> tensor<64xbf16>
  return %h3, %w16, %v16 : tensor<2x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>
}

// -----

// An inference program reads each copy once, right after its cast: made
// all at once they would all be alive together, so no group. Nor for
// 8-bit targets (convert_group takes f64, f32, f16 and bf16), and a
// declaration is left alone.
// CHECK-LABEL: func.func private @declared
// CHECK-LABEL: func.func @inference
// CHECK-NOT: graph.convert_group
func.func private @declared(tensor<4xf32>) -> tensor<4xf32>
func.func @inference(%w: tensor<4x4xf32> {train.param = "w", train.init = dense<0.0> : tensor<4x4xf32>},
                     %v: tensor<4x4xf32> {train.param = "v", train.init = dense<0.0> : tensor<4x4xf32>},
                     %x: tensor<2x4xbf16>) -> tensor<2x4xbf16> {
  %w16 = graph.convert %w : (tensor<4x4xf32>) -> tensor<4x4xbf16>
  %h = graph.dot_general %x, %w16, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
  %v16 = graph.convert %v : (tensor<4x4xf32>) -> tensor<4x4xbf16>
  %y = graph.dot_general %h, %v16, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
  return %y : tensor<2x4xbf16>
}
// CHECK-LABEL: func.func @eight_bit
// CHECK-NOT: graph.convert_group
func.func @eight_bit(%w: tensor<4xf32> {train.param = "w", train.init = dense<0.0> : tensor<4xf32>},
                     %v: tensor<4xf32> {train.param = "v", train.init = dense<0.0> : tensor<4xf32>})
    -> (tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>) {
  %a = graph.convert %w : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  %b = graph.convert %v : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  return %a, %b : tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>
}

// -----

// With recomputed blocks the forward casts die early (the clones cast
// again), so they are not made all at once.
// CHECK-LABEL: func.func @parameter_casts_recomputed
// CHECK-NOT: graph.convert_group
func.func @parameter_casts_recomputed(%w: tensor<8x4xf32> {train.param = "w", train.init = dense<0.0> : tensor<8x4xf32>},
                                      %v: tensor<8x4xf32> {train.param = "v", train.init = dense<0.0> : tensor<8x4xf32>})
    -> (tensor<8x4xbf16>, tensor<8x4xbf16>, tensor<8x4xbf16>) {
  %w16 = graph.convert %w : (tensor<8x4xf32>) -> tensor<8x4xbf16>
  %v16 = graph.convert %v : (tensor<8x4xf32>) -> tensor<8x4xbf16>
  %w16r = graph.convert %w {recompute.clone} : (tensor<8x4xf32>) -> tensor<8x4xbf16>
  return %w16, %v16, %w16r : tensor<8x4xbf16>, tensor<8x4xbf16>, tensor<8x4xbf16>
}

// -----

// A norm whose only use is a cast to 16 bits writes the 16-bit type itself
// (the autocast copy a matmul reads); a norm whose f32 result is read
// elsewhere too, or cast to f64, keeps its convert.
// CHECK-LABEL: func.func @narrowed_norms
// CHECK: %[[LN:.+]] = graph.layer_norm %{{.+}} scale %{{.+}}, axis = 1, epsilon = 1.000000e-05 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xbf16>
// CHECK: %[[RMS:.+]] = graph.rms_norm %{{.+}}, axis = 1, epsilon = 1.000000e-05 : (tensor<4x8xf32>) -> tensor<4x8xf16>
// CHECK: %[[KEPT:.+]] = graph.layer_norm %{{.+}}, axis = 1, epsilon = 1.000000e-05 : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: graph.convert %[[KEPT]] : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// CHECK: %[[WIDE:.+]] = graph.rms_norm %{{.+}}, axis = 1, epsilon = 1.000000e-05 : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: graph.convert %[[WIDE]] : (tensor<4x8xf32>) -> tensor<4x8xf64>
func.func @narrowed_norms(%x: tensor<4x8xf32>, %g: tensor<8xf32>)
    -> (tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf64>) {
  %0 = graph.layer_norm %x scale %g, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = graph.convert %0 : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %2 = graph.rms_norm %x, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = graph.convert %2 : (tensor<4x8xf32>) -> tensor<4x8xf16>
  %4 = graph.layer_norm %x, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = graph.convert %4 : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %6 = graph.rms_norm %x, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = graph.convert %6 : (tensor<4x8xf32>) -> tensor<4x8xf64>
  return %1, %3, %5, %4, %7 : tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf64>
}
