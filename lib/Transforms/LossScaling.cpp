//===- LossScaling.cpp - DeepSpeed's fp16 loss scaling --------------------===//
//
// DynamicLossScaler.update_scale, branch-free. With h the hysteresis
// option, s the scale, c the current hysteresis and k the clean steps
// since the last overflow (DeepSpeed's cur_iter - last_overflow_iter - 1):
//
//   overflow: if h == 1 or c == 1: s = max(s / 2, min_loss_scale)
//             else c -= 1;  k = 0
//   clean:    if k > 0 and k % window == 0: s *= 2, c = h;  k += 1
//
// k is kept in [0, window] (a growth leaves 1, which is window + 1 modulo
// window), so that f32 counts it exactly however long the run.
//
//===----------------------------------------------------------------------===//

#include "LossScaling.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dsc;

double LossScaleConfig::initialScale() const {
  return dynamic() ? std::ldexp(1.0, int(initialPower)) : staticScale;
}

LogicalResult mlir::dsc::checkLossScaling(ModuleOp module,
                                          const LossScaleConfig &c) {
  if (!(c.staticScale >= 0) || !std::isfinite(c.staticScale))
    return module.emitError() << "loss-scale " << c.staticScale
                              << " must be 0 (dynamic) or positive";
  if (c.initialPower < 0 || c.initialPower > 127)
    return module.emitError() << "initial-scale-power " << c.initialPower
                              << " is out of range [0, 127]";
  if (c.window < 1)
    return module.emitError() << "loss-scale-window must be at least 1, got "
                              << c.window;
  if (c.hysteresis < 1)
    return module.emitError() << "hysteresis must be at least 1, got "
                              << c.hysteresis;
  if (!(c.minScale > 0) || !std::isfinite(c.minScale))
    return module.emitError() << "min-loss-scale " << c.minScale
                              << " must be positive";
  std::string wanted = "--dsc-autodiff=\"seed=" +
                       std::to_string(c.initialScale()) +
                       (c.dynamic() ? " seed-state=optimizer.loss_scale\""
                                    : "\"");
  auto seed = module->getAttrOfType<DictionaryAttr>(
      DSCDialect::kBackwardSeedAttrName);
  auto value = seed ? seed.getAs<FloatAttr>("value") : FloatAttr();
  auto state = seed ? seed.getAs<FlatSymbolRefAttr>("state") : FlatSymbolRefAttr();
  bool stateOk = c.dynamic()
                     ? state && state.getValue() == "optimizer.loss_scale"
                     : !state;
  if (!value || value.getValueAsDouble() != c.initialScale() || !stateOk)
    return module.emitError()
           << "loss scaling needs the backward seeded with the loss scale: "
              "run "
           << wanted << " before --dsc-optimizer";
  return success();
}

Value mlir::dsc::buildLossScale(StepBuilder &b, const LossScaleConfig &c,
                                const LossScaleStates &states) {
  if (!c.dynamic())
    return b.c(c.staticScale);
  Value stored = b.load(states.scale);
  return b.select(b.cmp(ComparisonDirection::eq, stored, b.c(0)),
                  b.c(c.initialScale()), stored);
}

Value mlir::dsc::buildGradientsFinite(StepBuilder &b, ArrayRef<Value> grads,
                                      ArrayRef<Value> expertGrads,
                                      ArrayRef<Value> sliceGrads,
                                      ArrayRef<Value> expertSliceGrads) {
  // Every element times zero, squared and summed: zero when all are
  // finite, nan otherwise (inf * 0 is nan), and nan == 0 is false. One
  // multi-tensor reduction over every gradient; experts split over ranks
  // and tensor-parallel slices add their group's sum, so that every rank
  // takes the same decision.
  return b.cmp(ComparisonDirection::eq,
               b.sumSquaresOverRanks(grads, expertGrads, b.c(0), sliceGrads,
                                     expertSliceGrads),
               b.c(0));
}

void mlir::dsc::buildLossScaleUpdate(
    StepBuilder &b, const LossScaleConfig &c, const LossScaleStates &states,
    Value scale, Value finite, Value boundary,
    SmallVectorImpl<std::pair<Value, StateOp>> &stores) {
  if (!c.dynamic())
    return;
  const double h = double(c.hysteresis);
  Value storedScale = b.load(states.scale);
  Value started = b.cmp(ComparisonDirection::ne, storedScale, b.c(0));
  Value current = b.select(started, b.load(states.hysteresis), b.c(h));
  Value clean = b.load(states.goodSteps);

  // Overflow: back off, or spend one unit of hysteresis.
  Value halve = c.hysteresis == 1
                    ? b.cmp(ComparisonDirection::eq, b.c(0), b.c(0))
                    : b.cmp(ComparisonDirection::le, current, b.c(1));
  Value backedOff = b.max(b.div(scale, b.c(2)), b.c(c.minScale));
  Value scaleO = b.select(halve, backedOff, scale);
  Value hystO = b.select(halve, current, b.sub(current, b.c(1)));
  // Clean: grow after `window` clean steps, refilling the hysteresis.
  Value grow = b.cmp(ComparisonDirection::ge, clean, b.c(double(c.window)));
  Value scaleC = b.select(grow, b.mul(scale, b.c(2)), scale);
  Value hystC = b.select(grow, b.c(h), current);
  Value cleanC = b.select(grow, b.c(1), b.add(clean, b.c(1)));

  Value nextScale = b.select(finite, scaleC, scaleO);
  Value nextHyst = b.select(finite, hystC, hystO);
  Value nextClean = b.select(finite, cleanC, b.c(0));
  if (boundary) {
    nextScale = b.select(boundary, nextScale, scale);
    nextHyst = b.select(boundary, nextHyst, current);
    nextClean = b.select(boundary, nextClean, clean);
  }
  stores.push_back({nextScale, states.scale});
  stores.push_back({nextHyst, states.hysteresis});
  stores.push_back({nextClean, states.goodSteps});
}
