//===- Partition.h - The device mesh and its strategies --------*- C++ -*-===//
//
// The partition phase (Partition in Passes.td): the per-rank program of a
// device mesh. The CLI and the pass read --mesh with parseMesh, so the
// option has one syntax and one set of messages.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_PARTITION_H
#define TRAINC_COMPILER_PARTITION_H

#include "trainc/Dialect/Graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace trainc {

/// Parses the partition pass's `mesh`: comma-separated `axis=size` entries
/// over the axes data and tensor ("" or an absent axis: size 1). On
/// failure returns none and sets `error` to a message that quotes `text`.
std::optional<graph::Mesh> parseMesh(llvm::StringRef text, std::string &error);

/// ZeRO's split: a tensor of type `whole` (rank >= 1) split along dimension
/// 0 into `ranks` parts of ceil(d0 / ranks) rows. The type of one part.
mlir::RankedTensorType zeroPartType(mlir::RankedTensorType whole,
                                    int64_t ranks);

/// `v` with zeros appended along dimension `dim` up to `size` (a
/// graph.concatenate with a splat constant; `v` itself when it has `size`).
mlir::Value padWithZeros(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                         int64_t dim, int64_t size);

/// `v` with zero rows appended up to `ranks` whole parts (zeroPartType).
mlir::Value padToParts(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                       int64_t ranks);

/// The whole tensor of type `whole` from this rank's part `part` (of
/// zeroPartType(whole, size of `axis`)): its parts gathered over `axis`
/// (graph.all_gather) and the padding dropped.
mlir::Value gatherParts(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value part, mlir::RankedTensorType whole,
                        llvm::StringRef axis);

/// The attributes that mark a value as this rank's part of a tensor of
/// type `whole` split along dimension `dim` over `axis`: graph.sharding
/// and graph.global_shape.
llvm::SmallVector<mlir::NamedAttribute, 2>
partAttributes(mlir::RankedTensorType whole, llvm::StringRef axis,
               int64_t dim = 0);

/// Where `sharding` (a graph.sharding array) splits a value: the first
/// dimension that names an axis, and the axis; -1 and "" when whole.
std::pair<int64_t, llvm::StringRef> splitOf(mlir::ArrayAttr sharding);

/// Splits the computation of `fn` over mesh axis `axis` of `size` ranks
/// from the `graph.sharding` annotations on its ops (see ShardAxis.cpp):
/// propagation by the ops' sharding rules, then each op rebuilt on this
/// rank's blocks with the collectives that join them. Arguments and
/// results stay whole on the axis, except, with `splitParameters`, each
/// trainable parameter read only as one split whose gradient is made split
/// the same way: it and its gradient become this rank's part. Fails (with
/// an error naming the op) on an annotation that cannot hold.
mlir::LogicalResult shardAlongAxis(mlir::func::FuncOp fn, llvm::StringRef axis,
                                   int64_t size, bool splitParameters);

/// Megatron-style tensor parallelism on the recognized structure of a
/// transformer: annotates each graph.attention's query, key and value to be
/// split by heads, and each MLP hidden activation (a matmul's contracted
/// operand made by elementwise ops from matmuls: GELU, SwiGLU) to be split
/// by features, when `size` divides them. Returns how many values it
/// annotated.
int64_t seedMegatron(mlir::func::FuncOp fn, int64_t size);

} // namespace trainc

#endif // TRAINC_COMPILER_PARTITION_H
