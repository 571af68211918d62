//===- FuseElementwise.cpp - Elementwise chains as one loop ---------------===//
//
// See FuseElementwise in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Compiler/Recompute.h"
#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"
#include "trainc/schema/ExecutableFormat.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <functional>

namespace trainc {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// The register files of a fused loop (FusedElementwiseOp's C5): what its
/// values other than i1 are.
enum LoopClass : unsigned { kNoClass = 0, kFloats = 1, kIntegers = 2 };

/// The class of element type `e`: f64, f32, f16 or bf16; i32, i64, ui32 or
/// ui64; i1 (either); none, for a type no fused loop computes in.
std::optional<unsigned> loopClassOf(Type e) {
  if (e.isF64() || e.isF32() || e.isF16() || e.isBF16())
    return kFloats;
  if (e.isInteger(1))
    return kNoClass;
  auto i = dyn_cast<IntegerType>(e);
  if (i && !i.isSigned() && (i.getWidth() == 32 || i.getWidth() == 64))
    return kIntegers;
  return std::nullopt;
}

bool isLoopElement(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && loopClassOf(tensor.getElementType()).has_value();
}

/// The classes of `op`'s operands and results, ORed.
unsigned loopClassOf(Operation *op) {
  unsigned c = kNoClass;
  for (Type t : op->getOperandTypes())
    c |= loopClassOf(getElementTypeOrSelf(t)).value_or(kNoClass);
  for (Type t : op->getResultTypes())
    c |= loopClassOf(getElementTypeOrSelf(t)).value_or(kNoClass);
  return c;
}

int64_t bytesOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
}

