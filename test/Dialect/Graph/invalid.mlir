// An expected-error for every numbered constraint of every graph op, plus
// the dialect-wide type rules. Constraint numbers are those of each op's ODS
// description; the verifier cites them in its messages.
// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// Dialect-wide: only static shapes.
func.func @dynamic_shape(%x: tensor<?x8xf32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.exp %x : tensor<?x8xf32>
  return
}

// -----

// Arithmetic takes no storage-only type (i4, f8E4M3FN, ...): only convert
// and data movement do.
func.func @unsupported_element_type(%x: tensor<4xi4>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.neg %x : tensor<4xi4>
  return
}

// -----

func.func @neg_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "graph.neg"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @neg_c2(%x: tensor<4xi1>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.neg %x : tensor<4xi1>
  return
}

// -----

func.func @abs_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "graph.abs"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @abs_c2(%x: tensor<4xi1>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.abs %x : tensor<4xi1>
  return
}

// -----

func.func @exp_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "graph.exp"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @exp_c2(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.exp %x : tensor<4xi32>
  return
}

// -----

func.func @log_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "graph.log"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @log_c2(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.log %x : tensor<4xi32>
  return
}

// -----

func.func @tanh_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "graph.tanh"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @tanh_c2(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.tanh %x : tensor<4xi32>
  return
}

// -----

func.func @erf_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "graph.erf"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @erf_c2(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.erf %x : tensor<4xi32>
  return
}

// -----

func.func @sqrt_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "graph.sqrt"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @sqrt_c2(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.sqrt %x : tensor<4xi32>
  return
}

// -----

func.func @rsqrt_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "graph.rsqrt"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @rsqrt_c2(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.rsqrt %x : tensor<4xi32>
  return
}

// -----

func.func @add_c1(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.add"(%x, %y) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @add_c2(%x: tensor<4xi1>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.add %x, %x : tensor<4xi1>
  return
}

// -----

func.func @sub_c1(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.sub"(%x, %y) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @sub_c2(%x: tensor<4xi1>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.sub %x, %x : tensor<4xi1>
  return
}

// -----

func.func @mul_c1(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.mul"(%x, %y) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @mul_c2(%x: tensor<4xi1>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.mul %x, %x : tensor<4xi1>
  return
}

// -----

func.func @div_c1(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.div"(%x, %y) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @div_c2(%x: tensor<4xi1>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.div %x, %x : tensor<4xi1>
  return
}

// -----

func.func @max_c1(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.max"(%x, %y) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @max_c2(%x: tensor<4xi1>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.max %x, %x : tensor<4xi1>
  return
}

// -----

func.func @min_c1(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.min"(%x, %y) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @min_c2(%x: tensor<4xi1>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.min %x, %x : tensor<4xi1>
  return
}

// -----

func.func @pow_c1(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.pow"(%x, %y) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @pow_c2(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.pow %x, %x : tensor<4xi32>
  return
}

// -----

func.func @xor_c1(%x: tensor<4xui32>, %y: tensor<4xi32>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.xor"(%x, %y) : (tensor<4xui32>, tensor<4xi32>) -> tensor<4xui32>
  return
}

// -----

func.func @and_c2(%x: tensor<4xf32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.and %x, %x : tensor<4xf32>
  return
}

// -----

func.func @shift_left_c2(%x: tensor<4xi1>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.shift_left %x, %x : tensor<4xi1>
  return
}

// -----

func.func @pop_count_c2(%x: tensor<4xbf16>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.pop_count %x : tensor<4xbf16>
  return
}

// -----

func.func @bitcast_c1(%x: tensor<4xui32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape}}
  %0 = graph.bitcast %x : (tensor<4xui32>) -> tensor<2xf32>
  return
}

// -----

func.func @bitcast_c2(%x: tensor<4xui32>) {
  // expected-error@+1 {{(C2) element types 'ui32' and 'f64' have different bit widths}}
  %0 = graph.bitcast %x : (tensor<4xui32>) -> tensor<4xf64>
  return
}

// -----

func.func @bitcast_c2_i1(%x: tensor<4xi1>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = graph.bitcast %x : (tensor<4xi1>) -> tensor<4xi8>
  return
}

// -----

func.func @compare_c1(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error@+1 {{requires all operands to have the same type}}
  %0 = "graph.compare"(%x, %y) <{direction = 2 : i32}> : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_result_not_i1(%x: tensor<4xf32>) {
  // expected-error@+1 {{result #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = "graph.compare"(%x, %x) <{direction = 2 : i32}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @select_c1(%p: tensor<4xi1>, %x: tensor<2x2xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape}}
  %0 = graph.select %p, %x, %x : tensor<4xi1>, tensor<2x2xf32>
  return
}

// -----

func.func @select_c2(%p: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error@+1 {{all of {on_true, on_false, result} have same type}}
  %0 = "graph.select"(%p, %x, %y) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @convert_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape}}
  %0 = graph.convert %x : (tensor<4xf32>) -> tensor<5xbf16>
  return
}

// -----

