//===- MixedPrecision.cpp - --dsc-mixed-precision --------------------------===//
//
// DeepSpeed's bf16/fp16 training as a rewrite of the forward graph, with
// DeepSpeed's model states: each float parameter `@p` becomes a 16-bit
// state (the copy the forward and the backward pass read, and that ZeRO
// stage 3 shards and gathers, in 16 bits), and a new fp32 state
// `@p.master` (role master) holds the master weight that --dsc-optimizer
// updates and rounds into `@p`. Float buffers stay fp32 states, converted
// to 16 bits where they are loaded. Every float value computed from a
// parameter, a buffer or a float input is then computed in 16 bits; other
// float values (masks and counts made from integers, constants) are
// converted where a 16-bit op reads them. The graph's signature does not
// change: float inputs are converted on entry (DeepSpeed casts floating
// inputs), float outputs back to their declared type on exit, and a summed
// or averaged cross-entropy adds up its 16-bit per-token losses in fp32.
//
// Running before --dsc-autodiff gives the backward pass in 16 bits for free:
// the gradient of a 16-bit parameter is 16-bit, and so is its data-parallel
// all-reduce (DeepSpeed's default communication_data_type); the optimizer
// widens it to fp32 for the update of the master weight.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

/// `type` with its element type replaced by `element` when it is a float
/// tensor of another type; null otherwise.
static RankedTensorType lowered(Type type, FloatType element) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !isa<FloatType>(tensor.getElementType()) ||
      tensor.getElementType() == element)
    return nullptr;
  return tensor.clone(element);
}

