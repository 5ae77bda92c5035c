//===- Autodiff.cpp - --dsc-autodiff ---------------------------------------===//
//
// Reverse-mode differentiation of a loss graph with respect to the model's
// parameters. The graph is one block of value-semantic ops, so the backward
// pass is a single sweep over it in reverse: each op on a path from a
// parameter to the loss turns its results' cotangents into its operands'
// through GradientOpInterface (the rules live with the dialect, in
// lib/Dialect/DSC/IR/Gradients/). Cotangents of a value with several uses
// are summed.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCInterfaces.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

namespace mlir::dsc {
#define GEN_PASS_DEF_AUTODIFF
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// A graph the pass differentiates: its first result is named "loss"; the
/// others (metrics, e.g. the experts' token counts) are not differentiated.
static bool isLossGraph(func::FuncOp func) {
  if (func.isExternal() || func.getNumResults() == 0)
    return false;
  auto name = func.getResultAttrOfType<StringAttr>(0, DSCDialect::kOutputAttrName);
  return name && name.getValue() == "loss";
}

namespace {
/// What the backward starts from: d loss = `value`, or, with `state`, the
/// value of that scalar state (the loss scale), `value` while it is zero
/// (not yet written: optimizer state starts at zero).
struct Seed {
  double value = 1.0;
  StateOp state;
};

class Differentiator {
public:
  Differentiator(func::FuncOp func, ArrayRef<StateOp> parameters,
                 int64_t worldSize, Seed seed)
      : func(func), parameters(parameters.begin(), parameters.end()),
        worldSize(worldSize), seed(seed) {
    for (auto [i, state] : llvm::enumerate(this->parameters))
      parameterIndex[state.getSymNameAttr()] = i;
  }

  LogicalResult run() {
    if (!func.getBody().hasOneBlock())
      return func.emitError() << "cannot differentiate a graph of "
                              << func.getBody().getBlocks().size() << " blocks";
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value loss = ret.getOperand(0);
    auto lossType = dyn_cast<RankedTensorType>(loss.getType());
    if (!lossType || lossType.getRank() != 0 || !isFloatTensor(lossType))
      return func.emitError() << "the loss must be a scalar float tensor to "
                                 "differentiate, got "
                              << loss.getType();
    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator())
      forward.push_back(&op);
    if (failed(findActive(forward)))
      return failure();

    OpBuilder b(ret);
    Location loc = ret.getLoc();
    if (active.contains(loss)) {
      Value d = ConstantOp::create(
          b, loc, DenseElementsAttr::get(lossType, b.getFloatAttr(
                                                       lossType.getElementType(),
                                                       seed.value)));
      if (seed.state) {
        if (seed.state.getType() != lossType)
          return func.emitError() << "seed state @" << seed.state.getSymName()
                                  << " is " << seed.state.getType()
                                  << ", the loss is " << lossType;
        Value stored = LoadOp::create(b, loc, lossType, seed.state.getSymName());
        Value zero = ConstantOp::create(
            b, loc, DenseElementsAttr::get(lossType, b.getFloatAttr(
                                                         lossType.getElementType(), 0.0)));
        Value unset = CompareOp::create(b, loc, ComparisonDirection::eq, stored, zero);
        d = SelectOp::create(b, loc, unset, d, stored);
      }
      cotangent[loss] = d;
    }
    gradients.assign(parameters.size(), Value());
    for (Operation *op : llvm::reverse(forward))
      if (failed(backward(b, op)))
        return failure();