/// An op a fused body may hold (FusedElementwiseOp's C3 and C5): float
/// math on floats; neg, abs, add, sub, mul, max, min, compare, select and
/// convert on floats or integers; the bitwise ops on integers; never
/// floats and integers in one op.
bool isFusible(Operation *op) {
  bool numbers = isa<NegOp, AbsOp, AddOp, SubOp, MulOp, MaxOp, MinOp, CompareOp,
                     SelectOp, ConvertOp>(op);
  bool bits = isa<AndOp, OrOp, XorOp, NotOp, ShiftLeftOp, ShiftRightLogicalOp,
                  ShiftRightArithmeticOp, PopCountOp, CountLeadingZerosOp>(op);
  bool floats = isa<ExpOp, LogOp, TanhOp, ErfOp, SqrtOp, RsqrtOp, CosOp, SinOp,
                    FloorOp, RoundOp, DivOp, PowOp, GeluOp, GeluGradOp>(op);
  if (!numbers && !bits && !floats)
    return false;
  if (!llvm::all_of(op->getOperandTypes(), isLoopElement) ||
      !llvm::all_of(op->getResultTypes(), isLoopElement))
    return false;
  unsigned c = loopClassOf(op);
  return c != (kFloats | kIntegers) && (!floats || c != kIntegers);
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// An operand of a fused loop: a value of the results' shape (no dims),
/// or a smaller value that a broadcast_in_dim expands to that shape, with
/// the broadcast's dims (its operand_dims; none for a 0-d value).
using Input = std::pair<Value, ArrayRef<int64_t>>;

/// The broadcast operand that `v` (of `shape`) is, or a null value: `v`
/// is a broadcast_in_dim into `shape` of a loop element tensor whose dims
/// increase and which the executable can read through at most
/// kFusedMaxViewDims strides (the schema's fusedOperandStrides: a
/// per-channel scale of NCHW takes 3, a [C, N, O] value over [C, K, N, O]
/// 3).
Input broadcastSource(Value v, ArrayRef<int64_t> shape) {
  auto b = v.getDefiningOp<BroadcastInDimOp>();
  if (!b || shapeOf(v) != shape || shape.size() > 64)
    return {};
  Value source = b.getOperand();
  ArrayRef<int64_t> dims = b.getDims();
  auto type = cast<RankedTensorType>(source.getType());
  if (!isLoopElement(type) ||
      std::adjacent_find(dims.begin(), dims.end(),
                         std::greater_equal<int64_t>()) != dims.end())
    return {};
  uint64_t mask = 0;
  for (int64_t d : dims)
    mask |= uint64_t(1) << d;
  int64_t sizes[trainc::kFusedMaxViewDims], strides[trainc::kFusedMaxViewDims];
  if (trainc::fusedOperandStrides(shape.data(), int(shape.size()),
                                  type.getShape().data(), mask, sizes,
                                  strides) < 0)
    return {};
  return {source, dims};
}

/// The operand a fused loop of `shape` reads for its member's operand `v`.
Input inputFor(Value v, ArrayRef<int64_t> shape) {
  Input source = broadcastSource(v, shape);
  return source.first ? source : Input{v, {}};
}

/// Each use by a fusible op of a splat constant that is not 0-d becomes a
/// broadcast of a 0-d constant of the same value, which the loop takes as a
/// 0-d operand (ReLU's max with zeros of the activation's shape would read
/// a tensor of zeros).
void splitSplatConstants(Block &block) {
  // One 0-d constant per splat constant, right after it (so before all its
  // uses): a loop that reads the splat twice takes it once.
  llvm::DenseMap<Operation *, Value> scalars;
  for (Operation &op : block.without_terminator()) {
    if (!isFusible(&op))
      continue;
    for (OpOperand &use : op.getOpOperands()) {
      auto constant = use.get().getDefiningOp<ConstantOp>();
      auto splat = constant ? dyn_cast<SplatElementsAttr>(constant.getValue())
                            : SplatElementsAttr();
      if (!splat || cast<RankedTensorType>(splat.getType()).getRank() == 0)
        continue;
      Value &scalar = scalars[constant];
      if (!scalar) {
        OpBuilder after(constant->getBlock(),
                        std::next(constant->getIterator()));
        auto scalarType = RankedTensorType::get({}, splat.getElementType());
        scalar = after.create<ConstantOp>(constant.getLoc(),
                                          splat.resizeSplat(scalarType));
      }
      OpBuilder b(&op);
      use.set(b.create<BroadcastInDimOp>(constant.getLoc(), use.get().getType(),
                                         scalar, b.getDenseI64ArrayAttr({})));
      if (constant->use_empty()) {
        scalars.erase(constant);
        constant->erase();
      }
    }
  }
}

struct Group {
  /// Members in program order; the last is where the fused op goes.
  SmallVector<Operation *> ops;
  llvm::SmallPtrSet<Operation *, 8> members;
  /// The members' LoopClasses, ORed: never both.
  unsigned loopClass = kNoClass;
  bool merged = false;
};

class Fuser {
public:
  explicit Fuser(Block &block) : block(block) {}

  void run() {
    splitSplatConstants(block);
    for (Operation &op : block.without_terminator())
      if (isFusible(&op) && !op.use_empty())
        place(&op);
    for (Group &g : groups)
      if (!g.merged && worthFusing(g))
        fuse(g);
  }

private:
  /// The group `op` joins: those of its operands' producers that may
  /// merge with it, or a new one.
  void place(Operation *op) {
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    SmallVector<unsigned> joins;
    for (Value v : op->getOperands()) {
      Operation *producer = v.getDefiningOp();
      auto it = producer ? groupOf.find(producer) : groupOf.end();
      if (it == groupOf.end() || llvm::is_contained(joins, it->second))
        continue;
      Group &g = groups[it->second];
      if (shapeOf(g.ops.back()->getResult(0)) != shape ||
          (g.loopClass | loopClassOf(op)) == (kFloats | kIntegers) ||
          g.ops.back()->getDiscardableAttrDictionary() !=
              op->getDiscardableAttrDictionary() ||
          !othersUseAfter(g, op) || !holdsNoMoreThanItFrees(g, op))
        continue;
      joins.push_back(it->second);
    }
    // Merge while the limits hold; groups that would exceed them stay.
    Group joined;
    for (unsigned index : joins) {
      Group candidate = joined;
      append(candidate, groups[index]);
      append(candidate, op);
      if (!withinLimits(candidate) ||
          candidate.loopClass == (kFloats | kIntegers))
        continue;
      append(joined, groups[index]);
      groups[index].merged = true;
    }
    append(joined, op);
    llvm::sort(joined.ops, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    unsigned index = groups.size();
    groups.push_back(std::move(joined));
    for (Operation *member : groups[index].ops)
      groupOf[member] = index;
  }

  static void append(Group &g, Operation *op) {
    g.ops.push_back(op);
    g.members.insert(op);
    g.loopClass |= loopClassOf(op);
  }
  static void append(Group &g, const Group &other) {
    for (Operation *op : other.ops)
      append(g, op);
  }

  /// Whether every use of a member's value outside `g` comes after `op`
  /// (the fused op's place once `op` joins).
  static bool othersUseAfter(const Group &g, Operation *op) {
    for (Operation *member : g.ops)
      for (Operation *user : member->getUsers())
        if (user != op && !g.members.contains(user) &&
            (user->getBlock() != op->getBlock() || !op->isBeforeInBlock(user)))
          return false;
    return true;
  }

  /// Whether every op strictly between `last` and `op` is a constant (the
  /// constant section's, not the activations') or a broadcast only `op`
  /// reads and its loop will read in place (never stored): then moving a
  /// loop from `last` to `op` holds nothing longer over any instruction. A
  /// splat constant's broadcast sits there whenever `op` takes one, as a
  /// select of zeros does.
  static bool onlyOperandsBetween(Operation *last, Operation *op) {
    for (Operation *between = last->getNextNode(); between != op;
         between = between->getNextNode()) {
      if (!between)
        return false;
      if (isa<ConstantOp>(between))
        continue;
      auto broadcast = dyn_cast<BroadcastInDimOp>(between);
      // (Used: a dead broadcast is not absorbed but stored.)
      if (!broadcast || broadcast->use_empty() ||
          !llvm::all_of(broadcast->getUsers(),
                        [&](Operation *user) { return user == op; }) ||
          !broadcastSource(broadcast.getResult(), shapeOf(op->getResult(0)))
               .first)
        return false;
    }
    return true;
  }

  /// Whether moving `g`'s loop from its last member to `op` keeps memory
  /// from growing over the ops between the two: the group's results (used
  /// by `op` or later) are no longer held there, while operands that would
  /// have died before `op` now live until it. A forward op whose value only the
  /// backward pass reads would otherwise keep its operands alive through
  /// the whole step.
  static bool holdsNoMoreThanItFrees(const Group &g, Operation *op) {
    if (onlyOperandsBetween(g.ops.back(), op))
      return true; // Nothing in between that holds memory.
    int64_t freed = 0, held = 0;
    for (Value v : outputsOf(g))
      freed += bytesOf(v);
    for (auto [v, dims] : inputsOf(g)) {
      if (cast<RankedTensorType>(v.getType()).getRank() == 0)
        continue;
      bool diesBefore = llvm::all_of(v.getUsers(), [&](Operation *user) {
        return user != op && user->getBlock() == op->getBlock() &&
               user->isBeforeInBlock(op);
      });
      if (diesBefore)
        held += bytesOf(v);
    }
    return held <= freed;
  }

  /// The fused op's operands: the values the members take from outside,
  /// a broadcast one as the value it broadcasts.
  static llvm::SetVector<Input> inputsOf(const Group &g) {
    llvm::SetVector<Input> inputs;
    for (Operation *op : g.ops)
      for (Value v : op->getOperands())
        if (!v.getDefiningOp() || !g.members.contains(v.getDefiningOp()))
          inputs.insert(inputFor(v, shapeOf(op->getResult(0))));
    return inputs;
  }

  /// Member values used outside the group: the fused op's results.
  static SmallVector<Value> outputsOf(const Group &g) {
    SmallVector<Value> outputs;
    for (Operation *op : g.ops)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *user) {
              return !g.members.contains(user);
            }))
          outputs.push_back(r);
    return outputs;
  }

  static bool withinLimits(const Group &g) {
    return g.ops.size() <= size_t(trainc::kFusedMaxSteps) &&
           inputsOf(g).size() <= size_t(trainc::kFusedMaxInputs) &&
           outputsOf(g).size() <= size_t(trainc::kFusedMaxResults);
  }

  /// Two ops or more, or one that absorbs a broadcast used only here.
  static bool worthFusing(const Group &g) {
    if (g.ops.size() >= 2)
      return true;
    Operation *op = g.ops.front();
    for (Value v : op->getOperands())
      if (broadcastSource(v, shapeOf(op->getResult(0))).first &&
          llvm::all_of(v.getUsers(),
                       [&](Operation *user) { return user == op; }))
        return true;
    return false;
  }

  void fuse(Group &g) {
    llvm::SetVector<Input> inputs = inputsOf(g);
    SmallVector<Value> outputs = outputsOf(g);
    if (outputs.empty())
      return; // Dead: canonicalization's to remove.
    Operation *last = g.ops.back();
    ArrayRef<int64_t> shape = shapeOf(last->getResult(0));
    OpBuilder b(last);
    SmallVector<Type> resultTypes;
    for (Value v : outputs)
      resultTypes.push_back(v.getType());
    SmallVector<Value> operands;
    SmallVector<Attribute> operandDims;
    bool broadcast = false;
    for (auto [v, dims] : inputs) {
      operands.push_back(v);
      ArrayRef<int64_t> own = shapeOf(v);
      broadcast = broadcast || (!own.empty() && own != shape);
      SmallVector<int64_t> spanned(dims);
      if (own == shape)
        spanned = llvm::to_vector(llvm::seq<int64_t>(0, own.size()));
      operandDims.push_back(b.getDenseI64ArrayAttr(spanned));
    }
    auto fused =
        b.create<FusedElementwiseOp>(last->getLoc(), resultTypes, operands);
    if (broadcast)
      fused.setOperandDimsAttr(b.getArrayAttr(operandDims));
    fused->setDiscardableAttrs(last->getDiscardableAttrDictionary());
    Block *body = b.createBlock(&fused.getBody());
    IRMapping map;
    auto scalarOf = [](Value v) {
      return RankedTensorType::get(
          {}, cast<RankedTensorType>(v.getType()).getElementType());
    };
    llvm::DenseMap<Input, Value> arguments;
    for (const Input &input : inputs)
      arguments[input] =
          body->addArgument(scalarOf(input.first), input.first.getLoc());
    for (Operation *op : g.ops)
      for (Value v : op->getOperands())
        if (!v.getDefiningOp() || !g.members.contains(v.getDefiningOp()))
          map.map(v, arguments.lookup(inputFor(v, shape)));
    for (Operation *op : g.ops) {
      Operation *clone = b.clone(*op, map);
      for (Value r : clone->getResults())
        r.setType(scalarOf(r));
      clone->setDiscardableAttrs(DictionaryAttr::get(op->getContext()));
    }
    SmallVector<Value> yielded;
    for (Value v : outputs)
      yielded.push_back(map.lookup(v));
    b.create<YieldOp>(last->getLoc(), yielded);
    for (auto [v, r] : llvm::zip(outputs, fused.getResults()))
      v.replaceAllUsesWith(r);
    for (Operation *op : llvm::reverse(g.ops))
      op->erase();
    // Broadcasts now unused (the loop reads what they broadcast).
    for (auto [v, dims] : inputs)
      for (Operation *user : llvm::make_early_inc_range(v.getUsers()))
        if (isa<BroadcastInDimOp>(user) && user->use_empty())
          user->erase();
  }

  Block &block;
  std::vector<Group> groups;
  llvm::DenseMap<Operation *, unsigned> groupOf;
};

