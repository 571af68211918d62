//===- GraphBuilders.h - Compositions of graph ops ----------------*- C++
//-*-===//
//
// Values that take several graph ops to build and that more than one
// component builds (both frontends today), written once.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHBUILDERS_H
#define TRAINC_DIALECT_GRAPH_GRAPHBUILDERS_H

#include "mlir/IR/Builders.h"

#include <optional>

namespace trainc::graph {

/// data[p with p[axis] replaced by positions[p]] for every index p of
/// `positions` (i64 in [0, n) along `axis`; data's rank, each dimension at
/// most data's): numpy's take_along_axis, ONNX's GatherElements, a sort's
/// values from its order. A graph.gather of the flattened data at linear
/// positions built from iotas, so autodiff and the runtime need nothing
/// beyond graph.gather.
mlir::Value buildTakeAlongAxis(mlir::OpBuilder &builder, mlir::Location loc,
                               mlir::Value data, mlir::Value positions,
                               int64_t axis);

/// x with each dimension d padded: interior[d] copies of `fill` (a rank-0
/// tensor of x's element type) between neighbours, then low[d] and
/// high[d] at the ends; a negative low or high removes that many from that
/// end of the padded sequence (into the other end's padding if it must).
/// The caller keeps every padded size at least 0.
mlir::Value buildPad(mlir::OpBuilder &builder, mlir::Location loc,
                     mlir::Value x, mlir::Value fill,
                     llvm::ArrayRef<int64_t> low, llvm::ArrayRef<int64_t> high,
                     llvm::ArrayRef<int64_t> interior);

/// x with the dimensions `dims` reversed (a gather of constant positions
/// along each).
mlir::Value buildReverse(mlir::OpBuilder &builder, mlir::Location loc,
                         mlir::Value x, llvm::ArrayRef<int64_t> dims);

/// A convolution's window: one entry per spatial dimension in each list.
/// Padding is added after the input dilation, and may be negative (rows
/// removed). With batchGroups > 1 (StableHLO's batch_group_count, which
/// needs featureGroups = 1), the batch splits into that many groups and
/// each group of output features reads one of them.
struct ConvolutionWindow {
  llvm::SmallVector<int64_t> strides, padLow, padHigh, inputDilation,
      kernelDilation;
  int64_t featureGroups = 1, batchGroups = 1;
};

/// The output's spatial sizes for inputs of spatial sizes `input` and a
/// kernel of `kernel` under `window`: 0 where the dilated, padded input is
/// smaller than the dilated kernel (XLA's shape), std::nullopt for an
/// empty kernel dimension.
std::optional<llvm::SmallVector<int64_t>>
convolutionOutputSizes(llvm::ArrayRef<int64_t> input,
                       llvm::ArrayRef<int64_t> kernel,
                       const ConvolutionWindow &window);

/// The convolution of x [N, C, S...] by w [O, C / featureGroups, K...]
/// (float types, channels first): [N / batchGroups, O, out...], built
/// from graph ops as im2col: graph.extract_patches' [C, K, N, P] contracted
/// with w by one graph.dot_general batched over the groups (with batch
/// groups, one strided slice of the padded input per kernel position,
/// joined into [N, C, K, P] patches). Non-overlapping patches (strides
/// equal to the kernel, no padding or dilation, one group) take a reshape
/// and a transpose instead. A result with an empty
/// dimension is a constant. The caller checks the shapes
/// (convolutionOutputSizes has a value, channels and groups dividing).
mlir::Value buildConvolution(mlir::OpBuilder &builder, mlir::Location loc,
                             mlir::Value x, mlir::Value w,
                             const ConvolutionWindow &window);

/// A window reduction's window: one entry per dimension of the input in
/// each list (two padding lists). The input is dilated by baseDilation and
/// padded (negative padding removes) with the fill value first.
struct WindowReduction {
  llvm::SmallVector<int64_t> sizes, strides, windowDilation, baseDilation,
      padLow, padHigh;
};
enum class WindowCombiner { Add, Mul, Max, Min };

/// The output's sizes: 0 where a window is larger than the dilated, padded
/// input, std::nullopt for an empty window dimension.
std::optional<llvm::SmallVector<int64_t>>
windowReductionSizes(llvm::ArrayRef<int64_t> input,
                     const WindowReduction &window);

/// Each window of x (any rank, any number type) combined in row-major
/// window order: sums, products, or the maximum or minimum, where ties keep
/// the first and a NaN wins, the last one (so autodiff sends a window's
/// gradient to its first maximum, as PyTorch's max pooling does). Padding and
/// dilation hold `fill`, a rank-0 tensor of x's element type. A float maximum
/// over 1 to 3 dimensions reads its windows as graph.extract_patches, with the
/// same ties and NaN (a maximum of -0 comes out +0). The caller checks
/// windowReductionSizes has a value.
mlir::Value buildWindowReduce(mlir::OpBuilder &builder, mlir::Location loc,
                              mlir::Value x, const WindowReduction &window,
                              WindowCombiner combiner, mlir::Value fill);

} // namespace trainc::graph

#endif // TRAINC_DIALECT_GRAPH_GRAPHBUILDERS_H