    // The loss and the metrics beside it, then the gradients.
    SmallVector<Value> results(ret.getOperands());
    SmallVector<Type> types(func.getResultTypes());
    SmallVector<DictionaryAttr> attrs;
    func.getAllResultAttrs(attrs);
    for (auto [i, state] : llvm::enumerate(this->parameters)) {
      RankedTensorType type = state.getTensorType();
      Value gradient = gradients[i];
      if (!gradient) {
        gradient = zeros(b, state.getLoc(), type);
      } else if (state.getPartitionGroup() == CollectiveGroup::expert) {
        // An expert's parameter is replicated on the ranks of its
        // expert-data group only; its gradient there already holds the
        // tokens of its whole expert group (the all-to-all's adjoint).
        FailureOr<int64_t> replicas =
            lookupGroupSize(state, CollectiveGroup::expert_data);
        if (failed(replicas))
          return failure();
        if (*replicas > 1)
          gradient = allReduce(b, state.getLoc(), gradient,
                               CollectiveGroup::expert_data);
      } else if (worldSize > 1) {
        // Megatron's "f": a parameter is replicated on every rank of the
        // data-parallel group (all of them, or with tensor parallelism the
        // ranks that hold the same slices), so the adjoint of that
        // replication sums the ranks' partial gradients.
        CollectiveGroup group = dataParallelGroup(state);
        FailureOr<int64_t> replicas = lookupGroupSize(state, group);
        if (failed(replicas))
          return failure();
        if (*replicas > 1)
          gradient = allReduce(b, state.getLoc(), gradient, group);
      }
      // A weight that several pipeline stages hold: each stage's gradient
      // is its part of the whole, summed over the stages that read it.
      if (Attribute tied = state->getAttr(kPipelineTiedAttrName)) {
        gradient = allReduce(b, state.getLoc(), gradient,
                             CollectiveGroup::pipeline,
                             dyn_cast<DenseI64ArrayAttr>(tied));
      }
      if (gradient.getType() != type)
        return func.emitError() << "the gradient of @" << state.getSymName()
                                << " has type " << gradient.getType()
                                << ", expected " << type;
      results.push_back(gradient);
      types.push_back(type);
      NamedAttribute entries[] = {
          b.getNamedAttr(DSCDialect::kOutputAttrName,
                         b.getStringAttr("grad." + state.getSymName())),
          b.getNamedAttr(DSCDialect::kGradientOfAttrName,
                         FlatSymbolRefAttr::get(state.getSymNameAttr()))};
      attrs.push_back(b.getDictionaryAttr(entries));
    }
    ret->setOperands(results);
    func.setType(FunctionType::get(func.getContext(),
                                   func.getArgumentTypes(), types));
    func.setAllResultAttrs(attrs);

    // Forward values only the loss needed, and backward values no gradient
    // needed (cotangents of inactive branches), are dead now.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isOpTriviallyDead(&op))
        op.erase();
    return success();
  }

private:
  /// Activity analysis: the float values that depend on a parameter.
  LogicalResult findActive(ArrayRef<Operation *> ops) {
    for (Operation *op : ops) {
      if (auto load = dyn_cast<LoadOp>(op)) {
        if (parameterIndex.contains(load.getStateAttr().getAttr()) &&
            isFloatTensor(load.getType()))
          active.insert(load.getResult());
        continue;
      }
      // An activation received from an earlier pipeline stage depends on
      // that stage's parameters: its gradient goes back there.
      if (isa<PipelineRecvOp>(op)) {
        if (isFloatTensor(op->getResult(0).getType()))
          active.insert(op->getResult(0));
        continue;
      }
      if (llvm::none_of(op->getOperands(),
                        [&](Value v) { return active.contains(v); }))
        continue;
      if (op->getNumRegions() != 0)
        return op->emitOpError("has regions and depends on a parameter: "
                               "--dsc-autodiff cannot differentiate it");
      for (Value result : op->getResults())
        if (isFloatTensor(result.getType()))
          active.insert(result);
    }
    return success();
  }

