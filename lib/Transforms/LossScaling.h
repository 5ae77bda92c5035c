//===- LossScaling.h - DeepSpeed's fp16 loss scaling ------------*- C++ -*-===//
//
// Static and dynamic loss scaling as DeepSpeed's DynamicLossScaler
// (deepspeed/runtime/fp16/loss_scaler.py) defines it, built in the graph:
// the backward is seeded with the scale (--dsc-autodiff=seed-state=...),
// the gradients are checked for inf/nan and unscaled, and the scale's state
// machine advances once per optimizer step. The optimizer pass calls these
// around its update; mixed precision (fp16) switches them on.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_LOSSSCALING_H
#define DSC_LIB_TRANSFORMS_LOSSSCALING_H

#include "StepBuilder.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>

namespace mlir::dsc {

struct LossScaleConfig {
  bool enabled = false;
  double staticScale = 0; // fp16.loss_scale: 0 is dynamic
  int64_t initialPower = 16;
  int64_t window = 1000;
  int64_t hysteresis = 2;
  double minScale = 1;

  bool dynamic() const { return staticScale == 0; }
  /// The scale of the first step: 2^initialPower, or the static scale.
  double initialScale() const;
};

/// The dynamic scaler's state: the current scale (0 before the first step,
/// meaning 2^initial_scale_power: state starts at zero), the current
/// hysteresis (read as the option's value while the scale is 0), and the
/// clean steps since the last overflow, kept in [0, window].
struct LossScaleStates {
  StateOp scale, hysteresis, goodSteps;
};

/// Checks the options, and that --dsc-autodiff seeded the backward with
/// this configuration's scale (the module's dsc.backward_seed).
LogicalResult checkLossScaling(ModuleOp module, const LossScaleConfig &config);

/// The scale this step uses (at the top of the graph).
Value buildLossScale(StepBuilder &b, const LossScaleConfig &config,
                     const LossScaleStates &states);

/// An i1 scalar: true when no gradient holds an inf or a nan (the sum of
/// squares of every gradient times zero is then zero, else nan), on every
/// rank of an expert group for `expertGradients` (experts split over it)
/// and of a tensor group for `sliceGradients` (tensor-parallel slices), of
/// both for `expertSliceGradients` (experts split by both, DeepSpeed-TED).
Value buildGradientsFinite(StepBuilder &b, ArrayRef<Value> gradients,
                           ArrayRef<Value> expertGradients = {},
                           ArrayRef<Value> sliceGradients = {},
                           ArrayRef<Value> expertSliceGradients = {});

/// Appends to `stores` the scaler's next state after a step with `scale`
/// that was clean or not (`finite`). With `boundary` (gradient
/// accumulation), only a boundary call advances it.
void buildLossScaleUpdate(StepBuilder &b, const LossScaleConfig &config,
                          const LossScaleStates &states, Value scale,
                          Value finite, Value boundary,
                          SmallVectorImpl<std::pair<Value, StateOp>> &stores);

} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_LOSSSCALING_H
