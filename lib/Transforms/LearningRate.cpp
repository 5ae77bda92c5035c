//===- LearningRate.cpp - DeepSpeed's learning-rate schedules -------------===//
//
// The formulas of deepspeed/runtime/lr_schedules.py, branch-free: both sides
// of each `if` are computed and a dsc.select picks one. With W =
// max(2, warmup_num_steps), T = total_num_steps and `it` the scheduler's
// last_batch_iteration:
//
//   warmup(it)  = log(it + 1) / log(W)  (log)   or   it / W  (linear)
//   WarmupLR        min + (max - min) * (it < W ? warmup(it) : 1)
//   WarmupDecayLR   min + (max - min) * (it < W ? warmup(it)
//                                        : max(0, (T - it) / max(1, T - W)))
//   WarmupCosineLR  lr * (it < W ? r0 + (1 - r0) * warmup(it)
//                         : max(0, rc + (1 - rc) * (1 + cos(pi p)) / 2)),
//                   p = min(1, (it - W + 1) / max(1, T - W))
//
// and at it = -1 (before the first scheduler step) WarmupLR and
// WarmupDecayLR give `min`, WarmupCosineLR gives 0.
//
//===----------------------------------------------------------------------===//

#include "LearningRate.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::dsc;

Value mlir::dsc::buildLearningRate(StepBuilder &b, const LRSchedule &s,
                                   Value applied) {
  if (s.kind == LRSchedule::None)
    return b.c(s.lr);
  const double w = double(std::max<int64_t>(2, s.warmupSteps));
  const double t = double(s.totalSteps);
  Value it = b.sub(applied, b.c(1));
  // Iteration -1 gives warmup(0) = 0 in both forms, the value WarmupLR and
  // WarmupDecayLR have there; clamping also keeps log() finite.
  Value itc = b.max(it, b.c(0));
  Value warm = s.logWarmup ? b.mul(b.c(1.0 / std::log(w)), b.log(b.add(itc, b.c(1))))
                           : b.div(itc, b.c(w));
  Value inWarmup = b.cmp(ComparisonDirection::lt, itc, b.c(w));
  switch (s.kind) {
  case LRSchedule::None:
    break;
  case LRSchedule::WarmupLR:
  case LRSchedule::WarmupDecayLR: {
    Value after = b.c(1);
    if (s.kind == LRSchedule::WarmupDecayLR)
      after = b.max(b.c(0), b.div(b.sub(b.c(t), itc), b.c(std::max(1.0, t - w))));
    Value gamma = b.select(inWarmup, warm, after);
    return b.add(b.c(s.minLr), b.mul(b.c(s.maxLr - s.minLr), gamma));
  }
  case LRSchedule::WarmupCosineLR: {
    Value warmRatio = b.add(b.c(s.warmupMinRatio),
                            b.mul(warm, b.c(1 - s.warmupMinRatio)));
    Value progress = b.min(
        b.c(1), b.div(b.sub(itc, b.c(w - 1)), b.c(std::max(1.0, t - w))));
    Value cosine = b.div(b.add(b.c(1), b.cos(b.mul(b.c(M_PI), progress))), b.c(2));
    Value cosRatio = b.max(
        b.c(0), b.add(b.c(s.cosMinRatio), b.mul(b.c(1 - s.cosMinRatio), cosine)));
    Value ratio = b.select(inWarmup, warmRatio, cosRatio);
    Value started = b.cmp(ComparisonDirection::ge, it, b.c(0));
    return b.select(started, b.mul(b.c(s.lr), ratio), b.c(0));
  }
  }
  llvm_unreachable("unknown schedule");
}