  /// Adds `op`'s contribution to its operands' cotangents.
  LogicalResult backward(OpBuilder &b, Operation *op) {
    SmallVector<Value> resultCotangents;
    for (Value result : op->getResults())
      resultCotangents.push_back(cotangent.lookup(result));
    // Each float transfer between pipeline stages has its reverse on both
    // sides, or the stages' transfers would not pair: the receiving stage
    // cannot tell whether the value depends on the sender's parameters (a
    // count of the experts' routes does not), nor the sender whether the
    // receiver's loss reads it (a metric does not). A receive then sends
    // back zeros when nothing it feeds reaches the loss, and a send whose
    // value is inactive still receives its cotangent, which its rule
    // drops.
    if (isa<PipelineSendOp, PipelineRecvOp>(op) && !resultCotangents[0]) {
      Value moved = isa<PipelineRecvOp>(op) ? op->getResult(0)
                                            : op->getOperand(0);
      if (isFloatTensor(moved.getType()))
        resultCotangents[0] = zeros(
            b, op->getLoc(), cast<RankedTensorType>(op->getResult(0).getType()));
    }
    if (llvm::all_of(resultCotangents, [](Value v) { return !v; }))
      return success(); // does not reach the loss
    if (auto load = dyn_cast<LoadOp>(op)) {
      // Several loads of one parameter (tied weights) sum their cotangents.
      Value &gradient = gradients[parameterIndex.at(load.getStateAttr().getAttr())];
      gradient = add(b, gradient, resultCotangents[0]);
      return success();
    }
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitOpError("has no gradient, but lies between a parameter "
                             "and the loss");
    SmallVector<bool> activeOperands;
    for (Value operand : op->getOperands())
      activeOperands.push_back(active.contains(operand));
    SmallVector<Value> operandCotangents(op->getNumOperands(), Value());
    if (failed(rule.buildOperandCotangents(b, resultCotangents, activeOperands,
                                           operandCotangents)))
      return failure();
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      Value d = operandCotangents[i];
      if (!d || !activeOperands[i])
        continue;
      if (d.getType() != operand.getType())
        return op->emitOpError("gradient rule built a cotangent of type ")
               << d.getType() << " for operand #" << i << " of type "
               << operand.getType();
      Value &sum = cotangent[operand];
      sum = add(b, sum, d);
    }
    return success();
  }

  /// `gradient` summed over the ranks of `group`. A gradient converted up
  /// from a narrower float (mixed precision: the parameter was used through
  /// its 16-bit copy) is summed before that convert, in 16 bits, as
  /// DeepSpeed's default `communication_data_type` does for fp16 and bf16.
  /// With `stages`, over the ranks of the pipeline group at those stages.
  static Value allReduce(OpBuilder &b, Location loc, Value gradient,
                         CollectiveGroup group,
                         DenseI64ArrayAttr stages = {}) {
    auto up = gradient.getDefiningOp<ConvertOp>();
    if (up && up->use_empty() && isFloatTensor(up.getInput().getType()) &&
        getElementTypeOrSelf(up.getInput()).getIntOrFloatBitWidth() <
            getElementTypeOrSelf(gradient).getIntOrFloatBitWidth()) {
      auto sum = AllReduceOp::create(b, loc, up.getInput(), group);
      sum.setStagesAttr(stages);
      return ConvertOp::create(b, loc, gradient.getType(), sum);
    }
    auto sum = AllReduceOp::create(b, loc, gradient, group);
    sum.setStagesAttr(stages);
    return sum;
  }

  /// `sum + term`. Where one side is a scatter-add into zeros (the gradient
  /// of an embedding or a gather) that nothing reads yet, it scatter-adds
  /// into the other side instead: a tied embedding's gradient then needs
  /// neither a table of zeros nor a sum beside the head's gradient (GPT-2
  /// 124M at batch 4 x 128: arena 811 -> 709 MB). The
  /// additions into an element happen in another order than PyTorch's
  /// (head gradient first), a rounding difference within fp32 tolerance;
  /// 16-bit gradients keep PyTorch's order (their sum of the rows, then one
  /// addition), since each addition there rounds to 8 or 11 bits.
  static Value add(OpBuilder &b, Value sum, Value term) {
    if (!sum)
      return term;
    if (Value into = scatterInto(b, term, sum))
      return into;
    if (Value into = scatterInto(b, sum, term))
      return into;
    return AddOp::create(b, term.getLoc(), sum, term).getResult();
  }

  /// `scatter` (a dsc.scatter_add into zeros, unread so far) redone into
  /// `base`; null where `scatter` is not such an op.
  static Value scatterInto(OpBuilder &b, Value scatter, Value base) {
    auto op = scatter.getDefiningOp<ScatterAddOp>();
    if (!op || !scatter.use_empty() || base.getType() != scatter.getType() ||
        getElementTypeOrSelf(scatter).getIntOrFloatBitWidth() < 32 ||
        !isZeros(op.getInput()))
      return Value();
    // The scatter into zeros is left for the pass's final sweep of dead
    // ops: another cotangent may still name it (rules that pass a
    // cotangent through to several operands), so it is not erased here.
    Value into = ScatterAddOp::create(b, op.getLoc(), base, op.getIndex(),
                                      op.getSrc(), op.getDim());
    return into;
  }

