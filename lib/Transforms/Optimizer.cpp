//===- Optimizer.cpp - --dsc-optimizer -------------------------------------===//
//
// Turns the gradients that --dsc-autodiff returns into the optimizer step,
// in the graph: new parameters and optimizer state are computed with dsc
// ops and written back with dsc.store, so that later passes (ZeRO) see the
// optimizer state as named values they can partition.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/BitVector.h"

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
  Value value;
};

/// Hyper-parameters, validated.
struct Settings {
  enum Kind { SGD, Adam, AdamW } kind;
  double lr, beta1, beta2, eps, weightDecay, momentum, gradClip;
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
    return s;
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
      grads.push_back({i, param, ret.getOperand(i)});
    }
    if (grads.empty())
      return success();

    SymbolTable symbols(module);
    OpBuilder b(ret);
    Location loc = func.getLoc();
    Type elem = grads.front().param.getTensorType().getElementType();
    auto scalar = [&](double v) -> Value {
      auto type = RankedTensorType::get({}, elem);
      return ConstantOp::create(
          b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elem, v)));
    };
    auto declare = [&](StateOp after, StringRef name,
                       RankedTensorType type) -> FailureOr<StateOp> {
      if (symbols.lookup(name))
        return func.emitError() << "optimizer state '" << name
                                << "' would shadow a symbol of that name";
      OpBuilder top(after->getContext());
      top.setInsertionPointAfter(after);
      auto state = StateOp::create(top, after.getLoc(), name, type,
                                   StateRole::optimizer);
      symbols.insert(state);
      return state;
    };
    auto load = [&](StateOp state) -> Value {
      return LoadOp::create(b, loc, state.getTensorType(), state.getSymName());
    };
    auto mul = [&](Value x, Value y) -> Value { return MulOp::create(b, loc, x, y); };
    auto add = [&](Value x, Value y) -> Value { return AddOp::create(b, loc, x, y); };
    auto sub = [&](Value x, Value y) -> Value { return SubOp::create(b, loc, x, y); };
    auto div = [&](Value x, Value y) -> Value { return DivOp::create(b, loc, x, y); };

    // The step count, one for the whole optimizer, as PyTorch's per-param
    // `step` (all equal). Written last, after every use.
    auto scalarType = RankedTensorType::get({}, elem);
    FailureOr<StateOp> stepState =
        declare(grads.back().param, "optimizer.step", scalarType);
    if (failed(stepState))
      return failure();
    Value step = add(load(*stepState), scalar(1));

    SmallVector<Value> g;
    for (Gradient &grad : grads)
      g.push_back(grad.value);
    if (s.gradClip > 0) {
      Value sumSquares;
      for (Value gk : g) {
        auto rank = cast<RankedTensorType>(gk.getType()).getRank();
        SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(0, rank));
        Value sq = ReduceSumOp::create(b, loc, mul(gk, gk), dims, false);
        sumSquares = sumSquares ? add(sumSquares, sq) : sq;
      }
      Value norm = SqrtOp::create(b, loc, sumSquares);
      Value coef = div(scalar(s.gradClip), add(norm, scalar(1e-6)));
      coef = MinimumOp::create(b, loc, coef, scalar(1));
      for (Value &gk : g)
        gk = mul(gk, coef);
    }

    // Adam's bias corrections, once per step.
    Value stepSize, correction2Sqrt;
    if (s.kind != Settings::SGD) {
      Value c1 = sub(scalar(1), PowOp::create(b, loc, scalar(s.beta1), step));
      Value c2 = sub(scalar(1), PowOp::create(b, loc, scalar(s.beta2), step));
      stepSize = div(scalar(s.lr), c1);
      correction2Sqrt = SqrtOp::create(b, loc, c2);
    }

    // Each parameter's new state is stored right after it is computed, so
    // that only one parameter's update is live at a time; nothing after it
    // reads that parameter's old state (the lowering checks it).
    SmallVector<std::pair<Value, StateOp>> stores;
    auto flush = [&] {
      for (auto [value, state] : stores)
        StoreOp::create(b, loc, value, state.getSymName());
      stores.clear();
    };
    for (auto [grad, gk] : llvm::zip(grads, g)) {
      StateOp param = grad.param;
      RankedTensorType type = param.getTensorType();
      StringRef name = param.getSymName();
      Value p = load(param);
      if (s.kind == Settings::AdamW && s.weightDecay != 0)
        p = mul(p, scalar(1 - s.lr * s.weightDecay));
      else if (s.weightDecay != 0)
        gk = add(gk, mul(p, scalar(s.weightDecay)));
      if (s.kind == Settings::SGD) {
        if (s.momentum != 0) {
          FailureOr<StateOp> buf = declare(param, (name + ".momentum_buffer").str(), type);
          if (failed(buf))
            return failure();
          gk = add(mul(load(*buf), scalar(s.momentum)), gk);
          stores.push_back({gk, *buf});
        }
        stores.push_back({sub(p, mul(gk, scalar(s.lr))), param});
        flush();
        continue;
      }
      FailureOr<StateOp> expAvg = declare(param, (name + ".exp_avg").str(), type);
      if (failed(expAvg))
        return failure();
      FailureOr<StateOp> expAvgSq =
          declare(*expAvg, (name + ".exp_avg_sq").str(), type);
      if (failed(expAvgSq))
        return failure();
      Value m = add(mul(load(*expAvg), scalar(s.beta1)), mul(gk, scalar(1 - s.beta1)));
      Value v = add(mul(load(*expAvgSq), scalar(s.beta2)),
                    mul(mul(gk, gk), scalar(1 - s.beta2)));
      Value denom = add(div(SqrtOp::create(b, loc, v), correction2Sqrt), scalar(s.eps));
      Value update = mul(div(m, denom), stepSize);
      stores.push_back({m, *expAvg});
      stores.push_back({v, *expAvgSq});
      stores.push_back({sub(p, update), param});
      flush();
    }
    StoreOp::create(b, loc, step, stepState->getSymName());

    llvm::BitVector erase(func.getNumResults());
    for (Gradient &grad : grads)
      erase.set(grad.result);
    ret->eraseOperands(erase);
    if (failed(func.eraseResults(erase)))
      return func.emitError("cannot remove the gradient results");
    return success();
  }
};
} // namespace
