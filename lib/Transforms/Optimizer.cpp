//===- Optimizer.cpp - --dsc-optimizer -------------------------------------===//
//
// Turns the gradients that --dsc-autodiff returns into the optimizer step,
// in the graph: new parameters and optimizer state are computed with dsc
// ops and written back with dsc.store, so that later passes (ZeRO) see the
// optimizer state as named values they can partition.
//
//===----------------------------------------------------------------------===//

#include "LearningRate.h"
#include "LossScaling.h"
#include "StepBuilder.h"

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSC/IR/GraphUtils.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_OPTIMIZER
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

namespace {
/// One parameter's gradient, as --dsc-autodiff returns it.
struct Gradient {
  unsigned result;
  StateOp param;
  /// Mixed precision: the fp32 master weight `<param>.master` that the
  /// update reads and writes in place of the 16-bit parameter; null
  /// otherwise.
  StateOp master;
  Value value;

  /// The state the update computes on, and its type.
  StateOp updated() const { return master ? master : param; }
  RankedTensorType updateType() const { return updated().getTensorType(); }
};

/// Hyper-parameters, validated.
struct Settings {
  enum Kind { SGD, Adam, AdamW } kind;
  double lr, beta1, beta2, eps, weightDecay, momentum, gradClip;
  LRSchedule schedule;
  int64_t gradAccum;
  LossScaleConfig lossScale;
};

struct OptimizerPass : public dsc::impl::OptimizerBase<OptimizerPass> {
  using OptimizerBase::OptimizerBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<Settings> settings = validate(module);
    if (failed(settings))
      return signalPassFailure();
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (!func.isExternal() && failed(rewrite(module, func, *settings)))
        return signalPassFailure();
  }

  FailureOr<Settings> validate(ModuleOp module) {
    Settings s;
    if (optimizer == "sgd")
      s.kind = Settings::SGD;
    else if (optimizer == "adam")
      s.kind = Settings::Adam;
    else if (optimizer == "adamw")
      s.kind = Settings::AdamW;
    else
      return module.emitError() << "unknown optimizer '" << optimizer
                                << "'; expected adamw, adam or sgd";
    if (!betas.empty() && betas.size() != 2)
      return module.emitError() << "betas takes two values (beta1,beta2), got "
                                << betas.size();
    s.lr = lr;
    s.beta1 = betas.empty() ? 0.9 : betas[0];
    s.beta2 = betas.empty() ? 0.999 : betas[1];
    s.eps = eps;
    s.weightDecay = weightDecay >= 0 ? double(weightDecay)
                                     : (s.kind == Settings::AdamW ? 0.01 : 0.0);
    s.momentum = momentum;
    s.gradClip = gradClip;
    auto check = [&](bool ok, StringRef what, double value) -> LogicalResult {
      if (ok)
        return success();
      return module.emitError() << what << " " << value << " is out of range";
    };
    if (failed(check(s.lr >= 0, "lr", s.lr)) ||
        failed(check(s.beta1 >= 0 && s.beta1 < 1, "beta1", s.beta1)) ||
        failed(check(s.beta2 >= 0 && s.beta2 < 1, "beta2", s.beta2)) ||
        failed(check(s.eps > 0, "eps", s.eps)) ||
        failed(check(s.weightDecay >= 0, "weight-decay", s.weightDecay)) ||
        failed(check(s.momentum >= 0, "momentum", s.momentum)) ||
        failed(check(s.gradClip >= 0, "grad-clip", s.gradClip)))
      return failure();
    if (failed(validateSchedule(module, s)))
      return failure();
    s.gradAccum = gradAccum;
    if (s.gradAccum < 1)
      return module.emitError() << "grad-accum must be at least 1, got "
                                << s.gradAccum;
    LossScaleConfig &ls = s.lossScale;
    ls.enabled = lossScaling;
    ls.staticScale = lossScale;
    ls.initialPower = initialScalePower;
    ls.window = lossScaleWindow;
    ls.hysteresis = hysteresis;
    ls.minScale = minLossScale;
    if (ls.enabled && failed(checkLossScaling(module, ls)))
      return failure();
    return s;
  }

