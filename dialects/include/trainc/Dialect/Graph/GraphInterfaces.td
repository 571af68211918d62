//===- GraphInterfaces.td - Op interfaces later passes use -*- tablegen -*-===//
//
// The questions passes ask of an op, declared once here:
//  - GradientOpInterface: what is my vector-Jacobian product? (autodiff)
//  - ShardingRuleOpInterface: which operand and result dimensions move
//    together, and which are contracted? (partition)
//  - CostOpInterface: how many FLOPs and bytes does one execution take?
//    (recompute, schedule, MFU metrics)
//  - InPlaceOpInterface: which results may reuse which operands' memory?
//    (plan-memory)
//
// Every op implements the sharding-rule and cost interfaces
// (GraphSharding.cpp, GraphCost.cpp); the gradient interface is
// implemented by the ops autodiff supports.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHINTERFACES_TD
#define TRAINC_DIALECT_GRAPH_GRAPHINTERFACES_TD

include "mlir/IR/OpBase.td"

def Graph_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::trainc::graph";
  let description = [{
    Reverse-mode differentiation rule of an op. Given the cotangents of the
    op's results (null where a result does not reach the loss), the op emits
    `graph` ops at the builder's insertion point that compute the cotangent
    of each operand, in value semantics, and returns one value per operand
    (null for operands that are not differentiable, e.g. integer indices).
    Rules may read the op's operands and results (the forward values);
    recompute decisions are made later, not here.
  }];
  let methods = [
    InterfaceMethod<
      "Whether operand `index` carries a gradient (floats do, integers and "
      "predicates do not).",
      "bool", "isDifferentiableOperand", (ins "unsigned":$index), [{}],
      [{ return ::trainc::graph::isFloatTensorType(
             $_op->getOperand(index).getType()); }]>,
    InterfaceMethod<
      "Builds the vector-Jacobian product; fills `operandCotangents` with "
      "one value per operand (null when not differentiable).",
      "::llvm::LogicalResult", "buildVjp",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultCotangents,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandCotangents)>,
  ];
}

def Graph_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::trainc::graph";
  let description = [{
    The op's sharding factors (as in Shardy's OpShardingRule): a list of
    factors with sizes, and for each operand and result dimension the
    factor it carries. Splitting a factor over a mesh axis splits every
    dimension that carries it into contiguous blocks, one per rank, and the
    op then computes each rank's block from the operands' blocks alone.
    - A factor that appears in a result is a parallel factor.
    - A factor that appears only in operands is a reduction factor: split,
      each rank's result is a partial sum that an all_reduce over the axis
      completes. Only sums are reduction factors (a dot's contraction,
      reduce_sum's dimensions, scatter_add's index dimensions).
    - A dimension with no factor (kNoFactor) is always whole: the op needs
      all of it on every rank (a softmax's axis, a slice's sliced
      dimension, a norm's normalized dimensions, a maximum's reduced one).
    - A dimension that merges or splits others (reshape, grouped heads)
      carries the factor of its major part, whose blocks are contiguous
      blocks of the whole dimension.
    Every graph op implements it (GraphSharding.cpp); the partition phase's
    propagation and per-rank rewriting read only this rule, and
    `trainc-opt --trainc-test-sharding-rules` prints it.
  }];
  let methods = [
    InterfaceMethod<"Returns the op's sharding rule.",
      "::trainc::graph::ShardingRule", "getShardingRule", (ins)>,
  ];
}

def Graph_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::trainc::graph";
  let description = [{
    The work one execution of the op does, for the recompute and schedule
    phases and for MFU metrics: floating-point operations (a multiply-add
    counts as 2, as in the usual MFU convention) and bytes moved if every
    operand is read once and every result written once. The defaults fit
    elementwise ops: one FLOP per result element, all operands and results
    touched once.
  }];
  let methods = [
    InterfaceMethod<"FLOPs of one execution.", "int64_t", "getFlops", (ins),
      [{}], [{ return ::trainc::graph::numElements($_op->getResult(0)); }]>,
    InterfaceMethod<"Bytes read and written by one execution.",
      "int64_t", "getBytesAccessed", (ins), [{}],
      [{ return ::trainc::graph::operandAndResultBytes($_op); }]>,
  ];
}

def Graph_InPlaceOpInterface : OpInterface<"InPlaceOpInterface"> {
  let cppNamespace = "::trainc::graph";
  let description = [{
    Which results may be written into the memory of which operands, for the
    memory planner: true when the op's kernel reads each element of the
    operand before it writes the same element of the result, and no other
    element of the operand afterwards (index-wise ops: elementwise math,
    select, gelu; the optimizer's fused update of a parameter and its
    moments). The planner still checks that the two have the same size and
    that nothing reads the operand later. The default is "any operand",
    right for index-wise ops; an op with several results that are not all
    index-wise must answer per pair (the planner asks it for each).
  }];
  let methods = [
    InterfaceMethod<
      "Whether result `result` may take the memory of operand `operand`.",
      "bool", "canOverwriteOperand", (ins "unsigned":$result,
                                          "unsigned":$operand), [{}],
      [{ return true; }]>,
  ];
}

def Graph_RandomOpInterface : OpInterface<"RandomOpInterface"> {
  let cppNamespace = "::trainc::graph";
  let description = [{
    An op that draws dropout masks from the counter-based stream of
    (`seed`, the training step, the element's index): graph.dropout, and
    graph.attention and graph.attention_grad with `dropout`. Passes that
    copy a step or split its batch move the stream through this interface,
    so each kind of op draws as the others do: gradient accumulation gives
    micro-batch m the seed `seed + m * kMicroBatchSeedStride`, the
    data-parallel split sets `data_seed_stride` (rank i draws with
    `seed + i * data_seed_stride`).
  }];
  let methods = [
    InterfaceMethod<"Whether the op draws from its stream (attention only "
      "with dropout).", "bool", "drawsMasks", (ins), [{}],
      [{ return true; }]>,
    InterfaceMethod<"The stream's seed.", "uint64_t", "getSeed", (ins), [{}],
      [{ return $_op.getSeed(); }]>,
    InterfaceMethod<"Sets the stream's seed.", "void", "setSeed",
      (ins "uint64_t":$seed), [{}], [{ $_op.setSeed(seed); }]>,
    InterfaceMethod<"Sets how far apart the data ranks' seeds are.", "void",
      "setDataSeedStride", (ins "uint64_t":$stride), [{}],
      [{ $_op.setDataSeedStride(stride); }]>,
  ];
}

#endif // TRAINC_DIALECT_GRAPH_GRAPHINTERFACES_TD
