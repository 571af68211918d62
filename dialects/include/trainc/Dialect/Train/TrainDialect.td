//===- TrainDialect.td - The training contract -------------*- tablegen -*-===//
//
// The `train` dialect holds what makes a graph-dialect function a training
// step rather than a computation: which arguments are parameters, whether
// they are trained, their initial values, the optimizer state that persists
// across steps (including the step count) and which results are the new
// values of parameters and state. It has no ops: the step itself is graph
// ops in value semantics; these attributes are its contract with the
// runtime (see compiler/README.md for why attributes and not ops).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_TRAIN_TRAINDIALECT_TD
#define TRAINC_DIALECT_TRAIN_TRAINDIALECT_TD

include "mlir/IR/OpBase.td"

def Train_Dialect : Dialect {
  let name = "train";
  let cppNamespace = "::trainc::train";
  let summary = "Parameters, optimizer state and updates of a training step.";
  let description = [{
    Attributes on the arguments and results of the step function (`@main`),
    checked by the dialect:
    - `train.param = "name"`: a model parameter; `train.init` holds its
      initial value (elements of the argument's type); `train.frozen`
      (unit) when it is not trained;
    - `train.state = "name"`: optimizer state (moments, the step count)
      with its initial value in `train.init`;
    - `train.loss_scale` (unit) on the one state argument that is the
      dynamic loss scale (a 0-d f32, fp16 precision): autodiff seeds the
      backward pass with it and divides it out of the gradients, the
      optimizer updates it;
    - `train.update = "name"` on a result: the new value of that parameter
      or state after the step. The runtime makes it the current value for
      the next step (in place when the memory plan allows). The optimizer
      makes those of trained parameters and of its state; the forward pass
      (an importer) may make those of frozen parameters that are running
      statistics (isForwardUpdate).

    The training signature, which the runtime's trainer reads from the
    executable (never from names):
    - `train.loss` (unit) on the one result that is the scalar float loss;
    - `train.grad_of = "name"` on a result: the gradient of the loss with
      respect to parameter `name` (a `train.param` of the function);
    - `train.metric = "kind"` on a scalar result the trainer reports:
      `grad_norm`, `lr`, and, for the precision phase, `loss_scale` and
      `step_skipped`;
    - `train.data = "tokens" | "targets"` on a data input: what a token
      stream feeds it (inferred from the loss by trainc-infer-signature).
    Names are the user's (ONNX initializer names), kept exactly: checkpoints
    and `--freeze` refer to them. Data inputs and named outputs are the
    graph dialect's `graph.input` and `graph.output`.

    On ops:
    - `train.batch_statistic` (unit) on a `graph.reduce_mean` that is a
      statistic of the batch (a batch norm's mean or variance, as the ONNX
      importer's BatchNormalization marks them): with data parallelism, a
      statistic each rank takes of its own part of the batch, which
      `--sync-batch-norm` (trainc-sync-batch-statistics) makes the whole
      batch's;
    - `train.bessel_correction` (unit) on the `graph.mul` of a batch
      variance (such a marked `reduce_mean`) by c / (c - 1), c the
      elements it averages: the unbiased variance a running statistic
      blends (`--unbiased-running-var`). With the statistics taken over N
      ranks, trainc-sync-batch-statistics makes the factor
      N c / (N c - 1).
  }];
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    static constexpr ::llvm::StringLiteral kParamAttr = "train.param";
    static constexpr ::llvm::StringLiteral kInitAttr = "train.init";
    static constexpr ::llvm::StringLiteral kFrozenAttr = "train.frozen";
    static constexpr ::llvm::StringLiteral kStateAttr = "train.state";
    static constexpr ::llvm::StringLiteral kUpdateAttr = "train.update";
    static constexpr ::llvm::StringLiteral kLossAttr = "train.loss";
    static constexpr ::llvm::StringLiteral kGradOfAttr = "train.grad_of";
    static constexpr ::llvm::StringLiteral kMetricAttr = "train.metric";
    static constexpr ::llvm::StringLiteral kDataAttr = "train.data";
    static constexpr ::llvm::StringLiteral kLossScaleAttr = "train.loss_scale";
    static constexpr ::llvm::StringLiteral kBatchStatisticAttr =
        "train.batch_statistic";
    static constexpr ::llvm::StringLiteral kBesselCorrectionAttr =
        "train.bessel_correction";
    /// The values of train.metric and train.data.
    static bool isMetricKind(::llvm::StringRef kind) {
      return kind == "grad_norm" || kind == "lr" || kind == "loss_scale" ||
             kind == "step_skipped";
    }
    static bool isDataKind(::llvm::StringRef kind) {
      return kind == "tokens" || kind == "targets";
    }
    /// The argument (a train.param or train.state) that result `result` of
    /// the function `fn` updates, or none when it is no train.update.
    static std::optional<unsigned> updatedArgument(::mlir::Operation *fn,
                                                   unsigned result);
    /// Whether result `result` of `fn` is an update the forward pass makes
    /// (of a frozen parameter: a BatchNormalization running statistic),
    /// not one the optimizer makes. Data parallelism averages it over the
    /// ranks, gradient accumulation chains it through the micro-batches,
    /// and recomputation treats it as a forward output.
    static bool isForwardUpdate(::mlir::Operation *fn, unsigned result);
  }];
}

#endif // TRAINC_DIALECT_TRAIN_TRAINDIALECT_TD