  /// DeepSpeed's schedule parameters, each accepted only by the schedules
  /// whose constructor takes it (an unexpected keyword is a TypeError
  /// there); -1 means "not given".
  LogicalResult validateSchedule(ModuleOp module, Settings &s) {
    LRSchedule &l = s.schedule;
    l.lr = s.lr;
    if (scheduler == "none")
      l.kind = LRSchedule::None;
    else if (scheduler == "warmup-lr")
      l.kind = LRSchedule::WarmupLR;
    else if (scheduler == "warmup-decay-lr")
      l.kind = LRSchedule::WarmupDecayLR;
    else if (scheduler == "warmup-cosine-lr")
      l.kind = LRSchedule::WarmupCosineLR;
    else
      return module.emitError() << "unknown scheduler '" << scheduler
                                << "'; expected none, warmup-lr, "
                                   "warmup-decay-lr or warmup-cosine-lr";
    bool warmup = l.kind == LRSchedule::WarmupLR ||
                  l.kind == LRSchedule::WarmupDecayLR;
    bool cosine = l.kind == LRSchedule::WarmupCosineLR;
    struct Given {
      const char *name;
      bool given, accepted;
    } given[] = {
        {"warmup-min-lr", warmupMinLr != -1, warmup},
        {"warmup-max-lr", warmupMaxLr != -1, warmup},
        {"warmup-num-steps", warmupNumSteps != -1, warmup || cosine},
        {"warmup-type", !warmupType.empty(), warmup || cosine},
        {"total-num-steps", totalNumSteps != -1,
         l.kind == LRSchedule::WarmupDecayLR || cosine},
        {"warmup-min-ratio", warmupMinRatio != -1, cosine},
        {"cos-min-ratio", cosMinRatio != -1, cosine},
    };
    for (const Given &option : given)
      if (option.given && !option.accepted)
        return module.emitError()
               << option.name << " does not apply to scheduler=" << scheduler;
    if (l.kind == LRSchedule::None)
      return success();
    if (!warmupType.empty() && warmupType != "log" && warmupType != "linear")
      return module.emitError() << "unknown warmup-type '" << warmupType
                                << "'; expected log or linear";
    l.logWarmup = warmupType != "linear";
    l.warmupSteps = warmupNumSteps == -1 ? 1000 : int64_t(warmupNumSteps);
    if (l.warmupSteps <= 0)
      return module.emitError() << "warmup-num-steps must be a positive "
                                   "integer, got "
                                << l.warmupSteps;
    if ((l.kind == LRSchedule::WarmupDecayLR || cosine) && totalNumSteps <= 0)
      return module.emitError() << "scheduler=" << scheduler
                                << " needs total-num-steps > 0";
    l.totalSteps = totalNumSteps;
    l.minLr = warmupMinLr == -1 ? 0.0 : double(warmupMinLr);
    l.maxLr = warmupMaxLr != -1 ? double(warmupMaxLr)
              : l.kind == LRSchedule::WarmupLR ? s.lr
                                               : 1e-3;
    l.warmupMinRatio = warmupMinRatio == -1 ? 0.0 : double(warmupMinRatio);
    l.cosMinRatio = cosMinRatio == -1 ? 1e-4 : double(cosMinRatio);
    auto nonNegative = [&](const char *what, double v) -> LogicalResult {
      if (v >= 0)
        return success();
      return module.emitError() << what << " " << v << " is out of range";
    };
    return success(succeeded(nonNegative("warmup-min-lr", l.minLr)) &&
                   succeeded(nonNegative("warmup-max-lr", l.maxLr)) &&
                   succeeded(nonNegative("warmup-min-ratio", l.warmupMinRatio)) &&
                   succeeded(nonNegative("cos-min-ratio", l.cosMinRatio)));
  }

