//===- Distill.cpp - --dsc-distill -----------------------------------------===//
//
// Mixture-of-Students' knowledge distillation as a rewrite of the forward
// graph (Passes.td has the rule): the teacher's own export is parsed, the
// ops its logits need are cloned into the student's loss graph on the same
// inputs, its states become frozen `teacher.` states, and the loss gains
// Megatron-DeepSpeed's KD term. Running before autodiff, the backward of the
// new loss is derived like any other; the teacher's states are not
// parameters, so no gradient is built for them. With teacher-forward=false
// (staged KD's step after the stop) the same teacher states are declared,
// so that both steps of one artifact share a state table, and nothing else
// of the teacher is added.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSC/IR/GraphUtils.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace mlir::dsc {
#define GEN_PASS_DEF_DISTILL
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

namespace {

/// A graph whose first result is the loss (the graphs autodiff
/// differentiates).
bool isLossGraph(func::FuncOp func) {
  if (func.isExternal() || func.getNumResults() == 0)
    return false;
  auto name =
      func.getResultAttrOfType<StringAttr>(0, DSCDialect::kOutputAttrName);
  return name && name.getValue() == "loss";
}

/// The one cross-entropy of `func`, whose logits are the model's.
FailureOr<CrossEntropyOp> findCrossEntropy(func::FuncOp func,
                                           StringRef whose) {
  SmallVector<CrossEntropyOp> found;
  func.walk([&](CrossEntropyOp ce) { found.push_back(ce); });
  if (found.size() == 1)
    return found.front();
  InFlightDiagnostic diag =
      func.emitError() << "--dsc-distill: the " << whose << "'s graph @"
                       << func.getSymName() << " has " << found.size()
                       << " dsc.cross_entropy ops; its logits are the input "
                          "of exactly one";
  for (CrossEntropyOp ce : found)
    diag.attachNote(ce.getLoc()) << "a cross-entropy";
  return failure();
}

RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Whether `loss` is the cross-entropy over `logits` alone: the op itself,
/// or as --dsc-data-parallel makes it global (a division of its
/// all-reduced sum or mean).
bool isCrossEntropyOf(Value loss, Value logits) {
  if (auto div = loss.getDefiningOp<DivOp>())
    if (auto sum = div.getLhs().getDefiningOp<AllReduceOp>())
      loss = sum.getInput();
  auto ce = loss.getDefiningOp<CrossEntropyOp>();
  return ce && ce.getLogits() == logits;
}

struct DistillPass : public dsc::impl::DistillBase<DistillPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkOptions(module)))
      return signalPassFailure();
    if (int64_t tensor = lookupTensorParallelSize(module); tensor > 1) {
      module.emitError() << "--dsc-distill with tensor parallelism "
                            "(tensor-parallel "
                         << tensor << ") is not supported yet";
      return signalPassFailure();
    }
    OwningOpRef<ModuleOp> teacherModule =
        parseSourceFile<ModuleOp>(teacher, module.getContext());
    if (!teacherModule) {
      module.emitError() << "--dsc-distill: cannot read the teacher model '"
                         << teacher << "'";
      return signalPassFailure();
    }
    FailureOr<func::FuncOp> teacherGraph = findTeacherGraph(*teacherModule);
    if (failed(teacherGraph))
      return signalPassFailure();
    FailureOr<CrossEntropyOp> teacherCe =
        findCrossEntropy(*teacherGraph, "teacher");
    if (failed(teacherCe))
      return signalPassFailure();

    SmallVector<func::FuncOp> graphs;
    for (auto func : module.getOps<func::FuncOp>())
      if (isLossGraph(func))
        graphs.push_back(func);
    if (graphs.empty()) {
      module.emitError("--dsc-distill: the student has no graph whose first "
                       "result is named \"loss\"");
      return signalPassFailure();
    }
    for (func::FuncOp graph : graphs)
      if (failed(distill(graph, *teacherGraph, *teacherCe)))
        return signalPassFailure();
    module->setAttr(DSCDialect::kTeacherFlopsAttrName,
                    Builder(module.getContext()).getI64IntegerAttr(teacherFlops));
  }