/// f64, f32, f16 or bf16 (graph.convert_group's element types).
bool isGroupFloat(Type t) {
  Type e = getElementTypeOrSelf(t);
  return e.isF64() || e.isF32() || e.isF16() || e.isBF16();
}

/// The casts of `fn`'s parameters, each pair of element types, as one
/// graph.convert_group at its first cast's place: one launch per 32
/// tensors where each cast took one. A cast joins only if its copy is
/// still read after the group's last cast (a weight the backward pass
/// reads again), so every copy in the group is alive there anyway and
/// the group only makes them earlier, below a training step's peak. Copies
/// read only nearby (a bias, a frozen layer, an inference program) keep
/// their own casts, but for small ones (biases) that add at most 1/64 of
/// the group's bytes. Not when blocks are recomputed: the clones cast
/// again in the backward pass, so the forward copies die early.
void groupParameterCasts(func::FuncOp fn) {
  if (fn.isExternal())
    return;
  Block &body = fn.getBody().front();
  bool recomputed = false;
  fn.walk([&](Operation *op) {
    recomputed = recomputed || op->hasAttr(trainc::recompute::kClone);
  });
  if (recomputed)
    return;
  llvm::MapVector<std::pair<Type, Type>, SmallVector<ConvertOp>> groups;
  for (Operation &op : body.without_terminator()) {
    auto convert = dyn_cast<ConvertOp>(op);
    auto arg = convert ? dyn_cast<BlockArgument>(convert.getOperand())
                       : BlockArgument();
    if (!arg || arg.getOwner() != &body ||
        !fn.getArgAttr(arg.getArgNumber(),
                       trainc::train::TrainDialect::kParamAttr) ||
        !convert->getDiscardableAttrDictionary().empty() ||
        !isGroupFloat(convert.getOperand().getType()) ||
        !isGroupFloat(convert.getType()))
      continue;
    groups[{getElementTypeOrSelf(convert.getOperand()),
            getElementTypeOrSelf(convert.getType())}]
        .push_back(convert);
  }
  for (auto &[types, candidates] : groups) {
    // Drop the casts whose copies are not read after the last cast kept,
    // until none is dropped.
    SmallVector<ConvertOp> casts = candidates;
    for (bool changed = true; changed && !casts.empty();) {
      Operation *last = casts.back();
      size_t before = casts.size();
      llvm::erase_if(casts, [&](ConvertOp c) {
        return llvm::none_of(c->getUsers(), [&](Operation *user) {
          return user->getBlock() != &body || last->isBeforeInBlock(user);
        });
      });
      changed = casts.size() != before;
    }
    if (casts.size() < 2)
      continue;
    // The other casts (a bias's, read only by its matmul) join while their
    // copies add at most 1/64 of the group's bytes, each one whose readers
    // all come after the group's place: a launch each saved for a few KiB
    // alive from the step's start to the layer that reads it, which in a
    // training step is before its peak. An inference program has a group
    // only where a weight is read again late (a tied embedding).
    int64_t budget = 0;
    for (ConvertOp c : casts)
      budget += bytesOf(c.getResult());
    budget /= 64;
    Operation *place = casts.front();
    SmallVector<ConvertOp> joined;
    for (ConvertOp c : candidates) {
      if (llvm::is_contained(casts, c) || c->use_empty() ||
          bytesOf(c.getResult()) > budget ||
          !llvm::all_of(c->getUsers(), [&](Operation *user) {
            return user->getBlock() == &body && place->isBeforeInBlock(user);
          }))
        continue;
      budget -= bytesOf(c.getResult());
      joined.push_back(c);
    }
    llvm::append_range(casts, joined);
    SmallVector<Value> inputs;
    SmallVector<Type> resultTypes;
    for (ConvertOp c : casts) {
      inputs.push_back(c.getOperand());
      resultTypes.push_back(c.getType());
    }
    OpBuilder b(casts.front());
    auto group =
        b.create<ConvertGroupOp>(casts.front().getLoc(), resultTypes, inputs);
    for (auto [c, r] : llvm::zip(casts, group.getResults())) {
      c.replaceAllUsesWith(r);
      c.erase();
    }
  }
}

/// A layer_norm or rms_norm of an f32 input whose one use is a convert to
/// bf16 or f16 (the autocast copy a matmul reads) writes that type itself
/// (their C5): the kernel rounds its f32 result once, as the convert did,
/// and the f32 result is never stored.
void narrowNormOutputs(func::FuncOp fn) {
  SmallVector<ConvertOp> converts;
  fn.walk([&](ConvertOp c) { converts.push_back(c); });
  for (ConvertOp convert : converts) {
    Operation *norm = convert.getOperand().getDefiningOp();
    if (!norm || !isa<LayerNormOp, RmsNormOp>(norm) || !norm->hasOneUse())
      continue;
    Type from = getElementTypeOrSelf(convert.getOperand().getType());
    Type to = getElementTypeOrSelf(convert.getType());
    if (!from.isF32() || !(to.isBF16() || to.isF16()))
      continue;
    norm->getResult(0).setType(convert.getType());
    convert.getResult().replaceAllUsesWith(norm->getResult(0));
    convert.erase();
  }
}

struct FuseElementwisePass
    : public trainc::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    narrowNormOutputs(getOperation());
    for (Block &block : getOperation().getBody())
      Fuser(block).run();
    groupParameterCasts(getOperation());
  }
};

} // namespace