func.func @dot_general_c1(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xf32>) {
  // expected-error@+1 {{(C1) 1 lhs batching dimensions but 0 rhs batching dimensions}}
  %0 = graph.dot_general %a, %b, batching_dims = [0] x [], contracting_dims = [2] x [1]
         : (tensor<2x4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @dot_general_c2(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error@+1 {{(C2) 1 lhs contracting dimensions but 2 rhs contracting dimensions}}
  %0 = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0, 1]
         : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @dot_general_c3(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error@+1 {{(C3) rhs batching/contracting dimension 2 is out of range [0, 2)}}
  %0 = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [2]
         : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @dot_general_c4(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) {
  // expected-error@+1 {{(C4) lhs batching/contracting dimension 1 is listed twice}}
  %0 = graph.dot_general %a, %b, batching_dims = [1] x [0], contracting_dims = [1] x [1]
         : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @dot_general_c5(%a: tensor<2x4x8xf32>, %b: tensor<3x8x16xf32>) {
  // expected-error@+1 {{(C5) batching dimension sizes differ: lhs dim 0 has 2, rhs dim 0 has 3}}
  %0 = graph.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1]
         : (tensor<2x4x8xf32>, tensor<3x8x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @dot_general_c6(%a: tensor<4x8xf32>, %b: tensor<9x16xf32>) {
  // expected-error@+1 {{(C6) contracting dimension sizes differ: lhs dim 1 has 8, rhs dim 0 has 9}}
  %0 = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xf32>, tensor<9x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @dot_general_c7(%a: tensor<4x8xf32>, %b: tensor<8x16xbf16>) {
  // expected-error@+1 {{(C7) lhs element type 'f32' differs from rhs element type 'bf16'}}
  %0 = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xf32>, tensor<8x16xbf16>) -> tensor<4x16xf32>
  return
}

// -----

func.func @dot_general_c8(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error@+1 {{result type 'tensor<16x4xf32>' differs from the inferred type 'tensor<4x16xf32>'}}
  %0 = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<16x4xf32>
  return
}

// -----

func.func @dot_general_c10(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error@+1 {{(C10) f32_result widens bf16 or f16 products, not 'f32'}}
  %0 = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] {f32_result}
         : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @dot_general_f32_result_type(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) {
  // The result type is inferred: f32 with f32_result.
  // expected-error@+1 {{result type 'tensor<4x16xbf16>' differs from the inferred type 'tensor<4x16xf32>'}}
  %0 = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] {f32_result}
         : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @dot_general_c9(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) {
  // expected-error@+1 {{(C9) tf32 rounds f32 operands, not 'bf16'}}
  %0 = graph.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] {tf32}
         : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @dot_general_bias_c11(%a: tensor<4x8xf64>, %b: tensor<8x16xf64>, %c: tensor<16xf64>) {
  // expected-error@+1 {{(C11) tf32 rounds f32 operands, not 'f64'}}
  %0 = graph.dot_general_bias %a, %b, %c, batching_dims = [] x [], contracting_dims = [1] x [0] {tf32}
         : (tensor<4x8xf64>, tensor<8x16xf64>, tensor<16xf64>) -> tensor<4x16xf64>
  return
}

// -----

// dot_general_bias checks dot_general's C1-C7 with the same messages.
func.func @dot_general_bias_c6(%a: tensor<4x8xf32>, %b: tensor<9x16xf32>, %c: tensor<16xf32>) {
  // expected-error@+1 {{(C6) contracting dimension sizes differ: lhs dim 1 has 8, rhs dim 0 has 9}}
  %0 = graph.dot_general_bias %a, %b, %c, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xf32>, tensor<9x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @dot_general_bias_c8(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4xf32>) {
  // expected-error@+1 {{(C8) bias shape [4] is not that of rhs's free dimensions [16]}}
  %0 = graph.dot_general_bias %a, %b, %c, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @dot_general_bias_c8_rank(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) {
  // expected-error@+1 {{(C8) bias shape [4, 16] is not that of rhs's free dimensions [16]}}
  %0 = graph.dot_general_bias %a, %b, %c, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @dot_general_bias_c9(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16xf64>) {
  // expected-error@+1 {{(C9) bias element type 'f64' differs from the operands' 'f32'}}
  %0 = graph.dot_general_bias %a, %b, %c, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf64>) -> tensor<4x16xf32>
  return
}

// -----

func.func @dot_general_bias_c10(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16xf32>) {
  // expected-error@+1 {{result type 'tensor<4x8xf32>' differs from the inferred type 'tensor<4x16xf32>'}}
  %0 = graph.dot_general_bias %a, %b, %c, batching_dims = [] x [], contracting_dims = [1] x [0]
         : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x8xf32>
  return
}

// -----

// dot_general_bias_gelu checks dot_general_bias's C1-C11 with the same
// messages.
func.func @dot_general_bias_gelu_c6(%a: tensor<4x8xbf16>, %b: tensor<9x16xbf16>, %c: tensor<16xbf16>) {
  // expected-error@+1 {{(C6) contracting dimension sizes differ: lhs dim 1 has 8, rhs dim 0 has 9}}
  %0, %1 = graph.dot_general_bias_gelu %a, %b, %c, batching_dims = [] x [], contracting_dims = [1] x [0], approximation = tanh
         : (tensor<4x8xbf16>, tensor<9x16xbf16>, tensor<16xbf16>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>)
  return
}

// -----

func.func @dot_general_bias_gelu_c8(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4xf32>) {
  // expected-error@+1 {{(C8) bias shape [4] is not that of rhs's free dimensions [16]}}
  %0, %1 = graph.dot_general_bias_gelu %a, %b, %c, batching_dims = [] x [], contracting_dims = [1] x [0], approximation = erf
         : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>)
  return
}

// -----

func.func @dot_general_bias_gelu_c9(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %c: tensor<16xf32>) {
  // expected-error@+1 {{(C9) bias element type 'f32' differs from the operands' 'bf16'}}
  %0, %1 = graph.dot_general_bias_gelu %a, %b, %c, batching_dims = [] x [], contracting_dims = [1] x [0], approximation = tanh
         : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xf32>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>)
  return
}

// -----

func.func @dot_general_bias_gelu_c11(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %c: tensor<16xbf16>) {
  // expected-error@+1 {{(C11) tf32 rounds f32 operands, not 'bf16'}}
  %0, %1 = graph.dot_general_bias_gelu %a, %b, %c, batching_dims = [] x [], contracting_dims = [1] x [0], approximation = tanh {tf32}
         : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>)
  return
}

// -----

func.func @dot_general_bias_gelu_c12(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %c: tensor<16xbf16>) {
  // expected-error@+1 {{differs from the inferred type}}
  %0, %1 = graph.dot_general_bias_gelu %a, %b, %c, batching_dims = [] x [], contracting_dims = [1] x [0], approximation = tanh
         : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16>) -> (tensor<4x16xbf16>, tensor<4x16xf32>)
  return
}

// -----

// dot_general_gelu_grad checks dot_general's C1-C7 with the same messages.
func.func @dot_general_gelu_grad_c6(%a: tensor<4x8xbf16>, %b: tensor<9x16xbf16>, %p: tensor<4x16xbf16>) {
  // expected-error@+1 {{(C6) contracting dimension sizes differ: lhs dim 1 has 8, rhs dim 0 has 9}}
  %0 = graph.dot_general_gelu_grad %a, %b, %p, batching_dims = [] x [], contracting_dims = [1] x [0], approximation = tanh
         : (tensor<4x8xbf16>, tensor<9x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @dot_general_gelu_grad_c8(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %p: tensor<4x16xf32>) {
  // expected-error@+1 {{(C8) preactivation type 'tensor<4x16xf32>' is not the product's 'tensor<4x16xbf16>'}}
  %0 = graph.dot_general_gelu_grad %a, %b, %p, batching_dims = [] x [], contracting_dims = [1] x [0], approximation = tanh
         : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4x16xf32>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @dot_general_gelu_grad_c9(%a: tensor<4x8xf64>, %b: tensor<8x16xf64>, %p: tensor<4x16xf64>) {
  // expected-error@+1 {{(C9) tf32 rounds f32 operands, not 'f64'}}
  %0 = graph.dot_general_gelu_grad %a, %b, %p, batching_dims = [] x [], contracting_dims = [1] x [0], approximation = erf {tf32}
         : (tensor<4x8xf64>, tensor<8x16xf64>, tensor<4x16xf64>) -> tensor<4x16xf64>
  return
}

// -----

func.func @dot_general_gelu_grad_c10(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %p: tensor<4x16xf32>) {
  // expected-error@+1 {{differs from the inferred type}}
  %0 = graph.dot_general_gelu_grad %a, %b, %p, batching_dims = [] x [], contracting_dims = [1] x [0], approximation = erf
         : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<4x8xf32>
  return
}

// -----

// dot_general_bias_grad checks dot_general's C1-C10 with the same messages.
func.func @dot_general_bias_grad_c6(%dy: tensor<4x8xf32>, %x: tensor<5x16xf32>) {
  // expected-error@+1 {{(C6) contracting dimension sizes differ: lhs dim 0 has 4, rhs dim 0 has 5}}
  %0, %1 = graph.dot_general_bias_grad %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0]
         : (tensor<4x8xf32>, tensor<5x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @dot_general_bias_grad_c10(%dy: tensor<4x8xf32>, %x: tensor<4x16xf32>) {
  // expected-error@+1 {{(C10) f32_result widens bf16 or f16 products, not 'f32'}}
  %0, %1 = graph.dot_general_bias_grad %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0] {f32_result}
         : (tensor<4x8xf32>, tensor<4x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @dot_general_bias_grad_c11(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x16xf32>) {
  // expected-error@+1 {{(C11) the sum takes no batching dimensions, but there are 1}}
  %0, %1 = graph.dot_general_bias_grad %dy, %x, batching_dims = [0] x [0], contracting_dims = [1] x [1]
         : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @dot_general_bias_grad_c12(%dy: tensor<4x8xf32>, %x: tensor<4x16xf32>) {
  // expected-error@+1 {{(C12) f32_sum widens bf16 or f16 sums, not 'f32'}}
  %0, %1 = graph.dot_general_bias_grad %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0] {f32_sum}
         : (tensor<4x8xf32>, tensor<4x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @dot_general_bias_grad_c13(%dy: tensor<4x8xbf16>, %x: tensor<4x16xbf16>) {
  // expected-error@+1 {{result type 'tensor<8x16xbf16>', 'tensor<8xf32>' differs from the inferred type 'tensor<8x16xbf16>', 'tensor<8xbf16>'}}
  %0, %1 = graph.dot_general_bias_grad %dy, %x, batching_dims = [] x [], contracting_dims = [0] x [0]
         : (tensor<4x8xbf16>, tensor<4x16xbf16>) -> (tensor<8x16xbf16>, tensor<8xf32>)
  return
}

// -----

// With sum_rhs the sum is rhs's: its free dimensions, not lhs's.
func.func @dot_general_bias_grad_c13_rhs(%x: tensor<4x8xf32>, %dy: tensor<4x16xf32>) {
  // expected-error@+1 {{result type 'tensor<8x16xf32>', 'tensor<8xf32>' differs from the inferred type 'tensor<8x16xf32>', 'tensor<16xf32>'}}
  %0, %1 = graph.dot_general_bias_grad %x, %dy, batching_dims = [] x [], contracting_dims = [0] x [0] {sum_rhs}
         : (tensor<4x8xf32>, tensor<4x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @reduce_sum_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C1) reduced dimension 2 is out of range [0, 2)}}
  %0 = graph.reduce_sum %x, dims = [2] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_sum_c2(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C2) reduced dimension 1 is listed twice}}
  %0 = graph.reduce_sum %x, dims = [1, 1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_sum_c3(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result type 'tensor<8xf32>' differs from the inferred type 'tensor<4xf32>'}}
  %0 = graph.reduce_sum %x, dims = [1] : (tensor<4x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @reduce_sum_c3_widened(%x: tensor<4x8xbf16>, %y: tensor<4x8xf32>) {
  // A 16-bit sum may give f32, nothing else: not f64, not an f32 sum in
  // 16 bits, not a max.
  // expected-error@+1 {{result type 'tensor<4xf64>' differs from the inferred type 'tensor<4xbf16>'}}
  %0 = graph.reduce_sum %x, dims = [1] : (tensor<4x8xbf16>) -> tensor<4xf64>
  return
}

// -----

func.func @reduce_sum_c3_narrowed(%y: tensor<4x8xf32>) {
  // expected-error@+1 {{result type 'tensor<4xbf16>' differs from the inferred type 'tensor<4xf32>'}}
  %0 = graph.reduce_sum %y, dims = [1] : (tensor<4x8xf32>) -> tensor<4xbf16>
  return
}

// -----

func.func @reduce_prod_c3_widened(%x: tensor<4x8xbf16>) {
  // expected-error@+1 {{result type 'tensor<4xf32>' differs from the inferred type 'tensor<4xbf16>'}}
  %0 = graph.reduce_prod %x, dims = [1] : (tensor<4x8xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_max_c3_widened(%x: tensor<4x8xbf16>) {
  // expected-error@+1 {{result type 'tensor<4xf32>' differs from the inferred type 'tensor<4xbf16>'}}
  %0 = graph.reduce_max %x, dims = [1] : (tensor<4x8xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_max_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C1) reduced dimension 2 is out of range [0, 2)}}
  %0 = graph.reduce_max %x, dims = [2] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_max_c2(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C2) reduced dimension 1 is listed twice}}
  %0 = graph.reduce_max %x, dims = [1, 1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_max_c3(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result type 'tensor<8xf32>' differs from the inferred type 'tensor<4xf32>'}}
  %0 = graph.reduce_max %x, dims = [1] : (tensor<4x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @reduce_mean_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C1) reduced dimension 2 is out of range [0, 2)}}
  %0 = graph.reduce_mean %x, dims = [2] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_mean_c2(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C2) reduced dimension 1 is listed twice}}
  %0 = graph.reduce_mean %x, dims = [1, 1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_mean_c3(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result type 'tensor<8xf32>' differs from the inferred type 'tensor<4xf32>'}}
  %0 = graph.reduce_mean %x, dims = [1] : (tensor<4x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @reduce_mean_of_integers(%x: tensor<4x8xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of 64-bit float or 32-bit float}}
  %0 = graph.reduce_mean %x, dims = [1] : (tensor<4x8xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @broadcast_in_dim_c1(%x: tensor<8xf32>) {
  // expected-error@+1 {{(C1) dims has 2 entries but the operand has rank 1}}
  %0 = graph.broadcast_in_dim %x, dims = [0, 1] : (tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_in_dim_c2(%x: tensor<8xf32>) {
  // expected-error@+1 {{(C2) dims[0] = 2 is out of range [0, 2)}}
  %0 = graph.broadcast_in_dim %x, dims = [2] : (tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_in_dim_c3(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C3) dims must be strictly increasing, but dims[1] = 0 follows 1}}
  %0 = graph.broadcast_in_dim %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @broadcast_in_dim_c4(%x: tensor<3xf32>) {
  // expected-error@+1 {{(C4) operand dimension 0 has size 3, which is neither 1 nor 8 (the size of result dimension 1)}}
  %0 = graph.broadcast_in_dim %x, dims = [1] : (tensor<3xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_in_dim_c5(%x: tensor<8xf32>) {
  // expected-error@+1 {{(C5) operand element type 'f32' differs from result element type 'f16'}}
  %0 = graph.broadcast_in_dim %x, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf16>
  return
}

// -----

func.func @reshape_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C1) operand has 32 elements but the result has 30}}
  %0 = graph.reshape %x : (tensor<4x8xf32>) -> tensor<5x6xf32>
  return
}

// -----

func.func @reshape_c2(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C2) operand element type 'f32' differs from result element type 'i32'}}
  %0 = graph.reshape %x : (tensor<4x8xf32>) -> tensor<32xi32>
  return
}

// -----

func.func @transpose_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C1) permutation has 3 entries but the operand has rank 2}}
  %0 = graph.transpose %x, permutation = [1, 0, 2] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @transpose_c2(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C2) permutation dimension 1 is listed twice}}
  %0 = graph.transpose %x, permutation = [1, 1] : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @transpose_c2_range(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C2) permutation dimension -1 is out of range [0, 2)}}
  %0 = graph.transpose %x, permutation = [-1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @transpose_c3(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result type 'tensor<4x8xf32>' differs from the inferred type 'tensor<8x4xf32>'}}
  %0 = graph.transpose %x, permutation = [1, 0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C1) start, limit and strides have 1, 2 and 2 entries; the operand has rank 2}}
  %0 = graph.slice %x, start = [0], limit = [4, 8], strides = [1, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_c2(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C2) stride 0 in dimension 1 is not positive}}
  %0 = graph.slice %x, start = [0, 0], limit = [4, 8], strides = [1, 0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_c3(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C3) dimension 1 needs 0 <= start (2) <= limit (9) <= size (8)}}
  %0 = graph.slice %x, start = [0, 2], limit = [4, 9], strides = [1, 1] : (tensor<4x8xf32>) -> tensor<4x7xf32>
  return
}

