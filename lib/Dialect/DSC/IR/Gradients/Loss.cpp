//===- Loss.cpp - gradients of losses --------------------------------------===//

#include "GradientRules.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::grad;

static LogicalResult crossEntropyGrad(CrossEntropyOp op, Gradient &g) {
  // d logits = (softmax(logits) - one_hot(target)) * scale per row, 0 on
  // ignored rows, where scale is dy (none: the row's own dy; sum: the
  // scalar dy; mean: dy / the number of rows not ignored): one
  // dsc.cross_entropy_grad, which the library runs in one pass over the
  // logits.
  OpBuilder &b = g.b;
  Location loc = g.loc;
  RankedTensorType targets = tensorType(op.getTargets());
  Value scale = g.dy();
  if (op.getReduction() == LossReduction::mean)
    scale = DivOp::create(b, loc, scale, op.buildCountedTargets(b));
  if (op.getReduction() != LossReduction::none && targets.getRank() > 0)
    scale = BroadcastOp::create(
        b, loc, RankedTensorType::get(targets.getShape(), tensorType(scale).getElementType()),
        scale);
  g.set(0, CrossEntropyGradOp::create(b, loc, op.getLogits(), op.getTargets(), scale,
                                      op.getIgnoreIndexAttr()));
  return success();
}

void grad::registerLossGradients(MLIRContext *context) {
  attach<CrossEntropyOp, crossEntropyGrad>(context);
}