private:
  /// Teacher states declared so far, by the teacher's name.
  llvm::StringMap<StateOp> declared;
  /// The FLOPs of the matrix products inlined (2 per multiply-add).
  int64_t teacherFlops = 0;

  /// 2 * M * N * K of a dense product: what dominates a transformer's
  /// forward, and what the FLOPs of a model are usually counted by.
  static int64_t matrixFlops(Operation *op) {
    if (auto linear = dyn_cast<LinearOp>(op))
      return 2 * tensorOf(linear.getResult()).getNumElements() *
             tensorOf(linear.getInput()).getShape().back();
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      ArrayRef<int64_t> lhs = tensorOf(matmul.getLhs()).getShape();
      int64_t k = matmul.getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
      return 2 * tensorOf(matmul.getResult()).getNumElements() * k;
    }
    return 0;
  }

  LogicalResult checkOptions(ModuleOp module) {
    auto fail = [&](const Twine &message) {
      return module.emitError("--dsc-distill: " + message);
    };
    if (teacher.empty())
      return fail("needs teacher=<the teacher's model.mlir>");
    if (!(beta >= 0) || !std::isfinite(beta))
      return fail("beta must be finite and not negative, got " +
                  llvm::formatv("{0}", double(beta)).str());
    if (!(temperature > 0) || !std::isfinite(temperature))
      return fail("temperature must be positive and finite, got " +
                  llvm::formatv("{0}", double(temperature)).str());
    if (teacherPrecision != "fp32" && teacherPrecision != "bf16")
      return fail("teacher-precision must be fp32 or bf16, got '" +
                  teacherPrecision + "'");
    return success();
  }

  /// The teacher's one loss graph, in a forward-only export.
  FailureOr<func::FuncOp> findTeacherGraph(ModuleOp teacherModule) {
    SmallVector<func::FuncOp> graphs;
    for (auto func : teacherModule.getOps<func::FuncOp>())
      if (isLossGraph(func))
        graphs.push_back(func);
    if (graphs.size() != 1)
      return teacherModule.emitError()
             << "--dsc-distill: the teacher must have one graph whose first "
                "result is named \"loss\", it has "
             << graphs.size();
    for (auto state : teacherModule.getOps<StateOp>())
      if (state.getPartitionOf())
        return state.emitError()
               << "--dsc-distill: the teacher's state is partitioned; give "
                  "the teacher's forward export, not a compiled step";
    return graphs.front();
  }

  /// The teacher state `name` as a student state `teacher.<name>`, declared
  /// once, after the student's last state.
  FailureOr<StateOp> declareTeacherState(ModuleOp module, StateOp original) {
    StringRef name = original.getSymName();
    if (StateOp known = declared.lookup(name))
      return known;
    if (original.getRole() != StateRole::parameter &&
        original.getRole() != StateRole::buffer)
      return original.emitError()
             << "--dsc-distill: the teacher's forward reads a state of role '"
             << stringifyStateRole(original.getRole())
             << "'; give the teacher's forward export, not a compiled step";
    std::string newName = (kTeacherPrefix + name).str();
    if (SymbolTable::lookupSymbolIn(module, newName))
      return module.emitError() << "--dsc-distill: the student already has a "
                                   "symbol named '"
                                << newName << "'";
    RankedTensorType type = original.getTensorType();
    if (teacherPrecision == "bf16" && isa<FloatType>(type.getElementType()))
      type = RankedTensorType::get(type.getShape(),
                                   BFloat16Type::get(module.getContext()));
    OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
    for (StateOp state : module.getOps<StateOp>())
      top.setInsertionPointAfter(state);
    auto state = StateOp::create(top, original.getLoc(), newName, type,
                                 StateRole::teacher);
    declared[name] = state;
    return state;
  }

  /// Clones what the teacher's logits need into `graph`, before `at`, and
  /// returns the cloned logits. Without the teacher's forward it only
  /// declares the states the clone would read, in the same order, and
  /// returns a null value.
  FailureOr<Value> inlineTeacher(func::FuncOp graph, func::FuncOp teacherGraph,
                                 CrossEntropyOp teacherCe, OpBuilder &b) {
    ModuleOp module = graph->getParentOfType<ModuleOp>();
    IRMapping mapping;
    // The same inputs, by name.
    for (unsigned i = 0; i < teacherGraph.getNumArguments(); ++i) {
      auto name = teacherGraph.getArgAttrOfType<StringAttr>(
          i, DSCDialect::kInputAttrName);
      Value arg = teacherGraph.getArgument(i);
      if (!name)
        return teacherGraph.emitError()
               << "--dsc-distill: the teacher's argument #" << i
               << " has no dsc.input name to match the student's inputs by";
      std::optional<unsigned> match;
      for (unsigned j = 0; j < graph.getNumArguments(); ++j)
        if (graph.getArgAttrOfType<StringAttr>(
                j, DSCDialect::kInputAttrName) == name)
          match = j;
      if (!match)
        return teacherGraph.emitError()
               << "--dsc-distill: the teacher reads input '" << name.getValue()
               << "', which the student's graph @" << graph.getSymName()
               << " does not have";
      Value studentArg = graph.getArgument(*match);
      if (studentArg.getType() != arg.getType())
        return teacherGraph.emitError()
               << "--dsc-distill: the teacher's input '" << name.getValue()
               << "' is " << arg.getType() << ", the student's is "
               << studentArg.getType();
      mapping.map(arg, studentArg);
    }

    SetVector<Operation *> slice;
    BackwardSliceOptions options;
    options.inclusive = true;
    if (failed(getBackwardSlice(teacherCe.getLogits().getDefiningOp(), &slice,
                                options)))
      return teacherCe.emitError("--dsc-distill: cannot slice the teacher's "
                                 "graph back from its logits");
    SymbolTable teacherSymbols(teacherGraph->getParentOfType<ModuleOp>());
    // The slice is in a topological order of one block: the block's order.
    for (Operation &op : teacherGraph.getBody().front()) {
      if (!slice.contains(&op))
        continue;
      if (op.getNumRegions() != 0)
        return op.emitOpError("--dsc-distill: the teacher's logits depend on "
                              "an op with regions, which cannot be inlined");
      if (auto dropout = dyn_cast<DropoutOp>(op)) {
        // Eval mode.
        mapping.map(dropout.getResult(), mapping.lookup(dropout.getInput()));
        continue;
      }
      if (auto load = dyn_cast<LoadOp>(op)) {
        auto original = teacherSymbols.lookup<StateOp>(load.getState());
        if (!original)
          return load.emitOpError("--dsc-distill: reads an undeclared state");
        FailureOr<StateOp> state = declareTeacherState(module, original);
        if (failed(state))
          return failure();
        if (!teacherForward)
          continue;
        Value value = LoadOp::create(b, load.getLoc(), state->getTensorType(),
                                     state->getSymName());
        if (value.getType() != load.getType())
          value = ConvertOp::create(b, load.getLoc(), load.getType(), value);
        mapping.map(load.getResult(), value);
        continue;
      }
      if (!teacherForward ||
          (isa<StepKeyOp>(op) && llvm::all_of(op.getUsers(), [](Operation *u) {
             return isa<DropoutOp>(u);
           })))
        continue;
      Operation *clone = b.clone(op, mapping);
      teacherFlops += matrixFlops(clone);
    }
    if (!teacherForward)
      return Value();
    return mapping.lookup(teacherCe.getLogits());
  }

  /// `v` converted to f32 and divided by the temperature.
  Value scaledLogits(OpBuilder &b, Location loc, Value v) {
    RankedTensorType type = tensorOf(v);
    Type f32 = b.getF32Type();
    if (type.getElementType() != f32)
      v = ConvertOp::create(b, loc, RankedTensorType::get(type.getShape(), f32),
                            v);
    if (temperature == 1.0)
      return v;
    return DivOp::create(b, loc, v, scalar(b, loc, f32, temperature));
  }

  static Value scalar(OpBuilder &b, Location loc, Type elem, double value) {
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(RankedTensorType::get({}, elem),
                               b.getFloatAttr(elem, value)));
  }

  LogicalResult distill(func::FuncOp graph, func::FuncOp teacherGraph,
                        CrossEntropyOp teacherCe) {
    FailureOr<CrossEntropyOp> studentCe = findCrossEntropy(graph, "student");
    if (failed(studentCe))
      return failure();
    Value studentLogits = studentCe->getLogits();
    RankedTensorType studentType = tensorOf(studentLogits);
    RankedTensorType teacherType = tensorOf(teacherCe.getLogits());
    if (studentType.getShape() != teacherType.getShape()) {
      int64_t vs = studentType.getShape().back(),
              vt = teacherType.getShape().back();
      InFlightDiagnostic diag = teacherCe.emitError() << "--dsc-distill: ";
      if (vs != vt)
        diag << "the teacher's vocabulary has " << vt
             << " classes, the student's " << vs;
      else
        diag << "the teacher's logits are " << teacherType
             << ", the student's " << studentType
             << " (export both with the same batch and sequence)";
      diag.attachNote(studentCe->getLoc()) << "the student's cross-entropy";
      return failure();
    }

    auto ret = cast<func::ReturnOp>(graph.getBody().back().getTerminator());
    OpBuilder b(ret);
    FailureOr<Value> teacherLogits =
        inlineTeacher(graph, teacherGraph, teacherCe, b);
    if (failed(teacherLogits))
      return failure();

    Location loc = studentCe->getLoc();
    Type f32 = b.getF32Type();
    Value loss = ret.getOperand(0);
    RankedTensorType lossType = tensorOf(loss);
    // After staged KD stops: the student's own loss, and a KD term of 0.
    if (!teacherForward)
      return appendMetrics(graph, ret, *studentCe, loss,
                           scalar(b, loc, f32, 0.0));

    // KL(softmax(z_t/tau) || softmax(z_s/tau)) summed over every position
    // and class, divided by the positions (b * s).
    int64_t classes = studentType.getShape().back();
    int64_t positions = studentType.getNumElements() / std::max<int64_t>(classes, 1);
    int64_t last = studentType.getRank() - 1;
    Value logPs = LogSoftmaxOp::create(
        b, loc, scaledLogits(b, loc, studentLogits), last);
    Value logPt = LogSoftmaxOp::create(
        b, loc, scaledLogits(b, loc, *teacherLogits), last);
    Value pt = ExpOp::create(b, loc, logPt);
    Value pointwise =
        MulOp::create(b, loc, pt, SubOp::create(b, loc, logPt, logPs));
    SmallVector<int64_t> dims = llvm::to_vector(
        llvm::seq<int64_t>(0, studentType.getRank()));
    Value kl = ReduceSumOp::create(b, loc, pointwise, dims, false);
    double tau = temperature;
    Value kd = MulOp::create(
        b, loc, kl,
        scalar(b, loc, f32, beta * tau * tau / double(std::max<int64_t>(positions, 1))));
    // Each rank's KD is the mean over its micro-batch: the ranks' mean
    // joins the (already global) loss.
    int64_t world = lookupWorldSize(graph).value_or(1);
    if (world > 1)
      kd = DivOp::create(b, loc, AllReduceOp::create(b, loc, kd),
                         scalar(b, loc, f32, double(world)));

    Value term = kd;
    if (lossType.getElementType() != f32)
      term = ConvertOp::create(b, loc, lossType, kd);
    ret.setOperand(0, AddOp::create(b, loc, loss, term));
    return appendMetrics(graph, ret, *studentCe, loss, kd);
  }

  /// Appends the loss's terms as metric outputs: `loss` is the student's
  /// own loss (before the KD term), `kd` the KD term.
  LogicalResult appendMetrics(func::FuncOp graph, func::ReturnOp ret,
                              CrossEntropyOp studentCe, Value loss, Value kd) {
    OpBuilder b(ret);
    Location loc = studentCe->getLoc();
    Value studentLogits = studentCe.getLogits();
    RankedTensorType lossType = tensorOf(loss);
    int64_t world = lookupWorldSize(graph).value_or(1);
    SmallVector<std::pair<StringRef, Value>> metrics{{"lm_loss", loss},
                                                     {"kd_loss", kd}};
    // A model whose own loss adds terms to its cross-entropy (the balance
    // loss of an MoE layer it defines): the cross-entropy is the LM loss,
    // each rank's mean averaged over the ranks as DeepSpeed reports it, and
    // the rest of the model's loss is the auxiliary term.
    if (!isCrossEntropyOf(loss, studentLogits)) {
      Value lm = CrossEntropyOp::create(
          b, loc, studentLogits, studentCe.getTargets(),
          studentCe.getIgnoreIndex(), LossReduction::mean);
      if (tensorOf(lm) != lossType)
        lm = ConvertOp::create(b, loc, lossType, lm);
      if (world > 1)
        lm = DivOp::create(
            b, loc, AllReduceOp::create(b, loc, lm),
            scalar(b, loc, lossType.getElementType(), double(world)));
      metrics[0].second = lm;
      metrics.push_back({"aux_loss", SubOp::create(b, loc, loss, lm)});
    }
    for (auto [name, value] : metrics) {
      if (findOutput(graph, name))
        return graph.emitError() << "--dsc-distill: the graph already has an "
                                    "output named '"
                                 << name << "'";
      if (failed(appendOutput(graph, ret, value, name)))
        return failure();
    }
    return success();
  }
};

} // namespace
