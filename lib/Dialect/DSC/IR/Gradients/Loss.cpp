//===- Loss.cpp - gradients of losses --------------------------------------===//

#include "GradientRules.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::grad;

static LogicalResult crossEntropyGrad(CrossEntropyOp op, Gradient &g) {
  // d logits = (softmax(logits) - one_hot(target)) * scale per row, where
  // scale is 0 on ignored rows and otherwise dy (none: the row's own dy;
  // sum: the scalar dy; mean: dy / the number of rows not ignored).
  OpBuilder &b = g.b;
  Location loc = g.loc;
  RankedTensorType logits = tensorType(op.getLogits());
  RankedTensorType targets = tensorType(op.getTargets());
  Type elem = logits.getElementType();
  int64_t classDim = logits.getRank() - 1;
  Value probs = SoftmaxOp::create(b, loc, op.getLogits(), classDim);
  Value hot = OneHotOp::create(b, loc, logits.clone(elem), op.getTargets());
  Value counted = CompareOp::create(
      b, loc, ComparisonDirection::ne, op.getTargets(),
      scalar(b, loc, targets.getElementType(), double(int64_t(op.getIgnoreIndex()))));
  Value scale = MulOp::create(b, loc, g.dy(), toFloat(b, loc, counted, elem));
  if (op.getReduction() == LossReduction::mean)
    scale = DivOp::create(b, loc, scale, op.buildCountedTargets(b));
  SmallVector<int64_t> rowShape(targets.getShape());
  rowShape.push_back(1);
  scale = ReshapeOp::create(b, loc, RankedTensorType::get(rowShape, elem), scale);
  g.set(0, MulOp::create(b, loc, SubOp::create(b, loc, probs, hot), scale));
  return success();
}

void grad::registerLossGradients(MLIRContext *context) {
  attach<CrossEntropyOp, crossEntropyGrad>(context);
}
