//===- Attention.cpp - the gradient of dsc.attention -----------------------===//
//
// One dsc.attention_grad reads the forward's operands, its result and its
// saved log-sum-exp, and gives the cotangents of q, k and v at once: the
// probabilities are recomputed per tile of keys inside it, so neither pass
// holds the [B, H, T, S] matrix.
//
//===----------------------------------------------------------------------===//

#include "GradientRules.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::grad;

static LogicalResult attentionGrad(AttentionOp op, Gradient &g) {
  // A cotangent of the log-sum-exp would add P * dlse to dS; nothing the
  // exporter or the formation builds reads it in the forward.
  if (g.dy(1))
    return op.emitOpError()
           << "has no gradient through its log-sum-exp result, which reaches "
              "the loss here";
  if (op.getMask() && g.active(3))
    return op.emitOpError()
           << "has no gradient with respect to its mask, which depends on a "
              "trained value here";
  if (!g.dy(0))
    return success();
  auto grads = AttentionGradOp::create(
      g.b, g.loc, op.getQuery(), op.getKey(), op.getValue(), op.getResult(),
      g.dy(0), op.getLogsumexp(), op.getMask(), op.getScale().convertToDouble(),
      op.getCausal());
  g.set(0, grads.getQueryGrad());
  g.set(1, grads.getKeyGrad());
  g.set(2, grads.getValueGrad());
  return success();
}

void grad::registerAttentionGradients(MLIRContext *context) {
  attach<AttentionOp, attentionGrad>(context);
}
