//===- GraphDialect.cpp - The graph dialect -------------------------------===//

#include "trainc/Dialect/Graph/GraphDialect.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "Gradients/GradientRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace trainc::graph;

#include "trainc/Dialect/Graph/GraphDialect.cpp.inc"
#include "trainc/Dialect/Graph/GraphEnums.cpp.inc"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#define GET_TYPEDEF_CLASSES
#include "trainc/Dialect/Graph/GraphTypes.cpp.inc"

unsigned trainc::graph::elementStorageBytes(Type type) {
  if (!type.isIntOrFloat())
    return 1; // f4E2M1FN, f8E8M0FNU
  unsigned bits = type.getIntOrFloatBitWidth();
  return bits < 8 ? 1 : bits / 8;
}

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "trainc/Dialect/Graph/GraphOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "trainc/Dialect/Graph/GraphTypes.cpp.inc"
      >();
  // Known gradients: the VJP rules, by op family (Gradients/).
  attachElementwiseGradients(*getContext());
  attachDataMovementGradients(*getContext());
  attachCompositeGradients(*getContext());
}

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}

/// Checks that `attr` holds a non-empty string.
static LogicalResult verifyNameAttr(Operation *op, NamedAttribute attr,
                                    StringRef where) {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "'" << attr.getName().getValue() << "' on "
                           << where << " must be a non-empty string";
  return success();
}

int64_t Mesh::numRanks() const {
  int64_t n = 1;
  for (auto [name, size] : axes)
    n *= size;
  return n;
}

int64_t Mesh::size(StringRef name) const {
  int index = axisIndex(name);
  return index < 0 ? 0 : axes[index].second;
}

int Mesh::axisIndex(StringRef name) const {
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis.first == name)
      return int(i);
  return -1;
}

Mesh trainc::graph::getMesh(Operation *op) {
  Mesh mesh;
  auto module =
      isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  auto attr =
      module ? module->getAttrOfType<DictionaryAttr>(GraphDialect::kMeshAttr)
             : DictionaryAttr();
  for (StringRef name : GraphDialect::meshAxisNames()) {
    auto size = attr ? attr.getAs<IntegerAttr>(name) : IntegerAttr();
    mesh.axes.push_back({name, size ? size.getInt() : 1});
  }
  return mesh;
}

static LogicalResult verifySharding(Operation *op, NamedAttribute attr,
                                    Type type, StringRef where);

LogicalResult GraphDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  // On an op: how the partition phase is to split its one result.
  if (attr.getName().getValue() == kShardingAttr)
    return verifySharding(op, attr,
                          op->getNumResults() == 1 ? op->getResult(0).getType()
                                                   : Type(),
                          "an op");
  if (attr.getName().getValue() != kMeshAttr)
    return op->emitError() << "unknown graph attribute '"
                           << attr.getName().getValue() << "'";
  auto mesh = dyn_cast<DictionaryAttr>(attr.getValue());
  if (!isa<ModuleOp>(op) || !mesh)
    return op->emitError() << "'" << kMeshAttr
                           << "' must be a dictionary on a module";
  for (NamedAttribute axis : mesh) {
    if (!llvm::is_contained(meshAxisNames(), axis.getName().getValue()))
      return op->emitError()
             << "'" << kMeshAttr << "' has an unknown axis '"
             << axis.getName().getValue() << "' (axes: data, tensor)";
    auto size = dyn_cast<IntegerAttr>(axis.getValue());
    if (!size || size.getInt() < 1)
      return op->emitError()
             << "'" << kMeshAttr << "' axis '" << axis.getName().getValue()
             << "' must have an integer size >= 1";
  }
  return success();
}

