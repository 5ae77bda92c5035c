//===- MoeOps.cpp - moe_slots, moe_dispatch, moe_combine, moe_route_dot ---===//
//
// The shape rules the four ops share: routes are `[S, k]`, tokens `[S, M]`
// and expert slots `[E, C, M]`, with one element type for the rows and the
// routing weights.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCOps.h"

using namespace mlir;
using namespace mlir::dsc;

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Checks `slots` ([S, k]) against the tokens ([S, M]) and, when given, the
/// routing weights ([S, k], the tokens' element type).
static LogicalResult verifyRoutes(Operation *op, RankedTensorType tokens,
                                  Value slotsValue, Value weightsValue) {
  RankedTensorType slots = tensorOf(slotsValue);
  if (tokens.getRank() != 2)
    return op->emitOpError() << "expects tokens of shape [S, M], got "
                             << tokens;
  if (slots.getRank() != 2 || slots.getDimSize(0) != tokens.getDimSize(0) ||
      slots.getDimSize(1) < 1)
    return op->emitOpError()
           << "expects slots of shape [" << tokens.getDimSize(0)
           << ", k] with k >= 1 for " << tokens.getDimSize(0)
           << " tokens, got " << slots;
  if (!weightsValue)
    return success();
  RankedTensorType weights = tensorOf(weightsValue);
  if (weights.getShape() != slots.getShape() ||
      weights.getElementType() != tokens.getElementType())
    return op->emitOpError()
           << "expects weights of the slots' shape and the tokens' element "
              "type, got "
           << weights << " for slots " << slots << " and tokens " << tokens;
  return success();
}

/// Checks expert slots ([E, C, M]) against the tokens ([S, M]).
static LogicalResult verifySlotted(Operation *op, RankedTensorType slotted,
                                   RankedTensorType tokens) {
  if (slotted.getRank() != 3 || slotted.getDimSize(2) != tokens.getDimSize(1) ||
      slotted.getElementType() != tokens.getElementType())
    return op->emitOpError()
           << "expects expert slots of shape [E, C, " << tokens.getDimSize(1)
           << "] and element type " << tokens.getElementType() << ", got "
           << slotted;
  if (slotted.getDimSize(0) < 1 || slotted.getDimSize(1) < 1)
    return op->emitOpError() << "expects at least one expert and a capacity "
                                "of at least 1, got "
                             << slotted;
  return success();
}

LogicalResult MoeSlotsOp::verify() {
  RankedTensorType experts = tensorOf(getExperts());
  if (experts.getRank() != 2 || experts.getDimSize(1) < 1)
    return emitOpError() << "expects experts of shape [S, k] with k >= 1, got "
                         << experts;
  if (tensorOf(getSlots()).getShape() != experts.getShape())
    return emitOpError() << "slots must have the experts' shape "
                         << experts << ", got " << getSlots().getType();
  RankedTensorType counts = tensorOf(getCounts());
  if (counts.getRank() != 1 || counts.getDimSize(0) < 1)
    return emitOpError() << "expects counts of shape [E] with E >= 1, got "
                         << counts;
  if (getNumExperts() < experts.getDimSize(1))
    return emitOpError() << "routes each token to " << experts.getDimSize(1)
                         << " experts of " << getNumExperts();
  if (getPriority() && tensorOf(getPriority()).getShape() != experts.getShape())
    return emitOpError() << "priority must have the experts' shape "
                         << experts << ", got " << getPriority().getType();
  if (int64_t(getCapacity()) < 1)
    return emitOpError() << "capacity must be at least 1, got "
                         << int64_t(getCapacity());
  return success();
}

LogicalResult MoeDispatchOp::verify() {
  RankedTensorType tokens = tensorOf(getInput());
  if (failed(verifyRoutes(*this, tokens, getSlots(), getWeights())))
    return failure();
  return verifySlotted(*this, tensorOf(getResult()), tokens);
}

LogicalResult MoeCombineOp::verify() {
  RankedTensorType tokens = tensorOf(getResult());
  if (failed(verifyRoutes(*this, tokens, getSlots(), getWeights())))
    return failure();
  return verifySlotted(*this, tensorOf(getInput()), tokens);
}

LogicalResult MoeRouteDotOp::verify() {
  RankedTensorType tokens = tensorOf(getTokens());
  if (failed(verifyRoutes(*this, tokens, getSlots(), getResult())))
    return failure();
  return verifySlotted(*this, tensorOf(getSlotted()), tokens);
}