namespace {
struct MixedPrecisionPass
    : public dsc::impl::MixedPrecisionBase<MixedPrecisionPass> {
  using MixedPrecisionBase::MixedPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();
    FloatType element;
    if (precision == "fp32")
      return; // the graph already computes in its own types
    if (precision == "bf16")
      element = BFloat16Type::get(context);
    else if (precision == "fp16")
      element = Float16Type::get(context);
    else {
      module.emitError() << "precision must be fp32, bf16 or fp16, got '"
                         << precision << "'";
      return signalPassFailure();
    }
    if (failed(checkForwardOnly(module)))
      return signalPassFailure();
    FailureOr<DenseSet<StringAttr>> narrowed = narrowParameters(module, element);
    if (failed(narrowed))
      return signalPassFailure();
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(lower(func, element, *narrowed)))
        return signalPassFailure();
  }

  /// Every float parameter `@p` becomes `element`, and `@p.master` (role
  /// master, declared after it; unless masterWeights is off) keeps its old
  /// type. Returns the names of the parameters narrowed.
  FailureOr<DenseSet<StringAttr>> narrowParameters(ModuleOp module,
                                                  FloatType element) {
    DenseSet<StringAttr> narrowed;
    SymbolTable symbols(module);
    for (auto state : llvm::to_vector(module.getOps<StateOp>())) {
      RankedTensorType type = lowered(state.getType(), element);
      if (state.getRole() != StateRole::parameter || !type ||
          state->hasAttr(DSCDialect::kKeepFp32AttrName))
        continue;
      narrowed.insert(state.getSymNameAttr());
      if (!masterWeights) {
        state.setType(type);
        continue;
      }
      std::string name = (state.getSymName() + ".master").str();
      if (symbols.lookup(name))
        return state.emitError()
               << "its master weight '" << name
               << "' would shadow a symbol of that name";
      OpBuilder top(state);
      top.setInsertionPointAfter(state);
      auto master = StateOp::create(top, state.getLoc(), name,
                                    state.getTensorType(), StateRole::master);
      // A parameter a rewrite added fills its master by the same rule.
      master.setInitFromAttr(state.getInitFromAttr());
      master.setInitUniformAttr(state.getInitUniformAttr());
      master.setInitSeedAttr(state.getInitSeedAttr());
      // An expert's master lives with the expert, a tensor-parallel
      // weight's with its slice.
      if (state.getPartitionOf())
        master.copyPartition(state);
      symbols.insert(master);
      state.setType(type);
    }
    return narrowed;
  }

  /// The pass rewrites a forward graph: once autodiff or the optimizer has
  /// run, gradients and updates would mix fp32 and 16-bit values.
  LogicalResult checkForwardOnly(ModuleOp module) {
    for (auto func : module.getOps<func::FuncOp>()) {
      for (unsigned i = 0; i < func.getNumResults(); ++i)
        if (func.getResultAttr(i, DSCDialect::kGradientOfAttrName))
          return func.emitError()
                 << "already returns gradients: --dsc-mixed-precision rewrites "
                    "the forward graph and must run before --dsc-autodiff";
      WalkResult stored = func.walk([](StoreOp store) {
        store.emitError() << "--dsc-mixed-precision rewrites the forward "
                             "graph and must run before --dsc-optimizer";
        return WalkResult::interrupt();
      });
      if (stored.wasInterrupted())
        return failure();
    }
    for (auto state : module.getOps<StateOp>())
      if (state.getRole() == StateRole::master)
        return state.emitError() << "is a master weight already: "
                                    "--dsc-mixed-precision runs once";
    return success();
  }

  LogicalResult lower(func::FuncOp func, FloatType element,
                      const DenseSet<StringAttr> &narrowed) {
    if (!func.getBody().hasOneBlock())
      return func.emitError() << "--dsc-mixed-precision expects a graph of one "
                                 "block, this one has "
                              << func.getBody().getBlocks().size();
    Block &body = func.getBody().front();
    Lowering lowering;
    lowering.element = element;
    OpBuilder b = OpBuilder::atBlockBegin(&body);
    for (BlockArgument arg : body.getArguments())
      if (RankedTensorType type = lowered(arg.getType(), element)) {
        auto input = ConvertOp::create(b, arg.getLoc(), type, arg);
        arg.replaceAllUsesExcept(input, input);
        lowering.narrow.insert(input.getResult());
      }

    // One 16-bit value per state: a tied parameter's uses share it, so its
    // 16-bit gradient is summed over them (as PyTorch accumulates a bf16
    // parameter's .grad). A narrowed parameter is loaded in 16 bits; a float
    // buffer is converted where it is loaded.
    DenseMap<StringAttr, Value> copies;
    // Loads of parameters pinned to fp32 (kKeepFp32AttrName) and random
    // draws, and the float values only they and fp32 values make (not the
    // integers: routing slots made from noisy scores pin nothing): an op
    // that reads one computes in fp32, its 16-bit operands widened.
    DenseSet<Value> pinned;
    SymbolTable symbols(func->getParentOfType<ModuleOp>());
    // The original ops only: rewrites insert ops that must stay as built.
    auto ops = llvm::map_to_vector(body.without_terminator(),
                                   [](Operation &op) { return &op; });
    for (Operation *op : ops) {
      if (auto load = dyn_cast<LoadOp>(op)) {
        RankedTensorType type = lowered(load.getType(), element);
        if (!type)
          continue;
        StringAttr name = load.getStateAttr().getAttr();
        auto state = symbols.lookup<StateOp>(name);
        if (state && state->hasAttr(DSCDialect::kKeepFp32AttrName)) {
          pinned.insert(load.getResult());
          continue;
        }
        if (Value copy = copies.lookup(name)) {
          load.replaceAllUsesWith(copy);
          load.erase();
          continue;
        }
        if (narrowed.contains(name)) {
          load.getResult().setType(type);
          copies[name] = load;
          lowering.narrow.insert(load.getResult());
          continue;
        }
        b.setInsertionPointAfter(load);
        auto copy = ConvertOp::create(b, load.getLoc(), type, load.getResult());
        load.getResult().replaceAllUsesExcept(copy, copy);
        copies[name] = copy;
        lowering.narrow.insert(copy.getResult());
        continue;
      }
      // Random draws are fp32, and what computes with them stays fp32, as
      // DeepSpeed's gate noise (jitter multiplies the fp32 gate input).
      if (isa<RandomUniformOp>(op)) {
        pinned.insert(op->getResult(0));
        continue;
      }
      bool readsPinned = llvm::any_of(op->getOperands(),
                                      [&](Value v) { return pinned.contains(v); });
      if (llvm::none_of(op->getOperands(), [&](Value v) {
            return lowering.narrow.contains(v);
          })) {
        // No parameter or float input reaches it: stays as is.
        if (readsPinned)
          for (Value result : op->getResults())
            if (isa<FloatType>(cast<ShapedType>(result.getType()).getElementType()))
              pinned.insert(result);
        continue;
      }
      if (readsPinned) {
        widenOperands(op, lowering);
        continue;
      }
      if (auto ce = dyn_cast<CrossEntropyOp>(op);
          ce && ce.getReduction() != LossReduction::none) {
        lowerLoss(ce);
        continue;
      }
      if (failed(lowerOp(op, lowering)))
        return failure();
    }

    // Constants rebuilt in 16 bits may have lost their last use.
    for (auto &entry : lowering.converted)
      if (auto cst = entry.first.getDefiningOp<ConstantOp>(); cst && cst->use_empty())
        cst.erase();

    // The signature stays: float outputs (the loss) go back to their type.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    b.setInsertionPoint(ret);
    for (auto [operand, type] :
         llvm::zip(ret->getOpOperands(), func.getResultTypes()))
      if (operand.get().getType() != type)
        operand.set(ConvertOp::create(b, ret.getLoc(), type, operand.get()));
    return success();
  }

