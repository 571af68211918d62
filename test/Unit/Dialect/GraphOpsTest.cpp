//===- GraphOpsTest.cpp - graph ops built from C++ ------------------------===//
//
// What lit cannot reach: result-type inference through the C++ builders
// that passes use, folding through createOrFold, and the cost interface.
//
//===----------------------------------------------------------------------===//

#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace trainc::graph;

namespace {

class GraphOpsTest : public ::testing::Test {
protected:
  GraphOpsTest() : builder(&context) {
    context.loadDialect<GraphDialect, func::FuncDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
  }

  /// A new argument of the function the test builds ops in.
  Value argument(ArrayRef<int64_t> shape, Type elementType) {
    if (!fn) {
      fn = builder.create<func::FuncOp>(builder.getUnknownLoc(), "f",
                                        builder.getFunctionType({}, {}));
      builder.setInsertionPointToStart(fn.addEntryBlock());
    }
    Block &body = fn.getBody().front();
    Value arg = body.addArgument(RankedTensorType::get(shape, elementType),
                                 builder.getUnknownLoc());
    fn.setFunctionType(builder.getFunctionType(body.getArgumentTypes(), {}));
    return arg;
  }

  /// Terminates the function and verifies the whole module.
  bool verifyModule() {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(&fn.getBody().front());
    builder.create<func::ReturnOp>(builder.getUnknownLoc());
    return succeeded(verify(*module));
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type elementType) {
    return RankedTensorType::get(shape, elementType);
  }

  MLIRContext context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
  func::FuncOp fn;
};

TEST_F(GraphOpsTest, DotGeneralInfersBatchThenLhsThenRhsDims) {
  Type f32 = builder.getF32Type();
  Value a = argument({2, 4, 8}, f32), b = argument({2, 8, 16}, f32);
  auto op = builder.create<DotGeneralOp>(
      builder.getUnknownLoc(), a, b, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{0},
      ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1});
  EXPECT_EQ(op.getType(), tensor({2, 4, 16}, f32));
  EXPECT_TRUE(succeeded(verify(op)));
  auto cost = cast<CostOpInterface>(op.getOperation());
  EXPECT_EQ(cost.getFlops(), 2 * 2 * 4 * 16 * 8);
  EXPECT_EQ(cost.getBytesAccessed(), 4 * (2 * 4 * 8 + 2 * 8 * 16 + 2 * 4 * 16));
}

TEST_F(GraphOpsTest, InferenceOfEveryShapeChangingBuilder) {
  Type f32 = builder.getF32Type(), i64 = builder.getI64Type();
  Location loc = builder.getUnknownLoc();
  Value x = argument({4, 8}, f32);
  EXPECT_EQ(
      builder.create<TransposeOp>(loc, x, ArrayRef<int64_t>{1, 0}).getType(),
      tensor({8, 4}, f32));
  EXPECT_EQ(builder.create<ReduceSumOp>(loc, x, ArrayRef<int64_t>{0}).getType(),
            tensor({8}, f32));
  EXPECT_EQ(builder
                .create<SliceOp>(loc, x, ArrayRef<int64_t>{1, 0},
                                 ArrayRef<int64_t>{4, 8},
                                 ArrayRef<int64_t>{2, 3})
                .getType(),
            tensor({2, 3}, f32));
  EXPECT_EQ(builder.create<ConcatenateOp>(loc, ValueRange{x, x}, 1).getType(),
            tensor({4, 16}, f32));
  Value tokens = argument({2, 3}, i64);
  EXPECT_EQ(builder.create<GatherOp>(loc, x, tokens, 0).getType(),
            tensor({2, 3, 8}, f32));
  EXPECT_EQ(
      builder.create<CompareOp>(loc, ComparisonDirection::LT, x, x).getType(),
      tensor({4, 8}, builder.getI1Type()));
  Value logits = argument({2, 3, 5}, f32);
  EXPECT_EQ(builder
                .create<SoftmaxCrossEntropyOp>(
                    loc, logits, tokens, LossReduction::mean, nullptr, nullptr)
                .getType(),
            tensor({}, f32));
  EXPECT_EQ(builder
                .create<SoftmaxCrossEntropyOp>(
                    loc, logits, tokens, LossReduction::none, nullptr, nullptr)
                .getType(),
            tensor({2, 3}, f32));
  Value q = argument({2, 8, 16, 4}, f32), kv = argument({2, 2, 32, 4}, f32);
  auto attn = builder.create<AttentionOp>(loc, q, kv, kv, /*mask=*/Value(),
                                          APFloat(0.5),
                                          /*causal=*/true,
                                          /*softcap=*/nullptr,
                                          /*dropout=*/nullptr, /*seed=*/0,
                                          /*data_seed_stride=*/0,
                                          /*seq_major=*/nullptr,
                                          /*qkv_heads=*/nullptr,
                                          /*with_lse=*/false);
  EXPECT_EQ(attn->getResultTypes(), TypeRange{tensor({2, 8, 16, 4}, f32)});
  // With the log-sum-exps: a second result, one per score row.
  auto kept = builder.create<AttentionOp>(loc, q, kv, kv, /*mask=*/Value(),
                                          APFloat(0.5), /*causal=*/true,
                                          /*softcap=*/nullptr,
                                          /*dropout=*/nullptr, /*seed=*/0,
                                          /*data_seed_stride=*/0,
                                          /*seq_major=*/nullptr,
                                          /*qkv_heads=*/nullptr,
                                          /*with_lse=*/true);
  EXPECT_EQ(kept.getLse().getType(), tensor({2, 8, 16}, f32));
  EXPECT_TRUE(verifyModule());
}