  LogicalResult rewrite(ModuleOp module, func::FuncOp func, const Settings &s) {
    SmallVector<Gradient> grads;
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto of = func.getResultAttrOfType<FlatSymbolRefAttr>(
          i, DSCDialect::kGradientOfAttrName);
      if (!of)
        continue;
      auto param = SymbolTable::lookupNearestSymbolFrom<StateOp>(func, of);
      if (!param || param.getRole() != StateRole::parameter)
        return func.emitError() << "result #" << i << " is the gradient of "
                                << of << ", which is not a parameter";
      if (ret.getOperand(i).getType() != param.getType())
        return func.emitError() << "gradient of " << of << " is "
                                << ret.getOperand(i).getType()
                                << ", the parameter is " << param.getType();
      auto master = SymbolTable::lookupNearestSymbolFrom<StateOp>(
          func, StringAttr::get(func.getContext(),
                                param.getSymName() + ".master"));
      if (master && (master.getRole() != StateRole::master ||
                     master.getTensorType().getShape() !=
                         param.getTensorType().getShape()))
        return master.emitError()
               << "is not the master weight of " << of
               << " (a master state of the parameter's shape)";
      grads.push_back({i, param, master, ret.getOperand(i)});
    }
    if (grads.empty())
      return success();

    SymbolTable symbols(module);
    Location loc = func.getLoc();
    // Scalars (step count, lr, loss scale) have the update's float type:
    // fp32 also in mixed precision, where it is the master weights'.
    Type elem = grads.front().updateType().getElementType();
    auto declare = [&](StateOp after, StringRef name, RankedTensorType type,
                       StateRole role = StateRole::optimizer) -> FailureOr<StateOp> {
      if (symbols.lookup(name))
        return func.emitError() << "optimizer state '" << name
                                << "' would shadow a symbol of that name";
      OpBuilder top(after->getContext());
      top.setInsertionPointAfter(after);
      auto state = StateOp::create(top, after.getLoc(), name, type, role);
      // A parameter's own state (moments, accumulated gradient) is
      // partitioned as the parameter is: an expert's lives with the expert,
      // a tensor-parallel weight's with its slice.
      if (after.getPartitionOf() && after.getTensorType() == type)
        state.copyPartition(after);
      symbols.insert(state);
      return state;
    };
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (auto name = func.getResultAttrOfType<StringAttr>(
              i, DSCDialect::kOutputAttrName);
          name && llvm::is_contained({"lr", "loss_scale", "skipped",
                                      "grad_norm"},
                                     name.getValue()))
        return func.emitError() << "the graph already has an output named '"
                                << name.getValue() << "'";

    // The step count, one for the whole optimizer, as PyTorch's per-param
    // `step` (all equal). Written last, after every use.
    auto scalarType = RankedTensorType::get({}, elem);
    FailureOr<StateOp> stepState =
        declare(grads.back().updated(), "optimizer.step", scalarType);
    if (failed(stepState))
      return failure();

    // The learning rate depends on the step count only: it is computed
    // first, so that the lr output is ready with the loss (the lowering
    // ends an evaluation step once every output is written).
    Block &body = func.getBody().front();
    OpBuilder head = OpBuilder::atBlockBegin(&body);
    StepBuilder h{head, loc, elem};
    Value applied = h.load(*stepState);
    Value lr = buildLearningRate(h, s.schedule, applied);
    const bool constantLr = s.schedule.kind == LRSchedule::None;

