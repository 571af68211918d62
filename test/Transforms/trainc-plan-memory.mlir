// RUN: trainc-opt %s --trainc-plan-memory -split-input-file | FileCheck %s

// The memory plan on small programs: arena 0 holds parameters then
// optimizer state, arena 1 everything else; offsets are 64-byte aligned.

// Reuse: neg takes exp's buffer (exp's result dies there), the reshape
// shares it (plan.alias: no instruction), the input keeps its own for the
// whole program. Four 256-byte buffers and a scalar fit in 516 bytes.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %arg0: tensor<4x16xf32> {graph.input = "x", plan.arena = 1 : i64, plan.offset = 0 : i64}
// CHECK-SAME: plan.arena_sizes = array<i64: 0, 516>
// CHECK-SAME: plan.peak = {activations = 516 : i64, activations_without_reuse = 1088 : i64, parameters = 0 : i64, peak = 516 : i64, persistent_state = 0 : i64}
// CHECK: graph.exp %arg0 {plan.arenas = array<i64: 1>, plan.offsets = array<i64: [[E:[0-9]+]]>}
// CHECK: graph.neg %{{.+}} {plan.arenas = array<i64: 1>, plan.offsets = array<i64: [[E]]>}
// CHECK: graph.reshape %{{.+}} {plan.alias, plan.arenas = array<i64: 1>, plan.offsets = array<i64: [[E]]>}
// CHECK: graph.reduce_sum %{{.+}} {plan.arenas = array<i64: 1>, plan.offsets = array<i64: 512>}
func.func @main(%x: tensor<4x16xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "s"}) {
  %e = graph.exp %x : tensor<4x16xf32>
  %n = graph.neg %e : tensor<4x16xf32>
  %r = graph.reshape %n : (tensor<4x16xf32>) -> tensor<64xf32>
  %s = graph.reduce_sum %r, dims = [0] : (tensor<64xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// In place: adamw_update writes the new parameter and moments over the old
// ones (its InPlaceOpInterface), so they stay in the state arena, at their
// targets' offsets, and need no copy.
// CHECK-LABEL: func.func @main
// CHECK-SAME: plan.arena_sizes = array<i64: 384, 132>
// CHECK-SAME: parameters = 128 : i64, peak = 516 : i64, persistent_state = 256 : i64
// CHECK: graph.adamw_update {{.+}} {plan.arenas = array<i64: 0, 0, 0>, plan.offsets = array<i64: 0, 128, 256>}

func.func @main(%p: tensor<4x8xf32> {train.param = "p", train.init = dense<1.0> : tensor<4x8xf32>},
                %m: tensor<4x8xf32> {train.state = "m", train.init = dense<0.0> : tensor<4x8xf32>},
                %v: tensor<4x8xf32> {train.state = "v", train.init = dense<0.0> : tensor<4x8xf32>},
                %g: tensor<4x8xf32> {graph.input = "g"}, %s: tensor<f32> {graph.input = "s"})
    -> (tensor<4x8xf32> {train.update = "p"}, tensor<4x8xf32> {train.update = "m"}, tensor<4x8xf32> {train.update = "v"}) {
  %0:3 = graph.adamw_update params(%p), grads(%g), exp_avgs(%m), exp_avg_sqs(%v), scalars(%s, %s, %s, %s), beta1 = 0.9, beta2 = 0.999, epsilon = 1.0e-8
         : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
        -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return %0#0, %0#1, %0#2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// In place for a group of two parameters (a multi-tensor update): each
// new value takes its own operand's offset (p 0, q 128, their first
// moments 192 and 320, their second 384 and 512), none another member's.
// CHECK-LABEL: func.func @main
// CHECK: graph.adamw_update {{.+}} {plan.arenas = array<i64: 0, 0, 0, 0, 0, 0>, plan.offsets = array<i64: 0, 128, 192, 320, 384, 512>}

func.func @main(%p: tensor<4x8xf32> {train.param = "p", train.init = dense<1.0> : tensor<4x8xf32>},
                %q: tensor<8xf32> {train.param = "q", train.init = dense<1.0> : tensor<8xf32>},
                %m: tensor<4x8xf32> {train.state = "m", train.init = dense<0.0> : tensor<4x8xf32>},
                %n: tensor<8xf32> {train.state = "n", train.init = dense<0.0> : tensor<8xf32>},
                %v: tensor<4x8xf32> {train.state = "v", train.init = dense<0.0> : tensor<4x8xf32>},
                %w: tensor<8xf32> {train.state = "w", train.init = dense<0.0> : tensor<8xf32>},
                %g: tensor<4x8xf32> {graph.input = "g"}, %h: tensor<8xf32> {graph.input = "h"},
                %s: tensor<f32> {graph.input = "s"})
    -> (tensor<4x8xf32> {train.update = "p"}, tensor<8xf32> {train.update = "q"},
        tensor<4x8xf32> {train.update = "m"}, tensor<8xf32> {train.update = "n"},
        tensor<4x8xf32> {train.update = "v"}, tensor<8xf32> {train.update = "w"}) {
  %0:6 = graph.adamw_update params(%p, %q), grads(%g, %h), exp_avgs(%m, %n), exp_avg_sqs(%v, %w), scalars(%s, %s, %s, %s), beta1 = 0.9, beta2 = 0.999, epsilon = 1.0e-8
         : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>,
            tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
        -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>)
  return %0#0, %0#1, %0#2, %0#3, %0#4, %0#5 : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>
}

// -----

// Not in place: the parameter is read after its new value is made. A
// returned argument gets an output buffer of its own (the serializer
// copies it there).
// CHECK-LABEL: func.func @main
// CHECK-SAME: {graph.output = "p_before", plan.arena = 1 : i64, plan.offset = 384 : i64}
// CHECK: graph.sub %arg0, %arg1 {plan.arenas = array<i64: 1>, plan.offsets = array<i64: 128>}
// CHECK: graph.mul %arg0, %arg1 {plan.arenas = array<i64: 1>, plan.offsets = array<i64: 256>}

func.func @main(%p: tensor<4x8xf32> {train.param = "p", train.init = dense<1.0> : tensor<4x8xf32>},
                %g: tensor<4x8xf32> {graph.input = "g"})
    -> (tensor<4x8xf32> {train.update = "p"}, tensor<4x8xf32> {graph.output = "y"}, tensor<4x8xf32> {graph.output = "p_before"}) {
  %new = graph.sub %p, %g : tensor<4x8xf32>
  %y = graph.mul %p, %g : tensor<4x8xf32>
  return %new, %y, %p : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A reshape of a parameter, and a reshape of that, read the parameter's
// bytes (plan.alias, the state arena, q's offset 128): no copy, and the
// work arena holds only g and the product (128 + 64 bytes, where a copy
// of q made it 320). q's new value still goes in place,
// since no view of q is read after the instruction that makes it.
// CHECK-LABEL: func.func @main
// CHECK-SAME: plan.arena_sizes = array<i64: 256, 192>
// CHECK: graph.reshape %arg1 {plan.alias, plan.arenas = array<i64: 0>, plan.offsets = array<i64: 128>}
// CHECK: graph.reshape %{{.+}} {plan.alias, plan.arenas = array<i64: 0>, plan.offsets = array<i64: 128>}
// CHECK: graph.dot_general {{.+}} {plan.arenas = array<i64: 1>
// CHECK: graph.sub %arg1, %arg2 {plan.arenas = array<i64: 0>, plan.offsets = array<i64: 128>}

func.func @main(%p: tensor<4x8xf32> {train.param = "p", train.init = dense<1.0> : tensor<4x8xf32>},
                %q: tensor<8x2x2xf32> {train.param = "q", train.init = dense<1.0> : tensor<8x2x2xf32>},
                %g: tensor<8x2x2xf32> {graph.input = "g"})
    -> (tensor<4x4xf32> {graph.output = "y"}, tensor<8x2x2xf32> {train.update = "q"}) {
  %w = graph.reshape %q : (tensor<8x2x2xf32>) -> tensor<8x4xf32>
  %w2 = graph.reshape %w : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = graph.dot_general %p, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %new = graph.sub %q, %g : tensor<8x2x2xf32>
  return %y, %new : tensor<4x4xf32>, tensor<8x2x2xf32>
}

// -----

// Not in place: a view of q is read after q's new value is made, so the
// new value goes to the work arena (and is copied after the run).
// CHECK-LABEL: func.func @main
// CHECK: graph.reshape %arg1 {plan.alias, plan.arenas = array<i64: 0>, plan.offsets = array<i64: 128>}
// CHECK: graph.sub %arg1, %arg2 {plan.arenas = array<i64: 1>

func.func @main(%p: tensor<4x8xf32> {train.param = "p", train.init = dense<1.0> : tensor<4x8xf32>},
                %q: tensor<8x2x2xf32> {train.param = "q", train.init = dense<1.0> : tensor<8x2x2xf32>},
                %g: tensor<8x2x2xf32> {graph.input = "g"})
    -> (tensor<4x4xf32> {graph.output = "y"}, tensor<8x2x2xf32> {train.update = "q"}) {
  %w = graph.reshape %q : (tensor<8x2x2xf32>) -> tensor<8x4xf32>
  %new = graph.sub %q, %g : tensor<8x2x2xf32>
  %y = graph.dot_general %p, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  return %y, %new : tensor<4x4xf32>, tensor<8x2x2xf32>
}

// -----

// Not in place either when the op that makes q's new value reads a view
// of q besides q itself: it would read what it overwrites through
// another tensor.
// CHECK-LABEL: func.func @main
// CHECK: graph.add %arg0, %{{.+}} {plan.arenas = array<i64: 1>

func.func @main(%q: tensor<8x4xf32> {train.param = "q", train.init = dense<1.0> : tensor<8x4xf32>})
    -> (tensor<8x4xf32> {train.update = "q"}) {
  %w = graph.reshape %q : (tensor<8x4xf32>) -> tensor<32xf32>
  %v = graph.reshape %w : (tensor<32xf32>) -> tensor<8x4xf32>
  %new = graph.add %q, %v : tensor<8x4xf32>
  return %new : tensor<8x4xf32>
}

// -----

// In place, several results: a fused loop's two results each take the
// buffer of a different operand that dies there (of their own type), so
// the program needs the two buffers of its transposes, no more.
// CHECK-LABEL: func.func @main
// CHECK: %[[A:.+]] = graph.transpose %arg0, {{.*}}plan.offsets = array<i64: [[OA:[0-9]+]]>
// CHECK: %[[B:.+]] = graph.transpose %arg1, {{.*}}plan.offsets = array<i64: [[OB:[0-9]+]]>
// CHECK: graph.fused_elementwise %[[A]], %[[B]] {plan.arenas = array<i64: 1, 1>, plan.offsets = array<i64: [[OA]], [[OB]]>}
func.func @main(%x: tensor<4x16xf32> {graph.input = "x"}, %y: tensor<4x16xf32> {graph.input = "y"}) -> (tensor<f32> {graph.output = "s"}, tensor<f32> {graph.output = "t"}) {
  %a = graph.transpose %x, permutation = [1, 0] : (tensor<4x16xf32>) -> tensor<16x4xf32>
  %b = graph.transpose %y, permutation = [1, 0] : (tensor<4x16xf32>) -> tensor<16x4xf32>
  %r:2 = graph.fused_elementwise %a, %b : (tensor<16x4xf32>, tensor<16x4xf32>) -> (tensor<16x4xf32>, tensor<16x4xf32>) {
  ^bb0(%u: tensor<f32>, %v: tensor<f32>):
    %e = graph.exp %u : tensor<f32>
    %n = graph.neg %v : tensor<f32>
    graph.yield %e, %n : tensor<f32>, tensor<f32>
  }
  %s = graph.reduce_sum %r#0, dims = [0, 1] : (tensor<16x4xf32>) -> tensor<f32>
  %t = graph.reduce_sum %r#1, dims = [0, 1] : (tensor<16x4xf32>) -> tensor<f32>
  return %s, %t : tensor<f32>, tensor<f32>
}

// -----

// Slices of the first elements are views: the padded rows cut off (%p) and
// a [1, 3, 16] prefix of a [1, 4, 16] value share their operand's first
// bytes (plan.alias), and the add then writes over %p in place. Slices
// that are not prefixes copy: one that starts past 0 (%q), and one that
// shortens a dimension after a whole one of more than one element (%c:
// its rows have gaps in memory).
// CHECK-LABEL: func.func @main
// CHECK: %[[E:.+]] = graph.exp %arg0 {plan.arenas = array<i64: 1>, plan.offsets = array<i64: [[O:[0-9]+]]>}
// CHECK: graph.slice %[[E]], {{.+}} {plan.alias, plan.arenas = array<i64: 1>, plan.offsets = array<i64: [[O]]>} : (tensor<6x16xf32>) -> tensor<4x16xf32>
// CHECK: graph.slice %[[E]], {{.+}} {plan.arenas = array<i64: 1>, plan.offsets = array<i64: {{[0-9]+}}>} : (tensor<6x16xf32>) -> tensor<4x16xf32>
// CHECK: graph.slice %[[E]], {{.+}} {plan.arenas = array<i64: 1>, plan.offsets = array<i64: {{[0-9]+}}>} : (tensor<6x16xf32>) -> tensor<6x8xf32>
// CHECK: graph.add {{.+}} {plan.arenas = array<i64: 1>, plan.offsets = array<i64: [[O]]>}
// CHECK: %[[B:.+]] = graph.exp %arg1 {plan.arenas = array<i64: 1>, plan.offsets = array<i64: [[OB:[0-9]+]]>}
// CHECK: graph.slice %[[B]], {{.+}} {plan.alias, plan.arenas = array<i64: 1>, plan.offsets = array<i64: [[OB]]>} : (tensor<1x4x16xf32>) -> tensor<1x3x16xf32>
func.func @main(%x: tensor<6x16xf32> {graph.input = "x"}, %y: tensor<1x4x16xf32> {graph.input = "y"})
    -> (tensor<f32> {graph.output = "s"}, tensor<f32> {graph.output = "c"}, tensor<f32> {graph.output = "t"}) {
  %e = graph.exp %x : tensor<6x16xf32>
  %p = graph.slice %e, start = [0, 0], limit = [4, 16], strides = [1, 1] : (tensor<6x16xf32>) -> tensor<4x16xf32>
  %q = graph.slice %e, start = [2, 0], limit = [6, 16], strides = [1, 1] : (tensor<6x16xf32>) -> tensor<4x16xf32>
  %c = graph.slice %e, start = [0, 0], limit = [6, 8], strides = [1, 1] : (tensor<6x16xf32>) -> tensor<6x8xf32>
  %a = graph.add %p, %q : tensor<4x16xf32>
  %s = graph.reduce_sum %a, dims = [0, 1] : (tensor<4x16xf32>) -> tensor<f32>
  %cs = graph.reduce_sum %c, dims = [0, 1] : (tensor<6x8xf32>) -> tensor<f32>
  %b = graph.exp %y : tensor<1x4x16xf32>
  %t3 = graph.slice %b, start = [0, 0, 0], limit = [1, 3, 16], strides = [1, 1, 1] : (tensor<1x4x16xf32>) -> tensor<1x3x16xf32>
  %t = graph.reduce_sum %t3, dims = [0, 1, 2] : (tensor<1x3x16xf32>) -> tensor<f32>
  return %s, %cs, %t : tensor<f32>, tensor<f32>, tensor<f32>
}