TEST_F(GraphOpsTest, BuilderWithBrokenConstraintReportsItAtTheLocation) {
  Type f32 = builder.getF32Type();
  Value x = argument({4, 8}, f32);
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  SmallVector<Type> types;
  TransposeOp::Properties props;
  props.permutation = builder.getDenseI64ArrayAttr({0, 0});
  TransposeOp::Adaptor withProps(ValueRange{x}, nullptr, props);
  EXPECT_TRUE(failed(TransposeOp::inferReturnTypes(
      &context, builder.getUnknownLoc(), withProps, types)));
  EXPECT_NE(message.find("(C2) permutation dimension 0 is listed twice"),
            std::string::npos)
      << message;
}

TEST_F(GraphOpsTest, CreateOrFoldCollapsesChains) {
  Type f32 = builder.getF32Type();
  Location loc = builder.getUnknownLoc();
  Value x = argument({2, 3, 4}, f32);
  Value t1 = builder.create<TransposeOp>(loc, x, ArrayRef<int64_t>{1, 2, 0});
  Value t2 =
      builder.createOrFold<TransposeOp>(loc, t1, ArrayRef<int64_t>{2, 0, 1});
  EXPECT_EQ(t2, x) << "transpose [2,0,1] undoes [1,2,0]";

  Value n = builder.create<NegOp>(loc, x);
  EXPECT_EQ(builder.createOrFold<NegOp>(loc, n), x);

  // x + (-0.0) folds; x + (+0.0) must not (it maps -0.0 to +0.0).
  auto splat = [&](float v) {
    return builder.create<ConstantOp>(
        loc, DenseElementsAttr::get(tensor({2, 3, 4}, f32), v));
  };
  EXPECT_EQ(builder.createOrFold<AddOp>(loc, x, splat(-0.0f)), x);
  EXPECT_NE(builder.createOrFold<AddOp>(loc, x, splat(0.0f)), x);
}

TEST_F(GraphOpsTest, ConstantFoldingRoundsToNearestEvenInBf16) {
  Type bf16 = builder.getBF16Type();
  Location loc = builder.getUnknownLoc();
  auto type = tensor({4}, bf16);
  auto splat = [&](double v) {
    APFloat value = FloatAttr::get(bf16, v).getValue();
    return builder.create<ConstantOp>(
        loc, DenseElementsAttr::get(type, ArrayRef<APFloat>(value)));
  };
  auto foldedSum = [&](double a, double b) {
    Value sum = builder.createOrFold<AddOp>(loc, splat(a), splat(b));
    auto folded = sum.getDefiningOp<ConstantOp>();
    EXPECT_TRUE(folded) << "add of two splats did not fold";
    return cast<DenseElementsAttr>(folded.getValue()).getSplatValue<APFloat>();
  };
  // bf16 has 8 bits of precision: near 1 the spacing is 2^-7. Adding half a
  // spacing is a tie, resolved toward the even neighbour: down from 1 ...
  EXPECT_TRUE(foldedSum(1.0, 0x1p-8).isExactlyValue(1.0));
  // ... and up from 1 + 2^-7 (odd last bit) to 1 + 2^-6.
  EXPECT_TRUE(foldedSum(1.0 + 0x1p-7, 0x1p-8).isExactlyValue(1.0 + 0x1p-6));
  // Not a tie: 1 + 3 * 2^-9 is nearer 1 + 2^-7.
  EXPECT_TRUE(foldedSum(1.0, 3 * 0x1p-9).isExactlyValue(1.0 + 0x1p-7));
}

} // namespace