/// Checks a `graph.sharding` on a value of `type` in `op`'s module.
static LogicalResult verifySharding(Operation *op, NamedAttribute attr,
                                    Type type, StringRef where) {
  auto dims = dyn_cast<ArrayAttr>(attr.getValue());
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!dims || !tensor || int64_t(dims.size()) != tensor.getRank())
    return op->emitError() << "'" << attr.getName().getValue() << "' on "
                           << where
                           << " must be an array of one axis name per "
                              "dimension of a ranked tensor";
  Mesh mesh = getMesh(op);
  for (Attribute dim : dims) {
    auto axis = dyn_cast<StringAttr>(dim);
    if (!axis ||
        (!axis.getValue().empty() && mesh.axisIndex(axis.getValue()) < 0))
      return op->emitError()
             << "'" << attr.getName().getValue() << "' on " << where
             << " names " << dim << ", which is not a mesh axis (data, "
             << "tensor) or \"\"";
  }
  return success();
}

/// Checks a `graph.global_shape` on a value of `type` whose sharding is
/// `sharding` (null: none) in `op`'s module.
static LogicalResult verifyGlobalShape(Operation *op, NamedAttribute attr,
                                       Type type, ArrayAttr sharding,
                                       StringRef where) {
  auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
  auto tensor = dyn_cast<RankedTensorType>(type);
  StringRef name = attr.getName().getValue();
  if (!shape || !tensor || int64_t(shape.size()) != tensor.getRank())
    return op->emitError() << "'" << name << "' on " << where
                           << " must be an array<i64> of one size per "
                              "dimension of a ranked tensor";
  if (!sharding || int64_t(sharding.size()) != int64_t(shape.size()))
    return op->emitError() << "'" << name << "' on " << where << " needs a '"
                           << GraphDialect::kShardingAttr << "' beside it";
  Mesh mesh = getMesh(op);
  for (auto [d, global] : llvm::enumerate(shape.asArrayRef())) {
    StringRef axis = cast<StringAttr>(sharding[d]).getValue();
    int64_t n = axis.empty() ? 1 : std::max<int64_t>(mesh.size(axis), 1);
    int64_t local = tensor.getDimSize(d);
    if (global < 1 || (global + n - 1) / n != local)
      return op->emitError()
             << "'" << name << "' on " << where << ": dimension " << d
             << " of the whole tensor is " << global << ", so each of the " << n
             << " parts along it is " << (global + n - 1) / n << " long, not "
             << local;
  }
  return success();
}

LogicalResult GraphDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  std::string where = "argument " + std::to_string(argIndex);
  if (attr.getName().getValue() == kInputAttr)
    return verifyNameAttr(op, attr, where);
  if (attr.getName().getValue() == kShardingAttr) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    return verifySharding(op, attr,
                          fn ? fn.getArgumentTypes()[argIndex] : Type(), where);
  }
  if (attr.getName().getValue() == kGlobalShapeAttr) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    return verifyGlobalShape(
        op, attr, fn ? fn.getArgumentTypes()[argIndex] : Type(),
        fn ? fn.getArgAttrOfType<ArrayAttr>(argIndex, kShardingAttr)
           : ArrayAttr(),
        where);
  }
  return op->emitError() << "unknown graph argument attribute '"
                         << attr.getName().getValue() << "' on " << where;
}

LogicalResult GraphDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned regionIndex,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  std::string where = "result " + std::to_string(resultIndex);
  if (attr.getName().getValue() == kOutputAttr)
    return verifyNameAttr(op, attr, where);
  if (attr.getName().getValue() == kShardingAttr) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    return verifySharding(
        op, attr, fn ? fn.getResultTypes()[resultIndex] : Type(), where);
  }
  if (attr.getName().getValue() == kGlobalShapeAttr) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    return verifyGlobalShape(
        op, attr, fn ? fn.getResultTypes()[resultIndex] : Type(),
        fn ? fn.getResultAttrOfType<ArrayAttr>(resultIndex, kShardingAttr)
           : ArrayAttr(),
        where);
  }
  return op->emitError() << "unknown graph result attribute '"
                         << attr.getName().getValue() << "' on " << where;
}