    // Loss scaling: the scale this step's backward was seeded with.
    LossScaleStates scaler;
    Value scale;
    if (s.lossScale.enabled) {
      if (s.lossScale.dynamic()) {
        scaler.scale = symbols.lookup<StateOp>("optimizer.loss_scale");
        if (!scaler.scale || scaler.scale.getType() != scalarType)
          return func.emitError("loss scaling needs the scalar state "
                                "@optimizer.loss_scale that --dsc-autodiff "
                                "declares (seed-state)");
        FailureOr<StateOp> hyst =
            declare(scaler.scale, "optimizer.hysteresis", scalarType);
        if (failed(hyst))
          return failure();
        FailureOr<StateOp> good =
            declare(*hyst, "optimizer.good_steps", scalarType);
        if (failed(good))
          return failure();
        scaler.hysteresis = *hyst;
        scaler.goodSteps = *good;
      }
      scale = buildLossScale(h, s.lossScale, scaler);
    }

    OpBuilder builder(ret);
    StepBuilder b{builder, loc, elem};
    Value step = b.add(applied, b.c(1));
    for (Gradient &grad : grads)
      if (!grad.updateType().getElementType().isF32())
        return grad.updated().emitError()
               << "is updated in " << grad.updateType().getElementType()
               << "; the optimizer updates fp32 parameters or fp32 master "
                  "weights";

    // Stores of the new values of parameters and optimizer state, after
    // the update; with gradient accumulation or loss scaling the update may
    // skip a step, and its results are then the old values, bit for bit.
    SmallVector<std::pair<Value, StateOp>> stores;
    Value apply; // i1 scalar; null: every step applies

    // A 16-bit gradient (mixed precision) stays 16-bit where the update and
    // the norms read it (they widen each element); gradient accumulation
    // widens it to the master weight's fp32 to add it up.
    SmallVector<Value> g;
    for (Gradient &grad : grads)
      g.push_back(grad.value);

    // Gradient accumulation (DeepSpeed's gradient_accumulation_steps N):
    // one call of the graph is one micro-batch, whose rank-local gradient
    // (of the loss / N) is added to `<param>.grad_acc`; optimizer.micro_step
    // counts the calls. The reduction over the ranks that --dsc-autodiff
    // put on each gradient moves behind a dsc.optimizer_boundary, with
    // everything that reads it (clipping, the update): the N-th call
    // reduces the accumulated sums once and updates, the others stop after
    // accumulating. The accumulators start over at zero after the N-th.
    Value boundary;
    SmallVector<Operation *> peeled; // autodiff's reductions, now unused
    if (s.gradAccum > 1) {
      FailureOr<StateOp> micro =
          declare(*stepState, "optimizer.micro_step", scalarType);
      if (failed(micro))
        return failure();
      Value count = b.add(b.load(*micro), b.c(1));
      boundary = b.cmp(ComparisonDirection::ge, count, b.c(double(s.gradAccum)));
      stores.push_back({b.select(boundary, b.c(0), count), *micro});
      SmallVector<Value> sums;
      SmallVector<std::pair<AllReduceOp, Type>> reductions; // op, its type
      for (auto [grad, gk] : llvm::zip(grads, g)) {
        auto [local, reduce] = peelReduction(gk, peeled);
        reductions.push_back({reduce, local.getType()});
        if (local.getType() != grad.updateType())
          local = ConvertOp::create(builder, loc, grad.updateType(), local);
        FailureOr<StateOp> acc =
            declare(grad.updated(),
                    (grad.param.getSymName() + ".grad_acc").str(),
                    grad.updateType(), StateRole::gradient);
        if (failed(acc))
          return failure();
        Value sum =
            b.add(b.load(*acc), b.mul(local, b.c(1.0 / double(s.gradAccum))));
        stores.push_back({b.select(boundary, b.c(0), sum), *acc});
        sums.push_back(sum);
      }
      // The loss too: each call adds its rank-local share / N to
      // optimizer.loss_acc, and the N-th reduces the sum once, with the
      // gradients, so that no micro-batch communicates. The loss of the
      // step is then the mean of its micro-batches' losses, as DeepSpeed
      // logs it.
      std::optional<unsigned> lossResult = findOutput(func, "loss");
      FailureOr<LocalShare> lossShare = LocalShare{};
      if (lossResult) {
        lossShare = rankLocalShare(builder, ret.getOperand(*lossResult));
        if (failed(lossShare))
          return failure();
        FailureOr<StateOp> acc =
            declare(*micro, "optimizer.loss_acc", scalarType,
                    StateRole::gradient);
        if (failed(acc))
          return failure();
        Value share = lossShare->value;
        if (share.getType() != scalarType)
          share = ConvertOp::create(builder, loc, scalarType, share);
        Value sum = b.add(b.load(*acc),
                          b.mul(share, b.c(1.0 / double(s.gradAccum))));
        stores.push_back({b.select(boundary, b.c(0), sum), *acc});
        sums.push_back(sum);
      }
      // The step count too: it advances once per optimizer step.
      sums.push_back(step);
      auto gate = OptimizerBoundaryOp::create(builder, loc, sums);
      step = gate.getResults().back();
      if (lossResult) {
        Value oldLoss = ret.getOperand(*lossResult);
        Value loss = gate.getResult(sums.size() - 2);
        if (lossShare->reduced)
          loss = AllReduceOp::create(builder, loc, loss,
                                     dataParallelGroup(func));
        if (loss.getType() != oldLoss.getType())
          loss = ConvertOp::create(builder, loc, oldLoss.getType(), loss);
        ret.setOperand(*lossResult, loss);
        eraseUnused(oldLoss);
      }
      // Reduced as autodiff reduced each micro-batch's gradient: over the
      // same group, in the same element type (a 16-bit gradient's sum is
      // rounded to 16 bits first), so a step moves the bytes of one.
      for (auto [i, gk] : llvm::enumerate(g)) {
        Value v = gate.getResult(i);
        auto [reduce, commType] = reductions[i];
        if (reduce) {
          if (v.getType() != commType)
            v = ConvertOp::create(builder, loc, commType, v);
          auto sum = AllReduceOp::create(builder, loc, v, reduce.getGroup());
          sum.setStagesAttr(reduce.getStagesAttr());
          v = sum;
          if (v.getType() != grads[i].updateType())
            v = ConvertOp::create(builder, loc, grads[i].updateType(), v);
        }
        gk = v;
      }
    }

