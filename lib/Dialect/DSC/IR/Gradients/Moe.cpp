//===- Moe.cpp - gradients of expert dispatch and combine ------------------===//
//
// Dispatch copies token rows into slots and combine copies them back, each
// scaled by the route's weight: with the slots fixed, each is the other's
// transpose, and the weights' cotangent is the dot product of the rows a
// route connects. dsc.moe_slots has integer results only and needs no rule.
//
//===----------------------------------------------------------------------===//

#include "GradientRules.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::grad;

static LogicalResult dispatchGrad(MoeDispatchOp op, Gradient &g) {
  RankedTensorType tokens = tensorType(op.getInput());
  g.set(0, MoeCombineOp::create(g.b, g.loc, tokens, g.dy(), op.getSlots(),
                                op.getWeights()));
  if (op.getWeights() && g.active(2))
    g.set(2, MoeRouteDotOp::create(g.b, g.loc, tensorType(op.getWeights()),
                                   op.getInput(), g.dy(), op.getSlots()));
  return success();
}

static LogicalResult combineGrad(MoeCombineOp op, Gradient &g) {
  g.set(0, MoeDispatchOp::create(g.b, g.loc, tensorType(op.getInput()), g.dy(),
                                 op.getSlots(), op.getWeights()));
  if (op.getWeights() && g.active(2))
    g.set(2, MoeRouteDotOp::create(g.b, g.loc, tensorType(op.getWeights()),
                                   g.dy(), op.getInput(), op.getSlots()));
  return success();
}

static LogicalResult routeDotGrad(MoeRouteDotOp op, Gradient &g) {
  // Bilinear in the two row sets: each receives the other's rows scaled by
  // the cotangent of the route that connects them.
  g.set(0, MoeCombineOp::create(g.b, g.loc, tensorType(op.getTokens()),
                                op.getSlotted(), op.getSlots(), g.dy()));
  g.set(1, MoeDispatchOp::create(g.b, g.loc, tensorType(op.getSlotted()),
                                 op.getTokens(), op.getSlots(), g.dy()));
  return success();
}

void grad::registerMoeGradients(MLIRContext *context) {
  attach<MoeDispatchOp, dispatchGrad>(context);
  attach<MoeCombineOp, combineGrad>(context);
  attach<MoeRouteDotOp, routeDotGrad>(context);
}