private:
  struct Lowering {
    FloatType element;
    /// Values computed in `element` from a parameter or a float input.
    DenseSet<Value> narrow;
    /// Wider float values (a mask, a constant) converted for 16-bit users.
    DenseMap<Value, Value> converted;
  };

  /// `op` reads a 16-bit value: its other float operands are converted
  /// (once per value; constants rebuilt), and its float results computed in
  /// 16 bits. Ops that infer their result types must agree.
  LogicalResult lowerOp(Operation *op, Lowering &l) {
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      RankedTensorType type = lowered(v.getType(), l.element);
      if (!type || l.narrow.contains(v))
        continue;
      Value &narrowed = l.converted[v];
      if (!narrowed) {
        OpBuilder b(op->getContext());
        b.setInsertionPointAfterValue(v);
        narrowed = narrowConstant(b, v, type);
        if (!narrowed)
          narrowed = ConvertOp::create(b, v.getLoc(), type, v);
      }
      operand.set(narrowed);
    }
    for (Value result : op->getResults())
      if (RankedTensorType type = lowered(result.getType(), l.element);
          type && !isFp32Statistic(result)) {
        result.setType(type);
        l.narrow.insert(result);
      }
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return success();
    SmallVector<Type> inferred;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), inferred)))
      return op->emitOpError("cannot compute in ") << l.element;
    if (!llvm::equal(inferred, op->getResultTypes()))
      return op->emitOpError("cannot compute in ")
             << l.element << ": its operands give results of type "
             << TypeRange(inferred);
    return success();
  }

  /// `op` reads an fp32-pinned parameter: its 16-bit operands are widened
  /// back to the pinned type and its results stay as declared, so what it
  /// computes (an MoE gate's logits) and what follows from it alone stay
  /// fp32.
  static void widenOperands(Operation *op, Lowering &l) {
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      if (!l.narrow.contains(v))
        continue;
      auto type = cast<RankedTensorType>(v.getType());
      OpBuilder b(op);
      operand.set(ConvertOp::create(b, op->getLoc(),
                                    type.clone(Float32Type::get(op->getContext())),
                                    v));
    }
  }

  /// Results that stay fp32 in every precision: dsc.attention's
  /// log-sum-exp, which its backward reads to recompute probabilities.
  static bool isFp32Statistic(Value result) {
    auto attention = result.getDefiningOp<AttentionOp>();
    return attention && result == attention.getLogsumexp();
  }

  /// A dense float constant `v` rebuilt as `type` (rounded to nearest
  /// even) instead of converted at run time; null for any other value.
  static Value narrowConstant(OpBuilder &b, Value v, RankedTensorType type) {
    auto cst = v.getDefiningOp<ConstantOp>();
    auto dense = cst ? dyn_cast<DenseElementsAttr>(cst.getValue()) : nullptr;
    if (!dense)
      return nullptr;
    auto element = cast<FloatType>(type.getElementType());
    DenseElementsAttr value = dense.mapValues(element, [&](const APFloat &x) {
      APFloat y = x;
      bool lost;
      y.convert(element.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &lost);
      return y.bitcastToAPInt();
    });
    return ConstantOp::create(b, cst.getLoc(), type, value);
  }

  /// A summed or averaged loss over 16-bit logits: per-token losses in 16
  /// bits (each accumulated in double by the kernel and rounded once), then
  /// summed and divided in fp32, so the loss is one rounding of 16 bits from
  /// exact instead of carrying a 16-bit sum of every token. The result is
  /// fp32: the loss and what the data-parallel pass builds from it (the
  /// global sum and count) stay fp32.
  void lowerLoss(CrossEntropyOp ce) {
    OpBuilder b(ce);
    Location loc = ce.getLoc();
    auto type = cast<RankedTensorType>(ce.getType());
    auto perToken = CrossEntropyOp::create(b, loc, ce.getLogits(), ce.getTargets(),
                                           ce.getIgnoreIndex(), LossReduction::none);
    auto tokens = cast<RankedTensorType>(perToken.getType());
    Value wide = ConvertOp::create(b, loc, tokens.clone(type.getElementType()),
                                   perToken);
    SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, tokens.getRank()));
    Value loss = all.empty() ? wide
                             : ReduceSumOp::create(b, loc, wide, all, false).getResult();
    if (ce.getReduction() == LossReduction::mean)
      loss = DivOp::create(b, loc, loss, ce.buildCountedTargets(b));
    ce.replaceAllUsesWith(loss);
    ce.erase();
  }
};
} // namespace
