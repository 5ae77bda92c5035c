//===- LearningRate.h - DeepSpeed's learning-rate schedules -----*- C++ -*-===//
//
// WarmupLR, WarmupDecayLR and WarmupCosineLR as deepspeed/runtime/
// lr_schedules.py defines them, computed in the graph from the number of
// optimizer steps already applied (the `optimizer.step` state).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_LEARNINGRATE_H
#define DSC_LIB_TRANSFORMS_LEARNINGRATE_H

#include "StepBuilder.h"

#include <cstdint>

namespace mlir::dsc {

struct LRSchedule {
  enum Kind { None, WarmupLR, WarmupDecayLR, WarmupCosineLR } kind = None;
  double lr = 1e-3;      // the optimizer's lr: constant, or WarmupCosineLR's base
  double minLr = 0;      // warmup_min_lr
  double maxLr = 1e-3;   // warmup_max_lr
  int64_t warmupSteps = 1000; // warmup_num_steps, before max(2, .)
  int64_t totalSteps = 0;     // total_num_steps
  bool logWarmup = true;      // warmup_type log (else linear)
  double warmupMinRatio = 0;  // WarmupCosineLR
  double cosMinRatio = 1e-4;  // WarmupCosineLR
};

/// The learning rate of the optimizer step that follows `applied` steps
/// (a scalar of b.elem). DeepSpeed sets the schedule's lr for iteration -1
/// when it is built and advances it by one after every applied step, so the
/// step after `applied` steps runs with the lr of iteration `applied - 1`.
Value buildLearningRate(StepBuilder &b, const LRSchedule &schedule,
                        Value applied);

} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_LEARNINGRATE_H