// -----

func.func @slice_c3_reversed(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C3) dimension 0 needs 0 <= start (3) <= limit (1) <= size (4)}}
  %0 = graph.slice %x, start = [3, 0], limit = [1, 8], strides = [1, 1] : (tensor<4x8xf32>) -> tensor<0x8xf32>
  return
}

// -----

func.func @slice_c4(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result type 'tensor<4x3xf32>' differs from the inferred type 'tensor<4x4xf32>'}}
  %0 = graph.slice %x, start = [0, 1], limit = [4, 8], strides = [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concatenate_c1() {
  // expected-error@+1 {{(C1) needs at least one operand}}
  %0 = "graph.concatenate"() <{dim = 0 : i64}> : () -> tensor<4xf32>
  return
}

// -----

func.func @concatenate_c2(%a: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{(C2) operand 1 has rank 1 but operand 0 has rank 2}}
  %0 = graph.concatenate(%a, %b), dim = 0 : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @concatenate_c3(%a: tensor<4x8xf32>) {
  // expected-error@+1 {{(C3) dim 2 is out of range [0, 2)}}
  %0 = graph.concatenate(%a, %a), dim = 2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @concatenate_c4(%a: tensor<4x8xf32>, %b: tensor<4x8xf16>) {
  // expected-error@+1 {{(C4) operand 1 has element type 'f16' but operand 0 has 'f32'}}
  %0 = graph.concatenate(%a, %b), dim = 0 : (tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<8x8xf32>
  return
}

// -----

func.func @concatenate_c5(%a: tensor<4x8xf32>, %b: tensor<4x7xf32>) {
  // expected-error@+1 {{(C5) operand 1 has size 7 in dimension 1 but operand 0 has 8}}
  %0 = graph.concatenate(%a, %b), dim = 0 : (tensor<4x8xf32>, tensor<4x7xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @concatenate_c6(%a: tensor<4x8xf32>) {
  // expected-error@+1 {{result type 'tensor<4x8xf32>' differs from the inferred type 'tensor<8x8xf32>'}}
  %0 = graph.concatenate(%a, %a), dim = 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @gather_c1(%x: tensor<4x8xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{(C1) axis 2 is out of range [0, 2)}}
  %0 = graph.gather %x[%i], axis = 2 : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<4x8x3xf32>
  return
}

// -----

func.func @gather_c2(%x: tensor<4x8xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{result type 'tensor<3x4xf32>' differs from the inferred type 'tensor<3x8xf32>'}}
  %0 = graph.gather %x[%i], axis = 0 : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_c3(%x: tensor<4x8xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{(C3) padding_index 4 is out of range [0, 4)}}
  %0 = graph.gather %x[%i], axis = 0, padding_index = 4 : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  return
}

// -----

func.func @gather_c3_negative(%x: tensor<4x8xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{(C3) padding_index -1 is out of range [0, 4)}}
  %0 = graph.gather %x[%i], axis = 0, padding_index = -1 : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  return
}

// -----

func.func @gather_float_indices(%x: tensor<4x8xf32>, %i: tensor<3xf32>) {
  // expected-error@+1 {{operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values}}
  %0 = graph.gather %x[%i], axis = 0 : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<3x8xf32>
  return
}

// -----

func.func @iota_c1() {
  // expected-error@+1 {{(C1) result must have rank at least 1}}
  %0 = graph.iota dim = 0 : tensor<i64>
  return
}

// -----

func.func @iota_c2() {
  // expected-error@+1 {{(C2) dim 2 is out of range [0, 2)}}
  %0 = graph.iota dim = 2 : tensor<4x8xi64>
  return
}

// -----

func.func @constant_c1() {
  // expected-error@+1 {{all of {value, result} have same type}}
  %0 = "graph.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return
}

// -----

func.func @constant_c1_element_type() {
  // expected-error@+1 {{result #0 must be statically shaped tensor}}
  %0 = graph.constant dense<1> : tensor<2xi3>
  return
}

// -----

func.func @softmax_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C1) dim 2 is out of range [0, 2)}}
  %0 = graph.softmax %x, dim = 2 : tensor<4x8xf32>
  return
}

// -----

func.func @softmax_c2(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.softmax"(%x) <{dim = 1 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf16>
  return
}

// -----

func.func @gelu_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.gelu"(%x) <{approximation = 0 : i32}> : (tensor<4x8xf32>) -> tensor<4x8xf16>
  return
}

// -----