    // Gradients of experts split over the ranks of an expert group, of
    // tensor-parallel slices over a tensor group, and the others: norms and
    // overflow checks sum the split ones over their group.
    SmallVector<Value> replicated, experts, slices, expertSlices;
    // Under pipeline parallelism the norms add the stages' sums
    // (sumSquaresOverRanks): a weight tied between stages, whose gradient
    // its holders have summed alike, counts on the first of them alone.
    auto stageAttr = module->getAttrOfType<IntegerAttr>(kPipelineStageAttrName);
    const int64_t stage = stageAttr ? stageAttr.getInt() : 0;
    auto countedElsewhere = [&](StateOp param) {
      Attribute tied = param->getAttr(kPipelineTiedAttrName);
      if (auto stages = dyn_cast_or_null<DenseI64ArrayAttr>(tied))
        return !stages.empty() && stages[0] != stage;
      return tied && stage != 0;
    };
    for (auto [i, v] : llvm::enumerate(g)) {
      if (countedElsewhere(grads[i].param))
        continue;
      CollectiveGroup over = grads[i].param.getPartitionGroup();
      bool sliced = grads[i].param.getPartitionBlocks().has_value();
      (over == CollectiveGroup::expert && sliced ? expertSlices
       : over == CollectiveGroup::expert         ? experts
       : over == CollectiveGroup::tensor         ? slices
                                                 : replicated)
          .push_back(v);
    }

