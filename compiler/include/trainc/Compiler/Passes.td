//===- Passes.td - trainc compiler passes ---------------------*- tablegen -*-===//
//
// Every pass of the compiler, in pipeline order (see Pipeline.h). Each has a
// summary, its input invariants and output, an example, and options.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_PASSES_TD
#define TRAINC_COMPILER_PASSES_TD

include "mlir/Pass/PassBase.td"

def RecognizeComposites : Pass<"trainc-recognize-composites", "mlir::func::FuncOp"> {
  let summary = "Turn decomposed normalizations, activations and attention into graph composites";
  let description = [{
    Exporters often spell out what the graph dialect has as one op with a
    fast kernel and a known gradient. This pass rewrites, anywhere in a
    function:

    - layer norm: `(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)`, or
      with `* rsqrt(...)`, then `* scale` and `+ bias` -> `graph.layer_norm`;
    - RMS norm: `x * rsqrt(mean(x^2) + eps)` or `x / sqrt(...)`, then
      `* scale` -> `graph.rms_norm`;
    - erfc as StableHLO's chlo decomposition spells it for f32 (what JAX
      exports for `lax.erfc` and exact `jax.nn.gelu`): `select(|z| < 1,
      1 - z P(z^2), L(z))` with XLA's coefficients -> `1 - graph.erf(z)`,
      whose gradient is finite at 0 where the spelled-out one is NaN;
    - GELU: `0.5 * x * (1 + erf(x / sqrt(2)))`, `0.5 * x * (1 - erf(-x /
      sqrt(2)))` and `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 *
      x^3)))`, with the factors in any order and association ->
      `graph.gelu`;
    - softmax: `exp(x - max(x)) / sum(exp(x - max(x)))` -> `graph.softmax`;
    - attention: `softmax(scale * q @ k^T [masked]) @ v` on rank-4
      [batch, heads, seq, dim] operands, where the mask is either a
      `select(cond, -inf, scores)` with a constant condition (recognized as
      `causal` when it is exactly the upper triangle) or an added mask ->
      `graph.attention`. A q or k multiplied by a constant before the
      product (PyTorch's exported scaled_dot_product_attention scales each
      by sqrt(scale)) enters unscaled, its factor joining the scale.
      Scores soft-capped by `c * tanh(s / c)` become its `softcap`, and a
      `graph.dropout` of the probabilities whose mask nothing else reads
      its `dropout` (the same mask: see graph.attention).

    Input: graph-dialect IR after canonicalization (broadcasts merged,
    constants folded). Output: the same function with the patterns replaced;
    the decomposed ops become dead and the canonicalizer removes them.
    Numerics: a composite computes the same function, more stably (e.g. a
    softmax without the max subtraction gains it).

    Example:
    ```mlir
    %m = graph.reduce_mean %x, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    ... (x - m) / sqrt(var + 1e-5) * %g + %b ...
    // becomes
    %y = graph.layer_norm %x scale %g bias %b, axis = 1, epsilon = 1.0e-05 ...
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def SplitFusedProjections : Pass<"trainc-split-fused-projections", "mlir::func::FuncOp"> {
  let summary = "One projection per slice of a fused projection (QKV)";
  let description = [{
    GPT-2 and many exports compute query, key and value with one matmul
    (`c_attn`, [d, 3d]) whose result is sliced three ways. Split over a
    tensor axis, such a product would be cut across the three, not by heads
    within each. With tensor parallelism the recognize phase therefore
    rewrites, anywhere in a function, a `graph.dot_general` (optionally
    plus a bias through `graph.add`, optionally seen through a
    `graph.reshape` that keeps the sliced dimension, as Hugging Face's
    flattened `Conv1D`) whose every user is a `graph.slice` of one result
    dimension into one product per slice: that operand of the
    dot which makes the dimension (found through the dot's sharding rule)
    is sliced instead, and so is the bias (a broadcast bias is sliced
    before it is broadcast). Autodiff then differentiates the three
    products, and the partition phase makes each column-parallel.

    Numerics: each element is the same sum as in the fused product (a BLAS
    may order it differently for another shape).

    Example:
    ```mlir
    %f = graph.dot_general %x, %w ... -> tensor<2x8x192xf32>
    %q = graph.slice %f, start = [0, 0, 0], limit = [2, 8, 64] ...
    // becomes
    %wq = graph.slice %w, start = [0, 0], limit = [64, 64] ...
    %q = graph.dot_general %x, %wq ... -> tensor<2x8x64xf32>
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def InferSignature : Pass<"trainc-infer-signature", "mlir::ModuleOp"> {
  let summary = "Mark the loss and the token and target inputs of @main";
  let description = [{
    The training signature, which later phases and the runtime read instead
    of names: `train.loss` on the result named by `loss` (`graph.output`;
    it must be a scalar float), and `train.data = "tokens"` / `"targets"` on
    the data inputs a token stream feeds. They are inferred from the loss:
    the targets input is the one whose integer values reach the targets of
    the loss's softmax_cross_entropy, the tokens input the one whose integer
    values reach the indices of an embedding gather, each through integer
    ops only (slices, shifts, reshapes, casts). When either is missing or
    ambiguous neither is marked, and the runtime asks for them by name
    (`trainc-run --tokens-input/--targets-input`). Marks already present
    are kept.

    Errors: with `require-loss` (training), no output named `loss`; a loss
    that is not a scalar float.

    Example:
    ```mlir
    func.func @main(%ids: tensor<2x8xi64> {graph.input = "ids"},
                    %labels: tensor<2x8xi64> {graph.input = "labels"}, ...)
        -> (tensor<f32> {graph.output = "loss"})
    // becomes
    func.func @main(%ids: ... {graph.input = "ids", train.data = "tokens"},
                    %labels: ... {graph.input = "labels",
                                  train.data = "targets"}, ...)
        -> (tensor<f32> {graph.output = "loss", train.loss})
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", "\"loss\"",
           "Name (graph.output) of the scalar loss">,
    Option<"requireLoss", "require-loss", "bool", "false",
           "Fail when there is no such output (training)">,
  ];
  let dependentDialects = ["trainc::train::TrainDialect"];
}

def Precision : Pass<"trainc-precision", "mlir::ModuleOp"> {
  let summary = "Mixed precision: an autocast policy as explicit casts";
  let description = [{
    Runs on the forward graph, before autodiff, so that the gradient rules
    build the backward pass in the same precisions (as PyTorch autocast:
    the backward of a 16-bit matmul is 16-bit matmuls). Parameters,
    gradients, optimizer state and the loss stay f32.

    `precision` tf32 keeps every tensor f32 and marks each f32
    `dot_general` (not kept by `keep-f32`) `tf32`: its operands are rounded
    to TF32 and the products summed in f32 (NVIDIA's TF32 tensor-core mode,
    which PyTorch calls `allow_tf32`; the CPU rounds the operands itself and
    is the reference a GPU matches within `--verify-steps`' limits).
    Recognized attention (`graph.attention`) stays f32; matmuls the
    recognizer left as dot_generals are marked like any other. The
    gradients' matmuls inherit the mark (the gradient rule copies it).

    The policy (`precision` bf16 or fp16; f32: no change), op by op in
    program order, for f32 values only:
    | ops | run in | |
    | --- | --- | --- |
    | dot_general, attention | 16-bit | f32 operands are cast (the kernels accumulate in f32 and round the result once) |
    | softmax, layer_norm, rms_norm, reductions | f32 | 16-bit operands are cast up |
    | softmax_cross_entropy | f32 | reads 16-bit logits as they are (its kernel and its gradient's compute each row in f32): no f32 copy of the logits |
    | every other op (elementwise, gelu, dropout, data movement) | its activations' precision | all its activation operands (those that depend on a data input) 16-bit: 16-bit, weights and constants cast down; any f32: f32, 16-bit operands cast up (PyTorch's type promotion) |
    The casts are `graph.convert` ops; the canonicalizer then moves a
    narrowing cast of a transpose, reshape, slice or broadcast before it
    (so a weight is cast once, the transpose still absorbed by its dot) and
    folds a widening cast followed by the cast back. The working 16-bit
    copy of each weight is made once per step and read by the forward and
    the backward pass. Results keep the function's result types (a 16-bit
    output is cast back).

    `keep-f32` (comma-separated): ops to leave in f32 whatever the policy: op names
    (`dot_general` or `graph.dot_general`) or glob patterns of the node
    names in their locations (`/lm_head/*`, `/h.0/*`).

    fp16 with `loss-scaling` (trainc sets it for training steps) adds
    dynamic loss scaling (PyTorch's GradScaler): a state argument
    `loss_scale` (f32, initially 2^16) marked `train.loss_scale`: autodiff
    seeds the backward pass with it and divides it out of each gradient
    (the results stay the loss's gradients; an overflow stays inf or NaN),
    and the optimizer skips a step whose gradients overflowed and updates
    the scale (halved on overflow, doubled after 2,000 clean steps). Without
    an optimizer (`trainc --optimizer none`, a gradients-only step) nothing
    updates it: the scale stays 2^16.
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"f32\"",
           "f32, tf32, bf16 or fp16">,
    Option<"keepF32", "keep-f32", "std::string", "\"\"",
           "Comma-separated op names or node-name globs kept in f32">,
    Option<"lossScaling", "loss-scaling", "bool", "false",
           "With fp16, add the dynamic loss scale (training steps)">,
  ];
  let dependentDialects = ["trainc::graph::GraphDialect",
                           "trainc::train::TrainDialect"];
}

def GradAccum : Pass<"trainc-grad-accum", "mlir::ModuleOp"> {
  let summary = "Split each data input into micro-batches and average their losses and gradients";
  let description = [{
    Gradient accumulation over `grad-accum` (K) micro-batches inside one
    step. Input: `@main` after autodiff, with data inputs (`graph.input`)
    whose leading dimension is the micro-batch size B, a scalar loss (the
    result marked `train.loss`) and its gradients (`train.grad_of`).

    Output: `@main` whose data inputs have leading dimension K * B; the
    whole step, forward and backward, is applied to each slice
    [k B, (k + 1) B) in turn (dropout seeds differ per micro-batch), and
    the loss and each gradient are the means over the micro-batches, summed
    as each micro-batch ends (as PyTorch's `(loss / K).backward()` over K
    micro-batches). Other outputs with leading dimension B are concatenated
    back to K * B. Running after autodiff keeps one micro-batch's
    activations alive at a time: the activation peak does not grow with K.

    Errors: an input whose leading dimension differs from the others, or an
    output that is neither the loss, a gradient nor batched.
  }];
  let options = [
    Option<"microBatches", "grad-accum", "int64_t", "1",
           "Number of micro-batches K">,
  ];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def SyncBatchStatistics : Pass<"trainc-sync-batch-statistics", "mlir::ModuleOp"> {
  let summary = "Take each batch statistic over every data-parallel rank's part of the batch";
  let description = [{
    SyncBatchNorm (`--sync-batch-norm`, with `--data-parallel` on a mesh
    whose `data` axis has `ranks` = N > 1). Input: `@main` before autodiff,
    whose ops marked `train.batch_statistic` are each a `graph.reduce_mean`
    over the batch (the ONNX importer marks a training-mode
    BatchNormalization's mean and variance). Every rank's part of the
    global batch has the same size, so the mean of the ranks' means is the
    global batch's: each marked mean m becomes `graph.all_reduce` of m over
    the `data` axis divided by N. The variance is the mean of the squared
    distances from that global mean, so it becomes the global batch's
    (population) variance the same way, and the running statistics made
    from them are the same on every rank. A `graph.mul` marked
    `train.bessel_correction` (`--unbiased-running-var`: the variance times
    c / (c - 1), c the elements a rank averages) gets N c / (N c - 1), the
    global batch's factor.

    It runs before autodiff, which differentiates the all_reduce (its
    cotangent is the all_reduce of the result's): the backward pass sums
    the statistics' gradients over the ranks too, as PyTorch's
    SyncBatchNorm does. N ranks with batch B then train as one rank with
    batch N B (up to the order of the sums).

    Errors: `ranks` below 2, and a program with no marked statistic (no
    batch norm in training mode: nothing to synchronize).
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", "1",
           "The ranks on the mesh's data axis">,
  ];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def Autodiff : Pass<"trainc-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of @main's loss w.r.t. its trainable parameters";
  let description = [{
    Input: `@main` in the graph dialect with parameter arguments
    (`train.param`, trainable unless `train.frozen`) and a scalar float
    result marked `train.loss` (trainc-infer-signature marks it).

    Output: the same function, extended with one result per trainable
    parameter, in argument order: the gradient of the loss with respect to
    it, marked `train.grad_of = "<parameter>"` (and named
    `<parameter>.grad` for users). The backward pass is built by a reverse
    sweep over the ops in value semantics: each op's GradientOpInterface
    rule turns its results' cotangents into its operands' cotangents, and a
    value used several times (a tied embedding) accumulates the sum. Integer
    values carry no gradient. A parameter that does not reach the loss gets
    a zero gradient.

    Errors: no result marked `train.loss`; an op without a gradient rule on a path from a trainable parameter to the loss (named
    with its location).

    Example:
    ```mlir
    func.func @main(%w: tensor<4xf32> {train.param = "w", ...}, %x: ...)
        -> (tensor<f32> {graph.output = "loss", train.loss}) { ... }
    // becomes
    func.func @main(...) -> (tensor<f32> {graph.output = "loss", train.loss},
        tensor<4xf32> {graph.output = "w.grad", train.grad_of = "w"})
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def Partition : Pass<"trainc-partition", "mlir::ModuleOp"> {
  let summary = "The per-rank program of a device mesh, with its collectives";
  let description = [{
    Input: `@main` after autodiff (and grad-accum): data inputs
    (`graph.input`), the loss (`train.loss`) and the gradients
    (`train.grad_of`) as results. Records the mesh (`graph.mesh`) on the
    module and, for each strategy, rewrites `@main` into the program every
    rank runs (SPMD: nothing in it depends on the rank).

    `data-parallel` on a mesh whose `data` axis has N > 1 ranks: each rank
    runs the step on its own part of the global batch, so the program's
    data inputs are one rank's part, marked `graph.sharding = ["data", ...]`
    (the global batch is N times the compiled batch; rank i reads part i).
    The loss and each gradient are summed over the `data` axis
    (`graph.all_reduce`) and divided by N: the means over the global batch,
    as gradient accumulation over N micro-batches computes them (so with a
    deterministic reduction order, N ranks and `--grad-accum N` on one rank
    agree bit for bit). Like grad-accum, this assumes the loss is a mean
    over the batch. Other outputs must be batched along dimension 0 and
    stay per rank (sharded on `data`). Parameters and optimizer state are
    replicated: the optimizer phase, which comes next, sees the global
    gradients, so the norm, clipping and skipped steps agree on every rank.
    Dropout (graph.dropout, and attention with dropout) gets
    `data_seed_stride = micro-batches * kMicroBatchSeedStride`:
    rank r draws the masks of micro-batches r*K .. r*K+K-1 of one rank with
    --grad-accum N*K.
    Gradients of one element type are summed in buckets of at most
    `bucket-bytes` (default 25 MiB, as PyTorch DDP), taken in the order the
    backward pass computes them: each bucket is the gradients flattened and
    concatenated, one `graph.all_reduce`, one divide, and slices back, so a
    step makes a few large collectives instead of one per parameter (a
    gradient larger than the limit is a bucket of its own).

    `zero` = 1, 2 or 3 (ZeRO, with data-parallel): what every rank keeps
    whole is split over the `data` axis instead. A tensor of rank >= 1 is
    split along dimension 0 into N parts of ceil(d0 / N) rows (the last
    parts padded with zeros; `graph.global_shape` records d0); 0-d
    parameters stay replicated.
    - 1: each gradient is averaged whole (all_reduce, as data parallelism)
      and this rank keeps its part (`graph.shard_slice`): the gradient
      results are parts, marked `graph.sharding` and `graph.global_shape`.
      The optimizer phase then keeps the optimizer state as parts too and
      updates the rank's part of each parameter, then gathers it.
    - 2: as 1, but the buckets are reduced with `graph.reduce_scatter`
      straight into the parts: no rank holds a whole averaged gradient.
      Each bucket is laid out [rank][its members' parts], so that part r of
      the bucket is every member's part r.
    - 3: as 2, and every trainable parameter of rank >= 1 becomes its part
      too (its `train.init` stays the whole tensor, of which each rank keeps
      its part when the executable starts). Each op that reads a parameter
      gets its own `graph.all_gather` just before it, so the whole
      parameter lives only while that op needs it: one gather for the
      forward pass and one for the backward pass of a weight read once.

    `tensor-parallel` on a mesh whose `tensor` axis has T > 1 ranks
    (Megatron-LM): each graph.attention's query, key and value are
    annotated to be split by heads, and each GELU whose features a matmul
    contracts to be split by features. A user may instead (or also)
    annotate any op with `graph.sharding = ["", "tensor", ...]`: its result
    split along that dimension. From these seeds the split propagates
    through every op by its sharding rule (ShardingRuleOpInterface; the
    conflict rule and the per-rank rewriting are described in
    ShardAxis.cpp): the projections into attention and the MLP's up
    projection become column-parallel, the output and down projections
    row-parallel with a `graph.all_reduce` over `tensor` of their partial
    sums, in the forward and the backward pass alike. A trainable
    parameter read only as one split whose gradient is made split the same
    way becomes this rank's part (Megatron's split weights; without
    `zero`): the argument and its gradient carry `graph.sharding` and
    `graph.global_shape`, and the optimizer keeps its state as parts.
    Other arguments and results stay whole on the tensor axis; a split
    gradient of a whole parameter is gathered (`graph.all_gather`). A fused
    QKV projection reaches this phase already split per slice
    (SplitFusedProjections). A dropout's mask depends on each element's
    index in the whole tensor: graph.dropout splits along any one
    dimension and the rebuilt op's `blocks` and `block_dim` number its
    block in the whole; attention with dropout splits by heads only, and
    `head_blocks` numbers this rank's heads. Tensor parallelism runs
    first; data parallelism and ZeRO then see its gradients.

    Errors: an unknown or repeated mesh axis, a size below 1, a `data` axis
    with no strategy that uses it, a `tensor` axis above 1 with nothing
    split over it, `tensor-parallel` without a tensor axis, an annotation
    that names another axis, splits two dimensions, does not divide its
    dimension evenly or sits on an argument, an output that is neither the
    loss, a gradient nor batched, `zero` outside 0..3.
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", "\"\"",
           "The device mesh, e.g. data=2 (axes data and tensor; absent: 1)">,
    Option<"dataParallel", "data-parallel", "bool", "false",
           "Split each batch over the data axis and average the gradients">,
    Option<"syncBatchNorm", "sync-batch-norm", "bool", "false",
           "With data-parallel: the batch statistics were taken over every "
           "rank (trainc-sync-batch-statistics, which the pipeline runs "
           "before autodiff), so the running statistics are the same on "
           "every rank and are not averaged">,
    Option<"tensorParallel", "tensor-parallel", "bool", "false",
           "Split attention by heads and MLPs by features over the tensor "
           "axis (Megatron-LM)">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "The grad-accum micro-batches of each step (the pipeline passes "
           "--grad-accum): each rank's dropout seeds continue their count">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "26214400",
           "Gradients summed in one all_reduce per bucket of at most this "
           "many bytes (in the order the backward pass makes them; 0: one "
           "all_reduce per gradient)">,
    Option<"zero", "zero", "int64_t", "0",
           "ZeRO stage with data-parallel: 1 splits the optimizer state over "
           "the data axis, 2 also the gradients, 3 also the parameters "
           "(0: none)">,
  ];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def Optimizer : Pass<"trainc-optimizer", "mlir::ModuleOp"> {
  let summary = "Append the optimizer step: clipping, schedule, AdamW or SGD";
  let description = [{
    Input: `@main` after autodiff (a result marked `train.grad_of` for every
    trainable parameter, and one marked `train.loss`).

    Output: the step function, in value semantics. New arguments carry the
    optimizer state (`train.state`, initial value in `train.init`): the step
    count `step` (i64, starting at 0) and per parameter `<param>.exp_avg`
    and `<param>.exp_avg_sq` (AdamW) or `<param>.momentum_buffer` (SGD with
    momentum). The gradient results are replaced by `grad_norm` (the global
    L2 norm before clipping) and `lr`, marked `train.metric`, and by the
    new parameter and state
    values, each marked `train.update = "<name>"`; the runtime stores them
    back after every step.

    A gradient that is this rank's ZeRO part (`graph.sharding` and
    `graph.global_shape` on its result, from the partition phase) gets
    moments (or a momentum buffer) split the same way, and the update of
    this rank's part of the parameter: the argument itself when it is a
    part too (ZeRO-3), else its `graph.shard_slice`, gathered whole
    (`graph.all_gather`) after the update. The squares of all such parts
    are summed once over their mesh axis (`graph.all_reduce`) for the
    global norm.

    Semantics are PyTorch's (torch.optim.AdamW / SGD, foreach=False):
    - clipping (clip_grad_norm > 0): g *= min(1, max_norm / (norm + 1e-6));
    - AdamW: p *= 1 - lr * wd (decoupled); m = b1 m + (1 - b1) g;
      v = b2 v + (1 - b2) g^2; p -= lr / (1 - b1^t) * m /
      (sqrt(v) / sqrt(1 - b2^t) + eps), t = step + 1; the scalar factors
      are computed in f64;
    - SGD: g += wd * p; buf = momentum * buf + g (buf = g at t = 1);
      nesterov: g + momentum * buf; p -= lr * update;
    - weight decay applies to parameters of rank >= 2 that are not
      embedding tables (gathered from), unless decay-all;
    - lr-schedule constant, cosine or wsd: for the t-th step (t = step + 1),
      lr * t / warmup while t <= warmup; then constant: lr; cosine:
      min_lr + (lr - min_lr) (1 + cos(pi p)) / 2 with
      p = min(1, (t - warmup) / (total - warmup)); wsd (warmup, stable,
      decay): lr until the last decay-steps steps, then linear to min_lr at
      total-steps. Schedules are a table of total-steps values computed in
      f64 at compile time and read by the step count (past the end, the
      last value holds).
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "adamw or sgd">,
    Option<"lr", "lr", "double", "1e-3", "Peak learning rate">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.01",
           "Weight decay (decoupled for AdamW)">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0.0",
           "Clip the global gradient norm to this (0: off)">,
    Option<"schedule", "lr-schedule", "std::string", "\"constant\"",
           "constant, cosine or wsd">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0",
           "Linear warmup steps (every schedule)">,
    Option<"totalSteps", "total-steps", "int64_t", "0",
           "Steps at which cosine decay reaches min-lr">,
    Option<"minLr", "min-lr", "double", "0.0", "Floor of cosine and wsd">,
    Option<"decaySteps", "decay-steps", "int64_t", "0",
           "Length of wsd's final linear decay">,
    Option<"decayAll", "decay-all", "bool", "false",
           "Decay every parameter (PyTorch's default) instead of matrices only">,
  ];
  let dependentDialects = ["trainc::graph::GraphDialect",
                           "trainc::train::TrainDialect"];
}

def Recompute : Pass<"trainc-recompute", "mlir::ModuleOp"> {
  let summary = "Activation checkpointing: recompute chosen activations in the backward pass";
  let description = [{
    Input: a training step (after autodiff, with or without the optimizer).
    The forward pass is every op that the loss or another model output
    depends on; an activation is a value of the forward pass that depends
    on both a parameter and a data input; it is saved when an op outside
    the forward pass (backward, optimizer) reads it.

    Blocks are found on the dataflow, not by names: a cut is a point of
    the forward pass where exactly one non-scalar activation is live (the
    residual stream between blocks and between a block's halves); the
    input of block j is the last cut before its `graph.attention` or
    `graph.extract_patches` (a transformer block's attention, a CNN
    block's convolutions or pooling; those sharing a cut are one block),
    and the last block ends as many cuts after its input as the block
    before it spans (a single block: at the last cut a norm reads, else at
    the last cut).

    Modes (`mode`):
    - `none`: the IR is unchanged.
    - `full`: only each block's input is saved; everything else a block's
      backward reads is recomputed from it.
    - `selective`: the results of `graph.attention`, softmax, gelu,
      dropout, exp/tanh/erf and `graph.extract_patches` (a convolution's
      patches, kernel-size times its input) and the elementwise and
      data-movement ops that follow them, up to the next dot or norm, are
      recomputed, but only where every input of the recomputation is
      saved anyway, or is an elementwise op or reshape of saved values,
      itself recomputed (a ReLU of a saved norm output): less memory, few
      FLOPs (the choice Megatron calls selective).
    - `budget=BYTES` (suffix K, M or G for KiB, MiB, GiB): the first step
      of the ladder none, selective on blocks 0..k, selective everywhere
      and full on blocks 0..k whose planned activation peak (the work
      arena of trainc-plan-memory) is at most BYTES. Each step adds FLOPs,
      so the first that fits adds the fewest of the ladder. The steps are
      planned in order on a copy (lower and plan-memory): the planned peak
      need not fall at every step.

    A recomputed op is a clone of the forward op, marked `recompute.clone`
    (so CSE cannot fold it back), placed just before the first op outside
    the forward pass that needs it, and made once: a clone serves every
    later reader. Random ops replay the same mask (graph.dropout's mask is
    a function of seed, step and index), so gradients are bitwise those
    without recompute. `@main` gets `recompute.added_flops` and
    `recompute.added_live_bytes` (a bound on what recompute can add to the
    bytes live at a point of the step: every remade value but a saved one
    that no other remake reads, and the remakes' inputs, whose lives they
    may extend); with
    `compare-options`, `recompute.options` also lists the planned
    activation bytes and added FLOPs of none, selective and full (what
    `trainc --print-memory-plan` prints).

    Errors: `full`, `selective` or a budget when no block is found (no
    `graph.attention` or `graph.extract_patches` with a cut before it); a budget below what full
    recompute reaches (the message gives that smallest peak and its plan).

    Example (`mode=selective`): the gelu that the down projection's weight
    gradient reads is made again from its saved input, where that gradient
    needs it:
    ```mlir
    %h = graph.gelu %u, approximation = erf : tensor<2x32x256xf32>
    ... (forward and backward ops)
    %h2 = graph.gelu %u, approximation = erf {recompute.clone} : tensor<2x32x256xf32>
    %dw = graph.dot_general %h2, %dy, ...
    ```
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"none\"",
           "none, full, selective or budget=BYTES">,
    Option<"compareOptions", "compare-options", "bool", "false",
           "Also plan none, selective and full and record them on @main">,
    Option<"lower", "lower", "std::string", "\"\"",
           "The lower phase's choices it plans with, as the pipeline runs "
           "it: NAME=VALUE pairs separated by commas, each NAME a trainc "
           "lower-phase flag (fuse-elementwise=false,pad-classes=0); flags "
           "not named keep trainc's defaults (the pipeline passes all of "
           "trainc's)">,
  ];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

//===----------------------------------------------------------------------===//
// The back half: lower, plan-memory (then the serializer writes the file).
//===----------------------------------------------------------------------===//

def AbsorbTransposes : Pass<"trainc-absorb-transposes", "mlir::func::FuncOp"> {
  let summary = "Let dot_generals and attention read transposed operands in place";
  let description = [{
    A `graph.transpose` whose every use is a `graph.dot_general` operand
    is removed: each dot reads the transpose's source instead, with its
    batching and contracting dimensions renumbered through the
    permutation. Possible when the operand's free dimensions keep their
    order in the source (the result lists them in operand order), so the
    result type, and what is computed, do not change; the GEMM then reads
    the weight as a transposed operand and no copy is made. A transpose
    with any other use, or whose free dimensions would be reordered, stays.

    A transpose of a dot_general's result is absorbed the other way when
    it only swaps the two operands' free dimensions (batch dimensions
    first, each block in order) and is the dot's only use: the dot is
    rewritten with its operands swapped, so it writes the transposed
    layout itself. Autodiff's weight gradients (X^T dY, transposed to the
    weight's [out, in] layout) take this form.

    Attention's head transposes go the same way: a transpose that swaps
    dimensions 1 and 2 (`[0, 2, 1, 3]`) of a `graph.attention` or
    `graph.attention_grad` operand (the mask excepted) is read in place by
    flipping that tensor's `seq_major` entry, and such transposes of a
    result (all of its uses) by flipping the result's. A model's
    `[B, S, H * D]` projection reshaped to `[B, S, H, D]` then enters
    attention without a copy, and the output leaves in the layout the
    next projection reads: on a GPT, 8 transposes per layer and step.

    Example:
    ```mlir
    %wt = graph.transpose %w, permutation = [1, 0]
        : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %y = graph.dot_general %x, %wt, batching_dims = [] x [],
        contracting_dims = [1] x [0]
        : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    // becomes
    %y = graph.dot_general %x, %w, batching_dims = [] x [],
        contracting_dims = [1] x [1]
        : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def FuseBias : Pass<"trainc-fuse-bias", "mlir::func::FuncOp"> {
  let summary = "Add a linear layer's bias inside its dot_general";
  let description = [{
    `graph.add(dot_general(x, w), broadcast_in_dim(b))` (either operand
    order), where `b` has the shape of the dot's rhs free dimensions and
    is broadcast onto the result's last dimensions, in order, becomes
    `graph.dot_general_bias(x, w, b)`: the kernel adds the bias to each
    block of the product while it is in cache, and neither the broadcast
    tensor nor a separate pass over the product is needed. For f32 and
    f64 the result is bit for bit that of the dot and the add; for bf16
    and f16 the bias is added to the product's f32 sums before the one
    rounding (a rounding fewer, as a GPU GEMM's bias epilogue does). The
    dot must have no other use and the same discardable
    attributes as the add (a recompute clone's mark), which the fused op
    keeps; a broadcast with other uses stays for them.

    Runs in the lower phase, after differentiation, the optimizer and the
    partition: the fused op has no gradient rule and is formed on each
    rank's program as it will run.

    Example:
    ```mlir
    %p = graph.dot_general %x, %w, batching_dims = [] x [],
        contracting_dims = [1] x [1]
        : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %bb = graph.broadcast_in_dim %b, dims = [1]
        : (tensor<16xf32>) -> tensor<4x16xf32>
    %y = graph.add %p, %bb : tensor<4x16xf32>
    // becomes
    %y = graph.dot_general_bias %x, %w, %b, batching_dims = [] x [],
        contracting_dims = [1] x [1]
        : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>)
        -> tensor<4x16xf32>
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def FuseGelu : Pass<"trainc-fuse-gelu", "mlir::func::FuncOp"> {
  let summary = "Compute a GELU and its gradient in the matmuls around them";
  let description = [{
    Forward: `graph.gelu(dot_general_bias(x, w, b))` becomes
    `graph.dot_general_bias_gelu(x, w, b)`, whose two results are the
    GELU and the pre-activation: every other reader of the product (the
    GELU's gradient) reads the second. It takes the dot's place.

    Backward: `graph.gelu_grad(pre, dot_general(a, b))` becomes
    `graph.dot_general_gelu_grad(a, b, pre)`; under mixed precision the
    chain `convert_T(gelu_grad(convert_f32(pre), convert_f32(dot)))` of a
    16-bit T does too (the op on T computes its gradient in f32 and rounds
    once, as the chain). The product and the ops between it and the
    gradient must have no other reader. It takes the product's place when
    the pre-activation is defined before the product (the forward's: the
    product's operands then die as early as before), else the last op's.

    A GPU GEMM applies the GELU (cuBLASLt's GELU_AUX_BIAS epilogue,
    writing the pre-activation beside it; 16-bit tanh GELUs) or multiplies
    by its derivative (DGELU, reading the pre-activation; bf16 tanh GELUs)
    to each tile in registers: where the ops wrote the product, then read it back
    and wrote the result. On the CPU the results are bit for bit the ops'.
    Every op of a match must have the same discardable attributes (a
    recompute clone's mark), which the fused op keeps.

    Runs in the lower phase after trainc-fuse-bias (which makes the
    dot_general_bias) and before trainc-widen-products and
    trainc-fuse-elementwise (which would make the cotangent's product f32
    or take the gelu and its gradient into loops); the fused ops have no
    gradient rule. `trainc --fuse-gelu=false` leaves it out.

    Example:
    ```mlir
    %p = graph.dot_general_bias %x, %w, %b, batching_dims = [] x [],
        contracting_dims = [1] x [1]
        : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>)
        -> tensor<4x16xbf16>
    %h = graph.gelu %p, approximation = tanh : tensor<4x16xbf16>
    %q = graph.dot_general %dy, %v, batching_dims = [] x [],
        contracting_dims = [1] x [0]
        : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
    %d = graph.gelu_grad %p, %q, approximation = tanh : tensor<4x16xbf16>
    // becomes
    %h, %p = graph.dot_general_bias_gelu %x, %w, %b, batching_dims = [] x [],
        contracting_dims = [1] x [1], approximation = tanh
        : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>)
        -> (tensor<4x16xbf16>, tensor<4x16xbf16>)
    %d = graph.dot_general_gelu_grad %dy, %v, %p, batching_dims = [] x [],
        contracting_dims = [1] x [0], approximation = tanh
        : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4x16xbf16>)
        -> tensor<4x16xbf16>
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def PadClasses : Pass<"trainc-pad-classes", "mlir::func::FuncOp"> {
  let summary = "Pad a loss's class dimension to a multiple for its matmuls";
  let description = [{
    A language model's vocabulary (GPT-2's 50,257) makes the logits' rows
    an odd number of elements: the matmuls that write and read them (the
    logits, the hidden states' gradient, the embedding's gradient) then
    lose their vectorized, aligned GPU kernels (a 16-bit row must start on
    16 bytes), and a GPU step spends more time in those three than in all
    the others. This pass pads the class dimension to a multiple of
    `multiple` where that adds at most 1/32 of the classes:

    - the weight whose rows (or columns) make the classes gets zero rows
      (a `graph.concatenate` with a splat constant) and the logits' matmul
      reads it, so the logits have the padded size;
    - the `graph.softmax_cross_entropy` ops and their gradients get
      `classes` (the real count): they never read the padding, the
      gradient writes 0 there, and a target in the padding is still out of
      range;
    - the gradient's matmuls read the padded gradient: one that contracts
      the classes does so with the padded weight (the added terms are
      zero), one that keeps them (the weight's gradient) gets a
      `graph.slice` of its real rows.

    The loss is the unpadded program's bit for bit, and so are the
    gradients up to the grouping of one sum: the hidden states' gradient
    contracts the padded classes, whose terms are zero, and a GEMM may
    group a longer contraction's sums differently (on this CPU's BLAS:
    never at 1,001 classes padded to 1,024, in the last bit of some
    elements at 50,257 padded to 50,304), so training can drift from the
    unpadded program's by rounding. It applies only to a training step
    (an inference program's one matmul would copy the whole weight on every
    run for little), only where the logits (through reshapes that keep the
    classes last) come from a `graph.dot_general` read by nothing but
    cross-entropy ops, whose gradients nothing but `graph.dot_general`
    reads, and not to a head with a bias (`trainc-fuse-bias` has made it a
    `graph.dot_general_bias`); anything else keeps its shapes. A weight
    several losses read (one per micro-batch) is padded once. The step's
    FLOP count includes the padded classes' work.

    Runs in the lower phase after `trainc-widen-products` (so the weight's
    gradient keeps its f32 result) and before `trainc-fuse-elementwise`.
    `trainc --pad-classes=N` sets `multiple` (default 64; 0 or 1: off).

    Example (1,001 classes padded to 1,024):
    ```mlir
    %logits = graph.dot_general %h, %w, batching_dims = [] x [],
        contracting_dims = [1] x [1]
        : (tensor<8x64xf32>, tensor<1001x64xf32>) -> tensor<8x1001xf32>
    %loss = graph.softmax_cross_entropy %logits, %t, reduction = mean
        : (tensor<8x1001xf32>, tensor<8xi64>) -> tensor<f32>
    // becomes
    %zeros = graph.constant dense<0.0> : tensor<23x64xf32>
    %wp = graph.concatenate(%w, %zeros), dim = 0
        : (tensor<1001x64xf32>, tensor<23x64xf32>) -> tensor<1024x64xf32>
    %logits = graph.dot_general %h, %wp, batching_dims = [] x [],
        contracting_dims = [1] x [1]
        : (tensor<8x64xf32>, tensor<1024x64xf32>) -> tensor<8x1024xf32>
    %loss = graph.softmax_cross_entropy %logits, %t, reduction = mean
        {classes = 1001 : i64} : (tensor<8x1024xf32>, tensor<8xi64>)
        -> tensor<f32>
    ```
  }];
  let options = [
    Option<"multiple", "multiple", "int64_t", "64",
           "pad the classes to a multiple of this (0 or 1: off)">,
  ];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def ReadQkvInPlace : Pass<"trainc-read-qkv-in-place", "mlir::func::FuncOp"> {
  let summary = "Attention reads query, key and value from their fused projection";
  let description = [{
    GPT-2 and many exports make query, key and value with one matmul
    (`c_attn`) whose [..., (Hq + 2 Hk) D] result is sliced three ways,
    each slice reshaped into sequence-major heads [B, S, H, D]: three
    copies per layer, and in the backward pass a fourth, the three
    gradients concatenated into the projection's. Where a
    `graph.attention` or `graph.attention_grad` (after
    `trainc-absorb-transposes`: query, key and value sequence-major) reads
    three such slices of one value, in order and covering its last
    dimension, it reads them in place instead: its query, key and value
    all become one `graph.reshape` of that value to [B, S, Hq + 2 Hk, D]
    (free: same memory), and `qkv_heads = [Hq, Hk]` says which heads are
    whose (graph.attention's C11). The slices go when nothing else reads
    them. Where the gradient's three results are each reshaped back to
    [..., H D] and only concatenated, in order, along the last dimension,
    `graph.attention_grad` writes them in their windows of one result
    instead (C6), and its reshape replaces the concatenation. The kernels
    read and write the same elements: the same bits.

    Runs in the lower phase after the partition (a tensor-parallel
    program splits the fused projection per slice first, and the op then
    has no sharding factors) and after `trainc-absorb-transposes`.

    Example:
    ```mlir
    %q = graph.slice %qkv, start = [0, 0, 0], limit = [2, 8, 64] ...
    %q4 = graph.reshape %q : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
    // ... %k4 and %v4 from [64, 128) and [128, 192)
    %o = graph.attention %q4, %k4, %v4, scale = 0.25, causal
           {seq_major = array<i64: 0, 1, 2, 3>} ...
    // becomes
    %view = graph.reshape %qkv : (tensor<2x8x192xf32>) -> tensor<2x8x12x16xf32>
    %o = graph.attention %view, %view, %view, scale = 0.25, causal
           {qkv_heads = array<i64: 4, 4>, seq_major = array<i64: 0, 1, 2, 3>} ...
    // and the gradient, whose reshaped results a concatenate joined:
    %d = graph.attention_grad %view, %view, %view, %g, scale = 0.25, causal
           {qkv_heads = array<i64: 4, 4>, seq_major = array<i64: 0, 1, 2, 3, 4, 5, 6>}
           ... -> tensor<2x8x12x16xf32>
    %dqkv = graph.reshape %d : (tensor<2x8x12x16xf32>) -> tensor<2x8x192xf32>
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def FuseNormGrad : Pass<"trainc-fuse-norm-grad", "mlir::func::FuncOp"> {
  let summary = "A norm's scale and bias gradients summed inside norm_grad";
  let description = [{
    The norms' gradient rule gives the scale's gradient as
    `reduce_sum(mul(g, xhat))` over the leading dims, `xhat` being
    `graph.norm_grad`'s `normalized` result, and the bias's as
    `reduce_sum(g)`. Where `xhat` has that one use (the product either
    way round, the product only that sum), the three ops, and a
    `reduce_sum` of `g` over the same dims when there is one, become one
    `graph.norm_grad_params`: its kernel sums the products while the row
    is in cache, where the unfused ops wrote `xhat` and the product (each
    of the input's size) and read them back. f32 and f64 only (the ops
    `graph.norm_grad_params` takes); the sums' results must have the
    scale's type (not a widened sum) and every op the same discardable
    attributes (a recompute clone's mark), which the fused op keeps. Its
    sums have `graph.reduce_sum`'s accuracy in their own fixed order, so
    the last bit of a gradient may differ from the unfused ops'.

    Then, with `residual-grad` (`trainc --fuse-residual-grad`, default
    true), the gradient of a residual stream is summed where the norm
    writes its own: a `graph.add` that is `input_grad`'s one use, of an f32
    or f64 value defined before the norm's op (the gradient flowing past
    the block), becomes the op's `addend`, and a `graph.convert` of
    `input_grad` (the sum, when an add was taken) to bf16 or f16 becomes
    its `narrowed_input_grad` (the copy the block's 16-bit matmuls read).
    The add and the convert must carry the op's discardable attributes. In
    a pre-norm transformer's backward pass that takes each block's two
    adds and converts of the residual stream's gradient (read twice and
    written twice, f32, the size of the activations) into its two norms'
    gradients; the results are the same bits.

    Runs in the lower phase after differentiation and the partition (the
    fused op has no gradient rule and no sharding factors), before
    `trainc-fuse-elementwise` (which would take the product, the add and
    the convert into loops).

    Example:
    ```mlir
    %dx, %xhat = graph.norm_grad %x scale %s, %g, axis = 1,
        epsilon = 1.0e-05, centered = true
        : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>)
        -> (tensor<4x8xf32>, tensor<4x8xf32>)
    %p = graph.mul %g, %xhat : tensor<4x8xf32>
    %ds = graph.reduce_sum %p, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
    %db = graph.reduce_sum %g, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
    // becomes
    %dx, %ds, %db = graph.norm_grad_params %x scale %s, %g, axis = 1,
        epsilon = 1.0e-05, centered = true {with_bias_grad}
        : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>)
        -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
    // and with %r, the residual stream's gradient (defined before):
    %sum = graph.add %r, %dx : tensor<4x8xf32>
    %sum16 = graph.convert %sum : (tensor<4x8xf32>) -> tensor<4x8xbf16>
    // becomes
    %sum, %ds, %db, %sum16 = graph.norm_grad_params %x scale %s, %g
        addend %r, axis = 1, epsilon = 1.0e-05, centered = true
        {narrowed_type = bf16, with_bias_grad}
        : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
        -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xbf16>)
    ```
  }];
  let options = [
    Option<"residualGrad", "residual-grad", "bool", "true",
           "Fold the add of a residual stream's gradient and its 16-bit "
           "copy into norm_grad_params">,
  ];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def FuseBiasGrad : Pass<"trainc-fuse-bias-grad", "mlir::func::FuncOp"> {
  let summary = "A bias gradient summed by its weight gradient's matmul";
  let description = [{
    `graph.reduce_sum(dy)` over exactly the dimensions that a
    `graph.dot_general` with no batching dimensions contracts `dy` over
    (as lhs or rhs) becomes, with that product, one
    `graph.dot_general_bias_grad`: a linear layer's weight gradient
    (`dy^T x` or `x^T dy`) and its bias gradient (`dy` summed over the
    rows) from one instruction, which on a GPU is one GEMM with cuBLASLt's
    bias-gradient epilogue instead of a GEMM and a reduction kernel
    reading `dy` again. The results are the two ops' bits (the CPU runs
    both computations as the ops would; the GPU's epilogue sums in its own
    order). A widened sum (an f32 result of a 16-bit `dy`, from
    `trainc-widen-products`) keeps f32 (`f32_sum`). Both ops must carry
    the same discardable attributes (a recompute clone's mark), which the
    fused op keeps. It takes the product's place when the sum's users all
    follow it, else the sum's when the product's operands are defined
    before it and its users follow; otherwise the two stay. A convert of
    the sum between the two (an f16 sum widened for its f32 bias) first
    moves to just after the product when its users follow the product.

    Runs in the lower phase after `trainc-widen-products` (whose widened
    products and sums it keeps), after differentiation and the partition
    (the fused op has no gradient rule and no sharding factors).
    `trainc --fuse-bias-grad=false` leaves it out.

    Example:
    ```mlir
    %dw = graph.dot_general %dy, %x, batching_dims = [] x [],
        contracting_dims = [0] x [0] {f32_result}
        : (tensor<4x8xbf16>, tensor<4x16xbf16>) -> tensor<8x16xf32>
    %db = graph.reduce_sum %dy, dims = [0] : (tensor<4x8xbf16>) -> tensor<8xf32>
    // becomes
    %dw, %db = graph.dot_general_bias_grad %dy, %x, batching_dims = [] x [],
        contracting_dims = [0] x [0] {f32_result, f32_sum}
        : (tensor<4x8xbf16>, tensor<4x16xbf16>)
        -> (tensor<8x16xf32>, tensor<8xf32>)
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def AttentionStats : Pass<"trainc-attention-stats", "mlir::func::FuncOp"> {
  let summary = "Attention's gradient reads its forward's result and "
                "log-sum-exps";
  let description = [{
    A `graph.attention_grad` whose forward `graph.attention` (operands
    holding the same values: the same SSA values, or ops of one name and
    attributes over such operands, as a mask recomputed for the gradient
    and the forward pass's; the same attributes and layouts, its result
    stored as the cotangent) is in its block before it reads that
    forward's result and the
    log-sum-exps of its score rows (`stats`; the forward gets `with_lse`).
    Without them the gradient remakes the softmax's statistics: trainc's
    kernels sweep every key once more per query row, and cuDNN's backward
    runs the whole forward again (two of the seven matmuls of a
    FlashAttention-2 step). With them, `P = exp(S - lse)` and
    `D_i = dO_i . O_i` come from what the forward computed anyway, as
    FlashAttention-2 and PyTorch's SDPA do. The cost is memory: `[B, H,
    S]` log-sum-exps per call (f32), and the result kept until the
    gradient, which a transformer keeps anyway for its output projection's
    weight gradient (in a smaller program it may live longer). When several forwards match (a recomputed clone and
    the forward pass's), the last before the gradient is read.

    On the CPU the probabilities are `exp(S - lse)` instead of the
    softmax's `exp(S - max) / sum`: results move by a few units in the
    last place, or, for a row whose largest score dwarfs the log of its
    sum (every key hidden by a finite mask such as -1e9), not at all (see
    compiler/README.md). Runs in the lower phase after the passes that set
    the layouts compared (`trainc-absorb-transposes`,
    `trainc-read-qkv-in-place`) or change a value's bits
    (`trainc-widen-products`), before `trainc-fuse-elementwise`. `trainc
    --attention-stats=false` leaves it out.

    Example:
    ```mlir
    %o = graph.attention %q, %k, %v, scale = 0.125, causal
        : (tensor<2x4x32x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x16xf32>)
        -> tensor<2x4x32x16xf32>
    %dq, %dk, %dv = graph.attention_grad %q, %k, %v, %g, scale = 0.125, causal
        : (...) -> (...)
    // becomes
    %o, %lse = graph.attention %q, %k, %v, scale = 0.125, causal {with_lse}
        : (...) -> (tensor<2x4x32x16xf32>, tensor<2x4x32xf32>)
    %dq, %dk, %dv = graph.attention_grad %q, %k, %v, %g stats(%o, %lse),
        scale = 0.125, causal : (...) -> (...)
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def FuseLossGrad : Pass<"trainc-fuse-loss-grad", "mlir::func::FuncOp"> {
  let summary = "A cross-entropy loss and its logits gradient as one op";
  let description = [{
    A `graph.softmax_cross_entropy` and a `graph.softmax_cross_entropy_grad`
    of the same logits, targets and `classes` become one
    `graph.softmax_cross_entropy_and_grad`: the loss and the logits'
    gradient from one reading of the logits, which a training step's
    vocabulary makes the largest tensor of a language model (GPT-2 at
    8 x 1,024 positions: 50,304 classes, 824 MB in bf16). The loss op
    read each row twice (max, sum of exps) and the gradient three times
    (max, sum, then each probability); the fused op three times, the row's
    max and sum serving both results. The gradient keeps its bits; the
    loss takes the gradient's sum of exps, whose order differs from the
    loss op's, so in f32 it may move by a few units in the last place
    (nothing reads it but the step's outputs). Both ops must carry the
    same discardable attributes, which the fused op keeps. It takes the
    gradient's place when every user of the loss follows it (a step's
    loss feeds only its outputs), else the loss's when the gradient's
    weight is defined by then and no other op reads the logits between
    the two (the gradient would then lose the logits' memory: a second
    logits-sized buffer); otherwise the two stay.

    Runs in the lower phase after `trainc-pad-classes` (which pads the
    pair), after differentiation and the partition (the fused op has no
    gradient rule and no sharding factors). `trainc --fuse-loss-grad=false`
    leaves it out.

    Example:
    ```mlir
    %loss = graph.softmax_cross_entropy %logits, %t, reduction = mean
        : (tensor<8x128xbf16>, tensor<8xi64>) -> tensor<f32>
    %dlogits = graph.softmax_cross_entropy_grad %logits, %t, %w
        : (tensor<8x128xbf16>, tensor<8xi64>, tensor<8xf32>) -> tensor<8x128xbf16>
    // becomes
    %loss, %dlogits = graph.softmax_cross_entropy_and_grad %logits, %t, %w,
        reduction = mean
        : (tensor<8x128xbf16>, tensor<8xi64>, tensor<8xf32>)
        -> (tensor<f32>, tensor<8x128xbf16>)
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def WidenProducts : Pass<"trainc-widen-products", "mlir::func::FuncOp"> {
  let summary = "A 16-bit product that is only widened to f32 is made in f32";
  let description = [{
    `graph.convert(dot_general(a, b) : bf16|f16) -> f32`, where the
    convert is the product's only use, becomes `dot_general(a, b)
    {f32_result} -> f32`: the f32 sums are kept instead of being rounded
    to 16 bits and widened back. Mixed precision makes such products
    wherever a 16-bit GEMM feeds f32 math: the weight gradients the f32
    optimizer reads (Megatron's weight gradients accumulated in f32 do the
    same), the input gradients that reach an f32 norm gradient, and
    forward products added into an f32 residual stream. One kernel and one
    rounding fewer each; the result is closer to the exact product, not
    bit for bit the unfused pair's.
    Not a product whose widened value is read only by elementwise ops other
    than add and sub (a GELU gradient, a gated unit's multiply, an
    activation): trainc-fuse-elementwise fuses the convert into their loop,
    which then reads the 16-bit product, half the bytes of an f32 one in
    the kernel that writes it and in the one that reads it. In GPT-2's
    backward pass at batch 8 that is 100 MB per layer (PyTorch's autocast
    rounds these products to 16 bits too).
    Likewise `graph.convert(reduce_sum(x : bf16)) -> f32`, the sum's only
    use: the sum gives f32 itself (reduce_sum's C3), as a bias gradient
    summed over rows for an f32 bias. Not f16 sums: there a loss-scaled
    backward pass overflows first, and fp16 keeps GradScaler's (PyTorch's)
    overflow decisions.
    The widened product takes the product's place (the schedule's order)
    and keeps its discardable attributes (a recompute clone's mark) when
    the convert has the same.

    Runs in the lower phase, after differentiation (which makes these
    products) and after trainc-fuse-bias (whose fused op has no f32 form).

    Example:
    ```mlir
    %p = graph.dot_general %dy, %x, batching_dims = [] x [],
        contracting_dims = [0] x [0]
        : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> tensor<16x4xbf16>
    %g = graph.convert %p : (tensor<16x4xbf16>) -> tensor<16x4xf32>
    // becomes
    %g = graph.dot_general %dy, %x, batching_dims = [] x [],
        contracting_dims = [0] x [0] {f32_result}
        : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> tensor<16x4xf32>
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def FuseElementwise : Pass<"trainc-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Chains of elementwise ops become one loop (graph.fused_elementwise)";
  let description = [{
    First, a `graph.layer_norm` or `graph.rms_norm` of an f32 input whose
    only use is a `graph.convert` to bf16 or f16 (the copy a 16-bit matmul
    reads under mixed precision) writes that type itself: the kernel
    rounds its f32 result once, as the convert did, so the bits are the
    same, and the f32 result is never stored (one instruction and one f32
    activation's traffic fewer per norm).

    Then it groups elementwise ops of one shape that feed each other into
    `graph.fused_elementwise` ops: one pass over memory (one kernel launch
    on a GPU) where each op took one, and the values only the group uses
    are never stored. The ops that fuse are the float and i1 elementwise
    ops (`neg` ... `sin`, `add` ... `min`, `compare`, `select`, `convert`)
    and `gelu` and `gelu_grad`; and on i32, i64, ui32 and ui64 (with i1)
    `neg`, `abs`, `add`, `sub`, `mul`, `max`, `min`, `compare`, `select`,
    `convert` and the bitwise ops (jax.random's threefry: about 150 ops
    per draw become a few loops), not integer division, which may fault.
    A group computes on floats or on integers, never both (the op's C5):
    a convert between them, and a `bitcast`, stay outside. A
    `broadcast_in_dim` into a group's shape (with increasing dims, read
    through at most 6 strides: a value of rank 2 or less always is)
    becomes an operand the loop reads in place
    (`operand_dims`; a 0-d value, a per-channel scale of a batch norm, a
    bias), so the expanded copy is never stored; a splat constant of the
    group's shape (ReLU's zeros) becomes a 0-d one. Each op in the body
    rounds as it did alone, so results are the unfused program's bits.

    Ops join in program order. An op joins the groups of the operands it
    takes from ops of its shape (and with its discardable attributes, such
    as a recompute clone's mark) when no op outside the group uses a
    member's value before it: the fused op takes the place of its last
    member, so every other use of a member's value must come after that.
    Nor when that would hold more memory: moving a group's loop from its
    last member to a later op keeps alive until then the operands that
    would have died before it, and frees the group's results there; the
    group joins only when the first are no more bytes than the second (or
    nothing that holds memory lies between: only constants, and broadcasts
    the loop will read in place, such as a select's splat zeros), so a
    forward op whose value only the backward pass reads does not keep its
    operands through the step. A dead op
    stays as it is.
    A value used outside the group is a result of the fused op; the
    others live only in registers. A group stays within the executable's
    limits (kFusedMaxInputs operands, kFusedMaxSteps ops,
    kFusedMaxResults results, runtime/schema/ExecutableFormat.h). A group
    of one op stays that op, unless it absorbs a broadcast used nowhere
    else.

    Then the casts of the parameters (`graph.convert` of a `train.param`
    argument: the f32 master weights to the 16-bit copies the matmuls
    read), each pair of element types, become one `graph.convert_group` at
    the first cast's place: a launch per 32 tensors where each cast took
    one. A cast joins only if its copy is read again after the group's
    last cast (as the backward pass reads a weight), so every copy in the
    group is alive there anyway and the group only makes them earlier;
    copies read only nearby (a bias, a frozen layer, an inference
    program) keep their own casts, but for small ones (biases) read after
    the group's place, which join while they add at most 1/64 of the
    group's bytes. Not when blocks are recomputed: then
    the clones cast again in the backward pass and the forward copies die
    early.

    Runs last in the lower phase (after trainc-fuse-bias and
    trainc-widen-products, whose patterns include converts), before the
    memory plan, which gives each fused op's results their buffers (a
    result may take the memory of an operand of its type). Off with
    `trainc --fuse-elementwise=false`.

    Example:
    ```mlir
    %w = graph.convert %h : (tensor<8x64xbf16>) -> tensor<8x64xf32>
    %s = graph.add %r, %w : tensor<8x64xf32>
    // becomes
    %s = graph.fused_elementwise %r, %h
        : (tensor<8x64xf32>, tensor<8x64xbf16>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<f32>, %b: tensor<bf16>):
      %0 = graph.convert %b : (tensor<bf16>) -> tensor<f32>
      %1 = graph.add %a, %0 : tensor<f32>
      graph.yield %1 : tensor<f32>
    }
    ```
  }];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def Schedule : Pass<"trainc-schedule", "mlir::ModuleOp"> {
  let summary = "Collectives as start/done pairs that overlap with compute";
  let description = [{
    Input: `@main` of a program for a mesh (after the partition, optimizer
    and recompute phases), in program order. With `overlap` (the default),
    every `graph.all_reduce`, `graph.reduce_scatter` and `graph.all_gather`
    becomes a `*_start` where it was and a `graph.collective_done` as late
    as its value allows, so the ops in between run while the ranks
    communicate:

    - the ops that only move or scale a collective's result (the divide by
      the number of ranks, slices and reshapes back to each gradient, the
      padding, `graph.shard_slice`) first sink to just before their first
      user, so that the done waits until a value is truly needed: the
      gradient buckets of the backward pass complete behind the rest of the
      backward pass, and are waited for by the optimizer;
    - ZeRO-3's parameter gathers are prefetched: each gather starts right
      after the previous gather's done, one gather ahead of its use, so at
      most two gathered parameters are in flight.

    Every rank runs the same program, so every rank starts and ends the same
    collectives in the same order. The memory plan counts each pending
    buffer from its start to its done, and keeps the start's operand
    unchanged until then (the done reads it). `overlap=false` leaves the
    collectives synchronous (a rank waits for each where it is issued): the
    baseline the benchmark compares against.
  }];
  let options = [
    Option<"overlap", "overlap", "bool", "true",
           "Start collectives early and wait for them late (false: each "
           "collective completes where it is issued)">,
  ];
  let dependentDialects = ["trainc::graph::GraphDialect"];
}

def Lower : Pass<"trainc-lower", "mlir::ModuleOp"> {
  let summary = "Check that @main is in instruction form";
  let description = [{
    The executable's instruction-level form is the graph dialect itself,
    one op per instruction: every op of `@main` but `graph.constant` (data
    in the constant section) must be the graph op of an opcode of the
    executable schema (runtime/schema/executable.fbs; the opcode of the
    same name), and every value a supported element type. This pass checks
    that, after the earlier phases (and transpose absorption) ran, so an op
    that cannot be executed is an error here, naming the op and its
    location, and not in the serializer.
  }];
}

def PlanMemory : Pass<"trainc-plan-memory", "mlir::ModuleOp"> {
  let summary = "Liveness and static offsets of every buffer of @main";
  let description = [{
    Input: `@main` in instruction form (`trainc-lower`), its ops in program
    order. Output: the same IR with the static memory plan as attributes.
    Two arenas: 0 "state" (parameters then optimizer state, packed in
    argument order, persistent) and 1 "work" (everything else).

    - Liveness (LivenessAnalysis) is in program order: an op's results live
      from the op to their last reader; inputs for the whole program (a
      session may run again without binding them); outputs to the end.
    - In place: a new parameter or state value (`train.update`) is written
      straight into its target when nothing reads the target later, or when
      the op that makes it overwrites that very operand element by element
      (an op's InPlaceOpInterface, e.g. `graph.adamw_update`). An
      elementwise result (`Elementwise` trait) takes the buffer of a same-
      sized operand that dies at that op; a reshape of a work-arena value
      shares its operand's bytes and is marked `plan.alias` (no
      instruction), and so does a reshape of a parameter (or of such a
      view: it reads the parameter's bytes in the state arena, and the
      parameter's update goes in place only when no view of it is read
      after the op that makes it; nothing writes a view) and a slice whose result is its operand's
      first elements in order (starts 0, strides 1, whole dimensions after
      the first one it shortens, dimensions of one before it: the padded
      classes' gradient cut back to the vocabulary), at the operand's
      first bytes.
    - Groups of shared buffers are placed greedily, largest first, at the
      lowest aligned offset that overlaps no group alive at the same time.

    Attributes written: `plan.arenas`/`plan.offsets` (one entry per result)
    on each op; `plan.offset` on each argument that is not a constant and on
    each result that needs its own output buffer (a returned argument,
    constant or repeated value: the serializer copies it there);
    `plan.alias` on aliasing reshapes and slices; on `@main`, `plan.arena_sizes`
    (state, work) and `plan.peak` (parameters, persistent_state,
    activations, peak, activations_without_reuse; bytes).
  }];
}

#endif // TRAINC_COMPILER_PASSES_TD