func.func @adamw_update_c1(%p: tensor<4x8xf32>, %g: tensor<8x4xf32>, %s: tensor<f32>) {
  // expected-error@+1 {{(C1) 'tensor<8x4xf32>' differs from parameter 0's type 'tensor<4x8xf32>'}}
  %0:3 = graph.adamw_update params(%p), grads(%g), exp_avgs(%p), exp_avg_sqs(%p), scalars(%s, %s, %s, %s), beta1 = 0.9, beta2 = 0.999, epsilon = 1.0e-8 : (tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @adamw_update_c2(%p: tensor<4x8xf32>, %s: tensor<f32>, %t: tensor<1xf32>) {
  // expected-error@+1 {{(C2) scalar operand 'tensor<1xf32>' is not a 0-d tensor of 'f32'}}
  %0:3 = graph.adamw_update params(%p), grads(%p), exp_avgs(%p), exp_avg_sqs(%p), scalars(%s, %s, %s, %t), beta1 = 0.9, beta2 = 0.999, epsilon = 1.0e-8 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<1xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @adamw_update_c3(%p: tensor<4x8xf32>, %s: tensor<f32>) {
  // expected-error@+1 {{(C3) betas must be in [0, 1) and epsilon finite and not negative (beta1 1.000000e+00, beta2 9.990000e-01, epsilon 1.000000e-08)}}
  %0:3 = graph.adamw_update params(%p), grads(%p), exp_avgs(%p), exp_avg_sqs(%p), scalars(%s, %s, %s, %s), beta1 = 1.0, beta2 = 0.999, epsilon = 1.0e-8 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @adamw_update_c2_params(%p: tensor<4x8xf32>, %q: tensor<8xf64>, %s: tensor<f32>) {
  // expected-error@+1 {{(C2) parameter 1 is of 'f64', the first of 'f32'}}
  %0:6 = graph.adamw_update params(%p, %q), grads(%p, %q), exp_avgs(%p, %q), exp_avg_sqs(%p, %q), scalars(%s, %s, %s, %s), beta1 = 0.9, beta2 = 0.999, epsilon = 1.0e-8 : (tensor<4x8xf32>, tensor<8xf64>, tensor<4x8xf32>, tensor<8xf64>, tensor<4x8xf32>, tensor<8xf64>, tensor<4x8xf32>, tensor<8xf64>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<8xf64>, tensor<4x8xf32>, tensor<8xf64>, tensor<4x8xf32>, tensor<8xf64>)
  return
}

// -----

func.func @adamw_update_c5(%p: tensor<4x8xf32>, %s: tensor<f32>) {
  // expected-error@+1 {{(C5) needs one gradient, first and second moment and three results per parameter (2 parameters, 1 gradients, 2 and 2 moments, 6 results)}}
  %0:6 = graph.adamw_update params(%p, %p), grads(%p), exp_avgs(%p, %p), exp_avg_sqs(%p, %p), scalars(%s, %s, %s, %s), beta1 = 0.9, beta2 = 0.999, epsilon = 1.0e-8 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @adamw_update_c5_results(%p: tensor<4x8xf32>, %s: tensor<f32>) {
  // expected-error@+1 {{(C5) needs one gradient, first and second moment and three results per parameter (1 parameters, 1 gradients, 1 and 1 moments, 2 results)}}
  %0:2 = graph.adamw_update params(%p), grads(%p), exp_avgs(%p), exp_avg_sqs(%p), scalars(%s, %s, %s, %s), beta1 = 0.9, beta2 = 0.999, epsilon = 1.0e-8 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @sum_of_squares_c1() {
  // expected-error@+1 {{(C1) needs at least one operand}}
  %0 = graph.sum_of_squares : () -> tensor<f64>
  return
}

// -----

func.func @sum_of_squares_c2(%g: tensor<4x8xf32>) {
  // expected-error@+1 {{(C2) the result must be a 0-d f64, not 'tensor<f32>'}}
  %0 = graph.sum_of_squares %g : (tensor<4x8xf32>) -> tensor<f32>
  return
}

// -----

func.func @sum_of_squares_c3(%g: tensor<4x8xf32>, %h: tensor<8xbf16>) {
  // expected-error@+1 {{(C3) operand of 'bf16' differs from the first's 'f32'}}
  %0 = graph.sum_of_squares %g, %h : (tensor<4x8xf32>, tensor<8xbf16>) -> tensor<f64>
  return
}

// -----

func.func @gelu_grad_c1(%x: tensor<4x8xf32>, %g: tensor<4x8xf16>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.gelu_grad"(%x, %g) <{approximation = 0 : i32}> : (tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @norm_grad_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C1) axis 2 is out of range [0, 2)}}
  %0:2 = graph.norm_grad %x, %x, axis = 2, epsilon = 1.0e-5, centered = true : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @norm_grad_c2(%x: tensor<4x8xf32>, %s: tensor<4xf32>) {
  // expected-error@+1 {{(C2) scale/bias type 'tensor<4xf32>' does not have the normalized shape [8] (input dimensions 1 and on)}}
  %0:2 = graph.norm_grad %x scale %s, %x, axis = 1, epsilon = 1.0e-5, centered = true : (tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @norm_grad_c3(%x: tensor<4x8xf32>, %s: tensor<8xbf16>) {
  // expected-error@+1 {{(C3) scale/bias element type 'bf16' differs from input element type 'f32'}}
  %0:2 = graph.norm_grad %x scale %s, %x, axis = 1, epsilon = 1.0e-5, centered = true : (tensor<4x8xf32>, tensor<8xbf16>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @norm_grad_c4(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C4) epsilon -1.000000e-05 must be finite and not negative}}
  %0:2 = graph.norm_grad %x, %x, axis = 1, epsilon = -1.0e-5, centered = true : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @norm_grad_c5(%x: tensor<4x8xf32>, %g: tensor<4x4xf32>) {
  // expected-error@+1 {{(C5) cotangent type 'tensor<4x4xf32>' differs from input type 'tensor<4x8xf32>'}}
  %0:2 = graph.norm_grad %x, %g, axis = 1, epsilon = 1.0e-5, centered = true : (tensor<4x8xf32>, tensor<4x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @norm_grad_c6(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result type 'tensor<4x8xf32>', 'tensor<4x8xf16>' differs from the inferred type 'tensor<4x8xf32>', 'tensor<4x8xf32>'}}
  %0:2 = graph.norm_grad %x, %x, axis = 1, epsilon = 1.0e-5, centered = true : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf16>)
  return
}

// -----

func.func @norm_grad_params_c2(%x: tensor<4x8xf32>, %s: tensor<4xf32>) {
  // expected-error@+1 {{(C2) scale/bias type 'tensor<4xf32>' does not have the normalized shape [8] (input dimensions 1 and on)}}
  %0:2 = graph.norm_grad_params %x scale %s, %x, axis = 1, epsilon = 1.0e-5, centered = true : (tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @norm_grad_params_c5(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %g: tensor<4x8xf64>) {
  // expected-error@+1 {{(C5) cotangent type 'tensor<4x8xf64>' differs from input type 'tensor<4x8xf32>'}}
  %0:2 = graph.norm_grad_params %x scale %s, %g, axis = 1, epsilon = 1.0e-5, centered = true : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf64>) -> (tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @norm_grad_params_c6(%x: tensor<4x8xbf16>, %s: tensor<8xbf16>) {
  // expected-error@+1 {{(C6) element type 'bf16' is not f32 or f64}}
  %0:2 = graph.norm_grad_params %x scale %s, %x, axis = 1, epsilon = 1.0e-5, centered = true : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<8xbf16>)
  return
}

// -----

// The bias's gradient is a result exactly when with_bias_grad is set.
func.func @norm_grad_params_c7(%x: tensor<4x8xf32>, %s: tensor<8xf32>) {
  // expected-error@+1 {{result type 'tensor<4x8xf32>', 'tensor<8xf32>' differs from the inferred type 'tensor<4x8xf32>', 'tensor<8xf32>', 'tensor<8xf32>'}}
  %0:2 = graph.norm_grad_params %x scale %s, %x, axis = 1, epsilon = 1.0e-5, centered = true {with_bias_grad} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @norm_grad_params_c8(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %a: tensor<4x8xf64>) {
  // expected-error@+1 {{(C8) addend type 'tensor<4x8xf64>' differs from input type 'tensor<4x8xf32>'}}
  %0:2 = graph.norm_grad_params %x scale %s, %x addend %a, axis = 1, epsilon = 1.0e-5, centered = true : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf64>) -> (tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @norm_grad_params_c9_type(%x: tensor<4x8xf32>, %s: tensor<8xf32>) {
  // expected-error@+1 {{(C9) narrowed_type 'f64' must be bf16 or f16, of an f32 input gradient, not of 'f32'}}
  %0:3 = graph.norm_grad_params %x scale %s, %x, axis = 1, epsilon = 1.0e-5, centered = true {narrowed_type = f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf64>)
  return
}

// -----

func.func @norm_grad_params_c9_f64(%x: tensor<4x8xf64>, %s: tensor<8xf64>) {
  // expected-error@+1 {{(C9) narrowed_type 'bf16' must be bf16 or f16, of an f32 input gradient, not of 'f64'}}
  %0:3 = graph.norm_grad_params %x scale %s, %x, axis = 1, epsilon = 1.0e-5, centered = true {narrowed_type = bf16} : (tensor<4x8xf64>, tensor<8xf64>, tensor<4x8xf64>) -> (tensor<4x8xf64>, tensor<8xf64>, tensor<4x8xbf16>)
  return
}

// -----

// The narrowed copy is a result exactly when narrowed_type is set, last.
func.func @norm_grad_params_c7_narrowed(%x: tensor<4x8xf32>, %s: tensor<8xf32>) {
  // expected-error@+1 {{result type 'tensor<4x8xf32>', 'tensor<8xf32>' differs from the inferred type 'tensor<4x8xf32>', 'tensor<8xf32>', 'tensor<4x8xbf16>'}}
  %0:2 = graph.norm_grad_params %x scale %s, %x, axis = 1, epsilon = 1.0e-5, centered = true {narrowed_type = bf16} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_c1(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{(C1) axis 2 is out of range [0, 2)}}
  %0 = graph.layer_norm %x scale %g, axis = 2, epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_c2(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>) {
  // expected-error@+1 {{(C2) scale/bias type 'tensor<4x8xf32>' does not have the normalized shape [8] (input dimensions 1 and on)}}
  %0 = graph.layer_norm %x scale %g, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_c3(%x: tensor<4x8xf32>, %g: tensor<8xbf16>) {
  // expected-error@+1 {{(C3) scale/bias element type 'bf16' differs from input element type 'f32'}}
  %0 = graph.layer_norm %x scale %g, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<8xbf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_c4(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C4) epsilon -1.000000e-05 must be finite and not negative}}
  %0 = graph.layer_norm %x, axis = 1, epsilon = -1.0e-5 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_c5(%x: tensor<4x8xf32>) {
  // An f32 norm may be narrowed to bf16 or f16, not widened.
  // expected-error@+1 {{result type 'tensor<4x8xf64>' differs from the inferred type 'tensor<4x8xf32>'}}
  %0 = graph.layer_norm %x, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>) -> tensor<4x8xf64>
  return
}

// -----

func.func @layer_norm_c5_narrow_16_bit(%x: tensor<4x8xbf16>) {
  // Only an f32 norm is narrowed.
  // expected-error@+1 {{result type 'tensor<4x8xf16>' differs from the inferred type 'tensor<4x8xbf16>'}}
  %0 = graph.layer_norm %x, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xbf16>) -> tensor<4x8xf16>
  return
}

// -----

func.func @rms_norm_c1(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{(C1) axis 2 is out of range [0, 2)}}
  %0 = graph.rms_norm %x scale %g, axis = 2, epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_c2(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>) {
  // expected-error@+1 {{(C2) scale/bias type 'tensor<4x8xf32>' does not have the normalized shape [8] (input dimensions 1 and on)}}
  %0 = graph.rms_norm %x scale %g, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_c3(%x: tensor<4x8xf32>, %g: tensor<8xbf16>) {
  // expected-error@+1 {{(C3) scale/bias element type 'bf16' differs from input element type 'f32'}}
  %0 = graph.rms_norm %x scale %g, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<8xbf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_c4(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{(C4) epsilon -1.000000e-05 must be finite and not negative}}
  %0 = graph.rms_norm %x, axis = 1, epsilon = -1.0e-5 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_c5(%x: tensor<4x8xf32>) {
  // An f32 norm may be narrowed to bf16 or f16, not widened.
  // expected-error@+1 {{result type 'tensor<4x8xf64>' differs from the inferred type 'tensor<4x8xf32>'}}
  %0 = graph.rms_norm %x, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>) -> tensor<4x8xf64>
  return
}

// -----

func.func @rms_norm_c5_narrow_16_bit(%x: tensor<4x8xbf16>) {
  // Only an f32 norm is narrowed.
  // expected-error@+1 {{result type 'tensor<4x8xf16>' differs from the inferred type 'tensor<4x8xbf16>'}}
  %0 = graph.rms_norm %x, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xbf16>) -> tensor<4x8xf16>
  return
}

// -----

func.func @layer_norm_c2_bias(%x: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{(C2) scale/bias type 'tensor<4xf32>' does not have the normalized shape [8]}}
  %0 = graph.layer_norm %x bias %b, axis = 1, epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @attention_c1(%q: tensor<2x8x16xf32>) {
  // expected-error@+1 {{(C1) query, key and value must have rank 4 [batch, heads, seq, head_dim]; got ranks 3, 3, 3}}
  %0 = graph.attention %q, %q, %q, scale = 0.25 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @attention_c2(%q: tensor<2x4x8x16xf32>, %k: tensor<3x4x8x16xf32>) {
  // expected-error@+1 {{(C2) batch sizes differ: query 2, key 3, value 3}}
  %0 = graph.attention %q, %k, %k, scale = 0.25 : (tensor<2x4x8x16xf32>, tensor<3x4x8x16xf32>, tensor<3x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c3(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x32xf32>) {
  // expected-error@+1 {{(C3) query head dimension 16 differs from key head dimension 32}}
  %0 = graph.attention %q, %k, %k, scale = 0.25 : (tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x32xf32>) -> tensor<2x4x8x32xf32>
  return
}

// -----

func.func @attention_c4(%q: tensor<2x4x8x16xf32>, %v: tensor<2x4x9x16xf32>) {
  // expected-error@+1 {{(C4) key has 4 heads and sequence 8 but value has 4 heads and sequence 9}}
  %0 = graph.attention %q, %q, %v, scale = 0.25 : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x9x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c5(%q: tensor<2x4x8x16xf32>, %k: tensor<2x3x8x16xf32>) {
  // expected-error@+1 {{(C5) query heads (4) must be a multiple of key heads (3)}}
  %0 = graph.attention %q, %k, %k, scale = 0.25 : (tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c6(%q: tensor<2x4x8x16xf32>, %m: tensor<2x1x8x7xf32>) {
  // expected-error@+1 {{(C6) mask dimension 3 has size 7, which is neither 1 nor 8 (scores are [2, 4, 8, 8])}}
  %0 = graph.attention %q, %q, %q mask %m, scale = 0.25 : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x8x7xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c6_rank(%q: tensor<2x4x8x16xf32>, %m: tensor<8x8xf32>) {
  // expected-error@+1 {{(C6) mask must have rank 4, got 2}}
  %0 = graph.attention %q, %q, %q mask %m, scale = 0.25 : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c7(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xbf16>) {
  // expected-error@+1 {{(C7) operand element types differ: query has 'f32', another operand has 'bf16'}}
  %0 = graph.attention %q, %k, %k, scale = 0.25 : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c8(%q: tensor<2x4x8x16xf32>) {
  // expected-error@+1 {{(C8) scale must be finite, got INF}}
  %0 = graph.attention %q, %q, %q, scale = 0x7FF0000000000000 : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c2_layout(%q: tensor<2x8x4x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<3x8x4x16xf32>) {
  // Read through seq_major, q is [B, H, S, D] = [2, 4, 8, 16] and v, stored
  // [B, S, H, D] = [3, ...] has another batch.
  // expected-error@+1 {{(C2) batch sizes differ: query 2, key 2, value 3}}
  %0 = graph.attention %q, %k, %v, scale = 0.25 {seq_major = array<i64: 0, 2>} : (tensor<2x8x4x16xf32>, tensor<2x4x8x16xf32>, tensor<3x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c11_entries(%qkv: tensor<2x8x12x16xf32>) {
  // expected-error@+1 {{(C11) qkv_heads must be [query heads, key heads], each at least 1}}
  %0 = graph.attention %qkv, %qkv, %qkv, scale = 0.25 {qkv_heads = array<i64: 12, 0>, seq_major = array<i64: 0, 1, 2, 3>} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>) -> tensor<2x8x12x16xf32>
  return
}

// -----

func.func @attention_c11_layout(%qkv: tensor<2x8x12x16xf32>) {
  // expected-error@+1 {{(C11) qkv_heads needs query, key and value stored sequence-major (seq_major 0, 1 and 2)}}
  %0 = graph.attention %qkv, %qkv, %qkv, scale = 0.25 {qkv_heads = array<i64: 4, 4>, seq_major = array<i64: 0, 2, 3>} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>) -> tensor<2x8x4x16xf32>
  return
}

// -----

func.func @attention_c11_heads(%qkv: tensor<2x8x12x16xf32>) {
  // expected-error@+1 {{(C11) qkv_heads = [4, 2] reads 8 heads, but operand 0 is 'tensor<2x8x12x16xf32>'}}
  %0 = graph.attention %qkv, %qkv, %qkv, scale = 0.25 {qkv_heads = array<i64: 4, 2>, seq_major = array<i64: 0, 1, 2, 3>} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>) -> tensor<2x8x4x16xf32>
  return
}

// -----

func.func @attention_c9_qkv_heads(%qkv: tensor<2x8x12x16xf32>) {
  // Under qkv_heads = [4, 4] the query is 4 of the 12 stored heads.
  // expected-error@+1 {{result type 'tensor<2x8x12x16xf32>' differs from the inferred type 'tensor<2x8x4x16xf32>'}}
  %0 = graph.attention %qkv, %qkv, %qkv, scale = 0.25 {qkv_heads = array<i64: 4, 4>, seq_major = array<i64: 0, 1, 2, 3>} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>) -> tensor<2x8x12x16xf32>
  return
}

// -----

func.func @attention_c9(%q: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x32xf32>) {
  // expected-error@+1 {{result type 'tensor<2x4x8x16xf32>' differs from the inferred type 'tensor<2x4x8x32xf32>'}}
  %0 = graph.attention %q, %q, %v, scale = 0.25 : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @softmax_cross_entropy_c1(%l: tensor<f32>, %t: tensor<i64>) {
  // expected-error@+1 {{(C1) logits must have rank at least 1 (classes are the last dimension)}}
  %0 = graph.softmax_cross_entropy %l, %t, reduction = mean : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @softmax_cross_entropy_c2(%l: tensor<8x32x128xf32>, %t: tensor<8x128xi64>) {
  // expected-error@+1 {{(C2) targets 'tensor<8x128xi64>' must have the logits' shape without the class dimension (logits are 'tensor<8x32x128xf32>')}}
  %0 = graph.softmax_cross_entropy %l, %t, reduction = mean : (tensor<8x32x128xf32>, tensor<8x128xi64>) -> tensor<f32>
  return
}

// -----

func.func @softmax_cross_entropy_c3(%l: tensor<8x32x128xf32>, %t: tensor<8x32xi64>) {
  // expected-error@+1 {{result type 'tensor<f32>' differs from the inferred type 'tensor<8x32xf32>'}}
  %0 = graph.softmax_cross_entropy %l, %t, reduction = none : (tensor<8x32x128xf32>, tensor<8x32xi64>) -> tensor<f32>
  return
}

// -----

func.func @softmax_cross_entropy_c4(%l: tensor<8x128xf32>, %t: tensor<8xi64>) {
  // expected-error@+1 {{(C4) classes 129 is not in [1, 128]}}
  %0 = graph.softmax_cross_entropy %l, %t, reduction = mean {classes = 129} : (tensor<8x128xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @softmax_cross_entropy_c4_zero(%l: tensor<8x128xf32>, %t: tensor<8xi64>) {
  // expected-error@+1 {{(C4) classes 0 is not in [1, 128]}}
  %0 = graph.softmax_cross_entropy %l, %t, reduction = mean {classes = 0} : (tensor<8x128xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @softmax_cross_entropy_float_targets(%l: tensor<8x128xf32>, %t: tensor<8xf32>) {
  // expected-error@+1 {{operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values}}
  %0 = graph.softmax_cross_entropy %l, %t, reduction = mean : (tensor<8x128xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

// softmax_cross_entropy_and_grad's C1 and C2 (targets) are checked with
// softmax_cross_entropy's messages.
func.func @softmax_cross_entropy_and_grad_c1(%l: tensor<f32>, %t: tensor<i64>, %w: tensor<f32>) {
  // expected-error@+1 {{(C1) logits must have rank at least 1 (classes are the last dimension)}}
  %0, %1 = graph.softmax_cross_entropy_and_grad %l, %t, %w, reduction = mean : (tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func @softmax_cross_entropy_and_grad_c2(%l: tensor<8x32x128xf32>, %t: tensor<8x128xi64>, %w: tensor<8x32xf32>) {
  // expected-error@+1 {{(C2) targets 'tensor<8x128xi64>' must have the logits' shape without the class dimension (logits are 'tensor<8x32x128xf32>')}}
  %0, %1 = graph.softmax_cross_entropy_and_grad %l, %t, %w, reduction = mean : (tensor<8x32x128xf32>, tensor<8x128xi64>, tensor<8x32xf32>) -> (tensor<f32>, tensor<8x32x128xf32>)
  return
}

// -----

func.func @softmax_cross_entropy_and_grad_c2_weight(%l: tensor<8x32x128xf32>, %t: tensor<8x32xi64>, %w: tensor<8xf32>) {
  // expected-error@+1 {{(C2) weight must have the logits' shape without its last dimension}}
  %0, %1 = graph.softmax_cross_entropy_and_grad %l, %t, %w, reduction = mean : (tensor<8x32x128xf32>, tensor<8x32xi64>, tensor<8xf32>) -> (tensor<f32>, tensor<8x32x128xf32>)
  return
}

// -----

func.func @softmax_cross_entropy_and_grad_c3(%l: tensor<8x32x128xf32>, %t: tensor<8x32xi64>, %w: tensor<8x32xf32>) {
  // expected-error@+1 {{(C3) loss type 'tensor<f32>' differs from softmax_cross_entropy's 'tensor<8x32xf32>'}}
  %0, %1 = graph.softmax_cross_entropy_and_grad %l, %t, %w, reduction = none : (tensor<8x32x128xf32>, tensor<8x32xi64>, tensor<8x32xf32>) -> (tensor<f32>, tensor<8x32x128xf32>)
  return
}

// -----

// An f32 loss is the widened one of 16-bit logits only.
func.func @softmax_cross_entropy_and_grad_c3_widened(%l: tensor<8x128xf32>, %t: tensor<8xi64>, %w: tensor<8xf32>) {
  // expected-error@+1 {{(C3) loss type 'tensor<f64>' differs from softmax_cross_entropy's 'tensor<f32>'}}
  %0, %1 = graph.softmax_cross_entropy_and_grad %l, %t, %w, reduction = sum : (tensor<8x128xf32>, tensor<8xi64>, tensor<8xf32>) -> (tensor<f64>, tensor<8x128xf32>)
  return
}

// -----

func.func @softmax_cross_entropy_and_grad_c4(%l: tensor<8x128xbf16>, %t: tensor<8xi64>, %w: tensor<8xf32>) {
  // expected-error@+1 {{(C4) grad must have the logits' type}}
  %0, %1 = graph.softmax_cross_entropy_and_grad %l, %t, %w, reduction = mean : (tensor<8x128xbf16>, tensor<8xi64>, tensor<8xf32>) -> (tensor<f32>, tensor<8x128xf32>)
  return
}

// -----

func.func @softmax_cross_entropy_and_grad_c5(%l: tensor<8x128xf32>, %t: tensor<8xi64>, %w: tensor<8xf32>) {
  // expected-error@+1 {{(C5) classes 129 is not in [1, 128]}}
  %0, %1 = graph.softmax_cross_entropy_and_grad %l, %t, %w, reduction = mean {classes = 129} : (tensor<8x128xf32>, tensor<8xi64>, tensor<8xf32>) -> (tensor<f32>, tensor<8x128xf32>)
  return
}

// -----

func.func @dropout_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C1) ratio 1.000000e+00 is not in [0, 1)}}
  %y, %m = graph.dropout %x, ratio = 1.0, seed = 0 : tensor<4xf32>
  return
}

// -----

func.func @dropout_c2(%x: tensor<4xf32>) {
  // expected-error@+1 {{all of {operand, result} have same type}}
  %y, %m = "graph.dropout"(%x) <{ratio = 0.5 : f64, seed = 0 : i64}> : (tensor<4xf32>) -> (tensor<4xf16>, tensor<4xi1>)
  return
}

// -----

func.func @dropout_c3_without_dropout(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C3) blocks must be 1 without dropout, got 2}}
  %y, %m = graph.dropout %x, ratio = 0.0, seed = 0 {blocks = 2} : tensor<4xf32>
  return
}

// -----

module attributes {graph.mesh = {tensor = 2 : i64}} {
  func.func @dropout_c3_mesh(%x: tensor<4xf32>) {
    // expected-error@+1 {{(C3) blocks 4 must be the size of the mesh's tensor axis (2)}}
    %y, %m = graph.dropout %x, ratio = 0.1, seed = 0 {blocks = 4} : tensor<4xf32>
    return
  }
}

// -----

module attributes {graph.mesh = {tensor = 2 : i64}} {
  func.func @dropout_c3_dim(%x: tensor<4x2xf32>) {
    // expected-error@+1 {{(C3) block_dim 2 is not a dimension of the rank-2 operand}}
    %y, %m = graph.dropout %x, ratio = 0.1, seed = 0 {blocks = 2, block_dim = 2} : tensor<4x2xf32>
    return
  }
}

// -----

// expected-error@+1 {{'graph.input' on argument 0 must be a non-empty string}}
func.func @input_empty_name(%x: tensor<4xf32> {graph.input = ""}) {
  return
}

// -----

// expected-error@+1 {{unknown graph argument attribute 'graph.trainable' on argument 0}}
func.func @unknown_arg_attr(%w: tensor<4xf32> {graph.trainable}) {
  return
}

// -----

// expected-error@+1 {{'graph.output' on result 0 must be a non-empty string}}
func.func @output_not_a_string(%x: tensor<4xf32>) -> (tensor<4xf32> {graph.output = 1 : i64}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{unknown graph result attribute 'graph.loss' on result 0}}
func.func @unknown_result_attr(%x: tensor<4xf32>) -> (tensor<4xf32> {graph.loss}) {
  return %x : tensor<4xf32>
}

// -----

func.func @scatter_add_c1(%u: tensor<3x8xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{(C1) axis 2 is out of range [0, 2)}}
  %0 = graph.scatter_add %u[%i], axis = 2 : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<16x8xf32>
  return
}

// -----

func.func @scatter_add_c2(%u: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{(C2) updates 'tensor<3x4xf32>' must have shape result.shape[:axis] + indices.shape + result.shape[axis+1:]}}
  %0 = graph.scatter_add %u[%i], axis = 0 : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<16x8xf32>
  return
}

// -----

func.func @scatter_add_c3(%u: tensor<3x8xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{(C3) updates element type 'f32' differs from result element type 'bf16'}}
  %0 = graph.scatter_add %u[%i], axis = 0 : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<16x8xbf16>
  return
}

// -----

func.func @extract_patches_c1(%x: tensor<2x4xf32>) {
  // expected-error@+1 {{(C1) the operand needs rank 3 to 5 ([N, C, spatial...]), not 2}}
  %0 = graph.extract_patches %x, kernel = [], strides = [], dilation = [], pad_low = [], pad_high = [] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @extract_patches_c2(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+1 {{(C2) strides has 1 entries for 2 spatial dimensions}}
  %0 = graph.extract_patches %x, kernel = [3, 3], strides = [1], dilation = [1, 1], pad_low = [0, 0], pad_high = [0, 0] : (tensor<2x4x8x8xf32>) -> tensor<4x3x3x2x6x6xf32>
  return
}

// -----

func.func @extract_patches_c3(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+1 {{(C3) spatial dimension 1 needs kernel, strides and dilation in [1, 2^31) and paddings in [0, 2^31)}}
  %0 = graph.extract_patches %x, kernel = [3, 3], strides = [1, 1], dilation = [1, 1], pad_low = [0, -1], pad_high = [0, 0] : (tensor<2x4x8x8xf32>) -> tensor<4x3x3x2x6x5xf32>
  return
}

// -----

func.func @extract_patches_c4(%x: tensor<2x4x8x2xf32>) {
  // expected-error@+1 {{(C4) the window of spatial dimension 1 does not fit its 2 padded elements}}
  %0 = graph.extract_patches %x, kernel = [3, 3], strides = [1, 1], dilation = [1, 1], pad_low = [0, 0], pad_high = [0, 0] : (tensor<2x4x8x2xf32>) -> tensor<4x3x3x2x6x1xf32>
  return
}

// -----

func.func @extract_patches_c5(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+1 {{result type 'tensor<4x3x3x2x8x8xf32>' differs from the inferred type 'tensor<4x3x3x2x4x4xf32>'}}
  %0 = graph.extract_patches %x, kernel = [3, 3], strides = [2, 2], dilation = [1, 1], pad_low = [1, 1], pad_high = [1, 1] : (tensor<2x4x8x8xf32>) -> tensor<4x3x3x2x8x8xf32>
  return
}

// -----

func.func @fold_patches_c1(%p: tensor<4x3x3x2x6x6xf32>) {
  // expected-error@+1 {{(C1) 1 spatial sizes (1 to 3) need an operand of rank 4, not 6}}
  %0 = graph.fold_patches %p, kernel = [3], strides = [1], dilation = [1], pad_low = [0], pad_high = [0], spatial = [8] : (tensor<4x3x3x2x6x6xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @fold_patches_c2(%p: tensor<4x3x3x2x6x6xf32>) {
  // expected-error@+1 {{(C2) dilation has 1 entries for 2 spatial dimensions}}
  %0 = graph.fold_patches %p, kernel = [3, 3], strides = [1, 1], dilation = [1], pad_low = [0, 0], pad_high = [0, 0], spatial = [8, 8] : (tensor<4x3x3x2x6x6xf32>) -> tensor<2x4x8x8xf32>
  return
}

// -----

func.func @fold_patches_c3(%p: tensor<4x3x3x2x6x6xf32>) {
  // expected-error@+1 {{(C3) spatial size -8 is outside [0, 2^31)}}
  %0 = graph.fold_patches %p, kernel = [3, 3], strides = [1, 1], dilation = [1, 1], pad_low = [0, 0], pad_high = [0, 0], spatial = [8, -8] : (tensor<4x3x3x2x6x6xf32>) -> tensor<2x4x8x8xf32>
  return
}

// -----

func.func @fold_patches_c4(%p: tensor<4x3x3x2x6x6xf32>) {
  // expected-error@+1 {{(C4) spatial dimension 1 of 9 elements has kernel 3 and 7 window positions, but the operand has 3 and 6}}
  %0 = graph.fold_patches %p, kernel = [3, 3], strides = [1, 1], dilation = [1, 1], pad_low = [0, 0], pad_high = [0, 0], spatial = [8, 9] : (tensor<4x3x3x2x6x6xf32>) -> tensor<2x4x8x9xf32>
  return
}

// -----

func.func @extract_patches_c3_limit(%x: tensor<1x1x5xf32>) {
  // expected-error@+1 {{(C3) spatial dimension 0 needs kernel, strides and dilation in [1, 2^31) and paddings in [0, 2^31)}}
  %0 = graph.extract_patches %x, kernel = [4611686018427387904], strides = [1], dilation = [4], pad_low = [0], pad_high = [0] : (tensor<1x1x5xf32>) -> tensor<1x4611686018427387904x1x9xf32>
  return
}

// -----

func.func @fold_patches_c4_empty(%p: tensor<2x5x1x0xf32>) {
  // expected-error@+1 {{(C4) the window of spatial dimension 0 does not fit its 3 padded elements}}
  %0 = graph.fold_patches %p, kernel = [5], strides = [1], dilation = [1], pad_low = [0], pad_high = [0], spatial = [3] : (tensor<2x5x1x0xf32>) -> tensor<1x2x3xf32>
  return
}

// -----

func.func @fold_patches_c5(%p: tensor<4x3x3x2x6x6xf32>) {
  // expected-error@+1 {{result type 'tensor<4x2x8x8xf32>' differs from the inferred type 'tensor<2x4x8x8xf32>'}}
  %0 = graph.fold_patches %p, kernel = [3, 3], strides = [1, 1], dilation = [1, 1], pad_low = [0, 0], pad_high = [0, 0], spatial = [8, 8] : (tensor<4x3x3x2x6x6xf32>) -> tensor<4x2x8x8xf32>
  return
}

// -----

func.func @fold_patches_float(%p: tensor<4x3x3x2x6x6xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = graph.fold_patches %p, kernel = [3, 3], strides = [1, 1], dilation = [1, 1], pad_low = [0, 0], pad_high = [0, 0], spatial = [8, 8] : (tensor<4x3x3x2x6x6xi32>) -> tensor<2x4x8x8xi32>
  return
}

// -----

func.func @argsort_c1(%x: tensor<3x8xf32>) {
  // expected-error@+1 {{(C1) axis 2 is out of range [0, 2)}}
  %0 = graph.argsort %x, axis = 2, descending = false : (tensor<3x8xf32>) -> tensor<3x8xi64>
  return
}

// -----

func.func @argsort_c2_shape(%x: tensor<3x8xf32>) {
  // expected-error@+1 {{(C2) result 'tensor<3x4xi64>' must be i64 of the shape of the operand 'tensor<3x8xf32>'}}
  %0 = graph.argsort %x, axis = 1, descending = false : (tensor<3x8xf32>) -> tensor<3x4xi64>
  return
}

// -----

func.func @argsort_c2_type(%x: tensor<3x8xf32>) {
  // expected-error@+1 {{(C2) result 'tensor<3x8xi32>' must be i64 of the shape of the operand 'tensor<3x8xf32>'}}
  %0 = graph.argsort %x, axis = 1, descending = true : (tensor<3x8xf32>) -> tensor<3x8xi32>
  return
}

// -----

func.func @softmax_cross_entropy_grad_c1(%x: tensor<f32>, %t: tensor<i64>) {
  // expected-error@+1 {{(C1) logits must have rank at least 1}}
  %0 = graph.softmax_cross_entropy_grad %x, %t, %x : (tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @softmax_cross_entropy_grad_c2(%x: tensor<4x8xf32>, %t: tensor<4xi64>, %w: tensor<8xf32>) {
  // expected-error@+1 {{(C2) targets and weight must have the logits' shape without its last dimension}}
  %0 = graph.softmax_cross_entropy_grad %x, %t, %w : (tensor<4x8xf32>, tensor<4xi64>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_cross_entropy_grad_c3(%x: tensor<4x8xf32>, %t: tensor<4xi64>, %w: tensor<4xf32>) {
  // expected-error@+1 {{(C3) the result must have the logits' type}}
  %0 = graph.softmax_cross_entropy_grad %x, %t, %w : (tensor<4x8xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x8xbf16>
  return
}

// -----

func.func @softmax_cross_entropy_grad_c4(%x: tensor<4x8xf32>, %t: tensor<4xi64>, %w: tensor<4xf32>) {
  // expected-error@+1 {{(C4) classes 9 is not in [1, 8]}}
  %0 = graph.softmax_cross_entropy_grad %x, %t, %w {classes = 9} : (tensor<4x8xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @attention_c9_layout(%q: tensor<2x4x8x16xf32>) {
  // The result is listed as [B, S, H, D]: [2, 8, 4, 16], not [2, 4, 8, 16].
  // expected-error@+1 {{differs from the inferred type}}
  %0 = graph.attention %q, %q, %q, scale = 0.25 {seq_major = array<i64: 3>} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c10(%q: tensor<2x4x8x16xf32>) {
  // expected-error@+1 {{(C10) seq_major must list tensor numbers in [0, 4) in increasing order; got 2 after 2}}
  %0 = graph.attention %q, %q, %q, scale = 0.25 {seq_major = array<i64: 2, 2>} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_grad_c1_rank(%q: tensor<2x4x8xf32>) {
  // expected-error@+1 {{(C1) query, key, value and the cotangent must have rank 4}}
  %0:3 = graph.attention_grad %q, %q, %q, %q, scale = 0.5 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c1_shapes(%q: tensor<1x2x4x8xf32>, %g: tensor<1x2x4x6xf32>) {
  // expected-error@+1 {{(C1) the shapes are not attention's}}
  %0:3 = graph.attention_grad %q, %q, %q, %g, scale = 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x6xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c1_mask(%q: tensor<1x2x4x8xf32>, %m: tensor<1x1x4x3xf32>) {
  // expected-error@+1 {{(C1) the mask 'tensor<1x1x4x3xf32>' does not broadcast to the scores}}
  %0:3 = graph.attention_grad %q, %q, %q, %q mask %m, scale = 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x3xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c2_operands(%q: tensor<1x2x4x8xf32>, %g: tensor<1x2x4x8xbf16>) {
  // expected-error@+1 {{(C2) all operands must have one element type}}
  %0:3 = graph.attention_grad %q, %q, %q, %g, scale = 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xbf16>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c2_results(%q: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{(C2) the results must have the shapes and element type of query, key and value}}
  %0:3 = graph.attention_grad %q, %q, %q, %q, scale = 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c2_results_layout(%q: tensor<1x2x4x8xf32>) {
  // The query gradient is stored [B, S, H, D] but is not listed.
  // expected-error@+1 {{(C2) the results must have the shapes and element type of query, key and value}}
  %0:3 = graph.attention_grad %q, %q, %q, %q, scale = 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c1_layout(%q: tensor<1x4x2x8xf32>, %k: tensor<1x2x4x8xf32>) {
  // q is [B, S, H, D] = [1, 4, 2, 8] but not listed: 4 query heads against
  // sequence 4 keys of 2 heads reads as Sq = 2, which g [1, 2, 4, 8] is not.
  // expected-error@+1 {{(C1) the shapes are not attention's}}
  %0:3 = graph.attention_grad %q, %k, %k, %k, scale = 0.5 {seq_major = array<i64: 4>} : (tensor<1x4x2x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c3(%q: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{(C3) scale must be finite}}
  %0:3 = graph.attention_grad %q, %q, %q, %q, scale = 0x7FF0000000000000 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c4_range(%q: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{(C4) seq_major must list tensor numbers in [0, 7) in increasing order; got 7 after 6}}
  %0:3 = graph.attention_grad %q, %q, %q, %q, scale = 0.5 {seq_major = array<i64: 6, 7>} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c4_order(%q: tensor<1x2x2x8xf32>) {
  // expected-error@+1 {{(C4) seq_major must list tensor numbers in [0, 7) in increasing order; got 0 after 1}}
  %0:3 = graph.attention_grad %q, %q, %q, %q, scale = 0.5 {seq_major = array<i64: 1, 0>} : (tensor<1x2x2x8xf32>, tensor<1x2x2x8xf32>, tensor<1x2x2x8xf32>, tensor<1x2x2x8xf32>) -> (tensor<1x2x2x8xf32>, tensor<1x2x2x8xf32>, tensor<1x2x2x8xf32>)
  return
}

// -----

func.func @attention_grad_c5(%qkv: tensor<1x4x6x8xf32>, %g: tensor<1x4x2x8xf32>) {
  // expected-error@+1 {{(C5) qkv_heads = [2, 1] reads 4 heads, but operand 0 is 'tensor<1x4x6x8xf32>'}}
  %0:3 = graph.attention_grad %qkv, %qkv, %qkv, %g, scale = 0.25 {qkv_heads = array<i64: 2, 1>, seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>} : (tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x2x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>)
  return
}

// -----

func.func @attention_grad_c6_count(%q: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{(C6) expects three results (the gradients of query, key and value) or one (the fused projection's); got 2}}
  %0:2 = graph.attention_grad %q, %q, %q, %q, scale = 0.25 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c6_unpacked(%q: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{(C6) one result, the fused projection's gradient, needs qkv_heads and seq_major 4, 5 and 6}}
  %0 = graph.attention_grad %q, %q, %q, %q, scale = 0.25 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @attention_grad_c6_type(%qkv: tensor<1x4x6x8xf32>, %g: tensor<1x4x2x8xf32>) {
  // expected-error@+1 {{(C6) the fused projection's gradient 'tensor<1x4x6x8xbf16>' must have the projection's type 'tensor<1x4x6x8xf32>'}}
  %0 = graph.attention_grad %qkv, %qkv, %qkv, %g, scale = 0.25 {qkv_heads = array<i64: 2, 2>, seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>} : (tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x2x8xf32>) -> tensor<1x4x6x8xbf16>
  return
}

// -----

func.func @attention_c12_missing(%q: tensor<2x4x8x16xf32>) {
  // with_lse adds the log-sum-exps [B, Hq, Sq] as a second result.
  // expected-error@+1 {{differs from the inferred type}}
  %0 = graph.attention %q, %q, %q, scale = 0.25 {with_lse} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c12_type(%q: tensor<2x4x8x16xbf16>) {
  // The log-sum-exps of 16-bit attention are f32.
  // expected-error@+1 {{differs from the inferred type}}
  %0:2 = graph.attention %q, %q, %q, scale = 0.25 {with_lse} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> (tensor<2x4x8x16xbf16>, tensor<2x4x8xbf16>)
  return
}

// -----

func.func @attention_c12_unasked(%q: tensor<2x4x8x16xf32>) {
  // expected-error@+1 {{differs from the inferred type}}
  %0:2 = graph.attention %q, %q, %q, scale = 0.25 : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_c13_zero(%q: tensor<2x4x8x16xf32>) {
  // expected-error@+1 {{(C13) softcap must be finite and positive, got 0}}
  %0 = graph.attention %q, %q, %q, scale = 0.25 {softcap = 0.0} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c13_inf(%q: tensor<2x4x8x16xf32>) {
  // expected-error@+1 {{(C13) softcap must be finite and positive, got INF}}
  %0 = graph.attention %q, %q, %q, scale = 0.25, causal {softcap = 0x7FF0000000000000 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c14(%q: tensor<2x4x8x16xf32>) {
  // expected-error@+1 {{(C14) dropout must be in [0, 1), got 1}}
  %0 = graph.attention %q, %q, %q, scale = 0.25 {dropout = 1.0, seed = 3} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c15_without_dropout(%q: tensor<2x4x8x16xf32>) {
  // expected-error@+1 {{(C15) head_blocks must be 1 without dropout, got 2}}
  %0 = graph.attention %q, %q, %q, scale = 0.25 {head_blocks = 2} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c15_ratio_zero(%q: tensor<2x4x8x16xf32>) {
  // expected-error@+1 {{(C15) head_blocks must be 1 without dropout, got 2}}
  %0 = graph.attention %q, %q, %q, scale = 0.25 {dropout = 0.0, head_blocks = 2} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_c15_zero(%q: tensor<2x4x8x16xf32>) {
  // expected-error@+1 {{(C15) head_blocks must be 1, got 0}}
  %0 = graph.attention %q, %q, %q, scale = 0.25 {dropout = 0.1, head_blocks = 0} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

module attributes {graph.mesh = {tensor = 4 : i64}} {
  func.func @attention_c15_mesh(%q: tensor<2x4x8x16xf32>) {
    // expected-error@+1 {{(C15) head_blocks 2 must be the size of the mesh's tensor axis (4)}}
    %0 = graph.attention %q, %q, %q, scale = 0.25 {dropout = 0.1, head_blocks = 2} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
    return
  }
}

// -----

func.func @attention_grad_c10(%q: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{(C10) head_blocks 2 must be the size of the mesh's tensor axis (1)}}
  %0:3 = graph.attention_grad %q, %q, %q, %q, scale = 0.5 {dropout = 0.1, head_blocks = 2} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c9(%q: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{(C9) dropout must be in [0, 1), got -1.000000e-01}}
  %0:3 = graph.attention_grad %q, %q, %q, %q, scale = 0.5 {dropout = -0.1} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c8_negative(%q: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{(C8) softcap must be finite and positive, got -3.000000e+01}}
  %0:3 = graph.attention_grad %q, %q, %q, %q, scale = 0.5 {softcap = -30.0} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c7_count(%q: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{(C7) stats must be the forward's result, of the cotangent's type 'tensor<1x2x4x8xf32>', and its log-sum-exps 'tensor<1x2x4xf32>'; got 1 operands}}
  %0:3 = graph.attention_grad %q, %q, %q, %q stats(%q), scale = 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c7_lse(%q: tensor<1x2x4x8xbf16>, %lse: tensor<1x2x4xbf16>) {
  // The log-sum-exps of 16-bit attention are f32 (C2's one element type
  // leaves them out).
  // expected-error@+1 {{(C7) stats must be the forward's result, of the cotangent's type 'tensor<1x2x4x8xbf16>', and its log-sum-exps 'tensor<1x2x4xf32>'; got 2 operands}}
  %0:3 = graph.attention_grad %q, %q, %q, %q stats(%q, %lse), scale = 0.5 : (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4xbf16>) -> (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>)
  return
}

// -----

func.func @attention_grad_c7_result(%q: tensor<1x2x4x8xf32>, %o: tensor<1x4x2x8xf32>, %lse: tensor<1x2x4xf32>) {
  // The forward's result is stored as the cotangent (here head-major).
  // expected-error@+1 {{(C7) stats must be the forward's result}}
  %0:3 = graph.attention_grad %q, %q, %q, %q stats(%o, %lse), scale = 0.5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_c2_qkv_heads(%qkv: tensor<1x4x6x8xf32>, %g: tensor<1x4x2x8xf32>) {
  // The gradients are stored on their own: dk is [B, S, Hk, D], not a
  // window of the projection.
  // expected-error@+1 {{(C2) the results must have the shapes and element type of query, key and value}}
  %0:3 = graph.attention_grad %qkv, %qkv, %qkv, %g, scale = 0.25 {qkv_heads = array<i64: 2, 2>, seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>} : (tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x2x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x2x8xf32>)
  return
}

// -----

func.func @all_reduce_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "graph.all_reduce"(%x) {axis = "data"} : (tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @all_reduce_c2(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = graph.all_reduce %x, axis = "data" : tensor<4xi32>
  return
}

// -----

func.func @all_reduce_c3(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C3) axis 'pipe' is not a mesh axis (data, tensor)}}
  %0 = graph.all_reduce %x, axis = "pipe" : tensor<4xf32>
  return
}

// -----

// expected-error@+1 {{'graph.mesh' has an unknown axis 'pipe' (axes: data, tensor)}}
module attributes {graph.mesh = {pipe = 2 : i64}} {}

// -----

// expected-error@+1 {{'graph.mesh' axis 'data' must have an integer size >= 1}}
module attributes {graph.mesh = {data = 0 : i64}} {}

// -----

// expected-error@+1 {{'graph.sharding' on argument 0 must be an array of one axis name per dimension of a ranked tensor}}
func.func @sharding_rank(%x: tensor<4x2xf32> {graph.sharding = ["data"]}) {
  return
}

// -----

// expected-error@+1 {{'graph.sharding' on result 0 names "pipe", which is not a mesh axis (data, tensor) or ""}}
func.func @sharding_axis(%x: tensor<4xf32>) -> (tensor<4xf32> {graph.sharding = ["pipe"]}) {
  return %x : tensor<4xf32>
}

// -----

module attributes {graph.mesh = {data = 2 : i64}} {
func.func @reduce_scatter_c1(%x: tensor<4x2xf32>) {
  // expected-error@+1 {{(C1) operand and result must have one element type, rank >= 1 and equal dimensions after the first, not 'tensor<4x2xf32>' and 'tensor<2x3xf32>'}}
  %0 = graph.reduce_scatter %x, axis = "data" : (tensor<4x2xf32>) -> tensor<2x3xf32>
  return
}
}

// -----

module attributes {graph.mesh = {data = 2 : i64}} {
func.func @reduce_scatter_c2(%x: tensor<4x2xf32>) {
  // expected-error@+1 {{(C2) dimension 0 of 'tensor<4x2xf32>' must be 2 (the size of axis 'data') times that of 'tensor<4x2xf32>'}}
  %0 = graph.reduce_scatter %x, axis = "data" : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return
}
}

// -----

func.func @reduce_scatter_c3(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = graph.reduce_scatter %x, axis = "data" : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @reduce_scatter_c4(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C4) axis 'pipe' is not a mesh axis (data, tensor)}}
  %0 = graph.reduce_scatter %x, axis = "pipe" : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @all_gather_c1(%x: tensor<f32>) {
  // expected-error@+1 {{(C1) operand and result must have one element type, rank >= 1 and equal dimensions after the first}}
  %0 = graph.all_gather %x, axis = "data" : (tensor<f32>) -> tensor<f32>
  return
}

// -----

module attributes {graph.mesh = {data = 4 : i64}} {
func.func @all_gather_c2(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{(C2) dimension 0 of 'tensor<4x3xf32>' must be 4 (the size of axis 'data') times that of 'tensor<2x3xf32>'}}
  %0 = graph.all_gather %x, axis = "data" : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return
}
}

// -----

func.func @all_gather_c3(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C3) axis 'pipe' is not a mesh axis (data, tensor)}}
  %0 = graph.all_gather %x, axis = "pipe" : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

module attributes {graph.mesh = {data = 2 : i64}} {
func.func @shard_slice_c1(%x: tensor<4x2xf32>) {
  // expected-error@+1 {{(C1) operand and result must have one element type, rank >= 1 and equal dimensions after the first, not 'tensor<4x2xf32>' and 'tensor<2x2xf16>'}}
  %0 = graph.shard_slice %x, axis = "data" : (tensor<4x2xf32>) -> tensor<2x2xf16>
  return
}
}

// -----

module attributes {graph.mesh = {data = 2 : i64}} {
func.func @shard_slice_c2(%x: tensor<5x2xf32>) {
  // expected-error@+1 {{(C2) dimension 0 of 'tensor<5x2xf32>' must be 2 (the size of axis 'data') times that of 'tensor<2x2xf32>'}}
  %0 = graph.shard_slice %x, axis = "data" : (tensor<5x2xf32>) -> tensor<2x2xf32>
  return
}
}

// -----

func.func @shard_slice_c3(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C3) axis 'tensor2' is not a mesh axis (data, tensor)}}
  %0 = graph.shard_slice %x, axis = "tensor2" : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

module attributes {graph.mesh = {data = 2 : i64}} {
// expected-error@+1 {{'graph.global_shape' on argument 0 needs a 'graph.sharding' beside it}}
func.func @global_shape_alone(%x: tensor<3x2xf32> {graph.global_shape = array<i64: 5, 2>}) {
  return
}
}

// -----

module attributes {graph.mesh = {data = 2 : i64}} {
// expected-error@+1 {{'graph.global_shape' on result 0: dimension 0 of the whole tensor is 7, so each of the 2 parts along it is 4 long, not 3}}
func.func @global_shape_parts(%x: tensor<3x2xf32>) -> (tensor<3x2xf32> {graph.sharding = ["data", ""], graph.global_shape = array<i64: 7, 2>}) {
  return %x : tensor<3x2xf32>
}
}

// -----

// expected-error@+1 {{'graph.global_shape' on argument 0 must be an array<i64> of one size per dimension of a ranked tensor}}
func.func @global_shape_rank(%x: tensor<3x2xf32> {graph.sharding = ["data", ""], graph.global_shape = array<i64: 5>}) {
  return
}

// -----

func.func @all_reduce_start_c3(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C3) axis 'pipe' is not a mesh axis (data, tensor)}}
  %p = graph.all_reduce_start %x, axis = "pipe" : tensor<4xf32>
  %r = graph.collective_done %p, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @all_reduce_start_c4(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{(C4) the result's one user must be a graph.collective_done that takes it and this op's operand}}
  %p = graph.all_reduce_start %x, axis = "data" : tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

module attributes {graph.mesh = {data = 2 : i64}} {
func.func @reduce_scatter_start_c5(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error@+1 {{(C5) the result's one user must be a graph.collective_done that takes it and this op's operand}}
  %p = graph.reduce_scatter_start %x, axis = "data" : (tensor<4xf32>) -> tensor<2xf32>
  %r = graph.collective_done %p, %y : (tensor<2xf32>, tensor<4xf32>) -> tensor<2xf32>
  return
}
}

// -----

module attributes {graph.mesh = {data = 2 : i64}} {
func.func @all_gather_start_c2(%x: tensor<2xf32>) {
  // expected-error@+1 {{(C2) dimension 0 of 'tensor<2xf32>' must be 2 (the size of axis 'data') times that of 'tensor<2xf32>'}}
  %p = graph.all_gather_start %x, axis = "data" : (tensor<2xf32>) -> tensor<2xf32>
  %r = graph.collective_done %p, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}
}

// -----

func.func @collective_done_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C1) pending must be the result of graph.all_reduce_start, graph.reduce_scatter_start or graph.all_gather_start}}
  %r = graph.collective_done %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @collective_done_c3(%x: tensor<4xf32>) {
  %p = graph.all_reduce_start %x, axis = "data" : tensor<4xf32>
  // expected-error@+1 {{(C3) the result must have pending's type 'tensor<4xf32>'}}
  %r = graph.collective_done %p, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @fused_elementwise_c1_shape(%x: tensor<4xf32>, %y: tensor<2x2xf32>) {
  // expected-error@+1 {{(C1) operand 1 must have the results' shape or be 0-d (or be broadcast by operand_dims)}}
  %r = graph.fused_elementwise %x, %y : (tensor<4xf32>, tensor<2x2xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = graph.add %a, %b : tensor<f32>
    graph.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @fused_elementwise_c6_count(%x: tensor<4x8xf32>, %y: tensor<8xf32>) {
  // expected-error@+1 {{(C6) operand_dims has 1 lists for 2 operands}}
  %r = graph.fused_elementwise %x, %y {operand_dims = [array<i64: 0, 1>]} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = graph.add %a, %b : tensor<f32>
    graph.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @fused_elementwise_c6_rank(%x: tensor<4x8xf32>, %y: tensor<8xf32>) {
  // expected-error@+1 {{(C6) operand 1 has rank 1 but 2 operand_dims}}
  %r = graph.fused_elementwise %x, %y {operand_dims = [array<i64: 0, 1>, array<i64: 0, 1>]} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = graph.add %a, %b : tensor<f32>
    graph.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @fused_elementwise_c6_order(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) {
  // expected-error@+1 {{(C6) operand 1's operand_dims must increase within the results' 2 dimensions}}
  %r = graph.fused_elementwise %x, %y {operand_dims = [array<i64: 0, 1>, array<i64: 1, 0>]} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = graph.add %a, %b : tensor<f32>
    graph.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @fused_elementwise_c6_size(%x: tensor<4x8xf32>, %y: tensor<8xf32>) {
  // expected-error@+1 {{(C6) operand 1's dimension 0 (8) is neither 1 nor the results' dimension 0 (4)}}
  %r = graph.fused_elementwise %x, %y {operand_dims = [array<i64: 0, 1>, array<i64: 0>]} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = graph.add %a, %b : tensor<f32>
    graph.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @fused_elementwise_c1_results(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C1) every result must have one shape}}
  %r:2 = graph.fused_elementwise %x : (tensor<4xf32>) -> (tensor<4xf32>, tensor<2x2xf32>) {
  ^bb0(%a: tensor<f32>):
    %s = graph.neg %a : tensor<f32>
    graph.yield %s, %s : tensor<f32>, tensor<f32>
  }
  return
}

// -----

func.func @fused_elementwise_c2(%x: tensor<4xbf16>) {
  // expected-error@+1 {{(C2) body argument 0 must be a 0-d 'bf16'}}
  %r = graph.fused_elementwise %x : (tensor<4xbf16>) -> tensor<4xf32> {
  ^bb0(%a: tensor<f32>):
    %s = graph.neg %a : tensor<f32>
    graph.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @fused_elementwise_c3_op(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C3) 'graph.reduce_sum' cannot be in a fused elementwise body}}
  %r = graph.fused_elementwise %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<f32>):
    %s = graph.reduce_sum %a, dims = [] : (tensor<f32>) -> tensor<f32>
    graph.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @fused_elementwise_c3_type(%x: tensor<4xi16>) {
  // expected-error@+1 {{(C3) 'graph.neg' in the body has type 'tensor<i16>': body values are 0-d f64, f32, f16, bf16, i32, i64, ui32, ui64 or i1}}
  %r = graph.fused_elementwise %x : (tensor<4xi16>) -> tensor<4xi16> {
  ^bb0(%a: tensor<i16>):
    %s = graph.neg %a : tensor<i16>
    graph.yield %s : tensor<i16>
  }
  return
}

// -----

func.func @fused_elementwise_c3_integer_div(%x: tensor<4xui32>) {
  // expected-error@+1 {{(C3) 'graph.div' in the body computes on 'ui32': only neg, abs, add, sub, mul, max, min, compare, select, convert and the bitwise ops take integers in a fused body}}
  %r = graph.fused_elementwise %x : (tensor<4xui32>) -> tensor<4xui32> {
  ^bb0(%a: tensor<ui32>):
    %s = graph.div %a, %a : tensor<ui32>
    graph.yield %s : tensor<ui32>
  }
  return
}

// -----

func.func @fused_elementwise_c5(%x: tensor<4xi32>) {
  // expected-error@+1 {{(C5) the body computes on floats and on integers; a fused loop takes one or the other (and i1)}}
  %r = graph.fused_elementwise %x : (tensor<4xi32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<i32>):
    %s = graph.convert %a : (tensor<i32>) -> tensor<f32>
    graph.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @fused_elementwise_c4(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C4) a yielded value must be a 0-d 'bf16'}}
  %r = graph.fused_elementwise %x : (tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%a: tensor<f32>):
    %s = graph.neg %a : tensor<f32>
    graph.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @fused_elementwise_c4_count(%x: tensor<4xf32>) {
  // expected-error@+1 {{(C4) the body yields 1 values for 2 results}}
  %r:2 = graph.fused_elementwise %x : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<f32>):
    %s = graph.neg %a : tensor<f32>
    graph.yield %s : tensor<f32>
  }
  return
}

// -----

func.func @fused_elementwise_c1_empty() {
  // expected-error@+1 {{(C1) needs at least one operand and one result}}
  %r = graph.fused_elementwise : () -> tensor<4xf32> {
  ^bb0:
    %c = graph.constant dense<1.0> : tensor<f32>
    graph.yield %c : tensor<f32>
  }
  return
}

// -----

func.func @convert_group_c1(%x: tensor<4xf32>, %y: tensor<2xf32>) {
  // expected-error@+1 {{(C1) needs as many results as operands, at least one; has 2 and 1}}
  %r = graph.convert_group %x, %y : (tensor<4xf32>, tensor<2xf32>) -> tensor<4xbf16>
  return
}

// -----

func.func @convert_group_c2(%x: tensor<4xf32>, %y: tensor<2xf32>) {
  // expected-error@+1 {{(C2) result 1 must have operand 1's shape}}
  %r:2 = graph.convert_group %x, %y : (tensor<4xf32>, tensor<2xf32>) -> (tensor<4xbf16>, tensor<4xbf16>)
  return
}

// -----

func.func @convert_group_c3(%x: tensor<4xf32>, %y: tensor<2xf32>) {
  // expected-error@+1 {{(C3) pair 1 converts 'f32' to 'f16', not 'f32' to 'bf16'}}
  %r:2 = graph.convert_group %x, %y : (tensor<4xf32>, tensor<2xf32>) -> (tensor<4xbf16>, tensor<2xf16>)
  return
}

// -----

func.func @attention_c11_types(%qkv: tensor<2x8x12x16xf32>, %other: tensor<2x4x12x16xf32>) {
  // expected-error@+1 {{(C11) qkv_heads needs query, key and value of one type; got 'tensor<2x8x12x16xf32>', 'tensor<2x4x12x16xf32>', 'tensor<2x8x12x16xf32>'}}
  %0 = graph.attention %qkv, %other, %qkv, scale = 0.25 {qkv_heads = array<i64: 4, 4>, seq_major = array<i64: 0, 1, 2, 3>} : (tensor<2x8x12x16xf32>, tensor<2x4x12x16xf32>, tensor<2x8x12x16xf32>) -> tensor<2x8x4x16xf32>
  return
}