    // Loss scaling: a step whose gradients (summed over the ranks and the
    // micro-batches) hold an inf or a nan is skipped on every rank alike;
    // the others are unscaled (by the update) before clipping and the
    // update.
    Value skipped, unscale;
    SmallVector<std::pair<Value, StateOp>> scalerStores;
    if (s.lossScale.enabled) {
      Value finite =
          buildGradientsFinite(b, replicated, experts, slices, expertSlices);
      apply = apply ? b.logicalAnd(apply, finite) : finite;
      unscale = b.div(b.c(1), scale);
      skipped = b.select(finite, b.c(0), b.c(1));
      if (boundary)
        skipped = b.select(boundary, skipped, b.c(0));
      buildLossScaleUpdate(b, s.lossScale, scaler, scale, finite, boundary,
                           scalerStores);
    }
    // Clipping by the global norm of the (unscaled) gradients.
    Value clipCoef, norm;
    if (s.gradClip > 0) {
      norm = SqrtOp::create(
          builder, loc,
          b.sumSquaresOverRanks(replicated, experts, unscale, slices,
                                expertSlices));
      clipCoef = b.min(b.div(b.c(s.gradClip), b.add(norm, b.c(1e-6))), b.c(1));
    }
    Value skip;
    if (apply)
      skip = b.select(apply, b.boolean(false), b.boolean(true));

    // The optimizer's states, per parameter, in the order they are declared.
    const bool sgd = s.kind == Settings::SGD;
    SmallVector<SmallVector<StateOp, 2>> states;
    for (Gradient &grad : grads) {
      StateOp param = grad.updated();
      StringRef name = grad.param.getSymName();
      SmallVector<StateOp, 2> own;
      SmallVector<std::string, 2> names;
      if (!sgd)
        names = {(name + ".exp_avg").str(), (name + ".exp_avg_sq").str()};
      else if (s.momentum != 0)
        names = {(name + ".momentum_buffer").str()};
      StateOp after = param;
      for (const std::string &stateName : names) {
        FailureOr<StateOp> state = declare(after, stateName, grad.updateType());
        if (failed(state))
          return failure();
        own.push_back(*state);
        after = *state;
      }
      states.push_back(own);
    }

    // One update op per kind of tensor (the gradients' element type,
    // whether the op also writes 16-bit parameters, and the group the
    // tensors are split over: experts over an expert group, which ZeRO
    // leaves whole, tensor-parallel slices over a tensor group): one
    // multi-tensor kernel each, whatever the number of parameters.
    llvm::MapVector<std::tuple<Type, int, int>, SmallVector<unsigned>> groups;
    for (auto [i, grad] : llvm::enumerate(grads)) {
      Type gradElem = cast<RankedTensorType>(g[i].getType()).getElementType();
      // A copy is written by the op when it has the gradients' type (not
      // after accumulation widened them).
      bool copies = grad.master &&
                    grad.param.getTensorType().getElementType() == gradElem;
      groups[{gradElem, int(copies), int(grad.param.getPartitionGroup())}]
          .push_back(i);
    }
    for (auto &[key, members] : groups) {
      bool copies = std::get<1>(key);
      SmallVector<Value> params, gradients, copiesIn;
      SmallVector<SmallVector<Value>> stateIn(sgd && s.momentum == 0 ? 0 : sgd ? 1 : 2);
      for (unsigned i : members) {
        params.push_back(b.load(grads[i].updated()));
        gradients.push_back(g[i]);
        for (auto [k, state] : llvm::enumerate(states[i]))
          stateIn[k].push_back(b.load(state));
        if (copies && skip)
          copiesIn.push_back(b.load(grads[i].param));
      }
      SmallVector<Type> paramTypes = llvm::to_vector(ValueRange(params).getTypes());
      SmallVector<Type> copyTypes;
      if (copies)
        for (unsigned i : members)
          copyTypes.push_back(grads[i].param.getTensorType());
      Operation *update;
      if (sgd) {
        ValueRange buffers = stateIn.empty() ? ValueRange() : ValueRange(stateIn[0]);
        update = SgdUpdateOp::create(
            builder, loc, paramTypes,
            stateIn.empty() ? TypeRange() : TypeRange(paramTypes), copyTypes,
            params, gradients, buffers, copiesIn, lr, unscale, clipCoef, skip,
            builder.getF64FloatAttr(s.momentum),
            builder.getF64FloatAttr(s.weightDecay));
      } else {
        update = AdamUpdateOp::create(
            builder, loc, paramTypes, paramTypes, paramTypes, copyTypes, params,
            gradients, stateIn[0], stateIn[1], copiesIn, lr, step, unscale,
            clipCoef, skip, builder.getF64FloatAttr(s.beta1),
            builder.getF64FloatAttr(s.beta2), builder.getF64FloatAttr(s.eps),
            builder.getF64FloatAttr(s.weightDecay),
            s.kind == Settings::AdamW ? builder.getUnitAttr() : UnitAttr(),
            constantLr ? builder.getF64FloatAttr(s.lr) : FloatAttr());
      }
      // Results: the new parameters, then each state's new values, then
      // the copies, each list in the members' order.
      unsigned next = 0;
      auto result = [&] { return update->getResult(next++); };
      for (unsigned i : members)
        stores.push_back({result(), grads[i].updated()});
      for (size_t k = 0; k < stateIn.size(); ++k)
        for (unsigned i : members)
          stores.push_back({result(), states[i][k]});
      for (auto [j, i] : llvm::enumerate(members)) {
        StateOp narrow = grads[i].master ? grads[i].param : StateOp();
        if (!narrow)
          continue;
        if (copies) {
          stores.push_back({result(), narrow});
          continue;
        }
        // Rounded here: the update wrote fp32 only (accumulated gradients).
        Value rounded = ConvertOp::create(builder, loc, narrow.getTensorType(),
                                          update->getResult(j));
        stores.push_back(
            {apply ? b.select(apply, rounded, b.load(narrow)) : rounded, narrow});
      }
    }
    for (auto [value, state] : stores)
      b.store(value, state);
    b.store(apply ? b.select(apply, step, applied) : step, *stepState);
    for (auto [value, state] : scalerStores)
      b.store(value, state);
    if (s.gradAccum > 1)
      module->setAttr(DSCDialect::kGradAccumAttrName,
                      builder.getI64IntegerAttr(s.gradAccum));