  /// Whether `value` is a constant zero or a broadcast of one.
  static bool isZeros(Value value) {
    if (auto broadcast = value.getDefiningOp<BroadcastOp>())
      value = broadcast.getInput();
    DenseElementsAttr elements;
    if (!matchPattern(value, m_Constant(&elements)) || !elements.isSplat())
      return false;
    Attribute element = elements.getSplatValue<Attribute>();
    if (auto f = dyn_cast<FloatAttr>(element))
      return f.getValue().isZero() && !f.getValue().isNegative();
    return false;
  }

  static Value zeros(OpBuilder &b, Location loc, RankedTensorType type) {
    Type elem = type.getElementType();
    Attribute zero = isa<FloatType>(elem) ? Attribute(b.getFloatAttr(elem, 0.0))
                                          : Attribute(b.getIntegerAttr(elem, 0));
    Value scalar = ConstantOp::create(
        b, loc, DenseElementsAttr::get(RankedTensorType::get({}, elem), zero));
    return type.getRank() == 0 ? scalar
                               : BroadcastOp::create(b, loc, type, scalar).getResult();
  }

  func::FuncOp func;
  SmallVector<StateOp> parameters;
  int64_t worldSize;
  Seed seed;
  DenseMap<StringAttr, size_t> parameterIndex;
  DenseSet<Value> active;
  DenseMap<Value, Value> cotangent;
  SmallVector<Value> gradients; // per parameter, summed over its loads
};

struct AutodiffPass : public dsc::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<StateOp> parameters;
    for (auto state : module.getOps<StateOp>())
      if (state.getRole() == StateRole::parameter)
        parameters.push_back(state);
    int64_t worldSize = 1;
    if (auto attr = module->getAttrOfType<IntegerAttr>("dsc.world_size"))
      worldSize = attr.getInt();
    FailureOr<Seed> seed = makeSeed(module);
    if (failed(seed))
      return signalPassFailure();
    for (auto func : module.getOps<func::FuncOp>())
      if (isLossGraph(func) &&
          failed(Differentiator(func, parameters, worldSize, *seed).run()))
        return signalPassFailure();
  }

  /// The seed of the options, its state declared (an optimizer state,
  /// scalar of the loss's type) when the module has none of that name, and
  /// recorded on the module (`dsc.backward_seed`) for the passes that rely
  /// on it (loss scaling).
  FailureOr<Seed> makeSeed(ModuleOp module) {
    Seed result;
    result.value = seed;
    if (!(seed > 0) || !std::isfinite(double(seed)))
      return module.emitError() << "seed " << double(seed)
                                << " must be positive and finite";
    Builder b(module.getContext());
    SmallVector<NamedAttribute> record{
        b.getNamedAttr("value", b.getF64FloatAttr(seed))};
    if (!seedState.empty()) {
      Operation *symbol = SymbolTable::lookupSymbolIn(module, seedState);
      result.state = dyn_cast_or_null<StateOp>(symbol);
      if (symbol && !result.state)
        return module.emitError() << "seed-state '" << seedState
                                  << "' names a '" << symbol->getName()
                                  << "', not a dsc.state";
      if (!result.state) {
        Type elem;
        for (auto func : module.getOps<func::FuncOp>())
          if (isLossGraph(func))
            elem = cast<ShapedType>(func.getResultTypes()[0]).getElementType();
        if (!elem)
          return result; // nothing to differentiate
        OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
        if (auto states = module.getOps<StateOp>(); !states.empty())
          for (StateOp state : states)
            top.setInsertionPointAfter(state);
        else
          top.setInsertionPointToStart(module.getBody());
        result.state = StateOp::create(top, module.getLoc(), seedState,
                                       RankedTensorType::get({}, elem),
                                       StateRole::optimizer);
      }
      record.push_back(b.getNamedAttr(
          "state", FlatSymbolRefAttr::get(result.state.getSymNameAttr())));
    }
    if (!seedState.empty() || seed != 1.0)
      module->setAttr(DSCDialect::kBackwardSeedAttrName,
                      b.getDictionaryAttr(record));
    return result;
  }
};
} // namespace