    llvm::BitVector erase(func.getNumResults());
    for (Gradient &grad : grads)
      erase.set(grad.result);
    ret->eraseOperands(erase);
    if (failed(func.eraseResults(erase)))
      return func.emitError("cannot remove the gradient results");
    for (Operation *op : peeled)
      if (op->use_empty())
        op->erase();
    if (failed(appendOutput(func, ret, lr, "lr")))
      return failure();
    // The norm clipping computed anyway, for dsc-run's log (free: a scalar
    // the step already has).
    if (norm && failed(appendOutput(func, ret, norm, "grad_norm")))
      return failure();
    if (s.lossScale.enabled &&
        (failed(appendOutput(func, ret, scale, "loss_scale")) ||
         failed(appendOutput(func, ret, skipped, "skipped"))))
      return failure();
    return success();
  }

  /// The rank-local gradient under the reduction --dsc-autodiff put on
  /// `gradient` (`dsc.all_reduce`, or a 16-bit one converted up), and that
  /// reduction; `gradient` itself and null when it has none (one rank, an
  /// expert alone in its group). The ops it looks through go to `peeled`,
  /// users first.
  static std::pair<Value, AllReduceOp>
  peelReduction(Value gradient, SmallVectorImpl<Operation *> &peeled) {
    Value reduced = gradient;
    auto widen = gradient.getDefiningOp<ConvertOp>();
    if (widen)
      reduced = widen.getInput();
    auto reduce = reduced.getDefiningOp<AllReduceOp>();
    if (!reduce)
      return {gradient, AllReduceOp()};
    if (widen)
      peeled.push_back(widen);
    peeled.push_back(reduce);
    return {reduce.getInput(), reduce};
  }

  /// A loss's share on one rank: summed over the data-parallel ranks
  /// (when `reduced`) it is the loss.
  struct LocalShare {
    Value value;
    bool reduced = false;
  };

  /// The share of `loss` computed before its sums over the ranks, built at
  /// `b`'s insertion point. --dsc-data-parallel writes a loss as sums
  /// scaled by constants (`all_reduce(x) / world`, plus an experts'
  /// balance loss alike); such a loss is linear in each rank's values, so
  /// the sum of the shares is the loss. A term without a sum over the
  /// ranks is the same on every rank and its own share on one rank only.
  FailureOr<LocalShare> rankLocalShare(OpBuilder &b, Value loss) {
    Operation *def = loss.getDefiningOp();
    Location loc = loss.getLoc();
    auto isConstant = [](Value v) { return bool(v.getDefiningOp<ConstantOp>()); };
    if (auto reduce = dyn_cast_or_null<AllReduceOp>(def);
        reduce && reduce.getGroup() == dataParallelGroup(reduce))
      return LocalShare{reduce.getInput(), true};
    if (isa_and_nonnull<AddOp, SubOp>(def)) {
      FailureOr<LocalShare> x = rankLocalShare(b, def->getOperand(0));
      FailureOr<LocalShare> y = rankLocalShare(b, def->getOperand(1));
      if (failed(x) || failed(y))
        return failure();
      if (!x->reduced && !y->reduced)
        return LocalShare{loss, false};
      if (x->reduced != y->reduced)
        return def->emitOpError()
               << "adds a term averaged over the ranks to one that is not: "
                  "with gradient accumulation the loss is accumulated per "
                  "rank, and this term would count once per rank";
      OperationState state(loc, def->getName(), {x->value, y->value},
                           def->getResultTypes(), def->getAttrs());
      return LocalShare{b.create(state)->getResult(0), x->reduced};
    }
    bool scaled = (isa_and_nonnull<MulOp>(def) &&
                   (isConstant(def->getOperand(0)) ||
                    isConstant(def->getOperand(1)))) ||
                  (isa_and_nonnull<DivOp>(def) && isConstant(def->getOperand(1)));
    if (scaled || isa_and_nonnull<NegOp, ConvertOp>(def)) {
      unsigned varying = isConstant(def->getOperand(0)) && scaled ? 1 : 0;
      FailureOr<LocalShare> x = rankLocalShare(b, def->getOperand(varying));
      if (failed(x))
        return failure();
      if (!x->reduced)
        return LocalShare{loss, false};
      SmallVector<Value> operands(def->getOperands());
      operands[varying] = x->value;
      OperationState state(loc, def->getName(), operands, def->getResultTypes(),
                           def->getAttrs());
      return LocalShare{b.create(state)->getResult(0), true};
    }
    if (def && dependsOnSumOverRanks(def))
      return def->emitOpError()
             << "computes the loss from a sum over the ranks in a way that "
                "is not a sum of terms scaled by constants, which gradient "
                "accumulation cannot accumulate per rank";
    return LocalShare{loss, false};
  }

  /// Whether a dsc.all_reduce is among the ops `op` is computed from.
  static bool dependsOnSumOverRanks(Operation *op) {
    BackwardSliceOptions options;
    options.inclusive = true;
    SetVector<Operation *> slice;
    (void)getBackwardSlice(op, &slice, options);
    return llvm::any_of(slice, llvm::IsaPred<AllReduceOp>);
  }

  /// Erases `value`'s computation where nothing else reads it.
  static void eraseUnused(Value value) {
    SmallVector<Operation *> work;
    if (Operation *def = value.getDefiningOp())
      work.push_back(def);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!op->use_empty() ||
          !(isa<AllReduceOp>(op) || isMemoryEffectFree(op)))
        continue;
      SmallVector<Value> operands(op->getOperands());
      op->erase();
      for (Value operand : operands)
        if (Operation *def = operand.getDefiningOp();
            def && llvm::is_contained(work, def) == false)
          work.push_back(def);
    }
  }
};
} // namespace
